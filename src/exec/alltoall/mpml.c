/* alltoall.mpml (MPML and NMPML, [GLEX] Alg. 2-4, eq. 8-9): l leaders per node, leader j handling the node
 * pairs at offsets j, j+l, ... over its own connection, so l cores gather, send and scatter at once. Parameters:
 * leaders (1 .. smallest node; a larger request is clamped to the smallest node's ranks) and placement (first l
 * node ranks, or spread over NUMA domains: NMPML), transport (Isend/Irecv or MPI_Put) and stores (the gather's
 * writes into the segment: ordinary or streaming).
 * Engine node_aware.c (pc_na_config_of maps the parameters); cost pc_na_estimate. */
#include "exec/alltoall/node_aware.h"
#include "exec/reduce_stream.h"
#include "exec/steps.h"

int pc_na_leader_variants(const struct pc_problem *p, struct pc_params *out, int max, int depth)
{
    /* MPI_Put where it can be fast and the plan is not started (pc_put_transport_offered); transport=put still
     * forces it. */
    int n = 0, top = p->shape.nnodes > 1 ? p->shape.min_ppn : 1;
    int transports = pc_put_transport_offered(p) && pc_na_put_fits(p) ? 2 : 1, stores = pc_staging_store_mode(p);
    for (int l = 1; l <= top && n < max; l = l * 2 > top && l < top ? top : l * 2) {
        for (int placement = 0; placement < 2; placement++) {
            if (placement && (p->shape.numa_domains <= 1 || l == 1)) continue;
            for (int t = 0; t < transports; t++)
                if (n < max)
                    out[n++] = (struct pc_params){.leaders = l, .placement = placement, .segments = depth, .transport = t,
                                                  .stores = stores};
        }
        if (l == top) break;
    }
    return n;
}

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    return pc_na_leader_variants(p, out, max, 0);
}

static int setup(struct plancoll_plan_s *plan) { return pc_na_setup_form(plan, PC_NA_MPML); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_estimate_form(PC_NA_MPML, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_busy_form(PC_NA_MPML, p, params, m);
}

const struct pc_algorithm pc_alltoall_mpml = {
    .name = "alltoall.mpml",
    .collective = PC_ALLTOALL,
    .summary = "MPML/NMPML: l leaders per node (first l or NUMA-spread), node pairs dealt round robin",
    .params = PC_PARAM_LEADERS | PC_PARAM_PLACEMENT | PC_PARAM_TRANSPORT | PC_PARAM_STORES,
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
