/* The engine of the hierarchical allreduces ([DPML17]; docs/algorithms.md): allreduce.leader (one leader per
 * node), allreduce.dpml (l leaders, each owning a partition) and allreduce.dpml_pipelined (each partition in k
 * sub-partitions whose inter-node allreduces fly while the next one is reduced). See dpml_common.c. */
#ifndef PC_DPML_COMMON_H
#define PC_DPML_COMMON_H

#include <stdbool.h>

#include "base/algorithm.h"

struct plancoll_plan_s;

enum pc_dpml_inter { PC_DPML_INTER_RD = 0, PC_DPML_INTER_RSAG = 1, PC_DPML_INTER_MPI = 2 };

struct pc_dpml_config {
    int leaders;      /* requested leaders per node; clamped to [1, smallest node] */
    bool numa_spread; /* leaders one per NUMA domain in turn, else the first l node ranks */
    int segments;     /* sub-partitions per leader (1: no pipeline) */
    int inter;        /* enum pc_dpml_inter: the allreduce among leader j of every node */
    int stores;       /* enum pc_store_mode: how the node-shared areas (hand-over slots, result) are written */
};

enum pc_dpml_form { PC_DPML_LEADER, PC_DPML_PARTITIONED, PC_DPML_PIPELINED };
/* How a candidate's parameters configure each form: leader uses one leader and no pipeline; dpml no pipeline;
 * dpml_pipelined takes segments (0 means 4). Every form takes inter and stores. */
struct pc_dpml_config pc_dpml_config_of(enum pc_dpml_form form, const struct pc_params *params);

const char *pc_dpml_inapplicable(const struct pc_problem *p);
/* Leaders actually used (at least 1, at most the smallest node's ranks). */
int pc_dpml_leaders_used(const struct pc_problem *p, int requested);
/* What an algorithm offers the planner: leader counts first, 2 first, 4 first, ... and the smallest node's size
 * (capped at last_leaders when > 0), NUMA-spread placement too when nodes have several domains, the inter-node
 * algorithms the op allows when there is more than one node (rsag only if asked), each with every segment count
 * of segs[0..nsegs) (none: segments 0), each with ordinary stores and then, where the build has them and a node
 * has ranks that share its areas (more than one), streaming stores. */
struct pc_dpml_choices {
    int first_leaders, last_leaders;
    const int *segs;
    int nsegs;
    bool rsag;
};
int pc_dpml_variants(const struct pc_problem *p, const struct pc_dpml_choices *c, struct pc_params *out, int max);

/* Predicted time (microseconds), [DPML17] eq. (2)-(7) with eq. (3) corrected: see dpml_common.c. */
double pc_dpml_estimate(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m);
/* The inter-node part alone: one allreduce of `bytes` over h nodes by algorithm inter, the node's `leaders`
 * leaders running theirs at once, each leader `posted` of them in step (allreduce/common.h). */
double pc_dpml_inter_estimate(const struct pc_problem *p, int inter, double h, double bytes, int leaders, int posted,
                              const struct pc_machine_model *m);
/* The pipeline of allreduce.dpml_pipelined from the leader's first reduction to its last exchange's end: t_comp to
 * reduce the leader's partition in k sub-partitions of `bytes`, each exchanged between the nodes' leaders (inter)
 * as soon as it is reduced, with `leaders` leaders per node. */
double pc_dpml_pipeline_estimate(const struct pc_problem *p, int inter, double t_comp, double k, double bytes,
                                 int leaders, const struct pc_machine_model *m);

/* The busiest rank's busy time (struct pc_algorithm's busy, exec/busy.h), from the same terms: see dpml_common.c. */
double pc_dpml_busy(const struct pc_problem *p, const struct pc_dpml_config *cfg, const struct pc_machine_model *m);
/* The mean busy time of a node's ranks (struct pc_algorithm's mean_busy): leaders reduce, the others only copy. */
double pc_dpml_mean_busy(const struct pc_problem *p, const struct pc_dpml_config *cfg,
                         const struct pc_machine_model *m);

int pc_dpml_setup(struct plancoll_plan_s *plan, const struct pc_dpml_config *cfg);
/* One execution as a resumable schedule (struct pc_algorithm's start and advance); execute is pc_steps_execute. */
int pc_dpml_start(struct plancoll_plan_s *plan, const void *sbuf, void *rbuf);
int pc_dpml_advance(struct plancoll_plan_s *plan, bool *done);
void pc_dpml_teardown(struct plancoll_plan_s *plan);
/* struct pc_algorithm.set_stores of the dpml family (stores=auto). */
void pc_dpml_set_stores(struct plancoll_plan_s *plan, bool stream);

/* Set-up of a form from the plan's parameters. */
int pc_dpml_setup_form(struct plancoll_plan_s *plan, enum pc_dpml_form form);
static inline double pc_dpml_estimate_form(enum pc_dpml_form form, const struct pc_problem *p,
                                           const struct pc_params *params, const struct pc_machine_model *m)
{
    struct pc_dpml_config c = pc_dpml_config_of(form, params);
    return pc_dpml_estimate(p, &c, m);
}
static inline double pc_dpml_busy_form(enum pc_dpml_form form, const struct pc_problem *p,
                                       const struct pc_params *params, const struct pc_machine_model *m)
{
    struct pc_dpml_config c = pc_dpml_config_of(form, params);
    return pc_dpml_busy(p, &c, m);
}
static inline double pc_dpml_mean_busy_form(enum pc_dpml_form form, const struct pc_problem *p,
                                            const struct pc_params *params, const struct pc_machine_model *m)
{
    struct pc_dpml_config c = pc_dpml_config_of(form, params);
    return pc_dpml_mean_busy(p, &c, m);
}

#endif
