/*
 * plancoll-setup: what a plan on a fresh communicator costs. Codes that plan on many sub-communicators pay it
 * every time, so the cycle
 *
 *     MPI_Comm_dup(MPI_COMM_WORLD) -> plancoll_plan_* (PLANCOLL_ESTIMATE) -> plancoll_execute (checked)
 *         -> plancoll_destroy_plan -> MPI_Comm_free
 *
 * is repeated --cycles times for an alltoall, an alltoallv and an allreduce, and each step is timed, together
 * with plancoll's own set-up phases (src/base/phase_times.h: layout discovery, agreement, calibration, choice,
 * the algorithm's set-up, teardown, layout release). Every number is the per-cycle maximum over ranks; the
 * table gives the first cycle of each collective (the first of the run includes calibration unless
 * PLANCOLL_CALIBRATE=0) and the median and maximum of the others.
 *
 * After each cycle MPI's own MPI_Comm_split_type on MPI_COMM_WORLD is timed as a reference (ref:split_type): the
 * survey that the first plan of a run cannot avoid.
 *
 *   mpiexec -n P plancoll-setup [--cycles N] [--only alltoall|alltoallv|allreduce] [--force ALGORITHM[:params]]...
 *                               [--json FILE] [--config NAME]
 *
 * --force runs that collective's cycles with PLANCOLL_ALGORITHM set to the spec (e.g. alltoall.leader), so the
 * set-up of a node-aware algorithm can be timed too. Every execution is checked exactly; a wrong result or a
 * failed call ends the run with exit code 1.
 */
#include <mpi.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <plancoll.h>

#include "bench_mpi.h"
#include "base/phase_times.h"

enum coll { ALLTOALL, ALLTOALLV, ALLREDUCE, NCOLLS };
static const char *const coll_names[NCOLLS] = {"alltoall", "alltoallv", "allreduce"};

/* the steps of one cycle as the application sees them, then plancoll's phases */
enum { ST_DUP, ST_PLAN, ST_EXECUTE, ST_DESTROY, ST_FREE, ST_CYCLE, ST_SPLIT_TYPE, NSTEPS };
/* ref:split_type is not part of the cycle: MPI's own MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) on MPI_COMM_WORLD,
 * timed after it, the blocking call that the first plan of a run makes once to learn MPI's notion of a node
 * (src/shm/census.h), so a reader can tell plancoll's set-up from MPI's. */
static const char *const step_names[NSTEPS] = {"MPI_Comm_dup", "plan",  "execute",        "destroy",
                                               "MPI_Comm_free", "cycle", "ref:split_type"};
#define NCOLS (NSTEPS + PC_NPHASES)

#define BLOCK 16    /* alltoall: ints per block */
#define VECTOR 256  /* allreduce: ints */

static int rank, nprocs;

static int value(int src, int dst, int i) { return src * 1000003 + dst * 1009 + i; }
/* alltoallv: ints rank i sends rank j (zero for some pairs) */
static int vcount(int i, int j) { return (i + 2 * j) % 4; }

struct buffers {
    int *send, *recv;
    int scounts[1024], sdispls[1024], rcounts[1024], rdispls[1024];
};

static void fill(struct buffers *b, enum coll c, int cycle)
{
    const int P = nprocs;
    if (c == ALLTOALL)
        for (int j = 0; j < P; j++)
            for (int i = 0; i < BLOCK; i++) b->send[j * BLOCK + i] = value(rank, j, i + cycle);
    else if (c == ALLTOALLV)
        for (int j = 0; j < P; j++)
            for (int i = 0; i < b->scounts[j]; i++) b->send[b->sdispls[j] + i] = value(rank, j, i + cycle);
    else
        for (int i = 0; i < VECTOR; i++) b->send[i] = rank + i + cycle;
    memset(b->recv, 0xff, sizeof(int) * (size_t)(P * BLOCK > VECTOR ? P * BLOCK : VECTOR));
}

static long check(const struct buffers *b, enum coll c, int cycle)
{
    const int P = nprocs;
    long bad = 0;
    if (c == ALLTOALL)
        for (int s = 0; s < P; s++)
            for (int i = 0; i < BLOCK; i++) bad += b->recv[s * BLOCK + i] != value(s, rank, i + cycle);
    else if (c == ALLTOALLV)
        for (int s = 0; s < P; s++)
            for (int i = 0; i < b->rcounts[s]; i++) bad += b->recv[b->rdispls[s] + i] != value(s, rank, i + cycle);
    else
        for (int i = 0; i < VECTOR; i++) bad += b->recv[i] != P * (P - 1) / 2 + P * (i + cycle);
    return bad;
}

static int plan(struct buffers *b, enum coll c, MPI_Comm comm, plancoll_plan *p)
{
    if (c == ALLTOALL)
        return plancoll_plan_alltoall(b->send, BLOCK, MPI_INT, b->recv, BLOCK, MPI_INT, comm, PLANCOLL_ESTIMATE, p);
    if (c == ALLTOALLV)
        return plancoll_plan_alltoallv(b->send, b->scounts, b->sdispls, MPI_INT, b->recv, b->rcounts, b->rdispls,
                                       MPI_INT, comm, PLANCOLL_ESTIMATE, p);
    return plancoll_plan_allreduce(b->send, b->recv, VECTOR, MPI_INT, MPI_SUM, comm, PLANCOLL_ESTIMATE, p);
}

static void die(const char *what, int rc)
{
    fprintf(stderr, "plancoll-setup [rank %d]: %s: %s (%s)\n", rank, what, plancoll_strerror(rc), plancoll_error_detail());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

struct summary {
    char algorithm[96];
    double first[NCOLS], median[NCOLS], max[NCOLS]; /* ms */
    long wrong;
};

/* Runs the cycles of one collective; times[k * NCOLS + col] is this rank's time of cycle k. */
static void run(enum coll c, int cycles, const char *force, struct summary *out)
{
    const int P = nprocs;
    struct buffers b;
    memset(&b, 0, sizeof b);
    size_t ints = (size_t)(P * BLOCK > VECTOR ? P * BLOCK : VECTOR);
    b.send = malloc(sizeof(int) * ints);
    b.recv = malloc(sizeof(int) * ints);
    int so = 0, ro = 0;
    for (int j = 0; j < P; j++) {
        b.scounts[j] = vcount(rank, j);
        b.rcounts[j] = vcount(j, rank);
        b.sdispls[j] = so;
        b.rdispls[j] = ro;
        so += b.scounts[j];
        ro += b.rcounts[j];
    }
    if (force) setenv("PLANCOLL_ALGORITHM", force, 1);
    else unsetenv("PLANCOLL_ALGORITHM");

    double *t = calloc((size_t)cycles * NCOLS, sizeof(double)), *tmax = calloc((size_t)cycles * NCOLS, sizeof(double));
    long wrong = 0;
    for (int k = 0; k < cycles; k++) {
        double *row = t + (size_t)k * NCOLS;
        struct pc_phase_times before = pc_phase_times;
        fill(&b, c, k);
        bench_barrier(MPI_COMM_WORLD);
        MPI_Comm comm;
        plancoll_plan p = NULL;
        double t0 = MPI_Wtime();
        MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        double t1 = MPI_Wtime();
        int rc = plan(&b, c, comm, &p);
        double t2 = MPI_Wtime();
        if (rc) die("plan", rc);
        if ((rc = plancoll_execute(p))) die("execute", rc);
        double t3 = MPI_Wtime();
        if (k == 0 && plancoll_plan_spec(p, out->algorithm, sizeof out->algorithm)) out->algorithm[0] = '\0';
        if ((rc = plancoll_destroy_plan(&p))) die("destroy", rc);
        double t4 = MPI_Wtime();
        MPI_Comm_free(&comm);
        double t5 = MPI_Wtime();
        bench_barrier(MPI_COMM_WORLD);
        MPI_Comm node;
        double t6 = MPI_Wtime();
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
        double t7 = MPI_Wtime();
        MPI_Comm_free(&node);
        wrong += check(&b, c, k);
        row[ST_DUP] = t1 - t0;
        row[ST_PLAN] = t2 - t1;
        row[ST_EXECUTE] = t3 - t2;
        row[ST_DESTROY] = t4 - t3;
        row[ST_FREE] = t5 - t4;
        row[ST_CYCLE] = t5 - t0;
        row[ST_SPLIT_TYPE] = t7 - t6;
        for (int ph = 0; ph < PC_NPHASES; ph++) row[NSTEPS + ph] = pc_phase_times.seconds[ph] - before.seconds[ph];
    }
    unsetenv("PLANCOLL_ALGORITHM");
    MPI_Request req;
    MPI_Iallreduce(t, tmax, cycles * NCOLS, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD, &req);
    bench_wait(&req);
    bench_allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    out->wrong = wrong;
    double *col = malloc(sizeof(double) * (size_t)cycles);
    for (int j = 0; j < NCOLS; j++) {
        out->first[j] = tmax[j] * 1e3;
        int n = 0;
        for (int k = 1; k < cycles; k++) col[n++] = tmax[(size_t)k * NCOLS + j] * 1e3;
        if (n == 0) col[n++] = out->first[j];
        qsort(col, (size_t)n, sizeof(double), cmp_double);
        out->median[j] = n % 2 ? col[n / 2] : (col[n / 2 - 1] + col[n / 2]) / 2;
        out->max[j] = col[n - 1];
    }
    free(col);
    free(t);
    free(tmax);
    free(b.send);
    free(b.recv);
}

static const char *col_name(int j) { return j < NSTEPS ? step_names[j] : pc_phase_name(j - NSTEPS); }

static volatile sig_atomic_t final_code;
static void finalize_watchdog(int sig)
{
    (void)sig;
    _exit(final_code);
}

int main(int argc, char **argv)
{
    int cycles = 20;
    const char *json = NULL, *config = "unnamed", *only = NULL, *force[NCOLLS] = {NULL, NULL, NULL};
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--cycles") == 0 && i + 1 < argc)
            cycles = atoi(argv[++i]);
        else if (strcmp(argv[i], "--json") == 0 && i + 1 < argc)
            json = argv[++i];
        else if (strcmp(argv[i], "--config") == 0 && i + 1 < argc)
            config = argv[++i];
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else if (strcmp(argv[i], "--force") == 0 && i + 1 < argc) {
            const char *spec = argv[++i];
            int c = NCOLLS;
            /* the collective is the spec's prefix: "alltoallv." before "alltoall." */
            for (int k = NCOLLS - 1; k >= 0; k--) {
                size_t n = strlen(coll_names[k]);
                if (strncmp(spec, coll_names[k], n) == 0 && spec[n] == '.' && (c == NCOLLS || n > strlen(coll_names[c])))
                    c = k;
            }
            if (c == NCOLLS) {
                fprintf(stderr, "plancoll-setup: --force %s: not an alltoall., alltoallv. or allreduce. algorithm\n", spec);
                return 2;
            }
            force[c] = spec;
        } else {
            fprintf(stderr, "usage: plancoll-setup [--cycles N] [--only COLLECTIVE] [--force ALGORITHM]... "
                            "[--json FILE] [--config NAME]\n");
            return 2;
        }
    }
    if (cycles < 1) cycles = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    if (nprocs > 1024) {
        if (rank == 0) fprintf(stderr, "plancoll-setup: at most 1024 ranks\n");
        MPI_Finalize();
        return 2;
    }
    const char *cal = getenv("PLANCOLL_CALIBRATE");
    bool calibrating = !cal || strcmp(cal, "0") != 0;

    struct summary res[NCOLLS];
    memset(res, 0, sizeof res);
    bool ran[NCOLLS] = {false, false, false};
    long wrong = 0;
    for (int c = 0; c < NCOLLS; c++) {
        if (only && strcmp(only, coll_names[c]) != 0) continue;
        run((enum coll)c, cycles, force[c], &res[c]);
        ran[c] = true;
        wrong += res[c].wrong;
    }

    if (rank == 0) {
        printf("# plancoll-setup %s: P=%d, %d cycles of dup/plan(ESTIMATE)/execute/destroy/free per collective, "
               "calibration %s; ms, per-cycle maximum over ranks\n",
               config, nprocs, cycles, calibrating ? "on (in the first plan)" : "off (PLANCOLL_CALIBRATE=0)");
        for (int c = 0; c < NCOLLS; c++) {
            if (!ran[c]) continue;
            printf("\n%s (%s%s)\n", coll_names[c], res[c].algorithm, force[c] ? ", forced" : "");
            printf("  %-16s %9s %9s %9s\n", "step", "first", "median", "max");
            for (int j = 0; j < NCOLS; j++) {
                /* plancoll phases that never ran stay out of the table */
                if (j >= NSTEPS && res[c].first[j] == 0 && res[c].max[j] == 0) continue;
                printf("  %-16s %9.3f %9.3f %9.3f\n", col_name(j), res[c].first[j], res[c].median[j], res[c].max[j]);
            }
        }
        if (wrong) printf("\n# %ld wrong elements\n", wrong);
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                perror(json);
            } else {
                fprintf(f, "{\"configuration\":\"%s\",\"ranks\":%d,\"cycles\":%d,\"calibration\":%s,\"wrong\":%ld,"
                           "\"collectives\":[\n",
                        config, nprocs, cycles, calibrating ? "true" : "false", wrong);
                bool first_coll = true;
                for (int c = 0; c < NCOLLS; c++) {
                    if (!ran[c]) continue;
                    fprintf(f, "%s{\"collective\":\"%s\",\"algorithm\":\"%s\",\"forced\":%s,\"steps_ms\":{",
                            first_coll ? "" : ",\n", coll_names[c], res[c].algorithm, force[c] ? "true" : "false");
                    first_coll = false;
                    for (int j = 0; j < NCOLS; j++)
                        fprintf(f, "%s\"%s\":{\"first\":%.4f,\"median\":%.4f,\"max\":%.4f}", j ? "," : "", col_name(j),
                                res[c].first[j], res[c].median[j], res[c].max[j]);
                    fprintf(f, "}}");
                }
                fprintf(f, "\n]}\n");
                fclose(f);
            }
        }
        fflush(stdout);
    }
    final_code = wrong ? 1 : 0;
    /* MPICH 4.0.2 over UCX tcp can hang in MPI_Finalize (tests/mpi/testlib.h): the results are out already */
    signal(SIGALRM, finalize_watchdog);
    alarm(5);
    MPI_Finalize();
    return final_code;
}
