/* The runner shared by test_alltoall.c and test_alltoallv.c: every run (an algorithm forced, a parameter set
 * forced, the planner's own choice under PLANCOLL_ESTIMATE and under PLANCOLL_MEASURE) through the program's
 * case table on MPI_COMM_WORLD and a subset on a parity split and a reversed-order communicator (or through a few
 * chosen cases on MPI_COMM_WORLD only), then every algorithm's plan alive at once, executed interleaved; timings
 * and the variants each run's plans ran are printed, and the verdict is tl_finish's.
 *
 * A program includes exchange_engine.h, defines its case table (NCASES, subcomm_cases), inst_init and
 * run_case(alg, forced, flags, case index, comm, comm name) (one case, start to finish), then includes this once
 * and calls exchange_run from main. */
#ifndef PC_EXCHANGE_RUNNER_H
#define PC_EXCHANGE_RUNNER_H
#ifndef PC_EXCHANGE_ENGINE_H
#error "include exchange_engine.h before exchange_runner.h"
#endif

/* The cases of the interleaved run: forced algorithms take mix[a % EXCHANGE_NMIX] (contiguous types: some
 * algorithms need them); the planner's own plan takes auto_case and the sub-communicator plan subcomm_case
 * (non-contiguous ones). */
enum { EXCHANGE_NMIX = 7 };
struct interleaved_cases {
    int mix[EXCHANGE_NMIX];
    int auto_case, subcomm_case;
};

/* The communicators each run uses besides MPI_COMM_WORLD. */
struct comms {
    MPI_Comm parity, reversed;
};

static void run_all_cases(const char *alg, const char *forced, unsigned flags, const struct comms *cm)
{
    for (int i = 0; i < NCASES; i++) run_case(alg, forced, flags, i, MPI_COMM_WORLD, "world");
    for (size_t i = 0; i < sizeof subcomm_cases / sizeof subcomm_cases[0]; i++) {
        run_case(alg, forced, flags, subcomm_cases[i], cm->parity, "parity-split");
        if (cm->reversed != MPI_COMM_NULL) run_case(alg, forced, flags, subcomm_cases[i], cm->reversed, "reversed");
    }
}

/* Plans of every algorithm (and the planner's choice, and one on a duplicate of the parity split that is
 * freed right after planning: the plan must outlive it) alive at once, executed interleaved in a rotating
 * order; every plan's buffers are checked after every round. */
static void run_interleaved(const char **algs, int nalgs, const struct comms *cm, const struct interleaved_cases *ic)
{
    const int *mix_cases = ic->mix;
    const int NMIX = EXCHANGE_NMIX, AUTO_CASE = ic->auto_case, SUBCOMM_CASE = ic->subcomm_case;
    struct inst in[MAX_ALGS + 2];
    bool live[MAX_ALGS + 2];
    int n = 0;
    for (int a = 0; a <= nalgs + 1; a++) {
        const char *forced = a < nalgs ? algs[a] : NULL;
        MPI_Comm comm = MPI_COMM_WORLD;
        if (a == nalgs + 1) MPI_Comm_dup(cm->parity, &comm);
        inst_init(&in[n], forced ? forced : "auto-estimate", a < nalgs ? mix_cases[a % NMIX] : a == nalgs ? AUTO_CASE : SUBCOMM_CASE, comm,
                  a == nalgs + 1 ? "parity-split dup, freed after planning (interleaved)" : "world (interleaved)");
        in[n].salt += 77 + 13 * (uint64_t)n; /* distinct from the single-plan runs and each other */
        tl_force(forced);
        live[n] = inst_plan(&in[n], PLANCOLL_ESTIMATE, forced, PLANCOLL_SUCCESS) > 0;
        if (comm != MPI_COMM_WORLD) {
            MPI_Comm_free(&comm);
            in[n].comm = MPI_COMM_NULL;
        }
        n++;
    }
    tl_force(NULL);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < n; i++)
            if (live[i]) inst_fill(&in[i], 0, round);
        for (int i = 0; i < n; i++) {
            int k = (i + round) % n;
            if (!live[k]) continue;
            int rc = plancoll_execute(in[k].plan);
            if (rc != PLANCOLL_SUCCESS)
                inst_fail(&in[k], round, "interleaved plancoll_execute returned %d (%s): %s", rc, plancoll_strerror(rc),
                          plancoll_error_detail());
        }
        for (int i = 0; i < n; i++)
            if (live[i]) {
                inst_check_recv(&in[i], 0, round, "interleaved plancoll_execute");
                inst_check_unchanged(&in[i], &in[i].send[0], round, "the send buffer", "interleaved plancoll_execute");
            }
    }
    for (int i = n - 1; i >= 0; i--) inst_destroy(&in[i]); /* destroyed in reverse order of creation */
}


/* One pass over the case table: an algorithm forced, or the planner's own choice. */
struct run {
    const char *label, *forced;
    unsigned flags;
    const int *few; /* when set, only these cases (-1 ends the list), on MPI_COMM_WORLD */
};

/* Runs runs[0 .. nruns) in turn, then the interleaved plans of algs; prints each run's time and variants; returns
 * tl_finish's exit code. t_start: when the program started (for the total). few_cases (-1 ends it): the program's
 * cross-section of its table, which every run without its own subset takes instead of the whole table when
 * PLANCOLL_TEST_FEW is set (the SMPI runner sets it: a simulation costs about a thousand times the real run); a
 * MEASURE run then takes its first two (MEASURE executes each candidate many times). */
static int exchange_run(const char **algs, int nalgs, const struct run *runs, int nruns,
                        const struct interleaved_cases *ic, double t_start, const int *few_cases)
{
    const char *few_env = getenv("PLANCOLL_TEST_FEW");
    const bool few_mode = few_env && *few_env && strcmp(few_env, "0") != 0;
    int few_measure[3] = {few_cases[0], few_cases[0] >= 0 ? few_cases[1] : -1, -1};
    struct comms cm;
    MPI_Comm_split(MPI_COMM_WORLD, tl_rank % 2, tl_rank, &cm.parity);
    cm.reversed = MPI_COMM_NULL;
    if (tl_size >= 3) MPI_Comm_split(MPI_COMM_WORLD, 0, tl_size - 1 - tl_rank, &cm.reversed);

    for (int r = 0; r < nruns; r++) {
        double t0 = MPI_Wtime();
        long failures_before = tl_failures;
        skipped = nvariants_seen = 0;
        tl_force(runs[r].forced);
        if (runs[r].flags & PLANCOLL_MEASURE) plancoll_forget_wisdom();
        int nworld = NCASES, nsub = (int)(sizeof subcomm_cases / sizeof subcomm_cases[0]) * (cm.reversed != MPI_COMM_NULL ? 2 : 1);
        const int *few = runs[r].few ? runs[r].few
                         : !few_mode          ? NULL
                         : (runs[r].flags & PLANCOLL_MEASURE) ? few_measure
                                                              : few_cases;
        if (few) {
            nsub = 0;
            for (nworld = 0; few[nworld] >= 0; nworld++)
                run_case(runs[r].label, runs[r].forced, runs[r].flags, few[nworld], MPI_COMM_WORLD, "world");
        } else {
            run_all_cases(runs[r].label, runs[r].forced, runs[r].flags, &cm);
        }
        tl_force(NULL);
        if (tl_rank == 0)
            printf(COLL " %-28s %2d cases on world + %d on sub-communicators: %.2f s%s\n", runs[r].label, nworld, nsub,
                   MPI_Wtime() - t0, tl_failures > failures_before ? " (rank 0 saw failures)" : "");
        if (tl_rank == 0 && skipped)
            printf("    %d cases skipped: %s declared itself inapplicable (first: %s)\n", skipped, runs[r].label,
                   skip_detail);
        print_variants();
    }
    double t0 = MPI_Wtime();
    nvariants_seen = 0;
    run_interleaved(algs, nalgs, &cm, ic);
    if (tl_rank == 0) printf(COLL " interleaved plans (%d alive at once): %.2f s\n", nalgs + 2, MPI_Wtime() - t0);
    print_variants();

    MPI_Comm_free(&cm.parity);
    if (cm.reversed != MPI_COMM_NULL) MPI_Comm_free(&cm.reversed);
    if (tl_rank == 0) printf(COLL " total %.2f s\n", MPI_Wtime() - t_start);
    return tl_finish();
}

#endif
