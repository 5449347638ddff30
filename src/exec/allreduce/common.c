#include "common.h"

#include <math.h>

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

double pc_allreduce_rd_cost(double P, double n, const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    double steps = floor(log2(P));
    double t = steps * (m->alpha_us + n * m->beta_us_per_b + n * m->gamma_us_per_b);
    if (pow(2, steps) != P) t += 2 * (m->alpha_us + n * m->beta_us_per_b) + n * m->gamma_us_per_b;
    return t;
}

double pc_allreduce_rsag_cost(double P, double n, const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    double pof2 = pow(2, floor(log2(P)));
    double t = 2 * log2(pof2) * m->alpha_us + 2 * (pof2 - 1) / pof2 * n * m->beta_us_per_b +
               (pof2 - 1) / pof2 * n * m->gamma_us_per_b;
    if (pof2 != P) t += 2 * (m->alpha_us + n * m->beta_us_per_b) + n * m->gamma_us_per_b;
    return t;
}

double pc_allreduce_native_cost(double P, double n, bool commutative, const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    if (n <= 2048 || !commutative) return ceil(log2(P)) * (m->alpha_us + n * (m->beta_us_per_b + m->gamma_us_per_b));
    return 2 * ceil(log2(P)) * m->alpha_us + 2 * n * m->beta_us_per_b + n * m->gamma_us_per_b;
}
