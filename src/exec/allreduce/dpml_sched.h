/* The index arithmetic of the hierarchical allreduces (allreduce.leader, allreduce.dpml, allreduce.dpml_pipelined;
 * engine in dpml_common.c), as pure functions: no MPI and no state, so tests/unit/test_dpml_sim.c can check every
 * element of every rank in one process.
 *
 * Partitions. The vector of count elements is cut into l partitions (partition j belongs to leader j) and each
 * partition into k sub-partitions, both with the blocks of schedule.h (pc_block_count: the first count % l blocks
 * one element longer), so any count works, 0 and count < l k included (some pieces are then empty).
 *
 * Inter-node steps. Leader j of every node runs an allreduce of each of its sub-partitions with leader j of the
 * other nodes, h = number of nodes taking part, x = this node's index among them. The algorithm is a list of
 * steps (recursive doubling, or Rabenseifner's reduce-scatter by halving + allgather by doubling), each a
 * send and a receive with one peer, built from the fold and halving/doubling arithmetic of schedule.h. A step
 * works on two buffers, the current one (cur, which starts as the caller's vector) and the other one (oth):
 *   - send_n elements from cur at send_lo go to peer, recv_n elements come from peer at recv_lo;
 *   - PC_XS_PLAIN: the receive lands in cur (allgather, and the result handed back after the fold);
 *   - PC_XS_PEER_FIRST: the receive lands in oth, then cur = peer op cur on [recv_lo, recv_lo + recv_n);
 *   - PC_XS_MINE_FIRST (whole vector only): the receive lands in oth, then oth = cur op oth and the two buffers
 *     swap roles, so a rank below its peer computes (lower op higher) with the operands in the same order as the
 *     peer does: both hold the same bits, and a non-commutative op keeps rank order.
 * Once every step is done, the result is in cur (copied back when cur is not the caller's vector). Zero-length
 * sends and receives are skipped by both partners alike. */
#ifndef PC_DPML_SCHED_H
#define PC_DPML_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "exec/schedule.h"

/* ---- partitions ------------------------------------------------------------------------------------------ */

static inline int pc_dpml_part_lo(int count, int l, int j) { return pc_block_displ(count, l, j); }
static inline int pc_dpml_part_count(int count, int l, int j) { return pc_block_count(count, l, j); }
/* Sub-partition s (0 .. k-1) of partition j: its first element (of the whole vector) and length. */
static inline int pc_dpml_sub_lo(int count, int l, int k, int j, int s)
{
    return pc_dpml_part_lo(count, l, j) + pc_block_displ(pc_dpml_part_count(count, l, j), k, s);
}
static inline int pc_dpml_sub_count(int count, int l, int k, int j, int s)
{
    return pc_block_count(pc_dpml_part_count(count, l, j), k, s);
}

/* ---- the copy into the leaders' areas ----------------------------------------------------------------------
 * Node rank i hands its partitions over in the order j = i, i+1, ... (mod l), so the ranks start on different
 * leaders' areas; one sequence-numbered flag per rank counts how many it has handed over. In execution seq
 * (1, 2, ...) the flag reads (seq-1) l + t once t partitions are there: it only grows, from one execution to the
 * next too. */
static inline int pc_dpml_copy_part(int i, int l, int t) { return (i + t) % l; }
static inline int pc_dpml_copy_pos(int i, int l, int j) { return ((j - i) % l + l) % l; }
static inline uint64_t pc_dpml_in_value(uint64_t seq, int l, int t) { return (seq - 1) * (uint64_t)l + (uint64_t)t; }
/* The value at which partition j of rank i is there. */
static inline uint64_t pc_dpml_in_ready(uint64_t seq, int l, int i, int j)
{
    return pc_dpml_in_value(seq, l, pc_dpml_copy_pos(i, l, j) + 1);
}

/* ---- the node's shared segment ------------------------------------------------------------------------------
 * Bytes that cnt elements of a type with this extent and true extent cover (0 for none). */
static inline size_t pc_dpml_span(int cnt, size_t extent, size_t true_extent)
{
    return cnt > 0 ? (size_t)(cnt - 1) * extent + true_extent : 0;
}
/* Layout, every area starting on a cache line:
 *   RES        the reduced vector, element e at res_off + e extent (partition j is leader j's)
 *   IN[j][i]   partition j of node rank i's input, for leader j: in_off[j] + i in_stride[j]
 *   DESC[i]    a cache line per node rank (where its input lies when leaders read it in place)
 * Fills in_off[l], in_stride[l], *res_off, *desc_off; returns the total size in bytes. */
size_t pc_dpml_segment_layout(int count, int l, int ppn, size_t extent, size_t true_extent, size_t *in_off,
                              size_t *in_stride, size_t *res_off, size_t *desc_off);

/* ---- inter-node steps ----------------------------------------------------------------------------------- */

enum { PC_XS_PLAIN = 0, PC_XS_PEER_FIRST = 1, PC_XS_MINE_FIRST = 2 };

struct pc_xstep {
    int peer;            /* index of the partner among the h taking part */
    int send_lo, send_n; /* elements sent from cur */
    int recv_lo, recv_n; /* elements received */
    int reduce;          /* PC_XS_* */
};

/* Upper bound of the steps either builder writes for h participants. */
static inline int pc_xsteps_max(int h) { return 2 + 2 * pc_log2_pof2(h < 1 ? 1 : h); }
/* Recursive doubling over the whole vector after the fold to a power of two: keeps rank order. */
int pc_xsteps_recursive_doubling(int x, int h, int count, struct pc_xstep *out, int max);
/* Reduce-scatter by recursive halving, then allgather by recursive doubling (commutative ops only). */
int pc_xsteps_rsag(int x, int h, int count, struct pc_xstep *out, int max);

#endif
