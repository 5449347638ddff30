/* The decision of plan creation, without MPI: which candidate a plan runs, and how it was found (agreed wisdom,
 * the model's estimate, or timing). Everything collective (the wisdom every rank holds, calibration, timing and
 * rank 0's broadcast) reaches it through hooks, which src/api/plan.c fills with MPI work and the unit tests
 * (tests/unit/test_decide.c) with scripted stand-ins. */
#ifndef PC_DECIDE_H
#define PC_DECIDE_H

#include "planner/planner.h"

struct pc_decide_input {
    const struct pc_algorithm_table *algs; /* what to choose among */
    const struct pc_problem *problem;      /* agreed across ranks; its flags set the rigor */
    const struct pc_forced *forced;        /* PLANCOLL_ALGORITHM's entries for this collective */
    int nforced;                           /* 0: no restriction */
    const struct pc_machine_model *model;  /* the model every rank holds for this shape, NULL when none */
    bool calibration_allowed;              /* PLANCOLL_CALIBRATE is not 0 */
    /* Candidates (algorithm and parameters) whose set-up found too little node-shared memory on an earlier try of
     * this plan: never chosen again, and wisdom naming one of them is passed over. */
    const struct pc_candidate *unfit;
    int nunfit;
};

struct pc_decide_hooks {
    void *ctx;
    /* The wisdom entry for key that every rank holds, in *entry, or NULL when there is none or the ranks' entries
     * differ (collective). Returns a plancoll code. */
    int (*agreed_wisdom)(void *ctx, const char *key, const struct pc_wisdom_entry **entry);
    /* Measures this machine's model into *m (collective; *m holds the default model on entry and the same values
     * on every rank on return). Returns a plancoll code. */
    int (*calibrate)(void *ctx, struct pc_machine_model *m);
    struct pc_planner_hooks choose; /* timing and rank 0's broadcast, for pc_choose */
    FILE *verbose;                  /* pc_choose's candidate table (rank 0 only), or NULL */
};

struct pc_decide_result {
    struct pc_decision decision;
    struct pc_machine_model model; /* the model the candidates were ranked with: agreed, calibrated or default */
    bool calibrated;               /* the calibrate hook made it during this decision */
};

/* Decides p's candidate. The steps, each skipped when an earlier one decided:
 *   1. enumerate the candidates (the forced ones when nforced > 0) under the agreed model, or the default one,
 *      leaving out the unfit ones (none left: PLANCOLL_ERR_NOMEM);
 *   2. MEASURE and above (and WISDOM_ONLY), nothing forced: agreed wisdom naming one of the candidates (algorithm
 *      and parameters) decides; an entry naming none of them is ignored;
 *   3. WISDOM_ONLY without such wisdom is PLANCOLL_ERR_NO_WISDOM;
 *   4. several candidates, no agreed model, calibration allowed: calibrate once and enumerate again under the
 *      measured model;
 *   5. pc_choose (the estimate, or timing with the choose hooks).
 * A hook's failure is returned as is. Every rank reaches the same hooks in the same order from agreed inputs. */
int pc_decide(const struct pc_decide_input *in, const struct pc_decide_hooks *hooks, struct pc_decide_result *out);

#endif
