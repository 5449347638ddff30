/* Prediction without MPI: signatures, problems of layouts that need not exist, and every candidate's predicted time
 * with ESTIMATE's choice (planner/predict.h, docs/predict.md). */
#include "planner/predict.h"

#include <complex.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plancoll_codes.h"
#include "base/errors.h"

/* The type ids are positions in exec/reduce.c's table, which registers MPI_INT, MPI_LONG, MPI_SHORT,
 * MPI_UNSIGNED_SHORT, MPI_UNSIGNED, MPI_UNSIGNED_LONG, MPI_LONG_LONG_INT, MPI_UNSIGNED_LONG_LONG, MPI_SIGNED_CHAR,
 * MPI_UNSIGNED_CHAR, the eight fixed-width integers (10-17), MPI_AINT, MPI_OFFSET, MPI_COUNT, MPI_INTEGER, then
 * MPI_FLOAT (22), MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_C_BOOL, MPI_LOGICAL,
 * MPI_C_FLOAT_COMPLEX (29), MPI_C_DOUBLE_COMPLEX, ..., MPI_BYTE (34) in this order when no two of them are the same
 * handle; the unit test checks every id against that table. */
const struct pc_signature_type pc_signature_types[] = {
    {"byte", 1, 34},
    {"char", (int)sizeof(signed char), 8},
    {"short", (int)sizeof(short), 2},
    {"int", (int)sizeof(int), 0},
    {"unsigned", (int)sizeof(unsigned), 4},
    {"long", (int)sizeof(long), 1},
    {"unsigned_long", (int)sizeof(unsigned long), 5},
    {"long_long", (int)sizeof(long long), 6},
    {"float", (int)sizeof(float), 22},
    {"double", (int)sizeof(double), 23},
    {"long_double", (int)sizeof(long double), 24},
    {"int8", 1, 10},
    {"int16", 2, 11},
    {"int32", 4, 12},
    {"int64", 8, 13},
    {"uint8", 1, 14},
    {"uint16", 2, 15},
    {"uint32", 4, 16},
    {"uint64", 8, 17},
    {"c_float_complex", (int)sizeof(float _Complex), 29},
    {"c_double_complex", (int)sizeof(double _Complex), 30},
    {NULL, 0, -1},
};

const char *const pc_signature_ops[PC_SIGNATURE_NOPS] = {"max",  "min",  "sum", "prod", "land",
                                                         "lor",  "lxor", "band", "bor", "bxor"};

static bool parse_count(const char *s, long long max, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end || errno || v < 0 || v > max) return false;
    *out = v;
    return true;
}

static int find_type(const char *s)
{
    for (int i = 0; pc_signature_types[i].name; i++)
        if (strcmp(pc_signature_types[i].name, s) == 0) return i;
    return -1;
}

const char *pc_signature_parse(const char *text, struct pc_signature *sig)
{
    char copy[256];
    if (strlen(text) >= sizeof copy) return "too long";
    snprintf(copy, sizeof copy, "%s", text);
    char *field[8];
    int n = 0;
    for (char *p = copy, *tok; n < 8 && (tok = strsep(&p, ":")) != NULL;) field[n++] = tok;
    memset(sig, 0, sizeof *sig);
    sig->type = find_type("byte");
    if (n >= 2 && strcmp(field[n - 1], "inplace") == 0) {
        sig->inplace = true;
        n--;
    }
    const long long max = 1LL << 30;
    if (strcmp(field[0], "alltoall") == 0) {
        sig->kind = PC_SIG_ALLTOALL;
        if (n == 3 && (sig->type = find_type(field[1])) < 0) return "unknown type";
        if (n != 2 && n != 3) return "expected alltoall:[TYPE:]COUNT[:inplace]";
        if (!parse_count(field[n - 1], max, &sig->count)) return "COUNT must be a number from 0 to 2^30";
        return NULL;
    }
    if (strcmp(field[0], "alltoallv") == 0) {
        if (n == 3 && strcmp(field[1], "uniform") == 0) {
            sig->kind = PC_SIG_ALLTOALLV_UNIFORM;
            if (!parse_count(field[2], max, &sig->count)) return "BYTES must be a number from 0 to 2^30";
            return NULL;
        }
        if (n == 4 && strcmp(field[1], "random") == 0) {
            sig->kind = PC_SIG_ALLTOALLV_RANDOM;
            long long seed;
            if (!parse_count(field[2], max, &sig->count)) return "MAXBYTES must be a number from 0 to 2^30";
            if (!parse_count(field[3], INT64_MAX, &seed)) return "SEED must be a non-negative number";
            sig->seed = (unsigned long long)seed;
            return NULL;
        }
        return "expected alltoallv:uniform:BYTES or alltoallv:random:MAXBYTES:SEED";
    }
    if (strcmp(field[0], "allreduce") == 0) {
        sig->kind = PC_SIG_ALLREDUCE;
        if (sig->inplace) return "allreduce takes no :inplace (its key does not depend on it)";
        if (n != 4) return "expected allreduce:TYPE:OP:COUNT";
        if ((sig->type = find_type(field[1])) < 0) return "unknown type";
        sig->op = 0;
        while (sig->op < PC_SIGNATURE_NOPS && strcmp(pc_signature_ops[sig->op], field[2]) != 0) sig->op++;
        if (sig->op == PC_SIGNATURE_NOPS) return "unknown op";
        if (!parse_count(field[3], INT32_MAX, &sig->count)) return "COUNT must be a number from 0 to 2^31-1";
        return NULL;
    }
    return "unknown collective (alltoall, alltoallv, allreduce)";
}

static uint64_t splitmix(uint64_t x)
{
    x += UINT64_C(0x9E3779B97F4A7C15);
    x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
    return x ^ (x >> 31);
}

uint64_t pc_signature_pair_bytes(const struct pc_signature *sig, int i, int j, int P)
{
    if (sig->kind == PC_SIG_ALLTOALLV_UNIFORM) return (uint64_t)sig->count;
    return splitmix(sig->seed ^ ((uint64_t)i * (uint64_t)P + (uint64_t)j)) % ((uint64_t)sig->count + 1);
}

/* ---- problems ---- */

void pc_problem_build(struct pc_problem *p, enum pc_collective coll, int nnodes, int ppn, int host_cores,
                      unsigned flags)
{
    memset(p, 0, sizeof *p);
    p->coll = coll;
    p->flags = flags;
    p->type_id = p->op_id = -1;
    p->contiguous = true;
    struct pc_shape *s = &p->shape;
    s->nranks = nnodes * ppn;
    s->nnodes = nnodes;
    s->min_ppn = s->max_ppn = ppn;
    s->host_ranks = ppn;
    s->host_cores = host_cores > 0 ? host_cores : ppn;
    s->oversubscribed = s->host_ranks > s->host_cores;
    s->numa_domains = 1;
    s->ranks_by_node = true;
}

void pc_problem_set_alltoall(struct pc_problem *p, uint64_t block_bytes, bool in_place)
{
    p->block_bytes = block_bytes;
    p->in_place = p->some_in_place = in_place;
}

void pc_problem_set_allreduce(struct pc_problem *p, int count, uint64_t elem_bytes, int type_id, int op_id,
                              bool commutative)
{
    p->count = count;
    p->elem_bytes = elem_bytes;
    p->type_id = type_id;
    p->op_id = op_id;
    p->commutative = op_id >= 0 ? true : commutative; /* every predefined op is commutative */
    p->mpi_op_differs = false;
}

int pc_problem_set_alltoallv(struct pc_problem *p, uint64_t (*bytes)(void *ctx, int i, int j), void *ctx,
                             bool in_place)
{
    const int P = p->shape.nranks, ppn = p->shape.max_ppn;
    const int N = (P + ppn - 1) / ppn;
    uint64_t *recv = calloc((size_t)P + 2 * (size_t)N, sizeof *recv), *node_out = recv + P, *node_in = node_out + N;
    if (!recv) return pc_error(PLANCOLL_ERR_NOMEM, "the column sums of a %d-rank alltoallv", P);
    struct pc_alltoallv_maxima mx = {0};
    for (int i = 0; i < P; i++) {
        uint64_t send = 0, offnode = 0;
        int nonzero = 0;
        for (int j = 0; j < P; j++) {
            uint64_t b = bytes(ctx, i, j);
            send += b;
            recv[j] += b;
            if (j / ppn != i / ppn) {
                offnode += b;
                node_out[i / ppn] += b;
                node_in[j / ppn] += b;
            }
            if (b > 0 && j != i) nonzero++;
            if (b > mx.block) mx.block = b;
        }
        if (i == 0) {
            p->send_total_bytes = send;
            p->nonzero_sends = nonzero;
        }
        if (send > mx.send) mx.send = send;
        if (offnode > mx.offnode) mx.offnode = offnode;
        if (nonzero > mx.nonzero_sends) mx.nonzero_sends = nonzero;
    }
    for (int j = 0; j < P; j++)
        if (recv[j] > mx.recv) mx.recv = recv[j];
    for (int n = 0; n < 2 * N; n++)
        if (node_out[n] > mx.node_offnode) mx.node_offnode = node_out[n]; /* node_in follows node_out */
    p->recv_total_bytes = recv[0];
    free(recv);
    uint64_t send0 = p->send_total_bytes, recv0 = p->recv_total_bytes;
    int nonzero0 = p->nonzero_sends;
    pc_problem_set_alltoallv_maxima(p, &mx, in_place);
    p->send_total_bytes = send0;
    p->recv_total_bytes = recv0;
    p->nonzero_sends = nonzero0;
    return PLANCOLL_SUCCESS;
}

void pc_problem_set_alltoallv_maxima(struct pc_problem *p, const struct pc_alltoallv_maxima *mx, bool in_place)
{
    p->max_send_bytes = mx->send;
    p->max_recv_bytes = mx->recv;
    p->max_offnode_bytes = mx->offnode;
    p->max_node_offnode_bytes = mx->node_offnode;
    p->max_block_bytes = mx->block;
    p->max_nonzero_sends = mx->nonzero_sends;
    /* rank 0's own figures, which no estimate reads (algorithm.h): the busiest rank's */
    p->send_total_bytes = mx->send;
    p->recv_total_bytes = mx->recv;
    p->nonzero_sends = mx->nonzero_sends;
    p->in_place = p->some_in_place = in_place;
}

void pc_signature_random_maxima(const struct pc_signature *sig, int nnodes, int ppn, struct pc_alltoallv_maxima *mx)
{
    /* A block is uniform on 0 .. M: mean M/2, variance ((M+1)^2 - 1)/12, nonzero with probability M/(M+1). A sum of
     * n blocks has mean n M/2 and sd sqrt(n var); the largest of P such sums (one per rank; rows and columns alike)
     * lies near mean + sd sqrt(2 ln P), the leading term of the Gaussian extreme. */
    const double P = (double)nnodes * ppn, M = (double)sig->count, var = ((M + 1) * (M + 1) - 1) / 12.0;
    const double z = P > 1 ? sqrt(2.0 * log(P)) : 0.0, nz = M / (M + 1);
    double send = P * M / 2 + z * sqrt(P * var), offnode = (P - ppn) * M / 2 + z * sqrt((P - ppn) * var);
    double nonzero = (P - 1) * nz + z * sqrt((P - 1) * nz * (1 - nz));
    if (send > P * M) send = P * M;
    if (offnode > (P - ppn) * M) offnode = (P - ppn) * M;
    if (nonzero > P - 1) nonzero = P - 1;
    mx->send = mx->recv = (uint64_t)llround(send);
    mx->offnode = (uint64_t)llround(offnode);
    mx->nonzero_sends = (int)llround(nonzero);
    mx->block = (uint64_t)sig->count; /* P^2 draws: the largest is M, or within M / P^2 of it */
    /* a node's off-node bytes out (or in): ppn (P - ppn) blocks, the largest of 2 nnodes such sums */
    const double cells = (double)ppn * (P - ppn), zn = nnodes > 1 ? sqrt(2.0 * log(2.0 * nnodes)) : 0.0;
    double node = cells * M / 2 + zn * sqrt(cells * var);
    if (node > cells * M) node = cells * M;
    mx->node_offnode = (uint64_t)llround(node);
}

struct signature_matrix {
    const struct pc_signature *sig;
    int P;
};

static uint64_t signature_bytes(void *ctx, int i, int j)
{
    const struct signature_matrix *x = ctx;
    return pc_signature_pair_bytes(x->sig, i, j, x->P);
}

int pc_signature_problem(const struct pc_signature *sig, int nnodes, int ppn, int host_cores, struct pc_problem *p)
{
    if (nnodes < 1 || ppn < 1 || (long long)nnodes * ppn > INT32_MAX)
        return pc_error(PLANCOLL_ERR_ARGUMENT, "layout %d x %d: nodes and ranks per node must be at least 1 and their "
                                               "product below 2^31", nnodes, ppn);
    const long long P = (long long)nnodes * ppn;
    const int tsize = sig->type >= 0 ? pc_signature_types[sig->type].size : 1;
    switch (sig->kind) {
    case PC_SIG_ALLTOALL: {
        uint64_t block = (uint64_t)sig->count * (uint64_t)tsize;
        if ((double)block * (double)P >= 0x1p60)
            return pc_error(PLANCOLL_ERR_OVERFLOW, "a rank's data reaches 2^60 bytes");
        pc_problem_build(p, PC_ALLTOALL, nnodes, ppn, host_cores, PLANCOLL_ESTIMATE);
        pc_problem_set_alltoall(p, block, sig->inplace);
        return PLANCOLL_SUCCESS;
    }
    case PC_SIG_ALLTOALLV_UNIFORM:
    case PC_SIG_ALLTOALLV_RANDOM: {
        pc_problem_build(p, PC_ALLTOALLV, nnodes, ppn, host_cores, PLANCOLL_ESTIMATE);
        const uint64_t B = (uint64_t)sig->count;
        if (sig->kind == PC_SIG_ALLTOALLV_UNIFORM) {
            /* every row and column alike: P blocks of B, P - ppn of them off-node */
            struct pc_alltoallv_maxima mx = {.send = B * (uint64_t)P, .recv = B * (uint64_t)P,
                                             .offnode = B * (uint64_t)(P - ppn), .block = B,
                                             .nonzero_sends = B > 0 ? (int)(P - 1) : 0,
                                             .node_offnode = B * (uint64_t)ppn * (uint64_t)(P - ppn)};
            pc_problem_set_alltoallv_maxima(p, &mx, sig->inplace);
            return PLANCOLL_SUCCESS;
        }
        if (P > PC_PREDICT_EXACT_RANDOM_P) {
            struct pc_alltoallv_maxima mx;
            pc_signature_random_maxima(sig, nnodes, ppn, &mx);
            pc_problem_set_alltoallv_maxima(p, &mx, sig->inplace);
            return PLANCOLL_SUCCESS;
        }
        struct signature_matrix ctx = {sig, (int)P};
        return pc_problem_set_alltoallv(p, signature_bytes, &ctx, sig->inplace);
    }
    case PC_SIG_ALLREDUCE:
        pc_problem_build(p, PC_ALLREDUCE, nnodes, ppn, host_cores, PLANCOLL_ESTIMATE);
        pc_problem_set_allreduce(p, (int)sig->count, (uint64_t)tsize, pc_signature_types[sig->type].type_id, sig->op,
                                 true);
        return PLANCOLL_SUCCESS;
    }
    return pc_error(PLANCOLL_ERR_ARGUMENT, "unknown signature kind");
}

/* ---- the prediction ---- */

int pc_predict(const struct pc_algorithm_table *algs, const struct pc_problem *p, const struct pc_machine_model *m,
               struct pc_prediction *out, int max, int *n, int *estimate)
{
    *n = 0;
    *estimate = -1;
    struct pc_candidate cands[PC_MAX_CANDIDATES];
    int nc = 0;
    int err = pc_enumerate(algs, p, NULL, 0, m, cands, PC_MAX_CANDIDATES, &nc);
    if (err) return err;
    /* ESTIMATE's choice by the planner's own rule: pc_choose without hooks decides locally, as rank 0 would */
    struct pc_decision d;
    struct pc_problem estimate_problem = *p;
    estimate_problem.flags &= ~(unsigned)(PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
    err = pc_choose(algs, &estimate_problem, cands, nc, false, NULL, NULL, &d);
    if (err) return err;
    for (int i = 0; i < nc && *n < max; i++) {
        struct pc_prediction *o = &out[(*n)++];
        memset(o, 0, sizeof *o);
        o->alg = cands[i].alg;
        o->params = cands[i].params;
        o->predicted_us = cands[i].predicted_us;
        o->busy_us = cands[i].busy_us;
        pc_spec_format(algs, cands[i].alg, &cands[i].params, o->spec, sizeof o->spec);
        if (*estimate < 0 && cands[i].alg == d.chosen.alg &&
            memcmp(&cands[i].params, &d.chosen.params, sizeof cands[i].params) == 0)
            *estimate = i;
    }
    return PLANCOLL_SUCCESS;
}
