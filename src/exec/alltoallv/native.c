/* alltoallv.native: MPI's persistent MPI_Alltoallv_init, yield-waited; MPI_Ialltoallv on other buffers.
 * alltoallv.native_blocking: executed by MPI's blocking MPI_Alltoallv (as alltoall/native.c says).
 * Cost: modelled as MPICH's spread-out exchange, which also sends zero-byte blocks (pc_cost_direct_v with P - 1
 * messages; S, O the busiest rank's bytes sent and sent off-node, m_e = P - min_ppn, m_i = P - 1 - m_e):
 *   m_i shm_msg((S - O) / m_i) + m_e net_concurrent(ppn, O / m_e)
 *   + native_rounds(P - 1)   (P - 1) sync_us on an oversubscribed node (cost.h), else 0 */
#include "exec/plan.h"
#include "exec/cost.h"
#include "exec/native_request.h"
#include "exec/busy.h"

#if PC_HAVE_PERSISTENT_COLL
static int init(struct plancoll_plan_s *plan, MPI_Request *req)
{
    PC_MPI_CHECK(PC_MPI_COLL_INIT(Alltoallv)(plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->sendcounts,
                                             plan->sdispls, plan->stype.type, plan->recvbuf, plan->recvcounts,
                                             plan->rdispls, plan->rtype.type, plan->comm, MPI_INFO_NULL, req));
    return PLANCOLL_SUCCESS;
}
#else
/* This MPI has no persistent collectives: every execute posts the nonblocking one (native_request.h). */
static const pc_native_init_fn init = NULL;
#endif

static int post(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, MPI_Request *req)
{
    PC_MPI_CHECK(pc_mpi_ialltoallv(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcounts, plan->sdispls,
                                plan->stype.type, rbuf, plan->recvcounts, plan->rdispls, plan->rtype.type, plan->comm,
                                req));
    return PLANCOLL_SUCCESS;
}

static int setup(struct plancoll_plan_s *plan) { return pc_native_setup(plan, init, post); }

static int advance(struct plancoll_plan_s *plan, bool *done) { return pc_native_advance(plan, done, NULL); }

/* MPI's alltoallv posts no message for an empty block: a rank sending to peers that send it nothing back waits
 * for no one (MPICH 4.0.2 at 2 nodes x 5 ranks, one rank feeding the others: 33-55 us per execution in 1 ms loops,
 * 480 us in 20 ms loops). */
static bool runs_ahead(const struct pc_problem *p) { return p->one_way; }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    const int P = p->shape.nranks;
    return pc_cost_direct_v(p, m, P - 1) + pc_cost_native_rounds(p, m, P - 1); /* busiest rank */
}


/* Busy (exec/busy.h): MPI's exchange runs in the caller's tests: its message overheads and node copies. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_busy_direct_v(p, m, p->shape.nranks - 1);
}

/* The blocking form: MPI's blocking collective on whatever buffers the execution has. */
static int execute_blocking(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    PC_MPI_CHECK(MPI_Alltoallv(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcounts, plan->sdispls,
                               plan->stype.type, rbuf, plan->recvcounts, plan->rdispls, plan->rtype.type, plan->comm));
    return PLANCOLL_SUCCESS;
}

const struct pc_algorithm pc_alltoallv_native = {
    .name = "alltoallv.native",
    .collective = PC_ALLTOALLV,
    .mpi_own = true,
    .summary = "MPI's own " PC_NATIVE_FORM " MPI_Alltoallv, yield-waited",
    .inapplicable = pc_native_in_place_unfit,
    .runs_ahead = runs_ahead,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = pc_native_start,
    .advance = advance,
    .teardown = pc_native_teardown,
};

const struct pc_algorithm pc_alltoallv_native_blocking = {
    .name = "alltoallv.native_blocking",
    .collective = PC_ALLTOALLV,
    .mpi_own = true,
    .summary = "MPI's own blocking MPI_Alltoallv (started: its " PC_NATIVE_FORM " form)",
    .inapplicable = pc_native_in_place_unfit,
    .variants = pc_native_blocking_variants,
    .runs_ahead = runs_ahead,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = execute_blocking,
    .start = pc_native_start,
    .advance = advance,
    .teardown = pc_native_teardown,
};
