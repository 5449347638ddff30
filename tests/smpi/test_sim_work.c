/* Node-local work as simulated time (src/shm/sim_work.h; docs/smpi.md "Node-local work"): with
 * PLANCOLL_SIM_COPY_GBPS and PLANCOLL_SIM_REDUCE_GBPS set, an execution's copies and reductions advance the
 * simulated clock by bytes / rate, a node's concurrent copies sharing its memory; unset, they are free. Run on two
 * simulated nodes, of two ranks and one (make-platform.py: each node's memory 10 GB/s):
 *   - allreduce.recursive_doubling of N doubles between world ranks 0 and 2 (one rank a node): the higher rank
 *     copies its input into the working vector, reduces (mine op peer's) into the scratch vector and copies that
 *     into its output, so the rates add one reduction and two copies of N doubles to the time of the same plan
 *     unset (within 1%: the clock's rounding and MPI_Wtime's own injected time);
 *   - every rank's result is checked exactly, with the rates set and unset, and dpml runs with them set;
 *   - the node's memory: at a copy rate of 10 GB/s, 8 MiB copied by every rank at once takes the two ranks of
 *     node 0 twice as long as the rank alone on node 1 (10 GB/s shared by two), each within 1% of that;
 *   - a malformed rate fails plan creation with PLANCOLL_ERR_ENV on every rank, naming the variable. */
#include <stdlib.h>
#include <string.h>

#include "../mpi/testlib.h"
#include "shm/sim_work.h"

enum { N = 1 << 17 }; /* 1 MiB of doubles */
#define COPY_GBPS 2.0
#define REDUCE_GBPS 0.5

static MPI_Comm pair; /* world ranks 0 and 2: one rank on each node; MPI_COMM_NULL on rank 1 */
static int pair_rank;

/* tl_force over the pair (tl_force's barrier is MPI_COMM_WORLD's, which rank 1 does not join meanwhile): under SMPI
 * the ranks share one environment, so both pass a barrier before it changes. */
static void force(const char *name)
{
    tl_barrier(pair);
    if (name)
        setenv("PLANCOLL_ALGORITHM", name, 1);
    else
        unsetenv("PLANCOLL_ALGORITHM");
}

/* The slowest rank's time of one execution over `pair` (simulated seconds), every element checked. */
static double timed_execution(const char *algorithm, const char *label)
{
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    if (!x || !y) MPI_Abort(MPI_COMM_WORLD, 2);
    force(algorithm);
    plancoll_plan plan = NULL;
    TL_OK(plancoll_plan_allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, pair, PLANCOLL_ESTIMATE, &plan));
    force(NULL);
    double slowest = 0;
    for (int round = 0; plan && round < 2; round++) {
        for (int i = 0; i < N; i++) x[i] = pair_rank + i % 5 + round, y[i] = -1;
        tl_barrier(pair);
        double t0 = MPI_Wtime();
        TL_OK(plancoll_execute(plan));
        double t = MPI_Wtime() - t0;
        tl_allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, pair);
        long wrong = 0;
        for (int i = 0; i < N; i++) { /* small integers: every order of summation is exact */
            double want = 1.0 + 2.0 * (i % 5 + round);
            if (y[i] != want) wrong++;
        }
        TL_CHECK(wrong == 0, "%s, %s, round %d: %ld wrong elements", algorithm, label, round, wrong);
    }
    if (plan) TL_OK(plancoll_destroy_plan(&plan));
    free(x);
    free(y);
    return slowest; /* the last round's: the first may include first-touch work of the set-up */
}

static void set_rates(const char *copy, const char *reduce)
{
    if (copy) setenv("PLANCOLL_SIM_COPY_GBPS", copy, 1);
    else unsetenv("PLANCOLL_SIM_COPY_GBPS");
    if (reduce) setenv("PLANCOLL_SIM_REDUCE_GBPS", reduce, 1);
    else unsetenv("PLANCOLL_SIM_REDUCE_GBPS");
}

static void refused(const char *copy, const char *reduce, const char *variable)
{
    set_rates(copy, reduce);
    double x[4] = {0}, y[4];
    plancoll_plan plan = NULL;
    int rc = plancoll_plan_allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, pair, PLANCOLL_ESTIMATE, &plan);
    TL_CHECK(rc == PLANCOLL_ERR_ENV && plan == NULL && strstr(plancoll_error_detail(), variable),
             "copy '%s', reduce '%s': got %d (%s), want PLANCOLL_ERR_ENV naming %s", copy ? copy : "(unset)",
             reduce ? reduce : "(unset)", rc, plancoll_error_detail(), variable);
    if (plan) plancoll_destroy_plan(&plan);
}

/* Every rank copies `bytes` through the charge at once; returns this rank's simulated seconds. */
static double concurrent_copy(size_t bytes)
{
    tl_barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    pc_sim_work(PC_SIM_COPY, bytes);
    return MPI_Wtime() - t0;
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "sim_work");
    TL_CHECK(tl_size == 3, "run on nodes of 2 and 1 ranks (got %d ranks)", tl_size);
    /* First, every rank together: the node's memory, one core's copy rate equal to the node's 10 GB/s */
    set_rates("10", "10");
    TL_OK(pc_sim_work_setting());
    const size_t copy = (size_t)8 << 20;
    const double alone = (double)copy / 10e9, t = concurrent_copy(copy), want = tl_rank < 2 ? 2 * alone : alone;
    TL_CHECK(t >= want * 0.99 && t <= want * 1.01, "rank %d (%s) copied 8 MiB in %.1f us; want %.1f (10 GB/s %s)",
             tl_rank, tl_rank < 2 ? "node 0, with rank 1 or 0" : "node 1, alone", t * 1e6, want * 1e6,
             tl_rank < 2 ? "shared by two" : "alone");
    set_rates(NULL, NULL);
    TL_OK(pc_sim_work_setting());
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank == 1 ? MPI_UNDEFINED : 0, tl_rank, &pair);

    if (pair != MPI_COMM_NULL) {
        MPI_Comm_rank(pair, &pair_rank);
        set_rates(NULL, NULL);
        double unset = timed_execution("allreduce.recursive_doubling", "rates unset");
        set_rates("2", "0.5");
        double charged = timed_execution("allreduce.recursive_doubling", "rates set");
        double bytes = (double)N * sizeof(double), reduce_s = bytes * 1e-9 / REDUCE_GBPS,
               copy_s = bytes * 1e-9 / COPY_GBPS;
        double added = charged - unset, want = reduce_s + 2 * copy_s;
        TL_CHECK(added >= want * 0.99 && added <= want * 1.01,
                 "recursive doubling: the rates added %.1f us to %.1f us; want %.1f (a reduction of %.1f and two "
                 "copies of %.1f)", added * 1e6, unset * 1e6, want * 1e6, reduce_s * 1e6, copy_s * 1e6);
        if (tl_rank == 0)
            printf("# recursive doubling of %d doubles: %.1f us unset, %.1f us with copies at %g GB/s and reductions "
                   "at %g GB/s\n", N, unset * 1e6, charged * 1e6, COPY_GBPS, REDUCE_GBPS);
        double dpml = timed_execution("allreduce.dpml", "rates set");
        TL_CHECK(dpml >= reduce_s * 0.5 * 0.999, "dpml with the rates set took %.1f us: less than a reduction of "
                 "half the vector (%.1f us)", dpml * 1e6, reduce_s * 0.5 * 1e6);
        refused("fast", "0.5", "PLANCOLL_SIM_COPY_GBPS");
        refused("2", "0", "PLANCOLL_SIM_REDUCE_GBPS");
        refused("-1", NULL, "PLANCOLL_SIM_COPY_GBPS");
        refused(NULL, "1e999", "PLANCOLL_SIM_REDUCE_GBPS");
        refused("2GB", NULL, "PLANCOLL_SIM_COPY_GBPS");
        MPI_Comm_free(&pair);
    }
    tl_barrier(MPI_COMM_WORLD);
    return tl_finish();
}
