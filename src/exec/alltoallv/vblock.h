/* The byte image of one alltoallv block, for algorithms that forward blocks through other ranks' scratch
 * (alltoallv.padded_bruck, alltoallv.twophase_bruck). A block of count elements is count * size bytes: copied
 * with memcpy when every rank's types are contiguous (prob.contiguous), otherwise packed and unpacked with
 * MPI_Pack/MPI_Unpack and sent as MPI_PACKED, on every rank alike. Forwarding packed bytes through another rank
 * relies on MPI's homogeneous packed format (the data bytes in type-map order, no header): setup checks it
 * with MPI_Pack_size and every pack checks the bytes it wrote. */
#ifndef PC_VBLOCK_H
#define PC_VBLOCK_H

#include <stdint.h>

#include "exec/plan.h"

/* One side of an alltoallv: the datatype, counts and displacements a buffer is read or written with. */
struct pc_vside {
    const struct pc_typeinfo *t;
    const int *counts, *displs;
};

/* The receive side, and the side the outgoing blocks are read with (the receive side in place). */
struct pc_vside pc_vside_recv(const struct plancoll_plan_s *plan);
struct pc_vside pc_vside_send(const struct plancoll_plan_s *plan);

/* Bytes of block j. */
static inline uint64_t pc_vblock_bytes(const struct pc_vside *s, int j)
{
    return (uint64_t)s->counts[j] * (uint64_t)s->t->size;
}
/* Byte offset of block j's first data byte from the buffer's address (contiguous types). */
static inline uint64_t pc_vblock_offset(const struct pc_vside *s, int j)
{
    return (uint64_t)((MPI_Aint)s->displs[j] * s->t->extent + s->t->true_lb);
}

/* Why a forwarding algorithm cannot take this problem here (NULL: it can): under SMPI, any type with holes. */
const char *pc_vblock_inapplicable(const struct pc_problem *p);

/* MPI_BYTE for contiguous plans, MPI_PACKED otherwise: the unit of messages carrying block images. */
MPI_Datatype pc_vblock_unit(const struct plancoll_plan_s *plan);
/* Setup check: packing through MPI gives exactly count * size bytes for both of the plan's types. */
int pc_vblock_check(const struct plancoll_plan_s *plan);
/* Writes block j of buf (side s) as bytes at dst. */
int pc_vblock_pack(const struct plancoll_plan_s *plan, const struct pc_vside *s, const void *buf, int j, char *dst);
/* Writes the bytes at src into block j of buf (side s). */
int pc_vblock_unpack(const struct plancoll_plan_s *plan, const struct pc_vside *s, void *buf, int j, const char *src);

#endif
