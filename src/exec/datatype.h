/* What the executors need of an MPI datatype, and typed copies and allocations. Internal. */
#ifndef PC_DATATYPE_H
#define PC_DATATYPE_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/sizes.h"

struct plancoll_plan_s;

/* What an algorithm needs to know of a datatype. */
struct pc_typeinfo {
    MPI_Datatype type;   /* the plan's own handle (a duplicate for derived types) */
    bool owned;          /* the plan frees type at destroy */
    int64_t size;        /* bytes of data per element (MPI_Type_size_c: may exceed INT_MAX) */
    MPI_Aint extent, true_lb, true_extent;
    bool contiguous;     /* elements are dense bytes: a block of n elements is n*size bytes at true_lb */
};

int pc_typeinfo_init(struct pc_typeinfo *t, MPI_Datatype type, bool duplicate);
void pc_typeinfo_free(struct pc_typeinfo *t);
/* Allocates room for count elements of t; *buf is where element 0 goes, *raw is what to free. */
int pc_alloc_typed(int count, const struct pc_typeinfo *t, void **raw, void **buf);

/* Address of element index `elem` of a buffer with type t. */
static inline char *pc_elem_ptr(const void *buf, const struct pc_typeinfo *t, MPI_Aint elem)
{
    return (char *)buf + elem * t->extent;
}

/* Copies scount elements of stype at src to rcount elements of rtype at dst (same type signature).
 * Contiguous types copy with memcpy; others through MPI on the plan's communicator. */
int pc_copy_typed(const struct plancoll_plan_s *plan, const void *src, int scount, const struct pc_typeinfo *st,
                  void *dst, int rcount, const struct pc_typeinfo *rt);

/* The bytes that elements [first, first + count) of type t touch, relative to the buffer's address: [*lo, *hi)
 * (element k lies at k extent + true_lb, true_extent bytes long; a negative extent is allowed). count 0 touches
 * nothing: lo = hi = 0. False when an offset's magnitude would reach PC_MAX_BYTES. */
static inline bool pc_type_span(const struct pc_typeinfo *t, int64_t first, int64_t count, int64_t *lo, int64_t *hi)
{
    *lo = *hi = 0;
    if (count <= 0) return count == 0;
    const int64_t ext = t->extent, tlb = t->true_lb, text = t->true_extent;
    const int64_t lim = PC_MAX_BYTES;
    if (ext <= -lim || ext >= lim || tlb <= -lim || tlb >= lim || text < 0 || text >= lim) return false;
    int64_t a = first, b = first + count - 1; /* the first and the last element */
    int64_t mag = ext < 0 ? -ext : ext;
    int64_t most = (a < 0 ? -a : a) > (b < 0 ? -b : b) ? (a < 0 ? -a : a) : (b < 0 ? -b : b);
    if (mag != 0 && most >= lim / mag) return false;
    int64_t x = a * ext, y = b * ext; /* each below 2^60 in magnitude */
    int64_t start = (x < y ? x : y) + tlb, end = (x < y ? y : x) + tlb + text;
    if (start <= -lim || end >= lim) return false;
    *lo = start;
    *hi = end;
    return true;
}


#endif
