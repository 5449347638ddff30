/* The public API's plan creation for the collectives: validate, agree across ranks, plan, set up. Execution and
 * destruction are in execute.c, inspection in inspect.c, the live-plan table in handles.c. */
#include "exec/registry.h"
#include "api/handles.h"
#include "api/nonblocking.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/validate.h"
#include "api/wisdom_io.h"
#include "base/phase_times.h"
#include "exec/calibrate.h"
#include "exec/measure.h"
#include "planner/decide.h"
#include "planner/planner.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h"
#include "shm/sim_work.h"
#include "shm/wait.h"

/* ---- creation ---- */

/* Allocates the plan and attaches the communicator's layout (collective). */
int pc_plan_begin(MPI_Comm comm, unsigned flags, enum pc_collective coll, plancoll_plan *out,
                  struct plancoll_plan_s **pp)
{
    int err = pc_api_entry(comm);
    if (out) *out = NULL;
    if (err) return err;
    if (!out) return pc_error(PLANCOLL_ERR_NULL_PLAN, "the pointer to receive the plan is NULL");
    struct plancoll_plan_s *p = calloc(1, sizeof *p);
    if (!p) return pc_error(PLANCOLL_ERR_NOMEM, "plan");
    if ((err = pc_layout_get(comm, &p->layout))) {
        free(p);
        return err;
    }
    p->comm = p->layout->comm;
    pc_plan_tag_slot(p);
    p->rank = p->layout->rank;
    p->size = p->layout->size;
    if (flags & PLANCOLL_OVERLAP) flags |= PLANCOLL_NONBLOCKING; /* an overlapped plan is started */
    p->flags = flags;
    p->ops = &pc_collective_plan_ops; /* another kind replaces it when it builds the plan */
    p->prob.coll = coll;
    p->prob.flags = flags;
    p->prob.type_id = p->prob.op_id = -1;
    p->stype.type = p->rtype.type = MPI_DATATYPE_NULL;
    pc_layout_shape(p->layout, &p->prob.shape);
    *pp = p;
    return PLANCOLL_SUCCESS;
}

/* alltoallv: the bytes i sends j must be the bytes j expects from i; a hash of the whole pattern; and the busiest
 * node's off-node bytes (problem.h: max_node_offnode_bytes), summed over each node's ranks. sent has room for 2 P + 4 N
 * words (allocated before the agreement, so that a rank without it fails there, with every rank, instead of leaving
 * the others in this function's collectives); freed here. */
static int alltoallv_agree(struct plancoll_plan_s *p, uint64_t *sent)
{
    const int P = p->size;
    uint64_t *expected = sent + P;
    for (int j = 0; j < P; j++) sent[j] = (uint64_t)p->sendcounts[j] * (uint64_t)p->stype.size;
    int rc = pc_alltoall_wait(p->layout, sent, expected, 1, MPI_UINT64_T);
    if (rc != PLANCOLL_SUCCESS) {
        free(sent);
        return rc;
    }
    int bad = -1;
    for (int i = 0; i < P && bad < 0; i++)
        if (expected[i] != (uint64_t)p->recvcounts[i] * (uint64_t)p->rtype.size) bad = i;
    int err = PLANCOLL_SUCCESS;
    if (bad >= 0)
        err = pc_error(PLANCOLL_ERR_MISMATCH, "rank %d sends %llu bytes to rank %d, which expects %llu", bad,
                       (unsigned long long)expected[bad], p->rank,
                       (unsigned long long)p->recvcounts[bad] * (unsigned long long)p->rtype.size);
    uint64_t row = pc_hash_bytes(PC_HASH_SEED + (uint64_t)p->rank, sent, sizeof(uint64_t) * (size_t)P);
    uint64_t offnode = 0, offnode_in = 0;
    for (int j = 0; j < P; j++)
        if (p->layout->node_of[j] != p->layout->node_id) {
            offnode += sent[j];
            offnode_in += expected[j];
        }
    /* each node's off-node bytes out (first N words) and in (next N), every rank adding its own at its node */
    const int N = p->layout->nnodes;
    uint64_t *node_bytes = sent + 2 * P, *node_sums = node_bytes + 2 * N;
    memset(node_bytes, 0, sizeof(uint64_t) * 2 * (size_t)N);
    node_bytes[p->layout->node_id] = offnode;
    node_bytes[N + p->layout->node_id] = offnode_in;
    /* One agreement: did any rank see a mismatch, with the maxima the estimates use (problem.h): the slowest
     * rank sets the time, every rank's estimates come out identical (so every rank picks the same candidate), and
     * algorithms learn the largest block of the whole matrix (alltoallv.padded_bruck) without a collective of
     * their own. */
    uint64_t all[6] = {p->prob.send_total_bytes, p->prob.recv_total_bytes, offnode, (uint64_t)p->prob.nonzero_sends,
                       p->prob.max_block_bytes, p->prob.one_way};
    err = pc_agree_failure_max(p->layout, err, all, 6, NULL,
                               "the ranks' send and receive counts disagree (another rank saw it)");
    /* a disagreement seen elsewhere is a mismatch of this call's arguments, not another rank's own failure */
    if (err == PLANCOLL_ERR_REMOTE) err = PLANCOLL_ERR_MISMATCH;
    if (!err && N > 1) err = pc_allreduce_wait(p->layout, node_bytes, node_sums, 2 * N, MPI_UINT64_T, MPI_SUM);
    uint64_t busiest_node = 0;
    for (int i = 0; !err && N > 1 && i < 2 * N; i++)
        if (node_sums[i] > busiest_node) busiest_node = node_sums[i];
    free(sent);
    if (err) return err;
    p->prob.max_node_offnode_bytes = busiest_node;
    p->prob.max_send_bytes = all[0];
    p->prob.max_recv_bytes = all[1];
    p->prob.max_offnode_bytes = all[2];
    p->prob.max_nonzero_sends = (int)all[3];
    p->prob.max_block_bytes = all[4];
    p->prob.one_way = all[5] != 0;
    return pc_allreduce_wait(p->layout, &row, &p->prob.pattern_hash, 1, MPI_UINT64_T, MPI_BXOR);
}

/* The context of pc_decide's wisdom and calibration hooks (the measure hooks have their own, measure.c). */
struct decide_ctx {
    struct plancoll_plan_s *plan;
    const char *shape;          /* the shape key a calibrated model is remembered under */
    double calibration_seconds; /* spent calibrating, which the choice phase does not count */
};

/* pc_decide's wisdom hook: wisdom counts only when every rank holds the same entry (it may come from another
 * communicator). */
static int agreed_wisdom(void *ctx, const char *key, const struct pc_wisdom_entry **entry)
{
    const struct decide_ctx *c = ctx;
    struct plancoll_plan_s *p = c->plan;
    *entry = NULL;
    const struct pc_wisdom_entry *e = pc_wisdom_lookup(key, p->flags);
    uint64_t h = 0;
    if (e) {
        h = pc_hash_bytes(PC_HASH_SEED, e->algorithm, strlen(e->algorithm));
        h = pc_hash_bytes(h, &e->params, sizeof e->params);
        if (h == 0) h = 1;
    }
    uint64_t v[2] = {h, ~h}, m[2];
    int err = pc_allreduce_wait(p->layout, v, m, 2, MPI_UINT64_T, MPI_MAX);
    if (err) return err;
    if (e && m[0] == h && m[1] == ~h) *entry = e;
    return PLANCOLL_SUCCESS;
}

static uint64_t model_hash(const struct pc_machine_model *m)
{
    char *text = NULL;
    size_t len = 0, cap = 0;
    uint64_t h = 1;
    if (pc_model_format(m, &text, &len, &cap) == 0) h = pc_hash_bytes(PC_HASH_SEED, text, len) | 1u;
    free(text);
    return h;
}

/* PLANCOLL_CALIBRATE=0 plans with the documented default model instead of measuring this machine; 1 (or
 * unset) measures. Anything else is an error, like any other malformed plancoll variable. */
static int calibration_setting(bool *on)
{
    const char *v = getenv("PLANCOLL_CALIBRATE");
    *on = true;
    if (!v || strcmp(v, "1") == 0) return PLANCOLL_SUCCESS;
    if (strcmp(v, "0") == 0) {
        *on = false;
        return PLANCOLL_SUCCESS;
    }
    return pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_CALIBRATE='%s': use 0 or 1", v);
}

/* ---- the plan-creation spine: agree, decide, instantiate, remember ------------------------------------------ */

/* The values the one agreement (pc_agree_failure_max: did any rank fail, and these maxima) carries. A hash travels
 * with its complement: both maxima equal this rank's pair only when every rank holds the same value. */
enum agreement_field {
    AGREE_CALL_HASH,      /* the call's arguments and the plancoll variables that steer planning (0 after a failure) */
    AGREE_CALL_HASH_NOT,  /* ~AGREE_CALL_HASH */
    AGREE_NONCONTIGUOUS,  /* some rank's datatypes are not dense */
    AGREE_MODEL_HASH,     /* the machine model this rank holds for the shape (0: none) */
    AGREE_MODEL_HASH_NOT, /* ~AGREE_MODEL_HASH */
    AGREE_WISDOM_PENDING, /* some rank has PLANCOLL_WISDOM still to read (wisdom_io.c), which every rank must join */
    AGREE_MPI_OP_DIFFERS, /* some rank's MPI op is not plancoll's (reduce.c) */
    AGREE_SOME_IN_PLACE,  /* some rank passed MPI_IN_PLACE (allreduce allows a mix, MPI does not: native.c) */
    AGREE_NFIELDS
};

/* What the agreement settles for the decision. */
struct agreement {
    struct pc_forced forced[PC_MAX_CANDIDATES]; /* PLANCOLL_ALGORITHM's entries for this collective */
    int nforced;
    bool calibration_allowed;             /* PLANCOLL_CALIBRATE */
    bool progress_thread;                 /* PLANCOLL_PROGRESS_THREAD=1 (nonblocking.c) */
    char shape[64];                       /* the shape key of the machine model */
    const struct pc_machine_model *model; /* this shape's model, the same on every rank; NULL when none */
};

/* Local checks of the call and the environment, then one allreduce: did any rank fail, did every rank pass the
 * same call (the calibration setting included: calibration is collective, a rank without it would leave the
 * others waiting), which facts must hold on every rank, and does every rank hold the same machine model. */
/* An MPI without the MPI-4 large-count functions (shm/mpi_compat.h: Open MPI 4.1) takes no count past INT_MAX in
 * one call. The algorithms may send a rank's whole data as one message (packed, or as bytes), so a problem whose
 * largest per-rank data passes INT_MAX bytes is refused here, before any candidate is set up or run, rather than
 * failing (or, worse, truncating) in some execution. Judged on agreed quantities (the call hash covers alltoall's
 * and allreduce's sizes, alltoallv_agree gives the maxima), so every rank refuses together with the same detail. */
static int large_count_check(const struct pc_problem *prob)
{
    uint64_t largest = 0;
    switch (prob->coll) {
    case PC_ALLTOALL: largest = prob->block_bytes * (uint64_t)prob->shape.nranks; break;
    case PC_ALLTOALLV:
        largest = prob->max_send_bytes > prob->max_recv_bytes ? prob->max_send_bytes : prob->max_recv_bytes;
        break;
    case PC_ALLREDUCE: largest = (uint64_t)prob->count * prob->elem_bytes; break;
    default: break;
    }
    if (pc_mpi_count_fits(largest > (uint64_t)INT64_MAX ? INT64_MAX : (MPI_Count)largest)) return PLANCOLL_SUCCESS;
    return pc_error(PLANCOLL_ERR_OVERFLOW,
                    "this MPI has no large-count functions (MPI-4); a message of %llu elements (bytes: a rank's %s data, "
                    "which an algorithm may send as one message) exceeds INT_MAX",
                    (unsigned long long)largest, pc_collective_name(prob->coll));
}

static int agree(struct plancoll_plan_s *p, int local, struct agreement *a)
{
    double t_agree = pc_phase_start();
    const char *forced_text = getenv("PLANCOLL_ALGORITHM");
    a->nforced = 0;
    if (!local) local = pc_check_flags(p->flags);
    if (!local)
        local = pc_parse_forced(pc_registry_table(), forced_text, p->prob.coll, a->forced, PC_MAX_CANDIDATES,
                                &a->nforced);
    if (!local && pc_wait_mode_from_env() < 0)
        local = pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_WAIT='%s': use spin, yield or auto", getenv("PLANCOLL_WAIT"));
    if (!local) local = pc_progress_thread_setting(&a->progress_thread);
    if (!local) local = pc_sim_work_setting(); /* PLANCOLL_SIM_*: read under SMPI only */
    a->calibration_allowed = true;
    if (!local) local = calibration_setting(&a->calibration_allowed);

    uint64_t env_hash = forced_text ? pc_hash_bytes(PC_HASH_SEED, forced_text, strlen(forced_text)) : 0;
    if (!a->calibration_allowed) env_hash ^= UINT64_C(0x63616c6962726174); /* "calibrat" */
    uint64_t h = local ? 0 : pc_problem_agreement_hash(&p->prob, env_hash);
    pc_model_shape_key(&p->prob.shape, a->shape, sizeof a->shape);
    const struct pc_machine_model *known = pc_model_lookup(a->shape);
    uint64_t mh = known ? model_hash(known) : 0;
    /* alltoallv's count check needs 2 P words: had here, so that a rank without them fails in the agreement */
    uint64_t *counts_scratch = NULL;
    const size_t scratch_words = 2 * (size_t)p->size + 4 * (size_t)p->layout->nnodes; /* alltoallv_agree's */
    if (!local && p->prob.coll == PC_ALLTOALLV && !(counts_scratch = malloc(sizeof(uint64_t) * scratch_words)))
        local = pc_error(PLANCOLL_ERR_NOMEM, "count check");
    uint64_t all[AGREE_NFIELDS] = {
        [AGREE_CALL_HASH] = h,
        [AGREE_CALL_HASH_NOT] = ~h,
        [AGREE_NONCONTIGUOUS] = p->prob.contiguous ? 0u : 1u,
        [AGREE_MODEL_HASH] = mh,
        [AGREE_MODEL_HASH_NOT] = ~mh,
        [AGREE_WISDOM_PENDING] = pc_wisdom_env_pending() ? 1u : 0u,
        [AGREE_MPI_OP_DIFFERS] = p->prob.mpi_op_differs ? 1u : 0u,
        [AGREE_SOME_IN_PLACE] = p->prob.in_place ? 1u : 0u,
    };
    int err = pc_agree_failure_max(p->layout, local, all, AGREE_NFIELDS, NULL,
                                   "another rank's arguments were invalid (see that rank's plancoll_error_detail)");
    bool model_agreed = known && all[AGREE_MODEL_HASH] == mh && all[AGREE_MODEL_HASH_NOT] == ~mh;
    if (!err && (all[AGREE_CALL_HASH] != h || all[AGREE_CALL_HASH_NOT] != ~h))
        err = pc_error(PLANCOLL_ERR_MISMATCH,
                       "ranks passed different %s arguments (sizes, counts, datatype, op, flags, PLANCOLL_ALGORITHM or PLANCOLL_CALIBRATE)",
                       pc_collective_name(p->prob.coll));
    /* Applicability must not differ between ranks: contiguity counts only if every rank's types are dense ... */
    p->prob.contiguous = all[AGREE_NONCONTIGUOUS] == 0;
    /* ... and MPI's op counts as plancoll's only if it is on every rank */
    p->prob.mpi_op_differs = all[AGREE_MPI_OP_DIFFERS] != 0;
    p->prob.some_in_place = all[AGREE_SOME_IN_PLACE] != 0;
    if (!err && p->prob.coll == PC_ALLTOALLV) {
        err = alltoallv_agree(p, counts_scratch);
        counts_scratch = NULL; /* freed there */
    }
    free(counts_scratch);
    if (!err) err = large_count_check(&p->prob);
    if (err) return err;
    if (all[AGREE_WISDOM_PENDING]) {
        /* The file may carry this shape's model: agree on it afresh. */
        pc_wisdom_env_load(p->layout);
        known = pc_model_lookup(a->shape);
        mh = known ? model_hash(known) : 0;
        uint64_t w[2] = {mh, ~mh}, wm[2];
        if ((err = pc_allreduce_wait(p->layout, w, wm, 2, MPI_UINT64_T, MPI_MAX))) return err;
        model_agreed = known && wm[0] == mh && wm[1] == ~mh;
    }
    a->model = model_agreed ? known : NULL;
    pc_phase_add(PC_PHASE_AGREE, t_agree);
    return PLANCOLL_SUCCESS;
}

/* Calibrates (collective; every rank reached it from agreed facts) and remembers the model for the shape. */
static int calibrate_model(void *ctx, struct pc_machine_model *m)
{
    struct decide_ctx *c = ctx;
    double t_cal = pc_phase_start();
    int err = pc_calibrate(c->plan->layout, m);
    pc_phase_add(PC_PHASE_CALIBRATE, t_cal);
    c->calibration_seconds += pc_phase_now() - t_cal;
    if (err) return err;
    snprintf(m->shape, sizeof m->shape, "%s", c->shape);
    pc_model_remember(m);
    return PLANCOLL_SUCCESS;
}

/* Which candidate runs: pc_decide with the hooks that do the collective work. */
static int decide(struct plancoll_plan_s *p, const struct agreement *a, const struct pc_candidate *unfit, int nunfit,
                  struct pc_decide_result *decided)
{
    double t_choose = pc_phase_start();
    struct decide_ctx ctx = {.plan = p, .shape = a->shape};
    struct pc_decide_hooks hooks = {.ctx = &ctx, .agreed_wisdom = agreed_wisdom, .calibrate = calibrate_model};
    struct pc_measure_ctx trial;
    pc_measure_hooks(&trial, p, &hooks.choose);
    const char *verbose = getenv("PLANCOLL_VERBOSE");
    hooks.verbose = (verbose && strcmp(verbose, "0") != 0 && p->rank == 0) ? stderr : NULL;
    const struct pc_decide_input in = {.algs = pc_registry_table(),
                                       .problem = &p->prob,
                                       .forced = a->forced,
                                       .nforced = a->nforced,
                                       .model = a->model,
                                       .calibration_allowed = a->calibration_allowed,
                                       .unfit = unfit,
                                       .nunfit = nunfit};
    int err = pc_decide(&in, &hooks, decided);
    pc_measure_release(&trial); /* before the chosen plan's set-up allocates its own memory */
    t_choose += ctx.calibration_seconds; /* calibration is not part of the choice */
    pc_phase_add(PC_PHASE_CHOOSE, t_choose);
    return err;
}

/* The chosen algorithm set up on the plan, its provenance recorded (plancoll_fprint_plan), the plan registered. */
static int instantiate(struct plancoll_plan_s *p, const struct pc_decide_result *decided, bool progress_thread)
{
    const struct pc_algorithm_table *algs = pc_registry_table();
    const struct pc_decision *d = &decided->decision;
    p->alg = pc_algorithm_at(algs, d->chosen.alg);
    p->params = d->chosen.params;
    p->model_calibrated = decided->model.calibrated;
    p->chosen_by = d->time_limited ? "measured until the time limit" : d->how;
    p->predicted_us = d->chosen.predicted_us;
    p->measured_us = d->chosen.measured_us;
    p->candidates = d->ncandidates;
    p->busy_us = d->chosen.busy_us;
    p->measured_other_us = d->chosen.measured_other_us;
    if (d->has_execute_fastest) {
        const struct pc_candidate *x = &d->execute_fastest;
        snprintf(p->execute_fastest, sizeof p->execute_fastest, "%s", pc_algorithm_at(algs, x->alg)->name);
        p->execute_fastest_predicted_us = x->predicted_us;
        p->execute_fastest_busy_us = x->busy_us;
        p->execute_fastest_overlapped_us = x->measured_us;
        p->execute_fastest_us = x->measured_other_us;
    }
    p->runner_up_us = -1;
    p->first_execution_us = -1;
    if (d->has_runner_up) {
        snprintf(p->runner_up, sizeof p->runner_up, "%s", pc_algorithm_at(algs, d->runner_up.alg)->name);
        p->runner_up_us = d->runner_up.measured_us >= 0 ? d->runner_up.measured_us : d->runner_up.predicted_us;
        p->runner_up_tied = d->runner_up_tied;
        p->tie_noise_pct = d->tie_noise_pct;
    }
    double t0 = pc_phase_start();
    int err = p->alg->setup(p);
    if (!err) pc_store_chooser_init(p);
    if (!err && progress_thread) err = pc_progress_thread_acquire(p);
    err = pc_agree_setup(p, err); /* PLANCOLL_ERR_NOMEM on every rank when lack of memory was all that failed */
    p->setup_seconds = pc_phase_now() - t0;
    pc_phase_add(PC_PHASE_SETUP, t0);
    if (!err) err = pc_plan_register(p);
    return err;
}

/* A measured decision goes into the process's wisdom, so the next plan of the problem is not timed again. */
static void remember(const struct plancoll_plan_s *p, const struct pc_decision *d)
{
    if (d->chosen.measured_us < 0 || strcmp(d->how, "measured") != 0) return;
    /* a choice made without the candidates that did not fit is this moment's /dev/shm, not the problem's answer */
    if (p->unfit_count > 0) return;
    struct pc_wisdom_entry e;
    memset(&e, 0, sizeof e);
    pc_problem_key(&p->prob, e.key, sizeof e.key);
    snprintf(e.algorithm, sizeof e.algorithm, "%s", p->alg->name);
    e.params = p->params;
    e.measured_us = d->chosen.measured_us;
    e.rigor = p->flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
    e.decided_at = (long long)time(NULL);
    if (d->has_runner_up && d->runner_up.measured_us >= 0) {
        snprintf(e.runner_up, sizeof e.runner_up, "%s", pc_algorithm_at(pc_registry_table(), d->runner_up.alg)->name);
        e.runner_up_us = d->runner_up.measured_us;
    }
    pc_wisdom_store(&e); /* best effort: a full store only costs a re-measure later */
}

/* The chosen candidate's set-up found too little memory (node-shared above all: a large problem on a node with a
 * small /dev/shm) on some rank, and every rank knows it (pc_agree_setup). The planner's choice was a preference,
 * not a requirement: choose again among the candidates left, under the same model (no second calibration), until
 * one fits. MPI's own collective needs no memory of plancoll's, so unless PLANCOLL_ALGORITHM narrowed the choice,
 * one always does. Every rank takes the same steps: the failures and the choices are agreed. When nothing fits,
 * the first failure's detail is the error. */
static int choose_again(struct plancoll_plan_s *p, struct agreement *agreed, struct pc_decide_result *decided)
{
    struct pc_candidate unfit[PC_MAX_CANDIDATES];
    int nunfit = 0, err = PLANCOLL_ERR_NOMEM;
    char first_detail[sizeof p->unfit_detail];
    snprintf(first_detail, sizeof first_detail, "%s", plancoll_error_detail());
    while (err == PLANCOLL_ERR_NOMEM && nunfit < PC_MAX_CANDIDATES) {
        if (nunfit == 0) {
            const struct pc_candidate *c = &decided->decision.chosen;
            if (pc_spec_format(pc_registry_table(), c->alg, &c->params, p->unfit_first, sizeof p->unfit_first) < 0)
                p->unfit_first[0] = '\0';
            snprintf(p->unfit_detail, sizeof p->unfit_detail, "%s", first_detail);
        }
        unfit[nunfit++] = decided->decision.chosen;
        pc_progress_thread_release(p);
        p->ops->teardown(p); /* the failed set-up's half-built state (collective, as the set-up was) */
        p->alg = NULL;
        agreed->model = &decided->model;
        struct pc_decide_result again;
        err = decide(p, agreed, unfit, nunfit, &again);
        if (err == PLANCOLL_ERR_NOMEM) break; /* no candidate left */
        *decided = again;
        if (!err) err = instantiate(p, decided, agreed->progress_thread);
    }
    p->unfit_count = nunfit;
    if (err == PLANCOLL_ERR_NOMEM) return pc_error(PLANCOLL_ERR_NOMEM, "%s", first_detail);
    return err;
}

static int plan_finish(struct plancoll_plan_s *p, int local, plancoll_plan *out)
{
    struct agreement agreed;
    struct pc_decide_result decided;
    int err = agree(p, local, &agreed);
    if (!err) err = decide(p, &agreed, NULL, 0, &decided);
    if (!err) {
        err = instantiate(p, &decided, agreed.progress_thread);
        /* only the chosen candidate's set-up: a NOMEM of the decision itself (calibration's window, every timed
         * finalist) has no candidate to set aside */
        if (err == PLANCOLL_ERR_NOMEM) err = choose_again(p, &agreed, &decided);
    }
    if (err) {
        pc_progress_thread_release(p);
        pc_plan_free(p);
        return err;
    }
    remember(p, &decided.decision);
    *out = pc_plan_handle(p);
    return PLANCOLL_SUCCESS;
}

int plancoll_plan_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                           MPI_Datatype recvtype, MPI_Comm comm, unsigned flags, plancoll_plan *plan)
{
    struct plancoll_plan_s *p;
    int err = pc_plan_begin(comm, flags, PC_ALLTOALL, plan, &p);
    if (err) return err;
    return plan_finish(p, pc_fill_alltoall(p, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype), plan);
}

int plancoll_plan_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                            void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, unsigned flags, plancoll_plan *plan)
{
    struct plancoll_plan_s *p;
    int err = pc_plan_begin(comm, flags, PC_ALLTOALLV, plan, &p);
    if (err) return err;
    return plan_finish(
        p, pc_fill_alltoallv(p, sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype), plan);
}

int plancoll_plan_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                            MPI_Comm comm, unsigned flags, plancoll_plan *plan)
{
    struct plancoll_plan_s *p;
    int err = pc_plan_begin(comm, flags, PC_ALLREDUCE, plan, &p);
    if (err) return err;
    return plan_finish(p, pc_fill_allreduce(p, sendbuf, recvbuf, count, datatype, op), plan);
}
