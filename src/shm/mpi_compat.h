/* What the MPI offers beyond MPI-3.1, and the calls the library makes through it. Internal.
 *
 * The features are probed at configure time (top meson.build, mpi_conf; generated as B/src/shm/mpi_config.h),
 * never inferred from the MPI's name:
 *   PC_HAVE_MPI_LARGE_COUNT       the MPI-4 large-count `_c` functions (MPICH 4.0.2 has them; Open MPI 4.1, an
 *                                 MPI-3.1, has none)
 *   PC_HAVE_MPI_PERSISTENT_COLL   the MPI-4 persistent collectives MPI_Alltoall_init, MPI_Alltoallv_init,
 *                                 MPI_Allreduce_init
 *   PC_HAVE_MPIX_PERSISTENT_COLL  only their MPIX_ forms of mpi-ext.h (Open MPI 4.1's pcollreq extension)
 *   PC_MPI_SIMULATED              not a feature: the MPI is SimGrid SMPI (docs/smpi.md)
 *
 * The large-count calls below take MPI_Count. Without the `_c` functions a count up to INT_MAX goes to the int
 * function; a larger one is never truncated: the call fails with MPI_ERR_COUNT. The planner refuses such problems
 * before any of this runs (pc_mpi_count_fits, api/validate.c: "this MPI has no large-count functions"), so that
 * failure is a last guard, not a path. */
#ifndef PC_MPI_COMPAT_H
#define PC_MPI_COMPAT_H

#include <limits.h>
#include <stdbool.h>
#include <mpi.h>

#include "shm/mpi_config.h"

#if !PC_HAVE_MPI_PERSISTENT_COLL && PC_HAVE_MPIX_PERSISTENT_COLL
#include <mpi-ext.h>
#endif

/* Whether persistent collectives exist under any name; PC_MPI_COLL_INIT(Alltoall) names the one there is. */
#define PC_HAVE_PERSISTENT_COLL (PC_HAVE_MPI_PERSISTENT_COLL || PC_HAVE_MPIX_PERSISTENT_COLL)
#if PC_HAVE_MPI_PERSISTENT_COLL
#define PC_MPI_COLL_INIT(NAME) MPI_##NAME##_init
#elif PC_HAVE_MPIX_PERSISTENT_COLL
#define PC_MPI_COLL_INIT(NAME) MPIX_##NAME##_init
#endif

/* Whether a count (elements, or bytes of MPI_BYTE / MPI_PACKED) can be handed to this MPI. */
static inline bool pc_mpi_count_fits(MPI_Count count) { return PC_HAVE_MPI_LARGE_COUNT || count <= INT_MAX; }

#if PC_HAVE_MPI_LARGE_COUNT

static inline int pc_mpi_isend(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                               MPI_Request *req)
{
    return MPI_Isend_c(buf, count, type, dest, tag, comm, req);
}
static inline int pc_mpi_issend(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                                MPI_Request *req)
{
    return MPI_Issend_c(buf, count, type, dest, tag, comm, req);
}
static inline int pc_mpi_irecv(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                               MPI_Request *req)
{
    return MPI_Irecv_c(buf, count, type, source, tag, comm, req);
}
static inline int pc_mpi_pack(const void *in, MPI_Count count, MPI_Datatype type, void *out, MPI_Count outsize,
                              MPI_Count *position, MPI_Comm comm)
{
    return MPI_Pack_c(in, count, type, out, outsize, position, comm);
}
static inline int pc_mpi_unpack(const void *in, MPI_Count insize, MPI_Count *position, void *out, MPI_Count count,
                                MPI_Datatype type, MPI_Comm comm)
{
    return MPI_Unpack_c(in, insize, position, out, count, type, comm);
}
static inline int pc_mpi_pack_size(MPI_Count count, MPI_Datatype type, MPI_Comm comm, MPI_Count *size)
{
    return MPI_Pack_size_c(count, type, comm, size);
}
static inline int pc_mpi_type_size(MPI_Datatype type, MPI_Count *size) { return MPI_Type_size_c(type, size); }
static inline int pc_mpi_type_contiguous(MPI_Count count, MPI_Datatype old, MPI_Datatype *type)
{
    return MPI_Type_contiguous_c(count, old, type);
}
/* The combiner of a type (MPI_Type_get_envelope fails on types of the large-count constructors in MPICH 4.0.2). */
static inline int pc_mpi_type_combiner(MPI_Datatype type, int *combiner)
{
    MPI_Count nints, naddrs, nlarge, ntypes;
    return MPI_Type_get_envelope_c(type, &nints, &naddrs, &nlarge, &ntypes, combiner);
}

#else /* MPI-3.1: the int functions, counts past INT_MAX refused */

static inline int pc_mpi_isend(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                               MPI_Request *req)
{
    if (count < 0 || count > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Isend(buf, (int)count, type, dest, tag, comm, req);
}
static inline int pc_mpi_issend(const void *buf, MPI_Count count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                                MPI_Request *req)
{
    if (count < 0 || count > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Issend(buf, (int)count, type, dest, tag, comm, req);
}
static inline int pc_mpi_irecv(void *buf, MPI_Count count, MPI_Datatype type, int source, int tag, MPI_Comm comm,
                               MPI_Request *req)
{
    if (count < 0 || count > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Irecv(buf, (int)count, type, source, tag, comm, req);
}
/* The buffer's size is capped at INT_MAX bytes: data that would pass it fails in MPI (MPI_ERR_TRUNCATE), never
 * silently; a position past INT_MAX cannot be expressed and fails here. */
static inline int pc_mpi_pack(const void *in, MPI_Count count, MPI_Datatype type, void *out, MPI_Count outsize,
                              MPI_Count *position, MPI_Comm comm)
{
    if (count < 0 || count > INT_MAX || *position < 0 || *position > INT_MAX) return MPI_ERR_COUNT;
    int pos = (int)*position;
    int rc = MPI_Pack(in, (int)count, type, out, outsize > INT_MAX ? INT_MAX : (int)outsize, &pos, comm);
    *position = pos;
    return rc;
}
static inline int pc_mpi_unpack(const void *in, MPI_Count insize, MPI_Count *position, void *out, MPI_Count count,
                                MPI_Datatype type, MPI_Comm comm)
{
    if (count < 0 || count > INT_MAX || *position < 0 || *position > INT_MAX) return MPI_ERR_COUNT;
    int pos = (int)*position;
    int rc = MPI_Unpack(in, insize > INT_MAX ? INT_MAX : (int)insize, &pos, out, (int)count, type, comm);
    *position = pos;
    return rc;
}
/* MPI_Pack_size's int result cannot hold more than INT_MAX bytes: the data's size (MPI_Type_size_x, MPI-3) is
 * checked first, with room for the packing's own header. */
static inline int pc_mpi_pack_size(MPI_Count count, MPI_Datatype type, MPI_Comm comm, MPI_Count *size)
{
    if (count < 0 || count > INT_MAX) return MPI_ERR_COUNT;
    MPI_Count elem = 0;
    int rc = MPI_Type_size_x(type, &elem);
    if (rc != MPI_SUCCESS) return rc;
    if (elem == MPI_UNDEFINED || (elem > 0 && count > (INT_MAX - 4096) / elem)) return MPI_ERR_COUNT;
    int n = 0;
    rc = MPI_Pack_size((int)count, type, comm, &n);
    *size = n;
    return rc;
}
static inline int pc_mpi_type_size(MPI_Datatype type, MPI_Count *size) { return MPI_Type_size_x(type, size); }
static inline int pc_mpi_type_contiguous(MPI_Count count, MPI_Datatype old, MPI_Datatype *type)
{
    if (count < 0 || count > INT_MAX) return MPI_ERR_COUNT;
    return MPI_Type_contiguous((int)count, old, type);
}
static inline int pc_mpi_type_combiner(MPI_Datatype type, int *combiner)
{
    int nints, naddrs, ntypes;
    return MPI_Type_get_envelope(type, &nints, &naddrs, &ntypes, combiner);
}

#endif

/* MPI_Test. SMPI 3.32's leaves *flag unset for MPI_REQUEST_NULL when the status is MPI_STATUS_IGNORE (it sets it
 * only with a status; measured, and in its source): a null request is complete here, as MPI defines. */
static inline int pc_mpi_test(MPI_Request *req, int *flag, MPI_Status *status)
{
#if PC_MPI_SIMULATED
    if (*req == MPI_REQUEST_NULL) {
        *flag = 1;
        return MPI_SUCCESS;
    }
#endif
    return MPI_Test(req, flag, status);
}

/* The nonblocking collectives plancoll posts with MPI_IN_PLACE. SMPI 3.32 copies the in-place data into a
 * temporary that it frees when the call returns, while the collective may still read it (measured: heap
 * corruption in MPI_Ialltoall at one rank): under SMPI an in-place one runs as the blocking collective (a blocked
 * simulated rank takes no core) and the request is MPI_REQUEST_NULL (complete). Out of place is MPI's own. */
/* Under SMPI every reduction runs blocking: SMPI 3.32's MPI_Iallreduce (which reduces the operands each rank
 * receives in their arrival order) is wrong in several ways, measured with small programs where the blocking
 * MPI_Allreduce is right: with a user op on a derived type each rank keeps its own operand; with a resized strided
 * type it applies the op with the extent to a packed temporary (heap corruption); a non-commutative op is applied
 * out of rank order; and a double sum rounds differently on different ranks (test_allreduce at 16 ranks). And one
 * of no element is nothing: SMPI 3.32's MPI_Allreduce of 0 elements of a derived type divides by zero at 16
 * ranks (SIGFPE). */
static inline int pc_mpi_iallreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype type, MPI_Op op,
                                    MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    if (count == 0) {
        *req = MPI_REQUEST_NULL;
        return MPI_SUCCESS;
    }
    *req = MPI_REQUEST_NULL;
    return MPI_Allreduce(sbuf, rbuf, count, type, op, comm);
#endif
    return MPI_Iallreduce(sbuf, rbuf, count, type, op, comm, req);
}
static inline int pc_mpi_ialltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                   MPI_Datatype rtype, MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    if (sbuf == MPI_IN_PLACE) {
        *req = MPI_REQUEST_NULL;
        return MPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm);
    }
#endif
    return MPI_Ialltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm, req);
}
static inline int pc_mpi_ialltoallv(const void *sbuf, const int *scounts, const int *sdispls, MPI_Datatype stype,
                                    void *rbuf, const int *rcounts, const int *rdispls, MPI_Datatype rtype,
                                    MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    if (sbuf == MPI_IN_PLACE) {
        *req = MPI_REQUEST_NULL;
        return MPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm);
    }
#endif
    return MPI_Ialltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm, req);
}

/* Plan-time collectives (the census, the agreements, the node segment's set-up, wisdom's gathers). Under SMPI the
 * blocking forms, with the request MPI_REQUEST_NULL (complete): SMPI 3.32 starts each of its nonblocking
 * collectives as all of its point-to-point messages at once, and from about 96 ranks over several hosts so many
 * simultaneous flows end the simulation in SimGrid's max-min solver (an abort "Cannot saturate more a constraint
 * that has no active element!" or a segmentation fault: measured with MPI_Iallgather alone, docs/smpi.md), where
 * the blocking forms run MPICH's algorithms. A blocked simulated rank takes no core, so nothing is lost. */
static inline int pc_mpi_ibcast(void *buf, int count, MPI_Datatype type, int root, MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    *req = MPI_REQUEST_NULL;
    return MPI_Bcast(buf, count, type, root, comm);
#endif
    return MPI_Ibcast(buf, count, type, root, comm, req);
}
static inline int pc_mpi_ibarrier(MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    *req = MPI_REQUEST_NULL;
    return MPI_Barrier(comm);
#endif
    return MPI_Ibarrier(comm, req);
}
static inline int pc_mpi_igather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                                 MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    *req = MPI_REQUEST_NULL;
    return MPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm);
#endif
    return MPI_Igather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm, req);
}
static inline int pc_mpi_igatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, const int *rcounts,
                                  const int *displs, MPI_Datatype rtype, int root, MPI_Comm comm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    *req = MPI_REQUEST_NULL;
    return MPI_Gatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm);
#endif
    return MPI_Igatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm, req);
}

/* MPI_Comm_idup. SMPI 3.32 does not implement it (it aborts the simulation): there the duplicate is made by the
 * blocking MPI_Comm_dup, which costs nothing a nonblocking one would save (a blocked simulated rank takes no
 * core), and the request is MPI_REQUEST_NULL (complete). */
static inline int pc_mpi_comm_idup(MPI_Comm comm, MPI_Comm *newcomm, MPI_Request *req)
{
#if PC_MPI_SIMULATED
    *req = MPI_REQUEST_NULL;
    return MPI_Comm_dup(comm, newcomm);
#else
    return MPI_Comm_idup(comm, newcomm, req);
#endif
}

#endif
