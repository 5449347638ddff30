/* Node-aware alltoall over the node's shared segment ([GLEX], section 5; docs/algorithms.md).
 *
 * Segment layout (bytes, m = block size, P ranks, this node has ppn ranks, node s has ppn_s):
 *   S: for every node d (this one included), ppn_d * ppn blocks ordered [dest node rank t][source node rank i]
 *                                                                            ppn * P * m
 *   R: for every other node s, ppn_s * ppn blocks ordered [dest node rank t][source node rank i]
 * S and R have the same order, so a node pair's message is one contiguous run at both ends.
 * Execution:
 *   1. node barrier: nobody still reads the data area (it is shared by every plan of the communicator)
 *   2. leaders post their receives; every rank copies each of its send blocks to its place in S (the gather)
 *   3. leader j of this node handles the node pairs at offsets k = j, j+l, ... (k >= 1): it sends node
 *      (n+k) mod N's run of S as one contiguous message and receives node (n-k) mod N's blocks into R; each
 *      landed R[s] is announced with a sequence-numbered flag. (The run used to be sent from rows of S with an
 *      indexed datatype: MPICH over UCX tcp moved such messages at a fifth of the contiguous rate, 0.75 against
 *      3.5 GB/s from 64 KiB blocks up, which made the node-aware forms 4x slower than pap at large blocks.)
 *   4. every rank copies its own node's blocks from S, and its blocks of R[s] as their flags rise
 * Both ends of a node pair use the same leader index (k mod l), so the pairing needs no negotiation.
 * Stores (parameter stores=normal|stream, exec/reduce_stream.h): the gather's copies into S, which other cores read
 * next (the node's ranks in step 4, the leaders' sends in step 3), are memcpys or streaming copies (no read for
 * ownership of lines the readers of the last execution hold; the readers then miss their caches); a rank fences
 * its streaming stores before the progress flag that publishes them. The scatter writes the caller's private
 * receive buffer: ordinary stores. Non-contiguous types go through MPI_Pack, ordinary stores in either mode (the
 * mode is then not offered: pc_staging_store_mode).
 * Transport: point-to-point (Irecv into R, Isend from S), or MPI_Put into the peer node's segment, exposed at
 * plan time in a window locked once (MPI_Win_lock_all). With Put the receiving leader first grants a credit
 * (puts the execution number into the sender's segment) once its node no longer reads R; the sender waits for
 * it, puts the blocks, flushes, then puts the arrival flag, which every rank of the target node polls in shared
 * memory. Only the receiving leader drives MPI progress (some transports apply a put only while the target calls
 * into MPI), so it keeps polling until its own receives have landed.
 * MPML waits for the whole gather (a barrier) before sending and scatters after all its receives; ONMPML writes
 * its S row destination node by destination node behind progress flags, so a leader sends one node's blocks as
 * soon as every rank has written them while the rest is still being gathered, keeps at most `depth` sends in
 * flight, and every rank scatters each R[s] as soon as it lands.
 * Shared heap (one copy instead of two): on a single node, a rank whose send buffer came from plancoll_malloc
 * (contiguous types, not in place) publishes where it lies instead of copying it into S, and the others read
 * their blocks straight from it; a closing node barrier then keeps the owner from returning (and reusing the
 * buffer) while peers still read it. The decision is per rank and per execution (execute_buffers may pass other
 * buffers), published in a descriptor slot before the barrier that readers wait on.
 * Cost ([GLEX] eq. 7-9 and T_ONMPML in the model's primitives; ppn = max_ppn, l leaders, N nodes):
 *   piece   = shm_copy(1, ppn, ppn m)   one node's share of a rank's row copied in (gather) or out (scatter),
 *                                       every rank of the node copying at once (tau = ppn: here every rank copies
 *                                       its own row, so the leaders' placement does not change tau)
 *   T_gather = T_scatter = N piece
 *   r = ceil((N-1)/l): the node-pair messages of the busiest leader; the node's link carries all N - 1
 *   T_inter = net_posted(k, r, ppn^2 m), k = (N-1)/r                       point-to-point
 *             the busiest leader's r node-pair messages, all posted at once (model.h: one start-up, then the
 *             bytes), while the node's other leaders send theirs: k is the mean number of the node's messages in
 *             flight over the busiest leader's r (N - 1 in all, not l r: when l does not divide N - 1 the last
 *             round has fewer senders), between the model's integer concurrency levels by linear interpolation;
 *             each message a contiguous run of S (no packing: [GLEX]'s b' sz ppn^2 term went with the indexed
 *             datatype)
 *           = (r-1) net_concurrent(min(l, N-1), ppn^2 m) + net_concurrent(last, ppn^2 m) + 2 r net(8)   MPI_Put:
 *             pair after pair, each waiting for its credit, flushed, then flagged; the last round's
 *             last = N - 1 - (r-1) min(l, N-1) leaders put at once
 *   T_sync  = 2 sync_us                 the opening node barrier and the gather barrier / arrival flag
 *             + turns(2 + [N > 1])      their scheduler turns, and the one wait for the posted node-pair messages
 *                                       (cost.h: on an oversubscribed host only)
 *   T_store = shared_store(stores, P m)  the gather's writes into S in the plan's store mode beyond what the copy
 *                                       terms price (model.h, pc_cost_shared_store: 0 for the cheaper mode);
 *                                       where calibration timed the 2-copy handoff in both store modes
 *                                       (model.h: shm_stream_time), the node's own piece is that handoff instead:
 *                                       T_store = shm_handoff(stores, ppn, ppn m) - 2 piece
 *                                                 + shared_store(stores, (N-1) ppn m)
 *   MPML (and L-a2a, l = 1): T_gather + T_inter + T_scatter + T_sync + T_store
 *   ONMPML: T_start + max(T_inter, T_intra) + T_end + T_sync + T_store, T_start = T_end = piece (the first
 *           gather and the last scatter), T_intra = (2N - 2) piece (the rest of the gather and scatter).
 * Busy (exec/busy.h; the busiest rank is a leader): T_gather + T_scatter + T_store (copies) + ceil((N-1)/l) (2 o: its send
 *   and receive of each node pair it handles, posted and completed) + with Put 2 o per pair (credit, arrival flag);
 *   T_inter's network time and T_sync are waiting. At most the estimate (pc_na_busy says where the sum exceeds it). */
#include "exec/alltoall/node_aware.h"
#include "exec/cost.h"
#include "exec/busy.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/sizes.h"
#include "shm/heap.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h"
#include "shm/leaders.h"
#include "shm/segment.h"
#include "shm/wait.h"
#include "exec/seg_window.h"
#include "exec/reduce_stream.h"

/* The caller's send side: its buffer, or the receive buffer in place. */
struct send_side {
    const void *buf;
    const struct pc_typeinfo *t;
    int count;
};

/* Where a rank's send row is this execution: in S, or in its plancoll_malloc buffer. */
struct row_desc {
    int32_t in_heap, arena;
    uint64_t offset;
    char pad[PC_CACHELINE - 16];
};

struct na_state {
    struct pc_na_config cfg;
    int N, n, ppn, l, me, leader_index; /* leader_index: -1 when this rank is no leader */
    int *leader_rank;                   /* [N * l] global rank of leader j of node x */
    struct pc_segment *seg;
    int first_flag, nflags;
    size_t m;
    bool stream;           /* the gather writes S with streaming stores (stores=stream, contiguous types) */
    struct row_desc *desc; /* [ppn] */
    char *S, *R;
    size_t *r_off;         /* [N] offset of R[s] in R */
    MPI_Datatype block;    /* m bytes */
    int nsend, nrecv;
    int *send_node, *recv_node; /* in offset order */
    int *send_offset;      /* offset k of each send */
    size_t *s_block;       /* [P] where this rank's block for each rank goes in S, in blocks */
    size_t own_run;        /* where this node's own run starts in S, in blocks */
    MPI_Request *reqs;     /* [nrecv + nsend]: receives first */
    uint64_t seq;
    uint64_t user; /* this plan's claim on the segment's data area */
    struct pc_seg_window w; /* Put transport: data_disp points at each rank's R area */
    /* the execution in progress (pc_na_start, pc_na_advance) */
    int phase;                  /* enum na_phase */
    struct send_side ss;
    int sent, exchanged, recv_done, in_flight_done, scattered, next_node;
    bool own_done, closing;
    unsigned char *done;        /* [nrecv + nsend + N]: requests completed, then source nodes scattered */
};

struct pc_na_config pc_na_config_of(enum pc_na_form form, const struct pc_params *p)
{
    struct pc_na_config c = {.leaders = form == PC_NA_LEADER ? 1 : p->leaders,
                             .numa_spread = form != PC_NA_LEADER && p->placement == 1,
                             .overlap = form == PC_NA_ONMPML,
                             .depth = form == PC_NA_ONMPML ? p->segments : 0,
                             .put = p->transport == 1,
                             .stream = p->stores == PC_STORES_STREAM};
    return c;
}

int pc_na_leaders_used(const struct pc_problem *p, int requested)
{
    int l = requested < 1 ? 1 : requested;
    return l > p->shape.min_ppn ? p->shape.min_ppn : l;
}

bool pc_na_put_fits(const struct pc_problem *p)
{
    double most = (double)p->shape.max_ppn * p->shape.max_ppn * (double)p->block_bytes;
    return most <= (double)PC_RMA_MAX_BYTES;
}

static inline int rank_of(const struct pc_layout *L, int node, int local) { return L->node_ranks[L->node_first[node] + local]; }

/* Where R[s] starts in node d's R area, in bytes (the formula the owner used for its own r_off). */
static size_t remote_r_offset(const struct pc_layout *L, const struct na_state *st, int d, int s)
{
    return pc_na_r_offset_blocks(L->node_sizes, d, s) * st->m;
}

int pc_na_setup(struct plancoll_plan_s *plan, const struct pc_na_config *cfg)
{
    struct pc_layout *L = plan->layout;
    struct na_state *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "node-aware state");
    plan->impl = st;
    st->cfg = *cfg;
    st->block = MPI_DATATYPE_NULL;
    pc_segwin_init(&st->w);
    st->N = L->nnodes;
    st->n = L->node_id;
    st->ppn = L->node_size;
    st->me = L->node_rank;
    st->l = pc_na_leaders_used(&plan->prob, cfg->leaders);
    st->m = (size_t)plan->prob.block_bytes;
    /* agreed contiguity: MPI_Pack's writes are ordinary stores whatever the mode (pc_staging_store_mode) */
    st->stream = cfg->stream && plan->prob.contiguous;
    if (st->m == 0) return PLANCOLL_SUCCESS;
    /* Decided from agreed figures only (the largest node), so every rank refuses alike before any collective. */
    const int64_t most_ppn = plan->prob.shape.max_ppn;
    int64_t row_bytes, seg_bytes;
    if (!pc_bytes_mul((int64_t)L->size, (int64_t)st->m, &row_bytes) || !pc_bytes_mul(2 * most_ppn, row_bytes, &seg_bytes))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "node-aware alltoall: a segment of %lld x %d blocks of %zu bytes reaches 2^60",
                        (long long)(2 * most_ppn), L->size, st->m);
    if (cfg->put && st->N > 1 && !pc_na_put_fits(&plan->prob))
        return pc_error(PLANCOLL_ERR_INAPPLICABLE,
                        "node-aware alltoall: transport=put moves a node pair's blocks in one MPI_Put, and %lld x %lld "
                        "blocks of %zu bytes exceed the %llu bytes one put may carry here",
                        (long long)most_ppn, (long long)most_ppn, st->m, (unsigned long long)PC_RMA_MAX_BYTES);

    /* leaders of every node, from every rank's NUMA domain */
    st->leader_rank = malloc(sizeof(int) * (size_t)st->N * (size_t)st->l);
    int *numa = malloc(sizeof(int) * (size_t)L->size), *pick = malloc(sizeof(int) * (size_t)st->l);
    if (!st->leader_rank || !numa || !pick) {
        free(numa);
        free(pick);
        return pc_error(PLANCOLL_ERR_NOMEM, "leaders");
    }
    st->leader_index = -1;
    for (int x = 0; x < st->N; x++) {
        for (int i = 0; i < L->node_sizes[x]; i++) numa[i] = L->numa_of_rank[rank_of(L, x, i)];
        pc_choose_leaders(numa, L->node_sizes[x], L->max_numa, st->l, cfg->numa_spread, pick);
        for (int j = 0; j < st->l; j++) {
            st->leader_rank[x * st->l + j] = rank_of(L, x, pick[j]);
            if (x == st->n && pick[j] == st->me) st->leader_index = j;
        }
    }
    free(numa);
    free(pick);

    /* segment: S, then R */
    size_t P = (size_t)L->size, s_bytes = (size_t)st->ppn * P * st->m;
    st->r_off = calloc((size_t)st->N, sizeof(size_t));
    if (!st->r_off) return pc_error(PLANCOLL_ERR_NOMEM, "node-aware offsets");
    for (int s = 0; s < st->N; s++) st->r_off[s] = pc_na_r_offset_blocks(L->node_sizes, st->n, s) * st->m;
    size_t r_bytes = pc_na_r_offset_blocks(L->node_sizes, st->n, st->N) * st->m;
    /* arrival per source node, progress per node rank, credit per peer node, the plan's barrier per node rank */
    st->nflags = 2 * st->N + 2 * st->ppn;
    size_t d_bytes = sizeof(struct row_desc) * (size_t)st->ppn;
    int err = pc_segment_acquire(L, d_bytes + s_bytes + r_bytes, st->nflags, &st->seg, &st->first_flag);
    if (err) return err;
    st->user = pc_segment_new_user();
    st->desc = (struct row_desc *)st->seg->base;
    st->S = st->seg->base + d_bytes;
    st->R = st->S + s_bytes;

    /* this leader's node pairs, and its datatypes */
    if (st->m <= INT_MAX) PC_MPI_CHECK(MPI_Type_contiguous((int)st->m, MPI_BYTE, &st->block));
    else PC_MPI_CHECK(pc_mpi_type_contiguous((MPI_Count)st->m, MPI_BYTE, &st->block)); /* a block past 2 GiB */
    PC_MPI_CHECK(MPI_Type_commit(&st->block));
    st->send_node = malloc(sizeof(int) * (size_t)st->N);
    st->recv_node = malloc(sizeof(int) * (size_t)st->N);
    st->send_offset = malloc(sizeof(int) * (size_t)st->N);
    st->s_block = malloc(sizeof(size_t) * (size_t)L->size);
    st->reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)st->N);
    st->done = malloc(3 * (size_t)st->N);
    if (!st->send_node || !st->recv_node || !st->send_offset || !st->s_block || !st->reqs || !st->done)
        return pc_error(PLANCOLL_ERR_NOMEM, "node-aware schedule");
    for (int j = 0; j < L->size; j++)
        st->s_block[j] = pc_na_send_block(L->node_sizes, st->ppn, L->node_of[j], L->local_rank_of[j], st->me);
    st->own_run = pc_na_s_offset_blocks(L->node_sizes, st->ppn, st->n);
    if (st->leader_index >= 0)
        for (int k = 1; k < st->N; k++) {
            if (pc_na_pair_leader(k, st->l) != st->leader_index) continue;
            st->recv_node[st->nrecv++] = pc_na_recv_node(st->n, st->N, k);
            st->send_node[st->nsend] = pc_na_send_node(st->n, st->N, k);
            st->send_offset[st->nsend] = k;
            st->nsend++;
        }
    if (cfg->put && st->N > 1) return pc_segwin_open(&st->w, L, st->seg, (size_t)(st->R - st->seg->base), st->first_flag);
    return PLANCOLL_SUCCESS;
}

/* stores=auto (exec/store_chooser.h): the mode of the next executions; MPI_Pack's writes stay ordinary. */
void pc_na_set_stores(struct plancoll_plan_s *plan, bool stream)
{
    struct na_state *st = plan->impl;
    if (st) st->stream = stream && plan->prob.contiguous;
}

void pc_na_teardown(struct plancoll_plan_s *plan)
{
    struct na_state *st = plan->impl;
    if (!st) return;
    if (st->block != MPI_DATATYPE_NULL) MPI_Type_free(&st->block);
    pc_segwin_close(&st->w);
    if (st->seg) pc_segment_release(st->seg, st->first_flag, st->nflags);
    free(st->leader_rank);
    free(st->r_off);
    free(st->send_node);
    free(st->recv_node);
    free(st->send_offset);
    free(st->s_block);
    free(st->reqs);
    free(st->done);
    free(st);
    plan->impl = NULL;
}

/* ---- moving blocks between the caller's typed buffers and the segment's bytes ---- */
/* dst is in S: with stream, written by streaming stores (the caller fences before its progress flag). */
static int load_block(const struct plancoll_plan_s *plan, const void *buf, const struct pc_typeinfo *t, int count, int j,
                      char *dst, size_t m, bool stream)
{
    const char *src = pc_elem_ptr(buf, t, (MPI_Aint)j * count);
    if (t->contiguous) {
        pc_stage_copy(stream, dst, src + t->true_lb, m);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0;
    PC_MPI_CHECK(pc_mpi_pack(src, count, t->type, dst, (MPI_Count)m, &pos, plan->comm));
    return PLANCOLL_SUCCESS;
}

static int store_block(const struct plancoll_plan_s *plan, void *rbuf, int j, const char *src, size_t m)
{
    const struct pc_typeinfo *t = &plan->rtype;
    char *dst = pc_elem_ptr(rbuf, t, (MPI_Aint)j * plan->recvcount);
    if (t->contiguous) {
        memcpy(dst + t->true_lb, src, m);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0;
    PC_MPI_CHECK(pc_mpi_unpack(src, (MPI_Count)m, &pos, dst, plan->recvcount, t->type, plan->comm));
    return PLANCOLL_SUCCESS;
}

/* Publishes where this rank's send row is; true when peers will read it from the caller's heap buffer. */
static bool publish_row(const struct plancoll_plan_s *plan, const struct na_state *st, const struct send_side *ss)
{
    struct row_desc *d = &st->desc[st->me];
    int arena = 0;
    size_t offset = 0;
    d->in_heap = st->N == 1 && !plan->in_place && ss->t->contiguous &&
                 pc_heap_find(plan->layout, (const char *)ss->buf + ss->t->true_lb, (size_t)plan->size * st->m, &arena,
                              &offset);
    d->arena = arena;
    d->offset = offset;
    return d->in_heap;
}

/* Node rank i's block for this rank, wherever it is: in i's heap buffer, or in this node's own run of S. */
static const char *own_block(const struct plancoll_plan_s *plan, const struct na_state *st, int i)
{
    const struct row_desc *d = &st->desc[i];
    if (d->in_heap) return pc_heap_peer_address(plan->layout, i, d->arena, d->offset) + (size_t)plan->rank * st->m;
    return st->S + (st->own_run + (size_t)st->me * (size_t)st->ppn + (size_t)i) * st->m;
}

/* This rank's block for rank j, copied to its place in S. */
static int write_block(const struct plancoll_plan_s *plan, const struct na_state *st, const struct send_side *ss, int j)
{
    return load_block(plan, ss->buf, ss->t, ss->count, j, st->S + st->s_block[j] * st->m, st->m, st->stream);
}

static int write_row(const struct plancoll_plan_s *plan, const struct na_state *st, const struct send_side *ss)
{
    if (publish_row(plan, st, ss)) return PLANCOLL_SUCCESS;
    for (int j = 0; j < plan->size; j++) {
        int err = write_block(plan, st, ss, j);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

/* Copies this rank's blocks of node s: from the S rows for its own node, from R[s] otherwise. */
static int scatter_node(const struct plancoll_plan_s *plan, const struct na_state *st, int s, void *rbuf)
{
    const struct pc_layout *L = plan->layout;
    for (int i = 0; i < L->node_sizes[s]; i++) {
        const char *src = s == st->n ? own_block(plan, st, i)
                                     : st->R + st->r_off[s] + pc_na_recv_block(L->node_sizes[s], st->me, i) * st->m;
        int err = store_block(plan, rbuf, rank_of(L, s, i), src, st->m);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

static _Atomic uint64_t *arrival_flag(const struct na_state *st, int s) { return pc_segment_flag(st->seg, st->first_flag + s); }
static _Atomic uint64_t *progress_flag(const struct na_state *st, int i)
{
    return pc_segment_flag(st->seg, st->first_flag + st->N + i);
}

static _Atomic uint64_t *credit_flag(const struct na_state *st, int d)
{
    return pc_segment_flag(st->seg, st->first_flag + st->N + st->ppn + d);
}

/* Receiving side, at the start of an execution: post receives, or grant the senders a credit. */
static int post_receives(const struct plancoll_plan_s *plan, struct na_state *st)
{
    const struct pc_layout *L = plan->layout;
    for (int i = 0; i < st->nrecv; i++) {
        int s = st->recv_node[i], peer = st->leader_rank[s * st->l + st->leader_index];
        if (st->cfg.put) {
            /* credits live after the arrival and progress flags: index N + ppn_s + (this node) */
            int err = pc_segwin_put_flag(&st->w, peer, st->N + L->node_sizes[s] + st->n, st->seq);
            if (err) return err;
        } else {
            PC_MPI_CHECK(MPI_Irecv(st->R + st->r_off[s], L->node_sizes[s] * st->ppn, st->block, peer, pc_tag(plan, PC_TAG_NODE_AWARE),
                                   plan->comm, &st->reqs[i]));
        }
    }
    return PLANCOLL_SUCCESS;
}

/* Sending side: 1 when send i was started (or, with Put, done), 0 when its credit has not come yet. */
static int try_send(const struct plancoll_plan_s *plan, struct na_state *st, int i, int *started)
{
    int d = st->send_node[i], peer = st->leader_rank[d * st->l + st->leader_index];
    *started = 0;
    if (!st->cfg.put) {
        PC_MPI_CHECK(MPI_Isend(st->S + pc_na_s_offset_blocks(plan->layout->node_sizes, st->ppn, d) * st->m,
                               plan->layout->node_sizes[d] * st->ppn, st->block, peer, pc_tag(plan, PC_TAG_NODE_AWARE), plan->comm, &st->reqs[st->nrecv + i]));
        *started = 1;
        return PLANCOLL_SUCCESS;
    }
    if (atomic_load_explicit(credit_flag(st, d), memory_order_acquire) < st->seq) return PLANCOLL_SUCCESS;
    const struct pc_layout *L = plan->layout;
    MPI_Aint disp = st->w.data_disp[peer] + (MPI_Aint)remote_r_offset(L, st, d, st->n);
    int count = st->ppn * L->node_sizes[d];
    PC_MPI_CHECK(MPI_Put(st->S + pc_na_s_offset_blocks(L->node_sizes, st->ppn, d) * st->m, count, st->block, peer, disp,
                         count, st->block, st->w.win));
    PC_MPI_CHECK(MPI_Win_flush(peer, st->w.win)); /* the blocks are in place before the flag says so */
    int err = pc_segwin_put_flag(&st->w, peer, st->n, st->seq);
    if (err) return err;
    st->reqs[st->nrecv + i] = MPI_REQUEST_NULL;
    *started = 1;
    return PLANCOLL_SUCCESS;
}

/* Receiving leader: 1 in *landed when receive i is complete (and its arrival flag is up). */
static int poll_receive(struct na_state *st, int i, int *landed)
{
    if (st->cfg.put) {
        *landed = atomic_load_explicit(arrival_flag(st, st->recv_node[i]), memory_order_acquire) >= st->seq;
        if (!*landed) pc_segwin_progress(&st->w);
        return PLANCOLL_SUCCESS;
    }
    PC_MPI_CHECK(pc_mpi_test(&st->reqs[i], landed, MPI_STATUS_IGNORE));
    if (*landed) pc_flag_post(arrival_flag(st, st->recv_node[i]), st->seq);
    return PLANCOLL_SUCCESS;
}

/* ---- one execution as a resumable schedule (start, advance): every wait is a test that returns not-done ----
 * Phases: HOLD (this plan takes the segment's data area: another started execution may still use it on this
 * rank), OPEN (this plan's node barrier: every node rank is done with what earlier collectives left in the data
 * area), then the form's work, then CLOSE (this plan's second barrier, only when peers read rows from heap
 * buffers). The barriers use the plan's own flags, not the layout's: executions of several plans in flight may
 * reach their barriers in different orders on different ranks, so the layout's shared sequence could not pair
 * them. */
enum na_phase { NA_HOLD, NA_OPEN, NA_GATHERED, NA_EXCHANGE, NA_SCATTER, NA_LOOP, NA_CLOSE, NA_DONE };

static _Atomic uint64_t *barrier_flag(const struct na_state *st, int i)
{
    return pc_segment_flag(st->seg, st->first_flag + 2 * st->N + st->ppn + i);
}

/* Posts this rank's arrival at the plan's barrier `value`. */
static void barrier_arrive(const struct na_state *st, uint64_t value) { pc_flag_post(barrier_flag(st, st->me), value); }

/* True once every node rank has arrived at barrier `value`. */
static bool barrier_passed(const struct na_state *st, uint64_t value)
{
    for (int i = 0; i < st->ppn; i++)
        if (atomic_load_explicit(barrier_flag(st, i), memory_order_acquire) < value) return false;
    return true;
}

/* True once every node rank's progress flag has reached value (its row written up to that piece). */
static bool rows_ready(const struct na_state *st, uint64_t value)
{
    for (int i = 0; i < st->ppn; i++)
        if (atomic_load_explicit(progress_flag(st, i), memory_order_acquire) < value) return false;
    return true;
}

/* The leader's sends and receives (the phased form), tested: *complete once all are done. Sends start as their
 * credits come (Put); every landed receive is announced at once. */
static int exchange_step(struct plancoll_plan_s *plan, struct na_state *st, bool *complete, bool *moved)
{
    while (st->sent < st->nsend) {
        int started;
        int err = try_send(plan, st, st->sent, &started);
        if (err) return err;
        if (!started) break;
        st->sent++;
        *moved = true;
    }
    for (int i = 0; i < st->nrecv + st->sent; i++) {
        if (st->done[i]) continue;
        int ok = 0;
        if (i < st->nrecv) {
            int err = poll_receive(st, i, &ok);
            if (err) return err;
        } else {
            PC_MPI_CHECK(pc_mpi_test(&st->reqs[i], &ok, MPI_STATUS_IGNORE)); /* a completed Put's slot is NULL */
        }
        if (!ok) continue;
        st->done[i] = 1;
        st->exchanged++;
        *moved = true;
    }
    *complete = st->sent == st->nsend && st->exchanged == st->nrecv + st->nsend;
    return PLANCOLL_SUCCESS;
}

/* ONMPML: one pass over every step that can be taken; *complete when none is left. */
static int overlapped_step(struct plancoll_plan_s *plan, struct na_state *st, void *rbuf, bool *complete, bool *moved)
{
    const uint64_t base = (st->seq - 1) * (uint64_t)st->N; /* progress values of earlier executions */
    int err;
    /* sends: the next node's blocks once every rank of this node has written them */
    int depth = st->cfg.depth > 0 ? st->cfg.depth : st->nsend;
    while (st->sent < st->nsend && st->sent - st->in_flight_done < depth) {
        if (!rows_ready(st, base + (uint64_t)st->send_offset[st->sent] + 1)) break;
        int started;
        if ((err = try_send(plan, st, st->sent, &started))) return err;
        if (!started) break;
        st->sent++;
        if (st->cfg.put) st->in_flight_done++; /* a put is complete once flushed */
        *moved = true;
    }
    /* completions: announce landed blocks at once */
    for (int i = 0; i < st->nrecv + (st->cfg.put ? 0 : st->sent); i++) {
        bool is_recv = i < st->nrecv;
        if (st->done[i]) continue;
        int flag = 0;
        if (is_recv) {
            if ((err = poll_receive(st, i, &flag))) return err;
        } else {
            PC_MPI_CHECK(pc_mpi_test(&st->reqs[i], &flag, MPI_STATUS_IGNORE));
        }
        if (!flag) continue;
        st->done[i] = 1;
        *moved = true;
        if (is_recv)
            st->recv_done++;
        else
            st->in_flight_done++;
    }
    /* scatter whatever has landed */
    if (!st->own_done && rows_ready(st, base + 1)) {
        if ((err = scatter_node(plan, st, st->n, rbuf))) return err;
        st->own_done = true;
        *moved = true;
    }
    for (int k = 1; k < st->N; k++) {
        int s = (st->n - k + st->N) % st->N;
        if (st->done[st->nrecv + st->nsend + s]) continue;
        if (atomic_load_explicit(arrival_flag(st, s), memory_order_acquire) < st->seq) continue;
        if ((err = scatter_node(plan, st, s, rbuf))) return err;
        st->done[st->nrecv + st->nsend + s] = 1;
        st->scattered++;
        *moved = true;
    }
    *complete = st->own_done && st->scattered == st->N - 1 && st->sent == st->nsend && st->recv_done == st->nrecv &&
                st->in_flight_done == st->nsend;
    return PLANCOLL_SUCCESS;
}

/* After the opening barrier: receives posted (or credits granted), this rank's row written. */
static int begin_work(struct plancoll_plan_s *plan, struct na_state *st)
{
    const struct pc_layout *L = plan->layout;
    int err = post_receives(plan, st);
    if (err) return err;
    if (!st->cfg.overlap) {
        if ((err = write_row(plan, st, &st->ss))) return err;
        if (st->stream) pc_stream_fence(); /* the flag's release store does not order streaming stores */
        pc_flag_post(progress_flag(st, st->me), st->seq * (uint64_t)st->N); /* the whole row: every piece */
        st->phase = NA_GATHERED;
        return PLANCOLL_SUCCESS;
    }
    /* gather, destination node by destination node in offset order, so offset k is complete after k+1 pieces */
    const uint64_t base = (st->seq - 1) * (uint64_t)st->N;
    bool in_heap = publish_row(plan, st, &st->ss);
    for (int k = 0; k < st->N; k++) {
        int d = (st->n + k) % st->N;
        for (int t = 0; t < L->node_sizes[d] && !in_heap; t++) {
            if ((err = write_block(plan, st, &st->ss, rank_of(L, d, t)))) return err;
        }
        if (st->stream && !in_heap) pc_stream_fence();
        pc_flag_post(progress_flag(st, st->me), base + (uint64_t)k + 1);
    }
    st->phase = NA_LOOP;
    return PLANCOLL_SUCCESS;
}

/* The work of the current phase; *moved when something was done (the caller then tries the next phase at once). */
static int na_step(struct plancoll_plan_s *plan, struct na_state *st, bool *moved)
{
    void *rbuf = plan->run_recvbuf;
    bool complete = false;
    int err;
    switch (st->phase) {
    case NA_HOLD:
        if (!pc_segment_try_hold(st->seg, st->user)) return PLANCOLL_SUCCESS;
        pc_segment_claim(st->seg, st->user);
        barrier_arrive(st, 2 * st->seq - 1);
        st->phase = NA_OPEN;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case NA_OPEN:
        if (!barrier_passed(st, 2 * st->seq - 1)) return PLANCOLL_SUCCESS;
        *moved = true;
        return begin_work(plan, st);
    case NA_GATHERED: /* MPML: every row is written (the gather barrier), then the own node and the exchange */
        if (!rows_ready(st, st->seq * (uint64_t)st->N)) return PLANCOLL_SUCCESS;
        if ((err = scatter_node(plan, st, st->n, rbuf))) return err;
        st->phase = st->leader_index >= 0 ? NA_EXCHANGE : NA_SCATTER;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case NA_EXCHANGE:
        if ((err = exchange_step(plan, st, &complete, moved))) return err;
        if (complete) st->phase = NA_SCATTER, *moved = true;
        return PLANCOLL_SUCCESS;
    case NA_SCATTER: /* the other nodes' blocks in node order, each once its arrival flag is up */
        while (st->next_node < st->N) {
            int s = st->next_node;
            if (s != st->n) {
                if (atomic_load_explicit(arrival_flag(st, s), memory_order_acquire) < st->seq) return PLANCOLL_SUCCESS;
                if ((err = scatter_node(plan, st, s, rbuf))) return err;
                *moved = true;
            }
            st->next_node++;
        }
        st->phase = NA_CLOSE;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case NA_LOOP:
        if ((err = overlapped_step(plan, st, rbuf, &complete, moved))) return err;
        if (complete) st->phase = NA_CLOSE, *moved = true;
        return PLANCOLL_SUCCESS;
    case NA_CLOSE: {
        /* Rows read from heap buffers: their owners may not return (and reuse them) before every reader is done. */
        bool heap = false;
        for (int i = 0; i < st->ppn && !heap; i++) heap = st->desc[i].in_heap;
        if (heap) {
            if (!st->closing) barrier_arrive(st, 2 * st->seq), st->closing = true;
            if (!barrier_passed(st, 2 * st->seq)) return PLANCOLL_SUCCESS;
        }
        st->phase = NA_DONE;
        *moved = true;
        return PLANCOLL_SUCCESS;
    }
    case NA_DONE:
        return PLANCOLL_SUCCESS;
    }
    return PLANCOLL_SUCCESS;
}

int pc_na_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct na_state *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    if (st->m == 0) {
        st->phase = NA_DONE;
        return PLANCOLL_SUCCESS;
    }
    st->seq++;
    st->ss = (struct send_side){plan->in_place ? rbuf : sbuf, plan->in_place ? &plan->rtype : &plan->stype,
                                plan->in_place ? plan->recvcount : plan->sendcount};
    st->phase = NA_HOLD;
    st->sent = st->exchanged = st->recv_done = st->in_flight_done = st->scattered = 0;
    st->next_node = 0;
    st->own_done = st->closing = false;
    memset(st->done, 0, (size_t)(st->nrecv + st->nsend + st->N));
    for (int i = 0; i < st->nrecv + st->nsend; i++) st->reqs[i] = MPI_REQUEST_NULL;
    return PLANCOLL_SUCCESS;
}

int pc_na_advance(struct plancoll_plan_s *plan, bool *done)
{
    struct na_state *st = plan->impl;
    bool moved = true;
    int err = PLANCOLL_SUCCESS;
    while (!err && moved && st->phase != NA_DONE) {
        moved = false;
        err = na_step(plan, st, &moved);
    }
    *done = err || st->phase == NA_DONE;
    if (*done) {
        if (st->seg) pc_segment_unhold(st->seg, st->user);
        return err;
    }
    /* A Put target must keep MPI progressing while it waits on shared memory (some transports apply a put only
     * while the target calls into MPI). */
    if (st->cfg.put && st->N > 1) pc_segwin_progress(&st->w);
    return PLANCOLL_SUCCESS;
}

/* T_inter of the header: a node's `pairs` node-pair messages of `bytes` each, dealt round robin to l leaders. The
 * busiest leader sends r = ceil(pairs / l) of them, but the node's link carries `pairs`, not l r: charging every
 * round at l senders (as the estimate did) billed a node the bytes of up to l - 1 messages it never sends, up to
 * 1.9x the link's time at 18 nodes and 16 leaders, which ranked leader counts that do not divide N - 1 behind one
 * leader by that artefact alone. */
static double na_inter(const struct pc_machine_model *mm, int pairs, int l, double bytes, bool put)
{
    const int full = l < pairs ? l : pairs;              /* senders of every round but the last */
    const int r = (pairs + full - 1) / full, last = pairs - (r - 1) * full;
    if (put) /* rounds one after the other, each waiting for its credit */
        return (r - 1) * pc_cost_net_concurrent(mm, full, bytes) + pc_cost_net_concurrent(mm, last, bytes) +
               2.0 * r * pc_cost_net(mm, 8);
    /* posted at once: the mean concurrency over the busiest leader's r messages, between integer levels */
    const double k = (double)pairs / r;
    const int lo = (int)k;
    const double t_lo = pc_cost_net_posted(mm, lo, r, bytes);
    return k == lo ? t_lo : t_lo + (k - lo) * (pc_cost_net_posted(mm, lo + 1, r, bytes) - t_lo);
}

/* The copies of a rank's row: in (gather) and out (scatter), one piece of ppn m bytes per node each way, and its
 * writes into S in the plan's store mode (T_gather + T_scatter + T_store). The node's own piece is written into S
 * and copied out by the node's ranks right after the gather's barrier: a handoff through node-shared lines, which
 * the model times in both store modes where it can (pc_cost_shm_handoff); priced as two clean copies plus the
 * store term's difference between the modes instead, the streaming mode came out no dearer than the other, 1.8x
 * below its time at one node (1n2p, 640 KiB blocks: 78-87 us predicted, 140-163 measured). The other nodes'
 * pieces are read by MPI's send and written by its receive: as before. */
static double na_row_copies(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *mm)
{
    const int N = p->shape.nnodes, ppn = p->shape.max_ppn;
    const double m = (double)p->block_bytes, piece_bytes = (double)ppn * m;
    const double piece = pc_cost_shm_copy(mm, 1, ppn, piece_bytes);
    if (!pc_model_has_stream_handoff(mm))
        return 2.0 * N * piece + pc_cost_shared_store(mm, cfg->stream, (double)p->shape.nranks * m);
    return pc_cost_shm_handoff(mm, cfg->stream, ppn, piece_bytes) + 2.0 * (N - 1) * piece +
           pc_cost_shared_store(mm, cfg->stream, (N - 1) * piece_bytes);
}

double pc_na_estimate(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *mm)
{
    const int N = p->shape.nnodes, ppn = p->shape.max_ppn;
    const double m = (double)p->block_bytes;
    const int l = pc_na_leaders_used(p, cfg->leaders);
    double piece = pc_cost_shm_copy(mm, 1, ppn, ppn * m);
    /* only the leaders that handle a node pair move the node-pair messages, min(l, N - 1) of them (pair k goes
     * through leader k mod l); the node's others wait (cost.h). Counting all l: at 2 nodes of 4 ranks on 2
     * cores, 4 leaders of which one works were priced as every rank active, 4x below the one leader's price
     * for the same single stream, and measured 3.5-5x their estimate at 1-4 KiB blocks. */
    const int moving = l < N - 1 ? l : N - 1;
    double inter =
        N > 1 ? na_inter(mm, N - 1, l, (double)ppn * ppn * m, cfg->put) * pc_cost_waiting_slowdown(p, moving) : 0;
    double sync = 2 * mm->sync_us + pc_cost_turns(p, mm, N > 1 ? 3 : 2);
    /* the row's copies and stores beyond the 2N pieces' clean copies (T_store, and the own piece's handoff) */
    double store = na_row_copies(p, cfg, mm) - 2.0 * N * piece;
    if (cfg->overlap) {
        double intra = (2.0 * N - 2) * piece;
        /* Overlap needs a free core to progress the network while the node copies; with more ranks than cores
         * there is none: the phases add up, and each of the N - 1 pipelined rounds waits on a flag. */
        if (p->shape.oversubscribed) return piece + intra + inter + piece + sync + store + (N - 1) * mm->sync_us;
        return piece + (intra > inter ? intra : inter) + piece + sync + store;
    }
    return 2.0 * N * piece + inter + sync + store;
}

/* Busy (exec/busy.h) of the busiest rank, a leader: its share of the gather and scatter (2N pieces, every form),
 * and per node pair it handles (ceil((N-1)/l)) the posting and completion of its send and its receive; with Put
 * also the credit and the arrival flag it puts. The network, the flags and the barriers are waiting. Cut to the
 * estimate: the caller cannot be busy longer than the estimate says the execution lasts, and two of its terms leave
 * some of that CPU time out. T_inter charges a burst of posted node-pair messages one start-up and a gap g per
 * further message, less than the leader's 2 o per pair when g < 2 o and the messages are small (many nodes, tiny
 * blocks); and ONMPML's estimate hides the whole exchange, its overheads included, behind the gather and scatter. */
double pc_na_busy(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *mm)
{
    const int N = p->shape.nnodes, ppn = p->shape.max_ppn;
    const double m = (double)p->block_bytes;
    const int l = pc_na_leaders_used(p, cfg->leaders);
    double busy = na_row_copies(p, cfg, mm);
    if (N > 1) {
        double rounds = ceil((double)(N - 1) / l), pair = (double)ppn * ppn * m;
        busy += rounds * (pc_busy_msg(p, mm, 1, pair) + (cfg->put ? pc_busy_calls(mm, 2) : 0.0));
    }
    double estimate = pc_na_estimate(p, cfg, mm);
    return busy < estimate ? busy : estimate;
}
