/* The plan object: what an algorithm's set-up, execute and teardown receive. Internal. */
#ifndef PC_PLAN_H
#define PC_PLAN_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/algorithm.h"
#include "base/errors.h"
#include "base/problem.h"
#include "exec/datatype.h"
#include "exec/reduce.h"
#include "exec/tags.h"
#include "plancoll.h"
#include "shm/mpi_error.h"
#include "shm/requests.h"

struct pc_layout;



struct plancoll_plan_s {
    uint64_t id; /* the handle's value once live (pc_plan_register); 0 before */
    const struct pc_algorithm *alg;
    struct pc_params params;
    struct pc_problem prob;
    struct pc_layout *layout; /* holds a reference */
    MPI_Comm comm;            /* layout's duplicate of the user's communicator */
    int rank, size;
    unsigned flags;

    /* buffers as planned */
    const void *sendbuf;
    void *recvbuf;
    bool in_place;

    /* alltoall */
    int sendcount, recvcount;
    struct pc_typeinfo stype, rtype;
    /* alltoallv: copies of the caller's arrays */
    int *sendcounts, *sdispls, *recvcounts, *rdispls;
    /* allreduce */
    int count;
    struct pc_reduction red;

    void *impl; /* the algorithm's private state */
    /* A distributed-matrix transpose (src/transpose): alg is its wrapper, not a registry entry; the wrapper's
     * state holds an inner alltoall(v) plan that the registry's algorithms run. */
    struct pc_transpose *transpose;
    bool planned_buffers; /* this execution runs on the buffers given at plan time (plancoll_execute) */

    /* provenance, for plancoll_fprint_plan */
    const char *chosen_by;
    double predicted_us, measured_us;
    bool model_calibrated; /* predicted_us came from a calibrated model */
    char runner_up[64];
    double runner_up_us;
    int candidates;
    double setup_seconds;
    unsigned long long executions;
    double first_execution_us; /* this rank's wall time of the plan's first execution; < 0 before it */
};





/* Waits for n requests with the library's wait policy, on the plan's layout (shm/requests.h). */
static inline int pc_wait_all(const struct plancoll_plan_s *plan, int n, MPI_Request *reqs)
{
    return pc_wait_layout(plan->layout, n, reqs);
}

/* Tears down and frees a plan that is not (or no longer) live: the algorithm's teardown, then what every plan
 * holds (type duplicates, count arrays, the layout reference). */
void pc_plan_free(struct plancoll_plan_s *p);

#endif
