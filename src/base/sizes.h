/* Byte arithmetic of user buffers with overflow checks. Counts and displacements are ints but sizes and extents
 * are 64-bit, so their products can pass 2^63: every product and sum here is checked, never assumed to fit. A size
 * or offset of PC_MAX_BYTES (2^60) or more is refused at plan time (PLANCOLL_ERR_OVERFLOW), which leaves set-ups
 * and executions room to add and multiply small factors without checks of their own. */
#ifndef PC_SIZES_H
#define PC_SIZES_H

#include <stdbool.h>
#include <stdint.h>


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

#endif
