/* The signature of one collective call, independent of MPI so the planner and unit tests can use it.
 * Its canonical key names the problem in wisdom; its hash lets ranks check in one allreduce that they
 * passed matching arguments. */
#ifndef PC_PROBLEM_H
#define PC_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum pc_collective { PC_ALLTOALL = 0, PC_ALLTOALLV = 1, PC_ALLREDUCE = 2, PC_NUM_COLLECTIVES = 3 };

const char *pc_collective_name(enum pc_collective c);

/* What the planner knows of the machine's shape for this communicator. */
struct pc_shape {
    int nranks;
    int nnodes;
    int min_ppn, max_ppn;
    bool oversubscribed; /* a host holds more ranks than cores */
    /* The most crowded host (most of this communicator's ranks per core, the same on every rank): its ranks and its
     * cores. The planner's host-wide work bound (planner.c predict) divides the CPU work of host_ranks ranks over
     * host_cores cores; 0 when unknown (a hand-built shape), which disables the bound. Not in the wisdom keys: a
     * model is already calibrated per oversubscribed shape (pc_model_shape_key), and a problem key has never told
     * apart hosts of different core counts either. */
    int host_ranks, host_cores;
    int numa_domains;    /* most NUMA domains of any node */
    bool ranks_by_node;  /* every node holds consecutive ranks (node k's before node k+1's): hierarchical
                            reductions then combine operands in rank order */
};

struct pc_problem {
    enum pc_collective coll;
    struct pc_shape shape;
    unsigned flags;
    bool in_place;            /* this rank passed MPI_IN_PLACE */
    bool some_in_place;       /* some rank passed MPI_IN_PLACE (agreed at plan time; allreduce allows a mix) */
    bool contiguous;          /* every rank's send and receive types are dense bytes (agreed at plan time) */
    /* alltoall: bytes per (source, destination) block */
    uint64_t block_bytes;
    /* alltoallv: this rank's bytes sent and received and nonzero blocks sent; the largest block (this rank's
     * while the call is checked, then the maximum over all ranks once the ranks agree, plan.c); and a hash of
     * the whole count matrix (same on every rank) */
    uint64_t send_total_bytes, recv_total_bytes, max_block_bytes;
    uint64_t pattern_hash;
    int nonzero_sends;
    /* alltoallv, agreed at plan time: maxima over ranks of send_total_bytes, recv_total_bytes, the bytes a rank
     * sends to ranks on other nodes, and nonzero_sends. The same on every rank, so estimates built on them never
     * make ranks choose differently under ESTIMATE (which does not communicate). */
    uint64_t max_send_bytes, max_recv_bytes, max_offnode_bytes;
    int max_nonzero_sends;
    /* alltoallv, agreed likewise: the most bytes one node's ranks send to, or receive from, other nodes in all (the
     * busiest node's side of the network). The node-aggregated algorithms move a node's bytes, not ppn times its
     * busiest rank's: with uneven rows (skewed, heavy, sparse patterns) that product overstates them 1.3-2x. 0:
     * unknown (a problem built by hand), max_ppn x max_offnode_bytes stands in (pc_problem_node_offnode_bytes). */
    uint64_t max_node_offnode_bytes;
    /* alltoallv, agreed likewise: some rank sends a nonzero block to a peer that sends it nothing back. Such a rank
     * may wait for no one and run executions ahead of its peers (pc_algorithm.runs_ahead). */
    bool one_way;
    /* allreduce */
    int count;
    uint64_t elem_bytes;
    int type_id;              /* index in the predefined type table, or -1 for a derived type */
    int op_id;                /* index in the predefined op table, or -1 for a user op */
    bool commutative;
    bool mpi_op_differs;      /* MPI's own op can give other results than plancoll's for this predefined (op,
                                 datatype): candidates that let MPI reduce are not applicable (agreed at plan time) */
};

/* Canonical text key, e.g. "allreduce:P=8:nodes=2:ppn=4-4:count=1024:type=3:op=2:comm=1".
 * Writes at most len bytes; returns the key's length. */
size_t pc_problem_key(const struct pc_problem *p, char *buf, size_t len);

/* The busiest node's off-node bytes (max_node_offnode_bytes), or max_ppn x max_offnode_bytes where that is unknown. */
static inline double pc_problem_node_offnode_bytes(const struct pc_problem *p)
{
    if (p->max_node_offnode_bytes > 0) return (double)p->max_node_offnode_bytes;
    return (double)p->shape.max_ppn * (double)p->max_offnode_bytes;
}

/* 64-bit FNV-1a, the hash used for signatures and registry names. */
uint64_t pc_hash_bytes(uint64_t h, const void *data, size_t len);
#define PC_HASH_SEED UINT64_C(14695981039346656037)

/* Hash of the parts of a call that every rank must pass identically (flags, collective, sizes, op,
 * forced algorithms), plus extra (e.g. a hash of PLANCOLL_ALGORITHM). Per-rank parts such as
 * MPI_IN_PLACE on allreduce are left out. */
uint64_t pc_problem_agreement_hash(const struct pc_problem *p, uint64_t extra);

#endif
