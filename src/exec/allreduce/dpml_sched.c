/* Pure arithmetic of the hierarchical allreduces: segment layout and inter-node step lists (see dpml_sched.h). */
#include "exec/allreduce/dpml_sched.h"

#define LINE 64

static size_t round_line(size_t b) { return (b + LINE - 1) / LINE * LINE; }

size_t pc_dpml_segment_layout(int count, int l, int ppn, size_t extent, size_t true_extent, size_t *in_off,
                              size_t *in_stride, size_t *res_off, size_t *desc_off)
{
    size_t off = 0;
    *res_off = off;
    off += round_line(pc_dpml_span(count, extent, true_extent));
    for (int j = 0; j < l; j++) {
        in_off[j] = off;
        in_stride[j] = round_line(pc_dpml_span(pc_dpml_part_count(count, l, j), extent, true_extent));
        off += (size_t)ppn * in_stride[j];
    }
    *desc_off = off;
    off += (size_t)ppn * LINE;
    return off;
}

static int put(struct pc_xstep *out, int n, int max, struct pc_xstep s)
{
    if (n < max) out[n] = s;
    return n + 1;
}

/* The fold's first half: among the first 2 rem, each even index hands its vector to the odd one above it. */
static int fold_in(const struct pc_fold *f, int x, int count, struct pc_xstep *out, int n, int max)
{
    if (x >= 2 * f->rem) return n;
    if (f->newrank < 0) return put(out, n, max, (struct pc_xstep){.peer = x + 1, .send_n = count});
    return put(out, n, max, (struct pc_xstep){.peer = x - 1, .recv_n = count, .reduce = PC_XS_PEER_FIRST});
}

/* The fold's second half: the odd index hands the result back. */
static int fold_out(const struct pc_fold *f, int x, int count, struct pc_xstep *out, int n, int max)
{
    if (x >= 2 * f->rem) return n;
    if (f->newrank < 0) return put(out, n, max, (struct pc_xstep){.peer = x + 1, .recv_n = count, .reduce = PC_XS_PLAIN});
    return put(out, n, max, (struct pc_xstep){.peer = x - 1, .send_n = count});
}

int pc_xsteps_recursive_doubling(int x, int h, int count, struct pc_xstep *out, int max)
{
    if (h <= 1 || count <= 0) return 0;
    struct pc_fold f = pc_fold_make(x, h);
    int n = fold_in(&f, x, count, out, 0, max);
    if (f.newrank >= 0)
        for (int s = 0, steps = pc_log2_pof2(f.pof2); s < steps; s++) {
            int np = pc_rd_newpeer(f.newrank, s);
            n = put(out, n, max,
                    (struct pc_xstep){.peer = pc_fold_real(&f, np), .send_n = count, .recv_n = count,
                                      .reduce = np < f.newrank ? PC_XS_PEER_FIRST : PC_XS_MINE_FIRST});
        }
    return fold_out(&f, x, count, out, n, max);
}

int pc_xsteps_rsag(int x, int h, int count, struct pc_xstep *out, int max)
{
    if (h <= 1 || count <= 0) return 0;
    struct pc_fold f = pc_fold_make(x, h);
    int n = fold_in(&f, x, count, out, 0, max);
    if (f.newrank >= 0) {
        const int nb = f.pof2, steps = pc_log2_pof2(f.pof2);
        for (int s = 0; s < steps; s++) {
            struct pc_halving_step hs = pc_halving_step(f.newrank, nb, s);
            n = put(out, n, max,
                    (struct pc_xstep){.peer = pc_fold_real(&f, hs.newpeer),
                                      .send_lo = pc_block_displ(count, nb, hs.send_lo),
                                      .send_n = pc_block_span(count, nb, hs.send_lo, hs.send_hi),
                                      .recv_lo = pc_block_displ(count, nb, hs.keep_lo),
                                      .recv_n = pc_block_span(count, nb, hs.keep_lo, hs.keep_hi),
                                      .reduce = PC_XS_PEER_FIRST});
        }
        for (int s = steps - 1; s >= 0; s--) {
            struct pc_doubling_step d = pc_doubling_step(f.newrank, nb, s);
            n = put(out, n, max,
                    (struct pc_xstep){.peer = pc_fold_real(&f, d.newpeer),
                                      .send_lo = pc_block_displ(count, nb, d.own_lo),
                                      .send_n = pc_block_span(count, nb, d.own_lo, d.own_hi),
                                      .recv_lo = pc_block_displ(count, nb, d.recv_lo),
                                      .recv_n = pc_block_span(count, nb, d.recv_lo, d.recv_hi),
                                      .reduce = PC_XS_PLAIN});
        }
    }
    return fold_out(&f, x, count, out, n, max);
}
