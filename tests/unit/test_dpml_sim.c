/* The arithmetic of the hierarchical allreduces (src/exec/allreduce/dpml_sched.h), checked in one process:
 *   - partitions and sub-partitions tile the vector in order, for every count up to 300 and some large ones,
 *     every leader count 1..12 and sub-partition count 1..10 (count 0 and count < l k included);
 *   - the hand-over order is a permutation for every rank and the flag values only grow;
 *   - the segment layout's areas are disjoint, cache-line aligned and large enough;
 *   - the inter-node step lists (recursive doubling, reduce-scatter + allgather) run with every participant of
 *     h = 1 .. 64 at once, messages matched pair by pair in order like MPI's: every element of every
 *     participant ends equal to the ordered product (a non-commutative 2x2 matrix product for recursive
 *     doubling, a wrapping sum for reduce-scatter + allgather). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exec/allreduce/dpml_sched.h"

#define CHECK(cond, ...)                                                                                          \
    do {                                                                                                          \
        if (!(cond)) fail_msg(__VA_ARGS__);                                                                       \
    } while (0)

static const int big_counts[] = {1000, 1001, 4095, 4097, 65537, 131072};

static void check_tiling(int count, int l, int k)
{
    int next = 0, nonempty = 0, expect_nonempty = 0;
    for (int j = 0; j < l; j++) {
        int plo = pc_dpml_part_lo(count, l, j), pn = pc_dpml_part_count(count, l, j);
        CHECK(plo == next, "count=%d l=%d: partition %d starts at %d, expected %d", count, l, j, plo, next);
        CHECK(pn == count / l || pn == count / l + 1, "count=%d l=%d: partition %d has %d elements", count, l, j, pn);
        if (j > 0) CHECK(pn <= pc_dpml_part_count(count, l, j - 1), "count=%d l=%d: partitions grow", count, l);
        expect_nonempty += pn < k ? pn : k;
        int snext = plo;
        for (int s = 0; s < k; s++) {
            int lo = pc_dpml_sub_lo(count, l, k, j, s), n = pc_dpml_sub_count(count, l, k, j, s);
            CHECK(lo == snext, "count=%d l=%d k=%d: sub-partition (%d,%d) starts at %d, expected %d", count, l, k, j, s,
                  lo, snext);
            CHECK(n == pn / k || n == pn / k + 1, "count=%d l=%d k=%d: sub-partition (%d,%d) has %d", count, l, k, j, s, n);
            snext += n;
            nonempty += n > 0;
        }
        CHECK(snext == plo + pn, "count=%d l=%d k=%d: partition %d's sub-partitions end at %d, not %d", count, l, k, j,
              snext, plo + pn);
        next += pn;
    }
    CHECK(next == count, "count=%d l=%d: partitions cover %d elements", count, l, next);
    CHECK(nonempty == expect_nonempty, "count=%d l=%d k=%d: %d non-empty pieces, expected %d", count, l, k, nonempty,
          expect_nonempty);
    if (count >= l * k) CHECK(nonempty == l * k, "count=%d >= l k: an empty piece", count);
}

static void test_partitions(void **state)
{
    (void)state;
    for (int l = 1; l <= 12; l++)
        for (int k = 1; k <= 10; k++) {
            for (int count = 0; count <= 300; count++) check_tiling(count, l, k);
            for (size_t c = 0; c < sizeof big_counts / sizeof big_counts[0]; c++) check_tiling(big_counts[c], l, k);
        }
    /* the paper's picture: 16 leaders cut 1 MiB of floats into 16 KiB partitions */
    assert_int_equal(pc_dpml_part_count(262144, 16, 3), 16384);
    assert_int_equal(pc_dpml_part_lo(262144, 16, 3), 3 * 16384);
    /* fewer elements than leaders: the first `count` leaders get one each */
    assert_int_equal(pc_dpml_part_count(3, 4, 2), 1);
    assert_int_equal(pc_dpml_part_count(3, 4, 3), 0);
    assert_int_equal(pc_dpml_part_lo(3, 4, 3), 3);
}

static void test_handover_order(void **state)
{
    (void)state;
    for (int l = 1; l <= 16; l++)
        for (int i = 0; i < 40; i++) {
            bool seen[16] = {false};
            for (int t = 0; t < l; t++) {
                int j = pc_dpml_copy_part(i, l, t);
                CHECK(j >= 0 && j < l && !seen[j], "l=%d rank %d: partition %d twice or out of range", l, i, j);
                seen[j] = true;
                CHECK(pc_dpml_copy_pos(i, l, j) == t, "l=%d rank %d: position of %d is %d, not %d", l, i, j,
                      pc_dpml_copy_pos(i, l, j), t);
            }
            /* a leader (i < l with first-l placement) hands over its own partition first: nothing to wait for */
            if (i < l) assert_int_equal(pc_dpml_copy_part(i, l, 0), i);
        }
    /* flag values only grow: execution by execution, partition by partition */
    for (int l = 1; l <= 9; l++) {
        uint64_t prev = 0;
        for (uint64_t seq = 1; seq <= 5; seq++)
            for (int t = 1; t <= l; t++) {
                uint64_t v = pc_dpml_in_value(seq, l, t);
                CHECK(v > prev, "l=%d: flag value %llu after %llu", l, (unsigned long long)v, (unsigned long long)prev);
                prev = v;
            }
        for (uint64_t seq = 1; seq <= 5; seq++)
            for (int i = 0; i < 10; i++)
                for (int j = 0; j < l; j++) {
                    uint64_t r = pc_dpml_in_ready(seq, l, i, j);
                    CHECK(r > pc_dpml_in_value(seq, l, 0) && r <= pc_dpml_in_value(seq, l, l),
                          "l=%d seq=%llu: partition %d of rank %d ready at %llu, outside this execution", l,
                          (unsigned long long)seq, j, i, (unsigned long long)r);
                    /* the last execution's final value never satisfies this execution's wait */
                    if (seq > 1) CHECK(r > pc_dpml_in_value(seq - 1, l, l), "stale flag satisfies a wait");
                }
    }
}

struct range {
    size_t lo, hi;
};

static void test_segment_layout(void **state)
{
    (void)state;
    const size_t extents[][2] = {{8, 8}, {4, 4}, {16, 12}, {8, 4}, {1, 1}, {24, 20}};
    for (size_t e = 0; e < sizeof extents / sizeof extents[0]; e++)
        for (int l = 1; l <= 6; l++)
            for (int ppn = l; ppn <= 7; ppn++)
                for (int count = 0; count <= 70; count += count < 10 ? 1 : 13) {
                    size_t ext = extents[e][0], text = extents[e][1], in_off[8], in_stride[8], res_off, desc_off;
                    size_t total = pc_dpml_segment_layout(count, l, ppn, ext, text, in_off, in_stride, &res_off, &desc_off);
                    struct range r[64];
                    int n = 0;
                    r[n++] = (struct range){res_off, res_off + pc_dpml_span(count, ext, text)};
                    for (int j = 0; j < l; j++) {
                        size_t need = pc_dpml_span(pc_dpml_part_count(count, l, j), ext, text);
                        CHECK(in_stride[j] >= need && in_stride[j] % 64 == 0, "slot stride %zu for %zu bytes", in_stride[j],
                              need);
                        for (int i = 0; i < ppn; i++) {
                            size_t lo = in_off[j] + (size_t)i * in_stride[j];
                            CHECK(lo % 64 == 0, "IN[%d][%d] at %zu is not on a cache line", j, i, lo);
                            r[n++] = (struct range){lo, lo + need};
                        }
                    }
                    CHECK(res_off % 64 == 0 && desc_off % 64 == 0, "RES or DESC not on a cache line");
                    r[n++] = (struct range){desc_off, desc_off + 64 * (size_t)ppn};
                    for (int a = 0; a < n; a++) {
                        CHECK(r[a].hi <= total, "area %d ends at %zu beyond %zu", a, r[a].hi, total);
                        for (int b = a + 1; b < n; b++)
                            CHECK(r[a].hi <= r[b].lo || r[b].hi <= r[a].lo || r[a].lo == r[a].hi || r[b].lo == r[b].hi,
                                  "count=%d l=%d ppn=%d: areas %d [%zu,%zu) and %d [%zu,%zu) overlap", count, l, ppn, a,
                                  r[a].lo, r[a].hi, b, r[b].lo, r[b].hi);
                    }
                }
}

/* ---- the inter-node step lists, every participant at once ---- */

typedef struct {
    uint32_t a, b, c, d;
} mat2;
static mat2 mat_mul(mat2 x, mat2 y)
{
    return (mat2){x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c, x.c * y.b + x.d * y.d};
}
static mat2 mat_of(int x, int e)
{
    return (mat2){(uint32_t)(x + 2), (uint32_t)(e * 3 + 1), (uint32_t)(x * 5 + e + 1), (uint32_t)(x + e + 7)};
}

/* FIFO of messages per (from, to) pair, like MPI's non-overtaking order for one tag. */
struct msg {
    int n;
    mat2 *data;
    struct msg *next;
};

struct sim {
    int h, count;
    bool commutative;
    struct pc_xstep **steps;
    int *nsteps, *at;
    bool *sent;
    mat2 **home, **spare, **cur, **oth; /* cur and oth point at home and spare, and swap */
    struct msg **head; /* [from * h + to] */
};

/* inout = in op inout: matrix product (in first) or componentwise wrapping sum. */
static void sim_reduce(const struct sim *S, const mat2 *in, mat2 *inout, int n)
{
    for (int i = 0; i < n; i++) {
        if (S->commutative)
            inout[i] = (mat2){in[i].a + inout[i].a, in[i].b + inout[i].b, in[i].c + inout[i].c, in[i].d + inout[i].d};
        else
            inout[i] = mat_mul(in[i], inout[i]);
    }
}

static void push(struct sim *S, int from, int to, const mat2 *data, int n)
{
    struct msg *m = malloc(sizeof *m), **tail = &S->head[from * S->h + to];
    m->n = n;
    m->data = malloc(sizeof(mat2) * (size_t)(n > 0 ? n : 1));
    memcpy(m->data, data, sizeof(mat2) * (size_t)n);
    m->next = NULL;
    while (*tail) tail = &(*tail)->next;
    *tail = m;
}

/* One participant takes its next step if the peer's message is there; true when it moved. */
static bool sim_step(struct sim *S, int x)
{
    if (S->at[x] == S->nsteps[x]) return false;
    const struct pc_xstep *st = &S->steps[x][S->at[x]];
    CHECK(st->peer >= 0 && st->peer < S->h && st->peer != x, "h=%d: participant %d steps to %d", S->h, x, st->peer);
    CHECK(st->send_lo >= 0 && st->send_lo + st->send_n <= S->count && st->recv_lo >= 0 &&
              st->recv_lo + st->recv_n <= S->count,
          "h=%d count=%d: participant %d step %d out of the vector", S->h, S->count, x, S->at[x]);
    bool moved = false;
    if (!S->sent[x]) {
        if (st->send_n > 0) push(S, x, st->peer, S->cur[x] + st->send_lo, st->send_n);
        S->sent[x] = moved = true;
    }
    if (st->recv_n > 0) {
        struct msg **q = &S->head[st->peer * S->h + x];
        if (!*q) return moved;
        struct msg *m = *q;
        *q = m->next;
        CHECK(m->n == st->recv_n, "h=%d: participant %d expects %d elements from %d, gets %d", S->h, x, st->recv_n,
              st->peer, m->n);
        mat2 *dst = (st->reduce == PC_XS_PLAIN ? S->cur[x] : S->oth[x]) + st->recv_lo;
        memcpy(dst, m->data, sizeof(mat2) * (size_t)m->n);
        free(m->data);
        free(m);
        if (st->reduce == PC_XS_PEER_FIRST) {
            sim_reduce(S, S->oth[x] + st->recv_lo, S->cur[x] + st->recv_lo, st->recv_n);
        } else if (st->reduce == PC_XS_MINE_FIRST) {
            CHECK(st->recv_lo == 0 && st->recv_n == S->count && st->send_lo == 0 && st->send_n == S->count,
                  "a swapping step must move the whole vector");
            sim_reduce(S, S->cur[x], S->oth[x], S->count);
            mat2 *t = S->cur[x];
            S->cur[x] = S->oth[x];
            S->oth[x] = t;
        }
    }
    S->at[x]++;
    S->sent[x] = false;
    return true;
}

static void run_sim(int h, int count, bool rsag)
{
    struct sim S = {.h = h, .count = count, .commutative = rsag};
    int max = pc_xsteps_max(h);
    S.steps = calloc((size_t)h, sizeof *S.steps);
    S.nsteps = calloc((size_t)h, sizeof(int));
    S.at = calloc((size_t)h, sizeof(int));
    S.sent = calloc((size_t)h, sizeof(bool));
    S.home = calloc((size_t)h, sizeof(mat2 *));
    S.cur = calloc((size_t)h, sizeof(mat2 *));
    S.oth = calloc((size_t)h, sizeof(mat2 *));
    S.spare = calloc((size_t)h, sizeof(mat2 *));
    S.head = calloc((size_t)h * (size_t)h, sizeof(struct msg *));
    for (int x = 0; x < h; x++) {
        S.steps[x] = malloc(sizeof(struct pc_xstep) * (size_t)max);
        S.nsteps[x] = rsag ? pc_xsteps_rsag(x, h, count, S.steps[x], max)
                           : pc_xsteps_recursive_doubling(x, h, count, S.steps[x], max);
        CHECK(S.nsteps[x] <= max, "h=%d: %d steps, bound %d", h, S.nsteps[x], max);
        if (h == 1 || count == 0) CHECK(S.nsteps[x] == 0, "h=%d count=%d: steps for nothing", h, count);
        S.home[x] = malloc(sizeof(mat2) * (size_t)(count + 1));
        S.spare[x] = malloc(sizeof(mat2) * (size_t)(count + 1));
        for (int e = 0; e < count; e++) {
            S.home[x][e] = mat_of(x, e);
            S.spare[x][e] = (mat2){0xdead, 0xbeef, 0, 0};
        }
        S.cur[x] = S.home[x];
        S.oth[x] = S.spare[x];
    }
    for (bool moved = true; moved;) {
        moved = false;
        for (int x = 0; x < h; x++)
            while (sim_step(&S, x)) moved = true;
    }
    for (int x = 0; x < h; x++) {
        CHECK(S.at[x] == S.nsteps[x], "h=%d count=%d %s: participant %d stuck at step %d of %d (deadlock)", h, count,
              rsag ? "rsag" : "rd", x, S.at[x], S.nsteps[x]);
        if (S.cur[x] != S.home[x]) memcpy(S.home[x], S.cur[x], sizeof(mat2) * (size_t)count);
        for (int y = 0; y < h; y++) CHECK(S.head[x * h + y] == NULL, "h=%d: message %d -> %d never received", h, x, y);
    }
    for (int e = 0; e < count; e++) {
        mat2 want = mat_of(0, e);
        for (int x = 1; x < h; x++) {
            mat2 v = mat_of(x, e);
            want = rsag ? (mat2){want.a + v.a, want.b + v.b, want.c + v.c, want.d + v.d} : mat_mul(want, v);
        }
        for (int x = 0; x < h; x++)
            CHECK(memcmp(&S.home[x][e], &want, sizeof want) == 0, "h=%d count=%d %s: participant %d element %d wrong", h,
                  count, rsag ? "rsag" : "rd (order lost?)", x, e);
    }
    for (int x = 0; x < h; x++) {
        free(S.steps[x]);
        free(S.home[x]);
        free(S.spare[x]);
    }
    free(S.steps);
    free(S.nsteps);
    free(S.at);
    free(S.sent);
    free(S.home);
    free(S.cur);
    free(S.oth);
    free(S.spare);
    free(S.head);
}

static void test_inter_steps(void **state)
{
    (void)state;
    static const int counts[] = {0, 1, 2, 3, 5, 7, 8, 16, 33, 100};
    for (int h = 1; h <= 64; h++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
            run_sim(h, counts[c], false);
            run_sim(h, counts[c], true);
        }
}

/* The step counts the cost model assumes: lg(pof2) exchanges plus the fold's two for recursive doubling,
 * twice as many exchanges for reduce-scatter + allgather. */
static void test_step_counts(void **state)
{
    (void)state;
    struct pc_xstep s[64];
    for (int h = 2; h <= 64; h++) {
        int pof2 = 1, lg = 0;
        while (pof2 * 2 <= h) pof2 *= 2, lg++;
        for (int x = 0; x < h; x++) {
            int extra = x < 2 * (h - pof2) ? 2 : 0, survivor_steps = x < 2 * (h - pof2) && x % 2 == 0 ? 0 : 1;
            assert_int_equal(pc_xsteps_recursive_doubling(x, h, 10, s, 64), extra + survivor_steps * lg);
            assert_int_equal(pc_xsteps_rsag(x, h, 10, s, 64), extra + survivor_steps * 2 * lg);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_partitions),     cmocka_unit_test(test_handover_order), cmocka_unit_test(test_segment_layout),
        cmocka_unit_test(test_inter_steps),    cmocka_unit_test(test_step_counts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
