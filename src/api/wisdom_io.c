/* Wisdom between ranks and files: this machine's fingerprint, the collective import and export functions,
 * and PLANCOLL_WISDOM (read at the first plan creation, written back at MPI_Finalize).
 *
 * Text goes through wisdom_text.c (parsing and formatting, no MPI). Every collective here is nonblocking and
 * waited with the library's wait policy on the communicator's layout. Import: rank 0 reads or takes the text and
 * broadcasts it; every rank parses the same bytes, so every rank reaches the same verdict on the format;
 * the fingerprint is checked on every rank (the topology is each rank's own node) and the verdicts combined in
 * one allreduce; only then does each rank swap in the merged wisdom it built aside. Export: every rank formats
 * what it knows, rank 0 gathers and merges it (a plan on a sub-communicator taught only its own ranks). */
#include "exec/registry.h"
#include "api/wisdom_io.h"

#include <errno.h>
#include <fcntl.h>
#include <hwloc.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shm/layout.h"
#include "shm/mpi_compat.h" /* pc_mpi_igather(v) */
#include "exec/plan.h"
#include "api/validate.h"

#define MSG_LEN 400

/* ---- this machine ---- */

static void topology_summary(char *buf, size_t len)
{
    int packages = 0, cores = 0, pus = 0, numa = 0;
    const char *cpu = NULL;
    char cpu_copy[96] = "";
    hwloc_topology_t topo;
    if (hwloc_topology_init(&topo) == 0) {
        if (hwloc_topology_load(topo) == 0) {
            packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
            cores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
            pus = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PU);
            numa = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
            hwloc_obj_t pkg = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, 0);
            if (pkg) cpu = hwloc_obj_get_info_by_name(pkg, "CPUModel");
            if (cpu) snprintf(cpu_copy, sizeof cpu_copy, "%s", cpu);
        }
        hwloc_topology_destroy(topo);
    }
    snprintf(buf, len, "packages=%d cores=%d pus=%d numa=%d%s%s", packages, cores, pus, numa,
             cpu_copy[0] ? " cpu=" : "", cpu_copy);
    pc_wisdom_normalize_text(buf);
}

void pc_wisdom_local_fingerprint(struct pc_wisdom_fingerprint *fp)
{
    static struct pc_wisdom_fingerprint cached;
    static bool have;
    if (!have) {
        memset(&cached, 0, sizeof cached);
        snprintf(cached.plancoll, sizeof cached.plancoll, "%s", PLANCOLL_VERSION_STRING);
        cached.registry = pc_registry_signature();
        char lib[MPI_MAX_LIBRARY_VERSION_STRING + 1] = "";
        int n = 0;
        if (MPI_Get_library_version(lib, &n) != MPI_SUCCESS) n = 0;
        if (n < 0) n = 0;
        if (n > MPI_MAX_LIBRARY_VERSION_STRING) n = MPI_MAX_LIBRARY_VERSION_STRING;
        lib[n] = '\0';
        cached.mpi_build = pc_hash_bytes(PC_HASH_SEED, lib, strlen(lib));
        size_t first = strcspn(lib, "\n");
        if (first >= sizeof cached.mpi_library) first = sizeof cached.mpi_library - 1;
        memcpy(cached.mpi_library, lib, first);
        cached.mpi_library[first] = '\0';
        pc_wisdom_normalize_text(cached.mpi_library);
        if (!cached.mpi_library[0]) snprintf(cached.mpi_library, sizeof cached.mpi_library, "unknown");
        topology_summary(cached.topology, sizeof cached.topology);
        have = true;
    }
    *fp = cached;
}

/* The largest communicator plancoll has seen, for the informational layout line written at MPI_Finalize. */
static char job_layout[64];
static int job_ranks;

static void layout_line(const struct pc_layout *L, char *buf, size_t len)
{
    struct pc_shape s;
    pc_layout_shape(L, &s);
    snprintf(buf, len, "P=%d nodes=%d ppn=%d-%d", s.nranks, s.nnodes, s.min_ppn, s.max_ppn);
    if (s.nranks > job_ranks) {
        job_ranks = s.nranks;
        snprintf(job_layout, sizeof job_layout, "%s", buf);
    }
}

/* ---- files ---- */

int pc_wisdom_read_file(const char *path, char **text, size_t *len, bool *absent, char *msg, size_t msglen)
{
    *text = NULL;
    *len = 0;
    *absent = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the job */
    if (fd < 0) {
        *absent = errno == ENOENT;
        snprintf(msg, msglen, "cannot open '%s': %s", path, strerror(errno));
        return PLANCOLL_ERR_IO;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "'%s' is not a regular file", path);
        close(fd);
        return PLANCOLL_ERR_IO;
    }
    if (st.st_size > (off_t)PC_WISDOM_MAX_BYTES) {
        snprintf(msg, msglen, "'%s' is larger than %u bytes: not wisdom", path, PC_WISDOM_MAX_BYTES);
        close(fd);
        return PLANCOLL_ERR_WISDOM_FORMAT;
    }
    size_t cap = (size_t)st.st_size + 1, used = 0;
    char *buf = malloc(cap);
    if (!buf) {
        close(fd);
        snprintf(msg, msglen, "out of memory reading '%s'", path);
        return PLANCOLL_ERR_NOMEM;
    }
    for (;;) {
        if (used + 1 == cap) {
            /* the file grew since fstat: keep reading up to the limit */
            if (cap > PC_WISDOM_MAX_BYTES) {
                free(buf);
                close(fd);
                snprintf(msg, msglen, "'%s' is larger than %u bytes: not wisdom", path, PC_WISDOM_MAX_BYTES);
                return PLANCOLL_ERR_WISDOM_FORMAT;
            }
            char *grown = realloc(buf, cap * 2);
            if (!grown) {
                free(buf);
                close(fd);
                snprintf(msg, msglen, "out of memory reading '%s'", path);
                return PLANCOLL_ERR_NOMEM;
            }
            buf = grown;
            cap *= 2;
        }
        ssize_t got = read(fd, buf + used, cap - 1 - used);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) {
            snprintf(msg, msglen, "cannot read '%s': %s", path, strerror(errno));
            free(buf);
            close(fd);
            return PLANCOLL_ERR_IO;
        }
        if (got == 0) break;
        used += (size_t)got;
    }
    close(fd);
    buf[used] = '\0';
    *text = buf;
    *len = used;
    return PLANCOLL_SUCCESS;
}

int pc_wisdom_write_file(const char *path, const char *text, size_t len, char *msg, size_t msglen)
{
    /* the temporary file must be in the target's directory: rename is atomic only within a file system */
    size_t plen = strlen(path);
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    char *tmp = malloc(plen + 32), *dir = malloc(dirlen + 2);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        snprintf(msg, msglen, "out of memory writing '%s'", path);
        return PLANCOLL_ERR_IO;
    }
    if (slash) {
        memcpy(dir, path, dirlen);
        dir[dirlen] = '\0';
        if (dirlen == 0) snprintf(dir, 2, "/");
    } else {
        snprintf(dir, 2, ".");
    }
    snprintf(tmp, plen + 32, "%s.tmp-XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        snprintf(msg, msglen, "cannot create a temporary file in '%s' to write '%s': %s", dir, path, strerror(errno));
        free(tmp);
        free(dir);
        return PLANCOLL_ERR_IO;
    }
    mode_t mask = umask(0);
    umask(mask);
    int err = 0;
    const char *what = "write";
    if (fchmod(fd, 0666 & ~mask) != 0) err = errno, what = "chmod";
    for (size_t done = 0; !err && done < len;) {
        ssize_t w = write(fd, text + done, len - done);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) err = errno, what = "write";
        else done += (size_t)w;
    }
    if (!err && fsync(fd) != 0) err = errno, what = "fsync";
    if (close(fd) != 0 && !err) err = errno, what = "close";
    if (!err && rename(tmp, path) != 0) err = errno, what = "rename";
    if (err) {
        unlink(tmp);
        snprintf(msg, msglen, "cannot write '%s' (%s: %s)", path, what, strerror(err));
        free(tmp);
        free(dir);
        return PLANCOLL_ERR_IO;
    }
    /* the rename itself survives a crash only once the directory is on disk */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    free(tmp);
    free(dir);
    return PLANCOLL_SUCCESS;
}

/* ---- the lock of a wisdom file ----
 *
 * Writers of one wisdom file (jobs finalizing with the same PLANCOLL_WISDOM, exports, plancoll-wisdom merge)
 * take an exclusive fcntl lock on "<path>.lock" for the whole read-merge-write, so that no job renames its
 * file over one it has not read. Not the wisdom file itself: the rename replaces its inode, and a lock on the
 * old inode would exclude nobody. fcntl locks are released by the kernel when their holder dies (a crashed job
 * cannot wedge the others, unlike a lock made of a file's existence) and work over NFS. Open file description
 * locks where the kernel has them, so that two threads of one process exclude each other too. The lock file
 * stays: unlinking it while another process waits on it would let a third lock a new file and write at the
 * same time. */

static int lock_file(int fd, int cmd)
{
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET; /* l_start = l_len = 0: the whole file */
    return fcntl(fd, cmd, &fl);
}

int pc_wisdom_lock(const char *path, double timeout, int *fd_out, char *msg, size_t msglen)
{
    *fd_out = -1;
    msg[0] = '\0';
    /* a directory, a device or a FIFO is not replaced by a wisdom file: refused before a lock file appears
     * beside it (the write would fail, or replace what must stay) */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(msg, msglen, "'%s' is not a regular file: not replaced by wisdom", path);
        return PLANCOLL_ERR_IO;
    }
    size_t n = strlen(path) + sizeof ".lock";
    char *name = malloc(n);
    if (!name) {
        snprintf(msg, msglen, "out of memory locking '%s'", path);
        return PLANCOLL_ERR_NOMEM;
    }
    snprintf(name, n, "%s.lock", path);
    int fd = open(name, O_RDWR | O_CREAT | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW, 0666);
    if (fd < 0) {
        snprintf(msg, msglen, "cannot create the lock file '%s' (the wisdom file's directory must be writable): %s",
                 name, strerror(errno));
        free(name);
        return PLANCOLL_ERR_IO;
    }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    long pause_us = 1000;
    uint64_t jitter = pc_hash_bytes(PC_HASH_SEED, &start, sizeof start) ^ (uint64_t)getpid();
#ifdef F_OFD_SETLK
    int cmd = F_OFD_SETLK;
#else
    int cmd = F_SETLK;
#endif
    for (;;) {
        if (lock_file(fd, cmd) == 0) break;
        int e = errno;
#ifdef F_OFD_SETLK
        if (e == EINVAL && cmd == F_OFD_SETLK) { /* a kernel before open file description locks */
            cmd = F_SETLK;
            continue;
        }
#endif
        if (e == EINTR) continue;
        if (e != EACCES && e != EAGAIN) {
            /* ENOLCK (NFS without a lock daemon), ENOTSUP, ENOSYS: this file system cannot lock */
            snprintf(msg, msglen, "cannot lock '%s': %s", name, strerror(e));
            close(fd);
            free(name);
            return PC_WISDOM_LOCK_UNSUPPORTED;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
        if (waited >= timeout) {
            snprintf(msg, msglen, "'%s' stayed locked for %g s (another process is writing this wisdom file, or "
                     "hangs while holding the lock)", name, timeout);
            close(fd);
            free(name);
            return PLANCOLL_ERR_IO;
        }
        /* growing pauses with jitter, so that waiters do not retry in lockstep */
        jitter = jitter * 6364136223846793005ULL + 1442695040888963407ULL;
        long us = pause_us / 2 + (long)((jitter >> 33) % (uint64_t)pause_us);
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
        if (pause_us < 32000) pause_us *= 2;
    }
    free(name);
    *fd_out = fd;
    return PLANCOLL_SUCCESS;
}

void pc_wisdom_unlock(int fd)
{
    if (fd >= 0) close(fd); /* closing releases the lock */
}

int pc_wisdom_lock_for_write(const char *path, int *fd, char *msg, size_t msglen)
{
    static bool warned;
    int rc = pc_wisdom_lock(path, PC_WISDOM_LOCK_SECONDS, fd, msg, msglen);
    if (rc != PC_WISDOM_LOCK_UNSUPPORTED) return rc;
    if (!warned)
        fprintf(stderr, "plancoll: %s; writing wisdom without the lock (a job writing the same file at the same "
                        "moment may lose its records)\n", msg);
    warned = true;
    return PLANCOLL_SUCCESS;
}

/* ---- the process's wisdom as a set ---- */

static int current_set(struct pc_wisdom_set *s)
{
    pc_wisdom_set_init(s);
    int n = pc_wisdom_count(), nm = pc_model_count();
    struct pc_wisdom_entry *e = n ? malloc(sizeof *e * (size_t)n) : NULL;
    struct pc_machine_model *m = nm ? malloc(sizeof *m * (size_t)nm) : NULL;
    int err = (n && !e) || (nm && !m) ? PLANCOLL_ERR_NOMEM : PLANCOLL_SUCCESS;
    for (int i = 0; i < n && !err; i++) e[i] = *pc_wisdom_at(i);
    for (int i = 0; i < nm && !err; i++) m[i] = *pc_model_at(i);
    if (!err) err = pc_wisdom_set_fill(s, e, n, m, nm);
    free(e);
    free(m);
    if (err) pc_wisdom_set_free(s);
    return err;
}

/* A hash of what the process knows (records and models, not the fingerprint): "learned something" is a change
 * of it. 0 when it cannot be computed. */
static uint64_t knowledge_hash(void)
{
    struct pc_wisdom_set s;
    if (current_set(&s)) return 0;
    char *text = NULL;
    size_t len = 0;
    uint64_t h = 0;
    if (pc_wisdom_format(&s, &text, &len) == PLANCOLL_SUCCESS) h = pc_hash_bytes(PC_HASH_SEED, text, len);
    free(text);
    pc_wisdom_set_free(&s);
    return h;
}

/* ---- collectives on a layout: a header (code, length, message) from rank 0, then the text ---- */

struct header {
    long long rc, len;
    int absent; /* PLANCOLL_WISDOM: rank 0 found no file */
    char msg[MSG_LEN];
};

#define TEXT_CHUNK (1 << 16)

/* Rank 0's header and text reach every rank: on return every rank holds the same header and, when h->rc is
 * PLANCOLL_SUCCESS, the text in *text (malloc'd and NUL-terminated on ranks other than 0). Every rank takes part
 * in every broadcast whatever happens locally: a rank that cannot allocate the text receives into scratch and
 * returns PLANCOLL_ERR_NOMEM afterwards. */
static int bcast_text(struct pc_layout *L, struct header *h, char **text)
{
    static char scratch[TEXT_CHUNK];
    int err = pc_bcast_wait(L, h, (int)sizeof *h, MPI_BYTE, 0);
    if (err) return err;
    h->msg[MSG_LEN - 1] = '\0';
    if (h->rc != PLANCOLL_SUCCESS) return PLANCOLL_SUCCESS;
    bool have = true;
    if (L->rank != 0) {
        *text = malloc((size_t)h->len + 1);
        have = *text != NULL;
    }
    for (long long off = 0; off < h->len; off += TEXT_CHUNK) {
        int n = (int)(h->len - off < TEXT_CHUNK ? h->len - off : TEXT_CHUNK);
        err = pc_bcast_wait(L, have ? *text + off : scratch, n, MPI_CHAR, 0);
        if (err) return err;
    }
    if (!have) return pc_error(PLANCOLL_ERR_NOMEM, "wisdom text of %lld bytes", h->len);
    if (L->rank != 0) (*text)[h->len] = '\0';
    return PLANCOLL_SUCCESS;
}

/* Every rank learns whether any rank failed: returns err, or PLANCOLL_ERR_REMOTE naming a failed rank (the highest). */
static int agree(struct pc_layout *L, int err, const char *what)
{
    int failed_rank = -1;
    int rc = pc_agree_failure_max(L, err, NULL, 0, &failed_rank, NULL);
    if (rc == PLANCOLL_ERR_REMOTE && !err && failed_rank >= 0)
        rc = pc_error(PLANCOLL_ERR_REMOTE, "%s failed on rank %d (see its plancoll_error_detail)", what, failed_rank);
    return rc;
}

/* Records whose algorithm this build does not have (possible only in an edited file: the registry signature
 * matched) would never be used; they are an error so that the edit is noticed. */
static int check_algorithms(const struct pc_wisdom_set *s, char *msg, size_t msglen)
{
    for (int i = 0; i < s->nrecords; i++) {
        const struct pc_wisdom_entry *e = &s->records[i];
        if (strncmp(e->key, "transpose:", 10) == 0) { /* a transpose's strategy (src/transpose) */
            if (pc_transpose_strategy_index(e->algorithm) < 0) {
                snprintf(msg, msglen, "the record of %.100s names '%s', which is not a transpose strategy "
                                      "(transpose.fused, transpose.composite)", e->key, e->algorithm);
                return PLANCOLL_ERR_WISDOM_FORMAT;
            }
            continue;
        }
        int idx = pc_registry_find(e->algorithm);
        const struct pc_algorithm *a = idx >= 0 ? pc_registry_get(idx) : NULL;
        const char *coll = a ? pc_collective_name(a->collective) : "";
        size_t n = strlen(coll);
        if (!a || strncmp(e->key, coll, n) != 0 || e->key[n] != ':') {
            snprintf(msg, msglen, "the record of %.100s names '%s', which is not a registered %.*s algorithm", e->key,
                     e->algorithm, (int)strcspn(e->key, ":"), e->key);
            return PLANCOLL_ERR_WISDOM_FORMAT;
        }
    }
    return PLANCOLL_SUCCESS;
}

/* The collective half of an import. *h and text are rank 0's (broadcast here); source names the origin in
 * messages; commit says whether this rank takes the wisdom in (a rank re-joining the PLANCOLL_WISDOM read does
 * not). Every rank reaches the one allreduce that combines the verdicts, and returns the same code. */
static int import_collective(struct pc_layout *L, struct header *h, char *text, const char *source, bool commit)
{
    char *mine = L->rank == 0 ? text : NULL;
    int local = bcast_text(L, h, &mine);
    if (local == PLANCOLL_ERR_MPI) {
        if (L->rank != 0) free(mine);
        return local;
    }
    /* rank 0's own failure (no file, NULL text): the same header everywhere */
    if (h->rc != PLANCOLL_SUCCESS) return pc_error((int)h->rc, "%s", h->msg);
    if (h->absent) {
        if (L->rank != 0) free(mine);
        return PLANCOLL_SUCCESS;
    }
    struct pc_wisdom_set in, merged;
    pc_wisdom_set_init(&in);
    pc_wisdom_set_init(&merged);
    char why[MSG_LEN] = "";
    if (local) snprintf(why, sizeof why, "%s", plancoll_error_detail());
    /* every rank parses the same bytes: the verdict on the format is the same everywhere */
    if (!local) local = pc_wisdom_parse(mine, (size_t)h->len, &in, why, sizeof why);
    if (L->rank != 0) free(mine);
    if (!local) local = check_algorithms(&in, why, sizeof why);
    /* the fingerprint: every rank judges its own node */
    int stale = PLANCOLL_SUCCESS;
    if (!local) {
        struct pc_wisdom_fingerprint here;
        pc_wisdom_local_fingerprint(&here);
        stale = pc_wisdom_fingerprint_compare(&in.fp, &here, why, sizeof why);
    }
    /* the new store is built aside; nothing is committed unless every rank accepts */
    if (!local && !stale && commit) {
        local = current_set(&merged);
        if (!local) local = pc_wisdom_set_merge(&merged, &in);
        if (local) snprintf(why, sizeof why, "out of memory merging the wisdom");
    }
    /* one agreement: who could not take it in (with its error code), and who runs on another machine */
    uint64_t v[2] = {(uint64_t)local, stale ? (uint64_t)L->rank + 1 : 0};
    int failed_rank = -1;
    int err = pc_agree_failure_max(L, local, v, 2, &failed_rank, NULL);
    const char *sep = *source ? ": " : "";
    if (local) err = pc_error(local, "%s%s%s", source, sep, why);
    else if (err == PLANCOLL_ERR_REMOTE)
        err = pc_error((int)v[0], "%s%srank %d could not take it in (see its plancoll_error_detail)", source, sep,
                       failed_rank);
    if (!err && stale) err = pc_error(PLANCOLL_ERR_WISDOM_STALE, "%s%s%s", source, sep, why);
    if (!err && v[1])
        err = pc_error(PLANCOLL_ERR_WISDOM_STALE, "%s%sdoes not match rank %d's machine (see its plancoll_error_detail)",
                       source, sep, (int)v[1] - 1);
    if (!err && commit) {
        /* the records swap in whole; models go in one by one (replacing a shape's model never allocates) */
        pc_wisdom_adopt(merged.records, merged.nrecords);
        merged.records = NULL;
        merged.nrecords = 0;
        for (int i = 0; i < in.nmodels && !err; i++)
            if (pc_model_remember(&in.models[i]) != 0) err = pc_error(PLANCOLL_ERR_NOMEM, "importing models");
    }
    pc_wisdom_set_free(&merged);
    pc_wisdom_set_free(&in);
    return err;
}

/* The collective half of an export: on return rank 0 holds the merged text in *text, or an error in h (rc,
 * message); other ranks hold nothing. Every rank formats what it knows and sends it to rank 0, which merges. */
static int export_collective(struct pc_layout *L, struct header *h, char **text)
{
    *text = NULL;
    memset(h, 0, sizeof *h);
    struct pc_wisdom_set mine;
    int err = current_set(&mine);
    pc_wisdom_local_fingerprint(&mine.fp);
    layout_line(L, mine.fp.layout, sizeof mine.fp.layout);
    char *local = NULL;
    size_t local_len = 0;
    if (!err) err = pc_wisdom_format(&mine, &local, &local_len);
    /* the length says what went wrong: -1 no memory, -2 too large */
    long long sent = err ? -1 : local_len > PC_WISDOM_MAX_BYTES ? -2 : (long long)local_len;

    const int P = L->size;
    long long *lens = NULL;
    int *counts = NULL, *displs = NULL;
    int ready = 1;
    if (L->rank == 0) {
        lens = calloc((size_t)P, sizeof *lens);
        counts = calloc((size_t)P, sizeof *counts);
        displs = calloc((size_t)P, sizeof *displs);
        ready = lens && counts && displs;
    }
    /* Rank 0 says whether it can receive the lengths at all: without that word the others would be left in a
     * gather rank 0 cannot enter. Its failure travels in its header, as every other non-MPI failure here. */
    int rerr = pc_bcast_wait(L, &ready, 1, MPI_INT, 0);
    if (rerr || !ready) {
        if (L->rank == 0 && !rerr) {
            h->rc = pc_error(PLANCOLL_ERR_NOMEM, "gathering the wisdom lengths of %d ranks", P);
            snprintf(h->msg, sizeof h->msg, "rank 0: %s", plancoll_error_detail());
        }
        free(lens);
        free(counts);
        free(displs);
        free(local);
        pc_wisdom_set_free(&mine);
        return rerr;
    }
    MPI_Request req;
    int rc = pc_mpi_igather(&sent, 1, MPI_LONG_LONG, lens, 1, MPI_LONG_LONG, 0, L->comm, &req);
    int gerr = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Igather");
    /* rank 0 decides whether the texts come (it has room for them and nobody failed): one broadcast */
    char *all = NULL;
    int go = 0;
    if (L->rank == 0 && !gerr) {
        long long total = 0;
        int bad = -1;
        for (int r = 0; r < P; r++) {
            if (lens[r] < 0 && bad < 0) bad = r;
            counts[r] = lens[r] > 0 ? (int)lens[r] : 0;
            displs[r] = (int)total;
            total += counts[r];
            if (total > INT_MAX && bad < 0) bad = r;
        }
        if (bad >= 0)
            gerr = pc_error(lens[bad] == -1 ? PLANCOLL_ERR_NOMEM : PLANCOLL_ERR_WISDOM_FORMAT,
                            "rank %d could not format its wisdom (%s)", bad,
                            lens[bad] == -1 ? "out of memory" : "too large");
        else if (!(all = malloc((size_t)total + 1)))
            gerr = pc_error(PLANCOLL_ERR_NOMEM, "gathering %lld bytes of wisdom", total);
        go = !gerr;
    }
    int berr = pc_bcast_wait(L, &go, 1, MPI_INT, 0);
    if (!gerr) gerr = berr;
    if (go) {
        rc = pc_mpi_igatherv(local, sent > 0 ? (int)sent : 0, MPI_CHAR, all, counts, displs, MPI_CHAR, 0, L->comm, &req);
        int werr = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Igatherv");
        if (!gerr) gerr = werr;
    }
    free(local);

    if (L->rank == 0) {
        char why[MSG_LEN] = "";
        struct pc_wisdom_set merged = mine;
        pc_wisdom_set_init(&mine);
        for (int r = 1; r < P && !gerr; r++) {
            struct pc_wisdom_set theirs;
            int perr = pc_wisdom_parse(all + displs[r], (size_t)counts[r], &theirs, why, sizeof why);
            if (!perr) perr = pc_wisdom_set_merge(&merged, &theirs);
            pc_wisdom_set_free(&theirs);
            if (perr) gerr = pc_error(perr, "rank %d's wisdom: %s", r, why[0] ? why : "out of memory");
        }
        size_t len = 0;
        if (!gerr) gerr = pc_wisdom_format(&merged, text, &len);
        if (gerr == PLANCOLL_ERR_NOMEM && !plancoll_error_detail()[0]) pc_error(gerr, "formatting the wisdom");
        h->rc = gerr;
        h->len = (long long)len;
        if (gerr) snprintf(h->msg, sizeof h->msg, "rank 0: %s", plancoll_error_detail());
        pc_wisdom_set_free(&merged);
    }
    pc_wisdom_set_free(&mine);
    free(lens);
    free(counts);
    free(displs);
    free(all);
    /* MPI failures are returned; everything else travels in rank 0's header */
    return gerr == PLANCOLL_ERR_MPI ? gerr : PLANCOLL_SUCCESS;
}

/* ---- public functions ---- */

static int begin(MPI_Comm comm, struct pc_layout **L)
{
    *L = NULL;
    int err = pc_api_entry(comm);
    if (err) return err;
    return pc_layout_get(comm, L);
}

int plancoll_export_wisdom_to_string(char **out, MPI_Comm comm)
{
    if (out) *out = NULL;
    struct pc_layout *L;
    int err = begin(comm, &L);
    if (err) return err;
    err = out ? PLANCOLL_SUCCESS : pc_error(PLANCOLL_ERR_ARGUMENT, "the pointer to receive the wisdom text is NULL");
    err = agree(L, err, "plancoll_export_wisdom_to_string");
    struct header h;
    char *text = NULL;
    if (!err) err = export_collective(L, &h, &text);
    if (!err) {
        char *mine = L->rank == 0 ? text : NULL;
        int local = bcast_text(L, &h, &mine);
        if (local == PLANCOLL_ERR_MPI) err = local;
        else if (h.rc) err = pc_error((int)h.rc, "%s", h.msg);
        else err = agree(L, local, "receiving the wisdom text");
        if (!err) *out = mine;
        else if (L->rank != 0) free(mine);
        if (err && L->rank == 0) free(text);
    }
    pc_layout_release(L);
    return err;
}

int plancoll_export_wisdom_to_filename(const char *path, MPI_Comm comm)
{
    struct pc_layout *L;
    int err = begin(comm, &L);
    if (err) return err;
    struct header h;
    char *text = NULL;
    err = export_collective(L, &h, &text);
    if (!err && L->rank == 0 && h.rc == PLANCOLL_SUCCESS) {
        if (!path || !*path) {
            h.rc = PLANCOLL_ERR_ARGUMENT;
            snprintf(h.msg, sizeof h.msg, "rank 0: the wisdom file name is %s", path ? "empty" : "NULL");
        } else {
            /* the file is replaced, not merged into (as FFTW's export); the lock keeps the rename from landing
             * inside another process's read-merge-write of the same file, which would lose this export */
            char why[MSG_LEN - 16] = "";
            int lock = -1;
            h.rc = pc_wisdom_lock_for_write(path, &lock, why, sizeof why);
            if (!h.rc) h.rc = pc_wisdom_write_file(path, text, (size_t)h.len, why, sizeof why);
            pc_wisdom_unlock(lock);
            if (h.rc) snprintf(h.msg, sizeof h.msg, "rank 0: %s", why);
        }
    }
    free(text);
    /* the outcome travels as a header without text */
    h.len = 0;
    if (!err) err = pc_bcast_wait(L, &h, (int)sizeof h, MPI_BYTE, 0);
    h.msg[MSG_LEN - 1] = '\0';
    if (!err && h.rc) err = pc_error((int)h.rc, "%s", h.msg);
    pc_layout_release(L);
    return err;
}

int plancoll_import_wisdom_from_string(const char *text, MPI_Comm comm)
{
    struct pc_layout *L;
    int err = begin(comm, &L);
    if (err) return err;
    struct header h;
    memset(&h, 0, sizeof h);
    if (L->rank == 0) {
        if (!text) {
            h.rc = PLANCOLL_ERR_ARGUMENT;
            snprintf(h.msg, sizeof h.msg, "rank 0: the wisdom text is NULL");
        } else {
            size_t n = strlen(text);
            if (n > PC_WISDOM_MAX_BYTES) {
                h.rc = PLANCOLL_ERR_WISDOM_FORMAT;
                snprintf(h.msg, sizeof h.msg, "rank 0: the wisdom text is larger than %u bytes", PC_WISDOM_MAX_BYTES);
            }
            h.len = (long long)n;
        }
    }
    err = import_collective(L, &h, (char *)text, "wisdom text", true);
    pc_layout_release(L);
    return err;
}

int plancoll_import_wisdom_from_filename(const char *path, MPI_Comm comm)
{
    struct pc_layout *L;
    int err = begin(comm, &L);
    if (err) return err;
    struct header h;
    memset(&h, 0, sizeof h);
    char *text = NULL;
    char source[MSG_LEN / 2] = "wisdom file";
    if (L->rank == 0) {
        if (!path || !*path) {
            h.rc = PLANCOLL_ERR_ARGUMENT;
            snprintf(h.msg, sizeof h.msg, "rank 0: the wisdom file name is %s", path ? "empty" : "NULL");
        } else {
            size_t len = 0;
            bool absent;
            char why[MSG_LEN - 16] = "";
            h.rc = pc_wisdom_read_file(path, &text, &len, &absent, why, sizeof why);
            h.len = (long long)len;
            if (h.rc) snprintf(h.msg, sizeof h.msg, "rank 0: %s", why);
            snprintf(source, sizeof source, "'%.180s'", path);
        }
    }
    /* the name in messages is rank 0's */
    int perr = pc_bcast_wait(L, source, (int)sizeof source, MPI_CHAR, 0);
    source[sizeof source - 1] = '\0';
    err = perr ? perr : import_collective(L, &h, text, source, true);
    free(text);
    pc_layout_release(L);
    return err;
}

int plancoll_forget_wisdom(void)
{
    pc_wisdom_clear();
    pc_model_forget_all();
    return PLANCOLL_SUCCESS;
}

/* ---- PLANCOLL_WISDOM ---- */

enum env_state { ENV_UNKNOWN, ENV_PENDING, ENV_DONE };
static enum env_state env_state = ENV_UNKNOWN;
static char *env_path;
static uint64_t env_baseline; /* knowledge_hash() after the read: a change means something was learned */
static int finalize_keyval = MPI_KEYVAL_INVALID;
static int world_rank = -1;

bool pc_wisdom_env_pending(void)
{
    if (env_state == ENV_UNKNOWN) {
        const char *v = getenv("PLANCOLL_WISDOM");
        env_path = v && *v ? strdup(v) : NULL;
        env_state = env_path ? ENV_PENDING : ENV_DONE;
    }
    return env_state == ENV_PENDING;
}

static void warn(const char *what, const char *consequence)
{
    fprintf(stderr, "plancoll: PLANCOLL_WISDOM=%s: %s; %s\n", env_path ? env_path : "(unset)", what, consequence);
}

/* MPI_COMM_SELF's attributes are deleted at the start of MPI_Finalize, while MPI still works. Rank 0 of
 * MPI_COMM_WORLD writes what this process knows over what the file holds now (another job may have written it
 * since): merged when the file matches this machine, replacing it when it is stale, and never over a file
 * that is not wisdom. The file's lock is held from the read to the rename: jobs finalizing together take turns,
 * and each merges what the previous ones wrote. No collective calls here. */
static int finalize_writeback(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    if (world_rank != 0 || !env_path || knowledge_hash() == env_baseline) return MPI_SUCCESS;
    struct pc_wisdom_set ours, theirs;
    if (current_set(&ours)) return MPI_SUCCESS;
    pc_wisdom_local_fingerprint(&ours.fp);
    snprintf(ours.fp.layout, sizeof ours.fp.layout, "%s", job_layout[0] ? job_layout : "unknown");
    pc_wisdom_set_init(&theirs);

    char *old = NULL, why[MSG_LEN] = "";
    size_t old_len = 0;
    bool absent = false, write = true;
    int lock = -1;
    if (pc_wisdom_lock_for_write(env_path, &lock, why, sizeof why) != PLANCOLL_SUCCESS) {
        /* writing unlocked could lose another job's records: this job's are the ones not written */
        warn(why, "wisdom not written");
        pc_wisdom_set_free(&ours);
        return MPI_SUCCESS;
    }
    int rc = pc_wisdom_read_file(env_path, &old, &old_len, &absent, why, sizeof why);
    if (rc == PLANCOLL_SUCCESS) {
        rc = pc_wisdom_parse(old, old_len, &theirs, why, sizeof why);
        if (rc == PLANCOLL_SUCCESS && pc_wisdom_fingerprint_compare(&theirs.fp, &ours.fp, why, sizeof why) == 0) {
            theirs.fp = ours.fp;
            if (pc_wisdom_set_merge_file(&theirs, &ours) == PLANCOLL_SUCCESS) {
                pc_wisdom_set_free(&ours);
                ours = theirs;
                pc_wisdom_set_init(&theirs);
            } else {
                /* writing ours alone would drop the file's records */
                warn("out of memory merging with the file", "wisdom not written");
                write = false;
            }
        } else if (rc != PLANCOLL_SUCCESS && rc != PLANCOLL_ERR_WISDOM_STALE) {
            warn(why, "not overwritten: it is not plancoll wisdom");
            write = false;
        }
    } else if (!absent) {
        warn(why, "wisdom not written");
        write = false;
    }
    free(old);
    pc_wisdom_set_free(&theirs);
    char *text = NULL;
    size_t len = 0;
    if (write && pc_wisdom_format(&ours, &text, &len) == PLANCOLL_SUCCESS &&
        pc_wisdom_write_file(env_path, text, len, why, sizeof why) != PLANCOLL_SUCCESS)
        warn(why, "wisdom not written");
    pc_wisdom_unlock(lock);
    free(text);
    pc_wisdom_set_free(&ours);
    return MPI_SUCCESS;
}

static void arrange_writeback(void)
{
    if (finalize_keyval != MPI_KEYVAL_INVALID) return;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_writeback, &finalize_keyval, NULL) != MPI_SUCCESS) {
        finalize_keyval = MPI_KEYVAL_INVALID;
        return;
    }
    if (MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL) != MPI_SUCCESS) {
        MPI_Comm_free_keyval(&finalize_keyval);
        finalize_keyval = MPI_KEYVAL_INVALID;
    }
}

void pc_wisdom_env_load(struct pc_layout *L)
{
    bool commit = pc_wisdom_env_pending();
    struct header h;
    memset(&h, 0, sizeof h);
    char *text = NULL;
    if (L->rank == 0) {
        /* rank 0's PLANCOLL_WISDOM is the one read; without one there is nothing to read for anyone */
        h.absent = 1;
        if (env_path) {
            size_t len = 0;
            bool absent = false;
            char why[MSG_LEN - 16] = "";
            h.rc = pc_wisdom_read_file(env_path, &text, &len, &absent, why, sizeof why);
            h.len = (long long)len;
            h.absent = absent;
            if (absent) h.rc = PLANCOLL_SUCCESS;
            else if (h.rc) snprintf(h.msg, sizeof h.msg, "%s", why);
        }
    }
    int err = import_collective(L, &h, text, "", commit); /* warn() names the file */
    free(text);
    if (err && L->rank == 0)
        warn(plancoll_error_detail(), err == PLANCOLL_ERR_WISDOM_STALE
                                          ? "planning without it; it will be replaced at MPI_Finalize"
                                          : "planning without it; the file is left alone");
    pc_clear_error(); /* the plan being made does not fail for it */
    char line[64];
    layout_line(L, line, sizeof line);
    if (commit) {
        env_state = ENV_DONE;
        env_baseline = knowledge_hash();
        arrange_writeback();
    }
}
