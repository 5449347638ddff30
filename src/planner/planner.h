/* Candidate enumeration, ranking and decision. No MPI: agreement between ranks goes through hooks that the
 * executor fills with MPI calls and unit tests fill with single-process stand-ins. No executors either: every
 * function takes the table of algorithms to choose among (base/algorithm.h); an algorithm is an index in it. */
#ifndef PC_PLANNER_H
#define PC_PLANNER_H

#include <stdbool.h>
#include <stdio.h>

#include "base/algorithm.h"

/* ESTIMATE's tie: estimates within this relative margin of each other are equal for the choice (the earlier
 * candidate in the registry's order, the simpler, stays). The model cannot separate closer estimates: the
 * figures it is built from move 10-20% within one calibration (two halves of the same samples) and more between
 * calibrations, and the very same plan timed twice differs by 1-7% (median) on this kind of host. At 0.1% (the
 * old margin, floating point's noise only) ESTIMATE took alltoall.pap in some calibrations of 2n5p-tcp and
 * alltoall.leader in others on estimates 0.2-3% apart. */
#define PC_ESTIMATE_TIE 0.05
#define PC_MAX_CANDIDATES 192
/* One algorithm's variants: alltoall.onmpml on nodes of 16 ranks over 2 NUMA domains offers 9 leader placements x 2
 * transports x 2 store modes x 2 depths = 72 (an algorithm's list is cut at this bound). */
#define PC_MAX_VARIANTS 128

struct pc_candidate {
    int alg; /* index in the algorithm table */
    struct pc_params params;
    double predicted_us; /* the estimate: the critical path of one execution */
    double busy_us;      /* of it, the caller's busy time when started (pc_algorithm_busy) */
    double measured_us; /* < 0 when not measured; under PLANCOLL_OVERLAP the overlapped time (start, compute, wait) */
    /* The other time MEASURE takes of a started plan (< 0 when not taken): with PLANCOLL_OVERLAP the plain execute
     * time, else for a PLANCOLL_NONBLOCKING plan start + wait (which should match execute). */
    double measured_other_us;
    double rank_us; /* what pc_choose ranks by: predicted_us, or pc_overlap_cost under PLANCOLL_OVERLAP */
};

/* PLANCOLL_OVERLAP's rank of a candidate (docs/design.md, "Planning for overlap"): its expected completion when
 * the caller starts it, computes for `compute_us` (the shortest critical path among the candidates: the compute
 * that hides the fastest candidate wholly) and waits, less that compute: the caller's CPU is busy for compute + busy
 * and the collective cannot end before its critical path, so the completion is max(compute + busy, critical path)
 * and the time the overlap cannot hide is max(busy, critical path - compute). */
static inline double pc_overlap_cost(const struct pc_candidate *c, double compute_us)
{
    double behind = c->predicted_us - compute_us;
    return c->busy_us > behind ? c->busy_us : behind;
}

/* The most rounds a race runs (EXHAUSTIVE's maximum, planner.c rigor_rounds). */
#define PC_MAX_ROUNDS 45

/* MEASURE's timing, collective: every rank calls the same hooks in the same order with the same arguments. A
 * candidate is known by its slot, its index among pc_choose's candidates (0 .. PC_MAX_CANDIDATES-1). */
struct pc_planner_hooks {
    void *ctx;
    /* Sets up candidate c's trial plan in slot (temporary buffers; the caller's are never touched) and warms it
     * up; it stays set up until release, so several trial plans may be alive at once. Returns a plancoll code,
     * failure on every rank alike: PLANCOLL_ERR_NOMEM on every rank when some rank lacked memory (node-shared
     * included) and none failed otherwise, so that all ranks can fall back alike. A failed slot needs no release. */
    int (*prepare)(void *ctx, int slot, const struct pc_candidate *c);
    /* Times one batch of back-to-back executions of slot's trial plan: us[0] receives the batch's mean of the
     * per-execution maxima over ranks, in microseconds, the same value on every rank: for a PLANCOLL_OVERLAP plan
     * of overlapped executions (start, the compute loop with tests, wait). us[1], -1 on entry, may receive the
     * other time of a started plan the same way (pc_candidate.measured_other_us). Returns a plancoll code. */
    int (*batch)(void *ctx, int slot, double *us);
    /* Tears slot's trial plan down. */
    void (*release)(void *ctx, int slot);
    /* Broadcasts *value from rank 0. */
    int (*bcast_int)(void *ctx, int *value);
    /* The clock plancoll_set_timelimit is read on, in seconds (only rank 0's reading counts: it is broadcast);
     * NULL: CLOCK_MONOTONIC. Unit tests script it. */
    double (*now)(void *ctx);
};

/* Parses PLANCOLL_ALGORITHM-style text ("a,b,c") into the indices in algs that belong to collective coll.
 * Returns PLANCOLL_SUCCESS, or PLANCOLL_ERR_ALGORITHM naming an unknown name (any collective's name is known).
 * *n receives how many of coll's algorithms were named (0: no restriction). */
int pc_parse_algorithm_list(const struct pc_algorithm_table *algs, const char *text, enum pc_collective coll, int *out,
                            int max, int *n);

/* One entry of PLANCOLL_ALGORITHM: an algorithm, optionally with some parameters fixed
 * ("alltoall.mpml:leaders=2:placement=numa"; keys leaders, placement=first|numa, depth (= segments), segments,
 * transport=p2p|put, radix, inter=rd|rsag|mpi, stores=normal|stream|auto).
 * The PC_PARAM_* bits are in base/algorithm.h. */
/* Values of inter=: the index is pc_params.inter. */
extern const char *const pc_inter_names[3];
/* Values of stores= (the writes into node-shared areas of the hierarchical allreduces and of the staging alltoalls,
 * exec/reduce_stream.h): the index is pc_params.stores. */
extern const char *const pc_stores_names[3];
struct pc_forced {
    int alg;
    struct pc_params params; /* the fixed values */
    unsigned mask;           /* which fields are fixed */
};
/* Parses the entries of text that belong to coll. Unknown names, keys or values are PLANCOLL_ERR_ALGORITHM. */
int pc_parse_forced(const struct pc_algorithm_table *algs, const char *text, enum pc_collective coll,
                    struct pc_forced *out, int max, int *n);
/* Candidates of the forced entries: the variants matching each entry's fixed fields, or, when none match, the
 * entry's values over the algorithm's first variant (so any leader count can be forced; the algorithm clamps). */
int pc_enumerate_forced(const struct pc_algorithm_table *algs, const struct pc_problem *p,
                        const struct pc_forced *forced, int nforced, const struct pc_machine_model *m,
                        struct pc_candidate *out, int max, int *n);

/* The default machine model until calibration lands. */
void pc_default_model(struct pc_machine_model *m);

/* Lists every candidate (algorithm x parameters) applicable to p among allowed (NULL: all of algs of p's
 * collective). With allowed given, an inapplicable named algorithm is an error (PLANCOLL_ERR_INAPPLICABLE). */
int pc_enumerate(const struct pc_algorithm_table *algs, const struct pc_problem *p, const int *allowed, int nallowed,
                 const struct pc_machine_model *m, struct pc_candidate *out, int max, int *n);

struct pc_decision {
    struct pc_candidate chosen;
    bool has_runner_up;
    struct pc_candidate runner_up;
    /* The runner-up's time is within the noise of the chosen one's (their ratio's interval contains 1): a
     * statistical tie, which the model's prediction broke (else the simpler plan); the runner-up is then the
     * candidate measured fastest when the model's preference won, else the closest tied one. */
    bool runner_up_tied;
    double tie_noise_pct; /* how far that interval reaches from 1, in percent (the noise's "±N%") */
    /* PLANCOLL_OVERLAP: the candidate with the shortest critical path (measured execute time when measured, else
     * the estimate), which the plain rule would have chosen, when it is not the chosen one. */
    bool has_execute_fastest;
    struct pc_candidate execute_fastest;
    int ncandidates;
    const char *how; /* "forced", "estimate", "measured", "wisdom" */
    bool time_limited; /* plancoll_set_timelimit stopped the timing before every chosen candidate ran */
};

/* Chooses among the candidates: ESTIMATE takes the lowest prediction (ties by table order); MEASURE times
 * the 6 best predictions, PATIENT the 12 best, EXHAUSTIVE every candidate, each level also every algorithm's
 * best-predicted variant and MPI's own collective (".native"). The finalists race in rounds of one batch each
 * (order rotated between rounds, trial plans set up once): from round 5 / 9 / 15 on, a candidate whose paired
 * ratios to the leader's batches are above 1 with 95% confidence (order statistics of the median ratio) leaves
 * the race; it ends with one candidate left or after 15 / 27 / 45 rounds, and the candidates left are tied with the
 * leader: the lowest prediction among them wins, then the simpler plan. If several trial plans do not fit in
 * memory, one candidate after another instead (5 / 9 / 15 batches each). Rank 0 decides every step and broadcasts;
 * plancoll_set_timelimit stops the timing before any batch but the first (the fastest timed so far then wins).
 * A single candidate is taken without timing. verbose (rank 0 only, may be NULL) receives the candidate table.
 * docs/measurement.md has the protocol. */
int pc_choose(const struct pc_algorithm_table *algs, const struct pc_problem *p, const struct pc_candidate *cands,
              int n, bool forced, const struct pc_planner_hooks *hooks, FILE *verbose, struct pc_decision *out);

/* Formats the parameters named in mask (an algorithm's params bits), defaults included, in a fixed order, e.g.
 * "leaders=2 placement=first inter=rd"; "" when mask is 0. Whole fields only when len is short. */
void pc_params_format(const struct pc_params *params, unsigned mask, char *buf, size_t len);
/* A candidate in PLANCOLL_ALGORITHM syntax, every parameter of its algorithm named ("alltoall.mpml:leaders=2:
 * placement=first:transport=p2p"): forcing it enumerates exactly this candidate. Returns the length the whole text
 * needs (snprintf's convention; buf holds "" when it does not fit). */
int pc_spec_format(const struct pc_algorithm_table *algs, int alg, const struct pc_params *params, char *buf,
                   size_t len);

/* ---- in-process wisdom: decisions of MEASURE and above, keyed by the problem key ---- */
struct pc_wisdom_entry {
    char key[160];
    char algorithm[64];
    struct pc_params params;
    double measured_us;
    unsigned rigor; /* the flag that made it: PLANCOLL_MEASURE, PATIENT or EXHAUSTIVE */
    long long decided_at;  /* seconds since the epoch (0: unknown); the newer of two equally rigorous wins */
    char runner_up[64];    /* the second fastest measured candidate ("" when none) and its time */
    double runner_up_us;
};
/* Records or replaces the decision for key: a more rigorous decision, or an equally rigorous one decided at the
 * same time or later, replaces the one held. */
int pc_wisdom_store(const struct pc_wisdom_entry *e);
/* The decision for key made with rigor at least `rigor` (WISDOM_ONLY: any), or NULL. */
const struct pc_wisdom_entry *pc_wisdom_lookup(const char *key, unsigned rigor);
void pc_wisdom_clear(void);
int pc_wisdom_count(void);
/* The i-th entry (0 .. count-1), NULL past the end. */
const struct pc_wisdom_entry *pc_wisdom_at(int i);
/* Whether candidate b should replace a for the same key under the rule of pc_wisdom_store. */
bool pc_wisdom_prefer(const struct pc_wisdom_entry *a, const struct pc_wisdom_entry *b);
/* Replaces the whole store by entries[0..n) (malloc'd; the store takes ownership). Cannot fail: imports build the
 * new store aside and swap it in, so a failed import changes nothing. */
void pc_wisdom_adopt(struct pc_wisdom_entry *entries, int n);

#endif
