/* alltoall.leader (L-a2a, [GLEX] Alg. 1, eq. 7): one leader per node gathers the node's blocks through the
 * shared segment, sends one message per node pair, and the node's ranks scatter what it received. Inter-node
 * messages drop from (N ppn)^2 to N^2. Parameters: transport (Isend/Irecv or MPI_Put), stores (the gather's writes
 * into the segment: ordinary or streaming). The engine is node_aware.c; cost pc_na_estimate with l = 1. */
#include "exec/alltoall/node_aware.h"
#include "exec/reduce_stream.h"
#include "exec/steps.h"

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    int n = 0;
    /* put where it can be fast and the plan is not started (pc_put_transport_offered) and its window offsets fit */
    int transports = pc_put_transport_offered(p) && pc_na_put_fits(p) ? 2 : 1, stores = pc_staging_store_mode(p);
    for (int t = 0; t < transports; t++)
        if (n < max) out[n++] = (struct pc_params){.transport = t, .stores = stores};
    return n;
}

static int setup(struct plancoll_plan_s *plan) { return pc_na_setup_form(plan, PC_NA_LEADER); }

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_estimate_form(PC_NA_LEADER, p, params, m);
}

static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    return pc_na_busy_form(PC_NA_LEADER, p, params, m);
}

const struct pc_algorithm pc_alltoall_leader = {
    .name = "alltoall.leader",
    .collective = PC_ALLTOALL,
    .summary = "L-a2a: one leader per node, one message per node pair, shared-memory gather and scatter",
    .params = PC_PARAM_TRANSPORT | PC_PARAM_STORES,
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
