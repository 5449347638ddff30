/* calibration-probe: calibrates the machine model on MPI_COMM_WORLD (PLANCOLL_CALIBRATE=1, no wisdom) by
 * planning a fixed list of problems with PLANCOLL_ESTIMATE, and prints on rank 0 the calibrated model's text
 * ("model <line>") and the algorithm ESTIMATE chose for each problem ("choice <problem> <algorithm(params)>
 * <estimate us> <runner-up algorithm> <its estimate us>").
 * bench/calibration-stability.sh runs it N times in fresh processes and compares the runs. It links the
 * internals to read the remembered model and the chosen algorithm. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/handles.h"
#include "base/model.h"
#include "plancoll.h"

static void report(plancoll_plan h, const char *what, int rank)
{
    const struct plancoll_plan_s *p = pc_plan_lookup(h);
    if (rank == 0 && p)
        printf("choice %s %s(l=%d,pl=%d,seg=%d,tr=%d,rad=%d,in=%d) %.6g %s %.6g\n", what, p->alg->name, p->params.leaders,
               p->params.placement, p->params.segments, p->params.transport, p->params.radix, p->params.inter,
               p->predicted_us, p->runner_up[0] ? p->runner_up : "-", p->runner_up_us);
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "calibration-probe: %s failed (%d): %s\n", what, rc, plancoll_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 2);
    return 2;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, P;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    static const int a2a_bytes[] = {8, 64, 256, 1024, 4096, 16384, 65536, 262144};
    static const int ar_doubles[] = {1, 16, 128, 1024, 8192, 65536, 262144};
    static const int a2av_bytes[] = {64, 1024, 16384, 131072};
    size_t most = 262144 * (size_t)P;
    char *in = calloc(most, 1), *out = calloc(most, 1);
    int *counts = malloc(sizeof(int) * (size_t)P), *displs = malloc(sizeof(int) * (size_t)P);
    if (!in || !out || !counts || !displs) return fail("allocation", 0);
    char what[96];
    plancoll_plan h;
    int rc;
    for (size_t i = 0; i < sizeof a2a_bytes / sizeof *a2a_bytes; i++) {
        if ((rc = plancoll_plan_alltoall(in, a2a_bytes[i], MPI_BYTE, out, a2a_bytes[i], MPI_BYTE, MPI_COMM_WORLD,
                                         PLANCOLL_ESTIMATE, &h)))
            return fail("alltoall", rc);
        snprintf(what, sizeof what, "alltoall:%d", a2a_bytes[i]);
        report(h, what, rank);
        plancoll_destroy_plan(&h);
    }
    for (size_t i = 0; i < sizeof ar_doubles / sizeof *ar_doubles; i++) {
        if ((rc = plancoll_plan_allreduce(in, out, ar_doubles[i], MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE,
                                          &h)))
            return fail("allreduce", rc);
        snprintf(what, sizeof what, "allreduce:double:sum:%d", ar_doubles[i]);
        report(h, what, rank);
        plancoll_destroy_plan(&h);
    }
    for (size_t i = 0; i < sizeof a2av_bytes / sizeof *a2av_bytes; i++) {
        for (int r = 0; r < P; r++) {
            counts[r] = a2av_bytes[i];
            displs[r] = r * a2av_bytes[i];
        }
        if ((rc = plancoll_plan_alltoallv(in, counts, displs, MPI_BYTE, out, counts, displs, MPI_BYTE, MPI_COMM_WORLD,
                                          PLANCOLL_ESTIMATE, &h)))
            return fail("alltoallv", rc);
        snprintf(what, sizeof what, "alltoallv:uniform:%d", a2av_bytes[i]);
        report(h, what, rank);
        plancoll_destroy_plan(&h);
    }
    if (rank == 0) {
        for (int i = 0; i < pc_model_count(); i++) {
            char *text = NULL;
            size_t len = 0, cap = 0;
            if (pc_model_format(pc_model_at(i), &text, &len, &cap) == 0) {
                for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) printf("model %s\n", line);
            }
            free(text);
        }
        fflush(stdout);
    }
    free(in);
    free(out);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}
