/* NUMA domain of this process from hwloc. hwloc itself honours HWLOC_SYNTHETIC and HWLOC_XMLFILE, so tests
 * can fake a topology; a fake topology is not "this system", so the binding cannot place the rank and the
 * caller falls back to dealing node ranks over the domains. */
#include <hwloc.h>

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
