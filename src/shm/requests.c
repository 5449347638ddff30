/* Waiting on MPI requests with the library's wait policy: MPI_Testall in a loop that spins briefly or
 * yields, never a blocking MPI_Wait (docs/design.md: on an oversubscribed node a spinning wait costs a slice). */
#include "shm/requests.h"

#include <assert.h>
#include <stdarg.h>

#include "base/errors.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h"
#include "shm/mpi_error.h"
#include "shm/wait.h"

/* GCC 12 reads MPICH's MPI_STATUSES_IGNORE ((MPI_Status *)1) as a zero-size array: a false positive. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
/* MPICH 4.0.2's MPI_Testall fails (MPI_ERR_IN_STATUS, status error 0) on a persistent collective request;
 * MPI_Test works, and a single request is the common case anyway. */
static int test_requests(int n, MPI_Request *reqs, int *done)
{
    if (n == 1) return pc_mpi_test(reqs, done, MPI_STATUS_IGNORE);
    return MPI_Testall(n, reqs, done, MPI_STATUSES_IGNORE);
}

int pc_test_requests(int n, MPI_Request *reqs, bool *done)
{
    int flag = 1;
    if (n > 0) PC_MPI_CHECK(test_requests(n, reqs, &flag));
    *done = flag != 0;
    return PLANCOLL_SUCCESS;
}

int pc_wait_layout(const struct pc_layout *layout, int n, MPI_Request *reqs)
{
    if (n <= 0) return PLANCOLL_SUCCESS;
#if PC_MPI_SIMULATED
    /* Under SMPI a blocked rank costs no core, and a request that MPI_Test completes stays in SMPI 3.32's list of
     * the rank's pending activities, which the simulator walks at every later completion (docs/smpi.md: the
     * simulation slows down as it runs). With no other plan to progress meanwhile, block. */
    if (!pc_progress_hook) {
        PC_MPI_CHECK(MPI_Waitall(n, reqs, MPI_STATUSES_IGNORE));
        return PLANCOLL_SUCCESS;
    }
#endif
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
    PC_MPI_CHECK(pc_mpi_iallreduce(in, out, n, t, op, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_alltoall_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t)
{
    MPI_Request req;
    PC_MPI_CHECK(pc_mpi_ialltoall(in, n, t, out, n, t, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_allgather_comm_wait(const struct pc_layout *layout, MPI_Comm comm, const void *in, void *out, int n,
                           MPI_Datatype t, const char *what)
{
#if PC_MPI_SIMULATED
    (void)layout;
    int rc = MPI_Allgather(in, n, t, out, n, t, comm);
    return rc == MPI_SUCCESS ? PLANCOLL_SUCCESS : pc_mpi_error(rc, what);
#else
    MPI_Request req;
    int rc = MPI_Iallgather(in, n, t, out, n, t, comm, &req);
    return rc == MPI_SUCCESS ? pc_wait_layout(layout, 1, &req) : pc_mpi_error(rc, what);
#endif
}

int pc_allgather_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t,
                      const char *what)
{
    return pc_allgather_comm_wait(layout, layout->comm, in, out, n, t, what);
}

int pc_bcast_wait(const struct pc_layout *layout, void *buf, int n, MPI_Datatype t, int root)
{
    MPI_Request req;
    PC_MPI_CHECK(pc_mpi_ibcast(buf, n, t, root, layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

int pc_barrier_wait(const struct pc_layout *layout)
{
    MPI_Request req;
    PC_MPI_CHECK(pc_mpi_ibarrier(layout->comm, &req));
    return pc_wait_layout(layout, 1, &req);
}

/* ---- agreeing on failure (requests.h) ---- */

void pc_agree_start(struct pc_agreement *a, const struct pc_layout *layout, int err, const uint64_t *values, int n)
{
    assert(n >= 0 && n <= PC_AGREE_MAX_VALUES);
    a->n = n;
    a->err = err;
    a->in[0] = err ? (uint64_t)layout->rank + 1 : 0;
    for (int i = 0; i < n; i++) a->in[1 + i] = values[i];
    for (int i = 0; i <= n; i++) a->out[i] = 0;
    a->req = MPI_REQUEST_NULL;
    a->post_rc = pc_mpi_iallreduce(a->in, a->out, 1 + n, MPI_UINT64_T, MPI_MAX, layout->comm, &a->req);
    if (a->post_rc != MPI_SUCCESS) a->req = MPI_REQUEST_NULL;
}

static int agree_finish(struct pc_agreement *a, int wait_rc, uint64_t *values, int *failed_rank,
                        const char *remote_fmt, va_list ap)
{
    int rc = a->post_rc != MPI_SUCCESS ? pc_mpi_error(a->post_rc, "MPI_Iallreduce (agreeing on failure)") : wait_rc;
    if (!rc)
        for (int i = 0; i < a->n; i++) values[i] = a->out[1 + i];
    if (failed_rank) *failed_rank = !rc && a->out[0] ? (int)(a->out[0] - 1) : -1;
    if (a->err) return a->err;
    if (rc) return rc;
    if (!a->out[0]) return PLANCOLL_SUCCESS;
    if (!remote_fmt)
        return pc_error(PLANCOLL_ERR_REMOTE, "another rank (%llu) failed (see its plancoll_error_detail)",
                        (unsigned long long)(a->out[0] - 1));
    return pc_verror(PLANCOLL_ERR_REMOTE, remote_fmt, ap);
}

int pc_agree_finish(struct pc_agreement *a, int wait_rc, uint64_t *values, int *failed_rank, const char *remote_fmt,
                    ...)
{
    va_list ap;
    va_start(ap, remote_fmt);
    int err = agree_finish(a, wait_rc, values, failed_rank, remote_fmt, ap);
    va_end(ap);
    return err;
}

int pc_agree_failure_max(const struct pc_layout *layout, int err, uint64_t *values, int n, int *failed_rank,
                         const char *remote_fmt, ...)
{
    struct pc_agreement a;
    pc_agree_start(&a, layout, err, values, n);
    int wait_rc = a.post_rc == MPI_SUCCESS ? pc_wait_layout(layout, 1, &a.req) : PLANCOLL_SUCCESS;
    va_list ap;
    va_start(ap, remote_fmt);
    err = agree_finish(&a, wait_rc, values, failed_rank, remote_fmt, ap);
    va_end(ap);
    return err;
}

int pc_agree_failure(const struct pc_layout *layout, int err, const char *remote_fmt, ...)
{
    struct pc_agreement a;
    pc_agree_start(&a, layout, err, NULL, 0);
    int wait_rc = a.post_rc == MPI_SUCCESS ? pc_wait_layout(layout, 1, &a.req) : PLANCOLL_SUCCESS;
    va_list ap;
    va_start(ap, remote_fmt);
    err = agree_finish(&a, wait_rc, NULL, NULL, remote_fmt, ap);
    va_end(ap);
    return err;
}
