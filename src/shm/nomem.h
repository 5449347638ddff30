/* Reserve, agree, report: the one way plancoll turns "no shared memory" into an error every rank returns.
 *
 * Memory behind a node-shared mapping is reserved where the mapping is made (reserve.h), by one or several ranks
 * of each node; a reservation that fails must fail the call on every rank of the communicator (the others would
 * otherwise go on into a collective alone), and the report says the same thing wherever it is made: what could
 * not be had, how many bytes, on whose node, and that the node's /dev/shm is full or too small.  Internal. */
#ifndef PC_NOMEM_H
#define PC_NOMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

struct pc_layout;

/* Collective over layout->comm, one allreduce (shm/requests.h: pc_agree_failure_max): every rank learns whether
 * any rank failed before (err) or could not reserve its memory (failed_bytes: what this rank could not reserve, 0
 * when it reserved all it had to, or had nothing to reserve).  Returns err on a rank that failed; else an MPI
 * error; else PLANCOLL_ERR_REMOTE when another rank failed ("<what>: another rank failed ..."); else
 * PLANCOLL_ERR_NOMEM when any rank lacked memory (pc_shm_nomem's message); else success.  For callers with work
 * between reserving and agreeing (zeroing what they reserved, which the allreduce then publishes). */
int pc_shm_agree_reserved(const struct pc_layout *layout, int err, uint64_t failed_bytes, const char *what);

/* Reserves [addr, addr + bytes) locally (pc_shm_reserve; bytes == 0 reserves nothing), then agrees and reports
 * as pc_shm_agree_reserved.  Collective over layout->comm. */
int pc_shm_reserve_agreed(const struct pc_layout *layout, int err, void *addr, size_t bytes, const char *what);

/* The report: PLANCOLL_ERR_NOMEM, "<what>: no shared memory for <bytes> bytes (this node's /dev/shm is full or
 * too small)" where mine, else "<what>: no shared memory for <bytes> bytes on rank <rank>'s node (its /dev/shm is
 * full or too small)" (rank < 0: "on another rank's node"). */
int pc_shm_nomem(const char *what, bool mine, uint64_t bytes, int rank);

/* Collective over node_comm: whether a shared window of these parts (this rank's part_bytes, summed over the node)
 * fits in the free space of /dev/shm as node rank 0 sees it, with a margin for the MPI's own pages in the window
 * (some pages per node rank). PLANCOLL_ERR_NOMEM on every node rank when it does not (pc_shm_nomem's message);
 * success when it fits or /dev/shm cannot be examined; an MPI error code when the allreduce fails. For an MPI
 * whose failing MPI_Win_allocate_shared returns on one rank and leaves the others inside it
 * (PC_MPI_WINDOW_FAILURE_HANGS, shm/mpi_config.h): the window is then never asked for. */
int pc_shm_window_fits(MPI_Comm node_comm, uint64_t part_bytes, const char *what);

#endif
