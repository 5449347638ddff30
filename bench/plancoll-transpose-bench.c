/*
 * plancoll-transpose-bench: the distributed n x n transpose of complex doubles (FFTW's block distribution) timed
 * side by side in one run:
 *   plancoll:transpose      plancoll_plan_transpose (MEASURE unless --estimate), the inner algorithm in the label
 *   plancoll:transpose[A]   the same with the inner exchange forced to A (-a A[,B...] or -a all; A may also be a
 *                           strategy: transpose.fused or transpose.composite)
 *   ... shared              each plancoll variant again on buffers from plancoll_malloc (node-shared: the fused
 *                           strategy's node peers then read the input where it lies)
 *   mpi:alltoall+local      (a) plancoll's own two local passes around MPI's blocking MPI_Alltoall
 *   mpi:ialltoall+local     (a') the same around MPI_Ialltoall waited with a yielding MPI_Test loop (the fair
 *                           comparison on an oversubscribed node, docs/measurement.md)
 *   fftw:transpose          (b) fftw_mpi_plan_many_transpose(n, n, 2, ...) with FFTW_MEASURE, when built against
 *                           an MPICH build of FFTW's MPI library (bench/build-fftw-mpi.sh, meson -Dfftw_mpi=...)
 *   bound:memcpy            one memcpy of the bytes a rank receives (the physical floor of any transpose)
 *
 *   mpiexec -n P plancoll-transpose-bench [-n N[,N...]] [-b BATCHES] [-x WARMUP] [--in-place] [--estimate]
 *                                         [-a NAME[,NAME]|all] [-v] [--no-check] [--json FILE] [--config NAME]
 *
 * Protocol (docs/measurement.md): warm-up, then batches of at least 20 ms; a yielding barrier before each
 * batch; each iteration timed on its own and reduced with MAX over ranks; variants alternate batch by batch;
 * the median is over batch means; avg/min/max over all iterations. Every variant is first validated against the
 * transposed data pattern (two executions with different data).
 */
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
#include "transpose/local.h"

#ifdef HAVE_FFTW_MPI
#include <fftw3-mpi.h>
#endif

#define PROGRAM "plancoll-transpose-bench"
#define MAX_VARIANTS 48
#define ES 16 /* complex double */

enum kind { K_PLANCOLL, K_MPI_BLOCKING, K_MPI_NONBLOCKING, K_FFTW, K_MEMCPY };

struct variant {
    enum kind kind;
    char label[96];
    plancoll_plan plan;
#ifdef HAVE_FFTW_MPI
    fftw_plan fplan;
#endif
    bool shared;          /* planned on c->shin, c->shout */
    struct bench_series t;
};

struct ctx {
    MPI_Comm comm;
    int rank, size;
    ptrdiff_t n, ln0, s0, ln1, s1, alloc;
    char *in, *out;       /* the user's buffers, alloc elements each */
    char *shin, *shout;   /* the same from plancoll_malloc, for the shared variants */
    char *S, *R;          /* scratch of the MPI variants */
    int block;            /* elements per alltoall block (uniform) */
    int *scounts, *sdispls, *rcounts, *rdispls; /* non-uniform: alltoallv in bytes */
    ptrdiff_t *offsets, *counts, *starts;
    bool uniform, in_place;
};

static void *xmalloc(size_t n)
{
    return bench_xmalloc(n, PROGRAM);
}

/* Element (i, j) of the input matrix in epoch e: two doubles that name it. */
static void element(ptrdiff_t i, ptrdiff_t j, int e, double v[2])
{
    v[0] = (double)i * 65536.0 + (double)j + 0.25 * e;
    v[1] = -(double)j * 3.0 - (double)i - 0.5 * e;
}

static void fill_input(struct ctx *c, int e)
{
    double *d = (double *)c->in;
    for (ptrdiff_t i = 0; i < c->ln0; i++)
        for (ptrdiff_t j = 0; j < c->n; j++) element(c->s0 + i, j, e, d + 2 * (i * c->n + j));
}

static long check_output(const struct ctx *c, int e)
{
    const double *d = (const double *)c->out;
    long bad = 0;
    for (ptrdiff_t j = 0; j < c->ln1; j++)
        for (ptrdiff_t i = 0; i < c->n; i++) {
            double v[2];
            element(i, c->s1 + j, e, v);
            if (d[2 * (j * c->n + i)] != v[0] || d[2 * (j * c->n + i) + 1] != v[1]) bad++;
        }
    return bad;
}

/* (a) and (a'): the same two local passes as plancoll's transpose around MPI's exchange. */
static void mpi_transpose(struct ctx *c, bool blocking)
{
    pc_transpose_local(c->in, (size_t)c->n, c->S, (size_t)c->ln0, (size_t)c->ln0, (size_t)c->n, ES);
    MPI_Request req;
    if (c->uniform) {
        if (blocking)
            MPI_Alltoall(c->S, c->block * ES, MPI_BYTE, c->R, c->block * ES, MPI_BYTE, c->comm);
        else {
            MPI_Ialltoall(c->S, c->block * ES, MPI_BYTE, c->R, c->block * ES, MPI_BYTE, c->comm, &req);
            bench_wait(&req);
        }
    } else {
        if (blocking)
            MPI_Alltoallv(c->S, c->scounts, c->sdispls, MPI_BYTE, c->R, c->rcounts, c->rdispls, MPI_BYTE, c->comm);
        else {
            MPI_Ialltoallv(c->S, c->scounts, c->sdispls, MPI_BYTE, c->R, c->rcounts, c->rdispls, MPI_BYTE, c->comm,
                           &req);
            bench_wait(&req);
        }
    }
    pc_transpose_interleave(c->R, c->offsets, c->counts, c->starts, c->size, c->out, (size_t)c->n, (size_t)c->ln1, ES);
}

static void run_variant(void *ctx, void *variant)
{
    struct ctx *c = ctx;
    struct variant *v = variant;
    switch (v->kind) {
    case K_PLANCOLL: plancoll_execute(v->plan); break;
    case K_MPI_BLOCKING: mpi_transpose(c, true); break;
    case K_MPI_NONBLOCKING: mpi_transpose(c, false); break;
    case K_FFTW:
#ifdef HAVE_FFTW_MPI
        fftw_execute(v->fplan);
#endif
        break;
    case K_MEMCPY:
        if (v->shared) memcpy(c->shout, c->shin, (size_t)(c->ln1 * c->n) * ES); /* the same floor in shared memory */
        else memcpy(c->out, c->R, (size_t)(c->ln1 * c->n) * ES);
        break;
    }
}

static void setup_sizes(struct ctx *c, ptrdiff_t n)
{
    const int P = c->size;
    c->n = n;
    c->alloc = plancoll_local_size_transposed(n, n, c->comm, &c->ln0, &c->s0, &c->ln1, &c->s1);
    c->uniform = n % P == 0;
    c->block = (int)((n / P) * (n / P));
    c->in = xmalloc((size_t)c->alloc * ES);
    c->out = c->in_place ? c->in : xmalloc((size_t)c->alloc * ES);
    if (plancoll_malloc((size_t)c->alloc * ES, c->comm, (void **)&c->shin) != PLANCOLL_SUCCESS ||
        (!c->in_place && plancoll_malloc((size_t)c->alloc * ES, c->comm, (void **)&c->shout) != PLANCOLL_SUCCESS)) {
        fprintf(stderr, "plancoll-transpose-bench: plancoll_malloc: %s\n", plancoll_error_detail());
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (c->in_place) c->shout = c->shin;
    c->S = xmalloc((size_t)(c->ln0 * n) * ES);
    c->R = xmalloc((size_t)(c->ln1 * n) * ES);
    memset(c->S, 0, (size_t)(c->ln0 * n) * ES);
    memset(c->R, 0, (size_t)(c->ln1 * n) * ES);
    c->scounts = xmalloc(sizeof(int) * 4 * (size_t)P);
    c->sdispls = c->scounts + P;
    c->rcounts = c->sdispls + P;
    c->rdispls = c->rcounts + P;
    c->offsets = xmalloc(sizeof(ptrdiff_t) * 3 * (size_t)P);
    c->counts = c->offsets + P;
    c->starts = c->counts + P;
    for (int q = 0; q < P; q++) {
        ptrdiff_t l0, st0, l1, st1;
        pc_block_dist(n, P, q, &l0, &st0);
        pc_block_dist(n, P, q, &l1, &st1);
        c->scounts[q] = (int)(c->ln0 * l1 * ES);
        c->sdispls[q] = (int)(c->ln0 * st1 * ES);
        c->rcounts[q] = (int)(l0 * c->ln1 * ES);
        c->rdispls[q] = (int)(st0 * c->ln1 * ES);
        c->counts[q] = l0;
        c->starts[q] = st0;
        c->offsets[q] = st0 * c->ln1;
    }
}

static void free_sizes(struct ctx *c)
{
    free(c->in);
    if (!c->in_place) free(c->out);
    plancoll_free(c->shin);
    if (!c->in_place) plancoll_free(c->shout);
    free(c->S);
    free(c->R);
    free(c->scounts);
    free(c->offsets);
}

static void usage(void)
{
    fprintf(stderr, "usage: plancoll-transpose-bench [-n N[,N...]] [-b BATCHES] [-x WARMUP] [--in-place] [--estimate]\n"
                    "                                [-a NAME[,NAME]|all] [-v] [--no-check] [--json FILE] [--config NAME]\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct ctx c;
    memset(&c, 0, sizeof c);
    c.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(c.comm, &c.rank);
    MPI_Comm_size(c.comm, &c.size);
#ifdef HAVE_FFTW_MPI
    fftw_mpi_init();
#endif
    ptrdiff_t sizes[16] = {256, 1024, 4096};
    int nsizes = 3, batches = 5, warmup = 10;
    bool check = true, verbose = false, estimate = false;
    const char *forced = NULL, *json = NULL, *config = NULL;
    static const struct option longopts[] = {
        {"in-place", no_argument, NULL, 'I'}, {"estimate", no_argument, NULL, 'E'}, {"no-check", no_argument, NULL, 'C'},
        {"json", required_argument, NULL, 'J'}, {"config", required_argument, NULL, 'G'}, {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "n:b:x:a:vh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': nsizes = bench_parse_sizes(optarg, sizes, 16); break;
        case 'b': batches = atoi(optarg); break;
        case 'x': warmup = atoi(optarg); break;
        case 'a': forced = optarg; break;
        case 'v': verbose = true; break;
        case 'I': c.in_place = true; break;
        case 'E': estimate = true; break;
        case 'C': check = false; break;
        case 'J': json = optarg; break;
        case 'G': config = optarg; break;
        default:
            if (c.rank == 0) usage();
            MPI_Finalize();
            return 2;
        }
    }
    if (batches < 1) batches = 1;
    if (batches > BENCH_MAX_BATCHES) batches = BENCH_MAX_BATCHES;
    if (warmup < 1) warmup = 1;
    struct bench_timer timer;
    bench_timer_init(&timer, c.comm, PROGRAM);
    int nodes_local = bench_count_nodes(c.comm);
    FILE *jf = NULL;
    if (c.rank == 0) {
        printf("# plancoll-transpose-bench: P=%d nodes=%d configuration=%s, n x n complex doubles, %s, planner %s\n",
               c.size, nodes_local, config ? config : "unnamed", c.in_place ? "in place" : "out of place",
               estimate ? "ESTIMATE" : "MEASURE");
        printf("# warm-up %d, %d alternating batches of >= 20 ms; time per iteration = max over ranks; median of batch "
               "means; times in us\n",
               warmup, batches);
#ifndef HAVE_FFTW_MPI
        printf("# fftw:transpose not built (no MPICH build of FFTW's MPI library: bench/build-fftw-mpi.sh, then meson "
               "setup --reconfigure)\n");
#endif
        printf("# %6s  %-44s %11s %11s %11s %11s %6s %9s %9s %9s %9s\n", "n", "implementation", "median", "avg", "min",
               "max", "iters", "/a", "/a'", "/fftw", "/memcpy");
        if (json) {
            jf = fopen(json, "w");
            if (!jf) fprintf(stderr, "plancoll-transpose-bench: cannot write %s\n", json);
            else
                fprintf(jf, "{\"benchmark\": \"plancoll-transpose-bench\", \"configuration\": \"%s\", \"P\": %d, "
                            "\"nodes\": %d, \"in_place\": %s, \"planner\": \"%s\", \"element\": \"complex double\", "
                            "\"statistic\": \"median over batches of the batch mean of per-iteration max over ranks\", "
                            "\"results\": [",
                        config ? config : "unnamed", c.size, nodes_local, c.in_place ? "true" : "false",
                        estimate ? "ESTIMATE" : "MEASURE");
        }
    }
    long total_bad = 0;
    bool first_json = true;
#ifdef HAVE_FFTW_MPI
    /* The distribution is FFTW's: compare with fftw_mpi_local_size_2d_transposed on many shapes. (FFTW's
     * allocation size is an upper bound for its own algorithms: it may exceed plancoll's, never fall short.) */
    if (check) {
        long bad = 0;
        for (ptrdiff_t n0 = 1; n0 <= 40; n0++)
            for (ptrdiff_t n1 = 1; n1 <= 40; n1 += 3) {
                ptrdiff_t a[4], f[4];
                ptrdiff_t pa = plancoll_local_size_transposed(n0, n1, c.comm, &a[0], &a[1], &a[2], &a[3]);
                ptrdiff_t fa = fftw_mpi_local_size_2d_transposed(n0, n1, c.comm, &f[0], &f[1], &f[2], &f[3]);
                if (memcmp(a, f, sizeof a) != 0 || pa > fa) {
                    if (!bad)
                        fprintf(stderr, "[rank %d] %td x %td: plancoll %td %td %td %td (alloc %td), FFTW %td %td %td %td (alloc %td)\n",
                                c.rank, n0, n1, a[0], a[1], a[2], a[3], pa, f[0], f[1], f[2], f[3], fa);
                    bad++;
                }
            }
        long all = 0;
        bench_allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, c.comm);
        if (c.rank == 0) printf("# distribution against fftw_mpi_local_size_2d_transposed: %s\n", all ? "DIFFERS" : "identical");
        total_bad += all;
    }
#endif
    for (int si = 0; si < nsizes; si++) {
        setup_sizes(&c, sizes[si]);
        fill_input(&c, 0);
        struct variant vs[MAX_VARIANTS];
        int nv = 0;
        memset(vs, 0, sizeof vs);
        unsigned flags = estimate ? PLANCOLL_ESTIMATE : PLANCOLL_MEASURE;
        /* the planner's choice, then forced inner algorithms */
        const char *names[MAX_VARIANTS];
        int nnames = 0;
        names[nnames++] = NULL;
        char forced_copy[512] = "";
        if (forced) {
            if (strcmp(forced, "all") == 0) {
                const char *coll;
                for (int i = 0; nnames < (MAX_VARIANTS - 6) / 2; i++) {
                    const char *nm = plancoll_algorithm_name(i, &coll);
                    if (!nm) break;
                    if (strcmp(coll, c.uniform ? "alltoall" : "alltoallv") == 0) names[nnames++] = nm;
                }
            } else {
                snprintf(forced_copy, sizeof forced_copy, "%s", forced);
                for (char *tok = strtok(forced_copy, ","); tok && nnames < (MAX_VARIANTS - 6) / 2; tok = strtok(NULL, ","))
                    names[nnames++] = tok;
            }
        }
        for (int k = 0; k < 2 * nnames; k++) {
            struct variant *v = &vs[nv];
            v->kind = K_PLANCOLL;
            v->shared = k >= nnames; /* every plancoll variant on private, then on node-shared buffers */
            const char *nm = names[k % nnames];
            if (nm) setenv("PLANCOLL_ALGORITHM", nm, 1);
            double t0 = MPI_Wtime();
            int rc = plancoll_plan_transpose(c.n, c.n, MPI_C_DOUBLE_COMPLEX, v->shared ? c.shin : c.in,
                                             v->shared ? c.shout : c.out, c.comm, flags, &v->plan);
            double tplan = MPI_Wtime() - t0;
            unsetenv("PLANCOLL_ALGORITHM");
            if (rc != PLANCOLL_SUCCESS) {
                if (c.rank == 0)
                    printf("# %td: plancoll plan%s%s failed: %s: %s\n", c.n, nm ? " forced " : "", nm ? nm : "",
                           plancoll_strerror(rc), plancoll_error_detail());
                continue;
            }
            snprintf(v->label, sizeof v->label, "plancoll:%s%s%s", plancoll_plan_algorithm(v->plan),
                     nm ? " forced" : "", v->shared ? " shared" : "");
            if (c.rank == 0) {
                printf("# %td: %s planned in %.1f ms\n", c.n, v->label, tplan * 1e3);
                if (verbose) plancoll_fprint_plan(v->plan, stdout);
            }
            nv++;
        }
        vs[nv].kind = K_MPI_BLOCKING;
        snprintf(vs[nv++].label, sizeof vs[0].label, "mpi:%s+local (a, blocking)", c.uniform ? "alltoall" : "alltoallv");
        vs[nv].kind = K_MPI_NONBLOCKING;
        snprintf(vs[nv++].label, sizeof vs[0].label, "mpi:i%s+local (a', yielding)", c.uniform ? "alltoall" : "alltoallv");
#ifdef HAVE_FFTW_MPI
        {
            double t0 = MPI_Wtime();
            vs[nv].fplan = fftw_mpi_plan_many_transpose(c.n, c.n, 2, FFTW_MPI_DEFAULT_BLOCK, FFTW_MPI_DEFAULT_BLOCK,
                                                        (double *)c.in, (double *)c.out, c.comm, FFTW_MEASURE);
            if (vs[nv].fplan) {
                vs[nv].kind = K_FFTW;
                snprintf(vs[nv++].label, sizeof vs[0].label, "fftw:transpose (b, FFTW_MEASURE)");
                if (c.rank == 0) printf("# %td: FFTW planned in %.1f ms\n", c.n, (MPI_Wtime() - t0) * 1e3);
            } else if (c.rank == 0) {
                printf("# %td: fftw_mpi_plan_many_transpose returned NULL\n", c.n);
            }
        }
#endif
        vs[nv].kind = K_MEMCPY;
        snprintf(vs[nv++].label, sizeof vs[0].label, "bound:memcpy");
        if (!c.in_place) { /* in place the shared buffers are one: nothing to copy between them */
            vs[nv].kind = K_MEMCPY;
            vs[nv].shared = true;
            snprintf(vs[nv++].label, sizeof vs[0].label, "bound:memcpy shared");
        }
        for (int i = 0; i < nv; i++) bench_series_reset(&vs[i].t);
        /* FFTW's plan_measure scribbles on the arrays: validate after planning, with fresh data */
        if (check) {
            for (int i = 0; i < nv; i++) {
                if (vs[i].kind == K_MEMCPY) continue;
                for (int e = 1; e <= 2; e++) {
                    fill_input(&c, e);
                    if (!c.in_place) memset(c.out, 0xa5, (size_t)c.alloc * ES);
                    if (vs[i].shared) { /* the shared buffers carry the same data; the result is checked in c.out */
                        memcpy(c.shin, c.in, (size_t)c.alloc * ES);
                        if (!c.in_place) memset(c.shout, 0xa5, (size_t)c.alloc * ES);
                    }
                    run_variant(&c, &vs[i]);
                    if (vs[i].shared) memcpy(c.out, c.shout, (size_t)c.alloc * ES);
                    long bad = check_output(&c, e), all = 0;
                    bench_allreduce(&bad, &all, 1, MPI_LONG, MPI_SUM, c.comm);
                    if (all && c.rank == 0) printf("# VALIDATION FAILED: %s n=%td: %ld wrong elements\n", vs[i].label, c.n, all);
                    total_bad += all;
                }
            }
        }
        for (int i = 0; i < nv; i++) bench_calibrate(&timer, &vs[i].t, run_variant, &c, &vs[i], warmup);
        for (int b = 0; b < batches; b++)
            for (int i = 0; i < nv; i++) bench_time_batch(&timer, &vs[i].t, run_variant, &c, &vs[i], b);
        double ref_a = 0, ref_an = 0, ref_f = 0, ref_m = 0;
        for (int i = 0; i < nv; i++) {
            double m = bench_series_median(&vs[i].t, batches);
            if (vs[i].kind == K_MPI_BLOCKING) ref_a = m;
            if (vs[i].kind == K_MPI_NONBLOCKING) ref_an = m;
            if (vs[i].kind == K_FFTW) ref_f = m;
            if (vs[i].kind == K_MEMCPY && !vs[i].shared) ref_m = m; /* the /memcpy column: private memory */
        }
        if (c.rank == 0) {
            for (int i = 0; i < nv; i++) {
                const struct variant *v = &vs[i];
                const struct bench_series *t = &v->t;
                printf("  %6td  %-44s %11.1f %11.1f %11.1f %11.1f %6ld", c.n, v->label, t->median * 1e6,
                       t->sum / t->n * 1e6, t->min * 1e6, t->max * 1e6, t->n);
                double refs[4] = {ref_a, ref_an, ref_f, ref_m};
                for (int r = 0; r < 4; r++)
                    if (refs[r] > 0) printf(" %9.3f", t->median / refs[r]);
                    else printf(" %9s", "-");
                printf("\n");
                if (jf) {
                    fprintf(jf, "%s\n  {\"n\": %td, \"implementation\": \"%s\", \"median_us\": %.3f, \"avg_us\": %.3f, "
                                "\"min_us\": %.3f, \"max_us\": %.3f, \"iterations\": %ld}",
                            first_json ? "" : ",", c.n, v->label, t->median * 1e6, t->sum / t->n * 1e6, t->min * 1e6,
                            t->max * 1e6, t->n);
                    first_json = false;
                }
            }
            fflush(stdout);
        }
        for (int i = 0; i < nv; i++) {
            if (vs[i].plan) plancoll_destroy_plan(&vs[i].plan);
#ifdef HAVE_FFTW_MPI
            if (vs[i].kind == K_FFTW) fftw_destroy_plan(vs[i].fplan);
#endif
        }
        free_sizes(&c);
    }
    if (jf) {
        fprintf(jf, "\n], \"validation_failures\": %ld}\n", total_bad);
        fclose(jf);
    }
    if (c.rank == 0) printf("# validation: %s\n", !check ? "skipped" : total_bad ? "FAILED" : "passed");
    bench_timer_free(&timer);
#ifdef HAVE_FFTW_MPI
    fftw_mpi_cleanup();
#endif
    return bench_finalize(PROGRAM, c.rank, total_bad ? 1 : 0);
}
