/* alltoall.pap: process-arrival-pattern aware direct alltoall ([Qian08] ch. 6; docs/algorithms.md), as a
 * persistent plan.
 *
 * Ranks reach a collective at different times. A rank that arrives serves the peers that have already
 * arrived first, never blocks on one late peer, and copies out every block as soon as it has landed, in
 * whatever order blocks land. Receive areas are exposed once, at plan time, so arrival costs no control
 * message: in shared memory the arrival is the data itself (one flag per source), across nodes it is either
 * the first message (point-to-point) or one flag write into every peer's window (MPI_Put transport).
 *
 * Intra-node peers (always): a node-shared area owned by the plan (pc_node_shm_alloc: a POSIX shared mapping,
 * an MPI shared window as the fallback). The region of receiver j holds one flag per local source s (a cache line each, written only by s)
 * and TWO staging slots per local source (parity k & 1). At execution k, source s packs its block for j into
 * slot (k & 1, s) of j's region and stores flag[s] = k (release); j copies a block out as soon as it loads
 * flag[s] >= k (acquire). A sender never waits for anything before writing: it serves the peers whose block
 * for it has already landed (they have arrived and are waiting) first, then the others, and then only copies
 * out. Flags carry sequence numbers (execution k writes k) and are never reset.
 *   Safety of the double buffer: s writes slot (k & 1) for j at execution k; j last read that slot at
 *   execution k - 2. s entered execution k only after finishing k - 1, which needed j's block of k - 1;
 *   j writes that block only after it finished execution k - 2 (all its copy-outs included), and s loads
 *   j's flag k - 1 with acquire, so j's reads of k - 2 happen before s's writes of k. Conversely j, still in
 *   execution k, may see flag[s] = k + 1 (s finished k and ran ahead): the data of k is still intact in the
 *   other slot, and s cannot reach k + 2 before j has written its block of k + 1, i.e. finished k. So flag
 *   >= k means "slot k & 1 holds execution k", and no handshake is needed. (A single slot would need an
 *   arrival flag per pair and would make early senders wait for late receivers.)
 *   Stores (parameter stores=normal|stream, exec/reduce_stream.h): the copy of a block into j's slot, which j reads
 *   next, is a memcpy or a streaming copy (no read for ownership of the line j read two executions ago; j then
 *   misses its caches), fenced before flag[s]. j's copy out goes to its private receive buffer: ordinary stores.
 *   Non-contiguous types are packed by MPI_Pack, ordinary stores in either mode (the mode is then not offered:
 *   pc_staging_store_mode).
 *
 * Inter-node peers, parameter transport:
 *   0 point-to-point (default): at arrival post one receive per remote source straight into the receive
 *     buffer (any datatype), then one send per remote destination, the destinations whose block for us has
 *     already arrived (its receive completed at once, so that peer is in the collective) first. Everything
 *     is posted at once, so no peer waits on another; eager messages to late peers wait in their unexpected
 *     queue and match at their arrival.
 *   1 MPI_Put into a window exposed at plan time (MPI_Win_allocate over plancoll's communicator, locked
 *     once with MPI_Win_lock_all; contiguous datatypes only). My window holds ready[P] and data[P] flags
 *     (uint64 sequence numbers, written by the peer of that index) and one staging slot of m bytes per
 *     remote source. Execution k: (1) announce: write k into ready[me] of every remote peer
 *     (MPI_Raccumulate, MPI_REPLACE); (2) until everything is delivered and received: for each remote peer t
 *     not yet served whose ready[t] >= k, MPI_Put my block into t's slot for me; then MPI_Win_flush(t) and
 *     write k into t's data[me]; copy out each slot whose data flag is >= k; MPI_Win_sync plus MPI_Iprobe
 *     between polls (UCX over TCP progresses RMA only when the target calls into MPI).
 *     Safety of the single slot: t announces execution k only after it finished k - 1, including copying
 *     out my slot of k - 1, and I put the block of k only after loading ready[t] >= k; my data flag k is
 *     written after a flush, so t sees the block complete when it sees the flag. t cannot announce k + 1
 *     before it has received my block of k, so ready[t] >= k read during execution k means k exactly.
 *     Flushes only target peers that have announced k and still wait for my block, hence sit in MPI and
 *     progress it: no flush waits on a late peer. The flag writes are request-based; they are completed
 *     at the start of the next execution (before their origin word changes) or at teardown.
 *   On this machine (MPICH 4.0.2, UCX tcp/shm) RMA is emulated with active messages: a flush is a blocking
 *   round trip that spins, so the point-to-point transport is faster; the put transport is the seed's
 *   design and the one to measure on an RDMA network.
 *
 * In place: the outgoing blocks are packed into plan-time scratch first (they are overwritten by incoming
 * data). Non-contiguous datatypes: shared-memory staging uses MPI_Pack/MPI_Unpack (the same choice on every
 * rank: the agreed problem contiguity), point-to-point uses the datatypes directly; the put transport is
 * offered only for contiguous types. execute allocates nothing and creates no communicator or window.
 *
 * Cost (no arrival skew; model primitives), R = P - min_ppn remote peers of the busiest rank, n = max_ppn - 1
 * local peers, ppn = max_ppn, m bytes per block, I = 1 in place:
 *   local part  L = n > 0: n shm_copy(2, ppn, m) - (n - 1) signal
 *                                               each node block staged through the window (copy in, copy out),
 *                                               the node's ranks all copying at once; a tau-Lop two-copy transfer
 *                                               includes the wait for its flag (calibrate.c), and pap writes all
 *                                               its blocks before it waits, so the n waits overlap: one signal
 *                                               is paid, signal = shm_copy(2, ppn, 8 B) (at most the transfer's)
 *                 + shm_copy(1, 1, m)           the block to itself
 *                 + I transpose((P - 1) m)      in place: the outgoing blocks packed first
 *   transport 0 T = net_posted(ppn, R, m) + L    every rank of the node sends off-node at once, all R
 *                                               messages posted at arrival: one start-up, then R m bytes a stream
 *                                               (model.h: net_concurrent(ppn, R m) + (R - 1) g)
 *                 + shared_store(stores, n m)   the n blocks written into peers' slots in the plan's store mode,
 *                                               beyond what the copy terms price (model.h: 0 for the cheaper mode);
 *                                               where calibration timed the handoff in both modes
 *                                               (shm_stream_time) the staged term is the mode's own handoff,
 *                                               shm_handoff(stores, ppn, m), and this term is left out
 *   either transport, when P > 1: + turns(1)     everything is posted at arrival and waited for once: one
 *                                               scheduler turn on an oversubscribed host (cost.h)
 *   transport 0, when R > 0: + R shift_turns(ppn, m)
 *                                               and each network message waited for costs its sender's MPI turn
 *                                               on an oversubscribed host (cost.h, as spread-out's), three in the
 *                                               rendezvous regime (the handshake's chain, pc_cost_message_turns)
 *   transport 1 T = 2 net(8) + R (net_concurrent(ppn, m) + 2 net(8) + shm_copy(1, 1, m)) + L
 *               (the announce round; per peer the put, the flush round trip and the flag, the copy out of the slot)
 * Under arrival skew the time is max arrival + the last arriver's own exchange (its data is pulled by waiting
 * peers, and the blocks for it are waiting in its staging or unexpected queue), not a pairwise chain of waits. */
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/plan.h"
#include "exec/cost.h"
#include "base/sizes.h"
#include "shm/layout.h"
#include "shm/reserve.h"
#include "shm/wait.h"
#include "exec/seg_window.h"
#include "exec/steps.h"
#include "shm/nomem.h"
#include "exec/busy.h"
#include "exec/reduce_stream.h"

enum { PAP_P2P = 0, PAP_PUT = 1 };

struct pap {
    int transport;
    size_t m;          /* bytes per block */
    bool contig;       /* agreed: memcpy everywhere; otherwise MPI_Pack/MPI_Unpack everywhere */
    bool stream;       /* stores=stream (contiguous types): blocks go into peers' slots by streaming stores */
    uint64_t seq;      /* executions so far: execution k waits for flag value k */

    int nremote;
    int *remote;       /* [nremote] remote ranks in serving order (r + i) mod P */
    int nloc, me_loc;
    int *loc;          /* [nloc] rank of each node rank */

    char *scratch;     /* in place: the outgoing blocks, packed (P m bytes) */
    unsigned char *served, *got; /* [P] per execution */

    /* intra-node staging: one node-shared area per plan (pc_node_shm_alloc: a POSIX shared mapping, or an MPI
     * shared window as the fallback) */
    struct pc_node_shm shm;
    char **region;     /* [nloc] each node rank's region, mapped here */
    size_t flag_bytes; /* nloc cache lines */

    /* transport 0 */
    MPI_Request *reqs; /* [2 nremote] receives, then sends */
    int *idx;          /* [2 nremote] for MPI_Testsome */

    /* transport 1 */
    MPI_Win rma_win;
    char *rma_base;
    MPI_Aint slot0;    /* where slots start in every window */
    MPI_Aint *slot_at; /* [P] displacement of my slot in rank t's window */
    MPI_Aint *my_slot; /* [P] offset of source s's slot in my window */
    MPI_Request *rreqs; /* [2 nremote] flag writes not yet completed */
    int nrreqs;
    uint64_t kval;     /* origin word of the flag writes */
    int *batch;        /* [nremote] */

    /* the execution in progress (start, advance) */
    int phase, remote_got, local_got, active;
};

/* ---- parameters, applicability, estimate ------------------------------------------------------ */

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    int n = 0, stores = pc_staging_store_mode(p);
    /* The put transport waits in MPI_Win_flush: offered only where that can be fast and the plan is not started
     * (pc_put_transport_offered; PLANCOLL_ALGORITHM=alltoall.pap:transport=put still forces it). */
    int transports = p->contiguous && pc_put_transport_offered(p) ? 2 : 1;
    for (int t = 0; t < transports; t++)
        if (n < max) out[n++] = (struct pc_params){.transport = t, .stores = stores};
    return n;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const double P = p->shape.nranks, m = (double)p->block_bytes;
    const int ppn = p->shape.max_ppn;
    const double R = p->shape.nnodes > 1 ? P - p->shape.min_ppn : 0.0, n = ppn - 1;
    double local = pc_cost_shm_copy(mm, 1, 1, m) + (p->in_place ? pc_cost_transpose(mm, (P - 1) * m) : 0.0);
    if (n > 0) {
        /* The slots are double-buffered as the calibrated handoff's (model.h: shm_stream_time), so where the model
         * timed it in both store modes each mode is priced by its own table. Otherwise the 2-copy table (ordinary
         * stores) and the store term's difference between the modes: that prices the streaming mode as no cheaper
         * than the ordinary one, 3-4x too high with the cores far apart (1n2p, 640 KiB blocks: 400 predicted, 90-120
         * measured, while the ordinary mode measured 400-470). */
        const bool stream = params->stores == PC_STORES_STREAM, both = pc_model_has_stream_handoff(mm);
        double staged = both ? pc_cost_shm_handoff(mm, stream, ppn, m) : pc_cost_shm_copy(mm, 2, ppn, m);
        double signal = both ? pc_cost_shm_handoff(mm, stream, ppn, pc_model_sizes[0])
                             : pc_cost_shm_copy(mm, 2, ppn, pc_model_sizes[0]);
        if (signal > staged) signal = staged;
        local += n * staged - (n - 1) * signal + (both ? 0.0 : pc_cost_shared_store(mm, stream, n * m));
    }
    if (P > 1) local += pc_cost_turns(p, mm, 1);
    if (params->transport == PAP_PUT) {
        double block = pc_cost_net_concurrent(mm, ppn, m), flag = pc_cost_net(mm, 8);
        return 2.0 * flag + R * (block + 2.0 * flag + pc_cost_shm_copy(mm, 1, 1, m)) + local;
    }
    /* the R network messages are MPI messages: each one waited for costs its sender's turn, as spread-out's
     * (cost.h pc_cost_mpi_turns); the one flag turn above covers the node's blocks. Without them pap measured
     * 1.4-2.6x its estimate at 1-4 KiB blocks on 2 and 3 emulated nodes over 2 cores (4 network peers each).
     * In the rendezvous regime each is the chain of three turns of a shift step's message (pc_cost_message_turns):
     * net_posted overlaps the messages' start-ups, which holds where the ranks have cores to answer the
     * handshakes, not where each answer waits for a turn (18 KiB blocks at 2n5p-tcp: 813 us measured, 420
     * predicted with one turn a peer; every leader form within 1.3x of its own prediction). */
    return pc_cost_net_posted(mm, ppn, R, m) + local + (R > 0 ? R * pc_cost_message_turns(p, mm, ppn, m) : 0.0);
}

/* ---- blocks ----------------------------------------------------------------------------------- */

static inline char *send_block(const struct plancoll_plan_s *plan, const void *sbuf, int j)
{
    return pc_elem_ptr(sbuf, &plan->stype, (MPI_Aint)j * plan->sendcount);
}

static inline char *recv_block(const struct plancoll_plan_s *plan, void *rbuf, int j)
{
    return pc_elem_ptr(rbuf, &plan->rtype, (MPI_Aint)j * plan->recvcount);
}

/* Packs my outgoing block for rank j into dst (m bytes of a peer's staging slot: in the plan's store mode; the
 * caller fences before the flag). */
static int pack_out(const struct plancoll_plan_s *plan, const struct pap *st, const void *sbuf, int j, char *dst)
{
    if (plan->in_place) {
        pc_stage_copy(st->stream, dst, st->scratch + (size_t)j * st->m, st->m);
    } else if (st->contig) {
        pc_stage_copy(st->stream, dst, send_block(plan, sbuf, j) + plan->stype.true_lb, st->m);
    } else {
        MPI_Count pos = 0; /* large-count packing: a block may exceed 2 GiB */
        PC_MPI_CHECK(pc_mpi_pack(send_block(plan, sbuf, j), plan->sendcount, plan->stype.type, dst, (MPI_Count)st->m,
                                &pos, plan->comm));
    }
    return PLANCOLL_SUCCESS;
}

/* Unpacks m bytes at src into the receive block of rank j. */
static int unpack_in(const struct plancoll_plan_s *plan, const struct pap *st, const char *src, void *rbuf, int j)
{
    if (st->contig) {
        memcpy(recv_block(plan, rbuf, j) + plan->rtype.true_lb, src, st->m);
    } else {
        MPI_Count pos = 0;
        PC_MPI_CHECK(pc_mpi_unpack(src, (MPI_Count)st->m, &pos, recv_block(plan, rbuf, j), plan->recvcount,
                                  plan->rtype.type, plan->comm));
    }
    return PLANCOLL_SUCCESS;
}

/* ---- intra-node staging ----------------------------------------------------------------------- */

static inline _Atomic uint64_t *shm_flag(const struct pap *st, int region, int src_loc)
{
    return (_Atomic uint64_t *)(st->region[region] + (size_t)src_loc * PC_CACHELINE);
}

static inline char *shm_slot(const struct pap *st, int region, uint64_t k, int src_loc)
{
    return st->region[region] + st->flag_bytes + ((size_t)(k & 1) * (size_t)st->nloc + (size_t)src_loc) * st->m;
}

/* Writes my block of execution k into local peer j's staging and raises my flag there. */
static int shm_serve(const struct plancoll_plan_s *plan, struct pap *st, const void *sbuf, uint64_t k, int j)
{
    int err = pack_out(plan, st, sbuf, st->loc[j], shm_slot(st, j, k, st->me_loc));
    if (err) return err;
    if (st->stream) pc_stream_fence(); /* the flag's release store does not order streaming stores */
    pc_flag_post(shm_flag(st, j, st->me_loc), k);
    st->served[st->loc[j]] = 1;
    return PLANCOLL_SUCCESS;
}

/* Local peer j has arrived at execution k when its block of k for me has landed. */
static inline bool shm_arrived(const struct pap *st, int j, uint64_t k)
{
    return atomic_load_explicit(shm_flag(st, st->me_loc, j), memory_order_acquire) >= k;
}

/* ---- transport 1: MPI_Put ------------------------------------------------------------------------ */

static inline uint64_t rma_flag(const struct pap *st, int which, int rank, int P)
{
    return atomic_load_explicit((_Atomic uint64_t *)(st->rma_base + (size_t)(which * P + rank) * 8), memory_order_acquire);
}

/* Puts my block into the slot of every arrived, unserved remote peer, flushes them, then raises my data flag
 * there. Only peers that have announced execution k are touched: they wait for my block inside MPI. */
static int put_serve(const struct plancoll_plan_s *plan, struct pap *st, const void *sbuf, uint64_t k, bool *progress)
{
    const int P = plan->size, r = plan->rank;
    int nb = 0;
    for (int i = 0; i < st->nremote; i++) {
        int t = st->remote[i];
        if (st->served[t] || rma_flag(st, 0, t, P) < k) continue;
        const char *origin = plan->in_place ? st->scratch + (size_t)t * st->m
                                            : send_block(plan, sbuf, t) + plan->stype.true_lb;
        /* in pieces: one put of more than 2^31 - 1 bytes crashes MPICH 4.0.2 over UCX (seg_window.h) */
        for (size_t at = 0; at < st->m; at += PC_RMA_MAX_BYTES) {
            int len = (int)(st->m - at < PC_RMA_MAX_BYTES ? st->m - at : PC_RMA_MAX_BYTES);
            PC_MPI_CHECK(MPI_Put(origin + at, len, MPI_BYTE, t, st->slot_at[t] + (MPI_Aint)at, len, MPI_BYTE, st->rma_win));
        }
        st->batch[nb++] = t;
        st->served[t] = 1;
    }
    for (int b = 0; b < nb; b++) {
        int t = st->batch[b];
        PC_MPI_CHECK(MPI_Win_flush(t, st->rma_win));
        PC_MPI_CHECK(MPI_Raccumulate(&st->kval, 1, MPI_UINT64_T, t, (MPI_Aint)(P + r) * 8, 1, MPI_UINT64_T, MPI_REPLACE,
                                     st->rma_win, &st->rreqs[st->nrreqs++]));
    }
    if (nb) *progress = true;
    return PLANCOLL_SUCCESS;
}

/* Completes the flag writes of the previous execution (before kval changes), yielding between tests. */
static int put_complete_flags(const struct plancoll_plan_s *plan, struct pap *st)
{
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    int i = 0;
    while (i < st->nrreqs) {
        int done = 0;
        PC_MPI_CHECK(pc_mpi_test(&st->rreqs[i], &done, MPI_STATUS_IGNORE));
        if (done) {
            i++;
            continue;
        }
        pc_waiter_pause(&w);
    }
    st->nrreqs = 0;
    return PLANCOLL_SUCCESS;
}

/* ---- setup / teardown ------------------------------------------------------------------------- */

/* stores=auto (exec/store_chooser.h): the mode of the next executions; MPI_Pack's writes stay ordinary. */
static void set_stores(struct plancoll_plan_s *plan, bool stream)
{
    struct pap *st = plan->impl;
    if (st) st->stream = stream && plan->prob.contiguous;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct pap *st = plan->impl;
    if (!st) return;
    if (st->rma_win != MPI_WIN_NULL) {
        put_complete_flags(plan, st);
        MPI_Win_unlock_all(st->rma_win);
        MPI_Win_free(&st->rma_win);
    }
    pc_node_shm_free(&st->shm); /* a mapping: local, no peer touches mine; the fallback window: node-collective */
    free(st->remote);
    free(st->loc);
    free(st->scratch);
    free(st->served);
    free(st->got);
    free(st->region);
    free(st->reqs);
    free(st->idx);
    free(st->slot_at);
    free(st->my_slot);
    free(st->rreqs);
    free(st->batch);
    free(st);
    plan->impl = NULL;
}

/* Ranks below s that are not on node `node`: s's index among that node's remote sources. */
static int remote_index(const struct pc_layout *L, int node, int s)
{
    int below = 0;
    for (int i = L->node_first[node]; i < L->node_first[node + 1]; i++) below += L->node_ranks[i] < s;
    return s - below;
}

static int setup_local(struct plancoll_plan_s *plan, struct pap *st)
{
    const struct pc_layout *L = plan->layout;
    const int P = plan->size, r = plan->rank;
    st->transport = plan->params.transport == PAP_PUT && plan->prob.contiguous && L->nnodes > 1 ? PAP_PUT : PAP_P2P;
    st->nloc = L->node_size;
    st->me_loc = L->node_rank;
    st->nremote = P - st->nloc;
    st->remote = malloc(sizeof(int) * (size_t)(st->nremote + 1));
    st->loc = malloc(sizeof(int) * (size_t)st->nloc);
    st->served = calloc((size_t)P, 1);
    st->got = calloc((size_t)P, 1);
    st->region = calloc((size_t)st->nloc, sizeof(char *));
    st->reqs = malloc(sizeof(MPI_Request) * (size_t)(2 * st->nremote + 1));
    st->idx = malloc(sizeof(int) * (size_t)(2 * st->nremote + 1));
    if (!st->remote || !st->loc || !st->served || !st->got || !st->region || !st->reqs || !st->idx)
        return pc_error(PLANCOLL_ERR_NOMEM, "pap state for %d ranks", P);
    for (int j = 0; j < st->nloc; j++) st->loc[j] = L->node_ranks[L->node_first[L->node_id] + j];
    int n = 0;
    for (int i = 1; i < P; i++) {
        int t = (r + i) % P;
        if (L->node_of[t] != L->node_id) st->remote[n++] = t;
    }
    /* the in-place scratch (P m), each node rank's staging region (2 nloc m) and the put window (nremote m) */
    int64_t all_blocks, region_bytes;
    if (!pc_bytes_mul((int64_t)P, (int64_t)st->m, &all_blocks) ||
        !pc_bytes_mul(2 * (int64_t)st->nloc * st->nloc, (int64_t)st->m, &region_bytes))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "pap: %d blocks of %zu bytes reach 2^60 bytes", P, st->m);
    if (plan->in_place && P > 1) { /* one rank keeps its own block where it is: no scratch */
        st->scratch = malloc(st->m * (size_t)P);
        if (!st->scratch) return pc_error(PLANCOLL_ERR_NOMEM, "pap in-place scratch of %zu bytes", st->m * (size_t)P);
    }
    if (!st->contig) {
        /* staging holds m packed bytes per block: true of MPICH and of any homogeneous MPI */
        MPI_Count ps = 0, pr = 0; /* MPI_Pack_size's int would be MPI_UNDEFINED past 2 GiB */
        if (!plan->in_place) PC_MPI_CHECK(pc_mpi_pack_size(plan->sendcount, plan->stype.type, plan->comm, &ps));
        PC_MPI_CHECK(pc_mpi_pack_size(plan->recvcount, plan->rtype.type, plan->comm, &pr));
        if ((uint64_t)ps > st->m || (uint64_t)pr > st->m)
            return pc_error(PLANCOLL_ERR_DATATYPE, "pap: packed block of %lld bytes exceeds the %zu data bytes",
                            (long long)(ps > pr ? ps : pr), st->m);
    }
    if (st->transport == PAP_PUT) {
        st->slot_at = malloc(sizeof(MPI_Aint) * (size_t)P);
        st->my_slot = malloc(sizeof(MPI_Aint) * (size_t)P);
        st->rreqs = malloc(sizeof(MPI_Request) * (size_t)(2 * st->nremote + 1));
        st->batch = malloc(sizeof(int) * (size_t)(st->nremote + 1));
        if (!st->slot_at || !st->my_slot || !st->rreqs || !st->batch) return pc_error(PLANCOLL_ERR_NOMEM, "pap put state");
        st->slot0 = (MPI_Aint)(((size_t)P * 16 + PC_CACHELINE - 1) / PC_CACHELINE * PC_CACHELINE);
        for (int t = 0; t < P; t++) {
            bool remote = L->node_of[t] != L->node_id;
            st->slot_at[t] = remote ? st->slot0 + (MPI_Aint)remote_index(L, L->node_of[t], r) * (MPI_Aint)st->m : -1;
            st->my_slot[t] = remote ? st->slot0 + (MPI_Aint)remote_index(L, L->node_id, t) * (MPI_Aint)st->m : -1;
        }
    }
    return PLANCOLL_SUCCESS;
}

/* Intra-node staging: region j (receiver j) = nloc flag lines + 2 nloc slots, page aligned. Collective over the
 * communicator (pc_node_shm_alloc: two yield-waited collectives; an MPI window creation costs 0.2-0.6 s on an
 * oversubscribed node); a rank alone on its node maps nothing but takes part. */
static int setup_shm(struct plancoll_plan_s *plan, struct pap *st)
{
    struct pc_layout *L = plan->layout;
    st->flag_bytes = (size_t)st->nloc * PC_CACHELINE;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t region = (st->flag_bytes + 2 * (size_t)st->nloc * st->m + page - 1) / page * page;
    int err = pc_node_shm_alloc(L, st->nloc > 1 ? region * (size_t)st->nloc : 0, &st->shm);
    if (err) return err;
    /* Each rank reserves its own region first (its pages land on its NUMA domain, execute takes no page fault
     * there, and a full /dev/shm is an error now instead of SIGBUS later: reserve.h) and zeroes its flags; the
     * allreduce tells every rank whether any region has no memory, and publishes the zeros before any peer
     * posts. */
    uint64_t failed = 0;
    if (st->nloc > 1) {
        for (int j = 0; j < st->nloc; j++) st->region[j] = st->shm.base + (size_t)j * region;
        if (pc_shm_reserve(st->region[st->me_loc], region) == 0) memset(st->region[st->me_loc], 0, region);
        else failed = region;
        pc_node_shm_sync(&st->shm);
    }
    char what[128];
    snprintf(what, sizeof what, "pap: a rank's part of the node's staging area (%zu bytes, %zu per rank)",
             region * (size_t)st->nloc, region);
    if ((err = pc_shm_agree_reserved(L, PLANCOLL_SUCCESS, failed, what))) return err;
    if (st->nloc > 1) pc_node_shm_sync(&st->shm);
    return PLANCOLL_SUCCESS;
}

/* Transport 1: the window over plancoll's communicator. */
static int setup_rma(struct plancoll_plan_s *plan, struct pap *st)
{
    /* MPICH 4.0.2 (ch4) misplaces RMA into a node-local peer's MPI_Win_allocate memory unless every rank's size
     * is a multiple of 64 bytes (sizes 66 or 72 shift a put by -2 or -8 bytes, 128 does not; any P, with or
     * without cliques): round up. */
    MPI_Aint bytes = st->slot0 + (MPI_Aint)st->nremote * (MPI_Aint)st->m;
    bytes = (bytes + PC_CACHELINE - 1) / PC_CACHELINE * PC_CACHELINE;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_disp_unit", "true");
    int rc = MPI_Win_allocate(bytes, 1, info, plan->comm, &st->rma_base, &st->rma_win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        st->rma_win = MPI_WIN_NULL;
        return pc_mpi_error(rc, "MPI_Win_allocate (pap)");
    }
    /* MPICH places MPI_Win_allocate memory in /dev/shm when ranks share a node: reserve it (reserve.h) before
     * the flags are zeroed and before any peer puts into it. */
    uint64_t failed = 0;
    if (pc_shm_reserve(st->rma_base, (size_t)bytes) == 0) memset(st->rma_base, 0, (size_t)st->slot0);
    else failed = (uint64_t)bytes;
    PC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, st->rma_win));
    PC_MPI_CHECK(MPI_Win_sync(st->rma_win));
    /* every rank's failure known everywhere; also the barrier after the zeroing */
    int err = pc_shm_agree_reserved(plan->layout, PLANCOLL_SUCCESS, failed, "pap: a rank's put window");
    if (err) return err;
    PC_MPI_CHECK(MPI_Win_sync(st->rma_win));
    return PLANCOLL_SUCCESS;
}

/* Every rank learns whether any rank failed; a collective over comm comes next only when none did. */
static int agree(struct plancoll_plan_s *plan, int err, const char *what)
{
    return pc_agree_failure(plan->layout, err, "pap: another rank failed its %s", what);
}

static int setup(struct plancoll_plan_s *plan)
{
    struct pap *st = calloc(1, sizeof *st);
    if (!st) {
        /* The other ranks are about to agree on their local set-up (when blocks are not empty): join them. */
        int err = pc_error(PLANCOLL_ERR_NOMEM, "pap state");
        return plan->prob.block_bytes == 0 ? err : agree(plan, err, "set-up");
    }
    plan->impl = st;
    st->shm.win = st->rma_win = MPI_WIN_NULL; /* shm.win only as the fallback */
    st->m = (size_t)plan->prob.block_bytes;
    st->contig = plan->prob.contiguous;
    st->stream = plan->params.stores == PC_STORES_STREAM && st->contig; /* MPI_Pack: ordinary stores */
    if (st->m == 0) return PLANCOLL_SUCCESS; /* nothing moves; no window is needed */
    /* Failures are agreed on before each collective step, so no rank is left waiting in one. */
    int err = agree(plan, setup_local(plan, st), "set-up");
    if (err) return err;
    if (plan->prob.shape.max_ppn > 1) err = setup_shm(plan, st); /* collective: every rank or none */
    if (st->transport == PAP_PUT) {
        if ((err = agree(plan, err, "shared-memory set-up"))) return err;
        err = setup_rma(plan, st);
    }
    return err;
}

/* ---- execute ------------------------------------------------------------------------------------ */

/* ---- one execution as a resumable schedule (start, advance): every wait is a test that returns not-done ----
 * FLAGS (put transport) tests the previous execution's flag writes (their origin word changes next); BEGIN packs
 * the outgoing blocks in place, copies the own block, arrives (receives posted, or the announcements written)
 * and serves the peers, those already arrived first; COPY_OUT is one pass of serving and copying out whatever
 * has landed. The put transport's MPI_Win_flush targets only peers that announced this execution and still
 * wait for the block: it waits on their next call into MPI, never on a peer that has not arrived. */
enum pap_phase { PAP_FLAGS, PAP_BEGIN, PAP_COPY_OUT, PAP_DONE };

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow" /* GCC 12 and MPICH's MPI_STATUSES_IGNORE, see shm/requests.c */
/* Tests the previous execution's flag writes; *complete once all are done. */
static int put_test_flags(struct pap *st, bool *complete)
{
    int done = 0;
    if (st->nrreqs > 0) PC_MPI_CHECK(MPI_Testall(st->nrreqs, st->rreqs, &done, MPI_STATUSES_IGNORE));
    *complete = st->nrreqs == 0 || done;
    if (*complete) st->nrreqs = 0;
    return PLANCOLL_SUCCESS;
}

static int begin(struct plancoll_plan_s *plan, struct pap *st)
{
    const void *sbuf = plan->run_sendbuf;
    void *rbuf = plan->run_recvbuf;
    const int P = plan->size, r = plan->rank, nloc = st->nloc, nremote = st->nremote;
    const uint64_t k = st->seq;
    const size_t m = st->m;
    const int tag = pc_tag(plan, PC_TAG_PAP);
    int err;
    /* The outgoing blocks leave the receive buffer before anything lands in it. */
    if (plan->in_place) {
        for (int j = 0; j < P; j++) {
            if (j == r) continue;
            if (st->contig) {
                memcpy(st->scratch + (size_t)j * m, recv_block(plan, rbuf, j) + plan->rtype.true_lb, m);
            } else {
                MPI_Count pos = 0;
                PC_MPI_CHECK(pc_mpi_pack(recv_block(plan, rbuf, j), plan->recvcount, plan->rtype.type,
                                        st->scratch + (size_t)j * m, (MPI_Count)m, &pos, plan->comm));
            }
        }
    } else {
        err = pc_copy_typed(plan, send_block(plan, sbuf, r), plan->sendcount, &plan->stype, recv_block(plan, rbuf, r),
                            plan->recvcount, &plan->rtype);
        if (err) return err;
    }
    memset(st->served, 0, (size_t)P);
    memset(st->got, 0, (size_t)P);
    st->remote_got = st->local_got = st->active = 0;

    /* Arrival. */
    if (st->transport == PAP_P2P) {
        for (int i = 0; i < nremote; i++) {
            int s = st->remote[nremote - 1 - i]; /* (r - i) mod P order */
            PC_MPI_CHECK(MPI_Irecv(recv_block(plan, rbuf, s), plan->recvcount, plan->rtype.type, s, tag, plan->comm,
                                   &st->reqs[i]));
        }
        st->active = nremote;
    } else {
        for (int i = 0; i < nremote; i++)
            PC_MPI_CHECK(MPI_Raccumulate(&st->kval, 1, MPI_UINT64_T, st->remote[i], (MPI_Aint)r * 8, 1, MPI_UINT64_T,
                                         MPI_REPLACE, st->rma_win, &st->rreqs[st->nrreqs++]));
    }

    /* Serve: peers that have already arrived first (they wait for us), then everybody else. */
    for (int pass = 0; pass < 2; pass++) {
        if (st->transport == PAP_P2P) {
            for (int i = 0; i < nremote; i++) {
                int t = st->remote[i];
                if (st->served[t]) continue;
                if (pass == 0) {
                    /* t's receive slot is reqs[nremote - 1 - i]; a completed receive means t has arrived */
                    MPI_Request *rq = &st->reqs[nremote - 1 - i];
                    int done = 0;
                    if (*rq != MPI_REQUEST_NULL) {
                        PC_MPI_CHECK(pc_mpi_test(rq, &done, MPI_STATUS_IGNORE));
                        if (done) {
                            st->got[t] = 1;
                            st->remote_got++;
                            st->active--;
                        }
                    }
                    if (!st->got[t]) continue;
                }
                MPI_Request *sq = &st->reqs[nremote + i];
                if (plan->in_place)
                    PC_MPI_CHECK(pc_mpi_isend(st->scratch + (size_t)t * m, (MPI_Count)m, st->contig ? MPI_BYTE : MPI_PACKED,
                                             t, tag, plan->comm, sq));
                else
                    PC_MPI_CHECK(MPI_Isend(send_block(plan, sbuf, t), plan->sendcount, plan->stype.type, t, tag,
                                           plan->comm, sq));
                st->served[t] = 1;
                st->active++;
            }
        } else if (pass == 0) {
            bool progress = false;
            PC_MPI_CHECK(MPI_Win_sync(st->rma_win));
            if ((err = put_serve(plan, st, sbuf, k, &progress))) return err;
        }
        for (int i = 1; i < nloc; i++) {
            int j = (st->me_loc + i) % nloc;
            if (st->served[st->loc[j]] || (pass == 0 && !shm_arrived(st, j, k))) continue;
            if ((err = shm_serve(plan, st, sbuf, k, j))) return err;
        }
    }
    return PLANCOLL_SUCCESS;
}

/* One pass: copy out whatever has landed, in any order; *complete when everything has (and is served). */
static int copy_out(struct plancoll_plan_s *plan, struct pap *st, bool *complete, bool *progress)
{
    const void *sbuf = plan->run_sendbuf;
    void *rbuf = plan->run_recvbuf;
    const int P = plan->size, nloc = st->nloc, nremote = st->nremote;
    const uint64_t k = st->seq;
    int err;
    for (int i = 1; i < nloc && st->local_got < nloc - 1; i++) {
        int j = (st->me_loc - i + nloc) % nloc, s = st->loc[j];
        if (st->got[s] || !shm_arrived(st, j, k)) continue;
        if ((err = unpack_in(plan, st, shm_slot(st, st->me_loc, k, j), rbuf, s))) return err;
        st->got[s] = 1;
        st->local_got++;
        *progress = true;
    }
    bool remote_done;
    if (st->transport == PAP_P2P) {
        if (st->active > 0) {
            int outcount = 0;
            PC_MPI_CHECK(MPI_Testsome(2 * nremote, st->reqs, &outcount, st->idx, MPI_STATUSES_IGNORE));
            if (outcount != MPI_UNDEFINED && outcount > 0) {
                st->active -= outcount;
                *progress = true;
            }
        }
        remote_done = st->active == 0;
    } else {
        PC_MPI_CHECK(MPI_Win_sync(st->rma_win));
        if ((err = put_serve(plan, st, sbuf, k, progress))) return err;
        for (int i = 0; i < nremote && st->remote_got < nremote; i++) {
            int s = st->remote[nremote - 1 - i];
            if (st->got[s] || rma_flag(st, 1, s, P) < k) continue;
            if ((err = unpack_in(plan, st, st->rma_base + st->my_slot[s], rbuf, s))) return err;
            st->got[s] = 1;
            st->remote_got++;
            *progress = true;
        }
        bool all_served = true;
        for (int i = 0; i < nremote && all_served; i++) all_served = st->served[st->remote[i]];
        remote_done = st->remote_got == nremote && all_served;
    }
    *complete = remote_done && st->local_got == nloc - 1;
    if (!*complete && !*progress && st->transport == PAP_PUT) { /* UCX over TCP progresses RMA only inside MPI */
        int flag;
        PC_MPI_CHECK(MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, plan->comm, &flag, MPI_STATUS_IGNORE));
    }
    return PLANCOLL_SUCCESS;
}
#pragma GCC diagnostic pop

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct pap *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    if (st->m == 0) {
        st->phase = PAP_DONE;
        return PLANCOLL_SUCCESS;
    }
    st->seq++;
    st->phase = st->transport == PAP_PUT ? PAP_FLAGS : PAP_BEGIN;
    return PLANCOLL_SUCCESS;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pap *st = plan->impl;
    int err = PLANCOLL_SUCCESS;
    bool complete = false, progress = true;
    if (st->phase == PAP_FLAGS) {
        if ((err = put_test_flags(st, &complete))) return err;
        if (!complete) {
            *done = false;
            return PLANCOLL_SUCCESS;
        }
        st->kval = st->seq;
        st->phase = PAP_BEGIN;
    }
    if (st->phase == PAP_BEGIN) {
        if ((err = begin(plan, st))) return err;
        st->phase = PAP_COPY_OUT;
    }
    while (st->phase == PAP_COPY_OUT && progress) {
        progress = false;
        if ((err = copy_out(plan, st, &complete, &progress))) return err;
        if (complete) st->phase = PAP_DONE;
    }
    *done = st->phase == PAP_DONE;
    return PLANCOLL_SUCCESS;
}


/* Busy (exec/busy.h): the caller copies every node block itself (in and out of the shared slots), its own block and,
 * in place, the packing; each network block costs its posting and completion, with the Put transport its copy out
 * and two flags. Flag waits and the network are not busy. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const double P = p->shape.nranks, m = (double)p->block_bytes;
    const int ppn = p->shape.max_ppn;
    const double R = p->shape.nnodes > 1 ? P - p->shape.min_ppn : 0.0, n = ppn - 1;
    const bool stream = params->stores == PC_STORES_STREAM;
    double local = (n > 0 ? (pc_model_has_stream_handoff(mm) ? n * pc_cost_shm_handoff(mm, stream, ppn, m)
                                                              : n * pc_cost_shm_copy(mm, 2, ppn, m) +
                                                                    pc_cost_shared_store(mm, stream, n * m))
                          : 0.0) +
                   pc_cost_shm_copy(mm, 1, 1, m) +
                   (p->in_place ? pc_cost_transpose(mm, (P - 1) * m) : 0.0);
    if (params->transport == PAP_PUT)
        return local + R * (pc_busy_msg(p, mm, 1, m) + 2.0 * pc_busy_calls(mm, 1) + pc_cost_shm_copy(mm, 1, 1, m));
    return local + R * pc_busy_msg(p, mm, 1, m);
}

/* The staging holds a block's packed bytes in its data bytes, which MPI_Pack_size must confirm at setup; SimGrid
 * SMPI 3.32's MPI_Pack_size answers count x max(size, extent), more than the data of any type with holes. */
static const char *inapplicable(const struct pc_problem *p)
{
    if (PC_MPI_SIMULATED && !p->contiguous)
        return "SimGrid SMPI's MPI_Pack_size counts a non-contiguous type's holes (staging needs packed = data bytes)";
    return NULL;
}

const struct pc_algorithm pc_alltoall_pap = {
    .name = "alltoall.pap",
    .collective = PC_ALLTOALL,
    .summary = "arrival-pattern aware direct alltoall: shared-memory staging, arrived peers served first",
    .inapplicable = inapplicable,
    .params = PC_PARAM_TRANSPORT | PC_PARAM_STORES,
    .variants = variants,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .set_stores = set_stores,
    .teardown = teardown,
};
