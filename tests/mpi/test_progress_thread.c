/* The progress thread (PLANCOLL_PROGRESS_THREAD=1, api/nonblocking.c):
 * - a started plan completes while every rank only computes, with no plancoll or MPI call: after the computation
 *   the first plancoll_test reports it complete, and a wait after a computation returns at once. Each algorithm is
 *   one with several dependent steps (a step's message is sent only once the peer has advanced past the step
 *   before), so without a thread at least one rank's first test cannot find its execution complete;
 * - a large exchange (MPI's rendezvous needs progress on both sides again and again);
 * - several rounds, and two plans active at once completed in reverse order;
 * - PLANCOLL_PROGRESS_THREAD=2 is PLANCOLL_ERR_ENV on every rank;
 * - plancoll_progress from a thread of the caller's own (a plan made without the library's thread) moves a started
 *   plan while the caller blocks in MPI_Barrier on another communicator, which a peer reaches only after waiting
 *   for the plan (legal under MPI's progress rule; deadlocks without the caller's thread), and counts pending plans;
 * - with --refused, MPI is initialised at MPI_THREAD_FUNNELED and plan creation is PLANCOLL_ERR_THREAD_LEVEL on
 *   every rank, the detail naming the level.
 * PLANCOLL_PROGRESS_THREAD is set to 1 here unless the environment sets it (=0 shows what the thread does: the
 * completion checks fail). Results are checked exactly. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

#define COMPUTE_SECONDS 0.3 /* enough for a few small exchanges on a loaded 2-core machine */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;
/* The caller's work: arithmetic only, no MPI and no plancoll call. */
static void compute(double seconds)
{
    double end = now() + seconds, acc = 0;
    while (now() < end)
        for (int k = 0; k < 1000; k++) acc += k * 1e-9;
    sink = acc;
}

static long val(int src, int dst, int i, int round) { return (long)src * 1000003L + dst * 1009L + i * 7L + round * 100000007L; }

struct prob {
    bool reduce;
    int P, r, n;
    long *s, *d;
    plancoll_plan plan;
};

static int prob_make(struct prob *x, const char *algorithm, bool reduce, int n)
{
    memset(x, 0, sizeof *x);
    x->reduce = reduce;
    x->n = n;
    x->P = tl_size;
    x->r = tl_rank;
    size_t len = reduce ? (size_t)n : (size_t)n * (size_t)x->P;
    x->s = malloc(len * sizeof(long));
    x->d = malloc(len * sizeof(long));
    tl_force(algorithm);
    int rc = reduce ? plancoll_plan_allreduce(x->s, x->d, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_NONBLOCKING,
                                              &x->plan)
                    : plancoll_plan_alltoall(x->s, n, MPI_LONG, x->d, n, MPI_LONG, MPI_COMM_WORLD,
                                             PLANCOLL_NONBLOCKING, &x->plan);
    tl_force(NULL);
    return rc;
}

static void prob_fill(struct prob *x, int round)
{
    for (int i = 0; i < x->n; i++)
        if (x->reduce)
            x->s[i] = val(x->r, 0, i, round);
        else
            for (int dst = 0; dst < x->P; dst++) x->s[(size_t)dst * x->n + i] = val(x->r, dst, i, round);
    memset(x->d, 0xA5, (x->reduce ? (size_t)x->n : (size_t)x->n * x->P) * sizeof(long));
}

static void prob_check(struct prob *x, int round, const char *what)
{
    long wrong = 0;
    for (int i = 0; i < x->n; i++)
        if (x->reduce) {
            long want = 0;
            for (int q = 0; q < x->P; q++) want += val(q, 0, i, round);
            if (x->d[i] != want) wrong++;
        } else {
            for (int src = 0; src < x->P; src++)
                if (x->d[(size_t)src * x->n + i] != val(src, x->r, i, round)) wrong++;
        }
    TL_CHECK(wrong == 0, "%s round %d: %ld wrong elements", what, round, wrong);
}

static void prob_free(struct prob *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    free(x->s);
    free(x->d);
}

/* Started, then only computation on every rank: the thread alone must carry the execution to its end. */
static void completes_while_computing(const char *algorithm, bool reduce, int n)
{
    struct prob x;
    TL_OK(prob_make(&x, algorithm, reduce, n));
    if (!x.plan) {
        prob_free(&x);
        return;
    }
    for (int round = 0; round < 3; round++) {
        prob_fill(&x, round);
        tl_barrier(MPI_COMM_WORLD);
        TL_OK(plancoll_start(x.plan));
        compute(COMPUTE_SECONDS);
        int done = 0;
        TL_OK(plancoll_test(x.plan, &done));
        TL_CHECK(done == 1, "%s round %d: not complete at the first test after %.1f s of computation", algorithm,
                 round, COMPUTE_SECONDS);
        if (!done) TL_OK(plancoll_wait(x.plan));
        prob_check(&x, round, algorithm);
    }
    /* wait after the computation returns at once */
    prob_fill(&x, 7);
    tl_barrier(MPI_COMM_WORLD);
    TL_OK(plancoll_start(x.plan));
    compute(COMPUTE_SECONDS);
    double t0 = now();
    TL_OK(plancoll_wait(x.plan));
    double waited = now() - t0;
    TL_CHECK(waited < 0.02, "%s: plancoll_wait took %.3f s after the computation (the thread did not finish it)",
             algorithm, waited);
    prob_check(&x, 7, algorithm);
    prob_free(&x);
}

/* Two plans active at once, both moved by the thread, completed in reverse order. */
static void two_active(void)
{
    struct prob a, b;
    TL_OK(prob_make(&a, "alltoall.pairwise", false, 32));
    TL_OK(prob_make(&b, "allreduce.recursive_doubling", true, 32));
    if (a.plan && b.plan)
        for (int round = 0; round < 2; round++) {
            prob_fill(&a, round);
            prob_fill(&b, round + 10);
            tl_barrier(MPI_COMM_WORLD);
            TL_OK(plancoll_start(a.plan));
            TL_OK(plancoll_start(b.plan));
            compute(COMPUTE_SECONDS);
            int done_b = 0, done_a = 0;
            TL_OK(plancoll_test(b.plan, &done_b));
            TL_OK(plancoll_test(a.plan, &done_a));
            TL_CHECK(done_a && done_b, "two active plans: complete a=%d b=%d after the computation", done_a, done_b);
            plancoll_plan both[2] = {b.plan, a.plan};
            TL_OK(plancoll_waitall(2, both));
            prob_check(&a, round, "two active: alltoall");
            prob_check(&b, round + 10, "two active: allreduce");
        }
    prob_free(&b);
    prob_free(&a);
}

/* The caller's own progress thread: plancoll_progress until told to stop. */
static bool helper_stop;
static void *helper_main(void *arg)
{
    (void)arg;
    while (!__atomic_load_n(&helper_stop, __ATOMIC_ACQUIRE)) {
        int pending = -1;
        plancoll_progress(&pending);
        if (pending > 0) {
            sched_yield();
        } else {
            const struct timespec nap = {0, 100000};
            nanosleep(&nap, NULL);
        }
    }
    return NULL;
}

/* rank 0: start; wait; barrier.  ranks >= 1: start; barrier; wait.  Rank 0's wait needs the others' plans to move
 * while they are in MPI_Barrier, where only their own thread's plancoll_progress moves them: MPI's progress inside
 * the barrier moves messages already posted, not a plan's next step. The algorithms are ones whose later steps need
 * every rank's CPU: allreduce.dpml (each rank reduces its part of the node's vector), alltoall.bruck (several
 * dependent steps from 3 ranks on). Without the helper thread this deadlocks (checked when it was written). */
static void progress_from_own_thread(const char *algorithm, bool reduce)
{
    setenv("PLANCOLL_PROGRESS_THREAD", "0", 1); /* not the library's thread: the caller's */
    struct prob x;
    int rc = prob_make(&x, algorithm, reduce, 64);
    setenv("PLANCOLL_PROGRESS_THREAD", "1", 1);
    TL_OK(rc);
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    pthread_t helper;
    __atomic_store_n(&helper_stop, false, __ATOMIC_RELEASE);
    bool helping = pthread_create(&helper, NULL, helper_main, NULL) == 0;
    TL_CHECK(helping, "pthread_create failed");
    for (int round = 0; round < 3 && x.plan && helping; round++) {
        prob_fill(&x, round);
        int pending = -1, token = round;
        if (x.r == 0) { /* rank 0 starts after every other rank has started and checked its pending count */
            for (int q = 1; q < x.P; q++) MPI_Recv(&token, 1, MPI_INT, q, 9, other, MPI_STATUS_IGNORE);
            TL_OK(plancoll_start(x.plan));
            TL_OK(plancoll_wait(x.plan));
            MPI_Barrier(other);
        } else {
            TL_OK(plancoll_start(x.plan));
            TL_OK(plancoll_progress(&pending));
            TL_CHECK(pending == 1, "%s round %d: %d plans pending before rank 0 started, want 1", algorithm, round,
                     pending);
            MPI_Send(&token, 1, MPI_INT, 0, 9, other);
            MPI_Barrier(other);
            TL_OK(plancoll_wait(x.plan));
        }
        TL_OK(plancoll_progress(&pending));
        TL_CHECK(pending == 0, "%s round %d: %d plans pending after the wait, want 0", algorithm, round, pending);
        prob_check(&x, round, "progress from the caller's thread");
    }
    if (helping) {
        __atomic_store_n(&helper_stop, true, __ATOMIC_RELEASE);
        pthread_join(helper, NULL);
    }
    MPI_Comm_free(&other);
    prob_free(&x);
}

static void bad_value(void)
{
    setenv("PLANCOLL_PROGRESS_THREAD", "2", 1);
    struct prob x;
    int rc = prob_make(&x, NULL, true, 4);
    TL_CHECK(rc == PLANCOLL_ERR_ENV && x.plan == NULL && strstr(plancoll_error_detail(), "PLANCOLL_PROGRESS_THREAD"),
             "PLANCOLL_PROGRESS_THREAD=2: got %d (%s), want PLANCOLL_ERR_ENV", rc, plancoll_error_detail());
    prob_free(&x);
    setenv("PLANCOLL_PROGRESS_THREAD", "1", 1);
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_progress_thread: no progress for 120 s\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

int main(int argc, char **argv)
{
    bool refused = argc > 1 && strcmp(argv[1], "--refused") == 0;
    setenv("PLANCOLL_PROGRESS_THREAD", "1", 0);
    bool with_thread = strcmp(getenv("PLANCOLL_PROGRESS_THREAD"), "1") == 0;
    if (refused) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    }
    tl_init(&argc, &argv, refused ? "progress_thread_refused" : "progress_thread"); /* MULTIPLE with the thread */
    signal(SIGALRM, on_alarm);
    alarm(120);
    int level;
    MPI_Query_thread(&level);
    if (refused) {
        TL_CHECK(level < MPI_THREAD_MULTIPLE, "--refused: MPI provides MPI_THREAD_MULTIPLE anyway");
        struct prob x;
        int rc = prob_make(&x, NULL, true, 4);
        TL_CHECK(rc == PLANCOLL_ERR_THREAD_LEVEL && x.plan == NULL &&
                     strstr(plancoll_error_detail(), "MPI_THREAD_MULTIPLE") &&
                     strstr(plancoll_error_detail(), "MPI_THREAD_FUNNELED"),
                 "below MPI_THREAD_MULTIPLE: got %d (%s: %s), want PLANCOLL_ERR_THREAD_LEVEL", rc, plancoll_strerror(rc),
                 plancoll_error_detail());
        prob_free(&x);
        /* without the variable the same plan is made and runs */
        setenv("PLANCOLL_PROGRESS_THREAD", "0", 1);
        TL_OK(prob_make(&x, NULL, true, 4));
        prob_fill(&x, 1);
        if (x.plan) TL_OK(plancoll_execute(x.plan));
        prob_check(&x, 1, "without the thread");
        prob_free(&x);
    } else {
        TL_CHECK(!with_thread || level == MPI_THREAD_MULTIPLE, "MPI_THREAD_MULTIPLE not provided (%d)", level);
        completes_while_computing("alltoall.pairwise", false, 64);
        completes_while_computing("alltoall.bruck", false, 64);
        completes_while_computing("allreduce.recursive_doubling", true, 64);
        /* 512 KiB blocks go by MPI's rendezvous, which needs progress on both sides several times: at two ranks,
         * where the small exchanges are one step, this is what a single test cannot finish without the thread */
        completes_while_computing("alltoall.pairwise", false, 65536);
        two_active();
        if (with_thread) {
            progress_from_own_thread("alltoall.bruck", false);
            progress_from_own_thread("allreduce.dpml", true);
            bad_value();
        }
    }
    alarm(0);
    return tl_finish();
}
