/* The MPI-4 persistent collectives as started plans (issue 18): MPI_Alltoall_init, MPI_Alltoallv_init and
 * MPI_Allreduce_init make a plan (PLANCOLL_NONBLOCKING); MPI_Start and MPI_Startall start it, the MPI_Wait and
 * MPI_Test families and MPI_Request_get_status complete it, MPI_Request_free frees it. docs/dropin.md,
 * "Persistent collectives", has the design; in short:
 *
 * - The init is always passed to PMPI_*_init first, so MPI validates the arguments with its own error handling;
 *   when the layer does not plan the call, the application gets MPI's request, untouched. When it plans, MPI's
 *   request is freed (never started) and the application gets an inactive persistent send to MPI_PROC_NULL on
 *   MPI_COMM_SELF instead: a real, unique request that MPI accepts anywhere as an inactive one, never started,
 *   and that holds no reference to the application's communicator (MPICH delays a communicator's attribute
 *   deletion, so the layer's collective release of its plans, until the last request on it is gone: a hidden
 *   request on it would move that release into whichever local call frees the request). A table maps the handle
 *   to the plan.
 * - Every decision that leads to a collective call is agreed: each planning init runs one allreduce over the
 *   communicator (every rank wants to plan; which freed plans every rank has freed), so plan creation and
 *   destruction happen on every rank or on none.
 * - MPI_Request_free is local but plancoll_destroy_plan is collective: a freed plan is destroyed at the next
 *   point every rank of its communicator reaches in the same order (the next init on it, MPI_Comm_free,
 *   MPI_Finalize).
 * - While none of the layer's requests exists in the process, every intercepted call is one test of a counter
 *   and the PMPI call.
 * - The MPI decides the names (probed at configure time, src/dropin/meson.build): the MPI-4 MPI_*_init through
 *   PMPI_*_init where the MPI has them; else the MPIX_*_init of mpi-ext.h through PMPIX_*_init (Open MPI 4.1's
 *   pcollreq extension: what applications on it call); with neither, this file and progress.c are not built. */
#include "dropin.h"

#if PC_HAVE_MPI_PERSISTENT_COLL
#define PCD_INIT(NAME) MPI_##NAME##_init
#define PCD_PMPI_INIT(NAME) PMPI_##NAME##_init
#elif PC_HAVE_MPIX_PERSISTENT_COLL
#include <mpi-ext.h>
#define PCD_INIT(NAME) MPIX_##NAME##_init
#define PCD_PMPI_INIT(NAME) PMPIX_##NAME##_init
#endif

#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Requests ------------------------------------------------------------------------------------ */

enum preq_state {
    PREQ_INACTIVE, /* not started, or its completion was reported to the application */
    PREQ_ACTIVE,   /* started; plancoll has not reported it complete */
    PREQ_DONE      /* plancoll reported it complete; the application has not yet been told (still active for MPI) */
};

struct pers_comm;

struct preq {
    MPI_Request handle;       /* MPI's inactive persistent collective request: what the application holds */
    plancoll_plan plan;
    struct pers_comm *owner;  /* NULL once detached (below) */
    int slot;                 /* index in owner->slots, the same on every rank */
    enum preq_state state;
    bool freed;               /* the application freed the handle: the plan waits for its agreed destruction */
    int outcome;              /* plancoll's code for the last execution */
    double started;           /* pcd_now() at the start, when a report is asked for */
    struct pcd_stats *stats;
    const char *collective;   /* "alltoall_init", ... */
    struct preq *prev_active, *next_active;
    struct preq *next_detached;
};

/* The layer's persistent requests on one communicator, by slot. Slots are taken (lowest free) at agreed plan
 * creations and given back at agreed destructions, so a slot names the same request on every rank. */
struct pers_comm {
    struct pcd_comm *comm;
    struct preq **slots;
    int nslots;               /* slots in use or freed, the same on every rank (agreed) */
    int capacity;             /* slots allocated (local: reserved before an agreement) */
    int live;                 /* plans not yet destroyed */
    uint64_t *agreement;      /* 1 + words(nslots) words for the init's allreduce, kept so an init never fails to
                                 take part in it for want of memory */
};

/* Plans a communicator may hold at once for persistent requests; the next init goes to MPI (agreed: every rank
 * holds the same plans). A bound on what one communicator keeps (shared segments, duplicates). */
enum { MAX_PLANS_PER_COMM = 1024 };

/* The pass-through gate: handles in the table plus freed plans still running. While it is 0 nothing of the layer
 * can be in a request array and nothing of it needs progress, so every intercepted call goes straight to PMPI. */
static size_t gate;
static struct preq *active_head;   /* started and not yet seen complete, freed ones included */
static size_t n_active;

/* Handle -> request: open addressing with linear probing and backward-shift deletion (no tombstones, so a long
 * run creating and freeing requests keeps probes short). */
static struct preq **table;
static size_t table_size, table_used;

static uint64_t request_hash(MPI_Request r) { return PCD_HANDLE_HASH(r); }

static bool same_request(MPI_Request a, MPI_Request b) { return memcmp(&a, &b, sizeof a) == 0; }

static struct preq *lookup(MPI_Request r) {
    if (table_used == 0 || r == MPI_REQUEST_NULL) return NULL;
    size_t mask = table_size - 1;
    for (size_t i = request_hash(r) & mask;; i = (i + 1) & mask) {
        struct preq *q = table[i];
        if (q == NULL) return NULL;
        if (same_request(q->handle, r)) return q;
    }
}

/* reserve() has made room. */
static void table_put(struct preq *q) {
    size_t mask = table_size - 1, i = request_hash(q->handle) & mask;
    while (table[i] != NULL) i = (i + 1) & mask;
    table[i] = q;
    table_used++;
    gate++;
}

static void table_del(struct preq *q) {
    size_t mask = table_size - 1, i = request_hash(q->handle) & mask;
    while (table[i] != q) {
        if (table[i] == NULL) return;
        i = (i + 1) & mask;
    }
    /* backward shift: move later members of the probe run into the hole when their home allows it */
    for (size_t j = (i + 1) & mask; table[j] != NULL; j = (j + 1) & mask) {
        size_t home = request_hash(table[j]->handle) & mask;
        bool movable = i <= j ? (home <= i || home > j) : (home <= i && home > j);
        if (movable) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i] = NULL;
    table_used--;
    gate--;
}

static bool timing(void) { return pcd_settings.report != PCD_REPORT_NONE; }

static void active_add(struct preq *q) {
    q->prev_active = NULL;
    q->next_active = active_head;
    if (active_head) active_head->prev_active = q;
    active_head = q;
    __atomic_store_n(&n_active, n_active + 1, __ATOMIC_RELAXED); /* the guard reads it (guard.c) */
}

static void active_remove(struct preq *q) {
    if (q->prev_active) q->prev_active->next_active = q->next_active;
    else active_head = q->next_active;
    if (q->next_active) q->next_active->prev_active = q->prev_active;
    q->prev_active = q->next_active = NULL;
    __atomic_store_n(&n_active, n_active - 1, __ATOMIC_RELAXED);
}

/* plancoll reported q's execution complete (outcome rc). A freed request becomes inactive at once (nobody will
 * report it) and leaves the gate; another waits, DONE, for a completion call to report it. */
static void finish(struct preq *q, int rc) {
    q->outcome = rc;
    active_remove(q);
    if (q->stats) pcd_stats_call(q->stats, true, timing() ? pcd_now() - q->started : -1.0);
    if (q->freed) {
        q->state = PREQ_INACTIVE;
        gate--;
    } else {
        q->state = PREQ_DONE;
    }
}

/* Tests q once (which advances every active plan of the process). True when it completed now. */
static bool advance(struct preq *q) {
    if (q->state != PREQ_ACTIVE) return false;
    int done = 0;
    pcd_enter();
    int rc = plancoll_test(q->plan, &done);
    pcd_leave();
    if (!done && rc == PLANCOLL_SUCCESS) return false;
    finish(q, rc); /* a failed test ends the execution too: a wait must not spin on it for ever */
    return true;
}

/* Tests every active plan once; true when one completed. */
static bool advance_all(void) {
    bool moved = false;
    for (struct preq *q = active_head, *next; q != NULL; q = next) {
        next = q->next_active;
        moved = advance(q) || moved;
    }
    return moved;
}

bool pcd_plans_active(void) { return __atomic_load_n(&n_active, __ATOMIC_RELAXED) != 0; }

bool pcd_advance_plans(void) { return advance_all(); }

/* MPI's empty status (MPI-4.0 3.7.3): source MPI_ANY_SOURCE, tag MPI_ANY_TAG, count 0, not cancelled, and error
 * MPI_SUCCESS where MPI sets the field (the multiple-completion calls; single ones leave MPI_ERROR alone). */
static void empty_status(MPI_Status *st, bool set_error) {
    if (st == MPI_STATUS_IGNORE) return;
    st->MPI_SOURCE = MPI_ANY_SOURCE;
    st->MPI_TAG = MPI_ANY_TAG;
    if (set_error) st->MPI_ERROR = MPI_SUCCESS;
    PMPI_Status_set_elements_x(st, MPI_BYTE, 0);
    PMPI_Status_set_cancelled(st, 0);
}

static MPI_Comm error_comm(const struct preq *q) { return q->owner ? q->owner->comm->comm : MPI_COMM_WORLD; }

/* An erroneous use of one of the layer's requests, or a failed execution: the message, then the communicator's
 * error handler with the class MPI would raise (MPI_ERR_REQUEST, MPI_ERR_OTHER); its code is returned. */
static int raise_error(const struct preq *q, int mpi_class, const char *what) {
    fprintf(stderr, "plancoll-dropin: %s (%s request)\n", what, q->collective);
    PMPI_Comm_call_errhandler(error_comm(q), mpi_class);
    return mpi_class;
}

/* Reports q's completion to the application (a completion call returns it): q becomes inactive. INACTIVE ones
 * report an empty status too, as MPI does for inactive persistent requests. Returns MPI_SUCCESS or the class of
 * a failed execution (after its message and the error handler). */
static int report(struct preq *q, MPI_Status *st, bool multiple) {
    int rc = q->state == PREQ_DONE ? q->outcome : PLANCOLL_SUCCESS;
    q->state = PREQ_INACTIVE;
    empty_status(st, multiple);
    int err = MPI_SUCCESS;
    if (rc != PLANCOLL_SUCCESS) {
        char what[512];
        snprintf(what, sizeof what, "a planned execution failed in plancoll: %s: %s", plancoll_strerror(rc),
                 plancoll_error_detail());
        err = raise_error(q, MPI_ERR_OTHER, what);
        if (multiple && st != MPI_STATUS_IGNORE) st->MPI_ERROR = err;
    }
    return err;
}

/* Starts one of the layer's requests. Erroneous starts (an active request) raise MPI_ERR_REQUEST, as MPI does. */
static int start_ours(struct preq *q) {
    if (q->state != PREQ_INACTIVE)
        return raise_error(q, MPI_ERR_REQUEST, "MPI_Start of a persistent request that is active");
    if (timing()) q->started = pcd_now();
    pcd_enter();
    int rc = plancoll_start(q->plan);
    pcd_leave();
    if (rc != PLANCOLL_SUCCESS) {
        char what[512];
        snprintf(what, sizeof what, "plancoll_start failed: %s: %s", plancoll_strerror(rc), plancoll_error_detail());
        return raise_error(q, MPI_ERR_OTHER, what);
    }
    q->state = PREQ_ACTIVE;
    active_add(q);
    pcd_guard_start(); /* the first start brings the guard up (guard.c), where the layer may have it */
    return MPI_SUCCESS;
}

/* ---- Per-communicator slots, the agreement at init, deferred destruction ---------------------------- */

static struct pers_comm *pers_of(struct pcd_comm *c) {
    if (c->persistent == NULL) {
        struct pers_comm *pc = calloc(1, sizeof *pc);
        if (pc == NULL) return NULL;
        pc->agreement = calloc(1, sizeof *pc->agreement);
        if (pc->agreement == NULL) {
            free(pc);
            return NULL;
        }
        pc->comm = c;
        c->persistent = pc;
    }
    return c->persistent;
}

static int words_of(int nslots) { return (nslots + 63) / 64; }

/* Destroys the plan in slot s (collective: called on every rank for the same slot at the same point). */
static void destroy_slot(struct pers_comm *pc, int s) {
    struct preq *q = pc->slots[s];
    pcd_enter();
    plancoll_destroy_plan(&q->plan);
    pcd_leave();
    pc->slots[s] = NULL;
    pc->live--;
    free(q);
}

/* Finishes an agreement allreduce without blocking the layer's plans: a rank inside a (possibly synchronising)
 * init must keep its started plans moving, or a peer waiting on one of them before its own init never ends. */
static int wait_agreement(MPI_Request *r) {
    for (;;) {
        int flag = 0;
        int rc = PMPI_Test(r, &flag, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS || flag) return rc;
        if (!advance_all()) sched_yield();
    }
}

/* The agreement of an init on c (c NULL: this rank has no state for the communicator, so it wants nothing and
 * holds no slot; no other rank can hold one either, since slots are only taken when every rank wants). One
 * allreduce under MPI_BAND: word 0 is all ones when this rank wants to plan, then one bit per slot set when this
 * rank has freed that slot's request and its last execution is over. Plans freed on every rank are destroyed,
 * in slot order; the result says whether every rank wants to plan. */
static bool agree(MPI_Comm comm, struct pers_comm *pc, bool want) {
    uint64_t lone = 0, *buf = pc ? pc->agreement : &lone;
    int words = pc ? words_of(pc->nslots) : 0;
    memset(buf, 0, sizeof *buf * (size_t)(1 + words));
    buf[0] = want ? UINT64_MAX : 0;
    for (int s = 0; pc && s < pc->nslots; s++) {
        struct preq *q = pc->slots[s];
        if (q == NULL || !q->freed) continue;
        advance(q);
        if (q->state == PREQ_INACTIVE) buf[1 + s / 64] |= 1ULL << (s % 64);
    }
    MPI_Request r;
    if (PMPI_Iallreduce(MPI_IN_PLACE, buf, 1 + words, MPI_UINT64_T, MPI_BAND, comm, &r) != MPI_SUCCESS ||
        wait_agreement(&r) != MPI_SUCCESS)
        return false;
    for (int s = 0; pc && s < pc->nslots; s++)
        if (buf[1 + s / 64] & (1ULL << (s % 64))) destroy_slot(pc, s);
    return buf[0] == UINT64_MAX;
}

/* Room for one more slot in pc and one more handle in the table, reserved before the agreement so that after
 * it nothing can fail on one rank alone. */
static bool reserve(struct pers_comm *pc) {
    bool free_slot = false;
    for (int s = 0; s < pc->nslots && !free_slot; s++) free_slot = pc->slots[s] == NULL;
    if (!free_slot && pc->nslots == pc->capacity) {
        int n = pc->capacity ? 2 * pc->capacity : 8;
        struct preq **slots = realloc(pc->slots, sizeof *slots * (size_t)n);
        if (slots == NULL) return false;
        pc->slots = slots;
        uint64_t *agreement = realloc(pc->agreement, sizeof *agreement * (size_t)(1 + words_of(n)));
        if (agreement == NULL) return false;
        pc->agreement = agreement;
        pc->capacity = n;
    }
    if (2 * (table_used + 1) > table_size) {
        size_t n = table_size ? 2 * table_size : 64;
        struct preq **t = calloc(n, sizeof *t);
        if (t == NULL) return false;
        for (size_t i = 0; i < table_size; i++)
            if (table[i] != NULL) {
                size_t j = request_hash(table[i]->handle) & (n - 1);
                while (t[j] != NULL) j = (j + 1) & (n - 1);
                t[j] = table[i];
            }
        free(table);
        table = t;
        table_size = n;
    }
    return true;
}

/* The lowest free slot; reserve() made sure there is one. The same on every rank after an agreement. */
static int take_slot(struct pers_comm *pc) {
    for (int s = 0; s < pc->nslots; s++)
        if (pc->slots[s] == NULL) return s;
    pc->slots[pc->nslots] = NULL;
    return pc->nslots++;
}

/* Requests whose communicator was released while the application still held them, in release order (the same
 * on every rank: communicators are freed in one order wherever they share ranks). Their plans run on plancoll's
 * own duplicate of the communicator, so they keep working (MPI lets a persistent request outlive MPI_Comm_free);
 * no later point is agreed on their communicator, so they are destroyed at MPI_Finalize, in this order. */
static struct preq *detached_head, **detached_tail = &detached_head;
static bool finalizing;

static void destroy_request(struct preq *q) {
    if (q->state == PREQ_ACTIVE) {
        pcd_enter();
        int rc = plancoll_wait(q->plan);
        pcd_leave();
        finish(q, rc);
    }
    pcd_enter();
    plancoll_destroy_plan(&q->plan);
    pcd_leave();
    if (q->freed) {
        free(q);
    } else { /* MPI_Finalize: the handle is MPI's inactive request, for MPI to judge from now on */
        table_del(q);
        free(q);
    }
}

/* The communicator is being freed, or MPI finalized (on every rank, in the same order): plans of freed requests
 * are destroyed (after their last execution); requests the application still holds are detached (above), or
 * destroyed as well at MPI_Finalize. */
static void release(struct pcd_comm *c) {
    struct pers_comm *pc = c->persistent;
    if (pc == NULL) return;
    for (int s = 0; s < pc->nslots; s++) {
        struct preq *q = pc->slots[s];
        if (q == NULL) continue;
        pc->slots[s] = NULL;
        if (q->freed || finalizing) {
            destroy_request(q);
        } else {
            q->owner = NULL;
            q->next_detached = NULL;
            *detached_tail = q;
            detached_tail = &q->next_detached;
        }
    }
    free(pc->slots);
    free(pc->agreement);
    free(pc);
    c->persistent = NULL;
}

/* Before any communicator's release at MPI_Finalize: the detached requests first (their communicators were
 * released before any of those MPI_Finalize releases). */
static void finalize(void) {
    finalizing = true;
    while (detached_head != NULL) {
        struct preq *q = detached_head;
        detached_head = q->next_detached;
        destroy_request(q);
    }
    detached_tail = &detached_head;
}

__attribute__((constructor)) static void register_hooks(void) {
    pcd_on_release(release);
    pcd_on_finalize(finalize);
}

/* ---- The init calls ------------------------------------------------------------------------------ */

/* What an init hands to plan creation. */
struct init_call {
    const char *collective;
    MPI_Comm comm;
    struct pcd_comm *c;
    bool want;        /* this rank's arguments are ones the layer takes */
    char shape[160];  /* for the report */
};

/* The state of comm after MPI accepted the init on it (or NULL: the rank then takes part in the agreement
 * wanting nothing). */
static struct pcd_comm *state_of(MPI_Comm comm) {
    struct pcd_comm *c = pcd_comm_find(comm);
    return c ? c : pcd_comm_create(comm);
}

/* Signatures the layer takes: one predefined type (dropin.h). *base receives it. */
static bool single_type(MPI_Datatype t, struct pcd_signature *sig) { return pcd_type_signature(t, sig); }

/* After MPI made *request: agree with the other ranks, and plan when every rank wants to. make() creates the
 * plan (inside pcd_enter/leave); on any failure the application keeps MPI's request. */
typedef int (*make_fn)(const void *args, plancoll_plan *plan);

static void plan_request(struct init_call *ic, const void *args, make_fn make, MPI_Request *request) {
    struct pers_comm *pc = ic->c ? pers_of(ic->c) : NULL;
    struct preq *q = NULL;
    MPI_Request handle = MPI_REQUEST_NULL;
    bool want = ic->want && pc != NULL && pc->live < MAX_PLANS_PER_COMM && reserve(pc) &&
                (q = calloc(1, sizeof *q)) != NULL &&
                PMPI_Send_init(NULL, 0, MPI_BYTE, MPI_PROC_NULL, 0, MPI_COMM_SELF, &handle) == MPI_SUCCESS;
    if (!agree(ic->comm, pc, want)) {
        if (handle != MPI_REQUEST_NULL) PMPI_Request_free(&handle);
        free(q);
        return;
    }
    /* Every rank wants, so every rank has pc, the same slots and room reserved: nothing below fails alone. */
    plancoll_plan plan = NULL;
    pcd_enter();
    int rc = make(args, &plan);
    pcd_leave();
    if (rc != PLANCOLL_SUCCESS) { /* the same code on every rank: every rank keeps MPI's request */
        PMPI_Request_free(&handle);
        free(q);
        return;
    }
    PMPI_Request_free(request); /* MPI's own request, never started: freed at once */
    *request = handle;
    int s = take_slot(pc);
    q->handle = handle;
    q->plan = plan;
    q->owner = pc;
    q->slot = s;
    q->state = PREQ_INACTIVE;
    q->collective = ic->collective;
    q->stats = pcd_stats_get(ic->collective, ic->c->size, ic->shape);
    char spec[256];
    pcd_enter();
    if (q->stats && plancoll_plan_spec(plan, spec, sizeof spec) == PLANCOLL_SUCCESS) pcd_stats_algorithm(q->stats, spec);
    pcd_leave();
    table_put(q);
    pc->slots[s] = q;
    pc->live++;
}

/* Whether the layer considers an init at all. MPI made *request (so the arguments are valid); intercommunicators
 * stay with MPI (a property of the communicator, the same on every rank). */
static bool considered(int rc, MPI_Comm comm, struct init_call *ic, const char *collective) {
    if (rc != MPI_SUCCESS || !pcd_takes_calls() || pcd_lazy) return false; /* pcd_lazy: dropin.h */
    ic->collective = collective;
    ic->comm = comm;
    ic->c = state_of(comm);
    ic->want = ic->c != NULL;
    ic->shape[0] = '\0';
    return ic->c == NULL || !ic->c->to_mpi;
}

struct alltoall_args {
    const void *sendbuf;
    int sendcount;
    MPI_Datatype sendtype;
    void *recvbuf;
    int recvcount;
    MPI_Datatype recvtype;
    MPI_Comm comm;
};

static int make_alltoall(const void *args, plancoll_plan *plan) {
    const struct alltoall_args *a = args;
    return plancoll_plan_alltoall(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf, a->recvcount, a->recvtype,
                                  a->comm, pcd_plan_flags(true), plan);
}

int PCD_INIT(Alltoall)(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                      MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    int rc = PCD_PMPI_INIT(Alltoall)(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm, info, request);
    struct init_call ic;
    if (!considered(rc, comm, &ic, "alltoall_init")) return rc;
    /* The planned arguments are the application's own: plancoll takes any layout of the types (it packs
     * non-contiguous ones itself) and checks that block sizes agree; the layer only asks for single-type
     * signatures (dropin.h). */
    struct pcd_signature rs, ss;
    bool in_place = sendbuf == MPI_IN_PLACE;
    ic.want = ic.want && single_type(recvtype, &rs) && (in_place || (single_type(sendtype, &ss) && ss.base == rs.base));
    if (ic.want)
        snprintf(ic.shape, sizeof ic.shape, "%lldx%s", (long long)rs.elements * recvcount, pcd_type_name(rs.base));
    struct alltoall_args a = {sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm};
    plan_request(&ic, &a, make_alltoall, request);
    return rc;
}

struct alltoallv_args {
    const void *sendbuf;
    const int *sendcounts, *sdispls;
    MPI_Datatype sendtype;
    void *recvbuf;
    const int *recvcounts, *rdispls;
    MPI_Datatype recvtype;
    MPI_Comm comm;
};

static int make_alltoallv(const void *args, plancoll_plan *plan) {
    const struct alltoallv_args *a = args;
    return plancoll_plan_alltoallv(a->sendbuf, a->sendcounts, a->sdispls, a->sendtype, a->recvbuf, a->recvcounts,
                                   a->rdispls, a->recvtype, a->comm, pcd_plan_flags(true), plan);
}

int PCD_INIT(Alltoallv)(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                       void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    int rc = PCD_PMPI_INIT(Alltoallv)(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype,
                                 comm, info, request);
    struct init_call ic;
    if (!considered(rc, comm, &ic, "alltoallv_init")) return rc;
    /* Each rank judges its own arguments (counts differ per rank); the agreement makes the decision common. */
    struct pcd_signature rs, ss;
    bool in_place = sendbuf == MPI_IN_PLACE;
    ic.want = ic.want && single_type(recvtype, &rs) && (in_place || single_type(sendtype, &ss)) && recvcounts &&
              rdispls && (in_place || (sendcounts && sdispls));
    if (ic.want) {
        long long bytes = 0;
        MPI_Count rsize = 0, ssize = 0;
        PMPI_Type_size_x(recvtype, &rsize);
        if (!in_place) PMPI_Type_size_x(sendtype, &ssize);
        for (int i = 0; i < ic.c->size; i++) {
            if (recvcounts[i] < 0 || (!in_place && sendcounts[i] < 0)) ic.want = false;
            bytes += (long long)recvcounts[i] * rsize * (in_place ? 2 : 1) + (in_place ? 0 : (long long)sendcounts[i] * ssize);
        }
        snprintf(ic.shape, sizeof ic.shape, "total_bytes=%lld", bytes);
    }
    struct alltoallv_args a = {sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm};
    plan_request(&ic, &a, make_alltoallv, request);
    return rc;
}

struct allreduce_args {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    MPI_Comm comm;
};

static int make_allreduce(const void *args, plancoll_plan *plan) {
    const struct allreduce_args *a = args;
    return plancoll_plan_allreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->comm,
                                   pcd_plan_flags(true), plan);
}

static bool predefined_op(MPI_Op op) { return strcmp(pcd_op_name(op), "user_op") != 0; }

int PCD_INIT(Allreduce)(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                       MPI_Comm comm, MPI_Info info, MPI_Request *request) {
    int rc = PCD_PMPI_INIT(Allreduce)(sendbuf, recvbuf, count, datatype, op, comm, info, request);
    struct init_call ic;
    if (!considered(rc, comm, &ic, "allreduce_init")) return rc;
    struct pcd_signature sig;
    struct allreduce_args a = {sendbuf, recvbuf, count, datatype, op, comm};
    ic.want = ic.want && count >= 0 && single_type(datatype, &sig);
    if (ic.want && predefined_op(op)) {
        /* plancoll's predefined reductions run on predefined types: a contiguous derived type of one base type
         * is planned as its base elements (the same signature, so every rank's plan agrees whichever way each
         * rank spelled the type); a non-contiguous one stays with MPI (packing a vector around a reduction
         * would cost two copies per start for a case programs rarely use). A user op keeps its own type: its
         * function is called with what the application gave. */
        long long n = (long long)sig.elements * count;
        if (sig.base == datatype) {
            /* a named type (pair types such as MPI_DOUBLE_INT included): as given */
        } else if (sig.contiguous && n <= INT_MAX) {
            a.datatype = sig.base;
            a.count = (int)n;
        } else {
            ic.want = false;
        }
    }
    if (ic.want)
        snprintf(ic.shape, sizeof ic.shape, "%lldx%s:%s", (long long)sig.elements * count, pcd_type_name(sig.base),
                 pcd_op_name(op)); /* in-place-ness is each rank's own: not in the shape */
    plan_request(&ic, &a, make_allreduce, request);
    return rc;
}

/* Straight to PMPI: no request of the layer exists, or the call comes from plancoll itself (its own requests,
 * advanced inside a plancoll call the layer made: the layer must not advance plans from in there). The gate is
 * read first, so the common case costs one load and a branch. */
static inline bool passing(void) { return __builtin_expect(gate == 0, 1) || pcd_inside != 0; }

/* ---- Start, completion, free ---------------------------------------------------------------------- *
 * Each call is straight PMPI while the gate is closed (no request of the layer in the process). Otherwise arrays
 * are split: the layer's entries are advanced with plancoll_test and reported here, MPI's own entries (null and
 * inactive ones included, which MPI treats as it always does) are passed, compacted and in order, to the PMPI
 * test call of the same family, and the results are put back in place. A wait loops over both, yielding when
 * nothing completed (more ranks than cores is common). While some plan of the layer is active, waits on MPI's
 * requests alone loop the same way, so a rank waiting for a message keeps its started plans moving. */

enum { SPLIT_LOCAL = 16 };

struct split {
    int n, m, ours;
    struct preq **q;     /* per entry: the layer's request or NULL */
    int *map;            /* compact index -> entry */
    MPI_Request *reqs;   /* MPI's entries, compacted */
    MPI_Status *sts;     /* their statuses, or MPI_STATUSES_IGNORE */
    int *idx;            /* Testsome's output indices */
    void *heap;
    struct preq *q_local[SPLIT_LOCAL];
    int map_local[SPLIT_LOCAL], idx_local[SPLIT_LOCAL];
    MPI_Request reqs_local[SPLIT_LOCAL];
    MPI_Status sts_local[SPLIT_LOCAL];
};

/* Splits reqs[0..n-1]. False when memory for a large array is missing (the caller reports MPI_ERR_NO_MEM). */
static bool split_init(struct split *sp, int n, const MPI_Request reqs[], bool statuses) {
    sp->n = n;
    sp->m = sp->ours = 0;
    sp->heap = NULL;
    if (n <= SPLIT_LOCAL) {
        sp->q = sp->q_local;
        sp->map = sp->map_local;
        sp->idx = sp->idx_local;
        sp->reqs = sp->reqs_local;
        sp->sts = sp->sts_local;
    } else {
        size_t un = (size_t)n;
        char *h = malloc(un * (sizeof(struct preq *) + sizeof(MPI_Status) + sizeof(MPI_Request) + 2 * sizeof(int)));
        if (h == NULL) return false;
        sp->heap = h;
        sp->q = (struct preq **)(void *)h;
        sp->sts = (MPI_Status *)(void *)(h + un * sizeof(struct preq *));
        sp->reqs = (MPI_Request *)(void *)(h + un * (sizeof(struct preq *) + sizeof(MPI_Status)));
        sp->map = (int *)(void *)(h + un * (sizeof(struct preq *) + sizeof(MPI_Status) + sizeof(MPI_Request)));
        sp->idx = sp->map + n;
    }
    if (!statuses) sp->sts = MPI_STATUSES_IGNORE;
    for (int i = 0; i < n; i++) {
        sp->q[i] = lookup(reqs[i]);
        if (sp->q[i] != NULL) {
            sp->ours++;
        } else {
            sp->map[sp->m] = i;
            sp->reqs[sp->m++] = reqs[i];
        }
    }
    return true;
}

static void split_done(struct split *sp) { free(sp->heap); }

static void put_back(const struct split *sp, MPI_Request reqs[]) {
    for (int j = 0; j < sp->m; j++) reqs[sp->map[j]] = sp->reqs[j];
}

static int no_memory(void) {
    fprintf(stderr, "plancoll-dropin: no memory to split a request array\n");
    PMPI_Comm_call_errhandler(MPI_COMM_WORLD, MPI_ERR_NO_MEM);
    return MPI_ERR_NO_MEM;
}

int MPI_Start(MPI_Request *request) {
    if (passing() || request == NULL) return PMPI_Start(request);
    struct preq *q = lookup(*request);
    return q ? start_ours(q) : PMPI_Start(request);
}

/* Runs of MPI's requests go to PMPI_Startall, the layer's are started one by one, in the array's order (every
 * rank starts its collectives in the same order, which this keeps). */
int MPI_Startall(int count, MPI_Request array_of_requests[]) {
    if (passing() || count <= 0 || array_of_requests == NULL) return PMPI_Startall(count, array_of_requests);
    int run = 0;
    for (int i = 0; i < count; i++) {
        struct preq *q = lookup(array_of_requests[i]);
        if (q == NULL) continue;
        int rc = i > run ? PMPI_Startall(i - run, array_of_requests + run) : MPI_SUCCESS;
        if (rc == MPI_SUCCESS) rc = start_ours(q);
        if (rc != MPI_SUCCESS) return rc;
        run = i + 1;
    }
    return count > run ? PMPI_Startall(count - run, array_of_requests + run) : MPI_SUCCESS;
}

int MPI_Wait(MPI_Request *request, MPI_Status *status) {
    if (passing() || request == NULL) return PMPI_Wait(request, status);
    struct preq *q = lookup(*request);
    if (q == NULL) {
        if (n_active == 0) return PMPI_Wait(request, status);
        for (;;) {
            int flag = 0, rc = PMPI_Test(request, &flag, status);
            if (rc != MPI_SUCCESS || flag) return rc;
            if (!advance_all()) sched_yield();
        }
    }
    if (q->state == PREQ_ACTIVE) { /* plancoll's own wait advances every active plan meanwhile */
        pcd_enter();
        int rc = plancoll_wait(q->plan);
        pcd_leave();
        finish(q, rc);
    }
    return report(q, status, false);
}

int MPI_Test(MPI_Request *request, int *flag, MPI_Status *status) {
    if (passing() || request == NULL || flag == NULL) return PMPI_Test(request, flag, status);
    struct preq *q = lookup(*request);
    if (q == NULL) {
        advance_all();
        return PMPI_Test(request, flag, status);
    }
    advance(q);
    *flag = q->state != PREQ_ACTIVE;
    return *flag ? report(q, status, false) : MPI_SUCCESS;
}

/* Does not complete the request (MPI: it only tells); an inactive one is complete with an empty status. */
int MPI_Request_get_status(MPI_Request request, int *flag, MPI_Status *status) {
    if (passing() || flag == NULL) return PMPI_Request_get_status(request, flag, status);
    struct preq *q = lookup(request);
    if (q == NULL) {
        advance_all();
        return PMPI_Request_get_status(request, flag, status);
    }
    advance(q);
    *flag = q->state != PREQ_ACTIVE;
    if (*flag) empty_status(status, false);
    return MPI_SUCCESS;
}

/* Freeing is local; the plan's collective destruction is deferred to the next agreed point (init on the
 * communicator, its MPI_Comm_free, MPI_Finalize). An active request may be freed, as MPI allows for persistent
 * requests: its execution goes on (advanced by every completion call, and waited for at the latest when the
 * communicator is released) and the plan is destroyed after it. */
int MPI_Request_free(MPI_Request *request) {
    if (passing() || request == NULL) return PMPI_Request_free(request);
    struct preq *q = lookup(*request);
    if (q == NULL) return PMPI_Request_free(request);
    table_del(q);
    int rc = PMPI_Request_free(request); /* the inactive send to MPI_PROC_NULL: freed at once */
    q->freed = true;
    if (q->state == PREQ_ACTIVE) gate++; /* still running: the gate stays open so waits keep it moving */
    else q->state = PREQ_INACTIVE;      /* a completion nobody will ask for */
    return rc;
}

/* MPI does not allow cancelling a collective operation (persistent ones included): erroneous, raised on the
 * communicator's error handler as MPI_ERR_REQUEST; the request is left as it was. */
int MPI_Cancel(MPI_Request *request) {
    if (passing() || request == NULL) return PMPI_Cancel(request);
    struct preq *q = lookup(*request);
    if (q == NULL) return PMPI_Cancel(request);
    return raise_error(q, MPI_ERR_REQUEST, "MPI_Cancel of a persistent collective request: collective operations "
                                           "cannot be cancelled");
}

int MPI_Waitall(int count, MPI_Request array_of_requests[], MPI_Status array_of_statuses[]) {
    if (passing() || count <= 0 || array_of_requests == NULL)
        return PMPI_Waitall(count, array_of_requests, array_of_statuses);
    struct split sp;
    if (!split_init(&sp, count, array_of_requests, array_of_statuses != MPI_STATUSES_IGNORE)) return no_memory();
    if (sp.ours == 0) {
        split_done(&sp);
        if (n_active == 0) return PMPI_Waitall(count, array_of_requests, array_of_statuses);
        for (;;) {
            int flag = 0, rc = PMPI_Testall(count, array_of_requests, &flag, array_of_statuses);
            if (rc != MPI_SUCCESS || flag) return rc;
            if (!advance_all()) sched_yield();
        }
    }
    bool theirs_done = sp.m == 0;
    int rc = MPI_SUCCESS;
    for (;;) {
        bool moved = advance_all();
        if (!theirs_done) {
            int flag = 0;
            rc = PMPI_Testall(sp.m, sp.reqs, &flag, sp.sts);
            if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) { /* not a completion: MPI's error as it is */
                put_back(&sp, array_of_requests);
                split_done(&sp);
                return rc;
            }
            theirs_done = flag || rc == MPI_ERR_IN_STATUS;
            moved = moved || theirs_done;
        }
        bool ours_active = false;
        for (int i = 0; i < count && !ours_active; i++) ours_active = sp.q[i] && sp.q[i]->state == PREQ_ACTIVE;
        if (theirs_done && !ours_active) break;
        if (!moved) sched_yield();
    }
    put_back(&sp, array_of_requests);
    bool failed = rc == MPI_ERR_IN_STATUS;
    int first_error = MPI_SUCCESS;
    for (int j = 0; sp.sts != MPI_STATUSES_IGNORE && j < sp.m; j++) array_of_statuses[sp.map[j]] = sp.sts[j];
    for (int i = 0; i < count; i++) {
        if (sp.q[i] == NULL) continue;
        int e = report(sp.q[i], array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &array_of_statuses[i], true);
        if (e != MPI_SUCCESS && first_error == MPI_SUCCESS) first_error = e;
    }
    split_done(&sp);
    if (failed || first_error != MPI_SUCCESS)
        return array_of_statuses != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : (failed ? rc : first_error);
    return MPI_SUCCESS;
}

int MPI_Testall(int count, MPI_Request array_of_requests[], int *flag, MPI_Status array_of_statuses[]) {
    if (passing() || count <= 0 || array_of_requests == NULL || flag == NULL)
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    struct split sp;
    if (!split_init(&sp, count, array_of_requests, array_of_statuses != MPI_STATUSES_IGNORE)) return no_memory();
    advance_all();
    if (sp.ours == 0) {
        split_done(&sp);
        return PMPI_Testall(count, array_of_requests, flag, array_of_statuses);
    }
    /* All or nothing, as MPI: while one of the layer's is still running, MPI's are not even tested (testing them
     * could complete and free them, and they could not be reported). */
    for (int i = 0; i < count; i++)
        if (sp.q[i] && sp.q[i]->state == PREQ_ACTIVE) {
            split_done(&sp);
            *flag = 0;
            return MPI_SUCCESS;
        }
    int rc = MPI_SUCCESS, theirs = 1;
    if (sp.m > 0) {
        rc = PMPI_Testall(sp.m, sp.reqs, &theirs, sp.sts);
        put_back(&sp, array_of_requests);
        if (rc != MPI_SUCCESS && rc != MPI_ERR_IN_STATUS) {
            split_done(&sp);
            return rc;
        }
        if (rc == MPI_ERR_IN_STATUS) theirs = 1;
    }
    if (!theirs) {
        split_done(&sp);
        *flag = 0;
        return rc;
    }
    *flag = 1;
    int first_error = MPI_SUCCESS;
    for (int j = 0; sp.sts != MPI_STATUSES_IGNORE && j < sp.m; j++) array_of_statuses[sp.map[j]] = sp.sts[j];
    for (int i = 0; i < count; i++) {
        if (sp.q[i] == NULL) continue;
        int e = report(sp.q[i], array_of_statuses == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &array_of_statuses[i], true);
        if (e != MPI_SUCCESS && first_error == MPI_SUCCESS) first_error = e;
    }
    split_done(&sp);
    if (rc == MPI_ERR_IN_STATUS || first_error != MPI_SUCCESS)
        return array_of_statuses != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : (rc != MPI_SUCCESS ? rc : first_error);
    return MPI_SUCCESS;
}

/* One pass of Waitany/Testany over a split array: *index is set and true returned when something completed or
 * nothing is active (index MPI_UNDEFINED, empty status); false when requests are active but none completed. */
static bool any_pass(struct split *sp, MPI_Request reqs[], int *index, MPI_Status *status, int *rc) {
    advance_all();
    bool active = false;
    for (int i = 0; i < sp->n; i++) { /* the layer's first, lowest index first */
        struct preq *q = sp->q[i];
        if (q == NULL) continue;
        if (q->state == PREQ_DONE) {
            *index = i;
            *rc = report(q, status, false);
            return true;
        }
        active = active || q->state == PREQ_ACTIVE;
    }
    if (sp->m > 0) {
        int j = MPI_UNDEFINED, flag = 0;
        *rc = PMPI_Testany(sp->m, sp->reqs, &j, &flag, status);
        if (j != MPI_UNDEFINED && j >= 0 && j < sp->m) {
            reqs[sp->map[j]] = sp->reqs[j];
            *index = sp->map[j];
            return true;
        }
        if (*rc != MPI_SUCCESS) {
            *index = MPI_UNDEFINED;
            return true;
        }
        active = active || !flag;
    }
    if (!active) {
        *index = MPI_UNDEFINED;
        empty_status(status, false);
        *rc = MPI_SUCCESS;
        return true;
    }
    return false;
}

int MPI_Waitany(int count, MPI_Request array_of_requests[], int *index, MPI_Status *status) {
    if (passing() || count <= 0 || array_of_requests == NULL || index == NULL)
        return PMPI_Waitany(count, array_of_requests, index, status);
    struct split sp;
    if (!split_init(&sp, count, array_of_requests, false)) return no_memory();
    if (sp.ours == 0 && n_active == 0) {
        split_done(&sp);
        return PMPI_Waitany(count, array_of_requests, index, status);
    }
    int rc = MPI_SUCCESS;
    while (!any_pass(&sp, array_of_requests, index, status, &rc)) sched_yield();
    split_done(&sp);
    return rc;
}

int MPI_Testany(int count, MPI_Request array_of_requests[], int *index, int *flag, MPI_Status *status) {
    if (passing() || count <= 0 || array_of_requests == NULL || index == NULL || flag == NULL)
        return PMPI_Testany(count, array_of_requests, index, flag, status);
    struct split sp;
    if (!split_init(&sp, count, array_of_requests, false)) return no_memory();
    if (sp.ours == 0) {
        split_done(&sp);
        advance_all();
        return PMPI_Testany(count, array_of_requests, index, flag, status);
    }
    int rc = MPI_SUCCESS;
    *flag = any_pass(&sp, array_of_requests, index, status, &rc);
    if (!*flag) *index = MPI_UNDEFINED;
    split_done(&sp);
    return rc;
}

/* One pass of Waitsome/Testsome: true when something completed (*outcount > 0) or nothing is active
 * (*outcount MPI_UNDEFINED). */
static bool some_pass(struct split *sp, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[], int *rc) {
    advance_all();
    bool active = false, in_status = false;
    int out = 0;
    *rc = MPI_SUCCESS;
    for (int i = 0; i < sp->n; i++) {
        struct preq *q = sp->q[i];
        if (q == NULL) continue;
        if (q->state == PREQ_DONE) {
            indices[out] = i;
            in_status = report(q, sts == MPI_STATUSES_IGNORE ? MPI_STATUS_IGNORE : &sts[out], true) != MPI_SUCCESS ||
                        in_status;
            out++;
        } else {
            active = active || q->state == PREQ_ACTIVE;
        }
    }
    if (sp->m > 0) {
        int oc = MPI_UNDEFINED;
        int e = PMPI_Testsome(sp->m, sp->reqs, &oc, sp->idx, sp->sts);
        if (e != MPI_SUCCESS && e != MPI_ERR_IN_STATUS) {
            put_back(sp, reqs);
            *outcount = out;
            *rc = e;
            return true;
        }
        in_status = in_status || e == MPI_ERR_IN_STATUS;
        if (oc != MPI_UNDEFINED) {
            active = true;
            for (int k = 0; k < oc; k++) {
                int j = sp->idx[k];
                reqs[sp->map[j]] = sp->reqs[j];
                indices[out] = sp->map[j];
                if (sts != MPI_STATUSES_IGNORE) sts[out] = sp->sts[k];
                out++;
            }
        }
    }
    if (in_status) *rc = sts != MPI_STATUSES_IGNORE ? MPI_ERR_IN_STATUS : MPI_ERR_OTHER;
    if (out > 0) {
        *outcount = out;
        return true;
    }
    if (!active) {
        *outcount = MPI_UNDEFINED;
        return true;
    }
    *outcount = 0;
    return false;
}

int MPI_Waitsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[]) {
    if (passing() || incount <= 0 || array_of_requests == NULL || outcount == NULL || array_of_indices == NULL)
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    struct split sp;
    if (!split_init(&sp, incount, array_of_requests, array_of_statuses != MPI_STATUSES_IGNORE)) return no_memory();
    if (sp.ours == 0 && n_active == 0) {
        split_done(&sp);
        return PMPI_Waitsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    }
    int rc = MPI_SUCCESS;
    while (!some_pass(&sp, array_of_requests, outcount, array_of_indices, array_of_statuses, &rc)) sched_yield();
    split_done(&sp);
    return rc;
}

int MPI_Testsome(int incount, MPI_Request array_of_requests[], int *outcount, int array_of_indices[],
                 MPI_Status array_of_statuses[]) {
    if (passing() || incount <= 0 || array_of_requests == NULL || outcount == NULL || array_of_indices == NULL)
        return PMPI_Testsome(incount, array_of_requests, outcount, array_of_indices, array_of_statuses);
    struct split sp;
    if (!split_init(&sp, incount, array_of_requests, array_of_statuses != MPI_STATUSES_IGNORE)) return no_memory();
    int rc = MPI_SUCCESS;
    some_pass(&sp, array_of_requests, outcount, array_of_indices, array_of_statuses, &rc);
    split_done(&sp);
    return rc;
}
