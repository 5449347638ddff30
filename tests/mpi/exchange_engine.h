/* The engine shared by test_alltoall.c and test_alltoallv.c: datatypes, the data pattern, guarded buffers,
 * planning with agreement checks, execution and exact checks, and the interleaved-plans run. A program defines
 * COLL ("alltoall" or "alltoallv") and its case table, then includes this once. */
#ifndef PC_EXCHANGE_ENGINE_H
#define PC_EXCHANGE_ENGINE_H
#ifndef COLL
#error "define COLL before including exchange_engine.h"
#endif


_Static_assert(sizeof(int) == 4 && sizeof(double) == 8, "the layouts below assume 4-byte int, 8-byte double");

enum { GUARD = 64, MAX_REPORTS = 3, MAX_ALGS = 32 };
#define RECV_SENTINEL 0xCBu /* every receive-buffer byte outside received data */
#define SEND_POISON 0x5Au   /* every send-buffer byte outside sent data */

/* ================================================================================================ */
/* Datatypes: where the data bytes of one element sit                                               */
/* ================================================================================================ */

enum tkind { T_BYTE, T_INT, T_DOUBLE, T_COMPLEX, T_CONTIG3, T_VECTOR, T_SHIFTED, T_NKINDS };

struct tdesc {
    const char *name;
    int size;   /* data bytes per element */
    int extent; /* bytes from one element to the next */
    int nseg;   /* the data bytes of an element: nseg runs of seg_len[i] bytes at seg_off[i]; seg_off[0] is
                 * the lower bound (data starts that far past the buffer address) */
    int seg_off[2], seg_len[2];
};

static const struct tdesc tdescs[T_NKINDS] = {
    [T_BYTE] = {"MPI_BYTE", 1, 1, 1, {0, 0}, {1, 0}},
    [T_INT] = {"MPI_INT", 4, 4, 1, {0, 0}, {4, 0}},
    [T_DOUBLE] = {"MPI_DOUBLE", 8, 8, 1, {0, 0}, {8, 0}},
    [T_COMPLEX] = {"MPI_C_DOUBLE_COMPLEX", 16, 16, 1, {0, 0}, {16, 0}},
    [T_CONTIG3] = {"contiguous(3,MPI_INT)", 12, 12, 1, {0, 0}, {12, 0}},
    /* ints at bytes 0 and 8, holes at 4..7 and 12..15 */
    [T_VECTOR] = {"vector(2,1,2,MPI_INT) resized to 16 B", 8, 16, 2, {0, 8}, {4, 4}},
    /* two ints 12 bytes past the element's address: contiguous, but lb = true_lb = 12 */
    [T_SHIFTED] = {"hindexed(1,{2},{12 B},MPI_INT)", 8, 8, 1, {12, 0}, {8, 0}},
};

static bool tkind_derived(enum tkind k) { return k == T_CONTIG3 || k == T_VECTOR || k == T_SHIFTED; }

static MPI_Datatype type_create(enum tkind k)
{
    MPI_Datatype t = MPI_DATATYPE_NULL, v;
    switch (k) {
    case T_BYTE: return MPI_BYTE;
    case T_INT: return MPI_INT;
    case T_DOUBLE: return MPI_DOUBLE;
    case T_COMPLEX: return MPI_C_DOUBLE_COMPLEX;
    case T_CONTIG3:
        MPI_Type_contiguous(3, MPI_INT, &t);
        MPI_Type_commit(&t);
        return t;
    case T_VECTOR:
        MPI_Type_vector(2, 1, 2, MPI_INT, &v);
        MPI_Type_create_resized(v, 0, 16, &t);
        MPI_Type_free(&v);
        MPI_Type_commit(&t);
        return t;
    case T_SHIFTED: {
        int blocklen = 2;
        MPI_Aint displ = 12;
        MPI_Type_create_hindexed(1, &blocklen, &displ, MPI_INT, &t);
        MPI_Type_commit(&t);
        return t;
    }
    default: return t;
    }
}

static void type_release(enum tkind k, MPI_Datatype *t)
{
    if (tkind_derived(k) && *t != MPI_DATATYPE_NULL) MPI_Type_free(t);
    *t = MPI_DATATYPE_NULL;
}

/* The descriptions above must be what MPI builds. */
static void check_tdescs(void)
{
    for (int k = 0; k < T_NKINDS; k++) {
        MPI_Datatype t = type_create((enum tkind)k);
        int size = -1;
        MPI_Aint lb = -1, extent = -1;
        MPI_Type_size(t, &size);
        MPI_Type_get_extent(t, &lb, &extent);
        TL_CHECK(size == tdescs[k].size && lb == tdescs[k].seg_off[0] && extent == tdescs[k].extent,
                 "datatype %s: MPI says size %d lb %ld extent %ld, the test assumes %d, %d, %d", tdescs[k].name, size,
                 (long)lb, (long)extent, tdescs[k].size, tdescs[k].seg_off[0], tdescs[k].extent);
        type_release((enum tkind)k, &t);
    }
}

/* A send type and a receive type of the same signature, and the word (1, 4 or 8 bytes) the data is made of. */
struct dpair {
    const char *name;
    enum tkind send, recv;
    int word;
};

enum { D_BYTE, D_INT, D_DOUBLE, D_COMPLEX, D_CONTIG3, D_VECTOR, D_SHIFTED, D_BYTES_TO_INTS, D_VECTOR_TO_INTS, D_NPAIRS };
static const struct dpair dpairs[D_NPAIRS] = {
    [D_BYTE] = {"MPI_BYTE", T_BYTE, T_BYTE, 1},
    [D_INT] = {"MPI_INT", T_INT, T_INT, 4},
    [D_DOUBLE] = {"MPI_DOUBLE", T_DOUBLE, T_DOUBLE, 8},
    [D_COMPLEX] = {"MPI_C_DOUBLE_COMPLEX", T_COMPLEX, T_COMPLEX, 8},
    [D_CONTIG3] = {"contiguous(3,MPI_INT)", T_CONTIG3, T_CONTIG3, 4},
    [D_VECTOR] = {"vector(2,1,2,MPI_INT)-resized", T_VECTOR, T_VECTOR, 4},
    [D_SHIFTED] = {"hindexed(lb=12)", T_SHIFTED, T_SHIFTED, 4},
    [D_BYTES_TO_INTS] = {"MPI_BYTE->MPI_INT", T_BYTE, T_INT, 4},
    [D_VECTOR_TO_INTS] = {"vector(2,1,2,MPI_INT)-resized->MPI_INT", T_VECTOR, T_INT, 4},
};

/* Copies the data bytes of count elements of layout t between a typed buffer and a dense stream. */
static void scatter(const struct tdesc *t, unsigned char *buf, const unsigned char *stream, size_t count)
{
    if (t->nseg == 1 && t->seg_len[0] == t->extent) {
        memcpy(buf + t->seg_off[0], stream, count * (size_t)t->size);
        return;
    }
    for (size_t e = 0; e < count; e++)
        for (int i = 0; i < t->nseg; i++) {
            memcpy(buf + e * (size_t)t->extent + (size_t)t->seg_off[i], stream, (size_t)t->seg_len[i]);
            stream += t->seg_len[i];
        }
}

static void gather(const struct tdesc *t, const unsigned char *buf, unsigned char *stream, size_t count)
{
    if (t->nseg == 1 && t->seg_len[0] == t->extent) {
        memcpy(stream, buf + t->seg_off[0], count * (size_t)t->size);
        return;
    }
    for (size_t e = 0; e < count; e++)
        for (int i = 0; i < t->nseg; i++) {
            memcpy(stream, buf + e * (size_t)t->extent + (size_t)t->seg_off[i], (size_t)t->seg_len[i]);
            stream += t->seg_len[i];
        }
}

/* Marks in mask the data bytes of count elements at byte offset `at`. */
static void mark(const struct tdesc *t, unsigned char *mask, size_t at, size_t count)
{
    for (size_t e = 0; e < count; e++)
        for (int i = 0; i < t->nseg; i++)
            memset(mask + at + e * (size_t)t->extent + (size_t)t->seg_off[i], 1, (size_t)t->seg_len[i]);
}

/* ================================================================================================ */
/* The data pattern                                                                                 */
/* ================================================================================================ */

#define GOLDEN UINT64_C(0x9E3779B97F4A7C15)

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* The seed of the block src sends dst at execution iter of the case with this salt. */
static uint64_t block_seed(uint64_t salt, int src, int dst, int iter)
{
    uint64_t h = mix64(salt + GOLDEN);
    h = mix64(h ^ ((uint64_t)(uint32_t)src << 32 | (uint32_t)dst));
    return mix64(h + (uint64_t)(uint32_t)iter * GOLDEN);
}

/* Word k of a block: a byte, an int, or an exactly representable double (never a NaN). */
static void put_word(unsigned char *p, int word, uint64_t seed, size_t k)
{
    uint64_t h = mix64(seed + (uint64_t)(k + 1) * GOLDEN);
    if (word == 1) {
        p[0] = (unsigned char)h;
    } else if (word == 4) {
        int32_t v = (int32_t)(uint32_t)h;
        memcpy(p, &v, 4);
    } else {
        double v = (double)(h >> 11) * 0x1p-8;
        if (h & 1) v = -v;
        memcpy(p, &v, 8);
    }
}

static void gen_stream(unsigned char *out, size_t nbytes, int word, uint64_t seed)
{
    for (size_t k = 0; k * (size_t)word < nbytes; k++) put_word(out + k * (size_t)word, word, seed, k);
}

static void format_word(char *buf, size_t len, const unsigned char *p, int word)
{
    if (word == 1) {
        snprintf(buf, len, "0x%02x", p[0]);
    } else if (word == 4) {
        int32_t v;
        memcpy(&v, p, 4);
        snprintf(buf, len, "%d (0x%08x)", v, (unsigned)v);
    } else {
        double v;
        uint64_t bits;
        memcpy(&v, p, 8);
        memcpy(&bits, p, 8);
        snprintf(buf, len, "%.17g (0x%016llx)", v, (unsigned long long)bits);
    }
}

/* ================================================================================================ */
/* Buffers with guards                                                                              */
/* ================================================================================================ */

struct xbuf {
    unsigned char *raw;  /* GUARD + span + GUARD bytes */
    unsigned char *base; /* raw + GUARD: what the collective sees */
    unsigned char *mask; /* [span]: 1 where data lives (received or sent) */
    unsigned char *snap; /* a copy of raw, for "unchanged" checks */
    size_t span;
    unsigned char fill;  /* the byte outside data */
};

static size_t xbuf_len(const struct xbuf *b) { return b->span + 2 * GUARD; }

static void xbuf_alloc(struct xbuf *b, size_t span, unsigned char fill)
{
    b->span = span;
    b->fill = fill;
    b->raw = malloc(xbuf_len(b));
    b->snap = malloc(xbuf_len(b));
    b->mask = calloc(span ? span : 1, 1);
    if (!b->raw || !b->snap || !b->mask) {
        fprintf(stderr, "[rank %d] out of memory (%zu bytes)\n", tl_rank, span);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    memset(b->raw, fill, xbuf_len(b));
    b->base = b->raw + GUARD;
}

static void xbuf_free(struct xbuf *b)
{
    free(b->raw);
    free(b->snap);
    free(b->mask);
    memset(b, 0, sizeof *b);
}

static void xbuf_snapshot(struct xbuf *b)
{
    if (b->raw) memcpy(b->snap, b->raw, xbuf_len(b));
}

/* Offset from base of the first byte that differs from the snapshot, or INT64_MIN; *n counts them. */
static int64_t xbuf_first_change(const struct xbuf *b, size_t *n)
{
    *n = 0;
    if (!b->raw || memcmp(b->raw, b->snap, xbuf_len(b)) == 0) return INT64_MIN;
    int64_t first = INT64_MIN;
    for (size_t i = 0; i < xbuf_len(b); i++)
        if (b->raw[i] != b->snap[i]) {
            if (first == INT64_MIN) first = (int64_t)i - GUARD;
            (*n)++;
        }
    return first;
}

/* Offset from base of the first non-data byte that lost its fill, or INT64_MIN; *n counts them. */
static int64_t xbuf_first_bad_fill(const struct xbuf *b, size_t *n)
{
    *n = 0;
    int64_t first = INT64_MIN;
    for (size_t i = 0; i < xbuf_len(b); i++) {
        bool data = i >= GUARD && i < GUARD + b->span && b->mask[i - GUARD];
        if (!data && b->raw[i] != b->fill) {
            if (first == INT64_MIN) first = (int64_t)i - GUARD;
            (*n)++;
        }
    }
    return first;
}

static const char *region_name(const struct xbuf *b, int64_t off)
{
    if (off < 0) return "guard before the buffer";
    if ((size_t)off >= b->span) return "guard after the buffer";
    return "gap or datatype hole inside the buffer";
}

/* ================================================================================================ */
/* A planned case: geometry, buffers, plan, and its checks                                          */
/* ================================================================================================ */

/* One rank's view of the exchange, in the plan's communicator. Counts and displacements in elements. */
struct geom {
    int P, me;
    const struct dpair *dt;
    const struct tdesc *st, *rt;
    bool in_place;
    int *scount, *sdispl; /* [P], send type; unused in place */
    int *rcount, *rdispl; /* [P], receive type */
    size_t sspan, rspan;  /* bytes the buffers must span */
};

static void geom_alloc(struct geom *g, MPI_Comm comm, int dpair, bool in_place)
{
    memset(g, 0, sizeof *g);
    MPI_Comm_size(comm, &g->P);
    MPI_Comm_rank(comm, &g->me);
    g->dt = &dpairs[dpair];
    g->st = &tdescs[g->dt->send];
    g->rt = &tdescs[g->dt->recv];
    g->in_place = in_place;
    g->scount = calloc((size_t)g->P, sizeof(int));
    g->sdispl = calloc((size_t)g->P, sizeof(int));
    g->rcount = calloc((size_t)g->P, sizeof(int));
    g->rdispl = calloc((size_t)g->P, sizeof(int));
}

/* Bytes past the last element's extent that its data reaches (a positive lower bound shifts data up). */
static size_t tail_bytes(const struct tdesc *t)
{
    int end = t->seg_off[t->nseg - 1] + t->seg_len[t->nseg - 1];
    return end > t->extent ? (size_t)(end - t->extent) : 0;
}

static void geom_spans(struct geom *g, int trailing_elems)
{
    g->sspan = g->rspan = 0;
    for (int j = 0; j < g->P; j++) {
        size_t s = ((size_t)g->sdispl[j] + (size_t)g->scount[j]) * (size_t)g->st->extent;
        size_t r = ((size_t)g->rdispl[j] + (size_t)g->rcount[j]) * (size_t)g->rt->extent;
        if (g->scount[j] && s > g->sspan) g->sspan = s;
        if (g->rcount[j] && r > g->rspan) g->rspan = r;
    }
    g->sspan += (size_t)trailing_elems * (size_t)g->st->extent + tail_bytes(g->st);
    g->rspan += (size_t)trailing_elems * (size_t)g->rt->extent + tail_bytes(g->rt);
}

static void geom_free(struct geom *g)
{
    free(g->scount);
    free(g->sdispl);
    free(g->rcount);
    free(g->rdispl);
}

struct inst {
    const char *alg;   /* the run: forced algorithm or "auto-..." */
    char name[96];     /* the case */
    const char *comm_name;
    MPI_Comm comm;
    uint64_t salt;
    struct geom g;
    struct xbuf send[2], recv[2]; /* pair 0: planned buffers; pair 1: plancoll_execute_buffers */
    unsigned char *exp, *got;     /* one block's data stream */
    plancoll_plan plan;
    int reported;
    long failures;
};

static void inst_fail(struct inst *in, int iter, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void inst_fail(struct inst *in, int iter, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    in->failures++;
    if (in->reported < MAX_REPORTS) {
        in->reported++;
        TL_CHECK(false, COLL " algorithm=%s case='%s' comm=%s(P=%d) iteration=%d: %s", in->alg, in->name,
                 in->comm_name, in->g.P, iter, msg);
    } else {
        tl_checks++;
        tl_failures++;
    }
}

static void inst_pass(void) { tl_checks++; }

/* Allocates both buffer pairs sized for g and marks where data lives. */
static void inst_buffers(struct inst *in)
{
    const struct geom *g = &in->g;
    size_t maxblock = 1;
    for (int pair = 0; pair < 2; pair++) {
        xbuf_alloc(&in->recv[pair], g->rspan, RECV_SENTINEL);
        if (!g->in_place) xbuf_alloc(&in->send[pair], g->sspan, SEND_POISON);
        for (int j = 0; j < g->P; j++) {
            mark(g->rt, in->recv[pair].mask, (size_t)g->rdispl[j] * (size_t)g->rt->extent, (size_t)g->rcount[j]);
            if (!g->in_place)
                mark(g->st, in->send[pair].mask, (size_t)g->sdispl[j] * (size_t)g->st->extent, (size_t)g->scount[j]);
        }
    }
    for (int j = 0; j < g->P; j++) {
        size_t r = (size_t)g->rcount[j] * (size_t)g->rt->size, s = (size_t)g->scount[j] * (size_t)g->st->size;
        if (r > maxblock) maxblock = r;
        if (s > maxblock) maxblock = s;
    }
    in->exp = malloc(maxblock);
    in->got = malloc(maxblock);
}

/* Writes the data of execution iter into pair: the send buffer, or the receive buffer in place. */
static void inst_fill(struct inst *in, int pair, int iter)
{
    const struct geom *g = &in->g;
    for (int d = 0; d < g->P; d++) {
        const struct tdesc *t = g->in_place ? g->rt : g->st;
        int count = g->in_place ? g->rcount[d] : g->scount[d];
        int displ = g->in_place ? g->rdispl[d] : g->sdispl[d];
        size_t nbytes = (size_t)count * (size_t)t->size;
        gen_stream(in->exp, nbytes, g->dt->word, block_seed(in->salt, g->me, d, iter));
        unsigned char *base = g->in_place ? in->recv[pair].base : in->send[pair].base;
        scatter(t, base + (size_t)displ * (size_t)t->extent, in->exp, (size_t)count);
    }
    if (!g->in_place) xbuf_snapshot(&in->send[pair]);
}

/* Why a wrong word might be wrong: a hint for the failure message. */
static void diagnose(const struct inst *in, int iter, int src, size_t k, const unsigned char *got, char *hint,
                     size_t len)
{
    const struct geom *g = &in->g;
    const int w = g->dt->word;
    unsigned char cand[8];
    hint[0] = '\0';
    bool sentinel = true;
    for (int i = 0; i < w; i++) sentinel = sentinel && got[i] == RECV_SENTINEL;
    if (sentinel) {
        snprintf(hint, len, " [sentinel bytes: never written]");
        return;
    }
    for (int before = iter - 1; before >= 0; before--) {
        put_word(cand, w, block_seed(in->salt, src, g->me, before), k);
        if (memcmp(cand, got, (size_t)w) == 0) {
            snprintf(hint, len, " [the value of execution %d: stale data]", before);
            return;
        }
    }
    put_word(cand, w, block_seed(in->salt, g->me, src, iter), k);
    if (memcmp(cand, got, (size_t)w) == 0) {
        snprintf(hint, len, " [this rank's own outgoing word for rank %d: not exchanged]", src);
        return;
    }
    for (int s = 0; s < g->P; s++) {
        if (s == src) continue;
        put_word(cand, w, block_seed(in->salt, s, g->me, iter), k);
        if (memcmp(cand, got, (size_t)w) == 0) {
            snprintf(hint, len, " [the word rank %d sent: block from the wrong source]", s);
            return;
        }
    }
}

/* Checks the receive buffer of pair after execution iter: every block exactly, then the sentinels. */
static void inst_check_recv(struct inst *in, int pair, int iter, const char *how)
{
    const struct geom *g = &in->g;
    const int w = g->dt->word;
    const struct xbuf *rb = &in->recv[pair];
    for (int s = 0; s < g->P; s++) {
        size_t count = (size_t)g->rcount[s], nbytes = count * (size_t)g->rt->size;
        gather(g->rt, rb->base + (size_t)g->rdispl[s] * (size_t)g->rt->extent, in->got, count);
        gen_stream(in->exp, nbytes, w, block_seed(in->salt, s, g->me, iter));
        if (memcmp(in->exp, in->got, nbytes) == 0) {
            inst_pass();
            continue;
        }
        size_t bad = 0, first = 0;
        for (size_t k = 0; k * (size_t)w < nbytes; k++)
            if (memcmp(in->exp + k * (size_t)w, in->got + k * (size_t)w, (size_t)w) != 0 && bad++ == 0) first = k;
        char e[64], gotw[64], hint[96];
        format_word(e, sizeof e, in->exp + first * (size_t)w, w);
        format_word(gotw, sizeof gotw, in->got + first * (size_t)w, w);
        diagnose(in, iter, s, first, in->got + first * (size_t)w, hint, sizeof hint);
        size_t elem = first * (size_t)w / (size_t)g->rt->size;
        inst_fail(in, iter,
                  "%s: receive block from source %d (%zu elements of %s): %zu of %zu words wrong; first at element "
                  "%zu (word %zu): expected %s, got %s%s",
                  how, s, count, g->rt->name, bad, nbytes / (size_t)w, elem, first, e, gotw, hint);
    }
    size_t n;
    int64_t off = xbuf_first_bad_fill(rb, &n);
    if (off == INT64_MIN)
        inst_pass();
    else
        inst_fail(in, iter,
                  "%s: receive buffer byte at offset %lld (%s) is 0x%02x, not the sentinel 0x%02x (%zu bytes "
                  "outside the received data were written)",
                  how, (long long)off, region_name(rb, off), rb->base[off], RECV_SENTINEL, n);
}

/* Checks that a buffer equals its snapshot. */
static void inst_check_unchanged(struct inst *in, const struct xbuf *b, int iter, const char *what, const char *how)
{
    if (!b->raw) return;
    size_t n;
    int64_t off = xbuf_first_change(b, &n);
    if (off == INT64_MIN)
        inst_pass();
    else
        inst_fail(in, iter, "%s: %s changed: byte at offset %lld (%s) is 0x%02x, was 0x%02x (%zu bytes differ)", how,
                  what, (long long)off, region_name(b, off), b->base[off], b->snap[off + GUARD], n);
}

/* Agrees on a plancoll return code across comm: true when every rank got the same one. */
static bool same_everywhere(MPI_Comm comm, int rc)
{
    int v[2] = {rc, -rc}, m[2] = {0, 0};
    tl_allreduce(v, m, 2, MPI_INT, MPI_MAX, comm); /* yield-waited: cheap on oversubscribed cores */
    return m[0] == rc && -m[1] == rc;
}

/* Executes the plan on pair (0: plancoll_execute, 1: plancoll_execute_buffers) and checks everything. */
static void inst_run(struct inst *in, int pair, int iter)
{
    const char *how = pair == 0 ? "plancoll_execute" : "plancoll_execute_buffers (second buffer pair)";
    int other = 1 - pair;
    inst_fill(in, pair, iter);
    xbuf_snapshot(&in->recv[other]);
    xbuf_snapshot(&in->send[other]);
    int rc = pair == 0 ? plancoll_execute(in->plan)
                       : plancoll_execute_buffers(in->plan, in->g.in_place ? MPI_IN_PLACE : in->send[1].base,
                                                  in->recv[1].base);
    if (rc != PLANCOLL_SUCCESS) {
        inst_fail(in, iter, "%s returned %d (%s): %s", how, rc, plancoll_strerror(rc), plancoll_error_detail());
        return;
    }
    inst_pass();
    inst_check_recv(in, pair, iter, how);
    inst_check_unchanged(in, &in->send[pair], iter, "the send buffer", how);
    inst_check_unchanged(in, &in->recv[other], iter, pair == 0 ? "the second receive buffer" : "the planned receive buffer", how);
    inst_check_unchanged(in, &in->send[other], iter, pair == 0 ? "the second send buffer" : "the planned send buffer", how);
}

/* Cases skipped because the forced algorithm declared itself inapplicable (reported per run), and why. */
static int skipped;
static char skip_detail[512];

/* The variants the plans of a run ran ("alltoall.bruck (radix=4)"): PLANCOLL_ALGORITHM forces an algorithm, not
 * its parameters, so the run reports which ones the planner picked. */
static struct {
    char name[96];
    int plans;
} variants_seen[32];
static int nvariants_seen;

static void record_variant(plancoll_plan plan)
{
    char *text = NULL, name[96] = "";
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return;
    plancoll_fprint_plan(plan, f);
    fclose(f);
    const char *tag = "  algorithm   ", *line = text ? strstr(text, tag) : NULL;
    if (line) {
        line += strlen(tag);
        snprintf(name, sizeof name, "%.*s", (int)strcspn(line, "\n"), line);
    }
    free(text);
    int i = 0;
    while (i < nvariants_seen && strcmp(variants_seen[i].name, name) != 0) i++;
    if (i == nvariants_seen) {
        if (nvariants_seen == (int)(sizeof variants_seen / sizeof variants_seen[0])) return;
        snprintf(variants_seen[i].name, sizeof variants_seen[i].name, "%s", name);
        variants_seen[i].plans = 0;
        nvariants_seen++;
    }
    variants_seen[i].plans++;
}

static void print_variants(void)
{
    if (tl_rank != 0) return;
    printf("    ran:");
    for (int i = 0; i < nvariants_seen; i++) printf("%s %s x%d", i ? "," : "", variants_seen[i].name, variants_seen[i].plans);
    printf("\n");
}

/* The collective's plan call, with the instance's buffers and the given types (defined per program). */
static int coll_plan(struct inst *in, MPI_Datatype stype, MPI_Datatype rtype, unsigned flags);

/* Fills the planned buffers with execution 0's data and plans. Derived types are freed right after planning.
 * With expect == PLANCOLL_SUCCESS: returns 1 when planned, 0 when skipped (the forced algorithm is
 * inapplicable on every rank), -1 on failure. Otherwise planning must fail with code expect on every rank
 * without touching the buffers; returns 0. */
static int inst_plan(struct inst *in, unsigned flags, const char *forced, int expect)
{
    const struct geom *g = &in->g;
    inst_fill(in, 0, 0);
    xbuf_snapshot(&in->recv[0]);
    MPI_Datatype rtype = type_create(g->dt->recv);
    MPI_Datatype stype = g->in_place ? MPI_DATATYPE_NULL : g->dt->send == g->dt->recv ? rtype : type_create(g->dt->send);
    int rc = coll_plan(in, stype, rtype, flags);
    char detail[300];
    snprintf(detail, sizeof detail, "%s", plancoll_error_detail());
    /* The test's handles go right away: the plan must keep working on its own. */
    if (stype != rtype) type_release(g->dt->send, &stype);
    type_release(g->dt->recv, &rtype);

    bool agreed = same_everywhere(in->comm, rc);
    if (expect != PLANCOLL_SUCCESS) {
        if (rc == expect) inst_pass();
        else
            inst_fail(in, 0, "planning must fail with %d (%s) on every rank, but returned %d (%s) here: %s", expect,
                      plancoll_strerror(expect), rc, plancoll_strerror(rc), detail);
        if (rc == expect) {
            TL_CHECK(in->plan == NULL, "case '%s': a failed plan call left a non-NULL handle", in->name);
            TL_CHECK(detail[0] != '\0', "case '%s': planning failed with code %d but without a detail message",
                     in->name, rc);
        }
        inst_check_unchanged(in, &in->send[0], 0, "the send buffer", "failed planning");
        inst_check_unchanged(in, &in->recv[0], 0, "the receive buffer", "failed planning");
        if (rc == PLANCOLL_SUCCESS && agreed) TL_OK(plancoll_destroy_plan(&in->plan));
        in->plan = NULL; /* otherwise leaked: destroying it on some ranks only could hang */
        return 0;
    }
    if (rc == PLANCOLL_ERR_INAPPLICABLE && forced && agreed) {
        if (skipped++ == 0) snprintf(skip_detail, sizeof skip_detail, "case '%s' on %s: %s", in->name, in->comm_name, detail);
        return 0;
    }
    if (!agreed) inst_fail(in, 0, "planning returned different codes on different ranks (here %d)", rc);
    if (rc != PLANCOLL_SUCCESS) {
        inst_fail(in, 0, "planning returned %d (%s): %s", rc, plancoll_strerror(rc), detail);
        in->plan = NULL;
        return -1;
    }
    if (!agreed) {
        in->plan = NULL; /* executing would hang; leak the plan */
        return -1;
    }
    inst_pass();
    const char *chosen = plancoll_plan_algorithm(in->plan);
    size_t prefix = strlen(COLL);
    size_t forced_len = forced ? strcspn(forced, ":") : 0; /* "name:leaders=2" forces name with parameters */
    if (forced)
        TL_CHECK(chosen && strncmp(chosen, forced, forced_len) == 0 && chosen[forced_len] == '\0',
                 "case '%s': forced %s but the plan runs %s", in->name, forced, chosen ? chosen : "(null)");
    else
        TL_CHECK(chosen && strncmp(chosen, COLL, prefix) == 0 && chosen[prefix] == '.',
                 "case '%s': the planner chose '%s', not an %s algorithm", in->name, chosen ? chosen : "(null)", COLL);
    /* A forced store mode (":stores=normal|stream") is the plan's: its spec says so (the planner takes a forced
     * parameter the algorithm does not know as no parameter at all). */
    const char *stores = forced ? strstr(forced, ":stores=") : NULL;
    if (stores) {
        char spec[256] = "", want[32];
        snprintf(want, sizeof want, "%.*s", (int)strcspn(stores + 1, ":,"), stores + 1);
        TL_OK(plancoll_plan_spec(in->plan, spec, sizeof spec));
        TL_CHECK(strstr(spec, want) != NULL, "case '%s': forced %s but the plan's spec is %s", in->name, forced, spec);
    }
    inst_check_unchanged(in, &in->send[0], 0, "the send buffer", "planning");
    inst_check_unchanged(in, &in->recv[0], 0, "the receive buffer", "planning");
    record_variant(in->plan);
    return 1;
}

static void inst_destroy(struct inst *in)
{
    if (in->plan) {
        TL_OK(plancoll_destroy_plan(&in->plan));
        TL_CHECK(in->plan == NULL, "case '%s': plancoll_destroy_plan did not set the handle to NULL", in->name);
    }
    static int summaries; /* a few, like the messages themselves */
    if (in->failures > MAX_REPORTS && summaries++ < 10)
        fprintf(stderr, "[rank %d] " COLL " algorithm=%s case='%s' comm=%s: %ld failures in all (%d shown)\n", tl_rank,
                in->alg, in->name, in->comm_name, in->failures, MAX_REPORTS);
    for (int pair = 0; pair < 2; pair++) {
        xbuf_free(&in->send[pair]);
        xbuf_free(&in->recv[pair]);
    }
    free(in->exp);
    free(in->got);
    geom_free(&in->g);
}

#endif
