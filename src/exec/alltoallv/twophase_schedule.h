/* The plan-time half of alltoallv.twophase_bruck, as pure functions (no MPI): the metadata pass that tells each
 * rank the size of every block it will forward, and the per-step copy lists built from it. The algorithm
 * (twophase_bruck.c) runs the metadata pass over MPI; the unit test (tests/unit/test_bruckv_sim.c) runs every
 * rank in one process and executes the copy lists on simulated buffers. docs/alltoallv-bruck.md explains the
 * design.
 *
 * Slots: as in alltoall.bruck (schedule.h), slot i of rank r starts with r's block for (r + i) mod P and, at its
 * last move, lands on rank (r + i) mod P as the block from r. In step s (digit weight w) the moving slots of rank
 * r hold the blocks from (r - (i mod w)) mod P. The sizes of those blocks are what the metadata pass carries: it
 * is a uniform Bruck over one 64-bit size per slot, run once at plan time instead of once per step per execution
 * as in [BruckNU].
 *
 * Where a block is kept between its moves ("areas"):
 *   SEND  the caller's send buffer, block j (the start of every slot, out of place);
 *   RECV  the caller's receive buffer: block j as such (the end of every slot, and the start in place), or, for
 *         an intermediate block, raw bytes in the room of the block slot i will finally hold (only when rooms are
 *         allowed: contiguous receive types; in place only once that room's own outgoing data has left);
 *   TEMP  the temporary buffer, for intermediate blocks bigger than their room: one region per slot, as large as
 *         the largest such block that slot ever holds. In place, a block can also reach its destination before
 *         its place in the receive buffer is free (that place still holds an outgoing block): it waits in the
 *         slot's region and is copied to its place right after the step whose packs free it.
 * Each step packs its moving slots' current blocks, in slot order, into one outgoing message of exactly their
 * bytes, and unpacks the incoming message (the same slots of the peer) into each slot's next area. Zero-byte
 * blocks produce no copy and a step whose message would be empty sends nothing (its peer computes the same). */
#ifndef PC_TWOPHASE_SCHEDULE_H
#define PC_TWOPHASE_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

#include "exec/schedule.h"

enum pc_tp_area { PC_TP_SEND = 0, PC_TP_RECV = 1, PC_TP_TEMP = 2, PC_TP_NAREAS = 3 };

/* One copy between an area and a step's message. */
struct pc_tp_copy {
    uint64_t off;   /* byte offset in the area: user areas, the first data byte (contiguous plans); TEMP, the region */
    uint64_t stage; /* byte offset in the step's message */
    uint64_t bytes;
    int area;  /* enum pc_tp_area */
    int block; /* user areas: the block index (the peer rank) */
    bool typed; /* the whole user block `block`: packed/unpacked with the datatype when types are not contiguous */
};

struct pc_tp_step {
    int send_peer, recv_peer;
    uint64_t send_bytes, recv_bytes; /* 0: no message */
    int pack0, npack;                /* copies[pack0 ..): area -> outgoing message */
    int unpack0, nunpack;            /* copies[unpack0 ..): incoming message -> area */
    int fix0, nfix;                  /* copies[fix0 ..), last: TEMP (at offset stage) -> area; in place only */
};

struct pc_tp_schedule {
    int nsteps;
    struct pc_tp_step *steps;
    int ncopies;
    struct pc_tp_copy *copies;
    uint64_t temp_bytes;             /* the temporary buffer */
    uint64_t max_send, max_recv;     /* the largest outgoing and incoming message */
    uint64_t room_bytes, temp_moved; /* intermediate bytes kept in receive-buffer rooms and in TEMP (statistics) */
};

/* What rank `rank` knows at plan time. */
struct pc_tp_input {
    int P, rank, radix;
    const struct pc_bruck_step *steps; /* pc_bruck_steps(P, radix) */
    int nsteps;
    const int *slot_start, *slots;    /* pc_bruck_slot_lists */
    bool in_place;
    bool rooms;                       /* intermediate blocks may use receive-buffer rooms (contiguous receive type) */
    const uint64_t *send_bytes;       /* [P]: bytes of this rank's block for j (in place: = recv_bytes) */
    const uint64_t *recv_bytes;       /* [P]: bytes of the block from j */
    const uint64_t *send_off;         /* [P] or NULL: offset of the block for j in the send buffer */
    const uint64_t *recv_off;         /* [P] or NULL: offset of the block from j in the receive buffer */
    const uint64_t *incoming;         /* [slot_start[nsteps]]: bytes arriving in each moving slot, per step */
};

/* ---- the metadata pass: a uniform Bruck over one size per slot (pc_bruck_uniform_run with 8-byte slots) ---- */
/* Its initial slots: cur[i] = bytes of this rank's block for (rank + i) mod P. */
void pc_tp_meta_init(int P, int rank, const uint64_t *send_bytes, uint64_t *cur);

/* ---- the copy lists ---- */
enum { PC_TP_OK = 0, PC_TP_NOMEM = -1, PC_TP_INCONSISTENT = -2 };
/* Builds rank in->rank's schedule. PC_TP_INCONSISTENT when a block arriving at its destination does not have the
 * size the destination expects (the metadata and the counts disagree). */
int pc_tp_build(const struct pc_tp_input *in, struct pc_tp_schedule *out);
void pc_tp_free(struct pc_tp_schedule *s);

#endif
