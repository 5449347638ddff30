/* host-state: watches how the host places the cores of a node's first two ranks, over time.
 *
 * usage: mpiexec -n 2 host-state [SECONDS [INTERVAL_MS]]   (defaults 10 s, every 100 ms)
 *
 * Every INTERVAL_MS rank 0 prints one line: the cost per MiB of the calibration's store round (src/exec/calibrate.c,
 * measure_stores: both ranks rewrite a 1 MiB area of their own that the other copied out the round before, then
 * each copies the other's area out) with ordinary and with streaming stores, 5 rounds of each, alternating, and
 * the state that ratio shows: "close" when ordinary stores cost less (the two cores share a cache), "far" when
 * they cost more than twice the streaming ones (each line must be fetched back from the other core). At the end,
 * the share of samples in each state and how many times it changed.
 *
 * Why it exists: the planner's store modes (stores=normal|stream, docs/design.md) and every node-shared figure of
 * the model depend on this state, calibration sees only the state of its own 50-100 ms, and on the development
 * machine (2 virtual cores) the state changed within single jobs, on time scales from 0.1 s to minutes
 * (docs/benchmarks.md, "The host's state changes within a job"). Links the internals for the streaming copy. */
#include <mpi.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/stream_copy.h"

enum { AREA = 1 << 20, ROUNDS = 5, LINE = 64 };

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void wait_for(_Atomic uint64_t *flag, uint64_t value)
{
    while (atomic_load_explicit(flag, memory_order_acquire) < value) {
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    double seconds = argc > 1 ? atof(argv[1]) : 10;
    int interval_ms = argc > 2 ? atoi(argv[2]) : 100;
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int rank, size;
    MPI_Comm_rank(node, &rank);
    MPI_Comm_size(node, &size);
    int world_rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    int ok = size >= 2 && seconds > 0 && seconds <= 3600 && interval_ms >= 0 && interval_ms <= 60000;
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!ok) {
        if (world_rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 host-state [SECONDS (0-3600] [INTERVAL_MS 0-60000]]: needs two "
                            "ranks on one node\n");
        MPI_Finalize();
        return 3;
    }
    const int pair = rank <= 1; /* the node's first two ranks measure; the others wait at the barriers */
    char *mine;
    MPI_Win win;
    MPI_Win_allocate_shared(pair ? LINE + AREA : 0, LINE, MPI_INFO_NULL, node, &mine, &win);
    char *base[2];
    for (int r = 0; r < 2; r++) {
        MPI_Aint bytes;
        int unit;
        MPI_Win_shared_query(win, r, &bytes, &unit, &base[r]);
    }
    _Atomic uint64_t *flag[2] = {(_Atomic uint64_t *)base[0], (_Atomic uint64_t *)base[1]};
    char *area[2] = {base[0] + LINE, base[1] + LINE};
    char *src = malloc(AREA), *dst = malloc(AREA);
    if (!src || !dst) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(src, 1, AREA);
    memset(dst, 2, AREA);
    if (pair) atomic_store(flag[rank], 0);
    MPI_Barrier(node);
    const int me = pair ? rank : 0, other = 1 - me;
    uint64_t seq = 0;
    int samples = 0, close_count = 0, far_count = 0, changes = 0, last = -1;
    double t_start = MPI_Wtime();
    for (int stop = 0; !stop;) {
        double us[2] = {0, 0};
        for (int r = 0; r <= ROUNDS; r++)
            for (int mode = 0; mode < 2; mode++) {
                seq += 2;
                if (!pair) continue;
                double t0 = MPI_Wtime();
                if (mode) {
                    pc_stream_copy(area[me], src, AREA);
                    pc_stream_fence();
                } else {
                    memcpy(area[me], src, AREA);
                }
                atomic_store_explicit(flag[me], seq - 1, memory_order_release);
                wait_for(flag[other], seq - 1);
                memcpy(dst, area[other], AREA);
                atomic_store_explicit(flag[me], seq, memory_order_release);
                wait_for(flag[other], seq);
                if (r > 0) us[mode] += (MPI_Wtime() - t0) * 1e6 / ROUNDS; /* round 0 warms up */
            }
        double now = MPI_Wtime() - t_start;
        stop = now >= seconds;
        MPI_Bcast(&stop, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (world_rank == 0) {
            const double ratio = us[0] / us[1];
            const int state = ratio < 1 ? 0 : ratio > 2 ? 1 : 2;
            static const char *name[] = {"close", "far", "between"};
            printf("%8.2f s  ordinary %8.1f us/MiB  streaming %8.1f us/MiB  ratio %5.2f  %s\n", now, us[0], us[1],
                   ratio, name[state]);
            samples++;
            close_count += state == 0;
            far_count += state == 1;
            if (state != 2) {
                if (last >= 0 && state != last) changes++;
                last = state;
            }
        }
        if (!stop) sleep_ms(interval_ms);
    }
    if (world_rank == 0)
        printf("# %d samples over %.1f s: close %d, far %d, between %d; the state changed %d times\n", samples,
               MPI_Wtime() - t_start, close_count, far_count, samples - close_count - far_count, changes);
    free(src);
    free(dst);
    MPI_Win_free(&win);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
