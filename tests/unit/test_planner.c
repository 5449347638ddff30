/* The planner without MPI (src/planner/planner.c): PLANCOLL_ALGORITHM parsing, candidate enumeration,
 * the choice between candidates with scripted hooks standing in for the MPI ones, and parameter formatting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/registry.h"
#include "base/errors.h"
#include "planner/planner.h"
#include "plancoll.h"

/* The library's algorithms: the table the planner is given in plans. */
static const struct pc_algorithm_table *algs(void) { return pc_registry_table(); }

static int idx(const char *name)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    return i;
}

static struct pc_problem allreduce_problem(bool commutative)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = PC_ALLREDUCE;
    p.shape = (struct pc_shape){.nranks = 6, .nnodes = 1, .min_ppn = 6, .max_ppn = 6, .oversubscribed = true};
    p.count = 1000;
    p.elem_bytes = 4;
    p.type_id = 1;
    p.op_id = commutative ? 0 : -1;
    p.commutative = commutative;
    return p;
}

static struct pc_problem alltoall_problem(void)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = PC_ALLTOALL;
    p.shape = (struct pc_shape){.nranks = 5, .nnodes = 1, .min_ppn = 5, .max_ppn = 5, .oversubscribed = true};
    p.block_bytes = 100;
    return p;
}

/* ---- pc_parse_algorithm_list --------------------------------------------------------------------------- */

static void test_parse_empty(void **state)
{
    (void)state;
    int out[8], n = -1;
    assert_int_equal(pc_parse_algorithm_list(algs(), NULL, PC_ALLREDUCE, out, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 0);
    n = -1;
    assert_int_equal(pc_parse_algorithm_list(algs(), "", PC_ALLREDUCE, out, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 0);
    n = -1;
    assert_int_equal(pc_parse_algorithm_list(algs(), " , ,, ", PC_ALLREDUCE, out, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 0);
}

static void test_parse_names(void **state)
{
    (void)state;
    int out[8], n = 0;
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.rabenseifner", PC_ALLREDUCE, out, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], idx("allreduce.rabenseifner"));

    /* several names, in the order given */
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.native,allreduce.recursive_doubling", PC_ALLREDUCE, out, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], idx("allreduce.native"));
    assert_int_equal(out[1], idx("allreduce.recursive_doubling"));

    /* spaces and commas in any mix, leading and trailing */
    assert_int_equal(pc_parse_algorithm_list(algs(), "  allreduce.recursive_doubling ,, allreduce.native allreduce.rabenseifner, ",
                                             PC_ALLREDUCE, out, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], idx("allreduce.recursive_doubling"));
    assert_int_equal(out[1], idx("allreduce.native"));
    assert_int_equal(out[2], idx("allreduce.rabenseifner"));

    /* duplicates are listed once */
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.native,allreduce.native allreduce.native", PC_ALLREDUCE, out, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], idx("allreduce.native"));
}

/* A name of another collective is valid (it restricts that collective's plans) but is not listed. */
static void test_parse_other_collective(void **state)
{
    (void)state;
    int out[8], n = -1;
    assert_int_equal(pc_parse_algorithm_list(algs(), "alltoall.pairwise", PC_ALLREDUCE, out, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(pc_parse_algorithm_list(algs(), "alltoall.pairwise,allreduce.native,alltoallv.spreadout", PC_ALLREDUCE,
                                             out, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], idx("allreduce.native"));
    assert_int_equal(pc_parse_algorithm_list(algs(), "alltoall.pairwise,allreduce.native,alltoallv.spreadout", PC_ALLTOALLV,
                                             out, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], idx("alltoallv.spreadout"));
}

static void test_parse_unknown(void **state)
{
    (void)state;
    int out[8], n = 0;
    pc_clear_error();
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.native,allreduce.bogus", PC_ALLREDUCE, out, 8, &n),
                     PLANCOLL_ERR_ALGORITHM);
    assert_non_null(strstr(plancoll_error_detail(), "'allreduce.bogus'"));
    /* unknown even when it is another collective's (any collective's name is known) */
    assert_int_equal(pc_parse_algorithm_list(algs(), "alltoall.bogus", PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
    assert_non_null(strstr(plancoll_error_detail(), "'alltoall.bogus'"));
    /* names are exact: a prefix or different case is unknown */
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.nat", PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
    assert_int_equal(pc_parse_algorithm_list(algs(), "Allreduce.native", PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
}

static void test_parse_overlong(void **state)
{
    (void)state;
    int out[8], n = 0;
    char name[300];
    /* 95 characters fit the parser's buffer: an unknown name, reported by name */
    memset(name, 'x', 95);
    name[95] = '\0';
    assert_int_equal(pc_parse_algorithm_list(algs(), name, PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
    assert_non_null(strstr(plancoll_error_detail(), name));
    /* 96 and more: too long */
    for (int len = 96; len < 300; len += 101) {
        memset(name, 'y', (size_t)len);
        name[len] = '\0';
        pc_clear_error();
        assert_int_equal(pc_parse_algorithm_list(algs(), name, PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
        assert_non_null(strstr(plancoll_error_detail(), "too long"));
    }
    /* a valid name followed by an overlong one */
    char text[400];
    memset(name, 'z', 200);
    name[200] = '\0';
    snprintf(text, sizeof text, "allreduce.native,%s", name);
    assert_int_equal(pc_parse_algorithm_list(algs(), text, PC_ALLREDUCE, out, 8, &n), PLANCOLL_ERR_ALGORITHM);
}

/* out has room for max entries; further names are dropped, never written past the end. */
static void test_parse_max(void **state)
{
    (void)state;
    int out[3] = {-7, -7, -7}, n = 0;
    assert_int_equal(pc_parse_algorithm_list(algs(), "allreduce.native,allreduce.rabenseifner", PC_ALLREDUCE, out, 1, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(out[0], idx("allreduce.native"));
    assert_int_equal(out[1], -7);
}

/* ---- pc_enumerate -------------------------------------------------------------------------------------- */

static void test_enumerate_all_of_collective(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    for (int c = 0; c < 2; c++) {
        struct pc_problem p = c == 0 ? allreduce_problem(true) : alltoall_problem();
        struct pc_candidate cands[PC_MAX_CANDIDATES];
        int n = 0;
        assert_int_equal(pc_enumerate(algs(), &p, NULL, 0, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        int expected = 0;
        for (int i = 0; i < pc_registry_count(); i++) {
            const struct pc_algorithm *a = pc_registry_get(i);
            if (a->collective != p.coll || (a->inapplicable && a->inapplicable(&p))) continue;
            struct pc_params v[PC_MAX_VARIANTS];
            expected += a->variants ? a->variants(&p, v, PC_MAX_VARIANTS) : 1;
        }
        assert_int_equal(n, expected);
        for (int i = 0; i < n; i++) {
            const struct pc_algorithm *a = pc_registry_get(cands[i].alg);
            assert_non_null(a);
            assert_int_equal(a->collective, p.coll);
            assert_true(cands[i].measured_us < 0);
            assert_true(cands[i].predicted_us == a->estimate(&p, &cands[i].params, &m));
            if (i > 0) assert_true(cands[i].alg >= cands[i - 1].alg); /* registry order, variants together */
        }
    }
}

static bool has_alg(const struct pc_candidate *c, int n, int alg)
{
    for (int i = 0; i < n; i++)
        if (c[i].alg == alg) return true;
    return false;
}

static void test_enumerate_applicability(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_candidate cands[PC_MAX_CANDIDATES];
    int n = 0, rab = idx("allreduce.rabenseifner");

    struct pc_problem comm = allreduce_problem(true), noncomm = allreduce_problem(false);
    assert_null(pc_registry_get(rab)->inapplicable(&comm));
    assert_non_null(pc_registry_get(rab)->inapplicable(&noncomm));

    assert_int_equal(pc_enumerate(algs(), &comm, NULL, 0, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_true(has_alg(cands, n, rab));
    assert_int_equal(pc_enumerate(algs(), &noncomm, NULL, 0, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_false(has_alg(cands, n, rab));
    assert_true(has_alg(cands, n, idx("allreduce.recursive_doubling")));
    assert_true(has_alg(cands, n, idx("allreduce.native")));

    /* Named explicitly, an inapplicable algorithm is an error that says which and why. */
    int allowed[2] = {idx("allreduce.native"), rab};
    pc_clear_error();
    assert_int_equal(pc_enumerate(algs(), &noncomm, allowed, 2, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_ERR_INAPPLICABLE);
    assert_non_null(strstr(plancoll_error_detail(), "allreduce.rabenseifner"));
    assert_non_null(strstr(plancoll_error_detail(), "commutative"));
    assert_int_equal(pc_enumerate(algs(), &noncomm, &rab, 1, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_ERR_INAPPLICABLE);

    /* Named and applicable: only the named ones, in the order given. */
    int two[2] = {rab, idx("allreduce.native")};
    assert_int_equal(pc_enumerate(algs(), &comm, two, 2, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(cands[0].alg, two[0]);
    assert_int_equal(cands[1].alg, two[1]);
}

static void test_enumerate_other_collective(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_candidate cands[PC_MAX_CANDIDATES];
    int n = 0;
    struct pc_problem a2a = alltoall_problem();
    /* Allowed entries of another collective are skipped; with none left, no algorithm can run it. */
    int mixed[3] = {idx("allreduce.native"), idx("alltoall.pairwise"), idx("alltoallv.native")};
    assert_int_equal(pc_enumerate(algs(), &a2a, mixed, 3, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(cands[0].alg, idx("alltoall.pairwise"));
    int none[1] = {idx("allreduce.native")};
    assert_int_equal(pc_enumerate(algs(), &a2a, none, 1, &m, cands, PC_MAX_CANDIDATES, &n), PLANCOLL_ERR_INAPPLICABLE);
    assert_int_equal(n, 0);
    /* max bounds the output */
    struct pc_problem ar = allreduce_problem(true);
    assert_int_equal(pc_enumerate(algs(), &ar, NULL, 0, &m, cands, 1, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
}

/* ---- pc_choose with scripted hooks --------------------------------------------------------------------- */

struct fake {
    double times[PC_MAX_CANDIDATES]; /* returned by the i-th measure call */
    int calls, reps[PC_MAX_CANDIDATES], algs[PC_MAX_CANDIDATES];
    int fail_at;        /* measure call that fails (-1: none) */
    int bcast_calls;
    int bcast_seen;     /* the value passed in */
    int bcast_override; /* -1: leave; else what "rank 0" decided */
    int bcast_error;
};

static int fake_measure(void *ctx, const struct pc_candidate *c, int repetitions, double *us)
{
    struct fake *f = ctx;
    if (f->calls == f->fail_at) return PLANCOLL_ERR_MPI;
    f->reps[f->calls] = repetitions;
    f->algs[f->calls] = c->alg;
    *us = f->times[c->alg - 100]; /* by candidate, whatever the timing order */
    f->calls++;
    return PLANCOLL_SUCCESS;
}

static int fake_bcast(void *ctx, int *value)
{
    struct fake *f = ctx;
    f->bcast_calls++;
    f->bcast_seen = *value;
    if (f->bcast_error) return f->bcast_error;
    if (f->bcast_override >= 0) *value = f->bcast_override;
    return PLANCOLL_SUCCESS;
}

static struct pc_planner_hooks fake_hooks(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->fail_at = -1;
    f->bcast_override = -1;
    return (struct pc_planner_hooks){.ctx = f, .measure = fake_measure, .bcast_int = fake_bcast};
}

/* n candidates with these predictions; alg numbers are distinct so they identify the candidate. */
static void make_cands(struct pc_candidate *c, const double *pred, int n)
{
    memset(c, 0, sizeof *c * (size_t)n);
    for (int i = 0; i < n; i++) {
        c[i].alg = 100 + i;
        c[i].params.segments = i;
        c[i].predicted_us = pred[i];
        c[i].measured_us = -1;
    }
}

static void test_choose_estimate(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_ESTIMATE;
    struct pc_candidate c[5];
    const double pred[5] = {5.0, 3.0, 4.0, 3.0, 9.0};
    make_cands(c, pred, 5);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 5, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 101); /* lowest prediction, the first of the tie */
    assert_true(d.has_runner_up);
    assert_int_equal(d.runner_up.alg, 103); /* the other 3.0 */
    assert_int_equal(d.ncandidates, 5);
    assert_string_equal(d.how, "estimate");
    assert_int_equal(f.calls, 0); /* ESTIMATE times nothing */
    assert_int_equal(f.bcast_calls, 1); /* but takes rank 0's choice */
    assert_int_equal(f.bcast_seen, 1); /* what this rank would have taken */
    /* rank 0's choice wins over this rank's */
    f.bcast_override = 2;
    assert_int_equal(pc_choose(algs(), &p, c, 5, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 102);
    f.bcast_override = 9;
    assert_int_equal(pc_choose(algs(), &p, c, 5, false, &h, NULL, &d), PLANCOLL_ERR_MISMATCH);
    f.bcast_override = -1;
    /* without hooks (a single process planning in a simulation) it decides alone */
    assert_int_equal(pc_choose(algs(), &p, c, 5, false, NULL, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 101);

    /* all equal: the first in order, the second is runner-up */
    const double same[3] = {2.0, 2.0, 2.0};
    make_cands(c, same, 3);
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 100);
    assert_int_equal(d.runner_up.alg, 101);

    /* forced */
    assert_int_equal(pc_choose(algs(), &p, c, 3, true, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_string_equal(d.how, "forced, estimate");
    assert_int_equal(pc_choose(algs(), &p, c, 1, true, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_string_equal(d.how, "forced");
    assert_false(d.has_runner_up);
}

static void check_measure(unsigned flags, int reps)
{
    struct pc_problem p = allreduce_problem(true);
    p.flags = flags;
    struct pc_candidate c[4];
    const double pred[4] = {1.0, 2.0, 3.0, 4.0};
    make_cands(c, pred, 4);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 30.0;
    f.times[1] = 12.0;
    f.times[2] = 10.0;
    f.times[3] = 11.0;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(f.reps[i], reps);
        assert_int_equal(f.algs[i], 100 + i);
    }
    assert_int_equal(f.bcast_calls, 1);
    assert_int_equal(f.bcast_seen, 2);
    assert_int_equal(d.chosen.alg, 102); /* fastest measured, not lowest predicted */
    assert_true(d.chosen.measured_us == 10.0);
    assert_true(d.chosen.predicted_us == 3.0);
    assert_int_equal(d.chosen.params.segments, 2);
    assert_true(d.has_runner_up);
    assert_int_equal(d.runner_up.alg, 103);
    assert_true(d.runner_up.measured_us == 11.0);
    assert_string_equal(d.how, "measured");
    assert_int_equal(d.ncandidates, 4);
    /* the caller's array is not written */
    for (int i = 0; i < 4; i++) assert_true(c[i].measured_us < 0);
}

static void test_choose_measure(void **state)
{
    (void)state;
    check_measure(PLANCOLL_MEASURE, 5);
    check_measure(PLANCOLL_PATIENT, 9);
    check_measure(PLANCOLL_EXHAUSTIVE, 15);
    /* the highest rigor given wins */
    check_measure(PLANCOLL_MEASURE | PLANCOLL_PATIENT, 9);
    check_measure(PLANCOLL_MEASURE | PLANCOLL_EXHAUSTIVE, 15);
    check_measure(PLANCOLL_MEASURE | PLANCOLL_WISDOM_ONLY, 5);
}

static void test_choose_measure_ties_and_bcast(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[3];
    const double pred[3] = {3.0, 2.0, 1.0};
    make_cands(c, pred, 3);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 7.0;
    f.times[1] = 5.0;
    f.times[2] = 5.0;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 3, true, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 101); /* equal times: the earlier candidate */
    assert_int_equal(d.runner_up.alg, 102);
    assert_string_equal(d.how, "forced, measured");

    /* Rank 0's decision is what counts, whatever this rank measured. */
    h = fake_hooks(&f);
    f.times[0] = 7.0;
    f.times[1] = 5.0;
    f.times[2] = 6.0;
    f.bcast_override = 0;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.bcast_seen, 1);
    assert_int_equal(d.chosen.alg, 100);
    assert_true(d.chosen.measured_us == 7.0);
    assert_int_equal(d.runner_up.alg, 101);
}

/* MEASURE times the 6 best predictions and every algorithm's best variant: an algorithm the model ranks last
 * (alg 101 here, behind seven variants of alg 100) is still timed, and wins when it is fastest. */
static void test_choose_measure_every_algorithm(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[9];
    const double pred[9] = {1, 2, 3, 4, 5, 6, 7, 50, 60};
    make_cands(c, pred, 9);
    for (int i = 0; i < 7; i++) c[i].alg = 100;
    c[7].alg = 101;
    c[8].alg = 101;
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    for (int i = 0; i < 8; i++) f.times[i] = 20.0;
    f.times[1] = 5.0; /* alg 101's calls are indexed by alg - 100 = 1 */
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 9, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 7); /* six best of alg 100, and alg 101's best; not its second variant */
    assert_int_equal(d.chosen.alg, 101);
    assert_true(d.chosen.predicted_us == 50.0);
}

static void test_choose_time_limit(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_PATIENT;
    struct pc_candidate c[4];
    const double pred[4] = {3.0, 1.0, 2.0, 4.0};
    make_cands(c, pred, 4);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 1.0; /* the fastest, but the model ranks it third */
    f.times[1] = 8.0;
    f.times[2] = 9.0;
    f.times[3] = 7.0;
    f.bcast_override = -1;
    struct pc_decision d;
    plancoll_set_timelimit(0.0); /* out of time after the first: only the model's favourite is timed */
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 1);
    assert_int_equal(f.algs[0], 101);
    assert_int_equal(d.chosen.alg, 101);
    assert_true(d.time_limited);

    h = fake_hooks(&f);
    f.times[0] = 1.0;
    f.times[1] = 8.0;
    f.times[2] = 9.0;
    f.times[3] = 7.0;
    plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT);
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 4); /* in the model's order */
    assert_int_equal(f.algs[0], 101);
    assert_int_equal(f.algs[1], 102);
    assert_int_equal(f.algs[2], 100);
    assert_int_equal(f.algs[3], 103);
    assert_int_equal(d.chosen.alg, 100);
    assert_false(d.time_limited);
}

static void test_choose_single_candidate(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_EXHAUSTIVE;
    struct pc_candidate c[1];
    const double pred[1] = {4.0};
    make_cands(c, pred, 1);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 1, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 0);
    assert_int_equal(f.bcast_calls, 0);
    assert_int_equal(d.chosen.alg, 100);
    assert_true(d.chosen.measured_us < 0);
    assert_false(d.has_runner_up);
    assert_int_equal(d.ncandidates, 1);
}

static void test_choose_hook_errors(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[3];
    const double pred[3] = {1.0, 2.0, 3.0};
    make_cands(c, pred, 3);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.fail_at = 1;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_ERR_MPI);
    assert_int_equal(f.calls, 1); /* stops at the failure */
    assert_int_equal(f.bcast_calls, 0);

    h = fake_hooks(&f);
    f.bcast_error = PLANCOLL_ERR_MPI;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_ERR_MPI);
    assert_int_equal(f.calls, 3);
    assert_int_equal(f.bcast_calls, 1);
}

static void test_choose_verbose(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_candidate c[PC_MAX_CANDIDATES];
    int n = 0;
    assert_int_equal(pc_enumerate(algs(), &p, NULL, 0, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_non_null(out);
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, n, false, NULL, out, &d), PLANCOLL_SUCCESS);
    fclose(out);
    assert_non_null(strstr(text, "allreduce:P=6"));
    char line[100];
    snprintf(line, sizeof line, "* %s", pc_registry_get(d.chosen.alg)->name);
    assert_non_null(strstr(text, line));
    for (int i = 0; i < n; i++) assert_non_null(strstr(text, pc_registry_get(c[i].alg)->name));
    free(text);
}

/* ---- pc_params_format ---------------------------------------------------------------------------------- */

static void test_params_format(void **state)
{
    (void)state;
    char buf[128];
    struct pc_params p;
    memset(&p, 0, sizeof p);
    strcpy(buf, "garbage");
    pc_params_format(&p, 0, buf, sizeof buf);
    assert_string_equal(buf, ""); /* an algorithm without parameters */
    /* defaults are named: a spec that left them out would leave them to the model when forced */
    pc_params_format(&p, PC_PARAM_ALL, buf, sizeof buf);
    assert_string_equal(buf, "leaders=0 placement=first segments=0 transport=p2p radix=0 inter=rd");
    p.leaders = 2;
    pc_params_format(&p, PC_PARAM_LEADERS, buf, sizeof buf);
    assert_string_equal(buf, "leaders=2");
    p.radix = 4;
    pc_params_format(&p, PC_PARAM_RADIX, buf, sizeof buf); /* fields outside the mask are not named */
    assert_string_equal(buf, "radix=4");
    p.placement = 1;
    p.transport = 1;
    pc_params_format(&p, PC_PARAM_PLACEMENT | PC_PARAM_TRANSPORT | PC_PARAM_RADIX, buf, sizeof buf);
    assert_string_equal(buf, "placement=numa transport=put radix=4");
    p = (struct pc_params){.leaders = 3, .placement = 1, .segments = 8, .transport = 1, .radix = 2, .inter = 1};
    pc_params_format(&p, PC_PARAM_ALL, buf, sizeof buf);
    assert_string_equal(buf, "leaders=3 placement=numa segments=8 transport=put radix=2 inter=rsag");
}

/* A buffer too small for every field: the output is still terminated, stays within len, and is a prefix of the
 * full text (never a piece of a later field glued after an earlier one). */
static void test_params_format_truncated(void **state)
{
    (void)state;
    const struct pc_params p = {.leaders = 3, .placement = 1, .segments = 8, .transport = 1, .radix = 2};
    const char *full = "leaders=3 placement=numa segments=8 transport=put radix=2 inter=rd";
    for (size_t len = 1; len <= strlen(full) + 1; len++) {
        char buf[128];
        memset(buf, '#', sizeof buf);
        pc_params_format(&p, PC_PARAM_ALL, buf, len);
        assert_true(strlen(buf) < len);
        for (size_t i = len; i < sizeof buf; i++)
            if (buf[i] != '#') fail_msg("len %zu: wrote past the end at %zu", len, i);
        size_t k = strlen(buf);
        if (strncmp(buf, full, k) != 0) fail_msg("len %zu: \"%s\" is not a prefix of \"%s\"", len, buf, full);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_empty),
        cmocka_unit_test(test_parse_names),
        cmocka_unit_test(test_parse_other_collective),
        cmocka_unit_test(test_parse_unknown),
        cmocka_unit_test(test_parse_overlong),
        cmocka_unit_test(test_parse_max),
        cmocka_unit_test(test_enumerate_all_of_collective),
        cmocka_unit_test(test_enumerate_applicability),
        cmocka_unit_test(test_enumerate_other_collective),
        cmocka_unit_test(test_choose_estimate),
        cmocka_unit_test(test_choose_measure),
        cmocka_unit_test(test_choose_measure_ties_and_bcast),
        cmocka_unit_test(test_choose_measure_every_algorithm),
        cmocka_unit_test(test_choose_time_limit),
        cmocka_unit_test(test_choose_single_candidate),
        cmocka_unit_test(test_choose_hook_errors),
        cmocka_unit_test(test_choose_verbose),
        cmocka_unit_test(test_params_format),
        cmocka_unit_test(test_params_format_truncated),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
