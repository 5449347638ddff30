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
    if (p->layout && p->tag_slot > 0)
        p->layout->tag_slots_used[p->tag_slot / 64] &= ~(UINT64_C(1) << (p->tag_slot % 64));
    pc_layout_release(p->layout);
    free(p);
}

int pc_check_flags(unsigned flags)
{
    const unsigned known =
        PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE | PLANCOLL_WISDOM_ONLY | PLANCOLL_NONBLOCKING |
        PLANCOLL_OVERLAP;
    if (flags & ~known) return pc_error(PLANCOLL_ERR_FLAGS, "unknown planner flag bits 0x%x", flags & ~known);
    unsigned rigor = flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
    if (rigor & (rigor - 1))
        return pc_error(PLANCOLL_ERR_FLAGS, "more than one of PLANCOLL_MEASURE, PATIENT and EXHAUSTIVE given");
    return PLANCOLL_SUCCESS;
}

void pc_plan_tag_slot(struct plancoll_plan_s *plan)
{
    struct pc_layout *L = plan->layout;
    if (L->tag_slots == 0) {
        int *ub = NULL, found = 0;
        L->tag_slots = 1;
        if (MPI_Comm_get_attr(L->comm, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found && ub) {
            int slots = *ub / PC_TAG_STRIDE; /* the slots whose every tag is at most MPI_TAG_UB */
            L->tag_slots = slots < 1 ? 1 : slots > PC_TAG_MAX_SLOTS ? PC_TAG_MAX_SLOTS : slots;
        }
    }
    plan->tag_slot = 0;
    for (int s = 1; s < L->tag_slots; s++)
        if (!(L->tag_slots_used[s / 64] & (UINT64_C(1) << (s % 64)))) {
            L->tag_slots_used[s / 64] |= UINT64_C(1) << (s % 64);
            plan->tag_slot = s;
            break;
        }
    plan->tag_offset = plan->tag_slot * PC_TAG_STRIDE;
}
