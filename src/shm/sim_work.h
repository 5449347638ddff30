/* Node-local work as simulated time under SMPI (docs/smpi.md "Node-local work"). Internal.
 *
 * Under SimGrid's SMPI an execution's copies and reductions cost no simulated time unless something charges them:
 * with smpi/simulate-computation off they are free, and with it on they are timed on the host that runs every
 * simulated rank (one core shared by hundreds of actors, its timing dominated by the simulator's own polling). In
 * the SMPI build this header is included ahead of every MPI-side library source (top meson.build, `-include`), and
 * with PLANCOLL_SIM_COPY_GBPS and PLANCOLL_SIM_REDUCE_GBPS set (sim-vs-predict.sh --node-work model sets them from
 * the machine file, the rates plancoll-predict uses) every memcpy, memmove, streaming copy and reduction of the
 * library also advances the calling rank's simulated clock by bytes / rate. Unset, nothing is charged (as before).
 * A copy runs on the node's memory when the platform gives it one (a host "mem-" + the rank's host, made by
 * machines/make-platform.py --memory), so that the node's concurrent copies share its bandwidth; a reduction runs
 * on the rank's core. The local transposes of src/transpose are not charged (docs/smpi.md "Node-local work").
 *
 * In every other build this header defines nothing but the no-op forms, and PLANCOLL_SIM_* are not read. */
#ifndef PC_SHM_SIM_WORK_H
#define PC_SHM_SIM_WORK_H

#include <stddef.h>
#include <string.h>

#include "shm/mpi_config.h"
#include "base/stream_copy.h"

enum pc_sim_work_kind { PC_SIM_COPY, PC_SIM_REDUCE };

#if PC_MPI_SIMULATED
/* Advances this rank's simulated clock by the cost of `bytes` of work of that kind (nothing when its rate is
 * unset). */
void pc_sim_work(enum pc_sim_work_kind kind, size_t bytes);
/* The rates' environment check: PLANCOLL_ERR_ENV, with the message set, for a value that is not a positive
 * number of GB/s. */
int pc_sim_work_setting(void);

static inline void *pc_sim_memcpy(void *dst, const void *src, size_t bytes)
{
    memcpy(dst, src, bytes);
    pc_sim_work(PC_SIM_COPY, bytes);
    return dst;
}

static inline void *pc_sim_memmove(void *dst, const void *src, size_t bytes)
{
    memmove(dst, src, bytes);
    pc_sim_work(PC_SIM_COPY, bytes);
    return dst;
}

static inline void pc_sim_stream_copy(void *restrict dst, const void *restrict src, size_t bytes)
{
    pc_stream_copy(dst, src, bytes);
    pc_sim_work(PC_SIM_COPY, bytes);
}

#undef memcpy
#undef memmove
#define memcpy(dst, src, bytes) pc_sim_memcpy(dst, src, bytes)
#define memmove(dst, src, bytes) pc_sim_memmove(dst, src, bytes)
#define pc_stream_copy(dst, src, bytes) pc_sim_stream_copy(dst, src, bytes)
#else
static inline void pc_sim_work(enum pc_sim_work_kind kind, size_t bytes)
{
    (void)kind;
    (void)bytes;
}
static inline int pc_sim_work_setting(void) { return 0; }
#endif

#endif
