/* The plan object's teardown, common to every kind of plan. */
#include "exec/plan.h"

#include <stdlib.h>

#include "base/phase_times.h"
#include "shm/layout.h"

void pc_plan_free(struct plancoll_plan_s *p)
{
    if (!p) return;
    double t0 = pc_phase_start();
    p->ops->teardown(p);
    pc_typeinfo_free(&p->stype);
    pc_typeinfo_free(&p->rtype);
    free(p->sendcounts);
    free(p->sdispls);
    free(p->recvcounts);
    free(p->rdispls);
    pc_phase_add(PC_PHASE_DESTROY, t0);
    pc_layout_release(p->layout);
    free(p);
}

int pc_check_flags(unsigned flags)
{
    const unsigned known = PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE | PLANCOLL_WISDOM_ONLY;
    if (flags & ~known) return pc_error(PLANCOLL_ERR_FLAGS, "unknown planner flag bits 0x%x", flags & ~known);
    unsigned rigor = flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
    if (rigor & (rigor - 1))
        return pc_error(PLANCOLL_ERR_FLAGS, "more than one of PLANCOLL_MEASURE, PATIENT and EXHAUSTIVE given");
    return PLANCOLL_SUCCESS;
}
