/* The inter-node MPI_Put transport into node peers' shared segments, shared by the node-aware alltoall engine
 * (alltoall/node_aware.c) and the node-aggregated alltoallv (alltoallv/aggregated.c).
 *
 * At plan time every rank exposes its node's whole segment (flag area, then data area) in one window over
 * plancoll's communicator, locked once (MPI_Win_lock_all), and learns for every rank where a chosen point of its
 * data area and its plan's first flag slot sit in its window (one allgather). At execution a rank puts data at
 * data_disp[target] + offset, flushes, then puts a sequence number into a flag slot of the target (flushed), which
 * every rank of the target's node polls in shared memory.
 * Some transports (UCX over TCP) apply a put only while the target calls into MPI: a rank expecting puts calls
 * pc_segwin_progress while it polls, and installs the layout's poke hook so that its shared-memory waits do too. */
#ifndef PC_SEG_WINDOW_H
#define PC_SEG_WINDOW_H

#include <stdint.h>

#include "exec/plan.h"
#include "shm/segment.h"

/* The most bytes one MPI_Put of plancoll carries. MPICH 4.0.2 over UCX 1.13 crashes in uct_sm_ep_put_short (shared
 * memory and TCP alike) on a single contiguous put of more than 2^31 - 1 bytes, even through MPI_Put_c: larger
 * transfers go in pieces of this size, or (a node-aware message, one derived-datatype put) not by put at all. */
#define PC_RMA_MAX_BYTES ((uint64_t)1 << 30)

struct pc_seg_window {
    MPI_Win win;         /* MPI_WIN_NULL when not open */
    MPI_Comm comm;       /* the window's communicator (plancoll's duplicate) */
    MPI_Aint *data_disp; /* [P] where each rank's chosen data point sits in its window */
    MPI_Aint *flag_disp; /* [P] where each rank's first flag slot sits in its window */
    uint64_t out;        /* source buffer of flag puts: must stay valid until the flush */
};

void pc_segwin_init(struct pc_seg_window *w);
/* Collective over L->comm: exposes seg; data_offset is the point of seg->base that data_disp refers to, first_flag
 * the plan's first flag slot in seg. */
int pc_segwin_open(struct pc_seg_window *w, const struct pc_layout *L, struct pc_segment *seg, size_t data_offset,
                   int first_flag);
/* Collective over the window's communicator when open; a no-op otherwise. */
void pc_segwin_close(struct pc_seg_window *w);
/* Puts value into flag slot `index` (counted from the target's first flag slot) of rank target, flushed. */
int pc_segwin_put_flag(struct pc_seg_window *w, int target, int index, uint64_t value);
/* Keeps RMA moving on transports that apply puts only inside MPI calls. */
void pc_segwin_progress(const struct pc_seg_window *w);
/* While begun, this rank's shared-memory waits (pc_flag_wait, pc_node_barrier) call pc_segwin_progress. */
void pc_segwin_poke_begin(struct pc_layout *L, struct pc_seg_window *w);
void pc_segwin_poke_end(struct pc_layout *L);

#endif
