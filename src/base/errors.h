/* Error reporting: every failure sets a code and a detailed message that plancoll_error_detail() returns. No MPI here:
 * shm/mpi_error.h turns a failed MPI call into one of these. */
#ifndef PC_ERRORS_H
#define PC_ERRORS_H

#include "plancoll_codes.h"

#if defined(__GNUC__)
#define PC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PC_PRINTF(a, b)
#endif

/* Records code and message as the last error of this process and returns code. */
int pc_error(int code, const char *fmt, ...) PC_PRINTF(2, 3);
void pc_clear_error(void);

#endif
