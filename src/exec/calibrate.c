/* Calibration: the microbenchmarks that fit the machine model on the communicator's own layout, with every
 * rank taking part so that oversubscription and the emulated network are measured as the algorithms meet
 * them. Collective over the layout's communicator; bounded time; each rank keeps the element-wise maximum
 * over ranks, so every rank ends with the same model.
 *   network  k = 1 .. min(ppn) concurrent ping-pong pairs between nodes 0 and 1 at every table size (the
 *            multi-port zones), a burst of small messages (gap g) and the time inside MPI_Isend (overhead o)
 *   node     an MPI ping-pong inside node 0 (start-up and per byte), a flag ping-pong (sync), and on every
 *            node tau = 1 .. ppn concurrent copies through 1 copy (read the peer's memory) and 2 copies
 *            (write own slot, signal, the peer reads it): tau-Lop
 *   local    a blocked transpose, and each predefined (op, type) reduction loop */
#include "exec/calibrate.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exec/plan.h"
#include "exec/reduce.h"
#include "shm/layout.h"
#include "shm/nomem.h"
#include "shm/reserve.h"
#include "shm/wait.h"

#define MAX_BYTES 2097152 /* the largest table size */
#define REDUCE_BYTES 65536

struct cal {
    struct pc_layout *L;
    char *priv;                  /* MAX_BYTES private scratch */
    char *priv2;
    struct pc_node_shm area;     /* node-shared: flags line per local rank, then MAX_BYTES slot per local rank */
    char *shm;
    _Atomic uint64_t *flags;     /* local rank i's flag at flags[i * 8] */
    uint64_t seq;
    bool progress;               /* rank 0 prints a progress line (stderr is a terminal) */
};

/* Few repetitions: the tables feed a ranking, not a paper, and an oversubscribed node pays a scheduler slice
 * for every wait. */
static int reps_for(double bytes) { return bytes <= 4096 ? 15 : bytes <= 32768 ? 5 : bytes <= 262144 ? 3 : 2; }

enum { MAX_REPS = 16 };

/* The median of n samples (n <= MAX_REPS): a repetition that lost its core to another rank for a scheduler
 * slice must not set the model, or two runs on the same machine would rank candidates differently. */
static double median_of(double *v, int n)
{
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Concurrency levels measured: 1, 2 and the largest (the rows between are interpolated), so calibration costs
 * the same at 8 ranks per node as at 3. */
static bool measured_level(int level, int top) { return level <= 2 || level == top; }

/* Fills the rows between measured levels linearly in the level. */
static void fill_levels(double rows[][PC_MODEL_NSIZES], int top)
{
    for (int k = 3; k < top; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++)
            rows[k - 1][s] = rows[1][s] + (rows[top - 1][s] - rows[1][s]) * (k - 2) / (double)(top - 2);
}

static void say(struct cal *c, const char *what)
{
    if (c->progress) fprintf(stderr, "\rplancoll: calibrating %-28s", what);
}

static int global_of(const struct pc_layout *L, int node, int local)
{
    return L->node_ranks[L->node_first[node] + local];
}

/* One-way time of a ping-pong of `bytes` between this rank and peer, reps round trips; the lower rank leads. */
static int pingpong(struct cal *c, int peer, int bytes, int reps, bool lead, double *oneway)
{
    MPI_Request rq;
    double samples[MAX_REPS];
    if (reps > MAX_REPS) reps = MAX_REPS;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        if (lead) {
            PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            int err = pc_wait_layout(c->L, 1, &rq);
            if (err) return err;
            PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            err = pc_wait_layout(c->L, 1, &rq);
            if (err) return err;
        } else {
            PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            int err = pc_wait_layout(c->L, 1, &rq);
            if (err) return err;
            PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            err = pc_wait_layout(c->L, 1, &rq);
            if (err) return err;
        }
        samples[r] = (MPI_Wtime() - t0) * 1e6 / 2.0;
    }
    *oneway = median_of(samples, reps);
    return PLANCOLL_SUCCESS;
}

/* Time of one exchange of `bytes` in both directions at once with peer (both post receive and send, then wait),
 * the median over reps: how direct exchanges (pairwise, spread-out) use messages inside a node; MPICH moves
 * both directions concurrently, so a one-way ping-pong overstates their cost. */
static int exchange(struct cal *c, int peer, int bytes, int reps, double *us)
{
    MPI_Request rq[2];
    double samples[MAX_REPS];
    if (reps > MAX_REPS) reps = MAX_REPS;
    for (int r = 0; r < reps; r++) {
        double t0 = MPI_Wtime();
        PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 10, c->L->comm, &rq[0]));
        PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 10, c->L->comm, &rq[1]));
        int err = pc_wait_layout(c->L, 2, rq);
        if (err) return err;
        samples[r] = (MPI_Wtime() - t0) * 1e6;
    }
    *us = median_of(samples, reps);
    return PLANCOLL_SUCCESS;
}

/* k concurrent pairs (local rank i < k of node 0 with local rank i of node 1), every table size. */
static int measure_network(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    int kmax = L->node_sizes[0] < L->node_sizes[1] ? L->node_sizes[0] : L->node_sizes[1];
    if (kmax > PC_MODEL_MAX_PORTS) kmax = PC_MODEL_MAX_PORTS;
    m->net_ports = kmax;
    say(c, "network");
    for (int k = 1; k <= kmax; k++) {
        if (!measured_level(k, kmax)) continue;
        int err = pc_barrier_wait(L);
        if (err) return err;
        bool mine = (L->node_id == 0 || L->node_id == 1) && L->node_rank < k;
        if (!mine) continue;
        int peer = global_of(L, 1 - L->node_id, L->node_rank);
        for (int s = 0; s < PC_MODEL_NSIZES; s++) {
            double t = 0;
            err = pingpong(c, peer, (int)pc_model_sizes[s], reps_for(pc_model_sizes[s]), L->node_id == 0, &t);
            if (err) return err;
            m->net_time[k - 1][s] = t;
        }
    }
    /* Overhead and gap: local rank 0 of node 0 sends a burst of small messages to node 1, which acknowledges. */
    int err = pc_barrier_wait(L);
    if (err) return err;
    enum { BURST = 32 };
    if ((L->node_id == 0 || L->node_id == 1) && L->node_rank == 0) {
        MPI_Request rq[BURST];
        int peer = global_of(L, 1 - L->node_id, 0);
        double t0 = MPI_Wtime(), inside = 0;
        for (int i = 0; i < BURST; i++) {
            double a = MPI_Wtime();
            if (L->node_id == 0)
                PC_MPI_CHECK(MPI_Isend(c->priv + 8 * i, 8, MPI_BYTE, peer, PC_TAG_COPY + 8, L->comm, &rq[i]));
            else
                PC_MPI_CHECK(MPI_Irecv(c->priv2 + 8 * i, 8, MPI_BYTE, peer, PC_TAG_COPY + 8, L->comm, &rq[i]));
            inside += MPI_Wtime() - a;
        }
        if ((err = pc_wait_layout(L, BURST, rq))) return err;
        if (L->node_id == 1) {
            PC_MPI_CHECK(MPI_Isend(c->priv, 1, MPI_BYTE, peer, PC_TAG_COPY + 9, L->comm, &rq[0]));
        } else {
            PC_MPI_CHECK(MPI_Irecv(c->priv2, 1, MPI_BYTE, peer, PC_TAG_COPY + 9, L->comm, &rq[0]));
        }
        if ((err = pc_wait_layout(L, 1, rq))) return err;
        if (L->node_id == 0) {
            double burst = (MPI_Wtime() - t0) * 1e6;
            m->o_us = inside * 1e6 / BURST;
            m->g_us = (burst - 2 * m->net_time[0][0]) / (BURST - 1);
            if (m->g_us < m->o_us) m->g_us = m->o_us;
        }
    }
    return PLANCOLL_SUCCESS;
}

/* Fits L and G from the single-pair row (identical on every rank: run after the maximum over ranks). */
static void fit_loggp(struct pc_machine_model *m)
{
    const double *t = m->net_time[0], *x = pc_model_sizes;
    int a = PC_MODEL_NSIZES - 2, b = PC_MODEL_NSIZES - 1;
    double G = (t[b] - t[a]) / (x[b] - x[a]);
    if (!(G > 0)) G = t[b] / x[b];
    m->G_us_per_b = G;
    double L = t[0] - 2 * m->o_us - (x[0] - 1) * G;
    m->L_us = L > 0 ? L : t[0] / 2;
}

static int measure_node_p2p(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    say(c, "shared-memory messages");
    int err = pc_barrier_wait(L);
    if (err) return err;
    if (L->node_id != 0 || L->node_size < 2 || L->node_rank > 1) return PLANCOLL_SUCCESS;
    int peer = global_of(L, 0, 1 - L->node_rank);
    double small, large;
    if ((err = exchange(c, peer, 8, 15, &small))) return err;
    if ((err = exchange(c, peer, 262144, 5, &large))) return err;
    m->shm_alpha_us = small;
    m->shm_beta_us_per_b = large > small ? (large - small) / (262144 - 8) : small / 262144;
    /* a signal through shared memory: flag ping-pong between local ranks 0 and 1 */
    int reps = 15;
    _Atomic uint64_t *mine = &c->flags[8 * L->node_rank], *theirs = &c->flags[8 * (1 - L->node_rank)];
    uint64_t base = c->seq;
    double samples[MAX_REPS];
    for (int r = 1; r <= reps; r++) {
        double t0 = MPI_Wtime();
        if (L->node_rank == 0) {
            pc_flag_post(mine, base + (uint64_t)r);
            pc_flag_wait(L, theirs, base + (uint64_t)r);
        } else {
            pc_flag_wait(L, theirs, base + (uint64_t)r);
            pc_flag_post(mine, base + (uint64_t)r);
        }
        samples[r - 1] = (MPI_Wtime() - t0) * 1e6 / 2.0;
    }
    m->sync_us = median_of(samples, reps);
    return PLANCOLL_SUCCESS;
}

/* tau-Lop on every node at once: local ranks < tau copy, the others wait at the node barrier. */
static int measure_taulop(struct cal *c, struct pc_machine_model *m, int taumax)
{
    struct pc_layout *L = c->L;
    say(c, "shared-memory copies");
    m->shm_taus = taumax;
    /* Sequence numbers of the 2-copy handoff continue from the sync measurement's on every rank. */
    uint64_t seq = c->seq + 1000;
    for (int n = 1; n <= 2; n++)
        for (int tau = 1; tau <= taumax; tau++) {
            if (!measured_level(tau, taumax)) continue;
            pc_node_barrier(L);
            for (int s = 0; s < PC_MODEL_NSIZES; s++) {
                size_t bytes = (size_t)pc_model_sizes[s];
                int reps = reps_for((double)bytes);
                if (L->node_rank >= tau) {
                    seq += (uint64_t)reps;
                    continue;
                }
                int peer = (L->node_rank + 1) % tau;
                int from = tau == 1 ? (L->node_rank + 1) % L->node_size : peer;
                int prev = tau == 1 ? L->node_rank : (L->node_rank + tau - 1) % tau;
                char *own = c->shm + 64 * (size_t)L->node_size + (size_t)L->node_rank * MAX_BYTES;
                double samples[MAX_REPS];
                for (int r = 0; r < reps; r++) {
                    double t0 = MPI_Wtime();
                    seq++;
                    if (n == 1) {
                        memcpy(c->priv, c->shm + 64 * (size_t)L->node_size + (size_t)from * MAX_BYTES, bytes);
                    } else {
                        /* write own slot, signal, wait for the previous rank's signal, read its slot (tau = 1
                         * hands off to itself: the copy out still follows the signal) */
                        memcpy(own, c->priv, bytes);
                        pc_flag_post(&c->flags[8 * L->node_rank], seq);
                        pc_flag_wait(L, &c->flags[8 * prev], seq);
                        memcpy(c->priv2, c->shm + 64 * (size_t)L->node_size + (size_t)prev * MAX_BYTES, bytes);
                    }
                    samples[r] = (MPI_Wtime() - t0) * 1e6;
                }
                m->shm_time[n - 1][tau - 1][s] = median_of(samples, reps);
            }
        }
    c->seq = seq;
    return PLANCOLL_SUCCESS;
}

static void measure_local(struct cal *c, struct pc_machine_model *m)
{
    say(c, "transpose and reductions");
    /* Blocked transpose of 64 x 64 blocks of 64 bytes (the node-aware packing's access pattern). */
    enum { NB = 64, B = 64 };
    double t0 = MPI_Wtime();
    int reps = 8;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < NB; i++)
            for (int j = 0; j < NB; j++)
                memcpy(c->priv2 + ((size_t)j * NB + (size_t)i) * B, c->priv + ((size_t)i * NB + (size_t)j) * B, B);
    m->transpose_us_per_b = (MPI_Wtime() - t0) * 1e6 / ((double)reps * NB * NB * B);

    /* Every fast (op, type) loop on 64 KiB; MPI_Reduce_local (user ops) on MPI_SUM of doubles. */
    memset(c->priv, 0x3f, REDUCE_BYTES);
    memset(c->priv2, 0x3f, REDUCE_BYTES);
    int ntypes = pc_predefined_type_count();
    for (int o = 0; o < PC_MODEL_MAX_OPS; o++) {
        MPI_Op op = pc_predefined_op(o);
        if (op == MPI_OP_NULL) break;
        for (int t = 0; t < ntypes && t < PC_MODEL_MAX_TYPES; t++) {
            struct pc_reduction red;
            bool commutative;
            MPI_Datatype type = pc_predefined_type(t);
            if (pc_reduction_init(&red, op, type, &commutative) != PLANCOLL_SUCCESS || !red.fast) continue;
            int size = 0;
            MPI_Aint lb, extent;
            MPI_Type_size(type, &size);
            MPI_Type_get_extent(type, &lb, &extent);
            if (size <= 0 || extent < size) continue;
            int count = (int)(REDUCE_BYTES / extent); /* pairs (MPI_DOUBLE_INT) have holes: their extent fits */
            pc_reduce(&red, c->priv, c->priv2, count); /* warm */
            double a = MPI_Wtime();
            for (int r = 0; r < 4; r++) pc_reduce(&red, c->priv, c->priv2, count);
            m->reduce_us_per_b[o][t] = (MPI_Wtime() - a) * 1e6 / (4.0 * count * size);
        }
    }
    pc_clear_error();
    double a = MPI_Wtime();
    for (int r = 0; r < 4; r++) MPI_Reduce_local(c->priv, c->priv2, REDUCE_BYTES / 8, MPI_DOUBLE, MPI_SUM);
    m->reduce_default_us_per_b = (MPI_Wtime() - a) * 1e6 / (4.0 * REDUCE_BYTES);
}

/* The measured part of the model as one vector, for the maximum over ranks. */
enum {
    V_NET = PC_MODEL_MAX_PORTS * PC_MODEL_NSIZES,
    V_SHM = 2 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES,
    V_RED = PC_MODEL_MAX_OPS * PC_MODEL_MAX_TYPES,
    V_SCALARS = 8,
    V_ALL = V_NET + V_SHM + V_RED + V_SCALARS
};

static void to_vector(const struct pc_machine_model *m, double *v)
{
    memcpy(v, m->net_time, sizeof m->net_time);
    memcpy(v + V_NET, m->shm_time, sizeof m->shm_time);
    memcpy(v + V_NET + V_SHM, m->reduce_us_per_b, sizeof m->reduce_us_per_b);
    double *s = v + V_NET + V_SHM + V_RED;
    s[0] = m->o_us;
    s[1] = m->g_us;
    s[2] = m->shm_alpha_us;
    s[3] = m->shm_beta_us_per_b;
    s[4] = m->sync_us;
    s[5] = m->transpose_us_per_b;
    s[6] = m->reduce_default_us_per_b;
    s[7] = m->calibration_seconds;
}

static void from_vector(struct pc_machine_model *m, const double *v)
{
    memcpy(m->net_time, v, sizeof m->net_time);
    memcpy(m->shm_time, v + V_NET, sizeof m->shm_time);
    memcpy(m->reduce_us_per_b, v + V_NET + V_SHM, sizeof m->reduce_us_per_b);
    const double *s = v + V_NET + V_SHM + V_RED;
    m->o_us = s[0];
    m->g_us = s[1];
    m->shm_alpha_us = s[2];
    m->shm_beta_us_per_b = s[3];
    m->sync_us = s[4];
    m->transpose_us_per_b = s[5];
    m->reduce_default_us_per_b = s[6];
    m->calibration_seconds = s[7];
}

static int run(struct cal *c, struct pc_machine_model *m, double t0)
{
    struct pc_layout *L = c->L;
    /* Ranks that measure nothing of a kind keep zeros there; the defaults fill what nobody measured. */
    struct pc_machine_model defaults;
    pc_model_default(&defaults);
    struct pc_machine_model meas;
    memset(&meas, 0, sizeof meas);
    int taumax = L->node_size;
    int min_ppn = taumax;
    int err = pc_allreduce_wait(L, MPI_IN_PLACE, &min_ppn, 1, MPI_INT, MPI_MIN);
    if (err) return err;
    taumax = min_ppn < PC_MODEL_MAX_TAU ? min_ppn : PC_MODEL_MAX_TAU;
    if (L->nnodes > 1 && (err = measure_network(c, &meas))) return err;
    if ((err = measure_node_p2p(c, &meas))) return err;
    /* the sync ping-pong used sequence numbers up to c->seq + 30 on node 0's ranks 0 and 1 */
    c->seq += 64;
    if ((err = measure_taulop(c, &meas, taumax))) return err;
    measure_local(c, &meas);

    /* the duration goes into the maximum too: the model's text (and so its hash) must be equal on every rank */
    meas.calibration_seconds = MPI_Wtime() - t0;
    double *v = malloc(sizeof(double) * 2 * V_ALL);
    if (!v) return pc_error(PLANCOLL_ERR_NOMEM, "calibration vector");
    to_vector(&meas, v);
    err = pc_allreduce_wait(L, v, v + V_ALL, V_ALL, MPI_DOUBLE, MPI_MAX);
    if (!err) from_vector(&meas, v + V_ALL);
    free(v);
    if (err) return err;

    *m = defaults;
    if (L->nnodes > 1) {
        memcpy(m->net_time, meas.net_time, sizeof m->net_time);
        int kmax = L->node_sizes[0] < L->node_sizes[1] ? L->node_sizes[0] : L->node_sizes[1];
        m->net_ports = kmax < PC_MODEL_MAX_PORTS ? kmax : PC_MODEL_MAX_PORTS;
        fill_levels(m->net_time, m->net_ports);
        m->o_us = meas.o_us;
        m->g_us = meas.g_us;
        fit_loggp(m);
    }
    if (L->node_sizes[0] >= 2) {
        m->shm_alpha_us = meas.shm_alpha_us;
        m->shm_beta_us_per_b = meas.shm_beta_us_per_b;
        m->sync_us = meas.sync_us;
    }
    memset(m->shm_time, 0, sizeof m->shm_time);
    memcpy(m->shm_time, meas.shm_time, sizeof m->shm_time);
    m->shm_taus = taumax;
    fill_levels(m->shm_time[0], taumax);
    fill_levels(m->shm_time[1], taumax);
    m->transpose_us_per_b = meas.transpose_us_per_b;
    memcpy(m->reduce_us_per_b, meas.reduce_us_per_b, sizeof m->reduce_us_per_b);
    m->reduce_default_us_per_b = meas.reduce_default_us_per_b;
    m->calibration_seconds = meas.calibration_seconds;
    m->calibrated = true;
    pc_model_derive(m, L->nnodes);
    return PLANCOLL_SUCCESS;
}

int pc_calibrate(struct pc_layout *L, struct pc_machine_model *m)
{
    double t0 = MPI_Wtime();
    struct cal c;
    memset(&c, 0, sizeof c);
    c.L = L;
    c.area.win = MPI_WIN_NULL;
    c.progress = L->rank == 0 && isatty(2);
    /* Every rank allocates and frees the same way, so a failure anywhere is agreed below. */
    int local = PLANCOLL_SUCCESS;
    c.priv = malloc(MAX_BYTES);
    c.priv2 = malloc(MAX_BYTES);
    if (!c.priv || !c.priv2) local = pc_error(PLANCOLL_ERR_NOMEM, "calibration buffers");
    else {
        memset(c.priv, 1, MAX_BYTES);
        memset(c.priv2, 2, MAX_BYTES);
    }
    /* Collective over the communicator, and their failures agreed inside: the node barrier's slots, and the
     * node area (flags of every local rank first, a line each, then the copy slots). */
    int err = pc_layout_control(L);
    if (!err) err = pc_node_shm_alloc(L, (size_t)L->node_size * (64 + (size_t)MAX_BYTES), &c.area);
    bool mapped = !err;
    size_t failed = 0; /* the bytes this rank could not reserve */
    if (mapped) {
        c.shm = c.area.base;
        c.flags = (_Atomic uint64_t *)(void *)c.shm;
        /* This rank's flag line and copy slot have memory behind them before anyone stores (reserve.h): a full
         * /dev/shm fails the calibration (agreed below) instead of raising SIGBUS. */
        if (pc_shm_reserve(c.shm + 64 * (size_t)L->node_rank, 64) != 0 ||
            pc_shm_reserve(c.shm + 64 * (size_t)L->node_size + (size_t)L->node_rank * MAX_BYTES, MAX_BYTES) != 0)
            failed = 64 + (size_t)MAX_BYTES;
    }
    if (!err) err = pc_shm_agree_reserved(L, local, failed, "calibration's node-shared area");
    if (!err && !local) {
        /* The flag and slot of this rank may lie in a peer's part: written only once every part is reserved. */
        memset(c.shm + 64 * (size_t)L->node_rank, 0, 64);
        memset(c.shm + 64 * (size_t)L->node_size + (size_t)L->node_rank * MAX_BYTES, 3, MAX_BYTES);
        pc_node_shm_sync(&c.area);
        pc_node_barrier(L); /* every slot initialised before anyone reads it */
        pc_node_shm_sync(&c.area);
        err = run(&c, m, t0);
    }
    if (mapped) {
        pc_node_barrier(L); /* no rank of the node still reads my slot */
        pc_node_shm_free(&c.area);
    }
    free(c.priv);
    free(c.priv2);
    if (c.progress) fprintf(stderr, "\rplancoll: calibrated in %.2f s%-30s\n", MPI_Wtime() - t0, "");
    if (local) return local;
    return err;
}
