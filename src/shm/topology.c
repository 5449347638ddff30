/* NUMA domain of this process from hwloc. hwloc itself honours HWLOC_SYNTHETIC and HWLOC_XMLFILE, so tests
 * can fake a topology; a fake topology is not "this system", so the binding cannot place the rank and the
 * caller falls back to dealing node ranks over the domains. */
#include <hwloc.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

static int cached_domains = -1, cached_domain = -1;

void pc_topology_numa(int *num_domains, int *domain)
{
    if (cached_domains < 0) {
        hwloc_topology_t topo;
        cached_domains = 1;
        cached_domain = -1;
        if (hwloc_topology_init(&topo) == 0) {
            if (hwloc_topology_load(topo) == 0) {
                int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE);
                if (n > 0) cached_domains = n;
                hwloc_bitmap_t set = hwloc_bitmap_alloc();
                if (set && hwloc_topology_is_thissystem(topo) &&
                    hwloc_get_cpubind(topo, set, HWLOC_CPUBIND_PROCESS) == 0) {
                    /* Placed only if the binding lies inside exactly one domain. */
                    int found = -1, hits = 0;
                    for (int i = 0; i < n; i++) {
                        hwloc_obj_t node = hwloc_get_obj_by_type(topo, HWLOC_OBJ_NUMANODE, (unsigned)i);
                        if (node && hwloc_bitmap_intersects(node->cpuset, set)) {
                            hits++;
                            found = i;
                        }
                    }
                    if (hits == 1) cached_domain = found;
                }
                hwloc_bitmap_free(set);
            }
            hwloc_topology_destroy(topo);
        }
    }
    *num_domains = cached_domains;
    *domain = cached_domain;
}

int pc_numa_by_rank(int node_rank, int node_size, int num_domains)
{
    if (num_domains <= 1 || node_size <= 0) return 0;
    return (int)((long)node_rank * num_domains / node_size);
}

/* A decimal integer that is the whole of text (blanks around allowed), else -1; so is anything below 1. */
static int positive_int(const char *text)
{
    if (!text) return -1;
    char *end = NULL;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (end == text || errno == ERANGE || v < 1 || v > INT_MAX) return -1;
    while (*end == ' ' || *end == '\t') end++;
    return *end ? -1 : (int)v;
}

/* A launcher's count (>= 0), or -1 when it is absent or not a number. */
static int launcher_int(const char *name)
{
    const char *text = getenv(name);
    if (!text || !*text) return -1;
    char *end = NULL;
    long v = strtol(text, &end, 10);
    return (*end || v < 0 || v > INT_MAX) ? -1 : (int)v;
}

const struct pc_emulation *pc_emulation_setting(void)
{
    static struct pc_emulation setting;
    static bool read;
    if (!read) {
        read = true;
        const char *text = getenv("PLANCOLL_EMULATE_NODES");
        setting.text = text ? strdup(text) : NULL;
        if (text && !setting.text) text = ""; /* out of memory: read as unset */
        setting.nodes = !text || !*text ? 0 : positive_int(text);
        /* The host position from the launcher; both MPIs' launchers number a host's ranks in world rank order. */
        setting.host_rank = launcher_int("OMPI_COMM_WORLD_LOCAL_RANK");
        setting.host_size = launcher_int("OMPI_COMM_WORLD_LOCAL_SIZE");
        if (setting.host_rank < 0 || setting.host_size < 1) {
            setting.host_rank = launcher_int("MPI_LOCALRANKID");
            setting.host_size = launcher_int("MPI_LOCALNRANKS");
        }
        if (setting.host_rank < 0 || setting.host_size < 1 || setting.host_rank >= setting.host_size)
            setting.host_rank = setting.host_size = -1;
    }
    return &setting;
}

int pc_emulated_block(int host_rank, int host_size, int k)
{
    int small = host_size / k, big_blocks = host_size % k;
    int in_big = (small + 1) * big_blocks; /* ranks in the first big_blocks blocks, of small + 1 each */
    return host_rank < in_big ? host_rank / (small + 1) : big_blocks + (host_rank - in_big) / small;
}
