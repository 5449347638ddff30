/* Memory behind node-shared mappings: reserved when plancoll maps it, returned when plancoll frees it.
 *
 * Why.  Shared windows (MPI_Win_allocate_shared, and MPI_Win_allocate when ranks share a node) and plancoll's
 * own POSIX shared mappings are files of a tmpfs, /dev/shm.  Sizing such a file reserves nothing: with the file
 * system full (64 MiB is Docker's default) the mapping succeeds and the first store into a page without memory
 * raises SIGBUS, possibly at a plan's first execution.  Every such mapping is therefore reserved where it is
 * made, at plan time (or in plancoll_malloc), so that too little shared memory is an error code
 * (PLANCOLL_ERR_NOMEM), agreed by every rank, instead of a signal.
 *
 * How.  madvise(MADV_POPULATE_WRITE) (Linux 5.14 and later) faults every page in as a write would and returns an
 * error instead of raising SIGBUS.  Where it is missing (older kernels, or a mapping it does not accept) every
 * page is touched with a temporary SIGBUS handler installed, which jumps out of the loop on the first failing
 * page; the caller's handler is restored before returning.  Caveat of that fallback: the handler is
 * process-wide for the duration of the loop, so a thread that installs its own SIGBUS handler at the same moment
 * races with it (a SIGBUS of another thread during the loop is passed on to the previous handler).  The library
 * is called from one thread at a time, which makes this safe for plancoll itself.
 *
 * Cost.  Reserving faults the pages in at plan time instead of at the first execution: the same page faults,
 * earlier.  First touch decides a page's NUMA domain, so callers reserve from the rank that will use the memory
 * most (its own heap part; a slice of a segment per node rank). */
#ifndef PC_RESERVE_H
#define PC_RESERVE_H

#include <stdbool.h>
#include <stddef.h>

/* Gives every page holding a byte of [addr, addr + bytes) memory now, without changing any byte.  Returns 0, or
 * an errno value: ENOSPC when some page could not get memory (the shared-memory file system is full or too
 * small, or memory is exhausted); the pages wholly inside the range are then returned again
 * (pc_shm_unreserve), so a failure leaves the file system as it found it.  The caller must be the only one
 * writing the range while this runs (the fallback stores back each page's first byte of the range).
 * bytes == 0 does nothing. */
int pc_shm_reserve(void *addr, size_t bytes);

/* The fallback alone (touching every page under a SIGBUS guard), for tests and for kernels without
 * MADV_POPULATE_WRITE.  Same contract as pc_shm_reserve. */
int pc_shm_reserve_by_touch(void *addr, size_t bytes);

/* Returns the memory of the pages wholly inside [addr, addr + bytes) to the system (a hole punched in the
 * tmpfs file, MADV_REMOVE; private memory, which refuses that, is dropped with MADV_DONTNEED).  Their bytes
 * are lost, in every process mapping them, and the pages must be reserved again before they are used.  Best
 * effort: false when neither call is allowed (the memory then stays). */
bool pc_shm_unreserve(void *addr, size_t bytes);

/* Bytes of the pages holding a byte of [addr, addr + bytes) that have memory behind them now (mincore: for a
 * shared file mapping, whether the file's page exists, whoever touched it), in whole pages.  For tests and
 * reports. */
size_t pc_shm_resident(const void *addr, size_t bytes);

#endif
