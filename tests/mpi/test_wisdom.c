/* Wisdom across ranks and files: export to a string and a file (the same text on every rank), import on every
 * rank, forget then import so that a MEASURE plan is a wisdom hit without timing and a WISDOM_ONLY plan works,
 * plans on sub-communicators, and every rejection (corrupt text, another format version, a foreign fingerprint,
 * files that cannot be read or written, NULL arguments, MPI_COMM_NULL) on every rank with nothing changed.
 *
 * Modes for tests/mpi/run-wisdom-env-test.sh (PLANCOLL_WISDOM across runs):
 *   --env-write    plans on a sub-communicator first, then MEASURE plans: the file is written at MPI_Finalize
 *   --env-read     a first plan on a sub-communicator, then WISDOM_ONLY plans on MPI_COMM_WORLD must be hits
 *   --env-ignored  the file is corrupt or stale: plans still work (MEASURE, so something is learned)
 *   --foreign-rank rank 1 sees another machine (HWLOC_SYNTHETIC set in its environment by this program): any
 *                  import is PLANCOLL_ERR_WISDOM_STALE on every rank */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testlib.h"

static int bcast_wait(void *buf, int n, MPI_Datatype t, MPI_Comm comm)
{
    MPI_Request req;
    int done = 0, rc = MPI_Ibcast(buf, n, t, 0, comm, &req);
    while (rc == MPI_SUCCESS && (rc = MPI_Test(&req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) sched_yield();
    return rc;
}

static uint64_t fnv(const char *s)
{
    uint64_t h = UINT64_C(14695981039346656037);
    for (; s && *s; s++) h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
    return h;
}

/* Every rank returned the same code, and it is `want`; the detail is not empty on failure. */
static void expect_all(int rc, int want, const char *what)
{
    int v[2] = {rc, -rc}, m[2];
    tl_allreduce(v, m, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    TL_CHECK(m[0] == -m[1], "%s: the ranks returned different codes (max %d, min %d)", what, m[0], -m[1]);
    TL_CHECK(rc == want, "%s: returned %d (%s), expected %d (%s): %s", what, rc, plancoll_strerror(rc), want,
             plancoll_strerror(want), plancoll_error_detail());
    if (want != PLANCOLL_SUCCESS) TL_CHECK(plancoll_error_detail()[0] != '\0', "%s: no detail", what);
}

/* The same text on every rank (by hash). */
static void expect_same_everywhere(const char *text, const char *what)
{
    uint64_t h = fnv(text), v[2] = {h, ~h}, m[2];
    tl_allreduce(v, m, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    TL_CHECK(m[0] == h && m[1] == ~h, "%s: ranks hold different texts", what);
}

static char *export_string(const char *what)
{
    char *s = NULL;
    int rc = plancoll_export_wisdom_to_string(&s, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_SUCCESS, what);
    TL_CHECK(rc != PLANCOLL_SUCCESS || (s && strncmp(s, "plancoll-wisdom 1\n", 18) == 0), "%s: text does not start as wisdom", what);
    if (!s) s = strdup("");
    expect_same_everywhere(s, what);
    return s;
}

/* ---- plans with checked data ---- */

static int a2a_val(int src, int dst, int i, int it) { return src * 1000000 + dst * 1000 + i * 10 + it; }

/* Plans an alltoall of n ints per pair with flags; runs and checks it twice; returns the plan's fprint text
 * (malloc'd) or NULL when planning failed, and the algorithm in alg. rc receives the planning code. */
static char *a2a_plan(MPI_Comm comm, int n, unsigned flags, int *rc, char *alg, size_t alglen)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    int *s = malloc(sizeof(int) * (size_t)(n * P + 1)), *d = malloc(sizeof(int) * (size_t)(n * P + 1));
    plancoll_plan p = NULL;
    *rc = plancoll_plan_alltoall(s, n, MPI_INT, d, n, MPI_INT, comm, flags, &p);
    char *text = NULL;
    if (*rc == PLANCOLL_SUCCESS) {
        for (int it = 0; it < 2; it++) {
            for (int j = 0; j < P; j++)
                for (int i = 0; i < n; i++) s[j * n + i] = a2a_val(r, j, i, it);
            TL_OK(plancoll_execute(p));
            int bad = 0;
            for (int j = 0; j < P && !bad; j++)
                for (int i = 0; i < n && !bad; i++)
                    if (d[j * n + i] != a2a_val(j, r, i, it)) {
                        TL_CHECK(0, "alltoall from %d element %d is %d, expected %d", j, i, d[j * n + i], a2a_val(j, r, i, it));
                        bad = 1;
                    }
            tl_checks++;
        }
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        TL_OK(plancoll_fprint_plan(p, f));
        fclose(f);
        snprintf(alg, alglen, "%s", plancoll_plan_algorithm(p));
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(s);
    free(d);
    return text;
}

static char *ar_plan(MPI_Comm comm, int n, unsigned flags, int *rc, char *alg, size_t alglen)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    double *s = malloc(sizeof(double) * (size_t)(n + 1)), *d = malloc(sizeof(double) * (size_t)(n + 1));
    plancoll_plan p = NULL;
    *rc = plancoll_plan_allreduce(s, d, n, MPI_DOUBLE, MPI_SUM, comm, flags, &p);
    char *text = NULL;
    if (*rc == PLANCOLL_SUCCESS) {
        for (int i = 0; i < n; i++) s[i] = r * 7 + i; /* small integers: exact in any order */
        TL_OK(plancoll_execute(p));
        for (int i = 0; i < n; i++)
            if (d[i] != 7.0 * P * (P - 1) / 2 + (double)i * P) {
                TL_CHECK(0, "allreduce element %d is %g", i, d[i]);
                break;
            }
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        TL_OK(plancoll_fprint_plan(p, f));
        fclose(f);
        snprintf(alg, alglen, "%s", plancoll_plan_algorithm(p));
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(s);
    free(d);
    return text;
}

/* An alltoallv with uneven counts (rank i sends n + (i + j) % 3 ints to rank j), checked like the others. */
static int v_val(int src, int dst, int i) { return src * 100000 + dst * 100 + i; }

static char *v_plan(MPI_Comm comm, int n, unsigned flags, int *rc, char *alg, size_t alglen)
{
    int P, r;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &r);
    int *sc = malloc(sizeof(int) * 4 * (size_t)P), *sd = sc + P, *rcn = sc + 2 * P, *rd = sc + 3 * P;
    int st = 0, rt = 0;
    for (int j = 0; j < P; j++) {
        sc[j] = n + (r + j) % 3;
        rcn[j] = n + (j + r) % 3;
        sd[j] = st;
        rd[j] = rt;
        st += sc[j];
        rt += rcn[j];
    }
    int *s = malloc(sizeof(int) * (size_t)(st + 1)), *d = malloc(sizeof(int) * (size_t)(rt + 1));
    plancoll_plan p = NULL;
    *rc = plancoll_plan_alltoallv(s, sc, sd, MPI_INT, d, rcn, rd, MPI_INT, comm, flags, &p);
    char *text = NULL;
    if (*rc == PLANCOLL_SUCCESS) {
        for (int j = 0; j < P; j++)
            for (int i = 0; i < sc[j]; i++) s[sd[j] + i] = v_val(r, j, i);
        TL_OK(plancoll_execute(p));
        int bad = 0;
        for (int j = 0; j < P && !bad; j++)
            for (int i = 0; i < rcn[j] && !bad; i++)
                if (d[rd[j] + i] != v_val(j, r, i)) {
                    TL_CHECK(0, "alltoallv from %d element %d is %d, expected %d", j, i, d[rd[j] + i], v_val(j, r, i));
                    bad = 1;
                }
        tl_checks++;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        TL_OK(plancoll_fprint_plan(p, f));
        fclose(f);
        snprintf(alg, alglen, "%s", plancoll_plan_algorithm(p));
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(s);
    free(d);
    free(sc);
    return text;
}

static bool chosen_by(const char *fprint, const char *how)
{
    char want[64];
    snprintf(want, sizeof want, "chosen by   %s", how);
    return fprint && strstr(fprint, want) != NULL;
}

static bool single_candidate(const char *fprint) { return fprint && strstr(fprint, "among 1 candidate\n") != NULL; }

/* ---- files (rank 0) ---- */

static char dir[256];

static void make_dir(void)
{
    if (tl_rank == 0) {
        const char *t = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/plancoll-wisdom-XXXXXX", t && *t ? t : "/tmp");
        if (!mkdtemp(dir)) dir[0] = '\0';
    }
    bcast_wait(dir, sizeof dir, MPI_CHAR, MPI_COMM_WORLD);
    TL_CHECK(dir[0] != '\0', "mkdtemp failed");
}

static char *path_of(const char *name)
{
    static char buf[4][320];
    static int next;
    char *p = buf[next++ % 4];
    snprintf(p, sizeof buf[0], "%s/%s", dir, name);
    return p;
}

static void write_text(const char *path, const char *text)
{
    if (tl_rank != 0) return;
    FILE *f = fopen(path, "w");
    TL_CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n = getdelim(&buf, &cap, '\0', f);
    fclose(f);
    if (n < 0) {
        free(buf);
        return strdup("");
    }
    return buf;
}

/* text with the line starting with `prefix` replaced by `line` (or removed when line is ""). */
static char *replace_line(const char *text, const char *prefix, const char *line)
{
    const char *at = strstr(text, prefix);
    if (!at) return strdup(text);
    const char *end = strchr(at, '\n');
    end = end ? end + 1 : at + strlen(at);
    size_t n = strlen(text) + strlen(line) + 2;
    char *out = malloc(n);
    snprintf(out, n, "%.*s%s%s%s", (int)(at - text), text, line, *line ? "\n" : "", end);
    return out;
}

/* ---- the main scenario ---- */

static void scenario(void)
{
    make_dir();
    char alg_a[64] = "", alg[64] = "";
    int rc;

    /* learn: a MEASURE plan of an alltoallv (two candidates to time: the alltoall's dozen would cost seconds
     * at 8 ranks on 2 cores; test_wisdom's other modes and the tool test cover alltoall and allreduce records) */
    TL_CHECK(plancoll_forget_wisdom() == PLANCOLL_SUCCESS, "forget_wisdom");
    char *pa = v_plan(MPI_COMM_WORLD, 5, PLANCOLL_MEASURE, &rc, alg_a, sizeof alg_a);
    expect_all(rc, PLANCOLL_SUCCESS, "MEASURE alltoallv");
    bool a_single = single_candidate(pa);
    TL_CHECK(!a_single, "the alltoallv should have several candidates:\n%s", pa ? pa : "");
    TL_CHECK(a_single || chosen_by(pa, "measured"), "first MEASURE alltoallv should be measured:\n%s", pa ? pa : "");
    free(pa);

    /* export to a string and to a file: the same text on every rank and in the file */
    char *s1 = export_string("export to string");
    char want[96];
    snprintf(want, sizeof want, "\nrecord alltoallv:P=%d:", tl_size);
    TL_CHECK(strstr(s1, want) != NULL, "the exported text has no alltoallv record:\n%s", s1);
    snprintf(want, sizeof want, " %s ", alg_a);
    TL_CHECK(strstr(s1, want) != NULL, "the exported text does not name %s:\n%s", alg_a, s1);
    TL_CHECK(strstr(s1, "\nregistry ") && strstr(s1, "\nmpi_library ") && strstr(s1, "\ntopology packages=") &&
                 strstr(s1, "\nend\n"),
             "fingerprint lines missing:\n%s", s1);
    const char *file1 = path_of("one.wisdom");
    rc = plancoll_export_wisdom_to_filename(tl_rank == 0 ? file1 : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_SUCCESS, "export to file");
    if (tl_rank == 0) {
        char *f = read_text(file1);
        TL_CHECK(f && strcmp(f, s1) == 0, "the file differs from the exported string");
        free(f);
        struct stat st;
        TL_CHECK(stat(file1, &st) == 0 && (st.st_mode & 0400), "the file is not readable by its owner");
    }

    /* forget: WISDOM_ONLY fails everywhere */
    TL_CHECK(plancoll_forget_wisdom() == PLANCOLL_SUCCESS, "forget_wisdom");
    char *e0 = export_string("export after forget");
    TL_CHECK(strstr(e0, "\nrecord ") == NULL && strstr(e0, "\nbegin model") == NULL, "forget left wisdom:\n%s", e0);
    free(e0);
    free(v_plan(MPI_COMM_WORLD, 5, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_ERR_NO_WISDOM, "WISDOM_ONLY after forget");

    /* import the file: a MEASURE plan of the same problem is a hit, without timing, with the same choice */
    rc = plancoll_import_wisdom_from_filename(tl_rank == 0 ? file1 : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_SUCCESS, "import from file");
    double t0 = MPI_Wtime();
    char *ph = v_plan(MPI_COMM_WORLD, 5, PLANCOLL_MEASURE, &rc, alg, sizeof alg);
    double hit_s = MPI_Wtime() - t0;
    expect_all(rc, PLANCOLL_SUCCESS, "MEASURE alltoallv after import");
    TL_CHECK(a_single || chosen_by(ph, "wisdom"), "after import, MEASURE should come from wisdom:\n%s", ph ? ph : "");
    TL_CHECK(strcmp(alg, alg_a) == 0, "wisdom chose %s, the measurement %s", alg, alg_a);
    TL_CHECK(ph && strstr(ph, "measured    ") && !strstr(ph, "not timed"), "a wisdom hit should carry the measured time:\n%s",
             ph ? ph : "");
    free(ph);
    if (tl_rank == 0 && getenv("PLANCOLL_TEST_VERBOSE")) printf("wisdom-hit plan + 2 executions: %.3f ms\n", hit_s * 1e3);
    free(v_plan(MPI_COMM_WORLD, 5, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_SUCCESS, "WISDOM_ONLY alltoallv after import");
    /* another problem (other counts) is not in the wisdom */
    free(v_plan(MPI_COMM_WORLD, 6, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_ERR_NO_WISDOM, "WISDOM_ONLY of a problem wisdom does not hold");
    /* importing the same wisdom again changes nothing */
    rc = plancoll_import_wisdom_from_filename(tl_rank == 0 ? file1 : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_SUCCESS, "import twice");
    char *s2 = export_string("export after import");
    TL_CHECK(strcmp(s1, s2) == 0, "export after import differs from the imported text:\n%s\n---\n%s", s1, s2);
    free(s2);

    /* import from a string: rank 0's text, NULL elsewhere */
    plancoll_forget_wisdom();
    rc = plancoll_import_wisdom_from_string(tl_rank == 0 ? s1 : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_SUCCESS, "import from string");
    free(v_plan(MPI_COMM_WORLD, 5, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_SUCCESS, "WISDOM_ONLY after string import");
    TL_CHECK(strcmp(alg, alg_a) == 0, "wisdom chose %s, the measurement %s", alg, alg_a);

    /* rejections: every rank gets the same error and the wisdom held is unchanged */
    char *before = export_string("export before rejections");
    struct {
        const char *name, *prefix, *line; /* line replacing the one starting with prefix */
        int code;
        const char *detail;
    } bad[] = {
        {"truncated", "end\n", "", PLANCOLL_ERR_WISDOM_FORMAT, "closing 'end'"},
        {"garbage", NULL, "this is not wisdom\n", PLANCOLL_ERR_WISDOM_FORMAT, "line 1"},
        {"bad record", "record ", "record alltoall:P=1 alltoall.pairwise us=fast rigor=measure", PLANCOLL_ERR_WISDOM_FORMAT,
         "us has a bad value"},
        {"unknown algorithm", "record ", "record alltoall:P=1 alltoall.teleport us=1 rigor=measure",
         PLANCOLL_ERR_WISDOM_FORMAT, "not a registered alltoall algorithm"},
        {"wrong collective", "record ", "record allreduce:P=1 alltoall.pairwise us=1 rigor=measure",
         PLANCOLL_ERR_WISDOM_FORMAT, "not a registered allreduce algorithm"},
        {"format version", "plancoll-wisdom 1", "plancoll-wisdom 7", PLANCOLL_ERR_WISDOM_STALE, "version 7"},
        {"registry", "registry ", "registry 0000000000000001", PLANCOLL_ERR_WISDOM_STALE, "registry signature"},
        {"MPI library", "mpi_library ", "mpi_library Open MPI v9.9", PLANCOLL_ERR_WISDOM_STALE, "another MPI library"},
        {"MPI build", "mpi_build ", "mpi_build 0000000000000002", PLANCOLL_ERR_WISDOM_STALE, "another build"},
        {"topology", "topology ", "topology packages=64 cores=4096 pus=8192 numa=64", PLANCOLL_ERR_WISDOM_STALE,
         "another machine"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = bad[i].prefix ? replace_line(s1, bad[i].prefix, bad[i].line) : strdup(bad[i].line);
        char what[96];
        snprintf(what, sizeof what, "import of %s (string)", bad[i].name);
        rc = plancoll_import_wisdom_from_string(tl_rank == 0 ? text : NULL, MPI_COMM_WORLD);
        expect_all(rc, bad[i].code, what);
        TL_CHECK(strstr(plancoll_error_detail(), bad[i].detail) != NULL, "%s: detail '%s' lacks '%s'", what,
                 plancoll_error_detail(), bad[i].detail);
        /* the file path differs only in where the text comes from: a few cases suffice */
        if (i > 1 && strcmp(bad[i].name, "topology") != 0) {
            free(text);
            continue;
        }
        const char *f = path_of("bad.wisdom");
        write_text(f, text);
        snprintf(what, sizeof what, "import of %s (file)", bad[i].name);
        rc = plancoll_import_wisdom_from_filename(tl_rank == 0 ? f : NULL, MPI_COMM_WORLD);
        expect_all(rc, bad[i].code, what);
        TL_CHECK(strstr(plancoll_error_detail(), "bad.wisdom") != NULL, "%s: detail '%s' does not name the file", what,
                 plancoll_error_detail());
        free(text);
    }
    char *after = export_string("export after rejections");
    TL_CHECK(strcmp(before, after) == 0, "a rejected import changed the wisdom");
    free(after);

    /* files that cannot be read or written */
    rc = plancoll_export_wisdom_to_filename(tl_rank == 0 ? "/nonexistent-plancoll-dir/w.wisdom" : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_IO, "export into a missing directory");
    TL_CHECK(strstr(plancoll_error_detail(), "nonexistent-plancoll-dir") != NULL, "detail: %s", plancoll_error_detail());
    rc = plancoll_export_wisdom_to_filename(tl_rank == 0 ? dir : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_IO, "export onto a directory");
    if (tl_rank == 0) {
        struct stat st;
        TL_CHECK(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "the directory was replaced");
    }
    rc = plancoll_import_wisdom_from_filename(tl_rank == 0 ? path_of("missing.wisdom") : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_IO, "import of a missing file");
    TL_CHECK(strstr(plancoll_error_detail(), "missing.wisdom") != NULL, "detail: %s", plancoll_error_detail());
    rc = plancoll_import_wisdom_from_filename(tl_rank == 0 ? dir : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_IO, "import of a directory");
    after = export_string("export after I/O errors");
    TL_CHECK(strcmp(before, after) == 0, "a failed import changed the wisdom");
    free(after);
    free(before);
    if (tl_rank == 0) {
        /* no temporary file is left behind by the failed export onto the directory */
        char cmd[400];
        snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q tmp-", dir);
        TL_CHECK(system(cmd) != 0, "a temporary file was left in %s", dir);
    }

    /* NULL arguments and MPI_COMM_NULL */
    rc = plancoll_export_wisdom_to_string(NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_ARGUMENT, "export_to_string(NULL)");
    if (tl_size > 1) {
        char *s = NULL;
        rc = plancoll_export_wisdom_to_string(tl_rank == 1 ? NULL : &s, MPI_COMM_WORLD);
        TL_CHECK(rc == (tl_rank == 1 ? PLANCOLL_ERR_ARGUMENT : PLANCOLL_ERR_REMOTE), "export_to_string(NULL on rank 1): %d", rc);
        TL_CHECK(s == NULL, "a failed export left a string");
    }
    expect_all(plancoll_export_wisdom_to_filename(NULL, MPI_COMM_WORLD), PLANCOLL_ERR_ARGUMENT, "export_to_filename(NULL)");
    expect_all(plancoll_export_wisdom_to_filename("", MPI_COMM_WORLD), PLANCOLL_ERR_ARGUMENT, "export_to_filename(\"\")");
    expect_all(plancoll_import_wisdom_from_string(NULL, MPI_COMM_WORLD), PLANCOLL_ERR_ARGUMENT, "import_from_string(NULL)");
    expect_all(plancoll_import_wisdom_from_filename(NULL, MPI_COMM_WORLD), PLANCOLL_ERR_ARGUMENT, "import_from_filename(NULL)");
    char *s = (char *)"x";
    TL_CHECK(plancoll_export_wisdom_to_string(&s, MPI_COMM_NULL) == PLANCOLL_ERR_COMM && s == NULL, "export_to_string(COMM_NULL)");
    TL_CHECK(plancoll_export_wisdom_to_filename(file1, MPI_COMM_NULL) == PLANCOLL_ERR_COMM, "export_to_filename(COMM_NULL)");
    TL_CHECK(plancoll_import_wisdom_from_string(s1, MPI_COMM_NULL) == PLANCOLL_ERR_COMM, "import_from_string(COMM_NULL)");
    TL_CHECK(plancoll_import_wisdom_from_filename(file1, MPI_COMM_NULL) == PLANCOLL_ERR_COMM, "import_from_filename(COMM_NULL)");
    TL_CHECK(strstr(plancoll_error_detail(), "MPI_COMM_NULL") != NULL, "detail: %s", plancoll_error_detail());
    /* the wisdom still works after all that */
    free(v_plan(MPI_COMM_WORLD, 5, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_SUCCESS, "WISDOM_ONLY after the rejections");

    /* sub-communicators: a plan on the half without rank 0 is exported over MPI_COMM_WORLD, and imported on a
     * sub-communicator it serves that half again */
    if (tl_size >= 3) {
        plancoll_forget_wisdom();
        MPI_Comm half;
        int upper = tl_rank >= tl_size / 2;
        MPI_Comm_split(MPI_COMM_WORLD, upper, tl_rank, &half);
        int hsize;
        MPI_Comm_size(half, &hsize);
        char half_alg[64] = "";
        bool half_single = false;
        if (upper) {
            /* an allreduce: three candidates to time instead of the alltoall's dozen */
            char *t = ar_plan(half, 64, PLANCOLL_MEASURE, &rc, half_alg, sizeof half_alg);
            TL_CHECK(rc == PLANCOLL_SUCCESS, "MEASURE on the upper half: %d", rc);
            half_single = single_candidate(t);
            free(t);
        }
        char *sx = export_string("export of sub-communicator wisdom");
        snprintf(want, sizeof want, "\nrecord allreduce:P=%d:", hsize);
        if (upper && !half_single)
            TL_CHECK(strstr(sx, want) != NULL, "the upper half's record is missing from the export:\n%s", sx);
        plancoll_forget_wisdom();
        /* only the upper half: a plancoll call on the lower half would build its layout for nothing */
        if (upper) {
            rc = plancoll_import_wisdom_from_string(sx, half);
            TL_CHECK(rc == PLANCOLL_SUCCESS, "import on the half: %d (%s)", rc, plancoll_error_detail());
        }
        if (upper && !half_single) {
            free(ar_plan(half, 64, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg));
            TL_CHECK(rc == PLANCOLL_SUCCESS && strcmp(alg, half_alg) == 0, "WISDOM_ONLY on the half: %d, %s vs %s", rc,
                     alg, half_alg);
        }
        free(sx);
        MPI_Comm_free(&half);
    }
    free(s1);
    if (tl_rank == 0) {
        char cmd[400];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        TL_CHECK(system(cmd) == 0, "cleanup");
    }
}

/* ---- PLANCOLL_WISDOM across runs ---- */

static void env_write(void)
{
    /* the first plan of the process is on a sub-communicator: only its ranks read the (absent) file then */
    MPI_Comm odd;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &odd);
    char alg[64];
    int rc;
    if (tl_rank % 2) free(a2a_plan(odd, 4, PLANCOLL_ESTIMATE, &rc, alg, sizeof alg));
    MPI_Comm_free(&odd);
    char *t = a2a_plan(MPI_COMM_WORLD, 16, PLANCOLL_MEASURE, &rc, alg, sizeof alg);
    expect_all(rc, PLANCOLL_SUCCESS, "MEASURE alltoall with PLANCOLL_WISDOM");
    TL_CHECK(single_candidate(t) || chosen_by(t, "measured"), "should be measured:\n%s", t ? t : "");
    if (tl_rank == 0) printf("env-write chose %s\n", alg);
    free(t);
    free(ar_plan(MPI_COMM_WORLD, 100, PLANCOLL_MEASURE, &rc, alg, sizeof alg));
    expect_all(rc, PLANCOLL_SUCCESS, "MEASURE allreduce with PLANCOLL_WISDOM");
}

static void env_read(void)
{
    MPI_Comm odd;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &odd);
    char alg[64];
    int rc;
    if (tl_rank % 2) free(a2a_plan(odd, 4, PLANCOLL_ESTIMATE, &rc, alg, sizeof alg));
    MPI_Comm_free(&odd);
    /* even ranks read the file now; odd ranks read it above and take part without importing twice */
    char *t = a2a_plan(MPI_COMM_WORLD, 16, PLANCOLL_WISDOM_ONLY, &rc, alg, sizeof alg);
    expect_all(rc, PLANCOLL_SUCCESS, "WISDOM_ONLY alltoall from PLANCOLL_WISDOM");
    TL_CHECK(chosen_by(t, "wisdom"), "should come from wisdom:\n%s", t ? t : "");
    if (tl_rank == 0) printf("env-read chose %s\n", alg);
    free(t);
    t = a2a_plan(MPI_COMM_WORLD, 16, PLANCOLL_MEASURE, &rc, alg, sizeof alg);
    TL_CHECK(chosen_by(t, "wisdom"), "MEASURE should come from wisdom:\n%s", t ? t : "");
    free(t);
}

static void env_ignored(void)
{
    char alg[64];
    int rc;
    char *t = a2a_plan(MPI_COMM_WORLD, 16, PLANCOLL_MEASURE, &rc, alg, sizeof alg);
    expect_all(rc, PLANCOLL_SUCCESS, "planning with a bad PLANCOLL_WISDOM file");
    TL_CHECK(single_candidate(t) || chosen_by(t, "measured"), "should be measured:\n%s", t ? t : "");
    TL_CHECK(plancoll_error_detail()[0] == '\0', "a successful plan left a detail: %s", plancoll_error_detail());
    free(t);
}

static void foreign_rank(void)
{
    /* rank 1 exported nothing yet; rank 0's wisdom is imported everywhere and rank 1 finds another machine */
    char alg[64];
    int rc;
    free(a2a_plan(MPI_COMM_WORLD, 16, PLANCOLL_MEASURE, &rc, alg, sizeof alg));
    char *s = export_string("export with a foreign rank");
    char *before = strdup(s);
    rc = plancoll_import_wisdom_from_string(tl_rank == 0 ? s : NULL, MPI_COMM_WORLD);
    expect_all(rc, PLANCOLL_ERR_WISDOM_STALE, "import on a job where rank 1 is another machine");
    if (tl_rank == 1)
        TL_CHECK(strstr(plancoll_error_detail(), "another machine") != NULL, "rank 1 detail: %s", plancoll_error_detail());
    else
        TL_CHECK(strstr(plancoll_error_detail(), "rank 1's machine") != NULL, "detail: %s", plancoll_error_detail());
    char *after = export_string("export after the rejected import");
    TL_CHECK(strcmp(before, after) == 0, "the rejected import changed the wisdom");
    free(after);
    free(before);
    free(s);
}

int main(int argc, char **argv)
{
    /* before MPI_Init and any hwloc call: rank 1 of the job sees a made-up machine. The rank as the launcher gives
     * it: MPICH's Hydra sets PMI_RANK, Open MPI's mpiexec OMPI_COMM_WORLD_RANK (where neither is set no rank is
     * foreign, and the expected rejection fails the test). */
    const char *mode = argc > 1 ? argv[1] : "";
    if (strcmp(mode, "--foreign-rank") == 0) {
        const char *r = getenv("PMI_RANK");
        if (!r) r = getenv("OMPI_COMM_WORLD_RANK");
        if (r && strcmp(r, "1") == 0) setenv("HWLOC_SYNTHETIC", "pack:2 numa:2 core:2 pu:1", 1);
    }
    tl_init(&argc, &argv, "wisdom");
    if (strcmp(mode, "--env-write") == 0)
        env_write();
    else if (strcmp(mode, "--env-read") == 0)
        env_read();
    else if (strcmp(mode, "--env-ignored") == 0)
        env_ignored();
    else if (strcmp(mode, "--foreign-rank") == 0) {
        if (tl_size >= 2) foreign_rank();
    } else
        scenario();
    return tl_finish();
}
