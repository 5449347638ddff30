/* The wisdom text: a line-oriented format that a person can read and diff (wisdom/FORMAT.md). Parsing
 * builds temporaries only and reports the first problem with its line number; nothing here touches the
 * process's stores or calls MPI. */
#include "planner/wisdom_text.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plancoll_codes.h"

/* Numbers are written and read in the C locale whatever the application set (a decimal comma would corrupt
 * them): the calling thread switches for the duration of a parse or format. */
struct c_numeric {
    locale_t c, old;
};

static void c_numeric_enter(struct c_numeric *cn)
{
    cn->c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    cn->old = cn->c ? uselocale(cn->c) : (locale_t)0;
}

static void c_numeric_leave(struct c_numeric *cn)
{
    if (!cn->c) return;
    uselocale(cn->old);
    freelocale(cn->c);
}

void pc_wisdom_set_init(struct pc_wisdom_set *s) { memset(s, 0, sizeof *s); }

void pc_wisdom_set_free(struct pc_wisdom_set *s)
{
    free(s->models);
    free(s->records);
    pc_wisdom_set_init(s);
}

const char *pc_wisdom_rigor_name(unsigned rigor)
{
    if (rigor & PLANCOLL_EXHAUSTIVE) return "exhaustive";
    if (rigor & PLANCOLL_PATIENT) return "patient";
    if (rigor & PLANCOLL_MEASURE) return "measure";
    return "none";
}

void pc_wisdom_normalize_text(char *s)
{
    size_t w = 0;
    bool space = true; /* drops leading blanks */
    for (size_t r = 0; s[r]; r++) {
        unsigned char c = (unsigned char)s[r];
        if (c <= ' ' || c == 0x7f) {
            if (!space) s[w++] = ' ';
            space = true;
        } else {
            s[w++] = (char)c;
            space = false;
        }
    }
    if (w > 0 && s[w - 1] == ' ') w--;
    s[w] = '\0';
}

/* ---- sorting records by key, ties kept in input order ---- */

struct keyed {
    const struct pc_wisdom_entry *e;
    int index;
};

static int cmp_keyed(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    int c = strcmp(x->e->key, y->e->key);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* Sorted copy of entries[0..n) with one entry per key (pc_wisdom_prefer; later input wins ties). With
 * dup_line given, duplicates are not resolved: *dup_line receives the index of the second occurrence of the
 * first duplicated key instead (and the function returns PLANCOLL_SUCCESS with *out NULL). */
static int sorted_unique(const struct pc_wisdom_entry *entries, int n, struct pc_wisdom_entry **out, int *nout,
                         int *dup_index)
{
    *out = NULL;
    *nout = 0;
    if (dup_index) *dup_index = -1;
    if (n == 0) return PLANCOLL_SUCCESS;
    struct keyed *k = malloc(sizeof *k * (size_t)n);
    struct pc_wisdom_entry *r = malloc(sizeof *r * (size_t)n);
    if (!k || !r) {
        free(k);
        free(r);
        return PLANCOLL_ERR_NOMEM;
    }
    for (int i = 0; i < n; i++) k[i] = (struct keyed){&entries[i], i};
    qsort(k, (size_t)n, sizeof *k, cmp_keyed);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m > 0 && strcmp(r[m - 1].key, k[i].e->key) == 0) {
            if (dup_index) {
                *dup_index = k[i].index;
                free(k);
                free(r);
                return PLANCOLL_SUCCESS;
            }
            if (pc_wisdom_prefer(&r[m - 1], k[i].e)) r[m - 1] = *k[i].e;
            continue;
        }
        r[m++] = *k[i].e;
    }
    free(k);
    *out = r;
    *nout = m;
    return PLANCOLL_SUCCESS;
}

/* ---- models ---- */

/* The node count in a shape key ("P=8:N=2:..."), which decides whether the summary numbers describe the
 * network or the node; 1 when the shape does not say. */
static int shape_nodes(const char *shape)
{
    for (const char *p = shape; (p = strstr(p, "N=")) != NULL; p += 2)
        if (p == shape || p[-1] == ':') {
            long v = strtol(p + 2, NULL, 10);
            return v >= 1 && v <= 1 << 24 ? (int)v : 1;
        }
    return 1;
}

static int find_model(const struct pc_machine_model *models, int n, const char *shape)
{
    for (int i = 0; i < n; i++)
        if (strcmp(models[i].shape, shape) == 0) return i;
    return -1;
}

/* Adds m to the set's models, replacing one of the same shape. */
static int put_model(struct pc_wisdom_set *s, const struct pc_machine_model *m)
{
    int at = find_model(s->models, s->nmodels, m->shape);
    if (at >= 0) {
        s->models[at] = *m;
        return PLANCOLL_SUCCESS;
    }
    struct pc_machine_model *grown = realloc(s->models, sizeof *grown * (size_t)(s->nmodels + 1));
    if (!grown) return PLANCOLL_ERR_NOMEM;
    s->models = grown;
    s->models[s->nmodels++] = *m;
    return PLANCOLL_SUCCESS;
}

int pc_wisdom_set_fill(struct pc_wisdom_set *s, const struct pc_wisdom_entry *entries, int n,
                       const struct pc_machine_model *models, int nmodels)
{
    free(s->records);
    free(s->models);
    s->records = NULL;
    s->models = NULL;
    s->nrecords = s->nmodels = 0;
    int err = sorted_unique(entries, n, &s->records, &s->nrecords, NULL);
    for (int i = 0; i < nmodels && !err; i++) err = put_model(s, &models[i]);
    return err;
}

bool pc_wisdom_prefer_in_file(const struct pc_wisdom_entry *a, const struct pc_wisdom_entry *b)
{
    bool ab = pc_wisdom_prefer(a, b), ba = pc_wisdom_prefer(b, a);
    if (ab != ba) return ab; /* one is more rigorous, or decided later */
    /* Equally rigorous and decided in the same second: jobs of one batch that planned the same problem and
     * finalize together. The faster measurement is kept, then the algorithm and parameters in byte order, so that
     * the file does not depend on which job wrote last. Records equal in all of these are the same decision. */
    if (a->measured_us != b->measured_us) return b->measured_us < a->measured_us;
    int c = strcmp(b->algorithm, a->algorithm);
    if (c) return c < 0;
    return memcmp(&b->params, &a->params, sizeof a->params) < 0;
}

/* Both merges: prefer(held, incoming) says whether the incoming record replaces the held one. */
static int merge_sets(struct pc_wisdom_set *into, const struct pc_wisdom_set *from,
                      bool (*prefer)(const struct pc_wisdom_entry *, const struct pc_wisdom_entry *))
{
    int total = into->nrecords + from->nrecords;
    struct pc_wisdom_entry *r = total ? malloc(sizeof *r * (size_t)total) : NULL;
    if (total && !r) return PLANCOLL_ERR_NOMEM;
    /* both sides are sorted with unique keys: one pass */
    int i = 0, j = 0, m = 0;
    while (i < into->nrecords || j < from->nrecords) {
        int c = i == into->nrecords ? 1 : j == from->nrecords ? -1 : strcmp(into->records[i].key, from->records[j].key);
        if (c < 0)
            r[m++] = into->records[i++];
        else if (c > 0)
            r[m++] = from->records[j++];
        else {
            r[m++] = prefer(&into->records[i], &from->records[j]) ? from->records[j] : into->records[i];
            i++;
            j++;
        }
    }
    /* models: grow a copy first so that a failure leaves into as it was */
    struct pc_wisdom_set tmp = *into;
    tmp.models = NULL;
    tmp.nmodels = 0;
    int err = PLANCOLL_SUCCESS;
    if (into->nmodels + from->nmodels > 0) {
        tmp.models = malloc(sizeof *tmp.models * (size_t)(into->nmodels + from->nmodels));
        if (!tmp.models) err = PLANCOLL_ERR_NOMEM;
    }
    if (!err) {
        if (into->nmodels) memcpy(tmp.models, into->models, sizeof *tmp.models * (size_t)into->nmodels);
        tmp.nmodels = into->nmodels;
        for (int k = 0; k < from->nmodels; k++) {
            int at = find_model(tmp.models, tmp.nmodels, from->models[k].shape);
            tmp.models[at >= 0 ? at : tmp.nmodels++] = from->models[k];
        }
    }
    if (err) {
        free(r);
        return err;
    }
    free(into->records);
    free(into->models);
    into->records = r;
    into->nrecords = m;
    into->models = tmp.models;
    into->nmodels = tmp.nmodels;
    return PLANCOLL_SUCCESS;
}

int pc_wisdom_set_merge(struct pc_wisdom_set *into, const struct pc_wisdom_set *from)
{
    return merge_sets(into, from, pc_wisdom_prefer);
}

int pc_wisdom_set_merge_file(struct pc_wisdom_set *into, const struct pc_wisdom_set *from)
{
    return merge_sets(into, from, pc_wisdom_prefer_in_file);
}

/* ---- formatting ---- */

struct out {
    char *buf;
    size_t len, cap;
    bool failed;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    if (o->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(o->buf ? o->buf + o->len : NULL, o->buf ? o->cap - o->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            o->failed = true;
            return;
        }
        if (o->buf && o->len + (size_t)n < o->cap) {
            o->len += (size_t)n;
            return;
        }
        size_t want = (o->cap ? o->cap * 2 : 4096) + (size_t)n + 1;
        char *grown = realloc(o->buf, want);
        if (!grown) {
            o->failed = true;
            return;
        }
        o->buf = grown;
        o->cap = want;
    }
}

int pc_wisdom_format(const struct pc_wisdom_set *s, char **text, size_t *len)
{
    *text = NULL;
    if (len) *len = 0;
    struct c_numeric cn;
    c_numeric_enter(&cn);
    struct out o = {NULL, 0, 0, false};
    const struct pc_wisdom_fingerprint *fp = &s->fp;
    put(&o, "plancoll-wisdom %d\n", PC_WISDOM_FORMAT_VERSION);
    put(&o, "plancoll %s\n", fp->plancoll[0] ? fp->plancoll : "unknown");
    put(&o, "registry %016llx\n", (unsigned long long)fp->registry);
    put(&o, "mpi_library %s\n", fp->mpi_library[0] ? fp->mpi_library : "unknown");
    put(&o, "mpi_build %016llx\n", (unsigned long long)fp->mpi_build);
    put(&o, "topology %s\n", fp->topology[0] ? fp->topology : "unknown");
    put(&o, "layout %s\n", fp->layout[0] ? fp->layout : "unknown");
    for (int i = 0; i < s->nmodels && !o.failed; i++) {
        put(&o, "begin model\n");
        if (!o.failed && pc_model_format(&s->models[i], &o.buf, &o.len, &o.cap) != 0) o.failed = true;
        put(&o, "end model\n");
    }
    for (int i = 0; i < s->nrecords && !o.failed; i++) {
        const struct pc_wisdom_entry *e = &s->records[i];
        put(&o, "record %s %s leaders=%d placement=%d segments=%d transport=%d radix=%d inter=%d us=%.17g rigor=%s decided=%lld",
            e->key, e->algorithm, e->params.leaders, e->params.placement, e->params.segments, e->params.transport,
            e->params.radix, e->params.inter, e->measured_us, pc_wisdom_rigor_name(e->rigor), e->decided_at);
        /* only when not the default, so records without it (and files written before it) read as ordinary stores */
        if (e->params.stores) put(&o, " stores=%d", e->params.stores);
        if (e->runner_up[0]) put(&o, " runner_up=%s runner_up_us=%.17g", e->runner_up, e->runner_up_us);
        put(&o, "\n");
    }
    put(&o, "end\n");
    c_numeric_leave(&cn);
    if (o.failed) {
        free(o.buf);
        return PLANCOLL_ERR_NOMEM;
    }
    *text = o.buf;
    if (len) *len = o.len;
    return PLANCOLL_SUCCESS;
}

/* ---- parsing ---- */

struct parser {
    int line;
    char *err;
    size_t errlen;
};

static int bad(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int bad(struct parser *ps, const char *fmt, ...)
{
    if (ps->err && ps->errlen) {
        int n = snprintf(ps->err, ps->errlen, "line %d: ", ps->line);
        if (n >= 0 && (size_t)n < ps->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
            va_end(ap);
        }
    }
    return PLANCOLL_ERR_WISDOM_FORMAT;
}

/* Splits the next blank-separated token off *p (NUL-terminating it in place); NULL at the end of the line. */
static char *next_token(char **p)
{
    char *s = *p;
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) {
        *p = s;
        return NULL;
    }
    char *e = s;
    while (*e && *e != ' ' && *e != '\t') e++;
    if (*e) *e++ = '\0';
    *p = e;
    return s;
}

static bool parse_hex64(const char *s, uint64_t *out)
{
    if (strlen(s) != 16) return false;
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return false;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return true;
}

static bool parse_long(const char *s, long long lo, long long hi, long long *out)
{
    if (!*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

/* A time in microseconds: finite, >= 0, at most 1e12 (11 days). */
static bool parse_time(const char *s, double *out)
{
    if (!*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (*end || errno || !isfinite(v) || v < 0 || v > 1e12) return false;
    *out = v;
    return true;
}

/* Algorithm names as the registry spells them: lower-case letters, digits, '.', '_' and '-'. */
static bool valid_name(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-')) return false;
    }
    return true;
}

/* Problem keys: a collective's name (or "transpose", a transpose's strategy decision), ':', then printable
 * characters without blanks. */
static bool valid_key(const char *s, size_t max)
{
    size_t n = strlen(s);
    if (n == 0 || n >= max) return false;
    if (strncmp(s, "alltoall:", 9) != 0 && strncmp(s, "alltoallv:", 10) != 0 && strncmp(s, "allreduce:", 10) != 0 &&
        strncmp(s, "transpose:", 10) != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f) return false;
    return true;
}

static int parse_record(struct parser *ps, char *rest, struct pc_wisdom_entry *e)
{
    memset(e, 0, sizeof *e);
    char *key = next_token(&rest), *alg = key ? next_token(&rest) : NULL;
    if (!key || !alg) return bad(ps, "a record needs a problem key and an algorithm");
    if (!valid_key(key, sizeof e->key))
        return bad(ps, "'%.60s' is not a problem key (alltoall:..., alltoallv:..., allreduce:... or transpose:..., printable, under %zu characters)",
                   key, sizeof e->key);
    if (!valid_name(alg, sizeof e->algorithm)) return bad(ps, "'%.60s' is not an algorithm name", alg);
    memcpy(e->key, key, strlen(key) + 1);
    memcpy(e->algorithm, alg, strlen(alg) + 1);
    enum { F_LEADERS, F_PLACEMENT, F_SEGMENTS, F_TRANSPORT, F_RADIX, F_INTER, F_US, F_RIGOR, F_DECIDED, F_RUNNER,
           F_RUNNER_US, F_STORES, NF };
    static const char *const names[NF] = {"leaders", "placement", "segments", "transport", "radix", "inter",
                                          "us",      "rigor",     "decided",  "runner_up", "runner_up_us", "stores"};
    bool seen[NF] = {false};
    for (char *tok; (tok = next_token(&rest)) != NULL;) {
        char *eq = strchr(tok, '=');
        if (!eq) return bad(ps, "'%.60s' in a record is not field=value", tok);
        *eq = '\0';
        const char *v = eq + 1;
        int f = 0;
        while (f < NF && strcmp(names[f], tok) != 0) f++;
        if (f == NF) return bad(ps, "unknown record field '%.40s'", tok);
        if (seen[f]) return bad(ps, "record field '%s' given twice", names[f]);
        seen[f] = true;
        long long x = 0;
        bool ok = true;
        switch (f) {
        case F_LEADERS:
        case F_SEGMENTS:
        case F_RADIX:
        case F_PLACEMENT:
        case F_TRANSPORT: {
            bool binary = f == F_PLACEMENT || f == F_TRANSPORT;
            ok = parse_long(v, 0, binary ? 1 : 1 << 20, &x);
            int *field = f == F_LEADERS ? &e->params.leaders : f == F_SEGMENTS ? &e->params.segments
                       : f == F_RADIX ? &e->params.radix : f == F_PLACEMENT ? &e->params.placement
                                      : &e->params.transport;
            *field = (int)x;
            break;
        }
        case F_INTER: /* the inter-node allreduce among leaders: an index of pc_inter_names */
            ok = parse_long(v, 0, 2, &x);
            e->params.inter = (int)x;
            break;
        case F_STORES: /* optional (absent: 0, ordinary stores): an index of pc_stores_names */
            ok = parse_long(v, 0, 2, &x);
            e->params.stores = (int)x;
            break;
        case F_US: ok = parse_time(v, &e->measured_us); break;
        case F_RIGOR:
            e->rigor = strcmp(v, "measure") == 0      ? PLANCOLL_MEASURE
                       : strcmp(v, "patient") == 0    ? PLANCOLL_PATIENT
                       : strcmp(v, "exhaustive") == 0 ? PLANCOLL_EXHAUSTIVE
                                                      : 0;
            ok = e->rigor != 0;
            break;
        case F_DECIDED: ok = parse_long(v, 0, INT64_C(1) << 40, &e->decided_at); break;
        case F_RUNNER:
            ok = valid_name(v, sizeof e->runner_up);
            if (ok) memcpy(e->runner_up, v, strlen(v) + 1);
            break;
        case F_RUNNER_US: ok = parse_time(v, &e->runner_up_us); break;
        }
        if (!ok) return bad(ps, "record field %s has a bad value '%.40s'", names[f], v);
    }
    if (!seen[F_US]) return bad(ps, "record of %.60s without us= (its measured time)", e->key);
    if (!seen[F_RIGOR]) return bad(ps, "record of %.60s without rigor=", e->key);
    if (seen[F_RUNNER] != seen[F_RUNNER_US]) return bad(ps, "runner_up and runner_up_us go together");
    return PLANCOLL_SUCCESS;
}

/* Header fields; all must appear once before the first model or record. */
enum { H_PLANCOLL, H_REGISTRY, H_MPI_LIBRARY, H_MPI_BUILD, H_TOPOLOGY, H_LAYOUT, NH };
static const char *const header_names[NH] = {"plancoll", "registry", "mpi_library", "mpi_build", "topology", "layout"};

static int parse_header(struct parser *ps, int h, char *value, struct pc_wisdom_fingerprint *fp)
{
    pc_wisdom_normalize_text(value);
    if (!*value) return bad(ps, "%s without a value", header_names[h]);
    char *dst = NULL;
    size_t cap = 0;
    switch (h) {
    case H_PLANCOLL: dst = fp->plancoll, cap = sizeof fp->plancoll; break;
    case H_MPI_LIBRARY: dst = fp->mpi_library, cap = sizeof fp->mpi_library; break;
    case H_TOPOLOGY: dst = fp->topology, cap = sizeof fp->topology; break;
    case H_LAYOUT: dst = fp->layout, cap = sizeof fp->layout; break;
    case H_REGISTRY:
        if (!parse_hex64(value, &fp->registry)) return bad(ps, "registry must be 16 hex digits, not '%.40s'", value);
        return PLANCOLL_SUCCESS;
    case H_MPI_BUILD:
        if (!parse_hex64(value, &fp->mpi_build)) return bad(ps, "mpi_build must be 16 hex digits, not '%.40s'", value);
        return PLANCOLL_SUCCESS;
    }
    size_t n = strlen(value);
    if (n >= cap) return bad(ps, "%s is longer than %zu characters", header_names[h], cap - 1);
    memcpy(dst, value, n + 1);
    return PLANCOLL_SUCCESS;
}

static int add_record(struct pc_wisdom_set *s, int *cap, const struct pc_wisdom_entry *e, int **lines, int line)
{
    if (s->nrecords == *cap) {
        int c = *cap ? 2 * *cap : 16;
        struct pc_wisdom_entry *grown = realloc(s->records, sizeof *grown * (size_t)c);
        if (!grown) return PLANCOLL_ERR_NOMEM;
        s->records = grown;
        int *gl = realloc(*lines, sizeof *gl * (size_t)c);
        if (!gl) return PLANCOLL_ERR_NOMEM;
        *lines = gl;
        *cap = c;
    }
    (*lines)[s->nrecords] = line;
    s->records[s->nrecords++] = *e;
    return PLANCOLL_SUCCESS;
}

static int parse_body(const char *text, size_t len, struct pc_wisdom_set *s, struct parser *ps, int **lines)
{
    enum { HEADER, BODY, MODEL, DONE } state = HEADER;
    bool have[NH] = {false};
    int rec_cap = 0;
    struct pc_machine_model model;
    char line[PC_WISDOM_MAX_LINE + 1];
    size_t pos = 0;
    ps->line = 0;
    while (pos < len) {
        ps->line++;
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (text + pos)) : len - pos;
        if (n > PC_WISDOM_MAX_LINE) return bad(ps, "longer than %d characters", PC_WISDOM_MAX_LINE);
        memcpy(line, text + pos, n);
        line[n] = '\0';
        pos += n + (nl ? 1 : 0);
        if (n > 0 && line[n - 1] == '\r') line[--n] = '\0';
        if (memchr(line, '\0', n)) return bad(ps, "a NUL byte: this is not a text file");

        if (ps->line == 1) {
            /* the signature line decides between "not wisdom", "another version" and "ours" */
            long long version = 0;
            if (strncmp(line, "plancoll-wisdom ", 16) != 0 || !parse_long(line + 16, 0, 1 << 30, &version))
                return bad(ps, "not a plancoll wisdom text (the first line must be 'plancoll-wisdom %d')",
                           PC_WISDOM_FORMAT_VERSION);
            if (version != PC_WISDOM_FORMAT_VERSION) {
                bad(ps, "wisdom format version %lld; this library reads version %d", version, PC_WISDOM_FORMAT_VERSION);
                return PLANCOLL_ERR_WISDOM_STALE;
            }
            continue;
        }
        char *rest = line;
        while (*rest == ' ' || *rest == '\t') rest++;
        if (*rest == '\0' || *rest == '#') continue; /* blank lines and comments, anywhere */
        if (state == DONE) return bad(ps, "text after the closing 'end' line");

        if (state == MODEL) {
            char copy[sizeof line];
            memcpy(copy, rest, strlen(rest) + 1);
            char *cur = copy;
            char *w1 = next_token(&cur), *w2 = w1 ? next_token(&cur) : NULL;
            if (w1 && strcmp(w1, "end") == 0 && w2 && strcmp(w2, "model") == 0 && !next_token(&cur)) {
                if (!model.shape[0]) return bad(ps, "model block without a shape line");
                if (find_model(s->models, s->nmodels, model.shape) >= 0)
                    return bad(ps, "a second model for shape '%.64s'", model.shape);
                if (s->nmodels >= PC_WISDOM_MAX_MODELS) return bad(ps, "more than %d models", PC_WISDOM_MAX_MODELS);
                pc_model_derive(&model, shape_nodes(model.shape));
                int err = put_model(s, &model);
                if (err) return err;
                state = BODY;
                continue;
            }
            if (w1 && (strcmp(w1, "begin") == 0 || strcmp(w1, "record") == 0 || strcmp(w1, "end") == 0))
                return bad(ps, "'%s' inside a model block (missing 'end model')", w1);
            char why[160] = "";
            if (pc_model_parse_line(&model, rest, why, sizeof why) != 0)
                return bad(ps, "model: %s", why[0] ? why : "malformed line");
            continue;
        }

        char *cur = rest;
        char *word = next_token(&cur);
        int h = 0;
        while (h < NH && strcmp(header_names[h], word) != 0) h++;
        if (h < NH) {
            if (state != HEADER) return bad(ps, "header field '%s' after the first model or record", word);
            if (have[h]) return bad(ps, "header field '%s' given twice", word);
            have[h] = true;
            int err = parse_header(ps, h, cur, &s->fp);
            if (err) return err;
            continue;
        }
        bool is_begin = strcmp(word, "begin") == 0, is_record = strcmp(word, "record") == 0,
             is_end = strcmp(word, "end") == 0;
        if (!is_begin && !is_record && !is_end) return bad(ps, "unknown line '%.40s'", word);
        if (state == HEADER) {
            for (int k = 0; k < NH; k++)
                if (!have[k]) return bad(ps, "header field '%s' missing before the first model or record", header_names[k]);
            state = BODY;
        }
        if (is_begin) {
            char *what = next_token(&cur);
            if (!what || strcmp(what, "model") != 0 || next_token(&cur)) return bad(ps, "expected 'begin model'");
            memset(&model, 0, sizeof model);
            state = MODEL;
        } else if (is_record) {
            if (s->nrecords >= PC_WISDOM_MAX_RECORDS) return bad(ps, "more than %d records", PC_WISDOM_MAX_RECORDS);
            struct pc_wisdom_entry e;
            int err = parse_record(ps, cur, &e);
            if (!err) err = add_record(s, &rec_cap, &e, lines, ps->line);
            if (err) return err;
        } else {
            if (next_token(&cur)) return bad(ps, "'end' takes nothing after it");
            state = DONE;
        }
    }
    ps->line++;
    if (ps->line == 1) return bad(ps, "empty text: not a plancoll wisdom text");
    if (state == MODEL) return bad(ps, "the text ends inside a model block (missing 'end model')");
    if (state != DONE) return bad(ps, "the text ends without the closing 'end' line (truncated?)");
    return PLANCOLL_SUCCESS;
}

int pc_wisdom_parse(const char *text, size_t len, struct pc_wisdom_set *out, char *err, size_t errlen)
{
    pc_wisdom_set_init(out);
    if (err && errlen) err[0] = '\0';
    struct parser ps = {0, err, errlen};
    if (!text) return bad(&ps, "no text");
    if (len > PC_WISDOM_MAX_BYTES) return bad(&ps, "the text is larger than %u bytes", PC_WISDOM_MAX_BYTES);
    struct c_numeric cn;
    c_numeric_enter(&cn);
    int *lines = NULL;
    int rc = parse_body(text, len, out, &ps, &lines);
    c_numeric_leave(&cn);
    if (!rc) {
        /* canonical order, and a key given twice is an error (which of the two was meant?) */
        struct pc_wisdom_entry *sorted;
        int n, dup;
        rc = sorted_unique(out->records, out->nrecords, &sorted, &n, &dup);
        if (!rc && dup >= 0) {
            ps.line = lines[dup];
            rc = bad(&ps, "a second record for %.100s", out->records[dup].key);
        } else if (!rc) {
            free(out->records);
            out->records = sorted;
            out->nrecords = n;
        }
    }
    free(lines);
    if (rc == PLANCOLL_ERR_NOMEM && err && errlen) snprintf(err, errlen, "out of memory while parsing wisdom");
    if (rc) pc_wisdom_set_free(out);
    return rc;
}

int pc_wisdom_fingerprint_compare(const struct pc_wisdom_fingerprint *file, const struct pc_wisdom_fingerprint *here,
                                  char *err, size_t errlen)
{
    if (file->registry != here->registry) {
        snprintf(err, errlen,
                 "made by a plancoll build with other algorithms (registry signature %016llx, this build %016llx)",
                 (unsigned long long)file->registry, (unsigned long long)here->registry);
        return PLANCOLL_ERR_WISDOM_STALE;
    }
    if (strcmp(file->mpi_library, here->mpi_library) != 0) {
        snprintf(err, errlen, "made with another MPI library ('%.60s', here '%.60s')", file->mpi_library,
                 here->mpi_library);
        return PLANCOLL_ERR_WISDOM_STALE;
    }
    if (file->mpi_build != here->mpi_build) {
        snprintf(err, errlen, "made with another build of %.60s (build hash %016llx, here %016llx)", here->mpi_library,
                 (unsigned long long)file->mpi_build, (unsigned long long)here->mpi_build);
        return PLANCOLL_ERR_WISDOM_STALE;
    }
    if (strcmp(file->topology, here->topology) != 0) {
        snprintf(err, errlen, "made on another machine (topology '%.70s', here '%.70s')", file->topology,
                 here->topology);
        return PLANCOLL_ERR_WISDOM_STALE;
    }
    if (err && errlen) err[0] = '\0';
    return PLANCOLL_SUCCESS;
}
