/* alltoallv.padded_bruck (seed 002, ALGORITHMS.md V3): every block is padded to M, the largest block of the whole
 * count matrix, and the exchange runs as a uniform radix-R Bruck over M-byte slots (the steps of alltoall.bruck,
 * bruck_common.c). The rotation packs each outgoing block's real bytes into the front of its slot; after the
 * steps the real bytes of each arriving block (the receiver knows its size from recvcounts) are extracted into
 * the receive buffer. M is known at plan time: the count check of plancoll_plan_alltoallv already takes maxima
 * over ranks in its one allreduce (prob.max_block_bytes is the global maximum). Padding bytes are whatever the
 * slots held before (zeros at first): nobody reads them.
 * Non-contiguous datatypes go through MPI_Pack/MPI_Unpack (vblock.h); MPI_IN_PLACE needs nothing extra because
 * every block is copied into the slots before any byte moves.
 * Cost: sum over steps (alpha + k_s M beta + 2 k_s M c_copy) + (S + R) c_copy, k_s = slots step s moves, S and R
 * the bytes a rank sends and receives (the rotation and the extraction copy real bytes only); 0 when M = 0. */
#include <stdlib.h>

#include "../../core/plan.h"
#include "../bruck_common.h"
#include "vblock.h"

struct padded {
    struct pc_bruck_sched sched;
    size_t M;
    char *slots, *pack, *unpack;
};

static int setup(struct plancoll_plan_s *plan)
{
    const int P = plan->size;
    struct padded *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "padded bruck state");
    plan->impl = st;
    int err = pc_vblock_check(plan);
    if (!err) err = pc_bruck_sched_init(&st->sched, P, pc_bruck_radix(&plan->params, P));
    if (err) return err;
    if (plan->prob.max_block_bytes > SIZE_MAX / (size_t)P / 2)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "padded bruck: %d slots of %llu bytes", P,
                        (unsigned long long)plan->prob.max_block_bytes);
    st->M = (size_t)plan->prob.max_block_bytes;
    size_t most = (size_t)st->sched.most;
    if (st->M * most > INT32_MAX)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "padded bruck: a step of %zu bytes exceeds MPI's int count", st->M * most);
    st->slots = calloc(st->M * (size_t)P + 1, 1);
    st->pack = malloc(st->M * most + 1);
    st->unpack = malloc(st->M * most + 1);
    if (!st->slots || !st->pack || !st->unpack)
        return pc_error(PLANCOLL_ERR_NOMEM, "padded bruck scratch of %zu bytes", st->M * ((size_t)P + 2 * most));
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct padded *st = plan->impl;
    if (st) {
        pc_bruck_sched_free(&st->sched);
        free(st->slots);
        free(st->pack);
        free(st->unpack);
    }
    free(st);
    plan->impl = NULL;
}

static int execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct padded *st = plan->impl;
    const int P = plan->size, r = plan->rank;
    const size_t M = st->M;
    if (M == 0) return PLANCOLL_SUCCESS; /* every block of every rank is empty */
    struct pc_vside out = pc_vside_send(plan), in = pc_vside_recv(plan);
    const void *src = plan->in_place ? rbuf : sbuf;
    int err = PLANCOLL_SUCCESS;
    for (int i = 0; i < P && !err; i++) err = pc_vblock_pack(plan, &out, src, pc_bruck_rotate_from(r, P, i), st->slots + (size_t)i * M);
    if (!err)
        err = pc_bruck_exchange(plan, &st->sched, st->slots, M, st->pack, st->unpack, pc_vblock_unit(plan),
                                PC_TAG_ALLTOALLV + 1);
    for (int j = 0; j < P && !err; j++)
        err = pc_vblock_unpack(plan, &in, rbuf, j, st->slots + (size_t)pc_bruck_final_slot(r, P, j) * M);
    return err;
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    double M = (double)p->max_block_bytes;
    if (M == 0) return 0.0;
    return pc_bruck_steps_cost(P, pc_bruck_radix(params, P), M, mm) +
           (double)(p->send_total_bytes + p->recv_total_bytes) * mm->copy_us_per_b;
}

const struct pc_algorithm pc_alltoallv_padded_bruck = {
    .name = "alltoallv.padded_bruck",
    .collective = PC_ALLTOALLV,
    .summary = "Bruck over blocks padded to the largest block, radix 2 or 4 (small, even blocks)",
    .variants = pc_bruck_variants,
    .estimate = estimate,
    .setup = setup,
    .execute = execute,
    .teardown = teardown,
};
