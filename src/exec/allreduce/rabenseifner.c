/* allreduce.rabenseifner: after the fold, a reduce-scatter by recursive halving (each step keeps half of the
 * current range and reduces the peer's copy of it) then an allgather by recursive doubling; the vector is cut
 * into pof2 blocks of count/pof2 (+1) elements, so any count works, 0 included. Each element is reduced by
 * exactly one rank and then copied, so every rank ends bit-identical. The halving reorders operands, so the op
 * must be commutative. Cost: 2 lg P alpha + 2 (P-1)/P n beta + (P-1)/P n gamma. */
#include <math.h>
#include <stdlib.h>

#include "common.h"

struct rab {
    void *raw, *tmp;
    int *cnts, *disps; /* [pof2] */
};

static const char *inapplicable(const struct pc_problem *p)
{
    return p->commutative ? NULL : "reduce-scatter reorders operands: needs a commutative op";
}

static int setup(struct plancoll_plan_s *plan)
{
    struct rab *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "rabenseifner state");
    plan->impl = st;
    struct pc_fold f = pc_fold_make(plan->rank, plan->size);
    st->cnts = malloc(sizeof(int) * (size_t)f.pof2);
    st->disps = malloc(sizeof(int) * (size_t)f.pof2);
    if (!st->cnts || !st->disps) return pc_error(PLANCOLL_ERR_NOMEM, "rabenseifner blocks");
    for (int i = 0, d = 0; i < f.pof2; i++) {
        st->cnts[i] = plan->count / f.pof2 + (i < plan->count % f.pof2 ? 1 : 0);
        st->disps[i] = d;
        d += st->cnts[i];
    }
    return pc_alloc_typed(plan->count, &plan->rtype, &st->raw, &st->tmp);
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct rab *st = plan->impl;
    if (st) {
        free(st->raw);
        free(st->cnts);
        free(st->disps);
    }
    free(st);
    plan->impl = NULL;
}

static int sum_counts(const int *cnts, int from, int to)
{
    int s = 0;
    for (int i = from; i < to; i++) s += cnts[i];
    return s;
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct rab *st = plan->impl;
    int err = pc_allreduce_start(plan, sbuf, rbuf);
    if (err || plan->count == 0 || plan->size == 1) return err;
    struct pc_fold f = pc_fold_make(plan->rank, plan->size);
    err = pc_allreduce_fold_in(plan, &f, rbuf, st->tmp);
    if (err) return err;
    if (f.newrank >= 0) {
        const struct pc_typeinfo *t = &plan->rtype;
        /* Reduce-scatter: [lo, hi) is the block range this rank still owns. */
        int lo = 0, hi = f.pof2, mask = f.pof2 >> 1;
        int step_lo[32], step_hi[32], nsteps = 0;
        for (; mask > 0; mask >>= 1) {
            int newpeer = f.newrank ^ mask, mid = lo + (hi - lo) / 2;
            int keep_lo = f.newrank < newpeer ? lo : mid, keep_hi = f.newrank < newpeer ? mid : hi;
            int send_lo = f.newrank < newpeer ? mid : lo, send_hi = f.newrank < newpeer ? hi : mid;
            int peer = pc_fold_real(&f, newpeer);
            int rcount = sum_counts(st->cnts, keep_lo, keep_hi);
            err = pc_allreduce_exchange(plan, peer, pc_elem_ptr(rbuf, t, st->disps[send_lo]),
                                        sum_counts(st->cnts, send_lo, send_hi),
                                        pc_elem_ptr(st->tmp, t, st->disps[keep_lo]), rcount);
            if (err) return err;
            err = pc_reduce(&plan->red, pc_elem_ptr(st->tmp, t, st->disps[keep_lo]),
                            pc_elem_ptr(rbuf, t, st->disps[keep_lo]), rcount);
            if (err) return err;
            step_lo[nsteps] = lo;
            step_hi[nsteps] = hi;
            nsteps++;
            lo = keep_lo;
            hi = keep_hi;
        }
        /* Allgather: replay the steps backwards, sending what this rank owns and receiving the other half. */
        for (int s = nsteps - 1; s >= 0; s--) {
            int newpeer = f.newrank ^ (f.pof2 >> (s + 1));
            int plo = step_lo[s], phi = step_hi[s], mid = plo + (phi - plo) / 2;
            int other_lo = lo == plo ? mid : plo, other_hi = lo == plo ? phi : mid;
            err = pc_allreduce_exchange(plan, pc_fold_real(&f, newpeer), pc_elem_ptr(rbuf, t, st->disps[lo]),
                                        sum_counts(st->cnts, lo, hi), pc_elem_ptr(rbuf, t, st->disps[other_lo]),
                                        sum_counts(st->cnts, other_lo, other_hi));
            if (err) return err;
            lo = plo;
            hi = phi;
        }
    }
    return pc_allreduce_fold_out(plan, &f, rbuf);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *m)
{
    (void)params;
    double P = p->shape.nranks, n = (double)p->count * (double)p->elem_bytes;
    if (P <= 1) return 0;
    double pof2 = pow(2, floor(log2(P)));
    double t = 2 * log2(pof2) * m->alpha_us + 2 * (pof2 - 1) / pof2 * n * m->beta_us_per_b +
               (pof2 - 1) / pof2 * n * m->gamma_us_per_b;
    if (pof2 != P) t += 2 * (m->alpha_us + n * m->beta_us_per_b) + n * m->gamma_us_per_b;
    return t;
}

const struct pc_algorithm pc_allreduce_rabenseifner = {
    .name = "allreduce.rabenseifner",
    .collective = PC_ALLREDUCE,
    .summary = "reduce-scatter (recursive halving) + allgather (recursive doubling), commutative ops",
    .inapplicable = inapplicable,
    .estimate = estimate,
    .setup = setup,
    .execute = execute,
    .teardown = teardown,
};
