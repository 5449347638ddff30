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
#include "exec/busy.h"

/* The schedule: step 0 the fold in, steps 1..lg(pof2) the exchanges with newrank ^ 2^(step-1) (none for a rank
 * folded out), the last the fold out. */
static int nsteps_of(const struct plancoll_plan_s *plan) { return pc_log2_pof2(pc_fold_make(plan->rank, plan->size).pof2); }

static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    const int last = s->count - 1;
    if (step == 0) return pc_allreduce_fold_in_post(plan, s);
    if (step == last) {
        if (f->newrank >= 0 && st->cur != plan->run_recvbuf) {
            int err = pc_copy_typed(plan, st->cur, plan->count, &plan->rtype, plan->run_recvbuf, plan->count, &plan->rtype);
            if (err) return err;
        }
        return pc_allreduce_fold_out_post(plan, s);
    }
    if (f->newrank < 0) return PLANCOLL_SUCCESS;
    int newpeer = pc_rd_newpeer(f->newrank, step - 1);
    return pc_allreduce_post_exchange(plan, s, pc_fold_real(f, newpeer), st->cur, plan->count, st->in, plan->count);
}

/* Both partners compute (lower rank's data) op (higher rank's data). */
static int finish(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    if (step == 0) return pc_allreduce_fold_in_finish(plan);
    if (step == s->count - 1 || f->newrank < 0) return PLANCOLL_SUCCESS;
    if (pc_rd_newpeer(f->newrank, step - 1) < f->newrank)
        return pc_reduce(&plan->red, st->in, st->cur, plan->count); /* cur = peer op mine */
    int err = pc_reduce(&plan->red, st->cur, st->in, plan->count); /* in = mine op peer */
    void *t = st->cur;
    st->cur = st->in;
    st->in = t;
    return err;
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    return pc_allreduce_begin(plan, sbuf, rbuf, nsteps_of(plan));
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pc_allreduce_scratch *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, finish, done);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_allreduce_rd_cost(p, p->shape.nranks, (double)p->count * (double)p->elem_bytes, 0, 1, m);
}


/* Busy (exec/busy.h): every step's reduction, message and test. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_busy_allreduce(p, (double)p->count * (double)p->elem_bytes, false, m);
}

const struct pc_algorithm pc_allreduce_recursive_doubling = {
    .name = "allreduce.recursive_doubling",
    .collective = PC_ALLREDUCE,
    .summary = "recursive doubling over the whole vector, any P (fold), keeps rank order",
    .estimate = estimate,
    .busy = busy,
    .setup = pc_allreduce_scratch_setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = pc_allreduce_scratch_teardown,
};
