/*
 * plancoll-wisdom: precomputes plancoll wisdom for a list of collective signatures, like fftw-wisdom, and
 * inspects, checks and merges wisdom files.
 *
 *   mpiexec -n P plancoll-wisdom [-o FILE] [-i FILE] [-p | -e] [-v] SIGNATURE...
 *   plancoll-wisdom show FILE
 *   plancoll-wisdom check FILE
 *   plancoll-wisdom merge [-o OUT] FILE...
 *
 * Signatures (wisdom/FORMAT.md, "Signatures"): alltoall:[TYPE:]COUNT[:inplace], alltoallv:uniform:BYTES[:inplace],
 * alltoallv:random:MAXBYTES:SEED[:inplace], allreduce:TYPE:OP:COUNT. Each is planned on MPI_COMM_WORLD with
 * PLANCOLL_MEASURE (-p PATIENT, -e EXHAUSTIVE), which calibrates and times as a real plan would, and the
 * wisdom learned is exported to FILE (standard output without -o). -i FILE starts from existing wisdom.
 * show, check and merge need no mpiexec and do no MPI communication.
 *
 * Exit codes: 0 success; 1 the wisdom does not match (check: made for another machine, MPI, plancoll build or
 * format version; merge: the files' fingerprints differ; -i: stale); 2 malformed or unreadable wisdom, or a
 * plan or write that failed; 3 usage error.
 */
#include <errno.h>
#include <mpi.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/registry.h"
#include "api/wisdom_io.h"
#include "planner/planner.h"
#include "planner/predict.h"
#include "planner/wisdom_text.h"
#include "plancoll.h"

enum { EXIT_STALE = 1, EXIT_BAD = 2, EXIT_USAGE = 3 };

static void usage(FILE *out)
{
    fprintf(out,
            "usage: mpiexec -n P plancoll-wisdom [-o FILE] [-i FILE] [-p | -e] [-v] SIGNATURE...\n"
            "       plancoll-wisdom show FILE | check FILE | merge [-o OUT] FILE...\n"
            "signatures:\n"
            "  alltoall:[TYPE:]COUNT[:inplace]         COUNT elements of TYPE (default byte) per pair of ranks\n"
            "  alltoallv:uniform:BYTES[:inplace]        BYTES per pair of ranks\n"
            "  alltoallv:random:MAXBYTES:SEED[:inplace] 0..MAXBYTES per pair, drawn from SEED\n"
            "  allreduce:TYPE:OP:COUNT                  e.g. allreduce:double:sum:65536\n"
            "types: byte char short int unsigned long unsigned_long long_long float double long_double\n"
            "       int8 int16 int32 int64 uint8 uint16 uint32 uint64 c_float_complex c_double_complex\n"
            "ops:   sum prod max min land lor lxor band bor bxor\n"
            "options: -o FILE write the wisdom there (default: standard output); -i FILE import it first;\n"
            "         -p PLANCOLL_PATIENT, -e PLANCOLL_EXHAUSTIVE (default PLANCOLL_MEASURE); -v print each plan\n"
            "exit: 0 ok, 1 wisdom does not match, 2 malformed wisdom or a failure, 3 usage\n");
}

/* ---- signatures ---- */

static const struct {
    const char *name;
    MPI_Datatype type;
} types[] = {
    {"byte", MPI_BYTE},         {"char", MPI_SIGNED_CHAR},
    {"short", MPI_SHORT},       {"int", MPI_INT},
    {"unsigned", MPI_UNSIGNED}, {"long", MPI_LONG},
    {"unsigned_long", MPI_UNSIGNED_LONG}, {"long_long", MPI_LONG_LONG},
    {"float", MPI_FLOAT},       {"double", MPI_DOUBLE},
    {"long_double", MPI_LONG_DOUBLE},     {"int8", MPI_INT8_T},
    {"int16", MPI_INT16_T},     {"int32", MPI_INT32_T},
    {"int64", MPI_INT64_T},     {"uint8", MPI_UINT8_T},
    {"uint16", MPI_UINT16_T},   {"uint32", MPI_UINT32_T},
    {"uint64", MPI_UINT64_T},   {"c_float_complex", MPI_C_FLOAT_COMPLEX},
    {"c_double_complex", MPI_C_DOUBLE_COMPLEX},
};

/* MPI's handles of pc_signature_ops, in its order (planner/predict.h). */
static const MPI_Op op_handles[PC_SIGNATURE_NOPS] = {MPI_MAX,  MPI_MIN,  MPI_SUM, MPI_PROD, MPI_LAND,
                                                     MPI_LOR,  MPI_LXOR, MPI_BAND, MPI_BOR, MPI_BXOR};

/* A signature as plancoll-predict parses it (pc_signature_parse), with its MPI handles. */
struct signature {
    const char *text;
    struct pc_signature sig;
    MPI_Datatype type;
    MPI_Op op;
};

/* Parses text into s; returns NULL, or what is wrong. */
static const char *parse_signature(const char *text, struct signature *s)
{
    memset(s, 0, sizeof *s);
    s->text = text;
    const char *why = pc_signature_parse(text, &s->sig);
    if (why) return why;
    const char *name = pc_signature_types[s->sig.type].name;
    size_t i = 0;
    while (i < sizeof types / sizeof types[0] && strcmp(types[i].name, name) != 0) i++;
    if (i == sizeof types / sizeof types[0]) return "type without an MPI handle here";
    s->type = types[i].type;
    s->op = s->sig.kind == PC_SIG_ALLREDUCE ? op_handles[s->sig.op] : MPI_OP_NULL;
    return NULL;
}

/* Bytes rank i sends rank j in an alltoallv signature (the same on every rank; plancoll-predict's matrix). */
static int v_count(const struct signature *s, int i, int j, int P)
{
    return (int)pc_signature_pair_bytes(&s->sig, i, j, P);
}

/* Plans sig on MPI_COMM_WORLD with flags; rank 0 reports. Returns a plancoll code. */
static int plan_signature(const struct signature *sig, unsigned flags, bool verbose, int rank, int P)
{
    int tsize = 1;
    MPI_Type_size(sig->type, &tsize);
    void *sbuf = NULL, *rbuf = NULL;
    int *counts = NULL;
    plancoll_plan plan = NULL;
    int rc = PLANCOLL_SUCCESS;
    double t0 = MPI_Wtime();
    switch (sig->sig.kind) {
    case PC_SIG_ALLTOALL: {
        size_t bytes = (size_t)sig->sig.count * (size_t)tsize * (size_t)P;
        rbuf = calloc(bytes ? bytes : 1, 1);
        sbuf = sig->sig.inplace ? MPI_IN_PLACE : calloc(bytes ? bytes : 1, 1);
        if (!rbuf || !sbuf) {
            rc = PLANCOLL_ERR_NOMEM;
            break;
        }
        rc = plancoll_plan_alltoall(sbuf, (int)sig->sig.count, sig->type, rbuf, (int)sig->sig.count, sig->type, MPI_COMM_WORLD,
                                    flags, &plan);
        break;
    }
    case PC_SIG_ALLTOALLV_UNIFORM:
    case PC_SIG_ALLTOALLV_RANDOM: {
        counts = malloc(sizeof(int) * 4 * (size_t)P);
        if (!counts) return PLANCOLL_ERR_NOMEM;
        int *sc = counts, *sd = counts + P, *rcn = counts + 2 * P, *rd = counts + 3 * P;
        long long stotal = 0, rtotal = 0;
        for (int j = 0; j < P; j++) {
            sc[j] = v_count(sig, rank, j, P);
            rcn[j] = v_count(sig, j, rank, P);
            sd[j] = (int)stotal;
            rd[j] = (int)rtotal;
            stotal += sc[j];
            rtotal += rcn[j];
        }
        if (stotal > INT32_MAX || rtotal > INT32_MAX) {
            free(counts);
            return PLANCOLL_ERR_OVERFLOW;
        }
        long long span = sig->sig.inplace ? (stotal > rtotal ? stotal : rtotal) : rtotal;
        rbuf = calloc((size_t)span + 1, 1);
        sbuf = sig->sig.inplace ? MPI_IN_PLACE : calloc((size_t)stotal + 1, 1);
        if (!rbuf || !sbuf) {
            rc = PLANCOLL_ERR_NOMEM;
            break;
        }
        rc = plancoll_plan_alltoallv(sbuf, sc, sd, MPI_BYTE, rbuf, rcn, rd, MPI_BYTE, MPI_COMM_WORLD, flags, &plan);
        break;
    }
    case PC_SIG_ALLREDUCE: {
        size_t bytes = (size_t)sig->sig.count * (size_t)tsize;
        sbuf = calloc(bytes ? bytes : 1, 1);
        rbuf = calloc(bytes ? bytes : 1, 1);
        if (!rbuf || !sbuf) {
            rc = PLANCOLL_ERR_NOMEM;
            break;
        }
        rc = plancoll_plan_allreduce(sbuf, rbuf, (int)sig->sig.count, sig->type, sig->op, MPI_COMM_WORLD, flags, &plan);
        break;
    }
    }
    double seconds = MPI_Wtime() - t0;
    if (rc == PLANCOLL_SUCCESS && rank == 0) {
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        plancoll_fprint_plan(plan, f);
        fclose(f);
        if (verbose) {
            printf("%s (planned in %.2f s)\n%s", sig->text, seconds, text);
        } else {
            /* one line: the choice and how it was made */
            const char *how = strstr(text, "chosen by   ");
            int hl = how ? (int)strcspn(how + 12, "\n") : 0;
            printf("%-40s %-28s %.*s, planned in %.2f s\n", sig->text, plancoll_plan_algorithm(plan), hl,
                   how ? how + 12 : "", seconds);
        }
        fflush(stdout);
        free(text);
    }
    if (plan) plancoll_destroy_plan(&plan);
    if (sbuf != MPI_IN_PLACE) free(sbuf);
    if (rc == PLANCOLL_ERR_NOMEM && !plancoll_error_detail()[0]) fprintf(stderr, "plancoll-wisdom: no memory for %s\n", sig->text);
    free(rbuf);
    free(counts);
    return rc;
}

static int run_planner(int argc, char **argv)
{
    const char *out_path = NULL, *in_path = NULL;
    unsigned flags = PLANCOLL_MEASURE;
    bool verbose = false;
    int first = 1;
    for (; first < argc && argv[first][0] == '-' && argv[first][1]; first++) {
        const char *a = argv[first];
        if ((strcmp(a, "-o") == 0 || strcmp(a, "-i") == 0) && first + 1 < argc) {
            if (a[1] == 'o') out_path = argv[++first];
            else in_path = argv[++first];
        } else if (strcmp(a, "-p") == 0)
            flags = PLANCOLL_PATIENT;
        else if (strcmp(a, "-e") == 0)
            flags = PLANCOLL_EXHAUSTIVE;
        else if (strcmp(a, "-v") == 0)
            verbose = true;
        else if (strcmp(a, "--") == 0) {
            first++;
            break;
        } else
            return -1;
    }
    int nsig = argc - first;
    if (nsig <= 0 && !in_path) return -1;
    struct signature *sigs = calloc((size_t)(nsig > 0 ? nsig : 1), sizeof *sigs);
    if (!sigs) return EXIT_BAD;
    for (int i = 0; i < nsig; i++) {
        const char *why = parse_signature(argv[first + i], &sigs[i]);
        if (why) {
            fprintf(stderr, "plancoll-wisdom: signature '%s': %s\n", argv[first + i], why);
            free(sigs);
            return -1;
        }
    }

    /* this tool reads -i and writes -o only; a forced algorithm would teach nothing */
    unsetenv("PLANCOLL_WISDOM");
    if (getenv("PLANCOLL_ALGORITHM")) {
        fprintf(stderr, "plancoll-wisdom: ignoring PLANCOLL_ALGORITHM (forced plans do not make wisdom)\n");
        unsetenv("PLANCOLL_ALGORITHM");
    }
    MPI_Init(&argc, &argv);
    int rank, P, status = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &P);
    if (in_path) {
        int rc = plancoll_import_wisdom_from_filename(in_path, MPI_COMM_WORLD);
        if (rc != PLANCOLL_SUCCESS) {
            if (rank == 0) fprintf(stderr, "plancoll-wisdom: -i %s: %s: %s\n", in_path, plancoll_strerror(rc), plancoll_error_detail());
            status = rc == PLANCOLL_ERR_WISDOM_STALE ? EXIT_STALE : EXIT_BAD;
        }
    }
    for (int i = 0; i < nsig && !status; i++) {
        int rc = plan_signature(&sigs[i], flags, verbose, rank, P);
        if (rc != PLANCOLL_SUCCESS) {
            if (rank == 0) fprintf(stderr, "plancoll-wisdom: %s: %s: %s\n", sigs[i].text, plancoll_strerror(rc), plancoll_error_detail());
            status = EXIT_BAD;
        }
    }
    if (!status) {
        int rc;
        if (out_path) {
            rc = plancoll_export_wisdom_to_filename(out_path, MPI_COMM_WORLD);
        } else {
            char *text = NULL;
            rc = plancoll_export_wisdom_to_string(&text, MPI_COMM_WORLD);
            if (rc == PLANCOLL_SUCCESS && rank == 0) fputs(text, stdout);
            free(text);
        }
        if (rc != PLANCOLL_SUCCESS) {
            if (rank == 0) fprintf(stderr, "plancoll-wisdom: export: %s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
            status = EXIT_BAD;
        }
    }
    fflush(stdout);
    free(sigs);
    MPI_Finalize();
    return status;
}

/* ---- show, check, merge: no MPI communication ---- */

/* Reads and parses path; prints the problem and returns the exit code on failure. */
static int load(const char *path, struct pc_wisdom_set *s)
{
    char *text = NULL, why[400];
    size_t len = 0;
    bool absent;
    int rc = pc_wisdom_read_file(path, &text, &len, &absent, why, sizeof why);
    if (rc == PLANCOLL_SUCCESS) {
        rc = pc_wisdom_parse(text, len, s, why, sizeof why);
        free(text);
        if (rc) {
            fprintf(stderr, "plancoll-wisdom: %s: %s\n", path, why);
            return rc == PLANCOLL_ERR_WISDOM_STALE ? EXIT_STALE : EXIT_BAD;
        }
        return 0;
    }
    fprintf(stderr, "plancoll-wisdom: %s\n", why);
    return EXIT_BAD;
}

static const char *same(bool yes) { return yes ? "same here" : "DIFFERS here"; }

static int show(const char *path)
{
    struct pc_wisdom_set s;
    int status = load(path, &s);
    if (status) return status;
    struct pc_wisdom_fingerprint here;
    pc_wisdom_local_fingerprint(&here);
    char why[400];
    bool usable = pc_wisdom_fingerprint_compare(&s.fp, &here, why, sizeof why) == PLANCOLL_SUCCESS;
    const struct pc_wisdom_fingerprint *fp = &s.fp;
    printf("%s: plancoll wisdom, format %d, written by plancoll %s\n", path, PC_WISDOM_FORMAT_VERSION, fp->plancoll);
    printf("  registry    %016llx (%s)\n", (unsigned long long)fp->registry, same(fp->registry == here.registry));
    printf("  MPI         %s, build %016llx (%s)\n", fp->mpi_library, (unsigned long long)fp->mpi_build,
           same(strcmp(fp->mpi_library, here.mpi_library) == 0 && fp->mpi_build == here.mpi_build));
    printf("  topology    %s (%s)\n", fp->topology, same(strcmp(fp->topology, here.topology) == 0));
    printf("  made on     %s\n", fp->layout);
    printf("  usable here %s%s\n", usable ? "yes" : "no: ", usable ? "" : why);
    printf("models: %d\n", s.nmodels);
    for (int i = 0; i < s.nmodels; i++) {
        const struct pc_machine_model *m = &s.models[i];
        printf("  %-36s %s", m->shape, m->calibrated ? "calibrated" : "default");
        if (m->calibrated) printf(" in %.1f s", m->calibration_seconds);
        printf("; network %.2f us + %.2f GB/s; node %.2f us + %.2f GB/s; signal %.2f us\n", m->L_us + 2 * m->o_us,
               m->G_us_per_b > 0 ? 1e-3 / m->G_us_per_b : 0.0, m->shm_alpha_us,
               m->shm_beta_us_per_b > 0 ? 1e-3 / m->shm_beta_us_per_b : 0.0, m->sync_us);
    }
    printf("records: %d\n", s.nrecords);
    for (int i = 0; i < s.nrecords; i++) {
        const struct pc_wisdom_entry *e = &s.records[i];
        char params[96], when[32] = "unknown time";
        int alg = pc_registry_find(e->algorithm);
        pc_params_format(&e->params, alg >= 0 ? pc_registry_get(alg)->params : PC_PARAM_ALL, params, sizeof params);
        time_t t = (time_t)e->decided_at;
        struct tm tm;
        if (e->decided_at > 0 && localtime_r(&t, &tm)) strftime(when, sizeof when, "%Y-%m-%d %H:%M", &tm);
        printf("  %s\n    -> %s%s%s%s, %.2f us, %s, %s", e->key, e->algorithm, params[0] ? " (" : "", params,
               params[0] ? ")" : "", e->measured_us, pc_wisdom_rigor_name(e->rigor), when);
        if (e->runner_up[0]) printf("; runner-up %s, %.2f us", e->runner_up, e->runner_up_us);
        printf("\n");
    }
    pc_wisdom_set_free(&s);
    return 0;
}

static int check(const char *path)
{
    struct pc_wisdom_set s;
    int status = load(path, &s);
    if (status) return status;
    struct pc_wisdom_fingerprint here;
    pc_wisdom_local_fingerprint(&here);
    char why[400];
    if (pc_wisdom_fingerprint_compare(&s.fp, &here, why, sizeof why) != PLANCOLL_SUCCESS) {
        printf("%s: valid wisdom, not for this machine: %s\n", path, why);
        status = EXIT_STALE;
    } else {
        printf("%s: valid wisdom for this machine (%d models, %d records)\n", path, s.nmodels, s.nrecords);
    }
    pc_wisdom_set_free(&s);
    return status;
}

static int merge(int argc, char **argv)
{
    const char *out = NULL;
    int first = 0;
    if (argc >= 2 && strcmp(argv[0], "-o") == 0) {
        out = argv[1];
        first = 2;
    }
    if (first >= argc) return -1;
    /* OUT's lock is held from the first read to the rename: OUT may be one of the inputs ("merge -o w w new"),
     * and a job finalizing into OUT, an export or another merge must not rename in between and be lost */
    int lock = -1;
    if (out) {
        char why[400];
        if (pc_wisdom_lock_for_write(out, &lock, why, sizeof why) != PLANCOLL_SUCCESS) {
            fprintf(stderr, "plancoll-wisdom: %s\n", why);
            return EXIT_BAD;
        }
    }
    struct pc_wisdom_set all;
    int status = load(argv[first], &all);
    if (status) {
        pc_wisdom_unlock(lock);
        return status;
    }
    for (int i = first + 1; i < argc && !status; i++) {
        struct pc_wisdom_set s;
        status = load(argv[i], &s);
        if (status) break;
        char why[400];
        if (pc_wisdom_fingerprint_compare(&s.fp, &all.fp, why, sizeof why) != PLANCOLL_SUCCESS) {
            fprintf(stderr, "plancoll-wisdom: %s does not match %s: %s\n", argv[i], argv[first], why);
            status = EXIT_STALE;
        } else if (pc_wisdom_set_merge_file(&all, &s) != PLANCOLL_SUCCESS) {
            fprintf(stderr, "plancoll-wisdom: out of memory\n");
            status = EXIT_BAD;
        }
        pc_wisdom_set_free(&s);
    }
    char *text = NULL;
    size_t len = 0;
    if (!status && pc_wisdom_format(&all, &text, &len) != PLANCOLL_SUCCESS) {
        fprintf(stderr, "plancoll-wisdom: out of memory\n");
        status = EXIT_BAD;
    }
    if (!status) {
        char why[400];
        if (!out)
            fputs(text, stdout);
        else if (pc_wisdom_write_file(out, text, len, why, sizeof why) != PLANCOLL_SUCCESS) {
            fprintf(stderr, "plancoll-wisdom: %s\n", why);
            status = EXIT_BAD;
        }
    }
    pc_wisdom_unlock(lock);
    free(text);
    pc_wisdom_set_free(&all);
    return status;
}

int main(int argc, char **argv)
{
    int status;
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "show") == 0)
        status = argc == 3 ? show(argv[2]) : -1;
    else if (argc >= 2 && strcmp(argv[1], "check") == 0)
        status = argc == 3 ? check(argv[2]) : -1;
    else if (argc >= 2 && strcmp(argv[1], "merge") == 0)
        status = merge(argc - 2, argv + 2);
    else
        status = run_planner(argc, argv);
    if (status < 0) {
        usage(stderr);
        return EXIT_USAGE;
    }
    return status;
}
