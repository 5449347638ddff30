/* Reductions. MPI allows each predefined op on some classes of predefined types (MPI 4.0, 6.9.2); the table
 * below encodes those classes. The common (op, type) pairs run a plain loop the compiler vectorises at -O2/-O3
 * (restrict pointers, no per-element switch); all others go through MPI_Reduce_local. */
#include "reduce.h"

#include <complex.h>
#include <stdint.h>
#include <string.h>

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
    add_type(MPI_PACKED, BYTE);
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

/* ---- fast loops: inout[i] = in[i] op inout[i]; out[i] = a[i] op b[i] (suffix _3); the same stored in two
 * buffers at once (suffix _3d: a result that is also needed elsewhere costs no second pass) ----
 * Each is a plain counted loop with no per-element branch on the op. Its parameters are restrict (GCC ignores
 * restrict on block-scope pointers and would need a run-time overlap check), and meson.build gives this file
 * GCC's 'dynamic' vectoriser cost model (-O2's 'very-cheap' leaves loops of unknown trip count scalar);
 * tests/unit/check_vectorized.py checks at the build's -O level that the main loops come out vectorised. */
#define PC_MAXF(a, b) ((a) > (b) ? (a) : (b))
#define PC_MINF(a, b) ((a) < (b) ? (a) : (b))
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
    DEFINE_LOOP(max_##suffix, T, PC_MAXF(a[i], b[i]))                                            \
    DEFINE_LOOP(min_##suffix, T, PC_MINF(a[i], b[i]))
/* Logical ops without && and ||: a short-circuit read of b[i] cannot be vectorised into out = a op b. */
#define DEFINE_BITS(suffix, T)                                                                   \
    DEFINE_LOOP(band_##suffix, T, a[i] & b[i])                                                   \
    DEFINE_LOOP(bor_##suffix, T, a[i] | b[i])                                                    \
    DEFINE_LOOP(bxor_##suffix, T, a[i] ^ b[i])                                                   \
    DEFINE_LOOP(land_##suffix, T, (T)((a[i] != 0) & (b[i] != 0)))                                \
    DEFINE_LOOP(lor_##suffix, T, (T)((a[i] != 0) | (b[i] != 0)))                                 \
    DEFINE_LOOP(lxor_##suffix, T, (T)(!a[i] != !b[i]))

#define DEFINE_ORDER(suffix, T)                                                                  \
    DEFINE_LOOP(max_##suffix, T, PC_MAXF(a[i], b[i]))                                            \
    DEFINE_LOOP(min_##suffix, T, PC_MINF(a[i], b[i]))
DEFINE_ORDER(i8, int8_t)
DEFINE_ARITH(u8, uint8_t, uint64_t)
DEFINE_ORDER(i16, int16_t)
DEFINE_ARITH(u16, uint16_t, uint64_t)
DEFINE_ORDER(i32, int32_t)
DEFINE_ARITH(u32, uint32_t, uint64_t)
DEFINE_ORDER(i64, int64_t)
DEFINE_ARITH(u64, uint64_t, uint64_t)
DEFINE_ARITH(f32, float, float)
DEFINE_ARITH(f64, double, double)
DEFINE_BITS(i8, int8_t)
DEFINE_BITS(u8, uint8_t)
DEFINE_BITS(i16, int16_t)
DEFINE_BITS(u16, uint16_t)
DEFINE_BITS(i32, int32_t)
DEFINE_BITS(u32, uint32_t)
DEFINE_BITS(i64, int64_t)
DEFINE_BITS(u64, uint64_t)
DEFINE_LOOP(sum_c64, double complex, a[i] + b[i])
DEFINE_LOOP(sum_c32, float complex, a[i] + b[i])

struct loop_set {
    pc_reduce_fn f[10];    /* indexed by enum op_kind up to OP_BXOR */
    pc_reduce3_fn f3[10];
    pc_reduce3d_fn f3d[10];
};
#define BOTH(op, name) .f[op] = name, .f3[op] = name##_3, .f3d[op] = name##_3d
#define ARITH(s) {BOTH(OP_SUM, sum_##s), BOTH(OP_PROD, prod_##s), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s)}
#define BITS(s)                                                                                  \
    BOTH(OP_BAND, band_##s), BOTH(OP_BOR, bor_##s), BOTH(OP_BXOR, bxor_##s), BOTH(OP_LAND, land_##s), \
        BOTH(OP_LOR, lor_##s), BOTH(OP_LXOR, lxor_##s)
#define INTS(s) {BOTH(OP_SUM, sum_##s), BOTH(OP_PROD, prod_##s), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s), BITS(s)}

/* Signed SUM and PROD wrap in unsigned arithmetic: the same bits MPI gives, without C's signed-overflow UB. */
#define SIGNED_INTS(s, u) {BOTH(OP_SUM, sum_##u), BOTH(OP_PROD, prod_##u), BOTH(OP_MAX, max_##s), BOTH(OP_MIN, min_##s), BITS(s)}
static const struct loop_set int_loops[2][4] = {
    {SIGNED_INTS(i8, u8), SIGNED_INTS(i16, u16), SIGNED_INTS(i32, u32), SIGNED_INTS(i64, u64)},
    {INTS(u8), INTS(u16), INTS(u32), INTS(u64)},
};
static const struct loop_set f32_loops = ARITH(f32), f64_loops = ARITH(f64);
static const struct loop_set c64_loops = {BOTH(OP_SUM, sum_c64)}, c32_loops = {BOTH(OP_SUM, sum_c32)};

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

static const struct loop_set *fast_loops(MPI_Datatype type, enum type_class cls, int size)
{
    if (cls == C_INTEGER) {
        int l = log2_size(size);
        if (l < 0 || type == MPI_AINT || type == MPI_OFFSET || type == MPI_COUNT) return NULL;
        return &int_loops[is_unsigned(type) ? 1 : 0][l];
    }
    if (type == MPI_FLOAT) return &f32_loops;
    if (type == MPI_DOUBLE) return &f64_loops;
    if (type == MPI_C_DOUBLE_COMPLEX) return &c64_loops;
    if (type == MPI_C_FLOAT_COMPLEX) return &c32_loops;
    return NULL;
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
    const struct loop_set *set = op_id <= OP_BXOR ? fast_loops(type, types[type_id].cls, size) : NULL;
    if (set && set->f[op_id]) {
        r->fast = set->f[op_id];
        r->fast3 = set->f3[op_id];
        r->fast3d = set->f3d[op_id];
    }
    return PLANCOLL_SUCCESS;
}

int pc_reduce(const struct pc_reduction *r, const void *in, void *inout, int count)
{
    if (count <= 0) return PLANCOLL_SUCCESS;
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
    if (r->fast3) {
        r->fast3(a, b, out, count);
        return PLANCOLL_SUCCESS;
    }
    size_t span = (size_t)r->true_extent + (size_t)(count - 1) * (size_t)r->extent;
    memcpy((char *)out + r->true_lb, (const char *)b + r->true_lb, span);
    PC_MPI_CHECK(MPI_Reduce_local(a, out, count, r->type, r->op));
    return PLANCOLL_SUCCESS;
}

int pc_reduce3_dup(const struct pc_reduction *r, const void *a, const void *b, void *out, void *dup, int count)
{
    if (count > 0 && r->fast3d) {
        r->fast3d(a, b, out, dup, count);
        return PLANCOLL_SUCCESS;
    }
    return pc_error(PLANCOLL_ERR_ARGUMENT, "pc_reduce3_dup without a fast loop"); /* callers check fast3d */
}
