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
                                "depth=N, segments=N, transport=p2p|put, radix=N, inter=rd|rsag|mpi)",
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
           (!(f->mask & PC_PARAM_INTER) || v->inter == f->params.inter);
}

static void params_apply(struct pc_params *v, const struct pc_forced *f)
{
    if (f->mask & PC_PARAM_LEADERS) v->leaders = f->params.leaders;
    if (f->mask & PC_PARAM_PLACEMENT) v->placement = f->params.placement;
    if (f->mask & PC_PARAM_SEGMENTS) v->segments = f->params.segments;
    if (f->mask & PC_PARAM_TRANSPORT) v->transport = f->params.transport;
    if (f->mask & PC_PARAM_RADIX) v->radix = f->params.radix;
    if (f->mask & PC_PARAM_INTER) v->inter = f->params.inter;
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
            out[*n].predicted_us = a->estimate ? a->estimate(p, &variants[v], m) : 0.0;
            (*n)++;
            kept++;
        }
        if (kept == 0 && *n < max) {
            struct pc_params v = nv > 0 ? variants[0] : (struct pc_params){0};
            params_apply(&v, &forced[i]);
            out[*n] = (struct pc_candidate){.alg = forced[i].alg, .params = v, .measured_us = -1.0};
            out[*n].predicted_us = a->estimate ? a->estimate(p, &v, m) : 0.0;
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
            c->alg = idx;
            c->params = variants[v];
            c->predicted_us = a->estimate ? a->estimate(p, &variants[v], m) : 0.0;
            c->measured_us = -1.0;
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
    for (int i = 0; i < 6; i++) {
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
        if (c[i].measured_us >= 0) fprintf(out, "  measured %10.2f us", c[i].measured_us);
        fputc('\n', out);
    }
}

static bool is_native(const struct pc_algorithm_table *algs, int alg)
{
    const struct pc_algorithm *a = pc_algorithm_at(algs, alg);
    size_t len = a ? strlen(a->name) : 0;
    return len > 7 && strcmp(a->name + len - 7, ".native") == 0;
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

    int reps = 0;
    if (p->flags & PLANCOLL_EXHAUSTIVE)
        reps = 15;
    else if (p->flags & PLANCOLL_PATIENT)
        reps = 9;
    else if (p->flags & PLANCOLL_MEASURE)
        reps = 5;

    int best = 0, second = -1;
    if (reps > 0 && n > 1) {
        /* Time the model's best few (and MPI's own collective, so a measured plan is never slower than MPI on
         * what was measured); the others keep measured_us < 0. */
        int budget = (p->flags & PLANCOLL_EXHAUSTIVE) ? n : (p->flags & PLANCOLL_PATIENT) ? 12 : 6;
        bool timed[PC_MAX_CANDIDATES] = {false};
        for (int k = 0; k < budget && k < n; k++) {
            int pick = -1;
            for (int i = 0; i < n; i++)
                if (!timed[i] && (pick < 0 || local[i].predicted_us < local[pick].predicted_us)) pick = i;
            timed[pick] = true;
        }
        /* And each algorithm's most promising variant: the model ranks an algorithm's parameters better than it
         * ranks algorithms against each other (their constants differ most between machines), so a model error
         * between two algorithms costs at most a timing, never the right choice. */
        for (int i = 0; i < n; i++) {
            int pick = i;
            for (int j = 0; j < n; j++)
                if (local[j].alg == local[i].alg && local[j].predicted_us < local[pick].predicted_us) pick = j;
            timed[pick] = true;
        }
        for (int i = 0; i < n; i++)
            if (is_native(algs, local[i].alg)) timed[i] = true;
        /* Timing order: the model's favourite first, then MPI's own, then the rest by prediction, so a time
         * limit cuts the least promising. */
        int order[PC_MAX_CANDIDATES], norder = 0;
        bool placed[PC_MAX_CANDIDATES] = {false};
        for (int pass = 0; pass < 3; pass++)
            for (;;) {
                int pick = -1;
                for (int i = 0; i < n; i++) {
                    if (!timed[i] || placed[i]) continue;
                    if (pass == 1 && !is_native(algs, local[i].alg)) continue;
                    if (pick < 0 || local[i].predicted_us < local[pick].predicted_us) pick = i;
                }
                if (pick < 0) break;
                placed[pick] = true;
                order[norder++] = pick;
                if (pass == 0) break;
            }
        double start = seconds_now();
        for (int k = 0; k < norder; k++) {
            if (k > 0 && planner_timelimit >= 0) {
                int out_of_time = seconds_now() - start >= planner_timelimit;
                int err = hooks->bcast_int(hooks->ctx, &out_of_time);
                if (err) return err;
                if (out_of_time) {
                    for (int j = k; j < norder; j++) timed[order[j]] = false;
                    out->time_limited = true;
                    break;
                }
            }
            int err = hooks->measure(hooks->ctx, &local[order[k]], reps, &local[order[k]].measured_us);
            if (err) return err;
        }
        best = -1;
        for (int i = 0; i < n; i++)
            if (timed[i] && (best < 0 || local[i].measured_us < local[best].measured_us)) best = i;
        /* Every rank holds the same maxima, but rank 0 decides so that a tie resolved differently by
         * rounding can never split the ranks. */
        int err = hooks->bcast_int(hooks->ctx, &best);
        if (err) return err;
        for (int i = 0; i < n; i++)
            if (i != best && local[i].measured_us >= 0 && (second < 0 || local[i].measured_us < local[second].measured_us))
                second = i;
        out->how = forced ? "forced, measured" : "measured";
    } else {
        for (int i = 1; i < n; i++)
            if (local[i].predicted_us < local[best].predicted_us) best = i;
        /* Every rank computed the same predictions from agreed inputs; rank 0's choice is still the one taken,
         * so that no difference in floating point or environment can ever split the ranks. */
        if (n > 1 && hooks) {
            int err = hooks->bcast_int(hooks->ctx, &best);
            if (err) return err;
            if (best < 0 || best >= n) return pc_error(PLANCOLL_ERR_MISMATCH, "rank 0 chose candidate %d of %d", best, n);
        }
        for (int i = 0; i < n; i++)
            if (i != best && (second < 0 || local[i].predicted_us < local[second].predicted_us)) second = i;
        out->how = forced ? (n == 1 ? "forced" : "forced, estimate") : "estimate";
    }
    out->chosen = local[best];
    if (second >= 0) {
        out->has_runner_up = true;
        out->runner_up = local[second];
    }
    if (verbose) print_table(verbose, algs, p, local, n, best);
    return PLANCOLL_SUCCESS;
}
