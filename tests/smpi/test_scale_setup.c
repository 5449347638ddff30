/* Plan creation and execution at the scale where SimGrid 3.32 used to crash on plancoll (docs/smpi.md, "SimGrid
 * 3.32's nonblocking collectives at scale"): from about 96 ranks over several simulated hosts, SMPI's nonblocking
 * collectives (plancoll's plan-time MPI_Iallgather of the node census) ended the simulation in SimGrid's max-min
 * solver. Run on 4 nodes of 28 ranks (112): an allreduce of 1024 ints planned by ESTIMATE, then forced to the
 * node-aware dpml, executed twice each, every element checked exactly. */
#include <stdlib.h>

#include "../mpi/testlib.h"

enum { N = 1024 };

static void run(const char *algorithm)
{
    int *x = malloc(sizeof(int) * N), *y = malloc(sizeof(int) * N);
    if (!x || !y) MPI_Abort(MPI_COMM_WORLD, 2);
    tl_force(algorithm);
    plancoll_plan plan = NULL;
    TL_OK(plancoll_plan_allreduce(x, y, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan));
    tl_force(NULL);
    for (int round = 0; plan && round < 2; round++) {
        for (int i = 0; i < N; i++) x[i] = tl_rank * 3 + i % 7 + round, y[i] = -1;
        TL_OK(plancoll_execute(plan));
        long wrong = 0;
        for (int i = 0; i < N; i++) {
            long want = 3L * tl_size * (tl_size - 1) / 2 + (long)tl_size * (i % 7 + round);
            if (y[i] != want) wrong++;
        }
        TL_CHECK(wrong == 0, "%s round %d: %ld wrong elements", algorithm ? algorithm : "ESTIMATE", round, wrong);
    }
    if (plan) TL_OK(plancoll_destroy_plan(&plan));
    free(x);
    free(y);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "scale_setup");
    run(NULL);
    run("allreduce.dpml");
    return tl_finish();
}
