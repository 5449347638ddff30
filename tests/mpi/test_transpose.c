/* plancoll_plan_transpose and plancoll_local_size_transposed: every (n0, n1) in {0,1,3,7,16,33}^2 (sizes that do
 * not divide P, ranks with no rows), in place and out of place, MPI_DOUBLE, MPI_C_DOUBLE_COMPLEX, a contiguous
 * derived type (3 ints: a size the specialised copies do not cover) and a dense type whose data starts 8 bytes
 * after its address (lb 8); three executions with new data, then execute_buffers on other buffers (the other
 * in-place-ness); each registered alltoall / alltoallv algorithm forced as the inner exchange; the fused strategy
 * forced, on private and on node-shared (plancoll_malloc) buffers; MEASURE; a sub-communicator; bad input. Expected values come from the data pattern: byte k of input element (i, j) in
 * execution `it` is a hash of (i, j, it, k), and output element (j, i) must carry exactly those bytes. Guard
 * bytes after every buffer, and the input of an out-of-place transpose, must stay as they were. */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define GUARD 64
#define SENTINEL 0xa5

struct elem {
    MPI_Datatype type;
    const char *name;
    size_t es;    /* bytes of data */
    MPI_Aint lb;  /* where an element's data starts, from its address */
};

static uint8_t pattern(ptrdiff_t i, ptrdiff_t j, int it, size_t k)
{
    uint64_t s = (uint64_t)i * UINT64_C(0x100000001b3) ^ (uint64_t)j * UINT64_C(0x9e3779b97f4a7c15) ^
                 (uint64_t)it * UINT64_C(0x632be59bd9b4e019);
    uint64_t v = tl_rand(&s);
    return (uint8_t)((v >> (8 * (k % 8))) ^ (k / 8) * 0x3b);
}

struct buffer {
    unsigned char *raw;
    size_t bytes; /* data area: alloc elements */
};

/* Buffers come from plancoll_malloc on this communicator when it is set (node-shared: the fused transpose's node
 * peers then read the input in place), else from malloc. */
static MPI_Comm shared_comm = MPI_COMM_NULL;

static struct buffer buffer_new(ptrdiff_t alloc, const struct elem *e)
{
    struct buffer b;
    b.bytes = (size_t)alloc * e->es + (size_t)e->lb;
    if (shared_comm != MPI_COMM_NULL) TL_OK(plancoll_malloc(b.bytes + GUARD, shared_comm, (void **)&b.raw));
    else b.raw = malloc(b.bytes + GUARD);
    memset(b.raw, SENTINEL, b.bytes + GUARD);
    return b;
}

static void buffer_free(struct buffer *b)
{
    if (shared_comm != MPI_COMM_NULL) TL_OK(plancoll_free(b->raw));
    else free(b->raw);
    b->raw = NULL;
}

static void fill(struct buffer *b, const struct elem *e, ptrdiff_t rows, ptrdiff_t row0, ptrdiff_t cols, int it)
{
    unsigned char *d = b->raw + e->lb;
    for (ptrdiff_t i = 0; i < rows; i++)
        for (ptrdiff_t j = 0; j < cols; j++)
            for (size_t k = 0; k < e->es; k++) *d++ = pattern(row0 + i, j, it, k);
}

/* rows x cols of the transposed pattern: element (r, c) of this block is input element (c, row0 + r). */
static long check_block(const struct buffer *b, const struct elem *e, ptrdiff_t rows, ptrdiff_t row0, ptrdiff_t cols,
                        int it, bool transposed, const char *what)
{
    const unsigned char *d = b->raw + e->lb;
    long bad = 0;
    for (ptrdiff_t r = 0; r < rows; r++)
        for (ptrdiff_t c = 0; c < cols; c++)
            for (size_t k = 0; k < e->es; k++, d++) {
                uint8_t want = transposed ? pattern(c, row0 + r, it, k) : pattern(row0 + r, c, it, k);
                if (*d != want) {
                    if (bad++ == 0)
                        TL_CHECK(0, "%s: element (%td, %td) byte %zu is 0x%02x, expected 0x%02x", what, row0 + r, c, k,
                                 *d, want);
                }
            }
    tl_checks++;
    return bad;
}

static void check_guard(const struct buffer *b, const char *what)
{
    for (size_t i = 0; i < GUARD; i++)
        if (b->raw[b->bytes + i] != SENTINEL) {
            TL_CHECK(0, "%s: guard byte %zu after the buffer was written", what, i);
            return;
        }
    tl_checks++;
}

static int skipped;
static bool expect_heap; /* the case's share is large enough for the send scratch to live in the node-shared heap */

static void plan_text(plancoll_plan p, char *text, size_t len)
{
    FILE *f = tmpfile();
    TL_OK(plancoll_fprint_plan(p, f));
    rewind(f);
    size_t got = fread(text, 1, len - 1, f);
    text[got] = '\0';
    fclose(f);
}
static char skip_detail[256];

/* One transpose plan on comm: three executions with new data, then one execute_buffers on other buffers. */
static void run_case(MPI_Comm comm, ptrdiff_t n0, ptrdiff_t n1, const struct elem *e, bool in_place, unsigned flags,
                     const char *forced)
{
    int P, rank;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &rank);
    ptrdiff_t ln0 = -1, s0 = -1, ln1 = -1, s1 = -1;
    ptrdiff_t alloc = plancoll_local_size_transposed(n0, n1, comm, &ln0, &s0, &ln1, &s1);
    char what[160];
    snprintf(what, sizeof what, "%tdx%td %s %s P=%d%s%s", n0, n1, e->name, in_place ? "in place" : "out of place", P,
             forced ? " forced " : "", forced ? forced : "");
    TL_CHECK(alloc >= 1 && alloc >= ln0 * n1 && alloc >= ln1 * n0, "%s: local size %td too small", what, alloc);
    if (alloc < 1) return;
    struct buffer in = buffer_new(alloc, e), out = in_place ? in : buffer_new(alloc, e);
    plancoll_plan p = NULL;
    fill(&in, e, ln0, s0, n1, 0);
    int rc = plancoll_plan_transpose(n0, n1, e->type, in.raw, out.raw, comm, flags, &p);
    if (forced && rc == PLANCOLL_ERR_INAPPLICABLE) {
        if (!skipped++) snprintf(skip_detail, sizeof skip_detail, "%s: %s", what, plancoll_error_detail());
    } else {
        TL_CHECK(rc == PLANCOLL_SUCCESS, "%s: plan failed: %s: %s", what, plancoll_strerror(rc), plancoll_error_detail());
    }
    if (rc != PLANCOLL_SUCCESS) {
        buffer_free(&in);
        if (!in_place) buffer_free(&out);
        return;
    }
    const char *name = plancoll_plan_algorithm(p);
    TL_CHECK(name && strncmp(name, "transpose(", 10) == 0, "%s: plan algorithm is '%s'", what, name ? name : "(null)");
    bool moves = P > 1 && n0 > 0 && n1 > 0;
    /* "transpose.fused" names the strategy (plan "transpose(fused)"), an inner algorithm the composite's exchange */
    bool fused_forced = forced && strcmp(forced, "transpose.fused") == 0;
    if (forced && moves && name && strncmp(forced, "transpose.", 10) != 0)
        TL_CHECK(strstr(name, forced) != NULL, "%s: plan algorithm is '%s', not the forced one", what, name);
    if (fused_forced && moves && name)
        TL_CHECK(strcmp(name, "transpose(fused)") == 0, "%s: plan algorithm is '%s', not the forced fused one", what,
                 name);
    char text[4096] = "";
    if (moves) {
        plan_text(p, text, sizeof text);
        bool composite = strstr(text, "strategy    composite") != NULL, fused = strstr(text, "strategy    fused") != NULL;
        TL_CHECK(composite != fused, "%s: the plan is neither composite nor fused, or both:\n%s", what, text);
        if (composite) {
            bool heap = strstr(text, "scratch     node-shared heap") != NULL;
            TL_CHECK(heap == expect_heap, "%s: send scratch %s the heap, expected %s:\n%s", what, heap ? "in" : "not in",
                     expect_heap ? "in" : "not in", text);
        }
    }
    for (int it = 0; it < 3; it++) {
        if (it > 0) fill(&in, e, ln0, s0, n1, it);
        TL_OK(plancoll_execute(p));
        char w[200];
        snprintf(w, sizeof w, "%s execution %d", what, it);
        check_block(&out, e, ln1, s1, n0, it, true, w);
        if (!in_place) check_block(&in, e, ln0, s0, n1, it, false, "input after an out-of-place transpose");
        check_guard(&in, w);
        if (!in_place) check_guard(&out, w);
    }
    /* A fused plan on node-shared, separate buffers: node peers read the input in place (one pass) wherever this
     * rank has node peers; otherwise (private or in place) its rows go through its shared slot. */
    if (moves && strcmp(name, "transpose(fused)") == 0) {
        plan_text(p, text, sizeof text);
        int node_size = 1;
        MPI_Comm node;
        tl_split_node(comm, 0, &node);
        MPI_Comm_size(node, &node_size);
        MPI_Comm_free(&node);
        /* in place with no output rows overwrites nothing, so peers may read that input in place too */
        bool one_pass = shared_comm != MPI_COMM_NULL && (!in_place || ln1 * n0 == 0) && node_size > 1 && ln0 * n1 > 0;
        const char *want = one_pass ? "last run    node peers read this rank's input in place"
                                    : "last run    this rank's rows packed into its shared slot";
        TL_CHECK(strstr(text, want) != NULL, "%s: expected '%s' in:\n%s", what, want, text);
    }
    /* Other buffers, and the other in-place-ness. */
    struct buffer in2 = buffer_new(alloc, e), out2 = in_place ? buffer_new(alloc, e) : in2;
    fill(&in2, e, ln0, s0, n1, 3);
    TL_OK(plancoll_execute_buffers(p, in2.raw, out2.raw));
    char w[200];
    snprintf(w, sizeof w, "%s execute_buffers (%s)", what, in_place ? "out of place" : "in place");
    check_block(&out2, e, ln1, s1, n0, 3, true, w);
    check_block(&out, e, ln1, s1, n0, 2, true, "the planned output after execute_buffers on others");
    check_guard(&in2, w);
    if (in_place) check_guard(&out2, w);
    TL_OK(plancoll_destroy_plan(&p));
    TL_CHECK(p == NULL, "%s: destroy left the handle set", what);
    buffer_free(&in);
    if (!in_place) buffer_free(&out);
    buffer_free(&in2);
    if (in_place) buffer_free(&out2);
}

/* MEASURE's strategy decision is wisdom: a second plan of the shape takes it without timing, the exported text
 * carries it as a transpose record, and it survives forget + import; an imported record naming no strategy is
 * refused. (The shape was planned with MEASURE just before, so the process holds the decision.) */
static void strategy_wisdom(ptrdiff_t n0, ptrdiff_t n1)
{
    if (tl_size < 2) return;
    ptrdiff_t alloc = plancoll_local_size_transposed(n0, n1, MPI_COMM_WORLD, NULL, NULL, NULL, NULL);
    char *in = calloc((size_t)alloc, 16), *out = calloc((size_t)alloc, 16), text[4096];
    plancoll_plan p = NULL;
    TL_OK(plancoll_plan_transpose(n0, n1, MPI_C_DOUBLE_COMPLEX, in, out, MPI_COMM_WORLD, PLANCOLL_MEASURE, &p));
    plan_text(p, text, sizeof text);
    TL_CHECK(strstr(text, "chosen by   wisdom") != NULL, "the second MEASURE plan did not take the strategy from wisdom:\n%s",
             text);
    TL_OK(plancoll_destroy_plan(&p));
    char *w = NULL;
    TL_OK(plancoll_export_wisdom_to_string(&w, MPI_COMM_WORLD));
    char key[128];
    snprintf(key, sizeof key, "transpose:P=%d:", tl_size);
    TL_CHECK(w && strstr(w, key) && (strstr(w, "transpose.fused") || strstr(w, "transpose.composite")),
             "exported wisdom has no transpose record for %s", key);
    TL_OK(plancoll_forget_wisdom());
    if (w) TL_OK(plancoll_import_wisdom_from_string(w, MPI_COMM_WORLD));
    TL_OK(plancoll_plan_transpose(n0, n1, MPI_C_DOUBLE_COMPLEX, in, out, MPI_COMM_WORLD, PLANCOLL_MEASURE, &p));
    plan_text(p, text, sizeof text);
    TL_CHECK(strstr(text, "chosen by   wisdom") != NULL, "the strategy was not taken from imported wisdom:\n%s", text);
    TL_OK(plancoll_destroy_plan(&p));
    /* a record that names something else under a transpose key is an edited file: refused, nothing changes */
    char *rec = w ? strstr(w, "record transpose:") : NULL;
    char *alg = rec ? strchr(rec + 7, ' ') : NULL;
    if (alg) {
        alg++; /* the record's algorithm: transpose.fused or transpose.composite, replaced by transpose.bogus */
        size_t old_len = strcspn(alg, " \n"), new_len = strlen("transpose.bogus");
        memmove(alg + new_len, alg + old_len, strlen(alg + old_len) + 1);
        memcpy(alg, "transpose.bogus", new_len);
        int rc = plancoll_import_wisdom_from_string(w, MPI_COMM_WORLD);
        TL_CHECK(rc == PLANCOLL_ERR_WISDOM_FORMAT, "a transpose record naming 'transpose.bogus' was imported: %d", rc);
    } else {
        TL_CHECK(0, "no transpose record in the exported wisdom");
    }
    free(w);
    free(in);
    free(out);
}

/* plancoll_local_size_transposed: the ranks' shares tile [0, n) in rank order, each at most ceil(n/P), all full
 * before the first short one; ranks without rows report start 0. */
static void check_distribution(MPI_Comm comm)
{
    int P;
    MPI_Comm_size(comm, &P);
    static const ptrdiff_t ns[] = {0, 1, 2, 3, 5, 7, 8, 16, 33, 1000};
    for (size_t a = 0; a < sizeof ns / sizeof ns[0]; a++) {
        ptrdiff_t n = ns[a], m = ns[(a + 3) % (sizeof ns / sizeof ns[0])];
        ptrdiff_t mine[4];
        ptrdiff_t alloc = plancoll_local_size_transposed(n, m, comm, &mine[0], &mine[1], &mine[2], &mine[3]);
        ptrdiff_t *all = malloc(sizeof(ptrdiff_t) * 4 * (size_t)P);
        tl_allgather(mine, 4, MPI_AINT, all, comm); /* ptrdiff_t and MPI_Aint are both the pointer width here */
        for (int d = 0; d < 2; d++) {
            ptrdiff_t len = d == 0 ? n : m, b = (len + P - 1) / P, next = 0;
            bool short_seen = false;
            for (int r = 0; r < P; r++) {
                ptrdiff_t ln = all[4 * r + 2 * d], st = all[4 * r + 2 * d + 1];
                TL_CHECK(ln >= 0 && ln <= b, "n=%td P=%d rank %d holds %td rows (block %td)", len, P, r, ln, b);
                if (ln > 0) {
                    TL_CHECK(!short_seen && st == next, "n=%td P=%d rank %d starts at %td, expected %td", len, P, r, st, next);
                    if (ln < b) short_seen = true;
                    next = st + ln;
                } else {
                    TL_CHECK(st == 0, "n=%td P=%d rank %d holds no rows but starts at %td", len, P, r, st);
                    short_seen = true;
                }
            }
            TL_CHECK(next == len, "n=%td P=%d: the shares cover %td rows", len, P, next);
        }
        ptrdiff_t want = mine[0] * m > mine[2] * n ? mine[0] * m : mine[2] * n;
        TL_CHECK(alloc == (want > 1 ? want : 1), "n0=%td n1=%td: local size %td, expected %td", n, m, alloc, want);
        free(all);
    }
}

static int failed_everywhere(int rc, int expected, bool here, const char *what)
{
    if (here)
        TL_CHECK(rc == expected, "%s: got %d (%s), expected %d (%s): %s", what, rc, plancoll_strerror(rc), expected,
                 plancoll_strerror(expected), plancoll_error_detail());
    else
        TL_CHECK(rc == expected || rc == PLANCOLL_ERR_REMOTE, "%s: got %d (%s) on a rank with good arguments", what,
                 rc, plancoll_strerror(rc));
    TL_CHECK(rc == PLANCOLL_SUCCESS || plancoll_error_detail()[0] != '\0', "%s: no detail", what);
    return rc;
}

static void bad_input(void)
{
    const int n = 8;
    ptrdiff_t alloc = plancoll_local_size_transposed(n, n, MPI_COMM_WORLD, NULL, NULL, NULL, NULL);
    double *in = malloc(sizeof(double) * (size_t)alloc), *out = malloc(sizeof(double) * (size_t)alloc);
    for (ptrdiff_t i = 0; i < alloc; i++) in[i] = (double)i;
    memset(out, SENTINEL, sizeof(double) * (size_t)alloc);
    plancoll_plan p = (plancoll_plan)(uintptr_t)1;
    const int last = tl_size - 1;
    struct {
        const char *what;
        ptrdiff_t n0, n1;
        MPI_Datatype type;
        void *in, *out;
        MPI_Comm comm;
        unsigned flags;
        int expected;
        int rank; /* the rank with the bad argument, -1 every rank */
    } cases[] = {
        {"n0 < 0 on every rank", -1, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_COUNT, -1},
        {"n1 < 0 on the last rank", n, -3, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_COUNT, last},
        {"NULL in on rank 0", n, n, MPI_DOUBLE, NULL, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_NULL_BUFFER, 0},
        {"NULL out on the last rank", n, n, MPI_DOUBLE, in, NULL, MPI_COMM_WORLD, 0, PLANCOLL_ERR_NULL_BUFFER, last},
        {"MPI_DATATYPE_NULL", n, n, MPI_DATATYPE_NULL, in, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_DATATYPE, -1},
        {"MPI_IN_PLACE as in", n, n, MPI_DOUBLE, MPI_IN_PLACE, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_IN_PLACE, -1},
        {"unknown flag bits", n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 1u << 20, PLANCOLL_ERR_FLAGS, -1},
        {"n1 differs on rank 0", n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, PLANCOLL_ERR_MISMATCH, 0},
    };
    /* not dense: a double stretched to 16 bytes */
    MPI_Datatype holey;
    MPI_Type_create_resized(MPI_DOUBLE, 0, 16, &holey);
    MPI_Type_commit(&holey);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        bool here = cases[c].rank < 0 || cases[c].rank == tl_rank;
        ptrdiff_t n0 = n, n1 = n;
        void *bi = in, *bo = out;
        if (here) {
            n0 = cases[c].n0;
            n1 = cases[c].n1;
            bi = cases[c].in;
            bo = cases[c].out;
        }
        if (cases[c].expected == PLANCOLL_ERR_MISMATCH && here) n1 = n + 1;
        if (cases[c].expected == PLANCOLL_ERR_MISMATCH && tl_size == 1) continue; /* one rank cannot disagree */
        p = (plancoll_plan)(uintptr_t)1;
        int rc = plancoll_plan_transpose(n0, n1, here ? cases[c].type : MPI_DOUBLE, bi, bo, cases[c].comm,
                                         here ? cases[c].flags : 0, &p);
        if (cases[c].expected == PLANCOLL_ERR_NULL_BUFFER) {
            /* A rank whose share is empty may pass NULL: then nothing is wrong anywhere. */
            ptrdiff_t b = (n + tl_size - 1) / tl_size, share = n - cases[c].rank * b;
            if (share <= 0) {
                TL_CHECK(rc == PLANCOLL_SUCCESS, "%s on a rank without rows: got %d (%s)", cases[c].what, rc,
                         plancoll_strerror(rc));
                if (rc == PLANCOLL_SUCCESS) plancoll_destroy_plan(&p);
                continue;
            }
        }
        failed_everywhere(rc, cases[c].expected, here, cases[c].what);
        TL_CHECK(p == NULL, "%s: a failed plan must set the handle to NULL", cases[c].what);
        if (rc == PLANCOLL_SUCCESS) plancoll_destroy_plan(&p);
    }
    int rc = plancoll_plan_transpose(n, n, holey, in, out, MPI_COMM_WORLD, 0, &p);
    failed_everywhere(rc, PLANCOLL_ERR_DATATYPE, true, "a type with holes");
    rc = plancoll_plan_transpose(n, n, MPI_DOUBLE, in, out, MPI_COMM_NULL, 0, &p);
    failed_everywhere(rc, PLANCOLL_ERR_COMM, true, "MPI_COMM_NULL");
    rc = plancoll_plan_transpose(n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, NULL);
    failed_everywhere(rc, PLANCOLL_ERR_NULL_PLAN, true, "NULL plan pointer");
    if (tl_size > 1) {
        /* a strategy forced on rank 0 only (PLANCOLL_ALGORITHM differs across ranks): every rank refuses */
        if (tl_rank == 0) setenv("PLANCOLL_ALGORITHM", "transpose.fused", 1);
        rc = plancoll_plan_transpose(n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, &p);
        if (tl_rank == 0) unsetenv("PLANCOLL_ALGORITHM");
        failed_everywhere(rc, PLANCOLL_ERR_MISMATCH, true, "transpose.fused forced on rank 0 only");
        if (rc == PLANCOLL_SUCCESS) plancoll_destroy_plan(&p);
    }
    for (ptrdiff_t i = 0; i < alloc; i++) {
        unsigned char *b = (unsigned char *)&out[i];
        for (size_t k = 0; k < sizeof(double); k++)
            if (b[k] != SENTINEL) {
                TL_CHECK(0, "a failed transpose plan wrote into out (element %td)", i);
                i = alloc;
                break;
            }
    }
    /* The inner exchange's planning fails after the send scratch came from the node-shared heap (rank 0's share of
     * 16 x 512 doubles is 64 KiB): releasing that scratch must not erase why the plan failed. */
    if (tl_size > 1) {
        const ptrdiff_t h0 = 16 * (ptrdiff_t)tl_size, h1 = 512;
        ptrdiff_t halloc = plancoll_local_size_transposed(h0, h1, MPI_COMM_WORLD, NULL, NULL, NULL, NULL);
        double *hin = calloc((size_t)halloc, sizeof(double)), *hout = calloc((size_t)halloc, sizeof(double));
        tl_force("alltoall.no_such_algorithm");
        rc = plancoll_plan_transpose(h0, h1, MPI_DOUBLE, hin, hout, MPI_COMM_WORLD, 0, &p);
        tl_force(NULL);
        failed_everywhere(rc, PLANCOLL_ERR_ALGORITHM, true, "an unknown inner algorithm, scratch in the heap");
        TL_CHECK(strstr(plancoll_error_detail(), "alltoall.no_such_algorithm") != NULL,
                 "an unknown inner algorithm, scratch in the heap: the detail does not name it: '%s'",
                 plancoll_error_detail());
        free(hin);
        free(hout);
    }
    ptrdiff_t ln0 = 7;
    TL_CHECK(plancoll_local_size_transposed(-1, 4, MPI_COMM_WORLD, &ln0, NULL, NULL, NULL) == -PLANCOLL_ERR_COUNT,
             "local size of a negative n0 must be -PLANCOLL_ERR_COUNT");
    TL_CHECK(ln0 == 7, "a failed local size must not write its outputs");
    TL_CHECK(plancoll_local_size_transposed(4, 4, MPI_COMM_NULL, NULL, NULL, NULL, NULL) == -PLANCOLL_ERR_COMM,
             "local size on MPI_COMM_NULL must be -PLANCOLL_ERR_COMM");
    TL_CHECK(plancoll_local_size_transposed(PTRDIFF_MAX / 2, 4, MPI_COMM_WORLD, NULL, NULL, NULL, NULL) ==
                 -PLANCOLL_ERR_OVERFLOW,
             "local size of an oversized matrix must be -PLANCOLL_ERR_OVERFLOW");

    /* execute_buffers with bad buffers: nothing runs, the plan stays usable. */
    TL_OK(plancoll_plan_transpose(n, n, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, &p));
    ptrdiff_t l0, st0, l1, st1;
    plancoll_local_size_transposed(n, n, MPI_COMM_WORLD, &l0, &st0, &l1, &st1);
    rc = plancoll_execute_buffers(p, MPI_IN_PLACE, out);
    TL_CHECK(rc == PLANCOLL_ERR_IN_PLACE, "execute_buffers(MPI_IN_PLACE, out): got %d", rc);
    if (l0 > 0) {
        rc = plancoll_execute_buffers(p, NULL, out);
        TL_CHECK(rc == PLANCOLL_ERR_NULL_BUFFER, "execute_buffers(NULL, out): got %d", rc);
    }
    TL_OK(plancoll_execute(p));
    /* Every rank filled in[k] = k for its local k, so output (j, i) = input row i's local index i - start0(i's
     * owner), column st1 + j: (i - owner start) * n + st1 + j. */
    ptrdiff_t b0 = (n + tl_size - 1) / tl_size;
    for (ptrdiff_t j = 0; j < l1; j++)
        for (ptrdiff_t i = 0; i < n; i++) {
            ptrdiff_t owner_start = (i / b0) * b0;
            double want = (double)((i - owner_start) * n + st1 + j);
            TL_CHECK(out[j * n + i] == want, "bad-input plan: out(%td, %td) = %g, expected %g", st1 + j, i, out[j * n + i],
                     want);
        }
    char text[4096];
    plan_text(p, text, sizeof text);
    TL_CHECK(strstr(text, "plancoll plan transpose:n0=8:n1=8:elem=8") != NULL, "fprint: no transpose header in:\n%s", text);
    TL_CHECK(strstr(text, "executions  1") != NULL, "fprint: no execution count in:\n%s", text);
    if (tl_size > 1)
        TL_CHECK((strstr(text, "strategy    composite") && strstr(text, "inner plan:") != NULL &&
                  strstr(text, "plancoll plan alltoall") != NULL) ||
                     (strstr(text, "strategy    fused") && strstr(text, "predicted   composite")),
                 "fprint: neither a composite plan with its inner plan nor a fused one with both predictions in:\n%s",
                 text);
    TL_OK(plancoll_destroy_plan(&p));
    MPI_Type_free(&holey);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "transpose");
    double t_start = MPI_Wtime();

    MPI_Datatype three_ints, shifted;
    MPI_Type_contiguous(3, MPI_INT, &three_ints);
    MPI_Type_commit(&three_ints);
    int one = 1;
    MPI_Aint eight = 8;
    MPI_Datatype dbl = MPI_DOUBLE;
    MPI_Type_create_struct(1, &one, &eight, &dbl, &shifted); /* lb 8, extent 8: dense, data 8 bytes in */
    MPI_Type_commit(&shifted);
    const struct elem complex_e = {MPI_C_DOUBLE_COMPLEX, "complex", 16, 0};
    const struct elem double_e = {MPI_DOUBLE, "double", 8, 0};
    const struct elem derived[] = {{three_ints, "3 ints", 3 * sizeof(int), 0}, {shifted, "double at lb 8", 8, 8}};

    check_distribution(MPI_COMM_WORLD);

    static const ptrdiff_t sizes[] = {0, 1, 3, 7, 16, 33};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    double t0 = MPI_Wtime();
    int ncases = 0;
    /* Each plan also runs once with the other in-place-ness (execute_buffers), so one plan per pair covers both. */
    for (int a = 0; a < ns; a++)
        for (int b = 0; b < ns; b++) {
            run_case(MPI_COMM_WORLD, sizes[a], sizes[b], &complex_e, (a + b) % 2 == 0, PLANCOLL_ESTIMATE, NULL);
            ncases++;
        }
    /* The other element types on shapes with uneven blocks and idle ranks (the specialised and the generic
     * copies, and a data offset), in place and out of place. */
    static const ptrdiff_t few[][2] = {{7, 3}, {16, 33}, {1, 16}, {33, 7}};
    for (size_t k = 0; k < sizeof few / sizeof few[0]; k++) {
        run_case(MPI_COMM_WORLD, few[k][0], few[k][1], &double_e, k % 2 == 1, PLANCOLL_ESTIMATE, NULL);
        ncases++;
    }
    for (size_t d = 0; d < 2; d++)
        for (size_t k = 0; k < 2; k++) {
            run_case(MPI_COMM_WORLD, few[2 * d + k][0], few[2 * d + k][1], &derived[d], k == 0, PLANCOLL_ESTIMATE, NULL);
            ncases++;
        }
    if (tl_rank == 0) printf("transpose size matrix: %d plans, %.2f s\n", ncases, MPI_Wtime() - t0);

    /* Each inner algorithm forced: uniform blocks reach the alltoall algorithms, uneven ones the alltoallv ones. */
    const char *algs[64];
    t0 = MPI_Wtime();
    int na = tl_algorithms("alltoall", algs, 64);
    for (int a = 0; a < na; a++) {
        tl_force(algs[a]);
        run_case(MPI_COMM_WORLD, 2 * tl_size, 3 * tl_size, &complex_e, a % 2 == 1, PLANCOLL_ESTIMATE, algs[a]);
    }
    int nv = tl_algorithms("alltoallv", algs, 64);
    for (int a = 0; a < nv; a++) {
        tl_force(algs[a]);
        run_case(MPI_COMM_WORLD, 2 * tl_size + 1, 3 * tl_size - 1, &complex_e, a % 2 == 0, PLANCOLL_ESTIMATE, algs[a]);
        run_case(MPI_COMM_WORLD, 3, 2 * tl_size + 1, &double_e, a % 2 == 1, PLANCOLL_ESTIMATE, algs[a]);
    }
    tl_force(NULL);
    if (tl_rank == 0) {
        printf("transpose forced inner algorithms: %d alltoall, %d alltoallv, %.2f s\n", na, nv, MPI_Wtime() - t0);
        if (skipped) printf("    %d cases skipped as inapplicable (first: %s)\n", skipped, skip_detail);
    }

    t0 = MPI_Wtime();
    plancoll_forget_wisdom();
    run_case(MPI_COMM_WORLD, 4 * tl_size + 3, 17, &complex_e, true, PLANCOLL_MEASURE, NULL);
    /* A share of 64 KiB on rank 0 puts the send scratch in the node-shared heap: each node-aware algorithm reads
     * its node peers' blocks from there (single copy). */
    static const char *const heap_runs[] = {"transpose.composite", "alltoall.mpml", "alltoall.onmpml"};
    for (size_t k = 0; k < sizeof heap_runs / sizeof heap_runs[0]; k++) {
        tl_force(heap_runs[k]);
        expect_heap = true;
        /* n1 at least 512 and a multiple of P: uniform blocks, so the forced alltoall algorithms apply */
        run_case(MPI_COMM_WORLD, 8 * tl_size, tl_size * ((512 + tl_size - 1) / tl_size), &complex_e, k == 1,
                 PLANCOLL_ESTIMATE, heap_runs[k]);
    }
    expect_heap = false;
    tl_force(NULL);
    MPI_Comm parity;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_size - tl_rank, &parity);
    run_case(parity, 7, 16, &complex_e, false, PLANCOLL_ESTIMATE, NULL);
    run_case(parity, 33, 3, &double_e, true, PLANCOLL_ESTIMATE, NULL);
    MPI_Comm_free(&parity);
    if (tl_rank == 0) printf("transpose MEASURE, heap scratch and sub-communicators: %.2f s\n", MPI_Wtime() - t0);

    /* The fused strategy forced: uneven blocks and idle ranks, in place and out of place, every element kind; then
     * on node-shared buffers (plancoll_malloc), where node peers read an out-of-place input in place; then MEASURE
     * choosing between the strategies by timing them. */
    t0 = MPI_Wtime();
    tl_force("transpose.fused");
    static const ptrdiff_t fused_shapes[][2] = {{7, 3}, {16, 33}, {1, 16}, {33, 7}, {3, 1}};
    const int nf = (int)(sizeof fused_shapes / sizeof fused_shapes[0]);
    for (int k = 0; k < nf; k++)
        run_case(MPI_COMM_WORLD, fused_shapes[k][0], fused_shapes[k][1], &complex_e, k % 2 == 0, PLANCOLL_ESTIMATE,
                 "transpose.fused");
    run_case(MPI_COMM_WORLD, 2 * tl_size, 3 * tl_size, &double_e, false, PLANCOLL_ESTIMATE, "transpose.fused");
    run_case(MPI_COMM_WORLD, 16, 33, &derived[0], true, PLANCOLL_ESTIMATE, "transpose.fused");
    run_case(MPI_COMM_WORLD, 33, 7, &derived[1], false, PLANCOLL_ESTIMATE, "transpose.fused");
    shared_comm = MPI_COMM_WORLD;
    for (int k = 0; k < nf; k++)
        run_case(MPI_COMM_WORLD, fused_shapes[k][0], fused_shapes[k][1], &complex_e, k % 2 == 1, PLANCOLL_ESTIMATE,
                 "transpose.fused");
    run_case(MPI_COMM_WORLD, 8 * tl_size, 64 * tl_size, &complex_e, false, PLANCOLL_ESTIMATE, "transpose.fused");
    run_case(MPI_COMM_WORLD, 33, 7, &derived[1], false, PLANCOLL_ESTIMATE, "transpose.fused");
    shared_comm = MPI_COMM_NULL;
    tl_force(NULL);
    plancoll_forget_wisdom();
    run_case(MPI_COMM_WORLD, 8 * tl_size, 16 * tl_size + 1, &complex_e, false, PLANCOLL_MEASURE, NULL);
    strategy_wisdom(8 * tl_size, 16 * tl_size + 1);
    if (tl_rank == 0) printf("transpose fused strategy forced, on shared buffers, and MEASURE: %.2f s\n", MPI_Wtime() - t0);

    t0 = MPI_Wtime();
    bad_input();
    if (tl_rank == 0) printf("transpose bad input: %.2f s\n", MPI_Wtime() - t0);

    MPI_Type_free(&three_ints);
    MPI_Type_free(&shifted);
    if (tl_rank == 0) printf("transpose total %.2f s\n", MPI_Wtime() - t_start);
    return tl_finish();
}
