/* The native candidates' persistent or nonblocking request (native_request.h). */
#include "exec/native_request.h"

#include <stdlib.h>

int pc_native_setup(struct plancoll_plan_s *plan, pc_native_init_fn init, pc_native_post_fn post)
{
    struct pc_native *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "native state");
    st->persistent = st->once = MPI_REQUEST_NULL;
    st->post = post;
    plan->impl = st;
    return init ? init(plan, &st->persistent) : PLANCOLL_SUCCESS;
}

void pc_native_teardown(struct plancoll_plan_s *plan)
{
    struct pc_native *st = plan->impl;
    if (st && st->persistent != MPI_REQUEST_NULL) MPI_Request_free(&st->persistent);
    free(st);
    plan->impl = NULL;
}

/* The one step: the persistent request started, or the nonblocking collective posted. */
static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    (void)step;
    struct pc_native *st = plan->impl;
    if (plan->planned_buffers && st->persistent != MPI_REQUEST_NULL) {
        PC_MPI_CHECK(MPI_Start(&st->persistent));
        s->reqs = &st->persistent;
    } else {
        int err = st->post(plan, plan->run_sendbuf, plan->run_recvbuf, &st->once);
        if (err) return err;
        s->reqs = &st->once;
    }
    s->nreq = 1;
    return PLANCOLL_SUCCESS;
}

int pc_native_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pc_native *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_steps_begin(&st->steps, 1);
    /* posted here (MPI_Start is local), so that MPI's schedule runs from the start on; tested by advance */
    st->steps.posted = true;
    return post(plan, &st->steps, 0);
}

int pc_native_advance(struct plancoll_plan_s *plan, bool *done, pc_step_finish_fn finish)
{
    struct pc_native *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, finish, done);
}
