/* Node barrier, sequence-numbered flags and the node-shared data segments. */
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/plan.h"
#include "layout.h"
#include "reserve.h"
#include "wait.h"

void pc_flag_wait(const struct pc_layout *L, _Atomic uint64_t *flag, uint64_t seq)
{
    if (atomic_load_explicit(flag, memory_order_acquire) >= seq) return;
    struct pc_waiter w;
    pc_waiter_init(&w, L->wait_mode, L->oversubscribed);
    while (atomic_load_explicit(flag, memory_order_acquire) < seq) {
        if (L->poke) L->poke(L->poke_ctx);
        pc_waiter_pause(&w);
    }
}

void pc_node_barrier(struct pc_layout *L)
{
    uint64_t seq = ++L->barrier_seq;
    pc_flag_post(&L->ctl[L->node_rank].barrier_seq, seq);
    for (int i = 0; i < L->node_size; i++) pc_flag_wait(L, &L->ctl[i].barrier_seq, seq);
}

uint64_t pc_segment_new_user(void)
{
    static uint64_t last;
    return ++last;
}

static void segment_free(struct pc_segment *seg)
{
    MPI_Win_unlock_all(seg->win);
    MPI_Win_free(&seg->win);
    free(seg->flag_used);
    free(seg);
}

/* This node rank's slice of [from, to): the node's ranks fault the pages in (or return them) side by side, and
 * each slice lands on its reserver's NUMA domain (first touch), spreading the segment over the node's domains as
 * its users are. */
static void node_slice(const struct pc_layout *L, size_t from, size_t to, size_t *lo, size_t *hi)
{
    size_t n = to > from ? to - from : 0, q = n / (size_t)L->node_size, r = n % (size_t)L->node_size;
    size_t me = (size_t)L->node_rank;
    *lo = from + q * me + (me < r ? me : r);
    *hi = *lo + q + (me < r ? 1 : 0);
}

void pc_segment_release(struct pc_segment *seg, int first_flag, int nflags)
{
    if (!seg) return;
    for (int i = 0; i < nflags; i++) seg->flag_used[first_flag + i] = 0;
    if (--seg->refcount == 0) {
        segment_free(seg);
        return;
    }
    /* Only the layout's reference is left on its current segment: no plan uses the data area.  Every node rank
     * releases the same segments in the same order (plans are made and destroyed collectively), so all of them
     * take this branch together. */
    struct pc_layout *L = seg->layout;
    size_t keep = (size_t)seg->nflags * PC_CACHELINE + PC_SEGMENT_CACHE_BYTES;
    if (seg->refcount == 1 && L && L->segment == seg && seg->reserved > keep) {
        pc_node_barrier(L);
        size_t lo, hi;
        node_slice(L, keep, seg->reserved, &lo, &hi);
        pc_shm_unreserve((char *)seg->flags + lo, hi - lo);
        seg->reserved = keep;
        pc_node_barrier(L);
    }
}

static int segment_create(struct pc_layout *L, size_t data_bytes, int nflags, struct pc_segment **out)
{
    struct pc_segment *seg = calloc(1, sizeof *seg);
    if (!seg) return pc_error(PLANCOLL_ERR_NOMEM, "segment");
    seg->flag_used = calloc((size_t)nflags, 1);
    if (!seg->flag_used) {
        free(seg);
        return pc_error(PLANCOLL_ERR_NOMEM, "segment flags");
    }
    size_t flag_bytes = (size_t)nflags * PC_CACHELINE;
    size_t total = flag_bytes + data_bytes;
    void *mine = NULL;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "false");
    int rc = MPI_Win_allocate_shared(L->node_rank == 0 ? (MPI_Aint)total : 0, 1, info, L->node_comm, &mine,
                                     &seg->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        free(seg->flag_used);
        free(seg);
        return pc_mpi_error(rc, "MPI_Win_allocate_shared (segment)");
    }
    MPI_Aint qsize;
    int disp;
    void *base = NULL;
    MPI_Win_shared_query(seg->win, 0, &qsize, &disp, &base);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, seg->win);
    seg->flags = base;
    seg->base = (char *)base + flag_bytes;
    seg->size = data_bytes;
    seg->nflags = nflags;
    seg->refcount = 1;
    seg->layout = L;
    *out = seg;
    return PLANCOLL_SUCCESS;
}

static int find_free_flags(const struct pc_segment *seg, int n)
{
    for (int i = 0; i + n <= seg->nflags; i++) {
        int j = 0;
        while (j < n && !seg->flag_used[i + j]) j++;
        if (j == n) return i;
        i += j;
    }
    return -1;
}

int pc_segment_acquire(struct pc_layout *L, size_t min_bytes, int nflags, struct pc_segment **out, int *first_flag)
{
    unsigned long long want[2] = {min_bytes, (unsigned long long)(nflags < 0 ? 0 : nflags)}, need[2];
    MPI_Request req;
    PC_MPI_CHECK(MPI_Iallreduce(want, need, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, L->node_comm, &req));
    int err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    struct pc_segment *seg = L->segment, *fresh = NULL;
    int first = seg ? find_free_flags(seg, (int)need[1]) : -1;
    if (!seg || seg->size < need[0] || first < 0) {
        /* Grow geometrically so a sequence of growing plans makes few segments (only what plans use is
         * reserved, below: the rest of the mapping costs address space, not memory). */
        size_t bytes = need[0] < 4096 ? 4096 : (size_t)need[0];
        int flags = 64;
        if (seg) {
            if (bytes < seg->size) bytes = seg->size;
            if (flags < 2 * seg->nflags) flags = 2 * seg->nflags;
            if (need[0] > seg->size && bytes < 2 * seg->size) bytes = 2 * seg->size;
        }
        while (flags < (int)need[1]) flags *= 2;
        err = segment_create(L, bytes, flags, &fresh);
        first = 0;
    }
    struct pc_segment *target = fresh ? fresh : seg;

    /* Memory behind the flag area and the data this plan uses, reserved now (reserve.h): a full /dev/shm is
     * PLANCOLL_ERR_NOMEM here, on every rank, not SIGBUS at the first execution.  Node rank 0 reserves the flag
     * area itself, as it zeroes the flags below; the data is reserved in slices by every node rank. */
    size_t flag_bytes = 0, from = 0, to = 0, lo = 0, hi = 0;
    int reserve_rc = 0;
    if (!err) {
        flag_bytes = (size_t)target->nflags * PC_CACHELINE;
        from = target->reserved > flag_bytes ? target->reserved : flag_bytes;
        to = flag_bytes + (size_t)need[0];
        char *map = (char *)target->flags;
        if (L->node_rank == 0 && target->reserved < flag_bytes)
            reserve_rc = pc_shm_reserve(map + target->reserved, flag_bytes - target->reserved);
        if (!reserve_rc && to > from) {
            node_slice(L, from, to, &lo, &hi);
            reserve_rc = pc_shm_reserve(map + lo, hi - lo);
        }
        /* A previous owner may have left large sequence numbers in these flags. */
        if (!reserve_rc && L->node_rank == 0)
            for (int i = 0; i < (int)need[1]; i++) atomic_store(pc_segment_flag(target, first + i), 0);
        MPI_Win_sync(target->win);
    }

    /* Every rank of the communicator learns whether any node failed, so that a plan's set-up goes on (into
     * collectives over the whole communicator) everywhere or nowhere.  The allreduce is also the barrier that
     * publishes the zeroed flags: no rank leaves it before node rank 0 has entered it. */
    unsigned long long mine[2] = {err ? 1u : 0u, reserve_rc ? (unsigned long long)to : 0u}, any[2] = {0, 0};
    int rc = MPI_Iallreduce(mine, any, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, L->comm, &req);
    int agreed = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Iallreduce (segment)");
    if (!err) err = agreed;
    if (!err && any[0]) err = pc_error(PLANCOLL_ERR_REMOTE, "creating a node-shared segment failed on another rank");
    if (!err && any[1])
        err = reserve_rc ? pc_error(PLANCOLL_ERR_NOMEM,
                                    "node-shared segment of %llu bytes: no shared memory for it (the node's /dev/shm "
                                    "is full or too small)",
                                    any[1])
                         : pc_error(PLANCOLL_ERR_NOMEM,
                                    "node-shared segment of %llu bytes: no shared memory for it on a node (its "
                                    "/dev/shm is full or too small)",
                                    any[1]);
    if (err) {
        if (fresh) {
            segment_free(fresh); /* collective over the node: every node rank made it */
        } else if (seg && hi > lo && !reserve_rc) {
            pc_shm_unreserve((char *)seg->flags + lo, hi - lo); /* give back this rank's slice of a failed plan */
        }
        return err;
    }
    MPI_Win_sync(target->win);
    if (target->reserved < to) target->reserved = to;
    if (fresh) {
        struct pc_segment *old = seg;
        L->segment = seg = fresh;
        if (old) pc_segment_release(old, 0, 0); /* the layout's reference moves to the new segment */
    }
    for (int i = 0; i < (int)need[1]; i++) seg->flag_used[first + i] = 1;
    seg->refcount++;
    *out = seg;
    *first_flag = first;
    return PLANCOLL_SUCCESS;
}
