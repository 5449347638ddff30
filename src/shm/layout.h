/* Who is on which node and NUMA domain, computed once per communicator and cached on it as an MPI
 * attribute (freed with the communicator). The layout owns plancoll's duplicate of the communicator, the
 * node and leader communicators, the node's control slots (node barrier) and the node's shared data segments.
 *
 * Creating a layout costs one nonblocking MPI_Comm_idup when this process has already surveyed the
 * communicator's processes (census.h): the node map, NUMA map and host census come from the census without
 * communication. Only the first layout over processes not yet surveyed calls MPI_Comm_split_type. The node and
 * leader communicators and the control slots are made when a plan first needs them (pc_layout_comms,
 * pc_layout_control), and node-shared memory is a POSIX shared mapping (pc_node_shm_alloc): no blocking MPI
 * collective (each costs a scheduler slice or more per call when ranks outnumber cores) in the common path. */
#ifndef PC_LAYOUT_H
#define PC_LAYOUT_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/problem.h"

#define PC_CACHELINE 64

/* One rank's slot in the node's control window; a cache line each so ranks never share a line. */
struct pc_sync_slot {
    _Atomic uint64_t barrier_seq;
    char pad[PC_CACHELINE - sizeof(uint64_t)];
};

struct pc_segment; /* shm/segment.h */

/* Memory shared by the ranks of one node: a POSIX shared mapping, or an MPI shared window where POSIX shared
 * memory fails. The same bytes on every node rank, possibly at different addresses. */
struct pc_node_shm {
    char *base;
    size_t bytes;
    MPI_Win win; /* MPI_WIN_NULL for a POSIX mapping */
};

struct pc_layout {
    int refcount;             /* the attribute holds one, each plan one */
    MPI_Comm attached;        /* the user's communicator whose attribute holds it (layout.c: freed at MPI_Finalize) */
    struct pc_layout *attached_prev, *attached_next;
    bool attached_predefined; /* attached to MPI_COMM_WORLD or MPI_COMM_SELF: deleted only at MPI_Finalize */
    MPI_Comm comm;            /* plancoll's duplicate of the user's communicator */
    int rank, size;

    MPI_Comm node_comm;       /* ranks sharing memory with this one (MPI_COMM_TYPE_SHARED); see pc_layout_comms */
    int node_rank, node_size;
    int node_id, nnodes;      /* nodes numbered by their lowest rank's order */
    MPI_Comm leader_comm;     /* local rank j of every node that has one: "leader j" communicator; pc_layout_comms */
    bool node_template_ok;    /* node_comm can be an idup of the world's node communicator (census.h) */
    bool leader_template_ok;  /* leader_comm can be an idup of the world's leader communicator */

    int *node_of;             /* [size] node of every rank */
    int *local_rank_of;       /* [size] node rank of every rank */
    int *node_sizes;          /* [nnodes] */
    int *node_first;          /* [nnodes + 1] offsets into node_ranks */
    int *node_ranks;          /* [size] ranks of node k, in rank order, at node_first[k].. */

    int num_numa;             /* NUMA domains of this node as hwloc sees it (>= 1) */
    int *numa_of_local;       /* [node_size] NUMA domain of each node rank */
    bool numa_from_binding;   /* true when read from this rank's CPU binding, false when dealt by rank */
    int *numa_of_rank;        /* [size] NUMA domain of every rank (to place other nodes' leaders) */
    int max_numa;             /* most NUMA domains of any node */

    int host_ranks;           /* ranks on this host (cliques emulate nodes on one host) */
    int host_cores;           /* online CPUs of this host */
    bool oversubscribed;      /* host_ranks > host_cores: this rank's waits yield at once */
    bool any_oversubscribed;  /* true on every rank if any host is: planning must agree across ranks */
    int crowded_ranks, crowded_cores; /* the host with the most ranks per core (ties: more ranks), from the whole
                                         census, so the same on every rank: its ranks and cores (pc_shape) */
    int wait_mode;            /* PLANCOLL_WAIT as parsed at layout creation */

    struct pc_node_shm ctl_shm; /* node-shared control slots */
    struct pc_sync_slot *ctl; /* [node_size], NULL until pc_layout_control */
    uint64_t barrier_seq;     /* how many node barriers this rank has passed */

    struct pc_segment *segment; /* current data segment, or NULL until a plan asks for one */
    /* Called from shared-memory waits while set: an RMA origin may need this rank's MPI progress to finish. */
    void (*poke)(void *);
    void *poke_ctx;
    struct pc_heap *heap;       /* plancoll_malloc's node-shared heap (shm/heap.h), NULL until first used */
    /* The tag slots of the live plans on this communicator (exec/plan.c, pc_plan_tag_slot): bit s of word s/64. */
    uint64_t tag_slots_used[16];
    int tag_slots;              /* usable slots, 1..1024 (0: not yet read from MPI_TAG_UB) */
};

/* The layout of comm, created (collectively) at first use. Adds a reference the caller must release. */
int pc_layout_get(MPI_Comm comm, struct pc_layout **out);
/* Makes node_comm and leader_comm if they are not made yet. Collective over layout->comm: call it where every
 * rank of the communicator comes (a plan's set-up), never where only a node's ranks do. */
int pc_layout_comms(struct pc_layout *layout);
/* Makes the control slots (pc_node_barrier) if they are not made yet. Collective over layout->comm. */
int pc_layout_control(struct pc_layout *layout);

/* Node-shared memory (defined in segment.c). Collective over layout->comm: every node gets one zeroed area of `bytes` (equal on the ranks of a node; 0 maps
 * nothing), mapped by all its ranks. A POSIX shared mapping made by node rank 0 and opened by the others (two
 * nonblocking, yield-waited collectives; nothing stays in /dev/shm); if that fails on any rank, an MPI shared
 * window on the node communicator. *out is set in every case (win MPI_WIN_NULL unless the fallback ran). */
int pc_node_shm_alloc(struct pc_layout *layout, size_t bytes, struct pc_node_shm *out);
/* Local for a mapping, collective over the node for a window; nothing for an area never allocated whose win is
 * MPI_WIN_NULL and base NULL. */
void pc_node_shm_free(struct pc_node_shm *shm);
/* A full memory barrier for what this rank wrote to (or will read from) the area. */
void pc_node_shm_sync(const struct pc_node_shm *shm);
void pc_layout_release(struct pc_layout *layout);
void pc_layout_shape(const struct pc_layout *layout, struct pc_shape *shape);

/* NUMA domain discovery through hwloc (honours HWLOC_SYNTHETIC / HWLOC_XMLFILE).
 * *domain is -1 when this rank's binding does not tell. */
void pc_topology_numa(int *num_domains, int *domain);
/* The fallback when binding is unknown: node ranks dealt over domains in blocks. */
int pc_numa_by_rank(int node_rank, int node_size, int num_domains);

/* PLANCOLL_EMULATE_NODES=K (a testing override, like MPICH's MPIR_CVAR_NUM_CLIQUES=K with
 * MPIR_CVAR_CLIQUES_BY_BLOCK=1, for MPIs that have no such switch): the ranks of each host are split into K
 * blocks of consecutive ranks, each an emulated node. Read once per process (the first call); the census
 * (census.c) agrees it across ranks. */
struct pc_emulation {
    int nodes;            /* K; 0 when unset or empty, -1 when not a positive integer */
    const char *text;     /* the variable's text (NULL when unset), for messages */
    int host_rank;        /* this process's position among its host's MPI_COMM_WORLD ranks, from the launcher */
    int host_size;        /* (Open MPI's OMPI_COMM_WORLD_LOCAL_*, MPICH Hydra's MPI_LOCAL*); -1 when not given */
};
const struct pc_emulation *pc_emulation_setting(void);
/* The block (emulated node, 0 .. k-1) of the process at position host_rank of host_size, by MPICH's rule for
 * cliques by block: the first host_size % k blocks hold one rank more than the others (5 on 2: 3+2; 8 on 3:
 * 3+3+2). Requires 0 <= host_rank < host_size and 1 <= k <= host_size. */
int pc_emulated_block(int host_rank, int host_size, int k);

/* Node barrier driven by a sequence number: no reset, safe for any number of back-to-back calls. */
void pc_node_barrier(struct pc_layout *layout);

/* Flags in shared memory carry sequence numbers: the k-th post writes k, a waiter waits for >= k. */
static inline void pc_flag_post(_Atomic uint64_t *flag, uint64_t seq)
{
    atomic_store_explicit(flag, seq, memory_order_release);
}
void pc_flag_wait(const struct pc_layout *layout, _Atomic uint64_t *flag, uint64_t seq);

#endif
