/* The public API's inspection: the library's version, the registry's names, and what a plan is (its algorithm,
 * its spec, its description) through the plan's ops (exec/plan.h). */
#include "exec/registry.h"
#include "api/handles.h"

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
    return plan->ops->name(plan);
}

int plancoll_plan_spec(plancoll_plan handle, char *buf, size_t len)
{
    pc_clear_error();
    if (!buf || len == 0) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "plancoll_plan_spec: no buffer");
    if (!handle) return pc_error(PLANCOLL_ERR_NULL_PLAN, "plancoll_plan_spec: NULL plan");
    const struct plancoll_plan_s *plan = pc_plan_lookup(handle);
    if (!plan) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: not a live plan");
    return plan->ops->spec(plan, buf, len);
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
    plan->ops->fprint(plan, out);
    return PLANCOLL_SUCCESS;
}
