/* Byte arithmetic of user buffers with overflow checks. Counts and displacements are ints but sizes and extents
 * are 64-bit, so their products can pass 2^63: every product and sum here is checked, never assumed to fit. A size
 * or offset of PC_MAX_BYTES (2^60) or more is refused at plan time (PLANCOLL_ERR_OVERFLOW), which leaves set-ups
 * and executions room to add and multiply small factors without checks of their own. */
#ifndef PC_SIZES_H
#define PC_SIZES_H

#include <stdbool.h>
#include <stdint.h>

#include "plan.h"

#define PC_MAX_BYTES (INT64_C(1) << 60)

/* *out = a b for a, b >= 0; false when the product reaches PC_MAX_BYTES (or an operand is negative). */
static inline bool pc_bytes_mul(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return false;
    if (a != 0 && b >= PC_MAX_BYTES / a) return false;
    *out = a * b;
    return *out < PC_MAX_BYTES;
}

/* *sum += v for v >= 0; false when the sum reaches PC_MAX_BYTES. */
static inline bool pc_bytes_add(int64_t *sum, int64_t v)
{
    if (v < 0 || v >= PC_MAX_BYTES - *sum) return false;
    *sum += v;
    return true;
}

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
