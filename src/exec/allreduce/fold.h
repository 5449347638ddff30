/* The fold that lets power-of-two algorithms run on any P (struct pc_fold, pc_fold_make, pc_fold_real) now
 * lives with the other schedule arithmetic in src/exec/schedule.h; this header is kept for its includers. */
#ifndef PC_FOLD_H
#define PC_FOLD_H

#include "exec/schedule.h"

#endif
