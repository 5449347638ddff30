/* Node barrier, sequence-numbered flags and the node-shared data segments. */
#include <stdlib.h>
#include <string.h>

#include "../core/errors.h"
#include "../core/phase_times.h"
#include "../core/plan.h"
#include "layout.h"
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

void pc_segment_release(struct pc_segment *seg, int first_flag, int nflags)
{
    if (!seg) return;
    for (int i = 0; i < nflags; i++) seg->flag_used[first_flag + i] = 0;
    if (--seg->refcount == 0) segment_free(seg);
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

static int segment_acquire(struct pc_layout *L, size_t min_bytes, int nflags, struct pc_segment **out, int *first_flag);

int pc_segment_acquire(struct pc_layout *L, size_t min_bytes, int nflags, struct pc_segment **out, int *first_flag)
{
    double t0 = pc_phase_start();
    int err = segment_acquire(L, min_bytes, nflags, out, first_flag);
    pc_phase_add(PC_PHASE_SEGMENT, t0);
    return err;
}

static int segment_acquire(struct pc_layout *L, size_t min_bytes, int nflags, struct pc_segment **out, int *first_flag)
{
    unsigned long long want[2] = {min_bytes, (unsigned long long)(nflags < 0 ? 0 : nflags)}, need[2];
    MPI_Request req;
    PC_MPI_CHECK(MPI_Iallreduce(want, need, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, L->node_comm, &req));
    int err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    struct pc_segment *seg = L->segment;
    int first = seg ? find_free_flags(seg, (int)need[1]) : -1;
    if (!seg || seg->size < need[0] || first < 0) {
        /* Grow geometrically so a sequence of growing plans makes few segments. */
        size_t bytes = need[0] < 4096 ? 4096 : (size_t)need[0];
        int flags = 64;
        if (seg) {
            if (bytes < seg->size) bytes = seg->size;
            if (flags < 2 * seg->nflags) flags = 2 * seg->nflags;
            if (need[0] > seg->size && bytes < 2 * seg->size) bytes = 2 * seg->size;
        }
        while (flags < (int)need[1]) flags *= 2;
        struct pc_segment *fresh = NULL;
        err = segment_create(L, bytes, flags, &fresh);
        if (err) return err;
        if (seg) pc_segment_release(seg, 0, 0); /* the layout's reference moves to the new segment */
        L->segment = seg = fresh;
        first = 0;
    }
    for (int i = 0; i < (int)need[1]; i++) seg->flag_used[first + i] = 1;
    /* A previous owner may have left large sequence numbers in these flags. */
    if (L->node_rank == 0)
        for (int i = 0; i < (int)need[1]; i++) atomic_store(pc_segment_flag(seg, first + i), 0);
    MPI_Win_sync(seg->win);
    PC_MPI_CHECK(MPI_Ibarrier(L->node_comm, &req));
    err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    MPI_Win_sync(seg->win);
    seg->refcount++;
    *out = seg;
    *first_flag = first;
    return PLANCOLL_SUCCESS;
}
