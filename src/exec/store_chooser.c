/* stores=auto: the store mode chosen while the plan runs (exec/store_chooser.h). */
#include "exec/store_chooser.h"

#include <mpi.h>

#include "exec/plan.h"

void pc_store_chooser_reset(struct pc_store_chooser *c, bool on)
{
    *c = (struct pc_store_chooser){.on = on,
                                   .stream = true,
                                   .best_stream = true,
                                   .mean_us = {-1.0, -1.0},
                                   .next_probe = 2,
                                   .interval = PC_STORES_PROBE_MIN};
}

bool pc_store_chooser_pick(struct pc_store_chooser *c, bool timed)
{
    c->probing = timed && c->n == c->next_probe;
    c->timed = timed && c->n > 0 && (c->probing || c->n % PC_STORES_SAMPLE == 0 || c->mean_us[c->best_stream] < 0);
    return c->probing ? !c->best_stream : c->best_stream;
}

void pc_store_chooser_learn(struct pc_store_chooser *c, double us)
{
    const unsigned long long n = c->n++;
    if (!c->timed) return;
    const int best = c->best_stream, other = !best;
    if (c->probing) {
        /* the probe's single time against the mode's mean: a probe of a mode that is clearly slower loses whatever
         * its noise; within the noise either mode is as good, and a wrong switch is undone at the next probe */
        c->mean_us[other] = us;
        if (c->mean_us[best] < 0 || us < c->mean_us[best]) {
            c->best_stream = other;
            c->switches++;
            c->interval = PC_STORES_PROBE_MIN;
        } else {
            /* confirmed: wait longer, four times longer when the other mode cost more than twice as much (a probe
             * then costs that much, and only a change of the host's state would make it pay) */
            c->interval *= us > 2.0 * c->mean_us[best] ? 4 : 2;
            if (c->interval > PC_STORES_PROBE_MAX) c->interval = PC_STORES_PROBE_MAX;
        }
        c->next_probe = n + 1 + c->interval;
        c->last_probe = n;
        c->high = 0;
        return;
    }
    double *mean = &c->mean_us[best];
    if (*mean >= 0 && us > 2.0 * *mean) {
        /* twice what the mode cost: a scheduler slice, or the host changed state. Twice in a row (two samples, 8
         * executions apart) is taken for a change: the mode's mean starts again from here, and the other mode is
         * probed next (its last time is from the old state too: moving far -> close, streaming went 100 -> 243 us
         * while ordinary stores, last probed at 700, now took 92), but not sooner than PC_STORES_REPROBE
         * executions after the last probe: under a host whose state flickers, a probe at every slow spell (and the
         * probe waits started again) cost 20%. */
        if (++c->high >= 2) {
            *mean = us;
            c->high = 0;
            if (n >= c->last_probe + PC_STORES_REPROBE && c->next_probe > n + 1) c->next_probe = n + 1;
        }
        return;
    }
    c->high = 0;
    *mean = *mean < 0 ? us : 0.75 * *mean + 0.25 * us;
}

void pc_store_chooser_init(struct plancoll_plan_s *plan)
{
    struct pc_store_chooser *c = &plan->stores_auto;
    pc_store_chooser_reset(c, plan->alg && plan->alg->set_stores && plan->params.stores == PC_STORES_AUTO);
    if (c->on) plan->alg->set_stores(plan, true);
}

void pc_store_chooser_before(struct plancoll_plan_s *plan, bool timed)
{
    struct pc_store_chooser *c = &plan->stores_auto;
    if (!c->on) return;
    const bool stream = pc_store_chooser_pick(c, timed);
    if (stream != c->stream) {
        plan->alg->set_stores(plan, stream);
        c->stream = stream;
    }
    if (c->timed) c->t0 = MPI_Wtime();
}

void pc_store_chooser_after(struct plancoll_plan_s *plan)
{
    struct pc_store_chooser *c = &plan->stores_auto;
    if (!c->on) return;
    pc_store_chooser_learn(c, c->timed ? (MPI_Wtime() - c->t0) * 1e6 : 0.0);
}
