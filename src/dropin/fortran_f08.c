/* The drop-in layer's `use mpi_f08` entry points for the calls without buffers, where the MPI's mpi_f08 bindings
 * call PMPI_* directly and so never reach the layer's C definitions.
 *
 * MPICH 4.0.2 (libmpichfort.so.12, objdump -d): the mpi_f08 calls with buffers (mpi_alltoall_f08ts_,
 * mpi_alltoall_init_f08ts_, mpi_recv_f08ts_, ...) go through C wrappers that call the C MPI_Alltoall,
 * MPI_Alltoall_init, MPI_Recv..., which the layer takes; but mpi_init_f08_ calls PMPI_Init, mpi_finalize_f08_
 * PMPI_Finalize, mpi_start_f08_ PMPI_Start, mpi_wait_f08_ PMPI_Wait, and so on for every call without a buffer.
 * Without this file a `use mpi_f08` program's persistent collectives had to stay MPI's own (their starts and waits
 * would never reach the layer), its MPI_Comm_free released nothing, and a blocking MPI_Probe did not advance a
 * started plan. Here the layer defines those Fortran symbols itself:
 *   - MPI_Init / MPI_Init_thread / MPI_Finalize call MPI's own Fortran entry point (the next definition of the
 *     same symbol, dlsym(RTLD_NEXT): it may set up Fortran constants besides calling PMPI_Init) and do the layer's
 *     set-up after it, or its end before it, as the C definitions do (common.c);
 *   - MPI_Comm_free / MPI_Comm_disconnect release the communicator's plans, then call MPI's entry point;
 *   - the request calls (MPI_Start, MPI_Startall, MPI_Wait*, MPI_Test*, MPI_Request_free,
 *     MPI_Request_get_status, MPI_Cancel) and MPI_Probe / MPI_Mprobe convert their arguments and call the layer's
 *     C definitions (persistent.c, progress.c), which pass every request that is not the layer's to PMPI.
 * Which symbols are defined comes from src/dropin/probe-fortran.sh at configure time ("f08 SYMBOL": a library
 * defines SYMBOL and its code calls PMPI_<Name> and not MPI_<Name>), as the PCD_FORTRAN_F08(X) X-macro list;
 * src/dropin/meson.build compiles this file only where the list is not empty and the MPI declares the MPI-4 type
 * MPI_F08_status with the layout of MPI_Status (then a status array converts by pointer).
 *
 * The calling convention of gfortran's mpi_f08 procedures (external subroutines, not bind(C)): every argument by
 * reference; a type(MPI_Request) / type(MPI_Comm) is its one integer MPI_VAL, so a pointer to an MPI_Fint (and an
 * array of them an MPI_Fint array); type(MPI_Status) is MPI_F08_status; LOGICAL is a default integer, nonzero for
 * .true.; the optional ierror is NULL when the program leaves it out; indices are 1-based. The statuses to ignore
 * are MPI_F08_STATUS_IGNORE and MPI_F08_STATUSES_IGNORE (mpi.h's pointers to the mpi_f08 module's objects). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "dropin.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

_Static_assert(sizeof(MPI_Fint) == sizeof(int), "meson.build compiles fortran_f08.c only where MPI_Fint is an int");
_Static_assert(sizeof(MPI_F08_status) == sizeof(MPI_Status) &&
                   offsetof(MPI_F08_status, MPI_SOURCE) == offsetof(MPI_Status, MPI_SOURCE) &&
                   offsetof(MPI_F08_status, MPI_TAG) == offsetof(MPI_Status, MPI_TAG) &&
                   offsetof(MPI_F08_status, MPI_ERROR) == offsetof(MPI_Status, MPI_ERROR),
               "meson.build compiles fortran_f08.c only where MPI_F08_status is laid out as MPI_Status");

static void set_ierror(MPI_Fint *ierror, int rc) {
    if (ierror != NULL) *ierror = (MPI_Fint)rc;
}

static MPI_Status *c_status(MPI_F08_status *s) {
    return s == MPI_F08_STATUS_IGNORE ? MPI_STATUS_IGNORE : (MPI_Status *)(void *)s;
}

static MPI_Status *c_statuses(MPI_F08_status *s) {
    return s == MPI_F08_STATUSES_IGNORE ? MPI_STATUSES_IGNORE : (MPI_Status *)(void *)s;
}

/* ---- The set-up, the end, freeing a communicator: MPI's own entry point, and the layer's part ------------- */

/* MPI's definition of a Fortran symbol this library also defines: the next one in the lookup order. NULL (and a
 * message) when there is none, which cannot happen in a program linked with the MPI's Fortran library. */
static void *next_definition(const char *symbol) {
    void *f = dlsym(RTLD_NEXT, symbol);
    if (f == NULL) fprintf(stderr, "plancoll-dropin: %s: no definition after the layer's (%s)\n", symbol, dlerror());
    return f;
}

#define PCD_NEXT(type, symbol)                                                                                         \
    static type next_fn;                                                                                               \
    if (next_fn == NULL) *(void **)&next_fn = next_definition(symbol)

__attribute__((unused)) static void pcd_f08_init(MPI_Fint *ierror) {
    MPI_Fint rc = MPI_ERR_OTHER;
    if (pcd_raise_level_for(MPI_THREAD_SINGLE)) { /* MPI's init_thread at MPI_THREAD_MULTIPLE, for the guard */
        typedef void (*fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
        PCD_NEXT(fn, "mpi_init_thread_f08_");
        MPI_Fint multiple = MPI_THREAD_MULTIPLE, actual = MPI_THREAD_SINGLE;
        if (next_fn != NULL) next_fn(&multiple, &actual, &rc);
        if (rc == MPI_SUCCESS) pcd_start_after_init(pcd_program_level(MPI_THREAD_SINGLE, actual), actual);
    } else {
        typedef void (*fn)(MPI_Fint *);
        PCD_NEXT(fn, "mpi_init_f08_");
        if (next_fn != NULL) next_fn(&rc);
        int actual = MPI_THREAD_SINGLE;
        if (rc == MPI_SUCCESS && PMPI_Query_thread(&actual) == MPI_SUCCESS) pcd_start_after_init(actual, actual);
    }
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierror) {
    typedef void (*fn)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
    PCD_NEXT(fn, "mpi_init_thread_f08_");
    MPI_Fint rc = MPI_ERR_OTHER;
    bool raise = pcd_raise_level_for(*required);
    MPI_Fint asked = raise ? MPI_THREAD_MULTIPLE : *required, actual = MPI_THREAD_SINGLE;
    if (next_fn != NULL) next_fn(&asked, &actual, &rc);
    if (rc == MPI_SUCCESS) {
        *provided = raise ? pcd_program_level(*required, actual) : actual;
        pcd_start_after_init(*provided, actual);
    }
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_finalize(MPI_Fint *ierror) {
    typedef void (*fn)(MPI_Fint *);
    PCD_NEXT(fn, "mpi_finalize_f08_");
    pcd_finish_before_finalize();
    MPI_Fint rc = MPI_ERR_OTHER;
    if (next_fn != NULL) next_fn(&rc);
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_comm_free(MPI_Fint *comm, MPI_Fint *ierror) {
    typedef void (*fn)(MPI_Fint *, MPI_Fint *);
    PCD_NEXT(fn, "mpi_comm_free_f08_");
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    pcd_release_before_free(&c);
    MPI_Fint rc = MPI_ERR_OTHER;
    if (next_fn != NULL) next_fn(comm, &rc);
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_comm_disconnect(MPI_Fint *comm, MPI_Fint *ierror) {
    typedef void (*fn)(MPI_Fint *, MPI_Fint *);
    PCD_NEXT(fn, "mpi_comm_disconnect_f08_");
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    pcd_release_before_free(&c);
    MPI_Fint rc = MPI_ERR_OTHER;
    if (next_fn != NULL) next_fn(comm, &rc);
    set_ierror(ierror, rc);
}

/* ---- Requests: converted, and into the layer's C definitions ---------------------------------------------- */

/* An array of C requests for a Fortran one: on the stack for the usual short arrays, else on the heap. */
enum { STACK_REQUESTS = 64 };
struct c_requests {
    MPI_Request stack[STACK_REQUESTS];
    MPI_Request *r;
};

static int requests_in(struct c_requests *c, int n, const MPI_Fint *f) {
    c->r = n <= STACK_REQUESTS ? c->stack : malloc(sizeof(MPI_Request) * (size_t)n);
    if (c->r == NULL) return MPI_ERR_NO_MEM;
    for (int i = 0; i < n; i++) c->r[i] = PMPI_Request_f2c(f[i]);
    return MPI_SUCCESS;
}

/* Every request back (completed ones are MPI_REQUEST_NULL or inactive now), and the heap array freed. */
static void requests_out(struct c_requests *c, int n, MPI_Fint *f) {
    for (int i = 0; i < n; i++) f[i] = PMPI_Request_c2f(c->r[i]);
    if (c->r != c->stack) free(c->r);
}

static MPI_Fint f_index(int index) { return index == MPI_UNDEFINED ? MPI_UNDEFINED : index + 1; }

__attribute__((unused)) static void pcd_f08_start(MPI_Fint *request, MPI_Fint *ierror) {
    MPI_Request r = PMPI_Request_f2c(*request);
    int rc = MPI_Start(&r);
    *request = PMPI_Request_c2f(r);
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_startall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *ierror) {
    struct c_requests c;
    int rc = requests_in(&c, *count, requests);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Startall(*count, c.r);
        requests_out(&c, *count, requests);
    }
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_wait(MPI_Fint *request, MPI_F08_status *status, MPI_Fint *ierror) {
    MPI_Request r = PMPI_Request_f2c(*request);
    int rc = MPI_Wait(&r, c_status(status));
    *request = PMPI_Request_c2f(r);
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_test(MPI_Fint *request, MPI_Fint *flag, MPI_F08_status *status,
                                                 MPI_Fint *ierror) {
    MPI_Request r = PMPI_Request_f2c(*request);
    int done = 0;
    int rc = MPI_Test(&r, &done, c_status(status));
    *request = PMPI_Request_c2f(r);
    *flag = done != 0;
    set_ierror(ierror, rc);
}

/* The array completions, each pair (wait, test) one function: convert the requests in, call the layer's C
 * definition, convert them back; a NULL flag means the wait form. */
static void f08_all(bool test, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag, MPI_F08_status *statuses,
                    MPI_Fint *ierror) {
    struct c_requests c;
    int done = 0;
    int rc = requests_in(&c, *count, requests);
    if (rc == MPI_SUCCESS) {
        rc = test ? MPI_Testall(*count, c.r, &done, c_statuses(statuses))
                  : MPI_Waitall(*count, c.r, c_statuses(statuses));
        requests_out(&c, *count, requests);
    }
    if (test) *flag = done != 0;
    set_ierror(ierror, rc);
}

static void f08_any(bool test, MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index, MPI_Fint *flag,
                    MPI_F08_status *status, MPI_Fint *ierror) {
    struct c_requests c;
    int i = MPI_UNDEFINED, done = 0;
    int rc = requests_in(&c, *count, requests);
    if (rc == MPI_SUCCESS) {
        rc = test ? MPI_Testany(*count, c.r, &i, &done, c_status(status))
                  : MPI_Waitany(*count, c.r, &i, c_status(status));
        requests_out(&c, *count, requests);
    }
    *index = f_index(i);
    if (test) *flag = done != 0;
    set_ierror(ierror, rc);
}

/* Waitsome and Testsome: the C indices are written into the Fortran array (both are C ints here), then made
 * 1-based. */
static void f08_some(bool test, MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount, MPI_Fint *indices,
                     MPI_F08_status *statuses, MPI_Fint *ierror) {
    struct c_requests c;
    int out = MPI_UNDEFINED;
    int rc = requests_in(&c, *incount, requests);
    if (rc == MPI_SUCCESS) {
        rc = (test ? MPI_Testsome : MPI_Waitsome)(*incount, c.r, &out, (int *)indices, c_statuses(statuses));
        requests_out(&c, *incount, requests);
    }
    *outcount = out;
    for (int k = 0; out != MPI_UNDEFINED && k < out; k++) indices[k] += 1;
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_waitall(MPI_Fint *count, MPI_Fint *requests, MPI_F08_status *statuses,
                                                    MPI_Fint *ierror) {
    f08_all(false, count, requests, NULL, statuses, ierror);
}

__attribute__((unused)) static void pcd_f08_testall(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *flag,
                                                    MPI_F08_status *statuses, MPI_Fint *ierror) {
    f08_all(true, count, requests, flag, statuses, ierror);
}

__attribute__((unused)) static void pcd_f08_waitany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                                                    MPI_F08_status *status, MPI_Fint *ierror) {
    f08_any(false, count, requests, index, NULL, status, ierror);
}

__attribute__((unused)) static void pcd_f08_testany(MPI_Fint *count, MPI_Fint *requests, MPI_Fint *index,
                                                    MPI_Fint *flag, MPI_F08_status *status, MPI_Fint *ierror) {
    f08_any(true, count, requests, index, flag, status, ierror);
}

__attribute__((unused)) static void pcd_f08_waitsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                                                     MPI_Fint *indices, MPI_F08_status *statuses, MPI_Fint *ierror) {
    f08_some(false, incount, requests, outcount, indices, statuses, ierror);
}

__attribute__((unused)) static void pcd_f08_testsome(MPI_Fint *incount, MPI_Fint *requests, MPI_Fint *outcount,
                                                     MPI_Fint *indices, MPI_F08_status *statuses, MPI_Fint *ierror) {
    f08_some(true, incount, requests, outcount, indices, statuses, ierror);
}

__attribute__((unused)) static void pcd_f08_request_free(MPI_Fint *request, MPI_Fint *ierror) {
    MPI_Request r = PMPI_Request_f2c(*request);
    int rc = MPI_Request_free(&r);
    *request = PMPI_Request_c2f(r);
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_request_get_status(MPI_Fint *request, MPI_Fint *flag,
                                                               MPI_F08_status *status, MPI_Fint *ierror) {
    int done = 0;
    int rc = MPI_Request_get_status(PMPI_Request_f2c(*request), &done, c_status(status));
    *flag = done != 0;
    set_ierror(ierror, rc);
}

__attribute__((unused)) static void pcd_f08_cancel(MPI_Fint *request, MPI_Fint *ierror) {
    MPI_Request r = PMPI_Request_f2c(*request);
    set_ierror(ierror, MPI_Cancel(&r));
}

/* Blocking calls that must advance a started plan (progress.c): mpi_f08's MPI_Recv and the other calls with
 * buffers reach the C definitions already; these two have none. */
__attribute__((unused)) static void pcd_f08_probe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm,
                                                  MPI_F08_status *status, MPI_Fint *ierror) {
    set_ierror(ierror, MPI_Probe(*source, *tag, PMPI_Comm_f2c(*comm), c_status(status)));
}

__attribute__((unused)) static void pcd_f08_mprobe(MPI_Fint *source, MPI_Fint *tag, MPI_Fint *comm, MPI_Fint *message,
                                                   MPI_F08_status *status, MPI_Fint *ierror) {
    MPI_Message m = MPI_MESSAGE_NULL;
    int rc = MPI_Mprobe(*source, *tag, PMPI_Comm_f2c(*comm), &m, c_status(status));
    *message = PMPI_Message_c2f(m);
    set_ierror(ierror, rc);
}

/* The level the program was told where the layer raised MPI's for its guard (common.c), as the C call answers. */
__attribute__((unused)) static void pcd_f08_query_thread(MPI_Fint *provided, MPI_Fint *ierror) {
    int level = MPI_THREAD_SINGLE;
    int rc = MPI_Query_thread(&level);
    if (rc == MPI_SUCCESS) *provided = level;
    set_ierror(ierror, rc);
}

/* Each symbol the probe found, an alias of its function (the name after mpi_ and before _f08_). */
#define PCD_DEFINE_F08(name, sym) extern __typeof__(pcd_f08_##name) sym __attribute__((alias("pcd_f08_" #name), visibility("default")));
PCD_FORTRAN_F08(PCD_DEFINE_F08)
