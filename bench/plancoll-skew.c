/*
 * plancoll-skew: alltoall under process arrival skew ([Qian08] ch. 6; docs/measurement.md "process arrival skew").
 *
 *   mpiexec -n P plancoll-skew [-m MIN:MAX] [-f FACTOR] [--sizes A,B,...] [--mif LIST] [--late LIST]
 *                              [--late-mif X] [-a ALG[,ALG...]] [-i ITER] [-b BATCHES] [-x WARMUP] [-c]
 *                              [--seed N] [--json FILE] [--config NAME]
 *
 * For each block size m it first measures t_block, the time to send one block of m bytes (half the round trip
 * of a ping-pong between rank 0 and a rank on another node when there is one, median of 21, broadcast from
 * rank 0). Then, for each arrival mode, every iteration is: a yield-friendly barrier (arrival is controlled by
 * the delays alone), a busy computation of this rank's delay, then the timed call. Modes:
 *   mif=X     every rank computes a random time in [0, X t_block]            (--mif, default 1,32,128,512)
 *   lateP%    P% of the ranks (random each iteration) compute X t_block, the others nothing
 *             (--late, default 25,75; X = --late-mif, default 128, as in the seed's Figure 6.6)
 * Variants, alternated batch by batch in one run and replaying the same delays: plancoll plans with each
 * algorithm of -a forced (default alltoall.pap,alltoall.pairwise; entries may fix parameters, e.g.
 * alltoall.pap:transport=put), MPI_Ialltoall waited with MPI_Test + sched_yield, and the blocking MPI_Alltoall
 * (marked: on an oversubscribed node it spins and loses whole scheduler slices).
 *
 * Times exclude the computation. Per iteration: "max" = max over ranks of (end - start of the call), the
 * brief's metric; "avg" = the mean over ranks (the seed's metric); "tail" = latest end - latest start, the
 * time the collective needs after the last rank arrived (needs one clock: all ranks on one host, as with
 * emulated nodes; omitted otherwise). Each statistic: median over batches of the batch mean. -c checks every
 * received byte of every call (data then changes every iteration).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plancoll.h>

#include "bench_mpi.h"

#define MAX_SIZES 32
#define MAX_MODES 16
#define MAX_ALGS 8
#define MAX_VARIANTS (MAX_ALGS + 2)
#define MAX_BATCHES 64
#define MAX_ITERS 1000

struct options {
    size_t sizes[MAX_SIZES];
    int nsizes;
    size_t min_bytes, max_bytes, factor;
    double mif[MAX_MODES];
    int nmif;
    int late[MAX_MODES];
    int nlate;
    double late_mif;
    char algs[MAX_ALGS][96];
    int nalgs;
    int iters, batches, warmup;
    bool check;
    uint64_t seed;
    const char *json_path, *configuration;
};

struct mode {
    char name[32];
    bool late;   /* false: random in [0, mif t_block]; true: pct% of ranks late by mif t_block */
    double mif;
    int pct;
};

enum vkind { V_PLAN, V_MPI_NB, V_MPI_BLOCKING };

struct variant {
    enum vkind kind;
    char label[112];
    plancoll_plan plan;
    double bmax[MAX_BATCHES], bavg[MAX_BATCHES], btail[MAX_BATCHES];
    double med_max, med_avg, med_tail;
    long wrong;
};

struct row { /* rank 0, for the JSON file */
    size_t bytes;
    double t_block_us;
    struct mode mode;
    char impl[112];
    double max_us, avg_us, tail_us;
    long iterations, wrong;
};

static int rank_, size_, nodes_;
static bool one_clock; /* every rank on one host: start and end times are comparable */
static volatile sig_atomic_t exit_code;

static void watchdog(int sig)
{
    (void)sig;
    _exit(exit_code);
}

/* MPICH 4.0.2 over UCX tcp sometimes hangs in MPI_Finalize: everything is written first, then 5 s. */
static int finish(int code)
{
    fflush(stdout);
    fflush(stderr);
    exit_code = code;
    signal(SIGALRM, watchdog);
    alarm(5);
    MPI_Finalize();
    return code;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "[rank %d] plancoll-skew: out of memory\n", rank_);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return p;
}

/* ---- yield-friendly waiting (the same loop plancoll uses) ------------------------------------------------ */

/* ---- randomness shared by every rank ----------------------------------------------------------------- */

static uint64_t mix(uint64_t z)
{
    z += UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double unit(uint64_t h) { return (double)(h >> 11) * 0x1p-53; }

/* This rank's delay in microseconds at (size, mode, batch, iteration): a function of the seed only, so every
 * variant replays the same arrival pattern. */
static double delay_us(const struct options *o, const struct mode *md, double t_block, int si, int mi, int batch,
                       int it)
{
    uint64_t key = mix(o->seed ^ mix((uint64_t)si << 48 | (uint64_t)mi << 32 | (uint64_t)batch << 16 | (uint64_t)it));
    double bound = md->mif * t_block;
    if (!md->late) return unit(mix(key ^ (uint64_t)(rank_ + 1))) * bound;
    /* pct% of the ranks, at least one: the first ones of a permutation drawn from key */
    int nlate = (int)lround(size_ * md->pct / 100.0);
    if (nlate < 1) nlate = 1;
    /* rank r is late when its random sort key is among the nlate smallest (ties broken by rank) */
    uint64_t mine = mix(key ^ (uint64_t)(rank_ + 1));
    int below = 0;
    for (int r = 0; r < size_; r++) {
        uint64_t k = mix(key ^ (uint64_t)(r + 1));
        below += k < mine || (k == mine && r < rank_);
    }
    return below < nlate ? bound : 0.0;
}

static void compute(double us)
{
    if (us <= 0) return;
    double t0 = MPI_Wtime();
    volatile double x = 1.0;
    while ((MPI_Wtime() - t0) * 1e6 < us) x = x * 1.0000001 + 1e-9;
}

/* ---- data ------------------------------------------------------------------------------------------- */

static unsigned char data_byte(int src, int dst, size_t k, int epoch)
{
    return (unsigned char)(src * 131 + dst * 31 + (int)(k % 251) * 7 + (int)(k >> 8) + epoch * 17 + 1);
}

static void fill(unsigned char *send, size_t m, int epoch)
{
    for (int d = 0; d < size_; d++)
        for (size_t k = 0; k < m; k++) send[(size_t)d * m + k] = data_byte(rank_, d, k, epoch);
}

static long check(const unsigned char *recv, size_t m, int epoch, const char *label)
{
    long wrong = 0;
    for (int s = 0; s < size_; s++)
        for (size_t k = 0; k < m; k++)
            if (recv[(size_t)s * m + k] != data_byte(s, rank_, k, epoch) && wrong++ < 3)
                fprintf(stderr, "[rank %d] VALIDATION FAILED %s %zu B: block from %d byte %zu: 0x%02x, want 0x%02x\n",
                        rank_, label, m, s, k, recv[(size_t)s * m + k], data_byte(s, rank_, k, epoch));
    return wrong;
}

/* ---- t_block ------------------------------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Half the round trip of m bytes between rank 0 and its partner (a rank of another node if any). */
static double measure_t_block(size_t m, int partner, unsigned char *buf)
{
    enum { REPS = 21 };
    double t[REPS];
    for (int rep = -3; rep < REPS; rep++) {
        bench_barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Request req;
        if (rank_ == 0) {
            MPI_Isend(buf, (int)m, MPI_BYTE, partner, 77, MPI_COMM_WORLD, &req);
            bench_wait(&req);
            MPI_Irecv(buf, (int)m, MPI_BYTE, partner, 78, MPI_COMM_WORLD, &req);
            bench_wait(&req);
        } else if (rank_ == partner) {
            MPI_Irecv(buf, (int)m, MPI_BYTE, 0, 77, MPI_COMM_WORLD, &req);
            bench_wait(&req);
            MPI_Isend(buf, (int)m, MPI_BYTE, 0, 78, MPI_COMM_WORLD, &req);
            bench_wait(&req);
        }
        if (rep >= 0) t[rep] = (MPI_Wtime() - t0) * 1e6 / 2;
    }
    qsort(t, REPS, sizeof t[0], cmp_double);
    double tb = t[REPS / 2];
    bench_bcast(&tb, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return tb;
}

/* ---- one size ---------------------------------------------------------------------------------------- */

static double median(double *v, int n)
{
    double tmp[MAX_BATCHES];
    memcpy(tmp, v, sizeof(double) * (size_t)n);
    qsort(tmp, (size_t)n, sizeof tmp[0], cmp_double);
    return n % 2 ? tmp[n / 2] : 0.5 * (tmp[n / 2 - 1] + tmp[n / 2]);
}

static void run_call(struct variant *v, unsigned char *send, unsigned char *recv, size_t m)
{
    switch (v->kind) {
    case V_PLAN: {
        int rc = plancoll_execute(v->plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] %s: %s: %s\n", rank_, v->label, plancoll_strerror(rc), plancoll_error_detail());
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
        break;
    }
    case V_MPI_NB: {
        MPI_Request req;
        MPI_Ialltoall(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD, &req);
        bench_wait(&req);
        break;
    }
    case V_MPI_BLOCKING: MPI_Alltoall(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD); break;
    }
}

struct sample_buf {
    double *dur, *start, *end, *red;
};

/* One batch of one variant: iters iterations with this mode's delays; fills the batch statistics. */
static void run_batch(const struct options *o, struct variant *v, const struct mode *md, int si, int mi, int batch,
                      double t_block, unsigned char *send, unsigned char *recv, size_t m, struct sample_buf *sb)
{
    const int n = o->iters;
    for (int it = 0; it < n; it++) {
        int epoch = batch * MAX_ITERS + it;
        if (o->check) {
            fill(send, m, epoch);
            memset(recv, 0, (size_t)size_ * m);
        }
        double d = delay_us(o, md, t_block, si, mi, batch, it);
        bench_barrier(MPI_COMM_WORLD);
        compute(d);
        double t0 = MPI_Wtime();
        run_call(v, send, recv, m);
        double t1 = MPI_Wtime();
        sb->dur[it] = (t1 - t0) * 1e6;
        sb->start[it] = t0;
        sb->end[it] = t1;
        if (o->check) v->wrong += check(recv, m, epoch, v->label);
    }
    /* per iteration: max and sum of durations, latest start and latest end */
    double *in = sb->red, *out = sb->red + 3 * n;
    for (int it = 0; it < n; it++) {
        in[it] = sb->dur[it];
        in[n + it] = sb->start[it];
        in[2 * n + it] = sb->end[it];
    }
    bench_allreduce(in, out, 3 * n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double *sum = sb->red + 6 * n;
    bench_allreduce(sb->dur, sum, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double smax = 0, savg = 0, stail = 0;
    for (int it = 0; it < n; it++) {
        smax += out[it];
        savg += sum[it] / size_;
        stail += (out[2 * n + it] - out[n + it]) * 1e6;
    }
    v->bmax[batch] = smax / n;
    v->bavg[batch] = savg / n;
    v->btail[batch] = stail / n;
}

static void plan_variants(const struct options *o, struct variant *vs, int *nv, unsigned char *send,
                          unsigned char *recv, size_t m)
{
    int n = 0;
    for (int a = 0; a < o->nalgs; a++) {
        struct variant *v = &vs[n];
        memset(v, 0, sizeof *v);
        v->kind = V_PLAN;
        snprintf(v->label, sizeof v->label, "%s", o->algs[a]);
        setenv("PLANCOLL_ALGORITHM", o->algs[a], 1);
        int rc = plancoll_plan_alltoall(send, (int)m, MPI_BYTE, recv, (int)m, MPI_BYTE, MPI_COMM_WORLD, PLANCOLL_ESTIMATE,
                                        &v->plan);
        unsetenv("PLANCOLL_ALGORITHM");
        if (rc != PLANCOLL_SUCCESS) {
            if (rank_ == 0) printf("# %s: not run: %s: %s\n", o->algs[a], plancoll_strerror(rc), plancoll_error_detail());
            continue;
        }
        n++;
    }
    memset(&vs[n], 0, sizeof vs[n]);
    vs[n].kind = V_MPI_NB;
    snprintf(vs[n++].label, sizeof vs[0].label, "mpi:MPI_Ialltoall+yield");
    memset(&vs[n], 0, sizeof vs[n]);
    vs[n].kind = V_MPI_BLOCKING;
    snprintf(vs[n++].label, sizeof vs[0].label, "mpi:MPI_Alltoall(blocking)");
    *nv = n;
}

static void print_table(const char *metric, const struct variant *vs, int nv, const struct mode *modes, int nmodes,
                        double (*stats)[MAX_VARIANTS], double t_block)
{
    printf("# %s (us)\n%-10s %10s", metric, "mode", "bound_us");
    for (int v = 0; v < nv; v++) printf(" %26.26s", vs[v].label);
    printf("   %s/<each other>\n", vs[0].label);
    for (int mi = 0; mi < nmodes; mi++) {
        printf("%-10s %10.1f", modes[mi].name, modes[mi].mif * t_block);
        for (int v = 0; v < nv; v++) printf(" %26.1f", stats[mi][v]);
        printf("  ");
        for (int v = 1; v < nv; v++) printf(" %.2f", stats[mi][v] > 0 ? stats[mi][0] / stats[mi][v] : 0.0);
        printf("\n");
    }
}

static void run_size(const struct options *o, int si, size_t m, const struct mode *modes, int nmodes, int partner,
                     struct row **rows, size_t *nrows, size_t *caprows, long *wrong_total)
{
    unsigned char *send = xmalloc((size_t)size_ * m), *recv = xmalloc((size_t)size_ * m);
    memset(send, 0, (size_t)size_ * m);
    memset(recv, 0, (size_t)size_ * m);
    fill(send, m, 0);
    double t_block = measure_t_block(m, partner, send);
    fill(send, m, 0);

    struct variant vs[MAX_VARIANTS];
    int nv = 0;
    plan_variants(o, vs, &nv, send, recv, m);
    struct sample_buf sb = {xmalloc(sizeof(double) * (size_t)o->iters), xmalloc(sizeof(double) * (size_t)o->iters),
                            xmalloc(sizeof(double) * (size_t)o->iters), xmalloc(sizeof(double) * 7 * (size_t)o->iters)};
    for (int v = 0; v < nv; v++)
        for (int w = 0; w < o->warmup; w++) run_call(&vs[v], send, recv, m);
    if (rank_ == 0) {
        printf("\n# %zu B per block: t_block = %.1f us (half round trip to rank %d); %d batches x %d iterations per "
               "variant and mode\n",
               m, t_block, partner, o->batches, o->iters);
        fflush(stdout);
    }

    double smax[MAX_MODES][MAX_VARIANTS], savg[MAX_MODES][MAX_VARIANTS], stail[MAX_MODES][MAX_VARIANTS];
    for (int mi = 0; mi < nmodes; mi++) {
        double t0 = MPI_Wtime();
        for (int b = 0; b < o->batches; b++)
            for (int v = 0; v < nv; v++) run_batch(o, &vs[v], &modes[mi], si, mi, b, t_block, send, recv, m, &sb);
        for (int v = 0; v < nv; v++) {
            smax[mi][v] = vs[v].med_max = median(vs[v].bmax, o->batches);
            savg[mi][v] = vs[v].med_avg = median(vs[v].bavg, o->batches);
            stail[mi][v] = vs[v].med_tail = median(vs[v].btail, o->batches);
            long wrong = 0;
            bench_allreduce(&vs[v].wrong, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            *wrong_total += wrong;
            if (rank_ == 0) {
                if (*nrows == *caprows) {
                    *caprows = *caprows ? 2 * *caprows : 64;
                    *rows = realloc(*rows, sizeof(struct row) * *caprows);
                    if (!*rows) MPI_Abort(MPI_COMM_WORLD, 2);
                }
                struct row *r = &(*rows)[(*nrows)++];
                r->bytes = m;
                r->t_block_us = t_block;
                r->mode = modes[mi];
                snprintf(r->impl, sizeof r->impl, "%s", vs[v].label);
                r->max_us = vs[v].med_max;
                r->avg_us = vs[v].med_avg;
                r->tail_us = vs[v].med_tail;
                r->iterations = (long)o->batches * o->iters;
                r->wrong = wrong;
            }
            vs[v].wrong = 0;
        }
        if (rank_ == 0) {
            printf("#   mode %-8s done in %.1f s\n", modes[mi].name, MPI_Wtime() - t0);
            fflush(stdout);
        }
    }
    if (rank_ == 0) {
        print_table("max over ranks of the call's duration, median over batches", vs, nv, modes, nmodes, smax, t_block);
        print_table("mean over ranks of the call's duration", vs, nv, modes, nmodes, savg, t_block);
        if (one_clock) print_table("after the last arrival (latest end - latest start)", vs, nv, modes, nmodes, stail, t_block);
        fflush(stdout);
    }
    for (int v = 0; v < nv; v++)
        if (vs[v].kind == V_PLAN) plancoll_destroy_plan(&vs[v].plan);
    free(sb.dur);
    free(sb.start);
    free(sb.end);
    free(sb.red);
    free(send);
    free(recv);
}

/* ---- output ------------------------------------------------------------------------------------------ */

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static double load_average(void)
{
    double load = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &load) != 1) load = -1;
        fclose(f);
    }
    return load;
}

static bool write_json(const struct options *o, const char *config, const char *lib, double load0,
                       const struct row *rows, size_t nrows, double seconds)
{
    FILE *f = fopen(o->json_path, "w");
    if (!f) {
        fprintf(stderr, "plancoll-skew: cannot write %s: %s\n", o->json_path, strerror(errno));
        return false;
    }
    fprintf(f, "{\n  \"benchmark\": \"plancoll-skew\",\n  \"collective\": \"alltoall\",\n  \"ranks\": %d,\n  \"nodes\": %d,\n"
               "  \"configuration\": ",
            size_, nodes_);
    json_string(f, config);
    fprintf(f, ",\n  \"plancoll_version\": \"%s\",\n  \"mpi_library\": ", plancoll_version(NULL, NULL, NULL));
    json_string(f, lib);
    fprintf(f, ",\n  \"protocol\": {\"batches\": %d, \"iterations_per_batch\": %d, \"warmup\": %d, \"seed\": %llu, "
               "\"late_mif\": %g, \"checked\": %s, \"statistic\": \"median over batches of the batch mean; max_us = max over "
               "ranks of (end - start of the call), avg_us = mean over ranks, tail_us = latest end - latest start%s\", "
               "\"delays\": \"busy computation before each call after a yield-friendly barrier: mif=X: uniform in [0, X "
               "t_block] on every rank; lateP: P%% of the ranks (random each iteration, at least one) compute X t_block, "
               "the others nothing\"}",
            o->batches, o->iters, o->warmup, (unsigned long long)o->seed, o->late_mif, o->check ? "true" : "false",
            one_clock ? "" : " (not measured: ranks on several hosts)");
    fprintf(f, ",\n  \"load_average\": {\"start\": %.2f, \"end\": %.2f},\n  \"seconds\": %.1f", load0, load_average(),
            seconds);
    fprintf(f, ",\n  \"results\": [");
    for (size_t i = 0; i < nrows; i++) {
        const struct row *r = &rows[i];
        fprintf(f, "%s\n    {\"bytes\": %zu, \"t_block_us\": %.2f, \"mode\": \"%s\", \"mif\": %g, \"late_percent\": %d, "
                   "\"delay_bound_us\": %.1f, \"impl\": ",
                i ? "," : "", r->bytes, r->t_block_us, r->mode.name, r->mode.mif, r->mode.late ? r->mode.pct : 0,
                r->mode.mif * r->t_block_us);
        json_string(f, r->impl);
        fprintf(f, ", \"max_us\": %.2f, \"avg_us\": %.2f", r->max_us, r->avg_us);
        if (one_clock) fprintf(f, ", \"tail_us\": %.2f", r->tail_us);
        fprintf(f, ", \"iterations\": %ld, \"validation_errors\": %ld}", r->iterations, r->wrong);
    }
    /* ratios of the first plancoll variant (alltoall.pap by default) to every other implementation */
    fprintf(f, "\n  ],\n  \"ratios\": [");
    bool first = true;
    for (size_t i = 0; i < nrows; i++) {
        const struct row *base = &rows[i];
        if (i > 0 && rows[i - 1].bytes == base->bytes && strcmp(rows[i - 1].mode.name, base->mode.name) == 0) continue;
        for (size_t j = i + 1; j < nrows && rows[j].bytes == base->bytes && strcmp(rows[j].mode.name, base->mode.name) == 0;
             j++) {
            fprintf(f, "%s\n    {\"bytes\": %zu, \"mode\": \"%s\", \"numerator\": ", first ? "" : ",", base->bytes,
                    base->mode.name);
            json_string(f, base->impl);
            fprintf(f, ", \"denominator\": ");
            json_string(f, rows[j].impl);
            fprintf(f, ", \"max\": %.3f, \"avg\": %.3f", rows[j].max_us > 0 ? base->max_us / rows[j].max_us : 0.0,
                    rows[j].avg_us > 0 ? base->avg_us / rows[j].avg_us : 0.0);
            if (one_clock) fprintf(f, ", \"tail\": %.3f", rows[j].tail_us > 0 ? base->tail_us / rows[j].tail_us : 0.0);
            fputc('}', f);
            first = false;
        }
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "plancoll-skew: error writing %s\n", o->json_path);
        return false;
    }
    return true;
}

/* ---- options ------------------------------------------------------------------------------------------ */

static void usage(void)
{
    printf("usage: mpiexec -n P plancoll-skew [options]\n"
           "  -m MIN:MAX       block sizes in bytes (with -f FACTOR, default 8; MAX always included)\n"
           "  --sizes A,B,...  explicit block sizes (instead of -m)\n"
           "  --mif LIST       random-arrival modes: delays uniform in [0, MIF t_block] (default 1,32,128,512)\n"
           "  --late LIST      late-rank modes: percent of ranks late by --late-mif x t_block (default 25,75)\n"
           "  --late-mif X     (default 128)\n"
           "  -a ALG[,ALG...]  plancoll algorithms to force, e.g. alltoall.pap:transport=put\n"
           "                   (default alltoall.pap,alltoall.pairwise; the first is the ratios' numerator)\n"
           "  -i ITER          iterations per batch (default 10)   -b BATCHES (default 7)   -x WARMUP (default 10)\n"
           "  -c               check every received byte of every call\n"
           "  --seed N         arrival pattern seed (default 3)\n"
           "  --json FILE      write the results as JSON      --config NAME  configuration name (e.g. 2n2p-tcp)\n");
}

static int parse_list(const char *text, double *out, int max)
{
    int n = 0;
    char *copy = strdup(text), *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok && n < max; tok = strtok_r(NULL, ",", &save)) {
        char *end;
        double v = strtod(tok, &end);
        if (*end || v < 0) {
            free(copy);
            return -1;
        }
        out[n++] = v;
    }
    free(copy);
    return n;
}

static const char *parse_options(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->min_bytes = 8;
    o->max_bytes = 8192;
    o->factor = 8;
    o->late_mif = 128;
    o->iters = 10;
    o->batches = 7;
    o->warmup = 10;
    o->seed = 3;
    double tmp[MAX_MODES];
    static const struct option longs[] = {{"sizes", required_argument, NULL, 'S'}, {"mif", required_argument, NULL, 'M'},
                                          {"late", required_argument, NULL, 'L'},  {"late-mif", required_argument, NULL, 'X'},
                                          {"seed", required_argument, NULL, 's'},  {"json", required_argument, NULL, 'j'},
                                          {"config", required_argument, NULL, 'C'}, {"help", no_argument, NULL, 'h'},
                                          {NULL, 0, NULL, 0}};
    bool sizes_given = false, mif_given = false, late_given = false;
    int c;
    while ((c = getopt_long(argc, argv, "m:f:a:i:b:x:ch", longs, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (sscanf(optarg, "%zu:%zu", &o->min_bytes, &o->max_bytes) != 2 || o->min_bytes == 0 || o->max_bytes < o->min_bytes)
                return "-m MIN:MAX with 0 < MIN <= MAX";
            break;
        case 'f':
            o->factor = (size_t)strtoul(optarg, NULL, 10);
            if (o->factor < 2) return "-f FACTOR >= 2";
            break;
        case 'S': {
            double v[MAX_SIZES];
            int n = parse_list(optarg, v, MAX_SIZES);
            if (n <= 0) return "--sizes A,B,...";
            for (int i = 0; i < n; i++) {
                if (v[i] < 1 || v[i] > 1 << 26) return "--sizes: 1 to 64 MiB per block";
                o->sizes[i] = (size_t)v[i];
            }
            o->nsizes = n;
            sizes_given = true;
            break;
        }
        case 'M':
            o->nmif = parse_list(optarg, o->mif, MAX_MODES);
            if (o->nmif < 0) return "--mif LIST of numbers";
            mif_given = true;
            break;
        case 'L': {
            int n = parse_list(optarg, tmp, MAX_MODES);
            if (n < 0) return "--late LIST of percentages";
            for (int i = 0; i < n; i++) {
                if (tmp[i] <= 0 || tmp[i] > 100) return "--late: percentages in (0, 100]";
                o->late[i] = (int)tmp[i];
            }
            o->nlate = n;
            late_given = true;
            break;
        }
        case 'X': o->late_mif = strtod(optarg, NULL); break;
        case 'a': {
            o->nalgs = 0;
            char *copy = strdup(optarg), *save = NULL;
            for (char *tok = strtok_r(copy, ",", &save); tok && o->nalgs < MAX_ALGS; tok = strtok_r(NULL, ",", &save))
                snprintf(o->algs[o->nalgs++], sizeof o->algs[0], "%s", tok);
            free(copy);
            break;
        }
        case 'i': o->iters = atoi(optarg); break;
        case 'b': o->batches = atoi(optarg); break;
        case 'x': o->warmup = atoi(optarg); break;
        case 'c': o->check = true; break;
        case 's': o->seed = strtoull(optarg, NULL, 0); break;
        case 'j': o->json_path = optarg; break;
        case 'C': o->configuration = optarg; break;
        case 'h': usage(); return "";
        default: return "unknown option (--help)";
        }
    }
    if (o->iters < 1 || o->iters > MAX_ITERS) return "-i ITER in 1..1000";
    if (o->batches < 1 || o->batches > MAX_BATCHES) return "-b BATCHES in 1..64";
    if (o->warmup < 0) return "-x WARMUP >= 0";
    if (!sizes_given) {
        o->nsizes = 0;
        for (size_t s = o->min_bytes; s <= o->max_bytes && o->nsizes < MAX_SIZES; s *= o->factor) {
            o->sizes[o->nsizes++] = s;
            if (s > o->max_bytes / o->factor) break;
        }
        if (o->sizes[o->nsizes - 1] != o->max_bytes && o->nsizes < MAX_SIZES) o->sizes[o->nsizes++] = o->max_bytes;
    }
    if (!mif_given) {
        static const double d[] = {1, 32, 128, 512};
        memcpy(o->mif, d, sizeof d);
        o->nmif = 4;
    }
    if (!late_given) {
        o->late[0] = 25;
        o->late[1] = 75;
        o->nlate = 2;
    }
    if (o->nalgs == 0) {
        snprintf(o->algs[0], sizeof o->algs[0], "alltoall.pap");
        snprintf(o->algs[1], sizeof o->algs[1], "alltoall.pairwise");
        o->nalgs = 2;
    }
    if (o->nmif + o->nlate > MAX_MODES) return "too many modes";
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    struct options o;
    const char *bad = parse_options(argc, argv, &o);
    if (bad) {
        if (rank_ == 0 && *bad) fprintf(stderr, "plancoll-skew: %s\n", bad);
        return finish(*bad ? 2 : 0);
    }
    double wall0 = MPI_Wtime(), load0 = load_average();

    /* nodes, the t_block partner (the lowest rank on another node than rank 0), one host or several */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_rank, leader;
    MPI_Comm_rank(node, &node_rank);
    leader = node_rank == 0;
    bench_allreduce(&leader, &nodes_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int on_node0 = rank_ == 0; /* world rank 0 is node rank 0 of its node (key 0 keeps world order) */
    MPI_Request req;
    MPI_Ibcast(&on_node0, 1, MPI_INT, 0, node, &req);
    bench_wait(&req);
    int cand = on_node0 ? size_ : rank_, partner = 0;
    bench_allreduce(&cand, &partner, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (partner >= size_) partner = size_ > 1 ? 1 : 0;
    MPI_Comm_free(&node);
    char host[MPI_MAX_PROCESSOR_NAME] = "";
    int len;
    MPI_Get_processor_name(host, &len);
    unsigned long h = 5381, hmin, hmax;
    for (int i = 0; i < len; i++) h = h * 33 + (unsigned char)host[i];
    bench_allreduce(&h, &hmin, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
    bench_allreduce(&h, &hmax, 1, MPI_UNSIGNED_LONG, MPI_MAX, MPI_COMM_WORLD);
    one_clock = hmin == hmax;

    char config[64], lib[MPI_MAX_LIBRARY_VERSION_STRING];
    if (o.configuration) {
        snprintf(config, sizeof config, "%s", o.configuration);
    } else {
        const char *tls = getenv("UCX_TLS");
        bool tcp = nodes_ > 1 && tls && strstr(tls, "tcp");
        if (size_ % nodes_ == 0)
            snprintf(config, sizeof config, "%dn%dp%s", nodes_, size_ / nodes_, tcp ? "-tcp" : "");
        else
            snprintf(config, sizeof config, "%dn%dranks%s", nodes_, size_, tcp ? "-tcp" : "");
    }
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl) *nl = '\0';

    struct mode modes[MAX_MODES];
    int nmodes = 0;
    for (int i = 0; i < o.nmif; i++) {
        modes[nmodes] = (struct mode){.late = false, .mif = o.mif[i], .pct = 0};
        snprintf(modes[nmodes++].name, sizeof modes[0].name, "mif=%g", o.mif[i]);
    }
    for (int i = 0; i < o.nlate; i++) {
        modes[nmodes] = (struct mode){.late = true, .mif = o.late_mif, .pct = o.late[i]};
        snprintf(modes[nmodes++].name, sizeof modes[0].name, "late%d%%", o.late[i]);
    }
    if (rank_ == 0) {
        printf("# plancoll-skew: alltoall, P=%d nodes=%d configuration=%s; variants:", size_, nodes_, config);
        for (int a = 0; a < o.nalgs; a++) printf(" %s", o.algs[a]);
        printf(" mpi:MPI_Ialltoall+yield mpi:MPI_Alltoall(blocking, spins)\n# time excludes the delay computation; "
               "ratios: %s / each other variant (< 1: %s is faster)%s\n",
               o.algs[0], o.algs[0], o.check ? "; every call checked" : "");
        fflush(stdout);
    }
    struct row *rows = NULL;
    size_t nrows = 0, caprows = 0;
    long wrong = 0;
    for (int si = 0; si < o.nsizes; si++) run_size(&o, si, o.sizes[si], modes, nmodes, partner, &rows, &nrows, &caprows, &wrong);

    int code = wrong ? 1 : 0;
    if (rank_ == 0) {
        if (o.check) printf("# validation: %s (%ld wrong bytes)\n", wrong ? "FAILED" : "passed", wrong);
        printf("# total %.1f s\n", MPI_Wtime() - wall0);
        if (o.json_path && !write_json(&o, config, lib, load0, rows, nrows, MPI_Wtime() - wall0)) code = 1;
        if (o.json_path && code == 0) printf("# wrote %s\n", o.json_path);
    }
    free(rows);
    return finish(code);
}
