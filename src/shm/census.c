/* The node census (census.h): surveyed once per group of processes, kept for the life of the process. */
#include "shm/census.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/errors.h"
#include "shm/mpi_error.h"
#include "shm/requests.h"
#include "shm/layout.h"
#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */
#if PC_MPI_SIMULATED
#include <simgrid/host.h>
#endif

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

/* Fields of one process's entry in the census allgather. */
enum census_field {
    CF_FIRST,                  /* the first rank of its node (MPI_Comm_split_type) */
    CF_HOST_LO, CF_HOST_HI,    /* 64-bit hash of the host name */
    CF_CORES,                  /* online CPUs of the host */
    CF_NUMA_DOMAINS, CF_NUMA_DOMAIN,
    CF_EMULATE,                /* PLANCOLL_EMULATE_NODES: 0 unset, -1 invalid, else K */
    CF_HOST_RANK, CF_HOST_SIZE, /* position among the host's world ranks from the launcher, -1 unknown */
    CF_COUNT
};

static const char *emulate_text(int k, char *buf, size_t n)
{
    if (k == 0) return "unset";
    if (k < 0) return "invalid";
    snprintf(buf, n, "%d", k);
    return buf;
}

/* PLANCOLL_EMULATE_NODES agreed from the census entries (the same data on every rank, so the same verdict on
 * every rank): *k the number of blocks per host (0: no emulation), block[r] the emulated node of rank r within
 * its real node. Positions come from the launcher; a survey of MPI_COMM_WORLD itself can count them instead. */
static int agree_emulation(const int *all, int P, bool world, int *k, int *block)
{
    const struct pc_emulation *mine = pc_emulation_setting();
    *k = 0;
    for (int r = 0; r < P; r++) block[r] = 0;
    for (int r = 0; r < P; r++)
        if (all[CF_COUNT * r + CF_EMULATE] < 0) {
            if (mine->nodes < 0)
                return pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_EMULATE_NODES='%s': not a positive integer (the number of emulated nodes per host)", mine->text);
            return pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_EMULATE_NODES of rank %d is not a positive integer (see that rank's plancoll_error_detail)", r);
        }
    for (int r = 1; r < P; r++) {
        int a = all[CF_EMULATE], b = all[CF_COUNT * r + CF_EMULATE];
        if (a != b) {
            char ba[16], bb[16];
            return pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_EMULATE_NODES differs across ranks: %s on rank 0, %s on rank %d",
                            emulate_text(a, ba, sizeof ba), emulate_text(b, bb, sizeof bb), r);
        }
    }
    int K = P > 0 ? all[CF_EMULATE] : 0;
    if (K == 0) return PLANCOLL_SUCCESS;
    bool known = true;
    for (int r = 0; r < P; r++)
        if (all[CF_COUNT * r + CF_HOST_RANK] < 0) known = false;
    int *host_rank = malloc(sizeof(int) * (size_t)P), *host_size = malloc(sizeof(int) * (size_t)P);
    if (!host_rank || !host_size) {
        free(host_rank);
        free(host_size);
        return pc_error(PLANCOLL_ERR_NOMEM, "PLANCOLL_EMULATE_NODES for %d ranks", P);
    }
    int err = PLANCOLL_SUCCESS;
    for (int r = 0; r < P; r++) {
        const int *a = all + CF_COUNT * r;
        if (known) {
            host_rank[r] = a[CF_HOST_RANK];
            host_size[r] = a[CF_HOST_SIZE];
        } else if (world) {
            /* the survey is of MPI_COMM_WORLD in its order: count the host's ranks */
            host_rank[r] = host_size[r] = 0;
            for (int s = 0; s < P; s++) {
                const int *b = all + CF_COUNT * s;
                if (b[CF_HOST_LO] == a[CF_HOST_LO] && b[CF_HOST_HI] == a[CF_HOST_HI]) {
                    host_size[r]++;
                    if (s < r) host_rank[r]++;
                }
            }
        } else {
            err = pc_error(PLANCOLL_ERR_ENV,
                           "PLANCOLL_EMULATE_NODES: the launcher did not give every rank its place among its host's ranks "
                           "(OMPI_COMM_WORLD_LOCAL_RANK/SIZE or MPI_LOCALRANKID/MPI_LOCALNRANKS): plan on MPI_COMM_WORLD first");
            break;
        }
        if (K > host_size[r]) {
            err = pc_error(PLANCOLL_ERR_ENV, "PLANCOLL_EMULATE_NODES=%d is more than the %d ranks on the host of rank %d",
                           K, host_size[r], r);
            break;
        }
        block[r] = pc_emulated_block(host_rank[r], host_size[r], K);
    }
    free(host_rank);
    free(host_size);
    if (err) {
        for (int r = 0; r < P; r++) block[r] = 0;
        return err;
    }
    *k = K;
    return PLANCOLL_SUCCESS;
}

int pc_census_take(struct pc_layout *L, MPI_Group group, int *index, const struct pc_census **out)
{
    const int P = L->size;
    *out = NULL;
    /* Under SMPI, MPI_COMM_SELF's attributes are deleted when MPI no longer works (docs/smpi.md "Finalize"): the
     * templates and censuses are left to the end of the simulation, which ends the process. */
    if (!PC_MPI_SIMULATED && finalize_keyval == MPI_KEYVAL_INVALID) {
        PC_MPI_CHECK(MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, census_finalize, &finalize_keyval, NULL));
        PC_MPI_CHECK(MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, NULL));
    }
    /* The one blocking collective of a survey: MPI alone knows which processes share memory. */
    MPI_Comm node;
    PC_MPI_CHECK(MPI_Comm_split_type(L->comm, MPI_COMM_TYPE_SHARED, L->rank, MPI_INFO_NULL, &node));
#if PC_MPI_SIMULATED
    /* SMPI 3.32's MPI_Comm_split_type ignores the key (the node's ranks come in world order): ordered by this
     * communicator's rank here, as the node communicator of a layout must be (its ranks are the layout's node
     * ranks, numbered in the layout's rank order). */
    MPI_Comm ordered;
    int split_rc = MPI_Comm_split(node, 0, L->rank, &ordered);
    MPI_Comm_free(&node);
    if (split_rc != MPI_SUCCESS) return pc_mpi_error(split_rc, "MPI_Comm_split (node ranks in order)");
    node = ordered;
#endif
    /* My node's first rank (node rank 0: the key was the rank), found without communication. */
    MPI_Group node_group;
    int zero = 0, first = MPI_UNDEFINED;
    MPI_Comm_group(node, &node_group);
    MPI_Group_translate_ranks(node_group, 1, &zero, group, &first);
    MPI_Group_free(&node_group);
    int domains = 1, domain = -1;
#if PC_MPI_SIMULATED
    /* Under SMPI hwloc and sysconf describe the real host that runs the whole simulation, not this rank's
     * simulated node: the cores are the platform's (a 16-rank node of 16 simulated cores is not oversubscribed),
     * and a simulated node has one memory domain (SimGrid models no NUMA). */
    long cores = sg_host_core_count(sg_host_self());
#else
    pc_topology_numa(&domains, &domain);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
#endif
    uint64_t h = host_hash();
    const struct pc_emulation *emulation = pc_emulation_setting();
    /* everything else in one allgather: first rank of the node, host (64-bit hash), cores, NUMA, node emulation */
    int mine[CF_COUNT] = {
        [CF_FIRST] = first,
        [CF_HOST_LO] = (int)(uint32_t)h,
        [CF_HOST_HI] = (int)(uint32_t)(h >> 32),
        [CF_CORES] = cores > 0 ? (int)cores : 1,
        [CF_NUMA_DOMAINS] = domains,
        [CF_NUMA_DOMAIN] = domain,
        [CF_EMULATE] = emulation->nodes,
        [CF_HOST_RANK] = emulation->host_rank,
        [CF_HOST_SIZE] = emulation->host_size,
    };
    int *all = malloc(sizeof(int) * CF_COUNT * (size_t)P);
    struct pc_census *c = calloc(1, sizeof *c);
    if (c) {
        c->group = MPI_GROUP_NULL;
        c->member = malloc(sizeof *c->member * (size_t)P);
        c->node_count = calloc((size_t)P, sizeof(int));
    }
    /* emulated nodes: the census node of the first rank seen of each real node, then a chain through that real
     * node's emulated nodes (at most K of them) */
    int *node_of_first = malloc(sizeof(int) * (size_t)P), *chain_next = malloc(sizeof(int) * (size_t)P);
    int *block = malloc(sizeof(int) * (size_t)P), *block_of_node = malloc(sizeof(int) * (size_t)P);
    uint32_t *hosts = malloc(sizeof(uint32_t) * 2 * (size_t)P);
    int err = all && c && c->member && c->node_count && node_of_first && chain_next && block && block_of_node && hosts
                  ? PLANCOLL_SUCCESS
                  : pc_error(PLANCOLL_ERR_NOMEM, "node census of %d ranks", P);
    int werr = pc_allgather_wait(L, mine, all ? all : mine, CF_COUNT, MPI_INT, "MPI_Iallgather (node census)");
    if (!err) err = werr;
    if (!err && first == MPI_UNDEFINED) err = pc_error(PLANCOLL_ERR_MPI, "node census: the node's first rank is not in the communicator");
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
    int emulated = 0;
    if (!err) err = agree_emulation(all, P, c->world, &emulated, block);
    if (!err) {
        int nhosts = 0;
        for (int r = 0; r < P; r++) node_of_first[r] = -1;
        for (int r = 0; r < P && !err; r++) {
            const int *a = all + CF_COUNT * r;
            if (a[CF_FIRST] < 0 || a[CF_FIRST] >= P) {
                err = pc_error(PLANCOLL_ERR_MPI, "node census: rank %d reports node first rank %d", r, a[CF_FIRST]);
                break;
            }
            struct pc_census_member *m = &c->member[r];
            m->node = -1;
            for (int n = node_of_first[a[CF_FIRST]]; n >= 0 && m->node < 0; n = chain_next[n])
                if (block_of_node[n] == block[r]) m->node = n;
            if (m->node < 0) {
                m->node = c->nnodes++;
                block_of_node[m->node] = block[r];
                chain_next[m->node] = node_of_first[a[CF_FIRST]];
                node_of_first[a[CF_FIRST]] = m->node;
            }
            c->node_count[m->node]++;
            m->host = -1;
            for (int k = 0; k < nhosts && m->host < 0; k++)
                if (hosts[2 * k] == (uint32_t)a[CF_HOST_LO] && hosts[2 * k + 1] == (uint32_t)a[CF_HOST_HI]) m->host = k;
            if (m->host < 0) {
                hosts[2 * nhosts] = (uint32_t)a[CF_HOST_LO];
                hosts[2 * nhosts + 1] = (uint32_t)a[CF_HOST_HI];
                m->host = nhosts++;
            }
            m->host_cores = a[CF_CORES] > 0 ? a[CF_CORES] : 1;
            m->numa_domains = a[CF_NUMA_DOMAINS] > 0 ? a[CF_NUMA_DOMAINS] : 1;
            m->numa_domain = a[CF_NUMA_DOMAIN];
        }
    }
    if (!err && emulated > 1) {
        /* the node communicator of the emulated node: this rank's block of its real node (every rank of the node
         * agreed the emulation above, so all of them come here) */
        MPI_Comm part;
        int rc = MPI_Comm_split(node, block[L->rank], L->rank, &part);
        if (rc != MPI_SUCCESS) {
            err = pc_mpi_error(rc, "MPI_Comm_split (PLANCOLL_EMULATE_NODES)");
        } else {
            MPI_Comm_free(&node);
            node = part;
        }
    }
    free(all);
    free(node_of_first);
    free(chain_next);
    free(block);
    free(block_of_node);
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
