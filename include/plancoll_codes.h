/*
 * plancoll_codes.h: the part of plancoll's API that needs no MPI: version, error codes, planner flags, the plan
 * handle type. plancoll.h includes it; the library's MPI-free core (the planner, the cost model, the wisdom text)
 * is compiled against this header alone, so a dependency of that core on MPI is a compile error.
 */
#ifndef PLANCOLL_CODES_H
#define PLANCOLL_CODES_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(PLANCOLL_STATIC)
#define PLANCOLL_API __attribute__((visibility("default")))
#else
#define PLANCOLL_API
#endif

#define PLANCOLL_VERSION_MAJOR 0
#define PLANCOLL_VERSION_MINOR 1
#define PLANCOLL_VERSION_PATCH 0
#define PLANCOLL_VERSION_STRING "0.1.0"
/* Monotone integer for compile-time checks: major * 10000 + minor * 100 + patch. */
#define PLANCOLL_VERSION (PLANCOLL_VERSION_MAJOR * 10000 + PLANCOLL_VERSION_MINOR * 100 + PLANCOLL_VERSION_PATCH)

/* The library's version as built ("0.1.0"); major/minor/patch may be NULL. */
PLANCOLL_API const char *plancoll_version(int *major, int *minor, int *patch);

/* ---- Error codes ------------------------------------------------------------------------------- */
enum {
    PLANCOLL_SUCCESS = 0,
    PLANCOLL_ERR_NULL_PLAN,          /* the plan handle (or the pointer to receive it) is NULL */
    PLANCOLL_ERR_INVALID_PLAN,       /* the handle is not a live plan (destroyed, or never created) */
    PLANCOLL_ERR_NULL_BUFFER,        /* a NULL buffer or count array where data is needed */
    PLANCOLL_ERR_COUNT,              /* a negative count */
    PLANCOLL_ERR_DISPL,              /* a negative displacement */
    PLANCOLL_ERR_COMM,               /* MPI_COMM_NULL or an invalid communicator (a freed one: see Invalid handles) */
    PLANCOLL_ERR_INTERCOMM,          /* an intercommunicator (only intracommunicators are supported) */
    PLANCOLL_ERR_DATATYPE,           /* MPI_DATATYPE_NULL, an uncommitted type, or a type the operation does not allow */
    PLANCOLL_ERR_OP,                 /* MPI_OP_NULL, or an op that MPI does not allow on this datatype */
    PLANCOLL_ERR_TYPE_MISMATCH,      /* send and receive type signatures differ in size */
    PLANCOLL_ERR_MISMATCH,           /* the ranks passed arguments that do not agree */
    PLANCOLL_ERR_REMOTE,             /* another rank's arguments were invalid: see that rank's detail */
    PLANCOLL_ERR_IN_PLACE,           /* MPI_IN_PLACE used where it is not allowed, or not as planned */
    PLANCOLL_ERR_FLAGS,              /* unknown planner flag bits */
    PLANCOLL_ERR_ALGORITHM,          /* PLANCOLL_ALGORITHM names an algorithm that does not exist */
    PLANCOLL_ERR_INAPPLICABLE,       /* a forced algorithm cannot run this problem */
    PLANCOLL_ERR_NO_WISDOM,          /* PLANCOLL_WISDOM_ONLY and wisdom holds no plan for this problem */
    PLANCOLL_ERR_NOMEM,              /* out of memory */
    PLANCOLL_ERR_MPI,                /* an MPI call failed (detail names it) */
    PLANCOLL_ERR_ENV,                /* an environment variable has an invalid value */
    PLANCOLL_ERR_OVERFLOW,           /* a size or byte offset reaches 2^60 bytes (see Sizes), or another limit the detail names */
    PLANCOLL_ERR_NOT_INITIALIZED,    /* MPI is not initialised (or already finalised) */
    PLANCOLL_ERR_BUFFER,             /* execute_buffers: buffers inconsistent with the plan (e.g. in-place-ness) */
    PLANCOLL_ERR_ARGUMENT,           /* another invalid argument (detail says which) */
    PLANCOLL_ERR_WISDOM_FORMAT,      /* wisdom text is malformed (detail gives the line and what is wrong) */
    PLANCOLL_ERR_WISDOM_STALE,       /* wisdom from another machine, MPI library, plancoll build or format version */
    PLANCOLL_ERR_IO,                 /* a wisdom file could not be read or written (detail names the file and why) */
    PLANCOLL_ERR_ACTIVE,             /* the plan is active (started, not yet completed by test or wait): it cannot be
                                        started, executed or destroyed; it is left intact and can still be waited for */
    PLANCOLL_ERR_NOT_STARTABLE,      /* plancoll_start on a plan whose algorithm runs only blocking (none does today;
                                        detail names it; PLANCOLL_NONBLOCKING plans never get one) */
    PLANCOLL_ERR_THREAD_LEVEL,       /* PLANCOLL_PROGRESS_THREAD=1 while MPI was initialised below MPI_THREAD_MULTIPLE */
    PLANCOLL_ERR_COUNT_OF_CODES      /* not an error: the number of codes */
};

/* The fixed message of an error code; never NULL (unknown codes get a message saying so). */
PLANCOLL_API const char *plancoll_strerror(int error);

/* The detailed message of the last failed call on this process ("" when none). Valid until the next call. */
PLANCOLL_API const char *plancoll_error_detail(void);

/* ---- Planner flags (FFTW semantics) -------------------------------------------------------------
 * PLANCOLL_ESTIMATE (0, the default): no timing; the planner picks by rule / model.
 * PLANCOLL_MEASURE: time the promising candidates on this machine and keep the fastest.
 * PLANCOLL_PATIENT: time more candidates. PLANCOLL_EXHAUSTIVE: time every applicable candidate.
 * PLANCOLL_WISDOM_ONLY: use only what wisdom already knows for this problem; fail with
 *   PLANCOLL_ERR_NO_WISDOM otherwise.
 * Timing runs on temporary buffers: the user's buffers are never touched while planning.
 * Decisions of MEASURE and above are remembered (wisdom) for the rest of the process, so a second plan of the
 * same problem costs no timing. Exactly one rigor level may be given (or none, meaning ESTIMATE). */
#define PLANCOLL_ESTIMATE    0u
#define PLANCOLL_MEASURE     (1u << 0)
#define PLANCOLL_PATIENT     (1u << 1)
#define PLANCOLL_EXHAUSTIVE  (1u << 2)
#define PLANCOLL_WISDOM_ONLY (1u << 3)
/* PLANCOLL_NONBLOCKING: the plan will be started (plancoll_start), not only executed. The planner then chooses
 * only among algorithms that run as a schedule of steps which plancoll_test and plancoll_wait advance without
 * blocking. Every algorithm does; what the flag leaves out is the MPI_Put transport of the node-aware alltoalls,
 * pap and the aggregated alltoallv, whose completion waits inside MPI_Win_flush (MPI has no nonblocking flush).
 * An algorithm that can only block would be left out too (its plancoll_start returns PLANCOLL_ERR_NOT_STARTABLE).
 * Combines with any rigor level. */
#define PLANCOLL_NONBLOCKING (1u << 4)
/* PLANCOLL_OVERLAP: the plan will be started and mostly overlapped with the caller's own computation (start,
 * compute with a plancoll_test now and then, wait). Implies PLANCOLL_NONBLOCKING. The planner then prefers the
 * candidate that keeps the caller's CPU free longest (fewest copies, reductions and steps the caller must do
 * itself) over the one with the shortest critical path: ESTIMATE ranks candidates by their expected completion
 * when the caller has compute to hide behind (docs/design.md, "Planning for overlap"), MEASURE times them
 * overlapped (start, a fixed compute loop with tests, wait). A decision made for overlap is wisdom of its own: it
 * never answers a plan without the flag, nor the other way round. plancoll_fprint_plan shows the busy and
 * critical-path estimates. */
#define PLANCOLL_OVERLAP (1u << 5)

/* Bounds the time MEASURE, PATIENT and EXHAUSTIVE spend timing candidates in one plan call (FFTW's
 * fftw_set_timelimit): candidates are timed in the model's order of preference, and once the limit has passed
 * the planner stops timing and keeps the fastest measured so far (at least one is always timed). Applies to
 * every later plan of this process; PLANCOLL_NO_TIMELIMIT (any negative value, the default) removes it.
 * Rank 0's clock decides, so every rank stops at the same candidate. */
#define PLANCOLL_NO_TIMELIMIT (-1.0)
PLANCOLL_API void plancoll_set_timelimit(double seconds);


/* A plan: an opaque handle (plancoll.h creates them). */
typedef struct plancoll_plan_s *plancoll_plan;

#ifdef __cplusplus
}
#endif
#endif /* PLANCOLL_CODES_H */
