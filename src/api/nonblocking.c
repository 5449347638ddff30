/* Nonblocking plans (plancoll_start, _start_buffers, _test, _wait, _waitall): MPI's persistent-request semantics.
 *
 * A started plan is active until a test or wait reports it complete. The process keeps its active plans in one
 * list, in start order, and every plancoll call advances all of them: start, test and wait here, and every wait of
 * the library through the progress hook its wait loops call at each pause (shm/wait.h), so a rank blocked in
 * plancoll_execute of one plan, in a plan's creation or in a wait still moves the plans it started before (MPI's
 * progress rule: another rank may need their messages to reach the collective this rank waits in). An advance
 * only tests requests and posts the next step, so nothing here ever blocks, and start waits for no other rank.
 * An execution that ended with an error is complete: test or wait returns the error (and its detail).
 *
 * The optional progress thread (PLANCOLL_PROGRESS_THREAD=1 at a plan's creation) advances the plans created so
 * while the caller computes. It lives while such a plan does: started at the first one's creation, stopped at the
 * last one's destruction or at MPI_Finalize (an attribute of MPI_COMM_SELF, deleted while MPI still works). One
 * mutex guards the active list and every advance, so the caller and the thread never advance the same plan at once
 * and the list never changes under the thread; the caller only tries it (pc_progress_active), since the thread
 * holding it is advancing the plans anyway, so a test still never blocks for long. The mutex is also the guard
 * against reentry: an advance whose own call pauses (a copy through MPI) finds it taken and returns. */
#include "api/nonblocking.h"

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/handles.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h"
#include "shm/wait.h"
#include "transpose/transpose.h"

static struct plancoll_plan_s *active_head, *active_tail;
static pthread_mutex_t active_lock = PTHREAD_MUTEX_INITIALIZER;
static int active_running; /* active plans whose execution is not yet done: changed under the lock, read atomically */

/* A plan's execution is done: written by whichever thread advanced it, read by the caller's test and wait. */
static bool is_done(const struct plancoll_plan_s *p) { return __atomic_load_n(&p->active_done, __ATOMIC_ACQUIRE); }

static void link_active(struct plancoll_plan_s *p)
{
    pthread_mutex_lock(&active_lock);
    p->active = true;
    p->active_done = false;
    p->active_err = PLANCOLL_SUCCESS;
    p->active_detail[0] = '\0';
    p->active_next = NULL;
    p->active_prev = active_tail;
    if (active_tail) active_tail->active_next = p;
    else active_head = p;
    active_tail = p;
    __atomic_store_n(&active_running, active_running + 1, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&active_lock);
}

static void unlink_active(struct plancoll_plan_s *p)
{
    pthread_mutex_lock(&active_lock);
    if (p->active_prev) p->active_prev->active_next = p->active_next;
    else active_head = p->active_next;
    if (p->active_next) p->active_next->active_prev = p->active_prev;
    else active_tail = p->active_prev;
    p->active_prev = p->active_next = NULL;
    p->active = p->active_done = false;
    pthread_mutex_unlock(&active_lock);
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
    if (done) __atomic_store_n(&active_running, active_running - 1, __ATOMIC_RELAXED);
    __atomic_store_n(&p->active_done, done, __ATOMIC_RELEASE);
}

void pc_progress_active(void)
{
    if (!__atomic_load_n(&active_head, __ATOMIC_RELAXED)) return;
    if (pthread_mutex_trylock(&active_lock) != 0) return; /* the thread advances them now, or this is a reentry */
    for (struct plancoll_plan_s *p = active_head; p; p = p->active_next)
        if (!p->active_done) advance_one(p);
    pthread_mutex_unlock(&active_lock);
}

int plancoll_progress(int *pending)
{
    pc_progress_active();
    if (pending) *pending = __atomic_load_n(&active_running, __ATOMIC_RELAXED);
    return PLANCOLL_SUCCESS;
}

/* ---- The progress thread -------------------------------------------------------------------------- */

#define THREAD_IDLE_NS 100000 /* nothing of the thread's active: sleep 100 us between looks */

static pthread_t progress_thread;
static bool thread_running;
static bool thread_stop;        /* atomic: the thread's loop ends */
static int thread_plans;        /* live plans holding the thread (caller's thread only) */
static int finalize_keyval = MPI_KEYVAL_INVALID;

static void *progress_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&thread_stop, __ATOMIC_ACQUIRE)) {
        bool busy = false;
        pthread_mutex_lock(&active_lock);
        for (struct plancoll_plan_s *p = active_head; p; p = p->active_next)
            if (p->progress_thread && !p->active_done) {
                advance_one(p);
                busy = busy || !p->active_done;
            }
        pthread_mutex_unlock(&active_lock);
        /* Yield either way: the ranks may outnumber the cores, and the caller needs the mutex now and then. */
        /* (idle named: smpicc makes nanosleep a macro, which a compound literal's comma would split) */
        const struct timespec idle = {0, THREAD_IDLE_NS};
        if (busy)
            sched_yield();
        else
            nanosleep(&idle, NULL);
    }
    return NULL;
}

static void stop_thread(void)
{
    if (!thread_running) return;
    __atomic_store_n(&thread_stop, true, __ATOMIC_RELEASE);
    pthread_join(progress_thread, NULL);
    thread_running = false;
}

/* MPI_COMM_SELF's attributes are deleted at the start of MPI_Finalize, while MPI still works: the thread stops
 * there if plans holding it were never destroyed, so it never calls MPI after MPI is gone. */
static int finalize_stop(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm, (void)keyval, (void)value, (void)extra;
    stop_thread();
    return MPI_SUCCESS;
}

int pc_progress_thread_setting(bool *wanted)
{
    *wanted = false;
    const char *v = getenv("PLANCOLL_PROGRESS_THREAD");
    if (!v || strcmp(v, "0") == 0 || !*v) return PLANCOLL_SUCCESS;
    if (strcmp(v, "1") != 0)
        return pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_PROGRESS_THREAD='%s': use 1 (a progress thread) or 0", v);
    int level = MPI_THREAD_SINGLE;
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
        return pc_error(PLANCOLL_ERR_THREAD_LEVEL,
                        "PLANCOLL_PROGRESS_THREAD=1 needs MPI_THREAD_MULTIPLE (the thread calls MPI while the caller "
                        "does); MPI provides %s: initialise with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) or "
                        "unset the variable",
                        level == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                        : level == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                                         : "MPI_THREAD_SERIALIZED");
#if PC_MPI_SIMULATED
    /* SMPI's ranks are simulated actors: a thread of the host that calls MPI is none of them. */
    return pc_error(PLANCOLL_ERR_THREAD_LEVEL,
                    "PLANCOLL_PROGRESS_THREAD=1: no progress thread under SimGrid SMPI (a thread outside the simulated "
                    "ranks cannot call MPI); unset the variable");
#endif
    *wanted = true;
    return PLANCOLL_SUCCESS;
}

int pc_progress_thread_acquire(struct plancoll_plan_s *plan)
{
    if (!thread_running) {
        if (finalize_keyval == MPI_KEYVAL_INVALID) {
            if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_stop, &finalize_keyval, NULL) != MPI_SUCCESS ||
                MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL) != MPI_SUCCESS) {
                if (finalize_keyval != MPI_KEYVAL_INVALID) MPI_Comm_free_keyval(&finalize_keyval);
                finalize_keyval = MPI_KEYVAL_INVALID;
                return pc_error(PLANCOLL_ERR_MPI, "progress thread: the MPI_Finalize hook could not be set");
            }
        }
        if (!pc_progress_hook) pc_progress_hook = pc_progress_active;
        __atomic_store_n(&thread_stop, false, __ATOMIC_RELEASE);
        int rc = pthread_create(&progress_thread, NULL, progress_main, NULL);
        if (rc != 0) return pc_error(PLANCOLL_ERR_NOMEM, "progress thread: pthread_create: %s", strerror(rc));
        thread_running = true;
    }
    thread_plans++;
    plan->progress_thread = true;
    return PLANCOLL_SUCCESS;
}

void pc_progress_thread_release(struct plancoll_plan_s *plan)
{
    if (!plan->progress_thread) return;
    plan->progress_thread = false;
    if (--thread_plans == 0) stop_thread();
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

/* A transpose in pieces whose execution still has pieces to start can never complete: wait says so instead of
 * waiting for ever (the execution goes on). plancoll_test then only advances (a caller may call it between pieces
 * to move the started ones), as MPI_Test on a partitioned request before every partition is ready. */
static int refuse_unstarted(const struct plancoll_plan_s *plan, const char *what)
{
    int left = pc_transpose_pieces_unstarted(plan);
    if (left == 0) return PLANCOLL_SUCCESS;
    int K = pc_transpose_pieces(plan);
    return pc_error(PLANCOLL_ERR_ARGUMENT,
                    "%s: the execution cannot complete: %d of its %d pieces are not started (the next is piece %d: "
                    "plancoll_start_piece); it goes on",
                    what, left, K, K - left);
}

int plancoll_start_piece(plancoll_plan handle, int k)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    int K = pc_transpose_pieces(plan);
    if (K == 0)
        return pc_error(PLANCOLL_ERR_ARGUMENT,
                        "plancoll_start_piece: the plan is not a transpose in pieces (plancoll_plan_transpose_pieces)");
    if (k < 0 || k >= K)
        return pc_error(PLANCOLL_ERR_ARGUMENT, "plancoll_start_piece: piece %d of a plan in %d pieces (0 .. %d)", k, K,
                        K - 1);
    if (k == 0) { /* begins an execution, as plancoll_start, with its first piece only */
        if ((err = pc_refuse_active(plan, "plancoll_start_piece(0)"))) return err;
        pc_transpose_first_start_pieces(plan, true);
        err = plancoll_start(handle);
        if (err) pc_transpose_first_start_pieces(plan, false); /* a later plancoll_start starts every piece */
        return err;
    }
    if (!plan->active)
        return pc_error(PLANCOLL_ERR_ARGUMENT,
                        "plancoll_start_piece: piece %d while no execution is begun (plancoll_start_piece(plan, 0) "
                        "begins one)",
                        k);
    /* under the lock: the progress thread may be advancing this plan, and reads what piece k changes */
    pthread_mutex_lock(&active_lock);
    err = pc_transpose_start_next_piece(plan, k);
    pthread_mutex_unlock(&active_lock);
    if (err) return err;
    pc_progress_active(); /* packs and sends the piece now if its slot is free */
    return PLANCOLL_SUCCESS;
}

int plancoll_test(plancoll_plan handle, int *done)
{
    if (!done) return pc_error(PLANCOLL_ERR_ARGUMENT, "plancoll_test: done is NULL");
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    pc_progress_active();
    if (pc_transpose_pieces_unstarted(plan) > 0) { /* progress only, as MPI_Test before every MPI_Pready */
        *done = 0;
        return PLANCOLL_SUCCESS;
    }
    bool finished = plan->active && is_done(plan);
    *done = !plan->active || finished;
    return finished ? complete(plan) : PLANCOLL_SUCCESS;
}

/* Waits for an active plan's execution to be done, advancing every active plan meanwhile. */
static void wait_done(struct plancoll_plan_s *plan)
{
    pc_progress_active();
    if (is_done(plan)) return;
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    while (!is_done(plan)) pc_waiter_pause(&w); /* each pause advances the active plans (the hook) */
}

int plancoll_wait(plancoll_plan handle)
{
    int err;
    struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    if (!plan->active) return PLANCOLL_SUCCESS;
    if ((err = refuse_unstarted(plan, "plancoll_wait"))) return err;
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
        if (plans[i] && (err = refuse_unstarted(pc_plan_lookup(plans[i]), "plancoll_waitall"))) {
            char why[256];
            snprintf(why, sizeof why, "%s", plancoll_error_detail());
            return pc_error(err, "plans[%d]: %s", i, why);
        }
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
