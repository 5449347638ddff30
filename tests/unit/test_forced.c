/* PLANCOLL_ALGORITHM with parameters ("alltoall.mpml:leaders=2:placement=numa"), the candidates it produces,
 * and the leader choice of the node-aware alltoall family (first l node ranks, or spread over NUMA domains). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "exec/registry.h"
#include "exec/allreduce/dpml_common.h"
#include "exec/reduce_stream.h"
#include "exec/alltoall/node_aware.h"
#include "shm/leaders.h"
#include "planner/planner.h"

/* The library's algorithms: the table the planner is given in plans. */
static const struct pc_algorithm_table *algs(void) { return pc_registry_table(); }

static struct pc_problem alltoall(int P, int nodes, int min_ppn, int max_ppn, int numa)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = PC_ALLTOALL;
    p.shape = (struct pc_shape){.nranks = P, .nnodes = nodes, .min_ppn = min_ppn, .max_ppn = max_ppn,
                                .numa_domains = numa};
    p.block_bytes = 4096; /* above pc_store_sizes[0]: the staging algorithms offer both store modes */
    p.contiguous = true;
    return p;
}

static void test_parse_params(void **state)
{
    (void)state;
    struct pc_forced f[8];
    int n = -1;
    assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:leaders=2:placement=numa,alltoall.bruck:radix=3", PC_ALLTOALL, f, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(f[0].alg, pc_registry_find("alltoall.mpml"));
    assert_int_equal(f[0].mask, PC_PARAM_LEADERS | PC_PARAM_PLACEMENT);
    assert_int_equal(f[0].params.leaders, 2);
    assert_int_equal(f[0].params.placement, 1);
    assert_int_equal(f[1].mask, PC_PARAM_RADIX);
    assert_int_equal(f[1].params.radix, 3);
    /* depth is the pipeline depth (segments); transport names */
    assert_int_equal(pc_parse_forced(algs(), "alltoall.onmpml:depth=1:transport=put", PC_ALLTOALL, f, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].params.segments, 1);
    assert_int_equal(f[0].params.transport, 1);
    /* the same algorithm twice with different parameters: two entries; identical twice: one */
    assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:leaders=1,alltoall.mpml:leaders=2,alltoall.mpml:leaders=2",
                                     PC_ALLTOALL, f, 8, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 2);
    /* another collective's entry is accepted but not listed */
    assert_int_equal(pc_parse_forced(algs(), "allreduce.native,alltoall.bruck", PC_ALLTOALL, f, 8, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
}

static void test_parse_errors(void **state)
{
    (void)state;
    struct pc_forced f[8];
    int n;
    const char *bad[] = {"alltoall.mpml:leaders", "alltoall.mpml:leaders=-1", "alltoall.mpml:leaders=x",
                         "alltoall.mpml:colour=red", "alltoall.mpml:placement=left", "alltoall.bruck:radix=1",
                         "alltoall.mpml:transport=carrier", "alltoall.nope:leaders=1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(pc_parse_forced(algs(), bad[i], PC_ALLTOALL, f, 8, &n), PLANCOLL_ERR_ALGORITHM);
        assert_non_null(strstr(plancoll_error_detail(), "PLANCOLL_ALGORITHM"));
    }
}

static void test_enumerate_forced(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_problem p = alltoall(8, 2, 4, 4, 2);
    struct pc_forced f[4];
    int nf, n;
    struct pc_candidate c[PC_MAX_CANDIDATES];
    /* a listed variant */
    assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:leaders=2:placement=numa", PC_ALLTOALL, f, 4, &nf), PLANCOLL_SUCCESS);
    assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    /* one store mode per set of the others (the one pc_staging_store_mode offers) */
    assert_int_equal(n, 2); /* both transports: two nodes */
    for (int i = 0; i < n; i++) {
        assert_int_equal(c[i].params.leaders, 2);
        assert_int_equal(c[i].params.placement, 1);
        assert_int_equal(c[i].params.transport, i);
        assert_int_equal(c[i].params.stores, pc_staging_store_mode(&p));
    }
    /* a value no variant lists (3 leaders, 99 leaders): built from the request */
    assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:leaders=3,alltoall.mpml:leaders=99", PC_ALLTOALL, f, 4, &nf),
                     PLANCOLL_SUCCESS);
    assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(c[0].params.leaders, 3);
    assert_int_equal(c[1].params.leaders, 99);
    /* only a fixed field: every variant matching it */
    assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:placement=first", PC_ALLTOALL, f, 4, &nf), PLANCOLL_SUCCESS);
    assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 6); /* leaders 1, 2, 4, each with both transports (in the offered store mode) */
    for (int i = 0; i < n; i++) assert_int_equal(c[i].params.placement, 0);
    /* forced and inapplicable: Bruck on non-contiguous types */
    p.contiguous = false;
    assert_int_equal(pc_parse_forced(algs(), "alltoall.bruck:radix=2", PC_ALLTOALL, f, 4, &nf), PLANCOLL_SUCCESS);
    assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_ERR_INAPPLICABLE);
}

static void test_leaders_used(void **state)
{
    (void)state;
    struct pc_problem p = alltoall(7, 3, 2, 3, 1); /* uneven nodes 3+2+2 */
    assert_int_equal(pc_na_leaders_used(&p, 0), 1);
    assert_int_equal(pc_na_leaders_used(&p, 1), 1);
    assert_int_equal(pc_na_leaders_used(&p, 2), 2);
    assert_int_equal(pc_na_leaders_used(&p, 3), 2); /* clamped to the smallest node */
    assert_int_equal(pc_na_leaders_used(&p, 99), 2);
}

static void test_choose_leaders(void **state)
{
    (void)state;
    int out[8];
    const int two_domains[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    pc_choose_leaders(two_domains, 8, 2, 3, false, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    assert_int_equal(out[2], 2);
    pc_choose_leaders(two_domains, 8, 2, 4, true, out);
    int want[4] = {0, 4, 1, 5};
    for (int j = 0; j < 4; j++) assert_int_equal(out[j], want[j]);
    /* a domain that runs out: the lowest unused rank takes its turn */
    const int lopsided[5] = {0, 0, 0, 0, 1};
    pc_choose_leaders(lopsided, 5, 2, 4, true, out);
    int want2[4] = {0, 4, 1, 2};
    for (int j = 0; j < 4; j++) assert_int_equal(out[j], want2[j]);
    /* interleaved binding (ranks alternate domains) */
    const int alternating[6] = {0, 1, 0, 1, 0, 1};
    pc_choose_leaders(alternating, 6, 2, 2, true, out);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 1);
    /* more leaders than ranks: clamped, every rank once */
    pc_choose_leaders(two_domains, 3, 2, 8, true, out);
    int seen = 0;
    for (int j = 0; j < 3; j++) seen |= 1 << out[j];
    assert_int_equal(seen, 7);
}

/* ---- the hierarchical allreduces: parameters, candidates, applicability ---- */

static struct pc_problem allreduce(int nodes, int ppn, int numa, bool commutative, bool by_node)
{
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = PC_ALLREDUCE;
    p.shape = (struct pc_shape){.nranks = nodes * ppn, .nnodes = nodes, .min_ppn = ppn, .max_ppn = ppn,
                                .numa_domains = numa, .ranks_by_node = by_node};
    p.count = 1000;
    p.elem_bytes = 8;
    p.commutative = commutative;
    p.contiguous = true;
    return p;
}

static int variants_of(const char *name, const struct pc_problem *p, struct pc_params *v)
{
    const struct pc_algorithm *a = pc_registry_get(pc_registry_find(name));
    assert_non_null(a);
    return a->variants(p, v, PC_MAX_VARIANTS);
}

static void test_parse_inter(void **state)
{
    (void)state;
    struct pc_forced f[4];
    int n = -1;
    assert_int_equal(pc_parse_forced(algs(), "allreduce.dpml_pipelined:leaders=3:segments=5:inter=mpi", PC_ALLREDUCE, f, 4, &n),
                     PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(f[0].mask, PC_PARAM_LEADERS | PC_PARAM_SEGMENTS | PC_PARAM_INTER);
    assert_int_equal(f[0].params.inter, PC_DPML_INTER_MPI);
    assert_int_equal(pc_parse_forced(algs(), "allreduce.dpml:inter=rsag", PC_ALLREDUCE, f, 4, &n), PLANCOLL_SUCCESS);
    assert_int_equal(f[0].params.inter, PC_DPML_INTER_RSAG);
    assert_int_equal(pc_parse_forced(algs(), "allreduce.dpml:inter=rd", PC_ALLREDUCE, f, 4, &n), PLANCOLL_SUCCESS);
    assert_int_equal(f[0].params.inter, PC_DPML_INTER_RD);
    assert_int_equal(f[0].mask, PC_PARAM_INTER);
    assert_int_equal(pc_parse_forced(algs(), "allreduce.dpml:inter=ring", PC_ALLREDUCE, f, 4, &n), PLANCOLL_ERR_ALGORITHM);
    assert_non_null(strstr(plancoll_error_detail(), "inter=rd|rsag|mpi"));
    char buf[96];
    const unsigned dpml = PC_PARAM_LEADERS | PC_PARAM_SEGMENTS | PC_PARAM_INTER;
    pc_params_format(&(struct pc_params){.leaders = 2, .segments = 4, .inter = PC_DPML_INTER_MPI}, dpml, buf, sizeof buf);
    assert_string_equal(buf, "leaders=2 segments=4 inter=mpi");
    pc_params_format(&(struct pc_params){.leaders = 2, .inter = PC_DPML_INTER_RD}, dpml, buf, sizeof buf);
    assert_string_equal(buf, "leaders=2 segments=0 inter=rd"); /* the default is named too */
}

static void test_allreduce_variants(void **state)
{
    (void)state;
    struct pc_params v[PC_MAX_VARIANTS];
    /* two nodes of 4 ranks on 2 NUMA domains, commutative op */
    struct pc_problem p = allreduce(2, 4, 2, true, true);
    /* one store mode per set of the others: auto where the build has streaming stores (the mode chosen while the
     * plan runs), else ordinary stores */
    const int S = 1, mode = PC_STREAM_STORES ? PC_STORES_AUTO : PC_STORES_NORMAL;
    assert_int_equal(variants_of("allreduce.leader", &p, v), 3 * S); /* rd, rsag, mpi */
    for (int i = 0; i < 3 * S; i++) {
        assert_int_equal(v[i].leaders, 1);
        assert_int_equal(v[i].inter, i / S);
        assert_int_equal(v[i].stores, mode);
    }
    int n = variants_of("allreduce.dpml", &p, v);
    assert_int_equal(n, 12 * S); /* leaders 2 and 4, first and numa, three inter-node algorithms */
    for (int i = 0; i < n; i++) {
        assert_true(v[i].leaders == 2 || v[i].leaders == 4);
        assert_int_equal(v[i].segments, 0);
    }
    n = variants_of("allreduce.dpml_pipelined", &p, v);
    assert_int_equal(n, 16 * S); /* leaders 2, 4 x placements 2 x rd, mpi x segments 2, 8 */
    for (int i = 0; i < n; i++) {
        assert_true(v[i].segments == 2 || v[i].segments == 8);
        assert_true(v[i].inter != PC_DPML_INTER_RSAG);
    }
    /* non-commutative: no rsag */
    p = allreduce(2, 4, 1, false, true);
    assert_int_equal(variants_of("allreduce.leader", &p, v), 2 * S);
    n = variants_of("allreduce.dpml", &p, v);
    assert_int_equal(n, 4 * S); /* leaders 2, 4 x rd, mpi */
    for (int i = 0; i < n; i++) assert_true(v[i].inter != PC_DPML_INTER_RSAG);
    /* one node: nothing between nodes, one depth */
    p = allreduce(1, 8, 1, true, true);
    assert_int_equal(variants_of("allreduce.leader", &p, v), S);
    assert_int_equal(variants_of("allreduce.dpml", &p, v), 3 * S); /* 2, 4, 8 */
    assert_int_equal(variants_of("allreduce.dpml_pipelined", &p, v), 3 * S);
    /* uneven nodes: up to the smallest, which need not be a power of two */
    p = allreduce(3, 3, 1, true, true);
    n = variants_of("allreduce.dpml", &p, v);
    assert_int_equal(n, 6 * S);
    assert_int_equal(v[n - 1].leaders, 3);
    /* single-rank nodes: one leader only, and no rank shares its areas: ordinary stores only */
    p = allreduce(4, 1, 1, true, true);
    n = variants_of("allreduce.dpml", &p, v);
    for (int i = 0; i < n; i++) assert_int_equal(v[i].leaders, 1);
    for (int i = 0; i < n; i++) assert_int_equal(v[i].stores, PC_STORES_NORMAL);
    /* MPI's op differs from plancoll's for the (op, datatype): MPI does not reduce between the leaders */
    p = allreduce(2, 4, 2, true, true);
    p.mpi_op_differs = true;
    assert_int_equal(variants_of("allreduce.leader", &p, v), 2 * S); /* rd, rsag */
    for (int i = 0; i < 2 * S; i++) assert_int_equal(v[i].inter, i / S);
    n = variants_of("allreduce.dpml", &p, v);
    assert_int_equal(n, 8 * S); /* leaders 2 and 4, first and numa, rd and rsag */
    for (int i = 0; i < n; i++) assert_true(v[i].inter != PC_DPML_INTER_MPI);
    n = variants_of("allreduce.dpml_pipelined", &p, v);
    for (int i = 0; i < n; i++) assert_true(v[i].inter != PC_DPML_INTER_MPI);
}

/* stores=stream forced: parsed, enumerated as exactly that candidate by each hierarchical allreduce, and printed back
 * as the same spec; a bad value is an error that names the choices. */
static void test_stores_spec(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_problem p = allreduce(1, 2, 1, true, true); /* one node of two ranks: 1n2p */
    const char *specs[] = {"allreduce.leader:inter=rd:stores=stream",
                           "allreduce.dpml:leaders=2:placement=first:inter=rd:stores=stream",
                           "allreduce.dpml_pipelined:leaders=2:placement=first:segments=2:inter=rd:stores=stream",
                           "allreduce.dpml:leaders=1:placement=first:inter=rd:stores=normal"};
    for (int i = 0; i < 4; i++) {
        struct pc_forced f[4];
        int nf = 0, n = 0;
        assert_int_equal(pc_parse_forced(algs(), specs[i], PC_ALLREDUCE, f, 4, &nf), PLANCOLL_SUCCESS);
        assert_int_equal(nf, 1);
        assert_true(f[0].mask & PC_PARAM_STORES);
        const int want = i < 3 ? PC_STORES_STREAM : PC_STORES_NORMAL;
        assert_int_equal(f[0].params.stores, want);
        struct pc_candidate c[PC_MAX_CANDIDATES];
        assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        assert_int_equal(n, 1);
        assert_int_equal(c[0].params.stores, want);
        char spec[160];
        pc_spec_format(algs(), c[0].alg, &c[0].params, spec, sizeof spec);
        assert_string_equal(spec, specs[i]);
    }
    struct pc_forced f[4];
    int nf = 0;
    assert_int_equal(pc_parse_forced(algs(), "allreduce.dpml:stores=nt", PC_ALLREDUCE, f, 4, &nf), PLANCOLL_ERR_ALGORITHM);
    assert_non_null(strstr(plancoll_error_detail(), "stores=normal|stream"));
}

/* stores=stream forced on the staging alltoalls (node-aware family, pap, aggregated): parsed, enumerated as exactly
 * that candidate (one of the algorithm's own variants) and printed back as the same spec; the ordinary-stores form
 * likewise. On non-contiguous data the mode is not offered but still forceable (it then runs ordinary stores). */
/* Streaming stores are candidates only for blocks of at least the smallest size calibration prices the store modes
 * at (pc_store_sizes[0]); below it the planner offers ordinary stores alone, and a forced stores=stream still
 * runs as forced. */
static void test_stream_needs_calibrated_size(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    const uint64_t small = (uint64_t)pc_store_sizes[0] - 1, big = (uint64_t)pc_store_sizes[0];
    const char *const names[] = {"alltoall.pap", "alltoall.leader", "alltoall.mpml", "alltoallv.aggregated"};
    for (int large = 0; large < 2; large++) {
        struct pc_problem a2a = alltoall(3, 1, 3, 3, 1);
        a2a.block_bytes = large ? big : small;
        struct pc_problem a2av = a2a;
        a2av.coll = PC_ALLTOALLV;
        a2av.max_block_bytes = a2a.block_bytes;
        a2av.send_total_bytes = a2av.recv_total_bytes = a2av.max_send_bytes = a2av.max_recv_bytes = 2 * a2a.block_bytes;
        a2av.nonzero_sends = a2av.max_nonzero_sends = 2;
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
            const struct pc_problem *p = k == 3 ? &a2av : &a2a;
            const int alg = pc_registry_find(names[k]);
            struct pc_candidate c[PC_MAX_CANDIDATES];
            int n = 0, normal = 0, stream = 0, automatic = 0;
            assert_int_equal(pc_enumerate(algs(), p, &alg, 1, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
            for (int i = 0; i < n; i++) {
                normal += c[i].params.stores == PC_STORES_NORMAL;
                stream += c[i].params.stores == PC_STORES_STREAM;
                automatic += c[i].params.stores == PC_STORES_AUTO;
            }
            /* below the size: ordinary stores only; from it (with streaming stores in the build): auto only */
            const bool both = large && PC_STREAM_STORES;
            if (n == 0 || stream != 0 || (both ? normal != 0 || automatic != n : automatic != 0 || normal != n))
                fail_msg("%s, %llu-byte blocks: %d ordinary-stores, %d streaming and %d auto candidates", names[k],
                         (unsigned long long)p->block_bytes, normal, stream, automatic);
        }
        struct pc_forced f[2];
        int nf = 0, n = 0;
        struct pc_candidate c[PC_MAX_CANDIDATES];
        assert_int_equal(pc_parse_forced(algs(), "alltoall.pap:transport=p2p:stores=stream", PC_ALLTOALL, f, 2, &nf),
                         PLANCOLL_SUCCESS);
        assert_int_equal(pc_enumerate_forced(algs(), &a2a, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        assert_int_equal(n, 1);
        assert_int_equal(c[0].params.stores, PC_STORES_STREAM);
    }
}

static void test_staging_stores_spec(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_problem a2a = alltoall(3, 1, 3, 3, 1); /* one node of three ranks: 1n3p */
    struct pc_problem a2av = a2a;
    a2av.coll = PC_ALLTOALLV;
    a2av.send_total_bytes = a2av.recv_total_bytes = a2av.max_send_bytes = a2av.max_recv_bytes = 4096;
    a2av.max_block_bytes = 2048;
    a2av.nonzero_sends = a2av.max_nonzero_sends = 2;
    const struct {
        const char *spec;
        const struct pc_problem *p;
        int stores;
    } runs[] = {
        {"alltoall.leader:transport=p2p:stores=stream", &a2a, PC_STORES_STREAM},
        {"alltoall.mpml:leaders=1:placement=first:transport=p2p:stores=stream", &a2a, PC_STORES_STREAM},
        {"alltoall.onmpml:leaders=1:placement=first:segments=0:transport=p2p:stores=stream", &a2a, PC_STORES_STREAM},
        {"alltoall.pap:transport=p2p:stores=stream", &a2a, PC_STORES_STREAM},
        {"alltoall.pap:transport=p2p:stores=normal", &a2a, PC_STORES_NORMAL},
        {"alltoallv.aggregated:leaders=0:placement=first:segments=0:transport=p2p:stores=stream", &a2av,
         PC_STORES_STREAM},
        {"alltoall.pap:transport=p2p:stores=auto", &a2a, PC_STORES_AUTO},
        {"alltoall.mpml:leaders=1:placement=first:transport=p2p:stores=auto", &a2a, PC_STORES_AUTO},
        {"alltoallv.aggregated:leaders=0:placement=first:segments=0:transport=p2p:stores=auto", &a2av, PC_STORES_AUTO},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        struct pc_forced f[4];
        int nf = 0, n = 0;
        assert_int_equal(pc_parse_forced(algs(), runs[i].spec, runs[i].p->coll, f, 4, &nf), PLANCOLL_SUCCESS);
        assert_int_equal(nf, 1);
        assert_true(f[0].mask & PC_PARAM_STORES);
        assert_int_equal(f[0].params.stores, runs[i].stores);
        struct pc_candidate c[PC_MAX_CANDIDATES];
        assert_int_equal(pc_enumerate_forced(algs(), runs[i].p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        assert_int_equal(n, 1);
        assert_int_equal(c[0].params.stores, runs[i].stores);
        char spec[160];
        pc_spec_format(algs(), c[0].alg, &c[0].params, spec, sizeof spec);
        if (strcmp(spec, runs[i].spec) != 0) fail_msg("forced %s, printed back as %s", runs[i].spec, spec);
        /* an offered variant, not one built from the request (where the build has streaming stores) */
        struct pc_params v[PC_MAX_VARIANTS];
        int nv = variants_of(pc_registry_get(c[0].alg)->name, runs[i].p, v), listed = 0;
        for (int k = 0; k < nv; k++) listed += memcmp(&v[k], &c[0].params, sizeof v[k]) == 0;
        /* the one mode offered: auto where the build has streaming stores, else ordinary; the others are forced */
        const int offered = PC_STREAM_STORES ? PC_STORES_AUTO : PC_STORES_NORMAL;
        assert_int_equal(listed, runs[i].stores == offered ? 1 : 0);
    }
    /* non-contiguous: only ordinary stores offered; stream forced all the same */
    struct pc_problem nc = a2a;
    nc.contiguous = false;
    struct pc_params v[PC_MAX_VARIANTS];
    int nv = variants_of("alltoall.pap", &nc, v);
    for (int k = 0; k < nv; k++) assert_int_equal(v[k].stores, PC_STORES_NORMAL);
    struct pc_forced f[4];
    struct pc_candidate c[PC_MAX_CANDIDATES];
    int nf = 0, n = 0;
    assert_int_equal(pc_parse_forced(algs(), "alltoall.pap:stores=stream", PC_ALLTOALL, f, 4, &nf), PLANCOLL_SUCCESS);
    assert_int_equal(pc_enumerate_forced(algs(), &nc, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(c[0].params.stores, PC_STORES_STREAM);
}

static void test_allreduce_applicability(void **state)
{
    (void)state;
    const char *names[] = {"allreduce.leader", "allreduce.dpml", "allreduce.dpml_pipelined"};
    for (int i = 0; i < 3; i++) {
        const struct pc_algorithm *a = pc_registry_get(pc_registry_find(names[i]));
        struct pc_problem p = allreduce(2, 4, 1, false, false);
        assert_non_null(a->inapplicable(&p)); /* nodes interleaved: node by node would reorder operands */
        p = allreduce(2, 4, 1, false, true);
        assert_null(a->inapplicable(&p));
        p = allreduce(1, 8, 1, false, true);
        p.shape.ranks_by_node = false; /* one node is always in rank order */
        assert_null(a->inapplicable(&p));
        p = allreduce(2, 4, 1, true, false);
        assert_null(a->inapplicable(&p)); /* commutative: any layout */
    }
    /* MPI's own collective only where MPI's op is plancoll's (reduce.c); the hierarchical ones stay */
    const struct pc_algorithm *native = pc_registry_get(pc_registry_find("allreduce.native"));
    struct pc_problem p = allreduce(2, 4, 1, true, true);
    assert_null(native->inapplicable(&p));
    p.mpi_op_differs = true;
    assert_non_null(strstr(native->inapplicable(&p), "MPI's own op"));
    for (int i = 0; i < 3; i++) assert_null(pc_registry_get(pc_registry_find(names[i]))->inapplicable(&p));
    p = allreduce(7, 1, 1, true, true);
    assert_int_equal(pc_dpml_leaders_used(&p, 4), 1);
    p = allreduce(2, 4, 1, true, true);
    p.shape.min_ppn = 3;
    assert_int_equal(pc_dpml_leaders_used(&p, 99), 3);
    assert_int_equal(pc_dpml_leaders_used(&p, 0), 1);
}

/* Every candidate of every collective, at one-node, two-node, uneven three-node and NUMA layouts, with and without
 * oversubscription: its spec forced again enumerates exactly that candidate (same algorithm, same parameters). A
 * spec that left out a default (inter=rd, transport=p2p, placement=first, segments=0, leaders=0) would leave that
 * parameter open and the forced plan could differ. */
static void test_spec_round_trip(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    struct pc_problem problems[48];
    int np = 0;
    const int layouts[][5] = {/* nodes, min_ppn, max_ppn, numa, P */
                              {1, 1, 1, 1, 1}, {1, 3, 3, 1, 3},  {1, 8, 8, 2, 8}, {2, 2, 2, 1, 4},
                              {2, 4, 4, 2, 8}, {3, 2, 3, 1, 7},  {3, 2, 3, 2, 8}, {4, 16, 16, 4, 64}};
    for (size_t l = 0; l < sizeof layouts / sizeof layouts[0]; l++)
        for (int over = 0; over < 2; over++) {
            struct pc_shape sh = {.nranks = layouts[l][4], .nnodes = layouts[l][0], .min_ppn = layouts[l][1],
                                  .max_ppn = layouts[l][2], .numa_domains = layouts[l][3], .oversubscribed = over};
            struct pc_problem a2a = alltoall(sh.nranks, sh.nnodes, sh.min_ppn, sh.max_ppn, sh.numa_domains);
            a2a.shape = sh;
            struct pc_problem a2av = a2a;
            a2av.coll = PC_ALLTOALLV;
            a2av.send_total_bytes = a2av.recv_total_bytes = a2av.max_send_bytes = a2av.max_recv_bytes = 4096;
            a2av.max_offnode_bytes = sh.nnodes > 1 ? 2048 : 0;
            a2av.max_block_bytes = 512;
            a2av.nonzero_sends = a2av.max_nonzero_sends = sh.nranks;
            struct pc_problem ar = allreduce(1, 1, 1, true, true);
            ar.shape = sh;
            problems[np++] = a2a;
            problems[np++] = a2av;
            problems[np++] = ar;
        }
    int checked = 0;
    for (int i = 0; i < np; i++) {
        struct pc_candidate c[PC_MAX_CANDIDATES], again[PC_MAX_CANDIDATES];
        int n = 0;
        assert_int_equal(pc_enumerate(algs(), &problems[i], NULL, 0, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        for (int k = 0; k < n; k++) {
            char spec[160];
            int len = pc_spec_format(algs(), c[k].alg, &c[k].params, spec, sizeof spec);
            assert_true(len > 0 && (size_t)len < sizeof spec);
            struct pc_forced f[4];
            int nf = 0, n2 = 0;
            assert_int_equal(pc_parse_forced(algs(), spec, problems[i].coll, f, 4, &nf), PLANCOLL_SUCCESS);
            assert_int_equal(nf, 1);
            assert_int_equal(pc_enumerate_forced(algs(), &problems[i], f, nf, &m, again, PC_MAX_CANDIDATES, &n2), PLANCOLL_SUCCESS);
            if (n2 != 1 || again[0].alg != c[k].alg || memcmp(&again[0].params, &c[k].params, sizeof c[k].params) != 0)
                fail_msg("problem %d: spec \"%s\" forced gives %d candidates, not the one it names", i, spec, n2);
            char spec2[160];
            pc_spec_format(algs(), again[0].alg, &again[0].params, spec2, sizeof spec2);
            assert_string_equal(spec, spec2);
            checked++;
        }
    }
    assert_true(checked > 200);
}

/* On an oversubscribed host, and for a plan that will be started (PLANCOLL_NONBLOCKING: the flush that completes
 * the puts waits inside MPI_Win_flush, MPI-3 has no nonblocking one), the MPI_Put transport is not a candidate of
 * the node-aware alltoall family (its flush spins in MPI while the target waits for a core), but it can still be
 * forced. */
static void test_put_not_offered_oversubscribed(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    const char *names[] = {"alltoall.leader", "alltoall.mpml", "alltoall.onmpml", "alltoall.pap"};
    for (int why = 0; why < 3; why++) { /* none, oversubscribed, nonblocking */
        int over = why == 1;
        struct pc_problem p = alltoall(8, 2, 4, 4, 1);
        p.shape.oversubscribed = over;
        if (why == 2) p.flags |= PLANCOLL_NONBLOCKING;
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
            struct pc_params v[PC_MAX_VARIANTS];
            int nv = variants_of(names[i], &p, v), puts = 0;
            for (int k = 0; k < nv; k++) puts += v[k].transport == 1;
            if (why ? puts != 0 : puts == 0) fail_msg("%s: %d put variants (case %d)", names[i], puts, why);
        }
        struct pc_forced f[2];
        struct pc_candidate c[PC_MAX_CANDIDATES];
        int nf, n;
        assert_int_equal(pc_parse_forced(algs(), "alltoall.mpml:leaders=2:transport=put", PC_ALLTOALL, f, 2, &nf), PLANCOLL_SUCCESS);
        assert_int_equal(pc_enumerate_forced(algs(), &p, f, nf, &m, c, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        /* offered, or else built from the request on the first variant: in the offered store mode either way */
        assert_int_equal(n, 1);
        assert_int_equal(c[0].params.transport, 1);
        assert_int_equal(c[0].params.leaders, 2);
        assert_int_equal(c[0].params.stores, pc_staging_store_mode(&p));
    }
}

/* Run-ahead (base/algorithm.h runs_ahead): MPI's alltoallv leaves a rank that sends to peers sending nothing back
 * waiting for no one, so MEASURE must time it over a long loop on such patterns and only there; plancoll's own
 * algorithms bound it (synchronous sends), so none of them declares it: only MPI's two forms do. */
static void test_runs_ahead(void **state)
{
    (void)state;
    struct pc_problem p;
    memset(&p, 0, sizeof p);
    p.coll = PC_ALLTOALLV;
    p.shape = (struct pc_shape){.nranks = 4, .nnodes = 1, .min_ppn = 4, .max_ppn = 4, .numa_domains = 1};
    const struct pc_algorithm *native = pc_registry_get(pc_registry_find("alltoallv.native"));
    assert_non_null(native->runs_ahead);
    assert_false(native->runs_ahead(&p));
    p.one_way = true;
    assert_true(native->runs_ahead(&p));
    int declared = 0;
    for (int i = 0; i < pc_registry_count(); i++) {
        const struct pc_algorithm *a = pc_registry_get(i);
        if (!a->runs_ahead) continue;
        declared++;
        assert_true(strcmp(a->name, "alltoallv.native") == 0 || strcmp(a->name, "alltoallv.native_blocking") == 0);
    }
    assert_int_equal(declared, 2);
}


/* MPI's own collective in its two forms (exec/native_request.h): the blocking form has the persistent form's cost,
 * so ESTIMATE keeps alltoall.native (earlier in the registry) on the tie and only MEASURE can take the blocking
 * one; the blocking form is left out where its wait would spin on a shared core (oversubscribed) and for plans
 * that will be started or overlapped (they run the persistent form, which the native candidate already is). */
static void test_native_blocking_forms(void **state)
{
    (void)state;
    struct pc_machine_model m;
    pc_default_model(&m);
    const char *forms[][2] = {{"alltoall.native", "alltoall.native_blocking"},
                              {"alltoallv.native", "alltoallv.native_blocking"},
                              {"allreduce.native", "allreduce.native_blocking"}};
    const enum pc_collective colls[] = {PC_ALLTOALL, PC_ALLTOALLV, PC_ALLREDUCE};
    for (int c = 0; c < 3; c++) {
        struct pc_problem p = alltoall(2, 1, 2, 2, 1);
        p.coll = colls[c];
        p.count = 1000;
        p.elem_bytes = 8;
        p.commutative = true;
        int idx[2] = {pc_registry_find(forms[c][0]), pc_registry_find(forms[c][1])};
        assert_true(idx[0] >= 0 && idx[1] > idx[0]);
        const struct pc_algorithm *native = pc_registry_get(idx[0]), *blocking = pc_registry_get(idx[1]);
        assert_int_equal(blocking->collective, colls[c]);
        assert_null(pc_algorithm_refuses(blocking, &p));
        struct pc_params none = {0};
        assert_true(blocking->estimate(&p, &none, &m) == native->estimate(&p, &none, &m));
        struct pc_candidate cand[PC_MAX_CANDIDATES];
        int n;
        assert_int_equal(pc_enumerate(algs(), &p, idx, 2, &m, cand, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
        assert_int_equal(n, 2);
        struct pc_decision d;
        assert_int_equal(pc_choose(algs(), &p, cand, n, false, NULL, NULL, &d), PLANCOLL_SUCCESS);
        assert_int_equal(d.chosen.alg, idx[0]);
        /* not offered when oversubscribed, started or overlapped (the persistent form stays); forced, it runs */
        for (int why = 0; why < 3; why++) {
            struct pc_problem q = p;
            if (why == 0) q.shape.oversubscribed = true;
            if (why == 1) q.flags |= PLANCOLL_NONBLOCKING;
            if (why == 2) q.flags |= PLANCOLL_OVERLAP;
            assert_int_equal(pc_enumerate(algs(), &q, idx, 2, &m, cand, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
            if (n != 1 || cand[0].alg != idx[0]) fail_msg("%s offered in case %d (%d candidates)", forms[c][1], why, n);
            struct pc_forced f[2];
            int nf;
            assert_int_equal(pc_parse_forced(algs(), forms[c][1], colls[c], f, 2, &nf), PLANCOLL_SUCCESS);
            assert_int_equal(pc_enumerate_forced(algs(), &q, f, nf, &m, cand, PC_MAX_CANDIDATES, &n), PLANCOLL_SUCCESS);
            assert_int_equal(n, 1);
            assert_int_equal(cand[0].alg, idx[1]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_inter),
        cmocka_unit_test(test_native_blocking_forms),
        cmocka_unit_test(test_allreduce_variants),
        cmocka_unit_test(test_stores_spec),
        cmocka_unit_test(test_staging_stores_spec),
        cmocka_unit_test(test_stream_needs_calibrated_size),
        cmocka_unit_test(test_allreduce_applicability),
        cmocka_unit_test(test_parse_params),   cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_enumerate_forced), cmocka_unit_test(test_leaders_used),
        cmocka_unit_test(test_choose_leaders),
        cmocka_unit_test(test_spec_round_trip), cmocka_unit_test(test_put_not_offered_oversubscribed),
        cmocka_unit_test(test_runs_ahead),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
