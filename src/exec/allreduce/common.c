#include "common.h"

int pc_allreduce_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    if (plan->in_place || plan->count == 0) return PLANCOLL_SUCCESS;
    return pc_copy_typed(plan, sbuf, plan->count, &plan->rtype, rbuf, plan->count, &plan->rtype);
}

int pc_allreduce_exchange(struct plancoll_plan_s *plan, int peer, const void *sendptr, int scount, void *recvptr,
                          int rcount)
{
    MPI_Request reqs[2];
    int n = 0;
    if (rcount > 0)
        PC_MPI_CHECK(MPI_Irecv(recvptr, rcount, plan->rtype.type, peer, PC_TAG_ALLREDUCE, plan->comm, &reqs[n++]));
    if (scount > 0)
        PC_MPI_CHECK(MPI_Isend(sendptr, scount, plan->rtype.type, peer, PC_TAG_ALLREDUCE, plan->comm, &reqs[n++]));
    return pc_wait_all(plan, n, reqs);
}

int pc_allreduce_fold_in(struct plancoll_plan_s *plan, const struct pc_fold *f, void *rbuf, void *tmp)
{
    if (plan->rank >= 2 * f->rem) return PLANCOLL_SUCCESS;
    if (f->newrank < 0) return pc_allreduce_exchange(plan, plan->rank + 1, rbuf, plan->count, NULL, 0);
    int err = pc_allreduce_exchange(plan, plan->rank - 1, NULL, 0, tmp, plan->count);
    if (err) return err;
    return pc_reduce(&plan->red, tmp, rbuf, plan->count);
}

int pc_allreduce_fold_out(struct plancoll_plan_s *plan, const struct pc_fold *f, void *rbuf)
{
    if (plan->rank >= 2 * f->rem) return PLANCOLL_SUCCESS;
    if (f->newrank < 0) return pc_allreduce_exchange(plan, plan->rank + 1, NULL, 0, rbuf, plan->count);
    return pc_allreduce_exchange(plan, plan->rank - 1, rbuf, plan->count, NULL, 0);
}
