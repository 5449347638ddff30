/*
 * plancoll: planned MPI collectives.
 *
 * A solver that calls the same MPI_Alltoall, MPI_Alltoallv or MPI_Allreduce thousands of times with the
 * same shape describes the call once (a plan), lets the planner choose how to run it on this machine, and
 * then executes the plan many times.  The model is FFTW's: plan, execute, destroy.
 *
 *     plancoll_plan p;
 *     int rc = plancoll_plan_alltoall(send, n, MPI_DOUBLE, recv, n, MPI_DOUBLE, comm, PLANCOLL_ESTIMATE, &p);
 *     if (rc != PLANCOLL_SUCCESS) fprintf(stderr, "%s: %s\n", plancoll_strerror(rc), plancoll_error_detail());
 *     for (int it = 0; it < 1000; it++) { fill(send); plancoll_execute(p); use(recv); }
 *     plancoll_destroy_plan(&p);
 *
 * Collective semantics.  Plan creation, execution and destruction are collective over the plan's
 * communicator: every rank calls them, in the same order relative to other plancoll and MPI collectives on
 * that communicator, and every rank calls the same execute function (plancoll_execute or
 * plancoll_execute_buffers) for a given execution.  Plans must be destroyed before MPI_Finalize.
 * plancoll uses its own duplicate of the communicator, so its messages never match the user's.
 *
 * Errors.  Every function returns PLANCOLL_SUCCESS (0) or one of the PLANCOLL_ERR_* codes below.
 * plancoll_strerror() gives the code's fixed message; plancoll_error_detail() gives the last failure's
 * detailed message (which argument, which rank).  Arguments are validated, and checked for agreement
 * across ranks, before any byte moves: a failed call writes nothing into the receive buffer and leaves the
 * communicator usable.  Plan creation fails on every rank when any rank's arguments are invalid.  Node-shared
 * memory a plan keeps (/dev/shm) is reserved when the plan is made, never left to fail with a SIGBUS at the first
 * execution. When the planner's choice does not fit a node, the planner chooses again among the candidates left
 * (MPI's own collective needs none of it), and plancoll_fprint_plan says what did not fit ("fell back"); only
 * when the algorithm is forced, or every candidate PLANCOLL_ALGORITHM allows needs more than a node has, does
 * plan creation fail with PLANCOLL_ERR_NOMEM on every rank, the size in the detail.
 *
 * Invalid handles.  MPI_COMM_NULL (what MPI_Comm_free leaves in the variable it frees) is PLANCOLL_ERR_COMM, and
 * so is a copy of a communicator handle the caller has freed: plancoll checks the handle with MPI's error handlers
 * returning codes for the length of the check (those of MPI_COMM_WORLD and MPI_COMM_SELF, where MPI raises errors
 * of handles that name no communicator; the caller's handlers are put back and never called), so it is an error
 * code rather than MPI's default abort. Once MPI has reused a freed handle for a new communicator (MPICH does at
 * the next communicator creation) the handle names that communicator: using it is erroneous, as in MPI. A
 * communicator must be the same on every rank: ranks whose handle is invalid fail alone, and the others wait for
 * them in the plan's first collective. Plan handles are never reused in a process: a destroyed plan's handle (any
 * copy of it) and a value that never was a plan are PLANCOLL_ERR_INVALID_PLAN in every function taking a plan.
 *
 * Sizes.  Counts are MPI's ints, but nothing built on them is: block sizes, buffer spans and byte offsets (count x
 * size, count x extent, displacement x extent) are computed in 64 bits with overflow checks, datatypes may hold more
 * than 2 GiB per element, and messages of more than 2 GiB go through MPI's large-count calls. A size or byte offset
 * of 2^60 bytes or more is PLANCOLL_ERR_OVERFLOW on every rank at plan time. An algorithm that cannot move a
 * problem's sizes is not a candidate for it (forced, it is PLANCOLL_ERR_INAPPLICABLE).
 *
 * Threads.  The library may be called from one thread at a time (MPI_THREAD_FUNNELED is enough), except with the
 * progress thread (PLANCOLL_PROGRESS_THREAD=1, below), whose own thread calls MPI beside the caller's: that needs
 * MPI_THREAD_MULTIPLE.
 */
#ifndef PLANCOLL_H
#define PLANCOLL_H

#include <mpi.h>
#include <stddef.h>
#include <stdio.h>

#include "plancoll_codes.h" /* version, error codes, flags, the plan handle: the MPI-free part */

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Plans ------------------------------------------------------------------------------------- */

/* MPI_Alltoall semantics. sendbuf may be MPI_IN_PLACE (then sendcount/sendtype are ignored and recvbuf
 * holds the data to send). Every rank must pass the same block size in bytes. */
PLANCOLL_API int plancoll_plan_alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                           void *recvbuf, int recvcount, MPI_Datatype recvtype,
                           MPI_Comm comm, unsigned flags, plancoll_plan *plan);

/* MPI_Alltoallv semantics. The count and displacement arrays are copied: the caller may change or free
 * them after planning. sendbuf may be MPI_IN_PLACE (then sendcounts/sdispls/sendtype are ignored). The
 * bytes rank i sends to rank j must equal the bytes rank j expects from rank i: checked at plan time. */
PLANCOLL_API int plancoll_plan_alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype,
                            MPI_Comm comm, unsigned flags, plancoll_plan *plan);

/* MPI_Allreduce semantics. sendbuf may be MPI_IN_PLACE on any rank. Every predefined op on every predefined
 * datatype MPI allows it on; user-defined ops (MPI_Op_create) on any committed datatype. Every rank receives
 * bit-identical results. Non-commutative user ops run only on algorithms that keep rank order.
 *
 * Predefined reductions have one answer whatever the planner picks. plancoll defines them as follows, and every
 * algorithm gives that answer bit for bit:
 * - Integers (C and Fortran, MPI_AINT, MPI_OFFSET, MPI_COUNT): SUM and PROD wrap modulo 2^bits (two's complement);
 *   MAX and MIN compare with the type's signedness (unsigned types as unsigned); LAND, LOR and LXOR take nonzero as
 *   true and give 1 or 0; BAND, BOR and BXOR (also on MPI_BYTE) are bitwise. MPI_C_BOOL and MPI_LOGICAL alike.
 * - Floating MAX and MIN (float, double, long double, REAL, DOUBLE PRECISION) are IEEE 754-2019 maximum and
 *   minimum: -0 < +0, and if any operand is a NaN the result is the default quiet NaN (positive, no payload: nan("")),
 *   whatever the NaNs' signs and payloads. They are commutative and associative on every bit pattern, so no
 *   reduction order changes a bit. (On one rank nothing is combined: the result is the input.)
 * - MAXLOC and MINLOC order the values as MAX and MIN do (a NaN wins either way and becomes the default NaN; +0
 *   ranks above -0) and give the lowest index among the pairs holding the winning value (all NaNs are one value).
 * - Floating SUM and PROD are IEEE arithmetic in the type in an order the algorithm chooses: results that no order
 *   rounds are the same under every algorithm; others are within (P-1) u sum|x| (SUM) or about (P-1) u |product|
 *   (PROD) of the exact result, u the type's unit roundoff. The sign and payload of a NaN result are unspecified.
 *   Complex SUM is by parts; complex PROD is the product of the type's language: C's operator (C11 Annex G: infinite
 *   products recovered) on the C types, the two textbook formulas on Fortran's COMPLEX and DOUBLE COMPLEX (with
 *   infinities or NaNs among three or more factors, which parts end infinite or NaN depends on the order).
 * allreduce.native and allreduce.native_blocking, and inter=mpi of the hierarchical algorithms, let MPI reduce
 * with its own op. They are candidates only for (op, datatype) pairs where MPI's op gives the answers above, which
 * plancoll finds out once per process by comparing MPI_Reduce_local with its own loops on values where
 * implementations differ; forced elsewhere, they fail with PLANCOLL_ERR_INAPPLICABLE on every rank. With MPICH
 * 4.0.2 that leaves them out of MAX and MIN on every unsigned type (MPICH compares them as signed) and every
 * floating type, and of MAXLOC and MINLOC on MPI_FLOAT_INT, MPI_DOUBLE_INT and MPI_LONG_DOUBLE_INT (MPICH keeps
 * one operand or the other by position when a NaN or a signed zero is involved, so its ranks can even end with
 * different bits). */
PLANCOLL_API int plancoll_plan_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm, unsigned flags, plancoll_plan *plan);

/* ---- Distributed-matrix transpose (FFTW's MPI transpose, planned) ---------------------------------
 * An n0 x n1 matrix of elements is distributed by rows over the ranks of comm with FFTW's default block
 * distribution: block b0 = ceil(n0/P), rank r holds local_n0 = min(b0, n0 - r b0) rows (0 past the last block)
 * starting at row local_0_start = r b0 (0 for a rank without rows), each row n1 contiguous elements. The
 * transpose produces the n1 x n0 matrix distributed the same way over its n1 rows (local_n1 rows from
 * local_1_start, each n0 elements). This is fftw_mpi_plan_transpose with fftw_mpi_local_size_2d_transposed, for
 * any element type, so an FFTW MPI code can swap it in: the sizes and the buffers are the same. */

/* This rank's share of both distributions of an n0 x n1 transpose over comm: local_n0 rows of the input from
 * local_0_start, local_n1 rows of the output from local_1_start (any pointer may be NULL), identical to
 * fftw_mpi_local_size_2d_transposed's. Returns how many elements each of in and out must hold,
 * max(1, local_n0 n1, local_n1 n0) (FFTW's count is never smaller, so buffers sized by FFTW fit);
 * on bad input it returns the negated error code (-PLANCOLL_ERR_COUNT for a negative size, -PLANCOLL_ERR_COMM for
 * MPI_COMM_NULL or an invalid communicator, -PLANCOLL_ERR_OVERFLOW when the product does not fit ptrdiff_t,
 * -PLANCOLL_ERR_NOT_INITIALIZED before MPI_Init) with plancoll_error_detail() set. Local: no communication. */
PLANCOLL_API ptrdiff_t plancoll_local_size_transposed(ptrdiff_t n0, ptrdiff_t n1, MPI_Comm comm, ptrdiff_t *local_n0,
                                                      ptrdiff_t *local_0_start, ptrdiff_t *local_n1,
                                                      ptrdiff_t *local_1_start);

/* Plans the transpose of the n0 x n1 matrix in `in` (local_n0 x n1 elements of type element) into `out`
 * (local_n1 x n0 elements). in == out is an in-place transpose; otherwise in and out must not overlap and in is
 * left unchanged. element must be dense (size == extent, no holes: predefined types, contiguous derived types;
 * MPI_C_DOUBLE_COMPLEX for fftw_complex); in and out must hold plancoll_local_size_transposed's count each, and
 * may be NULL only on a rank whose share is empty. Every rank passes the same n0, n1, element size and flags.
 * The plan runs one of two strategies, chosen by the model (ESTIMATE) or by timing both on temporary buffers
 * (MEASURE and above), and shown by plancoll_fprint_plan and plancoll_plan_spec:
 *  - fused ("transpose(fused)", spec "transpose.fused"): each rank packs its rows, transposed, into its part of a
 *    node-shared area and its node peers copy their blocks from there straight into their output (two passes over
 *    the data); when in comes from plancoll_malloc on comm and is not out, peers transpose straight out of in (one
 *    pass). Blocks for other nodes leave from the packed rows as one message per destination and are unpacked as
 *    they land.
 *  - composite ("transpose(<inner algorithm>)", the inner spec): pack into a plan-owned scratch, exchange the
 *    blocks with an inner alltoall plan (every block the same size: n0 and n1 multiples of P) or alltoallv plan
 *    (otherwise), chosen by the planner among the registered algorithms under flags, and interleave the received
 *    blocks into out (three passes).
 * PLANCOLL_ALGORITHM=transpose.fused or transpose.composite forces a strategy (every rank alike, else
 * PLANCOLL_ERR_MISMATCH); forcing an alltoall or alltoallv algorithm forces the composite with that exchange. plancoll_execute, plancoll_execute_buffers (any in/out of the same sizes, in place or not),
 * plancoll_fprint_plan, plancoll_plan_algorithm ("transpose(<inner algorithm>)") and plancoll_destroy_plan work
 * on it. Errors: PLANCOLL_ERR_COUNT (n0 or n1 negative), PLANCOLL_ERR_NULL_BUFFER, PLANCOLL_ERR_IN_PLACE
 * (MPI_IN_PLACE given: pass in == out instead), PLANCOLL_ERR_DATATYPE (MPI_DATATYPE_NULL or not dense),
 * PLANCOLL_ERR_COMM, PLANCOLL_ERR_INTERCOMM, PLANCOLL_ERR_FLAGS, PLANCOLL_ERR_OVERFLOW (a rank's share beyond
 * 2^31 - 1 elements), PLANCOLL_ERR_MISMATCH (ranks passed different sizes), PLANCOLL_ERR_REMOTE; on every rank
 * when any rank's arguments are bad. */
PLANCOLL_API int plancoll_plan_transpose(ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in, void *out,
                                         MPI_Comm comm, unsigned flags, plancoll_plan *plan);

/* ---- A transpose in pieces: overlapping the exchange with the 1D transforms -------------------------
 * A 2D FFT transposes between two sets of 1D FFTs. Each output row needs one element of every input row of every
 * rank, so the transpose cannot begin on output rows; it can begin on input rows: a plan in pieces splits each
 * rank's local_n0 input rows into `pieces` consecutive pieces of near-equal row counts (piece k: local rows
 * [floor(k local_n0 / pieces), floor((k + 1) local_n0 / pieces)); pieces beyond the rows are empty), and moves
 * piece k as soon as the caller starts it, while the caller computes the rows of piece k + 1:
 *
 *     plancoll_plan_transpose_pieces(n0, n1, MPI_C_DOUBLE_COMPLEX, rows, cols, comm, 0, K, &t);
 *     for (int k = 0; k < K; k++) {
 *         ptrdiff_t lo, count;
 *         plancoll_transpose_piece_rows(t, k, &lo, &count);
 *         fft_rows(rows + lo * n1, count);   // the 1D FFTs of piece k's rows
 *         plancoll_start_piece(t, k);        // piece k travels while piece k + 1 is computed
 *     }
 *     plancoll_wait(t);                      // every piece has arrived: cols holds the transposed matrix
 *
 * Piece k of every rank lands in every rank's output columns local_0_start(source) + lo .. : the output is the
 * ordinary transpose's once the plan completes. FFTW has no such interface (its transposes are whole). */

/* Plans the transpose of plancoll_plan_transpose (same sizes, distribution, element rules and errors) to run in
 * `pieces` pieces of input rows. Always the fused strategy (forcing transpose.composite is
 * PLANCOLL_ERR_INAPPLICABLE). in and out must not overlap (PLANCOLL_ERR_IN_PLACE): in place, the output rows
 * written for piece k would overwrite input rows of later pieces that the caller has not finished. pieces must be
 * 1 .. PLANCOLL_MAX_PIECES (else PLANCOLL_ERR_COUNT) and the same on every rank (else PLANCOLL_ERR_MISMATCH); more
 * pieces than a rank's rows is allowed (some pieces are empty there). Every error on every rank alike.
 * plancoll_execute (and _execute_buffers, on separate buffers) on such a plan starts every piece and waits: the
 * ordinary transpose. plancoll_start starts every piece at once; plancoll_test and plancoll_wait complete it. */
#define PLANCOLL_MAX_PIECES 65536
PLANCOLL_API int plancoll_plan_transpose_pieces(ptrdiff_t n0, ptrdiff_t n1, MPI_Datatype element, void *in, void *out,
                                                MPI_Comm comm, unsigned flags, int pieces, plancoll_plan *plan);

/* This rank's input rows of piece k of a plan in pieces: *lo (local row index, from 0: the global row is
 * local_0_start + *lo) and *count (0 for an empty piece). Local. Errors: PLANCOLL_ERR_ARGUMENT (not a plan in
 * pieces, k outside 0 .. pieces - 1, lo or count NULL), invalid-plan codes; nothing is written then. */
PLANCOLL_API int plancoll_transpose_piece_rows(plancoll_plan plan, int k, ptrdiff_t *lo, ptrdiff_t *count);

/* Starts piece k of a plan in pieces: the caller has finished writing piece k's input rows and leaves them, and
 * the output, alone until the execution completes (it may still write rows of later pieces). Pieces are started
 * in order, 0, 1, .., pieces - 1, in each execution: starting piece 0 begins an execution (the plan becomes
 * active, as plancoll_start), and the execution completes (plancoll_test, plancoll_wait, plancoll_waitall) once
 * every piece has been started and every rank's pieces have arrived. Local: never waits for another rank (the
 * piece leaves when its node peers have read the previous execution; every plancoll call moves it on). Refused,
 * changing nothing (the execution in progress, if any, goes on and can still be finished):
 *   PLANCOLL_ERR_ARGUMENT  not a plan in pieces; k outside 0 .. pieces - 1; k not the next piece (out of order, or
 *                          a piece again); k > 0 while no execution is begun;
 *   PLANCOLL_ERR_ACTIVE    piece 0 while an execution is in progress (finish it first).
 * plancoll_wait and plancoll_waitall on an execution with pieces not yet started return PLANCOLL_ERR_ARGUMENT (the
 * detail says which piece is next) instead of waiting for ever; the execution stays in progress. plancoll_test on
 * it advances the active plans and gives *done = 0 (it cannot be complete): a caller may call it between or inside
 * the computation of pieces to move the pieces already started (between plancoll calls nothing moves, see
 * Nonblocking plans). This is MPI 4's partitioned communication (MPI_Start, MPI_Pready per partition, MPI_Wait)
 * applied to a collective. Destroying an active plan is PLANCOLL_ERR_ACTIVE, as for every plan. */
PLANCOLL_API int plancoll_start_piece(plancoll_plan plan, int k);

/* Runs the plan on the buffers it was planned with. */
PLANCOLL_API int plancoll_execute(plancoll_plan plan);

/* Runs the plan on other buffers of the same shape (counts, displacements and types as planned). A plan
 * made with MPI_IN_PLACE needs sendbuf == MPI_IN_PLACE here too, and a plan made out of place needs a
 * separate sendbuf. A transpose plan takes (in, out): in == out transposes in place, whichever way it was
 * planned. */
PLANCOLL_API int plancoll_execute_buffers(plancoll_plan plan, const void *sendbuf, void *recvbuf);

/* ---- Nonblocking plans (MPI's persistent requests) ------------------------------------------------
 * A plan can be started, left to run while the caller computes, and completed later, as MPI_Start, MPI_Test and
 * MPI_Wait do with a persistent collective request (MPI_Alltoall_init and friends):
 *
 *     plancoll_plan_allreduce(x, y, n, MPI_DOUBLE, MPI_SUM, comm, PLANCOLL_NONBLOCKING, &p);
 *     for (...) { plancoll_start(p); compute(); plancoll_wait(p); use(y); }
 *
 * - Start is local: it returns without waiting for any other rank (a rank may start a plan, then send to a rank
 *   that receives that message before it starts the plan). It allocates nothing and creates no communicator or
 *   window, as execute. The plan is then active; the caller does not touch its buffers until a test or wait reports
 *   it complete, after which it is inactive and can be started again.
 * - Several plans may be active at once, on one communicator or several: every rank of a communicator starts them in
 *   the same order (as MPI requires for collectives), and may complete them in any order. Plans active at once on
 *   one communicator must be distinct plans (a plan is started again only once it is complete).
 * - Progress: every plancoll call (start, test, wait, execute, plan creation, ...) advances every active plan of
 *   the process, and a rank waiting in any plancoll call keeps its active plans moving. Between plancoll calls
 *   nothing moves (as in MPICH without asynchronous progress): a caller computing for long calls plancoll_test now
 *   and then, or plans with PLANCOLL_PROGRESS_THREAD=1 (see Environment), whose plans a thread of the library
 *   advances while the caller computes.
 * - plancoll_execute is start + wait, at the same cost. Executing, starting or destroying an active plan is
 *   PLANCOLL_ERR_ACTIVE: the plan stays active and intact and can still be waited for.
 * - Every algorithm runs as a schedule of nonblocking steps, so every plan can be started, transposes included;
 *   PLANCOLL_NONBLOCKING keeps the planner's candidates to those that never wait inside a step (all but the
 *   MPI_Put transports, which complete in MPI_Win_flush; forced, they run, and a test may then block). Plans that share the node's
 *   memory (the node-aware, leader, DPML and aggregated families) and are active at once on one communicator run
 *   one after the other on each rank, in the order they were started: a later one begins once the earlier is done.
 *   Starting a plan whose algorithm could run only blocking is PLANCOLL_ERR_NOT_STARTABLE (the detail names the
 *   algorithm).
 * The functions are local (no rank waits for another in them) except for what the collective itself needs. */

/* Starts the plan on the buffers it was planned with. PLANCOLL_ERR_ACTIVE when it is active already. */
PLANCOLL_API int plancoll_start(plancoll_plan plan);

/* Starts the plan on other buffers of the same shape, with plancoll_execute_buffers' rules. */
PLANCOLL_API int plancoll_start_buffers(plancoll_plan plan, const void *sendbuf, void *recvbuf);

/* Advances the active plans; *done = 1 when plan's execution is complete (the plan is then inactive, and the
 * return value is that execution's outcome), else 0. An inactive plan gives *done = 1 at once (MPI_Test on an
 * inactive request). Never blocks. */
PLANCOLL_API int plancoll_test(plancoll_plan plan, int *done);

/* Advances every active plan of the process once and returns at once: never blocks, completes nothing (a test or
 * wait still reports each completion, with its outcome). For a thread of the caller's own that keeps started plans
 * moving while the thread that started them is blocked elsewhere, in an MPI call that does not go through
 * plancoll (a blocking collective on another communicator, say, while a peer waits for this rank's part of the
 * plan), or computes without calling plancoll. It may be called from any thread, concurrently with the other
 * plancoll calls of the thread that owns the plans, which then needs MPI_THREAD_MULTIPLE (the advance calls MPI);
 * from that thread itself it is plancoll_test without the completion. *pending (when not NULL): how many active
 * plans are not done yet after this advance (0: nothing left to move until the next start). */
PLANCOLL_API int plancoll_progress(int *pending);

/* Waits until the plan's execution is complete, advancing every active plan meanwhile; returns its outcome. An
 * inactive plan returns PLANCOLL_SUCCESS at once. */
PLANCOLL_API int plancoll_wait(plancoll_plan plan);

/* Waits for every plan of plans[0..n-1] (NULL entries are ignored, as MPI_REQUEST_NULL). Every non-NULL entry is
 * checked first (an invalid one fails the call before any wait); then each is completed, and the first failed
 * execution's code is returned (its detail names the entry) once all are complete. */
PLANCOLL_API int plancoll_waitall(int n, plancoll_plan plans[]);

/* Frees the plan and sets *plan to NULL. Collective. A NULL *plan is an error (PLANCOLL_ERR_NULL_PLAN), an active
 * plan PLANCOLL_ERR_ACTIVE (nothing is freed: wait for it first). */
PLANCOLL_API int plancoll_destroy_plan(plancoll_plan *plan);

/* Prints the plan: collective, problem, algorithm and parameters, how it was chosen, predicted and measured
 * time where known, set-up time, execution count. Local (not collective). */
PLANCOLL_API int plancoll_fprint_plan(plancoll_plan plan, FILE *out);

/* The name of the plan's algorithm ("alltoall.pairwise"), or NULL for an invalid plan. */
PLANCOLL_API const char *plancoll_plan_algorithm(plancoll_plan plan);

/* The plan's algorithm and every one of its parameters, defaults included, in PLANCOLL_ALGORITHM syntax
 * ("alltoall.mpml:leaders=2:placement=first:transport=p2p"), so forcing the spec rebuilds the same plan and a
 * choice can be reported. Writes at most len bytes including the terminating NUL; returns
 * PLANCOLL_SUCCESS, PLANCOLL_ERR_NULL_BUFFER (buf NULL or len 0), PLANCOLL_ERR_OVERFLOW (too short: buf holds
 * "") or an invalid-plan code (buf untouched). A transpose plan gives "transpose.fused" when fused, else its
 * inner exchange's spec. */
PLANCOLL_API int plancoll_plan_spec(plancoll_plan plan, char *buf, size_t len);

/* The registry: the name of algorithm number index (0, 1, ...) and, in *collective when not NULL, its
 * collective ("alltoall", "alltoallv", "allreduce"); NULL past the last one. */
PLANCOLL_API const char *plancoll_algorithm_name(int index, const char **collective);

/* ---- Wisdom -------------------------------------------------------------------------------------
 * What MEASURE and above learned (one decision per problem, with its measured time and runner-up) and the
 * calibrated machine models, as text (wisdom/FORMAT.md), so that a later run plans without timing: a plan whose
 * problem wisdom knows (at the same or a higher rigor) is set up directly, with no timing and no calibration.
 *
 * The four transfer functions are collective over comm (every rank calls them, in the same order as its other
 * plancoll and MPI collectives on comm) and return the same code on every rank.
 * Export: every rank's wisdom is gathered to rank 0 and merged (a plan on a sub-communicator taught only its
 *   own ranks); for a problem known twice the more rigorous decision wins, then the newer.
 * Import: rank 0 of comm reads the file (or takes its text) and broadcasts it; every rank parses the same text
 *   and adds it to what it knows (a record replaces the process's decision for its problem when it is more
 *   rigorous, or as rigorous and newer; a model replaces the process's model of the same shape), so every rank
 *   of comm holds the imported wisdom. Rejected, changing nothing on any rank:
 *     PLANCOLL_ERR_WISDOM_FORMAT  malformed text (detail: the line and what is wrong);
 *     PLANCOLL_ERR_WISDOM_STALE   another format version, a plancoll build with other algorithms (registry
 *                                 signature), another MPI library or build, or another machine (the hwloc
 *                                 topology summary of any rank's node differs);
 *     PLANCOLL_ERR_IO             the file cannot be read (detail: name and reason).
 *   The number of ranks and nodes is not part of that match: each record applies only to the problem in its
 *   key (which includes ranks, nodes and ranks per node) and each model to its shape.
 * Other errors: MPI_COMM_NULL PLANCOLL_ERR_COMM, an intercommunicator PLANCOLL_ERR_INTERCOMM, MPI not initialised
 * PLANCOLL_ERR_NOT_INITIALIZED, a NULL name or text on rank 0 (or NULL out on any rank) PLANCOLL_ERR_ARGUMENT. */

/* Writes the merged wisdom of comm's ranks to path, replacing what the file held (as FFTW's export; import it
 * first to keep it). path is used on rank 0 only (other ranks may pass NULL). Atomic: a temporary file in the
 * same directory, fsync, rename; readers see the old file or the new one. Rank 0 holds the file's lock
 * ("<path>.lock", an fcntl lock; wisdom/FORMAT.md, "Files") while it writes, so the write does not land inside
 * another process's read-merge-write of the file; it waits for the lock at most 30 s. A file that cannot be
 * written or locked is PLANCOLL_ERR_IO on every rank, and nothing is written. */
PLANCOLL_API int plancoll_export_wisdom_to_filename(const char *path, MPI_Comm comm);
/* *out receives the merged wisdom of comm's ranks as a NUL-terminated string, the same text on every rank;
 * the caller frees it with free(). On failure *out is NULL. */
PLANCOLL_API int plancoll_export_wisdom_to_string(char **out, MPI_Comm comm);
/* Imports the wisdom file path (read on rank 0 only; other ranks may pass NULL). */
PLANCOLL_API int plancoll_import_wisdom_from_filename(const char *path, MPI_Comm comm);
/* Imports wisdom text (rank 0's text is used; other ranks may pass NULL). */
PLANCOLL_API int plancoll_import_wisdom_from_string(const char *text, MPI_Comm comm);
/* Forgets every decision remembered by MEASURE and above and every calibrated model, in this process only
 * (local; files are not touched). Always PLANCOLL_SUCCESS. */
PLANCOLL_API int plancoll_forget_wisdom(void);

/* ---- Node-shared memory -------------------------------------------------------------------------
 * Buffers from plancoll_malloc live in memory that every rank of the same node maps, so a plan on the same
 * communicator can read a node peer's send buffer (or write its receive buffer) directly: one copy instead
 * of two through a shared segment. Any buffer still works with any plan; heap buffers are only faster.
 *
 * plancoll_malloc: collective over comm (every rank calls it, in the same order as its other plancoll and MPI
 * collectives on comm); each rank may ask for a different size. *ptr receives a block of at least size
 * bytes, aligned to 64 bytes, not initialised. size 0 gives *ptr = NULL and success (like malloc(0);
 * plancoll_free(NULL) is a no-op). Errors: ptr NULL is PLANCOLL_ERR_NULL_BUFFER, more than 2^60 bytes PLANCOLL_ERR_OVERFLOW,
 * MPI_COMM_NULL PLANCOLL_ERR_COMM, an intercommunicator PLANCOLL_ERR_INTERCOMM; when any rank's arguments
 * are invalid every rank fails (the others with PLANCOLL_ERR_REMOTE) and nothing is allocated. The block's memory
 * is reserved here: when the node's shared memory (/dev/shm) cannot hold it, every rank fails with
 * PLANCOLL_ERR_NOMEM (the size in the detail), never with SIGBUS at a later store. On failure *ptr (when ptr is
 * not NULL) is NULL. The memory belongs to comm: it is released when comm is freed (after the last plan on comm
 * is destroyed), and every pointer from this heap is invalid from then on; a heap on MPI_COMM_WORLD lasts until
 * MPI_Finalize. Shared windows that hold no live block on any rank of a node are released in plancoll_malloc
 * (all but one kept for reuse). */
PLANCOLL_API int plancoll_malloc(size_t size, MPI_Comm comm, void **ptr);

/* Returns a block from plancoll_malloc for reuse; its memory goes back to the system unless this rank's free
 * heap memory stays within a small cache (1 MiB). Local (no communication): ranks free independently.
 * NULL is a no-op success. A pointer that is not a live block from plancoll_malloc on this process (an
 * interior pointer, a block freed already, a node peer's block, memory of a freed communicator's heap, any
 * other memory) is PLANCOLL_ERR_ARGUMENT with a detail saying which; nothing is freed and nothing crashes. */
PLANCOLL_API int plancoll_free(void *ptr);

/* ---- Environment ---------------------------------------------------------------------------------
 * PLANCOLL_ALGORITHM=name[,name...]  restricts plans of each named algorithm's collective to the named
 *     algorithms (one name: forced). An unknown name is PLANCOLL_ERR_ALGORITHM; a named algorithm that cannot
 *     run the plan at hand is PLANCOLL_ERR_INAPPLICABLE. `plancoll-bench --list` prints the names.
 * PLANCOLL_WAIT=spin|yield|auto      how the library waits (auto: yield at once when a node holds more
 *     ranks than cores, else spin briefly then yield).
 * PLANCOLL_EMULATE_NODES=K          testing: plancoll sees the ranks of each host as K nodes of consecutive
 *     ranks (by position among the host's MPI_COMM_WORLD ranks, so every communicator sees the same nodes; uneven
 *     splits put the larger blocks first, as MPICH's MPIR_CVAR_NUM_CLIQUES=K with MPIR_CVAR_CLIQUES_BY_BLOCK=1).
 *     Read once, at the first plan; not a positive integer, more than a host's ranks, or different on different
 *     ranks: every plan fails with PLANCOLL_ERR_ENV on every rank.
 * PLANCOLL_VERBOSE=1                 rank 0 prints the planner's candidates and decision to stderr.
 * PLANCOLL_WISDOM=path               a wisdom file used automatically. Read at the process's first plan creation,
 *     collectively over that plan's communicator (its rank 0 reads the file, its ranks import it; ranks whose
 *     first plan is on another communicator read it then, so a rank outside the first communicator does not
 *     wait for it); an absent file is not an error. A file that cannot be read or is malformed is reported once on
 *     stderr, planning goes on without it and the file is never overwritten; stale wisdom (another machine, MPI
 *     or plancoll build) is reported and replaced at MPI_Finalize. At MPI_Finalize, when this process learned
 *     something, rank 0 of MPI_COMM_WORLD merges what it knows into the file (atomically, as
 *     plancoll_export_wisdom_to_filename), record by record, holding the file's lock from the read to the
 *     rename: jobs finalizing together take turns and every job's records are kept. Only world rank 0's
 *     wisdom is written then, and only if it made a plan: to keep decisions of plans without world rank 0,
 *     export collectively before MPI_Finalize.
 * PLANCOLL_PROGRESS_THREAD=0|1       1: plans created while it is set are advanced, once started, by a progress
 *     thread of the library while the caller computes (no plancoll_test needed for them to move). The thread starts
 *     at the first such plan's creation and stops at the last one's destruction, or at MPI_Finalize (before MPI is
 *     gone); between started plans it sleeps (100 us naps), while one is active it polls and yields. The caller's
 *     own calls still advance every active plan; a mutex keeps the thread and the caller from advancing one plan at
 *     once (a test finds the mutex taken and returns: the thread is advancing). Needs MPI_THREAD_MULTIPLE
 *     (MPI_Init_thread): below it plan creation fails with PLANCOLL_ERR_THREAD_LEVEL on every rank. Another value
 *     than 0 or 1 is PLANCOLL_ERR_ENV. The trade-off: the thread spends a core polling while a plan is active, and
 *     MPI_THREAD_MULTIPLE makes every MPI call take MPICH's lock; with as many ranks as cores (or more: the test
 *     machine has 2 cores) the thread competes with the ranks for the cores it is meant to spare.
 * PLANCOLL_SIM_COPY_GBPS=R, PLANCOLL_SIM_REDUCE_GBPS=R   read only in a build for SimGrid's SMPI (docs/smpi.md):
 *     every copy and reduction the library makes advances the calling rank's simulated clock by bytes / R GB/s.
 *     Read at each plan creation; unset, nothing is charged; not a positive number: PLANCOLL_ERR_ENV on every rank.
 */

#ifdef __cplusplus
}
#endif
#endif /* PLANCOLL_H */
