/* The native candidates' one request (alltoall.native, alltoallv.native, allreduce.native): MPI's own
 * collective, as a persistent request (MPI-4 *_init) bound to the plan's buffers, started and then tested (a
 * one-step schedule, exec/steps.h: MPI_Start is local, MPI_Test never blocks), waited with the library's wait
 * policy when executed; on other buffers (plancoll_execute_buffers, plancoll_start_buffers) the nonblocking
 * collective instead, since a persistent request is bound to its buffers.  Each candidate supplies only the two MPI
 * calls (and, for allreduce, what to do once the result is in).
 * Without persistent collectives in the MPI (shm/mpi_compat.h: Open MPI 4.1 has only the MPIX_ forms of its
 * pcollreq extension, other MPI-3.1s none) a candidate has no init, and every execution posts the nonblocking
 * collective on the planned buffers too: MPI then makes its schedule, and allocates, per execution; the
 * library's own part still allocates nothing. */
#ifndef PC_NATIVE_REQUEST_H
#define PC_NATIVE_REQUEST_H

#include "exec/plan.h"
#include "exec/steps.h"

/* How MPI's own collective runs, for the candidates' summaries. */
#if PC_HAVE_PERSISTENT_COLL
#define PC_NATIVE_FORM "persistent"
#else
#define PC_NATIVE_FORM "nonblocking (no persistent collectives in this MPI)"
#endif

/* Makes the persistent request over the plan's own buffers (plan->sendbuf, plan->recvbuf). A plancoll error code
 * (PC_MPI_CHECK). */
typedef int (*pc_native_init_fn)(struct plancoll_plan_s *plan, MPI_Request *req);
/* Posts the nonblocking collective over sbuf and rbuf. A plancoll error code (PC_MPI_CHECK). */
typedef int (*pc_native_post_fn)(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, MPI_Request *req);

/* The state: the persistent request, the nonblocking one of an execution on other buffers, the schedule. */
struct pc_native {
    MPI_Request persistent, once;
    pc_native_post_fn post;
    struct pc_steps steps;
};

/* Setup: plan->impl becomes the state, its persistent request made by init (kept, and freed by pc_native_teardown,
 * when init fails); post runs the executions on other buffers, and all executions when init is NULL. */
int pc_native_setup(struct plancoll_plan_s *plan, pc_native_init_fn init, pc_native_post_fn post);
/* Frees the persistent request and the state. */
void pc_native_teardown(struct plancoll_plan_s *plan);
/* Start: MPI_Start on the planned buffers, else the nonblocking collective (post); advance: MPI_Test. finish (NULL:
 * none) runs once the request is complete. */
int pc_native_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
int pc_native_advance(struct plancoll_plan_s *plan, bool *done, pc_step_finish_fn finish);

/* Why MPI's own collective cannot take this problem on this MPI, or NULL. Under SimGrid SMPI 3.32, MPI_IN_PLACE is
 * served by a temporary copy of count x extent bytes made with the receive type, which a type whose data do not
 * start at its lower bound 0 overruns (measured: heap corruption in MPI_Alltoall in place with the hindexed types
 * of plancoll's tests), and which the nonblocking forms free before the collective has read it: in place is left
 * to plancoll's own algorithms there. */
static inline const char *pc_native_in_place_unfit(const struct pc_problem *p)
{
    if (PC_MPI_SIMULATED && (p->in_place || p->some_in_place))
        return "SimGrid SMPI's in-place collectives mishandle their temporary copy (docs/smpi.md)";
    return NULL;
}

/* The variants of the blocking form of MPI's own collective (the *.native_blocking candidates): the one default set,
 * or none where it is not offered. That form executes by calling MPI's blocking collective, which waits in MPI's
 * own way: on a host holding more ranks than cores, MPICH 4.0.2 spins there without yielding and each round waits
 * for a scheduler time slice (8 ranks on 2 cores: 18-330 ms per MPI_Alltoall or MPI_Allreduce, against 0.2-36 ms
 * for the same collective started and yield-waited; bench/results/2n4p-tcp-*.txt, the mpi:blocking and
 * plancoll:*.native rows), so it is not offered there. Nor for a plan that will be started or overlapped: that
 * runs the persistent form, which the *.native candidate already is. Forced, it runs (as the put transports). */
static inline int pc_native_blocking_variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    if (max < 1 || p->shape.oversubscribed || (p->flags & (PLANCOLL_NONBLOCKING | PLANCOLL_OVERLAP))) return 0;
    out[0] = (struct pc_params){0};
    return 1;
}

#endif
