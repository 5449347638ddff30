"""The distributed transpose and local_size_transposed through the Python package, against NumPy's transpose of
the whole matrix and FFTW's block distribution written out here."""
import numpy as np
import pytest

import plancoll


def fftw_share(n, rank, nprocs):
    """FFTW's default block distribution of n rows: (count, start) of rank's rows."""
    block = -(-n // nprocs) if n else 0
    count = max(0, min(block, n - rank * block)) if block else 0
    return count, (rank * block if count else 0)


def matrix(n0, n1, dtype):
    i, j = np.meshgrid(np.arange(n0), np.arange(n1), indexing='ij')
    m = (i * 1000 + j).astype(dtype)
    if np.dtype(dtype).kind == 'c':
        m = m + 1j * (j * 1000 + i + 0.25)
    return m


@pytest.mark.parametrize('n0,n1', [(7, 5), (8, 12), (1, 9), (3, 2)])
def test_local_size_transposed(comm, n0, n1):
    rank, nprocs = comm.rank, comm.size
    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    assert (ln0, s0) == fftw_share(n0, rank, nprocs)
    assert (ln1, s1) == fftw_share(n1, rank, nprocs)
    assert alloc == max(1, ln0 * n1, ln1 * n0)


@pytest.mark.parametrize('dtype', [np.complex128, np.float64, np.int32])
@pytest.mark.parametrize('n0,n1', [(7, 5), (6, 10)])
@pytest.mark.parametrize('in_place', [False, True])
def test_transpose(comm, dtype, n0, n1, in_place):
    rank, nprocs = comm.rank, comm.size
    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    whole = matrix(n0, n1, dtype)
    inarr = np.zeros(alloc, dtype=dtype)
    inarr[:ln0 * n1] = whole[s0:s0 + ln0].reshape(-1)
    outarr = inarr if in_place else np.zeros(alloc, dtype=dtype)
    kept_in = inarr.copy()
    with plancoll.plan_transpose(n0, n1, inarr, outarr, comm) as plan:
        algorithm = plan.algorithm
        plan.execute()
        got = outarr[:ln1 * n0].reshape(ln1, n0).copy()
        # Again on new arrays (the planned input was overwritten when in place).
        in2 = np.zeros(alloc, dtype=dtype)
        in2[:ln0 * n1] = (2 * whole[s0:s0 + ln0]).reshape(-1)
        out2 = np.zeros(alloc, dtype=dtype)
        plan.execute(in2, out2)
    assert algorithm.startswith('transpose(')
    assert np.array_equal(got, whole.T[s1:s1 + ln1])
    assert np.array_equal(out2[:ln1 * n0].reshape(ln1, n0), 2 * whole.T[s1:s1 + ln1])
    if not in_place:
        assert np.array_equal(inarr, kept_in)
