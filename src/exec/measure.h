#ifndef PC_MEASURE_H
#define PC_MEASURE_H

#include "exec/plan.h"
#include "planner/planner.h"

/* The planner's timing of candidates on temporary buffers shaped like the plan's (the caller's are never
 * touched). The buffers are allocated at the first candidate set up and shared by every trial plan, so a large
 * problem pays their page faults once; pc_measure_release frees them (and any trial plan still set up). */
struct pc_measure_trial;
struct pc_measure_ctx {
    struct plancoll_plan_s *plan;
    bool allocated;
    int alloc_err;         /* the local outcome of the allocation */
    void *sraw, *rraw;     /* what to unmap, and its length */
    size_t sbytes, rbytes;
    char *sbuf, *rbuf;     /* the buffers' addresses (element 0), sraw/rraw minus their lowest offset */
    struct pc_measure_trial *trials[PC_MAX_CANDIDATES]; /* by slot: the trial plans set up (NULL: none) */
    /* PLANCOLL_OVERLAP: the compute every overlapped execution hides behind, the same for every candidate: the
     * execute time (median of 5, maxima over ranks) of the first trial set up, which the planner makes the
     * candidate of the shortest predicted critical path; 0 until then. compute_chunks chunks of chunk_units. */
    double compute_us;
    long compute_chunks, chunk_units;
};
void pc_measure_hooks(struct pc_measure_ctx *ctx, struct plancoll_plan_s *p, struct pc_planner_hooks *hooks);
void pc_measure_release(struct pc_measure_ctx *ctx);
/* Collective: every rank learns whether any failed. Returns the local error, PLANCOLL_ERR_REMOTE, or success.
 * The plan's name for pc_agree_failure (shm/requests.h) with the generic message. */
int pc_agree_error(struct plancoll_plan_s *p, int err);
/* A set-up's outcome agreed in one allreduce: a failure on any rank fails every rank, and when every failing rank
 * only lacked memory the outcome is PLANCOLL_ERR_NOMEM everywhere, so that every rank takes the planner's fallback
 * together (one trial plan at a time while timing; another candidate for the chosen plan, api/plan.c). */
int pc_agree_setup(struct plancoll_plan_s *p, int err);

#endif
