/* What the Bruck-family algorithms share (alltoall.bruck, alltoallv.padded_bruck, alltoallv.twophase_bruck):
 * the radix parameter, the step list with the slots each step moves, the exchange of uniform slots, and the
 * cost of those steps. The index arithmetic itself is in schedule.h. */
#ifndef PC_BRUCK_COMMON_H
#define PC_BRUCK_COMMON_H

#include <stddef.h>

#include "../core/plan.h"
#include "schedule.h"

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

/* Runs the steps over P slots of m bytes each at slotbuf (slot i at slotbuf + i m), staging each step's slots
 * through pack and unpack (b->most * m bytes each); unit is MPI_BYTE or MPI_PACKED. */
int pc_bruck_exchange(const struct plancoll_plan_s *plan, const struct pc_bruck_sched *b, char *slotbuf, size_t m,
                      char *pack, char *unpack, MPI_Datatype unit, int tag);

/* Cost of the steps with m-byte slots: sum over steps s of (alpha + k_s m beta + 2 k_s m c_copy), k_s the
 * slots step s moves (one message, a pack and an unpack copy). */
double pc_bruck_steps_cost(int P, int radix, double m, const struct pc_machine_model *mm);

#endif
