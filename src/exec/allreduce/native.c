/* allreduce.native: MPI's persistent MPI_Allreduce_init, yield-waited; MPI_Iallreduce on other buffers.
 * allreduce.native_blocking: executed by MPI's blocking MPI_Allreduce (as alltoall/native.c says; Open MPI 4.1 at
 * 1n2p, 128 KiB: 27.7 us blocking against 35.6 persistent, bench/results/ompi-1n2p-allreduce.txt).
 * Cost: modelled as MPICH's choice in the model's primitives (common.c), lg = lg(pof2), f = 2 when P is not a
 * power of two (the fold), else 0:
 *   n <= 2 KiB or a non-commutative op: recursive doubling's cost (recursive_doubling.c), lg + f rounds
 *   else: reduce-scatter + allgather's cost (rabenseifner.c), 2 lg + f rounds
 *   each round with its scheduler turn on an oversubscribed host (turns(1) per step, common.c and cost.h).
 * MPI reduces with its own op, so the candidate is not applicable where that op gives other results than
 * plancoll's definition (reduce.c asks MPI once per (op, datatype)); floating SUM and PROD results get their NaNs
 * settled (one pass over the result, not in the cost), since MPI may leave different NaNs on different ranks.
 * plancoll allows MPI_IN_PLACE on some ranks only; MPI requires it on all or none (MPI-4.0, 6.9.6), and Open MPI
 * 4.1's libnbc chooses its schedule by the rank's own flag (binomial in place, reduce-scatter + allgather out of
 * place, from 4 ranks and 64 KiB): a mix there matched messages of different schedules (MPI_ERR_TRUNCATE, wrong
 * sums). So where the ranks mix (agreed at plan time, problem.h some_in_place), every rank passes MPI_IN_PLACE and
 * the others first copy their send buffer into the receive buffer (one local copy per execution, not in the cost). */
#include "exec/allreduce/common.h"
#include "exec/native_request.h"
#include "exec/busy.h"

/* The send buffer MPI gets: MPI_IN_PLACE on every rank where any rank is in place (start copies the others'). */
static const void *mpi_sendbuf(const struct plancoll_plan_s *plan, const void *sbuf)
{
    return plan->prob.some_in_place ? MPI_IN_PLACE : sbuf;
}

#if PC_HAVE_PERSISTENT_COLL
static int init(struct plancoll_plan_s *plan, MPI_Request *req)
{
    PC_MPI_CHECK(PC_MPI_COLL_INIT(Allreduce)(mpi_sendbuf(plan, plan->sendbuf), plan->recvbuf,
                                             plan->count, plan->rtype.type, plan->red.op, plan->comm, MPI_INFO_NULL,
                                             req));
    return PLANCOLL_SUCCESS;
}
#else
/* This MPI has no persistent collectives: every execute posts the nonblocking one (native_request.h). */
static const pc_native_init_fn init = NULL;
#endif

static int post(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, MPI_Request *req)
{
    PC_MPI_CHECK(pc_mpi_iallreduce(mpi_sendbuf(plan, sbuf), rbuf, plan->count, plan->rtype.type,
                                plan->red.op, plan->comm, req));
    return PLANCOLL_SUCCESS;
}

static int setup(struct plancoll_plan_s *plan) { return pc_native_setup(plan, init, post); }

/* An out-of-place rank among in-place ones puts its operand where MPI_IN_PLACE reads it, then starts MPI's. */
static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    if (plan->prob.some_in_place && !plan->in_place) {
        int err = pc_copy_typed(plan, sbuf, plan->count, &plan->rtype, rbuf, plan->count, &plan->rtype);
        if (err) return err;
    }
    return pc_native_start(plan, sbuf, rbuf);
}

/* Once MPI's result is in: MPI's NaNs may differ between ranks, every rank settles them (plan.h). */
static int settle(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    (void)s;
    (void)step;
    if (plan->red.settle_nans) plan->red.settle_nans((char *)plan->run_recvbuf + plan->rtype.true_lb, plan->count);
    return PLANCOLL_SUCCESS;
}

static int advance(struct plancoll_plan_s *plan, bool *done) { return pc_native_advance(plan, done, settle); }

/* MPI reduces with its own op: the answer is plancoll's only where that op agrees with plancoll's (reduce.c). */
static const char *inapplicable(const struct pc_problem *p)
{
    if (p->mpi_op_differs) return "MPI's own op gives other results than plancoll's definition for this (op, datatype)";
    /* under SMPI the reduction runs blocking (mpi_compat.h pc_mpi_iallreduce: SMPI 3.32's MPI_Iallreduce is wrong) */
    /* in place, SMPI's temporary is right for the dense types of reductions (run blocking: pc_mpi_iallreduce) */
    return p->contiguous ? NULL : pc_native_in_place_unfit(p);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_allreduce_native_cost(p, p->shape.nranks, (double)p->count * (double)p->elem_bytes, 0, 1, m);
}


/* Busy (exec/busy.h): MPI reduces inside the caller's tests, with MPICH's choice of schedule (as the estimate). */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    double n = (double)p->count * (double)p->elem_bytes;
    return pc_busy_allreduce(p, n, !(n <= 2048 || !p->commutative), m);
}

/* The blocking form: MPI's blocking collective on whatever buffers the execution has, the operands placed and the
 * NaNs settled as in the started form. */
static int execute_blocking(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    if (plan->prob.some_in_place && !plan->in_place) {
        int err = pc_copy_typed(plan, sbuf, plan->count, &plan->rtype, rbuf, plan->count, &plan->rtype);
        if (err) return err;
    }
    PC_MPI_CHECK(MPI_Allreduce(mpi_sendbuf(plan, sbuf), rbuf, plan->count, plan->rtype.type, plan->red.op,
                               plan->comm));
    plan->run_recvbuf = rbuf;
    return settle(plan, NULL, 0);
}

const struct pc_algorithm pc_allreduce_native = {
    .name = "allreduce.native",
    .collective = PC_ALLREDUCE,
    .mpi_own = true,
    .summary = "MPI's own " PC_NATIVE_FORM " MPI_Allreduce, yield-waited",
    .inapplicable = inapplicable,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = pc_native_teardown,
};

const struct pc_algorithm pc_allreduce_native_blocking = {
    .name = "allreduce.native_blocking",
    .collective = PC_ALLREDUCE,
    .mpi_own = true,
    .summary = "MPI's own blocking MPI_Allreduce (started: its " PC_NATIVE_FORM " form)",
    .inapplicable = inapplicable,
    .variants = pc_native_blocking_variants,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = execute_blocking,
    .start = start,
    .advance = advance,
    .teardown = pc_native_teardown,
};
