#include "base/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const messages[PLANCOLL_ERR_COUNT_OF_CODES] = {
    [PLANCOLL_SUCCESS] = "success",
    [PLANCOLL_ERR_NULL_PLAN] = "the plan handle is NULL",
    [PLANCOLL_ERR_INVALID_PLAN] = "the handle is not a live plan (destroyed or never created)",
    [PLANCOLL_ERR_NULL_BUFFER] = "a buffer or array is NULL where data is needed",
    [PLANCOLL_ERR_COUNT] = "a count is negative",
    [PLANCOLL_ERR_DISPL] = "a displacement is negative",
    [PLANCOLL_ERR_COMM] = "the communicator is MPI_COMM_NULL or invalid",
    [PLANCOLL_ERR_INTERCOMM] = "intercommunicators are not supported",
    [PLANCOLL_ERR_DATATYPE] = "the datatype is null, uncommitted, or not allowed for this operation",
    [PLANCOLL_ERR_OP] = "the reduction op is null or not allowed on this datatype",
    [PLANCOLL_ERR_TYPE_MISMATCH] = "send and receive type signatures differ in size",
    [PLANCOLL_ERR_MISMATCH] = "the ranks passed arguments that do not agree",
    [PLANCOLL_ERR_REMOTE] = "another rank's arguments were invalid",
    [PLANCOLL_ERR_IN_PLACE] = "MPI_IN_PLACE is not allowed here or does not match the plan",
    [PLANCOLL_ERR_FLAGS] = "unknown or conflicting planner flags",
    [PLANCOLL_ERR_ALGORITHM] = "PLANCOLL_ALGORITHM names an unknown algorithm",
    [PLANCOLL_ERR_INAPPLICABLE] = "a forced algorithm cannot run this problem",
    [PLANCOLL_ERR_NO_WISDOM] = "PLANCOLL_WISDOM_ONLY: wisdom has no plan for this problem",
    [PLANCOLL_ERR_NOMEM] = "out of memory",
    [PLANCOLL_ERR_MPI] = "an MPI call failed",
    [PLANCOLL_ERR_ENV] = "an environment variable has an invalid value",
    [PLANCOLL_ERR_OVERFLOW] = "a size overflows the library's arithmetic",
    [PLANCOLL_ERR_NOT_INITIALIZED] = "MPI is not initialized or already finalized",
    [PLANCOLL_ERR_BUFFER] = "the buffers do not match the plan",
    [PLANCOLL_ERR_ARGUMENT] = "an argument is invalid",
    [PLANCOLL_ERR_WISDOM_FORMAT] = "the wisdom text is malformed",
    [PLANCOLL_ERR_WISDOM_STALE] = "the wisdom was made for another machine, MPI library or plancoll build",
    [PLANCOLL_ERR_IO] = "a wisdom file could not be read or written",
    [PLANCOLL_ERR_ACTIVE] = "the plan is active (started and not yet completed by plancoll_test or plancoll_wait)",
    [PLANCOLL_ERR_NOT_STARTABLE] = "the plan's algorithm cannot be started, only executed (plan with PLANCOLL_NONBLOCKING)",
    [PLANCOLL_ERR_THREAD_LEVEL] = "the progress thread (PLANCOLL_PROGRESS_THREAD=1) needs MPI_THREAD_MULTIPLE (MPI_Init_thread)",
};

/* Per thread: the progress thread (api/nonblocking.c) records its advances' failures without touching the
 * caller's detail; each active plan keeps its execution's detail for the caller's test or wait. */
static _Thread_local char detail[512];

const char *plancoll_strerror(int error)
{
    if (error < 0 || error >= PLANCOLL_ERR_COUNT_OF_CODES || !messages[error]) return "unknown plancoll error code";
    return messages[error];
}

const char *plancoll_error_detail(void) { return detail; }

void pc_clear_error(void) { detail[0] = '\0'; }

int pc_error(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return code;
}

int pc_verror(int code, const char *fmt, va_list ap)
{
    vsnprintf(detail, sizeof detail, fmt, ap);
    return code;
}
