/* alltoall.onmpml (ONMPML, [GLEX] Alg. 5, T_ONMPML = T_start + max(T_inter, T_intra) + T_end): MPML whose
 * leaders post their receives first, send each destination node's blocks as soon as every rank of the node has
 * gathered them (while the rest is still being gathered), keep at most `segments` sends in flight (0: all), and
 * whose ranks scatter each source node's blocks as soon as they land. Parameters: leaders, placement, pipeline
 * depth, transport, stores. Engine node_aware.c; cost pc_na_estimate with overlap. */
#include "exec/alltoall/node_aware.h"
#include "exec/steps.h"

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    int n = pc_na_leader_variants(p, out, max, 0);
    if (p->shape.nnodes > 2) /* a bounded pipeline differs from an unbounded one only with several peers */
        n += pc_na_leader_variants(p, out + n, max - n, 1);
    return n;
}

static int setup(struct plancoll_plan_s *plan) { return pc_na_setup_form(plan, PC_NA_ONMPML); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_estimate_form(PC_NA_ONMPML, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_busy_form(PC_NA_ONMPML, p, params, m);
}

const struct pc_algorithm pc_alltoall_onmpml = {
    .name = "alltoall.onmpml",
    .collective = PC_ALLTOALL,
    .summary = "ONMPML: multi-leader with gather, send, receive and scatter overlapped; pipeline depth",
    .params = PC_PARAM_LEADERS | PC_PARAM_PLACEMENT | PC_PARAM_SEGMENTS | PC_PARAM_TRANSPORT | PC_PARAM_STORES,
    .variants = variants,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = pc_na_start,
    .advance = pc_na_advance,
    .set_stores = pc_na_set_stores,
    .teardown = pc_na_teardown,
};
