/* The wait policy (docs/design.md): spin a little, then sched_yield; yield at once when a node holds more ranks
 * than cores. PLANCOLL_WAIT=spin|yield|auto overrides. Under SimGrid SMPI every pause sleeps in simulated time
 * instead (docs/smpi.md). */
#ifndef PC_WAIT_H
#define PC_WAIT_H

#include <stdbool.h>

enum pc_wait_mode { PC_WAIT_AUTO = 0, PC_WAIT_SPIN = 1, PC_WAIT_YIELD = 2 };

/* The mode from PLANCOLL_WAIT (auto when unset). Returns -1 for an invalid value. */
int pc_wait_mode_from_env(void);
/* Parses "spin", "yield", "auto"; -1 otherwise. */
int pc_wait_mode_parse(const char *text);

struct pc_waiter {
    bool yield_now; /* decided once per wait: yield from the first pause */
    int spins;
    long slept_ns;  /* under SMPI: simulated time this wait has slept so far */
};

/* Starts a wait: oversubscribed says whether this rank's host holds more ranks than cores. */
void pc_waiter_init(struct pc_waiter *w, int mode, bool oversubscribed);
/* One pause of a wait loop: a CPU relax while spinning, sched_yield after the spin budget; first it runs the
 * progress hook when one is set. */
void pc_waiter_pause(struct pc_waiter *w);

/* Advances every started plan of the process (set by the API at the first plancoll_start, api/nonblocking.c):
 * every wait of the library calls it at each pause, so a rank blocked in one plan's execution, a plan's creation
 * or a wait keeps the plans it started moving (MPI's progress rule for persistent requests: a rank blocked in a
 * collective must not hold up another one it started before). The hook guards itself against reentry. */
extern void (*pc_progress_hook)(void);

/* Calls into MPI's progress engine, set while a put window of the node-aware families is open in this process
 * (exec/seg_window.c): every pause of every wait calls it, so that a peer's MPI_Win_flush of a put into this rank
 * completes even when this rank has finished the plan that put is for and waits on shared memory for something
 * else (with UCX over TCP, RMA completes only while the target calls into MPI). */
extern void (*pc_progress_poke)(void);

/* Spins before yielding in auto mode (iterations of the poll loop). */
#define PC_WAIT_SPIN_BUDGET 2000

/* Under SMPI, a pause sleeps in simulated time (wait.c): the first PC_WAIT_SIM_FIRST_NS, then 1 / PC_WAIT_SIM_SHARE
 * of the wait so far, at most PC_WAIT_SIM_MAX_NS. A flag is thus seen up to 1 / SHARE of the wait (or the cap)
 * late, in every wait of a chain: a quarter made plancoll's own 4-round allreduce between 16 leaders simulate at
 * 17.4 us against 11.7 with a sixteenth (docs/smpi.md "Waits"). A build can set them
 * (e.g. -DPC_WAIT_SIM_SHARE=64 -DPC_WAIT_SIM_MAX_NS=1000) to see how much of a simulated time is that lateness; a
 * smaller cap costs simulator switches in long waits (4x the wall time for a 9.6 ms wait at 1000 ns). */
#ifndef PC_WAIT_SIM_FIRST_NS
#define PC_WAIT_SIM_FIRST_NS 100
#endif
#ifndef PC_WAIT_SIM_SHARE
#define PC_WAIT_SIM_SHARE 16
#endif
#ifndef PC_WAIT_SIM_MAX_NS
#define PC_WAIT_SIM_MAX_NS 5000
#endif

#endif
