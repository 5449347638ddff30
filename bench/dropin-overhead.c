/* dropin-overhead: what the drop-in layer (libplancoll-mpi) itself costs per call (issue 18 item 3), in one process
 * linked with -lplancoll-mpi, so MPI_* below are the layer's and PMPI_* are MPI's own:
 *
 *   pass-through  MPI_X vs PMPI_X on a shape the layer hands to MPI: the difference is what the layer adds to a
 *                 call it does not take (target <= 100 ns). Two kinds: a shape it refuses (an alltoall of one
 *                 struct {int, double}: a mixed type signature), measured in every mode; and, with
 *                 --below-threshold (which sets PLANCOLL_DROPIN_AFTER=1000000 before MPI_Init, so no shape is
 *                 ever planned), allreduce of 1 MPI_INT MPI_SUM and alltoall of 1 MPI_INT per block, the path of
 *                 a shape the layer counts but has not planned yet.
 *   planned       MPI_X through the layer, which runs its cached plan, vs plancoll_execute_buffers on a plan of
 *                 the same problem made here with the layer's rigor (PLANCOLL_ESTIMATE; PLANCOLL_DROPIN_RIGOR is
 *                 left unset): the difference is the layer's look-up and bookkeeping (target <= 200 ns).
 *                 With --check-report FILE the program sets PLANCOLL_DROPIN_REPORT=FILE and, after
 *                 MPI_Finalize, checks that the report shows every planned shape run as a plan with the same
 *                 algorithm spec as the direct plan (the report times every call, so use it for a check run,
 *                 not for the numbers).
 *
 * Each measurement is on MPI_COMM_SELF and on MPI_COMM_WORLD (run it with 2 ranks: 1n2p). The two variants of a
 * pair alternate batch by batch (A B, B A, ...); a batch is `calls` back-to-back calls timed as a whole (about
 * 2 ms), after a PMPI_Barrier; a batch's time per call is the max over ranks. Printed: per variant the median
 * and the 10th-90th percentiles over batches, and the paired difference (B - A of the same batch index): its
 * median and 10th-90th percentiles, in ns.
 *
 * Note: linked with the layer, plancoll's own MPI_Test/MPI_Wait* calls also resolve to the layer's definitions
 * (which pass them to PMPI while inside plancoll); that cost is in both variants of the planned pair.
 *
 * usage: mpiexec -n 2 dropin-overhead [--below-threshold] [--batches N] [--check-report FILE] [--json FILE]
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <mpi.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plancoll.h"

#define MAX_BATCHES 2001
#define BATCH_SECONDS 0.002

static int world_rank, world_size;

static void fail(const char *what, int rc)
{
    fprintf(stderr, "dropin-overhead: rank %d: %s failed: %s (%s)\n", world_rank, what, plancoll_strerror(rc),
            plancoll_error_detail());
    PMPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- the operations timed ---------------------------------------------------------------------------------- */

struct mixed { int i; double d; };

struct problem {
    MPI_Comm comm;
    int comm_size;
    int int_send, int_recv;          /* allreduce of one int */
    int *a2a_send, *a2a_recv;        /* alltoall of one int per block */
    struct mixed *mix_send, *mix_recv; /* alltoall of one struct per block */
    MPI_Datatype mixed_type;
    plancoll_plan allreduce_plan, alltoall_plan; /* the direct plans (planned mode) */
};

enum op_kind {
    PMPI_ALLREDUCE_INT, MPI_ALLREDUCE_INT, DIRECT_ALLREDUCE_INT,
    PMPI_ALLTOALL_INT, MPI_ALLTOALL_INT, DIRECT_ALLTOALL_INT,
    PMPI_ALLTOALL_MIXED, MPI_ALLTOALL_MIXED
};

static void run_op(struct problem *p, enum op_kind op)
{
    int rc = MPI_SUCCESS;
    switch (op) {
    case PMPI_ALLREDUCE_INT: rc = PMPI_Allreduce(&p->int_send, &p->int_recv, 1, MPI_INT, MPI_SUM, p->comm); break;
    case MPI_ALLREDUCE_INT: rc = MPI_Allreduce(&p->int_send, &p->int_recv, 1, MPI_INT, MPI_SUM, p->comm); break;
    case DIRECT_ALLREDUCE_INT:
        rc = plancoll_execute_buffers(p->allreduce_plan, &p->int_send, &p->int_recv);
        if (rc != PLANCOLL_SUCCESS) fail("plancoll_execute_buffers (allreduce)", rc);
        return;
    case PMPI_ALLTOALL_INT: rc = PMPI_Alltoall(p->a2a_send, 1, MPI_INT, p->a2a_recv, 1, MPI_INT, p->comm); break;
    case MPI_ALLTOALL_INT: rc = MPI_Alltoall(p->a2a_send, 1, MPI_INT, p->a2a_recv, 1, MPI_INT, p->comm); break;
    case DIRECT_ALLTOALL_INT:
        rc = plancoll_execute_buffers(p->alltoall_plan, p->a2a_send, p->a2a_recv);
        if (rc != PLANCOLL_SUCCESS) fail("plancoll_execute_buffers (alltoall)", rc);
        return;
    case PMPI_ALLTOALL_MIXED:
        rc = PMPI_Alltoall(p->mix_send, 1, p->mixed_type, p->mix_recv, 1, p->mixed_type, p->comm);
        break;
    case MPI_ALLTOALL_MIXED:
        rc = MPI_Alltoall(p->mix_send, 1, p->mixed_type, p->mix_recv, 1, p->mixed_type, p->comm);
        break;
    }
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "dropin-overhead: rank %d: MPI call %d failed (%d)\n", world_rank, (int)op, rc);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* The results every call must give (the comparison is of calls that work). */
static void check_results(struct problem *p, enum op_kind op)
{
    int ok = 1;
    switch (op) {
    case PMPI_ALLREDUCE_INT: case MPI_ALLREDUCE_INT: case DIRECT_ALLREDUCE_INT:
        ok = p->int_recv == p->int_send * p->comm_size; /* every rank sends the same value */
        break;
    case PMPI_ALLTOALL_INT: case MPI_ALLTOALL_INT: case DIRECT_ALLTOALL_INT: {
        int me;
        PMPI_Comm_rank(p->comm, &me);
        for (int r = 0; r < p->comm_size; r++) ok &= p->a2a_recv[r] == 1000 * r + me;
        break;
    }
    case PMPI_ALLTOALL_MIXED: case MPI_ALLTOALL_MIXED: {
        int me;
        PMPI_Comm_rank(p->comm, &me);
        for (int r = 0; r < p->comm_size; r++)
            ok &= p->mix_recv[r].i == 1000 * r + me && p->mix_recv[r].d == 0.5 * (1000 * r + me);
        break;
    }
    }
    if (!ok) {
        fprintf(stderr, "dropin-overhead: rank %d: operation %d gave a wrong result\n", world_rank, (int)op);
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void problem_init(struct problem *p, MPI_Comm comm, int planned)
{
    memset(p, 0, sizeof *p);
    p->comm = comm;
    PMPI_Comm_size(comm, &p->comm_size);
    int me;
    PMPI_Comm_rank(comm, &me);
    p->int_send = 7;
    p->a2a_send = malloc(sizeof(int) * (size_t)p->comm_size);
    p->a2a_recv = malloc(sizeof(int) * (size_t)p->comm_size);
    p->mix_send = malloc(sizeof(struct mixed) * (size_t)p->comm_size);
    p->mix_recv = malloc(sizeof(struct mixed) * (size_t)p->comm_size);
    if (!p->a2a_send || !p->a2a_recv || !p->mix_send || !p->mix_recv) fail("malloc", PLANCOLL_ERR_NOMEM);
    for (int r = 0; r < p->comm_size; r++) {
        p->a2a_send[r] = 1000 * me + r;
        p->mix_send[r] = (struct mixed){1000 * me + r, 0.5 * (1000 * me + r)};
    }
    int lengths[2] = {1, 1};
    MPI_Aint displs[2] = {offsetof(struct mixed, i), offsetof(struct mixed, d)};
    MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE}, t;
    PMPI_Type_create_struct(2, lengths, displs, types, &t);
    PMPI_Type_create_resized(t, 0, sizeof(struct mixed), &p->mixed_type);
    PMPI_Type_free(&t);
    PMPI_Type_commit(&p->mixed_type);
    if (planned) {
        int rc = plancoll_plan_allreduce(&p->int_send, &p->int_recv, 1, MPI_INT, MPI_SUM, comm, PLANCOLL_ESTIMATE,
                                         &p->allreduce_plan);
        if (rc != PLANCOLL_SUCCESS) fail("plancoll_plan_allreduce", rc);
        rc = plancoll_plan_alltoall(p->a2a_send, 1, MPI_INT, p->a2a_recv, 1, MPI_INT, comm, PLANCOLL_ESTIMATE,
                                    &p->alltoall_plan);
        if (rc != PLANCOLL_SUCCESS) fail("plancoll_plan_alltoall", rc);
    }
}

static void problem_free(struct problem *p)
{
    if (p->allreduce_plan) plancoll_destroy_plan(&p->allreduce_plan);
    if (p->alltoall_plan) plancoll_destroy_plan(&p->alltoall_plan);
    PMPI_Type_free(&p->mixed_type);
    free(p->a2a_send);
    free(p->a2a_recv);
    free(p->mix_send);
    free(p->mix_recv);
}

/* ---- timing ------------------------------------------------------------------------------------------------ */

struct pair_result {
    const char *name, *a_name, *b_name, *comm_name;
    int comm_size, batches, calls;
    double a_median, a_p10, a_p90, b_median, b_p10, b_p90, d_median, d_p10, d_p90; /* ns per call */
};

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double percentile(double *sorted, int n, double q)
{
    double pos = q * (n - 1);
    int lo = (int)pos;
    if (lo >= n - 1) return sorted[n - 1];
    return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

/* ns per call of one batch of `calls` calls, max over the ranks of MPI_COMM_WORLD. */
static double time_batch(struct problem *p, enum op_kind op, int calls)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = PMPI_Wtime();
    for (int i = 0; i < calls; i++) run_op(p, op);
    double per = (PMPI_Wtime() - t0) / calls * 1e9, per_max;
    PMPI_Allreduce(&per, &per_max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return per_max;
}

static double a_ns[MAX_BATCHES], b_ns[MAX_BATCHES], d_ns[MAX_BATCHES];

static struct pair_result measure_pair(struct problem *p, const char *comm_name, const char *name, enum op_kind a,
                                       const char *a_name, enum op_kind b, const char *b_name, int batches)
{
    /* warm-up: enough calls of each that the layer has planned a planned shape long before timing starts */
    for (int i = 0; i < 200; i++) { run_op(p, a); run_op(p, b); }
    check_results(p, a);
    run_op(p, b);
    check_results(p, b);
    double per = time_batch(p, a, 200) + time_batch(p, b, 200);
    int calls = (int)(2 * BATCH_SECONDS / (per * 1e-9)) + 1;
    if (calls < 50) calls = 50;
    for (int k = 0; k < batches; k++) {
        if (k % 2 == 0) {
            a_ns[k] = time_batch(p, a, calls);
            b_ns[k] = time_batch(p, b, calls);
        } else {
            b_ns[k] = time_batch(p, b, calls);
            a_ns[k] = time_batch(p, a, calls);
        }
        d_ns[k] = b_ns[k] - a_ns[k];
    }
    check_results(p, a);
    check_results(p, b);
    qsort(a_ns, (size_t)batches, sizeof(double), cmp_double);
    qsort(b_ns, (size_t)batches, sizeof(double), cmp_double);
    qsort(d_ns, (size_t)batches, sizeof(double), cmp_double);
    struct pair_result r = {name, a_name, b_name, comm_name, p->comm_size, batches, calls,
                            percentile(a_ns, batches, 0.5), percentile(a_ns, batches, 0.1),
                            percentile(a_ns, batches, 0.9), percentile(b_ns, batches, 0.5),
                            percentile(b_ns, batches, 0.1), percentile(b_ns, batches, 0.9),
                            percentile(d_ns, batches, 0.5), percentile(d_ns, batches, 0.1),
                            percentile(d_ns, batches, 0.9)};
    return r;
}

/* ---- the report check -------------------------------------------------------------------------------------- */

struct expected_plan {
    char collective[16], shape[64], spec[256];
    int comm_size;
};

/* Whether the layer's report (PLANCOLL_DROPIN_REPORT=FILE, docs/dropin.md's format) has a line for the shape with
 * planned calls and algorithm=spec. Prints what it found. */
static int report_shows(const char *file, const struct expected_plan *e)
{
    FILE *f = fopen(file, "r");
    if (!f) {
        printf("# report check: cannot open %s\n", file);
        return 0;
    }
    char line[4096], want_head[512], want_alg[512];
    snprintf(want_head, sizeof want_head, "collective=%.15s comm_size=%d shape=%.63s ", e->collective, e->comm_size,
             e->shape);
    snprintf(want_alg, sizeof want_alg, " algorithm=%.255s ", e->spec);
    int found = 0, good = 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, want_head, strlen(want_head)) != 0) continue;
        found = 1;
        const char *pc = strstr(line, " planned_calls=");
        long planned = pc ? strtol(pc + 15, NULL, 10) : 0;
        good = planned > 0 && strstr(line, want_alg) != NULL;
        printf("# report check %s: %s", good ? "ok" : "MISMATCH", line);
    }
    fclose(f);
    if (!found) printf("# report check MISMATCH: no line \"%s...\" in %s\n", want_head, file);
    if (!good) printf("# report check: expected planned calls with algorithm=%s\n", e->spec);
    return good;
}

/* ---- main -------------------------------------------------------------------------------------------------- */

int main(int argc, char **argv)
{
    int below = 0, batches = 101;
    const char *check_report = NULL, *json = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--below-threshold")) below = 1;
        else if (!strcmp(argv[i], "--batches") && i + 1 < argc) batches = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--check-report") && i + 1 < argc) check_report = argv[++i];
        else if (!strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--below-threshold] [--batches N] [--check-report FILE] [--json FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    if (batches < 3 || batches > MAX_BATCHES) batches = batches < 3 ? 3 : MAX_BATCHES;
    /* The layer reads its settings in MPI_Init: set them first, the same on every rank. */
    if (below) setenv("PLANCOLL_DROPIN_AFTER", "1000000", 1);
    if (check_report) setenv("PLANCOLL_DROPIN_REPORT", check_report, 1);
    else unsetenv("PLANCOLL_DROPIN_REPORT");
    unsetenv("PLANCOLL_DROPIN_RIGOR");
    if (getenv("PLANCOLL_DROPIN") && strcmp(getenv("PLANCOLL_DROPIN"), "1") != 0) {
        fprintf(stderr, "dropin-overhead: PLANCOLL_DROPIN=%s: the layer must be on\n", getenv("PLANCOLL_DROPIN"));
        return 2;
    }
    MPI_Init(&argc, &argv);
    PMPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    PMPI_Comm_size(MPI_COMM_WORLD, &world_size);

    struct pair_result results[16];
    int nresults = 0;
    struct expected_plan expected[4];
    int nexpected = 0;
    MPI_Comm comms[2] = {MPI_COMM_SELF, MPI_COMM_WORLD};
    const char *comm_names[2] = {"MPI_COMM_SELF", "MPI_COMM_WORLD"};
    for (int c = 0; c < 2; c++) {
        struct problem p;
        problem_init(&p, comms[c], !below);
        results[nresults++] = measure_pair(&p, comm_names[c], "alltoall 1 x struct{int,double} (refused: mixed signature)",
                                           PMPI_ALLTOALL_MIXED, "PMPI_Alltoall", MPI_ALLTOALL_MIXED, "MPI_Alltoall",
                                           batches);
        if (below) {
            results[nresults++] = measure_pair(&p, comm_names[c], "allreduce 1 MPI_INT MPI_SUM (below threshold)",
                                               PMPI_ALLREDUCE_INT, "PMPI_Allreduce", MPI_ALLREDUCE_INT,
                                               "MPI_Allreduce", batches);
            results[nresults++] = measure_pair(&p, comm_names[c], "alltoall 1 MPI_INT (below threshold)",
                                               PMPI_ALLTOALL_INT, "PMPI_Alltoall", MPI_ALLTOALL_INT, "MPI_Alltoall",
                                               batches);
        } else {
            results[nresults++] = measure_pair(&p, comm_names[c], "allreduce 1 MPI_INT MPI_SUM (planned)",
                                               DIRECT_ALLREDUCE_INT, "plancoll_execute_buffers", MPI_ALLREDUCE_INT,
                                               "MPI_Allreduce (layer)", batches);
            results[nresults++] = measure_pair(&p, comm_names[c], "alltoall 1 MPI_INT (planned)", DIRECT_ALLTOALL_INT,
                                               "plancoll_execute_buffers", MPI_ALLTOALL_INT, "MPI_Alltoall (layer)",
                                               batches);
            struct expected_plan *e = &expected[nexpected++];
            snprintf(e->collective, sizeof e->collective, "allreduce");
            snprintf(e->shape, sizeof e->shape, "1xMPI_INT:MPI_SUM");
            e->comm_size = p.comm_size;
            if (plancoll_plan_spec(p.allreduce_plan, e->spec, sizeof e->spec) != PLANCOLL_SUCCESS) e->spec[0] = 0;
            e = &expected[nexpected++];
            snprintf(e->collective, sizeof e->collective, "alltoall");
            snprintf(e->shape, sizeof e->shape, "1xMPI_INT");
            e->comm_size = p.comm_size;
            if (plancoll_plan_spec(p.alltoall_plan, e->spec, sizeof e->spec) != PLANCOLL_SUCCESS) e->spec[0] = 0;
        }
        problem_free(&p);
    }

    if (world_rank == 0) {
        printf("# dropin-overhead: %d ranks, mode %s, %d alternating batches of ~%.0f ms per variant; ns per call "
               "(max over ranks), median [p10-p90] over batches; diff = B - A of the same batch index\n",
               world_size, below ? "below-threshold (PLANCOLL_DROPIN_AFTER=1000000)" : "planned",
               batches, BATCH_SECONDS * 1e3);
        for (int e = 0; e < nexpected; e++)
            printf("# direct plan: %s comm_size=%d shape=%s spec=%s\n", expected[e].collective, expected[e].comm_size,
                   expected[e].shape, expected[e].spec);
        printf("%-58s %-15s %-26s %-26s %10s %21s %10s %21s %9s %21s\n", "shape", "comm", "A", "B", "A ns",
               "[p10-p90]", "B ns", "[p10-p90]", "B-A ns", "[p10-p90]");
        for (int i = 0; i < nresults; i++) {
            const struct pair_result *r = &results[i];
            printf("%-58s %-15s %-26s %-26s %10.1f [%8.1f-%10.1f] %10.1f [%8.1f-%10.1f] %9.1f [%8.1f-%10.1f]\n",
                   r->name, r->comm_name, r->a_name, r->b_name, r->a_median, r->a_p10, r->a_p90, r->b_median,
                   r->b_p10, r->b_p90, r->d_median, r->d_p10, r->d_p90);
        }
        if (json) {
            FILE *f = fopen(json, "w");
            if (!f) {
                fprintf(stderr, "dropin-overhead: cannot write %s\n", json);
            } else {
                fprintf(f, "{\"benchmark\": \"dropin-overhead\", \"ranks\": %d, \"mode\": \"%s\", \"batches\": %d, "
                           "\"statistic\": \"ns per call, batch time / calls, max over ranks; median and p10-p90 over "
                           "batches; diff = B - A per batch index\", \"results\": [\n",
                        world_size, below ? "below-threshold" : "planned", batches);
                for (int i = 0; i < nresults; i++) {
                    const struct pair_result *r = &results[i];
                    fprintf(f, "  {\"shape\": \"%s\", \"comm\": \"%s\", \"comm_size\": %d, \"A\": \"%s\", \"B\": \"%s\", "
                               "\"calls_per_batch\": %d, \"A_median_ns\": %.1f, \"A_p10_ns\": %.1f, \"A_p90_ns\": %.1f, "
                               "\"B_median_ns\": %.1f, \"B_p10_ns\": %.1f, \"B_p90_ns\": %.1f, \"diff_median_ns\": %.1f, "
                               "\"diff_p10_ns\": %.1f, \"diff_p90_ns\": %.1f}%s\n",
                            r->name, r->comm_name, r->comm_size, r->a_name, r->b_name, r->calls, r->a_median, r->a_p10,
                            r->a_p90, r->b_median, r->b_p10, r->b_p90, r->d_median, r->d_p10, r->d_p90,
                            i + 1 < nresults ? "," : "");
                }
                fprintf(f, "]}\n");
                fclose(f);
            }
        }
        fflush(stdout);
    }
    MPI_Finalize();
    int status = 0;
    if (check_report && world_rank == 0) {
        for (int e = 0; e < nexpected; e++) status |= !report_shows(check_report, &expected[e]);
        printf("# report check: %s\n", status ? "FAILED" : "every planned shape ran as the direct plan's spec");
    }
    return status;
}
