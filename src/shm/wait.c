#include "shm/wait.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shm/mpi_compat.h" /* PC_MPI_SIMULATED */

int pc_wait_mode_parse(const char *text)
{
    if (!text || !*text || strcmp(text, "auto") == 0) return PC_WAIT_AUTO;
    if (strcmp(text, "spin") == 0) return PC_WAIT_SPIN;
    if (strcmp(text, "yield") == 0) return PC_WAIT_YIELD;
    return -1;
}

int pc_wait_mode_from_env(void) { return pc_wait_mode_parse(getenv("PLANCOLL_WAIT")); }

void pc_waiter_init(struct pc_waiter *w, int mode, bool oversubscribed)
{
    w->spins = 0;
    w->slept_ns = 0;
    w->yield_now = mode == PC_WAIT_YIELD || (mode == PC_WAIT_AUTO && oversubscribed);
    if (mode == PC_WAIT_SPIN) w->spins = -1; /* never yields */
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

void (*pc_progress_hook)(void);
void (*pc_progress_poke)(void);

#if PC_MPI_SIMULATED
/* Under SMPI (docs/smpi.md "Waits"): every simulated rank is an actor of one host process, and the simulated clock
 * moves only when every actor is blocked in the simulator. A spin or sched_yield never blocks there, so a rank
 * polling a flag a peer will set would wait forever; instead each pause sleeps in simulated time (SMPI's
 * nanosleep: the actor blocks, the others run). The sleep is what the wait costs in the simulation, so it starts
 * near the latency of a cache line moving between cores and grows with the wait, at a sixteenth (wait.h's share)
 * of the time waited so far up to a cap: a flag is seen at most 6% (or the cap) after it is set, and a long wait costs about
 * waited / cap simulator switches instead of one per 100 ns. */
static void simulated_pause(struct pc_waiter *w)
{
    long ns = PC_WAIT_SIM_FIRST_NS + w->slept_ns / PC_WAIT_SIM_SHARE;
    if (ns > PC_WAIT_SIM_MAX_NS) ns = PC_WAIT_SIM_MAX_NS;
    const struct timespec pause = {0, ns};
    smpi_nanosleep(&pause, NULL);
    w->slept_ns += ns;
}
#endif

void pc_waiter_pause(struct pc_waiter *w)
{
    if (pc_progress_hook) pc_progress_hook();
    if (pc_progress_poke) pc_progress_poke();
#if PC_MPI_SIMULATED
    simulated_pause(w); /* whatever the mode: spinning never lets a simulated peer run */
    return;
#endif
    if (w->yield_now) {
        sched_yield();
        return;
    }
    if (w->spins < 0) { /* PLANCOLL_WAIT=spin */
        cpu_relax();
        return;
    }
    if (++w->spins >= PC_WAIT_SPIN_BUDGET) w->yield_now = true;
    cpu_relax();
}
