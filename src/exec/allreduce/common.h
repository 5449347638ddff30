/* Steps shared by the point-to-point allreduce algorithms. */
#ifndef PC_ALLREDUCE_COMMON_H
#define PC_ALLREDUCE_COMMON_H

#include "exec/plan.h"
#include "exec/allreduce/fold.h"

/* The state of the point-to-point allreduces (recursive doubling, Rabenseifner): one scratch vector of the plan's
 * count elements, which receives the peer's data. Set-up allocates it (plan->impl), teardown frees it. */
struct pc_allreduce_scratch {
    void *raw; /* what to free */
    void *tmp; /* element 0 of the scratch vector */
};
int pc_allreduce_scratch_setup(struct plancoll_plan_s *plan);
void pc_allreduce_scratch_teardown(struct plancoll_plan_s *plan);

/* recvbuf = sendbuf unless in place. */
int pc_allreduce_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
/* Exchanges count elements with peer: sends from sendptr, receives into recvptr. */
int pc_allreduce_exchange(struct plancoll_plan_s *plan, int peer, const void *sendptr, int scount, void *recvptr,
                          int rcount);
/* The fold's first half: even ranks below 2*rem send, odd ones receive into tmp and reduce (lower rank first). */
int pc_allreduce_fold_in(struct plancoll_plan_s *plan, const struct pc_fold *f, void *rbuf, void *tmp);
/* The fold's second half: the odd ranks return the result to the even ranks that sat out. */
int pc_allreduce_fold_out(struct plancoll_plan_s *plan, const struct pc_fold *f, void *rbuf);

/* Cost of one allreduce of n bytes over a group of P ranks (microseconds), the formulas of recursive_doubling.c,
 * rabenseifner.c and native.c in the model's primitives. leaders = 0: the group is the problem's ranks, and each
 * step is a node message or a network one by where the partners sit (pc_cost_offnode_pairs); leaders = l > 0: the
 * group is one leader per node, every step crosses nodes while the node's l leaders run their own allreduces at
 * once (net_concurrent(l, .)): the hierarchical algorithms charge this for their inter-node part. Reductions use
 * the problem's (op, type). */
double pc_allreduce_rd_cost(const struct pc_problem *p, int P, double n, int leaders, const struct pc_machine_model *m);
double pc_allreduce_rsag_cost(const struct pc_problem *p, int P, double n, int leaders,
                              const struct pc_machine_model *m);
double pc_allreduce_native_cost(const struct pc_problem *p, int P, double n, int leaders,
                                const struct pc_machine_model *m);

#endif
