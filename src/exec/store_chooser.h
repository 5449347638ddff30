/* stores=auto: a plan that chooses its store mode (ordinary or streaming stores into node-shared areas,
 * exec/reduce_stream.h) while it runs, from its own executions' times.
 *
 * Why: which mode is cheaper depends on how the host placed the node's cores (sharing a cache: ordinary stores,
 * 0.7-0.9x the streaming round; far apart: streaming, ordinary 4.7-8.5x dearer), and that can change within a job
 * (bench/host-state: every few hundred milliseconds in some runs on the development machine), while calibration
 * sees only the state of its own 50-100 ms. A plan that keeps the mode the model chose then pays up to the other
 * state's ratio. The mode needs no agreement between ranks (each writer streams or not into its own areas and
 * fences before its flag; a reader reads either alike), so each rank chooses alone, from local clocks, with no
 * message: nothing is allocated and no rank waits for a decision.
 *
 * How: the plan runs the mode it believes cheaper and times a sample of its blocking executions (one in
 * PC_STORES_SAMPLE, an exponentially weighted mean); now and then it runs one execution in the other mode (a
 * probe) and switches when the probe was faster. Probes come after PC_STORES_PROBE_MIN executions, and each probe
 * that confirms the mode doubles the wait, up to PC_STORES_PROBE_MAX, so a stable host pays a probe in 4096
 * executions at most (four times the wait when the probe cost more than twice the mode: a probe is then dear); two
 * sampled executions in a row at more than twice the mean (the host may have changed state) bring the next probe
 * forward, at most once in PC_STORES_REPROBE executions. The probes run at the same executions on every rank (execution counts are the same everywhere)
 * as long as the ranks' decisions agree, which they do whenever one mode is clearly faster: a collective's
 * executions take about as long on every rank. Where they do not, ranks run different modes, which is correct
 * and costs at most the difference. Started executions (plancoll_start) run the current mode and are not timed:
 * their completion time is the caller's, not the plan's. */
#ifndef PC_STORE_CHOOSER_H
#define PC_STORE_CHOOSER_H

#include <stdbool.h>

#include "base/algorithm.h" /* PC_STORES_PROBE_MAX */

#define PC_STORES_SAMPLE 8
#define PC_STORES_PROBE_MIN 8
#define PC_STORES_REPROBE 64 /* the fewest executions between a probe and one a slow spell brings forward */
/* PC_STORES_PROBE_MAX: base/algorithm.h (the planner prices the probes by it) */

struct plancoll_plan_s;

struct pc_store_chooser {
    bool on;                        /* params.stores is auto and the algorithm can switch (set_stores) */
    bool stream;                    /* the mode of the execution in progress */
    bool best_stream;               /* the mode believed cheaper */
    bool probing, timed;            /* this execution: a probe of the other mode; timed */
    double mean_us[2];              /* per mode (0 ordinary, 1 streaming): weighted mean of timed executions; < 0 none */
    double t0;                      /* start of the timed execution */
    unsigned long long n;           /* blocking executions so far */
    unsigned long long next_probe;  /* the execution that probes the other mode */
    unsigned interval;              /* executions between probes */
    int high;                       /* sampled executions in a row at more than twice the mode's mean */
    unsigned long long last_probe;  /* the execution of the last probe */
    unsigned long long switches;    /* mode changes, for fprint */
};

/* The chooser itself, without a plan or a clock (unit-tested with made-up times): reset (on or off, first mode
 * streaming, first probe at execution 2); pick the mode of the next execution (timed: a blocking execution, which
 * may probe); learn from that execution's time in microseconds (read only when pick said it is timed). */
void pc_store_chooser_reset(struct pc_store_chooser *c, bool on);
bool pc_store_chooser_pick(struct pc_store_chooser *c, bool timed);
void pc_store_chooser_learn(struct pc_store_chooser *c, double us);

/* Arms the chooser of a plan whose params.stores is auto (otherwise leaves it off): the first mode is streaming
 * (the smaller loss when the guess is wrong: 1.3-2x against 4-8x above), the first probe at execution 2 (the first
 * execution touches fresh memory and is not timed). */
void pc_store_chooser_init(struct plancoll_plan_s *plan);
/* Before an execution (blocking when timed, else a start): picks and sets the mode. */
void pc_store_chooser_before(struct plancoll_plan_s *plan, bool timed);
/* After a blocking execution: learns from its time. */
void pc_store_chooser_after(struct plancoll_plan_s *plan);

#endif
