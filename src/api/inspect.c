/* The public API's inspection: the library's version, the registry's names, and what a plan is (its algorithm,
 * its spec, its description). */
#include "api/handles.h"
#include "planner/planner.h"
#include "shm/layout.h"
#include "shm/wait.h"
#include "transpose/transpose.h"

const char *plancoll_version(int *major, int *minor, int *patch)
{
    if (major) *major = PLANCOLL_VERSION_MAJOR;
    if (minor) *minor = PLANCOLL_VERSION_MINOR;
    if (patch) *patch = PLANCOLL_VERSION_PATCH;
    return PLANCOLL_VERSION_STRING;
}

const char *plancoll_plan_algorithm(plancoll_plan handle)
{
    const struct plancoll_plan_s *plan = pc_plan_lookup(handle);
    if (!plan) return NULL;
    if (plan->transpose) return pc_transpose_name(plan);
    return plan->alg->name;
}

int plancoll_plan_spec(plancoll_plan handle, char *buf, size_t len)
{
    pc_clear_error();
    if (!buf || len == 0) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "plancoll_plan_spec: no buffer");
    if (!handle) return pc_error(PLANCOLL_ERR_NULL_PLAN, "plancoll_plan_spec: NULL plan");
    const struct plancoll_plan_s *plan = pc_plan_lookup(handle);
    if (!plan) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: not a live plan");
    const struct plancoll_plan_s *inner = plan->transpose ? pc_transpose_inner(plan) : plan;
    if (!inner || !inner->alg) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: transpose without an exchange");
    int n = pc_spec_format(pc_registry_find(inner->alg->name), &inner->params, buf, len);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return pc_error(PLANCOLL_ERR_OVERFLOW, "plancoll_plan_spec: %d bytes needed", n + 1);
    }
    return PLANCOLL_SUCCESS;
}

const char *plancoll_algorithm_name(int index, const char **collective)
{
    const struct pc_algorithm *a = pc_registry_get(index);
    if (!a) return NULL;
    if (collective) *collective = pc_collective_name(a->collective);
    return a->name;
}

int plancoll_fprint_plan(plancoll_plan handle, FILE *out)
{
    int err;
    const struct plancoll_plan_s *plan = pc_plan_check(handle, &err);
    if (err) return err;
    if (!out) return pc_error(PLANCOLL_ERR_ARGUMENT, "the output stream is NULL");
    if (plan->transpose) {
        pc_transpose_fprint(plan, out);
        return PLANCOLL_SUCCESS;
    }
    char key[160], params[96];
    pc_problem_key(&plan->prob, key, sizeof key);
    pc_params_format(&plan->params, plan->alg->params, params, sizeof params);
    const struct pc_layout *L = plan->layout;
    fprintf(out, "plancoll plan %s\n", key);
    fprintf(out, "  algorithm   %s%s%s%s\n", plan->alg->name, params[0] ? " (" : "", params, params[0] ? ")" : "");
    fprintf(out, "  chosen by   %s among %d candidate%s\n", plan->chosen_by, plan->candidates,
            plan->candidates == 1 ? "" : "s");
    fprintf(out, "  predicted   %.2f us (%s model)\n", plan->predicted_us, plan->model_calibrated ? "calibrated" : "default");
    if (plan->measured_us >= 0)
        fprintf(out, "  measured    %.2f us (median of per-execution maxima over ranks)\n", plan->measured_us);
    else
        fprintf(out, "  measured    not timed (PLANCOLL_MEASURE times candidates)\n");
    if (plan->runner_up[0]) fprintf(out, "  runner-up   %s, %.2f us\n", plan->runner_up, plan->runner_up_us);
    /* The set-up in executions ([PlannedA2AV] found about 4): against the planner's measurement when there is one (a
     * median of maxima over ranks), else this rank's first execution, else the model's prediction. */
    const char *per_what = "measured";
    double per_exec = plan->measured_us;
    if (per_exec <= 0 && plan->first_execution_us > 0) {
        per_exec = plan->first_execution_us;
        per_what = "first execution";
    }
    if (per_exec <= 0) {
        per_exec = plan->predicted_us;
        per_what = "predicted";
    }
    fprintf(out, "  set-up      %.4g ms", plan->setup_seconds * 1e3);
    if (per_exec > 0)
        fprintf(out, " = %.3g executions (of %.3g us, %s)", plan->setup_seconds * 1e6 / per_exec, per_exec, per_what);
    fputc('\n', out);
    fprintf(out, "  layout      %d ranks on %d node%s (%d-%d per node), %d NUMA domain%s (%s), %s waits\n", L->size,
            L->nnodes, L->nnodes == 1 ? "" : "s", plan->prob.shape.min_ppn, plan->prob.shape.max_ppn, L->num_numa,
            L->num_numa == 1 ? "" : "s", L->numa_from_binding ? "from binding" : "dealt by rank",
            L->wait_mode == PC_WAIT_SPIN ? "spinning" : L->wait_mode == PC_WAIT_YIELD ? "yielding"
                                        : L->oversubscribed ? "yielding (oversubscribed)" : "spin-then-yield");
    fprintf(out, "  in place    %s\n", plan->in_place ? "yes" : "no");
    fprintf(out, "  executions  %llu\n", plan->executions);
    return PLANCOLL_SUCCESS;
}
