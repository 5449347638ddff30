/* Every point-to-point schedule run with all of its ranks inside one process, for P = 1 .. 64, using the very
 * functions the algorithms call (src/exec/schedule.h). Each rank's buffers are arrays; a step's sends read
 * the data as it was before the step (a snapshot), and at the end every element of every rank is checked.
 *
 *  - alltoall.pairwise, out of place and in place: each step is a matching, every block arrives exactly once
 *    and at the right place.
 *  - allreduce.recursive_doubling with the fold: a non-commutative associative op on symbolic values (an
 *    element is the interval [lo, hi] of ranks combined; combining [a, b] with [c, d] is only valid when
 *    c = b + 1), so every rank must end with exactly ranks 0 .. P-1 combined in order.
 *  - allreduce.rabenseifner with the fold: integer sums plus, per element, the set of contributions combined
 *    (never combining the same rank twice), the number of reductions on the owner and overall, and the number
 *    of times each element arrives in the allgather.
 *
 * The fold's own steps live in src/exec/allreduce/common.c (pc_allreduce_fold_in/out); they are mirrored here:
 * even ranks below 2*rem send their vector to rank+1, which computes (rank-1) op (rank); at the end the odd
 * ranks send the result back to rank-1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exec/schedule.h"
#include "sim_check.h"

#define MAXP 64

static bool is_pof2(int x) { return x > 0 && (x & (x - 1)) == 0; }

/* ---- building blocks ---------------------------------------------------------------------------------- */

static void test_fold_renumbering(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++) {
        struct pc_fold f0 = pc_fold_make(0, P);
        CHECK(is_pof2(f0.pof2) && f0.pof2 <= P && P < 2 * f0.pof2, "P=%d pof2=%d", P, f0.pof2);
        CHECK(f0.rem == P - f0.pof2, "P=%d rem=%d", P, f0.rem);
        CHECK((1 << pc_log2_pof2(f0.pof2)) == f0.pof2, "P=%d lg(pof2)=%d", P, pc_log2_pof2(f0.pof2));
        int seen[MAXP] = {0}, survivors = 0, last = -1;
        for (int r = 0; r < P; r++) {
            struct pc_fold f = pc_fold_make(r, P);
            CHECK(f.pof2 == f0.pof2 && f.rem == f0.rem, "P=%d rank %d disagrees on pof2/rem", P, r);
            if (f.newrank < 0) {
                CHECK(r < 2 * f.rem && r % 2 == 0, "P=%d rank %d sits out but is not an even rank below 2*rem", P, r);
                CHECK(pc_fold_make(r + 1, P).newrank >= 0, "P=%d rank %d hands to a rank that also sits out", P, r);
                continue;
            }
            CHECK(f.newrank < f.pof2, "P=%d rank %d newrank %d out of range", P, r, f.newrank);
            CHECK(f.newrank > last, "P=%d newranks not in rank order at rank %d", P, r);
            last = f.newrank;
            CHECK(pc_fold_real(&f, f.newrank) == r, "P=%d pc_fold_real(%d) = %d, not %d", P, f.newrank,
                  pc_fold_real(&f, f.newrank), r);
            seen[f.newrank]++;
            survivors++;
        }
        CHECK(survivors == f0.pof2, "P=%d %d survivors", P, survivors);
        for (int i = 0; i < f0.pof2; i++) CHECK(seen[i] == 1, "P=%d newrank %d held %d times", P, i, seen[i]);
    }
}

static void test_block_partition(void **state)
{
    (void)state;
    for (int nb = 1; nb <= MAXP; nb <<= 1)
        for (int count = 0; count <= 300; count++) {
            CHECK(pc_block_displ(count, nb, 0) == 0, "count %d nb %d", count, nb);
            CHECK(pc_block_displ(count, nb, nb) == count, "count %d nb %d: end %d", count, nb,
                  pc_block_displ(count, nb, nb));
            int sum = 0;
            for (int b = 0; b < nb; b++) {
                int c = pc_block_count(count, nb, b);
                CHECK(c == count / nb || c == count / nb + 1, "count %d nb %d block %d has %d", count, nb, b, c);
                if (b > 0) CHECK(c <= pc_block_count(count, nb, b - 1), "count %d nb %d: counts increase", count, nb);
                CHECK(pc_block_displ(count, nb, b) == sum, "count %d nb %d block %d displ", count, nb, b);
                CHECK(pc_block_span(count, nb, b, b + 1) == c, "count %d nb %d block %d span", count, nb, b);
                sum += c;
            }
            CHECK(sum == count, "count %d nb %d: blocks hold %d", count, nb, sum);
            CHECK(pc_block_span(count, nb, 0, nb) == count, "count %d nb %d", count, nb);
        }
}

/* The arithmetic as it stood in the algorithms before it moved to schedule.h (git ae8f893): the functions must
 * reproduce it exactly, so the move changed no behaviour. */
static void test_matches_original_arithmetic(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++)
        for (int r = 0; r < P; r++) {
            for (int i = 1; i < P; i++) {
                assert_int_equal(pc_pairwise_dst(r, P, i), (r + i) % P);
                assert_int_equal(pc_pairwise_src(r, P, i), (r - i + P) % P);
            }
            for (int i = 0; i < P; i++) assert_int_equal(pc_pairwise_partner(r, P, i), ((i - r) % P + P) % P);
        }
    /* rabenseifner.c setup(): cnts/disps by accumulation; execute(): sum_counts over [from, to). */
    for (int pof2 = 1; pof2 <= MAXP; pof2 <<= 1)
        for (int count = 0; count <= 200; count++) {
            int cnts[MAXP], disps[MAXP];
            for (int i = 0, d = 0; i < pof2; i++) {
                cnts[i] = count / pof2 + (i < count % pof2 ? 1 : 0);
                disps[i] = d;
                d += cnts[i];
            }
            for (int b = 0; b < pof2; b++) {
                assert_int_equal(pc_block_count(count, pof2, b), cnts[b]);
                assert_int_equal(pc_block_displ(count, pof2, b), disps[b]);
            }
            for (int lo = 0; lo <= pof2; lo++)
                for (int hi = lo; hi <= pof2; hi++) {
                    int s = 0;
                    for (int i = lo; i < hi; i++) s += cnts[i];
                    assert_int_equal(pc_block_span(count, pof2, lo, hi), s);
                }
        }
    /* rabenseifner.c execute(): the halving loop and the allgather replay, iteratively. */
    for (int pof2 = 1; pof2 <= 1024; pof2 <<= 1) {
        int nsteps_expected = 0;
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1) nsteps_expected++;
        assert_int_equal(pc_log2_pof2(pof2), nsteps_expected);
        for (int newrank = 0; newrank < pof2; newrank++) {
            int lo = 0, hi = pof2, mask = pof2 >> 1, nsteps = 0;
            int step_lo[32], step_hi[32];
            for (; mask > 0; mask >>= 1) {
                int newpeer = newrank ^ mask, mid = lo + (hi - lo) / 2;
                int keep_lo = newrank < newpeer ? lo : mid, keep_hi = newrank < newpeer ? mid : hi;
                int send_lo = newrank < newpeer ? mid : lo, send_hi = newrank < newpeer ? hi : mid;
                struct pc_halving_step h = pc_halving_step(newrank, pof2, nsteps);
                assert_int_equal(h.newpeer, newpeer);
                assert_int_equal(h.lo, lo);
                assert_int_equal(h.hi, hi);
                assert_int_equal(h.keep_lo, keep_lo);
                assert_int_equal(h.keep_hi, keep_hi);
                assert_int_equal(h.send_lo, send_lo);
                assert_int_equal(h.send_hi, send_hi);
                step_lo[nsteps] = lo;
                step_hi[nsteps] = hi;
                nsteps++;
                lo = keep_lo;
                hi = keep_hi;
            }
            assert_int_equal(lo, pc_halving_owned_block(newrank));
            assert_int_equal(hi, pc_halving_owned_block(newrank) + 1);
            for (int s = nsteps - 1; s >= 0; s--) {
                int newpeer = newrank ^ (pof2 >> (s + 1));
                int plo = step_lo[s], phi = step_hi[s], mid = plo + (phi - plo) / 2;
                int other_lo = lo == plo ? mid : plo, other_hi = lo == plo ? phi : mid;
                struct pc_doubling_step d = pc_doubling_step(newrank, pof2, s);
                assert_int_equal(d.newpeer, newpeer);
                assert_int_equal(d.own_lo, lo);
                assert_int_equal(d.own_hi, hi);
                assert_int_equal(d.recv_lo, other_lo);
                assert_int_equal(d.recv_hi, other_hi);
                lo = plo;
                hi = phi;
            }
        }
    }
    /* recursive_doubling.c: for (mask = 1; mask < pof2; mask <<= 1) newpeer = newrank ^ mask */
    for (int pof2 = 1; pof2 <= 1024; pof2 <<= 1)
        for (int newrank = 0; newrank < pof2; newrank++) {
            int s = 0;
            for (int mask = 1; mask < pof2; mask <<= 1, s++) assert_int_equal(pc_rd_newpeer(newrank, s), newrank ^ mask);
            assert_int_equal(s, pc_log2_pof2(pof2));
        }
}

/* ---- alltoall.pairwise -------------------------------------------------------------------------------- */

/* The element k of the block that src sends to dst. */
static int a2a_code(int src, int dst, int k) { return (src * MAXP + dst) * 16 + k; }

static const int a2a_counts[] = {0, 1, 3};

static void test_pairwise_out_of_place(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++)
        for (size_t ci = 0; ci < sizeof a2a_counts / sizeof a2a_counts[0]; ci++) {
            const int n = a2a_counts[ci];
            int *send = xcalloc((size_t)(P * P * n), sizeof(int));
            int *recv = xcalloc((size_t)(P * P * n), sizeof(int));
            int *arrived = xcalloc((size_t)(P * P), sizeof(int)); /* [dst][src] */
            for (int r = 0; r < P; r++)
                for (int d = 0; d < P; d++)
                    for (int k = 0; k < n; k++) {
                        send[(r * P + d) * n + k] = a2a_code(r, d, k);
                        recv[(r * P + d) * n + k] = -1;
                    }
            if (n > 0) { /* pairwise.c returns at once for zero-byte blocks */
                for (int r = 0; r < P; r++) {
                    memcpy(&recv[(r * P + r) * n], &send[(r * P + r) * n], sizeof(int) * (size_t)n);
                    arrived[r * P + r]++;
                }
                for (int i = 1; i < P; i++) {
                    int hits[MAXP] = {0};
                    for (int r = 0; r < P; r++) {
                        int dst = pc_pairwise_dst(r, P, i), src = pc_pairwise_src(r, P, i);
                        CHECK(dst >= 0 && dst < P && dst != r, "P=%d step %d rank %d sends to %d", P, i, r, dst);
                        CHECK(src >= 0 && src < P && src != r, "P=%d step %d rank %d receives from %d", P, i, r, src);
                        /* the receive dst posts at this step names r, and the send src posts names r */
                        CHECK(pc_pairwise_src(dst, P, i) == r, "P=%d step %d: %d sends to %d, which expects %d", P, i,
                              r, dst, pc_pairwise_src(dst, P, i));
                        CHECK(pc_pairwise_dst(src, P, i) == r, "P=%d step %d: %d expects %d, which sends to %d", P, i,
                              r, src, pc_pairwise_dst(src, P, i));
                        hits[dst]++;
                        /* the send buffer is never written, so every send reads pre-step data */
                        memcpy(&recv[(dst * P + r) * n], &send[(r * P + dst) * n], sizeof(int) * (size_t)n);
                        arrived[dst * P + r]++;
                    }
                    for (int r = 0; r < P; r++)
                        CHECK(hits[r] == 1, "P=%d step %d: rank %d receives %d messages", P, i, r, hits[r]);
                }
            }
            for (int r = 0; r < P; r++)
                for (int s = 0; s < P; s++) {
                    if (n > 0) CHECK(arrived[r * P + s] == 1, "P=%d n=%d: block %d->%d arrived %d times", P, n, s, r,
                                     arrived[r * P + s]);
                    for (int k = 0; k < n; k++)
                        CHECK(recv[(r * P + s) * n + k] == a2a_code(s, r, k), "P=%d n=%d rank %d block %d elem %d", P,
                              n, r, s, k);
                }
            free(send);
            free(recv);
            free(arrived);
        }
}

static void test_pairwise_in_place(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++)
        for (size_t ci = 0; ci < sizeof a2a_counts / sizeof a2a_counts[0]; ci++) {
            const int n = a2a_counts[ci];
            const size_t total = (size_t)(P * P * n);
            int *buf = xcalloc(total, sizeof(int));
            int *snap = xcalloc(total, sizeof(int));
            int *met = xcalloc((size_t)(P * P), sizeof(int));
            for (int r = 0; r < P; r++)
                for (int d = 0; d < P; d++)
                    for (int k = 0; k < n; k++) buf[(r * P + d) * n + k] = a2a_code(r, d, k);
            if (n > 0) {
                for (int i = 0; i < P; i++) {
                    memcpy(snap, buf, sizeof(int) * total);
                    int idle = 0;
                    for (int r = 0; r < P; r++) {
                        int partner = pc_pairwise_partner(r, P, i);
                        CHECK(partner >= 0 && partner < P, "P=%d step %d rank %d partner %d", P, i, r, partner);
                        CHECK(pc_pairwise_partner(partner, P, i) == r,
                              "P=%d step %d: %d pairs with %d, which pairs with %d (not an involution)", P, i, r,
                              partner, pc_pairwise_partner(partner, P, i));
                        if (partner == r) {
                            idle++;
                            continue;
                        }
                        met[r * P + partner]++;
                        /* r packs its block for partner, then receives partner's block for r in its place */
                        memcpy(&buf[(r * P + partner) * n], &snap[(partner * P + r) * n], sizeof(int) * (size_t)n);
                    }
                    CHECK(idle == (P % 2 ? 1 : (i % 2 ? 0 : 2)), "P=%d step %d: %d ranks idle", P, i, idle);
                }
            }
            for (int r = 0; r < P; r++)
                for (int s = 0; s < P; s++) {
                    if (n > 0) CHECK(met[r * P + s] == (r == s ? 0 : 1), "P=%d: %d exchanged with %d %d times", P, r, s,
                                     met[r * P + s]);
                    for (int k = 0; k < n; k++)
                        CHECK(buf[(r * P + s) * n + k] == a2a_code(s, r, k), "P=%d n=%d rank %d block %d elem %d: %d",
                              P, n, r, s, k, buf[(r * P + s) * n + k]);
                }
            free(buf);
            free(snap);
            free(met);
        }
}

/* ---- allreduce: counts to try at each P --------------------------------------------------------------- */

static int allreduce_counts(int P, int *out)
{
    int pof2 = pc_fold_make(0, P).pof2;
    int cand[] = {0, 1, 2, 3, pof2 - 1, pof2, pof2 + 1, 2 * pof2 + 3, 7 * pof2 - 1, 1001};
    int n = 0;
    for (size_t i = 0; i < sizeof cand / sizeof cand[0]; i++) {
        bool dup = cand[i] < 0;
        for (int j = 0; j < n && !dup; j++) dup = out[j] == cand[i];
        if (!dup) out[n++] = cand[i];
    }
    return n;
}

/* ---- allreduce.recursive_doubling with a non-commutative op -------------------------------------------- */

/* The ordered combination of ranks lo..hi of element elem; bad once any combination was out of order. */
struct sym {
    int lo, hi, elem;
    bool bad;
};

/* a op b, operands in this order. */
static struct sym sym_op(struct sym a, struct sym b)
{
    struct sym c = {a.lo, b.hi, a.elem, a.bad || b.bad || a.hi + 1 != b.lo || a.elem != b.elem};
    return c;
}

static void test_recursive_doubling_noncommutative(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++) {
        int counts[16];
        int ncounts = allreduce_counts(P, counts);
        for (int ci = 0; ci < ncounts; ci++) {
            const int count = counts[ci];
            const size_t total = (size_t)P * (size_t)count;
            struct sym *buf = xcalloc(total, sizeof *buf), *snap = xcalloc(total, sizeof *snap);
            for (int r = 0; r < P; r++)
                for (int e = 0; e < count; e++) buf[(size_t)r * count + e] = (struct sym){r, r, e, false};
            if (count > 0 && P > 1) { /* recursive_doubling.c returns after the start copy otherwise */
                struct pc_fold f0 = pc_fold_make(0, P);
                /* fold in (common.c): the odd rank computes (rank-1) op (rank) */
                for (int r = 1; r < 2 * f0.rem; r += 2)
                    for (int e = 0; e < count; e++)
                        buf[(size_t)r * count + e] = sym_op(buf[(size_t)(r - 1) * count + e], buf[(size_t)r * count + e]);
                const int nsteps = pc_log2_pof2(f0.pof2);
                for (int s = 0; s < nsteps; s++) {
                    memcpy(snap, buf, sizeof *buf * total);
                    for (int r = 0; r < P; r++) {
                        struct pc_fold f = pc_fold_make(r, P);
                        if (f.newrank < 0) continue;
                        int newpeer = pc_rd_newpeer(f.newrank, s);
                        CHECK(newpeer >= 0 && newpeer < f.pof2 && newpeer != f.newrank, "P=%d step %d newrank %d peer %d",
                              P, s, f.newrank, newpeer);
                        CHECK(pc_rd_newpeer(newpeer, s) == f.newrank, "P=%d step %d: pairing not symmetric", P, s);
                        int peer = pc_fold_real(&f, newpeer);
                        CHECK(pc_fold_make(peer, P).newrank == newpeer, "P=%d step %d: peer %d is not newrank %d", P, s,
                              peer, newpeer);
                        for (int e = 0; e < count; e++) {
                            struct sym mine = snap[(size_t)r * count + e], theirs = snap[(size_t)peer * count + e];
                            /* execute(): lower newrank's data first, on both sides */
                            buf[(size_t)r * count + e] = newpeer < f.newrank ? sym_op(theirs, mine) : sym_op(mine, theirs);
                        }
                    }
                }
                /* fold out (common.c): the odd rank returns the result to rank-1 */
                for (int r = 1; r < 2 * f0.rem; r += 2)
                    memcpy(&buf[(size_t)(r - 1) * count], &buf[(size_t)r * count], sizeof *buf * (size_t)count);
            }
            for (int r = 0; r < P; r++)
                for (int e = 0; e < count; e++) {
                    struct sym v = buf[(size_t)r * count + e];
                    CHECK(!v.bad && v.lo == 0 && v.hi == P - 1 && v.elem == e,
                          "P=%d count=%d rank %d elem %d holds ranks [%d, %d] of elem %d%s", P, count, r, e, v.lo, v.hi,
                          v.elem, v.bad ? " combined out of order" : "");
                }
            free(buf);
            free(snap);
        }
    }
}

/* ---- allreduce.rabenseifner with sums and contribution tracking ----------------------------------------- */

static int64_t rab_value(int rank, int e) { return (int64_t)(rank + 1) * 100003 + (int64_t)e * 7; }

static uint64_t all_ranks(int P) { return P == 64 ? ~UINT64_C(0) : (UINT64_C(1) << P) - 1; }

struct rabsim {
    int P, count;
    int64_t *val, *sval;     /* [rank][elem], sval the pre-step snapshot */
    uint64_t *who, *swho;    /* contributions combined into the element */
    int *nred;               /* reductions applied on this rank */
    int *nrecv;              /* allgather arrivals on this rank */
    int *tot_red;            /* reductions of each element, all ranks */
};

#define AT(a, r) ((a) + (size_t)(r) * (size_t)sim->count)

/* dst's element e = src's element e op dst's, as pc_reduce(in = received, inout = own) does. */
static void rab_reduce(struct rabsim *sim, int P, int dst, const int64_t *inval, const uint64_t *inwho, int e)
{
    uint64_t *w = AT(sim->who, dst);
    CHECK((inwho[e] & w[e]) == 0, "P=%d count=%d: rank %d elem %d combines contributions %#llx twice", P, sim->count,
          dst, e, (unsigned long long)(inwho[e] & w[e]));
    AT(sim->val, dst)[e] += inval[e];
    w[e] |= inwho[e];
    AT(sim->nred, dst)[e]++;
    sim->tot_red[e]++;
}

static void run_rabenseifner(int P, int count)
{
    struct rabsim S, *sim = &S;
    const size_t total = (size_t)P * (size_t)count;
    S.P = P;
    S.count = count;
    S.val = xcalloc(total, sizeof(int64_t));
    S.sval = xcalloc(total, sizeof(int64_t));
    S.who = xcalloc(total, sizeof(uint64_t));
    S.swho = xcalloc(total, sizeof(uint64_t));
    S.nred = xcalloc(total, sizeof(int));
    S.nrecv = xcalloc(total, sizeof(int));
    S.tot_red = xcalloc((size_t)count, sizeof(int));
    int64_t *expect = xcalloc((size_t)count, sizeof(int64_t));
    for (int e = 0; e < count; e++)
        for (int r = 0; r < P; r++) {
            AT(S.val, r)[e] = rab_value(r, e);
            AT(S.who, r)[e] = UINT64_C(1) << r;
            expect[e] += rab_value(r, e);
        }
    const uint64_t full = all_ranks(P);

    if (count > 0 && P > 1) { /* rabenseifner.c returns after the start copy otherwise */
        struct pc_fold f0 = pc_fold_make(0, P);
        const int nb = f0.pof2, nsteps = pc_log2_pof2(nb);
        int own_lo[MAXP], own_hi[MAXP]; /* per real rank: the block range it owns */

        for (int r = 1; r < 2 * f0.rem; r += 2) /* fold in */
            for (int e = 0; e < count; e++) rab_reduce(sim, P, r, AT(S.val, r - 1), AT(S.who, r - 1), e);
        for (int r = 0; r < P; r++) {
            own_lo[r] = 0;
            own_hi[r] = nb;
        }

        /* reduce-scatter by recursive halving */
        for (int s = 0; s < nsteps; s++) {
            memcpy(S.sval, S.val, sizeof(int64_t) * total);
            memcpy(S.swho, S.who, sizeof(uint64_t) * total);
            for (int r = 0; r < P; r++) {
                struct pc_fold f = pc_fold_make(r, P);
                if (f.newrank < 0) continue;
                struct pc_halving_step h = pc_halving_step(f.newrank, nb, s);
                CHECK(h.lo == own_lo[r] && h.hi == own_hi[r], "P=%d step %d rank %d: owns [%d,%d) but step says [%d,%d)",
                      P, s, r, own_lo[r], own_hi[r], h.lo, h.hi);
                CHECK(h.hi - h.lo == 2 * (nb >> (s + 1)), "P=%d step %d rank %d range of %d blocks", P, s, r, h.hi - h.lo);
                /* keep and send split [lo, hi) into two adjacent halves */
                CHECK(h.keep_hi - h.keep_lo == h.send_hi - h.send_lo && h.keep_hi - h.keep_lo == (h.hi - h.lo) / 2,
                      "P=%d step %d rank %d halves differ", P, s, r);
                CHECK((h.keep_lo == h.lo && h.keep_hi == h.send_lo && h.send_hi == h.hi) ||
                          (h.send_lo == h.lo && h.send_hi == h.keep_lo && h.keep_hi == h.hi),
                      "P=%d step %d rank %d: keep [%d,%d) and send [%d,%d) do not split [%d,%d)", P, s, r, h.keep_lo,
                      h.keep_hi, h.send_lo, h.send_hi, h.lo, h.hi);
                CHECK(h.newpeer >= 0 && h.newpeer < nb, "P=%d step %d rank %d newpeer %d", P, s, r, h.newpeer);
                int peer = pc_fold_real(&f, h.newpeer);
                struct pc_halving_step hp = pc_halving_step(h.newpeer, nb, s);
                CHECK(hp.newpeer == f.newrank, "P=%d step %d: %d pairs with %d, which pairs with %d", P, s, f.newrank,
                      h.newpeer, hp.newpeer);
                /* what the peer sends is what this rank receives: the same blocks, so the same count and place */
                CHECK(hp.send_lo == h.keep_lo && hp.send_hi == h.keep_hi && hp.keep_lo == h.send_lo &&
                          hp.keep_hi == h.send_hi,
                      "P=%d step %d: ranges of %d and %d do not match", P, s, r, peer);
                int e0 = pc_block_displ(count, nb, h.keep_lo), ne = pc_block_span(count, nb, h.keep_lo, h.keep_hi);
                for (int e = e0; e < e0 + ne; e++) rab_reduce(sim, P, r, AT(S.sval, peer), AT(S.swho, peer), e);
                own_lo[r] = h.keep_lo;
                own_hi[r] = h.keep_hi;
            }
        }

        /* each survivor owns one block, fully reduced: reduced on it lg(pof2) times (+1 for a fold receiver) */
        for (int r = 0; r < P; r++) {
            struct pc_fold f = pc_fold_make(r, P);
            if (f.newrank < 0) continue;
            int b = pc_halving_owned_block(f.newrank);
            CHECK(own_lo[r] == b && own_hi[r] == b + 1, "P=%d rank %d owns [%d,%d), expected block %d", P, r, own_lo[r],
                  own_hi[r], b);
            for (int e = pc_block_displ(count, nb, b); e < pc_block_displ(count, nb, b + 1); e++) {
                CHECK(AT(S.who, r)[e] == full && AT(S.val, r)[e] == expect[e],
                      "P=%d count=%d: owner %d of elem %d holds contributions %#llx", P, count, r, e,
                      (unsigned long long)AT(S.who, r)[e]);
                int want = nsteps + (r < 2 * f.rem ? 1 : 0);
                CHECK(AT(S.nred, r)[e] == want, "P=%d count=%d: elem %d reduced %d times on its owner %d, expected %d",
                      P, count, e, AT(S.nred, r)[e], r, want);
            }
        }
        for (int e = 0; e < count; e++)
            CHECK(S.tot_red[e] == P - 1, "P=%d count=%d: elem %d reduced %d times in all (P-1 = %d)", P, count, e,
                  S.tot_red[e], P - 1);

        /* allgather by recursive doubling, replaying the halving backwards */
        for (int s = nsteps - 1; s >= 0; s--) {
            memcpy(S.sval, S.val, sizeof(int64_t) * total);
            memcpy(S.swho, S.who, sizeof(uint64_t) * total);
            for (int r = 0; r < P; r++) {
                struct pc_fold f = pc_fold_make(r, P);
                if (f.newrank < 0) continue;
                struct pc_doubling_step d = pc_doubling_step(f.newrank, nb, s);
                CHECK(d.own_lo == own_lo[r] && d.own_hi == own_hi[r], "P=%d gather step %d rank %d sends [%d,%d) but owns [%d,%d)",
                      P, s, r, d.own_lo, d.own_hi, own_lo[r], own_hi[r]);
                CHECK(d.recv_hi - d.recv_lo == d.own_hi - d.own_lo && (d.recv_hi == d.own_lo || d.recv_lo == d.own_hi),
                      "P=%d gather step %d rank %d: [%d,%d) is not the adjacent half of [%d,%d)", P, s, r, d.recv_lo,
                      d.recv_hi, d.own_lo, d.own_hi);
                int peer = pc_fold_real(&f, d.newpeer);
                struct pc_doubling_step dp = pc_doubling_step(d.newpeer, nb, s);
                CHECK(dp.newpeer == f.newrank && dp.own_lo == d.recv_lo && dp.own_hi == d.recv_hi &&
                          dp.recv_lo == d.own_lo && dp.recv_hi == d.own_hi,
                      "P=%d gather step %d: ranges of %d and %d do not match", P, s, r, peer);
                int e0 = pc_block_displ(count, nb, d.recv_lo), ne = pc_block_span(count, nb, d.recv_lo, d.recv_hi);
                for (int e = e0; e < e0 + ne; e++) {
                    CHECK(AT(S.swho, peer)[e] == full, "P=%d gather step %d: %d sends partial elem %d to %d", P, s, peer,
                          e, r);
                    AT(S.val, r)[e] = AT(S.sval, peer)[e];
                    AT(S.who, r)[e] = AT(S.swho, peer)[e];
                    AT(S.nrecv, r)[e]++;
                }
                own_lo[r] = d.own_lo < d.recv_lo ? d.own_lo : d.recv_lo;
                own_hi[r] = d.own_hi > d.recv_hi ? d.own_hi : d.recv_hi;
            }
        }
        for (int r = 0; r < P; r++) {
            struct pc_fold f = pc_fold_make(r, P);
            if (f.newrank < 0) continue;
            CHECK(own_lo[r] == 0 && own_hi[r] == nb, "P=%d rank %d ends owning [%d,%d)", P, r, own_lo[r], own_hi[r]);
            int b = pc_halving_owned_block(f.newrank);
            for (int e = 0; e < count; e++) {
                bool mine = e >= pc_block_displ(count, nb, b) && e < pc_block_displ(count, nb, b + 1);
                CHECK(AT(S.nrecv, r)[e] == (mine ? 0 : 1), "P=%d count=%d: rank %d received elem %d %d times", P, count,
                      r, e, AT(S.nrecv, r)[e]);
            }
        }
        for (int r = 1; r < 2 * f0.rem; r += 2) { /* fold out */
            memcpy(AT(S.val, r - 1), AT(S.val, r), sizeof(int64_t) * (size_t)count);
            memcpy(AT(S.who, r - 1), AT(S.who, r), sizeof(uint64_t) * (size_t)count);
        }
    }
    for (int r = 0; r < P; r++)
        for (int e = 0; e < count; e++)
            CHECK(AT(S.val, r)[e] == expect[e] && AT(S.who, r)[e] == full,
                  "P=%d count=%d rank %d elem %d: %lld (contributions %#llx), expected %lld", P, count, r, e,
                  (long long)AT(S.val, r)[e], (unsigned long long)AT(S.who, r)[e], (long long)expect[e]);
    free(S.val);
    free(S.sval);
    free(S.who);
    free(S.swho);
    free(S.nred);
    free(S.nrecv);
    free(S.tot_red);
    free(expect);
}

#undef AT

static void test_rabenseifner_sums(void **state)
{
    (void)state;
    for (int P = 1; P <= MAXP; P++) {
        int counts[16];
        int ncounts = allreduce_counts(P, counts);
        for (int ci = 0; ci < ncounts; ci++) run_rabenseifner(P, counts[ci]);
    }
}

/* alltoall.bruck: every rank's slots simulated through the rotation, every step (with a snapshot, so a
 * step's sends read the data before the step) and the inverse rotation; block contents are (source, dest).
 * Also: in each step the send and receive peers are inverse (the receiver of my send sends to me in that
 * step's pairing) and the moved slot count matches what the step sends. */
static void test_bruck(void **state)
{
    (void)state;
    static int slots[MAXP][MAXP][2], snap[MAXP][MAXP][2];
    struct pc_bruck_step steps[512];
    for (int radix = 2; radix <= 5; radix++)
        for (int P = 1; P <= MAXP; P++) {
            int n = pc_bruck_steps(P, radix, steps, 512);
            CHECK(n <= 512, "P=%d radix=%d: %d steps", P, radix, n);
            int digits = 0;
            for (long w = 1; w < P; w *= radix) digits++;
            CHECK(n <= digits * (radix - 1), "P=%d radix=%d: %d steps for %d digits", P, radix, n, digits);
            for (int r = 0; r < P; r++)
                for (int i = 0; i < P; i++) {
                    slots[r][i][0] = r;
                    slots[r][i][1] = pc_bruck_rotate_from(r, P, i);
                }
            for (int s = 0; s < n; s++) {
                memcpy(snap, slots, sizeof snap);
                for (int r = 0; r < P; r++) {
                    int to = pc_bruck_send_peer(r, P, &steps[s]);
                    CHECK(pc_bruck_recv_peer(to, P, &steps[s]) == r, "P=%d radix=%d step %d: peers not inverse", P,
                          radix, s);
                    for (int i = 0; i < P; i++)
                        if (pc_bruck_moves(i, radix, &steps[s])) {
                            slots[to][i][0] = snap[r][i][0];
                            slots[to][i][1] = snap[r][i][1];
                        }
                }
            }
            for (int r = 0; r < P; r++)
                for (int src = 0; src < P; src++) {
                    int i = pc_bruck_final_slot(r, P, src);
                    CHECK(slots[r][i][0] == src && slots[r][i][1] == r,
                          "P=%d radix=%d: rank %d, block from %d found (%d -> %d) in slot %d", P, radix, r, src,
                          slots[r][i][0], slots[r][i][1], i);
                }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fold_renumbering),
        cmocka_unit_test(test_block_partition),
        cmocka_unit_test(test_matches_original_arithmetic),
        cmocka_unit_test(test_pairwise_out_of_place),
        cmocka_unit_test(test_pairwise_in_place),
        cmocka_unit_test(test_recursive_doubling_noncommutative),
        cmocka_unit_test(test_rabenseifner_sums),
        cmocka_unit_test(test_bruck),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
