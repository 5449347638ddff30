/* What the algorithms' estimates share: where a message of a schedule step goes (inside a node or between
 * nodes, and how many pairs of one node cross to another at once), built on the machine model's primitives
 * (base/model.h). Pure C, no MPI. Nodes are taken as blocks of max_ppn consecutive ranks when ranks are
 * placed by node; otherwise any step may leave a node, with all of a node's ranks sending off-node at once. */
#ifndef PC_EXEC_COST_H
#define PC_EXEC_COST_H

#include "base/problem.h"
#include "base/model.h"

/* The most ranks of one node whose partner partner(r, arg) (-1: none) is on another node: the k of
 * pc_cost_net_concurrent for a step where every rank talks to its partner. 0 when the step stays inside nodes.
 * Counting visits every rank (O(P)) and the estimates ask it for every step of every variant, and again for the busy
 * times: at 100,000 ranks that dominated a prediction (plancoll-predict, docs/predict.md). The answer depends only on
 * the shape, the partner function and arg, so the last answers are kept per thread (the planner may run in several
 * threads at once) and a repeated question costs a lookup; the counted value is the same either way. */
struct pc_cost_offnode_memo {
    int (*partner)(int r, int P, int arg); /* NULL: the xor partner's own count (pc_cost_offnode_xor) */
    int arg, nranks, ppn, nnodes, most;
    bool used;
};
#define PC_COST_OFFNODE_MEMO 64
static _Thread_local struct pc_cost_offnode_memo pc_cost_offnode_memo[PC_COST_OFFNODE_MEMO];
static _Thread_local int pc_cost_offnode_memo_next;
static inline bool pc_cost_offnode_recall(const struct pc_problem *p, int (*partner)(int, int, int), int arg, int *most)
{
    for (int i = 0; i < PC_COST_OFFNODE_MEMO; i++) {
        const struct pc_cost_offnode_memo *e = &pc_cost_offnode_memo[i];
        if (e->used && e->partner == partner && e->arg == arg && e->nranks == p->shape.nranks &&
            e->ppn == p->shape.max_ppn && e->nnodes == p->shape.nnodes) {
            *most = e->most;
            return true;
        }
    }
    return false;
}
static inline int pc_cost_offnode_keep(const struct pc_problem *p, int (*partner)(int, int, int), int arg, int most)
{
    pc_cost_offnode_memo[pc_cost_offnode_memo_next] =
        (struct pc_cost_offnode_memo){partner, arg, p->shape.nranks, p->shape.max_ppn, p->shape.nnodes, most, true};
    pc_cost_offnode_memo_next = (pc_cost_offnode_memo_next + 1) % PC_COST_OFFNODE_MEMO;
    return most;
}
static inline int pc_cost_offnode_pairs(const struct pc_problem *p, int (*partner)(int r, int P, int arg), int arg)
{
    const int P = p->shape.nranks, ppn = p->shape.max_ppn > 0 ? p->shape.max_ppn : 1;
    if (p->shape.nnodes <= 1 || P <= 1) return 0;
    if (!p->shape.ranks_by_node) return ppn;
    int most = 0;
    if (pc_cost_offnode_recall(p, partner, arg, &most)) return most;
    for (int first = 0; first < P; first += ppn) {
        int k = 0;
        for (int r = first; r < first + ppn && r < P; r++) {
            int q = partner(r, P, arg);
            if (q >= 0 && q / ppn != r / ppn) k++;
        }
        if (k > most) most = k;
    }
    return pc_cost_offnode_keep(p, partner, arg, most);
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

/* pc_cost_offnode_pairs(p, pc_cost_xor_partner, mask), the same count with the fold's arithmetic hoisted out of
 * the loop over ranks (the recursive-doubling and halving steps of every allreduce variant ask it). */
static inline int pc_cost_offnode_xor(const struct pc_problem *p, int mask)
{
    const int P = p->shape.nranks, ppn = p->shape.max_ppn > 0 ? p->shape.max_ppn : 1;
    if (p->shape.nnodes <= 1 || P <= 1) return 0;
    if (!p->shape.ranks_by_node) return ppn;
    int most = 0;
    if (pc_cost_offnode_recall(p, NULL, mask, &most)) return most;
    int pof2 = 1;
    while (pof2 * 2 <= P) pof2 *= 2;
    const int rem = P - pof2;
    for (int first = 0; first < P; first += ppn) {
        int k = 0, node = first / ppn;
        for (int r = first; r < first + ppn && r < P; r++) {
            int newrank = r < 2 * rem ? (r % 2 ? r / 2 : -1) : r - rem;
            if (newrank < 0) continue;
            int peer = newrank ^ mask, q = peer < rem ? peer * 2 + 1 : peer + rem;
            if (q / ppn != node) k++;
        }
        if (k > most) most = k;
    }
    return pc_cost_offnode_keep(p, NULL, mask, most);
}

/* pc_cost_offnode_pairs(p, pc_cost_shift_partner, d) without visiting the ranks (Bruck's steps ask it for every
 * step of every variant). With ranks placed by node in blocks of ppn, rank r of a block [a, a + L) keeps its partner
 * r + d (mod P, 0 <= d < P) inside the block when r < a + L - d (no wrap) or when r >= a + P - d (the wrap lands
 * back in the block): L - max(0, L - d) - max(0, L - (P - d)) ranks leave it, whatever a is. Every block is full
 * (L = ppn) but possibly the last (the rest of P). */
static inline int pc_cost_offnode_shift(const struct pc_problem *p, long d)
{
    const long P = p->shape.nranks, ppn = p->shape.max_ppn > 0 ? p->shape.max_ppn : 1;
    if (p->shape.nnodes <= 1 || P <= 1) return 0;
    if (!p->shape.ranks_by_node) return (int)ppn;
    d %= P;
    const long lengths[2] = {ppn < P ? ppn : P, P % ppn};
    long most = 0;
    for (int i = 0; i < 2; i++) {
        long L = lengths[i], stay = (L > d ? L - d : 0) + (L > P - d ? L - (P - d) : 0);
        if (L - stay > most) most = L - stay;
    }
    return (int)most;
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

/* The same exchange in place (pairwise's symmetric swaps, MPI's in-place alltoall): each step first packs the block
 * it gives away into a scratch block, and the partner then reads lines this core has just written. Inside a node
 * that is a handoff through a freshly written buffer, priced by the 2-copy table with ordinary stores (the host's
 * core placement shows there: far apart, a rewritten line costs several times a clean one; an exchange of clean
 * buffers, as shm_msg is timed, does not see it), plus the start-up of the message's protocol; between nodes, the
 * pack before the network message (measured at 2 ranks, 140-170 KiB blocks in place: 51-130 us against 27 us for
 * the clean exchange):
 *   (ppn - 1) (startup(bytes) + handoff_ordinary(ppn, bytes)) + (P - ppn) (net_concurrent(ppn, bytes) + copy(bytes)). */
static inline double pc_cost_direct_in_place(const struct pc_problem *p, const struct pc_machine_model *m, double bytes)
{
    const int P = p->shape.nranks, local = p->shape.max_ppn - 1, remote = P - p->shape.min_ppn;
    double t = local > 0 ? local * (pc_cost_shm_msg_startup(m, bytes) +
                                    pc_cost_shm_handoff(m, false, p->shape.max_ppn, bytes))
                         : 0.0;
    if (p->shape.nnodes > 1 && remote > 0)
        t += remote * (pc_cost_net_concurrent(m, p->shape.max_ppn, bytes) + pc_cost_shm_copy(m, 1, 1, bytes));
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

/* The node messages' bytes are copied by their receivers (MPI's large messages inside a node: each receiver pulls
 * its own), so the busiest sender's messages to c distinct receivers move c at a time as far as the node's cores
 * allow, and no faster than the busiest receiver takes its own node bytes, R - O (R = max_recv_bytes): with a
 * uniform exchange the sender's total, with one rank sending to all (a heavy pattern) about one message's time
 * (measured at 3 ranks on one node: 2 x 275 KiB from one rank in 76-85 us, one such message ~40 us).
 *   msgs_i startup((S - O) / msgs_i) + shm_beta max((S - O) / min(msgs_i, cores), R - O)
 *   + msgs_e net_concurrent(ppn, O / msgs_e),
 * startup(b) = the start-up of a node message of the mean size b in its protocol (pc_cost_shm_msg_startup: shm_alpha
 * with the line, more for the sizes MPI sends with a handshake). */
static inline double pc_cost_direct_v(const struct pc_problem *p, const struct pc_machine_model *m, double msgs)
{
    if (p->shape.nranks <= 1) return pc_cost_shm_copy(m, 1, 1, (double)p->max_send_bytes); /* its block to itself */
    if (msgs <= 0) return 0.0;
    const struct pc_direct_v_split d = pc_cost_direct_v_split(p, msgs);
    double t = 0.0;
    if (d.local > 0) {
        double cores = p->shape.host_cores > 0 ? (double)p->shape.host_cores : 1.0, at_once = d.local < cores ? d.local : cores;
        if (at_once < 1) at_once = 1;
        double received = (double)p->max_recv_bytes - (double)p->max_offnode_bytes, sent = d.local_bytes / at_once;
        t = d.local * pc_cost_shm_msg_startup(m, d.local_bytes / d.local) +
            m->shm_beta_us_per_b * (received > sent ? received : sent);
    }
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

/* The same for rounds that wait for MPI messages (point-to-point steps, spread-out exchanges): each message
 * waited for costs its sender's turn, so a round that waits for messages from `peers` ranks pays that many
 * (measured here at 3 ranks on 2 cores: an 8-byte exchange with both peers 9-18 us, a ring hop 4-9 us, where a
 * flag hop is 2.6 us). The MPI turn when calibrated, else the flag's.
 *   rounds peers mpi_turn_us when oversubscribed, else 0. */
static inline double pc_cost_mpi_turns(const struct pc_problem *p, const struct pc_machine_model *m, double rounds,
                                       double peers)
{
    if (!p->shape.oversubscribed) return 0.0;
    const double turn = m->mpi_turn_us > 0 ? m->mpi_turn_us : m->turn_us;
    return rounds * (peers > 1 ? peers : 1) * turn;
}

/* The turns of waiting for one point-to-point message of `bytes`, k ranks of the node sending off-node at once
 * (k = 0: the message stays inside the node): a shift step's (Bruck's: each rank sends to the rank d ahead and
 * receives from the rank d behind), and each network message of a posted exchange (pap, spread-out). An eager message is waited for once, as above. One that crosses the network in the
 * rendezvous regime (pc_model_net_handshake) is a chain of three: the sender's request to send waits for the
 * receiver to answer it from a progress call, the data then waits for the sender's next progress call, and the
 * receiver completes on its own; on an oversubscribed host each link waits for its rank's turn, and in a shift the
 * receiver is busy with its own partner ahead. The calibrated network rows leave those turns out (their pairs ran
 * with the other ranks asleep): at 6 ranks on 3 emulated nodes over 2 cores, two-phase Bruck over 20 KiB messages
 * measured 3-4x an estimate charging one turn. pap and spread-out charge it per network message of their posted
 * exchanges, whose messages may share one start-up (pc_cost_net_posted) but each wait for its own handshake (pap.c,
 * spreadout.c: 1.9-5.8x under their times with one turn a message). A pairwise exchange (recursive
 * doubling) keeps pc_cost_mpi_turns(1, 1): charged three, ESTIMATE took recursive doubling for a 45 KB allreduce
 * there, 1.6x slower than the hierarchical plan it displaced. Measured, not derived: why a pairwise exchange
 * escapes the chain is not settled (one observation).
 *   mpi_turns(1, 1) x (3 when k > 0 and handshake(bytes), else 1). */
static inline double pc_cost_message_turns(const struct pc_problem *p, const struct pc_machine_model *m, int k,
                                        double bytes)
{
    return pc_cost_mpi_turns(p, m, 1, 1) * (k > 0 && pc_model_net_handshake(m, bytes) ? 3.0 : 1.0);
}

/* A phase in which only `active` ranks of each node move network messages while the node's other ranks wait for
 * them (the leaders of the node-aware algorithms): on an oversubscribed host the waiting ranks stay runnable
 * (they yield), so each active rank gets a share cores / host_ranks of a core, where calibration timed `active`
 * concurrent pairs with the ranks not measuring asleep (the pairs of two nodes of the host: a share
 * min(1, cores / (active x nodes measured))). A large transfer needs its rank's progress calls throughout, so it
 * slows by the ratio of the two shares (measured here: 1.27 MiB each way between two leaders, the other rank of
 * each emulated node waiting, 2.5-3 ms; alone 1.1 ms). Relative to every rank of the node active (the direct
 * algorithms' case, whose calibrated rows already ran that crowded, and which the estimates leave unscaled), so
 * that leaders-only and all-ranks plans compare on the same footing. 1 where the host has a core per rank, where
 * every rank is active, or where the shape does not know its host (host_cores 0).
 *   s(active) / s(max_ppn), s(a) = max(1, min(1, cores / (a x min(2, nodes on the host))) / min(1, cores / host_ranks)). */
static inline double pc_cost_share_ratio(const struct pc_shape *s, double active)
{
    const double cores = s->host_cores, ranks = s->host_ranks;
    double host_nodes = s->max_ppn > 0 ? ranks / s->max_ppn : 1.0;
    if (host_nodes < 1) host_nodes = 1;
    const double measured = active * (host_nodes < 2 ? host_nodes : 2.0);
    const double calibrated_share = measured > cores ? cores / measured : 1.0, share = cores / ranks;
    return calibrated_share > share ? calibrated_share / share : 1.0;
}

static inline double pc_cost_waiting_slowdown(const struct pc_problem *p, double active)
{
    const struct pc_shape *s = &p->shape;
    if (!s->oversubscribed || s->host_cores <= 0 || s->host_ranks <= s->host_cores || active <= 0) return 1.0;
    if (active > s->max_ppn) active = s->max_ppn;
    return pc_cost_share_ratio(s, active) / pc_cost_share_ratio(s, s->max_ppn);
}

/* MPI's own collectives here progress their schedule only while the rank is inside MPI: with more ranks than
 * cores each round of the schedule waits for a scheduler turn (measured on this machine: slower than plancoll's
 * yield-waited exchanges). The rounds of MPI's schedule the estimate does not already charge as steps, one
 * peer each.
 *   pc_cost_mpi_turns(rounds, 1). */
static inline double pc_cost_native_rounds(const struct pc_problem *p, const struct pc_machine_model *m, double rounds)
{
    return pc_cost_mpi_turns(p, m, rounds, 1);
}

/* The reduction of `bytes` with the problem's (op, type), the generic rate when it carries none. */
static inline double pc_cost_reduce_of(const struct pc_problem *p, const struct pc_machine_model *m, double bytes)
{
    return p->coll == PC_ALLREDUCE ? pc_cost_reduce(m, p->op_id, p->type_id, bytes) : m->gamma_us_per_b * bytes;
}

#endif
