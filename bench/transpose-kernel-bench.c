/*
 * transpose-kernel-bench: the local transpose kernel (src/transpose/local.c) on one core against a memcpy of the
 * same bytes, with ordinary and with streaming stores, for square-ish matrices of 8- and 16-byte elements from
 * 128 KiB to 64 MiB. What the transpose plan's store probe decides between (docs/design.md, "Stores").
 *
 *   transpose-kernel-bench [-e ES] [-r REPS]       (ES 8 or 16, default 16; best of REPS, default 9)
 *
 * Prints per size: memcpy time, each kernel's time and its ratio to memcpy.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "transpose/local.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    size_t es = 16;
    int reps = 9, opt;
    while ((opt = getopt(argc, argv, "e:r:")) != -1) {
        if (opt == 'e') es = (size_t)atoi(optarg);
        else if (opt == 'r') reps = atoi(optarg);
        else {
            fprintf(stderr, "usage: transpose-kernel-bench [-e 8|16] [-r REPS]\n");
            return 2;
        }
    }
    if ((es != 8 && es != 16) || reps < 1) {
        fprintf(stderr, "transpose-kernel-bench: -e takes 8 or 16, -r a positive count\n");
        return 2;
    }
    printf("# transpose-kernel-bench: %zu-byte elements, best of %d, one core; streaming stores %s\n", es, reps,
           pc_transpose_can_stream(es) ? "available" : "not available (ordinary stores twice)");
    printf("# %10s %12s %12s %8s %12s %8s\n", "bytes", "memcpy_us", "ordinary_us", "x", "streaming_us", "x");
    for (size_t bytes = (size_t)128 << 10; bytes <= (size_t)64 << 20; bytes *= 2) {
        size_t elems = bytes / es, rows = 1;
        while (rows * rows * 2 <= elems) rows *= 2; /* rows x cols, cols = 1 or 2 rows: power-of-two strides */
        size_t cols = elems / rows;
        char *src = aligned_alloc(64, bytes), *dst = aligned_alloc(64, bytes);
        if (!src || !dst) {
            fprintf(stderr, "transpose-kernel-bench: out of memory at %zu bytes\n", bytes);
            return 1;
        }
        memset(src, 1, bytes);
        memset(dst, 2, bytes);
        double best[3] = {1e30, 1e30, 1e30};
        for (int r = 0; r < reps + 1; r++)
            for (int k = 0; k < 3; k++) {
                double t0 = now();
                if (k == 0) memcpy(dst, src, rows * cols * es);
                else pc_transpose_local_to(src, cols, dst, rows, rows, cols, es, k == 2);
                double t = now() - t0;
                if (r > 0 && t < best[k]) best[k] = t; /* round 0 warms up (page faults) */
            }
        printf("  %10zu %12.1f %12.1f %8.2f %12.1f %8.2f\n", rows * cols * es, best[0] * 1e6, best[1] * 1e6,
               best[1] / best[0], best[2] * 1e6, best[2] / best[0]);
        free(src);
        free(dst);
    }
    return 0;
}
