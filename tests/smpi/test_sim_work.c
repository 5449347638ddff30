/* Node-local work as simulated time (src/shm/sim_work.h; docs/smpi.md "Node-local work"): with
 * PLANCOLL_SIM_COPY_GBPS and PLANCOLL_SIM_REDUCE_GBPS set, an execution's copies and reductions advance the
 * simulated clock by bytes / rate; unset, they are free. Run on two simulated hosts of one rank each:
 *   - allreduce.recursive_doubling of N doubles at 2 ranks: the higher rank copies its input into the working
 *     vector, reduces (mine op peer's) into the scratch vector and copies that into its output, so the rates add
 *     one reduction and two copies of N doubles to the time of the same plan unset (within 1%: the clock's
 *     rounding and MPI_Wtime's own injected time);
 *   - every rank's result is checked exactly, with the rates set and unset, and dpml runs with them set;
 *   - a malformed rate fails plan creation with PLANCOLL_ERR_ENV on every rank, naming the variable. */
#include <stdlib.h>
#include <string.h>

#include "../mpi/testlib.h"

enum { N = 1 << 17 }; /* 1 MiB of doubles */
#define COPY_GBPS 2.0
#define REDUCE_GBPS 0.5

/* The slowest rank's time of one execution (simulated seconds), every element checked. */
static double timed_execution(const char *algorithm, const char *label)
{
    double *x = malloc(sizeof(double) * N), *y = malloc(sizeof(double) * N);
    if (!x || !y) MPI_Abort(MPI_COMM_WORLD, 2);
    tl_force(algorithm);
    plancoll_plan plan = NULL;
    TL_OK(plancoll_plan_allreduce(x, y, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan));
    tl_force(NULL);
    double slowest = 0;
    for (int round = 0; plan && round < 2; round++) {
        for (int i = 0; i < N; i++) x[i] = tl_rank + i % 5 + round, y[i] = -1;
        tl_barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        TL_OK(plancoll_execute(plan));
        double t = MPI_Wtime() - t0;
        tl_allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        long wrong = 0;
        for (int i = 0; i < N; i++) { /* small integers: every order of summation is exact */
            double want = (double)tl_size * (tl_size - 1) / 2 + (double)tl_size * (i % 5 + round);
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
    int rc = plancoll_plan_allreduce(x, y, 4, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan);
    TL_CHECK(rc == PLANCOLL_ERR_ENV && plan == NULL && strstr(plancoll_error_detail(), variable),
             "copy '%s', reduce '%s': got %d (%s), want PLANCOLL_ERR_ENV naming %s", copy ? copy : "(unset)",
             reduce ? reduce : "(unset)", rc, plancoll_error_detail(), variable);
    if (plan) plancoll_destroy_plan(&plan);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "sim_work");
    TL_CHECK(tl_size == 2, "run on two simulated hosts of one rank each (got %d ranks)", tl_size);
    set_rates(NULL, NULL);
    double unset = timed_execution("allreduce.recursive_doubling", "rates unset");
    set_rates("2", "0.5");
    double charged = timed_execution("allreduce.recursive_doubling", "rates set");
    double bytes = (double)N * sizeof(double), reduce_s = bytes * 1e-9 / REDUCE_GBPS, copy_s = bytes * 1e-9 / COPY_GBPS;
    double added = charged - unset;
    double want = reduce_s + 2 * copy_s;
    TL_CHECK(added >= want * 0.99 && added <= want * 1.01,
             "recursive doubling: the rates added %.1f us to %.1f us; want %.1f (a reduction of %.1f and two copies "
             "of %.1f)", added * 1e6, unset * 1e6, want * 1e6, reduce_s * 1e6, copy_s * 1e6);
    if (tl_rank == 0)
        printf("# recursive doubling of %d doubles: %.1f us unset, %.1f us with copies at %g GB/s and reductions at "
               "%g GB/s\n", N, unset * 1e6, charged * 1e6, COPY_GBPS, REDUCE_GBPS);
    double dpml = timed_execution("allreduce.dpml", "rates set");
    TL_CHECK(dpml >= reduce_s * 0.5 * 0.999, "dpml with the rates set took %.1f us: less than a reduction of half "
             "the vector (%.1f us)", dpml * 1e6, reduce_s * 0.5 * 1e6);
    refused("fast", "0.5", "PLANCOLL_SIM_COPY_GBPS");
    refused("2", "0", "PLANCOLL_SIM_REDUCE_GBPS");
    refused("-1", NULL, "PLANCOLL_SIM_COPY_GBPS");
    refused(NULL, "1e999", "PLANCOLL_SIM_REDUCE_GBPS");
    refused("2GB", NULL, "PLANCOLL_SIM_COPY_GBPS");
    set_rates(NULL, NULL);
    return tl_finish();
}
