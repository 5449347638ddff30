/* The public API: plan creation (validate, agree across ranks, plan, set up), execution, destruction and
 * printing. */
#include "api/handles.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/validate.h"
#include "api/wisdom_io.h"
#include "base/phase_times.h"
#include "exec/calibrate.h"
#include "exec/measure.h"
#include "planner/planner.h"
#include "shm/layout.h"
#include "shm/wait.h"
#include "transpose/transpose.h"

const char *plancoll_version(int *major, int *minor, int *patch)
{
    if (major) *major = PLANCOLL_VERSION_MAJOR;
    if (minor) *minor = PLANCOLL_VERSION_MINOR;
    if (patch) *patch = PLANCOLL_VERSION_PATCH;
    return PLANCOLL_VERSION_STRING;
}

/* ---- live plans ----------------------------------------------------------------------------------
 * A handle is not the plan's address but a number never given out twice in the process (cast to the handle
 * type): a destroyed plan's handle, or a copy of it, stays invalid even when a new plan is allocated at the same
 * address (glibc with its thread cache off does that at once), and a handle that was never a plan is refused
 * without being dereferenced. Lookup is an open-addressing hash table (linear probing, at most half full): one
 * multiplication and nearly always one probe on the execute path. */
struct live_slot {
    uint64_t id; /* 0: empty */
    struct plancoll_plan_s *plan;
};
static struct live_slot *live;
static size_t live_cap, nlive; /* live_cap is 0 or a power of two */
static uint64_t last_id;

static size_t live_home(uint64_t id) { return (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (live_cap - 1); }

static void live_put(struct live_slot *slots, size_t cap, uint64_t id, struct plancoll_plan_s *p)
{
    size_t at = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
    while (slots[at].id) at = (at + 1) & (cap - 1);
    slots[at] = (struct live_slot){id, p};
}

static struct plancoll_plan_s *live_find(plancoll_plan handle, size_t *slot)
{
    uint64_t id = (uint64_t)(uintptr_t)handle;
    if (!id || !live_cap) return NULL;
    for (size_t at = live_home(id);; at = (at + 1) & (live_cap - 1)) {
        if (!live[at].id) return NULL;
        if (live[at].id == id) {
            if (slot) *slot = at;
            return live[at].plan;
        }
    }
}

int pc_plan_register(struct plancoll_plan_s *p)
{
    if (2 * (nlive + 1) > live_cap) {
        size_t cap = live_cap ? 2 * live_cap : 64;
        struct live_slot *grown = calloc(cap, sizeof *grown);
        if (!grown) return pc_error(PLANCOLL_ERR_NOMEM, "plan registry");
        for (size_t i = 0; i < live_cap; i++)
            if (live[i].id) live_put(grown, cap, live[i].id, live[i].plan);
        free(live);
        live = grown;
        live_cap = cap;
    }
    p->id = ++last_id;
    if ((uint64_t)(uintptr_t)p->id != p->id) return pc_error(PLANCOLL_ERR_OVERFLOW, "plan handles exhausted");
    live_put(live, live_cap, p->id, p);
    nlive++;
    return PLANCOLL_SUCCESS;
}

/* Backward-shift deletion: the entries after the hole that would not be found past it move into it. */
static void live_remove(size_t hole)
{
    for (size_t j = (hole + 1) & (live_cap - 1); live[j].id; j = (j + 1) & (live_cap - 1)) {
        size_t home = live_home(live[j].id);
        bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        live[hole] = live[j];
        hole = j;
    }
    live[hole] = (struct live_slot){0, NULL};
    if (--nlive == 0) {
        free(live);
        live = NULL;
        live_cap = 0;
    }
}

plancoll_plan pc_plan_handle(const struct plancoll_plan_s *p) { return (plancoll_plan)(uintptr_t)p->id; }

struct plancoll_plan_s *pc_plan_lookup(plancoll_plan handle) { return live_find(handle, NULL); }

/* The live plan behind a handle, or NULL with the error set in *err. */
static struct plancoll_plan_s *check_plan(plancoll_plan handle, int *err)
{
    struct plancoll_plan_s *p = NULL;
    if (!handle) *err = pc_error(PLANCOLL_ERR_NULL_PLAN, "the plan is NULL");
    else if (!(p = live_find(handle, NULL)))
        *err = pc_error(PLANCOLL_ERR_INVALID_PLAN, "the handle is not a live plan (destroyed already, or never a plan)");
    else
        *err = PLANCOLL_SUCCESS;
    return p;
}

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
    p->rank = p->layout->rank;
    p->size = p->layout->size;
    p->flags = flags;
    p->prob.coll = coll;
    p->prob.flags = flags;
    p->prob.type_id = p->prob.op_id = -1;
    p->stype.type = p->rtype.type = MPI_DATATYPE_NULL;
    pc_layout_shape(p->layout, &p->prob.shape);
    *pp = p;
    return PLANCOLL_SUCCESS;
}

/* alltoallv: the bytes i sends j must be the bytes j expects from i; and a hash of the whole pattern. */
static int alltoallv_agree(struct plancoll_plan_s *p)
{
    const int P = p->size;
    uint64_t *sent = malloc(sizeof(uint64_t) * 2 * (size_t)P);
    if (!sent) return pc_agree_error(p, pc_error(PLANCOLL_ERR_NOMEM, "count check"));
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
    uint64_t offnode = 0;
    for (int j = 0; j < P; j++)
        if (p->layout->node_of[j] != p->layout->node_id) offnode += sent[j];
    free(sent);
    /* One MAX reduction: did any rank see a mismatch, and the maxima the estimates use (problem.h): the slowest
     * rank sets the time, every rank's estimates come out identical (so every rank picks the same candidate), and
     * algorithms learn the largest block of the whole matrix (alltoallv.padded_bruck) without a collective of
     * their own. */
    uint64_t mine[6] = {bad >= 0, p->prob.send_total_bytes, p->prob.recv_total_bytes, offnode,
                        (uint64_t)p->prob.nonzero_sends, p->prob.max_block_bytes}, all[6];
    int rc2 = pc_allreduce_wait(p->layout, mine, all, 6, MPI_UINT64_T, MPI_MAX);
    if (rc2) return rc2;
    if (err) return err;
    if (all[0]) return pc_error(PLANCOLL_ERR_MISMATCH, "the ranks' send and receive counts disagree (another rank saw it)");
    p->prob.max_send_bytes = all[1];
    p->prob.max_recv_bytes = all[2];
    p->prob.max_offnode_bytes = all[3];
    p->prob.max_nonzero_sends = (int)all[4];
    p->prob.max_block_bytes = all[5];
    return pc_allreduce_wait(p->layout, &row, &p->prob.pattern_hash, 1, MPI_UINT64_T, MPI_BXOR);
}

/* Wisdom counts only when every rank holds the same entry (it may come from another communicator). */
static const struct pc_wisdom_entry *agreed_wisdom(struct plancoll_plan_s *p, const char *key, int *err)
{
    *err = PLANCOLL_SUCCESS;
    const struct pc_wisdom_entry *e = pc_wisdom_lookup(key, p->flags);
    uint64_t h = 0;
    if (e) {
        h = pc_hash_bytes(PC_HASH_SEED, e->algorithm, strlen(e->algorithm));
        h = pc_hash_bytes(h, &e->params, sizeof e->params);
        if (h == 0) h = 1;
    }
    uint64_t v[2] = {h, ~h}, m[2];
    *err = pc_allreduce_wait(p->layout, v, m, 2, MPI_UINT64_T, MPI_MAX);
    if (*err) return NULL;
    if (!e || m[0] != h || m[1] != ~h) return NULL;
    return e;
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

static int plan_finish(struct plancoll_plan_s *p, int local, plancoll_plan *out)
{
    double t_agree = pc_phase_start();
    struct pc_forced allowed[PC_MAX_CANDIDATES];
    int nallowed = 0;
    const char *forced_text = getenv("PLANCOLL_ALGORITHM");
    if (!local) local = pc_check_flags(p->flags);
    if (!local) local = pc_parse_forced(forced_text, p->prob.coll, allowed, PC_MAX_CANDIDATES, &nallowed);
    if (!local && pc_wait_mode_from_env() < 0)
        local = pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_WAIT='%s': use spin, yield or auto", getenv("PLANCOLL_WAIT"));

    bool calibrate = true;
    if (!local) local = calibration_setting(&calibrate);

    /* One allreduce tells every rank whether any rank failed and whether all passed the same call (the
     * calibration setting included: calibration is collective, a rank without it would leave the others waiting). */
    uint64_t env_hash = forced_text ? pc_hash_bytes(PC_HASH_SEED, forced_text, strlen(forced_text)) : 0;
    if (!calibrate) env_hash ^= UINT64_C(0x63616c6962726174); /* "calibrat" */
    uint64_t h = local ? 0 : pc_problem_agreement_hash(&p->prob, env_hash);
    /* The same call also tells whether every rank holds the same machine model for this shape, and (v[6])
     * whether some rank has PLANCOLL_WISDOM still to read (wisdom_io.c), which every rank must then join. */
    char shape[64];
    pc_model_shape_key(&p->prob.shape, shape, sizeof shape);
    const struct pc_machine_model *known = pc_model_lookup(shape);
    uint64_t mh = known ? model_hash(known) : 0;
    uint64_t v[8] = {local ? 1u : 0u, h, ~h, p->prob.contiguous ? 0u : 1u, mh, ~mh, pc_wisdom_env_pending() ? 1u : 0u,
                     p->prob.mpi_op_differs ? 1u : 0u}, m[8];
    int rc = pc_allreduce_wait(p->layout, v, m, 8, MPI_UINT64_T, MPI_MAX);
    bool model_agreed = known && m[4] == mh && m[5] == ~mh;
    int err = local;
    if (!err && rc) err = rc;
    if (!err && m[0]) err = pc_error(PLANCOLL_ERR_REMOTE, "another rank's arguments were invalid (see that rank's plancoll_error_detail)");
    if (!err && (m[1] != h || m[2] != ~h))
        err = pc_error(PLANCOLL_ERR_MISMATCH,
                       "ranks passed different %s arguments (sizes, counts, datatype, op, flags, PLANCOLL_ALGORITHM or PLANCOLL_CALIBRATE)",
                       pc_collective_name(p->prob.coll));
    /* Applicability must not differ between ranks: contiguity counts only if every rank's types are dense. */
    p->prob.contiguous = m[3] == 0;
    /* ... and MPI's op counts as plancoll's only if it is on every rank (v[7], reduce.c) */
    p->prob.mpi_op_differs = m[7] != 0;
    if (!err && p->prob.coll == PC_ALLTOALLV) err = alltoallv_agree(p);
    if (err) {
        pc_plan_free(p);
        return err;
    }
    if (m[6]) {
        /* The file may carry this shape's model: agree on it afresh. */
        pc_wisdom_env_load(p->layout);
        known = pc_model_lookup(shape);
        mh = known ? model_hash(known) : 0;
        uint64_t w[2] = {mh, ~mh}, wm[2];
        err = pc_allreduce_wait(p->layout, w, wm, 2, MPI_UINT64_T, MPI_MAX);
        if (err) {
            pc_plan_free(p);
            return err;
        }
        model_agreed = known && wm[0] == mh && wm[1] == ~mh;
    }

    pc_phase_add(PC_PHASE_AGREE, t_agree);
    double t_choose = pc_phase_start();
    char key[160];
    pc_problem_key(&p->prob, key, sizeof key);
    struct pc_machine_model model;
    if (model_agreed) model = *known;
    else pc_default_model(&model);
    struct pc_candidate cands[PC_MAX_CANDIDATES];
    int ncands = 0;
    err = nallowed ? pc_enumerate_forced(&p->prob, allowed, nallowed, &model, cands, PC_MAX_CANDIDATES, &ncands)
                   : pc_enumerate(&p->prob, NULL, 0, &model, cands, PC_MAX_CANDIDATES, &ncands);
    struct pc_decision d;
    memset(&d, 0, sizeof d);
    const struct pc_wisdom_entry *w = NULL;
    bool consult = !err && nallowed == 0 &&
                   (p->flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE | PLANCOLL_WISDOM_ONLY));
    if (consult) w = agreed_wisdom(p, key, &err);
    if (!err && w) {
        for (int i = 0; i < ncands && !d.how; i++)
            if (strcmp(pc_registry_get(cands[i].alg)->name, w->algorithm) == 0 &&
                memcmp(&cands[i].params, &w->params, sizeof w->params) == 0) {
                d.chosen = cands[i];
                d.chosen.measured_us = w->measured_us;
                d.ncandidates = ncands;
                d.how = "wisdom";
            }
    }
    if (!err && !d.how && (p->flags & PLANCOLL_WISDOM_ONLY))
        err = pc_error(PLANCOLL_ERR_NO_WISDOM, "no wisdom for %s", key);
    if (!err && !d.how && ncands > 1 && !model_agreed && calibrate) {
        /* The candidates must be ranked and this shape has no agreed model yet: calibrate (collective; every
         * rank reached this branch from agreed facts), remember, and rank again. */
        double t_cal = pc_phase_start();
        err = pc_calibrate(p->layout, &model);
        pc_phase_add(PC_PHASE_CALIBRATE, t_cal);
        t_choose += pc_phase_now() - t_cal; /* calibration is not part of the choice */
        if (!err) {
            snprintf(model.shape, sizeof model.shape, "%s", shape);
            pc_model_remember(&model);
            err = nallowed ? pc_enumerate_forced(&p->prob, allowed, nallowed, &model, cands, PC_MAX_CANDIDATES, &ncands)
                           : pc_enumerate(&p->prob, NULL, 0, &model, cands, PC_MAX_CANDIDATES, &ncands);
        }
    }
    p->model_calibrated = model.calibrated;
    if (!err && !d.how) {
        struct pc_planner_hooks hooks;
        struct pc_measure_ctx trial;
        pc_measure_hooks(&trial, p, &hooks);
        const char *verbose = getenv("PLANCOLL_VERBOSE");
        FILE *vout = (verbose && strcmp(verbose, "0") != 0 && p->rank == 0) ? stderr : NULL;
        err = pc_choose(&p->prob, cands, ncands, nallowed > 0, &hooks, vout, &d);
        pc_measure_release(&trial); /* before the chosen plan's set-up allocates its own memory */
    }
    pc_phase_add(PC_PHASE_CHOOSE, t_choose);
    if (err) {
        pc_plan_free(p);
        return err;
    }

    p->alg = pc_registry_get(d.chosen.alg);
    p->params = d.chosen.params;
    p->chosen_by = d.time_limited ? "measured until the time limit" : d.how;
    p->predicted_us = d.chosen.predicted_us;
    p->measured_us = d.chosen.measured_us;
    p->candidates = d.ncandidates;
    p->runner_up_us = -1;
    p->first_execution_us = -1;
    if (d.has_runner_up) {
        snprintf(p->runner_up, sizeof p->runner_up, "%s", pc_registry_get(d.runner_up.alg)->name);
        p->runner_up_us = d.runner_up.measured_us >= 0 ? d.runner_up.measured_us : d.runner_up.predicted_us;
    }
    double t0 = pc_phase_start();
    err = pc_agree_error(p, p->alg->setup(p));
    p->setup_seconds = pc_phase_now() - t0;
    pc_phase_add(PC_PHASE_SETUP, t0);
    if (!err) err = pc_plan_register(p);
    if (err) {
        pc_plan_free(p);
        return err;
    }
    if (d.chosen.measured_us >= 0 && strcmp(d.how, "measured") == 0) {
        struct pc_wisdom_entry e;
        memset(&e, 0, sizeof e);
        snprintf(e.key, sizeof e.key, "%s", key);
        snprintf(e.algorithm, sizeof e.algorithm, "%s", p->alg->name);
        e.params = p->params;
        e.measured_us = d.chosen.measured_us;
        e.rigor = p->flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
        e.decided_at = (long long)time(NULL);
        if (d.has_runner_up && d.runner_up.measured_us >= 0) {
            snprintf(e.runner_up, sizeof e.runner_up, "%s", pc_registry_get(d.runner_up.alg)->name);
            e.runner_up_us = d.runner_up.measured_us;
        }
        pc_wisdom_store(&e); /* best effort: a full store only costs a re-measure later */
    }
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

/* ---- execution ---- */
/* Runs one execution; the first is timed, for the set-up cost in executions that fprint_plan reports. */
static int run(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    double t0 = plan->executions == 0 ? MPI_Wtime() : 0;
    int err = plan->alg->execute(plan, sendbuf, recvbuf);
    if (plan->executions++ == 0) plan->first_execution_us = (MPI_Wtime() - t0) * 1e6;
    return err;
}

int plancoll_execute(plancoll_plan handle)
{
    int err;
    struct plancoll_plan_s *plan = check_plan(handle, &err);
    if (err) return err;
    plan->planned_buffers = true;
    return run(plan, plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->recvbuf);
}

int plancoll_execute_buffers(plancoll_plan handle, const void *sendbuf, void *recvbuf)
{
    int err;
    struct plancoll_plan_s *plan = check_plan(handle, &err);
    if (!err)
        err = plan->transpose ? pc_transpose_check_buffers(plan, sendbuf, recvbuf)
                              : pc_check_exec_buffers(plan, sendbuf, recvbuf);
    if (err) return err;
    plan->planned_buffers = false;
    return run(plan, sendbuf, recvbuf);
}

int plancoll_destroy_plan(plancoll_plan *plan)
{
    if (!plan) return pc_error(PLANCOLL_ERR_NULL_PLAN, "the pointer to the plan is NULL");
    int err;
    size_t slot = 0;
    struct plancoll_plan_s *p = check_plan(*plan, &err);
    if (err) return err;
    live_find(*plan, &slot);
    live_remove(slot);
    pc_plan_free(p);
    *plan = NULL;
    return PLANCOLL_SUCCESS;
}

const char *plancoll_plan_algorithm(plancoll_plan handle)
{
    const struct plancoll_plan_s *plan = live_find(handle, NULL);
    if (!plan) return NULL;
    if (plan->transpose) return pc_transpose_name(plan);
    return plan->alg->name;
}

int plancoll_plan_spec(plancoll_plan handle, char *buf, size_t len)
{
    pc_clear_error();
    if (!buf || len == 0) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "plancoll_plan_spec: no buffer");
    if (!handle) return pc_error(PLANCOLL_ERR_NULL_PLAN, "plancoll_plan_spec: NULL plan");
    const struct plancoll_plan_s *plan = live_find(handle, NULL);
    if (!plan) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: not a live plan");
    const struct plancoll_plan_s *inner = plan->transpose ? pc_transpose_inner(plan) : plan;
    if (!inner || !inner->alg) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: transpose without an exchange");
    int n = pc_spec_format(pc_registry_find(inner->alg->name), &inner->params, buf, len);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return pc_error(PLANCOLL_ERR_OVERFLOW, "plancoll_plan_spec: %d bytes needed", n + 1);
    }
    return PLANCOLL_SUCCESS;
}

const char *plancoll_algorithm_name(int index, const char **collective)
{
    const struct pc_algorithm *a = pc_registry_get(index);
    if (!a) return NULL;
    if (collective) *collective = pc_collective_name(a->collective);
    return a->name;
}

int plancoll_fprint_plan(plancoll_plan handle, FILE *out)
{
    int err;
    const struct plancoll_plan_s *plan = check_plan(handle, &err);
    if (err) return err;
    if (!out) return pc_error(PLANCOLL_ERR_ARGUMENT, "the output stream is NULL");
    if (plan->transpose) {
        pc_transpose_fprint(plan, out);
        return PLANCOLL_SUCCESS;
    }
    char key[160], params[96];
    pc_problem_key(&plan->prob, key, sizeof key);
    pc_params_format(&plan->params, plan->alg->params, params, sizeof params);
    const struct pc_layout *L = plan->layout;
    fprintf(out, "plancoll plan %s\n", key);
    fprintf(out, "  algorithm   %s%s%s%s\n", plan->alg->name, params[0] ? " (" : "", params, params[0] ? ")" : "");
    fprintf(out, "  chosen by   %s among %d candidate%s\n", plan->chosen_by, plan->candidates,
            plan->candidates == 1 ? "" : "s");
    fprintf(out, "  predicted   %.2f us (%s model)\n", plan->predicted_us, plan->model_calibrated ? "calibrated" : "default");
    pc_model_fprint_marks(out, &plan->prob.shape);
    if (plan->measured_us >= 0)
        fprintf(out, "  measured    %.2f us (median of per-execution maxima over ranks)\n", plan->measured_us);
    else
        fprintf(out, "  measured    not timed (PLANCOLL_MEASURE times candidates)\n");
    if (plan->runner_up[0]) fprintf(out, "  runner-up   %s, %.2f us\n", plan->runner_up, plan->runner_up_us);
    /* The set-up in executions ([PlannedA2AV] found about 4): against the planner's measurement when there is one (a
     * median of maxima over ranks), else this rank's first execution, else the model's prediction. */
    const char *per_what = "measured";
    double per_exec = plan->measured_us;
    if (per_exec <= 0 && plan->first_execution_us > 0) {
        per_exec = plan->first_execution_us;
        per_what = "first execution";
    }
    if (per_exec <= 0) {
        per_exec = plan->predicted_us;
        per_what = "predicted";
    }
    fprintf(out, "  set-up      %.4g ms", plan->setup_seconds * 1e3);
    if (per_exec > 0)
        fprintf(out, " = %.3g executions (of %.3g us, %s)", plan->setup_seconds * 1e6 / per_exec, per_exec, per_what);
    fputc('\n', out);
    fprintf(out, "  layout      %d ranks on %d node%s (%d-%d per node), %d NUMA domain%s (%s), %s waits\n", L->size,
            L->nnodes, L->nnodes == 1 ? "" : "s", plan->prob.shape.min_ppn, plan->prob.shape.max_ppn, L->num_numa,
            L->num_numa == 1 ? "" : "s", L->numa_from_binding ? "from binding" : "dealt by rank",
            L->wait_mode == PC_WAIT_SPIN ? "spinning" : L->wait_mode == PC_WAIT_YIELD ? "yielding"
                                        : L->oversubscribed ? "yielding (oversubscribed)" : "spin-then-yield");
    fprintf(out, "  in place    %s\n", plan->in_place ? "yes" : "no");
    fprintf(out, "  executions  %llu\n", plan->executions);
    return PLANCOLL_SUCCESS;
}
