/* Block images for the forwarding alltoallv algorithms (vblock.h). */
#include <string.h>

#include "exec/alltoallv/vblock.h"

struct pc_vside pc_vside_recv(const struct plancoll_plan_s *plan)
{
    return (struct pc_vside){&plan->rtype, plan->recvcounts, plan->rdispls};
}

struct pc_vside pc_vside_send(const struct plancoll_plan_s *plan)
{
    return plan->in_place ? pc_vside_recv(plan) : (struct pc_vside){&plan->stype, plan->sendcounts, plan->sdispls};
}

MPI_Datatype pc_vblock_unit(const struct plancoll_plan_s *plan) { return plan->prob.contiguous ? MPI_BYTE : MPI_PACKED; }

static int check_type(const struct plancoll_plan_s *plan, const struct pc_vside *s)
{
    int most = 0;
    for (int j = 0; j < plan->size; j++)
        if (s->counts[j] > most) most = s->counts[j];
    if (most == 0) return PLANCOLL_SUCCESS;
    MPI_Count packed = 0; /* MPI_Pack_size's int would be MPI_UNDEFINED past 2 GiB */
    PC_MPI_CHECK(pc_mpi_pack_size(most, s->t->type, plan->comm, &packed));
    if ((uint64_t)packed != (uint64_t)most * (uint64_t)s->t->size)
        return pc_error(PLANCOLL_ERR_INAPPLICABLE,
                        "MPI packs %d elements of this datatype into %lld bytes, not %d x %lld: blocks cannot be "
                        "forwarded as bytes",
                        most, (long long)packed, most, (long long)s->t->size);
    return PLANCOLL_SUCCESS;
}

/* SimGrid SMPI 3.32's MPI_Pack_size answers count x max(size, extent): pc_vblock_check would fail at setup on any
 * type with holes, after the planner chose the algorithm; under SMPI such problems are inapplicable up front. */
const char *pc_vblock_inapplicable(const struct pc_problem *p)
{
    if (PC_MPI_SIMULATED && !p->contiguous)
        return "SimGrid SMPI's MPI_Pack_size counts a non-contiguous type's holes (blocks forwarded as packed bytes)";
    return NULL;
}

int pc_vblock_check(const struct plancoll_plan_s *plan)
{
    if (plan->prob.contiguous) return PLANCOLL_SUCCESS;
    struct pc_vside r = pc_vside_recv(plan), s = pc_vside_send(plan);
    int err = check_type(plan, &r);
    return err ? err : check_type(plan, &s);
}

int pc_vblock_pack(const struct plancoll_plan_s *plan, const struct pc_vside *s, const void *buf, int j, char *dst)
{
    uint64_t bytes = pc_vblock_bytes(s, j);
    if (bytes == 0) return PLANCOLL_SUCCESS;
    if (plan->prob.contiguous) {
        memcpy(dst, (const char *)buf + pc_vblock_offset(s, j), (size_t)bytes);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0; /* large-count packing: a block may exceed 2 GiB */
    PC_MPI_CHECK(pc_mpi_pack(pc_elem_ptr(buf, s->t, s->displs[j]), s->counts[j], s->t->type, dst, (MPI_Count)bytes, &pos,
                            plan->comm));
    if ((uint64_t)pos != bytes)
        return pc_error(PLANCOLL_ERR_MPI, "MPI_Pack wrote %lld bytes for a block of %llu", (long long)pos,
                        (unsigned long long)bytes);
    return PLANCOLL_SUCCESS;
}

int pc_vblock_unpack(const struct plancoll_plan_s *plan, const struct pc_vside *s, void *buf, int j, const char *src)
{
    uint64_t bytes = pc_vblock_bytes(s, j);
    if (bytes == 0) return PLANCOLL_SUCCESS;
    if (plan->prob.contiguous) {
        memcpy((char *)buf + pc_vblock_offset(s, j), src, (size_t)bytes);
        return PLANCOLL_SUCCESS;
    }
    MPI_Count pos = 0;
    PC_MPI_CHECK(pc_mpi_unpack(src, (MPI_Count)bytes, &pos, pc_elem_ptr(buf, s->t, s->displs[j]), s->counts[j], s->t->type,
                              plan->comm));
    return PLANCOLL_SUCCESS;
}
