/* A program built against an installed plancoll through pkg-config alone (tests/install/one-prefix.sh): plans an
 * allreduce of the ranks' numbers, executes it twice and checks the sum; prints the MPI the library was built for. */
#include <mpi.h>
#include <plancoll.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long in[3], out[3];
    for (int i = 0; i < 3; i++) in[i] = (long)(rank + 1) * (i + 1);
    plancoll_plan plan;
    int rc = plancoll_plan_allreduce(in, out, 3, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan);
    int bad = rc != PLANCOLL_SUCCESS;
    for (int round = 0; round < 2 && !bad; round++) {
        out[0] = out[1] = out[2] = -1;
        bad = plancoll_execute(plan) != PLANCOLL_SUCCESS;
        for (int i = 0; i < 3 && !bad; i++) bad = out[i] != (long)size * (size + 1) / 2 * (i + 1);
    }
    if (rc == PLANCOLL_SUCCESS) plancoll_destroy_plan(&plan);
    int any;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(version, &len);
    if (rank == 0) printf("consumer: %s on %d ranks, %.20s\n", any ? "FAIL" : "PASS", size, version);
    MPI_Finalize();
    return any;
}
