/* The engine of the node-aware alltoall family ([GLEX]): L-a2a (one leader), MPML (l leaders, destination
 * nodes dealt round robin), NMPML (leaders spread over NUMA domains) and ONMPML (overlapped). See node_aware.c. */
#ifndef PC_NODE_AWARE_H
#define PC_NODE_AWARE_H

#include <stdbool.h>

#include "exec/plan.h"

struct pc_na_config {
    int leaders;      /* requested leaders per node; clamped to [1, smallest node] */
    bool numa_spread; /* leaders one per NUMA domain in turn, else the first l node ranks */
    bool overlap;     /* ONMPML: gather, send, receive and scatter as each piece is ready */
    int depth;        /* ONMPML: sends in flight per leader (0: no limit) */
    bool put;         /* inter-node transport: MPI_Put into the peer node's segment, else MPI_Isend/Irecv */
    bool stream;      /* stores=stream: the gather writes S with streaming stores (contiguous types), fenced before
                       * its progress flags (exec/reduce_stream.h) */
};

int pc_na_setup(struct plancoll_plan_s *plan, const struct pc_na_config *cfg);

/* The three registered forms of the engine and how a candidate's parameters configure each. */
enum pc_na_form { PC_NA_LEADER, PC_NA_MPML, PC_NA_ONMPML };
struct pc_na_config pc_na_config_of(enum pc_na_form form, const struct pc_params *params);
static inline int pc_na_setup_form(struct plancoll_plan_s *plan, enum pc_na_form form)
{
    struct pc_na_config c = pc_na_config_of(form, &plan->params);
    return pc_na_setup(plan, &c);
}

/* One execution as a resumable schedule (struct pc_algorithm's start and advance); execute is pc_steps_execute. */
int pc_na_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
int pc_na_advance(struct plancoll_plan_s *plan, bool *done);
void pc_na_teardown(struct plancoll_plan_s *plan);
/* struct pc_algorithm.set_stores of the node-aware family (stores=auto). */
void pc_na_set_stores(struct plancoll_plan_s *plan, bool stream);
/* Whether the largest node pair's message fits one MPI_Put (seg_window.h, PC_RMA_MAX_BYTES): the put transport
 * is offered only then, and refused at set-up otherwise. */
bool pc_na_put_fits(const struct pc_problem *p);
/* Leaders actually used for a request (documented clamp: at least 1, at most the smallest node's ranks). */
int pc_na_leaders_used(const struct pc_problem *p, int requested);
/* ---- the engine's index arithmetic, pure so tests/unit/test_node_aware_sim.c can run every rank of it ---- */

/* Node pair at offset k (1 <= k < N): node n sends to (n + k) mod N and receives from (n - k) mod N, both through
 * leader k mod l on each side. */
static inline int pc_na_send_node(int n, int N, int k) { return (n + k) % N; }
static inline int pc_na_recv_node(int n, int N, int k) { return (n - k % N + N) % N; }
static inline int pc_na_pair_leader(int k, int l) { return k % l; }
/* Where R[s] starts in node d's R area, in blocks: the other nodes' blocks for d in node order. */
static inline size_t pc_na_r_offset_blocks(const int *node_sizes, int d, int s)
{
    size_t off = 0;
    for (int x = 0; x < s; x++)
        if (x != d) off += (size_t)node_sizes[x] * (size_t)node_sizes[d];
    return off;
}
/* S is ordered by destination: for each destination node d in node order, its ppn_d * ppn blocks [t][i] (t =
 * destination node rank, i = source node rank of this node, ppn = this node's ranks), so the message to node d is
 * one contiguous run of S. Where node d's run starts, in blocks: */
static inline size_t pc_na_s_offset_blocks(const int *node_sizes, int ppn, int d)
{
    size_t off = 0;
    for (int x = 0; x < d; x++) off += (size_t)node_sizes[x] * (size_t)ppn;
    return off;
}
/* Block (t, i) of the message from this node to node d: source node rank i's block for node rank t of d, at S
 * block pc_na_s_offset_blocks(d) + t * ppn + i; R[s] on the receiver holds it at the same place of its run,
 * t * ppn_s + i (pc_na_recv_block), and node rank t of d copies it to its receive block of the sender's rank. */
static inline size_t pc_na_send_block(const int *node_sizes, int ppn, int d, int t, int i)
{
    return pc_na_s_offset_blocks(node_sizes, ppn, d) + (size_t)t * (size_t)ppn + (size_t)i;
}
static inline size_t pc_na_recv_block(int ppn_s, int t, int i) { return (size_t)t * (size_t)ppn_s + (size_t)i; }

double pc_na_estimate(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *m);
static inline double pc_na_estimate_form(enum pc_na_form form, const struct pc_problem *p,
                                         const struct pc_params *params, const struct pc_machine_model *m)
{
    struct pc_na_config c = pc_na_config_of(form, params);
    return pc_na_estimate(p, &c, m);
}
/* The busiest rank's busy time (struct pc_algorithm's busy, exec/busy.h), from the same terms. */
double pc_na_busy(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *m);
static inline double pc_na_busy_form(enum pc_na_form form, const struct pc_problem *p, const struct pc_params *params,
                                     const struct pc_machine_model *m)
{
    struct pc_na_config c = pc_na_config_of(form, params);
    return pc_na_busy(p, &c, m);
}
/* Leader counts 1, 2, 4, ... and the smallest node's size; NUMA-spread placement when nodes have domains; both
 * transports when there is more than one node; the store mode pc_staging_store_mode offers; pipeline
 * depth `depth` on each. */
int pc_na_leader_variants(const struct pc_problem *p, struct pc_params *out, int max, int depth);

#endif
