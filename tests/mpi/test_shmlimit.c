/* Too little shared memory is an error, not a signal.  Run by run-shm-limit-test.sh in a private mount
 * namespace whose /dev/shm is a small tmpfs (16-32 MiB) (sizing a tmpfs file reserves nothing: without reservation a plan
 * whose segment does not fit is made and then dies of SIGBUS at its first execution).
 *
 * For every algorithm that keeps data in node-shared memory, forced in turn: a small plan works; a plan whose
 * shared memory cannot fit the free space fails with PLANCOLL_ERR_NOMEM on every rank, with a size and /dev/shm
 * in the detail, and leaves the file system as it found it; a plan that fits is made, reserved and runs
 * correctly (its first execution included); a small plan still works on the same communicator afterwards.  Also:
 * plancoll_malloc of more than fits (NOMEM everywhere, *ptr NULL, then a small malloc works), a block taken from
 * a heap part that already exists when /dev/shm has just been filled by someone else (the reservation of an
 * existing free block), a segment grown within its mapping while /dev/shm is full, and a transpose whose send
 * scratch cannot get heap memory (it falls back to private memory and runs correctly).  Sizes follow the free
 * space this program finds after MPI_Init (MPICH's own files live in the same /dev/shm).
 * And the planner's fallback when its choice does not fit (test_fallback).
 * Usage: test_shmlimit [CASE] (one case only: a forced spec of the table in main, "fallback", "malloc" or
 * "transpose"). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "testlib.h"

static MPI_Comm node;
static int nrank, nsize;
static size_t shm_free; /* bytes free in /dev/shm after MPI_Init, as rank 0 saw them */

static size_t shm_used(void)
{
    struct statvfs s;
    if (statvfs("/dev/shm", &s) != 0) return 0;
    return (size_t)(s.f_blocks - s.f_bfree) * s.f_frsize;
}

/* The largest decimal number in text (0 when none). */
static unsigned long long largest_number(const char *text)
{
    unsigned long long best = 0;
    for (const char *p = text; *p;) {
        if (*p >= '0' && *p <= '9') {
            char *end;
            unsigned long long v = strtoull(p, &end, 10);
            if (v > best) best = v;
            p = end;
        } else {
            p++;
        }
    }
    return best;
}

/* The call failed with PLANCOLL_ERR_NOMEM on every rank, naming /dev/shm and a size of at least at_least. */
static void expect_nomem_everywhere(int rc, unsigned long long at_least, const char *what)
{
    const char *detail = plancoll_error_detail();
    TL_CHECK(rc == PLANCOLL_ERR_NOMEM, "%s: got %d (%s: %s), expected PLANCOLL_ERR_NOMEM", what, rc, plancoll_strerror(rc),
             detail);
    if (rc == PLANCOLL_ERR_NOMEM) {
        TL_CHECK(strstr(detail, "/dev/shm") != NULL, "%s: the detail does not name /dev/shm: %s", what, detail);
        TL_CHECK(largest_number(detail) >= at_least, "%s: the detail gives no size of at least %llu bytes: %s", what,
                 at_least, detail);
    }
    int codes[2] = {rc, -rc}, ext[2];
    tl_allreduce(codes, ext, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    TL_CHECK(ext[0] == -ext[1], "%s: the ranks returned different codes (%d .. %d)", what, -ext[1], ext[0]);
}

/* ---- the collectives, with data whose expected result is computed independently ---- */
static unsigned char a2a_byte(int src, int dst, size_t k)
{
    return (unsigned char)(src * 131 + dst * 31 + k * 7 + (k >> 12));
}

/* What the last successful plan of run_exchange / run_allreduce said of itself: its spec and its fprint text. */
static char last_spec[256], last_fprint[4096];

static void describe(plancoll_plan p)
{
    last_spec[0] = last_fprint[0] = '\0';
    TL_OK(plancoll_plan_spec(p, last_spec, sizeof last_spec));
    FILE *f = fmemopen(last_fprint, sizeof last_fprint - 1, "w");
    TL_CHECK(f != NULL, "fmemopen");
    if (f) {
        TL_OK(plancoll_fprint_plan(p, f));
        fclose(f);
    }
}

/* Plans (and, when it succeeds, runs twice and checks) an alltoall (or the equal-count alltoallv) of m-byte
 * blocks under the given rigor.  Returns the plan call's code. */
static int run_exchange_rigor(bool vector, size_t m, unsigned flags)
{
    const int P = tl_size, r = tl_rank;
    unsigned char *send = malloc((size_t)P * m + 1), *recv = malloc((size_t)P * m + 1);
    int *counts = malloc(sizeof(int) * 2 * (size_t)P), *displs = counts + P;
    TL_CHECK(send && recv && counts, "buffers of %zu bytes", (size_t)P * m);
    for (int j = 0; j < P; j++) {
        counts[j] = (int)m;
        displs[j] = (int)((size_t)j * m);
    }
    plancoll_plan p = NULL;
    int rc = vector ? plancoll_plan_alltoallv(send, counts, displs, MPI_BYTE, recv, counts, displs, MPI_BYTE,
                                              MPI_COMM_WORLD, flags, &p)
                    : plancoll_plan_alltoall(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD, flags, &p);
    if (rc == PLANCOLL_SUCCESS) {
        describe(p);
        /* The data is written only now (an ESTIMATE plan does not read it): a refused plan costs no filling. */
        for (int j = 0; j < P; j++)
            for (size_t k = 0; k < m; k++) send[(size_t)j * m + k] = a2a_byte(r, j, k);
        /* Executed as an application would: without reservation this is where SIGBUS struck. */
        for (int it = 0; it < 2; it++) {
            memset(recv, 0xee, (size_t)P * m);
            TL_OK(plancoll_execute(p));
            long bad = -1;
            for (int i = 0; i < P && bad < 0; i++)
                for (size_t k = 0; k < m; k++)
                    if (recv[(size_t)i * m + k] != a2a_byte(i, r, k)) {
                        bad = (long)((size_t)i * m + k);
                        break;
                    }
            TL_CHECK(bad < 0, "%s of %zu-byte blocks, execution %d: byte %ld wrong", vector ? "alltoallv" : "alltoall", m,
                     it, bad);
        }
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(send);
    free(recv);
    free(counts);
    return rc; /* no plancoll call since a failed plan: plancoll_error_detail() is still the plan's */
}

static int run_exchange(bool vector, size_t m) { return run_exchange_rigor(vector, m, PLANCOLL_ESTIMATE); }

/* Plans (and, when it succeeds, runs twice and checks) a sum of count doubles under the given rigor. */
static int run_allreduce_rigor(int count, unsigned flags)
{
    double *in = malloc(sizeof(double) * (size_t)count + 1), *out = malloc(sizeof(double) * (size_t)count + 1);
    TL_CHECK(in && out, "allreduce buffers of %d doubles", count);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, flags, &p);
    if (rc == PLANCOLL_SUCCESS) {
        describe(p);
        for (int i = 0; i < count; i++) in[i] = (double)((tl_rank + 1) * (i % 7 + 1));
        const double ranks = (double)tl_size * (tl_size + 1) / 2;
        for (int it = 0; it < 2; it++) {
            memset(out, 0, sizeof(double) * (size_t)count);
            TL_OK(plancoll_execute(p));
            int bad = -1;
            for (int i = 0; i < count && bad < 0; i++)
                if (out[i] != ranks * (i % 7 + 1)) bad = i;
            TL_CHECK(bad < 0, "allreduce of %d doubles, execution %d: element %d is %g, expected %g", count, it, bad,
                     bad >= 0 ? out[bad] : 0.0, bad >= 0 ? ranks * (bad % 7 + 1) : 0.0);
        }
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(in);
    free(out);
    return rc;
}

static int run_allreduce(int count) { return run_allreduce_rigor(count, PLANCOLL_ESTIMATE); }

/* One case: how much node-shared memory the plan takes grows with `size`, in the unit the case needs. */
struct shm_case {
    const char *forced;
    int kind; /* 0 alltoall (size = block bytes), 1 alltoallv (same), 2 allreduce (size = doubles) */
    bool two_nodes_only;
};

static int run_case(const struct shm_case *c, size_t size)
{
    if (c->kind == 2) return run_allreduce((int)size);
    return run_exchange(c->kind == 1, size);
}

static void test_case(const struct shm_case *c, int nnodes)
{
    if (c->two_nodes_only && nnodes < 2) return;
    tl_force(c->forced);
    const size_t P = (size_t)tl_size, ppn = (size_t)nsize;
    /* Sizes whose shared memory is about a hundredth, a quarter and twice or more the free space: every one of
     * these algorithms keeps at least the node's P x ppn blocks (alltoall) or ppn + 1 vectors (allreduce). */
    size_t small, fits, too_big, at_least;
    if (c->kind == 2) {
        small = 1000;
        fits = shm_free / 4 / 8 / (ppn + 2);
        too_big = 2 * shm_free / 8 + 1;
        at_least = too_big * 8;
    } else {
        small = 1000;
        fits = shm_free / 4 / (2 * P * ppn + 2 * P);
        too_big = 2 * shm_free / (P * ppn) + 4096;
        at_least = too_big * P;
    }
    double t0 = MPI_Wtime();
    TL_OK(run_case(c, small)); /* the layout and a segment exist: they are not this case's subject */
    size_t before = shm_used();
    double t1 = MPI_Wtime();
    int rc = run_case(c, too_big);
    char what[160];
    snprintf(what, sizeof what, "%s with %zu %s (free /dev/shm %zu bytes)", c->forced, too_big,
             c->kind == 2 ? "doubles" : "bytes per block", shm_free);
    expect_nomem_everywhere(rc, at_least, what);
    tl_barrier(MPI_COMM_WORLD);
    size_t after = shm_used();
    TL_CHECK(after <= before + ((size_t)1 << 20), "%s: /dev/shm use went from %zu to %zu bytes after the failed plan",
             what, before, after);
    double t2 = MPI_Wtime();
    int fit_rc = run_case(c, fits);
    double t3 = MPI_Wtime();
    TL_CHECK(fit_rc == PLANCOLL_SUCCESS, "%s with %zu (a quarter of the free space): %d (%s)", c->forced, fits, fit_rc,
             plancoll_error_detail());
    TL_OK(run_case(c, small)); /* the communicator is still usable */
    if (tl_rank == 0)
        printf("  %-40s too big (%zu) refused on every rank, %zu fits (%.2f s: small %.2f, refused %.2f, fits %.2f)\n",
               c->forced, too_big, fits, MPI_Wtime() - t0, t1 - t0, t2 - t1, t3 - t2);
    tl_force(NULL);
}

/* ---- the planner's choice does not fit: it chooses again ----
 * A problem too large for this node's /dev/shm, planned without a forced algorithm or with a list of several:
 * the planner's first choice may keep its data in node-shared memory; when that set-up finds too little of it,
 * the planner chooses again among the other candidates (a candidate that times out of memory under MEASURE
 * leaves the race), so the plan is made and runs correctly, and fprint names what did not fit. Only when every
 * allowed candidate needs more than there is is the plan PLANCOLL_ERR_NOMEM (on every rank). */
struct fallback_case {
    int kind;               /* as shm_case */
    const char *all_shared; /* a list of algorithms that all keep the problem in node-shared memory */
    const char *one_private; /* the same list with one that does not */
    const char *private_name;
};

static void test_fallback(const struct fallback_case *c)
{
    const size_t P = (size_t)tl_size, ppn = (size_t)nsize;
    size_t too_big = c->kind == 2 ? 2 * shm_free / 8 + 1 : 2 * shm_free / (P * ppn) + 4096;
    char what[200];
    /* nothing allowed fits: NOMEM everywhere, as with one forced algorithm */
    tl_force(c->all_shared);
    int rc = c->kind == 2 ? run_allreduce((int)too_big) : run_exchange(c->kind == 1, too_big);
    snprintf(what, sizeof what, "%s at %zu", c->all_shared, too_big);
    expect_nomem_everywhere(rc, 0, what);
    /* one allowed candidate fits: the plan is made, with it, and is correct (the runs check every byte) */
    tl_force(c->one_private);
    rc = c->kind == 2 ? run_allreduce((int)too_big) : run_exchange(c->kind == 1, too_big);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "%s at %zu: %d (%s), expected a plan with %s", c->one_private, too_big, rc,
             plancoll_strerror(rc), c->private_name);
    if (rc == PLANCOLL_SUCCESS) {
        TL_CHECK(strncmp(last_spec, c->private_name, strlen(c->private_name)) == 0, "%s: the plan runs %s",
                 c->one_private, last_spec);
        /* the list's private algorithm is the slowest by the model (Bruck and recursive doubling move each block
         * several times): the first choice was a node-shared one, and fprint says what did not fit and why */
        const char *fell = strstr(last_fprint, "fell back");
        TL_CHECK(fell != NULL, "%s: fprint names no candidate that did not fit:\n%s", c->one_private, last_fprint);
        if (fell) TL_CHECK(strstr(fell, "/dev/shm") != NULL, "the fell-back line does not say why: %s", last_fprint);
        if (tl_rank == 0)
            printf("  %-55s planned %s (%s)\n", c->one_private, last_spec,
                   fell ? "after a first choice that did not fit" : "its first choice");
    }
    /* nothing forced, each rigor: a plan, correct */
    tl_force(NULL);
    const unsigned rigors[] = {PLANCOLL_ESTIMATE, PLANCOLL_MEASURE};
    for (int k = 0; k < 2; k++) {
        rc = c->kind == 2 ? run_allreduce_rigor((int)too_big, rigors[k])
                          : run_exchange_rigor(c->kind == 1, too_big, rigors[k]);
        TL_CHECK(rc == PLANCOLL_SUCCESS, "kind %d at %zu, %s, nothing forced: %d (%s)", c->kind, too_big,
                 k ? "MEASURE" : "ESTIMATE", rc, plancoll_error_detail());
        if (rc == PLANCOLL_SUCCESS && tl_rank == 0)
            printf("  kind %d at %zu, %-8s planned %s%s\n", c->kind, too_big, k ? "MEASURE" : "ESTIMATE", last_spec,
                   strstr(last_fprint, "fell back") ? " (fell back)" : "");
    }
}

/* ---- the node-shared heap ---- */
static void test_malloc(void)
{
    void *p = (void *)&p;
    size_t too_big = shm_free; /* every rank of a node asks for all of it */
    int rc = plancoll_malloc(too_big, MPI_COMM_WORLD, &p);
    expect_nomem_everywhere(rc, too_big, "plancoll_malloc of all the free /dev/shm on every rank");
    TL_CHECK(p == NULL, "a failed plancoll_malloc left *ptr = %p", p);
    if (rc == PLANCOLL_SUCCESS && p) memset(p, 1, too_big); /* as an application would: SIGBUS without reservation */
    if (rc == PLANCOLL_SUCCESS) plancoll_free(p);

    /* A block of an existing part: make a part of a quarter of the free space, free it (its memory goes back),
     * fill /dev/shm from outside, and take from the part again: the reservation of the free block fails on
     * every rank; once the file is gone the same request succeeds. */
    size_t quarter = shm_free / 4 / (size_t)nsize;
    char *q = NULL;
    TL_OK(plancoll_malloc(quarter, MPI_COMM_WORLD, (void **)&q));
    if (q) memset(q, 3, quarter);
    TL_OK(plancoll_free(q));
    /* One file for the whole host: emulated nodes share its /dev/shm. */
    const char *ballast = "/dev/shm/plancoll-test-ballast";
    int fd = -1;
    if (tl_rank == 0) {
        fd = open(ballast, O_CREAT | O_RDWR | O_TRUNC, 0600);
        TL_CHECK(fd >= 0, "cannot create %s: %s", ballast, strerror(errno));
        /* everything that is free but 256 KiB (MPI may need a little) */
        struct statvfs s;
        statvfs("/dev/shm", &s);
        size_t avail = (size_t)s.f_bavail * s.f_frsize;
        if (fd >= 0 && avail > (256u << 10)) TL_CHECK(posix_fallocate(fd, 0, (off_t)(avail - (256u << 10))) == 0, "ballast");
    }
    tl_barrier(MPI_COMM_WORLD);
    p = (void *)&p;
    rc = plancoll_malloc(quarter, MPI_COMM_WORLD, &p);
    expect_nomem_everywhere(rc, quarter, "plancoll_malloc from an existing part while /dev/shm is full");
    TL_CHECK(p == NULL, "a failed plancoll_malloc left *ptr = %p", p);
    if (rc == PLANCOLL_SUCCESS && p) {
        memset(p, 1, quarter);
        plancoll_free(p);
    }
    tl_barrier(MPI_COMM_WORLD);
    if (fd >= 0) {
        close(fd);
        unlink(ballast);
    }
    tl_barrier(MPI_COMM_WORLD);
    TL_OK(plancoll_malloc(quarter, MPI_COMM_WORLD, &p));
    if (p) {
        memset(p, 4, quarter);
        TL_OK(plancoll_free(p));
    }
    TL_OK(plancoll_malloc(1000, MPI_COMM_WORLD, &p));
    if (p) {
        memset(p, 5, 1000);
        TL_OK(plancoll_free(p));
    }
}

/* ---- a transpose whose send scratch cannot live in the heap ---- */
static void test_transpose(void)
{
    tl_force("alltoall.pairwise"); /* no shared memory of its own: only the heap scratch is at stake */
    const ptrdiff_t P = tl_size;
    /* each rank's share (the scratch in the heap) half the free space: the node's shares do not fit */
    ptrdiff_t n = 1;
    while ((size_t)(n / P + 1) * (size_t)n * 8 < shm_free / 2) n *= 2;
    n = (n + P - 1) / P * P;
    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc = plancoll_local_size_transposed(n, n, MPI_COMM_WORLD, &ln0, &s0, &ln1, &s1);
    double *in = malloc(sizeof(double) * (size_t)alloc), *out = malloc(sizeof(double) * (size_t)alloc);
    TL_CHECK(in && out, "transpose buffers");
    for (ptrdiff_t i = 0; i < ln0; i++)
        for (ptrdiff_t j = 0; j < n; j++) in[i * n + j] = (double)((s0 + i) * n + j);
    plancoll_plan t = NULL;
    TL_OK(plancoll_plan_transpose(n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &t));
    if (t) {
        TL_OK(plancoll_execute(t));
        long bad = -1;
        for (ptrdiff_t j = 0; j < ln1 && bad < 0; j++)
            for (ptrdiff_t i = 0; i < n; i++)
                if (out[j * n + i] != (double)(i * n + s1 + j)) {
                    bad = (long)(j * n + i);
                    break;
                }
        TL_CHECK(bad < 0, "transpose %td x %td: element %ld wrong", n, n, bad);
        TL_OK(plancoll_destroy_plan(&t));
    }
    free(in);
    free(out);
    tl_force(NULL);
    if (tl_rank == 0) printf("  transpose %td x %td (heap scratch refused, private scratch used): correct\n", n, n);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "shmlimit");
    tl_split_node(MPI_COMM_WORLD, tl_rank, &node);
    MPI_Comm_rank(node, &nrank);
    MPI_Comm_size(node, &nsize);
    int leader = nrank == 0, nnodes = 0;
    tl_allreduce(&leader, &nnodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

    struct statvfs s;
    unsigned long long fs[2] = {0, 0};
    if (tl_rank == 0 && statvfs("/dev/shm", &s) == 0) {
        fs[0] = (unsigned long long)s.f_bavail * s.f_frsize;
        fs[1] = (unsigned long long)s.f_blocks * s.f_frsize;
    }
    MPI_Bcast(fs, 2, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
    shm_free = (size_t)fs[0];
    if (tl_rank == 0) printf("/dev/shm: %llu bytes, %llu free after MPI_Init\n", fs[1], fs[0]);
    /* Sizes of twice the free space on a large /dev/shm would take gigabytes of private buffers. */
    TL_CHECK(fs[1] > 0 && fs[1] <= ((unsigned long long)1 << 30) && fs[0] >= ((unsigned long long)4 << 20),
             "/dev/shm holds %llu bytes (%llu free): run this program through run-shm-limit-test.sh, which gives it a "
             "small tmpfs", fs[1], fs[0]);
    if (tl_failures == 0) {
        static const struct shm_case cases[] = {
            {"alltoall.leader", 0, false},
            {"alltoall.mpml:leaders=2", 0, false},
            {"alltoall.mpml:leaders=2:transport=put", 0, true},
            {"alltoall.onmpml:leaders=2", 0, false},
            {"alltoall.onmpml:leaders=2:transport=put", 0, true},
            {"alltoall.pap", 0, false},
            {"alltoall.pap:transport=put", 0, true},
            {"alltoallv.aggregated", 1, false},
            {"alltoallv.aggregated:transport=put", 1, true},
            {"allreduce.leader", 2, false},
            {"allreduce.dpml:leaders=2", 2, false},
            {"allreduce.dpml_pipelined:leaders=2", 2, false},
        };
        /* An argument runs one case only (a forced spec, "malloc" or "transpose"). */
        const char *only = argc > 1 ? argv[1] : NULL;
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            if (!only || strcmp(only, cases[i].forced) == 0) test_case(&cases[i], nnodes);
        static const struct fallback_case fallbacks[] = {
            {0, "alltoall.pap,alltoall.leader", "alltoall.pap,alltoall.leader,alltoall.bruck:radix=2", "alltoall.bruck"},
            {1, "alltoallv.aggregated", "alltoallv.aggregated,alltoallv.padded_bruck:radix=2", "alltoallv.padded_bruck"},
            {2, "allreduce.leader,allreduce.dpml", "allreduce.leader,allreduce.dpml,allreduce.recursive_doubling",
             "allreduce.recursive_doubling"},
        };
        for (size_t i = 0; i < sizeof fallbacks / sizeof fallbacks[0]; i++)
            if (!only || strcmp(only, "fallback") == 0) test_fallback(&fallbacks[i]);
        if (!only || strcmp(only, "malloc") == 0) test_malloc();
        if (!only || strcmp(only, "transpose") == 0) test_transpose();
    }
    MPI_Comm_free(&node);
    return tl_finish();
}
