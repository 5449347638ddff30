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

#endif
