/* Where plan set-up time goes: wall time accumulated per phase in this process (layout discovery, agreement,
 * calibration, choice, the algorithm's set-up, teardown), read by bench/plancoll-setup and the tests. Only
 * set-up and teardown paths are timed, never an execution: one clock read (tens of ns) against set-up steps of
 * tens of microseconds at least. */
#ifndef PC_PHASE_TIMES_H
#define PC_PHASE_TIMES_H

#include <time.h>

enum pc_phase {
    PC_PHASE_LAYOUT,         /* a layout created for a communicator (everything below marked "layout:") */
    PC_PHASE_LAYOUT_DUP,     /* layout: plancoll's duplicate of the user's communicator */
    PC_PHASE_LAYOUT_NODES,   /* layout: node map, NUMA map, host census (from the census, or a survey) */
    PC_PHASE_NODE_COMMS,     /* node and leader communicators, made when a plan first needs them */
    PC_PHASE_CONTROL,        /* the node's control slots (node barrier), made when a plan first needs them */
    PC_PHASE_AGREE,          /* argument checks and agreement across ranks (plan_finish's collectives) */
    PC_PHASE_CALIBRATE,      /* measuring the machine model */
    PC_PHASE_CHOOSE,         /* candidates enumerated, ranked and (MEASURE) timed */
    PC_PHASE_SETUP,          /* the chosen algorithm's set-up (communicators, windows, schedules, scratch) */
    PC_PHASE_SEGMENT,        /* within set-up: node-shared segments acquired */
    PC_PHASE_DESTROY,        /* plan teardown */
    PC_PHASE_LAYOUT_FREE,    /* a layout freed (with the last of its communicator and plans) */
    PC_NPHASES
};

struct pc_phase_times {
    double seconds[PC_NPHASES];
    long calls[PC_NPHASES];
};

/* This process's totals since it started. */
extern struct pc_phase_times pc_phase_times;

const char *pc_phase_name(int phase);

/* The monotonic clock in seconds (what MPICH's MPI_Wtime reads too); no MPI, so the MPI-free core can time. */
static inline double pc_phase_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static inline double pc_phase_start(void) { return pc_phase_now(); }
static inline void pc_phase_add(int phase, double started)
{
    pc_phase_times.seconds[phase] += pc_phase_now() - started;
    pc_phase_times.calls[phase]++;
}

#endif
