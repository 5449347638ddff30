/* Which (op, datatype) pairs MPI allows, and the fast loops for the common ones. */
#ifndef PC_REDUCE_H
#define PC_REDUCE_H

#include <mpi.h>
#include <stdbool.h>

#include "plan.h"

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
