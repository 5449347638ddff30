#!/usr/bin/python3
"""A distributed 2D FFT with numpy.fft and plancoll's transpose, checked against numpy.fft.fft2 of the whole matrix.

    mpiexec.openmpi -n 4 /usr/bin/python3 examples/python/fft2d.py [N0 N1 [REPEATS]]

The N0 x N1 complex matrix is distributed by rows (FFTW's block distribution, plancoll.local_size_transposed).
Each rank transforms its rows (1D FFTs along axis 1), plancoll transposes the matrix (each rank then holds rows of
the N1 x N0 transpose), and each rank transforms those rows: the result is the 2D FFT, transposed, distributed by
its N1 rows, as FFTW's FFTW_MPI_TRANSPOSED_OUT gives it. Rank 0 gathers the input and the result and compares them
with numpy.fft.fft2; the verdict (with the largest error) is agreed by every rank, and the exit status is 0 only
when it passes.
"""
import sys

import numpy as np
from mpi4py import MPI

import plancoll


def input_rows(n0, n1, start, count):
    """Rows start .. start + count of the input matrix: a function of the global indices, so any rank can make any
    row and the whole matrix is the same wherever it is made."""
    i, j = np.meshgrid(np.arange(start, start + count), np.arange(n1), indexing='ij')
    return np.sin(0.37 * i + 1.3 * j * j / n1) + 1j * np.cos(0.11 * i * j + 0.5)


def main(argv):
    comm = MPI.COMM_WORLD
    n0 = int(argv[1]) if len(argv) > 1 else 64
    n1 = int(argv[2]) if len(argv) > 2 else 48
    repeats = int(argv[3]) if len(argv) > 3 else 2

    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    data = np.zeros(alloc, dtype=np.complex128)           # ln0 rows of n1 in, ln1 rows of n0 out: in place
    with plancoll.plan_transpose(n0, n1, data, data, comm, plancoll.MEASURE) as transpose:
        for _ in range(repeats):                            # the plan is reused; each pass must give the same answer
            rows = data[:ln0 * n1].reshape(ln0, n1)
            rows[:] = input_rows(n0, n1, s0, ln0)
            rows[:] = np.fft.fft(rows, axis=1)               # 1D FFTs of this rank's rows
            transpose.execute()                              # data now holds ln1 rows of the n1 x n0 transpose
            cols = data[:ln1 * n0].reshape(ln1, n0)
            cols[:] = np.fft.fft(cols, axis=1)               # 1D FFTs along the other dimension
        algorithm = transpose.algorithm
        result = cols.copy()

    # Check: gather the input and the transposed result on rank 0, compare with numpy.fft.fft2 of the whole matrix.
    whole_in = comm.gather(input_rows(n0, n1, s0, ln0), root=0)
    whole_out = comm.gather(result, root=0)
    verdict = None
    if comm.rank == 0:
        a = np.concatenate(whole_in, axis=0)
        reference = np.fft.fft2(a)                           # n0 x n1
        got = np.concatenate(whole_out, axis=0).T            # n1 x n0 transposed back
        scale = np.abs(reference).max()
        err = np.abs(got - reference).max() / scale
        exact = np.array_equal(got, reference)
        # Two 1D FFT passes in double precision: a few ulps times log2(n) of the largest entry.
        tolerance = 1e-13 * np.log2(max(n0, n1, 2))
        verdict = (bool(a.shape == (n0, n1) and err <= tolerance), err, tolerance, exact)
    ok, err, tolerance, exact = comm.bcast(verdict, root=0)
    if comm.rank == 0:
        print(f'fft2d.py {n0}x{n1} on {comm.size} ranks, transpose {algorithm}: max relative error {err:.2e} '
              f'(tolerance {tolerance:.1e}{", bit-identical to numpy.fft.fft2" if exact else ""}): '
              f'{"PASS" if ok else "FAIL"}', flush=True)
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv))
