/* Nonblocking plans: the process's active plans and their progress (nonblocking.c). Internal. */
#ifndef PC_NONBLOCKING_H
#define PC_NONBLOCKING_H

#include "exec/plan.h"

/* Advances every active plan once (never blocks); nothing when none is active or when called from inside itself. */
void pc_progress_active(void);
/* PLANCOLL_ERR_ACTIVE with the detail naming what (the call refused) when the plan is active, else success. */
int pc_refuse_active(const struct plancoll_plan_s *plan, const char *what);

/* PLANCOLL_PROGRESS_THREAD: *wanted = true for 1, false for 0 or unset; PLANCOLL_ERR_ENV for another value and
 * PLANCOLL_ERR_THREAD_LEVEL when MPI runs below MPI_THREAD_MULTIPLE (local: plan creation agrees on it). */
int pc_progress_thread_setting(bool *wanted);
/* The plan is advanced by the progress thread from now on, which starts if it is not running. */
int pc_progress_thread_acquire(struct plancoll_plan_s *plan);
/* The plan no longer holds the thread (destroyed, or its creation failed); the last one stops it. */
void pc_progress_thread_release(struct plancoll_plan_s *plan);

#endif
