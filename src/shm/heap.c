/* The node-shared heap: plancoll_malloc / plancoll_free and the lookups of heap.h (which describes the
 * design).  Bookkeeping lives in process-local memory; the shared arenas hold user data only. */
#include "shm/heap.h"

#include <stdint.h>
#include <stdlib.h>

#include "base/errors.h"
#include "shm/mpi_compat.h"
#include "shm/mpi_error.h"
#include "shm/requests.h"
#include "shm/layout.h"
#include "shm/nomem.h"
#include "shm/reserve.h"

/* Sizes past this are refused (as in validate.c): part sizes are doubled and rounded without overflow. */
#define HEAP_MAX_BYTES ((size_t)1 << 60)
/* Geometric growth stops doubling past this step, so one large block does not make every later arena
 * twice as large (the memory is only reserved, but /dev/shm may be smaller than the sum). */
#define HEAP_MAX_STEP ((size_t)1 << 30)
#define HEAP_PAGE ((size_t)4096)

/* The node agreement of plancoll_malloc says which arenas hold a live block on some node rank in a bit mask of
 * this many words; arenas past it count as busy (never released), which only happens past 1024 arenas. */
#define HEAP_BUSY_WORDS 16

struct heap_arena {
    MPI_Win win;  /* MPI_WIN_NULL: a released slot, which the next arena of the node takes */
    char **base;  /* [node_size] start of each node rank's part in this process (NULL for an empty part) */
    size_t *size; /* [node_size] bytes of each part */
    int live;     /* this rank's live blocks in its part */
};

/* One block of this rank's parts, free or live. Records are indices into heap->blocks, recycled.
 * A free block either has memory behind every page wholly inside it (counted in heap->cached) or has none
 * there (holes: never touched, or returned with pc_shm_unreserve); taking bytes from a block with holes
 * reserves them first.  Pages a block shares with a neighbour are never returned while the neighbour lives. */
struct heap_block {
    size_t off, size;  /* from the start of this rank's part of the arena; size a multiple of PC_HEAP_ALIGN */
    int arena;
    int prev, next;    /* address neighbours in the same part (-1: none) */
    int fprev, fnext;  /* free-list links, or the spare-record chain (fnext) */
    bool used;
    bool holes;        /* free and without memory behind its whole pages */
};

struct pc_heap {
    struct pc_heap *next_heap; /* every live heap of the process, for plancoll_free (which has no comm) */
    MPI_Comm node_comm;        /* the layout's: arenas are collective over it */
    int node_rank, node_size;

    struct heap_arena *arenas;
    int narenas, arenas_cap;   /* narenas: slots, released ones included (indices stay meaningful) */
    char **spare_base;         /* the next arena's per-rank arrays, reserved before the node agrees */
    size_t *spare_size;
    size_t largest_part;       /* of this rank, ever: the next part is at least twice it (up to HEAP_MAX_STEP more) */
    size_t cached;             /* bytes of this rank's free blocks without holes (at most PC_HEAP_CACHE_BYTES) */
    size_t live_bytes;         /* bytes of this rank's live blocks */

    struct heap_block *blocks;
    int blocks_cap, spare;     /* spare: chain of unused records */
    int free_head;             /* first-fit list of free blocks, most recently freed first */

    uintptr_t *keys;           /* live blocks by address: open addressing, linear probing; 0 = empty */
    int *vals;
    size_t hcap, hcount;       /* hcap = 2^hbits, hcount <= hcap / 2 */
    int hbits;
};

static struct pc_heap *all_heaps;

/* ---- records ---- */
static int record_reserve(struct pc_heap *h, int n)
{
    int avail = 0;
    for (int i = h->spare; i >= 0 && avail < n; i = h->blocks[i].fnext) avail++;
    if (avail >= n) return PLANCOLL_SUCCESS;
    int cap = h->blocks_cap ? 2 * h->blocks_cap : 64;
    struct heap_block *grown = realloc(h->blocks, sizeof *grown * (size_t)cap);
    if (!grown) return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: heap bookkeeping of %d blocks", cap);
    h->blocks = grown;
    for (int i = cap - 1; i >= h->blocks_cap; i--) {
        h->blocks[i].fnext = h->spare;
        h->spare = i;
    }
    h->blocks_cap = cap;
    return PLANCOLL_SUCCESS;
}

/* Never fails: callers reserved records first (so nothing fails after the node has agreed). */
static int record_take(struct pc_heap *h)
{
    int i = h->spare;
    h->spare = h->blocks[i].fnext;
    return i;
}

static void record_put(struct pc_heap *h, int i)
{
    h->blocks[i].fnext = h->spare;
    h->spare = i;
}

/* ---- free list ---- */
static void free_push(struct pc_heap *h, int i)
{
    struct heap_block *b = &h->blocks[i];
    b->used = false;
    b->fprev = -1;
    b->fnext = h->free_head;
    if (h->free_head >= 0) h->blocks[h->free_head].fprev = i;
    h->free_head = i;
}

static void free_unlink(struct pc_heap *h, int i)
{
    struct heap_block *b = &h->blocks[i];
    if (b->fprev >= 0)
        h->blocks[b->fprev].fnext = b->fnext;
    else
        h->free_head = b->fnext;
    if (b->fnext >= 0) h->blocks[b->fnext].fprev = b->fprev;
}

/* ---- live blocks by address ---- */
static size_t hash_slot(const struct pc_heap *h, uintptr_t key)
{
    /* Blocks are 64-aligned: drop the zero bits, then Fibonacci hashing (the top hbits of the product). */
    return (size_t)(((uint64_t)(key >> 6) * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - h->hbits));
}

static void hash_put(struct pc_heap *h, uintptr_t key, int val)
{
    size_t s = hash_slot(h, key);
    while (h->keys[s]) s = (s + 1) & (h->hcap - 1);
    h->keys[s] = key;
    h->vals[s] = val;
    h->hcount++;
}

static int hash_reserve(struct pc_heap *h, size_t extra)
{
    if (2 * (h->hcount + extra) <= h->hcap) return PLANCOLL_SUCCESS;
    size_t cap = h->hcap ? 2 * h->hcap : 256;
    int bits = h->hcap ? h->hbits + 1 : 8;
    while (2 * (h->hcount + extra) > cap) {
        cap *= 2;
        bits++;
    }
    uintptr_t *keys = calloc(cap, sizeof *keys);
    int *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: heap index of %zu entries", cap);
    }
    uintptr_t *old_keys = h->keys;
    int *old_vals = h->vals;
    size_t old_cap = h->hcap;
    h->keys = keys;
    h->vals = vals;
    h->hcap = cap;
    h->hbits = bits;
    h->hcount = 0;
    for (size_t i = 0; i < old_cap; i++)
        if (old_keys[i]) hash_put(h, old_keys[i], old_vals[i]);
    free(old_keys);
    free(old_vals);
    return PLANCOLL_SUCCESS;
}

/* Removes key and returns its block, or -1. Backward-shift deletion: no tombstones, probes stay short. */
static int hash_take(struct pc_heap *h, uintptr_t key)
{
    if (!h->hcap) return -1;
    size_t s = hash_slot(h, key);
    while (h->keys[s] && h->keys[s] != key) s = (s + 1) & (h->hcap - 1);
    if (!h->keys[s]) return -1;
    int val = h->vals[s];
    size_t hole = s;
    for (size_t j = (s + 1) & (h->hcap - 1); h->keys[j]; j = (j + 1) & (h->hcap - 1)) {
        size_t home = hash_slot(h, h->keys[j]);
        /* Move j into the hole unless its home lies cyclically in (hole, j]. */
        bool stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!stays) {
            h->keys[hole] = h->keys[j];
            h->vals[hole] = h->vals[j];
            hole = j;
        }
    }
    h->keys[hole] = 0;
    h->hcount--;
    return val;
}

/* ---- heap ---- */
static char *block_address(const struct pc_heap *h, const struct heap_block *b)
{
    return h->arenas[b->arena].base[h->node_rank] + b->off;
}

static bool arena_held(const struct pc_heap *h, int a)
{
    return h->arenas[a].win != MPI_WIN_NULL;
}

static int heap_create(struct pc_layout *L)
{
    struct pc_heap *h = calloc(1, sizeof *h);
    if (!h) return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: heap");
    h->node_comm = L->node_comm;
    h->node_rank = L->node_rank;
    h->node_size = L->node_size;
    h->spare = h->free_head = -1;
    h->next_heap = all_heaps;
    all_heaps = h;
    L->heap = h;
    return PLANCOLL_SUCCESS;
}

/* Collective over the node (MPI_Win_free), in the same order on every node rank. */
static void arena_free_window(struct pc_heap *h, int a)
{
    struct heap_arena *ar = &h->arenas[a];
    MPI_Win_unlock_all(ar->win);
    MPI_Win_free(&ar->win);
    ar->win = MPI_WIN_NULL;
    free(ar->base);
    free(ar->size);
    ar->base = NULL;
    ar->size = NULL;
    ar->live = 0;
}

void pc_heap_destroy(struct pc_heap *h)
{
    if (!h) return;
    for (struct pc_heap **p = &all_heaps; *p; p = &(*p)->next_heap)
        if (*p == h) {
            *p = h->next_heap;
            break;
        }
    for (int a = 0; a < h->narenas; a++)
        if (arena_held(h, a)) arena_free_window(h, a);
    free(h->arenas);
    free(h->spare_base);
    free(h->spare_size);
    free(h->blocks);
    free(h->keys);
    free(h->vals);
    free(h);
}

/* Everything a malloc of one block (and possibly one new arena) needs, allocated before the node agrees,
 * so that a local out-of-memory is reported to every rank instead of leaving a window half made. */
static int heap_reserve(struct pc_heap *h)
{
    int err = record_reserve(h, 2);
    if (!err) err = hash_reserve(h, 1);
    if (err) return err;
    if (h->narenas == h->arenas_cap) {
        int cap = h->arenas_cap ? 2 * h->arenas_cap : 8;
        struct heap_arena *grown = realloc(h->arenas, sizeof *grown * (size_t)cap);
        if (!grown) return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: %d arenas", cap);
        h->arenas = grown;
        h->arenas_cap = cap;
    }
    if (!h->spare_base) h->spare_base = malloc(sizeof *h->spare_base * (size_t)h->node_size);
    if (!h->spare_size) h->spare_size = malloc(sizeof *h->spare_size * (size_t)h->node_size);
    if (!h->spare_base || !h->spare_size) return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: arena map");
    return PLANCOLL_SUCCESS;
}

/* First fit: the first free block of at least bytes, or -1. */
static int heap_fit(const struct pc_heap *h, size_t bytes)
{
    for (int i = h->free_head; i >= 0; i = h->blocks[i].fnext)
        if (h->blocks[i].size >= bytes) return i;
    return -1;
}

/* This rank's part of a new arena for a request of bytes: at least twice the largest part it has had (up to
 * HEAP_MAX_STEP more), so a growing sequence of requests makes a logarithmic number of arenas (windows are slow
 * to make: collective, and 0.2-0.6 s on an oversubscribed node); a part costs address space only until blocks
 * are taken from it, and released arenas do not make later ones smaller. */
static size_t heap_part_for(const struct pc_heap *h, size_t bytes)
{
    size_t largest = h->largest_part;
    size_t need = bytes + PC_HEAP_ALIGN; /* room to align the part's start */
    size_t grow = largest < HEAP_MAX_STEP ? 2 * largest : largest + HEAP_MAX_STEP;
    size_t part = need > grow ? need : grow;
    if (part < PC_HEAP_MIN_PART) part = PC_HEAP_MIN_PART;
    return (part + HEAP_PAGE - 1) / HEAP_PAGE * HEAP_PAGE;
}

/* Memory behind the first bytes of free block i, when it has holes: 0 or the errno of pc_shm_reserve. */
static int block_reserve(const struct pc_heap *h, int i, size_t bytes)
{
    const struct heap_block *b = &h->blocks[i];
    return b->holes ? pc_shm_reserve(block_address(h, b), bytes) : 0;
}

/* Returns the memory of free block i's whole pages; it has holes from now on. */
static void block_unreserve(struct pc_heap *h, int i)
{
    struct heap_block *b = &h->blocks[i];
    if (!b->holes) h->cached -= b->size;
    pc_shm_unreserve(block_address(h, b), b->size);
    b->holes = true;
}

/* Collective over the node: a new arena in which this rank owns part_bytes (0 allowed), in the lowest released
 * slot (the same on every node rank) or a new one. Returns its slot through *slot (-1 when no window was made)
 * and the free block made of this rank's part through *block (-1 for an empty part); the part is not reserved
 * (the block has holes): a request reserves what it takes. */
static int heap_add_arena(struct pc_heap *h, size_t part_bytes, int *block, int *slot)
{
    *block = *slot = -1;
#if PC_MPI_WINDOW_FAILURE_HANGS
    /* A window too big for /dev/shm would fail on node rank 0 alone and hang the others in MPI (mpi_config.h). */
    int fits = pc_shm_window_fits(h->node_comm, part_bytes, "plancoll_malloc arena");
    if (fits) return fits;
#endif
    MPI_Info info;
    MPI_Info_create(&info);
    /* Contiguous: the node's parts are one mapping per process, every part visible to every rank. */
    MPI_Info_set(info, "alloc_shared_noncontig", "false");
    void *mine = NULL;
    MPI_Win win;
#if PC_MPI_SIMULATED
    /* SMPI 3.32 makes a node's shared window one block of node rank 0's size, and MPI_Win_shared_query gives that
     * block's start for every rank (docs/smpi.md): node rank 0 allocates every part, each rounded to pages, and
     * the parts' places are computed here from the sizes (the actors share one address space anyway). */
    size_t *parts = calloc((size_t)h->node_size, sizeof *parts);
    if (!parts) {
        MPI_Info_free(&info);
        return pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: arena of %d parts", h->node_size);
    }
    unsigned long long my_part = (part_bytes + HEAP_PAGE - 1) / HEAP_PAGE * HEAP_PAGE;
    int rc = MPI_Allgather(&my_part, 1, MPI_UNSIGNED_LONG_LONG, parts, 1, MPI_UNSIGNED_LONG_LONG, h->node_comm);
    size_t total = 0;
    for (int j = 0; j < h->node_size; j++) total += parts[j];
    if (rc == MPI_SUCCESS)
        rc = MPI_Win_allocate_shared(h->node_rank == 0 ? (MPI_Aint)total : 0, 1, info, h->node_comm, &mine, &win);
#else
    int rc = MPI_Win_allocate_shared((MPI_Aint)part_bytes, 1, info, h->node_comm, &mine, &win);
#endif
    MPI_Info_free(&info);
    if (rc != MPI_SUCCESS) {
#if PC_MPI_SIMULATED
        free(parts);
#endif
        return pc_mpi_error(rc, "MPI_Win_allocate_shared (plancoll_malloc arena)");
    }
    int arena = 0;
    while (arena < h->narenas && arena_held(h, arena)) arena++;
    struct heap_arena *a = &h->arenas[arena];
    a->win = win;
    a->base = h->spare_base;
    a->size = h->spare_size;
    a->live = 0;
    h->spare_base = NULL;
    h->spare_size = NULL;
    int qrc = MPI_SUCCESS;
#if PC_MPI_SIMULATED
    {
        MPI_Aint qsize = 0;
        int disp = 0;
        char *block = NULL;
        qrc = MPI_Win_shared_query(win, 0, &qsize, &disp, &block);
        size_t at = 0;
        for (int j = 0; j < h->node_size; j++) {
            a->size[j] = qrc == MPI_SUCCESS && block ? parts[j] : 0;
            a->base[j] = a->size[j] ? block + at : NULL;
            at += parts[j];
        }
        free(parts);
    }
#else
    for (int j = 0; j < h->node_size; j++) {
        MPI_Aint qsize = 0;
        int disp = 0;
        void *qbase = NULL;
        rc = MPI_Win_shared_query(win, j, &qsize, &disp, &qbase);
        if (rc != MPI_SUCCESS) {
            qrc = rc;
            qsize = 0;
        }
        a->size[j] = qsize > 0 ? (size_t)qsize : 0;
        a->base[j] = a->size[j] ? qbase : NULL;
    }
#endif
    /* Keep an epoch open for the window's lifetime, as the segments do: load/store needs no other call. */
    MPI_Win_lock_all(MPI_MODE_NOCHECK, win);
    if (arena == h->narenas) h->narenas++; /* kept even on error: it is freed collectively with the heap */
    *slot = arena;
    if (qrc != MPI_SUCCESS) return pc_mpi_error(qrc, "MPI_Win_shared_query (plancoll_malloc arena)");

    size_t size = a->size[h->node_rank];
    if (size > h->largest_part) h->largest_part = size;
    if (!size) return PLANCOLL_SUCCESS;
    /* Offsets count from the part's base, which every process maps at the same address modulo a page:
     * aligning the first block in this process aligns it in every process. */
    size_t pad = (size_t)(-(uintptr_t)a->base[h->node_rank]) & (PC_HEAP_ALIGN - 1);
    if (size < pad + PC_HEAP_ALIGN) return PLANCOLL_SUCCESS;
    int i = record_take(h);
    struct heap_block *b = &h->blocks[i];
    b->off = pad;
    b->size = (size - pad) / PC_HEAP_ALIGN * PC_HEAP_ALIGN;
    b->arena = arena;
    b->prev = b->next = -1;
    b->holes = true;
    free_push(h, i);
    *block = i;
    return PLANCOLL_SUCCESS;
}

/* Collective over the node: releases arena a, which holds no live block on any node rank (its window is
 * freed; the memory goes back to the system). */
static void arena_release(struct pc_heap *h, int a)
{
    for (int i = h->free_head; i >= 0;) {
        int next = h->blocks[i].fnext;
        if (h->blocks[i].arena == a) {
            if (!h->blocks[i].holes) h->cached -= h->blocks[i].size;
            free_unlink(h, i);
            record_put(h, i);
        }
        i = next;
    }
    arena_free_window(h, a);
}

/* Collective over the node, with the same arguments on every node rank: busy has a bit set for every arena in
 * which some node rank holds a live block or is taking one in this call.  Arenas without are released, except
 * one (the largest, kept for the next requests) when no node rank needs a new arena; when one does, the empty
 * ones could not serve it and are all released before the new one is made (replaced, not added to). */
static void heap_trim(struct pc_heap *h, const uint64_t *busy, bool growing)
{
    int keep = -1;
    size_t keep_bytes = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int a = 0; a < h->narenas; a++) {
            if (!arena_held(h, a) || a >= 64 * HEAP_BUSY_WORDS || (busy[a / 64] >> (a % 64) & 1)) continue;
            if (pass == 1) {
                if (a != keep) arena_release(h, a);
                continue;
            }
            size_t bytes = 0;
            for (int j = 0; j < h->node_size; j++) bytes += h->arenas[a].size[j];
            if (!growing && (keep < 0 || bytes > keep_bytes)) {
                keep = a;
                keep_bytes = bytes;
            }
        }
}

/* Takes bytes from free block i (splitting off the rest) and returns its address. */
static void *heap_take(struct pc_heap *h, int i, size_t bytes)
{
    free_unlink(h, i);
    struct heap_block *b = &h->blocks[i];
    if (b->size - bytes >= PC_HEAP_ALIGN) {
        int r = record_take(h);
        b = &h->blocks[i];
        struct heap_block *rest = &h->blocks[r];
        rest->off = b->off + bytes;
        rest->size = b->size - bytes;
        rest->arena = b->arena;
        rest->prev = i;
        rest->next = b->next;
        rest->holes = b->holes; /* the rest keeps its state: reserving bytes touched only pages they hold */
        if (b->next >= 0) h->blocks[b->next].prev = r;
        b->next = r;
        b->size = bytes;
        free_push(h, r);
    }
    if (!b->holes) h->cached -= b->size;
    b->used = true;
    b->holes = false;
    h->arenas[b->arena].live++;
    h->live_bytes += b->size;
    char *p = block_address(h, b);
    hash_put(h, (uintptr_t)p, i);
    return p;
}

/* Frees live block i: merges it with free neighbours, and returns the memory of the result unless it fits the
 * cache of PC_HEAP_CACHE_BYTES (a merged block with holes is returned whole: it is tracked per block). */
static void heap_release(struct pc_heap *h, int i)
{
    struct heap_block *b = &h->blocks[i];
    h->arenas[b->arena].live--;
    h->live_bytes -= b->size;
    bool holes = false;
    int n = b->next;
    if (n >= 0 && !h->blocks[n].used) { /* absorb the free block after */
        if (h->blocks[n].holes) holes = true;
        else h->cached -= h->blocks[n].size;
        free_unlink(h, n);
        b->size += h->blocks[n].size;
        b->next = h->blocks[n].next;
        if (b->next >= 0) h->blocks[b->next].prev = i;
        record_put(h, n);
    }
    int keep = i;
    int p = b->prev;
    if (p >= 0 && !h->blocks[p].used) { /* the free block before absorbs this one (it is relisted) */
        struct heap_block *q = &h->blocks[p];
        if (q->holes) holes = true;
        else h->cached -= q->size;
        free_unlink(h, p);
        q->size += b->size;
        q->next = b->next;
        if (b->next >= 0) h->blocks[b->next].prev = p;
        b->used = false;
        record_put(h, i);
        keep = p;
    }
    struct heap_block *k = &h->blocks[keep];
    k->holes = false;
    h->cached += k->size;
    free_push(h, keep);
    if (holes || h->cached > PC_HEAP_CACHE_BYTES) block_unreserve(h, keep);
}

/* ---- lookups (heap.h) ---- */
bool pc_heap_find(const struct pc_layout *L, const void *ptr, size_t bytes, int *arena, size_t *offset)
{
    const struct pc_heap *h = L ? L->heap : NULL;
    if (!h || !ptr) return false;
    if (bytes == 0) bytes = 1;
    uintptr_t p = (uintptr_t)ptr;
    for (int a = 0; a < h->narenas; a++) {
        if (!arena_held(h, a)) continue;
        size_t size = h->arenas[a].size[h->node_rank];
        uintptr_t base = (uintptr_t)h->arenas[a].base[h->node_rank];
        /* Written so that nothing overflows: p - base is checked before it is used. */
        if (size && p >= base && p - base < size && bytes <= size - (p - base)) {
            if (arena) *arena = a;
            if (offset) *offset = (size_t)(p - base);
            return true;
        }
    }
    return false;
}

void *pc_heap_peer_address(const struct pc_layout *L, int node_rank, int arena, size_t offset)
{
    const struct pc_heap *h = L ? L->heap : NULL;
    if (!h || arena < 0 || arena >= h->narenas || node_rank < 0 || node_rank >= h->node_size) return NULL;
    if (!arena_held(h, arena) || offset >= h->arenas[arena].size[node_rank]) return NULL;
    return h->arenas[arena].base[node_rank] + offset;
}

int pc_heap_arenas(const struct pc_layout *L)
{
    return L && L->heap ? L->heap->narenas : 0;
}

size_t pc_heap_part_size(const struct pc_layout *L, int node_rank, int arena)
{
    const struct pc_heap *h = L ? L->heap : NULL;
    if (!h || arena < 0 || arena >= h->narenas || node_rank < 0 || node_rank >= h->node_size) return 0;
    return arena_held(h, arena) ? h->arenas[arena].size[node_rank] : 0;
}

void pc_heap_usage(const struct pc_layout *L, struct pc_heap_usage *u)
{
    const struct pc_heap *h = L ? L->heap : NULL;
    u->arenas = 0;
    u->held = u->live = u->cached = 0;
    if (!h) return;
    for (int a = 0; a < h->narenas; a++)
        if (arena_held(h, a)) {
            u->arenas++;
            u->held += h->arenas[a].size[h->node_rank];
        }
    u->live = h->live_bytes;
    u->cached = h->cached;
}

/* plancoll_malloc's PLANCOLL_ERR_NOMEM once the ranks agreed that some rank had no shared memory: this rank's own
 * request when it is the one (mine), else the largest request that failed elsewhere (theirs). */
static int nomem_error(bool mine, size_t size, uint64_t theirs, int their_rank)
{
    return pc_shm_nomem("plancoll_malloc", mine, mine ? (uint64_t)size : theirs, their_rank);
}

/* ---- plancoll_malloc and plancoll_free (src/api/memory.c checks MPI's state and the communicator first) ---- */
int pc_heap_malloc(size_t size, MPI_Comm comm, void **ptr)
{
    int err;
    struct pc_layout *L = NULL;
    if ((err = pc_layout_get(comm, &L))) return err;
    /* arenas are windows over the node communicator (collective over comm, like this call) */
    if ((err = pc_layout_comms(L))) {
        pc_layout_release(L);
        return err;
    }

    /* Local checks and reservations; their failure is agreed below so that no rank is left waiting. */
    int local = PLANCOLL_SUCCESS;
    if (!ptr)
        local = pc_error(PLANCOLL_ERR_NULL_BUFFER, "plancoll_malloc: the pointer to receive the allocation is NULL");
    else if (size > HEAP_MAX_BYTES)
        local = pc_error(PLANCOLL_ERR_OVERFLOW, "plancoll_malloc: %zu bytes is more than the heap allows (2^60)", size);
    if (!local && !L->heap) local = heap_create(L);
    struct pc_heap *h = L->heap;
    if (!local) local = heap_reserve(h);
    size_t bytes = (size + PC_HEAP_ALIGN - 1) / PC_HEAP_ALIGN * PC_HEAP_ALIGN;
    int fit = -1, reserve_rc = 0;
    size_t part = 0;
    if (!local && bytes) {
        fit = heap_fit(h, bytes);
        if (fit < 0) part = heap_part_for(h, bytes);
        else reserve_rc = block_reserve(h, fit, bytes); /* memory now, not SIGBUS at the first store */
    }

    /* Over comm (the call is collective over comm): did any rank fail, could any not reserve its block, does any
     * node grow.  Over the node (only its ranks share the windows): does any rank need an arena, and which
     * arenas hold a live block, or this call's block, on some rank.  Both in flight at once.  narenas is the
     * same on every node rank (0 on all of them when this rank could not make its heap: then none had one). */
    /* this rank's, then the maxima: bytes it could not reserve, whether it needs an arena, who could not reserve */
    uint64_t cany[3] = {reserve_rc ? (uint64_t)bytes : 0u, part ? 1u : 0u, reserve_rc ? (uint64_t)L->rank + 1 : 0u};
    uint64_t nv[1 + HEAP_BUSY_WORDS] = {0}, nany[1 + HEAP_BUSY_WORDS] = {0};
    int narenas = h ? h->narenas : 0;
    int words = (narenas + 63) / 64 < HEAP_BUSY_WORDS ? (narenas + 63) / 64 : HEAP_BUSY_WORDS;
    nv[0] = part ? 1u : 0u;
    for (int a = 0; a < narenas && a < 64 * HEAP_BUSY_WORDS; a++)
        if (arena_held(h, a) && (h->arenas[a].live > 0 || (fit >= 0 && h->blocks[fit].arena == a)))
            nv[1 + a / 64] |= UINT64_C(1) << (a % 64);
    struct pc_agreement agreement;
    pc_agree_start(&agreement, L, local, cany, 3);
    MPI_Request reqs[2] = {agreement.req, MPI_REQUEST_NULL};
    int rc = agreement.post_rc;
    if (rc == MPI_SUCCESS) rc = pc_mpi_iallreduce(nv, nany, 1 + words, MPI_UINT64_T, MPI_BOR, L->node_comm, &reqs[1]);
    int wait_rc = rc == MPI_SUCCESS ? pc_wait_layout(L, 2, reqs) : pc_mpi_error(rc, "MPI_Iallreduce (plancoll_malloc)");
    err = pc_agree_finish(&agreement, wait_rc, cany, NULL, "plancoll_malloc: another rank's arguments were invalid");
    if (!err && cany[0])
        err = nomem_error(reserve_rc != 0, size, cany[0], (int)cany[2] - 1);
    if (err) {
        /* A block with holes keeps none: what was reserved for it goes back (all of it, edge pages included). */
        if (fit >= 0 && h->blocks[fit].holes) pc_shm_unreserve(block_address(h, &h->blocks[fit]), h->blocks[fit].size);
        pc_layout_release(L);
        return err;
    }

    /* Empty arenas go back to the system (heap_trim); then the node's new arena, if a rank needs one. */
    bool node_grows = nany[0] != 0;
    heap_trim(h, nany + 1, node_grows);
    int fresh_slot = -1, grow_err = PLANCOLL_SUCCESS, grow_reserve = 0;
    bool fit_is_fresh = false;
    if (node_grows) {
        int fresh = -1;
        grow_err = heap_add_arena(h, part, &fresh, &fresh_slot);
        if (!grow_err && fit < 0 && bytes && fresh >= 0) {
            fit = fresh;
            fit_is_fresh = true;
            grow_reserve = block_reserve(h, fit, bytes);
        }
    }
    if (cany[1]) {
        /* Some node grew: every rank learns how that went, so all succeed or all fail. */
        uint64_t any_nomem[2] = {grow_reserve ? (uint64_t)bytes : 0u, grow_reserve ? (uint64_t)L->rank + 1 : 0u};
        int failed_rank = -1;
        err = pc_agree_failure_max(L, grow_err, any_nomem, 2, &failed_rank,
                                   "plancoll_malloc: another node could not make an arena");
        if (!err && any_nomem[0])
            err = nomem_error(grow_reserve != 0, size, any_nomem[0], (int)any_nomem[1] - 1);
        if (err) {
            if (fit >= 0 && !fit_is_fresh && h->blocks[fit].holes)
                pc_shm_unreserve(block_address(h, &h->blocks[fit]), h->blocks[fit].size);
            /* The new arena is empty on every node rank: released at once, unless a window failed somewhere
             * (then its state may differ between ranks; it goes with the heap). */
            if (fresh_slot >= 0 && failed_rank < 0) arena_release(h, fresh_slot);
            pc_layout_release(L);
            return err;
        }
    }
    if (bytes) {
        if (fit < 0 || h->blocks[fit].size < bytes)
            err = pc_error(PLANCOLL_ERR_NOMEM, "plancoll_malloc: no room for %zu bytes after growing", size);
        else
            *ptr = heap_take(h, fit, bytes);
    }
    pc_layout_release(L);
    return err;
}

int pc_heap_free(void *ptr)
{
    if (!ptr) return PLANCOLL_SUCCESS;
    uintptr_t p = (uintptr_t)ptr;
    for (struct pc_heap *h = all_heaps; h; h = h->next_heap) {
        for (int a = 0; a < h->narenas; a++) {
            if (!arena_held(h, a)) continue;
            const struct heap_arena *ar = &h->arenas[a];
            uintptr_t base = (uintptr_t)ar->base[h->node_rank];
            size_t size = ar->size[h->node_rank];
            if (!(size && p >= base && p - base < size)) continue;
            int i = hash_take(h, p);
            if (i < 0)
                return pc_error(PLANCOLL_ERR_ARGUMENT,
                                "plancoll_free(%p): not a live block of the plancoll heap (freed already, or not "
                                "a pointer plancoll_malloc returned)",
                                ptr);
            heap_release(h, i);
            return PLANCOLL_SUCCESS;
        }
    }
    /* Not ours: say whether it is a node peer's heap memory, the likely mistake with mapped peer buffers. */
    for (struct pc_heap *h = all_heaps; h; h = h->next_heap)
        for (int a = 0; a < h->narenas; a++) {
            if (!arena_held(h, a)) continue;
            for (int j = 0; j < h->node_size; j++) {
                uintptr_t base = (uintptr_t)h->arenas[a].base[j];
                if (h->arenas[a].size[j] && p >= base && p - base < h->arenas[a].size[j])
                    return pc_error(PLANCOLL_ERR_ARGUMENT,
                                    "plancoll_free(%p): memory of node rank %d's heap; only the rank that "
                                    "allocated a block frees it",
                                    ptr, j);
            }
        }
    return pc_error(PLANCOLL_ERR_ARGUMENT,
                    "plancoll_free(%p): not memory from plancoll_malloc (or its communicator was freed)", ptr);
}
