/* Error reporting: every failure sets a code and a detailed message that plancoll_error_detail() returns. No MPI here:
 * shm/mpi_error.h turns a failed MPI call into one of these. */
#ifndef PC_ERRORS_H
#define PC_ERRORS_H

#include <stdarg.h>

#include "plancoll_codes.h"

#if defined(__GNUC__)
#define PC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define PC_PRINTF(a, b)
#endif

/* Records code and message as the last error of this process and returns code. */
int pc_error(int code, const char *fmt, ...) PC_PRINTF(2, 3);
/* pc_error with the arguments in a va_list, for helpers that take a message format of their own. */
int pc_verror(int code, const char *fmt, va_list ap) PC_PRINTF(2, 0);
void pc_clear_error(void);

#endif
