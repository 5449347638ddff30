/* platform-probe: what an SMPI platform gives MPI messages, measured in simulated time.
 *
 * Run under smpirun with K ranks per host in blocks (make-platform.py's hostfile) and at least two hosts:
 *   platform-probe K [T]
 * Rank 0 ping-pongs with rank 1 (same host when K >= 2) and with rank K (the next host), at SMALL and LARGE
 * bytes; it prints the one-way time (half a round trip) of each and the bandwidth between the two sizes:
 *   intra_latency_us=... intra_bandwidth_GBps=... inter_latency_us=... inter_bandwidth_GBps=...
 * With T (a machine's net_large_threshold_B), the bandwidth is taken between T and LARGE (both pay the large-message
 * start-up) and the one-way times at T / 2 and T bytes are printed too (SMPI 3.32 applies a piecewise latency factor from
 * a few hundred bytes below its threshold, so the probe stays clear of the edge below): intra_below_us intra_at_us inter_below_us
 * inter_at_us.
 * Then every rank runs an MPI_Alltoall of 64-byte blocks and checks every received byte (the platform carries
 * collective traffic, not only pairs): "alltoall=ok" or "alltoall=FAIL" and exit code 1.
 * The one-way time at SMALL bytes is the latency; SMALL is 1 byte so the per-byte term is negligible. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL 1
#define LARGE (4 << 20)
#define REPS 10

/* One-way time of `bytes` between rank 0 and `peer` (both call it; other ranks do not). */
static double one_way(int me, int peer, char *buf, int bytes)
{
    MPI_Barrier(MPI_COMM_SELF);
    double t0 = MPI_Wtime();
    for (int i = 0; i < REPS; i++) {
        if (me == 0) {
            MPI_Send(buf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(buf, bytes, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t0) / (2.0 * REPS);
}

static void probe_pair(int me, int peer, char *buf, const char *what, int threshold)
{
    if (me != 0 && me != peer) return;
    double small = one_way(me, peer, buf, SMALL);
    double large = one_way(me, peer, buf, LARGE);
    if (threshold <= 0) {
        if (me == 0)
            printf("%s_latency_us=%.6f %s_bandwidth_GBps=%.6f\n", what, small * 1e6, what,
                   (LARGE - SMALL) / (large - small) * 1e-9);
        return;
    }
    double below = one_way(me, peer, buf, threshold / 2);
    double at = one_way(me, peer, buf, threshold);
    if (me == 0)
        printf("%s_latency_us=%.6f %s_bandwidth_GBps=%.6f %s_below_us=%.6f %s_at_us=%.6f\n", what, small * 1e6, what,
               (double)(LARGE - threshold) / (large - at) * 1e-9, what, below * 1e6, what, at * 1e6);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, np;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &np);
    int ppn = argc > 1 ? atoi(argv[1]) : 1;
    int threshold = argc > 2 ? atoi(argv[2]) : 0;
    if (threshold < 0 || threshold < 2 && threshold != 0 || threshold > LARGE / 2) {
        if (me == 0) fprintf(stderr, "platform-probe: T must be from 2 to %d bytes\n", LARGE / 2);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (ppn < 1 || np < 2 * ppn) {
        if (me == 0) fprintf(stderr, "platform-probe: need K >= 1 and at least 2K ranks (got K=%d, %d ranks)\n", ppn, np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    char *buf = calloc(LARGE, 1);
    if (ppn >= 2) probe_pair(me, 1, buf, "intra", threshold);
    MPI_Barrier(MPI_COMM_WORLD);
    probe_pair(me, ppn, buf, "inter", threshold);
    MPI_Barrier(MPI_COMM_WORLD);

    /* alltoall: block j of rank i holds bytes (i * 31 + j * 7 + k) mod 251 */
    enum { B = 64 };
    unsigned char *send = malloc((size_t)np * B), *recv = malloc((size_t)np * B);
    for (int j = 0; j < np; j++)
        for (int k = 0; k < B; k++) send[j * B + k] = (unsigned char)((me * 31 + j * 7 + k) % 251);
    memset(recv, 0, (size_t)np * B);
    MPI_Alltoall(send, B, MPI_BYTE, recv, B, MPI_BYTE, MPI_COMM_WORLD);
    int bad = 0;
    for (int i = 0; i < np; i++)
        for (int k = 0; k < B; k++)
            if (recv[i * B + k] != (unsigned char)((i * 31 + me * 7 + k) % 251)) bad++;
    int allbad = 0;
    MPI_Reduce(&bad, &allbad, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    if (me == 0) printf("alltoall=%s\n", allbad ? "FAIL" : "ok");
    free(send);
    free(recv);
    free(buf);
    MPI_Finalize();
    return allbad ? 1 : 0;
}
