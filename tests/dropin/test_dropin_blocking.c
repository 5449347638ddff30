/* The drop-in layer's blocking collectives, seen from an unmodified MPI program (issue 18, item 5): no plancoll
 * header, only MPI_Alltoall, MPI_Alltoallv and MPI_Allreduce called many times. Run once plain and once under
 * the layer (tests/dropin/run-dropin-test.sh); both must pass, and under the layer the report must show planned
 * calls, so the shapes below are repeated well past PLANCOLL_DROPIN_AFTER (default 2): 6 calls or more each.
 *
 * What it covers, and why:
 * - repeated shapes of every element type (int, float, double, a contiguous derived type, a strided vector
 *   type whose holes must stay untouched), a larger shape each (other algorithms are chosen), zero counts;
 * - alternating shapes (A B A B ...), and an alltoall whose send and receive types differ but whose signatures
 *   agree (3 x MPI_INT against 1 x contig(3 x MPI_INT)): one cache key, two buffer layouts;
 * - alltoallv whose counts or displacements change between calls on some ranks and not on others (the design
 *   hazard of issue 18: a rank-local cache hit on the ranks whose shape repeats must not lead them into a plan
 *   while the others call MPI), and counts that never repeat on some ranks;
 * - MPI_IN_PLACE for all three, and an allreduce in place on some ranks and not on others in the same call,
 *   the subset fixed or changing between calls (in-place-ness is per rank and must not split the ranks);
 * - a user-defined op (the layer passes it to MPI or handles it; either way the values must be right);
 * - sub-communicators (odd/even split with the rank order reversed every other cycle, and a dup) used
 *   interleaved, freed and created again between calls: MPI reuses the freed handles, so a layer that keyed
 *   its cache by handle and did not drop a freed communicator's plans runs a stale plan;
 * - MPI_COMM_SELF, and an intercommunicator between the even and the odd ranks (MPI's meaning, passed through).
 * Alltoall and alltoallv are checked byte for byte against images built from the pattern (dropin_common.h);
 * integer allreduces exactly; float and double sums bit-identical on every rank and within (P-1) u sum|x| of
 * the exact sum. */
#include "dropin_common.h"

/* ---- alltoall ---------------------------------------------------------------------------------------- */

/* One MPI_Alltoall of `scount` elements of st against `rcount` of rt per block (same signature), or in place
 * (rt, rcount only), with new data, checked byte for byte. */
static void alltoall_once(MPI_Comm comm, const dc_kind *st, int scount, const dc_kind *rt, int rcount, int in_place,
                          const char *what)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    unsigned iter = dc_iteration++;
    size_t sbytes = (size_t)n * (size_t)scount * (size_t)st->extent;
    size_t rbytes = (size_t)n * (size_t)rcount * (size_t)rt->extent;
    unsigned char *sbuf = dc_alloc(sbytes, DC_FILLER);
    unsigned char *rbuf = dc_alloc(rbytes, in_place ? DC_FILLER : DC_SENTINEL);
    unsigned char *want = dc_alloc(rbytes, in_place ? DC_FILLER : DC_SENTINEL);
    for (int d = 0; d < n; d++)
        for (int e = 0; e < scount; e++)
            for (int j = 0; j < st->nbase; j++)
                dc_put(dc_at(sbuf, st, (long)d * scount + e, j), st->base,
                       dc_value(me, d, (long)e * st->nbase + j, iter));
    if (in_place)
        for (int d = 0; d < n; d++)
            for (int e = 0; e < rcount; e++)
                for (int j = 0; j < rt->nbase; j++)
                    dc_put(dc_at(rbuf, rt, (long)d * rcount + e, j), rt->base,
                           dc_value(me, d, (long)e * rt->nbase + j, iter));
    for (int s = 0; s < n; s++)
        for (int e = 0; e < rcount; e++)
            for (int j = 0; j < rt->nbase; j++)
                dc_put(dc_at(want, rt, (long)s * rcount + e, j), rt->base,
                       dc_value(s, me, (long)e * rt->nbase + j, iter));
    DH_MPI(MPI_Alltoall(in_place ? MPI_IN_PLACE : sbuf, scount, st->type, rbuf, rcount, rt->type, comm));
    char label[160];
    snprintf(label, sizeof label, "alltoall %s %d x %s -> %d x %s%s", what, scount, st->name, rcount, rt->name,
             in_place ? " in place" : "");
    dc_compare(rbuf, want, rbytes + 64, label, iter);
    free(sbuf);
    free(rbuf);
    free(want);
}

static void alltoall_cases(void)
{
    const int R = 6;
    /* repeated shapes, every element type */
    const struct {
        const dc_kind *t;
        int count;
    } shapes[] = {{&dc_int, 1}, {&dc_double, 3}, {&dc_float, 2}, {&dc_contig3, 2}, {&dc_vector, 2}, {&dc_double, 300}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int i = 0; i < R; i++)
            alltoall_once(MPI_COMM_WORLD, shapes[s].t, shapes[s].count, shapes[s].t, shapes[s].count, 0, "repeated");
    /* alternating shapes; the third, 3 x MPI_INT against 1 x contig(3 x MPI_INT), has the first's signature */
    for (int i = 0; i < 12; i++) {
        if (i % 3 == 0) alltoall_once(MPI_COMM_WORLD, &dc_int, 3, &dc_int, 3, 0, "alternating");
        if (i % 3 == 1) alltoall_once(MPI_COMM_WORLD, &dc_double, 1, &dc_double, 1, 0, "alternating");
        if (i % 3 == 2) alltoall_once(MPI_COMM_WORLD, &dc_int, 3, &dc_contig3, 1, 0, "alternating, mixed types");
    }
    /* in place */
    for (int i = 0; i < R; i++) alltoall_once(MPI_COMM_WORLD, &dc_int, 2, &dc_int, 2, 1, "repeated");
    for (int i = 0; i < R; i++) alltoall_once(MPI_COMM_WORLD, &dc_vector, 1, &dc_vector, 1, 1, "repeated");
    /* zero counts: nothing may be written */
    for (int i = 0; i < R; i++) alltoall_once(MPI_COMM_WORLD, &dc_double, 0, &dc_double, 0, 0, "zero");
}

/* ---- alltoallv --------------------------------------------------------------------------------------- */

/* A family of alltoallv shapes: the count from src to dst and the gap before dst's (or src's) block in a
 * rank's buffer, at shape step s. */
typedef struct {
    const char *name;
    int (*count)(int src, int dst, int s);
    int (*gap)(int rank, int peer, int s);
} v_shape;

static int base_count(int src, int dst) { return (src + 2 * dst) % 4; } /* zeros included */
static int count_fixed(int src, int dst, int s) { return (void)s, base_count(src, dst); }
/* odd ranks' sends to odd ranks alternate between two sizes: even ranks see the same shape every call, odd
 * ranks an A B A B sequence */
static int count_odd_alternate(int src, int dst, int s)
{
    return base_count(src, dst) + ((src % 2 == 1 && dst % 2 == 1) ? 2 * (s % 2) : 0);
}
/* odd ranks' sends to odd ranks grow every call: even ranks repeat, odd ranks never do */
static int count_odd_grow(int src, int dst, int s)
{
    return base_count(src, dst) + ((src % 2 == 1 && dst % 2 == 1) ? s : 0);
}
/* rank 0's row and column change on every third call only */
static int count_rank0_sometimes(int src, int dst, int s)
{
    return base_count(src, dst) + ((src == 0 || dst == 0) && s % 3 == 2 ? 1 : 0);
}
/* symmetric (count[src][dst] == count[dst][src]) as MPI_IN_PLACE needs */
static int count_symmetric(int src, int dst, int s) { return (void)s, (src + dst) % 3 + (src == dst); }
static int count_zero(int src, int dst, int s) { return (void)src, (void)dst, (void)s, 0; }
static int gap_none(int rank, int peer, int s) { return (void)rank, (void)peer, (void)s, 0; }
static int gap_fixed(int rank, int peer, int s) { return (void)s, (rank + peer) % 2; }
/* the displacements of odd ranks move between calls, their counts do not */
static int gap_odd_moving(int rank, int peer, int s) { return rank % 2 == 1 ? (peer + s) % 3 : 0; }

static const v_shape v_fixed = {"fixed", count_fixed, gap_fixed};
static const v_shape v_odd_alternate = {"odd ranks alternate", count_odd_alternate, gap_none};
static const v_shape v_odd_grow = {"odd ranks never repeat", count_odd_grow, gap_none};
static const v_shape v_rank0_sometimes = {"rank 0 changes every third call", count_rank0_sometimes, gap_fixed};
static const v_shape v_odd_displs = {"odd ranks' displacements move", count_fixed, gap_odd_moving};
static const v_shape v_symmetric = {"symmetric", count_symmetric, gap_fixed};
static const v_shape v_zero = {"zero", count_zero, gap_fixed};

/* Lays out a rank's blocks: block b (of `count(b)` elements) starts `gap(b)` elements after the previous
 * one ends. Returns the buffer's length in elements. */
static long v_layout(const v_shape *v, int me, int n, int s, int sending, int *counts, int *displs)
{
    long pos = 0;
    for (int b = 0; b < n; b++) {
        counts[b] = sending ? v->count(me, b, s) : v->count(b, me, s);
        pos += v->gap(me, b, s);
        displs[b] = (int)pos;
        pos += counts[b];
    }
    return pos;
}

static void alltoallv_once(MPI_Comm comm, const dc_kind *t, const v_shape *v, int s, int in_place)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    unsigned iter = dc_iteration++;
    int *sc = malloc(4 * sizeof(int) * (size_t)n), *sd = sc + n, *rc = sd + n, *rd = rc + n;
    long slen = v_layout(v, me, n, s, 1, sc, sd);
    long rlen = v_layout(v, me, n, s, 0, rc, rd);
    size_t sbytes = (size_t)slen * (size_t)t->extent, rbytes = (size_t)rlen * (size_t)t->extent;
    unsigned char *sbuf = dc_alloc(sbytes, DC_FILLER);
    unsigned char *rbuf = dc_alloc(rbytes, in_place ? DC_FILLER : DC_SENTINEL);
    unsigned char *want = dc_alloc(rbytes, in_place ? DC_FILLER : DC_SENTINEL);
    for (int d = 0; d < n; d++)
        for (int e = 0; e < sc[d]; e++)
            for (int j = 0; j < t->nbase; j++)
                dc_put(dc_at(in_place ? rbuf : sbuf, t, (long)sd[d] + e, j), t->base,
                       dc_value(me, d, (long)e * t->nbase + j, iter));
    for (int src = 0; src < n; src++)
        for (int e = 0; e < rc[src]; e++)
            for (int j = 0; j < t->nbase; j++)
                dc_put(dc_at(want, t, (long)rd[src] + e, j), t->base, dc_value(src, me, (long)e * t->nbase + j, iter));
    if (in_place)
        DH_MPI(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, rc, rd, t->type, comm));
    else
        DH_MPI(MPI_Alltoallv(sbuf, sc, sd, t->type, rbuf, rc, rd, t->type, comm));
    char label[200];
    snprintf(label, sizeof label, "alltoallv %s step %d of %s%s", v->name, s, t->name, in_place ? " in place" : "");
    dc_compare(rbuf, want, rbytes + 64, label, iter);
    free(sc);
    free(sbuf);
    free(rbuf);
    free(want);
}

static void alltoallv_cases(void)
{
    const int R = 6;
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_double, &v_fixed, s, 0);
    for (int s = 0; s < R + 2; s++) alltoallv_once(MPI_COMM_WORLD, &dc_int, &v_odd_alternate, s, 0);
    for (int s = 0; s < R + 2; s++) alltoallv_once(MPI_COMM_WORLD, &dc_int, &v_odd_grow, s, 0);
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_float, &v_rank0_sometimes, s, 0);
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_double, &v_odd_displs, s, 0);
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_vector, &v_fixed, s, 0);
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_contig3, &v_symmetric, s, 1);
    for (int s = 0; s < R; s++) alltoallv_once(MPI_COMM_WORLD, &dc_double, &v_zero, s, 0);
}

/* ---- allreduce --------------------------------------------------------------------------------------- */

static MPI_Op user_op_xor;
static void xor_fn(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    for (int i = 0; i < *len; i++) ((int *)inout)[i] ^= ((int *)in)[i];
}

/* in place on this rank at step s? */
typedef int (*in_place_fn)(int rank, int s);
static int ip_never(int rank, int s) { return (void)rank, (void)s, 0; }
static int ip_always(int rank, int s) { return (void)rank, (void)s, 1; }
static int ip_odd(int rank, int s) { return (void)s, rank % 2; }
/* changes between calls on some ranks: rank 0 toggles, rank 2 every third call, others never */
static int ip_changing(int rank, int s) { return rank == 0 ? s % 2 : rank == 2 ? s % 3 == 1 : rank % 2; }

static void allreduce_once(MPI_Comm comm, MPI_Datatype base, MPI_Op op, const char *opname, int count,
                           in_place_fn ip, int s, const char *what)
{
    int me, n;
    MPI_Comm_rank(comm, &me);
    MPI_Comm_size(comm, &n);
    unsigned iter = dc_iteration++;
    int size;
    MPI_Type_size(base, &size);
    size_t bytes = (size_t)count * (size_t)size;
    int in_place = ip(me, s);
    unsigned char *in = dc_alloc(bytes, DC_FILLER), *out = dc_alloc(bytes, DC_SENTINEL);
    for (long k = 0; k < count; k++)
        dc_allreduce_input(base, op, me, k, iter, (in_place ? out : in) + k * size);
    DH_MPI(MPI_Allreduce(in_place ? MPI_IN_PLACE : in, out, count, base, op, comm));
    char label[200];
    snprintf(label, sizeof label, "allreduce %s %d x %s %s%s", what, count, base == MPI_INT ? "MPI_INT" :
             base == MPI_FLOAT ? "MPI_FLOAT" : "MPI_DOUBLE", opname, in_place ? " (in place here)" : "");
    dc_allreduce_check(comm, base, op, count, out, iter, label);
    free(in);
    free(out);
}

static void allreduce_cases(void)
{
    const int R = 6;
    const struct {
        MPI_Datatype t;
        MPI_Op op;
        const char *opname;
        int count;
    } shapes[] = {{MPI_INT, MPI_SUM, "SUM", 7},       {MPI_INT, MPI_MAX, "MAX", 3},
                  {MPI_INT, MPI_BAND, "BAND", 5},     {MPI_DOUBLE, MPI_SUM, "SUM", 9},
                  {MPI_FLOAT, MPI_SUM, "SUM", 4},     {MPI_DOUBLE, MPI_SUM, "SUM", 2000},
                  {MPI_INT, user_op_xor, "user-xor", 6}};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int i = 0; i < R; i++)
            allreduce_once(MPI_COMM_WORLD, shapes[s].t, shapes[s].op, shapes[s].opname, shapes[s].count, ip_never, i,
                           "repeated");
    /* alternating: same count, another type */
    for (int i = 0; i < 8; i++)
        allreduce_once(MPI_COMM_WORLD, i % 2 ? MPI_DOUBLE : MPI_INT, MPI_SUM, "SUM", 7, ip_never, i, "alternating");
    for (int i = 0; i < R; i++)
        allreduce_once(MPI_COMM_WORLD, MPI_DOUBLE, MPI_SUM, "SUM", 11, ip_always, i, "in place");
    for (int i = 0; i < R; i++)
        allreduce_once(MPI_COMM_WORLD, MPI_INT, MPI_SUM, "SUM", 11, ip_odd, i, "in place on odd ranks");
    for (int i = 0; i < R + 2; i++)
        allreduce_once(MPI_COMM_WORLD, MPI_DOUBLE, MPI_SUM, "SUM", 13, ip_changing, i, "in place changing per rank");
    for (int i = 0; i < R; i++) allreduce_once(MPI_COMM_WORLD, MPI_DOUBLE, MPI_SUM, "SUM", 0, ip_never, i, "zero");
}

/* ---- communicators ----------------------------------------------------------------------------------- */

static void communicator_cases(void)
{
    const int R = 6;
    for (int cycle = 0; cycle < 2; cycle++) {
        /* odd/even halves; every other cycle in reversed rank order, so a plan kept for a recycled handle
         * would exchange with the wrong ranks */
        MPI_Comm half, dup;
        DH_MPI(MPI_Comm_split(MPI_COMM_WORLD, dh_rank % 2, cycle % 2 ? -dh_rank : dh_rank, &half));
        DH_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &dup));
        MPI_Comm_set_errhandler(half, MPI_ERRORS_RETURN);
        MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
        /* interleaved (per-communicator state), four calls of each shape on each */
        for (int i = 0; i < 8; i++) {
            MPI_Comm c = i % 2 ? dup : half;
            alltoall_once(c, &dc_int, 2, &dc_int, 2, 0, "sub-communicator");
            alltoallv_once(c, &dc_double, &v_odd_alternate, i / 2, 0);
            allreduce_once(c, MPI_DOUBLE, MPI_SUM, "SUM", 5, ip_never, i, "sub-communicator");
        }
        MPI_Comm_free(&half);
        MPI_Comm_free(&dup);
    }
    for (int i = 0; i < R; i++) {
        alltoall_once(MPI_COMM_SELF, &dc_double, 4, &dc_double, 4, 0, "MPI_COMM_SELF");
        allreduce_once(MPI_COMM_SELF, MPI_INT, MPI_SUM, "SUM", 4, ip_odd, i, "MPI_COMM_SELF");
    }
}

/* An intercommunicator between the even and the odd ranks: calls the layer must pass to MPI unchanged (issue 18,
 * item 3), with MPI's intercommunicator meaning (a process receives from the other group only). */
static void intercommunicator_cases(void)
{
    if (dh_size < 2) return;
    int color = dh_rank % 2;
    MPI_Comm half, inter;
    DH_MPI(MPI_Comm_split(MPI_COMM_WORLD, color, dh_rank, &half));
    DH_MPI(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, 1 - color, 99, &inter));
    MPI_Comm_set_errhandler(inter, MPI_ERRORS_RETURN);
    int rn;
    MPI_Comm_remote_size(inter, &rn);
    /* remote rank j is world rank 2j + (1 - color): the split kept the world order */
    for (int i = 0; i < 6; i++) {
        unsigned iter = dc_iteration++;
        const int c = 2;
        int *sbuf = malloc(sizeof(int) * (size_t)(rn * c + 1)), *rbuf = malloc(sizeof(int) * (size_t)(rn * c + 1));
        for (int j = 0; j < rn; j++)
            for (int k = 0; k < c; k++)
                sbuf[j * c + k] = (int)(dc_value(dh_rank, 2 * j + 1 - color, k, iter) & 0xfffff);
        for (int k = 0; k < rn * c + 1; k++) rbuf[k] = -1;
        DH_MPI(MPI_Alltoall(sbuf, c, MPI_INT, rbuf, c, MPI_INT, inter));
        for (int j = 0; j < rn; j++)
            for (int k = 0; k < c; k++) {
                int want = (int)(dc_value(2 * j + 1 - color, dh_rank, k, iter) & 0xfffff);
                DH_CHECK(rbuf[j * c + k] == want,
                         "intercommunicator alltoall (iteration %u): block %d element %d is %d, want %d", iter, j, k,
                         rbuf[j * c + k], want);
            }
        DH_CHECK(rbuf[rn * c] == -1, "intercommunicator alltoall (iteration %u) wrote past the end", iter);
        /* allreduce: each group gets the sum of the other group's inputs */
        iter = dc_iteration++;
        int in[3], out[4] = {-1, -1, -1, -1};
        for (int k = 0; k < 3; k++) dc_allreduce_input(MPI_INT, MPI_SUM, dh_rank, k, iter, &in[k]);
        DH_MPI(MPI_Allreduce(in, out, 3, MPI_INT, MPI_SUM, inter));
        for (int k = 0; k < 3; k++) {
            int want = 0;
            for (int j = 0; j < rn; j++) {
                int x;
                dc_allreduce_input(MPI_INT, MPI_SUM, 2 * j + 1 - color, k, iter, &x);
                want += x;
            }
            DH_CHECK(out[k] == want, "intercommunicator allreduce (iteration %u): element %d is %d, want %d", iter, k,
                     out[k], want);
        }
        DH_CHECK(out[3] == -1, "intercommunicator allreduce (iteration %u) wrote past the end", iter);
        free(sbuf);
        free(rbuf);
    }
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

int main(int argc, char **argv)
{
    dh_init(&argc, &argv, "dropin-blocking");
    dc_types_create();
    MPI_Op_create(xor_fn, 1, &user_op_xor);
    alltoall_cases();
    alltoallv_cases();
    allreduce_cases();
    communicator_cases();
    intercommunicator_cases();
    MPI_Op_free(&user_op_xor);
    dc_types_free();
    return dh_finish();
}
