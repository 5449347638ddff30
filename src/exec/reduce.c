/* Reductions. MPI allows each predefined op on some classes of predefined types (MPI 4.0, 6.9.2); the table
 * below encodes those classes. Every allowed (op, type) pair runs plancoll's own loop, which defines its result
 * (include/plancoll.h) and which the compiler vectorises at -O2/-O3 where the target can (restrict pointers, no
 * per-element switch); user ops, and a Fortran type of a size no loop fits, go through MPI_Reduce_local. The end of
 * the file asks whether MPI's own op gives the same results. */
#include "exec/reduce.h"
#include "exec/reduce_stream.h"
#include "shm/sim_work.h"

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* CHARACTER: the character types and MPI_PACKED, on which MPI defines no reduction. */
enum type_class { C_INTEGER, F_INTEGER, FLOATING, LOGICAL, COMPLEX, BYTE, PAIR, CHARACTER };
enum op_kind { OP_MAX, OP_MIN, OP_SUM, OP_PROD, OP_LAND, OP_LOR, OP_LXOR, OP_BAND, OP_BOR, OP_BXOR, OP_MAXLOC, OP_MINLOC };

struct type_entry {
    MPI_Datatype type;
    enum type_class cls;
};

/* The order is part of the signature of allreduce problems (type_id); append only. */
static struct type_entry types[64];
static int ntypes;

static void add_type(MPI_Datatype t, enum type_class c)
{
    if (t == MPI_DATATYPE_NULL) return;
    for (int i = 0; i < ntypes; i++)
        if (types[i].type == t) return; /* aliases such as MPI_LONG_LONG */
    types[ntypes].type = t;
    types[ntypes].cls = c;
    ntypes++;
}

static void init_types(void)
{
    if (ntypes) return;
    add_type(MPI_INT, C_INTEGER);
    add_type(MPI_LONG, C_INTEGER);
    add_type(MPI_SHORT, C_INTEGER);
    add_type(MPI_UNSIGNED_SHORT, C_INTEGER);
    add_type(MPI_UNSIGNED, C_INTEGER);
    add_type(MPI_UNSIGNED_LONG, C_INTEGER);
    add_type(MPI_LONG_LONG_INT, C_INTEGER);
    add_type(MPI_UNSIGNED_LONG_LONG, C_INTEGER);
    add_type(MPI_SIGNED_CHAR, C_INTEGER);
    add_type(MPI_UNSIGNED_CHAR, C_INTEGER);
    add_type(MPI_INT8_T, C_INTEGER);
    add_type(MPI_INT16_T, C_INTEGER);
    add_type(MPI_INT32_T, C_INTEGER);
    add_type(MPI_INT64_T, C_INTEGER);
    add_type(MPI_UINT8_T, C_INTEGER);
    add_type(MPI_UINT16_T, C_INTEGER);
    add_type(MPI_UINT32_T, C_INTEGER);
    add_type(MPI_UINT64_T, C_INTEGER);
    add_type(MPI_AINT, C_INTEGER);
    add_type(MPI_OFFSET, C_INTEGER);
    add_type(MPI_COUNT, C_INTEGER);
    add_type(MPI_INTEGER, F_INTEGER);
    add_type(MPI_FLOAT, FLOATING);
    add_type(MPI_DOUBLE, FLOATING);
    add_type(MPI_LONG_DOUBLE, FLOATING);
    add_type(MPI_REAL, FLOATING);
    add_type(MPI_DOUBLE_PRECISION, FLOATING);
    add_type(MPI_C_BOOL, LOGICAL);
    add_type(MPI_LOGICAL, LOGICAL);
    add_type(MPI_C_FLOAT_COMPLEX, COMPLEX);
    add_type(MPI_C_DOUBLE_COMPLEX, COMPLEX);
    add_type(MPI_C_LONG_DOUBLE_COMPLEX, COMPLEX);
    add_type(MPI_COMPLEX, COMPLEX);
    add_type(MPI_DOUBLE_COMPLEX, COMPLEX);
    add_type(MPI_BYTE, BYTE);
    add_type(MPI_FLOAT_INT, PAIR);
    add_type(MPI_DOUBLE_INT, PAIR);
    add_type(MPI_LONG_INT, PAIR);
    add_type(MPI_2INT, PAIR);
    add_type(MPI_SHORT_INT, PAIR);
    add_type(MPI_LONG_DOUBLE_INT, PAIR);
    add_type(MPI_CHAR, CHARACTER);
    add_type(MPI_WCHAR, CHARACTER);
    add_type(MPI_PACKED, CHARACTER); /* MPI's byte ops are on MPI_BYTE only (MPICH refuses MPI_PACKED) */
}

int pc_predefined_type_id(MPI_Datatype type)
{
    init_types();
    for (int i = 0; i < ntypes; i++)
        if (types[i].type == type) return i;
    return -1;
}

static const char *const op_names[] = {"MPI_MAX",  "MPI_MIN", "MPI_SUM",  "MPI_PROD", "MPI_LAND",   "MPI_LOR",
                                       "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC"};

int pc_predefined_op_id(MPI_Op op)
{
    const MPI_Op ops[] = {MPI_MAX,  MPI_MIN,  MPI_SUM, MPI_PROD, MPI_LAND,   MPI_LOR,
                          MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC};
    for (int i = 0; i < (int)(sizeof ops / sizeof ops[0]); i++)
        if (ops[i] == op) return i;
    return -1;
}

static bool allowed(enum op_kind op, enum type_class c)
{
    switch (op) {
    case OP_MAX:
    case OP_MIN: return c == C_INTEGER || c == F_INTEGER || c == FLOATING;
    case OP_SUM:
    case OP_PROD: return c == C_INTEGER || c == F_INTEGER || c == FLOATING || c == COMPLEX;
    case OP_LAND:
    case OP_LOR:
    case OP_LXOR: return c == C_INTEGER || c == LOGICAL;
    case OP_BAND:
    case OP_BOR:
    case OP_BXOR: return c == C_INTEGER || c == F_INTEGER || c == BYTE;
    case OP_MAXLOC:
    case OP_MINLOC: return c == PAIR;
    }
    return false;
}

/* ---- plancoll's definition of the predefined ops (include/plancoll.h, "Predefined reductions") ----
 * Every algorithm applies these loops and nothing else to predefined (op, datatype) pairs, so the answer never
 * depends on the reduction tree: every op is commutative, and all but floating SUM and PROD associative, on every
 * bit pattern. Integers wrap in unsigned arithmetic (no signed-overflow UB) and compare with their own signedness.
 * Floating MAX and MIN are IEEE 754-2019 maximum and minimum: -0 < +0, and a NaN operand gives the default NaN
 * (positive, quiet, no payload), whichever NaN it was; a naive (a > b ? a : b) is neither commutative with a NaN
 * nor with -0 against +0, so two trees would give two answers. MAXLOC and MINLOC order values the same way and
 * keep the lowest index among equal values. Complex PROD is the product of the type's language.
 *
 * Loop forms: inout[i] = in[i] op inout[i]; out[i] = a[i] op b[i] (suffix _3); the same stored in two buffers at
 * once (suffix _3d: a result that is also needed elsewhere costs no second pass). Each is a plain counted loop
 * with no per-element branch on the op. Its parameters are restrict (GCC ignores restrict on block-scope pointers
 * and would need a run-time overlap check), and meson.build gives this file GCC's 'dynamic' vectoriser cost model
 * (-O2's 'very-cheap' leaves loops of unknown trip count scalar) and -fno-trapping-math (the MAX/MIN selects are
 * if-converted only when comparisons may not trap; no result bit changes); tests/unit/check_vectorized.py checks at
 * the build's -O level that the main loops come out vectorised. */
#define PC_MAXI(a, b) ((a) > (b) ? (a) : (b))
#define PC_MINI(a, b) ((a) < (b) ? (a) : (b))
#define DEFINE_LOOP(name, T, expr)                                                               \
    static void name(const void *restrict in_, void *restrict inout_, int n)                     \
    {                                                                                            \
        const T *a = in_;                                                                        \
        T *b = inout_;                                                                           \
        for (int i = 0; i < n; i++) b[i] = expr;                                                 \
    }                                                                                            \
    static void name##_3(const void *restrict a_, const void *restrict b_, void *restrict out_, int n) \
    {                                                                                            \
        const T *a = a_;                                                                         \
        const T *b = b_;                                                                         \
        T *o = out_;                                                                             \
        for (int i = 0; i < n; i++) o[i] = expr;                                                 \
    }                                                                                            \
    static void name##_3d(const void *restrict a_, const void *restrict b_, void *restrict out_,  \
                          void *restrict dup_, int n)                                            \
    {                                                                                            \
        const T *a = a_;                                                                         \
        const T *b = b_;                                                                         \
        T *o = out_, *d = dup_;                                                                  \
        for (int i = 0; i < n; i++) d[i] = o[i] = expr;                                          \
    }
/* W is the type arithmetic is done in: uint64_t for integers, so narrow types never promote to signed int. */
#define DEFINE_ARITH(suffix, T, W)                                                               \
    DEFINE_LOOP(sum_##suffix, T, (T)((W)a[i] + (W)b[i]))                                         \
    DEFINE_LOOP(prod_##suffix, T, (T)((W)a[i] * (W)b[i]))                                        \
    DEFINE_LOOP(max_##suffix, T, PC_MAXI(a[i], b[i]))                                            \
    DEFINE_LOOP(min_##suffix, T, PC_MINI(a[i], b[i]))
/* Logical ops without && and ||: a short-circuit read of b[i] cannot be vectorised into out = a op b. */
#define DEFINE_BITS(suffix, T)                                                                   \
    DEFINE_LOOP(band_##suffix, T, a[i] & b[i])                                                   \
    DEFINE_LOOP(bor_##suffix, T, a[i] | b[i])                                                    \
    DEFINE_LOOP(bxor_##suffix, T, a[i] ^ b[i])                                                   \
    DEFINE_LOOP(land_##suffix, T, (T)((a[i] != 0) & (b[i] != 0)))                                \
    DEFINE_LOOP(lor_##suffix, T, (T)((a[i] != 0) | (b[i] != 0)))                                 \
    DEFINE_LOOP(lxor_##suffix, T, (T)(!a[i] != !b[i]))

#define DEFINE_ORDER(suffix, T)                                                                  \
    DEFINE_LOOP(max_##suffix, T, PC_MAXI(a[i], b[i]))                                            \
    DEFINE_LOOP(min_##suffix, T, PC_MINI(a[i], b[i]))
DEFINE_ORDER(i8, int8_t)
DEFINE_ARITH(u8, uint8_t, uint64_t)
DEFINE_ORDER(i16, int16_t)
DEFINE_ARITH(u16, uint16_t, uint64_t)
DEFINE_ORDER(i32, int32_t)
DEFINE_ARITH(u32, uint32_t, uint64_t)
DEFINE_ORDER(i64, int64_t)
DEFINE_ARITH(u64, uint64_t, uint64_t)
DEFINE_BITS(i8, int8_t)
DEFINE_BITS(u8, uint8_t)
DEFINE_BITS(i16, int16_t)
DEFINE_BITS(u16, uint16_t)
DEFINE_BITS(i32, int32_t)
DEFINE_BITS(u32, uint32_t)
DEFINE_BITS(i64, int64_t)
DEFINE_BITS(u64, uint64_t)

/* Floating MAX and MIN. Every operand is computed unconditionally (no conditional arithmetic, so the selects
 * vectorise): x + y is the larger of two zeros (+0 unless both are -0), -(-x - y) the smaller (-0 unless both are
 * +0); any NaN gives NANV. */
#define DEFINE_FLOAT_ORDER(suffix, T, NANV)                                                      \
    static inline T fmax_##suffix(T x, T y)                                                      \
    {                                                                                            \
        T zeros = x + y, r = x > y ? x : y;                                                      \
        r = (x == 0) & (y == 0) ? zeros : r;                                                     \
        return (x != x) | (y != y) ? NANV : r;                                                   \
    }                                                                                            \
    static inline T fmin_##suffix(T x, T y)                                                      \
    {                                                                                            \
        T zeros = -(-x - y), r = x < y ? x : y;                                                  \
        r = (x == 0) & (y == 0) ? zeros : r;                                                     \
        return (x != x) | (y != y) ? NANV : r;                                                   \
    }
#define DEFINE_FLOAT(suffix, T, NANV)                                                            \
    DEFINE_FLOAT_ORDER(suffix, T, NANV)                                                          \
    DEFINE_LOOP(sum_##suffix, T, a[i] + b[i])                                                    \
    DEFINE_LOOP(prod_##suffix, T, a[i] * b[i])                                                   \
    DEFINE_LOOP(max_##suffix, T, fmax_##suffix(a[i], b[i]))                                      \
    DEFINE_LOOP(min_##suffix, T, fmin_##suffix(a[i], b[i]))
DEFINE_FLOAT(f32, float, __builtin_nanf(""))
DEFINE_FLOAT(f64, double, __builtin_nan(""))
DEFINE_FLOAT(f80, long double, __builtin_nanl("")) /* long double: x87's 80 bits here, scalar */

/* Complex SUM by parts, on (re, im) pairs of T. Complex PROD is the product of the type's language, as MPI's own
 * is: for the C types C's operator (C11 Annex G: re = ar br - ai bi, im = ar bi + ai br, and when both come out NaN
 * the compiler's run-time routine recovers infinite results: (0 + 1i)(inf + inf i) is -inf + inf i; the routine
 * call keeps those loops scalar), for Fortran's COMPLEX and DOUBLE COMPLEX Fortran's (the same two formulas without
 * the recovery, as gfortran's default -fcx-fortran-rules). Every product is rounded on its own: meson.build turns
 * contraction into FMAs off. */
#define DEFINE_COMPLEX_LOOP(name, T, re, im)                                                     \
    static void name(const void *restrict in_, void *restrict inout_, int n)                     \
    {                                                                                            \
        const T *a = in_;                                                                        \
        T *b = inout_;                                                                           \
        for (int i = 0; i < n; i++) {                                                            \
            T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];                \
            b[2 * i] = re;                                                                       \
            b[2 * i + 1] = im;                                                                   \
        }                                                                                        \
    }                                                                                            \
    static void name##_3(const void *restrict a_, const void *restrict b_, void *restrict out_, int n) \
    {                                                                                            \
        const T *a = a_;                                                                         \
        const T *b = b_;                                                                         \
        T *o = out_;                                                                             \
        for (int i = 0; i < n; i++) {                                                            \
            T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];                \
            o[2 * i] = re;                                                                       \
            o[2 * i + 1] = im;                                                                   \
        }                                                                                        \
    }                                                                                            \
    static void name##_3d(const void *restrict a_, const void *restrict b_, void *restrict out_,  \
                          void *restrict dup_, int n)                                            \
    {                                                                                            \
        const T *a = a_;                                                                         \
        const T *b = b_;                                                                         \
        T *o = out_, *d = dup_;                                                                  \
        for (int i = 0; i < n; i++) {                                                            \
            T ar = a[2 * i], ai = a[2 * i + 1], br = b[2 * i], bi = b[2 * i + 1];                \
            d[2 * i] = o[2 * i] = re;                                                            \
            d[2 * i + 1] = o[2 * i + 1] = im;                                                    \
        }                                                                                        \
    }
#define DEFINE_COMPLEX(suffix, T)                                                                \
    DEFINE_COMPLEX_LOOP(sum_##suffix, T, ar + br, ai + bi)                                       \
    DEFINE_LOOP(prod_##suffix, _Complex T, a[i] * b[i])
DEFINE_COMPLEX(c32, float)
DEFINE_COMPLEX(c64, double)
DEFINE_COMPLEX(c80, long double)
DEFINE_COMPLEX_LOOP(prod_fc32, float, ar * br - ai * bi, ar * bi + ai * br)
DEFINE_COMPLEX_LOOP(prod_fc64, double, ar * br - ai * bi, ar * bi + ai * br)

/* MAXLOC and MINLOC on (value, int index) structs, the layouts of MPI's pair types. Values are ordered by
 * order_<suffix> (> 0: x ranks above y for MAX; floating: NaN above everything, all NaNs one value, -0 below +0);
 * MIN reverses it. Equal values keep the lower index. Only the two fields are written: the padding of a pair is a
 * gap of the MPI type, which a receive buffer keeps. */
#define DEFINE_PAIR_TYPE(suffix, V) typedef struct { V v; int loc; } pair_##suffix;
DEFINE_PAIR_TYPE(f32, float)
DEFINE_PAIR_TYPE(f64, double)
DEFINE_PAIR_TYPE(f80, long double)
DEFINE_PAIR_TYPE(long, long)
DEFINE_PAIR_TYPE(int, int)
DEFINE_PAIR_TYPE(short, short)
#define INT_ORDER(x, y, for_max) (((x) > (y)) - ((x) < (y)))
/* NaN ranks top for MAX and bottom for MIN, so either way a NaN value wins: the result is the default NaN. */
#define FLOAT_ORDER(x, y, for_max)                                                               \
    (isnan(x) || isnan(y) ? ((int)(isnan(x) != 0) - (int)(isnan(y) != 0)) * ((for_max) ? 1 : -1)  \
                          : ((x) > (y)) - ((x) < (y)) + ((x) == (y)) * ((signbit(y) != 0) - (signbit(x) != 0)))
#define DEFINE_LOC_ONE(name, suffix, ORDER, for_max, NANV)                                       \
    static inline void name##_one(const pair_##suffix *x, const pair_##suffix *y, pair_##suffix *o) \
    {                                                                                            \
        int c = ORDER(x->v, y->v, for_max) * ((for_max) ? 1 : -1);                               \
        const pair_##suffix *w = c >= 0 ? x : y;                                                 \
        int loc = c == 0 ? PC_MINI(x->loc, y->loc) : w->loc;                                     \
        o->v = NANV != NANV && w->v != w->v ? NANV : w->v;                                       \
        o->loc = loc;                                                                            \
    }                                                                                            \
    static void name(const void *restrict in_, void *restrict inout_, int n)                     \
    {                                                                                            \
        const pair_##suffix *a = in_;                                                            \
        pair_##suffix *b = inout_;                                                               \
        for (int i = 0; i < n; i++) name##_one(&a[i], &b[i], &b[i]);                             \
    }                                                                                            \
    static void name##_3(const void *restrict a_, const void *restrict b_, void *restrict out_, int n) \
    {                                                                                            \
        const pair_##suffix *a = a_, *b = b_;                                                    \
        pair_##suffix *o = out_;                                                                 \
        for (int i = 0; i < n; i++) name##_one(&a[i], &b[i], &o[i]);                             \
    }
#define DEFINE_LOC(suffix, ORDER, NANV)                                                          \
    DEFINE_LOC_ONE(maxloc_##suffix, suffix, ORDER, 1, NANV)                                      \
    DEFINE_LOC_ONE(minloc_##suffix, suffix, ORDER, 0, NANV)
/* For integer values NANV is 0 and "NANV != NANV" is false: the value is copied. */
DEFINE_LOC(f32, FLOAT_ORDER, __builtin_nanf(""))
DEFINE_LOC(f64, FLOAT_ORDER, __builtin_nan(""))
DEFINE_LOC(f80, FLOAT_ORDER, __builtin_nanl(""))
DEFINE_LOC(long, INT_ORDER, 0)
DEFINE_LOC(int, INT_ORDER, 0)
DEFINE_LOC(short, INT_ORDER, 0)

/* NaN settling for results MPI computed (plan.h): one vectorised pass. (A read-only search first would leave the
 * lines clean when there is no NaN, but GCC 12 vectorises an any-NaN flag only as an in-order sum, slower than
 * this pass.) */
#define DEFINE_SETTLE(suffix, T, NANV, PARTS)                                                    \
    static void settle_##suffix(void *buf, int count)                                            \
    {                                                                                            \
        T *x = buf;                                                                              \
        const int n = count * (PARTS);                                                           \
        for (int i = 0; i < n; i++) x[i] = x[i] != x[i] ? NANV : x[i];                           \
    }
DEFINE_SETTLE(f32, float, __builtin_nanf(""), 1)
DEFINE_SETTLE(f64, double, __builtin_nan(""), 1)
DEFINE_SETTLE(f80, long double, __builtin_nanl(""), 1)
DEFINE_SETTLE(c32, float, __builtin_nanf(""), 2)
DEFINE_SETTLE(c64, double, __builtin_nan(""), 2)
DEFINE_SETTLE(c80, long double, __builtin_nanl(""), 2)

struct loop_set {
    pc_reduce_fn f[12]; /* indexed by enum op_kind */
    pc_reduce3_fn f3[12];
    pc_reduce3d_fn f3d[12]; /* contiguous types only */
    pc_reduce3_fn f3s[12];  /* streaming kernels of their own (SUM); NULL: blocked over f3 */
    pc_settle_fn settle;    /* floating types: their NaN settling for SUM and PROD */
};
#define BOTH(op, name) .f[op] = name, .f3[op] = name##_3, .f3d[op] = name##_3d
#define ARITH(s) {BOTH(OP_SUM, sum_##s), .f3s[OP_SUM] = pc_stream_sum3_##s, BOTH(OP_PROD, prod_##s), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s)}
#define BITS(s)                                                                                  \
    BOTH(OP_BAND, band_##s), BOTH(OP_BOR, bor_##s), BOTH(OP_BXOR, bxor_##s), BOTH(OP_LAND, land_##s), \
        BOTH(OP_LOR, lor_##s), BOTH(OP_LXOR, lxor_##s)
#define INTS(s) {BOTH(OP_SUM, sum_##s), .f3s[OP_SUM] = pc_stream_sum3_##s, BOTH(OP_PROD, prod_##s), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s), BITS(s)}

/* Signed SUM and PROD wrap in unsigned arithmetic: the same bits MPI gives, without C's signed-overflow UB. */
#define SIGNED_INTS(s, u) {BOTH(OP_SUM, sum_##u), .f3s[OP_SUM] = pc_stream_sum3_##u, BOTH(OP_PROD, prod_##u), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s), BITS(s)}
static const struct loop_set int_loops[2][4] = {
    {SIGNED_INTS(i8, u8), SIGNED_INTS(i16, u16), SIGNED_INTS(i32, u32), SIGNED_INTS(i64, u64)},
    {INTS(u8), INTS(u16), INTS(u32), INTS(u64)},
};
#define FLOATS(s)                                                                                \
    {BOTH(OP_SUM, sum_##s), BOTH(OP_PROD, prod_##s), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s), .settle = settle_##s}
static const struct loop_set f32_loops = {BOTH(OP_SUM, sum_f32), .f3s[OP_SUM] = pc_stream_sum3_f32, BOTH(OP_PROD, prod_f32),
                                          BOTH(OP_MAX, max_f32), BOTH(OP_MIN, min_f32), .settle = settle_f32},
                             f64_loops = {BOTH(OP_SUM, sum_f64), .f3s[OP_SUM] = pc_stream_sum3_f64, BOTH(OP_PROD, prod_f64),
                                          BOTH(OP_MAX, max_f64), BOTH(OP_MIN, min_f64), .settle = settle_f64},
                             f80_loops = FLOATS(f80);
#define COMPLEX_SET(s) {BOTH(OP_SUM, sum_##s), .f3s[OP_SUM] = pc_stream_sum3_##s, BOTH(OP_PROD, prod_##s), .settle = settle_##s}
static const struct loop_set c32_loops = COMPLEX_SET(c32), c64_loops = COMPLEX_SET(c64),
                             c80_loops = {BOTH(OP_SUM, sum_c80), BOTH(OP_PROD, prod_c80), .settle = settle_c80};
static const struct loop_set fc32_loops = {BOTH(OP_SUM, sum_c32), .f3s[OP_SUM] = pc_stream_sum3_c32, BOTH(OP_PROD, prod_fc32),
                                           .settle = settle_c32},
                             fc64_loops = {BOTH(OP_SUM, sum_c64), .f3s[OP_SUM] = pc_stream_sum3_c64, BOTH(OP_PROD, prod_fc64),
                                           .settle = settle_c64};
#define LOC_SET(s)                                                                               \
    {.f[OP_MAXLOC] = maxloc_##s, .f3[OP_MAXLOC] = maxloc_##s##_3, .f[OP_MINLOC] = minloc_##s,   \
     .f3[OP_MINLOC] = minloc_##s##_3}
static const struct loop_set loc_f32 = LOC_SET(f32), loc_f64 = LOC_SET(f64), loc_f80 = LOC_SET(f80),
                             loc_long = LOC_SET(long), loc_int = LOC_SET(int), loc_short = LOC_SET(short);

static int log2_size(int size)
{
    switch (size) {
    case 1: return 0;
    case 2: return 1;
    case 4: return 2;
    case 8: return 3;
    default: return -1;
    }
}

static bool is_unsigned(MPI_Datatype t)
{
    return t == MPI_UNSIGNED_SHORT || t == MPI_UNSIGNED || t == MPI_UNSIGNED_LONG || t == MPI_UNSIGNED_LONG_LONG ||
           t == MPI_UNSIGNED_CHAR || t == MPI_UINT8_T || t == MPI_UINT16_T || t == MPI_UINT32_T || t == MPI_UINT64_T;
}

/* The loops of a predefined type, by its class and its size in this MPI (Fortran types take the C type of their
 * size; MPI_AINT, MPI_OFFSET and MPI_COUNT are signed integers); NULL for a size no loop fits. */
static const struct loop_set *loops_of(MPI_Datatype type, enum type_class cls, int size, MPI_Aint extent)
{
    switch (cls) {
    case C_INTEGER:
    case F_INTEGER:
    case LOGICAL:
    case BYTE: {
        int l = log2_size(size);
        if (l < 0 || extent != size) return NULL;
        return &int_loops[cls == LOGICAL || cls == BYTE || is_unsigned(type) ? 1 : 0][l];
    }
    case FLOATING:
        if (extent != size) return NULL;
        if (type == MPI_LONG_DOUBLE && size == (int)sizeof(long double) && size > 8) return &f80_loops;
        return size == 4 ? &f32_loops : size == 8 ? &f64_loops : NULL;
    case COMPLEX:
        if (extent != size) return NULL;
        if (type == MPI_C_LONG_DOUBLE_COMPLEX && size == 2 * (int)sizeof(long double) && size > 16) return &c80_loops;
        if (type == MPI_COMPLEX || type == MPI_DOUBLE_COMPLEX) /* Fortran's: REAL and DOUBLE PRECISION parts */
            return size == 8 ? &fc32_loops : size == 16 ? &fc64_loops : NULL;
        return size == 8 ? &c32_loops : size == 16 ? &c64_loops : NULL;
    case PAIR:
#define PAIR_CASE(mpi, s)                                                                        \
    if (type == mpi) return extent == (MPI_Aint)sizeof(pair_##s) ? &loc_##s : NULL;
        PAIR_CASE(MPI_FLOAT_INT, f32)
        PAIR_CASE(MPI_DOUBLE_INT, f64)
        PAIR_CASE(MPI_LONG_DOUBLE_INT, f80)
        PAIR_CASE(MPI_LONG_INT, long)
        PAIR_CASE(MPI_2INT, int)
        PAIR_CASE(MPI_SHORT_INT, short)
#undef PAIR_CASE
        return NULL;
    default: return NULL;
    }
}

int pc_reduction_init(struct pc_reduction *r, MPI_Op op, MPI_Datatype type, bool *commutative)
{
    memset(r, 0, sizeof *r);
    r->op = op;
    r->type = type;
    if (op == MPI_OP_NULL) return pc_error(PLANCOLL_ERR_OP, "the op is MPI_OP_NULL");
    MPI_Aint lb;
    if (type != MPI_DATATYPE_NULL) {
        PC_MPI_CHECK(MPI_Type_get_extent(type, &lb, &r->extent));
        PC_MPI_CHECK(MPI_Type_get_true_extent(type, &r->true_lb, &r->true_extent));
    }
    int op_id = pc_predefined_op_id(op);
    if (op_id < 0) {
        if (op == MPI_REPLACE || op == MPI_NO_OP)
            return pc_error(PLANCOLL_ERR_OP, "MPI_REPLACE and MPI_NO_OP are for one-sided accumulates, not allreduce");
        int commute = 0;
        PC_MPI_CHECK(MPI_Op_commutative(op, &commute));
        *commutative = commute != 0;
        return PLANCOLL_SUCCESS; /* a user op: any committed type, applied with MPI_Reduce_local */
    }
    *commutative = true;
    int type_id = pc_predefined_type_id(type);
    if (type_id < 0)
        return pc_error(PLANCOLL_ERR_DATATYPE,
                        "%s needs a predefined datatype; derived datatypes take user-defined ops", op_names[op_id]);
    if (!allowed((enum op_kind)op_id, types[type_id].cls)) {
        char name[MPI_MAX_OBJECT_NAME] = "";
        int len = 0;
        MPI_Type_get_name(type, name, &len);
        return pc_error(PLANCOLL_ERR_OP, "MPI does not allow %s on %s", op_names[op_id], name);
    }
    int size = 0;
    MPI_Type_size(type, &size);
    const struct loop_set *set = r->true_lb == 0 ? loops_of(type, types[type_id].cls, size, r->extent) : NULL;
    if (set && set->f[op_id]) {
        r->fast = set->f[op_id];
        r->fast3 = set->f3[op_id];
        r->fast3d = set->f3d[op_id];
        r->fast3_stream = set->f3s[op_id];
        if (op_id == OP_SUM || op_id == OP_PROD) r->settle_nans = set->settle;
    }
    return PLANCOLL_SUCCESS;
}

/* The bytes a reduction of count elements writes, as node-local work under SMPI (shm/sim_work.h) */
static size_t work_bytes(const struct pc_reduction *r, int count)
{
    return (size_t)count * (size_t)(r->extent < 0 ? -r->extent : r->extent);
}

int pc_reduce(const struct pc_reduction *r, const void *in, void *inout, int count)
{
    if (count <= 0) return PLANCOLL_SUCCESS;
    pc_sim_work(PC_SIM_REDUCE, work_bytes(r, count));
    if (r->fast) {
        r->fast(in, inout, count);
        return PLANCOLL_SUCCESS;
    }
    PC_MPI_CHECK(MPI_Reduce_local(in, inout, count, r->type, r->op));
    return PLANCOLL_SUCCESS;
}

/* For calibration: walk the predefined tables. */
int pc_predefined_type_count(void)
{
    init_types();
    return ntypes;
}

MPI_Datatype pc_predefined_type(int id)
{
    init_types();
    return id >= 0 && id < ntypes ? types[id].type : MPI_DATATYPE_NULL;
}

MPI_Op pc_predefined_op(int id)
{
    const MPI_Op ops[] = {MPI_MAX,  MPI_MIN,  MPI_SUM, MPI_PROD, MPI_LAND,   MPI_LOR,
                          MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC};
    return id >= 0 && id < (int)(sizeof ops / sizeof ops[0]) ? ops[id] : MPI_OP_NULL;
}

int pc_reduce3(const struct pc_reduction *r, const void *a, const void *b, void *out, int count)
{
    if (count <= 0) return PLANCOLL_SUCCESS;
    pc_sim_work(PC_SIM_REDUCE, work_bytes(r, count));
    if (r->fast3) {
        r->fast3(a, b, out, count);
        return PLANCOLL_SUCCESS;
    }
    size_t span = (size_t)r->true_extent + (size_t)(count - 1) * (size_t)r->extent;
    memcpy((char *)out + r->true_lb, (const char *)b + r->true_lb, span);
    PC_MPI_CHECK(MPI_Reduce_local(a, out, count, r->type, r->op));
    return PLANCOLL_SUCCESS;
}

int pc_reduce3_stream(const struct pc_reduction *r, const void *a, const void *b, void *out, int count)
{
    if (count <= 0) return PLANCOLL_SUCCESS;
    if (r->fast3_stream) {
        pc_sim_work(PC_SIM_REDUCE, work_bytes(r, count));
        r->fast3_stream(a, b, out, count);
        return PLANCOLL_SUCCESS;
    }
    if (r->fast3 && r->extent > 0) {
        pc_sim_work(PC_SIM_REDUCE, work_bytes(r, count));
        pc_stream_reduce3_blocked(r->fast3, a, b, out, count, (size_t)r->extent);
        return PLANCOLL_SUCCESS;
    }
    return pc_reduce3(r, a, b, out, count);
}

int pc_reduce3_dup(const struct pc_reduction *r, const void *a, const void *b, void *out, void *dup, int count)
{
    if (count > 0 && r->fast3d) {
        pc_sim_work(PC_SIM_REDUCE, work_bytes(r, count)); /* the reduction, then its copy into dup */
        pc_sim_work(PC_SIM_COPY, work_bytes(r, count));
        r->fast3d(a, b, out, dup, count);
        return PLANCOLL_SUCCESS;
    }
    return pc_error(PLANCOLL_ERR_ARGUMENT, "pc_reduce3_dup without a fast loop"); /* callers check fast3d */
}

/* ---- does MPI's own op give plancoll's answers? ----
 * allreduce.native, and the hierarchical algorithms with inter=mpi, hand the reduction to MPI, whose op is its
 * own: their results are plancoll's only where MPI's op agrees with the loops above. (MPICH 4.0.2, for one,
 * compares every unsigned type as signed under MAX and MIN, and its floating MAX, MIN, MAXLOC and MINLOC keep one
 * operand or the other by position when a NaN or a signed zero is involved, so different ranks of one MPI_Allreduce
 * can even end with different bits.) The question is answered once per (op, datatype) in a process, by applying
 * both to every ordered pair of a table of values on which implementations differ and comparing the results bit for
 * bit on the bytes that carry data (floating SUM and PROD: any NaN matches any NaN, their NaN being unspecified).
 * MPI_Reduce_local stands for the op MPI's collectives apply. */
enum { PROBE_MAX_VALUES = 40 };
enum probe_fmt { PF_INT, PF_F32, PF_F64, PF_F80 };

/* Where the data of one element lies: one value (integer or floating), two parts of a complex, or a pair's value
 * and index. */
struct probe_layout {
    int nparts;
    size_t off[2];
    int bytes[2];
    enum probe_fmt fmt[2];
};

static int float_data_bytes(enum probe_fmt f)
{
    if (f == PF_F32) return 4;
    if (f == PF_F64) return 8;
    return LDBL_MANT_DIG == 64 ? 10 : (int)sizeof(long double); /* x87: 6 bytes of padding carry nothing */
}

static bool probe_is_nan(enum probe_fmt f, const unsigned char *p)
{
    if (f == PF_F32) {
        float x;
        memcpy(&x, p, sizeof x);
        return isnan(x);
    }
    if (f == PF_F64) {
        double x;
        memcpy(&x, p, sizeof x);
        return isnan(x);
    }
    if (f == PF_F80) {
        long double x;
        memcpy(&x, p, sizeof x);
        return isnan(x);
    }
    return false;
}

/* The n-th value of the floating table (n < 15), stored at p: zeros of both signs, denormals, extremes,
 * infinities, NaNs quiet and signalling, negative, with payloads. */
#define FLOAT_PROBE_VALUES(T, TRUE_MIN, MAX, NAN_, NANS_)                                        \
    {(T)0, -(T)0, 1, -1, (T)2.5, TRUE_MIN, -TRUE_MIN, MAX, -MAX, (T)INFINITY, -(T)INFINITY, NAN_(""), -NAN_("5"), \
     NAN_("0x123"), NANS_("0x21")}
enum { FLOAT_PROBE_COUNT = 15 };
static void put_probe_float(enum probe_fmt f, int n, unsigned char *p)
{
    static const float f32[] = FLOAT_PROBE_VALUES(float, FLT_TRUE_MIN, FLT_MAX, __builtin_nanf, __builtin_nansf);
    static const double f64[] = FLOAT_PROBE_VALUES(double, DBL_TRUE_MIN, DBL_MAX, __builtin_nan, __builtin_nans);
    static const long double f80[] =
        FLOAT_PROBE_VALUES(long double, LDBL_TRUE_MIN, LDBL_MAX, __builtin_nanl, __builtin_nansl);
    if (f == PF_F32) memcpy(p, &f32[n], sizeof f32[n]);
    else if (f == PF_F64) memcpy(p, &f64[n], sizeof f64[n]);
    else memcpy(p, &f80[n], sizeof f80[n]);
}

/* Integer bit patterns of size bytes: 0, 1, 5, the signed extremes, -1 (the unsigned maximum), values above
 * 2^(bits-1). */
static uint64_t probe_int(int n, int size)
{
    const uint64_t all = size >= 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * size)) - 1, top = (all >> 1) + 1;
    const uint64_t pattern[] = {0, 1, 5, top - 1, top, top + 1, all, all & ~(all >> 4), UINT64_C(0x5555555555555555) & all};
    return pattern[n];
}
enum { INT_PROBE_COUNT = 9 };

static void put_int(unsigned char *p, int size, uint64_t v)
{
    switch (size) {
    case 1: *p = (uint8_t)v; break;
    case 2: memcpy(p, &(uint16_t){(uint16_t)v}, 2); break;
    case 4: memcpy(p, &(uint32_t){(uint32_t)v}, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* Fills vals (stride ext) with the table of this (class, loops); returns how many, and the data layout. */
static int probe_values(enum type_class cls, const struct loop_set *set, int size, MPI_Aint ext, unsigned char *vals,
                        struct probe_layout *lay)
{
    int k = 0;
    memset(lay, 0, sizeof *lay);
    lay->nparts = 1;
    if (cls == C_INTEGER || cls == F_INTEGER || cls == BYTE || cls == LOGICAL) {
        lay->bytes[0] = size;
        int count = cls == LOGICAL ? 2 : INT_PROBE_COUNT; /* a logical's values are false (0) and true (1) */
        for (; k < count; k++) put_int(vals + (size_t)k * (size_t)ext, size, probe_int(k, size));
        return k;
    }
    if (cls == FLOATING || cls == COMPLEX) {
        enum probe_fmt f = set == &f32_loops || set == &c32_loops || set == &fc32_loops   ? PF_F32
                           : set == &f64_loops || set == &c64_loops || set == &fc64_loops ? PF_F64
                                                                                          : PF_F80;
        int part = cls == COMPLEX ? size / 2 : size;
        lay->fmt[0] = lay->fmt[1] = f;
        lay->bytes[0] = lay->bytes[1] = float_data_bytes(f);
        if (cls == FLOATING) {
            for (; k < FLOAT_PROBE_COUNT; k++) put_probe_float(f, k, vals + (size_t)k * (size_t)ext);
            return k;
        }
        lay->nparts = 2;
        lay->off[1] = (size_t)part;
        static const int parts[] = {0, 1, 2, 9, 11, 12}; /* +0, -0, 1, inf, NaN, -NaN: 36 complex values */
        for (int re = 0; re < 6; re++)
            for (int im = 0; im < 6; im++, k++) {
                put_probe_float(f, parts[re], vals + (size_t)k * (size_t)ext);
                put_probe_float(f, parts[im], vals + (size_t)k * (size_t)ext + part);
            }
        return k;
    }
    /* pairs: every value with index 0 and with index 3 (ties between equal values) */
    size_t loc_off;
    enum probe_fmt f = PF_INT;
    int vsize, nvalues;
    if (set == &loc_f32) f = PF_F32, loc_off = offsetof(pair_f32, loc), vsize = sizeof(float);
    else if (set == &loc_f64) f = PF_F64, loc_off = offsetof(pair_f64, loc), vsize = sizeof(double);
    else if (set == &loc_f80) f = PF_F80, loc_off = offsetof(pair_f80, loc), vsize = sizeof(long double);
    else if (set == &loc_long) loc_off = offsetof(pair_long, loc), vsize = sizeof(long);
    else if (set == &loc_int) loc_off = offsetof(pair_int, loc), vsize = sizeof(int);
    else loc_off = offsetof(pair_short, loc), vsize = sizeof(short);
    nvalues = f == PF_INT ? INT_PROBE_COUNT : FLOAT_PROBE_COUNT;
    lay->nparts = 2;
    lay->fmt[0] = f;
    lay->bytes[0] = f == PF_INT ? vsize : float_data_bytes(f);
    lay->off[1] = loc_off;
    lay->bytes[1] = sizeof(int);
    for (int v = 0; v < nvalues; v++)
        for (int loc = 0; loc <= 3; loc += 3, k++) {
            unsigned char *p = vals + (size_t)k * (size_t)ext;
            if (f == PF_INT) put_int(p, vsize, probe_int(v, vsize));
            else put_probe_float(f, v, p);
            memcpy(p + loc_off, &loc, sizeof loc);
        }
    return k;
}

static bool probe_same(const struct probe_layout *lay, const unsigned char *a, const unsigned char *b, bool nan_unspecified)
{
    for (int i = 0; i < lay->nparts; i++) {
        const unsigned char *x = a + lay->off[i], *y = b + lay->off[i];
        if (memcmp(x, y, (size_t)lay->bytes[i]) == 0) continue;
        if (nan_unspecified && probe_is_nan(lay->fmt[i], x) && probe_is_nan(lay->fmt[i], y)) continue;
        return false;
    }
    return true;
}

/* 1: MPI agrees, -1: it differs, 0: not asked yet. */
static signed char mpi_agreement[64][12];

int pc_reduction_mpi_differs(const struct pc_reduction *r, bool *differs)
{
    *differs = false;
    int op_id = pc_predefined_op_id(r->op), type_id = pc_predefined_type_id(r->type);
    /* a user op is the same function under MPI; a pair without a loop of plancoll's is MPI's op everywhere */
    if (op_id < 0 || type_id < 0 || !r->fast3) return PLANCOLL_SUCCESS;
    if (mpi_agreement[type_id][op_id]) {
        *differs = mpi_agreement[type_id][op_id] < 0;
        return PLANCOLL_SUCCESS;
    }
    enum type_class cls = types[type_id].cls;
    int size = 0;
    PC_MPI_CHECK(MPI_Type_size(r->type, &size));
    const struct loop_set *set = loops_of(r->type, cls, size, r->extent); /* the set r->fast3 came from */
    if (!set) return PLANCOLL_SUCCESS;
    const size_t ext = (size_t)r->extent;
    unsigned char *vals = calloc(PROBE_MAX_VALUES, ext);
    unsigned char *x = calloc(PROBE_MAX_VALUES * PROBE_MAX_VALUES, ext), *y = calloc(PROBE_MAX_VALUES * PROBE_MAX_VALUES, ext);
    unsigned char *mine = calloc(PROBE_MAX_VALUES * PROBE_MAX_VALUES, ext);
    int err = PLANCOLL_SUCCESS;
    if (!vals || !x || !y || !mine) {
        err = pc_error(PLANCOLL_ERR_NOMEM, "the comparison of MPI's op with plancoll's");
    } else {
        struct probe_layout lay;
        int k = probe_values(cls, set, size, r->extent, vals, &lay), n = k * k;
        for (int i = 0; i < k; i++)
            for (int j = 0; j < k; j++) {
                memcpy(x + (size_t)(i * k + j) * ext, vals + (size_t)i * ext, ext);
                memcpy(y + (size_t)(i * k + j) * ext, vals + (size_t)j * ext, ext);
            }
        r->fast3(x, y, mine, n);
        int rc = MPI_Reduce_local(x, y, n, r->type, r->op); /* y = x op y, x first: the same order */
        if (rc != MPI_SUCCESS) {
            err = pc_mpi_error(rc, "MPI_Reduce_local (comparing MPI's op with plancoll's)");
        } else {
            bool nan_unspecified = (cls == FLOATING || cls == COMPLEX) && (op_id == OP_SUM || op_id == OP_PROD);
            bool same = true;
            for (int e = 0; e < n && same; e++) same = probe_same(&lay, mine + (size_t)e * ext, y + (size_t)e * ext, nan_unspecified);
            mpi_agreement[type_id][op_id] = same ? 1 : -1;
            *differs = !same;
        }
    }
    free(vals);
    free(x);
    free(y);
    free(mine);
    return err;
}
