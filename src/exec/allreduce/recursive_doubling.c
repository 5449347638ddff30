/* allreduce.recursive_doubling: after the fold to pof2 ranks, lg(pof2) steps exchange the whole vector with
 * newrank ^ mask (mask = 1, 2, 4, ...) and reduce. Both partners compute (lower rank's data) op (higher rank's
 * data) on the same operands, so every rank ends bit-identical and non-commutative ops keep rank order.
 * Cost ([DPML17] eq. 1 in the model's primitives, with the fold made explicit; common.c):
 *   sum over masks 1, 2, .., pof2/2 of (msg_mask(n) + reduce(n))
 *   + [P not a power of two] (2 msg_fold(n) + reduce(n))   the fold in and out
 * msg_x(b): shm_msg(b) when every pair of the step sits on one node, else net_concurrent(k, b), k the most ranks
 * of one node whose partner is off-node, plus the step's scheduler turn on an oversubscribed host (turns(1),
 * cost.h); reduce with the problem's (op, type). */
#include <stdlib.h>

#include "exec/schedule.h"
#include "exec/allreduce/common.h"

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pc_allreduce_scratch *st = plan->impl;
    int err = pc_allreduce_start(plan, sbuf, rbuf);
    if (err || plan->count == 0 || plan->size == 1) return err;
    struct pc_fold f = pc_fold_make(plan->rank, plan->size);
    err = pc_allreduce_fold_in(plan, &f, rbuf, st->tmp);
    if (err) return err;
    if (f.newrank >= 0) {
        void *cur = rbuf, *in = st->tmp;
        for (int step = 0, nsteps = pc_log2_pof2(f.pof2); step < nsteps; step++) {
            int newpeer = pc_rd_newpeer(f.newrank, step);
            err = pc_allreduce_exchange(plan, pc_fold_real(&f, newpeer), cur, plan->count, in, plan->count);
            if (err) return err;
            if (newpeer < f.newrank) {
                err = pc_reduce(&plan->red, in, cur, plan->count); /* cur = peer op mine */
            } else {
                err = pc_reduce(&plan->red, cur, in, plan->count); /* in = mine op peer */
                void *t = cur;
                cur = in;
                in = t;
            }
            if (err) return err;
        }
        if (cur != rbuf) {
            err = pc_copy_typed(plan, cur, plan->count, &plan->rtype, rbuf, plan->count, &plan->rtype);
            if (err) return err;
        }
    }
    return pc_allreduce_fold_out(plan, &f, rbuf);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_allreduce_rd_cost(p, p->shape.nranks, (double)p->count * (double)p->elem_bytes, 0, m);
}

const struct pc_algorithm pc_allreduce_recursive_doubling = {
    .name = "allreduce.recursive_doubling",
    .collective = PC_ALLREDUCE,
    .summary = "recursive doubling over the whole vector, any P (fold), keeps rank order",
    .estimate = estimate,
    .setup = pc_allreduce_scratch_setup,
    .execute = execute,
    .teardown = pc_allreduce_scratch_teardown,
};
