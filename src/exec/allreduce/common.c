#include "exec/allreduce/common.h"

#include <stdlib.h>

#include "exec/cost.h"

int pc_allreduce_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    if (plan->in_place || plan->count == 0) return PLANCOLL_SUCCESS;
    return pc_copy_typed(plan, sbuf, plan->count, &plan->rtype, rbuf, plan->count, &plan->rtype);
}

int pc_allreduce_begin(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, int nsteps)
{
    struct pc_allreduce_scratch *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    st->fold = pc_fold_make(plan->rank, plan->size);
    st->cur = rbuf;
    st->in = st->tmp;
    bool nothing = plan->count == 0 || plan->size == 1;
    pc_steps_begin(&st->steps, nothing ? 0 : nsteps + 2);
    return pc_allreduce_start(plan, sbuf, rbuf);
}

int pc_allreduce_post_exchange(struct plancoll_plan_s *plan, struct pc_steps *s, int peer, const void *sendptr,
                               int scount, void *recvptr, int rcount)
{
    const int tag = pc_tag(plan, PC_TAG_ALLREDUCE);
    if (rcount > 0) PC_MPI_CHECK(MPI_Irecv(recvptr, rcount, plan->rtype.type, peer, tag, plan->comm, pc_steps_slot(s)));
    if (scount > 0) PC_MPI_CHECK(MPI_Isend(sendptr, scount, plan->rtype.type, peer, tag, plan->comm, pc_steps_slot(s)));
    return PLANCOLL_SUCCESS;
}

int pc_allreduce_fold_in_post(struct plancoll_plan_s *plan, struct pc_steps *s)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    if (plan->rank >= 2 * f->rem) return PLANCOLL_SUCCESS;
    if (f->newrank < 0) return pc_allreduce_post_exchange(plan, s, plan->rank + 1, plan->run_recvbuf, plan->count, NULL, 0);
    return pc_allreduce_post_exchange(plan, s, plan->rank - 1, NULL, 0, st->tmp, plan->count);
}

int pc_allreduce_fold_in_finish(struct plancoll_plan_s *plan)
{
    struct pc_allreduce_scratch *st = plan->impl;
    if (plan->rank >= 2 * st->fold.rem || st->fold.newrank < 0) return PLANCOLL_SUCCESS;
    return pc_reduce(&plan->red, st->tmp, plan->run_recvbuf, plan->count);
}

int pc_allreduce_fold_out_post(struct plancoll_plan_s *plan, struct pc_steps *s)
{
    struct pc_allreduce_scratch *st = plan->impl;
    const struct pc_fold *f = &st->fold;
    if (plan->rank >= 2 * f->rem) return PLANCOLL_SUCCESS;
    if (f->newrank < 0) return pc_allreduce_post_exchange(plan, s, plan->rank + 1, NULL, 0, plan->run_recvbuf, plan->count);
    return pc_allreduce_post_exchange(plan, s, plan->rank - 1, plan->run_recvbuf, plan->count, NULL, 0);
}

/* The fold pairs ranks 2i and 2i + 1 below 2 rem. */
static int fold_partner(int r, int P, int rem)
{
    (void)P;
    return r < 2 * rem ? (r ^ 1) : -1;
}

/* One message of a step: between leaders of different nodes, or between the problem's ranks paired by the fold
 * (arg: rem) or by the xor partner (arg: the mask); plus the step's scheduler turn when oversubscribed (the step
 * waits for its partner's message, cost.h). Between leaders each posts `posted` messages of `bytes` at once to its
 * partner (the allreduces of one leader in flight together): net_posted, and, in the rendezvous regime, a handshake
 * for each message after the first. Unlike the posted exchanges of pap and spread-out, whose messages go to as
 * many peers, these go to one partner over one connection, and their handshakes follow one another: on 2n1p-tcp
 * the two halves of dpml_pipelined's 256 KiB allreduce took 1.26-1.38x recursive doubling's one message at 512 KiB
 * to 2 MiB (docs/scale-planner.md), net_posted alone gives 1.08x. */
static double step(const struct pc_problem *p, int leaders, int posted, bool fold, int arg, double bytes,
                   const struct pc_machine_model *m)
{
    if (leaders > 0) /* the node's other ranks wait meanwhile (cost.h) */
        return (pc_cost_net_posted(m, leaders, posted, bytes) + (posted - 1) * pc_cost_net_handshake(m, bytes)) *
                   pc_cost_waiting_slowdown(p, leaders) +
               pc_cost_mpi_turns(p, m, 1, 1);
    int k = fold ? pc_cost_offnode_pairs(p, fold_partner, arg) : pc_cost_offnode_xor(p, arg);
    return pc_cost_step_msg(m, k, bytes) + pc_cost_mpi_turns(p, m, 1, 1);
}

/* The fold in (a message and a reduction) and out (a message) when P is not a power of two; `posted` allreduces
 * at once (their reductions one after another). */
static double fold_cost(const struct pc_problem *p, int P, int pof2, double n, int leaders, int posted,
                        const struct pc_machine_model *m)
{
    if (pof2 == P) return 0;
    double msg = step(p, leaders, posted, true, P - pof2, n, m);
    return 2 * msg + posted * pc_cost_reduce_of(p, m, n);
}

static int pof2_below(int P)
{
    int pof2 = 1;
    while (pof2 * 2 <= P) pof2 *= 2;
    return pof2;
}

/* fold + sum over masks 1, 2, .., pof2/2 of (msg_mask(n) + reduce(n)) */
double pc_allreduce_rd_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                            const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    if (posted < 1) posted = 1;
    int pof2 = pof2_below(P);
    double t = fold_cost(p, P, pof2, n, leaders, posted, m);
    for (int mask = 1; mask < pof2; mask *= 2)
        t += step(p, leaders, posted, false, mask, n, m) + posted * pc_cost_reduce_of(p, m, n);
    return t;
}

/* fold + sum over halving masks pof2/2 .. 1 of (2 msg_mask(n mask/pof2) + reduce(n mask/pof2)): the halving step
 * and the allgather step that replays it */
double pc_allreduce_rsag_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                              const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    if (posted < 1) posted = 1;
    int pof2 = pof2_below(P);
    double t = fold_cost(p, P, pof2, n, leaders, posted, m);
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
        double bytes = n * mask / pof2;
        t += 2 * step(p, leaders, posted, false, mask, bytes, m) + posted * pc_cost_reduce_of(p, m, bytes);
    }
    return t;
}

/* MPICH's choice: recursive doubling up to 2 KiB or for a non-commutative op, else reduce-scatter + allgather;
 * each of their rounds is a step that charges its scheduler turn (step above), as MPI's rounds wait for one too */
double pc_allreduce_native_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                                const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    if (n <= 2048 || !p->commutative) return pc_allreduce_rd_cost(p, P, n, leaders, posted, m);
    return pc_allreduce_rsag_cost(p, P, n, leaders, posted, m);
}

int pc_allreduce_scratch_setup(struct plancoll_plan_s *plan)
{
    struct pc_allreduce_scratch *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "%s state", plan->alg->name);
    plan->impl = st;
    return pc_alloc_typed(plan->count, &plan->rtype, &st->raw, &st->tmp);
}

void pc_allreduce_scratch_teardown(struct plancoll_plan_s *plan)
{
    struct pc_allreduce_scratch *st = plan->impl;
    if (st) free(st->raw);
    free(st);
    plan->impl = NULL;
}
