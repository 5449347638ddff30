/* Waiting on MPI requests with the library's wait policy (shm/wait.h), and the plan-time collectives built on
 * it. Internal. */
#ifndef PC_REQUESTS_H
#define PC_REQUESTS_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/errors.h"

struct pc_layout;

/* Tests n requests once (never blocks): *done when every one is complete (and freed or inactive). */
int pc_test_requests(int n, MPI_Request *reqs, bool *done);
/* Waits for n requests with the library's wait policy (MPI_Testall in a yielding loop). */
int pc_wait_layout(const struct pc_layout *layout, int n, MPI_Request *reqs);
/* Collectives on the layout's communicator, nonblocking and waited with the wait policy. */
int pc_allreduce_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op);
int pc_alltoall_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t);
/* An allgather of n elements per rank (what names it in an error); posted whatever happened before, so a rank that
 * failed earlier still matches its peers' call. Under SimGrid SMPI the blocking MPI_Allgather: SMPI 3.32's
 * MPI_Iallgather(v) crashes the simulator from about 96 ranks over several hosts (docs/smpi.md). */
int pc_allgather_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t,
                      const char *what);
/* The same over comm, another communicator of the layout (its node or leaders' communicator). */
int pc_allgather_comm_wait(const struct pc_layout *layout, MPI_Comm comm, const void *in, void *out, int n,
                           MPI_Datatype t, const char *what);
int pc_bcast_wait(const struct pc_layout *layout, void *buf, int n, MPI_Datatype t, int root);
int pc_barrier_wait(const struct pc_layout *layout);

/* ---- agreeing on failure ----
 * Ranks must agree on failure: a rank that fails alone while the others go on into a collective leaves them
 * waiting for ever.  Every such agreement is one allreduce (MAX) over layout->comm of a flag per rank (its rank
 * + 1 when it failed, else 0), which can carry up to PC_AGREE_MAX_VALUES further values MAX-reduced in the same
 * call, so that a call site needing both adds no collective.
 *
 * The outcome, on every rank: the local error where err != 0; else the allreduce's MPI error; else
 * PLANCOLL_ERR_REMOTE when another rank failed, its detail remote_fmt (printf-style; NULL: a generic "another
 * rank failed" text, for callers that report the rank themselves); else PLANCOLL_SUCCESS.  values (n of them, n
 * <= PC_AGREE_MAX_VALUES; NULL when n == 0) hold this rank's values on entry and the maxima over the ranks on
 * return, whenever the allreduce completed.  *failed_rank (optional) receives the highest failing rank, or -1. */
#define PC_AGREE_MAX_VALUES 15
int pc_agree_failure(const struct pc_layout *layout, int err, const char *remote_fmt, ...) PC_PRINTF(3, 4);
int pc_agree_failure_max(const struct pc_layout *layout, int err, uint64_t *values, int n, int *failed_rank,
                         const char *remote_fmt, ...) PC_PRINTF(6, 7);

/* The same agreement in two halves, for a caller that overlaps it with another collective: pc_agree_start posts
 * the allreduce (a->req; MPI_REQUEST_NULL when posting failed), the caller waits for a->req with its own
 * requests (pc_wait_layout), and pc_agree_finish gives the outcome as above (wait_rc: what that wait returned). */
struct pc_agreement {
    uint64_t in[1 + PC_AGREE_MAX_VALUES], out[1 + PC_AGREE_MAX_VALUES];
    int n, err, post_rc;
    MPI_Request req;
};
void pc_agree_start(struct pc_agreement *a, const struct pc_layout *layout, int err, const uint64_t *values, int n);
int pc_agree_finish(struct pc_agreement *a, int wait_rc, uint64_t *values, int *failed_rank, const char *remote_fmt,
                    ...) PC_PRINTF(5, 6);

#endif
