/* Steps shared by the point-to-point allreduce algorithms. */
#ifndef PC_ALLREDUCE_COMMON_H
#define PC_ALLREDUCE_COMMON_H

#include "exec/plan.h"
#include "exec/allreduce/fold.h"
#include "exec/steps.h"

/* The state of the point-to-point allreduces (recursive doubling, Rabenseifner): one scratch vector of the plan's
 * count elements, which receives the peer's data. Set-up allocates it (plan->impl), teardown frees it. */
struct pc_allreduce_scratch {
    void *raw; /* what to free */
    void *tmp; /* element 0 of the scratch vector */
    /* the execution in progress: its schedule, the fold, and recursive doubling's current and incoming vectors */
    struct pc_steps steps;
    struct pc_fold fold;
    void *cur, *in;
};
int pc_allreduce_scratch_setup(struct plancoll_plan_s *plan);
void pc_allreduce_scratch_teardown(struct plancoll_plan_s *plan);

/* recvbuf = sendbuf unless in place. */
int pc_allreduce_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
/* The start of an execution of a schedule of nsteps exchange steps between the fold in and the fold out (so
 * nsteps + 2 steps; none when there is nothing to reduce): recvbuf = sendbuf unless in place, the fold computed,
 * cur = recvbuf and in = the scratch. Local. */
int pc_allreduce_begin(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf, int nsteps);
/* Posts an exchange with peer in the step being posted: sends scount elements from sendptr, receives rcount into
 * recvptr (zero counts post nothing). */
int pc_allreduce_post_exchange(struct plancoll_plan_s *plan, struct pc_steps *s, int peer, const void *sendptr,
                               int scount, void *recvptr, int rcount);
/* The fold's first half, step 0: even ranks below 2*rem send, odd ones receive into tmp (post), then reduce, lower
 * rank first (finish). */
int pc_allreduce_fold_in_post(struct plancoll_plan_s *plan, struct pc_steps *s);
int pc_allreduce_fold_in_finish(struct plancoll_plan_s *plan);
/* The fold's second half, the last step: the odd ranks return the result to the even ranks that sat out. */
int pc_allreduce_fold_out_post(struct plancoll_plan_s *plan, struct pc_steps *s);

/* Cost of one allreduce of n bytes over a group of P ranks (microseconds), the formulas of recursive_doubling.c,
 * rabenseifner.c and native.c in the model's primitives. leaders = 0: the group is the problem's ranks, and each
 * step is a node message or a network one by where the partners sit (pc_cost_offnode_pairs); leaders = l > 0: the
 * group is one leader per node, every step crosses nodes while the node's l leaders run their own allreduces at
 * once (net_concurrent(l, .)): the hierarchical algorithms charge this for their inter-node part. posted (l > 0
 * only; 1 otherwise): each leader runs that many such allreduces at once, in step (allreduce.dpml_pipelined's
 * sub-partitions in flight together): each step's messages leave together (net_posted(l, posted, .)) and their
 * reductions follow one another. Reductions use the problem's (op, type). */
double pc_allreduce_rd_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                            const struct pc_machine_model *m);
double pc_allreduce_rsag_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                              const struct pc_machine_model *m);
double pc_allreduce_native_cost(const struct pc_problem *p, int P, double n, int leaders, int posted,
                                const struct pc_machine_model *m);

#endif
