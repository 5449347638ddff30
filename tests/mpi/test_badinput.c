/* Bad input: every invalid argument gives its documented code and a message on every rank, writes nothing into
 * the receive buffer, never hangs or crashes, and leaves the communicator usable. Errors that only some ranks
 * see (one rank's NULL buffer, counts that differ) must still fail on every rank. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

#define N 4
#define SENTINEL 0x5a

static unsigned char *recv_area; /* P * N ints, sentinel-filled */
static size_t recv_bytes;

static void reset_recv(void) { memset(recv_area, SENTINEL, recv_bytes); }

static void check_untouched(const char *what)
{
    for (size_t i = 0; i < recv_bytes; i++)
        if (recv_area[i] != SENTINEL) {
            TL_CHECK(0, "%s: receive buffer byte %zu was written", what, i);
            return;
        }
    tl_checks++;
}

/* The communicator still works: a plain MPI collective gives the right answer. */
static void check_comm_usable(const char *what)
{
    int one = 1, sum = 0;
    int rc = tl_allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    TL_CHECK(rc == MPI_SUCCESS && sum == tl_size, "%s: MPI_COMM_WORLD unusable afterwards", what);
}

/* rc must be `expected` on ranks where `local` is true, and `expected` or PLANCOLL_ERR_REMOTE elsewhere. */
static void expect(int rc, int expected, bool local, plancoll_plan p, const char *what)
{
    if (local)
        TL_CHECK(rc == expected, "%s: got %d (%s), expected %d (%s); detail: %s", what, rc, plancoll_strerror(rc),
                 expected, plancoll_strerror(expected), plancoll_error_detail());
    else
        TL_CHECK(rc == expected || rc == PLANCOLL_ERR_REMOTE, "%s: got %d (%s), expected %d or REMOTE", what, rc,
                 plancoll_strerror(rc), expected);
    if (rc != PLANCOLL_SUCCESS) {
        TL_CHECK(p == NULL, "%s: a failed plan call must leave the handle NULL", what);
        TL_CHECK(plancoll_error_detail()[0] != '\0', "%s: no detail message", what);
    }
    check_untouched(what);
    check_comm_usable(what);
    reset_recv();
}

static int sendbuf[4096];

static void alltoall_cases(void)
{
    plancoll_plan p;
    int rc;
    void *r = recv_area;
    /* NULL send buffer on one rank only */
    p = NULL;
    rc = plancoll_plan_alltoall(tl_rank == 0 ? NULL : sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_NULL_BUFFER, tl_rank == 0, p, "alltoall NULL sendbuf on rank 0");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, NULL, N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    TL_CHECK(rc == PLANCOLL_ERR_NULL_BUFFER, "alltoall NULL recvbuf: %d", rc);
    check_comm_usable("alltoall NULL recvbuf");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, -1, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_COUNT, true, p, "alltoall negative sendcount");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, tl_rank == tl_size - 1 ? -3 : N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_COUNT, tl_rank == tl_size - 1, p, "alltoall negative recvcount on the last rank");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_DATATYPE_NULL, r, N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_DATATYPE, true, p, "alltoall MPI_DATATYPE_NULL");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_DOUBLE, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_TYPE_MISMATCH, true, p, "alltoall send 4 ints, receive 4 doubles");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, MPI_IN_PLACE, N, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_IN_PLACE, true, p, "alltoall recvbuf MPI_IN_PLACE");
    /* block size differs across ranks: only the agreement check sees it */
    if (tl_size > 1) {
        p = NULL;
        int n = tl_rank == 0 ? 2 : N;
        rc = plancoll_plan_alltoall(sendbuf, n, MPI_INT, r, n, MPI_INT, MPI_COMM_WORLD, 0, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "alltoall block size differs on rank 0");
        p = NULL;
        rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD,
                                    tl_rank == 0 ? PLANCOLL_MEASURE : PLANCOLL_ESTIMATE, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "alltoall planner flags differ on rank 0");
        /* MPI_IN_PLACE on some ranks only: the schedules differ, so executing would hang */
        p = NULL;
        memcpy(recv_area, sendbuf, recv_bytes);
        rc = plancoll_plan_alltoall(tl_rank == 0 ? MPI_IN_PLACE : (void *)sendbuf, N, MPI_INT, r, N, MPI_INT,
                                    MPI_COMM_WORLD, 0, &p);
        TL_CHECK(memcmp(recv_area, sendbuf, recv_bytes) == 0, "alltoall mixed in-place: receive buffer changed");
        reset_recv();
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "alltoall MPI_IN_PLACE on rank 0 only");
    }
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_NULL, 0, &p);
    expect(rc, PLANCOLL_ERR_COMM, true, p, "alltoall MPI_COMM_NULL");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD, 1u << 20, &p);
    expect(rc, PLANCOLL_ERR_FLAGS, true, p, "alltoall unknown flag bit");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD, PLANCOLL_MEASURE | PLANCOLL_PATIENT, &p);
    expect(rc, PLANCOLL_ERR_FLAGS, true, p, "alltoall two rigor levels");
    rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, r, N, MPI_INT, MPI_COMM_WORLD, 0, NULL);
    TL_CHECK(rc == PLANCOLL_ERR_NULL_PLAN, "alltoall NULL plan pointer: %d", rc);
    check_untouched("alltoall NULL plan pointer");
}

static void intercomm_case(void)
{
    if (tl_size < 2) return;
    MPI_Comm half, inter;
    int color = tl_rank < tl_size / 2;
    MPI_Comm_split(MPI_COMM_WORLD, color, tl_rank, &half);
    int remote_leader = color ? tl_size / 2 : 0;
    MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, remote_leader, 77, &inter);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, recv_area, N, MPI_INT, inter, 0, &p);
    expect(rc, PLANCOLL_ERR_INTERCOMM, true, p, "alltoall on an intercommunicator");
    MPI_Comm_free(&inter);
    MPI_Comm_free(&half);
}

static int user_handler_calls;
static void count_errors(MPI_Comm *comm, int *code, ...)
{
    (void)comm;
    (void)code;
    user_handler_calls++;
}

/* Whether comm's error handler is `expected` (the handle MPI_Comm_get_errhandler gives is freed again). */
static bool handler_is(MPI_Comm comm, MPI_Errhandler expected)
{
    MPI_Errhandler h = MPI_ERRHANDLER_NULL;
    MPI_Comm_get_errhandler(comm, &h);
    bool same = h == expected;
    MPI_Errhandler_free(&h);
    return same;
}

/* Every plan entry point on a communicator handle: each must give PLANCOLL_ERR_COMM and change nothing. */
static void expect_comm_refused(MPI_Comm comm, const char *what)
{
    char label[160];
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoall(sendbuf, N, MPI_INT, recv_area, N, MPI_INT, comm, PLANCOLL_MEASURE, &p);
    snprintf(label, sizeof label, "alltoall on %s", what);
    expect(rc, PLANCOLL_ERR_COMM, true, p, label);
    int counts[64], displs[64];
    for (int i = 0; i < 64; i++) counts[i] = displs[i] = 0;
    p = NULL;
    rc = plancoll_plan_alltoallv(sendbuf, counts, displs, MPI_INT, recv_area, counts, displs, MPI_INT, comm, 0, &p);
    snprintf(label, sizeof label, "alltoallv on %s", what);
    expect(rc, PLANCOLL_ERR_COMM, true, p, label);
    p = NULL;
    rc = plancoll_plan_allreduce(sendbuf, recv_area, N, MPI_INT, MPI_SUM, comm, 0, &p);
    snprintf(label, sizeof label, "allreduce on %s", what);
    expect(rc, PLANCOLL_ERR_COMM, true, p, label);
    p = NULL;
    rc = plancoll_plan_transpose(4, 4, MPI_INT, recv_area, recv_area, comm, 0, &p);
    snprintf(label, sizeof label, "transpose on %s", what);
    expect(rc, PLANCOLL_ERR_COMM, true, p, label);
    ptrdiff_t ln0 = -7;
    ptrdiff_t n = plancoll_local_size_transposed(4, 4, comm, &ln0, NULL, NULL, NULL);
    TL_CHECK(n == -PLANCOLL_ERR_COMM && ln0 == -7, "local_size_transposed on %s: %td", what, n);
    void *mem = recv_area;
    rc = plancoll_malloc(64, comm, &mem);
    TL_CHECK(rc == PLANCOLL_ERR_COMM && mem == NULL, "plancoll_malloc on %s: %d", what, rc);
    char *text = (char *)recv_area;
    rc = plancoll_export_wisdom_to_string(&text, comm);
    TL_CHECK(rc == PLANCOLL_ERR_COMM && text == NULL, "export_wisdom on %s: %d", what, rc);
    rc = plancoll_import_wisdom_from_string("plancoll-wisdom 1\n", comm);
    TL_CHECK(rc == PLANCOLL_ERR_COMM, "import_wisdom on %s: %d", what, rc);
    reset_recv();
}

/* A communicator the caller freed: the variable MPI_Comm_free cleared (MPI_COMM_NULL) and a copy of the handle
 * taken before the free. With MPI's default handler (MPI_ERRORS_ARE_FATAL on MPI_COMM_WORLD, where MPICH raises
 * errors of invalid handles) a check that calls MPI on the stale handle aborts the job; plancoll must return
 * PLANCOLL_ERR_COMM and leave the caller's error handlers as they were. Nothing creates a communicator between
 * the free and the calls, so MPI cannot have reused the handle yet.
 * That holds where handles are integers MPI can look up (MPICH). Where a handle is the object's address (Open MPI),
 * the stale copy points at freed memory: no call, MPI's own checks included, can tell it from a communicator
 * without reading that memory (using it is erroneous, and MPI need not detect it), so there only the MPI_COMM_NULL
 * cases run, the user handler's case on MPI_COMM_NULL. */
static void freed_comm_case(void)
{
    MPI_Comm comm, stale;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    stale = comm;
    MPI_Comm_free(&comm);
    TL_CHECK(comm == MPI_COMM_NULL, "MPI_Comm_free must leave MPI_COMM_NULL");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    expect_comm_refused(comm, "the freed variable (MPI_COMM_NULL)");
    const bool handles_are_integers = _Generic(MPI_COMM_WORLD, int: true, default: false);
    if (handles_are_integers)
        expect_comm_refused(stale, "a stale copy of a freed communicator");
    else if (tl_rank == 0)
        printf("badinput: this MPI's handles are pointers: a stale copy of a freed communicator is not checkable, not tried\n");
    MPI_Comm refused = handles_are_integers ? stale : MPI_COMM_NULL;
    TL_CHECK(handler_is(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL), "MPI_COMM_WORLD's error handler was changed");
    TL_CHECK(handler_is(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL), "MPI_COMM_SELF's error handler was changed");
    /* A handler of the caller's own stays installed and is not called for plancoll's check. */
    MPI_Errhandler mine;
    MPI_Comm_create_errhandler(count_errors, &mine);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, mine);
    expect_comm_refused(refused, "a stale communicator (MPI_COMM_NULL where not checkable), with a user error handler");
    TL_CHECK(handler_is(MPI_COMM_WORLD, mine), "the user's error handler on MPI_COMM_WORLD was replaced");
    TL_CHECK(user_handler_calls == 0, "the user's error handler was called %d times", user_handler_calls);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Errhandler_free(&mine);
}

static void alltoallv_cases(void)
{
    int P = tl_size;
    int *sc = malloc(sizeof(int) * P), *sd = malloc(sizeof(int) * P), *rcn = malloc(sizeof(int) * P),
        *rd = malloc(sizeof(int) * P);
    for (int i = 0; i < P; i++) {
        sc[i] = rcn[i] = 1;
        sd[i] = rd[i] = i;
    }
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoallv(sendbuf, NULL, sd, MPI_INT, recv_area, rcn, rd, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_NULL_BUFFER, true, p, "alltoallv NULL sendcounts");
    sd[P - 1] = -1;
    p = NULL;
    rc = plancoll_plan_alltoallv(sendbuf, sc, sd, MPI_INT, recv_area, rcn, rd, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_DISPL, true, p, "alltoallv negative sdispls");
    sd[P - 1] = P - 1;
    rcn[0] = tl_rank == 0 ? -2 : 1;
    p = NULL;
    rc = plancoll_plan_alltoallv(sendbuf, sc, sd, MPI_INT, recv_area, rcn, rd, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_COUNT, tl_rank == 0, p, "alltoallv negative recvcounts on rank 0");
    /* rank 0 expects 2 ints from every rank, which send it 1 */
    rcn[0] = 1;
    if (tl_rank == 0)
        for (int i = 0; i < P; i++) rcn[i] = 2, rd[i] = 2 * i;
    p = NULL;
    rc = plancoll_plan_alltoallv(sendbuf, sc, sd, MPI_INT, recv_area, rcn, rd, MPI_INT, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "alltoallv recvcounts disagree with sendcounts");
    free(sc);
    free(sd);
    free(rcn);
    free(rd);
}

static void keep_inout(void *in, void *inout, int *len, MPI_Datatype *type)
{
    (void)in, (void)inout, (void)len, (void)type;
}

/* Byte sizes or offsets of 2^60 and more, chosen so that 64-bit products wrap to 0 (count 2^30 x extent or size
 * 2^34 = 2^64): PLANCOLL_ERR_OVERFLOW on every rank before anything is touched, never a plan over a wrapped size.
 * The types are address arithmetic only; no buffer of that size exists or is reached. */
static void overflow_cases(void)
{
    const int P = tl_size;
    MPI_Datatype sparse, fat, wide;
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 34, &sparse); /* 4 bytes every 16 GiB */
#if PC_HAVE_MPI_LARGE_COUNT
    MPI_Type_contiguous_c((MPI_Count)1 << 34, MPI_BYTE, &fat);       /* 16 GiB of data per element */
#else /* an MPI-3.1 (Open MPI 4.1): the same 16 GiB as 16 contiguous GiB */
    MPI_Datatype gib;
    MPI_Type_contiguous(1 << 30, MPI_BYTE, &gib);
    MPI_Type_contiguous(16, gib, &fat);
    MPI_Type_free(&gib);
#endif
    MPI_Type_create_resized(MPI_INT, 0, (MPI_Aint)1 << 40, &wide);   /* 4 bytes every TiB */
    MPI_Type_commit(&sparse);
    MPI_Type_commit(&fat);
    MPI_Type_commit(&wide);
    plancoll_plan p = NULL;
    int rc = plancoll_plan_alltoall(sendbuf, 1 << 30, sparse, recv_area, 1 << 30, sparse, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "alltoall of P x 2^30 elements of extent 2^34 (2^64 bytes per block)");
    p = NULL;
    rc = plancoll_plan_alltoall(sendbuf, 1 << 30, fat, recv_area, 1 << 30, fat, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "alltoall of 2^30 elements of 2^34 bytes");

    int *counts = malloc(sizeof(int) * 2 * (size_t)P), *displs = counts + P;
    for (int i = 0; i < P; i++) {
        counts[i] = 1;
        displs[i] = i;
    }
    displs[P - 1] = INT_MAX; /* block P-1 lies 2^71 bytes away */
    p = NULL;
    rc = plancoll_plan_alltoallv(sendbuf, counts, displs, wide, recv_area, counts, displs, wide, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "alltoallv with a displacement of INT_MAX elements of extent 2^40");
    p = NULL;
    rc = plancoll_plan_alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, recv_area, counts, displs, wide,
                                 MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "alltoallv in place, a displacement 2^71 bytes away");
    free(counts);

    MPI_Op keep;
    MPI_Op_create(keep_inout, 1, &keep);
    p = NULL;
    rc = plancoll_plan_allreduce(MPI_IN_PLACE, recv_area, 1 << 30, fat, keep, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "allreduce of 2^30 elements of 2^34 bytes");
    p = NULL;
    rc = plancoll_plan_allreduce(MPI_IN_PLACE, recv_area, 1 << 30, sparse, keep, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OVERFLOW, true, p, "allreduce of 2^30 elements of extent 2^34");
    MPI_Op_free(&keep);
    MPI_Type_free(&sparse);
    MPI_Type_free(&fat);
    MPI_Type_free(&wide);
}

static void allreduce_cases(void)
{
    double *s = (double *)sendbuf;
    double *r = (double *)recv_area;
    plancoll_plan p = NULL;
    int rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_BAND, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OP, true, p, "allreduce MPI_BAND on MPI_DOUBLE");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_OP_NULL, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OP, true, p, "allreduce MPI_OP_NULL");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_REPLACE, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OP, true, p, "allreduce MPI_REPLACE");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_CHAR, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OP, true, p, "allreduce MPI_SUM on MPI_CHAR");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_FLOAT_INT, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_OP, true, p, "allreduce MPI_SUM on MPI_FLOAT_INT");
    MPI_Datatype pair;
    MPI_Type_contiguous(2, MPI_DOUBLE, &pair);
    MPI_Type_commit(&pair);
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, 2, pair, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_DATATYPE, true, p, "allreduce predefined op on a derived type");
    MPI_Type_free(&pair);
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DATATYPE_NULL, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_DATATYPE, true, p, "allreduce MPI_DATATYPE_NULL");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, -5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_COUNT, true, p, "allreduce negative count");
    p = NULL;
    rc = plancoll_plan_allreduce(r, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_IN_PLACE, true, p, "allreduce sendbuf == recvbuf");
    p = NULL;
    rc = plancoll_plan_allreduce(tl_rank == 1 % tl_size ? NULL : s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_NULL_BUFFER, tl_rank == 1 % tl_size, p, "allreduce NULL sendbuf on rank 1");
    if (tl_size > 1) {
        p = NULL;
        rc = plancoll_plan_allreduce(s, r, tl_rank == 0 ? N - 1 : N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "allreduce count differs on rank 0");
        p = NULL;
        rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, tl_rank == 0 ? MPI_MAX : MPI_SUM, MPI_COMM_WORLD, 0, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "allreduce op differs on rank 0");
        p = NULL;
        rc = plancoll_plan_allreduce(s, r, N, tl_rank == 0 ? MPI_LONG : MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "allreduce datatype differs on rank 0");
    }
}

/* a op b = a: associative, not commutative */
static void noncommutative_first(void *in, void *inout, int *len, MPI_Datatype *t)
{
    (void)t;
    memcpy(inout, in, sizeof(double) * (size_t)*len);
}

static void environment_cases(void)
{
    double *s = (double *)sendbuf, *r = (double *)recv_area;
    plancoll_plan p = NULL;
    tl_force("allreduce.no_such_algorithm");
    int rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_ALGORITHM, true, p, "PLANCOLL_ALGORITHM names an unknown algorithm");
    TL_CHECK(strstr(plancoll_error_detail(), "no_such_algorithm") || rc != PLANCOLL_ERR_ALGORITHM,
             "the detail should name the unknown algorithm: %s", plancoll_error_detail());
    /* rabenseifner cannot run a non-commutative op */
    MPI_Op op;
    MPI_Op_create(noncommutative_first, 0, &op); /* never applied: planning fails first */
    tl_force("allreduce.rabenseifner");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, op, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_INAPPLICABLE, true, p, "rabenseifner forced on a non-commutative op");
    MPI_Op_free(&op);
    tl_force(NULL);
    setenv("PLANCOLL_WAIT", "sometimes", 1);
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_ENV, true, p, "PLANCOLL_WAIT=sometimes");
    unsetenv("PLANCOLL_WAIT");
    /* the runner sets PLANCOLL_CALIBRATE=0; a malformed value, and values that differ between ranks (one rank
     * would calibrate, a collective, alone) */
    const char *calibrate_before = getenv("PLANCOLL_CALIBRATE");
    char calibrate_saved[16];
    snprintf(calibrate_saved, sizeof calibrate_saved, "%s", calibrate_before ? calibrate_before : "");
    setenv("PLANCOLL_CALIBRATE", "yes", 1);
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
    expect(rc, PLANCOLL_ERR_ENV, true, p, "PLANCOLL_CALIBRATE=yes");
    if (tl_size > 1) {
        setenv("PLANCOLL_CALIBRATE", tl_rank == 0 ? "1" : "0", 1);
        p = NULL;
        rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, 0, &p);
        expect(rc, PLANCOLL_ERR_MISMATCH, true, p, "PLANCOLL_CALIBRATE differs on rank 0");
    }
    if (calibrate_before)
        setenv("PLANCOLL_CALIBRATE", calibrate_saved, 1);
    else
        unsetenv("PLANCOLL_CALIBRATE");
    /* WISDOM_ONLY: no answer until a MEASURE plan of the same problem taught one */
    plancoll_forget_wisdom();
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_WISDOM_ONLY, &p);
    expect(rc, PLANCOLL_ERR_NO_WISDOM, true, p, "WISDOM_ONLY without wisdom");
    p = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_MEASURE, &p);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "MEASURE plan failed: %d %s", rc, plancoll_error_detail());
    const char *measured = p ? plancoll_plan_algorithm(p) : NULL;
    plancoll_plan q = NULL;
    rc = plancoll_plan_allreduce(s, r, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, PLANCOLL_WISDOM_ONLY, &q);
    TL_CHECK(rc == PLANCOLL_SUCCESS, "WISDOM_ONLY after MEASURE failed: %d %s", rc, plancoll_error_detail());
    if (q && measured)
        TL_CHECK(strcmp(plancoll_plan_algorithm(q), measured) == 0, "wisdom gave %s, MEASURE chose %s",
                 plancoll_plan_algorithm(q), measured);
    if (q) plancoll_destroy_plan(&q);
    if (p) plancoll_destroy_plan(&p);
    plancoll_forget_wisdom();
    reset_recv();
}

static void handle_cases(void)
{
    TL_CHECK(plancoll_execute(NULL) == PLANCOLL_ERR_NULL_PLAN, "execute(NULL)");
    TL_CHECK(plancoll_execute_buffers(NULL, sendbuf, recv_area) == PLANCOLL_ERR_NULL_PLAN, "execute_buffers(NULL)");
    TL_CHECK(plancoll_destroy_plan(NULL) == PLANCOLL_ERR_NULL_PLAN, "destroy(NULL)");
    plancoll_plan none = NULL;
    TL_CHECK(plancoll_destroy_plan(&none) == PLANCOLL_ERR_NULL_PLAN, "destroy(&NULL)");
    TL_CHECK(plancoll_fprint_plan(NULL, stdout) == PLANCOLL_ERR_NULL_PLAN, "fprint_plan(NULL)");
    TL_CHECK(plancoll_plan_algorithm(NULL) == NULL, "plan_algorithm(NULL)");

    plancoll_plan p = NULL, copy;
    TL_OK(plancoll_plan_alltoall(sendbuf, N, MPI_INT, recv_area, N, MPI_INT, MPI_COMM_WORLD, 0, &p));
    TL_CHECK(plancoll_fprint_plan(p, NULL) == PLANCOLL_ERR_ARGUMENT, "fprint_plan(p, NULL)");
    TL_CHECK(plancoll_execute_buffers(p, MPI_IN_PLACE, recv_area) == PLANCOLL_ERR_BUFFER,
             "execute_buffers in place on an out-of-place plan");
    TL_CHECK(plancoll_execute_buffers(p, sendbuf, MPI_IN_PLACE) == PLANCOLL_ERR_IN_PLACE, "execute_buffers recvbuf MPI_IN_PLACE");
    TL_CHECK(plancoll_execute_buffers(p, sendbuf, NULL) == PLANCOLL_ERR_NULL_BUFFER, "execute_buffers NULL recvbuf");
    check_untouched("execute_buffers with bad buffers");
    copy = p;
    TL_OK(plancoll_destroy_plan(&p));
    TL_CHECK(p == NULL, "destroy must set the handle to NULL");
    TL_CHECK(plancoll_execute(copy) == PLANCOLL_ERR_INVALID_PLAN, "execute on a destroyed plan");
    TL_CHECK(plancoll_destroy_plan(&copy) == PLANCOLL_ERR_INVALID_PLAN, "destroy twice");
    check_untouched("execute on a destroyed plan");
    check_comm_usable("destroyed plan");

    /* Handles are never reused: plans made after the destroy never get the copy's value, and the copy stays
     * invalid in every function that takes a plan. (Under mpi-badinput-nocache glibc hands the destroyed plan's
     * memory to the next plan at once: a handle that is the plan's address would then run that plan.) */
    plancoll_plan fresh[8];
    for (int i = 0; i < 8; i++) {
        fresh[i] = NULL;
        TL_OK(plancoll_plan_alltoall(sendbuf, N, MPI_INT, recv_area, N, MPI_INT, MPI_COMM_WORLD, 0, &fresh[i]));
        TL_CHECK(fresh[i] != copy, "new plan %d got the destroyed plan's handle", i);
    }
    reset_recv();
    TL_CHECK(plancoll_execute(copy) == PLANCOLL_ERR_INVALID_PLAN, "execute on a destroyed plan after new plans");
    TL_CHECK(plancoll_execute_buffers(copy, sendbuf, recv_area) == PLANCOLL_ERR_INVALID_PLAN,
             "execute_buffers on a destroyed plan");
    TL_CHECK(plancoll_fprint_plan(copy, stdout) == PLANCOLL_ERR_INVALID_PLAN, "fprint_plan on a destroyed plan");
    TL_CHECK(plancoll_plan_algorithm(copy) == NULL, "plan_algorithm on a destroyed plan");
    char spec[64] = "untouched";
    TL_CHECK(plancoll_plan_spec(copy, spec, sizeof spec) == PLANCOLL_ERR_INVALID_PLAN && strcmp(spec, "untouched") == 0,
             "plan_spec on a destroyed plan");
    TL_CHECK(plancoll_destroy_plan(&copy) == PLANCOLL_ERR_INVALID_PLAN, "destroy of a destroyed plan after new plans");
    /* a value that never was a plan is refused without being read */
    int not_a_plan = 0;
    plancoll_plan forged = (plancoll_plan)(void *)&not_a_plan;
    TL_CHECK(plancoll_execute(forged) == PLANCOLL_ERR_INVALID_PLAN, "execute on a forged handle");
    TL_CHECK(plancoll_fprint_plan(forged, stdout) == PLANCOLL_ERR_INVALID_PLAN, "fprint_plan on a forged handle");
    TL_CHECK(plancoll_destroy_plan(&forged) == PLANCOLL_ERR_INVALID_PLAN, "destroy of a forged handle");
    check_untouched("calls on stale and forged handles");
    for (int i = 0; i < 8; i++) TL_OK(plancoll_destroy_plan(&fresh[i]));
    check_comm_usable("stale and forged handles");

    /* every code has its own message */
    for (int c = 0; c < PLANCOLL_ERR_COUNT_OF_CODES; c++) {
        const char *m = plancoll_strerror(c);
        TL_CHECK(m && *m, "strerror(%d) empty", c);
        for (int d = 0; d < c; d++) TL_CHECK(strcmp(m, plancoll_strerror(d)) != 0, "codes %d and %d share a message", c, d);
    }
    TL_CHECK(strstr(plancoll_strerror(-1), "unknown") != NULL, "strerror(-1)");
    TL_CHECK(strstr(plancoll_strerror(PLANCOLL_ERR_COUNT_OF_CODES + 5), "unknown") != NULL, "strerror(out of range)");
    int major = -1, minor = -1, patch = -1;
    const char *v = plancoll_version(&major, &minor, &patch);
    TL_CHECK(major == PLANCOLL_VERSION_MAJOR && minor == PLANCOLL_VERSION_MINOR && patch == PLANCOLL_VERSION_PATCH &&
                 strcmp(v, PLANCOLL_VERSION_STRING) == 0,
             "version mismatch: %s", v);
}

int main(int argc, char **argv)
{
    tl_init(&argc, &argv, "badinput");
    recv_bytes = sizeof(int) * N * (size_t)tl_size;
    recv_area = malloc(recv_bytes);
    reset_recv();
    for (int i = 0; i < 4096; i++) sendbuf[i] = i;
    alltoall_cases();
    intercomm_case();
    freed_comm_case();
    alltoallv_cases();
    allreduce_cases();
    overflow_cases();
    environment_cases();
    handle_cases();
    free(recv_area);
    return tl_finish();
}
