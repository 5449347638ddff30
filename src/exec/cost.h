/* What the algorithms' estimates share: where a message of a schedule step goes (inside a node or between
 * nodes, and how many pairs of one node cross to another at once), built on the machine model's primitives
 * (base/model.h). Pure C, no MPI. Nodes are taken as blocks of max_ppn consecutive ranks when ranks are
 * placed by node; otherwise any step may leave a node, with all of a node's ranks sending off-node at once. */
#ifndef PC_EXEC_COST_H
#define PC_EXEC_COST_H

#include "base/problem.h"
#include "base/model.h"

/* The most ranks of one node whose partner partner(r, arg) (-1: none) is on another node: the k of
 * pc_cost_net_concurrent for a step where every rank talks to its partner. 0 when the step stays inside nodes. */
static inline int pc_cost_offnode_pairs(const struct pc_problem *p, int (*partner)(int r, int P, int arg), int arg)
{
    const int P = p->shape.nranks, ppn = p->shape.max_ppn > 0 ? p->shape.max_ppn : 1;
    if (p->shape.nnodes <= 1 || P <= 1) return 0;
    if (!p->shape.ranks_by_node) return ppn;
    int most = 0;
    for (int first = 0; first < P; first += ppn) {
        int k = 0;
        for (int r = first; r < first + ppn && r < P; r++) {
            int q = partner(r, P, arg);
            if (q >= 0 && q / ppn != r / ppn) k++;
        }
        if (k > most) most = k;
    }
    return most;
}

/* Partners of the usual steps: the shift (r + d) mod P (Bruck, pairwise), and r's peer at mask d after the
 * fold of the power-of-two allreduces (recursive doubling, halving), -1 for ranks that sit out. */
static inline int pc_cost_shift_partner(int r, int P, int d) { return (int)(((long)r + d) % P); }
static inline int pc_cost_xor_partner(int r, int P, int mask)
{
    int pof2 = 1;
    while (pof2 * 2 <= P) pof2 *= 2;
    int rem = P - pof2, newrank = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
    if (newrank < 0) return -1;
    int peer = newrank ^ mask;
    return peer < rem ? peer * 2 + 1 : peer + rem;
}

/* One message of a step in which k ranks of a node send off-node at once (k = 0: the step stays inside the
 * node, an MPI message between ranks of a node). */
static inline double pc_cost_step_msg(const struct pc_machine_model *m, int k, double bytes)
{
    return k > 0 ? pc_cost_net_concurrent(m, k, bytes) : pc_cost_shm_msg(m, bytes);
}

/* A rank's direct exchange of one `bytes` message with every other rank ([GLEX] eq. 6 in the model's
 * primitives): its max_ppn - 1 node peers as node messages, its P - min_ppn off-node peers in steps where all
 * max_ppn ranks of the node send off-node at once:
 *   (ppn - 1) shm_msg(bytes) + (P - ppn) net_concurrent(ppn, bytes). */
static inline double pc_cost_direct(const struct pc_problem *p, const struct pc_machine_model *m, double bytes)
{
    const int P = p->shape.nranks, local = p->shape.max_ppn - 1, remote = P - p->shape.min_ppn;
    double t = local > 0 ? local * pc_cost_shm_msg(m, bytes) : 0.0;
    if (p->shape.nnodes > 1 && remote > 0) t += remote * pc_cost_net_concurrent(m, p->shape.max_ppn, bytes);
    return t;
}

/* A spread-out alltoallv of the busiest rank (the agreed maxima: every rank predicts the same): `msgs` messages
 * carrying S = max_send_bytes, of which O = max_offnode_bytes leave the node. Off-node messages are the share of
 * msgs that goes to off-node ranks when destinations are spread evenly, msgs_e = msgs (P - min_ppn) / (P - 1),
 * each carrying O / msgs_e; the rest, msgs_i = msgs - msgs_e, carry S - O (at least one message each side when
 * it has bytes). The split is shared by the estimate below and the busy time (busy.h). */
struct pc_direct_v_split {
    double local, local_bytes;   /* node messages and the bytes they carry in all */
    double remote, remote_bytes; /* network messages and theirs */
};
static inline struct pc_direct_v_split pc_cost_direct_v_split(const struct pc_problem *p, double msgs)
{
    const double P = p->shape.nranks, S = (double)p->max_send_bytes, O = (double)p->max_offnode_bytes;
    struct pc_direct_v_split d = {.local_bytes = S > O ? S - O : 0.0, .remote_bytes = O};
    d.remote = p->shape.nnodes > 1 ? msgs * (P - p->shape.min_ppn) / (P - 1) : 0.0;
    if (O > 0 && d.remote < 1) d.remote = 1;
    if (O <= 0) d.remote = 0;
    d.local = msgs - d.remote;
    if (d.local_bytes > 0 && d.local < 1) d.local = 1;
    return d;
}

/*   msgs_i shm_msg((S - O) / msgs_i) + msgs_e net_concurrent(ppn, O / msgs_e). */
static inline double pc_cost_direct_v(const struct pc_problem *p, const struct pc_machine_model *m, double msgs)
{
    if (p->shape.nranks <= 1) return pc_cost_shm_copy(m, 1, 1, (double)p->max_send_bytes); /* its block to itself */
    if (msgs <= 0) return 0.0;
    const struct pc_direct_v_split d = pc_cost_direct_v_split(p, msgs);
    double t = d.local > 0 ? d.local * pc_cost_shm_msg(m, d.local_bytes / d.local) : 0.0;
    if (d.remote > 0) t += d.remote * pc_cost_net_concurrent(m, p->shape.max_ppn, d.remote_bytes / d.remote);
    return t;
}

/* The scheduler turns of `rounds` dependency rounds (a rank waiting for another rank's message or flag before it
 * can go on): on a host with more ranks than cores every round waits until the rank that must act next has had the
 * core, turn_us each (model.h; calibrated on oversubscribed layouts, 0 otherwise). The model's other figures are
 * measured with the ranks not taking part asleep, so they leave this wait out: an algorithm of many short rounds
 * (Bruck, recursive doubling, a leader's gather-exchange-scatter) pays it once per round, one that posts everything
 * at once and waits once (pap, spread-out) about once.
 *   rounds turn_us when oversubscribed, else 0. */
static inline double pc_cost_turns(const struct pc_problem *p, const struct pc_machine_model *m, double rounds)
{
    return p->shape.oversubscribed ? rounds * m->turn_us : 0.0;
}

/* MPI's own collectives here progress their schedule only while the rank is inside MPI: with more ranks than
 * cores each round of the schedule waits for a scheduler turn (measured on this machine: slower than plancoll's
 * yield-waited exchanges). The rounds of MPI's schedule the estimate does not already charge as steps.
 *   pc_cost_turns(rounds). */
static inline double pc_cost_native_rounds(const struct pc_problem *p, const struct pc_machine_model *m, double rounds)
{
    return pc_cost_turns(p, m, rounds);
}

/* The reduction of `bytes` with the problem's (op, type), the generic rate when it carries none. */
static inline double pc_cost_reduce_of(const struct pc_problem *p, const struct pc_machine_model *m, double bytes)
{
    return p->coll == PC_ALLREDUCE ? pc_cost_reduce(m, p->op_id, p->type_id, bytes) : m->gamma_us_per_b * bytes;
}

#endif
