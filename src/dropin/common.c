/* The drop-in layer's frame: MPI_Init*, MPI_Finalize, the settings, datatype signatures and the
 * per-communicator state (dropin.h). */
#include "dropin.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pcd_settings pcd_settings = {.after = 2, .rigor_flags = PLANCOLL_ESTIMATE, .max_plans = 16, .guard = true};
unsigned long pcd_guard_epoch;
int pcd_guard_inside;
bool pcd_guard_allowed;
bool pcd_on = false;
bool pcd_started = false;
bool pcd_lazy = false;
static int lazy_state; /* set up lazily: read_settings' verdict on this rank, agreed per communicator */
_Thread_local int pcd_inside = 0;

double pcd_now(void) { return PMPI_Wtime(); }

/* ---- Settings ------------------------------------------------------------------------------------ */

/* Parses a decimal integer in [lo, hi]; false for anything else (empty, trailing characters, out of range). */
static bool parse_int(const char *s, long lo, long hi, int *out) {
    if (s == NULL || *s == '\0') return false;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* Reads the environment into *s. Returns 1 when the layer is to be on, 0 when PLANCOLL_DROPIN=0 turns it off,
 * -1 for a bad value (why[] says which and why). */
static int read_settings(struct pcd_settings *s, char *why, size_t whylen) {
    const char *v = getenv("PLANCOLL_DROPIN");
    if (v != NULL) {
        if (strcmp(v, "0") == 0) return 0;
        if (strcmp(v, "1") != 0) {
            snprintf(why, whylen, "PLANCOLL_DROPIN=%s: not 0 or 1", v);
            return -1;
        }
    }
    v = getenv("PLANCOLL_DROPIN_AFTER");
    if (v != NULL && !parse_int(v, 0, 1000000, &s->after)) {
        snprintf(why, whylen, "PLANCOLL_DROPIN_AFTER=%s: not an integer in 0..1000000", v);
        return -1;
    }
    v = getenv("PLANCOLL_DROPIN_RIGOR");
    if (v != NULL) {
        if (strcmp(v, "estimate") == 0) s->rigor_flags = PLANCOLL_ESTIMATE;
        else if (strcmp(v, "measure") == 0) s->rigor_flags = PLANCOLL_MEASURE;
        else {
            snprintf(why, whylen, "PLANCOLL_DROPIN_RIGOR=%s: not estimate or measure", v);
            return -1;
        }
    }
    v = getenv("PLANCOLL_DROPIN_MAX_PLANS");
    if (v != NULL && !parse_int(v, 1, 4096, &s->max_plans)) {
        snprintf(why, whylen, "PLANCOLL_DROPIN_MAX_PLANS=%s: not an integer in 1..4096", v);
        return -1;
    }
    v = getenv("PLANCOLL_DROPIN_PROGRESS");
    if (v != NULL && *v != '\0') {
        if (strcmp(v, "thread") == 0) s->guard = true;
        else if (strcmp(v, "calls") == 0) s->guard = false;
        else {
            snprintf(why, whylen, "PLANCOLL_DROPIN_PROGRESS=%s: not thread or calls", v);
            return -1;
        }
    }
    v = getenv("PLANCOLL_DROPIN_REPORT");
    if (v != NULL && strcmp(v, "0") != 0 && *v != '\0') {
        if (strcmp(v, "1") == 0) {
            s->report = PCD_REPORT_STDERR;
        } else {
            if (strlen(v) >= sizeof s->report_file) {
                snprintf(why, whylen, "PLANCOLL_DROPIN_REPORT: a file name of %zu characters (at most %zu)", strlen(v),
                         sizeof s->report_file - 1);
                return -1;
            }
            s->report = PCD_REPORT_FILE;
            snprintf(s->report_file, sizeof s->report_file, "%s", v);
        }
    }
    return 1;
}

static int keyval_comm = MPI_KEYVAL_INVALID;
static int keyval_type = MPI_KEYVAL_INVALID;
static int comm_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra);
static int type_delete_fn(MPI_Datatype type, int keyval, void *value, void *extra);

/* After MPI_Init* (level_told: the thread level the program was told; actual_level: MPI's): reads the settings on every rank and turns the layer on only if they are valid and equal on
 * every rank of MPI_COMM_WORLD: a decision taken from a setting that differs across ranks (plan at the third call
 * here, at the fifth there) would make one rank plan, collectively, while another calls MPI. */
static void start_layer(int level_told, int actual_level) {
    pcd_started = true;
    struct pcd_settings s = pcd_settings;
    char why[1200] = "";
    int state = read_settings(&s, why, sizeof why);
    /* Agreed vector: state, after, rigor, max_plans, and a hash of the report setting is not needed (only rank 0
     * writes). Each value goes in as v and -v under MPI_MAX, giving max and -min in one call. */
    long local[8] = {state, -(long)state, s.after, -(long)s.after, (long)s.rigor_flags, -(long)s.rigor_flags,
                     s.max_plans, -(long)s.max_plans};
    long agreed[8];
    if (PMPI_Allreduce(local, agreed, 8, MPI_LONG, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS) return;
    bool equal = true;
    for (int i = 0; i < 8; i += 2) equal = equal && agreed[i] == -agreed[i + 1];
    if (state < 0) {
        fprintf(stderr, "plancoll-dropin: %s; the layer is off\n", why);
        return;
    }
    if (!equal) {
        fprintf(stderr,
                "plancoll-dropin: PLANCOLL_DROPIN* settings differ across the ranks of MPI_COMM_WORLD (or are "
                "invalid on some rank); the layer is off\n");
        return;
    }
    if (state == 0) return;
    if (level_told == MPI_THREAD_MULTIPLE) return; /* dropin.h: concurrent collectives stay with MPI */
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_fn, &keyval_comm, NULL) != MPI_SUCCESS) return;
    if (PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete_fn, &keyval_type, NULL) != MPI_SUCCESS) return;
    pcd_settings = s;
    pcd_guard_allowed = s.guard && actual_level == MPI_THREAD_MULTIPLE;
    pcd_on = true;
}

/* ---- The thread level ---------------------------------------------------------------------------- *
 * The guard (guard.c) calls MPI while the program's thread may be inside MPI, so the layer asks MPI for
 * MPI_THREAD_MULTIPLE at init, unless the program asks for it itself (the layer is then off: concurrent collectives
 * stay with MPI), the MPI has no persistent collectives (no plan is ever started), or PLANCOLL_DROPIN=0 or
 * PLANCOLL_DROPIN_PROGRESS=calls say no. The program is told the level it asked for (MPI_Init: MPI_THREAD_SINGLE,
 * the default of MPICH and Open MPI) by MPI_Init_thread and MPI_Query_thread, so it never makes more concurrent calls
 * than it planned for, and the layer's tables stay single-threaded. The cost: MPI's per-call lock, about 8 ns per
 * call under MPICH 4.0.2 (MPI_Test of MPI_REQUEST_NULL 0.006 -> 0.014 us; docs/dropin.md). */
static int program_level = -1; /* the level the program was told where the layer raised MPI's; -1 otherwise */

bool pcd_raise_level_for(int required) {
#if PC_HAVE_MPI_PERSISTENT_COLL || PC_HAVE_MPIX_PERSISTENT_COLL
    if (required != MPI_THREAD_SINGLE && required != MPI_THREAD_FUNNELED && required != MPI_THREAD_SERIALIZED)
        return false; /* MULTIPLE (the layer will be off) or an erroneous value, which MPI judges */
    const char *on = getenv("PLANCOLL_DROPIN"), *progress = getenv("PLANCOLL_DROPIN_PROGRESS");
    if (on != NULL && strcmp(on, "0") == 0) return false;
    return progress == NULL || *progress == '\0' || strcmp(progress, "thread") == 0;
#else
    (void)required;
    return false;
#endif
}

int pcd_program_level(int required, int actual) {
    program_level = actual < required ? actual : required;
    return program_level;
}

int MPI_Query_thread(int *provided) {
    if (program_level >= 0 && pcd_inside == 0 && provided != NULL) {
        *provided = program_level;
        return MPI_SUCCESS;
    }
    return PMPI_Query_thread(provided);
}

int MPI_Init(int *argc, char ***argv) {
    int actual = MPI_THREAD_SINGLE, rc;
    if (pcd_raise_level_for(MPI_THREAD_SINGLE)) {
        if ((rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &actual)) == MPI_SUCCESS)
            start_layer(pcd_program_level(MPI_THREAD_SINGLE, actual), actual);
    } else if ((rc = PMPI_Init(argc, argv)) == MPI_SUCCESS) {
        PMPI_Query_thread(&actual);
        start_layer(actual, actual);
    }
    return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
    if (provided == NULL || !pcd_raise_level_for(required)) {
        int rc = PMPI_Init_thread(argc, argv, required, provided);
        if (rc == MPI_SUCCESS) start_layer(*provided, *provided);
        return rc;
    }
    int actual = MPI_THREAD_SINGLE;
    int rc = PMPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &actual);
    if (rc == MPI_SUCCESS) {
        *provided = pcd_program_level(required, actual);
        start_layer(*provided, actual);
    }
    return rc;
}

/* dropin.h: where the program's MPI_Init did not pass through the layer's C definition but through a Fortran entry
 * point of the layer's own (fortran_f08.c), which called MPI's first (at the level pcd_raise_level_for chose). */
void pcd_start_after_init(int program_level_told, int actual_level) {
    if (pcd_started) return;
    start_layer(program_level_told, actual_level);
}

static int keyval_self = MPI_KEYVAL_INVALID;
static int self_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra);

/* dropin.h, pcd_started: the set-up when MPI_Init* did not pass through the layer. Local: the settings are agreed
 * per communicator when its state is made. A rank whose settings are bad or turn the layer off still takes part
 * in those agreements (pcd_on), so its peers learn it and leave the communicator to MPI with it. */
void pcd_start_lazily(void) {
    int init = 0, fin = 0;
    if (PMPI_Initialized(&init) != MPI_SUCCESS || !init || PMPI_Finalized(&fin) != MPI_SUCCESS || fin) return;
    pcd_started = true;
    int provided = MPI_THREAD_SINGLE;
    if (PMPI_Query_thread(&provided) != MPI_SUCCESS || provided == MPI_THREAD_MULTIPLE) return;
    struct pcd_settings s = pcd_settings;
    char why[1200] = "";
    lazy_state = read_settings(&s, why, sizeof why);
    if (lazy_state < 0) fprintf(stderr, "plancoll-dropin: %s; the layer is off\n", why);
    if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, comm_delete_fn, &keyval_comm, NULL) != MPI_SUCCESS ||
        PMPI_Type_create_keyval(MPI_TYPE_NULL_COPY_FN, type_delete_fn, &keyval_type, NULL) != MPI_SUCCESS ||
        PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, self_delete_fn, &keyval_self, NULL) != MPI_SUCCESS ||
        PMPI_Comm_set_attr(MPI_COMM_SELF, keyval_self, NULL) != MPI_SUCCESS)
        return;
    if (lazy_state == 1) pcd_settings = s;
    pcd_lazy = true;
    pcd_on = true;
}

/* Set up lazily, the settings of a communicator's ranks must agree before any of them plans on it. Collective over
 * comm: pcd_comm_create runs at the first call the layer sees on comm, which is the same call on all its ranks. */
static bool lazy_settings_agree(MPI_Comm comm) {
    const long on = lazy_state == 1;
    long local[8] = {on, -on, pcd_settings.after, -(long)pcd_settings.after, (long)pcd_settings.rigor_flags,
                     -(long)pcd_settings.rigor_flags, pcd_settings.max_plans, -(long)pcd_settings.max_plans};
    long agreed[8];
    if (PMPI_Allreduce(local, agreed, 8, MPI_LONG, MPI_MAX, comm) != MPI_SUCCESS) return false;
    for (int i = 0; i < 8; i += 2)
        if (agreed[i] != -agreed[i + 1]) return false;
    return agreed[0] == 1;
}

/* ---- Per-communicator state ---------------------------------------------------------------------- *
 * Found by handle in an open-addressing table (no MPI call, so an invalid handle never reaches MPI through the
 * layer), kept in a list in first-use order for MPI_Finalize. */

static struct pcd_comm *comm_list_head, *comm_list_tail;
static uint64_t comm_serial;
enum { COMM_TABLE_MIN = 64 };
static struct pcd_comm **comm_table;
static size_t comm_table_size, comm_table_used; /* used counts live entries and tombstones */
static struct pcd_comm tombstone;

static uint64_t handle_hash(MPI_Comm comm) { return PCD_HANDLE_HASH(comm); }

static bool same_handle(MPI_Comm a, MPI_Comm b) { return memcmp(&a, &b, sizeof a) == 0; }

struct pcd_comm *pcd_comm_find(MPI_Comm comm) {
    if (comm_table == NULL || comm == MPI_COMM_NULL) return NULL;
    size_t mask = comm_table_size - 1;
    for (size_t i = handle_hash(comm) & mask;; i = (i + 1) & mask) {
        struct pcd_comm *c = comm_table[i];
        if (c == NULL) return NULL;
        if (c != &tombstone && same_handle(c->comm, comm)) return c;
    }
}

static bool table_insert(struct pcd_comm *c) {
    if (comm_table == NULL || 2 * (comm_table_used + 1) > comm_table_size) {
        size_t n = comm_table_size ? comm_table_size : COMM_TABLE_MIN;
        while (2 * (comm_table_used + 1) > n) n *= 2; /* tombstones are dropped by the rehash below */
        struct pcd_comm **t = calloc(n, sizeof *t);
        if (t == NULL) return false;
        size_t live = 0;
        for (size_t i = 0; i < comm_table_size; i++) {
            struct pcd_comm *o = comm_table[i];
            if (o == NULL || o == &tombstone) continue;
            size_t j = handle_hash(o->comm) & (n - 1);
            while (t[j] != NULL) j = (j + 1) & (n - 1);
            t[j] = o;
            live++;
        }
        free(comm_table);
        comm_table = t;
        comm_table_size = n;
        comm_table_used = live;
    }
    size_t mask = comm_table_size - 1;
    size_t i = handle_hash(c->comm) & mask;
    while (comm_table[i] != NULL && comm_table[i] != &tombstone) i = (i + 1) & mask;
    if (comm_table[i] == NULL) comm_table_used++;
    comm_table[i] = c;
    return true;
}

static void table_remove(struct pcd_comm *c) {
    if (comm_table == NULL) return;
    size_t mask = comm_table_size - 1;
    for (size_t i = handle_hash(c->comm) & mask; comm_table[i] != NULL; i = (i + 1) & mask)
        if (comm_table[i] == c) {
            comm_table[i] = &tombstone;
            return;
        }
}

struct pcd_comm *pcd_comm_create(MPI_Comm comm) {
    if (!pcd_on || comm == MPI_COMM_NULL) return NULL;
    struct pcd_comm *c = calloc(1, sizeof *c);
    if (c == NULL) return NULL;
    c->comm = comm;
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || PMPI_Comm_size(comm, &c->size) != MPI_SUCCESS ||
        PMPI_Comm_rank(comm, &c->rank) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    c->intercomm = inter != 0;
    c->to_mpi = c->intercomm || (pcd_lazy && !lazy_settings_agree(comm));
    /* The attribute is what tells the layer the communicator is being freed. MPI_COMM_WORLD and MPI_COMM_SELF
     * get one too; MPI_Finalize releases every state before MPI deletes them. */
    if (PMPI_Comm_set_attr(comm, keyval_comm, c) != MPI_SUCCESS) {
        free(c);
        return NULL;
    }
    if (!table_insert(c)) {
        PMPI_Comm_delete_attr(comm, keyval_comm); /* comm_delete_fn finds no registered state: nothing to do */
        free(c);
        return NULL;
    }
    c->serial = comm_serial++;
    if (comm_list_tail) comm_list_tail->next = c;
    else comm_list_head = c;
    comm_list_tail = c;
    return c;
}

enum { MAX_HOOKS = 8 };
static pcd_release_hook release_hooks[MAX_HOOKS];
static pcd_finalize_hook finalize_hooks[MAX_HOOKS];
static int n_release_hooks, n_finalize_hooks;

/* Constructors run before main: no MPI, no output; a ninth hook is a programming error caught by the tests. */
void pcd_on_release(pcd_release_hook hook) {
    if (n_release_hooks < MAX_HOOKS) release_hooks[n_release_hooks++] = hook;
}
void pcd_on_finalize(pcd_finalize_hook hook) {
    if (n_finalize_hooks < MAX_HOOKS) finalize_hooks[n_finalize_hooks++] = hook;
}

static uint64_t releases; /* how many states were released: MPI_Finalize checks the callback ran */

/* Releases c's plans (collective over c) and forgets it. */
static void release_comm(struct pcd_comm *c) {
    pcd_enter();
    for (int i = 0; i < n_release_hooks; i++) release_hooks[i](c);
    pcd_leave();
    releases++;
    table_remove(c);
    struct pcd_comm **p = &comm_list_head, *prev = NULL;
    while (*p && *p != c) {
        prev = *p;
        p = &(*p)->next;
    }
    if (*p == c) {
        *p = c->next;
        if (comm_list_tail == c) comm_list_tail = prev;
    }
    free(c);
}

/* Inside MPI_Comm_free (or disconnect) on every rank of comm: its plans are destroyed, collectively. */
static int comm_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)keyval;
    (void)extra;
    /* Only a state still registered for comm: one released already (a failed delete above fell back to
     * release_comm) leaves its pointer in the attribute. */
    if (value != NULL && pcd_comm_find(comm) == value) release_comm(value);
    return MPI_SUCCESS;
}

/* MPI_Comm_free and MPI_Comm_disconnect are collective, so the state is released here, in the call, rather than
 * left to the attribute callback: MPICH 4.0.2 runs a communicator's delete callbacks only once the last request on
 * it is gone, which would move the collective release of its plans into whatever local call (an MPI_Wait on an
 * MPI_Irecv still pending on the freed communicator) drops that request, on each rank at another time. Deleting
 * the attribute now runs the callback at once (MPI_Comm_delete_attr does not wait for requests). */
static void release_before_free(MPI_Comm *comm) {
    if (!pcd_on || pcd_inside != 0 || comm == NULL) return;
    struct pcd_comm *c = pcd_comm_find(*comm);
    if (c == NULL) return;
    uint64_t before = releases;
    if (PMPI_Comm_delete_attr(*comm, keyval_comm) != MPI_SUCCESS || releases == before) release_comm(c);
}

void pcd_release_before_free(MPI_Comm *comm) { release_before_free(comm); }

int MPI_Comm_free(MPI_Comm *comm) {
    release_before_free(comm);
    return PMPI_Comm_free(comm);
}

int MPI_Comm_disconnect(MPI_Comm *comm) {
    release_before_free(comm);
    return PMPI_Comm_disconnect(comm);
}

/* The end of the layer, on every rank of MPI_COMM_WORLD: the finalize hooks first (the report reads the plans'
 * names), then every communicator's plans in first-use order: deleting the attribute runs comm_delete_fn, which
 * releases the state collectively (MPI would delete MPI_COMM_WORLD's and MPI_COMM_SELF's attributes inside
 * MPI_Finalize itself, in an order of its own). */
static void finish_layer(void) {
    if (!pcd_on) return;
    pcd_guard_stop(); /* before any plan is destroyed, and while MPI still works */
    pcd_enter();
    for (int i = 0; i < n_finalize_hooks; i++) finalize_hooks[i]();
    pcd_leave();
    while (comm_list_head != NULL) {
        struct pcd_comm *c = comm_list_head;
        uint64_t before = releases;
        if (PMPI_Comm_delete_attr(c->comm, keyval_comm) != MPI_SUCCESS || releases == before) release_comm(c);
    }
    pcd_on = false;
    free(comm_table);
    comm_table = NULL;
    comm_table_size = comm_table_used = 0;
}

void pcd_finish_before_finalize(void) { finish_layer(); }

int MPI_Finalize(void) {
    finish_layer();
    return PMPI_Finalize();
}

/* Set up lazily, the layer ends here: MPI_Finalize deletes MPI_COMM_SELF's attributes before anything else,
 * with MPI still working, on every rank. */
static int self_delete_fn(MPI_Comm comm, int keyval, void *value, void *extra) {
    (void)comm;
    (void)keyval;
    (void)value;
    (void)extra;
    finish_layer();
    return MPI_SUCCESS;
}

/* ---- Datatype signatures ------------------------------------------------------------------------- */

/* What is kept on a derived type: its analysis (or that it has none). */
struct type_note {
    bool single;
    struct pcd_signature sig;
};

/* The last derived type analysed, so a program that calls with one derived type (the usual case) pays neither the
 * envelope nor the attribute look-up again. Its handle can only be reused after MPI_Type_free, which deletes the
 * attribute, and type_delete_fn forgets it then. */
static MPI_Datatype last_derived = MPI_DATATYPE_NULL;
static const struct type_note *last_note;

static int type_delete_fn(MPI_Datatype type, int keyval, void *value, void *extra) {
    (void)type;
    (void)keyval;
    (void)extra;
    if (value == last_note) {
        last_note = NULL;
        last_derived = MPI_DATATYPE_NULL;
    }
    free(value);
    return MPI_SUCCESS;
}

/* The base named type of t's signature into *base (MPI_DATATYPE_NULL for an empty one); false when it mixes
 * named types or cannot be read. *contiguous: laid out in signature order without gaps from offset 0, as far as
 * the constructors show (contiguous and dup of contiguous types; anything else is packed). */
static bool analyse(MPI_Datatype t, MPI_Datatype *base, bool *contiguous, int depth) {
    int ni, na, nd, combiner;
    if (depth > 64 || PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
    if (combiner == MPI_COMBINER_NAMED) {
        *base = t;
        *contiguous = true;
        return true;
    }
    int *ints = malloc(sizeof(int) * (size_t)(ni > 0 ? ni : 1));
    MPI_Aint *aints = malloc(sizeof(MPI_Aint) * (size_t)(na > 0 ? na : 1));
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * (size_t)(nd > 0 ? nd : 1));
    bool ok = ints && aints && types && PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) == MPI_SUCCESS;
    int got = ok ? nd : 0;
    MPI_Datatype found = MPI_DATATYPE_NULL;
    bool all_contiguous = true;
    for (int i = 0; ok && i < got; i++) {
        MPI_Datatype b;
        bool c;
        if (!analyse(types[i], &b, &c, depth + 1)) {
            ok = false;
            break;
        }
        all_contiguous = all_contiguous && c;
        if (b == MPI_DATATYPE_NULL) continue; /* an empty component adds no element */
        if (found == MPI_DATATYPE_NULL) found = b;
        else if (found != b) ok = false;
    }
    for (int i = 0; i < got; i++) {
        int ti, ta, td, tc;
        if (PMPI_Type_get_envelope(types[i], &ti, &ta, &td, &tc) == MPI_SUCCESS && tc != MPI_COMBINER_NAMED)
            PMPI_Type_free(&types[i]);
    }
    free(ints);
    free(aints);
    free(types);
    if (!ok) return false;
    *base = found;
    *contiguous = all_contiguous && (combiner == MPI_COMBINER_CONTIGUOUS || combiner == MPI_COMBINER_DUP);
    return true;
}

static bool describe(MPI_Datatype t, MPI_Datatype base, bool contiguous, struct pcd_signature *sig) {
    MPI_Count size, base_size, lb, extent, true_lb, true_extent;
    if (PMPI_Type_size_x(t, &size) != MPI_SUCCESS || PMPI_Type_get_extent_x(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_get_true_extent_x(t, &true_lb, &true_extent) != MPI_SUCCESS)
        return false;
    if (base == MPI_DATATYPE_NULL) { /* an empty type: no element; keyed on MPI_BYTE */
        base = MPI_BYTE;
        base_size = 1;
        if (size != 0) return false;
    } else if (PMPI_Type_size_x(base, &base_size) != MPI_SUCCESS || base_size <= 0 || size % base_size != 0) {
        return false;
    }
    sig->base = base;
    sig->elements = size / base_size;
    sig->extent = (MPI_Aint)extent;
    sig->lb = (MPI_Aint)lb;
    /* Constructors alone do not make it contiguous: a resized or padded item has gaps between items. */
    sig->contiguous = contiguous && lb == 0 && extent == size && true_lb == 0 && true_extent == size;
    return true;
}

bool pcd_type_signature(MPI_Datatype t, struct pcd_signature *sig) {
    if (t == MPI_DATATYPE_NULL) return false;
    if (t == last_derived && last_note != NULL) {
        if (!last_note->single) return false;
        *sig = last_note->sig;
        return true;
    }
    int ni, na, nd, combiner;
    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &combiner) != MPI_SUCCESS) return false;
    if (combiner == MPI_COMBINER_NAMED) return describe(t, t, true, sig);
    void *value = NULL;
    int flag = 0;
    if (keyval_type != MPI_KEYVAL_INVALID && PMPI_Type_get_attr(t, keyval_type, &value, &flag) == MPI_SUCCESS &&
        flag) {
        const struct type_note *n = value;
        last_derived = t;
        last_note = n;
        if (!n->single) return false;
        *sig = n->sig;
        return true;
    }
    struct type_note *n = calloc(1, sizeof *n);
    if (n == NULL) return false;
    MPI_Datatype base;
    bool contiguous;
    n->single = analyse(t, &base, &contiguous, 0) && describe(t, base, contiguous, &n->sig);
    bool single = n->single;
    if (single) *sig = n->sig;
    if (keyval_type == MPI_KEYVAL_INVALID || PMPI_Type_set_attr(t, keyval_type, n) != MPI_SUCCESS) {
        free(n);
    } else {
        last_derived = t;
        last_note = n;
    }
    return single;
}

const char *pcd_type_name(MPI_Datatype base) {
    static const struct {
        MPI_Datatype t;
        const char *name;
    } names[] = {
        {MPI_CHAR, "MPI_CHAR"}, {MPI_SIGNED_CHAR, "MPI_SIGNED_CHAR"}, {MPI_UNSIGNED_CHAR, "MPI_UNSIGNED_CHAR"},
        {MPI_BYTE, "MPI_BYTE"}, {MPI_SHORT, "MPI_SHORT"}, {MPI_UNSIGNED_SHORT, "MPI_UNSIGNED_SHORT"},
        {MPI_INT, "MPI_INT"}, {MPI_UNSIGNED, "MPI_UNSIGNED"}, {MPI_LONG, "MPI_LONG"},
        {MPI_UNSIGNED_LONG, "MPI_UNSIGNED_LONG"}, {MPI_LONG_LONG, "MPI_LONG_LONG"},
        {MPI_UNSIGNED_LONG_LONG, "MPI_UNSIGNED_LONG_LONG"}, {MPI_FLOAT, "MPI_FLOAT"}, {MPI_DOUBLE, "MPI_DOUBLE"},
        {MPI_LONG_DOUBLE, "MPI_LONG_DOUBLE"}, {MPI_C_BOOL, "MPI_C_BOOL"}, {MPI_INT8_T, "MPI_INT8_T"},
        {MPI_INT16_T, "MPI_INT16_T"}, {MPI_INT32_T, "MPI_INT32_T"}, {MPI_INT64_T, "MPI_INT64_T"},
        {MPI_UINT8_T, "MPI_UINT8_T"}, {MPI_UINT16_T, "MPI_UINT16_T"}, {MPI_UINT32_T, "MPI_UINT32_T"},
        {MPI_UINT64_T, "MPI_UINT64_T"}, {MPI_C_FLOAT_COMPLEX, "MPI_C_FLOAT_COMPLEX"},
        {MPI_C_DOUBLE_COMPLEX, "MPI_C_DOUBLE_COMPLEX"}, {MPI_INTEGER, "MPI_INTEGER"}, {MPI_REAL, "MPI_REAL"},
        {MPI_DOUBLE_PRECISION, "MPI_DOUBLE_PRECISION"}, {MPI_COMPLEX, "MPI_COMPLEX"},
        {MPI_DOUBLE_COMPLEX, "MPI_DOUBLE_COMPLEX"}, {MPI_LOGICAL, "MPI_LOGICAL"},
        {MPI_FLOAT_INT, "MPI_FLOAT_INT"}, {MPI_DOUBLE_INT, "MPI_DOUBLE_INT"}, {MPI_2INT, "MPI_2INT"},
        {MPI_LONG_INT, "MPI_LONG_INT"}, {MPI_SHORT_INT, "MPI_SHORT_INT"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].t == base) return names[i].name;
    return "type";
}

const char *pcd_op_name(MPI_Op op) {
    static const struct {
        MPI_Op op;
        const char *name;
    } names[] = {
        {MPI_SUM, "MPI_SUM"},   {MPI_PROD, "MPI_PROD"}, {MPI_MAX, "MPI_MAX"},       {MPI_MIN, "MPI_MIN"},
        {MPI_LAND, "MPI_LAND"}, {MPI_LOR, "MPI_LOR"},   {MPI_LXOR, "MPI_LXOR"},     {MPI_BAND, "MPI_BAND"},
        {MPI_BOR, "MPI_BOR"},   {MPI_BXOR, "MPI_BXOR"}, {MPI_MAXLOC, "MPI_MAXLOC"}, {MPI_MINLOC, "MPI_MINLOC"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (names[i].op == op) return names[i].name;
    return "user_op";
}
