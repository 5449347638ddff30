#include "base/phase_times.h"

struct pc_phase_times pc_phase_times;

const char *pc_phase_name(int phase)
{
    static const char *const names[PC_NPHASES] = {
        [PC_PHASE_LAYOUT] = "layout",
        [PC_PHASE_LAYOUT_DUP] = "layout.dup",
        [PC_PHASE_LAYOUT_NODES] = "layout.nodes",
        [PC_PHASE_NODE_COMMS] = "node_comms",
        [PC_PHASE_CONTROL] = "control",
        [PC_PHASE_AGREE] = "agree",
        [PC_PHASE_CALIBRATE] = "calibrate",
        [PC_PHASE_CHOOSE] = "choose",
        [PC_PHASE_SETUP] = "setup",
        [PC_PHASE_SEGMENT] = "setup.segment",
        [PC_PHASE_DESTROY] = "destroy",
        [PC_PHASE_LAYOUT_FREE] = "layout_free",
    };
    return phase >= 0 && phase < PC_NPHASES ? names[phase] : "?";
}
