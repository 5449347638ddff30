/* Waiting on MPI requests with the library's wait policy: MPI_Testall in a loop that spins briefly or
 * yields, never a blocking MPI_Wait (DESIGN.md: on an oversubscribed node a spinning wait costs a slice). */
#include "../core/plan.h"
#include "../shm/layout.h"
#include "../shm/wait.h"

/* GCC 12 reads MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) as a zero-size array: a false positive. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
/* MPICH 4.0.2's MPI_Testall fails (MPI_ERR_IN_STATUS, status error 0) on a persistent collective request;
 * MPI_Test works, and a single request is the common case anyway. */
static int test_requests(int n, MPI_Request *reqs, int *done)
{
    if (n == 1) return MPI_Test(reqs, done, MPI_STATUS_IGNORE);
    return MPI_Testall(n, reqs, done, MPI_STATUSES_IGNORE);
}

int pc_wait_all(const struct plancoll_plan_s *plan, int n, MPI_Request *reqs)
{
    if (n <= 0) return PLANCOLL_SUCCESS;
    int done = 0;
    PC_MPI_CHECK(test_requests(n, reqs, &done));
    if (done) return PLANCOLL_SUCCESS;
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    for (;;) {
        pc_waiter_pause(&w);
        PC_MPI_CHECK(test_requests(n, reqs, &done));
        if (done) return PLANCOLL_SUCCESS;
    }
}
#pragma GCC diagnostic pop
