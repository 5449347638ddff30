/*
 * plancoll-predict: what every candidate of the planner would cost, and which one ESTIMATE would choose, for a
 * collective on a layout of N nodes x K ranks that need not exist (up to 100,000 ranks and beyond), from the
 * planner's own cost functions. No MPI_Init, no communication (docs/predict.md).
 *
 *   plancoll-predict [--wisdom FILE | --machine FILE] [--cores C] --nodes LIST --ppn K [--json FILE] SIGNATURE...
 *
 * The model: a machine description (--machine, docs/machines.md), the calibrated model of a wisdom file
 * (--wisdom, wisdom/FORMAT.md), or the built-in default model. Signatures as plancoll-wisdom's. --nodes takes a
 * number, a list (1,2,4,8), a list continued by "..." (1,2,4,...,4096: the step of the two numbers before it, a
 * factor when they have one, else a difference) or a range A:B:xF / A:B:+S.
 *
 * Exit codes (as plancoll-wisdom's): 0 success; 2 an unreadable or malformed machine or wisdom file, or a problem
 * no candidate can run; 3 usage error.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/wisdom_io.h"
#include "base/model.h"
#include "exec/registry.h"
#include "planner/machine.h"
#include "planner/planner.h"
#include "planner/predict.h"
#include "planner/wisdom_text.h"
#include "plancoll.h"

enum { EXIT_BAD = 2, EXIT_USAGE = 3 };
#define MAX_LAYOUTS 4096

static void usage(FILE *out)
{
    fprintf(out,
            "usage: plancoll-predict [--wisdom FILE | --machine FILE] [--cores C] --nodes LIST --ppn K\n"
            "                        [--json FILE] SIGNATURE...\n"
            "signatures (as plancoll-wisdom's):\n"
            "  alltoall:[TYPE:]COUNT[:inplace]         COUNT elements of TYPE (default byte) per pair of ranks\n"
            "  alltoallv:uniform:BYTES[:inplace]        BYTES per pair of ranks\n"
            "  alltoallv:random:MAXBYTES:SEED[:inplace] 0..MAXBYTES per pair, drawn from SEED\n"
            "  allreduce:TYPE:OP:COUNT                  e.g. allreduce:double:sum:65536\n"
            "types: byte char short int unsigned long unsigned_long long_long float double long_double\n"
            "       int8 int16 int32 int64 uint8 uint16 uint32 uint64 c_float_complex c_double_complex\n"
            "ops:   sum prod max min land lor lxor band bor bxor\n"
            "options:\n"
            "  --machine FILE   the model of a machine description (docs/machines.md)\n"
            "  --wisdom FILE    the calibrated model of a wisdom file (the one of K ranks per node, else the most nodes)\n"
            "                   (neither: the built-in default model)\n"
            "  --nodes LIST     node counts: 16 | 1,2,4,...,4096 | 16:4096:x2 | 2:10:+2 (at most %d)\n"
            "  --ppn K          ranks per node (every node alike, ranks placed by node)\n"
            "  --cores C        cores per node (default: the machine file's cores_per_node, else K)\n"
            "  --json FILE      also write the results as JSON (docs/predict.md; - for standard output)\n"
            "exit: 0 ok, 2 bad machine or wisdom file or no candidate, 3 usage\n",
            MAX_LAYOUTS);
}

/* ---- --nodes ---- */

static bool parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (!*s || *end || errno || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool add_layout(int *nodes, int *n, long v)
{
    if (*n >= MAX_LAYOUTS) return false;
    nodes[(*n)++] = (int)v;
    return true;
}

/* A range A:B:xF (A, A F, A F^2, ... up to B) or A:B:+S (or A:B:S). */
static bool parse_range(char *item, int *nodes, int *n)
{
    char *f[3];
    int k = 0;
    for (char *p = item, *tok; k < 3 && (tok = strsep(&p, ":")) != NULL;) f[k++] = tok;
    long a, b, step;
    if (k != 3 || !parse_int(f[0], 1, INT32_MAX, &a) || !parse_int(f[1], a, INT32_MAX, &b)) return false;
    bool factor = f[2][0] == 'x';
    if (!parse_int(f[2] + (factor || f[2][0] == '+'), factor ? 2 : 1, INT32_MAX, &step)) return false;
    for (long v = a; v <= b; v = factor ? v * step : v + step)
        if (!add_layout(nodes, n, v)) return false;
    return true;
}

static bool parse_nodes(const char *text, int *nodes, int *n)
{
    char copy[1024];
    if (strlen(text) >= sizeof copy) return false;
    snprintf(copy, sizeof copy, "%s", text);
    *n = 0;
    bool pending_dots = false;
    for (char *p = copy, *item; (item = strsep(&p, ",")) != NULL;) {
        if (strcmp(item, "...") == 0) {
            if (pending_dots || *n < 2) return false;
            pending_dots = true;
            continue;
        }
        if (strchr(item, ':')) {
            if (pending_dots || !parse_range(item, nodes, n)) return false;
            continue;
        }
        long v;
        if (!parse_int(item, 1, INT32_MAX, &v)) return false;
        if (pending_dots) {
            /* continue a, b up to v: by the factor b / a when b is a multiple of a, else by b - a */
            long a = nodes[*n - 2], b = nodes[*n - 1];
            bool factor = b > a && b % a == 0 && b / a >= 2;
            long step = factor ? b / a : b - a;
            if (step < 1 || v <= b) return false;
            for (long x = factor ? b * step : b + step; x < v; x = factor ? x * step : x + step)
                if (!add_layout(nodes, n, x)) return false;
            pending_dots = false;
        }
        if (!add_layout(nodes, n, v)) return false;
    }
    return *n > 0 && !pending_dots;
}

/* ---- the model ---- */

/* "P=8:N=2:ppn=4-4:oversub=1" (pc_model_shape_key) -> nodes and ranks per node; false for another shape text. */
static bool shape_of(const char *shape, int *nnodes, int *min_ppn, int *max_ppn)
{
    int P, oversub;
    return sscanf(shape, "P=%d:N=%d:ppn=%d-%d:oversub=%d", &P, nnodes, min_ppn, max_ppn, &oversub) == 5;
}

/* The wisdom file's model for K ranks per node: a calibrated one measured with K ranks per node, else the calibrated
 * one of the most nodes, else the first. */
static int load_wisdom_model(const char *path, int ppn, struct pc_machine_model *m, char *what, size_t whatlen)
{
    char *text = NULL, why[400];
    size_t len = 0;
    bool absent;
    int rc = pc_wisdom_read_file(path, &text, &len, &absent, why, sizeof why);
    if (rc) {
        fprintf(stderr, "plancoll-predict: %s\n", why);
        return EXIT_BAD;
    }
    struct pc_wisdom_set s;
    rc = pc_wisdom_parse(text, len, &s, why, sizeof why);
    free(text);
    if (rc) {
        fprintf(stderr, "plancoll-predict: %s: %s\n", path, why);
        return EXIT_BAD;
    }
    int best = -1, best_score = -1;
    for (int i = 0; i < s.nmodels; i++) {
        int nn = 0, lo = 0, hi = 0;
        bool known = shape_of(s.models[i].shape, &nn, &lo, &hi);
        int score = (s.models[i].calibrated ? 1 << 30 : 0) + (known && lo == ppn && hi == ppn ? 1 << 29 : 0) +
                    (known ? (nn < (1 << 28) ? nn : (1 << 28)) : 0);
        if (score > best_score) {
            best = i;
            best_score = score;
        }
    }
    if (best < 0) {
        fprintf(stderr, "plancoll-predict: %s holds no machine model (plancoll-wisdom writes one per shape)\n", path);
        pc_wisdom_set_free(&s);
        return EXIT_BAD;
    }
    *m = s.models[best];
    snprintf(what, whatlen, "wisdom %s, model of shape %s (%s)", path, m->shape,
             m->calibrated ? "calibrated" : "default");
    pc_wisdom_set_free(&s);
    return 0;
}

/* ---- output ---- */

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Signatures, specs and file names are printable ASCII here; quotes, backslashes and control characters are
 * escaped all the same. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c < 0x20) fprintf(f, "\\u%04x", c);
        else fputc(c, f);
    }
    fputc('"', f);
}

struct layout_result {
    const char *signature;
    int nodes, ppn;
    int n, estimate;
    double seconds;
    struct pc_prediction *pred;
};

static int by_time(const void *a, const void *b)
{
    const struct pc_prediction *x = *(const struct pc_prediction *const *)a, *y = *(const struct pc_prediction *const *)b;
    /* equal times keep the enumeration order (the order ESTIMATE breaks ties by) */
    int t = (x->predicted_us > y->predicted_us) - (x->predicted_us < y->predicted_us);
    return t ? t : (x > y) - (x < y);
}

static void print_table(FILE *out, const struct layout_result *r)
{
    const struct pc_prediction *order[PC_MAX_CANDIDATES];
    for (int i = 0; i < r->n; i++) order[i] = &r->pred[i];
    qsort(order, (size_t)r->n, sizeof order[0], by_time);
    double best = r->n > 0 ? order[0]->predicted_us : 0;
    fprintf(out, "%s on %d node%s x %d (P=%lld): %d candidates, predicted in %.3f ms\n", r->signature, r->nodes,
           r->nodes == 1 ? "" : "s", r->ppn, (long long)r->nodes * r->ppn, r->n, 1e3 * r->seconds);
    fprintf(out, "    %-84s %14s %9s\n", "spec (* = ESTIMATE's choice)", "predicted us", "x best");
    for (int i = 0; i < r->n; i++) {
        const struct pc_prediction *c = order[i];
        fprintf(out, "  %c %-84s %14.2f %9.3f\n", c == &r->pred[r->estimate] ? '*' : ' ', c->spec, c->predicted_us,
               best > 0 ? c->predicted_us / best : 1.0);
    }
    fprintf(out, "\n");
}

static int write_json(const char *path, const char *model_source, const char *model_file, const char *model_name,
                      const struct layout_result *res, int nres)
{
    FILE *f = strcmp(path, "-") == 0 ? stdout : fopen(path, "w");
    if (!f) {
        fprintf(stderr, "plancoll-predict: --json %s: %s\n", path, strerror(errno));
        return EXIT_BAD;
    }
    fprintf(f, "{\n  \"model\": {\"source\": ");
    json_string(f, model_source);
    fprintf(f, ", \"file\": ");
    if (model_file) json_string(f, model_file);
    else fprintf(f, "null");
    fprintf(f, ", \"name\": ");
    json_string(f, model_name);
    fprintf(f, "},\n  \"results\": [");
    bool first = true;
    for (int k = 0; k < nres; k++)
        for (int i = 0; i < res[k].n; i++) {
            const struct pc_prediction *c = &res[k].pred[i];
            char name[96];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(c->spec, ":"), c->spec);
            fprintf(f, "%s\n    {\"signature\": ", first ? "" : ",");
            json_string(f, res[k].signature);
            fprintf(f, ", \"nodes\": %d, \"ppn\": %d, \"ranks\": %lld, \"algorithm\": ", res[k].nodes, res[k].ppn,
                    (long long)res[k].nodes * res[k].ppn);
            json_string(f, name);
            fprintf(f, ", \"spec\": ");
            json_string(f, c->spec);
            fprintf(f, ", \"predicted_us\": %.17g, \"estimate\": %s}", c->predicted_us,
                    i == res[k].estimate ? "true" : "false");
            first = false;
        }
    fprintf(f, "\n  ],\n  \"layouts\": [");
    for (int k = 0; k < nres; k++) {
        fprintf(f, "%s\n    {\"signature\": ", k ? "," : "");
        json_string(f, res[k].signature);
        fprintf(f, ", \"nodes\": %d, \"ppn\": %d, \"ranks\": %lld, \"candidates\": %d, \"estimate\": ", res[k].nodes,
                res[k].ppn, (long long)res[k].nodes * res[k].ppn, res[k].n);
        json_string(f, res[k].pred[res[k].estimate].spec);
        fprintf(f, ", \"estimate_us\": %.17g, \"seconds\": %.6f}", res[k].pred[res[k].estimate].predicted_us,
                res[k].seconds);
    }
    /* "estimate": the spec itself for one signature on one layout (the shape), else an object keyed by
     * "SIGNATURE nodes=N ppn=K" */
    fprintf(f, "\n  ],\n  \"estimate\": ");
    if (nres == 1) {
        json_string(f, res[0].pred[res[0].estimate].spec);
    } else {
        fprintf(f, "{");
        for (int k = 0; k < nres; k++) {
            char key[320];
            snprintf(key, sizeof key, "%s nodes=%d ppn=%d", res[k].signature, res[k].nodes, res[k].ppn);
            fprintf(f, "%s\n    ", k ? "," : "");
            json_string(f, key);
            fprintf(f, ": ");
            json_string(f, res[k].pred[res[k].estimate].spec);
        }
        fprintf(f, "\n  }");
    }
    fprintf(f, "\n}\n");
    bool bad = ferror(f);
    if (f != stdout) bad = fclose(f) != 0 || bad;
    else fflush(f);
    if (bad) {
        fprintf(stderr, "plancoll-predict: --json %s: write failed\n", path);
        return EXIT_BAD;
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *machine_path = NULL, *wisdom_path = NULL, *json_path = NULL, *nodes_text = NULL;
    long ppn = 0, cores = 0;
    int first = 1;
    for (; first < argc && argv[first][0] == '-' && argv[first][1]; first++) {
        const char *a = argv[first];
        bool has_value = first + 1 < argc;
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(a, "--") == 0) {
            first++;
            break;
        } else if (!has_value) {
            fprintf(stderr, "plancoll-predict: %s needs a value\n", a);
            usage(stderr);
            return EXIT_USAGE;
        } else if (strcmp(a, "--machine") == 0) {
            machine_path = argv[++first];
        } else if (strcmp(a, "--wisdom") == 0) {
            wisdom_path = argv[++first];
        } else if (strcmp(a, "--json") == 0) {
            json_path = argv[++first];
        } else if (strcmp(a, "--nodes") == 0) {
            nodes_text = argv[++first];
        } else if (strcmp(a, "--ppn") == 0 || strcmp(a, "--cores") == 0) {
            long *v = a[2] == 'p' ? &ppn : &cores;
            if (!parse_int(argv[++first], 1, 1 << 20, v)) {
                fprintf(stderr, "plancoll-predict: %s '%s': a whole number from 1 to 2^20\n", a, argv[first]);
                usage(stderr);
                return EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "plancoll-predict: unknown option '%s'\n", a);
            usage(stderr);
            return EXIT_USAGE;
        }
    }
    const int nsig = argc - first;
    static int nodes[MAX_LAYOUTS];
    int nlayouts = 0;
    const char *problem = NULL;
    if (machine_path && wisdom_path) problem = "--machine and --wisdom exclude each other";
    else if (!nodes_text || !ppn) problem = "--nodes and --ppn are required";
    else if (!parse_nodes(nodes_text, nodes, &nlayouts))
        problem = "--nodes: a list of node counts from 1 (16 | 1,2,4,...,4096 | 16:4096:x2 | 2:10:+2)";
    else if (nsig <= 0) problem = "no signature";
    for (int k = 0; k < nlayouts && !problem; k++)
        if ((long long)nodes[k] * ppn > INT32_MAX) problem = "nodes x ppn must stay below 2^31 ranks";
    struct pc_signature *sigs = calloc((size_t)(nsig > 0 ? nsig : 1), sizeof *sigs);
    if (!sigs) return EXIT_BAD;
    for (int i = 0; i < nsig && !problem; i++) {
        const char *why = pc_signature_parse(argv[first + i], &sigs[i]);
        if (why) {
            fprintf(stderr, "plancoll-predict: signature '%s': %s\n", argv[first + i], why);
            problem = "bad signature";
        }
    }
    if (problem) {
        fprintf(stderr, "plancoll-predict: %s\n", problem);
        usage(stderr);
        free(sigs);
        return EXIT_USAGE;
    }

    /* the model's source; the model itself is made per node count (its summary numbers depend on it) */
    struct pc_machine_desc desc;
    struct pc_machine_model wisdom_model;
    char what[600], why[600];
    const char *source = "default", *model_name = "default";
    if (machine_path) {
        if (pc_machine_read_file(machine_path, &desc, why, sizeof why)) {
            fprintf(stderr, "plancoll-predict: %s\n", why);
            free(sigs);
            return EXIT_BAD;
        }
        source = "machine";
        model_name = desc.name;
        if (!cores) cores = pc_machine_cores(&desc, (int)ppn);
        snprintf(what, sizeof what, "machine %s (%s), %ld cores per node", desc.name, machine_path, cores);
    } else if (wisdom_path) {
        int rc = load_wisdom_model(wisdom_path, (int)ppn, &wisdom_model, what, sizeof what);
        if (rc) {
            free(sigs);
            return rc;
        }
        source = "wisdom";
        model_name = wisdom_model.shape;
    } else {
        snprintf(what, sizeof what, "the built-in default model (neither --machine nor --wisdom)");
    }
    /* the tables go to standard error when the JSON takes standard output */
    FILE *tables = json_path && strcmp(json_path, "-") == 0 ? stderr : stdout;
    fprintf(tables, "plancoll-predict: %s\n\n", what);

    const struct pc_algorithm_table *algs = pc_registry_table();
    struct layout_result *res = calloc((size_t)nsig * (size_t)nlayouts, sizeof *res);
    struct pc_prediction *preds = calloc((size_t)nsig * (size_t)nlayouts * PC_MAX_CANDIDATES, sizeof *preds);
    if (!res || !preds) {
        fprintf(stderr, "plancoll-predict: out of memory\n");
        free(sigs);
        free(res);
        free(preds);
        return EXIT_BAD;
    }
    int status = 0, nres = 0;
    for (int i = 0; i < nsig && !status; i++)
        for (int k = 0; k < nlayouts && !status; k++) {
            struct layout_result *r = &res[nres];
            r->signature = argv[first + i];
            r->nodes = nodes[k];
            r->ppn = (int)ppn;
            r->pred = preds + (size_t)nres * PC_MAX_CANDIDATES;
            double t0 = seconds_now();
            struct pc_machine_model m;
            if (machine_path) {
                pc_machine_model(&desc, nodes[k], (int)ppn, &m);
            } else if (wisdom_path) {
                m = wisdom_model;
                pc_model_derive(&m, nodes[k]);
            } else {
                pc_default_model(&m);
                pc_model_derive(&m, nodes[k]);
            }
            struct pc_problem p;
            int rc = pc_signature_problem(&sigs[i], nodes[k], (int)ppn, (int)cores, &p);
            if (!rc) rc = pc_predict(algs, &p, &m, r->pred, PC_MAX_CANDIDATES, &r->n, &r->estimate);
            r->seconds = seconds_now() - t0;
            if (rc || r->estimate < 0) {
                fprintf(stderr, "plancoll-predict: %s on %d x %ld: %s: %s\n", r->signature, nodes[k], ppn,
                        plancoll_strerror(rc), plancoll_error_detail());
                status = EXIT_BAD;
                break;
            }
            print_table(tables, r);
            nres++;
        }
    if (!status && json_path)
        status = write_json(json_path, source, machine_path ? machine_path : wisdom_path, model_name, res, nres);
    free(sigs);
    free(res);
    free(preds);
    return status;
}
