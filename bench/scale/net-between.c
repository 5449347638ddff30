/* net-between: the network between two nodes at the sizes plancoll's calibration does not sample (it samples
 * powers of 8: 8 B ... 4 KiB, 32 KiB, 256 KiB, 2 MiB), for the two numbers a machine file (docs/machines.md) must
 * otherwise assume: where the large-message start-up begins (net_large_threshold_B) and whether the link carries
 * both directions at once (a full-duplex network) or one after the other (a loopback whose copies share the host's
 * cores). docs/scale-validate.md uses it for machines/this-2n1p-tcp.machine.
 *
 *   mpiexec -n P net-between [MIN_BYTES MAX_BYTES STEP_BYTES]      (default 4096 65536 2048)
 *
 * Rank 0 and the first rank of another node (the node layout from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED), so
 * MPICH's emulated cliques count as nodes) time, at each size:
 *   one-way  half of a ping-pong's round trip;
 *   both     a simultaneous exchange (MPI_Sendrecv both ways), per exchange.
 * The other ranks wait in a barrier. Each figure is the median of 15 batches of 20 repetitions. Output: one line per
 * size, "bytes one_way_us both_us both/one-way"; a ratio near 1 is a full-duplex path, near 2 a shared one. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench_stats.h"

#define BATCHES 15
#define REPS 20

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long min = argc > 1 ? atol(argv[1]) : 4096, max = argc > 2 ? atol(argv[2]) : 65536,
         step = argc > 3 ? atol(argv[3]) : 2048;
    if (min < 1 || max < min || step < 1 || max > (1L << 30)) {
        if (rank == 0) fprintf(stderr, "net-between: want 1 <= MIN <= MAX <= 1 GiB and STEP >= 1\n");
        MPI_Finalize();
        return 2;
    }
    /* the peer: the lowest rank whose node is not rank 0's */
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int node_first = rank, *firsts = malloc(sizeof(int) * (size_t)size);
    MPI_Allreduce(MPI_IN_PLACE, &node_first, 1, MPI_INT, MPI_MIN, node);
    MPI_Allgather(&node_first, 1, MPI_INT, firsts, 1, MPI_INT, MPI_COMM_WORLD);
    int peer = -1;
    for (int r = 0; r < size && peer < 0; r++)
        if (firsts[r] != firsts[0]) peer = r;
    if (peer < 0) {
        if (rank == 0) fprintf(stderr, "net-between: every rank is on one node: nothing between nodes to time\n");
        MPI_Finalize();
        return 2;
    }
    char *sbuf = malloc((size_t)max), *rbuf = malloc((size_t)max);
    if (!sbuf || !rbuf) MPI_Abort(MPI_COMM_WORLD, 2);
    memset(sbuf, 1, (size_t)max);
    memset(rbuf, 0, (size_t)max);
    if (rank == 0) printf("# net-between: rank 0 and rank %d (another node), %d batches of %d\n#    bytes  one_way_us"
                          "     both_us  both/one-way\n", peer, BATCHES, REPS);
    for (long bytes = min; bytes <= max; bytes += step) {
        double one[BATCHES], both[BATCHES];
        if (rank == 0 || rank == peer) {
            const int other = rank == 0 ? peer : 0;
            for (int b = -1; b < BATCHES; b++) { /* batch -1 warms up */
                double t0 = MPI_Wtime();
                for (int i = 0; i < REPS; i++) {
                    if (rank == 0) {
                        MPI_Send(sbuf, (int)bytes, MPI_BYTE, other, 1, MPI_COMM_WORLD);
                        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    } else {
                        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                        MPI_Send(sbuf, (int)bytes, MPI_BYTE, other, 1, MPI_COMM_WORLD);
                    }
                }
                double t1 = MPI_Wtime();
                for (int i = 0; i < REPS; i++)
                    MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, other, 2, rbuf, (int)bytes, MPI_BYTE, other, 2,
                                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double t2 = MPI_Wtime();
                if (b >= 0) {
                    one[b] = (t1 - t0) / (2.0 * REPS) * 1e6;
                    both[b] = (t2 - t1) / REPS * 1e6;
                }
            }
        }
        if (rank == 0) {
            double o = bench_median(one, BATCHES), w = bench_median(both, BATCHES);
            printf("%10ld %11.2f %11.2f %13.2f\n", bytes, o, w, w / o);
            fflush(stdout);
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(sbuf);
    free(rbuf);
    free(firsts);
    MPI_Comm_free(&node);
    if (rank == 0) printf("# net-between finished: exit status 0\n");
    fflush(stdout);
    MPI_Finalize();
    return 0;
}
