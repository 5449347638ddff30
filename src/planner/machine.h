/* Machine description files (docs/machines.md): a cluster's numbers as `key = value` lines, parsed without MPI
 * and turned into the planner's cost model (pc_machine_model) for plancoll-predict. The same file describes the
 * SimGrid platform (machines/make-platform.py), so a simulation and a prediction use the very same numbers. */
#ifndef PC_MACHINE_H
#define PC_MACHINE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/model.h"

struct pc_machine_desc {
    char name[64];
    int cores_per_node;          /* 0: not given (the layout's ranks per node) */
    double core_gflops;          /* SimGrid's host speed; the cost model has no computation term beyond reductions */
    double net_latency_us;       /* LogGP L */
    double net_overhead_us;      /* LogGP o */
    double net_gap_us;           /* LogGP g; < 0: not given (= net_overhead_us) */
    double net_bandwidth_GBps;   /* one node's injection bandwidth (LogGP G = 1 / bandwidth) */
    char net_topology[128];      /* flat | fat-tree:... | torus:AxBxC (SimGrid's; the cost model is flat) */
    double net_backbone_GBps;    /* flat: the switch's bisection limit, 0 = none (SimGrid's; not in the cost model) */
    double shm_latency_us;       /* an MPI message between two ranks of one node */
    double shm_bandwidth_GBps;   /* one core's copy bandwidth */
    double node_memory_bandwidth_GBps; /* all of a node's copies together; < 0: not given */
    double sync_us;              /* one flag signal inside a node */
    double reduce_GBps;          /* bytes one core reduces per second; < 0: not given */
    double shm_msg_bandwidth_GBps; /* an MPI point-to-point message inside a node; < 0: not given (= shm_bandwidth) */
    double net_large_threshold_B;  /* messages between nodes of at least this many bytes pay net_large_extra_us; 0: none */
    double net_large_extra_us;     /* the start-up such a large message pays on top of L + 2o + (s - 1) G (rendezvous) */
    double turn_us;                /* oversubscribed nodes: the wait for a scheduler turn per dependency round; 0: none */
};

/* Parses a machine description. Unknown keys, a key given twice, a malformed line or number and a missing required
 * key are errors: returns 0, or -1 with "line N: what is wrong" in err. */
int pc_machine_parse(const char *text, struct pc_machine_desc *d, char *err, size_t errlen);
/* Reads and parses the file at path (err names the file on failure). */
int pc_machine_read_file(const char *path, struct pc_machine_desc *d, char *err, size_t errlen);

/* The cost model of machine d for nnodes nodes of ppn ranks (docs/predict.md, "The model of a machine file"):
 *   L = net_latency_us, o = net_overhead_us, g = net_gap_us, G = 1e-3 / net_bandwidth_GBps us per byte;
 *   net_time[k][s] = L + 2o + (k - 1) g + (s - 1) k G for k = 1 .. PC_MODEL_MAX_PORTS (k pairs share the node's
 *                    injection, each after the previous one's gap),
 *                    + net_large_extra_us where s >= net_large_threshold_B > 0 (each message its own start-up);
 *   shm_alpha = shm_latency_us, shm_beta = 1e-3 / shm_msg_bandwidth_GBps (default shm_bandwidth_GBps);
 *   shm_time[n][tau][s] = n s 1e-3 / min(shm_bandwidth_GBps, node_memory_bandwidth_GBps / tau), tau = 1 .. 8;
 *   sync_us; reduce_default = 1e-3 / reduce_GBps; transpose = 1e-3 / shm_bandwidth_GBps; turn_us (counted by the
 *   estimates only where a node has more ranks than cores);
 * then pc_model_derive(m, nnodes). */
void pc_machine_model(const struct pc_machine_desc *d, int nnodes, int ppn, struct pc_machine_model *m);
/* The cores of one node for a layout of ppn ranks per node: cores_per_node, or ppn when the file does not say. */
int pc_machine_cores(const struct pc_machine_desc *d, int ppn);

#endif
