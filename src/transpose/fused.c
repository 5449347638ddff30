/* The fused transpose: the exchange and the local passes of a transpose as one schedule, so that no element is
 * copied more often than the memory hierarchy forces.
 *
 * The composite transpose (transpose.c) sweeps a rank's share three times: a blocked transpose into scratch S, the
 * inner alltoall (inside a node at least one more copy, S -> R), and the unpack R -> out. Here, on rank r:
 *   - Node peers read each other's data where it lies. Each rank packs its rows, transposed, into its slot of a
 *     node-shared area (the slot is S: the block for destination s is the contiguous run of S rows start1(s) ..),
 *     posts its ready flag, and every node peer copies its block row by row straight into its own output:
 *     two passes (pack, read). When the input itself is node-shared (plancoll_malloc on the plan's communicator,
 *     found by pc_heap_find at each execution) and not the output too, the owner packs nothing for its node: peers
 *     transpose their columns straight out of its input, one pass.
 *   - Its own block goes from in to out in one blocked transpose (through S only in place, where out overwrites in).
 *   - Other nodes' blocks leave from S as they are (one contiguous message per destination, posted at once) and are
 *     unpacked from the receive scratch R as they land: pack, wire, unpack, the least a private-buffer transpose
 *     between nodes can do.
 *
 * Flags.  Each node rank owns one cache line of the area: ready (execution k's data is in place: k), done (this
 * rank has finished reading every peer's data of execution k: k), and where its input lies when peers read it in
 * place (in_heap, arena, offset: written before ready, read after it). Sequence numbers, never reset.
 *   A rank writes its slot for execution k only once every node peer's done >= k - 1 (nobody still reads
 *   execution k - 1 there); a rank whose input was read in place returns only once every peer's done >= k (the
 *   caller may write its input after return). No other synchronisation: no barrier per execution.
 *
 * Nonblocking.  Start posts the receives and, when the slot is free, packs and posts the sends; advance tests the
 * flags and requests and copies what has arrived; nothing ever blocks inside advance, so the plan can be started
 * (plancoll_start) as every collective can. Execute allocates nothing and creates no communicator or window.
 *
 * Pieces (plancoll_plan_transpose_pieces, K pieces of input rows: pc_piece_bounds).  The slot is laid out piece by
 * piece: piece k (rows [lo, lo + pk) of this rank) occupies slot elements lo n1 .. (lo + pk) n1, the transpose of
 * those rows (n1 rows of pk elements), so the block of destination s in piece k, rows start1(s) .. of it, is one
 * contiguous run of ln1(s) pk elements: node peers copy it row by row into their output columns start0(r) + lo ..,
 * and other nodes get it as one message from the slot, with no second packing and no strided datatype. The own
 * block goes from the input rows straight to the output. Piece k is packed once the caller has started it and the
 * slot is free, then published with ready = (execution - 1) K + k + 1, so a peer copies piece k as soon as it is
 * posted; done is still per execution (a peer has copied every piece). Messages of one execution are posted on
 * one tag in piece order on both sides (every rank sizes each piece alike and skips the empty ones alike), so
 * MPI's non-overtaking order matches piece k to piece k. The input is always packed (peers never read it in
 * place: the caller still writes rows of later pieces while earlier ones travel). */
#include "transpose/fused.h"

#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/model.h"
#include "exec/cost.h"
#include "exec/plan.h"
#include "shm/heap.h"
#include "shm/layout.h"
#include "shm/nomem.h"
#include "shm/requests.h"
#include "shm/reserve.h"
#include "shm/wait.h"
#include "transpose/local.h"

/* One node rank's line of the area: written by that rank only. */
struct fused_line {
    _Atomic uint64_t ready;
    _Atomic uint64_t done;
    uint64_t in_heap, arena, offset; /* execution `ready`'s input, when peers read it in place */
    char pad[PC_CACHELINE - 5 * sizeof(uint64_t)];
};
_Static_assert(sizeof(struct fused_line) == PC_CACHELINE, "a flag line is one cache line");

enum fused_phase { F_IDLE, F_FREE, F_PEERS, F_REMOTE, F_RELEASE };

struct pc_transpose_fused {
    struct pc_node_shm shm;
    int nloc, me;               /* ranks on this node, this rank's node rank */
    int *loc;                   /* [nloc] rank of each node rank */
    struct fused_line **line;   /* [nloc] each node rank's line, mapped here */
    char **slot;                /* [nloc] each node rank's S, mapped here (nloc == 1: private memory) */
    char *private_slot;         /* S when alone on the node */
    int nremote;
    int *send_to, *recv_from;   /* [nremote] other nodes' ranks: destinations (r + i) mod P, sources (r - i) mod P */
    MPI_Request *reqs;          /* [2 nremote]: receives (by recv_from index), then sends */
    int *idx;                   /* [2 nremote] MPI_Testsome's output */
    MPI_Status *statuses;       /* [nremote] its statuses (unused; MPI_STATUSES_IGNORE trips GCC's access check) */
    MPI_Datatype unit;          /* es contiguous bytes: counts stay below INT_MAX (prepare checks) */
    uint64_t seq;               /* executions begun */
    unsigned char *got;         /* [nloc] node peer's block copied in this execution */

    /* the execution in progress */
    enum fused_phase phase;
    const char *in;
    char *out;
    bool packed_all;            /* this execution packed every block (input not read in place by peers) */
    bool own_in_slot;           /* in place: the own block was packed too and is read from the slot */
    int peers_left, recvs_left;
    bool last_in_place_reads;

    /* A plan in pieces (K > 0, t->pieces; see "Pieces" above). reqs, idx and statuses then hold K entries per
     * remote rank: receive (source i, piece k) at i K + k, send (destination i, piece k) at K nremote + i K + k. */
    int K;
    bool slot_taken;            /* this execution may write the slot: every node peer has read the previous one */
    int packed;                 /* pieces packed, published and sent in this execution */
    int *peer_pieces;           /* [nloc] pieces of each node peer copied in this execution (own: K at start) */
    bool peers_read;            /* every node peer's pieces copied and this rank's done flag published */
};

static bool overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

static ptrdiff_t rows1(const struct pc_transpose *t, int s, ptrdiff_t *start)
{
    ptrdiff_t n;
    pc_block_dist(t->n1, t->P, s, &n, start);
    return n;
}

void pc_transpose_fused_free(struct pc_transpose_fused *f)
{
    if (!f) return;
    pc_node_shm_free(&f->shm);
    if (f->unit != MPI_DATATYPE_NULL) MPI_Type_free(&f->unit);
    free(f->private_slot);
    free(f->loc);
    free(f->line);
    free(f->slot);
    free(f->send_to);
    free(f->recv_from);
    free(f->reqs);
    free(f->idx);
    free(f->statuses);
    free(f->got);
    free(f->peer_pieces);
    free(f);
}

bool pc_transpose_fused_last_in_place_reads(const struct pc_transpose_fused *f) { return f && f->last_in_place_reads; }

int pc_transpose_fused_setup(struct plancoll_plan_s *plan, struct pc_transpose *t)
{
    struct pc_layout *L = plan->layout;
    struct pc_transpose_fused *f = calloc(1, sizeof *f);
    int err = PLANCOLL_SUCCESS;
    if (!f) err = pc_error(PLANCOLL_ERR_NOMEM, "fused transpose state");
    else {
        t->fused = f;
        f->unit = MPI_DATATYPE_NULL;
        f->shm.win = MPI_WIN_NULL;
        f->nloc = L->node_size;
        f->me = L->node_rank;
        const int P = t->P, r = t->rank;
        f->nremote = P - f->nloc;
        f->K = t->pieces;
        const size_t per = (size_t)(t->pieces > 0 ? t->pieces : 1), nreq = per * (size_t)f->nremote;
        f->loc = malloc(sizeof(int) * (size_t)f->nloc);
        f->line = calloc((size_t)f->nloc, sizeof *f->line);
        f->slot = calloc((size_t)f->nloc, sizeof *f->slot);
        f->got = calloc((size_t)f->nloc, 1);
        f->send_to = malloc(sizeof(int) * (size_t)(f->nremote + 1));
        f->recv_from = malloc(sizeof(int) * (size_t)(f->nremote + 1));
        f->reqs = malloc(sizeof(MPI_Request) * (2 * nreq + 1));
        f->idx = malloc(sizeof(int) * (2 * nreq + 1));
        f->statuses = malloc(sizeof(MPI_Status) * (nreq + 1));
        f->peer_pieces = calloc((size_t)f->nloc, sizeof(int));
        if (!f->statuses || !f->loc || !f->line || !f->slot || !f->got || !f->send_to || !f->recv_from || !f->reqs || !f->idx ||
            !f->peer_pieces)
            err = pc_error(PLANCOLL_ERR_NOMEM, "fused transpose tables (%d ranks)", P);
        else {
            const int *mine = L->node_ranks + L->node_first[L->node_id];
            for (int i = 0; i < f->nloc; i++) f->loc[i] = mine[i];
            int ns = 0, nr = 0;
            for (int i = 1; i < P; i++) {
                int s = (r + i) % P, q = (r - i + P) % P;
                if (L->node_of[s] != L->node_id) f->send_to[ns++] = s;
                if (L->node_of[q] != L->node_id) f->recv_from[nr++] = q;
            }
            for (size_t i = 0; i < 2 * nreq; i++) f->reqs[i] = MPI_REQUEST_NULL;
            if (t->es <= INT_MAX) {
                int rc = MPI_Type_contiguous((int)t->es, MPI_BYTE, &f->unit);
                if (rc == MPI_SUCCESS) rc = MPI_Type_commit(&f->unit);
                if (rc != MPI_SUCCESS) err = pc_mpi_error(rc, "fused transpose: its element type");
            } else {
                err = pc_error(PLANCOLL_ERR_DATATYPE, "fused transpose: elements of %zu bytes (at most %d)", t->es,
                               INT_MAX);
            }
        }
    }
    /* every rank takes part in the area's collective allocation, failed or not: agree first */
    err = pc_agree_failure(L, err, "fused transpose: another rank failed its set-up");
    if (err) return err;

    /* The area: one region per node rank, page aligned: its flag line, then its slot of the largest share's
     * bytes (rank 0's), so that every node rank computes every region's address alike. A rank alone on its node
     * maps nothing (its slot is private memory) but takes part in the collective. */
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    ptrdiff_t first_rows, first_start;
    pc_block_dist(t->n0, t->P, 0, &first_rows, &first_start);
    size_t slot_bytes = (size_t)first_rows * (size_t)t->n1 * t->es;
    size_t region = (PC_CACHELINE + slot_bytes + page - 1) / page * page;
    if ((err = pc_node_shm_alloc(L, f->nloc > 1 ? region * (size_t)f->nloc : 0, &f->shm))) return err;
    uint64_t failed = 0;
    if (f->nloc > 1) {
        for (int i = 0; i < f->nloc; i++) {
            char *base = f->shm.base + (size_t)i * region;
            f->line[i] = (struct fused_line *)(void *)base;
            f->slot[i] = base + PC_CACHELINE;
        }
        /* Each rank reserves its own region (its pages on its NUMA domain; a full /dev/shm is an error now, not
         * SIGBUS at an execution: shm/reserve.h) and zeroes its line; the agreement publishes the zeros. */
        if (pc_shm_reserve(f->line[f->me], region) == 0) memset(f->line[f->me], 0, PC_CACHELINE);
        else failed = region;
        pc_node_shm_sync(&f->shm);
    } else {
        f->private_slot = malloc(slot_bytes ? slot_bytes : 1);
        if (!f->private_slot) failed = slot_bytes ? slot_bytes : 1;
        f->slot[0] = f->private_slot;
    }
    char what[160];
    snprintf(what, sizeof what, "fused transpose: a rank's slot of the node's shared area (%zu bytes per rank)", region);
    if ((err = pc_shm_agree_reserved(L, PLANCOLL_SUCCESS, failed, what))) return err;
    if (f->nloc > 1) pc_node_shm_sync(&f->shm);
    f->phase = F_IDLE;
    return PLANCOLL_SUCCESS;
}

/* ---- execution ------------------------------------------------------------------------------------------ */

/* Block for destination s, packed: S rows start1(s) .., ln1(s) x ln0 elements, from input columns start1(s) ..
 * With the output's store choice (transpose.c, choose_stores): the slot is as large as the output and is read next by
 * another core or the network, not by this one (measured at 1n2p, n = 1024 complex: 2.77 against 3.52 ms a
 * transpose with streaming stores into the slot). */
static void pack_block(const struct pc_transpose *t, const char *in, char *S, int s)
{
    ptrdiff_t c0, nc = rows1(t, s, &c0);
    if (nc == 0 || t->ln0 == 0) return;
    pc_transpose_local_to(in + (size_t)c0 * t->es, (size_t)t->n1, S + (size_t)c0 * (size_t)t->ln0 * t->es,
                          (size_t)t->ln0, (size_t)t->ln0, (size_t)nc, t->es, t->stream_out);
}

/* The block source q packed for this rank (ln1 rows of ln0(q) elements at slot row start1) into out's columns
 * start0(q) .. */
static void unpack_from_slot(const struct pc_transpose *t, const char *slot, int q, char *out)
{
    const size_t c = (size_t)t->counts[q], es = t->es;
    if (c == 0) return;
    const char *src = slot + (size_t)t->start1 * c * es;
    char *dst = out + (size_t)t->starts[q] * es;
    for (ptrdiff_t j = 0; j < t->ln1; j++)
        pc_copy_run(dst + (size_t)j * (size_t)t->n0 * es, src + (size_t)j * c * es, c * es, t->stream_out);
    if (t->stream_out) pc_stores_fence();
}

/* Source q's rows read in place: out columns start0(q) .. = the transpose of q's input columns start1 .. */
static void transpose_from_input(const struct pc_transpose *t, const char *in_q, int q, char *out)
{
    if (t->counts[q] == 0 || t->ln1 == 0) return;
    pc_transpose_local_to(in_q + (size_t)t->start1 * t->es, (size_t)t->n1, out + (size_t)t->starts[q] * t->es,
                          (size_t)t->n0, (size_t)t->counts[q], (size_t)t->ln1, t->es, t->stream_out);
}

static bool slot_free(const struct pc_transpose_fused *f)
{
    for (int i = 0; i < f->nloc; i++)
        if (i != f->me && atomic_load_explicit(&f->line[i]->done, memory_order_acquire) + 1 < f->seq) return false;
    return true;
}

/* The slot is free: pack, publish, post the sends. */
static int pack_and_post(struct plancoll_plan_s *plan, struct pc_transpose *t, struct pc_transpose_fused *f)
{
    const struct pc_layout *L = plan->layout;
    const size_t in_bytes = t->in_elems * t->es, out_bytes = t->out_elems * t->es;
    int arena = 0;
    size_t offset = 0;
    bool in_place = overlaps(f->in, in_bytes, f->out, out_bytes);
    /* Peers read the input in place only when it is node-shared and this execution does not overwrite it. */
    bool shared_in = f->nloc > 1 && !in_place && in_bytes > 0 && pc_heap_find(L, f->in, in_bytes, &arena, &offset);
    f->packed_all = !shared_in;
    f->own_in_slot = in_place;
    f->last_in_place_reads = shared_in;
    char *S = f->slot[f->me];
    for (int s = 0; s < t->P; s++) {
        bool remote = L->node_of[s] != L->node_id;
        if (remote || (s == t->rank ? in_place : !shared_in)) pack_block(t, f->in, S, s);
    }
    if (f->nloc > 1) {
        struct fused_line *mine = f->line[f->me];
        mine->in_heap = shared_in;
        mine->arena = (uint64_t)arena;
        mine->offset = (uint64_t)offset;
        atomic_store_explicit(&mine->ready, f->seq, memory_order_release);
    }
    for (int i = 0; i < f->nremote; i++) {
        int s = f->send_to[i];
        ptrdiff_t c0, nc = rows1(t, s, &c0);
        MPI_Request *rq = &f->reqs[f->nremote + i];
        *rq = MPI_REQUEST_NULL;
        if (nc * t->ln0 == 0) continue;
        PC_MPI_CHECK(MPI_Isend(S + (size_t)c0 * (size_t)t->ln0 * t->es, (int)(nc * t->ln0), f->unit, s,
                               pc_tag(plan, PC_TAG_TRANSPOSE), plan->comm, rq));
    }
    return PLANCOLL_SUCCESS;
}

static int pieces_start(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out);
static int pieces_advance(struct plancoll_plan_s *plan, struct pc_transpose *t, bool *done);

int pc_transpose_fused_start(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out)
{
    struct pc_transpose_fused *f = t->fused;
    if (f->K > 0) return pieces_start(plan, t, in, out);
    f->seq++;
    f->in = in;
    f->out = out;
    f->recvs_left = 0;
    for (int i = 0; i < f->nremote; i++) {
        int q = f->recv_from[i];
        size_t n = (size_t)t->counts[q] * (size_t)t->ln1;
        f->reqs[i] = MPI_REQUEST_NULL;
        if (n == 0) continue;
        PC_MPI_CHECK(MPI_Irecv(t->R + (size_t)t->offsets[q] * t->es, (int)n, f->unit, q,
                               pc_tag(plan, PC_TAG_TRANSPOSE), plan->comm, &f->reqs[i]));
        f->recvs_left++;
    }
    memset(f->got, 0, (size_t)f->nloc);
    f->peers_left = f->nloc;
    f->phase = F_FREE;
    bool done;
    return pc_transpose_fused_advance(plan, t, &done); /* packs and posts now if the slot is free; never waits */
}

/* Copies every node peer's block that is ready (the own block first); true when some were. */
static bool read_peers(const struct plancoll_plan_s *plan, struct pc_transpose *t, struct pc_transpose_fused *f)
{
    const struct pc_layout *L = plan->layout;
    bool progress = false;
    for (int k = 0; k < f->nloc; k++) {
        int i = (f->me + k) % f->nloc; /* a rotation: node peers do not all read one slot at once */
        if (f->got[i]) continue;
        int q = f->loc[i];
        if (i == f->me) {
            if (f->own_in_slot) unpack_from_slot(t, f->slot[i], q, f->out);
            else transpose_from_input(t, f->in, q, f->out);
        } else {
            const struct fused_line *line = f->line[i];
            if (atomic_load_explicit(&line->ready, memory_order_acquire) < f->seq) continue;
            if (line->in_heap) {
                const char *in_q = pc_heap_peer_address(L, i, (int)line->arena, (size_t)line->offset);
                transpose_from_input(t, in_q, q, f->out);
            } else {
                unpack_from_slot(t, f->slot[i], q, f->out);
            }
        }
        f->got[i] = 1;
        f->peers_left--;
        progress = true;
    }
    return progress;
}

/* Unpacks every block from another node that has landed since the last call (MPI_Testsome: never waits). */
static int drain_remote(struct pc_transpose *t, struct pc_transpose_fused *f)
{
    while (f->recvs_left > 0) {
        int n = 0;
        PC_MPI_CHECK(MPI_Testsome(f->nremote, f->reqs, &n, f->idx, f->statuses));
        if (n == MPI_UNDEFINED || n == 0) return PLANCOLL_SUCCESS;
        for (int k = 0; k < n; k++) {
            int q = f->recv_from[f->idx[k]];
            /* the block of source q in R, interleaved as a one-source unpack */
            pc_transpose_interleave_to(t->R, &t->offsets[q], &t->counts[q], &t->starts[q], 1, f->out, (size_t)t->n0,
                                       (size_t)t->ln1, t->es, t->stream_out);
        }
        f->recvs_left -= n;
    }
    return PLANCOLL_SUCCESS;
}

int pc_transpose_fused_advance(struct plancoll_plan_s *plan, struct pc_transpose *t, bool *done)
{
    struct pc_transpose_fused *f = t->fused;
    if (f->K > 0) return pieces_advance(plan, t, done);
    *done = false;
    for (;;) {
        switch (f->phase) {
        case F_IDLE:
            *done = true;
            return PLANCOLL_SUCCESS;
        case F_FREE:
            if (f->nloc > 1 && !slot_free(f)) return PLANCOLL_SUCCESS;
            {
                int err = pack_and_post(plan, t, f);
                if (err) return err;
            }
            f->phase = F_PEERS;
            break;
        case F_PEERS: {
            /* other nodes' blocks are unpacked as they land, also while a node peer is not ready yet (after the
             * pack: in place, out is the input until then) */
            read_peers(plan, t, f);
            int err = drain_remote(t, f);
            if (err) return err;
            if (f->peers_left > 0) return PLANCOLL_SUCCESS;
            if (f->nloc > 1) atomic_store_explicit(&f->line[f->me]->done, f->seq, memory_order_release);
            f->phase = F_REMOTE;
            break;
        }
        case F_REMOTE:
            {
                int err = drain_remote(t, f);
                if (err || f->recvs_left > 0) return err;
            }
            {
                bool sent = true;
                int err = f->nremote > 0 ? pc_test_requests(f->nremote, f->reqs + f->nremote, &sent) : PLANCOLL_SUCCESS;
                if (err || !sent) return err;
            }
            f->phase = f->packed_all ? F_IDLE : F_RELEASE;
            if (f->phase == F_IDLE) {
                *done = true;
                return PLANCOLL_SUCCESS;
            }
            break;
        case F_RELEASE:
            /* peers read this rank's input in place: the caller gets it back once every peer is done */
            for (int i = 0; i < f->nloc; i++)
                if (i != f->me && atomic_load_explicit(&f->line[i]->done, memory_order_acquire) < f->seq)
                    return PLANCOLL_SUCCESS;
            f->phase = F_IDLE;
            *done = true;
            return PLANCOLL_SUCCESS;
        }
    }
}


/* ---- pieces ------------------------------------------------------------------------------------------ */

/* Piece k's ready value in execution seq: sequence numbers, never reset, as the whole execution's. */
static uint64_t piece_ready(const struct pc_transpose_fused *f, int k) { return (f->seq - 1) * (uint64_t)f->K + (uint64_t)k + 1; }

/* Piece k started by the caller and the slot free: the own block straight into out, every other block transposed
 * into the slot's piece k, published, and one message per other node's rank posted from the slot. */
static int pack_piece(struct plancoll_plan_s *plan, struct pc_transpose *t, struct pc_transpose_fused *f, int k)
{
    const size_t es = t->es;
    ptrdiff_t lo, pk;
    pc_piece_bounds(t->ln0, f->K, k, &lo, &pk);
    char *piece = f->slot[f->me] + (size_t)lo * (size_t)t->n1 * es; /* n1 rows of pk elements */
    const char *rows = f->in + (size_t)lo * (size_t)t->n1 * es;
    if (pk > 0)
        for (int s = 0; s < t->P; s++) {
            ptrdiff_t c0, nc = rows1(t, s, &c0);
            if (nc == 0) continue;
            if (s == t->rank)
                pc_transpose_local_to(rows + (size_t)c0 * es, (size_t)t->n1, f->out + (size_t)(t->start0 + lo) * es,
                                      (size_t)t->n0, (size_t)pk, (size_t)nc, es, t->stream_out);
            else
                pc_transpose_local_to(rows + (size_t)c0 * es, (size_t)t->n1, piece + (size_t)c0 * (size_t)pk * es,
                                      (size_t)pk, (size_t)pk, (size_t)nc, es, t->stream_out);
        }
    if (f->nloc > 1) atomic_store_explicit(&f->line[f->me]->ready, piece_ready(f, k), memory_order_release);
    for (int i = 0; i < f->nremote; i++) {
        int s = f->send_to[i];
        ptrdiff_t c0, nc = rows1(t, s, &c0);
        MPI_Request *rq = &f->reqs[(size_t)f->K * (size_t)f->nremote + (size_t)i * (size_t)f->K + (size_t)k];
        *rq = MPI_REQUEST_NULL;
        if (nc * pk == 0) continue;
        PC_MPI_CHECK(MPI_Isend(piece + (size_t)c0 * (size_t)pk * es, (int)(nc * pk), f->unit, s,
                               pc_tag(plan, PC_TAG_TRANSPOSE_PIECES), plan->comm, rq));
    }
    return PLANCOLL_SUCCESS;
}

/* Copies every node peer's pieces that are posted, in piece order (empty ones need no flag). */
static void read_peer_pieces(struct pc_transpose *t, struct pc_transpose_fused *f)
{
    for (int r = 1; r < f->nloc; r++) {
        int i = (f->me + r) % f->nloc; /* a rotation: node peers do not all read one slot at once */
        if (f->peer_pieces[i] == f->K) continue;
        int q = f->loc[i];
        while (f->peer_pieces[i] < f->K) {
            int k = f->peer_pieces[i];
            ptrdiff_t lo, pk;
            pc_piece_bounds(t->counts[q], f->K, k, &lo, &pk);
            if (pk > 0 && t->ln1 > 0) {
                if (atomic_load_explicit(&f->line[i]->ready, memory_order_acquire) < piece_ready(f, k)) break;
                ptrdiff_t offset = t->start1 * pk, column = t->starts[q] + lo;
                pc_transpose_interleave_to(f->slot[i] + (size_t)lo * (size_t)t->n1 * t->es, &offset, &pk, &column, 1,
                                           f->out, (size_t)t->n0, (size_t)t->ln1, t->es, t->stream_out);
            }
            if (++f->peer_pieces[i] == f->K) f->peers_left--;
        }
    }
}

static int pieces_start(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out)
{
    struct pc_transpose_fused *f = t->fused;
    const size_t K = (size_t)f->K, nreq = K * (size_t)f->nremote;
    f->seq++;
    f->in = in;
    f->out = out;
    f->packed_all = true;
    f->own_in_slot = false;
    f->last_in_place_reads = false;
    f->packed = 0;
    f->slot_taken = f->nloc == 1;
    f->peers_read = false;
    memset(f->peer_pieces, 0, sizeof(int) * (size_t)f->nloc);
    f->peer_pieces[f->me] = f->K; /* the own block is moved by pack_piece */
    f->peers_left = f->nloc - 1;
    f->recvs_left = 0;
    for (size_t i = 0; i < 2 * nreq; i++) f->reqs[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < f->nremote; i++) {
        int q = f->recv_from[i];
        for (int k = 0; k < f->K; k++) {
            ptrdiff_t lo, pk;
            pc_piece_bounds(t->counts[q], f->K, k, &lo, &pk);
            size_t n = (size_t)pk * (size_t)t->ln1;
            if (n == 0) continue;
            PC_MPI_CHECK(MPI_Irecv(t->R + (size_t)(t->offsets[q] + lo * t->ln1) * t->es, (int)n, f->unit, q,
                                   pc_tag(plan, PC_TAG_TRANSPOSE_PIECES), plan->comm, &f->reqs[(size_t)i * K + (size_t)k]));
            f->recvs_left++;
        }
    }
    f->phase = F_PEERS; /* not F_IDLE: an execution is in progress */
    bool done;
    return pieces_advance(plan, t, &done);
}

static int pieces_advance(struct plancoll_plan_s *plan, struct pc_transpose *t, bool *done)
{
    struct pc_transpose_fused *f = t->fused;
    const int nreq = f->K * f->nremote;
    *done = false;
    if (f->phase == F_IDLE) {
        *done = true;
        return PLANCOLL_SUCCESS;
    }
    if (!f->slot_taken) f->slot_taken = slot_free(f);
    while (f->slot_taken && f->packed < t->pieces_started) {
        int err = pack_piece(plan, t, f, f->packed);
        if (err) return err;
        f->packed++;
    }
    read_peer_pieces(t, f);
    if (!f->peers_read && f->peers_left == 0) {
        if (f->nloc > 1) atomic_store_explicit(&f->line[f->me]->done, f->seq, memory_order_release);
        f->peers_read = true;
    }
    while (f->recvs_left > 0) {
        int n = 0;
        PC_MPI_CHECK(MPI_Testsome(nreq, f->reqs, &n, f->idx, f->statuses));
        if (n == MPI_UNDEFINED || n == 0) break;
        for (int j = 0; j < n; j++) {
            int i = f->idx[j] / f->K, k = f->idx[j] % f->K, q = f->recv_from[i];
            ptrdiff_t lo, pk;
            pc_piece_bounds(t->counts[q], f->K, k, &lo, &pk);
            ptrdiff_t offset = t->offsets[q] + lo * t->ln1, column = t->starts[q] + lo;
            pc_transpose_interleave_to(t->R, &offset, &pk, &column, 1, f->out, (size_t)t->n0, (size_t)t->ln1, t->es,
                                       t->stream_out);
        }
        f->recvs_left -= n;
    }
    if (f->packed < f->K || !f->peers_read || f->recvs_left > 0) return PLANCOLL_SUCCESS;
    bool sent = true;
    int err = nreq > 0 ? pc_test_requests(nreq, f->reqs + nreq, &sent) : PLANCOLL_SUCCESS;
    if (err || !sent) return err;
    f->phase = F_IDLE;
    *done = true;
    return PLANCOLL_SUCCESS;
}

int pc_transpose_fused_execute(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out)
{
    int err = pc_transpose_fused_start(plan, t, in, out);
    struct pc_waiter w;
    pc_waiter_init(&w, plan->layout->wait_mode, plan->layout->oversubscribed);
    bool done = false;
    while (!err) {
        err = pc_transpose_fused_advance(plan, t, &done);
        if (err || done) break;
        pc_waiter_pause(&w);
    }
    return err;
}

double pc_transpose_fused_estimate(const struct plancoll_plan_s *plan, const struct pc_transpose *t,
                                   const struct pc_machine_model *m)
{
    const struct pc_shape *sh = &plan->prob.shape;
    /* the busiest rank: rank 0 holds the largest block of both distributions */
    ptrdiff_t ln0, ln1, s;
    pc_block_dist(t->n0, t->P, 0, &ln0, &s);
    pc_block_dist(t->n1, t->P, 0, &ln1, &s);
    const double es = (double)t->es, block = (double)ln0 * (double)ln1 * es;
    const int ppn = sh->max_ppn > 0 ? sh->max_ppn : 1;
    const int remote = t->P - (sh->min_ppn > 0 ? sh->min_ppn : t->P);
    double T = pc_cost_transpose(m, (double)ln0 * (double)t->n1 * es - block);
    T += pc_cost_shm_copy(m, 1, ppn, (double)ppn * block);
    if (remote > 0) T += pc_cost_net_posted(m, ppn, remote, block) + pc_cost_transpose(m, (double)remote * block);
    T += pc_cost_turns(&plan->prob, m, 1);
    return T;
}
