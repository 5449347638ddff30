/* The node-shared heap behind plancoll_malloc / plancoll_free, and the lookups algorithms use to read (or
 * write) a node peer's user buffer directly: one copy instead of two.
 *
 * Shape.  Each communicator's layout owns at most one heap (L->heap, created by the first plancoll_malloc
 * on that communicator, destroyed with the layout).  A heap is a set of arenas; arena k is one
 * MPI_Win_allocate_shared window over L->node_comm, contiguous (alloc_shared_noncontig=false), in which
 * every node rank owns a part (possibly of 0 bytes).  Every node rank maps every part of every arena, each
 * process at its own address.  A rank allocates only from its own parts.  Arenas are created and released
 * collectively over the node, in the same order on every node rank (only in plancoll_malloc, and only arenas
 * without a live block on any node rank); they never move or shrink while they hold a live block, so the arena
 * index of a block means the same window on every node rank.
 *
 * Location of a block.  (arena, offset) where offset is in bytes from the start of the owner's part of
 * that arena (the base MPI_Win_shared_query returns for the owner).  This pair is the same on every node
 * rank; only the pointer it maps to differs.  A rank tells its node peers "my buffer is at (arena,
 * offset)" (e.g. two integers in a shared segment, or in a message), and a peer turns that into its own
 * pointer with pc_heap_peer_address(L, owner_node_rank, arena, offset).
 *
 * Allocator (all bookkeeping is process-local memory: the shared parts hold only user data, so a user
 * overrunning a buffer cannot corrupt the allocator and plancoll_free never writes shared memory).  Blocks
 * are multiples of PC_HEAP_ALIGN bytes starting PC_HEAP_ALIGN-aligned; free blocks sit in one first-fit
 * list (most recently freed first), each block knows its address neighbours in its arena so a freed block
 * merges with free neighbours at once; live blocks are found by address in a hash table, which is what
 * makes a foreign or double free an error instead of a crash.  When this rank's request fits nowhere, the
 * node agrees (in the nonblocking allreduce every call makes) to add an arena in which each rank that needs
 * room gets a part of max(request, twice its largest part so far, PC_HEAP_MIN_PART) and the others a part of
 * 0 bytes.
 *
 * Memory (reserve.h).  A part is address space until blocks are taken from it: plancoll_malloc reserves the
 * pages of the block it returns before the ranks agree, so a /dev/shm too small for it is PLANCOLL_ERR_NOMEM on
 * every rank (the size in the detail), never SIGBUS at a later store.  plancoll_free (local) returns the pages
 * of a freed block to the system unless this rank's free blocks with memory behind them stay within
 * PC_HEAP_CACHE_BYTES; a free block is tracked as either wholly backed or wholly returned.  Windows are freed
 * in plancoll_malloc, the collective call: an arena that holds no live block on any node rank is released,
 * except one empty arena (the largest) kept for the next requests; when a rank needs a new arena the empty
 * ones could not serve it and are all released first (replaced, not added to).  A released arena's index is
 * reused by the next arena; live blocks never move. */
/*
 * For algorithm authors (reading a peer's user buffer directly).
 *  - Use plan->layout: it is the layout of the user's communicator, the one plancoll_malloc(comm) fills.
 *    Buffers from plancoll_malloc on another communicator are not found (fall back to copying).
 *  - Whether a buffer is in the heap can change with every execution (plancoll_execute_buffers), and
 *    differs per rank.  So each execution, each rank calls pc_heap_find on its own buffer range (the
 *    bytes the peers will read: true_lb to true_lb + true_extent, not just the first element) and publishes
 *    {found, arena, offset} to its node peers, e.g. in its slot of the plan's shared segment, then posts its
 *    sequence-numbered flag; a peer waits on the flag, reads the triple and either maps it with
 *    pc_heap_peer_address or reads the owner's copy in the segment.  The decision is per owner, so no
 *    agreement is needed: an owner not in the heap copies in, an owner in the heap does not.  A cheaper
 *    variant caches the triple per planned buffer at plan time (plancoll_execute only).
 *  - Lifetime: the owner may not return from execute (and so may not touch its buffer again) until every
 *    peer has finished reading it: end the execution with a node barrier or per-reader done flags.
 *  - Memory order: the owner's writes to its buffer happen before it posts the flag (release); the reader's
 *    acquire on the flag makes them visible, as for the segments.  No MPI call is needed on the heap's
 *    windows (they stay in a lock_all epoch for their lifetime).
 *  - Locations are node-local: an (arena, offset) means nothing on another node; arenas of different
 *    communicators' heaps are unrelated.
 *  - Receive buffers in the heap can be written directly by peers in the same way (push instead of pull).
 */
#ifndef PC_HEAP_H
#define PC_HEAP_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

struct pc_layout;
struct pc_heap;

/* Every block starts on this boundary (a cache line: no false sharing between blocks of different ranks). */
#define PC_HEAP_ALIGN 64
/* A rank's first part: small requests do not make one window each. */
#define PC_HEAP_MIN_PART ((size_t)1 << 20)
/* Bytes of its free blocks a rank keeps with memory behind them, so a free followed by a malloc of about the
 * same size costs no page faults; free memory past it goes back to the system at plancoll_free. */
#define PC_HEAP_CACHE_BYTES ((size_t)1 << 20)

/* Whether [ptr, ptr + bytes) lies inside this rank's own part of one arena of L's heap; if so, *arena and
 * *offset (either may be NULL) receive its location.  bytes == 0 is treated as 1 (ptr itself must be
 * inside).  It says nothing of whether the range is one live allocation: a caller that passes a range
 * within a live block gets that block's location.  False when L has no heap.  O(number of arenas), no
 * allocation, no communication. */
bool pc_heap_find(const struct pc_layout *L, const void *ptr, size_t bytes, int *arena, size_t *offset);

/* Where byte `offset` of node rank node_rank's part of arena `arena` is mapped in this process, or NULL
 * when arena, node_rank or offset is out of range (offset == the part's size is out of range).  With
 * node_rank == L->node_rank it inverts pc_heap_find.  O(1), no communication.  The arena must exist on
 * this rank: true for any location a node peer published after the plancoll_malloc that created it
 * returned on the peer, because arenas are created collectively. */
void *pc_heap_peer_address(const struct pc_layout *L, int node_rank, int arena, size_t offset);

/* Number of arena indices of L's heap (0 when none), released ones included; the same on every node rank
 * between plancoll_malloc calls. */
int pc_heap_arenas(const struct pc_layout *L);
/* Bytes of node rank node_rank's part of arena `arena` (0 when out of range or released). */
size_t pc_heap_part_size(const struct pc_layout *L, int node_rank, int arena);

/* What L's heap holds, by its own accounting (all 0 when L has no heap). */
struct pc_heap_usage {
    int arenas;    /* arenas (windows) held, the same on every node rank */
    size_t held;   /* bytes of this rank's parts in them: address space */
    size_t live;   /* bytes of this rank's live blocks */
    size_t cached; /* bytes of this rank's free blocks kept with memory behind them (<= PC_HEAP_CACHE_BYTES) */
};
void pc_heap_usage(const struct pc_layout *L, struct pc_heap_usage *usage);

/* Frees every arena (collective over the node: MPI_Win_free) and the bookkeeping; called from layout_free.
 * Every pointer into the heap dies here. NULL is a no-op. */
void pc_heap_destroy(struct pc_heap *heap);

/* plancoll_malloc's work once the API has checked MPI's state and comm (collective over comm). */
int pc_heap_malloc(size_t size, MPI_Comm comm, void **ptr);
/* plancoll_free's work: the block back to its arena (NULL is nothing to do). */
int pc_heap_free(void *ptr);

#endif
