/* Node-local work as simulated time under SMPI: the rates and the charge (sim_work.h). Built in the SMPI build
 * only (top meson.build). */
#include "shm/sim_work.h"

#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <simgrid/actor.h>
#include <simgrid/exec.h>
#include <simgrid/host.h>
#include <smpi/smpi.h>

#include "base/errors.h"

/* Seconds per byte of each kind, 0 when not charged: read at every plan creation (pc_sim_work_setting), so that the
 * executions of a plan are charged at the rates of the latest plan made. SMPI privatizes the library's globals,
 * and every simulated rank reads the same environment. */
static double seconds_per_byte[2];
static bool rates_read;

static const char *const rate_variable[2] = {"PLANCOLL_SIM_COPY_GBPS", "PLANCOLL_SIM_REDUCE_GBPS"};

/* A rate in GB/s (10^9 bytes a second): a finite positive number with nothing after it; unset is 0 (no charge). */
static bool parse_rate(const char *text, double *seconds_per_b)
{
    *seconds_per_b = 0;
    if (!text) return true;
    errno = 0;
    char *end = NULL;
    double gbps = strtod(text, &end);
    if (end == text || *end != '\0' || errno || !isfinite(gbps) || gbps <= 0 || gbps > 1e6) return false;
    *seconds_per_b = 1e-9 / gbps;
    return true;
}

int pc_sim_work_setting(void)
{
    double rate[2];
    rates_read = true;
    seconds_per_byte[0] = seconds_per_byte[1] = 0;
    for (int k = 0; k < 2; k++) {
        const char *text = getenv(rate_variable[k]);
        if (!parse_rate(text, &rate[k]))
            return pc_error(PLANCOLL_ERR_ENV, "%s='%s': give a rate in GB/s (a positive number), or unset it",
                            rate_variable[k], text);
    }
    seconds_per_byte[0] = rate[0];
    seconds_per_byte[1] = rate[1];
    return PLANCOLL_SUCCESS;
}

/* The node's memory, when the platform has one: a host named "mem-" and this rank's host (machines/make-platform.py
 * --memory), whose speed is the node's memory bandwidth in bytes a second. Looked up once per rank. */
static sg_host_t memory_host;
static bool memory_looked_up;

static sg_host_t node_memory(void)
{
    if (!memory_looked_up) {
        memory_looked_up = true;
        char name[256];
        snprintf(name, sizeof name, "mem-%s", sg_host_get_name(sg_host_self()));
        memory_host = sg_host_by_name(name);
    }
    return memory_host;
}

void pc_sim_work(enum pc_sim_work_kind kind, size_t bytes)
{
    if (!rates_read) (void)pc_sim_work_setting(); /* work before any plan (the node-shared allocator) */
    double seconds = seconds_per_byte[kind == PC_SIM_REDUCE] * (double)bytes;
    if (!(seconds > 0)) return;
    /* A copy runs on the node's memory when the platform has one; a reduction on the rank's core, as the model
     * prices them (a reduction at one core's rate whatever the node's other ranks do) */
    sg_host_t memory = kind == PC_SIM_COPY ? node_memory() : NULL;
    if (!memory) { /* as flops at the simulated core's speed: smpi_execute(seconds) drops anything below
                    * smpi/cpu-threshold */
        smpi_execute_flops(seconds * sg_host_get_speed(sg_host_self()));
        return;
    }
    /* On the node's memory, shared with the node's other ranks' copies: `bytes` at most one core's copy rate
     * alone, and a share of the node's bandwidth when more copy at once (SimGrid's max-min sharing of the host):
     * the model's min(shm_bw, node_bw / tau) (src/planner/machine.c) */
    const double copy_bps = 1.0 / seconds_per_byte[0];
    sg_exec_t exec = sg_actor_exec_init((double)bytes);
    sg_exec_set_host(exec, memory);
    sg_exec_set_bound(exec, copy_bps);
    sg_exec_start(exec);
    sg_exec_wait(exec);
}
