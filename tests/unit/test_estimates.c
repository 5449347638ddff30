/* Every algorithm's estimate against values computed by hand from the cost formula in the algorithm file's
 * opening comment, under hand_model(), whose tables are closed forms (sizes s at the sampled sizes 8, 64, 512,
 * 4096, 32768, 262144, 2097152 B; below 8 B a table gives its 8 B value):
 *   net_concurrent(k, s) = k (2 + s/1000)            (net(s) = net_concurrent(1, s)); g = 0.5 (the gap)
 *   net_posted(k, c, s)  = net_concurrent(k, c s) + (c - 1) g
 *   shm_msg(b)           = 0.5 + b/4000              (any b)
 *   shm_copy(n, t, s)    = n (0.25 + t s/8000)       (0 for s = 0)
 *   sync_us = 0.2, transpose(b) = b/10000, reduce(b) = b/2000 (op 2 on type 3: b/4000)
 *   turn_us = hand_turn: 0 unless a test sets it (the scheduler turn per dependency round when oversubscribed)
 * The test sizes are chosen so that every table lookup falls on a sampled size, where no interpolation happens.
 * The expected values below are worked out by hand (the arithmetic is in the comments), not by calling a
 * formula, so a change to either the model's primitives or a cost function shows up here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "exec/allreduce/dpml_common.h"
#include "exec/bruck_common.h"
#include "exec/cost.h"
#include "exec/registry.h"
#include "exec/reduce_stream.h"
#include "planner/planner.h"
#include "plancoll.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))

/* The model's turn_us (cost.h: charged per dependency round on an oversubscribed host). 0 by default, so the
 * tests of the other terms read as before; the native tests and test_oversubscribed_turns set it. */
static double hand_turn;
static double hand_mpi_turn; /* mpi_turn_us (0: turn_us stands in for it) */

static void hand_model(struct pc_machine_model *m)
{
    memset(m, 0, sizeof *m);
    /* summary numbers: no estimate should read them but gamma's fallback; kept so that one would show */
    m->alpha_us = 1.0;
    m->beta_us_per_b = 1.0 / 5000.0;
    m->gamma_us_per_b = 1.0 / 2000.0;
    m->copy_us_per_b = 1.0 / 10000.0;
    m->L_us = 1.0;
    m->o_us = 0.5;
    m->g_us = 0.5;
    m->G_us_per_b = 1.0 / 1000.0;
    m->net_ports = PC_MODEL_MAX_PORTS;
    for (int k = 1; k <= PC_MODEL_MAX_PORTS; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++) m->net_time[k - 1][s] = k * (2.0 + pc_model_sizes[s] / 1000.0);
    m->shm_alpha_us = 0.5;
    m->shm_beta_us_per_b = 1.0 / 4000.0;
    m->shm_taus = PC_MODEL_MAX_TAU;
    for (int n = 1; n <= 2; n++)
        for (int t = 1; t <= PC_MODEL_MAX_TAU; t++)
            for (int s = 0; s < PC_MODEL_NSIZES; s++)
                m->shm_time[n - 1][t - 1][s] = n * (0.25 + t * pc_model_sizes[s] / 8000.0);
    m->sync_us = 0.2;
    m->turn_us = hand_turn;
    m->mpi_turn_us = hand_mpi_turn;
    m->transpose_us_per_b = 1.0 / 10000.0;
    m->reduce_default_us_per_b = 1.0 / 2000.0;
    m->reduce_us_per_b[2][3] = 1.0 / 4000.0;
}

static int radix_param; /* the radix parameter estimate() passes (0: the algorithm's default) */

static double estimate(const char *name, const struct pc_problem *p)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    const struct pc_algorithm *a = pc_registry_get(i);
    assert_int_equal(a->collective, p->coll);
    struct pc_machine_model m;
    hand_model(&m);
    struct pc_params params;
    memset(&params, 0, sizeof params);
    params.radix = radix_param;
    return a->estimate(p, &params, &m);
}

#define EXPECT_RADIX(name, prob, radix, want)                                                                    \
    do {                                                                                                        \
        radix_param = (radix);                                                                                  \
        double got_ = estimate(name, prob), want_ = (want);                                                     \
        radix_param = 0;                                                                                        \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_)))                                                      \
            fail_msg("%s radix %d at P=%d: estimate %.6f us, by hand %.6f us", name, radix, (prob)->shape.nranks, \
                     got_, want_);                                                                              \
    } while (0)

#define EXPECT(name, prob, want)                                                                                \
    do {                                                                                                        \
        double got_ = estimate(name, prob), want_ = (want);                                                     \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_)))                                                      \
            fail_msg("%s at P=%d: estimate %.6f us, by hand %.6f us", name, (prob)->shape.nranks, got_, want_); \
    } while (0)

static struct pc_problem shape(enum pc_collective c, int P)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = c;
    p.shape = (struct pc_shape){.nranks = P, .nnodes = 1, .min_ppn = P, .max_ppn = P, .oversubscribed = P > 2};
    p.commutative = true;
    p.elem_bytes = 1;
    return p;
}

static struct pc_problem a2a(int P, uint64_t m)
{
    struct pc_problem p = shape(PC_ALLTOALL, P);
    p.block_bytes = m;
    return p;
}

static struct pc_problem a2av(int P, int nz, uint64_t bytes)
{
    struct pc_problem p = shape(PC_ALLTOALLV, P);
    p.nonzero_sends = p.max_nonzero_sends = nz;
    p.send_total_bytes = p.max_send_bytes = bytes;
    p.recv_total_bytes = p.max_recv_bytes = bytes;
    return p;
}

static struct pc_problem ar(int P, int count, uint64_t elem)
{
    struct pc_problem p = shape(PC_ALLREDUCE, P);
    p.count = count;
    p.elem_bytes = elem;
    return p;
}

static void test_default_model(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    /* documented defaults: L 2 us, o 0.5 us, G 1/10000 us/B; the summary numbers derive from them */
    assert_true(!m.calibrated);
    assert_true(m.alpha_us == 3.0);
    assert_true(fabs(m.beta_us_per_b - 0.0001) < 1e-15);
    assert_true(fabs(m.gamma_us_per_b - 0.001) < 1e-15);
}

/* ---- helpers: shapes over several nodes and parameters ---- */

/* N nodes of ppn consecutive ranks (the last may hold fewer: min_ppn), oversubscribed or not. */
static struct pc_problem a2a_nodes(int N, int min_ppn, int max_ppn, int P, uint64_t m, bool by_node, bool oversub)
{
    struct pc_problem p = a2a(P, m);
    p.shape.nnodes = N;
    p.shape.min_ppn = min_ppn;
    p.shape.max_ppn = max_ppn;
    p.shape.ranks_by_node = by_node;
    p.shape.oversubscribed = oversub;
    return p;
}

static struct pc_problem a2av_nodes(int N, int min_ppn, int max_ppn, int P, uint64_t S, uint64_t R, uint64_t O)
{
    struct pc_problem p = shape(PC_ALLTOALLV, P);
    p.shape.nnodes = N;
    p.shape.min_ppn = min_ppn;
    p.shape.max_ppn = max_ppn;
    p.shape.ranks_by_node = true;
    p.send_total_bytes = p.max_send_bytes = S;
    p.recv_total_bytes = p.max_recv_bytes = R;
    p.max_offnode_bytes = O;
    p.nonzero_sends = p.max_nonzero_sends = P - 1;
    p.max_block_bytes = P > 1 ? S / (uint64_t)(P - 1) : S;
    return p;
}

static struct pc_problem ar_nodes(int nodes, int ppn, int count, uint64_t elem)
{
    struct pc_problem p = ar(nodes * ppn, count, elem);
    p.shape.nnodes = nodes;
    p.shape.min_ppn = p.shape.max_ppn = ppn;
    p.shape.ranks_by_node = true;
    return p;
}

static double estimate_params(const char *name, const struct pc_problem *p, struct pc_params params)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    struct pc_machine_model m;
    hand_model(&m);
    return pc_registry_get(i)->estimate(p, &params, &m);
}
#define EXPECT_P(name, prob, params, want)                                                                      \
    do {                                                                                                        \
        double got_ = estimate_params(name, prob, params), want_ = (want);                                        \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_)))                                                      \
            fail_msg("%s (line %d): estimate %.9f us, by hand %.9f us", name, __LINE__, got_, want_);            \
    } while (0)
#define EXPECT_WITH(name, prob, l, t, want) EXPECT_P(name, prob, ((struct pc_params){.leaders = (l), .transport = (t)}), want)

/* pairwise.c: (ppn-1) shm_msg(m) + (P-ppn) net_concurrent(ppn, m) + shm_copy(1, 1, m) */
static void test_alltoall_pairwise(void **state)
{
    (void)state;
    struct pc_problem p = a2a(8, 512);
    EXPECT("alltoall.pairwise", &p, 4.71); /* 7 (0.5 + 0.128) + (0.25 + 0.064) = 4.396 + 0.314 */
    p = a2a(5, 64);
    EXPECT("alltoall.pairwise", &p, 2.322); /* 4 (0.5 + 0.016) + (0.25 + 0.008) = 2.064 + 0.258 */
    p = a2a(1, 64);
    EXPECT("alltoall.pairwise", &p, 0.258); /* the local copy only */
    p = a2a(3, 0);
    EXPECT("alltoall.pairwise", &p, 1.0); /* 2 shm_msg(0) = 2 * 0.5, nothing to copy */
    p = a2a_nodes(2, 4, 4, 8, 4096, true, false);
    /* 3 (0.5 + 1.024) + 4 * net_concurrent(4, 4096) + (0.25 + 0.512) = 4.572 + 4 * 4 * 6.096 + 0.762 */
    EXPECT("alltoall.pairwise", &p, 102.87);
    p = a2a_nodes(2, 3, 4, 7, 64, true, false);
    /* uneven: 3 node peers, 7 - 3 = 4 off-node: 3 * 0.516 + 4 * 4 * 2.064 + 0.258 = 1.548 + 33.024 + 0.258 */
    EXPECT("alltoall.pairwise", &p, 34.83);
}

/* In place (cost.h pc_cost_direct_in_place), pairwise and MPI's own alltoall swap through a scratch block: a node
 * step is its message's start-up plus a handoff of freshly written lines (the 2-copy table, ordinary stores, tau =
 * ppn), a network step the pack plus the message, and no block to itself. */
static void test_alltoall_in_place_exchange(void **state)
{
    (void)state;
    struct pc_problem p = a2a(2, 32768);
    EXPECT("alltoall.pairwise", &p, 13.038); /* out of place: 0.5 + 8.192, + the own block 0.25 + 4.096 */
    p.in_place = true;
    /* 0.5 + 2 (0.25 + 2 x 32768 / 8000) */
    EXPECT("alltoall.pairwise", &p, 17.384);
    EXPECT("alltoall.native", &p, 17.384);
    p = a2a_nodes(2, 4, 4, 8, 4096, true, false);
    p.in_place = true;
    /* 3 node peers (0.5 + 2 (0.25 + 4 x 0.512)) = 15.288; 4 off-node (net_concurrent(4, 4096) 24.384 + pack 0.762) */
    EXPECT("alltoall.pairwise", &p, 115.872);
    EXPECT("alltoall.native", &p, 115.872);
}

/* alltoall/native.c: MPICH's choice, Bruck below 256 B blocks (as alltoall.bruck), else spread-out (as
 * alltoall.pairwise); + turn_us per round of its schedule on an oversubscribed node (shape(): P > 2), set to 0.2
 * here (the Bruck steps charge theirs, the spread-out exchange P - 1). */
static void test_alltoall_native(void **state)
{
    (void)state;
    hand_turn = 0.2;
    struct pc_problem p = a2a(8, 512);
    EXPECT("alltoall.native", &p, 6.11); /* spread-out 4.71 (pairwise above) + 7 rounds * 0.2 */
    p = a2a(8, 64);
    /* Bruck: 3 steps of 4 slots, shm_msg(256) = 0.564 each: 1.692; packs 3 * 2 * 0.0256 = 0.1536; rotations
     * 2 * transpose(512) = 0.1024; 3 rounds * 0.2 = 0.6 */
    EXPECT("alltoall.native", &p, 2.548);
    p = a2a(2, 64);
    EXPECT("alltoall.native", &p, 0.774); /* P = 2: spread-out, not oversubscribed: 0.516 + 0.258 */
    p = a2a_nodes(2, 4, 4, 8, 4096, true, false);
    EXPECT("alltoall.native", &p, 102.87); /* as pairwise: ranks have cores, no round waits */
    p.shape.oversubscribed = true;
    EXPECT("alltoall.native", &p, 104.27); /* + 7 * 0.2 */
    p = a2a_nodes(2, 4, 4, 8, 16, true, false);
    /* Bruck over 2 nodes of 4: steps at distance 1, 2, 4 carry 64 B; 1, 2 and 4 ranks of a node cross:
     * net_concurrent(1|2|4, 64) = 2.064 + 4.128 + 8.256; packs 3 * 2 * 0.0064; rotations 2 * 0.0128 */
    EXPECT("alltoall.native", &p, 14.512);
    hand_turn = 0;
}

/* Radix-2 Bruck steps: P = 8 has 3 steps of 4 slots each (distances 1, 2, 4); P = 5 has steps of 2 (slots 1, 3),
 * 2 (2, 3) and 1 (4) slots. Radix 4 at P = 8: digit 0 values 1, 2, 3 move 2 slots each, digit 1 value 1 moves
 * slots 4-7: 4 steps, 10 slots. A step of k slots of m bytes costs msg(k m) + 2 transpose(k m). */

/* alltoall/bruck.c: the steps + 2 transpose(P m) */
static void test_alltoall_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2a(8, 16);
    EXPECT("alltoall.bruck", &p, 1.612); /* 3 * 0.516 + 3 * 2 * 0.0064 + 2 * 0.0128 = 1.548 + 0.0384 + 0.0256 */
    /* radix 4: 3 shm_msg(32) + shm_msg(64) = 1.524 + 0.516, packs 2 * transpose(160) = 0.032, rotations 0.0256 */
    EXPECT_RADIX("alltoall.bruck", &p, 4, 2.0976);
    p = a2a(5, 10);
    /* shm_msg(20) + shm_msg(20) + shm_msg(10) = 1.5125, packs 2 * transpose(50) = 0.01, rotations 0.01 */
    EXPECT("alltoall.bruck", &p, 1.5325);
    p = a2a_nodes(2, 4, 4, 8, 16, true, false);
    EXPECT("alltoall.bruck", &p, 14.512); /* as alltoall.native's Bruck above, no round waits */
    p.shape.ranks_by_node = false;
    /* ranks not grouped by node: every step may cross, all 4 ranks at once: 3 * 8.256 + 0.0384 + 0.0256 */
    EXPECT("alltoall.bruck", &p, 24.832);
}

/* alltoall/pap.c: L = (n > 0) (n shm_copy(2, ppn, m) - (n - 1) shm_copy(2, ppn, 8)) + shm_copy(1, 1, m)
 * + I transpose((P-1) m); transport 0: net_posted(ppn, R, m) + L; transport 1: 2 net(8) + R (net_concurrent(ppn,
 * m) + 2 net(8) + shm_copy(1, 1, m)) + L */
static void test_alltoall_pap(void **state)
{
    (void)state;
    struct pc_problem p = a2a(4, 512);
    /* staged 2 (0.25 + 4 * 0.064) = 1.012, signal 2 (0.25 + 4 * 8/8000) = 0.508:
     * 3 * 1.012 - 2 * 0.508 + (0.25 + 0.064) = 3.036 - 1.016 + 0.314 */
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 2.334);
    p.in_place = true;
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 2.4876); /* + transpose(3 * 512) = 0.1536 */
    p = a2a_nodes(2, 8, 8, 16, 4096, true, false);
    /* n = 7: staged 2 (0.25 + 8 * 0.512) = 8.692, signal 2 (0.25 + 8 * 8/8000) = 0.516:
     * L = 7 * 8.692 - 6 * 0.516 + 0.762 = 60.844 - 3.096 + 0.762 = 58.51;
     * R = 8 messages posted at once: net_concurrent(8, 32768) + 7 g = 8 * 34.768 + 3.5 = 281.644 */
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 340.154);
    /* put, pair after pair: 2 * 2.008 + 8 (8 * 6.096 + 2 * 2.008 + 0.762) + 58.51 = 4.016 + 428.368 + 58.51 */
    EXPECT_WITH("alltoall.pap", &p, 0, 1, 490.894);
    p = a2a(1, 512);
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 0.314); /* alone: the block to itself */
}

/* node_aware.c (alltoall.leader, .mpml, .onmpml): piece = shm_copy(1, ppn, ppn m);
 * T_inter = net_posted(min(l, N-1), ceil((N-1)/l), ppn^2 m), with Put ceil((N-1)/l) (net_concurrent(min(l, N-1),
 * ppn^2 m) + 2 net(8));
 * MPML = 2 N piece + T_inter + 2 sync; ONMPML = piece + max((2N-2) piece, T_inter) + piece + 2 sync, or with
 * more ranks than cores piece + (2N-2) piece + T_inter + piece + 2 sync + (N-1) sync. */
static void test_alltoall_node_aware(void **state)
{
    (void)state;
    struct pc_problem p = a2a(4, 16);
    /* one node: piece = 0.25 + 4 * 64/8000 = 0.282; 2 * 0.282 + 0.4 */
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 0.964);
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 0.964); /* nothing to overlap */
    p = a2a_nodes(2, 8, 8, 16, 8, true, false);
    /* 2 nodes of 8, m = 8: piece = 0.25 + 8 * 64/8000 = 0.314; one pair message of 512 B, a contiguous run:
     * 4 * 0.314 + 2.512 + 0.4 = 1.256 + 2.512 + 0.4 */
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 4.168);
    EXPECT_WITH("alltoall.leader", &p, 0, 1, 8.184); /* Put: + 2 net(8) = 4.016 */
    EXPECT_WITH("alltoall.mpml", &p, 2, 0, 4.168);   /* one peer node: one leader busy */
    p = a2a_nodes(3, 4, 4, 12, 16, true, false);
    /* 3 nodes of 4, m = 16: piece = 0.25 + 4 * 64/8000 = 0.282, 6 pieces = 1.692; one leader posts its 2 pair
     * messages of 256 B at once: net_posted(1, 2, 256) = net(512) + g = 2.512 + 0.5 */
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 5.104); /* 1.692 + 3.012 + 0.4 */
    p = a2a_nodes(3, 8, 8, 24, 8, true, false);
    /* two leaders: 1 round, both sending at once: net_concurrent(2, 512) = 5.024 */
    EXPECT_WITH("alltoall.mpml", &p, 2, 0, 7.308); /* 6 * 0.314 + 5.024 + 0.4 = 1.884 + 5.024 + 0.4 */
    /* overlapped: 0.314 + max(4 * 0.314, 5.024) + 0.314 + 0.4 */
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 6.052);
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2, .segments = 1}), 6.052); /* depth: same */
    /* oversubscribed: no core to overlap with, phases add up, plus a flag per round:
     * 0.314 + 4 * 0.314 + 5.024 + 0.314 + 0.4 + 2 * 0.2 */
    p.shape.oversubscribed = true;
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 7.708);
    /* 4 nodes of 8, m = 8, 2 leaders: 3 peer nodes, a round of both leaders then one pair of 512 B alone. Over
     * point-to-point the node's link carries the 3 pairs at a mean concurrency of 3/2 over the busiest leader's 2
     * messages (test_node_aware_link_bytes checks that form against its closed form); with Put the rounds follow
     * one another, the last with its one real sender. */
    p = a2a_nodes(4, 8, 8, 32, 8, true, false);
    /* Put: a round of net_concurrent(2, 512) + 2 net(8), then one of net_concurrent(1, 512) + 2 net(8):
     * 5.024 + 2.512 + 4 * 2.008 = 15.568; 2.512 + 15.568 + 0.4 */
    EXPECT_WITH("alltoall.mpml", &p, 2, 1, 18.48);
}

/* spreadout.c: nz_i shm_msg((S-O)/nz_i) + nz_e net_concurrent(ppn, O/nz_e), nz_e = nz (P - min_ppn)/(P - 1) */
static void test_alltoallv_spreadout(void **state)
{
    (void)state;
    struct pc_problem p = a2av(5, 4, 10000);
    EXPECT("alltoallv.spreadout", &p, 4.5); /* one node: 4 * 0.5 + 10000/4000 */
    p = a2av(64, 63, 1000000);
    EXPECT("alltoallv.spreadout", &p, 281.5); /* 31.5 + 250 */
    p = a2av(64, 3, 1000000);
    EXPECT("alltoallv.spreadout", &p, 251.5); /* sparse: 1.5 + 250 */
    p = a2av(4, 0, 0);
    EXPECT("alltoallv.spreadout", &p, 0.0);
    p = a2av(1, 0, 512);
    EXPECT("alltoallv.spreadout", &p, 0.314); /* alone: shm_copy(1, 1, 512) */
    p = a2av_nodes(2, 4, 4, 8, 19384, 19384, 16384);
    /* nz = 7: 7 * 4/7 = 4 off-node messages of 4096 B, 3 node messages carrying 3000 B:
     * 3 * 0.5 + 0.75 + 4 * 4 * 6.096 = 2.25 + 97.536 */
    EXPECT("alltoallv.spreadout", &p, 99.786);
    p.max_nonzero_sends = 3;
    p.max_send_bytes = p.max_recv_bytes = 3000;
    p.max_offnode_bytes = 0;
    EXPECT("alltoallv.spreadout", &p, 2.25); /* nothing off-node: 3 node messages */
    /* their receivers copy them, 2 at a time on a host of 2 cores: 3 * 0.5 + max(3000 / 2, 1000) / 4000 */
    p.max_recv_bytes = 1000;
    p.shape.host_cores = 2;
    p.shape.host_ranks = 8;
    EXPECT("alltoallv.spreadout", &p, 1.875);
    /* ... and no faster than the busiest receiver: 3 * 0.5 + 2400 / 4000 */
    p.max_recv_bytes = 2400;
    EXPECT("alltoallv.spreadout", &p, 2.1);
    p.shape.host_cores = p.shape.host_ranks = 0;
    p.max_nonzero_sends = 1;
    p.max_send_bytes = p.max_recv_bytes = p.max_offnode_bytes = 512;
    EXPECT("alltoallv.spreadout", &p, 10.048); /* one off-node message: net_concurrent(4, 512) = 4 * 2.512 */
}

/* alltoallv/native.c: spreadout's formula with P - 1 messages (zero-byte blocks too) + (P - 1) turn_us when
 * oversubscribed (0.2 here) */
static void test_alltoallv_native(void **state)
{
    (void)state;
    hand_turn = 0.2;
    struct pc_problem p = a2av(5, 4, 10000);
    EXPECT("alltoallv.native", &p, 5.3); /* 4.5 + 4 * 0.2 */
    p = a2av(64, 3, 1000000);
    EXPECT("alltoallv.native", &p, 294.1); /* 63 * 0.5 + 250 + 63 * 0.2 */
    p = a2av(1, 0, 512);
    EXPECT("alltoallv.native", &p, 0.314);
    p = a2av_nodes(2, 4, 4, 8, 19384, 19384, 16384);
    p.shape.oversubscribed = false;
    EXPECT("alltoallv.native", &p, 99.786); /* as spreadout with nz = 7 */
    hand_turn = 0;
}

/* padded_bruck.c: the steps with M-byte slots + transpose(S + R), 0 when M = 0 */
static void test_alltoallv_padded_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2av(8, 7, 500);
    p.recv_total_bytes = p.max_recv_bytes = 600;
    p.max_block_bytes = 16;
    EXPECT("alltoallv.padded_bruck", &p, 1.6964);         /* 1.548 + 0.0384 + transpose(1100) = 0.11 */
    EXPECT_RADIX("alltoallv.padded_bruck", &p, 4, 2.182); /* 1.524 + 0.516 + 0.032 + 0.11 */
    p = a2av(5, 4, 30);
    p.max_block_bytes = 10;
    EXPECT("alltoallv.padded_bruck", &p, 1.5285); /* 1.5125 + 0.01 + transpose(60) = 0.006 */
    p = a2av(1, 0, 64);
    p.max_block_bytes = 64;
    EXPECT("alltoallv.padded_bruck", &p, 0.0128); /* no steps: transpose(128) */
    p = a2av(6, 0, 0);
    EXPECT("alltoallv.padded_bruck", &p, 0.0); /* every block empty: nothing runs */
}

/* twophase_bruck.c: b = S / P; the steps with b-byte slots + shm_copy(1, 1, b) (not in place), 0 when S = 0 */
static void test_alltoallv_twophase_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2av(8, 7, 512);
    p.max_block_bytes = 400; /* not used: the steps carry average blocks */
    /* b = 64: 3 shm_msg(256) = 1.692, packs 3 * 2 * transpose(256) = 0.1536, shm_copy(1, 1, 64) = 0.258 */
    EXPECT("alltoallv.twophase_bruck", &p, 2.1036);
    /* radix 4: 3 shm_msg(128) + shm_msg(256) = 1.596 + 0.564, packs 2 * transpose(640) = 0.128, + 0.258 */
    EXPECT_RADIX("alltoallv.twophase_bruck", &p, 4, 2.546);
    p.in_place = true;
    EXPECT("alltoallv.twophase_bruck", &p, 1.8456); /* in place: no block to itself */
    p = a2av(5, 4, 40);
    /* b = 8: shm_msg(16) * 2 + shm_msg(8) = 1.51, packs 2 * transpose(40) = 0.008, shm_copy(1, 1, 8) = 0.251 */
    EXPECT("alltoallv.twophase_bruck", &p, 1.769);
    p = a2av(1, 0, 64);
    EXPECT("alltoallv.twophase_bruck", &p, 0.258); /* the block to itself */
    p = a2av(8, 0, 0);
    EXPECT("alltoallv.twophase_bruck", &p, 0.0); /* nothing to send: no step sends a message */
}

/* alltoallv/aggregated.c: 2 sync + shm_copy(1, ppn, S) + shm_copy(1, ppn, R)
 *   + [N > 1, O > 0] J (net_concurrent(min(l, N-1), B) + put net(8)), J = ceil(2 (N-1) / l), B = ppn O / (N-1),
 * S, R, O the busiest rank's bytes sent, received and sent off-node, l the smallest node's leaders (0: all). */
static void test_alltoallv_aggregated(void **state)
{
    (void)state;
    const char *a = "alltoallv.aggregated";
    struct pc_problem p = a2av_nodes(1, 8, 8, 8, 4096, 4096, 0);
    EXPECT(a, &p, 9.092); /* one node: 0.4 + 2 (0.25 + 8 * 4096/8000) = 0.4 + 2 * 4.346 */
    p = a2av_nodes(2, 4, 4, 8, 4096, 4096, 1024);
    /* 0.4 + 2 (0.25 + 2.048) = 4.996; B = 4 * 1024 = 4096, J = ceil(2/4) = 1: net(4096) = 6.096 */
    EXPECT(a, &p, 11.092);
    EXPECT_WITH(a, &p, 1, 0, 17.188); /* one leader: J = 2: 4.996 + 2 * 6.096 */
    EXPECT_WITH(a, &p, 1, 1, 21.204); /* Put: 4.996 + 2 (6.096 + 2.008) */
    EXPECT_WITH(a, &p, 9, 0, 11.092); /* more leaders than ranks: all of them */
    p = a2av_nodes(8, 8, 8, 64, 32768, 32768, 3584);
    /* 0.4 + 2 (0.25 + 32.768) = 66.436; B = 8 * 3584/7 = 4096; l = 8: J = 2, 7 leaders at once:
     * 2 * 7 * 6.096 = 85.344 */
    EXPECT(a, &p, 151.78);
    EXPECT_WITH(a, &p, 2, 0, 151.78); /* l = 2: J = 7 of net_concurrent(2, 4096) = 12.192: the same 85.344 */
    p = a2av_nodes(2, 3, 4, 7, 512, 512, 128);
    /* uneven: l = 3: 0.4 + 2 (0.25 + 4 * 512/8000) = 1.412; B = 4 * 128 = 512: J = 1, net(512) = 2.512 */
    EXPECT(a, &p, 3.924);
    p = a2av_nodes(3, 4, 4, 12, 4096, 4096, 0);
    EXPECT(a, &p, 4.996); /* nothing leaves a node */
    p = a2av_nodes(2, 4, 4, 8, 0, 0, 0);
    EXPECT(a, &p, 0.0);
}

/* Its candidates: one on a single node; leaders balanced and 1 (2 when it differs from balanced), point-to-point,
 * and Put too unless a host is oversubscribed. */
static void test_alltoallv_aggregated_variants(void **state)
{
    (void)state;
    const struct pc_algorithm *a = pc_registry_get(pc_registry_find("alltoallv.aggregated"));
    struct pc_params v[PC_MAX_VARIANTS];
    struct pc_problem p = a2av_nodes(1, 8, 8, 8, 8000, 8000, 0);
    assert_int_equal(a->variants(&p, v, PC_MAX_VARIANTS), 1);
    p = a2av_nodes(2, 4, 4, 8, 8000, 8000, 4000);
    p.shape.oversubscribed = false;
    assert_int_equal(a->variants(&p, v, PC_MAX_VARIANTS), 4); /* 2 leaders = balanced with 2 messages a node */
    assert_int_equal(v[0].leaders, 0);
    assert_int_equal(v[1].leaders, 1);
    assert_int_equal(v[2].transport, 1);
    p.shape.oversubscribed = true;
    assert_int_equal(a->variants(&p, v, PC_MAX_VARIANTS), 2);
    assert_int_equal(v[1].transport, 0);
    p = a2av_nodes(3, 4, 4, 12, 1200, 1200, 800);
    p.shape.oversubscribed = false;
    assert_int_equal(a->variants(&p, v, PC_MAX_VARIANTS), 6);
    assert_int_equal(v[2].leaders, 2);
}

/* recursive_doubling.c: sum over masks (msg_mask(n) + reduce(n)) + [not pof2] (2 msg_fold(n) + reduce(n)),
 * msg: shm_msg inside a node, net_concurrent(k, .) when k ranks of a node have their partner elsewhere */
static void test_allreduce_recursive_doubling_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(8, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 10.5); /* n = 4000: 3 (0.5 + 1 + 2) */
    p = ar(2, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 0.506); /* 1 (0.5 + 0.002 + 0.004) */
    p = ar(64, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 3.036); /* 6 * 0.506 */
    p = ar(1, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 0.0);
    p = ar_nodes(2, 2, 512, 8);
    /* n = 4096 over 2 nodes of 2: mask 1 inside the nodes: 0.5 + 1.024 + 2.048; mask 2 crosses with both ranks
     * of a node: net_concurrent(2, 4096) = 12.192, + 2.048 */
    EXPECT("allreduce.recursive_doubling", &p, 17.812);
    p.op_id = 2;
    p.type_id = 3;
    EXPECT("allreduce.recursive_doubling", &p, 15.764); /* reduce at 1/4000: 1.524 + 1.024 + 12.192 + 1.024 */
    p = ar_nodes(2, 2, 512, 8);
    p.shape.ranks_by_node = false;
    EXPECT("allreduce.recursive_doubling", &p, 28.48); /* any step may cross: 2 (12.192 + 2.048) */
}

static void test_allreduce_recursive_doubling_non_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(6, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 12.0); /* 2 (0.5 + 1 + 2) + 2 (0.5 + 1) + 2 = 7 + 3 + 2 */
    p = ar(3, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 1.514); /* 0.506 + 2 (0.502) + 0.004 */
    p = ar(33, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 22.5); /* 5 (3.5) + 2 (1.5) + 2 = 17.5 + 3 + 2 */
}

/* rabenseifner.c: sum over halving masks pof2/2 .. 1 of (2 msg_mask(n mask/pof2) + reduce(n mask/pof2)) + the fold
 * 2 msg(n) + reduce(n) when P is not a power of two */
static void test_allreduce_rabenseifner_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(8, 1000, 4);
    /* 2000, 1000, 500 B: 2 * 3 * 0.5 + 2 * 3500/4000 + 3500/2000 = 3 + 1.75 + 1.75 */
    EXPECT("allreduce.rabenseifner", &p, 6.5);
    p = ar(2, 1000, 4);
    EXPECT("allreduce.rabenseifner", &p, 3.0); /* 2 (0.5 + 0.5) + 1 */
    p = ar(64, 16384, 8);
    /* n = 131072, the halves sum to 129024: 12 * 0.5 + 2 * 129024/4000 + 129024/2000 = 6 + 64.512 + 64.512 */
    EXPECT("allreduce.rabenseifner", &p, 135.024);
    p = ar(1, 1000, 4);
    EXPECT("allreduce.rabenseifner", &p, 0.0);
    p = ar_nodes(2, 2, 1024, 8);
    /* n = 8192 over 2 nodes of 2: mask 2 (crossing, both ranks): 4096 B, 2 * 12.192 + 2.048 = 26.432;
     * mask 1 (inside): 2048 B, 2 (0.5 + 0.512) + 1.024 = 3.048 */
    EXPECT("allreduce.rabenseifner", &p, 29.48);
}

static void test_allreduce_rabenseifner_non_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(6, 1000, 4);
    /* pof2 = 4: 2000, 1000 B: 2 * 2 * 0.5 + 2 * 3000/4000 + 3000/2000 = 5; fold 2 (0.5 + 1) + 2 = 5 */
    EXPECT("allreduce.rabenseifner", &p, 10.0);
}

/* allreduce/native.c: recursive doubling up to 2 KiB (and for non-commutative ops), reduce-scatter + allgather
 * above, as the two algorithms above, whose steps (lg + fold, or 2 lg + fold) charge turn_us each when
 * oversubscribed (P > 2): 0.2 here. */
static void test_allreduce_native(void **state)
{
    (void)state;
    hand_turn = 0.2;
    struct pc_problem p = ar(8, 512, 4);
    EXPECT("allreduce.native", &p, 6.708); /* n = 2048: 3 (0.5 + 0.512 + 1.024) + 3 * 0.2 */
    p = ar(8, 513, 4);
    /* n = 2052: 1026, 513, 256.5 B: 3 + 2 * 1795.5/4000 + 1795.5/2000 = 4.7955; + 6 * 0.2 */
    EXPECT("allreduce.native", &p, 5.9955);
    p = ar(5, 1000, 4);
    EXPECT("allreduce.native", &p, 11.2); /* pof2 4: 5 + fold 5, + (4 + 2) * 0.2 */
    p.commutative = false;
    EXPECT("allreduce.native", &p, 12.8); /* recursive doubling: 2 * 3.5 + 5, + (2 + 2) * 0.2 */
    p = ar(2, 1000, 4);
    EXPECT("allreduce.native", &p, 3.0); /* two ranks, not oversubscribed: Rabenseifner's 3.0 */
    p = ar(1, 1000, 4);
    EXPECT("allreduce.native", &p, 0.0);
    hand_turn = 0;
}

/* The hierarchical allreduces (dpml_common.c; [DPML17] eq. 2-7 with eq. 3 as one leader's share):
 *   part = shm_copy(1, ppn, n/l), T_copy = (l, or l-1 when every rank leads) part, T_bcast = l part,
 *   T_sync = 2 sync, T_comp = (ppn-1) reduce(n/l), T_comm = k T_inter(h, n/(l k)) over net_concurrent(l, .);
 *   k = 1: the sum;  k > 1: T_copy + T_bcast + T_sync + T_comp/k + max(T_comp (k-1)/k, T_comm). */
static void test_allreduce_hierarchical_one_node(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(1, 4, 512, 8); /* n = 4096 B */
    /* leader: part = 0.25 + 4 * 4096/8000 = 2.298; 2.298 + 2.298 + 0.4 + 3 * 2.048 */
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 11.14);
    p.op_id = 2;
    p.type_id = 3;
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 8.068); /* reduce at 1/4000: comp 3.072 */
    p = ar_nodes(1, 4, 1024, 8); /* n = 8192 */
    /* 2 leaders: part 2.298 (4096 B); copy 4.596, bcast 4.596, sync 0.4, comp 6.144 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 15.736);
    p = ar_nodes(1, 4, 2048, 8); /* n = 16384 */
    /* 4 leaders = ppn: copy 3 * 2.298 = 6.894, bcast 9.192, sync 0.4, comp 6.144 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 4}), 22.63);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 99}), 22.63); /* clamped to the node */
    /* one node, nothing flies: 6.894 + 9.192 + 0.4 + 1.536 + max(4.608, 0) = the unpipelined 22.63 */
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 4, .segments = 4}), 22.63);
    p = ar_nodes(1, 1, 1000, 8);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 0.0); /* one rank */
}

/* stores=normal|stream (dpml_common.c): the writes into node-shared lines other ranks read last, priced by the
 * model's store_normal and store_stream (per byte of a write-and-copy-out round, calibrate.c). The cheaper mode adds
 * nothing, the other the difference per byte written: each rank's hand-over (l - 1 partitions when l = ppn) and the
 * leader's result, (handed + 1) x n/l bytes on the path. Hand-worked on the 1n4p case above (n = 16384 B, l = 4:
 * 22.63 us without the term): (3 + 1) x 4096 B x 2e-4 us/B = 3.2768 us. */
/* A stores=auto candidate (exec/store_chooser.h: the mode chosen while the plan runs) is predicted as the cheaper
 * of the two fixed modes plus the probes' share of the difference (one execution in PC_STORES_PROBE_MAX in the other mode):
 * checked against the algorithm's own estimates of both modes, by hand. Returns 1 for an auto candidate. */
static int check_auto_prediction(const struct pc_candidate *c, const struct pc_problem *p,
                                 const struct pc_machine_model *m)
{
    if (c->params.stores != PC_STORES_AUTO) return 0;
    const struct pc_algorithm *a = pc_registry_get(c->alg);
    struct pc_params normal = c->params, stream = c->params;
    normal.stores = PC_STORES_NORMAL;
    stream.stores = PC_STORES_STREAM;
    const double e_n = a->estimate(p, &normal, m), e_s = a->estimate(p, &stream, m);
    const double lo = e_n < e_s ? e_n : e_s, hi = e_n < e_s ? e_s : e_n, want = lo + (hi - lo) / PC_STORES_PROBE_MAX;
    if (fabs(c->predicted_us - want) > 1e-9 * (1 + want))
        fail_msg("%s auto: predicted %.6f us, by hand %.6f (normal %.6f, stream %.6f)", a->name, c->predicted_us, want,
                 e_n, e_s);
    return 1;
}

static double estimate_stores(const char *name, const struct pc_problem *p, struct pc_params params, double normal,
                              double stream)
{
    struct pc_machine_model m;
    hand_model(&m);
    m.store_normal_us_per_b = normal;
    m.store_stream_us_per_b = stream;
    return pc_registry_get(pc_registry_find(name))->estimate(p, &params, &m);
}

/* estimate_stores with the streaming 2-copy table too (model.h: shm_stream_time), k times the hand model's shape
 * of the 2-copy table (k = 0: not measured) */
static double estimate_handoff(const char *name, const struct pc_problem *p, struct pc_params params, double normal,
                               double stream, double k)
{
    struct pc_machine_model m;
    hand_model(&m);
    m.store_normal_us_per_b = normal;
    m.store_stream_us_per_b = stream;
    for (int t = 1; t <= PC_MODEL_MAX_TAU; t++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++) m.shm_stream_time[t - 1][s] = k * (0.25 + t * pc_model_sizes[s] / 8000.0);
    return pc_registry_get(pc_registry_find(name))->estimate(p, &params, &m);
}

/* Where calibration timed the 2-copy handoff in both store modes, the staging alltoalls price the transfers a node's
 * ranks make through their node-shared slots by each mode's own table, and no store difference on those bytes:
 * pap's n blocks into its peers' slots, the node-aware family's own-node piece (the other nodes' pieces as before).
 * Hand-worked at tau = ppn = 2 and 32 KiB (a table size): 1-copy 0.25 + 4.096 = 4.346 (tau 1) and 8.442 (tau 2);
 * ordinary 2-copy 2 (0.25 + 8.192) = 16.884; streaming, k = 3: 25.326. Store terms 3e-4 and 1e-4 us/B (ordinary
 * dear by 2e-4 us/B: 6.5536 us on 32 KiB). */
static void test_staging_handoff(void **state)
{
    (void)state;
    struct pc_params normal = {0}, stream = {0};
    stream.stores = 1;
    /* pap, one node of 2, 32 KiB blocks: its own block (4.346) and one handoff */
    struct pc_problem p = a2a(2, 32768);
    NEAR(estimate_handoff("alltoall.pap", &p, normal, 3e-4, 1e-4, 3), 4.346 + 16.884);
    NEAR(estimate_handoff("alltoall.pap", &p, stream, 3e-4, 1e-4, 3), 4.346 + 25.326);
    /* the table cheaper than the ordinary mode (cores far apart) */
    NEAR(estimate_handoff("alltoall.pap", &p, stream, 3e-4, 1e-4, 0.5), 4.346 + 0.5 * 8.442);
    /* not measured: the 2-copy table and the store difference, as before */
    NEAR(estimate_handoff("alltoall.pap", &p, normal, 3e-4, 1e-4, 0), 4.346 + 16.884 + 6.5536);
    NEAR(estimate_handoff("alltoall.pap", &p, stream, 3e-4, 1e-4, 0), 4.346 + 16.884);
    /* alltoall.leader, one node of 2, 16 KiB blocks: a rank's row (32 KiB) handed through S, and two signals */
    p = a2a(2, 16384);
    NEAR(estimate_handoff("alltoall.leader", &p, normal, 3e-4, 1e-4, 3), 16.884 + 0.4);
    NEAR(estimate_handoff("alltoall.leader", &p, stream, 3e-4, 1e-4, 3), 25.326 + 0.4);
    NEAR(estimate_handoff("alltoall.leader", &p, normal, 3e-4, 1e-4, 0), 2 * 8.442 + 6.5536 + 0.4);
    NEAR(estimate_handoff("alltoall.leader", &p, stream, 3e-4, 1e-4, 0), 2 * 8.442 + 0.4);
    /* mpml, 2 nodes of 2, 16 KiB blocks, one leader: only the own node's piece changes, from two 1-copies and its
     * share of the store term (8.442 x 2 + 6.5536 ordinary, 8.442 x 2 streaming) to the handoff */
    p = a2a_nodes(2, 2, 2, 4, 16384, true, false);
    struct pc_params n1 = {.leaders = 1}, s1 = {.leaders = 1, .stores = 1};
    NEAR(estimate_handoff("alltoall.mpml", &p, n1, 3e-4, 1e-4, 3) - estimate_handoff("alltoall.mpml", &p, n1, 3e-4, 1e-4, 0),
         16.884 - (2 * 8.442 + 6.5536));
    NEAR(estimate_handoff("alltoall.mpml", &p, s1, 3e-4, 1e-4, 3) - estimate_handoff("alltoall.mpml", &p, s1, 3e-4, 1e-4, 0),
         25.326 - 2 * 8.442);
}

static void test_allreduce_stores(void **state)
{
    (void)state;
    struct pc_machine_model m;
    hand_model(&m);
    assert_true(pc_cost_shared_store(&m, false, 1000) == 0 && pc_cost_shared_store(&m, true, 1000) == 0); /* unmeasured */
    m.store_normal_us_per_b = 3e-4;
    m.store_stream_us_per_b = 1e-4;
    assert_true(fabs(pc_cost_shared_store(&m, false, 1000) - 0.2) < 1e-12);
    assert_true(pc_cost_shared_store(&m, true, 1000) == 0);
    struct pc_problem p = ar_nodes(1, 4, 2048, 8);
    const struct pc_params normal = {.leaders = 4, .stores = 0}, stream = {.leaders = 4, .stores = 1};
    const double base = 22.63, term = 4 * 4096 * 2e-4;
    /* ordinary stores dear (cores far apart): streaming is the cheaper, ordinary pays the difference */
    double n_far = estimate_stores("allreduce.dpml", &p, normal, 3e-4, 1e-4);
    double s_far = estimate_stores("allreduce.dpml", &p, stream, 3e-4, 1e-4);
    assert_true(fabs(n_far - (base + term)) < 1e-9 && fabs(s_far - base) < 1e-9);
    /* ordinary stores cheap (cores sharing a cache): the other way round */
    double n_close = estimate_stores("allreduce.dpml", &p, normal, 1e-4, 3e-4);
    double s_close = estimate_stores("allreduce.dpml", &p, stream, 1e-4, 3e-4);
    assert_true(fabs(n_close - base) < 1e-9 && fabs(s_close - (base + term)) < 1e-9);
    /* one leader (allreduce.leader, l = 1 < ppn): every rank hands its whole vector over, then the result:
     * 2 x 16384 B x 2e-4 = 6.5536 us on top */
    double l_n = estimate_stores("allreduce.leader", &p, (struct pc_params){.stores = 0}, 3e-4, 1e-4);
    double l_s = estimate_stores("allreduce.leader", &p, (struct pc_params){.stores = 1}, 3e-4, 1e-4);
    assert_true(fabs(l_n - l_s - 2 * 16384 * 2e-4) < 1e-9);
    /* The planner's candidates of the hierarchical allreduces: one per set of the other parameters, in stores=auto
     * (where the build has streaming stores), predicted as the cheaper mode whichever mode is dear. */
    for (int dear = 0; dear < 2; dear++) {
        m.store_normal_us_per_b = dear ? 3e-4 : 1e-4;
        m.store_stream_us_per_b = dear ? 1e-4 : 3e-4;
        struct pc_candidate c[PC_MAX_CANDIDATES];
        int n = 0, autos = 0, fixed = 0;
        assert_int_equal(pc_enumerate(pc_registry_table(), &p, NULL, 0, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        for (int i = 0; i < n; i++) {
            if (!(pc_registry_get(c[i].alg)->params & PC_PARAM_STORES)) continue;
            if (check_auto_prediction(&c[i], &p, &m)) autos++;
            else fixed++;
        }
        if (PC_STREAM_STORES ? autos < 4 || fixed != 0 : autos != 0)
            fail_msg("dear=%d: %d auto and %d fixed-mode candidates", dear, autos, fixed);
    }
}

/* stores=normal|stream of the staging alltoalls (node_aware.c, pap.c, aggregated.c): the copies into node-shared
 * staging that another core reads next, priced like the allreduces' by pc_cost_shared_store on the bytes each rank
 * stages: its whole row into S (node-aware: P m), its n = ppn - 1 blocks into its node peers' slots (pap: n m), its
 * sends into the node's areas (aggregated: S). Hand-worked on the cases of test_alltoall_node_aware, test_alltoall_pap
 * and test_alltoallv_aggregated, with the store terms 3e-4 and 1e-4 us/B (a difference of 2e-4 us/B):
 *   mpml, 2 nodes of 8, m = 8, l = 2: 4.168 + 16 x 8 B x 2e-4 = 4.168 + 0.0256
 *   onmpml, 3 nodes of 8, m = 8, l = 2: 6.052 + 24 x 8 B x 2e-4 = 6.052 + 0.0384
 *   pap, one node of 4, m = 512: 2.334 + 3 x 512 B x 2e-4 = 2.334 + 0.3072
 *   aggregated, one node of 8, S = 4096: 9.092 + 4096 B x 2e-4 = 9.092 + 0.8192 */
static void test_alltoall_stores(void **state)
{
    (void)state;
    struct {
        const char *name;
        struct pc_problem p;
        struct pc_params params;
        double base, term;
    } cases[] = {
        {"alltoall.mpml", a2a_nodes(2, 8, 8, 16, 8, true, false), {.leaders = 2}, 4.168, 0.0256},
        {"alltoall.onmpml", a2a_nodes(3, 8, 8, 24, 8, true, false), {.leaders = 2}, 6.052, 0.0384},
        {"alltoall.pap", a2a(4, 512), {0}, 2.334, 0.3072},
        {"alltoallv.aggregated", a2av_nodes(1, 8, 8, 8, 4096, 4096, 0), {0}, 9.092, 0.8192},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pc_params normal = cases[i].params, stream = cases[i].params;
        normal.stores = 0;
        stream.stores = 1;
        const double base = cases[i].base, term = cases[i].term;
        /* ordinary stores dear (cores far apart): streaming is the cheaper, ordinary pays the difference */
        double n_far = estimate_stores(cases[i].name, &cases[i].p, normal, 3e-4, 1e-4);
        double s_far = estimate_stores(cases[i].name, &cases[i].p, stream, 3e-4, 1e-4);
        /* ordinary stores cheap (cores sharing a cache): the other way round */
        double n_close = estimate_stores(cases[i].name, &cases[i].p, normal, 1e-4, 3e-4);
        double s_close = estimate_stores(cases[i].name, &cases[i].p, stream, 1e-4, 3e-4);
        /* not measured: no term in either mode */
        double n_none = estimate_stores(cases[i].name, &cases[i].p, normal, 0, 0);
        double s_none = estimate_stores(cases[i].name, &cases[i].p, stream, 0, 0);
        if (fabs(n_far - (base + term)) > 1e-9 || fabs(s_far - base) > 1e-9 || fabs(n_close - base) > 1e-9 ||
            fabs(s_close - (base + term)) > 1e-9 || fabs(n_none - base) > 1e-9 || fabs(s_none - base) > 1e-9)
            fail_msg("%s: far %.6f / %.6f, close %.6f / %.6f, unmeasured %.6f / %.6f us (normal / stream); by hand "
                     "base %.6f, term %.6f", cases[i].name, n_far, s_far, n_close, s_close, n_none, s_none, base, term);
    }
    /* The planner's candidates of each staging algorithm on contiguous data: one per set of the other parameters,
     * in stores=auto where the build has streaming stores, predicted as the cheaper mode whichever mode is dear. */
    static const char *const staging[] = {"alltoall.leader", "alltoall.mpml", "alltoall.onmpml", "alltoall.pap",
                                          "alltoallv.aggregated"};
    struct pc_problem probs[] = {a2a_nodes(2, 4, 4, 8, 4096, true, false), a2a(3, 65536),
                                 a2av_nodes(2, 4, 4, 8, 65536, 65536, 32768), a2av_nodes(1, 3, 3, 3, 8192, 8192, 0)};
    for (size_t q = 0; q < sizeof probs / sizeof probs[0]; q++) {
        probs[q].contiguous = true;
        for (int dear = 0; dear < 2; dear++) {
            struct pc_machine_model m;
            hand_model(&m);
            m.store_normal_us_per_b = dear ? 3e-4 : 1e-4;
            m.store_stream_us_per_b = dear ? 1e-4 : 3e-4;
            struct pc_candidate c[PC_MAX_CANDIDATES];
            int n = 0;
            assert_int_equal(pc_enumerate(pc_registry_table(), &probs[q], NULL, 0, &m, c, PC_MAX_CANDIDATES, &n),
                             PLANCOLL_SUCCESS);
            for (size_t a = 0; a < sizeof staging / sizeof staging[0]; a++) {
                const int alg = pc_registry_find(staging[a]);
                if (pc_registry_get(alg)->collective != probs[q].coll) continue;
                int autos = 0, all = 0;
                for (int i = 0; i < n; i++) {
                    if (c[i].alg != alg) continue;
                    all++;
                    autos += check_auto_prediction(&c[i], &probs[q], &m);
                }
                if (all == 0 || autos != (PC_STREAM_STORES ? all : 0))
                    fail_msg("problem %zu: %s has %d candidates, %d of them auto", q, staging[a], all, autos);
            }
        }
    }
    /* Not offered where it cannot matter: non-contiguous data (MPI_Pack writes the staging), single-rank nodes. */
    struct pc_problem none[] = {a2a_nodes(2, 4, 4, 8, 4096, true, false), a2a_nodes(4, 1, 1, 4, 4096, true, false),
                                a2av_nodes(1, 3, 3, 3, 8192, 8192, 0)};
    none[1].contiguous = true; /* contiguous, but every rank alone on its node */
    for (size_t q = 0; q < sizeof none / sizeof none[0]; q++)
        for (size_t a = 0; a < sizeof staging / sizeof staging[0]; a++) {
            const struct pc_algorithm *alg = pc_registry_get(pc_registry_find(staging[a]));
            if (alg->collective != none[q].coll) continue;
            struct pc_params v[PC_MAX_VARIANTS];
            int nv = alg->variants(&none[q], v, PC_MAX_VARIANTS);
            assert_true(nv > 0);
            for (int k = 0; k < nv; k++)
                if (v[k].stores != 0) fail_msg("case %zu: %s offers streaming stores (variant %d)", q, staging[a], k);
        }
}

static void test_allreduce_hierarchical_two_nodes(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(2, 4, 1024, 8); /* n = 8192 B, h = 2 */
    /* 2 leaders, rd: 15.736 as on one node + one step net_concurrent(2, 4096) = 12.192 + reduce 2.048 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 0}), 29.976);
    /* pipelined, k = 8, b = 512: one exchange T_inter(b, 2 leaders) = net_concurrent(2, 512) + reduce 0.256 = 5.28;
     * the 8 in flight together, posted at once: net_posted(2, 8, 512) = net_concurrent(2, 4096) + 7 g
     * = 2 (2 + 4.096) + 3.5 = 15.692, and 8 reductions 2.048: 17.74 (no protocol switch, so no handshakes);
     * the last exchange after the whole reduction 6.144 + 5.28 = 11.424, the flight 6.144/8 + 17.74 = 18.508;
     * 4.596 + 4.596 + 0.4 + max(11.424, 18.508) */
    p.shape.oversubscribed = false;
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 8}), 28.1);
    /* The pipeline alone, its two bounds: reduction-bound (the last exchange starts after a reduction of 100 us)
     * 100 + 5.28; exchange-bound (nothing to reduce) the 8 in flight together, 17.74 */
    struct pc_machine_model hm;
    hand_model(&hm);
    const double pipe_reduce = pc_dpml_pipeline_estimate(&p, PC_DPML_INTER_RD, 100.0, 8, 512, 2, &hm);
    const double pipe_network = pc_dpml_pipeline_estimate(&p, PC_DPML_INTER_RD, 0.0, 8, 512, 2, &hm);
    if (fabs(pipe_reduce - 105.28) > 1e-9 || fabs(pipe_network - 17.74) > 1e-9)
        fail_msg("dpml pipeline: %.9f and %.9f us, by hand 105.28 and 17.74", pipe_reduce, pipe_network);
    /* Without injection gaps (g = 0) the network's view drops to 12.192 + 2.048 = 14.24 and the leader's core
     * rules: one exchange 5.28 and 7 more exchanges' calls and reductions (1.756 each), 17.572 */
    hm.g_us = 0;
    const double pipe_core = pc_dpml_pipeline_estimate(&p, PC_DPML_INTER_RD, 0.0, 8, 512, 2, &hm);
    if (fabs(pipe_core - 17.572) > 1e-9) fail_msg("dpml pipeline, core-bound: %.9f us, by hand 17.572", pipe_core);
    hm.g_us = 0.5;
    /* With a protocol switch between the 512 B and 4 KiB samples (the rendezvous regime from 3 KiB) and a start-up
     * of 10 us above it, each message after the first of a round waits for its own handshake. Sub-partitions of
     * 4 KiB, nothing to reduce: net_posted(2, 8, 4096) = net_concurrent(2, 32768) + 7 g = 2 (2 + 32.768) + 10 + 3.5
     * = 83.036, 7 handshakes 70, 8 reductions of 4 KiB 16.384: 169.42 */
    for (int k = 0; k < PC_MODEL_MAX_PORTS; k++)
        for (int s2 = 0; s2 < PC_MODEL_NSIZES; s2++)
            if (pc_model_sizes[s2] >= 4096) hm.net_time[k][s2] += 10.0;
    hm.net_step_low_b = 2048;
    hm.net_step_high_b = 4096;
    const double handshake = pc_cost_net_handshake(&hm, 4096), eager = pc_cost_net_handshake(&hm, 2048);
    const double pipe_handshakes = pc_dpml_pipeline_estimate(&p, PC_DPML_INTER_RD, 0.0, 8, 4096, 2, &hm);
    if (fabs(handshake - 10.0) > 1e-9 || eager != 0.0 || fabs(pipe_handshakes - 169.42) > 1e-9)
        fail_msg("handshake %.9f us at 4 KiB (by hand 10), %.9f at 2 KiB (0); pipeline %.9f us (by hand 169.42)",
                 handshake, eager, pipe_handshakes);
    /* oversubscribed (ar_nodes' P = 8 > 2): no core to overlap with, the reduction and the exchanges add up:
     * 4.596 + 4.596 + 0.4 + 6.144 + 42.24 */
    p.shape.oversubscribed = true;
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 8}), 57.976);
    p = ar_nodes(2, 4, 512, 8); /* n = 4096 */
    /* one leader: 2.298 + 2.298 + 0.4 + 6.144 + net(4096) 6.096 + 2.048 */
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 19.284);
    p = ar_nodes(2, 4, 1, 8); /* n = 8 B: every lookup below 8 B reads the 8 B column */
    /* 2 leaders: part = 0.25 + 4 * 8/8000 = 0.254; copy 0.508, bcast 0.508, sync 0.4, comp 3 * 0.002 */
    /* rsag on 2: 2 net_concurrent(2, 2) + reduce(2) = 2 * 4.016 + 0.001 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 1}), 9.455);
    /* rd: 4.016 + 0.002 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 0}), 5.44);
    /* MPI's (recursive doubling below 2 KiB): its one round is the step, whose scheduler turn is 0 here
     * (test_oversubscribed_turns charges it) */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 2}), 5.44);
}

static void test_allreduce_hierarchical_three_nodes(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(3, 3, 1, 8); /* n = 8 B, l = 3: 8/3 B per leader, h = 3 folds to 2 */
    /* part = 0.25 + 3 * 8/8000 = 0.253 (the 8 B column); copy 2 * 0.253, bcast 3 * 0.253, sync 0.4,
     * comp 2 * (8/3)/2000; rd over 3 leaders: fold 2 * net_concurrent(3, .) = 12.048 + (8/3)/2000, mask 1 6.024 +
     * (8/3)/2000: 0.506 + 0.759 + 0.4 + 0.00266667 + 18.07466667 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 3}), 19.7423333333333);
}

/* The scheduler turns (cost.h: turn_us per dependency round, only on an oversubscribed host), at turn_us = 0.3 on
 * problems whose other terms the tests above work out: expected = that value + rounds * 0.3, the rounds counted by
 * hand from each algorithm's schedule. */
static void test_oversubscribed_turns(void **state)
{
    (void)state;
    hand_turn = 0.3;
    /* pairwise: P - 1 exchanges one after the other */
    struct pc_problem p = a2a(8, 512);
    EXPECT("alltoall.pairwise", &p, 6.81); /* 4.71 + 7 * 0.3 */
    p = a2a_nodes(2, 4, 4, 8, 4096, true, false);
    EXPECT("alltoall.pairwise", &p, 102.87); /* ranks have cores: no turn */
    p.shape.oversubscribed = true;
    EXPECT("alltoall.pairwise", &p, 104.97); /* 102.87 + 7 * 0.3 */
    /* Bruck: one turn per step (3 steps at P = 8 and P = 5 radix 2, 4 at P = 8 radix 4) */
    p = a2a(8, 16);
    EXPECT("alltoall.bruck", &p, 2.512);            /* 1.612 + 3 * 0.3 */
    EXPECT_RADIX("alltoall.bruck", &p, 4, 3.2976);  /* 2.0976 + 4 * 0.3 */
    p = a2a(5, 10);
    EXPECT("alltoall.bruck", &p, 2.4325); /* 1.5325 + 3 * 0.3 */
    /* native: its Bruck's 3 steps (the 2.548 above less its 3 * 0.2), its spread-out's 7 rounds */
    p = a2a(8, 64);
    EXPECT("alltoall.native", &p, 2.848); /* 1.948 + 3 * 0.3 */
    p = a2a(8, 512);
    EXPECT("alltoall.native", &p, 6.81); /* 4.71 + 7 * 0.3 */
    /* pap: everything posted at once, one wait */
    p = a2a(4, 512);
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 2.634); /* 2.334 + 0.3 */
    p = a2a(1, 512);
    EXPECT_WITH("alltoall.pap", &p, 0, 0, 0.314); /* alone: nothing to wait for */
    /* node-aware: the two flags, and with several nodes the one wait for the posted node-pair messages */
    p = a2a(4, 16);
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 1.564); /* one node: 0.964 + 2 * 0.3 */
    p = a2a_nodes(3, 4, 4, 12, 16, true, true);
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 6.004);                           /* 5.104 + 3 * 0.3 */
    p = a2a_nodes(3, 8, 8, 24, 8, true, true);
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 8.608); /* 7.708 + 3 * 0.3 */
    /* alltoallv: spread-out posts everything and waits once, a turn per peer it hears from (4 here); native's
     * P - 1 rounds; aggregated's two flags and the one wait for its messages; twophase Bruck's steps */
    p = a2av(5, 4, 10000);
    EXPECT("alltoallv.spreadout", &p, 5.7); /* 4.5 + 4 * 0.3 */
    EXPECT("alltoallv.native", &p, 5.7);    /* 4.5 + 4 * 0.3 */
    p = a2av(8, 7, 512);
    EXPECT("alltoallv.twophase_bruck", &p, 3.0036); /* 2.1036 + 3 * 0.3 */
    p = a2av_nodes(1, 8, 8, 8, 4096, 4096, 0);
    EXPECT("alltoallv.aggregated", &p, 9.692); /* one node: 9.092 + 2 * 0.3 */
    p = a2av_nodes(2, 4, 4, 8, 4096, 4096, 1024);
    EXPECT("alltoallv.aggregated", &p, 11.992); /* 11.092 + 3 * 0.3 */
    /* allreduce: a turn per step; the fold is two steps (in and out) */
    p = ar(8, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 11.4); /* 10.5 + 3 * 0.3 */
    EXPECT("allreduce.rabenseifner", &p, 8.3);        /* 6.5 + 6 * 0.3 (halving and allgather steps) */
    p = ar(6, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 13.2); /* 12.0 + (2 + 2) * 0.3 */
    p = ar(8, 512, 4);
    EXPECT("allreduce.native", &p, 7.008); /* 6.108 + 3 * 0.3 */
    /* hierarchical: the hand-over and result flags, and the leaders' steps */
    p = ar_nodes(2, 4, 512, 8);
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 20.184); /* 19.284 + 2 * 0.3 + 1 step * 0.3 */
    p.shape.oversubscribed = false;
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 19.284); /* ranks have cores: no turn */
    p = ar_nodes(2, 4, 1, 8);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 0}), 6.34);   /* 5.44 + 3 * 0.3 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 1}), 10.655); /* 9.455 + 4 * 0.3 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 2}), 6.34);   /* 5.44 + 3 * 0.3 */
    /* a calibrated MPI turn (0.5) for the rounds that wait for MPI messages; the flag rounds keep turn_us */
    hand_mpi_turn = 0.5;
    p = a2a(8, 512);
    EXPECT("alltoall.pairwise", &p, 8.21); /* 4.71 + 7 * 0.5 */
    EXPECT("alltoall.native", &p, 8.21);   /* its spread-out's 7 rounds */
    p = a2a(8, 16);
    EXPECT("alltoall.bruck", &p, 3.112); /* 1.612 + 3 * 0.5 */
    p = a2av(5, 4, 10000);
    EXPECT("alltoallv.spreadout", &p, 6.5); /* 4.5 + 4 * 0.5: a turn per peer sent to */
    p = a2av_nodes(1, 8, 8, 8, 4096, 4096, 0);
    EXPECT("alltoallv.aggregated", &p, 9.692); /* flags only: 9.092 + 2 * 0.3 */
    p = a2a(4, 16);
    EXPECT_WITH("alltoall.leader", &p, 0, 0, 1.564); /* flags only: 0.964 + 2 * 0.3 */
    /* pap over point-to-point at 2 nodes of 4: its 4 network messages each cost their sender's MPI turn, on top
     * of the one flag turn; with the ranks given a core each, none of it */
    p = a2a_nodes(2, 4, 4, 8, 512, true, true);
    struct pc_problem cores = p;
    cores.shape.oversubscribed = false;
    NEAR(estimate_params("alltoall.pap", &p, (struct pc_params){0}) -
             estimate_params("alltoall.pap", &cores, (struct pc_params){0}),
         0.3 + 4 * 0.5);
    hand_mpi_turn = 0;
    hand_turn = 0;
}

/* A Bruck step whose message crosses the network in the rendezvous regime waits for three turns, not one (cost.h,
 * pc_cost_message_turns). The hand model's network rows are straight lines, so a located switch adds no start-up to
 * the messages themselves (pc_model_interp_net finds no jump): setting one changes exactly the turns. 2 nodes of 4
 * ranks, radix 2: 3 steps, each with an off-node partner, each moving 4 of the 8 slots (pc_bruck_steps_cost, which
 * alltoall.bruck and the Bruck alltoallvs estimate with). */
static void test_rendezvous_shift_turns(void **state)
{
    (void)state;
    hand_turn = 0.3;
    hand_mpi_turn = 0.5;
    struct pc_machine_model m;
    hand_model(&m);
    struct pc_problem p = a2a_nodes(2, 4, 4, 8, 4096, true, false); /* 16 KiB per step */
    p.shape.oversubscribed = true;
    assert_false(pc_model_net_handshake(&m, 16384)); /* no switch located: every message eager */
    /* with the switch at 8100 B every step's message is above it: two more MPI turns per step */
    struct pc_machine_model sw = m;
    sw.net_step_low_b = 8000;
    sw.net_step_high_b = 8200;
    assert_true(pc_model_net_handshake(&sw, 8100) && !pc_model_net_handshake(&sw, 8099));
    NEAR(pc_bruck_steps_cost(&p, 2, 4096, &sw) - pc_bruck_steps_cost(&p, 2, 4096, &m), 3 * 2 * 0.5);
    /* below the switch (4 KiB per step): one turn per step, as without a switch */
    struct pc_problem small = a2a_nodes(2, 4, 4, 8, 1024, true, false);
    small.shape.oversubscribed = true;
    NEAR(pc_bruck_steps_cost(&small, 2, 1024, &sw), pc_bruck_steps_cost(&small, 2, 1024, &m));
    /* inside one node nothing crosses the network: one turn per step at any size */
    struct pc_problem one = a2a(8, 4096);
    one.shape.oversubscribed = true;
    NEAR(pc_bruck_steps_cost(&one, 2, 4096, &sw), pc_bruck_steps_cost(&one, 2, 4096, &m));
    /* pap over point-to-point: each of its 4 network peers' 16 KiB messages pays the three turns, not one */
    const struct pc_algorithm *pap = pc_registry_get(pc_registry_find("alltoall.pap"));
    struct pc_problem blocks = a2a_nodes(2, 4, 4, 8, 16384, true, true);
    const struct pc_params p2p = {0};
    NEAR(pap->estimate(&blocks, &p2p, &sw) - pap->estimate(&blocks, &p2p, &m), 4 * 2 * 0.5);
    /* spread-out likewise: 2 nodes of 4, every rank sending 16 KiB to each of the 7 others, 4 of them off-node
     * (nz_e = 7 x 4 / 7): two more turns for each network message above the switch, none for the node's; below
     * it (1 KiB messages) as without a switch */
    const struct pc_algorithm *so = pc_registry_get(pc_registry_find("alltoallv.spreadout"));
    struct pc_problem v = a2av_nodes(2, 4, 4, 8, 7 * 16384, 7 * 16384, 4 * 16384);
    v.shape.oversubscribed = true;
    NEAR(so->estimate(&v, &p2p, &sw) - so->estimate(&v, &p2p, &m), 4 * 2 * 0.5);
    struct pc_problem vs = a2av_nodes(2, 4, 4, 8, 7 * 1024, 7 * 1024, 4 * 1024);
    vs.shape.oversubscribed = true;
    NEAR(so->estimate(&vs, &p2p, &sw), so->estimate(&vs, &p2p, &m));
    /* ranks with a core each: no turns at all */
    p.shape.oversubscribed = false;
    NEAR(pc_bruck_steps_cost(&p, 2, 4096, &sw), pc_bruck_steps_cost(&p, 2, 4096, &m));
    hand_mpi_turn = 0;
    hand_turn = 0;
}

/* The leaders' network phase on an oversubscribed host whose other ranks wait runnable (cost.h,
 * pc_cost_waiting_slowdown): 2 nodes of 4 ranks on one host of 2 cores. One leader per node was calibrated as a
 * pair with a core each (share 1); in the collective each of the 8 ranks gets 2/8 of a core: 4x. Two leaders per
 * node: calibrated 4 ranks on 2 cores (share 1/2), so 2x; every rank active (4): calibrated 8 ranks on 2 cores,
 * as crowded as the collective: 1x. At 3 nodes of 2 on 2 cores every rank active is calibrated 4 on 2 (share 1/2
 * against 1/3: 1.5), so one leader (share 1 against 1/3: 3) is 3 / 1.5 = 2x the all-ranks case. */
static void test_waiting_slowdown(void **state)
{
    (void)state;
    struct pc_problem p = a2a_nodes(2, 4, 4, 8, 4096, true, true);
    NEAR(pc_cost_waiting_slowdown(&p, 1), 1.0); /* no census (host_cores 0): not applied */
    p.shape.host_ranks = 8;
    p.shape.host_cores = 2;
    NEAR(pc_cost_waiting_slowdown(&p, 1), 4.0);
    NEAR(pc_cost_waiting_slowdown(&p, 2), 2.0);
    NEAR(pc_cost_waiting_slowdown(&p, 4), 1.0);
    /* node-aware alltoall with one leader: its inter term (na_inter) times 4, the rest as without the census */
    struct pc_problem q = p;
    q.shape.host_cores = q.shape.host_ranks = 0;
    const double without = estimate("alltoall.leader", &q), with = estimate("alltoall.leader", &p);
    struct pc_machine_model m;
    hand_model(&m);
    const double inter = pc_cost_net_posted(&m, 1, 1, 4.0 * 4 * 4096); /* one node-pair message of ppn^2 m */
    NEAR(with - without, 3 * inter);
    /* 4 leaders at 2 nodes: the one node pair goes through one of them (k mod l), the other three wait with the
     * rest: the same single stream and the same 4x as one leader, not the 1x of every rank active */
    const struct pc_params four = {.leaders = 4};
    NEAR(estimate_params("alltoall.mpml", &p, four) - estimate_params("alltoall.mpml", &q, four), 3 * inter);
    const struct pc_params two = {.leaders = 2};
    NEAR(estimate_params("alltoall.mpml", &p, two) - estimate_params("alltoall.mpml", &q, two), 3 * inter);
    /* aggregated at 2 nodes: the node's send and its receive go to two leaders, so 2 of the 4 move data: 2x */
    struct pc_problem v = a2av_nodes(2, 4, 4, 8, 4096, 4096, 1024);
    v.shape.oversubscribed = true;
    struct pc_problem w = v;
    v.shape.host_ranks = 8;
    v.shape.host_cores = 2;
    const double agg_with = estimate_params("alltoallv.aggregated", &v, (struct pc_params){0}),
                 agg_without = estimate_params("alltoallv.aggregated", &w, (struct pc_params){0});
    assert_true(agg_with > agg_without);
    const double one_agg = pc_cost_net_concurrent(&m, 1, 4.0 * 1024); /* ppn O / (N - 1), 1 concurrent */
    NEAR(agg_with - agg_without, 1 * one_agg); /* ceil(2 / 4) = 1 message, (2 - 1) x its time */
    /* the node-pair message carries the busiest node's off-node bytes over N - 1 peers, where known
     * (max_node_offnode_bytes); unknown (0), max_ppn times the busiest rank's stands in, 4 x 1024 here */
    struct pc_problem u = w;
    u.max_node_offnode_bytes = 4 * 1024;
    NEAR(estimate_params("alltoallv.aggregated", &u, (struct pc_params){0}), agg_without);
    u.max_node_offnode_bytes = 1536; /* uneven rows: the node sends far less than 4 times its busiest rank */
    NEAR(agg_without - estimate_params("alltoallv.aggregated", &u, (struct pc_params){0}),
         one_agg - pc_cost_net_concurrent(&m, 1, 1536.0));
    struct pc_problem r = a2a_nodes(3, 2, 2, 6, 4096, true, true);
    r.shape.host_ranks = 6;
    r.shape.host_cores = 2;
    NEAR(pc_cost_waiting_slowdown(&r, 1), 2.0);
    NEAR(pc_cost_waiting_slowdown(&r, 2), 1.0);
    p.shape.oversubscribed = false;
    NEAR(pc_cost_waiting_slowdown(&p, 1), 1.0); /* a core per rank */
}

/* ---- busy time (struct pc_algorithm's busy, exec/busy.h): the caller's own CPU time of a started execution ---- */

static double busy_params(const char *name, const struct pc_problem *p, struct pc_params params)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    const struct pc_algorithm *a = pc_registry_get(i);
    if (!a->busy) fail_msg("%s has no busy function: taken as busy for its whole estimate", name);
    struct pc_machine_model m;
    hand_model(&m);
    return a->busy(p, &params, &m);
}
#define EXPECT_BUSY(name, prob, params, want)                                                                   \
    do {                                                                                                        \
        double got_ = busy_params(name, prob, params), want_ = (want);                                          \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_)))                                                      \
            fail_msg("%s (line %d): busy %.9f us, by hand %.9f us", name, __LINE__, got_, want_);               \
    } while (0)

/* node_aware.c's busy, the busiest rank a leader: 2N piece (its gather and scatter copies) + ceil((N-1)/l) node
 * pairs at 2 o = 1.0 each (its send and receive posted and completed) + with Put 2 o = 1.0 a pair (credit, flag);
 * ONMPML at most its estimate. The estimates these sit under are test_alltoall_node_aware's. */
static void test_busy_node_aware(void **state)
{
    (void)state;
    struct pc_problem p = a2a(4, 16);
    EXPECT_BUSY("alltoall.leader", &p, ((struct pc_params){0}), 0.564); /* one node: 2 * 0.282 */
    EXPECT_BUSY("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 0.564);
    p = a2a_nodes(2, 8, 8, 16, 8, true, false);
    EXPECT_BUSY("alltoall.leader", &p, ((struct pc_params){.transport = 0}), 2.256); /* 4 * 0.314 + 1.0 */
    EXPECT_BUSY("alltoall.leader", &p, ((struct pc_params){.transport = 1}), 3.256); /* + 1.0: credit and flag */
    p = a2a_nodes(3, 4, 4, 12, 16, true, false);
    EXPECT_BUSY("alltoall.leader", &p, ((struct pc_params){0}), 3.692); /* 6 * 0.282 + 2 pairs * 1.0 */
    p = a2a_nodes(3, 8, 8, 24, 8, true, false);
    EXPECT_BUSY("alltoall.mpml", &p, ((struct pc_params){.leaders = 2}), 2.884);  /* 6 * 0.314 + 1 pair * 1.0 */
    EXPECT_BUSY("alltoall.onmpml", &p, ((struct pc_params){.leaders = 2}), 2.884); /* under its 6.052 */
    /* 9 nodes of 8, m = 8, one leader: piece 0.314, 8 node pairs of 512 B.
     * busy 18 * 0.314 + 8 * 1.0 = 13.652. MPML's estimate 5.652 + net_posted(1, 8, 512) + 0.4, net_posted =
     * net(4096) + 7 g = 6.096 + 3.5: 15.648. ONMPML's estimate 0.314 + max(16 * 0.314, 9.596) + 0.314 + 0.4 =
     * 10.624 hides the leader's 8 us of overheads behind its copies: busy is cut to it. */
    p = a2a_nodes(9, 8, 8, 72, 8, true, false);
    EXPECT_P("alltoall.mpml", &p, ((struct pc_params){.leaders = 1}), 15.648);
    EXPECT_BUSY("alltoall.mpml", &p, ((struct pc_params){.leaders = 1}), 13.652);
    EXPECT_P("alltoall.onmpml", &p, ((struct pc_params){.leaders = 1}), 10.624);
    EXPECT_BUSY("alltoall.onmpml", &p, ((struct pc_params){.leaders = 1}), 10.624);
    p.shape.oversubscribed = true; /* the phases add up: the estimate grows past busy, which is not cut */
    EXPECT_BUSY("alltoall.onmpml", &p, ((struct pc_params){.leaders = 1}), 13.652);
    /* empty blocks: no copies, 8 pairs at 1.0 = 8 us of overheads, but MPML's estimate charges the burst one
     * start-up and a gap per further message: net(8 B column) 2.008 + 7 * 0.5 + 0.4 = 5.908, and busy is cut to it */
    p = a2a_nodes(9, 8, 8, 72, 0, true, false);
    EXPECT_P("alltoall.mpml", &p, ((struct pc_params){.leaders = 1}), 5.908);
    EXPECT_BUSY("alltoall.mpml", &p, ((struct pc_params){.leaders = 1}), 5.908);
    EXPECT_BUSY("alltoall.mpml", &p, ((struct pc_params){.leaders = 8}), 1.0); /* one pair each: 1.0 */
}

/* aggregated.c's busy: shm_copy(1, ppn, S) + shm_copy(1, ppn, R) + J messages of the busiest leader at o = 0.5 a
 * piece (point-to-point) or 3 o = 1.5 (Put: the put, its flush, the flag or credit). */
static void test_busy_aggregated(void **state)
{
    (void)state;
    const char *a = "alltoallv.aggregated";
    struct pc_problem p = a2av_nodes(1, 8, 8, 8, 4096, 4096, 0);
    EXPECT_BUSY(a, &p, ((struct pc_params){0}), 8.692); /* 2 * 4.346: the flags are waiting */
    p = a2av_nodes(2, 4, 4, 8, 4096, 4096, 1024);
    EXPECT_BUSY(a, &p, ((struct pc_params){0}), 5.096);                             /* 2 * 2.298 + 1 * 0.5 */
    EXPECT_BUSY(a, &p, ((struct pc_params){.leaders = 1}), 5.596);                  /* J = 2 */
    EXPECT_BUSY(a, &p, ((struct pc_params){.leaders = 1, .transport = 1}), 7.596); /* 4.596 + 2 * 1.5 */
    /* B = 4 * 8192 = 32768 B goes in 8 pieces of 4096 (aggregated.h): 2 (0.25 + 16.384) + 8 * 0.5 */
    p = a2av_nodes(2, 4, 4, 8, 32768, 32768, 8192);
    EXPECT_BUSY(a, &p, ((struct pc_params){0}), 37.268);
    EXPECT_BUSY(a, &p, ((struct pc_params){.segments = 1}), 33.768); /* one piece */
    p = a2av_nodes(2, 4, 4, 8, 0, 0, 0);
    EXPECT_BUSY(a, &p, ((struct pc_params){0}), 0.0);
}

/* dpml_common.c's busy: max(leader: (l-1) part + l part + T_comp + k inter-node allreduces as busy time,
 * other rank (l < ppn): 2 l part); an inter-node step: its message 2 o = 1.0, its test o = 0.5, its reduction.
 * Parts and reductions as test_allreduce_hierarchical_*. */
static void test_busy_hierarchical_allreduce(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(1, 4, 512, 8); /* n = 4096 */
    EXPECT_BUSY("allreduce.leader", &p, ((struct pc_params){0}), 8.442); /* 2.298 + 6.144 (its input in place) */
    p = ar_nodes(2, 4, 512, 8);
    /* + rd over 2 nodes: 1.0 + 0.5 + reduce(4096) 2.048 = 3.548 */
    EXPECT_BUSY("allreduce.leader", &p, ((struct pc_params){0}), 11.99);
    p = ar_nodes(1, 4, 1024, 8); /* n = 8192, 2 leaders: part 2.298; leader 3 * 2.298 + 6.144, other 4 * 2.298 */
    EXPECT_BUSY("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 13.038);
    p = ar_nodes(2, 4, 1024, 8);
    EXPECT_BUSY("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 0}), 16.586); /* + 3.548 */
    /* rsag over 2 of 4096 B: one halving and one allgather step of 2048 B, 2 (1.0 + 0.5) + reduce 1.024 */
    EXPECT_BUSY("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 1}), 17.062);
    /* pipelined k = 8: 8 rd of 512 B, 8 (1.5 + 0.256) = 14.048; under its estimate 52.6, free cores or not */
    p.shape.oversubscribed = false;
    EXPECT_BUSY("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 8}), 27.086);
    p.shape.oversubscribed = true;
    EXPECT_BUSY("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 8}), 27.086);
    /* 3 nodes of 3, all lead (l = ppn: no other rank), n = 8: 2 parts handed + 3 out at 0.253, comp 2 (8/3)/2000,
     * rd over 3: fold 2 * 1.5 + (8/3)/2000, mask 1: 1.5 + (8/3)/2000 */
    p = ar_nodes(3, 3, 1, 8);
    EXPECT_BUSY("allreduce.dpml", &p, ((struct pc_params){.leaders = 3}), 1.265 + 4.5 + 4 * (8.0 / 3) / 2000);
    p = ar_nodes(1, 1, 1000, 8);
    EXPECT_BUSY("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 0.0); /* one rank */
}

/* Every registered algorithm has a busy function (none is taken as busy throughout by default), and the node-aware
 * families' (the seven that had none before) satisfy 0 <= busy <= estimate across a sweep of shapes (one node and
 * several, ranks placed by node or not, cores free or oversubscribed), sizes and every variant they offer, under
 * the hand model and the default one. The other algorithms' busy functions are left out of the bound: they charge
 * 2 o per message where their estimates charge less (a node message's shm_alpha, a posted burst's gap g), so under
 * models with o >= shm_alpha they exceed their estimates and pc_algorithm_busy cuts them (known, not fixed here). */
static bool in_node_aware_family(const char *name)
{
    static const char *const names[] = {"alltoall.leader",  "alltoall.mpml",           "alltoall.onmpml",
                                        "alltoallv.aggregated", "allreduce.dpml", "allreduce.dpml_pipelined",
                                        "allreduce.leader"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i])) return true;
    return false;
}

static void test_busy_sweep(void **state)
{
    (void)state;
    struct pc_machine_model models[2];
    hand_model(&models[0]);
    pc_model_default(&models[1]);
    const int nodes[] = {1, 2, 3, 5, 9}, ppns[] = {1, 2, 3, 4, 8};
    for (int i = 0; i < pc_registry_count(); i++) {
        const struct pc_algorithm *a = pc_registry_get(i);
        if (!a->busy) fail_msg("%s has no busy function", a->name);
        if (!in_node_aware_family(a->name)) continue;
        for (int ni = 0; ni < 5; ni++)
            for (int pi = 0; pi < 5; pi++)
                for (int shape_bits = 0; shape_bits < 4; shape_bits++)
                    for (uint64_t b = 0; b <= (UINT64_C(1) << 21); b = b ? b * 8 : 1) {
                        const int N = nodes[ni], ppn = ppns[pi], P = N * ppn;
                        if (N > 1 && shape_bits == 0 && ppn == 1) continue; /* same as by node */
                        struct pc_problem p = shape(a->collective, P);
                        p.shape.nnodes = N;
                        p.shape.ranks_by_node = N == 1 || !(shape_bits & 1);
                        p.shape.oversubscribed = (shape_bits & 2) != 0;
                        p.block_bytes = p.max_block_bytes = b;
                        p.send_total_bytes = p.recv_total_bytes = p.max_send_bytes = p.max_recv_bytes = b * P;
                        p.max_offnode_bytes = b * (uint64_t)(P - ppn);
                        p.nonzero_sends = p.max_nonzero_sends = P - 1;
                        p.count = (int)b;
                        p.elem_bytes = 4;
                        if (a->inapplicable && a->inapplicable(&p)) continue;
                        struct pc_params v[PC_MAX_VARIANTS];
                        int nv = a->variants ? a->variants(&p, v, PC_MAX_VARIANTS) : 1;
                        if (!a->variants) memset(v, 0, sizeof v[0]);
                        for (int k = 0; k < nv; k++)
                            for (int mi = 0; mi < 2; mi++) {
                                double t = a->estimate(&p, &v[k], &models[mi]), bz = a->busy(&p, &v[k], &models[mi]);
                                if (!(isfinite(bz) && bz >= 0 && bz <= t * (1 + 1e-12)))
                                    fail_msg("%s variant %d (%s model) on %d nodes of %d (by node %d, oversubscribed %d), "
                                             "%llu B: busy %.6f us, estimate %.6f us",
                                             a->name, k, mi ? "default" : "hand", N, ppn, p.shape.ranks_by_node,
                                             p.shape.oversubscribed, (unsigned long long)b, bz, t);
                            }
                    }
    }
}

/* Estimates are finite and non-negative across a sweep, and grow with the message size. */
static void test_sweep_sane(void **state)
{
    (void)state;
    struct pc_machine_model m;
    hand_model(&m);
    struct pc_params params;
    memset(&params, 0, sizeof params);
    for (int i = 0; i < pc_registry_count(); i++) {
        const struct pc_algorithm *a = pc_registry_get(i);
        for (int P = 1; P <= 256; P = P < 8 ? P + 1 : P * 2 + 1) {
            double prev = -1;
            for (uint64_t bytes = 0; bytes <= (UINT64_C(1) << 24); bytes = bytes ? bytes * 4 : 1) {
                struct pc_problem p = shape(a->collective, P);
                p.block_bytes = bytes;
                p.send_total_bytes = p.recv_total_bytes = bytes * (uint64_t)P;
                p.max_block_bytes = bytes;
                p.max_send_bytes = p.max_recv_bytes = p.send_total_bytes;
                p.max_offnode_bytes = 0;
                p.nonzero_sends = p.max_nonzero_sends = P - 1;
                p.count = (int)bytes;
                double t = a->estimate(&p, &params, &m);
                if (!(isfinite(t) && t >= 0)) fail_msg("%s P=%d bytes=%llu: %g", a->name, P, (unsigned long long)bytes, t);
                if (t + 1e-12 < prev)
                    fail_msg("%s P=%d: estimate falls from %g to %g at %llu bytes", a->name, P, prev, t,
                             (unsigned long long)bytes);
                prev = t;
            }
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_model),
        cmocka_unit_test(test_alltoall_pairwise),
        cmocka_unit_test(test_alltoall_native),
        cmocka_unit_test(test_alltoall_in_place_exchange),
        cmocka_unit_test(test_alltoallv_spreadout),
        cmocka_unit_test(test_alltoallv_native),
        cmocka_unit_test(test_alltoall_bruck),
        cmocka_unit_test(test_alltoall_pap),
        cmocka_unit_test(test_alltoall_node_aware),
        cmocka_unit_test(test_alltoallv_padded_bruck),
        cmocka_unit_test(test_alltoallv_twophase_bruck),
        cmocka_unit_test(test_alltoallv_aggregated),
        cmocka_unit_test(test_alltoallv_aggregated_variants),
        cmocka_unit_test(test_allreduce_recursive_doubling_pof2),
        cmocka_unit_test(test_allreduce_recursive_doubling_non_pof2),
        cmocka_unit_test(test_allreduce_rabenseifner_pof2),
        cmocka_unit_test(test_allreduce_rabenseifner_non_pof2),
        cmocka_unit_test(test_allreduce_native),
        cmocka_unit_test(test_allreduce_hierarchical_one_node),
        cmocka_unit_test(test_allreduce_hierarchical_two_nodes),
        cmocka_unit_test(test_allreduce_hierarchical_three_nodes),
        cmocka_unit_test(test_oversubscribed_turns), cmocka_unit_test(test_rendezvous_shift_turns), cmocka_unit_test(test_waiting_slowdown),
        cmocka_unit_test(test_sweep_sane),
        cmocka_unit_test(test_busy_node_aware),
        cmocka_unit_test(test_busy_aggregated),
        cmocka_unit_test(test_busy_hierarchical_allreduce),
        cmocka_unit_test(test_busy_sweep),
        cmocka_unit_test(test_allreduce_stores),
        cmocka_unit_test(test_alltoall_stores), cmocka_unit_test(test_staging_handoff),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
