/* Prediction without MPI (plancoll-predict, docs/predict.md): the candidates the planner would enumerate for a
 * collective on a layout of N nodes x K ranks that need not exist, each with the time the planner's own cost
 * functions give it, and the candidate ESTIMATE would choose. Everything here is pure: signatures are parsed without
 * MPI datatypes (element sizes and type ids by name), problems are built from the signature and the layout, and the
 * algorithm table is passed in (the executors' registry, exec/registry.h, in the command). */
#ifndef PC_PREDICT_H
#define PC_PREDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner/planner.h"

/* ---- signatures: plancoll-wisdom's syntax (wisdom/FORMAT.md, "Signatures") ---- */

/* A predefined element type by name: its size in bytes and its index in the library's predefined type table
 * (exec/reduce.c pc_predefined_type_id, the index a calibrated model's reduce lines use). The ids are those of
 * MPICH and Open MPI as built here: tests/unit/test_predict.c compares them with pc_predefined_type_id. */
struct pc_signature_type {
    const char *name;
    int size;
    int type_id;
};
/* The types a signature may name (byte, char, short, int, ..., c_double_complex), NULL-name terminated. */
extern const struct pc_signature_type pc_signature_types[];
/* Ops by name, index = op id (pc_predefined_op_id's order: max min sum prod land lor lxor band bor bxor). */
#define PC_SIGNATURE_NOPS 10
extern const char *const pc_signature_ops[PC_SIGNATURE_NOPS];

enum pc_signature_kind { PC_SIG_ALLTOALL, PC_SIG_ALLTOALLV_UNIFORM, PC_SIG_ALLTOALLV_RANDOM, PC_SIG_ALLREDUCE };

struct pc_signature {
    enum pc_signature_kind kind;
    int type;        /* index in pc_signature_types (byte when the signature names none) */
    int op;          /* op id (allreduce) */
    long long count; /* elements (alltoall, allreduce) or bytes per pair (alltoallv uniform, random maximum) */
    unsigned long long seed;
    bool inplace;
};

/* Parses alltoall:[TYPE:]COUNT[:inplace], alltoallv:uniform:BYTES[:inplace], alltoallv:random:MAXBYTES:SEED
 * [:inplace] or allreduce:TYPE:OP:COUNT. Returns NULL, or what is wrong (static text). */
const char *pc_signature_parse(const char *text, struct pc_signature *sig);

/* Bytes rank i sends rank j under an alltoallv signature on P ranks: plancoll-wisdom's matrix (random: splitmix64 of
 * seed ^ (i P + j), modulo MAXBYTES + 1), so a prediction and a measured plan of the same signature agree. */
uint64_t pc_signature_pair_bytes(const struct pc_signature *sig, int i, int j, int P);

/* ---- problems without MPI ---- */

/* The problem a communicator of nnodes x ppn ranks, placed by node (node k holds ranks k ppn .. (k+1) ppn - 1), would
 * present for coll, with flags (PLANCOLL_ESTIMATE for a prediction); host_cores is the cores of one node (0:
 * unknown, taken as a core per rank), so that ppn > host_cores makes the shape oversubscribed as the census would.
 * One NUMA domain per node. The collective's own fields are set by the functions below. */
void pc_problem_build(struct pc_problem *p, enum pc_collective coll, int nnodes, int ppn, int host_cores,
                      unsigned flags);
/* alltoall: block_bytes per (source, destination) pair. */
void pc_problem_set_alltoall(struct pc_problem *p, uint64_t block_bytes, bool in_place);
/* allreduce: count elements of elem_bytes, predefined type_id and op_id (-1: derived type / user op; commutative
 * then as given, else true). MPI's own op is taken to agree with plancoll's (mpi_op_differs false): the prediction
 * cannot ask the MPI library. */
void pc_problem_set_allreduce(struct pc_problem *p, int count, uint64_t elem_bytes, int type_id, int op_id,
                              bool commutative);
/* alltoallv from the count matrix, exactly as plan creation agrees on it (the maxima over ranks of the bytes sent,
 * received, sent off-node and of the nonzero sends, the largest block; this rank = rank 0 for the per-rank fields).
 * bytes(ctx, i, j) gives what rank i sends rank j. O(P^2): for a matrix of a formula at scale, set the maxima
 * directly (pc_problem_set_alltoallv_maxima). Returns PLANCOLL_SUCCESS or PLANCOLL_ERR_NOMEM. */
int pc_problem_set_alltoallv(struct pc_problem *p, uint64_t (*bytes)(void *ctx, int i, int j), void *ctx,
                             bool in_place);
struct pc_alltoallv_maxima {
    uint64_t send, recv, offnode, block;
    int nonzero_sends;
    uint64_t node_offnode; /* the busiest node's off-node bytes, out or in (0: unknown, problem.h) */
};
void pc_problem_set_alltoallv_maxima(struct pc_problem *p, const struct pc_alltoallv_maxima *mx, bool in_place);

/* Largest P at which pc_signature_problem computes a random alltoallv's maxima from the whole matrix; above it they
 * are the expected extremes (docs/predict.md, "Random alltoallv at scale"). */
#define PC_PREDICT_EXACT_RANDOM_P 4096
/* The expected maxima of a random alltoallv signature on nnodes x ppn (the extreme of P row sums of P uniform draws:
 * mean + sd sqrt(2 ln P)). */
void pc_signature_random_maxima(const struct pc_signature *sig, int nnodes, int ppn, struct pc_alltoallv_maxima *mx);
/* The problem of sig on nnodes x ppn (host_cores as pc_problem_build), flags PLANCOLL_ESTIMATE. Returns
 * PLANCOLL_SUCCESS, PLANCOLL_ERR_ARGUMENT for a layout out of range (P = nnodes ppn from 1 to 2^31 - 1),
 * PLANCOLL_ERR_OVERFLOW for a rank's data of 2^60 bytes or more, or PLANCOLL_ERR_NOMEM. */
int pc_signature_problem(const struct pc_signature *sig, int nnodes, int ppn, int host_cores, struct pc_problem *p);

/* ---- the prediction ---- */

struct pc_prediction {
    int alg; /* index in the algorithm table */
    struct pc_params params;
    char spec[160];      /* PLANCOLL_ALGORITHM syntax, every parameter named (pc_spec_format) */
    double predicted_us; /* what the planner ranks by: the estimate, or the host-wide work bound */
    double busy_us;
};

/* Every candidate pc_enumerate lists for p (at most max, in enumeration order) with its prediction under m, and in
 * *estimate the index of the one pc_choose takes at ESTIMATE rigor (p->flags should be PLANCOLL_ESTIMATE).
 * Returns PLANCOLL_SUCCESS or the enumeration's error (PLANCOLL_ERR_INAPPLICABLE: no candidate). */
int pc_predict(const struct pc_algorithm_table *algs, const struct pc_problem *p, const struct pc_machine_model *m,
               struct pc_prediction *out, int max, int *n, int *estimate);

#endif
