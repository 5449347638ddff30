/* allreduce.leader ([DPML17] section 2.1; docs/algorithms.md): one leader per node, the hierarchical allreduce of
 * MPI libraries. The node's ranks hand their vectors to the leader through the shared segment (or it reads
 * plancoll_malloc buffers in place), the leader reduces them in node-rank order, runs the inter-node allreduce
 * with the other nodes' leaders, and every rank copies the result back. Parameter: inter (the leaders'
 * allreduce: rd, rsag or mpi). Engine dpml_common.c with l = 1 and no pipeline; cost ([DPML17] eq. 7 at l = 1,
 * in the model's primitives, see dpml_common.c):
 *   (1, or 0 when ppn = 1) shm_copy(1, ppn, n)   the hand-over
 *   + shm_copy(1, ppn, n)                        the copy back
 *   + 2 sync_us + turns(2) + (ppn - 1) reduce(n) + T_inter(h, n)   (T_inter over the leaders: net_concurrent(1, .)
 *                                                       steps, each with its scheduler turn when oversubscribed) */
#include "exec/allreduce/dpml_common.h"
#include "exec/steps.h"

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    const struct pc_dpml_choices c = {.first_leaders = 1, .last_leaders = 1, .rsag = true}; /* one per inter */
    return pc_dpml_variants(p, &c, out, max);
}

static int setup(struct plancoll_plan_s *plan) { return pc_dpml_setup_form(plan, PC_DPML_LEADER); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_estimate_form(PC_DPML_LEADER, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_busy_form(PC_DPML_LEADER, p, params, m);
}

static double mean_busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_mean_busy_form(PC_DPML_LEADER, p, params, m);
}

const struct pc_algorithm pc_allreduce_leader = {
    .name = "allreduce.leader",
    .collective = PC_ALLREDUCE,
    .summary = "one leader per node: shared-memory reduce, allreduce among leaders, shared-memory broadcast",
    .params = PC_PARAM_INTER | PC_PARAM_STORES,
    .inapplicable = pc_dpml_inapplicable,
    .variants = variants,
    .estimate = estimate,
    .busy = busy,
    .mean_busy = mean_busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = pc_dpml_start,
    .advance = pc_dpml_advance,
    .set_stores = pc_dpml_set_stores,
    .teardown = pc_dpml_teardown,
};
