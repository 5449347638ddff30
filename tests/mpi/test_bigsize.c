/* test_bigsize: sizes and offsets past 2^31 and 2^32 bytes, planned with ESTIMATE and MEASURE (issue 13, item 3).
 *
 * Two kinds of cases, chosen to be cheap enough for every test run:
 *
 * Sparse cases (every layout): byte offsets past 2^31 and 2^32 with little data. The buffers are reserved address
 * space (mmap, MAP_NORESERVE) of several GiB of which only the pages holding data are ever touched, and so are
 * MEASURE's trial buffers (calloc maps zero pages). Every registered algorithm is forced in turn (the put transports
 * too), then the planner chooses under ESTIMATE and MEASURE; out of place and in place.
 *   far-alltoall    alltoall of 2 elements per block of FAR, an 8-byte integer with an extent of 2^31 + 72 bytes:
 *                   element k of a buffer lies at k x (2^31 + 72), so block 1 starts past 2^32 (a non-contiguous
 *                   type: the packing paths);
 *   double-alltoallv  alltoallv of MPI_DOUBLE blocks whose displacements put the first block past 2^31 bytes and
 *                   the others past 2^32 (int displacement x extent: a contiguous type, the memcpy and offset paths);
 *   far-alltoallv   alltoallv of FAR with displacements in FAR units (blocks in reverse rank order).
 * Each execution checks every element received and that the 8 bytes after each element (or block) stayed zero.
 *
 * Dense cases (2 ranks on one node, when the node has the memory; otherwise the program says SKIP):
 *   bytes-alltoall  the failure: an in-place alltoall of 2^30 + 3 MPI_BYTE per block (an element count past
 *                   INT_MAX / 2, so count x P passes INT_MAX) planned with MEASURE (time limit 0: one candidate is
 *                   timed, on trial buffers of 2 GiB) and with ESTIMATE; the old code sized the trial buffer in int
 *                   and crashed. Every byte of the 2 GiB result is checked, and planning must not touch the caller's
 *                   buffer;
 *   int-allreduce   an in-place allreduce (MPI_BOR) of 2^29 + 5 ints, the planner's choice under ESTIMATE: a vector
 *                   of 2^31 + 20 bytes, every word checked;
 *   huge-type       a datatype of more than INT_MAX bytes (MPI_Type_size would say MPI_UNDEFINED): an in-place
 *                   alltoall of one such element on MPI_COMM_SELF must plan (ESTIMATE and MEASURE), report its block
 *                   size exactly and leave the buffer as it was.
 * The data are hashes of (source, destination, index), recomputed for the check.
 * Under an MPI without the MPI-4 large-count functions (Open MPI 4.1) the dense cases' problems (more than INT_MAX
 * bytes per rank) must instead be refused at plan time on every rank (large_count_refusals). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "testlib.h"

#define FAR_EXTENT ((MPI_Aint)((INT64_C(1) << 31) + 72))
#define GIB (INT64_C(1) << 30)

static MPI_Datatype far_type; /* one int64 every FAR_EXTENT bytes */
static double t_start;

static void phase_done(const char *what)
{
    tl_barrier(MPI_COMM_WORLD);
    if (tl_rank == 0) printf("bigsize %s: %.2f s\n", what, MPI_Wtime() - t_start);
    fflush(stdout);
    t_start = MPI_Wtime();
}

/* Address space of `bytes`, zero pages until written; NULL when the system refuses. */
static char *reserve(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int64_t value(int src, int dst, int64_t k)
{
    uint64_t h = (uint64_t)src * UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)dst * UINT64_C(0xC2B2AE3D27D4EB4F) ^
                 (uint64_t)k * UINT64_C(0x165667B19E3779F9);
    return (int64_t)(h ^ (h >> 29));
}

static int64_t load(const char *at)
{
    int64_t v;
    memcpy(&v, at, sizeof v);
    return v;
}

static void store(char *at, int64_t v) { memcpy(at, &v, sizeof v); }

/* A plan that must succeed, or (a forced algorithm that cannot run the case) fail with PLANCOLL_ERR_INAPPLICABLE
 * on every rank; returns whether there is a plan to run. */
static bool planned(int rc, plancoll_plan p, const char *what, long *inapplicable)
{
    /* BIGSIZE_TRACE=1: every case named with this rank's resident memory as it is planned, to find a case that
     * makes MPI touch the reserved address space */
    if (getenv("BIGSIZE_TRACE")) {
        long pages = 0, resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (f && fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
        if (f) fclose(f);
        printf("[rank %d] %s: resident %.1f MiB\n", tl_rank, what, resident * (double)sysconf(_SC_PAGESIZE) / 1048576.0);
        fflush(stdout);
    }
    int any_inapplicable = 0, mine = rc == PLANCOLL_ERR_INAPPLICABLE;
    tl_allreduce(&mine, &any_inapplicable, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_inapplicable && rc == PLANCOLL_ERR_INAPPLICABLE) {
        (*inapplicable)++;
        return false;
    }
    TL_CHECK(rc == PLANCOLL_SUCCESS && p, "%s: plan failed: %s (%s)", what, plancoll_strerror(rc), plancoll_error_detail());
    return rc == PLANCOLL_SUCCESS;
}

/* ---- sparse: far-alltoall ------------------------------------------------------------------------------- */

struct far_a2a {
    char *send, *recv;
    size_t span;
};

static void far_a2a_fill(char *buf, int P)
{
    for (int j = 0; j < P; j++)
        for (int k = 0; k < 2; k++) store(buf + (size_t)(2 * j + k) * (size_t)FAR_EXTENT, value(tl_rank, j, k));
}

static void far_a2a_check(const struct far_a2a *b, int P, const char *what)
{
    int bad = 0;
    for (int i = 0; i < P && !bad; i++)
        for (int k = 0; k < 2 && !bad; k++) {
            const char *at = b->recv + (size_t)(2 * i + k) * (size_t)FAR_EXTENT;
            if (load(at) != value(i, tl_rank, k) || load(at + 8) != 0) bad = 1 + 2 * i + k;
        }
    TL_CHECK(!bad, "%s: element %d (byte offset %lld) wrong or the bytes after it written", what, bad - 1,
             (long long)(bad - 1) * (long long)FAR_EXTENT);
}

static void far_alltoall_run(struct far_a2a *b, unsigned flags, bool in_place, const char *label, long *inapplicable)
{
    const int P = tl_size;
    char what[160];
    snprintf(what, sizeof what, "far-alltoall %s %s%s", label, flags ? "MEASURE" : "ESTIMATE", in_place ? " in place" : "");
    far_a2a_fill(in_place ? b->recv : b->send, P);
    if (!in_place)
        for (int i = 0; i < 2 * P; i++) store(b->recv + (size_t)i * (size_t)FAR_EXTENT, -1);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoall(in_place ? MPI_IN_PLACE : b->send, 2, far_type, b->recv, 2, far_type,
                                    MPI_COMM_WORLD, flags, &p);
    if (!planned(rc, p, what, inapplicable)) return;
    TL_OK(plancoll_execute(p));
    far_a2a_check(b, P, what);
    far_a2a_fill(in_place ? b->recv : b->send, P); /* a second execution on refilled buffers */
    TL_OK(plancoll_execute(p));
    far_a2a_check(b, P, what);
    TL_OK(plancoll_destroy_plan(&p));
}

/* ---- sparse: alltoallv of doubles or of FAR ---------------------------------------------------------- */

struct vcase {
    const char *name;
    MPI_Datatype type;
    MPI_Aint extent;
    bool far; /* element units of FAR: displacements are element indices */
};

/* Elements rank i sends rank j: symmetric, so that the in-place form (one set of counts) works too. */
static int vcount(const struct vcase *c, int i, int j)
{
    return c->far ? 1 + (i + j) % 2 : 16 + 3 * (i + j) + (i * j) % 5;
}

/* Displacement (elements) of the block for / from rank j: doubles put block 0 past 2^31 bytes and the others past
 * 2^32, 1 MiB apart (recv side shifted by 512 bytes); FAR blocks sit two elements apart, in reverse rank order on
 * the receive side. */
static int vdispl(const struct vcase *c, int j, bool recv)
{
    const int P = tl_size;
    if (c->far) return 2 * (recv ? P - 1 - j : j);
    int64_t byte = (INT64_C(1) << 31) + 64 + (recv ? 512 : 0);
    if (j > 0) byte += (INT64_C(1) << 31) + 4104 + (int64_t)(j - 1) * (INT64_C(1) << 20);
    return (int)(byte / 8);
}

static size_t vspan(const struct vcase *c)
{
    size_t most = 0;
    for (int j = 0; j < tl_size; j++)
        for (int s = 0; s < 2; s++) {
            size_t end = ((size_t)vdispl(c, j, s) + (size_t)vcount(c, tl_rank, j) + 1) * (size_t)c->extent + 16;
            if (end > most) most = end;
        }
    return most;
}

static char *velem(const struct vcase *c, char *buf, int displ, int k)
{
    return buf + ((size_t)displ + (size_t)k) * (size_t)c->extent;
}

static void vfill(const struct vcase *c, char *buf, bool recv_layout)
{
    for (int j = 0; j < tl_size; j++)
        for (int k = 0; k < vcount(c, tl_rank, j); k++)
            store(velem(c, buf, vdispl(c, j, recv_layout), k), value(tl_rank, j, k));
}

static void vcheck(const struct vcase *c, char *recv, const char *what)
{
    int bad_from = -1, bad_k = 0;
    for (int i = 0; i < tl_size && bad_from < 0; i++) {
        int n = vcount(c, i, tl_rank);
        for (int k = 0; k < n && bad_from < 0; k++)
            if (load(velem(c, recv, vdispl(c, i, true), k)) != value(i, tl_rank, k)) bad_from = i, bad_k = k;
        /* after the block (doubles) or after each element (FAR: the hole of its extent) nothing was written */
        if (bad_from < 0 && load(velem(c, recv, vdispl(c, i, true), n - 1) + 8) != 0) bad_from = i, bad_k = n;
    }
    TL_CHECK(bad_from < 0, "%s: block from rank %d (byte offset %lld), element %d wrong or the bytes after it written",
             what, bad_from, bad_from < 0 ? 0LL : (long long)vdispl(c, bad_from, true) * (long long)c->extent, bad_k);
}

static void alltoallv_run(const struct vcase *c, char *send, char *recv, unsigned flags, bool in_place, const char *label,
                          long *inapplicable)
{
    const int P = tl_size;
    char what[200];
    snprintf(what, sizeof what, "%s %s %s%s", c->name, label, flags ? "MEASURE" : "ESTIMATE", in_place ? " in place" : "");
    int *sc = malloc(sizeof(int) * 4 * (size_t)P), *sd = sc + P, *rc_ = sd + P, *rd = rc_ + P;
    for (int j = 0; j < P; j++) {
        sc[j] = vcount(c, tl_rank, j);
        rc_[j] = vcount(c, j, tl_rank);
        sd[j] = vdispl(c, j, false);
        rd[j] = vdispl(c, j, true);
    }
    vfill(c, in_place ? recv : send, in_place);
    if (!in_place)
        for (int i = 0; i < P; i++)
            for (int k = 0; k < rc_[i]; k++) store(velem(c, recv, rd[i], k), -1);
    plancoll_plan p = NULL;
    int rc = in_place ? plancoll_plan_alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv, rc_, rd, c->type,
                                                MPI_COMM_WORLD, flags, &p)
                      : plancoll_plan_alltoallv(send, sc, sd, c->type, recv, rc_, rd, c->type, MPI_COMM_WORLD, flags, &p);
    if (planned(rc, p, what, inapplicable)) {
        TL_OK(plancoll_execute(p));
        vcheck(c, recv, what);
        vfill(c, in_place ? recv : send, in_place);
        TL_OK(plancoll_execute(p));
        vcheck(c, recv, what);
        TL_OK(plancoll_destroy_plan(&p));
    }
    free(sc);
}

/* Every algorithm of the collective forced, the put transports forced too, then the planner's own choices. */
static int forced_list(const char *collective, const char **names, int max)
{
    static const char *const puts[] = {"alltoall.leader:transport=put", "alltoall.mpml:transport=put",
                                       "alltoall.onmpml:transport=put", "alltoall.pap:transport=put",
                                       "alltoallv.aggregated:transport=put"};
    int n = tl_algorithms(collective, names, max);
    for (size_t i = 0; i < sizeof puts / sizeof puts[0] && n < max; i++)
        if (strncmp(puts[i], collective, strlen(collective)) == 0 && puts[i][strlen(collective)] == '.') names[n++] = puts[i];
    return n;
}

static void sparse_cases(void)
{
    const int P = tl_size;
    const char *names[64];
    long inapplicable = 0;

    /* far-alltoall */
    struct far_a2a b;
    b.span = (size_t)(2 * P) * (size_t)FAR_EXTENT + 16;
    b.send = reserve(b.span);
    b.recv = reserve(b.span);
    TL_CHECK(b.send && b.recv, "cannot reserve 2 x %zu bytes of address space", b.span);
    if (!b.send || !b.recv) return;
    int n = forced_list("alltoall", names, 64);
    for (int a = 0; a < n; a++) {
        tl_force(names[a]);
        far_alltoall_run(&b, PLANCOLL_ESTIMATE, false, names[a], &inapplicable);
        far_alltoall_run(&b, PLANCOLL_ESTIMATE, true, names[a], &inapplicable);
    }
    tl_force(NULL);
    for (int m = 0; m < 2; m++) {
        far_alltoall_run(&b, m ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, false, "chosen", &inapplicable);
        far_alltoall_run(&b, m ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, true, "chosen", &inapplicable);
    }
    munmap(b.send, b.span);
    munmap(b.recv, b.span);
    phase_done("far-alltoall");

    /* alltoallv of doubles and of FAR */
    const struct vcase cases[2] = {{"double-alltoallv", MPI_DOUBLE, 8, false}, {"far-alltoallv", far_type, FAR_EXTENT, true}};
    for (int c = 0; c < 2; c++) {
        size_t span = vspan(&cases[c]);
        char *send = reserve(span), *recv = reserve(span);
        TL_CHECK(send && recv, "cannot reserve 2 x %zu bytes of address space", span);
        if (!send || !recv) return;
        n = forced_list("alltoallv", names, 64);
        for (int a = 0; a < n; a++) {
            tl_force(names[a]);
            alltoallv_run(&cases[c], send, recv, PLANCOLL_ESTIMATE, false, names[a], &inapplicable);
            alltoallv_run(&cases[c], send, recv, PLANCOLL_ESTIMATE, true, names[a], &inapplicable);
        }
        tl_force(NULL);
        for (int m = 0; m < 2; m++) {
            alltoallv_run(&cases[c], send, recv, m ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, false, "chosen", &inapplicable);
            alltoallv_run(&cases[c], send, recv, m ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, true, "chosen", &inapplicable);
        }
        munmap(send, span);
        munmap(recv, span);
        phase_done(cases[c].name);
    }
    if (tl_rank == 0 && inapplicable)
        printf("bigsize: %ld forced plans inapplicable on every rank (alltoall.bruck needs contiguous types)\n", inapplicable);
}

/* ---- dense cases, 2 ranks on one node ------------------------------------------------------------------ */

#if PC_HAVE_MPI_LARGE_COUNT /* the dense cases (under an MPI without large counts: large_count_refusals) */
/* The block rank src sends rank dst: 8-byte words w -> word_of(src, dst, w) in memory order, cut at m bytes (m is
 * odd: the blocks after the first are unaligned, and each ends with a partial word). */
static inline uint64_t block_word(int src, int dst, uint64_t w)
{
    return (w * UINT64_C(0x9E3779B97F4A7C15)) ^ ((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ (w >> 17);
}

static void fill_blocks(unsigned char *buf, size_t m)
{
    for (int j = 0; j < tl_size; j++) {
        unsigned char *blk = buf + (size_t)j * m;
        size_t w = 0;
        for (; 8 * w + 8 <= m; w++) {
            uint64_t v = block_word(tl_rank, j, w);
            memcpy(blk + 8 * w, &v, 8);
        }
        uint64_t v = block_word(tl_rank, j, w);
        memcpy(blk + 8 * w, &v, m - 8 * w);
    }
}

/* The byte offset of the first wrong word of the received blocks (block i from source i), or -1. */
static int64_t check_blocks(const unsigned char *buf, size_t m, size_t stride)
{
    for (int i = 0; i < tl_size; i++) {
        const unsigned char *blk = buf + (size_t)i * m;
        for (size_t w = 0; 8 * w < m; w += stride) {
            uint64_t v = block_word(i, tl_rank, w), got = 0;
            size_t n = m - 8 * w < 8 ? m - 8 * w : 8;
            memcpy(&got, blk + 8 * w, n);
            if (memcmp(&got, &v, n) != 0) return (int64_t)((size_t)i * m + 8 * w);
        }
    }
    return -1;
}

static void bytes_alltoall(unsigned char *buf, size_t m)
{
    for (int measure = 1; measure >= 0; measure--) {
        const char *how = measure ? "MEASURE" : "ESTIMATE";
        fill_blocks(buf, m);
        plancoll_set_timelimit(0); /* MEASURE times one candidate (the model's favourite) */
        plancoll_plan p = NULL;
        int rc = plancoll_plan_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)m, MPI_BYTE, MPI_COMM_WORLD,
                                        measure ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, &p);
        plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT);
        TL_CHECK(rc == PLANCOLL_SUCCESS, "bytes-alltoall %s (%zu bytes per block): plan failed: %s (%s)", how, m,
                 plancoll_strerror(rc), plancoll_error_detail());
        if (rc != PLANCOLL_SUCCESS) continue;
        /* planning must not touch the caller's buffer: a word of every 4 KiB still holds the data to send */
        int64_t seen;
        for (int j = 0; j < tl_size; j++) {
            seen = -1;
            for (size_t w = 0; 8 * w < m && seen < 0; w += 509) {
                uint64_t v = block_word(tl_rank, j, w), got = 0;
                size_t n = m - 8 * w < 8 ? m - 8 * w : 8;
                memcpy(&got, buf + (size_t)j * m + 8 * w, n);
                if (memcmp(&got, &v, n) != 0) seen = (int64_t)(8 * w);
            }
            TL_CHECK(seen < 0, "bytes-alltoall %s: planning wrote into the caller's buffer (block %d, byte %lld)", how, j,
                     (long long)seen);
        }
        if (tl_rank == 0) printf("bigsize bytes-alltoall %s: %s\n", how, plancoll_plan_algorithm(p));
        TL_OK(plancoll_execute(p));
        int64_t bad = check_blocks(buf, m, 1);
        TL_CHECK(bad < 0, "bytes-alltoall %s: byte %lld of the result is wrong", how, (long long)bad);
        TL_OK(plancoll_destroy_plan(&p));
        phase_done(measure ? "bytes-alltoall MEASURE" : "bytes-alltoall ESTIMATE");
    }
}

/* Word i of rank r's vector: its own bits of a hash, so the OR over ranks is known. */
static inline uint32_t word_of(int r, size_t i)
{
    uint32_t h = (uint32_t)(i * 2654435761u) ^ (uint32_t)(i >> 7);
    return r == 0 ? (h & 0x0F0FF00Fu) | 1u : (h & 0xF0F00FF0u) | 2u;
}

static void int_allreduce(uint32_t *v, size_t count)
{
    for (size_t i = 0; i < count; i++) v[i] = word_of(tl_rank, i);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(MPI_IN_PLACE, v, (int)count, MPI_UINT32_T, MPI_BOR, MPI_COMM_WORLD,
                                     PLANCOLL_ESTIMATE, &p);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "int-allreduce of %zu ints: plan failed: %s (%s)", count, plancoll_strerror(rc),
             plancoll_error_detail());
    if (rc != PLANCOLL_SUCCESS) return;
    if (tl_rank == 0) printf("bigsize int-allreduce: %s\n", plancoll_plan_algorithm(p));
    TL_OK(plancoll_execute(p));
    size_t bad = count;
    for (size_t i = 0; i < count && bad == count; i++)
        if (v[i] != (word_of(0, i) | word_of(1, i))) bad = i;
    TL_CHECK(bad == count, "int-allreduce: word %zu is %08x, expected %08x", bad, bad < count ? v[bad] : 0,
             bad < count ? word_of(0, bad) | word_of(1, bad) : 0);
    TL_OK(plancoll_destroy_plan(&p));
    phase_done("int-allreduce");
}

/* One element of more than INT_MAX bytes, in place on MPI_COMM_SELF: nothing moves, but the plan must know the
 * block's size (MPI_Type_size says MPI_UNDEFINED for it). Built the MPI-3 way, from int counts (two halves of
 * 2^30 + 2051 bytes); test_badinput plans a type from MPI_Type_contiguous_c. */
static void huge_type(void)
{
    const MPI_Count bytes = (MPI_Count)(INT64_C(1) << 31) + 4102;
    MPI_Datatype half, huge;
    MPI_Type_contiguous((1 << 30) + 2051, MPI_BYTE, &half);
    MPI_Type_contiguous(2, half, &huge);
    MPI_Type_free(&half);
    MPI_Type_commit(&huge);
    unsigned char *buf = (unsigned char *)reserve((size_t)bytes);
    TL_CHECK(buf != NULL, "cannot reserve %lld bytes", (long long)bytes);
    if (!buf) return;
    for (MPI_Count o = 0; o < bytes; o += 1 << 20) buf[o] = (unsigned char)(o >> 20);
    /* Two candidates that move nothing in place on one rank (Bruck's rotation and the node-aware gather copy the
     * whole block there, seconds per execution), and MEASURE times one of them. */
    tl_force("alltoall.pairwise,alltoall.pap");
    plancoll_set_timelimit(0);
    for (int measure = 0; measure < 2; measure++) {
        plancoll_plan p = NULL;
        int rc = plancoll_plan_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 1, huge, MPI_COMM_SELF,
                                        measure ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, &p);
        TL_CHECK(rc == PLANCOLL_SUCCESS, "huge-type %s: plan failed: %s (%s)", measure ? "MEASURE" : "ESTIMATE",
                 plancoll_strerror(rc), plancoll_error_detail());
        if (rc != PLANCOLL_SUCCESS) continue;
        char text[4096] = "", want[64];
        FILE *f = fmemopen(text, sizeof text - 1, "w");
        if (f) {
            plancoll_fprint_plan(p, f);
            fclose(f);
        }
        snprintf(want, sizeof want, ":block=%lld:", (long long)bytes);
        TL_CHECK(strstr(text, want) != NULL, "huge-type: the plan does not say %s:\n%s", want, text);
        TL_OK(plancoll_execute(p));
        bool same = true;
        for (MPI_Count o = 0; o < bytes && same; o += 1 << 20) same = buf[o] == (unsigned char)(o >> 20);
        TL_CHECK(same, "huge-type: an in-place alltoall on one rank changed the buffer");
        TL_OK(plancoll_destroy_plan(&p));
    }
    plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT);
    tl_force(NULL);
    munmap(buf, (size_t)bytes);
    MPI_Type_free(&huge);
    phase_done("huge-type");
}

#endif

#if !PC_HAVE_MPI_LARGE_COUNT
/* An MPI without the MPI-4 large-count functions (Open MPI 4.1, probed at configure time): the dense cases' problems
 * hold more than INT_MAX bytes per rank, which plancoll must refuse when planning, on every rank, with
 * PLANCOLL_ERR_OVERFLOW and a detail naming the missing functions, no plan made and the buffer untouched (it is
 * reserved address space here, never written: a touched page would read nonzero only if plancoll wrote it). */
static void refused(int rc, plancoll_plan p, const char *what)
{
    TL_CHECK(rc == PLANCOLL_ERR_OVERFLOW, "%s: expected PLANCOLL_ERR_OVERFLOW (no large-count functions), got %s (%s)",
             what, plancoll_strerror(rc), plancoll_error_detail());
    TL_CHECK(strstr(plancoll_error_detail(), "no large-count functions (MPI-4)") != NULL &&
                 strstr(plancoll_error_detail(), "exceeds INT_MAX") != NULL,
             "%s: the detail does not name the missing large counts: %s", what, plancoll_error_detail());
    TL_CHECK(p == NULL, "%s: a plan was returned with the error", what);
}

static void large_count_refusals(void)
{
    const size_t m = (size_t)GIB + 3, words = ((size_t)1 << 29) + 5, huge_bytes = ((size_t)1 << 31) + 4102;
    const size_t bytes = 2 * m > huge_bytes ? 2 * m : huge_bytes;
    unsigned char *buf = (unsigned char *)reserve(bytes);
    TL_CHECK(buf != NULL, "cannot reserve %zu bytes", bytes);
    if (!buf) return;
    for (int measure = 0; measure < 2; measure++) {
        plancoll_plan p = NULL;
        int rc = plancoll_plan_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, (int)m, MPI_BYTE, MPI_COMM_WORLD,
                                        measure ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, &p);
        refused(rc, p, measure ? "bytes-alltoall MEASURE" : "bytes-alltoall ESTIMATE");
    }
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(MPI_IN_PLACE, buf, (int)words, MPI_UINT32_T, MPI_BOR, MPI_COMM_WORLD,
                                     PLANCOLL_ESTIMATE, &p);
    refused(rc, p, "int-allreduce");
    MPI_Datatype half, huge;
    MPI_Type_contiguous((1 << 30) + 2051, MPI_BYTE, &half);
    MPI_Type_contiguous(2, half, &huge);
    MPI_Type_free(&half);
    MPI_Type_commit(&huge);
    p = NULL;
    rc = plancoll_plan_alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, buf, 1, huge, MPI_COMM_SELF, PLANCOLL_ESTIMATE, &p);
    refused(rc, p, "huge-type");
    MPI_Type_free(&huge);
    bool untouched = true;
    for (size_t o = 0; o < bytes && untouched; o += 4096) untouched = buf[o] == 0;
    TL_CHECK(untouched, "the refused plans wrote into the caller's buffer");
    munmap(buf, bytes);
    phase_done("large-count refusals");
}
#endif

#if PC_HAVE_MPI_LARGE_COUNT
/* MemAvailable of /proc/meminfo in bytes (0 when unknown). */
static int64_t mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f) return 0;
    char line[256];
    long long kib = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
    fclose(f);
    return (int64_t)kib * 1024;
}
#endif

/* The dense cases need, per rank, the 2 GiB buffer, 1 GiB of the chosen plan's scratch and 2 GiB more while MEASURE
 * times a candidate (trial buffer and the candidate's scratch), then the allreduce's 2 GiB of scratch (written in
 * full under MALLOC_PERTURB_): at most about 5 GiB per rank at once (4.2 GiB measured); 14 GiB available on the
 * node keeps a margin. */
#define DENSE_NODE_BYTES (14 * GIB)

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "bigsize");
    t_start = MPI_Wtime();
    int overcommit = -1;
    FILE *f = fopen("/proc/sys/vm/overcommit_memory", "r");
    if (f) {
        if (fscanf(f, "%d", &overcommit) != 1) overcommit = -1;
        fclose(f);
    }
    /* Strict overcommit accounting charges reserved address space as if it were used: the sparse cases cannot run. */
    int skip = overcommit == 2, any_skip = 0;
    tl_allreduce(&skip, &any_skip, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (any_skip) {
        if (tl_rank == 0) printf("plancoll-test bigsize P=%d: SKIP (vm.overcommit_memory = 2: no sparse address space)\n", tl_size);
        fflush(stdout);
        MPI_Finalize();
        return 77;
    }
    MPI_Type_create_resized(MPI_INT64_T, 0, FAR_EXTENT, &far_type);
    MPI_Type_commit(&far_type);

    sparse_cases();

    MPI_Comm node;
    int node_size = 0;
    tl_split_node(MPI_COMM_WORLD, tl_rank, &node);
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
#if !PC_HAVE_MPI_LARGE_COUNT
    if (tl_size == 2 && node_size == 2) large_count_refusals(); /* nothing to move: no memory needed */
#else
    if (tl_size == 2 && node_size == 2) {
        int64_t avail = mem_available(), least = 0;
        tl_allreduce(&avail, &least, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
        if (least < DENSE_NODE_BYTES) {
            if (tl_rank == 0)
                printf("plancoll-test bigsize P=2: SKIP (the dense cases need %lld GiB available, the node has %.1f GiB)\n",
                       (long long)(DENSE_NODE_BYTES / GIB), (double)least / (double)GIB);
            fflush(stdout);
            MPI_Type_free(&far_type);
            MPI_Finalize();
            return 77;
        }
        const size_t m = (size_t)GIB + 3; /* 2^30 + 3 bytes per block: 2 m > INT_MAX */
        const size_t words = ((size_t)1 << 29) + 5;
        size_t bytes = 2 * m > words * 4 ? 2 * m : words * 4;
        unsigned char *buf = (unsigned char *)reserve(bytes);
        TL_CHECK(buf != NULL, "cannot allocate %zu bytes", bytes);
        if (buf) {
            madvise(buf, bytes, MADV_HUGEPAGE); /* fewer page faults where transparent huge pages are on request */
            bytes_alltoall(buf, m);
            int_allreduce((uint32_t *)(void *)buf, words);
            munmap(buf, bytes);
        }
        huge_type();
    }
#endif
    MPI_Type_free(&far_type);
    return tl_finish();
}
