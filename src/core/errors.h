/* Error reporting: every failure sets a code and a detailed message that plancoll_error_detail() returns. */
#ifndef PC_ERRORS_H
#define PC_ERRORS_H

#include "plancoll.h"

#if defined(__GNUC__)
#define PC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PC_PRINTF(a, b)
#endif

/* Records code and message as the last error of this process and returns code. */
int pc_error(int code, const char *fmt, ...) PC_PRINTF(2, 3);
/* Records an MPI failure (mpi_rc from call named what) and returns PLANCOLL_ERR_MPI. */
int pc_mpi_error(int mpi_rc, const char *what);
void pc_clear_error(void);

/* Propagates an MPI failure as a plancoll error from inside a function returning int. */
#define PC_MPI_CHECK(call)                                                                        \
    do {                                                                                          \
        int pc_mpi_rc_ = (call);                                                                  \
        if (pc_mpi_rc_ != MPI_SUCCESS) return pc_mpi_error(pc_mpi_rc_, #call);                     \
    } while (0)

#endif
