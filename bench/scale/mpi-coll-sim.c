/* mpi-coll-sim: MPI's own blocking collectives timed as plancoll-bench times them, for a program that builds with
 * smpicc without plancoll (bench/scale/validate-here.sh's "simulate-mpi" stage: the platform checked on MPI's
 * collectives before plancoll itself runs under SMPI).
 *
 *   mpi-coll-sim alltoall|alltoallv|allreduce BYTES [--json FILE] [--config NAME] [--label IMPL]
 *
 * BYTES is plancoll-bench's size: a block (alltoall; alltoallv uniform: every count BYTES) or a vector of doubles
 * (allreduce, MPI_SUM). Protocol as plancoll-bench's (docs/measurement.md): 10 warm-up calls, then 5 batches of at
 * least 20 ms (and 10 calls) each, every call timed alone and reduced with MAX over ranks; the reported median is the
 * median of the batch means. The JSON has plancoll-bench's shape with one row, impl "mpi:blocking" or IMPL (e.g.
 * "smpi:alltoall.pair" when smpirun was told --cfg=smpi/alltoall:pair: SMPI's implementation of an algorithm). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BATCHES 5
#define BATCH_SECONDS 0.020
#define WARMUP 10
#define MIN_ITERS 10
#define MAX_ITERS 100000

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    const char *json = NULL, *config = "unknown", *label = "mpi:blocking";
    if (argc < 3) {
        if (me == 0) fprintf(stderr, "usage: mpi-coll-sim alltoall|alltoallv|allreduce BYTES [--json F] [--config C]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int i = 3; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--json") == 0) json = argv[i + 1];
        else if (strcmp(argv[i], "--config") == 0) config = argv[i + 1];
        else if (strcmp(argv[i], "--label") == 0) label = argv[i + 1];
    }
    const char *coll = argv[1];
    long bytes = atol(argv[2]);
    int kind = strcmp(coll, "alltoall") == 0 ? 0 : strcmp(coll, "alltoallv") == 0 ? 1 : strcmp(coll, "allreduce") == 0 ? 2 : -1;
    if (kind < 0 || bytes < 8 || (kind == 2 && bytes % 8)) {
        if (me == 0) fprintf(stderr, "mpi-coll-sim: bad collective or size\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    size_t total = kind == 2 ? (size_t)bytes : (size_t)bytes * np;
    char *send = malloc(total), *recv = malloc(total);
    int *counts = malloc(sizeof(int) * np), *displs = malloc(sizeof(int) * np);
    for (int j = 0; j < np; j++) {
        counts[j] = (int)bytes;
        displs[j] = (int)(j * bytes);
    }
    memset(send, me, total);
    double *samples = malloc(sizeof(double) * MAX_ITERS), *maxed = malloc(sizeof(double) * MAX_ITERS);
    double batch_mean[BATCHES], sum = 0, mn = 1e30, mx = 0;
    long n = 0;
    for (int b = -1; b < BATCHES; b++) {
        int iters = 0;
        double start = MPI_Wtime();
        MPI_Barrier(MPI_COMM_WORLD);
        for (;;) {
            double t0 = MPI_Wtime();
            if (kind == 0) MPI_Alltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
            else if (kind == 1)
                MPI_Alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE, MPI_COMM_WORLD);
            else MPI_Allreduce(send, recv, (int)(bytes / 8), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            samples[iters++] = MPI_Wtime() - t0;
            int more = b < 0 ? iters < WARMUP : (iters < MIN_ITERS || MPI_Wtime() - start < BATCH_SECONDS) && iters < MAX_ITERS;
            MPI_Bcast(&more, 1, MPI_INT, 0, MPI_COMM_WORLD); /* rank 0's clock decides, so all ranks agree */
            if (!more) break;
        }
        if (b < 0) continue;
        MPI_Reduce(samples, maxed, iters, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        double s = 0;
        for (int i = 0; i < iters; i++) {
            s += maxed[i];
            if (maxed[i] < mn) mn = maxed[i];
            if (maxed[i] > mx) mx = maxed[i];
        }
        sum += s;
        n += iters;
        batch_mean[b] = s / iters;
    }
    if (me == 0) {
        qsort(batch_mean, BATCHES, sizeof(double), cmp_double);
        double median = batch_mean[BATCHES / 2];
        printf("%-10s %10ld B  %s  median %.2f us  avg %.2f  min %.2f  max %.2f  (%ld calls)\n", coll, bytes,
               label, median * 1e6, sum / n * 1e6, mn * 1e6, mx * 1e6, n);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                perror(json);
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            fprintf(f, "{\n  \"collective\": \"%s\",\n  \"ranks\": %d,\n  \"configuration\": \"%s\",\n", coll, np, config);
            if (kind == 1) fprintf(f, "  \"pattern\": \"uniform\",\n");
            fprintf(f, "  \"program\": \"bench/scale/mpi-coll-sim.c\",\n  \"results\": [\n    {\"bytes\": %ld, "
                       "\"impl\": \"%s\", \"median_us\": %.4f, \"avg_us\": %.4f, \"min_us\": %.4f, "
                       "\"max_us\": %.4f, \"iterations\": %ld}\n  ]\n}\n",
                    bytes, label, median * 1e6, sum / n * 1e6, mn * 1e6, mx * 1e6, n);
            fclose(f);
        }
        printf("# mpi-coll-sim finished: exit status 0\n");
    }
    free(samples);
    free(maxed);
    free(send);
    free(recv);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
