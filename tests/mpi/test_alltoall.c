/* test_alltoall: correctness of every registered alltoall algorithm, in one mpiexec run.
 *
 * Each algorithm is forced in turn (PLANCOLL_ALGORITHM), then the planner chooses freely once under
 * PLANCOLL_ESTIMATE and once under PLANCOLL_MEASURE. Every run goes through the case table below (sizes 0,
 * 1, odd, medium and 1 MiB of receive buffer per rank; predefined, derived contiguous, derived
 * non-contiguous, derived with a positive lower bound, and mismatched-but-compatible datatypes; MPI_IN_PLACE)
 * on MPI_COMM_WORLD, and a subset on a parity split and on a reversed-order communicator. A forced algorithm
 * may declare a case inapplicable on every rank (counted and reported, not failed). Parameter sets the planner
 * might not pick are forced too (PLANCOLL_ALGORITHM=name:key=value; streaming stores into the node-shared
 * staging on a cross-section of the table), and each run prints which variants its plans ran. Each case:
 *   - fills the buffers, plans, and checks that planning touched neither buffer (derived types are freed
 *     right after planning: the plan keeps its own);
 *   - executes three times in a row with new data each time, checking every element exactly;
 *   - executes on a second pair of buffers (plancoll_execute_buffers) and checks that the first pair is
 *     untouched, then once more on the first pair and checks that the second pair is untouched;
 *   - checks after every execution that the send buffer is unchanged and that the receive buffer's bytes
 *     outside the received data (guards before and after, holes of non-contiguous types) keep a sentinel.
 * Finally, plans of every algorithm (and one on a sub-communicator that is freed right after planning) are
 * kept alive at once and executed interleaved.
 *
 * Data: word k of the block rank s sends rank d at execution `iter` is a hash of (case, s, d, k, iter), a
 * word being the base unit of the datatype (1 byte, a 4-byte int or an 8-byte double). Expected values are
 * computed from that formula, never with MPI.
 *
 * The datatype/buffer/check engine is exchange_engine.h, shared with test_alltoallv.c. */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define COLL "alltoall"
#include "exchange_engine.h"

/* ================================================================================================ */
/* alltoall cases                                                                                   */
/* ================================================================================================ */

static int coll_plan(struct inst *in, MPI_Datatype stype, MPI_Datatype rtype, unsigned flags)
{
    const struct geom *g = &in->g;
    return plancoll_plan_alltoall(g->in_place ? MPI_IN_PLACE : (const void *)in->send[0].base, g->scount[0], stype,
                                  in->recv[0].base, g->rcount[0], rtype, in->comm, flags, &in->plan);
}

#define BIG (-1) /* a block count giving at least 1 MiB of receive buffer per rank */

struct a2a_case {
    int dpair;
    int count; /* receive elements per block, or BIG */
    bool in_place;
};

static const struct a2a_case cases[] = {
    /*  0 */ {D_BYTE, 0, false},
    /*  1 */ {D_BYTE, 0, true},
    /*  2 */ {D_BYTE, 1, false},
    /*  3 */ {D_BYTE, 7, false},
    /*  4 */ {D_BYTE, 7, true},
    /*  5 */ {D_BYTE, 4099, false},
    /*  6 */ {D_INT, 1, false},
    /*  7 */ {D_INT, 33, false},
    /*  8 */ {D_INT, 33, true},
    /*  9 */ {D_DOUBLE, 7, false},
    /* 10 */ {D_DOUBLE, 1000, false},
    /* 11 */ {D_DOUBLE, 1000, true},
    /* 12 */ {D_COMPLEX, 1, false},
    /* 13 */ {D_COMPLEX, 33, false},
    /* 14 */ {D_COMPLEX, 7, true},
    /* 15 */ {D_CONTIG3, 7, false},
    /* 16 */ {D_CONTIG3, 333, false},
    /* 17 */ {D_CONTIG3, 33, true},
    /* 18 */ {D_VECTOR, 1, false},
    /* 19 */ {D_VECTOR, 33, false},
    /* 20 */ {D_VECTOR, 7, true},
    /* 21 */ {D_BYTES_TO_INTS, 2, false},
    /* 22 */ {D_BYTES_TO_INTS, 33, false},
    /* 23 */ {D_DOUBLE, BIG, false},
    /* 24 */ {D_SHIFTED, 7, false},
    /* 25 */ {D_SHIFTED, 33, true},
    /* 26 */ {D_VECTOR_TO_INTS, 66, false},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

/* The subset run on the sub-communicators. */
static const int subcomm_cases[] = {3, 8, 10, 19, 20, 22, 25};

static int case_count(const struct a2a_case *c, int P)
{
    if (c->count != BIG) return c->count;
    int rsize = tdescs[dpairs[c->dpair].recv].size;
    return (int)(((1u << 20) + (unsigned)(P * rsize) - 1) / (unsigned)(P * rsize));
}

/* Builds the instance of case c on comm (no plan yet). */
static void inst_init(struct inst *in, const char *alg, int case_index, MPI_Comm comm, const char *comm_name)
{
    const struct a2a_case *c = &cases[case_index];
    memset(in, 0, sizeof *in);
    in->alg = alg;
    in->comm = comm;
    in->comm_name = comm_name;
    geom_alloc(&in->g, comm, c->dpair, c->in_place);
    struct geom *g = &in->g;
    int rc = case_count(c, g->P);
    int sc = (int)((int64_t)rc * g->rt->size / g->st->size);
    TL_CHECK((int64_t)sc * g->st->size == (int64_t)rc * g->rt->size, "case table: %d x %s is not a whole number of %s",
             rc, g->rt->name, g->st->name);
    for (int j = 0; j < g->P; j++) {
        g->rcount[j] = rc;
        g->rdispl[j] = j * rc;
        g->scount[j] = g->in_place ? 0 : sc;
        g->sdispl[j] = j * sc;
    }
    geom_spans(g, 0); /* exactly P blocks: the guards catch writes past either end */
    snprintf(in->name, sizeof in->name, "%s x%d%s%s", dpairs[c->dpair].name, rc, c->count == BIG ? " (1 MiB)" : "",
             c->in_place ? " in-place" : "");
    in->salt = (uint64_t)case_index * 1000003u + (uint64_t)(c->in_place ? 7 : 0);
    inst_buffers(in);
}

/* One case, start to finish: plan, 3 executions, execute_buffers, execute again, destroy. */
static void run_case(const char *alg, const char *forced, unsigned flags, int case_index, MPI_Comm comm,
                     const char *comm_name)
{
    struct inst in;
    inst_init(&in, alg, case_index, comm, comm_name);
    if (inst_plan(&in, flags, forced, PLANCOLL_SUCCESS) > 0) {
        for (int iter = 0; iter < 3; iter++) inst_run(&in, 0, iter);
        inst_run(&in, 1, 3);
        inst_run(&in, 0, 4);
    }
    inst_destroy(&in);
}

#include "exchange_runner.h"

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "alltoall");
    double t_start = MPI_Wtime();
    check_tdescs();

    const char *algs[MAX_ALGS];
    int nalgs = tl_algorithms("alltoall", algs, MAX_ALGS);
    TL_CHECK(nalgs > 0, "no alltoall algorithm is registered");

    /* Parameter values the planner would not necessarily pick, forced so that each is tested: leader counts
     * (including more than a node has: clamped), NUMA-spread placement, a bounded pipeline, Bruck radices. */
    static const char *const param_runs[] = {
        "alltoall.mpml:leaders=2",           "alltoall.mpml:leaders=3:placement=numa", "alltoall.mpml:leaders=99",
        "alltoall.onmpml:leaders=2:depth=1", "alltoall.bruck:radix=3",                  "alltoall.bruck:radix=4",
        /* MPI_Put: the phased and the overlapped engine (alltoall.leader shares the phased path) */
        "alltoall.mpml:leaders=2:transport=put", "alltoall.onmpml:leaders=2:depth=1:transport=put",
    };
    /* Streaming stores into the node-shared staging (stores=stream, exec/reduce_stream.h), forced on each staging
     * algorithm over a cross-section of the table: bytes at odd counts (areas that start and end off a 16-byte
     * boundary), in place, doubles, a derived contiguous type, 1 MiB, a positive lower bound, and a vector type,
     * which MPI_Pack stages with ordinary stores whatever the mode. The runs above take stores=auto where the build
     * has streaming stores (the one mode the planner offers there, exec/store_chooser.h): streaming stores at the
     * first two executions, ordinary ones at the third (the chooser's first probe), then the faster. */
    static const int store_cases[] = {2, 5, 8, 10, 16, 19, 23, 24, -1};
    static const char *const store_runs[] = {"alltoall.leader:stores=stream", "alltoall.mpml:leaders=2:stores=stream",
                                             "alltoall.onmpml:leaders=2:depth=1:stores=stream",
                                             "alltoall.pap:stores=stream"};
    struct run runs[MAX_ALGS + 2 + sizeof param_runs / sizeof param_runs[0] + sizeof store_runs / sizeof store_runs[0]];
    int nruns = 0;
    for (int a = 0; a < nalgs; a++) runs[nruns++] = (struct run){algs[a], algs[a], PLANCOLL_ESTIMATE, NULL};
    for (size_t i = 0; i < sizeof param_runs / sizeof param_runs[0]; i++)
        runs[nruns++] = (struct run){param_runs[i], param_runs[i], PLANCOLL_ESTIMATE, NULL};
    for (size_t i = 0; i < sizeof store_runs / sizeof store_runs[0]; i++)
        runs[nruns++] = (struct run){store_runs[i], store_runs[i], PLANCOLL_ESTIMATE, store_cases};
    runs[nruns++] = (struct run){"auto-estimate", NULL, PLANCOLL_ESTIMATE, NULL};
    runs[nruns++] = (struct run){"auto-measure", NULL, PLANCOLL_MEASURE, NULL};

    static const struct interleaved_cases interleaved = {{8, 14, 11, 22, 4, 17, 25}, 20, 19};
    /* PLANCOLL_TEST_FEW's cross-section: zero and odd counts, in place, doubles, a derived contiguous type, a vector,
     * mismatched types, a positive lower bound in place */
    static const int few_cases[] = {0, 3, 4, 8, 10, 16, 19, 22, 25, -1};
    return exchange_run(algs, nalgs, runs, nruns, &interleaved, t_start, few_cases);
}
