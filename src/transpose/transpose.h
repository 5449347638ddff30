/* The distributed-matrix transpose, a kind of plan (exec/plan.h, struct pc_plan_ops): what the API's
 * plancoll_plan_transpose and plancoll_local_size_transposed (src/api/transpose_api.c) build it with. Internal. */
#ifndef PC_TRANSPOSE_H
#define PC_TRANSPOSE_H

#include <stddef.h>

#include "exec/plan.h"

/* The matrix's sizes: PLANCOLL_ERR_COUNT when negative, _OVERFLOW when n0 n1 passes PTRDIFF_MAX. */
int pc_transpose_check_sizes(ptrdiff_t n0, ptrdiff_t n1);

/* The exchange a transpose plan runs inside: alltoall of count units each way when sendcounts is NULL, else
 * alltoallv with the four arrays (one entry per rank). The buffers are the transpose's own scratch. */
struct pc_transpose_exchange {
    const void *sendbuf;
    void *recvbuf;
    MPI_Datatype unit;
    int count;
    const int *sendcounts, *sdispls, *recvcounts, *rdispls;
    MPI_Comm comm;
    unsigned flags;
};
/* Plans an exchange as an ordinary collective plan (collective; every rank's failure fails all) and hands it
 * over: the transpose owns *inner from then on and frees it with pc_plan_free. The API passes its pipeline in,
 * since planning a collective (agreement, planner, wisdom) is the API's work, above this layer. */
typedef int (*pc_transpose_plan_exchange)(const struct pc_transpose_exchange *x, struct plancoll_plan_s **inner);

/* Makes p (fresh from the API: layout attached, nothing else) a transpose of the n0 x n1 matrix of element
 * distributed by rows over p's communicator, from in to out (in == out: in place), planning its exchange with
 * plan_exchange; with pieces (not NULL) a plan in *pieces pieces of input rows (checked like the other arguments). Collective: local checks, then one allreduce so that every rank fails alike. On failure p holds
 * what it got so far, for pc_plan_free. */
int pc_transpose_build(struct plancoll_plan_s *p, ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in,
                       void *out, MPI_Comm comm, unsigned flags, const int *pieces,
                       pc_transpose_plan_exchange plan_exchange);

/* The transpose state of p, or NULL when p is not a transpose plan. */
struct pc_transpose *pc_transpose_of(const struct plancoll_plan_s *p);

/* Plans in pieces (plancoll_plan_transpose_pieces; pieces.c). Each returns a code with the detail set. */
/* p's pieces (0: not a transpose plan in pieces). */
int pc_transpose_pieces(const struct plancoll_plan_s *p);
/* This rank's local input rows of piece k. */
int pc_transpose_piece_rows(const struct plancoll_plan_s *p, int k, ptrdiff_t *lo, ptrdiff_t *count);
/* The next start of p begins with its first piece only (one: plancoll_start_piece(0)), or with every piece. */
void pc_transpose_first_start_pieces(struct plancoll_plan_s *p, bool one);
/* Piece k (> 0) of the active execution: it must be the next one. Marks it started (the next advance moves it). */
int pc_transpose_start_next_piece(struct plancoll_plan_s *p, int k);
/* Pieces of the execution in progress not yet started (0 for other plans). */
int pc_transpose_pieces_unstarted(const struct plancoll_plan_s *p);

#endif
