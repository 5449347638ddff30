/* The native candidates' one request (alltoall.native, alltoallv.native, allreduce.native): MPI's own
 * collective, as a persistent request (MPI-4 *_init) bound to the plan's buffers, started and waited with the
 * library's wait policy; on other buffers (plancoll_execute_buffers) the nonblocking collective instead, since a
 * persistent request is bound to its buffers.  Each candidate supplies only the two MPI calls. */
#ifndef PC_NATIVE_REQUEST_H
#define PC_NATIVE_REQUEST_H

#include "exec/plan.h"

/* Makes the persistent request over the plan's own buffers (plan->sendbuf, plan->recvbuf). A plancoll error code
 * (PC_MPI_CHECK). */
typedef int (*pc_native_init_fn)(struct plancoll_plan_s *plan, MPI_Request *req);
/* Posts the nonblocking collective over sbuf and rbuf. A plancoll error code (PC_MPI_CHECK). */
typedef int (*pc_native_post_fn)(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, MPI_Request *req);

/* Setup: plan->impl becomes the persistent request, made by init (kept, and freed by pc_native_teardown, when
 * init fails). */
int pc_native_setup(struct plancoll_plan_s *plan, pc_native_init_fn init);
/* Frees the persistent request and the state. */
void pc_native_teardown(struct plancoll_plan_s *plan);
/* Execute: starts and waits the persistent request on the planned buffers, else posts (post) and waits. */
int pc_native_execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, pc_native_post_fn post);

#endif
