/* Nonblocking plans (plancoll_start, _start_buffers, _test, _wait, _waitall):
 * - start is local: rank 0 starts a plan and then sends synchronously to rank 1, which receives that message
 *   before it starts the plan (a start that waited for rank 1 would deadlock: caught by a deadline, not a hang);
 * - two and three plans active at once on one communicator (two of them the same algorithm, so only the plans'
 *   tag slots keep their messages apart) and on a sub-communicator, completed in reverse order;
 * - a test loop with computation between the tests; start_buffers on new data three rounds in a row;
 * - node-shared algorithms: two started plans of the same one on a communicator (they share the node's segment),
 *   completed in reverse order, with a blocking segment user executed in between, and heap send buffers;
 * - transposes: three started at once (the composite over alltoall.mpml, the planner's choice in place, the fused
 *   strategy forced), completed in reverse order, three rounds; then start_buffers in place;
 * - every algorithm forced in turn: the steppable ones plan with PLANCOLL_NONBLOCKING and run all of the above,
 *   the others are refused with PLANCOLL_NONBLOCKING and, planned without it, cannot be started;
 * - errors: start, execute or destroy while active (the plan stays intact and completes correctly), waitall with
 *   NULL entries, test on an inactive plan.
 * Every result is checked exactly against values computed from (source, destination, index, round). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "testlib.h"

/* The algorithms that run as schedules of steps (docs: plancoll.h, "Nonblocking plans"). MPI's blocking forms
 * (*.native_blocking) are not offered for started plans, but forced they start as MPI's persistent form. */
static const char *const steppable[] = {
    "alltoall.native_blocking", "alltoallv.native_blocking", "allreduce.native_blocking",
    "alltoall.native",      "alltoall.pairwise",       "alltoall.bruck",         "alltoallv.native",
    "alltoallv.spreadout",  "alltoallv.padded_bruck",  "allreduce.native",       "allreduce.recursive_doubling",
    "allreduce.rabenseifner", "alltoall.leader",       "alltoall.mpml",          "alltoall.onmpml",
    "allreduce.leader",     "allreduce.dpml",          "allreduce.dpml_pipelined", "alltoallv.aggregated",
    "alltoallv.twophase_bruck", "alltoall.pap",
};

static bool is_steppable(const char *name)
{
    for (size_t i = 0; i < sizeof steppable / sizeof steppable[0]; i++)
        if (strcmp(steppable[i], name) == 0) return true;
    return false;
}

/* ---- Problems: one plan of a collective and two sets of buffers, filled and checked per round ---- */

enum coll { A2A, A2AV, AR };
static const char *const coll_names[] = {"alltoall", "alltoallv", "allreduce"};

struct prob {
    enum coll coll;
    MPI_Comm comm;
    int P, r, n;
    int *scount, *sdispl, *rcount, *rdispl; /* alltoallv */
    long *s[2], *d[2];
    plancoll_plan plan;
};

static long val(int src, int dst, int i, int round) { return (long)src * 1000003L + dst * 1009L + i * 7L + round * 100000007L; }
static int vcount(int src, int dst, int n) { return (src + 2 * dst) % 3 == 0 ? 0 : n + (src + dst) % 2; }

static int prob_make(struct prob *x, enum coll c, MPI_Comm comm, int n, unsigned flags)
{
    memset(x, 0, sizeof *x);
    x->coll = c;
    x->comm = comm;
    x->n = n;
    MPI_Comm_size(comm, &x->P);
    MPI_Comm_rank(comm, &x->r);
    const int P = x->P;
    size_t slen = 0, rlen = 0;
    if (c == A2A) slen = rlen = (size_t)n * P;
    if (c == AR) slen = rlen = (size_t)n;
    if (c == A2AV) {
        x->scount = malloc(sizeof(int) * 4 * (size_t)P);
        x->sdispl = x->scount + P;
        x->rcount = x->scount + 2 * P;
        x->rdispl = x->scount + 3 * P;
        for (int j = 0; j < P; j++) {
            x->scount[j] = vcount(x->r, j, n);
            x->rcount[j] = vcount(j, x->r, n);
            x->sdispl[j] = (int)slen + j; /* a gap of j elements between blocks */
            x->rdispl[j] = (int)rlen + 2 * j;
            slen += (size_t)x->scount[j];
            rlen += (size_t)x->rcount[j];
        }
        slen += (size_t)P;
        rlen += 2 * (size_t)P;
    }
    for (int b = 0; b < 2; b++) {
        x->s[b] = calloc(slen + 1, sizeof(long));
        x->d[b] = calloc(rlen + 1, sizeof(long));
    }
    int rc;
    if (c == A2A)
        rc = plancoll_plan_alltoall(x->s[0], n, MPI_LONG, x->d[0], n, MPI_LONG, comm, flags, &x->plan);
    else if (c == A2AV)
        rc = plancoll_plan_alltoallv(x->s[0], x->scount, x->sdispl, MPI_LONG, x->d[0], x->rcount, x->rdispl, MPI_LONG,
                                     comm, flags, &x->plan);
    else
        rc = plancoll_plan_allreduce(x->s[0], x->d[0], n, MPI_LONG, MPI_SUM, comm, flags, &x->plan);
    return rc;
}

static void prob_fill(struct prob *x, int b, int round)
{
    const int P = x->P, n = x->n;
    if (x->coll == A2A)
        for (int j = 0; j < P; j++)
            for (int i = 0; i < n; i++) x->s[b][j * n + i] = val(x->r, j, i, round);
    if (x->coll == A2AV)
        for (int j = 0; j < P; j++)
            for (int i = 0; i < x->scount[j]; i++) x->s[b][x->sdispl[j] + i] = val(x->r, j, i, round);
    if (x->coll == AR)
        for (int i = 0; i < n; i++) x->s[b][i] = val(x->r, 0, i, round);
}

/* Checks buffer set b after round `round`; returns whether it was right (one message on the first wrong element). */
static bool prob_check(struct prob *x, int b, int round, const char *what)
{
    const int P = x->P, n = x->n;
    for (int j = 0; j < (x->coll == AR ? 1 : P); j++) {
        int cnt = x->coll == A2A ? n : x->coll == A2AV ? x->rcount[j] : n;
        for (int i = 0; i < cnt; i++) {
            long got, want = 0;
            if (x->coll == A2A) got = x->d[b][j * n + i], want = val(j, x->r, i, round);
            else if (x->coll == A2AV) got = x->d[b][x->rdispl[j] + i], want = val(j, x->r, i, round);
            else {
                got = x->d[b][i];
                for (int q = 0; q < P; q++) want += val(q, 0, i, round);
            }
            if (got != want) {
                TL_CHECK(0, "%s %s round %d: from %d element %d is %ld, expected %ld", coll_names[x->coll], what,
                         round, j, i, got, want);
                return false;
            }
        }
    }
    tl_checks++;
    return true;
}

static void prob_free(struct prob *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    for (int b = 0; b < 2; b++) {
        free(x->s[b]);
        free(x->d[b]);
    }
    free(x->scount);
}

/* ---- Waiting for an MPI request with a deadline: a plancoll start that waited would hang the program ---- */

static void wait_or_abort(MPI_Request *req, const char *what)
{
    double t0 = MPI_Wtime();
    int done = 0;
    while (!done) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (!done && MPI_Wtime() - t0 > 30.0) {
            fprintf(stderr, "rank %d: %s not complete after 30 s: plancoll_start waited for another rank\n", tl_rank,
                    what);
            fflush(stderr);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
}

/* ---- The scenarios ---- */

/* Rank 0 starts, then sends synchronously to rank 1; rank 1 receives, then starts. */
static void start_then_send(struct prob *x, int round, const char *what)
{
    prob_fill(x, 0, round);
    int token = 4242 + round, got = -1;
    MPI_Request req = MPI_REQUEST_NULL;
    if (x->r == 1) {
        MPI_Irecv(&got, 1, MPI_INT, 0, 77, x->comm, &req);
        wait_or_abort(&req, "rank 1's receive from rank 0");
        TL_CHECK(got == token, "%s: rank 1 received %d, expected %d", what, got, token);
    }
    TL_OK(plancoll_start(x->plan));
    if (x->r == 0 && x->P > 1) {
        MPI_Issend(&token, 1, MPI_INT, 1, 77, x->comm, &req);
        wait_or_abort(&req, "rank 0's synchronous send to rank 1");
    }
    TL_OK(plancoll_wait(x->plan));
    prob_check(x, 0, round, what);
}

/* A loop of computation and tests until the plan is complete. */
static volatile double sink;
static void test_loop(struct prob *x, int round, const char *what)
{
    prob_fill(x, 0, round);
    TL_OK(plancoll_start(x->plan));
    int done = 0, tests = 0;
    while (!done) {
        double acc = 0;
        for (int k = 0; k < 2000; k++) acc += k * 1e-9;
        sink = acc;
        TL_OK(plancoll_test(x->plan, &done));
        TL_CHECK(++tests < 10000000, "%s: %d tests and not complete", what, tests);
        if (tests >= 10000000) break;
    }
    prob_check(x, 0, round, what);
}

/* start_buffers on alternating buffer sets, new data each round. */
static void three_rounds(struct prob *x, const char *what)
{
    for (int round = 0; round < 3; round++) {
        int b = (round + 1) % 2;
        prob_fill(x, b, 10 + round);
        TL_OK(plancoll_start_buffers(x->plan, x->s[b], x->d[b]));
        TL_OK(plancoll_wait(x->plan));
        prob_check(x, b, 10 + round, what);
    }
}

/* Errors on an active plan: it stays active and completes with the right result. */
static void active_errors(struct prob *x, const char *what)
{
    prob_fill(x, 0, 21);
    TL_OK(plancoll_start(x->plan));
    int rc = plancoll_start(x->plan);
    TL_CHECK(rc == PLANCOLL_ERR_ACTIVE, "%s: start while active returned %d (%s)", what, rc, plancoll_strerror(rc));
    rc = plancoll_start_buffers(x->plan, x->s[1], x->d[1]);
    TL_CHECK(rc == PLANCOLL_ERR_ACTIVE, "%s: start_buffers while active returned %d", what, rc);
    rc = plancoll_execute(x->plan);
    TL_CHECK(rc == PLANCOLL_ERR_ACTIVE, "%s: execute while active returned %d", what, rc);
    plancoll_plan copy = x->plan;
    rc = plancoll_destroy_plan(&copy);
    TL_CHECK(rc == PLANCOLL_ERR_ACTIVE && copy == x->plan, "%s: destroy while active returned %d", what, rc);
    plancoll_plan list[3] = {NULL, x->plan, NULL};
    TL_OK(plancoll_waitall(3, list));
    prob_check(x, 0, 21, what);
    int done = 0;
    TL_OK(plancoll_test(x->plan, &done));
    TL_CHECK(done == 1, "%s: test on an inactive plan gave done = %d", what, done);
    TL_OK(plancoll_wait(x->plan)); /* inactive: returns at once */
    TL_OK(plancoll_waitall(0, NULL));
    rc = plancoll_waitall(-1, list);
    TL_CHECK(rc == PLANCOLL_ERR_COUNT, "%s: waitall(-1) returned %d", what, rc);
    /* and blocking execution still works after all that */
    prob_fill(x, 0, 22);
    TL_OK(plancoll_execute(x->plan));
    prob_check(x, 0, 22, what);
}

/* Every algorithm of every collective forced in turn. */
static int n_steppable, n_refused, n_start_refused;
static void every_algorithm(void)
{
    static const int sizes[] = {5, 3, 37};
    for (int c = 0; c < 3; c++) {
        const char *names[64];
        int nalg = tl_algorithms(coll_names[c], names, 64);
        for (int a = 0; a < nalg; a++) {
            tl_force(names[a]);
            struct prob x;
            int rc = prob_make(&x, (enum coll)c, MPI_COMM_WORLD, sizes[c], PLANCOLL_NONBLOCKING);
            if (is_steppable(names[a])) {
                TL_CHECK(rc == PLANCOLL_SUCCESS, "%s with PLANCOLL_NONBLOCKING: %d (%s) %s", names[a], rc,
                         plancoll_strerror(rc), plancoll_error_detail());
                if (rc == PLANCOLL_SUCCESS) {
                    n_steppable++;
                    TL_CHECK(strcmp(plancoll_plan_algorithm(x.plan), names[a]) == 0, "forced %s, got %s", names[a],
                             plancoll_plan_algorithm(x.plan));
                    start_then_send(&x, 1, names[a]);
                    test_loop(&x, 2, names[a]);
                    three_rounds(&x, names[a]);
                    active_errors(&x, names[a]);
                }
                prob_free(&x);
                continue;
            }
            /* Not steppable: refused for a plan that will be started... */
            if (rc == PLANCOLL_SUCCESS) {
                TL_CHECK(0, "%s (runs only blocking) planned with PLANCOLL_NONBLOCKING", names[a]);
                prob_free(&x);
                continue;
            }
            TL_CHECK(rc == PLANCOLL_ERR_INAPPLICABLE, "%s with PLANCOLL_NONBLOCKING: %d, expected INAPPLICABLE", names[a], rc);
            n_refused++;
            prob_free(&x);
            /* ... and, planned without the flag (where it applies), executes but cannot be started. */
            rc = prob_make(&x, (enum coll)c, MPI_COMM_WORLD, sizes[c], 0);
            if (rc == PLANCOLL_SUCCESS) {
                prob_fill(&x, 0, 3);
                n_start_refused++;
                rc = plancoll_start(x.plan);
                TL_CHECK(rc == PLANCOLL_ERR_NOT_STARTABLE && strstr(plancoll_error_detail(), names[a]) &&
                             strstr(plancoll_error_detail(), "PLANCOLL_NONBLOCKING"),
                         "%s: start returned %d (%s)", names[a], rc, plancoll_error_detail());
                int done = 0;
                TL_OK(plancoll_test(x.plan, &done)); /* not started: inactive */
                TL_CHECK(done == 1, "%s: a refused start left the plan active", names[a]);
                TL_OK(plancoll_execute(x.plan));
                prob_check(&x, 0, 3, names[a]);
            }
            prob_free(&x);
        }
        tl_force(NULL);
    }
}

/* Several plans active at once, completed in reverse order: three collectives on the world, two alltoalls of the
 * same algorithm (only their tag slots keep them apart), and one on a sub-communicator. */
static void several_active(void)
{
    struct prob a, b, c, d, e;
    tl_force("alltoall.pairwise");
    TL_OK(prob_make(&a, A2A, MPI_COMM_WORLD, 3, PLANCOLL_NONBLOCKING));
    TL_OK(prob_make(&b, A2A, MPI_COMM_WORLD, 4, PLANCOLL_NONBLOCKING));
    tl_force(NULL);
    TL_OK(prob_make(&c, A2AV, MPI_COMM_WORLD, 6, PLANCOLL_NONBLOCKING));
    TL_OK(prob_make(&d, AR, MPI_COMM_WORLD, 11, PLANCOLL_NONBLOCKING));
    MPI_Comm half;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_size - tl_rank, &half); /* reversed order inside */
    TL_OK(prob_make(&e, AR, half, 9, PLANCOLL_NONBLOCKING));
    if (!a.plan || !b.plan || !c.plan || !d.plan || !e.plan) goto out;
    for (int round = 0; round < 3; round++) {
        struct prob *all[5] = {&a, &b, &c, &d, &e};
        int nact = round == 0 ? 2 : round == 1 ? 3 : 5; /* two, three, then five at once */
        for (int i = 0; i < nact; i++) prob_fill(all[i], 0, 30 + round);
        for (int i = 0; i < nact; i++) TL_OK(plancoll_start(all[i]->plan));
        if (round == 2) { /* the one on another communicator first, then by waitall in reverse order */
            TL_OK(plancoll_wait(e.plan));
            plancoll_plan rev[5] = {d.plan, NULL, c.plan, b.plan, a.plan};
            TL_OK(plancoll_waitall(5, rev));
        } else {
            for (int i = nact - 1; i >= 0; i--) TL_OK(plancoll_wait(all[i]->plan));
        }
        for (int i = 0; i < nact; i++) prob_check(all[i], 0, 30 + round, "several active");
    }
    /* A blocking execution of one plan while another is active on the same communicator. */
    prob_fill(&a, 0, 40);
    prob_fill(&d, 0, 40);
    TL_OK(plancoll_start(a.plan));
    TL_OK(plancoll_execute(d.plan));
    TL_OK(plancoll_wait(a.plan));
    prob_check(&a, 0, 40, "active during an execute");
    prob_check(&d, 0, 40, "executed while another was active");
    /* Progress from inside a blocking call: rank 0 executes d while a (pairwise, P - 1 steps) is active; the
     * others complete a first. Their wait needs rank 0's later steps of a, which only rank 0's execute of d can
     * move (a hang here is caught by the alarm). */
    prob_fill(&a, 0, 41);
    prob_fill(&d, 0, 41);
    TL_OK(plancoll_start(a.plan));
    if (tl_rank != 0) TL_OK(plancoll_wait(a.plan));
    TL_OK(plancoll_execute(d.plan));
    TL_OK(plancoll_wait(a.plan));
    prob_check(&a, 0, 41, "progressed inside another plan's execute");
    prob_check(&d, 0, 41, "executed while rank 0's other plan was active");
out:
    prob_free(&e);
    prob_free(&d);
    prob_free(&c);
    prob_free(&b);
    prob_free(&a);
    MPI_Comm_free(&half);
}

/* Node-shared algorithms: two started plans of the same algorithm on one communicator (both use the node's
 * segment), completed in reverse order; a blocking execution of a third segment user while one is active; start
 * on send buffers from plancoll_malloc (peers read them in place: the execution ends with a node barrier). */
static void node_shared_pairs(void)
{
    static const struct {
        enum coll coll;
        const char *name;
    } forms[] = {
        {A2A, "alltoall.leader"},
        {A2A, "alltoall.leader:transport=put"},
        {A2A, "alltoall.mpml:leaders=2"},
        {A2A, "alltoall.mpml:leaders=2:placement=numa:transport=put"},
        {A2A, "alltoall.onmpml:leaders=2:segments=1"},
        {A2A, "alltoall.onmpml:transport=put"},
        {AR, "allreduce.leader"},
        {AR, "allreduce.dpml:leaders=2:inter=rsag"},
        {AR, "allreduce.dpml:leaders=2:placement=numa:inter=mpi"},
        {AR, "allreduce.dpml_pipelined:leaders=2:segments=3"},
        {AR, "allreduce.dpml_pipelined:inter=rd:segments=2"},
        {A2AV, "alltoallv.aggregated"},
        {A2AV, "alltoallv.aggregated:leaders=1:segments=2:transport=put"},
        {A2A, "alltoall.pap"},
        {A2A, "alltoall.pap:transport=put"},
    };
    for (size_t f = 0; f < sizeof forms / sizeof forms[0]; f++) {
        const char *name = forms[f].name;
        const enum coll coll = forms[f].coll;
        struct prob a, b, c;
        tl_force(name);
        int ra = prob_make(&a, coll, MPI_COMM_WORLD, coll == AR ? 29 : 3, PLANCOLL_NONBLOCKING);
        /* (alltoallv plans of other counts than a's: b's areas differ from a's in the segment) */
        int rb = prob_make(&b, coll, MPI_COMM_WORLD, coll == AR ? 41 : 5, PLANCOLL_NONBLOCKING);
        /* the other family as the blocking segment user */
        tl_force(coll == AR ? "alltoall.mpml" : "allreduce.dpml");
        int rc = prob_make(&c, coll == AR ? A2A : AR, MPI_COMM_WORLD, 4, 0);
        tl_force(NULL);
        TL_CHECK(ra == PLANCOLL_SUCCESS && rb == PLANCOLL_SUCCESS && rc == PLANCOLL_SUCCESS, "%s: planned %d %d %d (%s)",
                 name, ra, rb, rc, plancoll_error_detail());
        if (a.plan && b.plan && c.plan) {
            for (int round = 0; round < 3; round++) {
                prob_fill(&a, 0, 50 + round);
                prob_fill(&b, 0, 60 + round);
                TL_OK(plancoll_start(a.plan));
                TL_OK(plancoll_start(b.plan));
                if (round == 1) { /* a blocking execution of another segment user while both are active */
                    prob_fill(&c, 0, 70);
                    TL_OK(plancoll_execute(c.plan));
                    prob_check(&c, 0, 70, name);
                }
                if (round == 2) {
                    plancoll_plan rev[2] = {b.plan, a.plan};
                    TL_OK(plancoll_waitall(2, rev));
                } else {
                    TL_OK(plancoll_wait(b.plan));
                    TL_OK(plancoll_wait(a.plan));
                }
                prob_check(&b, 0, 60 + round, name);
                prob_check(&a, 0, 50 + round, name);
            }
            /* heap send buffers: node peers read them in place (the alltoall and allreduce forms) */
            void *hs = NULL;
            size_t bytes = sizeof(long) * (size_t)a.n * (size_t)(coll == AR ? 1 : a.P);
            TL_OK(plancoll_malloc(coll == A2AV ? 0 : bytes, MPI_COMM_WORLD, &hs));
            if (hs) {
                for (int round = 0; round < 2; round++) {
                    prob_fill(&a, 0, 80 + round);
                    memcpy(hs, a.s[0], bytes);
                    TL_OK(plancoll_start_buffers(a.plan, hs, a.d[0]));
                    TL_OK(plancoll_wait(a.plan));
                    memset(hs, 0xab, bytes); /* the owner reuses its buffer at once: every peer has read it */
                    prob_check(&a, 0, 80 + round, name);
                }
            }
            TL_OK(plancoll_free(hs));
        }
        prob_free(&c);
        prob_free(&b);
        prob_free(&a);
    }
}

/* Transposes (a kind of plan whose exchange is an inner collective plan): two started at once, one over an
 * alltoall (n0, n1 multiples of P; its exchange forced to the node-aware alltoall.mpml) and one over an alltoallv,
 * completed in reverse order; the in-place one on new data by start_buffers. */
struct tp {
    ptrdiff_t n0, n1, ln0, s0, ln1, s1;
    long *in, *out;
    plancoll_plan plan;
};

static long tp_val(ptrdiff_t i, ptrdiff_t j, int round) { return (long)(i * 1000 + j) + 7919L * round; }

static void tp_fill(struct tp *t, long *in, int round)
{
    for (ptrdiff_t i = 0; i < t->ln0; i++)
        for (ptrdiff_t j = 0; j < t->n1; j++) in[i * t->n1 + j] = tp_val(t->s0 + i, j, round);
}

static void tp_check(const struct tp *t, const long *out, int round, const char *what)
{
    for (ptrdiff_t j = 0; j < t->ln1; j++)
        for (ptrdiff_t i = 0; i < t->n0; i++) {
            long want = tp_val(i, t->s1 + j, round), got = out[j * t->n0 + i];
            if (got != want) {
                TL_CHECK(0, "%s round %d: out[%td][%td] is %ld, expected %ld", what, round, j, i, got, want);
                return;
            }
        }
    tl_checks++;
}

static void tp_make(struct tp *t, ptrdiff_t n0, ptrdiff_t n1, bool in_place)
{
    memset(t, 0, sizeof *t);
    t->n0 = n0;
    t->n1 = n1;
    ptrdiff_t n = plancoll_local_size_transposed(n0, n1, MPI_COMM_WORLD, &t->ln0, &t->s0, &t->ln1, &t->s1);
    t->in = calloc((size_t)n, sizeof(long));
    t->out = in_place ? t->in : calloc((size_t)n, sizeof(long));
    TL_OK(plancoll_plan_transpose(n0, n1, MPI_LONG, t->in, t->out, MPI_COMM_WORLD, PLANCOLL_NONBLOCKING, &t->plan));
}

static void transposes(void)
{
    struct tp a, b, c;
    tl_force("alltoall.mpml");
    tp_make(&a, 2 * tl_size, 3 * tl_size, false);
    tl_force(NULL);
    tp_make(&b, 2 * tl_size + 1, 5, true);
    tl_force("transpose.fused");
    tp_make(&c, 3 * tl_size + 1, 2 * tl_size, false);
    tl_force(NULL);
    if (a.plan && b.plan && c.plan) {
        for (int round = 0; round < 3; round++) {
            tp_fill(&a, a.in, round);
            tp_fill(&b, b.in, round + 1);
            tp_fill(&c, c.in, round + 2);
            TL_OK(plancoll_start(a.plan));
            TL_OK(plancoll_start(b.plan));
            TL_OK(plancoll_start(c.plan));
            TL_OK(plancoll_wait(c.plan));
            TL_OK(plancoll_wait(b.plan));
            TL_OK(plancoll_wait(a.plan));
            tp_check(&a, a.out, round, "transpose over an alltoall");
            tp_check(&b, b.out, round + 1, "transpose in place (the planner's strategy)");
            tp_check(&c, c.out, round + 2, "transpose by the fused strategy");
        }
        ptrdiff_t n = plancoll_local_size_transposed(b.n0, b.n1, MPI_COMM_WORLD, NULL, NULL, NULL, NULL);
        long *other = calloc((size_t)n, sizeof(long));
        tp_fill(&b, other, 9);
        TL_OK(plancoll_start_buffers(b.plan, other, other));
        TL_OK(plancoll_wait(b.plan));
        tp_check(&b, other, 9, "transpose started on other buffers");
        free(other);
    }
    if (a.plan) TL_OK(plancoll_destroy_plan(&a.plan));
    if (b.plan) TL_OK(plancoll_destroy_plan(&b.plan));
    if (c.plan) TL_OK(plancoll_destroy_plan(&c.plan));
    free(a.in);
    free(a.out);
    free(b.in);
    free(c.in);
    free(c.out);
}

/* A hang is a failure, said loudly (the runner's timeout would only say "timeout"). */
static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "test_nonblocking: no progress for 120 s (a plan waits for a rank that waits for it)\n";
    ssize_t w = write(2, msg, sizeof msg - 1);
    (void)w;
    _exit(3);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "nonblocking");
    signal(SIGALRM, on_alarm);
    alarm(120);
    /* the planner's own choices under PLANCOLL_NONBLOCKING: the start-then-send program on each collective */
    for (int c = 0; c < 3; c++) {
        struct prob x;
        TL_OK(prob_make(&x, (enum coll)c, MPI_COMM_WORLD, 8, PLANCOLL_NONBLOCKING));
        if (x.plan) {
            start_then_send(&x, 0, "planner's choice");
            TL_CHECK(is_steppable(plancoll_plan_algorithm(x.plan)), "PLANCOLL_NONBLOCKING chose %s",
                     plancoll_plan_algorithm(x.plan));
        }
        prob_free(&x);
    }
    several_active();
    node_shared_pairs();
    transposes();
    every_algorithm();
    alarm(0);
    if (tl_rank == 0)
        printf("nonblocking: %d steppable algorithms run, %d refused under PLANCOLL_NONBLOCKING, %d refused at start\n",
               n_steppable, n_refused, n_start_refused);
    return tl_finish();
}
