#include "testlib.h"

#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int tl_rank, tl_size;
long tl_failures, tl_checks;
static const char *tl_name;
static volatile sig_atomic_t tl_exit_code;
int tl_host_rank, tl_host_size = 1;
static int tl_emulated_nodes = 1; /* PLANCOLL_EMULATE_NODES as the tests read it (1 when unset or unusable) */

/* The host of every world rank from MPI_Get_processor_name (not from the launcher nor from plancoll), and this
 * rank's place among its host's ranks in world order: where PLANCOLL_EMULATE_NODES puts each rank. */
void tl_find_host_position(void)
{
    char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
    int len = 0;
    MPI_Get_processor_name(name, &len);
    char *names = calloc((size_t)tl_size, MPI_MAX_PROCESSOR_NAME + 1);
    if (!names) return;
    tl_allgather(name, MPI_MAX_PROCESSOR_NAME + 1, MPI_CHAR, names, MPI_COMM_WORLD);
    tl_host_rank = 0;
    tl_host_size = 0;
    for (int r = 0; r < tl_size; r++)
        if (strcmp(names + (size_t)r * (MPI_MAX_PROCESSOR_NAME + 1), name) == 0) {
            tl_host_size++;
            if (r < tl_rank) tl_host_rank++;
        }
    free(names);
}

void tl_init(int *argc, char ***argv, const char *test_name)
{
    /* The progress thread calls MPI beside the caller: a test run with it asks MPI for MPI_THREAD_MULTIPLE. */
    const char *thread = getenv("PLANCOLL_PROGRESS_THREAD");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) {
        /* the program chose its thread level itself */
    } else if (thread && strcmp(thread, "1") == 0) {
        int provided;
        MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(argc, argv);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &tl_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &tl_size);
    tl_name = test_name;
    const char *emulate = getenv("PLANCOLL_EMULATE_NODES");
    if (emulate && *emulate) {
        tl_find_host_position();
        int k = atoi(emulate);
        tl_emulated_nodes = k >= 1 && k <= tl_host_size ? k : 1;
    }
}

int tl_emulated_node(int host_rank, int host_size, int k)
{
    /* Blocks of consecutive ranks, the larger ones first (MPICH's cliques by block): walk the block sizes. */
    int end = 0;
    for (int b = 0; b < k; b++) {
        end += host_size / k + (b < host_size % k ? 1 : 0);
        if (host_rank < end) return b;
    }
    return k - 1;
}

/* The SMPI build compiles the tests with PC_MPI_SIMULATED=1 (tests/smpi, docs/smpi.md). */
#if defined(PC_MPI_SIMULATED) && PC_MPI_SIMULATED
#define TL_SIMULATED 1
#else
#define TL_SIMULATED 0
#endif

int tl_split_node(MPI_Comm comm, int key, MPI_Comm *node)
{
    int rc = MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, key, MPI_INFO_NULL, node);
    if (TL_SIMULATED && rc == MPI_SUCCESS) {
        /* SMPI 3.32's MPI_Comm_split_type ignores the key: the node ranks ordered by it, as MPI defines */
        MPI_Comm ordered;
        rc = MPI_Comm_split(*node, 0, key, &ordered);
        MPI_Comm_free(node);
        if (rc != MPI_SUCCESS) return rc;
        *node = ordered;
    }
    if (rc != MPI_SUCCESS || tl_emulated_nodes <= 1) return rc;
    MPI_Comm part;
    rc = MPI_Comm_split(*node, tl_emulated_node(tl_host_rank, tl_host_size, tl_emulated_nodes), key, &part);
    if (rc != MPI_SUCCESS) return rc;
    MPI_Comm_free(node);
    *node = part;
    return MPI_SUCCESS;
}

void tl_fail(const char *file, int line, const char *fmt, ...)
{
    tl_failures++;
    if (tl_failures > 20) return; /* the count still grows; the log stays readable */
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* one write per line, so lines of different ranks do not interleave */
    fprintf(stderr, "[rank %d] FAIL %s:%d: %s\n", tl_rank, file, line, msg);
}

static int tl_wait(MPI_Request *req)
{
    /* Under SMPI a yielding poll never lets the simulated peers run (smpi/test injects no time in the tests'
     * runs): block in the simulator instead, where blocking costs no core. */
    if (TL_SIMULATED) return MPI_Wait(req, MPI_STATUS_IGNORE);
    int done = 0, rc;
    while ((rc = MPI_Test(req, &done, MPI_STATUS_IGNORE)) == MPI_SUCCESS && !done) sched_yield();
    return rc;
}

int tl_allreduce(const void *in, void *out, int n, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    MPI_Request req;
    int rc = MPI_Iallreduce(in, out, n, t, op, comm, &req);
    return rc == MPI_SUCCESS ? tl_wait(&req) : rc;
}

int tl_allgather(const void *in, int n, MPI_Datatype t, void *out, MPI_Comm comm)
{
    MPI_Request req;
    int rc = MPI_Iallgather(in, n, t, out, n, t, comm, &req);
    return rc == MPI_SUCCESS ? tl_wait(&req) : rc;
}

int tl_barrier(MPI_Comm comm)
{
    MPI_Request req;
    int rc = MPI_Ibarrier(comm, &req);
    return rc == MPI_SUCCESS ? tl_wait(&req) : rc;
}

static void watchdog(int sig)
{
    (void)sig;
#ifndef MPICH_VERSION
    /* The silent exit is for MPICH 4.0.2's known finalize hang over UCX tcp only: under another MPI a finalize
     * that does not return is reported (a non-zero exit the runner fails). */
    static const char msg[] = "watchdog: MPI_Finalize did not return (not tolerated outside MPICH)\n";
    if (write(2, msg, sizeof msg - 1) < 0) {
    }
    _exit(tl_exit_code ? tl_exit_code : 3);
#else
    _exit(tl_exit_code);
#endif
}

int tl_finish(void)
{
    long local[2] = {tl_failures, tl_checks}, total[2] = {0, 0};
    tl_allreduce(local, total, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    const char *cliques = getenv("MPIR_CVAR_NUM_CLIQUES"), *emulate = getenv("PLANCOLL_EMULATE_NODES");
    if (tl_rank == 0) {
        /* emulated nodes: MPICH's cliques, or plancoll's own emulation (any MPI) */
        printf("plancoll-test %s P=%d cliques=%s%s%s: %s (%ld checks, %ld failed)\n", tl_name, tl_size,
               cliques ? cliques : "1", emulate ? " emulate_nodes=" : "", emulate ? emulate : "",
               total[0] == 0 ? "PASS" : "FAIL", total[1], total[0]);
    }
    fflush(stdout);
    fflush(stderr);
    tl_exit_code = total[0] == 0 ? 0 : 1;
    /* the verdict is out; a finalize that has not returned in 2 s is the hang. Not under SMPI: a hang there is a
     * defect the runner's timeout reports, and the alarm would be the simulation process's, not a rank's. */
    if (!TL_SIMULATED) {
        signal(SIGALRM, watchdog);
        alarm(2);
    }
    MPI_Finalize();
    return tl_exit_code;
}

int tl_algorithms(const char *collective, const char **names, int max)
{
    /* MPI's blocking forms (*.native_blocking) spin inside MPI when the ranks outnumber the cores, 10-100x slower
     * per call (why the planner does not offer them there): forcing them at every case of every oversubscribed
     * layout cost minutes of the suite, so they are forced where the host has a core per rank (every test's 1- and
     * 2-rank layouts), the unit tests cover their enumeration when oversubscribed, and one notice says so. The
     * test programs run on one host (nodes are emulated), so the world's size against the host's cores is the
     * same answer on every rank without a collective. Under SMPI the simulated hosts have their own cores. */
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const bool spin_bound = !TL_SIMULATED && cores > 0 && tl_size > cores;
    static bool told;
    int n = 0;
    const char *coll;
    for (int i = 0; n < max; i++) {
        const char *name = plancoll_algorithm_name(i, &coll);
        if (!name) break;
        if (strcmp(coll, collective) != 0) continue;
        if (spin_bound && strstr(name, ".native_blocking")) {
            if (!told && tl_rank == 0) printf("%s and the other blocking forms not forced: %d ranks on %ld cores\n", name, tl_size, cores);
            told = true;
            continue;
        }
        names[n++] = name;
    }
    return n;
}

void tl_force(const char *name)
{
    /* Under SMPI every rank is an actor of one process with one environment: a rank still planning with the last
     * algorithm must not see the next one. Every rank calls this at the same point, so a barrier first keeps the
     * change out of every plan of the previous algorithm. */
    if (TL_SIMULATED) tl_barrier(MPI_COMM_WORLD);
    if (name)
        setenv("PLANCOLL_ALGORITHM", name, 1);
    else
        unsetenv("PLANCOLL_ALGORITHM");
}

uint64_t tl_rand(uint64_t *s)
{
    /* splitmix64 */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}
