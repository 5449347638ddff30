/* mpi-call-census: an LD_PRELOAD profiling library (PMPI) that counts the collectives an unmodified MPI program
 * calls, by shape, and times them: MPI_Alltoall, MPI_Alltoallv, MPI_Allreduce, and MPI_Sendrecv (the exchange
 * of FFTW's pairwise transpose, which the drop-in layer does not take). At MPI_Finalize every rank prints its
 * table to stderr, prefixed "census[rank]", so the shapes each rank sees (alltoallv counts differ per rank) are
 * all visible. bench/run-fftw-dropin.sh census builds and uses it to show which collectives FFTW's MPI
 * transforms call; it is a measuring tool, not part of plancoll.
 *
 * build: mpicc -O2 -shared -fPIC -o libmpi-call-census.so bench/mpi-call-census.c
 * use:   mpiexec -n 2 env LD_PRELOAD=$PWD/libmpi-call-census.so ./program
 */
#include <mpi.h>
#include <stdio.h>
#include <string.h>

#define CENSUS_MAX_SHAPES 256

struct census_shape {
    const char *collective;
    int comm_size;
    long long count; /* alltoall: block count; allreduce: vector count; alltoallv/sendrecv: elements sent */
    long long count_min, count_max; /* alltoallv: smallest and largest block this rank sends */
    MPI_Datatype type;
    MPI_Op op;
    long long calls;
    double seconds;
};

static struct census_shape census_shapes[CENSUS_MAX_SHAPES];
static int census_count, census_overflow;

static struct census_shape *census_find(const char *collective, int comm_size, long long count, long long count_min,
                                        long long count_max, MPI_Datatype type, MPI_Op op)
{
    for (int i = 0; i < census_count; i++) {
        struct census_shape *s = &census_shapes[i];
        if (s->collective == collective && s->comm_size == comm_size && s->count == count &&
            s->count_min == count_min && s->count_max == count_max && s->type == type && s->op == op)
            return s;
    }
    if (census_count == CENSUS_MAX_SHAPES) {
        census_overflow++;
        return NULL;
    }
    struct census_shape *s = &census_shapes[census_count++];
    *s = (struct census_shape){collective, comm_size, count, count_min, count_max, type, op, 0, 0.0};
    return s;
}

static void census_add(const char *collective, MPI_Comm comm, long long count, long long count_min,
                       long long count_max, MPI_Datatype type, MPI_Op op, double seconds)
{
    int size = 0;
    PMPI_Comm_size(comm, &size);
    struct census_shape *s = census_find(collective, size, count, count_min, count_max, type, op);
    if (s) {
        s->calls++;
        s->seconds += seconds;
    }
}

static const char *census_type_name(MPI_Datatype type)
{
    static char name[MPI_MAX_OBJECT_NAME];
    int len = 0;
    if (PMPI_Type_get_name(type, name, &len) != MPI_SUCCESS || len == 0) return "(unnamed type)";
    return name;
}

static const char *census_op_name(MPI_Op op)
{
    if (op == MPI_OP_NULL) return "-";
    if (op == MPI_SUM) return "MPI_SUM";
    if (op == MPI_MAX) return "MPI_MAX";
    if (op == MPI_MIN) return "MPI_MIN";
    if (op == MPI_LAND) return "MPI_LAND";
    if (op == MPI_LOR) return "MPI_LOR";
    if (op == MPI_PROD) return "MPI_PROD";
    return "(other op)";
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    census_add("alltoall", comm, sendcount, sendcount, sendcount, sendtype, MPI_OP_NULL, PMPI_Wtime() - t0);
    return rc;
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    double dt = PMPI_Wtime() - t0;
    int size = 0;
    PMPI_Comm_size(comm, &size);
    long long total = 0, lo = -1, hi = -1;
    for (int i = 0; i < size; i++) {
        total += sendcounts[i];
        if (lo < 0 || sendcounts[i] < lo) lo = sendcounts[i];
        if (sendcounts[i] > hi) hi = sendcounts[i];
    }
    census_add("alltoallv", comm, total, lo, hi, sendtype, MPI_OP_NULL, dt);
    return rc;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    census_add("allreduce", comm, count, count, count, datatype, op, PMPI_Wtime() - t0);
    return rc;
}

int MPI_Sendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest, int sendtag, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, int source, int recvtag, MPI_Comm comm, MPI_Status *status)
{
    double t0 = PMPI_Wtime();
    int rc = PMPI_Sendrecv(sendbuf, sendcount, sendtype, dest, sendtag, recvbuf, recvcount, recvtype, source,
                           recvtag, comm, status);
    census_add("sendrecv", comm, sendcount, sendcount, sendcount, sendtype, MPI_OP_NULL, PMPI_Wtime() - t0);
    return rc;
}

int MPI_Finalize(void)
{
    int rank = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    char out[32768];
    size_t used = 0;
    used += (size_t)snprintf(out + used, sizeof out - used, "census[%d]: %d shapes%s\n", rank, census_count,
                             census_overflow ? " (table full: some calls not counted)" : "");
    for (int i = 0; i < census_count && used < sizeof out; i++) {
        const struct census_shape *s = &census_shapes[i];
        used += (size_t)snprintf(out + used, sizeof out - used,
                                 "census[%d]: collective=%s comm_size=%d count=%lld block_min=%lld block_max=%lld "
                                 "type=%s op=%s calls=%lld total_ms=%.3f mean_us=%.1f\n",
                                 rank, s->collective, s->comm_size, s->count, s->count_min, s->count_max,
                                 census_type_name(s->type), census_op_name(s->op), s->calls, 1e3 * s->seconds,
                                 s->calls ? 1e6 * s->seconds / (double)s->calls : 0.0);
    }
    fputs(out, stderr);
    fflush(stderr);
    return PMPI_Finalize();
}
