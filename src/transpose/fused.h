/* The fused transpose: the exchange and the local passes in one schedule (fused.c). Internal to src/transpose. */
#ifndef PC_TRANSPOSE_FUSED_H
#define PC_TRANSPOSE_FUSED_H

#include <stdbool.h>

#include "transpose/state.h"

struct pc_machine_model;

/* Sets up the fused strategy of t (fresh from prepare, every rank's arguments agreed good): the node's shared area
 * (each node rank's flag line and packing slot) and the plan's receive bookkeeping. Collective over the plan's
 * communicator; every rank returns the same success or failure (PLANCOLL_ERR_NOMEM with the size when a node's
 * /dev/shm cannot hold the slots). On failure t->fused holds what was made, for pc_transpose_fused_free. */
int pc_transpose_fused_setup(struct plancoll_plan_s *plan, struct pc_transpose *t);
/* Releases the fused state (NULL is nothing to do). Local, or collective over the node when the area is the MPI
 * window fallback: call it on every rank alike. */
void pc_transpose_fused_free(struct pc_transpose_fused *f);

/* One execution begun: never waits for another rank. in and out are the element-0 data addresses (lb added). */
int pc_transpose_fused_start(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out);
/* Moves the begun execution on without blocking; *done once this rank's part is complete. */
int pc_transpose_fused_advance(struct plancoll_plan_s *plan, struct pc_transpose *t, bool *done);
/* start, then advance with the library's wait policy until done. */
int pc_transpose_fused_execute(struct plancoll_plan_s *plan, struct pc_transpose *t, const char *in, char *out);

/* The model's time of one fused execution on the busiest rank (microseconds), private buffers:
 *   pack (every block but its own, transposed into the slot)             transpose(ln0 n1 - ln0 ln1) es
 * + the own block and each node peer's, read and written once            shm_copy(1, ppn, ln1 n0_node es)
 * + other nodes' blocks, all posted at once                              net_posted(ppn, R, ln0 ln1 es)
 * + their unpack                                                         transpose(R ln0 ln1 es)
 * + one scheduler turn on an oversubscribed host (its waits yield).
 * With ranks alone on their nodes only the network part moves; on one node nothing does. */
double pc_transpose_fused_estimate(const struct plancoll_plan_s *plan, const struct pc_transpose *t,
                                   const struct pc_machine_model *m);

/* How this rank's last fused execution read its own input: true when the input was in the node-shared heap and
 * node peers read it in place (one pass), false when it was packed into the shared slot (two passes). */
bool pc_transpose_fused_last_in_place_reads(const struct pc_transpose_fused *f);

#endif
