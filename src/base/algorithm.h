/* The algorithm registry's entry. An algorithm is one file that fills one of these (docs/design.md).
 * No MPI here: the planner and the unit tests see algorithms only through this table. */
#ifndef PC_ALGORITHM_H
#define PC_ALGORITHM_H

#include "base/problem.h"
#include "base/model.h"

struct plancoll_plan_s;

/* The tunable parameters of a candidate. Algorithms ignore the fields they do not use. */
struct pc_params {
    int leaders;   /* leaders per node (leader algorithms) */
    int placement; /* leader placement: 0 first-l, 1 NUMA-spread */
    int segments;  /* pipeline depth / sub-partitions */
    int transport; /* inter-node transport: 0 point-to-point, 1 MPI_Put */
    int radix;     /* Bruck radix */
    int inter;     /* inter-node allreduce among leaders: 0 recursive doubling, 1 reduce-scatter + allgather, 2 MPI's */
};


/* The parameters by name (PLANCOLL_ALGORITHM keys): bits of pc_algorithm.params and of a forced entry's mask. */
#define PC_PARAM_LEADERS (1u << 0)
#define PC_PARAM_PLACEMENT (1u << 1)
#define PC_PARAM_SEGMENTS (1u << 2)
#define PC_PARAM_TRANSPORT (1u << 3)
#define PC_PARAM_RADIX (1u << 4)
#define PC_PARAM_INTER (1u << 5)
#define PC_PARAM_ALL 0x3fu

struct pc_algorithm {
    const char *name; /* "alltoall.pairwise": stable, used in wisdom and PLANCOLL_ALGORITHM */
    enum pc_collective collective;
    const char *summary; /* one line for --list and docs */
    /* The parameters its variants set (PC_PARAM_* bits). A plan's spec names every one of them, default values
     * included, so forcing the spec rebuilds the same plan instead of leaving a parameter to the model. */
    unsigned params;
    /* NULL reason when applicable; otherwise a short explanation of why not. */
    const char *(*inapplicable)(const struct pc_problem *);
    /* Writes up to max parameter sets; returns how many. NULL means one default set. */
    int (*variants)(const struct pc_problem *, struct pc_params *out, int max);
    /* Predicted time in microseconds under model m. */
    double (*estimate)(const struct pc_problem *, const struct pc_params *, const struct pc_machine_model *m);
    int (*setup)(struct plancoll_plan_s *);
    int (*execute)(struct plancoll_plan_s *, const void *sendbuf, void *recvbuf);
    void (*teardown)(struct plancoll_plan_s *);
};

/* A table of algorithms: what the planner chooses among. The planner knows algorithms only through the table it
 * is given (an index is a position in it), so it never depends on the executors; the executors' registry
 * (exec/registry.c, pc_registry_table) is the table of the library, unit tests pass small tables of their own. */
struct pc_algorithm_table {
    const struct pc_algorithm *const *entries;
    int count;
};
/* The algorithm at index, NULL out of range. */
const struct pc_algorithm *pc_algorithm_at(const struct pc_algorithm_table *table, int index);
/* The index of the algorithm named name, or -1. */
int pc_algorithm_index(const struct pc_algorithm_table *table, const char *name);

/* The registry (exec/registry.c, not the MPI-free core: the planner takes the table instead): a fixed table, ties
 * break by its order identically on every rank. */
const struct pc_algorithm_table *pc_registry_table(void);
int pc_registry_count(void);
const struct pc_algorithm *pc_registry_get(int index);
int pc_registry_find(const char *name); /* index or -1 */
/* Hash of every name in order: wisdom from another build is recognised by it. */
uint64_t pc_registry_signature(void);

#endif
