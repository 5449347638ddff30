/*
 * plancoll-fft-bench: a whole distributed 2D FFT against FFTW's. The n x n complex-double forward FFT, rows
 * distributed in FFTW's block distribution, output transposed (FFTW_MPI_TRANSPOSED_OUT: this rank holds local_n1
 * rows of the n1 x n0 spectrum), timed side by side in one run:
 *   plancoll:fft2d/transpose(A)         examples/fft2d's computation: FFTW's serial 1D FFTs of the local rows
 *                                       (fftw_plan_many_dft), plancoll_plan_transpose (MEASURE unless --estimate;
 *                                       A is its inner exchange), FFTW's 1D FFTs of the transposed rows
 *   plancoll:fft2d-shared/transpose(A)  the same on buffers from plancoll_malloc (node-shared memory); out of place
 *                                       the row FFTs write a node-shared scratch and the transpose goes scratch ->
 *                                       out, so node peers read it in place (one pass; one buffer more than FFTW)
 *   plancoll:fft2d-pieces/K=K/...       the same pipelined (examples/fft2d's second variant): the transpose is a plan
 *                                       in K pieces of input rows (plancoll_plan_transpose_pieces, -k K, default 4);
 *                                       the row FFTs of piece k run, then piece k is started and travels while the
 *                                       row FFTs of piece k + 1 run; a wait, then the column FFTs. A transpose in
 *                                       pieces is never in place: the row FFTs write a third buffer (in -> mid) and
 *                                       the transpose goes mid -> out (--in-place: row FFTs in place, in -> out)
 *   fftw:mpi_plan_dft_2d                fftw_mpi_plan_dft_2d(n, n, in, out, comm, FFTW_FORWARD,
 *                                       FFTW_MEASURE | FFTW_MPI_TRANSPOSED_OUT), FFTW's own distributed FFT
 *   floor:1d-ffts                       the two sets of local 1D FFTs (rows, then columns) alone, no exchange:
 *                                       the compute every variant does, so time above it is the exchange's
 *
 * The passes are the ones FFTW's plan for this problem makes (FFTW 3.3.10 mpi/dft-rank-geq2-transposed.c), on
 * the same buffers: out of place, FFTW's default keeps the input (no FFTW_DESTROY_INPUT), so its row FFTs write
 * out and its transpose runs in place in out; the plancoll FFT does the same (row FFTs in -> out, transpose
 * out -> out, column FFTs in out). --in-place: in == out for both (row FFTs in place, transpose in place). The
 * 1D plans are FFTW_MEASURE, as FFTW's own plan's are; --estimate changes only plancoll's planner.
 *
 * Validation, before timing and fatal on failure (exit status 1): every 2D FFT, plancoll's and FFTW's, is run on
 * a sum of plane waves exp(2 pi i (k0 j0 + k1 j1) / n), whose DFT is exactly n^2 times each amplitude at
 * (k0, k1) and 0 elsewhere, and then on pseudo-random input, where plancoll's results must agree with FFTW's;
 * both errors are the maximum absolute difference relative to the largest magnitude of the spectrum, within
 * 1e-10 x log2(n). The distribution must be fftw_mpi_local_size_2d_transposed's.
 *
 *   mpiexec -n P plancoll-fft-bench [-n N[,N...]] [-b BATCHES] [-x WARMUP] [-k PIECES] [--in-place] [--estimate] [-v]
 *                                   [--json FILE] [--config NAME] [--revision TEXT]
 *
 * Protocol (docs/measurement.md, bench/bench_timing.h): warm-up, then batches of at least 20 ms; a yielding
 * barrier before each batch; each iteration timed on its own and reduced with MAX over ranks; variants alternate
 * batch by batch; the median is over batch means; avg/min/max over all iterations. In place the input is
 * restored before each batch (outside the timing); within a batch every iteration transforms the previous
 * result, as FFTW's own benchmark does.
 */
#include <fftw3-mpi.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <plancoll.h>

#include "bench_mpi.h"
#include "bench_timing.h"

#define PROGRAM "plancoll-fft-bench"
#define TOLERANCE_PER_LOG2N 1e-10
#define MAX_SIZES 16

enum kind { K_PLANCOLL, K_PLANCOLL_SHARED, K_PIECES, K_FFTW, K_FLOOR, NKINDS };

/* examples/fft2d's computation on one pair of buffers */
struct pipeline {
    fftw_complex *in, *out;   /* out == in in place */
    fftw_plan rows, cols;     /* NULL on a rank without rows (columns) */
    plancoll_plan transpose;  /* out -> out; in pieces: mid -> out */
    bool shared;              /* buffers from plancoll_malloc */
    /* the pipelined variant: K plans of the row FFTs of each piece (in -> mid; NULL for an empty piece) */
    int pieces;
    fftw_complex *mid;
    fftw_plan *piece_rows;
};

struct variant {
    enum kind kind;
    char label[96];
    struct pipeline *pipe;    /* K_PLANCOLL*, K_FLOOR */
    fftw_plan fftw;           /* K_FFTW */
    fftw_complex *in, *out;   /* the buffers this variant transforms */
    double err_analytic, err_vs_fftw; /* relative errors of the validation (< 0: not checked) */
    struct bench_series t;
};

struct ctx {
    MPI_Comm comm;
    int rank, size;
    ptrdiff_t n, ln0, s0, ln1, s1;
    ptrdiff_t alloc;          /* elements of every buffer: the larger of plancoll's and FFTW's counts */
    bool in_place;
    fftw_complex *pristine;   /* in place: the input, restored before each batch */
};

/* ---- inputs and expected outputs ---------------------------------------------------------------- */

/* A few plane waves at frequencies that depend on n and are not symmetric in (k0, k1), so a result left
 * untransposed or transposed twice puts the spikes elsewhere. Coinciding frequencies (small n) just add. */
struct wave {
    double re, im;
    ptrdiff_t k0, k1;
};

static int plane_waves(ptrdiff_t n, struct wave w[4])
{
    const struct wave base[4] = {
        {1.0, 0.0, 1, 2}, {-0.5, 0.25, n / 3, n - 5}, {0.125, -0.75, n - 1, n / 2 + 3}, {0.0, 0.0625, 0, 0}};
    for (int m = 0; m < 4; m++) {
        w[m] = base[m];
        w[m].k0 = ((w[m].k0 % n) + n) % n;
        w[m].k1 = ((w[m].k1 % n) + n) % n;
    }
    return 4;
}

/* x[j0][j1] = sum of a_m exp(+2 pi i (k0_m j0 + k1_m j1) / n); the phase index is reduced mod n in integers so
 * the angle is exact to rounding. */
static void fill_plane_waves(const struct ctx *c, fftw_complex *in)
{
    struct wave w[4];
    int nw = plane_waves(c->n, w);
    const double step = 2.0 * 3.14159265358979323846 / (double)c->n;
    for (ptrdiff_t i = 0; i < c->ln0; i++)
        for (ptrdiff_t j = 0; j < c->n; j++) {
            double re = 0, im = 0;
            for (int m = 0; m < nw; m++) {
                int64_t idx = ((int64_t)w[m].k0 * (c->s0 + i) + (int64_t)w[m].k1 * j) % c->n;
                double cs = cos(step * (double)idx), sn = sin(step * (double)idx);
                re += w[m].re * cs - w[m].im * sn;
                im += w[m].re * sn + w[m].im * cs;
            }
            in[i * c->n + j][0] = re;
            in[i * c->n + j][1] = im;
        }
}

/* The largest absolute error of the transposed spectrum out (this rank's local_n1 rows of X[k1][k0]) against the
 * plane waves' exact DFT; NaN counts as infinite. */
static double plane_wave_error(const struct ctx *c, const fftw_complex *out)
{
    struct wave w[4];
    int nw = plane_waves(c->n, w);
    const double n2 = (double)c->n * (double)c->n;
    double err = 0;
    for (ptrdiff_t j = 0; j < c->ln1; j++)
        for (ptrdiff_t k0 = 0; k0 < c->n; k0++) {
            double re = 0, im = 0;
            for (int m = 0; m < nw; m++)
                if (w[m].k0 == k0 && w[m].k1 == c->s1 + j) {
                    re += n2 * w[m].re;
                    im += n2 * w[m].im;
                }
            double e = hypot(out[j * c->n + k0][0] - re, out[j * c->n + k0][1] - im);
            if (isnan(e)) e = INFINITY;
            if (e > err) err = e;
        }
    return err;
}

/* Pseudo-random values in [-1, 1), a function of the global index only. */
static void fill_random(const struct ctx *c, fftw_complex *in)
{
    for (ptrdiff_t i = 0; i < c->ln0; i++)
        for (ptrdiff_t j = 0; j < c->n; j++) {
            uint64_t state = (uint64_t)((c->s0 + i) * c->n + j) * UINT64_C(0x2545F4914F6CDD1D) + 17;
            in[i * c->n + j][0] = (double)(bench_random(&state) >> 11) * 0x1p-52 - 1.0;
            in[i * c->n + j][1] = (double)(bench_random(&state) >> 11) * 0x1p-52 - 1.0;
        }
}

/* max |a - b| and max |ref| over this rank's share of the transposed output */
static void difference(const struct ctx *c, const fftw_complex *a, const fftw_complex *ref, double *err, double *scale)
{
    *err = 0;
    *scale = 0;
    for (ptrdiff_t k = 0; k < c->ln1 * c->n; k++) {
        double e = hypot(a[k][0] - ref[k][0], a[k][1] - ref[k][1]), m = hypot(ref[k][0], ref[k][1]);
        if (isnan(e)) e = INFINITY;
        if (e > *err) *err = e;
        if (m > *scale) *scale = m;
    }
}

/* ---- the variants ----------------------------------------------------------------------------- */

static void run_pipeline(const struct pipeline *p, bool exchange)
{
    if (p->rows) fftw_execute(p->rows);
    if (exchange) {
        int rc = plancoll_execute(p->transpose);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, PROGRAM ": plancoll_execute: %s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (p->cols) fftw_execute(p->cols);
}

static void fail_call(const char *what, int rc)
{
    fprintf(stderr, PROGRAM ": %s: %s: %s\n", what, plancoll_strerror(rc), plancoll_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The row FFTs of piece k, then piece k started: it travels while the next piece's row FFTs run. */
static void run_pieces(const struct pipeline *p)
{
    int rc;
    for (int k = 0; k < p->pieces; k++) {
        if (p->piece_rows[k]) fftw_execute(p->piece_rows[k]);
        if ((rc = plancoll_start_piece(p->transpose, k)) != PLANCOLL_SUCCESS) fail_call("plancoll_start_piece", rc);
    }
    if ((rc = plancoll_wait(p->transpose)) != PLANCOLL_SUCCESS) fail_call("plancoll_wait", rc);
    if (p->cols) fftw_execute(p->cols);
}

static void run_variant(void *ctx, void *variant)
{
    (void)ctx;
    struct variant *v = variant;
    switch (v->kind) {
    case K_PLANCOLL:
    case K_PLANCOLL_SHARED: run_pipeline(v->pipe, true); break;
    case K_PIECES: run_pieces(v->pipe); break;
    case K_FFTW: fftw_execute(v->fftw); break;
    case K_FLOOR: run_pipeline(v->pipe, false); break;
    case NKINDS: break;
    }
}

/* The buffers (private: fftw_malloc; shared: plancoll_malloc, collective) and plans of one pipeline. Returns a
 * plancoll error code, the same on every rank (plancoll_malloc and plancoll_plan_transpose agree on failure). */
static int make_pipeline(const struct ctx *c, struct pipeline *p, bool shared, unsigned flags)
{
    memset(p, 0, sizeof *p);
    p->shared = shared;
    size_t bytes = sizeof(fftw_complex) * (size_t)c->alloc;
    int rc = PLANCOLL_SUCCESS;
    if (shared) {
        /* out of place, the row FFTs write a node-shared scratch (mid) and the transpose goes mid -> out: node
         * peers then transpose straight out of each other's scratch, one pass (FFTW's passes would transpose in
         * place in out, which no plan can do in one pass); one buffer more than FFTW uses */
        void *in = NULL, *out = NULL, *mid = NULL;
        rc = plancoll_malloc(bytes, c->comm, &in);
        if (rc == PLANCOLL_SUCCESS && !c->in_place) rc = plancoll_malloc(bytes, c->comm, &out);
        if (rc == PLANCOLL_SUCCESS && !c->in_place) rc = plancoll_malloc(bytes, c->comm, &mid);
        p->in = in;
        p->out = c->in_place ? in : out;
        p->mid = mid;
        if (rc != PLANCOLL_SUCCESS) return rc;
    } else {
        p->in = fftw_malloc(bytes);
        p->out = c->in_place ? p->in : fftw_malloc(bytes);
        if (!p->in || !p->out) {
            fprintf(stderr, PROGRAM ": out of memory (%zu bytes)\n", bytes);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    int n = (int)c->n;
    /* FFTW_MEASURE plans overwrite the arrays: the inputs are written after every plan is made */
    fftw_complex *rows_out = p->mid ? p->mid : p->out;
    if (c->ln0 > 0)
        p->rows = fftw_plan_many_dft(1, &n, (int)c->ln0, p->in, NULL, 1, n, rows_out, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE);
    if (c->ln1 > 0)
        p->cols = fftw_plan_many_dft(1, &n, (int)c->ln1, p->out, NULL, 1, n, p->out, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE);
    if ((c->ln0 > 0 && !p->rows) || (c->ln1 > 0 && !p->cols)) {
        fprintf(stderr, PROGRAM ": fftw_plan_many_dft failed for n = %td\n", c->n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return plancoll_plan_transpose(c->n, c->n, MPI_C_DOUBLE_COMPLEX, rows_out, p->out, c->comm, flags, &p->transpose);
}

/* The pipelined variant's buffers (private) and plans: the transpose in K pieces mid -> out, the row FFTs of each
 * piece in -> mid (in place when --in-place: mid is in), the column FFTs in out. */
static int make_pieces_pipeline(const struct ctx *c, struct pipeline *p, int K, unsigned flags)
{
    memset(p, 0, sizeof *p);
    size_t bytes = sizeof(fftw_complex) * (size_t)c->alloc;
    p->pieces = K;
    p->in = fftw_malloc(bytes);
    p->out = fftw_malloc(bytes);
    p->mid = c->in_place ? p->in : fftw_malloc(bytes);
    p->piece_rows = calloc((size_t)K, sizeof *p->piece_rows);
    if (!p->in || !p->out || !p->mid || !p->piece_rows) {
        fprintf(stderr, PROGRAM ": out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int rc = plancoll_plan_transpose_pieces(c->n, c->n, MPI_C_DOUBLE_COMPLEX, p->mid, p->out, c->comm, flags, K,
                                            &p->transpose);
    if (rc != PLANCOLL_SUCCESS) return rc;
    int n = (int)c->n;
    for (int k = 0; k < K; k++) {
        ptrdiff_t lo, count;
        if ((rc = plancoll_transpose_piece_rows(p->transpose, k, &lo, &count)) != PLANCOLL_SUCCESS)
            fail_call("plancoll_transpose_piece_rows", rc);
        if (count == 0) continue;
        p->piece_rows[k] = fftw_plan_many_dft(1, &n, (int)count, p->in + lo * c->n, NULL, 1, n, p->mid + lo * c->n, NULL,
                                              1, n, FFTW_FORWARD, FFTW_MEASURE);
        if (!p->piece_rows[k]) {
            fprintf(stderr, PROGRAM ": fftw_plan_many_dft failed for a piece of %td rows\n", count);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    if (c->ln1 > 0)
        p->cols = fftw_plan_many_dft(1, &n, (int)c->ln1, p->out, NULL, 1, n, p->out, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE);
    if (c->ln1 > 0 && !p->cols) {
        fprintf(stderr, PROGRAM ": fftw_plan_many_dft failed for n = %td\n", c->n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return PLANCOLL_SUCCESS;
}

static void free_pipeline(const struct ctx *c, struct pipeline *p)
{
    for (int k = 0; k < p->pieces; k++)
        if (p->piece_rows[k]) fftw_destroy_plan(p->piece_rows[k]);
    free(p->piece_rows);
    if (p->pieces > 0) {
        if (p->transpose) plancoll_destroy_plan(&p->transpose);
        if (p->cols) fftw_destroy_plan(p->cols);
        fftw_free(p->in);
        fftw_free(p->out);
        if (!c->in_place) fftw_free(p->mid);
        memset(p, 0, sizeof *p);
        return;
    }
    if (p->transpose) plancoll_destroy_plan(&p->transpose);
    if (p->rows) fftw_destroy_plan(p->rows);
    if (p->cols) fftw_destroy_plan(p->cols);
    if (p->shared) {
        plancoll_free(p->in);
        if (!c->in_place) plancoll_free(p->out);
        if (p->mid) plancoll_free(p->mid);
    } else {
        fftw_free(p->in);
        if (!c->in_place) fftw_free(p->out);
    }
    memset(p, 0, sizeof *p);
}

/* In place, the input of the variant back before a batch; out of place every variant leaves its input alone. */
static void restore_input(const struct ctx *c, struct variant *v)
{
    if (c->in_place) memcpy(v->in, c->pristine, sizeof(fftw_complex) * (size_t)(c->ln0 * c->n));
}

/* ---- validation ------------------------------------------------------------------------------- */

static double reduce_max(const struct ctx *c, double x)
{
    double all = 0;
    bench_allreduce(&x, &all, 1, MPI_DOUBLE, MPI_MAX, c->comm);
    return all;
}

/* Every 2D FFT against the plane waves' exact spectrum, then plancoll's against FFTW's on pseudo-random input.
 * Returns the number of failed checks (the same on every rank). */
static int validate(const struct ctx *c, struct variant *vs, int nv, double tolerance)
{
    int failed = 0;
    struct variant *ref = NULL;
    for (int i = 0; i < nv; i++) {
        if (vs[i].kind == K_FLOOR) continue;
        fill_plane_waves(c, vs[i].in);
        if (!c->in_place) memset(vs[i].out, 0xa5, sizeof(fftw_complex) * (size_t)c->alloc);
        run_variant(NULL, &vs[i]);
        vs[i].err_analytic = reduce_max(c, plane_wave_error(c, vs[i].out)) / ((double)c->n * (double)c->n);
        bool ok = vs[i].err_analytic <= tolerance;
        if (c->rank == 0)
            printf("# %td: %-40s plane waves: relative error %.2e (tolerance %.1e)%s\n", c->n, vs[i].label,
                   vs[i].err_analytic, tolerance, ok ? "" : "  VALIDATION FAILED");
        failed += !ok;
        if (vs[i].kind == K_FFTW) ref = &vs[i];
    }
    if (!ref) return failed;
    /* FFTW's result on the random input stays in its output while the others are compared with it */
    fill_random(c, ref->in);
    run_variant(NULL, ref);
    for (int i = 0; i < nv; i++) {
        if (vs[i].kind != K_PLANCOLL && vs[i].kind != K_PLANCOLL_SHARED && vs[i].kind != K_PIECES) continue;
        fill_random(c, vs[i].in);
        if (!c->in_place) memset(vs[i].out, 0xa5, sizeof(fftw_complex) * (size_t)c->alloc);
        run_variant(NULL, &vs[i]);
        double err, scale;
        difference(c, vs[i].out, ref->out, &err, &scale);
        err = reduce_max(c, err);
        scale = reduce_max(c, scale);
        vs[i].err_vs_fftw = scale > 0 ? err / scale : err;
        bool ok = vs[i].err_vs_fftw <= tolerance && scale > 0;
        if (c->rank == 0)
            printf("# %td: %-40s against FFTW on random input: relative error %.2e (max |X| %.3e)%s\n", c->n,
                   vs[i].label, vs[i].err_vs_fftw, scale, ok ? "" : "  VALIDATION FAILED");
        failed += !ok;
    }
    return failed;
}

/* ---- main ------------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: " PROGRAM " [-n N[,N...]] [-b BATCHES] [-x WARMUP] [-k PIECES] [--in-place] [--estimate] [-v]\n"
                    "                          [--json FILE] [--config NAME] [--revision TEXT]\n");
}

static void json_result(FILE *jf, bool first, ptrdiff_t n, const struct variant *v)
{
    static const char *kinds[NKINDS] = {"plancoll", "plancoll-shared", "plancoll-pieces", "fftw", "floor"};
    const struct bench_series *t = &v->t;
    fprintf(jf, "%s\n  {\"n\": %td, \"implementation\": \"%s\", \"kind\": \"%s\", \"median_us\": %.3f, \"avg_us\": %.3f, "
                "\"min_us\": %.3f, \"max_us\": %.3f, \"iterations\": %ld",
            first ? "" : ",", n, v->label, kinds[v->kind], t->median * 1e6, t->sum / t->n * 1e6, t->min * 1e6,
            t->max * 1e6, t->n);
    if (v->err_analytic >= 0) fprintf(jf, ", \"relative_error_plane_waves\": %.3e", v->err_analytic);
    if (v->err_vs_fftw >= 0) fprintf(jf, ", \"relative_error_vs_fftw\": %.3e", v->err_vs_fftw);
    fprintf(jf, "}");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
    fftw_mpi_init();
    ptrdiff_t sizes[MAX_SIZES] = {1024, 4096};
    int nsizes = 2, batches = 5, warmup = 10, pieces = 4;
    bool verbose = false, estimate = false;
    const char *json = NULL, *config = "unnamed", *revision = "unknown";
    static const struct option longopts[] = {
        {"in-place", no_argument, NULL, 'I'}, {"estimate", no_argument, NULL, 'E'},
        {"json", required_argument, NULL, 'J'}, {"config", required_argument, NULL, 'G'},
        {"revision", required_argument, NULL, 'R'}, {NULL, 0, NULL, 0},
    };
    int opt;
    bool bad_usage = false;
    while ((opt = getopt_long(argc, argv, "n:b:x:k:vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': nsizes = bench_parse_sizes(optarg, sizes, MAX_SIZES); break;
        case 'b': batches = atoi(optarg); break;
        case 'x': warmup = atoi(optarg); break;
        case 'k': pieces = atoi(optarg); break;
        case 'v': verbose = true; break;
        case 'I': c.in_place = true; break;
        case 'E': estimate = true; break;
        case 'J': json = optarg; break;
        case 'G': config = optarg; break;
        case 'R': revision = optarg; break;
        default: bad_usage = true; break;
        }
    }
    for (int i = 0; i < nsizes; i++)
        if (sizes[i] < 1 || sizes[i] > INT32_MAX) bad_usage = true;
    if (pieces < 1 || pieces > PLANCOLL_MAX_PIECES) bad_usage = true;
    if (bad_usage || nsizes == 0 || optind < argc) {
        if (c.rank == 0) usage();
        fftw_mpi_cleanup();
        MPI_Finalize();
        return 2;
    }
    if (batches < 1) batches = 1;
    if (batches > BENCH_MAX_BATCHES) batches = BENCH_MAX_BATCHES;
    if (warmup < 1) warmup = 1;
    struct bench_timer timer;
    bench_timer_init(&timer, c.comm, PROGRAM);
    int nodes = bench_count_nodes(c.comm);
    const unsigned flags = estimate ? PLANCOLL_ESTIMATE : PLANCOLL_MEASURE;
    FILE *jf = NULL;
    if (c.rank == 0) {
        printf("# " PROGRAM ": P=%d nodes=%d configuration=%s revision=%s, n x n complex doubles, forward 2D FFT "
               "with transposed output, %s, plancoll planner %s, FFTW plans FFTW_MEASURE\n",
               c.size, nodes, config, revision, c.in_place ? "in place" : "out of place", estimate ? "ESTIMATE" : "MEASURE");
        printf("# warm-up %d, %d alternating batches of >= 20 ms; time per iteration = max over ranks; median of batch "
               "means; times in us; /fftw and /1d: ratio of medians; -1d: median minus the 1D FFTs' (the exchange)\n",
               warmup, batches);
        if (json) {
            jf = fopen(json, "w");
            if (!jf) fprintf(stderr, PROGRAM ": cannot write %s\n", json);
            else
                fprintf(jf, "{\"benchmark\": \"" PROGRAM "\", \"configuration\": \"%s\", \"revision\": \"%s\", \"P\": %d, "
                            "\"nodes\": %d, \"in_place\": %s, \"planner\": \"%s\", \"fftw_flags\": "
                            "\"FFTW_MEASURE | FFTW_MPI_TRANSPOSED_OUT\", \"element\": \"complex double\", "
                            "\"statistic\": \"median over batches of the batch mean of per-iteration max over ranks\", "
                            "\"tolerance_per_log2n\": %.1e, \"results\": [",
                        config, revision, c.size, nodes, c.in_place ? "true" : "false",
                        estimate ? "ESTIMATE" : "MEASURE", TOLERANCE_PER_LOG2N);
        }
    }
    int total_failed = 0;
    bool first_json = true;
    for (int si = 0; si < nsizes; si++) {
        c.n = sizes[si];
        const double tolerance = TOLERANCE_PER_LOG2N * fmax(1.0, log2((double)c.n));
        /* The distribution is FFTW's (plancoll.h promises it); the FFT outputs can only be compared if it is. */
        ptrdiff_t pl[4], fl[4];
        ptrdiff_t palloc = plancoll_local_size_transposed(c.n, c.n, c.comm, &pl[0], &pl[1], &pl[2], &pl[3]);
        ptrdiff_t falloc = fftw_mpi_local_size_2d_transposed(c.n, c.n, c.comm, &fl[0], &fl[1], &fl[2], &fl[3]);
        int differs = palloc < 1 || memcmp(pl, fl, sizeof pl) != 0, any = 0;
        bench_allreduce(&differs, &any, 1, MPI_INT, MPI_MAX, c.comm);
        if (any) {
            if (c.rank == 0)
                printf("# %td: VALIDATION FAILED: plancoll's distribution differs from fftw_mpi_local_size_2d_transposed's\n", c.n);
            total_failed++;
            continue;
        }
        c.ln0 = pl[0], c.s0 = pl[1], c.ln1 = pl[2], c.s1 = pl[3];
        c.alloc = palloc > falloc ? palloc : falloc;

        struct pipeline priv, shared, piped;
        double t0 = MPI_Wtime();
        int rc = make_pipeline(&c, &priv, false, flags);
        double t_priv = MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        if (rc == PLANCOLL_SUCCESS) rc = make_pipeline(&c, &shared, true, flags);
        else memset(&shared, 0, sizeof shared);
        double t_shared = MPI_Wtime() - t0;
        t0 = MPI_Wtime();
        if (rc == PLANCOLL_SUCCESS) rc = make_pieces_pipeline(&c, &piped, pieces, flags);
        else memset(&piped, 0, sizeof piped);
        double t_pieces = MPI_Wtime() - t0;
        if (rc != PLANCOLL_SUCCESS) {
            if (c.rank == 0) printf("# %td: VALIDATION FAILED: plancoll set-up: %s: %s\n", c.n, plancoll_strerror(rc), plancoll_error_detail());
            total_failed++;
            if (priv.in) free_pipeline(&c, &priv);
            if (shared.in) free_pipeline(&c, &shared);
            if (piped.in) free_pipeline(&c, &piped);
            continue;
        }
        fftw_complex *fin = fftw_malloc(sizeof(fftw_complex) * (size_t)c.alloc);
        fftw_complex *fout = c.in_place ? fin : fftw_malloc(sizeof(fftw_complex) * (size_t)c.alloc);
        if (!fin || !fout) {
            fprintf(stderr, PROGRAM ": out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        t0 = MPI_Wtime();
        fftw_plan fplan = fftw_mpi_plan_dft_2d(c.n, c.n, fin, fout, c.comm, FFTW_FORWARD,
                                               FFTW_MEASURE | FFTW_MPI_TRANSPOSED_OUT);
        double t_fftw = MPI_Wtime() - t0;
        int no_plan = fplan == NULL, any_no_plan = 0;
        bench_allreduce(&no_plan, &any_no_plan, 1, MPI_INT, MPI_MAX, c.comm);

        struct variant vs[NKINDS];
        int nv = 0;
        memset(vs, 0, sizeof vs);
        vs[nv] = (struct variant){.kind = K_PLANCOLL, .pipe = &priv, .in = priv.in, .out = priv.out};
        snprintf(vs[nv++].label, sizeof vs[0].label, "plancoll:fft2d/%s", plancoll_plan_algorithm(priv.transpose));
        vs[nv] = (struct variant){.kind = K_PLANCOLL_SHARED, .pipe = &shared, .in = shared.in, .out = shared.out};
        snprintf(vs[nv++].label, sizeof vs[0].label, "plancoll:fft2d-shared/%s", plancoll_plan_algorithm(shared.transpose));
        vs[nv] = (struct variant){.kind = K_PIECES, .pipe = &piped, .in = piped.in, .out = piped.out};
        snprintf(vs[nv++].label, sizeof vs[0].label, "plancoll:fft2d-pieces/K=%d/%s", pieces,
                 plancoll_plan_algorithm(piped.transpose));
        if (!any_no_plan) {
            vs[nv] = (struct variant){.kind = K_FFTW, .fftw = fplan, .in = fin, .out = fout};
            snprintf(vs[nv++].label, sizeof vs[0].label, "fftw:mpi_plan_dft_2d");
        } else {
            if (c.rank == 0) printf("# %td: VALIDATION FAILED: fftw_mpi_plan_dft_2d returned NULL\n", c.n);
            total_failed++;
        }
        vs[nv] = (struct variant){.kind = K_FLOOR, .pipe = &priv, .in = priv.in, .out = priv.out};
        snprintf(vs[nv++].label, sizeof vs[0].label, "floor:1d-ffts (no exchange)");
        if (c.rank == 0) {
            printf("# %td: planned in %.1f ms (1D FFTs + plancoll transpose %s), %.1f ms (the same on node-shared "
                   "buffers), %.1f ms (in %d pieces), FFTW's 2D FFT in %.1f ms\n",
                   c.n, t_priv * 1e3, estimate ? "ESTIMATE" : "MEASURE", t_shared * 1e3, t_pieces * 1e3, pieces,
                   t_fftw * 1e3);
            if (verbose) {
                plancoll_fprint_plan(priv.transpose, stdout);
                if (!any_no_plan) {
                    fftw_fprint_plan(fplan, stdout);
                    printf("\n");
                }
            }
        }

        for (int i = 0; i < nv; i++) {
            vs[i].err_analytic = vs[i].err_vs_fftw = -1;
            bench_series_reset(&vs[i].t);
        }
        int failed = validate(&c, vs, nv, tolerance);
        total_failed += failed;
        if (failed == 0) {
            /* the timed input: the random one (every buffer its own copy) */
            if (c.in_place) {
                c.pristine = fftw_malloc(sizeof(fftw_complex) * (size_t)(c.ln0 * c.n > 0 ? c.ln0 * c.n : 1));
                if (!c.pristine) MPI_Abort(MPI_COMM_WORLD, 1);
                fill_random(&c, c.pristine);
            }
            for (int i = 0; i < nv; i++) fill_random(&c, vs[i].in);
            for (int i = 0; i < nv; i++) {
                restore_input(&c, &vs[i]);
                bench_calibrate(&timer, &vs[i].t, run_variant, &c, &vs[i], warmup);
            }
            for (int b = 0; b < batches; b++)
                for (int i = 0; i < nv; i++) {
                    restore_input(&c, &vs[i]);
                    bench_time_batch(&timer, &vs[i].t, run_variant, &c, &vs[i], b);
                }
            double ref_fftw = 0, ref_floor = 0;
            for (int i = 0; i < nv; i++) {
                double m = bench_series_median(&vs[i].t, batches);
                if (vs[i].kind == K_FFTW) ref_fftw = m;
                if (vs[i].kind == K_FLOOR) ref_floor = m;
            }
            if (c.rank == 0) {
                printf("# %6s  %-52s %11s %11s %11s %11s %6s %8s %8s %11s\n", "n", "implementation", "median", "avg",
                       "min", "max", "iters", "/fftw", "/1d", "-1d");
                for (int i = 0; i < nv; i++) {
                    const struct variant *v = &vs[i];
                    const struct bench_series *t = &v->t;
                    printf("  %6td  %-52s %11.1f %11.1f %11.1f %11.1f %6ld", c.n, v->label, t->median * 1e6,
                           t->sum / t->n * 1e6, t->min * 1e6, t->max * 1e6, t->n);
                    if (ref_fftw > 0) printf(" %8.3f", t->median / ref_fftw);
                    else printf(" %8s", "-");
                    printf(" %8.3f %11.1f\n", t->median / ref_floor, (t->median - ref_floor) * 1e6);
                    if (jf) {
                        json_result(jf, first_json, c.n, v);
                        first_json = false;
                    }
                }
                fflush(stdout);
            }
            fftw_free(c.pristine);
            c.pristine = NULL;
        }
        if (fplan) fftw_destroy_plan(fplan);
        fftw_free(fin);
        if (!c.in_place) fftw_free(fout);
        free_pipeline(&c, &piped);
        free_pipeline(&c, &shared);
        free_pipeline(&c, &priv);
    }
    if (jf) {
        fprintf(jf, "\n], \"validation_failures\": %d}\n", total_failed);
        fclose(jf);
    }
    if (c.rank == 0) printf("# validation: %s\n", total_failed ? "FAILED" : "passed");
    bench_timer_free(&timer);
    fftw_mpi_cleanup();
    return bench_finalize(PROGRAM, c.rank, total_failed ? 1 : 0);
}
