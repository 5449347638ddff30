/* The planner's MPI hooks: timing a candidate on temporary buffers (the caller's are never touched) and
 * broadcasting rank 0's decision. */
#include "exec/registry.h"
#include "exec/measure.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "base/sizes.h"
#include "shm/layout.h"

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

void pc_measure_release(struct pc_measure_ctx *ctx)
{
    if (ctx->sraw) munmap(ctx->sraw, ctx->sbytes);
    if (ctx->rraw) munmap(ctx->rraw, ctx->rbytes);
    ctx->sraw = ctx->rraw = NULL;
    ctx->sbuf = ctx->rbuf = NULL;
    ctx->allocated = false;
    ctx->alloc_err = PLANCOLL_SUCCESS;
}

/* Every rank learns whether any rank failed (shm/requests.h); returns the local error, or PLANCOLL_ERR_REMOTE. */
int pc_agree_error(struct plancoll_plan_s *p, int err)
{
    return pc_agree_failure(p->layout, err, "another rank failed (see its plancoll_error_detail)");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int measure(void *hook_ctx, const struct pc_candidate *c, int reps, double *us)
{
    struct pc_measure_ctx *ctx = hook_ctx;
    struct plancoll_plan_s *p = ctx->plan;
    if (!ctx->allocated) allocate_trial_buffers(ctx);
    struct plancoll_plan_s trial = *p;
    trial.alg = pc_registry_get(c->alg);
    trial.params = c->params;
    trial.impl = NULL;
    trial.planned_buffers = true;
    int err = ctx->alloc_err;
    trial.sendbuf = p->in_place ? MPI_IN_PLACE : ctx->sbuf;
    trial.recvbuf = ctx->rbuf;
    if (!err) err = trial.alg->setup(&trial);
    err = pc_agree_error(p, err);
    /* reps batches of back-to-back executions, as an application runs them (a plan may overlap the end of one
     * execution with the start of the next); a batch lasts about BATCH_US and starts at a barrier. */
    enum { MAX_BATCHES = 32, MAX_PER_BATCH = 16, BATCH_US = 1000 };
    static double times[MAX_BATCHES * MAX_PER_BATCH], maxima[MAX_BATCHES * MAX_PER_BATCH];
    if (reps > MAX_BATCHES) reps = MAX_BATCHES;
    double warm = 0;
    for (int w = 0; w < 2 && !err; w++) {
        double t0 = MPI_Wtime();
        err = trial.alg->execute(&trial, trial.sendbuf, trial.recvbuf);
        warm = (MPI_Wtime() - t0) * 1e6;
    }
    err = pc_agree_error(p, err);
    double warm_max = warm;
    if (!err) err = pc_allreduce_wait(p->layout, &warm, &warm_max, 1, MPI_DOUBLE, MPI_MAX);
    int per = warm_max > 0 ? (int)(BATCH_US / warm_max) : MAX_PER_BATCH;
    if (per < 1) per = 1;
    if (per > MAX_PER_BATCH) per = MAX_PER_BATCH;
    for (int b = 0; b < reps && !err; b++) {
        err = pc_barrier_wait(p->layout);
        for (int i = 0; i < per && !err; i++) {
            double t0 = MPI_Wtime();
            err = trial.alg->execute(&trial, trial.sendbuf, trial.recvbuf);
            times[b * per + i] = (MPI_Wtime() - t0) * 1e6;
        }
    }
    if (trial.impl || trial.alg->teardown) trial.alg->teardown(&trial);
    if (err) return err;
    int rc = pc_allreduce_wait(p->layout, times, maxima, reps * per, MPI_DOUBLE, MPI_MAX);
    if (rc) return rc;
    /* each batch's mean of the per-execution maxima over ranks, then the median over batches */
    double means[MAX_BATCHES];
    for (int b = 0; b < reps; b++) {
        double sum = 0;
        for (int i = 0; i < per; i++) sum += maxima[b * per + i];
        means[b] = sum / per;
    }
    qsort(means, (size_t)reps, sizeof(double), cmp_double);
    *us = means[reps / 2];
    return PLANCOLL_SUCCESS;
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
    hooks->measure = measure;
    hooks->bcast_int = bcast_int;
}
