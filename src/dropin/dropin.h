/* The drop-in layer (libplancoll-mpi): what its files share.
 *
 * The layer is a client of plancoll's public API built on MPI's profiling interface: it defines MPI_Alltoall,
 * MPI_Alltoallv, MPI_Allreduce, their persistent forms and the request calls, and reaches MPI itself through
 * PMPI_*. It includes nothing of src/ but this folder (scripts/check-layers.py: the "dropin" layer sits on top of
 * the public API, apart from the library's own layers). docs/dropin.md has the design and the agreement argument.
 *
 * Files: common.c (MPI_Init*, MPI_Finalize, settings, recursion guard, datatype signatures, per-communicator
 * state), blocking.c (online planning of blocking calls), persistent.c (MPI-4 persistent collectives as started
 * plans), progress.c (blocking point-to-point calls that advance started plans), report.c (statistics, the report
 * at exit), fortran.c (the Fortran collectives, where the MPI's Fortran bindings call PMPI directly). */
#ifndef PLANCOLL_DROPIN_H
#define PLANCOLL_DROPIN_H

#include <limits.h>
#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plancoll.h"

/* ---- Settings (environment, read at MPI_Init and agreed over MPI_COMM_WORLD) ------------------------ */

enum pcd_report_mode { PCD_REPORT_NONE = 0, PCD_REPORT_STDERR = 1, PCD_REPORT_FILE = 2 };

struct pcd_settings {
    int after;            /* PLANCOLL_DROPIN_AFTER: a shape's first `after` calls go to MPI */
    unsigned rigor_flags; /* PLANCOLL_DROPIN_RIGOR: PLANCOLL_ESTIMATE or PLANCOLL_MEASURE */
    int max_plans;        /* PLANCOLL_DROPIN_MAX_PLANS: cached plans per communicator */
    enum pcd_report_mode report;
    char report_file[1024]; /* PLANCOLL_DROPIN_REPORT=FILE (rank 0 writes it) */
    bool guard;             /* PLANCOLL_DROPIN_PROGRESS: thread (default: the guard, guard.c) or calls */
};

extern struct pcd_settings pcd_settings;

/* Layer state: on only between a successful MPI_Init* with settings agreed on every rank and MPI_Finalize, and
 * never under MPI_THREAD_MULTIPLE (plans are not shared between threads; concurrent collectives from several
 * threads go to MPI unchanged). */
extern bool pcd_on;

/* Depth of plancoll calls made by the layer on this thread. The library's own MPI calls (its agreement
 * allreduces, its native candidates' MPI_Alltoall_init, ...) resolve to the layer's definitions when it is
 * preloaded: while this is nonzero they go straight to PMPI. Thread-local so the library's progress thread,
 * which may test requests, is judged on its own calls. */
extern _Thread_local int pcd_inside;

/* Whether the layer was set up: at MPI_Init* when the program's call passed through it (or through the layer's own
 * mpi_f08 entry points, fortran_f08.c), else lazily at the first call it intercepts once MPI is initialized
 * (pcd_lazy). Open MPI's Fortran bindings call PMPI_Init, PMPI_Finalize, PMPI_Start and PMPI_Wait* directly (only
 * the calls with buffers reach the layer), so for such programs the layer sees neither MPI_Init nor MPI_Finalize
 * nor the request calls: it then checks its settings
 * per communicator (pcd_comm_create) instead of once over MPI_COMM_WORLD, finishes from an MPI_COMM_SELF attribute
 * (deleted first thing in MPI_Finalize, while MPI still works) and leaves the persistent inits to MPI, since
 * the program's starts and waits would not reach it. */
extern bool pcd_started;
extern bool pcd_lazy;
void pcd_start_lazily(void);
/* The parts of the layer's MPI_Init*, MPI_Finalize and MPI_Comm_free / MPI_Comm_disconnect that follow or precede
 * MPI's call, for Fortran entry points that call MPI's own definition themselves (fortran_f08.c): the set-up after
 * a successful init (nothing when the layer is set up already), the end before finalize, the release of a
 * communicator's plans before it is freed. */
void pcd_start_after_init(int level_told, int actual_level);
/* The thread level (common.c): whether the layer asks MPI for MPI_THREAD_MULTIPLE when the program asks for
 * `required` (for the guard), and, after such an init, the level the program is told (min of required and MPI's)
 * which MPI_Query_thread then answers. */
bool pcd_raise_level_for(int required);
int pcd_program_level(int required, int actual);
void pcd_finish_before_finalize(void);
void pcd_release_before_free(MPI_Comm *comm);

/* Whether a call made now should be considered by the layer at all (else: straight to PMPI). */
static inline bool pcd_takes_calls(void) {
    if (__builtin_expect(!pcd_started, 0) && pcd_inside == 0) pcd_start_lazily();
    return pcd_on && pcd_inside == 0;
}

/* Brackets around every call into plancoll (plan, execute, start, test, wait, destroy, spec). Only the application's
 * thread uses them (the guard's thread sets its pcd_inside itself), and the outermost ones tell the guard (guard.c)
 * what that thread is doing: pcd_guard_inside says it is in plancoll now (whose own waits advance the started plans),
 * and leaving bumps pcd_guard_epoch (it has just advanced them). */
extern unsigned long pcd_guard_epoch;
extern int pcd_guard_inside;
static inline void pcd_enter(void) {
    if (pcd_inside++ == 0) __atomic_store_n(&pcd_guard_inside, 1, __ATOMIC_RELAXED);
}
static inline void pcd_leave(void) {
    if (--pcd_inside == 0) {
        __atomic_store_n(&pcd_guard_inside, 0, __ATOMIC_RELAXED);
        __atomic_store_n(&pcd_guard_epoch, pcd_guard_epoch + 1, __ATOMIC_RELAXED);
    }
}

/* The hash of an MPI handle's bits (an integer under MPICH, a pointer under Open MPI), for the layer's tables of
 * communicators (common.c) and requests (persistent.c): the handle's first 8 bytes through a 64-bit finalizer, so
 * that nearby handle values spread over the table. */
#define PCD_HANDLE_HASH(handle)                                                                                        \
    pcd_hash_bits(&(handle), sizeof(handle) < sizeof(uint64_t) ? sizeof(handle) : sizeof(uint64_t))
static inline uint64_t pcd_hash_bits(const void *bits, size_t n)
{
    uint64_t h = 0;
    memcpy(&h, bits, n);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return h;
}

/* Monotonic time in seconds (PMPI_Wtime), taken only when a report is asked for. */
double pcd_now(void);

/* ---- Datatype signatures ------------------------------------------------------------------------- *
 * MPI makes ranks agree on type signatures, not on datatype handles: one rank may send 4 MPI_INT where another
 * receives one contiguous type of 4 ints, or a strided vector of ints. The layer keys its caches on the signature
 * normalised to (base predefined type, element count), so the key is the same on every rank whenever MPI
 * requires the signatures to match; the layout (contiguous or not) is each rank's own business (packed). */
struct pcd_signature {
    MPI_Datatype base;   /* the predefined (named) type every basic element of the signature is */
    MPI_Count elements;  /* base elements in one item of the type */
    MPI_Aint extent;     /* extent of one item */
    MPI_Aint lb;         /* lower bound of one item */
    bool contiguous;     /* an item is `elements` base elements back to back from its start, in signature order */
};

/* Fills *sig and returns true when every basic element of t's signature is one named type (a named type, or a
 * derived type built of a single named type, of any layout); false (sig untouched) for MPI_DATATYPE_NULL, mixed
 * signatures, or any failure. Cheap for named types; derived types are analysed once and the result kept on the
 * type (an attribute freed with it). Local. */
bool pcd_type_signature(MPI_Datatype t, struct pcd_signature *sig);

/* The name of a named type ("MPI_DOUBLE"), for reports; "type" for others. */
const char *pcd_type_name(MPI_Datatype base);

/* The name of a predefined op ("MPI_SUM"), "user_op" for others. */
const char *pcd_op_name(MPI_Op op);

/* ---- Per-communicator state ---------------------------------------------------------------------- *
 * A communicator gets state the first time the layer sees a call on it succeed in MPI (so an invalid handle is
 * judged by MPI's own error handling, never by the layer's look-up). The state lives until the communicator is
 * freed (an attribute delete callback, run inside MPI_Comm_free / MPI_Comm_disconnect on every rank) or until
 * MPI_Finalize; both release it collectively: every plan on it is destroyed. States are released at MPI_Finalize
 * in the order the layer first saw their communicators, which is the same on every rank (collectives on
 * communicators that share ranks are called in one order everywhere, or the program could deadlock in MPI). */
struct pcd_comm {
    MPI_Comm comm;
    int size, rank;
    bool intercomm;
    bool to_mpi;             /* every call on it goes to MPI: an intercommunicator, or (set up lazily) settings that
                                are invalid or differ across its ranks */
    uint64_t serial;         /* first-use order */
    void *blocking;          /* blocking.c's cache, or NULL */
    void *persistent;        /* persistent.c's requests on this communicator, or NULL */
    struct pcd_comm *next;   /* list in first-use order */
};

/* The state of comm, or NULL when the layer has none yet (a NULL handle included). Local, no MPI call. */
struct pcd_comm *pcd_comm_find(MPI_Comm comm);

/* Creates comm's state after a call on it succeeded in MPI (local: size, rank, intercommunicator test, and an
 * attribute whose deletion releases it). NULL when it cannot (no memory, MPI refused the attribute): the caller
 * then just leaves that communicator to MPI. */
struct pcd_comm *pcd_comm_create(MPI_Comm comm);

/* What the other files of the layer attach to the frame. Each registers from a constructor (so common.c names
 * none of them and a file can be added without touching it):
 * - release hooks run when a communicator's state is released (inside MPI_Comm_free or at MPI_Finalize, on every
 *   rank of it in the same order, so they may call collectives on it, e.g. plancoll_destroy_plan); each frees what
 *   it owns and sets its pointer in the state to NULL;
 * - finalize hooks run at MPI_Finalize on every rank of MPI_COMM_WORLD, before any state is released (so they may
 *   read the plans, and call collectives on MPI_COMM_WORLD), in registration order. */
typedef void (*pcd_release_hook)(struct pcd_comm *c);
typedef void (*pcd_finalize_hook)(void);
void pcd_on_release(pcd_release_hook hook);
void pcd_on_finalize(pcd_finalize_hook hook);

/* Plan-creation flags for the layer's plans (rigor from the settings; PLANCOLL_NONBLOCKING for started ones). */
static inline unsigned pcd_plan_flags(bool startable) {
    return pcd_settings.rigor_flags | (startable ? PLANCOLL_NONBLOCKING : 0u);
}

/* ---- The blocking calls by internal names (blocking.c: aliases of its MPI_Alltoall, ...) ------------ *
 * For fortran.c, whose Fortran entry points (where the MPI's Fortran bindings call PMPI directly) end up in the
 * layer's C definitions without going through the global MPI_* symbols. */
int pcd_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm);
int pcd_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm);
int pcd_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm);

/* ---- Progress of started plans in blocking calls (persistent.c, progress.c) ------------------------ *
 * MPI lets a started persistent collective progress while its process is blocked in any MPI call; the layer's
 * started plans move only inside plancoll calls. While some plan is active, progress.c runs the blocking
 * point-to-point calls as their nonblocking forms plus a loop that advances the plans (docs/dropin.md,
 * "Progress in blocking calls"). */
/* Whether one of the layer's plans is started and not yet seen complete in this process. O(1), no MPI call. */
bool pcd_plans_active(void);
/* Tests every active plan once (inside pcd_enter/pcd_leave); true when one completed. */
bool pcd_advance_plans(void);
/* The guard (guard.c): a thread that advances the started plans while the application's thread stays away from
 * plancoll (blocked in a call the layer does not convert, such as a blocking collective). pcd_guard_allowed: MPI
 * runs at MPI_THREAD_MULTIPLE for the layer and PLANCOLL_DROPIN_PROGRESS is not "calls" (common.c sets it at
 * start-up). pcd_guard_start brings it up if allowed and not running (at a start); pcd_guard_stop ends it (before
 * MPI_Finalize). Where the MPI has no persistent collectives there are no started plans and no guard. */
extern bool pcd_guard_allowed;
#if PC_HAVE_MPI_PERSISTENT_COLL || PC_HAVE_MPIX_PERSISTENT_COLL
void pcd_guard_start(void);
void pcd_guard_stop(void);
#else
static inline void pcd_guard_stop(void) {}
#endif

/* ---- Statistics for the report at exit (report.c) ------------------------------------------------- *
 * One record per (collective, communicator size, shape) in this process, kept from its first call to MPI_Finalize:
 * it outlives plans and communicators. At MPI_Finalize rank 0 of MPI_COMM_WORLD gathers every rank's records and
 * prints the report (DROPIN-CONTRACT.md / docs/dropin.md give the format).
 * - collective: "alltoall", "alltoallv", "allreduce", "alltoall_init", "alltoallv_init", "allreduce_init".
 * - shape: a string without spaces, the same on every rank for the same call where MPI makes ranks agree
 *   ("16xMPI_DOUBLE", "1000xMPI_DOUBLE:MPI_SUM"); for the alltoallv forms "total_bytes=<this rank's bytes sent +
 *   received>" (rank 0 merges those across ranks, see report.c).
 * pcd_stats_get returns a pointer that stays valid until MPI_Finalize, or NULL when no report is asked for
 * (PLANCOLL_DROPIN_REPORT unset or 0) or there is no memory: the other two functions accept NULL and then do
 * nothing, so callers need no test. Call pcd_stats_get when a shape is first seen (it looks up a table and may
 * allocate), never per call; pcd_stats_call is O(1) and allocates nothing. Local, no MPI call. */
struct pcd_stats;
struct pcd_stats *pcd_stats_get(const char *collective, int comm_size, const char *shape);
/* One call (or start) of the shape: planned = run as a plancoll plan, else by MPI; seconds its duration, or < 0
 * when not timed (time calls only when pcd_settings.report != PCD_REPORT_NONE). */
void pcd_stats_call(struct pcd_stats *s, bool planned, double seconds);
/* The shape's plan algorithm (plancoll_plan_spec); the last one given is reported ("mpi" when none). */
void pcd_stats_algorithm(struct pcd_stats *s, const char *spec);

/* ---- The MPI's point-to-point and packing calls with MPI_Count counts -------------------------------- *
 * Through the MPI-4 `_c` functions where the MPI has them (PC_HAVE_MPI_LARGE_COUNT, probed at configure time,
 * src/dropin/meson.build); else through the int ones, a count past INT_MAX failing with MPI_ERR_COUNT (never
 * truncated; the layer's own counts never pass INT_MAX there, since the application's calls are int ones). */
#if PC_HAVE_MPI_LARGE_COUNT
static inline int pcd_pack(const void *in, MPI_Count count, MPI_Datatype t, void *out, MPI_Count outsize,
                           MPI_Count *pos, MPI_Comm comm) {
    return PMPI_Pack_c(in, count, t, out, outsize, pos, comm);
}
static inline int pcd_unpack(const void *in, MPI_Count insize, MPI_Count *pos, void *out, MPI_Count count,
                             MPI_Datatype t, MPI_Comm comm) {
    return PMPI_Unpack_c(in, insize, pos, out, count, t, comm);
}
static inline int pcd_pack_size(MPI_Count count, MPI_Datatype t, MPI_Comm comm, MPI_Count *size) {
    return PMPI_Pack_size_c(count, t, comm, size);
}
static inline int pcd_irecv(void *buf, MPI_Count count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
                            MPI_Request *r) {
    return PMPI_Irecv_c(buf, count, t, source, tag, comm, r);
}
static inline int pcd_isend(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                            MPI_Request *r) {
    return PMPI_Isend_c(buf, count, t, dest, tag, comm, r);
}
#else
static inline bool pcd_fits(MPI_Count n) { return n >= 0 && n <= INT_MAX; }
static inline int pcd_pack(const void *in, MPI_Count count, MPI_Datatype t, void *out, MPI_Count outsize,
                           MPI_Count *pos, MPI_Comm comm) {
    if (!pcd_fits(count) || !pcd_fits(outsize) || !pcd_fits(*pos)) return MPI_ERR_COUNT;
    int p = (int)*pos, rc = PMPI_Pack(in, (int)count, t, out, (int)outsize, &p, comm);
    *pos = p;
    return rc;
}
static inline int pcd_unpack(const void *in, MPI_Count insize, MPI_Count *pos, void *out, MPI_Count count,
                             MPI_Datatype t, MPI_Comm comm) {
    if (!pcd_fits(count) || !pcd_fits(insize) || !pcd_fits(*pos)) return MPI_ERR_COUNT;
    int p = (int)*pos, rc = PMPI_Unpack(in, (int)insize, &p, out, (int)count, t, comm);
    *pos = p;
    return rc;
}
/* MPI_Pack_size's int result cannot say more than INT_MAX: the data's size is checked first (with room for a
 * packing header). */
static inline int pcd_pack_size(MPI_Count count, MPI_Datatype t, MPI_Comm comm, MPI_Count *size) {
    MPI_Count elem = 0;
    if (!pcd_fits(count) || PMPI_Type_size_x(t, &elem) != MPI_SUCCESS || elem == MPI_UNDEFINED ||
        (elem > 0 && count > (INT_MAX - 4096) / elem))
        return MPI_ERR_COUNT;
    int n = 0, rc = PMPI_Pack_size((int)count, t, comm, &n);
    *size = n;
    return rc;
}
static inline int pcd_irecv(void *buf, MPI_Count count, MPI_Datatype t, int source, int tag, MPI_Comm comm,
                            MPI_Request *r) {
    return pcd_fits(count) ? PMPI_Irecv(buf, (int)count, t, source, tag, comm, r) : MPI_ERR_COUNT;
}
static inline int pcd_isend(const void *buf, MPI_Count count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
                            MPI_Request *r) {
    return pcd_fits(count) ? PMPI_Isend(buf, (int)count, t, dest, tag, comm, r) : MPI_ERR_COUNT;
}
#endif

#endif
