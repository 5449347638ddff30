/* One execution as a schedule of steps (struct pc_algorithm's start and advance): each step posts its requests,
 * and when they are complete a finishing action (unpack, reduce, copy) runs and the next step is posted. The
 * driver tests, never waits: pc_steps_advance returns as soon as the current step is still in flight. A blocking
 * execution is the same schedule driven by a waiting loop (pc_steps_execute, pc_steps_wait), so an algorithm has
 * one code path for plancoll_execute and plancoll_start. Internal. */
#ifndef PC_STEPS_H
#define PC_STEPS_H

#include <stddef.h>

#include "exec/plan.h"

#define PC_STEPS_INLINE_REQUESTS 2

/* The position of one execution in its schedule: step next of count, posted or not, and the requests of the step in
 * flight (the inline pair, or an algorithm's own array: reqs points at it). */
struct pc_steps {
    int next, count;
    bool posted;
    int nreq;
    MPI_Request *reqs;
    MPI_Request inline_reqs[PC_STEPS_INLINE_REQUESTS];
};

/* Posts step `step` (its requests go to s->reqs[s->nreq++]; none is fine: the step is then complete at once). */
typedef int (*pc_step_post_fn)(struct plancoll_plan_s *plan, struct pc_steps *s, int step);
/* Runs after step `step`'s requests completed (NULL: nothing to do). */
typedef int (*pc_step_finish_fn)(struct plancoll_plan_s *plan, struct pc_steps *s, int step);

/* The structure of type `type` whose member `member` is the schedule s (a state that holds its schedule). */
#define PC_STEPS_OWNER(s, type, member) ((type *)(void *)((char *)(s) - offsetof(type, member)))

/* Begins a schedule of count steps (nothing posted yet), requests in the inline pair. */
static inline void pc_steps_begin(struct pc_steps *s, int count)
{
    s->next = 0;
    s->count = count;
    s->posted = false;
    s->nreq = 0;
    s->reqs = s->inline_reqs;
}

/* Adds a request slot of the step being posted. */
static inline MPI_Request *pc_steps_slot(struct pc_steps *s) { return &s->reqs[s->nreq++]; }

/* Tests the step in flight; while steps complete, finishes them and posts the next. *done once the last is finished.
 * Never blocks. */
int pc_steps_advance(struct plancoll_plan_s *plan, struct pc_steps *s, pc_step_post_fn post, pc_step_finish_fn finish,
                     bool *done);
/* Drives the schedule to its end with the library's wait policy (each pause also advances the started plans). */
int pc_steps_wait(struct plancoll_plan_s *plan, struct pc_steps *s, pc_step_post_fn post, pc_step_finish_fn finish);

/* An algorithm's execute as its start + a waiting loop over its advance (struct pc_algorithm). */
int pc_steps_execute(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf);

#endif
