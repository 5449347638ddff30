/* alltoallv.aggregated: the planned, node-aggregated alltoallv of [PlannedA2AV] (section 3; docs/algorithms.md).
 *
 * Plan time (setup):
 *   1. every rank's bytes to and from every rank are gathered inside the node (one allgather on the node);
 *   2. the node totals go between nodes once: node rank 0 of every node allgathers its node's row of the
 *      node-pair matrix (bytes from node x to node y) with the others', then broadcasts the matrix in its node;
 *   3. the layout of one area per node pair in the node's shared segment follows from the matrix and the node's
 *      rows (aggregated.h): the intra-node area, the send areas a -> y, the receive areas x -> a; inside an area
 *      blocks are ordered [receiver][sender]. The segment is the communicator's (src/shm: one for every plan),
 *      with two buffer sets used by alternate executions unless a set is large;
 *   4. a sender and a receiver rank per node pair: node x's messages (its sends and its receives) are dealt over
 *      its l leaders longest-first (pc_agg_assign), so with 2 (N - 1) <= l every leader has at most one; any
 *      rank can compute any node's choice, so both ends know each other without asking. Leaders are the first l
 *      node ranks or spread over NUMA domains (pc_choose_leaders, shm/leaders.h, shared with the node-aware alltoall);
 *   5. with the Put transport, the whole segment is exposed in a window locked once (seg_window.h, shared with
 *      the node-aware alltoall).
 * Execution k (buffer set k mod 2):
 *   1. receivers post their receives (or grant their senders a credit: the execution number put into the
 *      sender's flag slot); every rank packs its blocks into the areas (MPI_Pack for non-contiguous types) and
 *      copies its own block straight to its receive buffer (nothing to do in place);
 *   2. one node barrier: the areas are complete;
 *   3. one message per nonempty node pair: MPI_Isend from the send area into the receiver's area (in pieces
 *      below the eager limit when it is small: pc_agg_piece_bytes, parameter segments), or MPI_Put there, flush,
 *      and a put of the arrival flag; the receiver posts the arrival flag of a point-to-point message itself.
 *      Every rank unpacks its node's blocks, then each other node's as its arrival flag rises.
 * Stores (parameter stores=normal|stream, exec/reduce_stream.h): the pack writes areas that other cores read next
 * (node peers unpack the intra-node area, leaders send the node-pair areas): memcpys, or streaming copies (no read
 * for ownership of lines the last execution's readers hold; the readers then miss their caches), fenced before the
 * pack barrier's flag. The unpack writes the caller's private receive buffer: ordinary stores. Non-contiguous
 * types go through MPI_Pack, ordinary stores in either mode (the mode is then not offered:
 * pc_staging_store_mode).
 * Synchronisation: with two sets, the barrier of execution k also proves that nobody still reads set (k+1) mod 2
 * (its readers were in execution k-1), so execution k+1 needs no barrier before packing, as long as no other
 * plan touched the segment in between (pc_segment_claim); otherwise, and with one set, execution k+1 starts with
 * a node barrier. A credit (or a posted receive) is granted at the start of an execution, so a remote write into
 * a set never meets a reader of the execution before.
 * Cost (model primitives; S, R, O the busiest rank's bytes sent, received, sent off-node, l the leaders of the
 * smallest node, ppn the largest node, B = ppn O / (N - 1) one node-pair message, J = ceil(2 (N - 1) / l) the
 * busiest leader's messages, sent or received):
 *   T = 2 sync_us                                  the pack flag and the arrival flag / barrier
 *     + turns(2 + [N > 1 and O > 0])               their scheduler turns and the one wait for the posted messages
 *                                                  (cost.h: on an oversubscribed host only)
 *     + shm_copy(1, ppn, S) + shm_copy(1, ppn, R)  the pack into and the unpack from the segment, every rank of the
 *                                                  node copying at once
 *     + shared_store(stores, S)                    the pack's writes in the plan's store mode, beyond what the copy
 *                                                  terms price (model.h: 0 for the cheaper mode)
 *     + [N > 1 and O > 0] J (net_concurrent(min(l, N - 1), B) + put net(8))
 *                                                  the busiest leader's messages while the node's other leaders send
 *                                                  theirs (Put adds a credit / arrival flag per message)
 * The pieces of a message go back to back, their start-ups overlapping: they are not charged apart; nor is a
 * rendezvous round trip (the model has no eager limit).
 * Busy (exec/busy.h; the busiest rank is a leader with J messages): the pack (with its store term) and the unpack
 * (its copies), and per
 * message it sends or receives one o for each piece it posts and completes (pc_agg_pieces of B), with Put 3 o
 * (the put, its flush, the arrival flag or credit it puts); the network, the flags and the barrier are waiting. */
#include "exec/alltoallv/aggregated.h"
#include "exec/cost.h"
#include "exec/busy.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "planner/planner.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h"
#include "shm/wait.h"
#include "exec/alltoall/node_aware.h"
#include "shm/leaders.h"
#include "shm/segment.h"
#include "exec/seg_window.h"
#include "exec/steps.h"
#include "exec/reduce_stream.h"

/* ---------------------------------------- pure arithmetic ---------------------------------------- */

static inline int rank_at(const struct pc_agg_nodes *g, int x, int i) { return g->node_ranks[g->node_first[x] + i]; }
static inline uint64_t align64(uint64_t v) { return (v + 63) & ~(uint64_t)63; }

void pc_agg_pair_row(const struct pc_agg_nodes *g, int a, const uint64_t *rows, size_t stride, uint64_t *out)
{
    for (int y = 0; y < g->N; y++) out[y] = 0;
    for (int i = 0; i < g->node_sizes[a]; i++) {
        int j = rank_at(g, a, i);
        for (int d = 0; d < g->P; d++)
            if (d != j) out[g->node_of[d]] += rows[(size_t)i * stride + (size_t)d];
    }
}

void pc_agg_pair_column(const struct pc_agg_nodes *g, int a, const uint64_t *cols, size_t stride, uint64_t *out)
{
    for (int x = 0; x < g->N; x++) out[x] = 0;
    for (int t = 0; t < g->node_sizes[a]; t++) {
        int d = rank_at(g, a, t);
        for (int j = 0; j < g->P; j++)
            if (j != d) out[g->node_of[j]] += cols[(size_t)t * stride + (size_t)j];
    }
}

uint64_t pc_agg_segment_layout(int N, int a, const uint64_t *pair, uint64_t *area)
{
    uint64_t off = 0;
    area[a] = 0;
    off += align64(pair[(size_t)a * N + a]);
    for (int y = 0; y < N; y++)
        if (y != a) {
            area[y] = off;
            off += align64(pair[(size_t)a * N + y]);
        }
    area[N + a] = 0;
    for (int x = 0; x < N; x++)
        if (x != a) {
            area[N + x] = off;
            off += align64(pair[(size_t)x * N + a]);
        }
    return off;
}

void pc_agg_rank_offsets(const struct pc_agg_nodes *g, int a, int t, const uint64_t *rows, const uint64_t *cols,
                         size_t stride, const uint64_t *area, uint64_t *pack_off, uint64_t *unpack_off)
{
    const int ppn = g->node_sizes[a];
    /* sender's side: in area a -> y, the blocks of y's ranks t' in turn, each the blocks of a's ranks in order */
    for (int y = 0; y < g->N; y++) {
        uint64_t run = area[y];
        for (int tt = 0; tt < g->node_sizes[y]; tt++) {
            int d = rank_at(g, y, tt);
            for (int i = 0; i < ppn; i++) {
                uint64_t b = rank_at(g, a, i) == d ? 0 : rows[(size_t)i * stride + (size_t)d];
                if (i == t && b > 0) pack_off[d] = run;
                run += b;
            }
        }
    }
    /* receiver's side: in area x -> a, skip the runs of a's ranks before t, then the blocks of x's ranks */
    for (int x = 0; x < g->N; x++) {
        uint64_t run = x == a ? area[a] : area[g->N + x];
        for (int tt = 0; tt <= t; tt++) {
            int d = rank_at(g, a, tt);
            for (int i = 0; i < g->node_sizes[x]; i++) {
                int j = rank_at(g, x, i);
                uint64_t b = j == d ? 0 : cols[(size_t)tt * stride + (size_t)j];
                if (tt == t && b > 0) unpack_off[j] = run;
                run += b;
            }
        }
    }
}

struct agg_task {
    uint64_t cost;
    int offset, kind, node; /* kind 0: send a -> node, 1: receive node -> a */
};

static int task_order(const void *pa, const void *pb)
{
    const struct agg_task *x = pa, *y = pb;
    if (x->cost != y->cost) return x->cost > y->cost ? -1 : 1;
    if (x->offset != y->offset) return x->offset - y->offset;
    return x->kind - y->kind;
}

int pc_agg_assign(int N, int a, const uint64_t *pair, int l, uint64_t latency_bytes, int *send, int *recv)
{
    for (int x = 0; x < N; x++) send[x] = recv[x] = -1;
    if (N <= 1) return 0;
    if (l < 1) l = 1;
    struct agg_task *tasks = malloc(sizeof *tasks * 2 * (size_t)N);
    uint64_t *load = calloc((size_t)l, sizeof *load);
    int *count = calloc((size_t)l, sizeof *count);
    if (!tasks || !load || !count) {
        free(tasks);
        free(load);
        free(count);
        return -1;
    }
    int n = 0;
    for (int k = 1; k < N; k++) {
        int y = (a + k) % N, x = (a - k + N) % N;
        if (pair[(size_t)a * N + y]) tasks[n++] = (struct agg_task){latency_bytes + pair[(size_t)a * N + y], k, 0, y};
        if (pair[(size_t)x * N + a]) tasks[n++] = (struct agg_task){latency_bytes + pair[(size_t)x * N + a], k, 1, x};
    }
    qsort(tasks, (size_t)n, sizeof *tasks, task_order);
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int j = 1; j < l; j++)
            if (load[j] < load[best] || (load[j] == load[best] && count[j] < count[best])) best = j;
        load[best] += tasks[i].cost;
        count[best]++;
        (tasks[i].kind == 0 ? send : recv)[tasks[i].node] = best;
    }
    free(tasks);
    free(load);
    free(count);
    return 0;
}

/* ---------------------------------------- the plan ---------------------------------------- */

/* One node-pair message this rank sends or receives. */
struct agg_msg {
    int node;      /* the other node */
    int peer;      /* the rank at the other end */
    uint64_t area; /* the area's offset in this node's set */
    uint64_t bytes; /* may exceed 2 GiB: large-count messages, puts in pieces (seg_window.h) */
    int first, pieces;        /* point-to-point: its requests reqs[first ..] */
    uint64_t piece;           /* ... pieces of `piece` bytes */
    /* Put: where the area sits in the receiving node's segment */
    uint64_t remote_area, remote_set_bytes;
    int remote_sets;
};

struct agg_state {
    int N, a;
    bool active; /* this node's segment carries data; otherwise an execution only copies the own block */
    struct pc_segment *seg;
    int first_flag, nflags;
    uint64_t user, seq, set_bytes;
    int nsets;
    uint64_t *pack_off, *unpack_off; /* [P] offsets in a set */
    int nsend, nrecv, nsources;
    struct agg_msg *send, *recv;
    int *sources;        /* other nodes with data for this node, nearest first */
    MPI_Request *reqs;   /* every piece of the receives, then of the sends */
    unsigned char *done; /* [nrecv + nsend + nsources] one execution's progress */
    bool put;
    bool stream; /* stores=stream (contiguous types): the pack writes the set with streaming stores */
    struct pc_seg_window w;
    int me, ppn;             /* node rank, node size: the plan's own barrier */
    uint64_t barriers;       /* this plan's node barriers so far */
    int phase, left;         /* the execution in progress (start, advance): its phase, what is left of EXCHANGE */
};

static _Atomic uint64_t *arrival_flag(const struct agg_state *st, int x) { return pc_segment_flag(st->seg, st->first_flag + x); }
static _Atomic uint64_t *credit_flag(const struct agg_state *st, int y)
{
    return pc_segment_flag(st->seg, st->first_flag + st->N + y);
}

/* stores=auto (exec/store_chooser.h): the mode of the next executions; MPI_Pack's writes stay ordinary. */
static void set_stores(struct plancoll_plan_s *plan, bool stream)
{
    struct agg_state *st = plan->impl;
    if (st) st->stream = stream && plan->prob.contiguous;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct agg_state *st = plan->impl;
    if (!st) return;
    pc_segwin_close(&st->w);
    if (st->seg) pc_segment_release(st->seg, st->first_flag, st->nflags);
    free(st->pack_off);
    free(st->unpack_off);
    free(st->send);
    free(st->recv);
    free(st->sources);
    free(st->reqs);
    free(st->done);
    free(st);
    plan->impl = NULL;
}

/* Steps 1-2 of the plan: the node's send and receive rows, and the node-pair matrix. */
static int gather_counts(const struct plancoll_plan_s *plan, const struct pc_agg_nodes *g, uint64_t *rows, uint64_t *pair)
{
    const struct pc_layout *L = plan->layout;
    const int P = plan->size, N = g->N;
    uint64_t *mine = malloc(sizeof(uint64_t) * 2 * (size_t)P), *row = malloc(sizeof(uint64_t) * (size_t)N);
    if (!mine || !row) {
        free(mine);
        free(row);
        return pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv counts");
    }
    for (int j = 0; j < P; j++) {
        mine[j] = j == plan->rank ? 0 : (uint64_t)plan->sendcounts[j] * (uint64_t)plan->stype.size;
        mine[P + j] = j == plan->rank ? 0 : (uint64_t)plan->recvcounts[j] * (uint64_t)plan->rtype.size;
    }
    MPI_Request req;
    int err = pc_allgather_comm_wait(L, L->node_comm, mine, rows, 2 * P, MPI_UINT64_T, "MPI_Iallgather (node counts)");
    if (!err) pc_agg_pair_row(g, L->node_id, rows, 2 * (size_t)P, row);
    if (!err && N == 1) pair[0] = row[0];
    if (!err && N > 1) {
        if (L->node_rank == 0) {
            err = pc_allgather_comm_wait(L, L->leader_comm, row, pair, N, MPI_UINT64_T, "MPI_Iallgather (node totals)");
        }
        int rc = pc_mpi_ibcast(pair, N * N, MPI_UINT64_T, 0, L->node_comm, &req);
        int err2 = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Ibcast (node totals)");
        if (!err) err = err2;
    }
    /* What this node receives, seen from its receive counts, must be what the others said they send. */
    if (!err) pc_agg_pair_column(g, L->node_id, rows + P, 2 * (size_t)P, row);
    for (int x = 0; !err && x < N; x++)
        if (row[x] != pair[(size_t)x * N + L->node_id])
            err = pc_error(PLANCOLL_ERR_MISMATCH, "aggregated alltoallv: node %d sends %llu bytes to node %d, which expects %llu",
                           x, (unsigned long long)pair[(size_t)x * N + L->node_id], L->node_id, (unsigned long long)row[x]);
    free(mine);
    free(row);
    return err;
}

/* Step 4: this rank's messages. */
static int assign_messages(struct plancoll_plan_s *plan, struct agg_state *st, const uint64_t *pair, const uint64_t *area)
{
    const struct pc_layout *L = plan->layout;
    const int N = st->N, a = st->a, P = plan->size;
    struct pc_machine_model model;
    pc_default_model(&model);
    uint64_t latency_bytes = (uint64_t)(model.alpha_us / model.beta_us_per_b);
    int *snd = malloc(sizeof(int) * (size_t)N * (size_t)N), *rcv = malloc(sizeof(int) * (size_t)N * (size_t)N);
    int *pick = malloc(sizeof(int) * (size_t)P), *numa = malloc(sizeof(int) * (size_t)P);
    uint64_t *remote = malloc(sizeof(uint64_t) * 2 * (size_t)N);
    st->send = calloc((size_t)N, sizeof *st->send);
    st->recv = calloc((size_t)N, sizeof *st->recv);
    st->sources = calloc((size_t)N, sizeof(int));
    int err = PLANCOLL_SUCCESS;
    if (!snd || !rcv || !pick || !numa || !remote || !st->send || !st->recv || !st->sources)
        err = pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv assignment");
    /* every node's leaders and its choice of sender and receiver per pair: both ends know each other */
    for (int x = 0; !err && x < N; x++) {
        int l = pc_agg_leaders(plan->params.leaders, L->node_sizes[x]), first = L->node_first[x];
        for (int i = 0; i < L->node_sizes[x]; i++) numa[i] = L->numa_of_rank[L->node_ranks[first + i]];
        pc_choose_leaders(numa, L->node_sizes[x], L->max_numa, l, plan->params.placement == 1, pick + first);
        if (pc_agg_assign(N, x, pair, l, latency_bytes, snd + (size_t)x * N, rcv + (size_t)x * N))
            err = pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv assignment");
    }
#define LEADER_RANK(x, idx) (L->node_ranks[L->node_first[x] + pick[L->node_first[x] + (idx)]])
    for (int k = 1; !err && k < N; k++) {
        int y = (a + k) % N, x = (a - k + N) % N;
        int si = snd[(size_t)a * N + y], ri = rcv[(size_t)a * N + x];
        if (si >= 0 && LEADER_RANK(a, si) == plan->rank) {
            struct agg_msg *m = &st->send[st->nsend++];
            uint64_t remote_set = pc_agg_segment_layout(N, y, pair, remote);
            *m = (struct agg_msg){.node = y, .peer = LEADER_RANK(y, rcv[(size_t)y * N + a]), .area = area[y],
                                  .bytes = pair[(size_t)a * N + y], .remote_area = remote[N + a],
                                  .remote_set_bytes = remote_set, .remote_sets = pc_agg_sets(remote_set)};
        }
        if (ri >= 0 && LEADER_RANK(a, ri) == plan->rank)
            st->recv[st->nrecv++] = (struct agg_msg){.node = x, .peer = LEADER_RANK(x, snd[(size_t)x * N + a]),
                                                     .area = area[N + x], .bytes = pair[(size_t)x * N + a]};
        if (pair[(size_t)x * N + a]) st->sources[st->nsources++] = x;
    }
#undef LEADER_RANK
    free(snd);
    free(rcv);
    free(pick);
    free(numa);
    free(remote);
    return err;
}

static int setup(struct plancoll_plan_s *plan)
{
    struct pc_layout *L = plan->layout;
    struct agg_state *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv state");
    plan->impl = st;
    pc_segwin_init(&st->w);
    const int P = plan->size, N = L->nnodes;
    st->N = N;
    st->a = L->node_id;
    st->me = L->node_rank;
    st->ppn = L->node_size;
    st->stream = plan->params.stores == PC_STORES_STREAM && plan->prob.contiguous; /* MPI_Pack: ordinary stores */
    const struct pc_agg_nodes g = {P, N, L->node_of, L->local_rank_of, L->node_sizes, L->node_first, L->node_ranks};
    uint64_t *rows = malloc(sizeof(uint64_t) * 2 * (size_t)P * (size_t)L->node_size);
    uint64_t *pair = calloc((size_t)N * (size_t)N, sizeof(uint64_t)), *area = malloc(sizeof(uint64_t) * 2 * (size_t)N);
    int err = pc_layout_comms(L); /* the counts travel over the node and leader communicators */
    if (!err) err = rows && pair && area ? gather_counts(plan, &g, rows, pair) : pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv counts");
    /* The matrix is the same on every rank, so every decision below is too. Its sum bounds any node's set (the
     * areas of its row and column, each rounded up by < 64 bytes), and a segment holds at most two sets. */
    bool any = false;
    uint64_t total = 0;
    const uint64_t limit = UINT64_C(1) << 58;
    for (int x = 0; !err && x < N; x++)
        for (int y = 0; y < N; y++) {
            uint64_t b = pair[(size_t)x * N + y];
            any = any || b > 0;
            total = b < limit && total < limit ? total + b : limit;
        }
    if (!err && total >= limit)
        err = pc_error(PLANCOLL_ERR_OVERFLOW, "aggregated alltoallv: the node-pair areas reach 2^58 bytes");
    if (!err && any) {
        st->set_bytes = pc_agg_segment_layout(N, st->a, pair, area);
        st->nsets = pc_agg_sets(st->set_bytes);
        st->active = st->set_bytes > 0;
        /* arrival flag per source node, credit per receiving node, the plan's barrier per node rank */
        st->nflags = 2 * N + L->node_size;
        err = pc_segment_acquire(L, (size_t)st->set_bytes * (size_t)st->nsets, st->nflags, &st->seg, &st->first_flag);
    }
    if (!err && any) {
        st->user = pc_segment_new_user();
        st->pack_off = calloc((size_t)P, sizeof(uint64_t));
        st->unpack_off = calloc((size_t)P, sizeof(uint64_t));
        if (!st->pack_off || !st->unpack_off) err = pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv offsets");
        if (!err) pc_agg_rank_offsets(&g, st->a, L->node_rank, rows, rows + P, 2 * (size_t)P, area, st->pack_off, st->unpack_off);
        if (!err) err = assign_messages(plan, st, pair, area);
    }
    int nreqs = 0;
    for (int i = 0; !err && i < st->nrecv + st->nsend; i++) {
        struct agg_msg *m = i < st->nrecv ? &st->recv[i] : &st->send[i - st->nrecv];
        m->piece = pc_agg_piece_bytes(m->bytes, plan->params.segments);
        m->pieces = pc_agg_pieces(m->bytes, plan->params.segments);
        m->first = nreqs;
        nreqs += m->pieces;
    }
    if (!err && any) {
        st->reqs = malloc(sizeof(MPI_Request) * (size_t)(nreqs + 1));
        st->done = malloc((size_t)(st->nrecv + st->nsend + st->nsources + 1));
        if (!st->reqs || !st->done) err = pc_error(PLANCOLL_ERR_NOMEM, "aggregated alltoallv requests");
        for (int i = 0; !err && i < nreqs; i++) st->reqs[i] = MPI_REQUEST_NULL;
    }
    st->put = any && plan->params.transport == 1 && N > 1;
    if (!err && st->put) err = pc_segwin_open(&st->w, L, st->seg, 0, st->first_flag);
    free(rows);
    free(pair);
    free(area);
    return err;
}

/* ---------------------------------------- execution ---------------------------------------- */

/* dst is in the node's set: with stream, written by streaming stores (the caller fences before the pack barrier). */
static int pack_block(const struct plancoll_plan_s *plan, const void *buf, int j, char *dst, size_t bytes, bool stream)
{
    const struct pc_typeinfo *t = &plan->stype;
    const char *src = pc_elem_ptr(buf, t, plan->sdispls[j]);
    if (t->contiguous) {
        pc_stage_copy(stream, dst, src + t->true_lb, bytes);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0; /* large-count packing: a block may exceed 2 GiB */
    PC_MPI_CHECK(pc_mpi_pack(src, plan->sendcounts[j], t->type, dst, (MPI_Count)bytes, &pos, plan->comm));
    return PLANCOLL_SUCCESS;
}

static int unpack_block(const struct plancoll_plan_s *plan, void *rbuf, int j, const char *src, size_t bytes)
{
    const struct pc_typeinfo *t = &plan->rtype;
    char *dst = pc_elem_ptr(rbuf, t, plan->rdispls[j]);
    if (t->contiguous) {
        memcpy(dst + t->true_lb, src, bytes);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0;
    PC_MPI_CHECK(pc_mpi_unpack(src, (MPI_Count)bytes, &pos, dst, plan->recvcounts[j], t->type, plan->comm));
    return PLANCOLL_SUCCESS;
}

/* The own block goes straight from the send buffer to the receive buffer; in place it is already there. */
static int copy_own(const struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    const int r = plan->rank;
    if (plan->in_place || (uint64_t)plan->sendcounts[r] * (uint64_t)plan->stype.size == 0) return PLANCOLL_SUCCESS;
    return pc_copy_typed(plan, pc_elem_ptr(sbuf, &plan->stype, plan->sdispls[r]), plan->sendcounts[r], &plan->stype,
                         pc_elem_ptr(rbuf, &plan->rtype, plan->rdispls[r]), plan->recvcounts[r], &plan->rtype);
}

static int pack(const struct plancoll_plan_s *plan, const struct agg_state *st, const void *buf, char *set)
{
    for (int d = 0; d < plan->size; d++) {
        size_t bytes = (size_t)plan->sendcounts[d] * (size_t)plan->stype.size;
        if (d == plan->rank || bytes == 0) continue;
        int err = pack_block(plan, buf, d, set + st->pack_off[d], bytes, st->stream);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

/* This rank's blocks from the ranks of node x. */
static int unpack_node(const struct plancoll_plan_s *plan, const struct agg_state *st, int x, const char *set, void *rbuf)
{
    const struct pc_layout *L = plan->layout;
    for (int i = 0; i < L->node_sizes[x]; i++) {
        int j = L->node_ranks[L->node_first[x] + i];
        size_t bytes = (size_t)plan->recvcounts[j] * (size_t)plan->rtype.size;
        if (j == plan->rank || bytes == 0) continue;
        int err = unpack_block(plan, rbuf, j, set + st->unpack_off[j], bytes);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

/* Receiving side, before the pack: post the receives, or tell the senders that the areas are free. */
static int open_receives(const struct plancoll_plan_s *plan, struct agg_state *st, char *set)
{
    for (int i = 0; i < st->nrecv; i++) {
        const struct agg_msg *m = &st->recv[i];
        if (st->put) {
            int err = pc_segwin_put_flag(&st->w, m->peer, st->N + st->a, st->seq);
            if (err) return err;
        } else {
            for (int k = 0; k < m->pieces; k++) {
                uint64_t at = (uint64_t)k * m->piece, len = m->bytes - at < m->piece ? m->bytes - at : m->piece;
                PC_MPI_CHECK(pc_mpi_irecv(set + m->area + at, (MPI_Count)len, MPI_BYTE, m->peer,
                                         pc_tag(plan, PC_TAG_AGGREGATED), plan->comm, &st->reqs[m->first + k]));
            }
        }
    }
    return PLANCOLL_SUCCESS;
}

static int put_message(struct agg_state *st, const struct agg_msg *m, const char *set)
{
    MPI_Aint disp = st->w.data_disp[m->peer] +
                    (MPI_Aint)((st->seq % (uint64_t)m->remote_sets) * m->remote_set_bytes + m->remote_area);
    /* in pieces: one put of more than 2^31 - 1 bytes crashes MPICH 4.0.2 over UCX (seg_window.h) */
    for (uint64_t at = 0; at < m->bytes; at += PC_RMA_MAX_BYTES) {
        int len = (int)(m->bytes - at < PC_RMA_MAX_BYTES ? m->bytes - at : PC_RMA_MAX_BYTES);
        PC_MPI_CHECK(MPI_Put(set + m->area + at, len, MPI_BYTE, m->peer, disp + (MPI_Aint)at, len, MPI_BYTE, st->w.win));
    }
    PC_MPI_CHECK(MPI_Win_flush(m->peer, st->w.win)); /* the data is in place before the flag says so */
    return pc_segwin_put_flag(&st->w, m->peer, st->a, st->seq);
}

/* ---- one execution as a resumable schedule (start, advance): every wait is a test that returns not-done ----
 * HOLD takes the segment's data area (another started execution may still use it on this rank) and arrives at
 * the plan's opening barrier when one is needed (header); OPEN tests it; PACK opens the receives, packs and
 * copies the own block, then arrives at the pack barrier; PACKED tests it, sends and unpacks the own node;
 * EXCHANGE moves the messages along and unpacks each node's blocks as they land. The barriers use the plan's own
 * flags, not the layout's: executions in flight may reach barriers in different orders on different ranks. */
enum agg_phase { AG_HOLD, AG_OPEN, AG_PACK, AG_PACKED, AG_EXCHANGE, AG_DONE };

static _Atomic uint64_t *barrier_flag(const struct agg_state *st, int i)
{
    return pc_segment_flag(st->seg, st->first_flag + 2 * st->N + i);
}

static void barrier_arrive(struct agg_state *st) { pc_flag_post(barrier_flag(st, st->me), ++st->barriers); }

static bool barrier_passed(const struct agg_state *st)
{
    for (int i = 0; i < st->ppn; i++)
        if (atomic_load_explicit(barrier_flag(st, i), memory_order_acquire) < st->barriers) return false;
    return true;
}

/* After the pack barrier: the messages go, and the own node's blocks are unpacked. */
static int begin_exchange(const struct plancoll_plan_s *plan, struct agg_state *st, char *set, void *rbuf)
{
    const int nr = st->nrecv, ns = st->nsend;
    if (!st->put)
        for (int i = 0; i < ns; i++) {
            const struct agg_msg *m = &st->send[i];
            for (int k = 0; k < m->pieces; k++) {
                uint64_t at = (uint64_t)k * m->piece, len = m->bytes - at < m->piece ? m->bytes - at : m->piece;
                PC_MPI_CHECK(pc_mpi_isend(set + m->area + at, (MPI_Count)len, MPI_BYTE, m->peer,
                                         pc_tag(plan, PC_TAG_AGGREGATED), plan->comm, &st->reqs[m->first + k]));
            }
        }
    memset(st->done, 0, (size_t)(nr + ns + st->nsources));
    st->left = nr + ns + st->nsources;
    return unpack_node(plan, st, st->a, set, rbuf);
}

/* One pass over the messages and the landed nodes. */
static int exchange_pass(const struct plancoll_plan_s *plan, struct agg_state *st, char *set, void *rbuf, bool *moved)
{
    const int nr = st->nrecv, ns = st->nsend;
    int err;
    for (int i = 0; i < nr + ns; i++) {
        if (st->done[i]) continue;
        int ok = 0;
        if (i < nr && st->put) {
            ok = atomic_load_explicit(arrival_flag(st, st->recv[i].node), memory_order_acquire) >= st->seq;
        } else if (i >= nr && st->put) {
            const struct agg_msg *m = &st->send[i - nr];
            if (atomic_load_explicit(credit_flag(st, m->node), memory_order_acquire) >= st->seq) {
                if ((err = put_message(st, m, set))) return err;
                ok = 1;
            }
        } else {
            const struct agg_msg *m = i < nr ? &st->recv[i] : &st->send[i - nr];
            ok = 1;
            for (int k = 0; k < m->pieces; k++) {
                int piece_done = 1;
                if (st->reqs[m->first + k] != MPI_REQUEST_NULL)
                    PC_MPI_CHECK(pc_mpi_test(&st->reqs[m->first + k], &piece_done, MPI_STATUS_IGNORE));
                ok = ok && piece_done;
            }
            if (ok && i < nr) pc_flag_post(arrival_flag(st, m->node), st->seq);
        }
        if (ok) {
            st->done[i] = 1;
            st->left--;
            *moved = true;
        }
    }
    for (int s = 0; s < st->nsources; s++) {
        unsigned char *d = &st->done[nr + ns + s];
        if (*d || atomic_load_explicit(arrival_flag(st, st->sources[s]), memory_order_acquire) < st->seq) continue;
        if ((err = unpack_node(plan, st, st->sources[s], set, rbuf))) return err;
        *d = 1;
        st->left--;
        *moved = true;
    }
    return PLANCOLL_SUCCESS;
}

static int agg_step(struct plancoll_plan_s *plan, struct agg_state *st, bool *moved)
{
    const void *sbuf = plan->run_sendbuf;
    void *rbuf = plan->run_recvbuf;
    char *set = st->seg->base + (size_t)(st->seq % (uint64_t)st->nsets) * (size_t)st->set_bytes;
    int err;
    switch (st->phase) {
    case AG_HOLD:
        if (!pc_segment_try_hold(st->seg, st->user)) return PLANCOLL_SUCCESS;
        /* Nobody may still read this set: proven by the last execution's barrier only if it was ours (header). */
        if (!pc_segment_claim(st->seg, st->user) || st->nsets == 1) {
            barrier_arrive(st);
            st->phase = AG_OPEN;
        } else {
            st->phase = AG_PACK;
        }
        *moved = true;
        return PLANCOLL_SUCCESS;
    case AG_OPEN:
        if (!barrier_passed(st)) return PLANCOLL_SUCCESS;
        st->phase = AG_PACK;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case AG_PACK:
        if ((err = open_receives(plan, st, set))) return err;
        if ((err = pack(plan, st, plan->in_place ? rbuf : sbuf, set))) return err;
        if ((err = copy_own(plan, sbuf, rbuf))) return err;
        if (st->stream) pc_stream_fence(); /* the flag's release store does not order streaming stores */
        barrier_arrive(st); /* every area of this node is packed, once all have arrived */
        st->phase = AG_PACKED;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case AG_PACKED:
        if (!barrier_passed(st)) return PLANCOLL_SUCCESS;
        if ((err = begin_exchange(plan, st, set, rbuf))) return err;
        st->phase = AG_EXCHANGE;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case AG_EXCHANGE:
        if ((err = exchange_pass(plan, st, set, rbuf, moved))) return err;
        if (st->left == 0) st->phase = AG_DONE, *moved = true;
        return PLANCOLL_SUCCESS;
    case AG_DONE:
        return PLANCOLL_SUCCESS;
    }
    return PLANCOLL_SUCCESS;
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct agg_state *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    if (!st->active) {
        st->phase = AG_DONE;
        return copy_own(plan, sbuf, rbuf);
    }
    st->seq++;
    st->phase = AG_HOLD;
    return PLANCOLL_SUCCESS;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct agg_state *st = plan->impl;
    bool moved = true;
    int err = PLANCOLL_SUCCESS;
    while (!err && moved && st->phase != AG_DONE) {
        moved = false;
        err = agg_step(plan, st, &moved);
    }
    *done = err || st->phase == AG_DONE;
    if (*done) {
        if (st->seg) pc_segment_unhold(st->seg, st->user);
        return err;
    }
    /* A Put target must keep MPI progressing while it waits on shared memory. */
    if (st->put) pc_segwin_progress(&st->w);
    return PLANCOLL_SUCCESS;
}

/* ---------------------------------------- planner entry points ---------------------------------------- */

/* Balanced leaders, one leader and two, over point-to-point, and over MPI_Put too where that can be fast and the
 * plan is not started (pc_put_transport_offered; it stays forceable); one set of those when nothing crosses nodes;
 * each in the store mode pc_staging_store_mode offers. */
static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    int n = 0, N = p->shape.nnodes, stores = pc_staging_store_mode(p);
    if (N == 1 || p->max_offnode_bytes == 0) {
        if (n < max) out[n++] = (struct pc_params){.stores = stores};
        return n;
    }
    int busiest = 2 * (N - 1) < p->shape.max_ppn ? 2 * (N - 1) : p->shape.max_ppn; /* leaders that can be busy */
    const int leaders[] = {0, 1, 2};
    for (int t = 0; t < (pc_put_transport_offered(p) ? 2 : 1); t++)
        for (int i = 0; i < 3; i++) {
            if (leaders[i] && leaders[i] >= busiest) continue; /* the same as balanced */
            if (n < max) out[n++] = (struct pc_params){.leaders = leaders[i], .transport = t, .stores = stores};
        }
    return n;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    double S = (double)p->max_send_bytes, R = (double)p->max_recv_bytes, O = (double)p->max_offnode_bytes;
    const int N = p->shape.nnodes, ppn = p->shape.max_ppn;
    if (S == 0 && R == 0) return 0;
    double t = 2 * m->sync_us + pc_cost_shm_copy(m, 1, ppn, S) + pc_cost_shm_copy(m, 1, ppn, R) +
               pc_cost_shared_store(m, params->stores == PC_STORES_STREAM, S) + pc_cost_turns(p, m, N > 1 && O > 0 ? 3 : 2);
    if (N > 1 && O > 0) {
        int l = pc_agg_leaders(params->leaders, p->shape.min_ppn);
        double messages = ceil(2.0 * (N - 1) / l), pair = pc_problem_node_offnode_bytes(p) / (N - 1);
        double one = pc_cost_net_concurrent(m, l < N - 1 ? l : N - 1, pair);
        if (params->transport == 1) one += pc_cost_net(m, 8);
        /* the node's other ranks wait meanwhile (cost.h): the leaders that handle a send or a receive of the
         * 2 (N - 1) node-pair messages move data, min(l, 2 (N - 1)) of them, the rest wait with the others */
        const int moving = l < 2 * (N - 1) ? l : 2 * (N - 1);
        t += messages * one * pc_cost_waiting_slowdown(p, moving);
    }
    return t;
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    double S = (double)p->max_send_bytes, R = (double)p->max_recv_bytes, O = (double)p->max_offnode_bytes;
    const int N = p->shape.nnodes, ppn = p->shape.max_ppn;
    if (S == 0 && R == 0) return 0;
    double t = pc_cost_shm_copy(m, 1, ppn, S) + pc_cost_shm_copy(m, 1, ppn, R) +
               pc_cost_shared_store(m, params->stores == PC_STORES_STREAM, S);
    if (N > 1 && O > 0) {
        int l = pc_agg_leaders(params->leaders, p->shape.min_ppn);
        double messages = ceil(2.0 * (N - 1) / l), pair = pc_problem_node_offnode_bytes(p) / (N - 1);
        /* point-to-point: a posted and completed request per piece; Put: the put, its flush, the flag or credit */
        double calls = params->transport == 1 ? 3 : pc_agg_pieces((uint64_t)ceil(pair), params->segments);
        t += messages * pc_busy_calls(m, calls);
    }
    return t;
}

const struct pc_algorithm pc_alltoallv_aggregated = {
    .name = "alltoallv.aggregated",
    .collective = PC_ALLTOALLV,
    .summary = "planned node aggregation: pack into the shared segment, one message per node pair, unpack",
    .params = PC_PARAM_LEADERS | PC_PARAM_PLACEMENT | PC_PARAM_SEGMENTS | PC_PARAM_TRANSPORT | PC_PARAM_STORES,
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
