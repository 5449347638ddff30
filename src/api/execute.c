/* The public API's execution and destruction of a plan, of any kind (the plan's ops, exec/plan.h). */
#include "api/handles.h"
#include "api/nonblocking.h"

int plancoll_execute(plancoll_plan handle)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (!err) err = pc_refuse_active(plan, "plancoll_execute");
    if (err) return err;
    pc_progress_active();
    return pc_plan_run_planned(plan);
}

int plancoll_execute_buffers(plancoll_plan handle, const void *sendbuf, void *recvbuf)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (!err) err = pc_refuse_active(plan, "plancoll_execute_buffers");
    if (!err) err = plan->ops->check_buffers(plan, sendbuf, recvbuf);
    if (err) return err;
    pc_progress_active();
    plan->planned_buffers = false;
    return pc_plan_run(plan, sendbuf, recvbuf);
}

int plancoll_destroy_plan(plancoll_plan *plan)
{
    if (!plan) return pc_error(PLANCOLL_ERR_NULL_PLAN, "the pointer to the plan is NULL");
    int err;
    struct plancoll_plan_s *p = pc_plan_check(*plan, &err);
    /* Refused on this rank alone without a hang: a plan that can be started tears down locally (its algorithm's
     * teardown frees memory and requests only). */
    if (!err) err = pc_refuse_active(p, "plancoll_destroy_plan");
    if (err) return err;
    pc_plan_unregister(p);
    pc_progress_thread_release(p);
    pc_plan_free(p);
    *plan = NULL;
    return PLANCOLL_SUCCESS;
}
