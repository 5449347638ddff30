/* The live plans: the handles the API gives out and the plans behind them.
 *
 * A handle is not the plan's address but a number never given out twice in the process (cast to the handle
 * type): a destroyed plan's handle, or a copy of it, stays invalid even when a new plan is allocated at the same
 * address (glibc with its thread cache off does that at once), and a handle that was never a plan is refused
 * without being dereferenced. Lookup is an open-addressing hash table (linear probing, at most half full): one
 * multiplication and nearly always one probe on the execute path, inlined there from handles.h. */
#include "api/handles.h"

#include <stddef.h>
#include <stdlib.h>

struct pc_live_table pc_live;
static size_t nlive;
static uint64_t last_id;

static size_t live_home(uint64_t id) { return pc_live_home(id, pc_live.cap); }

static void live_put(struct pc_live_slot *slots, size_t cap, uint64_t id, struct plancoll_plan_s *p)
{
    size_t at = pc_live_home(id, cap);
    while (slots[at].id) at = (at + 1) & (cap - 1);
    slots[at] = (struct pc_live_slot){id, p};
}

/* The slot of the live plan with this id, or -1. */
static ptrdiff_t live_slot_of(uint64_t id)
{
    if (!id || !pc_live.cap) return -1;
    for (size_t at = live_home(id);; at = (at + 1) & (pc_live.cap - 1)) {
        if (!pc_live.slots[at].id) return -1;
        if (pc_live.slots[at].id == id) return (ptrdiff_t)at;
    }
}

int pc_plan_register(struct plancoll_plan_s *p)
{
    if (2 * (nlive + 1) > pc_live.cap) {
        size_t cap = pc_live.cap ? 2 * pc_live.cap : 64;
        struct pc_live_slot *grown = calloc(cap, sizeof *grown);
        if (!grown) return pc_error(PLANCOLL_ERR_NOMEM, "plan registry");
        for (size_t i = 0; i < pc_live.cap; i++)
            if (pc_live.slots[i].id) live_put(grown, cap, pc_live.slots[i].id, pc_live.slots[i].plan);
        free(pc_live.slots);
        pc_live.slots = grown;
        pc_live.cap = cap;
    }
    p->id = ++last_id;
    if ((uint64_t)(uintptr_t)p->id != p->id) return pc_error(PLANCOLL_ERR_OVERFLOW, "plan handles exhausted");
    live_put(pc_live.slots, pc_live.cap, p->id, p);
    nlive++;
    return PLANCOLL_SUCCESS;
}

/* Backward-shift deletion: the entries after the hole that would not be found past it move into it. */
static void live_remove(size_t hole)
{
    for (size_t j = (hole + 1) & (pc_live.cap - 1); pc_live.slots[j].id; j = (j + 1) & (pc_live.cap - 1)) {
        size_t home = live_home(pc_live.slots[j].id);
        bool stays = hole < j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        pc_live.slots[hole] = pc_live.slots[j];
        hole = j;
    }
    pc_live.slots[hole] = (struct pc_live_slot){0, NULL};
    if (--nlive == 0) {
        free(pc_live.slots);
        pc_live.slots = NULL;
        pc_live.cap = 0;
    }
}

int pc_plan_refused(plancoll_plan handle)
{
    if (!handle) return pc_error(PLANCOLL_ERR_NULL_PLAN, "the plan is NULL");
    return pc_error(PLANCOLL_ERR_INVALID_PLAN, "the handle is not a live plan (destroyed already, or never a plan)");
}

void pc_plan_unregister(const struct plancoll_plan_s *p)
{
    ptrdiff_t slot = live_slot_of(p->id);
    if (slot >= 0) live_remove((size_t)slot);
}
