/* allreduce.dpml ([DPML17] section 4.1; docs/algorithms.md): data-partitioning multi-leader allreduce. l leaders
 * per node (the first l node ranks, or spread over the NUMA domains); partition j of every rank's vector goes
 * to leader j's area of the shared segment (or leader j reads it in place from a plancoll_malloc buffer),
 * the l leaders reduce their partitions at once, leader j runs the inter-node allreduce of partition j with
 * leader j of the other nodes, and every rank copies all partitions back. Parameters: leaders (1 .. smallest
 * node, larger requests clamped), placement (first, numa), inter (rd, rsag, mpi). Engine dpml_common.c with
 * no pipeline; cost ([DPML17] eq. 7, eq. 3 corrected to one leader's share, see dpml_common.c):
 *   (l, or l-1 when l = ppn) shm_copy(1, ppn, n/l)   the hand-over of the partitions
 *   + l shm_copy(1, ppn, n/l)                        the copy back
 *   + 2 sync_us + turns(2) + (ppn - 1) reduce(n/l) + T_inter(h, n/l)   (T_inter over the leaders j:
 *                                  net_concurrent(l, .) steps, each with its scheduler turn when oversubscribed) */
#include "exec/allreduce/dpml_common.h"
#include "exec/steps.h"

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    /* one leader is allreduce.leader's candidate */
    const struct pc_dpml_choices c = {.first_leaders = p->shape.min_ppn > 1 ? 2 : 1, .rsag = true};
    return pc_dpml_variants(p, &c, out, max);
}

static int setup(struct plancoll_plan_s *plan) { return pc_dpml_setup_form(plan, PC_DPML_PARTITIONED); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_estimate_form(PC_DPML_PARTITIONED, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_busy_form(PC_DPML_PARTITIONED, p, params, m);
}

static double mean_busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_mean_busy_form(PC_DPML_PARTITIONED, p, params, m);
}

const struct pc_algorithm pc_allreduce_dpml = {
    .name = "allreduce.dpml",
    .collective = PC_ALLREDUCE,
    .summary = "DPML: l leaders per node each reduce one partition and allreduce it with their peers on other nodes",
    .params = PC_PARAM_LEADERS | PC_PARAM_PLACEMENT | PC_PARAM_INTER | PC_PARAM_STORES,
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
