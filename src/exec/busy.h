/* The caller's busy time of a started execution (struct pc_algorithm's busy, docs/design.md "Planning for
 * overlap"): the part of an algorithm's estimate that the caller's own CPU does, as opposed to the time it waits
 * on the network or on peers. Built from the same terms the estimates sum (cost.h), split this way:
 *   busy: local copies, transposes and packing (pc_cost_shm_copy, pc_cost_transpose), reductions
 *         (pc_cost_reduce_of), MPI's copy of a message between ranks of one node (MPICH has no asynchronous
 *         progress: its shared-memory copy runs inside the caller's test or wait, shm_beta per byte), and the
 *         LogGP overhead o of every call that posts or completes a message or advances a step (one test each);
 *   wait: the network's latency and bandwidth (L, G, the multi-port tables), the start-up of a node message
 *         beyond its overhead, flag signals (sync_us) and scheduler turns (turn_us).
 * Pure C, no MPI: the same inputs as the estimates, so every rank computes the same busy times. */
#ifndef PC_EXEC_BUSY_H
#define PC_EXEC_BUSY_H

#include "exec/cost.h"
#include "exec/schedule.h"

/* The caller's overhead of `calls` calls that post, complete or advance something: calls o. */
static inline double pc_busy_calls(const struct pc_machine_model *m, double calls) { return calls * m->o_us; }

/* Whether the communicator's network runs on its hosts' CPUs: the most crowded host holds more than one node's
 * ranks (nodes emulated on one host, their network the kernel's loopback), so a network message's bytes are
 * copied by the kernel in its sender's and its receiver's calls, CPU work that the host's other ranks wait for
 * like any copy. Elsewhere the network is taken to move bytes by itself. */
static inline bool pc_busy_network_on_host(const struct pc_problem *p)
{
    return p->shape.nnodes > 1 && p->shape.max_ppn > 0 && p->shape.host_ranks > p->shape.max_ppn;
}

/* One message of a step (posted and completed: 2 o) in which k ranks of a node send off-node at once (k = 0: a
 * node message, whose shared-memory copy the caller's MPI calls make: + shm_beta bytes; k > 0 on a network that
 * runs on the host: + G bytes, the network's per-byte time, as its kernel copies keep the rank's core busy). */
static inline double pc_busy_msg(const struct pc_problem *p, const struct pc_machine_model *m, int k, double bytes)
{
    if (k <= 0) return pc_busy_calls(m, 2) + m->shm_beta_us_per_b * bytes;
    return pc_busy_calls(m, 2) + (pc_busy_network_on_host(p) ? m->G_us_per_b * bytes : 0.0);
}

/* pc_cost_direct's exchange, as busy time: (ppn - 1) node messages and (P - ppn) network ones. */
static inline double pc_busy_direct(const struct pc_problem *p, const struct pc_machine_model *m, double bytes)
{
    const int P = p->shape.nranks, local = p->shape.max_ppn - 1, remote = P - p->shape.min_ppn;
    double t = local > 0 ? local * pc_busy_msg(p, m, 0, bytes) : 0.0;
    if (p->shape.nnodes > 1 && remote > 0) t += remote * pc_busy_msg(p, m, 1, bytes);
    return t;
}

/* pc_cost_direct_v's spread-out alltoallv of the busiest rank, as busy time (the same split of msgs messages into
 * node and network ones). */
static inline double pc_busy_direct_v(const struct pc_problem *p, const struct pc_machine_model *m, double msgs)
{
    if (p->shape.nranks <= 1) return pc_cost_shm_copy(m, 1, 1, (double)p->max_send_bytes);
    if (msgs <= 0) return 0.0;
    const struct pc_direct_v_split d = pc_cost_direct_v_split(p, msgs);
    return (d.local > 0 ? d.local * pc_busy_msg(p, m, 0, d.local_bytes / d.local) : 0.0) + (d.remote > 0 ? d.remote * pc_busy_msg(p, m, 1, d.remote_bytes / d.remote) : 0.0);
}

/* pc_bruck_steps_cost's steps as busy time: per step its message, packing and unpacking (2 transpose of the
 * slots it moves) and the test that advances it. */
static inline double pc_busy_bruck_steps(const struct pc_problem *p, int radix, double m,
                                         const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    struct pc_bruck_step steps[64];
    int n = pc_bruck_steps(P, radix, steps, 64);
    double t = 0;
    for (int s = 0; s < n && s < 64; s++) {
        int k = pc_bruck_moves_count(P, radix, &steps[s]);
        int offnode = pc_cost_offnode_shift(p, (long)steps[s].digit * steps[s].weight);
        t += pc_busy_msg(p, mm, offnode, k * m) + 2.0 * pc_cost_transpose(mm, k * m) + pc_busy_calls(mm, 1);
    }
    return t;
}

/* The allreduces of allreduce/common.c over P ranks, n bytes, as busy time: each step's message, its reduction and
 * its test; the fold (when P is not a power of two) a message in, a reduction and a message out. halving:
 * reduce-scatter by recursive halving then the allgather replaying it (rsag), else recursive doubling.
 * between_nodes: every partner is on another node (the leaders of the hierarchical allreduces, one per node);
 * otherwise P is the problem's ranks and a step's messages stay in a node or leave it as the problem places them. */
static inline double pc_busy_allreduce_over(const struct pc_problem *p, int P, double n, bool halving,
                                            bool between_nodes, const struct pc_machine_model *m)
{
    if (P <= 1) return 0;
    int pof2 = 1;
    while (pof2 * 2 <= P) pof2 *= 2;
    double t = 0;
    if (pof2 != P) /* the fold's partners are neighbours 2i, 2i + 1: node messages when ranks are placed by node */
        t += 2 * (pc_busy_msg(p, m, between_nodes || (p->shape.nnodes > 1 && !p->shape.ranks_by_node), n) +
                  pc_busy_calls(m, 1)) +
             pc_cost_reduce_of(p, m, n);
    for (int mask = halving ? pof2 / 2 : 1; halving ? mask >= 1 : mask < pof2; mask = halving ? mask / 2 : mask * 2) {
        double bytes = halving ? n * mask / pof2 : n;
        int k = between_nodes ? 1 : pc_cost_offnode_xor(p, mask);
        t += (halving ? 2 : 1) * (pc_busy_msg(p, m, k, bytes) + pc_busy_calls(m, 1)) + pc_cost_reduce_of(p, m, bytes);
    }
    return t;
}

/* The problem's own allreduce over its P ranks (recursive_doubling.c, rabenseifner.c, native.c). */
static inline double pc_busy_allreduce(const struct pc_problem *p, double n, bool halving,
                                       const struct pc_machine_model *m)
{
    return pc_busy_allreduce_over(p, p->shape.nranks, n, halving, false, m);
}

#endif
