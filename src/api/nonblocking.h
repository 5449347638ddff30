/* Nonblocking plans: the process's active plans and their progress (nonblocking.c). Internal. */
#ifndef PC_NONBLOCKING_H
#define PC_NONBLOCKING_H

#include "exec/plan.h"

/* Advances every active plan once (never blocks); nothing when none is active or when called from inside itself. */
void pc_progress_active(void);
/* PLANCOLL_ERR_ACTIVE with the detail naming what (the call refused) when the plan is active, else success. */
int pc_refuse_active(const struct plancoll_plan_s *plan, const char *what);

#endif
