/* The planner's MPI hooks: timing a candidate on temporary buffers (the caller's are never touched) and
 * broadcasting rank 0's decision. */
#include "exec/registry.h"
#include "exec/measure.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/sizes.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#include "shm/wait.h"

/* The bytes [*lo, *hi) that the plan's buffer on one side touches, relative to its address (sizes.h): the union of
 * every block's span. The plan's validation checked that every offset stays within 2^60 bytes. */
static void side_span(const struct plancoll_plan_s *p, bool send, int64_t *lo, int64_t *hi)
{
    const struct pc_typeinfo *t = send ? &p->stype : &p->rtype;
    *lo = *hi = 0;
    bool any = false;
    int64_t a, b;
    switch (p->prob.coll) {
    case PC_ALLTOALL:
        /* P blocks of count elements side by side, in 64 bits: count P exceeds INT_MAX when blocks pass 1 GiB */
        any = pc_type_span(t, 0, (int64_t)p->size * (send ? p->sendcount : p->recvcount), lo, hi) && *hi > *lo;
        break;
    case PC_ALLTOALLV:
        for (int i = 0; i < p->size; i++) {
            int count = send ? p->sendcounts[i] : p->recvcounts[i], displ = send ? p->sdispls[i] : p->rdispls[i];
            if (count == 0 || !pc_type_span(t, displ, count, &a, &b)) continue;
            if (!any || a < *lo) *lo = a;
            if (!any || b > *hi) *hi = b;
            any = true;
        }
        break;
    case PC_ALLREDUCE: any = pc_type_span(&p->rtype, 0, p->count, lo, hi) && *hi > *lo; break;
    default: break;
    }
    if (!any) *lo = *hi = 0;
}

/* A zeroed buffer covering the side's span; *buf is its address as the plan's buffer (element 0). The buffer is
 * fresh anonymous memory, mapped rather than calloc'd: its pages read as zeros and take memory only where written,
 * so the holes of sparse displacements cost nothing whatever the allocator's settings (with glibc's
 * MALLOC_PERTURB_, which meson sets for tests, calloc writes every byte of a large block: a sparse span of 13 GiB
 * became resident and the job was killed). */
static void *alloc_side(const struct plancoll_plan_s *p, bool send, char **buf, size_t *bytes)
{
    int64_t lo, hi;
    side_span(p, send, &lo, &hi);
    if ((uint64_t)(hi - lo) >= SIZE_MAX) return NULL;
    *bytes = hi > lo ? (size_t)(hi - lo) : 1;
    void *raw = mmap(NULL, *bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    *buf = (char *)raw - lo;
    return raw;
}

static void allocate_trial_buffers(struct pc_measure_ctx *ctx)
{
    struct plancoll_plan_s *p = ctx->plan;
    ctx->allocated = true;
    ctx->rraw = alloc_side(p, false, &ctx->rbuf, &ctx->rbytes);
    if (!p->in_place) ctx->sraw = alloc_side(p, true, &ctx->sbuf, &ctx->sbytes);
    if (!ctx->rraw || (!p->in_place && !ctx->sraw))
        ctx->alloc_err = pc_error(PLANCOLL_ERR_NOMEM, "measurement buffers shaped like the plan's");
}

/* Every rank learns whether any rank failed (shm/requests.h); returns the local error, or PLANCOLL_ERR_REMOTE. */
int pc_agree_error(struct plancoll_plan_s *p, int err)
{
    return pc_agree_failure(p->layout, err, "another rank failed (see its plancoll_error_detail)");
}

/* One candidate's trial plan, set up on the measurement buffers and kept while it races. */
struct pc_measure_trial {
    struct plancoll_plan_s plan;
    int per_batch; /* back-to-back executions per batch, the same on every rank */
    int loop;      /* > 0: a plan that runs ahead (pc_algorithm.runs_ahead), timed over loops of this many */
    double *loop_times; /* such a plan's per-execution times in a loop (MAX_LOOP), then their maxima over ranks */
};

int pc_agree_setup(struct plancoll_plan_s *p, int err)
{
    enum { FINE, NO_MEMORY, OTHER };
    uint64_t kind = err == PLANCOLL_ERR_NOMEM ? NO_MEMORY : err ? OTHER : FINE;
    int rc = pc_agree_failure_max(p->layout, err, &kind, 1, NULL, "another rank failed (see its plancoll_error_detail)");
    if (rc == PLANCOLL_SUCCESS || (rc != PLANCOLL_ERR_NOMEM && rc != PLANCOLL_ERR_REMOTE) || kind != NO_MEMORY) return rc;
    if (err == PLANCOLL_ERR_NOMEM) return err; /* the set-up's own detail */
    return pc_error(PLANCOLL_ERR_NOMEM, "another rank had no memory for a trial plan's set-up");
}

static void teardown_trial(struct pc_measure_trial *t)
{
    if (t->plan.alg->teardown) t->plan.alg->teardown(&t->plan);
    free(t->loop_times);
    free(t);
}

enum { MAX_PER_BATCH = PC_AGREE_MAX_VALUES, BATCH_US = 1000 };
/* A plan that runs ahead is timed over a loop of about LOOP_US: its time per execution grows with the loop (the
 * backlog of unexpected messages), so it is judged over a loop as long as plancoll's benchmarks time
 * (bench/plancoll-regret: batches of 20 ms), rather than over a batch short enough to hide the backlog. The
 * loop's length is found by doubling from MAX_PER_BATCH executions until one loop lasts LOOP_US: sized from a
 * short warm-up instead, a loop of a 3 us execution held 6700 executions whose backlog made it last seconds. */
enum { LOOP_US = 20000, MAX_LOOP = 1 << 16 };

/* ---- started executions: start + wait, and OSU's overlapped form (docs/measurement.md) ---- */
#define TEST_INTERVAL_US 5.0 /* compute between two tests of an overlapped execution, as plancoll-bench --overlap */

static volatile double compute_sink;

/* units iterations of a dependent floating-point chain: compute that stays in registers, as the benchmark's.
 * Under SMPI the compute is simulated work instead, a flop a unit at the simulated core's speed: the loop's real
 * time is injected into the simulation only with smpi/simulate-computation (else MPI_Wtime hardly moves and
 * compute_rate would never see 2 ms pass), and then it would carry the host's load into the simulated time. */
static void compute_units(long units)
{
#if PC_MPI_SIMULATED
    smpi_execute_flops((double)units);
    return;
#endif
    double acc = compute_sink;
    for (long i = 0; i < units; i++) acc = acc * 0.9999999 + 1.0;
    compute_sink = acc;
}

/* This rank's compute units per microsecond, from a run of at least 2 ms (the benchmark's method, shorter). */
static double compute_rate(void)
{
    for (long units = 1 << 12;; units *= 2) {
        double t0 = MPI_Wtime();
        compute_units(units);
        double dt = (MPI_Wtime() - t0) * 1e6;
        if (dt >= 2000 || units > (1L << 40)) return dt > 0 ? (double)units / dt : 1.0;
    }
}

/* Drives a started execution to its end with the library's wait policy, as plancoll_wait does. */
static int wait_started(struct plancoll_plan_s *trial)
{
    bool done;
    int err = trial->alg->advance(trial, &done);
    if (err || done) return err;
    struct pc_waiter w;
    pc_waiter_init(&w, trial->layout->wait_mode, trial->layout->oversubscribed);
    for (;;) {
        pc_waiter_pause(&w);
        if ((err = trial->alg->advance(trial, &done)) || done) return err;
    }
}

/* One started execution, timed in microseconds: start, then (overlapped) the compute loop with a test between its
 * chunks, then the wait. */
static int run_started(struct pc_measure_ctx *ctx, struct plancoll_plan_s *trial, bool overlapped, double *us)
{
    double t0 = MPI_Wtime();
    int err = trial->alg->start(trial, trial->sendbuf, trial->recvbuf);
    bool done = false;
    for (long c = 0; overlapped && !err && c < ctx->compute_chunks; c++) {
        compute_units(ctx->chunk_units);
        if (!done) err = trial->alg->advance(trial, &done);
    }
    if (!err && !done) err = wait_started(trial);
    *us = (MPI_Wtime() - t0) * 1e6;
    return err;
}

/* PLANCOLL_OVERLAP, at the first trial: the compute length from 5 executions of that trial (the median of their
 * maxima over ranks; agreed, so every rank computes for the same time), in chunks of TEST_INTERVAL_US. */
static int fix_compute(struct pc_measure_ctx *ctx, struct plancoll_plan_s *trial)
{
    enum { RUNS = 5 };
    uint64_t bits[RUNS] = {0};
    int err = PLANCOLL_SUCCESS;
    for (int i = 0; i < RUNS && !err; i++) {
        double t0 = MPI_Wtime();
        err = pc_collective_plan_ops.execute(trial, trial->sendbuf, trial->recvbuf);
        double took = (MPI_Wtime() - t0) * 1e6;
        if (!(took > 0)) took = 0;
        memcpy(&bits[i], &took, sizeof took);
    }
    err = pc_agree_failure_max(ctx->plan->layout, err, bits, RUNS, NULL,
                               "another rank failed (see its plancoll_error_detail)");
    if (err) return err;
    double t[RUNS];
    for (int i = 0; i < RUNS; i++) memcpy(&t[i], &bits[i], sizeof t[i]);
    for (int i = 1; i < RUNS; i++) /* insertion sort of five */
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
            double x = t[j];
            t[j] = t[j - 1];
            t[j - 1] = x;
        }
    ctx->compute_us = t[RUNS / 2] > 0 ? t[RUNS / 2] : 1.0;
    double rate = compute_rate();
    ctx->chunk_units = (long)(TEST_INTERVAL_US * rate) > 0 ? (long)(TEST_INTERVAL_US * rate) : 1;
    ctx->compute_chunks = (long)(ctx->compute_us / TEST_INTERVAL_US + 0.5);
    if (ctx->compute_chunks < 1) ctx->compute_chunks = 1;
    return PLANCOLL_SUCCESS;
}

/* A plan that runs ahead: one loop of t->loop executions after a barrier, each execution's time kept in
 * t->loop_times; *us receives the loop's time on the slowest rank (the one the backlog lands on), the same on every
 * rank. */
static int run_loop(struct pc_measure_ctx *ctx, struct pc_measure_trial *t, double *us)
{
    struct plancoll_plan_s *p = ctx->plan, *trial = &t->plan;
    int err = pc_barrier_wait(p->layout);
    double t0 = MPI_Wtime(), last = t0;
    for (int i = 0; i < t->loop && !err; i++) {
        err = pc_collective_plan_ops.execute(trial, trial->sendbuf, trial->recvbuf);
        double now = MPI_Wtime();
        t->loop_times[i] = (now - last) * 1e6;
        last = now;
    }
    double took = (MPI_Wtime() - t0) * 1e6;
    uint64_t bits = 0;
    if (took > 0) memcpy(&bits, &took, sizeof took); /* non-negative doubles order as their bits */
    err = pc_agree_failure_max(p->layout, err, &bits, 1, NULL, "another rank failed (see its plancoll_error_detail)");
    if (err) return err;
    memcpy(us, &bits, sizeof bits);
    return PLANCOLL_SUCCESS;
}

/* The batch of a plan that runs ahead: one loop, the mean over its executions of each one's maximum over ranks, the
 * figure every other trial gets (and the benchmarks', docs/measurement.md). The slowest rank's mean per execution
 * taken instead is smaller wherever the ranks' slow executions fall at different places of the loop, as they do
 * when one rank runs ahead: MEASURE then kept MPI's alltoallv on one-way patterns that the benchmark, timing the
 * same 20 ms loops, found 1.3-2.6x slower than the plan it displaced (3 emulated nodes of 2 ranks, 100 B-100 KB). */
static int batch_loop(struct pc_measure_ctx *ctx, struct pc_measure_trial *t, double *us)
{
    double took = 0;
    int err = run_loop(ctx, t, &took);
    if (err) return err;
    double *maxima = t->loop_times + MAX_LOOP;
    if ((err = pc_allreduce_wait(ctx->plan->layout, t->loop_times, maxima, t->loop, MPI_DOUBLE, MPI_MAX))) return err;
    double sum = 0;
    for (int i = 0; i < t->loop; i++) sum += maxima[i];
    us[0] = sum / t->loop;
    return PLANCOLL_SUCCESS;
}

static int prepare(void *hook_ctx, int slot, const struct pc_candidate *c)
{
    struct pc_measure_ctx *ctx = hook_ctx;
    struct plancoll_plan_s *p = ctx->plan;
    if (!ctx->allocated) allocate_trial_buffers(ctx);
    struct pc_measure_trial *t = calloc(1, sizeof *t);
    int err = t ? ctx->alloc_err : pc_error(PLANCOLL_ERR_NOMEM, "a trial plan");
    if (t) {
        t->plan = *p;
        t->plan.alg = pc_registry_get(c->alg);
        t->plan.params = c->params;
        t->plan.impl = NULL;
        t->plan.planned_buffers = true;
        t->plan.sendbuf = p->in_place ? MPI_IN_PLACE : ctx->sbuf;
        t->plan.recvbuf = ctx->rbuf;
        if (!err) err = t->plan.alg->setup(&t->plan);
        if (!err) pc_store_chooser_init(&t->plan);
    }
    err = pc_agree_setup(p, err);
    if (err) {
        if (t) teardown_trial(t); /* a failed set-up is torn down, as for the chosen plan */
        return err;
    }
    /* Two executions to warm up, the slower's time over ranks sizing the batches: each lasts about BATCH_US. */
    double warm = 0;
    for (int w = 0; w < 2 && !err; w++) {
        double t0 = MPI_Wtime();
        err = pc_collective_plan_ops.execute(&t->plan, t->plan.sendbuf, t->plan.recvbuf);
        warm = (MPI_Wtime() - t0) * 1e6;
    }
    err = pc_agree_error(p, err);
    double warm_max = warm;
    if (!err) err = pc_allreduce_wait(p->layout, &warm, &warm_max, 1, MPI_DOUBLE, MPI_MAX);
    if (err) {
        teardown_trial(t);
        return err;
    }
    if ((p->flags & PLANCOLL_OVERLAP) && ctx->compute_us <= 0 && (err = fix_compute(ctx, &t->plan))) {
        teardown_trial(t);
        return err;
    }
    /* an overlapped execution lasts about the compute and its plain twin more: the batch's executions count double */
    if (p->flags & PLANCOLL_OVERLAP) warm_max += ctx->compute_us;
    int per = warm_max > 0 ? (int)(BATCH_US / warm_max) : MAX_PER_BATCH;
    t->per_batch = per < 1 ? 1 : per > MAX_PER_BATCH ? MAX_PER_BATCH : per;
    if (!(p->flags & PLANCOLL_OVERLAP) && t->plan.alg->runs_ahead && t->plan.alg->runs_ahead(&p->prob)) {
        /* every rank takes this branch (the algorithm and the one_way flag are agreed), so the allocation's
         * outcome is agreed here, before the loops' collectives */
        t->loop_times = malloc(sizeof(double) * 2 * MAX_LOOP);
        err = pc_agree_error(p, t->loop_times ? PLANCOLL_SUCCESS
                                              : pc_error(PLANCOLL_ERR_NOMEM, "the per-execution times of a trial loop"));
        double took = 0;
        for (t->loop = MAX_PER_BATCH; !err; t->loop = 2 * t->loop < MAX_LOOP ? 2 * t->loop : MAX_LOOP)
            if ((err = run_loop(ctx, t, &took)) || took >= LOOP_US || t->loop >= MAX_LOOP) break;
        if (err) {
            teardown_trial(t);
            return err;
        }
    }
    ctx->trials[slot] = t;
    return PLANCOLL_SUCCESS;
}

static int batch(void *hook_ctx, int slot, double *us)
{
    struct pc_measure_ctx *ctx = hook_ctx;
    struct plancoll_plan_s *p = ctx->plan;
    struct pc_measure_trial *t = ctx->trials[slot];
    struct plancoll_plan_s *trial = &t->plan;
    int err = PLANCOLL_SUCCESS;
    if (t->loop > 0) return batch_loop(ctx, t, us);
    /* Another trial plan ran just before: one untimed execution brings this one's own memory back into the caches,
     * as an application running it back-to-back would have it. Skipped for executions that fill a batch alone
     * (about 1 ms or more): they stream more than the caches hold anyway, and the extra run would double the cost. */
    if (t->per_batch > 1) err = pc_collective_plan_ops.execute(trial, trial->sendbuf, trial->recvbuf);
    int rc = pc_barrier_wait(p->layout);
    if (!err) err = rc;
    /* Per-execution times travel as the bits of non-negative doubles, which order as the doubles do, so the
     * agreement's one MAX allreduce carries both the failure flag and the maxima over ranks. */
    /* A started plan is also timed started (pc_planner_hooks.batch's us[1]). PLANCOLL_OVERLAP: each execution
     * overlapped (us[0], which decides) and plain (us[1]), alternating. PLANCOLL_NONBLOCKING: executions alternate
     * between execute (us[0]) and start + wait (us[1]), which should match: execute is start + wait (steps.c). */
    const bool overlap = (p->flags & PLANCOLL_OVERLAP) != 0;
    const bool started = (p->flags & PLANCOLL_NONBLOCKING) && trial->alg->start && trial->alg->advance;
    const int runs = overlap ? 2 * t->per_batch : started && t->per_batch < 2 ? 2 : t->per_batch;
    uint64_t bits[2 * MAX_PER_BATCH] = {0};
    for (int i = 0; i < runs && !err; i++) {
        const bool odd = (i & 1) != 0;
        double took = 0;
        if (overlap && !odd) err = run_started(ctx, trial, true, &took);
        else if (!overlap && started && odd) err = run_started(ctx, trial, false, &took);
        else {
            double t0 = MPI_Wtime();
            err = pc_collective_plan_ops.execute(trial, trial->sendbuf, trial->recvbuf);
            took = (MPI_Wtime() - t0) * 1e6;
        }
        if (!(took > 0)) took = 0;
        memcpy(&bits[i], &took, sizeof took);
    }
    /* at most PC_AGREE_MAX_VALUES values per agreement: the second half in a second one */
    int first = runs < MAX_PER_BATCH ? runs : MAX_PER_BATCH;
    err = pc_agree_failure_max(p->layout, err, bits, first, NULL, "another rank failed (see its plancoll_error_detail)");
    if (!err && runs > first)
        err = pc_agree_failure_max(p->layout, err, bits + first, runs - first, NULL,
                                   "another rank failed (see its plancoll_error_detail)");
    if (err) return err;
    double sum[2] = {0, 0};
    int count[2] = {0, 0};
    for (int i = 0; i < runs; i++) {
        double took;
        memcpy(&took, &bits[i], sizeof took);
        int which = (overlap || started) ? (i & 1) : 0;
        sum[which] += took;
        count[which]++;
    }
    us[0] = sum[0] / count[0];
    if (count[1] > 0) us[1] = sum[1] / count[1];
    return PLANCOLL_SUCCESS;
}

static void release(void *hook_ctx, int slot)
{
    struct pc_measure_ctx *ctx = hook_ctx;
    if (!ctx->trials[slot]) return;
    teardown_trial(ctx->trials[slot]);
    ctx->trials[slot] = NULL;
}

void pc_measure_release(struct pc_measure_ctx *ctx)
{
    for (int i = 0; i < PC_MAX_CANDIDATES; i++) release(ctx, i); /* pc_choose released them; in slot order else */
    if (ctx->sraw) munmap(ctx->sraw, ctx->sbytes);
    if (ctx->rraw) munmap(ctx->rraw, ctx->rbytes);
    ctx->sraw = ctx->rraw = NULL;
    ctx->sbuf = ctx->rbuf = NULL;
    ctx->allocated = false;
    ctx->alloc_err = PLANCOLL_SUCCESS;
}

static int bcast_int(void *hook_ctx, int *value)
{
    struct pc_measure_ctx *ctx = hook_ctx;
    return pc_bcast_wait(ctx->plan->layout, value, 1, MPI_INT, 0);
}

void pc_measure_hooks(struct pc_measure_ctx *ctx, struct plancoll_plan_s *p, struct pc_planner_hooks *hooks)
{
    memset(ctx, 0, sizeof *ctx);
    ctx->plan = p;
    hooks->ctx = ctx;
    hooks->prepare = prepare;
    hooks->batch = batch;
    hooks->release = release;
    hooks->bcast_int = bcast_int;
}
