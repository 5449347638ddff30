/* The step driver (steps.h). */
#include "exec/steps.h"

#include "shm/layout.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#include "shm/wait.h"

#if PC_MPI_SIMULATED
/* Under SMPI, set while this rank runs a blocking execute (pc_steps_execute, pc_steps_wait): a step's requests are
 * then completed by MPI_Waitall rather than by polling MPI_Test, whose completions SMPI 3.32 leaves in the rank's
 * activity list, slowing every later completion (docs/smpi.md). Blocking is what the wait loop would do anyway
 * when no other plan needs progress (pc_progress_hook), and a blocked simulated rank costs no core. */
static bool blocking_execute;
#endif

int pc_steps_advance(struct plancoll_plan_s *plan, struct pc_steps *s, pc_step_post_fn post, pc_step_finish_fn finish,
                     bool *done)
{
    *done = false;
    for (;;) {
        if (s->posted) {
#if PC_MPI_SIMULATED
            if (blocking_execute && !pc_progress_hook && s->nreq > 0)
                PC_MPI_CHECK(MPI_Waitall(s->nreq, s->reqs, MPI_STATUSES_IGNORE));
#endif
            bool complete;
            int err = pc_test_requests(s->nreq, s->reqs, &complete);
            if (err) return err;
            if (!complete) return PLANCOLL_SUCCESS;
            s->posted = false;
            s->nreq = 0;
            if (finish && (err = finish(plan, s, s->next))) return err;
            s->next++;
        }
        if (s->next >= s->count) {
            *done = true;
            return PLANCOLL_SUCCESS;
        }
        int err = post(plan, s, s->next);
        s->posted = true; /* even on failure: what was posted is tested, not lost */
        if (err) return err;
    }
}

/* Advances with advance_fn until done, pausing with the layout's wait policy in between. */
static int wait_loop_polled(struct plancoll_plan_s *plan, int (*advance_fn)(struct plancoll_plan_s *, void *, bool *),
                            void *arg);
static int wait_loop(struct plancoll_plan_s *plan, int (*advance_fn)(struct plancoll_plan_s *, void *, bool *), void *arg)
{
#if PC_MPI_SIMULATED
    bool outer = blocking_execute;
    blocking_execute = true;
    int err = wait_loop_polled(plan, advance_fn, arg);
    blocking_execute = outer;
    return err;
#else
    return wait_loop_polled(plan, advance_fn, arg);
#endif
}

static int wait_loop_polled(struct plancoll_plan_s *plan, int (*advance_fn)(struct plancoll_plan_s *, void *, bool *),
                            void *arg)
{
    bool done;
    int err = advance_fn(plan, arg, &done);
    if (err || done) return err;
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    for (;;) {
        pc_waiter_pause(&w);
        if ((err = advance_fn(plan, arg, &done)) || done) return err;
    }
}

struct steps_args {
    struct pc_steps *s;
    pc_step_post_fn post;
    pc_step_finish_fn finish;
};

static int advance_steps(struct plancoll_plan_s *plan, void *arg, bool *done)
{
    struct steps_args *a = arg;
    return pc_steps_advance(plan, a->s, a->post, a->finish, done);
}

int pc_steps_wait(struct plancoll_plan_s *plan, struct pc_steps *s, pc_step_post_fn post, pc_step_finish_fn finish)
{
    struct steps_args a = {s, post, finish};
    return wait_loop(plan, advance_steps, &a);
}

static int advance_alg(struct plancoll_plan_s *plan, void *arg, bool *done)
{
    (void)arg;
    return plan->alg->advance(plan, done);
}

int pc_steps_execute(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    int err = plan->alg->start(plan, sendbuf, recvbuf);
    if (err) return err;
    return wait_loop(plan, advance_alg, NULL);
}
