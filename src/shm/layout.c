#include "layout.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../core/errors.h"
#include "../core/phase_times.h"
#include "../core/plan.h"
#include "heap.h"
#include "wait.h"

static int layout_keyval = MPI_KEYVAL_INVALID;

static void layout_free(struct pc_layout *L)
{
    double t0 = pc_phase_start();
    pc_heap_destroy(L->heap); /* collective over the node (MPI_Win_free): every heap pointer dies here */
    if (L->segment) {
        struct pc_segment *seg = L->segment;
        L->segment = NULL;
        pc_segment_release(seg, 0, 0);
    }
    if (L->ctl_win != MPI_WIN_NULL) {
        MPI_Win_unlock_all(L->ctl_win);
        MPI_Win_free(&L->ctl_win);
    }
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

static int delete_layout(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)keyval;
    (void)extra;
    pc_layout_release(value);
    return MPI_SUCCESS;
}

static int host_census(struct pc_layout *L)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    PC_MPI_CHECK(MPI_Get_processor_name(name, &len));
    uint64_t h = pc_hash_bytes(PC_HASH_SEED, name, (size_t)len);
    MPI_Comm host;
    PC_MPI_CHECK(MPI_Comm_split(L->comm, (int)(h & 0x3fffffff), L->rank, &host));
    MPI_Comm_size(host, &L->host_ranks);
    MPI_Comm_free(&host);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    L->host_cores = cores > 0 ? (int)cores : 1;
    L->oversubscribed = L->host_ranks > L->host_cores;
    int local = L->oversubscribed, any = 0;
    MPI_Request req;
    PC_MPI_CHECK(MPI_Iallreduce(&local, &any, 1, MPI_INT, MPI_LOR, L->comm, &req));
    int err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    L->any_oversubscribed = any != 0;
    return PLANCOLL_SUCCESS;
}

static int discover_nodes(struct pc_layout *L)
{
    PC_MPI_CHECK(MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank, MPI_INFO_NULL, &L->node_comm));
    MPI_Comm_rank(L->node_comm, &L->node_rank);
    MPI_Comm_size(L->node_comm, &L->node_size);
    PC_MPI_CHECK(MPI_Comm_split(L->comm, L->node_rank, L->rank, &L->leader_comm));

    /* Every rank learns (rank of its node's first rank, its node rank) for all ranks in one allgather. */
    int mine[2] = {L->rank, L->node_rank};
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ibcast(&mine[0], 1, MPI_INT, 0, L->node_comm, &req));
    int err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    mine[1] = L->node_rank;
    int *all = malloc(sizeof(int) * 2 * (size_t)L->size);
    L->node_of = malloc(sizeof(int) * (size_t)L->size);
    L->local_rank_of = malloc(sizeof(int) * (size_t)L->size);
    L->node_ranks = malloc(sizeof(int) * (size_t)L->size);
    if (!all || !L->node_of || !L->local_rank_of || !L->node_ranks) {
        free(all);
        return pc_error(PLANCOLL_ERR_NOMEM, "layout of %d ranks", L->size);
    }
    int rc = MPI_Iallgather(mine, 2, MPI_INT, all, 2, MPI_INT, L->comm, &req);
    err = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Iallgather (layout)");
    if (err) {
        free(all);
        return err;
    }
    /* A node's first rank is its own first rank, so nodes are numbered in order of first appearance. */
    int *node_of_first = malloc(sizeof(int) * (size_t)L->size);
    if (!node_of_first) {
        free(all);
        return pc_error(PLANCOLL_ERR_NOMEM, "layout");
    }
    L->nnodes = 0;
    for (int r = 0; r < L->size; r++) {
        int first = all[2 * r];
        if (first == r) node_of_first[r] = L->nnodes++;
        L->node_of[r] = node_of_first[first];
        L->local_rank_of[r] = all[2 * r + 1];
    }
    free(node_of_first);
    free(all);
    L->node_id = L->node_of[L->rank];
    L->node_sizes = calloc((size_t)L->nnodes, sizeof(int));
    L->node_first = calloc((size_t)L->nnodes + 1, sizeof(int));
    if (!L->node_sizes || !L->node_first) return pc_error(PLANCOLL_ERR_NOMEM, "layout");
    for (int r = 0; r < L->size; r++) L->node_sizes[L->node_of[r]]++;
    for (int k = 0; k < L->nnodes; k++) L->node_first[k + 1] = L->node_first[k] + L->node_sizes[k];
    for (int r = 0; r < L->size; r++) L->node_ranks[L->node_first[L->node_of[r]] + L->local_rank_of[r]] = r;
    return PLANCOLL_SUCCESS;
}

static int discover_numa(struct pc_layout *L)
{
    int domains = 1, domain = -1;
    pc_topology_numa(&domains, &domain);
    int mine[2] = {domains, domain};
    int *all = malloc(sizeof(int) * 2 * (size_t)L->node_size);
    L->numa_of_local = malloc(sizeof(int) * (size_t)L->node_size);
    if (!all || !L->numa_of_local) {
        free(all);
        return pc_error(PLANCOLL_ERR_NOMEM, "NUMA map");
    }
    MPI_Request req;
    int rc = MPI_Iallgather(mine, 2, MPI_INT, all, 2, MPI_INT, L->node_comm, &req);
    int err = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Iallgather (NUMA map)");
    if (err) {
        free(all);
        return err;
    }
    /* Binding counts only if it places every rank of the node; otherwise deal ranks over domains. */
    L->num_numa = 1;
    bool all_bound = true;
    for (int i = 0; i < L->node_size; i++) {
        if (all[2 * i] > L->num_numa) L->num_numa = all[2 * i];
        if (all[2 * i + 1] < 0) all_bound = false;
    }
    L->numa_from_binding = all_bound;
    for (int i = 0; i < L->node_size; i++)
        L->numa_of_local[i] = all_bound ? all[2 * i + 1] : pc_numa_by_rank(i, L->node_size, L->num_numa);
    free(all);
    /* Every rank's domain and the largest domain count, so leaders of other nodes can be placed too. */
    int pair[2] = {L->numa_of_local[L->node_rank], L->num_numa};
    int *every = malloc(sizeof(int) * 2 * (size_t)L->size);
    L->numa_of_rank = malloc(sizeof(int) * (size_t)L->size);
    if (!every || !L->numa_of_rank) {
        free(every);
        return pc_error(PLANCOLL_ERR_NOMEM, "NUMA map");
    }
    rc = MPI_Iallgather(pair, 2, MPI_INT, every, 2, MPI_INT, L->comm, &req);
    err = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Iallgather (NUMA map)");
    L->max_numa = 1;
    for (int r = 0; !err && r < L->size; r++) {
        L->numa_of_rank[r] = every[2 * r];
        if (every[2 * r + 1] > L->max_numa) L->max_numa = every[2 * r + 1];
    }
    free(every);
    return err;
}

static int create_control(struct pc_layout *L)
{
    MPI_Aint bytes = L->node_rank == 0 ? (MPI_Aint)sizeof(struct pc_sync_slot) * L->node_size : 0;
    void *mine = NULL;
    PC_MPI_CHECK(MPI_Win_allocate_shared(bytes, 1, MPI_INFO_NULL, L->node_comm, &mine, &L->ctl_win));
    MPI_Aint qsize;
    int disp;
    void *base;
    PC_MPI_CHECK(MPI_Win_shared_query(L->ctl_win, 0, &qsize, &disp, &base));
    L->ctl = base;
    PC_MPI_CHECK(MPI_Win_lock_all(MPI_MODE_NOCHECK, L->ctl_win));
    if (L->node_rank == 0)
        for (int i = 0; i < L->node_size; i++) atomic_init(&L->ctl[i].barrier_seq, 0);
    PC_MPI_CHECK(MPI_Win_sync(L->ctl_win));
    MPI_Request req;
    PC_MPI_CHECK(MPI_Ibarrier(L->node_comm, &req));
    int err = pc_wait_layout(L, 1, &req);
    if (err) return err;
    PC_MPI_CHECK(MPI_Win_sync(L->ctl_win));
    return PLANCOLL_SUCCESS;
}

static int layout_create(MPI_Comm comm, struct pc_layout **out)
{
    struct pc_layout *L = calloc(1, sizeof *L);
    if (!L) return pc_error(PLANCOLL_ERR_NOMEM, "layout");
    L->refcount = 1;
    L->comm = L->node_comm = L->leader_comm = MPI_COMM_NULL;
    L->ctl_win = MPI_WIN_NULL;
    double t0 = pc_phase_start();
    int rc = MPI_Comm_dup(comm, &L->comm);
    pc_phase_add(PC_PHASE_LAYOUT_DUP, t0);
    if (rc != MPI_SUCCESS) {
        free(L);
        return pc_mpi_error(rc, "MPI_Comm_dup");
    }
    MPI_Comm_set_errhandler(L->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(L->comm, &L->rank);
    MPI_Comm_size(L->comm, &L->size);
    L->oversubscribed = true; /* until the host census: yield while waiting */
    L->wait_mode = pc_wait_mode_from_env();
    if (L->wait_mode < 0) L->wait_mode = PC_WAIT_AUTO; /* the plan call reports the bad value */
    double t = pc_phase_start();
    int err = discover_nodes(L);
    pc_phase_add(PC_PHASE_LAYOUT_NODES, t);
    t = pc_phase_start();
    if (!err) err = discover_numa(L);
    pc_phase_add(PC_PHASE_LAYOUT_NUMA, t);
    t = pc_phase_start();
    if (!err) err = host_census(L);
    pc_phase_add(PC_PHASE_LAYOUT_HOST, t);
    t = pc_phase_start();
    if (!err) err = create_control(L);
    pc_phase_add(PC_PHASE_LAYOUT_CONTROL, t);
    if (err) {
        layout_free(L);
        return err;
    }
    *out = L;
    return PLANCOLL_SUCCESS;
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
    int rc = MPI_Comm_set_attr(comm, layout_keyval, L);
    if (rc != MPI_SUCCESS) {
        layout_free(L);
        return pc_mpi_error(rc, "MPI_Comm_set_attr");
    }
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
    s->numa_domains = L->max_numa;
    /* nodes are numbered by first rank, so consecutive ranks per node means node_of never decreases */
    s->ranks_by_node = true;
    for (int r = 1; r < L->size; r++)
        if (L->node_of[r] < L->node_of[r - 1]) s->ranks_by_node = false;
}
