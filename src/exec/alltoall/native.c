/* alltoall.native: MPI's own persistent collective (MPI_Alltoall_init), started and then waited in plancoll's
 * yielding loop. On other buffers (plancoll_execute_buffers) it runs MPI_Ialltoall, since a persistent request
 * is bound to its buffers. Cost: modelled as MPICH's choice, Bruck below 256 B blocks, else spread-out. */
#include <math.h>
#include <stdlib.h>

#include "../../core/plan.h"

struct native {
    MPI_Request req;
};

static int setup(struct plancoll_plan_s *plan)
{
    struct native *st = malloc(sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "native state");
    st->req = MPI_REQUEST_NULL;
    plan->impl = st;
    PC_MPI_CHECK(MPI_Alltoall_init(plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->sendcount, plan->stype.type,
                                   plan->recvbuf, plan->recvcount, plan->rtype.type, plan->comm, MPI_INFO_NULL,
                                   &st->req));
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct native *st = plan->impl;
    if (st && st->req != MPI_REQUEST_NULL) MPI_Request_free(&st->req);
    free(st);
    plan->impl = NULL;
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct native *st = plan->impl;
    if (plan->planned_buffers) {
        PC_MPI_CHECK(MPI_Start(&st->req));
        return pc_wait_all(plan, 1, &st->req);
    }
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ialltoall(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcount, plan->stype.type, rbuf,
                               plan->recvcount, plan->rtype.type, plan->comm, &req));
    return pc_wait_all(plan, 1, &req);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    double P = p->shape.nranks, bytes = (double)p->block_bytes;
    if (bytes < 256 && P > 2)
        return ceil(log2(P)) * (m->alpha_us + P / 2 * bytes * m->beta_us_per_b) + 2 * P * bytes * m->copy_us_per_b;
    return (P - 1) * (m->alpha_us + bytes * m->beta_us_per_b) + bytes * m->copy_us_per_b;
}

const struct pc_algorithm pc_alltoall_native = {
    .name = "alltoall.native",
    .collective = PC_ALLTOALL,
    .summary = "MPI's persistent MPI_Alltoall_init, yield-waited",
    .estimate = estimate,
    .setup = setup,
    .execute = execute,
    .teardown = teardown,
};
