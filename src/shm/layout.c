#include "shm/layout.h"

#include <stdlib.h>

#include "base/errors.h"
#include "base/phase_times.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#include "shm/mpi_error.h"
#include "shm/requests.h"
#include "shm/census.h"
#include "shm/heap.h"
#include "shm/nomem.h"
#include "shm/reserve.h"
#include "shm/segment.h"
#include "shm/wait.h"

static int layout_keyval = MPI_KEYVAL_INVALID;

static void layout_free(struct pc_layout *L)
{
    double t0 = pc_phase_start();
    pc_heap_destroy(L->heap); /* collective over the node (MPI_Win_free): every heap pointer dies here */
    if (L->segment) {
        struct pc_segment *seg = L->segment;
        L->segment = NULL;
        pc_segment_release(seg, -1, 0);
    }
    pc_node_shm_free(&L->ctl_shm);
    if (L->leader_comm != MPI_COMM_NULL) MPI_Comm_free(&L->leader_comm);
    if (L->node_comm != MPI_COMM_NULL) MPI_Comm_free(&L->node_comm);
    if (L->comm != MPI_COMM_NULL) MPI_Comm_free(&L->comm);
    free(L->node_of);
    free(L->local_rank_of);
    free(L->node_sizes);
    free(L->node_first);
    free(L->node_ranks);
    free(L->numa_of_local);
    free(L->numa_of_rank);
    free(L);
    pc_phase_add(PC_PHASE_LAYOUT_FREE, t0);
}

void pc_layout_release(struct pc_layout *L)
{
    if (L && --L->refcount == 0) layout_free(L);
}

/* The layouts still held by a communicator's attribute, newest first. MPI_Finalize deletes MPI_COMM_WORLD's (and
 * other surviving communicators') attributes at a point the standard leaves open: Open MPI 4.1 does it after its
 * one-sided component is gone, where the MPI_Win_free of a layout's node heap calls a NULL function (measured: a
 * crash in ompi_win_free from ompi_comm_finalize, after every test's verdict). MPI_COMM_SELF's attributes, though,
 * are deleted first, while all of MPI works (MPI-4.0 11.2.4): an attribute there deletes every layout's attribute
 * from its communicator, newest first (the same order on every rank, as layouts are made collectively). */
static struct pc_layout *attached_head;
static int finalize_keyval = MPI_KEYVAL_INVALID;

static void detach(struct pc_layout *L)
{
    if (L->attached_prev) L->attached_prev->attached_next = L->attached_next;
    else if (attached_head == L) attached_head = L->attached_next;
    if (L->attached_next) L->attached_next->attached_prev = L->attached_prev;
    L->attached_prev = L->attached_next = NULL;
    L->attached = MPI_COMM_NULL;
}

static int delete_layout(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
#if PC_MPI_SIMULATED
    /* SMPI deletes MPI_COMM_SELF's attributes, then all of MPI_COMM_WORLD's in one simulated rank, after MPI is
     * gone (docs/smpi.md "Finalize"): freeing a layout there (communicators, windows: collective) would fail or
     * deadlock. Such a layout is left to the end of the simulation, which ends the process; this callback touches
     * neither it nor this rank's globals. Layouts of other communicators are freed with them, as always. */
    if (((struct pc_layout *)value)->attached_predefined) return MPI_SUCCESS;
#endif
    detach(value);
    pc_layout_release(value);
    return MPI_SUCCESS;
}

static int layouts_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)value;
    (void)extra;
    /* MPI_COMM_SELF's own layout goes with the rest of MPI_COMM_SELF's attributes, now. The list is searched
     * afresh each time: freeing one layout may free another's communicator (and detach it). */
    struct pc_layout *last = NULL;
    for (;;) {
        struct pc_layout *L = attached_head;
        while (L && L->attached == MPI_COMM_SELF) L = L->attached_next;
        if (!L || L == last) break; /* none left, or MPI refused to delete it: MPI_Finalize's own order then */
        last = L;
        MPI_Comm_delete_attr(L->attached, layout_keyval); /* delete_layout detaches L */
    }
    MPI_Comm_free_keyval(&keyval);
    finalize_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* The node map, NUMA map and host census of L->comm from a census covering its processes (index[r]: census
 * position of rank r). Local: the same computation on every rank from the same facts. */
static int derive(struct pc_layout *L, const struct pc_census *c, const int *index)
{
    const int P = L->size;
    L->node_of = malloc(sizeof(int) * (size_t)P);
    L->local_rank_of = malloc(sizeof(int) * (size_t)P);
    L->node_ranks = malloc(sizeof(int) * (size_t)P);
    L->numa_of_rank = malloc(sizeof(int) * (size_t)P);
    int *mine_of = malloc(sizeof(int) * (size_t)c->nnodes);  /* census node -> node of this layout */
    int *of_mine = malloc(sizeof(int) * (size_t)c->nnodes);  /* node of this layout -> census node */
    int *host_count = calloc((size_t)c->size, sizeof(int)); /* ranks of this layout per census host */
    int *numa_count = NULL;
    bool *bound = NULL;
    int err = PLANCOLL_SUCCESS;
    if (!L->node_of || !L->local_rank_of || !L->node_ranks || !L->numa_of_rank || !mine_of || !of_mine || !host_count) {
        err = pc_error(PLANCOLL_ERR_NOMEM, "layout of %d ranks", P);
        goto out;
    }
    /* Nodes numbered by first appearance in rank order, i.e. by their lowest rank, as MPI_Comm_split_type with
     * the rank as key orders them; node ranks in rank order. */
    for (int k = 0; k < c->nnodes; k++) mine_of[k] = -1;
    L->nnodes = 0;
    for (int r = 0; r < P; r++) {
        int k = c->member[index[r]].node;
        if (mine_of[k] < 0) {
            of_mine[L->nnodes] = k;
            mine_of[k] = L->nnodes++;
        }
        L->node_of[r] = mine_of[k];
    }
    L->node_sizes = calloc((size_t)L->nnodes, sizeof(int));
    L->node_first = calloc((size_t)L->nnodes + 1, sizeof(int));
    numa_count = malloc(sizeof(int) * (size_t)L->nnodes);
    bound = malloc(sizeof(bool) * (size_t)L->nnodes);
    if (!L->node_sizes || !L->node_first || !numa_count || !bound) {
        err = pc_error(PLANCOLL_ERR_NOMEM, "layout of %d nodes", L->nnodes);
        goto out;
    }
    for (int r = 0; r < P; r++) L->local_rank_of[r] = L->node_sizes[L->node_of[r]]++;
    for (int k = 0; k < L->nnodes; k++) L->node_first[k + 1] = L->node_first[k] + L->node_sizes[k];
    for (int r = 0; r < P; r++) L->node_ranks[L->node_first[L->node_of[r]] + L->local_rank_of[r]] = r;
    L->node_id = L->node_of[L->rank];
    L->node_rank = L->local_rank_of[L->rank];
    L->node_size = L->node_sizes[L->node_id];

    /* Host census: this layout's ranks on each host against that host's cores. */
    const struct pc_census_member *me = &c->member[index[L->rank]];
    for (int r = 0; r < P; r++) host_count[c->member[index[r]].host]++;
    L->host_ranks = host_count[me->host];
    L->host_cores = me->host_cores;
    L->oversubscribed = L->host_ranks > L->host_cores;
    L->any_oversubscribed = false;
    L->crowded_ranks = 0;
    L->crowded_cores = 1;
    for (int r = 0; r < P; r++) {
        const struct pc_census_member *m = &c->member[index[r]];
        if (host_count[m->host] > m->host_cores) L->any_oversubscribed = true;
        /* ranks/cores compared crosswise, in integers: every rank picks the same host's figures */
        long a = (long)host_count[m->host] * L->crowded_cores, b = (long)L->crowded_ranks * m->host_cores;
        if (a > b || (a == b && host_count[m->host] > L->crowded_ranks)) {
            L->crowded_ranks = host_count[m->host];
            L->crowded_cores = m->host_cores;
        }
    }

    /* NUMA: a node's domain count is the largest any of its ranks sees; binding places ranks only if it places
     * every rank of the node, otherwise the node's ranks are dealt over the domains in blocks. */
    for (int k = 0; k < L->nnodes; k++) {
        numa_count[k] = 1;
        bound[k] = true;
    }
    for (int r = 0; r < P; r++) {
        const struct pc_census_member *m = &c->member[index[r]];
        int k = L->node_of[r];
        if (m->numa_domains > numa_count[k]) numa_count[k] = m->numa_domains;
        if (m->numa_domain < 0) bound[k] = false;
    }
    L->max_numa = 1;
    for (int r = 0; r < P; r++) {
        int k = L->node_of[r];
        L->numa_of_rank[r] = bound[k] ? c->member[index[r]].numa_domain
                                      : pc_numa_by_rank(L->local_rank_of[r], L->node_sizes[k], numa_count[k]);
        if (numa_count[k] > L->max_numa) L->max_numa = numa_count[k];
    }
    L->num_numa = numa_count[L->node_id];
    L->numa_from_binding = bound[L->node_id];
    L->numa_of_local = malloc(sizeof(int) * (size_t)L->node_size);
    if (!L->numa_of_local) {
        err = pc_error(PLANCOLL_ERR_NOMEM, "NUMA map");
        goto out;
    }
    for (int i = 0; i < L->node_size; i++) L->numa_of_local[i] = L->numa_of_rank[L->node_ranks[L->node_first[L->node_id] + i]];

    /* The world's templates fit when every node of this layout holds all of that node's world processes, in
     * world order (then its node communicator is the template's group); the leader template when this is the
     * world itself, in its order. Every rank computes this for every node from the same census: one answer. */
    L->node_template_ok = L->leader_template_ok = false;
    if (c->world && pc_census_node_template() != MPI_COMM_NULL) {
        bool fits = true;
        for (int k = 0; k < L->nnodes && fits; k++) {
            if (L->node_sizes[k] != c->node_count[of_mine[k]]) fits = false;
            for (int j = 1; j < L->node_sizes[k] && fits; j++)
                if (index[L->node_ranks[L->node_first[k] + j]] < index[L->node_ranks[L->node_first[k] + j - 1]]) fits = false;
        }
        L->node_template_ok = fits;
        bool world = P == c->size;
        for (int r = 0; r < P && world; r++) world = index[r] == r;
        L->leader_template_ok = fits && world;
    }
out:
    free(mine_of);
    free(of_mine);
    free(host_count);
    free(numa_count);
    free(bound);
    return err;
}

static int layout_create(MPI_Comm comm, struct pc_layout **out)
{
    struct pc_layout *L = calloc(1, sizeof *L);
    if (!L) return pc_error(PLANCOLL_ERR_NOMEM, "layout");
    L->refcount = 1;
    L->comm = L->node_comm = L->leader_comm = MPI_COMM_NULL;
    L->ctl_shm.win = MPI_WIN_NULL;
    L->oversubscribed = true; /* until the host census: yield while waiting */
    L->wait_mode = pc_wait_mode_from_env();
    if (L->wait_mode < 0) L->wait_mode = PC_WAIT_AUTO; /* the plan call reports the bad value */
    /* plancoll's own communicator: MPI_Comm_idup, waited with the wait policy (MPI_Comm_dup blocks and spins) */
    double t = pc_phase_start();
    MPI_Request req;
    int rc = pc_mpi_comm_idup(comm, &L->comm, &req);
    if (rc != MPI_SUCCESS) {
        free(L);
        return pc_mpi_error(rc, "MPI_Comm_idup");
    }
    int err = pc_wait_layout(L, 1, &req);
    pc_phase_add(PC_PHASE_LAYOUT_DUP, t);
    if (err) {
        layout_free(L);
        return err;
    }
    MPI_Comm_set_errhandler(L->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(L->comm, &L->rank);
    MPI_Comm_size(L->comm, &L->size);

    t = pc_phase_start();
    MPI_Group group;
    MPI_Comm_group(L->comm, &group);
    int *ranks = malloc(sizeof(int) * (size_t)L->size), *index = malloc(sizeof(int) * (size_t)L->size);
    if (!ranks || !index) {
        err = pc_error(PLANCOLL_ERR_NOMEM, "layout of %d ranks", L->size);
    } else {
        for (int r = 0; r < L->size; r++) ranks[r] = r;
        const struct pc_census *census = pc_census_find(group, L->size, ranks, index);
        if (!census) err = pc_census_take(L, group, index, &census);
        if (!err) err = derive(L, census, index);
    }
    free(ranks);
    free(index);
    MPI_Group_free(&group);
    pc_phase_add(PC_PHASE_LAYOUT_NODES, t);
    if (err) {
        layout_free(L);
        return err;
    }
    *out = L;
    return PLANCOLL_SUCCESS;
}

int pc_layout_comms(struct pc_layout *L)
{
    if (L->node_comm != MPI_COMM_NULL && L->leader_comm != MPI_COMM_NULL) return PLANCOLL_SUCCESS;
    double t0 = pc_phase_start();
    int err = PLANCOLL_SUCCESS;
    MPI_Request req;
    /* The same branch on every rank: the template flags were computed alike everywhere (derive). */
    if (L->node_comm == MPI_COMM_NULL) {
        if (L->node_template_ok) {
            PC_MPI_CHECK(pc_mpi_comm_idup(pc_census_node_template(), &L->node_comm, &req));
            err = pc_wait_layout(L, 1, &req);
        } else {
            PC_MPI_CHECK(MPI_Comm_split(L->comm, L->node_id, L->rank, &L->node_comm));
        }
    }
    if (!err && L->leader_comm == MPI_COMM_NULL) {
        if (L->leader_template_ok) {
            MPI_Comm leaders;
            err = pc_census_leader_template(L, &leaders);
            if (!err) {
                PC_MPI_CHECK(pc_mpi_comm_idup(leaders, &L->leader_comm, &req));
                err = pc_wait_layout(L, 1, &req);
            }
        } else {
            PC_MPI_CHECK(MPI_Comm_split(L->comm, L->node_rank, L->rank, &L->leader_comm));
        }
    }
    pc_phase_add(PC_PHASE_NODE_COMMS, t0);
    return err;
}

int pc_layout_control(struct pc_layout *L)
{
    if (L->ctl) return PLANCOLL_SUCCESS;
    double t0 = pc_phase_start();
    size_t bytes = sizeof(struct pc_sync_slot) * (size_t)L->node_size;
    int err = pc_node_shm_alloc(L, bytes, &L->ctl_shm);
    if (err) {
        pc_phase_add(PC_PHASE_CONTROL, t0);
        return err;
    }
    /* Memory behind the slots before the first store (reserve.h): a full /dev/shm is an error on every rank, not
     * SIGBUS at the first barrier. The slots are zeroed (every barrier_seq starts at 0). */
    err = pc_shm_reserve_agreed(L, PLANCOLL_SUCCESS, L->ctl_shm.base, L->node_rank == 0 ? bytes : 0,
                                "node control slots");
    if (err) pc_node_shm_free(&L->ctl_shm);
    else L->ctl = (struct pc_sync_slot *)(void *)L->ctl_shm.base;
    pc_phase_add(PC_PHASE_CONTROL, t0);
    return err;
}

int pc_layout_get(MPI_Comm comm, struct pc_layout **out)
{
    if (layout_keyval == MPI_KEYVAL_INVALID)
        PC_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, delete_layout, &layout_keyval, NULL));
    void *value = NULL;
    int found = 0;
    PC_MPI_CHECK(MPI_Comm_get_attr(comm, layout_keyval, &value, &found));
    if (found) {
        struct pc_layout *L = value;
        L->refcount++;
        *out = L;
        return PLANCOLL_SUCCESS;
    }
    struct pc_layout *L = NULL;
    double t0 = pc_phase_start();
    int err = layout_create(comm, &L);
    pc_phase_add(PC_PHASE_LAYOUT, t0);
    if (err) return err;
    int rc = MPI_SUCCESS;
    /* (not under SMPI: MPI no longer works in MPI_COMM_SELF's delete callbacks there, see delete_layout) */
    if (!PC_MPI_SIMULATED && finalize_keyval == MPI_KEYVAL_INVALID) {
        rc = MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, layouts_finalize, &finalize_keyval, NULL);
        if (rc == MPI_SUCCESS) rc = MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL);
    }
    if (rc == MPI_SUCCESS) rc = MPI_Comm_set_attr(comm, layout_keyval, L);
    if (rc != MPI_SUCCESS) {
        layout_free(L);
        return pc_mpi_error(rc, "MPI_Comm_set_attr");
    }
    L->attached = comm;
    L->attached_predefined = comm == MPI_COMM_WORLD || comm == MPI_COMM_SELF;
    L->attached_prev = NULL;
    L->attached_next = attached_head;
    if (attached_head) attached_head->attached_prev = L;
    attached_head = L;
    L->refcount++; /* one for the attribute, one for the caller */
    *out = L;
    return PLANCOLL_SUCCESS;
}

void pc_layout_shape(const struct pc_layout *L, struct pc_shape *s)
{
    s->nranks = L->size;
    s->nnodes = L->nnodes;
    s->min_ppn = L->size;
    s->max_ppn = 0;
    for (int k = 0; k < L->nnodes; k++) {
        if (L->node_sizes[k] < s->min_ppn) s->min_ppn = L->node_sizes[k];
        if (L->node_sizes[k] > s->max_ppn) s->max_ppn = L->node_sizes[k];
    }
    s->oversubscribed = L->any_oversubscribed;
    s->host_ranks = L->crowded_ranks;
    s->host_cores = L->crowded_cores;
    s->numa_domains = L->max_numa;
    /* nodes are numbered by first rank, so consecutive ranks per node means node_of never decreases */
    s->ranks_by_node = true;
    for (int r = 1; r < L->size; r++)
        if (L->node_of[r] < L->node_of[r - 1]) s->ranks_by_node = false;
}
