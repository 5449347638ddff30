/* The guard: a thread of the layer that moves started plans while the application's thread is blocked in an MPI
 * call the layer does not convert (issue 18, "never worse than MPI for a correct program").
 *
 * MPI requires a started persistent collective to progress while its process is blocked in any MPI call. The
 * layer's plans move only inside plancoll calls, the layer's completion calls (persistent.c) and the blocking
 * point-to-point calls it converts (progress.c). Blocking collectives cannot be converted (a nonblocking collective
 * does not match a blocking one, and whether a plan is active is one process's state), so
 *     rank 0: MPI_Start(c); MPI_Wait(c); MPI_Barrier(d)
 *     rank 1: MPI_Start(c); MPI_Barrier(d); MPI_Wait(c)
 * legal, deadlocks without help: rank 1 sits in PMPI_Barrier while its part of c stands still. The same holds for
 * every blocking call the layer does not take (MPI_Bcast, MPI_Comm_dup, MPI_Win_fence, collective I/O, ...).
 *
 * The guard watches instead of intercepting them all. While the layer has plans active, it looks every WATCH_NS at
 * an epoch the application's thread bumps each time it leaves a plancoll call (pcd_leave: every start, test, wait
 * and converted call passes there). An epoch that has not moved for a whole watch with plans still active means the
 * application's thread is elsewhere: blocked in MPI, or computing. The guard then advances the plans itself
 * (plancoll_progress, which shares plancoll's lock with the application's own advances) until the epoch moves or
 * nothing is left to move; completions stay with the application's thread, which reports them as before. While
 * that thread is inside plancoll (a long wait, a plan's creation) the guard gives it INSIDE_WATCHES watches, since
 * plancoll's own waits advance the plans; only a plancoll call blocked in one of MPI's collectives (a creation's
 * MPI_Comm_split_type, say) needs the guard. So the common case costs the application two stores per plancoll
 * call, a started plan that the program waits for or tests within a watch is never touched by the guard, and a
 * blocked rank's plan moves within a few milliseconds. The periods trade a blocked rank's delay against the CPU the
 * guard takes from ranks that compute while their plans run (bench/run-dropin-overlap.sh measures it: with a
 * 200 us watch the guard's passes cost the computing ranks of a 2-core machine 15-25 us per 500 us of computation,
 * and a rank's own waits 25% where four ranks shared two cores; with a 1 ms watch, 2 ms computations with four
 * ranks on two cores still lost 10-25%; docs/dropin.md). On a machine with a spare hardware thread per rank the
 * guard's passes during a long computation are asynchronous progress; on an oversubscribed one they are not free.
 *
 * The guard calls MPI while the application's thread may be in MPI too: it needs MPI_THREAD_MULTIPLE, which the
 * layer asks of MPI at MPI_Init* (common.c) while telling the program the level it asked for, so the program never
 * uses more than it planned for and the layer's own tables stay single-threaded (the guard touches none of them:
 * only plancoll's active list, under plancoll's lock, and two atomic counters). It starts at the first started plan
 * and stops before MPI_Finalize. PLANCOLL_DROPIN_PROGRESS=calls turns it off (and keeps the program's thread
 * level), with the limit docs/dropin.md states. */
#include "dropin.h"

#include <pthread.h>
#include <sched.h>
#include <time.h>

enum {
    IDLE_NS = 2000000,  /* no plan active: look again after 2 ms (the guard is then nearly free) */
    WATCH_NS = 5000000, /* a plan active: how long the application's thread may stay away before the guard acts */
    INSIDE_WATCHES = 4, /* ... and, while it is inside plancoll (whose waits advance the plans), how many watches */
    BACKOFF_NS = 50000, /* acting, after YIELD_PASSES passes: nap between passes (more ranks than cores is common) */
    YIELD_PASSES = 64
};

static bool running, stop;
static pthread_t thread;

static void nap(long ns) {
    const struct timespec t = {0, ns};
    nanosleep(&t, NULL);
}

static bool stopping(void) { return __atomic_load_n(&stop, __ATOMIC_ACQUIRE); }

static unsigned long epoch(void) { return __atomic_load_n(&pcd_guard_epoch, __ATOMIC_RELAXED); }

/* The application's thread has been away since epoch `seen`: advance the plans until it is back or none moves. */
static void act(unsigned long seen) {
    int passes = 0;
    while (!stopping() && pcd_plans_active() && epoch() == seen) {
        int pending = 0;
        plancoll_progress(&pending);
        if (pending == 0) { /* every execution done: the application's thread reports them when it is back */
            nap(WATCH_NS);
            continue;
        }
        if (++passes < YIELD_PASSES) sched_yield();
        else nap(BACKOFF_NS);
    }
}

static bool inside(void) { return __atomic_load_n(&pcd_guard_inside, __ATOMIC_RELAXED) != 0; }

static void *guard_main(void *arg) {
    (void)arg;
    pcd_inside = 1; /* plancoll's MPI calls from this thread go straight to PMPI, never into the layer's tables */
    while (!stopping()) {
        if (!pcd_plans_active()) {
            nap(IDLE_NS);
            continue;
        }
        /* Away for a whole watch, or for INSIDE_WATCHES of them while inside plancoll: a long plancoll call (a
         * wait, a plan's creation) advances the plans itself, unless it is blocked in one of MPI's collectives. */
        unsigned long seen = epoch();
        int watches = 0;
        do {
            nap(WATCH_NS);
            watches++;
        } while (!stopping() && pcd_plans_active() && epoch() == seen && inside() && watches < INSIDE_WATCHES);
        if (!stopping() && pcd_plans_active() && epoch() == seen) act(seen);
    }
    return NULL;
}

void pcd_guard_start(void) {
    if (running || !pcd_guard_allowed) return;
    __atomic_store_n(&stop, false, __ATOMIC_RELEASE);
    running = pthread_create(&thread, NULL, guard_main, NULL) == 0; /* without it: progress.c's calls only */
}

void pcd_guard_stop(void) {
    if (!running) return;
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    pthread_join(thread, NULL);
    running = false;
}
