/* alltoall.leader (L-a2a, seed 000 Alg. 1, eq. 7): one leader per node gathers the node's blocks through the
 * shared segment, sends one message per node pair, and the node's ranks scatter what it received. Inter-node
 * messages drop from (N ppn)^2 to N^2. The engine is node_aware.c; cost pc_na_estimate with l = 1. */
#include "node_aware.h"

static const struct pc_na_config config = {.leaders = 1};

static int setup(struct plancoll_plan_s *plan) { return pc_na_setup(plan, &config); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    return pc_na_estimate(p, &config, m);
}

const struct pc_algorithm pc_alltoall_leader = {
    .name = "alltoall.leader",
    .collective = PC_ALLTOALL,
    .summary = "L-a2a: one leader per node, one message per node pair, shared-memory gather and scatter",
    .inapplicable = pc_na_inapplicable,
    .estimate = estimate,
    .setup = setup,
    .execute = pc_na_execute,
    .teardown = pc_na_teardown,
};
