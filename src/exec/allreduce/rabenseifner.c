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
#include "exec/busy.h"

static const char *inapplicable(const struct pc_problem *p)
{
    return p->commutative ? NULL : "reduce-scatter reorders operands: needs a commutative op";
}

/* The schedule, n = lg(pof2): step 0 the fold in; steps 1..n the reduce-scatter, each keeping half of the owned
 * block range and reducing the peer's copy of it; steps n+1..2n the allgather, replaying them backwards (sending
 * what this rank owns, receiving the other half); the last the fold out. A rank folded out sits the middle out. */
static int nsteps_of(const struct plancoll_plan_s *plan) { return pc_log2_pof2(pc_fold_make(plan->rank, plan->size).pof2); }

static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    const int n = (s->count - 2) / 2, count = plan->count, nb = f->pof2;
    const struct pc_typeinfo *t = &plan->rtype;
    void *rbuf = plan->run_recvbuf;
    if (step == 0) return pc_allreduce_fold_in_post(plan, s);
    if (step == s->count - 1) return pc_allreduce_fold_out_post(plan, s);
    if (f->newrank < 0) return PLANCOLL_SUCCESS;
    if (step <= n) {
        struct pc_halving_step h = pc_halving_step(f->newrank, nb, step - 1);
        int keep = pc_block_displ(count, nb, h.keep_lo);
        return pc_allreduce_post_exchange(plan, s, pc_fold_real(f, h.newpeer),
                                          pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, h.send_lo)),
                                          pc_block_span(count, nb, h.send_lo, h.send_hi), pc_elem_ptr(st->tmp, t, keep),
                                          pc_block_span(count, nb, h.keep_lo, h.keep_hi));
    }
    struct pc_doubling_step d = pc_doubling_step(f->newrank, nb, 2 * n - step);
    return pc_allreduce_post_exchange(plan, s, pc_fold_real(f, d.newpeer),
                                      pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, d.own_lo)),
                                      pc_block_span(count, nb, d.own_lo, d.own_hi),
                                      pc_elem_ptr(rbuf, t, pc_block_displ(count, nb, d.recv_lo)),
                                      pc_block_span(count, nb, d.recv_lo, d.recv_hi));
}

static int finish(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    const int n = (s->count - 2) / 2, count = plan->count, nb = f->pof2;
    if (step == 0) return pc_allreduce_fold_in_finish(plan);
    if (f->newrank < 0 || step > n) return PLANCOLL_SUCCESS;
    struct pc_halving_step h = pc_halving_step(f->newrank, nb, step - 1);
    int keep = pc_block_displ(count, nb, h.keep_lo);
    const struct pc_typeinfo *t = &plan->rtype;
    return pc_reduce(&plan->red, pc_elem_ptr(st->tmp, t, keep), pc_elem_ptr(plan->run_recvbuf, t, keep),
                     pc_block_span(count, nb, h.keep_lo, h.keep_hi));
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    return pc_allreduce_begin(plan, sbuf, rbuf, 2 * nsteps_of(plan));
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pc_allreduce_scratch *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, finish, done);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_allreduce_rsag_cost(p, p->shape.nranks, (double)p->count * (double)p->elem_bytes, 0, 1, m);
}


/* Busy (exec/busy.h): the halving steps' reductions, both phases' messages and tests. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_busy_allreduce(p, (double)p->count * (double)p->elem_bytes, true, m);
}

const struct pc_algorithm pc_allreduce_rabenseifner = {
    .name = "allreduce.rabenseifner",
    .collective = PC_ALLREDUCE,
    .summary = "reduce-scatter (recursive halving) + allgather (recursive doubling), commutative ops",
    .inapplicable = inapplicable,
    .estimate = estimate,
    .busy = busy,
    .setup = pc_allreduce_scratch_setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = pc_allreduce_scratch_teardown,
};
