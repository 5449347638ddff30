/* Allreduce correctness: every registered algorithm forced in turn (and the planner's own choices), every
 * predefined op on the type classes MPI allows, user-defined commutative and non-commutative ops, counts 0,
 * 1, smaller than P, odd and 1 MiB, MPI_IN_PLACE on all or some ranks, three executions with new data,
 * execute_buffers, a strided type whose gaps must survive. Expected values come from the data pattern.
 * Floating-point data is chosen so that the reduction order changes the rounding: every rank must still hold
 * bit-identical results (compared by hash), within the stated tolerance of the exact sum. Then the hierarchical
 * algorithms' parameters are forced one by one (leader counts, 99 = clamped, NUMA placement, each inter-node
 * algorithm, sub-partition counts, store modes) on counts around the partition boundaries, with plancoll_malloc
 * buffers read in place; streaming stores (stores=stream) also over the whole matrix. "--params-only" runs only those (the synthetic-NUMA runs of meson.build). */
#include <complex.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static const char *alg_label;
/* The layout, found independently of plancoll: emulated nodes, and whether each holds consecutive ranks. */
static int test_nodes;
static bool nodes_consecutive;

/* ---- data patterns ---- */
static int ival(int rank, int i, int it) { return (rank * 7 + i * 13 + it * 5) % 23 - 11; }
/* Large terms of alternating sign plus small ones: addition order changes the rounding. */
static double dval(int rank, int i, int it) { return (rank % 2 ? 1.0 : -1.0) * 1e15 * (1 + i % 3) + 0.1 * (rank + 1) * (i + it + 1); }

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *c = p;
    uint64_t h = UINT64_C(1469598103934665603);
    for (size_t i = 0; i < n; i++) h = (h ^ c[i]) * UINT64_C(1099511628211);
    return h;
}

/* Every rank must hold the same bits. */
static void check_identical(const void *buf, size_t bytes, const char *what)
{
    uint64_t h = hash_bytes(buf, bytes), hmin, hmax;
    tl_allreduce(&h, &hmin, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
    tl_allreduce(&h, &hmax, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    TL_CHECK(hmin == hmax, "%s %s: ranks hold different bits", alg_label, what);
}

/* MPI's own MAX, MIN, MAXLOC and MINLOC on floating values (MPICH's keep one operand or the other by position when a
 * NaN or a signed zero is involved) may differ from plancoll's: then a forced candidate that lets MPI reduce is
 * refused. test_allreduce_ops covers which pairs and why; here such a refusal just skips the case. */
static bool mpi_may_be_refused(MPI_Datatype t, MPI_Op op)
{
    bool mpi_backed = alg_label && (strncmp(alg_label, "allreduce.native", 16) == 0 || strstr(alg_label, "inter=mpi"));
    bool order_op = op == MPI_MAX || op == MPI_MIN || op == MPI_MAXLOC || op == MPI_MINLOC;
    return mpi_backed && order_op && (t == MPI_FLOAT || t == MPI_DOUBLE_INT);
}

static plancoll_plan plan_or_fail(const void *s, void *r, int n, MPI_Datatype t, MPI_Op op, unsigned flags, const char *what)
{
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(s, r, n, t, op, MPI_COMM_WORLD, flags, &p);
    if (rc == PLANCOLL_ERR_INAPPLICABLE && mpi_may_be_refused(t, op)) return NULL;
    TL_CHECK(rc == PLANCOLL_SUCCESS, "%s %s: plan failed %d (%s): %s", alg_label, what, rc, plancoll_strerror(rc),
             plancoll_error_detail());
    return rc == PLANCOLL_SUCCESS ? p : NULL;
}

/* ---- doubles with SUM: tolerance and bit identity; in place on some ranks ---- */
static void test_double_sum(int n, unsigned flags, int in_place_mode)
{
    double *s = malloc(sizeof(double) * (n + 1)), *r = malloc(sizeof(double) * (n + 1));
    bool in_place = in_place_mode == 2 || (in_place_mode == 1 && tl_rank % 2 == 1);
    plancoll_plan p = plan_or_fail(in_place ? MPI_IN_PLACE : s, r, n, MPI_DOUBLE, MPI_SUM, flags, "double sum");
    for (int it = 0; p && it < 3; it++) {
        for (int i = 0; i < n; i++) (in_place ? r : s)[i] = dval(tl_rank, i, it);
        TL_OK(plancoll_execute(p));
        int bad = 0;
        for (int i = 0; i < n; i++) {
            long double exact = 0, mag = 0;
            for (int q = 0; q < tl_size; q++) {
                exact += dval(q, i, it);
                mag += fabsl((long double)dval(q, i, it));
            }
            /* Any summation order of P terms is within (P-1) eps sum|x| of the exact sum. */
            long double tol = (tl_size - 1) * 1.2e-16L * mag;
            if (fabsl(r[i] - exact) > tol && bad++ < 3)
                TL_CHECK(0, "%s double sum n=%d it=%d in_place=%d: r[%d]=%.17g exact %.17Lg", alg_label, n, it,
                         in_place_mode, i, r[i], exact);
        }
        TL_CHECK(bad == 0, "%s double sum n=%d: %d elements out of tolerance", alg_label, n, bad);
        check_identical(r, sizeof(double) * (size_t)n, "double sum");
    }
    if (p) TL_OK(plancoll_destroy_plan(&p));
    free(s);
    free(r);
}

/* ---- integer ops on several integer types ---- */
#define INT_OP_CASE(T, MPIT, opname, OP, init, fold)                                                    \
    static void test_##opname##_##T(int n, unsigned flags)                                               \
    {                                                                                                    \
        T *s = calloc((size_t)n + 1, sizeof(T)), *r = malloc(sizeof(T) * (n + 1));                       \
        plancoll_plan p = plan_or_fail(s, r, n, MPIT, OP, flags, #opname " " #T);                       \
        for (int it = 0; p && it < 3; it++) {                                                            \
            for (int i = 0; i < n; i++) s[i] = (T)(init(tl_rank, i, it));                                \
            TL_OK(plancoll_execute(p));                                                                  \
            int bad = 0;                                                                                 \
            for (int i = 0; i < n; i++) {                                                                \
                T e = (T)(init(0, i, it));                                                               \
                for (int q = 1; q < tl_size; q++) {                                                      \
                    T x = (T)(init(q, i, it));                                                           \
                    e = (T)(fold);                                                                       \
                }                                                                                        \
                if (r[i] != e && bad++ < 3)                                                              \
                    TL_CHECK(0, "%s %s %s n=%d it=%d: r[%d]=%lld expected %lld", alg_label, #opname, #T, n, it, \
                             i, (long long)r[i], (long long)e);                                          \
            }                                                                                            \
            TL_CHECK(bad == 0, "%s %s %s n=%d: %d wrong", alg_label, #opname, #T, n, bad);               \
        }                                                                                                \
        if (p) TL_OK(plancoll_destroy_plan(&p));                                                         \
        free(s);                                                                                         \
        free(r);                                                                                         \
    }

#define SMALL(q, i, it) ival(q, i, it)
#define TWOS(q, i, it) (((q) + (i) + (it)) % 3 == 0 ? 2 : 1)
#define BITS(q, i, it) ((unsigned)(0x9e3779b9u * (unsigned)((q) + 1) + (unsigned)(i) * 2654435761u + (unsigned)(it)))
#define BOOLS(q, i, it) (((q) * 3 + (i) + (it)) % 4 == 0 ? 0 : ((q) + (i)) % 5)
typedef long long llong;
typedef unsigned char uchar;

INT_OP_CASE(int, MPI_INT, sum, MPI_SUM, SMALL, (unsigned)e + (unsigned)x)
INT_OP_CASE(llong, MPI_LONG_LONG, sum, MPI_SUM, SMALL, e + x)
INT_OP_CASE(unsigned, MPI_UNSIGNED, sum, MPI_SUM, BITS, e + x)
INT_OP_CASE(int, MPI_INT, prod, MPI_PROD, TWOS, e * x)
INT_OP_CASE(int, MPI_INT, max, MPI_MAX, SMALL, e > x ? e : x)
INT_OP_CASE(int, MPI_INT, min, MPI_MIN, SMALL, e < x ? e : x)
INT_OP_CASE(int, MPI_INT, land, MPI_LAND, BOOLS, e && x)
INT_OP_CASE(int, MPI_INT, lor, MPI_LOR, BOOLS, e || x)
INT_OP_CASE(int, MPI_INT, lxor, MPI_LXOR, BOOLS, !e != !x)
INT_OP_CASE(unsigned, MPI_UNSIGNED, band, MPI_BAND, BITS, e & x)
INT_OP_CASE(unsigned, MPI_UNSIGNED, bor, MPI_BOR, BITS, e | x)
INT_OP_CASE(unsigned, MPI_UNSIGNED, bxor, MPI_BXOR, BITS, e ^ x)
INT_OP_CASE(uchar, MPI_BYTE, bxor, MPI_BXOR, BITS, e ^ x)
INT_OP_CASE(short, MPI_SHORT, max, MPI_MAX, SMALL, e > x ? e : x)

static void test_float_max_min(int n, unsigned flags)
{
    float *s = malloc(sizeof(float) * (n + 1)), *r = malloc(sizeof(float) * (n + 1));
    for (int k = 0; k < 2; k++) {
        MPI_Op op = k ? MPI_MIN : MPI_MAX;
        plancoll_plan p = plan_or_fail(s, r, n, MPI_FLOAT, op, flags, "float max/min");
        for (int it = 0; p && it < 3; it++) {
            for (int i = 0; i < n; i++) s[i] = (float)ival(tl_rank, i, it) * 0.5f;
            TL_OK(plancoll_execute(p));
            for (int i = 0; i < n; i++) {
                float e = (float)ival(0, i, it) * 0.5f;
                for (int q = 1; q < tl_size; q++) {
                    float x = (float)ival(q, i, it) * 0.5f;
                    e = k ? (x < e ? x : e) : (x > e ? x : e);
                }
                if (r[i] != e) {
                    TL_CHECK(0, "%s float %s n=%d: r[%d]=%g expected %g", alg_label, k ? "min" : "max", n, i, r[i], e);
                    break;
                }
            }
        }
        if (p) TL_OK(plancoll_destroy_plan(&p));
    }
    free(s);
    free(r);
}

static void test_complex_sum(int n, unsigned flags)
{
    double complex *s = calloc((size_t)n + 1, sizeof(double complex)), *r = malloc(sizeof(double complex) * (n + 1));
    plancoll_plan p = plan_or_fail(s, r, n, MPI_C_DOUBLE_COMPLEX, MPI_SUM, flags, "complex sum");
    for (int it = 0; p && it < 3; it++) {
        for (int i = 0; i < n; i++) s[i] = ival(tl_rank, i, it) + I * ival(tl_rank, i + 1, it);
        TL_OK(plancoll_execute(p));
        for (int i = 0; i < n; i++) {
            double re = 0, im = 0;
            for (int q = 0; q < tl_size; q++) {
                re += ival(q, i, it);
                im += ival(q, i + 1, it);
            }
            if (creal(r[i]) != re || cimag(r[i]) != im) {
                TL_CHECK(0, "%s complex sum n=%d it=%d: r[%d]=(%g,%g) expected (%g,%g)", alg_label, n, it, i,
                         creal(r[i]), cimag(r[i]), re, im);
                break;
            }
        }
        check_identical(r, sizeof(double complex) * (size_t)n, "complex sum");
    }
    if (p) TL_OK(plancoll_destroy_plan(&p));
    free(s);
    free(r);
}

/* ---- MAXLOC / MINLOC on MPI_DOUBLE_INT ---- */
struct dint {
    double v;
    int loc;
};
static void test_maxloc(int n, unsigned flags)
{
    struct dint *s = malloc(sizeof(struct dint) * (n + 1)), *r = malloc(sizeof(struct dint) * (n + 1));
    for (int k = 0; k < 2; k++) {
        MPI_Op op = k ? MPI_MINLOC : MPI_MAXLOC;
        plancoll_plan p = plan_or_fail(s, r, n, MPI_DOUBLE_INT, op, flags, "maxloc");
        for (int it = 0; p && it < 3; it++) {
            for (int i = 0; i < n; i++) {
                s[i].v = (double)(ival(tl_rank, i, it) / 3); /* ties happen: the lowest index must win */
                s[i].loc = tl_rank;
            }
            TL_OK(plancoll_execute(p));
            for (int i = 0; i < n; i++) {
                double best = ival(0, i, it) / 3;
                int loc = 0;
                for (int q = 1; q < tl_size; q++) {
                    double v = ival(q, i, it) / 3;
                    if (k ? v < best : v > best) {
                        best = v;
                        loc = q;
                    }
                }
                if (r[i].v != best || r[i].loc != loc) {
                    TL_CHECK(0, "%s %s n=%d it=%d: r[%d]=(%g,%d) expected (%g,%d)", alg_label, k ? "minloc" : "maxloc",
                             n, it, i, r[i].v, r[i].loc, best, loc);
                    break;
                }
            }
        }
        if (p) TL_OK(plancoll_destroy_plan(&p));
    }
    free(s);
    free(r);
}

/* ---- user ops on a contiguous derived type: 2x2 matrix product mod 2^32 (non-commutative), and a
 * commutative componentwise sum ---- */
typedef struct {
    uint32_t a, b, c, d;
} mat2;
static mat2 mat_mul(mat2 x, mat2 y)
{
    mat2 z = {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
    return z;
}
/* MPI convention: inout = in op inout, in coming from the lower ranks. */
static void mat_op(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    mat2 *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[i] = mat_mul(x[i], y[i]);
}
static void vec_add(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    uint32_t *x = in, *y = inout;
    for (int i = 0; i < 4 * *len; i++) y[i] += x[i];
}
static mat2 mat_val(int q, int i, int it)
{
    mat2 m = {(uint32_t)(q + 1), (uint32_t)(i + it + 1), (uint32_t)(q * 3 + 2), (uint32_t)(q + i + 5)};
    return m;
}

/* Which forced algorithms must refuse a non-commutative op here: reduce-scatter reorders operands; a node-by-node
 * reduction keeps rank order only when every node holds consecutive ranks; inter=rsag among leaders reorders. */
static bool must_refuse_noncommutative(const char *forced)
{
    if (strncmp(forced, "allreduce.rabenseifner", 22) == 0) return true;
    bool hierarchical = strncmp(forced, "allreduce.leader", 16) == 0 || strncmp(forced, "allreduce.dpml", 14) == 0;
    return hierarchical && test_nodes > 1 && (!nodes_consecutive || strstr(forced, "inter=rsag") != NULL);
}

static void test_user_ops(int n, unsigned flags, const char *forced)
{
    MPI_Datatype t;
    MPI_Type_contiguous(4, MPI_UINT32_T, &t);
    MPI_Type_commit(&t);
    for (int commute = 0; commute < 2; commute++) {
        MPI_Op op;
        MPI_Op_create(commute ? vec_add : mat_op, commute, &op);
        mat2 *s = malloc(sizeof(mat2) * (n + 1)), *r = malloc(sizeof(mat2) * (n + 1));
        plancoll_plan p = NULL;
        int rc = plancoll_plan_allreduce(s, r, n, t, op, MPI_COMM_WORLD, flags, &p);
        if (!commute && forced && must_refuse_noncommutative(forced)) {
            TL_CHECK(rc == PLANCOLL_ERR_INAPPLICABLE, "%s forced on a non-commutative op: got %d, expected INAPPLICABLE",
                     forced, rc);
        } else {
            TL_CHECK(rc == PLANCOLL_SUCCESS, "%s user op commute=%d n=%d: plan failed %d: %s", alg_label, commute, n, rc,
                     plancoll_error_detail());
        }
        MPI_Type_free(&t); /* the plan keeps its own duplicate */
        MPI_Type_contiguous(4, MPI_UINT32_T, &t);
        MPI_Type_commit(&t);
        for (int it = 0; rc == PLANCOLL_SUCCESS && it < 3; it++) {
            for (int i = 0; i < n; i++) s[i] = mat_val(tl_rank, i, it);
            TL_OK(plancoll_execute(p));
            for (int i = 0; i < n; i++) {
                mat2 e = mat_val(0, i, it);
                for (int q = 1; q < tl_size; q++) {
                    mat2 x = mat_val(q, i, it);
                    if (commute) {
                        e.a += x.a, e.b += x.b, e.c += x.c, e.d += x.d;
                    } else {
                        e = mat_mul(e, x);
                    }
                }
                if (memcmp(&r[i], &e, sizeof e) != 0) {
                    TL_CHECK(0, "%s user op commute=%d n=%d it=%d: element %d wrong (rank order lost?)", alg_label,
                             commute, n, it, i);
                    break;
                }
            }
        }
        if (p) TL_OK(plancoll_destroy_plan(&p));
        MPI_Op_free(&op);
        free(s);
        free(r);
    }
    MPI_Type_free(&t);
}

/* ---- execute_buffers and in-place execute_buffers ---- */
static void test_execute_buffers(int n, unsigned flags)
{
    int *s1 = calloc((size_t)n + 1, sizeof(int)), *r1 = malloc(sizeof(int) * (n + 1));
    int *s2 = malloc(sizeof(int) * (n + 1)), *r2 = malloc(sizeof(int) * (n + 1));
    for (int i = 0; i < n; i++) r1[i] = -7;
    plancoll_plan p = plan_or_fail(s1, r1, n, MPI_INT, MPI_SUM, flags, "execute_buffers");
    for (int it = 0; p && it < 3; it++) {
        for (int i = 0; i < n; i++) s2[i] = ival(tl_rank, i, it);
        TL_OK(plancoll_execute_buffers(p, s2, r2));
        for (int i = 0; i < n; i++) {
            int e = 0;
            for (int q = 0; q < tl_size; q++) e += ival(q, i, it);
            if (r2[i] != e || r1[i] != -7) {
                TL_CHECK(0, "%s execute_buffers n=%d it=%d: r2[%d]=%d expected %d, r1 %s", alg_label, n, it, i, r2[i],
                         e, r1[i] == -7 ? "untouched" : "WRITTEN");
                break;
            }
        }
    }
    if (p) TL_OK(plancoll_destroy_plan(&p));
    /* in place */
    p = plan_or_fail(MPI_IN_PLACE, r1, n, MPI_INT, MPI_SUM, flags, "execute_buffers in place");
    for (int it = 0; p && it < 3; it++) {
        for (int i = 0; i < n; i++) r2[i] = ival(tl_rank, i, it + 10);
        TL_OK(plancoll_execute_buffers(p, MPI_IN_PLACE, r2));
        for (int i = 0; i < n; i++) {
            int e = 0;
            for (int q = 0; q < tl_size; q++) e += ival(q, i, it + 10);
            if (r2[i] != e) {
                TL_CHECK(0, "%s execute_buffers in place n=%d it=%d: r2[%d]=%d expected %d", alg_label, n, it, i, r2[i], e);
                break;
            }
        }
    }
    if (p) TL_OK(plancoll_destroy_plan(&p));
    free(s1);
    free(r1);
    free(s2);
    free(r2);
}

/* ---- a strided type (an int every 8 bytes) with a user op: the gaps of the receive buffer must survive ---- */
static void strided_sum(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    int *x = in, *y = inout;
    for (int i = 0; i < *len; i++) y[2 * i] += x[2 * i];
}
static void test_strided(int n, unsigned flags)
{
    MPI_Datatype t;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t);
    MPI_Type_commit(&t);
    MPI_Op op;
    MPI_Op_create(strided_sum, 1, &op);
    int *s = malloc(sizeof(int) * (2 * (size_t)n + 2)), *r = malloc(sizeof(int) * (2 * (size_t)n + 2));
    plancoll_plan p = plan_or_fail(s, r, n, t, op, flags, "strided user op");
    for (int it = 0; p && it < 3; it++) {
        for (int i = 0; i < n; i++) {
            s[2 * i] = ival(tl_rank, i, it);
            s[2 * i + 1] = -1000 - i;
            r[2 * i] = 12345;
            r[2 * i + 1] = 777 + i; /* gap: nobody may write it */
        }
        TL_OK(plancoll_execute(p));
        for (int i = 0; i < n; i++) {
            int e = 0;
            for (int q = 0; q < tl_size; q++) e += ival(q, i, it);
            if (r[2 * i] != e || r[2 * i + 1] != 777 + i) {
                TL_CHECK(0, "%s strided n=%d it=%d: element %d = %d (expected %d), gap %d (expected %d)", alg_label, n,
                         it, i, r[2 * i], e, r[2 * i + 1], 777 + i);
                break;
            }
        }
    }
    if (p) TL_OK(plancoll_destroy_plan(&p));
    MPI_Op_free(&op);
    MPI_Type_free(&t);
    free(s);
    free(r);
}

/* ---- buffers from plancoll_malloc (leaders read them in place, and on one node write the result straight into
 * them): on every rank, on even ranks only, in place, the send buffer private and the receive buffer shared on even
 * ranks and the other way round on odd ones, and alternating with private buffers through execute_buffers ---- */
static void test_heap(int n, unsigned flags)
{
    double *hs = NULL, *hr = NULL, *ps = malloc(sizeof(double) * (n + 1)), *pr = malloc(sizeof(double) * (n + 1));
    TL_OK(plancoll_malloc(sizeof(double) * (size_t)n, MPI_COMM_WORLD, (void **)&hs));
    TL_OK(plancoll_malloc(sizeof(double) * (size_t)n, MPI_COMM_WORLD, (void **)&hr));
    for (int mode = 0; mode < 4 && hs && hr; mode++) {
        bool in_place = mode == 2, odd = tl_rank % 2 == 1;
        double *s = (mode == 1 && odd) || (mode == 3 && !odd) ? ps : hs;
        double *r = (mode == 1 && odd) || (mode == 3 && odd) ? pr : hr;
        plancoll_plan p = plan_or_fail(in_place ? MPI_IN_PLACE : s, r, n, MPI_DOUBLE, MPI_SUM, flags, "heap");
        for (int it = 0; p && it < 4; it++) {
            /* odd iterations run on the other kind of buffer */
            bool swap = it % 2 == 1;
            double *ss = swap ? (s == hs ? ps : hs) : s, *rr = swap ? (r == hr ? pr : hr) : r;
            for (int i = 0; i < n; i++) (in_place ? rr : ss)[i] = dval(tl_rank, i, it);
            if (swap)
                TL_OK(plancoll_execute_buffers(p, in_place ? MPI_IN_PLACE : ss, rr));
            else
                TL_OK(plancoll_execute(p));
            int bad = 0;
            for (int i = 0; i < n; i++) {
                long double exact = 0, mag = 0;
                for (int q = 0; q < tl_size; q++) {
                    exact += dval(q, i, it);
                    mag += fabsl((long double)dval(q, i, it));
                }
                if (fabsl(rr[i] - exact) > (tl_size - 1) * 1.2e-16L * mag && bad++ < 3)
                    TL_CHECK(0, "%s heap mode=%d n=%d it=%d: r[%d]=%.17g exact %.17Lg", alg_label, mode, n, it, i, rr[i],
                             exact);
            }
            check_identical(rr, sizeof(double) * (size_t)n, "heap");
        }
        if (p) TL_OK(plancoll_destroy_plan(&p));
    }
    TL_OK(plancoll_free(hs));
    TL_OK(plancoll_free(hr));
    free(ps);
    free(pr);
}

static void run_all(const char *forced, unsigned flags)
{
    /* 0, 1, smaller than P, odd, larger */
    static const int counts[] = {0, 1, 3, 7, 1000};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) {
        int n = counts[k];
        for (int mode = 0; mode < 3; mode++) test_double_sum(n, flags, mode);
        test_user_ops(n, flags, forced);
        test_execute_buffers(n, flags);
        if (n == 1 || n == 7) continue; /* the op x type matrix runs at 0, 3 and 1000 */
        test_sum_int(n, flags);
        test_sum_llong(n, flags);
        test_sum_unsigned(n, flags);
        test_prod_int(n, flags);
        test_max_int(n, flags);
        test_min_int(n, flags);
        test_land_int(n, flags);
        test_lor_int(n, flags);
        test_lxor_int(n, flags);
        test_band_unsigned(n, flags);
        test_bor_unsigned(n, flags);
        test_bxor_unsigned(n, flags);
        test_bxor_uchar(n, flags);
        test_max_short(n, flags);
        test_float_max_min(n, flags);
        test_complex_sum(n, flags);
        test_maxloc(n, flags);
        test_strided(n, flags);
    }
    /* 1 MiB vectors */
    test_double_sum(131072, flags, 0);
    test_double_sum(131072, flags, 1);
}

/* A forced parameter set on counts around the partition boundaries: 0, fewer elements than leaders, counts not
 * divisible by leaders x sub-partitions, and a larger one; a non-commutative user op; MAXLOC; heap buffers. */
static void run_params(const char *forced)
{
    static const int counts[] = {0, 1, 3, 7, 1001};
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++) test_double_sum(counts[k], PLANCOLL_ESTIMATE, 1);
    test_user_ops(13, PLANCOLL_ESTIMATE, forced);
    test_maxloc(5, PLANCOLL_ESTIMATE);
    test_sum_int(2049, PLANCOLL_ESTIMATE);
    test_heap(1001, PLANCOLL_ESTIMATE);
}

/* Emulated nodes as MPI_Comm_split_type sees them, split by PLANCOLL_EMULATE_NODES (tl_split_node; not as plancoll does). */
static void find_nodes(void)
{
    MPI_Comm node;
    tl_split_node(MPI_COMM_WORLD, tl_rank, &node);
    int first = tl_rank;
    tl_allreduce(&tl_rank, &first, 1, MPI_INT, MPI_MIN, node);
    int *firsts = malloc(sizeof(int) * (size_t)tl_size);
    tl_allgather(&first, 1, MPI_INT, firsts, MPI_COMM_WORLD);
    test_nodes = 0;
    nodes_consecutive = true;
    for (int r = 0; r < tl_size; r++) {
        if (firsts[r] == r) test_nodes++;
        if (r > 0 && firsts[r] < firsts[r - 1]) nodes_consecutive = false;
    }
    free(firsts);
    MPI_Comm_free(&node);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "allreduce");
    bool params_only = argc > 1 && strcmp(argv[1], "--params-only") == 0;
    find_nodes();
    /* Parameter values the planner would not necessarily pick, forced so that each is tested. */
    static const char *const param_runs[] = {
        "allreduce.dpml:leaders=2:inter=rsag",
        "allreduce.dpml:leaders=3:placement=numa",
        "allreduce.dpml:leaders=99",
        "allreduce.dpml:leaders=3:inter=mpi",
        "allreduce.dpml:leaders=2:placement=numa:inter=mpi", /* leaders differ per node: a communicator of its own */
        "allreduce.leader:inter=mpi",
        "allreduce.dpml_pipelined:leaders=3:segments=3",
        "allreduce.dpml_pipelined:leaders=99:segments=8:inter=rsag",
        "allreduce.dpml_pipelined:leaders=2:segments=5:placement=numa:inter=mpi",
        "allreduce.leader:stores=normal",
        "allreduce.dpml:leaders=2:stores=normal",
        "allreduce.dpml_pipelined:leaders=2:segments=3:stores=normal",
        "allreduce.dpml:leaders=3:stores=stream",
        "allreduce.dpml_pipelined:leaders=2:segments=3:inter=rsag:stores=stream",
    };
    /* Streaming stores forced on each hierarchical allreduce over the whole matrix (the planner's own pick among
     * the other parameters): they run the SUM kernels for their types and the blocked form for every other op
     * (reduce_stream.h); where the build has no streaming stores, stores=stream runs ordinary ones. Ordinary stores
     * are forced in param_runs; unforced, the plans take stores=auto where the build has streaming stores (the one
     * mode the planner offers there, exec/store_chooser.h): streaming stores at the first two executions, ordinary
     * ones at the third (the chooser's first probe), then the faster. */
    static const char *const store_runs[] = {
        "allreduce.leader:stores=stream",
        "allreduce.dpml:stores=stream",
        "allreduce.dpml_pipelined:stores=stream",
    };
    double t0 = MPI_Wtime();
    for (size_t i = 0; i < sizeof store_runs / sizeof store_runs[0] && !params_only; i++) {
        alg_label = store_runs[i];
        tl_force(store_runs[i]);
        run_all(store_runs[i], PLANCOLL_ESTIMATE);
        if (tl_rank == 0) printf("allreduce %-52s %.2f s\n", store_runs[i], MPI_Wtime() - t0);
        t0 = MPI_Wtime();
    }
    if (!params_only) {
        const char *names[32];
        int n = tl_algorithms("allreduce", names, 32);
        TL_CHECK(n >= 3, "expected at least 3 allreduce algorithms, registry has %d", n);
        for (int a = 0; a < n; a++) {
            alg_label = names[a];
            tl_force(names[a]);
            run_all(names[a], PLANCOLL_ESTIMATE);
            if (tl_rank == 0) printf("allreduce %-52s %.2f s\n", names[a], MPI_Wtime() - t0);
            t0 = MPI_Wtime();
        }
    }
    for (size_t i = 0; i < sizeof param_runs / sizeof param_runs[0]; i++) {
        alg_label = param_runs[i];
        tl_force(param_runs[i]);
        run_params(param_runs[i]);
        if (tl_rank == 0) printf("allreduce %-52s %.2f s\n", param_runs[i], MPI_Wtime() - t0);
        t0 = MPI_Wtime();
    }
    tl_force(NULL);
    if (!params_only) {
        alg_label = "planner(estimate)";
        run_all(NULL, PLANCOLL_ESTIMATE);
        alg_label = "planner(measure)";
        test_double_sum(1000, PLANCOLL_MEASURE, 1);
        test_user_ops(7, PLANCOLL_MEASURE, NULL);
        if (tl_rank == 0) printf("allreduce %-52s %.2f s\n", "planner", MPI_Wtime() - t0);
    }
    return tl_finish();
}
