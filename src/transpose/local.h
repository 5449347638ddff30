/* The pure parts of the distributed transpose (no MPI): FFTW's 1D block distribution, the exchange's block
 * layout, the two cache-blocked local passes around the exchange, and their cost. Unit-tested in
 * tests/unit/test_transpose_local.c; the MPI side is transpose.c. */
#ifndef PC_TRANSPOSE_LOCAL_H
#define PC_TRANSPOSE_LOCAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/algorithm.h"

/* FFTW's default block distribution of n rows over P ranks: block b = ceil(n/P); rank r holds
 * min(b, n - r b) rows starting at r b, and a rank past the last block holds none and starts at 0 (as
 * fftw_mpi_local_size_2d_transposed reports it). n = 0 gives every rank 0 rows at 0. */
void pc_block_dist(ptrdiff_t n, int P, int rank, ptrdiff_t *local_n, ptrdiff_t *local_start);
ptrdiff_t pc_block_size(ptrdiff_t n, int P);

/* A transpose in pieces (plancoll_plan_transpose_pieces): piece k of K of a rank's `rows` local input rows is rows
 * [lo, lo + count), lo = floor(k rows / K): near-equal counts (they differ by at most one), empty pieces when K >
 * rows. Every rank computes every rank's pieces alike (the receiver sizes its receives with the sender's rows). */
void pc_piece_bounds(ptrdiff_t rows, int K, int k, ptrdiff_t *lo, ptrdiff_t *count);

/* Elements each rank allocates for in and for out: max(1, local_n0 n1, local_n1 n0), as FFTW. */
ptrdiff_t pc_transpose_alloc(ptrdiff_t n0, ptrdiff_t n1, int P, int rank);

/* Every (source, destination) block has the same size: n0 and n1 are multiples of P, or nothing moves. */
bool pc_transpose_uniform(ptrdiff_t n0, ptrdiff_t n1, int P);

/* Pass 1, the pack: dst (cols x rows, row length dld) = transpose of src (rows x cols, row length sld), elements
 * of es bytes. After it the block for destination s (output rows start1(s) .. start1(s) + local_n1(s)) is the
 * contiguous run of dst rows start1(s) .. , so the exchange needs no further packing. Cache-blocked in tiles of
 * pc_transpose_tile(es) x pc_transpose_tile(es) elements. src and dst must not overlap. */
void pc_transpose_local(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols, size_t es);
size_t pc_transpose_tile(size_t es);
/* The same, dst written with streaming (non-temporal) stores when stream and pc_transpose_can_stream(es): lines go
 * to memory without being read first (a transpose larger than the caches then runs at memcpy's speed), fenced
 * before return. Other element sizes, or a 16-byte element type whose dst is not 16-byte aligned: ordinary stores. */
void pc_transpose_local_to(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols, size_t es,
                           bool stream);
/* Whether this build can write elements of es bytes with streaming stores (x86-64 SSE2: 8 and 16 bytes). */
bool pc_transpose_can_stream(size_t es);
/* memcpy, with streaming stores into dst when stream (x86-64 SSE2; runs of 64 bytes and more). Not fenced: a pass
 * of such copies ends with pc_stores_fence (SFENCE: the streaming stores before any store that follows). */
void pc_copy_run(void *dst, const void *src, size_t bytes, bool stream);
void pc_stores_fence(void);

/* Pass 2, the unpack: the block from source r is ln1 rows of counts[r] elements at src + offsets[r] (elements);
 * row j of it goes to dst row j at column starts[r] (dst rows of dld elements). Rows are written in order, each
 * filled from the P blocks, so dst streams through the cache once. */
void pc_transpose_interleave(const void *src, const ptrdiff_t *offsets, const ptrdiff_t *counts,
                             const ptrdiff_t *starts, int P, void *dst, size_t dld, size_t ln1, size_t es);
/* The same, dst rows written with pc_copy_run(stream). */
void pc_transpose_interleave_to(const void *src, const ptrdiff_t *offsets, const ptrdiff_t *counts,
                                const ptrdiff_t *starts, int P, void *dst, size_t dld, size_t ln1, size_t es, bool stream);

/* Cost of the two local passes on one rank, microseconds: each pass reads and writes every local element once,
 *   T_local = (local_n0 n1 + local_n1 n0) es copy_us_per_b,
 * the largest over ranks being the first rank's (it holds the most rows of both distributions). */
double pc_transpose_local_estimate(ptrdiff_t n0, ptrdiff_t n1, int P, size_t es, const struct pc_machine_model *m);

#endif
