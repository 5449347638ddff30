/* cg: conjugate gradients on the 3D Poisson equation (7-point stencil, zero Dirichlet boundary) on an n^3 grid,
 * split into slabs of z-planes over the ranks, with the halo planes exchanged by MPI point-to-point.
 *
 * Every iteration needs two global sums (p.q and r.r). They run on plancoll allreduce plans, made once before
 * the loop and executed every iteration on the same one-double buffers: the planner's choice is paid for once.
 * The same solver then runs with MPI_Allreduce, in the same process, and the example prints for both the
 * iterations, the final relative residual and the time per iteration. It fails unless both converge (relative
 * residual below 1e-8), take the same number of iterations within 2 (and then agree on the residual within 1e-6
 * relative), and the solution is as close to the known exact one as the residual allows (the right-hand side
 * is A x* for a chosen x*: relative error <= cond(A) x relative residual).
 *
 * With -p it also runs pipelined CG ([PipeCG14] Alg. 4 without preconditioner), whose one global reduction per
 * iteration (r.r and w.r together, two doubles) can overlap the matrix-vector product q = A w: once with a started
 * plancoll plan (PLANCOLL_NONBLOCKING: plancoll_start, a plancoll_test per z-plane of the product, plancoll_wait),
 * once with the same plan executed before the product (no overlap), and once with MPI_Iallreduce overlapped the same
 * way; it prints the time per iteration of each. The pipelined solves must converge and meet the same error bound.
 *
 *   mpiexec -n P cg [N [MAXIT]] [-v] [-p]   (default N = 24, MAXIT = 500; -v prints the allreduce plan)
 */
#include <math.h>
#include <mpi.h>
#include <plancoll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../example_verdict.h"

#define TOL 1e-8

struct grid {
    MPI_Comm comm;
    int rank, P, n;
    int nz, z0;       /* this rank's planes [z0, z0 + nz) */
    int up, down;     /* neighbour ranks holding planes z0 + nz and z0 - 1 (MPI_PROC_NULL at the boundary) */
    size_t plane;     /* n * n */
};

/* Fields hold nz + 2 planes: plane 0 and plane nz + 1 are the halos. */
#define AT(g, f, z, y, x) ((f)[((size_t)(z)) * (g)->plane + (size_t)(y) * (size_t)(g)->n + (size_t)(x)])

static double exact(int x, int y, int z, int n)
{
    double h = 1.0 / (n + 1);
    return sin(3.14159265358979 * (x + 1) * h) * (double)(y + 1) * h * (1.0 - (double)(y + 1) * h) +
           0.25 * cos(2.0 * (z + 1) * h);
}

static void halo_exchange(const struct grid *g, double *f)
{
    MPI_Request req[4];
    int n = 0;
    MPI_Irecv(&AT(g, f, 0, 0, 0), (int)g->plane, MPI_DOUBLE, g->down, 1, g->comm, &req[n++]);
    MPI_Irecv(&AT(g, f, g->nz + 1, 0, 0), (int)g->plane, MPI_DOUBLE, g->up, 0, g->comm, &req[n++]);
    MPI_Isend(&AT(g, f, 1, 0, 0), (int)g->plane, MPI_DOUBLE, g->down, 0, g->comm, &req[n++]);
    MPI_Isend(&AT(g, f, g->nz, 0, 0), (int)g->plane, MPI_DOUBLE, g->up, 1, g->comm, &req[n++]);
    /* Wait yielding the core: with more ranks than cores (the test machines) a spinning MPI_Waitall holds the core
     * its peer needs to make progress, for a whole scheduler slice. Both solves use this same exchange. */
    int done = 0;
    MPI_Status status[4]; /* not MPI_STATUSES_IGNORE: GCC 12 takes MPICH's (MPI_Status *)1 for an empty array */
    while (MPI_Testall(n, req, &done, status) == MPI_SUCCESS && !done) sched_yield();
}

/* q = A p with A = the 7-point Laplacian (6 on the diagonal, -1 to each neighbour, 0 outside the grid); poke (when
 * not NULL) is called after each z-plane: the pipelined solver moves its reduction along there. */
static void apply_poked(const struct grid *g, double *p, double *q, void (*poke)(void *), void *arg)
{
    halo_exchange(g, p);
    const int n = g->n;
    for (int z = 1; z <= g->nz; z++, poke ? poke(arg) : (void)0)
        for (int y = 0; y < n; y++)
            for (int x = 0; x < n; x++) {
                double s = 6.0 * AT(g, p, z, y, x) - AT(g, p, z - 1, y, x) - AT(g, p, z + 1, y, x);
                if (y > 0) s -= AT(g, p, z, y - 1, x);
                if (y < n - 1) s -= AT(g, p, z, y + 1, x);
                if (x > 0) s -= AT(g, p, z, y, x - 1);
                if (x < n - 1) s -= AT(g, p, z, y, x + 1);
                AT(g, q, z, y, x) = s;
            }
}

static void apply(const struct grid *g, double *p, double *q) { apply_poked(g, p, q, NULL, NULL); }

static double local_dot(const struct grid *g, const double *a, const double *b)
{
    double s = 0;
    for (size_t i = g->plane; i < (size_t)(g->nz + 1) * g->plane; i++) s += a[i] * b[i];
    return s;
}

/* The global sum of one double: a plancoll plan on fixed buffers, or MPI_Allreduce. */
struct summer {
    plancoll_plan plan; /* NULL: MPI_Allreduce */
    double in, out;
};

static double global_sum(struct summer *s, MPI_Comm comm, double v)
{
    s->in = v;
    if (s->plan) {
        int rc = plancoll_execute(s->plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "allreduce plan: %s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
            MPI_Abort(comm, 1);
        }
    } else {
        MPI_Allreduce(&s->in, &s->out, 1, MPI_DOUBLE, MPI_SUM, comm);
    }
    return s->out;
}

struct result {
    int iterations;
    double residual, seconds_per_iteration, error; /* error: |x - x*| / |x*| */
};

static struct result solve(const struct grid *g, struct summer *sum, int maxit)
{
    const size_t len = (size_t)(g->nz + 2) * g->plane;
    double *x = calloc(len, sizeof(double)), *r = calloc(len, sizeof(double));
    double *p = calloc(len, sizeof(double)), *q = calloc(len, sizeof(double)), *b = calloc(len, sizeof(double));
    /* b = A x*: fill p with x*, apply A */
    for (int z = 1; z <= g->nz; z++)
        for (int y = 0; y < g->n; y++)
            for (int xx = 0; xx < g->n; xx++) AT(g, p, z, y, xx) = exact(xx, y, g->z0 + z - 1, g->n);
    apply(g, p, b);
    double bnorm = sqrt(global_sum(sum, g->comm, local_dot(g, b, b)));
    /* x = 0: r = b, p = r */
    memcpy(r, b, len * sizeof(double));
    memcpy(p, b, len * sizeof(double));
    double rr = global_sum(sum, g->comm, local_dot(g, r, r));
    struct result res = {0, sqrt(rr) / bnorm, 0, 0};
    MPI_Barrier(g->comm);
    double t0 = MPI_Wtime();
    int it = 0;
    while (it < maxit && res.residual > TOL) {
        apply(g, p, q);
        double alpha = rr / global_sum(sum, g->comm, local_dot(g, p, q));
        for (size_t i = g->plane; i < (size_t)(g->nz + 1) * g->plane; i++) {
            x[i] += alpha * p[i];
            r[i] -= alpha * q[i];
        }
        double rr_new = global_sum(sum, g->comm, local_dot(g, r, r));
        double beta = rr_new / rr;
        rr = rr_new;
        for (size_t i = g->plane; i < (size_t)(g->nz + 1) * g->plane; i++) p[i] = r[i] + beta * p[i];
        it++;
        res.residual = sqrt(rr) / bnorm;
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g->comm);
    res.iterations = it;
    res.seconds_per_iteration = it ? tmax / it : 0;
    double local[2] = {0, 0}, global[2];
    for (int z = 1; z <= g->nz; z++)
        for (int y = 0; y < g->n; y++)
            for (int xx = 0; xx < g->n; xx++) {
                double want = exact(xx, y, g->z0 + z - 1, g->n), e = AT(g, x, z, y, xx) - want;
                local[0] += e * e;
                local[1] += want * want;
            }
    MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, g->comm);
    res.error = sqrt(global[0] / global[1]);
    free(x), free(r), free(p), free(q), free(b);
    return res;
}

/* ---- Pipelined CG: one reduction per iteration, overlapped with the product ---------------------------- */

enum pipe_mode { PIPE_PLANCOLL_OVERLAP, PIPE_PLANCOLL_BLOCKING, PIPE_MPI_OVERLAP };
static const char *const pipe_names[] = {"plancoll overlap", "plancoll no overlap", "MPI_Iallreduce overlap"};

/* The reduction of (gamma, delta): a started plancoll plan, the same plan executed, or MPI_Iallreduce. */
struct pipe_sum {
    enum pipe_mode mode;
    plancoll_plan plan; /* on in/out, PLANCOLL_NONBLOCKING */
    double in[2], out[2];
    MPI_Request req;
    int done;
    MPI_Comm comm;
};

static void pipe_check(struct pipe_sum *s, int rc, const char *what)
{
    if (rc == PLANCOLL_SUCCESS) return;
    fprintf(stderr, "%s: %s: %s\n", what, plancoll_strerror(rc), plancoll_error_detail());
    MPI_Abort(s->comm, 1);
}

static void pipe_start(struct pipe_sum *s)
{
    s->done = 0;
    switch (s->mode) {
    case PIPE_PLANCOLL_OVERLAP: pipe_check(s, plancoll_start(s->plan), "plancoll_start"); break;
    case PIPE_PLANCOLL_BLOCKING: pipe_check(s, plancoll_execute(s->plan), "plancoll_execute"); s->done = 1; break;
    case PIPE_MPI_OVERLAP: MPI_Iallreduce(s->in, s->out, 2, MPI_DOUBLE, MPI_SUM, s->comm, &s->req); break;
    }
}

/* Called per plane of the product: one test, until the reduction is complete. */
static void pipe_poke(void *arg)
{
    struct pipe_sum *s = arg;
    if (s->done) return;
    if (s->mode == PIPE_PLANCOLL_OVERLAP)
        pipe_check(s, plancoll_test(s->plan, &s->done), "plancoll_test");
    else if (s->mode == PIPE_MPI_OVERLAP)
        MPI_Test(&s->req, &s->done, MPI_STATUS_IGNORE);
}

static void pipe_finish(struct pipe_sum *s)
{
    if (s->mode == PIPE_PLANCOLL_OVERLAP) pipe_check(s, plancoll_wait(s->plan), "plancoll_wait");
    if (s->mode == PIPE_MPI_OVERLAP)
        while (!s->done && MPI_Test(&s->req, &s->done, MPI_STATUS_IGNORE) == MPI_SUCCESS && !s->done) sched_yield();
    s->done = 1;
}

static struct result solve_pipelined(const struct grid *g, struct pipe_sum *ps, int maxit)
{
    const size_t len = (size_t)(g->nz + 2) * g->plane, lo = g->plane, hi = (size_t)(g->nz + 1) * g->plane;
    double *x = calloc(len, sizeof(double)), *r = calloc(len, sizeof(double)), *w = calloc(len, sizeof(double));
    double *p = calloc(len, sizeof(double)), *s = calloc(len, sizeof(double)), *z = calloc(len, sizeof(double));
    double *q = calloc(len, sizeof(double)), *b = calloc(len, sizeof(double));
    for (int zz = 1; zz <= g->nz; zz++)
        for (int y = 0; y < g->n; y++)
            for (int xx = 0; xx < g->n; xx++) AT(g, p, zz, y, xx) = exact(xx, y, g->z0 + zz - 1, g->n);
    apply(g, p, b);
    memset(p, 0, len * sizeof(double));
    double bb = local_dot(g, b, b), bnorm = 0;
    MPI_Allreduce(&bb, &bnorm, 1, MPI_DOUBLE, MPI_SUM, g->comm);
    bnorm = sqrt(bnorm);
    memcpy(r, b, len * sizeof(double)); /* x = 0: r = b, w = A r */
    apply(g, r, w);
    struct result res = {0, 1, 0, 0};
    double gamma_old = 0, alpha = 0;
    MPI_Barrier(g->comm);
    double t0 = MPI_Wtime();
    int it = 0;
    for (;;) {
        ps->in[0] = local_dot(g, r, r);
        ps->in[1] = local_dot(g, w, r);
        pipe_start(ps);
        apply_poked(g, w, q, pipe_poke, ps); /* q = A w while the reduction runs */
        pipe_finish(ps);
        double gamma = ps->out[0], delta = ps->out[1];
        res.residual = sqrt(gamma) / bnorm;
        if (res.residual <= TOL || it >= maxit) break;
        double beta = it > 0 ? gamma / gamma_old : 0;
        alpha = it > 0 ? gamma / (delta - beta * gamma / alpha) : gamma / delta;
        for (size_t i = lo; i < hi; i++) {
            z[i] = q[i] + beta * z[i];
            s[i] = w[i] + beta * s[i];
            p[i] = r[i] + beta * p[i];
            x[i] += alpha * p[i];
            r[i] -= alpha * s[i];
            w[i] -= alpha * z[i];
        }
        gamma_old = gamma;
        it++;
    }
    double t = MPI_Wtime() - t0, tmax = 0;
    MPI_Allreduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, g->comm);
    res.iterations = it;
    res.seconds_per_iteration = it ? tmax / it : 0;
    double local[2] = {0, 0}, global[2];
    for (int zz = 1; zz <= g->nz; zz++)
        for (int y = 0; y < g->n; y++)
            for (int xx = 0; xx < g->n; xx++) {
                double want = exact(xx, y, g->z0 + zz - 1, g->n), e = AT(g, x, zz, y, xx) - want;
                local[0] += e * e;
                local[1] += want * want;
            }
    MPI_Allreduce(local, global, 2, MPI_DOUBLE, MPI_SUM, g->comm);
    res.error = sqrt(global[0] / global[1]);
    free(x), free(r), free(w), free(p), free(s), free(z), free(q), free(b);
    return res;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    struct grid g;
    g.comm = MPI_COMM_WORLD;
    MPI_Comm_rank(g.comm, &g.rank);
    MPI_Comm_size(g.comm, &g.P);
    g.n = 24;
    int maxit = 500, verbose = 0, pipelined = 0, npos = 0;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-v") == 0) verbose = 1;
        else if (strcmp(argv[a], "-p") == 0) pipelined = 1;
        else if (npos++ == 0) g.n = atoi(argv[a]);
        else maxit = atoi(argv[a]);
    }
    if (g.n < 2 || maxit < 1) {
        if (g.rank == 0) fprintf(stderr, "usage: cg [N [MAXIT]] [-v] [-p]   (N >= 2)\n");
        return example_finish("cg", 0, g.comm);
    }
    g.plane = (size_t)g.n * (size_t)g.n;
    /* slabs: the first n mod P ranks get one plane more; a rank may get none when P > n */
    g.nz = g.n / g.P + (g.rank < g.n % g.P);
    g.z0 = g.rank * (g.n / g.P) + (g.rank < g.n % g.P ? g.rank : g.n % g.P);
    int holders = g.n < g.P ? g.n : g.P; /* ranks with planes: 0 .. holders-1 */
    g.down = g.rank > 0 && g.rank < holders ? g.rank - 1 : MPI_PROC_NULL;
    g.up = g.rank + 1 < holders ? g.rank + 1 : MPI_PROC_NULL;

    struct summer planned = {NULL, 0, 0}, mpi = {NULL, 0, 0};
    double t0 = MPI_Wtime();
    int rc = plancoll_plan_allreduce(&planned.in, &planned.out, 1, MPI_DOUBLE, MPI_SUM, g.comm, PLANCOLL_MEASURE,
                                     &planned.plan);
    double t_plan = MPI_Wtime() - t0;
    int ok = rc == PLANCOLL_SUCCESS;
    if (!ok) {
        fprintf(stderr, "[rank %d] allreduce plan: %s: %s\n", g.rank, plancoll_strerror(rc), plancoll_error_detail());
        return example_finish("cg", 0, g.comm);
    }
    if (g.rank == 0) {
        printf("cg: %d^3 Poisson, %d ranks, slabs of %d-%d planes; allreduce plan %s (planned in %.1f ms, MEASURE)\n",
               g.n, g.P, g.n / g.P, g.n / g.P + (g.n % g.P != 0), plancoll_plan_algorithm(planned.plan), t_plan * 1e3);
        if (verbose) plancoll_fprint_plan(planned.plan, stdout);
    }
    struct result a = solve(&g, &planned, maxit);
    struct result m = solve(&g, &mpi, maxit);
    if (g.rank == 0) {
        printf("cg: %-14s %4d iterations, relative residual %.3e, relative error %.3e, %.1f us per iteration\n",
               "plancoll", a.iterations, a.residual, a.error, a.seconds_per_iteration * 1e6);
        printf("cg: %-14s %4d iterations, relative residual %.3e, relative error %.3e, %.1f us per iteration\n",
               "MPI_Allreduce", m.iterations, m.residual, m.error, m.seconds_per_iteration * 1e6);
        if (m.seconds_per_iteration > 0)
            printf("cg: time per iteration plancoll / MPI_Allreduce = %.2f\n", a.seconds_per_iteration / m.seconds_per_iteration);
    }
    /* Both converged. With the same iteration count the residuals agree to rounding (the sums differ only in the
     * order of additions); the error obeys |x - x*| / |x*| <= cond(A) * residual, cond(A) ~ 0.405 (n + 1)^2 for
     * this operator (its extreme eigenvalues are 6 -+ 6 cos(pi / (n + 1))). */
    double cond = 0.41 * (g.n + 1.0) * (g.n + 1.0);
    if (!(a.residual <= TOL && m.residual <= TOL)) ok = 0;
    if (a.iterations == m.iterations && !(fabs(a.residual - m.residual) <= 1e-6 * fmax(a.residual, m.residual))) ok = 0;
    if (abs(a.iterations - m.iterations) > 2) ok = 0;
    if (!(a.error <= cond * a.residual && m.error <= cond * m.residual)) ok = 0;
    if (!ok && g.rank == 0) fprintf(stderr, "cg: the two solves disagree or did not converge\n");
    plancoll_destroy_plan(&planned.plan);
    if (pipelined && ok) {
        struct pipe_sum ps = {.comm = g.comm, .req = MPI_REQUEST_NULL};
        rc = plancoll_plan_allreduce(ps.in, ps.out, 2, MPI_DOUBLE, MPI_SUM, g.comm, PLANCOLL_MEASURE | PLANCOLL_NONBLOCKING,
                                     &ps.plan);
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] pipelined allreduce plan: %s: %s\n", g.rank, plancoll_strerror(rc),
                    plancoll_error_detail());
            return example_finish("cg", 0, g.comm);
        }
        if (g.rank == 0) printf("cg: pipelined CG, reduction plan %s (PLANCOLL_NONBLOCKING)\n", plancoll_plan_algorithm(ps.plan));
        struct result pr[3];
        for (int mode = 0; mode < 3; mode++) {
            ps.mode = (enum pipe_mode)mode;
            pr[mode] = solve_pipelined(&g, &ps, maxit);
            /* converged, close to the classic solve's count, and as accurate as the residual allows */
            if (!(pr[mode].residual <= TOL) || abs(pr[mode].iterations - a.iterations) > 5 ||
                !(pr[mode].error <= cond * pr[mode].residual))
                ok = 0;
            if (g.rank == 0)
                printf("cg: pipelined %-24s %4d iterations, relative residual %.3e, relative error %.3e, %.1f us per "
                       "iteration\n",
                       pipe_names[mode], pr[mode].iterations, pr[mode].residual, pr[mode].error,
                       pr[mode].seconds_per_iteration * 1e6);
        }
        if (g.rank == 0 && pr[PIPE_PLANCOLL_BLOCKING].seconds_per_iteration > 0)
            printf("cg: pipelined time per iteration, overlap / no overlap = %.2f (plancoll), MPI_Iallreduce overlap / "
                   "plancoll no overlap = %.2f\n",
                   pr[PIPE_PLANCOLL_OVERLAP].seconds_per_iteration / pr[PIPE_PLANCOLL_BLOCKING].seconds_per_iteration,
                   pr[PIPE_MPI_OVERLAP].seconds_per_iteration / pr[PIPE_PLANCOLL_BLOCKING].seconds_per_iteration);
        if (!ok && g.rank == 0) fprintf(stderr, "cg: a pipelined solve did not converge or missed the error bound\n");
        plancoll_destroy_plan(&ps.plan);
    }
    return example_finish("cg", ok, g.comm);
}
