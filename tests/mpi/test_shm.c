/* The shared-memory layer, checked against independent computations: layout discovery (nodes, uneven nodes,
 * leader communicators, attribute caching and release with the communicator), NUMA maps (real or hwloc
 * synthetic: --synthetic-numa N), the sequence-numbered node barrier and flags, shared segments that grow
 * while older ones stay usable, and the memory of the current segment given back when no plan uses it. */
#if PC_MPI_SIMULATED
#include <simgrid/host.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/layout.h"
#include "shm/reserve.h"
#include "shm/segment.h"
#include "testlib.h"

/* The layout of comm against MPI_Comm_split_type on comm itself, split by PLANCOLL_EMULATE_NODES (tl_split_node)
 * (the layout of a communicator other than the first comes from the census, without calling it). */
static void check_layout(struct pc_layout *L, MPI_Comm comm, int expect_numa)
{
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm node;
    tl_split_node(comm, rank, &node);
    int nrank, nsize, lowest = rank;
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    tl_allreduce(MPI_IN_PLACE, &lowest, 1, MPI_INT, MPI_MIN, node);
    int *lowest_of = malloc(sizeof(int) * size);
    tl_allgather(&lowest, 1, MPI_INT, lowest_of, comm);
    int nodes = 0;
    for (int r = 0; r < size; r++) nodes += lowest_of[r] == r;

    TL_CHECK(L->size == size && L->rank == rank, "layout size/rank %d/%d, expected %d/%d", L->size, L->rank, size, rank);
    TL_CHECK(L->nnodes == nodes, "layout has %d nodes, MPI_Comm_split_type says %d", L->nnodes, nodes);
    TL_CHECK(L->node_size == nsize && L->node_rank == nrank, "node size/rank %d/%d expected %d/%d", L->node_size,
             L->node_rank, nsize, nrank);
    for (int r = 0; r < size; r++)
        for (int s = 0; s < size; s++)
            if ((L->node_of[r] == L->node_of[s]) != (lowest_of[r] == lowest_of[s])) {
                TL_CHECK(0, "ranks %d and %d: node_of disagrees with MPI_Comm_split_type", r, s);
                r = s = size;
            }
    const char *k = getenv("MPIR_CVAR_NUM_CLIQUES"), *block = getenv("MPIR_CVAR_CLIQUES_BY_BLOCK");
    if (comm == MPI_COMM_WORLD && k && atoi(k) > 1 && !(block && atoi(block))) {
        int K = atoi(k) < tl_size ? atoi(k) : tl_size;
        for (int r = 0; r < tl_size; r++)
            TL_CHECK(L->node_of[r] == r % K, "round-robin cliques: rank %d on node %d, expected %d", r, L->node_of[r], r % K);
    }
    int total = 0;
    for (int n = 0; n < L->nnodes; n++) {
        total += L->node_sizes[n];
        for (int j = 0; j < L->node_sizes[n]; j++) {
            int r = L->node_ranks[L->node_first[n] + j];
            TL_CHECK(L->node_of[r] == n && L->local_rank_of[r] == j, "node_ranks[%d][%d] = %d is wrong", n, j, r);
        }
    }
    TL_CHECK(total == size, "node sizes add up to %d", total);
    /* node and leader communicators, made on demand (collective): the node communicator is MPI's, member for
     * member and in the same order */
    TL_CHECK(pc_layout_comms(L) == PLANCOLL_SUCCESS, "pc_layout_comms failed: %s", plancoll_error_detail());
    MPI_Group mine, mpis;
    int same = MPI_UNEQUAL;
    MPI_Comm_group(L->node_comm, &mine);
    MPI_Comm_group(node, &mpis);
    MPI_Group_compare(mine, mpis, &same);
    TL_CHECK(same == MPI_IDENT, "the node communicator is not MPI_Comm_split_type's (%s)",
             same == MPI_SIMILAR ? "same ranks, other order" : "other ranks");
    MPI_Group_free(&mine);
    MPI_Group_free(&mpis);
    MPI_Comm_free(&node);
    /* leader communicator j: local rank j of every node that has one */
    int lsize, expected = 0;
    MPI_Comm_size(L->leader_comm, &lsize);
    for (int n = 0; n < L->nnodes; n++) expected += L->node_sizes[n] > L->node_rank;
    TL_CHECK(lsize == expected, "leader comm %d has %d ranks, expected %d", L->node_rank, lsize, expected);
    int *members = malloc(sizeof(int) * lsize);
    int me = rank;
    tl_allgather(&me, 1, MPI_INT, members, L->leader_comm);
    for (int i = 0; i < lsize; i++)
        TL_CHECK(L->local_rank_of[members[i]] == L->node_rank, "leader comm holds rank %d of local rank %d",
                 members[i], L->local_rank_of[members[i]]);
    free(members);
    free(lowest_of);
    /* NUMA */
    TL_CHECK(L->num_numa >= 1, "num_numa %d", L->num_numa);
    for (int i = 0; i < L->node_size; i++)
        TL_CHECK(L->numa_of_local[i] >= 0 && L->numa_of_local[i] < L->num_numa, "numa_of_local[%d] = %d", i,
                 L->numa_of_local[i]);
    if (expect_numa > 0) {
        TL_CHECK(L->num_numa == expect_numa, "synthetic topology: %d NUMA domains, expected %d", L->num_numa, expect_numa);
        TL_CHECK(!L->numa_from_binding, "a synthetic topology cannot place ranks by binding");
        /* ranks dealt in blocks: rank i of n on domain floor(i * D / n) */
        for (int i = 0; i < L->node_size; i++) {
            int d = (int)((long)i * expect_numa / L->node_size);
            TL_CHECK(L->numa_of_local[i] == d, "node rank %d on domain %d, expected %d", i, L->numa_of_local[i], d);
        }
    }
#if PC_MPI_SIMULATED
    /* Under SMPI the simulated hosts are the nodes, with the platform's cores (not this machine's): a node of as many
     * ranks as cores is not oversubscribed however few cores run the simulation. */
    long cores = sg_host_core_count(sg_host_self());
    int host_ranks = L->node_size;
#else
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int host_ranks = size;
#endif
    TL_CHECK(L->host_ranks == host_ranks, "this host's ranks: host_ranks %d, expected %d", L->host_ranks, host_ranks);
    TL_CHECK(L->oversubscribed == (host_ranks > cores), "oversubscribed %d with %d ranks on %ld cores",
             L->oversubscribed, host_ranks, cores);
}

/* Communicators over processes the census of the world already covers: reordered, a subset, the upper half
 * (whole nodes in blocks: its node communicators can come from the world's), a duplicate (everything can). */
static void check_sub_layouts(int expect_numa)
{
    for (int kind = 0; kind < 4; kind++) {
        MPI_Comm sub = MPI_COMM_NULL;
        if (kind == 0) MPI_Comm_split(MPI_COMM_WORLD, 0, tl_size - tl_rank, &sub);
        if (kind == 1) MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &sub);
        if (kind == 2) MPI_Comm_split(MPI_COMM_WORLD, tl_rank >= tl_size / 2, tl_rank, &sub);
        if (kind == 3) MPI_Comm_dup(MPI_COMM_WORLD, &sub);
        struct pc_layout *L = NULL;
        int err = pc_layout_get(sub, &L);
        TL_CHECK(err == PLANCOLL_SUCCESS && L, "sub-communicator %d: pc_layout_get failed: %s", kind, plancoll_error_detail());
        if (L) {
            if (kind == 0) TL_CHECK(!L->node_template_ok || L->nnodes == L->size, "reversed world: the world's node order does not fit");
            if (kind == 3) TL_CHECK(L->node_template_ok && L->leader_template_ok, "a duplicate of the world should use the templates");
            check_layout(L, sub, expect_numa);
            pc_layout_release(L);
        }
        MPI_Comm_free(&sub);
    }
}

static void check_caching(struct pc_layout *L)
{
    struct pc_layout *again = NULL;
    TL_CHECK(pc_layout_get(MPI_COMM_WORLD, &again) == PLANCOLL_SUCCESS && again == L, "the layout is not cached");
    int before = L->refcount;
    pc_layout_release(again);
    TL_CHECK(L->refcount == before - 1, "release did not drop a reference");
    /* The attribute's reference goes when the communicator is freed. */
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    struct pc_layout *D = NULL;
    TL_CHECK(pc_layout_get(dup, &D) == PLANCOLL_SUCCESS && D != L, "a duplicate communicator gets its own layout");
    TL_CHECK(D && D->refcount == 2, "attribute + caller should hold the new layout, refcount %d", D ? D->refcount : -1);
    MPI_Comm_free(&dup);
    TL_CHECK(D && D->refcount == 1, "freeing the communicator should drop the attribute's reference");
    /* the layout (its own communicators) stays usable while referenced */
    int one = 1, sum = 0;
    tl_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, D->comm);
    TL_CHECK(sum == tl_size, "layout communicator unusable after the user's was freed");
    pc_layout_release(D);
}

static void check_barrier_and_flags(struct pc_layout *L)
{
    struct pc_segment *seg = NULL;
    int first = -1;
    int err = pc_segment_acquire(L, 64 * (size_t)L->node_size, L->node_size, &seg, &first);
    TL_CHECK(err == PLANCOLL_SUCCESS && seg, "segment acquire failed: %s", plancoll_error_detail());
    if (!seg) return;
    _Atomic uint64_t *slots = (_Atomic uint64_t *)seg->base;
    /* barrier: after it, every rank sees every other rank's write of this round */
    for (uint64_t round = 1; round <= 200; round++) {
        atomic_store(&slots[L->node_rank], round);
        pc_node_barrier(L);
        for (int i = 0; i < L->node_size; i++)
            if (atomic_load(&slots[i]) != round) {
                TL_CHECK(0, "round %llu: node rank %d's slot holds %llu", (unsigned long long)round, i,
                         (unsigned long long)atomic_load(&slots[i]));
                round = 1000;
                break;
            }
        pc_node_barrier(L);
    }
    /* flags: a token passes round the node's ranks; each execution e posts e (no reset) */
    for (uint64_t e = 1; e <= 50 && L->node_size > 1; e++) {
        int me = L->node_rank, prev = (me + L->node_size - 1) % L->node_size;
        if (me == 0) {
            atomic_store(&slots[0], 1000 + e);
            pc_flag_post(pc_segment_flag(seg, first + 0), e);
            pc_flag_wait(L, pc_segment_flag(seg, first + prev), e);
            TL_CHECK(atomic_load(&slots[prev]) == 1000 + e, "exec %llu: token from %d carries stale data",
                     (unsigned long long)e, prev);
        } else {
            pc_flag_wait(L, pc_segment_flag(seg, first + prev), e);
            TL_CHECK(atomic_load(&slots[prev]) == 1000 + e, "exec %llu: token from %d carries stale data",
                     (unsigned long long)e, prev);
            atomic_store(&slots[me], 1000 + e);
            pc_flag_post(pc_segment_flag(seg, first + me), e);
        }
    }
    pc_node_barrier(L);
    /* growth: a larger request makes a new segment; the old one stays mapped and usable */
    struct pc_segment *big = NULL;
    int first_big = -1;
    err = pc_segment_acquire(L, seg->size * 4 + 1, 1, &big, &first_big);
    TL_CHECK(err == PLANCOLL_SUCCESS && big && big != seg && big->size >= seg->size * 4 + 1, "segment did not grow");
    TL_CHECK(L->segment == big, "the larger segment should be current");
    atomic_store(&slots[L->node_rank], 77);
    if (big) big->base[L->node_rank] = (char)(L->node_rank + 1);
    pc_node_barrier(L);
    for (int i = 0; i < L->node_size; i++) {
        TL_CHECK(atomic_load(&slots[i]) == 77, "old segment unusable after growth");
        if (big) TL_CHECK(big->base[i] == (char)(i + 1), "new segment not shared: byte %d", i);
    }
    pc_node_barrier(L);
    /* flags handed back and taken again start from zero */
    pc_segment_release(big, first_big, 1);
    struct pc_segment *again = NULL;
    int first_again = -1;
    if (big) {
        pc_flag_post(pc_segment_flag(big, first_big), 999);
        pc_node_barrier(L);
    }
    err = pc_segment_acquire(L, 16, 1, &again, &first_again);
    TL_CHECK(err == PLANCOLL_SUCCESS && again == big, "a small request should reuse the current segment");
    if (again) TL_CHECK(atomic_load(pc_segment_flag(again, first_again)) == 0, "reused flag not reset");
    pc_segment_release(again, first_again, 1);
    pc_segment_release(seg, first, L->node_size);
}

/* The current segment's memory goes back to the system when no plan uses it (all but PC_SEGMENT_CACHE_BYTES of
 * data), and is there again for the next plan that acquires it. Measured with mincore: the system's view. */
static void check_segment_memory(struct pc_layout *L)
{
    const size_t bytes = (size_t)8 << 20, page = (size_t)sysconf(_SC_PAGESIZE);
    for (int round = 0; round < 2; round++) {
        struct pc_segment *seg = NULL;
        int first = -1;
        int err = pc_segment_acquire(L, bytes, 1, &seg, &first);
        TL_CHECK(err == PLANCOLL_SUCCESS && seg, "segment of %zu bytes: %s", bytes, plancoll_error_detail());
        if (!seg) return;
        /* every node rank fills its share, as a plan's execution would */
        size_t lo = bytes / (size_t)L->node_size * (size_t)L->node_rank;
        size_t hi = L->node_rank == L->node_size - 1 ? bytes : lo + bytes / (size_t)L->node_size;
        memset(seg->base + lo, round + 1, hi - lo);
        pc_node_barrier(L);
        size_t used = pc_shm_resident(seg->base, bytes);
        TL_CHECK(used >= bytes, "round %d: %zu of the %zu data bytes in use have memory", round, used, bytes);
        for (size_t i = 0; i < bytes; i += 4093)
            if (seg->base[i] != (char)(round + 1)) {
                TL_CHECK(0, "round %d: byte %zu of the segment is %d", round, i, seg->base[i]);
                break;
            }
        pc_node_barrier(L);
        pc_segment_release(seg, first, 1);
        TL_CHECK(L->segment == seg, "the segment is no longer the layout's current one");
        size_t kept = pc_shm_resident(seg->base, bytes);
        size_t bound = PC_SEGMENT_CACHE_BYTES + (size_t)(L->node_size + 1) * page;
        TL_CHECK(kept <= bound, "round %d: no plan uses the segment, yet %zu bytes of its data have memory (bound %zu)",
                 round, kept, bound);
        if (tl_rank == 0 && round == 1)
            printf("segment of %zu data bytes: %zu with memory while used, %zu after its last user let go\n", bytes, used,
                   kept);
    }
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "shm");
    int expect_numa = 0;
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--synthetic-numa") == 0) expect_numa = atoi(argv[i + 1]);
    struct pc_layout *L = NULL;
    int err = pc_layout_get(MPI_COMM_WORLD, &L);
    TL_CHECK(err == PLANCOLL_SUCCESS && L, "pc_layout_get failed: %s", plancoll_error_detail());
    if (L) {
        check_layout(L, MPI_COMM_WORLD, expect_numa);
        check_sub_layouts(expect_numa);
        check_caching(L);
        check_barrier_and_flags(L);
        check_segment_memory(L);
        pc_layout_release(L);
    }
    return tl_finish();
}
