/* The planner's MPI hooks: timing a candidate on temporary buffers (the caller's are never touched) and
 * broadcasting rank 0's decision. */
#include "measure.h"

#include <stdlib.h>
#include <string.h>

#include "../shm/layout.h"

/* Bytes a buffer must span for count elements at displacement displ (in elements) of type t. */
static uint64_t span_end(const struct pc_typeinfo *t, int64_t displ, int count)
{
    if (count <= 0) return 0;
    return (uint64_t)((displ + count - 1) * t->extent + t->true_lb + t->true_extent);
}

/* Allocates a zeroed buffer covering [0, bytes) relative to the user's base address convention. */
static void *alloc_span(uint64_t bytes)
{
    return calloc(bytes ? (size_t)bytes : 1, 1);
}

static int buffer_spans(const struct plancoll_plan_s *p, uint64_t *sbytes, uint64_t *rbytes)
{
    *sbytes = *rbytes = 0;
    switch (p->prob.coll) {
    case PC_ALLTOALL:
        *rbytes = span_end(&p->rtype, 0, p->recvcount * p->size);
        if (!p->in_place) *sbytes = span_end(&p->stype, 0, p->sendcount * p->size);
        break;
    case PC_ALLTOALLV:
        for (int i = 0; i < p->size; i++) {
            uint64_t r = span_end(&p->rtype, p->rdispls[i], p->recvcounts[i]);
            if (r > *rbytes) *rbytes = r;
            if (!p->in_place) {
                uint64_t s = span_end(&p->stype, p->sdispls[i], p->sendcounts[i]);
                if (s > *sbytes) *sbytes = s;
            }
        }
        break;
    case PC_ALLREDUCE:
        *rbytes = span_end(&p->rtype, 0, p->count);
        if (!p->in_place) *sbytes = *rbytes;
        break;
    default: break;
    }
    return PLANCOLL_SUCCESS;
}


/* Every rank learns whether any rank failed; returns the local error, or PLANCOLL_ERR_REMOTE. */
int pc_agree_error(struct plancoll_plan_s *p, int err)
{
    int mine = err != 0, any = 0;
    int rc = pc_allreduce_wait(p->layout, &mine, &any, 1, MPI_INT, MPI_MAX);
    if (err) return err;
    if (rc) return rc;
    if (any) return pc_error(PLANCOLL_ERR_REMOTE, "another rank failed (see its plancoll_error_detail)");
    return PLANCOLL_SUCCESS;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int measure(void *ctx, const struct pc_candidate *c, int reps, double *us)
{
    struct plancoll_plan_s *p = ctx;
    uint64_t sbytes, rbytes;
    buffer_spans(p, &sbytes, &rbytes);
    struct plancoll_plan_s trial = *p;
    trial.alg = pc_registry_get(c->alg);
    trial.params = c->params;
    trial.impl = NULL;
    trial.planned_buffers = true;
    void *sraw = p->in_place ? NULL : alloc_span(sbytes);
    void *rraw = alloc_span(rbytes);
    int err = (!rraw || (!p->in_place && !sraw)) ? pc_error(PLANCOLL_ERR_NOMEM, "measurement buffers") : 0;
    trial.sendbuf = p->in_place ? MPI_IN_PLACE : sraw;
    trial.recvbuf = rraw;
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
    free(sraw);
    free(rraw);
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

static int bcast_int(void *ctx, int *value)
{
    struct plancoll_plan_s *p = ctx;
    return pc_bcast_wait(p->layout, value, 1, MPI_INT, 0);
}

void pc_measure_hooks(struct plancoll_plan_s *p, struct pc_planner_hooks *hooks)
{
    hooks->ctx = p;
    hooks->measure = measure;
    hooks->bcast_int = bcast_int;
}
