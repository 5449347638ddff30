"""alltoall and alltoallv through the Python package: every rank's result against the exchange computed with NumPy."""
import array

import numpy as np
import pytest
from mpi4py import MPI

import plancoll


def encode(src, dst, k, dtype):
    """The value rank src sends to rank dst as element k of the block: distinct for every (src, dst, k) that fits."""
    v = src * 10000 + dst * 100 + k
    if np.dtype(dtype).kind == 'c':
        return v + 1j * (v + 0.5)
    if np.dtype(dtype) == np.bool_:
        return (src + dst + k) % 2 == 1
    if np.dtype(dtype).itemsize == 1:
        return (src * 37 + dst * 11 + k) % 100
    return v


def blocks(rank, nprocs, n, dtype, to_rank):
    """The nprocs blocks of n elements: to_rank=True: what rank sends to each rank; else what it receives."""
    out = np.empty(nprocs * n, dtype=dtype)
    for j in range(nprocs):
        for k in range(n):
            out[j * n + k] = encode(rank, j, k, dtype) if to_rank else encode(j, rank, k, dtype)
    return out


@pytest.mark.parametrize('dtype', [np.float64, np.complex128, np.int32, np.int64, np.uint8, np.float32,
                                   np.complex64, np.bool_])
def test_alltoall(comm, dtype):
    rank, nprocs, n = comm.rank, comm.size, 3
    send = blocks(rank, nprocs, n, dtype, True)
    recv = np.zeros(nprocs * n, dtype=dtype)
    with plancoll.plan_alltoall(send, recv, comm) as plan:
        plan.execute()
        first = recv.copy()
        send[:] = blocks(rank, nprocs, n, dtype, True)[::-1]   # the plan reads the planned array at each execute
        plan.execute()
        second = recv.copy()
    assert np.array_equal(first, blocks(rank, nprocs, n, dtype, False))
    expected_second = np.empty_like(recv)
    for j in range(nprocs):   # rank j sent its reversed array: block for us is its reversed block for nprocs-1-rank
        theirs = blocks(j, nprocs, n, dtype, True)[::-1]
        expected_second[j * n:(j + 1) * n] = theirs[rank * n:(rank + 1) * n]
    assert np.array_equal(second, expected_second)


def test_alltoall_measure_and_2d_arrays(comm):
    rank, nprocs, n = comm.rank, comm.size, 4
    send = blocks(rank, nprocs, n, np.float64, True).reshape(nprocs, n)
    recv = np.zeros((nprocs, n))
    with plancoll.plan_alltoall(send, recv, comm, plancoll.MEASURE) as plan:
        plan.execute()
    assert np.array_equal(recv.reshape(-1), blocks(rank, nprocs, n, np.float64, False))


def test_alltoall_in_place(comm):
    rank, nprocs, n = comm.rank, comm.size, 2
    buf = blocks(rank, nprocs, n, np.int32, True)
    with plancoll.plan_alltoall(plancoll.IN_PLACE, buf, comm) as plan:
        assert plan.in_place and plan.send is None
        plan.execute()
        got = buf.copy()
        other = blocks(rank, nprocs, n, np.int32, True)
        plan.execute(MPI.IN_PLACE, other)
    assert np.array_equal(got, blocks(rank, nprocs, n, np.int32, False))
    assert np.array_equal(other, blocks(rank, nprocs, n, np.int32, False))


def test_alltoall_execute_on_new_arrays(comm):
    rank, nprocs, n = comm.rank, comm.size, 3
    send = np.zeros(nprocs * n)
    recv = np.zeros(nprocs * n)
    results = []
    with plancoll.plan_alltoall(send, recv, comm) as plan:
        for scale in (1, 2):
            s2 = blocks(rank, nprocs, n, np.float64, True) * scale
            r2 = np.full(nprocs * n, -1.0)
            plan.execute(s2, r2)
            results.append(r2)
        untouched = recv.copy()
    assert np.array_equal(results[0], blocks(rank, nprocs, n, np.float64, False))
    assert np.array_equal(results[1], 2 * blocks(rank, nprocs, n, np.float64, False))
    assert np.array_equal(untouched, np.zeros(nprocs * n))


def test_alltoall_buffer_protocol_objects(comm):
    # array.array and bytearray, no NumPy object passed: the datatype follows the buffer's format.
    rank, nprocs, n = comm.rank, comm.size, 2
    send = array.array('i', blocks(rank, nprocs, n, np.int32, True).tolist())
    recv = array.array('i', [0] * (nprocs * n))
    bsend = bytearray(blocks(rank, nprocs, n, np.uint8, True).tobytes())
    brecv = bytearray(nprocs * n)
    with plancoll.plan_alltoall(send, recv, comm) as p1, plancoll.plan_alltoall(bsend, brecv, comm) as p2:
        p1.execute()
        p2.execute()
    assert list(recv) == blocks(rank, nprocs, n, np.int32, False).tolist()
    assert bytes(brecv) == blocks(rank, nprocs, n, np.uint8, False).tobytes()


def alltoallv_layout(src, dst, nprocs):
    """Rank src sends count(src, dst) elements to dst; zero for some pairs, uneven for the others."""
    return (src * 3 + dst * 5) % 4 if (src + dst) % 3 else 0


@pytest.mark.parametrize('dtype', [np.float64, np.int32, np.complex128])
def test_alltoallv(comm, dtype):
    rank, nprocs = comm.rank, comm.size
    sendcounts = [alltoallv_layout(rank, j, nprocs) for j in range(nprocs)]
    recvcounts = [alltoallv_layout(j, rank, nprocs) for j in range(nprocs)]
    # Displacements with gaps of one element between blocks, blocks in reverse rank order on the receive side.
    sdispls = list(np.cumsum([0] + [c + 1 for c in sendcounts[:-1]]))
    order = list(range(nprocs))[::-1]
    rdispls = [0] * nprocs
    pos = 0
    for j in order:
        rdispls[j] = pos
        pos += recvcounts[j] + 1
    send = np.full(sum(sendcounts) + nprocs, -7, dtype=dtype)
    for j in range(nprocs):
        for k in range(sendcounts[j]):
            send[sdispls[j] + k] = encode(rank, j, k, dtype)
    recv = np.full(pos, -3, dtype=dtype)
    with plancoll.plan_alltoallv(send, sendcounts, sdispls, recv, recvcounts, rdispls, comm) as plan:
        plan.execute()
    expected = np.full(pos, -3, dtype=dtype)                            # the gaps stay untouched
    for j in range(nprocs):
        for k in range(recvcounts[j]):
            expected[rdispls[j] + k] = encode(j, rank, k, dtype)
    assert np.array_equal(recv, expected)
