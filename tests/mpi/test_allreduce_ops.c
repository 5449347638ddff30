/* One answer whatever the planner picks: every predefined (op, datatype) pair that MPI allows (and plancoll
 * accepts) runs under every registered allreduce algorithm forced in turn, under MPI's own collective reached
 * through the hierarchical algorithms (inter=mpi, on emulated nodes), and under the planner's own choice, on data
 * full of the values where implementations differ: NaNs (quiet, negative, with payloads, signalling), signed
 * zeros, infinities, denormals, unsigned values at and above 2^(bits-1), signed extremes, and MAXLOC/MINLOC ties.
 * Checks, per pair:
 *   (a) every rank holds the same bits (and every rank got the same return code from planning);
 *   (b) every algorithm that can run the pair gives the same bits as every other (floating SUM and PROD: on the
 *       elements whose exact result is representable whatever the order, i.e. all but the rounding group);
 *   (c) the result is plancoll's definition (include/plancoll.h), computed here independently: integer, logical and
 *       bitwise ops exactly (wrapping modulo 2^bits, unsigned types compared as unsigned), MAX/MIN as IEEE 754-2019
 *       maximum/minimum (-0 < +0, any NaN operand gives the default quiet NaN), MAXLOC/MINLOC by that order with
 *       the lowest index among equal values, floating SUM/PROD exactly where the data make it exact (NaN: any NaN)
 *       and within (P-1) u sum|x| (SUM) or 1.01 (P-1) u |exact| (PROD) of the exact result on rounding data.
 * An algorithm that cannot give plancoll's answer for a pair (MPI's own op differs from the definition) must be
 * refused with PLANCOLL_ERR_INAPPLICABLE on every rank; only MPI-backed candidates may be refused, and MPI's own
 * collective must stay available where it agrees (int and double SUM). Receive-buffer gaps of the pair types
 * must survive. At 1 and 2 ranks every pair MPI does not allow (MPI_CHAR and MPI_PACKED take no op) must fail with
 * PLANCOLL_ERR_OP. Small vectors and one execution per plan: the subject is the values, not the sizes. Every datatype
 * runs at 1 and 2 ranks, where each (op, datatype) meets every ordered pair of values; with more ranks, where the
 * algorithms' trees differ, one datatype of each of plancoll's loops does (every width and signedness of integer,
 * every floating and complex type, every pair); on emulated nodes, where MPI also reduces across nodes and between
 * leaders, one datatype of each kind. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* ---- the datatypes and what the test knows of them, independently of plancoll ---- */
enum kind { K_CINT, K_FINT, K_FLOAT, K_LOGICAL, K_COMPLEX, K_BYTE, K_PAIR };
enum vfmt { V_INT, V_F32, V_F64, V_F80 };

struct ttype {
    const char *name;
    MPI_Datatype type;
    enum kind kind;
    enum vfmt vf;   /* format of the value (each component of a complex, the value of a pair) */
    int vsize;      /* bytes of the value in memory (long double: its storage size) */
    bool is_signed; /* integer values */
    bool wide;      /* also run beyond 2 ranks (one datatype of each of plancoll's loops) */
    bool nodes;     /* also run on emulated nodes (one datatype of each kind) */
    /* filled at start-up */
    MPI_Aint extent;
    int size;
    int loc_off; /* pairs: offset of the int index */
};

typedef struct { float v; int loc; } pair_f;
typedef struct { double v; int loc; } pair_d;
typedef struct { long v; int loc; } pair_l;
typedef struct { int v; int loc; } pair_i;
typedef struct { short v; int loc; } pair_s;
typedef struct { long double v; int loc; } pair_ld;

/* name, handle, kind, value format, value size (0: MPI's), signed, wide, nodes; the rest is filled at start-up */
#define CINT(t, ctype, sgn) {#t, t, K_CINT, V_INT, sizeof(ctype), sgn, false, false, 0, 0, 0}
#define CINT_WIDE(t, ctype, sgn) {#t, t, K_CINT, V_INT, sizeof(ctype), sgn, true, false, 0, 0, 0}
#define CINT_NODES(t, ctype, sgn) {#t, t, K_CINT, V_INT, sizeof(ctype), sgn, true, true, 0, 0, 0}
static struct ttype types[] = {
    CINT_NODES(MPI_INT, int, true),
    CINT_NODES(MPI_LONG, long, true),
    CINT_WIDE(MPI_SHORT, short, true),
    CINT_WIDE(MPI_UNSIGNED_SHORT, unsigned short, false),
    CINT_NODES(MPI_UNSIGNED, unsigned, false),
    CINT_NODES(MPI_UNSIGNED_LONG, unsigned long, false),
    CINT(MPI_LONG_LONG, long long, true),
    CINT(MPI_UNSIGNED_LONG_LONG, unsigned long long, false),
    CINT_WIDE(MPI_SIGNED_CHAR, signed char, true),
    CINT_NODES(MPI_UNSIGNED_CHAR, unsigned char, false),
    CINT(MPI_INT8_T, int8_t, true),
    CINT(MPI_INT16_T, int16_t, true),
    CINT(MPI_INT32_T, int32_t, true),
    CINT(MPI_INT64_T, int64_t, true),
    CINT(MPI_UINT8_T, uint8_t, false),
    CINT(MPI_UINT16_T, uint16_t, false),
    CINT(MPI_UINT32_T, uint32_t, false),
    CINT(MPI_UINT64_T, uint64_t, false),
    CINT(MPI_AINT, MPI_Aint, true),
    CINT(MPI_OFFSET, MPI_Offset, true),
    CINT(MPI_COUNT, MPI_Count, true),
    {"MPI_INTEGER", MPI_INTEGER, K_FINT, V_INT, 0, true, false, false, 0, 0, 0}, /* size from MPI */
    {"MPI_FLOAT", MPI_FLOAT, K_FLOAT, V_F32, 4, false, true, true, 0, 0, 0},
    {"MPI_DOUBLE", MPI_DOUBLE, K_FLOAT, V_F64, 8, false, true, true, 0, 0, 0},
    {"MPI_LONG_DOUBLE", MPI_LONG_DOUBLE, K_FLOAT, V_F80, sizeof(long double), false, true, true, 0, 0, 0},
    {"MPI_REAL", MPI_REAL, K_FLOAT, V_F32, 0, false, false, false, 0, 0, 0},
    {"MPI_DOUBLE_PRECISION", MPI_DOUBLE_PRECISION, K_FLOAT, V_F64, 0, false, false, false, 0, 0, 0},
    {"MPI_C_BOOL", MPI_C_BOOL, K_LOGICAL, V_INT, 1, false, true, true, 0, 0, 0},
    {"MPI_LOGICAL", MPI_LOGICAL, K_LOGICAL, V_INT, 0, false, false, false, 0, 0, 0},
    {"MPI_C_FLOAT_COMPLEX", MPI_C_FLOAT_COMPLEX, K_COMPLEX, V_F32, 4, false, true, false, 0, 0, 0},
    {"MPI_C_DOUBLE_COMPLEX", MPI_C_DOUBLE_COMPLEX, K_COMPLEX, V_F64, 8, false, true, true, 0, 0, 0},
    {"MPI_C_LONG_DOUBLE_COMPLEX", MPI_C_LONG_DOUBLE_COMPLEX, K_COMPLEX, V_F80, sizeof(long double), false, true, false, 0, 0, 0},
    {"MPI_COMPLEX", MPI_COMPLEX, K_COMPLEX, V_F32, 0, false, true, false, 0, 0, 0},
    {"MPI_DOUBLE_COMPLEX", MPI_DOUBLE_COMPLEX, K_COMPLEX, V_F64, 0, false, true, true, 0, 0, 0},
    {"MPI_BYTE", MPI_BYTE, K_BYTE, V_INT, 1, false, true, true, 0, 0, 0},
    {"MPI_FLOAT_INT", MPI_FLOAT_INT, K_PAIR, V_F32, 4, false, true, false, 0, 0, offsetof(pair_f, loc)},
    {"MPI_DOUBLE_INT", MPI_DOUBLE_INT, K_PAIR, V_F64, 8, false, true, true, 0, 0, offsetof(pair_d, loc)},
    {"MPI_LONG_INT", MPI_LONG_INT, K_PAIR, V_INT, sizeof(long), true, true, false, 0, 0, offsetof(pair_l, loc)},
    {"MPI_2INT", MPI_2INT, K_PAIR, V_INT, sizeof(int), true, true, true, 0, 0, offsetof(pair_i, loc)},
    {"MPI_SHORT_INT", MPI_SHORT_INT, K_PAIR, V_INT, sizeof(short), true, true, false, 0, 0, offsetof(pair_s, loc)},
    {"MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, K_PAIR, V_F80, sizeof(long double), false, true, true, 0, 0, offsetof(pair_ld, loc)},
};
#define NTYPES ((int)(sizeof types / sizeof types[0]))

enum op { O_MAX, O_MIN, O_SUM, O_PROD, O_LAND, O_LOR, O_LXOR, O_BAND, O_BOR, O_BXOR, O_MAXLOC, O_MINLOC, NOPS };
static const char *const op_names[NOPS] = {"MPI_MAX", "MPI_MIN", "MPI_SUM", "MPI_PROD", "MPI_LAND", "MPI_LOR",
                                           "MPI_LXOR", "MPI_BAND", "MPI_BOR", "MPI_BXOR", "MPI_MAXLOC", "MPI_MINLOC"};
static MPI_Op mpi_op(enum op o)
{
    const MPI_Op ops[NOPS] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND, MPI_LOR,
                              MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR, MPI_MAXLOC, MPI_MINLOC};
    return ops[o];
}

/* MPI 4.0, 6.9.2: which op on which class of predefined types. */
static bool mpi_allows(enum op o, enum kind k)
{
    switch (o) {
    case O_MAX:
    case O_MIN: return k == K_CINT || k == K_FINT || k == K_FLOAT;
    case O_SUM:
    case O_PROD: return k == K_CINT || k == K_FINT || k == K_FLOAT || k == K_COMPLEX;
    case O_LAND:
    case O_LOR:
    case O_LXOR: return k == K_CINT || k == K_LOGICAL;
    case O_BAND:
    case O_BOR:
    case O_BXOR: return k == K_CINT || k == K_FINT || k == K_BYTE;
    default: return k == K_PAIR;
    }
}

/* ---- value formats: the bytes that carry the value, reading and writing through long double ---- */
static bool ld_is_x87(void) { return LDBL_MANT_DIG == 64 && sizeof(long double) >= 10; }

/* Bytes of a value that are data (an x87 long double's 6 padding bytes are not). */
static int value_bytes(const struct ttype *t)
{
    switch (t->vf) {
    case V_F32: return 4;
    case V_F64: return 8;
    case V_F80: return ld_is_x87() ? 10 : (int)sizeof(long double);
    default: return t->vsize;
    }
}

static long double get_f(enum vfmt vf, const unsigned char *p)
{
    if (vf == V_F32) {
        float f;
        memcpy(&f, p, 4);
        return f;
    }
    if (vf == V_F64) {
        double d;
        memcpy(&d, p, 8);
        return d;
    }
    long double l;
    memcpy(&l, p, sizeof l);
    return l;
}

static void put_f(enum vfmt vf, unsigned char *p, long double x)
{
    if (vf == V_F32) {
        float f = (float)x;
        memcpy(p, &f, 4);
    } else if (vf == V_F64) {
        double d = (double)x;
        memcpy(p, &d, 8);
    } else {
        memcpy(p, &x, sizeof x);
    }
}

/* Raw bit patterns: NaNs with signs and payloads, a signalling NaN (conversions would lose them). */
static void put_bits(enum vfmt vf, unsigned char *p, bool neg, uint64_t payload, bool quiet)
{
    if (vf == V_F32) {
        uint32_t b = (neg ? 0x80000000u : 0) | 0x7f800000u | (quiet ? 0x400000u : 0) | (uint32_t)(payload & 0x3fffff);
        if ((b & 0x7fffff) == 0) b |= 1;
        memcpy(p, &b, 4);
    } else if (vf == V_F64) {
        uint64_t b = (neg ? UINT64_C(1) << 63 : 0) | UINT64_C(0x7ff0000000000000) | (quiet ? UINT64_C(1) << 51 : 0) |
                     (payload & ((UINT64_C(1) << 51) - 1));
        if ((b & ((UINT64_C(1) << 52) - 1)) == 0) b |= 1;
        memcpy(p, &b, 8);
    } else if (ld_is_x87()) {
        /* 64-bit significand with its explicit integer bit, then sign and 15-bit exponent */
        uint64_t m = (UINT64_C(1) << 63) | (quiet ? UINT64_C(1) << 62 : 0) | (payload & ((UINT64_C(1) << 62) - 1));
        if ((m & ((UINT64_C(1) << 63) - 1)) == 0) m |= 1;
        uint16_t se = (uint16_t)((neg ? 0x8000u : 0) | 0x7fffu);
        memset(p, 0, sizeof(long double));
        memcpy(p, &m, 8);
        memcpy(p + 8, &se, 2);
    } else {
        put_f(vf, p, neg ? -NAN : NAN);
    }
}

/* plancoll's result NaN: positive, quiet, zero payload (what nan("") gives), written bit by bit. */
static void put_default_nan(enum vfmt vf, unsigned char *p) { put_bits(vf, p, false, 0, true); }

static uint64_t get_u(const unsigned char *p, int size)
{
    uint64_t u = 0;
    for (int i = size - 1; i >= 0; i--) u = (u << 8) | p[i]; /* little-endian bytes, as MPI's x86 types are */
    return u;
}
static void put_u(unsigned char *p, int size, uint64_t u)
{
    for (int i = 0; i < size; i++, u >>= 8) p[i] = (unsigned char)u;
}
static int64_t sext(uint64_t u, int size)
{
    if (size == 8) return (int64_t)u;
    uint64_t sign = UINT64_C(1) << (8 * size - 1);
    return (int64_t)((u ^ sign) - sign);
}
static uint64_t mask_of(int size) { return size == 8 ? ~UINT64_C(0) : (UINT64_C(1) << (8 * size)) - 1; }

/* ---- data: per element, a group and a table; rank 0 and rank 1 take every ordered pair of table values, the
 * others one of the two, then random mixes ---- */
static uint64_t mix(uint64_t a, uint64_t b)
{
    uint64_t s = a * UINT64_C(0x9E3779B97F4A7C15) ^ b;
    return tl_rand(&s);
}

/* Which table entry rank q holds at position j of a group whose table has k entries. */
static int pick(int j, int q, int k, uint64_t salt)
{
    if (j < k * k) {
        int a = j % k, b = j / k;
        if (q == 0) return a;
        if (q == 1) return b;
        return mix(salt + (uint64_t)j, (uint64_t)q) & 1 ? a : b;
    }
    return (int)(mix(salt + (uint64_t)j * 31, (uint64_t)q + 7) % (uint64_t)k);
}

/* Integer tables: bit patterns cut to the size (all-ones is -1 and the unsigned maximum; 0x80.. is INT_MIN and
 * 2^(bits-1); 0xf0.. lies above 2^(bits-1)). */
static uint64_t int_pattern(int e, int size)
{
    const int bits = 8 * size;
    const uint64_t top = UINT64_C(1) << (bits - 1), m = mask_of(size);
    switch (e) {
    case 0: return 0;
    case 1: return 1;
    case 2: return 2;
    case 3: return 5;
    case 4: return top - 1;             /* signed maximum */
    case 5: return top;                 /* signed minimum / 2^(bits-1) */
    case 6: return top + 1;
    case 7: return m;                   /* -1 / unsigned maximum */
    case 8: return m & ~(m >> 4);       /* 0xf0.. */
    case 9: return UINT64_C(0x5555555555555555) & m;
    case 10: return 3;
    default: return (m - 1) & m;        /* -2 / unsigned maximum - 1 */
    }
}
#define N_INT_PATTERNS 12

/* Floating tables. MAX/MIN: everything. SUM and PROD: three groups, each exact whatever the order (sums of small
 * halves, of denormals; products of small powers, of denormals with small integers), and a rounding group. */
enum fspecial { FS_NUM, FS_QNAN, FS_NEG_QNAN_PAYLOAD, FS_QNAN_PAYLOAD, FS_SNAN };
struct fval {
    enum fspecial s;
    long double x; /* FS_NUM */
};
static long double tiny(enum vfmt vf)
{
    return vf == V_F32 ? (long double)FLT_TRUE_MIN : vf == V_F64 ? (long double)DBL_TRUE_MIN : LDBL_TRUE_MIN;
}
static long double huge(enum vfmt vf) { return vf == V_F32 ? (long double)FLT_MAX : vf == V_F64 ? (long double)DBL_MAX : LDBL_MAX; }

static int float_table(enum op o, int group, enum vfmt vf, struct fval *t)
{
    int k = 0;
#define NUM(v) (t[k++] = (struct fval){FS_NUM, (v)})
#define SPECIAL(s) (t[k++] = (struct fval){(s), 0})
    const long double d = tiny(vf);
    if (o == O_MAX || o == O_MIN || o == O_MAXLOC || o == O_MINLOC) {
        NUM(0.0L), NUM(-0.0L), NUM(1), NUM(-1), NUM(2.5L), NUM(d), NUM(-d), NUM(huge(vf)), NUM(-huge(vf));
        NUM(INFINITY), NUM(-INFINITY);
        SPECIAL(FS_QNAN), SPECIAL(FS_NEG_QNAN_PAYLOAD), SPECIAL(FS_QNAN_PAYLOAD), SPECIAL(FS_SNAN);
    } else if (group == 0) {
        NUM(0.0L), NUM(-0.0L), NUM(1), NUM(-1), NUM(2), NUM(0.5L), NUM(-3), NUM(1.5L), NUM(INFINITY), NUM(-INFINITY);
        SPECIAL(FS_QNAN), SPECIAL(FS_NEG_QNAN_PAYLOAD), SPECIAL(FS_QNAN_PAYLOAD);
    } else if (group == 1) {
        if (o == O_SUM) NUM(0.0L), NUM(-0.0L), NUM(d), NUM(-d), NUM(2 * d), NUM(3 * d), NUM(-5 * d), SPECIAL(FS_NEG_QNAN_PAYLOAD);
        else NUM(0.0L), NUM(-0.0L), NUM(1), NUM(-1), NUM(2), NUM(-2), NUM(3), NUM(d), NUM(-d), SPECIAL(FS_QNAN_PAYLOAD);
    }
#undef NUM
#undef SPECIAL
    return k;
}

static void put_fval(enum vfmt vf, unsigned char *p, const struct fval *v)
{
    switch (v->s) {
    case FS_NUM: put_f(vf, p, v->x); break;
    case FS_QNAN: put_bits(vf, p, false, 0, true); break;
    case FS_NEG_QNAN_PAYLOAD: put_bits(vf, p, true, 5, true); break;
    case FS_QNAN_PAYLOAD: put_bits(vf, p, false, 0x123, true); break;
    case FS_SNAN: put_bits(vf, p, false, 0x21, false); break;
    }
}

/* The rounding group: alternating large terms and small ones (SUM), factors near 1 (PROD). */
static long double rounding_value(enum op o, enum vfmt vf, int j, int q)
{
    long double big = vf == V_F32 ? 1e6L : vf == V_F64 ? 1e15L : 1e18L;
    if (o == O_SUM) return (q % 2 ? 1 : -1) * big * (1 + j % 3) + 0.1L * (q + 1) * (j + 1);
    return 1 + (long double)((q * 7 + j * 13) % 29 + 1) / 97;
}

/* ---- the check of one element (or one component): how it is compared, and against what ---- */
enum cmp { C_BITS, C_NAN, C_EQ, C_TOL };
struct expect {
    enum cmp how;
    long double ref, tol; /* C_EQ, C_TOL */
};

struct pairrun {
    const struct ttype *t;
    enum op o;
    int n;                /* elements */
    int ncomp;            /* checked components per element: 1, 2 (complex, pair: value and index) */
    unsigned char *send;  /* this rank's input */
    unsigned char *all;   /* every rank's input, P x n elements */
    unsigned char *want;  /* expected bits (C_BITS) */
    struct expect *exp;   /* n x ncomp */
};

static int elements_for(const struct ttype *t, enum op o)
{
    if (t->kind == K_FLOAT || t->kind == K_COMPLEX) {
        bool order_ops = o == O_MAX || o == O_MIN;
        return order_ops ? 15 * 15 + 40 : 3 * (13 * 13 + 20);
    }
    if (t->kind == K_PAIR) return 15 * 15 + 40;
    if (t->kind == K_LOGICAL || t->kind == K_BYTE) return 4 * 4 + 40;
    return N_INT_PATTERNS * N_INT_PATTERNS + 40;
}

/* Complex PROD of infinities and NaNs depends on the order of three or more factors; of two it is one product of
 * the type's language: those elements exist at P = 2 only. */
static bool complex_special(int j) { return tl_size == 2 && j % 2 == 1; }

/* Fills element j of rank q's input at p. */
static void gen(const struct pairrun *r, int q, int j, unsigned char *p)
{
    const struct ttype *t = r->t;
    const uint64_t salt = (uint64_t)(t - types) * 131 + (uint64_t)r->o * 7;
    switch (t->kind) {
    case K_CINT:
    case K_FINT: put_u(p, t->vsize, int_pattern(pick(j, q, N_INT_PATTERNS, salt), t->vsize)); break;
    case K_LOGICAL: put_u(p, t->vsize, (uint64_t)pick(j, q, 2, salt)); break;
    case K_BYTE: {
        static const uint8_t bytes[4] = {0x00, 0xff, 0x5a, 0xc3};
        p[0] = bytes[pick(j, q, 4, salt)];
        break;
    }
    case K_FLOAT:
    case K_COMPLEX: {
        int ncomp = t->kind == K_COMPLEX ? 2 : 1;
        for (int c = 0; c < ncomp; c++) {
            unsigned char *cp = p + c * t->vsize;
            if (t->kind == K_COMPLEX && r->o == O_PROD && complex_special(j)) {
                struct fval tab[16];
                int k = float_table(O_SUM, 0, t->vf, tab) - 2; /* zeros, small values, infinities, a NaN */
                put_fval(t->vf, cp, &tab[mix(salt + (uint64_t)j * 2 + (uint64_t)c, (uint64_t)q + 5) % (uint64_t)k]);
                continue;
            }
            if (t->kind == K_COMPLEX && r->o == O_PROD) {
                /* small Gaussian integers: every product exact (no zero parts: their signs would depend on order) */
                static const long double parts[5] = {1, -1, 2, -2, 3};
                put_f(t->vf, cp, parts[mix(salt + (uint64_t)j * 2 + (uint64_t)c, (uint64_t)q) % 5]);
                continue;
            }
            bool order_ops = r->o == O_MAX || r->o == O_MIN;
            int group = order_ops ? 0 : j % 3, jj = order_ops ? j : j / 3;
            if (group == 2) {
                put_f(t->vf, cp, rounding_value(r->o, t->vf, jj + c, q));
                continue;
            }
            struct fval tab[16];
            int k = float_table(r->o, group, t->vf, tab);
            put_fval(t->vf, cp, &tab[pick(jj, q, k, salt + (uint64_t)c * 1000003 + (uint64_t)group)]);
        }
        break;
    }
    case K_PAIR: {
        static const int locs[4] = {0, 3, -1, 1000000};
        int loc = locs[mix(salt + (uint64_t)j, (uint64_t)q + 99) % 4];
        if (t->vf == V_INT) {
            static const int64_t vals[5] = {0, 1, -1, 7, 0};
            int e = pick(j, q, 5, salt);
            /* the extremes of the value type, and plain values that tie */
            uint64_t u = e == 4 ? (UINT64_C(1) << (8 * t->vsize - 1)) : (uint64_t)vals[e];
            if (e == 3 && j % 2) u = (UINT64_C(1) << (8 * t->vsize - 1)) - 1;
            put_u(p, t->vsize, u & mask_of(t->vsize));
        } else {
            struct fval tab[16];
            int k = float_table(r->o, 0, t->vf, tab);
            put_fval(t->vf, p, &tab[pick(j, q, k, salt)]);
        }
        memcpy(p + t->loc_off, &loc, sizeof loc);
        break;
    }
    }
}

/* ---- expected results ---- */
static bool is_nan_bits(enum vfmt vf, const unsigned char *p) { return isnan(get_f(vf, p)); }

/* plancoll's order for MAX (and MAXLOC): NaN above everything, -0 below +0. > 0 when a ranks above b, 0 when they
 * are the same value (all NaNs are one value). MIN uses the order with NaN below everything. */
static int float_order(long double a, long double b, bool for_max)
{
    bool an = isnan(a), bn = isnan(b);
    if (an || bn) return for_max ? (int)an - (int)bn : (int)bn - (int)an;
    if (a > b) return 1;
    if (a < b) return -1;
    return (int)(signbit(b) != 0) - (int)(signbit(a) != 0); /* equal: only +0 against -0 differ */
}

static void expect_int(struct pairrun *r, int j)
{
    const struct ttype *t = r->t;
    const int P = tl_size, sz = t->vsize;
    const size_t ext = (size_t)t->extent;
    const uint64_t m = mask_of(sz);
    uint64_t acc = get_u(r->all + (size_t)j * ext, sz);
    if (r->o == O_LAND || r->o == O_LOR || r->o == O_LXOR) acc = acc != 0;
    for (int q = 1; q < P; q++) {
        uint64_t x = get_u(r->all + ((size_t)q * (size_t)r->n + (size_t)j) * ext, sz);
        bool xt = x != 0;
        switch (r->o) {
        case O_SUM: acc = (acc + x) & m; break;
        case O_PROD: acc = (acc * x) & m; break;
        case O_MAX:
            if (t->is_signed ? sext(x, sz) > sext(acc, sz) : x > acc) acc = x;
            break;
        case O_MIN:
            if (t->is_signed ? sext(x, sz) < sext(acc, sz) : x < acc) acc = x;
            break;
        case O_LAND: acc = acc && xt; break;
        case O_LOR: acc = acc || xt; break;
        case O_LXOR: acc = (acc != 0) != xt; break;
        case O_BAND: acc &= x; break;
        case O_BOR: acc |= x; break;
        case O_BXOR: acc ^= x; break;
        default: break;
        }
    }
    if (P == 1 && (r->o == O_LAND || r->o == O_LOR || r->o == O_LXOR)) acc = get_u(r->all + (size_t)j * ext, sz);
    put_u(r->want + (size_t)j * ext, sz, acc);
    r->exp[j] = (struct expect){C_BITS, 0, 0};
}

/* MAX, MIN: the winner's bits, or the default NaN; one rank: its own bits (no operation is applied). */
static void expect_order(struct pairrun *r, int j, bool pair)
{
    const struct ttype *t = r->t;
    const size_t ext = (size_t)t->extent;
    const bool for_max = r->o == O_MAX || r->o == O_MAXLOC;
    int best = 0, loc = 0;
    unsigned char *w = r->want + (size_t)j * ext;
    const unsigned char *first = r->all + (size_t)j * ext;
    if (pair) memcpy(&loc, first + t->loc_off, sizeof loc);
    for (int q = 1; q < tl_size; q++) {
        const unsigned char *x = r->all + ((size_t)q * (size_t)r->n + (size_t)j) * ext,
                            *b = r->all + ((size_t)best * (size_t)r->n + (size_t)j) * ext;
        int c;
        if (t->vf == V_INT) {
            int64_t xv = sext(get_u(x, t->vsize), t->vsize), bv = sext(get_u(b, t->vsize), t->vsize);
            c = xv > bv ? 1 : xv < bv ? -1 : 0;
        } else {
            c = float_order(get_f(t->vf, x), get_f(t->vf, b), for_max);
        }
        if (!for_max) c = -c;
        int xl = 0;
        if (pair) memcpy(&xl, x + t->loc_off, sizeof xl);
        if (c > 0) {
            best = q;
            loc = xl;
        } else if (c == 0 && xl < loc) {
            loc = xl;
        }
    }
    const unsigned char *b = r->all + ((size_t)best * (size_t)r->n + (size_t)j) * ext;
    memcpy(w, b, (size_t)t->vsize);
    if (tl_size > 1 && t->vf != V_INT && is_nan_bits(t->vf, b)) put_default_nan(t->vf, w);
    r->exp[(size_t)j * (size_t)r->ncomp] = (struct expect){C_BITS, 0, 0};
    if (pair) {
        memcpy(w + t->loc_off, &loc, sizeof loc);
        r->exp[(size_t)j * (size_t)r->ncomp + 1] = (struct expect){C_BITS, 0, 0};
    }
}

/* Unit roundoff of the format. */
static long double unit_roundoff(enum vfmt vf)
{
    return vf == V_F32 ? (long double)FLT_EPSILON / 2 : vf == V_F64 ? (long double)DBL_EPSILON / 2 : LDBL_EPSILON / 2;
}

/* The product of two complex values as their language defines it: C's operator (Annex G: infinities recovered)
 * for the C types, the two textbook formulas for Fortran's COMPLEX and DOUBLE COMPLEX; in the type's precision. */
#define LANGUAGE_PRODUCT(T, CPX)                                                                 \
    do {                                                                                         \
        T xr = (T)get_f(t->vf, x), xi = (T)get_f(t->vf, x + t->vsize), yr = (T)get_f(t->vf, y),  \
          yi = (T)get_f(t->vf, y + t->vsize);                                                    \
        if (fortran) {                                                                           \
            T pr = xr * yr - xi * yi, pi = xr * yi + xi * yr;                                    \
            res = c ? pi : pr;                                                                   \
        } else {                                                                                 \
            _Complex T p = CPX(xr, xi) * CPX(yr, yi);                                            \
            res = c ? cimag(p) : creal(p);                                                       \
        }                                                                                        \
    } while (0)
static void expect_language_product(struct pairrun *r, int j, int c)
{
    const struct ttype *t = r->t;
    const size_t ext = (size_t)t->extent;
    const unsigned char *x = r->all + (size_t)j * ext, *y = r->all + ((size_t)r->n + (size_t)j) * ext;
    bool fortran = t->type == MPI_COMPLEX || t->type == MPI_DOUBLE_COMPLEX;
    long double res;
    if (t->vf == V_F32) LANGUAGE_PRODUCT(float, CMPLXF);
    else if (t->vf == V_F64) LANGUAGE_PRODUCT(double, CMPLX);
    else LANGUAGE_PRODUCT(long double, CMPLXL);
    struct expect *e = &r->exp[(size_t)j * (size_t)r->ncomp + (size_t)c];
    if (isnan(res)) {
        *e = (struct expect){C_NAN, 0, 0};
        return;
    }
    put_f(t->vf, r->want + (size_t)j * ext + (size_t)c * (size_t)t->vsize, res);
    *e = (struct expect){C_BITS, 0, 0};
}

/* SUM, PROD of real values or of one component of complex values (the test's own arithmetic). */
static void expect_arith(struct pairrun *r, int j, int c)
{
    const struct ttype *t = r->t;
    const size_t ext = (size_t)t->extent;
    const int P = tl_size;
    struct expect *e = &r->exp[(size_t)j * (size_t)r->ncomp + (size_t)c];
    unsigned char *w = r->want + (size_t)j * ext + (size_t)c * (size_t)t->vsize;
    bool complex_prod = t->kind == K_COMPLEX && r->o == O_PROD;
    bool rounding = !complex_prod && j % 3 == 2;
    if (complex_prod && complex_special(j)) {
        expect_language_product(r, j, c);
        return;
    }
    if (complex_prod) {
        /* Gaussian integers, exact in long double; compared by value (the sign of a zero part may depend on the
         * order, see the header) */
        long double re = 1, im = 0;
        for (int q = 0; q < P; q++) {
            const unsigned char *x = r->all + ((size_t)q * (size_t)r->n + (size_t)j) * ext;
            long double xr = get_f(t->vf, x), xi = get_f(t->vf, x + t->vsize);
            long double nr = re * xr - im * xi, ni = re * xi + im * xr;
            re = nr;
            im = ni;
        }
        *e = (struct expect){C_EQ, c ? im : re, 0};
        return;
    }
    if (rounding) {
        /* the exact result in a wider format; the bound of any evaluation order of P terms */
#ifdef __SIZEOF_FLOAT128__
        __float128 exact = r->o == O_SUM ? 0 : 1, mag = 0;
#else
        long double exact = r->o == O_SUM ? 0 : 1, mag = 0;
#endif
        for (int q = 0; q < P; q++) {
            const unsigned char *x = r->all + ((size_t)q * (size_t)r->n + (size_t)j) * ext + (size_t)c * (size_t)t->vsize;
            long double v = get_f(t->vf, x);
            if (r->o == O_SUM) {
                exact += v;
                mag += fabsl(v);
            } else {
                exact *= v;
            }
        }
        long double u = unit_roundoff(t->vf);
        long double tol = r->o == O_SUM ? (P - 1) * u * (long double)mag * 1.01L
                                        : (P - 1) * u * fabsl((long double)exact) * 1.01L;
#ifndef __SIZEOF_FLOAT128__
        if (t->vf == V_F80) tol *= 2; /* the reference itself rounds in long double */
#endif
        *e = (struct expect){C_TOL, (long double)exact, tol};
        return;
    }
    /* exact data: the test's sum or product in long double, in rank order, is the result in any order */
    const unsigned char *x0 = r->all + (size_t)j * ext + (size_t)c * (size_t)t->vsize;
    long double acc = get_f(t->vf, x0);
    for (int q = 1; q < P; q++) {
        long double v = get_f(t->vf, r->all + ((size_t)q * (size_t)r->n + (size_t)j) * ext + (size_t)c * (size_t)t->vsize);
        acc = r->o == O_SUM ? acc + v : acc * v;
    }
    if (isnan(acc)) {
        *e = (struct expect){C_NAN, 0, 0};
        return;
    }
    if (P == 1) memcpy(w, x0, (size_t)value_bytes(t));
    else put_f(t->vf, w, acc);
    *e = (struct expect){C_BITS, 0, 0};
}

static void compute_expected(struct pairrun *r)
{
    for (int j = 0; j < r->n; j++) {
        switch (r->t->kind) {
        case K_CINT:
        case K_FINT:
        case K_LOGICAL:
        case K_BYTE: expect_int(r, j); break;
        case K_PAIR: expect_order(r, j, true); break;
        case K_FLOAT:
            if (r->o == O_MAX || r->o == O_MIN) expect_order(r, j, false);
            else expect_arith(r, j, 0);
            break;
        case K_COMPLEX:
            expect_arith(r, j, 0);
            expect_arith(r, j, 1);
            break;
        }
    }
}

/* ---- comparing results ---- */
/* Offset and width of component c of an element. */
static void component(const struct ttype *t, int c, size_t *off, int *bytes)
{
    if (t->kind == K_PAIR && c == 1) {
        *off = (size_t)t->loc_off;
        *bytes = sizeof(int);
        return;
    }
    *off = (size_t)c * (size_t)t->vsize;
    *bytes = value_bytes(t);
}

static bool same_component(const struct pairrun *r, const unsigned char *a, const unsigned char *b, int j, int c,
                           bool against_expected)
{
    const struct ttype *t = r->t;
    const struct expect *e = &r->exp[(size_t)j * (size_t)r->ncomp + (size_t)c];
    size_t off;
    int bytes;
    component(t, c, &off, &bytes);
    a += off;
    b += off;
    switch (e->how) {
    case C_BITS: return memcmp(a, b, (size_t)bytes) == 0;
    case C_NAN: return against_expected ? is_nan_bits(t->vf, a) : is_nan_bits(t->vf, a) && is_nan_bits(t->vf, b);
    case C_EQ: return against_expected ? get_f(t->vf, a) == e->ref : get_f(t->vf, a) == get_f(t->vf, b);
    case C_TOL: return against_expected ? fabsl(get_f(t->vf, a) - e->ref) <= e->tol : true; /* order decides */
    }
    return false;
}

static void describe(const struct pairrun *r, const unsigned char *p, int j, char *buf, size_t len)
{
    const struct ttype *t = r->t;
    const unsigned char *x = p + (size_t)j * (size_t)t->extent;
    int used = 0;
    for (int c = 0; c < r->ncomp && used < (int)len; c++) {
        size_t off;
        int bytes;
        component(t, c, &off, &bytes);
        used += snprintf(buf + used, len - (size_t)used, "%s", c ? " / " : "");
        for (int b = bytes - 1; b >= 0 && used < (int)len; b--) used += snprintf(buf + used, len - (size_t)used, "%02x", x[off + (size_t)b]);
        if (t->vf != V_INT && !(t->kind == K_PAIR && c == 1) && used < (int)len)
            used += snprintf(buf + used, len - (size_t)used, " (%Lg)", get_f(t->vf, x + off));
    }
}

static void describe_inputs(const struct pairrun *r, int j, char *buf, size_t len)
{
    int used = 0;
    for (int q = 0; q < tl_size && q < 8 && used < (int)len; q++) {
        char one[96];
        describe(r, r->all + (size_t)q * (size_t)r->n * (size_t)r->t->extent, j, one, sizeof one);
        used += snprintf(buf + used, len - (size_t)used, "%s%s", q ? ", " : "", one);
    }
}

/* ---- the algorithms: every registered one, MPI's collective between leaders, the planner ---- */
#define MAX_ALGS 16
static const char *algs[MAX_ALGS];
static int nalgs;
/* Candidates built on MPI's own MPI_Allreduce: the only ones that may be refused for an (op, datatype). */
static bool mpi_backed(const char *a)
{
    return a && (strncmp(a, "allreduce.native", 16) == 0 || strstr(a, "inter=mpi") != NULL);
}
static const char *label(const char *a) { return a ? a : "planner(estimate)"; }

static int test_nodes;
static long pairs_run, native_refused;

/* Rank 0's result against this rank's: the first element that differs, with its inputs (collective). */
static void show_rank_difference(const struct pairrun *r, const unsigned char *res, const char *what, const char *alg)
{
    const size_t bytes = (size_t)r->n * (size_t)r->t->extent;
    unsigned char *root = malloc(bytes);
    memcpy(root, res, bytes);
    MPI_Bcast(root, (int)bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
    for (int j = 0; j < r->n; j++)
        for (int c = 0; c < r->ncomp; c++) {
            size_t off;
            int width;
            component(r->t, c, &off, &width);
            const size_t at = (size_t)j * (size_t)r->t->extent + off;
            if (memcmp(res + at, root + at, (size_t)width) == 0) continue;
            char mine[160], zero[160], in[700];
            describe(r, res, j, mine, sizeof mine);
            describe(r, root, j, zero, sizeof zero);
            describe_inputs(r, j, in, sizeof in);
            TL_CHECK(0, "%s under %s: element %d is %s here, %s on rank 0; inputs by rank: %s", what, label(alg), j, mine,
                     zero, in);
            free(root);
            return;
        }
    free(root);
}

static void check_ranks_agree(const uint64_t *h, int n, const char *what, const struct pairrun *r,
                              unsigned char *const *res, const int *rc)
{
    uint64_t *v = malloc(sizeof(uint64_t) * 2 * (size_t)n), *m = malloc(sizeof(uint64_t) * 2 * (size_t)n);
    for (int i = 0; i < n; i++) {
        v[2 * i] = h[i];
        v[2 * i + 1] = ~h[i];
    }
    tl_allreduce(v, m, 2 * n, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    for (int i = 0; i < n; i++) {
        bool same = m[2 * i] == h[i] && m[2 * i + 1] == ~h[i];
        TL_CHECK(same, "%s under %s: ranks hold different bits", what, label(algs[i]));
        /* every rank saw the same maxima: all or none take part */
        if (m[2 * i] != ~m[2 * i + 1] && rc[i] == PLANCOLL_SUCCESS) show_rank_difference(r, res[i], what, algs[i]);
    }
    free(v);
    free(m);
}

static uint64_t hash_result(const struct pairrun *r, const unsigned char *p, uint64_t h)
{
    for (int j = 0; j < r->n; j++)
        for (int c = 0; c < r->ncomp; c++) {
            size_t off;
            int bytes;
            component(r->t, c, &off, &bytes);
            const unsigned char *x = p + (size_t)j * (size_t)r->t->extent + off;
            for (int b = 0; b < bytes; b++) h = (h ^ x[b]) * UINT64_C(1099511628211);
        }
    return h;
}

#define GAP_BYTE 0xa5

static void run_pair(const struct ttype *t, enum op o)
{
    struct pairrun r = {.t = t, .o = o, .n = elements_for(t, o), .ncomp = t->kind == K_COMPLEX || t->kind == K_PAIR ? 2 : 1};
    const size_t ext = (size_t)t->extent, bytes = (size_t)r.n * ext;
    char what[96];
    snprintf(what, sizeof what, "%s on %s", op_names[o], t->name);
    const long failures_before = tl_failures;
    r.send = calloc(1, bytes);
    r.all = calloc((size_t)tl_size, bytes);
    r.want = calloc(1, bytes);
    r.exp = calloc((size_t)r.n * (size_t)r.ncomp, sizeof *r.exp);
    unsigned char *res[MAX_ALGS];
    plancoll_plan plan[MAX_ALGS];
    int rc[MAX_ALGS];
    for (int q = 0; q < tl_size; q++)
        for (int j = 0; j < r.n; j++) gen(&r, q, j, r.all + ((size_t)q * (size_t)r.n + (size_t)j) * ext);
    memcpy(r.send, r.all + (size_t)tl_rank * bytes, bytes);
    compute_expected(&r);

    /* plan every candidate, agree on the return codes (a split would hang the executions), execute */
    for (int a = 0; a < nalgs; a++) {
        res[a] = malloc(bytes);
        memset(res[a], GAP_BYTE, bytes);
        plan[a] = NULL;
        tl_force(algs[a]);
        rc[a] = plancoll_plan_allreduce(r.send, res[a], r.n, t->type, mpi_op(o), MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &plan[a]);
        if (rc[a] == PLANCOLL_SUCCESS) continue;
        if (rc[a] == PLANCOLL_ERR_INAPPLICABLE && mpi_backed(algs[a])) {
            TL_CHECK(plancoll_error_detail()[0] != '\0', "%s refused under %s without a message", what, algs[a]);
            TL_CHECK(plan[a] == NULL, "%s refused under %s but a plan was returned", what, algs[a]);
        } else {
            TL_CHECK(0, "%s under %s: plan failed %d (%s): %s", what, label(algs[a]), rc[a], plancoll_strerror(rc[a]),
                     plancoll_error_detail());
        }
    }
    tl_force(NULL);
    {
        int mine[2 * MAX_ALGS], all[2 * MAX_ALGS];
        for (int a = 0; a < nalgs; a++) {
            mine[2 * a] = rc[a];
            mine[2 * a + 1] = -rc[a];
        }
        tl_allreduce(mine, all, 2 * nalgs, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        for (int a = 0; a < nalgs; a++)
            if (all[2 * a] != rc[a] || all[2 * a + 1] != -rc[a]) {
                TL_CHECK(0, "%s under %s: ranks got different return codes (%d here)", what, label(algs[a]), rc[a]);
                fflush(stderr);
                MPI_Abort(MPI_COMM_WORLD, 2); /* executing now would hang */
            }
    }
    for (int a = 0; a < nalgs; a++)
        if (plan[a]) TL_OK(plancoll_execute(plan[a]));
    for (int a = 0; a < nalgs; a++)
        if (plan[a]) TL_OK(plancoll_destroy_plan(&plan[a]));

    /* (c) against the definition, with the receive buffer's gaps intact; (b) against the first algorithm that ran */
    int ref = -1;
    uint64_t h[MAX_ALGS];
    for (int a = 0; a < nalgs; a++) {
        h[a] = (uint64_t)(int64_t)rc[a] * UINT64_C(0x100000001b3);
        if (rc[a] != PLANCOLL_SUCCESS) continue;
        h[a] = hash_result(&r, res[a], h[a]);
        int bad = 0, gaps = 0, differ = 0;
        for (int j = 0; j < r.n; j++) {
            const unsigned char *x = res[a] + (size_t)j * ext;
            for (int c = 0; c < r.ncomp; c++) {
                if (same_component(&r, x, r.want + (size_t)j * ext, j, c, true)) continue;
                if (bad++ < 2) {
                    char got[160], in[700];
                    describe(&r, res[a], j, got, sizeof got);
                    describe_inputs(&r, j, in, sizeof in);
                    const struct expect *e = &r.exp[(size_t)j * (size_t)r.ncomp + (size_t)c];
                    char want[160];
                    if (e->how == C_BITS) describe(&r, r.want, j, want, sizeof want);
                    else if (e->how == C_NAN) snprintf(want, sizeof want, "a NaN");
                    else snprintf(want, sizeof want, "%.21Lg (tolerance %.3Lg)", e->ref, e->tol);
                    TL_CHECK(0, "%s under %s: element %d component %d is %s, expected %s; inputs by rank: %s", what,
                             label(algs[a]), j, c, got, want, in);
                }
            }
            if (t->kind == K_PAIR) /* bytes outside the value and the index: not in the type map */
                for (size_t b = (size_t)t->vsize; b < ext; b++)
                    gaps += (b < (size_t)t->loc_off || b >= (size_t)t->loc_off + sizeof(int)) && x[b] != GAP_BYTE;
            if (ref >= 0)
                for (int c = 0; c < r.ncomp; c++)
                    if (!same_component(&r, x, res[ref] + (size_t)j * ext, j, c, false) && differ++ < 2) {
                        char got[160], other[160], in[700];
                        describe(&r, res[a], j, got, sizeof got);
                        describe(&r, res[ref], j, other, sizeof other);
                        describe_inputs(&r, j, in, sizeof in);
                        TL_CHECK(0, "%s: element %d is %s under %s but %s under %s; inputs by rank: %s", what, j, got,
                                 label(algs[a]), other, label(algs[ref]), in);
                    }
        }
        TL_CHECK(bad == 0, "%s under %s: %d components differ from the definition", what, label(algs[a]), bad);
        TL_CHECK(differ == 0, "%s: %d elements differ between %s and %s", what, differ, label(algs[a]), label(algs[ref]));
        TL_CHECK(gaps == 0, "%s under %s: %d gap bytes of the receive buffer were written", what, label(algs[a]), gaps);
        if (ref < 0) ref = a;
    }
    /* (a) every rank the same bits and the same return codes */
    check_ranks_agree(h, nalgs, what, &r, res, rc);

    /* Only MPI-backed candidates may be refused, and MPI's own collective must stay for the common sums. */
    for (int a = 0; a < nalgs; a++) {
        if (rc[a] == PLANCOLL_SUCCESS || !algs[a] || strcmp(algs[a], "allreduce.native") != 0) continue;
        native_refused++;
        if (tl_rank == 0) printf("  allreduce.native refused for %s\n", what);
        TL_CHECK(!(o == O_SUM && (t->type == MPI_INT || t->type == MPI_DOUBLE)),
                 "%s: allreduce.native refused, but MPI's sum agrees with plancoll's", what);
    }
    /* the log shows only a rank's first failures: name every failing pair */
    if (tl_rank == 0 && tl_failures > failures_before)
        printf("  %s: %ld failed checks on rank 0\n", what, tl_failures - failures_before);
    pairs_run++;
    for (int a = 0; a < nalgs; a++) free(res[a]);
    free(r.send);
    free(r.all);
    free(r.want);
    free(r.exp);
}

/* A pair MPI does not allow is refused with PLANCOLL_ERR_OP on every rank, the receive buffer untouched. */
static void check_refused(MPI_Datatype type, const char *type_name, enum op o)
{
    unsigned char send[64] = {0}, recv[64];
    memset(recv, GAP_BYTE, sizeof recv);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(send, recv, 1, type, mpi_op(o), MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &p);
    TL_CHECK(rc == PLANCOLL_ERR_OP && p == NULL, "%s on %s, which MPI does not allow: got %d (%s), expected PLANCOLL_ERR_OP",
             op_names[o], type_name, rc, plancoll_strerror(rc));
    if (p) plancoll_destroy_plan(&p);
    bool untouched = true;
    for (size_t i = 0; i < sizeof recv; i++) untouched = untouched && recv[i] == GAP_BYTE;
    TL_CHECK(untouched, "%s on %s was refused but wrote the receive buffer", op_names[o], type_name);
}

/* Emulated nodes as MPI_Comm_split_type sees them, split by PLANCOLL_EMULATE_NODES (tl_split_node). */
static int count_nodes(void)
{
    MPI_Comm node;
    tl_split_node(MPI_COMM_WORLD, tl_rank, &node);
    int node_rank, leaders = 0;
    MPI_Comm_rank(node, &node_rank);
    int is_leader = node_rank == 0;
    tl_allreduce(&is_leader, &leaders, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Comm_free(&node);
    return leaders;
}

/* The sizes this test assumes (and the Fortran types' sizes, which the compiler flags decide). */
static bool prepare(struct ttype *t)
{
    if (t->type == MPI_DATATYPE_NULL) return false;
    MPI_Aint lb;
    MPI_Type_get_extent(t->type, &lb, &t->extent);
    MPI_Type_size(t->type, &t->size);
    if (t->vsize == 0) t->vsize = t->kind == K_COMPLEX ? t->size / 2 : t->size;
    if (t->kind == K_FLOAT || t->kind == K_COMPLEX) {
        /* Fortran REAL and DOUBLE PRECISION by their size */
        if (t->vsize == 4 && t->vf != V_F80) t->vf = V_F32;
        else if (t->vsize == 8 && t->vf != V_F80) t->vf = V_F64;
        else if (t->vf != V_F80) return false;
    }
    int comps = t->kind == K_COMPLEX ? 2 : 1;
    if (t->kind == K_PAIR) return t->size == t->loc_off + (int)sizeof(int) || t->size == t->vsize + (int)sizeof(int);
    return t->size == comps * t->vsize && t->extent == t->size;
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "allreduce_ops");
    test_nodes = count_nodes();
    const char *names[MAX_ALGS];
    int n = tl_algorithms("allreduce", names, MAX_ALGS - 3);
    TL_CHECK(n >= 3, "expected at least 3 allreduce algorithms, registry has %d", n);
    for (int i = 0; i < n; i++) algs[nalgs++] = names[i];
    /* MPI's collective between the node leaders: the same question as allreduce.native */
    if (test_nodes > 1) algs[nalgs++] = "allreduce.dpml:leaders=2:inter=mpi";
    algs[nalgs++] = NULL; /* the planner's own choice */
    double t0 = MPI_Wtime();
    for (int i = 0; i < NTYPES; i++) {
        /* Every datatype at 1 and 2 ranks (each meets every pair of values in both orders); beyond, where the
         * trees of the algorithms differ, one datatype of each of plancoll's loops (time). */
        if (tl_size > 2 && !types[i].wide) continue;
        if (test_nodes > 1 && !types[i].nodes) continue; /* there MPI's collective across nodes is the subject */
        if (!prepare(&types[i])) {
            if (tl_rank == 0) printf("  %s: not available in this MPI or of an unexpected size, skipped\n", types[i].name);
            continue;
        }
        for (int o = 0; o < NOPS; o++) {
            if (mpi_allows((enum op)o, types[i].kind)) run_pair(&types[i], (enum op)o);
            else if (tl_size <= 2) check_refused(types[i].type, types[i].name, (enum op)o);
        }
    }
    /* no reduction at all on characters and packed bytes */
    for (int o = 0; o < NOPS && tl_size <= 2; o++) {
        check_refused(MPI_CHAR, "MPI_CHAR", (enum op)o);
        check_refused(MPI_PACKED, "MPI_PACKED", (enum op)o);
    }
    if (tl_rank == 0)
        printf("allreduce_ops: %ld (op, datatype) pairs x %d candidates, allreduce.native refused for %ld, %.2f s\n",
               pairs_run, nalgs, native_refused, MPI_Wtime() - t0);

    return tl_finish();
}
