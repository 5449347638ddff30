#include "shm/mpi_error.h"

int pc_mpi_error(int mpi_rc, const char *what)
{
    char text[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Error_string(mpi_rc, text, &len);
    return pc_error(PLANCOLL_ERR_MPI, "%s failed: %s", what, text);
}
