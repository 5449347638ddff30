/* Data patterns and checks shared by the drop-in layer's C test programs (plain MPI, no plancoll header).
 *
 * Every element's value is a closed-form function of (source rank, destination rank, index, data iteration),
 * and the data iteration is a counter that grows with every collective call, so a call that returns the data
 * of an earlier call (a stale buffer, a cached result) fails. Receive buffers are filled with a sentinel
 * before every call; the whole buffer, gaps of strided types included, is compared byte for byte with an
 * image built independently from the pattern. */
#ifndef DROPIN_COMMON_H
#define DROPIN_COMMON_H

#include "dropin_harness.h"

#include <float.h>
#include <math.h>
#include <stdint.h>

#define DC_SENTINEL 0xA5 /* receive buffers before a call */
#define DC_FILLER 0x5A   /* the gaps of send buffers (never read by MPI) */

/* How a test datatype lays out its base elements: nbase elements of `base` at byte offsets offs[] inside one
 * element of extent `extent`. */
typedef struct {
    const char *name;
    MPI_Datatype type;
    MPI_Datatype base; /* MPI_INT, MPI_FLOAT or MPI_DOUBLE */
    int nbase;
    int offs[4];
    MPI_Aint extent;
} dc_kind;

static dc_kind dc_int, dc_double, dc_float, dc_contig3, dc_vector;

/* The derived types: three ints in a row (a contiguous type whose signature equals 3 x MPI_INT), and a
 * strided block of doubles (2 blocks of 2 with stride 3: doubles 0,1,3,4 of each 5, a hole at 2). */
__attribute__((unused)) static void dc_types_create(void)
{
    dc_int = (dc_kind){"MPI_INT", MPI_INT, MPI_INT, 1, {0}, sizeof(int)};
    dc_double = (dc_kind){"MPI_DOUBLE", MPI_DOUBLE, MPI_DOUBLE, 1, {0}, sizeof(double)};
    dc_float = (dc_kind){"MPI_FLOAT", MPI_FLOAT, MPI_FLOAT, 1, {0}, sizeof(float)};
    MPI_Datatype c3, v;
    MPI_Type_contiguous(3, MPI_INT, &c3);
    MPI_Type_commit(&c3);
    dc_contig3 = (dc_kind){"contig(3xMPI_INT)", c3, MPI_INT, 3, {0, 4, 8}, 3 * sizeof(int)};
    MPI_Type_vector(2, 2, 3, MPI_DOUBLE, &v);
    MPI_Type_commit(&v);
    dc_vector = (dc_kind){"vector(2,2,3,MPI_DOUBLE)", v, MPI_DOUBLE, 4, {0, 8, 24, 32}, 5 * sizeof(double)};
    MPI_Aint lb, extent;
    MPI_Type_get_extent(v, &lb, &extent);
    DH_CHECK(extent == dc_vector.extent && lb == 0, "vector extent %ld lb %ld", (long)extent, (long)lb);
}

__attribute__((unused)) static void dc_types_free(void)
{
    MPI_Type_free(&dc_contig3.type);
    MPI_Type_free(&dc_vector.type);
}

static uint32_t dc_mix(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

/* The pattern: a 32-bit value for (source, destination, packed index, data iteration). */
static uint32_t dc_value(int src, int dst, long k, unsigned iter)
{
    return dc_mix((uint32_t)src * 2654435761U ^ dc_mix((uint32_t)dst * 40503U + 17U) ^
                  dc_mix((uint32_t)k * 2246822519U + 5U) ^ dc_mix(iter * 3266489917U + 11U));
}

/* Writes value v as a base element: ints below 2^20, floats and doubles exactly representable. */
static void dc_put(unsigned char *at, MPI_Datatype base, uint32_t v)
{
    if (base == MPI_INT) {
        int x = (int)(v & 0xfffff);
        memcpy(at, &x, sizeof x);
    } else if (base == MPI_FLOAT) {
        float x = (float)(v & 0xffff) + 0.5f;
        memcpy(at, &x, sizeof x);
    } else {
        double x = (double)(v & 0xfffff) + 0.25;
        memcpy(at, &x, sizeof x);
    }
}

/* Base element j of element e of a buffer of kind t. */
static unsigned char *dc_at(void *buf, const dc_kind *t, long e, int j)
{
    return (unsigned char *)buf + e * t->extent + t->offs[j];
}

static unsigned dc_iteration; /* grows with every collective call of the program */

static void *dc_alloc(size_t bytes, int fill)
{
    void *p = malloc(bytes + 64);
    if (!p) {
        fprintf(stderr, "out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(p, fill, bytes + 64);
    return p;
}

/* Compares a received buffer with its expected image; reports the first differing byte. */
__attribute__((unused)) static void dc_compare(const void *got, const void *want, size_t bytes, const char *what,
                                               unsigned iter)
{
    const unsigned char *g = got, *w = want;
    size_t i = 0;
    while (i < bytes && g[i] == w[i]) i++;
    DH_CHECK(i == bytes, "%s (iteration %u): byte %zu of %zu is 0x%02x, want 0x%02x", what, iter, i, bytes,
             i < bytes ? g[i] : 0, i < bytes ? w[i] : 0);
}

/* Rank r's element k for an allreduce with op `op` (ints: SUM below 2^20 per rank, MAX over the full
 * positive range, BAND with two bits cleared; floats and doubles of both signs, not exact sums). */
__attribute__((unused)) static void dc_allreduce_input(MPI_Datatype base, MPI_Op op, int r, long k, unsigned iter,
                                                       void *at)
{
    uint32_t v = dc_value(r, -1, k, iter);
    if (base == MPI_INT) {
        int x;
        if (op == MPI_BAND)
            x = (int)(0xffffffffU ^ (1U << (v % 32)) ^ (1U << ((v >> 5) % 32)));
        else if (op == MPI_MAX)
            x = (int)(v & 0x7fffffff);
        else
            x = (int)(v & 0xfffff);
        memcpy(at, &x, sizeof x);
    } else if (base == MPI_FLOAT) {
        float x = (float)((int)(v % 2001) - 1000) / 7.0f;
        memcpy(at, &x, sizeof x);
    } else {
        double x = (double)((int)(v % 20001) - 10000) / 7.0;
        memcpy(at, &x, sizeof x);
    }
}

/* Checks an allreduce's result `out` (count elements of base, op, inputs dc_allreduce_input at iteration
 * iter, the buffer allocated by dc_alloc with the sentinel) on comm: integers exactly (ops other than SUM,
 * MAX and BAND are the tests' user XOR); floats and doubles bit-identical on every rank (a collective call
 * on comm) and within the summation bound of the exact sum. */
__attribute__((unused)) static void dc_allreduce_check(MPI_Comm comm, MPI_Datatype base, MPI_Op op, int count,
                                                       const unsigned char *out, unsigned iter, const char *label)
{
    int n, size;
    MPI_Comm_size(comm, &n);
    MPI_Type_size(base, &size);
    size_t bytes = (size_t)count * (size_t)size;
    if (base == MPI_INT) {
        unsigned char *want = dc_alloc(bytes, DC_SENTINEL);
        for (long k = 0; k < count; k++) {
            int acc = 0;
            for (int r = 0; r < n; r++) {
                int x;
                dc_allreduce_input(base, op, r, k, iter, &x);
                if (r == 0) acc = x;
                else if (op == MPI_SUM) acc += x;
                else if (op == MPI_MAX) acc = x > acc ? x : acc;
                else if (op == MPI_BAND) acc &= x;
                else acc ^= x; /* the user op */
            }
            memcpy(want + k * size, &acc, sizeof acc);
        }
        dc_compare(out, want, bytes + 64, label, iter);
        free(want);
    } else {
        /* recursive summation in any order is within gamma_(n-1) sum|x| of the exact sum; the reference is
         * summed in long double (64-bit mantissa), whose own error the bound also allows */
        double u = base == MPI_FLOAT ? FLT_EPSILON / 2 : DBL_EPSILON / 2;
        double gamma = (n - 1) * u / (1 - (n - 1) * u) + n * (double)LDBL_EPSILON;
        long bad = 0;
        for (long k = 0; k < count; k++) {
            long double exact = 0, mag = 0;
            for (int r = 0; r < n; r++) {
                double x;
                if (base == MPI_FLOAT) {
                    float f;
                    dc_allreduce_input(base, op, r, k, iter, &f);
                    x = f;
                } else {
                    dc_allreduce_input(base, op, r, k, iter, &x);
                }
                exact += x;
                mag += fabsl((long double)x);
            }
            double got;
            if (base == MPI_FLOAT) {
                float f;
                memcpy(&f, out + k * size, sizeof f);
                got = f;
            } else {
                memcpy(&got, out + k * size, sizeof got);
            }
            /* a float result also carries the rounding of the exact sum to float */
            double err = fabs((double)((long double)got - exact));
            double bound = gamma * (double)mag + (base == MPI_FLOAT ? u * fabs((double)exact) : 0);
            if (!(err <= bound)) {
                if (bad++ == 0)
                    DH_CHECK(0, "%s (iteration %u): element %ld is %.17g, exact %.17Lg, error %.3g > bound %.3g",
                             label, iter, k, got, exact, err, bound);
            }
        }
        DH_CHECK(bad == 0, "%s (iteration %u): %ld elements out of bounds", label, iter, bad);
        /* the sentinel past the end untouched */
        unsigned char tail[64];
        memset(tail, DC_SENTINEL, sizeof tail);
        dc_compare(out + bytes, tail, sizeof tail, label, iter);
        DH_CHECK(dh_same_everywhere(out, (int)bytes, comm), "%s (iteration %u): ranks' results differ in bits",
                 label, iter);
    }
}

#endif
