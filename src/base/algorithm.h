/* The algorithm registry's entry. An algorithm is one file that fills one of these (docs/design.md).
 * No MPI here: the planner and the unit tests see algorithms only through this table. */
#ifndef PC_ALGORITHM_H
#define PC_ALGORITHM_H

#include <stdbool.h>

#include "plancoll_codes.h"
#include "base/problem.h"
#include "base/model.h"

struct plancoll_plan_s;

/* The tunable parameters of a candidate. Algorithms ignore the fields they do not use. */
struct pc_params {
    int leaders;   /* leaders per node (leader algorithms) */
    int placement; /* leader placement: 0 first-l, 1 NUMA-spread */
    int segments;  /* pipeline depth / sub-partitions */
    int transport; /* inter-node transport: 0 point-to-point, 1 MPI_Put */
    int radix;     /* Bruck radix */
    int inter;     /* inter-node allreduce among leaders: 0 recursive doubling, 1 reduce-scatter + allgather, 2 MPI's */
    int stores;    /* writes into node-shared areas: enum pc_store_mode (exec/reduce_stream.h) */
};

/* The values of pc_params.stores: ordinary or streaming stores into node-shared areas, or the mode chosen while
 * the plan runs (exec/store_chooser.h), estimated as the cheaper of the two (planner.c predict). */
enum pc_store_mode { PC_STORES_NORMAL = 0, PC_STORES_STREAM = 1, PC_STORES_AUTO = 2 };
/* The longest wait of a stores=auto plan between probes of the other mode, in executions. */
#define PC_STORES_PROBE_MAX 4096


/* The parameters by name (PLANCOLL_ALGORITHM keys): bits of pc_algorithm.params and of a forced entry's mask. */
#define PC_PARAM_LEADERS (1u << 0)
#define PC_PARAM_PLACEMENT (1u << 1)
#define PC_PARAM_SEGMENTS (1u << 2)
#define PC_PARAM_TRANSPORT (1u << 3)
#define PC_PARAM_RADIX (1u << 4)
#define PC_PARAM_INTER (1u << 5)
#define PC_PARAM_STORES (1u << 6)
#define PC_PARAM_ALL 0x7fu

/* An algorithm: one file of src/exec/<collective>/ fills one of these (docs/design.md, "Conventions").
 *
 * The planner runs inapplicable, variants and estimate on every rank and decides from what they return without
 * communicating (ESTIMATE makes no collective at all), so ranks choose alike only if these three are pure
 * functions of agreed inputs: they read only the problem, the parameters and the model, and only fields every
 * rank holds alike (the ones the agreement hash covers, the maxima over ranks plan creation agrees on, the
 * shape), never this rank's own totals (send_total_bytes, an allreduce's in_place); no MPI, no clock, no
 * environment, no global state. The model is the same on every rank: its hash is in the agreement allreduce and
 * calibration takes maxima over ranks. A result that differed between ranks would make them run different
 * algorithms, which hangs.
 *
 * setup, execute and teardown are collective over plan->comm and run on every rank of the plan. */
struct pc_algorithm {
    const char *name; /* "alltoall.pairwise": stable, used in wisdom and PLANCOLL_ALGORITHM */
    enum pc_collective collective;
    const char *summary; /* one line for --list and docs */
    /* The parameters its variants set (PC_PARAM_* bits). A plan's spec names every one of them, default values
     * included, so forcing the spec rebuilds the same plan instead of leaving a parameter to the model. */
    unsigned params;
    /* MPI's own collective (the *.native and *.native_blocking candidates): always timed by MEASURE, so that a
     * measured plan is never slower than MPI on what was measured, and preferred on a tie as the simplest plan. */
    bool mpi_own;
    /* NULL reason when applicable; otherwise a short static explanation of why not (what a forced algorithm's
     * PLANCOLL_ERR_INAPPLICABLE detail quotes). Pure, as above: reads only the problem. The pointer may be NULL:
     * applicable to every problem of its collective. Set-up may still refuse a parameter set, but only on facts
     * every rank holds alike (see setup). */
    const char *(*inapplicable)(const struct pc_problem *);
    /* Whether an execution may let a rank that waits for no one finish on MPI's eager copies, so that in a loop it
     * runs executions ahead and piles unexpected messages onto its peers: the time per execution then grows with
     * the length of the caller's loop, and MEASURE's short batches (each after a barrier) see only its start, so
     * MEASURE times such a plan over a long loop instead (exec/measure.c). Pure, as above. NULL: never (plancoll's
     * own algorithms wait on a peer or a flag in every step, or send synchronously where they would not). */
    bool (*runs_ahead)(const struct pc_problem *);
    /* Writes up to max parameter sets, in a fixed order (ties between equal estimates break by it); returns how
     * many. Pure, as above: reads only the problem (its shape: nodes, ranks per node, NUMA domains, ...). NULL
     * means one default set (all zero). */
    int (*variants)(const struct pc_problem *, struct pc_params *out, int max);
    /* Predicted time in microseconds of one execution under model m, written in the model's primitives
     * (base/model.h, exec/cost.h). Pure, as above: the problem, these parameters and m only. */
    double (*estimate)(const struct pc_problem *, const struct pc_params *, const struct pc_machine_model *m);
    /* The caller's busy time in microseconds of one started execution (plancoll_start .. completion) under model
     * m: the part of estimate's terms that the caller's CPU does itself (copies into and out of node-shared memory,
     * local transposes and packing, reductions) plus the overhead of the calls that post and complete its steps
     * and messages (pc_cost_busy_steps, exec/cost.h), as opposed to the time it spends waiting on the network or
     * on peers. At most estimate. Pure, as estimate. NULL: unknown, taken as the whole estimate (the caller busy
     * throughout), so that an algorithm without it is never preferred for overlap by default. */
    double (*busy)(const struct pc_problem *, const struct pc_params *, const struct pc_machine_model *m);
    /* The mean over a node's ranks of their busy times, for the planner's host-wide work bound (planner.c predict:
     * a host's ranks share its cores, so their CPU work adds up). Needed only where ranks differ much: the
     * allreduces led by a few ranks per node (a leader reduces the node's ppn vectors, the others only copy theirs
     * in and the result out), where ppn times the leader's busy time would charge each node ppn reductions for the
     * leaders' one. NULL: every rank is as busy as the busiest. That holds within a few overhead o's for the other
     * leader-based plans: in alltoall.leader/mpml/onmpml every rank copies its own share of the gather and scatter
     * (the leaders add the posting of ceil((N-1)/l) messages), in alltoallv.aggregated every rank packs and unpacks
     * its own data (the leaders add their calls). Pure, as estimate; clamped as busy (pc_algorithm_mean_busy). */
    double (*mean_busy)(const struct pc_problem *, const struct pc_params *, const struct pc_machine_model *m);
    /* Prepares plan (its problem, params, layout, buffers and types are filled) and hangs the private state on
     * plan->impl. Collective over plan->comm. May allocate memory, create persistent requests, communicators
     * (the layout's leader communicators, pc_layout_comms, or its own MPI_Comm_split) and windows, take
     * node-shared memory (pc_segment_acquire, pc_node_shm_alloc), reserving its pages, and exchange data with the
     * plan-time collectives of shm/requests.h; this is where everything an execution needs is computed. Runs
     * once per timed candidate under MEASURE (on temporary buffers) and once for the chosen plan (on the caller's).
     * Returns PLANCOLL_SUCCESS or a PLANCOLL_ERR_* code with its detail (pc_error, PC_MPI_CHECK). Every rank
     * ends with the same outcome: the caller follows setup with one allreduce of "failed" (pc_agree_error), so
     * one rank's local failure (no memory) becomes an error on every rank, its own code there and
     * PLANCOLL_ERR_REMOTE elsewhere. Inside setup, a failure that can differ between ranks must be agreed before
     * the next collective step (an allreduce of a failure flag, as pap and pc_node_shm_alloc do), or decided
     * only from agreed facts (sizes bounded by the largest node, as dpml's segment) so that every rank refuses
     * alike; a rank must never return early from a step its peers enter. After a failure it may leave partial
     * state on plan->impl: teardown releases it. */
    int (*setup)(struct plancoll_plan_s *);
    /* One execution: moves data from sendbuf (MPI_IN_PLACE when plan->in_place) into recvbuf. Allocates
     * nothing and creates no communicator, window or shared memory: it uses what setup made and sized (scratch,
     * requests, flags and their sequence numbers, the segment it claims). Callable any number of times back to
     * back, on the planned buffers (plan->planned_buffers, plancoll_execute) or on other buffers of the same
     * shape (plancoll_execute_buffers: a native algorithm then runs the nonblocking collective instead of its
     * persistent request). Every rank calls it for the same execution. Messages go over plan->comm (or the
     * communicators setup made or took from the layout) with tags of exec/tags.h, and waits go through
     * pc_wait_all or the layout's node barrier and flags (the wait policy). Returns PLANCOLL_SUCCESS or the
     * error of a failed MPI call (PC_MPI_CHECK); an execution error is this rank's and is not agreed (no
     * collective follows). */
    int (*execute)(struct plancoll_plan_s *, const void *sendbuf, void *recvbuf);
    /* The resumable form of execute (plancoll_start, docs/design.md "Nonblocking plans"): one execution as a
     * schedule of steps (exec/steps.h). start prepares the execution on these buffers without waiting for any other
     * rank (local copies and packing at most; it may post the first step's requests); advance tests the current
     * step's requests and, each time they are complete, finishes the step (unpack, reduce) and posts the next, until
     * a step is still in flight (*done false) or the last one is complete (*done true). Neither ever blocks:
     * a step waits only on MPI requests and node-shared flags it tests (a node barrier is an arrive step and a test
     * step, on the plan's own flags; a plan using the node's segment holds its data area from its first step to its
     * end, pc_segment_try_hold). Same rules as execute otherwise (nothing allocated, tags of the plan, pc_tag). Both
     * NULL: the algorithm cannot run without blocking, and the planner leaves it out of PLANCOLL_NONBLOCKING plans. An algorithm that has
     * them runs execute as start + a waiting loop over advance (pc_steps_execute), so both are one code path. */
    int (*start)(struct plancoll_plan_s *, const void *sendbuf, void *recvbuf);
    int (*advance)(struct plancoll_plan_s *, bool *done);
    /* For algorithms with the stores parameter: switches the plan's store mode between two executions (stores=auto,
     * exec/store_chooser.h), streaming or ordinary stores into its node-shared areas from the next execution on,
     * where the plan can stream at all (contiguous types). Local: ranks may differ, since a reader reads either
     * mode alike and each writer fences its own streaming stores. Never called while an execution is in progress.
     * NULL: the mode is fixed at set-up (stores=auto then runs ordinary stores). */
    void (*set_stores)(struct plancoll_plan_s *, bool stream);
    /* Releases everything setup took and sets plan->impl to NULL: memory, persistent requests
     * (MPI_Request_free), communicators (MPI_Comm_free) and windows (MPI_Win_free, after unlocking) it created,
     * segment reservations and flag slots (pc_segment_release), node-shared mappings (pc_node_shm_free).
     * Called on every rank after a failed setup (impl NULL or half built: check each handle before freeing it),
     * after each MEASURE trial, and by plancoll_destroy_plan (collective, so the collective frees match). Cannot
     * fail. Every algorithm has one (a MEASURE trial calls it whenever impl is set). */
    void (*teardown)(struct plancoll_plan_s *);
};

/* Why the planner must leave algorithm a out for problem p, or NULL: its own inapplicable reason, or, for a plan
 * that will be started (PLANCOLL_NONBLOCKING), that it cannot run without blocking. Pure, as inapplicable. */
static inline const char *pc_algorithm_refuses(const struct pc_algorithm *a, const struct pc_problem *p)
{
    if ((p->flags & (PLANCOLL_NONBLOCKING | PLANCOLL_OVERLAP)) && !(a->start && a->advance))
        return "it runs only blocking (waits inside its steps) and the plan is PLANCOLL_NONBLOCKING";
    return a->inapplicable ? a->inapplicable(p) : NULL;
}

/* Whether an algorithm offers its MPI_Put transport as a candidate for p (a forced transport=put is always
 * honoured). Only between nodes; not on an oversubscribed host, where MPI_Win_flush spins inside MPICH until its
 * target is scheduled and calls into MPI (35-96 ms per execution measured on 2 cores, against 92 us over
 * point-to-point); and not for a plan that will be started (PLANCOLL_NONBLOCKING): MPI-3 has no nonblocking flush,
 * so the step that completes the puts waits inside MPI_Win_flush, and a test call would block for the transfer. */
static inline bool pc_put_transport_offered(const struct pc_problem *p)
{
    return p->shape.nnodes > 1 && !p->shape.oversubscribed && !(p->flags & PLANCOLL_NONBLOCKING);
}

/* The caller's busy time of a candidate (the busy function, or the whole estimate when the algorithm has none),
 * clamped to [0, estimate]. */
static inline double pc_algorithm_busy(const struct pc_algorithm *a, const struct pc_problem *p,
                                       const struct pc_params *params, const struct pc_machine_model *m,
                                       double estimate)
{
    double b = a->busy ? a->busy(p, params, m) : estimate;
    return b < 0 ? 0 : b > estimate ? estimate : b;
}

/* The mean busy time of a rank of a candidate (mean_busy, else its busy time busy_us), clamped to [0, busy_us]. */
static inline double pc_algorithm_mean_busy(const struct pc_algorithm *a, const struct pc_problem *p,
                                            const struct pc_params *params, const struct pc_machine_model *m,
                                            double busy_us)
{
    double b = a->mean_busy ? a->mean_busy(p, params, m) : busy_us;
    return b < 0 ? 0 : b > busy_us ? busy_us : b;
}

/* A table of algorithms: what the planner chooses among. The planner knows algorithms only through the table it
 * is given (an index is a position in it), so it never depends on the executors; the executors' registry
 * (exec/registry.c, pc_registry_table) is the table of the library, unit tests pass small tables of their own. */
struct pc_algorithm_table {
    const struct pc_algorithm *const *entries;
    int count;
};
/* The algorithm at index, NULL out of range. */
const struct pc_algorithm *pc_algorithm_at(const struct pc_algorithm_table *table, int index);
/* The index of the algorithm named name, or -1. */
int pc_algorithm_index(const struct pc_algorithm_table *table, const char *name);

/* The transpose kind's own strategies, named in PLANCOLL_ALGORITHM beside the collectives' algorithms
 * ("transpose.fused", "transpose.composite"; src/transpose): 0 composite, 1 fused, -1 not a transpose strategy.
 * The collectives' parser skips them; the transpose reads them. */
int pc_transpose_strategy_index(const char *name);

#endif
