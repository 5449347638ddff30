/* Streaming (non-temporal) copies: see stream_copy.h. */
#include "base/stream_copy.h"

#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#if PC_STREAM_STORES
#include <emmintrin.h>
#endif

void pc_stream_fence(void)
{
#if PC_STREAM_STORES
    _mm_sfence();
#else
    atomic_signal_fence(memory_order_seq_cst);
#endif
}

void pc_stream_copy(void *restrict dst, const void *restrict src, size_t bytes)
{
#if PC_STREAM_STORES
    char *d = dst;
    const char *s = src;
    size_t head = (16 - ((uintptr_t)d & 15)) & 15;
    if (head >= bytes) {
        memcpy(d, s, bytes);
        return;
    }
    memcpy(d, s, head);
    d += head, s += head, bytes -= head;
    for (; bytes >= 64; d += 64, s += 64, bytes -= 64) { /* a whole line per turn when dst is line-aligned */
        __m128i x0 = _mm_loadu_si128((const __m128i *)s), x1 = _mm_loadu_si128((const __m128i *)(s + 16));
        __m128i x2 = _mm_loadu_si128((const __m128i *)(s + 32)), x3 = _mm_loadu_si128((const __m128i *)(s + 48));
        _mm_stream_si128((__m128i *)d, x0);
        _mm_stream_si128((__m128i *)(d + 16), x1);
        _mm_stream_si128((__m128i *)(d + 32), x2);
        _mm_stream_si128((__m128i *)(d + 48), x3);
    }
    for (; bytes >= 16; d += 16, s += 16, bytes -= 16) _mm_stream_si128((__m128i *)d, _mm_loadu_si128((const __m128i *)s));
    memcpy(d, s, bytes);
#else
    memcpy(dst, src, bytes);
#endif
}
