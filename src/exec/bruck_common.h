/* What the Bruck-family algorithms share (alltoall.bruck, alltoallv.padded_bruck, alltoallv.twophase_bruck):
 * the radix parameter, the step list with the slots each step moves, the exchange of uniform slots, and the
 * cost of those steps. The index arithmetic itself is in schedule.h. */
#ifndef PC_BRUCK_COMMON_H
#define PC_BRUCK_COMMON_H

#include <stddef.h>

#include "exec/plan.h"
#include "exec/schedule.h"
#include "exec/steps.h"

#define PC_BRUCK_MAX_STEPS 256

/* The steps of a radix-R schedule over P ranks and the slots each moves (schedule.h, pc_bruck_slot_lists). */
struct pc_bruck_sched {
    int P, radix, nsteps;
    int most; /* the most slots one step moves */
    struct pc_bruck_step steps[PC_BRUCK_MAX_STEPS];
    int *slot_start; /* [nsteps + 1] */
    int *slots;      /* [slot_start[nsteps]] */
};

/* The radix a candidate runs with: its parameter (default 2), at most P, at least 2. */
int pc_bruck_radix(const struct pc_params *params, int P);
/* Radix 2, and radix 4 where P is large enough for it to differ. */
int pc_bruck_variants(const struct pc_problem *p, struct pc_params *out, int max);

int pc_bruck_sched_init(struct pc_bruck_sched *b, int P, int radix);
void pc_bruck_sched_free(struct pc_bruck_sched *b);

/* A uniform exchange over P slots of m bytes (slot i at slots + i m): the schedule and its scratch, allocated at
 * setup (slots zeroed). Each step stages its slots through pack and unpack (most * m bytes each). */
struct pc_bruck_uniform {
    struct pc_bruck_sched sched;
    size_t m;
    char *slots, *pack, *unpack;
    /* the run in progress (pc_bruck_uniform_begin) */
    struct pc_steps steps;
    MPI_Datatype unit;
    int tag;
    char *record;
};

int pc_bruck_uniform_init(struct pc_bruck_uniform *u, int P, int radix, size_t m);
void pc_bruck_uniform_free(struct pc_bruck_uniform *u);
/* An algorithm whose state is one pc_bruck_uniform: setup allocates it as plan->impl with m-byte slots at the
 * plan's radix, teardown frees it. */
int pc_bruck_uniform_setup(struct plancoll_plan_s *plan, size_t m);
void pc_bruck_uniform_teardown(struct plancoll_plan_s *plan);
/* Runs the steps on u->slots; unit is MPI_BYTE or MPI_PACKED. With record, each step's incoming slots are also
 * kept: step s's at record + slot_start[s] m (what passed through this rank; alltoallv.twophase_bruck's
 * metadata pass). */
int pc_bruck_uniform_run(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, MPI_Datatype unit, int tag,
                         char *record);
/* The same run as a schedule of steps (exec/steps.h): begin sets it up (posts nothing), advance moves it without
 * blocking (pc_bruck_uniform_run is begin + a waiting loop over it). tag is the plan's kind of tag (tags.h); the
 * plan's slot is added (pc_tag). */
void pc_bruck_uniform_begin(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, MPI_Datatype unit, int tag,
                            char *record);
int pc_bruck_uniform_advance(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, bool *done);

/* Cost of the steps with m-byte slots (model primitives): sum over steps s of
 *   msg_s(k_s m)             one message of the k_s slots step s moves, to the rank d_s = v R^d ahead: a node
 *                            message when no rank's partner is off-node, else net_concurrent(k, k_s m) with k
 *                            the most ranks of one node whose partner is off-node (pc_cost_offnode_pairs)
 *   + 2 transpose(k_s m)     the pack and the unpack of the slots
 *   + shift_turns(k_s, k_s m) the step waits for its partner's message (cost.h pc_cost_message_turns: scheduler turns
 *                            when oversubscribed, three for a message in the network's rendezvous regime) */
double pc_bruck_steps_cost(const struct pc_problem *p, int radix, double m, const struct pc_machine_model *mm);

#endif
