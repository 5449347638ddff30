/* Every algorithm's estimate against values computed by hand from the cost formula in the algorithm file's
 * opening comment, under the default model of pc_default_model:
 *   alpha = 1 us, beta = 1/5000 us/B (5 GB/s), gamma = 1/2000 us/B (2 GB/s), copy = 1/10000 us/B (10 GB/s).
 * The expected values below are worked out by hand (the arithmetic is in the comments), not by calling a
 * formula, so a change to either the model defaults or a cost function shows up here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <string.h>

#include "planner/planner.h"
#include "plancoll.h"

static void hand_model(struct pc_machine_model *m)
{
    memset(m, 0, sizeof *m);
    m->alpha_us = 1.0;
    m->beta_us_per_b = 1.0 / 5000.0;
    m->gamma_us_per_b = 1.0 / 2000.0;
    m->copy_us_per_b = 1.0 / 10000.0;
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

/* pairwise.c: (P-1)(alpha + m beta) + m c_copy */
static void test_alltoall_pairwise(void **state)
{
    (void)state;
    struct pc_problem p = a2a(8, 1000);
    EXPECT("alltoall.pairwise", &p, 8.5); /* 7 (1 + 0.2) + 0.1 */
    p = a2a(5, 100);
    EXPECT("alltoall.pairwise", &p, 4.09); /* 4 (1 + 0.02) + 0.01 */
    p = a2a(64, 65536);
    EXPECT("alltoall.pairwise", &p, 895.3072); /* 63 (1 + 13.1072) + 6.5536 */
    p = a2a(1, 64);
    EXPECT("alltoall.pairwise", &p, 0.0064); /* the local copy only */
    p = a2a(3, 0);
    EXPECT("alltoall.pairwise", &p, 2.0); /* 2 alpha */
}

/* alltoall/native.c: MPICH's choice, Bruck below 256 B blocks (ceil(lg P) rounds of P/2 blocks, a rotation of
 * the P blocks before and after), else spread-out ((P-1)(alpha + m beta) + m c_copy). */
static void test_alltoall_native(void **state)
{
    (void)state;
    struct pc_problem p = a2a(8, 100);
    EXPECT("alltoall.native", &p, 3.40); /* 3 (1 + 4*100*0.0002) + 2*8*100*0.0001 = 3.24 + 0.16 */
    p = a2a(5, 10);
    EXPECT("alltoall.native", &p, 3.025); /* 3 (1 + 2.5*10*0.0002) + 2*5*10*0.0001 = 3.015 + 0.01 */
    p = a2a(6, 1000);
    EXPECT("alltoall.native", &p, 6.1); /* 5 (1 + 0.2) + 0.1 */
    p = a2a(8, 256);
    EXPECT("alltoall.native", &p, 7.384); /* 256 is not below 256: 7 (1 + 0.0512) + 0.0256 */
}

/* spreadout.c: nz (alpha + o) + bytes beta; the model has no separate overhead o (it is part of alpha) */
static void test_alltoallv_spreadout(void **state)
{
    (void)state;
    struct pc_problem p = a2av(5, 4, 10000);
    EXPECT("alltoallv.spreadout", &p, 6.0); /* 4 + 2 */
    p = a2av(64, 63, 1000000);
    EXPECT("alltoallv.spreadout", &p, 263.0); /* 63 + 200 */
    p = a2av(64, 3, 1000000);
    EXPECT("alltoallv.spreadout", &p, 203.0); /* sparse: 3 + 200 */
    p = a2av(4, 0, 0);
    EXPECT("alltoallv.spreadout", &p, 0.0);
}

/* alltoallv/native.c: (P-1) alpha + bytes beta (zero-byte blocks are sent too) */
static void test_alltoallv_native(void **state)
{
    (void)state;
    struct pc_problem p = a2av(5, 4, 10000);
    EXPECT("alltoallv.native", &p, 6.0); /* 4 + 2 */
    p = a2av(64, 3, 1000000);
    EXPECT("alltoallv.native", &p, 263.0); /* 63 + 200 */
    p = a2av(1, 0, 400);
    EXPECT("alltoallv.native", &p, 0.08);
}

/* Radix-2 Bruck steps: P = 8 has 3 steps of 4 slots each; P = 5 has steps of 2 (slots 1, 3), 2 (2, 3) and 1
 * (4) slots. Radix 4 at P = 8: digit 0 values 1, 2, 3 move 2 slots each, digit 1 value 1 moves slots 4-7 (value 2
 * would reach 8 = P: skipped): 4 steps, 10 slots. A step of k slots of m bytes costs alpha + k m (beta + 2 c_copy),
 * here 1 + k m 0.0004. */

/* alltoall/bruck.c: the same steps with m-byte slots + 2 P m c_copy (rotation and inverse rotation) */
static void test_alltoall_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2a(8, 100);
    EXPECT("alltoall.bruck", &p, 3.64);          /* 3.48 + 2*8*100*0.0001 */
    EXPECT_RADIX("alltoall.bruck", &p, 4, 4.56); /* 4.4 + 0.16 */
    p = a2a(5, 10);
    EXPECT("alltoall.bruck", &p, 3.03); /* 3.02 + 2*5*10*0.0001 */
}

/* padded_bruck.c: sum over steps (alpha + k_s M beta + 2 k_s M c_copy) + (S + R) c_copy, 0 when M = 0 */
static void test_alltoallv_padded_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2av(8, 7, 500);
    p.recv_total_bytes = p.max_recv_bytes = 600;
    p.max_block_bytes = 100;
    EXPECT("alltoallv.padded_bruck", &p, 3.59);          /* 3 (1 + 4*100*0.0004) + 1100*0.0001 = 3.48 + 0.11 */
    EXPECT_RADIX("alltoallv.padded_bruck", &p, 4, 4.51); /* 4 + 10*100*0.0004 + 0.11 */
    p = a2av(5, 4, 30);
    p.max_block_bytes = 10;
    EXPECT("alltoallv.padded_bruck", &p, 3.026); /* 3 + 5*10*0.0004 + 60*0.0001 = 3 + 0.02 + 0.006 */
    p = a2av(1, 0, 64);
    p.max_block_bytes = 64;
    EXPECT("alltoallv.padded_bruck", &p, 0.0128); /* no steps: the rotation and the extraction, 128*0.0001 */
    p = a2av(6, 0, 0);
    EXPECT("alltoallv.padded_bruck", &p, 0.0); /* every block empty: nothing runs */
}

/* twophase_bruck.c: b = S / P; sum over steps (alpha + k_s b beta + 2 k_s b c_copy) + b c_copy (not in place),
 * 0 when S = 0 */
static void test_alltoallv_twophase_bruck(void **state)
{
    (void)state;
    struct pc_problem p = a2av(8, 7, 800);
    p.max_block_bytes = 400; /* not used: the steps carry average blocks */
    EXPECT("alltoallv.twophase_bruck", &p, 3.49);          /* b = 100: 3.48 + 100*0.0001 */
    EXPECT_RADIX("alltoallv.twophase_bruck", &p, 4, 4.41); /* 4 + 10*100*0.0004 + 0.01 */
    p.in_place = true;
    EXPECT("alltoallv.twophase_bruck", &p, 3.48); /* in place: no block to itself */
    p = a2av(5, 4, 50);
    EXPECT("alltoallv.twophase_bruck", &p, 3.021); /* b = 10: 3 + 5*10*0.0004 + 10*0.0001 */
    p = a2av(1, 0, 64);
    EXPECT("alltoallv.twophase_bruck", &p, 0.0064); /* the block to itself */
    p = a2av(8, 0, 0);
    EXPECT("alltoallv.twophase_bruck", &p, 0.0); /* nothing to send: no step sends a message */
}

/* alltoallv/aggregated.c: 2 alpha + (S + R) c + [N > 1, O > 0] (ceil(2 (N-1) / l) alpha (1 + put) + ppn O beta),
 * S, R, O the busiest rank's bytes sent, received and sent off-node, l the smallest node's leaders (0: all). */
static struct pc_problem a2av_nodes(int N, int min_ppn, int max_ppn, int P, uint64_t S, uint64_t R, uint64_t O)
{
    struct pc_problem p = shape(PC_ALLTOALLV, P);
    p.shape.nnodes = N;
    p.shape.min_ppn = min_ppn;
    p.shape.max_ppn = max_ppn;
    p.send_total_bytes = p.max_send_bytes = S;
    p.recv_total_bytes = p.max_recv_bytes = R;
    p.max_offnode_bytes = O;
    p.nonzero_sends = p.max_nonzero_sends = P - 1;
    return p;
}

static double estimate_with(const char *name, const struct pc_problem *p, int leaders, int transport)
{
    const struct pc_algorithm *a = pc_registry_get(pc_registry_find(name));
    struct pc_machine_model m;
    hand_model(&m);
    struct pc_params params;
    memset(&params, 0, sizeof params);
    params.leaders = leaders;
    params.transport = transport;
    return a->estimate(p, &params, &m);
}

#define EXPECT_WITH(name, prob, leaders, transport, want)                                                        \
    do {                                                                                                         \
        double got_ = estimate_with(name, prob, leaders, transport), want_ = (want);                             \
        if (fabs(got_ - want_) > 1e-9 * (1 + fabs(want_)))                                                       \
            fail_msg("%s leaders=%d transport=%d: estimate %.6f us, by hand %.6f us", name, leaders, transport, got_, \
                     want_);                                                                                     \
    } while (0)

static void test_alltoallv_aggregated(void **state)
{
    (void)state;
    const char *a = "alltoallv.aggregated";
    struct pc_problem p = a2av_nodes(1, 8, 8, 8, 8000, 8000, 0);
    EXPECT(a, &p, 3.6); /* one node: 2 + 16000 * 0.0001 */
    p = a2av_nodes(2, 4, 4, 8, 8000, 8000, 4000);
    EXPECT(a, &p, 7.8);                   /* 2 + 1.6 + ceil(2/4) 1 + 4 * 4000 * 0.0002 = 2 + 1.6 + 1 + 3.2 */
    EXPECT_WITH(a, &p, 1, 0, 8.8);        /* one leader: ceil(2/1) = 2 start-ups */
    EXPECT_WITH(a, &p, 1, 1, 10.8);       /* Put doubles them: 4 */
    EXPECT_WITH(a, &p, 9, 0, 7.8);        /* more leaders than ranks: all of them */
    p = a2av_nodes(8, 8, 8, 64, 64000, 64000, 56000);
    EXPECT(a, &p, 106.4);                 /* 2 + 12.8 + ceil(14/8) 2 + 8 * 56000 * 0.0002 = 89.6 */
    EXPECT_WITH(a, &p, 2, 0, 111.4);      /* ceil(14/2) = 7 start-ups */
    p = a2av_nodes(2, 3, 4, 7, 700, 700, 400);
    EXPECT(a, &p, 3.46);                  /* uneven: l = 3 (smallest node): 2 + 0.14 + 1 + 4 * 400 * 0.0002 */
    p = a2av_nodes(3, 4, 4, 12, 1200, 1200, 0);
    EXPECT(a, &p, 2.24);                  /* nothing leaves a node: 2 + 2400 * 0.0001 */
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

/* recursive_doubling.c: lg(pof2)(alpha + n beta + n gamma), plus 2 (alpha + n beta) + n gamma for the fold
 * when P is not a power of two */
static void test_allreduce_recursive_doubling_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(8, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 11.4); /* n = 4000: 3 (1 + 0.8 + 2.0) */
    p = ar(2, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 1.0056); /* 1 (1 + 0.0016 + 0.004) */
    p = ar(64, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 6.0336); /* 6 (1 + 0.0016 + 0.004) */
    p = ar(1, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 0.0);
}

static void test_allreduce_recursive_doubling_non_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(6, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 13.2); /* 2 (1 + 0.8 + 2.0) + 2 (1 + 0.8) + 2.0 = 7.6 + 3.6 + 2 */
    p = ar(3, 1, 8);
    EXPECT("allreduce.recursive_doubling", &p, 3.0128); /* 1 (1.0056) + 2 (1.0016) + 0.004 */
    p = ar(33, 1000, 4);
    EXPECT("allreduce.recursive_doubling", &p, 24.6); /* 5 (3.8) + 2 (1.8) + 2.0 = 19 + 3.6 + 2 */
}

/* rabenseifner.c: 2 lg(pof2) alpha + 2 (pof2-1)/pof2 n beta + (pof2-1)/pof2 n gamma, plus the fold
 * 2 (alpha + n beta) + n gamma when P is not a power of two */
static void test_allreduce_rabenseifner_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(8, 1000, 4);
    EXPECT("allreduce.rabenseifner", &p, 9.15); /* 6 + 2 (7/8) 0.8 + (7/8) 2.0 = 6 + 1.4 + 1.75 */
    p = ar(2, 1000, 4);
    EXPECT("allreduce.rabenseifner", &p, 3.8); /* 2 + 0.8 + 1.0 */
    p = ar(64, 16384, 8);
    /* n = 131072: 12 + 2 (63/64) 26.2144 + (63/64) 65.536 = 12 + 51.6096 + 64.512 */
    EXPECT("allreduce.rabenseifner", &p, 128.1216);
    p = ar(1, 1000, 4);
    EXPECT("allreduce.rabenseifner", &p, 0.0);
}

static void test_allreduce_rabenseifner_non_pof2(void **state)
{
    (void)state;
    struct pc_problem p = ar(6, 1000, 4);
    /* pof2 = 4: 2 (2) 1 + 2 (3/4) 0.8 + (3/4) 2.0 = 4 + 1.2 + 1.5, fold 2 (1 + 0.8) + 2.0 = 5.6 */
    EXPECT("allreduce.rabenseifner", &p, 12.3);
}

/* allreduce/native.c: MPICH's choice, recursive doubling up to 2 KiB (and for non-commutative ops):
 * ceil(lg P)(alpha + n beta + n gamma); Rabenseifner above: 2 ceil(lg P) alpha + 2 n beta + n gamma
 * (MPICH's own per-byte terms, without the (P-1)/P factor). */
static void test_allreduce_native(void **state)
{
    (void)state;
    struct pc_problem p = ar(8, 512, 4);
    EXPECT("allreduce.native", &p, 7.3008); /* n = 2048, up to 2 KiB: 3 (1 + 0.4096 + 1.024) = 3 (2.4336) */
    p = ar(8, 513, 4);
    EXPECT("allreduce.native", &p, 7.8468); /* n = 2052: 6 + 0.8208 + 1.026 */
    p = ar(5, 1000, 4);
    EXPECT("allreduce.native", &p, 9.6); /* n = 4000, ceil(lg 5) = 3: 6 + 1.6 + 2.0 */
    p.commutative = false;
    EXPECT("allreduce.native", &p, 11.4); /* non-commutative: recursive doubling, 3 (1 + 0.8 + 2.0) */
    p = ar(1, 1000, 4);
    EXPECT("allreduce.native", &p, 0.0);
}

/* The hierarchical allreduces (dpml_common.c; seed 004 eq. 2-7 with eq. 3 as one leader's share):
 *   T_copy = (l, or l-1 when every rank leads) (alpha + copy n/l), T_bcast = l (alpha + copy n/l),
 *   T_comp = (ppn-1)(n/l) gamma, T_comm = k T_inter(h, n/(l k));
 *   k = 1: T_copy + T_bcast + T_comp + T_comm;  k > 1: T_copy + T_bcast + T_comp/k + max(T_comp (k-1)/k, T_comm). */
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

static struct pc_problem ar_nodes(int nodes, int ppn, int count, uint64_t elem)
{
    struct pc_problem p = ar(nodes * ppn, count, elem);
    p.shape.nnodes = nodes;
    p.shape.min_ppn = p.shape.max_ppn = ppn;
    p.shape.ranks_by_node = true;
    return p;
}

static void test_allreduce_hierarchical_one_node(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(1, 4, 1000, 8); /* n = 8000 B */
    /* leader: copy 1 (1 + 0.8) + bcast 1.8 + comp 3 * 8000 * 0.0005 = 12 */
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 15.6);
    /* 2 leaders: copy 2 (1 + 0.4) = 2.8, bcast 2.8, comp 3 * 4000 * 0.0005 = 6 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 11.6);
    /* 4 leaders = ppn: copy 3 (1 + 0.2) = 3.6, bcast 4 (1.2) = 4.8, comp 3 * 2000 * 0.0005 = 3 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 4}), 11.4);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 99}), 11.4); /* clamped to the node */
    /* one node, nothing flies: 3.6 + 4.8 + 3/4 + max(3 * 3/4, 0) = the unpipelined 11.4 */
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 4, .segments = 4}), 11.4);
    p = ar_nodes(1, 1, 1000, 8);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2}), 0.0); /* one rank */
}

static void test_allreduce_hierarchical_two_nodes(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(2, 4, 1000, 8); /* n = 8000 B, h = 2 */
    /* 2 leaders, rd: 2.8 + 2.8 + 6 + lg 2 (1 + 4000 (0.0002 + 0.0005)) = 11.6 + 3.8 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 0}), 15.4);
    /* rsag on 2: 2 alpha + 2 (1/2) 4000 beta + (1/2) 4000 gamma = 2 + 0.8 + 1.0 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 1}), 15.4);
    /* mpi (native.c above 2 KiB): 2 alpha + 2 n beta + n gamma = 2 + 1.6 + 2.0 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 2, .inter = 2}), 17.2);
    /* pipelined, k = 4: T_comm = 4 (1 + 1000 * 0.0007) = 6.8; comp 6: 6/4 + max(4.5, 6.8) */
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 4}), 13.9);
    /* k = 2: T_comm = 2 (1 + 2000 * 0.0007) = 4.8; 2.8 + 2.8 + 3 + max(3, 4.8) */
    EXPECT_P("allreduce.dpml_pipelined", &p, ((struct pc_params){.leaders = 2, .segments = 2}), 13.4);
    /* one leader: 1.8 + 1.8 + 12 + (1 + 8000 * 0.0007) */
    EXPECT_P("allreduce.leader", &p, ((struct pc_params){0}), 22.2);
}

static void test_allreduce_hierarchical_three_nodes(void **state)
{
    (void)state;
    struct pc_problem p = ar_nodes(3, 3, 1000, 8); /* n/l = 8000/3 B per leader, h = 3 folds to 2 */
    const double part = 8000.0 / 3;
    double copy = 2 * (1 + part * 0.0001), bcast = 3 * (1 + part * 0.0001), comp = 2 * part * 0.0005;
    double rd = (1 + part * 0.0007) + 2 * (1 + part * 0.0002) + part * 0.0005;
    /* by hand: 2.533333 + 3.8 + 2.666667 + (2.866667 + 4.4) = 16.266667 */
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 3}), copy + bcast + comp + rd);
    EXPECT_P("allreduce.dpml", &p, ((struct pc_params){.leaders = 3}), 16.2666666666667);
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
        cmocka_unit_test(test_alltoallv_spreadout),
        cmocka_unit_test(test_alltoallv_native),
        cmocka_unit_test(test_alltoall_bruck),
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
        cmocka_unit_test(test_sweep_sane),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
