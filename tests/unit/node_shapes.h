/* Node shapes for the in-process simulations (test_node_aware_sim.c, test_aggregated_sim.c): P ranks dealt over K
 * nodes round robin or in blocks (uneven when K does not divide P), numbered by their first rank as the layout
 * (src/shm/layout.c) numbers them. */
#ifndef PC_TEST_NODE_SHAPES_H
#define PC_TEST_NODE_SHAPES_H

#include <string.h>

#define MAXP 64

struct shape {
    int P, N;
    int node_of[MAXP], local_of[MAXP], sizes[MAXP], ranks[MAXP][MAXP];
    int first[MAXP + 1], flat[MAXP]; /* the layout's node_first / node_ranks */
};

static void make_shape(struct shape *s, int P, int K, int block)
{
    memset(s, 0, sizeof *s);
    s->P = P;
    int raw[MAXP], map[MAXP];
    for (int r = 0; r < P; r++) {
        int q = P / K, extra = P % K; /* blocks: the first `extra` nodes hold one more */
        if (block) {
            int k = 0, start = 0;
            while (r >= start + q + (k < extra)) start += q + (k < extra), k++;
            raw[r] = k;
        } else {
            raw[r] = r % K;
        }
    }
    for (int k = 0; k < K; k++) map[k] = -1;
    for (int r = 0; r < P; r++) {
        if (map[raw[r]] < 0) map[raw[r]] = s->N++;
        int n = map[raw[r]];
        s->node_of[r] = n;
        s->local_of[r] = s->sizes[n];
        s->ranks[n][s->sizes[n]++] = r;
    }
    for (int n = 0; n < s->N; n++) {
        s->first[n + 1] = s->first[n] + s->sizes[n];
        for (int i = 0; i < s->sizes[n]; i++) s->flat[s->first[n] + i] = s->ranks[n][i];
    }
}

#endif
