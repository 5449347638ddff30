/* alltoall.native: MPI's own persistent collective (MPI_Alltoall_init; MPIX_Alltoall_init on Open MPI 4.1), started
 * and then tested (plancoll_start) or waited in plancoll's yielding loop. alltoall.native_blocking: the same
 * collective executed by MPI's blocking MPI_Alltoall (started, the persistent form), where MPI's own blocking path
 * is faster than its persistent one (Open MPI 4.1 at 1n2p: coll/tuned against libnbc) and no other rank needs the
 * core it spins on (native_request.h pc_native_blocking_variants); same cost, so ESTIMATE keeps the earlier
 * alltoall.native on the tie and MEASURE tells them apart. On other buffers (plancoll_execute_buffers),
 * and on an MPI without persistent collectives, it runs MPI_Ialltoall (native_request.h). Cost: modelled as MPICH's choice in the model's primitives:
 *   m < 256 B and P > 2: radix-2 Bruck, as alltoall.bruck (bruck_common.h):
 *     sum over steps (msg_s(k_s m) + 2 transpose(k_s m) + turns(1)) + 2 transpose(P m)
 *   else the spread-out exchange, as alltoall.pairwise (pc_cost_direct; in place pc_cost_direct_in_place):
 *     (ppn - 1) shm_msg(m) + (P - ppn) net_concurrent(ppn, m) + shm_copy(1, 1, m)   + native_rounds(P - 1)
 *   native_rounds(r) = turns(r) = r turn_us on an oversubscribed host (cost.h: each round of MPI's schedule waits
 *   for a scheduler turn there), else 0. */
#include <limits.h>

#include "exec/plan.h"
#include "exec/bruck_common.h"
#include "exec/cost.h"
#include "exec/native_request.h"
#include "exec/busy.h"

/* MPICH 4.0.2's in-place alltoall schedule (MPIR_Ialltoall_intra_sched_inplace) fails with "Out of memory" for a
 * block of more than INT_MAX bytes (measured: 2^31 + 4101 bytes fails, 2^31 - 7648 works); out of place works. */
static const char *inapplicable(const struct pc_problem *p)
{
    if (p->in_place && p->block_bytes > INT_MAX) return "MPICH's in-place alltoall cannot hold a block over 2 GiB";
    return pc_native_in_place_unfit(p);
}

#if PC_HAVE_PERSISTENT_COLL
static int init(struct plancoll_plan_s *plan, MPI_Request *req)
{
    PC_MPI_CHECK(PC_MPI_COLL_INIT(Alltoall)(plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->sendcount,
                                            plan->stype.type, plan->recvbuf, plan->recvcount, plan->rtype.type,
                                            plan->comm, MPI_INFO_NULL, req));
    return PLANCOLL_SUCCESS;
}
#else
/* This MPI has no persistent collectives: every execute posts the nonblocking one (native_request.h). */
static const pc_native_init_fn init = NULL;
#endif

static int post(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, MPI_Request *req)
{
    PC_MPI_CHECK(pc_mpi_ialltoall(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcount, plan->stype.type, rbuf,
                               plan->recvcount, plan->rtype.type, plan->comm, req));
    return PLANCOLL_SUCCESS;
}

static int setup(struct plancoll_plan_s *plan) { return pc_native_setup(plan, init, post); }

static int advance(struct plancoll_plan_s *plan, bool *done) { return pc_native_advance(plan, done, NULL); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    const int P = p->shape.nranks;
    double bytes = (double)p->block_bytes;
    if (P <= 1) return pc_cost_shm_copy(m, 1, 1, bytes);
    if (bytes < 256 && P > 2) {
        /* the steps charge a scheduler turn each (pc_bruck_steps_cost): MPI's rounds are those steps */
        return pc_bruck_steps_cost(p, 2, bytes, m) + 2.0 * pc_cost_transpose(m, P * bytes);
    }
    /* MPICH's in-place schedule swaps each pair's blocks through a temporary buffer, as pairwise does in place */
    if (p->in_place) return pc_cost_direct_in_place(p, m, bytes) + pc_cost_native_rounds(p, m, P - 1);
    return pc_cost_direct(p, m, bytes) + pc_cost_shm_copy(m, 1, 1, bytes) + pc_cost_native_rounds(p, m, P - 1);
}


/* Busy (exec/busy.h): MPI's schedule runs inside the caller's tests, so its copies and message overheads are the
 * caller's, as in the estimate's two forms; the network's time is not. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    const int P = p->shape.nranks;
    double bytes = (double)p->block_bytes;
    if (P <= 1) return pc_cost_shm_copy(m, 1, 1, bytes);
    if (bytes < 256 && P > 2) return pc_busy_bruck_steps(p, 2, bytes, m) + 2.0 * pc_cost_transpose(m, P * bytes);
    return pc_busy_direct(p, m, bytes) + pc_cost_shm_copy(m, 1, 1, bytes);
}

/* The blocking form: MPI's blocking collective on whatever buffers the execution has. */
static int execute_blocking(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    PC_MPI_CHECK(MPI_Alltoall(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcount, plan->stype.type, rbuf,
                              plan->recvcount, plan->rtype.type, plan->comm));
    return PLANCOLL_SUCCESS;
}

const struct pc_algorithm pc_alltoall_native = {
    .name = "alltoall.native",
    .collective = PC_ALLTOALL,
    .mpi_own = true,
    .summary = "MPI's own " PC_NATIVE_FORM " MPI_Alltoall, yield-waited",
    .inapplicable = inapplicable,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = pc_native_start,
    .advance = advance,
    .teardown = pc_native_teardown,
};

const struct pc_algorithm pc_alltoall_native_blocking = {
    .name = "alltoall.native_blocking",
    .collective = PC_ALLTOALL,
    .mpi_own = true,
    .summary = "MPI's own blocking MPI_Alltoall (started: its " PC_NATIVE_FORM " form)",
    .inapplicable = inapplicable,
    .variants = pc_native_blocking_variants,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = execute_blocking,
    .start = pc_native_start,
    .advance = advance,
    .teardown = pc_native_teardown,
};
