/* alltoallv.aggregated's arithmetic (src/exec/alltoallv/aggregated.h) run with every rank and node inside one
 * process: for every P from 1 to 64, nodes dealt round robin and in blocks (uneven nodes included), and count
 * matrices with zero blocks, empty node pairs, one hot destination and a silent rank. Each node's segment is a
 * byte array; each rank computes its own offsets from its node's rows (as setup does after the node allgather),
 * packs a pattern f(source, destination, byte) into them, each node-pair area is copied into the receiving node's
 * area as one message in the pieces the point-to-point transport cuts, and each rank unpacks. Checked: the node-pair matrix against a direct sum; the areas are
 * aligned, disjoint and inside the set; every byte of every area is written exactly once and nothing else is;
 * every rank reads back exactly the bytes of every source; the sender/receiver assignment covers each nonempty
 * pair once, leaves empty pairs out, gives each leader at most one message when there are no more messages than
 * leaders, and keeps every leader's cost within the mean plus the largest message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/alltoallv/aggregated.h"

#include "node_shapes.h"

static uint64_t rng(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static unsigned char pattern(int src, int dst, uint64_t k) { return (unsigned char)(src * 131 + dst * 7 + k * 29 + 1); }

enum kind { RANDOM, SPARSE_NODES, HOT, SILENT, NKINDS };

/* Block sizes in bytes, C[s * P + d]; kept small so every byte can be tracked. */
static void make_counts(const struct shape *sh, enum kind kind, uint64_t seed, uint64_t *C)
{
    const int P = sh->P;
    uint64_t st = seed | 1;
    for (int s = 0; s < P; s++)
        for (int d = 0; d < P; d++) {
            uint64_t v = rng(&st) % 8; /* zero one time in eight */
            switch (kind) {
            case RANDOM: break;
            case SPARSE_NODES: /* node x sends only to node x + 1: most node pairs are empty */
                if (sh->node_of[d] != (sh->node_of[s] + 1) % sh->N) v = 0;
                break;
            case HOT: v = d == P - 1 ? 40 + (uint64_t)s : v % 2; break;
            case SILENT: if (s == P / 2) v = 0; break;
            default: break;
            }
            C[s * P + d] = v;
        }
}

/* Every byte of [lo, hi) of node x's set must have been written once; returns how many were. */
static void expect_written_once(const unsigned char *writes, uint64_t lo, uint64_t hi, const char *what, int x)
{
    for (uint64_t b = lo; b < hi; b++)
        if (writes[b] != 1) fail_msg("node %d: byte %llu of %s written %d times", x, (unsigned long long)b, what, writes[b]);
}

static void simulate(const struct shape *sh, enum kind kind, uint64_t seed)
{
    const int P = sh->P, N = sh->N;
    const struct pc_agg_nodes g = {P, N, sh->node_of, sh->local_of, sh->sizes, sh->first, sh->flat};
    static uint64_t C[MAXP * MAXP], pair[MAXP * MAXP], direct[MAXP * MAXP], area[MAXP][2 * MAXP], set_bytes[MAXP];
    static uint64_t rows[MAXP * 2 * MAXP], pack_off[MAXP][MAXP], unpack_off[MAXP][MAXP], col[MAXP];
    make_counts(sh, kind, seed, C);
    memset(direct, 0, sizeof direct);
    for (int s = 0; s < P; s++)
        for (int d = 0; d < P; d++)
            if (s != d) direct[sh->node_of[s] * N + sh->node_of[d]] += C[s * P + d];

    /* each node: its rows as the node allgather leaves them ([send row | receive row] per node rank), its row of
     * the matrix, and its column seen from the receive side */
    for (int a = 0; a < N; a++) {
        for (int t = 0; t < sh->sizes[a]; t++) {
            int me = sh->ranks[a][t];
            for (int j = 0; j < P; j++) {
                rows[(size_t)t * 2 * P + j] = C[me * P + j];
                rows[(size_t)t * 2 * P + P + j] = C[j * P + me];
            }
        }
        pc_agg_pair_row(&g, a, rows, 2 * (size_t)P, pair + (size_t)a * N);
        pc_agg_pair_column(&g, a, rows + P, 2 * (size_t)P, col);
        for (int x = 0; x < N; x++)
            if (col[x] != direct[x * N + a])
                fail_msg("P=%d node %d: column says %llu bytes from node %d, directly %llu", P, a,
                         (unsigned long long)col[x], x, (unsigned long long)direct[x * N + a]);
        for (int t = 0; t < sh->sizes[a]; t++) {
            /* the whole area layout first: rank offsets refer to it */
            set_bytes[a] = pc_agg_segment_layout(N, a, direct, area[a]);
            pc_agg_rank_offsets(&g, a, t, rows, rows + P, 2 * (size_t)P, area[a], pack_off[sh->ranks[a][t]],
                                unpack_off[sh->ranks[a][t]]);
        }
    }
    for (int i = 0; i < N * N; i++)
        if (pair[i] != direct[i]) fail_msg("P=%d: node pair %d -> %d: row says %llu, directly %llu", P, i / N, i % N,
                                           (unsigned long long)pair[i], (unsigned long long)direct[i]);

    /* areas: aligned, inside the set, disjoint (intra first, then sends, then receives) */
    for (int a = 0; a < N; a++) {
        uint64_t end = 0;
        for (int k = 0; k < 2 * N; k++) {
            int x = k < N ? (k == 0 ? a : (k <= a ? k - 1 : k)) : k - N; /* a, then the others in node order */
            if (k >= N && x == a) continue;
            uint64_t off = k < N ? area[a][x] : area[a][N + x], len = k < N ? pair[a * N + x] : pair[x * N + a];
            if (off % 64) fail_msg("P=%d node %d: area %d misaligned at %llu", P, a, k, (unsigned long long)off);
            if (off < end) fail_msg("P=%d node %d: area %d at %llu overlaps the one before (ends %llu)", P, a, k,
                                    (unsigned long long)off, (unsigned long long)end);
            end = off + len;
        }
        if (end > set_bytes[a]) fail_msg("P=%d node %d: areas end at %llu past the set (%llu)", P, a,
                                         (unsigned long long)end, (unsigned long long)set_bytes[a]);
    }

    /* pack */
    unsigned char *seg[MAXP], *writes[MAXP];
    for (int a = 0; a < N; a++) {
        seg[a] = calloc(set_bytes[a] + 1, 1);
        writes[a] = calloc(set_bytes[a] + 1, 1);
        assert_non_null(seg[a]);
        assert_non_null(writes[a]);
    }
    for (int s = 0; s < P; s++) {
        int a = sh->node_of[s];
        for (int d = 0; d < P; d++) {
            if (d == s || C[s * P + d] == 0) continue;
            int y = sh->node_of[d];
            uint64_t lo = area[a][y], hi = lo + pair[a * N + y], off = pack_off[s][d];
            if (off < lo || off + C[s * P + d] > hi)
                fail_msg("P=%d: block %d -> %d packed at %llu, outside area %d -> %d [%llu, %llu)", P, s, d,
                         (unsigned long long)off, a, y, (unsigned long long)lo, (unsigned long long)hi);
            for (uint64_t k = 0; k < C[s * P + d]; k++) {
                seg[a][off + k] = pattern(s, d, k);
                writes[a][off + k]++;
            }
        }
    }
    for (int a = 0; a < N; a++) {
        uint64_t covered = 0;
        for (int y = 0; y < N; y++) {
            expect_written_once(writes[a], area[a][y], area[a][y] + pair[a * N + y], "a send area", a);
            covered += pair[a * N + y];
        }
        uint64_t total = 0;
        for (uint64_t b = 0; b < set_bytes[a]; b++) total += writes[a][b];
        if (total != covered) fail_msg("P=%d node %d: %llu bytes written outside the send areas", P, a,
                                       (unsigned long long)(total - covered));
    }

    /* one message per nonempty node pair, in pieces (automatic, whole, or 3): the sender's area into the
     * receiver's, piece by piece as the point-to-point transport cuts it */
    const int segments = (int)(seed % 3 == 2 ? 3 : seed % 3);
    for (int x = 0; x < N; x++)
        for (int y = 0; y < N; y++) {
            uint64_t bytes = pair[x * N + y], q = pc_agg_piece_bytes(bytes, segments), moved = 0;
            if (x == y || bytes == 0) continue;
            int k = pc_agg_pieces(bytes, segments);
            for (int i = 0; i < k; i++) {
                uint64_t at = (uint64_t)i * q, len = bytes - at < q ? bytes - at : q;
                if (len == 0 || at >= bytes) fail_msg("P=%d: piece %d of %d of %llu bytes is empty", P, i, k, (unsigned long long)bytes);
                memcpy(seg[y] + area[y][N + x] + at, seg[x] + area[x][y] + at, (size_t)len);
                moved += len;
            }
            if (moved != bytes) fail_msg("P=%d: pieces moved %llu of %llu bytes", P, (unsigned long long)moved, (unsigned long long)bytes);
        }

    /* unpack: every rank reads exactly its bytes from every source */
    for (int t = 0; t < P; t++) {
        int a = sh->node_of[t];
        for (int j = 0; j < P; j++) {
            if (j == t || C[j * P + t] == 0) continue;
            int x = sh->node_of[j];
            uint64_t lo = x == a ? area[a][a] : area[a][N + x], hi = lo + pair[x * N + a], off = unpack_off[t][j];
            if (off < lo || off + C[j * P + t] > hi)
                fail_msg("P=%d: block %d -> %d unpacked from %llu, outside area %d -> %d", P, j, t,
                         (unsigned long long)off, x, a);
            for (uint64_t k = 0; k < C[j * P + t]; k++)
                if (seg[a][off + k] != pattern(j, t, k))
                    fail_msg("P=%d N=%d kind %d: rank %d byte %llu from rank %d is %d, expected %d", P, N, kind, t,
                             (unsigned long long)k, j, seg[a][off + k], pattern(j, t, k));
        }
    }
    for (int a = 0; a < N; a++) {
        free(seg[a]);
        free(writes[a]);
    }

    /* sender and receiver assignment */
    for (int a = 0; a < N; a++) {
        const int lcounts[] = {1, 2, 3, sh->sizes[a]};
        for (size_t li = 0; li < sizeof lcounts / sizeof lcounts[0]; li++) {
            int l = pc_agg_leaders(lcounts[li], sh->sizes[a]), send[MAXP], recv[MAXP], count[MAXP] = {0};
            uint64_t load[MAXP] = {0}, total = 0, biggest = 0, latency = 100;
            assert_int_equal(pc_agg_assign(N, a, direct, l, latency, send, recv), 0);
            int messages = 0;
            for (int x = 0; x < N; x++)
                for (int dir = 0; dir < 2; dir++) {
                    int who = dir == 0 ? send[x] : recv[x];
                    uint64_t bytes = dir == 0 ? pair[a * N + x] : pair[x * N + a];
                    bool expected = x != a && bytes > 0;
                    if (expected != (who >= 0) || who >= l)
                        fail_msg("P=%d node %d l=%d: %s node %d (%llu bytes) assigned to %d", P, a, l,
                                 dir == 0 ? "send to" : "receive from", x, (unsigned long long)bytes, who);
                    if (who < 0) continue;
                    messages++;
                    count[who]++;
                    load[who] += latency + bytes;
                    total += latency + bytes;
                    if (latency + bytes > biggest) biggest = latency + bytes;
                }
            for (int j = 0; j < l; j++) {
                if (messages <= l && count[j] > 1)
                    fail_msg("P=%d node %d: %d messages over %d leaders, but leader %d has %d", P, a, messages, l, j, count[j]);
                if ((double)load[j] > (double)total / l + (double)biggest)
                    fail_msg("P=%d node %d l=%d: leader %d carries %llu, mean %.1f + largest %llu", P, a, l, j,
                             (unsigned long long)load[j], (double)total / l, (unsigned long long)biggest);
            }
        }
    }
}

static void test_every_shape(void **state)
{
    (void)state;
    static struct shape s;
    const int Ks[] = {1, 2, 3, 4, 5, 8};
    for (int P = 1; P <= MAXP; P++)
        for (size_t ki = 0; ki < sizeof Ks / sizeof Ks[0]; ki++) {
            if (Ks[ki] > P) continue;
            for (int block = 0; block < 2; block++) {
                make_shape(&s, P, Ks[ki], block);
                /* two kinds per shape, all four in turn over P */
                simulate(&s, (enum kind)(P % NKINDS), (uint64_t)(P * 100 + Ks[ki] * 10 + block));
                simulate(&s, (enum kind)((P + 2) % NKINDS), (uint64_t)(P * 1000 + Ks[ki] * 10 + block));
            }
        }
}

/* Hand-worked cases of the layout and the assignment. */
static void test_by_hand(void **state)
{
    (void)state;
    /* 3 nodes: pair[x][y] (x row); node 1's set: intra 10 -> 64, send to 0 (5) -> 64, send to 2 (0) -> 0,
     * receive from 0 (70) -> 128, receive from 2 (1) -> 64 */
    const uint64_t pair[9] = {7, 70, 3, 5, 10, 0, 2, 1, 0};
    uint64_t area[6];
    assert_int_equal(pc_agg_segment_layout(3, 1, pair, area), 64 + 64 + 0 + 128 + 64);
    assert_int_equal(area[1], 0);  /* intra */
    assert_int_equal(area[0], 64); /* 1 -> 0 */
    assert_int_equal(area[2], 128); /* 1 -> 2, empty */
    assert_int_equal(area[3], 128); /* 0 -> 1 */
    assert_int_equal(area[5], 256); /* 2 -> 1 */
    /* node 1's messages: send to 0 (5 B, offset 2), receive from 0 (70 B, offset 1), receive from 2 (1 B,
     * offset 1), send to 2 empty. Costs with latency 10: 80, 11, 15 -> 80 (recv from 0), 15 (send to 0), 11 (recv
     * from 2). Two leaders: 80 -> 0, 15 -> 1, 11 -> 1 (26 < 80). */
    int send[3], recv[3];
    assert_int_equal(pc_agg_assign(3, 1, pair, 2, 10, send, recv), 0);
    assert_int_equal(recv[0], 0);
    assert_int_equal(send[0], 1);
    assert_int_equal(recv[2], 1);
    assert_int_equal(send[2], -1);
    assert_int_equal(send[1], -1);
    assert_int_equal(recv[1], -1);
    /* balanced: two nodes, two messages each, equal sizes: offset 1 send then receive, to leaders 0 and 1 */
    const uint64_t two[4] = {0, 8, 8, 0};
    assert_int_equal(pc_agg_assign(2, 0, two, 4, 10, send, recv), 0);
    assert_int_equal(send[1], 0);
    assert_int_equal(recv[1], 1);
    assert_int_equal(pc_agg_leaders(0, 5), 5);
    assert_int_equal(pc_agg_leaders(2, 5), 2);
    assert_int_equal(pc_agg_leaders(9, 5), 5);
    /* pieces: automatic cuts 4 KiB pieces up to 64 KiB; a count cuts near-equal pieces, none empty */
    assert_int_equal(pc_agg_piece_bytes(16000, 0), 4096);
    assert_int_equal(pc_agg_pieces(16000, 0), 4);
    assert_int_equal(pc_agg_pieces(4096, 0), 1);
    assert_int_equal(pc_agg_pieces(4097, 0), 2);
    assert_int_equal(pc_agg_pieces(65536, 0), 16);
    assert_int_equal(pc_agg_pieces(65537, 0), 1);
    assert_int_equal(pc_agg_piece_bytes(65537, 0), 65537);
    assert_int_equal(pc_agg_pieces(16000, 1), 1);
    assert_int_equal(pc_agg_piece_bytes(10, 4), 3);
    assert_int_equal(pc_agg_pieces(10, 4), 4); /* 3 3 3 1 */
    assert_int_equal(pc_agg_pieces(9, 4), 3);  /* 3 3 3: not 4 with an empty one */
    assert_int_equal(pc_agg_pieces(3, 8), 3);
    assert_int_equal(pc_agg_pieces(0, 0), 0);
    assert_int_equal(pc_agg_sets(PC_AGG_DOUBLE_LIMIT), 2);
    assert_int_equal(pc_agg_sets(PC_AGG_DOUBLE_LIMIT + 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_by_hand), cmocka_unit_test(test_every_shape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
