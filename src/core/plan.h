/* The plan object and the helpers algorithms share. Internal. */
#ifndef PC_PLAN_H
#define PC_PLAN_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "algorithm.h"
#include "errors.h"
#include "plancoll.h"
#include "problem.h"

struct pc_layout;

/* What an algorithm needs to know of a datatype. */
struct pc_typeinfo {
    MPI_Datatype type;   /* the plan's own handle (a duplicate for derived types) */
    bool owned;          /* the plan frees type at destroy */
    int64_t size;        /* bytes of data per element (MPI_Type_size_c: may exceed INT_MAX) */
    MPI_Aint extent, true_lb, true_extent;
    bool contiguous;     /* elements are dense bytes: a block of n elements is n*size bytes at true_lb */
};

int pc_typeinfo_init(struct pc_typeinfo *t, MPI_Datatype type, bool duplicate);
void pc_typeinfo_free(struct pc_typeinfo *t);
/* Allocates room for count elements of t; *buf is where element 0 goes, *raw is what to free. */
int pc_alloc_typed(int count, const struct pc_typeinfo *t, void **raw, void **buf);

/* How the reduction of one allreduce is carried out: a vectorised loop, or MPI_Reduce_local. */
typedef void (*pc_reduce_fn)(const void *in, void *inout, int count);
typedef void (*pc_reduce3_fn)(const void *a, const void *b, void *out, int count);
typedef void (*pc_reduce3d_fn)(const void *a, const void *b, void *out, void *dup, int count);
typedef void (*pc_settle_fn)(void *buf, int count);
struct pc_reduction {
    MPI_Op op;
    MPI_Datatype type;
    pc_reduce_fn fast;   /* NULL: use MPI_Reduce_local */
    pc_reduce3_fn fast3; /* the same loop writing a third buffer; NULL with fast */
    pc_reduce3d_fn fast3d; /* ... and a fourth with the same result; NULL with fast */
    /* Floating and complex SUM and PROD: replaces every NaN of count elements by the default NaN. MPI's collective
     * may combine two NaNs in one order on one rank and in the other on another (x86 keeps the first operand's
     * payload and sign), so what MPI computed is settled with this before it is a result; NULL otherwise. */
    pc_settle_fn settle_nans;
    MPI_Aint true_lb, extent, true_extent; /* of type: where a vector's bytes lie */
};
/* inout[i] = in[i] op inout[i], the MPI_Reduce_local convention (in comes first in rank order). */
int pc_reduce(const struct pc_reduction *r, const void *in, void *inout, int count);
/* out[i] = a[i] op b[i] (a first in rank order) in one pass; out overlaps neither input. Without a fast loop: b's
 * bytes (gaps of a non-contiguous type included) are copied to out, then MPI_Reduce_local, so out must be
 * plancoll's own memory. */
int pc_reduce3(const struct pc_reduction *r, const void *a, const void *b, void *out, int count);
/* out[i] = dup[i] = a[i] op b[i] in one pass; only with a fast loop (r->fast3d), contiguous types. */
int pc_reduce3_dup(const struct pc_reduction *r, const void *a, const void *b, void *out, void *dup, int count);

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

/* Address of element index `elem` of a buffer with type t. */
static inline char *pc_elem_ptr(const void *buf, const struct pc_typeinfo *t, MPI_Aint elem)
{
    return (char *)buf + elem * t->extent;
}

/* Copies scount elements of stype at src to rcount elements of rtype at dst (same type signature).
 * Contiguous types copy with memcpy; others through MPI on the plan's communicator. */
int pc_copy_typed(const struct plancoll_plan_s *plan, const void *src, int scount, const struct pc_typeinfo *st,
                  void *dst, int rcount, const struct pc_typeinfo *rt);

/* Waits for n requests with the library's wait policy (MPI_Testall in a yielding loop). */
int pc_wait_all(const struct plancoll_plan_s *plan, int n, MPI_Request *reqs);
int pc_wait_layout(const struct pc_layout *layout, int n, MPI_Request *reqs);
/* Collectives on the layout's communicator, nonblocking and waited with the wait policy. */
int pc_allreduce_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t, MPI_Op op);
int pc_alltoall_wait(const struct pc_layout *layout, const void *in, void *out, int n, MPI_Datatype t);
int pc_bcast_wait(const struct pc_layout *layout, void *buf, int n, MPI_Datatype t, int root);
int pc_barrier_wait(const struct pc_layout *layout);

/* Plan life cycle, shared by the collectives (plan.c) and the transpose (src/transpose/transpose.c). */
/* Checks MPI, out and comm, allocates the plan and attaches comm's layout (collective at first use). */
int pc_plan_begin(MPI_Comm comm, unsigned flags, enum pc_collective coll, plancoll_plan *out,
                  struct plancoll_plan_s **pp);
/* Makes p live: gives it a handle never used before in the process (plancoll_execute and friends accept it). */
int pc_plan_register(struct plancoll_plan_s *p);
/* A live plan's handle, and the live plan behind a handle (NULL when the handle is not a live plan). */
plancoll_plan pc_plan_handle(const struct plancoll_plan_s *p);
struct plancoll_plan_s *pc_plan_lookup(plancoll_plan handle);
/* Tears down and frees a plan that is not (or no longer) live. */
void pc_plan_free(struct plancoll_plan_s *p);

/* Tags of plancoll's point-to-point traffic, one range per algorithm family. */
enum {
    PC_TAG_COPY = 1000,
    PC_TAG_ALLTOALL = 2000,
    PC_TAG_ALLTOALLV = 3000,
    PC_TAG_ALLREDUCE = 4000,
};

#endif
