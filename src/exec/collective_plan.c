/* The collectives' kind of plan (plancoll_plan_alltoall, _alltoallv, _allreduce): a registry algorithm chosen by
 * the planner, run on the plan (exec/plan.h, struct pc_plan_ops). */
#include "exec/registry.h"
#include "exec/plan.h"

#include <string.h>

#include "planner/planner.h"
#include "shm/layout.h"
#include "shm/wait.h"

/* stores=auto plans learn their store mode from these executions (exec/store_chooser.h). */
static int execute(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    pc_store_chooser_before(plan, true);
    int err = plan->alg->execute(plan, sendbuf, recvbuf);
    if (!err) pc_store_chooser_after(plan);
    return err;
}

/* plancoll_start: only an algorithm with the resumable form (struct pc_algorithm's start and advance). */
static int start(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    if (!plan->alg->start || !plan->alg->advance)
        return pc_error(PLANCOLL_ERR_NOT_STARTABLE,
                        "%s runs only blocking (it waits inside its steps): plan with PLANCOLL_NONBLOCKING to start it",
                        plan->alg->name);
    pc_store_chooser_before(plan, false); /* the current mode, untimed */
    return plan->alg->start(plan, sendbuf, recvbuf);
}

static int advance(struct plancoll_plan_s *plan, bool *done) { return plan->alg->advance(plan, done); }

/* execute_buffers: the new buffers against the plan's shape (what the algorithm's set-up assumed). */
static int check_buffers(const struct plancoll_plan_s *p, const void *sendbuf, const void *recvbuf)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (recvbuf == MPI_IN_PLACE) return pc_error(PLANCOLL_ERR_IN_PLACE, "recvbuf cannot be MPI_IN_PLACE");
    if (in_place != p->in_place)
        return pc_error(PLANCOLL_ERR_BUFFER, in_place ? "the plan was made out of place but sendbuf is MPI_IN_PLACE"
                                                      : "the plan was made with MPI_IN_PLACE but sendbuf is a buffer");
    bool has_data = false, sends = false;
    switch (p->prob.coll) {
    case PC_ALLTOALL: has_data = sends = p->prob.block_bytes > 0; break;
    case PC_ALLTOALLV:
        has_data = p->prob.recv_total_bytes > 0;
        sends = p->prob.send_total_bytes > 0;
        break;
    case PC_ALLREDUCE: has_data = sends = p->count > 0 && p->rtype.size > 0; break;
    default: break;
    }
    if (has_data && !recvbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "recvbuf is NULL");
    if (sends && !in_place && !sendbuf) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "sendbuf is NULL");
    if (p->prob.coll == PC_ALLREDUCE && has_data && sendbuf == recvbuf)
        return pc_error(PLANCOLL_ERR_IN_PLACE, "sendbuf and recvbuf are the same buffer: pass MPI_IN_PLACE instead");
    return PLANCOLL_SUCCESS;
}

static const char *name(const struct plancoll_plan_s *plan) { return plan->alg->name; }

static int spec(const struct plancoll_plan_s *plan, char *buf, size_t len)
{
    int n = pc_spec_format(pc_registry_table(), pc_registry_find(plan->alg->name), &plan->params, buf, len);
    if (n < 0 || (size_t)n >= len) {
        buf[0] = '\0';
        return pc_error(PLANCOLL_ERR_OVERFLOW, "plancoll_plan_spec: %d bytes needed", n + 1);
    }
    return PLANCOLL_SUCCESS;
}

static void fprint(const struct plancoll_plan_s *plan, FILE *out)
{
    char key[160], params[96];
    pc_problem_key(&plan->prob, key, sizeof key);
    pc_params_format(&plan->params, plan->alg->params, params, sizeof params);
    const struct pc_layout *L = plan->layout;
    fprintf(out, "plancoll plan %s\n", key);
    fprintf(out, "  algorithm   %s%s%s%s\n", plan->alg->name, params[0] ? " (" : "", params, params[0] ? ")" : "");
    fprintf(out, "  chosen by   %s among %d candidate%s", plan->chosen_by, plan->candidates,
            plan->candidates == 1 ? "" : "s");
    /* a statistical tie, broken by the model's prediction (planner.h pc_decision) */
    if (plan->runner_up[0] && plan->runner_up_tied)
        fprintf(out, ", tied with %s within the noise (±%.1f%%)", plan->runner_up, plan->tie_noise_pct);
    fputc('\n', out);
    fprintf(out, "  predicted   %.2f us (%s model)\n", plan->predicted_us, plan->model_calibrated ? "calibrated" : "default");
    pc_model_fprint_marks(out, &plan->prob.shape);
    if (plan->measured_us >= 0)
        fprintf(out, "  measured    %.2f us%s (median of per-execution maxima over ranks)\n", plan->measured_us,
                plan->flags & PLANCOLL_OVERLAP ? " overlapped" : "");
    else
        fprintf(out, "  measured    not timed (PLANCOLL_MEASURE times candidates)\n");
    if (plan->runner_up[0]) fprintf(out, "  runner-up   %s, %.2f us\n", plan->runner_up, plan->runner_up_us);
    if (plan->unfit_count > 0)
        fprintf(out, "  fell back   from %s%s: %s\n", plan->unfit_first,
                plan->unfit_count > 1 ? " and others that did not fit" : "", plan->unfit_detail);
    if (plan->flags & PLANCOLL_OVERLAP) {
        /* planned for overlap (docs/design.md, "Planning for overlap"): the choice against the plain rule's */
        fprintf(out, "  overlap     busy %.2f us of %.2f us critical path", plan->busy_us, plan->predicted_us);
        if (plan->measured_us >= 0) fprintf(out, "; measured start, compute, wait %.2f us", plan->measured_us);
        if (plan->measured_other_us >= 0) fprintf(out, " (execute %.2f us)", plan->measured_other_us);
        fputc('\n', out);
        if (plan->execute_fastest[0]) {
            fprintf(out, "              execute-fastest candidate %s would keep the caller busy %.2f us of %.2f us",
                    plan->execute_fastest, plan->execute_fastest_busy_us, plan->execute_fastest_predicted_us);
            if (plan->execute_fastest_overlapped_us >= 0)
                fprintf(out, "; measured start, compute, wait %.2f us (execute %.2f us)",
                        plan->execute_fastest_overlapped_us, plan->execute_fastest_us);
            fputc('\n', out);
        } else if (strcmp(plan->chosen_by, "wisdom") != 0) { /* wisdom keeps the choice, not the comparison */
            fprintf(out, "              the execute-fastest candidate is this one\n");
        }
    } else if (plan->flags & PLANCOLL_NONBLOCKING) {
        fprintf(out, "  started     busy %.2f us of %.2f us critical path", plan->busy_us, plan->predicted_us);
        if (plan->measured_other_us >= 0) fprintf(out, "; measured start + wait %.2f us", plan->measured_other_us);
        fputc('\n', out);
    }
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
    const struct pc_store_chooser *sc = &plan->stores_auto;
    if (sc->on) {
        /* stores=auto (exec/store_chooser.h): this rank's current mode and what it has seen of each */
        fprintf(out, "  stores      auto: %s now, %llu switch%s;", sc->best_stream ? "streaming" : "ordinary", sc->switches,
                sc->switches == 1 ? "" : "es");
        for (int k = 0; k < 2; k++) {
            if (sc->mean_us[k] >= 0) fprintf(out, " %s %.2f us", k ? "streaming" : "ordinary", sc->mean_us[k]);
            else fprintf(out, " %s not timed", k ? "streaming" : "ordinary");
            fputc(k ? '\n' : ',', out);
        }
    }
}

/* A plan whose creation failed before the choice has no algorithm yet. */
static void teardown(struct plancoll_plan_s *plan)
{
    if (plan->alg && plan->alg->teardown) plan->alg->teardown(plan);
}

const struct pc_plan_ops pc_collective_plan_ops = {
    .execute = execute,
    .start = start,
    .advance = advance,
    .check_buffers = check_buffers,
    .name = name,
    .spec = spec,
    .fprint = fprint,
    .teardown = teardown,
};
