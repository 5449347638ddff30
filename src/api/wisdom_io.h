/* Wisdom between processes and files (wisdom_io.c): the MPI side of wisdom. Internal. */
#ifndef PC_WISDOM_IO_H
#define PC_WISDOM_IO_H

#include <stdbool.h>

#include "planner/wisdom_text.h"

struct pc_layout;

/* This process's fingerprint: registry signature, MPI library and build, hwloc topology summary, plancoll
 * version. Local (no communication; MPI_Get_library_version works before MPI_Init and after MPI_Finalize).
 * layout is left for the caller. */
void pc_wisdom_local_fingerprint(struct pc_wisdom_fingerprint *fp);

/* PLANCOLL_WISDOM: true while this process has a path and has not read it yet. */
bool pc_wisdom_env_pending(void);
/* Reads PLANCOLL_WISDOM collectively over the layout's communicator (called by every rank of it when any rank
 * is pending; ranks that read it already take part without importing again) and arranges the write-back at
 * MPI_Finalize. A missing file is not an error; a bad one is reported on stderr by the communicator's rank 0 and
 * planning goes on without it. */
void pc_wisdom_env_load(struct pc_layout *layout);

/* Reads a whole file (at most PC_WISDOM_MAX_BYTES) into a malloc'd NUL-terminated buffer. Returns
 * PLANCOLL_SUCCESS, PLANCOLL_ERR_IO (message in msg; *absent set when the file does not exist),
 * PLANCOLL_ERR_WISDOM_FORMAT (too large) or PLANCOLL_ERR_NOMEM. */
int pc_wisdom_read_file(const char *path, char **text, size_t *len, bool *absent, char *msg, size_t msglen);
/* Writes text to path atomically: a temporary file in the same directory, fsync, rename. PLANCOLL_ERR_IO with
 * the reason in msg on failure (nothing is left behind). */
int pc_wisdom_write_file(const char *path, const char *text, size_t len, char *msg, size_t msglen);

/* Writers of a wisdom file hold its lock, an exclusive fcntl lock on "<path>.lock", across read, merge and
 * rename (wisdom_io.c, "the lock of a wisdom file"). pc_wisdom_lock retries for at most timeout seconds;
 * returns PLANCOLL_SUCCESS with the lock held through *fd; PLANCOLL_ERR_IO (path exists and is not a regular
 * file, the lock file cannot be created, or it stayed locked until the deadline) or PLANCOLL_ERR_NOMEM, with
 * the reason in msg and *fd = -1; or
 * PC_WISDOM_LOCK_UNSUPPORTED when the file system has no locks (*fd = -1). Local: no MPI. */
#define PC_WISDOM_LOCK_SECONDS 30.0
#define PC_WISDOM_LOCK_UNSUPPORTED (-1)
int pc_wisdom_lock(const char *path, double timeout, int *fd, char *msg, size_t msglen);
/* What every writer calls: pc_wisdom_lock with PC_WISDOM_LOCK_SECONDS, except that a file system without locks
 * is PLANCOLL_SUCCESS with *fd = -1 after a warning on stderr (once per process): the write goes ahead unlocked,
 * as before plancoll locked. */
int pc_wisdom_lock_for_write(const char *path, int *fd, char *msg, size_t msglen);
/* Releases the lock (fd -1: nothing to release). */
void pc_wisdom_unlock(int fd);

#endif
