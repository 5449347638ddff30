/* plancoll-predict's pure parts (src/planner/predict.c, machine.c): the machine description parser and its mapping
 * to the cost model (figures worked out by hand), signatures and the problems built from them (against an
 * independent walk over the count matrix), the prediction against the planner's own enumeration and ESTIMATE
 * choice, and the closed forms that made predictions at 100,000 ranks fast (against the per-rank loops they
 * replace). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/cost.h"
#include "exec/reduce.h"
#include "exec/registry.h"
#include "exec/schedule.h"
#include "planner/machine.h"
#include "planner/planner.h"
#include "planner/predict.h"
#include "plancoll.h"

#define NEAR(a, b) assert_true(fabs((double)(a) - (double)(b)) <= 1e-9 * (1 + fabs((double)(b))))

static const char *good_machine =
    "# a test machine\n"
    "name = test-net   # comment after a value\n"
    "\n"
    "cores_per_node = 12\n"
    "net_latency_us = 2\n"
    "net_overhead_us = 0.5\n"
    "net_bandwidth_GBps = 10\n"
    "net_topology = fat-tree:2;24,48;1,24;1,1\n"
    "shm_latency_us = 0.25\n"
    "shm_bandwidth_GBps = 8\n"
    "node_memory_bandwidth_GBps = 20\n"
    "reduce_GBps = 2e0\n";

static void test_machine_good(void **state)
{
    (void)state;
    struct pc_machine_desc d;
    char err[200] = "";
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    assert_string_equal(d.name, "test-net");
    assert_int_equal(d.cores_per_node, 12);
    NEAR(d.net_latency_us, 2);
    NEAR(d.net_bandwidth_GBps, 10);
    NEAR(d.reduce_GBps, 2);
    assert_string_equal(d.net_topology, "fat-tree:2;24,48;1,24;1,1");
    /* defaults: core_gflops 10, gap = overhead (unset: -1), sync 0.2 */
    NEAR(d.core_gflops, 10);
    assert_true(d.net_gap_us < 0);
    NEAR(d.sync_us, 0.2);
    assert_int_equal(pc_machine_cores(&d, 64), 12);
}

/* Parses text, expecting failure with want in the message. */
static void expect_error(const char *text, const char *want)
{
    struct pc_machine_desc d;
    char err[300] = "";
    assert_int_equal(pc_machine_parse(text, &d, err, sizeof err), -1);
    if (!strstr(err, want)) fail_msg("error '%s' does not say '%s'", err, want);
}

static void test_machine_bad(void **state)
{
    (void)state;
    char text[1024];
    /* an unknown key (a typo) on line 3 */
    snprintf(text, sizeof text, "name = x\nnet_latency_us = 1\nnet_bandwith_GBps = 10\n");
    expect_error(text, "line 3: unknown key 'net_bandwith_GBps'");
    /* a bad number on line 4 of the good file: not plain decimals, negative, zero bandwidth */
    const char *bad_numbers[] = {"0x10", "1,5", "-2", "inf", "nan", "", "2 us"};
    for (size_t i = 0; i < sizeof bad_numbers / sizeof bad_numbers[0]; i++) {
        snprintf(text, sizeof text, "name = x\n\n\nnet_latency_us = %s\n", bad_numbers[i]);
        expect_error(text, "line 4: net_latency_us:");
    }
    expect_error("name = x\nnet_bandwidth_GBps = 0\n", "line 2: net_bandwidth_GBps: '0' is not a plain decimal number above 0");
    expect_error("name = x\ncores_per_node = 1.5\n", "line 2: cores_per_node");
    /* every required key, left out of the good file in turn */
    const char *required[] = {"name", "net_latency_us", "net_bandwidth_GBps", "shm_latency_us", "shm_bandwidth_GBps"};
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        char want[100];
        snprintf(text, sizeof text, "%s", good_machine);
        char *line = strstr(text, required[i]);
        assert_non_null(line);
        line[0] = '#'; /* comment the line out */
        snprintf(want, sizeof want, "required key '%s' missing", required[i]);
        expect_error(text, want);
    }
    /* twice, no '=', a bad word, a bad topology, a backbone on a fat tree */
    expect_error("name = x\nname = y\n", "line 2: 'name' given twice (first on line 1)");
    expect_error("name = x\nnet_latency_us 1\n", "line 2: expected 'key = value'");
    expect_error("name = two words\n", "line 1: name:");
    expect_error("name = x\nnet_topology = torus:4x0x2\n", "line 2: net_topology:");
    expect_error("name = x\nnet_topology = ring\n", "line 2: net_topology:");
    snprintf(text, sizeof text, "%snet_backbone_GBps = 100\n", good_machine);
    expect_error(text, "line 13: net_backbone_GBps applies to a flat network only");
}

/* The mapping, figure by figure, worked out by hand from good_machine: L = 2, o = 0.5, g = o, G = 1e-3 / 10 = 1e-4
 * us per byte; shm 0.25 us + 1e-3 / 8 us per byte; node memory 20 GB/s over tau copies, at most 8 GB/s each. */
static void test_machine_mapping(void **state)
{
    (void)state;
    struct pc_machine_desc d;
    char err[200];
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    struct pc_machine_model m;
    pc_machine_model(&d, 4, 12, &m);
    NEAR(m.L_us, 2);
    NEAR(m.o_us, 0.5);
    NEAR(m.g_us, 0.5);
    NEAR(m.G_us_per_b, 1e-4);
    /* 3 pairs, 4096 B: 2 + 2 x 0.5 + 2 gaps x 0.5 + 4095 x 3 x 1e-4 = 4 + 1.2285 */
    NEAR(m.net_time[2][3], 5.2285);
    NEAR(pc_cost_net_concurrent(&m, 3, 4096), 5.2285);
    /* k beyond the table: the model extrapolates linearly, which is exact for this linear form: 16 pairs, 512 B =
     * 3 + 15 gaps x 0.5 + 511 x 16 x 1e-4 */
    NEAR(pc_cost_net_concurrent(&m, 16, 512), 3 + 15 * 0.5 + 511 * 16 * 1e-4);
    NEAR(m.shm_alpha_us, 0.25);
    NEAR(m.shm_beta_us_per_b, 1.25e-4);
    /* tau = 1, 2: 8 GB/s each (20 / 2 = 10 > 8); tau = 3: 20 / 3 GB/s. Two copies of 32 KiB at tau 3:
     * 2 x 32768 x 1e-3 / (20/3) = 9.8304 us; one copy of 32 KiB alone: 32768 / 8000 = 4.096 us */
    NEAR(m.shm_time[1][2][4], 9.8304);
    NEAR(m.shm_time[0][0][4], 4.096);
    NEAR(m.shm_time[0][1][4], 4.096);
    NEAR(m.sync_us, 0.2);
    NEAR(m.reduce_default_us_per_b, 1e-3 / 2);
    NEAR(pc_cost_reduce(&m, 2, 23, 1000), 0.5); /* no per-pair figure: the default rate for every (op, type) */
    NEAR(m.transpose_us_per_b, 1.25e-4);
    /* pc_model_derive on 4 nodes: the generic start-up is the network's, the copy rate the shm table's */
    NEAR(m.alpha_us, 3);
    NEAR(m.beta_us_per_b, 1e-4);
    NEAR(m.copy_us_per_b, 1.25e-4);
    NEAR(m.gamma_us_per_b, 5e-4);
    /* defaults: node memory = shm x cores / 2 = 8 x 12 / 2 = 48 GB/s; reduce = shm / 3 */
    d.node_memory_bandwidth_GBps = -1;
    d.reduce_GBps = -1;
    pc_machine_model(&d, 1, 12, &m);
    NEAR(m.shm_time[0][7][6], 2097152 * 1e-3 / 6.0); /* tau 8: 48 / 8 = 6 GB/s */
    NEAR(m.reduce_default_us_per_b, 1e-3 / (8.0 / 3.0));
    NEAR(m.alpha_us, 0.25); /* one node: the node's start-up */
}

/* The keys added to the format (docs/machines.md): shm_msg_bandwidth_GBps sets the model's shm_beta (MPI's messages
 * inside a node) and leaves the copy figures at shm_bandwidth_GBps; net_large_threshold_B and net_large_extra_us add
 * one start-up to every network message of at least the threshold, whatever the concurrency; turn_us is the model's
 * scheduler turn. Absent, the model is
 * the one of a file without them (backward compatible). Worked by hand from good_machine plus the three keys. */
static void test_machine_new_keys(void **state)
{
    (void)state;
    struct pc_machine_desc d;
    struct pc_machine_model old, m;
    char err[300] = "", text[1024];
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    assert_true(d.shm_msg_bandwidth_GBps < 0);
    NEAR(d.net_large_threshold_B, 0);
    NEAR(d.net_large_extra_us, 0);
    pc_machine_model(&d, 4, 12, &old);
    snprintf(text, sizeof text,
             "%sshm_msg_bandwidth_GBps = 0.5\nnet_large_threshold_B = 65536\nnet_large_extra_us = 400\n", good_machine);
    assert_int_equal(pc_machine_parse(text, &d, err, sizeof err), 0);
    NEAR(d.shm_msg_bandwidth_GBps, 0.5);
    NEAR(d.net_large_threshold_B, 65536);
    NEAR(d.net_large_extra_us, 400);
    pc_machine_model(&d, 4, 12, &m);
    NEAR(m.shm_beta_us_per_b, 1e-3 / 0.5); /* 2e-3 us per byte, not the copy's 1.25e-4 */
    NEAR(m.shm_time[0][0][4], 4.096);      /* copies unchanged: 32 KiB at 8 GB/s */
    NEAR(m.transpose_us_per_b, 1.25e-4);
    for (int k = 0; k < PC_MODEL_MAX_PORTS; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++)
            NEAR(m.net_time[k][s], old.net_time[k][s] + (pc_model_sizes[s] >= 65536 ? 400 : 0));
    /* one 256 KiB message: 2 + 2 x 0.5 + 262143 x 1e-4 + 400 = 429.2143 us; 3 pairs of 32 KiB stay below */
    NEAR(m.net_time[0][5], 429.2143);
    NEAR(m.net_time[2][4], 3 + 2 * 0.5 + 32767 * 3 * 1e-4);
    /* the threshold exactly on a sampled size takes the term there */
    snprintf(text, sizeof text, "%snet_large_threshold_B = 32768\nnet_large_extra_us = 10\n", good_machine);
    assert_int_equal(pc_machine_parse(text, &d, err, sizeof err), 0);
    pc_machine_model(&d, 4, 12, &m);
    NEAR(m.net_time[0][4], 3 + 32767 * 1e-4 + 10);
    NEAR(m.net_time[0][3], 3 + 4095 * 1e-4);
    /* the pair goes together; the threshold is whole bytes; the bandwidth is above 0 (good_machine has 12 lines) */
    snprintf(text, sizeof text, "%snet_large_extra_us = 400\n", good_machine);
    expect_error(text, "line 13: net_large_threshold_B and net_large_extra_us go together");
    snprintf(text, sizeof text, "%snet_large_threshold_B = 1000\n", good_machine);
    expect_error(text, "line 13: net_large_threshold_B and net_large_extra_us go together");
    snprintf(text, sizeof text, "%snet_large_threshold_B = 0.5\nnet_large_extra_us = 1\n", good_machine);
    expect_error(text, "line 13: net_large_threshold_B: '0.5' is not a whole number of bytes");
    snprintf(text, sizeof text, "%sshm_msg_bandwidth_GBps = 0\n", good_machine);
    expect_error(text, "line 13: shm_msg_bandwidth_GBps: '0' is not a plain decimal number above 0");
    /* turn_us: 0 unless given, then the model's turn as given */
    NEAR(old.turn_us, 0);
    snprintf(text, sizeof text, "%sturn_us = 9.385\n", good_machine);
    assert_int_equal(pc_machine_parse(text, &d, err, sizeof err), 0);
    pc_machine_model(&d, 4, 12, &m);
    NEAR(m.turn_us, 9.385);
    snprintf(text, sizeof text, "%sturn_us = -1\n", good_machine);
    expect_error(text, "line 13: turn_us:");
}

static void test_signatures(void **state)
{
    (void)state;
    struct pc_signature s;
    assert_null(pc_signature_parse("alltoall:1024", &s));
    assert_int_equal(s.kind, PC_SIG_ALLTOALL);
    assert_string_equal(pc_signature_types[s.type].name, "byte");
    assert_null(pc_signature_parse("alltoall:double:3:inplace", &s));
    assert_int_equal(pc_signature_types[s.type].size, 8);
    assert_true(s.inplace);
    assert_null(pc_signature_parse("allreduce:int:max:7", &s));
    assert_int_equal(s.op, 0);
    assert_null(pc_signature_parse("alltoallv:random:100:42", &s));
    assert_int_equal(s.seed, 42);
    assert_non_null(pc_signature_parse("alltoall:quad:3", &s));
    assert_non_null(pc_signature_parse("allreduce:double:avg:3", &s));
    assert_non_null(pc_signature_parse("allreduce:double:sum:3:inplace", &s));
    assert_non_null(pc_signature_parse("alltoallv:random:100", &s));
    assert_non_null(pc_signature_parse("bcast:100", &s));
    assert_non_null(pc_signature_parse("alltoall:-1", &s));
    /* the ids are the library's predefined type and op ids (exec/reduce.c), which a calibrated model's reduce lines
     * use: checked against that table for this build's MPI */
    const MPI_Datatype types[] = {MPI_BYTE,  MPI_SIGNED_CHAR, MPI_SHORT,     MPI_INT,        MPI_UNSIGNED,
                                  MPI_LONG,  MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_FLOAT,      MPI_DOUBLE,
                                  MPI_LONG_DOUBLE, MPI_INT8_T, MPI_INT16_T,  MPI_INT32_T,    MPI_INT64_T,
                                  MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,  MPI_UINT64_T,   MPI_C_FLOAT_COMPLEX,
                                  MPI_C_DOUBLE_COMPLEX};
    int n = 0;
    while (pc_signature_types[n].name) n++;
    assert_int_equal(n, (int)(sizeof types / sizeof types[0]));
    for (int i = 0; i < n; i++)
        if (pc_signature_types[i].type_id != pc_predefined_type_id(types[i]))
            fail_msg("%s: id %d, the library's %d", pc_signature_types[i].name, pc_signature_types[i].type_id,
                     pc_predefined_type_id(types[i]));
    const MPI_Op ops[PC_SIGNATURE_NOPS] = {MPI_MAX, MPI_MIN, MPI_SUM, MPI_PROD, MPI_LAND,
                                           MPI_LOR, MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};
    for (int i = 0; i < PC_SIGNATURE_NOPS; i++) assert_int_equal(pc_predefined_op_id(ops[i]), i);
}

/* The maxima of an alltoallv problem, walked independently over the matrix (off-node: another block of ppn). */
static void check_alltoallv_maxima(const struct pc_signature *s, int N, int K)
{
    const int P = N * K;
    struct pc_problem p;
    assert_int_equal(pc_signature_problem(s, N, K, 0, &p), PLANCOLL_SUCCESS);
    uint64_t send = 0, recv = 0, off = 0, block = 0, node = 0;
    int nonzero = 0;
    for (int a = 0; a < N && N > 1; a++) { /* node a's off-node bytes out and in, added up block by block */
        uint64_t out = 0, in = 0;
        for (int i = a * K; i < (a + 1) * K; i++)
            for (int j = 0; j < P; j++)
                if (j / K != a) {
                    out += pc_signature_pair_bytes(s, i, j, P);
                    in += pc_signature_pair_bytes(s, j, i, P);
                }
        node = out > node ? out : node;
        node = in > node ? in : node;
    }
    for (int i = 0; i < P; i++) {
        uint64_t row = 0, col = 0, o = 0;
        int nz = 0;
        for (int j = 0; j < P; j++) {
            uint64_t b = pc_signature_pair_bytes(s, i, j, P), c = pc_signature_pair_bytes(s, j, i, P);
            row += b;
            col += c;
            o += (i / K != j / K) ? b : 0;
            nz += b > 0 && i != j;
            block = b > block ? b : block;
        }
        send = row > send ? row : send;
        recv = col > recv ? col : recv;
        off = o > off ? o : off;
        nonzero = nz > nonzero ? nz : nonzero;
    }
    assert_int_equal(p.coll, PC_ALLTOALLV);
    assert_int_equal(p.shape.nranks, P);
    assert_int_equal(p.max_send_bytes, send);
    assert_int_equal(p.max_recv_bytes, recv);
    assert_int_equal(p.max_offnode_bytes, off);
    assert_int_equal(p.max_block_bytes, block);
    assert_int_equal(p.max_nonzero_sends, nonzero);
    assert_int_equal(p.max_node_offnode_bytes, node);
}

static void test_problems(void **state)
{
    (void)state;
    struct pc_signature s;
    struct pc_problem p;
    assert_null(pc_signature_parse("alltoall:int:100", &s));
    assert_int_equal(pc_signature_problem(&s, 3, 4, 0, &p), PLANCOLL_SUCCESS);
    assert_int_equal(p.coll, PC_ALLTOALL);
    assert_int_equal(p.block_bytes, 400);
    assert_int_equal(p.shape.nranks, 12);
    assert_int_equal(p.shape.nnodes, 3);
    assert_int_equal(p.shape.min_ppn, 4);
    assert_int_equal(p.shape.max_ppn, 4);
    assert_true(p.shape.ranks_by_node);
    assert_false(p.shape.oversubscribed);
    assert_int_equal(pc_signature_problem(&s, 3, 4, 2, &p), PLANCOLL_SUCCESS); /* 4 ranks on 2 cores */
    assert_true(p.shape.oversubscribed);
    assert_int_equal(p.shape.host_ranks, 4);
    assert_int_equal(p.shape.host_cores, 2);
    assert_null(pc_signature_parse("allreduce:double:sum:1000", &s));
    assert_int_equal(pc_signature_problem(&s, 2, 2, 0, &p), PLANCOLL_SUCCESS);
    assert_int_equal(p.count, 1000);
    assert_int_equal(p.elem_bytes, 8);
    assert_int_equal(p.type_id, pc_predefined_type_id(MPI_DOUBLE));
    assert_int_equal(p.op_id, pc_predefined_op_id(MPI_SUM));
    assert_true(p.commutative);
    assert_int_equal(pc_signature_problem(&s, 0, 2, 0, &p), PLANCOLL_ERR_ARGUMENT);
    assert_int_equal(pc_signature_problem(&s, 65536, 65536, 0, &p), PLANCOLL_ERR_ARGUMENT);
    const char *v[] = {"alltoallv:uniform:100", "alltoallv:uniform:0", "alltoallv:random:1000:7", "alltoallv:random:3:1"};
    const int layouts[][2] = {{1, 1}, {1, 3}, {2, 2}, {3, 4}, {5, 3}};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        assert_null(pc_signature_parse(v[i], &s));
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++) check_alltoallv_maxima(&s, layouts[l][0], layouts[l][1]);
    }
}

/* Above PC_PREDICT_EXACT_RANDOM_P the maxima are the expected extremes: at the bound itself (64 x 64) they must lie
 * within 1% of the exact ones (the maximum block within 1 byte in 1000). */
static void test_random_maxima(void **state)
{
    (void)state;
    struct pc_signature s;
    assert_null(pc_signature_parse("alltoallv:random:1000:3", &s));
    struct pc_problem exact;
    assert_int_equal(pc_signature_problem(&s, 64, 64, 0, &exact), PLANCOLL_SUCCESS);
    struct pc_alltoallv_maxima mx;
    pc_signature_random_maxima(&s, 64, 64, &mx);
    assert_true(fabs((double)mx.send / (double)exact.max_send_bytes - 1) < 0.01);
    assert_true(fabs((double)mx.recv / (double)exact.max_recv_bytes - 1) < 0.01);
    assert_true(fabs((double)mx.offnode / (double)exact.max_offnode_bytes - 1) < 0.01);
    assert_true(fabs((double)mx.nonzero_sends / (double)exact.max_nonzero_sends - 1) < 0.01);
    assert_true(fabs((double)mx.node_offnode / (double)exact.max_node_offnode_bytes - 1) < 0.01);
    assert_true(mx.block >= exact.max_block_bytes && mx.block <= exact.max_block_bytes + 1);
}

/* The prediction is the planner's: at small layouts every candidate of pc_enumerate, in its order, with its
 * predicted time, and ESTIMATE's choice is pc_choose's at ESTIMATE rigor, which is also (checked independently) the
 * first candidate of the least predicted time. */
static void test_prediction_is_the_planners(void **state)
{
    (void)state;
    const char *sigs[] = {"alltoall:1024", "alltoall:double:3", "alltoallv:uniform:100", "alltoallv:random:5000:7",
                          "allreduce:double:sum:65536", "allreduce:int:max:3"};
    const int layouts[][2] = {{1, 1}, {1, 3}, {2, 2}, {2, 4}, {3, 4}, {5, 1}, {4, 16}};
    struct pc_machine_desc d;
    char err[200];
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
            for (int model = 0; model < 2; model++) {
                struct pc_signature s;
                assert_null(pc_signature_parse(sigs[i], &s));
                const int N = layouts[l][0], K = layouts[l][1];
                struct pc_machine_model m;
                if (model) pc_machine_model(&d, N, K, &m);
                else pc_default_model(&m);
                struct pc_problem p;
                assert_int_equal(pc_signature_problem(&s, N, K, 0, &p), PLANCOLL_SUCCESS);
                struct pc_prediction pred[PC_MAX_CANDIDATES];
                int n = 0, est = -1;
                assert_int_equal(pc_predict(pc_registry_table(), &p, &m, pred, PC_MAX_CANDIDATES, &n, &est),
                                 PLANCOLL_SUCCESS);
                struct pc_candidate c[PC_MAX_CANDIDATES];
                int nc = 0;
                assert_int_equal(pc_enumerate(pc_registry_table(), &p, NULL, 0, &m, c, PC_MAX_CANDIDATES, &nc),
                                 PLANCOLL_SUCCESS);
                assert_int_equal(n, nc);
                int least = 0;
                for (int k = 0; k < n; k++) {
                    assert_int_equal(pred[k].alg, c[k].alg);
                    assert_memory_equal(&pred[k].params, &c[k].params, sizeof c[k].params);
                    assert_true(pred[k].predicted_us == c[k].predicted_us);
                    char spec[160];
                    pc_spec_format(pc_registry_table(), c[k].alg, &c[k].params, spec, sizeof spec);
                    assert_string_equal(pred[k].spec, spec);
                    /* ESTIMATE's rule: the earliest, unless a later one is lower by more than the tie margin */
                    if (c[k].predicted_us < c[least].predicted_us * (1.0 - PC_ESTIMATE_TIE)) least = k;
                }
                struct pc_decision dec;
                assert_int_equal(pc_choose(pc_registry_table(), &p, c, nc, false, NULL, NULL, &dec), PLANCOLL_SUCCESS);
                assert_string_equal(dec.how, "estimate");
                assert_true(est >= 0 && est < n);
                assert_int_equal(pred[est].alg, dec.chosen.alg);
                assert_memory_equal(&pred[est].params, &dec.chosen.params, sizeof dec.chosen.params);
                assert_int_equal(est, least);
            }
}

/* The node-aware alltoalls (leader, mpml, onmpml) run on any number of nodes: they once refused more than 1000
 * (a fixed array the execution has since sized by the node count), which left a 4096-node alltoall of small blocks
 * to Bruck and pap. Each must be enumerated beyond 1000 nodes, with every leader count up to the node's ranks, and
 * its estimate must not fall as nodes are added (leaders handle ceil((N - 1) / l) node pairs: steps, not a slope). */
static void test_node_aware_beyond_1000_nodes(void **state)
{
    (void)state;
    const char *names[] = {"alltoall.leader", "alltoall.mpml", "alltoall.onmpml"};
    const int nodes[] = {999, 1000, 1001, 1024, 100000 / 28, 4096};
    struct pc_machine_desc d;
    char err[200];
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    struct pc_signature s;
    assert_null(pc_signature_parse("alltoall:8", &s));
    double last[3] = {0, 0, 0};
    for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++) {
        struct pc_machine_model m;
        pc_machine_model(&d, nodes[k], 12, &m);
        struct pc_problem p;
        assert_int_equal(pc_signature_problem(&s, nodes[k], 12, 0, &p), PLANCOLL_SUCCESS);
        struct pc_prediction pred[PC_MAX_CANDIDATES];
        int n = 0, est = -1;
        assert_int_equal(pc_predict(pc_registry_table(), &p, &m, pred, PC_MAX_CANDIDATES, &n, &est), PLANCOLL_SUCCESS);
        for (int a = 0; a < 3; a++) {
            double best = INFINITY;
            int most_leaders = 0;
            for (int i = 0; i < n; i++) {
                if (strcmp(pc_algorithm_at(pc_registry_table(), pred[i].alg)->name, names[a]) != 0) continue;
                best = pred[i].predicted_us < best ? pred[i].predicted_us : best;
                most_leaders = pred[i].params.leaders > most_leaders ? pred[i].params.leaders : most_leaders;
            }
            if (!isfinite(best)) fail_msg("%s missing at %d nodes x 12", names[a], nodes[k]);
            assert_int_equal(most_leaders, a == 0 ? 0 : 12);
            assert_true(best >= last[a]);
            last[a] = best;
        }
    }
}

/* The node's link carries its N - 1 node-pair messages however many leaders share them out: with l leaders the
 * busiest sends r = ceil((N - 1) / l), and the estimate's inter-node term is at the mean concurrency k = (N - 1) / r.
 * In the model's LogGP closed form (no level tables: net_concurrent(k, b) = L + 2o + (k b - 1) G + (k - 1) g, so
 * net_posted(k, r, B) = L + 2o + (k r B - 1) G + (k - 1) g + (r - 1) g, linear in k) that is
 * L + 2o + ((N - 1) B - 1) G + ((N - 1) / r - 1) g + (r - 1) g. mpml's other terms do not depend on l, so the
 * estimates of two leader counts differ by exactly the difference of that term. (The estimate used to charge every
 * round at l senders, l r messages: at 18 nodes 16 leaders paid 32 messages' bytes for 17.) */
static void test_node_aware_link_bytes(void **state)
{
    (void)state;
    struct pc_machine_desc d;
    char err[200];
    assert_int_equal(pc_machine_parse(good_machine, &d, err, sizeof err), 0);
    const double L = 2, o = 0.5, g = 0.5, G = 1e-3 / 10; /* good_machine: no net_gap_us, so g = o */
    const struct pc_algorithm *mpml = NULL;
    for (int i = 0; pc_algorithm_at(pc_registry_table(), i); i++)
        if (!strcmp(pc_algorithm_at(pc_registry_table(), i)->name, "alltoall.mpml")) mpml = pc_algorithm_at(pc_registry_table(), i);
    assert_non_null(mpml);
    struct pc_signature s;
    assert_null(pc_signature_parse("alltoall:1024", &s));
    const int nodes[] = {2, 3, 17, 18, 50, 1025};
    for (size_t k = 0; k < sizeof nodes / sizeof nodes[0]; k++) {
        const int N = nodes[k], K = 12;
        struct pc_machine_model m;
        pc_machine_model(&d, N, K, &m);
        m.net_ports = 0; /* the closed form: the level tables interpolate sizes geometrically */
        struct pc_problem p;
        assert_int_equal(pc_signature_problem(&s, N, K, 0, &p), PLANCOLL_SUCCESS);
        const double B = (double)K * K * 1024;
        double base = 0, base_inter = 0;
        for (int l = 1; l <= K; l++) {
            const double r = ceil((double)(N - 1) / l);
            const double inter = L + 2 * o + ((N - 1) * B - 1) * G + ((N - 1) / r - 1) * g + (r - 1) * g;
            struct pc_params params = {.leaders = l};
            const double est = mpml->estimate(&p, &params, &m);
            if (l == 1) {
                base = est, base_inter = inter;
                continue;
            }
            const double want = inter - base_inter, got = est - base;
            if (fabs(got - want) > 1e-6 * (1 + fabs(inter)))
                fail_msg("%d nodes, %d leaders: estimate - one leader's = %.6f us, want %.6f", N, l, got, want);
        }
    }
}

/* The closed forms against the loops they replace (cost.h, schedule.h), on every small shape. */
static int offnode_loop(const struct pc_problem *p, int (*partner)(int, int, int), int arg)
{
    const int P = p->shape.nranks, ppn = p->shape.max_ppn;
    if (p->shape.nnodes <= 1 || P <= 1) return 0;
    int most = 0;
    for (int first = 0; first < P; first += ppn) {
        int k = 0;
        for (int r = first; r < first + ppn && r < P; r++) {
            int q = partner(r, P, arg);
            if (q >= 0 && q / ppn != r / ppn) k++;
        }
        most = k > most ? k : most;
    }
    return most;
}

static void test_closed_forms(void **state)
{
    (void)state;
    for (int P = 1; P <= 200; P++)
        for (int radix = 2; radix <= 9; radix++) {
            struct pc_bruck_step steps[64];
            int n = pc_bruck_steps(P, radix, steps, 64);
            for (int s = 0; s < n; s++) {
                int k = 0;
                for (int i = 0; i < P; i++) k += pc_bruck_moves(i, radix, &steps[s]);
                assert_int_equal(pc_bruck_moves_count(P, radix, &steps[s]), k);
            }
        }
    for (int P = 1; P <= 130; P++)
        for (int ppn = 1; ppn <= P; ppn++) {
            struct pc_problem p;
            memset(&p, 0, sizeof p);
            p.shape.nranks = P;
            p.shape.max_ppn = ppn;
            p.shape.min_ppn = P % ppn ? P % ppn : ppn;
            p.shape.nnodes = (P + ppn - 1) / ppn;
            p.shape.ranks_by_node = true;
            for (int d = 0; d < P; d++)
                if (pc_cost_offnode_shift(&p, d) != offnode_loop(&p, pc_cost_shift_partner, d))
                    fail_msg("shift %d on P=%d ppn=%d: %d, loop %d", d, P, ppn, pc_cost_offnode_shift(&p, d),
                             offnode_loop(&p, pc_cost_shift_partner, d));
            for (int mask = 1; mask < P; mask *= 2) {
                /* twice: computed, then remembered */
                for (int again = 0; again < 2; again++) {
                    assert_int_equal(pc_cost_offnode_xor(&p, mask), offnode_loop(&p, pc_cost_xor_partner, mask));
                    assert_int_equal(pc_cost_offnode_pairs(&p, pc_cost_xor_partner, mask),
                                     offnode_loop(&p, pc_cost_xor_partner, mask));
                }
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_machine_good),   cmocka_unit_test(test_machine_bad),
        cmocka_unit_test(test_machine_mapping), cmocka_unit_test(test_machine_new_keys),
        cmocka_unit_test(test_signatures),
        cmocka_unit_test(test_problems),       cmocka_unit_test(test_random_maxima),
        cmocka_unit_test(test_prediction_is_the_planners), cmocka_unit_test(test_closed_forms),
        cmocka_unit_test(test_node_aware_beyond_1000_nodes), cmocka_unit_test(test_node_aware_link_bytes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
