/* The streaming-store kernels (src/exec/reduce_stream.c): every alignment of the destination (and of the sources)
 * within a 16-byte line, lengths 0 .. 300 elements, results compared bit for bit with the ordinary loop computed
 * here, and no byte written outside the destination. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "exec/reduce_stream.h"

enum { MAX_N = 300, MAX_ELEM = 16, GUARD = 64, BUF = MAX_N * MAX_ELEM + 2 * GUARD + 64 };

static _Alignas(64) unsigned char A[BUF], B[BUF], OUT[BUF], WANT[BUF];

/* Deterministic operand bytes (splitmix64), so that floating values cover signs, exponents and the odd NaN. */
static uint64_t mix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

static void fill(unsigned char *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = mix(&seed);
        memcpy(p + i, &v, n - i < 8 ? n - i : 8);
    }
}

/* Floating operands in a range where no sum overflows and no operand is a NaN: the sums are exact functions of the
 * operands, so bit equality is the right test (a NaN's payload is unspecified, include/plancoll.h). */
static void fill_f64(double *p, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++) p[i] = ((double)(int64_t)mix(&seed) / 9.2e18) * ldexp(1.0, (int)(mix(&seed) % 80) - 40);
}
static void fill_f32(float *p, int n, uint64_t seed)
{
    for (int i = 0; i < n; i++) p[i] = (float)(((double)(int64_t)mix(&seed) / 9.2e18) * ldexp(1.0, (int)(mix(&seed) % 40) - 20));
}

typedef void (*kernel_fn)(const void *, const void *, void *, int);

/* The ordinary loops, written here independently of the library's; through memcpy, since the blocked checks pass
 * operands at any byte offset (a typed load there is undefined behaviour, and UBSan says so). */
#define WANT_FLOAT(s, T)                                                                         \
    static void want_##s(const void *a, const void *b, void *o, int n)                           \
    {                                                                                            \
        for (int i = 0; i < n; i++) {                                                            \
            T x, y, z;                                                                           \
            memcpy(&x, (const char *)a + i * sizeof(T), sizeof x);                               \
            memcpy(&y, (const char *)b + i * sizeof(T), sizeof y);                               \
            z = x + y;                                                                           \
            memcpy((char *)o + i * sizeof(T), &z, sizeof z);                                     \
        }                                                                                        \
    }
WANT_FLOAT(f32, float)
WANT_FLOAT(f64, double)
#define WANT_INT(s, T)                                                                           \
    static void want_##s(const void *a, const void *b, void *o, int n)                           \
    {                                                                                            \
        for (int i = 0; i < n; i++) {                                                            \
            T x, y, z;                                                                           \
            memcpy(&x, (const char *)a + i * sizeof(T), sizeof x);                               \
            memcpy(&y, (const char *)b + i * sizeof(T), sizeof y);                               \
            z = (T)(x + y); /* unsigned: wraps */                                                \
            memcpy((char *)o + i * sizeof(T), &z, sizeof z);                                     \
        }                                                                                        \
    }
WANT_INT(u8, uint8_t)
WANT_INT(u16, uint16_t)
WANT_INT(u32, uint32_t)
WANT_INT(u64, uint64_t)
static void want_c32(const void *a, const void *b, void *o, int n) { want_f32(a, b, o, 2 * n); }
static void want_c64(const void *a, const void *b, void *o, int n) { want_f64(a, b, o, 2 * n); }

/* A non-SUM op for the blocked form: MAX of int32 (any loop will do: the form only moves what fast3 computed). */
static void max_i32(const void *a, const void *b, void *o, int n)
{
    for (int i = 0; i < n; i++) {
        int32_t x, y;
        memcpy(&x, (const char *)a + 4 * (size_t)i, 4);
        memcpy(&y, (const char *)b + 4 * (size_t)i, 4);
        int32_t z = x > y ? x : y;
        memcpy((char *)o + 4 * (size_t)i, &z, 4);
    }
}
/* An element of 12 bytes (three floats): no 16-byte boundary falls between elements at most offsets. */
static void sum_f32x3(const void *a, const void *b, void *o, int n) { want_f32(a, b, o, 3 * n); }

enum fill_kind { F_BYTES, F_F32, F_F64 };

/* kernel against want for every destination offset 0..15 within a line (sources at other offsets, so that they are
 * unaligned against it too) and every length 0..MAX_N; blocked: through pc_stream_reduce3_blocked with want as fast3. */
static void check(const char *name, kernel_fn kernel, kernel_fn want, size_t elem, enum fill_kind kind, bool blocked)
{
    int cases = 0;
    for (size_t off = 0; off < 16; off++)
        for (int n = 0; n <= MAX_N; n += n < 40 ? 1 : 13) {
            unsigned char *a = A + GUARD + (off * 5) % 16, *b = B + GUARD + (off * 3 + 7) % 16;
            unsigned char *o = OUT + GUARD + off, *w = WANT + GUARD + off;
            /* elements must start at their natural alignment for the typed loops to be defined C; the kernels
             * themselves also take misaligned ones (the blocked form) */
            if (!blocked && off % (elem > 8 ? 8 : elem) != 0) continue;
            if (!blocked) {
                a = A + GUARD + (off + 8) % 16, b = B + GUARD + off; /* a on another alignment than out */
            }
            const size_t bytes = (size_t)n * elem;
            if (kind == F_F64) {
                double t[2 * MAX_N];
                fill_f64(t, 2 * n, 11u + (uint64_t)n), memcpy(a, t, bytes);
                fill_f64(t, 2 * n, 13u + (uint64_t)n), memcpy(b, t, bytes);
            } else if (kind == F_F32) {
                float t[4 * MAX_N];
                fill_f32(t, 4 * n, 17u + (uint64_t)n), memcpy(a, t, bytes);
                fill_f32(t, 4 * n, 19u + (uint64_t)n), memcpy(b, t, bytes);
            } else {
                fill(a, bytes, 23u + (uint64_t)n);
                fill(b, bytes, 29u + (uint64_t)n);
            }
            memset(OUT, 0xa5, sizeof OUT);
            memset(WANT, 0xa5, sizeof WANT);
            want(a, b, w, n);
            if (blocked) pc_stream_reduce3_blocked(want, a, b, o, n, elem);
            else kernel(a, b, o, n);
            pc_stream_fence();
            if (memcmp(OUT, WANT, sizeof OUT) != 0) {
                size_t k = 0;
                while (OUT[k] == WANT[k]) k++;
                fail_msg("%s: offset %zu, %d elements: byte %td differs (0x%02x, want 0x%02x)", name, off, n,
                         (ptrdiff_t)k - (ptrdiff_t)(o - OUT), OUT[k], WANT[k]);
            }
            cases++;
        }
    assert_true(cases > 50);
}

static void test_stream_sums(void **state)
{
    (void)state;
    check("f32", pc_stream_sum3_f32, want_f32, 4, F_F32, false);
    check("f64", pc_stream_sum3_f64, want_f64, 8, F_F64, false);
    check("u8", pc_stream_sum3_u8, want_u8, 1, F_BYTES, false);
    check("u16", pc_stream_sum3_u16, want_u16, 2, F_BYTES, false);
    check("u32", pc_stream_sum3_u32, want_u32, 4, F_BYTES, false);
    check("u64", pc_stream_sum3_u64, want_u64, 8, F_BYTES, false);
    check("c32", pc_stream_sum3_c32, want_c32, 8, F_F32, false);
    check("c64", pc_stream_sum3_c64, want_c64, 16, F_F64, false);
}

static void test_stream_blocked(void **state)
{
    (void)state;
    check("blocked max i32", NULL, max_i32, 4, F_BYTES, true);
    check("blocked f64 sum", NULL, want_f64, 8, F_F64, true);
    check("blocked 12-byte elements", NULL, sum_f32x3, 12, F_F32, true);
    check("blocked u8", NULL, want_u8, 1, F_BYTES, true);
}

/* The plain copy: every destination and source offset, lengths 0 .. 300 bytes and a few around the 64-byte turns,
 * nothing written outside [dst, dst + bytes). */
static void test_stream_copy(void **state)
{
    (void)state;
    const size_t lengths[] = {0, 1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 255, 256, 257, 300, 1000, 4099};
    for (size_t d = 0; d < 16; d++)
        for (size_t s = 0; s < 16; s++)
            for (size_t l = 0; l < sizeof lengths / sizeof lengths[0]; l++) {
                const size_t bytes = lengths[l];
                fill(A, sizeof A, 31u + d * 16 + s);
                memset(OUT, 0x5a, sizeof OUT);
                memset(WANT, 0x5a, sizeof WANT);
                memcpy(WANT + GUARD + d, A + GUARD + s, bytes);
                pc_stream_copy(OUT + GUARD + d, A + GUARD + s, bytes);
                pc_stream_fence();
                if (memcmp(OUT, WANT, sizeof OUT) != 0)
                    fail_msg("copy: dst offset %zu, src offset %zu, %zu bytes differ", d, s, bytes);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_stream_sums),
        cmocka_unit_test(test_stream_blocked),
        cmocka_unit_test(test_stream_copy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
