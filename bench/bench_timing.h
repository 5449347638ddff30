/* The timing protocol of docs/measurement.md as plancoll-transpose-bench and plancoll-fft-bench run it, in one
 * place so the two time their variants alike: a warm-up that also sizes the batches, then batches of at least
 * BENCH_BATCH_SECONDS after a yielding barrier, each iteration timed on its own and reduced with MAX over ranks
 * (the collective is as slow as its slowest rank), the median over the batch means; the caller alternates its
 * variants batch by batch so a disturbance of the shared machine hits them all. Also the small pieces both
 * programs need around it: the size list, the node count, and the end of a run under MPICH 4.0.2 over UCX tcp,
 * whose MPI_Finalize may hang after a complete run (the verdict line is printed first, a watchdog ends the hang).
 */
#ifndef PLANCOLL_BENCH_TIMING_H
#define PLANCOLL_BENCH_TIMING_H

#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_mpi.h"
#include "bench_stats.h"

#define BENCH_BATCH_SECONDS 0.020
#define BENCH_MAX_BATCHES 101
#define BENCH_MAX_SAMPLES 65536

/* One variant's timings over a run (times in seconds). */
struct bench_series {
    int samples; /* iterations in the next batch: set by bench_calibrate, adapted by bench_time_batch */
    double batch_mean[BENCH_MAX_BATCHES];
    double sum, min, max, median;
    long n; /* iterations timed */
};

/* The per-iteration times of one batch and their maximum over the ranks of comm. */
struct bench_timer {
    MPI_Comm comm;
    double *samples, *samples_max;
};

/* One iteration of a variant. */
typedef void (*bench_run_fn)(void *ctx, void *variant);

static inline void *bench_xmalloc(size_t n, const char *program)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", program, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static inline void bench_timer_init(struct bench_timer *t, MPI_Comm comm, const char *program)
{
    t->comm = comm;
    t->samples = bench_xmalloc(sizeof(double) * BENCH_MAX_SAMPLES, program);
    t->samples_max = bench_xmalloc(sizeof(double) * BENCH_MAX_SAMPLES, program);
}

static inline void bench_timer_free(struct bench_timer *t)
{
    free(t->samples);
    free(t->samples_max);
}

static inline void bench_series_reset(struct bench_series *s)
{
    memset(s, 0, sizeof *s);
    s->min = INFINITY;
}

/* Iterations so that a batch lasts about `target` seconds when one takes `per_iteration`. */
static inline int bench_iterations_for(double target, double per_iteration)
{
    double want = target / (per_iteration > 1e-9 ? per_iteration : 1e-9) + 1;
    int n = want > BENCH_MAX_SAMPLES ? BENCH_MAX_SAMPLES : (int)want;
    return n < 1 ? 1 : n;
}

/* The warm-up (warmup iterations), then a few timed ones that set the batch length. The same reduced time on
 * every rank, so every rank runs the same number of iterations. */
static inline void bench_calibrate(struct bench_timer *t, struct bench_series *s, bench_run_fn run, void *ctx,
                                   void *variant, int warmup)
{
    for (int i = 0; i < warmup; i++) run(ctx, variant);
    bench_barrier(t->comm);
    int reps = warmup > 3 ? warmup : 3;
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) run(ctx, variant);
    double per = (MPI_Wtime() - t0) / reps, per_max = 0;
    bench_allreduce(&per, &per_max, 1, MPI_DOUBLE, MPI_MAX, t->comm);
    s->samples = bench_iterations_for(BENCH_BATCH_SECONDS, per_max);
}

/* Batch number `batch` of the variant: s->samples iterations, each timed alone, reduced with MAX over ranks. */
static inline void bench_time_batch(struct bench_timer *t, struct bench_series *s, bench_run_fn run, void *ctx,
                                    void *variant, int batch)
{
    bench_barrier(t->comm);
    for (int i = 0; i < s->samples; i++) {
        double t0 = MPI_Wtime();
        run(ctx, variant);
        t->samples[i] = MPI_Wtime() - t0;
    }
    bench_allreduce(t->samples, t->samples_max, s->samples, MPI_DOUBLE, MPI_MAX, t->comm);
    double sum = 0;
    for (int i = 0; i < s->samples; i++) {
        double x = t->samples_max[i];
        sum += x;
        if (x < s->min) s->min = x;
        if (x > s->max) s->max = x;
    }
    s->sum += sum;
    s->n += s->samples;
    s->batch_mean[batch] = sum / s->samples;
    /* keep batches near their target length on a shared machine (same reduced data on every rank) */
    if (sum < BENCH_BATCH_SECONDS || sum > 4 * BENCH_BATCH_SECONDS)
        s->samples = bench_iterations_for(1.5 * BENCH_BATCH_SECONDS, sum / s->samples);
}

/* The median over the first `batches` batch means (sorts them). */
static inline double bench_series_median(struct bench_series *s, int batches)
{
    qsort(s->batch_mean, (size_t)batches, sizeof(double), bench_cmp_double);
    s->median = batches % 2 ? s->batch_mean[batches / 2]
                            : 0.5 * (s->batch_mean[batches / 2 - 1] + s->batch_mean[batches / 2]);
    return s->median;
}

/* "N[,N...]" into sizes[0..max-1]; returns how many were read (parsing stops at the first non-number). */
static inline int bench_parse_sizes(const char *arg, ptrdiff_t *sizes, int max)
{
    int count = 0;
    const char *s = arg;
    char *end;
    while (*s && count < max) {
        long v = strtol(s, &end, 10);
        if (end == s) break;
        sizes[count++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return count;
}

/* How many nodes (shared-memory domains, as MPI sees them: emulated nodes count) comm spans. */
static inline int bench_count_nodes(MPI_Comm comm)
{
    int rank, node_rank, nodes = 0;
    MPI_Comm node;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    int leader = node_rank == 0;
    bench_allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&node);
    return nodes;
}

static volatile sig_atomic_t bench_exit_status;
static inline void bench_finalize_watchdog(int sig)
{
    (void)sig;
    _exit(bench_exit_status);
}

/* The end of a run: rank 0 prints "# PROGRAM finished: exit status S" (the line the bench/run-*.sh drivers judge
 * by), then MPI_Finalize under a 5 s watchdog that exits with the same status. Returns status. */
static inline int bench_finalize(const char *program, int rank, int status)
{
    bench_exit_status = status;
    if (rank == 0) printf("# %s finished: exit status %d\n", program, status);
    fflush(stdout);
    signal(SIGALRM, bench_finalize_watchdog);
    alarm(5);
    MPI_Finalize();
    return status;
}

#endif
