/* allreduce.rabenseifner: after the fold, a reduce-scatter by recursive halving (each step keeps half of the
 * current range and reduces the peer's copy of it) then an allgather by recursive doubling; the vector is cut
 * into pof2 blocks of count/pof2 (+1) elements, so any count works, 0 included. Each element is reduced by
 * exactly one rank and then copied, so every rank ends bit-identical. The halving reorders operands, so the op
 * must be commutative. Cost (model primitives, common.c):
 *   sum over halving masks pof2/2, .., 1 of (2 msg_mask(n mask/pof2) + reduce(n mask/pof2))
 *                                            the halving step and the allgather step replaying it
 *   + [P not a power of two] (2 msg_fold(n) + reduce(n))   the fold in and out
 * msg_x(b): shm_msg(b) when every pair of the step sits on one node, else net_concurrent(k, b), k the most ranks
 * of one node whose partner is off-node, plus the step's scheduler turn on an oversubscribed host (turns(1),
 * cost.h); reduce with the problem's (op, type). */
#include <stdlib.h>

#include "exec/schedule.h"
#include "exec/allreduce/common.h"

static const char *inapplicable(const struct pc_problem *p)
{
    return p->commutative ? NULL : "reduce-scatter reorders operands: needs a commutative op";
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pc_allreduce_scratch *st = plan->impl;
    int err = pc_allreduce_start(plan, sbuf, rbuf);
    if (err || plan->count == 0 || plan->size == 1) return err;
    struct pc_fold f = pc_fold_make(plan->rank, plan->size);
    err = pc_allreduce_fold_in(plan, &f, rbuf, st->tmp);
    if (err) return err;
    if (f.newrank >= 0) {
        const struct pc_typeinfo *t = &plan->rtype;
        const int count = plan->count, nb = f.pof2, nsteps = pc_log2_pof2(f.pof2);
        /* Reduce-scatter: each step keeps half of the owned block range and reduces the peer's copy of it. */
        for (int s = 0; s < nsteps; s++) {
            struct pc_halving_step h = pc_halving_step(f.newrank, nb, s);
            int keep = pc_block_displ(count, nb, h.keep_lo);
            int rcount = pc_block_span(count, nb, h.keep_lo, h.keep_hi);
            err = pc_allreduce_exchange(plan, pc_fold_real(&f, h.newpeer),
                                        pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, h.send_lo)),
                                        pc_block_span(count, nb, h.send_lo, h.send_hi), pc_elem_ptr(st->tmp, t, keep),
                                        rcount);
            if (err) return err;
            err = pc_reduce(&plan->red, pc_elem_ptr(st->tmp, t, keep), pc_elem_ptr(rbuf, t, keep), rcount);
            if (err) return err;
        }
        /* Allgather: replay the steps backwards, sending what this rank owns and receiving the other half. */
        for (int s = nsteps - 1; s >= 0; s--) {
            struct pc_doubling_step d = pc_doubling_step(f.newrank, nb, s);
            err = pc_allreduce_exchange(plan, pc_fold_real(&f, d.newpeer),
                                        pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, d.own_lo)),
                                        pc_block_span(count, nb, d.own_lo, d.own_hi),
                                        pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, d.recv_lo)),
                                        pc_block_span(count, nb, d.recv_lo, d.recv_hi));
            if (err) return err;
        }
    }
    return pc_allreduce_fold_out(plan, &f, rbuf);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_allreduce_rsag_cost(p, p->shape.nranks, (double)p->count * (double)p->elem_bytes, 0, m);
}

const struct pc_algorithm pc_allreduce_rabenseifner = {
    .name = "allreduce.rabenseifner",
    .collective = PC_ALLREDUCE,
    .summary = "reduce-scatter (recursive halving) + allgather (recursive doubling), commutative ops",
    .inapplicable = inapplicable,
    .estimate = estimate,
    .setup = pc_allreduce_scratch_setup,
    .execute = execute,
    .teardown = pc_allreduce_scratch_teardown,
};
