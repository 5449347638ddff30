/* The node-shared data segments: one current segment per layout, shared by every plan of the communicator,
 * with a flag area and a data area whose memory is reserved as plans need it (segment.c). Internal. */
#ifndef PC_SEGMENT_H
#define PC_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/layout.h"

/* A node-shared data segment (pc_node_shm_alloc), shared by every plan of the communicator. A plan
 * that needs more than the current one makes a bigger one current; older ones live while plans use them.
 * Rules for plans using the data area: every execution claims the segment (pc_segment_claim) before touching the
 * data area, and may write it only once no node rank still reads what an earlier execution left there: in
 * general a node barrier first (every rank has finished its previous collective on this communicator); a plan
 * whose previous execution was the segment's last claim knows its own protocol and may order its executions by
 * its own synchronisation instead (alltoallv.aggregated: two buffer sets and one barrier per execution). */
struct pc_segment {
    int refcount;
    struct pc_layout *layout;   /* the layout it belongs to */
    struct pc_node_shm shm;
    char *base;                 /* same memory on every node rank, mapped at possibly different addresses */
    size_t size;                /* bytes of data area */
    size_t reserved;            /* bytes from the mapping's start (flag area, then data) with memory behind them:
                                   the flags and the data of the largest plan so far; the rest is never touched */
    _Atomic uint64_t *flags;    /* flag area: nflags slots, one cache line each */
    int nflags;
    int *flag_run;              /* [nflags] 0 free; at a reservation's first flag its length, -1 inside it. Identical
                                   on every rank of the communicator: requests are maxed over it (pc_segment_acquire) */
    uint64_t last_user;         /* the data area's last claimant (pc_segment_claim), 0 for none */
    uint64_t holder;            /* a started execution that uses the data area (pc_segment_try_hold), 0 for none */
};

/* Collective over the communicator: a segment of at least min_bytes data and nflags free flags; the largest
 * request of the communicator wins, so every node's segments and flags are alike and every rank makes the same
 * decisions. Adds a reference. *first_flag receives the first of nflags consecutive flag slots (-1 when no rank
 * asked for flags). The memory behind the flags and the first min_bytes of data (the largest request) is reserved
 * here (reserve.h): a node whose shared-memory file system cannot hold it fails on every rank with
 * PLANCOLL_ERR_NOMEM, the size in the detail, and nothing changes. A plan touches only the data it acquired. */
int pc_segment_acquire(struct pc_layout *layout, size_t min_bytes, int nflags, struct pc_segment **out,
                       int *first_flag);
/* Returns the reservation that starts at first_flag (all of it: it may be longer than this rank's nflags, since
 * another rank may have asked for more; first_flag -1: none) and drops the reference. Collective over the node
 * when the last plan lets go of the layout's current segment: the memory of its data past PC_SEGMENT_CACHE_BYTES
 * goes back to the system between two node barriers; the mapping stays for the next plan, which reserves what it
 * needs. */
void pc_segment_release(struct pc_segment *seg, int first_flag, int nflags);
/* Data bytes of the current segment kept reserved when no plan uses it: small plans made and destroyed in turn
 * take no page faults. */
#define PC_SEGMENT_CACHE_BYTES ((size_t)1 << 20)
/* A fresh id for a user of segments' data areas (one per plan set-up), unique in this process. */
uint64_t pc_segment_new_user(void);
/* Started executions (plancoll_start) hold the data area from their first touch to their end, so that executions
 * in flight at once on one communicator never share it: a later one waits for the earlier to be done on this rank,
 * then synchronises with its node (its own barrier) before writing. Blocking executions wait in their claim.
 * pc_segment_try_hold: true when user now holds the area (it was free or already user's), never waits. */
static inline bool pc_segment_try_hold(struct pc_segment *seg, uint64_t user)
{
    if (seg->holder && seg->holder != user) return false;
    seg->holder = user;
    return true;
}
static inline void pc_segment_unhold(struct pc_segment *seg, uint64_t user)
{
    if (seg->holder == user) seg->holder = 0;
}
/* Waits (advancing the started plans at each pause) until no started execution other than user's holds the area. */
void pc_segment_wait_unheld(struct pc_segment *seg, uint64_t user);
/* Records that user's execution is about to touch seg's data area; true when user was also the last to claim it
 * (nobody else touched it since). The answer is the same on every node rank: a communicator's collectives run
 * in the same order on all its ranks. A blocking execution first waits for a started one holding the area. */
static inline bool pc_segment_claim(struct pc_segment *seg, uint64_t user)
{
    if (seg->holder && seg->holder != user) pc_segment_wait_unheld(seg, user);
    bool same = seg->last_user == user;
    seg->last_user = user;
    return same;
}
static inline _Atomic uint64_t *pc_segment_flag(struct pc_segment *seg, int index)
{
    return (_Atomic uint64_t *)((char *)seg->flags + (size_t)index * PC_CACHELINE);
}

#endif
