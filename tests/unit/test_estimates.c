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

static double estimate(const char *name, const struct pc_problem *p)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    const struct pc_algorithm *a = pc_registry_get(i);
    assert_int_equal(a->collective, p->coll);
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_params params;
    memset(&params, 0, sizeof params);
    return a->estimate(p, &params, &m);
}

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
    p.nonzero_sends = nz;
    p.send_total_bytes = bytes;
    p.recv_total_bytes = bytes;
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
    assert_true(m.alpha_us == 1.0);
    assert_true(fabs(m.beta_us_per_b - 0.0002) < 1e-15);
    assert_true(fabs(m.gamma_us_per_b - 0.0005) < 1e-15);
    assert_true(fabs(m.copy_us_per_b - 0.0001) < 1e-15);
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
static double estimate_with(const char *name, const struct pc_problem *p, struct pc_params params)
{
    int i = pc_registry_find(name);
    if (i < 0) fail_msg("%s is not registered", name);
    struct pc_machine_model m;
    pc_default_model(&m);
    return pc_registry_get(i)->estimate(p, &params, &m);
}
#define EXPECT_P(name, prob, params, want)                                                                      \
    do {                                                                                                        \
        double got_ = estimate_with(name, prob, params), want_ = (want);                                        \
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
    pc_default_model(&m);
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
                p.nonzero_sends = P - 1;
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
