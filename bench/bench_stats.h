/* Order statistics the benchmark programs share (no MPI, no plancoll: plain MPI programs and FFTW-only ones include
 * it too). */
#ifndef PLANCOLL_BENCH_STATS_H
#define PLANCOLL_BENCH_STATS_H

#include <stdlib.h>

/* qsort's comparator for doubles, ascending */
static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n >= 1); sorts v. */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#endif
