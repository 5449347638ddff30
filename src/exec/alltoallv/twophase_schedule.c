/* Plan-time schedule of alltoallv.twophase_bruck (twophase_schedule.h). Pure C: no MPI. */
#include <stdlib.h>
#include <string.h>

#include "exec/alltoallv/twophase_schedule.h"

void pc_tp_meta_init(int P, int rank, const uint64_t *send_bytes, uint64_t *cur)
{
    for (int i = 0; i < P; i++) cur[i] = send_bytes[pc_bruck_rotate_from(rank, P, i)];
}

/* Where slot i's current block is. */
struct where {
    int area, block;
    bool typed;
    uint64_t off, bytes;
};

static void add_copy(struct pc_tp_schedule *s, const struct where *w, uint64_t stage)
{
    s->copies[s->ncopies++] = (struct pc_tp_copy){
        .off = w->off, .stage = stage, .bytes = w->bytes, .area = w->area, .block = w->block, .typed = w->typed};
}

int pc_tp_build(const struct pc_tp_input *in, struct pc_tp_schedule *out)
{
    const int P = in->P, r = in->rank;
    memset(out, 0, sizeof *out);
    int moves = in->slot_start[in->nsteps];
    struct where *loc = calloc((size_t)P, sizeof *loc);
    int *room_from = calloc((size_t)P, sizeof *room_from); /* first step at which slot i's room is free */
    uint64_t *temp_cap = calloc((size_t)P, sizeof *temp_cap);
    bool *parked = calloc((size_t)P, sizeof *parked); /* a final block waits in TEMP for its place */
    out->steps = calloc((size_t)in->nsteps + 1, sizeof *out->steps);
    /* at most one pack and one unpack per move, one deferred copy per slot */
    out->copies = calloc(2 * (size_t)moves + (size_t)P + 1, sizeof *out->copies);
    if (!loc || !room_from || !temp_cap || !parked || !out->steps || !out->copies) {
        free(parked);
        free(loc);
        free(room_from);
        free(temp_cap);
        pc_tp_free(out);
        return PC_TP_NOMEM;
    }
    out->nsteps = in->nsteps;

    for (int i = 1; i < P; i++) {
        int j = pc_bruck_rotate_from(r, P, i);
        loc[i] = (struct where){.area = in->in_place ? PC_TP_RECV : PC_TP_SEND, .block = j, .typed = true,
                                .bytes = in->send_bytes[j]};
        const uint64_t *off = in->in_place ? in->recv_off : in->send_off;
        loc[i].off = off ? off[j] : 0;
    }
    /* In place, slot i's room (the block from r - i) first holds r's outgoing block for r - i, which is slot
     * P - i: the room is free from that slot's first move on (packs of a step precede its unpacks). */
    if (in->in_place) {
        for (int i = 1; i < P; i++) room_from[i] = in->nsteps;
        for (int s = in->nsteps - 1; s >= 0; s--)
            for (int n = in->slot_start[s]; n < in->slot_start[s + 1]; n++) room_from[(P - in->slots[n]) % P] = s;
    }

    int rc = PC_TP_OK;
    for (int s = 0; s < in->nsteps && rc == PC_TP_OK; s++) {
        const struct pc_bruck_step *bs = &in->steps[s];
        struct pc_tp_step *st = &out->steps[s];
        st->send_peer = pc_bruck_send_peer(r, P, bs);
        st->recv_peer = pc_bruck_recv_peer(r, P, bs);
        st->pack0 = out->ncopies;
        for (int n = in->slot_start[s]; n < in->slot_start[s + 1]; n++) {
            const struct where *w = &loc[in->slots[n]];
            if (w->bytes == 0) continue;
            add_copy(out, w, st->send_bytes);
            st->send_bytes += w->bytes;
        }
        st->npack = out->ncopies - st->pack0;
        st->unpack0 = out->ncopies;
        for (int n = in->slot_start[s]; n < in->slot_start[s + 1]; n++) {
            int i = in->slots[n];
            uint64_t bytes = in->incoming[n];
            /* slot i ends with the block from (r - i) mod P (the relation is its own inverse) */
            int from = pc_bruck_final_slot(r, P, i);
            struct where w = {.area = PC_TP_RECV, .block = from, .bytes = bytes};
            bool room = in->rooms && in->recv_off && bytes <= in->recv_bytes[from] && s >= room_from[i];
            bool last = pc_bruck_last_move(i, in->radix, bs);
            if (last && bytes != in->recv_bytes[from]) {
                rc = PC_TP_INCONSISTENT;
                break;
            }
            if (last && s >= room_from[i]) {
                w.typed = true;
                w.off = in->recv_off ? in->recv_off[from] : 0;
            } else if (room && !last) {
                w.off = in->recv_off[from];
                out->room_bytes += bytes;
            } else {
                w.area = PC_TP_TEMP;
                w.block = i; /* the region is placed once every capacity is known */
                if (bytes > temp_cap[i]) temp_cap[i] = bytes;
                out->temp_moved += bytes;
                parked[i] = last && bytes > 0; /* in place, arrived before its place was free */
            }
            if (bytes > 0) add_copy(out, &w, st->recv_bytes);
            st->recv_bytes += bytes;
            loc[i] = w;
        }
        st->nunpack = out->ncopies - st->unpack0;
        /* Parked final blocks whose place the packs of this step freed. */
        st->fix0 = out->ncopies;
        for (int n = in->slot_start[s]; n < in->slot_start[s + 1]; n++) {
            int i = (P - in->slots[n]) % P; /* the slot whose room this moving slot's first move frees */
            if (room_from[i] != s || !parked[i]) continue;
            int from = pc_bruck_final_slot(r, P, i);
            struct where w = {.area = PC_TP_RECV, .block = from, .typed = true, .bytes = in->recv_bytes[from],
                              .off = in->recv_off ? in->recv_off[from] : 0};
            add_copy(out, &w, 0); /* stage: the slot's TEMP region, placed below */
            parked[i] = false;
        }
        st->nfix = out->ncopies - st->fix0;
        if (st->send_bytes > out->max_send) out->max_send = st->send_bytes;
        if (st->recv_bytes > out->max_recv) out->max_recv = st->recv_bytes;
    }

    /* Regions of the temporary buffer: slot order, each as large as its largest oversized block. */
    uint64_t *region = temp_cap; /* reused: capacity -> offset */
    uint64_t at = 0;
    for (int i = 0; i < P; i++) {
        uint64_t cap = temp_cap[i];
        region[i] = at;
        at += cap;
    }
    out->temp_bytes = at;
    for (int c = 0; c < out->ncopies; c++)
        if (out->copies[c].area == PC_TP_TEMP) out->copies[c].off = region[out->copies[c].block];
    for (int t = 0; t < out->nsteps; t++)
        for (int c = out->steps[t].fix0; c < out->steps[t].fix0 + out->steps[t].nfix; c++)
            out->copies[c].stage = region[pc_bruck_final_slot(r, P, out->copies[c].block)];

    free(parked);
    free(loc);
    free(room_from);
    free(temp_cap);
    if (rc != PC_TP_OK) pc_tp_free(out);
    return rc;
}

void pc_tp_free(struct pc_tp_schedule *s)
{
    free(s->steps);
    free(s->copies);
    memset(s, 0, sizeof *s);
}
