/* The Bruck alltoallv schedules run with all of their ranks inside one process, for every P from 1 to 64, on
 * random count matrices, with every byte checked.
 *
 *  - alltoallv.twophase_bruck: the plan-time metadata pass (the uniform exchange below, over 8-byte sizes) run
 *    between all simulated ranks, each rank's copy lists built by pc_tp_build (src/exec/alltoallv/
 *    twophase_schedule.c, the code setup() runs), then
 *    every execution step replayed on byte buffers: the packs into each rank's outgoing message, the delivery
 *    to the step's receiver, the unpacks and the deferred copies. Out of place and in place (symmetric
 *    matrices), with receive-buffer rooms (contiguous types) and without (non-contiguous: whole blocks only,
 *    which the simulation copies through its own block table as the datatype would). Checked: every copy stays
 *    inside its area (send/receive buffer span, a room inside the block it borrows, the temporary buffer the
 *    schedule sized), the outgoing copies tile the message exactly, sender and receiver agree on every
 *    message's size, every received block is exactly the bytes its source sent, no byte of the receive buffer
 *    outside the blocks (gaps between scattered displacements) is written, the send buffer is never written.
 *  - alltoallv.padded_bruck: rotation into slots of M bytes (the largest block of the matrix), the uniform
 *    exchange (pc_bruck_slot_lists; it mirrors pc_bruck_uniform_run), extraction by the receive sizes; every
 *    block fits its slot, every byte lands.
 *
 * Block contents: byte k of the block s sends d is a hash of (s, d, k). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/alltoallv/twophase_schedule.h"
#include "exec/schedule.h"
#include "sim_check.h"

#define MAXP 64
#define SENTINEL 0xA5u

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static unsigned char data_byte(int src, int dst, uint64_t k)
{
    uint64_t s = ((uint64_t)(unsigned)src << 40) ^ ((uint64_t)(unsigned)dst << 20) ^ k;
    return (unsigned char)rng(&s);
}

/* ---- count matrices and buffer layouts ---------------------------------------------------------------- */

enum pattern { PAT_RANDOM, PAT_SPARSE, PAT_HOT, PAT_ZERO, PAT_UNIFORM, PAT_NPATTERNS };
static const char *const pattern_names[] = {"random", "sparse", "hot", "zero", "uniform"};

/* C[s*P + d] = bytes s sends d. */
static void count_matrix(enum pattern pat, int P, uint64_t seed, bool symmetric, uint64_t *C)
{
    uint64_t st = seed;
    int maxv = 1 + (int)(rng(&st) % 40);
    for (int s = 0; s < P; s++)
        for (int d = 0; d < P; d++) {
            uint64_t v = 0;
            switch (pat) {
            case PAT_RANDOM: v = rng(&st) % (uint64_t)(maxv + 1); break;
            case PAT_SPARSE: v = rng(&st) % 5 == 0 ? 50 + rng(&st) % 100 : 0; break;
            case PAT_HOT: v = d == P / 3 ? 100 + (uint64_t)s : rng(&st) % 3; break;
            case PAT_ZERO: v = 0; break;
            case PAT_UNIFORM: v = (uint64_t)maxv; break;
            default: break;
            }
            C[s * P + d] = v;
        }
    if (symmetric)
        for (int s = 0; s < P; s++)
            for (int d = 0; d < s; d++) C[s * P + d] = C[d * P + s];
}

/* Offsets of P blocks of the given sizes: in a seeded order with a gap of 0-3 bytes before each. Returns the span. */
static uint64_t layout(int P, const uint64_t *bytes, uint64_t seed, uint64_t *off)
{
    int order[MAXP];
    uint64_t st = seed;
    for (int j = 0; j < P; j++) order[j] = j;
    for (int j = P - 1; j > 0; j--) {
        int k = (int)(rng(&st) % (uint64_t)(j + 1)), t = order[j];
        order[j] = order[k];
        order[k] = t;
    }
    uint64_t at = 0;
    for (int i = 0; i < P; i++) {
        at += rng(&st) % 4;
        off[order[i]] = at;
        at += bytes[order[i]];
    }
    return at + rng(&st) % 4;
}

/* ---- the uniform exchange (pc_bruck_uniform_run) ------------------------------------------------------- */

/* Every rank's P slots of m bytes (rank r's slot i at slotbuf + (r P + i) m) through every step: a step's sends
 * read the slots as they were before it. With record, each rank keeps what arrived in each step, as
 * pc_bruck_uniform_run does: rank r's step s at record + (r moves + start[s]) m. */
static void sim_uniform(int P, int radix, const struct pc_bruck_step *steps, int nsteps, const int *start,
                        const int *slots, size_t m, unsigned char *slotbuf, unsigned char *record)
{
    const size_t moves = (size_t)start[nsteps], all = (size_t)P * (size_t)P * m;
    unsigned char *snap = xcalloc(all, 1);
    for (int s = 0; s < nsteps; s++) {
        memcpy(snap, slotbuf, all);
        for (int r = 0; r < P; r++) {
            int from = pc_bruck_recv_peer(r, P, &steps[s]);
            CHECK(pc_bruck_send_peer(from, P, &steps[s]) == r, "P=%d radix=%d step %d: peers", P, radix, s);
            for (int n = start[s]; n < start[s + 1]; n++) {
                const unsigned char *in = snap + ((size_t)from * P + (size_t)slots[n]) * m;
                memcpy(slotbuf + ((size_t)r * P + (size_t)slots[n]) * m, in, m);
                if (record) memcpy(record + ((size_t)r * moves + (size_t)n) * m, in, m);
            }
        }
    }
    free(snap);
}

/* ---- alltoallv.twophase_bruck ------------------------------------------------------------------------------ */

struct rank_state {
    uint64_t send_bytes[MAXP], recv_bytes[MAXP], send_off[MAXP], recv_off[MAXP];
    uint64_t sspan, rspan;
    unsigned char *sbuf, *rbuf, *temp, *out, *in;
    unsigned char *rmask; /* 1 where a received block lives */
    struct pc_tp_schedule tp;
    const uint64_t *incoming; /* this rank's part of the metadata pass's record */
};

struct sim {
    int P, radix, nsteps;
    struct pc_bruck_step steps[512];
    int start[513];
    int *slots;
    bool in_place, contiguous;
    const char *what;
    struct rank_state *rs;
};

/* Resolves a copy's bytes in its area: [*base + *off, + bytes), with the bounds of what it may touch. */
static unsigned char *area_ptr(struct sim *S, int r, const struct pc_tp_copy *c, bool writing)
{
    struct rank_state *R = &S->rs[r];
    const int P = S->P;
    CHECK(c->area >= 0 && c->area < PC_TP_NAREAS, "%s P=%d radix=%d rank %d: area %d", S->what, P, S->radix, r, c->area);
    CHECK(c->block >= 0 && c->block < P, "%s P=%d rank %d: block %d", S->what, P, r, c->block);
    if (c->area == PC_TP_TEMP) {
        CHECK(!c->typed, "%s P=%d rank %d: typed TEMP copy", S->what, P, r);
        CHECK(c->off + c->bytes <= R->tp.temp_bytes, "%s P=%d radix=%d rank %d: TEMP [%llu, +%llu) beyond its %llu bytes",
              S->what, P, S->radix, r, (unsigned long long)c->off, (unsigned long long)c->bytes,
              (unsigned long long)R->tp.temp_bytes);
        return R->temp + c->off;
    }
    if (c->area == PC_TP_SEND) {
        CHECK(!S->in_place && !writing && c->typed, "%s P=%d rank %d: send-buffer copy (in place %d, writing %d)", S->what,
              P, r, S->in_place, writing);
        CHECK(c->bytes == R->send_bytes[c->block], "%s P=%d rank %d: partial send block", S->what, P, r);
        if (S->contiguous) CHECK(c->off == R->send_off[c->block], "%s P=%d rank %d: send offset", S->what, P, r);
        return R->sbuf + R->send_off[c->block];
    }
    /* the receive buffer: a whole block, or raw bytes in a block's room */
    uint64_t lo = R->recv_off[c->block], hi = lo + R->recv_bytes[c->block];
    if (c->typed) {
        CHECK(c->bytes == R->recv_bytes[c->block], "%s P=%d rank %d: partial typed receive block", S->what, P, r);
        if (S->contiguous) CHECK(c->off == lo, "%s P=%d rank %d: receive offset", S->what, P, r);
        if (!writing) CHECK(S->in_place, "%s P=%d rank %d: a whole receive block read out of place", S->what, P, r);
        return R->rbuf + lo;
    }
    CHECK(S->contiguous, "%s P=%d rank %d: a room used with non-contiguous types", S->what, P, r);
    CHECK(c->off >= lo && c->off + c->bytes <= hi, "%s P=%d radix=%d rank %d: room copy [%llu, +%llu) outside block %d [%llu, %llu)",
          S->what, P, S->radix, r, (unsigned long long)c->off, (unsigned long long)c->bytes, c->block,
          (unsigned long long)lo, (unsigned long long)hi);
    return R->rbuf + c->off;
}

static void run_twophase(int P, int radix, const uint64_t *C, bool in_place, bool contiguous, uint64_t seed,
                         const char *what, uint64_t *temp_total, uint64_t *room_total)
{
    struct sim S = {.P = P, .radix = radix, .in_place = in_place, .contiguous = contiguous, .what = what};
    S.nsteps = pc_bruck_steps(P, radix, S.steps, 512);
    S.slots = xcalloc((size_t)S.nsteps * (size_t)P + 1, sizeof(int));
    pc_bruck_slot_lists(P, radix, S.steps, S.nsteps, S.start, S.slots);
    S.rs = xcalloc((size_t)P, sizeof *S.rs);
    const int moves = S.start[S.nsteps];

    /* buffers */
    for (int r = 0; r < P; r++) {
        struct rank_state *R = &S.rs[r];
        for (int j = 0; j < P; j++) {
            R->send_bytes[j] = C[r * P + j];
            R->recv_bytes[j] = C[j * P + r];
        }
        R->rspan = layout(P, R->recv_bytes, seed * 131 + (uint64_t)r, R->recv_off);
        R->rbuf = xcalloc(R->rspan, 1);
        R->rmask = xcalloc(R->rspan, 1);
        memset(R->rbuf, SENTINEL, R->rspan);
        for (int j = 0; j < P; j++) memset(R->rmask + R->recv_off[j], 1, R->recv_bytes[j]);
        if (in_place) {
            memcpy(R->send_off, R->recv_off, sizeof R->send_off);
            for (int j = 0; j < P; j++)
                for (uint64_t k = 0; k < R->send_bytes[j]; k++) R->rbuf[R->recv_off[j] + k] = data_byte(r, j, k);
        } else {
            R->sspan = layout(P, R->send_bytes, seed * 137 + (uint64_t)r + 7, R->send_off);
            R->sbuf = xcalloc(R->sspan, 1);
            memset(R->sbuf, 0x3C, R->sspan);
            for (int j = 0; j < P; j++)
                for (uint64_t k = 0; k < R->send_bytes[j]; k++) R->sbuf[R->send_off[j] + k] = data_byte(r, j, k);
        }
    }
    unsigned char *sbuf_copy = NULL;

    /* the metadata pass: the uniform exchange over one 8-byte size per slot, every step's arrivals kept */
    uint64_t *meta = xcalloc((size_t)P * (size_t)P, sizeof(uint64_t));
    uint64_t *incoming = xcalloc((size_t)P * (size_t)moves + 1, sizeof(uint64_t));
    for (int r = 0; r < P; r++) pc_tp_meta_init(P, r, S.rs[r].send_bytes, meta + (size_t)r * P);
    sim_uniform(P, radix, S.steps, S.nsteps, S.start, S.slots, sizeof(uint64_t), (unsigned char *)meta,
                (unsigned char *)incoming);
    for (int r = 0; r < P; r++) {
        S.rs[r].incoming = incoming + (size_t)r * (size_t)moves;
        for (int i = 0; i < P; i++)
            CHECK(meta[(size_t)r * P + (size_t)i] == C[pc_bruck_final_slot(r, P, i) * P + r],
                  "%s P=%d radix=%d: after the metadata pass rank %d slot %d holds size %llu", what, P, radix, r, i,
                  (unsigned long long)meta[(size_t)r * P + (size_t)i]);
    }
    free(meta);

    /* every rank's schedule */
    for (int r = 0; r < P; r++) {
        struct rank_state *R = &S.rs[r];
        struct pc_tp_input in = {.P = P, .rank = r, .radix = radix, .steps = S.steps, .nsteps = S.nsteps,
                                 .slot_start = S.start, .slots = S.slots, .in_place = in_place, .rooms = contiguous,
                                 .send_bytes = R->send_bytes, .recv_bytes = R->recv_bytes,
                                 .send_off = contiguous ? R->send_off : NULL, .recv_off = contiguous ? R->recv_off : NULL,
                                 .incoming = R->incoming};
        int rc = pc_tp_build(&in, &R->tp);
        CHECK(rc == PC_TP_OK, "%s P=%d radix=%d rank %d: pc_tp_build returned %d", what, P, radix, r, rc);
        CHECK(R->tp.nsteps == S.nsteps, "%s P=%d: %d steps", what, P, R->tp.nsteps);
        R->temp = xcalloc(R->tp.temp_bytes, 1);
        R->out = xcalloc(R->tp.max_send, 1);
        R->in = xcalloc(R->tp.max_recv, 1);
        *temp_total += R->tp.temp_bytes;
        *room_total += R->tp.room_bytes;
        if (!contiguous) CHECK(R->tp.room_bytes == 0, "%s P=%d: rooms without contiguous types", what, P);
    }
    if (!in_place) { /* out of place, the send buffers must come out unchanged */
        size_t total = 0;
        for (int r = 0; r < P; r++) total += S.rs[r].sspan;
        sbuf_copy = xcalloc(total, 1);
        for (int r = 0, at = 0; r < P; at += (int)S.rs[r].sspan, r++) memcpy(sbuf_copy + at, S.rs[r].sbuf, S.rs[r].sspan);
        for (int r = 0; r < P; r++) /* the block to itself, as execute copies it first */
            memcpy(S.rs[r].rbuf + S.rs[r].recv_off[r], S.rs[r].sbuf + S.rs[r].send_off[r], S.rs[r].send_bytes[r]);
    }

    /* execution */
    for (int s = 0; s < S.nsteps; s++) {
        for (int r = 0; r < P; r++) {
            struct rank_state *R = &S.rs[r];
            const struct pc_tp_step *st = &R->tp.steps[s];
            CHECK(st->send_peer == pc_bruck_send_peer(r, P, &S.steps[s]) && st->recv_peer == pc_bruck_recv_peer(r, P, &S.steps[s]),
                  "%s P=%d rank %d step %d: peers", what, P, r, s);
            CHECK(st->send_bytes <= R->tp.max_send && st->recv_bytes <= R->tp.max_recv, "%s P=%d: message sizing", what, P);
            uint64_t next = 0;
            for (int c = st->pack0; c < st->pack0 + st->npack; c++) {
                const struct pc_tp_copy *cp = &R->tp.copies[c];
                CHECK(cp->stage == next && cp->bytes > 0, "%s P=%d rank %d step %d: outgoing copies do not tile the message",
                      what, P, r, s);
                next += cp->bytes;
                memcpy(R->out + cp->stage, area_ptr(&S, r, cp, false), cp->bytes);
            }
            CHECK(next == st->send_bytes, "%s P=%d rank %d step %d: packed %llu of %llu bytes", what, P, r, s,
                  (unsigned long long)next, (unsigned long long)st->send_bytes);
        }
        for (int r = 0; r < P; r++) {
            struct rank_state *R = &S.rs[r];
            const struct pc_tp_step *st = &R->tp.steps[s];
            const struct rank_state *F = &S.rs[st->recv_peer];
            CHECK(F->tp.steps[s].send_bytes == st->recv_bytes, "%s P=%d radix=%d step %d: rank %d sends %llu bytes, rank %d expects %llu",
                  what, P, radix, s, st->recv_peer, (unsigned long long)F->tp.steps[s].send_bytes, r,
                  (unsigned long long)st->recv_bytes);
            memcpy(R->in, F->out, st->recv_bytes);
        }
        for (int r = 0; r < P; r++) {
            struct rank_state *R = &S.rs[r];
            const struct pc_tp_step *st = &R->tp.steps[s];
            uint64_t next = 0;
            for (int c = st->unpack0; c < st->unpack0 + st->nunpack; c++) {
                const struct pc_tp_copy *cp = &R->tp.copies[c];
                CHECK(cp->stage == next && cp->bytes > 0, "%s P=%d rank %d step %d: incoming copies do not tile the message",
                      what, P, r, s);
                next += cp->bytes;
                memcpy(area_ptr(&S, r, cp, true), R->in + cp->stage, cp->bytes);
            }
            CHECK(next == st->recv_bytes, "%s P=%d rank %d step %d: unpacked %llu of %llu bytes", what, P, r, s,
                  (unsigned long long)next, (unsigned long long)st->recv_bytes);
            CHECK(in_place || st->nfix == 0, "%s P=%d rank %d: deferred copies out of place", what, P, r);
            for (int c = st->fix0; c < st->fix0 + st->nfix; c++) {
                const struct pc_tp_copy *cp = &R->tp.copies[c];
                CHECK(cp->typed && cp->area == PC_TP_RECV, "%s P=%d rank %d: a deferred copy that is not a whole block",
                      what, P, r);
                CHECK(cp->stage + cp->bytes <= R->tp.temp_bytes, "%s P=%d rank %d: deferred copy beyond TEMP", what, P, r);
                memcpy(area_ptr(&S, r, cp, true), R->temp + cp->stage, cp->bytes);
            }
        }
    }

    /* every byte */
    for (int r = 0; r < P; r++) {
        struct rank_state *R = &S.rs[r];
        for (int src = 0; src < P; src++)
            for (uint64_t k = 0; k < R->recv_bytes[src]; k++) {
                unsigned char got = R->rbuf[R->recv_off[src] + k], want = data_byte(src, r, k);
                CHECK(got == want, "%s P=%d radix=%d: rank %d, block from %d, byte %llu of %llu: 0x%02x, want 0x%02x",
                      what, P, radix, r, src, (unsigned long long)k, (unsigned long long)R->recv_bytes[src], got, want);
            }
        for (uint64_t b = 0; b < R->rspan; b++)
            CHECK(R->rmask[b] || R->rbuf[b] == SENTINEL, "%s P=%d radix=%d: rank %d wrote receive-buffer gap byte %llu",
                  what, P, radix, r, (unsigned long long)b);
    }
    if (sbuf_copy) {
        for (int r = 0, at = 0; r < P; at += (int)S.rs[r].sspan, r++)
            CHECK(memcmp(sbuf_copy + at, S.rs[r].sbuf, S.rs[r].sspan) == 0, "%s P=%d: rank %d's send buffer changed", what, P, r);
        free(sbuf_copy);
    }
    for (int r = 0; r < P; r++) {
        struct rank_state *R = &S.rs[r];
        pc_tp_free(&R->tp);
        free(R->sbuf);
        free(R->rbuf);
        free(R->rmask);
        free(R->temp);
        free(R->out);
        free(R->in);
    }
    free(incoming);
    free(S.rs);
    free(S.slots);
}

static void test_twophase(void **state)
{
    (void)state;
    static uint64_t C[MAXP * MAXP];
    uint64_t temp_total = 0, room_total = 0;
    char what[96];
    for (int P = 1; P <= MAXP; P++)
        for (int radix = 2; radix <= 4; radix++) {
            if (radix > 2 && P % 3 != 0 && P > 20) continue; /* radix 3, 4 at every small P, then every third */
            for (int pat = 0; pat < PAT_NPATTERNS; pat++)
                for (int mode = 0; mode < 4; mode++) {
                    bool in_place = mode & 1, contiguous = !(mode & 2);
                    uint64_t seed = (uint64_t)P * 1000003u + (uint64_t)radix * 101 + (uint64_t)pat * 7 + (uint64_t)mode;
                    count_matrix((enum pattern)pat, P, seed, in_place, C);
                    snprintf(what, sizeof what, "twophase %s%s%s", pattern_names[pat], in_place ? " in-place" : "",
                             contiguous ? "" : " non-contiguous");
                    run_twophase(P, radix, C, in_place, contiguous, seed, what, &temp_total, &room_total);
                }
        }
    /* the schedules really exercise both places an intermediate block can wait */
    CHECK(temp_total > 0 && room_total > 0, "temporary bytes %llu, room bytes %llu", (unsigned long long)temp_total,
          (unsigned long long)room_total);
}

/* A matrix that makes the size checks bite: the destination expects other sizes than the metadata delivers. */
static void test_twophase_inconsistent(void **state)
{
    (void)state;
    const int P = 5, radix = 2;
    struct pc_bruck_step steps[16];
    int nsteps = pc_bruck_steps(P, radix, steps, 16), start[17], slots[16 * 5];
    pc_bruck_slot_lists(P, radix, steps, nsteps, start, slots);
    uint64_t send_bytes[5] = {1, 2, 3, 4, 5}, recv_bytes[5] = {1, 2, 3, 4, 5}, incoming[16 * 5];
    for (int n = 0; n < start[nsteps]; n++) incoming[n] = 7; /* nobody expects 7 bytes */
    struct pc_tp_input in = {.P = P, .rank = 2, .radix = radix, .steps = steps, .nsteps = nsteps, .slot_start = start,
                             .slots = slots, .send_bytes = send_bytes, .recv_bytes = recv_bytes, .incoming = incoming};
    struct pc_tp_schedule tp;
    assert_int_equal(pc_tp_build(&in, &tp), PC_TP_INCONSISTENT);
    assert_null(tp.steps);
    assert_null(tp.copies);
}

/* ---- alltoallv.padded_bruck ------------------------------------------------------------------------------- */

static void run_padded(int P, int radix, const uint64_t *C, const char *what)
{
    uint64_t M = 0;
    for (int i = 0; i < P * P; i++)
        if (C[i] > M) M = C[i];
    struct pc_bruck_step steps[512];
    int start[513];
    int nsteps = pc_bruck_steps(P, radix, steps, 512);
    int *slots = xcalloc((size_t)nsteps * (size_t)P + 1, sizeof(int));
    int most = pc_bruck_slot_lists(P, radix, steps, nsteps, start, slots);
    unsigned char *slotbuf = xcalloc((size_t)P * P * M, 1);
#define SLOT(r, i) (slotbuf + ((size_t)(r) * P + (size_t)(i)) * M)
    for (int r = 0; r < P; r++)
        for (int i = 0; i < P; i++) {
            int dst = pc_bruck_rotate_from(r, P, i);
            CHECK(C[r * P + dst] <= M, "%s P=%d: block bigger than its slot", what, P);
            for (uint64_t k = 0; k < C[r * P + dst]; k++) SLOT(r, i)[k] = data_byte(r, dst, k);
        }
    for (int s = 0; s < nsteps; s++)
        CHECK(start[s + 1] - start[s] <= most, "%s P=%d: step %d moves %d slots, the pack buffer holds %d", what, P, s,
              start[s + 1] - start[s], most);
    sim_uniform(P, radix, steps, nsteps, start, slots, M, slotbuf, NULL);
    for (int r = 0; r < P; r++)
        for (int src = 0; src < P; src++) {
            const unsigned char *got = SLOT(r, pc_bruck_final_slot(r, P, src));
            for (uint64_t k = 0; k < C[src * P + r]; k++)
                CHECK(got[k] == data_byte(src, r, k), "%s P=%d radix=%d: rank %d, block from %d, byte %llu", what, P,
                      radix, r, src, (unsigned long long)k);
        }
#undef SLOT
    free(slotbuf);
    free(slots);
}

static void test_padded(void **state)
{
    (void)state;
    static uint64_t C[MAXP * MAXP];
    char what[64];
    for (int P = 1; P <= MAXP; P++)
        for (int radix = 2; radix <= 4; radix++)
            for (int pat = 0; pat < PAT_NPATTERNS; pat++) {
                uint64_t seed = (uint64_t)P * 7919u + (uint64_t)radix * 13 + (uint64_t)pat;
                count_matrix((enum pattern)pat, P, seed, false, C);
                snprintf(what, sizeof what, "padded %s", pattern_names[pat]);
                run_padded(P, radix, C, what);
            }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_twophase),
        cmocka_unit_test(test_twophase_inconsistent),
        cmocka_unit_test(test_padded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
