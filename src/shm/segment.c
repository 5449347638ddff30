/* Node-shared memory (pc_node_shm_alloc: a POSIX shared mapping, or an MPI shared window) and the node-shared
 * data segments built on it (segment.h): acquisition, reservation, release. */
#include "shm/segment.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/errors.h"
#include "base/phase_times.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#include "shm/mpi_error.h"
#include "shm/requests.h"
#include "shm/nomem.h"
#include "shm/reserve.h"
#include "shm/wait.h"

/* ---- node-shared memory ---- */

#if PC_MPI_SIMULATED
/* Under SMPI every simulated rank lives in this one process, and smpicc makes getpid SMPI's rank number (the same
 * in every simulation run at once): object names take the process's own pid, and each rank's counter starts at
 * its SMPI number in the high bits, so two simulated node ranks 0 never race for one name. */
#undef getpid
#endif

/* Node rank 0's POSIX shared memory object: "/plancoll-<pid>-<n>", created exclusively (a name left by a crashed
 * process of the same pid is skipped). Returns the mapping or MAP_FAILED; *id receives n, or -1. */
static void *shm_create(size_t bytes, long long *id)
{
    static long long counter;
#if PC_MPI_SIMULATED
    if (!counter) counter = (long long)smpi_getpid() << 32;
#endif
    *id = -1;
    for (int attempt = 0; attempt < 8; attempt++) {
        char name[64];
        long long n = ++counter;
        snprintf(name, sizeof name, "/plancoll-%ld-%lld", (long)getpid(), n);
        int fd = shm_open(name, O_CREAT | O_EXCL | O_RDWR, 0600);
        if (fd < 0) {
            if (errno == EEXIST) continue;
            return MAP_FAILED;
        }
        void *addr = MAP_FAILED;
        if (ftruncate(fd, (off_t)bytes) == 0) addr = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (addr == MAP_FAILED) {
            shm_unlink(name);
            return MAP_FAILED;
        }
        *id = n;
        return addr;
    }
    return MAP_FAILED;
}

static void shm_name(char *name, size_t len, long long pid, long long id)
{
    snprintf(name, len, "/plancoll-%lld-%lld", pid, id);
}

/* The fallback: an MPI shared window on the node communicator, node rank 0's part holding all of it. */
static int window_alloc(struct pc_layout *L, size_t bytes, struct pc_node_shm *out)
{
    int err = pc_layout_comms(L);
    if (err) return err;
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "false");
    void *mine = NULL;
    int rc = MPI_Win_allocate_shared(L->node_rank == 0 ? (MPI_Aint)bytes : 0, 1, info, L->node_comm, &mine, &out->win);
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
        out->win = MPI_WIN_NULL;
        return pc_mpi_error(rc, "MPI_Win_allocate_shared (node memory)");
    }
    MPI_Aint size;
    int disp;
    void *base = NULL;
    PC_MPI_CHECK(MPI_Win_shared_query(out->win, 0, &size, &disp, &base));
    PC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, out->win));
    out->base = base;
    out->bytes = bytes;
    /* Node rank 0 zeroes the window once its memory is reserved (reserve.h: a full /dev/shm is an error, not
     * SIGBUS); every rank of the communicator learns whether a node failed (every rank came here: the fallback
     * is an agreed decision), and the allreduce publishes the zeros. */
    uint64_t failed = 0;
    if (L->node_rank == 0) {
        if (pc_shm_reserve(base, bytes) == 0) memset(base, 0, bytes);
        else failed = bytes;
    }
    PC_MPI_CHECK(MPI_Win_sync(out->win));
    err = pc_shm_agree_reserved(L, PLANCOLL_SUCCESS, failed, "node-shared memory (MPI shared window)");
    PC_MPI_CHECK(MPI_Win_sync(out->win));
    if (err) pc_node_shm_free(out);
    return err;
}

int pc_node_shm_alloc(struct pc_layout *L, size_t bytes, struct pc_node_shm *out)
{
    /* bytes == 0: this node takes part in the collective and maps nothing */
    out->base = NULL;
    out->bytes = 0;
    out->win = MPI_WIN_NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t map_bytes = (bytes + page - 1) / page * page;
    /* node rank 0 makes the object; every rank learns its node's (pid, id): over the node communicator when
     * there is one, else one allgather over the layout's (no communicator is made for it) */
    long long mine[2] = {(long long)getpid(), -1};
    void *addr = MAP_FAILED;
    if (L->node_rank == 0 && bytes > 0) addr = shm_create(map_bytes, &mine[1]);
    long long node_obj[2] = {mine[0], mine[1]};
    MPI_Request req;
    int err;
    if (L->node_comm != MPI_COMM_NULL) {
        PC_MPI_CHECK(pc_mpi_ibcast(node_obj, 2, MPI_LONG_LONG, 0, L->node_comm, &req));
        err = pc_wait_layout(L, 1, &req);
    } else {
        long long *all = malloc(sizeof(long long) * 2 * (size_t)L->size);
        if (!all) return pc_error(PLANCOLL_ERR_NOMEM, "node memory: %d ranks' names", L->size);
        err = pc_allgather_wait(L, mine, all, 2, MPI_LONG_LONG, "MPI_Iallgather (node memory)");
        int first = L->node_ranks[L->node_first[L->node_id]];
        node_obj[0] = all[2 * first];
        node_obj[1] = all[2 * first + 1];
        free(all);
    }
    if (err) {
        if (addr != MAP_FAILED) munmap(addr, map_bytes);
        return err;
    }
    char name[64];
    shm_name(name, sizeof name, node_obj[0], node_obj[1]);
    if (L->node_rank != 0 && node_obj[1] >= 0) {
        int fd = shm_open(name, O_RDWR, 0);
        if (fd >= 0) {
            addr = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            close(fd);
        }
    }
    /* Every rank of the communicator learns whether every node mapped its object: the fallback, if needed, is
     * the same decision everywhere. Node rank 0 unlinks once every rank has opened (the object lives on in the
     * mappings and vanishes with the last munmap: nothing is left in /dev/shm). */
    int ok = bytes == 0 || addr != MAP_FAILED, all_ok = 0;
    PC_MPI_CHECK(pc_mpi_iallreduce(&ok, &all_ok, 1, MPI_INT, MPI_MIN, L->comm, &req));
    err = pc_wait_layout(L, 1, &req);
    if (L->node_rank == 0 && node_obj[1] >= 0) shm_unlink(name);
    if (!err && all_ok) {
        if (bytes > 0) {
            out->base = addr;
            out->bytes = map_bytes;
        }
        return PLANCOLL_SUCCESS;
    }
    if (addr != MAP_FAILED) munmap(addr, map_bytes);
    if (err) return err;
    return window_alloc(L, bytes, out);
}

void pc_node_shm_free(struct pc_node_shm *shm)
{
    if (shm->win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(shm->win);
        MPI_Win_free(&shm->win);
    } else if (shm->base) {
        munmap(shm->base, shm->bytes);
    }
    shm->base = NULL;
    shm->bytes = 0;
}

void pc_node_shm_sync(const struct pc_node_shm *shm)
{
    atomic_thread_fence(memory_order_seq_cst);
    if (shm->win != MPI_WIN_NULL) MPI_Win_sync(shm->win);
}

/* ---- segments ---- */

uint64_t pc_segment_new_user(void)
{
    static uint64_t last;
    return ++last;
}

void pc_segment_wait_unheld(struct pc_segment *seg, uint64_t user)
{
    struct pc_waiter w;
    const struct pc_layout *L = seg->layout;
    pc_waiter_init(&w, L ? L->wait_mode : PC_WAIT_AUTO, L && L->oversubscribed);
    while (seg->holder && seg->holder != user) pc_waiter_pause(&w); /* the pause advances the holder (wait.h) */
}

static void segment_free(struct pc_segment *seg)
{
    pc_node_shm_free(&seg->shm);
    free(seg->flag_run);
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
    (void)nflags; /* the reservation's own length counts: the same on every rank */
    if (!seg) return;
    if (first_flag >= 0 && first_flag < seg->nflags && seg->flag_run[first_flag] > 0) {
        int n = seg->flag_run[first_flag];
        for (int i = 0; i < n; i++) seg->flag_run[first_flag + i] = 0;
    }
    if (--seg->refcount == 0) {
        segment_free(seg);
        return;
    }
    /* Only the layout's reference is left on its current segment: no plan uses the data area. Every rank of the
     * communicator releases the same segments in the same order (plans are made and destroyed collectively, and
     * requests are maxed over the communicator), so all of them take this branch together. */
    struct pc_layout *L = seg->layout;
    size_t keep = (size_t)seg->nflags * PC_CACHELINE + PC_SEGMENT_CACHE_BYTES;
    if (seg->refcount == 1 && L && L->segment == seg && seg->reserved > keep) {
        pc_node_barrier(L); /* no node rank still reads what the last execution left */
        size_t lo, hi;
        node_slice(L, keep, seg->reserved, &lo, &hi);
        pc_shm_unreserve((char *)seg->flags + lo, hi - lo);
        seg->reserved = keep;
        pc_node_barrier(L); /* none reserves it again while it is returned */
    }
}

static int segment_create(struct pc_layout *L, size_t data_bytes, int nflags, struct pc_segment **out)
{
    struct pc_segment *seg = calloc(1, sizeof *seg);
    int *used = calloc((size_t)nflags, sizeof(int));
    /* collective whatever happened above: a rank that cannot hold the bookkeeping still maps, then fails */
    size_t flag_bytes = (size_t)nflags * PC_CACHELINE;
    struct pc_node_shm shm;
    int err = pc_node_shm_alloc(L, flag_bytes + data_bytes, &shm);
    if (!err && (!seg || !used)) {
        pc_node_shm_free(&shm);
        err = pc_error(PLANCOLL_ERR_NOMEM, "segment bookkeeping");
    }
    if (err) {
        free(used);
        free(seg);
        return err;
    }
    seg->shm = shm;
    seg->flag_run = used;
    seg->flags = (_Atomic uint64_t *)(void *)shm.base;
    seg->base = shm.base + flag_bytes;
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
        while (j < n && !seg->flag_run[i + j]) j++;
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
    int err = pc_layout_control(L);
    if (err) return err;
    /* The largest request over the communicator: every node's segments then grow alike, so every rank takes
     * the same branch below (segment creation is collective over the communicator). */
    unsigned long long want[2] = {min_bytes, (unsigned long long)(nflags < 0 ? 0 : nflags)}, need[2];
    MPI_Request req;
    PC_MPI_CHECK(pc_mpi_iallreduce(want, need, 2, MPI_UNSIGNED_LONG_LONG, MPI_MAX, L->comm, &req));
    err = pc_wait_layout(L, 1, &req);
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
        err = segment_create(L, bytes, flags, &fresh); /* collective; its failure is agreed inside */
        if (err) return err;
        first = 0;
    }
    struct pc_segment *target = fresh ? fresh : seg;

    /* Memory behind the flag area and the data this plan uses, reserved now (reserve.h): a full /dev/shm is
     * PLANCOLL_ERR_NOMEM here, on every rank, not SIGBUS at the first execution. Node rank 0 reserves the flag
     * area itself, as it zeroes the flags below; the data is reserved in slices by every node rank. */
    size_t flag_bytes = (size_t)target->nflags * PC_CACHELINE, lo = 0, hi = 0;
    size_t from = target->reserved > flag_bytes ? target->reserved : flag_bytes, to = flag_bytes + (size_t)need[0];
    char *map = (char *)target->flags;
    int reserve_rc = 0;
    if (L->node_rank == 0 && target->reserved < flag_bytes)
        reserve_rc = pc_shm_reserve(map + target->reserved, flag_bytes - target->reserved);
    if (!reserve_rc && to > from) {
        node_slice(L, from, to, &lo, &hi);
        reserve_rc = pc_shm_reserve(map + lo, hi - lo);
    }
    /* A previous owner may have left large sequence numbers in these flags. */
    if (!reserve_rc && L->node_rank == 0 && need[1] > 0)
        for (int i = 0; i < (int)need[1]; i++) atomic_store(pc_segment_flag(target, first + i), 0);
    pc_node_shm_sync(&target->shm);

    /* Every rank of the communicator learns whether any node lacked memory, so that a plan's set-up goes on (into
     * collectives over the whole communicator) everywhere or nowhere. The allreduce is also the barrier that
     * publishes the zeroed flags: no rank leaves it before node rank 0 has entered it. */
    err = pc_shm_agree_reserved(L, PLANCOLL_SUCCESS, reserve_rc ? (uint64_t)to : 0u, "node-shared segment");
    if (err) {
        if (fresh) segment_free(fresh);
        else if (seg && hi > lo && !reserve_rc) pc_shm_unreserve(map + lo, hi - lo); /* this rank's slice */
        return err;
    }
    pc_node_shm_sync(&target->shm);
    if (target->reserved < to) target->reserved = to;
    if (fresh) {
        struct pc_segment *old = seg;
        L->segment = seg = fresh; /* first: the old one is no longer current, so releasing it returns no memory */
        if (old) pc_segment_release(old, -1, 0); /* the layout's reference moves to the new segment */
    }
    if (need[1] == 0) {
        first = -1;
    } else {
        seg->flag_run[first] = (int)need[1];
        for (int i = 1; i < (int)need[1]; i++) seg->flag_run[first + i] = -1;
    }
    seg->refcount++;
    *out = seg;
    *first_flag = first;
    return PLANCOLL_SUCCESS;
}
