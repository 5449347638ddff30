/* The reduction of an allreduce: which (op, datatype) pairs MPI allows, and the fast loops for the common ones. */
#ifndef PC_REDUCE_H
#define PC_REDUCE_H

#include <mpi.h>
#include <stdbool.h>

#include "base/errors.h"
#include "shm/mpi_error.h"


/* How the reduction of one allreduce is carried out: a vectorised loop, or MPI_Reduce_local. */
typedef void (*pc_reduce_fn)(const void *in, void *inout, int count);
typedef void (*pc_reduce3_fn)(const void *a, const void *b, void *out, int count);
typedef void (*pc_reduce3d_fn)(const void *a, const void *b, void *out, void *dup, int count);
typedef void (*pc_settle_fn)(void *buf, int count);
struct pc_reduction {
    MPI_Op op;
    MPI_Datatype type;
    pc_reduce_fn fast;   /* NULL: use MPI_Reduce_local */
    pc_reduce3_fn fast3; /* the same loop writing a third buffer; NULL with fast */
    pc_reduce3d_fn fast3d; /* ... and a fourth with the same result; NULL with fast */
    pc_reduce3_fn fast3_stream; /* fast3 streaming its results out (reduce_stream.h); NULL: blocked over fast3 */
    /* Floating and complex SUM and PROD: replaces every NaN of count elements by the default NaN. MPI's collective
     * may combine two NaNs in one order on one rank and in the other on another (x86 keeps the first operand's
     * payload and sign), so what MPI computed is settled with this before it is a result; NULL otherwise. */
    pc_settle_fn settle_nans;
    MPI_Aint true_lb, extent, true_extent; /* of type: where a vector's bytes lie */
};
/* inout[i] = in[i] op inout[i], the MPI_Reduce_local convention (in comes first in rank order). */
int pc_reduce(const struct pc_reduction *r, const void *in, void *inout, int count);
/* out[i] = a[i] op b[i] (a first in rank order) in one pass; out overlaps neither input. Without a fast loop: b's
 * bytes (gaps of a non-contiguous type included) are copied to out, then MPI_Reduce_local, so out must be
 * plancoll's own memory. */
int pc_reduce3(const struct pc_reduction *r, const void *a, const void *b, void *out, int count);
/* pc_reduce3 with streaming stores into out (reduce_stream.h), the same bits: the op's own streaming kernel, else
 * fast3 block by block streamed out of L1. Without a fast loop (MPI_Reduce_local) ordinary stores: pc_reduce3. The
 * caller fences (pc_stream_fence) before it lets another rank read out. */
int pc_reduce3_stream(const struct pc_reduction *r, const void *a, const void *b, void *out, int count);
/* out[i] = dup[i] = a[i] op b[i] in one pass; only with a fast loop (r->fast3d), contiguous types. */
int pc_reduce3_dup(const struct pc_reduction *r, const void *a, const void *b, void *out, void *dup, int count);

/* Index of a predefined datatype in plancoll's table, or -1. */
int pc_predefined_type_id(MPI_Datatype type);
/* Index of a predefined op, or -1 (a user op, or not a reduction op). */
int pc_predefined_op_id(MPI_Op op);
/* The tables walked by id (calibration): how many types, and the handle of an id (NULL handle past the end). */
int pc_predefined_type_count(void);
MPI_Datatype pc_predefined_type(int id);
MPI_Op pc_predefined_op(int id);
/* Fills r for (op, type). Returns PLANCOLL_SUCCESS, or PLANCOLL_ERR_OP / PLANCOLL_ERR_DATATYPE with a
 * message when MPI does not allow op on type. *commutative receives the op's commutativity. */
int pc_reduction_init(struct pc_reduction *r, MPI_Op op, MPI_Datatype type, bool *commutative);
/* *differs: MPI's own op can give other results than plancoll's loops for r's (op, type) (a predefined pair, found
 * once per process on a table of tricky values), so candidates that let MPI reduce must not run it. False for user
 * ops (MPI applies the same function). Local: every rank must still agree (plan.c). */
int pc_reduction_mpi_differs(const struct pc_reduction *r, bool *differs);

#endif
