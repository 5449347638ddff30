/* A failed MPI call as a plancoll error (PLANCOLL_ERR_MPI, MPI's own message in the detail). Internal. */
#ifndef PC_MPI_ERROR_H
#define PC_MPI_ERROR_H

#include <mpi.h>

#include "base/errors.h"

/* Records an MPI failure (mpi_rc from call named what) and returns PLANCOLL_ERR_MPI. */
int pc_mpi_error(int mpi_rc, const char *what);

/* Propagates an MPI failure as a plancoll error from inside a function returning int. */
#define PC_MPI_CHECK(call)                                                                        \
    do {                                                                                          \
        int pc_mpi_rc_ = (call);                                                                  \
        if (pc_mpi_rc_ != MPI_SUCCESS) return pc_mpi_error(pc_mpi_rc_, #call);                     \
    } while (0)

#endif
