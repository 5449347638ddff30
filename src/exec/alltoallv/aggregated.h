/* The arithmetic of alltoallv.aggregated (aggregated.c): node-pair areas, segment layout, sender/receiver
 * assignment. Pure functions (no MPI calls), so tests/unit/test_aggregated_sim.c can run every rank of a job in
 * one process.
 *
 * Terms: node x's ranks are its node ranks 0 .. ppn_x - 1 (global rank node_ranks[node_first[x] + i]); block
 * (j -> d) is what global rank j sends global rank d, in bytes. A rank's own block (j -> j) never goes through
 * the segment (it is copied directly, or stays put in place), so it counts as 0 bytes below. */
#ifndef PC_AGGREGATED_H
#define PC_AGGREGATED_H

#include <stddef.h>
#include <stdint.h>

/* Which rank is on which node: the fields of struct pc_layout with the same names. */
struct pc_agg_nodes {
    int P, N;
    const int *node_of;       /* [P] */
    const int *local_rank_of; /* [P] */
    const int *node_sizes;    /* [N] */
    const int *node_first;    /* [N + 1] */
    const int *node_ranks;    /* [P] */
};

/* Node-pair area x -> y: every block (j -> d) with j on x and d on y, ordered by the receiver's node rank first,
 * then the sender's: [t][i]. So one receiver's data from node x is one run in source order. */

/* Node a's row of the node-pair matrix: out[y] = bytes of area a -> y, from the node's send rows: block
 * (rank i of a -> d) is rows[i * stride + d]. */
void pc_agg_pair_row(const struct pc_agg_nodes *g, int a, const uint64_t *rows, size_t stride, uint64_t *out);
/* Node a's column from its receive rows: block (j -> rank t of a) is cols[t * stride + j]; out[x] = area x -> a. */
void pc_agg_pair_column(const struct pc_agg_nodes *g, int a, const uint64_t *cols, size_t stride, uint64_t *out);

/* Where node a's areas sit in one buffer set of its segment, from the node-pair matrix pair[x * N + y] (bytes of
 * area x -> y): the intra-node area a -> a first, then the send areas a -> y, then the receive areas x -> a, each
 * kind in node order and 64-byte aligned. area[y] receives the offset of a -> y (y == a: the intra-node area),
 * area[N + x] that of x -> a (x != a; area[N + a] is 0). Returns the set's size in bytes. Any node can compute any
 * other's layout (the Put transport writes straight into the receiving node's area). */
uint64_t pc_agg_segment_layout(int N, int a, const uint64_t *pair, uint64_t *area);

/* Buffer sets of a node's segment: two, used by alternate executions, so that an execution can start packing
 * while node peers still unpack the previous one; one set (and a node barrier at every execution's start) when a
 * set is larger than PC_AGG_DOUBLE_LIMIT bytes. */
#define PC_AGG_DOUBLE_LIMIT ((uint64_t)64 << 20)
static inline int pc_agg_sets(uint64_t set_bytes) { return set_bytes > PC_AGG_DOUBLE_LIMIT ? 1 : 2; }

/* Rank t of node a (global rank me): pack_off[d] = offset in its node's set of block (me -> d), unpack_off[j] =
 * offset of block (j -> me), for every global rank with a nonzero block (others are left alone). rows / cols are
 * the whole node's send and receive rows as above, area node a's layout (pc_agg_segment_layout). */
void pc_agg_rank_offsets(const struct pc_agg_nodes *g, int a, int t, const uint64_t *rows, const uint64_t *cols,
                         size_t stride, const uint64_t *area, uint64_t *pack_off, uint64_t *unpack_off);

/* Who handles node a's node-pair messages, as an index among its l leaders: send[y] for the message a -> y,
 * recv[x] for x -> a; -1 for a itself and for empty pairs (no message). Longest processing time first: messages
 * sorted by cost (latency_bytes + bytes) descending, ties by node offset ((y - a) mod N, (a - x) mod N) with the
 * send first; each goes to the leader with the least cost so far (ties: fewest messages, then lowest index). With
 * no more messages than leaders each leader has at most one; no leader's cost exceeds the mean plus the largest
 * message's. Both ends of a pair compute the other's choice with the same call. Returns 0, or -1 when out of
 * memory. */
int pc_agg_assign(int N, int a, const uint64_t *pair, int l, uint64_t latency_bytes, int *send, int *recv);

/* Point-to-point messages go in pieces of at most pc_agg_piece_bytes bytes, all posted at once: segments = k >= 1
 * cuts a node-pair message into k near-equal pieces (1: one message, as in [PlannedA2AV]); segments = 0 (the default)
 * cuts messages of up to PC_AGG_PIECE_LIMIT bytes into pieces of PC_AGG_PIECE bytes and leaves larger ones whole.
 * Why: a message above the transport's eager limit goes by rendezvous, a round trip in which both ends must run;
 * on an oversubscribed node each end waits for a scheduler turn (UCX over TCP here: 52 us for 4 KiB messages, about
 * 200 us for 8 KiB), while pieces below the limit fly at once. Large messages amortise the round trip and keep
 * rendezvous' single copy. The last piece may be shorter; none is empty. */
#define PC_AGG_PIECE ((uint64_t)4096)
#define PC_AGG_PIECE_LIMIT ((uint64_t)65536)
static inline uint64_t pc_agg_piece_bytes(uint64_t bytes, int segments)
{
    if (bytes == 0) return 1;
    if (segments <= 0) return bytes <= PC_AGG_PIECE_LIMIT && bytes > PC_AGG_PIECE ? PC_AGG_PIECE : bytes;
    uint64_t k = (uint64_t)segments;
    return (bytes + k - 1) / k;
}
static inline int pc_agg_pieces(uint64_t bytes, int segments)
{
    uint64_t q = pc_agg_piece_bytes(bytes, segments);
    return (int)((bytes + q - 1) / q);
}

/* Leaders node x uses when `requested` are asked for: 0 means every rank of the node (balanced: each rank has at
 * most one message while 2 (N - 1) <= ppn); otherwise min(requested, ppn_x). */
static inline int pc_agg_leaders(int requested, int ppn_x) { return requested <= 0 || requested > ppn_x ? ppn_x : requested; }

#endif
