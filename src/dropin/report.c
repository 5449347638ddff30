/* The drop-in layer's statistics and its report at exit (PLANCOLL_DROPIN_REPORT=1 or =FILE).
 *
 * Each rank keeps one record per (collective, communicator size, shape) from the shape's first call to
 * MPI_Finalize, whatever happens to plans and communicators meanwhile. At MPI_Finalize every rank of
 * MPI_COMM_WORLD sends its records to rank 0 as text, and rank 0 merges them into one line per shape:
 * - alltoall and allreduce shapes are the same string on every rank (MPI makes their keys agree): the line takes
 *   the max over ranks of calls, planned calls and of each rank's mean time before and after planning;
 * - alltoallv shapes differ per rank ("total_bytes=<the rank's bytes sent + received>"): the records of each
 *   (collective, communicator size) are paired across ranks by the order in which each rank first saw them (the
 *   first alltoallv shape of rank 0 with the first of rank 1, ...), and the line shows the max over ranks of the
 *   total bytes and of every figure. A program whose ranks meet their shapes in one order (the usual case) gets
 *   one line per logical call; one whose shapes repeat on some ranks only gets lines that mix them.
 * Format: DROPIN-CONTRACT.md / docs/dropin.md. */
#include "dropin.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pcd_stats {
    struct pcd_stats *next;        /* creation order */
    struct pcd_stats *bucket_next;
    uint64_t hash;
    char collective[24];
    int comm_size;
    char shape[96];
    uint64_t calls, planned;
    double before_sum, after_sum;  /* seconds */
    uint64_t before_n, after_n;    /* timed calls */
    char algorithm[256];
};

/* More distinct shapes than this per process share one record per (collective, size): shape "other". */
enum { MAX_RECORDS = 4096, BUCKETS = 1024 };

static struct pcd_stats *records_head, *records_tail;
static struct pcd_stats *buckets[BUCKETS];
static int n_records;

static uint64_t hash_of(const char *collective, int comm_size, const char *shape) {
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)(unsigned)comm_size;
    for (const char *p = collective; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ '/') * 1099511628211ULL;
    for (const char *p = shape; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    return h;
}

struct pcd_stats *pcd_stats_get(const char *collective, int comm_size, const char *shape) {
    if (pcd_settings.report == PCD_REPORT_NONE || collective == NULL || shape == NULL) return NULL;
    if (n_records >= MAX_RECORDS) shape = "other";
    uint64_t h = hash_of(collective, comm_size, shape);
    for (struct pcd_stats *s = buckets[h % BUCKETS]; s; s = s->bucket_next)
        if (s->hash == h && s->comm_size == comm_size && strcmp(s->collective, collective) == 0 &&
            strcmp(s->shape, shape) == 0)
            return s;
    struct pcd_stats *s = calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    s->hash = h;
    s->comm_size = comm_size;
    snprintf(s->collective, sizeof s->collective, "%s", collective);
    snprintf(s->shape, sizeof s->shape, "%s", shape);
    for (char *p = s->shape; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n') *p = '_'; /* values carry no spaces */
    snprintf(s->algorithm, sizeof s->algorithm, "mpi");
    s->bucket_next = buckets[h % BUCKETS];
    buckets[h % BUCKETS] = s;
    if (records_tail) records_tail->next = s;
    else records_head = s;
    records_tail = s;
    n_records++;
    return s;
}

void pcd_stats_call(struct pcd_stats *s, bool planned, double seconds) {
    if (s == NULL) return;
    s->calls++;
    if (planned) {
        s->planned++;
        if (seconds >= 0) {
            s->after_sum += seconds;
            s->after_n++;
        }
    } else if (seconds >= 0) {
        s->before_sum += seconds;
        s->before_n++;
    }
}

void pcd_stats_algorithm(struct pcd_stats *s, const char *spec) {
    if (s == NULL || spec == NULL) return;
    snprintf(s->algorithm, sizeof s->algorithm, "%s", spec);
    for (char *p = s->algorithm; *p; p++)
        if (*p == ' ' || *p == '\t' || *p == '\n') *p = '_';
}

/* ---- The report ---------------------------------------------------------------------------------------- */

static bool is_alltoallv(const char *collective) { return strncmp(collective, "alltoallv", 9) == 0; }

/* One rank's records as text, one per line: collective size shape calls planned before_mean after_mean algorithm,
 * means in microseconds ("-" when none was timed). */
static char *serialise(size_t *len) {
    size_t cap = 256, n = 0;
    char *buf = malloc(cap);
    if (buf == NULL) return NULL;
    buf[0] = '\0';
    for (struct pcd_stats *s = records_head; s; s = s->next) {
        char before[40] = "-", after[40] = "-";
        if (s->before_n) snprintf(before, sizeof before, "%.17g", 1e6 * s->before_sum / (double)s->before_n);
        if (s->after_n) snprintf(after, sizeof after, "%.17g", 1e6 * s->after_sum / (double)s->after_n);
        char line[600];
        int w = snprintf(line, sizeof line, "%s %d %s %llu %llu %s %s %s\n", s->collective, s->comm_size, s->shape,
                         (unsigned long long)s->calls, (unsigned long long)s->planned, before, after, s->algorithm);
        if (w < 0) continue;
        if ((size_t)w >= sizeof line) w = sizeof line - 1;
        if (n + (size_t)w + 1 > cap) {
            while (n + (size_t)w + 1 > cap) cap *= 2;
            char *b = realloc(buf, cap);
            if (b == NULL) break;
            buf = b;
        }
        memcpy(buf + n, line, (size_t)w);
        n += (size_t)w;
        buf[n] = '\0';
    }
    *len = n;
    return buf;
}

struct merged {
    char collective[24];
    int comm_size;
    char shape[96];
    long long ordinal;         /* alltoallv forms: the record's rank-local order; -1 otherwise */
    long long total_bytes;     /* alltoallv forms: max over ranks */
    unsigned long long calls, planned;
    double before, after;      /* max of means, < 0: none */
    char algorithm[256];
};

static void merge_line(struct merged **m, int *nm, int *cap, const char *line, long long *ordinals) {
    struct merged r = {.before = -1, .after = -1, .ordinal = -1};
    char before[40], after[40];
    if (sscanf(line, "%23s %d %95s %llu %llu %39s %39s %255s", r.collective, &r.comm_size, r.shape, &r.calls,
               &r.planned, before, after, r.algorithm) != 8)
        return;
    if (strcmp(before, "-") != 0) r.before = strtod(before, NULL);
    if (strcmp(after, "-") != 0) r.after = strtod(after, NULL);
    if (is_alltoallv(r.collective)) {
        /* ordinals[]: (key + 1, records met so far) per (collective, size) of this rank's alltoallv forms; few. */
        long long key = (long long)hash_of(r.collective, r.comm_size, "") & 0x7fffffffffffLL;
        int j = 0;
        while (ordinals[2 * j] != 0 && ordinals[2 * j] != key + 1) j++;
        ordinals[2 * j] = key + 1;
        r.ordinal = ordinals[2 * j + 1]++;
        sscanf(r.shape, "total_bytes=%lld", &r.total_bytes);
    }
    for (int i = 0; i < *nm; i++) {
        struct merged *o = &(*m)[i];
        if (o->comm_size != r.comm_size || strcmp(o->collective, r.collective) != 0) continue;
        if (r.ordinal >= 0 ? o->ordinal != r.ordinal : strcmp(o->shape, r.shape) != 0) continue;
        if (r.calls > o->calls) o->calls = r.calls;
        if (r.planned > o->planned) o->planned = r.planned;
        if (r.before > o->before) o->before = r.before;
        if (r.after > o->after) o->after = r.after;
        if (r.total_bytes > o->total_bytes) o->total_bytes = r.total_bytes;
        if (strcmp(o->algorithm, "mpi") == 0 && strcmp(r.algorithm, "mpi") != 0)
            snprintf(o->algorithm, sizeof o->algorithm, "%s", r.algorithm);
        return;
    }
    if (*nm == *cap) {
        int c = *cap ? 2 * *cap : 64;
        struct merged *n = realloc(*m, sizeof *n * (size_t)c);
        if (n == NULL) return;
        *m = n;
        *cap = c;
    }
    (*m)[(*nm)++] = r;
}

static void print_report(FILE *out, const struct merged *m, int nm, int world) {
    fprintf(out, "# plancoll-dropin report: %d shapes, %d ranks in MPI_COMM_WORLD\n", nm, world);
    for (int i = 0; i < nm; i++) {
        const struct merged *r = &m[i];
        char shape[96], before[40] = "-", after[40] = "-", saved[40] = "0";
        if (r->ordinal >= 0) snprintf(shape, sizeof shape, "total_bytes=%lld", r->total_bytes);
        else snprintf(shape, sizeof shape, "%s", r->shape);
        if (r->before >= 0) snprintf(before, sizeof before, "%.1f", r->before);
        if (r->after >= 0) snprintf(after, sizeof after, "%.1f", r->after);
        if (r->planned > 0) {
            if (r->before >= 0 && r->after >= 0)
                snprintf(saved, sizeof saved, "%.1f", (r->before - r->after) * (double)r->planned);
            else
                snprintf(saved, sizeof saved, "-");
        }
        fprintf(out, "collective=%s comm_size=%d shape=%s calls=%llu planned_calls=%llu algorithm=%s before_us=%s "
                     "after_us=%s saved_us=%s\n",
                r->collective, r->comm_size, shape, r->calls, r->planned, r->algorithm, before, after, saved);
    }
}

/* Writes the report to PLANCOLL_DROPIN_REPORT's file through a temporary file in the same directory and a rename,
 * so a reader sees the old file or the whole new one. */
static void write_file(const struct merged *m, int nm, int world) {
    const char *path = pcd_settings.report_file;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        fprintf(stderr, "plancoll-dropin: cannot write the report to %s: %s\n", tmp, strerror(errno));
        return;
    }
    print_report(f, m, nm, world);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        fprintf(stderr, "plancoll-dropin: cannot write the report to %s: %s\n", path, strerror(errno));
        remove(tmp);
    }
}

static void free_records(void) {
    for (struct pcd_stats *s = records_head; s;) {
        struct pcd_stats *next = s->next;
        free(s);
        s = next;
    }
    records_head = records_tail = NULL;
    memset(buckets, 0, sizeof buckets);
    n_records = 0;
}

/* Finalize hook, on every rank of MPI_COMM_WORLD: gathers the records to rank 0, which prints the report. */
static void report_at_finalize(void) {
    if (pcd_settings.report == PCD_REPORT_NONE) return;
    int rank, world;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world);
    size_t len = 0;
    char *text = serialise(&len);
    int mylen = text ? (int)len : 0;
    int *lens = rank == 0 ? calloc((size_t)world, sizeof *lens) : NULL;
    int *displs = rank == 0 ? calloc((size_t)world, sizeof *displs) : NULL;
    /* Every rank takes part in both collectives whatever happens on rank 0 (a rank 0 without memory receives
     * nothing and says so). */
    int ok = rank != 0 || (lens && displs);
    PMPI_Gather(&mylen, 1, MPI_INT, lens ? lens : &mylen, 1, MPI_INT, 0, MPI_COMM_WORLD);
    char *all = NULL;
    long long total = 0;
    if (rank == 0 && ok) {
        for (int r = 0; r < world; r++) {
            displs[r] = (int)total;
            total += lens[r];
        }
        all = total < 0x7fffffff ? malloc((size_t)total + 1) : NULL;
        if (all == NULL) {
            for (int r = 0; r < world; r++) lens[r] = displs[r] = 0;
            ok = 0;
        }
    }
    /* Ranks whose lengths rank 0 could not take send nothing into a zero-length slot; their text is lost. */
    PMPI_Gatherv(text ? text : "", mylen, MPI_CHAR, all, lens, displs, MPI_CHAR, 0, MPI_COMM_WORLD);
    free(text);
    if (rank == 0) {
        if (!ok) fprintf(stderr, "plancoll-dropin: no memory to gather the report\n");
        struct merged *m = NULL;
        int nm = 0, cap = 0;
        for (int r = 0; all && r < world; r++) {
            char *p = all + displs[r], *end = p + lens[r];
            size_t lines = 0;
            for (char *q = p; q < end; q++) lines += *q == '\n';
            /* (key, count) pairs, at most one per line of this rank, and a zero pair to end the search */
            long long *ordinals = calloc(2 * (lines + 1), sizeof *ordinals);
            if (ordinals == NULL) break;
            while (p < end) {
                char *nl = memchr(p, '\n', (size_t)(end - p));
                if (nl == NULL) break;
                *nl = '\0';
                merge_line(&m, &nm, &cap, p, ordinals);
                p = nl + 1;
            }
            free(ordinals);
        }
        if (pcd_settings.report == PCD_REPORT_STDERR) {
            print_report(stderr, m, nm, world);
            fflush(stderr);
        } else {
            write_file(m, nm, world);
        }
        free(m);
    }
    free(all);
    free(lens);
    free(displs);
    free_records();
}

__attribute__((constructor)) static void register_report(void) { pcd_on_finalize(report_at_finalize); }
