#ifndef PC_MEASURE_H
#define PC_MEASURE_H

#include "../core/plan.h"
#include "../planner/planner.h"

void pc_measure_hooks(struct plancoll_plan_s *p, struct pc_planner_hooks *hooks);
/* Collective: every rank learns whether any failed. Returns the local error, PLANCOLL_ERR_REMOTE, or success. */
int pc_agree_error(struct plancoll_plan_s *p, int err);

#endif
