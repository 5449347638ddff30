/* Machine description files: parsing and the mapping to the cost model (planner/machine.h, docs/machines.md). */
#include "planner/machine.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum key_kind { K_WORD, K_INT, K_NUMBER, K_POSITIVE, K_TOPOLOGY };

/* The keys, their kind and whether a file must give them. */
static const struct {
    const char *key;
    enum key_kind kind;
    bool required;
} keys[] = {
    {"name", K_WORD, true},
    {"cores_per_node", K_INT, false},
    {"core_gflops", K_POSITIVE, false},
    {"net_latency_us", K_NUMBER, true},
    {"net_overhead_us", K_NUMBER, false},
    {"net_gap_us", K_NUMBER, false},
    {"net_bandwidth_GBps", K_POSITIVE, true},
    {"net_topology", K_TOPOLOGY, false},
    {"net_backbone_GBps", K_NUMBER, false},
    {"shm_latency_us", K_NUMBER, true},
    {"shm_bandwidth_GBps", K_POSITIVE, true},
    {"node_memory_bandwidth_GBps", K_POSITIVE, false},
    {"sync_us", K_NUMBER, false},
    {"reduce_GBps", K_POSITIVE, false},
    /* added after the first format: MPI's own messages inside a node, the network's large-message start-up */
    {"shm_msg_bandwidth_GBps", K_POSITIVE, false},
    {"net_large_threshold_B", K_NUMBER, false},
    {"net_large_extra_us", K_NUMBER, false},
    {"turn_us", K_NUMBER, false},
};
#define NKEYS ((int)(sizeof keys / sizeof keys[0]))

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
    if (err && errlen) {
        int n = line > 0 ? snprintf(err, errlen, "line %d: ", line) : 0;
        if (n < 0 || (size_t)n >= errlen) n = 0;
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* A plain decimal number (1.5, 12, 2e-3): finite, at least 0; no hex, inf or nan. */
static bool read_number(const char *v, double *out)
{
    for (const char *c = v; *c; c++)
        if (!isdigit((unsigned char)*c) && !strchr(".eE+-", *c)) return false;
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x) || x < 0) return false;
    *out = x;
    return true;
}

static bool valid_word(const char *v)
{
    if (!*v) return false;
    for (const char *c = v; *c; c++)
        if (!isalnum((unsigned char)*c) && !strchr("._-", *c)) return false;
    return true;
}

/* flat, fat-tree:<SimGrid FAT_TREE string> (levels;down counts;up counts;parallel links, e.g. 2;24,48;1,24;1,1),
 * torus:AxBxC (one or more positive dimensions). */
static bool valid_topology(const char *v)
{
    if (strcmp(v, "flat") == 0) return true;
    if (strncmp(v, "fat-tree:", 9) == 0) {
        const char *t = v + 9;
        if (!isdigit((unsigned char)*t)) return false;
        int semis = 0;
        for (; *t; t++) {
            if (*t == ';') semis++;
            else if (!isdigit((unsigned char)*t) && *t != ',') return false;
        }
        return semis == 3;
    }
    if (strncmp(v, "torus:", 6) == 0) {
        const char *t = v + 6;
        for (;;) {
            if (!isdigit((unsigned char)*t) || *t == '0') return false;
            while (isdigit((unsigned char)*t)) t++;
            if (!*t) return true;
            if (*t++ != 'x') return false;
        }
    }
    return false;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = '\0';
    return s;
}

int pc_machine_parse(const char *text, struct pc_machine_desc *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->core_gflops = 10;
    d->net_overhead_us = 0.5;
    d->net_gap_us = -1;
    snprintf(d->net_topology, sizeof d->net_topology, "flat");
    d->node_memory_bandwidth_GBps = -1;
    d->sync_us = 0.2;
    d->reduce_GBps = -1;
    d->shm_msg_bandwidth_GBps = -1;
    int seen[NKEYS] = {0};
    int line = 0;
    for (const char *p = text; *p;) {
        line++;
        size_t len = strcspn(p, "\n");
        char buf[512];
        if (len >= sizeof buf) return fail(err, errlen, line, "line longer than %zu characters", sizeof buf - 1);
        memcpy(buf, p, len);
        buf[len] = '\0';
        p += len + (p[len] == '\n');
        char *hash = strchr(buf, '#');
        if (hash) *hash = '\0';
        char *s = trim(buf);
        if (!*s) continue;
        char *eq = strchr(s, '=');
        if (!eq) return fail(err, errlen, line, "expected 'key = value', got '%s'", s);
        *eq = '\0';
        char *key = trim(s), *value = trim(eq + 1);
        int k = 0;
        while (k < NKEYS && strcmp(keys[k].key, key) != 0) k++;
        if (k == NKEYS) return fail(err, errlen, line, "unknown key '%s'", key);
        if (seen[k]) return fail(err, errlen, line, "'%s' given twice (first on line %d)", key, seen[k]);
        seen[k] = line;
        double x = 0;
        switch (keys[k].kind) {
        case K_WORD:
            if (!valid_word(value) || strlen(value) >= sizeof d->name)
                return fail(err, errlen, line, "%s: '%s' is not a word of letters, digits, '.', '_' or '-' (at most "
                                               "%zu characters)", key, value, sizeof d->name - 1);
            snprintf(d->name, sizeof d->name, "%s", value);
            continue;
        case K_TOPOLOGY:
            if (!valid_topology(value) || strlen(value) >= sizeof d->net_topology)
                return fail(err, errlen, line, "net_topology: '%s' is not flat, fat-tree:L;D,...;U,...;P,... or "
                                               "torus:AxBxC", value);
            snprintf(d->net_topology, sizeof d->net_topology, "%s", value);
            continue;
        case K_INT: {
            char *end;
            errno = 0;
            long v = strtol(value, &end, 10);
            if (!*value || *end || errno || v < 1 || v > 1 << 20)
                return fail(err, errlen, line, "%s: '%s' is not a whole number from 1 to 2^20", key, value);
            d->cores_per_node = (int)v;
            continue;
        }
        case K_NUMBER:
        case K_POSITIVE:
            if (!read_number(value, &x) || (keys[k].kind == K_POSITIVE && x <= 0) || x > 1e12)
                return fail(err, errlen, line, "%s: '%s' is not a plain decimal number %s", key, value,
                            keys[k].kind == K_POSITIVE ? "above 0" : "of 0 or more");
            break;
        }
        double *field[NKEYS] = {NULL,
                                NULL,
                                &d->core_gflops,
                                &d->net_latency_us,
                                &d->net_overhead_us,
                                &d->net_gap_us,
                                &d->net_bandwidth_GBps,
                                NULL,
                                &d->net_backbone_GBps,
                                &d->shm_latency_us,
                                &d->shm_bandwidth_GBps,
                                &d->node_memory_bandwidth_GBps,
                                &d->sync_us,
                                &d->reduce_GBps,
                                &d->shm_msg_bandwidth_GBps,
                                &d->net_large_threshold_B,
                                &d->net_large_extra_us,
                                &d->turn_us};
        *field[k] = x;
    }
    for (int k = 0; k < NKEYS; k++)
        if (keys[k].required && !seen[k])
            return fail(err, errlen, line, "required key '%s' missing (end of the description)", keys[k].key);
    if (strcmp(d->net_topology, "flat") != 0 && seen[8] && d->net_backbone_GBps > 0)
        return fail(err, errlen, seen[8], "net_backbone_GBps applies to a flat network only");
    /* the large-message term needs both numbers: a start-up without a size, or a size without a start-up, is a
     * description that says less than it seems to */
    const int threshold_line = seen[NKEYS - 3], extra_line = seen[NKEYS - 2];
    if ((threshold_line != 0) != (extra_line != 0))
        return fail(err, errlen, threshold_line ? threshold_line : extra_line,
                    "net_large_threshold_B and net_large_extra_us go together (give both, or neither)");
    if (threshold_line && (d->net_large_threshold_B < 1 || d->net_large_threshold_B != floor(d->net_large_threshold_B)))
        return fail(err, errlen, threshold_line, "net_large_threshold_B: '%g' is not a whole number of bytes of 1 or more",
                    d->net_large_threshold_B);
    return 0;
}

int pc_machine_read_file(const char *path, struct pc_machine_desc *d, char *err, size_t errlen)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    char *text = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? 2 * cap : 8192;
            char *grown = cap > (1u << 24) ? NULL : realloc(text, cap);
            if (!grown) {
                free(text);
                fclose(f);
                snprintf(err, errlen, "%s: larger than 16 MiB or out of memory", path);
                return -1;
            }
            text = grown;
        }
        size_t got = fread(text + len, 1, 4096, f);
        len += got;
        if (got < 4096) break;
    }
    bool bad = ferror(f);
    fclose(f);
    text[len] = '\0';
    if (bad || strlen(text) != len) {
        free(text);
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "holds a NUL byte, not text");
        return -1;
    }
    char why[400];
    int rc = pc_machine_parse(text, d, why, sizeof why);
    free(text);
    if (rc) snprintf(err, errlen, "%s: %s", path, why);
    return rc;
}

int pc_machine_cores(const struct pc_machine_desc *d, int ppn) { return d->cores_per_node > 0 ? d->cores_per_node : ppn; }

void pc_machine_model(const struct pc_machine_desc *d, int nnodes, int ppn, struct pc_machine_model *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->shape, sizeof m->shape, "machine:%.55s", d->name);
    const double cores = pc_machine_cores(d, ppn);
    const double shm_bw = d->shm_bandwidth_GBps;
    const double node_bw = d->node_memory_bandwidth_GBps > 0 ? d->node_memory_bandwidth_GBps : shm_bw * cores / 2;
    /* 1 GB/s = 1e3 bytes per microsecond */
    m->L_us = d->net_latency_us;
    m->o_us = d->net_overhead_us;
    m->g_us = d->net_gap_us >= 0 ? d->net_gap_us : d->net_overhead_us;
    m->G_us_per_b = 1e-3 / d->net_bandwidth_GBps;
    m->net_ports = PC_MODEL_MAX_PORTS;
    for (int k = 1; k <= PC_MODEL_MAX_PORTS; k++)
        for (int s = 0; s < PC_MODEL_NSIZES; s++)
            /* LogGP: the node's k-th concurrent message leaves (k - 1) gaps after the first; on this host's
             * oversubscribed calibrations each further pair added ~g at 8 B (wisdom net 2..4: +9-18 us) */
            m->net_time[k - 1][s] = m->L_us + 2 * m->o_us + (k - 1) * m->g_us + (pc_model_sizes[s] - 1) * k * m->G_us_per_b +
                                    (d->net_large_threshold_B > 0 && pc_model_sizes[s] >= d->net_large_threshold_B
                                         ? d->net_large_extra_us
                                         : 0);
    if (d->net_large_threshold_B > 1) { /* the start-up begins at the threshold: the protocol switch */
        m->net_step_low_b = d->net_large_threshold_B - 1;
        m->net_step_high_b = d->net_large_threshold_B;
    }
    m->shm_alpha_us = d->shm_latency_us;
    /* MPI's messages inside a node may move far slower than a copy (here a rank waits for its peer to get a core) */
    m->shm_beta_us_per_b = 1e-3 / (d->shm_msg_bandwidth_GBps > 0 ? d->shm_msg_bandwidth_GBps : shm_bw);
    m->shm_taus = PC_MODEL_MAX_TAU;
    for (int n = 1; n <= 2; n++)
        for (int tau = 1; tau <= PC_MODEL_MAX_TAU; tau++) {
            double bw = node_bw / tau < shm_bw ? node_bw / tau : shm_bw;
            for (int s = 0; s < PC_MODEL_NSIZES; s++) m->shm_time[n - 1][tau - 1][s] = n * pc_model_sizes[s] * 1e-3 / bw;
        }
    m->sync_us = d->sync_us;
    m->reduce_default_us_per_b = 1e-3 / (d->reduce_GBps > 0 ? d->reduce_GBps : shm_bw / 3);
    m->transpose_us_per_b = 1e-3 / shm_bw;
    m->turn_us = d->turn_us; /* the estimates add it only on an oversubscribed host, as for a calibrated model */
    pc_model_derive(m, nnodes);
}
