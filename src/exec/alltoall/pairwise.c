/* alltoall.pairwise: P-1 steps; step i sends the block for (r+i) mod P and receives the one from (r-i) mod P.
 * In place, step i pairs r with (i-r) mod P, a symmetric pairing, so each step swaps one block through a
 * one-block scratch. Cost ([GLEX] eq. 6 in the model's primitives, pc_cost_direct):
 *   (ppn - 1) shm_msg(m)                 the node peers' steps
 *   + (P - ppn) net_concurrent(ppn, m)   the off-node steps, every rank of the node sending off-node at once
 *   + shm_copy(1, 1, m)                  the block to itself
 * in place: pc_cost_direct_in_place (cost.h): each step packs its block into the scratch, and a node partner reads
 * lines just written there. */
#include <stdlib.h>

#include "exec/plan.h"
#include "exec/cost.h"
#include "exec/schedule.h"
#include "exec/steps.h"
#include "exec/busy.h"

struct pairwise {
    void *scratch; /* in place: one packed block */
    MPI_Count scratch_bytes; /* large-count calls throughout: a block may exceed 2 GiB */
    struct pc_steps steps;
};

static int setup(struct plancoll_plan_s *plan)
{
    struct pairwise *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "pairwise state");
    plan->impl = st;
    if (plan->in_place && plan->size > 1) { /* one rank has no partner: no scratch */
        PC_MPI_CHECK(pc_mpi_pack_size(plan->recvcount, plan->rtype.type, plan->comm, &st->scratch_bytes));
        st->scratch = malloc(st->scratch_bytes > 0 ? (size_t)st->scratch_bytes : 1);
        if (!st->scratch) return pc_error(PLANCOLL_ERR_NOMEM, "pairwise scratch of %lld bytes", (long long)st->scratch_bytes);
    }
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct pairwise *st = plan->impl;
    if (st) free(st->scratch);
    free(st);
    plan->impl = NULL;
}

/* Step i (0..P-1) of the schedule: in place, the swap with partner (i - r) mod P through the scratch (none when the
 * partner is r); out of place, the exchange with (r + i) and (r - i) mod P (step 0 is the own block, copied by
 * start). */
static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int i)
{
    struct pairwise *st = plan->impl;
    const int P = plan->size, r = plan->rank, sc = plan->sendcount, rc = plan->recvcount;
    void *rbuf = plan->run_recvbuf;
    const int tag = pc_tag(plan, PC_TAG_ALLTOALL);
    if (plan->in_place) {
        int partner = pc_pairwise_partner(r, P, i);
        if (partner == r) return PLANCOLL_SUCCESS;
        char *block = pc_elem_ptr(rbuf, &plan->rtype, (MPI_Aint)partner * rc);
        MPI_Count pos = 0;
        PC_MPI_CHECK(pc_mpi_pack(block, rc, plan->rtype.type, st->scratch, st->scratch_bytes, &pos, plan->comm));
        PC_MPI_CHECK(MPI_Irecv(block, rc, plan->rtype.type, partner, tag, plan->comm, pc_steps_slot(s)));
        PC_MPI_CHECK(pc_mpi_isend(st->scratch, pos, MPI_PACKED, partner, tag, plan->comm, pc_steps_slot(s)));
        return PLANCOLL_SUCCESS;
    }
    if (i == 0) return PLANCOLL_SUCCESS;
    int dst = pc_pairwise_dst(r, P, i), src = pc_pairwise_src(r, P, i);
    PC_MPI_CHECK(MPI_Irecv(pc_elem_ptr(rbuf, &plan->rtype, (MPI_Aint)src * rc), rc, plan->rtype.type, src, tag,
                           plan->comm, pc_steps_slot(s)));
    PC_MPI_CHECK(MPI_Isend(pc_elem_ptr(plan->run_sendbuf, &plan->stype, (MPI_Aint)dst * sc), sc, plan->stype.type, dst,
                           tag, plan->comm, pc_steps_slot(s)));
    return PLANCOLL_SUCCESS;
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pairwise *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_steps_begin(&st->steps, plan->prob.block_bytes == 0 ? 0 : plan->size);
    if (plan->prob.block_bytes == 0 || plan->in_place) return PLANCOLL_SUCCESS;
    const int r = plan->rank, sc = plan->sendcount, rc = plan->recvcount;
    return pc_copy_typed(plan, pc_elem_ptr(sbuf, &plan->stype, (MPI_Aint)r * sc), sc, &plan->stype,
                         pc_elem_ptr(rbuf, &plan->rtype, (MPI_Aint)r * rc), rc, &plan->rtype);
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pairwise *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, NULL, done);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    double bytes = (double)p->block_bytes;
    /* P - 1 exchanges one after the other, each waiting for its partner: a scheduler turn each when oversubscribed;
     * in place, swaps through the scratch block (cost.h pc_cost_direct_in_place) and no block to itself */
    const double turns = pc_cost_mpi_turns(p, m, p->shape.nranks - 1, 1);
    if (p->in_place) return pc_cost_direct_in_place(p, m, bytes) + turns;
    return pc_cost_direct(p, m, bytes) + pc_cost_shm_copy(m, 1, 1, bytes) + turns;
}


/* Busy (exec/busy.h): the P - 1 exchanges' posting and the node peers' copies, the block to itself, a test per step. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    double bytes = (double)p->block_bytes;
    return pc_busy_direct(p, m, bytes) + pc_cost_shm_copy(m, 1, 1, bytes) + pc_busy_calls(m, p->shape.nranks - 1);
}

const struct pc_algorithm pc_alltoall_pairwise = {
    .name = "alltoall.pairwise",
    .collective = PC_ALLTOALL,
    .summary = "P-1 pairwise exchange steps (symmetric pairing in place)",
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = teardown,
};
