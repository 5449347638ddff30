/* The Bruck family's shared pieces (bruck_common.h). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exec/bruck_common.h"
#include "exec/cost.h"

int pc_bruck_radix(const struct pc_params *params, int P)
{
    int radix = params->radix ? params->radix : 2;
    if (radix > P) radix = P;
    return radix < 2 ? 2 : radix;
}

int pc_bruck_variants(const struct pc_problem *p, struct pc_params *out, int max)
{
    static const int radices[] = {2, 4};
    int n = 0;
    for (int i = 0; i < 2 && n < max; i++) {
        if (i > 0 && radices[i] > p->shape.nranks) break; /* same schedule as a smaller radix */
        memset(&out[n], 0, sizeof out[n]);
        out[n++].radix = radices[i];
    }
    return n;
}

int pc_bruck_sched_init(struct pc_bruck_sched *b, int P, int radix)
{
    memset(b, 0, sizeof *b);
    b->P = P;
    b->radix = radix;
    b->nsteps = pc_bruck_steps(P, radix, b->steps, PC_BRUCK_MAX_STEPS);
    if (b->nsteps > PC_BRUCK_MAX_STEPS) return pc_error(PLANCOLL_ERR_OVERFLOW, "bruck: %d steps", b->nsteps);
    b->slot_start = malloc(sizeof(int) * ((size_t)b->nsteps + 1));
    b->slots = malloc(sizeof(int) * ((size_t)b->nsteps * (size_t)P + 1));
    if (!b->slot_start || !b->slots) return pc_error(PLANCOLL_ERR_NOMEM, "bruck schedule");
    b->most = pc_bruck_slot_lists(P, radix, b->steps, b->nsteps, b->slot_start, b->slots);
    return PLANCOLL_SUCCESS;
}

void pc_bruck_sched_free(struct pc_bruck_sched *b)
{
    free(b->slot_start);
    free(b->slots);
    b->slot_start = b->slots = NULL;
}

int pc_bruck_uniform_init(struct pc_bruck_uniform *u, int P, int radix, size_t m)
{
    memset(u, 0, sizeof *u);
    int err = pc_bruck_sched_init(&u->sched, P, radix);
    if (err) return err;
    size_t most = (size_t)u->sched.most;
    /* the slots, the pack and the unpack area: (P + 2 most) m bytes, most <= P (messages go with large counts) */
    if (m > SIZE_MAX / 4 / (size_t)P)
        return pc_error(PLANCOLL_ERR_OVERFLOW, "bruck: %d slots of %zu bytes overflow the address space", P, m);
    u->m = m;
    u->slots = calloc(m * (size_t)P + 1, 1);
    u->pack = malloc(m * most + 1);
    u->unpack = malloc(m * most + 1);
    if (!u->slots || !u->pack || !u->unpack)
        return pc_error(PLANCOLL_ERR_NOMEM, "bruck scratch of %zu bytes", m * ((size_t)P + 2 * most));
    return PLANCOLL_SUCCESS;
}

void pc_bruck_uniform_free(struct pc_bruck_uniform *u)
{
    pc_bruck_sched_free(&u->sched);
    free(u->slots);
    free(u->pack);
    free(u->unpack);
    u->slots = u->pack = u->unpack = NULL;
}

int pc_bruck_uniform_setup(struct plancoll_plan_s *plan, size_t m)
{
    struct pc_bruck_uniform *u = calloc(1, sizeof *u);
    if (!u) return pc_error(PLANCOLL_ERR_NOMEM, "bruck state");
    plan->impl = u;
    return pc_bruck_uniform_init(u, plan->size, pc_bruck_radix(&plan->params, plan->size), m);
}

void pc_bruck_uniform_teardown(struct plancoll_plan_s *plan)
{
    struct pc_bruck_uniform *u = plan->impl;
    if (u) pc_bruck_uniform_free(u);
    free(u);
    plan->impl = NULL;
}

/* Step s: the receive posted before the packing, so that an early message lands in place rather than in MPI's
 * unexpected queue; a step's message may exceed 2 GiB: large-count calls. */
static int bruck_post(struct plancoll_plan_s *plan, struct pc_steps *st, int s)
{
    struct pc_bruck_uniform *u = PC_STEPS_OWNER(st, struct pc_bruck_uniform, steps);
    const struct pc_bruck_sched *b = &u->sched;
    const int P = b->P, r = plan->rank;
    const size_t m = u->m;
    const int *slots = b->slots + b->slot_start[s];
    int k = b->slot_start[s + 1] - b->slot_start[s];
    MPI_Count bytes = (MPI_Count)(m * (size_t)k);
    PC_MPI_CHECK(pc_mpi_irecv(u->unpack, bytes, u->unit, pc_bruck_recv_peer(r, P, &b->steps[s]), u->tag, plan->comm,
                             pc_steps_slot(st)));
    for (int i = 0; i < k; i++) memcpy(u->pack + (size_t)i * m, u->slots + (size_t)slots[i] * m, m);
    PC_MPI_CHECK(pc_mpi_isend(u->pack, bytes, u->unit, pc_bruck_send_peer(r, P, &b->steps[s]), u->tag, plan->comm,
                             pc_steps_slot(st)));
    return PLANCOLL_SUCCESS;
}

/* Step s's incoming slots into place (and into the record). */
static int bruck_finish(struct plancoll_plan_s *plan, struct pc_steps *st, int s)
{
    (void)plan;
    struct pc_bruck_uniform *u = PC_STEPS_OWNER(st, struct pc_bruck_uniform, steps);
    const struct pc_bruck_sched *b = &u->sched;
    const size_t m = u->m;
    const int *slots = b->slots + b->slot_start[s];
    int k = b->slot_start[s + 1] - b->slot_start[s];
    for (int i = 0; i < k; i++) memcpy(u->slots + (size_t)slots[i] * m, u->unpack + (size_t)i * m, m);
    if (u->record) memcpy(u->record + (size_t)b->slot_start[s] * m, u->unpack, (size_t)k * m);
    return PLANCOLL_SUCCESS;
}

void pc_bruck_uniform_begin(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, MPI_Datatype unit, int tag,
                            char *record)
{
    u->unit = unit;
    u->tag = pc_tag(plan, tag);
    u->record = record;
    pc_steps_begin(&u->steps, u->m == 0 ? 0 : u->sched.nsteps);
}

int pc_bruck_uniform_advance(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, bool *done)
{
    return pc_steps_advance(plan, &u->steps, bruck_post, bruck_finish, done);
}

int pc_bruck_uniform_run(struct plancoll_plan_s *plan, struct pc_bruck_uniform *u, MPI_Datatype unit, int tag,
                         char *record)
{
    pc_bruck_uniform_begin(plan, u, unit, tag, record);
    return pc_steps_wait(plan, &u->steps, bruck_post, bruck_finish);
}

double pc_bruck_steps_cost(const struct pc_problem *p, int radix, double m, const struct pc_machine_model *mm)
{
    const int P = p->shape.nranks;
    struct pc_bruck_step steps[PC_BRUCK_MAX_STEPS];
    int n = pc_bruck_steps(P, radix, steps, PC_BRUCK_MAX_STEPS);
    double t = 0;
    for (int s = 0; s < n && s < PC_BRUCK_MAX_STEPS; s++) {
        int k = pc_bruck_moves_count(P, radix, &steps[s]);
        int offnode = pc_cost_offnode_shift(p, (long)steps[s].digit * steps[s].weight);
        t += pc_cost_step_msg(mm, offnode, k * m) + 2.0 * pc_cost_transpose(mm, k * m) +
             pc_cost_message_turns(p, mm, offnode, k * m);
    }
    return t;
}
