#include "planner/planner.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plancoll_codes.h"
#include "base/errors.h"

void pc_default_model(struct pc_machine_model *m) { pc_model_default(m); }

static double planner_timelimit = PLANCOLL_NO_TIMELIMIT;

void plancoll_set_timelimit(double seconds) { planner_timelimit = seconds < 0 ? PLANCOLL_NO_TIMELIMIT : seconds; }

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *const pc_inter_names[3] = {"rd", "rsag", "mpi"};
const char *const pc_stores_names[3] = {"normal", "stream", "auto"};

static int parse_int(const char *v, int *out)
{
    char *end;
    long x = strtol(v, &end, 10);
    if (!*v || *end || x < 0 || x > 1 << 20) return -1;
    *out = (int)x;
    return 0;
}

/* Applies "key=value" to f; returns 0, or -1 for an unknown key or a bad value. */
static int parse_param(char *kv, struct pc_forced *f)
{
    char *eq = strchr(kv, '=');
    if (!eq) return -1;
    *eq = '\0';
    const char *k = kv, *v = eq + 1;
    if (strcmp(k, "leaders") == 0) {
        f->mask |= PC_PARAM_LEADERS;
        return parse_int(v, &f->params.leaders);
    }
    if (strcmp(k, "placement") == 0) {
        f->mask |= PC_PARAM_PLACEMENT;
        if (strcmp(v, "first") == 0) f->params.placement = 0;
        else if (strcmp(v, "numa") == 0) f->params.placement = 1;
        else return -1;
        return 0;
    }
    if (strcmp(k, "depth") == 0 || strcmp(k, "segments") == 0) {
        f->mask |= PC_PARAM_SEGMENTS;
        return parse_int(v, &f->params.segments);
    }
    if (strcmp(k, "transport") == 0) {
        f->mask |= PC_PARAM_TRANSPORT;
        if (strcmp(v, "p2p") == 0) f->params.transport = 0;
        else if (strcmp(v, "put") == 0) f->params.transport = 1;
        else return -1;
        return 0;
    }
    if (strcmp(k, "radix") == 0) {
        f->mask |= PC_PARAM_RADIX;
        return parse_int(v, &f->params.radix) || f->params.radix < 2 ? -1 : 0;
    }
    if (strcmp(k, "inter") == 0) {
        f->mask |= PC_PARAM_INTER;
        for (int i = 0; i < 3; i++)
            if (strcmp(v, pc_inter_names[i]) == 0) {
                f->params.inter = i;
                return 0;
            }
        return -1;
    }
    if (strcmp(k, "stores") == 0) {
        f->mask |= PC_PARAM_STORES;
        for (int i = 0; i < 3; i++)
            if (strcmp(v, pc_stores_names[i]) == 0) {
                f->params.stores = i;
                return 0;
            }
        return -1;
    }
    return -1;
}

int pc_parse_forced(const struct pc_algorithm_table *algs, const char *text, enum pc_collective coll,
                    struct pc_forced *out, int max, int *n)
{
    *n = 0;
    if (!text) return PLANCOLL_SUCCESS;
    const char *p = text;
    while (*p) {
        while (*p == ',' || *p == ' ') p++;
        if (!*p) break;
        const char *end = p;
        while (*end && *end != ',' && *end != ' ') end++;
        char entry[256];
        size_t len = (size_t)(end - p);
        const char *colon = memchr(p, ':', len);
        size_t name_len = colon ? (size_t)(colon - p) : len;
        if (name_len >= 96 || len >= sizeof entry) return pc_error(PLANCOLL_ERR_ALGORITHM, "PLANCOLL_ALGORITHM: name too long");
        memcpy(entry, p, len);
        entry[len] = '\0';
        entry[name_len] = '\0';
        if (pc_transpose_strategy_index(entry) >= 0 && !colon) { /* the transpose kind's entry, not a collective's */
            p = end;
            continue;
        }
        int idx = pc_algorithm_index(algs, entry);
        if (idx < 0)
            return pc_error(PLANCOLL_ERR_ALGORITHM,
                            "PLANCOLL_ALGORITHM names '%s', which is not a registered algorithm "
                            "(plancoll-bench --list shows them)",
                            entry);
        struct pc_forced f;
        memset(&f, 0, sizeof f);
        f.alg = idx;
        for (char *kv = colon ? entry + name_len + 1 : NULL; kv;) {
            char *next = strchr(kv, ':');
            if (next) *next++ = '\0';
            char copy[128];
            snprintf(copy, sizeof copy, "%s", kv);
            if (parse_param(kv, &f) != 0)
                return pc_error(PLANCOLL_ERR_ALGORITHM,
                                "PLANCOLL_ALGORITHM: '%s' of %s is not a parameter (leaders=N, placement=first|numa, "
                                "depth=N, segments=N, transport=p2p|put, radix=N, inter=rd|rsag|mpi, stores=normal|stream|auto)",
                                copy, entry);
            kv = next;
        }
        if (pc_algorithm_at(algs, idx)->collective == coll) {
            bool dup = false;
            for (int i = 0; i < *n; i++)
                dup = dup || (out[i].alg == f.alg && out[i].mask == f.mask &&
                              memcmp(&out[i].params, &f.params, sizeof f.params) == 0);
            if (!dup && *n < max) out[(*n)++] = f;
        }
        p = end;
    }
    return PLANCOLL_SUCCESS;
}

int pc_parse_algorithm_list(const struct pc_algorithm_table *algs, const char *text, enum pc_collective coll, int *out,
                            int max, int *n)
{
    struct pc_forced f[PC_MAX_CANDIDATES];
    int nf = 0;
    *n = 0;
    int err = pc_parse_forced(algs, text, coll, f, PC_MAX_CANDIDATES, &nf);
    if (err) return err;
    for (int i = 0; i < nf; i++) {
        bool dup = false;
        for (int j = 0; j < *n; j++) dup = dup || out[j] == f[i].alg;
        if (!dup && *n < max) out[(*n)++] = f[i].alg;
    }
    return PLANCOLL_SUCCESS;
}

static bool params_match(const struct pc_params *v, const struct pc_forced *f)
{
    return (!(f->mask & PC_PARAM_LEADERS) || v->leaders == f->params.leaders) &&
           (!(f->mask & PC_PARAM_PLACEMENT) || v->placement == f->params.placement) &&
           (!(f->mask & PC_PARAM_SEGMENTS) || v->segments == f->params.segments) &&
           (!(f->mask & PC_PARAM_TRANSPORT) || v->transport == f->params.transport) &&
           (!(f->mask & PC_PARAM_RADIX) || v->radix == f->params.radix) &&
           (!(f->mask & PC_PARAM_INTER) || v->inter == f->params.inter) &&
           (!(f->mask & PC_PARAM_STORES) || v->stores == f->params.stores);
}

static void params_apply(struct pc_params *v, const struct pc_forced *f)
{
    if (f->mask & PC_PARAM_LEADERS) v->leaders = f->params.leaders;
    if (f->mask & PC_PARAM_PLACEMENT) v->placement = f->params.placement;
    if (f->mask & PC_PARAM_SEGMENTS) v->segments = f->params.segments;
    if (f->mask & PC_PARAM_TRANSPORT) v->transport = f->params.transport;
    if (f->mask & PC_PARAM_RADIX) v->radix = f->params.radix;
    if (f->mask & PC_PARAM_INTER) v->inter = f->params.inter;
    if (f->mask & PC_PARAM_STORES) v->stores = f->params.stores;
}

/* The host-wide work bound (docs/design.md, "The host-wide work bound"): on a host with more ranks than cores the
 * ranks' CPU work is time-shared on the cores, while an estimate times each copy, reduction and MPI call at the rate
 * the calibration measured for a rank that had a core for its slice. An execution then cannot end before the most
 * crowded host has done its ranks' work on its cores: host_ranks x (a rank's mean busy time) / host_cores. The
 * candidate's time is the larger of its estimate and this bound; on a host with a core per rank (or a shape that
 * does not say) the bound is not applied, so nothing changes there. No constant: both factors come from the
 * census, the busy times from the same model terms as the estimates. */
static double host_work_bound(const struct pc_problem *p, double mean_busy_us)
{
    const struct pc_shape *s = &p->shape;
    if (!s->oversubscribed || s->host_cores <= 0 || s->host_ranks <= s->host_cores) return 0.0;
    return (double)s->host_ranks * mean_busy_us / (double)s->host_cores;
}

/* The model's figures of candidate c (its algorithm and parameters set): critical path (the estimate, or the
 * host-wide work bound where that is larger) and caller's busy time (within the estimate, as before the bound). */
static void predict_fixed(const struct pc_algorithm *a, const struct pc_problem *p, const struct pc_machine_model *m,
                          const struct pc_params *params, struct pc_candidate *c)
{
    double estimate = a->estimate ? a->estimate(p, params, m) : 0.0;
    c->busy_us = pc_algorithm_busy(a, p, params, m, estimate);
    double work = host_work_bound(p, pc_algorithm_mean_busy(a, p, params, m, c->busy_us));
    c->predicted_us = work > estimate ? work : estimate;
}

/* A stores=auto plan (exec/store_chooser.h) runs the cheaper mode and probes the other now and then: the cheaper
 * mode's figures, plus the probes' cost where the host holds its state (one execution in
 * PC_STORES_PROBE_MAX in the other mode). Where the mode would change nothing (set_stores NULL), ordinary
 * stores. */
static void predict(const struct pc_algorithm *a, const struct pc_problem *p, const struct pc_machine_model *m,
                    struct pc_candidate *c)
{
    if (c->params.stores == PC_STORES_AUTO) {
        struct pc_params normal = c->params, stream = c->params;
        normal.stores = PC_STORES_NORMAL;
        stream.stores = PC_STORES_STREAM;
        struct pc_candidate cn = *c, cs = *c;
        predict_fixed(a, p, m, &normal, &cn);
        if (!a->set_stores) {
            cs = cn;
        } else {
            predict_fixed(a, p, m, &stream, &cs);
        }
        const struct pc_candidate *lo = cs.predicted_us < cn.predicted_us ? &cs : &cn;
        const struct pc_candidate *hi = lo == &cs ? &cn : &cs;
        c->busy_us = lo->busy_us;
        c->predicted_us = lo->predicted_us + (hi->predicted_us - lo->predicted_us) / PC_STORES_PROBE_MAX;
    } else {
        predict_fixed(a, p, m, &c->params, c);
    }
    c->measured_other_us = -1.0;
    c->rank_us = c->predicted_us;
}

int pc_enumerate_forced(const struct pc_algorithm_table *algs, const struct pc_problem *p,
                        const struct pc_forced *forced, int nforced, const struct pc_machine_model *m,
                        struct pc_candidate *out, int max, int *n)
{
    *n = 0;
    for (int i = 0; i < nforced; i++) {
        const struct pc_algorithm *a = pc_algorithm_at(algs, forced[i].alg);
        if (!a || a->collective != p->coll) continue;
        const char *why = pc_algorithm_refuses(a, p);
        if (why) return pc_error(PLANCOLL_ERR_INAPPLICABLE, "%s cannot run this problem: %s", a->name, why);
        struct pc_params variants[PC_MAX_VARIANTS];
        memset(variants, 0, sizeof variants);
        int nv = a->variants ? a->variants(p, variants, PC_MAX_VARIANTS) : 1;
        int kept = 0;
        for (int v = 0; v < nv && *n < max; v++) {
            if (!params_match(&variants[v], &forced[i])) continue;
            out[*n] = (struct pc_candidate){.alg = forced[i].alg, .params = variants[v], .measured_us = -1.0};
            predict(a, p, m, &out[*n]);
            (*n)++;
            kept++;
        }
        if (kept == 0 && *n < max) {
            struct pc_params v = nv > 0 ? variants[0] : (struct pc_params){0};
            params_apply(&v, &forced[i]);
            out[*n] = (struct pc_candidate){.alg = forced[i].alg, .params = v, .measured_us = -1.0};
            predict(a, p, m, &out[*n]);
            (*n)++;
        }
    }
    if (*n == 0) return pc_error(PLANCOLL_ERR_INAPPLICABLE, "no algorithm can run this %s", pc_collective_name(p->coll));
    return PLANCOLL_SUCCESS;
}

int pc_enumerate(const struct pc_algorithm_table *algs, const struct pc_problem *p, const int *allowed, int nallowed,
                 const struct pc_machine_model *m, struct pc_candidate *out, int max, int *n)
{
    *n = 0;
    int count = allowed ? nallowed : algs->count;
    for (int i = 0; i < count; i++) {
        int idx = allowed ? allowed[i] : i;
        const struct pc_algorithm *a = pc_algorithm_at(algs, idx);
        if (!a || a->collective != p->coll) continue;
        const char *why = pc_algorithm_refuses(a, p);
        if (why) {
            if (allowed) return pc_error(PLANCOLL_ERR_INAPPLICABLE, "%s cannot run this problem: %s", a->name, why);
            continue;
        }
        struct pc_params variants[PC_MAX_VARIANTS];
        int nv = 1;
        memset(variants, 0, sizeof variants);
        if (a->variants) nv = a->variants(p, variants, PC_MAX_VARIANTS);
        for (int v = 0; v < nv && *n < max; v++) {
            struct pc_candidate *c = &out[(*n)++];
            *c = (struct pc_candidate){.alg = idx, .params = variants[v], .measured_us = -1.0};
            predict(a, p, m, c);
        }
    }
    if (*n == 0) return pc_error(PLANCOLL_ERR_INAPPLICABLE, "no algorithm can run this %s", pc_collective_name(p->coll));
    return PLANCOLL_SUCCESS;
}

void pc_params_format(const struct pc_params *params, unsigned mask, char *buf, size_t len)
{
    if (len == 0) return;
    buf[0] = '\0';
    char field[32];
    size_t used = 0;
    for (int i = 0; i < 7; i++) {
        if (!(mask & (1u << i))) continue;
        int w = 0;
        switch (i) {
        case 0: w = snprintf(field, sizeof field, "leaders=%d", params->leaders); break;
        case 1: w = snprintf(field, sizeof field, "placement=%s", params->placement ? "numa" : "first"); break;
        case 2: w = snprintf(field, sizeof field, "segments=%d", params->segments); break;
        case 3: w = snprintf(field, sizeof field, "transport=%s", params->transport ? "put" : "p2p"); break;
        case 4: w = snprintf(field, sizeof field, "radix=%d", params->radix); break;
        case 5:
            w = snprintf(field, sizeof field, "inter=%s",
                         params->inter >= 0 && params->inter < 3 ? pc_inter_names[params->inter] : "?");
            break;
        case 6:
            w = snprintf(field, sizeof field, "stores=%s",
                         params->stores >= 0 && params->stores < 3 ? pc_stores_names[params->stores] : "?");
            break;
        }
        if (w <= 0) continue;
        size_t need = (size_t)w + (used ? 1 : 0);
        if (used + need >= len) break; /* whole fields only: a cut field would mislead */
        if (used) buf[used++] = ' ';
        memcpy(buf + used, field, (size_t)w + 1);
        used += (size_t)w;
    }
}

int pc_spec_format(const struct pc_algorithm_table *algs, int alg, const struct pc_params *params, char *buf,
                   size_t len)
{
    const struct pc_algorithm *a = pc_algorithm_at(algs, alg);
    char fields[128];
    pc_params_format(params, a ? a->params : 0, fields, sizeof fields);
    for (char *c = fields; *c; c++)
        if (*c == ' ') *c = ':';
    int n = snprintf(buf, len, "%s%s%s", a ? a->name : "?", fields[0] ? ":" : "", fields);
    if (n >= 0 && (size_t)n >= len && len > 0) buf[0] = '\0';
    return n;
}

static void print_table(FILE *out, const struct pc_algorithm_table *algs, const struct pc_problem *p,
                        const struct pc_candidate *c, int n, int chosen)
{
    char key[200], params[96];
    pc_problem_key(p, key, sizeof key);
    fprintf(out, "plancoll planner: %s, %d candidate%s\n", key, n, n == 1 ? "" : "s");
    for (int i = 0; i < n; i++) {
        const struct pc_algorithm *a = pc_algorithm_at(algs, c[i].alg);
        pc_params_format(&c[i].params, a ? a->params : 0, params, sizeof params);
        fprintf(out, "  %c %-30s %-24s predicted %10.2f us", i == chosen ? '*' : ' ', a ? a->name : "?",
                params, c[i].predicted_us);
        if (p->flags & PLANCOLL_OVERLAP) fprintf(out, "  busy %10.2f us  overlap rank %10.2f us", c[i].busy_us, c[i].rank_us);
        if (c[i].measured_us >= 0)
            fprintf(out, "  measured %10.2f us%s", c[i].measured_us, p->flags & PLANCOLL_OVERLAP ? " overlapped" : "");
        if (c[i].measured_other_us >= 0)
            fprintf(out, "  %s %10.2f us", p->flags & PLANCOLL_OVERLAP ? "execute" : "start+wait", c[i].measured_other_us);
        fputc('\n', out);
    }
}

static bool is_native(const struct pc_algorithm_table *algs, int alg)
{
    const struct pc_algorithm *a = pc_algorithm_at(algs, alg);
    return a && a->mpi_own;
}

/* ---- MEASURE's race (docs/measurement.md, "How MEASURE times candidates") ----------------------------------
 * The finalists are timed in rounds, one batch of every finalist still in the race per round, the order rotated
 * between rounds, so that a slow drift of the machine (the two cores sharing a cache or not, other processes)
 * hits all of them alike. Each finalist's trial plan is set up once, at its first batch, and lives until it leaves
 * the race. The statistic: for two candidates a and b, the ratios t_a(r) / t_b(r) of their batch times in the same
 * round r, and the distribution-free interval of the median ratio from order statistics (interval_rank). After
 * each round from the rigor's minimum on, rank 0 drops every candidate whose interval against the leader (the
 * lowest median batch time) lies wholly above 1, and the race ends when one candidate is left or at the rigor's
 * maximum; the candidates left then are statistically tied with the leader. */
#define SEPARATION_ALPHA 0.05 /* each side of the interval misses the median ratio with probability <= 5% */
enum { RACE_CONTINUE = -1, RACE_STOP = -2 }; /* the words ending rank 0's list of drops after a round */

struct race {
    const struct pc_planner_hooks *hooks;
    int nfin, fin[PC_MAX_CANDIDATES]; /* the finalists, in timing order: the model's favourite, MPI's own, ... */
    bool running[PC_MAX_CANDIDATES];  /* still timed every round */
    bool dropped[PC_MAX_CANDIDATES];  /* left the race slower than the leader */
    bool alive[PC_MAX_CANDIDATES];    /* its trial plan is set up */
    int batches[PC_MAX_CANDIDATES];
    double t[PC_MAX_CANDIDATES][PC_MAX_ROUNDS]; /* t[i][r]: candidate i's batch in round r (batch r when sequential) */
    double other[PC_MAX_CANDIDATES][PC_MAX_ROUNDS]; /* the batch's other time of a started plan (< 0: none) */
    double start;                     /* for plancoll_set_timelimit */
    bool timed_once;                  /* the first batch is timed whatever the limit */
};

/* The rank k of the interval [q_(k), q_(m+1-k)] of the median of m ratios (order statistics, sorted ascending):
 * the largest k with P(Bin(m, 1/2) <= k - 1) <= SEPARATION_ALPHA, so that each end misses the median with
 * probability at most 5% whatever the ratios' distribution (a two-sided 90% interval). 0 when m is too small for
 * any interval (m < 5): 1, 2 and 4 for m = 5, 9 and 15. */
static int interval_rank(int m)
{
    double term = 1.0; /* P(Bin(m, 1/2) = j), from j = 0 */
    for (int i = 0; i < m; i++) term *= 0.5;
    double cumulative = 0;
    int k = 0;
    for (int j = 0; j <= m / 2; j++) {
        cumulative += term;
        if (cumulative > SEPARATION_ALPHA) break;
        k = j + 1;
        term = term * (double)(m - j) / (double)(j + 1);
    }
    return k;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The interval of the median of t_a / t_b over the rounds both were timed in; false when too few rounds. */
static bool ratio_interval(const struct race *r, int a, int b, double *lo, double *hi)
{
    double q[PC_MAX_ROUNDS];
    int rounds = r->batches[a] < r->batches[b] ? r->batches[a] : r->batches[b], m = 0;
    for (int i = 0; i < rounds; i++)
        if (r->t[b][i] > 0) q[m++] = r->t[a][i] / r->t[b][i];
    int k = interval_rank(m);
    if (k == 0) return false;
    qsort(q, (size_t)m, sizeof q[0], cmp_double);
    *lo = q[k - 1];
    *hi = q[m - k];
    return true;
}

/* The median of candidate i's batch times (the upper one of an even count), as MEASURE has always reported. */
static double median_time(const struct race *r, int i)
{
    double s[PC_MAX_ROUNDS];
    memcpy(s, r->t[i], sizeof s[0] * (size_t)r->batches[i]);
    qsort(s, (size_t)r->batches[i], sizeof s[0], cmp_double);
    return s[r->batches[i] / 2];
}

/* The median of candidate i's other times (-1 when a batch had none). */
static double median_other(const struct race *r, int i)
{
    double s[PC_MAX_ROUNDS];
    for (int b = 0; b < r->batches[i]; b++)
        if ((s[b] = r->other[i][b]) < 0) return -1.0;
    qsort(s, (size_t)r->batches[i], sizeof s[0], cmp_double);
    return s[r->batches[i] / 2];
}

/* The timed, undropped candidate with the lowest median time (the earlier in timing order on equal medians). */
static int race_leader(const struct race *r)
{
    int best = -1;
    double best_us = 0;
    for (int k = 0; k < r->nfin; k++) {
        int i = r->fin[k];
        if (r->batches[i] == 0 || r->dropped[i]) continue;
        double us = median_time(r, i);
        if (best < 0 || us < best_us) best = i, best_us = us;
    }
    return best;
}

static void race_release(struct race *r, int i)
{
    if (!r->alive[i]) return;
    r->hooks->release(r->hooks->ctx, i);
    r->alive[i] = false;
}

/* Every trial plan still set up, released in timing order (release is collective: the same order on every rank). */
static void race_release_all(struct race *r)
{
    for (int k = 0; k < r->nfin; k++) race_release(r, r->fin[k]);
}

static double race_clock(const struct race *r) { return r->hooks->now ? r->hooks->now(r->hooks->ctx) : seconds_now(); }

/* Rank 0's clock decides whether the time limit has passed (broadcast, so all ranks stop at the same batch). */
static int race_out_of_time(struct race *r, bool *stop)
{
    *stop = false;
    if (!r->timed_once || planner_timelimit < 0) return PLANCOLL_SUCCESS;
    int out = race_clock(r) - r->start >= planner_timelimit;
    int err = r->hooks->bcast_int(r->hooks->ctx, &out);
    *stop = out != 0;
    return err;
}

/* One batch of candidate i, its trial plan set up first when it is not. */
static int race_batch(struct race *r, const struct pc_candidate *local, int i)
{
    if (!r->alive[i]) {
        int err = r->hooks->prepare(r->hooks->ctx, i, &local[i]);
        if (err) return err;
        r->alive[i] = true;
    }
    double us[2] = {0, -1.0};
    int err = r->hooks->batch(r->hooks->ctx, i, us);
    if (err) return err;
    r->other[i][r->batches[i]] = us[1];
    r->t[i][r->batches[i]++] = us[0];
    r->timed_once = true;
    return PLANCOLL_SUCCESS;
}

/* After a round: this rank's proposal (every running candidate separated from the leader, then whether the race
 * ends), rank 0's taken word by word (drop i, ..., RACE_CONTINUE or RACE_STOP), so every rank applies the same
 * drops and releases the same trial plans in the same order. */
static int race_settle(struct race *r, int round, int max_rounds, bool *stop)
{
    int words[PC_MAX_CANDIDATES + 1], nwords = 0, left = 0;
    int leader = race_leader(r);
    for (int k = 0; k < r->nfin; k++) {
        int i = r->fin[k];
        if (!r->running[i]) continue;
        double lo, hi;
        if (i != leader && ratio_interval(r, i, leader, &lo, &hi) && lo > 1.0) words[nwords++] = i;
        else left++;
    }
    words[nwords++] = left <= 1 || round + 1 >= max_rounds ? RACE_STOP : RACE_CONTINUE;
    for (int w = 0;; w++) {
        int word = w < nwords ? words[w] : RACE_STOP;
        int err = r->hooks->bcast_int(r->hooks->ctx, &word);
        if (err) return err;
        if (word == RACE_CONTINUE || word == RACE_STOP) {
            *stop = word == RACE_STOP;
            return PLANCOLL_SUCCESS;
        }
        int running = 0;
        for (int k = 0; k < r->nfin; k++) running += r->running[r->fin[k]];
        if (word < 0 || word >= PC_MAX_CANDIDATES || !r->running[word] || running <= 1)
            return pc_error(PLANCOLL_ERR_MISMATCH, "rank 0 dropped candidate %d from the timing", word);
        r->running[word] = false;
        r->dropped[word] = true;
        race_release(r, word); /* its memory back before the next round */
    }
}

/* Times the finalists: interleaved rounds while every trial plan fits, else (a set-up found no memory with others
 * alive) one candidate after another, each set up once and timed min_rounds batches. A finalist whose set-up finds
 * no memory with no other trial plan alive leaves the race untimed (it cannot run here). */
static int race_run(struct race *r, const struct pc_candidate *local, int min_rounds, int max_rounds,
                    bool *time_limited)
{
    bool stop = false, sequential = false;
    for (int round = 0; round < max_rounds && !sequential; round++) {
        int order[PC_MAX_CANDIDATES], m = 0;
        for (int k = 0; k < r->nfin; k++)
            if (r->running[r->fin[k]]) order[m++] = r->fin[k];
        for (int j = 0; j < m; j++) {
            /* round 0 in timing order (a time limit then cuts the least promising), later rounds rotated */
            int i = order[(j + round) % m];
            int err = race_out_of_time(r, &stop);
            if (err) return err;
            if (stop) {
                *time_limited = true;
                return PLANCOLL_SUCCESS;
            }
            err = race_batch(r, local, i);
            bool others_alive = false;
            for (int k = 0; k < r->nfin; k++) others_alive = others_alive || (r->alive[r->fin[k]] && r->fin[k] != i);
            if (err == PLANCOLL_ERR_NOMEM && others_alive) {
                /* Several trial plans do not fit (node-shared memory above all): back to one at a time. The
                 * set-up reported NOMEM on every rank (the prepare hook's contract), so all ranks fall back. */
                race_release_all(r);
                sequential = true;
                break;
            }
            if (err == PLANCOLL_ERR_NOMEM) {
                r->running[i] = false; /* it does not fit even alone: out of the race, never chosen */
                continue;
            }
            if (err) return err;
        }
        if (!sequential && round + 1 >= min_rounds) {
            int err = race_settle(r, round, max_rounds, &stop);
            if (err) return err;
            if (stop) return PLANCOLL_SUCCESS;
        }
    }
    if (!sequential) return PLANCOLL_SUCCESS;
    for (int k = 0; k < r->nfin; k++) {
        int i = r->fin[k];
        while (r->running[i] && r->batches[i] < min_rounds) {
            int err = race_out_of_time(r, &stop);
            if (!err && stop) *time_limited = true;
            if (!err && !stop) err = race_batch(r, local, i);
            if (err == PLANCOLL_ERR_NOMEM && !stop) {
                r->running[i] = false; /* does not fit alone either */
                break;
            }
            if (err || stop) return err;
        }
        race_release(r, i);
    }
    return PLANCOLL_SUCCESS;
}

/* A tie goes to the simpler plan once predictions are equal: MPI's own, then fewer parameters. */
static int complexity(const struct pc_algorithm_table *algs, int alg)
{
    if (is_native(algs, alg)) return 0;
    const struct pc_algorithm *a = pc_algorithm_at(algs, alg);
    int bits = 0;
    for (unsigned m = a ? a->params : 0; m; m &= m - 1) bits++;
    return 1 + bits;
}

/* This rank's verdict from the race: the winner among the leader and the candidates tied with it (their interval
 * against the leader reaches 1; none when too few rounds were timed for an interval, as after an early time limit),
 * by the model's prediction, then simplicity; the runner-up (the leader when the model's preference beat it, else
 * the fastest other tied one, else the fastest other timed one) and whether it is tied. */
static void race_verdict(const struct race *r, const struct pc_algorithm_table *algs, const struct pc_candidate *local,
                         int *chosen, int *runner_up, bool *tied)
{
    int leader = race_leader(r);
    bool in_tie[PC_MAX_CANDIDATES] = {false};
    *chosen = leader;
    *runner_up = -1;
    *tied = false;
    if (leader < 0) return; /* nothing timed: rank 0's word will be refused */
    in_tie[leader] = true;
    for (int k = 0; k < r->nfin; k++) {
        int i = r->fin[k];
        double lo, hi;
        if (i == leader || r->batches[i] == 0 || r->dropped[i] || !ratio_interval(r, i, leader, &lo, &hi) || lo > 1.0)
            continue;
        in_tie[i] = *tied = true;
        const struct pc_candidate *a = &local[i], *b = &local[*chosen];
        if (a->rank_us < b->rank_us ||
            (a->rank_us == b->rank_us && complexity(algs, a->alg) < complexity(algs, b->alg)))
            *chosen = i;
    }
    if (*tied && *chosen != leader) {
        *runner_up = leader;
        return;
    }
    for (int k = 0; k < r->nfin; k++) {
        int i = r->fin[k];
        if (i == *chosen || r->batches[i] == 0 || in_tie[i] != *tied) continue;
        if (*runner_up < 0 || local[i].measured_us < local[*runner_up].measured_us) *runner_up = i;
    }
}

/* The rigor's rounds: at least as many batches as MEASURE, PATIENT and EXHAUSTIVE have always timed (5, 9, 15:
 * a clear case costs what it did), at most three times that for candidates too close to separate. */
static void rigor_rounds(unsigned flags, int *min_rounds, int *max_rounds)
{
    *min_rounds = flags & PLANCOLL_EXHAUSTIVE ? 15 : flags & PLANCOLL_PATIENT ? 9 : flags & PLANCOLL_MEASURE ? 5 : 0;
    *max_rounds = 3 * *min_rounds;
}

static int choose_measured(const struct pc_algorithm_table *algs, const struct pc_problem *p,
                           struct pc_candidate *local, int n, const struct pc_planner_hooks *hooks,
                           struct pc_decision *out, int *best, int *second)
{
    int min_rounds, max_rounds;
    rigor_rounds(p->flags, &min_rounds, &max_rounds);
    /* Time the model's best few (and MPI's own collective, so a measured plan is never slower than MPI on what was
     * measured); the others keep measured_us < 0. */
    int budget = (p->flags & PLANCOLL_EXHAUSTIVE) ? n : (p->flags & PLANCOLL_PATIENT) ? 12 : 6;
    bool finalist[PC_MAX_CANDIDATES] = {false};
    for (int k = 0; k < budget && k < n; k++) {
        int pick = -1;
        for (int i = 0; i < n; i++)
            if (!finalist[i] && (pick < 0 || local[i].rank_us < local[pick].rank_us)) pick = i;
        finalist[pick] = true;
    }
    /* Timed overlapped, every candidate computes as long as the shortest predicted critical path's candidate takes
     * to execute (measure.c fixes it at the first trial set up): that candidate is a finalist, and timed first. */
    const bool overlap = (p->flags & PLANCOLL_OVERLAP) != 0;
    int shortest = 0;
    for (int i = 1; i < n; i++)
        if (local[i].predicted_us < local[shortest].predicted_us) shortest = i;
    if (overlap) finalist[shortest] = true;
    /* And each algorithm's most promising variant, and for each of its parameters the most promising variant with
     * another value of that parameter (one step along each parameter from the algorithm's best: the best with 4
     * leaders when 2 lead, the best over reduce-scatter when recursive doubling leads, ...). A model error between
     * two algorithms, or between two values of one parameter, then costs a timing, never the right choice: the
     * model ranks an algorithm's variants better than it ranks algorithms against each other, but not always
     * across a parameter's values (at 8 ranks on 2 nodes it put allreduce.dpml with 4 leaders 60% behind 2, which
     * ran 28% faster). At most 1 + (number of parameters) timings per algorithm. "Most promising" is the rank the
     * rigor uses (rank_us: the prediction, or the overlap rule's rank). */
    for (int i = 0; i < n; i++) {
        int top = i;
        for (int j = 0; j < n; j++)
            if (local[j].alg == local[i].alg && local[j].rank_us < local[top].rank_us) top = j;
        if (top != i) continue; /* once per algorithm, from its best variant */
        finalist[top] = true;
        const struct pc_params *a = &local[top].params;
        const int best_values[] = {a->leaders, a->placement, a->segments, a->transport, a->radix, a->inter, a->stores};
        for (int f = 0; f < 7; f++) {
            int pick = -1;
            for (int j = 0; j < n; j++) {
                if (local[j].alg != local[top].alg) continue;
                const struct pc_params *b = &local[j].params;
                const int values[] = {b->leaders, b->placement, b->segments, b->transport, b->radix, b->inter,
                                      b->stores};
                if (values[f] != best_values[f] && (pick < 0 || local[j].rank_us < local[pick].rank_us)) pick = j;
            }
            if (pick >= 0) finalist[pick] = true;
        }
    }
    for (int i = 0; i < n; i++)
        if (is_native(algs, local[i].alg)) finalist[i] = true;
    struct race r;
    memset(&r, 0, sizeof r);
    r.hooks = hooks;
    r.start = race_clock(&r);
    /* Timing order: the model's favourite first, then MPI's own, then the rest by prediction, so a time limit cuts
     * the least promising. */
    bool placed[PC_MAX_CANDIDATES] = {false};
    for (int pass = 0; pass < 3; pass++)
        for (;;) {
            int pick = -1;
            for (int i = 0; i < n; i++) {
                if (!finalist[i] || placed[i]) continue;
                if (pass == 1 && !is_native(algs, local[i].alg)) continue;
                if (pick < 0 || local[i].rank_us < local[pick].rank_us) pick = i;
            }
            if (pass == 0 && overlap) pick = shortest;
            if (pick < 0) break;
            placed[pick] = true;
            r.running[pick] = true;
            r.fin[r.nfin++] = pick;
            if (pass == 0) break;
        }
    int err = race_run(&r, local, min_rounds, max_rounds, &out->time_limited);
    race_release_all(&r); /* after an error too: every rank took the same path here */
    if (err) return err;
    int timed = 0;
    for (int i = 0; i < n; i++) timed += r.batches[i] > 0;
    if (timed == 0) /* every finalist lacked memory alone (a set-up's NOMEM is the same on every rank) */
        return pc_error(PLANCOLL_ERR_NOMEM, "no candidate timed: every finalist's set-up found too little memory");
    for (int i = 0; i < n; i++)
        if (r.batches[i] > 0) {
            local[i].measured_us = median_time(&r, i);
            local[i].measured_other_us = median_other(&r, i);
        }
    bool tied;
    race_verdict(&r, algs, local, best, second, &tied);
    /* Every rank holds the same maxima, but rank 0 decides so that a verdict reached differently by rounding can
     * never split the ranks: the choice, then the runner-up (+ n when tied; -1 when none). */
    err = hooks->bcast_int(hooks->ctx, best);
    if (err) return err;
    if (*best < 0 || *best >= n || r.batches[*best] == 0)
        return pc_error(PLANCOLL_ERR_MISMATCH, "rank 0 chose candidate %d of %d", *best, n);
    int runner_word = *second < 0 ? -1 : *second + (tied ? n : 0);
    if ((err = hooks->bcast_int(hooks->ctx, &runner_word))) return err;
    tied = runner_word >= n;
    *second = runner_word < 0 ? -1 : runner_word % n;
    if (runner_word < -1 || runner_word >= 2 * n || (*second >= 0 && (*second == *best || r.batches[*second] == 0)))
        return pc_error(PLANCOLL_ERR_MISMATCH, "rank 0 named runner-up %d of %d", runner_word, n);
    double lo, hi;
    if (tied && ratio_interval(&r, *second, *best, &lo, &hi)) {
        out->runner_up_tied = true;
        out->tie_noise_pct = 100.0 * (1.0 - lo > hi - 1.0 ? 1.0 - lo : hi - 1.0);
    }
    return PLANCOLL_SUCCESS;
}

int pc_choose(const struct pc_algorithm_table *algs, const struct pc_problem *p, const struct pc_candidate *cands,
              int n, bool forced, const struct pc_planner_hooks *hooks, FILE *verbose, struct pc_decision *out)
{
    memset(out, 0, sizeof *out);
    if (n <= 0) return pc_error(PLANCOLL_ERR_INAPPLICABLE, "no candidate to choose from");
    struct pc_candidate local[PC_MAX_CANDIDATES];
    if (n > PC_MAX_CANDIDATES) n = PC_MAX_CANDIDATES;
    out->ncandidates = n;
    memcpy(local, cands, sizeof(struct pc_candidate) * (size_t)n);
    const bool overlap = (p->flags & PLANCOLL_OVERLAP) != 0;
    double compute_us = local[0].predicted_us;
    for (int i = 1; i < n; i++)
        if (local[i].predicted_us < compute_us) compute_us = local[i].predicted_us;
    for (int i = 0; i < n; i++) local[i].rank_us = overlap ? pc_overlap_cost(&local[i], compute_us) : local[i].predicted_us;

    int best = 0, second = -1;
    if ((p->flags & (PLANCOLL_MEASURE | PLANCOLL_PATIENT | PLANCOLL_EXHAUSTIVE)) && n > 1) {
        int err = choose_measured(algs, p, local, n, hooks, out, &best, &second);
        if (err) return err;
        out->how = forced ? "forced, measured" : "measured";
    } else {
        /* A later candidate displaces the earlier (simpler, in the registry's order) only when its estimate is lower
         * by more than PC_ESTIMATE_TIE: two estimates that close are a tie, and taking the lower one let the choice
         * flip between runs on bits of calibration noise (alltoall.leader and alltoall.mpml:leaders=2 predicted
         * within 0.05% of each other at 8-256 B, 2n5p-tcp: each chosen in 5 of 10 calibrations). */
        for (int i = 1; i < n; i++)
            if (local[i].rank_us < local[best].rank_us * (1.0 - PC_ESTIMATE_TIE)) best = i;
        /* Every rank computed the same predictions from agreed inputs; rank 0's choice is still the one taken,
         * so that no difference in floating point or environment can ever split the ranks. */
        if (n > 1 && hooks) {
            int err = hooks->bcast_int(hooks->ctx, &best);
            if (err) return err;
            if (best < 0 || best >= n) return pc_error(PLANCOLL_ERR_MISMATCH, "rank 0 chose candidate %d of %d", best, n);
        }
        for (int i = 0; i < n; i++)
            if (i != best && (second < 0 || local[i].rank_us < local[second].rank_us)) second = i;
        out->how = forced ? (n == 1 ? "forced" : "forced, estimate") : "estimate";
    }
    out->chosen = local[best];
    if (overlap) {
        /* the plain rule's choice: the shortest measured execute time among the timed candidates, else the estimate */
        int fastest = -1;
        for (int i = 0; i < n; i++)
            if (local[i].measured_other_us >= 0 &&
                (fastest < 0 || local[i].measured_other_us < local[fastest].measured_other_us))
                fastest = i;
        if (fastest < 0)
            for (int i = 0; i < n; i++)
                if (fastest < 0 || local[i].predicted_us < local[fastest].predicted_us) fastest = i;
        if (fastest != best) {
            out->has_execute_fastest = true;
            out->execute_fastest = local[fastest];
        }
    }
    if (second >= 0) {
        out->has_runner_up = true;
        out->runner_up = local[second];
    }
    if (verbose) print_table(verbose, algs, p, local, n, best);
    return PLANCOLL_SUCCESS;
}
