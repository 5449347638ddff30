/* alltoallv.spreadout: every receive is posted, then every send, in the order (r+i) mod P so that ranks do not
 * all hit the same destination at once; zero-byte blocks are not sent at all (the baseline of [PlannedA2AV] and
 * [BruckNU], and the reference for sparse patterns). In place, the outgoing blocks are first packed into a plan-time
 * scratch. Cost (model primitives, pc_cost_direct_v in cost.h), nz = nonzero blocks the busiest rank sends, S its
 * bytes, O its off-node bytes, nz_e = nz (P - min_ppn)/(P - 1) its off-node messages and nz_i = nz - nz_e:
 *   nz_i shm_msg((S - O) / nz_i)             messages to the node's ranks
 *   + nz_e net_concurrent(ppn, O / nz_e)     off-node messages, the node's ranks all sending at once
 *   + nz mpi_turns(1, 1)                     on an oversubscribed host, a turn per peer waited for (cost.h)
 *   + nz_e 2 mpi_turns(1, 1)                 and two more per network message in the rendezvous regime
 *                                            (O / nz_e at or above the protocol switch: pc_cost_message_turns) */
#include <stdlib.h>

#include "exec/plan.h"
#include "exec/cost.h"
#include "exec/steps.h"
#include "exec/busy.h"

struct spreadout {
    MPI_Request *reqs;   /* 2P */
    char *scratch;       /* in place: every outgoing block packed */
    MPI_Count *packed_offset; /* in place: [P+1]; large-count packing and sends, the scratch may pass 2 GiB */
    struct pc_steps steps;
};

static uint64_t block_bytes(const struct pc_typeinfo *t, int count) { return (uint64_t)count * (uint64_t)t->size; }

static int setup(struct plancoll_plan_s *plan)
{
    const int P = plan->size;
    struct spreadout *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "spreadout state");
    plan->impl = st;
    st->reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)P);
    if (!st->reqs) return pc_error(PLANCOLL_ERR_NOMEM, "spreadout requests");
    if (plan->in_place) {
        st->packed_offset = calloc((size_t)P + 1, sizeof(MPI_Count));
        if (!st->packed_offset) return pc_error(PLANCOLL_ERR_NOMEM, "spreadout offsets");
        for (int j = 0; j < P; j++) {
            MPI_Count bytes = 0;
            if (j != plan->rank) PC_MPI_CHECK(pc_mpi_pack_size(plan->recvcounts[j], plan->rtype.type, plan->comm, &bytes));
            if (bytes < 0 || bytes >= (MPI_Count)(INT64_C(1) << 60) - st->packed_offset[j])
                return pc_error(PLANCOLL_ERR_OVERFLOW, "in-place alltoallv scratch reaches 2^60 bytes");
            st->packed_offset[j + 1] = st->packed_offset[j] + bytes;
        }
        st->scratch = malloc((size_t)st->packed_offset[P] + 1);
        if (!st->scratch)
            return pc_error(PLANCOLL_ERR_NOMEM, "in-place scratch of %lld bytes", (long long)st->packed_offset[P]);
    }
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct spreadout *st = plan->impl;
    if (st) {
        free(st->reqs);
        free(st->scratch);
        free(st->packed_offset);
    }
    free(st);
    plan->impl = NULL;
}

/* One step: every receive posted, then every send; the own block copied meanwhile. */
static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int step)
{
    (void)step;
    struct spreadout *st = plan->impl;
    const int P = plan->size, r = plan->rank, tag = pc_tag(plan, PC_TAG_ALLTOALLV);
    const struct pc_typeinfo *rt = &plan->rtype;
    const void *sbuf = plan->run_sendbuf;
    void *rbuf = plan->run_recvbuf;
    s->reqs = st->reqs;
    if (plan->in_place) {
        /* Pack before any receive can land on the blocks being sent. */
        for (int i = 1; i < P; i++) {
            int dst = (r + i) % P;
            if (block_bytes(rt, plan->recvcounts[dst]) == 0) continue;
            MPI_Count pos = st->packed_offset[dst];
            PC_MPI_CHECK(pc_mpi_pack(pc_elem_ptr(rbuf, rt, plan->rdispls[dst]), plan->recvcounts[dst], rt->type,
                                    st->scratch, st->packed_offset[P], &pos, plan->comm));
        }
    }
    for (int i = 1; i < P; i++) {
        int src = (r - i + P) % P;
        if (block_bytes(rt, plan->recvcounts[src]) == 0) continue;
        PC_MPI_CHECK(MPI_Irecv(pc_elem_ptr(rbuf, rt, plan->rdispls[src]), plan->recvcounts[src], rt->type, src, tag,
                               plan->comm, pc_steps_slot(s)));
    }
    for (int i = 1; i < P; i++) {
        int dst = (r + i) % P;
        if (plan->in_place) {
            MPI_Count bytes = st->packed_offset[dst + 1] - st->packed_offset[dst];
            if (block_bytes(rt, plan->recvcounts[dst]) == 0) continue;
            PC_MPI_CHECK(pc_mpi_isend(st->scratch + st->packed_offset[dst], bytes, MPI_PACKED, dst, tag, plan->comm,
                                     pc_steps_slot(s)));
        } else {
            if (block_bytes(&plan->stype, plan->sendcounts[dst]) == 0) continue;
            /* A peer that sends nothing back would let this rank finish on the eager copy alone and run ahead by
             * any number of executions, piling unexpected messages onto the peer (one rank feeding the others at
             * 2 nodes x 4 ranks: 134 us per execution in 5 ms loops, 810 us in 20 ms loops). A synchronous send
             * completes when the peer has matched it: at most one execution ahead. (In place, every pair is
             * mutual.) */
            const void *block = pc_elem_ptr(sbuf, &plan->stype, plan->sdispls[dst]);
            if (block_bytes(rt, plan->recvcounts[dst]) == 0)
                PC_MPI_CHECK(MPI_Issend(block, plan->sendcounts[dst], plan->stype.type, dst, tag, plan->comm,
                                        pc_steps_slot(s)));
            else
                PC_MPI_CHECK(MPI_Isend(block, plan->sendcounts[dst], plan->stype.type, dst, tag, plan->comm,
                                       pc_steps_slot(s)));
        }
    }
    if (plan->in_place) return PLANCOLL_SUCCESS;
    return pc_copy_typed(plan, pc_elem_ptr(sbuf, &plan->stype, plan->sdispls[r]), plan->sendcounts[r], &plan->stype,
                         pc_elem_ptr(rbuf, rt, plan->rdispls[r]), plan->recvcounts[r], rt);
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct spreadout *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_steps_begin(&st->steps, 1);
    return PLANCOLL_SUCCESS;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct spreadout *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, NULL, done);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    /* the busiest rank's figures (agreed maxima): every rank must predict the same */
    /* everything posted at once and waited for once: one round, and when oversubscribed a scheduler turn per peer
     * this rank sends to (cost.h): a peer that sends back is waited for with its message, one that does not with
     * its match of the synchronous send. A rank that only receives finds its data there: one rank sending to all
     * pays a turn per receiver, the receivers none. */
    /* A network message above the protocol switch pays the handshake's chain of three turns instead of one
     * (pc_cost_message_turns), as pap's posted exchange does: spread-out posts everything at once in the same way,
     * and with one turn a peer it was priced 5.8x under its time for a hot in-place pattern of 9 KiB blocks at 6
     * ranks on 3 emulated nodes (and 1.9x for heavy and sparse ones of 4-16 KiB), where aggregated was chosen by
     * MEASURE in both runs of the draw. The busiest rank's mean network message decides the regime. */
    const double nz = (double)p->max_nonzero_sends;
    if (nz <= 0) return pc_cost_direct_v(p, m, nz);
    const struct pc_direct_v_split d = pc_cost_direct_v_split(p, nz);
    const double one = pc_cost_mpi_turns(p, m, 1, 1);
    const double turns = nz * one + (d.remote > 0 ? d.remote * (pc_cost_message_turns(p, m, 1, d.remote_bytes / d.remote) - one) : 0.0);
    return pc_cost_direct_v(p, m, nz) + turns;
}


/* Busy (exec/busy.h): posting and completing every message, the node messages' copies. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_busy_direct_v(p, m, p->max_nonzero_sends);
}

const struct pc_algorithm pc_alltoallv_spreadout = {
    .name = "alltoallv.spreadout",
    .collective = PC_ALLTOALLV,
    .summary = "all receives and sends posted at once, zero-byte blocks skipped",
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = teardown,
};
