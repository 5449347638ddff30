/*
 * smpi-mpi-coll: times MPI's OWN collective (whatever algorithm the MPI library selects; under SMPI the one chosen
 * by --cfg=smpi/<collective>:<algorithm>) the way the papers' benchmarks do, for the "MPI" column of the papers'
 * side-by-side tables (docs/scale-papers.md; bench/scale/papers.py). Plain MPI C: builds with smpicc or any mpicc.
 * Built with -DWITH_PLANCOLL against plancoll (the SMPI build's bench/smpi/smpi-paper-coll), --plancoll times an
 * ESTIMATE plan of the same call instead, made once before the timing (PLANCOLL_ALGORITHM=<spec> forces one
 * candidate), for the "plancoll under SMPI" column: the papers' proposed algorithms timed by the same protocol.
 *
 *   smpirun ... smpi-mpi-coll COLL BYTES [--iters N] [--warmup W] [--seed S] [--mif X] [--label TEXT] [--plancoll 1]
 *
 * COLL and BYTES:
 *   alltoall   BYTES per pair of ranks (MPI_BYTE)
 *   allreduce  BYTES of MPI_FLOAT summed ([DPML17] section 6.2: MPI_SUM of floats)
 *   alltoallv  block sizes uniform random in [0, BYTES] per pair ([BruckNU]'s benchmark), the same matrix as
 *              plancoll-predict's `alltoallv:random:BYTES:SEED` (splitmix64 of seed ^ (i P + j), modulo BYTES + 1)
 * Per iteration (after W untimed warm-up calls): MPI_Barrier, then with --mif X > 0 ([Qian08] ch. 6 arrival skew)
 * each rank is delayed a uniform random time in [0, X t_block] (t_block: half a ping-pong of one block between
 * rank 0 and the first rank of the second node, or rank 1 on one node; the delay is simulated time,
 * smpi_execute, when built with smpicc), then the timed call. Reported (one JSON line from rank 0):
 *   max_us   mean over iterations of the slowest rank's call time ([GLEX] Alg. 6: sum per rank, max over ranks / N)
 *   avg_us   mean over iterations and ranks of the call time (OSU's average latency [DPML17]; [Qian08]'s metric)
 *   median_max_us  median over iterations of the slowest rank's time ([BruckNU]: median of runs)
 * Buffers are SMPI_SHARED_MALLOC'd under SMPI (memory folding: contents are not checked, only timed).
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef WITH_PLANCOLL
#include "plancoll.h"
#endif
#ifdef SMPI_H /* SMPI's mpi.h includes smpi/smpi.h */
#define BUF_ALLOC(n) SMPI_SHARED_MALLOC((n) > 0 ? (n) : 1)
#define BUF_FREE(p) SMPI_SHARED_FREE(p)
#define DELAY_SECONDS(s) smpi_execute(s)
#else
#include <time.h>
#define BUF_ALLOC(n) malloc((n) > 0 ? (n) : 1)
#define BUF_FREE(p) free(p)
static void DELAY_SECONDS(double s)
{
    double end = MPI_Wtime() + s;
    while (MPI_Wtime() < end) {}
}
#endif

static uint64_t splitmix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}
static int pair_bytes(uint64_t seed, long maxb, int i, int j, int P)
{
    return (int)(splitmix(seed ^ ((uint64_t)i * (uint64_t)P + (uint64_t)j)) % ((uint64_t)maxb + 1));
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (argc < 3) {
        if (rank == 0) fprintf(stderr, "usage: smpi-mpi-coll alltoall|allreduce|alltoallv BYTES [--iters N] "
                                       "[--warmup W] [--seed S] [--mif X] [--ppn K] [--label TEXT]\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    const char *coll = argv[1];
    long bytes = atol(argv[2]);
    int iters = 10, warmup = 1, ppn = 0;
    uint64_t seed = 1;
    double mif = 0;
    const char *label = "";
    int use_plancoll = 0;
    for (int a = 3; a + 1 < argc; a += 2) {
        if (!strcmp(argv[a], "--iters")) iters = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--warmup")) warmup = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--seed")) seed = strtoull(argv[a + 1], NULL, 10);
        else if (!strcmp(argv[a], "--mif")) mif = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--ppn")) ppn = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--label")) label = argv[a + 1];
        else if (!strcmp(argv[a], "--plancoll")) use_plancoll = atoi(argv[a + 1]);
        else {
            if (rank == 0) fprintf(stderr, "smpi-mpi-coll: unknown option %s\n", argv[a]);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    if (iters < 1 || iters > 100000 || bytes < 0 || (strcmp(coll, "alltoall") && strcmp(coll, "allreduce") &&
                                                      strcmp(coll, "alltoallv"))) {
        if (rank == 0) fprintf(stderr, "smpi-mpi-coll: bad collective, size or iterations\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
#ifndef WITH_PLANCOLL
    if (use_plancoll) {
        if (rank == 0) fprintf(stderr, "smpi-mpi-coll: --plancoll needs a build with -DWITH_PLANCOLL\n");
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
#endif

    char *sbuf = NULL, *rbuf = NULL;
    int *scounts = NULL, *sdispls = NULL, *rcounts = NULL, *rdispls = NULL;
    int count = 0;
    if (!strcmp(coll, "alltoall")) {
        sbuf = BUF_ALLOC((size_t)P * bytes);
        rbuf = BUF_ALLOC((size_t)P * bytes);
    } else if (!strcmp(coll, "allreduce")) {
        count = (int)(bytes / sizeof(float));
        sbuf = BUF_ALLOC((size_t)count * sizeof(float));
        rbuf = BUF_ALLOC((size_t)count * sizeof(float));
    } else {
        scounts = malloc(4 * sizeof(int) * (size_t)P);
        sdispls = scounts + P, rcounts = scounts + 2 * P, rdispls = scounts + 3 * P;
        long st = 0, rt = 0;
        for (int j = 0; j < P; j++) {
            scounts[j] = pair_bytes(seed, bytes, rank, j, P), sdispls[j] = (int)st, st += scounts[j];
            rcounts[j] = pair_bytes(seed, bytes, j, rank, P), rdispls[j] = (int)rt, rt += rcounts[j];
        }
        sbuf = BUF_ALLOC((size_t)st);
        rbuf = BUF_ALLOC((size_t)rt);
    }

    /* t_block for the skew: half a ping-pong of one block with the first rank of another node */
    double t_block = 0;
    if (mif > 0) {
        int peer = ppn > 0 && ppn < P ? ppn : 1;
        long m = bytes > 0 ? bytes : 1;
        char *pp = BUF_ALLOC((size_t)m);
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0 || rank == peer) {
            double t0 = MPI_Wtime();
            for (int k = 0; k < 10; k++) {
                if (rank == 0) {
                    MPI_Send(pp, (int)m, MPI_BYTE, peer, 7, MPI_COMM_WORLD);
                    MPI_Recv(pp, (int)m, MPI_BYTE, peer, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else {
                    MPI_Recv(pp, (int)m, MPI_BYTE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(pp, (int)m, MPI_BYTE, 0, 7, MPI_COMM_WORLD);
                }
            }
            t_block = (MPI_Wtime() - t0) / 20;
        }
        MPI_Bcast(&t_block, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        BUF_FREE(pp);
    }

#ifdef WITH_PLANCOLL
    plancoll_plan plan = NULL;
    char spec[256] = "";
    if (use_plancoll) {
        int rc = !strcmp(coll, "alltoall")
                     ? plancoll_plan_alltoall(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD,
                                              PLANCOLL_ESTIMATE, &plan)
                 : !strcmp(coll, "allreduce")
                     ? plancoll_plan_allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE,
                                               &plan)
                     : plancoll_plan_alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls, MPI_BYTE,
                                               MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan);
        if (rc != PLANCOLL_SUCCESS) {
            if (rank == 0) fprintf(stderr, "smpi-mpi-coll: %s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
            MPI_Abort(MPI_COMM_WORLD, 4);
        }
        if (plancoll_plan_spec(plan, spec, sizeof spec) != PLANCOLL_SUCCESS) snprintf(spec, sizeof spec, "plancoll");
        label = spec;
    }
#endif
    double *mine = malloc(sizeof(double) * (size_t)iters), *slowest = malloc(sizeof(double) * (size_t)iters);
    double *meanr = malloc(sizeof(double) * (size_t)iters);
    uint64_t rng = splitmix(seed * 7919 + (uint64_t)rank);
    for (int it = -warmup; it < iters; it++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (mif > 0) {
            rng = splitmix(rng);
            DELAY_SECONDS((double)(rng >> 11) / 9007199254740992.0 * mif * t_block);
        }
        double t0 = MPI_Wtime();
#ifdef WITH_PLANCOLL
        if (plan) {
            if (plancoll_execute(plan) != PLANCOLL_SUCCESS) {
                fprintf(stderr, "smpi-mpi-coll: rank %d: %s\n", rank, plancoll_error_detail());
                MPI_Abort(MPI_COMM_WORLD, 4);
            }
        } else
#endif
        if (!strcmp(coll, "alltoall"))
            MPI_Alltoall(sbuf, (int)bytes, MPI_BYTE, rbuf, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(coll, "allreduce"))
            MPI_Allreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Alltoallv(sbuf, scounts, sdispls, MPI_BYTE, rbuf, rcounts, rdispls, MPI_BYTE, MPI_COMM_WORLD);
        double t = MPI_Wtime() - t0;
        if (it >= 0) mine[it] = t;
    }
    MPI_Reduce(mine, slowest, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(mine, meanr, iters, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        double smax = 0, savg = 0;
        for (int i = 0; i < iters; i++) smax += slowest[i], savg += meanr[i] / P;
        qsort(slowest, (size_t)iters, sizeof(double), cmp_double);
        double med = iters % 2 ? slowest[iters / 2] : (slowest[iters / 2 - 1] + slowest[iters / 2]) / 2;
        printf("{\"collective\": \"%s\", \"bytes\": %ld, \"ranks\": %d, \"iters\": %d, \"mif\": %g, "
               "\"t_block_us\": %.4f, \"max_us\": %.4f, \"avg_us\": %.4f, \"median_max_us\": %.4f, \"label\": \"%s\"}\n",
               coll, bytes, P, iters, mif, t_block * 1e6, smax / iters * 1e6, savg / iters * 1e6, med * 1e6, label);
        fflush(stdout);
    }
    free(mine), free(slowest), free(meanr);
#ifdef WITH_PLANCOLL
    if (plan) plancoll_destroy_plan(&plan);
#endif
    BUF_FREE(sbuf), BUF_FREE(rbuf);
    free(scounts);
    MPI_Finalize();
    return 0;
}
