#include "shm/wait.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

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

void pc_waiter_pause(struct pc_waiter *w)
{
    if (pc_progress_hook) pc_progress_hook();
    if (pc_progress_poke) pc_progress_poke();
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
