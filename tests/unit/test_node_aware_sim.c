/* The node-aware alltoall engine (src/exec/alltoall/node_aware.c) run with every rank inside one process, using
 * the engine's own index functions (node_aware.h): for every P from 1 to 64, nodes dealt round robin and in
 * blocks (uneven nodes included), and every leader count up to the smallest node. Checked: both ends of each
 * node pair pick the same leader index, every block of every node's S is written exactly once, a node pair's
 * message (one contiguous run of S) carries the blocks the receiver expects, every slot of every node's R area is
 * written exactly once and stays inside it, and after the scatter every rank holds the block of every source. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/alltoall/node_aware.h"

#include "node_shapes.h"

static void simulate(const struct shape *s, int l)
{
    const int P = s->P, N = s->N;
    /* a block is encoded as src * P + dst; -1 is empty */
    static int R[MAXP][MAXP * MAXP], recv[MAXP][MAXP];
    for (int d = 0; d < N; d++) {
        size_t total = pc_na_r_offset_blocks(s->sizes, d, N);
        if (total != (size_t)s->sizes[d] * (size_t)(P - s->sizes[d]))
            fail_msg("P=%d node %d: R area of %zu blocks, expected %d", P, d, total, s->sizes[d] * (P - s->sizes[d]));
        for (size_t x = 0; x < total; x++) R[d][x] = -1;
    }
    /* how often each block of each node's S is written: every source's block for every rank exactly once */
    static int S_written[MAXP][MAXP * MAXP];
    for (int n = 0; n < N; n++) {
        memset(S_written[n], 0, sizeof S_written[n]);
        for (int i = 0; i < s->sizes[n]; i++) /* the own node's run: the sources' blocks for their node peers */
            for (int t = 0; t < s->sizes[n]; t++)
                if (S_written[n][pc_na_send_block(s->sizes, s->sizes[n], n, t, i)]++)
                    fail_msg("P=%d: node %d's own S block (t=%d, i=%d) written twice", P, n, t, i);
    }
    for (int n = 0; n < N; n++)
        for (int k = 1; k < N; k++) {
            int d = pc_na_send_node(n, N, k);
            /* the receiver finds n at the same offset, hence the same leader index */
            int k_back = -1;
            for (int kk = 1; kk < N; kk++)
                if (pc_na_recv_node(d, N, kk) == n) k_back = kk;
            if (k_back != k || pc_na_pair_leader(k_back, l) != pc_na_pair_leader(k, l))
                fail_msg("P=%d l=%d: nodes %d->%d disagree on the pair (offset %d vs %d)", P, l, n, d, k, k_back);
            size_t base = pc_na_r_offset_blocks(s->sizes, d, n);
            size_t k_in_message = 0; /* the send datatype lists blocks t-major: the message's k-th block */
            for (int t = 0; t < s->sizes[d]; t++)
                for (int i = 0; i < s->sizes[n]; i++, k_in_message++) {
                    if (pc_na_recv_block(s->sizes[n], t, i) != k_in_message)
                        fail_msg("P=%d: block (t=%d, i=%d) lands at %zu of R[s], but is block %zu of the message", P, t,
                                 i, pc_na_recv_block(s->sizes[n], t, i), k_in_message);
                    /* the message is node n's contiguous run of S for d: its k-th block is S block run + k,
                     * which must be where source i put its block for (d, t), and inside S */
                    size_t sb = pc_na_send_block(s->sizes, s->sizes[n], d, t, i);
                    size_t run = pc_na_s_offset_blocks(s->sizes, s->sizes[n], d);
                    if (sb != run + k_in_message || sb >= (size_t)s->sizes[n] * (size_t)P)
                        fail_msg("P=%d: node %d's block (t=%d, i=%d) for node %d is S block %zu, but the message takes "
                                 "S block %zu (S has %d)", P, n, t, i, d, sb, run + k_in_message, s->sizes[n] * P);
                    if (S_written[n][sb]++)
                        fail_msg("P=%d: node %d's S block %zu is written twice", P, n, sb);
                    int src = s->ranks[n][i], dst = s->ranks[d][t];
                    size_t slot = base + pc_na_recv_block(s->sizes[n], t, i);
                    if (slot >= pc_na_r_offset_blocks(s->sizes, d, N) || R[d][slot] != -1)
                        fail_msg("P=%d l=%d: node %d R slot %zu out of range or written twice", P, l, d, slot);
                    R[d][slot] = src * P + dst;
                }
        }
    for (int n = 0; n < N; n++)
        for (size_t x = 0; x < (size_t)s->sizes[n] * (size_t)P; x++)
            if (S_written[n][x] != 1) fail_msg("P=%d: node %d's S block %zu written %d times", P, n, x, S_written[n][x]);
    for (int r = 0; r < P; r++) {
        int d = s->node_of[r], t = s->local_of[r];
        for (int src = 0; src < P; src++) recv[r][src] = -1;
        for (int i = 0; i < s->sizes[d]; i++) recv[r][s->ranks[d][i]] = s->ranks[d][i] * P + r; /* own node: S rows */
        for (int sn = 0; sn < N; sn++) {
            if (sn == d) continue;
            for (int i = 0; i < s->sizes[sn]; i++)
                recv[r][s->ranks[sn][i]] = R[d][pc_na_r_offset_blocks(s->sizes, d, sn) + pc_na_recv_block(s->sizes[sn], t, i)];
        }
        for (int src = 0; src < P; src++)
            if (recv[r][src] != src * P + r)
                fail_msg("P=%d N=%d l=%d: rank %d got %d from %d, expected %d", P, N, l, r, recv[r][src], src, src * P + r);
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
                int min_ppn = P;
                for (int n = 0; n < s.N; n++)
                    if (s.sizes[n] < min_ppn) min_ppn = s.sizes[n];
                for (int l = 1; l <= min_ppn && l <= 8; l++) simulate(&s, l);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_every_shape)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
