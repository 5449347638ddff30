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
/* The error for a handle that is not a live plan, detail set: PLANCOLL_ERR_NULL_PLAN or _INVALID_PLAN. */
int pc_plan_refused(plancoll_plan handle);

/* The live-plan table (handles.c), here so that every execution finds its plan without a call. */
struct pc_live_slot {
    uint64_t id; /* 0: empty */
    struct plancoll_plan_s *plan;
};
struct pc_live_table {
    struct pc_live_slot *slots;
    size_t cap; /* 0 or a power of two */
};
extern struct pc_live_table pc_live;

static inline size_t pc_live_home(uint64_t id, size_t cap)
{
    return (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
}

/* A live plan's handle. */
static inline plancoll_plan pc_plan_handle(const struct plancoll_plan_s *p) { return (plancoll_plan)(uintptr_t)p->id; }

/* The live plan behind a handle, NULL when the handle is not a live plan. */
static inline struct plancoll_plan_s *pc_plan_lookup(plancoll_plan handle)
{
    uint64_t id = (uint64_t)(uintptr_t)handle;
    if (!id || !pc_live.cap) return NULL;
    for (size_t at = pc_live_home(id, pc_live.cap);; at = (at + 1) & (pc_live.cap - 1)) {
        if (!pc_live.slots[at].id) return NULL;
        if (pc_live.slots[at].id == id) return pc_live.slots[at].plan;
    }
}

/* The live plan behind a handle, or NULL with the error set in *err (PLANCOLL_ERR_NULL_PLAN, _INVALID_PLAN). */
static inline struct plancoll_plan_s *pc_plan_check(plancoll_plan handle, int *err)
{
    struct plancoll_plan_s *p = pc_plan_lookup(handle);
    *err = p ? PLANCOLL_SUCCESS : pc_plan_refused(handle);
    return p;
}

#endif
