/* Leader choice: which of a node's ranks lead it, placed on its NUMA domains or not. Used by every multi-leader
 * algorithm (the node-aware alltoall family, alltoallv.aggregated, the DPML allreduces), each for every node of
 * the layout from the same NUMA map (layout.h: numa_of_rank), so every rank knows every node's leaders without
 * asking. Internal. */
#ifndef PC_LEADERS_H
#define PC_LEADERS_H

#include <stdbool.h>

/* Chooses the l leader node-ranks of a node whose ranks sit on NUMA domains numa[0..node_size). With numa_spread
 * leader j goes to domain j mod D (the (j div D)-th rank of that domain), falling back to the lowest unused rank
 * when a domain runs out; otherwise leaders are node ranks 0..l-1. Pure: unit-tested. */
void pc_choose_leaders(const int *numa, int node_size, int num_domains, int l, bool numa_spread, int *out);

#endif
