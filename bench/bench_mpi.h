/* What the benchmark programs share: waiting for MPI without holding a core, and the random numbers every rank
 * draws alike. With more ranks than cores a spinning wait costs a scheduler slice per rank (docs/measurement.md), so
 * every wait tests and yields, the loop plancoll itself uses: the comparison with MPI's calls stays fair. */
#ifndef PLANCOLL_BENCH_MPI_H
#define PLANCOLL_BENCH_MPI_H

#include <mpi.h>
#include <sched.h>
#include <stdint.h>

static inline void bench_wait(MPI_Request *req)
{
    int done = 0;
    while (!done) {
        /* MPI_Test, not MPI_Testall: MPICH 4.0.2's MPI_Testall fails on persistent collective requests */
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done) sched_yield();
    }
}

static inline void bench_barrier(MPI_Comm comm)
{
    MPI_Request req;
    MPI_Ibarrier(comm, &req);
    bench_wait(&req);
}

static inline void bench_allreduce(const void *in, void *out, int n, MPI_Datatype type, MPI_Op op, MPI_Comm comm)
{
    MPI_Request req;
    MPI_Iallreduce(in, out, n, type, op, comm, &req);
    bench_wait(&req);
}

static inline void bench_bcast(void *buf, int n, MPI_Datatype type, int root, MPI_Comm comm)
{
    MPI_Request req;
    MPI_Ibcast(buf, n, type, root, comm, &req);
    bench_wait(&req);
}

/* splitmix64: cheap, and identical on every rank for the same seed */
static inline uint64_t bench_random(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

#endif
