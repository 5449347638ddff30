/* The plan object's teardown, common to every kind of plan. */
#include "exec/plan.h"

#include <stdlib.h>

#include "base/phase_times.h"
#include "shm/layout.h"

void pc_plan_free(struct plancoll_plan_s *p)
{
    if (!p) return;
    double t0 = pc_phase_start();
    if (p->alg && p->alg->teardown) p->alg->teardown(p);
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
