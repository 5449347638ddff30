/* The library's algorithm table: every algorithm file's entry, in a fixed order. Internal, executors' layer: the
 * MPI-free planner never includes this; it is given the table (pc_registry_table) by the API. */
#ifndef PC_REGISTRY_H
#define PC_REGISTRY_H

#include <stdint.h>

#include "base/algorithm.h"

/* A fixed table: ties break by its order identically on every rank. */
const struct pc_algorithm_table *pc_registry_table(void);
int pc_registry_count(void);
const struct pc_algorithm *pc_registry_get(int index);
int pc_registry_find(const char *name); /* index or -1 */
/* Hash of every name in order: wisdom from another build is recognised by it. */
uint64_t pc_registry_signature(void);

#endif
