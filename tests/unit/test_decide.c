/* The decision of plan creation without MPI (src/planner/decide.c): pc_decide over a small table of fake
 * algorithms, with scripted hooks standing in for the collective ones (agreed wisdom, calibration, timing,
 * rank 0's broadcast). One test per path of the decision. This program links the MPI-free core alone
 * (plancoll_pure, no MPI library): that it links at all shows the core needs nothing from the layers above. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "base/errors.h"
#include "planner/decide.h"

/* ---- a table of fake algorithms -------------------------------------------------------------------------------
 * The estimates are written so that the model decides the ranking: "fast_net" costs 100 L, "fixed" costs
 * 50 + segments whatever the model. Under the default model (L of a microsecond or more) "fixed" wins; under
 * the scripted calibrated model (L = 0.1 us) "fast_net" wins. Every estimate call is counted, so the tests see
 * how many times the candidates were enumerated. */

static int estimates; /* estimate calls since the last reset */

static double fast_net_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v;
    estimates++;
    return 100.0 * m->L_us;
}

static int fixed_variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    (void)p;
    int n = 0;
    for (int s = 1; s <= 2 && n < max; s++) out[n++] = (struct pc_params){.segments = s};
    return n;
}

static double fixed_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)m;
    estimates++;
    return 50.0 + v->segments;
}

static double native_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    estimates++;
    return 500.0;
}

static const char *never(const struct pc_problem *p)
{
    (void)p;
    return "never applicable";
}

static const struct pc_algorithm fake_fast_net = {
    .name = "allreduce.fast_net", .collective = PC_ALLREDUCE, .estimate = fast_net_estimate};
static const struct pc_algorithm fake_fixed = {.name = "allreduce.fixed",
                                               .collective = PC_ALLREDUCE,
                                               .params = PC_PARAM_SEGMENTS,
                                               .variants = fixed_variants,
                                               .estimate = fixed_estimate};
static const struct pc_algorithm fake_native = {
    .name = "allreduce.native", .collective = PC_ALLREDUCE, .mpi_own = true, .estimate = native_estimate};
static const struct pc_algorithm fake_inapplicable = {
    .name = "allreduce.inapplicable", .collective = PC_ALLREDUCE, .inapplicable = never, .estimate = native_estimate};
static const struct pc_algorithm fake_alltoall = {
    .name = "alltoall.only", .collective = PC_ALLTOALL, .estimate = native_estimate};

enum { FAST_NET, FIXED, NATIVE, INAPPLICABLE, ALLTOALL_ONLY, NALGS };
static const struct pc_algorithm *const fake_entries[NALGS] = {&fake_fast_net, &fake_fixed, &fake_native,
                                                                &fake_inapplicable, &fake_alltoall};
static const struct pc_algorithm_table fake_table = {fake_entries, NALGS};
/* The allreduce candidates: fast_net, fixed (segments 1 and 2), native. */
#define ALLREDUCE_CANDIDATES 4

static struct pc_problem problem(enum pc_collective coll, unsigned flags)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = coll;
    p.flags = flags;
    p.shape = (struct pc_shape){.nranks = 4, .nnodes = 2, .min_ppn = 2, .max_ppn = 2};
    p.count = 100;
    p.elem_bytes = 8;
    p.block_bytes = 64;
    return p;
}

/* ---- scripted hooks ---------------------------------------------------------------------------------------- */

struct script {
    /* agreed_wisdom */
    int wisdom_calls;
    char wisdom_key[160];
    const struct pc_wisdom_entry *wisdom; /* what it answers */
    int wisdom_error;
    /* calibrate */
    int calibrate_calls;
    struct pc_machine_model calibrated; /* what it fills */
    int calibrate_error;
    /* measure and bcast_int */
    int measure_calls, bcast_calls;
    double measured[NALGS]; /* by algorithm */
    double slot_us[PC_MAX_CANDIDATES]; /* each trial plan's steady batch time */
};

static int script_wisdom(void *ctx, const char *key, const struct pc_wisdom_entry **entry)
{
    struct script *s = ctx;
    s->wisdom_calls++;
    snprintf(s->wisdom_key, sizeof s->wisdom_key, "%s", key);
    *entry = s->wisdom_error ? NULL : s->wisdom;
    return s->wisdom_error;
}

static int script_calibrate(void *ctx, struct pc_machine_model *m)
{
    struct script *s = ctx;
    s->calibrate_calls++;
    if (s->calibrate_error) return s->calibrate_error;
    *m = s->calibrated;
    return PLANCOLL_SUCCESS;
}

static int script_prepare(void *ctx, int slot, const struct pc_candidate *c)
{
    struct script *s = ctx;
    s->measure_calls++; /* candidates timed */
    s->slot_us[slot] = s->measured[c->alg] + c->params.segments; /* distinct per candidate */
    return PLANCOLL_SUCCESS;
}

static int script_batch(void *ctx, int slot, double *us)
{
    struct script *s = ctx;
    *us = s->slot_us[slot];
    return PLANCOLL_SUCCESS;
}

static void script_release(void *ctx, int slot)
{
    struct script *s = ctx;
    s->slot_us[slot] = -1;
}

static int script_bcast(void *ctx, int *value)
{
    struct script *s = ctx;
    (void)value; /* one rank: rank 0's value is this one */
    s->bcast_calls++;
    return PLANCOLL_SUCCESS;
}

static struct pc_decide_hooks hooks_of(struct script *s)
{
    memset(s, 0, sizeof *s);
    pc_model_default(&s->calibrated);
    s->calibrated.calibrated = true;
    s->calibrated.L_us = 0.1;
    for (int i = 0; i < NALGS; i++) s->measured[i] = 1000.0;
    estimates = 0;
    return (struct pc_decide_hooks){.ctx = s,
                                    .agreed_wisdom = script_wisdom,
                                    .calibrate = script_calibrate,
                                    .choose = {.ctx = s,
                                               .prepare = script_prepare,
                                               .batch = script_batch,
                                               .release = script_release,
                                               .bcast_int = script_bcast}};
}

/* The agreed model of the tests that have one: the default with a large latency, so "fixed" wins. */
static struct pc_machine_model agreed_model(void)
{
    struct pc_machine_model m;
    pc_model_default(&m);
    m.calibrated = true;
    m.L_us = 10.0;
    return m;
}

static struct pc_decide_input input(const struct pc_problem *p, const struct pc_machine_model *model)
{
    return (struct pc_decide_input){.algs = &fake_table, .problem = p, .model = model, .calibration_allowed = true};
}

static struct pc_wisdom_entry entry(const char *algorithm, int segments, double us)
{
    struct pc_wisdom_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.algorithm, sizeof e.algorithm, "%s", algorithm);
    e.params.segments = segments;
    e.measured_us = us;
    e.rigor = PLANCOLL_MEASURE;
    return e;
}

/* ---- the paths ---------------------------------------------------------------------------------------------- */

/* Candidates whose set-up found too little memory on an earlier try of the plan (plan.c choose_again): the estimate
 * passes over them, wisdom naming one is passed over, and with none left the decision is PLANCOLL_ERR_NOMEM. */
static void test_unfit_candidates(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, 0);
    struct pc_machine_model m = agreed_model(); /* fixed (segments 1), fixed 2, native, fast_net */
    struct pc_decide_input in = input(&p, &m);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(r.decision.chosen.alg, FIXED);
    assert_int_equal(r.decision.chosen.params.segments, 1);

    struct pc_candidate unfit[ALLREDUCE_CANDIDATES];
    unfit[0] = r.decision.chosen;
    in.unfit = unfit;
    in.nunfit = 1;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(r.decision.chosen.alg, FIXED); /* the other variant of the same algorithm may fit */
    assert_int_equal(r.decision.chosen.params.segments, 2);
    assert_int_equal(r.decision.ncandidates, ALLREDUCE_CANDIDATES - 1);
    unfit[in.nunfit++] = r.decision.chosen;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(r.decision.chosen.alg, NATIVE);
    unfit[in.nunfit++] = r.decision.chosen;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(r.decision.chosen.alg, FAST_NET);
    unfit[in.nunfit++] = r.decision.chosen;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_ERR_NOMEM);

    /* wisdom naming an unfit candidate is passed over: the rest are timed */
    h = hooks_of(&s);
    p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
    struct pc_wisdom_entry w = entry("allreduce.fixed", 1, 7.5);
    s.wisdom = &w;
    in = input(&p, &m);
    in.unfit = unfit;
    in.nunfit = 1;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_string_equal(r.decision.how, "measured");
    assert_int_equal(s.measure_calls, ALLREDUCE_CANDIDATES - 1);
    assert_false(r.decision.chosen.alg == FIXED && r.decision.chosen.params.segments == 1);
}

/* Agreed wisdom naming a candidate decides: no calibration, no timing, no broadcast. */
static void test_wisdom_hit(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
    struct pc_wisdom_entry w = entry("allreduce.fixed", 2, 7.5);
    s.wisdom = &w;
    struct pc_decide_input in = input(&p, NULL); /* no model: calibration would run but for the hit */
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_string_equal(r.decision.how, "wisdom");
    assert_int_equal(r.decision.chosen.alg, FIXED);
    assert_int_equal(r.decision.chosen.params.segments, 2);
    assert_true(r.decision.chosen.measured_us == 7.5);
    assert_true(r.decision.chosen.predicted_us == 52.0);
    assert_int_equal(r.decision.ncandidates, ALLREDUCE_CANDIDATES);
    assert_false(r.decision.has_runner_up);
    char key[160];
    pc_problem_key(&p, key, sizeof key);
    assert_int_equal(s.wisdom_calls, 1);
    assert_string_equal(s.wisdom_key, key);
    assert_int_equal(s.calibrate_calls, 0);
    assert_int_equal(s.measure_calls, 0);
    assert_int_equal(s.bcast_calls, 0);
    assert_false(r.calibrated);
    assert_int_equal(estimates, ALLREDUCE_CANDIDATES); /* enumerated once */
}

/* An entry whose algorithm, or whose parameters, are not among the candidates is ignored: the plan is timed. */
static void test_wisdom_not_a_candidate(void **state)
{
    (void)state;
    const struct pc_wisdom_entry stale[] = {
        entry("allreduce.fixed", 9, 1.0),        /* not a variant of fixed */
        entry("allreduce.inapplicable", 0, 1.0), /* inapplicable here */
        entry("alltoall.only", 0, 1.0),          /* another collective */
        entry("allreduce.gone", 0, 1.0),         /* not in the table */
    };
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; i++) {
        struct script s;
        struct pc_decide_hooks h = hooks_of(&s);
        struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
        s.wisdom = &stale[i];
        struct pc_machine_model m = agreed_model();
        struct pc_decide_input in = input(&p, &m);
        struct pc_decide_result r;
        assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
        assert_int_equal(s.wisdom_calls, 1);
        assert_string_equal(r.decision.how, "measured");
        assert_int_equal(s.measure_calls, ALLREDUCE_CANDIDATES);
        assert_true(r.decision.chosen.measured_us != 1.0);
    }
}

/* WISDOM_ONLY without agreed wisdom fails, naming the problem; nothing is calibrated or timed. */
static void test_wisdom_only_miss(void **state)
{
    (void)state;
    struct pc_wisdom_entry stale = entry("allreduce.fixed", 9, 1.0);
    for (int with_stale = 0; with_stale < 2; with_stale++) {
        struct script s;
        struct pc_decide_hooks h = hooks_of(&s);
        struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_WISDOM_ONLY);
        s.wisdom = with_stale ? &stale : NULL;
        struct pc_decide_input in = input(&p, NULL);
        struct pc_decide_result r;
        pc_clear_error();
        assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_ERR_NO_WISDOM);
        char key[160], expected[200];
        pc_problem_key(&p, key, sizeof key);
        snprintf(expected, sizeof expected, "no wisdom for %s", key);
        assert_string_equal(plancoll_error_detail(), expected);
        assert_int_equal(s.wisdom_calls, 1);
        assert_int_equal(s.calibrate_calls, 0);
        assert_int_equal(s.measure_calls + s.bcast_calls, 0);
    }
}

/* No agreed model, several candidates, calibration allowed: calibrate once, then rank under the measured model
 * (which reverses the default model's ranking). */
static void test_calibrate_and_rerank(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_ESTIMATE);
    struct pc_decide_input in = input(&p, NULL);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.calibrate_calls, 1);
    assert_true(r.calibrated);
    assert_memory_equal(&r.model, &s.calibrated, sizeof r.model);
    assert_string_equal(r.decision.how, "estimate");
    assert_int_equal(r.decision.chosen.alg, FAST_NET);
    assert_true(r.decision.chosen.predicted_us == 100.0 * 0.1);
    assert_int_equal(r.decision.runner_up.alg, FIXED);
    assert_int_equal(estimates, 2 * ALLREDUCE_CANDIDATES); /* once per model */
    assert_int_equal(s.wisdom_calls, 0);
}

/* PLANCOLL_CALIBRATE=0: the default model ranks, the hook is never called. */
static void test_calibration_disabled(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_ESTIMATE);
    struct pc_decide_input in = input(&p, NULL);
    in.calibration_allowed = false;
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.calibrate_calls, 0);
    assert_false(r.calibrated);
    struct pc_machine_model def;
    pc_model_default(&def);
    assert_memory_equal(&r.model, &def, sizeof def);
    assert_int_equal(r.decision.chosen.alg, FIXED);
    assert_int_equal(r.decision.chosen.params.segments, 1);
    assert_int_equal(estimates, ALLREDUCE_CANDIDATES);
}

/* An agreed model is used as it is, without calibrating. */
static void test_agreed_model_not_recalibrated(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_ESTIMATE);
    struct pc_machine_model m = agreed_model();
    struct pc_decide_input in = input(&p, &m);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.calibrate_calls, 0);
    assert_memory_equal(&r.model, &m, sizeof m);
    assert_int_equal(r.decision.chosen.alg, FIXED);
    assert_int_equal(estimates, ALLREDUCE_CANDIDATES);
}

/* A single candidate needs no ranking, hence no calibration, even without a model. */
static void test_single_candidate(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLTOALL, PLANCOLL_ESTIMATE);
    struct pc_decide_input in = input(&p, NULL);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.calibrate_calls, 0);
    assert_false(r.calibrated);
    assert_int_equal(r.decision.chosen.alg, ALLTOALL_ONLY);
    assert_int_equal(r.decision.ncandidates, 1);
    assert_string_equal(r.decision.how, "estimate");
}

/* PLANCOLL_ALGORITHM's list: only its candidates, and wisdom is not consulted (it could name another). */
static void test_forced_skips_wisdom(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
    struct pc_wisdom_entry w = entry("allreduce.fixed", 1, 7.5); /* a candidate, and among the forced */
    s.wisdom = &w;
    struct pc_forced forced[2];
    int nforced = 0;
    assert_int_equal(pc_parse_forced(&fake_table, "allreduce.fast_net,allreduce.fixed:segments=1", PC_ALLREDUCE, forced,
                                     2, &nforced),
                     PLANCOLL_SUCCESS);
    assert_int_equal(nforced, 2);
    struct pc_machine_model m = agreed_model();
    struct pc_decide_input in = input(&p, &m);
    in.forced = forced;
    in.nforced = nforced;
    s.measured[FAST_NET] = 3.0; /* timing picks fast_net, wisdom would have picked fixed */
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.wisdom_calls, 0);
    assert_string_equal(r.decision.how, "forced, measured");
    assert_int_equal(r.decision.ncandidates, 2);
    assert_int_equal(r.decision.chosen.alg, FAST_NET);
    assert_int_equal(s.measure_calls, 2);
}

/* A failing calibration is the decision's failure; nothing is ranked or timed after it. */
static void test_calibrate_failure(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
    s.calibrate_error = PLANCOLL_ERR_NOMEM;
    struct pc_decide_input in = input(&p, NULL);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_ERR_NOMEM);
    assert_int_equal(s.wisdom_calls, 1);
    assert_int_equal(s.calibrate_calls, 1);
    assert_int_equal(s.measure_calls + s.bcast_calls, 0);
    assert_int_equal(estimates, ALLREDUCE_CANDIDATES);
}

/* A failing wisdom agreement is the decision's failure, before calibration and timing. */
static void test_wisdom_failure(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_PATIENT);
    s.wisdom_error = PLANCOLL_ERR_MPI;
    struct pc_decide_input in = input(&p, NULL);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_ERR_MPI);
    assert_int_equal(s.wisdom_calls, 1);
    assert_int_equal(s.calibrate_calls, 0);
    assert_int_equal(s.measure_calls + s.bcast_calls, 0);
}

/* MEASURE times the candidates with the measure hook and takes the fastest measured, against the model. */
static void test_measure_uses_hooks(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE);
    struct pc_machine_model m = agreed_model(); /* the model prefers fixed */
    struct pc_decide_input in = input(&p, &m);
    s.measured[NATIVE] = 2.0; /* the model's worst is the fastest measured */
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.wisdom_calls, 1);
    assert_int_equal(s.calibrate_calls, 0);
    assert_int_equal(s.measure_calls, ALLREDUCE_CANDIDATES);
    assert_true(s.bcast_calls >= 1);
    assert_string_equal(r.decision.how, "measured");
    assert_int_equal(r.decision.chosen.alg, NATIVE);
    assert_true(r.decision.chosen.measured_us == 2.0);
    assert_int_equal(r.decision.ncandidates, ALLREDUCE_CANDIDATES);
}

/* ESTIMATE never asks for wisdom (the lookup is collective), even when it would have answered. */
static void test_estimate_skips_wisdom(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_ESTIMATE);
    struct pc_wisdom_entry w = entry("allreduce.native", 0, 1.0);
    s.wisdom = &w;
    struct pc_machine_model m = agreed_model();
    struct pc_decide_input in = input(&p, &m);
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_int_equal(s.wisdom_calls, 0);
    assert_int_equal(s.measure_calls, 0);
    assert_string_equal(r.decision.how, "estimate");
    assert_int_equal(r.decision.chosen.alg, FIXED);
}

/* ---- planning for overlap (PLANCOLL_OVERLAP, docs/design.md "Planning for overlap") ----------------------------
 * Two startable algorithms: "quick" has the shorter critical path (100 us) but keeps the caller busy 80 us of it
 * (copies, reductions); "idle" takes 110 us and needs the caller 10 us. "unknown" has no busy function (taken as
 * busy throughout) and a 105 us critical path. The plain rule takes quick; the overlap rule, with the compute of
 * the shortest critical path (100 us) to hide behind, ranks max(busy, cp - 100): quick 80, unknown 105, idle 10. */
static double quick_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 100.0;
}
static double quick_busy(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 80.0;
}
static double idle_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 110.0;
}
static double idle_busy(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 10.0;
}
static double unknown_estimate(const struct pc_problem *p, const struct pc_params *v, const struct pc_machine_model *m)
{
    (void)p, (void)v, (void)m;
    return 112.0; /* more than PC_ESTIMATE_TIE above quick: not a tie */
}
/* never called: the planner only needs to see that the algorithms can be started */
static int no_start(struct plancoll_plan_s *plan, const void *s, void *r)
{
    (void)plan, (void)s, (void)r;
    return PLANCOLL_ERR_ARGUMENT;
}
static int no_advance(struct plancoll_plan_s *plan, bool *done)
{
    (void)plan;
    *done = true;
    return PLANCOLL_ERR_ARGUMENT;
}
static const struct pc_algorithm ov_quick = {.name = "allreduce.quick", .collective = PC_ALLREDUCE,
                                             .estimate = quick_estimate, .busy = quick_busy,
                                             .start = no_start, .advance = no_advance};
static const struct pc_algorithm ov_idle = {.name = "allreduce.idle", .collective = PC_ALLREDUCE,
                                            .estimate = idle_estimate, .busy = idle_busy,
                                            .start = no_start, .advance = no_advance};
static const struct pc_algorithm ov_unknown = {.name = "allreduce.unknown", .collective = PC_ALLREDUCE,
                                               .estimate = unknown_estimate, .start = no_start, .advance = no_advance};
enum { OV_UNKNOWN, OV_IDLE, OV_QUICK, OV_NALGS }; /* quick last: a first-wins tie break cannot pick it by accident */
static const struct pc_algorithm *const ov_entries[OV_NALGS] = {&ov_unknown, &ov_idle, &ov_quick};
static const struct pc_algorithm_table ov_table = {ov_entries, OV_NALGS};

/* ESTIMATE: the overlap rule prefers the lower-busy candidate over the slightly faster one; the plain rule (and a
 * NONBLOCKING plan that is not for overlap) does not. The decision names the plain rule's choice for fprint. */
static void test_overlap_estimate(void **state)
{
    (void)state;
    const unsigned flag_sets[] = {0, PLANCOLL_NONBLOCKING, PLANCOLL_OVERLAP | PLANCOLL_NONBLOCKING};
    for (int f = 0; f < 3; f++) {
        struct script s;
        struct pc_decide_hooks h = hooks_of(&s);
        struct pc_problem p = problem(PC_ALLREDUCE, flag_sets[f]);
        struct pc_machine_model m = agreed_model();
        struct pc_decide_input in = {.algs = &ov_table, .problem = &p, .model = &m};
        struct pc_decide_result r;
        assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
        assert_string_equal(r.decision.how, "estimate");
        bool overlap = (flag_sets[f] & PLANCOLL_OVERLAP) != 0;
        assert_int_equal(r.decision.chosen.alg, overlap ? OV_IDLE : OV_QUICK);
        assert_true(r.decision.chosen.busy_us == (overlap ? 10.0 : 80.0));
        assert_int_equal(r.decision.has_execute_fastest, overlap);
        if (overlap) {
            assert_int_equal(r.decision.execute_fastest.alg, OV_QUICK);
            assert_true(r.decision.execute_fastest.busy_us == 80.0);
            assert_true(r.decision.chosen.rank_us == 10.0);         /* max(10, 110 - 100) */
            assert_true(r.decision.execute_fastest.rank_us == 80.0); /* max(80, 100 - 100) */
        }
        assert_int_equal(s.measure_calls, 0);
    }
}

/* An algorithm without a busy function counts as busy for its whole critical path. */
static void test_overlap_unknown_busy(void **state)
{
    (void)state;
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_OVERLAP | PLANCOLL_NONBLOCKING);
    struct pc_machine_model m = agreed_model();
    struct pc_candidate c[OV_NALGS];
    int n = 0;
    assert_int_equal(pc_enumerate(&ov_table, &p, NULL, 0, &m, c, OV_NALGS, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, OV_NALGS);
    assert_int_equal(c[OV_UNKNOWN].alg, OV_UNKNOWN);
    assert_true(c[OV_UNKNOWN].busy_us == 112.0);
    assert_true(pc_overlap_cost(&c[OV_UNKNOWN], 100.0) == 112.0);
}

/* Scripted overlapped timing: us[0] the overlapped time (start, compute, wait), us[1] the plain execute time. */
static const double ov_overlapped[OV_NALGS] = {[OV_UNKNOWN] = 205, [OV_IDLE] = 112, [OV_QUICK] = 181};
static const double ov_execute[OV_NALGS] = {[OV_UNKNOWN] = 104, [OV_IDLE] = 109, [OV_QUICK] = 99};
static int ov_slot_alg[PC_MAX_CANDIDATES], ov_first_prepared;

static int ov_prepare(void *ctx, int slot, const struct pc_candidate *c)
{
    struct script *s = ctx;
    if (s->measure_calls++ == 0) ov_first_prepared = c->alg;
    ov_slot_alg[slot] = c->alg;
    return PLANCOLL_SUCCESS;
}

static int ov_batch(void *ctx, int slot, double *us)
{
    (void)ctx;
    assert_true(us[1] == -1.0); /* the planner's promise to hooks that have no second time */
    us[0] = ov_overlapped[ov_slot_alg[slot]];
    us[1] = ov_execute[ov_slot_alg[slot]];
    return PLANCOLL_SUCCESS;
}

/* MEASURE under PLANCOLL_OVERLAP: the candidate of the shortest predicted critical path is timed first (its execute
 * time sets the compute every candidate hides behind), the smallest overlapped time wins, the execute times are
 * kept, and the execute-fastest candidate is named. Without the flag the same timings pick by us[0] alone. */
static void test_overlap_measure(void **state)
{
    (void)state;
    struct script s;
    struct pc_decide_hooks h = hooks_of(&s);
    h.choose.prepare = ov_prepare;
    h.choose.batch = ov_batch;
    struct pc_problem p = problem(PC_ALLREDUCE, PLANCOLL_MEASURE | PLANCOLL_OVERLAP | PLANCOLL_NONBLOCKING);
    struct pc_machine_model m = agreed_model();
    struct pc_decide_input in = {.algs = &ov_table, .problem = &p, .model = &m};
    struct pc_decide_result r;
    assert_int_equal(pc_decide(&in, &h, &r), PLANCOLL_SUCCESS);
    assert_string_equal(r.decision.how, "measured");
    assert_int_equal(ov_first_prepared, OV_QUICK);
    assert_int_equal(r.decision.chosen.alg, OV_IDLE);
    assert_true(r.decision.chosen.measured_us == 112.0);
    assert_true(r.decision.chosen.measured_other_us == 109.0);
    assert_true(r.decision.has_execute_fastest);
    assert_int_equal(r.decision.execute_fastest.alg, OV_QUICK);
    assert_true(r.decision.execute_fastest.measured_us == 181.0);
    assert_true(r.decision.execute_fastest.measured_other_us == 99.0);
}

/* A decision for overlap is wisdom of its own: the keys differ, the plain key is the one written before the flag
 * existed, and neither answers the other. */
static void test_overlap_wisdom_key(void **state)
{
    (void)state;
    struct pc_problem plain = problem(PC_ALLREDUCE, PLANCOLL_MEASURE | PLANCOLL_NONBLOCKING);
    struct pc_problem over = problem(PC_ALLREDUCE, PLANCOLL_MEASURE | PLANCOLL_OVERLAP | PLANCOLL_NONBLOCKING);
    char kp[160], ko[160];
    pc_problem_key(&plain, kp, sizeof kp);
    pc_problem_key(&over, ko, sizeof ko);
    assert_string_equal(kp, "allreduce:P=4:nodes=2:ppn=2-2:count=100:elem=8:type=0:op=0:comm=0");
    assert_string_equal(ko, "allreduce:P=4:nodes=2:ppn=2-2:count=100:elem=8:type=0:op=0:comm=0:overlap=1");
    pc_wisdom_clear();
    struct pc_wisdom_entry e = entry("allreduce.idle", 0, 112.0);
    snprintf(e.key, sizeof e.key, "%s", ko);
    assert_int_equal(pc_wisdom_store(&e), PLANCOLL_SUCCESS);
    assert_null(pc_wisdom_lookup(kp, PLANCOLL_MEASURE));
    assert_non_null(pc_wisdom_lookup(ko, PLANCOLL_MEASURE));
    pc_wisdom_clear();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unfit_candidates),
        cmocka_unit_test(test_wisdom_hit),
        cmocka_unit_test(test_wisdom_not_a_candidate),
        cmocka_unit_test(test_wisdom_only_miss),
        cmocka_unit_test(test_calibrate_and_rerank),
        cmocka_unit_test(test_calibration_disabled),
        cmocka_unit_test(test_agreed_model_not_recalibrated),
        cmocka_unit_test(test_single_candidate),
        cmocka_unit_test(test_forced_skips_wisdom),
        cmocka_unit_test(test_calibrate_failure),
        cmocka_unit_test(test_wisdom_failure),
        cmocka_unit_test(test_measure_uses_hooks),
        cmocka_unit_test(test_estimate_skips_wisdom),
        cmocka_unit_test(test_overlap_estimate),
        cmocka_unit_test(test_overlap_unknown_busy),
        cmocka_unit_test(test_overlap_measure),
        cmocka_unit_test(test_overlap_wisdom_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
