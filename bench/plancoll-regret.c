/*
 * plancoll-regret: how good are the planner's choices? For each signature it makes three plans of the same
 * call: PLANCOLL_ESTIMATE (the model alone), PLANCOLL_MEASURE (the model's best few timed) and
 * PLANCOLL_EXHAUSTIVE (every candidate timed: its choice is "best", the fastest candidate found by timing all
 * of them). The distinct choices are then timed side by side, alternating batch by batch, and
 *   regret = time(chosen) / time(fastest of them) - 1,
 * so noise in the exhaustive planning cannot make a choice look worse than the one it beat here. It also
 * times planning with a wisdom hit against planning the same choice forced (the plan's own set-up), and the
 * ESTIMATE planning itself.
 *
 *   mpiexec -n P plancoll-regret [--json FILE] [--config NAME] [--quick] [--only alltoall|alltoallv|allreduce]
 *
 * Signatures: alltoall and allreduce at 8 B .. 1 MiB per rank (powers of 8; alltoall: that many bytes sent by
 * each rank, split into P equal blocks), alltoallv in the four patterns of plancoll-bench (uniform, random
 * sizes in [0, max], sparse, hot destination) at a block maximum of 64 B, 1 KiB, 16 KiB and 128 KiB.
 * Protocol (docs/measurement.md): warm-up, batches of at least 20 ms (or --quick: 5 ms), yield-friendly
 * barriers, per-iteration maximum over ranks, median over 5 batches of the batch means.
 */
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

#define BATCHES 5
#define MAX_ITERS 4096
#define SPEC_LEN 128

enum coll { ALLTOALL, ALLTOALLV, ALLREDUCE };
static const char *const coll_names[] = {"alltoall", "alltoallv", "allreduce"};
enum pattern { UNIFORM, RANDOM, SPARSE, HOT };
static const char *const pattern_names[] = {"uniform", "random", "sparse", "hot"};

static int rank, nprocs;
static double batch_seconds = 0.020;

/* One signature's call and buffers. */
struct call {
    enum coll coll;
    enum pattern pattern;
    size_t size; /* alltoall: bytes per rank; allreduce: vector bytes; alltoallv: the largest block */
    char label[96];
    char *send, *recv;
    int block;                                        /* alltoall */
    int count;                                        /* allreduce: doubles */
    int *scounts, *sdispls, *rcounts, *rdispls;       /* alltoallv, in bytes */
};

static void call_init(struct call *c, enum coll coll, enum pattern pat, size_t size)
{
    memset(c, 0, sizeof *c);
    c->coll = coll;
    c->pattern = pat;
    c->size = size;
    size_t sbytes = 0, rbytes = 0;
    if (coll == ALLTOALL) {
        c->block = size / (size_t)nprocs > 0 ? (int)(size / (size_t)nprocs) : 1;
        sbytes = rbytes = (size_t)c->block * (size_t)nprocs;
        snprintf(c->label, sizeof c->label, "alltoall:%zu B/rank (%d B blocks)", size, c->block);
    } else if (coll == ALLREDUCE) {
        c->count = size / 8 > 0 ? (int)(size / 8) : 1;
        sbytes = rbytes = (size_t)c->count * 8;
        snprintf(c->label, sizeof c->label, "allreduce:double:sum:%zu B", sbytes);
    } else {
        int P = nprocs;
        c->scounts = malloc(sizeof(int) * 4 * (size_t)P);
        c->sdispls = c->scounts + P;
        c->rcounts = c->scounts + 2 * P;
        c->rdispls = c->scounts + 3 * P;
        uint64_t state = UINT64_C(0x706c616e636f6c6c) ^ size ^ ((uint64_t)pat << 40);
        int *m = malloc(sizeof(int) * (size_t)P * (size_t)P);
        for (int i = 0; i < P; i++)
            for (int j = 0; j < P; j++) {
                size_t v = 0;
                switch (pat) {
                case UNIFORM: v = size; break;
                case RANDOM: v = (size_t)(bench_random(&state) % (size + 1)); break;
                case SPARSE: v = (j != i && (j == (i + 1) % P || j == (i + P / 2) % P || j == (i - 1 + P) % P)) ? size : 0; break;
                case HOT: v = j == 0 ? size : size / 8; break;
                }
                m[i * P + j] = (int)v;
            }
        for (int j = 0; j < P; j++) {
            c->scounts[j] = m[rank * P + j];
            c->rcounts[j] = m[j * P + rank];
            c->sdispls[j] = (int)sbytes;
            c->rdispls[j] = (int)rbytes;
            sbytes += (size_t)c->scounts[j];
            rbytes += (size_t)c->rcounts[j];
        }
        free(m);
        snprintf(c->label, sizeof c->label, "alltoallv:%s:%zu B max block", pattern_names[pat], size);
    }
    c->send = malloc(sbytes ? sbytes : 8);
    c->recv = malloc(rbytes ? rbytes : 8);
    for (size_t i = 0; i < sbytes; i++) c->send[i] = (char)(i * 7 + (size_t)rank);
    if (coll == ALLREDUCE)
        for (int i = 0; i < c->count; i++) ((double *)c->send)[i] = (double)(rank + 1) * (1 + i % 5);
}

static void call_free(struct call *c)
{
    free(c->send);
    free(c->recv);
    free(c->scounts);
}

static int plan_call(const struct call *c, unsigned flags, plancoll_plan *p)
{
    switch (c->coll) {
    case ALLTOALL:
        return plancoll_plan_alltoall(c->send, c->block, MPI_BYTE, c->recv, c->block, MPI_BYTE, MPI_COMM_WORLD, flags, p);
    case ALLREDUCE:
        return plancoll_plan_allreduce(c->send, c->recv, c->count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, flags, p);
    case ALLTOALLV:
        return plancoll_plan_alltoallv(c->send, c->scounts, c->sdispls, MPI_BYTE, c->recv, c->rcounts, c->rdispls,
                                       MPI_BYTE, MPI_COMM_WORLD, flags, p);
    }
    return PLANCOLL_ERR_ARGUMENT;
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "plancoll-regret [rank %d]: %s: %s (%s)\n", rank, what, plancoll_strerror(rc), plancoll_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static plancoll_plan must_plan(const struct call *c, unsigned flags, char *spec, double *seconds)
{
    plancoll_plan p = NULL;
    bench_barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    int rc = plan_call(c, flags, &p);
    double t = MPI_Wtime() - t0, tmax;
    if (rc) die(c->label, rc);
    bench_allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (seconds) *seconds = tmax;
    if (spec && (rc = plancoll_plan_spec(p, spec, SPEC_LEN))) die("plancoll_plan_spec", rc);
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Times the n plans alternating batch by batch; us[i] = median over batches of the batch's mean of the
 * per-iteration maximum over ranks. */
static void time_plans(plancoll_plan *plans, int n, double *us)
{
    static double t[MAX_ITERS], tmax[MAX_ITERS];
    int iters[8];
    for (int i = 0; i < n; i++) {
        /* warm-up, and the batch length from it (rank 0's count, so every rank runs the same number) */
        double t0 = MPI_Wtime();
        for (int w = 0; w < 10; w++)
            if (plancoll_execute(plans[i])) die("execute", PLANCOLL_ERR_ARGUMENT);
        double per = (MPI_Wtime() - t0) / 10, permax;
        bench_allreduce(&per, &permax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int k = permax > 0 ? (int)(batch_seconds / permax) + 1 : MAX_ITERS;
        if (k < 3) k = 3;
        if (k > MAX_ITERS) k = MAX_ITERS;
        iters[i] = k;
    }
    double means[8][BATCHES];
    for (int b = 0; b < BATCHES; b++)
        for (int i = 0; i < n; i++) {
            bench_barrier(MPI_COMM_WORLD);
            for (int k = 0; k < iters[i]; k++) {
                double t0 = MPI_Wtime();
                plancoll_execute(plans[i]);
                t[k] = MPI_Wtime() - t0;
            }
            bench_allreduce(t, tmax, iters[i], MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            double sum = 0;
            for (int k = 0; k < iters[i]; k++) sum += tmax[k];
            means[i][b] = sum / iters[i] * 1e6;
        }
    for (int i = 0; i < n; i++) {
        qsort(means[i], BATCHES, sizeof(double), cmp_double);
        us[i] = means[i][BATCHES / 2];
    }
}

struct result {
    char signature[96];
    char best[SPEC_LEN], estimate[SPEC_LEN], measure[SPEC_LEN];
    double best_us, estimate_us, measure_us, estimate_regret, measure_regret;
    double estimate_plan_ms, measure_plan_ms, wisdom_plan_ms, forced_plan_ms;
};

static void set_forced(const char *spec)
{
    if (spec)
        setenv("PLANCOLL_ALGORITHM", spec, 1);
    else
        unsetenv("PLANCOLL_ALGORITHM");
}

static void run_signature(struct call *c, struct result *r)
{
    memset(r, 0, sizeof *r);
    snprintf(r->signature, sizeof r->signature, "%s", c->label);
    double secs;
    plancoll_forget_wisdom();
    plancoll_plan pe = must_plan(c, PLANCOLL_ESTIMATE, r->estimate, &secs);
    r->estimate_plan_ms = secs * 1e3;
    plancoll_plan px = must_plan(c, PLANCOLL_EXHAUSTIVE, r->best, NULL);
    plancoll_forget_wisdom();
    plancoll_plan pm = must_plan(c, PLANCOLL_MEASURE, r->measure, &secs);
    r->measure_plan_ms = secs * 1e3;
    /* planning again with MEASURE is a wisdom hit; the same choice forced costs only its own set-up */
    plancoll_plan ph = must_plan(c, PLANCOLL_MEASURE, NULL, &secs);
    r->wisdom_plan_ms = secs * 1e3;
    plancoll_destroy_plan(&ph);
    set_forced(r->measure);
    plancoll_plan pf = must_plan(c, PLANCOLL_ESTIMATE, NULL, &secs);
    r->forced_plan_ms = secs * 1e3;
    set_forced(NULL);
    plancoll_destroy_plan(&pf);

    /* time the distinct choices */
    plancoll_plan distinct[3];
    const char *specs[3];
    int n = 0, of_e = -1, of_m = -1, of_x = -1;
    plancoll_plan all[3] = {px, pe, pm};
    const char *all_specs[3] = {r->best, r->estimate, r->measure};
    int *slot[3] = {&of_x, &of_e, &of_m};
    for (int i = 0; i < 3; i++) {
        int found = -1;
        for (int j = 0; j < n; j++)
            if (strcmp(specs[j], all_specs[i]) == 0) found = j;
        if (found < 0) {
            found = n;
            distinct[n] = all[i];
            specs[n++] = all_specs[i];
        }
        *slot[i] = found;
    }
    double us[3];
    time_plans(distinct, n, us);
    int fastest = 0;
    for (int j = 1; j < n; j++)
        if (us[j] < us[fastest]) fastest = j;
    /* the exhaustive choice unless one of the others beat it here */
    char fastest_spec[SPEC_LEN];
    snprintf(fastest_spec, sizeof fastest_spec, "%s", specs[fastest]); /* specs[] may point at r->best */
    snprintf(r->best, sizeof r->best, "%s", fastest_spec);
    r->best_us = us[fastest];
    r->estimate_us = us[of_e];
    r->measure_us = us[of_m];
    r->estimate_regret = us[of_e] / us[fastest] - 1;
    r->measure_regret = us[of_m] / us[fastest] - 1;
    (void)of_x;
    plancoll_destroy_plan(&pe);
    plancoll_destroy_plan(&pm);
    plancoll_destroy_plan(&px);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static volatile sig_atomic_t final_code;
static void finalize_watchdog(int sig)
{
    (void)sig;
    _exit(final_code);
}

int main(int argc, char **argv)
{
    const char *json = NULL, *config = "unnamed", *only = NULL;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0)
            quick = true;
        else {
            fprintf(stderr, "usage: plancoll-regret [--json FILE] [--config NAME] [--quick] [--only COLLECTIVE]\n");
            return 2;
        }
    }
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (quick) batch_seconds = 0.005;

    struct call calls[64];
    int ncalls = 0;
    static const size_t sizes[] = {8, 64, 512, 4096, 32768, 262144, 1048576};
    static const size_t vsizes[] = {64, 1024, 16384, 131072};
    int nsizes = quick ? 4 : 7, nvsizes = quick ? 2 : 4;
    for (int c = 0; c < 3; c++) {
        if (only && strcmp(only, coll_names[c]) != 0) continue;
        if (c == ALLTOALLV) {
            for (int pt = 0; pt < 4; pt++)
                for (int s = 0; s < nvsizes; s++) call_init(&calls[ncalls++], ALLTOALLV, (enum pattern)pt, vsizes[s]);
        } else {
            for (int s = 0; s < nsizes; s++) call_init(&calls[ncalls++], (enum coll)c, UNIFORM, sizes[s]);
        }
    }

    /* calibration happens at the first unforced plan: do it before any timing, and report it */
    double t0 = MPI_Wtime();
    plancoll_plan warm;
    int rc = plan_call(&calls[0], PLANCOLL_ESTIMATE, &warm);
    if (rc) die("first plan", rc);
    double calib = MPI_Wtime() - t0;
    plancoll_destroy_plan(&warm);
    if (rank == 0) {
        printf("# plancoll-regret %s: P=%d, first plan (with calibration) %.2f s\n", config, nprocs, calib);
        printf("%-44s %-34s %9s %7s %7s  %-34s %-34s %7s %7s\n", "signature", "best", "best us", "E regr", "M regr",
               "estimate", "measure", "hit ms", "set ms");
        fflush(stdout);
    }

    struct result *res = calloc((size_t)ncalls, sizeof *res);
    for (int i = 0; i < ncalls; i++) {
        run_signature(&calls[i], &res[i]);
        if (rank == 0) {
            struct result *r = &res[i];
            printf("%-44s %-34s %9.2f %6.1f%% %6.1f%%  %-34s %-34s %7.3f %7.3f\n", r->signature, r->best, r->best_us,
                   100 * r->estimate_regret, 100 * r->measure_regret, r->estimate, r->measure, r->wisdom_plan_ms,
                   r->forced_plan_ms);
            fflush(stdout);
        }
    }

    int e_ok = 0, m_ok = 0, hit_ok = 0;
    for (int i = 0; i < ncalls; i++) {
        e_ok += res[i].estimate_regret <= 0.25;
        m_ok += res[i].measure_regret <= 0.10;
        hit_ok += res[i].wisdom_plan_ms - res[i].forced_plan_ms < 1.0;
    }
    if (rank == 0) {
        printf("# MEASURE regret <= 10%%: %d of %d (%.0f%%, target 90%%); ESTIMATE regret <= 25%%: %d of %d (%.0f%%, "
               "target 80%%); wisdom hit within 1 ms of the forced plan's set-up: %d of %d\n",
               m_ok, ncalls, 100.0 * m_ok / ncalls, e_ok, ncalls, 100.0 * e_ok / ncalls, hit_ok, ncalls);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                perror(json);
            } else {
                fprintf(f, "{\"configuration\":");
                json_string(f, config);
                fprintf(f, ",\"ranks\":%d,\"first_plan_seconds\":%.3f,\"results\":[\n", nprocs, calib);
                for (int i = 0; i < ncalls; i++) {
                    struct result *r = &res[i];
                    fprintf(f, "{\"signature\":");
                    json_string(f, r->signature);
                    fprintf(f, ",\"best\":");
                    json_string(f, r->best);
                    fprintf(f, ",\"estimate\":");
                    json_string(f, r->estimate);
                    fprintf(f, ",\"measure\":");
                    json_string(f, r->measure);
                    fprintf(f,
                            ",\"estimate_regret\":%.4f,\"measure_regret\":%.4f,\"best_us\":%.3f,\"estimate_us\":%.3f,"
                            "\"measure_us\":%.3f,\"estimate_plan_ms\":%.3f,\"measure_plan_ms\":%.3f,"
                            "\"wisdom_hit_plan_ms\":%.3f,\"forced_plan_ms\":%.3f}%s\n",
                            r->estimate_regret, r->measure_regret, r->best_us, r->estimate_us, r->measure_us,
                            r->estimate_plan_ms, r->measure_plan_ms, r->wisdom_plan_ms, r->forced_plan_ms,
                            i + 1 < ncalls ? "," : "");
                }
                fprintf(f, "],\"summary\":{\"signatures\":%d,\"measure_within_10pct\":%d,\"estimate_within_25pct\":%d,"
                           "\"wisdom_hit_within_1ms\":%d}}\n",
                        ncalls, m_ok, e_ok, hit_ok);
                fclose(f);
            }
        }
        fflush(stdout);
    }
    for (int i = 0; i < ncalls; i++) call_free(&calls[i]);
    free(res);
    /* MPICH 4.0.2 over UCX tcp can hang in MPI_Finalize (tests/mpi/testlib.h): the results are out already */
    signal(SIGALRM, finalize_watchdog);
    alarm(5);
    MPI_Finalize();
    return 0;
}
