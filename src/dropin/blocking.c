/* The drop-in layer's blocking calls: MPI_Alltoall, MPI_Alltoallv and MPI_Allreduce planned online.
 *
 * Per communicator, a cache of the call shapes seen and of the plans made for them (docs/dropin.md, "Online
 * planning"). A shape's first PLANCOLL_DROPIN_AFTER calls go to MPI, the next one makes a plan (collective) and
 * runs it, and later calls run the plan on their own buffers (plancoll_execute_buffers).
 *
 * The hazard: plan creation and destruction are collective, so every decision that leads to one (plan now, evict
 * now, fall back) must come out the same on every rank for the same call.
 * - Alltoall and allreduce decide rank-locally from keys built only of what MPI makes every rank agree on: the
 *   block's size in bytes (alltoall: type signatures must match, so sizes do) and MPI_IN_PLACE (given on all ranks
 *   or none), the vector's (base type, elements, op) (allreduce: the same datatype, count and op everywhere).
 *   MPI_IN_PLACE of allreduce differs per rank, so it is not in the key: allreduce plans are made in place, and an
 *   out-of-place call copies sendbuf into recvbuf first (what plancoll's own reduction algorithms do first for an
 *   out-of-place plan). Every counter, every LRU clock, every eviction is then a function of the sequence of keys,
 *   which is the same on every rank.
 * - Alltoallv counts differ per rank: from the communicator's AFTER-th alltoallv call on, each call agrees with one
 *   PMPI_Allreduce(MPI_BAND) of a few words: "my shape has repeated and is plannable" and the set of plan slots made
 *   with my shape. A slot in every rank's set is run; else if every rank wants to plan, a plan is made; else MPI.
 *   A back-off skips the agreement (agreed: it depends only on agreed outcomes) when it keeps failing.
 * Plans live in a fixed array of slots per communicator (PLANCOLL_DROPIN_MAX_PLANS); a slot's last use is stamped
 * from a clock that only agreed events advance, so the least recently used plan is the same on every rank. */
#include "dropin.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum coll { COLL_ALLTOALL, COLL_ALLTOALLV, COLL_ALLREDUCE };
static const char *const coll_names[] = {"alltoall", "alltoallv", "allreduce"};

/* Consecutive failed alltoallv agreements before the back-off starts, and the longest gap it leaves between two
 * agreements (in alltoallv calls on the communicator). */
enum { MISSES_BEFORE_BACKOFF = 8, MAX_BACKOFF_GAP = 256 };
/* Alltoallv plans evicted having served only the call that made them, before alltoallv planning stops on the
 * communicator (its combinations of shapes do not repeat within the cache). */
enum { CHURN_LIMIT = 8 };

struct shape {
    struct shape *bucket_next;
    struct shape *lru_prev, *lru_next; /* most recently used first */
    uint64_t hash;
    enum coll coll;
    bool in_place;
    MPI_Datatype sbase, rbase; /* alltoallv: base types; allreduce: sbase is the base type */
    MPI_Op op;
    MPI_Count n;               /* alltoall: block bytes; allreduce: elements */
    MPI_Count selems, relems;  /* alltoallv: base elements per item */
    int *v;                    /* alltoallv: sendcounts, sdispls, recvcounts, rdispls (4 P) */
    uint64_t calls;            /* calls of this shape since its plan (if any) was last evicted */
    uint64_t need;             /* calls that go to MPI before the shape is planned */
    int evictions;
    bool unplannable;
    int slot;                  /* alltoall, allreduce: its plan's slot, or -1 */
    uint64_t *mask;            /* alltoallv: the slots whose plans were made with this shape on this rank */
    struct pcd_stats *stats;
    int trial;                 /* alltoall, allreduce: calls of the trial against MPI so far, -1 once decided */
    double trial_plan, trial_mpi; /* this rank's time in the trial's plan calls and MPI calls */
    MPI_Datatype name_base;    /* alltoall: the report names the shape by its first call's type (not a key) */
    MPI_Count name_elems;
};

struct table {
    struct shape **buckets;
    size_t nbuckets, count, max;
    struct shape lru; /* sentinel of the LRU ring */
};

struct slot {
    plancoll_plan plan; /* NULL: free */
    enum coll coll;
    uint64_t last_use;
    uint64_t runs;      /* calls served, the one that made it included */
    struct shape *shape;
    int trial;           /* alltoallv: its trial against MPI, as struct shape's (the slot is what the ranks agree on) */
    double trial_plan, trial_mpi;
    void *spack, *rpack; /* packing buffers of non-contiguous layouts (alltoall, allreduce) */
    size_t pack_bytes;
};

struct cache {
    struct slot *slots;
    int nslots;
    uint64_t clock;       /* advanced by agreed events only: plan runs and creations */
    struct table agreed;  /* alltoall and allreduce shapes: evicted in an order every rank shares */
    struct table local;   /* alltoallv shapes: this rank's own */
    int words;            /* 64-bit words of a slot mask */
    uint64_t *vote;       /* the agreement vector: 1 + words */
    uint64_t v_calls, v_next_check;
    unsigned v_misses, v_churn;
    bool v_off;
};

/* ---- Shapes ------------------------------------------------------------------------------------------- */

static uint64_t mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 29);
}

static uint64_t handle_bits(const void *p, size_t n) {
    uint64_t h = 0;
    memcpy(&h, p, n < sizeof h ? n : sizeof h);
    return h;
}

static bool table_init(struct table *t, size_t max) {
    t->nbuckets = 1;
    while (t->nbuckets < 2 * max) t->nbuckets *= 2;
    t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
    t->count = 0;
    t->max = max;
    t->lru.lru_next = t->lru.lru_prev = &t->lru;
    return t->buckets != NULL;
}

static void lru_unlink(struct shape *s) {
    s->lru_prev->lru_next = s->lru_next;
    s->lru_next->lru_prev = s->lru_prev;
}

static void lru_front(struct table *t, struct shape *s) {
    s->lru_next = t->lru.lru_next;
    s->lru_prev = &t->lru;
    t->lru.lru_next->lru_prev = s;
    t->lru.lru_next = s;
}

static bool mask_empty(const struct cache *k, const struct shape *s) {
    if (s->mask == NULL) return true;
    for (int i = 0; i < k->words; i++)
        if (s->mask[i]) return false;
    return true;
}

static void shape_free(struct shape *s) {
    free(s->v);
    free(s->mask);
    free(s);
}

static void table_remove(struct table *t, struct shape *s) {
    struct shape **p = &t->buckets[s->hash & (t->nbuckets - 1)];
    while (*p != s) p = &(*p)->bucket_next;
    *p = s->bucket_next;
    lru_unlink(s);
    t->count--;
}

/* Forgets the least recently used shape that holds no plan (a shape with a plan stays while the plan does; plans
 * are bounded by the slots). In the agreed table the LRU order is a function of the sequence of keys, the same on
 * every rank, so every rank forgets the same shape at the same call. */
static void table_trim(struct cache *k, struct table *t) {
    for (struct shape *s = t->lru.lru_prev; t->count >= t->max && s != &t->lru;) {
        struct shape *prev = s->lru_prev;
        if (s->slot < 0 && mask_empty(k, s)) {
            table_remove(t, s);
            shape_free(s);
        }
        s = prev;
    }
}

static bool same_key(const struct shape *a, const struct shape *b, int p) {
    if (a->coll != b->coll || a->in_place != b->in_place || a->n != b->n || a->sbase != b->sbase ||
        a->rbase != b->rbase || a->op != b->op || a->selems != b->selems || a->relems != b->relems)
        return false;
    return a->v == NULL || memcmp(a->v, b->v, sizeof(int) * 4 * (size_t)p) == 0;
}

/* The shape of key in t (moved to the front of the LRU), or a new one (NULL without memory: the call then goes to
 * MPI; in the agreed table that would be a rank-local decision, so a failed allocation is treated like any other
 * rank-local failure of a correct program: see docs/dropin.md, Limits). */
static struct shape *lookup(struct cache *k, struct table *t, const struct shape *key, int p, int comm_size) {
    for (struct shape *s = t->buckets[key->hash & (t->nbuckets - 1)]; s; s = s->bucket_next)
        if (s->hash == key->hash && same_key(s, key, p)) {
            if (t->lru.lru_next != s) {
                lru_unlink(s);
                lru_front(t, s);
            }
            return s;
        }
    table_trim(k, t);
    struct shape *s = malloc(sizeof *s);
    if (s == NULL) return NULL;
    *s = *key;
    s->v = NULL;
    s->mask = NULL;
    if (key->v != NULL) {
        s->v = malloc(sizeof(int) * 4 * (size_t)p);
        if (s->v == NULL) {
            free(s);
            return NULL;
        }
        memcpy(s->v, key->v, sizeof(int) * 4 * (size_t)p);
    }
    s->calls = 0;
    s->need = (uint64_t)pcd_settings.after;
    s->evictions = 0;
    s->unplannable = false;
    s->slot = -1;
    s->stats = NULL;
    size_t b = key->hash & (t->nbuckets - 1);
    s->bucket_next = t->buckets[b];
    t->buckets[b] = s;
    lru_front(t, s);
    t->count++;
    if (pcd_settings.report != PCD_REPORT_NONE) {
        char name[128];
        if (key->coll == COLL_ALLTOALL) {
            snprintf(name, sizeof name, "%lldx%s%s", (long long)key->name_elems, pcd_type_name(key->name_base),
                     key->in_place ? ":in_place" : "");
        } else if (key->coll == COLL_ALLREDUCE) {
            snprintf(name, sizeof name, "%lldx%s:%s", (long long)key->n, pcd_type_name(key->sbase),
                     pcd_op_name(key->op));
        } else {
            int ss = 0, rs = 0;
            if (!key->in_place) PMPI_Type_size(key->sbase, &ss);
            PMPI_Type_size(key->rbase, &rs);
            long long total = 0;
            for (int i = 0; i < p; i++)
                total += (long long)key->v[2 * p + i] * key->relems * rs +
                         (key->in_place ? 0 : (long long)key->v[i] * key->selems * ss);
            snprintf(name, sizeof name, "total_bytes=%lld", total);
        }
        s->stats = pcd_stats_get(coll_names[key->coll], comm_size, name);
    }
    return s;
}

/* ---- Per-communicator cache ------------------------------------------------------------------------------ */

static void release_cache(struct pcd_comm *c);

static struct cache *cache_of(struct pcd_comm *c) {
    if (c->blocking != NULL) return c->blocking;
    struct cache *k = calloc(1, sizeof *k);
    if (k == NULL) return NULL;
    k->nslots = pcd_settings.max_plans;
    k->words = (k->nslots + 63) / 64;
    k->slots = calloc((size_t)k->nslots, sizeof *k->slots);
    k->vote = calloc((size_t)k->words + 1, sizeof *k->vote);
    size_t max_shapes = 4 * (size_t)k->nslots + 64;
    bool ok = k->slots && k->vote && table_init(&k->agreed, max_shapes) && table_init(&k->local, max_shapes);
    c->blocking = k;
    if (!ok) {
        release_cache(c);
        return NULL;
    }
    return k;
}

/* Destroys the plan in slot i (collective over the communicator: callers reach here at the same call on every
 * rank) and makes its shape wait longer before it is planned again, so a cache too small for a program's working
 * set of shapes does not plan at every call. */
static void evict(struct cache *k, int i) {
    struct slot *sl = &k->slots[i];
    pcd_enter();
    plancoll_destroy_plan(&sl->plan);
    pcd_leave();
    sl->plan = NULL;
    free(sl->spack);
    free(sl->rpack);
    sl->spack = sl->rpack = NULL;
    sl->pack_bytes = 0;
    struct shape *s = sl->shape;
    if (sl->coll == COLL_ALLTOALLV) {
        if (sl->runs <= 1) k->v_churn++;
        if (k->v_churn >= CHURN_LIMIT) k->v_off = true;
        if (s && s->mask) s->mask[i / 64] &= ~(UINT64_C(1) << (i % 64));
    } else if (s) {
        s->slot = -1;
        if (s->evictions < 10) s->evictions++;
        s->calls = 0;
        s->need = ((uint64_t)pcd_settings.after + 1) * (UINT64_C(1) << s->evictions) - 1;
    }
    sl->shape = NULL;
}

/* A slot for a new plan: the lowest free one, else the least recently used plan's, evicted. The same on every
 * rank: slots are filled and stamped only at agreed events. */
static int take_slot(struct cache *k) {
    int victim = 0;
    for (int i = 0; i < k->nslots; i++) {
        if (k->slots[i].plan == NULL) return i;
        if (k->slots[i].last_use < k->slots[victim].last_use) victim = i;
    }
    evict(k, victim);
    return victim;
}

static void table_clear(struct table *t) {
    if (t->buckets == NULL) return;
    for (struct shape *s = t->lru.lru_next; s != &t->lru;) {
        struct shape *next = s->lru_next;
        shape_free(s);
        s = next;
    }
    free(t->buckets);
    t->buckets = NULL;
}

/* Release hook (MPI_Comm_free or MPI_Finalize, every rank of the communicator alike): destroys the plans in slot
 * order. */
static void release_cache(struct pcd_comm *c) {
    struct cache *k = c->blocking;
    if (k == NULL) return;
    for (int i = 0; k->slots && i < k->nslots; i++)
        if (k->slots[i].plan != NULL) evict(k, i);
    table_clear(&k->agreed);
    table_clear(&k->local);
    free(k->slots);
    free(k->vote);
    free(k);
    c->blocking = NULL;
}

__attribute__((constructor)) static void register_blocking(void) { pcd_on_release(release_cache); }

/* ---- Helpers ------------------------------------------------------------------------------------------- */

/* ---- Signatures of named types without MPI calls -------------------------------------------------------- *
 * pcd_type_signature asks MPI four questions about a named type (envelope, size, extent, true extent): about 80 ns
 * per call in MPICH, most of the layer's cost on a small call. Named types never change, so their signatures (and
 * base sizes) are kept here, in a table keyed by handle, filled on first use; derived types go to
 * pcd_type_signature (which keeps its analysis on the type). */
struct named_sig {
    MPI_Datatype type;
    bool used;
    struct pcd_signature sig;
    int size;
};
enum { NAMED_SLOTS = 256 };
static struct named_sig named[NAMED_SLOTS];
static bool named_ready;

static size_t named_index(MPI_Datatype t) { return (size_t)(mix(0, handle_bits(&t, sizeof t)) & (NAMED_SLOTS - 1)); }

static void named_fill(void) {
    const MPI_Datatype types[] = {
        MPI_CHAR, MPI_SIGNED_CHAR, MPI_UNSIGNED_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED_SHORT, MPI_INT, MPI_UNSIGNED,
        MPI_LONG, MPI_UNSIGNED_LONG, MPI_LONG_LONG, MPI_UNSIGNED_LONG_LONG, MPI_FLOAT, MPI_DOUBLE, MPI_LONG_DOUBLE,
        MPI_C_BOOL, MPI_INT8_T, MPI_INT16_T, MPI_INT32_T, MPI_INT64_T, MPI_UINT8_T, MPI_UINT16_T, MPI_UINT32_T,
        MPI_UINT64_T, MPI_C_FLOAT_COMPLEX, MPI_C_DOUBLE_COMPLEX, MPI_C_LONG_DOUBLE_COMPLEX, MPI_AINT, MPI_OFFSET,
        MPI_COUNT, MPI_WCHAR, MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX, MPI_DOUBLE_COMPLEX,
        MPI_LOGICAL, MPI_CHARACTER, MPI_2INT, MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_SHORT_INT,
        MPI_LONG_DOUBLE_INT, MPI_2REAL, MPI_2DOUBLE_PRECISION, MPI_2INTEGER, MPI_PACKED};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        struct pcd_signature sig;
        int size;
        /* MPI_DATATYPE_NULL stands for types this MPI was built without (Fortran ones) */
        if (types[i] == MPI_DATATYPE_NULL || !pcd_type_signature(types[i], &sig) ||
            PMPI_Type_size(sig.base, &size) != MPI_SUCCESS)
            continue;
        size_t j = named_index(types[i]);
        while (named[j].used && named[j].type != types[i]) j = (j + 1) & (NAMED_SLOTS - 1);
        named[j] = (struct named_sig){.type = types[i], .used = true, .sig = sig, .size = size};
    }
    named_ready = true;
}

static const struct named_sig *named_find(MPI_Datatype t) {
    for (size_t j = named_index(t);; j = (j + 1) & (NAMED_SLOTS - 1)) {
        if (!named[j].used) return NULL;
        if (named[j].type == t) return &named[j];
    }
}

/* pcd_type_signature, and the size of the base type, with no MPI call for named types. */
static bool signature(MPI_Datatype t, struct pcd_signature *sig, int *base_size) {
    if (!named_ready) named_fill();
    const struct named_sig *n = named_find(t);
    if (n != NULL) {
        *sig = n->sig;
        *base_size = n->size;
        return true;
    }
    if (!pcd_type_signature(t, sig)) return false;
    n = named_find(sig->base);
    if (n != NULL) *base_size = n->size;
    else if (PMPI_Type_size(sig->base, base_size) != MPI_SUCCESS) return false;
    return true;
}

/* The size in bytes of count items of t (the alltoall key: sizes are what MPI makes agree, whatever base types the
 * ranks use: MPI_2INT against pairs of MPI_INT, MPI_PACKED or MPI_BYTE against anything), and t's signature. */
static bool block_bytes(MPI_Datatype t, int count, struct pcd_signature *sig, MPI_Count *bytes) {
    int size;
    if (!signature(t, sig, &size)) return false;
    *bytes = (MPI_Count)count * sig->elements * size;
    return true;
}

static double now_if(const struct pcd_stats *s) { return s ? pcd_now() : -1.0; }
static double since(const struct pcd_stats *s, double t0) { return s ? pcd_now() - t0 : -1.0; }

/* The call's plan failed to run (an MPI failure inside plancoll): the data may be half moved, so MPI cannot be
 * called instead; the error goes to the communicator's error handler as MPI's own would. (plancoll_strerror and
 * plancoll_error_detail are defined in src/base, which scripts/check-layers.py does not let the layer call; the
 * code is in plancoll_codes.h.) */
static int execution_failed(MPI_Comm comm, int rc) {
    fprintf(stderr, "plancoll-dropin: a planned collective failed with plancoll error code %d\n", rc);
    PMPI_Comm_call_errhandler(comm, MPI_ERR_OTHER);
    return MPI_ERR_OTHER;
}

static void note_algorithm(struct shape *s, plancoll_plan plan) {
    if (s->stats == NULL) return;
    char spec[256];
    pcd_enter();
    int rc = plancoll_plan_spec(plan, spec, sizeof spec);
    pcd_leave();
    pcd_stats_algorithm(s->stats, rc == PLANCOLL_SUCCESS ? spec : "unknown");
}

/* Packs count items of type t at buf into pack (size bytes, MPI's packed form, which for MPICH on one machine is
 * the raw bytes in signature order; dropin.h: through the int calls where the MPI has no large counts). */
static int pack(const void *buf, MPI_Count count, MPI_Datatype t, void *packbuf, size_t bytes, MPI_Comm comm) {
    MPI_Count pos = 0;
    return pcd_pack(buf, count, t, packbuf, (MPI_Count)bytes, &pos, comm);
}

static int unpack(const void *packbuf, size_t bytes, void *buf, MPI_Count count, MPI_Datatype t, MPI_Comm comm) {
    MPI_Count pos = 0;
    return pcd_unpack(packbuf, (MPI_Count)bytes, &pos, buf, count, t, comm);
}

/* A packing buffer of bytes in *slot_buf, made at plan time (or the first call of the shape that needs it, if its
 * layout changed since: then once). NULL when there is no memory. */
static void *pack_buffer(void **slot_buf, size_t bytes) {
    if (*slot_buf == NULL) *slot_buf = malloc(bytes ? bytes : 1);
    return *slot_buf;
}

/* Checks that MPI's packed form of count items of t is exactly their bytes (else the layer cannot read it as raw
 * data). */
static bool packs_raw(MPI_Datatype t, MPI_Count count, size_t bytes, MPI_Comm comm) {
    MPI_Count size = 0;
    return pcd_pack_size(count, t, comm, &size) == MPI_SUCCESS && size == (MPI_Count)bytes;
}

/* Out of memory while running a plan whose layout needs packing: the other ranks are inside the plan already, so
 * there is no way back to MPI for this rank alone. */
static int no_pack_memory(MPI_Comm comm) {
    fprintf(stderr, "plancoll-dropin: out of memory for a packing buffer of a planned collective\n");
    PMPI_Comm_call_errhandler(comm, MPI_ERR_NO_MEM);
    return MPI_ERR_NO_MEM;
}

/* ---- MPI_Alltoall ------------------------------------------------------------------------------------ */

/* Runs an alltoall plan (blocks of n bytes, p ranks) on the call's buffers, packing the sides whose layout is not
 * contiguous into the slot's buffers. */
/* ---- The trial against MPI (docs/dropin.md, "Never slower than MPI") ----------------------------------------
 * The planner's choice rests on a model; MPI's own call is a candidate, but a model can still rank it wrongly on a
 * machine or shape it was not calibrated for. So once a shape's plan is made, its next 2 TRIAL_CALLS calls
 * alternate between the plan and MPI, each timed, and at the call after them the ranks compare the slowest rank's
 * totals with one PMPI_Allreduce: the plan stays only if it was faster, else it is destroyed and the shape goes to
 * MPI from then on. Every step is counted in calls of the shape, which are the same on every rank (alltoall and
 * allreduce keys are agreed), so every rank takes the same branch at the same call; alltoallv counts the agreed
 * uses of the plan's slot instead (MPI_Alltoallv). A program that calls a shape fewer times never reaches the
 * verdict and keeps the plan. */
enum { TRIAL_CALLS = 3 };
enum trial_step { RUN_PLAN, RUN_PLAN_TIMED, RUN_MPI_TIMED, RUN_MPI_LOST };

static enum trial_step trial_step(struct cache *k, struct shape *s, MPI_Comm comm) {
    if (s->trial < 0) return RUN_PLAN;
    if (s->trial < 2 * TRIAL_CALLS) return s->trial++ % 2 ? RUN_MPI_TIMED : RUN_PLAN_TIMED;
    s->trial = -1;
    double mine[2] = {s->trial_plan, s->trial_mpi}, slowest[2];
    if (PMPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, comm) != MPI_SUCCESS || slowest[0] < slowest[1])
        return RUN_PLAN;
    evict(k, s->slot);
    s->unplannable = true; /* for good: MPI won on this machine, with this plan */
    pcd_stats_algorithm(s->stats, "mpi(won_trial)");
    return RUN_MPI_LOST;
}

/* A fresh plan's trial starts at the call after the one that made it (that one pays the plan's first touches). */
static void trial_reset(struct shape *s) {
    s->trial = 0;
    s->trial_plan = s->trial_mpi = 0.0;
}

static int run_alltoall(struct slot *sl, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                        const struct pcd_signature *ssig, void *recvbuf, int recvcount, MPI_Datatype recvtype,
                        const struct pcd_signature *rsig, bool in_place, int p, MPI_Comm comm) {
    const size_t total = sl->pack_bytes * (size_t)p;
    const void *s = in_place ? MPI_IN_PLACE : sendbuf;
    void *r = recvbuf;
    const MPI_Count ritems = (MPI_Count)recvcount * p;
    int rc;
    if (!in_place && !ssig->contiguous) {
        const MPI_Count sitems = (MPI_Count)sendcount * p;
        void *b = pack_buffer(&sl->spack, total);
        if (b == NULL || !packs_raw(sendtype, sitems, total, comm)) return no_pack_memory(comm);
        if ((rc = pack(sendbuf, sitems, sendtype, b, total, comm)) != MPI_SUCCESS) return rc;
        s = b;
    }
    if (!rsig->contiguous) {
        void *b = pack_buffer(&sl->rpack, total);
        if (b == NULL || !packs_raw(recvtype, ritems, total, comm)) return no_pack_memory(comm);
        if (in_place && (rc = pack(recvbuf, ritems, recvtype, b, total, comm)) != MPI_SUCCESS) return rc;
        r = b;
    }
    pcd_enter();
    rc = plancoll_execute_buffers(sl->plan, s, r);
    pcd_leave();
    if (rc != PLANCOLL_SUCCESS) return execution_failed(comm, rc);
    if (!rsig->contiguous) return unpack(r, total, recvbuf, ritems, recvtype, comm);
    return MPI_SUCCESS;
}

int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                 MPI_Datatype recvtype, MPI_Comm comm) {
    if (!pcd_takes_calls() || comm == MPI_COMM_NULL)
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    struct pcd_comm *c = pcd_comm_find(comm);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    struct shape key = {.coll = COLL_ALLTOALL, .in_place = in_place, .op = MPI_OP_NULL};
    struct pcd_signature ssig = {0}, rsig;
    MPI_Count sbytes = 0;
    /* What the layer can take. Anything else, erroneous calls included, goes to MPI unchanged; MPI makes these
     * tests come out alike on every rank of a correct program (signatures, hence sizes, match; MPI_IN_PLACE is
     * given on all ranks or none), so no rank plans while another calls MPI. */
    const bool takeable = (c == NULL || !c->to_mpi) && recvcount > 0 &&
                          block_bytes(recvtype, recvcount, &rsig, &key.n) && key.n <= INT_MAX &&
                          (in_place || (sendbuf != recvbuf && sendcount >= 0 &&
                                        block_bytes(sendtype, sendcount, &ssig, &sbytes) && sbytes == key.n));
    struct cache *k = NULL;
    struct shape *s = NULL;
    key.hash = mix(mix(COLL_ALLTOALL, (uint64_t)key.n), in_place);
    if (takeable) {
        key.name_base = rsig.base;
        key.name_elems = (MPI_Count)recvcount * rsig.elements;
    }
    if (c == NULL || !takeable || (k = cache_of(c)) == NULL ||
        (s = lookup(k, &k->agreed, &key, c->size, c->size)) == NULL) {
        /* A communicator's first call goes to MPI and only then gets state (an invalid handle is MPI's to judge);
         * it is counted, so its shape is planned at the same call on every rank. */
        double t0 = c == NULL && pcd_settings.report != PCD_REPORT_NONE ? pcd_now() : -1.0;
        int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        if (c == NULL && rc == MPI_SUCCESS && takeable && (c = pcd_comm_create(comm)) != NULL && !c->to_mpi &&
            (k = cache_of(c)) != NULL && (s = lookup(k, &k->agreed, &key, c->size, c->size)) != NULL) {
            s->calls++;
            pcd_stats_call(s->stats, false, s->stats ? pcd_now() - t0 : -1.0);
        }
        return rc;
    }
    s->calls++;
    if (s->slot < 0 && (s->unplannable || s->calls <= s->need)) {
        double t0 = now_if(s->stats);
        int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        pcd_stats_call(s->stats, false, since(s->stats, t0));
        return rc;
    }
    double t0 = now_if(s->stats);
    bool made_now = false;
    if (s->slot < 0) {
        /* The shape's turn to be planned: on every rank at this call. */
        const size_t total = (size_t)key.n * (size_t)c->size;
        int i = take_slot(k);
        struct slot *sl = &k->slots[i];
        bool ok = true;
        if (!in_place && !ssig.contiguous)
            ok = pack_buffer(&sl->spack, total) != NULL &&
                 packs_raw(sendtype, (MPI_Count)sendcount * c->size, total, comm);
        if (!rsig.contiguous)
            ok = ok && pack_buffer(&sl->rpack, total) != NULL &&
                 packs_raw(recvtype, (MPI_Count)recvcount * c->size, total, comm);
        const void *ps = in_place ? MPI_IN_PLACE : ssig.contiguous ? sendbuf : sl->spack;
        void *pr = rsig.contiguous ? recvbuf : sl->rpack;
        /* A rank without its buffers passes NULL, so plan creation fails on every rank (plancoll agrees on bad
         * arguments) instead of this rank dropping out of a collective the others are in. */
        pcd_enter();
        int prc = plancoll_plan_alltoall(ok ? ps : NULL, (int)key.n, MPI_BYTE, ok ? pr : NULL, (int)key.n,
                                         MPI_BYTE, comm, pcd_plan_flags(false), &sl->plan);
        pcd_leave();
        if (prc != PLANCOLL_SUCCESS) {
            free(sl->spack);
            free(sl->rpack);
            sl->spack = sl->rpack = NULL;
            sl->plan = NULL;
            s->unplannable = true;
            int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
            pcd_stats_call(s->stats, false, since(s->stats, t0));
            return rc;
        }
        sl->coll = COLL_ALLTOALL;
        sl->shape = s;
        sl->runs = 0;
        sl->pack_bytes = (size_t)key.n;
        s->slot = i;
        note_algorithm(s, sl->plan);
        trial_reset(s);
        made_now = true;
        t0 = now_if(s->stats); /* after_us is the time of running plans, not of making them */
    }
    const enum trial_step step = made_now ? RUN_PLAN : trial_step(k, s, comm);
    if (step == RUN_MPI_TIMED || step == RUN_MPI_LOST) {
        double t1 = pcd_now();
        int rc = PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
        if (step == RUN_MPI_TIMED) s->trial_mpi += pcd_now() - t1;
        pcd_stats_call(s->stats, false, since(s->stats, t0));
        return rc;
    }
    const double t1 = step == RUN_PLAN_TIMED ? pcd_now() : 0.0;
    struct slot *sl = &k->slots[s->slot];
    sl->last_use = ++k->clock;
    sl->runs++;
    int rc;
    if (!in_place && ssig.contiguous && rsig.contiguous) {
        pcd_enter();
        rc = plancoll_execute_buffers(sl->plan, sendbuf, recvbuf);
        pcd_leave();
        if (rc != PLANCOLL_SUCCESS) rc = execution_failed(comm, rc);
    } else {
        rc = run_alltoall(sl, sendbuf, sendcount, sendtype, &ssig, recvbuf, recvcount, recvtype, &rsig, in_place,
                          c->size, comm);
    }
    if (step == RUN_PLAN_TIMED) s->trial_plan += pcd_now() - t1;
    pcd_stats_call(s->stats, true, since(s->stats, t0));
    return rc;
}

/* Whether op is one of MPI's predefined reduction ops. pcd_op_name compares a dozen handles; the last predefined op
 * seen is remembered (predefined handles are constants, so that answer never goes stale; a user op never is: its
 * handle may be freed and reused). */
static bool predefined_op(MPI_Op op) {
    static MPI_Op last = MPI_OP_NULL;
    if (op == last && op != MPI_OP_NULL) return true;
    if (strcmp(pcd_op_name(op), "user_op") == 0) return false;
    last = op;
    return true;
}

/* ---- MPI_Allreduce ----------------------------------------------------------------------------------- */

/* Runs an allreduce plan (made in place, on pack_bytes bytes) on the call's buffers. */
static int run_allreduce(struct slot *sl, const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                         const struct pcd_signature *sig, bool in_place, MPI_Comm comm) {
    const size_t bytes = sl->pack_bytes;
    int rc;
    void *r = recvbuf;
    if (sig->contiguous) {
        if (!in_place) memcpy(recvbuf, sendbuf, bytes);
    } else {
        void *b = pack_buffer(&sl->rpack, bytes);
        if (b == NULL || !packs_raw(datatype, count, bytes, comm)) return no_pack_memory(comm);
        if ((rc = pack(in_place ? recvbuf : sendbuf, count, datatype, b, bytes, comm)) != MPI_SUCCESS) return rc;
        r = b;
    }
    pcd_enter();
    rc = plancoll_execute_buffers(sl->plan, MPI_IN_PLACE, r);
    pcd_leave();
    if (rc != PLANCOLL_SUCCESS) return execution_failed(comm, rc);
    if (!sig->contiguous) return unpack(r, bytes, recvbuf, count, datatype, comm);
    return MPI_SUCCESS;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
    if (!pcd_takes_calls() || comm == MPI_COMM_NULL) return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
    struct pcd_comm *c = pcd_comm_find(comm);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    struct shape key = {.coll = COLL_ALLREDUCE, .op = op};
    struct pcd_signature sig;
    /* MPI requires the same count, datatype (signature) and op on every rank, so these tests agree. User-defined
     * ops go to MPI: an op handle freed and created again names another function on one rank and not on another,
     * and MPI_Op_free is local, so no collective can drop the plans made with it. */
    int base_size = 0;
    /* sendbuf == recvbuf (not MPI_IN_PLACE) is erroneous, and MPICH reports it: MPI's to judge. */
    const bool takeable = (c == NULL || !c->to_mpi) && count > 0 && (in_place || sendbuf != recvbuf) &&
                          signature(datatype, &sig, &base_size) &&
                          predefined_op(op) && (key.n = (MPI_Count)count * sig.elements) <= INT_MAX && key.n > 0;
    key.sbase = takeable ? sig.base : MPI_DATATYPE_NULL;
    key.hash = mix(mix(mix(COLL_ALLREDUCE, (uint64_t)key.n), handle_bits(&key.sbase, sizeof key.sbase)),
                   handle_bits(&op, sizeof op));
    struct cache *k = NULL;
    struct shape *s = NULL;
    if (c == NULL || !takeable || (k = cache_of(c)) == NULL ||
        (s = lookup(k, &k->agreed, &key, c->size, c->size)) == NULL) {
        double t0 = c == NULL && pcd_settings.report != PCD_REPORT_NONE ? pcd_now() : -1.0;
        int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        if (c == NULL && rc == MPI_SUCCESS && takeable && (c = pcd_comm_create(comm)) != NULL && !c->to_mpi &&
            (k = cache_of(c)) != NULL && (s = lookup(k, &k->agreed, &key, c->size, c->size)) != NULL) {
            s->calls++;
            pcd_stats_call(s->stats, false, s->stats ? pcd_now() - t0 : -1.0);
        }
        return rc;
    }
    s->calls++;
    if (s->slot < 0 && (s->unplannable || s->calls <= s->need)) {
        double t0 = now_if(s->stats);
        int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        pcd_stats_call(s->stats, false, since(s->stats, t0));
        return rc;
    }
    double t0 = now_if(s->stats);
    bool made_now = false;
    if (s->slot < 0) {
        const size_t bytes = (size_t)key.n * (size_t)base_size;
        int i = take_slot(k);
        struct slot *sl = &k->slots[i];
        bool ok = sig.contiguous ||
                  (pack_buffer(&sl->rpack, bytes) != NULL && packs_raw(datatype, count, bytes, comm));
        void *pr = sig.contiguous ? recvbuf : sl->rpack;
        /* In place whatever this call is: in-place-ness is each rank's own, and one plan serves both. */
        pcd_enter();
        int prc = plancoll_plan_allreduce(MPI_IN_PLACE, ok ? pr : NULL, (int)key.n, sig.base, op, comm,
                                          pcd_plan_flags(false), &sl->plan);
        pcd_leave();
        if (prc != PLANCOLL_SUCCESS) {
            free(sl->rpack);
            sl->rpack = NULL;
            sl->plan = NULL;
            s->unplannable = true;
            int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
            pcd_stats_call(s->stats, false, since(s->stats, t0));
            return rc;
        }
        sl->coll = COLL_ALLREDUCE;
        sl->shape = s;
        sl->runs = 0;
        sl->pack_bytes = bytes;
        s->slot = i;
        note_algorithm(s, sl->plan);
        trial_reset(s);
        made_now = true;
        t0 = now_if(s->stats); /* after_us is the time of running plans, not of making them */
    }
    const enum trial_step step = made_now ? RUN_PLAN : trial_step(k, s, comm);
    if (step == RUN_MPI_TIMED || step == RUN_MPI_LOST) {
        double t1 = pcd_now();
        int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        if (step == RUN_MPI_TIMED) s->trial_mpi += pcd_now() - t1;
        pcd_stats_call(s->stats, false, since(s->stats, t0));
        return rc;
    }
    const double t1 = step == RUN_PLAN_TIMED ? pcd_now() : 0.0;
    struct slot *sl = &k->slots[s->slot];
    sl->last_use = ++k->clock;
    sl->runs++;
    int rc;
    if (sig.contiguous) {
        if (!in_place) memcpy(recvbuf, sendbuf, sl->pack_bytes);
        pcd_enter();
        rc = plancoll_execute_buffers(sl->plan, MPI_IN_PLACE, recvbuf);
        pcd_leave();
        if (rc != PLANCOLL_SUCCESS) rc = execution_failed(comm, rc);
    } else {
        rc = run_allreduce(sl, sendbuf, recvbuf, count, datatype, &sig, in_place, comm);
    }
    if (step == RUN_PLAN_TIMED) s->trial_plan += pcd_now() - t1;
    pcd_stats_call(s->stats, true, since(s->stats, t0));
    return rc;
}

/* ---- MPI_Alltoallv ----------------------------------------------------------------------------------- */

/* This rank's alltoallv shape as a key, when the layer could plan it: single-type contiguous layouts, counts and
 * displacements that are not negative and still fit an int once scaled to base elements. Local: another rank's
 * answer may differ, which the agreement takes care of. O(P). */
static bool alltoallv_key(const int sendcounts[], const int sdispls[], MPI_Datatype sendtype, const int recvcounts[],
                          const int rdispls[], MPI_Datatype recvtype, bool in_place, int p, int *scratch,
                          struct shape *key) {
    struct pcd_signature ss = {0}, rs;
    int size;
    if (recvcounts == NULL || rdispls == NULL || !signature(recvtype, &rs, &size) || !rs.contiguous) return false;
    if (!in_place && (sendcounts == NULL || sdispls == NULL || !signature(sendtype, &ss, &size) || !ss.contiguous))
        return false;
    key->coll = COLL_ALLTOALLV;
    key->in_place = in_place;
    key->rbase = rs.base;
    key->relems = rs.elements;
    key->sbase = in_place ? MPI_DATATYPE_NULL : ss.base;
    key->selems = in_place ? 0 : ss.elements;
    key->op = MPI_OP_NULL;
    key->n = 0;
    uint64_t h = mix(mix(COLL_ALLTOALLV, in_place), (uint64_t)rs.elements);
    h = mix(mix(h, handle_bits(&rs.base, sizeof rs.base)), handle_bits(&ss.base, sizeof ss.base));
    h = mix(h, (uint64_t)ss.elements);
    const MPI_Count rlim = rs.elements ? INT_MAX / rs.elements : INT_MAX;
    const MPI_Count slim = ss.elements ? INT_MAX / ss.elements : INT_MAX;
    for (int i = 0; i < p; i++) {
        int a = in_place ? 0 : sendcounts[i], b = in_place ? 0 : sdispls[i], c = recvcounts[i], d = rdispls[i];
        if (a < 0 || b < 0 || c < 0 || d < 0 || a > slim || b > slim || c > rlim || d > rlim) return false;
        scratch[i] = a;
        scratch[p + i] = b;
        scratch[2 * p + i] = c;
        scratch[3 * p + i] = d;
        h = mix(h, ((uint64_t)(unsigned)a << 32 | (unsigned)b) ^ ((uint64_t)(unsigned)c << 16 | (uint64_t)(unsigned)d << 48));
    }
    key->v = scratch;
    key->hash = h;
    return true;
}

/* The key's arrays are built here before the look-up copies them (only a new shape does). */
static int *key_scratch(int p) {
    static _Thread_local int *scratch;
    static _Thread_local int scratch_p;
    if (scratch_p < p) {
        int *n = realloc(scratch, sizeof(int) * 4 * (size_t)p);
        if (n == NULL) return NULL;
        scratch = n;
        scratch_p = p;
    }
    return scratch;
}

/* Makes the alltoallv plan of this call on every rank (they all voted for it); its slot, or -1 when plan
 * creation failed (on every rank alike). */
static int plan_alltoallv(struct cache *k, struct shape *s, int p, const void *sendbuf, void *recvbuf,
                           MPI_Comm comm) {
    int i = take_slot(k);
    struct slot *sl = &k->slots[i];
    int *scaled = malloc(sizeof(int) * 4 * (size_t)p);
    if (scaled)
        for (int j = 0; j < p; j++) {
            scaled[j] = (int)(s->v[j] * s->selems);
            scaled[p + j] = (int)(s->v[p + j] * s->selems);
            scaled[2 * p + j] = (int)(s->v[2 * p + j] * s->relems);
            scaled[3 * p + j] = (int)(s->v[3 * p + j] * s->relems);
        }
    /* Without memory this rank passes NULL arrays: plan creation then fails on every rank alike. */
    const int *sc = scaled ? scaled : NULL, *sd = scaled ? scaled + p : NULL;
    const int *rc = scaled ? scaled + 2 * p : NULL, *rd = scaled ? scaled + 3 * p : NULL;
    pcd_enter();
    int prc = plancoll_plan_alltoallv(s->in_place ? MPI_IN_PLACE : sendbuf, sc, sd,
                                      s->in_place ? s->rbase : s->sbase, recvbuf, rc, rd, s->rbase, comm,
                                      pcd_plan_flags(false), &sl->plan);
    pcd_leave();
    free(scaled);
    if (prc != PLANCOLL_SUCCESS) {
        sl->plan = NULL;
        s->unplannable = true;
        return -1;
    }
    sl->coll = COLL_ALLTOALLV;
    sl->runs = 0;
    sl->trial = 0;
    sl->trial_plan = sl->trial_mpi = 0.0;
    sl->shape = NULL;
    if (s->mask == NULL) s->mask = calloc((size_t)k->words, sizeof *s->mask);
    if (s->mask) { /* without it this rank simply never finds the plan again: the vote then misses, agreed */
        s->mask[i / 64] |= UINT64_C(1) << (i % 64);
        sl->shape = s;
    }
    note_algorithm(s, sl->plan);
    return i;
}

static int run_alltoallv(struct cache *k, int i, const void *sendbuf, void *recvbuf, bool in_place, MPI_Comm comm) {
    struct slot *sl = &k->slots[i];
    sl->last_use = ++k->clock;
    sl->runs++;
    pcd_enter();
    int rc = plancoll_execute_buffers(sl->plan, in_place ? MPI_IN_PLACE : sendbuf, recvbuf);
    pcd_leave();
    return rc == PLANCOLL_SUCCESS ? MPI_SUCCESS : execution_failed(comm, rc);
}

int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[], MPI_Datatype sendtype,
                  void *recvbuf, const int recvcounts[], const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
#define PASS_ALLTOALLV() \
    PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm)
    if (!pcd_takes_calls() || comm == MPI_COMM_NULL) return PASS_ALLTOALLV();
    struct pcd_comm *c = pcd_comm_find(comm);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    struct cache *k;
    struct shape key, *s = NULL;
    if (c == NULL) {
        double t0 = pcd_settings.report != PCD_REPORT_NONE ? pcd_now() : -1.0;
        int rc = PASS_ALLTOALLV();
        if (rc != MPI_SUCCESS || (c = pcd_comm_create(comm)) == NULL || c->to_mpi || (k = cache_of(c)) == NULL)
            return rc;
        k->v_calls = 1; /* the communicator's first alltoallv: every rank counts it */
        int *scratch = key_scratch(c->size);
        if (scratch && (in_place || sendbuf != recvbuf) && alltoallv_key(sendcounts, sdispls, sendtype, recvcounts, rdispls, recvtype, in_place,
                                     c->size, scratch, &key) &&
            (s = lookup(k, &k->local, &key, c->size, c->size)) != NULL) {
            s->calls++;
            pcd_stats_call(s->stats, false, s->stats ? pcd_now() - t0 : -1.0);
        }
        return rc;
    }
    if (c->to_mpi || (k = cache_of(c)) == NULL) return PASS_ALLTOALLV();
    /* From here on every rank takes the same branch: the vote is taken or skipped from agreed counters only, and
     * a rank whose own call the layer cannot take (a layout it does not plan, a negative count: erroneous calls
     * included, MPI judges them after) still votes, against. */
    const uint64_t idx = k->v_calls++;
    int *scratch = key_scratch(c->size);
    if (scratch && (in_place || sendbuf != recvbuf) && alltoallv_key(sendcounts, sdispls, sendtype, recvcounts, rdispls, recvtype, in_place, c->size,
                                 scratch, &key))
        s = lookup(k, &k->local, &key, c->size, c->size);
    if (s) s->calls++;
    struct pcd_stats *st = s ? s->stats : NULL;
    double t0 = now_if(st);
    if (k->v_off || idx < (uint64_t)pcd_settings.after || idx < k->v_next_check) {
        int rc = PASS_ALLTOALLV();
        pcd_stats_call(st, false, since(st, t0));
        return rc;
    }
    uint64_t *vote = k->vote;
    memset(vote, 0, sizeof *vote * (size_t)(k->words + 1));
    if (s && !s->unplannable && s->calls > s->need) vote[0] = 1;
    if (s && s->mask) memcpy(vote + 1, s->mask, sizeof *vote * (size_t)k->words);
    if (PMPI_Allreduce(MPI_IN_PLACE, vote, k->words + 1, MPI_UINT64_T, MPI_BAND, comm) != MPI_SUCCESS) {
        int rc = PASS_ALLTOALLV();
        pcd_stats_call(st, false, since(st, t0));
        return rc;
    }
    for (int w = 0; w < k->words; w++)
        if (vote[1 + w]) { /* a plan made with every rank's present shape */
            k->v_misses = 0;
            k->v_next_check = 0;
            const int i = 64 * w + __builtin_ctzll(vote[1 + w]);
            struct slot *sl = &k->slots[i];
            /* The trial against MPI (above MPI_Alltoall), counted in the slot's agreed uses. */
            enum trial_step step = RUN_PLAN;
            if (sl->trial >= 0 && sl->trial < 2 * TRIAL_CALLS) {
                step = sl->trial++ % 2 ? RUN_MPI_TIMED : RUN_PLAN_TIMED;
            } else if (sl->trial >= 0) {
                sl->trial = -1;
                double mine[2] = {sl->trial_plan, sl->trial_mpi}, slowest[2];
                if (PMPI_Allreduce(mine, slowest, 2, MPI_DOUBLE, MPI_MAX, comm) == MPI_SUCCESS &&
                    slowest[0] >= slowest[1]) {
                    evict(k, i);
                    if (s) s->unplannable = true; /* s holds bit i on every rank: each drops its own shape */
                    pcd_stats_algorithm(st, "mpi(won_trial)");
                    step = RUN_MPI_LOST;
                }
            }
            if (step == RUN_MPI_TIMED || step == RUN_MPI_LOST) {
                if (step == RUN_MPI_TIMED) {
                    sl->last_use = ++k->clock;
                    sl->runs++;
                }
                double t1 = pcd_now();
                int rc = PASS_ALLTOALLV();
                if (step == RUN_MPI_TIMED) sl->trial_mpi += pcd_now() - t1;
                pcd_stats_call(st, false, since(st, t0));
                return rc;
            }
            const double t1 = step == RUN_PLAN_TIMED ? pcd_now() : 0.0;
            int rc = run_alltoallv(k, i, sendbuf, recvbuf, in_place, comm);
            if (step == RUN_PLAN_TIMED) sl->trial_plan += pcd_now() - t1;
            pcd_stats_call(st, true, since(st, t0));
            return rc;
        }
    if (vote[0] & 1) { /* every rank's shape has repeated: plan this combination */
        k->v_misses = 0;
        k->v_next_check = 0;
        int i = plan_alltoallv(k, s, c->size, sendbuf, recvbuf, comm);
        if (i >= 0) {
            t0 = now_if(st);
            int rc = run_alltoallv(k, i, sendbuf, recvbuf, in_place, comm);
            pcd_stats_call(st, true, since(st, t0));
            return rc;
        }
    } else if (++k->v_misses >= MISSES_BEFORE_BACKOFF) {
        /* The vote keeps failing (shapes that do not repeat on some rank): vote less and less often. */
        unsigned e = k->v_misses - MISSES_BEFORE_BACKOFF + 1;
        uint64_t gap = e >= 8 ? MAX_BACKOFF_GAP : UINT64_C(1) << e;
        k->v_next_check = idx + (gap < MAX_BACKOFF_GAP ? gap : MAX_BACKOFF_GAP);
    }
    int rc = PASS_ALLTOALLV();
    pcd_stats_call(st, false, since(st, t0));
    return rc;
#undef PASS_ALLTOALLV
}
