/* Node-aware alltoall over the node's shared segment (seed 000, section 5; ALGORITHMS.md A3-A6).
 *
 * Segment layout (bytes, m = block size, P ranks, this node has ppn ranks, node s has ppn_s):
 *   S: ppn rows of P blocks: row i is node rank i's whole send buffer          ppn * P * m
 *   R: for every other node s, ppn_s * ppn blocks ordered [dest node rank t][source node rank i]
 * Execution:
 *   1. node barrier: nobody still reads the data area (it is shared by every plan of the communicator)
 *   2. leaders post their receives; every rank copies its send buffer into its S row (the gather, in place)
 *   3. leader j of this node handles the node pairs at offsets k = j, j+l, ... (k >= 1): it sends node
 *      (n+k) mod N's blocks straight from S with an indexed datatype (no packing copy of ours) and receives
 *      node (n-k) mod N's blocks into R; each landed R[s] is announced with a sequence-numbered flag
 *   4. every rank copies its own node's blocks from the S rows, and its blocks of R[s] as their flags rise
 * Both ends of a node pair use the same leader index (k mod l), so the pairing needs no negotiation.
 * MPML waits for the whole gather (a barrier) before sending and scatters after all its receives; ONMPML writes
 * its S row destination node by destination node behind progress flags, so a leader sends one node's blocks as
 * soon as every rank has written them while the rest is still being gathered, keeps at most `depth` sends in
 * flight, and every rank scatters each R[s] as soon as it lands.
 * Cost (seed 000 eq. 7-8 with T_ONMPML's max for the overlapped form):
 *   T_intra = 2 P m c            (every rank writes and reads P blocks of shared memory)
 *   T_inter = ceil((N-1)/l) (alpha + ppn^2 m beta)   (the busiest leader's messages)
 *   MPML: T_intra + T_inter + 2 alpha_sync; ONMPML: max(T_intra, T_inter) + the first and last piece. */
#include "node_aware.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../shm/layout.h"
#include "../../shm/wait.h"

#define PC_TAG_NODE_AWARE (PC_TAG_ALLTOALL + 10)

struct na_state {
    struct pc_na_config cfg;
    int N, n, ppn, l, me, leader_index; /* leader_index: -1 when this rank is no leader */
    int *leader_rank;                   /* [N * l] global rank of leader j of node x */
    struct pc_segment *seg;
    int first_flag, nflags;
    size_t m;
    char *S, *R;
    size_t *r_off;         /* [N] offset of R[s] in R */
    MPI_Datatype block;    /* m bytes */
    int nsend, nrecv;
    int *send_node, *recv_node; /* in offset order */
    int *send_offset;      /* offset k of each send */
    MPI_Datatype *send_type;
    MPI_Request *reqs;     /* [nrecv + nsend]: receives first */
    uint64_t seq;
};

int pc_na_leaders_used(const struct pc_problem *p, int requested)
{
    int l = requested < 1 ? 1 : requested;
    return l > p->shape.min_ppn ? p->shape.min_ppn : l;
}

const char *pc_na_inapplicable(const struct pc_problem *p)
{
    /* the overlapped loop keeps one done byte per request and node in a fixed array */
    return p->shape.nnodes > 1000 ? "more than 1000 nodes" : NULL;
}

void pc_na_choose_leaders(const int *numa, int node_size, int num_domains, int l, bool numa_spread, int *out)
{
    if (l > node_size) l = node_size;
    if (!numa_spread || num_domains <= 1) {
        for (int j = 0; j < l; j++) out[j] = j;
        return;
    }
    unsigned char used[4096] = {0};
    for (int j = 0; j < l; j++) {
        int domain = j % num_domains, nth = j / num_domains, pick = -1;
        for (int i = 0, seen = 0; i < node_size && i < 4096; i++)
            if (numa[i] == domain && seen++ == nth) {
                pick = i;
                break;
            }
        if (pick < 0 || used[pick])
            for (int i = 0; i < node_size && i < 4096; i++)
                if (!used[i]) {
                    pick = i;
                    break;
                }
        used[pick] = 1;
        out[j] = pick;
    }
}

static inline int rank_of(const struct pc_layout *L, int node, int local) { return L->node_ranks[L->node_first[node] + local]; }

static int build_send_type(const struct pc_layout *L, struct na_state *st, int d, MPI_Datatype *out)
{
    int ppn_d = L->node_sizes[d], count = st->ppn * ppn_d;
    MPI_Aint *displs = malloc(sizeof(MPI_Aint) * (size_t)count);
    if (!displs) return pc_error(PLANCOLL_ERR_NOMEM, "node-aware send type");
    for (int t = 0, k = 0; t < ppn_d; t++)
        for (int i = 0; i < st->ppn; i++) displs[k++] = (MPI_Aint)(((size_t)i * (size_t)L->size + (size_t)rank_of(L, d, t)) * st->m);
    int rc = MPI_Type_create_hindexed_block(count, 1, displs, st->block, out);
    free(displs);
    if (rc != MPI_SUCCESS) return pc_mpi_error(rc, "MPI_Type_create_hindexed_block");
    PC_MPI_CHECK(MPI_Type_commit(out));
    return PLANCOLL_SUCCESS;
}

int pc_na_setup(struct plancoll_plan_s *plan, const struct pc_na_config *cfg)
{
    struct pc_layout *L = plan->layout;
    struct na_state *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "node-aware state");
    plan->impl = st;
    st->cfg = *cfg;
    st->block = MPI_DATATYPE_NULL;
    st->N = L->nnodes;
    st->n = L->node_id;
    st->ppn = L->node_size;
    st->me = L->node_rank;
    st->l = pc_na_leaders_used(&plan->prob, cfg->leaders);
    st->m = (size_t)plan->prob.block_bytes;
    if (st->m == 0) return PLANCOLL_SUCCESS;
    if (st->m > INT32_MAX) return pc_error(PLANCOLL_ERR_OVERFLOW, "node-aware alltoall: blocks over 2 GiB");

    /* leaders of every node, from every rank's NUMA domain */
    st->leader_rank = malloc(sizeof(int) * (size_t)st->N * (size_t)st->l);
    int *numa = malloc(sizeof(int) * (size_t)L->size), *pick = malloc(sizeof(int) * (size_t)st->l);
    if (!st->leader_rank || !numa || !pick) {
        free(numa);
        free(pick);
        return pc_error(PLANCOLL_ERR_NOMEM, "leaders");
    }
    st->leader_index = -1;
    for (int x = 0; x < st->N; x++) {
        for (int i = 0; i < L->node_sizes[x]; i++) numa[i] = L->numa_of_rank[rank_of(L, x, i)];
        pc_na_choose_leaders(numa, L->node_sizes[x], L->max_numa, st->l, cfg->numa_spread, pick);
        for (int j = 0; j < st->l; j++) {
            st->leader_rank[x * st->l + j] = rank_of(L, x, pick[j]);
            if (x == st->n && pick[j] == st->me) st->leader_index = j;
        }
    }
    free(numa);
    free(pick);

    /* segment: S, then R */
    size_t P = (size_t)L->size, s_bytes = (size_t)st->ppn * P * st->m;
    st->r_off = calloc((size_t)st->N, sizeof(size_t));
    if (!st->r_off) return pc_error(PLANCOLL_ERR_NOMEM, "node-aware offsets");
    size_t r_bytes = 0;
    for (int s = 0; s < st->N; s++) {
        st->r_off[s] = r_bytes;
        if (s != st->n) r_bytes += (size_t)L->node_sizes[s] * (size_t)st->ppn * st->m;
    }
    st->nflags = st->N + st->ppn;
    int err = pc_segment_acquire(L, s_bytes + r_bytes, st->nflags, &st->seg, &st->first_flag);
    if (err) return err;
    st->S = st->seg->base;
    st->R = st->S + s_bytes;

    /* this leader's node pairs, and its datatypes */
    PC_MPI_CHECK(MPI_Type_contiguous((int)st->m, MPI_BYTE, &st->block));
    PC_MPI_CHECK(MPI_Type_commit(&st->block));
    st->send_node = malloc(sizeof(int) * (size_t)st->N);
    st->recv_node = malloc(sizeof(int) * (size_t)st->N);
    st->send_offset = malloc(sizeof(int) * (size_t)st->N);
    st->send_type = malloc(sizeof(MPI_Datatype) * (size_t)st->N);
    st->reqs = malloc(sizeof(MPI_Request) * 2 * (size_t)st->N);
    if (!st->send_node || !st->recv_node || !st->send_offset || !st->send_type || !st->reqs)
        return pc_error(PLANCOLL_ERR_NOMEM, "node-aware schedule");
    if (st->leader_index >= 0)
        for (int k = 1; k < st->N; k++) {
            if (k % st->l != st->leader_index) continue;
            st->recv_node[st->nrecv++] = (st->n - k + st->N) % st->N;
            st->send_node[st->nsend] = (st->n + k) % st->N;
            st->send_offset[st->nsend] = k;
            st->send_type[st->nsend] = MPI_DATATYPE_NULL;
            err = build_send_type(L, st, st->send_node[st->nsend], &st->send_type[st->nsend]);
            st->nsend++;
            if (err) return err;
        }
    return PLANCOLL_SUCCESS;
}

void pc_na_teardown(struct plancoll_plan_s *plan)
{
    struct na_state *st = plan->impl;
    if (!st) return;
    if (st->send_type)
        for (int i = 0; i < st->nsend; i++)
            if (st->send_type[i] != MPI_DATATYPE_NULL) MPI_Type_free(&st->send_type[i]);
    if (st->block != MPI_DATATYPE_NULL) MPI_Type_free(&st->block);
    if (st->seg) pc_segment_release(st->seg, st->first_flag, st->nflags);
    free(st->leader_rank);
    free(st->r_off);
    free(st->send_node);
    free(st->recv_node);
    free(st->send_offset);
    free(st->send_type);
    free(st->reqs);
    free(st);
    plan->impl = NULL;
}

/* ---- moving blocks between the caller's typed buffers and the segment's bytes ---- */
static int load_block(const struct plancoll_plan_s *plan, const void *buf, const struct pc_typeinfo *t, int count, int j,
                      char *dst, size_t m)
{
    const char *src = pc_elem_ptr(buf, t, (MPI_Aint)j * count);
    if (t->contiguous) {
        memcpy(dst, src + t->true_lb, m);
        return PLANCOLL_SUCCESS;
    }
    int pos = 0;
    PC_MPI_CHECK(MPI_Pack(src, count, t->type, dst, (int)m, &pos, plan->comm));
    return PLANCOLL_SUCCESS;
}

static int store_block(const struct plancoll_plan_s *plan, void *rbuf, int j, const char *src, size_t m)
{
    const struct pc_typeinfo *t = &plan->rtype;
    char *dst = pc_elem_ptr(rbuf, t, (MPI_Aint)j * plan->recvcount);
    if (t->contiguous) {
        memcpy(dst + t->true_lb, src, m);
        return PLANCOLL_SUCCESS;
    }
    int pos = 0;
    PC_MPI_CHECK(MPI_Unpack(src, (int)m, &pos, dst, plan->recvcount, t->type, plan->comm));
    return PLANCOLL_SUCCESS;
}

/* The caller's send side: its buffer, or the receive buffer in place. */
struct send_side {
    const void *buf;
    const struct pc_typeinfo *t;
    int count;
};

static int write_row(const struct plancoll_plan_s *plan, const struct na_state *st, const struct send_side *ss)
{
    char *row = st->S + (size_t)st->me * (size_t)plan->size * st->m;
    if (ss->t->contiguous) {
        memcpy(row, (const char *)ss->buf + ss->t->true_lb, (size_t)plan->size * st->m);
        return PLANCOLL_SUCCESS;
    }
    for (int j = 0; j < plan->size; j++) {
        int err = load_block(plan, ss->buf, ss->t, ss->count, j, row + (size_t)j * st->m, st->m);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

/* Copies this rank's blocks of node s: from the S rows for its own node, from R[s] otherwise. */
static int scatter_node(const struct plancoll_plan_s *plan, const struct na_state *st, int s, void *rbuf)
{
    const struct pc_layout *L = plan->layout;
    const size_t P = (size_t)plan->size;
    for (int i = 0; i < L->node_sizes[s]; i++) {
        const char *src = s == st->n ? st->S + ((size_t)i * P + (size_t)plan->rank) * st->m
                                     : st->R + st->r_off[s] + ((size_t)st->me * (size_t)L->node_sizes[s] + (size_t)i) * st->m;
        int err = store_block(plan, rbuf, rank_of(L, s, i), src, st->m);
        if (err) return err;
    }
    return PLANCOLL_SUCCESS;
}

static _Atomic uint64_t *arrival_flag(const struct na_state *st, int s) { return pc_segment_flag(st->seg, st->first_flag + s); }
static _Atomic uint64_t *progress_flag(const struct na_state *st, int i)
{
    return pc_segment_flag(st->seg, st->first_flag + st->N + i);
}

static int post_receives(const struct plancoll_plan_s *plan, struct na_state *st)
{
    const struct pc_layout *L = plan->layout;
    for (int i = 0; i < st->nrecv; i++) {
        int s = st->recv_node[i];
        PC_MPI_CHECK(MPI_Irecv(st->R + st->r_off[s], L->node_sizes[s] * st->ppn, st->block,
                               st->leader_rank[s * st->l + st->leader_index], PC_TAG_NODE_AWARE, plan->comm,
                               &st->reqs[i]));
    }
    return PLANCOLL_SUCCESS;
}

static int post_send(const struct plancoll_plan_s *plan, struct na_state *st, int i)
{
    int d = st->send_node[i];
    PC_MPI_CHECK(MPI_Isend(st->S, 1, st->send_type[i], st->leader_rank[d * st->l + st->leader_index], PC_TAG_NODE_AWARE,
                           plan->comm, &st->reqs[st->nrecv + i]));
    return PLANCOLL_SUCCESS;
}

/* MPML: gather, barrier, exchange, scatter. */
static int execute_phased(struct plancoll_plan_s *plan, struct na_state *st, const struct send_side *ss, void *rbuf)
{
    struct pc_layout *L = plan->layout;
    int err = post_receives(plan, st);
    if (!err) err = write_row(plan, st, ss);
    if (err) return err;
    pc_node_barrier(L);
    for (int i = 0; i < st->nsend && !err; i++) err = post_send(plan, st, i);
    if (!err) err = scatter_node(plan, st, st->n, rbuf);
    if (!err) err = pc_wait_all(plan, st->nrecv + st->nsend, st->reqs);
    if (err) return err;
    for (int i = 0; i < st->nrecv; i++) pc_flag_post(arrival_flag(st, st->recv_node[i]), st->seq);
    for (int s = 0; s < st->N && !err; s++) {
        if (s == st->n) continue;
        pc_flag_wait(L, arrival_flag(st, s), st->seq);
        err = scatter_node(plan, st, s, rbuf);
    }
    return err;
}

/* ONMPML: one event loop; every step is taken as soon as what it needs is there. */
static int execute_overlapped(struct plancoll_plan_s *plan, struct na_state *st, const struct send_side *ss, void *rbuf)
{
    struct pc_layout *L = plan->layout;
    const size_t P = (size_t)plan->size;
    const uint64_t base = (st->seq - 1) * (uint64_t)st->N; /* progress values of earlier executions */
    int err = post_receives(plan, st);
    if (err) return err;
    /* gather, destination node by destination node in offset order, so offset k is complete after k+1 pieces */
    char *row = st->S + (size_t)st->me * P * st->m;
    for (int k = 0; k < st->N; k++) {
        int d = (st->n + k) % st->N;
        for (int t = 0; t < L->node_sizes[d]; t++) {
            int j = rank_of(L, d, t);
            err = load_block(plan, ss->buf, ss->t, ss->count, j, row + (size_t)j * st->m, st->m);
            if (err) return err;
        }
        pc_flag_post(progress_flag(st, st->me), base + (uint64_t)k + 1);
    }
    int sent = 0, recv_done = 0, scattered = 0, in_flight_done = 0;
    unsigned char done[4096];
    memset(done, 0, sizeof done);
    bool own_done = false;
    struct pc_waiter w;
    pc_waiter_init(&w, L->wait_mode, L->oversubscribed);
    while (!own_done || scattered < st->N - 1 || sent < st->nsend || recv_done < st->nrecv ||
           in_flight_done < st->nsend) {
        bool moved = false;
        /* sends: the next node's blocks once every rank of this node has written them */
        int depth = st->cfg.depth > 0 ? st->cfg.depth : st->nsend;
        while (sent < st->nsend && sent - in_flight_done < depth) {
            uint64_t need = base + (uint64_t)st->send_offset[sent] + 1;
            bool ready = true;
            for (int i = 0; i < st->ppn && ready; i++) ready = atomic_load_explicit(progress_flag(st, i), memory_order_acquire) >= need;
            if (!ready) break;
            if ((err = post_send(plan, st, sent))) return err;
            sent++;
            moved = true;
        }
        /* completions: announce landed blocks at once */
        for (int i = 0; i < st->nrecv + sent; i++) {
            bool is_recv = i < st->nrecv;
            if (done[i]) continue;
            int flag = 0;
            PC_MPI_CHECK(MPI_Test(&st->reqs[i], &flag, MPI_STATUS_IGNORE));
            if (!flag) continue;
            done[i] = 1;
            moved = true;
            if (is_recv) {
                pc_flag_post(arrival_flag(st, st->recv_node[i]), st->seq);
                recv_done++;
            } else {
                in_flight_done++;
            }
        }
        /* scatter whatever has landed */
        if (!own_done) {
            bool ready = true;
            for (int i = 0; i < st->ppn && ready; i++) ready = atomic_load_explicit(progress_flag(st, i), memory_order_acquire) >= base + 1;
            if (ready) {
                if ((err = scatter_node(plan, st, st->n, rbuf))) return err;
                own_done = true;
                moved = true;
            }
        }
        for (int k = 1; k < st->N; k++) {
            int s = (st->n - k + st->N) % st->N;
            if (done[st->nrecv + st->nsend + s]) continue;
            if (atomic_load_explicit(arrival_flag(st, s), memory_order_acquire) < st->seq) continue;
            if ((err = scatter_node(plan, st, s, rbuf))) return err;
            done[st->nrecv + st->nsend + s] = 1;
            scattered++;
            moved = true;
        }
        if (!moved) pc_waiter_pause(&w);
    }
    return PLANCOLL_SUCCESS;
}

int pc_na_execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct na_state *st = plan->impl;
    if (st->m == 0) return PLANCOLL_SUCCESS;
    st->seq++;
    struct send_side ss = {plan->in_place ? rbuf : sbuf, plan->in_place ? &plan->rtype : &plan->stype,
                           plan->in_place ? plan->recvcount : plan->sendcount};
    /* Nobody may still read the data area: every plan of the communicator shares it. */
    pc_node_barrier(plan->layout);
    return st->cfg.overlap ? execute_overlapped(plan, st, &ss, rbuf) : execute_phased(plan, st, &ss, rbuf);
}

double pc_na_estimate(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *mm)
{
    double P = p->shape.nranks, N = p->shape.nnodes, ppn = p->shape.max_ppn, m = (double)p->block_bytes;
    int l = pc_na_leaders_used(p, cfg->leaders);
    double intra = 2 * P * m * mm->copy_us_per_b;
    double inter = N > 1 ? ceil((N - 1) / l) * (mm->alpha_us + ppn * ppn * m * mm->beta_us_per_b) : 0;
    double sync = 2 * mm->alpha_us;
    if (cfg->overlap) return (intra > inter ? intra : inter) + sync + (N > 1 ? ppn * m * mm->copy_us_per_b : 0);
    return intra + inter + sync;
}
