/* Waiting on MPI requests with the library's wait policy (shm/wait.h), and the plan-time collectives built on
 * it. Internal. */
#ifndef PC_REQUESTS_H
#define PC_REQUESTS_H

#include <mpi.h>

struct pc_layout;

/* Waits for n requests with the library's wait policy (MPI_Testall in a yielding loop). */
int pc_wait_layout(const struct pc_layout *layout, int n, MPI_Request *reqs);
/* Collectives on the layout's communicator, nonblocking and waited with the wait policy. */
int pc_allreduce_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op);
int pc_alltoall_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t);
int pc_bcast_wait(const struct pc_layout *layout, void *buf, int n, MPI_Datatype t, int root);
int pc_barrier_wait(const struct pc_layout *layout);

#endif
