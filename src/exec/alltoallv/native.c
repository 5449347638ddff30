/* alltoallv.native: MPI's persistent MPI_Alltoallv_init, yield-waited; MPI_Ialltoallv on other buffers.
 * Cost: modelled as a spread-out exchange that also sends zero-byte blocks: (P-1) alpha + bytes beta. */
#include <stdlib.h>

#include "../../core/plan.h"

static int setup(struct plancoll_plan_s *plan)
{
    MPI_Request *req = malloc(sizeof *req);
    if (!req) return pc_error(PLANCOLL_ERR_NOMEM, "native state");
    *req = MPI_REQUEST_NULL;
    plan->impl = req;
    PC_MPI_CHECK(MPI_Alltoallv_init(plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->sendcounts, plan->sdispls,
                                    plan->stype.type, plan->recvbuf, plan->recvcounts, plan->rdispls,
                                    plan->rtype.type, plan->comm, MPI_INFO_NULL, req));
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    MPI_Request *req = plan->impl;
    if (req && *req != MPI_REQUEST_NULL) MPI_Request_free(req);
    free(req);
    plan->impl = NULL;
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    MPI_Request *req = plan->impl;
    if (plan->planned_buffers) {
        PC_MPI_CHECK(MPI_Start(req));
        return pc_wait_all(plan, 1, req);
    }
    MPI_Request once;
    PC_MPI_CHECK(MPI_Ialltoallv(plan->in_place ? MPI_IN_PLACE : sbuf, plan->sendcounts, plan->sdispls,
                                plan->stype.type, rbuf, plan->recvcounts, plan->rdispls, plan->rtype.type, plan->comm,
                                &once));
    return pc_wait_all(plan, 1, &once);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return (p->shape.nranks - 1) * m->alpha_us + (double)p->max_send_bytes * m->beta_us_per_b; /* busiest rank */
}

const struct pc_algorithm pc_alltoallv_native = {
    .name = "alltoallv.native",
    .collective = PC_ALLTOALLV,
    .summary = "MPI's persistent MPI_Alltoallv_init, yield-waited",
    .estimate = estimate,
    .setup = setup,
    .execute = execute,
    .teardown = teardown,
};
