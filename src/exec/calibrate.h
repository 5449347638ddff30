/* Calibration microbenchmarks (calibrate.c): collective over a layout's communicator. */
#ifndef PC_CALIBRATE_H
#define PC_CALIBRATE_H

#include "base/model.h"

struct pc_layout;

/* Measures the machine model on the layout (every rank takes part, about a second at 8 ranks on 2 cores)
 * and fills m identically on every rank. The shape key is left to the caller. */
int pc_calibrate(struct pc_layout *layout, struct pc_machine_model *m);

#endif
