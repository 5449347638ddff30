/* The index arithmetic of the point-to-point schedules, as pure functions: who talks to whom at each step and
 * which elements move. No MPI and no state, so the algorithms (src/exec/alltoall/pairwise.c,
 * src/exec/allreduce/recursive_doubling.c, rabenseifner.c and the fold in common.c) and the unit tests
 * (tests/unit/test_schedule_sim.c, which runs every rank of a schedule inside one process) share one copy.
 *
 * Conventions: P is the communicator size, rank is in [0, P); a "step" counts from 0 (alltoall in place,
 * allreduce) or from 1 (alltoall out of place) exactly as the algorithms loop. Block ranges are half-open
 * [lo, hi). */
#ifndef PC_SCHEDULE_H
#define PC_SCHEDULE_H

#include <stdbool.h>

/* ---- alltoall.pairwise -------------------------------------------------------------------------------- */

/* Out of place, step i = 1 .. P-1: send the block for (rank + i) mod P ... */
static inline int pc_pairwise_dst(int rank, int P, int step) { return (rank + step) % P; }
/* ... and receive the block from (rank - i) mod P. */
static inline int pc_pairwise_src(int rank, int P, int step) { return (rank - step + P) % P; }
/* In place, step i = 0 .. P-1: rank swaps one block with (i - rank) mod P, a symmetric pairing (an
 * involution); the step is skipped when the partner is rank itself. */
static inline int pc_pairwise_partner(int rank, int P, int step) { return ((step - rank) % P + P) % P; }

/* ---- alltoall.bruck, radix R ------------------------------------------------------------------------------
 * After the local rotation, slot i of rank r holds the block for (r + i) mod P. Each step takes one digit
 * position d (weight w = R^d) and one digit value v in 1..R-1 and sends every slot whose d-th base-R digit is v
 * to (r + v w) mod P, receiving the same slots from (r - v w) mod P. A slot travels the sum of its digits times
 * their weights, i.e. i ranks forward, so at the end slot i of rank r holds the block from (r - i) mod P and the
 * inverse rotation is recv[(r - i) mod P] = slot i. Steps whose v w >= P move nothing and are skipped. */
struct pc_bruck_step {
    int weight; /* R^d */
    int digit;  /* v */
};

/* The steps, in order (digit positions from least significant, values ascending); returns how many. */
static inline int pc_bruck_steps(int P, int radix, struct pc_bruck_step *out, int max)
{
    int n = 0;
    if (radix < 2) return 0;
    for (long w = 1; w < P; w *= radix)
        for (int v = 1; v < radix && v * w < P; v++) {
            if (n < max) {
                out[n].weight = (int)w;
                out[n].digit = v;
            }
            n++;
        }
    return n;
}
/* Whether slot i moves in step s of a radix-R schedule. */
static inline bool pc_bruck_moves(int slot, int radix, const struct pc_bruck_step *s)
{
    return (slot / s->weight) % radix == s->digit;
}
/* How many of the slots 0 .. P-1 step s moves (those pc_bruck_moves accepts), without visiting them: every period
 * of weight x radix slots holds weight moving ones (digit value v: offsets v w .. (v+1) w - 1), and the partial
 * period at the end those of its offsets past v w, at most w. */
static inline int pc_bruck_moves_count(int P, int radix, const struct pc_bruck_step *s)
{
    const long w = s->weight, period = w * radix, full = P / period, rest = P - full * period - s->digit * w;
    return (int)(full * w + (rest < 0 ? 0 : rest > w ? w : rest));
}
static inline int pc_bruck_send_peer(int rank, int P, const struct pc_bruck_step *s)
{
    return (int)((rank + (long)s->digit * s->weight) % P);
}
static inline int pc_bruck_recv_peer(int rank, int P, const struct pc_bruck_step *s)
{
    return (int)(((rank - (long)s->digit * s->weight) % P + P) % P);
}
/* The slots every step moves, in ascending order: step s moves slots[start[s] .. start[s+1]). start has room
 * for nsteps + 1 entries, slots for nsteps * P. Returns the most slots any one step moves. */
static inline int pc_bruck_slot_lists(int P, int radix, const struct pc_bruck_step *steps, int nsteps, int *start,
                                      int *slots)
{
    int n = 0, most = 0;
    for (int s = 0; s < nsteps; s++) {
        start[s] = n;
        for (int i = 0; i < P; i++)
            if (pc_bruck_moves(i, radix, &steps[s])) slots[n++] = i;
        if (n - start[s] > most) most = n - start[s];
    }
    start[nsteps] = n;
    return most;
}
/* Whether step s is the last move of slot i (i has no nonzero digit above s's position): the block then sits on
 * the rank it is addressed to. */
static inline bool pc_bruck_last_move(int slot, int radix, const struct pc_bruck_step *s)
{
    return (long)slot < (long)s->weight * radix;
}
/* Rotation: slot i starts with the caller's block for (rank + i) mod P. */
static inline int pc_bruck_rotate_from(int rank, int P, int slot) { return (rank + slot) % P; }
/* Inverse rotation: the block from source src ends in slot (rank - src) mod P. */
static inline int pc_bruck_final_slot(int rank, int P, int src) { return ((rank - src) % P + P) % P; }

/* ---- the fold to a power of two (allreduce) ----------------------------------------------------------- */

/* Among the first 2*rem ranks (rem = P - pof2), each even rank hands its vector to the odd rank above it and
 * sits out; the survivors are renumbered in rank order, so rank order (and with it a non-commutative op's
 * order) is kept. */
struct pc_fold {
    int pof2, rem;
    int newrank; /* -1 for a rank that sits out */
};

static inline struct pc_fold pc_fold_make(int rank, int size)
{
    struct pc_fold f;
    f.pof2 = 1;
    while (f.pof2 * 2 <= size) f.pof2 *= 2;
    f.rem = size - f.pof2;
    if (rank < 2 * f.rem)
        f.newrank = rank % 2 ? rank / 2 : -1;
    else
        f.newrank = rank - f.rem;
    return f;
}

/* The real rank of survivor newrank. */
static inline int pc_fold_real(const struct pc_fold *f, int newrank)
{
    return newrank < f->rem ? newrank * 2 + 1 : newrank + f->rem;
}

/* lg of a power of two (the number of recursive doubling / halving steps over pof2 survivors). */
static inline int pc_log2_pof2(int pof2)
{
    int s = 0;
    while ((1 << s) < pof2) s++;
    return s;
}

/* ---- allreduce.recursive_doubling ------------------------------------------------------------------------ */

/* Step s = 0 .. lg(pof2)-1 exchanges the whole vector with survivor newrank ^ 2^s. */
static inline int pc_rd_newpeer(int newrank, int step) { return newrank ^ (1 << step); }

/* ---- allreduce.rabenseifner: count elements cut into nblocks (= pof2) blocks ------------------------------ */

/* Block b holds count/nblocks elements, one more for the first count % nblocks blocks. */
static inline int pc_block_count(int count, int nblocks, int b)
{
    return count / nblocks + (b < count % nblocks ? 1 : 0);
}
/* The first element of block b (b = nblocks is the end of the vector). */
static inline int pc_block_displ(int count, int nblocks, int b)
{
    int q = count / nblocks, r = count % nblocks;
    return b * q + (b < r ? b : r);
}
/* Elements in the blocks [lo, hi). */
static inline int pc_block_span(int count, int nblocks, int lo, int hi)
{
    return pc_block_displ(count, nblocks, hi) - pc_block_displ(count, nblocks, lo);
}

/* One step of the reduce-scatter by recursive halving. Before step s (s = 0 .. lg(pof2)-1) survivor newrank
 * owns blocks [lo, hi), a range of 2 * (pof2 >> (s+1)) blocks; it keeps the half on its side of newpeer
 * (the lower half when newrank < newpeer), receives the peer's copy of that half and reduces it, and sends the
 * other half. */
struct pc_halving_step {
    int newpeer;
    int lo, hi;           /* owned before the step */
    int keep_lo, keep_hi; /* owned after the step: received from newpeer and reduced */
    int send_lo, send_hi; /* sent to newpeer */
};

static inline struct pc_halving_step pc_halving_step(int newrank, int pof2, int step)
{
    struct pc_halving_step h;
    int mask = pof2 >> (step + 1);
    h.newpeer = newrank ^ mask;
    h.lo = newrank & ~(2 * mask - 1);
    h.hi = h.lo + 2 * mask;
    int mid = h.lo + mask;
    bool lower = newrank < h.newpeer;
    h.keep_lo = lower ? h.lo : mid;
    h.keep_hi = lower ? mid : h.hi;
    h.send_lo = lower ? mid : h.lo;
    h.send_hi = lower ? h.hi : mid;
    return h;
}

/* The blocks survivor newrank owns once the reduce-scatter is done: [newrank, newrank + 1). */
static inline int pc_halving_owned_block(int newrank) { return newrank; }

/* One step of the allgather by recursive doubling, which replays the halving backwards: step s runs from
 * s = lg(pof2)-1 down to 0, exchanges with the same newpeer as halving step s, sends what newrank owns (the
 * range it kept at halving step s) and receives the other half (the range it sent), after which it owns the
 * range it owned before halving step s. */
struct pc_doubling_step {
    int newpeer;
    int own_lo, own_hi;   /* sent to newpeer */
    int recv_lo, recv_hi; /* received from newpeer */
};

static inline struct pc_doubling_step pc_doubling_step(int newrank, int pof2, int step)
{
    struct pc_halving_step h = pc_halving_step(newrank, pof2, step);
    struct pc_doubling_step d;
    d.newpeer = h.newpeer;
    d.own_lo = h.keep_lo;
    d.own_hi = h.keep_hi;
    d.recv_lo = h.send_lo;
    d.recv_hi = h.send_hi;
    return d;
}

#endif
