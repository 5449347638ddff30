/* alltoallv.padded_bruck ([BruckNU], docs/algorithms.md): every block is padded to M, the largest block of the whole
 * count matrix, and the exchange runs as a uniform radix-R Bruck over M-byte slots (the steps of alltoall.bruck,
 * bruck_common.c). The rotation packs each outgoing block's real bytes into the front of its slot; after the
 * steps the real bytes of each arriving block (the receiver knows its size from recvcounts) are extracted into
 * the receive buffer. M is known at plan time: the count check of plancoll_plan_alltoallv already takes maxima
 * over ranks in its one allreduce (prob.max_block_bytes is the global maximum). Padding bytes are whatever the
 * slots held before (zeros at first): nobody reads them.
 * Non-contiguous datatypes go through MPI_Pack/MPI_Unpack (vblock.h); MPI_IN_PLACE needs nothing extra because
 * every block is copied into the slots before any byte moves.
 * Cost (model primitives; the steps as pc_bruck_steps_cost, bruck_common.h), 0 when M = 0:
 *   sum over steps (msg_s(k_s M) + 2 transpose(k_s M))   k_s = slots step s moves, msg_s node or network
 *   + transpose(S + R)   the rotation and the extraction, real bytes only (S, R: the busiest rank's sent and
 *                        received bytes) */
#include <stdint.h>

#include "exec/plan.h"
#include "exec/bruck_common.h"
#include "exec/alltoallv/vblock.h"
#include "exec/busy.h"

static int setup(struct plancoll_plan_s *plan)
{
    int err = pc_vblock_check(plan);
    if (err) return err;
    if (plan->prob.max_block_bytes > SIZE_MAX)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "padded bruck: blocks of %llu bytes",
                        (unsigned long long)plan->prob.max_block_bytes);
    return pc_bruck_uniform_setup(plan, (size_t)plan->prob.max_block_bytes);
}

/* The blocks packed into their rotated slots, then the steps (advance); unpacked once the last step is in. */
static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pc_bruck_uniform *u = plan->impl;
    const int P = plan->size, r = plan->rank;
    const size_t M = u->m;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_bruck_uniform_begin(plan, u, pc_vblock_unit(plan), PC_TAG_PADDED_BRUCK, NULL);
    if (M == 0) return PLANCOLL_SUCCESS; /* every block of every rank is empty */
    struct pc_vside out = pc_vside_send(plan);
    const void *src = plan->in_place ? rbuf : sbuf;
    int err = PLANCOLL_SUCCESS;
    for (int i = 0; i < P && !err; i++) err = pc_vblock_pack(plan, &out, src, pc_bruck_rotate_from(r, P, i), u->slots + (size_t)i * M);
    return err;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pc_bruck_uniform *u = plan->impl;
    int err = pc_bruck_uniform_advance(plan, u, done);
    if (err || !*done || u->m == 0) return err;
    const int P = plan->size, r = plan->rank;
    struct pc_vside in = pc_vside_recv(plan);
    for (int j = 0; j < P && !err; j++)
        err = pc_vblock_unpack(plan, &in, plan->run_recvbuf, j, u->slots + (size_t)pc_bruck_final_slot(r, P, j) * u->m);
    return err;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    double M = (double)p->max_block_bytes;
    if (M == 0) return 0.0;
    return pc_bruck_steps_cost(p, pc_bruck_radix(params, P), M, mm) +
           pc_cost_transpose(mm, (double)(p->max_send_bytes + p->max_recv_bytes));
}


/* Busy (exec/busy.h): the steps' packing, messages and tests, and the padding in and out. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    double M = (double)p->max_block_bytes;
    if (M == 0) return 0.0;
    return pc_busy_bruck_steps(p, pc_bruck_radix(params, P), M, mm) +
           pc_cost_transpose(mm, (double)(p->max_send_bytes + p->max_recv_bytes));
}

const struct pc_algorithm pc_alltoallv_padded_bruck = {
    .name = "alltoallv.padded_bruck",
    .collective = PC_ALLTOALLV,
    .summary = "Bruck over blocks padded to the largest block, radix 2 or 4 (small, even blocks)",
    .params = PC_PARAM_RADIX,
    .variants = pc_bruck_variants,
    .inapplicable = pc_vblock_inapplicable,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = pc_bruck_uniform_teardown,
};
