/* test_alltoallv: correctness of every registered alltoallv algorithm, in one mpiexec run.
 *
 * Each algorithm is forced in turn (PLANCOLL_ALGORITHM), then the planner chooses freely once under
 * PLANCOLL_ESTIMATE and once under PLANCOLL_MEASURE. Every run goes through the case table below on
 * MPI_COMM_WORLD, and a subset on a parity split and on a reversed-order communicator. The count matrix of a
 * case (how many elements rank s sends rank d) comes from a pattern and a seed shared by every rank, so each
 * rank knows the whole matrix: uniform, uniform-random in [0, max], sparse (each rank sends to 1-3 peers,
 * large blocks), all zero, one hot destination, one rank that sends nothing, and 1 MiB of receive buffer per
 * rank. Displacements are either packed in rank order or scattered: blocks in a seeded order that is not rank
 * order, with gaps between them, whose bytes must keep their sentinel, and zero-count blocks pointing past the
 * buffer. Datatypes and MPI_IN_PLACE as in test_alltoall (in place needs a symmetric count matrix: those cases
 * symmetrise theirs). A forced algorithm may declare a case inapplicable on every rank (counted and reported,
 * not failed); each run prints which algorithm variants its plans ran. Each case:
 *   - fills the buffers, plans, and checks that planning touched neither buffer (derived types are freed
 *     right after planning: the plan keeps its own);
 *   - executes three times in a row with new data each time, checking every element exactly;
 *   - executes on a second pair of buffers (plancoll_execute_buffers) and checks that the first pair is
 *     untouched, then once more on the first pair and checks that the second pair is untouched;
 *   - checks after every execution that the send buffer is unchanged and that no receive-buffer byte outside
 *     the received blocks (guards, gaps, datatype holes) was written.
 * Mismatch cases give recvcounts that disagree with the matching sendcounts: planning must fail with
 * PLANCOLL_ERR_MISMATCH on every rank, without hanging and without touching the buffers.
 * Finally, plans of every algorithm (and one on a sub-communicator that is freed right after planning) are
 * kept alive at once and executed interleaved.
 *
 * Data: word k of the block rank s sends rank d at execution `iter` is a hash of (case, s, d, k, iter), a
 * word being the base unit of the datatype (1 byte, a 4-byte int or an 8-byte double). Expected values are
 * computed from that formula, never with MPI.
 *
 * The datatype/buffer/check engine is exchange_engine.h, shared with test_alltoall.c. */
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define COLL "alltoallv"
#include "exchange_engine.h"

/* ================================================================================================ */
/* alltoallv cases                                                                                  */
/* ================================================================================================ */

static int coll_plan(struct inst *in, MPI_Datatype stype, MPI_Datatype rtype, unsigned flags)
{
    const struct geom *g = &in->g;
    if (g->in_place)
        return plancoll_plan_alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, in->recv[0].base, g->rcount,
                                       g->rdispl, rtype, in->comm, flags, &in->plan);
    return plancoll_plan_alltoallv(in->send[0].base, g->scount, g->sdispl, stype, in->recv[0].base, g->rcount,
                                   g->rdispl, rtype, in->comm, flags, &in->plan);
}

enum pattern {
    PAT_UNIFORM, /* every block param elements */
    PAT_RANDOM,  /* uniform-random in [0, param] */
    PAT_SPARSE,  /* each rank sends to 1-3 peers (itself possibly among them), param..1.5 param elements */
    PAT_ZERO,    /* nothing at all */
    PAT_HOT,     /* every rank sends param + s elements to rank P-1, 0-3 to the others */
    PAT_SILENT,  /* rank P/2 sends nothing; the others random in [0, param] */
    PAT_BIG,     /* uniform, at least 1 MiB of receive buffer per rank */
};
static const char *const pattern_names[] = {"uniform", "random", "sparse", "zero", "hot-destination",
                                            "silent-rank", "uniform-1MiB"};

enum dmode { PACKED, SCATTERED }; /* displacements in rank order without gaps, or out of order with gaps */

enum mismatch {
    MIS_NONE,
    MIS_ONE,  /* rank P-1 expects one element more from rank 0 than rank 0 sends */
    MIS_ALL,  /* every rank expects one element fewer from its left neighbour than it sends */
    MIS_ASYM, /* in place with a count matrix that is not symmetric */
};
static const char *const mismatch_names[] = {"", "one pair off by one", "every rank off by one",
                                             "asymmetric in place"};

struct v_case {
    enum pattern pat;
    int param;
    int dpair;
    enum dmode mode;
    bool in_place;
    enum mismatch mis;
};

static const struct v_case cases[] = {
    /*  0 */ {PAT_UNIFORM, 1, D_INT, PACKED, false, MIS_NONE},
    /*  1 */ {PAT_UNIFORM, 7, D_BYTE, SCATTERED, false, MIS_NONE},
    /*  2 */ {PAT_UNIFORM, 33, D_DOUBLE, PACKED, true, MIS_NONE},
    /*  3 */ {PAT_UNIFORM, 7, D_COMPLEX, SCATTERED, false, MIS_NONE},
    /*  4 */ {PAT_UNIFORM, 500, D_DOUBLE, SCATTERED, false, MIS_NONE},
    /*  5 */ {PAT_RANDOM, 40, D_INT, SCATTERED, false, MIS_NONE},
    /*  6 */ {PAT_RANDOM, 9, D_DOUBLE, PACKED, true, MIS_NONE},
    /*  7 */ {PAT_RANDOM, 12, D_CONTIG3, SCATTERED, false, MIS_NONE},
    /*  8 */ {PAT_RANDOM, 9, D_VECTOR, SCATTERED, false, MIS_NONE},
    /*  9 */ {PAT_RANDOM, 9, D_VECTOR, SCATTERED, true, MIS_NONE},
    /* 10 */ {PAT_RANDOM, 20, D_BYTES_TO_INTS, SCATTERED, false, MIS_NONE},
    /* 11 */ {PAT_RANDOM, 1500, D_BYTE, PACKED, false, MIS_NONE},
    /* 12 */ {PAT_RANDOM, 5, D_COMPLEX, SCATTERED, true, MIS_NONE},
    /* 13 */ {PAT_SPARSE, 4099, D_DOUBLE, SCATTERED, false, MIS_NONE},
    /* 14 */ {PAT_SPARSE, 2001, D_CONTIG3, PACKED, false, MIS_NONE},
    /* 15 */ {PAT_ZERO, 0, D_INT, PACKED, false, MIS_NONE},
    /* 16 */ {PAT_ZERO, 0, D_BYTE, SCATTERED, true, MIS_NONE},
    /* 17 */ {PAT_HOT, 3001, D_INT, SCATTERED, false, MIS_NONE},
    /* 18 */ {PAT_SILENT, 30, D_DOUBLE, SCATTERED, false, MIS_NONE},
    /* 19 */ {PAT_SILENT, 11, D_INT, PACKED, true, MIS_NONE},
    /* 20 */ {PAT_BIG, 0, D_DOUBLE, SCATTERED, false, MIS_NONE},
    /* 21 */ {PAT_RANDOM, 10, D_INT, PACKED, false, MIS_ONE},
    /* 22 */ {PAT_UNIFORM, 5, D_DOUBLE, SCATTERED, false, MIS_ALL},
    /* 23 */ {PAT_RANDOM, 10, D_INT, SCATTERED, true, MIS_ASYM},
    /* 24 */ {PAT_RANDOM, 9, D_SHIFTED, SCATTERED, false, MIS_NONE},
    /* 25 */ {PAT_RANDOM, 9, D_SHIFTED, PACKED, true, MIS_NONE},
    /* 26 */ {PAT_RANDOM, 10, D_VECTOR_TO_INTS, SCATTERED, false, MIS_NONE},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* The subset run on the sub-communicators. */
static const int subcomm_cases[] = {5, 6, 9, 13, 18, 21};

/* The count matrix of case c (in receive elements), row s = what rank s sends, identical on every rank. */
static void count_matrix(const struct v_case *c, int P, uint64_t seed, int *C)
{
    uint64_t st = seed;
    const int rsize = tdescs[dpairs[c->dpair].recv].size;
    memset(C, 0, sizeof(int) * (size_t)P * (size_t)P);
    for (int s = 0; s < P; s++) {
        int npeers = 1 + (int)(tl_rand(&st) % 3);
        for (int d = 0; d < P; d++) {
            int v = 0;
            switch (c->pat) {
            case PAT_UNIFORM: v = c->param; break;
            case PAT_RANDOM: v = (int)(tl_rand(&st) % (uint64_t)(c->param + 1)); break;
            case PAT_ZERO: v = 0; break;
            case PAT_HOT: v = d == P - 1 ? c->param + s : (int)(tl_rand(&st) % 4); break;
            case PAT_SILENT: v = s == P / 2 ? 0 : (int)(tl_rand(&st) % (uint64_t)(c->param + 1)); break;
            case PAT_BIG: v = (int)(((1u << 20) + (unsigned)(P * rsize) - 1) / (unsigned)(P * rsize)); break;
            case PAT_SPARSE: break;
            }
            C[s * P + d] = v;
        }
        if (c->pat == PAT_SPARSE)
            for (int k = 0; k < npeers; k++) { /* a repeated peer just gets one block */
                int d = (int)(tl_rand(&st) % (uint64_t)P);
                C[s * P + d] = c->param + (int)(tl_rand(&st) % (uint64_t)(c->param / 2 + 1));
            }
    }
    const int ssize = tdescs[dpairs[c->dpair].send].size;
    if (ssize > rsize) /* whole send elements: vector (8 B) -> int (4 B) needs even int counts */
        for (int i = 0; i < P * P; i++) C[i] *= ssize / rsize;
    if (c->in_place && c->mis != MIS_ASYM) /* in place, what r sends j is what it receives from j */
        for (int s = 0; s < P; s++)
            for (int d = 0; d < s; d++) C[s * P + d] = C[d * P + s];
    if (c->mis == MIS_ASYM && P > 1) C[0 * P + (P - 1)] = C[(P - 1) * P + 0] + 1;
}

/* Displacements (in elements) of P blocks of the given counts: packed in rank order, or in a seeded order
 * with a gap of 1-3 elements before each block and zero-count blocks pointing past the end of the buffer
 * (MPI never touches them). */
static void displacements(enum dmode mode, int P, const int *count, uint64_t seed, int *displ)
{
    int *order = malloc(sizeof(int) * (size_t)(P > 0 ? P : 1));
    for (int j = 0; j < P; j++) order[j] = j;
    uint64_t st = seed;
    if (mode == SCATTERED)
        for (int j = P - 1; j > 0; j--) { /* Fisher-Yates; reversed when it happens to give rank order */
            int k = (int)(tl_rand(&st) % (uint64_t)(j + 1));
            int t = order[j];
            order[j] = order[k];
            order[k] = t;
        }
    if (mode == SCATTERED && P > 1) {
        bool identity = true;
        for (int j = 0; j < P; j++) identity = identity && order[j] == j;
        if (identity)
            for (int j = 0; j < P; j++) order[j] = P - 1 - j;
    }
    int at = 0;
    for (int i = 0; i < P; i++) {
        if (mode == SCATTERED) at += 1 + (int)(tl_rand(&st) % 3);
        displ[order[i]] = at;
        at += count[order[i]];
    }
    if (mode == SCATTERED)
        for (int j = 0; j < P; j++)
            if (count[j] == 0) displ[j] = at + 1000 + j;
    free(order);
}

/* Builds the instance of case c on comm (no plan yet). */
static void inst_init(struct inst *in, const char *alg, int case_index, MPI_Comm comm, const char *comm_name)
{
    const struct v_case *c = &cases[case_index];
    memset(in, 0, sizeof *in);
    in->alg = alg;
    in->comm = comm;
    in->comm_name = comm_name;
    geom_alloc(&in->g, comm, c->dpair, c->in_place);
    struct geom *g = &in->g;
    const int P = g->P, me = g->me;
    in->salt = (uint64_t)case_index * 1000003u + 11;
    int *C = malloc(sizeof(int) * (size_t)P * (size_t)P);
    count_matrix(c, P, in->salt * 31 + (uint64_t)P, C);
    for (int j = 0; j < P; j++) {
        g->rcount[j] = C[j * P + me];
        g->scount[j] = g->in_place ? 0 : (int)((int64_t)C[me * P + j] * g->rt->size / g->st->size);
    }
    free(C);
    if (c->mis == MIS_ONE && me == P - 1) g->rcount[0]++;
    if (c->mis == MIS_ALL) {
        int left = (me - 1 + P) % P;
        g->rcount[left] = g->rcount[left] > 0 ? g->rcount[left] - 1 : 1;
    }
    displacements(c->mode, P, g->rcount, in->salt ^ mix64((uint64_t)me + 1), g->rdispl);
    if (!g->in_place) displacements(c->mode, P, g->scount, in->salt ^ mix64((uint64_t)me + 1000), g->sdispl);
    geom_spans(g, c->mode == SCATTERED ? 2 : 0);
    int n = snprintf(in->name, sizeof in->name, "%s", pattern_names[c->pat]);
    if (c->pat != PAT_ZERO && c->pat != PAT_BIG) n += snprintf(in->name + n, sizeof in->name - (size_t)n, "(%d)", c->param);
    n += snprintf(in->name + n, sizeof in->name - (size_t)n, " %s %s%s", dpairs[c->dpair].name,
                  c->mode == PACKED ? "packed" : "scattered", c->in_place ? " in-place" : "");
    if (c->mis != MIS_NONE) snprintf(in->name + n, sizeof in->name - (size_t)n, ", mismatch: %s", mismatch_names[c->mis]);
    inst_buffers(in);
}

/* Whether case c must fail with PLANCOLL_ERR_MISMATCH on a communicator of P ranks. */
static bool expects_mismatch(const struct v_case *c, int P) { return c->mis != MIS_NONE && !(c->mis == MIS_ASYM && P == 1); }

/* One case, start to finish: plan, 3 executions, execute_buffers, execute again, destroy. */
static void run_case(const char *alg, const char *forced, unsigned flags, int case_index, MPI_Comm comm,
                     const char *comm_name)
{
    struct inst in;
    inst_init(&in, alg, case_index, comm, comm_name);
    int expect = expects_mismatch(&cases[case_index], in.g.P) ? PLANCOLL_ERR_MISMATCH : PLANCOLL_SUCCESS;
    if (inst_plan(&in, flags, forced, expect) > 0) {
        for (int iter = 0; iter < 3; iter++) inst_run(&in, 0, iter);
        inst_run(&in, 1, 3);
        inst_run(&in, 0, 4);
    }
    inst_destroy(&in);
}

#include "exchange_runner.h"

/* MPI_Put over TCP on an oversubscribed host costs scheduler slices per flush (MPI_Win_flush spins inside MPI): the
 * Put runs each take a different cross-section of the table, on MPI_COMM_WORLD, to keep the suite's time. */
static const int put_cases_a[] = {5, 9, 13, 21, 26, -1}; /* random, in-place vector, sparse, mismatch, vector->int */
static const int put_cases_b[] = {6, 8, 17, 18, -1};     /* random in place, vector, hot destination, silent rank */
/* The radix-3 Bruck runs: random sizes in and out of place, a non-contiguous type, sparse, hot destination, a
 * silent rank (the rest of the table runs at the planner's own parameters). */
static const int radix_cases[] = {5, 6, 9, 13, 17, 19, -1};

/* Run-ahead (docs/design.md): rank 0 sends 8 bytes to every rank and receives nothing, so it waits for no one
 * unless the algorithm makes it. Rank 1 starts its executions RUN_AHEAD_DELAY_S late; with spread-out and two-phase
 * Bruck, whose sends to a peer that sends nothing back are synchronous, rank 0's second execution cannot end before
 * rank 1 has matched its first message, so rank 0's two executions last about the delay (without the synchronous
 * sends, microseconds: eager copies). Every receiver's data is checked too. */
#define RUN_AHEAD_DELAY_S 0.15
static void check_run_ahead_bounded(void)
{
#if defined(PC_MPI_SIMULATED) && PC_MPI_SIMULATED
    return; /* SMPI: simulated time does not pass in a rank's wait loop, and its messages are not eager copies */
#endif
    if (tl_size < 2) return;
    static const char *const bounded[] = {"alltoallv.spreadout", "alltoallv.twophase_bruck"};
    const int P = tl_size;
    int *sc = calloc((size_t)P, sizeof(int)), *sd = calloc((size_t)P, sizeof(int));
    int *rc = calloc((size_t)P, sizeof(int)), *rd = calloc((size_t)P, sizeof(int));
    unsigned char *sbuf = calloc((size_t)P * 8, 1), rbuf[8];
    TL_CHECK(sc && sd && rc && rd && sbuf, "run-ahead case: out of memory");
    if (!sc || !sd || !rc || !rd || !sbuf) return;
    for (int j = 0; j < P; j++) {
        sd[j] = 8 * j;
        if (tl_rank == 0 && j != 0) sc[j] = 8;
        for (int b = 0; b < 8; b++) sbuf[8 * j + b] = (unsigned char)(j * 8 + b + 1);
    }
    if (tl_rank != 0) rc[0] = 8;
    for (size_t a = 0; a < sizeof bounded / sizeof bounded[0]; a++) {
        tl_force(bounded[a]);
        plancoll_plan plan = NULL;
        TL_OK(plancoll_plan_alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rc, rd, MPI_BYTE, MPI_COMM_WORLD,
                                      PLANCOLL_ESTIMATE, &plan));
        tl_force(NULL);
        if (!plan) continue;
        memset(rbuf, 0, sizeof rbuf);
        tl_barrier(MPI_COMM_WORLD);
        if (tl_rank == 1) {
            double until = MPI_Wtime() + RUN_AHEAD_DELAY_S;
            while (MPI_Wtime() < until) sched_yield();
        }
        double t0 = MPI_Wtime();
        TL_OK(plancoll_execute(plan));
        TL_OK(plancoll_execute(plan));
        double took = MPI_Wtime() - t0;
        if (tl_rank == 0)
            TL_CHECK(took >= RUN_AHEAD_DELAY_S / 2,
                     "%s: the rank that receives nothing ran two executions in %.1f ms while rank 1 started %.0f ms "
                     "late: it runs ahead", bounded[a], took * 1e3, RUN_AHEAD_DELAY_S * 1e3);
        else
            for (int b = 0; b < 8; b++)
                TL_CHECK(rbuf[b] == (unsigned char)(tl_rank * 8 + b + 1), "%s: rank %d byte %d is %u, expected %u",
                         bounded[a], tl_rank, b, rbuf[b], (unsigned)(tl_rank * 8 + b + 1));
        TL_OK(plancoll_destroy_plan(&plan));
    }
    free(sc);
    free(sd);
    free(rc);
    free(rd);
    free(sbuf);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "alltoallv");
    double t_start = MPI_Wtime();
    check_tdescs();
    check_run_ahead_bounded();

    const char *algs[MAX_ALGS];
    int nalgs = tl_algorithms("alltoallv", algs, MAX_ALGS);
    TL_CHECK(nalgs > 0, "no alltoallv algorithm is registered");

    /* Parameter values the planner would not necessarily pick, forced so that each is tested. Radix 3 gives Bruck
     * steps with digit values above 1 (radix 2 and 4 are the planner's own variants), on a few cases: the
     * in-process simulations (tests/unit/test_bruckv_sim.c) cover radix 3 at every P up to 64. Where they make a
     * difference (more than one node): MPI_Put (not offered on oversubscribed hosts), one leader per node (it sends
     * and receives every message of its node) with each message cut in three pieces, two leaders with MPI_Put. */
    static const struct run radix_runs[] = {
        {"alltoallv.padded_bruck:radix=3", "alltoallv.padded_bruck:radix=3", PLANCOLL_ESTIMATE, radix_cases},
        {"alltoallv.twophase_bruck:radix=3", "alltoallv.twophase_bruck:radix=3", PLANCOLL_ESTIMATE, radix_cases},
    };
    static const struct run param_runs[] = {
        {"alltoallv.aggregated:transport=put", "alltoallv.aggregated:transport=put", PLANCOLL_ESTIMATE, put_cases_a},
        {"alltoallv.aggregated:leaders=1:segments=3", "alltoallv.aggregated:leaders=1:segments=3", PLANCOLL_ESTIMATE,
         NULL},
        {"alltoallv.aggregated:leaders=2:transport=put", "alltoallv.aggregated:leaders=2:transport=put",
         PLANCOLL_ESTIMATE, put_cases_b},
    };
    /* Streaming stores into the node-shared areas (stores=stream, exec/reduce_stream.h), on one node as on several,
     * over a cross-section of the table: bytes at odd counts, scattered (areas that start and end off a 16-byte
     * boundary), in place, random, sparse, a hot destination, 1 MiB, a positive lower bound, and a vector type,
     * which MPI_Pack stages with ordinary stores whatever the mode. */
    static const int store_cases[] = {1, 2, 5, 11, 13, 17, 20, 24, 8, -1};
    static const struct run store_runs[] = {
        {"alltoallv.aggregated:stores=stream", "alltoallv.aggregated:stores=stream", PLANCOLL_ESTIMATE, store_cases},
    };
    MPI_Comm node;
    int node_size;
    tl_split_node(MPI_COMM_WORLD, 0, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    const bool multi_node = node_size < tl_size; /* the same on every rank: one node holds all or none */
    struct run runs[MAX_ALGS + 2 + sizeof radix_runs / sizeof radix_runs[0] + sizeof param_runs / sizeof param_runs[0] +
                    sizeof store_runs / sizeof store_runs[0]];
    int nruns = 0;
    for (int a = 0; a < nalgs; a++) runs[nruns++] = (struct run){algs[a], algs[a], PLANCOLL_ESTIMATE, NULL};
    for (size_t i = 0; i < sizeof radix_runs / sizeof radix_runs[0]; i++) runs[nruns++] = radix_runs[i];
    for (size_t i = 0; i < sizeof store_runs / sizeof store_runs[0]; i++) runs[nruns++] = store_runs[i];
    for (size_t i = 0; multi_node && i < sizeof param_runs / sizeof param_runs[0]; i++) runs[nruns++] = param_runs[i];
    runs[nruns++] = (struct run){"auto-estimate", NULL, PLANCOLL_ESTIMATE, NULL};
    runs[nruns++] = (struct run){"auto-measure", NULL, PLANCOLL_MEASURE, NULL};

    static const struct interleaved_cases interleaved = {{5, 13, 2, 17, 10, 7, 6}, 9, 8};
    /* PLANCOLL_TEST_FEW's cross-section: uniform in place, random, a vector in place, sparse, all zero in place, a hot
     * receiver, a silent sender, mismatched types (one rank, asymmetric in place), a positive lower bound */
    static const int few_cases[] = {2, 5, 9, 13, 16, 17, 18, 21, 23, 24, -1};
    return exchange_run(algs, nalgs, runs, nruns, &interleaved, t_start, few_cases);
}
