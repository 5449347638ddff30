/* Plan handles: the numbers the API gives out for live plans (handles.c), and the start of a plan's creation
 * (plan.c). Internal. */
#ifndef PC_HANDLES_H
#define PC_HANDLES_H

#include "exec/plan.h"

/* Plan life cycle, shared by the creation entries of every kind of plan. */
/* Checks MPI, out and comm, allocates the plan and attaches comm's layout (collective at first use). */
int pc_plan_begin(MPI_Comm comm, unsigned flags, enum pc_collective coll, plancoll_plan *out,
                  struct plancoll_plan_s **pp);
/* Makes p live: gives it a handle never used before in the process (plancoll_execute and friends accept it). */
int pc_plan_register(struct plancoll_plan_s *p);
/* Takes p out of the live plans (its handle is refused from then on); nothing when p is not live. */
void pc_plan_unregister(const struct plancoll_plan_s *p);
/* A live plan's handle, and the live plan behind a handle (NULL when the handle is not a live plan). */
plancoll_plan pc_plan_handle(const struct plancoll_plan_s *p);
struct plancoll_plan_s *pc_plan_lookup(plancoll_plan handle);
/* The live plan behind a handle, or NULL with the error set in *err (PLANCOLL_ERR_NULL_PLAN, _INVALID_PLAN). */
struct plancoll_plan_s *pc_plan_check(plancoll_plan handle, int *err);

#endif
