/* The node census (census.h): surveyed once per group of processes, kept for the life of the process. */
#include "shm/census.h"

#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/errors.h"
#include "shm/mpi_error.h"
#include "shm/requests.h"
#include "shm/layout.h"

static struct pc_census *censuses;                    /* the world's first, then newest first */
static MPI_Comm node_template = MPI_COMM_NULL;        /* the world census's node communicator */
static MPI_Comm leader_template = MPI_COMM_NULL;      /* the world's "node rank j of every node" communicator */
static int finalize_keyval = MPI_KEYVAL_INVALID;

static void census_free(struct pc_census *c)
{
    if (c->group != MPI_GROUP_NULL) MPI_Group_free(&c->group);
    free(c->member);
    free(c->node_count);
    free(c);
}

/* At MPI_Finalize (MPI_COMM_SELF's attributes go first, while every communicator is still valid): every
 * process frees the templates in the same order. */
static int census_finalize(MPI_Comm comm, int keyval, void *value, void *extra)
{
    (void)comm;
    (void)value;
    (void)extra;
    if (leader_template != MPI_COMM_NULL) MPI_Comm_free(&leader_template);
    if (node_template != MPI_COMM_NULL) MPI_Comm_free(&node_template);
    while (censuses) {
        struct pc_census *c = censuses;
        censuses = c->next;
        census_free(c);
    }
    MPI_Comm_free_keyval(&keyval);
    finalize_keyval = MPI_KEYVAL_INVALID;
    return MPI_SUCCESS;
}

/* Every process of group is in c: index[r] is the census position of the group's rank r. */
static bool covers(const struct pc_census *c, MPI_Group group, int size, const int *ranks, int *index)
{
    if (size > c->size) return false;
    if (MPI_Group_translate_ranks(group, size, ranks, c->group, index) != MPI_SUCCESS) return false;
    for (int r = 0; r < size; r++)
        if (index[r] == MPI_UNDEFINED) return false;
    return true;
}

static int *identity(int size)
{
    int *ranks = malloc(sizeof(int) * (size_t)(size > 0 ? size : 1));
    if (ranks)
        for (int r = 0; r < size; r++) ranks[r] = r;
    return ranks;
}

const struct pc_census *pc_census_find(MPI_Group group, int size, const int *ranks, int *index)
{
    for (const struct pc_census *c = censuses; c; c = c->next)
        if (covers(c, group, size, ranks, index)) return c;
    return NULL;
}

static uint64_t host_hash(void)
{
    char name[MPI_MAX_PROCESSOR_NAME] = "";
    int len = 0;
    if (MPI_Get_processor_name(name, &len) != MPI_SUCCESS || len < 0) len = 0;
    return pc_hash_bytes(PC_HASH_SEED, name, (size_t)len);
}

/* Drops the censuses of subsets of c's group (c covers them) and records c; the world's stays first. */
static void record(struct pc_census *c)
{
    int *ranks = NULL, *index = NULL;
    for (struct pc_census **at = &censuses; *at;) {
        struct pc_census *old = *at;
        bool subset = false;
        if (!old->world && old->size <= c->size) {
            if (!ranks || !index) {
                free(ranks);
                free(index);
                ranks = identity(c->size);
                index = malloc(sizeof(int) * (size_t)c->size);
            }
            subset = ranks && index && covers(c, old->group, old->size, ranks, index);
        }
        if (subset) {
            *at = old->next;
            census_free(old);
        } else {
            at = &old->next;
        }
    }
    free(ranks);
    free(index);
    if (c->world || !censuses || !censuses->world) {
        c->next = censuses;
        censuses = c;
    } else {
        c->next = censuses->next;
        censuses->next = c;
    }
}

int pc_census_take(struct pc_layout *L, MPI_Group group, int *index, const struct pc_census **out)
{
    const int P = L->size;
    *out = NULL;
    if (finalize_keyval == MPI_KEYVAL_INVALID) {
        PC_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, census_finalize, &finalize_keyval, NULL));
        PC_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL));
    }
    /* The one blocking collective of a survey: MPI alone knows which processes share memory. */
    MPI_Comm node;
    PC_MPI_CHECK(MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank, MPI_INFO_NULL, &node));
    /* My node's first rank (node rank 0: the key was the rank), found without communication. */
    MPI_Group node_group;
    int zero = 0, first = MPI_UNDEFINED;
    MPI_Comm_group(node, &node_group);
    MPI_Group_translate_ranks(node_group, 1, &zero, group, &first);
    MPI_Group_free(&node_group);
    int domains = 1, domain = -1;
    pc_topology_numa(&domains, &domain);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    uint64_t h = host_hash();
    /* everything else in one allgather: first rank of the node, host (64-bit hash), cores, NUMA */
    int mine[6] = {first, (int)(uint32_t)h, (int)(uint32_t)(h >> 32), cores > 0 ? (int)cores : 1, domains, domain};
    int *all = malloc(sizeof(int) * 6 * (size_t)P);
    struct pc_census *c = calloc(1, sizeof *c);
    if (c) {
        c->group = MPI_GROUP_NULL;
        c->member = malloc(sizeof *c->member * (size_t)P);
        c->node_count = calloc((size_t)P, sizeof(int));
    }
    int *node_of_first = malloc(sizeof(int) * (size_t)P);
    uint32_t *hosts = malloc(sizeof(uint32_t) * 2 * (size_t)P);
    int err = all && c && c->member && c->node_count && node_of_first && hosts
                  ? PLANCOLL_SUCCESS
                  : pc_error(PLANCOLL_ERR_NOMEM, "node census of %d ranks", P);
    MPI_Request req;
    int rc = MPI_Iallgather(mine, 6, MPI_INT, all ? all : mine, 6, MPI_INT, L->comm, &req);
    int werr = rc == MPI_SUCCESS ? pc_wait_layout(L, 1, &req) : pc_mpi_error(rc, "MPI_Iallgather (node census)");
    if (!err) err = werr;
    if (!err && first == MPI_UNDEFINED) err = pc_error(PLANCOLL_ERR_MPI, "node census: the node's first rank is not in the communicator");
    if (!err) {
        int nhosts = 0;
        for (int r = 0; r < P; r++) node_of_first[r] = -1;
        for (int r = 0; r < P && !err; r++) {
            const int *a = all + 6 * r;
            if (a[0] < 0 || a[0] >= P) {
                err = pc_error(PLANCOLL_ERR_MPI, "node census: rank %d reports node first rank %d", r, a[0]);
                break;
            }
            if (node_of_first[a[0]] < 0) node_of_first[a[0]] = c->nnodes++;
            struct pc_census_member *m = &c->member[r];
            m->node = node_of_first[a[0]];
            c->node_count[m->node]++;
            m->host = -1;
            for (int k = 0; k < nhosts && m->host < 0; k++)
                if (hosts[2 * k] == (uint32_t)a[1] && hosts[2 * k + 1] == (uint32_t)a[2]) m->host = k;
            if (m->host < 0) {
                hosts[2 * nhosts] = (uint32_t)a[1];
                hosts[2 * nhosts + 1] = (uint32_t)a[2];
                m->host = nhosts++;
            }
            m->host_cores = a[3] > 0 ? a[3] : 1;
            m->numa_domains = a[4] > 0 ? a[4] : 1;
            m->numa_domain = a[5];
        }
    }
    if (!err) {
        MPI_Group world;
        int same = MPI_UNEQUAL;
        MPI_Comm_group(L->comm, &c->group);
        MPI_Comm_group(MPI_COMM_WORLD, &world);
        MPI_Group_compare(c->group, world, &same);
        MPI_Group_free(&world);
        c->size = P;
        c->world = same == MPI_IDENT;
    }
    free(all);
    free(node_of_first);
    free(hosts);
    if (err) {
        if (c) census_free(c);
        MPI_Comm_free(&node);
        return err;
    }
    if (c->world && node_template == MPI_COMM_NULL) node_template = node;
    else if (L->node_comm == MPI_COMM_NULL) L->node_comm = node;
    else MPI_Comm_free(&node);
    record(c);
    for (int r = 0; r < P; r++) index[r] = r;
    *out = c;
    return PLANCOLL_SUCCESS;
}

MPI_Comm pc_census_node_template(void) { return node_template; }

int pc_census_leader_template(struct pc_layout *L, MPI_Comm *out)
{
    if (leader_template == MPI_COMM_NULL)
        PC_MPI_CHECK(MPI_Comm_split(L->comm, L->node_rank, L->rank, &leader_template));
    *out = leader_template;
    return PLANCOLL_SUCCESS;
}

void pc_census_counts(int *ncensuses, int *communicators)
{
    int n = 0;
    for (const struct pc_census *c = censuses; c; c = c->next) n++;
    *ncensuses = n;
    *communicators = (node_template != MPI_COMM_NULL) + (leader_template != MPI_COMM_NULL);
}
