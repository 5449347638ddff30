/* sim-collective: one collective timed the same way for MPI's own call and for a plancoll plan, small enough in
 * iterations to run under SMPI at thousands of simulated ranks (bench/scale/sim-vs-predict.sh, docs/scale-planner.md).
 *
 *   smpirun ... sim-collective alltoall BYTES [ITERS] [mpi|plancoll]    MPI_Alltoall of BYTES per block
 *   smpirun ... sim-collective alltoallv BYTES [ITERS] [mpi|plancoll]   MPI_Alltoallv, BYTES between every pair
 *                                                                       (the predictor's alltoallv:uniform:BYTES)
 *   smpirun ... sim-collective allreduce COUNT [ITERS] [mpi|plancoll]   MPI_Allreduce of COUNT doubles, MPI_SUM
 *
 * mpi (the default) calls MPI's collective; plancoll (only when built with -DWITH_PLANCOLL against plancoll) makes
 * an ESTIMATE plan of the same call and executes it, so PLANCOLL_ALGORITHM=<spec> in the environment forces one
 * candidate (plancoll-predict prints every candidate's spec). Without plancoll the program needs only an MPI (or
 * smpicc). One warm-up call, then ITERS (default 3) calls, each timed between barriers; a call's time is the slowest
 * rank's, and rank 0 prints the mean over the calls in microseconds, with the minimum and maximum:
 *   sim-collective alltoall 1024 P=1792 impl=mpi mean_us=... min_us=... max_us=...
 * (impl=<the plan's spec> for plancoll).
 * The buffers are plain malloc: under SMPI, --cfg=smpi/auto-shared-malloc-thresh folds the large ones (their
 * contents are then shared garbage, so the program does not check results: it is a timing reference only). */
#include <mpi.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef WITH_PLANCOLL
#include "plancoll.h"
#endif

static void die(const char *what)
{
    fprintf(stderr, "sim-collective: %s\n", what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (argc < 3) die("usage: sim-collective alltoall|alltoallv|allreduce SIZE [ITERS] [mpi|plancoll]");
    const char *coll = argv[1];
    long long size = atoll(argv[2]);
    int iters = argc > 3 ? atoi(argv[3]) : 3;
    const char *impl = argc > 4 ? argv[4] : "mpi";
    bool use_plancoll = !strcmp(impl, "plancoll");
    if (!use_plancoll && strcmp(impl, "mpi")) die("the implementation is mpi or plancoll");
#ifndef WITH_PLANCOLL
    if (use_plancoll) die("built without plancoll (-DWITH_PLANCOLL)");
#endif
    if (size < 1 || iters < 1) die("SIZE and ITERS must be at least 1");
    int kind = !strcmp(coll, "alltoall") ? 0 : !strcmp(coll, "alltoallv") ? 1 : !strcmp(coll, "allreduce") ? 2 : -1;
    if (kind < 0) die("collective must be alltoall, alltoallv or allreduce");

    size_t bytes = kind == 2 ? (size_t)size * sizeof(double) : (size_t)size * (size_t)P;
    char *sbuf = malloc(bytes), *rbuf = malloc(bytes);
    int *counts = NULL, *displs = NULL;
    if (!sbuf || !rbuf) die("out of memory");
    if (kind == 1) {
        counts = malloc(sizeof(int) * (size_t)P);
        displs = malloc(sizeof(int) * (size_t)P);
        if (!counts || !displs) die("out of memory");
        for (int j = 0; j < P; j++) counts[j] = (int)size, displs[j] = (int)(size * j);
    }
    char label[200];
    snprintf(label, sizeof label, "mpi");
#ifdef WITH_PLANCOLL
    plancoll_plan plan = NULL;
    if (use_plancoll) {
        int rc = kind == 0 ? plancoll_plan_alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD,
                                                    PLANCOLL_ESTIMATE, &plan)
                 : kind == 1 ? plancoll_plan_alltoallv(sbuf, counts, displs, MPI_BYTE, rbuf, counts, displs, MPI_BYTE,
                                                       MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan)
                             : plancoll_plan_allreduce(sbuf, rbuf, (int)size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD,
                                                       PLANCOLL_ESTIMATE, &plan);
        if (rc != PLANCOLL_SUCCESS) {
            if (rank == 0) fprintf(stderr, "sim-collective: %s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        if (plancoll_plan_spec(plan, label, sizeof label) != PLANCOLL_SUCCESS) snprintf(label, sizeof label, "plancoll");
    }
#endif
    double sum = 0, lo = 1e300, hi = 0;
    for (int it = -1; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t = MPI_Wtime();
#ifdef WITH_PLANCOLL
        if (use_plancoll) {
            int rc = plancoll_execute(plan);
            if (rc != PLANCOLL_SUCCESS) die(plancoll_error_detail());
        } else
#endif
        if (kind == 0) MPI_Alltoall(sbuf, (int)size, MPI_BYTE, rbuf, (int)size, MPI_BYTE, MPI_COMM_WORLD);
        else if (kind == 1) MPI_Alltoallv(sbuf, counts, displs, MPI_BYTE, rbuf, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
        else MPI_Allreduce(sbuf, rbuf, (int)size, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        double slowest;
        MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (it < 0) continue; /* warm-up */
        sum += slowest;
        lo = slowest < lo ? slowest : lo;
        hi = slowest > hi ? slowest : hi;
    }
    if (rank == 0)
        printf("sim-collective %s %lld P=%d impl=%s mean_us=%.3f min_us=%.3f max_us=%.3f\n", coll, size, P, label,
               sum / iters * 1e6, lo * 1e6, hi * 1e6);
#ifdef WITH_PLANCOLL
    if (plan) plancoll_destroy_plan(&plan);
#endif
    free(sbuf);
    free(rbuf);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
