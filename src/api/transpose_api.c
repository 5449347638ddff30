/* The public entries of the distributed transpose (plancoll.h): the API's checks, the plan's allocation and
 * handle, and the collectives' pipeline for the inner exchange; src/transpose builds the transpose kind itself. */
#include <stddef.h>

#include "api/handles.h"
#include "api/validate.h"
#include "transpose/local.h"
#include "transpose/transpose.h"

ptrdiff_t plancoll_local_size_transposed(ptrdiff_t n0, ptrdiff_t n1, MPI_Comm comm, ptrdiff_t *local_n0,
                                         ptrdiff_t *local_0_start, ptrdiff_t *local_n1, ptrdiff_t *local_1_start)
{
    int err = pc_api_entry(comm);
    if (!err) err = pc_transpose_check_sizes(n0, n1);
    if (err) return -err;
    int P, rank;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &rank);
    ptrdiff_t ln0, s0, ln1, s1;
    pc_block_dist(n0, P, rank, &ln0, &s0);
    pc_block_dist(n1, P, rank, &ln1, &s1);
    if (local_n0) *local_n0 = ln0;
    if (local_0_start) *local_0_start = s0;
    if (local_n1) *local_n1 = ln1;
    if (local_1_start) *local_1_start = s1;
    return pc_transpose_alloc(n0, n1, P, rank);
}

/* The transpose's exchange, planned like any alltoall(v) (plan.c: agreement, planner, set-up), then taken out of
 * the live plans: the transpose plan owns it, and no handle reaches it. */
static int plan_exchange(const struct pc_transpose_exchange *x, struct plancoll_plan_s **inner)
{
    plancoll_plan handle = NULL;
    int err = x->sendcounts ? plancoll_plan_alltoallv(x->sendbuf, x->sendcounts, x->sdispls, x->unit, x->recvbuf,
                                                      x->recvcounts, x->rdispls, x->unit, x->comm, x->flags, &handle)
                            : plancoll_plan_alltoall(x->sendbuf, x->count, x->unit, x->recvbuf, x->count, x->unit,
                                                     x->comm, x->flags, &handle);
    if (err) return err;
    *inner = pc_plan_lookup(handle);
    pc_plan_unregister(*inner);
    return PLANCOLL_SUCCESS;
}

static int plan_transpose(ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in, void *out, MPI_Comm comm,
                          unsigned flags, const int *pieces, plancoll_plan *plan)
{
    struct plancoll_plan_s *p;
    int err = pc_plan_begin(comm, flags, PC_ALLTOALL, plan, &p);
    if (err) return err;
    err = pc_transpose_build(p, n0, n1, element, in, out, comm, flags, pieces, plan_exchange);
    if (!err) err = pc_plan_register(p);
    if (err) {
        pc_plan_free(p);
        return err;
    }
    *plan = pc_plan_handle(p);
    return PLANCOLL_SUCCESS;
}

int plancoll_plan_transpose(ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in, void *out, MPI_Comm comm,
                            unsigned flags, plancoll_plan *plan)
{
    return plan_transpose(n0, n1, element, in, out, comm, flags, NULL, plan);
}

int plancoll_plan_transpose_pieces(ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in, void *out,
                                   MPI_Comm comm, unsigned flags, int pieces, plancoll_plan *plan)
{
    return plan_transpose(n0, n1, element, in, out, comm, flags, &pieces, plan);
}

int plancoll_transpose_piece_rows(plancoll_plan handle, int k, ptrdiff_t *lo, ptrdiff_t *count)
{
    int err;
    struct plancoll_plan_s *p = pc_plan_check(handle, &err);
    if (err) return err;
    return pc_transpose_piece_rows(p, k, lo, count);
}
