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

enum { KEEP = -100, MAX_WORDS = 512, MAX_LOG = 1024 }; /* KEEP: a replayed broadcast that leaves this rank's value */

/* A scripted machine: candidate i's batch k (k counts every batch timed, in time order) takes
 *   times[alg - 100] x (1 + drift_per_batch k) x (step_factor while k < step_at) x (1 + noise g)
 * with g a standard normal-like draw (Irwin-Hall of 4 uniforms) from a fixed seed: a slow drift, a sudden change
 * of the machine's speed (the two cores changing their cache sharing), and batch-to-batch noise. */
struct fake {
    double times[PC_MAX_CANDIDATES];
    double drift_per_batch, step_factor, noise;
    int step_at;
    uint64_t rng;
    int calls;                       /* prepare calls: candidates set up */
    int algs[PC_MAX_CANDIDATES];     /* the candidate of each prepare call, in order */
    int slot_alg[PC_MAX_CANDIDATES]; /* the candidate set up in each slot (-1: none) */
    bool slot_prepared[PC_MAX_CANDIDATES]; /* slots (candidate indices) ever set up */
    int batches_of[PC_MAX_CANDIDATES]; /* batches timed, by alg - 100 */
    int batch_calls, batch_log[MAX_LOG]; /* every batch's alg - 100, in order */
    int alive, max_alive, releases;
    int nomem_from_alive; /* prepare fails with NOMEM when this many trial plans are alive (-1: never) */
    int fail_at;          /* prepare call that fails (-1: none) */
    int nomem_alg;        /* the candidate (alg - 100) whose set-up always finds no memory (-1: none) */
    int bcast_calls;
    int bcast_seen;     /* the last value passed in */
    int bcast_override; /* -1: leave; else what "rank 0" decided, every call */
    int bcast_error;
    const int *replay;  /* rank 0's words, call by call (KEEP: leave this rank's value) */
    int nreplay;
    int words[MAX_WORDS]; /* what each broadcast returned */
    bool scripted_clock;  /* now() is the script's clock: clock_per_batch seconds per batch timed */
    double clock, clock_per_batch;
};

static double fake_uniform(struct fake *f)
{
    f->rng = f->rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(f->rng >> 11) / 9007199254740992.0;
}

static double fake_gauss(struct fake *f)
{
    double s = 0;
    for (int i = 0; i < 4; i++) s += fake_uniform(f);
    return (s - 2.0) * 1.7320508075688772; /* variance 4/12 scaled to 1 */
}

static int fake_prepare(void *ctx, int slot, const struct pc_candidate *c)
{
    struct fake *f = ctx;
    if (f->calls == f->fail_at) return PLANCOLL_ERR_MPI;
    assert_true(slot >= 0 && slot < PC_MAX_CANDIDATES);
    assert_int_equal(f->slot_alg[slot], -1); /* never set up twice without a release */
    if (f->nomem_from_alive >= 0 && f->alive >= f->nomem_from_alive) return PLANCOLL_ERR_NOMEM;
    if (c->alg - 100 == f->nomem_alg) return PLANCOLL_ERR_NOMEM;
    f->algs[f->calls++] = c->alg;
    f->slot_alg[slot] = c->alg - 100;
    f->slot_prepared[slot] = true;
    if (++f->alive > f->max_alive) f->max_alive = f->alive;
    return PLANCOLL_SUCCESS;
}

static int fake_batch(void *ctx, int slot, double *us)
{
    struct fake *f = ctx;
    int cand = f->slot_alg[slot];
    assert_true(cand >= 0); /* only set-up trial plans are timed */
    int k = f->batch_calls;
    double t = f->times[cand] * (1.0 + f->drift_per_batch * k);
    if (k < f->step_at) t *= f->step_factor;
    if (f->noise > 0) t *= 1.0 + f->noise * fake_gauss(f);
    *us = t;
    if (k < MAX_LOG) f->batch_log[k] = cand;
    f->batch_calls++;
    f->batches_of[cand]++;
    f->clock += f->clock_per_batch;
    return PLANCOLL_SUCCESS;
}

static void fake_release(void *ctx, int slot)
{
    struct fake *f = ctx;
    assert_true(f->slot_alg[slot] >= 0);
    f->slot_alg[slot] = -1;
    f->alive--;
    f->releases++;
}

static int fake_bcast(void *ctx, int *value)
{
    struct fake *f = ctx;
    int call = f->bcast_calls++;
    f->bcast_seen = *value;
    if (f->bcast_error) return f->bcast_error;
    if (f->replay && call < f->nreplay && f->replay[call] != KEEP) *value = f->replay[call];
    else if (f->bcast_override >= 0) *value = f->bcast_override;
    if (call < MAX_WORDS) f->words[call] = *value;
    return PLANCOLL_SUCCESS;
}

static double fake_now(void *ctx)
{
    struct fake *f = ctx;
    return f->clock;
}

static struct pc_planner_hooks fake_hooks(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->fail_at = -1;
    f->nomem_from_alive = -1;
    f->nomem_alg = -1;
    f->bcast_override = -1;
    f->step_factor = 1.0;
    f->rng = 12345;
    for (int i = 0; i < PC_MAX_CANDIDATES; i++) f->slot_alg[i] = -1;
    return (struct pc_planner_hooks){.ctx = f, .prepare = fake_prepare, .batch = fake_batch,
                                     .release = fake_release, .bcast_int = fake_bcast};
}

/* Every trial plan set up was released by the end of pc_choose. */
static void assert_all_released(const struct fake *f)
{
    assert_int_equal(f->alive, 0);
    assert_int_equal(f->releases, f->calls);
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
    assert_false(d.runner_up_tied);         /* ties are a matter of measurement */
    assert_int_equal(d.ncandidates, 5);
    assert_string_equal(d.how, "estimate");
    assert_int_equal(f.calls + f.batch_calls, 0); /* ESTIMATE times nothing */
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
    /* estimates within PC_ESTIMATE_TIE (5%) of the earlier one's are a tie: the earlier stays */
    const double close[3] = {3.0, 3.0 * (1 - 0.5 * PC_ESTIMATE_TIE), 3.0 * (1 - 2 * PC_ESTIMATE_TIE)};
    make_cands(c, close, 2);
    assert_int_equal(pc_choose(algs(), &p, c, 2, false, NULL, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 100);
    make_cands(c, close, 3);
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, NULL, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 102); /* lower by twice the margin: not a tie */
    make_cands(c, pred, 5);

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

/* Steady times far apart: every other candidate separates from the fastest at the rigor's minimum round, which is
 * what the fixed batch counts were before the race (5, 9, 15). */
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
        assert_int_equal(f.batches_of[i], reps);
        assert_int_equal(f.algs[i], 100 + i); /* set up in the model's order */
    }
    assert_int_equal(f.max_alive, 4); /* racing side by side */
    assert_all_released(&f);
    /* round by round, the order rotated: round r starts with the r-th finalist */
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < 4; j++) assert_int_equal(f.batch_log[4 * r + j], (j + r) % 4);
    /* rank 0's words: the three others dropped after the last round, the end, then the choice and runner-up */
    assert_int_equal(f.bcast_calls, 6);
    assert_int_equal(f.words[3], -2);
    assert_int_equal(f.words[4], 2);
    assert_int_equal(d.chosen.alg, 102); /* fastest measured, not lowest predicted */
    assert_true(d.chosen.measured_us == 10.0);
    assert_true(d.chosen.predicted_us == 3.0);
    assert_int_equal(d.chosen.params.segments, 2);
    assert_true(d.has_runner_up);
    assert_int_equal(d.runner_up.alg, 103);
    assert_true(d.runner_up.measured_us == 11.0);
    assert_false(d.runner_up_tied);
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

/* Exactly equal times are the plainest tie: the race runs to its maximum (15 rounds at MEASURE) and the model's
 * preference wins; the clearly slower one leaves at the minimum. */
static void test_choose_measure_exact_tie(void **state)
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
    assert_int_equal(d.chosen.alg, 102); /* tied with 101: the lower prediction */
    assert_int_equal(d.runner_up.alg, 101);
    assert_true(d.runner_up_tied);
    assert_true(d.tie_noise_pct == 0.0); /* no noise at all */
    assert_string_equal(d.how, "forced, measured");
    assert_int_equal(f.batches_of[0], 5);
    assert_int_equal(f.batches_of[1], 15);
    assert_int_equal(f.batches_of[2], 15);
    assert_all_released(&f);
}

/* MEASURE times the 6 best predictions and every algorithm's best variant: an algorithm the model ranks last
 * (alg 101 here, behind seven variants of alg 100) is still timed, and wins when it is fastest; with it the best
 * variant with another value of its one parameter (segments 8), not the third. */
static void test_choose_measure_every_algorithm(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[10];
    const double pred[10] = {1, 2, 3, 4, 5, 6, 7, 50, 60, 70};
    make_cands(c, pred, 10);
    for (int i = 0; i < 7; i++) c[i].alg = 100;
    for (int i = 7; i < 10; i++) c[i].alg = 101;
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    for (int i = 0; i < 8; i++) f.times[i] = 20.0;
    f.times[1] = 5.0; /* alg 101's batches are indexed by alg - 100 = 1 */
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 10, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 8); /* six best of alg 100, alg 101's best and its best other segments value */
    assert_true(f.slot_prepared[7] && f.slot_prepared[8]);
    assert_false(f.slot_prepared[6] || f.slot_prepared[9]);
    assert_int_equal(d.chosen.alg, 101);
    assert_true(d.chosen.predicted_us == 50.0);
    assert_all_released(&f);
}

/* One step along each parameter: alg 101 (leaders x inter) is ranked behind six variants of alg 100, its best is
 * leaders=2 inter=0; MEASURE also times its best with leaders other than 2 (4, inter 0) and its best with inter other
 * than 0 (2, inter 1), but not leaders=4 inter=1, which differs in both. (Timing only the algorithm's best, the
 * model would decide between its leader counts alone: at 8 ranks on 2 nodes it ranked 4 leaders of DPML 60% behind 2
 * when they ran 28% faster.) */
static void test_choose_measure_each_parameter(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[10];
    const double pred[10] = {1, 2, 3, 4, 5, 6, 10, 11, 12, 13};
    make_cands(c, pred, 10);
    for (int i = 0; i < 6; i++) c[i].alg = 100;
    const int leaders[4] = {2, 2, 4, 4}, inter[4] = {0, 1, 0, 1};
    for (int k = 0; k < 4; k++) {
        c[6 + k].alg = 101;
        c[6 + k].params = (struct pc_params){.leaders = leaders[k], .inter = inter[k]};
    }
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 20.0;
    f.times[1] = 20.0;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 10, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    for (int i = 0; i < 6; i++) assert_true(f.slot_prepared[i]);
    assert_true(f.slot_prepared[6]); /* alg 101's best */
    assert_true(f.slot_prepared[7]); /* inter 1 */
    assert_true(f.slot_prepared[8]); /* leaders 4 */
    assert_false(f.slot_prepared[9]); /* both changed */
    assert_int_equal(f.calls, 9);
    assert_all_released(&f);
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
    struct pc_decision d;
    plancoll_set_timelimit(0.0); /* out of time after the first batch: only the model's favourite is timed */
    int err = pc_choose(algs(), &p, c, 4, false, &h, NULL, &d);
    plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT); /* before any assertion: a failure must not leak the limit */
    assert_int_equal(err, PLANCOLL_SUCCESS);
    assert_int_equal(f.calls, 1);
    assert_int_equal(f.batch_calls, 1);
    assert_int_equal(f.algs[0], 101);
    assert_int_equal(d.chosen.alg, 101);
    assert_true(d.time_limited);
    assert_all_released(&f);

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
    assert_all_released(&f); /* the first candidate's trial plan too */

    h = fake_hooks(&f);
    f.bcast_error = PLANCOLL_ERR_MPI;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_ERR_MPI);
    assert_int_equal(f.calls, 3);
    assert_int_equal(f.bcast_calls, 1); /* the first word after the minimum rounds */
    assert_all_released(&f);

    /* NOMEM of every candidate, each with nothing else set up, is the plan's failure */
    h = fake_hooks(&f);
    f.nomem_from_alive = 0;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_ERR_NOMEM);
    assert_int_equal(f.calls + f.batch_calls, 0);
}

/* Several trial plans do not fit: the set-up of the third finds no memory while two are alive; every trial plan
 * is released and the candidates are timed one after another (5 batches each, set up again once each), and the
 * decision is still the fastest. */
static void test_choose_nomem_fallback(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[4];
    const double pred[4] = {1.0, 2.0, 3.0, 4.0};
    make_cands(c, pred, 4);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 9.0;
    f.times[1] = 8.0;
    f.times[2] = 4.0;
    f.times[3] = 6.0;
    f.nomem_from_alive = 2;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 102);
    assert_int_equal(d.runner_up.alg, 103);
    assert_int_equal(f.max_alive, 2);
    assert_int_equal(f.calls, 6); /* 100 and 101 set up for round 0, then each of the four once */
    for (int i = 0; i < 4; i++) assert_int_equal(f.batches_of[i], 5);
    /* one candidate after another after the fallback */
    assert_int_equal(f.batch_calls, 20);
    for (int k = 3; k < f.batch_calls; k++) assert_true(f.batch_log[k] >= f.batch_log[k - 1]);
    assert_all_released(&f);
}

/* A finalist that does not fit even alone (a node-shared segment larger than /dev/shm) leaves the race untimed
 * and is never chosen, however fast its timings would be; the others are raced as usual. Before, its NOMEM was
 * the whole plan's failure although MPI's own collective could run. */
static void test_choose_unfit_alone(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[3];
    const double pred[3] = {1.0, 2.0, 3.0};
    make_cands(c, pred, 3);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 1.0; /* the fastest, but it cannot be set up */
    f.times[1] = 5.0;
    f.times[2] = 3.0;
    f.nomem_alg = 0;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 102);
    assert_int_equal(d.runner_up.alg, 101);
    assert_int_equal(f.batches_of[0], 0);
    assert_true(f.batches_of[1] >= 5 && f.batches_of[2] >= 5);
    assert_all_released(&f);

    /* the same once several trial plans stopped fitting together: one at a time, the unfit one skipped */
    h = fake_hooks(&f);
    f.times[0] = 1.0;
    f.times[1] = 5.0;
    f.times[2] = 3.0;
    f.nomem_alg = 0;
    f.nomem_from_alive = 2;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 102);
    assert_int_equal(f.batches_of[0], 0);
    assert_all_released(&f);

    /* none fits: the plan's failure */
    h = fake_hooks(&f);
    f.nomem_from_alive = 0;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_ERR_NOMEM);
}

/* ---- the race on a noisy machine (docs/measurement.md): each of these chose wrongly, or could not say what it
 * decided, when every candidate was timed in a fixed 5 / 9 / 15 batches one after another ------------------ */

/* (a) A clearly faster candidate is found in the minimum rounds although the machine changed speed while it was
 * timed: the model's favourite (25% slower) ran its batches mostly before a sudden slowdown (30% longer batches
 * from batch 4 on), the others after it. Paired rounds see the change on both candidates of a round. */
static void test_race_clear_winner(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[2];
    const double pred[2] = {1.0, 2.0};
    make_cands(c, pred, 2);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 125.0;
    f.times[1] = 100.0;
    f.step_factor = 1.0 / 1.3; /* faster before batch 4 */
    f.step_at = 4;
    f.noise = 0.02;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 2, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 101);
    assert_false(d.runner_up_tied);
    assert_int_equal(d.runner_up.alg, 100);
    assert_int_equal(f.batch_calls, 10); /* 5 rounds, as the fixed batches were */
    assert_int_equal(f.calls, 2);        /* each set up once */
    assert_all_released(&f);
}

/* (b) Two candidates of equal speed (3% noise) while the machine speeds up by 1% a batch (a competing process
 * winding down): they are declared tied and the model's preferred one wins, with the noise recorded. */
static void test_race_tie_goes_to_model(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[2];
    const double pred[2] = {1.0, 1.2};
    make_cands(c, pred, 2);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 100.0;
    f.times[1] = 100.0;
    f.drift_per_batch = -0.01;
    f.noise = 0.03;
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 2, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 100); /* the model's preference */
    assert_true(d.has_runner_up);
    assert_int_equal(d.runner_up.alg, 101);
    assert_true(d.runner_up_tied);
    assert_true(d.tie_noise_pct > 0.5 && d.tie_noise_pct < 10.0);
    assert_int_equal(f.batches_of[0], 15); /* close: the race ran to MEASURE's maximum */
    assert_int_equal(f.batches_of[1], 15);
    assert_all_released(&f);
}

/* (c) A candidate slower by a consistent 8% under 3% noise, timed first while the machine slows down by 3% a batch,
 * is separated from the faster one given enough rounds: the paired ratios stay near 1.08 whatever the drift.
 * Over seeds 1..40 of this script the race separates them in 39 (22 at round 5, 17 later) and leaves one a tie
 * after 15 rounds; timing 5 batches of each one after another kept the slower one in 18 of seeds 1..20. */
static void test_race_separates_eight_percent(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[3];
    const double pred[3] = {1.0, 2.0, 3.0};
    make_cands(c, pred, 3);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    f.times[0] = 108.0;
    f.times[1] = 100.0;
    f.times[2] = 150.0;
    f.drift_per_batch = 0.03;
    f.noise = 0.03;
    f.rng = 6; /* a seed where five rounds do not separate them (a paired ratio below 1), eleven do */
    struct pc_decision d;
    assert_int_equal(pc_choose(algs(), &p, c, 3, false, &h, NULL, &d), PLANCOLL_SUCCESS);
    assert_int_equal(d.chosen.alg, 101);
    assert_int_equal(d.runner_up.alg, 100);
    assert_false(d.runner_up_tied);
    assert_int_equal(f.batches_of[2], 5); /* the clearly slow one left at the minimum */
    assert_true(f.batches_of[0] > 5 && f.batches_of[0] < 15); /* more rounds than the minimum, fewer than the most */
    assert_int_equal(f.batches_of[1], f.batches_of[0]); /* they raced side by side until the separation */
    assert_all_released(&f);
}

/* (d) The time limit (read on rank 0's clock, here the script's: 1 ms a batch) stops the race in its third round;
 * the fastest so far is kept, though the model prefers another within 2% of it: too few rounds for an interval,
 * so no tie is claimed. */
static void test_race_time_limit(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[4];
    const double pred[4] = {1.0, 2.0, 3.0, 4.0};
    make_cands(c, pred, 4);
    struct fake f;
    struct pc_planner_hooks h = fake_hooks(&f);
    h.now = fake_now;
    f.clock_per_batch = 1e-3;
    f.times[0] = 130.0;
    f.times[1] = 100.0;
    f.times[2] = 105.0;
    f.times[3] = 98.0;
    struct pc_decision d;
    plancoll_set_timelimit(0.0105);
    int err = pc_choose(algs(), &p, c, 4, false, &h, NULL, &d);
    plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT);
    assert_int_equal(err, PLANCOLL_SUCCESS);
    assert_true(d.time_limited);
    assert_int_equal(f.batch_calls, 11); /* two rounds of 4, then 3 batches of the third */
    assert_int_equal(d.chosen.alg, 103);
    assert_true(d.chosen.measured_us == 98.0);
    assert_int_equal(d.runner_up.alg, 101);
    assert_false(d.runner_up_tied);
    assert_all_released(&f);
}

/* (e) Every rank takes rank 0's decisions: a rank whose own batch times differ (its maxima would be the same in a
 * real run; here they are made to disagree) and that replays rank 0's broadcasts runs the same batches, drops the
 * same candidates, and records the same choice, runner-up and tie. A word naming no running candidate is a
 * mismatch on every rank, never a guess. */
static void test_race_same_decision_every_rank(void **state)
{
    (void)state;
    struct pc_problem p = allreduce_problem(true);
    p.flags = PLANCOLL_MEASURE;
    struct pc_candidate c[4];
    const double pred[4] = {1.0, 2.0, 3.0, 4.0};
    make_cands(c, pred, 4);
    const double rank0[4] = {100.0, 101.0, 140.0, 150.0}, rank1[4] = {100.0, 160.0, 140.0, 101.0};
    struct fake f0, f1;
    struct pc_planner_hooks h0 = fake_hooks(&f0), h1 = fake_hooks(&f1);
    memcpy(f0.times, rank0, sizeof rank0);
    memcpy(f1.times, rank1, sizeof rank1);
    f0.noise = f1.noise = 0.02;
    f1.rng = 99;
    struct pc_decision d0, d1;
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h0, NULL, &d0), PLANCOLL_SUCCESS);
    f1.replay = f0.words;
    f1.nreplay = f0.bcast_calls;
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h1, NULL, &d1), PLANCOLL_SUCCESS);
    assert_int_equal(f1.bcast_calls, f0.bcast_calls);
    assert_int_equal(f1.batch_calls, f0.batch_calls);
    assert_memory_equal(f1.batch_log, f0.batch_log, sizeof(int) * (size_t)f0.batch_calls);
    assert_int_equal(d1.chosen.alg, d0.chosen.alg);
    assert_int_equal(d1.has_runner_up, d0.has_runner_up);
    assert_int_equal(d1.runner_up.alg, d0.runner_up.alg);
    assert_int_equal(d1.runner_up_tied, d0.runner_up_tied);
    assert_int_equal(d0.chosen.alg, 100); /* rank 0: 100 and 101 tied, the model prefers 100 */
    assert_int_equal(d0.runner_up.alg, 101);
    assert_true(d0.runner_up_tied);
    assert_all_released(&f1);

    /* a corrupted word: dropping a candidate already gone */
    int bad[MAX_WORDS];
    memcpy(bad, f0.words, sizeof bad);
    bad[1] = bad[0]; /* rank 0 dropped a candidate after round 5; dropping it again names no running one */
    assert_true(bad[0] >= 0);
    h1 = fake_hooks(&f1);
    memcpy(f1.times, rank1, sizeof rank1);
    f1.replay = bad;
    f1.nreplay = f0.bcast_calls;
    assert_int_equal(pc_choose(algs(), &p, c, 4, false, &h1, NULL, &d1), PLANCOLL_ERR_MISMATCH);
    assert_all_released(&f1);
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

/* ---- the host-wide work bound (planner.c predict) --------------------------------------------------------- */

/* Two hand-made alltoalls: "busy" is a little faster by its estimate but its CPU is busy throughout; "idle" is a
 * little slower but mostly waits. "skewed" is as busy as "busy" on its busiest rank, but its mean rank does a fifth
 * of that (a leader-based plan). */
static double wb_busy_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 100.0;
}
static double wb_busy_busy(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 90.0;
}
static double wb_idle_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 120.0;
}
static double wb_idle_busy(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 10.0;
}
static double wb_skewed_mean(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 18.0;
}
static const struct pc_algorithm wb_busy = {
    .name = "wb.busy", .collective = PC_ALLTOALL, .estimate = wb_busy_estimate, .busy = wb_busy_busy};
static const struct pc_algorithm wb_idle = {
    .name = "wb.idle", .collective = PC_ALLTOALL, .estimate = wb_idle_estimate, .busy = wb_idle_busy};
static const struct pc_algorithm wb_skewed = {.name = "wb.skewed",
                                              .collective = PC_ALLTOALL,
                                              .estimate = wb_busy_estimate,
                                              .busy = wb_busy_busy,
                                              .mean_busy = wb_skewed_mean};
static const struct pc_algorithm *const wb_entries[] = {&wb_busy, &wb_idle, &wb_skewed};
static const struct pc_algorithm_table wb_table = {wb_entries, 3};

/* The ESTIMATE choice between the first n algorithms of wb_table (NULL hooks: this process decides alone). */
static int wb_choose(const struct pc_problem *p, int n, struct pc_candidate *c)
{
    int allowed[3] = {0, 1, 2}, nc = 0;
    struct pc_machine_model m;
    pc_model_default(&m);
    assert_int_equal(pc_enumerate(&wb_table, p, allowed, n, &m, c, 3, &nc), PLANCOLL_SUCCESS);
    assert_int_equal(nc, n);
    struct pc_decision d;
    assert_int_equal(pc_choose(&wb_table, p, c, nc, false, NULL, NULL, &d), PLANCOLL_SUCCESS);
    return d.chosen.alg;
}

static void test_host_work_bound(void **state)
{
    (void)state;
    struct pc_problem p = alltoall_problem();
    p.flags = PLANCOLL_ESTIMATE;
    p.shape = (struct pc_shape){.nranks = 8, .nnodes = 2, .min_ppn = 4, .max_ppn = 4, .oversubscribed = true,
                                .host_ranks = 8, .host_cores = 2};
    struct pc_candidate c[3];
    /* 8 ranks on 2 cores: busy's 90 us of CPU per rank take 8 x 90 / 2 = 360 us of the host; idle's 8 x 10 / 2 =
     * 40 us stay under its estimate */
    assert_int_equal(wb_choose(&p, 2, c), 1);
    assert_true(c[0].predicted_us == 360.0);
    assert_true(c[1].predicted_us == 120.0);
    assert_true(c[0].busy_us == 90.0); /* the caller's busy time is the estimate's part, as before */
    /* a leader-based plan is charged its mean rank's work: 8 x 18 / 2 = 72 us, under its estimate of 100 */
    assert_int_equal(wb_choose(&p, 3, c), 2);
    assert_true(c[2].predicted_us == 100.0);
    /* 3 ranks on 2 cores: 3 x 90 / 2 = 135 us, still above idle's 120 */
    p.shape.host_ranks = 3;
    assert_int_equal(wb_choose(&p, 2, c), 1);
    assert_true(c[0].predicted_us == 135.0);

    /* a core per rank: no bound, the estimates decide */
    p.shape.oversubscribed = false;
    p.shape.host_ranks = 2;
    assert_int_equal(wb_choose(&p, 2, c), 0);
    assert_true(c[0].predicted_us == 100.0);
    /* a shape that does not give the host's cores (hand-built, older callers): no bound */
    p.shape.oversubscribed = true;
    p.shape.host_ranks = p.shape.host_cores = 0;
    assert_int_equal(wb_choose(&p, 2, c), 0);
}

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
    assert_string_equal(buf, "leaders=0 placement=first segments=0 transport=p2p radix=0 inter=rd stores=normal");
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
    p = (struct pc_params){.leaders = 3, .placement = 1, .segments = 8, .transport = 1, .radix = 2, .inter = 1, .stores = 1};
    pc_params_format(&p, PC_PARAM_ALL, buf, sizeof buf);
    assert_string_equal(buf, "leaders=3 placement=numa segments=8 transport=put radix=2 inter=rsag stores=stream");
}

/* A buffer too small for every field: the output is still terminated, stays within len, and is a prefix of the
 * full text (never a piece of a later field glued after an earlier one). */
static void test_params_format_truncated(void **state)
{
    (void)state;
    const struct pc_params p = {.leaders = 3, .placement = 1, .segments = 8, .transport = 1, .radix = 2};
    const char *full = "leaders=3 placement=numa segments=8 transport=put radix=2 inter=rd stores=normal";
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
        cmocka_unit_test(test_choose_measure_exact_tie),
        cmocka_unit_test(test_choose_measure_every_algorithm),
        cmocka_unit_test(test_choose_measure_each_parameter),
        cmocka_unit_test(test_choose_time_limit),
        cmocka_unit_test(test_choose_single_candidate),
        cmocka_unit_test(test_choose_hook_errors),
        cmocka_unit_test(test_choose_unfit_alone),
        cmocka_unit_test(test_choose_nomem_fallback),
        cmocka_unit_test(test_race_clear_winner),
        cmocka_unit_test(test_race_tie_goes_to_model),
        cmocka_unit_test(test_race_separates_eight_percent),
        cmocka_unit_test(test_race_time_limit),
        cmocka_unit_test(test_race_same_decision_every_rank),
        cmocka_unit_test(test_choose_verbose),
        cmocka_unit_test(test_params_format),
        cmocka_unit_test(test_params_format_truncated),
        cmocka_unit_test(test_host_work_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
