/* The live plans: the handles the API gives out and the plans behind them.
 *
 * A handle is not the plan's address but a number never given out twice in the process (cast to the handle
 * type): a destroyed plan's handle, or a copy of it, stays invalid even when a new plan is allocated at the same
 * address (glibc with its thread cache off does that at once), and a handle that was never a plan is refused
 * without being dereferenced. Lookup is an open-addressing hash table (linear probing, at most half full): one
 * multiplication and nearly always one probe on the execute path. */
#include "api/handles.h"

#include <stdlib.h>

struct live_slot {
    uint64_t id; /* 0: empty */
    struct plancoll_plan_s *plan;
};
static struct live_slot *live;
static size_t live_cap, nlive; /* live_cap is 0 or a power of two */
static uint64_t last_id;

static size_t live_home(uint64_t id) { return (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (live_cap - 1); }

static void live_put(struct live_slot *slots, size_t cap, uint64_t id, struct plancoll_plan_s *p)
{
    size_t at = (size_t)((id * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (cap - 1);
    while (slots[at].id) at = (at + 1) & (cap - 1);
    slots[at] = (struct live_slot){id, p};
}

static struct plancoll_plan_s *live_find(plancoll_plan handle, size_t *slot)
{
    uint64_t id = (uint64_t)(uintptr_t)handle;
    if (!id || !live_cap) return NULL;
    for (size_t at = live_home(id);; at = (at + 1) & (live_cap - 1)) {
        if (!live[at].id) return NULL;
        if (live[at].id == id) {
            if (slot) *slot = at;
            return live[at].plan;
        }
    }
}

int pc_plan_register(struct plancoll_plan_s *p)
{
    if (2 * (nlive + 1) > live_cap) {
        size_t cap = live_cap ? 2 * live_cap : 64;
        struct live_slot *grown = calloc(cap, sizeof *grown);
        if (!grown) return pc_error(PLANCOLL_ERR_NOMEM, "plan registry");
        for (size_t i = 0; i < live_cap; i++)
            if (live[i].id) live_put(grown, cap, live[i].id, live[i].plan);
        free(live);
        live = grown;
        live_cap = cap;
    }
    p->id = ++last_id;
    if ((uint64_t)(uintptr_t)p->id != p->id) return pc_error(PLANCOLL_ERR_OVERFLOW, "plan handles exhausted");
    live_put(live, live_cap, p->id, p);
    nlive++;
    return PLANCOLL_SUCCESS;
}

/* Backward-shift deletion: the entries after the hole that would not be found past it move into it. */
static void live_remove(size_t hole)
{
    for (size_t j = (hole + 1) & (live_cap - 1); live[j].id; j = (j + 1) & (live_cap - 1)) {
        size_t home = live_home(live[j].id);
        bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        live[hole] = live[j];
        hole = j;
    }
    live[hole] = (struct live_slot){0, NULL};
    if (--nlive == 0) {
        free(live);
        live = NULL;
        live_cap = 0;
    }
}

plancoll_plan pc_plan_handle(const struct plancoll_plan_s *p) { return (plancoll_plan)(uintptr_t)p->id; }

struct plancoll_plan_s *pc_plan_lookup(plancoll_plan handle) { return live_find(handle, NULL); }

struct plancoll_plan_s *pc_plan_check(plancoll_plan handle, int *err)
{
    struct plancoll_plan_s *p = NULL;
    if (!handle) *err = pc_error(PLANCOLL_ERR_NULL_PLAN, "the plan is NULL");
    else if (!(p = live_find(handle, NULL)))
        *err = pc_error(PLANCOLL_ERR_INVALID_PLAN, "the handle is not a live plan (destroyed already, or never a plan)");
    else
        *err = PLANCOLL_SUCCESS;
    return p;
}

void pc_plan_unregister(const struct plancoll_plan_s *p)
{
    size_t slot = 0;
    if (live_find(pc_plan_handle(p), &slot)) live_remove(slot);
}
