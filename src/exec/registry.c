/* The table of algorithms. Its order is fixed: ties in the planner break by it, identically on every rank,
 * and the names in order hash into the registry signature that wisdom records. Append new algorithms. */
#include <string.h>

#include "exec/registry.h"
#include "base/algorithm.h"

extern const struct pc_algorithm pc_alltoall_pairwise, pc_alltoall_native, pc_alltoall_bruck;
extern const struct pc_algorithm pc_alltoall_leader, pc_alltoall_mpml, pc_alltoall_onmpml;
extern const struct pc_algorithm pc_alltoall_pap;
extern const struct pc_algorithm pc_alltoallv_aggregated;
extern const struct pc_algorithm pc_alltoallv_spreadout, pc_alltoallv_native;
extern const struct pc_algorithm pc_alltoallv_padded_bruck, pc_alltoallv_twophase_bruck;
extern const struct pc_algorithm pc_allreduce_recursive_doubling, pc_allreduce_rabenseifner, pc_allreduce_native;
extern const struct pc_algorithm pc_allreduce_leader, pc_allreduce_dpml, pc_allreduce_dpml_pipelined;
extern const struct pc_algorithm pc_alltoall_native_blocking, pc_alltoallv_native_blocking;
extern const struct pc_algorithm pc_allreduce_native_blocking;

static const struct pc_algorithm *const registry[] = {
    &pc_alltoall_pairwise,
    &pc_alltoall_native,
    &pc_alltoallv_spreadout,
    &pc_alltoallv_native,
    &pc_allreduce_recursive_doubling,
    &pc_allreduce_rabenseifner,
    &pc_allreduce_native,
    &pc_alltoall_bruck,
    &pc_alltoall_leader,
    &pc_alltoall_mpml,
    &pc_alltoall_onmpml,
    &pc_alltoall_pap,
    &pc_alltoallv_padded_bruck,
    &pc_alltoallv_twophase_bruck,
    &pc_alltoallv_aggregated,
    &pc_allreduce_leader,
    &pc_allreduce_dpml,
    &pc_allreduce_dpml_pipelined,
    &pc_alltoall_native_blocking,
    &pc_alltoallv_native_blocking,
    &pc_allreduce_native_blocking,
};

static const struct pc_algorithm_table table = {registry, (int)(sizeof registry / sizeof registry[0])};

const struct pc_algorithm_table *pc_registry_table(void) { return &table; }

int pc_registry_count(void) { return table.count; }

const struct pc_algorithm *pc_registry_get(int index) { return pc_algorithm_at(&table, index); }

int pc_registry_find(const char *name) { return pc_algorithm_index(&table, name); }

uint64_t pc_registry_signature(void)
{
    uint64_t h = PC_HASH_SEED;
    for (int i = 0; i < pc_registry_count(); i++) h = pc_hash_bytes(h, registry[i]->name, strlen(registry[i]->name) + 1);
    return h;
}
