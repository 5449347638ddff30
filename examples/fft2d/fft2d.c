/* fft2d: a 2D complex FFT of an N0 x N1 array distributed by rows, the way FFTW's MPI interface does it, with
 * FFTW's serial library for the 1D transforms and plancoll's planned transpose between them:
 *
 *   1. 1D FFTs of length N1 along this rank's local_n0 rows
 *   2. plancoll transpose N0 x N1 -> N1 x N0 (in place): this rank now holds local_n1 whole columns
 *   3. 1D FFTs of length N0 along those local_n1 rows
 *   4. plancoll transpose back N1 x N0 -> N0 x N1: the spectrum X[k0][k1] in the input's distribution
 *
 * The transposes are plans made once and executed at every transform (FFTW's model).
 *
 * Then the same 2D FFT pipelined (what FFTW's interface cannot do): steps 1 and 2 overlap. The forward transpose is
 * a plan in K pieces of input rows (plancoll_plan_transpose_pieces, out of place into a second buffer): the row
 * FFTs of piece k run, piece k is started (plancoll_start_piece) and travels while the row FFTs of piece k + 1 run;
 * a wait, the column FFTs in the second buffer, and the transpose back from there into the first.
 *
 * Each variant's result is gathered on rank 0 and compared with FFTW's serial 2D transform of the whole array; the
 * run fails when the largest error, relative to the largest magnitude of the spectrum, exceeds 1e-10. Rank 0 prints
 * the time per 2D FFT of both (the largest over ranks, averaged over the repetitions).
 *
 *   mpiexec -n P fft2d [N0 N1 [REPETITIONS]] [-k PIECES] [-v]   (default 45 x 38, 5 repetitions, 4 pieces; -v
 *                                                                prints the plans)
 */
#include <complex.h>
#include <fftw3.h>
#include <math.h>
#include <mpi.h>
#include <plancoll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../example_verdict.h"

#define TOLERANCE 1e-10

/* The input, a function of the global index only: every rank (and rank 0's reference) computes it alike. */
static fftw_complex input(ptrdiff_t i, ptrdiff_t j, int rep)
{
    double re = sin(0.3 * (double)i + 0.7 * (double)j + 0.1 * rep) + 0.1 * (double)(i % 5);
    double im = cos(0.011 * (double)(i * j)) - 0.05 * (double)(j % 3) + 0.01 * rep;
    return re + I * im;
}

/* The check: gather the spectrum (rows in order) on rank 0 and compare it with FFTW's serial 2D transform of the
 * input of repetition rep. Returns ok, cleared (on every rank) when the error exceeds the tolerance. */
static int check(MPI_Comm comm, const fftw_complex *data, ptrdiff_t N0, ptrdiff_t N1, ptrdiff_t ln0, int rep,
                 const char *what, int ok)
{
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    int *counts = NULL, *displs = NULL;
    fftw_complex *all = NULL;
    if (rank == 0) {
        counts = malloc(sizeof(int) * (size_t)P);
        displs = malloc(sizeof(int) * (size_t)P);
        all = fftw_malloc(sizeof(fftw_complex) * (size_t)(N0 * N1));
    }
    int mine = (int)(ln0 * N1 * 2);
    MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, comm);
    if (rank == 0)
        for (int r = 0, off = 0; r < P; r++) {
            displs[r] = off;
            off += counts[r];
        }
    MPI_Gatherv(data, mine, MPI_DOUBLE, all, counts, displs, MPI_DOUBLE, 0, comm);
    int good = ok;
    if (rank == 0) {
        fftw_complex *x = fftw_malloc(sizeof(fftw_complex) * (size_t)(N0 * N1));
        fftw_complex *ref = fftw_malloc(sizeof(fftw_complex) * (size_t)(N0 * N1));
        fftw_plan serial = fftw_plan_dft_2d((int)N0, (int)N1, x, ref, FFTW_FORWARD, FFTW_ESTIMATE);
        for (ptrdiff_t i = 0; i < N0; i++)
            for (ptrdiff_t j = 0; j < N1; j++) x[i * N1 + j] = input(i, j, rep);
        fftw_execute(serial);
        double err = 0, scale = 0;
        for (ptrdiff_t k = 0; k < N0 * N1; k++) {
            double e = cabs(all[k] - ref[k]), m = cabs(ref[k]);
            if (e > err || isnan(e)) err = isnan(e) ? INFINITY : e;
            if (m > scale) scale = m;
        }
        double rel = scale > 0 ? err / scale : err;
        printf("fft2d: %s: max error %.3e (relative to max |X| = %.3e: %.3e, tolerance %.0e)\n", what, err, scale, rel,
               TOLERANCE);
        if (!(rel <= TOLERANCE)) good = 0;
        fftw_destroy_plan(serial);
        fftw_free(x);
        fftw_free(ref);
        fftw_free(all);
        free(counts);
        free(displs);
    }
    MPI_Bcast(&good, 1, MPI_INT, 0, comm);
    return good && ok;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm comm = MPI_COMM_WORLD;
    int rank, P;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &P);
    ptrdiff_t N0 = 45, N1 = 38;
    int reps = 5, verbose = 0, npos = 0, K = 4;
    for (int a = 1; a < argc; a++) {
        if (strcmp(argv[a], "-v") == 0) {
            verbose = 1;
            continue;
        }
        if (strcmp(argv[a], "-k") == 0 && a + 1 < argc) {
            K = atoi(argv[++a]);
            continue;
        }
        long v = strtol(argv[a], NULL, 10);
        if (npos == 0) N0 = v;
        else if (npos == 1) N1 = v;
        else reps = (int)v;
        npos++;
    }
    if (N0 < 1 || N1 < 1 || reps < 1 || K < 1) {
        if (rank == 0) fprintf(stderr, "usage: fft2d [N0 N1 [REPETITIONS]] [-k PIECES] [-v]   (sizes, pieces >= 1)\n");
        return example_finish("fft2d", 0, comm);
    }

    /* The distribution, exactly as fftw_mpi_local_size_2d_transposed gives it. */
    ptrdiff_t ln0, s0, ln1, s1;
    ptrdiff_t alloc = plancoll_local_size_transposed(N0, N1, comm, &ln0, &s0, &ln1, &s1);
    fftw_complex *data = fftw_malloc(sizeof(fftw_complex) * (size_t)alloc);
    int ok = data != NULL;

    /* Plans, once: FFTW's 1D transforms (ESTIMATE: planning does not touch the data) and the two transposes. */
    fftw_plan rows = NULL, cols = NULL;
    int n1 = (int)N1, n0 = (int)N0;
    if (ln0 > 0)
        rows = fftw_plan_many_dft(1, &n1, (int)ln0, data, NULL, 1, n1, data, NULL, 1, n1, FFTW_FORWARD, FFTW_ESTIMATE);
    if (ln1 > 0)
        cols = fftw_plan_many_dft(1, &n0, (int)ln1, data, NULL, 1, n0, data, NULL, 1, n0, FFTW_FORWARD, FFTW_ESTIMATE);
    plancoll_plan forward = NULL, back = NULL;
    int rc = plancoll_plan_transpose(N0, N1, MPI_C_DOUBLE_COMPLEX, data, data, comm, PLANCOLL_ESTIMATE, &forward);
    if (rc == PLANCOLL_SUCCESS)
        rc = plancoll_plan_transpose(N1, N0, MPI_C_DOUBLE_COMPLEX, data, data, comm, PLANCOLL_ESTIMATE, &back);
    if (rc != PLANCOLL_SUCCESS) {
        fprintf(stderr, "[rank %d] transpose plan: %s: %s\n", rank, plancoll_strerror(rc), plancoll_error_detail());
        ok = 0;
    }
    if (rank == 0 && rc == PLANCOLL_SUCCESS) {
        printf("fft2d: %td x %td complex on %d ranks, transposes %s and %s\n", N0, N1, P, plancoll_plan_algorithm(forward),
               plancoll_plan_algorithm(back));
        if (verbose) {
            plancoll_fprint_plan(forward, stdout);
            plancoll_fprint_plan(back, stdout);
        }
    }

    double t_rows = 0, t_tr = 0, t_cols = 0, t_back = 0, t_whole = 0;
    for (int rep = 0; rep < reps && ok; rep++) {
        for (ptrdiff_t i = 0; i < ln0; i++)
            for (ptrdiff_t j = 0; j < N1; j++) data[i * N1 + j] = input(s0 + i, j, rep);
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        if (rows) fftw_execute(rows);
        double t1 = MPI_Wtime();
        rc = plancoll_execute(forward);
        double t2 = MPI_Wtime();
        if (cols) fftw_execute(cols);
        double t3 = MPI_Wtime();
        if (rc == PLANCOLL_SUCCESS) rc = plancoll_execute(back);
        double t4 = MPI_Wtime();
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] transpose: %s: %s\n", rank, plancoll_strerror(rc), plancoll_error_detail());
            ok = 0;
        }
        t_rows += t1 - t0, t_tr += t2 - t1, t_cols += t3 - t2, t_back += t4 - t3;
        double mine = t4 - t0, most = 0;
        MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, comm);
        t_whole += most;
    }
    ok = check(comm, data, N0, N1, ln0, reps - 1, "whole transposes", ok);
    if (rank == 0)
        printf("fft2d: per transform on rank 0: row FFTs %.1f us, transpose %.1f us, column FFTs %.1f us, transpose "
               "back %.1f us\n",
               t_rows / reps * 1e6, t_tr / reps * 1e6, t_cols / reps * 1e6, t_back / reps * 1e6);

    /* The pipelined variant: the forward transpose in K pieces from data into work, each piece started as soon as
     * its row FFTs are done; the column FFTs in work; the transpose back from work into data. */
    fftw_complex *work = fftw_malloc(sizeof(fftw_complex) * (size_t)alloc);
    fftw_plan *piece_rows = calloc((size_t)K, sizeof *piece_rows), cols_work = NULL;
    plancoll_plan pieces = NULL;
    if (!work || !piece_rows) ok = 0;
    rc = plancoll_plan_transpose_pieces(N0, N1, MPI_C_DOUBLE_COMPLEX, data, work, comm, PLANCOLL_ESTIMATE, K, &pieces);
    if (rc != PLANCOLL_SUCCESS) {
        fprintf(stderr, "[rank %d] transpose in pieces: %s: %s\n", rank, plancoll_strerror(rc), plancoll_error_detail());
        ok = 0;
    }
    for (int k = 0; k < K && rc == PLANCOLL_SUCCESS && work; k++) {
        ptrdiff_t lo, count;
        plancoll_transpose_piece_rows(pieces, k, &lo, &count);
        if (count > 0)
            piece_rows[k] = fftw_plan_many_dft(1, &n1, (int)count, data + lo * N1, NULL, 1, n1, data + lo * N1, NULL, 1,
                                               n1, FFTW_FORWARD, FFTW_ESTIMATE);
    }
    if (ln1 > 0 && work)
        cols_work = fftw_plan_many_dft(1, &n0, (int)ln1, work, NULL, 1, n0, work, NULL, 1, n0, FFTW_FORWARD, FFTW_ESTIMATE);
    if (rank == 0 && rc == PLANCOLL_SUCCESS && verbose) plancoll_fprint_plan(pieces, stdout);
    double t_pipe = 0, t_pipe_first = 0;
    for (int rep = 0; rep < reps && ok; rep++) {
        for (ptrdiff_t i = 0; i < ln0; i++)
            for (ptrdiff_t j = 0; j < N1; j++) data[i * N1 + j] = input(s0 + i, j, rep);
        MPI_Barrier(comm);
        double t0 = MPI_Wtime();
        for (int k = 0; k < K && rc == PLANCOLL_SUCCESS; k++) {
            if (piece_rows[k]) fftw_execute(piece_rows[k]); /* the row FFTs of piece k ... */
            rc = plancoll_start_piece(pieces, k);           /* ... then piece k travels while piece k + 1 is computed */
        }
        if (rc == PLANCOLL_SUCCESS) rc = plancoll_wait(pieces);
        double t1 = MPI_Wtime();
        if (cols_work) fftw_execute(cols_work);
        if (rc == PLANCOLL_SUCCESS) rc = plancoll_execute_buffers(back, work, data);
        double t2 = MPI_Wtime();
        if (rc != PLANCOLL_SUCCESS) {
            fprintf(stderr, "[rank %d] pipelined transform: %s: %s\n", rank, plancoll_strerror(rc), plancoll_error_detail());
            ok = 0;
        }
        t_pipe_first += t1 - t0;
        double mine = t2 - t0, most = 0;
        MPI_Allreduce(&mine, &most, 1, MPI_DOUBLE, MPI_MAX, comm);
        t_pipe += most;
    }
    ok = check(comm, data, N0, N1, ln0, reps - 1, "pipelined", ok);
    if (rank == 0)
        printf("fft2d: per 2D FFT (max over ranks): %.1f us with whole transposes, %.1f us pipelined in %d pieces (row "
               "FFTs overlapped with the forward transpose: %.1f us on rank 0); %.2fx\n",
               t_whole / reps * 1e6, t_pipe / reps * 1e6, K, t_pipe_first / reps * 1e6,
               t_pipe > 0 ? t_whole / t_pipe : 0);

    if (pieces) plancoll_destroy_plan(&pieces);
    for (int k = 0; piece_rows && k < K; k++)
        if (piece_rows[k]) fftw_destroy_plan(piece_rows[k]);
    if (cols_work) fftw_destroy_plan(cols_work);
    free(piece_rows);
    fftw_free(work);
    if (forward) plancoll_destroy_plan(&forward);
    if (back) plancoll_destroy_plan(&back);
    if (rows) fftw_destroy_plan(rows);
    if (cols) fftw_destroy_plan(cols);
    fftw_free(data);
    fftw_cleanup();
    return example_finish("fft2d", ok, comm);
}
