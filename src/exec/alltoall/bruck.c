/* alltoall.bruck: Bruck's log-step alltoall with a radix parameter R (radix 2: ceil(lg P) steps). A local
 * rotation puts the block for (r+i) mod P in slot i; each step sends every slot whose base-R digit at one
 * position equals one value v to (r + v R^d) mod P and receives the same slots from (r - v R^d) mod P; the
 * inverse rotation puts slot i in recv block (r-i) mod P (derivation in schedule.h; the inverse rotation printed
 * in seed 002 is off). Each step moves about P/R blocks, so it wins for small blocks and loses for large ones.
 * Cost: sum over steps (alpha + k_s m beta) + (2 P + 2 sum_s k_s) m c_copy, k_s = slots moved in step s. */
#include <stdlib.h>
#include <string.h>

#include "../../core/plan.h"
#include "../schedule.h"

#define PC_BRUCK_MAX_STEPS 256

struct bruck {
    int radix, nsteps;
    struct pc_bruck_step steps[PC_BRUCK_MAX_STEPS];
    int *slot_start; /* [nsteps + 1] into slots */
    int *slots;      /* moving slots of every step */
    char *tmp, *pack, *unpack;
    size_t m;
};

static int effective_radix(const struct pc_params *params, int P)
{
    int radix = params->radix ? params->radix : 2;
    if (radix > P) radix = P;
    return radix < 2 ? 2 : radix;
}

static const char *inapplicable(const struct pc_problem *p)
{
    return p->contiguous ? NULL : "Bruck moves packed bytes: needs contiguous datatypes on every rank";
}

static int variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    static const int radices[] = {2, 4};
    int n = 0;
    for (int i = 0; i < 2 && n < max; i++) {
        if (i > 0 && radices[i] > p->shape.nranks) break; /* same schedule as a smaller radix */
        out[n++].radix = radices[i];
    }
    return n;
}

static int setup(struct plancoll_plan_s *plan)
{
    const int P = plan->size;
    struct bruck *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "bruck state");
    plan->impl = st;
    st->radix = effective_radix(&plan->params, P);
    st->nsteps = pc_bruck_steps(P, st->radix, st->steps, PC_BRUCK_MAX_STEPS);
    if (st->nsteps > PC_BRUCK_MAX_STEPS) return pc_error(PLANCOLL_ERR_OVERFLOW, "bruck: too many steps");
    st->m = (size_t)plan->prob.block_bytes;
    st->slot_start = malloc(sizeof(int) * ((size_t)st->nsteps + 1));
    st->slots = malloc(sizeof(int) * ((size_t)st->nsteps * (size_t)P + 1));
    if (!st->slot_start || !st->slots) return pc_error(PLANCOLL_ERR_NOMEM, "bruck schedule");
    int n = 0, most = 0;
    for (int s = 0; s < st->nsteps; s++) {
        st->slot_start[s] = n;
        for (int i = 0; i < P; i++)
            if (pc_bruck_moves(i, st->radix, &st->steps[s])) st->slots[n++] = i;
        if (n - st->slot_start[s] > most) most = n - st->slot_start[s];
    }
    st->slot_start[st->nsteps] = n;
    st->tmp = malloc(st->m * (size_t)P + 1);
    st->pack = malloc(st->m * (size_t)most + 1);
    st->unpack = malloc(st->m * (size_t)most + 1);
    if (!st->tmp || !st->pack || !st->unpack)
        return pc_error(PLANCOLL_ERR_NOMEM, "bruck scratch of %zu bytes", st->m * (size_t)(P + 2 * most));
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct bruck *st = plan->impl;
    if (st) {
        free(st->slot_start);
        free(st->slots);
        free(st->tmp);
        free(st->pack);
        free(st->unpack);
    }
    free(st);
    plan->impl = NULL;
}

/* Block j of a buffer of count-element blocks of a contiguous type. */
static inline char *block(const void *buf, const struct pc_typeinfo *t, int count, int j)
{
    return pc_elem_ptr(buf, t, (MPI_Aint)j * count) + t->true_lb;
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct bruck *st = plan->impl;
    const int P = plan->size, r = plan->rank;
    const size_t m = st->m;
    if (m == 0) return PLANCOLL_SUCCESS;
    const void *src = plan->in_place ? rbuf : sbuf;
    const struct pc_typeinfo *stype = plan->in_place ? &plan->rtype : &plan->stype;
    int scount = plan->in_place ? plan->recvcount : plan->sendcount;
    for (int i = 0; i < P; i++) memcpy(st->tmp + (size_t)i * m, block(src, stype, scount, pc_bruck_rotate_from(r, P, i)), m);
    for (int s = 0; s < st->nsteps; s++) {
        const int *slots = st->slots + st->slot_start[s];
        int k = st->slot_start[s + 1] - st->slot_start[s];
        for (int i = 0; i < k; i++) memcpy(st->pack + (size_t)i * m, st->tmp + (size_t)slots[i] * m, m);
        MPI_Request reqs[2];
        int bytes = (int)(m * (size_t)k);
        PC_MPI_CHECK(MPI_Irecv(st->unpack, bytes, MPI_BYTE, pc_bruck_recv_peer(r, P, &st->steps[s]), PC_TAG_ALLTOALL + 1,
                               plan->comm, &reqs[0]));
        PC_MPI_CHECK(MPI_Isend(st->pack, bytes, MPI_BYTE, pc_bruck_send_peer(r, P, &st->steps[s]), PC_TAG_ALLTOALL + 1,
                               plan->comm, &reqs[1]));
        int err = pc_wait_all(plan, 2, reqs);
        if (err) return err;
        for (int i = 0; i < k; i++) memcpy(st->tmp + (size_t)slots[i] * m, st->unpack + (size_t)i * m, m);
    }
    for (int j = 0; j < P; j++)
        memcpy(block(rbuf, &plan->rtype, plan->recvcount, j), st->tmp + (size_t)pc_bruck_final_slot(r, P, j) * m, m);
    return PLANCOLL_SUCCESS;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    struct pc_bruck_step steps[PC_BRUCK_MAX_STEPS];
    int radix = effective_radix(params, P);
    int n = pc_bruck_steps(P, radix, steps, PC_BRUCK_MAX_STEPS);
    double m = (double)p->block_bytes, t = 2.0 * P * m * mm->copy_us_per_b;
    for (int s = 0; s < n && s < PC_BRUCK_MAX_STEPS; s++) {
        int k = 0;
        for (int i = 0; i < P; i++) k += pc_bruck_moves(i, radix, &steps[s]);
        t += mm->alpha_us + k * m * mm->beta_us_per_b + 2.0 * k * m * mm->copy_us_per_b;
    }
    return t;
}

const struct pc_algorithm pc_alltoall_bruck = {
    .name = "alltoall.bruck",
    .collective = PC_ALLTOALL,
    .summary = "Bruck's log-step alltoall, radix 2 or 4 (small blocks)",
    .inapplicable = inapplicable,
    .variants = variants,
    .estimate = estimate,
    .setup = setup,
    .execute = execute,
    .teardown = teardown,
};
