#include "planner/decide.h"

#include <string.h>

#include "plancoll_codes.h"
#include "base/errors.h"

/* Wisdom stands in for timing: the rigors that time consult it (the agreed lookup costs a collective, which an
 * ESTIMATE plan does not pay), and WISDOM_ONLY, which has nothing else. */
#define CONSULT_WISDOM (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE | PLANCOLL_WISDOM_ONLY)

static bool is_unfit(const struct pc_decide_input *in, const struct pc_candidate *c)
{
    for (int k = 0; k < in->nunfit; k++)
        if (in->unfit[k].alg == c->alg && memcmp(&in->unfit[k].params, &c->params, sizeof c->params) == 0) return true;
    return false;
}

static int enumerate(const struct pc_decide_input *in, const struct pc_machine_model *m, struct pc_candidate *cands,
                     int *n)
{
    int err = in->nforced > 0
                  ? pc_enumerate_forced(in->algs, in->problem, in->forced, in->nforced, m, cands, PC_MAX_CANDIDATES, n)
                  : pc_enumerate(in->algs, in->problem, NULL, 0, m, cands, PC_MAX_CANDIDATES, n);
    if (err || in->nunfit == 0) return err;
    int kept = 0;
    for (int i = 0; i < *n; i++)
        if (!is_unfit(in, &cands[i])) cands[kept++] = cands[i];
    *n = kept;
    if (kept == 0)
        return pc_error(PLANCOLL_ERR_NOMEM, "no candidate fits the node-shared memory (%d found too little of it)",
                        in->nunfit);
    return PLANCOLL_SUCCESS;
}

/* The candidate an entry names, algorithm and parameters both (wisdom from a build or a problem where it was
 * not a candidate cannot be run here), or -1. */
static int named_candidate(const struct pc_algorithm_table *algs, const struct pc_wisdom_entry *e,
                           const struct pc_candidate *cands, int n)
{
    for (int i = 0; i < n; i++) {
        const struct pc_algorithm *a = pc_algorithm_at(algs, cands[i].alg);
        if (a && strcmp(a->name, e->algorithm) == 0 && memcmp(&cands[i].params, &e->params, sizeof e->params) == 0)
            return i;
    }
    return -1;
}

int pc_decide(const struct pc_decide_input *in, const struct pc_decide_hooks *hooks, struct pc_decide_result *out)
{
    memset(out, 0, sizeof *out);
    const unsigned flags = in->problem->flags;
    if (in->model) out->model = *in->model;
    else pc_default_model(&out->model);
    struct pc_candidate cands[PC_MAX_CANDIDATES];
    int n = 0;
    int err = enumerate(in, &out->model, cands, &n);
    if (err) return err;

    char key[160];
    pc_problem_key(in->problem, key, sizeof key);
    if (in->nforced == 0 && (flags & CONSULT_WISDOM)) {
        const struct pc_wisdom_entry *w = NULL;
        if ((err = hooks->agreed_wisdom(hooks->ctx, key, &w))) return err;
        int i = w ? named_candidate(in->algs, w, cands, n) : -1;
        if (i >= 0) {
            out->decision.chosen = cands[i];
            out->decision.chosen.measured_us = w->measured_us;
            out->decision.ncandidates = n;
            out->decision.how = "wisdom";
            return PLANCOLL_SUCCESS;
        }
    }
    if (flags & PLANCOLL_WISDOM_ONLY) return pc_error(PLANCOLL_ERR_NO_WISDOM, "no wisdom for %s", key);

    if (n > 1 && !in->model && in->calibration_allowed) {
        /* The candidates must be ranked and this shape has no agreed model yet: measure one and rank again. */
        if ((err = hooks->calibrate(hooks->ctx, &out->model))) return err;
        out->calibrated = true;
        if ((err = enumerate(in, &out->model, cands, &n))) return err;
    }
    return pc_choose(in->algs, in->problem, cands, n, in->nforced > 0, &hooks->choose, hooks->verbose, &out->decision);
}
