/* Calibration: the microbenchmarks that fit the machine model on the communicator's own layout, with every
 * rank taking part so that oversubscription and the emulated network are measured as the algorithms meet
 * them. Collective over the layout's communicator; bounded time; each rank keeps the element-wise maximum
 * over ranks, so every rank ends with the same model.
 *   network  k = 1 .. min(ppn) concurrent ping-pong pairs between nodes 0 and 1 at every table size (the
 *            multi-port zones), a burst of small messages (gap g) and the time inside MPI_Isend (overhead o)
 *   node     an MPI ping-pong inside node 0 (start-up and per byte), a flag ping-pong (sync), and on every
 *            node tau = 1 .. ppn concurrent copies through 1 copy (read the peer's memory) and 2 copies
 *            (write own slot, signal, the peer reads it): tau-Lop
 *   stores   local ranks 0 and 1 of node 0: one rewrites a shared area the other copied out the round before, with
 *            ordinary stores and with streaming stores, and the other copies it out again (model.h: store_normal,
 *            store_stream; only where the build has streaming stores)
 *   turn     on an oversubscribed layout only: a flag ring through every rank of each node, every node at once
 *            and nobody asleep (as in a collective), less sync per hop: the wait for a scheduler turn
 *   local    a blocked transpose, and each predefined (op, type) reduction loop
 *   check    after the consistency rules: a node exchange, tau concurrent copies and a network message at sizes
 *            between those measured, predicted by the composed model and timed as their stages time; a stage whose
 *            probe disagrees beyond the spreads is measured once more, then its figures are marked (check_model) */
#include "exec/calibrate.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "exec/plan.h"
#include "exec/reduce.h"
#include "exec/reduce_stream.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#include "shm/nomem.h"
#include "shm/reserve.h"
#include "shm/wait.h"

#define MAX_BYTES 2097152 /* the largest table size */
/* A rank's copy slot: two halves of MAX_BYTES, written by turns (the handoff's parity, measure_taulop), as a
 * plan's staging slots are double-buffered (alltoall.pap): a writer never rewrites lines its reader may still be
 * copying out. */
#define SLOT_BYTES (2 * (size_t)MAX_BYTES)
#define REDUCE_BYTES 65536

struct cal {
    struct pc_layout *L;
    char *priv;                  /* MAX_BYTES private scratch */
    char *priv2;
    struct pc_node_shm area;     /* node-shared: flags line per local rank, then SLOT_BYTES slot per local rank */
    char *shm;
    _Atomic uint64_t *flags;     /* local rank i's flag at flags[i * 8] */
    uint64_t seq;                /* the next flag value unused on every rank (flags only grow) */
    double t0;                   /* when calibration began (MPI_Wtime) */
    bool progress;               /* rank 0 prints a progress line (stderr is a terminal) */
    int host_nodes, host_cores;  /* the most nodes any host holds (emulated nodes share one), the fewest cores */
    bool run_spin;               /* MPI waits spin first (wait_running): the measuring ranks each hold a core */
};

/* Repetitions per round: few, the tables feed a ranking, not a paper, and an oversubscribed node pays a
 * scheduler slice for every wait. A figure whose spread is still above PC_MODEL_STABLE_SPREAD after a round gets
 * another round (more samples, the median and spread taken over all of them), up to MAX_ROUNDS. */
static int reps_for(double bytes) { return bytes <= 4096 ? 31 : bytes <= 32768 ? 9 : bytes <= 262144 ? 3 : 2; }

enum { MAX_ROUNDS = 4, MAX_SAMPLES = 256 };
/* A stage (one concurrency level, the node's messages, ...) stops repeating once it has taken STAGE_FACTOR times
 * its first round, or the whole calibration CALIBRATION_BUDGET_S: time is bounded whatever the machine does. */
#define STAGE_FACTOR 2.0
#define CALIBRATION_BUDGET_S 0.12
/* Differences below this are the timer's and the loop's, not the machine's: the spread of a figure is taken on
 * samples raised by it, so an 8-byte copy timed at 0.03 or 0.04 us is stable. */
#define SPREAD_FLOOR_US 0.1

/* The samples of one figure: their lower quartile sets the model (pc_model_running_cost: a repetition that lost
 * its core to another rank or process for a scheduler slice must not, and the median does as soon as half of them
 * do), the interquartile ratio says how far the figure can be trusted. */
struct series {
    double v[MAX_SAMPLES];
    int n;
};

static void series_add(struct series *x, double v)
{
    if (x->n < MAX_SAMPLES) x->v[x->n++] = v;
}

/* The figure a series gives the model. */
static double series_figure(struct series *x) { return pc_model_running_cost(x->v, x->n); }

static double series_spread(struct series *x)
{
    if (!x->n) return 0;
    double v[MAX_SAMPLES];
    for (int i = 0; i < x->n; i++) v[i] = x->v[i] + SPREAD_FLOOR_US;
    return pc_model_spread(v, x->n);
}

/* The maximum over the ranks of the layout of v[0..n), in place. A rank that measured nothing (idle) waits here
 * while the others measure: it sleeps between tests instead of yielding, so that with more ranks than cores the
 * measuring ranks keep the cores (a flag ping-pong that waits for an idle rank's turn measures the scheduler, 0.3 us
 * one run and 80 us the next). */
static int agree_max_idle(struct cal *c, bool idle, double *v, int n)
{
    MPI_Request rq;
    PC_MPI_CHECK(pc_mpi_iallreduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_MAX, c->L->comm, &rq));
    if (!idle) return pc_wait_layout(c->L, 1, &rq);
    /* The pause doubles up to 0.32 ms: every wake-up can take a core from a measuring rank for a moment, and
     * a round lasts milliseconds, so a few late tests cost less than a hundred early ones. */
    int done = 0;
    long pause_ns = 20000;
    for (;;) {
        PC_MPI_CHECK(pc_mpi_test(&rq, &done, MPI_STATUS_IGNORE));
        if (done) return PLANCOLL_SUCCESS;
        struct timespec pause = {0, pause_ns};
        nanosleep(&pause, NULL);
        if (pause_ns < 160000) pause_ns *= 2;
    }
}

/* After a round of a stage: the worst spread of each of n entries over the ranks (ranks that measured nothing
 * give 0) and the time taken, agreed by every rank of the layout, so all take the same decision. need[i]: entry i
 * is still unstable; *more: another round runs (some entry unstable, rounds and time left). */
enum { ROUND_MAX_ENTRIES = PC_MODEL_NSIZES + 1 }; /* the most a stage has: the node's messages at every size + sync */
static int another_round(struct cal *c, bool idle, const double *spread, int n, int round, double stage_t0,
                         double *first_round, bool *need, bool *more)
{
    double v[ROUND_MAX_ENTRIES + 2];
    if (n < 0 || n > ROUND_MAX_ENTRIES) return pc_error(PLANCOLL_ERR_OVERFLOW, "calibration stage of %d figures", n);
    for (int i = 0; i < n; i++) v[i] = spread[i];
    double now = MPI_Wtime();
    v[n] = now - stage_t0;
    v[n + 1] = now - c->t0;
    int err = agree_max_idle(c, idle, v, n + 2);
    if (err) return err;
    if (round == 0) *first_round = v[n];
    bool any = false;
    for (int i = 0; i < n; i++) {
        need[i] = v[i] > PC_MODEL_STABLE_SPREAD;
        any = any || need[i];
    }
    *more = any && round + 1 < MAX_ROUNDS && v[n] < STAGE_FACTOR * *first_round && v[n + 1] < CALIBRATION_BUDGET_S;
    return PLANCOLL_SUCCESS;
}

/* The scheduler-turn stages (measure_turn, measure_mpi_turn) time waits whose samples are spread by nature (most a
 * few microseconds, some a scheduler slice): their spread never falls below PC_MODEL_STABLE_SPREAD, so the rounds
 * of another_round would stop on the calibration's budget, after one round of 15-31 samples, and the figure (a mean
 * or a quartile of a two-mode sample) moved 2-5x between calibrations. They take rounds until TURN_SAMPLES samples
 * instead, bounded by TURN_STAGE_S of their own whatever the budget (a round costs about a millisecond here; a
 * host whose every turn is a slice stops on time). After a round, agreed by every rank: *more. */
enum { TURN_SAMPLES = 120 };
#define TURN_STAGE_S 0.04
static int another_turn_round(struct cal *c, bool idle, int samples, double stage_t0, bool *more)
{
    double v[2] = {samples < TURN_SAMPLES ? 1.0 : 0.0, MPI_Wtime() - stage_t0};
    int err = agree_max_idle(c, idle, v, 2);
    if (err) return err;
    *more = v[0] > 0 && v[1] < TURN_STAGE_S;
    return PLANCOLL_SUCCESS;
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

/* A flag wait as between two ranks that both hold a core: it spins (no yield, no system call) for up to
 * RUN_SPIN_US, then waits as the collectives do (pc_flag_wait: yielding when oversubscribed). The figures timed
 * with it (sync, the 2-copy handoff) are the signal between running ranks; what a wait costs when the partner
 * has no core is the scheduler turn (turn_us), measured apart. A yield in the loop would add a system call per
 * test, and hand the core to whichever rank is runnable. */
#define RUN_SPIN_US 20.0
static void flag_wait_running(const struct pc_layout *L, _Atomic uint64_t *flag, uint64_t seq)
{
    double until = 0;
    for (unsigned i = 0; atomic_load_explicit(flag, memory_order_acquire) < seq; i++) {
        if ((i & 63) != 63) continue;
        double now = MPI_Wtime();
        if (until == 0) until = now + RUN_SPIN_US * 1e-6;
        else if (now > until) {
            pc_flag_wait(L, flag, seq);
            return;
        }
    }
}

/* Puts this rank on the index-th CPU it may run on, *saved getting the mask to restore (unpin_cpu); false when it
 * may run on fewer than index + 1 CPUs (bound by the user: left alone) or the system does not say. The pair of
 * ranks timing a signal or a message inside a node takes indices 0 and 1, so both hold a core of their own: left
 * to the scheduler on a loaded host, both may share one core, and every handoff then costs a context switch (8 us
 * instead of 0.1 us, which run it is depends on where the scheduler put them). */
static bool pin_cpu(int index, cpu_set_t *saved)
{
#ifdef __linux__
    if (sched_getaffinity(0, sizeof *saved, saved) != 0 || CPU_COUNT(saved) <= index) return false;
    for (int cpu = 0, seen = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, saved) || seen++ < index) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        return sched_setaffinity(0, sizeof one, &one) == 0;
    }
#else
    (void)index;
    (void)saved;
#endif
    return false;
}

static void unpin_cpu(bool pinned, const cpu_set_t *saved)
{
#ifdef __linux__
    if (pinned) sched_setaffinity(0, sizeof *saved, saved);
#else
    (void)pinned;
    (void)saved;
#endif
}

/* MPI waits of the measuring ranks: as flag_wait_running when c->run_spin (they hold a core each: pin_cpu), else
 * as the collectives wait. The spin lasts RUN_SPIN_MPI_US: a 256 KiB exchange inside a node takes some 50-100 us
 * with both ranks running, and a yield in its middle hands the core to whatever else is runnable on the host. */
#define RUN_SPIN_MPI_US 200.0
static int wait_running(struct cal *c, int n, MPI_Request *rq)
{
    MPI_Status status[32]; /* n <= 32 (the o/g burst) */
    /* not under SMPI: a spin there holds no core, and MPI_Testall and MPI_Wtime hardly move the simulated clock */
    if (!PC_MPI_SIMULATED && c->run_spin && n <= 32) {
        double until = MPI_Wtime() + RUN_SPIN_MPI_US * 1e-6;
        int done = 0;
        do {
            PC_MPI_CHECK(MPI_Testall(n, rq, &done, status));
            if (done) return PLANCOLL_SUCCESS;
        } while (MPI_Wtime() < until);
    }
    return pc_wait_layout(c->L, n, rq);
}

/* warm + reps round trips of a ping-pong of `bytes` between this rank and peer (the lower rank leads); each one-way
 * time after the first warm goes into x. The first round of a stage starts with an untimed repetition (warm = 1):
 * the first touch of a size's buffers, pages and code took 3-6 times the steady time (2 MiB copies: 400-650 us,
 * then 160, 110, 95), and with two or three samples a round the figure depended on how many rounds ran. */
static int pingpong(struct cal *c, int peer, int bytes, int reps, int warm, bool lead, struct series *x)
{
    MPI_Request rq;
    for (int r = 0; r < warm + reps; r++) {
        double t0 = MPI_Wtime();
        if (lead) {
            PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            int err = wait_running(c, 1, &rq);
            if (err) return err;
            PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            err = wait_running(c, 1, &rq);
            if (err) return err;
        } else {
            PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            int err = wait_running(c, 1, &rq);
            if (err) return err;
            PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 7, c->L->comm, &rq));
            err = wait_running(c, 1, &rq);
            if (err) return err;
        }
        if (r >= warm) series_add(x, (MPI_Wtime() - t0) * 1e6 / 2.0);
    }
    return PLANCOLL_SUCCESS;
}

/* reps exchanges of `bytes` in both directions at once with peer (both post receive and send, then wait): how
 * direct exchanges (pairwise, spread-out) use messages inside a node; MPICH moves both directions concurrently,
 * so a one-way ping-pong overstates their cost. */
static int exchange(struct cal *c, int peer, int bytes, int reps, int warm, struct series *x)
{
    MPI_Request rq[2];
    for (int r = 0; r < warm + reps; r++) {
        double t0 = MPI_Wtime();
        PC_MPI_CHECK(MPI_Irecv(c->priv2, bytes, MPI_BYTE, peer, PC_TAG_COPY + 10, c->L->comm, &rq[0]));
        PC_MPI_CHECK(MPI_Isend(c->priv, bytes, MPI_BYTE, peer, PC_TAG_COPY + 10, c->L->comm, &rq[1]));
        int err = wait_running(c, 2, rq);
        if (err) return err;
        if (r >= warm) series_add(x, (MPI_Wtime() - t0) * 1e6);
    }
    return PLANCOLL_SUCCESS;
}

/* MPI's protocol switch (model.h: net_step_low_b/high_b between nodes, shm_step_* inside one), by the pair that
 * measured the row: where that row jumps between two sampled sizes (the large messages' regime, extended down to
 * the smaller size with its own per-byte slope, costs more than twice the smaller size's time there: a start-up
 * appeared in between), messages at sizes between them, halving the interval geometrically, each classed by the
 * regime whose prediction it is nearer: ping-pongs (the network's row), or exchanges both ways when both_ways (the
 * node's row, timed so). The lead decides and sends each size to its peer first (0 ends), so both run the same
 * sizes. Sets *low and *high on the lead (0 when no jump), leaves them 0 on the peer. */
static int locate_protocol_step(struct cal *c, int peer, bool lead, bool both_ways, const double row[PC_MODEL_NSIZES],
                                double *low, double *high)
{
    enum { HALVINGS = 7 };
    const double *x = pc_model_sizes;
    const int last = PC_MODEL_NSIZES - 1;
    int at = -1;
    double slope_up = 0, slope_low = 0;
    for (int s = 0; lead && s + 2 <= last && at < 0; s++) {
        if (row[s] <= 0 || row[s + 1] <= 0 || row[s + 2] <= 0) continue;
        double up = (row[s + 2] - row[s + 1]) / (x[s + 2] - x[s + 1]);
        if (up < 0) up = 0;
        if (row[s + 1] - (x[s + 1] - x[s]) * up > 2 * row[s]) {
            at = s;
            slope_up = up;
            slope_low = s > 0 && row[s] > row[s - 1] ? (row[s] - row[s - 1]) / (x[s] - x[s - 1]) : 0;
        }
    }
    double lo = at >= 0 ? x[at] : 0, hi = at >= 0 ? x[at + 1] : 0;
    for (int i = 0;; i++) {
        int64_t size = 0;
        if (lead && at >= 0 && i < HALVINGS) size = (int64_t)sqrt(lo * hi);
        MPI_Request rq;
        if (lead)
            PC_MPI_CHECK(MPI_Isend(&size, 1, MPI_INT64_T, peer, PC_TAG_COPY + 11, c->L->comm, &rq));
        else
            PC_MPI_CHECK(MPI_Irecv(&size, 1, MPI_INT64_T, peer, PC_TAG_COPY + 11, c->L->comm, &rq));
        int err = wait_running(c, 1, &rq);
        if (err) return err;
        if (size <= 0) break;
        struct series t;
        memset(&t, 0, sizeof t);
        err = both_ways ? exchange(c, peer, (int)size, reps_for((double)size), 1, &t)
                        : pingpong(c, peer, (int)size, reps_for((double)size), 1, lead, &t);
        if (err) return err;
        if (!lead) continue;
        double got = series_figure(&t);
        double small = row[at] + (size - x[at]) * slope_low, large = row[at + 1] - (x[at + 1] - size) * slope_up;
        if (got > 0.5 * (small + large))
            hi = (double)size;
        else
            lo = (double)size;
    }
    *low = lead ? lo : 0;
    *high = lead ? hi : 0;
    return PLANCOLL_SUCCESS;
}

/* k concurrent pairs (local rank i < k of node 0 with local rank i of node 1), every table size, each size
 * repeated in rounds until stable; with the single pair, the protocol switch (locate_protocol_step). */
static int measure_network(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    int kmax = L->node_sizes[0] < L->node_sizes[1] ? L->node_sizes[0] : L->node_sizes[1];
    if (kmax > PC_MODEL_MAX_PORTS) kmax = PC_MODEL_MAX_PORTS;
    m->net_ports = kmax;
    say(c, "network");
    int err;
    for (int k = 1; k <= kmax; k++) {
        if (!measured_level(k, kmax)) continue;
        if ((err = pc_barrier_wait(L))) return err;
        bool mine = (L->node_id == 0 || L->node_id == 1) && L->node_rank < k;
        int peer = mine ? global_of(L, 1 - L->node_id, L->node_rank) : -1;
        /* the pairs spin and hold a CPU each while the host has one for every measuring rank (nodes 0 and 1 on
         * one host when nodes are emulated) */
        bool shared = c->host_nodes > 1;
        cpu_set_t saved;
        c->run_spin = mine && (shared ? 2 * k : k) <= c->host_cores;
        bool pinned = c->run_spin && pin_cpu(shared ? L->node_id * k + L->node_rank : L->node_rank, &saved);
        struct series x[PC_MODEL_NSIZES];
        memset(x, 0, sizeof x);
        bool need[PC_MODEL_NSIZES], more = true;
        for (int s = 0; s < PC_MODEL_NSIZES; s++) need[s] = true;
        double stage_t0 = MPI_Wtime(), first = 0, spread[PC_MODEL_NSIZES];
        for (int round = 0; more; round++) {
            for (int s = 0; s < PC_MODEL_NSIZES && mine; s++)
                if (need[s] && (err = pingpong(c, peer, (int)pc_model_sizes[s], reps_for(pc_model_sizes[s]),
                                               round == 0, L->node_id == 0, &x[s])))
                    break;
            if (err) break;
            for (int s = 0; s < PC_MODEL_NSIZES; s++) spread[s] = mine ? series_spread(&x[s]) : 0;
            if ((err = another_round(c, !mine, spread, PC_MODEL_NSIZES, round, stage_t0, &first, need, &more))) break;
        }
        for (int s = 0; s < PC_MODEL_NSIZES && mine && !err; s++) {
            m->net_time[k - 1][s] = series_figure(&x[s]);
            m->net_spread[k - 1][s] = spread[s];
        }
        if (!err && k == 1 && mine)
            err = locate_protocol_step(c, peer, L->node_id == 0, false, m->net_time[0], &m->net_step_low_b,
                                       &m->net_step_high_b);
        c->run_spin = false;
        unpin_cpu(pinned, &saved);
        if (err) return err;
    }
    /* Overhead and gap: local rank 0 of node 0 sends a burst of small messages to node 1, which acknowledges;
     * the burst is repeated and the lower quartile taken. The pair holds a CPU each, as the single pair above. */
    enum { BURST = 32, BURSTS = 5 };
    bool mine = (L->node_id == 0 || L->node_id == 1) && L->node_rank == 0;
    int peer = mine ? global_of(L, 1 - L->node_id, 0) : -1;
    cpu_set_t saved;
    c->run_spin = mine && (c->host_nodes > 1 ? 2 : 1) <= c->host_cores;
    bool pinned = c->run_spin && pin_cpu(c->host_nodes > 1 ? L->node_id : 0, &saved);
    struct series o, g;
    memset(&o, 0, sizeof o);
    memset(&g, 0, sizeof g);
    bool need[2] = {true, true}, more = true;
    double stage_t0 = MPI_Wtime(), first = 0, spread[2] = {0, 0};
    if ((err = pc_barrier_wait(L))) return err;
    for (int round = 0; more; round++) {
        for (int b = 0; b < BURSTS && mine; b++) {
            MPI_Request rq[BURST];
            double t0 = MPI_Wtime(), inside = 0;
            for (int i = 0; i < BURST; i++) {
                double a = MPI_Wtime();
                if (L->node_id == 0)
                    PC_MPI_CHECK(MPI_Isend(c->priv + 8 * i, 8, MPI_BYTE, peer, PC_TAG_COPY + 8, L->comm, &rq[i]));
                else
                    PC_MPI_CHECK(MPI_Irecv(c->priv2 + 8 * i, 8, MPI_BYTE, peer, PC_TAG_COPY + 8, L->comm, &rq[i]));
                inside += MPI_Wtime() - a;
            }
            if ((err = wait_running(c, BURST, rq))) break;
            if (L->node_id == 1)
                PC_MPI_CHECK(MPI_Isend(c->priv, 1, MPI_BYTE, peer, PC_TAG_COPY + 9, L->comm, &rq[0]));
            else
                PC_MPI_CHECK(MPI_Irecv(c->priv2, 1, MPI_BYTE, peer, PC_TAG_COPY + 9, L->comm, &rq[0]));
            if ((err = wait_running(c, 1, rq))) break;
            if (L->node_id == 0) {
                double burst = (MPI_Wtime() - t0) * 1e6, ov = inside * 1e6 / BURST;
                double gap = (burst - 2 * m->net_time[0][0]) / (BURST - 1);
                series_add(&o, ov);
                series_add(&g, gap < ov ? ov : gap);
            }
        }
        if (err) break;
        spread[0] = L->node_id == 0 && mine ? series_spread(&o) : 0;
        spread[1] = L->node_id == 0 && mine ? series_spread(&g) : 0;
        if ((err = another_round(c, !mine, spread, 2, round, stage_t0, &first, need, &more))) break;
    }
    c->run_spin = false;
    unpin_cpu(pinned, &saved);
    if (err) return err;
    if (L->node_id == 0 && mine) {
        m->o_us = series_figure(&o);
        m->g_us = series_figure(&g);
        m->spread[PC_FIG_O] = spread[0];
        m->spread[PC_FIG_G] = spread[1];
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

/* MPI messages inside node 0 (exchanges of every table size between local ranks 0 and 1: the row shm_msg_time,
 * and from its 8 B and 256 KiB entries the start-up and per-byte line) and a flag ping-pong between them (sync),
 * in rounds until stable. Sequence numbers of the flags start at c->seq; every rank advances c->seq past all of
 * them. */
static int measure_node_p2p(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    say(c, "shared-memory messages");
    int err = pc_barrier_wait(L);
    if (err) return err;
    bool mine = L->node_id == 0 && L->node_size >= 2 && L->node_rank <= 1;
    int peer = mine ? global_of(L, 0, 1 - L->node_rank) : -1;
    enum { SMALL = 0, LARGE = 5, SYNC = PC_MODEL_NSIZES, N, SYNC_REPS = 63 };
    _Static_assert(LARGE < PC_MODEL_NSIZES, "the line's large size is a table size");
    struct series x[N];
    memset(x, 0, sizeof x);
    bool need[N], more = true;
    double stage_t0 = MPI_Wtime(), first = 0, spread[N] = {0};
    for (int i = 0; i < N; i++) need[i] = true;
    uint64_t seq = c->seq;
    cpu_set_t saved;
    bool pinned = mine && pin_cpu(L->node_rank, &saved);
    c->run_spin = pinned;
    for (int round = 0; more; round++) {
        for (int s = 0; s < PC_MODEL_NSIZES && mine && !err; s++)
            if (need[s]) err = exchange(c, peer, (int)pc_model_sizes[s], s == LARGE ? 9 : reps_for(pc_model_sizes[s]),
                                        round == 0, &x[s]);
        if (err) break;
        /* a signal through shared memory: flag ping-pong between local ranks 0 and 1, both running (the others
         * sleep in another_round); many round trips, since each is well under a microsecond */
        if (mine && need[SYNC]) {
            _Atomic uint64_t *flag = &c->flags[8 * L->node_rank], *theirs = &c->flags[8 * (1 - L->node_rank)];
            for (int r = 1; r <= SYNC_REPS; r++) {
                double t0 = MPI_Wtime();
                if (L->node_rank == 0) {
                    pc_flag_post(flag, seq + (uint64_t)r);
                    flag_wait_running(L, theirs, seq + (uint64_t)r);
                } else {
                    flag_wait_running(L, theirs, seq + (uint64_t)r);
                    pc_flag_post(flag, seq + (uint64_t)r);
                }
                series_add(&x[SYNC], (MPI_Wtime() - t0) * 1e6 / 2.0);
            }
        }
        seq += SYNC_REPS + 1;
        for (int i = 0; i < N; i++) spread[i] = mine ? series_spread(&x[i]) : 0;
        if ((err = another_round(c, !mine, spread, N, round, stage_t0, &first, need, &more))) break;
    }
    if (!err && mine) {
        for (int s = 0; s < PC_MODEL_NSIZES; s++) m->shm_msg_time[s] = series_figure(&x[s]);
        err = locate_protocol_step(c, peer, L->node_rank == 0, true, m->shm_msg_time, &m->shm_step_low_b,
                                   &m->shm_step_high_b);
    }
    c->run_spin = false;
    unpin_cpu(pinned, &saved);
    if (err) return err;
    c->seq = seq + 1;
    if (!mine) return PLANCOLL_SUCCESS;
    double small = series_figure(&x[SMALL]), large = series_figure(&x[LARGE]);
    const double span = pc_model_sizes[LARGE] - pc_model_sizes[SMALL];
    m->shm_alpha_us = small;
    m->shm_beta_us_per_b = large > small ? (large - small) / span : small / pc_model_sizes[LARGE];
    m->sync_us = series_figure(&x[SYNC]);
    m->spread[PC_FIG_SHM_ALPHA] = spread[SMALL];
    /* the other sizes' spreads count as the per-byte figure's: the row stands or falls with them */
    m->spread[PC_FIG_SHM_BETA] = 0;
    for (int s = 0; s < PC_MODEL_NSIZES; s++)
        if (s != SMALL && spread[s] > m->spread[PC_FIG_SHM_BETA]) m->spread[PC_FIG_SHM_BETA] = spread[s];
    m->spread[PC_FIG_SYNC] = spread[SYNC];
    return PLANCOLL_SUCCESS;
}

/* Rewriting lines another core read last (model.h: store_normal_us_per_b, store_stream_us_per_b), the pattern of
 * every node-shared data path (the hierarchical allreduces' result and hand-over areas, the node-aware alltoalls'
 * and aggregated alltoallv's staging slots): local ranks 0 and 1 of node 0, pinned to a CPU each as the node's
 * signal is timed (measure_node_p2p), so that the pair sits on two cores as the host placed them. One sample is a
 * round in which both ranks do what an execution makes them do, at the same time: each writes an area of its own
 * slot (ordinary stores, or streaming ones and SFENCE), posts its flag, copies the other's area out to private
 * memory once that one is posted, and posts again; the round ends when both have read. Both the fetch of each line
 * back from the reader's core (ordinary stores) and the reader's cache misses after streaming stores are in the
 * round, and so is the two cores' contention for the shared cache and memory that a single writer would not see:
 * timed with one writer and an idle partner, the streaming mode came out cheaper at 1 MiB whichever way the host
 * placed the cores, while allreduce.dpml at 2 ranks, both ranks writing at once, ran 2x faster with ordinary stores
 * at 1-2.4 MB when the cores shared a cache. The two modes alternate sample by sample, so that a change of load or
 * placement during the stage hits both alike; per byte of one area. At each of pc_store_sizes: 1 MiB (a vector's
 * result area larger than a core's private caches), 16 KiB and 256 B (which the two cores' caches hold: there an
 * ordinary store's line comes from the other core's cache, while a streaming store sends it to memory, drains
 * before the flag and leaves the reader a miss, a latency small staged blocks feel). */
static int measure_stores(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    if (!PC_STREAM_STORES) return PLANCOLL_SUCCESS; /* no streaming stores: nothing to choose, no term */
    say(c, "stores into shared lines");
    int err = pc_barrier_wait(L);
    if (err) return err;
    bool mine = L->node_id == 0 && L->node_size >= 2 && L->node_rank <= 1;
    /* mode = 2 size + kind (kind 0 ordinary, 1 streaming), sizes as pc_store_sizes */
    enum { N = 2 * PC_STORE_SIZES, REPS = 5 };
    struct series x[N];
    memset(x, 0, sizeof x);
    bool need[N], more = true;
    double stage_t0 = MPI_Wtime(), first = 0, spread[N];
    for (int i = 0; i < N; i++) need[i] = true, spread[i] = 0;
    uint64_t seq = c->seq;
    cpu_set_t saved;
    bool pinned = mine && pin_cpu(L->node_rank, &saved);
    char *slots = c->shm + 64 * (size_t)L->node_size;
    const int me = mine ? L->node_rank : 0, other = mine ? 1 - me : 0; /* the pair, local ranks 0 and 1 */
    char *own = slots + (size_t)me * SLOT_BYTES, *theirs = slots + (size_t)other * SLOT_BYTES;
    _Atomic uint64_t *my_flag = &c->flags[8 * me], *their_flag = &c->flags[8 * other];
    for (int round = 0; more; round++) {
        const int warm = round == 0 ? 1 : 0; /* one untimed round of each mode: first touch of the buffers */
        for (int r = 0; r < warm + REPS; r++)
            for (int mode = 0; mode < N; mode++) {
                seq += 2; /* written, read: every rank alike, skipped or not (need is agreed) */
                if (!need[mode] && r >= warm) continue;
                if (!mine) continue;
                const size_t bytes = (size_t)pc_store_sizes[mode / 2];
                double t0 = MPI_Wtime();
                if (mode % 2) {
                    pc_stream_copy(own, c->priv, bytes);
                    pc_stream_fence();
                } else {
                    memcpy(own, c->priv, bytes);
                }
                pc_flag_post(my_flag, seq - 1);
                flag_wait_running(L, their_flag, seq - 1);
                memcpy(c->priv2, theirs, bytes);
                pc_flag_post(my_flag, seq);
                flag_wait_running(L, their_flag, seq);
                if (me == 0 && r >= warm) series_add(&x[mode], (MPI_Wtime() - t0) * 1e6 / (double)bytes);
            }
        for (int i = 0; i < N; i++) spread[i] = mine && L->node_rank == 0 ? series_spread(&x[i]) : 0;
        if ((err = another_round(c, !mine, spread, N, round, stage_t0, &first, need, &more))) break;
    }
    unpin_cpu(pinned, &saved);
    if (err) return err;
    c->seq = seq + 1;
    if (!mine || L->node_rank != 0) return PLANCOLL_SUCCESS;
    for (int i = 0; i < PC_STORE_SIZES - 1; i++) {
        m->store_small_normal_us_per_b[i] = series_figure(&x[2 * i]);
        m->store_small_stream_us_per_b[i] = series_figure(&x[2 * i + 1]);
    }
    m->store_normal_us_per_b = series_figure(&x[2 * PC_STORE_SIZES - 2]);
    m->store_stream_us_per_b = series_figure(&x[2 * PC_STORE_SIZES - 1]);
    return PLANCOLL_SUCCESS;
}

/* tau-Lop on every node at once: local ranks < tau copy, the others wait; each level in rounds until stable.
 * Sequence numbers of the 2-copy handoff continue from c->seq on every rank alike. */
static int measure_taulop(struct cal *c, struct pc_machine_model *m, int taumax)
{
    struct pc_layout *L = c->L;
    say(c, "shared-memory copies");
    m->shm_taus = taumax;
    uint64_t seq = c->seq;
    const int host_nodes = c->host_nodes, host_cores = c->host_cores;
    int err = PLANCOLL_SUCCESS;
    /* pass 0: one copy; 1: two copies, the first in ordinary stores; 2: the same with streaming stores (model.h:
     * shm_stream_time), where the target has them */
    for (int pass = 0; pass < (PC_STREAM_STORES ? 3 : 2); pass++)
        for (int tau = 1; tau <= taumax; tau++) {
            const int n = pass == 0 ? 1 : 2;
            const bool stream = pass == 2;
            if (!measured_level(tau, taumax)) continue;
            /* Emulated nodes that share a host, with more copying ranks than the host has cores, take turns:
             * each node's level is then tau ranks on cores of their own, as on a node of its own (the wait for
             * a core is the scheduler turn's figure, turn_us). Every rank runs every turn's rounds alike. */
            int turns = host_nodes > 1 && tau * host_nodes > host_cores ? L->nnodes : 1;
            for (int turn = 0; turn < turns; turn++) {
                pc_node_barrier(L);
                bool mine = L->node_rank < tau && (turns == 1 || L->node_id == turn);
                int peer = (L->node_rank + 1) % tau;
                int from = tau == 1 ? (L->node_rank + 1) % L->node_size : peer;
                int prev = tau == 1 ? L->node_rank : (L->node_rank + tau - 1) % tau;
                /* the handoff's wait spins first (flag_wait_running) while every copying rank of the host can have a
                 * core, and then each holds a CPU of its own (pin_cpu, as in measure_node_p2p); beyond, the ring waits
                 * yielding as the collectives do */
                int copying = turns == 1 ? tau * host_nodes : tau;
                bool spin = copying <= host_cores;
                cpu_set_t saved;
                int cpu = (turns == 1 ? L->node_id % host_nodes : 0) * tau + L->node_rank;
                bool pinned = spin && tau >= 2 && mine && pin_cpu(cpu, &saved);
                char *slots = c->shm + 64 * (size_t)L->node_size;
                char *own = slots + (size_t)L->node_rank * SLOT_BYTES;
                struct series x[PC_MODEL_NSIZES];
                memset(x, 0, sizeof x);
                bool need[PC_MODEL_NSIZES], more = true;
                for (int s = 0; s < PC_MODEL_NSIZES; s++) need[s] = true;
                double stage_t0 = MPI_Wtime(), first = 0, spread[PC_MODEL_NSIZES];
                for (int round = 0; more; round++) {
                    for (int s = 0; s < PC_MODEL_NSIZES; s++) {
                        if (!need[s]) continue;
                        size_t bytes = (size_t)pc_model_sizes[s];
                        /* A 2-copy sample times `batch` handoffs in a row: in a ring the ranks fall into step so that
                         * one handoff finds the previous rank's signal posted and the next waits for it, and single
                         * handoffs alternate between the two (a median between them flips from run to run). Where
                         * the ring cannot run at once (!spin), the waits are scheduler turns, which turn_us charges
                         * apart: single handoffs, and the lower quartile keeps those that found the signal. */
                        int reps = reps_for((double)bytes), batch = n == 1 || !spin ? 1 : bytes <= 32768 ? 4 : 2;
                        /* untimed first samples (warm-up, as in pingpong; two for the large copies, which take a
                         * few repetitions to reach their steady time), on every rank alike */
                        int warm = round > 0 ? 0 : bytes >= 262144 ? 2 : 1;
                        reps += warm;
                        if (!mine) {
                            seq += (uint64_t)(reps * batch);
                            continue;
                        }
                        for (int r = 0; r < reps; r++) {
                            double t0 = MPI_Wtime();
                            for (int b = 0; b < batch; b++) {
                                seq++;
                                if (n == 1) {
                                    memcpy(c->priv, slots + (size_t)from * SLOT_BYTES, bytes);
                                } else {
                                    /* write own slot, signal, wait for the previous rank's signal, read its slot
                                     * (tau = 1 hands off to itself: the copy out still follows the signal) */
                                    /* the half of this handoff's parity: the reader may still be copying
                                     * the other half out (nothing waits for it), and a rewrite of the lines
                                     * it reads would bounce them between the two cores, a cost no
                                     * double-buffered plan pays (7-10x the handoff at 256 KiB-2 MiB with the
                                     * two cores placed far apart) */
                                    const size_t half = (size_t)(seq & 1) * MAX_BYTES;
                                    if (stream) {
                                        pc_stream_copy(own + half, c->priv, bytes);
                                        pc_stream_fence();
                                    } else {
                                        memcpy(own + half, c->priv, bytes);
                                    }
                                    pc_flag_post(&c->flags[8 * L->node_rank], seq);
                                    if (spin) flag_wait_running(L, &c->flags[8 * prev], seq);
                                    else pc_flag_wait(L, &c->flags[8 * prev], seq);
                                    memcpy(c->priv2, slots + (size_t)prev * SLOT_BYTES + half, bytes);
                                }
                            }
                            if (r >= warm) series_add(&x[s], (MPI_Wtime() - t0) * 1e6 / batch);
                        }
                    }
                    for (int s = 0; s < PC_MODEL_NSIZES; s++) spread[s] = mine ? series_spread(&x[s]) : 0;
                    if ((err = another_round(c, !mine, spread, PC_MODEL_NSIZES, round, stage_t0, &first, need, &more)))
                        break;
                }
                unpin_cpu(pinned, &saved);
                if (err) return err;
                for (int s = 0; s < PC_MODEL_NSIZES && mine; s++) {
                    (stream ? m->shm_stream_time : m->shm_time[n - 1])[tau - 1][s] = series_figure(&x[s]);
                    (stream ? m->shm_stream_spread : m->shm_spread[n - 1])[tau - 1][s] = spread[s];
                }
            }
        }
    c->seq = seq + 1;
    return PLANCOLL_SUCCESS;
}

/* The scheduler turn (model.h: turn_us), on a layout where some host holds more ranks than cores. Every node
 * passes a token round a flag ring of all its ranks (local rank i waits for rank i - 1's flag, yielding as the
 * collectives' waits do, then posts its own), all nodes at once and no rank asleep, so the host's run queues are
 * as full as in a collective. Every rank of the ring times each hop into it, from the previous rank's post (its
 * time stamped next to the flag) to its own wake-up: a hop that also waited for another program's slice spoils
 * one sample, not a whole round's. The hops' lower quartile (series_figure: such a hop says how loaded the host is
 * just then, not what our own ranks cost each other) is what one dependency round costs with the turn;
 * calibration keeps it less sync_us (the same signal without the turn, measure_node_p2p). Ranks alone on their
 * node time nothing but wait yielding, loading the host like the others. Sequence numbers continue from c->seq on
 * every rank alike. */
static uint64_t host_clock_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int measure_turn(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    say(c, "scheduler turns");
    int err = pc_barrier_wait(L);
    if (err) return err;
    const int ns = L->node_size, me = L->node_rank;
    const bool ring = ns >= 2, timer = ring;
    enum { REPS = 31 };
    struct series x;
    memset(&x, 0, sizeof x);
    bool more = true;
    double stage_t0 = MPI_Wtime(), spread = 0;
    uint64_t seq = c->seq;
    _Atomic uint64_t *mine = &c->flags[8 * me], *before = &c->flags[8 * ((me + ns - 1) % ns)];
    /* next to each flag, in its cache line, the time of its last post (CLOCK_MONOTONIC: one clock for the host) */
    _Atomic uint64_t *my_stamp = mine + 1, *before_stamp = before + 1;
    for (int round = 0; more; round++) {
        for (int r = 1; r <= REPS && ring; r++) {
            if (me == 0) {
                atomic_store_explicit(my_stamp, host_clock_ns(), memory_order_relaxed);
                pc_flag_post(mine, seq + (uint64_t)r);
                pc_flag_wait(L, before, seq + (uint64_t)r);
            } else {
                pc_flag_wait(L, before, seq + (uint64_t)r);
            }
            uint64_t woke = host_clock_ns(), posted = atomic_load_explicit(before_stamp, memory_order_relaxed);
            series_add(&x, woke > posted ? (double)(woke - posted) * 1e-3 : 0.0);
            if (me != 0) {
                atomic_store_explicit(my_stamp, host_clock_ns(), memory_order_relaxed);
                pc_flag_post(mine, seq + (uint64_t)r);
            }
        }
        seq += REPS + 1;
        if ((err = another_turn_round(c, false, ring ? x.n : TURN_SAMPLES, stage_t0, &more))) return err;
    }
    spread = timer ? series_spread(&x) : 0;
    c->seq = seq + 1;
    if (timer) {
        m->turn_us = series_figure(&x); /* the hop; run() takes sync_us off once both are agreed */
        m->spread[PC_FIG_TURN] = spread;
    }
    return PLANCOLL_SUCCESS;
}

/* The scheduler turn of an MPI-waited round (model.h: mpi_turn_us), on a layout where some host holds more ranks
 * than cores: every rank of each node, all nodes at once, exchanges 8 bytes with each other rank of its node (all
 * receives and sends posted, then one wait as the collectives wait: pc_wait_layout, tests and yields), the round
 * of the spread-out exchanges, rounds back to back. Node rank 0 times REPS rounds; a round over the node's other
 * ranks is the figure per peer. run() takes shm_alpha_us off once both are agreed. */
static int measure_mpi_turn(struct cal *c, struct pc_machine_model *m)
{
    struct pc_layout *L = c->L;
    say(c, "MPI scheduler turns");
    int err = pc_barrier_wait(L);
    if (err) return err;
    const int ns = L->node_size, me = L->node_rank;
    const bool timer = ns >= 2 && me == 0;
    enum { REPS = 15, MOST = 64 };
    const int peers = ns - 1 < MOST ? ns - 1 : MOST; /* the first MOST after this rank (a ring of them) */
    struct series x;
    memset(&x, 0, sizeof x);
    bool more = true;
    double stage_t0 = MPI_Wtime(), spread = 0;
    for (int round = 0; more && !err; round++) {
        for (int r = 0; r <= REPS && peers > 0 && !err; r++) { /* r = 0: untimed warm-up */
            double t0 = MPI_Wtime();
            MPI_Request rq[2 * MOST];
            for (int i = 1; i <= peers; i++) {
                int from = global_of(L, L->node_id, (me + ns - i) % ns), to = global_of(L, L->node_id, (me + i) % ns);
                PC_MPI_CHECK(MPI_Irecv(c->priv2 + 8 * i, 8, MPI_BYTE, from, PC_TAG_COPY + 12, L->comm, &rq[i - 1]));
                PC_MPI_CHECK(MPI_Isend(c->priv, 8, MPI_BYTE, to, PC_TAG_COPY + 12, L->comm, &rq[peers + i - 1]));
            }
            err = pc_wait_layout(L, 2 * peers, rq);
            if (timer && r > 0) series_add(&x, (MPI_Wtime() - t0) * 1e6 / peers);
        }
        if (err) break;
        /* ranks that time nothing follow the timers' counts (agreed max) */
        err = another_turn_round(c, !timer, timer ? x.n : TURN_SAMPLES, stage_t0, &more);
    }
    spread = timer ? series_spread(&x) : 0;
    if (err) return err;
    if (timer) {
        /* the mean, not the lower quartile of the other figures: a collective's round pays the slow turns too
         * (the rounds here are bimodal, most a few microseconds, some a scheduler slice) */
        double sum = 0;
        for (int i = 0; i < x.n; i++) sum += x.v[i];
        m->mpi_turn_us = x.n > 0 ? sum / x.n : 0;
        m->spread[PC_FIG_MPI_TURN] = spread;
    }
    return PLANCOLL_SUCCESS;
}

/* Repeats a local timing (no communication: each rank on its own) until its samples are stable, MAX_ROUNDS
 * rounds of `reps` (the ~100 entries of the reduction table: one round each), 10 ms at most. Returns the median; *spread gets the spread. */
static double local_figure(struct cal *c, void (*once)(struct cal *, int), int arg, int reps, int rounds, double *spread)
{
    struct series x;
    memset(&x, 0, sizeof x);
    double start = MPI_Wtime();
    once(c, arg); /* warm the caches and the code */
    for (int round = 0; round < rounds; round++) {
        for (int r = 0; r < reps; r++) {
            double a = MPI_Wtime();
            once(c, arg);
            series_add(&x, (MPI_Wtime() - a) * 1e6);
        }
        *spread = series_spread(&x);
        if (*spread <= PC_MODEL_STABLE_SPREAD || MPI_Wtime() - c->t0 > CALIBRATION_BUDGET_S ||
            MPI_Wtime() - start > 0.01)
            break;
    }
    return series_figure(&x);
}

/* Blocked transpose of 64 x 64 blocks of 64 bytes (the node-aware packing's access pattern). */
enum { TR_NB = 64, TR_B = 64 };
static void transpose_once(struct cal *c, int unused)
{
    (void)unused;
    for (int i = 0; i < TR_NB; i++)
        for (int j = 0; j < TR_NB; j++)
            memcpy(c->priv2 + ((size_t)j * TR_NB + (size_t)i) * TR_B, c->priv + ((size_t)i * TR_NB + (size_t)j) * TR_B,
                   TR_B);
}

static struct pc_reduction reduce_now;
static void reduce_once(struct cal *c, int count) { pc_reduce(&reduce_now, c->priv, c->priv2, count); }
static void reduce_local_once(struct cal *c, int count)
{
    MPI_Reduce_local(c->priv, c->priv2, count, MPI_DOUBLE, MPI_SUM);
}

static void measure_local(struct cal *c, struct pc_machine_model *m)
{
    say(c, "transpose and reductions");
    double spread = 0;
    m->transpose_us_per_b = local_figure(c, transpose_once, 0, 5, MAX_ROUNDS, &spread) / ((double)TR_NB * TR_NB * TR_B);
    m->spread[PC_FIG_TRANSPOSE] = spread;

    /* Every fast (op, type) loop on 64 KiB; MPI_Reduce_local (user ops) on MPI_SUM of doubles. The table's spread
     * is its worst entry's. */
    memset(c->priv, 0x3f, REDUCE_BYTES);
    memset(c->priv2, 0x3f, REDUCE_BYTES);
    int ntypes = pc_predefined_type_count();
    double worst = 0;
    for (int o = 0; o < PC_MODEL_MAX_OPS; o++) {
        MPI_Op op = pc_predefined_op(o);
        if (op == MPI_OP_NULL) break;
        for (int t = 0; t < ntypes && t < PC_MODEL_MAX_TYPES; t++) {
            bool commutative;
            MPI_Datatype type = pc_predefined_type(t);
            if (pc_reduction_init(&reduce_now, op, type, &commutative) != PLANCOLL_SUCCESS || !reduce_now.fast) continue;
            int size = 0;
            MPI_Aint lb, extent;
            MPI_Type_size(type, &size);
            MPI_Type_get_extent(type, &lb, &extent);
            if (size <= 0 || extent < size) continue;
            int count = (int)(REDUCE_BYTES / extent); /* pairs (MPI_DOUBLE_INT) have holes: their extent fits */
            m->reduce_us_per_b[o][t] = local_figure(c, reduce_once, count, 3, 1, &spread) / ((double)count * size);
            if (spread > worst) worst = spread;
        }
    }
    m->spread[PC_FIG_REDUCE] = worst;
    pc_clear_error();
    m->reduce_default_us_per_b = local_figure(c, reduce_local_once, REDUCE_BYTES / 8, 3, MAX_ROUNDS, &spread) / REDUCE_BYTES;
    m->spread[PC_FIG_REDUCE_DEFAULT] = spread;
}

/* The measured part of the model as one vector, for the maximum over ranks. */
enum {
    V_NET = PC_MODEL_MAX_PORTS * PC_MODEL_NSIZES,
    V_SHM = 3 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES, /* shm_time[0..1], then shm_stream_time */
    V_RED = PC_MODEL_MAX_OPS * PC_MODEL_MAX_TYPES,
    V_SCALARS = 18,
    V_MSG = PC_MODEL_NSIZES + 2, /* shm_msg_time and shm_step_*, after the scalars' spreads */
    V_ALL = 2 * V_NET + 2 * V_SHM + V_RED + V_SCALARS + PC_FIG_COUNT + V_MSG
};

static void to_vector(const struct pc_machine_model *m, double *v)
{
    memcpy(v, m->net_time, sizeof m->net_time);
    memcpy(v + V_NET, m->shm_time, sizeof m->shm_time);
    memcpy(v + V_NET + 2 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES, m->shm_stream_time, sizeof m->shm_stream_time);
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
    s[8] = m->turn_us;
    s[9] = m->store_normal_us_per_b;
    s[10] = m->store_stream_us_per_b;
    s[11] = m->store_small_normal_us_per_b[0];
    s[12] = m->store_small_stream_us_per_b[0];
    s[13] = m->store_small_normal_us_per_b[1];
    s[14] = m->store_small_stream_us_per_b[1];
    s[15] = m->net_step_low_b;
    s[16] = m->net_step_high_b;
    s[17] = m->mpi_turn_us;
    double *sp = s + V_SCALARS;
    memcpy(sp, m->net_spread, sizeof m->net_spread);
    memcpy(sp + V_NET, m->shm_spread, sizeof m->shm_spread);
    memcpy(sp + V_NET + 2 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES, m->shm_stream_spread, sizeof m->shm_stream_spread);
    memcpy(sp + V_NET + V_SHM, m->spread, sizeof m->spread);
    double *msg = sp + V_NET + V_SHM + PC_FIG_COUNT;
    memcpy(msg, m->shm_msg_time, sizeof m->shm_msg_time);
    msg[PC_MODEL_NSIZES] = m->shm_step_low_b;
    msg[PC_MODEL_NSIZES + 1] = m->shm_step_high_b;
}

static void from_vector(struct pc_machine_model *m, const double *v)
{
    memcpy(m->net_time, v, sizeof m->net_time);
    memcpy(m->shm_time, v + V_NET, sizeof m->shm_time);
    memcpy(m->shm_stream_time, v + V_NET + 2 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES, sizeof m->shm_stream_time);
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
    m->turn_us = s[8];
    m->store_normal_us_per_b = s[9];
    m->store_stream_us_per_b = s[10];
    m->store_small_normal_us_per_b[0] = s[11];
    m->store_small_stream_us_per_b[0] = s[12];
    m->store_small_normal_us_per_b[1] = s[13];
    m->store_small_stream_us_per_b[1] = s[14];
    m->net_step_low_b = s[15];
    m->net_step_high_b = s[16];
    m->mpi_turn_us = s[17];
    const double *sp = s + V_SCALARS;
    memcpy(m->net_spread, sp, sizeof m->net_spread);
    memcpy(m->shm_spread, sp + V_NET, sizeof m->shm_spread);
    memcpy(m->shm_stream_spread, sp + V_NET + 2 * PC_MODEL_MAX_TAU * PC_MODEL_NSIZES, sizeof m->shm_stream_spread);
    memcpy(m->spread, sp + V_NET + V_SHM, sizeof m->spread);
    const double *msg = sp + V_NET + V_SHM + PC_FIG_COUNT;
    memcpy(m->shm_msg_time, msg, sizeof m->shm_msg_time);
    m->shm_step_low_b = msg[PC_MODEL_NSIZES];
    m->shm_step_high_b = msg[PC_MODEL_NSIZES + 1];
}

/* Every rank's figures replaced by the maximum over ranks (and so equal everywhere). */
static int agree(struct cal *c, struct pc_machine_model *meas)
{
    double *v = malloc(sizeof(double) * 2 * V_ALL);
    if (!v) return pc_error(PLANCOLL_ERR_NOMEM, "calibration vector");
    to_vector(meas, v);
    int err = pc_allreduce_wait(c->L, v, v + V_ALL, V_ALL, MPI_DOUBLE, MPI_MAX);
    if (!err) from_vector(meas, v + V_ALL);
    free(v);
    return err;
}

/* The figures whose agreed spread stayed above the bound: their stage ran out of rounds or time. */
static unsigned unstable_figures(const struct pc_machine_model *m)
{
    unsigned bits = 0;
    for (int k = 0; k < PC_MODEL_MAX_PORTS; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++)
            if (m->net_spread[k][s] > PC_MODEL_STABLE_SPREAD) bits |= PC_FIG_BIT(PC_FIG_NET);
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < PC_MODEL_MAX_TAU; t++)
            for (int s = 0; s < PC_MODEL_NSIZES; s++)
                if (m->shm_spread[n][t][s] > PC_MODEL_STABLE_SPREAD) bits |= PC_FIG_BIT(PC_FIG_TAULOP);
    for (int f = 0; f < PC_FIG_COUNT; f++)
        if (f != PC_FIG_NET && f != PC_FIG_TAULOP && m->spread[f] > PC_MODEL_STABLE_SPREAD) bits |= PC_FIG_BIT(f);
    return bits;
}

/* Re-measures the stages of the figures in `bad` (bits of pc_model_check, equal on every rank: the model is
 * agreed) and puts the new agreed figures of those stages into meas. */
static int remeasure(struct cal *c, struct pc_machine_model *meas, unsigned bad, int taumax)
{
    struct pc_machine_model again;
    memset(&again, 0, sizeof again);
    int err;
    bool node = bad & (PC_FIG_BIT(PC_FIG_SHM_ALPHA) | PC_FIG_BIT(PC_FIG_SHM_BETA) | PC_FIG_BIT(PC_FIG_SYNC));
    if ((bad & PC_FIG_BIT(PC_FIG_NET)) && (err = measure_network(c, &again))) return err;
    if (node && (err = measure_node_p2p(c, &again))) return err;
    if ((bad & PC_FIG_BIT(PC_FIG_TAULOP)) && (err = measure_taulop(c, &again, taumax))) return err;
    if ((err = agree(c, &again))) return err;
    if (bad & PC_FIG_BIT(PC_FIG_NET)) {
        memcpy(meas->net_time, again.net_time, sizeof meas->net_time);
        memcpy(meas->net_spread, again.net_spread, sizeof meas->net_spread);
        meas->net_step_low_b = again.net_step_low_b;
        meas->net_step_high_b = again.net_step_high_b;
        meas->o_us = again.o_us;
        meas->g_us = again.g_us;
        meas->spread[PC_FIG_O] = again.spread[PC_FIG_O];
        meas->spread[PC_FIG_G] = again.spread[PC_FIG_G];
    }
    if (node) {
        meas->shm_alpha_us = again.shm_alpha_us;
        meas->shm_beta_us_per_b = again.shm_beta_us_per_b;
        memcpy(meas->shm_msg_time, again.shm_msg_time, sizeof meas->shm_msg_time);
        meas->shm_step_low_b = again.shm_step_low_b;
        meas->shm_step_high_b = again.shm_step_high_b;
        meas->sync_us = again.sync_us;
        for (int f = PC_FIG_SHM_ALPHA; f <= PC_FIG_SYNC; f++) meas->spread[f] = again.spread[f];
    }
    if (bad & PC_FIG_BIT(PC_FIG_TAULOP)) {
        memcpy(meas->shm_time, again.shm_time, sizeof meas->shm_time);
        memcpy(meas->shm_spread, again.shm_spread, sizeof meas->shm_spread);
        memcpy(meas->shm_stream_time, again.shm_stream_time, sizeof meas->shm_stream_time);
        memcpy(meas->shm_stream_spread, again.shm_stream_spread, sizeof meas->shm_stream_spread);
    }
    return PLANCOLL_SUCCESS;
}

/* The model from the agreed measurements (identical on every rank): the defaults where nothing was measured, the
 * levels between measured ones interpolated, LogGP fitted, the unstable figures marked. */
static void compose(const struct pc_layout *L, struct pc_machine_model *m, const struct pc_machine_model *meas_in,
                    int taumax)
{
    const struct pc_machine_model meas = *meas_in;
    pc_model_default(m);
    if (L->nnodes > 1) {
        memcpy(m->net_time, meas.net_time, sizeof m->net_time);
        memcpy(m->net_spread, meas.net_spread, sizeof m->net_spread);
        m->net_ports = meas.net_ports;
        m->net_step_low_b = meas.net_step_low_b;
        m->net_step_high_b = meas.net_step_high_b;
        fill_levels(m->net_time, m->net_ports);
        m->o_us = meas.o_us;
        m->g_us = meas.g_us;
        m->spread[PC_FIG_O] = meas.spread[PC_FIG_O];
        m->spread[PC_FIG_G] = meas.spread[PC_FIG_G];
        fit_loggp(m);
    }
    if (L->node_sizes[0] >= 2) {
        m->shm_alpha_us = meas.shm_alpha_us;
        m->shm_beta_us_per_b = meas.shm_beta_us_per_b;
        memcpy(m->shm_msg_time, meas.shm_msg_time, sizeof m->shm_msg_time);
        m->shm_step_low_b = meas.shm_step_low_b;
        m->shm_step_high_b = meas.shm_step_high_b;
        m->sync_us = meas.sync_us;
        for (int f = PC_FIG_SHM_ALPHA; f <= PC_FIG_SYNC; f++) m->spread[f] = meas.spread[f];
    }
    /* the turn is what a hop of the ring costs beyond the signal itself (both agreed maxima; sync possibly
     * clamped: a smaller signal leaves more of the hop to the turn) */
    if (L->any_oversubscribed && meas.turn_us > 0) {
        m->turn_us = meas.turn_us > m->sync_us ? meas.turn_us - m->sync_us : 0.0;
        m->spread[PC_FIG_TURN] = meas.spread[PC_FIG_TURN];
    }
    if (L->any_oversubscribed && meas.mpi_turn_us > 0) { /* likewise, less the message itself */
        m->mpi_turn_us = meas.mpi_turn_us > m->shm_alpha_us ? meas.mpi_turn_us - m->shm_alpha_us : 0.0;
        m->spread[PC_FIG_MPI_TURN] = meas.spread[PC_FIG_MPI_TURN];
    }
    if (L->node_sizes[0] >= 2 && meas.store_normal_us_per_b > 0 && meas.store_stream_us_per_b > 0) {
        m->store_normal_us_per_b = meas.store_normal_us_per_b;
        m->store_stream_us_per_b = meas.store_stream_us_per_b;
        memcpy(m->store_small_normal_us_per_b, meas.store_small_normal_us_per_b, sizeof m->store_small_normal_us_per_b);
        memcpy(m->store_small_stream_us_per_b, meas.store_small_stream_us_per_b, sizeof m->store_small_stream_us_per_b);
    }
    memcpy(m->shm_time, meas.shm_time, sizeof m->shm_time);
    memcpy(m->shm_spread, meas.shm_spread, sizeof m->shm_spread);
    m->shm_taus = taumax;
    fill_levels(m->shm_time[0], taumax);
    fill_levels(m->shm_time[1], taumax);
    memcpy(m->shm_stream_time, meas.shm_stream_time, sizeof m->shm_stream_time);
    memcpy(m->shm_stream_spread, meas.shm_stream_spread, sizeof m->shm_stream_spread);
    fill_levels(m->shm_stream_time, taumax);
    m->transpose_us_per_b = meas.transpose_us_per_b;
    memcpy(m->reduce_us_per_b, meas.reduce_us_per_b, sizeof m->reduce_us_per_b);
    m->reduce_default_us_per_b = meas.reduce_default_us_per_b;
    for (int f = PC_FIG_TRANSPOSE; f <= PC_FIG_REDUCE_DEFAULT; f++) m->spread[f] = meas.spread[f];
    m->unstable = unstable_figures(m);
    m->clamped = meas.clamped;
    m->calibrated = true;
    pc_model_derive(m, L->nnodes);
}

/* ---- the check after calibration ----
 * A few cheap operations that the model predicts by combining its figures at a size between those measured
 * (PC_CHECK_BYTES, PC_CHECK_SHM_MSG_BYTES), timed as the stage that measured those figures times its own (the same helpers, pinning,
 * waits and warm-up, the lower quartile of the repetitions). Each probe's figure and spread are agreed (maximum
 * over ranks, as the stages'), so every rank judges the same ratio alike. */

/* One probe's agreed result: figure (lower quartile) and spread of its repetitions (0, 0 where nobody ran it), and
 * the calibration's time so far (the latest rank's), for the budget. */
struct probe_result {
    double figure, spread, elapsed;
};

/* Agrees a probe's figure and spread (rank's own: 0 when it timed nothing) and records them. */
static int agree_probe(struct cal *c, bool mine, struct series *x, struct probe_result *out)
{
    double v[3] = {mine ? series_figure(x) : 0, mine ? series_spread(x) : 0, MPI_Wtime() - c->t0};
    int err = agree_max_idle(c, !mine, v, 3);
    if (err) return err;
    if (v[0] > out->figure) out->figure = v[0];
    if (v[1] > out->spread) out->spread = v[1];
    out->elapsed = v[2];
    return PLANCOLL_SUCCESS;
}

/* A two-way exchange inside node 0 as measure_node_p2p's (local ranks 0 and 1, each pinned to a core). */
static int probe_shm_msg(struct cal *c, int bytes, struct probe_result *out)
{
    struct pc_layout *L = c->L;
    int err = PLANCOLL_SUCCESS;
    bool mine = L->node_id == 0 && L->node_size >= 2 && L->node_rank <= 1;
    struct series x;
    memset(&x, 0, sizeof x);
    cpu_set_t saved;
    bool pinned = mine && pin_cpu(L->node_rank, &saved);
    c->run_spin = pinned;
    if (mine) err = exchange(c, global_of(L, 0, 1 - L->node_rank), bytes, reps_for(bytes), 1, &x);
    c->run_spin = false;
    unpin_cpu(pinned, &saved);
    if (err) return err;
    return agree_probe(c, mine, &x, out);
}

/* tau concurrent 1-copy transfers (read a peer's slot) on every node, as measure_taulop's level tau (the same
 * turns of emulated nodes sharing a host, the same pinning). */
static int probe_taulop(struct cal *c, int tau, int bytes, struct probe_result *out)
{
    struct pc_layout *L = c->L;
    int turns = c->host_nodes > 1 && tau * c->host_nodes > c->host_cores ? L->nnodes : 1;
    char *slots = c->shm + 64 * (size_t)L->node_size;
    for (int turn = 0; turn < turns; turn++) {
        pc_node_barrier(L);
        bool mine = L->node_rank < tau && (turns == 1 || L->node_id == turn);
        int from = tau == 1 ? (L->node_rank + 1) % L->node_size : (L->node_rank + 1) % tau;
        int copying = turns == 1 ? tau * c->host_nodes : tau;
        cpu_set_t saved;
        int cpu = (turns == 1 ? L->node_id % c->host_nodes : 0) * tau + L->node_rank;
        bool pinned = copying <= c->host_cores && tau >= 2 && mine && pin_cpu(cpu, &saved);
        struct series x;
        memset(&x, 0, sizeof x);
        int reps = reps_for(bytes);
        for (int r = 0; r < 1 + reps && mine; r++) {
            double t0 = MPI_Wtime();
            memcpy(c->priv, slots + (size_t)from * SLOT_BYTES, (size_t)bytes);
            if (r >= 1) series_add(&x, (MPI_Wtime() - t0) * 1e6);
        }
        unpin_cpu(pinned, &saved);
        int err = agree_probe(c, mine, &x, out);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

/* A ping-pong between local ranks 0 of nodes 0 and 1, as measure_network's single pair. */
static int probe_net(struct cal *c, int bytes, struct probe_result *out)
{
    struct pc_layout *L = c->L;
    int err = PLANCOLL_SUCCESS;
    bool mine = (L->node_id == 0 || L->node_id == 1) && L->node_rank == 0;
    bool shared = c->host_nodes > 1;
    struct series x;
    memset(&x, 0, sizeof x);
    cpu_set_t saved;
    c->run_spin = mine && (shared ? 2 : 1) <= c->host_cores;
    bool pinned = c->run_spin && pin_cpu(shared ? L->node_id : 0, &saved);
    if (mine) err = pingpong(c, global_of(L, 1 - L->node_id, 0), bytes, reps_for(bytes), 1, L->node_id == 0, &x);
    c->run_spin = false;
    unpin_cpu(pinned, &saved);
    if (err) return err;
    return agree_probe(c, mine, &x, out);
}

/* Runs every probe that applies to the layout against the model m (agreed, so the same on every rank): ratio and
 * band per probe into m->check_ratio / check_band, and the PC_FIG_BITs of the figures behind each probe that
 * disagrees (pc_model_check_disagrees) into *bad. */
static int run_probes(struct cal *c, struct pc_machine_model *m, int taumax, unsigned *bad, double *elapsed)
{
    const struct pc_layout *L = c->L;
    const double bytes = PC_CHECK_BYTES;
    *bad = 0;
    say(c, "check");
    for (int i = 0; i < PC_CHECK_COUNT; i++) {
        struct probe_result got = {0, 0, 0};
        double predicted = 0, predicted_spread = 0;
        unsigned figures = 0;
        int err = PLANCOLL_SUCCESS;
        if (i == PC_CHECK_SHM_MSG && L->node_sizes[0] >= 2) {
            err = probe_shm_msg(c, (int)PC_CHECK_SHM_MSG_BYTES, &got);
            predicted = pc_cost_shm_msg(m, PC_CHECK_SHM_MSG_BYTES);
            predicted_spread = fmax(m->spread[PC_FIG_SHM_ALPHA], m->spread[PC_FIG_SHM_BETA]);
            figures = PC_FIG_BIT(PC_FIG_SHM_ALPHA) | PC_FIG_BIT(PC_FIG_SHM_BETA);
        } else if (i == PC_CHECK_TAULOP) {
            err = probe_taulop(c, taumax, (int)bytes, &got);
            predicted = pc_cost_shm_copy(m, 1, taumax, bytes);
            predicted_spread = pc_model_interp_spread(m->shm_spread[0][taumax - 1], bytes);
            figures = PC_FIG_BIT(PC_FIG_TAULOP);
        } else if (i == PC_CHECK_NET && L->nnodes > 1) {
            err = probe_net(c, (int)bytes, &got);
            predicted = pc_cost_net(m, bytes);
            predicted_spread = pc_model_interp_spread(m->net_spread[0], bytes);
            figures = PC_FIG_BIT(PC_FIG_NET);
        } else {
            continue;
        }
        if (err) return err;
        double band = pc_model_check_band(predicted_spread, got.spread), ratio;
        if (pc_model_check_disagrees(predicted, got.figure, band, &ratio)) *bad |= figures;
        m->check_ratio[i] = ratio;
        m->check_band[i] = band;
        *elapsed = got.elapsed;
    }
    return PLANCOLL_SUCCESS;
}

/* The check: the probes against the composed model m; the stages behind a disagreeing probe are measured once
 * more (while calibration's budget lasts, agreed), the model composed again and the probes run again; figures
 * whose probe still disagrees are marked unstable and disagreed. */
static int check_model(struct cal *c, struct pc_machine_model *meas, struct pc_machine_model *m, int taumax)
{
    unsigned bad;
    double so_far = 0; /* agreed with the last probe */
    int err = run_probes(c, m, taumax, &bad, &so_far);
    if (err || !bad) return err;
    if (so_far < CALIBRATION_BUDGET_S) {
        if ((err = remeasure(c, meas, bad, taumax))) return err;
        /* the new figures answer to the consistency rules too (clamped without a third measurement) */
        unsigned broken = pc_model_check(meas);
        if (broken) pc_model_clamp(meas, broken, c->L->nnodes);
        compose(c->L, m, meas, taumax);
        if ((err = run_probes(c, m, taumax, &bad, &so_far))) return err;
    }
    m->disagreed = bad;
    m->unstable |= bad;
    return PLANCOLL_SUCCESS;
}

static int run(struct cal *c, struct pc_machine_model *m, double t0)
{
    struct pc_layout *L = c->L;
    /* Ranks that measure nothing of a kind keep zeros there; the defaults fill what nobody measured (compose). */
    struct pc_machine_model meas;
    memset(&meas, 0, sizeof meas);
    int taumax = L->node_size;
    int min_ppn = taumax;
    int err = pc_allreduce_wait(L, MPI_IN_PLACE, &min_ppn, 1, MPI_INT, MPI_MIN);
    if (err) return err;
    taumax = min_ppn < PC_MODEL_MAX_TAU ? min_ppn : PC_MODEL_MAX_TAU;
    /* agreed, so that every rank takes the same turns and waits in the stages */
    int host[2] = {(L->host_ranks + L->node_size - 1) / L->node_size, -L->host_cores};
    if (host[0] > L->nnodes) host[0] = L->nnodes;
    if ((err = pc_allreduce_wait(L, MPI_IN_PLACE, host, 2, MPI_INT, MPI_MAX))) return err;
    c->host_nodes = host[0];
    c->host_cores = -host[1];
    if (L->nnodes > 1 && (err = measure_network(c, &meas))) return err;
    if ((err = measure_node_p2p(c, &meas))) return err;
    if ((err = measure_taulop(c, &meas, taumax))) return err;
    if ((err = measure_stores(c, &meas))) return err;
    if (L->any_oversubscribed && (err = measure_turn(c, &meas))) return err; /* the same branch on every rank */
    if (L->any_oversubscribed && (err = measure_mpi_turn(c, &meas))) return err;
    measure_local(c, &meas);
    if ((err = agree(c, &meas))) return err;

    /* Consistency (pc_model_check states the rules): the figures a rule blames are measured once more, and
     * clamped only if they still break it. The checks read the agreed model, so every rank takes the same
     * branch. Levels and sizes only: nothing is interpolated yet, so only measured entries are compared. */
    meas.net_ports = L->nnodes > 1 ? (L->node_sizes[0] < L->node_sizes[1] ? L->node_sizes[0] : L->node_sizes[1]) : 0;
    if (meas.net_ports > PC_MODEL_MAX_PORTS) meas.net_ports = PC_MODEL_MAX_PORTS;
    meas.shm_taus = taumax;
    unsigned bad = pc_model_check(&meas);
    double so_far = MPI_Wtime() - t0;
    if (bad && (err = pc_allreduce_wait(L, MPI_IN_PLACE, &so_far, 1, MPI_DOUBLE, MPI_MAX))) return err;
    /* past the budget the figures are clamped without the second measurement (bounded time first) */
    if (bad && so_far < CALIBRATION_BUDGET_S && (err = remeasure(c, &meas, bad, taumax))) return err;
    if (bad) {
        pc_model_clamp(&meas, pc_model_check(&meas), L->nnodes);
    }
    compose(L, m, &meas, taumax);
    if ((err = check_model(c, &meas, m, taumax))) return err;
    /* the duration, agreed too: the model's text (and so its hash) must be equal on every rank */
    double took = MPI_Wtime() - t0;
    if ((err = pc_allreduce_wait(L, MPI_IN_PLACE, &took, 1, MPI_DOUBLE, MPI_MAX))) return err;
    m->calibration_seconds = took;
    return PLANCOLL_SUCCESS;
}


int pc_calibrate(struct pc_layout *L, struct pc_machine_model *m)
{
    double t0 = MPI_Wtime();
    struct cal c;
    memset(&c, 0, sizeof c);
    c.L = L;
    c.t0 = t0;
    c.seq = 1;
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
    if (!err) err = pc_node_shm_alloc(L, (size_t)L->node_size * (64 + SLOT_BYTES), &c.area);
    bool mapped = !err;
    size_t failed = 0; /* the bytes this rank could not reserve */
    if (mapped) {
        c.shm = c.area.base;
        c.flags = (_Atomic uint64_t *)(void *)c.shm;
        /* This rank's flag line and copy slot have memory behind them before anyone stores (reserve.h): a full
         * /dev/shm fails the calibration (agreed below) instead of raising SIGBUS. */
        if (pc_shm_reserve(c.shm + 64 * (size_t)L->node_rank, 64) != 0 ||
            pc_shm_reserve(c.shm + 64 * (size_t)L->node_size + (size_t)L->node_rank * SLOT_BYTES, SLOT_BYTES) != 0)
            failed = 64 + SLOT_BYTES;
    }
    if (!err) err = pc_shm_agree_reserved(L, local, failed, "calibration's node-shared area");
    if (!err && !local) {
        /* The flag and slot of this rank may lie in a peer's part: written only once every part is reserved. */
        memset(c.shm + 64 * (size_t)L->node_rank, 0, 64);
        memset(c.shm + 64 * (size_t)L->node_size + (size_t)L->node_rank * SLOT_BYTES, 3, SLOT_BYTES);
        pc_node_shm_sync(&c.area);
        pc_node_barrier(L); /* every slot initialised before anyone reads it */
        pc_node_shm_sync(&c.area);
#ifdef __linux__
        /* The stages pin their measuring ranks and unpin them when done, but a failed MPI call returns from the
         * middle of a stage (PC_MPI_CHECK): the mask taken here is put back whatever happened. */
        cpu_set_t affinity;
        bool have_affinity = sched_getaffinity(0, sizeof affinity, &affinity) == 0;
#endif
        err = run(&c, m, t0);
#ifdef __linux__
        if (have_affinity) sched_setaffinity(0, sizeof affinity, &affinity);
#endif
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
