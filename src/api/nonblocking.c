/* Nonblocking plans (plancoll_start, _start_buffers, _test, _wait, _waitall): MPI's persistent-request semantics.
 *
 * A started plan is active until a test or wait reports it complete. The process keeps its active plans in one
 * list, in start order, and every plancoll call advances all of them: start, test and wait here, and every wait of
 * the library through the progress hook its wait loops call at each pause (shm/wait.h), so a rank blocked in
 * plancoll_execute of one plan, in a plan's creation or in a wait still moves the plans it started before (MPI's
 * progress rule: another rank may need their messages to reach the collective this rank waits in). An advance
 * only tests requests and posts the next step, so nothing here ever blocks, and start waits for no other rank.
 * An execution that ended with an error is complete: test or wait returns the error (and its detail). */
#include "api/nonblocking.h"

#include <stdio.h>

#include "api/handles.h"
#include "shm/layout.h"
#include "shm/wait.h"

static struct plancoll_plan_s *active_head, *active_tail;
static bool progressing;

static void link_active(struct plancoll_plan_s *p)
{
    p->active = true;
    p->active_done = false;
    p->active_err = PLANCOLL_SUCCESS;
    p->active_detail[0] = '\0';
    p->active_next = NULL;
    p->active_prev = active_tail;
    if (active_tail) active_tail->active_next = p;
    else active_head = p;
    active_tail = p;
}

static void unlink_active(struct plancoll_plan_s *p)
{
    if (p->active_prev) p->active_prev->active_next = p->active_next;
    else active_head = p->active_next;
    if (p->active_next) p->active_next->active_prev = p->active_prev;
    else active_tail = p->active_prev;
    p->active_prev = p->active_next = NULL;
    p->active = p->active_done = false;
}

/* One advance of p; an error ends its execution (kept, with its detail, for its test or wait). */
static void advance_one(struct plancoll_plan_s *p)
{
    bool done = false;
    int err = p->ops->advance(p, &done);
    if (err) {
        p->active_err = err;
        snprintf(p->active_detail, sizeof p->active_detail, "%s", plancoll_error_detail());
        done = true;
    }
    p->active_done = done;
}

void pc_progress_active(void)
{
    if (progressing || !active_head) return;
    progressing = true; /* an advance's own calls may pause (a copy through MPI): no reentry */
    for (struct plancoll_plan_s *p = active_head; p; p = p->active_next)
        if (!p->active_done) advance_one(p);
    progressing = false;
}

int pc_refuse_active(const struct plancoll_plan_s *plan, const char *what)
{
    if (!plan->active) return PLANCOLL_SUCCESS;
    return pc_error(PLANCOLL_ERR_ACTIVE,
                    "%s: the plan is active (started, not yet completed by plancoll_test or plancoll_wait); it is "
                    "left as it was",
                    what);
}

/* Completes an active plan whose execution is done: the plan becomes inactive, its outcome is returned. */
static int complete(struct plancoll_plan_s *p)
{
    int err = p->active_err;
    if (err) pc_error(err, "%s", p->active_detail);
    unlink_active(p);
    return err;
}

static int start(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    int err = pc_refuse_active(plan, "plancoll_start");
    if (err) return err;
    if (!plan->ops->start || !plan->ops->advance)
        return pc_error(PLANCOLL_ERR_NOT_STARTABLE, "%s plans cannot be started yet: execute them",
                        plan->ops->name(plan));
    if (!pc_progress_hook) pc_progress_hook = pc_progress_active;
    plan->run_sendbuf = sendbuf;
    plan->run_recvbuf = recvbuf;
    if ((err = plan->ops->start(plan, sendbuf, recvbuf))) return err;
    plan->executions++;
    link_active(plan);
    pc_progress_active(); /* moves this plan's first step and every earlier one's */
    return PLANCOLL_SUCCESS;
}

int plancoll_start(plancoll_plan handle)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    plan->planned_buffers = true;
    return start(plan, plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->recvbuf);
}

int plancoll_start_buffers(plancoll_plan handle, const void *sendbuf, void *recvbuf)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (!err) err = pc_refuse_active(plan, "plancoll_start_buffers");
    if (!err) err = plan->ops->check_buffers(plan, sendbuf, recvbuf);
    if (err) return err;
    plan->planned_buffers = false;
    return start(plan, sendbuf, recvbuf);
}

int plancoll_test(plancoll_plan handle, int *done)
{
    if (!done) return pc_error(PLANCOLL_ERR_ARGUMENT, "plancoll_test: done is NULL");
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    pc_progress_active();
    *done = !plan->active || plan->active_done;
    return plan->active && plan->active_done ? complete(plan) : PLANCOLL_SUCCESS;
}

/* Waits for an active plan's execution to be done, advancing every active plan meanwhile. */
static void wait_done(struct plancoll_plan_s *plan)
{
    pc_progress_active();
    if (plan->active_done) return;
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    while (!plan->active_done) pc_waiter_pause(&w); /* each pause advances the active plans (the hook) */
}

int plancoll_wait(plancoll_plan handle)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    if (!plan->active) return PLANCOLL_SUCCESS;
    wait_done(plan);
    return complete(plan);
}

int plancoll_waitall(int n, plancoll_plan plans[])
{
    if (n < 0) return pc_error(PLANCOLL_ERR_COUNT, "plancoll_waitall: n = %d", n);
    if (n > 0 && !plans) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "plancoll_waitall: plans is NULL");
    for (int i = 0; i < n; i++) { /* every handle checked before any wait */
        int err;
        if (plans[i] && !pc_plan_check(plans[i], &err))
            return pc_error(err, "plancoll_waitall: plans[%d] is not a live plan", i);
    }
    int first_err = PLANCOLL_SUCCESS;
    char detail[sizeof ((struct plancoll_plan_s *)0)->active_detail] = "";
    for (int i = 0; i < n; i++) {
        struct plancoll_plan_s *plan = plans[i] ? pc_plan_lookup(plans[i]) : NULL;
        if (!plan || !plan->active) continue;
        wait_done(plan);
        int err = complete(plan);
        if (err && !first_err) {
            first_err = err;
            snprintf(detail, sizeof detail, "plans[%d]: %s", i, plancoll_error_detail());
        }
    }
    return first_err ? pc_error(first_err, "%s", detail) : PLANCOLL_SUCCESS;
}
