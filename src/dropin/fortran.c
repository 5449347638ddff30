/* The drop-in layer's Fortran entry points, for MPIs whose Fortran bindings miss the layer's C symbols.
 *
 * MPICH 4.0.2's Fortran bindings (mpif.h, `use mpi`, and `use mpi_f08` for calls with buffers) call the C
 * MPI_Alltoall & co., so the C definitions of blocking.c take Fortran programs' calls with no code here. Open MPI
 * 4.1's do not: mpi_alltoall_ (libmpi_mpifh) and mpi_alltoall_f08_ (libmpi_usempif08, through ompi_alltoall_f)
 * convert the handles and call PMPI_Alltoall directly. For such MPIs the layer defines the Fortran symbols itself
 * and sends the calls into its C definitions.
 *
 * Which symbols, and the Fortran MPI_IN_PLACE and MPI_BOTTOM sentinels, are found at configure time from the
 * libraries Fortran programs link (src/dropin/probe-fortran.sh: a library that defines mpi_alltoall_ but does not
 * call MPI_Alltoall), and come here as X-macro lists:
 *   PCD_FORTRAN_BYPASS(X)   X(kind, symbol) for each Fortran entry point to define (kind: alltoall, alltoallv,
 *                           allreduce; the name variants of the compilers' conventions and the mpi_f08 ones)
 *   PCD_FORTRAN_IN_PLACE(X), PCD_FORTRAN_BOTTOM(X)   X(symbol) for each data symbol whose address is the
 *                           Fortran MPI_IN_PLACE / MPI_BOTTOM
 * src/dropin/meson.build compiles this file only when the lists are not empty and MPI_Fint is an int (the
 * counts and displacements of alltoallv are passed on as the C int arrays they then are).
 *
 * The entry points share one calling convention: every argument by reference, MPI handles as MPI_Fint, the error
 * code last. The mpif.h / `use mpi` symbols always pass ierror; Open MPI's mpi_f08 ones (mpi_alltoall_f08_, which
 * takes the handles' MPI_VAL by reference and the choice buffers as plain addresses, forwarding all of them to
 * ompi_alltoall_f unchanged) pass NULL when the program leaves the optional ierror out.
 *
 * What is not intercepted here (docs/dropin.md, "Fortran programs"): the Fortran MPI_Init, MPI_Finalize and
 * MPI_Comm_free (the layer starts lazily at its first call and ends and releases from attribute callbacks), and the
 * Fortran persistent collectives, MPI_Start and the completion calls, which then stay MPI's own requests from init
 * to free. (MPICH's mpi_f08 calls without buffers, which call PMPI_* too, are fortran_f08.c's.) */
#include "dropin.h"

#include <stddef.h>

#define PCD_DECLARE_SENTINEL(sym) extern char sym __attribute__((weak));
PCD_FORTRAN_IN_PLACE(PCD_DECLARE_SENTINEL)
PCD_FORTRAN_BOTTOM(PCD_DECLARE_SENTINEL)

/* The C buffer for a Fortran choice argument: MPI_IN_PLACE and MPI_BOTTOM for the addresses of their sentinels
 * (weak: an absent symbol has address NULL and matches nothing), the address itself otherwise. */
#define PCD_IS_SENTINEL(sym) || (&sym != NULL && (const char *)buf == &sym)
static void *c_buffer(void *buf) {
    if (0 PCD_FORTRAN_IN_PLACE(PCD_IS_SENTINEL)) return MPI_IN_PLACE;
    if (0 PCD_FORTRAN_BOTTOM(PCD_IS_SENTINEL)) return MPI_BOTTOM;
    return buf;
}

static void set_ierror(MPI_Fint *ierror, int rc) {
    if (ierror != NULL) *ierror = (MPI_Fint)rc;
}

/* Into blocking.c's definitions by their internal names (dropin.h): the layer's own MPI_Alltoall, whichever
 * object defines the symbol first in the process. */
__attribute__((unused)) static void pcd_f_alltoall(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf, MPI_Fint *recvcount,
                           MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierror) {
    set_ierror(ierror, pcd_alltoall(c_buffer(sendbuf), (int)*sendcount, PMPI_Type_f2c(*sendtype), c_buffer(recvbuf),
                                    (int)*recvcount, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

__attribute__((unused)) static void pcd_f_alltoallv(void *sendbuf, MPI_Fint *sendcounts, MPI_Fint *sdispls, MPI_Fint *sendtype,
                            void *recvbuf, MPI_Fint *recvcounts, MPI_Fint *rdispls, MPI_Fint *recvtype,
                            MPI_Fint *comm, MPI_Fint *ierror) {
    _Static_assert(sizeof(MPI_Fint) == sizeof(int), "meson.build compiles fortran.c only where MPI_Fint is an int");
    set_ierror(ierror, pcd_alltoallv(c_buffer(sendbuf), (const int *)sendcounts, (const int *)sdispls,
                                     PMPI_Type_f2c(*sendtype), c_buffer(recvbuf), (const int *)recvcounts,
                                     (const int *)rdispls, PMPI_Type_f2c(*recvtype), PMPI_Comm_f2c(*comm)));
}

__attribute__((unused)) static void pcd_f_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *op,
                            MPI_Fint *comm, MPI_Fint *ierror) {
    set_ierror(ierror, pcd_allreduce(c_buffer(sendbuf), c_buffer(recvbuf), (int)*count, PMPI_Type_f2c(*datatype),
                                     PMPI_Op_f2c(*op), PMPI_Comm_f2c(*comm)));
}

/* Each symbol the probe found, an alias of its kind's function (same prototype). */
#define PCD_PARAMS_alltoall void *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *
#define PCD_PARAMS_alltoallv \
    void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *
#define PCD_PARAMS_allreduce void *, void *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *, MPI_Fint *
#define PCD_DEFINE_ENTRY(kind, sym) \
    void sym(PCD_PARAMS_##kind) __attribute__((alias("pcd_f_" #kind), visibility("default")));
PCD_FORTRAN_BYPASS(PCD_DEFINE_ENTRY)
