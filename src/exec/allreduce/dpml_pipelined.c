/* allreduce.dpml_pipelined ([DPML17] section 4.2; docs/algorithms.md): DPML with each leader's partition cut into
 * k sub-partitions; the leader starts a nonblocking inter-node allreduce of sub-partition s as soon as it has
 * reduced it, so the reduction of s+1 overlaps the flight of s, and the node's ranks copy each sub-partition
 * back as soon as its exchange is done. Parameters: those of allreduce.dpml and segments = k. Engine
 * dpml_common.c; cost ([DPML17] eq. 5 and 7, eq. 3 corrected, with the overlap):
 *   T_copy + T_bcast + T_sync + max(T_comp + T_inter(h, b, l),
 *                                   T_comp / k + max(T_inter^k(h, b, l), T_inter(h, b, l) + (k-1) B_inter(b))),
 *   b = n/(l k), T_comp = (ppn-1) reduce(n/l), T_copy, T_bcast, T_sync and T_inter those of allreduce.dpml (model
 *   primitives); T_inter^k: the k exchanges in flight together, each round's k messages posted at once to the
 *   partner (net_posted) and their k reductions one after another (allreduce/common.h, posted = k); B_inter: one
 *   exchange's busy time on the leader's core (its calls and reductions). With more
 *   ranks than cores nothing overlaps (no core is free to progress the exchanges):
 *   T_copy + T_bcast + T_sync + T_comp + k T_inter(h, b, l). */
#include "exec/allreduce/dpml_common.h"
#include "exec/steps.h"

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    /* Two depths when something flies between nodes (one otherwise), and rsag left to forcing (at two nodes it
     * is recursive doubling's single exchange): nodes of up to 16 ranks fit PC_MAX_VARIANTS (4 x 2 x 2 x 2). */
    const int segs[2] = {2, 8};
    const struct pc_dpml_choices c = {.first_leaders = p->shape.min_ppn > 1 ? 2 : 1, .segs = segs,
                                      .nsegs = p->shape.nnodes > 1 ? 2 : 1};
    return pc_dpml_variants(p, &c, out, max);
}

static int setup(struct plancoll_plan_s *plan) { return pc_dpml_setup_form(plan, PC_DPML_PIPELINED); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_estimate_form(PC_DPML_PIPELINED, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_busy_form(PC_DPML_PIPELINED, p, params, m);
}

static double mean_busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_dpml_mean_busy_form(PC_DPML_PIPELINED, p, params, m);
}

const struct pc_algorithm pc_allreduce_dpml_pipelined = {
    .name = "allreduce.dpml_pipelined",
    .collective = PC_ALLREDUCE,
    .summary = "DPML with k sub-partitions per leader: nonblocking inter-node allreduces overlap the reduction",
    .params = PC_PARAM_LEADERS | PC_PARAM_PLACEMENT | PC_PARAM_SEGMENTS | PC_PARAM_INTER | PC_PARAM_STORES,
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
