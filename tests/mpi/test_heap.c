/* The node-shared heap (plancoll_malloc / plancoll_free) and its lookups (pc_heap_find,
 * pc_heap_peer_address): every node peer's buffer read through the peer mapping, alignment, sizes that differ
 * per rank, reuse of freed blocks and coalescing, growth into new arenas with old pointers intact, release
 * with the communicator, every error case, a stress run of random malloc/free checking that live blocks
 * never overlap and keep their contents, and the high-water mark: after random and growing sequences with
 * everything freed, the node's heap keeps memory only for each rank's small cache (mincore) and, after the next
 * plancoll_malloc, at most one empty arena (the heap's accounting and /proc/self/maps). Links the internals
 * (heap.h lookups). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/heap.h"
#include "shm/layout.h"
#include "shm/reserve.h"
#include "testlib.h"

static MPI_Comm node; /* split here, independently of the library */
static int nrank, nsize;

static unsigned char pattern(int rank, uint64_t tag, size_t i)
{
    return (unsigned char)(rank * 37 + tag * 101 + i * 13 + (i >> 9));
}

static void fill(void *p, size_t n, int rank, uint64_t tag)
{
    unsigned char *c = p;
    for (size_t i = 0; i < n; i++) c[i] = pattern(rank, tag, i);
}

/* Index of the first wrong byte, or -1. */
static long verify(const void *p, size_t n, int rank, uint64_t tag)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++)
        if (c[i] != pattern(rank, tag, i)) return (long)i;
    return -1;
}

/* Peers read megabytes of each other's blocks on an oversubscribed node: past 64 KiB check every 61st byte
 * (a stride prime to the pattern's periods) and the last page in full. */
static long verify_sampled(const void *p, size_t n, int rank, uint64_t tag)
{
    if (n <= 65536) return verify(p, n, rank, tag);
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i += 61)
        if (c[i] != pattern(rank, tag, i)) return (long)i;
    for (size_t i = n - 4096; i < n; i++)
        if (c[i] != pattern(rank, tag, i)) return (long)i;
    return -1;
}

/* Collective malloc that must succeed. */
static void *heap_alloc(size_t size, MPI_Comm comm)
{
    void *p = (void *)&p; /* must be overwritten */
    TL_OK(plancoll_malloc(size, comm, &p));
    if (size == 0) TL_CHECK(p == NULL, "malloc(0) gave %p, expected NULL", p);
    if (size) TL_CHECK(p != NULL, "malloc(%zu) gave NULL", size);
    TL_CHECK(((uintptr_t)p & (PC_HEAP_ALIGN - 1)) == 0, "malloc(%zu) = %p is not %d-aligned", size, p, PC_HEAP_ALIGN);
    return p;
}

/* A block's location as published to node peers. */
struct where {
    int64_t arena, offset, size, tag, rank;
};

/* Every node rank publishes n blocks (same n everywhere); after a node barrier each rank reads every
 * peer's blocks through pc_heap_peer_address and checks the owner's pattern. */
static void check_peers(struct pc_layout *L, const struct where *mine, int n)
{
    struct where *all = malloc(sizeof *all * (size_t)n * (size_t)nsize);
    tl_allgather(mine, n * (int)(sizeof *mine / sizeof(int64_t)), MPI_INT64_T, all, node);
    tl_barrier(node); /* every owner wrote its pattern before publishing; this is the explicit fence */
    for (int j = 0; j < nsize; j++)
        for (int k = 0; k < n; k++) {
            const struct where *w = &all[j * n + k];
            if (w->size <= 0) continue;
            const char *q = pc_heap_peer_address(L, j, (int)w->arena, (size_t)w->offset);
            TL_CHECK(q != NULL, "node rank %d's block (arena %d, offset %ld) has no address here", j,
                     (int)w->arena, (long)w->offset);
            if (!q) continue;
            TL_CHECK(pc_heap_peer_address(L, j, (int)w->arena, (size_t)(w->offset + w->size - 1)) == q + w->size - 1,
                     "peer address of the last byte");
            long bad = verify_sampled(q, (size_t)w->size, (int)w->rank, (uint64_t)w->tag);
            TL_CHECK(bad < 0, "node rank %d (rank %d) block tag %ld: byte %ld wrong through the peer mapping", j,
                     (int)w->rank, (long)w->tag, bad);
            if (j != nrank)
                TL_CHECK(!pc_heap_find(L, q, 1, NULL, NULL), "a peer's block is reported as this rank's heap");
        }
    tl_barrier(node); /* no owner frees or rewrites while peers read */
    free(all);
}

static struct where locate(struct pc_layout *L, const void *p, size_t size, uint64_t tag)
{
    struct where w = {0, 0, (int64_t)size, (int64_t)tag, tl_rank};
    int a = -1;
    size_t off = 0;
    bool found = pc_heap_find(L, p, size, &a, &off);
    TL_CHECK(found, "pc_heap_find does not find the block %p of %zu bytes", p, size);
    if (!found) w.size = 0;
    w.arena = a;
    w.offset = (int64_t)off;
    if (found)
        TL_CHECK(pc_heap_peer_address(L, nrank, a, off) == p, "peer_address(self) does not invert find for %p", p);
    return w;
}

static void test_errors(MPI_Comm comm, struct pc_layout *L)
{
    void *p = (void *)&p;
    TL_CHECK(plancoll_malloc(64, MPI_COMM_NULL, &p) == PLANCOLL_ERR_COMM && p == NULL,
             "MPI_COMM_NULL: expected PLANCOLL_ERR_COMM and *ptr NULL");
    if (tl_size >= 2) {
        int half = tl_size / 2, low = tl_rank < half;
        MPI_Comm side, inter;
        MPI_Comm_split(MPI_COMM_WORLD, low, tl_rank, &side);
        MPI_Intercomm_create(side, 0, MPI_COMM_WORLD, low ? half : 0, 77, &inter);
        p = (void *)&p;
        int rc = plancoll_malloc(64, inter, &p);
        TL_CHECK(rc == PLANCOLL_ERR_INTERCOMM && p == NULL, "intercommunicator: got %d (%s)", rc, plancoll_error_detail());
        MPI_Comm_free(&inter);
        MPI_Comm_free(&side);
    }
    int rc = plancoll_malloc(64, comm, NULL);
    TL_CHECK(rc == PLANCOLL_ERR_NULL_BUFFER, "NULL ptr on every rank: got %d", rc);
    /* One rank's bad argument fails every rank, and nothing is allocated anywhere. */
    int arenas = pc_heap_arenas(L);
    p = (void *)&p;
    rc = plancoll_malloc(1 << 24, comm, tl_rank == 0 ? NULL : &p);
    if (tl_rank == 0)
        TL_CHECK(rc == PLANCOLL_ERR_NULL_BUFFER, "NULL ptr on rank 0: got %d", rc);
    else
        TL_CHECK(rc == PLANCOLL_ERR_REMOTE && p == NULL, "NULL ptr on rank 0: rank %d got %d", tl_rank, rc);
    p = (void *)&p;
    rc = plancoll_malloc(tl_rank == tl_size - 1 ? SIZE_MAX : (size_t)1 << 24, comm, &p);
    TL_CHECK(rc == (tl_rank == tl_size - 1 ? PLANCOLL_ERR_OVERFLOW : PLANCOLL_ERR_REMOTE) && p == NULL,
             "SIZE_MAX on the last rank: rank %d got %d (%s)", tl_rank, rc, plancoll_error_detail());
    TL_CHECK(pc_heap_arenas(L) == arenas, "a failed malloc grew the heap from %d to %d arenas", arenas,
             pc_heap_arenas(L));

    /* size 0 is malloc(0): NULL and success, also when other ranks ask for memory. */
    heap_alloc(0, comm);
    void *odd = heap_alloc(tl_rank % 2 ? 100 : 0, comm);
    TL_OK(plancoll_free(odd));
    TL_OK(plancoll_free(NULL));

    /* Frees of memory that is not a live block: errors with a detail, never a crash. */
    int on_stack = 0;
    rc = plancoll_free(&on_stack);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT && plancoll_error_detail()[0], "free(stack): got %d", rc);
    void *m = malloc(64);
    rc = plancoll_free(m);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT && plancoll_error_detail()[0], "free(malloc'd): got %d", rc);
    free(m);
    char *q = heap_alloc(256, comm);
    fill(q, 256, tl_rank, 5);
    rc = plancoll_free(q + 64);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT, "free(interior pointer): got %d", rc);
    rc = plancoll_free(q + 1);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT, "free(unaligned interior pointer): got %d", rc);
    TL_CHECK(verify(q, 256, tl_rank, 5) < 0, "a refused free changed the block");
    /* A node peer's block, reached through the peer mapping, is not this rank's to free. */
    struct where w = locate(L, q, 256, 5), *all = malloc(sizeof *all * (size_t)nsize);
    tl_allgather(&w, (int)(sizeof w / sizeof(int64_t)), MPI_INT64_T, all, node);
    if (nsize > 1) {
        int j = (nrank + 1) % nsize;
        void *peer = pc_heap_peer_address(L, j, (int)all[j].arena, (size_t)all[j].offset);
        rc = plancoll_free(peer);
        TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT, "free(a peer's block): got %d", rc);
    }
    free(all);
    tl_barrier(node);
    TL_OK(plancoll_free(q));
    rc = plancoll_free(q);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT && plancoll_error_detail()[0], "double free: got %d", rc);
    /* The heap is intact after the refused frees: the same request gets the same block back. */
    char *again = heap_alloc(256, comm);
    TL_CHECK(again == q, "after a double free the 256-byte block moved (%p, was %p)", (void *)again, (void *)q);
    TL_OK(plancoll_free(again));
}

static void test_basic(MPI_Comm comm, struct pc_layout *L)
{
    /* Different sizes on different ranks, some over a page. */
    size_t size = 1000 + 37 * (size_t)tl_rank + (size_t)(tl_rank % 3) * 4096;
    char *p = heap_alloc(size, comm);
    fill(p, size, tl_rank, 1);
    struct where w = locate(L, p, size, 1);
    int a = -1;
    size_t off = 0;
    TL_CHECK(pc_heap_find(L, p + size - 1, 1, &a, &off) && a == w.arena && off == (size_t)w.offset + size - 1,
             "find of the block's last byte");
    TL_CHECK(pc_heap_find(L, p, 0, NULL, NULL), "find with 0 bytes inside the heap");
    size_t part = pc_heap_part_size(L, nrank, (int)w.arena);
    TL_CHECK(part >= size, "part of %zu bytes holds a block of %zu", part, size);
    TL_CHECK(!pc_heap_find(L, p, part + 1, NULL, NULL), "a range longer than the part is found");
    TL_CHECK(!pc_heap_find(L, (char *)pc_heap_peer_address(L, nrank, (int)w.arena, 0) + part - 1, 2, NULL, NULL),
             "a range crossing the part's end is found");
    int local = 0;
    TL_CHECK(!pc_heap_find(L, &local, sizeof local, NULL, NULL), "a stack variable is found in the heap");
    TL_CHECK(!pc_heap_find(L, NULL, 1, NULL, NULL), "NULL is found in the heap");
    TL_CHECK(pc_heap_peer_address(L, nrank, pc_heap_arenas(L), 0) == NULL, "peer_address of a missing arena");
    TL_CHECK(pc_heap_peer_address(L, nsize, 0, 0) == NULL, "peer_address of a missing node rank");
    TL_CHECK(pc_heap_peer_address(L, nrank, (int)w.arena, part) == NULL, "peer_address past the part");
    check_peers(L, &w, 1);

    /* Arenas are made collectively: the same number on every rank of the node. */
    int n = pc_heap_arenas(L), lo = 0, hi = 0;
    tl_allreduce(&n, &lo, 1, MPI_INT, MPI_MIN, node);
    tl_allreduce(&n, &hi, 1, MPI_INT, MPI_MAX, node);
    TL_CHECK(lo == hi && n >= 1, "node ranks hold %d..%d arenas", lo, hi);
    TL_OK(plancoll_free(p));
}

static void test_alignment(MPI_Comm comm)
{
    static const size_t sizes[] = {1, 3, 63, 64, 65, 127, 200, 4095, 4097, 100000};
    enum { N = sizeof sizes / sizeof sizes[0] };
    char *p[N];
    for (int i = 0; i < N; i++) {
        size_t s = sizes[(i + tl_rank) % N]; /* a different size on each rank for each call */
        p[i] = heap_alloc(s, comm);
        fill(p[i], s, tl_rank, 100 + (uint64_t)i);
    }
    for (int i = 0; i < N; i++) {
        size_t s = sizes[(i + tl_rank) % N];
        TL_CHECK(verify(p[i], s, tl_rank, 100 + (uint64_t)i) < 0, "block %d of %zu bytes overwritten", i, s);
        TL_OK(plancoll_free(p[i]));
    }
}

static void test_reuse(MPI_Comm comm)
{
    size_t s = 4096 + 64 * (size_t)tl_rank;
    char *a = heap_alloc(s, comm), *b = heap_alloc(s, comm), *c = heap_alloc(s, comm);
    TL_CHECK(a + s <= b || b + s <= a, "blocks a and b overlap");
    TL_OK(plancoll_free(b));
    char *d = heap_alloc(s, comm);
    TL_CHECK(d == b, "a freed block is not reused for a same-size request (%p, freed %p)", (void *)d, (void *)b);
    /* Freed neighbours merge: a, d (= b) and c together hold a request of three times s. */
    TL_OK(plancoll_free(a));
    TL_OK(plancoll_free(c));
    TL_OK(plancoll_free(d));
    char *e = heap_alloc(3 * s, comm);
    TL_CHECK(e == a, "three freed neighbours do not serve 3*s from the first one (%p, expected %p)", (void *)e,
             (void *)a);
    TL_OK(plancoll_free(e));
}

static void test_growth(MPI_Comm comm, struct pc_layout *L)
{
    size_t small = 3000 + 64 * (size_t)tl_rank;
    char *old = heap_alloc(small, comm);
    fill(old, small, tl_rank, 7);
    struct where w_old = locate(L, old, small, 7);

    /* Node rank 0 asks for more than any part it has; the others ask for little. One new arena per node. */
    int before = pc_heap_arenas(L);
    size_t largest = 0;
    for (int a = 0; a < before; a++)
        if (pc_heap_part_size(L, nrank, a) > largest) largest = pc_heap_part_size(L, nrank, a);
    size_t big = nrank == 0 ? largest + 3 * PC_HEAP_MIN_PART + 12345 : 500;
    char *b1 = heap_alloc(big, comm);
    fill(b1, big, tl_rank, 8);
    TL_CHECK(pc_heap_arenas(L) == before + 1, "a growing malloc made %d arenas from %d", pc_heap_arenas(L), before);
    struct where w1 = locate(L, b1, big, 8);
    if (nrank == 0) {
        TL_CHECK(w1.arena == before, "the big block is in arena %ld, expected the new one %d", (long)w1.arena, before);
        TL_CHECK(pc_heap_part_size(L, 0, before) >= 2 * largest, "the new part %zu is not at least twice %zu",
                 pc_heap_part_size(L, 0, before), largest);
    }

    /* Now every rank needs room: the next arena holds a part for each. */
    size_t big2 = 2 * PC_HEAP_MIN_PART + 4096 * (size_t)tl_rank + 1;
    for (int a = 0; a < pc_heap_arenas(L); a++)
        if (pc_heap_part_size(L, nrank, a) > big2) big2 = pc_heap_part_size(L, nrank, a) + 1;
    char *b2 = heap_alloc(big2, comm);
    fill(b2, big2, tl_rank, 9);
    TL_CHECK(pc_heap_arenas(L) == before + 2, "second growth: %d arenas, expected %d", pc_heap_arenas(L), before + 2);
    struct where w2 = locate(L, b2, big2, 9);
    TL_CHECK(w2.arena == before + 1, "the second big block is in arena %ld", (long)w2.arena);

    /* Old pointers are valid and unchanged, locally and through every peer's mapping. */
    TL_CHECK(verify(old, small, tl_rank, 7) < 0, "the block from before growth changed");
    struct where ws[3] = {w_old, w1, w2};
    check_peers(L, ws, 3);
    TL_OK(plancoll_free(b1));
    TL_OK(plancoll_free(old));
    TL_OK(plancoll_free(b2));
}

/* ---- stress ---- */
struct live {
    char *p;
    size_t size;
    uint64_t tag;
};

static int by_address(const void *x, const void *y)
{
    const struct live *a = x, *b = y;
    return a->p < b->p ? -1 : a->p > b->p;
}

static void check_live(struct pc_layout *L, struct live *v, int n)
{
    struct live *s = malloc(sizeof *s * (size_t)(n ? n : 1));
    memcpy(s, v, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, by_address);
    for (int i = 0; i < n; i++) {
        TL_CHECK(pc_heap_find(L, s[i].p, s[i].size, NULL, NULL), "live block %p (%zu bytes) outside the heap",
                 (void *)s[i].p, s[i].size);
        if (i + 1 < n)
            TL_CHECK(s[i].p + s[i].size <= s[i + 1].p, "live blocks overlap: %p+%zu and %p", (void *)s[i].p,
                     s[i].size, (void *)s[i + 1].p);
        long bad = verify(s[i].p, s[i].size, tl_rank, s[i].tag);
        TL_CHECK(bad < 0, "live block tag %lu: byte %ld overwritten", (unsigned long)s[i].tag, bad);
    }
    free(s);
}

static size_t random_size(uint64_t *rng)
{
    uint64_t r = tl_rand(rng);
    switch (r % 16) {
    case 0: return 0;
    case 1: case 2: return (size_t)(r >> 8) % 65536 + 1;
    case 3: return (size_t)(r >> 8) % 300000 + 1;
    default: return (size_t)(r >> 8) % 2048 + 1;
    }
}

static void test_stress(MPI_Comm comm, struct pc_layout *L, int iterations)
{
    enum { MAX_LIVE = 200, PUBLISH = 8 };
    struct live v[MAX_LIVE];
    int n = 0;
    uint64_t rng = 0x5eed0000u + (uint64_t)tl_rank, tag = 1000;
    long ops = 0;
    for (int it = 0; it < iterations; it++) {
        size_t size = random_size(&rng);
        char *p = heap_alloc(size, comm);
        ops++;
        if (p) {
            fill(p, size, tl_rank, ++tag);
            v[n++] = (struct live){p, size, tag};
        }
        /* Free about as often as we allocate, more when many are live; verify before freeing. */
        int frees = (int)(tl_rand(&rng) % 3) + (n > MAX_LIVE - 4 ? 4 : 0);
        for (int f = 0; f < frees && n > 0; f++) {
            int k = (int)(tl_rand(&rng) % (uint64_t)n);
            TL_CHECK(verify(v[k].p, v[k].size, tl_rank, v[k].tag) < 0, "block tag %lu overwritten before its free",
                     (unsigned long)v[k].tag);
            TL_OK(plancoll_free(v[k].p));
            ops++;
            v[k] = v[--n];
        }
        if (it % 100 == 99) check_live(L, v, n);
    }
    check_live(L, v, n);

    /* Node peers read a few live blocks of each rank through their own mappings. */
    struct where pub[PUBLISH];
    memset(pub, 0, sizeof pub);
    for (int k = 0; k < PUBLISH && k < n; k++) pub[k] = locate(L, v[k].p, v[k].size, v[k].tag);
    check_peers(L, pub, PUBLISH);

    for (int k = 0; k < n; k++) TL_OK(plancoll_free(v[k].p));
    ops += n;
    long total = 0;
    tl_allreduce(&ops, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    TL_CHECK(total >= 1000L * tl_size, "stress ran only %ld operations", total);

    /* Everything freed: each part coalesced back into one block, so the largest part serves a request of
     * nearly its whole size without a new arena. */
    int before = pc_heap_arenas(L);
    size_t largest = 0;
    for (int a = 0; a < before; a++)
        if (pc_heap_part_size(L, nrank, a) > largest) largest = pc_heap_part_size(L, nrank, a);
    char *all = heap_alloc(largest - 2 * PC_HEAP_ALIGN, comm);
    TL_CHECK(pc_heap_arenas(L) == before, "after freeing everything a part-sized request grew the heap (%d -> %d)",
             before, pc_heap_arenas(L));
    TL_OK(plancoll_free(all));
}

/* ---- what the heap holds after frees (high-water marks) ---- */

/* Bytes of the pages of L's heap that have memory behind them, on this node: mincore over each arena's window
 * (every process maps every part, and a shared page counts whoever touched it). The system's view, not the
 * heap's accounting. */
static size_t node_resident(struct pc_layout *L)
{
    size_t total = 0;
    for (int a = 0; a < pc_heap_arenas(L); a++) {
        uintptr_t lo = UINTPTR_MAX, hi = 0;
        for (int j = 0; j < nsize; j++) {
            size_t part = pc_heap_part_size(L, j, a);
            if (!part) continue;
            uintptr_t b = (uintptr_t)pc_heap_peer_address(L, j, a, 0);
            if (b < lo) lo = b;
            if (b + part > hi) hi = b + part;
        }
        if (hi > lo) total += pc_shm_resident((const void *)lo, hi - lo);
    }
    return total;
}

/* Bytes of this process's mappings of the MPI's shared-memory files in /dev/shm (/proc/self/maps): every window of the
 * process, the heap's arenas among them. The system's view of the arenas the heap still holds. */
static size_t mapped_shm(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return 0;
    char line[512];
    size_t total = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (strstr(line, "/dev/shm/") && sscanf(line, "%lx-%lx", &lo, &hi) == 2) total += hi - lo;
    }
    fclose(f);
    return total;
}

/* Bytes of /dev/shm a shared window maps beyond its ranks' parts: MPI's own state kept in the window's segment
 * (Open MPI 4.1's osc/sm puts its locks and counters there, two pages on this machine; MPICH nothing). Measured on
 * a window made as the heap makes its arenas (one contiguous MPI_Win_allocate_shared over the node), of one page
 * per rank, so that an arena is judged by what plancoll asked MPI for. */
static size_t window_overhead(MPI_Comm comm)
{
    MPI_Comm node;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int nranks;
    MPI_Comm_size(node, &nranks);
    MPI_Info info;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "false");
    size_t before = mapped_shm();
    void *mine = NULL;
    MPI_Win win;
    MPI_Win_allocate_shared(4096, 1, info, node, &mine, &win);
    MPI_Info_free(&info);
    size_t during = mapped_shm(), parts = 0;
    for (int j = 0; j < nranks; j++) {
        MPI_Aint size = 0;
        int disp;
        void *base;
        MPI_Win_shared_query(win, j, &size, &disp, &base);
        parts += (size_t)size;
    }
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    return during > before + parts ? during - before - parts : 0;
}

/* Bytes of the node's parts of the arenas the heap holds (the address space it keeps). */
static size_t node_held(struct pc_layout *L)
{
    size_t total = 0;
    for (int a = 0; a < pc_heap_arenas(L); a++)
        for (int j = 0; j < nsize; j++) total += pc_heap_part_size(L, j, a);
    return total;
}

/* After everything is freed: at most each rank's cache has memory behind it (plus the pages free blocks share
 * with a part's ends), and after the next plancoll_malloc (collective, where windows are freed) at most one empty
 * arena is left, which is all the process still maps of the heap. */
static void check_released(struct pc_layout *L, MPI_Comm comm, size_t mapped_before, size_t overhead, const char *what)
{
    struct pc_heap_usage u;
    pc_heap_usage(L, &u);
    TL_CHECK(u.live == 0, "%s: %zu live bytes after everything was freed", what, u.live);
    TL_CHECK(u.cached <= PC_HEAP_CACHE_BYTES, "%s: %zu bytes cached, more than %zu", what, u.cached,
             PC_HEAP_CACHE_BYTES);
    tl_barrier(comm); /* every rank has freed its blocks */
    size_t resident = node_resident(L);
    size_t bound = (size_t)nsize * PC_HEAP_CACHE_BYTES + (size_t)nsize * 2 * 4096 * (size_t)u.arenas;
    TL_CHECK(resident <= bound, "%s: everything freed, yet %zu bytes of the node's heap have memory (bound %zu)", what,
             resident, bound);
    tl_barrier(comm); /* every rank has measured */
    heap_alloc(0, comm); /* collective: empty arenas beyond one go back */
    pc_heap_usage(L, &u);
    TL_CHECK(u.arenas <= 1, "%s: %d arenas held after everything was freed", what, u.arenas);
    size_t mapped = mapped_shm(), held = node_held(L) + (size_t)u.arenas * overhead;
    TL_CHECK(mapped <= mapped_before + held, "%s: the process maps %zu bytes of /dev/shm, %zu before the sequence and "
             "%zu in the heap's one arena (MPI's own %zu included)", what, mapped, mapped_before, held, overhead);
    if (tl_rank == 0)
        printf("  %s: node heap memory %zu bytes after the frees (bound %zu), %d arena of %zu bytes kept, mapped "
               "/dev/shm %zu -> %zu bytes\n", what, resident, bound, u.arenas, held, mapped_before, mapped);
}

/* A long-running program allocating per phase: random mallocs and frees, then a growing sequence of blocks each
 * freed before the next. Neither may leave the node's heap at its peak. */
static void test_high_water(MPI_Comm parent, int iterations)
{
    MPI_Comm comm;
    MPI_Comm_dup(parent, &comm); /* a heap of its own, measured from empty */
    heap_alloc(0, comm);         /* makes the layout and the (empty) heap */
    struct pc_layout *L = NULL;
    TL_CHECK(pc_layout_get(comm, &L) == PLANCOLL_SUCCESS && L, "pc_layout_get: %s", plancoll_error_detail());
    if (!L) return;
    size_t overhead = window_overhead(comm);
    size_t mapped_before = mapped_shm();
    double t0 = MPI_Wtime();
    /* A first block sizes the parts, so the random sequence runs mostly inside one arena (windows are slow to
     * make on an oversubscribed node); its memory must go back too. */
    char *first = heap_alloc((size_t)4 << 20, comm);
    if (first) memset(first, 1, (size_t)4 << 20);
    TL_OK(plancoll_free(first));

    enum { MAX_LIVE = 16 };
    struct live v[MAX_LIVE];
    int n = 0;
    uint64_t rng = 0x41170000u + (uint64_t)tl_rank, tag = 5000;
    size_t peak = 0;
    for (int it = 0; it < iterations; it++) {
        uint64_t r = tl_rand(&rng);
        size_t size = r % 4 == 0 ? (size_t)(r >> 8) % ((size_t)1 << 20) + 1 : (size_t)(r >> 8) % 65536 + 1;
        if (n == MAX_LIVE) size = 0; /* still a collective call */
        char *p = heap_alloc(size, comm);
        if (p) {
            fill(p, size, tl_rank, ++tag);
            v[n++] = (struct live){p, size, tag};
        }
        int frees = (int)(tl_rand(&rng) % 2); /* fewer frees than mallocs: the live set grows to MAX_LIVE */
        for (int f = 0; f < frees && n > 0; f++) {
            int k = (int)(tl_rand(&rng) % (uint64_t)n);
            TL_CHECK(verify(v[k].p, v[k].size, tl_rank, v[k].tag) < 0, "block tag %lu overwritten before its free",
                     (unsigned long)v[k].tag);
            TL_OK(plancoll_free(v[k].p));
            v[k] = v[--n];
        }
        if (it % 10 == 9) {
            size_t now = node_resident(L);
            if (now > peak) peak = now;
        }
    }
    for (int k = 0; k < n; k++) {
        TL_CHECK(verify(v[k].p, v[k].size, tl_rank, v[k].tag) < 0, "block tag %lu overwritten", (unsigned long)v[k].tag);
        TL_OK(plancoll_free(v[k].p));
    }
    if (tl_rank == 0) printf("  random sequence: node heap memory peaked at %zu bytes or more\n", peak);
    check_released(L, comm, mapped_before, overhead, "random sequence");

    /* Blocks of 1, 2, ... 8 MiB on every rank, each freed before the next is asked for: every block is
     * touched in full (as an application fills it), its first and last pages with a pattern that is checked. */
    for (size_t k = 1; k <= 8; k++) {
        size_t size = k << 20;
        char *p = heap_alloc(size, comm);
        if (!p) continue;
        memset(p, 0x3c, size);
        fill(p, 4096, tl_rank, 9000 + k);
        fill(p + size - 4096, 4096, tl_rank, 9100 + k);
        TL_CHECK(verify(p, 4096, tl_rank, 9000 + k) < 0 && verify(p + size - 4096, 4096, tl_rank, 9100 + k) < 0,
                 "growing block of %zu bytes", size);
        TL_OK(plancoll_free(p));
    }
    check_released(L, comm, mapped_before, overhead, "growing sequence");

    /* The kept arena serves a request it holds without a new window, and memory comes back for it. */
    int before = pc_heap_arenas(L);
    struct pc_heap_usage u;
    pc_heap_usage(L, &u);
    char *again = heap_alloc((size_t)6 << 20, comm);
    struct pc_heap_usage w;
    pc_heap_usage(L, &w);
    TL_CHECK(pc_heap_arenas(L) == before && w.arenas == u.arenas, "a request the kept arena holds made a new arena");
    if (again) {
        fill(again, 4096, tl_rank, 9999);
        memset(again + 4096, 0x3d, ((size_t)6 << 20) - 4096);
        TL_CHECK(verify(again, 4096, tl_rank, 9999) < 0, "block in the kept arena");
        TL_OK(plancoll_free(again));
    }
    if (tl_rank == 0) printf("  high-water test: %.2f s\n", MPI_Wtime() - t0);
    pc_layout_release(L);
    MPI_Comm_free(&comm);
}

/* Heaps of different communicators coexist; a heap dies with its communicator. */
static void test_lifetime(MPI_Comm comm)
{
    MPI_Comm sub;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &sub);
    char *in_comm = heap_alloc(777, comm);
    char *in_sub = heap_alloc(555 + (size_t)tl_rank, sub);
    char *kept = heap_alloc(999, sub); /* still live when sub is freed: released collectively with it */
    fill(in_sub, 555 + (size_t)tl_rank, tl_rank, 11);
    fill(kept, 999, tl_rank, 12);
    TL_CHECK(verify(in_sub, 555 + (size_t)tl_rank, tl_rank, 11) < 0, "sub-communicator block");
    TL_OK(plancoll_free(in_sub)); /* plancoll_free finds the right heap without a communicator */
    TL_OK(plancoll_free(in_comm));
    MPI_Comm_free(&sub);
    int rc = plancoll_free(kept);
    TL_CHECK(rc == PLANCOLL_ERR_ARGUMENT, "free of a block of a freed communicator's heap: got %d", rc);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "heap");
    /* test_heap [N]: N random operations in the high-water test (40 by default) */
    int high_water_iterations = argc > 1 ? atoi(argv[1]) : 40;
    MPI_Comm comm;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    tl_split_node(comm, tl_rank, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);

    /* The first malloc makes the layout; the test then holds a reference for the lookups. */
    void *first = heap_alloc(64, comm);
    struct pc_layout *L = NULL;
    TL_CHECK(pc_layout_get(comm, &L) == PLANCOLL_SUCCESS && L, "pc_layout_get: %s", plancoll_error_detail());
    if (L) {
        TL_CHECK(L->node_rank == nrank && L->node_size == nsize, "layout node %d/%d, split says %d/%d", L->node_rank,
                 L->node_size, nrank, nsize);
        TL_CHECK(pc_heap_arenas(L) == 1, "one arena after the first malloc, got %d", pc_heap_arenas(L));
        TL_OK(plancoll_free(first));
        test_errors(comm, L);
        test_basic(comm, L);
        test_alignment(comm);
        test_reuse(comm);
        test_growth(comm, L);
        test_stress(comm, L, 1200);
        test_lifetime(comm);
        test_high_water(comm, high_water_iterations);
        pc_layout_release(L);
    }
    /* A heap on MPI_COMM_WORLD, as applications use it, left for MPI_Finalize. */
    void *w = heap_alloc(1000, MPI_COMM_WORLD);
    if (w) memset(w, 2, 1000);
    MPI_Comm_free(&node);
    MPI_Comm_free(&comm); /* releases comm's heap with blocks of earlier tests freed */
    return tl_finish();
}
