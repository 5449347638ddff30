/* Hierarchical allreduce over the node's shared segment ([DPML17] sections 2.1 and 4; docs/algorithms.md).
 *
 * l leaders per node (the first l node ranks, or spread over the NUMA domains); partition j of the vector (and
 * its k sub-partitions, dpml_sched.h) belongs to leader j. One execution:
 *   1. every rank hands its input over: either it publishes where its buffer lies, when the buffer came from
 *      plancoll_malloc (the leaders then read it in place: one copy less), or it copies partition j into leader
 *      j's area IN[j][i] of the segment, for every j but its own leader index (a leader reads its own input in
 *      place); one sequence-numbered flag per rank counts the partitions handed over;
 *   2. leader j reduces partition j of the ppn inputs into RES, sub-partition by sub-partition, in cache-sized
 *      chunks, in node-rank order: RES = D_0 op (D_1 op (... op D_ppn-1)), associativity only, so the order is
 *      fixed (bits identical run to run) and a non-commutative op keeps rank order;
 *   3. with several nodes, leader j runs the allreduce of each sub-partition with leader j of the other nodes
 *      (nonblocking: sub-partition s flies while s+1 is reduced): plancoll's recursive doubling or reduce-scatter
 *      + allgather as step lists (dpml_sched.c) on point-to-point messages, or MPI's persistent allreduce on the
 *      layout's leader communicator (one made at plan time when NUMA placement picks different node ranks on
 *      different nodes); each finished sub-partition is announced with a flag;
 *   4. every rank copies each sub-partition of RES into its receive buffer as soon as its flag is up; a leader
 *      of a single node copies its own partition chunk by chunk while the chunk is still in cache, and a leader
 *      with exchanges in flight copies other leaders' partitions while it waits. On a single node (contiguous
 *      type, a fast loop) a rank whose receive buffer came from plancoll_malloc publishes where it lies, and the
 *      leaders push each result chunk straight into it (push): that rank copies nothing back, and RES is written
 *      only when some rank's receive buffer is private.
 * Each element is reduced once, by its leader, in a fixed order, and then copied: every rank holds the same bits.
 * With several nodes the node partials combine in node order, which is rank order when every node holds
 * consecutive ranks (needed for non-commutative ops: pc_dpml_inapplicable).
 *
 * Synchronisation without a barrier per execution: leader j writes RES_j only once every rank has handed
 * partition j over for this execution, so every rank has finished copying the previous execution's RES; a
 * rank rewrites its IN slots (or, in place, its buffer) only after every leader announced its partition, so no
 * leader still reads them; a rank whose buffer is read in place returns only after the same announcements. The
 * segment is shared by every plan of the communicator: when another plan used it since this plan's last
 * execution, a node barrier (this plan's own) comes first (pc_segment_claim); a started execution holds the area
 * until it is done on this rank (pc_segment_try_hold).
 *
 * Cost ([DPML17] eq. 2-7 in the model's primitives; h nodes, ppn the largest node's ranks; a' + b' x of the seed
 * is shm_copy(1, ppn, x): one shared-memory copy while the node's ppn ranks all copy):
 *   T_bcast = l shm_copy(1, ppn, n/l)                             (eq. 6)
 *   T_copy  = l shm_copy(1, ppn, n/l), or (l-1) shm_copy(1, ppn, n/l) when every rank leads (l = ppn: a leader
 *             keeps its own partition, which eq. 2 charges anyway)
 *   T_sync  = 2 sync_us + turns(2)                                (the hand-over flag and the result flag, with
 *                                                                  their scheduler turns when oversubscribed;
 *                                                                  T_inter's steps charge theirs, common.c)
 *   T_comp = (ppn - 1) reduce(n/l)                                (eq. 3 as printed, (p/(h l) - 1) n c, charges a
 *                                                                  leader the whole vector; it reduces only n/l)
 *   T_comm = k T_inter(h, n/(l k))   (rd, rsag or mpi of common.c over the h leaders j, every step between nodes
 *                                     with the node's l leaders exchanging at once: net_concurrent(l, .), eq. 4-5)
 *   k = 1: T = T_copy + T_bcast + T_sync + T_comp + T_comm        (eq. 7)
 *   k > 1: T = T_copy + T_bcast + T_sync + T_comp/k + max(T_comp (k-1)/k, T_comm)  (the first sub-partition's
 *                                                                  reduction cannot overlap; the rest overlaps the
 *                                                                  exchanges)
 *          on an oversubscribed host the sum of k = 1 (with T_comm of the k sub-partitions): no free core to
 *          progress the exchanges during the reductions, as for alltoall.onmpml (node_aware.c)
 * Busy (exec/busy.h), the busiest rank's: a leader's (l-1) parts handed over (its own it reads in place), l parts
 *   copied out, T_comp, and its k inter-node allreduces as busy time (each step's message posted and completed,
 *   its test and its reduction: pc_busy_allreduce_over between nodes; MPI's the same schedule as T_comm's); another
 *   rank's l + l parts when l < ppn. The flags and the network are waiting. With k > 1 on free cores the estimate
 *   hides the exchanges, their overheads and reductions included, behind T_comp: busy is cut to the estimate. */
#include "exec/allreduce/dpml_common.h"
#include "exec/cost.h"
#include "exec/busy.h"

#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "base/sizes.h"
#include "shm/heap.h"
#include "shm/layout.h"
#include "shm/wait.h"
#include "exec/alltoall/node_aware.h"
#include "shm/leaders.h"
#include "shm/segment.h"
#include "exec/allreduce/common.h"
#include "exec/allreduce/dpml_sched.h"
#include "exec/reduce_stream.h"

#define CHUNK_BYTES 16384                   /* the accumulator stays in L1 while ppn inputs stream through it */

/* Where a rank's input lies this execution, when leaders read it in place, and its receive buffer, when leaders
 * write the result straight into it (push). */
struct in_desc {
    int32_t in_heap, arena;
    uint64_t offset;
    int32_t out_heap, out_arena;
    uint64_t out_offset;
    char pad[PC_CACHELINE - 32];
};

/* One sub-partition's inter-node allreduce on plancoll's own step list. */
struct xsm {
    const struct pc_xstep *steps;
    int nsteps, at;
    bool posted;
    MPI_Request req[2];
    char *cur, *oth; /* MPI buffer pointers indexed by whole-vector element */
};

struct dpml {
    struct pc_dpml_config cfg;
    bool trivial;                  /* one rank or no element: nothing to share */
    int N, node, ppn, me, l, k, lead; /* lead: this rank's leader index, -1 for none */
    int count, pieces;             /* pieces: non-empty sub-partitions */
    MPI_Aint ext, tlb, text;
    int64_t size;
    bool contig;
    int *leader_rank;              /* [N l]: global rank of leader j of node x */
    struct pc_segment *seg;
    int first_flag, nflags;
    char *res;                     /* RES as an MPI buffer pointer */
    char **in_slot;                /* [l ppn]: IN[j][i] as an MPI buffer pointer indexed by whole-vector element */
    struct in_desc *desc;          /* [ppn] */
    const char **src;              /* [ppn] inputs of this leader's partition, this execution */
    uint64_t seq, token;
    uint64_t barriers;             /* this plan's node barriers so far (its own flags: dpml_step) */
    int phase, next_input, collected; /* the execution in progress (pc_dpml_start, pc_dpml_advance) */
    uint64_t *copied;              /* [l k]: execution in which this rank copied sub-partition (j, s) back */
    bool stream;                   /* stores=stream: shared areas written with streaming stores, fenced before flags */
    void *acc;                     /* stream or push: one chunk of the partial result, which stays in L1 (CHUNK_BYTES) */
    /* push: one node, a contiguous type and a fast loop, so a leader's result is final as it leaves the reduction:
     * it writes it straight into every node rank's receive buffer that lies in the node-shared heap, and into RES
     * only when some rank's does not. Each result byte is then written once per rank and never read back, where
     * RES and the copy back wrote it, read it and wrote it again. */
    bool push;
    bool pushed_here;              /* this execution: the leaders write this rank's receive buffer */
    char **push_dst;               /* [ppn]: this execution's pushed receive buffers (a leader's), as MPI pointers */
    /* this leader's exchanges with the other nodes */
    MPI_Comm comm;                 /* inter = mpi: leader j of every node */
    bool own_comm;
    MPI_Request *preq;             /* [k] persistent allreduces (inter = mpi); without persistent collectives in
                                    * the MPI, each execution's MPI_Iallreduce (native_request.h) */
    MPI_Datatype type;             /* inter = mpi: the element type and op of the exchanges */
    MPI_Op op;
    struct xsm *sm;                /* [k] (inter = rd, rsag) */
    struct pc_xstep *steps;        /* [k * pc_xsteps_max(N)] */
    void *tmp_raw;
    char *tmp;                     /* scratch of one partition, indexed by whole-vector element */
    uint64_t *started, *finished;  /* [k]: execution in which sub-partition s was started / finished */
    int inflight;
};

static inline char *at(const void *buf, const struct dpml *st, int e) { return (char *)buf + (MPI_Aint)e * st->ext; }
static inline char *data(const void *buf, const struct dpml *st, int e) { return at(buf, st, e) + st->tlb; }
static inline size_t span(const struct dpml *st, int n) { return pc_dpml_span(n, (size_t)st->ext, (size_t)st->text); }
static inline _Atomic uint64_t *in_flag(const struct dpml *st, int i) { return pc_segment_flag(st->seg, st->first_flag + i); }
static inline _Atomic uint64_t *res_flag(const struct dpml *st, int j, int s)
{
    return pc_segment_flag(st->seg, st->first_flag + st->ppn + j * st->k + s);
}
static inline int rank_of(const struct pc_layout *L, int node, int local) { return L->node_ranks[L->node_first[node] + local]; }

/* ---- configuration, applicability, candidates -------------------------------------------------------------- */

struct pc_dpml_config pc_dpml_config_of(enum pc_dpml_form form, const struct pc_params *p)
{
    struct pc_dpml_config c = {.leaders = form == PC_DPML_LEADER ? 1 : p->leaders,
                               .numa_spread = form != PC_DPML_LEADER && p->placement == 1,
                               .segments = 1,
                               .inter = p->inter,
                               .stores = p->stores};
    if (form == PC_DPML_PIPELINED) c.segments = p->segments > 0 ? p->segments : 4;
    return c;
}

int pc_dpml_leaders_used(const struct pc_problem *p, int requested)
{
    int l = requested < 1 ? 1 : requested;
    return l > p->shape.min_ppn ? p->shape.min_ppn : l;
}

const char *pc_dpml_inapplicable(const struct pc_problem *p)
{
    if (!p->commutative && p->shape.nnodes > 1 && !p->shape.ranks_by_node)
        return "a non-commutative op needs every node to hold consecutive ranks (node by node would reorder operands)";
    return NULL;
}

int pc_dpml_variants(const struct pc_problem *p, const struct pc_dpml_choices *c, struct pc_params *out, int max)
{
    int n = 0, top = p->shape.min_ppn < 1 ? 1 : p->shape.min_ppn;
    if (c->last_leaders > 0 && top > c->last_leaders) top = c->last_leaders;
    int inters[3], ninter = 0;
    inters[ninter++] = PC_DPML_INTER_RD;
    if (p->shape.nnodes > 1) {
        if (p->commutative && c->rsag) inters[ninter++] = PC_DPML_INTER_RSAG;
        if (!p->mpi_op_differs) inters[ninter++] = PC_DPML_INTER_MPI;
    }
    const int one_seg = 0, *segs = c->nsegs > 0 ? c->segs : &one_seg, nsegs = c->nsegs > 0 ? c->nsegs : 1;
    /* the mode chosen while the plan runs (exec/store_chooser.h) where streaming stores exist and a node's ranks
     * write areas other ranks read; else ordinary stores */
    const int stores = PC_STREAM_STORES && p->shape.max_ppn > 1 ? PC_STORES_AUTO : PC_STORES_NORMAL;
    int l = c->first_leaders < 1 ? 1 : c->first_leaders > top ? top : c->first_leaders;
    for (;;) {
        for (int placement = 0; placement < 2; placement++) {
            if (placement && (p->shape.numa_domains <= 1 || l == 1)) continue;
            for (int i = 0; i < ninter; i++)
                for (int s = 0; s < nsegs; s++)
                    if (n < max)
                        out[n++] = (struct pc_params){.leaders = l, .placement = placement, .segments = segs[s],
                                                      .inter = inters[i], .stores = stores};
        }
        if (l == top) break;
        l = l * 2 > top ? top : l * 2;
    }
    return n;
}

/* ---- cost ------------------------------------------------------------------------------------------------- */

double pc_dpml_inter_estimate(const struct pc_problem *p, int inter, double h, double bytes, int leaders, int posted,
                              const struct pc_machine_model *m)
{
    switch (inter) {
    case PC_DPML_INTER_RSAG: return pc_allreduce_rsag_cost(p, (int)h, bytes, leaders, posted, m);
    case PC_DPML_INTER_MPI: return pc_allreduce_native_cost(p, (int)h, bytes, leaders, posted, m);
    default: return pc_allreduce_rd_cost(p, (int)h, bytes, leaders, posted, m);
    }
}

double pc_dpml_estimate(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m)
{
    if (p->shape.nranks <= 1) return 0;
    double n = (double)p->count * (double)p->elem_bytes, h = p->shape.nnodes, ppn = p->shape.max_ppn;
    const int leaders = pc_dpml_leaders_used(p, cfg->leaders);
    double l = leaders, k = cfg->segments < 1 ? 1 : cfg->segments;
    /* a non-leader hands over all l partitions; when every rank leads, each keeps its own */
    double handed = l < ppn ? l : l - 1;
    double part = pc_cost_shm_copy(m, 1, p->shape.max_ppn, n / l);
    double t_copy = handed * part, t_bcast = l * part, t_sync = 2 * m->sync_us + pc_cost_turns(p, m, 2);
    double t_comp = (ppn - 1) * pc_cost_reduce(m, p->op_id, p->type_id, n / l);
    double t_comm = h > 1 ? k * pc_dpml_inter_estimate(p, cfg->inter, h, n / (l * k), leaders, 1, m) : 0;
    /* The writes into node-shared lines other ranks read last execution: each rank's hand-over, then the leader's
     * result, in the plan's store mode (0 for the cheaper mode, model.h) */
    double t_store = (handed + 1) * pc_cost_shared_store(m, cfg->stores == PC_STORES_STREAM, n / l);
    t_copy += t_store;
    /* Overlap needs a free core to progress the exchanges while the leader reduces (over TCP the kernel's copies
     * are CPU work too); with more ranks than cores there is none and the phases add up, as alltoall.onmpml's
     * (node_aware.c). The pipeline then keeps only its k smaller exchanges. */
    if (k == 1 || p->shape.oversubscribed) return t_copy + t_bcast + t_sync + t_comp + t_comm;
    return t_copy + t_bcast + t_sync + pc_dpml_pipeline_estimate(p, cfg->inter, t_comp, k, n / (l * k), leaders, m);
}

/* One inter-node allreduce of `bytes` over h nodes by algorithm inter, as busy time of a leader. */
static double inter_busy(const struct pc_problem *p, int inter, int h, double bytes, const struct pc_machine_model *m)
{
    bool halving = inter == PC_DPML_INTER_RSAG ||
                   (inter == PC_DPML_INTER_MPI && !(bytes <= 2048 || !p->commutative)); /* native_cost's choice */
    return pc_busy_allreduce_over(p, h, bytes, halving, true, m);
}

double pc_dpml_pipeline_estimate(const struct pc_problem *p, int inter, double t_comp, double k, double bytes,
                                 int leaders, const struct pc_machine_model *m)
{
    const int h = p->shape.nnodes;
    /* The last sub-partition's exchange cannot start before the whole partition is reduced, and then runs alone */
    double last = t_comp + pc_dpml_inter_estimate(p, inter, h, bytes, leaders, 1, m);
    /* From the first sub-partition's reduction on, the started exchanges move along together (progress_exchanges
     * tests every one in flight). Two views of their flight, the slower one rules:
     *  - the network's: each round a leader posts the k exchanges' messages to its partner at once (net_posted:
     *    their bytes share the leader's link, their start-ups follow one gap apart; in the rendezvous regime each
     *    also waits for its own handshake, allreduce/common.c) and reduces the k sub-partitions that arrived;
     *  - the leader's core: one exchange's time, and for each further exchange its calls (posting, testing,
     *    completing each message: 3 o) and reductions, one after another.
     * Not k independent exchanges one after another (what the model charged before: k latencies, where the
     * simulated network overlaps them), nor k l ranks' messages at once (one leader's messages to one partner
     * share its link, its connection and its core). Under SMPI the core's view is what separates 2 from 8
     * sub-partitions of small vectors: 0.24 us a sub-partition at 2 x 28 ranks of [DPML17]-B, its per-message
     * send and receive overheads (docs/scale-planner.md). */
    double network = pc_dpml_inter_estimate(p, inter, h, bytes, leaders, (int)k, m);
    double core = pc_dpml_inter_estimate(p, inter, h, bytes, leaders, 1, m) + (k - 1) * inter_busy(p, inter, h, bytes, m);
    double flight = t_comp / k + (network > core ? network : core);
    return last > flight ? last : flight;
}

/* A leader's busy time and another rank's (0 when every rank leads). */
static void rank_busy(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m,
                      double *leader, double *other)
{
    double n = (double)p->count * (double)p->elem_bytes, ppn = p->shape.max_ppn;
    const int h = p->shape.nnodes, leaders = pc_dpml_leaders_used(p, cfg->leaders);
    double l = leaders, k = cfg->segments < 1 ? 1 : cfg->segments;
    double part = pc_cost_shm_copy(m, 1, p->shape.max_ppn, n / l);
    double comp = (ppn - 1) * pc_cost_reduce(m, p->op_id, p->type_id, n / l);
    double comm = h > 1 ? k * inter_busy(p, cfg->inter, h, n / (l * k), m) : 0;
    double store = pc_cost_shared_store(m, cfg->stores == PC_STORES_STREAM, n / l); /* per partition written */
    *leader = (l - 1) * part + l * part + comp + comm + l * store;
    *other = l < ppn ? 2 * l * part + l * store : 0;
}

/* The mean over a node's ranks (struct pc_algorithm's mean_busy): l leaders' busy times and ppn - l others'. */
double pc_dpml_mean_busy(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m)
{
    if (p->shape.nranks <= 1) return 0;
    double leader, other, ppn = p->shape.max_ppn, l = pc_dpml_leaders_used(p, cfg->leaders);
    rank_busy(p, cfg, m, &leader, &other);
    if (l > ppn) l = ppn;
    return (l * leader + (ppn - l) * other) / ppn;
}

double pc_dpml_busy(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m)
{
    if (p->shape.nranks <= 1) return 0;
    const double k = cfg->segments < 1 ? 1 : cfg->segments;
    double leader, other;
    rank_busy(p, cfg, m, &leader, &other);
    double busy = leader > other ? leader : other;
    if (k > 1 && !p->shape.oversubscribed) {
        double estimate = pc_dpml_estimate(p, cfg, m);
        if (busy > estimate) busy = estimate;
    }
    return busy;
}

/* ---- set-up ---------------------------------------------------------------------------------------------- */

static int choose_leaders(struct plancoll_plan_s *plan, struct dpml *st, bool *same_everywhere)
{
    const struct pc_layout *L = plan->layout;
    st->leader_rank = malloc(sizeof(int) * (size_t)st->N * (size_t)st->l);
    int *numa = malloc(sizeof(int) * (size_t)L->size), *pick = malloc(sizeof(int) * 2 * (size_t)st->l);
    if (!st->leader_rank || !numa || !pick) {
        free(numa);
        free(pick);
        return pc_error(PLANCOLL_ERR_NOMEM, "leaders");
    }
    int *first = pick + st->l;
    *same_everywhere = true;
    st->lead = -1;
    for (int x = 0; x < st->N; x++) {
        for (int i = 0; i < L->node_sizes[x]; i++) numa[i] = L->numa_of_rank[rank_of(L, x, i)];
        pc_choose_leaders(numa, L->node_sizes[x], L->max_numa, st->l, st->cfg.numa_spread, pick);
        for (int j = 0; j < st->l; j++) {
            st->leader_rank[x * st->l + j] = rank_of(L, x, pick[j]);
            if (x == st->node && pick[j] == st->me) st->lead = j;
            if (x == 0) first[j] = pick[j];
            else if (first[j] != pick[j]) *same_everywhere = false;
        }
    }
    free(numa);
    free(pick);
    return PLANCOLL_SUCCESS;
}

/* The leaders' exchanges: step lists and scratch, or MPI persistent allreduces on a leader communicator. */
static int setup_inter(struct plancoll_plan_s *plan, struct dpml *st, bool same_everywhere)
{
    const struct pc_layout *L = plan->layout;
    const int j = st->lead, k = st->k;
    st->started = calloc((size_t)k, sizeof(uint64_t));
    st->finished = calloc((size_t)k, sizeof(uint64_t));
    if (!st->started || !st->finished) return pc_error(PLANCOLL_ERR_NOMEM, "dpml exchange state");
    if (st->cfg.inter == PC_DPML_INTER_MPI) {
        /* Leader j is the same node rank on every node (always with first-l placement): the layout's leader
         * communicator of that node rank is exactly leader j of every node. Otherwise one is made here
         * (collective over every rank; the same decision everywhere, as every rank computed every node's picks). */
        if (same_everywhere) {
            int err = pc_layout_comms(plan->layout); /* every rank takes this branch: made alike everywhere */
            if (err) return err;
            st->comm = L->leader_comm;
        } else {
            PC_MPI_CHECK(MPI_Comm_split(plan->comm, j >= 0 ? j : MPI_UNDEFINED, st->node, &st->comm));
            st->own_comm = st->comm != MPI_COMM_NULL;
        }
        if (j < 0) return PLANCOLL_SUCCESS;
        st->preq = malloc(sizeof(MPI_Request) * (size_t)k);
        if (!st->preq) return pc_error(PLANCOLL_ERR_NOMEM, "dpml requests");
        st->type = plan->rtype.type;
        st->op = plan->red.op;
        for (int s = 0; s < k; s++) {
            st->preq[s] = MPI_REQUEST_NULL;
#if PC_HAVE_PERSISTENT_COLL
            int lo = pc_dpml_sub_lo(st->count, st->l, k, j, s), n = pc_dpml_sub_count(st->count, st->l, k, j, s);
            if (n > 0)
                PC_MPI_CHECK(PC_MPI_COLL_INIT(Allreduce)(MPI_IN_PLACE, at(st->res, st, lo), n, st->type, st->op,
                                                         st->comm, MPI_INFO_NULL, &st->preq[s]));
#endif
        }
        return PLANCOLL_SUCCESS;
    }
    if (j < 0) return PLANCOLL_SUCCESS;
    int part_lo = pc_dpml_part_lo(st->count, st->l, j), part_n = pc_dpml_part_count(st->count, st->l, j);
    int err = pc_alloc_typed(part_n, &plan->rtype, &st->tmp_raw, (void **)&st->tmp);
    if (err) return err;
    st->tmp -= (MPI_Aint)part_lo * st->ext; /* indexed by whole-vector element, like RES */
    int max = pc_xsteps_max(st->N);
    st->sm = calloc((size_t)k, sizeof *st->sm);
    st->steps = malloc(sizeof(struct pc_xstep) * (size_t)k * (size_t)max);
    if (!st->sm || !st->steps) return pc_error(PLANCOLL_ERR_NOMEM, "dpml step lists");
    for (int s = 0; s < k; s++) {
        int n = pc_dpml_sub_count(st->count, st->l, k, j, s);
        struct pc_xstep *list = st->steps + (size_t)s * (size_t)max;
        st->sm[s].steps = list;
        st->sm[s].nsteps = st->cfg.inter == PC_DPML_INTER_RSAG ? pc_xsteps_rsag(st->node, st->N, n, list, max)
                                                                : pc_xsteps_recursive_doubling(st->node, st->N, n, list, max);
        if (st->sm[s].nsteps > max) return pc_error(PLANCOLL_ERR_ARGUMENT, "dpml: step list overflow");
    }
    return PLANCOLL_SUCCESS;
}

int pc_dpml_setup(struct plancoll_plan_s *plan, const struct pc_dpml_config *cfg)
{
    struct pc_layout *L = plan->layout;
    struct dpml *st = calloc(1, sizeof *st);
    if (!st) return pc_error(PLANCOLL_ERR_NOMEM, "dpml state");
    plan->impl = st;
    st->cfg = *cfg;
    st->comm = MPI_COMM_NULL;
    st->count = plan->count;
    st->ext = plan->rtype.extent;
    st->tlb = plan->rtype.true_lb;
    st->text = plan->rtype.true_extent;
    st->size = plan->rtype.size;
    st->contig = plan->rtype.contiguous;
    st->trivial = plan->size == 1 || st->count == 0;
    if (st->trivial) return PLANCOLL_SUCCESS;
    if (cfg->stores < PC_STORES_NORMAL || cfg->stores > PC_STORES_AUTO)
        return pc_error(PLANCOLL_ERR_ARGUMENT, "dpml: store mode %d", cfg->stores);
    st->stream = cfg->stores == PC_STORES_STREAM; /* auto: set before each execution (pc_dpml_set_stores) */
    st->push = L->nnodes == 1 && st->contig && plan->red.fast;
    if (cfg->stores != PC_STORES_NORMAL || st->push) {
        /* the accumulator of reduce_piece: one chunk, at least one element */
        size_t acc_bytes = (size_t)st->ext > CHUNK_BYTES ? (size_t)st->ext : CHUNK_BYTES;
        st->acc = aligned_alloc(64, (acc_bytes + 63) / 64 * 64);
        if (!st->acc) return pc_error(PLANCOLL_ERR_NOMEM, "dpml accumulator");
    }
    if (cfg->inter < 0 || cfg->inter > PC_DPML_INTER_MPI) return pc_error(PLANCOLL_ERR_ARGUMENT, "dpml: inter-node algorithm %d", cfg->inter);
    if (st->ext <= 0 || (st->count > 1 && st->text > st->ext))
        return pc_error(PLANCOLL_ERR_INAPPLICABLE, "the datatype's elements overlap (true extent beyond extent): "
                                                   "partitions could not be written side by side");
    st->N = L->nnodes;
    st->node = L->node_id;
    st->ppn = L->node_size;
    st->me = L->node_rank;
    st->l = pc_dpml_leaders_used(&plan->prob, cfg->leaders);
    st->k = cfg->segments < 1 ? 1 : cfg->segments;
    /* The segment holds the result and every node rank's partitions: (ppn + 1) vector spans, each area rounded up
     * to a cache line. Bounded by the largest node, so every rank refuses alike before the segment's collective. */
    int64_t vec_lo, vec_hi, seg_bound;
    if (!pc_type_span(&plan->rtype, 0, st->count, &vec_lo, &vec_hi) ||
        !pc_bytes_mul((int64_t)plan->prob.shape.max_ppn + 1, vec_hi - vec_lo + 64 * (int64_t)(st->l + 1), &seg_bound))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "dpml: a segment of %d + 1 vectors of %d elements reaches 2^60 bytes",
                        plan->prob.shape.max_ppn, st->count);
    if (st->N > 1 && cfg->inter == PC_DPML_INTER_RSAG && !plan->prob.commutative)
        return pc_error(PLANCOLL_ERR_INAPPLICABLE, "inter=rsag reorders operands: needs a commutative op");
    if (st->N > 1 && cfg->inter == PC_DPML_INTER_MPI && plan->prob.mpi_op_differs)
        return pc_error(PLANCOLL_ERR_INAPPLICABLE,
                        "inter=mpi: MPI's own op gives other results than plancoll's definition for this (op, datatype)");
    bool same_everywhere = true;
    int err = choose_leaders(plan, st, &same_everywhere);
    if (err) return err;

    size_t *in_off = malloc(sizeof(size_t) * 2 * (size_t)st->l), res_off, desc_off;
    if (!in_off) return pc_error(PLANCOLL_ERR_NOMEM, "dpml layout");
    size_t *in_stride = in_off + st->l;
    size_t bytes = pc_dpml_segment_layout(st->count, st->l, st->ppn, (size_t)st->ext, (size_t)st->text, in_off, in_stride,
                                          &res_off, &desc_off);
    st->nflags = 2 * st->ppn + st->l * st->k; /* hand-over per rank, result per sub-partition, barrier per rank */
    err = pc_segment_acquire(L, bytes, st->nflags, &st->seg, &st->first_flag);
    if (err) {
        free(in_off);
        return err;
    }
    char *base = st->seg->base;
    st->res = base + res_off - st->tlb;
    st->desc = (struct in_desc *)(base + desc_off);
    st->in_slot = malloc(sizeof(char *) * (size_t)st->l * (size_t)st->ppn);
    st->src = malloc(sizeof(char *) * (size_t)st->ppn);
    st->copied = calloc((size_t)st->l * (size_t)st->k, sizeof(uint64_t));
    st->push_dst = malloc(sizeof(char *) * (size_t)st->ppn);
    if (!st->in_slot || !st->src || !st->copied || !st->push_dst) {
        free(in_off);
        return pc_error(PLANCOLL_ERR_NOMEM, "dpml state");
    }
    for (int j = 0; j < st->l; j++) {
        MPI_Aint lo = pc_dpml_part_lo(st->count, st->l, j);
        for (int i = 0; i < st->ppn; i++)
            st->in_slot[j * st->ppn + i] = base + in_off[j] + (size_t)i * in_stride[j] - st->tlb - lo * st->ext;
    }
    free(in_off);
    for (int j = 0; j < st->l; j++)
        for (int s = 0; s < st->k; s++) st->pieces += pc_dpml_sub_count(st->count, st->l, st->k, j, s) > 0;
    st->token = pc_segment_new_user();
    return st->N > 1 ? setup_inter(plan, st, same_everywhere) : PLANCOLL_SUCCESS;
}

int pc_dpml_setup_form(struct plancoll_plan_s *plan, enum pc_dpml_form form)
{
    struct pc_dpml_config c = pc_dpml_config_of(form, &plan->params);
    return pc_dpml_setup(plan, &c);
}

/* stores=auto (exec/store_chooser.h): the streaming kernels' accumulator was allocated at set-up for any mode
 * but ordinary, so either mode can run from the next execution on. */
void pc_dpml_set_stores(struct plancoll_plan_s *plan, bool stream)
{
    struct dpml *st = plan->impl;
    if (st && !st->trivial) st->stream = stream && st->acc != NULL;
}

void pc_dpml_teardown(struct plancoll_plan_s *plan)
{
    struct dpml *st = plan->impl;
    if (!st) return;
    if (st->preq)
        for (int s = 0; s < st->k; s++)
            if (st->preq[s] != MPI_REQUEST_NULL) MPI_Request_free(&st->preq[s]);
    if (st->own_comm) MPI_Comm_free(&st->comm);
    if (st->seg) pc_segment_release(st->seg, st->first_flag, st->nflags);
    free(st->preq);
    free(st->sm);
    free(st->steps);
    free(st->tmp_raw);
    free(st->started);
    free(st->finished);
    free(st->leader_rank);
    free(st->in_slot);
    free(st->src);
    free(st->copied);
    free(st->push_dst);
    free(st->acc);
    free(st);
    plan->impl = NULL;
}

/* ---- execution ------------------------------------------------------------------------------------------ */

/* Step 1: publish where the input lies, or copy its partitions into the leaders' areas; with push, publish where
 * the receive buffer lies too (written before the first flag, which the leaders acquire before they read it). */
static void hand_over(const struct plancoll_plan_s *plan, struct dpml *st, const char *in, const char *rbuf)
{
    struct in_desc *d = &st->desc[st->me];
    int arena = 0;
    size_t offset = 0;
    st->pushed_here = false;
    if (st->push) {
        st->pushed_here = pc_heap_find(plan->layout, rbuf + st->tlb, span(st, st->count), &arena, &offset);
        d->out_heap = st->pushed_here;
        d->out_arena = arena;
        d->out_offset = offset;
    }
    d->in_heap = pc_heap_find(plan->layout, in + st->tlb, span(st, st->count), &arena, &offset);
    d->arena = arena;
    d->offset = offset;
    if (d->in_heap) {
        pc_flag_post(in_flag(st, st->me), pc_dpml_in_value(st->seq, st->l, st->l));
        return;
    }
    for (int t = 0; t < st->l; t++) {
        int j = pc_dpml_copy_part(st->me, st->l, t), lo = pc_dpml_part_lo(st->count, st->l, j);
        int n = pc_dpml_part_count(st->count, st->l, j);
        /* the gaps of a non-contiguous type come along: the slot is plancoll's, and they lie inside the buffer */
        if (j != st->lead && n > 0) {
            char *slot = data(st->in_slot[j * st->ppn + st->me], st, lo);
            if (st->stream) {
                pc_stream_copy(slot, data(in, st, lo), span(st, n));
                pc_stream_fence(); /* the flag's release store does not order streaming stores */
            } else {
                memcpy(slot, data(in, st, lo), span(st, n));
            }
        }
        pc_flag_post(in_flag(st, st->me), pc_dpml_in_value(st->seq, st->l, t + 1));
    }
}

/* One chunk of reduce_piece with stores=stream (a fast loop, contiguous type): the same operations in the same
 * order, RES = D_0 op (D_1 op (... op D_ppn-1)), with the partial results in the accumulator (L1) instead of RES,
 * and RES written once, by streaming stores: the last operation streams its result (pc_reduce3_stream), or, when
 * the caller's receive buffer takes the chunk too (hot), the accumulator is streamed to RES and copied to hot. */
/* The accumulator (L1) = D_first op (D_first+1 op (... op D_ppn-1)) over one chunk, in reduce_piece's order; at
 * least two operands (first <= ppn - 2). */
static int accumulate(const struct pc_reduction *r, const struct dpml *st, int a, int c, int first)
{
    const int p = st->ppn;
    int err = pc_reduce3(r, at(st->src[p - 2], st, a), at(st->src[p - 1], st, a), st->acc, c);
    for (int i = p - 3; i >= first && !err; i--) err = pc_reduce(r, at(st->src[i], st, a), st->acc, c);
    return err;
}

static int reduce_chunk_streamed(const struct pc_reduction *r, const struct dpml *st, int a, int c, char *hot)
{
    const int p = st->ppn;
    char *res = at(st->res, st, a), *acc = st->acc;
    if (p == 1) {
        pc_stream_copy(data(st->res, st, a), data(st->src[0], st, a), span(st, c));
        if (hot && hot != st->src[0]) memcpy(data(hot, st, a), data(st->src[0], st, a), (size_t)c * (size_t)st->size);
        return PLANCOLL_SUCCESS;
    }
    if (p == 2 && !hot) return pc_reduce3_stream(r, at(st->src[0], st, a), at(st->src[1], st, a), res, c);
    /* without hot the operation with D_0 streams straight into RES */
    int err = accumulate(r, st, a, c, hot ? 0 : 1);
    if (err) return err;
    if (!hot) return pc_reduce3_stream(r, at(st->src[0], st, a), acc, res, c);
    pc_stream_copy(res, acc, (size_t)c * (size_t)st->ext);
    memcpy(data(hot, st, a), acc, (size_t)c * (size_t)st->size);
    return PLANCOLL_SUCCESS;
}

/* One chunk with push: the same operations in the same order as reduce_piece's, D_0 op (D_1 op (... op D_ppn-1)),
 * written to the caller's receive buffer (hot), to the npush pushed receive buffers, and to RES when need_res (a
 * rank copies back from it). Two ranks without RES: one pass writing both buffers (pc_reduce3_dup), unless a
 * buffer is also an input (in place) or the stores stream; else the result is made in the accumulator (L1) and
 * copied out, in the plan's store mode to the buffers other ranks own. */
static int reduce_chunk_pushed(const struct pc_reduction *r, const struct dpml *st, int a, int c, char *hot, int npush,
                               bool need_res)
{
    const int p = st->ppn;
    const size_t bytes = (size_t)c * (size_t)st->size;
    char *acc = st->acc;
    if (p == 2 && npush == 1 && !need_res && !st->stream && r->fast3d) {
        char *peer = st->push_dst[0];
        if (hot != st->src[st->me] && peer != st->src[1 - st->me])
            return pc_reduce3_dup(r, at(st->src[0], st, a), at(st->src[1], st, a), at(hot, st, a), at(peer, st, a), c);
    }
    int err = accumulate(r, st, a, c, 0);
    if (err) return err;
    for (int t = 0; t < npush + need_res; t++) {
        char *dst = data(t < npush ? st->push_dst[t] : st->res, st, a);
        if (st->stream) pc_stream_copy(dst, acc, bytes);
        else memcpy(dst, acc, bytes);
    }
    memcpy(data(hot, st, a), acc, bytes);
    return PLANCOLL_SUCCESS;
}

/* RES[lo, lo+n) = D_0 op (D_1 op (... op D_ppn-1)), chunk by chunk; hot = also copy each chunk to the caller's
 * receive buffer while it is in cache (single node, contiguous type: the result is final); with push (hot set),
 * npush pushed receive buffers take it too, and RES only when need_res. */
static int reduce_piece(const struct plancoll_plan_s *plan, const struct dpml *st, int lo, int n, char *hot, int npush,
                        bool need_res)
{
    const struct pc_reduction *r = &plan->red;
    const int p = st->ppn;
    int chunk = n;
    if (r->fast && st->contig) {
        chunk = (int)(CHUNK_BYTES / (size_t)st->ext);
        if (chunk < 1) chunk = 1;
    }
    const bool stream = st->stream && r->fast && st->contig; /* else ordinary stores (MPI_Reduce_local) */
    const bool pushed = hot && st->push && (npush > 0 || !need_res);
    for (int a = lo, c; a < lo + n; a += c) {
        c = lo + n - a < chunk ? lo + n - a : chunk;
        int err = PLANCOLL_SUCCESS;
        if (pushed) {
            err = reduce_chunk_pushed(r, st, a, c, hot, npush, need_res);
            if (err) return err;
            continue;
        }
        if (stream) {
            err = reduce_chunk_streamed(r, st, a, c, hot);
            if (err) return err;
            continue;
        }
        if (p == 1) {
            memcpy(data(st->res, st, a), data(st->src[0], st, a), span(st, c));
        } else if (p == 2 && hot && r->fast3d && hot != st->src[st->me]) { /* in place: hot is an input */
            err = pc_reduce3_dup(r, at(st->src[0], st, a), at(st->src[1], st, a), at(st->res, st, a), at(hot, st, a), c);
            if (err) return err;
            continue;
        } else {
            err = pc_reduce3(r, at(st->src[p - 2], st, a), at(st->src[p - 1], st, a), at(st->res, st, a), c);
            for (int i = p - 3; i >= 0 && !err; i--) err = pc_reduce(r, at(st->src[i], st, a), at(st->res, st, a), c);
        }
        if (err) return err;
        if (hot) memcpy(data(hot, st, a), data(st->res, st, a), (size_t)c * (size_t)st->size);
    }
    return PLANCOLL_SUCCESS;
}

static int post_step(const struct plancoll_plan_s *plan, const struct dpml *st, struct xsm *sm, int s, int base)
{
    const struct pc_xstep *x = &sm->steps[sm->at];
    int peer = st->leader_rank[x->peer * st->l + st->lead];
    sm->req[0] = sm->req[1] = MPI_REQUEST_NULL;
    if (x->recv_n > 0)
        PC_MPI_CHECK(MPI_Irecv(at(x->reduce == PC_XS_PLAIN ? sm->cur : sm->oth, st, base + x->recv_lo), x->recv_n,
                               plan->rtype.type, peer, pc_tag(plan, PC_TAG_DPML) + s, plan->comm, &sm->req[0]));
    if (x->send_n > 0)
        PC_MPI_CHECK(MPI_Isend(at(sm->cur, st, base + x->send_lo), x->send_n, plan->rtype.type, peer, pc_tag(plan, PC_TAG_DPML) + s,
                               plan->comm, &sm->req[1]));
    sm->posted = true;
    return PLANCOLL_SUCCESS;
}

/* Advances sub-partition s's step list as far as its messages allow; *done when the result is in RES. */
static int advance(const struct plancoll_plan_s *plan, struct dpml *st, int s, bool *done)
{
    struct xsm *sm = &st->sm[s];
    const int base = pc_dpml_sub_lo(st->count, st->l, st->k, st->lead, s);
    *done = false;
    while (sm->at < sm->nsteps) {
        if (!sm->posted) {
            int err = post_step(plan, st, sm, s, base);
            if (err) return err;
        }
        int f0 = 1, f1 = 1;
        PC_MPI_CHECK(pc_mpi_test(&sm->req[0], &f0, MPI_STATUS_IGNORE));
        PC_MPI_CHECK(pc_mpi_test(&sm->req[1], &f1, MPI_STATUS_IGNORE));
        if (!f0 || !f1) return PLANCOLL_SUCCESS;
        const struct pc_xstep *x = &sm->steps[sm->at];
        int err = PLANCOLL_SUCCESS;
        if (x->reduce == PC_XS_PEER_FIRST) {
            err = pc_reduce(&plan->red, at(sm->oth, st, base + x->recv_lo), at(sm->cur, st, base + x->recv_lo), x->recv_n);
        } else if (x->reduce == PC_XS_MINE_FIRST) {
            err = pc_reduce(&plan->red, at(sm->cur, st, base), at(sm->oth, st, base), x->recv_n);
            char *t = sm->cur;
            sm->cur = sm->oth;
            sm->oth = t;
        }
        if (err) return err;
        sm->at++;
        sm->posted = false;
    }
    if (sm->cur != st->res) {
        int n = pc_dpml_sub_count(st->count, st->l, st->k, st->lead, s);
        if (st->stream) pc_stream_copy(data(st->res, st, base), data(sm->cur, st, base), span(st, n));
        else memcpy(data(st->res, st, base), data(sm->cur, st, base), span(st, n));
    }
    *done = true;
    return PLANCOLL_SUCCESS;
}

static int start_exchange(struct dpml *st, int s)
{
    st->started[s] = st->seq;
    st->inflight++;
    if (st->preq) {
#if PC_HAVE_PERSISTENT_COLL
        PC_MPI_CHECK(MPI_Start(&st->preq[s]));
#else
        int lo = pc_dpml_sub_lo(st->count, st->l, st->k, st->lead, s);
        int n = pc_dpml_sub_count(st->count, st->l, st->k, st->lead, s);
        PC_MPI_CHECK(pc_mpi_iallreduce(MPI_IN_PLACE, at(st->res, st, lo), n, st->type, st->op, st->comm, &st->preq[s]));
#endif
        return PLANCOLL_SUCCESS;
    }
    struct xsm *sm = &st->sm[s];
    sm->at = 0;
    sm->posted = false;
    sm->cur = st->res;
    sm->oth = st->tmp;
    return PLANCOLL_SUCCESS;
}

/* Moves every exchange in flight along; announces each finished sub-partition to the node. */
static int progress_exchanges(const struct plancoll_plan_s *plan, struct dpml *st, bool *moved)
{
    for (int s = 0; s < st->k && st->inflight > 0; s++) {
        if (st->started[s] != st->seq || st->finished[s] == st->seq) continue;
        bool done = false;
        if (st->preq) {
            int flag = 0;
            PC_MPI_CHECK(pc_mpi_test(&st->preq[s], &flag, MPI_STATUS_IGNORE));
            done = flag != 0;
        } else {
            int err = advance(plan, st, s, &done);
            if (err) return err;
        }
        if (!done) continue;
        if (st->preq && plan->red.settle_nans) /* MPI's NaNs may differ between the leaders (plan.h) */
            plan->red.settle_nans(data(st->res, st, pc_dpml_sub_lo(st->count, st->l, st->k, st->lead, s)),
                                  pc_dpml_sub_count(st->count, st->l, st->k, st->lead, s));
        st->finished[s] = st->seq;
        st->inflight--;
        if (st->stream) pc_stream_fence();
        pc_flag_post(res_flag(st, st->lead, s), st->seq);
        *moved = true;
    }
    return PLANCOLL_SUCCESS;
}

/* ---- one execution as a resumable schedule (start, advance): every wait is a test that returns not-done ----
 * HOLD takes the segment's data area (another started execution may still use it on this rank) and, when another
 * plan used it since this plan's last execution, arrives at this plan's own node barrier (its flags, not the
 * layout's: executions in flight may reach barriers in different orders on different ranks); OPEN tests it;
 * HAND_OVER is step 1; INPUTS waits for the inputs of this leader's partition, then reduces each sub-partition
 * and starts its exchange (steps 2-3); COLLECT copies every announced sub-partition back (step 4), a leader
 * moving its exchanges along. */
enum dpml_phase { DP_HOLD, DP_OPEN, DP_HAND_OVER, DP_INPUTS, DP_COLLECT, DP_DONE };

static inline _Atomic uint64_t *barrier_flag(const struct dpml *st, int i)
{
    return pc_segment_flag(st->seg, st->first_flag + st->ppn + st->l * st->k + i);
}

static bool barrier_passed(const struct dpml *st)
{
    for (int i = 0; i < st->ppn; i++)
        if (atomic_load_explicit(barrier_flag(st, i), memory_order_acquire) < st->barriers) return false;
    return true;
}

/* Steps 2-3 for leader j, once every input of partition j is there: reduce each sub-partition, then announce it
 * (one node) or start its exchange. *ready false: an input is not handed over yet (tested again later). */
static int lead_partition(const struct plancoll_plan_s *plan, struct dpml *st, const char *in, char *rbuf, bool *ready)
{
    const struct pc_layout *L = plan->layout;
    const int j = st->lead;
    *ready = false;
    for (; st->next_input < st->ppn; st->next_input++) {
        int i = st->next_input;
        if (i == st->me) {
            st->src[i] = in;
            continue;
        }
        if (atomic_load_explicit(in_flag(st, i), memory_order_acquire) < pc_dpml_in_ready(st->seq, st->l, i, j))
            return PLANCOLL_SUCCESS;
        const struct in_desc *d = &st->desc[i];
        st->src[i] = d->in_heap ? (const char *)pc_heap_peer_address(L, i, d->arena, (size_t)d->offset) - st->tlb
                                : st->in_slot[j * st->ppn + i];
    }
    *ready = true;
    char *hot = st->N == 1 && st->contig ? rbuf : NULL;
    /* push: the node ranks whose receive buffers lie in the heap this execution (read after their flags) */
    int npush = 0;
    bool need_res = true;
    if (st->push) {
        need_res = false;
        for (int i = 0; i < st->ppn; i++) {
            const struct in_desc *d = &st->desc[i];
            if (i == st->me) continue;
            if (d->out_heap)
                st->push_dst[npush++] = (char *)pc_heap_peer_address(L, i, d->out_arena, (size_t)d->out_offset) - st->tlb;
            else
                need_res = true;
        }
    }
    for (int s = 0; s < st->k; s++) {
        int lo = pc_dpml_sub_lo(st->count, st->l, st->k, j, s), n = pc_dpml_sub_count(st->count, st->l, st->k, j, s);
        if (n == 0) continue;
        int err = reduce_piece(plan, st, lo, n, hot, npush, need_res);
        if (err) return err;
        if (st->N == 1) {
            if (st->stream) pc_stream_fence();
            pc_flag_post(res_flag(st, j, s), st->seq);
            if (hot) st->copied[j * st->k + s] = st->seq;
            continue;
        }
        if ((err = start_exchange(st, s))) return err;
        bool moved = false;
        if ((err = progress_exchanges(plan, st, &moved))) return err;
    }
    return PLANCOLL_SUCCESS;
}

static int copy_back(const struct plancoll_plan_s *plan, const struct dpml *st, char *rbuf, int lo, int n)
{
    if (st->contig) {
        memcpy(data(rbuf, st, lo), data(st->res, st, lo), (size_t)n * (size_t)st->size);
        return PLANCOLL_SUCCESS;
    }
    return pc_copy_typed(plan, at(st->res, st, lo), n, &plan->rtype, at(rbuf, st, lo), n, &plan->rtype);
}

/* Step 4, one pass: copy back every sub-partition announced since (a leader moves its exchanges along first). */
static int collect_pass(const struct plancoll_plan_s *plan, struct dpml *st, char *rbuf, bool *moved)
{
    if (st->inflight > 0) {
        int err = progress_exchanges(plan, st, moved);
        if (err) return err;
    }
    const int first = st->lead >= 0 ? st->lead : st->me % st->l;
    for (int t = 0; t < st->l; t++) {
        int j = (first + t) % st->l;
        for (int s = 0; s < st->k; s++) {
            int n = pc_dpml_sub_count(st->count, st->l, st->k, j, s);
            if (n == 0 || st->copied[j * st->k + s] == st->seq) continue;
            if (atomic_load_explicit(res_flag(st, j, s), memory_order_acquire) < st->seq) continue;
            /* pushed: leader j wrote it into rbuf before it raised the flag */
            int err = st->pushed_here ? PLANCOLL_SUCCESS
                                      : copy_back(plan, st, rbuf, pc_dpml_sub_lo(st->count, st->l, st->k, j, s), n);
            if (err) return err;
            st->copied[j * st->k + s] = st->seq;
            st->collected++;
            *moved = true;
        }
    }
    return PLANCOLL_SUCCESS;
}

static int dpml_step(struct plancoll_plan_s *plan, struct dpml *st, bool *moved)
{
    const char *in = plan->in_place ? plan->run_recvbuf : plan->run_sendbuf;
    char *rbuf = plan->run_recvbuf;
    int err;
    switch (st->phase) {
    case DP_HOLD:
        if (!pc_segment_try_hold(st->seg, st->token)) return PLANCOLL_SUCCESS;
        if (pc_segment_claim(st->seg, st->token)) {
            st->phase = DP_HAND_OVER;
        } else {
            pc_flag_post(barrier_flag(st, st->me), ++st->barriers);
            st->phase = DP_OPEN;
        }
        *moved = true;
        return PLANCOLL_SUCCESS;
    case DP_OPEN:
        if (!barrier_passed(st)) return PLANCOLL_SUCCESS;
        st->phase = DP_HAND_OVER;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case DP_HAND_OVER:
        st->seq++;
        hand_over(plan, st, in, rbuf);
        st->next_input = 0;
        st->phase = st->lead >= 0 && pc_dpml_part_count(st->count, st->l, st->lead) > 0 ? DP_INPUTS : DP_COLLECT;
        *moved = true;
        return PLANCOLL_SUCCESS;
    case DP_INPUTS: {
        bool ready;
        if ((err = lead_partition(plan, st, in, rbuf, &ready))) return err;
        if (ready) st->phase = DP_COLLECT, *moved = true;
        return PLANCOLL_SUCCESS;
    }
    case DP_COLLECT:
        if (st->collected < 0) { /* the first pass: count what the leader copied while reducing */
            st->collected = 0;
            for (int i = 0; i < st->l * st->k; i++) st->collected += st->copied[i] == st->seq;
        }
        if ((err = collect_pass(plan, st, rbuf, moved))) return err;
        if (st->collected >= st->pieces && st->inflight == 0) st->phase = DP_DONE, *moved = true;
        return PLANCOLL_SUCCESS;
    case DP_DONE:
        return PLANCOLL_SUCCESS;
    }
    return PLANCOLL_SUCCESS;
}

int pc_dpml_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf)
{
    struct dpml *st = plan->impl;
    plan->run_sendbuf = sbuf;
    plan->run_recvbuf = rbuf;
    if (st->trivial) {
        st->phase = DP_DONE;
        return pc_allreduce_start(plan, sbuf, rbuf);
    }
    st->phase = DP_HOLD;
    st->collected = -1;
    return PLANCOLL_SUCCESS;
}

int pc_dpml_advance(struct plancoll_plan_s *plan, bool *done)
{
    struct dpml *st = plan->impl;
    bool moved = true;
    int err = PLANCOLL_SUCCESS;
    while (!err && moved && st->phase != DP_DONE) {
        moved = false;
        err = dpml_step(plan, st, &moved);
    }
    *done = err || st->phase == DP_DONE;
    if (*done && st->seg) pc_segment_unhold(st->seg, st->token);
    return err;
}
