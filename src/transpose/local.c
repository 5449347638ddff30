/* The pure parts of the distributed transpose: distribution, block layout, local passes, cost. See local.h. */
#include "transpose/local.h"

#include "base/stream_copy.h"

#include <string.h>

#if PC_STREAM_STORES
#include <emmintrin.h>
#endif

/* ceil(n / P) without forming n + P - 1, which overflows for n near PTRDIFF_MAX */
ptrdiff_t pc_block_size(ptrdiff_t n, int P) { return n <= 0 || P <= 0 ? 0 : n / P + (n % P != 0); }

void pc_block_dist(ptrdiff_t n, int P, int rank, ptrdiff_t *local_n, ptrdiff_t *local_start)
{
    ptrdiff_t b = pc_block_size(n, P);
    ptrdiff_t first = b * (ptrdiff_t)rank;
    if (b == 0 || first >= n) {
        *local_n = 0;
        *local_start = 0;
        return;
    }
    *local_start = first;
    *local_n = n - first < b ? n - first : b;
}

void pc_piece_bounds(ptrdiff_t rows, int K, int k, ptrdiff_t *lo, ptrdiff_t *count)
{
    /* rows < 2^31 (a share fits an int) and K <= PLANCOLL_MAX_PIECES: the products fit 64 bits */
    ptrdiff_t a = (ptrdiff_t)((int64_t)rows * k / K), b = (ptrdiff_t)((int64_t)rows * (k + 1) / K);
    *lo = a;
    *count = b - a;
}

ptrdiff_t pc_transpose_alloc(ptrdiff_t n0, ptrdiff_t n1, int P, int rank)
{
    ptrdiff_t ln0, s0, ln1, s1;
    pc_block_dist(n0, P, rank, &ln0, &s0);
    pc_block_dist(n1, P, rank, &ln1, &s1);
    ptrdiff_t a = ln0 * n1, b = ln1 * n0;
    ptrdiff_t m = a > b ? a : b;
    return m > 1 ? m : 1;
}

bool pc_transpose_uniform(ptrdiff_t n0, ptrdiff_t n1, int P)
{
    if (n0 == 0 || n1 == 0) return true;
    return n0 % P == 0 && n1 % P == 0;
}

/* Tiles of T x T elements, T * T * es = 16 KiB: a tile and its staging copy stay in any L1 data cache. Elements
 * past 256 bytes are copied one by one without staging (each is several cache lines already). */
#define PC_TILE_BYTES 16384
size_t pc_transpose_tile(size_t es)
{
    if (es <= 4) return 64;
    if (es <= 16) return 32;
    if (es <= 64) return 16;
    if (es <= 256) return 8;
    return 4;
}

/* One tile, rows [i0, i0 + ni) x cols [j0, j0 + nj) of src, through a contiguous staging copy: the tile's source
 * rows are read as contiguous runs, then each destination row is written as one contiguous run. Writing straight
 * down a destination column instead touches T lines whose addresses differ by the row length; when that is a
 * multiple of 4 KiB (a power-of-two matrix) they all fall in one cache set and evict each other: measured 3x
 * slower on a 256 x 1024 complex tile (AMD EPYC). A constant es turns each memcpy into one load and one store. */
#define PC_TILE_KERNEL(name, ES)                                                                              \
    static void name(const char *src, size_t sld, char *dst, size_t dld, size_t i0, size_t ni, size_t j0,      \
                     size_t nj, size_t es_, size_t T, char *stage)                                            \
    {                                                                                                         \
        const size_t es = (ES) ? (size_t)(ES) : es_;                                                          \
        for (size_t i = 0; i < ni; i++) memcpy(stage + i * T * es, src + ((i0 + i) * sld + j0) * es, nj * es);  \
        for (size_t j = 0; j < nj; j++) {                                                                     \
            char *d = dst + ((j0 + j) * dld + i0) * es;                                                       \
            const char *b = stage + j * es;                                                                   \
            for (size_t i = 0; i < ni; i++, d += es, b += T * es) memcpy(d, b, es);                           \
        }                                                                                                     \
    }
PC_TILE_KERNEL(tile_4, 4)
PC_TILE_KERNEL(tile_8, 8)
PC_TILE_KERNEL(tile_16, 16)
PC_TILE_KERNEL(tile_any, 0)

/* Large elements: straight copies, no staging. */
static void tile_large(const char *src, size_t sld, char *dst, size_t dld, size_t i0, size_t ni, size_t j0, size_t nj,
                       size_t es, size_t T, char *stage)
{
    (void)T, (void)stage;
    for (size_t i = i0; i < i0 + ni; i++) {
        const char *s = src + (i * sld + j0) * es;
        char *d = dst + (j0 * dld + i) * es;
        for (size_t j = 0; j < nj; j++, s += es, d += dld * es) memcpy(d, s, es);
    }
}

/* 8- and 16-byte elements (double, complex float, complex double: the FFT cases) go straight from source to
 * destination, no staging, in tiles of 8 x 8 elements: each destination row of a tile is one or two cache lines
 * written in order while the 8 source rows it reads stay in L1. Measured on this project's machine (AMD EPYC, one
 * core, 512 x 1024 complex doubles): the staged kernel 2.3x a memcpy of the same bytes, this one 1.9x. With
 * streaming stores (stream, x86-64 SSE2, 16-byte elements 16-byte aligned) the destination lines go to memory
 * without being read first, which is what makes a transpose larger than the caches run at memcpy's speed (1.0-1.2x
 * at 8-32 MiB) but costs the next reader its cache hits (1.4-1.7x at 2 MiB): the planner chooses per plan
 * (pc_transpose_stream_pays in transpose.c measures it). */
#define PC_DIRECT_TILE 8
static void direct_tiles(const char *src, size_t sld, char *dst, size_t dld, size_t rows, size_t cols, size_t es,
                         bool stream)
{
    const size_t T = PC_DIRECT_TILE * (stream && es == 8 ? 1 : stream ? 2 : 1);
    for (size_t i0 = 0; i0 < rows; i0 += T) {
        size_t ni = i0 + T < rows ? T : rows - i0;
        for (size_t j0 = 0; j0 < cols; j0 += T) {
            size_t nj = j0 + T < cols ? T : cols - j0;
            for (size_t j = j0; j < j0 + nj; j++) {
                char *d = dst + (j * dld + i0) * es;
                const char *s = src + (i0 * sld + j) * es;
                const size_t step = sld * es;
#if PC_STREAM_STORES
                if (stream && es == 16) {
                    for (size_t i = 0; i < ni; i++, d += 16, s += step)
                        _mm_stream_si128((__m128i *)(void *)d, _mm_loadu_si128((const __m128i *)(const void *)s));
                    continue;
                }
                if (stream && es == 8) {
                    for (size_t i = 0; i < ni; i++, d += 8, s += step) {
                        long long v;
                        memcpy(&v, s, 8);
                        _mm_stream_si64((long long *)(void *)d, v);
                    }
                    continue;
                }
#endif
                if (es == 16)
                    for (size_t i = 0; i < ni; i++, d += 16, s += step) memcpy(d, s, 16);
                else
                    for (size_t i = 0; i < ni; i++, d += 8, s += step) memcpy(d, s, 8);
            }
        }
    }
    if (stream) pc_stream_fence();
}

bool pc_transpose_can_stream(size_t es) { return PC_STREAM_STORES && (es == 8 || es == 16); }

void pc_transpose_local(const void *src, size_t sld, void *dst, size_t dld, size_t rows, size_t cols, size_t es)
{
    pc_transpose_local_to(src, sld, dst, dld, rows, cols, es, false);
}

void pc_transpose_local_to(const void *src_, size_t sld, void *dst_, size_t dld, size_t rows, size_t cols, size_t es,
                           bool stream)
{
    if (rows == 0 || cols == 0 || es == 0) return;
    const char *src = src_;
    char *dst = dst_;
    if (rows == 1 || cols == 1) {
        /* A single row or column: the transpose is a strided copy. */
        if (rows == 1)
            for (size_t j = 0; j < cols; j++) memcpy(dst + j * dld * es, src + j * es, es);
        else
            for (size_t i = 0; i < rows; i++) memcpy(dst + i * es, src + i * sld * es, es);
        return;
    }
    /* streaming 16-byte stores need 16-byte aligned destinations (every element is, when the first is) */
    stream = stream && pc_transpose_can_stream(es) && (es == 8 || ((uintptr_t)dst & 15) == 0);
    if (es == 8 || es == 16) {
        direct_tiles(src, sld, dst, dld, rows, cols, es, stream);
        return;
    }
    _Alignas(64) char stage[PC_TILE_BYTES];
    void (*tile)(const char *, size_t, char *, size_t, size_t, size_t, size_t, size_t, size_t, size_t, char *) =
        es == 4 ? tile_4 : es == 8 ? tile_8 : es == 16 ? tile_16 : es <= 256 ? tile_any : tile_large;
    const size_t T = pc_transpose_tile(es);
    for (size_t i0 = 0; i0 < rows; i0 += T) {
        size_t ni = i0 + T < rows ? T : rows - i0;
        for (size_t j0 = 0; j0 < cols; j0 += T) {
            size_t nj = j0 + T < cols ? T : cols - j0;
            tile(src, sld, dst, dld, i0, ni, j0, nj, es, T, stage);
        }
    }
}

void pc_copy_run(void *dst, const void *src, size_t bytes, bool stream)
{
    /* runs shorter than a cache line gain nothing from streaming */
    if (stream && PC_STREAM_STORES && bytes >= 64) pc_stream_copy(dst, src, bytes);
    else memcpy(dst, src, bytes);
}

void pc_stores_fence(void) { pc_stream_fence(); }

void pc_transpose_interleave(const void *src, const ptrdiff_t *offsets, const ptrdiff_t *counts,
                             const ptrdiff_t *starts, int P, void *dst, size_t dld, size_t ln1, size_t es)
{
    pc_transpose_interleave_to(src, offsets, counts, starts, P, dst, dld, ln1, es, false);
}

void pc_transpose_interleave_to(const void *src_, const ptrdiff_t *offsets, const ptrdiff_t *counts,
                                const ptrdiff_t *starts, int P, void *dst_, size_t dld, size_t ln1, size_t es, bool stream)
{
    const char *src = src_;
    char *dst = dst_;
    for (size_t j = 0; j < ln1; j++) {
        char *row = dst + j * dld * es;
        for (int r = 0; r < P; r++) {
            size_t c = (size_t)counts[r];
            if (c == 0) continue;
            pc_copy_run(row + (size_t)starts[r] * es, src + ((size_t)offsets[r] + j * c) * es, c * es, stream);
        }
    }
    if (stream) pc_stores_fence();
}

double pc_transpose_local_estimate(ptrdiff_t n0, ptrdiff_t n1, int P, size_t es, const struct pc_machine_model *m)
{
    ptrdiff_t ln0, s0, ln1, s1;
    pc_block_dist(n0, P, 0, &ln0, &s0);
    pc_block_dist(n1, P, 0, &ln1, &s1);
    /* the two local passes are blocked transposes: the calibrated transpose rate b' */
    return pc_cost_transpose(m, ((double)ln0 * (double)n1 + (double)ln1 * (double)n0) * (double)es);
}
