/* plancoll_plan_transpose_pieces, plancoll_start_piece, plancoll_transpose_piece_rows: the transpose in pieces of
 * input rows (issue 17: overlap with the 1D transforms).
 *
 * Each case: a plan in K pieces on uneven shapes (ranks with no rows, more pieces than rows), complex, double and a
 * 12-byte element (the generic copies), on private and on node-shared (plancoll_malloc) buffers; three executions
 * with new data, each piece by piece as a solver does it: before an execution every input row holds poison, and
 * the rows of piece k get their values only just before piece k is started, so a piece that reads rows of a later
 * piece, or a piece written to the wrong output columns, shows as a wrong byte. The output is checked exactly
 * against the pattern (byte k of input element (i, j) in execution `it` is a hash of (i, j, it, k)), the input must
 * be left as it was, guard bytes after every buffer untouched. Then plancoll_execute, plancoll_start + wait and
 * execute_buffers on other buffers on the same plan. Start is local: rank 0 starts every piece, then sends to the
 * last rank, which receives before it starts its own (a start that waited for another rank would hang here).
 * Bad input: counts, mismatch, in place, the composite forced, misuse of the piece order (errors on every rank, the
 * columns of unstarted pieces never written, the plan usable afterwards). */
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define GUARD 64
#define SENTINEL 0xa5
#define POISON 0x5c

struct elem {
    MPI_Datatype type;
    const char *name;
    size_t es;
};

static uint8_t pattern(ptrdiff_t i, ptrdiff_t j, int it, size_t k)
{
    uint64_t s = (uint64_t)i * UINT64_C(0x100000001b3) ^ (uint64_t)j * UINT64_C(0x9e3779b97f4a7c15) ^
                 (uint64_t)it * UINT64_C(0x632be59bd9b4e019);
    uint64_t v = tl_rand(&s);
    return (uint8_t)((v >> (8 * (k % 8))) ^ (k / 8) * 0x3b);
}

static MPI_Comm shared_comm = MPI_COMM_NULL; /* buffers from plancoll_malloc on it when set */

static unsigned char *buffer_new(size_t bytes)
{
    unsigned char *b;
    if (shared_comm != MPI_COMM_NULL) TL_OK(plancoll_malloc(bytes + GUARD, shared_comm, (void **)&b));
    else b = malloc(bytes + GUARD);
    memset(b, SENTINEL, bytes + GUARD);
    return b;
}

static void buffer_free(unsigned char *b)
{
    if (shared_comm != MPI_COMM_NULL) TL_OK(plancoll_free(b));
    else free(b);
}

/* Input rows [r0, r0 + rows) of this rank (global row s0 + r) with execution it's values. */
static void fill_rows(unsigned char *in, const struct elem *e, ptrdiff_t s0, ptrdiff_t r0, ptrdiff_t rows, ptrdiff_t n1,
                      int it)
{
    for (ptrdiff_t r = r0; r < r0 + rows; r++)
        for (ptrdiff_t j = 0; j < n1; j++)
            for (size_t k = 0; k < e->es; k++) in[((size_t)r * (size_t)n1 + (size_t)j) * e->es + k] = pattern(s0 + r, j, it, k);
}

/* The output (ln1 rows of n0 from global row s1) against the transposed pattern; the input against the pattern;
 * the guards. */
static void check_result(const unsigned char *in, const unsigned char *out, const struct elem *e, ptrdiff_t n0,
                         ptrdiff_t n1, ptrdiff_t ln0, ptrdiff_t s0, ptrdiff_t ln1, ptrdiff_t s1, size_t bytes, int it,
                         const char *what)
{
    long bad = 0;
    for (ptrdiff_t r = 0; r < ln1; r++)
        for (ptrdiff_t c = 0; c < n0; c++)
            for (size_t k = 0; k < e->es; k++) {
                uint8_t got = out[((size_t)r * (size_t)n0 + (size_t)c) * e->es + k], want = pattern(c, s1 + r, it, k);
                if (got != want && bad++ == 0)
                    TL_CHECK(0, "%s execution %d: output (%td, %td) byte %zu is 0x%02x, expected 0x%02x", what, it,
                             s1 + r, c, k, got, want);
            }
    tl_checks++;
    for (ptrdiff_t r = 0; r < ln0 && !bad; r++)
        for (ptrdiff_t j = 0; j < n1; j++)
            for (size_t k = 0; k < e->es; k++)
                if (in[((size_t)r * (size_t)n1 + (size_t)j) * e->es + k] != pattern(s0 + r, j, it, k) && bad++ == 0)
                    TL_CHECK(0, "%s execution %d: input (%td, %td) was changed", what, it, s0 + r, j);
    for (size_t g = 0; g < GUARD; g++) {
        TL_CHECK(in[bytes + g] == SENTINEL && out[bytes + g] == SENTINEL, "%s execution %d: a guard byte was written",
                 what, it);
        if (in[bytes + g] != SENTINEL || out[bytes + g] != SENTINEL) break;
    }
}

/* The pieces tile this rank's rows in order, near-equal. */
static void check_piece_rows(plancoll_plan p, int K, ptrdiff_t ln0, const char *what)
{
    ptrdiff_t next = 0, least = ln0, most = 0;
    for (int k = 0; k < K; k++) {
        ptrdiff_t lo = -1, count = -1;
        TL_OK(plancoll_transpose_piece_rows(p, k, &lo, &count));
        TL_CHECK(lo == next && count >= 0, "%s: piece %d is rows %td + %td, expected to start at %td", what, k, lo, count,
                 next);
        next = lo + count;
        if (count < least) least = count;
        if (count > most) most = count;
    }
    TL_CHECK(next == ln0, "%s: the pieces cover %td of %td rows", what, next, ln0);
    TL_CHECK(most - least <= 1, "%s: piece sizes from %td to %td rows", what, least, most);
}

static void run_case(MPI_Comm comm, ptrdiff_t n0, ptrdiff_t n1, const struct elem *e, int K)
{
    int P, rank;
    MPI_Comm_size(comm, &P);
    MPI_Comm_rank(comm, &rank);
    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc = plancoll_local_size_transposed(n0, n1, comm, &ln0, &s0, &ln1, &s1);
    char what[160];
    snprintf(what, sizeof what, "%tdx%td %s K=%d P=%d %s", n0, n1, e->name, K, P,
             shared_comm != MPI_COMM_NULL ? "node-shared" : "private");
    size_t bytes = (size_t)alloc * e->es, in_bytes = (size_t)(ln0 * n1) * e->es;
    unsigned char *in = buffer_new(bytes), *out = buffer_new(bytes);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_transpose_pieces(n0, n1, e->type, in, out, comm, PLANCOLL_ESTIMATE, K, &p);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "%s: plan: %s: %s", what, plancoll_strerror(rc), plancoll_error_detail());
    if (rc != PLANCOLL_SUCCESS) {
        buffer_free(in);
        buffer_free(out);
        return;
    }
    check_piece_rows(p, K, ln0, what);
    const char *name = plancoll_plan_algorithm(p);
    if (n0 > 0 && n1 > 0) {
        char want[64];
        snprintf(want, sizeof want, "transpose(fused, %d pieces)", K);
        TL_CHECK(name && strcmp(name, want) == 0, "%s: algorithm '%s', expected '%s'", what, name ? name : "(null)", want);
    }
    /* Three executions piece by piece, as a solver runs them. */
    for (int it = 0; it < 3; it++) {
        memset(in, POISON, in_bytes);
        for (int k = 0; k < K; k++) {
            ptrdiff_t lo, count;
            TL_OK(plancoll_transpose_piece_rows(p, k, &lo, &count));
            fill_rows(in, e, s0, lo, count, n1, it);
            TL_OK(plancoll_start_piece(p, k));
            int done = -1;
            TL_OK(plancoll_test(p, &done)); /* progress between pieces: never done before the last is started */
            TL_CHECK(done == (k == K - 1 ? done : 0), "%s: test after piece %d of %d reports done", what, k, K);
        }
        TL_OK(plancoll_wait(p));
        check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, it, what);
    }
    /* Start is local: rank 0 starts every piece and then sends to the last rank, which receives before it starts. */
    fill_rows(in, e, s0, 0, ln0, n1, 3);
    int token = 0;
    if (rank == 0) {
        for (int k = 0; k < K; k++) TL_OK(plancoll_start_piece(p, k));
        if (P > 1) MPI_Send(&token, 1, MPI_INT, P - 1, 77, comm);
    } else if (rank == P - 1) {
        MPI_Recv(&token, 1, MPI_INT, 0, 77, comm, MPI_STATUS_IGNORE);
    }
    if (rank != 0)
        for (int k = 0; k < K; k++) TL_OK(plancoll_start_piece(p, k));
    TL_OK(plancoll_wait(p));
    check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, 3, what);
    /* The whole transpose at once: execute, start + wait, and execute_buffers on other buffers. */
    fill_rows(in, e, s0, 0, ln0, n1, 4);
    TL_OK(plancoll_execute(p));
    check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, 4, what);
    fill_rows(in, e, s0, 0, ln0, n1, 5);
    TL_OK(plancoll_start(p));
    TL_OK(plancoll_wait(p));
    check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, 5, what);
    unsigned char *in2 = buffer_new(bytes), *out2 = buffer_new(bytes);
    fill_rows(in2, e, s0, 0, ln0, n1, 6);
    TL_OK(plancoll_execute_buffers(p, in2, out2));
    check_result(in2, out2, e, n0, n1, ln0, s0, ln1, s1, bytes, 6, what);
    check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, 5, "the planned buffers after execute_buffers");
    /* and piece by piece again after those */
    memset(in, POISON, in_bytes);
    for (int k = 0; k < K; k++) {
        ptrdiff_t lo, count;
        TL_OK(plancoll_transpose_piece_rows(p, k, &lo, &count));
        fill_rows(in, e, s0, lo, count, n1, 7);
        TL_OK(plancoll_start_piece(p, k));
    }
    TL_OK(plancoll_wait(p));
    check_result(in, out, e, n0, n1, ln0, s0, ln1, s1, bytes, 7, what);
    char text[4096] = "";
    FILE *f = tmpfile();
    TL_OK(plancoll_fprint_plan(p, f));
    rewind(f);
    text[fread(text, 1, sizeof text - 1, f)] = '\0';
    fclose(f);
    char want[64];
    snprintf(want, sizeof want, "  pieces      %d of this rank's input rows", K);
    TL_CHECK(strstr(text, want) != NULL, "%s: fprint has no '%s':\n%s", what, want, text);
    TL_OK(plancoll_destroy_plan(&p));
    buffer_free(in2);
    buffer_free(out2);
    buffer_free(in);
    buffer_free(out);
}

static void expect(int rc, int want, const char *what)
{
    TL_CHECK(rc == want, "%s: got %d (%s), expected %d (%s): %s", what, rc, plancoll_strerror(rc), want,
             plancoll_strerror(want), plancoll_error_detail());
    TL_CHECK(rc == PLANCOLL_SUCCESS || plancoll_error_detail()[0] != '\0', "%s: no detail", what);
}

/* Plan-time errors fail on every rank; misuse of the piece order is refused and changes nothing. */
static void bad_input(void)
{
    const ptrdiff_t n0 = 4 * (ptrdiff_t)tl_size + 1, n1 = 3 * (ptrdiff_t)tl_size + 2;
    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc = plancoll_local_size_transposed(n0, n1, MPI_COMM_WORLD, &ln0, &s0, &ln1, &s1);
    const struct elem e = {MPI_DOUBLE, "double", 8};
    double *in = malloc(sizeof(double) * (size_t)alloc), *out = malloc(sizeof(double) * (size_t)alloc);
    plancoll_plan p = NULL;
    static const int bad_counts[] = {0, -1, PLANCOLL_MAX_PIECES + 1};
    for (size_t c = 0; c < sizeof bad_counts / sizeof bad_counts[0]; c++) {
        int rc = plancoll_plan_transpose_pieces(n0, n1, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, bad_counts[c], &p);
        expect(rc, PLANCOLL_ERR_COUNT, "pieces out of range");
    }
    if (tl_size > 1) {
        int rc = plancoll_plan_transpose_pieces(n0, n1, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, tl_rank == 0 ? 3 : 2, &p);
        TL_CHECK(rc == PLANCOLL_ERR_MISMATCH, "pieces differing between ranks: got %d (%s)", rc, plancoll_strerror(rc));
    }
    expect(plancoll_plan_transpose_pieces(n0, n1, MPI_DOUBLE, in, in, MPI_COMM_WORLD, 0, 2, &p), PLANCOLL_ERR_IN_PLACE,
           "pieces in place");
    tl_force("transpose.composite");
    expect(plancoll_plan_transpose_pieces(n0, n1, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, 2, &p),
           PLANCOLL_ERR_INAPPLICABLE, "pieces with the composite forced");
    tl_force(NULL);

    /* an ordinary transpose plan has no pieces */
    TL_OK(plancoll_plan_transpose(n0, n1, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, &p));
    ptrdiff_t lo = -7, count = -7;
    expect(plancoll_start_piece(p, 0), PLANCOLL_ERR_ARGUMENT, "start_piece on an ordinary transpose");
    expect(plancoll_transpose_piece_rows(p, 0, &lo, &count), PLANCOLL_ERR_ARGUMENT, "piece_rows on an ordinary transpose");
    TL_CHECK(lo == -7 && count == -7, "a refused piece_rows wrote its outputs");
    TL_OK(plancoll_destroy_plan(&p));

    /* misuse of a plan in 3 pieces */
    const int K = 3;
    TL_OK(plancoll_plan_transpose_pieces(n0, n1, MPI_DOUBLE, in, out, MPI_COMM_WORLD, 0, K, &p));
    memset(out, SENTINEL, sizeof(double) * (size_t)alloc);
    fill_rows((unsigned char *)in, &e, s0, 0, ln0, n1, 0);
    expect(plancoll_transpose_piece_rows(p, K, &lo, &count), PLANCOLL_ERR_ARGUMENT, "piece_rows of piece K");
    expect(plancoll_transpose_piece_rows(p, 0, NULL, &count), PLANCOLL_ERR_ARGUMENT, "piece_rows with lo NULL");
    expect(plancoll_start_piece(p, 1), PLANCOLL_ERR_ARGUMENT, "piece 1 before any execution");
    expect(plancoll_start_piece(p, -1), PLANCOLL_ERR_ARGUMENT, "piece -1");
    expect(plancoll_start_piece(p, K), PLANCOLL_ERR_ARGUMENT, "piece K");
    expect(plancoll_wait(p), PLANCOLL_SUCCESS, "wait on a plan not begun");
    const unsigned char *o = (const unsigned char *)out;
    long written = 0;
    for (size_t b = 0; b < sizeof(double) * (size_t)alloc; b++) written += o[b] != SENTINEL;
    TL_CHECK(written == 0, "refused piece starts wrote %ld output bytes", written);
    TL_OK(plancoll_start_piece(p, 0));
    expect(plancoll_start_piece(p, 2), PLANCOLL_ERR_ARGUMENT, "piece 2 after piece 0");
    expect(plancoll_start_piece(p, 0), PLANCOLL_ERR_ACTIVE, "piece 0 again while active");
    expect(plancoll_execute(p), PLANCOLL_ERR_ACTIVE, "execute while pieces run");
    expect(plancoll_wait(p), PLANCOLL_ERR_ARGUMENT, "wait with pieces 1 and 2 not started");
    int done = -1;
    expect(plancoll_test(p, &done), PLANCOLL_SUCCESS, "test with pieces 1 and 2 not started (progress only)");
    TL_CHECK(done == 0, "test with pieces unstarted set done = %d", done);
    plancoll_plan list[1] = {p};
    expect(plancoll_waitall(1, list), PLANCOLL_ERR_ARGUMENT, "waitall with pieces 1 and 2 not started");
    expect(plancoll_destroy_plan(&p), PLANCOLL_ERR_ACTIVE, "destroy while pieces run");
    /* the columns of the pieces not started are untouched: column c of output row r came from input row c */
    written = 0;
    for (ptrdiff_t q = 0; q < tl_size; q++) {
        ptrdiff_t lnq = (n0 + tl_size - 1) / tl_size, sq = q * lnq;
        if (sq >= n0) break;
        if (n0 - sq < lnq) lnq = n0 - sq;
        ptrdiff_t first_hi = lnq / K; /* piece 0 of q: rows [0, floor(lnq / K)) */
        for (ptrdiff_t r = 0; r < ln1; r++)
            for (ptrdiff_t c = sq + first_hi; c < sq + lnq; c++)
                for (size_t b = 0; b < sizeof(double); b++) written += o[((size_t)r * (size_t)n0 + (size_t)c) * 8 + b] != SENTINEL;
    }
    TL_CHECK(written == 0, "output columns of pieces not started hold %ld written bytes", written);
    /* no rank starts piece 1 before every rank has looked (a peer's piece 1 would rightly land here) */
    tl_barrier(MPI_COMM_WORLD);
    TL_OK(plancoll_start_piece(p, 1));
    expect(plancoll_start_piece(p, 1), PLANCOLL_ERR_ARGUMENT, "piece 1 twice");
    TL_OK(plancoll_start_piece(p, 2));
    expect(plancoll_start_piece(p, 2), PLANCOLL_ERR_ARGUMENT, "piece 2 once every piece is started");
    TL_OK(plancoll_wait(p));
    size_t bytes = sizeof(double) * (size_t)alloc;
    unsigned char *gin = malloc(bytes + GUARD), *gout = malloc(bytes + GUARD); /* with guards, for check_result */
    memcpy(gin, in, bytes);
    memcpy(gout, out, bytes);
    memset(gin + bytes, SENTINEL, GUARD);
    memset(gout + bytes, SENTINEL, GUARD);
    check_result(gin, gout, &e, n0, n1, ln0, s0, ln1, s1, bytes, 0, "after the refused calls");
    expect(plancoll_execute_buffers(p, in, in), PLANCOLL_ERR_IN_PLACE, "execute_buffers in place");
    TL_OK(plancoll_destroy_plan(&p));
    free(gin);
    free(gout);
    free(in);
    free(out);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "transpose_pieces");
    double t0 = MPI_Wtime();
    MPI_Datatype three_ints;
    MPI_Type_contiguous(3, MPI_INT, &three_ints);
    MPI_Type_commit(&three_ints);
    const struct elem complex_e = {MPI_C_DOUBLE_COMPLEX, "complex", 16}, double_e = {MPI_DOUBLE, "double", 8},
                      ints_e = {three_ints, "3 ints", 12};
    const int P = tl_size;
    /* {n0, n1, K}: one piece; pieces dividing and not dividing the rows; more pieces than rows; idle ranks; empty */
    static const ptrdiff_t shapes[][3] = {{7, 3, 1}, {7, 3, 2}, {16, 33, 3}, {33, 7, 4}, {3, 16, 5}, {1, 9, 2}, {0, 5, 2}};
    for (int pass = 0; pass < 2; pass++) {
        shared_comm = pass ? MPI_COMM_WORLD : MPI_COMM_NULL;
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            run_case(MPI_COMM_WORLD, shapes[s][0], shapes[s][1], s % 2 ? &double_e : &complex_e, (int)shapes[s][2]);
        run_case(MPI_COMM_WORLD, 8 * P + 3, 16 * P + 5, &complex_e, 4); /* several rows per piece per destination */
        run_case(MPI_COMM_WORLD, 5 * P + 2, 2 * P + 1, &ints_e, 3);
    }
    shared_comm = MPI_COMM_NULL;
    if (tl_rank == 0) printf("transpose in pieces: data cases %.2f s\n", MPI_Wtime() - t0);
    double t1 = MPI_Wtime();
    bad_input();
    if (tl_rank == 0) printf("transpose in pieces: bad input %.2f s\n", MPI_Wtime() - t1);
    MPI_Type_free(&three_ints);
    return tl_finish();
}
