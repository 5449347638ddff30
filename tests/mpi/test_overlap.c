/* Plans made for overlap (PLANCOLL_OVERLAP, docs/design.md "Planning for overlap"):
 * - each collective (alltoall, alltoallv with uneven counts, allreduce) planned with PLANCOLL_OVERLAP under
 *   ESTIMATE and under MEASURE, then three rounds of: new data, plancoll_start, computation with a plancoll_test
 *   every few microseconds, plancoll_wait; results checked exactly against values computed independently;
 * - plancoll_fprint_plan of such a plan shows the caller's busy estimate against the critical path (and, measured,
 *   the overlapped time);
 * - the flag's wisdom is its own: after an overlap plan of a problem was measured, a plain MEASURE plan of the same
 *   problem is timed afresh (not answered by the overlap decision) and the reverse, each then answered by its own
 *   wisdom; the exported wisdom carries both keys. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile double sink;

/* The caller's work between two tests: a few microseconds of arithmetic. */
static void compute_a_little(void)
{
    double end = now() + 4e-6, acc = sink;
    while (now() < end)
        for (int k = 0; k < 50; k++) acc = acc * 0.999 + 1.0;
    sink = acc;
}

enum coll { A2A, A2AV, AR, NCOLL };
static const char *const coll_names[NCOLL] = {"alltoall", "alltoallv", "allreduce"};

static long val(int src, int dst, int i, int round) { return (long)src * 1000003L + dst * 1009L + i * 7L + round * 100000007L; }

/* alltoallv: rank s sends (s + d) % 3 + i elements to d (some zero-sized blocks when i is 0). */
static int vcount(int s, int d, int base) { return (s + d) % 3 == 0 ? 0 : (s + d) % 3 + base; }

struct prob {
    enum coll c;
    int P, r, n;
    long *s, *d;
    int *sc, *sd, *rc, *rd;
    plancoll_plan plan;
};

static int prob_make(struct prob *x, enum coll c, int n, unsigned flags)
{
    memset(x, 0, sizeof *x);
    x->c = c;
    x->n = n;
    x->P = tl_size;
    x->r = tl_rank;
    const int P = x->P;
    size_t slen = (size_t)n * (size_t)P, rlen = slen;
    if (c == AR) slen = rlen = (size_t)n;
    if (c == A2AV) {
        x->sc = calloc(4 * (size_t)P, sizeof(int));
        x->sd = x->sc + P, x->rc = x->sd + P, x->rd = x->rc + P;
        int so = 0, ro = 0;
        for (int j = 0; j < P; j++) {
            x->sc[j] = vcount(x->r, j, n), x->sd[j] = so, so += x->sc[j];
            x->rc[j] = vcount(j, x->r, n), x->rd[j] = ro, ro += x->rc[j];
        }
        slen = (size_t)so + 1, rlen = (size_t)ro + 1;
    }
    x->s = calloc(slen, sizeof(long));
    x->d = calloc(rlen, sizeof(long));
    switch (c) {
    case A2A:
        return plancoll_plan_alltoall(x->s, n, MPI_LONG, x->d, n, MPI_LONG, MPI_COMM_WORLD, flags, &x->plan);
    case A2AV:
        return plancoll_plan_alltoallv(x->s, x->sc, x->sd, MPI_LONG, x->d, x->rc, x->rd, MPI_LONG, MPI_COMM_WORLD,
                                       flags, &x->plan);
    default: return plancoll_plan_allreduce(x->s, x->d, n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, flags, &x->plan);
    }
}

static void prob_free(struct prob *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    free(x->s);
    free(x->d);
    free(x->sc);
}

static void fill(struct prob *x, int round)
{
    const int P = x->P;
    if (x->c == AR) {
        for (int i = 0; i < x->n; i++) x->s[i] = val(x->r, 0, i, round);
        return;
    }
    for (int j = 0; j < P; j++) {
        int cnt = x->c == A2A ? x->n : x->sc[j], off = x->c == A2A ? j * x->n : x->sd[j];
        for (int i = 0; i < cnt; i++) x->s[off + i] = val(x->r, j, i, round);
    }
    size_t rl = x->c == A2A ? (size_t)x->n * (size_t)P : (size_t)(x->rd[P - 1] + x->rc[P - 1]);
    for (size_t i = 0; i < rl; i++) x->d[i] = -1;
}

static long check(const struct prob *x, int round)
{
    const int P = x->P;
    long bad = 0;
    if (x->c == AR) {
        for (int i = 0; i < x->n; i++) {
            long want = 0;
            for (int s = 0; s < P; s++) want += val(s, 0, i, round);
            bad += x->d[i] != want;
        }
        return bad;
    }
    for (int j = 0; j < P; j++) {
        int cnt = x->c == A2A ? x->n : x->rc[j], off = x->c == A2A ? j * x->n : x->rd[j];
        for (int i = 0; i < cnt; i++) bad += x->d[off + i] != val(j, x->r, i, round);
    }
    return bad;
}

/* plancoll_fprint_plan's text on rank 0's terms: the caller frees it. */
static char *fprint_text(plancoll_plan plan)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f) return NULL;
    TL_OK(plancoll_fprint_plan(plan, f));
    fclose(f);
    return text;
}

/* Start, compute with a test every few microseconds until it completes (or a bound), wait; three rounds. */
static void run_overlapped(enum coll c, int n, unsigned rigor)
{
    struct prob x;
    int rc = prob_make(&x, c, n, rigor | PLANCOLL_OVERLAP);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "%s (n %d) with PLANCOLL_OVERLAP%s: %d (%s) %s", coll_names[c], n,
             rigor ? " | MEASURE" : "", rc, plancoll_strerror(rc), plancoll_error_detail());
    if (rc != PLANCOLL_SUCCESS) {
        prob_free(&x);
        return;
    }
    for (int round = 0; round < 3; round++) {
        fill(&x, round);
        TL_OK(plancoll_start(x.plan));
        int done = 0;
        for (int k = 0; k < 2000 && !done; k++) {
            compute_a_little();
            TL_OK(plancoll_test(x.plan, &done));
        }
        TL_OK(plancoll_wait(x.plan));
        long bad = check(&x, round);
        TL_CHECK(bad == 0, "%s (n %d, %s, %s) round %d: %ld wrong elements", coll_names[c], n,
                 plancoll_plan_algorithm(x.plan), rigor ? "MEASURE" : "ESTIMATE", round, bad);
    }
    char *text = fprint_text(x.plan);
    TL_CHECK(text && strstr(text, "overlap     busy ") && strstr(text, "us critical path"),
             "%s: fprint of an overlap plan shows no busy estimate:\n%s", coll_names[c], text ? text : "(none)");
    if (rigor)
        TL_CHECK(text && strstr(text, "measured start, compute, wait"),
                 "%s: fprint of a measured overlap plan shows no overlapped time:\n%s", coll_names[c],
                 text ? text : "(none)");
    if (tl_rank == 0 && text && getenv("TEST_OVERLAP_VERBOSE")) fputs(text, stdout);
    free(text);
    prob_free(&x);
}

/* How the plan of (c, n, flags) was chosen, from its fprint ("measured", "wisdom", ...); "" on failure. */
static void chosen_by(enum coll c, int n, unsigned flags, char *out, size_t len)
{
    struct prob x;
    out[0] = '\0';
    int rc = prob_make(&x, c, n, flags);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "%s flags 0x%x: %d (%s) %s", coll_names[c], flags, rc, plancoll_strerror(rc),
             plancoll_error_detail());
    if (rc == PLANCOLL_SUCCESS) {
        char *text = fprint_text(x.plan), *at = text ? strstr(text, "chosen by   ") : NULL;
        if (at) {
            at += strlen("chosen by   ");
            size_t k = 0;
            while (at[k] && at[k] != ' ' && at[k] != '\n' && k + 1 < len) out[k] = at[k], k++;
            out[k] = '\0';
        }
        free(text);
    }
    prob_free(&x);
}

static void wisdom_isolation(void)
{
    TL_OK(plancoll_forget_wisdom());
    char how[32];
    const int n = 5;
    chosen_by(A2A, n, PLANCOLL_MEASURE | PLANCOLL_OVERLAP, how, sizeof how);
    TL_CHECK(strcmp(how, "measured") == 0, "first overlap plan chosen by '%s', expected measured", how);
    chosen_by(A2A, n, PLANCOLL_MEASURE, how, sizeof how);
    TL_CHECK(strcmp(how, "measured") == 0, "a plain plan after an overlap one chosen by '%s': overlap wisdom answered it", how);
    chosen_by(A2A, n, PLANCOLL_MEASURE | PLANCOLL_NONBLOCKING, how, sizeof how);
    TL_CHECK(strcmp(how, "wisdom") == 0, "a NONBLOCKING plan after a plain one chosen by '%s', expected wisdom", how);
    chosen_by(A2A, n, PLANCOLL_MEASURE | PLANCOLL_OVERLAP, how, sizeof how);
    TL_CHECK(strcmp(how, "wisdom") == 0, "the second overlap plan chosen by '%s', expected wisdom", how);
    char *text = NULL;
    TL_OK(plancoll_export_wisdom_to_string(&text, MPI_COMM_WORLD));
    if (tl_rank == 0) {
        char plain[96], over[96];
        snprintf(plain, sizeof plain, "alltoall:P=%d:", tl_size);
        snprintf(over, sizeof over, "block=%zu:inplace=0:overlap=1 ", n * sizeof(long));
        TL_CHECK(text && strstr(text, plain) && strstr(text, over), "exported wisdom lacks the overlap key:\n%s",
                 text ? text : "(none)");
    }
    free(text);
    TL_OK(plancoll_forget_wisdom());
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "overlap");
    tl_force(NULL);
    const int sizes[NCOLL] = {16, 3, 700};
    for (int c = 0; c < NCOLL; c++) {
        run_overlapped((enum coll)c, sizes[c], PLANCOLL_ESTIMATE);
        run_overlapped((enum coll)c, sizes[c], PLANCOLL_MEASURE);
    }
    wisdom_isolation();
    return tl_finish();
}
