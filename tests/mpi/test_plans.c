/* Plans as objects: several alive at once on one communicator and on sub-communicators, executed interleaved;
 * a plan that outlives its communicator; PLANCOLL_ALGORITHM affecting only its own collective; wisdom reuse
 * after MEASURE and plancoll_forget_wisdom; plancoll_fprint_plan contents (the set-up in executions against the
 * prediction, the first execution, the measurement); plans sharing the segment in repeated and alternating order;
 * plancoll_plan_spec and plancoll_set_timelimit; many create/destroy cycles. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

static int a2a_val(int src, int dst, int i, int it) { return src * 1000000 + dst * 1000 + i * 10 + it; }

struct a2a {
    MPI_Comm comm;
    int P, r, n;
    int *s, *d;
    plancoll_plan plan;
};

static void a2a_make(struct a2a *x, MPI_Comm comm, int n, unsigned flags)
{
    x->comm = comm;
    MPI_Comm_size(comm, &x->P);
    MPI_Comm_rank(comm, &x->r);
    x->n = n;
    x->s = malloc(sizeof(int) * (size_t)(n * x->P + 1));
    x->d = malloc(sizeof(int) * (size_t)(n * x->P + 1));
    x->plan = NULL;
    TL_OK(plancoll_plan_alltoall(x->s, n, MPI_INT, x->d, n, MPI_INT, comm, flags, &x->plan));
}

static void a2a_run(struct a2a *x, int it, const char *what)
{
    if (!x->plan) return;
    for (int j = 0; j < x->P; j++)
        for (int i = 0; i < x->n; i++) x->s[j * x->n + i] = a2a_val(x->r, j, i, it);
    TL_OK(plancoll_execute(x->plan));
    for (int j = 0; j < x->P; j++)
        for (int i = 0; i < x->n; i++)
            if (x->d[j * x->n + i] != a2a_val(j, x->r, i, it)) {
                TL_CHECK(0, "%s it=%d: from %d element %d is %d, expected %d", what, it, j, i, x->d[j * x->n + i],
                         a2a_val(j, x->r, i, it));
                return;
            }
    tl_checks++;
}

static void a2a_free(struct a2a *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    free(x->s);
    free(x->d);
}

struct ar {
    MPI_Comm comm;
    int P, r, n;
    long *s, *d;
    plancoll_plan plan;
};

static void ar_make(struct ar *x, MPI_Comm comm, int n, unsigned flags)
{
    x->comm = comm;
    MPI_Comm_size(comm, &x->P);
    MPI_Comm_rank(comm, &x->r);
    x->n = n;
    x->s = malloc(sizeof(long) * (size_t)(n + 1));
    x->d = malloc(sizeof(long) * (size_t)(n + 1));
    x->plan = NULL;
    TL_OK(plancoll_plan_allreduce(x->s, x->d, n, MPI_LONG, MPI_SUM, comm, flags, &x->plan));
}

static void ar_run(struct ar *x, int it, const char *what)
{
    if (!x->plan) return;
    for (int i = 0; i < x->n; i++) x->s[i] = (long)x->r * 31 + i + it;
    TL_OK(plancoll_execute(x->plan));
    for (int i = 0; i < x->n; i++) {
        long e = 0;
        for (int q = 0; q < x->P; q++) e += (long)q * 31 + i + it;
        if (x->d[i] != e) {
            TL_CHECK(0, "%s it=%d: element %d is %ld, expected %ld", what, it, i, x->d[i], e);
            return;
        }
    }
    tl_checks++;
}

static void ar_free(struct ar *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    free(x->s);
    free(x->d);
}

static void several_plans_and_subcomms(void)
{
    MPI_Comm parity, reversed;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &parity);
    MPI_Comm_split(MPI_COMM_WORLD, 0, tl_size - tl_rank, &reversed);
    struct a2a w1, w2, sub, rev, self;
    struct ar r1, rsub;
    a2a_make(&w1, MPI_COMM_WORLD, 3, PLANCOLL_ESTIMATE);
    a2a_make(&w2, MPI_COMM_WORLD, 50, PLANCOLL_MEASURE);
    a2a_make(&sub, parity, 5, PLANCOLL_ESTIMATE);
    a2a_make(&rev, reversed, 2, PLANCOLL_ESTIMATE);
    a2a_make(&self, MPI_COMM_SELF, 4, PLANCOLL_ESTIMATE);
    ar_make(&r1, MPI_COMM_WORLD, 100, PLANCOLL_ESTIMATE);
    ar_make(&rsub, parity, 9, PLANCOLL_MEASURE);
    for (int it = 0; it < 3; it++) {
        a2a_run(&w1, it, "world alltoall n=3");
        ar_run(&rsub, it, "parity allreduce");
        a2a_run(&sub, it, "parity alltoall");
        ar_run(&r1, it, "world allreduce");
        a2a_run(&w2, it, "world alltoall n=50 (measured)");
        a2a_run(&rev, it, "reversed alltoall");
        a2a_run(&self, it, "MPI_COMM_SELF alltoall");
    }
    a2a_free(&w1);
    a2a_free(&w2);
    a2a_free(&sub);
    a2a_free(&rev);
    a2a_free(&self);
    ar_free(&r1);
    ar_free(&rsub);
    MPI_Comm_free(&parity);
    MPI_Comm_free(&reversed);
}

static void plan_outlives_comm(void)
{
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    struct a2a x;
    struct ar y;
    a2a_make(&x, dup, 6, PLANCOLL_ESTIMATE);
    ar_make(&y, dup, 6, PLANCOLL_ESTIMATE);
    MPI_Comm_free(&dup);
    for (int it = 0; it < 3; it++) {
        a2a_run(&x, it, "alltoall after its communicator was freed");
        ar_run(&y, it, "allreduce after its communicator was freed");
    }
    a2a_free(&x);
    ar_free(&y);
}

static char *print_plan(plancoll_plan p)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    TL_OK(plancoll_fprint_plan(p, f));
    fclose(f);
    return text;
}

/* The set-up line of fprint_plan: "set-up      T ms = X executions (of E us, SOURCE)" with X > 0 and the source
 * expected: the prediction before any execution, this rank's first execution after one, the planner's measurement
 * once there is one. */
static void check_setup_line(plancoll_plan p, const char *source, const char *when)
{
    char *t = print_plan(p);
    const char *line = strstr(t, "  set-up      ");
    double ms = -1, execs = -1, us = -1;
    char what[32] = "";
    int got = line ? sscanf(line, "  set-up      %lf ms = %lf executions (of %lf us, %31[^)])", &ms, &execs, &us, what) : 0;
    TL_CHECK(got == 4, "%s: fprint_plan has no set-up line in executions:\n%s", when, t);
    if (got == 4) {
        TL_CHECK(ms > 0 && execs > 0 && us > 0, "%s: set-up %.3f ms = %.3f executions of %.3f us:\n%s", when, ms, execs, us, t);
        TL_CHECK(fabs(execs - ms * 1e3 / us) <= 0.05 * execs + 0.05, "%s: %.3f ms / %.3f us is not %.1f executions", when,
                 ms, us, execs);
        TL_CHECK(strcmp(what, source) == 0, "%s: set-up counted against '%s', expected '%s':\n%s", when, what, source, t);
    }
    free(t);
}

static void setup_in_executions(void)
{
    struct a2a x;
    a2a_make(&x, MPI_COMM_WORLD, 5, PLANCOLL_ESTIMATE);
    if (x.plan) check_setup_line(x.plan, "predicted", "before any execution");
    for (int it = 0; it < 2; it++) a2a_run(&x, it, "set-up line");
    if (x.plan) check_setup_line(x.plan, "first execution", "after two executions");
    a2a_free(&x);
    plancoll_forget_wisdom();
    struct ar y;
    ar_make(&y, MPI_COMM_WORLD, 40, PLANCOLL_MEASURE);
    ar_run(&y, 0, "set-up line");
    if (y.plan) {
        char *t = print_plan(y.plan);
        bool measured = strstr(t, "  measured    not timed") == NULL;
        free(t);
        check_setup_line(y.plan, measured ? "measured" : "first execution", "MEASURE plan");
    }
    ar_free(&y);
    plancoll_forget_wisdom();
}

static void forcing_and_wisdom(void)
{
    /* an alltoall name does not affect allreduce plans */
    tl_force("alltoall.native");
    struct a2a x;
    struct ar y;
    a2a_make(&x, MPI_COMM_WORLD, 2, PLANCOLL_ESTIMATE);
    ar_make(&y, MPI_COMM_WORLD, 2, PLANCOLL_ESTIMATE);
    if (x.plan) TL_CHECK(strcmp(plancoll_plan_algorithm(x.plan), "alltoall.native") == 0, "forced alltoall ran %s",
                         plancoll_plan_algorithm(x.plan));
    if (y.plan) {
        char *t = print_plan(y.plan);
        TL_CHECK(strstr(t, "chosen by   estimate") != NULL, "an allreduce plan must not be forced by an alltoall name:\n%s", t);
        free(t);
    }
    a2a_run(&x, 0, "forced native");
    ar_run(&y, 0, "unforced allreduce");
    a2a_free(&x);
    ar_free(&y);
    /* two names of one collective: the planner chooses between them */
    tl_force("allreduce.rabenseifner,allreduce.recursive_doubling");
    ar_make(&y, MPI_COMM_WORLD, 64, PLANCOLL_MEASURE);
    if (y.plan) {
        const char *a = plancoll_plan_algorithm(y.plan);
        TL_CHECK(strcmp(a, "allreduce.rabenseifner") == 0 || strcmp(a, "allreduce.recursive_doubling") == 0,
                 "chose %s outside the named set", a);
    }
    ar_run(&y, 1, "allreduce restricted to two algorithms");
    ar_free(&y);
    tl_force(NULL);

    /* MEASURE, then the same problem again: from wisdom, no timing */
    plancoll_forget_wisdom();
    ar_make(&y, MPI_COMM_WORLD, 33, PLANCOLL_MEASURE);
    struct ar z;
    ar_make(&z, MPI_COMM_WORLD, 33, PLANCOLL_MEASURE);
    if (y.plan && z.plan) {
        char *t1 = print_plan(y.plan), *t2 = print_plan(z.plan);
        bool single = strstr(t1, "among 1 candidate") != NULL;
        TL_CHECK(single || strstr(t1, "chosen by   measured") != NULL, "first MEASURE plan should be measured:\n%s", t1);
        TL_CHECK(single || strstr(t2, "chosen by   wisdom") != NULL, "second MEASURE plan should come from wisdom:\n%s", t2);
        TL_CHECK(strcmp(plancoll_plan_algorithm(y.plan), plancoll_plan_algorithm(z.plan)) == 0, "wisdom changed the choice");
        TL_CHECK(strstr(t1, plancoll_plan_algorithm(y.plan)) != NULL, "fprint_plan does not name the algorithm");
        free(t1);
        free(t2);
    }
    for (int it = 0; it < 3; it++) ar_run(&z, it, "wisdom allreduce");
    if (z.plan) {
        char *t = print_plan(z.plan);
        TL_CHECK(strstr(t, "executions  3") != NULL, "fprint_plan should count 3 executions:\n%s", t);
        free(t);
    }
    ar_free(&y);
    ar_free(&z);
    plancoll_forget_wisdom();
    plancoll_plan w = NULL;
    long s = 1, d = 0;
    int rc = plancoll_plan_allreduce(&s, &d, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_WISDOM_ONLY, &w);
    TL_CHECK(rc == PLANCOLL_ERR_NO_WISDOM, "after forget_wisdom, WISDOM_ONLY gave %d", rc);
}

/* Buffers from plancoll_malloc (the node-shared heap): the node-aware algorithms read peers' send buffers
 * directly; mixing heap and private buffers through execute_buffers must stay correct, and a send buffer
 * rewritten right after execute returns must not leak into what peers received. */
static void heap_buffers(void)
{
    const char *algs[] = {"alltoall.leader", "alltoall.mpml:leaders=2", "alltoall.onmpml:leaders=2", NULL};
    const int n = 37;
    size_t bytes = sizeof(int) * (size_t)n * (size_t)tl_size;
    int *hs = NULL, *hr = NULL, *ps = malloc(bytes), *pr = malloc(bytes);
    TL_OK(plancoll_malloc(bytes, MPI_COMM_WORLD, (void **)&hs));
    TL_OK(plancoll_malloc(bytes, MPI_COMM_WORLD, (void **)&hr));
    for (int a = 0; algs[a] && hs && hr; a++) {
        tl_force(algs[a]);
        plancoll_plan p = NULL;
        TL_OK(plancoll_plan_alltoall(hs, n, MPI_INT, hr, n, MPI_INT, MPI_COMM_WORLD, 0, &p));
        tl_force(NULL);
        for (int it = 0; p && it < 4; it++) {
            /* it 0,1: heap/heap via execute; 2: private send, heap recv; 3: heap send, private recv */
            int *s = it == 2 ? ps : hs, *r = it == 3 ? pr : hr;
            for (int j = 0; j < tl_size; j++)
                for (int i = 0; i < n; i++) s[j * n + i] = a2a_val(tl_rank, j, i, it + 10 * a);
            TL_OK(it < 2 ? plancoll_execute(p) : plancoll_execute_buffers(p, s, r));
            for (int j = 0; j < tl_size * n; j++) s[j] = -1; /* the owner reuses its buffer at once */
            for (int j = 0; j < tl_size; j++)
                for (int i = 0; i < n; i++)
                    if (r[j * n + i] != a2a_val(j, tl_rank, i, it + 10 * a)) {
                        TL_CHECK(0, "%s heap it=%d: from %d element %d is %d, expected %d", algs[a], it, j, i, r[j * n + i],
                                 a2a_val(j, tl_rank, i, it + 10 * a));
                        j = tl_size;
                        break;
                    }
            tl_checks++;
        }
        if (p) TL_OK(plancoll_destroy_plan(&p));
    }
    TL_OK(plancoll_free(hs));
    TL_OK(plancoll_free(hr));
    free(ps);
    free(pr);
}

/* An alltoallv of ints on MPI_COMM_WORLD: rank s sends rank d cnt(s, d) elements (zeros included; symmetric
 * in place), packed in rank order; element i is a2a_val(s, d, i, it). */
struct a2av {
    bool in_place;
    int salt;
    int *sc, *sd, *rc, *rd, *s, *d;
    plancoll_plan plan;
};

static int a2av_cnt(const struct a2av *x, int s, int d)
{
    return x->in_place ? (s + d + x->salt) % 4 : (s * 7 + d * 3 + x->salt) % 5;
}

static void a2av_make(struct a2av *x, bool in_place, int salt)
{
    const int P = tl_size, r = tl_rank;
    x->in_place = in_place;
    x->salt = salt;
    x->sc = malloc(sizeof(int) * 4 * (size_t)P);
    x->sd = x->sc + P;
    x->rc = x->sd + P;
    x->rd = x->rc + P;
    int st = 0, rt = 0;
    for (int j = 0; j < P; j++) {
        x->sc[j] = a2av_cnt(x, r, j);
        x->sd[j] = st;
        st += x->sc[j];
        x->rc[j] = a2av_cnt(x, j, r);
        x->rd[j] = rt;
        rt += x->rc[j];
    }
    x->s = malloc(sizeof(int) * (size_t)(st + 1));
    x->d = malloc(sizeof(int) * (size_t)(rt + 1));
    x->plan = NULL;
    TL_OK(plancoll_plan_alltoallv(in_place ? MPI_IN_PLACE : (void *)x->s, x->sc, x->sd, MPI_INT, x->d, x->rc, x->rd,
                                  MPI_INT, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &x->plan));
}

static void a2av_fill(struct a2av *x, int it)
{
    int *out = x->in_place ? x->d : x->s;
    for (int j = 0; j < tl_size; j++)
        for (int i = 0; i < x->sc[j]; i++) out[x->sd[j] + i] = a2a_val(tl_rank, j, i, it);
}

static void a2av_check(struct a2av *x, int it, const char *what)
{
    for (int j = 0; j < tl_size; j++)
        for (int i = 0; i < x->rc[j]; i++)
            if (x->d[x->rd[j] + i] != a2a_val(j, tl_rank, i, it)) {
                TL_CHECK(0, "%s it=%d: from %d element %d is %d, expected %d", what, it, j, i, x->d[x->rd[j] + i],
                         a2a_val(j, tl_rank, i, it));
                return;
            }
    tl_checks++;
}

static void a2av_free(struct a2av *x)
{
    if (x->plan) TL_OK(plancoll_destroy_plan(&x->plan));
    free(x->sc);
    free(x->s);
    free(x->d);
}

/* Plans sharing the communicator's segment: two aggregated alltoallv plans (one in place) and a node-aware alltoall
 * (which stages through the same data area), run in an order that repeats a plan (the aggregated plan may then skip
 * its barrier before packing) and alternates them (it may not), with execute_buffers in between; results checked
 * after every execution. */
static void shared_segment(void)
{
    tl_force("alltoallv.aggregated,alltoall.mpml:leaders=2");
    struct a2av v[2];
    a2av_make(&v[0], false, 1);
    a2av_make(&v[1], true, 2);
    struct a2a w;
    a2a_make(&w, MPI_COMM_WORLD, 9, PLANCOLL_ESTIMATE);
    /* a DPML allreduce (its own flag protocol, no barrier between its own executions) in the same rotation */
    tl_force("allreduce.dpml");
    struct ar dp = {.comm = MPI_COMM_WORLD, .P = tl_size, .r = tl_rank, .n = 1000};
    dp.s = malloc(sizeof(long) * 1001);
    dp.d = malloc(sizeof(long) * 1001);
    dp.plan = NULL;
    int drc = plancoll_plan_allreduce(dp.s, dp.d, dp.n, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_ESTIMATE, &dp.plan);
    TL_CHECK(drc == PLANCOLL_SUCCESS || drc == PLANCOLL_ERR_INAPPLICABLE, "dpml plan: %s", plancoll_error_detail());
    tl_force(NULL);
    if (v[0].plan) TL_CHECK(strcmp(plancoll_plan_algorithm(v[0].plan), "alltoallv.aggregated") == 0, "ran %s",
                            plancoll_plan_algorithm(v[0].plan));
    const char *order = "0001d101w0wdd11w1dd00w";
    for (int k = 0; order[k]; k++) {
        int it = 100 + k;
        if (order[k] == 'w') {
            a2a_run(&w, it, "node-aware alltoall between aggregated plans");
            continue;
        }
        if (order[k] == 'd') {
            ar_run(&dp, it, "dpml allreduce between plans sharing the segment");
            continue;
        }
        struct a2av *x = &v[order[k] - '0'];
        if (!x->plan) continue;
        a2av_fill(x, it);
        if (k == 5 && !x->in_place) {
            /* other buffers (the layout comes from the counts): fresh copies, then the planned ones are untouched */
            int *s2 = malloc(sizeof(int) * (size_t)(x->sd[tl_size - 1] + x->sc[tl_size - 1] + 1));
            int *d2 = malloc(sizeof(int) * (size_t)(x->rd[tl_size - 1] + x->rc[tl_size - 1] + 1));
            memcpy(s2, x->s, sizeof(int) * (size_t)(x->sd[tl_size - 1] + x->sc[tl_size - 1]));
            TL_OK(plancoll_execute_buffers(x->plan, s2, d2));
            int *keep = x->d;
            x->d = d2;
            a2av_check(x, it, "aggregated alltoallv, execute_buffers");
            x->d = keep;
            free(s2);
            free(d2);
        } else {
            TL_OK(plancoll_execute(x->plan));
            a2av_check(x, it, x->in_place ? "aggregated alltoallv in place, sharing the segment"
                                          : "aggregated alltoallv, sharing the segment");
        }
    }
    a2a_free(&w);
    ar_free(&dp);
    a2av_free(&v[1]);
    a2av_free(&v[0]);
}

/* plancoll_plan_spec names the choice so that forcing it gives the same plan; plancoll_set_timelimit(0) times
 * only the model's favourite and says so. */
static void spec_and_time_limit(void)
{
    struct a2a x;
    a2a_make(&x, MPI_COMM_WORLD, 16, PLANCOLL_ESTIMATE);
    if (!x.plan) return;
    char spec[128], again[128], tiny[4];
    TL_OK(plancoll_plan_spec(x.plan, spec, sizeof spec));
    TL_CHECK(strncmp(spec, plancoll_plan_algorithm(x.plan), strlen(plancoll_plan_algorithm(x.plan))) == 0,
             "spec '%s' does not start with the algorithm %s", spec, plancoll_plan_algorithm(x.plan));
    TL_CHECK(plancoll_plan_spec(x.plan, NULL, 10) == PLANCOLL_ERR_NULL_BUFFER, "NULL buffer accepted");
    TL_CHECK(plancoll_plan_spec(NULL, spec, sizeof spec) == PLANCOLL_ERR_NULL_PLAN, "NULL plan accepted");
    if (strlen(spec) >= sizeof tiny) {
        memset(tiny, 'x', sizeof tiny);
        TL_CHECK(plancoll_plan_spec(x.plan, tiny, sizeof tiny) == PLANCOLL_ERR_OVERFLOW && tiny[0] == '\0',
                 "a short buffer must give OVERFLOW and an empty string");
    }
    tl_force(spec);
    struct a2a y;
    a2a_make(&y, MPI_COMM_WORLD, 16, PLANCOLL_ESTIMATE);
    tl_force(NULL);
    if (y.plan) {
        TL_OK(plancoll_plan_spec(y.plan, again, sizeof again));
        TL_CHECK(strcmp(spec, again) == 0, "forcing '%s' gave '%s'", spec, again);
        a2a_run(&y, 7, "plan forced from a spec");
    }
    a2a_free(&y);
    a2a_free(&x);

    plancoll_forget_wisdom();
    plancoll_set_timelimit(0.0);
    struct ar z;
    ar_make(&z, MPI_COMM_WORLD, 40, PLANCOLL_PATIENT);
    plancoll_set_timelimit(PLANCOLL_NO_TIMELIMIT);
    if (z.plan) {
        char *t = print_plan(z.plan);
        bool single = strstr(t, "among 1 candidate") != NULL;
        TL_CHECK(single || strstr(t, "chosen by   measured until the time limit") != NULL,
                 "a zero time limit must stop the timing after one candidate:\n%s", t);
        free(t);
    }
    ar_run(&z, 3, "allreduce planned under a time limit");
    ar_free(&z);
    plancoll_forget_wisdom();
}

static void many_cycles(void)
{
    for (int k = 0; k < 60; k++) {
        struct ar y;
        ar_make(&y, MPI_COMM_WORLD, 1 + k % 5, PLANCOLL_ESTIMATE);
        ar_run(&y, k, "create/destroy cycle");
        ar_free(&y);
    }
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "plans");
    several_plans_and_subcomms();
    plan_outlives_comm();
    forcing_and_wisdom();
    setup_in_executions();
    heap_buffers();
    shared_segment();
    spec_and_time_limit();
    many_cycles();
    return tl_finish();
}
