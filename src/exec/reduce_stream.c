/* Streaming stores into node-shared areas: see reduce_stream.h. Built with reduce.c's flags (meson.build: no
 * contraction into FMAs), so a sum here rounds exactly as the ordinary loop's. */
#include "exec/reduce_stream.h"

#include <stdalign.h>
#include <stdatomic.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#if PC_STREAM_STORES
#include <emmintrin.h>
#endif

/* Elements per block of the blocked form: 1 KiB, a few dozen lines that fast3 writes in L1 and the copy streams out. */
enum { STREAM_BLOCK_BYTES = 1024 };

void pc_stream_reduce3_blocked(pc_stream_loop3_fn fast3, const void *a, const void *b, void *out, int n, size_t ext)
{
    if (n <= 0) return;
    if (!PC_STREAM_STORES || ext == 0 || ext > STREAM_BLOCK_BYTES) {
        fast3(a, b, out, n);
        return;
    }
    alignas(64) unsigned char block[STREAM_BLOCK_BYTES];
    const char *pa = a, *pb = b;
    char *po = out;
    /* A head of ordinary stores up to the first element that starts on a 16-byte boundary, so that every whole
     * block after it is streamed without ordinary stores at its ends (none when no element ever starts on one). */
    int head = 0;
    while (head < 16 && head < n && ((uintptr_t)(po + (size_t)head * ext) & 15)) head++;
    if (head == 16) head = 0;
    if (head > 0) {
        fast3(pa, pb, po, head);
        pa += (size_t)head * ext, pb += (size_t)head * ext, po += (size_t)head * ext;
        n -= head;
    }
    const int per = (int)(STREAM_BLOCK_BYTES / ext);
    for (int c; n > 0; n -= c) {
        c = n < per ? n : per;
        fast3(pa, pb, block, c);
        pc_stream_copy(po, block, (size_t)c * ext);
        pa += (size_t)c * ext, pb += (size_t)c * ext, po += (size_t)c * ext;
    }
}

/* The ordinary loops (reduce.c's sums: integers in unsigned arithmetic, wrapping), for heads, tails and the blocked
 * form. */
#define SCALAR_SUM(suffix, T, W)                                                                 \
    static void scalar_sum_##suffix(const void *restrict a_, const void *restrict b_, void *restrict out_, int n) \
    {                                                                                            \
        const T *a = a_, *b = b_;                                                                \
        T *o = out_;                                                                             \
        for (int i = 0; i < n; i++) o[i] = (T)((W)a[i] + (W)b[i]);                               \
    }
SCALAR_SUM(f32, float, float)
SCALAR_SUM(f64, double, double)
SCALAR_SUM(u8, uint8_t, uint64_t)
SCALAR_SUM(u16, uint16_t, uint64_t)
SCALAR_SUM(u32, uint32_t, uint64_t)
SCALAR_SUM(u64, uint64_t, uint64_t)

#if PC_STREAM_STORES
/* One 16-byte vector of sums at element i, streamed to o + i (16-byte aligned). */
#define VEC_F32(i) _mm_stream_ps(o + (i), _mm_add_ps(_mm_loadu_ps(a + (i)), _mm_loadu_ps(b + (i))))
#define VEC_F64(i) _mm_stream_pd(o + (i), _mm_add_pd(_mm_loadu_pd(a + (i)), _mm_loadu_pd(b + (i))))
#define VEC_INT(i, ADD)                                                                          \
    _mm_stream_si128((__m128i *)(o + (i)),                                                       \
                     ADD(_mm_loadu_si128((const __m128i *)(a + (i))), _mm_loadu_si128((const __m128i *)(b + (i)))))
#define VEC_U8(i) VEC_INT(i, _mm_add_epi8)
#define VEC_U16(i) VEC_INT(i, _mm_add_epi16)
#define VEC_U32(i) VEC_INT(i, _mm_add_epi32)
#define VEC_U64(i) VEC_INT(i, _mm_add_epi64)
/* Scalar head up to o's first 16-byte boundary, four vectors (a line) per turn, single vectors, scalar tail. */
#define DEFINE_STREAM_SUM(suffix, T, VEC)                                                        \
    void pc_stream_sum3_##suffix(const void *a_, const void *b_, void *out_, int n)              \
    {                                                                                            \
        const T *a = a_, *b = b_;                                                                \
        T *o = out_;                                                                             \
        if (n <= 0) return;                                                                      \
        if ((uintptr_t)o % sizeof(T)) {                                                          \
            pc_stream_reduce3_blocked(scalar_sum_##suffix, a, b, o, n, sizeof(T));               \
            return;                                                                              \
        }                                                                                        \
        enum { PER = 16 / sizeof(T) };                                                           \
        int i = 0;                                                                               \
        while (i < n && ((uintptr_t)(o + i) & 15)) i++;                                          \
        scalar_sum_##suffix(a, b, o, i);                                                         \
        for (; i + 4 * PER <= n; i += 4 * PER) {                                                 \
            VEC(i);                                                                              \
            VEC(i + PER);                                                                        \
            VEC(i + 2 * PER);                                                                    \
            VEC(i + 3 * PER);                                                                    \
        }                                                                                        \
        for (; i + PER <= n; i += PER) VEC(i);                                                   \
        scalar_sum_##suffix(a + i, b + i, o + i, n - i);                                         \
    }
#else
#define DEFINE_STREAM_SUM(suffix, T, VEC)                                                        \
    void pc_stream_sum3_##suffix(const void *a, const void *b, void *out, int n) { scalar_sum_##suffix(a, b, out, n); }
#endif
DEFINE_STREAM_SUM(f32, float, VEC_F32)
DEFINE_STREAM_SUM(f64, double, VEC_F64)
DEFINE_STREAM_SUM(u8, uint8_t, VEC_U8)
DEFINE_STREAM_SUM(u16, uint16_t, VEC_U16)
DEFINE_STREAM_SUM(u32, uint32_t, VEC_U32)
DEFINE_STREAM_SUM(u64, uint64_t, VEC_U64)

/* Complex SUM is by parts (reduce.c): the real sums of 2n parts. */
#define DEFINE_STREAM_COMPLEX_SUM(suffix, part, T)                                                \
    void pc_stream_sum3_##suffix(const void *a_, const void *b_, void *out_, int n)              \
    {                                                                                            \
        const T *a = a_, *b = b_;                                                                \
        T *o = out_;                                                                             \
        for (int c; n > 0; n -= c, a += 2 * c, b += 2 * c, o += 2 * c) { /* 2n parts fit an int */ \
            c = n < INT_MAX / 2 ? n : INT_MAX / 2;                                               \
            pc_stream_sum3_##part(a, b, o, 2 * c);                                               \
        }                                                                                        \
    }
DEFINE_STREAM_COMPLEX_SUM(c32, f32, float)
DEFINE_STREAM_COMPLEX_SUM(c64, f64, double)
