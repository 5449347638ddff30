/* The engine of the node-aware alltoall family (seed 000): L-a2a (one leader), MPML (l leaders, destination
 * nodes dealt round robin), NMPML (leaders spread over NUMA domains) and ONMPML (overlapped). See node_aware.c. */
#ifndef PC_NODE_AWARE_H
#define PC_NODE_AWARE_H

#include <stdbool.h>

#include "../../core/plan.h"

struct pc_na_config {
    int leaders;      /* requested leaders per node; clamped to [1, smallest node] */
    bool numa_spread; /* leaders one per NUMA domain in turn, else the first l node ranks */
    bool overlap;     /* ONMPML: gather, send, receive and scatter as each piece is ready */
    int depth;        /* ONMPML: sends in flight per leader (0: no limit) */
    bool put;         /* inter-node transport: MPI_Put into the peer node's segment, else MPI_Isend/Irecv */
};

int pc_na_setup(struct plancoll_plan_s *plan, const struct pc_na_config *cfg);
int pc_na_execute(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
void pc_na_teardown(struct plancoll_plan_s *plan);
const char *pc_na_inapplicable(const struct pc_problem *p);
/* Leaders actually used for a request (documented clamp: at least 1, at most the smallest node's ranks). */
int pc_na_leaders_used(const struct pc_problem *p, int requested);
/* Chooses the l leader node-ranks of a node whose ranks sit on NUMA domains numa[0..node_size). With numa_spread
 * leader j goes to domain j mod D (the (j div D)-th rank of that domain), falling back to the lowest unused rank
 * when a domain runs out; otherwise leaders are node ranks 0..l-1. Pure: unit-tested. */
void pc_na_choose_leaders(const int *numa, int node_size, int num_domains, int l, bool numa_spread, int *out);
double pc_na_estimate(const struct pc_problem *p, const struct pc_na_config *cfg, const struct pc_machine_model *m);

#endif
