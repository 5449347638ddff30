/* The distributed-matrix transpose plan (plancoll_plan_transpose): what plan.c needs to run, check and print
 * it. Internal. */
#ifndef PC_TRANSPOSE_H
#define PC_TRANSPOSE_H

#include <stdio.h>

#include "exec/plan.h"

/* plancoll_execute_buffers on a transpose plan: in and out against the plan's sizes. */
int pc_transpose_check_buffers(const struct plancoll_plan_s *p, const void *in, const void *out);
/* plancoll_fprint_plan on a transpose plan. */
void pc_transpose_fprint(const struct plancoll_plan_s *p, FILE *out);
/* plancoll_plan_algorithm on a transpose plan: "transpose(<inner algorithm>)", valid while the plan lives. */
const char *pc_transpose_name(const struct plancoll_plan_s *p);
/* Its inner exchange plan (NULL when nothing moves). */
const struct plancoll_plan_s *pc_transpose_inner(const struct plancoll_plan_s *p);

#endif
