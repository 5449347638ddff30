"""allreduce through the Python package: integers exactly against NumPy, floats bit-identical on every rank and
within the header's bound of the exact sum (math.fsum)."""
import math

import numpy as np
import pytest
from mpi4py import MPI

import plancoll


def contribution(rank, n, dtype):
    rng = np.random.default_rng(1000 + rank)
    if np.dtype(dtype).kind in 'iu':
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=n, dtype=dtype, endpoint=True)
    if np.dtype(dtype).kind == 'c':
        return (rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
                + 1j * rng.standard_normal(n)).astype(dtype)
    return (rng.standard_normal(n) * 10.0 ** rng.integers(-5, 6, n)).astype(dtype)


def all_contributions(nprocs, n, dtype):
    return np.stack([contribution(r, n, dtype) for r in range(nprocs)])


@pytest.mark.parametrize('dtype,op,numpy_reduce', [
    (np.int32, MPI.SUM, lambda a: a.sum(axis=0, dtype=np.int32)),           # wraps modulo 2^32, as NumPy's
    (np.int64, MPI.SUM, lambda a: a.sum(axis=0, dtype=np.int64)),
    (np.uint16, MPI.MAX, lambda a: a.max(axis=0)),
    (np.int8, MPI.MIN, lambda a: a.min(axis=0)),
    (np.int32, MPI.BXOR, lambda a: np.bitwise_xor.reduce(a, axis=0)),
    (np.uint32, MPI.PROD, lambda a: a.prod(axis=0, dtype=np.uint32)),
    (np.float64, MPI.MAX, lambda a: a.max(axis=0)),
])
def test_allreduce_exact(comm, dtype, op, numpy_reduce):
    rank, nprocs, n = comm.rank, comm.size, 1000
    send = contribution(rank, n, dtype)
    recv = np.zeros(n, dtype=dtype)
    with plancoll.plan_allreduce(send, recv, op, comm) as plan:
        plan.execute()
    with np.errstate(over='ignore'):
        expected = numpy_reduce(all_contributions(nprocs, n, dtype))
    assert recv.dtype == expected.dtype
    assert np.array_equal(recv, expected)


@pytest.mark.parametrize('dtype', [np.float64, np.float32])
@pytest.mark.parametrize('in_place', [False, True])
def test_allreduce_float_sum(comm, dtype, in_place):
    rank, nprocs, n = comm.rank, comm.size, 2000
    send = contribution(rank, n, dtype)
    recv = send.copy() if in_place else np.zeros(n, dtype=dtype)
    with plancoll.plan_allreduce(plancoll.IN_PLACE if in_place else send, recv, MPI.SUM, comm) as plan:
        plan.execute()
    # Every rank holds the same bits.
    everyone = comm.allgather(recv.tobytes())
    assert all(b == everyone[0] for b in everyone)
    # Within (P - 1) u sum|x| of the exact sum (include/plancoll.h), u the type's unit roundoff, plus the rounding
    # of the exact sum to the type (half an ulp).
    data = all_contributions(nprocs, n, dtype).astype(np.float64)
    u = np.finfo(dtype).eps / 2
    worst = 0.0
    for i in range(n):
        exact = math.fsum(data[:, i])
        bound = (nprocs - 1) * u * math.fsum(abs(data[:, i])) + u * abs(exact)
        err = abs(float(recv[i]) - exact)
        worst = max(worst, err / bound if bound else (0.0 if err == 0 else math.inf))
    assert worst <= 1.0, f'error {worst:.3g} times the bound'
    if nprocs == 1:
        assert np.array_equal(recv, contribution(rank, n, dtype))


def test_allreduce_complex_sum_by_parts(comm):
    rank, nprocs, n = comm.rank, comm.size, 500
    send = contribution(rank, n, np.complex128)
    recv = np.zeros(n, dtype=np.complex128)
    with plancoll.plan_allreduce(send, recv, comm=comm) as plan:
        plan.execute()
    everyone = comm.allgather(recv.tobytes())
    data = all_contributions(nprocs, n, np.complex128)
    u = np.finfo(np.float64).eps / 2
    ok = True
    for part in (np.real, np.imag):
        for i in range(n):
            exact = math.fsum(part(data[:, i]))
            bound = (nprocs - 1) * u * math.fsum(abs(part(data[:, i]))) + u * abs(exact)
            ok = ok and abs(float(part(recv[i])) - exact) <= bound
    assert all(b == everyone[0] for b in everyone)
    assert ok


def test_allreduce_mpi_in_place_and_new_arrays(comm):
    rank, nprocs, n = comm.rank, comm.size, 64
    buf = np.arange(n, dtype=np.int64) + rank
    with plancoll.plan_allreduce(MPI.IN_PLACE, buf, MPI.SUM, comm) as plan:
        plan.execute()
        other = np.arange(n, dtype=np.int64) * (rank + 1)
        plan.execute(plancoll.IN_PLACE, other)
    assert np.array_equal(buf, nprocs * np.arange(n) + nprocs * (nprocs - 1) // 2)
    assert np.array_equal(other, np.arange(n) * (nprocs * (nprocs + 1) // 2))
