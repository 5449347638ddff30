/* Streaming (non-temporal) stores for the writes into node-shared areas (the stores=stream parameter of the
 * hierarchical allreduces, dpml_common.c, and of the staging alltoalls: the node-aware family's gather into the
 * segment, node_aware.c; pap's staging slots, pap.c; alltoallv.aggregated's pack, aggregated.c). An ordinary store into a line that another core read last first fetches
 * the line back from that core (a read for ownership); when the two cores share no cache that costs more than the
 * write itself. A streaming store writes the line to memory without fetching it, at the price of the next reader
 * missing its caches. Which is cheaper depends on where the host placed the cores, so calibration measures both
 * (calibrate.c) and the planner chooses (model.h, pc_cost_shared_store).
 *
 * x86-64 (SSE2): MOVNTDQ / MOVNTPS / MOVNTPD on 16-byte aligned addresses; the unaligned head and tail of an area are
 * written with ordinary stores. Streaming stores are weakly ordered even on x86: a release store of a flag does not
 * order them, so a writer calls pc_stream_fence (SFENCE) after its streaming stores and before it posts the flag
 * that lets another rank read them. Elsewhere PC_STREAM_STORES is 0, every function here uses ordinary stores and
 * the planner does not offer the mode.
 *
 * No MPI: the unit tests call these directly. */
#ifndef PC_REDUCE_STREAM_H
#define PC_REDUCE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "base/algorithm.h" /* enum pc_store_mode */
#include "base/model.h"     /* pc_store_sizes */
#include "base/problem.h"
#include "base/stream_copy.h" /* PC_STREAM_STORES, pc_stream_copy, pc_stream_fence */

/* out[i] = a[i] op b[i] for i < n (n elements of ext bytes), written with streaming stores, the result bit for bit
 * that of fast3(a, b, out, n): each block of elements is computed by fast3 itself into a buffer that stays in L1 and
 * streamed out from there. For ops without a kernel of their own (below). out overlaps neither input. */
typedef void (*pc_stream_loop3_fn)(const void *a, const void *b, void *out, int n);
void pc_stream_reduce3_blocked(pc_stream_loop3_fn fast3, const void *a, const void *b, void *out, int n, size_t ext);

/* SUM kernels that add in registers and stream the sums out: out[i] = a[i] + b[i], each sum the one the ordinary
 * loop computes (IEEE addition of the same two operands; integers wrap). The complex sums are these on 2n parts.
 * When out is not aligned to the element's size no 16-byte boundary falls between elements: the blocked form. */
void pc_stream_sum3_f32(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_f64(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_u8(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_u16(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_u32(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_u64(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_c32(const void *a, const void *b, void *out, int n);
void pc_stream_sum3_c64(const void *a, const void *b, void *out, int n);

/* The store mode the staging alltoalls (alltoall.leader/mpml/onmpml, alltoall.pap, alltoallv.aggregated) offer
 * for problem p: auto (the mode chosen while the plan runs, exec/store_chooser.h) where both modes can run and be
 * priced, else ordinary stores. Both can where the build has streaming stores, a node has several ranks (so that
 * what a rank stages is read by another core), every rank's types are contiguous (the staging copies are then
 * memcpys; MPI_Pack writes non-contiguous data with ordinary stores, so the mode would change nothing) and a block
 * is at least the smallest size calibration prices the modes at (pc_store_sizes[0]). Below that size the model has
 * no figure for either mode: pc_cost_shared_store would stretch the per-byte difference measured at
 * pc_store_sizes[0] down to a few dozen bytes, where what decides is the fence and the line the reader then
 * fetches from memory instead of from the writer's cache, which a per-byte figure does not scale to; a mode the
 * model cannot price is not a candidate. The fixed modes are not offered where auto is: the host can change which
 * one is cheaper while a plan runs. Forced, stores=stream and auto run on any problem (with ordinary stores where
 * the types are not contiguous). */
static inline int pc_staging_store_mode(const struct pc_problem *p)
{
    const uint64_t block = p->coll == PC_ALLTOALLV ? p->max_block_bytes : p->block_bytes;
    return PC_STREAM_STORES && p->shape.max_ppn > 1 && p->contiguous && (double)block >= pc_store_sizes[0]
               ? PC_STORES_AUTO
               : PC_STORES_NORMAL;
}

/* memcpy, or pc_stream_copy when stream: a staging copy into a node-shared area in the plan's store mode. */
static inline void pc_stage_copy(bool stream, void *restrict dst, const void *restrict src, size_t bytes)
{
    if (stream) pc_stream_copy(dst, src, bytes);
    else memcpy(dst, src, bytes);
}

#endif
