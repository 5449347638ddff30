/* The distributed-matrix transpose, a kind of plan (struct pc_plan_ops): what plancoll_plan_transpose builds
 * (FFTW's MPI transpose and its 1D block distribution, see plancoll.h; the public entries are in
 * src/api/transpose_api.c).
 *
 * Two strategies, both built at plan time and one kept (choose_strategy):
 *  - composite, on rank r holding rows [start0, start0 + ln0) of the n0 x n1 input:
 *   1. pack: S = the local ln0 x n1 rows transposed (n1 x ln0, cache-blocked). Output rows start1(s) .. of S,
 *      ln1(s) x ln0 elements, are then one contiguous block: the block for destination s.
 *   2. exchange S -> R with an inner plan: alltoall when every block has the same size (n0 and n1 multiples of
 *      P), else alltoallv; R holds the block of each source q (ln1 x ln0(q)) at start0(q) ln1.
 *   3. unpack: out row j = row j of every source's block side by side (out[j][start0(q) + i] = R_q[j][i]).
 *   S and R are plan-owned, so in place (in == out) and out of place run the same code and in is only read. For
 *   shares of 64 KiB and more S lives in the communicator's node-shared heap (plan_scratch), so node-aware
 *   exchanges copy once. The inner plan is an ordinary collective plan over S and R, made by the API's pipeline
 *   (passed in as pc_transpose_plan_exchange) and owned by the transpose plan, with no handle of its own: the
 *   planner chooses among every registered alltoall or alltoallv algorithm under the caller's flags, and it runs
 *   on its planned buffers at every execution (also for plancoll_execute_buffers, which changes only in and out).
 *  - fused (fused.c): node peers read each other's packed rows (or input, when it is node-shared) straight into
 *   their output, other nodes' blocks leave from the packed rows: one or two passes instead of three.
 * The model predicts both (maximised over ranks, so every rank keeps the same); MEASURE and above time both on
 * temporary buffers; PLANCOLL_ALGORITHM=transpose.fused or transpose.composite forces one, and forcing an inner
 * alltoall(v) algorithm forces the composite.
 * One rank: a local transpose (through S when in and out overlap). Nothing to move (n0, n1 or the element size
 * 0): no strategy, execution returns at once. */
#include "transpose/transpose.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/sizes.h"
#include "base/model.h"
#include "planner/planner.h"
#include "shm/requests.h"
#include "shm/heap.h"
#include "shm/layout.h"
#include "transpose/fused.h"
#include "transpose/local.h"
#include "transpose/state.h"

static bool overlaps(const char *a, size_t alen, const char *b, size_t blen)
{
    return alen > 0 && blen > 0 && a < b + blen && b < a + alen;
}

/* The composite execution: pack into S, the inner exchange S -> R, unpack R into out. */
static int composite_execute(struct pc_transpose *t, const char *in, char *out)
{
    pc_transpose_local(in, (size_t)t->n1, t->S, (size_t)t->ln0, (size_t)t->ln0, (size_t)t->n1, t->es);
    int err = pc_plan_run_planned(t->inner);
    if (err) return err;
    pc_transpose_interleave_to(t->R, t->offsets, t->counts, t->starts, t->P, out, (size_t)t->n0, (size_t)t->ln1, t->es,
                               t->stream_out);
    return PLANCOLL_SUCCESS;
}

/* One rank: the whole matrix is local (through S when in and out overlap). */
static void local_execute(struct pc_transpose *t, const char *in, char *out)
{
    const size_t es = t->es;
    if (t->in_elems == 0 || es == 0) return;
    if (overlaps(in, t->in_elems * es, out, t->out_elems * es)) {
        pc_transpose_local(in, (size_t)t->n1, t->S, (size_t)t->n0, (size_t)t->n0, (size_t)t->n1, es);
        memcpy(out, t->S, t->out_elems * es);
    } else {
        pc_transpose_local(in, (size_t)t->n1, out, (size_t)t->n0, (size_t)t->n0, (size_t)t->n1, es);
    }
}

/* The element-0 data addresses of a call's buffers. */
static void data_addresses(const struct pc_transpose *t, const void *sendbuf, void *recvbuf, const char **in, char **out)
{
    *in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
    *out = recvbuf;
    if (*in && t->in_elems) *in += t->lb;
    if (*out && t->out_elems) *out += t->lb;
}

static int execute(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    struct pc_transpose *t = plan->impl;
    const char *in;
    char *out;
    data_addresses(t, sendbuf, recvbuf, &in, &out);
    if (t->pieces > 0) t->pieces_started = t->pieces; /* every piece at once: the ordinary transpose */
    if (t->fused) return pc_transpose_fused_execute(plan, t, in, out);
    if (t->inner) return composite_execute(t, in, out);
    local_execute(t, in, out);
    return PLANCOLL_SUCCESS;
}

/* plancoll_start: the local pack, then the inner plan started on its planned buffers (S and R); advance moves it
 * along and, once it is done, unpacks R into the output. One rank or nothing to move: all of it in start. */
static int start(struct plancoll_plan_s *plan, const void *sendbuf, void *recvbuf)
{
    struct pc_transpose *t = plan->impl;
    const char *in;
    char *out;
    data_addresses(t, sendbuf, recvbuf, &in, &out);
    if (t->pieces > 0) { /* plancoll_start_piece(0) begins with one piece, any other start with all */
        t->pieces_started = t->pieces_at_start;
        t->pieces_at_start = t->pieces;
        if (!t->fused) return PLANCOLL_SUCCESS; /* nothing to move: advance counts the pieces */
    }
    if (t->fused) return pc_transpose_fused_start(plan, t, in, out);
    if (!t->inner) return execute(plan, sendbuf, recvbuf);
    struct plancoll_plan_s *inner = t->inner;
    if (!inner->ops->start || !inner->ops->advance)
        return pc_error(PLANCOLL_ERR_NOT_STARTABLE, "transpose: its exchange %s cannot be started",
                        inner->ops->name(inner));
    t->run_out = out;
    pc_transpose_local(in, (size_t)t->n1, t->S, (size_t)t->ln0, (size_t)t->ln0, (size_t)t->n1, t->es);
    inner->planned_buffers = true;
    const void *isend = inner->in_place ? MPI_IN_PLACE : inner->sendbuf;
    inner->run_sendbuf = isend;
    inner->run_recvbuf = inner->recvbuf;
    int err = inner->ops->start(inner, isend, inner->recvbuf);
    if (!err) inner->executions++;
    return err;
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct pc_transpose *t = plan->impl;
    *done = true;
    if (t->pieces > 0 && !t->fused) *done = t->pieces_started == t->pieces;
    if (t->fused) return pc_transpose_fused_advance(plan, t, done);
    if (!t->inner) return PLANCOLL_SUCCESS;
    int err = t->inner->ops->advance(t->inner, done);
    if (err || !*done) return err;
    pc_transpose_interleave_to(t->R, t->offsets, t->counts, t->starts, t->P, t->run_out, (size_t)t->n0, (size_t)t->ln1,
                               t->es, t->stream_out);
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct pc_transpose *t = plan->impl;
    if (!t) return;
    pc_plan_free(t->inner);
    pc_transpose_fused_free(t->fused);
    free(t->offsets);
    free(t->counts);
    free(t->starts);
    free(t->vcounts);
    if (t->S_in_heap) pc_heap_free(t->S);
    else free(t->S);
    free(t->R);
    free(t);
    plan->impl = NULL;
}

int pc_transpose_check_sizes(ptrdiff_t n0, ptrdiff_t n1)
{
    if (n0 < 0 || n1 < 0)
        return pc_error(PLANCOLL_ERR_COUNT, "the matrix is %td x %td: sizes must not be negative", n0, n1);
    if (n0 > 0 && n1 > PTRDIFF_MAX / n0)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "a %td x %td matrix has more elements than ptrdiff_t holds", n0, n1);
    return PLANCOLL_SUCCESS;
}

/* Local checks and the plan-owned scratch: everything that can fail on one rank only. */
static int prepare(struct plancoll_plan_s *p, struct pc_transpose *t, ptrdiff_t n0, ptrdiff_t n1,
                   MPI_Datatype element, void *in, void *out)
{
    int err = pc_transpose_check_sizes(n0, n1);
    if (err) return err;
    if (element == MPI_DATATYPE_NULL) return pc_error(PLANCOLL_ERR_DATATYPE, "the element type is MPI_DATATYPE_NULL");
    struct pc_typeinfo ti;
    if ((err = pc_typeinfo_init(&ti, element, false))) return err;
    if (!ti.contiguous)
        return pc_error(PLANCOLL_ERR_DATATYPE,
                        "the element type must be dense (size %lld bytes, extent %ld, true extent %ld): a transpose "
                        "moves whole elements as bytes",
                        (long long)ti.size, (long)ti.extent, (long)ti.true_extent);
    if (in == MPI_IN_PLACE || out == MPI_IN_PLACE)
        return pc_error(PLANCOLL_ERR_IN_PLACE, "MPI_IN_PLACE is not a transpose buffer: pass in == out to transpose in place");
    if ((err = pc_check_flags(p->flags))) return err;
    t->n0 = n0;
    t->n1 = n1;
    t->es = (size_t)ti.size;
    t->lb = ti.true_lb;
    t->P = p->size;
    t->rank = p->rank;
    t->b0 = pc_block_size(n0, t->P);
    t->b1 = pc_block_size(n1, t->P);
    pc_block_dist(n0, t->P, t->rank, &t->ln0, &t->start0);
    pc_block_dist(n1, t->P, t->rank, &t->ln1, &t->start1);
    ptrdiff_t most = pc_transpose_alloc(n0, n1, t->P, t->rank);
    if (most > INT_MAX)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "this rank's share is %td elements; the exchange counts at most %d", most,
                        INT_MAX);
    int64_t share_bytes;
    if (!pc_bytes_mul(most, (int64_t)t->es, &share_bytes))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "this rank's share (%td elements of %zu bytes) reaches 2^60 bytes", most, t->es);
    t->in_elems = (size_t)(t->ln0 * n1);
    t->out_elems = (size_t)(t->ln1 * n0);
    if (t->es > 0 && t->in_elems > 0 && !in)
        return pc_error(PLANCOLL_ERR_NULL_BUFFER, "in is NULL but this rank holds %td input rows", t->ln0);
    if (t->es > 0 && t->out_elems > 0 && !out)
        return pc_error(PLANCOLL_ERR_NULL_BUFFER, "out is NULL but this rank holds %td output rows", t->ln1);
    t->uniform = pc_transpose_uniform(n0, n1, t->P);
    size_t bytes_in = t->in_elems * t->es, bytes_out = t->out_elems * t->es;
    bool moves = n0 > 0 && n1 > 0 && t->es > 0;
    if (moves) {
        /* One rank needs S only as the staging area of an overlapping in and out; with several ranks S comes
         * from the node-shared heap once every rank's arguments are known to be good (plan_scratch). */
        if (t->P == 1) t->S = malloc(bytes_in ? bytes_in : 1);
        else t->R = malloc(bytes_out ? bytes_out : 1);
        if (t->P == 1 ? !t->S : !t->R)
            return pc_error(PLANCOLL_ERR_NOMEM, "transpose scratch of %zu bytes", t->P == 1 ? bytes_in : bytes_out);
    }
    t->offsets = malloc(sizeof(ptrdiff_t) * (size_t)t->P);
    t->counts = malloc(sizeof(ptrdiff_t) * (size_t)t->P);
    t->starts = malloc(sizeof(ptrdiff_t) * (size_t)t->P);
    if (moves && t->P > 1 && !t->uniform) t->vcounts = malloc(sizeof(int) * 4 * (size_t)t->P);
    if (!t->offsets || !t->counts || !t->starts || (moves && t->P > 1 && !t->uniform && !t->vcounts))
        return pc_error(PLANCOLL_ERR_NOMEM, "transpose block tables");
    for (int q = 0; q < t->P; q++) {
        ptrdiff_t lnq, sq;
        pc_block_dist(n0, t->P, q, &lnq, &sq);
        t->counts[q] = lnq;
        t->starts[q] = sq;
        t->offsets[q] = sq * t->ln1;
    }
    p->sendbuf = in;
    p->recvbuf = out;
    p->in_place = in == out && in != NULL;
    return PLANCOLL_SUCCESS;
}

/* S, the inner exchange's send buffer, from the communicator's node-shared heap (pc_heap_malloc, collective): a
 * node-aware algorithm then reads a node peer's blocks straight from it, one copy instead of two (measured 2.7x
 * faster than MPI's alltoall at 1 MiB blocks on one node, bench/results/1n2p-alltoall-heap). Only for shares of
 * PC_TRANSPOSE_HEAP_BYTES or more (rank 0's share, the largest, decides, so every rank decides alike): below it
 * the exchange is latency-bound, and growing the heap (a shared window over the node) costs more plan time than
 * single copies save. When the heap cannot grow (every rank learns it together) S is private memory; a failure
 * of that is reported by the inner plan, which agrees on errors across ranks. */
#define PC_TRANSPOSE_HEAP_BYTES ((uint64_t)64 << 10)
static void plan_scratch(struct pc_transpose *t, MPI_Comm comm)
{
    size_t bytes = t->in_elems * t->es;
    ptrdiff_t ln0_first, s0_first;
    pc_block_dist(t->n0, t->P, 0, &ln0_first, &s0_first);
    void *heap = NULL;
    if ((uint64_t)ln0_first * (uint64_t)t->n1 * t->es >= PC_TRANSPOSE_HEAP_BYTES &&
        pc_heap_malloc(bytes, comm, &heap) == PLANCOLL_SUCCESS) {
        t->S = heap;
        t->S_in_heap = true;
        return;
    }
    pc_clear_error();
    t->S = malloc(bytes ? bytes : 1);
}

/* The inner exchange over S and R, in elements of es bytes (a byte run, so any dense element type moves as is). */
static int plan_exchange(struct pc_transpose *t, MPI_Comm comm, unsigned flags,
                         pc_transpose_plan_exchange plan_collective)
{
    MPI_Datatype unit;
    if (t->es <= INT_MAX) PC_MPI_CHECK(MPI_Type_contiguous((int)t->es, MPI_BYTE, &unit));
    else PC_MPI_CHECK(pc_mpi_type_contiguous((MPI_Count)t->es, MPI_BYTE, &unit)); /* an element past 2 GiB */
    PC_MPI_CHECK(MPI_Type_commit(&unit));
    struct pc_transpose_exchange x = {.sendbuf = t->S, .recvbuf = t->R, .unit = unit, .comm = comm, .flags = flags};
    if (t->uniform) {
        x.count = (int)(t->b0 * t->b1);
    } else {
        const int P = t->P;
        int *sendcounts = t->vcounts, *sdispls = sendcounts + P, *recvcounts = sdispls + P, *rdispls = recvcounts + P;
        for (int q = 0; q < P; q++) {
            ptrdiff_t lnq, sq;
            pc_block_dist(t->n1, P, q, &lnq, &sq);
            sendcounts[q] = (int)(t->ln0 * lnq);
            sdispls[q] = (int)(t->ln0 * sq);
            recvcounts[q] = (int)(t->counts[q] * t->ln1);
            rdispls[q] = (int)t->offsets[q];
        }
        x.sendcounts = sendcounts;
        x.sdispls = sdispls;
        x.recvcounts = recvcounts;
        x.rdispls = rdispls;
    }
    int err = plan_collective(&x, &t->inner);
    MPI_Type_free(&unit);
    free(t->vcounts); /* the inner plan keeps its own copies */
    t->vcounts = NULL;
    return err;
}

/* The strategy PLANCOLL_ALGORITHM forces: -1 none, else enum pc_transpose_strategy. "transpose.fused" or
 * "transpose.composite" names it; an alltoall or alltoallv entry forces the composite's inner exchange, and so the
 * composite. */
static int forced_strategy(void)
{
    const char *text = getenv("PLANCOLL_ALGORITHM");
    int forced = -1;
    bool inner = false;
    for (const char *q = text; q && *q;) {
        while (*q == ',' || *q == ' ') q++;
        size_t len = strcspn(q, ", "), name_len = strcspn(q, ":, ");
        char name[96];
        if (name_len < sizeof name) {
            memcpy(name, q, name_len);
            name[name_len] = '\0';
            int k = pc_transpose_strategy_index(name);
            if (k >= 0) forced = k;
            else if (strncmp(name, "alltoall", 8) == 0) inner = true;
        }
        q += len;
    }
    return forced >= 0 ? forced : inner ? PC_TRANSPOSE_COMPOSITE : -1;
}

/* One timed execution of a strategy on the trial buffers: this rank's wall time, maximised over ranks. */
static int time_strategy(struct plancoll_plan_s *p, struct pc_transpose *t, enum pc_transpose_strategy which,
                         const char *in, char *out, double *us)
{
    int err = pc_barrier_wait(p->layout);
    double t0 = MPI_Wtime();
    if (!err)
        err = which == PC_TRANSPOSE_FUSED ? pc_transpose_fused_execute(p, t, in, out) : composite_execute(t, in, out);
    double mine = (MPI_Wtime() - t0) * 1e6;
    if (err) return err;
    return pc_allreduce_wait(p->layout, &mine, us, 1, MPI_DOUBLE, MPI_MAX);
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* MEASURE and above: both strategies timed alternately on temporary buffers of the plan's shape (the caller's are
 * never touched while planning), one warm-up each, then rounds until 5 or about a second; the medians, the same on
 * every rank, go to t->composite_measured_us and t->fused_measured_us. Collective. */
#define PC_TRANSPOSE_TRIAL_ROUNDS 5
static int measure_strategies(struct plancoll_plan_s *p, struct pc_transpose *t)
{
    size_t bytes = (size_t)pc_transpose_alloc(t->n0, t->n1, t->P, t->rank) * t->es;
    char *in = malloc(bytes), *out = malloc(bytes);
    int err = in && out ? PLANCOLL_SUCCESS : pc_error(PLANCOLL_ERR_NOMEM, "transpose trial buffers of %zu bytes", bytes);
    err = pc_agree_failure(p->layout, err, "transpose: another rank could not allocate its trial buffers");
    double samples[2][PC_TRANSPOSE_TRIAL_ROUNDS];
    int rounds = 0;
    if (!err) {
        memset(in, 1, bytes);
        double warm[2];
        for (int v = 0; v < 2 && !err; v++) err = time_strategy(p, t, (enum pc_transpose_strategy)v, in, out, &warm[v]);
        double round_us = warm[0] + warm[1];
        int budget = round_us > 0 ? (int)(1e6 / round_us) : PC_TRANSPOSE_TRIAL_ROUNDS;
        int want = budget < 1 ? 1 : budget > PC_TRANSPOSE_TRIAL_ROUNDS ? PC_TRANSPOSE_TRIAL_ROUNDS : budget;
        for (; rounds < want && !err; rounds++)
            for (int v = 0; v < 2 && !err; v++) {
                /* alternate which goes first, so neither always runs on the caches the other left */
                int which = (rounds + v) % 2;
                err = time_strategy(p, t, (enum pc_transpose_strategy)which, in, out, &samples[which][rounds]);
            }
    }
    free(in);
    free(out);
    if (err) return err;
    qsort(samples[0], (size_t)rounds, sizeof(double), by_value);
    qsort(samples[1], (size_t)rounds, sizeof(double), by_value);
    t->composite_measured_us = samples[PC_TRANSPOSE_COMPOSITE][rounds / 2];
    t->fused_measured_us = samples[PC_TRANSPOSE_FUSED][rounds / 2];
    return PLANCOLL_SUCCESS;
}

/* Whether the passes that write a rank's output should use streaming stores: a store into a line not in this core's
 * caches first reads the line (from memory or another core), which a streaming store skips, at the price of the
 * line not being cached afterwards. Which wins depends on the output's size against the caches this core really
 * gets (a virtual machine's reported L3 says little) and on where the host placed the cores, so it is measured, once
 * per process for each element size and power-of-two output size: a transpose of a matrix of that size (up to
 * PC_STREAM_PROBE_MAX bytes, larger outputs probed at that size) timed both ways, after a warm-up, best of three.
 * Local: the choice changes no message, so ranks may differ. */
#define PC_STREAM_PROBE_MAX ((size_t)64 << 20)
#define PC_STREAM_PROBE_CLASSES 48
struct stream_probe {
    size_t es;
    int size_class;
    double cached_us, stream_us;
};
static struct stream_probe stream_probes[PC_STREAM_PROBE_CLASSES];
static int nstream_probes;

static double probe_pass(const char *src, char *dst, size_t rows, size_t cols, size_t es, bool stream)
{
    double best = -1;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = MPI_Wtime();
        pc_transpose_local_to(src, cols, dst, rows, rows, cols, es, stream);
        double us = (MPI_Wtime() - t0) * 1e6;
        if (rep > 0 && (best < 0 || us < best)) best = us; /* the first is the warm-up (page faults) */
    }
    return best;
}

static void choose_stores(struct pc_transpose *t)
{
    t->stream_out = false;
    t->probe_cached_us = t->probe_stream_us = -1;
    size_t bytes = t->out_elems * t->es;
    if (!pc_transpose_can_stream(t->es) || bytes == 0) return;
    int size_class = 0;
    while (size_class < 62 && ((size_t)1 << size_class) < bytes) size_class++;
    for (int i = 0; i < nstream_probes; i++)
        if (stream_probes[i].es == t->es && stream_probes[i].size_class == size_class) {
            t->probe_cached_us = stream_probes[i].cached_us;
            t->probe_stream_us = stream_probes[i].stream_us;
            t->stream_out = t->probe_stream_us < t->probe_cached_us;
            return;
        }
    size_t probe = bytes < PC_STREAM_PROBE_MAX ? bytes : PC_STREAM_PROBE_MAX;
    size_t cols = (size_t)(t->ln1 > 0 ? t->ln1 : 1), rows = probe / t->es / cols;
    if (rows == 0) rows = 1;
    char *src = malloc(rows * cols * t->es), *dst = aligned_alloc(64, (rows * cols * t->es + 63) / 64 * 64);
    if (src && dst) {
        memset(src, 1, rows * cols * t->es);
        t->probe_cached_us = probe_pass(src, dst, rows, cols, t->es, false);
        t->probe_stream_us = probe_pass(src, dst, rows, cols, t->es, true);
        t->stream_out = t->probe_stream_us < t->probe_cached_us;
        if (nstream_probes < PC_STREAM_PROBE_CLASSES)
            stream_probes[nstream_probes++] =
                (struct stream_probe){t->es, size_class, t->probe_cached_us, t->probe_stream_us};
    }
    free(src);
    free(dst);
}

/* The model both strategies are predicted with: the calibrated one of this shape when this process holds it, else
 * the default (the predictions are then maximised over ranks, so every rank chooses alike either way). */
static void strategy_model(const struct plancoll_plan_s *p, struct pc_machine_model *m)
{
    char key[64];
    pc_model_shape_key(&p->prob.shape, key, sizeof key);
    const struct pc_machine_model *known = pc_model_lookup(key);
    if (known) *m = *known;
    else pc_default_model(m);
}

/* The wisdom key of this transpose's strategy decision (wisdom/FORMAT.md: a record whose algorithm is
 * transpose.fused or transpose.composite): the shape as the collectives' keys give it, the matrix and element size. */
static void strategy_key(const struct plancoll_plan_s *p, const struct pc_transpose *t, char *buf, size_t len)
{
    const struct pc_shape *s = &p->prob.shape;
    snprintf(buf, len, "transpose:P=%d:nodes=%d:ppn=%d-%d:n0=%td:n1=%td:elem=%zu", s->nranks, s->nnodes, s->min_ppn,
             s->max_ppn, t->n0, t->n1, t->es);
}

static const char *const strategy_names[2] = {"transpose.composite", "transpose.fused"};

/* The strategy this process's wisdom holds for the transpose (at the plan's rigor or above), agreed over the ranks:
 * *known is it when every rank holds the same, else -1. Collective (one allreduce). */
static int strategy_from_wisdom(struct plancoll_plan_s *p, const struct pc_transpose *t, unsigned flags, int *known)
{
    char key[160];
    strategy_key(p, t, key, sizeof key);
    const struct pc_wisdom_entry *e = pc_wisdom_lookup(key, flags);
    int mine = e ? pc_transpose_strategy_index(e->algorithm) : -1;
    int v[2] = {mine, -mine}, all[2];
    int err = pc_allreduce_wait(p->layout, v, all, 2, MPI_INT, MPI_MAX);
    if (err) return err;
    *known = all[0] == -all[1] ? all[0] : -1; /* max == min: the same on every rank */
    return PLANCOLL_SUCCESS;
}

/* MEASURE's decision as wisdom, as the collectives' decisions are (plancoll_export_wisdom writes it). */
static void remember_strategy(const struct plancoll_plan_s *p, const struct pc_transpose *t, unsigned flags,
                              enum pc_transpose_strategy pick)
{
    struct pc_wisdom_entry e;
    memset(&e, 0, sizeof e);
    strategy_key(p, t, e.key, sizeof e.key);
    snprintf(e.algorithm, sizeof e.algorithm, "%s", strategy_names[pick]);
    snprintf(e.runner_up, sizeof e.runner_up, "%s", strategy_names[!pick]);
    e.measured_us = pick == PC_TRANSPOSE_FUSED ? t->fused_measured_us : t->composite_measured_us;
    e.runner_up_us = pick == PC_TRANSPOSE_FUSED ? t->composite_measured_us : t->fused_measured_us;
    e.rigor = flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE);
    e.decided_at = (long long)time(NULL);
    if (pc_wisdom_store(&e) != PLANCOLL_SUCCESS) pc_clear_error(); /* no room: the next plan measures again */
}

/* Builds the candidates (the composite's inner plan, the fused state), predicts them, times them under MEASURE,
 * keeps one and frees the other. Collective; every rank decides alike. */
static int choose_strategy(struct plancoll_plan_s *p, struct pc_transpose *t, MPI_Comm comm, unsigned flags,
                           int forced, pc_transpose_plan_exchange plan_collective)
{
    int err = PLANCOLL_SUCCESS;
    choose_stores(t);
    if (forced != PC_TRANSPOSE_FUSED) {
        plan_scratch(t, comm);
        if ((err = plan_exchange(t, comm, flags, plan_collective))) return err;
    }
    if (forced != PC_TRANSPOSE_COMPOSITE) {
        err = pc_transpose_fused_setup(p, t);
        if (err && forced == PC_TRANSPOSE_FUSED) return err;
        if (err) { /* every rank failed alike (the set-up agrees): the composite alone */
            pc_transpose_fused_free(t->fused);
            t->fused = NULL;
            pc_clear_error();
        }
    }
    struct pc_machine_model model;
    strategy_model(p, &model);
    t->local_us = pc_transpose_local_estimate(t->n0, t->n1, t->P, t->es, &model);
    double pred[2] = {t->inner ? t->inner->predicted_us + t->local_us : -1,
                      t->fused ? pc_transpose_fused_estimate(p, t, &model) : -1};
    if ((err = pc_allreduce_wait(p->layout, MPI_IN_PLACE, pred, 2, MPI_DOUBLE, MPI_MAX))) return err;
    t->composite_us = pred[0];
    t->fused_us = pred[1];
    t->composite_measured_us = t->fused_measured_us = -1;
    enum pc_transpose_strategy pick;
    if (!t->fused || !t->inner) {
        pick = t->fused ? PC_TRANSPOSE_FUSED : PC_TRANSPOSE_COMPOSITE;
        t->strategy_by = forced >= 0 ? "forced (PLANCOLL_ALGORITHM)" : "only candidate";
    } else if (flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE | PLANCOLL_WISDOM_ONLY)) {
        int known = -1;
        if ((err = strategy_from_wisdom(p, t, flags, &known))) return err;
        if (known >= 0) {
            pick = (enum pc_transpose_strategy)known;
            t->strategy_by = "wisdom";
        } else if (flags & PLANCOLL_WISDOM_ONLY) {
            pick = t->fused_us <= t->composite_us ? PC_TRANSPOSE_FUSED : PC_TRANSPOSE_COMPOSITE;
            t->strategy_by = "model (no wisdom for the strategy)";
        } else {
            if ((err = measure_strategies(p, t))) return err;
            pick = t->fused_measured_us <= t->composite_measured_us ? PC_TRANSPOSE_FUSED : PC_TRANSPOSE_COMPOSITE;
            t->strategy_by = "measured";
            remember_strategy(p, t, flags, pick);
        }
    } else {
        pick = t->fused_us <= t->composite_us ? PC_TRANSPOSE_FUSED : PC_TRANSPOSE_COMPOSITE;
        t->strategy_by = "model";
    }
    t->strategy = pick;
    if (pick == PC_TRANSPOSE_FUSED && t->inner) {
        pc_plan_free(t->inner);
        t->inner = NULL;
        if (t->S_in_heap) pc_heap_free(t->S);
        else free(t->S);
        t->S = NULL;
        t->S_in_heap = false;
    } else if (pick == PC_TRANSPOSE_COMPOSITE && t->fused) {
        pc_transpose_fused_free(t->fused);
        t->fused = NULL;
    }
    return PLANCOLL_SUCCESS;
}

static const struct pc_plan_ops transpose_ops;

/* A plan in pieces: the count within bounds, and in and out apart (in place, the output rows written for piece k
 * would overwrite input rows of later pieces, which the caller may still be writing). */
static int check_pieces(const struct pc_transpose *t, int pieces, const void *in, const void *out)
{
    if (pieces < 1 || pieces > PLANCOLL_MAX_PIECES)
        return pc_error(PLANCOLL_ERR_COUNT, "a transpose in %d pieces: pieces must be 1 .. %d", pieces,
                        PLANCOLL_MAX_PIECES);
    if ((int64_t)pieces * t->P > INT_MAX / 2)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "a transpose in %d pieces over %d ranks: %d x ranks must stay below %d",
                        pieces, t->P, pieces, INT_MAX / 2);
    if ((in == out && in != NULL) ||
        overlaps(in, t->in_elems * t->es + (size_t)t->lb, out, t->out_elems * t->es + (size_t)t->lb))
        return pc_error(PLANCOLL_ERR_IN_PLACE,
                        "a transpose in pieces cannot run in place (in and out overlap): the output written for a piece "
                        "would overwrite input rows of later pieces; pass a separate out");
    return PLANCOLL_SUCCESS;
}

/* A plan in pieces runs the fused strategy only (fused.c, "Pieces"): its slot already holds every block of a
 * piece contiguously, where the composite's inner alltoall would need one exchange per piece. */
static int plan_pieces(struct plancoll_plan_s *p, struct pc_transpose *t)
{
    choose_stores(t);
    int err = pc_transpose_fused_setup(p, t);
    if (err) return err;
    struct pc_machine_model model;
    strategy_model(p, &model);
    t->fused_us = pc_transpose_fused_estimate(p, t, &model);
    t->strategy = PC_TRANSPOSE_FUSED;
    t->strategy_by = "a plan in pieces (fused only)";
    return PLANCOLL_SUCCESS;
}

int pc_transpose_build(struct plancoll_plan_s *p, ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in,
                       void *out, MPI_Comm comm, unsigned flags, const int *pieces,
                       pc_transpose_plan_exchange plan_collective)
{
    p->ops = &transpose_ops;
    struct pc_transpose *t = calloc(1, sizeof *t);
    if (!t) return pc_error(PLANCOLL_ERR_NOMEM, "transpose plan");
    p->impl = t;
    t->composite_us = t->fused_us = t->composite_measured_us = t->fused_measured_us = -1;
    int local = prepare(p, t, n0, n1, element, in, out);
    if (!local && pieces) local = check_pieces(t, *pieces, in, out);
    if (!local && pieces) t->pieces = t->pieces_at_start = *pieces;
    int forced = forced_strategy();

    /* One allreduce: did any rank fail, and did every rank pass the same sizes, element size, flags and forced
     * strategy? */
    uint64_t h = PC_HASH_SEED;
    int64_t sig[6] = {(int64_t)n0, (int64_t)n1, (int64_t)t->es, (int64_t)flags, (int64_t)forced, (int64_t)t->pieces};
    h = pc_hash_bytes(h, sig, sizeof sig);
    uint64_t m[2] = {local ? 0 : h, local ? 0 : ~h};
    int err = pc_agree_failure_max(p->layout, local, m, 2, NULL,
                                   "another rank's transpose arguments were invalid (see its plancoll_error_detail)");
    if (!err && (m[0] != h || m[1] != ~h))
        err = pc_error(PLANCOLL_ERR_MISMATCH,
                       "ranks passed different transpose sizes, element sizes, flags or pieces, or PLANCOLL_ALGORITHM "
                       "forces different transpose strategies (this rank: %td x %td, %zu-byte elements, %d pieces)",
                       n0, n1, t->es, t->pieces);
    if (!err && t->pieces > 0 && forced == PC_TRANSPOSE_COMPOSITE)
        err = pc_error(PLANCOLL_ERR_INAPPLICABLE, "a transpose in pieces runs the fused strategy only, and "
                                                  "PLANCOLL_ALGORITHM forces the composite (or an inner alltoall)");
    if (!err && t->pieces > 0 && t->n0 > 0 && t->n1 > 0 && t->es > 0) err = plan_pieces(p, t);
    else if (!err && t->P > 1 && t->n0 > 0 && t->n1 > 0 && t->es > 0)
        err = choose_strategy(p, t, comm, flags, forced, plan_collective);
    if (err) return err;

    p->measured_us = -1;
    p->runner_up_us = -1;
    const struct plancoll_plan_s *inner = t->inner;
    if (t->fused) {
        p->predicted_us = t->fused_us;
        p->measured_us = t->fused_measured_us;
        p->chosen_by = t->strategy_by;
        p->candidates = 2;
        if (t->pieces > 0) snprintf(t->name, sizeof t->name, "transpose(fused, %d pieces)", t->pieces);
        else snprintf(t->name, sizeof t->name, "transpose(fused)");
    } else if (inner) {
        p->prob = inner->prob;
        p->predicted_us = t->composite_us;
        p->chosen_by = t->fused_us >= 0 ? t->strategy_by : inner->chosen_by;
        p->candidates = inner->candidates + (t->fused_us >= 0);
        p->setup_seconds = inner->setup_seconds;
        snprintf(t->name, sizeof t->name, "transpose(%s)", inner->ops->name(inner));
    } else {
        p->predicted_us = 0;
        p->chosen_by = "rule";
        p->candidates = 1;
        snprintf(t->name, sizeof t->name, "transpose(%s)", t->P == 1 ? "local" : "empty");
    }
    return PLANCOLL_SUCCESS;
}

static int check_buffers(const struct plancoll_plan_s *p, const void *in, const void *out)
{
    const struct pc_transpose *t = p->impl;
    if (in == MPI_IN_PLACE || out == MPI_IN_PLACE)
        return pc_error(PLANCOLL_ERR_IN_PLACE, "MPI_IN_PLACE is not a transpose buffer: pass in == out to transpose in place");
    if (t->es > 0 && t->in_elems > 0 && !in) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "in is NULL");
    if (t->es > 0 && t->out_elems > 0 && !out) return pc_error(PLANCOLL_ERR_NULL_BUFFER, "out is NULL");
    if (t->pieces > 0) return check_pieces(t, t->pieces, in, out);
    return PLANCOLL_SUCCESS;
}

static const char *name(const struct plancoll_plan_s *p)
{
    const struct pc_transpose *t = p->impl;
    return t->name;
}

/* The inner exchange's spec: forcing it (PLANCOLL_ALGORITHM) rebuilds this transpose's exchange. */
static int spec(const struct plancoll_plan_s *p, char *buf, size_t len)
{
    const struct pc_transpose *t = p->impl;
    if (t->fused) {
        if (len < sizeof "transpose.fused") {
            buf[0] = '\0';
            return pc_error(PLANCOLL_ERR_OVERFLOW, "plancoll_plan_spec: %zu bytes needed", sizeof "transpose.fused");
        }
        memcpy(buf, "transpose.fused", sizeof "transpose.fused");
        return PLANCOLL_SUCCESS;
    }
    if (!t->inner) return pc_error(PLANCOLL_ERR_INVALID_PLAN, "plancoll_plan_spec: transpose without an exchange");
    return t->inner->ops->spec(t->inner, buf, len);
}

static void fprint(const struct plancoll_plan_s *p, FILE *out)
{
    const struct pc_transpose *t = p->impl;
    const struct pc_layout *L = p->layout;
    fprintf(out, "plancoll plan transpose:n0=%td:n1=%td:elem=%zu:P=%d:nodes=%d\n", t->n0, t->n1, t->es, t->P, L->nnodes);
    fprintf(out, "  algorithm   %s\n", t->name);
    fprintf(out, "  this rank   %td input rows from %td of %td (block %td), %td output rows from %td of %td (block %td)\n",
            t->ln0, t->start0, t->n0, t->b0, t->ln1, t->start1, t->n1, t->b1);
    if (t->fused)
        fprintf(out, "  strategy    fused: node peers read each other's packed rows in shared memory straight into "
                     "their output (two passes; one when the input is node-shared and not the output), other nodes' "
                     "blocks sent from the packed rows and unpacked as they land\n");
    else if (t->inner)
        fprintf(out, "  strategy    composite: pack, exchange by %s (%s), unpack (three passes)\n",
                t->uniform ? "alltoall" : "alltoallv",
                t->uniform ? "every block the same size" : "n0 or n1 is not a multiple of the rank count");
    else
        fprintf(out, "  strategy    none to choose (%s)\n", t->P == 1 ? "one rank: a local transpose" : "nothing to move");
    if (t->composite_us >= 0 || t->fused_us >= 0) {
        fprintf(out, "  chosen by   %s\n", t->strategy_by ? t->strategy_by : p->chosen_by);
        char c[32] = "not a candidate", f[32] = "not a candidate";
        if (t->composite_us >= 0) snprintf(c, sizeof c, "%.2f us", t->composite_us);
        if (t->fused_us >= 0) snprintf(f, sizeof f, "%.2f us", t->fused_us);
        fprintf(out, "  predicted   composite %s, fused %s (model: exchange + local passes)\n", c, f);
        if (t->composite_measured_us >= 0)
            fprintf(out, "  measured    composite %.2f us, fused %.2f us (medians of maxima over ranks, trial buffers)\n",
                    t->composite_measured_us, t->fused_measured_us);
    }
    fprintf(out, "  local       cache-blocked transposes in %zux%zu-element tiles\n",
            t->es == 8 || t->es == 16 ? (size_t)8 : pc_transpose_tile(t->es), t->es == 8 || t->es == 16 ? (size_t)8 : pc_transpose_tile(t->es));
    if (t->probe_cached_us >= 0)
        fprintf(out, "  stores      %s into the output (this rank's probe of its output size: ordinary %.1f us, "
                     "streaming %.1f us)\n",
                t->stream_out ? "streaming" : "ordinary", t->probe_cached_us, t->probe_stream_us);
    else
        fprintf(out, "  stores      ordinary (streaming stores %s)\n",
                pc_transpose_can_stream(t->es) ? "not probed: nothing to write" : "not available for this element size");
    if (t->inner)
        fprintf(out, "  scratch     %s send side, private receive side\n",
                t->S_in_heap ? "node-shared heap (single-copy node-aware exchanges)" : "private");
    if (t->pieces > 0) {
        ptrdiff_t lo, most = 0;
        for (int k = 0; k < t->pieces; k++) {
            ptrdiff_t c;
            pc_piece_bounds(t->ln0, t->pieces, k, &lo, &c);
            if (c > most) most = c;
        }
        fprintf(out, "  pieces      %d of this rank's input rows (at most %td rows each), started one by one "
                     "(plancoll_start_piece)\n", t->pieces, most);
    }
    fprintf(out, "  in place    %s\n", p->in_place ? "yes (as planned; execute_buffers may differ)" : "no (as planned)");
    fprintf(out, "  executions  %llu\n", p->executions);
    if (t->fused && p->executions > 0)
        fprintf(out, "  last run    %s\n", pc_transpose_fused_last_in_place_reads(t->fused)
                                             ? "node peers read this rank's input in place (node-shared input: one pass)"
                                             : "this rank's rows packed into its shared slot (private input or in place: two passes)");
    if (t->inner) {
        fprintf(out, "  inner plan:\n");
        t->inner->ops->fprint(t->inner, out);
    }
}

struct pc_transpose *pc_transpose_of(const struct plancoll_plan_s *p)
{
    return p && p->ops == &transpose_ops ? p->impl : NULL;
}

static const struct pc_plan_ops transpose_ops = {
    .execute = execute,
    .start = start,
    .advance = advance,
    .check_buffers = check_buffers,
    .name = name,
    .spec = spec,
    .fprint = fprint,
    .teardown = teardown,
};
