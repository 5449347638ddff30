/* The machine model: defaults, interpolation, the cost primitives and the model's text form. */
#include "base/model.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double pc_model_sizes[PC_MODEL_NSIZES] = {8, 64, 512, 4096, 32768, 262144, 2097152};
const char *const pc_model_figure_names[PC_FIG_COUNT] = {"net",  "o",      "g",         "shm_alpha", "shm_beta", "sync",
                                                         "taulop", "transpose", "reduce", "reduce_default",
                                                         "turn", "mpi_turn"};
const char *const pc_model_check_names[PC_CHECK_COUNT] = {"shm_msg", "taulop", "net"};

void pc_model_default(struct pc_machine_model *m)
{
    /* An uncalibrated guess at a current cluster node: 2 us network latency, 10 GB/s links that two
     * concurrent pairs can fill better than one at small sizes; MPI inside the node 0.5 us and 8 GB/s;
     * shared-memory copies at 8 GB/s alone, slowing by 30% per extra concurrent copy. */
    memset(m, 0, sizeof *m);
    snprintf(m->shape, sizeof m->shape, "default");
    m->L_us = 2.0;
    m->o_us = 0.5;
    m->g_us = 0.5;
    m->G_us_per_b = 1.0 / 10000.0;
    m->net_ports = 2;
    for (int s = 0; s < PC_MODEL_NSIZES; s++) {
        double b = pc_model_sizes[s];
        m->net_time[0][s] = m->L_us + 2 * m->o_us + (b - 1) * m->G_us_per_b;
        /* two pairs: the gap hides at small sizes, the link is shared at large ones */
        m->net_time[1][s] = m->L_us + 2 * m->o_us + m->g_us + 2 * (b - 1) * m->G_us_per_b * (b > 65536 ? 1.0 : 0.6);
    }
    m->shm_alpha_us = 0.5;
    m->shm_beta_us_per_b = 1.0 / 8000.0;
    m->shm_taus = 2;
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < 2; t++)
            for (int s = 0; s < PC_MODEL_NSIZES; s++)
                m->shm_time[n][t][s] = (n + 1) * (0.05 + pc_model_sizes[s] / 8000.0) * (1.0 + 0.3 * t);
    m->sync_us = 0.2;
    m->transpose_us_per_b = 1.0 / 4000.0;
    m->reduce_default_us_per_b = 1.0 / 1000.0;
    pc_model_derive(m, 2);
}

void pc_model_derive(struct pc_machine_model *m, int nnodes)
{
    if (nnodes > 1) {
        m->alpha_us = m->L_us + 2 * m->o_us;
        m->beta_us_per_b = m->G_us_per_b;
    } else {
        m->alpha_us = m->shm_alpha_us;
        m->beta_us_per_b = m->shm_beta_us_per_b;
    }
    /* The generic reduction: the cost of a double sum when measured, else the default. */
    double c = 0;
    for (int o = 0; o < PC_MODEL_MAX_OPS && c == 0; o++)
        for (int t = 0; t < PC_MODEL_MAX_TYPES && c == 0; t++) c = m->reduce_us_per_b[o][t];
    m->gamma_us_per_b = c > 0 ? c : m->reduce_default_us_per_b;
    double one = pc_model_interp(m->shm_time[0][0], 262144.0);
    m->copy_us_per_b = one > 0 ? one / 262144.0 : 1.0 / 8000.0;
}

double pc_model_interp(const double table[PC_MODEL_NSIZES], double bytes)
{
    if (bytes < 1) bytes = 1;
    const double *x = pc_model_sizes;
    int last = PC_MODEL_NSIZES - 1;
    if (bytes <= x[0]) return table[0];
    if (bytes >= x[last]) {
        /* beyond the table the cost grows with the last interval's per-byte slope */
        double slope = (table[last] - table[last - 1]) / (x[last] - x[last - 1]);
        if (slope < 0) slope = 0;
        return table[last] + (bytes - x[last]) * slope;
    }
    int s = 0;
    while (bytes > x[s + 1]) s++;
    double y0 = table[s], y1 = table[s + 1];
    if (y0 <= 0 || y1 <= 0) return y0 + (y1 - y0) * (bytes - x[s]) / (x[s + 1] - x[s]);
    double f = log(bytes / x[s]) / log(x[s + 1] / x[s]);
    return exp(log(y0) + f * (log(y1) - log(y0)));
}

double pc_model_interp_net(const struct pc_machine_model *m, const double row[PC_MODEL_NSIZES], double bytes,
                           double msg_bytes)
{
    return pc_model_interp_stepped(row, m->net_step_low_b, m->net_step_high_b, bytes, msg_bytes);
}

double pc_model_interp_stepped(const double row[PC_MODEL_NSIZES], double low, double high, double bytes,
                               double msg_bytes)
{
    const double *x = pc_model_sizes;
    const int last = PC_MODEL_NSIZES - 1;
    if (!(low > 0 && high > low)) return pc_model_interp(row, bytes);
    const double at = 0.5 * (low + high);
    int s = 0;
    while (s + 1 < last && x[s + 1] < at) s++;
    /* the switch inside sampled interval s, with a sample above it to give the large messages' per-byte slope */
    if (!(x[s] < at && at < x[s + 1]) || s + 2 > last || row[s] <= 0 || row[s + 1] <= 0 || row[s + 2] <= 0)
        return pc_model_interp(row, bytes);
    double slope_up = (row[s + 2] - row[s + 1]) / (x[s + 2] - x[s + 1]);
    if (slope_up < 0) slope_up = 0;
    /* the large regime extended down to x[s], and the start-up it adds there */
    const double jump = row[s + 1] - (x[s + 1] - x[s]) * slope_up - row[s];
    if (jump <= 0) return pc_model_interp(row, bytes);
    if (bytes <= x[s]) return pc_model_interp(row, bytes); /* only the small regime was sampled there */
    double upper = bytes >= x[s + 1] ? pc_model_interp(row, bytes) : row[s + 1] - (x[s + 1] - bytes) * slope_up;
    return msg_bytes >= at ? upper : upper - jump;
}

bool pc_model_net_handshake(const struct pc_machine_model *m, double msg_bytes)
{
    const double low = m->net_step_low_b, high = m->net_step_high_b;
    return low > 0 && high > low && msg_bytes >= 0.5 * (low + high);
}

double pc_cost_net_handshake(const struct pc_machine_model *m, double bytes)
{
    if (m->net_ports < 1 || !pc_model_net_handshake(m, bytes)) return 0.0;
    double t = pc_model_interp_net(m, m->net_time[0], bytes, bytes) - pc_model_interp_net(m, m->net_time[0], bytes, 0);
    return t > 0 ? t : 0.0;
}

/* Table row at concurrency level `level` (1-based): measured, or extrapolated from the last two rows. With net, the
 * rows are its net_time, read in the protocol regime of msg_bytes (pc_model_interp_net). */
static double row_at(const struct pc_machine_model *net, const double row[PC_MODEL_NSIZES], double bytes,
                     double msg_bytes)
{
    return net ? pc_model_interp_net(net, row, bytes, msg_bytes) : pc_model_interp(row, bytes);
}

static double level_interp(const double rows[][PC_MODEL_NSIZES], int measured, int level, double bytes,
                           const struct pc_machine_model *net, double msg_bytes)
{
    if (measured < 1) return 0;
    if (level < 1) level = 1;
    if (level <= measured) return row_at(net, rows[level - 1], bytes, msg_bytes);
    double last = row_at(net, rows[measured - 1], bytes, msg_bytes);
    if (measured < 2) return last * level / measured;
    double prev = row_at(net, rows[measured - 2], bytes, msg_bytes);
    double step = last - prev;
    if (step < 0) step = 0;
    return last + step * (level - measured);
}

double pc_cost_net(const struct pc_machine_model *m, double bytes)
{
    if (m->net_ports >= 1) return pc_model_interp_net(m, m->net_time[0], bytes, bytes);
    return m->L_us + 2 * m->o_us + (bytes > 1 ? bytes - 1 : 0) * m->G_us_per_b;
}

/* k concurrent messages of `bytes` in the regime of msg_bytes */
static double net_concurrent_as(const struct pc_machine_model *m, int k, double bytes, double msg_bytes)
{
    if (m->net_ports >= 1) return level_interp(m->net_time, m->net_ports, k <= 1 ? 1 : k, bytes, m, msg_bytes);
    double one = m->L_us + 2 * m->o_us + (bytes > 1 ? bytes - 1 : 0) * m->G_us_per_b;
    return k <= 1 ? one : one + (k - 1) * (m->g_us + bytes * m->G_us_per_b);
}

double pc_cost_net_concurrent(const struct pc_machine_model *m, int k, double bytes)
{
    return net_concurrent_as(m, k, bytes, bytes);
}

double pc_cost_net_posted(const struct pc_machine_model *m, int k, double count, double bytes)
{
    if (count <= 0) return 0.0;
    return net_concurrent_as(m, k, count * bytes, bytes) + (count - 1) * m->g_us;
}

const double pc_store_sizes[PC_STORE_SIZES] = {256, 16384, 1048576};

double pc_cost_shared_store(const struct pc_machine_model *m, bool stream, double bytes)
{
    double normal = m->store_normal_us_per_b, streamed = m->store_stream_us_per_b;
    if (normal <= 0 || streamed <= 0 || bytes <= 0) return 0;
    bool small = true;
    for (int i = 0; i < PC_STORE_SIZES - 1; i++)
        small = small && m->store_small_normal_us_per_b[i] > 0 && m->store_small_stream_us_per_b[i] > 0;
    if (small && bytes < pc_store_sizes[PC_STORE_SIZES - 1]) {
        /* the figures at this size: log-linear between the two calibrated sizes around it, the smallest below */
        double nv[PC_STORE_SIZES], sv[PC_STORE_SIZES];
        for (int i = 0; i < PC_STORE_SIZES - 1; i++) {
            nv[i] = m->store_small_normal_us_per_b[i];
            sv[i] = m->store_small_stream_us_per_b[i];
        }
        nv[PC_STORE_SIZES - 1] = normal;
        sv[PC_STORE_SIZES - 1] = streamed;
        int i = 0;
        while (i < PC_STORE_SIZES - 2 && bytes >= pc_store_sizes[i + 1]) i++;
        double w = (log(bytes) - log(pc_store_sizes[i])) / (log(pc_store_sizes[i + 1]) - log(pc_store_sizes[i]));
        w = w < 0 ? 0 : w > 1 ? 1 : w;
        normal = nv[i] + w * (nv[i + 1] - nv[i]);
        streamed = sv[i] + w * (sv[i + 1] - sv[i]);
    }
    const double mine = stream ? streamed : normal, other = stream ? normal : streamed;
    return mine > other ? bytes * (mine - other) : 0;
}

bool pc_model_has_shm_msg(const struct pc_machine_model *m)
{
    for (int s = 0; s < PC_MODEL_NSIZES; s++)
        if (!(m->shm_msg_time[s] > 0)) return false;
    return true;
}

double pc_cost_shm_msg(const struct pc_machine_model *m, double bytes)
{
    if (pc_model_has_shm_msg(m))
        return pc_model_interp_stepped(m->shm_msg_time, m->shm_step_low_b, m->shm_step_high_b, bytes, bytes);
    return m->shm_alpha_us + bytes * m->shm_beta_us_per_b;
}

double pc_cost_shm_msg_startup(const struct pc_machine_model *m, double bytes)
{
    double startup = pc_cost_shm_msg(m, bytes) - bytes * m->shm_beta_us_per_b;
    return startup > m->shm_alpha_us ? startup : m->shm_alpha_us;
}

double pc_cost_shm_copy(const struct pc_machine_model *m, int n, int tau, double bytes)
{
    if (bytes <= 0) return 0;
    if (n < 1) n = 1;
    if (n > 2) return pc_cost_shm_copy(m, 2, tau, bytes) + (n - 2) * pc_cost_shm_copy(m, 1, tau, bytes);
    return level_interp(m->shm_time[n - 1], m->shm_taus, tau, bytes, NULL, 0);
}

bool pc_model_has_stream_handoff(const struct pc_machine_model *m)
{
    if (m->shm_taus < 1) return false;
    for (int t = 0; t < m->shm_taus && t < PC_MODEL_MAX_TAU; t++)
        if (m->shm_stream_time[t][0] <= 0) return false;
    return true;
}

double pc_cost_shm_handoff(const struct pc_machine_model *m, bool stream, int tau, double bytes)
{
    if (bytes <= 0) return 0;
    if (!pc_model_has_stream_handoff(m)) return pc_cost_shm_copy(m, 2, tau, bytes) + pc_cost_shared_store(m, stream, bytes);
    return stream ? level_interp(m->shm_stream_time, m->shm_taus, tau, bytes, NULL, 0) : pc_cost_shm_copy(m, 2, tau, bytes);
}

double pc_cost_reduce(const struct pc_machine_model *m, int op_id, int type_id, double bytes)
{
    double c = 0;
    if (op_id >= 0 && op_id < PC_MODEL_MAX_OPS && type_id >= 0 && type_id < PC_MODEL_MAX_TYPES)
        c = m->reduce_us_per_b[op_id][type_id];
    if (c <= 0) c = m->reduce_default_us_per_b;
    return c * bytes;
}

double pc_cost_transpose(const struct pc_machine_model *m, double bytes) { return m->transpose_us_per_b * bytes; }

/* ---- spread and consistency ---- */

static double quantile_sorted(const double *v, int n, double q)
{
    double h = (n - 1) * q;
    int i = (int)h;
    if (i >= n - 1) return v[n - 1];
    return v[i] + (h - i) * (v[i + 1] - v[i]);
}

double pc_model_spread(double *v, int n)
{
    if (n < 2) return 1.0;
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
            double t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    double q1 = quantile_sorted(v, n, 0.25), q3 = quantile_sorted(v, n, 0.75);
    if (q1 <= 0) return q3 > 0 ? 1e9 : 1.0;
    return q3 / q1;
}

double pc_model_running_cost(double *v, int n)
{
    if (n <= 0) return 0;
    pc_model_spread(v, n); /* sorts */
    return quantile_sorted(v, n, 0.25);
}

/* The most an 8-byte MPI message inside a node can cost: its measured start-up and per-byte cost, but no more
 * than a message of the same size between nodes (rule 1 below) when both were measured. */
static double node_message_bound(const struct pc_machine_model *m)
{
    double alpha = m->shm_alpha_us;
    if (m->net_ports >= 1 && m->net_spread[0][0] > 0 && m->net_time[0][0] < alpha) alpha = m->net_time[0][0];
    return alpha + 8 * m->shm_beta_us_per_b;
}

/* Calls fn(m, n, level, s) for every measured entry of a concurrent level (>= 2) that runs faster than the lone
 * level-1 entry beyond the noise slack; returns whether there was one. table 0: net, 1 and 2: taulop n = 1, 2. */
static bool faster_with_concurrency(struct pc_machine_model *m, int table, bool clamp)
{
    bool any = false;
    int levels = table == 0 ? m->net_ports : m->shm_taus;
    for (int k = 1; k < levels && k < PC_MODEL_MAX_TAU; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++) {
            double *t = table == 0 ? &m->net_time[k][s] : &m->shm_time[table - 1][k][s];
            double lone = table == 0 ? m->net_time[0][s] : m->shm_time[table - 1][0][s];
            double sp = table == 0 ? m->net_spread[k][s] : m->shm_spread[table - 1][k][s];
            double sp1 = table == 0 ? m->net_spread[0][s] : m->shm_spread[table - 1][0][s];
            if (sp > 0 && sp1 > 0 && *t * PC_MODEL_CONSISTENCY_SLACK < lone) {
                any = true;
                if (clamp) *t = lone;
            }
        }
    return any;
}

/* The rules, each between figures measured in the same calibration (a figure with spread 0 was not measured and
 * is never blamed):
 *  1. Inter-node latency is at least intra-node latency: a message between nodes goes through the same MPI
 *     matching and start-up as one inside a node, plus the network. A node message (shm_alpha) measured slower
 *     than an 8-byte network message (net k=1) waited for the scheduler: it is the one blamed and clamped down
 *     (and the row of node messages, measured in the same rounds, loses the same excess).
 *  2. A flag signal costs no more than an MPI message of the same size inside the node: MPI's shared-memory
 *     transport signals the receiver the same way and matches and copies besides. A flag signal (sync)
 *     measured slower waited for a scheduler slice; it is clamped to the 8-byte node message (rule 1's bound).
 *  3. Per-byte cost cannot fall with concurrency: tau transfers at once share the memory system (and k pairs
 *     share the node's link), so none of them runs faster than one alone; at best they run in parallel at the
 *     lone speed. A concurrent entry (taulop tau >= 2, net k >= 2) measured faster than the lone one beyond
 *     PC_MODEL_CONSISTENCY_SLACK met a cold lone measurement or a warm concurrent one; it is raised to the lone
 *     entry. */
unsigned pc_model_check(const struct pc_machine_model *m)
{
    unsigned bad = 0;
    struct pc_machine_model *w = (struct pc_machine_model *)m; /* read only: clamp = false */
    if (m->net_ports >= 1 && m->net_spread[0][0] > 0 && m->spread[PC_FIG_SHM_ALPHA] > 0 &&
        m->net_time[0][0] < m->shm_alpha_us)
        bad |= PC_FIG_BIT(PC_FIG_SHM_ALPHA);
    if (m->spread[PC_FIG_SYNC] > 0 && m->spread[PC_FIG_SHM_ALPHA] > 0 && m->sync_us > node_message_bound(m))
        bad |= PC_FIG_BIT(PC_FIG_SYNC);
    if (faster_with_concurrency(w, 0, false)) bad |= PC_FIG_BIT(PC_FIG_NET);
    if (faster_with_concurrency(w, 1, false) || faster_with_concurrency(w, 2, false)) bad |= PC_FIG_BIT(PC_FIG_TAULOP);
    return bad;
}

void pc_model_clamp(struct pc_machine_model *m, unsigned which, int nnodes)
{
    which &= pc_model_check(m);
    /* rule 2's bound uses rule 1's clamped start-up: compute it first */
    double bound = node_message_bound(m);
    if (which & PC_FIG_BIT(PC_FIG_SHM_ALPHA)) {
        /* the row of node messages waited alike: each entry loses the same excess, none below the new start-up */
        const double excess = m->shm_alpha_us - m->net_time[0][0];
        m->shm_alpha_us = m->net_time[0][0];
        if (pc_model_has_shm_msg(m))
            for (int s = 0; s < PC_MODEL_NSIZES; s++)
                m->shm_msg_time[s] = m->shm_msg_time[s] - excess > m->shm_alpha_us ? m->shm_msg_time[s] - excess
                                                                                     : m->shm_alpha_us;
    }
    if (which & PC_FIG_BIT(PC_FIG_SYNC)) m->sync_us = bound;
    if (which & PC_FIG_BIT(PC_FIG_NET)) faster_with_concurrency(m, 0, true);
    if (which & PC_FIG_BIT(PC_FIG_TAULOP)) {
        faster_with_concurrency(m, 1, true);
        faster_with_concurrency(m, 2, true);
    }
    m->clamped |= which;
    pc_model_derive(m, nnodes);
}

double pc_model_check_band(double predicted_spread, double measured_spread)
{
    double a = predicted_spread > 1 ? predicted_spread : 1, b = measured_spread > 1 ? measured_spread : 1;
    return a * b > PC_MODEL_STABLE_SPREAD ? a * b : PC_MODEL_STABLE_SPREAD;
}

bool pc_model_check_disagrees(double predicted, double measured, double band, double *ratio)
{
    *ratio = 0;
    if (!(predicted > 0) || !(measured > 0)) return false;
    *ratio = measured / predicted;
    return *ratio > band || *ratio * band < 1;
}

double pc_model_interp_spread(const double spread[PC_MODEL_NSIZES], double bytes)
{
    int last = PC_MODEL_NSIZES - 1;
    if (bytes <= pc_model_sizes[0]) return spread[0];
    if (bytes >= pc_model_sizes[last]) return spread[last];
    int s = 0;
    while (bytes > pc_model_sizes[s + 1]) s++;
    if (bytes == pc_model_sizes[s + 1]) return spread[s + 1];
    return spread[s] > spread[s + 1] ? spread[s] : spread[s + 1];
}

void pc_model_fprint_marks(FILE *out, const struct pc_shape *shape)
{
    char key[64];
    pc_model_shape_key(shape, key, sizeof key);
    const struct pc_machine_model *m = pc_model_lookup(key);
    if (!m || !m->calibrated) return;
    fprintf(out, "  model       calibrated in %.3f s, sync %.3g us, turn %.3g us (MPI %.3g us)", m->calibration_seconds,
            m->sync_us, m->turn_us, m->mpi_turn_us);
    /* the shared-line store rounds (per MiB): which store mode the estimates of the plans that
     * write node-shared areas (hierarchical allreduces, staging alltoalls) favour */
    if (m->store_normal_us_per_b > 0 && m->store_stream_us_per_b > 0)
        fprintf(out, ", stores normal %.3g stream %.3g us/MiB", m->store_normal_us_per_b * 1048576.0,
                m->store_stream_us_per_b * 1048576.0);
    if (m->store_small_normal_us_per_b[0] > 0 && m->store_small_normal_us_per_b[1] > 0)
        fprintf(out, " (at 256 B: %.3g and %.3g, at 16 KiB: %.3g and %.3g)", m->store_small_normal_us_per_b[0] * 1048576.0,
                m->store_small_stream_us_per_b[0] * 1048576.0, m->store_small_normal_us_per_b[1] * 1048576.0,
                m->store_small_stream_us_per_b[1] * 1048576.0);
    if (m->net_step_high_b > 0)
        fprintf(out, ", network protocol switch between %.0f and %.0f B", m->net_step_low_b, m->net_step_high_b);
    if (pc_model_has_shm_msg(m))
        fprintf(out, ", node messages 4 KiB %.3g us, 32 KiB %.3g us", pc_cost_shm_msg(m, 4096), pc_cost_shm_msg(m, 32768));
    if (m->shm_step_high_b > 0)
        fprintf(out, ", node protocol switch between %.0f and %.0f B", m->shm_step_low_b, m->shm_step_high_b);
    const char *word[2] = {"unstable", "clamped"};
    unsigned bits[2] = {m->unstable, m->clamped};
    for (int w = 0; w < 2; w++) {
        fprintf(out, "; %s:", word[w]);
        if (!bits[w]) fprintf(out, " none");
        for (int f = 0; f < PC_FIG_COUNT; f++)
            if (bits[w] & PC_FIG_BIT(f)) fprintf(out, " %s", pc_model_figure_names[f]);
    }
    /* the check after calibration: each probe's measured / predicted, and the figures that still disagreed */
    bool checked = false;
    for (int i = 0; i < PC_CHECK_COUNT; i++)
        if (m->check_ratio[i] > 0) {
            fprintf(out, "%s %s %.2f", checked ? "," : "; check (measured/predicted):", pc_model_check_names[i],
                    m->check_ratio[i]);
            checked = true;
        }
    if (m->disagreed) {
        fprintf(out, "; disagreed:");
        for (int f = 0; f < PC_FIG_COUNT; f++)
            if (m->disagreed & PC_FIG_BIT(f)) fprintf(out, " %s", pc_model_figure_names[f]);
    }
    fprintf(out, "\n");
}

/* ---- text form ---- */

static int append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) return -1;
        if (*buf && *len + (size_t)n < *cap) {
            *len += (size_t)n;
            return 0;
        }
        size_t want = (*cap ? *cap * 2 : 1024) + (size_t)n + 1;
        char *grown = realloc(*buf, want);
        if (!grown) return -1;
        *buf = grown;
        *cap = want;
    }
}

static int append_row(char **buf, size_t *len, size_t *cap, const char *head, const double row[PC_MODEL_NSIZES])
{
    if (append(buf, len, cap, "%s", head)) return -1;
    for (int s = 0; s < PC_MODEL_NSIZES; s++)
        if (append(buf, len, cap, "%s%.17g", s ? "," : " ", row[s])) return -1;
    return append(buf, len, cap, "\n");
}

int pc_model_format(const struct pc_machine_model *m, char **buf, size_t *len, size_t *cap)
{
    char head[64];
    if (append(buf, len, cap, "shape %s\ncalibrated %d %.3f\n", m->shape, m->calibrated ? 1 : 0,
               m->calibration_seconds) ||
        append(buf, len, cap, "loggp %.17g %.17g %.17g %.17g\n", m->L_us, m->o_us, m->g_us, m->G_us_per_b) ||
        append(buf, len, cap, "shm_p2p %.17g %.17g\nsync %.17g\ntranspose %.17g\nreduce_default %.17g\n", m->shm_alpha_us,
               m->shm_beta_us_per_b, m->sync_us, m->transpose_us_per_b, m->reduce_default_us_per_b))
        return -1;
    /* only when measured: a model without it reads back as 0, which is what it means */
    if (m->turn_us > 0 && append(buf, len, cap, "turn %.17g\n", m->turn_us)) return -1;
    if (m->mpi_turn_us > 0 && append(buf, len, cap, "mpi_turn %.17g\n", m->mpi_turn_us)) return -1;
    if (m->net_step_high_b > 0 &&
        append(buf, len, cap, "net_step %.17g %.17g\n", m->net_step_low_b, m->net_step_high_b))
        return -1;
    if (pc_model_has_shm_msg(m) && append_row(buf, len, cap, "shm_msg", m->shm_msg_time)) return -1;
    if (m->shm_step_high_b > 0 &&
        append(buf, len, cap, "shm_step %.17g %.17g\n", m->shm_step_low_b, m->shm_step_high_b))
        return -1;
    /* likewise (older texts lack the line and read back as not measured) */
    if (m->store_normal_us_per_b > 0 && m->store_stream_us_per_b > 0 &&
        append(buf, len, cap, "stores %.17g %.17g\n", m->store_normal_us_per_b, m->store_stream_us_per_b))
        return -1;
    if (m->store_small_normal_us_per_b[0] > 0 && m->store_small_stream_us_per_b[0] > 0 &&
        m->store_small_normal_us_per_b[1] > 0 && m->store_small_stream_us_per_b[1] > 0 &&
        append(buf, len, cap, "stores_small %.17g %.17g %.17g %.17g\n", m->store_small_normal_us_per_b[0],
               m->store_small_stream_us_per_b[0], m->store_small_normal_us_per_b[1], m->store_small_stream_us_per_b[1]))
        return -1;
    for (int k = 0; k < m->net_ports && k < PC_MODEL_MAX_PORTS; k++) {
        snprintf(head, sizeof head, "net %d", k + 1);
        if (append_row(buf, len, cap, head, m->net_time[k])) return -1;
    }
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < m->shm_taus && t < PC_MODEL_MAX_TAU; t++) {
            snprintf(head, sizeof head, "taulop %d %d", n + 1, t + 1);
            if (append_row(buf, len, cap, head, m->shm_time[n][t])) return -1;
        }
    /* only when measured (older texts lack the lines: the streaming handoff then falls back, pc_cost_shm_handoff) */
    for (int t = 0; t < m->shm_taus && t < PC_MODEL_MAX_TAU; t++)
        if (m->shm_stream_time[t][0] > 0) {
            snprintf(head, sizeof head, "taulop_stream %d", t + 1);
            if (append_row(buf, len, cap, head, m->shm_stream_time[t])) return -1;
        }
    for (int o = 0; o < PC_MODEL_MAX_OPS; o++)
        for (int t = 0; t < PC_MODEL_MAX_TYPES; t++)
            if (m->reduce_us_per_b[o][t] > 0 &&
                append(buf, len, cap, "reduce %d %d %.17g\n", o, t, m->reduce_us_per_b[o][t]))
                return -1;
    /* The spreads (only those measured), then the figures marked unstable or clamped. */
    for (int k = 0; k < m->net_ports && k < PC_MODEL_MAX_PORTS; k++)
        if (m->net_spread[k][0] > 0) {
            snprintf(head, sizeof head, "spread net %d", k + 1);
            if (append_row(buf, len, cap, head, m->net_spread[k])) return -1;
        }
    for (int n = 0; n < 2; n++)
        for (int t = 0; t < m->shm_taus && t < PC_MODEL_MAX_TAU; t++)
            if (m->shm_spread[n][t][0] > 0) {
                snprintf(head, sizeof head, "spread taulop %d %d", n + 1, t + 1);
                if (append_row(buf, len, cap, head, m->shm_spread[n][t])) return -1;
            }
    for (int t = 0; t < m->shm_taus && t < PC_MODEL_MAX_TAU; t++)
        if (m->shm_stream_spread[t][0] > 0) {
            snprintf(head, sizeof head, "spread taulop_stream %d", t + 1);
            if (append_row(buf, len, cap, head, m->shm_stream_spread[t])) return -1;
        }
    for (int f = 0; f < PC_FIG_COUNT; f++)
        if (f != PC_FIG_NET && f != PC_FIG_TAULOP && m->spread[f] > 0 &&
            append(buf, len, cap, "spread %s %.17g\n", pc_model_figure_names[f], m->spread[f]))
            return -1;
    for (int i = 0; i < PC_CHECK_COUNT; i++)
        if (m->check_ratio[i] > 0 &&
            append(buf, len, cap, "check %s %.17g %.17g\n", pc_model_check_names[i], m->check_ratio[i], m->check_band[i]))
            return -1;
    const char *word[3] = {"unstable", "clamped", "disagreed"};
    unsigned bits[3] = {m->unstable, m->clamped, m->disagreed};
    for (int w = 0; w < 3; w++) {
        if (!bits[w]) continue;
        if (append(buf, len, cap, "%s", word[w])) return -1;
        for (int f = 0; f < PC_FIG_COUNT; f++)
            if ((bits[w] & PC_FIG_BIT(f)) && append(buf, len, cap, " %s", pc_model_figure_names[f])) return -1;
        if (append(buf, len, cap, "\n")) return -1;
    }
    return 0;
}

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* Reads one time or rate: finite, >= 0. Advances *p past it and one separator. */
static int read_number(const char **p, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(*p, &end);
    if (end == *p || errno || !isfinite(v) || v < 0 || v > 1e12) return -1;
    *out = v;
    *p = end;
    if (**p == ',' || **p == ' ') (*p)++;
    return 0;
}

static int read_int(const char **p, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(*p, &end, 10);
    if (end == *p || errno || v < lo || v > hi) return -1;
    *out = (int)v;
    *p = end;
    if (**p == ' ') (*p)++;
    return 0;
}

static int read_row(const char **p, double row[PC_MODEL_NSIZES])
{
    for (int s = 0; s < PC_MODEL_NSIZES; s++)
        if (read_number(p, &row[s])) return -1;
    return 0;
}

static bool at_end(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    return *p == '\0';
}

/* Reads a figure name (one of pc_model_figure_names) followed by a blank or the end; -1 when unknown. */
static int read_figure(const char **p)
{
    size_t n = strcspn(*p, " \t\r\n");
    for (int f = 0; f < PC_FIG_COUNT; f++)
        if (strlen(pc_model_figure_names[f]) == n && strncmp(*p, pc_model_figure_names[f], n) == 0) {
            *p += n;
            if (**p == ' ') (*p)++;
            return f;
        }
    return -1;
}

/* "spread net K row", "spread taulop N TAU row", "spread taulop_stream TAU row" or "spread FIGURE value"; a
 * spread is a ratio, >= 1. */
static int spread_line(struct pc_machine_model *m, const char **p)
{
    static const char stream_word[] = "taulop_stream ";
    bool stream = strncmp(*p, stream_word, sizeof stream_word - 1) == 0;
    if (stream) *p += sizeof stream_word - 1;
    int f = stream ? -1 : read_figure(p), a = 0, b = 0;
    double *row = NULL, one = 0;
    if (stream) {
        if (read_int(p, 1, PC_MODEL_MAX_TAU, &b)) return 0;
        row = m->shm_stream_spread[b - 1];
    } else if (f == PC_FIG_NET) {
        if (read_int(p, 1, PC_MODEL_MAX_PORTS, &a)) return 0;
        row = m->net_spread[a - 1];
    } else if (f == PC_FIG_TAULOP) {
        if (read_int(p, 1, 2, &a) || read_int(p, 1, PC_MODEL_MAX_TAU, &b)) return 0;
        row = m->shm_spread[a - 1][b - 1];
    } else if (f >= 0) {
        if (read_number(p, &one) || one < 1) return 0;
        m->spread[f] = one;
        return 1;
    } else {
        return 0;
    }
    double in[PC_MODEL_NSIZES];
    if (read_row(p, in)) return 0;
    for (int s = 0; s < PC_MODEL_NSIZES; s++)
        if (in[s] < 1) return 0;
    memcpy(row, in, sizeof in);
    return 1;
}

/* "check PROBE RATIO BAND": a ratio > 0, a band >= 1. */
static int check_line(struct pc_machine_model *m, const char **p)
{
    size_t n = strcspn(*p, " \t\r\n");
    for (int i = 0; i < PC_CHECK_COUNT; i++)
        if (strlen(pc_model_check_names[i]) == n && strncmp(*p, pc_model_check_names[i], n) == 0) {
            *p += n;
            if (**p == ' ') (*p)++;
            double ratio, band;
            if (read_number(p, &ratio) || ratio <= 0 || read_number(p, &band) || band < 1) return 0;
            m->check_ratio[i] = ratio;
            m->check_band[i] = band;
            return 1;
        }
    return 0;
}

/* "unstable FIGURE..." / "clamped FIGURE...": at least one known figure name. */
static int figure_list(const char **p, unsigned *bits)
{
    int count = 0;
    while (**p && **p != '\r' && **p != '\n') {
        int f = read_figure(p);
        if (f < 0) return 0;
        *bits |= PC_FIG_BIT(f);
        count++;
    }
    return count > 0;
}

int pc_model_parse_line(struct pc_machine_model *m, const char *line, char *err, size_t errlen)
{
    char key[24];
    int klen = 0;
    const char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    while (*p && *p != ' ' && klen < (int)sizeof key - 1) key[klen++] = *p++;
    key[klen] = '\0';
    if (*p == ' ') p++;
    int ok = 0, a = 0, b = 0;
    if (strcmp(key, "shape") == 0) {
        size_t n = strcspn(p, "\r\n");
        if (n == 0 || n >= sizeof m->shape) return fail(err, errlen, "model shape missing or too long");
        memcpy(m->shape, p, n);
        m->shape[n] = '\0';
        return 0;
    } else if (strcmp(key, "calibrated") == 0) {
        ok = !read_int(&p, 0, 1, &a) && !read_number(&p, &m->calibration_seconds);
        m->calibrated = a == 1;
    } else if (strcmp(key, "loggp") == 0) {
        ok = !read_number(&p, &m->L_us) && !read_number(&p, &m->o_us) && !read_number(&p, &m->g_us) &&
             !read_number(&p, &m->G_us_per_b);
    } else if (strcmp(key, "shm_p2p") == 0) {
        ok = !read_number(&p, &m->shm_alpha_us) && !read_number(&p, &m->shm_beta_us_per_b);
    } else if (strcmp(key, "shm_msg") == 0) { /* the row of node messages, every entry > 0 (pc_model_has_shm_msg) */
        ok = !read_row(&p, m->shm_msg_time) && pc_model_has_shm_msg(m);
    } else if (strcmp(key, "shm_step") == 0) { /* "shm_step LOW HIGH": bytes, 0 < LOW < HIGH, as net_step */
        ok = !read_number(&p, &m->shm_step_low_b) && !read_number(&p, &m->shm_step_high_b) &&
             m->shm_step_low_b > 0 && m->shm_step_high_b > m->shm_step_low_b && m->shm_step_high_b <= 1e12;
    } else if (strcmp(key, "sync") == 0) {
        ok = !read_number(&p, &m->sync_us);
    } else if (strcmp(key, "turn") == 0) {
        ok = !read_number(&p, &m->turn_us);
    } else if (strcmp(key, "mpi_turn") == 0) {
        ok = !read_number(&p, &m->mpi_turn_us);
    } else if (strcmp(key, "net_step") == 0) { /* "net_step LOW HIGH": bytes, 0 < LOW < HIGH */
        ok = !read_number(&p, &m->net_step_low_b) && !read_number(&p, &m->net_step_high_b) &&
             m->net_step_low_b > 0 && m->net_step_high_b > m->net_step_low_b && m->net_step_high_b <= 1e12;
    } else if (strcmp(key, "stores") == 0) { /* "stores NORMAL STREAM", both per byte and > 0 */
        ok = !read_number(&p, &m->store_normal_us_per_b) && !read_number(&p, &m->store_stream_us_per_b) &&
             m->store_normal_us_per_b > 0 && m->store_stream_us_per_b > 0;
    } else if (strcmp(key, "stores_small") == 0) { /* "stores_small N S N S": at 256 B, then at 16 KiB, all > 0 */
        ok = true;
        for (int i = 0; i < PC_STORE_SIZES - 1 && ok; i++)
            ok = !read_number(&p, &m->store_small_normal_us_per_b[i]) &&
                 !read_number(&p, &m->store_small_stream_us_per_b[i]) && m->store_small_normal_us_per_b[i] > 0 &&
                 m->store_small_stream_us_per_b[i] > 0;
    } else if (strcmp(key, "transpose") == 0) {
        ok = !read_number(&p, &m->transpose_us_per_b);
    } else if (strcmp(key, "reduce_default") == 0) {
        ok = !read_number(&p, &m->reduce_default_us_per_b);
    } else if (strcmp(key, "net") == 0) {
        ok = !read_int(&p, 1, PC_MODEL_MAX_PORTS, &a) && !read_row(&p, m->net_time[a - 1]);
        if (ok && a > m->net_ports) m->net_ports = a;
    } else if (strcmp(key, "taulop") == 0) {
        ok = !read_int(&p, 1, 2, &a) && !read_int(&p, 1, PC_MODEL_MAX_TAU, &b) && !read_row(&p, m->shm_time[a - 1][b - 1]);
        if (ok && b > m->shm_taus) m->shm_taus = b;
    } else if (strcmp(key, "taulop_stream") == 0) {
        ok = !read_int(&p, 1, PC_MODEL_MAX_TAU, &b) && !read_row(&p, m->shm_stream_time[b - 1]);
    } else if (strcmp(key, "reduce") == 0) {
        ok = !read_int(&p, 0, PC_MODEL_MAX_OPS - 1, &a) && !read_int(&p, 0, PC_MODEL_MAX_TYPES - 1, &b) &&
             !read_number(&p, &m->reduce_us_per_b[a][b]);
    } else if (strcmp(key, "spread") == 0) {
        ok = spread_line(m, &p);
    } else if (strcmp(key, "check") == 0) {
        ok = check_line(m, &p);
    } else if (strcmp(key, "unstable") == 0 || strcmp(key, "clamped") == 0 || strcmp(key, "disagreed") == 0) {
        unsigned *bits = key[0] == 'u' ? &m->unstable : key[0] == 'c' ? &m->clamped : &m->disagreed;
        ok = figure_list(&p, bits);
    } else {
        return fail(err, errlen, "unknown model key '%s'", key);
    }
    if (!ok || !at_end(p)) return fail(err, errlen, "malformed model line '%s ...'", key);
    return 0;
}

/* ---- the process's models ---- */

void pc_model_shape_key(const struct pc_shape *sh, char *buf, size_t len)
{
    snprintf(buf, len, "P=%d:N=%d:ppn=%d-%d:oversub=%d", sh->nranks, sh->nnodes, sh->min_ppn, sh->max_ppn,
             sh->oversubscribed ? 1 : 0);
}

static struct pc_machine_model *models;
static int nmodels, models_cap;

const struct pc_machine_model *pc_model_lookup(const char *shape)
{
    for (int i = 0; i < nmodels; i++)
        if (strcmp(models[i].shape, shape) == 0) return &models[i];
    return NULL;
}

int pc_model_remember(const struct pc_machine_model *m)
{
    for (int i = 0; i < nmodels; i++)
        if (strcmp(models[i].shape, m->shape) == 0) {
            models[i] = *m;
            return 0;
        }
    if (nmodels == models_cap) {
        int cap = models_cap ? 2 * models_cap : 4;
        struct pc_machine_model *grown = realloc(models, sizeof *grown * (size_t)cap);
        if (!grown) return -1;
        models = grown;
        models_cap = cap;
    }
    models[nmodels++] = *m;
    return 0;
}

void pc_model_forget_all(void)
{
    free(models);
    models = NULL;
    nmodels = models_cap = 0;
}

int pc_model_count(void) { return nmodels; }
const struct pc_machine_model *pc_model_at(int i) { return i >= 0 && i < nmodels ? &models[i] : NULL; }
