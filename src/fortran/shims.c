/* The C side of plancoll's Fortran interface (module plancoll, src/fortran/plancoll.f90.in; docs/fortran.md).
 *
 * A client of the public API only, as the drop-in layer is: it includes plancoll.h and nothing of src/, and links
 * libplancoll.so, which exports the public API alone. Every function here takes MPI handles as Fortran integers
 * (MPI_Fint: `use mpi` handles, or an mpi_f08 handle's MPI_VAL) and converts them with MPI_Comm_f2c, MPI_Type_f2c
 * and MPI_Op_f2c, as FFTW's MPI Fortran interface does: the C value of a handle is not the Fortran one (in Open MPI
 * a C handle is a pointer). Buffers arrive as C addresses the module has already taken (c_loc), with Fortran's
 * MPI_IN_PLACE already replaced by C's (plancoll_f_mpi_in_place), and strings as NUL-terminated C strings.
 *
 * Names are plancoll_f_*: the public API's own names stay free for the module's generic interfaces to bind to
 * directly where no handle is involved (plancoll_execute, plancoll_destroy_plan, ...). */
#include <mpi.h>
#include <plancoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fortran passes handles as default integers, which the module declares as integer(c_int). */
_Static_assert(sizeof(MPI_Fint) == sizeof(int), "MPI_Fint is not a C int: the module's handle arguments are wrong");

/* C's MPI_IN_PLACE: what a Fortran MPI_IN_PLACE argument becomes before it reaches the library. */
void *plancoll_f_mpi_in_place(void)
{
    return MPI_IN_PLACE;
}

int plancoll_f_plan_alltoall(const void *sendbuf, int sendcount, MPI_Fint sendtype, void *recvbuf,
                             int recvcount, MPI_Fint recvtype, MPI_Fint comm, int flags,
                             plancoll_plan *plan)
{
    return plancoll_plan_alltoall(sendbuf, sendcount, MPI_Type_f2c(sendtype), recvbuf, recvcount,
                                  MPI_Type_f2c(recvtype), MPI_Comm_f2c(comm), (unsigned)flags, plan);
}

int plancoll_f_plan_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Fint sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Fint recvtype, MPI_Fint comm, int flags,
                              plancoll_plan *plan)
{
    return plancoll_plan_alltoallv(sendbuf, sendcounts, sdispls, MPI_Type_f2c(sendtype), recvbuf, recvcounts,
                                   rdispls, MPI_Type_f2c(recvtype), MPI_Comm_f2c(comm), (unsigned)flags, plan);
}

int plancoll_f_plan_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Fint datatype,
                              MPI_Fint op, MPI_Fint comm, int flags, plancoll_plan *plan)
{
    return plancoll_plan_allreduce(sendbuf, recvbuf, count, MPI_Type_f2c(datatype), MPI_Op_f2c(op),
                                   MPI_Comm_f2c(comm), (unsigned)flags, plan);
}

ptrdiff_t plancoll_f_local_size_transposed(ptrdiff_t n0, ptrdiff_t n1, MPI_Fint comm,
                                           ptrdiff_t *local_n0, ptrdiff_t *local_0_start,
                                           ptrdiff_t *local_n1, ptrdiff_t *local_1_start)
{
    return plancoll_local_size_transposed(n0, n1, MPI_Comm_f2c(comm), local_n0, local_0_start, local_n1,
                                          local_1_start);
}

int plancoll_f_plan_transpose(ptrdiff_t n0, ptrdiff_t n1, MPI_Fint element, void *in, void *out,
                              MPI_Fint comm, int flags, plancoll_plan *plan)
{
    return plancoll_plan_transpose(n0, n1, MPI_Type_f2c(element), in, out, MPI_Comm_f2c(comm), (unsigned)flags,
                                   plan);
}

int plancoll_f_plan_transpose_pieces(ptrdiff_t n0, ptrdiff_t n1, MPI_Fint element, void *in,
                                     void *out, MPI_Fint comm, int flags, int pieces,
                                     plancoll_plan *plan)
{
    return plancoll_plan_transpose_pieces(n0, n1, MPI_Type_f2c(element), in, out, MPI_Comm_f2c(comm),
                                          (unsigned)flags, pieces, plan);
}

/* ---- Wisdom: the path or text comes NUL-terminated from the module (trimmed, C_NULL_CHAR appended). ---- */

int plancoll_f_export_wisdom_to_filename(const char *path, MPI_Fint comm)
{
    return plancoll_export_wisdom_to_filename(path, MPI_Comm_f2c(comm));
}

int plancoll_f_import_wisdom_from_filename(const char *path, MPI_Fint comm)
{
    return plancoll_import_wisdom_from_filename(path, MPI_Comm_f2c(comm));
}

/* *out: a malloc'ed string the module copies and returns with plancoll_f_free_string. */
int plancoll_f_export_wisdom_to_string(char **out, MPI_Fint comm)
{
    return plancoll_export_wisdom_to_string(out, MPI_Comm_f2c(comm));
}

int plancoll_f_import_wisdom_from_string(const char *text, MPI_Fint comm)
{
    return plancoll_import_wisdom_from_string(text, MPI_Comm_f2c(comm));
}

int plancoll_f_malloc(size_t size, MPI_Fint comm, void **ptr)
{
    return plancoll_malloc(size, MPI_Comm_f2c(comm), ptr);
}

/* ---- Strings ---------------------------------------------------------------------------------------- */

void plancoll_f_free_string(char *s)
{
    free(s);
}

/* plancoll_fprint_plan into a malloc'ed string (*text, NULL on failure), which the module writes to a Fortran unit:
 * C's stdout and Fortran's output unit buffer separately, so printing from C would interleave with the program's
 * own output out of order. */
int plancoll_f_sprint_plan(plancoll_plan plan, char **text)
{
    size_t len = 0;
    *text = NULL;
    FILE *f = open_memstream(text, &len);
    if (!f) return PLANCOLL_ERR_NOMEM;
    int rc = plancoll_fprint_plan(plan, f);
    if (fclose(f) != 0 && rc == PLANCOLL_SUCCESS) rc = PLANCOLL_ERR_NOMEM;
    if (rc != PLANCOLL_SUCCESS) {
        free(*text);
        *text = NULL;
    }
    return rc;
}

/* strlen for the module (a C string's length before copying it into a Fortran character variable). */
size_t plancoll_f_strlen(const char *s)
{
    return s ? strlen(s) : 0;
}
