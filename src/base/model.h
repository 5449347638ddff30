/* The machine model the planner ranks candidates with: LogGP between nodes (with multi-port zones), tau-Lop
 * inside a node, local transpose throughput and reduction cost per (op, datatype). Pure C, no MPI: the
 * calibration (calibrate.c) fills it from microbenchmarks, the wisdom files carry it, and every algorithm's
 * estimate() reads it through the primitives below. */
#ifndef PC_MODEL_H
#define PC_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/problem.h"

/* Message sizes the tables are sampled at (bytes): powers of 8 from 8 B to 2 MiB. */
#define PC_MODEL_NSIZES 7
extern const double pc_model_sizes[PC_MODEL_NSIZES];
/* Concurrency levels: tau = 1 .. PC_MODEL_MAX_TAU concurrent intra-node transfers, k = 1 .. PC_MODEL_MAX_PORTS
 * concurrent inter-node pairs. Levels beyond what was measured extrapolate linearly from the last two. */
#define PC_MODEL_MAX_TAU 8
#define PC_MODEL_MAX_PORTS 8
#define PC_MODEL_MAX_OPS 16
#define PC_MODEL_MAX_TYPES 48

/* The calibrated figures, by name (the model text's spread / unstable / clamped lines use these names). Table
 * figures (net, taulop) carry a spread per entry; the flags below are per figure. */
enum pc_model_figure {
    PC_FIG_NET,            /* net_time: inter-node messages, k concurrent pairs */
    PC_FIG_O,              /* o_us */
    PC_FIG_G,              /* g_us */
    PC_FIG_SHM_ALPHA,      /* shm_alpha_us */
    PC_FIG_SHM_BETA,       /* shm_beta_us_per_b */
    PC_FIG_SYNC,           /* sync_us */
    PC_FIG_TAULOP,         /* shm_time: shared-memory transfers, tau concurrent */
    PC_FIG_TRANSPOSE,      /* transpose_us_per_b */
    PC_FIG_REDUCE,         /* reduce_us_per_b (the worst spread over the table) */
    PC_FIG_REDUCE_DEFAULT, /* reduce_default_us_per_b */
    PC_FIG_TURN,           /* turn_us */
    PC_FIG_MPI_TURN,       /* mpi_turn_us */
    PC_FIG_COUNT
};
extern const char *const pc_model_figure_names[PC_FIG_COUNT];
#define PC_FIG_BIT(f) (1u << (f))
/* A figure is stable when the interquartile ratio (third quartile / first quartile) of its repetitions is at
 * most this: half the repetitions lie within 30% of each other. Calibration repeats a figure until it is, or
 * its time runs out (then the figure is marked unstable). */
#define PC_MODEL_STABLE_SPREAD 1.3
/* Measurement noise the consistency rules tolerate before they call two figures inconsistent (a concurrent
 * transfer measured up to 20% faster than a lone one is noise, not a contradiction). */
#define PC_MODEL_CONSISTENCY_SLACK 1.2

/* The probes of the check after calibration, by name (the model text's `check` lines use these names):
 *   shm_msg   a two-way MPI exchange of PC_CHECK_SHM_MSG_BYTES inside node 0 against pc_cost_shm_msg (shm_alpha,
 *             shm_beta)
 *   taulop    tau = every rank of each node copying PC_CHECK_BYTES from a peer at once, against
 *             pc_cost_shm_copy(1, tau) (the taulop table)
 *   net       a ping-pong of PC_CHECK_BYTES between nodes 0 and 1 against pc_cost_net (net, k = 1) */
enum pc_model_check_probe { PC_CHECK_SHM_MSG, PC_CHECK_TAULOP, PC_CHECK_NET, PC_CHECK_COUNT };
extern const char *const pc_model_check_names[PC_CHECK_COUNT];
/* The probes' size: between the table sizes 4 KiB and 32 KiB (and neither of the node exchanges' 8 B and
 * 256 KiB), so that each prediction interpolates rather than repeats a measured entry. */
#define PC_CHECK_BYTES 16384.0
/* The node exchange's: between the two sizes its figures are measured at (8 B and 256 KiB). Not 16 KiB: there the
 * straight line through them is 1.4-2.3x below the measured exchange in every run (1n3p; 3-10x at 1-8 KiB), a
 * fault of the model's form that no re-measurement mends, so the probe would fire in every calibration and say
 * nothing about the figures; at 128 KiB the line holds (0.9-1.06). */
#define PC_CHECK_SHM_MSG_BYTES 131072.0

/* Sizes at which the shared-line store rounds are measured (pc_store_sizes). */
#define PC_STORE_SIZES 3

struct pc_machine_model {
    /* Where the numbers come from: "default" or "calibrated", and the shape they were measured on. */
    bool calibrated;
    char shape[64];
    double calibration_seconds;

    /* Inter-node LogGP (microseconds): one m-byte message costs L + 2o + (m-1) G. */
    double L_us, o_us, g_us, G_us_per_b;
    /* Multi-port zones: net_time[k-1][s] = time for k concurrent pairs between two nodes to each deliver one
     * message of pc_model_sizes[s] bytes (k = 1 is the ping-pong one-way time). Zero: not measured. */
    double net_time[PC_MODEL_MAX_PORTS][PC_MODEL_NSIZES];
    int net_ports; /* how many k levels were measured */
    /* The network's protocol switch: MPI sends a message of net_step_high_b bytes or more with a handshake first
     * (eager to rendezvous), one of net_step_low_b or fewer without; a message in between is taken to switch at
     * the midpoint. The switch adds a start-up that a smooth curve through the sampled sizes spreads over the
     * whole interval around it (here: 12 us at 6 KiB, 80-90 us from 8 KiB on, sampled at 4 and 32 KiB), so
     * calibration locates it by bisection where the samples show a jump, and the net costs interpolate each side
     * of it on its own regime (pc_cost_net). Both 0: no switch found (or not measured: a default model, or an
     * older model text). */
    double net_step_low_b, net_step_high_b;

    /* MPI point-to-point inside a node (the flat algorithms' local messages): start-up and per byte. */
    double shm_alpha_us, shm_beta_us_per_b;
    /* The same messages at every table size: shm_msg_time[s] = one exchange of pc_model_sizes[s] bytes each way
     * between two ranks of a node (both post, then wait, as the direct exchanges use node messages). MPI's messages
     * inside a node are not a line: MPICH 4.0.2 switches protocol between 8 and 16 KiB, and 4-16 KiB messages
     * cost 2-4x what the line through 8 B and 256 KiB gives (pairwise at 2 ranks on one node: 2.6 us at 8 KiB, 6.6
     * us at 16 KiB; the line 1.7 and 2.9), so pc_cost_shm_msg interpolates this row where it was measured. Zero:
     * not measured (a default model, a machine description, an older model text): the line. */
    double shm_msg_time[PC_MODEL_NSIZES];
    /* Their protocol switch, located as the network's (net_step_*) by bisection of exchanges where the row jumps
     * (here between 8 and 12 KiB: +4 us); the row is then read on each side in its own regime. Both 0: no switch
     * found, or not measured. */
    double shm_step_low_b, shm_step_high_b;
    /* tau-Lop: shm_time[n-1][tau-1][s] = time of one transfer of pc_model_sizes[s] bytes through n copies
     * (n = 1: read a peer's buffer directly; n = 2: staged through a shared segment) while tau transfers
     * run concurrently on the node. Zero: not measured. */
    double shm_time[2][PC_MODEL_MAX_TAU][PC_MODEL_NSIZES];
    int shm_taus; /* how many tau levels were measured */
    /* The 2-copy transfer (shm_time[1]) with its first copy in streaming stores and a fence before the signal,
     * into a double-buffered slot as the staging plans use (alltoall.pap): the writer's lines go to memory instead
     * of being fetched back from the reader's core, the reader misses its caches. shm_time[1] is timed with
     * ordinary stores, so it is that mode's cost of the same transfer; which mode is cheaper depends on where the
     * host placed the cores (far apart, at 640 KiB: ordinary 400-480 us, streaming 90-120; close: 55-80 and
     * 100-115). Zero: not measured (no streaming stores on this target, a default model, an older model text):
     * pc_cost_shm_handoff then prices both modes as before (shm_time[1] plus pc_cost_shared_store). */
    double shm_stream_time[PC_MODEL_MAX_TAU][PC_MODEL_NSIZES];
    /* One signal between ranks of a node (flag post to the waiter's wake-up), measured while the node's other
     * ranks sleep: without the wait for a scheduler turn that oversubscription adds (turn_us). */
    double sync_us;
    /* The wait for a scheduler turn that each dependency round (a rank waiting for another rank's message or flag)
     * adds on a host with more ranks than cores: every rank of the host yield-waits, as in a collective, so the
     * rank that must act next runs only when the others have had their turn. Measured on oversubscribed layouts
     * as a flag ring through every rank of each node, all nodes at once, less sync_us per hop; 0 when the host
     * has a core per rank (or the figure was not measured: a default model, or an older model text). */
    double turn_us;
    /* The same wait when the rank waits for an MPI message instead of a flag (point-to-point steps, MPI's own
     * collectives): MPI's progress engine runs only inside the waiting rank's tests, so each message waited for
     * costs the sender's turn and the receiver's next one. Measured as an 8-byte MPI ring through every rank of
     * each node, all nodes at once, less shm_alpha_us per hop (2-4 us more than turn_us on 3 ranks over 2 cores
     * here). 0: not measured (turn_us stands in: pc_cost_mpi_turns). */
    double mpi_turn_us;

    /* Rewriting node-shared lines that another rank of the node read last (the hierarchical allreduces' result and
     * hand-over areas, which the node's ranks copy out every execution; the staging areas of the node-aware
     * alltoalls, alltoall.pap and alltoallv.aggregated, which peers copy out): per byte, one round of a rank writing such
     * an area and its pair copying it out, with ordinary stores (store_normal: each store first fetches its line
     * back from the reader's core) and with streaming stores (store_stream: no fetch, but the reader then misses
     * its caches), for the placement of this communicator's node ranks (calibrate.c). Which is cheaper depends on
     * whether the host put the two cores close (sharing a cache) or far apart. 0: not measured (a default model,
     * or a model text from before them): no term (pc_cost_shared_store). */
    double store_normal_us_per_b, store_stream_us_per_b;
    /* The same round at the smaller sizes of pc_store_sizes (256 B, 16 KiB; the figures above are at the last,
     * 1 MiB): small areas stay in the two cores' caches with ordinary stores, while a streaming store sends every
     * line to memory, drains before the flag and leaves the reader a miss, a latency that a per-byte figure at 1 MiB
     * does not show; so the cheaper kind can differ by size. pc_cost_shared_store interpolates between the sizes
     * (log-linear in bytes, clamped outside). 0: not measured (a model text from before them): the 1 MiB figures
     * at every size. */
    double store_small_normal_us_per_b[PC_STORE_SIZES - 1], store_small_stream_us_per_b[PC_STORE_SIZES - 1];

    /* Local transpose of blocks (node-aware packing), per byte. */
    double transpose_us_per_b;
    /* Reduction cost per byte of the reduced vector for predefined (op, type) pairs; zero: not measured. */
    double reduce_us_per_b[PC_MODEL_MAX_OPS][PC_MODEL_MAX_TYPES];
    double reduce_default_us_per_b; /* user ops and unmeasured pairs (MPI_Reduce_local) */

    /* How far each figure can be trusted: its spread, the interquartile ratio q3/q1 over its repetitions
     * (>= 1; 0 = not measured: a default, or a model read from a text that did not carry it). The consistency
     * rules (pc_model_check) apply only to measured figures. */
    double net_spread[PC_MODEL_MAX_PORTS][PC_MODEL_NSIZES];
    double shm_spread[2][PC_MODEL_MAX_TAU][PC_MODEL_NSIZES];
    double shm_stream_spread[PC_MODEL_MAX_TAU][PC_MODEL_NSIZES];
    double spread[PC_FIG_COUNT]; /* the scalar figures' (o, g, shm_alpha, shm_beta, sync, transpose, reduce...) */
    unsigned unstable; /* PC_FIG_BIT per figure whose spread stayed above PC_MODEL_STABLE_SPREAD when its time ran out */
    unsigned clamped;  /* PC_FIG_BIT per figure a consistency rule clamped after a re-measurement */
    /* The check after calibration (calibrate.c): operations of sizes between the table's, predicted from the
     * model and timed. check_ratio[i] = measured / predicted of probe i at its last timing (0: not run), and
     * check_band[i] the band it had to fall in (pc_model_check_band); `disagreed`: PC_FIG_BITs of figures whose
     * probe still fell outside after the responsible stage was measured again (they are marked unstable too). */
    double check_ratio[PC_CHECK_COUNT], check_band[PC_CHECK_COUNT];
    unsigned disagreed;

    /* Summary numbers kept for the simple formulas: a generic message start-up and per-byte cost (the
     * network's on several nodes, the node's on one), a generic reduction and copy per byte. */
    double alpha_us, beta_us_per_b, gamma_us_per_b, copy_us_per_b;
};

/* The documented defaults (an uncalibrated commodity cluster node). */
void pc_model_default(struct pc_machine_model *m);
/* Recomputes the summary numbers from the tables (after calibration or parsing). */
void pc_model_derive(struct pc_machine_model *m, int nnodes);

/* ---- consistency between related figures (calibrate.c re-measures, then clamps) ---- */
/* The PC_FIG_BITs of measured figures that break a consistency rule (model.c states each rule and why); the
 * bit names the figure the rule blames, the one pc_model_clamp changes. 0: consistent. */
unsigned pc_model_check(const struct pc_machine_model *m);
/* Clamps the figures of `which` (bits from pc_model_check) to the bound their rule gives, marks them in
 * m->clamped, and recomputes the summary numbers (node count from nnodes). */
void pc_model_clamp(struct pc_machine_model *m, unsigned which, int nnodes);
/* The interquartile ratio q3/q1 of n samples (sorts v; 1 for n < 2; a huge ratio when q1 is 0 and q3 is not). */
double pc_model_spread(double *v, int n);
/* The figure calibration keeps from n timings of one operation: their lower quartile (sorts v; 0 for n = 0).
 * Interference only ever adds time (a scheduler slice, another process on the core, a cold line), so the low
 * part of the distribution is the operation's own cost on running ranks; the median moves with how many
 * repetitions were hit, which is what changes from run to run on a shared or oversubscribed host. */
double pc_model_running_cost(double *v, int n);

/* ---- the check after calibration ---- */
/* The band a probe's ratio measured / predicted must fall in, [1 / band, band]: the prediction is a lower quartile
 * of samples whose interquartile ratio was predicted_spread, the probe's one of samples with measured_spread, and
 * two such estimates of the same cost can differ by the product of their spreads while both are right; never
 * below PC_MODEL_STABLE_SPREAD, the spread calibration accepts as stable (a closer agreement cannot be asked of
 * figures that are themselves only known that well). Spreads below 1 (0: not measured) count as 1. */
double pc_model_check_band(double predicted_spread, double measured_spread);
/* Whether a probe disagrees with its prediction: measured / predicted outside [1 / band, band]. A prediction or
 * measurement that is not positive cannot be judged: no disagreement. *ratio gets measured / predicted (0 then). */
bool pc_model_check_disagrees(double predicted, double measured, double band, double *ratio);
/* The spread of a table interpolated at bytes: the larger spread of the two entries around it (the entry itself
 * at a table size; the end entry outside the table). */
double pc_model_interp_spread(const double spread[PC_MODEL_NSIZES], double bytes);

/* One line for plancoll_fprint_plan about the calibrated model of `shape` (nothing when there is none): its
 * calibration time, the figures marked unstable or clamped, and the check's ratios (and what disagreed). */
void pc_model_fprint_marks(FILE *out, const struct pc_shape *shape);

/* ---- primitives the cost functions are built from (microseconds) ---- */
/* One inter-node message of `bytes`, alone on the network. */
double pc_cost_net(const struct pc_machine_model *m, double bytes);
/* k concurrent inter-node messages of `bytes` each between the same two nodes: the multi-port zones. */
double pc_cost_net_concurrent(const struct pc_machine_model *m, int k, double bytes);
/* A net_time row at `bytes` in the protocol regime of a message of msg_bytes (net_step_*: the regime of the
 * side of the switch msg_bytes lies on, extended over the switch when bytes lies on the other side; without a
 * switch, pc_model_interp). */
double pc_model_interp_net(const struct pc_machine_model *m, const double row[PC_MODEL_NSIZES], double bytes,
                           double msg_bytes);
/* The same reading for any row with a protocol switch located between low and high bytes (both 0: none). */
double pc_model_interp_stepped(const double row[PC_MODEL_NSIZES], double low, double high, double bytes,
                               double msg_bytes);
/* `count` messages of `bytes` each, posted at once by each of k concurrent senders of a node to peers on other
 * nodes (every send and receive posted before any wait, as pap's and the spread-out exchanges' point-to-point
 * part): LogGP's burst, in which the start-up of the messages after the first overlaps with the bytes ahead of
 * them. The k streams move count * bytes each, and every message after the first adds its injection gap:
 *   net_concurrent(k, count bytes) + (count - 1) g,
 * the first term in the protocol regime of one message of `bytes` (count eager messages pay no handshake).
 * Charging count whole net_concurrent(k, bytes) instead pays the start-up (at large sizes the rendezvous
 * handshake, hundreds of microseconds on the emulated TCP network) once per message, as a chain of dependent
 * messages would. */
double pc_cost_net_posted(const struct pc_machine_model *m, int k, double count, double bytes);
/* The start-up a network message of `bytes` adds for its protocol (the rendezvous handshake above the switch: the
 * jump of the net row at net_step_*; 0 in the eager regime, or without a located switch). */
double pc_cost_net_handshake(const struct pc_machine_model *m, double bytes);
/* Whether a network message of msg_bytes goes in the rendezvous regime: at or above the calibrated protocol switch
 * (net_step_*, taken at the midpoint of the interval it was located in). false without a located switch. */
bool pc_model_net_handshake(const struct pc_machine_model *m, double msg_bytes);
/* One MPI message between ranks of one node: the measured row (shm_msg_time) interpolated, else the line. */
double pc_cost_shm_msg(const struct pc_machine_model *m, double bytes);
/* Whether the row of node messages was measured (every entry). */
bool pc_model_has_shm_msg(const struct pc_machine_model *m);
/* The start-up of a node message of `bytes`: its time less bytes x shm_beta (the large messages' per-byte rate), at
 * least shm_alpha. For costs that add the bytes of many messages at that rate and their start-ups apart
 * (pc_cost_direct_v): the protocol a message's size selects shows in its start-up. */
double pc_cost_shm_msg_startup(const struct pc_machine_model *m, double bytes);
/* One shared-memory transfer of `bytes` through n copies (1 or 2) with tau concurrent transfers. */
double pc_cost_shm_copy(const struct pc_machine_model *m, int n, int tau, double bytes);
/* What writing `bytes` into node-shared lines that another rank read last costs beyond the estimates' copy and
 * reduction terms, with streaming stores (stream) or ordinary ones: those terms are calibrated on lines the writer
 * holds and price the cheaper of the two ways, so the cheaper pays 0 and the other the measured difference
 * bytes x |store_normal - store_stream|. 0 when the model has not measured both. */
double pc_cost_shared_store(const struct pc_machine_model *m, bool stream, double bytes);
/* The sizes the store rounds are calibrated at (calibrate.c), smallest first: the model's small figures, then the
 * 1 MiB ones. */
extern const double pc_store_sizes[PC_STORE_SIZES];
/* One 2-copy transfer through a double-buffered node-shared slot whose first copy writes in the given store mode
 * (streaming stores or ordinary ones), tau at once: each mode's own table when the model measured the streaming
 * one (shm_stream_time; shm_time[1] is the ordinary mode's), else shm_time[1] plus pc_cost_shared_store. */
double pc_cost_shm_handoff(const struct pc_machine_model *m, bool stream, int tau, double bytes);
/* Whether the streaming 2-copy table was measured at every measured level. */
bool pc_model_has_stream_handoff(const struct pc_machine_model *m);
/* Reducing `bytes` of predefined (op_id, type_id), or a user op / unknown pair (-1). */
double pc_cost_reduce(const struct pc_machine_model *m, int op_id, int type_id, double bytes);
double pc_cost_transpose(const struct pc_machine_model *m, double bytes);
/* A message between two ranks, network or node depending on same_node. */
static inline double pc_cost_msg(const struct pc_machine_model *m, bool same_node, double bytes)
{
    return same_node ? pc_cost_shm_msg(m, bytes) : pc_cost_net(m, bytes);
}
/* Interpolates table[s] (sampled at pc_model_sizes) at bytes, log-log inside, linear in bytes outside. */
double pc_model_interp(const double table[PC_MODEL_NSIZES], double bytes);

/* ---- text form (the "model" block of a wisdom file, see wisdom/FORMAT.md) ---- */
/* Appends the block's lines to *buf (growing it with realloc; *len and *cap track it). Returns 0, -1 on ENOMEM. */
int pc_model_format(const struct pc_machine_model *m, char **buf, size_t *len, size_t *cap);
/* Applies one line of a model block to m. Returns 0, or -1 with a message in err for a malformed line
 * (unknown key, bad number, index out of range, negative or non-finite time). */
int pc_model_parse_line(struct pc_machine_model *m, const char *line, char *err, size_t errlen);

/* ---- the process's models, one per communicator shape ---- */
/* The shape a model is valid for, e.g. "P=8:N=2:ppn=4-4:oversub=1": the same machine measured with another
 * number of ranks per node or another oversubscription behaves differently. */
void pc_model_shape_key(const struct pc_shape *shape, char *buf, size_t len);
const struct pc_machine_model *pc_model_lookup(const char *shape);
int pc_model_remember(const struct pc_machine_model *m); /* copies; replaces the one with the same shape */
void pc_model_forget_all(void);
int pc_model_count(void);
const struct pc_machine_model *pc_model_at(int i);

#endif
