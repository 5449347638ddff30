/* The plan object: what an algorithm's set-up, execute and teardown receive, and the operations of each kind of
 * plan, through which the API runs, checks, names, prints and destroys a plan without knowing its kind. Internal. */
#ifndef PC_PLAN_H
#define PC_PLAN_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/algorithm.h"
#include "base/errors.h"
#include "base/problem.h"
#include "exec/datatype.h"
#include "exec/reduce.h"
#include "exec/store_chooser.h"
#include "exec/tags.h"
#include "plancoll.h"
#include "shm/mpi_compat.h"
#include "shm/mpi_error.h"
#include "shm/requests.h"

struct pc_layout;
struct plancoll_plan_s;

/* The operations of a kind of plan (FFTW's plan_adt): one table per kind, shared by all plans of that kind. The
 * collectives (pc_collective_plan_ops, exec/collective_plan.c) run a registry algorithm; the transpose
 * (src/transpose) wraps an inner alltoall(v) plan of its own. A new kind is a new table, not a new branch in the
 * API. */
struct pc_plan_ops {
    /* One execution on these buffers (sendbuf may be MPI_IN_PLACE where the kind allows it). */
    int (*execute)(struct plancoll_plan_s *, const void *sendbuf, void *recvbuf);
    /* plancoll_start's work: NULL when the kind cannot be started (plancoll_start then fails with
     * PLANCOLL_ERR_NOT_STARTABLE); otherwise a code with the detail set when this plan cannot (its algorithm has no
     * start), else it begins one execution on these buffers without waiting for another rank. */
    int (*start)(struct plancoll_plan_s *, const void *sendbuf, void *recvbuf);
    /* Moves the started execution on without blocking; *done when it is complete. */
    int (*advance)(struct plancoll_plan_s *, bool *done);
    /* plancoll_execute_buffers: the new buffers against the plan's shape; a code with the detail set. */
    int (*check_buffers)(const struct plancoll_plan_s *, const void *sendbuf, const void *recvbuf);
    /* plancoll_plan_algorithm: the plan's algorithm by name, valid while the plan lives. */
    const char *(*name)(const struct plancoll_plan_s *);
    /* plancoll_plan_spec: the spec that rebuilds the plan's choice into buf (len > 0), or a code with the detail
     * set. */
    int (*spec)(const struct plancoll_plan_s *, char *buf, size_t len);
    /* plancoll_fprint_plan: the plan's description. */
    void (*fprint)(const struct plancoll_plan_s *, FILE *out);
    /* Releases what the kind holds (impl and what hangs from it); pc_plan_free then releases what every plan
     * holds. Must accept a plan whose creation failed half-way. */
    void (*teardown)(struct plancoll_plan_s *);
};

/* The kind of every plancoll_plan_alltoall, _alltoallv and _allreduce plan: alg and params name the algorithm. */
extern const struct pc_plan_ops pc_collective_plan_ops;

struct plancoll_plan_s {
    uint64_t id; /* the handle's value once live (pc_plan_register); 0 before */
    const struct pc_plan_ops *ops; /* the plan's kind; set when the plan is allocated */
    const struct pc_algorithm *alg; /* a collective's chosen algorithm; NULL for other kinds */
    struct pc_params params;
    struct pc_problem prob;
    struct pc_layout *layout; /* holds a reference */
    MPI_Comm comm;            /* layout's duplicate of the user's communicator */
    int rank, size;
    unsigned flags;

    /* buffers as planned */
    const void *sendbuf;
    void *recvbuf;
    bool in_place;

    /* alltoall */
    int sendcount, recvcount;
    struct pc_typeinfo stype, rtype;
    /* alltoallv: copies of the caller's arrays */
    int *sendcounts, *sdispls, *recvcounts, *rdispls;
    /* allreduce */
    int count;
    struct pc_reduction red;

    void *impl; /* the algorithm's private state (a collective), or the kind's (the transpose's) */
    /* The execution in progress (started or executed): its buffers, for the steps of a schedule (exec/steps.h). */
    const void *run_sendbuf;
    void *run_recvbuf;
    /* Added to every point-to-point tag of the plan's executions (pc_tag): plans on one communicator active at once
     * never match each other's messages. A slot of the layout, the same on every rank (pc_plan_tag_slot). */
    int tag_offset, tag_slot;
    /* Nonblocking plans (api/nonblocking.c): started and not yet completed by test or wait; the execution finished
     * (done) with error active_err (its detail in active_detail), and the process's list of active plans. */
    bool active, active_done;
    int active_err;
    char active_detail[200];
    struct plancoll_plan_s *active_prev, *active_next;
    bool progress_thread; /* PLANCOLL_PROGRESS_THREAD=1 at creation: the progress thread advances it, holding a reference */
    bool planned_buffers; /* this execution runs on the buffers given at plan time (plancoll_execute) */
    struct pc_store_chooser stores_auto; /* stores=auto: the mode chosen while the plan runs (exec/store_chooser.h) */

    /* provenance, for plancoll_fprint_plan */
    const char *chosen_by;
    double predicted_us, measured_us;
    bool model_calibrated; /* predicted_us came from a calibrated model */
    char runner_up[64];
    double runner_up_us;
    bool runner_up_tied;  /* within the measurement's noise of the chosen one: the model broke the tie */
    double tie_noise_pct; /* that noise, ± percent */
    /* Candidates the planner chose first whose set-up found too little node-shared memory, so it chose again
     * (api/plan.c plan_finish): how many, and the first one's spec and error detail ("" when none). */
    int unfit_count;
    char unfit_first[96];
    char unfit_detail[160];
    /* started plans: the caller's busy estimate of the choice; the other measured time (< 0: none; planner.h
     * pc_candidate.measured_other_us); PLANCOLL_OVERLAP: the candidate with the shortest critical path when it is
     * not the choice (execute_fastest[0] "" otherwise), its estimates and its measured times (< 0: not timed) */
    double busy_us, measured_other_us;
    char execute_fastest[64];
    double execute_fastest_predicted_us, execute_fastest_busy_us, execute_fastest_overlapped_us, execute_fastest_us;
    int candidates;
    double setup_seconds;
    unsigned long long executions;
    double first_execution_us; /* this rank's wall time of the plan's first execution; < 0 before it */
};

/* One execution through the plan's kind; the first is timed, for the set-up cost in executions that the
 * collectives' fprint reports. Allocates nothing beyond what the kind's execute does (nothing). */
static inline int pc_plan_run(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    double t0 = plan->executions == 0 ? MPI_Wtime() : 0;
    int err = plan->ops->execute(plan, sendbuf, recvbuf);
    if (plan->executions++ == 0) plan->first_execution_us = (MPI_Wtime() - t0) * 1e6;
    return err;
}

/* plancoll_execute's work: one execution on the buffers given at plan time. */
static inline int pc_plan_run_planned(struct plancoll_plan_s *plan)
{
    plan->planned_buffers = true;
    return pc_plan_run(plan, plan->in_place ? MPI_IN_PLACE : plan->sendbuf, plan->recvbuf);
}

/* The tag of the plan's messages of kind tag (exec/tags.h). */
static inline int pc_tag(const struct plancoll_plan_s *plan, int tag) { return plan->tag_offset + tag; }

/* Gives the plan a tag slot of its layout (the lowest free one: plans are made and destroyed collectively, so
 * every rank picks the same), or the shared slot 0 when the communicator has more live plans than MPI's tags
 * allow slots (MPI_TAG_UB / PC_TAG_STRIDE); pc_plan_free returns it. */
void pc_plan_tag_slot(struct plancoll_plan_s *plan);

/* Waits for n requests with the library's wait policy, on the plan's layout (shm/requests.h). */
static inline int pc_wait_all(const struct plancoll_plan_s *plan, int n, MPI_Request *reqs)
{
    return pc_wait_layout(plan->layout, n, reqs);
}

/* The planner flags every kind of plan accepts: PLANCOLL_ERR_FLAGS for unknown bits or two rigour levels. */
int pc_check_flags(unsigned flags);

/* Tears down and frees a plan that is not (or no longer) live: its kind's teardown, then what every plan holds
 * (type duplicates, count arrays, the layout reference). */
void pc_plan_free(struct plancoll_plan_s *p);

#endif
