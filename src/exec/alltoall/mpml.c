/* alltoall.mpml (MPML and NMPML, seed 000 Alg. 2-4, eq. 8-9): l leaders per node, leader j handling the node
 * pairs at offsets j, j+l, ... over its own connection, so l cores gather, send and scatter at once. Parameters:
 * leaders (1 .. smallest node; a larger request is clamped to the smallest node's ranks) and placement (first l
 * node ranks, or spread over NUMA domains: NMPML) and transport (Isend/Irecv or MPI_Put). Engine node_aware.c; cost pc_na_estimate. */
#include "node_aware.h"

static struct pc_na_config config_of(const struct pc_params *p)
{
    struct pc_na_config c = {.leaders = p->leaders, .numa_spread = p->placement == 1, .put = p->transport == 1};
    return c;
}

/* Leader counts 1, 2, 4, ... and the smallest node's size; NUMA-spread placement when nodes have domains; both
 * transports when there is more than one node. */
int pc_na_leader_variants(const struct pc_problem *p, struct pc_params *out, int max, int depth)
{
    int n = 0, top = p->shape.nnodes > 1 ? p->shape.min_ppn : 1, transports = p->shape.nnodes > 1 ? 2 : 1;
    for (int l = 1; l <= top && n < max; l = l * 2 > top && l < top ? top : l * 2) {
        for (int placement = 0; placement < 2; placement++) {
            if (placement && (p->shape.numa_domains <= 1 || l == 1)) continue;
            for (int t = 0; t < transports && n < max; t++)
                out[n++] = (struct pc_params){.leaders = l, .placement = placement, .segments = depth, .transport = t};
        }
        if (l == top) break;
    }
    return n;
}

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    return pc_na_leader_variants(p, out, max, 0);
}

static int setup(struct plancoll_plan_s *plan)
{
    struct pc_na_config c = config_of(&plan->params);
    return pc_na_setup(plan, &c);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    struct pc_na_config c = config_of(params);
    return pc_na_estimate(p, &c, m);
}

const struct pc_algorithm pc_alltoall_mpml = {
    .name = "alltoall.mpml",
    .collective = PC_ALLTOALL,
    .summary = "MPML/NMPML: l leaders per node (first l or NUMA-spread), node pairs dealt round robin",
    .inapplicable = pc_na_inapplicable,
    .variants = variants,
    .estimate = estimate,
    .setup = setup,
    .execute = pc_na_execute,
    .teardown = pc_na_teardown,
};
