/* Progress of started persistent collectives while a rank blocks in another MPI call (issue 18): a plain MPI
 * program, run plain and under the drop-in layer by run-dropin-test.sh.
 *
 * MPI requires a started persistent collective to progress while its process is blocked in any MPI call. For each
 * persistent collective (MPI_Alltoall_init, MPI_Alltoallv_init, MPI_Allreduce_init on a duplicate of
 * MPI_COMM_WORLD) and each blocking call, every rank starts the collective, then
 *     rank 0:      MPI_Wait(coll); then the point-to-point side that releases the others
 *     ranks >= 1:  the blocking call, which needs rank 0 to have left its wait; then MPI_Wait(coll)
 * Rank 0's wait can only end if the other ranks' collective moves while they are blocked: under a layer that runs
 * the collective as a plancoll plan and does not advance it inside the blocking call, this program deadlocks.
 * Blocking calls: MPI_Recv, MPI_Probe + MPI_Recv, MPI_Mprobe + MPI_Mrecv, MPI_Sendrecv, MPI_Sendrecv_replace
 * (rank 0 sends after its wait) and MPI_Ssend (rank 0 receives after its wait), which the layer converts
 * (src/dropin/progress.c); and blocking collectives on the other communicator, which it cannot convert and which
 * its guard thread covers (src/dropin/guard.c): MPI_Barrier, MPI_Bcast from rank 0, MPI_Allreduce of one int (to
 * MPI for its first calls, planned later: both paths), MPI_Comm_dup (rank 0 joins each after its wait). Results,
 * messages and statuses are checked exactly against values computed here. The program also checks that
 * MPI_Query_thread answers MPI_THREAD_SINGLE, the level MPI_Init gives (the layer raises MPI's own for its guard).
 *
 * Arguments KIND CALL (indices into kind_names and call_names) run that one combination alone: with the old layer
 * each of them deadlocks.
 *
 * With PLANCOLL_DROPIN_PROGRESS=calls (no guard: the layer's documented limit) the collectives are left out. */
#include "dropin_harness.h"

#include <stdbool.h>

enum kind { ALLTOALL, ALLTOALLV, ALLREDUCE, NKINDS };
static const char *const kind_names[NKINDS] = {"alltoall", "alltoallv", "allreduce"};
enum call { RECV, PROBE_RECV, MPROBE_MRECV, SENDRECV, SENDRECV_REPLACE, SSEND, BARRIER, BCAST, ALLREDUCE1, COMM_DUP,
            NCALLS };
static const char *const call_names[NCALLS] = {
    "MPI_Recv",  "MPI_Probe+MPI_Recv", "MPI_Mprobe+MPI_Mrecv", "MPI_Sendrecv",    "MPI_Sendrecv_replace",
    "MPI_Ssend", "MPI_Barrier",        "MPI_Bcast",            "MPI_Allreduce(1)", "MPI_Comm_dup"};
static bool collective_call(enum call call) { return call >= BARRIER; }

enum { BLOCK = 256, REDUCE_N = 4096, ROUNDS = 3, TAG = 77, START_DELAY_US = 5000 };

/* Element k of what rank `from` sends rank `to` in round `round`. */
static int value(int round, int from, int to, int k) { return round * 1000000 + from * 10000 + to * 100 + k % 100; }
/* alltoallv: elements from rank a to rank b (1..3 blocks of BLOCK/4, uneven). */
static int vcount(int a, int b) { return ((a + 2 * b) % 3 + 1) * (BLOCK / 4); }
/* The token rank 0 and rank r exchange in a round. */
static int token(int round, int r, int call) { return 7000 + round * 100 + r * 10 + call; }

struct coll {
    MPI_Request req;
    int *send, *recv;
    int sc[64], sd[64], rc[64], rd[64];
};

static void fill(enum kind kind, struct coll *c, int round) {
    int p = dh_size, me = dh_rank;
    if (kind == ALLTOALL) {
        for (int j = 0; j < p; j++)
            for (int k = 0; k < BLOCK; k++) c->send[j * BLOCK + k] = value(round, me, j, k);
    } else if (kind == ALLTOALLV) {
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c->sc[j]; k++) c->send[c->sd[j] + k] = value(round, me, j, k);
    } else {
        for (int k = 0; k < REDUCE_N; k++) c->send[k] = round + me * (k % 7) + 1;
    }
    memset(c->recv, 0xff, sizeof(int) * (size_t)(kind == ALLREDUCE ? REDUCE_N : p * 3 * BLOCK));
}

static void check_result(enum kind kind, const struct coll *c, int round, enum call call) {
    int p = dh_size, me = dh_rank, bad = 0, first = -1;
    if (kind == ALLTOALL) {
        for (int j = 0; j < p; j++)
            for (int k = 0; k < BLOCK; k++)
                if (c->recv[j * BLOCK + k] != value(round, j, me, k) && bad++ == 0) first = j * BLOCK + k;
    } else if (kind == ALLTOALLV) {
        for (int j = 0; j < p; j++)
            for (int k = 0; k < c->rc[j]; k++)
                if (c->recv[c->rd[j] + k] != value(round, j, me, k) && bad++ == 0) first = c->rd[j] + k;
    } else {
        for (int k = 0; k < REDUCE_N; k++) {
            int expect = p * (round + 1) + (k % 7) * p * (p - 1) / 2;
            if (c->recv[k] != expect && bad++ == 0) first = k;
        }
    }
    DH_CHECK(bad == 0, "%s round %d with %s: %d wrong elements, first at %d (%d)", kind_names[kind], round,
             call_names[call], bad, first, first >= 0 ? c->recv[first] : 0);
}

static void check_status(const MPI_Status *st, int source, int count, const char *what) {
    int n = -1;
    MPI_Get_count(st, MPI_INT, &n);
    DH_CHECK(st->MPI_SOURCE == source && st->MPI_TAG == TAG && n == count,
             "%s: status source %d tag %d count %d, expected %d %d %d", what, st->MPI_SOURCE, st->MPI_TAG, n, source,
             TAG, count);
}

/* A blocking collective on comm: every rank's side (rank 0's after its wait, the others' before theirs). */
static void collective_side(enum call call, int round, MPI_Comm comm) {
    int t = token(round, dh_rank, call);
    switch (call) {
    case BARRIER:
        DH_MPI(MPI_Barrier(comm));
        break;
    case BCAST: {
        int v = dh_rank == 0 ? token(round, 0, call) : -1;
        DH_MPI(MPI_Bcast(&v, 1, MPI_INT, 0, comm));
        DH_CHECK(v == token(round, 0, call), "MPI_Bcast: rank %d got %d, expected %d", dh_rank, v,
                 token(round, 0, call));
        break;
    }
    case ALLREDUCE1: {
        int sum = -1, expect = 0;
        for (int r = 0; r < dh_size; r++) expect += token(round, r, call);
        DH_MPI(MPI_Allreduce(&t, &sum, 1, MPI_INT, MPI_SUM, comm));
        DH_CHECK(sum == expect, "MPI_Allreduce(1): rank %d got %d, expected %d", dh_rank, sum, expect);
        break;
    }
    case COMM_DUP: {
        MPI_Comm dup = MPI_COMM_NULL;
        int n = -1;
        DH_MPI(MPI_Comm_dup(comm, &dup));
        if (dup != MPI_COMM_NULL) {
            MPI_Comm_size(dup, &n);
            MPI_Comm_free(&dup);
        }
        DH_CHECK(n == dh_size, "MPI_Comm_dup: a communicator of %d ranks, expected %d", n, dh_size);
        break;
    }
    default:
        break;
    }
}

/* Rank 0's side after its wait. */
static void release_others(enum call call, int round, MPI_Comm comm) {
    if (collective_call(call)) {
        collective_side(call, round, comm);
        return;
    }
    for (int r = 1; r < dh_size; r++) {
        int t = token(round, r, call);
        if (call == SSEND) {
            int got = -1;
            MPI_Status st;
            DH_MPI(MPI_Recv(&got, 1, MPI_INT, r, TAG, comm, &st));
            DH_CHECK(got == t, "rank 0 got %d from %d, expected %d", got, r, t);
            check_status(&st, r, 1, "MPI_Recv of the MPI_Ssend");
        } else {
            if (call == SENDRECV || call == SENDRECV_REPLACE) { /* their send side first */
                int got = -1;
                DH_MPI(MPI_Recv(&got, 1, MPI_INT, r, TAG, comm, MPI_STATUS_IGNORE));
                DH_CHECK(got == -t, "rank 0 got %d from %d, expected %d", got, r, -t);
            }
            DH_MPI(MPI_Send(&t, 1, MPI_INT, r, TAG, comm));
        }
    }
}

/* A rank >= 1's blocking call, which returns only after rank 0 has left its wait. */
static void blocking_call(enum call call, int round, MPI_Comm comm) {
    int t = token(round, dh_rank, call), got = -1;
    MPI_Status st;
    if (collective_call(call)) {
        collective_side(call, round, comm);
        return;
    }
    switch (call) {
    case RECV:
        DH_MPI(MPI_Recv(&got, 1, MPI_INT, 0, TAG, comm, &st));
        break;
    case PROBE_RECV: {
        DH_MPI(MPI_Probe(0, TAG, comm, &st));
        check_status(&st, 0, 1, "MPI_Probe");
        DH_MPI(MPI_Recv(&got, 1, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, comm, &st));
        break;
    }
    case MPROBE_MRECV: {
        MPI_Message m;
        DH_MPI(MPI_Mprobe(0, TAG, comm, &m, &st));
        check_status(&st, 0, 1, "MPI_Mprobe");
        DH_MPI(MPI_Mrecv(&got, 1, MPI_INT, &m, &st));
        DH_CHECK(m == MPI_MESSAGE_NULL, "MPI_Mrecv left the message handle set");
        break;
    }
    case SENDRECV: {
        int mine = -t;
        DH_MPI(MPI_Sendrecv(&mine, 1, MPI_INT, 0, TAG, &got, 1, MPI_INT, 0, TAG, comm, &st));
        break;
    }
    case SENDRECV_REPLACE:
        got = -t;
        DH_MPI(MPI_Sendrecv_replace(&got, 1, MPI_INT, 0, TAG, 0, TAG, comm, &st));
        break;
    case SSEND:
        DH_MPI(MPI_Ssend(&t, 1, MPI_INT, 0, TAG, comm));
        return;
    default:
        return;
    }
    DH_CHECK(got == t, "%s: rank %d got %d, expected %d", call_names[call], dh_rank, got, t);
    check_status(&st, 0, 1, call_names[call]);
}

int main(int argc, char **argv) {
    dh_init(&argc, &argv, "dropin_progress");
    if (dh_size > 64) {
        if (dh_rank == 0) fprintf(stderr, "at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int level = -1;
    MPI_Query_thread(&level);
    DH_CHECK(level == MPI_THREAD_SINGLE, "MPI_Query_thread after MPI_Init: %d, expected MPI_THREAD_SINGLE (%d)", level,
             MPI_THREAD_SINGLE);
    const char *progress = getenv("PLANCOLL_DROPIN_PROGRESS");
    bool with_collectives = progress == NULL || strcmp(progress, "calls") != 0;
    MPI_Comm coll_comm, p2p_comm; /* the collectives' communicator and the other one: distinct */
    DH_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &coll_comm));
    DH_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &p2p_comm));
    MPI_Comm_set_errhandler(coll_comm, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(p2p_comm, MPI_ERRORS_RETURN);
    int p = dh_size, me = dh_rank;
    struct coll c[NKINDS];
    for (int kind = 0; kind < NKINDS; kind++) {
        size_t n = kind == ALLREDUCE ? REDUCE_N : (size_t)p * 3 * BLOCK;
        c[kind].send = malloc(sizeof(int) * n);
        c[kind].recv = malloc(sizeof(int) * n);
        if (!c[kind].send || !c[kind].recv) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int j = 0, so = 0, ro = 0; j < p; j++) {
        c[ALLTOALLV].sc[j] = vcount(me, j);
        c[ALLTOALLV].sd[j] = so;
        so += c[ALLTOALLV].sc[j];
        c[ALLTOALLV].rc[j] = vcount(j, me);
        c[ALLTOALLV].rd[j] = ro;
        ro += c[ALLTOALLV].rc[j];
    }
    DH_MPI(MPI_Alltoall_init(c[ALLTOALL].send, BLOCK, MPI_INT, c[ALLTOALL].recv, BLOCK, MPI_INT, coll_comm,
                             MPI_INFO_NULL, &c[ALLTOALL].req));
    DH_MPI(MPI_Alltoallv_init(c[ALLTOALLV].send, c[ALLTOALLV].sc, c[ALLTOALLV].sd, MPI_INT, c[ALLTOALLV].recv,
                              c[ALLTOALLV].rc, c[ALLTOALLV].rd, MPI_INT, coll_comm, MPI_INFO_NULL, &c[ALLTOALLV].req));
    DH_MPI(MPI_Allreduce_init(c[ALLREDUCE].send, c[ALLREDUCE].recv, REDUCE_N, MPI_INT, MPI_SUM, coll_comm,
                              MPI_INFO_NULL, &c[ALLREDUCE].req));
    int only_kind = argc > 2 ? atoi(argv[1]) : -1, only_call = argc > 2 ? atoi(argv[2]) : -1;
    for (int kind = 0; kind < NKINDS; kind++)
        for (int call = 0; call < NCALLS; call++)
            for (int round = 0; round < ROUNDS && (with_collectives || !collective_call(call)); round++)
                if (only_kind < 0 || (kind == only_kind && call == only_call)) {
                    fill(kind, &c[kind], round);
                    /* Rank 0 starts last, so the others' plans cannot run to their end inside their own MPI_Start. */
                    if (me == 0) usleep(START_DELAY_US);
                    DH_MPI(MPI_Start(&c[kind].req));
                    if (me == 0) {
                        DH_MPI(MPI_Wait(&c[kind].req, MPI_STATUS_IGNORE));
                        release_others(call, round, p2p_comm);
                    } else {
                        blocking_call(call, round, p2p_comm);
                        DH_MPI(MPI_Wait(&c[kind].req, MPI_STATUS_IGNORE));
                    }
                    check_result(kind, &c[kind], round, call);
                }
    for (int kind = 0; kind < NKINDS; kind++) {
        DH_MPI(MPI_Request_free(&c[kind].req));
        free(c[kind].send);
        free(c[kind].recv);
    }
    MPI_Comm_free(&p2p_comm);
    MPI_Comm_free(&coll_comm);
    return dh_finish();
}
