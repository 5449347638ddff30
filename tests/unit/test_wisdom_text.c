/* The wisdom text (src/planner/wisdom_text.c): format and parse round trip, every kind of malformed input
 * rejected with its code and a message naming the line, fingerprint comparison, merging rules. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner/wisdom_text.h"
#include "plancoll.h"

static struct pc_wisdom_entry rec(const char *key, const char *alg, unsigned rigor, double us, long long when)
{
    struct pc_wisdom_entry e;
    memset(&e, 0, sizeof e);
    snprintf(e.key, sizeof e.key, "%s", key);
    snprintf(e.algorithm, sizeof e.algorithm, "%s", alg);
    e.measured_us = us;
    e.rigor = rigor;
    e.decided_at = when;
    return e;
}

static void sample_fp(struct pc_wisdom_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    snprintf(fp->plancoll, sizeof fp->plancoll, "0.1.0");
    fp->registry = UINT64_C(0x0123456789abcdef);
    snprintf(fp->mpi_library, sizeof fp->mpi_library, "MPICH Version: 4.0.2");
    fp->mpi_build = UINT64_C(0xfedcba9876543210);
    snprintf(fp->topology, sizeof fp->topology, "packages=1 cores=2 pus=2 numa=1 cpu=AMD EPYC");
    snprintf(fp->layout, sizeof fp->layout, "P=8 nodes=3 ppn=2-3");
}

/* A set with two models and three records (one with every field set, in an order that is not sorted). */
static void sample_set(struct pc_wisdom_set *s)
{
    pc_wisdom_set_init(s);
    sample_fp(&s->fp);
    struct pc_wisdom_entry e[3];
    e[0] = rec("allreduce:P=4:nodes=1:ppn=4-4:count=1024:elem=8:type=3:op=2:comm=1", "allreduce.dpml",
               PLANCOLL_PATIENT, 12.345678901234567, 1718000000);
    e[0].params = (struct pc_params){.leaders = 2, .inter = 1}; /* inter=rsag: a record that dropped it gave rd */
    e[1] = rec("alltoall:P=8:nodes=2:ppn=4-4:block=1024:inplace=0", "alltoall.mpml", PLANCOLL_EXHAUSTIVE, 1e-3, 1);
    e[1].params = (struct pc_params){.leaders = 2, .placement = 1, .segments = 3, .transport = 1, .radix = 4};
    snprintf(e[1].runner_up, sizeof e[1].runner_up, "alltoall.pairwise");
    e[1].runner_up_us = 1.0 / 3.0;
    e[2] = rec("alltoallv:P=3:nodes=1:ppn=3-3:pattern=00000000deadbeef:inplace=1", "alltoallv.native", PLANCOLL_MEASURE,
               0, 0);
    struct pc_machine_model m[2];
    pc_model_default(&m[0]);
    snprintf(m[0].shape, sizeof m[0].shape, "P=8:N=2:ppn=4-4:oversub=1");
    m[0].calibrated = true;
    m[0].calibration_seconds = 2.5;
    m[0].net_ports = 3;
    m[0].net_time[2][4] = 123.5;
    m[0].reduce_us_per_b[2][7] = 0.000123;
    pc_model_derive(&m[0], 2);
    pc_model_default(&m[1]);
    snprintf(m[1].shape, sizeof m[1].shape, "P=3:N=1:ppn=3-3:oversub=1");
    pc_model_derive(&m[1], 1);
    assert_int_equal(pc_wisdom_set_fill(s, e, 3, m, 2), PLANCOLL_SUCCESS);
}

static char *format_or_fail(const struct pc_wisdom_set *s)
{
    char *text = NULL;
    size_t len = 0;
    assert_int_equal(pc_wisdom_format(s, &text, &len), PLANCOLL_SUCCESS);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

static void test_round_trip(void **state)
{
    (void)state;
    struct pc_wisdom_set a, b;
    sample_set(&a);
    char *t1 = format_or_fail(&a);
    char err[256] = "x";
    assert_int_equal(pc_wisdom_parse(t1, strlen(t1), &b, err, sizeof err), PLANCOLL_SUCCESS);
    assert_string_equal(err, "");
    assert_string_equal(b.fp.plancoll, "0.1.0");
    assert_true(b.fp.registry == a.fp.registry);
    assert_true(b.fp.mpi_build == a.fp.mpi_build);
    assert_string_equal(b.fp.mpi_library, a.fp.mpi_library);
    assert_string_equal(b.fp.topology, a.fp.topology);
    assert_string_equal(b.fp.layout, a.fp.layout);
    assert_int_equal(b.nrecords, 3);
    /* sorted by key: allreduce < alltoall < alltoallv */
    assert_string_equal(b.records[0].algorithm, "allreduce.dpml");
    assert_int_equal(b.records[0].params.leaders, 2);
    assert_int_equal(b.records[0].params.inter, 1);
    assert_string_equal(b.records[1].algorithm, "alltoall.mpml");
    assert_string_equal(b.records[2].algorithm, "alltoallv.native");
    /* exact numbers */
    assert_true(b.records[0].measured_us == 12.345678901234567);
    assert_true(b.records[0].rigor == PLANCOLL_PATIENT);
    assert_true(b.records[0].decided_at == 1718000000);
    assert_string_equal(b.records[0].runner_up, "");
    const struct pc_wisdom_entry *m = &b.records[1];
    assert_true(m->measured_us == 1e-3);
    assert_true(m->rigor == PLANCOLL_EXHAUSTIVE);
    assert_int_equal(m->params.leaders, 2);
    assert_int_equal(m->params.placement, 1);
    assert_int_equal(m->params.segments, 3);
    assert_int_equal(m->params.transport, 1);
    assert_int_equal(m->params.radix, 4);
    assert_string_equal(m->runner_up, "alltoall.pairwise");
    assert_true(m->runner_up_us == 1.0 / 3.0);
    assert_true(b.records[2].rigor == PLANCOLL_MEASURE);
    assert_true(b.records[2].measured_us == 0);
    /* models, with the summary numbers derived again for their node count */
    assert_int_equal(b.nmodels, 2);
    assert_string_equal(b.models[0].shape, "P=8:N=2:ppn=4-4:oversub=1");
    assert_true(b.models[0].calibrated);
    assert_int_equal(b.models[0].net_ports, 3);
    assert_true(b.models[0].net_time[2][4] == 123.5);
    assert_true(b.models[0].reduce_us_per_b[2][7] == 0.000123);
    assert_true(b.models[0].L_us == a.models[0].L_us);
    assert_true(b.models[0].alpha_us == a.models[0].alpha_us);
    assert_true(b.models[0].gamma_us_per_b == a.models[0].gamma_us_per_b);
    assert_true(b.models[1].alpha_us == a.models[1].alpha_us); /* one node: the node's start-up */
    assert_true(b.models[1].alpha_us == b.models[1].shm_alpha_us);
    assert_true(b.models[1].shm_time[1][1][6] == a.models[1].shm_time[1][1][6]);
    /* formatting what was parsed gives the same text */
    char *t2 = format_or_fail(&b);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    pc_wisdom_set_free(&a);
    pc_wisdom_set_free(&b);
    assert_null(b.records);
    assert_int_equal(b.nrecords, 0);
}

static void test_empty_set_and_lenient_layout(void **state)
{
    (void)state;
    struct pc_wisdom_set a, b;
    pc_wisdom_set_init(&a);
    sample_fp(&a.fp);
    char *t = format_or_fail(&a);
    char err[256];
    assert_int_equal(pc_wisdom_parse(t, strlen(t), &b, err, sizeof err), PLANCOLL_SUCCESS);
    assert_int_equal(b.nrecords, 0);
    assert_int_equal(b.nmodels, 0);
    pc_wisdom_set_free(&b);
    free(t);
    /* CRLF line ends, comments, blank lines, runs of blanks and tabs */
    const char *lenient =
        "plancoll-wisdom 1\r\n"
        "# made by hand\r\n"
        "plancoll 0.1.0\r\n"
        "registry 0123456789ABCDEF\r\n"
        "mpi_library   MPICH \t Version:  4.0.2  \r\n"
        "mpi_build fedcba9876543210\r\n"
        "topology packages=1 cores=2 pus=2 numa=1 cpu=AMD EPYC\r\n"
        "layout P=8 nodes=3 ppn=2-3\r\n"
        "\r\n"
        "   # indented comment\n"
        "begin model\n"
        "  # a comment inside a model\n"
        "shape P=2:N=1:ppn=2-2:oversub=0\n"
        "sync 0.25\n"
        "end   model\n"
        "record\talltoall:P=2:nodes=1:ppn=2-2:block=8:inplace=0 alltoall.pairwise   us=3 rigor=measure\n"
        "end\n"
        "\n# trailing comment\n";
    assert_int_equal(pc_wisdom_parse(lenient, strlen(lenient), &b, err, sizeof err), PLANCOLL_SUCCESS);
    assert_string_equal(b.fp.mpi_library, "MPICH Version: 4.0.2");
    assert_true(b.fp.registry == UINT64_C(0x0123456789abcdef));
    assert_int_equal(b.nrecords, 1);
    assert_int_equal(b.records[0].params.leaders, 0); /* omitted parameters are 0 */
    assert_true(b.records[0].decided_at == 0);
    assert_int_equal(b.nmodels, 1);
    assert_true(b.models[0].sync_us == 0.25);
    pc_wisdom_set_free(&b);
}

/* A valid text with one line replaced, inserted or removed. */
static char *edit(const char *base, const char *find, const char *replace)
{
    const char *at = strstr(base, find);
    assert_non_null(at);
    size_t n = strlen(base) - strlen(find) + strlen(replace) + 1;
    char *out = malloc(n);
    size_t pre = (size_t)(at - base);
    memcpy(out, base, pre);
    strcpy(out + pre, replace);
    strcat(out, at + strlen(find));
    return out;
}

#define HEADER                                                                                              \
    "plancoll-wisdom 1\nplancoll 0.1.0\nregistry 0123456789abcdef\nmpi_library MPICH\nmpi_build "              \
    "fedcba9876543210\n# comment\ntopology packages=1\n\nlayout P=1\n"

struct bad_case {
    const char *find, *replace; /* edit of the valid text; find NULL: replace is the whole text */
    int code;
    const char *message; /* a part of the expected message */
};

static void test_malformed(void **state)
{
    (void)state;
    struct pc_wisdom_set a;
    sample_set(&a);
    char *good = format_or_fail(&a);
    pc_wisdom_set_free(&a);
    const char *rec1 = "record alltoallv:P=3:nodes=1:ppn=3-3:pattern=00000000deadbeef:inplace=1 alltoallv.native";
    const struct bad_case cases[] = {
        {NULL, "", PLANCOLL_ERR_WISDOM_FORMAT, "empty"},
        {NULL, "hello world\n", PLANCOLL_ERR_WISDOM_FORMAT, "line 1: not a plancoll wisdom text"},
        {NULL, "plancoll-wisdom\n", PLANCOLL_ERR_WISDOM_FORMAT, "not a plancoll wisdom text"},
        {NULL, "plancoll-wisdom one\n", PLANCOLL_ERR_WISDOM_FORMAT, "not a plancoll wisdom text"},
        {"plancoll-wisdom 1\n", "plancoll-wisdom 2\n", PLANCOLL_ERR_WISDOM_STALE, "version 2"},
        {"end\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "without the closing 'end'"},
        {"end\n", "end\nrecord x y\n", PLANCOLL_ERR_WISDOM_FORMAT, "after the closing 'end'"},
        {"end\n", "end now\n", PLANCOLL_ERR_WISDOM_FORMAT, "'end' takes nothing"},
        {"registry 0123456789abcdef\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "'registry' missing"},
        {"layout P=8 nodes=3 ppn=2-3\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "'layout' missing"},
        {"registry 0123456789abcdef\n", "registry 0123456789abcdef\nregistry 0123456789abcdef\n",
         PLANCOLL_ERR_WISDOM_FORMAT, "given twice"},
        {"registry 0123456789abcdef\n", "registry 0123456789abcdeg\n", PLANCOLL_ERR_WISDOM_FORMAT, "16 hex digits"},
        {"registry 0123456789abcdef\n", "registry 123\n", PLANCOLL_ERR_WISDOM_FORMAT, "16 hex digits"},
        {"mpi_build fedcba9876543210\n", "mpi_build\n", PLANCOLL_ERR_WISDOM_FORMAT, "without a value"},
        {"end\n", "topology other\nend\n", PLANCOLL_ERR_WISDOM_FORMAT, "after the first model or record"},
        {"end\n", "colour blue\nend\n", PLANCOLL_ERR_WISDOM_FORMAT, "unknown line 'colour'"},
        {"us=0 ", "", PLANCOLL_ERR_WISDOM_FORMAT, "without us="},
        {"rigor=measure", "rigor=quick", PLANCOLL_ERR_WISDOM_FORMAT, "rigor has a bad value"},
        {"rigor=measure ", "", PLANCOLL_ERR_WISDOM_FORMAT, "without rigor="},
        {"us=0 ", "us=-1 ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us=nan ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us=inf ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us=1e300 ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us=12abc ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us= ", PLANCOLL_ERR_WISDOM_FORMAT, "us has a bad value"},
        {"us=0 ", "us=0 us=1 ", PLANCOLL_ERR_WISDOM_FORMAT, "given twice"},
        {"us=0 ", "us=0 colour=blue ", PLANCOLL_ERR_WISDOM_FORMAT, "unknown record field 'colour'"},
        {"us=0 ", "us=0 loose ", PLANCOLL_ERR_WISDOM_FORMAT, "not field=value"},
        {"leaders=2", "leaders=-2", PLANCOLL_ERR_WISDOM_FORMAT, "leaders has a bad value"},
        {"leaders=2", "leaders=99999999999", PLANCOLL_ERR_WISDOM_FORMAT, "leaders has a bad value"},
        {"placement=1", "placement=2", PLANCOLL_ERR_WISDOM_FORMAT, "placement has a bad value"},
        {"decided=1718000000", "decided=-5", PLANCOLL_ERR_WISDOM_FORMAT, "decided has a bad value"},
        {" runner_up_us=", " x=", PLANCOLL_ERR_WISDOM_FORMAT, "unknown record field 'x'"},
        {" runner_up=alltoall.pairwise", "", PLANCOLL_ERR_WISDOM_FORMAT, "go together"},
        {"runner_up=alltoall.pairwise", "runner_up=Alltoall", PLANCOLL_ERR_WISDOM_FORMAT, "runner_up has a bad value"},
        {NULL, HEADER "record alltoallv:P=3\nend\n", PLANCOLL_ERR_WISDOM_FORMAT, "line 10: a record needs a problem key and an algorithm"},
        {rec1, "record reduce:P=3:x alltoallv.native", PLANCOLL_ERR_WISDOM_FORMAT, "is not a problem key"},
        {rec1, "record alltoallv:P=3 Alltoallv.Native", PLANCOLL_ERR_WISDOM_FORMAT, "is not an algorithm name"},
        {NULL, HEADER "record alltoallv:P=3 alltoallv.native us=1 rigor=measure\n# between\n"
                      "record alltoallv:P=3 alltoall.native us=1 rigor=measure\nend\n",
         PLANCOLL_ERR_WISDOM_FORMAT, "line 12: a second record for alltoallv:P=3"},
        {"end model\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "inside a model block"},
        {"begin model\n", "begin model please\n", PLANCOLL_ERR_WISDOM_FORMAT, "expected 'begin model'"},
        {"shape P=8:N=2:ppn=4-4:oversub=1\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "model block without a shape"},
        {"shape P=3:N=1:ppn=3-3:oversub=1\n", "shape P=8:N=2:ppn=4-4:oversub=1\n", PLANCOLL_ERR_WISDOM_FORMAT,
         "a second model for shape"},
        {"sync ", "sync -1 ", PLANCOLL_ERR_WISDOM_FORMAT, "model: malformed model line 'sync"},
        {"sync ", "speed ", PLANCOLL_ERR_WISDOM_FORMAT, "model: unknown model key 'speed'"},
        {"net 1 ", "net 9 ", PLANCOLL_ERR_WISDOM_FORMAT, "model: malformed"},
        {"loggp ", "loggp 1 2\nloggp ", PLANCOLL_ERR_WISDOM_FORMAT, "model: malformed model line 'loggp"},
        {"begin model\n", "begin model\nbegin model\n", PLANCOLL_ERR_WISDOM_FORMAT, "'begin' inside a model block"},
        {NULL, HEADER "begin model\nshape x\n", PLANCOLL_ERR_WISDOM_FORMAT, "line 12: the text ends inside a model block"},
        {NULL, HEADER "record alltoall:k alltoall.native us=1 rigor=measure\n", PLANCOLL_ERR_WISDOM_FORMAT,
         "line 11: the text ends without the closing 'end'"},
        {NULL, HEADER "end\n", PLANCOLL_SUCCESS, ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct bad_case *c = &cases[i];
        char *text = c->find ? edit(good, c->find, c->replace) : strdup(c->replace);
        size_t len = strlen(text);
        struct pc_wisdom_set s;
        char err[256] = "";
        int rc = pc_wisdom_parse(text, len, &s, err, sizeof err);
        if (rc != c->code || !strstr(err, c->message))
            fail_msg("case %zu (%s -> %.40s): code %d, message '%s'; expected %d with '%s'", i, c->find ? c->find : "-",
                     c->replace, rc, err, c->code, c->message);
        if (rc == PLANCOLL_SUCCESS) {
            pc_wisdom_set_free(&s);
            free(text);
            continue;
        }
        /* nothing is left behind in the output set on failure */
        assert_null(s.records);
        assert_null(s.models);
        assert_int_equal(s.nrecords, 0);
        if (c->find && strstr(c->message, "line") == NULL && c->code == PLANCOLL_ERR_WISDOM_FORMAT)
            assert_true(strncmp(err, "line ", 5) == 0);
        free(text);
    }
    struct pc_wisdom_set s;
    char err[256] = "";
    /* an embedded NUL byte: the length says the text goes on */
    char *nul = edit(good, "plancoll 0.1.0\n", "plancoll 0.1.0\nZ\n");
    size_t nul_len = strlen(nul);
    *strchr(nul, 'Z') = '\0';
    assert_int_equal(pc_wisdom_parse(nul, nul_len, &s, err, sizeof err), PLANCOLL_ERR_WISDOM_FORMAT);
    assert_string_equal(err, "line 3: a NUL byte: this is not a text file");
    free(nul);
    /* a line longer than the limit (even a comment) */
    char *long_line = malloc(PC_WISDOM_MAX_LINE + 64);
    memset(long_line, 'x', PC_WISDOM_MAX_LINE + 62);
    memcpy(long_line, "# ", 2);
    memcpy(long_line + PC_WISDOM_MAX_LINE + 62, "\n", 2);
    char *longer = edit(good, "plancoll 0.1.0\n", long_line);
    assert_int_equal(pc_wisdom_parse(longer, strlen(longer), &s, err, sizeof err), PLANCOLL_ERR_WISDOM_FORMAT);
    assert_non_null(strstr(err, "line 2: longer than"));
    free(longer);
    free(long_line);
    /* a NULL text, and a length beyond the limit, are refused before reading */
    assert_int_equal(pc_wisdom_parse(NULL, 0, &s, err, sizeof err), PLANCOLL_ERR_WISDOM_FORMAT);
    assert_true(err[0] != '\0');
    assert_int_equal(pc_wisdom_parse(good, (size_t)PC_WISDOM_MAX_BYTES + 1, &s, err, sizeof err),
                     PLANCOLL_ERR_WISDOM_FORMAT);
    assert_non_null(strstr(err, "larger than"));
    /* a tiny error buffer is safe */
    char tiny[4];
    assert_int_equal(pc_wisdom_parse("junk", 4, &s, tiny, sizeof tiny), PLANCOLL_ERR_WISDOM_FORMAT);
    assert_int_equal(strlen(tiny), 3);
    assert_int_equal(pc_wisdom_parse("junk", 4, &s, NULL, 0), PLANCOLL_ERR_WISDOM_FORMAT);
    free(good);
}

static void test_fingerprint(void **state)
{
    (void)state;
    struct pc_wisdom_fingerprint here, file;
    sample_fp(&here);
    char err[256];
    file = here;
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_SUCCESS);
    /* informational fields do not matter */
    snprintf(file.plancoll, sizeof file.plancoll, "9.9.9");
    snprintf(file.layout, sizeof file.layout, "P=1024 nodes=64 ppn=16-16");
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_SUCCESS);
    file = here;
    file.registry ^= 1;
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_ERR_WISDOM_STALE);
    assert_non_null(strstr(err, "registry signature 0123456789abcdee"));
    file = here;
    snprintf(file.mpi_library, sizeof file.mpi_library, "Open MPI v4.1.4");
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_ERR_WISDOM_STALE);
    assert_non_null(strstr(err, "another MPI library ('Open MPI v4.1.4'"));
    file = here;
    file.mpi_build++;
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_ERR_WISDOM_STALE);
    assert_non_null(strstr(err, "another build of MPICH"));
    file = here;
    snprintf(file.topology, sizeof file.topology, "packages=2 cores=64 pus=128 numa=8");
    assert_int_equal(pc_wisdom_fingerprint_compare(&file, &here, err, sizeof err), PLANCOLL_ERR_WISDOM_STALE);
    assert_non_null(strstr(err, "another machine"));
    assert_non_null(strstr(err, "numa=8"));
}

static void test_merge(void **state)
{
    (void)state;
    struct pc_wisdom_set a, b;
    pc_wisdom_set_init(&a);
    pc_wisdom_set_init(&b);
    struct pc_wisdom_entry ea[] = {
        rec("alltoall:k1", "alltoall.pairwise", PLANCOLL_PATIENT, 1, 100),   /* b has measure: a keeps it */
        rec("alltoall:k2", "alltoall.pairwise", PLANCOLL_MEASURE, 2, 100),   /* b has patient: b wins */
        rec("alltoall:k3", "alltoall.pairwise", PLANCOLL_MEASURE, 3, 200),   /* b same rigor, older: a keeps */
        rec("alltoall:k4", "alltoall.pairwise", PLANCOLL_MEASURE, 4, 100),   /* b same rigor, newer: b wins */
        rec("alltoall:k5", "alltoall.pairwise", PLANCOLL_MEASURE, 5, 100),   /* b same rigor, same time: b wins */
        rec("alltoall:only-a", "alltoall.pairwise", PLANCOLL_MEASURE, 6, 1),
    };
    struct pc_wisdom_entry eb[] = {
        rec("alltoall:k1", "alltoall.bruck", PLANCOLL_MEASURE, 1, 900),
        rec("alltoall:k2", "alltoall.bruck", PLANCOLL_PATIENT, 2, 1),
        rec("alltoall:k3", "alltoall.bruck", PLANCOLL_MEASURE, 3, 100),
        rec("alltoall:k4", "alltoall.bruck", PLANCOLL_MEASURE, 4, 300),
        rec("alltoall:k5", "alltoall.bruck", PLANCOLL_MEASURE, 5, 100),
        rec("alltoall:only-b", "alltoall.bruck", PLANCOLL_MEASURE, 7, 1),
    };
    struct pc_machine_model ma[2], mb[2];
    for (int i = 0; i < 2; i++) {
        pc_model_default(&ma[i]);
        pc_model_default(&mb[i]);
        ma[i].sync_us = 1;
        mb[i].sync_us = 2;
    }
    snprintf(ma[0].shape, sizeof ma[0].shape, "shared");
    snprintf(mb[0].shape, sizeof mb[0].shape, "shared");
    snprintf(ma[1].shape, sizeof ma[1].shape, "only-a");
    snprintf(mb[1].shape, sizeof mb[1].shape, "only-b");
    assert_int_equal(pc_wisdom_set_fill(&a, ea, 6, ma, 2), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_fill(&b, eb, 6, mb, 2), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_merge(&a, &b), PLANCOLL_SUCCESS);
    assert_int_equal(a.nrecords, 7);
    const char *want[] = {"alltoall.pairwise", "alltoall.bruck", "alltoall.pairwise", "alltoall.bruck",
                          "alltoall.bruck",    "alltoall.pairwise", "alltoall.bruck"};
    const char *keys[] = {"alltoall:k1", "alltoall:k2", "alltoall:k3", "alltoall:k4", "alltoall:k5", "alltoall:only-a",
                          "alltoall:only-b"};
    for (int i = 0; i < 7; i++) {
        assert_string_equal(a.records[i].key, keys[i]);
        assert_string_equal(a.records[i].algorithm, want[i]);
    }
    assert_int_equal(a.nmodels, 3);
    for (int i = 0; i < 3; i++) {
        if (strcmp(a.models[i].shape, "shared") == 0) assert_true(a.models[i].sync_us == 2);
        if (strcmp(a.models[i].shape, "only-a") == 0) assert_true(a.models[i].sync_us == 1);
        if (strcmp(a.models[i].shape, "only-b") == 0) assert_true(a.models[i].sync_us == 2);
    }
    /* merging with nothing changes nothing; merging into nothing copies */
    struct pc_wisdom_set empty;
    pc_wisdom_set_init(&empty);
    assert_int_equal(pc_wisdom_set_merge(&a, &empty), PLANCOLL_SUCCESS);
    assert_int_equal(a.nrecords, 7);
    assert_int_equal(pc_wisdom_set_merge(&empty, &a), PLANCOLL_SUCCESS);
    assert_int_equal(empty.nrecords, 7);
    assert_int_equal(empty.nmodels, 3);
    pc_wisdom_set_free(&empty);
    pc_wisdom_set_free(&a);
    pc_wisdom_set_free(&b);

    /* fill resolves duplicate keys with the same rule (the in-process store never has any, gathered ranks may) */
    struct pc_wisdom_entry dup[] = {
        rec("alltoall:k", "alltoall.bruck", PLANCOLL_MEASURE, 1, 5),
        rec("alltoall:k", "alltoall.pairwise", PLANCOLL_EXHAUSTIVE, 1, 1),
        rec("alltoall:k", "alltoall.native", PLANCOLL_MEASURE, 1, 9),
    };
    assert_int_equal(pc_wisdom_set_fill(&a, dup, 3, NULL, 0), PLANCOLL_SUCCESS);
    assert_int_equal(a.nrecords, 1);
    assert_string_equal(a.records[0].algorithm, "alltoall.pairwise");
    pc_wisdom_set_free(&a);
}

/* The file merge (jobs writing one file at MPI_Finalize, plancoll-wisdom merge) picks the same record whichever
 * side comes first; the import merge keeps "the incoming wins ties". */
static void test_merge_file(void **state)
{
    (void)state;
    struct pc_wisdom_entry ea[] = {
        rec("alltoall:k1", "alltoall.pairwise", PLANCOLL_MEASURE, 5, 10), /* b more rigorous: b */
        rec("alltoall:k2", "alltoall.pairwise", PLANCOLL_MEASURE, 5, 10), /* b older: a */
        rec("alltoall:k3", "alltoall.pairwise", PLANCOLL_MEASURE, 7, 10), /* same second, b faster: b */
        rec("alltoall:k4", "alltoall.pairwise", PLANCOLL_MEASURE, 7, 10), /* same time too: name order, b */
        rec("alltoall:k5", "alltoall.bruck", PLANCOLL_MEASURE, 7, 10),    /* same but radix: the smaller, b */
        rec("alltoall:k6", "alltoall.bruck", PLANCOLL_MEASURE, 3, 10),    /* same second, a faster: a */
    };
    struct pc_wisdom_entry eb[] = {
        rec("alltoall:k1", "alltoall.bruck", PLANCOLL_PATIENT, 9, 1),
        rec("alltoall:k2", "alltoall.bruck", PLANCOLL_MEASURE, 1, 9),
        rec("alltoall:k3", "alltoall.bruck", PLANCOLL_MEASURE, 6, 10),
        rec("alltoall:k4", "alltoall.bruck", PLANCOLL_MEASURE, 7, 10),
        rec("alltoall:k5", "alltoall.bruck", PLANCOLL_MEASURE, 7, 10),
        rec("alltoall:k6", "alltoall.pairwise", PLANCOLL_MEASURE, 4, 10),
    };
    ea[4].params.radix = 4;
    eb[4].params.radix = 2;
    const char *want[] = {"b", "a", "b", "b", "b", "a"};
    struct pc_wisdom_set a, b, ab, ba;
    pc_wisdom_set_init(&a);
    pc_wisdom_set_init(&b);
    pc_wisdom_set_init(&ab);
    pc_wisdom_set_init(&ba);
    assert_int_equal(pc_wisdom_set_fill(&a, ea, 6, NULL, 0), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_fill(&b, eb, 6, NULL, 0), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_fill(&ab, ea, 6, NULL, 0), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_fill(&ba, eb, 6, NULL, 0), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_merge_file(&ab, &b), PLANCOLL_SUCCESS);
    assert_int_equal(pc_wisdom_set_merge_file(&ba, &a), PLANCOLL_SUCCESS);
    assert_int_equal(ab.nrecords, 6);
    assert_int_equal(ba.nrecords, 6);
    for (int i = 0; i < 6; i++) {
        const struct pc_wisdom_entry *w = want[i][0] == 'a' ? &ea[i] : &eb[i];
        for (int order = 0; order < 2; order++) {
            const struct pc_wisdom_entry *got = order ? &ba.records[i] : &ab.records[i];
            assert_string_equal(got->key, w->key);
            assert_string_equal(got->algorithm, w->algorithm);
            assert_true(got->measured_us == w->measured_us);
            assert_int_equal(got->params.radix, w->params.radix);
            assert_int_equal(got->rigor, w->rigor);
        }
        /* the rule is symmetric: exactly one side is preferred */
        assert_true(pc_wisdom_prefer_in_file(&ea[i], &eb[i]) != pc_wisdom_prefer_in_file(&eb[i], &ea[i]));
    }
    /* the import rule: in the same second the incoming record wins, whatever its time (k3, k6) */
    assert_int_equal(pc_wisdom_set_merge(&a, &b), PLANCOLL_SUCCESS);
    assert_string_equal(a.records[2].algorithm, "alltoall.bruck");
    assert_string_equal(a.records[5].algorithm, "alltoall.pairwise");
    pc_wisdom_set_free(&a);
    pc_wisdom_set_free(&b);
    pc_wisdom_set_free(&ab);
    pc_wisdom_set_free(&ba);
}

static void test_normalize(void **state)
{
    (void)state;
    char s[64];
    snprintf(s, sizeof s, "  MPICH\tVersion:\t\t4.0.2 \r\n");
    pc_wisdom_normalize_text(s);
    assert_string_equal(s, "MPICH Version: 4.0.2");
    snprintf(s, sizeof s, " \t ");
    pc_wisdom_normalize_text(s);
    assert_string_equal(s, "");
    snprintf(s, sizeof s, "plain");
    pc_wisdom_normalize_text(s);
    assert_string_equal(s, "plain");
    assert_string_equal(pc_wisdom_rigor_name(PLANCOLL_MEASURE), "measure");
    assert_string_equal(pc_wisdom_rigor_name(PLANCOLL_PATIENT), "patient");
    assert_string_equal(pc_wisdom_rigor_name(PLANCOLL_EXHAUSTIVE), "exhaustive");
    assert_string_equal(pc_wisdom_rigor_name(0), "none");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip),  cmocka_unit_test(test_empty_set_and_lenient_layout),
        cmocka_unit_test(test_malformed),   cmocka_unit_test(test_fingerprint),
        cmocka_unit_test(test_merge),       cmocka_unit_test(test_merge_file),
        cmocka_unit_test(test_normalize),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
