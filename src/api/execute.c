/* The public API's execution and destruction of a plan, of any kind. */
#include "api/handles.h"
#include "api/validate.h"
#include "transpose/transpose.h"

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
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    plan->planned_buffers = true;
    return run(plan, plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->recvbuf);
}

int plancoll_execute_buffers(plancoll_plan handle, const void *sendbuf, void *recvbuf)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
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
    struct plancoll_plan_s *p = pc_plan_check(*plan, &err);
    if (err) return err;
    pc_plan_unregister(p);
    pc_plan_free(p);
    *plan = NULL;
    return PLANCOLL_SUCCESS;
}
