/* alltoall.bruck: Bruck's log-step alltoall with a radix parameter R (radix 2: ceil(lg P) steps). A local
 * rotation puts the block for (r+i) mod P in slot i; each step sends every slot whose base-R digit at one
 * position equals one value v to (r + v R^d) mod P and receives the same slots from (r - v R^d) mod P; the
 * inverse rotation puts slot i in recv block (r-i) mod P (derivation in schedule.h; the inverse rotation printed
 * in [BruckNU] is off). Each step moves about P/R blocks, so it wins for small blocks and loses for large ones.
 * The steps themselves are shared with alltoallv.padded_bruck (bruck_common.c).
 * Cost (model primitives; the steps as pc_bruck_steps_cost, bruck_common.h):
 *   sum over steps (msg_s(k_s m) + 2 transpose(k_s m) + shift_turns)  k_s = slots step s moves, msg_s node or
 *                                                        network, shift_turns the step's scheduler turns (cost.h)
 *   + 2 transpose(P m)                                   the rotation and the inverse rotation */
#include <string.h>

#include "exec/plan.h"
#include "exec/bruck_common.h"
#include "exec/busy.h"

static const char *inapplicable(const struct pc_problem *p)
{
    return p->contiguous ? NULL : "Bruck moves packed bytes: needs contiguous datatypes on every rank";
}

static int setup(struct plancoll_plan_s *plan) { return pc_bruck_uniform_setup(plan, (size_t)plan->prob.block_bytes); }

/* Block j of a buffer of count-element blocks of a contiguous type. */
static inline char *block(const void *buf, const struct pc_typeinfo *t, int count, int j)
{
    return pc_elem_ptr(buf, t, (MPI_Aint)j * count) + t->true_lb;
}

/* The rotation, then the steps (advance); the inverse rotation once the last step is in. */
static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pc_bruck_uniform *u = plan->impl;
    const int P = plan->size, r = plan->rank;
    const size_t m = u->m;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_bruck_uniform_begin(plan, u, MPI_BYTE, PC_TAG_ALLTOALL_BRUCK, NULL);
    if (m == 0) return PLANCOLL_SUCCESS;
    const void *src = plan->in_place ? rbuf : sbuf;
    const struct pc_typeinfo *stype = plan->in_place ? &plan->rtype : &plan->stype;
    int scount = plan->in_place ? plan->recvcount : plan->sendcount;
    for (int i = 0; i < P; i++) memcpy(u->slots + (size_t)i * m, block(src, stype, scount, pc_bruck_rotate_from(r, P, i)), m);
    return PLANCOLL_SUCCESS;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pc_bruck_uniform *u = plan->impl;
    int err = pc_bruck_uniform_advance(plan, u, done);
    if (err || !*done || u->m == 0) return err;
    const int P = plan->size, r = plan->rank;
    for (int j = 0; j < P; j++)
        memcpy(block(plan->run_recvbuf, &plan->rtype, plan->recvcount, j),
               u->slots + (size_t)pc_bruck_final_slot(r, P, j) * u->m, u->m);
    return PLANCOLL_SUCCESS;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    double m = (double)p->block_bytes;
    return pc_bruck_steps_cost(p, pc_bruck_radix(params, P), m, mm) + 2.0 * pc_cost_transpose(mm, P * m);
}


/* Busy (exec/busy.h): every step's packing, unpacking, message and test, and both rotations. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    double m = (double)p->block_bytes;
    return pc_busy_bruck_steps(p, pc_bruck_radix(params, P), m, mm) + 2.0 * pc_cost_transpose(mm, P * m);
}

const struct pc_algorithm pc_alltoall_bruck = {
    .name = "alltoall.bruck",
    .collective = PC_ALLTOALL,
    .summary = "Bruck's log-step alltoall, radix 2 or 4 (small blocks)",
    .params = PC_PARAM_RADIX,
    .inapplicable = inapplicable,
    .variants = pc_bruck_variants,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = pc_bruck_uniform_teardown,
};
