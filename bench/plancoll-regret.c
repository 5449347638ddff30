/*
 * plancoll-regret: how good are the planner's choices on problems nobody picked for it? Each run draws K
 * signatures at random from a seed (printed, and written in the JSON, so the same draw can be run again) and,
 * for each, makes three plans of the same call: PLANCOLL_ESTIMATE (the model alone), PLANCOLL_MEASURE (the
 * model's best few timed) and PLANCOLL_EXHAUSTIVE (every applicable candidate timed: the candidates' best). The
 * distinct choices are then timed side by side, interleaved batch by batch, and for each choice
 *   ratio = time(chosen) / time(best)   (best: the fastest of the distinct choices in this timing)
 * is the median over batches of the per-batch paired ratio, with a distribution-free interval from the order
 * statistics of those ratios (the median's binomial interval, at least 95%). Regret = ratio - 1.
 *
 * A choice is right
 *   strictly         when its regret is at most 10% (MEASURE) or 25% (ESTIMATE), and
 *   within the noise when it is right strictly or its ratio's interval includes 1 (tied with the best).
 * The shares of right choices come with Wilson 95% intervals: they are estimates from K signatures.
 *
 *   mpiexec -n P plancoll-regret [--seed N] [--count K] [--quick] [--batches B] [--batch-ms MS] [--budget-mib M]
 *                                [--signature-seconds S] [--json FILE] [--config NAME] [--revision TEXT]
 *                                [--only alltoall|alltoallv|allreduce] [--list] [--draw-only]
 *
 * The draw (same on every rank: rank 0 picks the seed, every rank runs the same generator; signature i depends
 * only on the seed, i and P):
 * - collective: alltoall, alltoallv or allreduce, equally likely (--only keeps one);
 * - alltoall: block bytes per destination log-uniform in [1 B, 1 MiB] (any integer, not only powers of two),
 *   rounded to whole elements; datatype MPI_BYTE, MPI_CHAR, MPI_INT, MPI_FLOAT, MPI_DOUBLE or a contiguous
 *   derived type (2-12 ints, floats or doubles); in place one time in four;
 * - alltoallv: the largest block log-uniform in [1 B, 1 MiB], the datatypes as alltoall, and a pattern: uniform,
 *   random (each block uniform in [0, max]), sparse (each pair present with a drawn density 0.05-0.6), skewed
 *   (max * u^s, u uniform, skew s log-uniform in [1, 8]), heavy (one drawn rank sends max to everyone, the others
 *   a drawn fraction 0.001-0.2 of it) or hot (one drawn rank receives max from everyone, the others the fraction);
 *   in place one time in four (MPI needs the counts symmetric then: the matrix is mirrored);
 * - allreduce: vector bytes log-uniform in [1 B, 4 MiB] rounded to whole elements (odd counts included); MPI_INT,
 *   MPI_FLOAT or MPI_DOUBLE with MPI_SUM, MPI_MAX, MPI_MIN or MPI_PROD, or a contiguous type of 2-12 doubles with
 *   a user-defined commutative sum (MPI allows predefined ops on predefined types only); in place one time in four.
 * Memory: the user buffers of all ranks together stay within --budget-mib (default 512): a size that would exceed it
 * is drawn again (plancoll's own segments and MEASURE's temporary buffers come on top).
 * --draw-only prints the drawn signatures and stops (what a seed gives, nothing timed).
 * --list runs the old fixed list of 30 signatures instead (alltoall and allreduce at 8 B .. 1 MiB per rank in
 * powers of 8, alltoallv uniform, random, sparse with 3 neighbours and hot at 64 B, 1 KiB, 16 KiB, 128 KiB).
 *
 * Protocol (docs/measurement.md): warm-up, batches of at least 20 ms (--quick: 5 ms), yield-friendly barriers,
 * per-iteration maximum over ranks, batch means; 15 batches (--quick: 9), the plans' order rotated from batch to
 * batch. A signature's timing is held to about --signature-seconds (default 6, --quick 1.5) by shortening the
 * batches (to one execution at least); the planning itself (EXHAUSTIVE times every candidate) comes on top and is
 * reported. Results are written before MPI_Finalize, which MPICH 4.0.2 over UCX tcp can hang in (a watchdog ends
 * that hang); the last line printed is "# plancoll-regret finished: exit status N".
 */
#include <math.h>
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <plancoll.h>

#include "bench_mpi.h"

#define MAX_BATCHES 63
#define MAX_ITERS 4096
#define SPEC_LEN 128
#define LABEL_LEN 160
#define MEASURE_TOLERANCE 0.10
#define ESTIMATE_TOLERANCE 0.25
#define WILSON_Z 1.959964

enum coll { ALLTOALL, ALLTOALLV, ALLREDUCE };
static const char *const coll_names[] = {"alltoall", "alltoallv", "allreduce"};
enum type_kind { T_BYTE, T_CHAR, T_INT, T_FLOAT, T_DOUBLE, T_CONTIG };
static const char *const type_names[] = {"byte", "char", "int", "float", "double", "contig"};
enum pattern { UNIFORM, RANDOM, SPARSE, SKEWED, HEAVY, HOT, NEIGHBOURS };
static const char *const pattern_names[] = {"uniform", "random", "sparse", "skewed", "heavy", "hot", "neighbours"};
enum op_kind { OP_SUM, OP_MAX, OP_MIN, OP_PROD, OP_USER_SUM };
static const char *const op_names[] = {"sum", "max", "min", "prod", "user_sum"};

static int rank, nprocs;
static double batch_seconds = 0.020, signature_seconds = 6.0;
static int batches = 15;
/* --index: print every timed plan's time, to look into one result */
static bool show_timings;
static MPI_Op user_sum_op = MPI_OP_NULL;

/* One signature: what was drawn, and the call built from it. Counts are in elements of the datatype. */
struct call {
    enum coll coll;
    enum type_kind type_kind, contig_base; /* contig_base and contig_len for T_CONTIG */
    int contig_len;
    enum op_kind op_kind;
    enum pattern pattern;
    double pattern_param; /* sparse: density; skewed: skew; heavy, hot: the other ranks' fraction */
    int pattern_rank;     /* heavy: the sender; hot: the destination */
    bool in_place;
    int count;            /* alltoall: per block; allreduce: the vector; alltoallv: the largest block */
    size_t elem_size;     /* bytes of one element */
    size_t total_bytes;   /* user buffers over all ranks */
    char label[LABEL_LEN];
    MPI_Datatype type;
    MPI_Op op;
    char *send, *recv;
    int *scounts, *sdispls, *rcounts, *rdispls; /* alltoallv */
};

/* ---- random draws (the same on every rank: splitmix64 of bench_mpi.h) ---- */

static double uniform01(uint64_t *s) { return (double)(bench_random(s) >> 11) * 0x1.0p-53; }
static int below(uint64_t *s, int n) { return (int)(bench_random(s) % (uint64_t)n); }
static double log_uniform(uint64_t *s, double lo, double hi) { return exp(log(lo) + uniform01(s) * (log(hi) - log(lo))); }

static MPI_Datatype base_type(enum type_kind k)
{
    switch (k) {
    case T_BYTE: return MPI_BYTE;
    case T_CHAR: return MPI_CHAR;
    case T_INT: return MPI_INT;
    case T_FLOAT: return MPI_FLOAT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_CONTIG: break;
    }
    return MPI_DATATYPE_NULL;
}

static size_t base_size(enum type_kind k)
{
    switch (k) {
    case T_BYTE: case T_CHAR: return 1;
    case T_INT: return sizeof(int);
    case T_FLOAT: return sizeof(float);
    case T_DOUBLE: return sizeof(double);
    case T_CONTIG: break;
    }
    return 0;
}

/* The user-defined op of the contiguous allreduce: a commutative sum of the doubles the derived type holds. */
static void user_sum(void *in, void *inout, int *len, MPI_Datatype *type)
{
    int bytes;
    MPI_Type_size(*type, &bytes);
    size_t n = (size_t)*len * (size_t)bytes / sizeof(double);
    const double *a = in;
    double *b = inout;
    for (size_t i = 0; i < n; i++) b[i] += a[i];
}

static void draw_type(struct call *c, uint64_t *s, bool for_reduction)
{
    if (for_reduction) {
        static const enum type_kind kinds[] = {T_INT, T_FLOAT, T_DOUBLE, T_CONTIG};
        c->type_kind = kinds[below(s, 4)];
        if (c->type_kind == T_CONTIG) {
            c->contig_base = T_DOUBLE;
            c->op_kind = OP_USER_SUM;
        } else {
            c->op_kind = (enum op_kind)below(s, 4);
        }
    } else {
        c->type_kind = (enum type_kind)below(s, 6);
        static const enum type_kind bases[] = {T_INT, T_FLOAT, T_DOUBLE};
        if (c->type_kind == T_CONTIG) c->contig_base = bases[below(s, 3)];
    }
    if (c->type_kind == T_CONTIG) c->contig_len = 2 + below(s, 11);
    c->elem_size = c->type_kind == T_CONTIG ? (size_t)c->contig_len * base_size(c->contig_base) : base_size(c->type_kind);
}

static int bytes_to_count(double bytes, size_t elem_size)
{
    double n = floor(bytes / (double)elem_size + 0.5);
    return n < 1 ? 1 : (int)n;
}

/* The alltoallv matrix (elements rank i sends to rank j) at the largest block max. */
static void fill_matrix(const struct call *c, int *m, uint64_t *s)
{
    int P = nprocs, max = c->count;
    int small = (int)floor(max * c->pattern_param + 0.5);
    for (int i = 0; i < P; i++)
        for (int j = 0; j < P; j++) {
            int v = 0;
            switch (c->pattern) {
            case UNIFORM: v = max; break;
            case RANDOM: v = below(s, max + 1); break;
            case SPARSE: v = uniform01(s) < c->pattern_param ? max : 0; break;
            case SKEWED: v = (int)floor(max * pow(uniform01(s), c->pattern_param) + 0.5); break;
            case HEAVY: v = i == c->pattern_rank ? max : small; break;
            case HOT: v = j == c->pattern_rank ? max : small; break;
            case NEIGHBOURS: v = (j != i && (j == (i + 1) % P || j == (i + P / 2) % P || j == (i - 1 + P) % P)) ? max : 0; break;
            }
            m[i * P + j] = v;
        }
    if (c->in_place) /* MPI_IN_PLACE: rank i sends recvcounts[j] to j, which expects its recvcounts[i] from i */
        for (int i = 0; i < P; i++)
            for (int j = i + 1; j < P; j++) m[j * P + i] = m[i * P + j];
}

static size_t matrix_total(const int *m)
{
    size_t t = 0;
    for (int i = 0; i < nprocs * nprocs; i++) t += (size_t)m[i];
    return t;
}

/* Draws signature `index` of the run with seed `seed`, its sizes within budget bytes of user buffers in all. */
static void draw_signature(struct call *c, uint64_t seed, int index, const char *only, size_t budget, int *m)
{
    memset(c, 0, sizeof *c);
    uint64_t s = seed ^ (UINT64_C(0xD1B54A32D192ED03) * (uint64_t)(index + 1));
    bench_random(&s);
    int coll = below(&s, 3);
    if (only)
        for (int k = 0; k < 3; k++)
            if (strcmp(only, coll_names[k]) == 0) coll = k;
    c->coll = (enum coll)coll;
    draw_type(c, &s, c->coll == ALLREDUCE);
    c->in_place = uniform01(&s) < 0.25;
    if (c->coll == ALLTOALLV) {
        c->pattern = (enum pattern)below(&s, 6);
        if (c->pattern == SPARSE) c->pattern_param = 0.05 + 0.55 * uniform01(&s);
        if (c->pattern == SKEWED) c->pattern_param = log_uniform(&s, 1, 8);
        if (c->pattern == HEAVY || c->pattern == HOT) {
            c->pattern_param = log_uniform(&s, 0.001, 0.2);
            c->pattern_rank = below(&s, nprocs);
        }
    }
    size_t P = (size_t)nprocs, copies = c->in_place ? 1 : 2;
    for (int attempt = 0;; attempt++) {
        if (attempt == 1000) {
            if (rank == 0) fprintf(stderr, "plancoll-regret: no size of signature %d fits the budget\n", index);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        if (c->coll == ALLTOALL) {
            c->count = bytes_to_count(log_uniform(&s, 1, 1 << 20), c->elem_size);
            c->total_bytes = copies * P * P * (size_t)c->count * c->elem_size;
        } else if (c->coll == ALLREDUCE) {
            c->count = bytes_to_count(log_uniform(&s, 1, 4 << 20), c->elem_size);
            c->total_bytes = copies * P * (size_t)c->count * c->elem_size;
        } else {
            c->count = bytes_to_count(log_uniform(&s, 1, 1 << 20), c->elem_size);
            fill_matrix(c, m, &s);
            c->total_bytes = copies * matrix_total(m) * c->elem_size;
        }
        if (c->total_bytes <= budget) break;
    }
}

/* The old fixed list (--list): entry `index` of 30, or false past the end. */
static bool list_signature(struct call *c, int index, const char *only, int *m)
{
    static const size_t sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
    static const size_t vsizes[] = {64, 1024, 16384, 131072};
    static const enum pattern vpatterns[] = {UNIFORM, RANDOM, NEIGHBOURS, HOT};
    /* in the old order: 7 alltoall sizes, 16 alltoallv (4 patterns x 4 sizes), 7 allreduce sizes */
    for (int k = 0, seen = 0; k < 30; k++) {
        enum coll coll = k < 7 ? ALLTOALL : k < 23 ? ALLTOALLV : ALLREDUCE;
        int i = k < 7 ? k : k < 23 ? k - 7 : k - 23;
        if (only && strcmp(only, coll_names[coll]) != 0) continue;
        if (seen++ != index) continue;
        memset(c, 0, sizeof *c);
        c->coll = coll;
        if (c->coll == ALLTOALL) {
            c->type_kind = T_BYTE;
            c->count = sizes[i] / (size_t)nprocs > 0 ? (int)(sizes[i] / (size_t)nprocs) : 1;
        } else if (c->coll == ALLREDUCE) {
            c->type_kind = T_DOUBLE;
            c->op_kind = OP_SUM;
            c->count = (int)(sizes[i] / 8);
        } else {
            c->type_kind = T_BYTE;
            c->pattern = vpatterns[i / 4];
            c->count = (int)vsizes[i % 4];
            c->pattern_param = 1.0 / 8; /* hot: the others send an eighth */
            uint64_t s = UINT64_C(0x706c616e636f6c6c) ^ (uint64_t)i;
            fill_matrix(c, m, &s);
        }
        c->elem_size = base_size(c->type_kind);
        return true;
    }
    return false;
}

/* Builds the datatype, op, buffers and (alltoallv) the count arrays of a drawn signature, and its label. */
static void call_build(struct call *c, const int *m)
{
    int P = nprocs;
    if (c->type_kind == T_CONTIG) {
        MPI_Type_contiguous(c->contig_len, base_type(c->contig_base), &c->type);
        MPI_Type_commit(&c->type);
    } else {
        c->type = base_type(c->type_kind);
    }
    switch (c->op_kind) {
    case OP_SUM: c->op = MPI_SUM; break;
    case OP_MAX: c->op = MPI_MAX; break;
    case OP_MIN: c->op = MPI_MIN; break;
    case OP_PROD: c->op = MPI_PROD; break;
    case OP_USER_SUM: c->op = user_sum_op; break;
    }
    size_t selems = 0, relems = 0;
    char type_label[32], extra[64] = "";
    if (c->type_kind == T_CONTIG)
        snprintf(type_label, sizeof type_label, "contig(%dx%s)", c->contig_len, type_names[c->contig_base]);
    else
        snprintf(type_label, sizeof type_label, "%s", type_names[c->type_kind]);
    if (c->coll == ALLTOALL) {
        selems = relems = (size_t)c->count * (size_t)P;
        snprintf(c->label, sizeof c->label, "alltoall:%s:%d x %zu B blocks%s", type_label, c->count,
                 (size_t)c->count * c->elem_size, c->in_place ? ":in-place" : "");
    } else if (c->coll == ALLREDUCE) {
        selems = relems = (size_t)c->count;
        snprintf(c->label, sizeof c->label, "allreduce:%s:%s:%d elements (%zu B)%s", type_label, op_names[c->op_kind],
                 c->count, (size_t)c->count * c->elem_size, c->in_place ? ":in-place" : "");
    } else {
        c->scounts = malloc(sizeof(int) * 4 * (size_t)P);
        c->sdispls = c->scounts + P;
        c->rcounts = c->scounts + 2 * P;
        c->rdispls = c->scounts + 3 * P;
        for (int j = 0; j < P; j++) {
            c->scounts[j] = m[rank * P + j];
            c->rcounts[j] = m[j * P + rank];
            c->sdispls[j] = (int)selems;
            c->rdispls[j] = (int)relems;
            selems += (size_t)c->scounts[j];
            relems += (size_t)c->rcounts[j];
        }
        if (c->pattern == SPARSE) snprintf(extra, sizeof extra, "(density %.2f)", c->pattern_param);
        if (c->pattern == SKEWED) snprintf(extra, sizeof extra, "(skew %.2f)", c->pattern_param);
        if (c->pattern == HEAVY) snprintf(extra, sizeof extra, "(rank %d, others %.3f)", c->pattern_rank, c->pattern_param);
        if (c->pattern == HOT) snprintf(extra, sizeof extra, "(rank %d, others %.3f)", c->pattern_rank, c->pattern_param);
        snprintf(c->label, sizeof c->label, "alltoallv:%s%s:%s:max %d x %zu B, %zu B in all%s", pattern_names[c->pattern],
                 extra, type_label, c->count, (size_t)c->count * c->elem_size, matrix_total(m) * c->elem_size,
                 c->in_place ? ":in-place" : "");
    }
    size_t sbytes = c->in_place ? 0 : selems * c->elem_size, rbytes = relems * c->elem_size;
    c->send = malloc(sbytes ? sbytes : 8);
    c->recv = malloc(rbytes ? rbytes : 8);
    char *data = c->in_place ? c->recv : c->send;
    size_t dbytes = c->in_place ? rbytes : sbytes;
    memset(c->recv, 0, rbytes);
    bool floating = c->type_kind == T_FLOAT || c->type_kind == T_DOUBLE || c->type_kind == T_CONTIG;
    if (c->coll != ALLREDUCE || !floating) {
        /* moved bytes may be anything; ints combined wrap (PROD included) */
        for (size_t i = 0; i < dbytes; i++) data[i] = (char)(i * 7 + (size_t)rank);
    } else {
        /* values that stay normal under repeated in-place sums and products (no denormals to slow the loops) */
        size_t n = c->count * c->elem_size / (c->type_kind == T_FLOAT ? sizeof(float) : sizeof(double));
        for (size_t i = 0; i < n; i++) {
            double v = c->op_kind == OP_PROD ? (i % 3 ? 1.0 : -1.0) : (double)(rank + 1) * (1 + i % 5);
            if (c->type_kind == T_FLOAT)
                ((float *)data)[i] = (float)v;
            else
                ((double *)data)[i] = v;
        }
    }
}

static void call_free(struct call *c)
{
    free(c->send);
    free(c->recv);
    free(c->scounts);
    if (c->type_kind == T_CONTIG) MPI_Type_free(&c->type);
}

static int plan_call(const struct call *c, unsigned flags, plancoll_plan *p)
{
    const void *send = c->in_place ? MPI_IN_PLACE : c->send;
    switch (c->coll) {
    case ALLTOALL:
        return plancoll_plan_alltoall(send, c->count, c->type, c->recv, c->count, c->type, MPI_COMM_WORLD, flags, p);
    case ALLREDUCE:
        return plancoll_plan_allreduce(send, c->recv, c->count, c->type, c->op, MPI_COMM_WORLD, flags, p);
    case ALLTOALLV:
        return plancoll_plan_alltoallv(send, c->scounts, c->sdispls, c->type, c->recv, c->rcounts, c->rdispls, c->type,
                                       MPI_COMM_WORLD, flags, p);
    }
    return PLANCOLL_ERR_ARGUMENT;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "plancoll-regret [rank %d]: %s: %s (%s)\n", rank, what, plancoll_strerror(rc), plancoll_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Plans c; on failure (plancoll fails on every rank alike) writes the reason to error and returns NULL. */
static plancoll_plan try_plan(const struct call *c, unsigned flags, char *spec, double *seconds, char *error)
{
    plancoll_plan p = NULL;
    bench_barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = plan_call(c, flags, &p);
    double t = MPI_Wtime() - t0, tmax;
    bench_allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (seconds) *seconds = tmax;
    if (rc) {
        snprintf(error, LABEL_LEN, "%s plan: %s (%s)", flags == PLANCOLL_ESTIMATE ? "ESTIMATE" : flags == PLANCOLL_MEASURE ? "MEASURE" : "EXHAUSTIVE",
                 plancoll_strerror(rc), plancoll_error_detail());
        return NULL;
    }
    if (spec && (rc = plancoll_plan_spec(p, spec, SPEC_LEN))) die("plancoll_plan_spec", rc);
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The order statistics bounding the median of n values with at least 95% coverage: [x_(j), x_(n+1-j)] (1-based)
 * with j the largest for which P(Bin(n, 1/2) <= j - 1) <= 2.5%; *coverage is 1 - 2 P(Bin(n, 1/2) <= j - 1). */
static int median_interval_rank(int n, double *coverage)
{
    double cdf = 0, p = pow(0.5, n); /* P(B = 0) */
    int j = 0;
    for (int i = 0; i <= n; i++) {
        if (cdf + p > 0.025) break;
        cdf += p;
        j = i + 1;
        p = p * (n - i) / (i + 1);
    }
    *coverage = 1 - 2 * cdf;
    return j < 1 ? 1 : j;
}

struct ratio { double median, lo, hi; };

/* Times the n plans interleaved batch by batch (order rotated each batch); per plan the median of its batch means
 * (us), and per plan its ratio to the plan with the smallest median (*best): the median of the per-batch paired
 * ratios and its order-statistic interval. */
static void time_plans(plancoll_plan *plans, int n, double *us, struct ratio *ratio, int *best)
{
    static double t[MAX_ITERS], tmax[MAX_ITERS];
    int iters[3];
    double per[3], planned = 0;
    for (int i = 0; i < n; i++) {
        /* warm-up, then the batch length: loops of 3, 6, 12, ... executions (after a barrier; the slowest rank's
         * time, so every rank runs the same count) until one lasts batch_seconds. Found by running rather than
         * from one execution's time, because a plan in which a rank waits for no one (MPI's alltoallv on a one-way
         * pattern) slows as its loop grows: sized from 3 executions, its batches lasted seconds. */
        if (plancoll_execute(plans[i])) die("execute", PLANCOLL_ERR_ARGUMENT);
        int k = 3;
        for (;;) {
            bench_barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            for (int w = 0; w < k; w++)
                if (plancoll_execute(plans[i])) die("execute", PLANCOLL_ERR_ARGUMENT);
            double mine = MPI_Wtime() - t0, loop;
            bench_allreduce(&mine, &loop, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            per[i] = loop / k;
            if (loop >= batch_seconds || 2 * k > MAX_ITERS) break;
            k *= 2;
        }
        iters[i] = k;
        planned += batches * k * per[i];
    }
    if (planned > signature_seconds) /* shorten the batches to hold the signature's time */
        for (int i = 0; i < n; i++) {
            int k = (int)(iters[i] * signature_seconds / planned);
            iters[i] = k < 1 ? 1 : k;
        }
    double means[3][MAX_BATCHES];
    for (int b = 0; b < batches; b++)
        for (int o = 0; o < n; o++) {
            int i = (b + o) % n;
            bench_barrier(MPI_COMM_WORLD);
            for (int k = 0; k < iters[i]; k++) {
                double t0 = MPI_Wtime();
                plancoll_execute(plans[i]);
                t[k] = MPI_Wtime() - t0;
            }
            bench_allreduce(t, tmax, iters[i], MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            double sum = 0;
            for (int k = 0; k < iters[i]; k++) sum += tmax[k];
            means[i][b] = sum / iters[i] * 1e6;
        }
    double sorted[MAX_BATCHES];
    *best = 0;
    for (int i = 0; i < n; i++) {
        memcpy(sorted, means[i], sizeof(double) * (size_t)batches);
        qsort(sorted, (size_t)batches, sizeof(double), cmp_double);
        us[i] = sorted[batches / 2];
        if (us[i] < us[*best]) *best = i;
    }
    double coverage;
    int j = median_interval_rank(batches, &coverage);
    for (int i = 0; i < n; i++) {
        for (int b = 0; b < batches; b++) sorted[b] = means[i][b] / means[*best][b];
        qsort(sorted, (size_t)batches, sizeof(double), cmp_double);
        ratio[i].median = sorted[batches / 2];
        ratio[i].lo = sorted[j - 1];
        ratio[i].hi = sorted[batches - j];
    }
}

/* One planner choice judged against the best. */
struct verdict {
    char spec[SPEC_LEN];
    double us, regret, lo, hi; /* regret and its interval: ratio - 1 */
    bool strict, noise;
};

struct result {
    char signature[LABEL_LEN];
    char error[LABEL_LEN]; /* a plan that failed: the signature is left out of the shares */
    struct call *call;
    char best[SPEC_LEN];
    double best_us;
    struct verdict estimate, measure;
    double estimate_plan_ms, measure_plan_ms, exhaustive_plan_ms, wisdom_plan_ms, forced_plan_ms, seconds;
};

static void set_forced(const char *spec)
{
    if (spec)
        setenv("PLANCOLL_ALGORITHM", spec, 1);
    else
        unsetenv("PLANCOLL_ALGORITHM");
}

static void judge(struct verdict *v, double us, struct ratio r, double tolerance)
{
    v->us = us;
    v->regret = r.median - 1;
    v->lo = r.lo - 1;
    v->hi = r.hi - 1;
    v->strict = v->regret <= tolerance;
    v->noise = v->strict || v->lo <= 0;
}

static void run_signature(struct call *c, struct result *r)
{
    memset(r, 0, sizeof *r);
    r->call = c;
    snprintf(r->signature, sizeof r->signature, "%s", c->label);
    double start = MPI_Wtime(), secs;
    plancoll_forget_wisdom();
    plancoll_plan pe = NULL, px = NULL, pm = NULL, ph = NULL, pf = NULL;
    if (!(pe = try_plan(c, PLANCOLL_ESTIMATE, r->estimate.spec, &secs, r->error))) goto out;
    r->estimate_plan_ms = secs * 1e3;
    if (!(px = try_plan(c, PLANCOLL_EXHAUSTIVE, r->best, &secs, r->error))) goto out;
    r->exhaustive_plan_ms = secs * 1e3;
    plancoll_forget_wisdom();
    if (!(pm = try_plan(c, PLANCOLL_MEASURE, r->measure.spec, &secs, r->error))) goto out;
    r->measure_plan_ms = secs * 1e3;
    /* planning again with MEASURE is a wisdom hit; the same choice forced costs only its own set-up */
    if (!(ph = try_plan(c, PLANCOLL_MEASURE, NULL, &secs, r->error))) goto out;
    r->wisdom_plan_ms = secs * 1e3;
    set_forced(r->measure.spec);
    pf = try_plan(c, PLANCOLL_ESTIMATE, NULL, &secs, r->error);
    set_forced(NULL);
    if (!pf) goto out;
    r->forced_plan_ms = secs * 1e3;

    /* time the distinct choices */
    plancoll_plan distinct[3];
    const char *specs[3];
    int n = 0, of_e = -1, of_m = -1, of_x = -1;
    plancoll_plan all[3] = {px, pe, pm};
    const char *all_specs[3] = {r->best, r->estimate.spec, r->measure.spec};
    int *slot[3] = {&of_x, &of_e, &of_m};
    for (int i = 0; i < 3; i++) {
        int found = -1;
        for (int j = 0; j < n; j++)
            if (strcmp(specs[j], all_specs[i]) == 0) found = j;
        if (found < 0) {
            found = n;
            distinct[n] = all[i];
            specs[n++] = all_specs[i];
        }
        *slot[i] = found;
    }
    double us[3];
    struct ratio ratio[3];
    int fastest;
    time_plans(distinct, n, us, ratio, &fastest);
    if (show_timings && rank == 0)
        for (int i = 0; i < n; i++)
            printf("    timed %-80s %10.2f us (median of batch means), ratio to the fastest %.2f [%.2f, %.2f]\n",
                   specs[i], us[i], ratio[i].median, ratio[i].lo, ratio[i].hi);
    /* the best is the exhaustive choice unless one of the others beat it here */
    char fastest_spec[SPEC_LEN];
    snprintf(fastest_spec, sizeof fastest_spec, "%s", specs[fastest]); /* specs[] may point at r->best */
    snprintf(r->best, sizeof r->best, "%s", fastest_spec);
    r->best_us = us[fastest];
    judge(&r->estimate, us[of_e], ratio[of_e], ESTIMATE_TOLERANCE);
    judge(&r->measure, us[of_m], ratio[of_m], MEASURE_TOLERANCE);
    (void)of_x;
out:
    if (pf) plancoll_destroy_plan(&pf);
    if (ph) plancoll_destroy_plan(&ph);
    if (pm) plancoll_destroy_plan(&pm);
    if (px) plancoll_destroy_plan(&px);
    if (pe) plancoll_destroy_plan(&pe);
    r->seconds = MPI_Wtime() - start;
}

/* ---- reporting ---- */

struct share { int right, n; double lo, hi; };

static struct share wilson(int right, int n)
{
    struct share s = {right, n, 0, 1};
    if (n == 0) return s;
    double z = WILSON_Z, p = (double)right / n, d = 1 + z * z / n;
    double center = (p + z * z / (2.0 * n)) / d, half = z / d * sqrt(p * (1 - p) / n + z * z / (4.0 * n * n));
    s.lo = center - half < 0 ? 0 : center - half;
    s.hi = center + half > 1 ? 1 : center + half;
    return s;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void json_share(FILE *f, const char *name, struct share s)
{
    fprintf(f, "\"%s\":{\"right\":%d,\"of\":%d,\"share\":%.4f,\"wilson95\":[%.4f,%.4f]}", name, s.right, s.n,
            s.n ? (double)s.right / s.n : 0.0, s.lo, s.hi);
}

static void json_verdict(FILE *f, const char *name, const struct verdict *v)
{
    fprintf(f, "\"%s\":{\"spec\":", name);
    json_string(f, v->spec);
    fprintf(f, ",\"us\":%.3f,\"regret\":%.4f,\"regret_interval\":[%.4f,%.4f],\"right_strict\":%s,\"right_within_noise\":%s}",
            v->us, v->regret, v->lo, v->hi, v->strict ? "true" : "false", v->noise ? "true" : "false");
}

static void print_share(const char *what, struct share s)
{
    printf("#   %-32s %3d of %3d  %5.1f%%  (Wilson 95%%: %5.1f-%5.1f%%)\n", what, s.right, s.n,
           s.n ? 100.0 * s.right / s.n : 0.0, 100 * s.lo, 100 * s.hi);
}

static volatile sig_atomic_t final_code;
static void finalize_watchdog(int sig)
{
    (void)sig;
    _exit(final_code);
}

static void usage(void)
{
    fprintf(stderr, "usage: plancoll-regret [--seed N] [--count K] [--quick] [--batches B] [--budget-mib M]\n"
                    "                       [--batch-ms MS] [--signature-seconds S] [--json FILE] [--config NAME] [--revision TEXT]\n"
                    "                       [--only alltoall|alltoallv|allreduce] [--list] [--draw-only] [--index I]\n"
                    "  --index I  only signature I of the draw (as numbered in a run of the same seed and P), to look\n"
                    "             into one result again (with PLANCOLL_VERBOSE=1: every candidate's estimate and time)\n"
                    "  --batch-ms MS  each timed batch lasts at least MS ms (default 20, --quick 5): how a plan's time\n"
                    "             depends on how long it runs back to back\n");
}

int main(int argc, char **argv)
{
    const char *json = NULL, *config = "unnamed", *only = NULL, *revision = "unknown";
    bool quick = false, list = false, draw_only = false, seed_given = false, batches_given = false, seconds_given = false;
    unsigned long long seed = 0;
    int count = 30, index_only = -1;
    double budget_mib = 512, batch_ms = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (strcmp(a, "--quick") == 0) {
            quick = true;
        } else if (strcmp(a, "--list") == 0) {
            list = true;
        } else if (strcmp(a, "--draw-only") == 0) {
            draw_only = true;
        } else if (!v) {
            usage();
            return 2;
        } else if (strcmp(a, "--json") == 0) {
            json = argv[++i];
        } else if (strcmp(a, "--config") == 0) {
            config = argv[++i];
        } else if (strcmp(a, "--revision") == 0) {
            revision = argv[++i];
        } else if (strcmp(a, "--only") == 0 && (!strcmp(v, "alltoall") || !strcmp(v, "alltoallv") || !strcmp(v, "allreduce"))) {
            only = argv[++i];
        } else if (strcmp(a, "--seed") == 0 && (seed = strtoull(v, &end, 10), *v && !*end)) {
            seed_given = true;
            i++;
        } else if (strcmp(a, "--count") == 0 && (count = (int)strtol(v, &end, 10), *v && !*end && count > 0)) {
            i++;
        } else if (strcmp(a, "--index") == 0 && (index_only = (int)strtol(v, &end, 10), *v && !*end && index_only >= 0)) {
            show_timings = true;
            i++;
        } else if (strcmp(a, "--batches") == 0 && (batches = (int)strtol(v, &end, 10), *v && !*end)) {
            if (batches < 6 || batches > MAX_BATCHES) {
                fprintf(stderr, "plancoll-regret: --batches must be 6..%d (the median's 95%% interval needs 6)\n", MAX_BATCHES);
                return 2;
            }
            batches_given = true;
            i++;
        } else if (strcmp(a, "--batch-ms") == 0 && (batch_ms = strtod(v, &end), *v && !*end && batch_ms > 0)) {
            i++;
        } else if (strcmp(a, "--budget-mib") == 0 && (budget_mib = strtod(v, &end), *v && !*end && budget_mib > 0)) {
            i++;
        } else if (strcmp(a, "--signature-seconds") == 0 &&
                   (signature_seconds = strtod(v, &end), *v && !*end && signature_seconds > 0)) {
            seconds_given = true;
            i++;
        } else {
            usage();
            return 2;
        }
    }
    if (quick) {
        batch_seconds = 0.005;
        if (!batches_given) batches = 9;
        if (!seconds_given) signature_seconds = 1.5;
    }
    if (batch_ms > 0) batch_seconds = batch_ms * 1e-3;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    MPI_Op_create(user_sum, 1, &user_sum_op);

    /* rank 0's seed for everyone (drawn from the clock unless given) */
    if (!seed_given) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        seed = ((unsigned long long)ts.tv_sec * 1000003ULL + (unsigned long long)ts.tv_nsec) % 1000000000000ULL;
    }
    bench_bcast(&seed, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);

    int *matrix = malloc(sizeof(int) * (size_t)nprocs * (size_t)nprocs);
    size_t budget = (size_t)(budget_mib * 1048576.0);
    struct call *calls = calloc(list ? 30 : (size_t)count, sizeof *calls);
    int ncalls = 0;
    if (list) {
        while (ncalls < 30 && list_signature(&calls[ncalls], ncalls, only, matrix)) call_build(&calls[ncalls++], matrix);
    } else {
        for (; ncalls < (index_only >= 0 ? 1 : count); ncalls++) {
            draw_signature(&calls[ncalls], seed, index_only >= 0 ? index_only : ncalls, only, budget, matrix);
            call_build(&calls[ncalls], matrix);
        }
    }
    /* every rank must have drawn the same signatures: compare a hash of the labels */
    uint64_t hash = UINT64_C(1469598103934665603);
    for (int i = 0; i < ncalls; i++)
        for (const char *s = calls[i].label; *s; s++) hash = (hash ^ (unsigned char)*s) * UINT64_C(1099511628211);
    unsigned long long h[2] = {hash, ~hash}, hmax[2];
    bench_allreduce(h, hmax, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (hmax[0] != hash || hmax[1] != ~hash) die("the ranks drew different signatures", PLANCOLL_ERR_MISMATCH);
    if (draw_only) { /* the draw alone, to check what a seed gives without timing anything */
        if (rank == 0) {
            printf("# plancoll-regret: P=%d seed %llu, %d signatures (--draw-only)\n", nprocs, seed, ncalls);
            for (int i = 0; i < ncalls; i++) printf("%3d %s (%zu B of user buffers in all)\n", i, calls[i].label, calls[i].total_bytes);
            printf("# plancoll-regret finished: exit status 0\n");
            fflush(stdout);
        }
        for (int i = 0; i < ncalls; i++) call_free(&calls[i]);
        free(calls);
        free(matrix);
        MPI_Op_free(&user_sum_op);
        signal(SIGALRM, finalize_watchdog);
        alarm(5);
        MPI_Finalize();
        return 0;
    }

    /* calibration happens at the first unforced plan: do it before any timing, on a call of its own */
    double t0 = MPI_Wtime();
    plancoll_plan warm;
    char *warm_buf = calloc((size_t)nprocs, 2);
    int rc = plancoll_plan_alltoall(warm_buf, 1, MPI_BYTE, warm_buf + nprocs, 1, MPI_BYTE, MPI_COMM_WORLD,
                                    PLANCOLL_ESTIMATE, &warm);
    if (rc) die("first plan", rc);
    double calib = MPI_Wtime() - t0;
    plancoll_destroy_plan(&warm);
    free(warm_buf);
    double interval_coverage;
    int interval_rank = median_interval_rank(batches, &interval_coverage);
    if (rank == 0) {
        printf("# plancoll-regret %s: P=%d, %s, %d signatures, %d batches of >= %.0f ms (ratio interval: order statistics "
               "%d and %d, coverage %.1f%%), signature timing <= %.1f s, budget %.0f MiB, first plan (with calibration) %.2f s\n",
               config, nprocs, list ? "the old fixed list" : "random draw", ncalls, batches, batch_seconds * 1e3,
               interval_rank, batches + 1 - interval_rank, 100 * interval_coverage, signature_seconds, budget_mib, calib);
        if (!list) printf("# seed %llu (repeat with --seed %llu --count %d at the same P%s%s)\n", seed, seed, ncalls,
                          only ? " --only " : "", only ? only : "");
        printf("%3s %-78s %-40s %10s %-27s %-27s %7s\n", "#", "signature", "best", "best us", "ESTIMATE regret [95%]",
               "MEASURE regret [95%]", "s");
        fflush(stdout);
    }

    struct result *res = calloc((size_t)ncalls, sizeof *res);
    double run_start = MPI_Wtime();
    for (int i = 0; i < ncalls; i++) {
        run_signature(&calls[i], &res[i]);
        if (rank == 0) {
            struct result *r = &res[i];
            if (r->error[0]) {
                printf("%3d %-78s FAILED: %s\n", index_only >= 0 ? index_only : i, r->signature, r->error);
            } else {
                char e[40], m[40];
                snprintf(e, sizeof e, "%6.1f%% [%5.1f,%6.1f] %c%c", 100 * r->estimate.regret, 100 * r->estimate.lo,
                         100 * r->estimate.hi, r->estimate.strict ? 'S' : '-', r->estimate.noise ? 'N' : '-');
                snprintf(m, sizeof m, "%6.1f%% [%5.1f,%6.1f] %c%c", 100 * r->measure.regret, 100 * r->measure.lo,
                         100 * r->measure.hi, r->measure.strict ? 'S' : '-', r->measure.noise ? 'N' : '-');
                printf("%3d %-78s %-40s %10.2f %-27s %-27s %7.1f\n", index_only >= 0 ? index_only : i, r->signature, r->best, r->best_us, e, m, r->seconds);
                printf("    ESTIMATE %s, MEASURE %s\n", r->estimate.spec, r->measure.spec);
            }
            fflush(stdout);
        }
    }
    double run_seconds = MPI_Wtime() - run_start;

    int judged = 0, failed = 0, e_strict = 0, e_noise = 0, m_strict = 0, m_noise = 0, hit_ok = 0;
    for (int i = 0; i < ncalls; i++) {
        if (res[i].error[0]) {
            failed++;
            continue;
        }
        judged++;
        e_strict += res[i].estimate.strict;
        e_noise += res[i].estimate.noise;
        m_strict += res[i].measure.strict;
        m_noise += res[i].measure.noise;
        hit_ok += res[i].wisdom_plan_ms - res[i].forced_plan_ms < 1.0;
    }
    struct share se = wilson(e_strict, judged), sen = wilson(e_noise, judged), sm = wilson(m_strict, judged),
                 smn = wilson(m_noise, judged);
    final_code = failed ? 1 : 0;
    if (rank == 0) {
        char drawn[48] = "the old fixed list";
        if (!list) snprintf(drawn, sizeof drawn, "seed %llu", seed);
        printf("# %s P=%d %s: %d signatures judged, %d failed to plan, %.0f s (%.1f s per signature)\n", config,
               nprocs, drawn, judged, failed, run_seconds, ncalls ? run_seconds / ncalls : 0.0);
        print_share("MEASURE within 10% (strict)", sm);
        print_share("MEASURE right within the noise", smn);
        print_share("ESTIMATE within 25% (strict)", se);
        print_share("ESTIMATE right within the noise", sen);
        printf("#   wisdom hit within 1 ms of the forced plan's set-up: %d of %d\n", hit_ok, judged);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                perror(json);
                final_code = 1;
            } else {
                fprintf(f, "{\"benchmark\":\"plancoll-regret\",\"configuration\":");
                json_string(f, config);
                fprintf(f, ",\"revision\":");
                json_string(f, revision);
                fprintf(f, ",\"ranks\":%d,\"mode\":\"%s\",\"seed\":%llu,\"count\":%d,\"only\":", nprocs,
                        list ? "list" : "random", seed, ncalls);
                json_string(f, only ? only : "");
                fprintf(f, ",\"quick\":%s,\"batches\":%d,\"batch_ms\":%.1f,\"signature_seconds\":%.2f,\"budget_mib\":%.0f,"
                           "\"interval_coverage\":%.4f,\"tolerance\":{\"measure\":%.2f,\"estimate\":%.2f},"
                           "\"first_plan_seconds\":%.3f,\"run_seconds\":%.1f,\"results\":[\n",
                        quick ? "true" : "false", batches, batch_seconds * 1e3, signature_seconds, budget_mib,
                        interval_coverage, MEASURE_TOLERANCE, ESTIMATE_TOLERANCE, calib, run_seconds);
                for (int i = 0; i < ncalls; i++) {
                    struct result *r = &res[i];
                    struct call *c = r->call;
                    fprintf(f, "{\"index\":%d,\"signature\":", i);
                    json_string(f, r->signature);
                    fprintf(f, ",\"collective\":\"%s\",\"datatype\":\"%s\",\"contig\":%d,\"contig_base\":\"%s\","
                               "\"elem_bytes\":%zu,\"count\":%d,\"in_place\":%s,\"total_bytes\":%zu",
                            coll_names[c->coll], type_names[c->type_kind], c->contig_len,
                            c->type_kind == T_CONTIG ? type_names[c->contig_base] : "", c->elem_size, c->count,
                            c->in_place ? "true" : "false", c->total_bytes);
                    if (c->coll == ALLREDUCE) fprintf(f, ",\"op\":\"%s\"", op_names[c->op_kind]);
                    if (c->coll == ALLTOALLV)
                        fprintf(f, ",\"pattern\":\"%s\",\"pattern_param\":%.4f,\"pattern_rank\":%d", pattern_names[c->pattern],
                                c->pattern_param, c->pattern_rank);
                    if (r->error[0]) {
                        fprintf(f, ",\"error\":");
                        json_string(f, r->error);
                    } else {
                        fprintf(f, ",\"best\":");
                        json_string(f, r->best);
                        fprintf(f, ",\"best_us\":%.3f,", r->best_us);
                        json_verdict(f, "estimate", &r->estimate);
                        fputc(',', f);
                        json_verdict(f, "measure", &r->measure);
                        fprintf(f, ",\"estimate_plan_ms\":%.3f,\"measure_plan_ms\":%.3f,\"exhaustive_plan_ms\":%.3f,"
                                   "\"wisdom_hit_plan_ms\":%.3f,\"forced_plan_ms\":%.3f",
                                r->estimate_plan_ms, r->measure_plan_ms, r->exhaustive_plan_ms, r->wisdom_plan_ms,
                                r->forced_plan_ms);
                    }
                    fprintf(f, ",\"seconds\":%.2f}%s\n", r->seconds, i + 1 < ncalls ? "," : "");
                }
                fprintf(f, "],\"summary\":{\"judged\":%d,\"failed\":%d,", judged, failed);
                json_share(f, "measure_strict", sm);
                fputc(',', f);
                json_share(f, "measure_within_noise", smn);
                fputc(',', f);
                json_share(f, "estimate_strict", se);
                fputc(',', f);
                json_share(f, "estimate_within_noise", sen);
                fprintf(f, ",\"wisdom_hit_within_1ms\":%d}}\n", hit_ok);
                fclose(f);
            }
        }
        printf("# plancoll-regret finished: exit status %d\n", (int)final_code);
        fflush(stdout);
    }
    for (int i = 0; i < ncalls; i++) call_free(&calls[i]);
    free(calls);
    free(res);
    free(matrix);
    MPI_Op_free(&user_sum_op);
    /* MPICH 4.0.2 over UCX tcp can hang in MPI_Finalize (tests/mpi/testlib.h): the results are out already */
    signal(SIGALRM, finalize_watchdog);
    alarm(5);
    MPI_Finalize();
    return final_code;
}
