/* fft-strides: what the two sets of 1D FFTs of a distributed 2D FFT cost when they read or write the transposed
 * order themselves, against contiguous rows (issue 17, docs/benchmarks.md "2D FFT against FFTW's"): the question is
 * whether the transpose pass can be folded into the FFTs. One core, no MPI, FFTW's serial library (FFTW_MEASURE).
 *
 *   fft-strides [N [ROWS]]      N x N complex doubles (default 1024), ROWS rows of one rank (default N / 2: the
 *                               share of one of two ranks)
 *
 * Timed, each the median of 21 executions:
 *   rows contiguous        ROWS FFTs of length N, rows in, rows out (what the 2D FFT does twice around a transpose)
 *   columns strided in     ROWS FFTs reading columns of the whole N x N array in place (stride N: the second set
 *                          reading node-shared input without a transpose), rows out
 *   rows transposed out    ROWS FFTs of rows written as columns of an N x ROWS block (stride ROWS: the first set
 *                          writing the packed, transposed order of the exchange)
 *   memcpy                 one copy of the ROWS x N elements: the transpose pass a fused plan would save
 * Folding pays only where a strided set costs less than the contiguous set plus the memcpy. */
#include <fftw3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_stats.h"

#define RUNS 21

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static fftw_complex *src_for_copy, *dst_for_copy;
static size_t copy_bytes;

static double median_ms(fftw_plan plan)
{
    double t[RUNS];
    for (int k = 0; k < RUNS; k++) {
        double t0 = now();
        if (plan) fftw_execute(plan);
        else memcpy(dst_for_copy, src_for_copy, copy_bytes);
        t[k] = now() - t0;
    }
    qsort(t, RUNS, sizeof t[0], bench_cmp_double);
    return t[RUNS / 2] * 1e3;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 1024;
    const int rows = argc > 2 ? atoi(argv[2]) : n / 2;
    if (n < 2 || n > 16384 || rows < 1 || rows > n) {
        fprintf(stderr, "fft-strides: want 2 <= N <= 16384 and 1 <= ROWS <= N\n");
        return 2;
    }
    const size_t all = (size_t)n * (size_t)n;
    fftw_complex *a = fftw_malloc(sizeof(fftw_complex) * all), *b = fftw_malloc(sizeof(fftw_complex) * all);
    if (!a || !b) {
        fprintf(stderr, "fft-strides: out of memory\n");
        return 2;
    }
    int len[1] = {n};
    /* plans first: FFTW_MEASURE overwrites its arrays */
    fftw_plan contiguous = fftw_plan_many_dft(1, len, rows, a, NULL, 1, n, b, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE);
    fftw_plan columns = fftw_plan_many_dft(1, len, rows, a, NULL, n, 1, b, NULL, 1, n, FFTW_FORWARD, FFTW_MEASURE);
    fftw_plan transposed = fftw_plan_many_dft(1, len, rows, a, NULL, 1, n, b, NULL, rows, 1, FFTW_FORWARD, FFTW_MEASURE);
    if (!contiguous || !columns || !transposed) {
        fprintf(stderr, "fft-strides: FFTW could not plan\n");
        return 2;
    }
    srand(1);
    for (size_t i = 0; i < all; i++) {
        a[i][0] = rand() / (double)RAND_MAX;
        a[i][1] = rand() / (double)RAND_MAX;
    }
    src_for_copy = a;
    dst_for_copy = b;
    copy_bytes = sizeof(fftw_complex) * (size_t)rows * (size_t)n;
    const double t_rows = median_ms(contiguous), t_cols = median_ms(columns), t_trans = median_ms(transposed),
                 t_copy = median_ms(NULL);
    printf("# fft-strides: %d x %d complex doubles, %d rows; medians of %d executions in ms, and the ratio to the "
           "contiguous rows\n", n, n, rows, RUNS);
    printf("%-24s %9.3f %6.2f\n", "rows contiguous", t_rows, 1.0);
    printf("%-24s %9.3f %6.2f\n", "columns strided in", t_cols, t_cols / t_rows);
    printf("%-24s %9.3f %6.2f\n", "rows transposed out", t_trans, t_trans / t_rows);
    printf("%-24s %9.3f %6.2f\n", "memcpy", t_copy, t_copy / t_rows);
    fftw_destroy_plan(contiguous);
    fftw_destroy_plan(columns);
    fftw_destroy_plan(transposed);
    fftw_free(a);
    fftw_free(b);
    return 0;
}
