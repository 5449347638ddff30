#include <stdlib.h>
#include <string.h>

#include "exec/plan.h"
#include "base/sizes.h"

int pc_typeinfo_init(struct pc_typeinfo *t, MPI_Datatype type, bool duplicate)
{
    memset(t, 0, sizeof *t);
    t->type = type;
    MPI_Aint lb;
    MPI_Count size = 0;
    PC_MPI_CHECK(pc_mpi_type_size(type, &size)); /* MPI_Type_size gives MPI_UNDEFINED past INT_MAX bytes */
    t->size = (int64_t)size;
    PC_MPI_CHECK(MPI_Type_get_extent(type, &lb, &t->extent));
    PC_MPI_CHECK(MPI_Type_get_true_extent(type, &t->true_lb, &t->true_extent));
    t->contiguous = t->size == t->true_extent && t->extent == t->true_extent && lb == t->true_lb;
    /* The large-count envelope where the MPI has one (shm/mpi_compat.h): MPI_Type_get_envelope fails on types
     * made by large-count constructors (MPI_Type_contiguous_c and friends) in MPICH 4.0.2. */
    int combiner;
    PC_MPI_CHECK(pc_mpi_type_combiner(type, &combiner));
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
    int64_t lo, hi;
    if (!pc_type_span(t, 0, count, &lo, &hi))
        return pc_error(PLANCOLL_ERR_OVERFLOW, "scratch of %d elements of extent %lld exceeds 2^60 bytes", count,
                        (long long)t->extent);
    *raw = malloc(hi > lo ? (size_t)(hi - lo) : 1);
    if (!*raw) return pc_error(PLANCOLL_ERR_NOMEM, "scratch of %lld bytes", (long long)(hi - lo));
    *buf = (char *)*raw - lo; /* element 0's address: its lowest byte (lo, true_lb for extent >= 0) is raw */
    return PLANCOLL_SUCCESS;
}
