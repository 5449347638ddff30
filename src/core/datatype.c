#include <stdlib.h>
#include <string.h>

#include "plan.h"

int pc_typeinfo_init(struct pc_typeinfo *t, MPI_Datatype type, bool duplicate)
{
    memset(t, 0, sizeof *t);
    t->type = type;
    MPI_Aint lb;
    PC_MPI_CHECK(MPI_Type_size(type, &t->size));
    PC_MPI_CHECK(MPI_Type_get_extent(type, &lb, &t->extent));
    PC_MPI_CHECK(MPI_Type_get_true_extent(type, &t->true_lb, &t->true_extent));
    t->contiguous = t->size == t->true_extent && t->extent == t->true_extent && lb == t->true_lb;
    int nints, naddrs, ntypes, combiner;
    PC_MPI_CHECK(MPI_Type_get_envelope(type, &nints, &naddrs, &ntypes, &combiner));
    if (duplicate && combiner != MPI_COMBINER_NAMED) {
        /* The caller may free its type after planning; the plan keeps its own. */
        PC_MPI_CHECK(MPI_Type_dup(type, &t->type));
        t->owned = true;
    }
    return PLANCOLL_SUCCESS;
}

void pc_typeinfo_free(struct pc_typeinfo *t)
{
    if (t->owned) MPI_Type_free(&t->type);
    t->owned = false;
}

int pc_copy_typed(const struct plancoll_plan_s *plan, const void *src, int scount, const struct pc_typeinfo *st,
                  void *dst, int rcount, const struct pc_typeinfo *rt)
{
    if (scount == 0 && rcount == 0) return PLANCOLL_SUCCESS;
    if (st->contiguous && rt->contiguous) {
        memmove((char *)dst + rt->true_lb, (const char *)src + st->true_lb, (size_t)scount * (size_t)st->size);
        return PLANCOLL_SUCCESS;
    }
    PC_MPI_CHECK(MPI_Sendrecv(src, scount, st->type, plan->rank, PC_TAG_COPY, dst, rcount, rt->type, plan->rank,
                              PC_TAG_COPY, plan->comm, MPI_STATUS_IGNORE));
    return PLANCOLL_SUCCESS;
}

int pc_alloc_typed(int count, const struct pc_typeinfo *t, void **raw, void **buf)
{
    size_t bytes = 1;
    if (count > 0) bytes = (size_t)t->true_extent + (size_t)(count - 1) * (size_t)t->extent;
    *raw = malloc(bytes);
    if (!*raw) return pc_error(PLANCOLL_ERR_NOMEM, "scratch of %zu bytes", bytes);
    *buf = (char *)*raw - t->true_lb;
    return PLANCOLL_SUCCESS;
}
