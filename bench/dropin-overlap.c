/* dropin-overlap: what the drop-in layer's guard thread (src/dropin/guard.c) does to a program that hides a
 * persistent collective behind its own computation. A plain MPI program (no plancoll header): run it plain, under
 * plancoll-run with PLANCOLL_DROPIN_PROGRESS=calls (no guard) and with the default (the guard), alternating:
 * bench/run-dropin-overlap.sh does that.
 *
 * For MPI_Allreduce_init (COUNT doubles, MPI_SUM) and MPI_Alltoall_init (COUNT / P doubles per block), on
 * MPI_COMM_WORLD, after 20 warm-up executions:
 *   t_pure   MPI_Start + MPI_Wait;
 *   t_cpu    the computation alone (arithmetic, no MPI call, COMPUTE_US microseconds);
 *   t_total  MPI_Start, the computation, MPI_Wait;
 * each the mean of REPS iterations after a barrier, max over ranks, the three measured in turn BATCHES times and
 * the medians printed. overlap = 100 (1 - (t_total - t_cpu) / t_pure), clamped to [0, 100], as OSU's benchmarks
 * define it. Results are checked (allreduce: exact sums of small integers; alltoall: every block's sender).
 *
 * usage: mpiexec -n P [plancoll-run] dropin-overlap [COUNT [COMPUTE_US [REPS [BATCHES]]]]
 *        defaults 131072 doubles (1 MiB), 2000 us, 20 iterations, 7 batches */
#define _DEFAULT_SOURCE /* alarm, _exit */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include "bench_stats.h"

/* MPICH 4.0.2 over UCX tcp hangs in MPI_Finalize in about half of multi-clique runs (with or without plancoll):
 * once the results are printed, a watchdog ends that hang. */
static int exit_code;
static void finalize_watchdog(int sig) {
    (void)sig;
    _exit(exit_code);
}

static double now(void) { return MPI_Wtime(); }

static volatile double sink;
static void compute(double seconds) {
    double end = now() + seconds, acc = 0;
    while (now() < end)
        for (int k = 0; k < 1000; k++) acc += k * 1e-9;
    sink = acc;
}

/* Mean seconds per iteration of `reps` iterations, max over ranks. kind 0: start+wait, 1: compute, 2: all three. */
static double timed(MPI_Request *req, int kind, int reps, double compute_s) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    for (int i = 0; i < reps; i++) {
        if (kind != 1) MPI_Start(req);
        if (kind != 0) compute(compute_s);
        if (kind != 1) MPI_Wait(req, MPI_STATUS_IGNORE);
    }
    double t = (now() - t0) / reps, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return tmax;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int P, me;
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    long count = argc > 1 ? atol(argv[1]) : 131072;
    double compute_s = (argc > 2 ? atof(argv[2]) : 2000.0) * 1e-6;
    int reps = argc > 3 ? atoi(argv[3]) : 20, batches = argc > 4 ? atoi(argv[4]) : 7;
    if (count < P || count > (1L << 26) || reps < 1 || batches < 1 || batches > 101 || compute_s < 0) {
        if (me == 0) fprintf(stderr, "usage: dropin-overlap [COUNT [COMPUTE_US [REPS [BATCHES]]]]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int block = (int)(count / P);
    double *send = malloc(sizeof(double) * (size_t)count), *recv = malloc(sizeof(double) * (size_t)count);
    if (!send || !recv) MPI_Abort(MPI_COMM_WORLD, 2);
    const char *names[2] = {"allreduce", "alltoall"};
    int bad = 0;
    for (int c = 0; c < 2; c++) {
        MPI_Request req;
        for (long i = 0; i < count; i++) send[i] = c == 0 ? (double)(me + 1 + i % 5) : (double)(me * 1000 + i / block % P);
        if (c == 0) MPI_Allreduce_init(send, recv, (int)count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        else MPI_Alltoall_init(send, block, MPI_DOUBLE, recv, block, MPI_DOUBLE, MPI_COMM_WORLD, MPI_INFO_NULL, &req);
        for (int i = 0; i < 20; i++) {
            MPI_Start(&req);
            MPI_Wait(&req, MPI_STATUS_IGNORE);
        }
        for (long i = 0; i < (c == 0 ? count : (long)block * P); i++) {
            double want = c == 0 ? (double)(P * (P + 1) / 2 + P * (i % 5)) : (double)((i / block) * 1000 + me);
            if (recv[i] != want) bad++;
        }
        double pure[101], cpu[101], total[101];
        for (int b = 0; b < batches; b++) {
            pure[b] = timed(&req, 0, reps, compute_s);
            cpu[b] = timed(&req, 1, reps, compute_s);
            total[b] = timed(&req, 2, reps, compute_s);
        }
        double tp = bench_median(pure, batches), tc = bench_median(cpu, batches), tt = bench_median(total, batches);
        double overlap = 100.0 * (1.0 - (tt - tc) / tp);
        overlap = overlap < 0 ? 0 : overlap > 100 ? 100 : overlap;
        if (me == 0)
            printf("%-9s P=%d bytes=%ld compute_us=%.0f t_pure_us=%.1f t_cpu_us=%.1f t_total_us=%.1f overlap=%.0f\n",
                   names[c], P, count * 8, compute_s * 1e6, tp * 1e6, tc * 1e6, tt * 1e6, overlap);
        MPI_Request_free(&req);
    }
    int bad_all = 0;
    MPI_Allreduce(&bad, &bad_all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (me == 0 && bad_all) printf("dropin-overlap: %d WRONG elements\n", bad_all);
    free(send);
    free(recv);
    fflush(stdout);
    exit_code = bad_all != 0;
    signal(SIGALRM, finalize_watchdog);
    alarm(10);
    MPI_Finalize();
    return exit_code;
}
