/* alltoallv.twophase_bruck ([BruckNU]'s future work, docs/algorithms.md): Bruck's radix-R steps over blocks of their
 * real sizes. [BruckNU]'s two-phase Bruck exchanges, in every step of every call, the sizes of the blocks about
 * to move (metadata) and then the data, with a temporary buffer for intermediate blocks too big for their place
 * in the receive buffer. A plan's counts are fixed, so here the metadata moves once, at plan time: a uniform Bruck
 * over one 64-bit size per slot (bruck_common.c) tells each rank the size of every block it will forward, and setup
 * turns that into per-step copy lists (which block goes where in the outgoing message, where each incoming block
 * is kept until its next move). An execution is then only: per step, the copies into one message of exactly the
 * bytes needed, one send and one receive, the copies out. No rotation: first moves read the send buffer, last
 * moves write the receive buffer. Intermediate blocks wait in the receive buffer at the place of the block that
 * slot ends with when they fit (contiguous receive types), otherwise in a temporary buffer sized at plan time.
 * docs/alltoallv-bruck.md has the design and its plan-time cost (one extra allreduce, ceil(log_R P)(R-1) metadata
 * messages of about P/R 8-byte sizes, O(P log P) memory for the copy lists).
 * Cost (approximation: estimate() sees only per-rank totals, not the per-step sizes setup computes): with
 * b = S / P the average block of the busiest rank (S its bytes sent),
 *   sum over steps (msg_s(k_s b) + 2 transpose(k_s b) + shift_turns) the steps as pc_bruck_steps_cost
 *                                                                    (bruck_common.h)
 *   + shm_copy(1, 1, b)                                  the block to itself (none in place),
 * and 0 when no rank sends anything (no step sends a message). Exact for uniform counts. */
#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "exec/bruck_common.h"
#include "exec/measure.h"
#include "exec/alltoallv/twophase_schedule.h"
#include "exec/alltoallv/vblock.h"
#include "exec/steps.h"
#include "exec/busy.h"

struct twophase {
    struct pc_bruck_uniform meta; /* setup only: the steps, and the metadata pass's 8-byte slots */
    struct pc_tp_schedule tp;
    char *temp, *out, *in;
    struct pc_steps steps; /* the execution in progress: one step per Bruck step */
};

/* Builds the copy lists: the metadata pass (a uniform Bruck over one 64-bit size per slot, keeping every step's
 * incoming sizes), then pc_tp_build. Collective: every rank calls it (P > 1), and a rank whose setup already
 * failed (local) says so before the pass instead of leaving its peers waiting in it. */
static int build(struct plancoll_plan_s *plan, struct twophase *st, int local)
{
    const int P = plan->size;
    const struct pc_bruck_sched *b = &st->meta.sched;
    int moves = local ? 0 : b->slot_start[b->nsteps];
    struct pc_vside out = pc_vside_send(plan), in = pc_vside_recv(plan);
    const bool contiguous = plan->prob.contiguous;
    uint64_t *v = local ? NULL : malloc(sizeof(uint64_t) * (4 * (size_t)P + (size_t)moves + 1));
    if (!local && !v) local = pc_error(PLANCOLL_ERR_NOMEM, "twophase bruck metadata");
    int err = pc_agree_error(plan, local);
    if (err) {
        free(v);
        return err;
    }
    uint64_t *send_bytes = v, *recv_bytes = v + P, *send_off = v + 2 * P, *recv_off = v + 3 * P;
    uint64_t *incoming = v + 4 * (size_t)P;
    for (int j = 0; j < P; j++) {
        send_bytes[j] = pc_vblock_bytes(&out, j);
        recv_bytes[j] = pc_vblock_bytes(&in, j);
        send_off[j] = contiguous ? pc_vblock_offset(&out, j) : 0;
        recv_off[j] = contiguous ? pc_vblock_offset(&in, j) : 0;
    }
    pc_tp_meta_init(P, plan->rank, send_bytes, (uint64_t *)(void *)st->meta.slots);
    err = pc_bruck_uniform_run(plan, &st->meta, MPI_BYTE, PC_TAG_TWOPHASE_META, (char *)incoming);
    if (!err) {
        struct pc_tp_input tin = {
            .P = P, .rank = plan->rank, .radix = b->radix, .steps = b->steps, .nsteps = b->nsteps,
            .slot_start = b->slot_start, .slots = b->slots, .in_place = plan->in_place, .rooms = contiguous,
            .send_bytes = send_bytes, .recv_bytes = recv_bytes, .send_off = contiguous ? send_off : NULL,
            .recv_off = contiguous ? recv_off : NULL, .incoming = incoming};
        int rc = pc_tp_build(&tin, &st->tp);
        if (rc == PC_TP_NOMEM) err = pc_error(PLANCOLL_ERR_NOMEM, "twophase bruck copy lists");
        if (rc == PC_TP_INCONSISTENT)
            err = pc_error(PLANCOLL_ERR_MISMATCH, "twophase bruck: a forwarded block's size disagrees with recvcounts");
    }
    free(v);
    return err;
}

static int setup(struct plancoll_plan_s *plan)
{
    struct twophase *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "twophase bruck state");
    plan->impl = st;
    int err = pc_vblock_check(plan);
    if (!err) err = pc_bruck_uniform_init(&st->meta, plan->size, pc_bruck_radix(&plan->params, plan->size), sizeof(uint64_t));
    if (plan->size > 1) err = build(plan, st, err);
    pc_bruck_uniform_free(&st->meta); /* the copy lists hold all that execute needs */
    if (err) return err;
    const struct pc_tp_schedule *tp = &st->tp;
    if (tp->temp_bytes >= SIZE_MAX / 2 || tp->max_send >= SIZE_MAX / 2 || tp->max_recv >= SIZE_MAX / 2)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "twophase bruck: scratch beyond the address space");
    st->temp = malloc((size_t)tp->temp_bytes + 1);
    st->out = malloc((size_t)tp->max_send + 1);
    st->in = malloc((size_t)tp->max_recv + 1);
    if (!st->temp || !st->out || !st->in)
        return pc_error(PLANCOLL_ERR_NOMEM, "twophase bruck scratch of %llu bytes",
                        (unsigned long long)(tp->temp_bytes + tp->max_send + tp->max_recv));
    return PLANCOLL_SUCCESS;
}

static void teardown(struct plancoll_plan_s *plan)
{
    struct twophase *st = plan->impl;
    if (st) {
        pc_bruck_uniform_free(&st->meta);
        pc_tp_free(&st->tp);
        free(st->temp);
        free(st->out);
        free(st->in);
    }
    free(st);
    plan->impl = NULL;
}

/* One copy between an area and a message: memcpy, or the datatype for whole user blocks of non-contiguous plans. */
static int copy(const struct plancoll_plan_s *plan, const struct pc_tp_copy *c, char *const area[PC_TP_NAREAS],
                char *msg, bool into_msg)
{
    if (c->typed && !plan->prob.contiguous) {
        struct pc_vside side = c->area == PC_TP_SEND ? pc_vside_send(plan) : pc_vside_recv(plan);
        return into_msg ? pc_vblock_pack(plan, &side, area[c->area], c->block, msg + c->stage)
                        : pc_vblock_unpack(plan, &side, area[c->area], c->block, msg + c->stage);
    }
    if (into_msg)
        memcpy(msg + c->stage, area[c->area] + c->off, (size_t)c->bytes);
    else
        memcpy(area[c->area] + c->off, msg + c->stage, (size_t)c->bytes);
    return PLANCOLL_SUCCESS;
}

/* The three areas copies name, for the execution in progress. */
static void areas(const struct plancoll_plan_s *plan, const struct twophase *st, char *area[PC_TP_NAREAS])
{
    area[PC_TP_SEND] = (char *)(uintptr_t)plan->run_sendbuf;
    area[PC_TP_RECV] = plan->run_recvbuf;
    area[PC_TP_TEMP] = st->temp;
}

/* Step s: the receive posted before the packing (an early message then lands in place rather than in MPI's
 * unexpected queue), the copies into the message, the send. */
static int post(struct plancoll_plan_s *plan, struct pc_steps *s, int i)
{
    struct twophase *st = plan->impl;
    const struct pc_tp_step *step = &st->tp.steps[i];
    const MPI_Datatype unit = pc_vblock_unit(plan);
    const int tag = pc_tag(plan, PC_TAG_TWOPHASE_DATA);
    char *area[PC_TP_NAREAS];
    areas(plan, st, area);
    MPI_Request *recv = NULL;
    if (step->recv_bytes) {
        recv = pc_steps_slot(s);
        PC_MPI_CHECK(pc_mpi_irecv(st->in, (MPI_Count)step->recv_bytes, unit, step->recv_peer, tag, plan->comm,
                                 recv)); /* large count: a step may carry over 2 GiB */
    }
    int err = PLANCOLL_SUCCESS;
    for (int c = step->pack0; c < step->pack0 + step->npack && !err; c++)
        err = copy(plan, &st->tp.copies[c], area, st->out, true);
    if (err) {
        if (recv) { /* the pending receive must not outlive the execution */
            MPI_Cancel(recv);
            MPI_Request_free(recv);
        }
        return err;
    }
    /* A step that receives nothing would not wait for anyone: a rank whose steps all send only (one rank feeding
     * the others) would finish on eager copies and run executions ahead, piling unexpected messages onto its
     * peers (2 nodes x 4 ranks, one rank sending nearly everything: 66 us per execution in 1 ms loops, 410 us
     * in 20 ms loops). Its send is then synchronous: the step ends when the peer has matched it, in the same
     * execution. */
    if (step->send_bytes)
        PC_MPI_CHECK((step->recv_bytes ? pc_mpi_isend : pc_mpi_issend)(st->out, (MPI_Count)step->send_bytes, unit,
                                                                       step->send_peer, tag, plan->comm,
                                                                       pc_steps_slot(s)));
    return PLANCOLL_SUCCESS;
}

/* After step s: the copies out of the message, then the fixes from the temporary buffer. */
static int finish(struct plancoll_plan_s *plan, struct pc_steps *s, int i)
{
    (void)s;
    struct twophase *st = plan->impl;
    const struct pc_tp_step *step = &st->tp.steps[i];
    char *area[PC_TP_NAREAS];
    areas(plan, st, area);
    int err = PLANCOLL_SUCCESS;
    for (int c = step->unpack0; c < step->unpack0 + step->nunpack && !err; c++)
        err = copy(plan, &st->tp.copies[c], area, st->in, false);
    for (int c = step->fix0; c < step->fix0 + step->nfix && !err; c++)
        err = copy(plan, &st->tp.copies[c], area, st->temp, false);
    return err;
}

static int start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct twophase *st = plan->impl;
    const int r = plan->rank;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    pc_steps_begin(&st->steps, st->tp.nsteps);
    if (plan->in_place) return PLANCOLL_SUCCESS;
    return pc_copy_typed(plan, pc_elem_ptr(sbuf, &plan->stype, plan->sdispls[r]), plan->sendcounts[r], &plan->stype,
                         pc_elem_ptr(rbuf, &plan->rtype, plan->rdispls[r]), plan->recvcounts[r], &plan->rtype);
}

static int advance(struct plancoll_plan_s *plan, bool *done)
{
    struct twophase *st = plan->impl;
    return pc_steps_advance(plan, &st->steps, post, finish, done);
}

static double estimate(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    if (p->max_send_bytes == 0) return 0.0;
    double b = (double)p->max_send_bytes / P;
    return pc_bruck_steps_cost(p, pc_bruck_radix(params, P), b, mm) + (p->in_place ? 0.0 : pc_cost_shm_copy(mm, 1, 1, b));
}


/* Busy (exec/busy.h): the steps' packing, messages and tests, and the copy of the rank's own block. */
static double busy(const struct pc_problem *p, const struct pc_params *params, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    if (p->max_send_bytes == 0) return 0.0;
    double b = (double)p->max_send_bytes / P;
    return pc_busy_bruck_steps(p, pc_bruck_radix(params, P), b, mm) + (p->in_place ? 0.0 : pc_cost_shm_copy(mm, 1, 1, b));
}

const struct pc_algorithm pc_alltoallv_twophase_bruck = {
    .name = "alltoallv.twophase_bruck",
    .collective = PC_ALLTOALLV,
    .summary = "Bruck over blocks of their real sizes, every step's sizes computed at plan time, radix 2 or 4",
    .params = PC_PARAM_RADIX,
    .variants = pc_bruck_variants,
    .inapplicable = pc_vblock_inapplicable,
    .estimate = estimate,
    .busy = busy,
    .setup = setup,
    .execute = pc_steps_execute,
    .start = start,
    .advance = advance,
    .teardown = teardown,
};
