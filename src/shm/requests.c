/* Waiting on MPI requests with the library's wait policy: MPI_Testall in a loop that spins briefly or
 * yields, never a blocking MPI_Wait (docs/design.md: on an oversubscribed node a spinning wait costs a slice). */
#include "shm/requests.h"

#include "base/errors.h"
#include "shm/layout.h"
#include "shm/mpi_error.h"
#include "shm/wait.h"

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

int pc_wait_layout(const struct pc_layout *layout, int n, MPI_Request *reqs)
{
    if (n <= 0) return PLANCOLL_SUCCESS;
    int done = 0;
    PC_MPI_CHECK(test_requests(n, reqs, &done));
    if (done) return PLANCOLL_SUCCESS;
    struct pc_waiter w;
    pc_waiter_init(&w, layout->wait_mode, layout->oversubscribed);
    for (;;) {
        pc_waiter_pause(&w);
        PC_MPI_CHECK(test_requests(n, reqs, &done));
        if (done) return PLANCOLL_SUCCESS;
    }
}
#pragma GCC diagnostic pop

/* Plan-time collectives, nonblocking and yield-waited: a blocking MPI collective spins away a scheduler
 * slice per call on an oversubscribed node, which made planning cost milliseconds. */
int pc_allreduce_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op)
{
    MPI_Request req;
    PC_MPI_CHECK(MPI_Iallreduce(in, out, n, t, op, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_alltoall_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t)
{
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ialltoall(in, n, t, out, n, t, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_bcast_wait(const struct pc_layout *layout, void *buf, int n, MPI_Datatype t, int root)
{
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ibcast(buf, n, t, root, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_barrier_wait(const struct pc_layout *layout)
{
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ibarrier(layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}
