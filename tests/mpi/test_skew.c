/* test_skew: alltoall plans under process arrival skew ([Qian08] ch. 6), every byte checked.
 *
 * Before each execution a random half of the ranks sleeps or busy-waits a random 0-2 ms, so ranks arrive
 * in a different order every time; 20 executions in a row per case with new data each time, alternating
 * the planned buffers (plancoll_execute) and a second pair (plancoll_execute_buffers). Cases: 1, 7 and 4099
 * bytes per block, ints, a non-contiguous vector type with holes, a 1 MiB receive buffer, MPI_IN_PLACE; and
 * two plans of different algorithms alive at once, executed alternately under skew. Run for
 * alltoall.pap (its default point-to-point transport and, forced, the MPI_Put transport), for
 * alltoall.pairwise as a control, and for every other alltoall algorithm on a few cases. The arrival pattern comes from one seed shared by all ranks, so a failure
 * can be replayed; receive-buffer bytes outside the data (guards, holes) must keep their fill.
 *
 * Data: word i of the block rank s sends rank d at execution it of case c is mix(c, s, d, i, it). */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

enum { GUARD = 64, ITERS = 20 };
#define FILL 0xA5u

static uint64_t mix(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint32_t word(int c, int s, int d, size_t i, int it)
{
    uint64_t h = mix((uint64_t)c * 0x9E3779B97F4A7C15u + 1);
    h = mix(h ^ ((uint64_t)(uint32_t)s << 32 | (uint32_t)d));
    h = mix(h ^ ((uint64_t)i << 20 | (uint64_t)it));
    return (uint32_t)h;
}

/* Element kinds: bytes, ints, and vector(2,1,2,MPI_INT) resized to 16 bytes (ints at 0 and 8). */
enum kind { K_BYTE, K_INT, K_VEC };
struct tcase {
    enum kind kind;
    int count; /* elements per block; -1: 1 MiB receive buffer of ints */
    int in_place;
};
static const struct tcase cases[] = {
    {K_BYTE, 1, 0}, {K_BYTE, 7, 0}, {K_BYTE, 7, 1}, {K_BYTE, 4099, 0}, {K_INT, 33, 0},
    {K_INT, 33, 1}, {K_VEC, 5, 0},  {K_VEC, 9, 1},  {K_INT, -1, 0},
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static size_t extent_of(enum kind k) { return k == K_BYTE ? 1 : k == K_INT ? 4 : 16; }
static int words_per_elem(enum kind k) { return k == K_VEC ? 2 : 1; }
/* Byte offset of word w of element e (blocks are count elements). */
static size_t word_off(enum kind k, size_t e, int w) { return e * extent_of(k) + (k == K_VEC ? (size_t)w * 8 : 0); }

struct bufs {
    unsigned char *sraw, *rraw; /* GUARD + span + GUARD */
    size_t span;
};

struct inst {
    const struct tcase *tc;
    int ci, count, P, me;
    MPI_Datatype type;
    struct bufs b[2];
    plancoll_plan plan;
};

static void put_word(unsigned char *p, enum kind k, uint32_t v)
{
    if (k == K_BYTE)
        *p = (unsigned char)v;
    else
        memcpy(p, &v, 4);
}

static uint32_t get_word(const unsigned char *p, enum kind k)
{
    if (k == K_BYTE) return *p;
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static uint32_t want_word(enum kind k, uint32_t v) { return k == K_BYTE ? (v & 0xffu) : v; }

/* Fills the outgoing data of execution it (in place: into the receive buffer). */
static void fill(struct inst *in, int set, int it)
{
    struct bufs *b = &in->b[set];
    enum kind k = in->tc->kind;
    unsigned char *out = in->tc->in_place ? b->rraw + GUARD : b->sraw + GUARD;
    memset(b->rraw, FILL, b->span + 2 * GUARD);
    for (int d = 0; d < in->P; d++)
        for (int e = 0; e < in->count; e++)
            for (int w = 0; w < words_per_elem(k); w++) {
                size_t el = (size_t)d * (size_t)in->count + (size_t)e;
                put_word(out + word_off(k, el, w), k, word(in->ci, in->me, d, (size_t)e * 2 + (size_t)w, it));
            }
}

/* Checks the received data of execution it, and that every other byte of the receive buffer kept FILL. */
static void check(struct inst *in, int set, int it, const char *label)
{
    struct bufs *b = &in->b[set];
    enum kind k = in->tc->kind;
    unsigned char *mask = calloc(b->span + 2 * GUARD, 1);
    long bad = 0;
    char first[256] = "";
    for (int s = 0; s < in->P; s++)
        for (int e = 0; e < in->count; e++)
            for (int w = 0; w < words_per_elem(k); w++) {
                size_t el = (size_t)s * (size_t)in->count + (size_t)e, off = GUARD + word_off(k, el, w);
                uint32_t got = get_word(b->rraw + off, k);
                uint32_t want = want_word(k, word(in->ci, s, in->me, (size_t)e * 2 + (size_t)w, it));
                memset(mask + off, 1, k == K_BYTE ? 1 : 4);
                if (got != want && bad++ == 0)
                    snprintf(first, sizeof first, "block from %d, element %d word %d: got 0x%x, want 0x%x", s, e, w, got,
                             want);
            }
    for (size_t i = 0; i < b->span + 2 * GUARD; i++)
        if (!mask[i] && b->rraw[i] != FILL && bad++ == 0)
            snprintf(first, sizeof first, "byte %ld outside the data changed to 0x%02x", (long)i - GUARD, b->rraw[i]);
    free(mask);
    TL_CHECK(bad == 0, "%s: case %d (kind %d count %d%s) execution %d on buffer set %d: %ld bad (first: %s)", label,
             in->ci, (int)k, in->count, in->tc->in_place ? " in place" : "", it, set, bad, first);
}

static MPI_Datatype make_type(enum kind k)
{
    if (k == K_BYTE) return MPI_BYTE;
    if (k == K_INT) return MPI_INT;
    MPI_Datatype v, t;
    MPI_Type_vector(2, 1, 2, MPI_INT, &v);
    MPI_Type_create_resized(v, 0, 16, &t);
    MPI_Type_free(&v);
    MPI_Type_commit(&t);
    return t;
}

static int inst_init(struct inst *in, int ci, const char *forced)
{
    memset(in, 0, sizeof *in);
    in->tc = &cases[ci];
    in->ci = ci;
    MPI_Comm_size(MPI_COMM_WORLD, &in->P);
    MPI_Comm_rank(MPI_COMM_WORLD, &in->me);
    in->count = in->tc->count > 0 ? in->tc->count : (int)((1u << 20) / (4u * (unsigned)in->P));
    in->type = make_type(in->tc->kind);
    for (int s = 0; s < 2; s++) {
        struct bufs *b = &in->b[s];
        b->span = (size_t)in->P * (size_t)in->count * extent_of(in->tc->kind);
        b->sraw = malloc(b->span + 2 * GUARD);
        b->rraw = malloc(b->span + 2 * GUARD);
        memset(b->sraw, FILL, b->span + 2 * GUARD);
        memset(b->rraw, FILL, b->span + 2 * GUARD);
    }
    tl_force(forced);
    const void *sb = in->tc->in_place ? MPI_IN_PLACE : (const void *)(in->b[0].sraw + GUARD);
    int rc = plancoll_plan_alltoall(sb, in->count, in->type, in->b[0].rraw + GUARD, in->count, in->type, MPI_COMM_WORLD,
                                    PLANCOLL_ESTIMATE, &in->plan);
    tl_force(NULL);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "plan (%s, case %d): %s: %s", forced, ci, plancoll_strerror(rc), plancoll_error_detail());
    return rc == PLANCOLL_SUCCESS;
}

static void inst_free(struct inst *in)
{
    if (in->plan) TL_OK(plancoll_destroy_plan(&in->plan));
    for (int s = 0; s < 2; s++) {
        free(in->b[s].sraw);
        free(in->b[s].rraw);
    }
    if (in->tc->kind == K_VEC) MPI_Type_free(&in->type);
}

static void inst_exec(struct inst *in, int set)
{
    int rc;
    if (set == 0)
        rc = plancoll_execute(in->plan);
    else
        rc = plancoll_execute_buffers(in->plan, in->tc->in_place ? MPI_IN_PLACE : (const void *)(in->b[1].sraw + GUARD),
                                      in->b[1].rraw + GUARD);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "execute (case %d set %d): %s: %s", in->ci, set, plancoll_strerror(rc),
             plancoll_error_detail());
}

/* The arrival skew of execution it: a random half of the ranks waits 0-2 ms, sleeping or busy. */
static void skew(uint64_t seed, int it)
{
    uint64_t st = seed * 1000003u + (uint64_t)it * 7919u + (uint64_t)tl_rank * 104729u;
    uint64_t x = tl_rand(&st);
    if (x & 1) return;
    double us = (double)((x >> 8) % 2000);
    if (x & 2) {
        struct timespec ts = {0, (long)(us * 1000)};
        nanosleep(&ts, NULL);
    } else {
        double t0 = MPI_Wtime();
        while ((MPI_Wtime() - t0) * 1e6 < us) {
        }
    }
}

static void run_case(const char *forced, int ci, uint64_t seed)
{
    struct inst in;
    if (inst_init(&in, ci, forced)) {
        for (int it = 0; it < ITERS; it++) {
            int set = it % 2;
            fill(&in, set, it);
            skew(seed + (uint64_t)ci, it);
            inst_exec(&in, set);
            check(&in, set, it, forced);
        }
    }
    inst_free(&in);
}

/* Two plans alive at once (different cases, possibly different algorithms), executed alternately. */
static void run_pair(const char *fa, const char *fb, uint64_t seed)
{
    struct inst a, b;
    int oka = inst_init(&a, 4, fa), okb = inst_init(&b, 6, fb);
    if (oka && okb)
        for (int it = 0; it < ITERS; it++) {
            fill(&a, 0, it);
            fill(&b, 0, it);
            skew(seed, 2 * it);
            inst_exec(&a, 0);
            skew(seed, 2 * it + 1);
            inst_exec(&b, 0);
            check(&a, 0, it, fa);
            check(&b, 0, it, fb);
        }
    inst_free(&b);
    inst_free(&a);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "skew");
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : 12345;
    /* The put transport is slow over UCX tcp (a flush costs about 0.5 ms) and the vector cases would run its
     * point-to-point fallback: it gets the contiguous cases; the pairwise control a few. */
    static const struct {
        const char *alg;
        int ncases, cases[NCASES];
    } runs[] = {
        {"alltoall.pap", NCASES, {0, 1, 2, 3, 4, 5, 6, 7, 8}},
        {"alltoall.pap:transport=put", 5, {0, 2, 3, 5, 8}},
        {"alltoall.pairwise", 3, {1, 5, 7}},
        /* every other algorithm under the same skew: a few cases each (Bruck: contiguous types only) */
        {"alltoall.native", 3, {1, 5, 7}},
        {"alltoall.bruck", 3, {1, 2, 4}},
        {"alltoall.leader", 3, {1, 5, 7}},
        {"alltoall.mpml:leaders=2", 3, {1, 5, 6}},
        {"alltoall.onmpml:leaders=2:depth=1", 3, {1, 5, 6}},
        {"alltoall.mpml:leaders=2:transport=put", 1, {4}},
    };
    for (size_t a = 0; a < sizeof runs / sizeof runs[0]; a++) {
        double t0 = MPI_Wtime();
        for (int c = 0; c < runs[a].ncases; c++) run_case(runs[a].alg, runs[a].cases[c], seed + 100 * a);
        if (tl_rank == 0)
            printf("skew %-28s %d cases x %d skewed executions: %.2f s\n", runs[a].alg, runs[a].ncases, ITERS,
                   MPI_Wtime() - t0);
    }
    double t0 = MPI_Wtime();
    run_pair("alltoall.pap", "alltoall.pap:transport=put", seed + 7);
    run_pair("alltoall.pap", "alltoall.pairwise", seed + 8);
    if (tl_rank == 0) printf("skew two plans alive, alternated: %.2f s\n", MPI_Wtime() - t0);
    return tl_finish();
}
