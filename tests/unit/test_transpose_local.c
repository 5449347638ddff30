/* The transpose's pure parts (src/transpose/local.c): FFTW's block distribution against hand-worked tables, the
 * cache-blocked local transpose at every shape around the tile edges and for every element-size kernel, the
 * interleave of received blocks, the whole pack / exchange / unpack pipeline simulated for all ranks in one
 * process (P = 1 .. 17, uneven sizes, idle ranks) with every byte checked, and the local cost estimate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner/planner.h"
#include "transpose/local.h"

/* n, P -> (local_n, local_start) of every rank, worked out by hand: block b = ceil(n/P); a rank past the data
 * has 0 rows at 0. */
static void test_block_dist(void **state)
{
    (void)state;
    static const struct {
        ptrdiff_t n;
        int P;
        ptrdiff_t ln[8], st[8];
    } t[] = {
        {10, 4, {3, 3, 3, 1}, {0, 3, 6, 9}},                  /* b = 3 */
        {5, 4, {2, 2, 1, 0}, {0, 2, 4, 0}},                   /* b = 2: rank 3 idle */
        {4, 3, {2, 2, 0}, {0, 2, 0}},                         /* b = 2: rank 2 idle */
        {3, 8, {1, 1, 1, 0, 0, 0, 0, 0}, {0, 1, 2, 0, 0, 0, 0, 0}},
        {16, 8, {2, 2, 2, 2, 2, 2, 2, 2}, {0, 2, 4, 6, 8, 10, 12, 14}},
        {33, 5, {7, 7, 7, 7, 5}, {0, 7, 14, 21, 28}},         /* b = 7 */
        {0, 3, {0, 0, 0}, {0, 0, 0}},
        {1, 1, {1}, {0}},
        {7, 1, {7}, {0}},
        {9, 7, {2, 2, 2, 2, 1, 0, 0}, {0, 2, 4, 6, 8, 0, 0}}, /* b = 2 */
    };
    for (size_t c = 0; c < sizeof t / sizeof t[0]; c++)
        for (int r = 0; r < t[c].P; r++) {
            ptrdiff_t ln = -1, st = -1;
            pc_block_dist(t[c].n, t[c].P, r, &ln, &st);
            if (ln != t[c].ln[r] || st != t[c].st[r])
                fail_msg("n=%td P=%d rank %d: got %td rows at %td, by hand %td at %td", t[c].n, t[c].P, r, ln, st,
                         t[c].ln[r], t[c].st[r]);
        }
    assert_int_equal(pc_block_size(10, 4), 3);
    assert_int_equal(pc_block_size(0, 4), 0);
    /* Sizes near PTRDIFF_MAX (a 1-column matrix may have that many rows): ceil(n/P) must not form n + P - 1. */
    assert_true(pc_block_size(PTRDIFF_MAX, 3) == PTRDIFF_MAX / 3 + (PTRDIFF_MAX % 3 != 0));
    assert_true(pc_block_size(PTRDIFF_MAX, 1) == PTRDIFF_MAX);
    assert_true(pc_block_size(PTRDIFF_MAX - 1, 2) == PTRDIFF_MAX / 2);
    {
        /* 2^63 - 1 = 1 (mod 3): blocks of PTRDIFF_MAX / 3 + 1 rows, the last one two rows short */
        ptrdiff_t ln = -1, st = -1, b = PTRDIFF_MAX / 3 + 1;
        pc_block_dist(PTRDIFF_MAX, 3, 2, &ln, &st);
        if (st != 2 * b || ln != b - 2)
            fail_msg("PTRDIFF_MAX rows over 3 ranks, rank 2: %td rows at %td, expected %td at %td", ln, st, b - 2, 2 * b);
        assert_true(pc_transpose_alloc(PTRDIFF_MAX, 1, 3, 0) == PTRDIFF_MAX); /* rank 0: the one output row */
        assert_true(pc_transpose_alloc(PTRDIFF_MAX, 1, 3, 1) == b);           /* rank 1: its input rows only */
    }
    /* alloc = max(1, ln0 n1, ln1 n0): 10 x 5 over 4 ranks, rank 3 holds 1 input row (5 elements) and 0 output
     * rows (b1 = 2: ranks 0-2 hold 2, 2, 1) -> 5; rank 0: max(3*5, 2*10) = 20. 0 x 0 -> 1. */
    assert_int_equal(pc_transpose_alloc(10, 5, 4, 3), 5);
    assert_int_equal(pc_transpose_alloc(10, 5, 4, 0), 20);
    assert_int_equal(pc_transpose_alloc(0, 0, 4, 0), 1);
    assert_true(pc_transpose_uniform(8, 12, 4));
    assert_false(pc_transpose_uniform(8, 10, 4));
    assert_false(pc_transpose_uniform(3, 8, 4)); /* rank 3 idle in the input: blocks 1x2 and 0x2 */
    assert_true(pc_transpose_uniform(0, 7, 4));
}

static unsigned char byte_of(size_t i, size_t j, size_t k) { return (unsigned char)(i * 131 + j * 7 + k * 29 + 1); }

/* shift: dst starts that many bytes past a 16-byte boundary (streaming 16-byte stores then fall back to ordinary
 * ones); stream: pc_transpose_local_to's streaming stores. */
static void check_transpose_to(size_t rows, size_t cols, size_t es, size_t pad, bool stream, size_t shift)
{
    /* source rows padded to sld = cols + pad, destination rows to dld = rows + pad: the strides are honoured */
    size_t sld = cols + pad, dld = rows + pad;
    unsigned char *src = malloc(rows * sld * es + 1), *dst_raw = aligned_alloc(64, (cols * dld * es + 1 + shift + 63) / 64 * 64);
    unsigned char *dst = dst_raw + shift;
    for (size_t i = 0; i < rows; i++)
        for (size_t j = 0; j < sld; j++)
            for (size_t k = 0; k < es; k++) src[(i * sld + j) * es + k] = byte_of(i, j, k);
    memset(dst, 0xee, cols * dld * es + 1);
    if (stream || shift) pc_transpose_local_to(src, sld, dst, dld, rows, cols, es, stream);
    else pc_transpose_local(src, sld, dst, dld, rows, cols, es);
    for (size_t j = 0; j < cols; j++)
        for (size_t i = 0; i < dld; i++)
            for (size_t k = 0; k < es; k++) {
                unsigned char got = dst[(j * dld + i) * es + k];
                unsigned char want = i < rows ? byte_of(i, j, k) : 0xee;
                if (got != want)
                    fail_msg("%zux%zu es=%zu pad=%zu stream=%d shift=%zu: dst(%zu,%zu) byte %zu is %u, expected %u", rows,
                             cols, es, pad, (int)stream, shift, j, i, k, got, want);
            }
    assert_int_equal(dst[cols * dld * es], 0xee);
    free(src);
    free(dst_raw);
}

static void check_transpose(size_t rows, size_t cols, size_t es, size_t pad)
{
    check_transpose_to(rows, cols, es, pad, false, 0);
}

/* The direct 8- and 16-byte kernels (tiles of 8, and 16 when streaming 16-byte elements), with and without
 * streaming stores, on aligned and misaligned destinations, at every size around the tile edges. */
static void test_local_transpose_stream(void **state)
{
    (void)state;
    static const size_t dims[] = {1, 2, 7, 8, 9, 15, 16, 17, 33};
    const size_t nd = sizeof dims / sizeof dims[0];
    for (size_t es = 8; es <= 16; es += 8)
        for (size_t a = 0; a < nd; a++)
            for (size_t b = 0; b < nd; b++)
                for (int stream = 0; stream < 2; stream++) {
                    check_transpose_to(dims[a], dims[b], es, (a + b) % 3, stream, 0);
                    check_transpose_to(dims[a], dims[b], es, (a + b) % 2, stream, 8);
                }
    assert_true(pc_transpose_can_stream(8) == pc_transpose_can_stream(16));
    assert_false(pc_transpose_can_stream(12));
    /* pc_copy_run: every destination offset in a 16-byte line, lengths 0 .. 300, streaming or not */
    unsigned char src[320], dst[352];
    for (size_t i = 0; i < sizeof src; i++) src[i] = (unsigned char)(i * 37 + 11);
    for (int stream = 0; stream < 2; stream++)
        for (size_t off = 0; off < 16; off++)
            for (size_t len = 0; len <= 300; len++) {
                memset(dst, 0xee, sizeof dst);
                pc_copy_run(dst + off, src + (len % 7), len, stream);
                pc_stores_fence();
                for (size_t i = 0; i < sizeof dst; i++) {
                    unsigned char want = i >= off && i < off + len ? src[i - off + len % 7] : 0xee;
                    if (dst[i] != want)
                        fail_msg("pc_copy_run stream=%d off=%zu len=%zu: byte %zu is %u, expected %u", stream, off, len,
                                 i, dst[i], want);
                }
            }
}

static void test_local_transpose(void **state)
{
    (void)state;
    static const size_t es_list[] = {1, 4, 8, 12, 16, 24, 40, 100, 300};
    for (size_t e = 0; e < sizeof es_list / sizeof es_list[0]; e++) {
        size_t es = es_list[e], T = pc_transpose_tile(es);
        size_t dims[] = {1, 2, 3, T - 1, T, T + 1, 2 * T + 3};
        for (size_t a = 0; a < 7; a++)
            for (size_t b = 0; b < 7; b++) check_transpose(dims[a], dims[b], es, (a + b) % 3);
    }
    check_transpose(0, 5, 8, 0); /* nothing to do: must not touch dst */
}

/* The interleave: 3 sources with 2, 0 and 3 columns at starts 0, 0 (idle) and 2, ln1 = 2 rows. */
static void test_interleave(void **state)
{
    (void)state;
    int src[10], dst[2 * 6];
    for (int i = 0; i < 10; i++) src[i] = 100 + i;
    for (int i = 0; i < 12; i++) dst[i] = -1;
    /* source 0: rows of 2 at offset 0 (4 ints); source 2: rows of 3 at offset 4 (6 ints) */
    ptrdiff_t offsets[3] = {0, 4, 4}, counts[3] = {2, 0, 3}, starts[3] = {0, 0, 2};
    pc_transpose_interleave(src, offsets, counts, starts, 3, dst, 6, 2, sizeof(int));
    int want[12] = {100, 101, 104, 105, 106, -1, 102, 103, 107, 108, 109, -1};
    assert_memory_equal(dst, want, sizeof want);
}

/* The whole transpose with every rank in one process: pack on each source, the exchange as memcpy of the blocks
 * the inner plan would move (alltoallv layout: block s of S at ln0 start1(s), source q's block in R at start0(q)
 * ln1), unpack on each destination, then every output element against the input. */
static void simulate(ptrdiff_t n0, ptrdiff_t n1, int P, size_t es)
{
    unsigned char *global = malloc((size_t)(n0 * n1) * es + 1);
    for (ptrdiff_t i = 0; i < n0; i++)
        for (ptrdiff_t j = 0; j < n1; j++)
            for (size_t k = 0; k < es; k++) global[((size_t)(i * n1 + j)) * es + k] = byte_of((size_t)i, (size_t)j, k);
    unsigned char **S = calloc((size_t)P, sizeof *S), **R = calloc((size_t)P, sizeof *R);
    ptrdiff_t *ln0 = calloc((size_t)P, sizeof *ln0), *s0 = calloc((size_t)P, sizeof *s0);
    ptrdiff_t *ln1 = calloc((size_t)P, sizeof *ln1), *s1 = calloc((size_t)P, sizeof *s1);
    for (int r = 0; r < P; r++) {
        pc_block_dist(n0, P, r, &ln0[r], &s0[r]);
        pc_block_dist(n1, P, r, &ln1[r], &s1[r]);
        S[r] = malloc((size_t)(ln0[r] * n1) * es + 1);
        R[r] = malloc((size_t)(ln1[r] * n0) * es + 1);
        pc_transpose_local(global + (size_t)(s0[r] * n1) * es, (size_t)n1, S[r], (size_t)ln0[r], (size_t)ln0[r],
                           (size_t)n1, es);
    }
    for (int q = 0; q < P; q++)
        for (int d = 0; d < P; d++) {
            size_t bytes = (size_t)(ln0[q] * ln1[d]) * es;
            if (bytes) memcpy(R[d] + (size_t)(s0[q] * ln1[d]) * es, S[q] + (size_t)(ln0[q] * s1[d]) * es, bytes);
        }
    ptrdiff_t *offsets = calloc((size_t)P, sizeof *offsets);
    for (int d = 0; d < P; d++) {
        for (int q = 0; q < P; q++) offsets[q] = s0[q] * ln1[d];
        unsigned char *out = malloc((size_t)(ln1[d] * n0) * es + 1);
        pc_transpose_interleave(R[d], offsets, ln0, s0, P, out, (size_t)n0, (size_t)ln1[d], es);
        for (ptrdiff_t j = 0; j < ln1[d]; j++)
            for (ptrdiff_t i = 0; i < n0; i++)
                for (size_t k = 0; k < es; k++)
                    if (out[((size_t)(j * n0 + i)) * es + k] != byte_of((size_t)i, (size_t)(s1[d] + j), k))
                        fail_msg("%tdx%td P=%d es=%zu: rank %d output (%td, %td) byte %zu wrong", n0, n1, P, es, d,
                                 s1[d] + j, i, k);
        free(out);
    }
    for (int r = 0; r < P; r++) {
        free(S[r]);
        free(R[r]);
    }
    free(S), free(R), free(ln0), free(s0), free(ln1), free(s1), free(offsets), free(global);
}

static void test_pipeline(void **state)
{
    (void)state;
    static const ptrdiff_t sizes[] = {0, 1, 3, 7, 16, 33};
    for (int P = 1; P <= 17; P++)
        for (size_t a = 0; a < 6; a++)
            for (size_t b = 0; b < 6; b++) simulate(sizes[a], sizes[b], P, (a + b + (size_t)P) % 2 ? 16 : 12);
}

/* T_local = (ln0(0) n1 + ln1(0) n0) es b', with a hand model's transpose rate b' = 1/10000 us/B:
 *   1024 x 1024, P = 4, es 16: (256*1024 + 256*1024) * 16 / 10000 = 838.8608 us
 *   10 x 6, P = 4, es 8: b0 = 3, b1 = 2: (3*6 + 2*10) * 8 / 10000 = 0.0304 us */
static void test_estimate(void **state)
{
    (void)state;
    struct pc_machine_model m;
    memset(&m, 0, sizeof m);
    m.transpose_us_per_b = 1.0 / 10000.0;
    m.copy_us_per_b = 1.0; /* not the figure a transpose uses */
    assert_true(fabs(pc_transpose_local_estimate(1024, 1024, 4, 16, &m) - 838.8608) < 1e-9);
    assert_true(fabs(pc_transpose_local_estimate(10, 6, 4, 8, &m) - 0.0304) < 1e-12);
    assert_true(pc_transpose_local_estimate(0, 6, 4, 8, &m) == 0.0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_dist), cmocka_unit_test(test_local_transpose),
        cmocka_unit_test(test_local_transpose_stream), cmocka_unit_test(test_interleave),
        cmocka_unit_test(test_pipeline), cmocka_unit_test(test_estimate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
