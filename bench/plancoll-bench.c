/*
 * plancoll-bench: OSU-style latency benchmark of plancoll plans against MPI's own collectives.
 *
 *   mpiexec -n P plancoll-bench [alltoall|alltoallv|allreduce ...] [-m MIN:MAX] [-f FACTOR] [-i ITER]
 *                               [-x WARMUP] [-b BATCHES] [-c] [-v] [-a NAME|all] [--rigor R]
 *                               [--pattern uniform|random|sparse|hot] [--json FILE] [--config NAME]
 *   plancoll-bench --list
 *
 * For each size it times, side by side in one run: the plancoll plan (the planner's choice at --rigor, one
 * forced algorithm with -a NAME, or every algorithm of the collective with -a all), MPI's blocking call,
 * MPI's persistent collective (MPI_*_init, or MPIX_*_init on Open MPI 4.1; + MPI_Start, yield-waited; absent
 * where the MPI has neither), MPI's nonblocking collective
 * (yield-waited), and the memcpy of the bytes one rank must receive (the physical bound).
 *
 * Protocol (docs/measurement.md): warm-up, then batches that last at least 20 ms each; every batch
 * starts with a yield-friendly barrier; each iteration is timed on its own and reduced with MAX over ranks;
 * the variants alternate batch by batch (A B C D A B C D ...) so drift hits all of them equally; the
 * reported median is the median over batches of each batch's mean, avg/min/max are over all iterations.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
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

#define BATCH_SECONDS 0.020      /* docs/measurement.md: each timed batch lasts at least 20 ms (--batch-ms) */
#define MIN_WARMUP 10            /* docs/measurement.md: at least 10 executions of warm-up */
#define MIN_BATCHES 5            /* docs/measurement.md: median over 5 or more batches */
#define MAX_BATCHES 101
#define MAX_SAMPLES 262144       /* per batch (2 MiB of doubles): bounds the arrays reduced over ranks */
#define MEMCPY_SAMPLE_SECONDS 2e-6 /* a memcpy sample groups copies so the clock's overhead stays small */
#define MAX_VARIANTS 24
#define OVERLAP_TEST_INTERVAL 5e-6 /* --overlap: seconds of computation between two test calls */
#define RANDOM_SEED UINT64_C(0x706c616e636f6c6c) /* "plancoll": shared by all ranks, so counts agree */

enum collective { COLL_ALLTOALL, COLL_ALLTOALLV, COLL_ALLREDUCE, COLL_COUNT };
static const char *const collective_names[COLL_COUNT] = {"alltoall", "alltoallv", "allreduce"};

enum pattern { PATTERN_UNIFORM, PATTERN_RANDOM, PATTERN_SPARSE, PATTERN_HOT, PATTERN_COUNT };
static const char *const pattern_names[PATTERN_COUNT] = {"uniform", "random", "sparse", "hot"};

struct options {
    bool run[COLL_COUNT];
    int ncollectives;
    bool sizes_given;
    size_t min_bytes, max_bytes;
    size_t factor;
    int min_iters, warmup, batches;
    double batch_seconds; /* a timed batch lasts at least this long (BATCH_SECONDS; --batch-ms) */
    bool check, verbose, list;
    bool overlap;         /* --overlap: OSU's overlap method over the started forms (run_size_overlap) */
    bool progress_thread; /* --progress-thread: MPI_THREAD_MULTIPLE, and a plancoll column with the thread */
    bool overlap_plan;    /* --overlap-plan: a plancoll column planned with PLANCOLL_OVERLAP */
    bool heap; /* --heap: buffers from plancoll_malloc (node-shared), for single-copy plans */
    const char *algorithm; /* NULL: the planner's choice; "all": every registered algorithm */
    unsigned rigor;        /* --rigor: the planner flag of the unforced plan (default PLANCOLL_ESTIMATE) */
    const char *rigor_name;
    enum pattern pattern;
    const char *json_path;
    const char *configuration;
};

/* The buffers and counts of one collective at one size. Buffers hold the largest size of the sweep. */
struct problem {
    enum collective coll;
    size_t bytes;      /* the swept size: bytes per block (alltoall, alltoallv) or per vector (allreduce) */
    char *send, *recv;
    size_t capacity;   /* bytes of send and of recv */
    int count;         /* alltoall: block bytes; allreduce: doubles */
    int *sendcounts, *sdispls, *recvcounts, *rdispls; /* alltoallv, in bytes */
    int *matrix;       /* alltoallv: matrix[i * P + j] = bytes rank i sends to rank j */
    size_t recv_bytes; /* what this rank must receive: the memcpy bound copies this much */
    bool heap;         /* send and recv come from plancoll_malloc */
};

enum kind { KIND_PLANCOLL, KIND_BLOCKING, KIND_PERSISTENT, KIND_NONBLOCKING, KIND_MEMCPY };

struct variant {
    enum kind kind;
    char label[200];       /* "plancoll:" and a whole spec: specs run past 100 characters */
    plancoll_plan plan;      /* KIND_PLANCOLL */
    MPI_Request persistent;  /* KIND_PERSISTENT */
    int reps;                /* executions per timed sample: 1 except for memcpy */
    int samples;             /* timed samples per batch */
    bool failed_check;
    double batch_mean[MAX_BATCHES];
    double sum, min, max;
    long n;          /* timed samples */
    long iterations; /* timed executions (samples x reps) */
    double median;
};

/* One row of the results, kept on rank 0 for the JSON file. */
struct result {
    size_t bytes;
    char impl[200];
    double median_us, avg_us, min_us, max_us;
    long iterations;
    bool overlap; /* --overlap rows: the three medians and the overlap */
    double t_pure_us, t_cpu_us, t_total_us, overlap_pct;
};

struct bench {
    const struct options *opt;
    MPI_Comm comm;
    int rank, size, nodes;
    char configuration[64];
    char mpi_library[128];
    double *samples, *samples_max; /* MAX_SAMPLES each */
    long failures;                 /* validation failures seen by this rank */
    bool output_failed;            /* rank 0: the JSON file could not be written */
    double load_start;             /* the load average when the collective's sweep started */
    struct result *results;        /* rank 0 */
    size_t nresults, cap_results;
    char (*choices)[96];           /* rank 0: the planner's choice per size */
    size_t *choice_bytes;
    size_t nchoices, cap_choices;
};

static volatile sig_atomic_t exit_code;

static void finalize_watchdog(int sig)
{
    (void)sig;
    _exit(exit_code);
}

/* MPICH 4.0.2 with several cliques over TCP sometimes hangs in MPI_Finalize (an environment bug): once
 * everything is printed and written, give it 5 s and then leave with the code we already know. */
static int finish(int code)
{
    fflush(stdout);
    fflush(stderr);
    exit_code = code;
    signal(SIGALRM, finalize_watchdog);
    alarm(5);
    MPI_Finalize();
    return code;
}

static void die(const struct bench *b, const char *what, int code)
{
    fprintf(stderr, "[rank %d] plancoll-bench: %s\n", b ? b->rank : -1, what);
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code ? code : 1);
    _exit(code ? code : 1);
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) die(NULL, "out of memory", 1);
    return p;
}

/* ---- Waiting without holding a core: the loop plancoll uses, so the comparison is fair ---------------- */

/* ---- Deterministic data: counts and contents are functions of (source, destination, index) ----------- */

static unsigned char data_byte(int src, int dst, size_t index, int epoch)
{
    return (unsigned char)(src * 131 + dst * 31 + (int)(index % 251) * 7 + (int)(index >> 8) + epoch * 17 + 1);
}

/* Small integers in doubles: every partial sum is exact, so the result can be checked with ==. */
static double data_double(int rank, size_t index, int epoch)
{
    return (double)((rank + 1) * (int)(1 + (index + (size_t)epoch) % 5));
}

/* ---- Problems ----------------------------------------------------------------------------------------- */

static void alltoallv_matrix(const struct bench *b, enum pattern pat, size_t bytes, int *m)
{
    const int P = b->size;
    uint64_t state = RANDOM_SEED ^ (uint64_t)bytes;
    for (int i = 0; i < P; i++)
        for (int j = 0; j < P; j++) {
            size_t v = 0;
            switch (pat) {
            case PATTERN_UNIFORM: v = bytes; break;
            case PATTERN_RANDOM: v = (size_t)(bench_random(&state) % (bytes + 1)); break;
            case PATTERN_SPARSE:
                /* FFT-like: a few large blocks to neighbours and the opposite rank, nothing else */
                v = (j != i && (j == (i + 1) % P || j == (i + P / 2) % P || j == (i - 1 + P) % P)) ? bytes : 0;
                break;
            case PATTERN_HOT: v = j == 0 ? bytes : bytes / 8; break;
            case PATTERN_COUNT: break;
            }
            m[i * P + j] = (int)v;
        }
}

/* Sets counts for this size. Sizes were checked against INT_MAX when the sweep was built. */
static void problem_set_size(const struct bench *b, struct problem *pb, size_t bytes)
{
    const int P = b->size, r = b->rank;
    pb->bytes = bytes;
    switch (pb->coll) {
    case COLL_ALLTOALL:
        pb->count = (int)bytes;
        pb->recv_bytes = (size_t)P * bytes;
        break;
    case COLL_ALLREDUCE:
        pb->count = bytes / 8 > 0 ? (int)(bytes / 8) : 1;
        pb->recv_bytes = (size_t)pb->count * sizeof(double);
        break;
    case COLL_ALLTOALLV: {
        alltoallv_matrix(b, b->opt->pattern, bytes, pb->matrix);
        int soff = 0, roff = 0;
        for (int j = 0; j < P; j++) {
            pb->sendcounts[j] = pb->matrix[r * P + j];
            pb->recvcounts[j] = pb->matrix[j * P + r];
            pb->sdispls[j] = soff;
            pb->rdispls[j] = roff;
            soff += pb->sendcounts[j];
            roff += pb->recvcounts[j];
        }
        pb->recv_bytes = (size_t)roff;
        break;
    }
    case COLL_COUNT: break;
    }
}

static void problem_init(const struct bench *b, struct problem *pb, enum collective coll, size_t max_bytes)
{
    memset(pb, 0, sizeof *pb);
    pb->coll = coll;
    const size_t P = (size_t)b->size;
    pb->capacity = coll == COLL_ALLREDUCE ? (max_bytes / 8 > 0 ? max_bytes / 8 : 1) * sizeof(double) : P * max_bytes;
    if (b->opt->heap) {
        /* Every variant, MPI's too, runs on the same node-shared buffers: only plancoll can exploit them. */
        int rc1 = plancoll_malloc(pb->capacity, MPI_COMM_WORLD, (void **)&pb->send);
        int rc2 = plancoll_malloc(pb->capacity, MPI_COMM_WORLD, (void **)&pb->recv);
        if (rc1 || rc2) {
            fprintf(stderr, "plancoll-bench: plancoll_malloc failed: %s\n", plancoll_error_detail());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    } else {
        pb->send = xmalloc(pb->capacity);
        pb->recv = xmalloc(pb->capacity);
    }
    pb->heap = b->opt->heap;
    /* Touch every page now so no timed iteration pays a first-touch fault. */
    memset(pb->send, 0, pb->capacity);
    memset(pb->recv, 0, pb->capacity);
    if (coll == COLL_ALLTOALLV) {
        pb->sendcounts = xmalloc(P * sizeof(int));
        pb->sdispls = xmalloc(P * sizeof(int));
        pb->recvcounts = xmalloc(P * sizeof(int));
        pb->rdispls = xmalloc(P * sizeof(int));
        pb->matrix = xmalloc(P * P * sizeof(int));
    }
}

static void problem_free(struct problem *pb)
{
    if (pb->heap) {
        plancoll_free(pb->send);
        plancoll_free(pb->recv);
    } else {
        free(pb->send);
        free(pb->recv);
    }
    free(pb->sendcounts);
    free(pb->sdispls);
    free(pb->recvcounts);
    free(pb->rdispls);
    free(pb->matrix);
}

static void fill_send(const struct bench *b, const struct problem *pb, int epoch)
{
    const int P = b->size, r = b->rank;
    switch (pb->coll) {
    case COLL_ALLTOALL:
        for (int dst = 0; dst < P; dst++)
            for (size_t k = 0; k < pb->bytes; k++)
                pb->send[(size_t)dst * pb->bytes + k] = (char)data_byte(r, dst, k, epoch);
        break;
    case COLL_ALLTOALLV:
        for (int dst = 0; dst < P; dst++)
            for (size_t k = 0; k < (size_t)pb->sendcounts[dst]; k++)
                pb->send[(size_t)pb->sdispls[dst] + k] = (char)data_byte(r, dst, k, epoch);
        break;
    case COLL_ALLREDUCE: {
        double *v = (double *)(void *)pb->send;
        for (size_t i = 0; i < (size_t)pb->count; i++) v[i] = data_double(r, i, epoch);
        break;
    }
    case COLL_COUNT: break;
    }
}

/* Returns the number of wrong elements; reports the first few loudly. */
static long check_recv(const struct bench *b, const struct problem *pb, const char *label, int epoch)
{
    const int P = b->size, r = b->rank;
    long wrong = 0;
    char msg[256];
#define REPORT_WRONG(...)                                                                                     \
    do {                                                                                                      \
        if (wrong++ < 5) {                                                                                    \
            snprintf(msg, sizeof msg, __VA_ARGS__);                                                           \
            fprintf(stderr, "[rank %d] VALIDATION FAILED %s %s %zu B: %s\n", r, label, collective_names[pb->coll], \
                    pb->bytes, msg);                                                                          \
        }                                                                                                     \
    } while (0)
    switch (pb->coll) {
    case COLL_ALLTOALL:
    case COLL_ALLTOALLV:
        for (int src = 0; src < P; src++) {
            size_t n = pb->coll == COLL_ALLTOALL ? pb->bytes : (size_t)pb->recvcounts[src];
            size_t off = pb->coll == COLL_ALLTOALL ? (size_t)src * pb->bytes : (size_t)pb->rdispls[src];
            for (size_t k = 0; k < n; k++) {
                unsigned char want = data_byte(src, r, k, epoch), got = (unsigned char)pb->recv[off + k];
                if (got != want) REPORT_WRONG("from rank %d byte %zu: got %u, want %u", src, k, got, want);
            }
        }
        break;
    case COLL_ALLREDUCE: {
        const double *v = (const double *)(const void *)pb->recv;
        for (size_t i = 0; i < (size_t)pb->count; i++) {
            double want = 0;
            for (int q = 0; q < P; q++) want += data_double(q, i, epoch);
            if (v[i] != want) REPORT_WRONG("element %zu: got %g, want %g", i, v[i], want);
        }
        break;
    }
    case COLL_COUNT: break;
    }
#undef REPORT_WRONG
    return wrong;
}

/* ---- Variants ----------------------------------------------------------------------------------------- */

static int plan_problem(const struct bench *b, const struct problem *pb, plancoll_plan *plan)
{
    switch (pb->coll) {
    case COLL_ALLTOALL:
        return plancoll_plan_alltoall(pb->send, pb->count, MPI_BYTE, pb->recv, pb->count, MPI_BYTE, b->comm,
                                      b->opt->rigor, plan);
    case COLL_ALLTOALLV:
        return plancoll_plan_alltoallv(pb->send, pb->sendcounts, pb->sdispls, MPI_BYTE, pb->recv, pb->recvcounts,
                                       pb->rdispls, MPI_BYTE, b->comm, b->opt->rigor, plan);
    case COLL_ALLREDUCE:
        return plancoll_plan_allreduce(pb->send, pb->recv, pb->count, MPI_DOUBLE, MPI_SUM, b->comm, b->opt->rigor,
                                       plan);
    case COLL_COUNT: break;
    }
    return PLANCOLL_ERR_ARGUMENT;
}

/* Plans with PLANCOLL_ALGORITHM set to name (NULL: as the environment has it), restoring it afterwards. */
static int plan_with_algorithm(const struct bench *b, const struct problem *pb, const char *name, plancoll_plan *plan)
{
    const char *old = getenv("PLANCOLL_ALGORITHM");
    char *saved = old ? strdup(old) : NULL;
    if (name) setenv("PLANCOLL_ALGORITHM", name, 1);
    int rc = plan_problem(b, pb, plan);
    if (name) {
        if (saved)
            setenv("PLANCOLL_ALGORITHM", saved, 1);
        else
            unsetenv("PLANCOLL_ALGORITHM");
    }
    free(saved);
    return rc;
}

static void start_nonblocking(const struct bench *b, const struct problem *pb, MPI_Request *req)
{
    switch (pb->coll) {
    case COLL_ALLTOALL:
        MPI_Ialltoall(pb->send, pb->count, MPI_BYTE, pb->recv, pb->count, MPI_BYTE, b->comm, req);
        break;
    case COLL_ALLTOALLV:
        MPI_Ialltoallv(pb->send, pb->sendcounts, pb->sdispls, MPI_BYTE, pb->recv, pb->recvcounts, pb->rdispls, MPI_BYTE,
                       b->comm, req);
        break;
    case COLL_ALLREDUCE: MPI_Iallreduce(pb->send, pb->recv, pb->count, MPI_DOUBLE, MPI_SUM, b->comm, req); break;
    case COLL_COUNT: break;
    }
}

/* MPI's persistent collectives under the name the MPI gives them (probed at configure time): MPI-4's
 * MPI_*_init, or Open MPI 4.1's MPIX_*_init (mpi-ext.h, the pcollreq extension), still reported as
 * "mpi:persistent"; an MPI with neither has no "mpi:persistent" column at all. */
#if PC_HAVE_MPI_PERSISTENT_COLL
#define HAVE_PERSISTENT 1
#define PERSISTENT_INIT(NAME) MPI_##NAME##_init
#elif PC_HAVE_MPIX_PERSISTENT_COLL
#include <mpi-ext.h>
#define HAVE_PERSISTENT 1
#define PERSISTENT_INIT(NAME) MPIX_##NAME##_init
#else
#define HAVE_PERSISTENT 0
#endif

#if HAVE_PERSISTENT
static void init_persistent(const struct bench *b, const struct problem *pb, MPI_Request *req)
{
    switch (pb->coll) {
    case COLL_ALLTOALL:
        PERSISTENT_INIT(Alltoall)(pb->send, pb->count, MPI_BYTE, pb->recv, pb->count, MPI_BYTE, b->comm,
                                  MPI_INFO_NULL, req);
        break;
    case COLL_ALLTOALLV:
        PERSISTENT_INIT(Alltoallv)(pb->send, pb->sendcounts, pb->sdispls, MPI_BYTE, pb->recv, pb->recvcounts,
                                   pb->rdispls, MPI_BYTE, b->comm, MPI_INFO_NULL, req);
        break;
    case COLL_ALLREDUCE:
        PERSISTENT_INIT(Allreduce)(pb->send, pb->recv, pb->count, MPI_DOUBLE, MPI_SUM, b->comm, MPI_INFO_NULL, req);
        break;
    case COLL_COUNT: break;
    }
}
#endif

static void run_blocking(const struct bench *b, const struct problem *pb)
{
    switch (pb->coll) {
    case COLL_ALLTOALL: MPI_Alltoall(pb->send, pb->count, MPI_BYTE, pb->recv, pb->count, MPI_BYTE, b->comm); break;
    case COLL_ALLTOALLV:
        MPI_Alltoallv(pb->send, pb->sendcounts, pb->sdispls, MPI_BYTE, pb->recv, pb->recvcounts, pb->rdispls, MPI_BYTE,
                      b->comm);
        break;
    case COLL_ALLREDUCE: MPI_Allreduce(pb->send, pb->recv, pb->count, MPI_DOUBLE, MPI_SUM, b->comm); break;
    case COLL_COUNT: break;
    }
}

/* One execution of a variant. Allocation-free: this runs inside the timed loops. */
static void execute_variant(const struct bench *b, struct variant *v, const struct problem *pb)
{
    switch (v->kind) {
    case KIND_PLANCOLL: {
        int rc = plancoll_execute(v->plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll_execute (%s, %zu B): %s: %s\n", b->rank, v->label, pb->bytes,
                    plancoll_strerror(rc), plancoll_error_detail());
            die(b, "execution failed", 1);
        }
        break;
    }
    case KIND_BLOCKING: run_blocking(b, pb); break;
    case KIND_PERSISTENT:
        MPI_Start(&v->persistent);
        bench_wait(&v->persistent);
        break;
    case KIND_NONBLOCKING: {
        MPI_Request req;
        start_nonblocking(b, pb, &req);
        bench_wait(&req);
        break;
    }
    case KIND_MEMCPY:
        memcpy(pb->recv, pb->send, pb->recv_bytes);
        /* keeps the compiler from merging or dropping repeated identical copies */
        __asm__ __volatile__("" : : "r"(pb->recv) : "memory");
        break;
    }
}

static void variant_reset_stats(struct variant *v)
{
    v->sum = 0;
    v->n = 0;
    v->iterations = 0;
    v->min = 1e300;
    v->max = 0;
    v->failed_check = false;
}

static void add_variant(struct variant *vs, int *n, enum kind kind, const char *label)
{
    if (*n >= MAX_VARIANTS) die(NULL, "too many variants", 1);
    struct variant *v = &vs[(*n)++];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->persistent = MPI_REQUEST_NULL;
    snprintf(v->label, sizeof v->label, "%s", label);
    variant_reset_stats(v);
}

/* ---- Measurement -------------------------------------------------------------------------------------- */

/* Warm-up, then choose how many samples make a batch of at least the batch time (--batch-ms). Every rank must execute a
 * collective the same number of times, so the per-iteration estimate is agreed with MAX before use. */
static void calibrate(struct bench *b, struct variant *v, const struct problem *pb)
{
    const int W = b->opt->warmup;
    for (int i = 0; i < W; i++) execute_variant(b, v, pb);
    bench_barrier(b->comm);
    double t = 0;
    if (v->kind == KIND_MEMCPY) {
        /* local: repeat until the clock sees a meaningful interval (the count may differ per rank) */
        long reps = 1;
        for (;;) {
            double t0 = MPI_Wtime();
            for (long i = 0; i < reps; i++) execute_variant(b, v, pb);
            double dt = MPI_Wtime() - t0;
            if (dt >= 1e-3 || reps >= (1L << 24)) {
                t = dt / (double)reps;
                break;
            }
            reps *= 2;
        }
    } else {
        double t0 = MPI_Wtime();
        for (int i = 0; i < W; i++) execute_variant(b, v, pb);
        t = (MPI_Wtime() - t0) / W;
    }
    double tmax = 0;
    bench_allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, b->comm);
    if (tmax < 1e-9) tmax = 1e-9;
    v->reps = 1;
    if (v->kind == KIND_MEMCPY && tmax < MEMCPY_SAMPLE_SECONDS) v->reps = (int)(MEMCPY_SAMPLE_SECONDS / tmax) + 1;
    double per_sample = tmax * v->reps;
    double want = b->opt->batch_seconds / per_sample + 1;
    long samples = want > MAX_SAMPLES ? MAX_SAMPLES : (long)want;
    if (samples < b->opt->min_iters) samples = b->opt->min_iters;
    if (samples > MAX_SAMPLES) samples = MAX_SAMPLES;
    v->samples = (int)samples;
}

static void time_batch(struct bench *b, struct variant *v, const struct problem *pb, int batch)
{
    bench_barrier(b->comm);
    for (int s = 0; s < v->samples; s++) {
        double t0 = MPI_Wtime();
        for (int k = 0; k < v->reps; k++) execute_variant(b, v, pb);
        b->samples[s] = (MPI_Wtime() - t0) / v->reps;
    }
    /* the slowest rank defines each iteration's time */
    bench_allreduce(b->samples, b->samples_max, v->samples, MPI_DOUBLE, MPI_MAX, b->comm);
    double sum = 0;
    for (int s = 0; s < v->samples; s++) {
        double t = b->samples_max[s];
        sum += t;
        if (t < v->min) v->min = t;
        if (t > v->max) v->max = t;
    }
    v->sum += sum;
    v->n += v->samples;
    v->iterations += (long)v->samples * v->reps;
    v->batch_mean[batch] = sum / v->samples;
    /* The machine is shared, so the calibration can be off by far: steer the next batch back to its target
     * duration. Every rank computes this from the same reduced data, so the counts stay equal. */
    const double batch_s = b->opt->batch_seconds;
    double elapsed = sum * v->reps, target = 0;
    if (elapsed < batch_s)
        target = 1.25 * batch_s;
    else if (elapsed > 4 * batch_s)
        target = 2 * batch_s;
    if (target > 0) {
        double want = v->samples * target / (elapsed > 0 ? elapsed : 1e-9) + 1;
        long samples = want > MAX_SAMPLES ? MAX_SAMPLES : (long)want;
        if (samples < b->opt->min_iters) samples = b->opt->min_iters;
        v->samples = (int)samples;
    }
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *values, int n)
{
    qsort(values, (size_t)n, sizeof *values, compare_doubles);
    return n % 2 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

/* Two executions with different data: a plan that returns the previous execution's data fails the second. */
static void validate_variant(struct bench *b, struct variant *v, struct problem *pb)
{
    if (v->kind == KIND_MEMCPY) return; /* a bound, not an implementation of the collective */
    long wrong = 0;
    for (int epoch = 1; epoch <= 2; epoch++) {
        fill_send(b, pb, epoch + (int)(pb->bytes % 7));
        memset(pb->recv, 0xA5, pb->capacity);
        bench_barrier(b->comm);
        execute_variant(b, v, pb);
        wrong += check_recv(b, pb, v->label, epoch + (int)(pb->bytes % 7));
    }
    long total = 0;
    bench_allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, b->comm);
    b->failures += wrong;
    v->failed_check = total > 0;
    if (total > 0 && b->rank == 0)
        fprintf(stderr, "plancoll-bench: VALIDATION FAILED: %s %s %zu B: %ld wrong elements over all ranks\n",
                v->label, collective_names[pb->coll], pb->bytes, total);
}

/* ---- Results ------------------------------------------------------------------------------------------ */

static void record_result(struct bench *b, size_t bytes, const struct variant *v)
{
    if (b->rank != 0) return;
    if (b->nresults == b->cap_results) {
        b->cap_results = b->cap_results ? 2 * b->cap_results : 64;
        b->results = realloc(b->results, b->cap_results * sizeof *b->results);
        if (!b->results) die(b, "out of memory", 1);
    }
    struct result *r = &b->results[b->nresults++];
    *r = (struct result){0}; /* realloc'd memory: an --overlap flag left over from it wrote rows as overlap rows */
    r->bytes = bytes;
    snprintf(r->impl, sizeof r->impl, "%s", v->label);
    r->median_us = v->median * 1e6;
    r->avg_us = v->sum / (double)v->n * 1e6;
    r->min_us = v->min * 1e6;
    r->max_us = v->max * 1e6;
    r->iterations = v->iterations;
}

static void record_choice(struct bench *b, size_t bytes, const char *algorithm)
{
    if (b->rank != 0) return;
    if (b->nchoices == b->cap_choices) {
        b->cap_choices = b->cap_choices ? 2 * b->cap_choices : 32;
        b->choices = realloc(b->choices, b->cap_choices * sizeof *b->choices);
        b->choice_bytes = realloc(b->choice_bytes, b->cap_choices * sizeof *b->choice_bytes);
        if (!b->choices || !b->choice_bytes) die(b, "out of memory", 1);
    }
    snprintf(b->choices[b->nchoices], sizeof b->choices[0], "%s", algorithm);
    b->choice_bytes[b->nchoices++] = bytes;
}

static void print_ratio(double num, double den)
{
    if (den > 0)
        printf(" %9.2f", num / den);
    else
        printf(" %9s", "-");
}

static void print_size_rows(const struct variant *vs, int nv, size_t bytes)
{
    double best_mpi = 0, blocking = 0, bound = 0;
    for (int i = 0; i < nv; i++) {
        const struct variant *v = &vs[i];
        if (v->n == 0) continue;
        if (v->kind == KIND_BLOCKING) blocking = v->median;
        if (v->kind == KIND_MEMCPY) bound = v->median;
        if ((v->kind == KIND_BLOCKING || v->kind == KIND_PERSISTENT || v->kind == KIND_NONBLOCKING) &&
            (best_mpi == 0 || v->median < best_mpi))
            best_mpi = v->median;
    }
    for (int i = 0; i < nv; i++) {
        const struct variant *v = &vs[i];
        if (v->n == 0) {
            printf("%10zu  %-38s %s\n", bytes, v->label, "not applicable");
            continue;
        }
        printf("%10zu  %-38s %10.2f %10.2f %10.2f %10.2f %9ld", bytes, v->label, v->median * 1e6,
               v->sum / (double)v->n * 1e6, v->min * 1e6, v->max * 1e6, v->iterations);
        print_ratio(v->median, best_mpi);
        print_ratio(v->median, blocking);
        print_ratio(v->median, bound);
        printf("%s\n", v->failed_check ? "  VALIDATION FAILED" : "");
    }
    printf("\n");
    fflush(stdout);
}

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

/* The 1-minute load average (Linux), or -1: the machine is shared, and a result taken under load says so. */
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

static bool write_json(const struct bench *b, enum collective coll, const char *path)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "plancoll-bench: cannot write %s: %s\n", path, strerror(errno));
        return false;
    }
    const struct options *o = b->opt;
    fprintf(f, "{\n  \"collective\": \"%s\",\n  \"ranks\": %d,\n  \"nodes\": %d,\n  \"configuration\": ",
            collective_names[coll], b->size, b->nodes);
    json_string(f, b->configuration);
    if (coll == COLL_ALLTOALLV) fprintf(f, ",\n  \"pattern\": \"%s\"", pattern_names[o->pattern]);
    fprintf(f, ",\n  \"plancoll_version\": \"%s\",\n  \"mpi_library\": ", plancoll_version(NULL, NULL, NULL));
    json_string(f, b->mpi_library);
    fprintf(f, ",\n  \"protocol\": {\"warmup\": %d, \"batches\": %d, \"min_batch_ms\": %g, \"min_iterations\": %d, "
               "\"statistic\": \"median over batches of the batch mean of per-iteration max over ranks\"}",
            o->warmup, o->batches, o->batch_seconds * 1e3, o->min_iters);
    fprintf(f, ",\n  \"load_average\": {\"start\": %.2f, \"end\": %.2f}", b->load_start, load_average());
    fprintf(f, ",\n  \"planner_rigor\": \"%s\"", o->rigor_name);
    if (o->overlap)
        fprintf(f, ",\n  \"overlap\": {\"method\": \"OSU: t_pure = start+wait; t_cpu = compute loop calibrated to t_pure; "
                   "t_total = start, compute with a test every %g us, wait; overlap_pct = 100 (1 - (t_total - t_cpu) / "
                   "t_pure) clamped to [0, 100]; each a median of batch means of per-iteration max over ranks\", "
                   "\"plancoll_flags\": \"%s | PLANCOLL_NONBLOCKING\", \"thread_level\": \"%s\"}",
                OVERLAP_TEST_INTERVAL * 1e6, o->rigor_name,
                o->progress_thread ? "MPI_THREAD_MULTIPLE" : "MPI_THREAD_SINGLE");
    fprintf(f, ",\n  \"planner_choice\": [");
    for (size_t i = 0; i < b->nchoices; i++) {
        fprintf(f, "%s\n    {\"bytes\": %zu, \"algorithm\": ", i ? "," : "", b->choice_bytes[i]);
        json_string(f, b->choices[i]);
        fputc('}', f);
    }
    fprintf(f, "\n  ],\n  \"results\": [");
    for (size_t i = 0; i < b->nresults; i++) {
        const struct result *r = &b->results[i];
        fprintf(f, "%s\n    {\"bytes\": %zu, \"impl\": ", i ? "," : "", r->bytes);
        json_string(f, r->impl);
        if (r->overlap)
            fprintf(f, ", \"t_pure_us\": %.4f, \"t_cpu_us\": %.4f, \"t_total_us\": %.4f, \"overlap_pct\": %.2f, "
                       "\"iterations\": %ld}",
                    r->t_pure_us, r->t_cpu_us, r->t_total_us, r->overlap_pct, r->iterations);
        else
            fprintf(f, ", \"median_us\": %.4f, \"avg_us\": %.4f, \"min_us\": %.4f, \"max_us\": %.4f, \"iterations\": %ld}",
                    r->median_us, r->avg_us, r->min_us, r->max_us, r->iterations);
    }
    fprintf(f, "\n  ]\n}\n");
    if (fclose(f) != 0) {
        fprintf(stderr, "plancoll-bench: error writing %s\n", path);
        return false;
    }
    return true;
}

/* ---- One collective over the sweep ------------------------------------------------------------------- */

static size_t build_sweep(const struct options *o, size_t min_bytes, size_t max_bytes, size_t *sizes, size_t max)
{
    size_t n = 0;
    for (size_t s = min_bytes; s <= max_bytes && n < max; s *= o->factor) {
        sizes[n++] = s;
        if (s > max_bytes / o->factor) break;
    }
    if (n > 0 && sizes[n - 1] != max_bytes && n < max) sizes[n++] = max_bytes; /* always end at MAX */
    return n;
}

static int algorithms_of(enum collective coll, const char **names, int max)
{
    int n = 0;
    const char *c;
    for (int i = 0; n < max; i++) {
        const char *name = plancoll_algorithm_name(i, &c);
        if (!name) break;
        if (c && strcmp(c, collective_names[coll]) == 0) names[n++] = name;
    }
    return n;
}

/* The collective of an -a entry ("alltoall.mpml:leaders=2" names alltoall.mpml), or -1 when it names nothing. */
static int spec_collective(const char *spec)
{
    const char *coll = NULL, *name;
    size_t len = strcspn(spec, ":");
    for (int i = 0; (name = plancoll_algorithm_name(i, &coll)) != NULL; i++)
        if (strncmp(name, spec, len) == 0 && name[len] == '\0')
            for (int k = 0; k < COLL_COUNT; k++)
                if (coll && strcmp(coll, collective_names[k]) == 0) return k;
    return -1;
}

/* Builds the plancoll variants for this size: forced ones get their plan here; NULL plan = inapplicable. */
static void make_plancoll_variants(struct bench *b, struct problem *pb, struct variant *vs, int *nv,
                                   const char *estimate_choice)
{
    const struct options *o = b->opt;
    const char *names[MAX_VARIANTS];
    int nnames = 0;
    if (o->algorithm && strcmp(o->algorithm, "all") == 0)
        nnames = algorithms_of(pb->coll, names, MAX_VARIANTS - 5);
    else if (o->algorithm) {
        /* a comma-separated list: each entry is timed as its own variant (alternating, like the references) */
        static char specs[1024];
        snprintf(specs, sizeof specs, "%s", o->algorithm);
        for (char *save = NULL, *spec = strtok_r(specs, ",", &save); spec && nnames < MAX_VARIANTS - 5;
             spec = strtok_r(NULL, ",", &save))
            if (strcmp(spec, "planner") == 0 || spec_collective(spec) == (int)pb->coll) names[nnames++] = spec;
    }
    if (nnames == 0) {
        /* the planner's own choice: planned again so the timed plan is exactly what a user gets */
        char label[200];
        snprintf(label, sizeof label, "plancoll:%.180s", estimate_choice);
        add_variant(vs, nv, KIND_PLANCOLL, label);
        int rc = plan_with_algorithm(b, pb, NULL, &vs[*nv - 1].plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll plan (%zu B): %s: %s\n", b->rank, pb->bytes, plancoll_strerror(rc),
                    plancoll_error_detail());
            die(b, "planning failed", 1);
        }
        return;
    }
    for (int i = 0; i < nnames; i++) {
        /* "planner" in the list: the planner's own plan, timed beside the forced ones and labelled with its whole
         * spec (parameters included), so that a forced parameter can be compared with what the planner picks */
        const bool planner = strcmp(names[i], "planner") == 0;
        plancoll_plan plan = NULL;
        int rc = plan_with_algorithm(b, pb, planner ? NULL : names[i], &plan);
        char label[200], spec[160] = "?";
        if (planner && rc == PLANCOLL_SUCCESS && plancoll_plan_spec(plan, spec, sizeof spec) != PLANCOLL_SUCCESS)
            snprintf(spec, sizeof spec, "?");
        if (planner) snprintf(label, sizeof label, "plancoll:planner=%.150s", spec);
        else snprintf(label, sizeof label, "plancoll:%.180s", names[i]);
        add_variant(vs, nv, KIND_PLANCOLL, label);
        vs[*nv - 1].plan = plan;
        if (rc == PLANCOLL_ERR_INAPPLICABLE) {
            vs[*nv - 1].plan = NULL; /* same answer on every rank: plan creation agrees on errors */
            continue;
        }
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll plan %s (%zu B): %s: %s\n", b->rank, names[i], pb->bytes,
                    plancoll_strerror(rc), plancoll_error_detail());
            die(b, "planning failed", 1);
        }
    }
}

static void run_size(struct bench *b, struct problem *pb, size_t bytes)
{
    const struct options *o = b->opt;
    problem_set_size(b, pb, bytes);
    fill_send(b, pb, 0);

    /* The planner's choice (at --rigor), reported even when algorithms are forced. */
    plancoll_plan chosen = NULL;
    int rc = plan_with_algorithm(b, pb, NULL, &chosen);
    if (rc != PLANCOLL_SUCCESS) {
        fprintf(stderr, "[rank %d] plancoll plan (%zu B): %s: %s\n", b->rank, bytes, plancoll_strerror(rc),
                plancoll_error_detail());
        die(b, "planning failed", 1);
    }
    char choice[96];
    snprintf(choice, sizeof choice, "%s", plancoll_plan_algorithm(chosen));
    record_choice(b, bytes, choice);
    if (b->rank == 0 && o->verbose) {
        printf("# plan chosen by the planner (%s) for %zu B:\n", o->rigor_name, bytes);
        plancoll_fprint_plan(chosen, stdout);
        fflush(stdout);
    }
    if (b->rank == 0 && o->algorithm) printf("# %zu B: the planner (%s) chooses %s\n", bytes, o->rigor_name, choice);
    plancoll_destroy_plan(&chosen);

    struct variant vs[MAX_VARIANTS];
    int nv = 0;
    make_plancoll_variants(b, pb, vs, &nv, choice);
    add_variant(vs, &nv, KIND_BLOCKING, "mpi:blocking");
#if HAVE_PERSISTENT
    add_variant(vs, &nv, KIND_PERSISTENT, "mpi:persistent");
    init_persistent(b, pb, &vs[nv - 1].persistent);
#endif
    add_variant(vs, &nv, KIND_NONBLOCKING, "mpi:nonblocking");
    add_variant(vs, &nv, KIND_MEMCPY, "bound:memcpy");

    bool active[MAX_VARIANTS];
    for (int i = 0; i < nv; i++) active[i] = !(vs[i].kind == KIND_PLANCOLL && vs[i].plan == NULL);

    if (o->check)
        for (int i = 0; i < nv; i++)
            if (active[i]) validate_variant(b, &vs[i], pb);
    fill_send(b, pb, 0);

    for (int i = 0; i < nv; i++)
        if (active[i]) calibrate(b, &vs[i], pb);
    /* Alternate: batch k of every variant runs before batch k+1 of any, so drift hits all alike. */
    for (int batch = 0; batch < o->batches; batch++)
        for (int i = 0; i < nv; i++)
            if (active[i]) time_batch(b, &vs[i], pb, batch);

    for (int i = 0; i < nv; i++) {
        if (!active[i]) continue;
        vs[i].median = median_of(vs[i].batch_mean, o->batches);
        record_result(b, bytes, &vs[i]);
    }
    if (b->rank == 0) print_size_rows(vs, nv, bytes);

    for (int i = 0; i < nv; i++) {
        if (vs[i].plan) plancoll_destroy_plan(&vs[i].plan);
        if (vs[i].persistent != MPI_REQUEST_NULL) MPI_Request_free(&vs[i].persistent);
    }
}

/* ---- Overlap (--overlap): OSU's method (osu_ialltoall, osu_iallreduce) -------------------------------
 * For each implementation that can be started (plancoll's started plan, planned with PLANCOLL_NONBLOCKING; the
 * same with the progress thread under --progress-thread; MPI's nonblocking call; MPI's persistent request):
 *   t_pure   start + wait alone;
 *   t_cpu    a compute loop calibrated to last t_pure, alone;
 *   t_total  start, the compute loop with a test call between chunks of OVERLAP_TEST_INTERVAL, wait;
 *   overlap  100 x (1 - (t_total - t_cpu) / t_pure), clamped to [0, 100].
 * Each of the three is timed by the protocol of the latency runs (per-iteration max over ranks, batches of >= 20 ms,
 * median of batch means): the t_pure batches of every implementation alternate first, then (each loop calibrated
 * to its implementation's median t_pure) the t_cpu and t_total batches of every implementation alternate. */

#define MAX_OVERLAP_IMPLS 5

enum overlap_phase { PHASE_PURE, PHASE_CPU, PHASE_TOTAL, PHASE_COUNT };

struct overlap_impl {
    enum kind kind;          /* KIND_PLANCOLL, KIND_NONBLOCKING or KIND_PERSISTENT */
    char label[96];
    plancoll_plan plan;
    MPI_Request request;     /* the nonblocking call's, or the persistent request */
    long chunks;             /* compute chunks of chunk_units, calibrated to t_pure */
    struct variant phase[PHASE_COUNT]; /* the timing statistics of each phase (their kind is unused) */
};

static double compute_units_per_second;
static volatile double compute_sink;

static void compute_units(long units)
{
    double acc = compute_sink;
    for (long i = 0; i < units; i++) acc = acc * 0.9999999 + 1.0;
    compute_sink = acc;
}

/* Units of compute_units per second on this rank, from a run of at least 50 ms. */
static void calibrate_compute(void)
{
    long units = 1 << 16;
    for (;;) {
        double t0 = MPI_Wtime();
        compute_units(units);
        double dt = MPI_Wtime() - t0;
        if (dt >= 0.05) {
            compute_units_per_second = (double)units / dt;
            return;
        }
        units *= 2;
    }
}

static long chunk_units(void)
{
    long u = (long)(OVERLAP_TEST_INTERVAL * compute_units_per_second);
    return u > 0 ? u : 1;
}

static void overlap_start(const struct bench *b, struct overlap_impl *im, const struct problem *pb)
{
    switch (im->kind) {
    case KIND_PLANCOLL: {
        int rc = plancoll_start(im->plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll_start (%s): %s: %s\n", b->rank, im->label, plancoll_strerror(rc),
                    plancoll_error_detail());
            die(b, "start failed", 1);
        }
        break;
    }
    case KIND_NONBLOCKING: start_nonblocking(b, pb, &im->request); break;
    case KIND_PERSISTENT: MPI_Start(&im->request); break;
    default: break;
    }
}

/* One test call; returns whether the operation is complete. */
static bool overlap_test(const struct bench *b, struct overlap_impl *im)
{
    int done = 0;
    if (im->kind == KIND_PLANCOLL) {
        int rc = plancoll_test(im->plan, &done);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll_test (%s): %s: %s\n", b->rank, im->label, plancoll_strerror(rc),
                    plancoll_error_detail());
            die(b, "test failed", 1);
        }
    } else {
        MPI_Test(&im->request, &done, MPI_STATUS_IGNORE);
    }
    return done != 0;
}

static void overlap_wait(const struct bench *b, struct overlap_impl *im)
{
    if (im->kind == KIND_PLANCOLL) {
        int rc = plancoll_wait(im->plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] plancoll_wait (%s): %s: %s\n", b->rank, im->label, plancoll_strerror(rc),
                    plancoll_error_detail());
            die(b, "wait failed", 1);
        }
    } else {
        bench_wait(&im->request);
    }
}

/* One iteration of a phase. Allocation-free, as the latency loops. */
static void overlap_once(const struct bench *b, struct overlap_impl *im, enum overlap_phase phase,
                         const struct problem *pb)
{
    const long chunk = chunk_units();
    switch (phase) {
    case PHASE_PURE:
        overlap_start(b, im, pb);
        overlap_wait(b, im);
        break;
    case PHASE_CPU:
        for (long c = 0; c < im->chunks; c++) compute_units(chunk);
        break;
    case PHASE_TOTAL: {
        overlap_start(b, im, pb);
        bool done = false;
        for (long c = 0; c < im->chunks; c++) {
            compute_units(chunk);
            if (!done) done = overlap_test(b, im);
        }
        overlap_wait(b, im);
        break;
    }
    case PHASE_COUNT: break;
    }
}

/* Warm-up and batch length of a phase, as calibrate() does: the count is agreed with MAX over ranks. */
static void overlap_calibrate(struct bench *b, struct overlap_impl *im, enum overlap_phase phase,
                              const struct problem *pb)
{
    const int W = b->opt->warmup;
    for (int i = 0; i < W; i++) overlap_once(b, im, phase, pb);
    bench_barrier(b->comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < W; i++) overlap_once(b, im, phase, pb);
    double t = (MPI_Wtime() - t0) / W, tmax = 0;
    bench_allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, b->comm);
    if (tmax < 1e-9) tmax = 1e-9;
    struct variant *v = &im->phase[phase];
    double want = b->opt->batch_seconds / tmax + 1;
    long samples = want > MAX_SAMPLES ? MAX_SAMPLES : (long)want;
    if (samples < b->opt->min_iters) samples = b->opt->min_iters;
    v->reps = 1;
    v->samples = (int)samples;
}

/* time_batch for a phase: per-iteration times, MAX over ranks, the batch mean, the next batch steered. */
static void overlap_batch(struct bench *b, struct overlap_impl *im, enum overlap_phase phase,
                          const struct problem *pb, int batch)
{
    struct variant *v = &im->phase[phase];
    bench_barrier(b->comm);
    for (int s = 0; s < v->samples; s++) {
        double t0 = MPI_Wtime();
        overlap_once(b, im, phase, pb);
        b->samples[s] = MPI_Wtime() - t0;
    }
    bench_allreduce(b->samples, b->samples_max, v->samples, MPI_DOUBLE, MPI_MAX, b->comm);
    double sum = 0;
    for (int s = 0; s < v->samples; s++) {
        double t = b->samples_max[s];
        sum += t;
        if (t < v->min) v->min = t;
        if (t > v->max) v->max = t;
    }
    v->sum += sum;
    v->n += v->samples;
    v->iterations += v->samples;
    v->batch_mean[batch] = sum / v->samples;
    const double batch_s = b->opt->batch_seconds;
    double target = sum < batch_s ? 1.25 * batch_s : sum > 4 * batch_s ? 2 * batch_s : 0;
    if (target > 0) {
        double want = v->samples * target / (sum > 0 ? sum : 1e-9) + 1;
        long samples = want > MAX_SAMPLES ? MAX_SAMPLES : (long)want;
        if (samples < b->opt->min_iters) samples = b->opt->min_iters;
        v->samples = (int)samples;
    }
}

/* Two started executions with different data, checked exactly (start + test loop + wait, as t_total runs). */
static void overlap_validate(struct bench *b, struct overlap_impl *im, struct problem *pb)
{
    long wrong = 0;
    im->chunks = 4;
    for (int epoch = 1; epoch <= 2; epoch++) {
        fill_send(b, pb, epoch + (int)(pb->bytes % 7));
        memset(pb->recv, 0xA5, pb->capacity);
        bench_barrier(b->comm);
        overlap_once(b, im, PHASE_TOTAL, pb);
        wrong += check_recv(b, pb, im->label, epoch + (int)(pb->bytes % 7));
    }
    long total = 0;
    bench_allreduce(&wrong, &total, 1, MPI_LONG, MPI_SUM, b->comm);
    b->failures += wrong;
    im->phase[PHASE_TOTAL].failed_check = total > 0;
    if (total > 0 && b->rank == 0)
        fprintf(stderr, "plancoll-bench: VALIDATION FAILED: %s %s %zu B (overlap): %ld wrong elements over all ranks\n",
                im->label, collective_names[pb->coll], pb->bytes, total);
}

static double overlap_pct(const struct overlap_impl *im)
{
    double pure = im->phase[PHASE_PURE].median, cpu = im->phase[PHASE_CPU].median,
           total = im->phase[PHASE_TOTAL].median;
    if (pure <= 0) return 0;
    double pct = 100.0 * (1.0 - (total - cpu) / pure);
    return pct < 0 ? 0 : pct > 100 ? 100 : pct;
}

static void record_overlap(struct bench *b, size_t bytes, const struct overlap_impl *im)
{
    if (b->rank != 0) return;
    record_result(b, bytes, &im->phase[PHASE_TOTAL]);
    struct result *r = &b->results[b->nresults - 1];
    snprintf(r->impl, sizeof r->impl, "%s", im->label);
    r->overlap = true;
    r->t_pure_us = im->phase[PHASE_PURE].median * 1e6;
    r->t_cpu_us = im->phase[PHASE_CPU].median * 1e6;
    r->t_total_us = im->phase[PHASE_TOTAL].median * 1e6;
    r->overlap_pct = overlap_pct(im);
    r->iterations = im->phase[PHASE_PURE].iterations + im->phase[PHASE_CPU].iterations + im->phase[PHASE_TOTAL].iterations;
}

static void add_overlap_impl(struct overlap_impl *ims, int *n, enum kind kind, const char *label)
{
    struct overlap_impl *im = &ims[(*n)++];
    memset(im, 0, sizeof *im);
    im->kind = kind;
    im->request = MPI_REQUEST_NULL;
    snprintf(im->label, sizeof im->label, "%s", label);
    for (int p = 0; p < PHASE_COUNT; p++) variant_reset_stats(&im->phase[p]);
}

/* Plans the started plan: PLANCOLL_NONBLOCKING (PLANCOLL_OVERLAP when for_overlap) added to --rigor, -a NAME forced
 * if given, the progress thread when thread is set (PLANCOLL_PROGRESS_THREAD=1 at its creation only: the other plans
 * run without it). */
static void plan_started(struct bench *b, struct problem *pb, bool thread, bool for_overlap, plancoll_plan *plan)
{
    struct options o = *b->opt;
    const struct options *saved = b->opt;
    o.rigor |= for_overlap ? PLANCOLL_OVERLAP | PLANCOLL_NONBLOCKING : PLANCOLL_NONBLOCKING;
    b->opt = &o;
    if (thread) setenv("PLANCOLL_PROGRESS_THREAD", "1", 1);
    const char *forced = o.algorithm && strcmp(o.algorithm, "all") != 0 ? o.algorithm : NULL;
    int rc = plan_with_algorithm(b, pb, forced, plan);
    if (thread) unsetenv("PLANCOLL_PROGRESS_THREAD");
    b->opt = saved;
    if (rc != PLANCOLL_SUCCESS) {
        fprintf(stderr, "[rank %d] plancoll plan (PLANCOLL_NONBLOCKING%s%s, %zu B): %s: %s\n", b->rank,
                for_overlap ? " | PLANCOLL_OVERLAP" : "", thread ? ", progress thread" : "", pb->bytes, plancoll_strerror(rc), plancoll_error_detail());
        die(b, "planning failed", 1);
    }
}

static void run_size_overlap(struct bench *b, struct problem *pb, size_t bytes)
{
    const struct options *o = b->opt;
    problem_set_size(b, pb, bytes);
    fill_send(b, pb, 0);

    struct overlap_impl ims[MAX_OVERLAP_IMPLS];
    int n = 0;
    char label[96];
    plancoll_plan plan;
    plan_started(b, pb, false, false, &plan);
    snprintf(label, sizeof label, "plancoll:%s", plancoll_plan_algorithm(plan));
    record_choice(b, bytes, plancoll_plan_algorithm(plan));
    add_overlap_impl(ims, &n, KIND_PLANCOLL, label);
    ims[n - 1].plan = plan;
    if (o->overlap_plan) { /* the planner's choice for overlap next to its plain NONBLOCKING one */
        plan_started(b, pb, false, true, &plan);
        snprintf(label, sizeof label, "plancoll+overlap-plan:%s", plancoll_plan_algorithm(plan));
        add_overlap_impl(ims, &n, KIND_PLANCOLL, label);
        ims[n - 1].plan = plan;
        if (o->verbose && b->rank == 0) plancoll_fprint_plan(plan, stdout);
    }
    if (o->progress_thread) {
        plan_started(b, pb, true, false, &plan);
        snprintf(label, sizeof label, "plancoll+thread:%s", plancoll_plan_algorithm(plan));
        add_overlap_impl(ims, &n, KIND_PLANCOLL, label);
        ims[n - 1].plan = plan;
    }
    add_overlap_impl(ims, &n, KIND_NONBLOCKING, "mpi:nonblocking");
#if HAVE_PERSISTENT
    add_overlap_impl(ims, &n, KIND_PERSISTENT, "mpi:persistent");
    init_persistent(b, pb, &ims[n - 1].request);
#endif

    if (o->check)
        for (int i = 0; i < n; i++) overlap_validate(b, &ims[i], pb);
    fill_send(b, pb, 0);

    /* t_pure of every implementation, alternating batch by batch */
    for (int i = 0; i < n; i++) overlap_calibrate(b, &ims[i], PHASE_PURE, pb);
    for (int batch = 0; batch < o->batches; batch++)
        for (int i = 0; i < n; i++) overlap_batch(b, &ims[i], PHASE_PURE, pb, batch);
    /* each compute loop lasts its implementation's t_pure (OSU: the loop is calibrated to the pure latency) */
    for (int i = 0; i < n; i++) {
        struct variant *pure = &ims[i].phase[PHASE_PURE];
        pure->median = median_of(pure->batch_mean, o->batches);
        long chunks = (long)(pure->median / OVERLAP_TEST_INTERVAL + 0.5);
        ims[i].chunks = chunks > 0 ? chunks : 1;
    }
    for (int i = 0; i < n; i++) {
        overlap_calibrate(b, &ims[i], PHASE_CPU, pb);
        overlap_calibrate(b, &ims[i], PHASE_TOTAL, pb);
    }
    for (int batch = 0; batch < o->batches; batch++)
        for (int i = 0; i < n; i++) {
            overlap_batch(b, &ims[i], PHASE_CPU, pb, batch);
            overlap_batch(b, &ims[i], PHASE_TOTAL, pb, batch);
        }
    for (int i = 0; i < n; i++) {
        ims[i].phase[PHASE_CPU].median = median_of(ims[i].phase[PHASE_CPU].batch_mean, o->batches);
        ims[i].phase[PHASE_TOTAL].median = median_of(ims[i].phase[PHASE_TOTAL].batch_mean, o->batches);
        record_overlap(b, bytes, &ims[i]);
    }
    if (b->rank == 0) {
        for (int i = 0; i < n; i++) {
            const struct overlap_impl *im = &ims[i];
            printf("%10zu  %-44s %10.2f %10.2f %10.2f %9.1f %9ld%s\n", bytes, im->label,
                   im->phase[PHASE_PURE].median * 1e6, im->phase[PHASE_CPU].median * 1e6,
                   im->phase[PHASE_TOTAL].median * 1e6, overlap_pct(im),
                   im->phase[PHASE_PURE].iterations + im->phase[PHASE_CPU].iterations +
                       im->phase[PHASE_TOTAL].iterations,
                   im->phase[PHASE_TOTAL].failed_check ? "  VALIDATION FAILED" : "");
        }
        printf("\n");
        fflush(stdout);
    }
    for (int i = 0; i < n; i++) {
        if (ims[i].plan) plancoll_destroy_plan(&ims[i].plan);
        if (ims[i].kind == KIND_PERSISTENT && ims[i].request != MPI_REQUEST_NULL) MPI_Request_free(&ims[i].request);
    }
}

static void json_path_for(const struct options *o, enum collective coll, char *out, size_t n)
{
    if (o->ncollectives == 1) {
        snprintf(out, n, "%s", o->json_path);
        return;
    }
    /* several collectives in one run: out.json -> out-alltoall.json */
    const char *dot = strrchr(o->json_path, '.');
    const char *slash = strrchr(o->json_path, '/');
    if (dot && (!slash || dot > slash))
        snprintf(out, n, "%.*s-%s%s", (int)(dot - o->json_path), o->json_path, collective_names[coll], dot);
    else
        snprintf(out, n, "%s-%s", o->json_path, collective_names[coll]);
}

static void run_collective(struct bench *b, enum collective coll, size_t min_bytes, size_t max_bytes)
{
    const struct options *o = b->opt;
    size_t sizes[64];
    size_t nsizes = build_sweep(o, min_bytes, max_bytes, sizes, 64);
    struct problem pb;
    problem_init(b, &pb, coll, sizes[nsizes - 1]);
    b->nresults = 0;
    b->nchoices = 0;
    b->load_start = load_average();

    if (b->rank == 0) {
        printf("# plancoll-bench %s%s%s: P=%d nodes=%d configuration=%s, %s bytes %zu..%zu\n", collective_names[coll],
               coll == COLL_ALLTOALLV ? " pattern=" : "", coll == COLL_ALLTOALLV ? pattern_names[o->pattern] : "",
               b->size, b->nodes, b->configuration, coll == COLL_ALLREDUCE ? "vector (MPI_DOUBLE, MPI_SUM)" : "block",
               sizes[0], sizes[nsizes - 1]);
        printf("# warm-up %d, %d alternating batches of >= %.0f ms; time per iteration = max over ranks; "
               "median = median of batch means;\n"
               "# times in us; iters = timed iterations over all batches; ratios are of medians%s\n",
               o->warmup, o->batches, o->batch_seconds * 1e3, o->check ? "; results validated (-c)" : "");
        if (!o->overlap)
            printf("# %8s  %-38s %10s %10s %10s %10s %9s %9s %9s %9s\n", "bytes", "implementation", "median", "avg",
                   "min", "max", "iters", "/bestMPI", "/blocking", "/memcpy");
        fflush(stdout);
    }
    if (o->overlap && b->rank == 0) {
        printf("# overlap (OSU's method): t_pure = start + wait; t_cpu = compute calibrated to t_pure; t_total = start,\n"
               "# compute with a test every %g us, wait; overlap = 100 (1 - (t_total - t_cpu) / t_pure) in [0, 100];\n"
               "# plancoll planned with %s | PLANCOLL_NONBLOCKING%s\n",
               OVERLAP_TEST_INTERVAL * 1e6, o->rigor_name,
               o->progress_thread ? "; MPI_THREAD_MULTIPLE for every column (the progress thread needs it)" : "");
        printf("# %8s  %-44s %10s %10s %10s %9s %9s\n", "bytes", "implementation", "t_pure", "t_cpu", "t_total",
               "overlap%", "iters");
        fflush(stdout);
    }
    for (size_t i = 0; i < nsizes; i++) {
        if (o->overlap)
            run_size_overlap(b, &pb, sizes[i]);
        else
            run_size(b, &pb, sizes[i]);
    }

    if (b->rank == 0 && o->json_path) {
        char path[1024];
        json_path_for(o, coll, path, sizeof path);
        if (write_json(b, coll, path))
            printf("# wrote %s\n\n", path);
        else
            b->output_failed = true;
    }
    problem_free(&pb);
}

/* ---- Options ------------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: mpiexec -n P plancoll-bench [alltoall|alltoallv|allreduce ...] [options]\n"
            "       plancoll-bench --list\n"
            "  -m MIN:MAX       bytes per block (alltoall/alltoallv) or per vector (allreduce); K/M suffixes ok\n"
            "                   (defaults 8:1M, allreduce 8:4M; with no collective given 8:8K for all three)\n"
            "  -f FACTOR        size step (default 4: powers of 4 from MIN; MAX is always included)\n"
            "  -i ITER          minimum iterations per batch (batches last >= 20 ms anyway; default 10)\n"
            "  --batch-ms MS    the least a timed batch lasts (default 20; 0: -i iterations only, e.g. under\n"
            "                   SMPI, whose clock is simulated and noiseless, docs/scale-validate.md)\n"
            "  -x WARMUP        warm-up executions per implementation and size (default and minimum 10)\n"
            "  -b BATCHES       timed batches per implementation and size (default and minimum 5)\n"
            "  -c               validate every implementation at every size (exit 1 on any failure)\n"
            "  -a NAME|all      time this plancoll algorithm (forced) or every algorithm of the collective\n"
            "                   (default: the planner's choice); NAME may carry parameters\n"
            "                   (allreduce.dpml:leaders=2) and several NAMEs may be given, comma-separated;\n"
            "                   'planner' in the list times the planner's own plan beside them (e.g.\n"
            "                   -a allreduce.dpml:stores=normal,allreduce.dpml:stores=stream,planner)\n"
            "  --rigor R        how the planner's own plan is made: estimate (default), measure, patient,\n"
            "                   exhaustive (planner flags; with -a the choice is still printed)\n"
            "  --pattern P      alltoallv counts: uniform, random, sparse or hot (default uniform)\n"
            "  --json FILE      write the results as JSON (several collectives: FILE-<collective>.json)\n"
            "  --config NAME    configuration name for the JSON (default derived: e.g. 1n2p, 2n2p-tcp)\n"
            "  -v               print the planner's chosen plan at each size\n"
            "  --list           print every registered algorithm: name collective\n"
            "  --heap           allocate the buffers with plancoll_malloc (node-shared: single-copy plans)\n"
            "  --overlap        OSU's overlap benchmark of the started forms: plancoll_start (PLANCOLL_NONBLOCKING),\n"
            "                   MPI's nonblocking and persistent calls; t_pure, t_cpu, t_total, overlap %%\n"
            "  --progress-thread  with --overlap: MPI_THREAD_MULTIPLE, and a started plan with\n"
            "                   PLANCOLL_PROGRESS_THREAD=1 as one more column\n"
            "  --overlap-plan   with --overlap: one more plancoll column planned with PLANCOLL_OVERLAP\n"
            "                   (plancoll+overlap-plan), to compare with the PLANCOLL_NONBLOCKING choice\n");
}

static bool parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s) return false;
    if (*end == 'k' || *end == 'K') v *= 1024, end++;
    else if (*end == 'm' || *end == 'M') v *= 1024 * 1024, end++;
    if (*end != '\0' && *end != ':') return false;
    *out = (size_t)v;
    return true;
}

static bool parse_int(const char *s, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < 0 || v > INT_MAX) return false;
    *out = (int)v;
    return true;
}

/* Returns 0 on success, or a message for rank 0 to print. */
static const char *parse_options(int argc, char **argv, struct options *o)
{
    memset(o, 0, sizeof *o);
    o->factor = 4;
    o->min_iters = 10;
    o->warmup = MIN_WARMUP;
    o->batches = MIN_BATCHES;
    o->batch_seconds = BATCH_SECONDS;
    o->pattern = PATTERN_UNIFORM;
    o->rigor = PLANCOLL_ESTIMATE;
    o->rigor_name = "ESTIMATE";
    static const struct option longopts[] = {
        {"rigor", required_argument, NULL, 'R'},
        {"pattern", required_argument, NULL, 'p'}, {"json", required_argument, NULL, 'j'},
        {"list", no_argument, NULL, 'l'},          {"config", required_argument, NULL, 'C'},
        {"help", no_argument, NULL, 'h'},          {"heap", no_argument, NULL, 'H'},
        {"overlap", no_argument, NULL, 'O'},       {"progress-thread", no_argument, NULL, 'T'},
        {"overlap-plan", no_argument, NULL, 'Y'},  {"batch-ms", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    int c;
    int fi = 4;
    opterr = 0; /* every rank parses; only rank 0 reports */
    while ((c = getopt_long(argc, argv, "m:f:i:x:b:ca:vh", longopts, NULL)) != -1) {
        switch (c) {
        case 'm': {
            const char *colon = strchr(optarg, ':');
            if (!colon || !parse_size(optarg, &o->min_bytes) || !parse_size(colon + 1, &o->max_bytes) ||
                o->min_bytes == 0 || o->max_bytes < o->min_bytes)
                return "-m wants MIN:MAX with 0 < MIN <= MAX";
            o->sizes_given = true;
            break;
        }
        case 'f':
            if (!parse_int(optarg, &fi) || fi < 2) return "-f wants an integer factor >= 2";
            o->factor = (size_t)fi;
            break;
        case 'H': o->heap = true; break;
        case 'O': o->overlap = true; break;
        case 'T': o->progress_thread = true; break;
        case 'Y': o->overlap_plan = true; break;
        case 'B': {
            char *end = NULL;
            errno = 0;
            double ms = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(ms >= 0 && ms <= 60e3)) return "--batch-ms wants 0 to 60000 ms";
            o->batch_seconds = ms * 1e-3;
            break;
        }
        case 'i':
            if (!parse_int(optarg, &o->min_iters) || o->min_iters < 1) return "-i wants a positive integer";
            break;
        case 'x':
            if (!parse_int(optarg, &o->warmup)) return "-x wants a non-negative integer";
            break;
        case 'b':
            if (!parse_int(optarg, &o->batches) || o->batches < 1 || o->batches > MAX_BATCHES)
                return "-b wants an integer in 1..101";
            break;
        case 'c': o->check = true; break;
        case 'v': o->verbose = true; break;
        case 'a': o->algorithm = optarg; break;
        case 'p': {
            int found = -1;
            for (int i = 0; i < PATTERN_COUNT; i++)
                if (strcmp(optarg, pattern_names[i]) == 0) found = i;
            if (found < 0) return "--pattern wants uniform, random, sparse or hot";
            o->pattern = (enum pattern)found;
            break;
        }
        case 'R': {
            static const char *const names[] = {"estimate", "measure", "patient", "exhaustive"};
            static const char *const upper[] = {"ESTIMATE", "MEASURE", "PATIENT", "EXHAUSTIVE"};
            static const unsigned flags[] = {PLANCOLL_ESTIMATE, PLANCOLL_MEASURE, PLANCOLL_PATIENT, PLANCOLL_EXHAUSTIVE};
            int found = -1;
            for (int i = 0; i < 4; i++)
                if (strcmp(optarg, names[i]) == 0) found = i;
            if (found < 0) return "--rigor wants estimate, measure, patient or exhaustive";
            o->rigor = flags[found];
            o->rigor_name = upper[found];
            break;
        }
        case 'j': o->json_path = optarg; break;
        case 'C': o->configuration = optarg; break;
        case 'l': o->list = true; break;
        case 'h': return "";
        default: return "unknown option, or an option without its argument";
        }
    }
    for (int i = optind; i < argc; i++) {
        int found = -1;
        for (int k = 0; k < COLL_COUNT; k++)
            if (strcmp(argv[i], collective_names[k]) == 0) found = k;
        if (found < 0) return "unknown collective (alltoall, alltoallv or allreduce)";
        if (!o->run[found]) o->ncollectives++;
        o->run[found] = true;
    }
    /* The protocol's floors: fewer warm-ups or batches would not be a result (docs/measurement.md). */
    if (o->progress_thread && !o->overlap) return "--progress-thread goes with --overlap";
    if (o->overlap_plan && !o->overlap) return "--overlap-plan goes with --overlap";
    if (o->warmup < MIN_WARMUP) o->warmup = MIN_WARMUP;
    if (o->batches < MIN_BATCHES) o->batches = MIN_BATCHES;
    if (o->algorithm && strcmp(o->algorithm, "all") != 0) {
        if (strlen(o->algorithm) >= 1024) return "-a: the list is too long";
        char specs[1024];
        snprintf(specs, sizeof specs, "%s", o->algorithm);
        for (char *save = NULL, *spec = strtok_r(specs, ",", &save); spec; spec = strtok_r(NULL, ",", &save)) {
            if (strcmp(spec, "planner") == 0) continue; /* the planner's own plan, in every collective run */
            int owner = spec_collective(spec);
            if (owner < 0) return "-a names an algorithm that is not registered (see --list)";
            /* with collectives named, the forced one must be among them; the demo applies it to its own only */
            if (o->ncollectives > 0 && !o->run[owner]) return "-a names an algorithm of a collective that is not run";
        }
    }
    return NULL;
}

/* Default name for the configuration, as docs/measurement.md names them: 1n2p, 2n2p-tcp, ... */
static void describe_configuration(struct bench *b)
{
    if (b->opt->configuration) {
        snprintf(b->configuration, sizeof b->configuration, "%s", b->opt->configuration);
        return;
    }
    const char *tls = getenv("UCX_TLS");
    bool tcp = b->nodes > 1 && tls && strstr(tls, "tcp");
    if (b->size % b->nodes == 0)
        snprintf(b->configuration, sizeof b->configuration, "%dn%dp%s", b->nodes, b->size / b->nodes,
                 tcp ? "-tcp" : "");
    else
        snprintf(b->configuration, sizeof b->configuration, "%dn%dranks%s", b->nodes, b->size, tcp ? "-tcp" : "");
}

static int count_nodes(MPI_Comm comm)
{
    MPI_Comm node;
    int node_rank, leader, nodes = 0;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &node_rank);
    leader = node_rank == 0;
    MPI_Allreduce(&leader, &nodes, 1, MPI_INT, MPI_SUM, comm);
    MPI_Comm_free(&node);
    return nodes;
}

static void list_algorithms(void)
{
    const char *coll = NULL, *name;
    for (int i = 0; (name = plancoll_algorithm_name(i, &coll)) != NULL; i++) printf("%s %s\n", name, coll ? coll : "?");
}

int main(int argc, char **argv)
{
    /* The progress thread calls MPI beside the caller: --progress-thread asks for MPI_THREAD_MULTIPLE, before
     * the options are parsed (they are parsed after MPI_Init, so that only rank 0 reports). */
    bool want_multiple = false;
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--progress-thread") == 0) want_multiple = true;
    int provided = MPI_THREAD_SINGLE;
    if (want_multiple)
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    else
        MPI_Init(&argc, &argv);
    struct bench b;
    memset(&b, 0, sizeof b);
    b.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(b.comm, &b.rank);
    MPI_Comm_size(b.comm, &b.size);

    struct options o;
    const char *err = parse_options(argc, argv, &o);
    b.opt = &o;
    if (err) {
        if (b.rank == 0) {
            if (*err)
                fprintf(stderr, "plancoll-bench: %s (plancoll-bench --help prints the usage)\n", err);
            else
                usage(stdout);
        }
        return finish(*err ? 2 : 0);
    }
    if (o.list) {
        if (b.rank == 0) list_algorithms();
        return finish(0);
    }
    if (o.progress_thread && provided < MPI_THREAD_MULTIPLE) {
        if (b.rank == 0) fprintf(stderr, "plancoll-bench: --progress-thread: MPI does not provide MPI_THREAD_MULTIPLE\n");
        return finish(2);
    }
    if (o.overlap) calibrate_compute();

    b.nodes = count_nodes(b.comm);
    describe_configuration(&b);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int len = 0;
    MPI_Get_library_version(version, &len);
    version[strcspn(version, "\n")] = '\0';
    snprintf(b.mpi_library, sizeof b.mpi_library, "%.120s", version);
    b.samples = xmalloc(MAX_SAMPLES * sizeof(double));
    b.samples_max = xmalloc(MAX_SAMPLES * sizeof(double));

    /* No collective named: the README demo, all three over a short sweep. */
    bool demo = o.ncollectives == 0;
    if (demo) {
        for (int k = 0; k < COLL_COUNT; k++) o.run[k] = true;
        o.ncollectives = COLL_COUNT;
    }
    for (int k = 0; k < COLL_COUNT; k++) {
        if (!o.run[k]) continue;
        size_t lo = 8, hi = k == COLL_ALLREDUCE ? 4194304 : 1048576;
        if (demo) hi = 8192;
        if (o.sizes_given) lo = o.min_bytes, hi = o.max_bytes;
        size_t buffer = k == COLL_ALLREDUCE ? hi : hi * (size_t)b.size;
        if (buffer > INT_MAX) {
            if (b.rank == 0) fprintf(stderr, "plancoll-bench: %s at %zu B over %d ranks exceeds MPI's int counts\n",
                                     collective_names[k], hi, b.size);
            return finish(2);
        }
        run_collective(&b, (enum collective)k, lo, hi);
    }

    long failures = 0;
    MPI_Allreduce(&b.failures, &failures, 1, MPI_LONG, MPI_SUM, b.comm);
    if (b.rank == 0 && o.check)
        printf("# validation: %s (%ld wrong elements)\n", failures ? "FAILED" : "passed", failures);
    free(b.samples);
    free(b.samples_max);
    free(b.results);
    free(b.choices);
    free(b.choice_bytes);
    /* The verdict comes before MPI_Finalize: a finalize that hangs (MPICH 4.0.2 over UCX tcp) and is then
     * killed changes the exit code but not this line, which run-benchmarks.sh reads. */
    int status = failures || b.output_failed ? 1 : 0;
    if (b.rank == 0) printf("# plancoll-bench finished: exit status %d\n", status);
    return finish(status);
}
