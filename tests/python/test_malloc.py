"""plancoll.empty / plancoll.free: NumPy arrays over node-shared memory from plancoll_malloc, used by plans, given
back when unreferenced or at free(), and the errors on every rank."""
import gc
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import plancoll
from plancoll import _lib


def code_of(fn, *args, **kw):
    try:
        fn(*args, **kw)
    except plancoll.Error as e:
        assert e.detail, e
        return e.code, e.detail
    return None, None


def block_address(arr):
    return arr.__array_interface__['data'][0]


@pytest.mark.parametrize('shape,dtype', [((3, 4), np.float64), (7, np.int32), ((2, 3, 5), np.complex128),
                                         ((1,), np.uint8)])
def test_empty_is_a_shared_array(comm, shape, dtype):
    # Ranks ask for different sizes (allowed: only the call is collective).
    shape = (shape + comm.rank,) if isinstance(shape, int) else shape
    a = plancoll.empty(shape, dtype, comm)
    assert isinstance(a, np.ndarray) and a.dtype == np.dtype(dtype)
    assert a.shape == (shape if isinstance(shape, tuple) else (shape,))
    assert a.flags.c_contiguous and a.flags.writeable
    assert block_address(a) % 64 == 0                  # C's alignment
    a[...] = np.arange(a.size).reshape(a.shape).astype(dtype)
    assert np.array_equal(a.ravel(), np.arange(a.size).astype(dtype))
    del a


def test_empty_of_no_bytes(comm):
    a = plancoll.empty((0, 3), np.float64, comm)
    assert a.shape == (0, 3)
    plancoll.free(a)                                   # nothing to give back; no error


@pytest.mark.parametrize('flags', [plancoll.ESTIMATE, plancoll.NONBLOCKING])
def test_shared_arrays_as_plan_buffers(comm, flags):
    P, n = comm.size, 3
    send = plancoll.empty(P * n, np.int64, comm)
    recv = plancoll.empty(P * n, np.int64, comm)
    total = plancoll.empty(P * n, np.int64, comm)
    expected = np.array([s * 100000 + j * 1000 + comm.rank * 10 + k for s in range(2) for j in range(P)
                         for k in range(n)], dtype=np.int64).reshape(2, P * n)
    with plancoll.plan_alltoall(send, recv, comm, flags) as a2a, \
            plancoll.plan_allreduce(recv, total, MPI.SUM, comm, flags) as red:
        for step in range(2):
            send[:] = [step * 100000 + comm.rank * 1000 + j * 10 + k for j in range(P) for k in range(n)]
            recv[:] = -1
            if flags & plancoll.NONBLOCKING:
                a2a.start()
                a2a.wait()
            else:
                a2a.execute()
            assert np.array_equal(recv, expected[step])
            red.execute()
            assert np.array_equal(total, sum(np.array([step * 100000 + j * 1000 + q * 10 + k for j in range(P)
                                                       for k in range(n)], dtype=np.int64) for q in range(P)))


def test_transpose_on_shared_input(comm):
    # The fused transpose's one-pass path: in from plancoll_malloc on the plan's communicator.
    n0, n1 = 9, 6
    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    whole = np.arange(n0 * n1, dtype=np.float64).reshape(n0, n1) * 1.5
    inarr = plancoll.empty(alloc, np.float64, comm)
    outarr = plancoll.empty(alloc, np.float64, comm)
    inarr[:ln0 * n1] = whole[s0:s0 + ln0].ravel()
    outarr[:] = -1
    with plancoll.plan_transpose(n0, n1, inarr, outarr, comm) as plan:
        plan.execute()
    assert np.array_equal(outarr[:ln1 * n0].reshape(ln1, n0), whole.T[s1:s1 + ln1])


def test_unreferenced_block_is_given_back(comm):
    a = plancoll.empty(100, np.float64, comm)
    view = a[10:20]
    ptr = block_address(a)
    block = weakref.ref(a.base)
    del a
    gc.collect()
    kept_by_view = block() is not None and block().finalizer.alive    # a view still holds the block
    view[:] = 3.0
    del view
    gc.collect()
    released = block() is None
    # plancoll_free ran: C no longer knows the block (freeing it again is refused, nothing is freed). Had it not
    # run, this call would free the block and succeed.
    rc = _lib.shared_free(ptr)
    assert kept_by_view and released
    assert rc == plancoll.ERR_ARGUMENT, _lib.error_detail()


def test_explicit_free(comm):
    a = plancoll.empty((4, 4), np.float64, comm)
    ptr = block_address(a)
    codes = {'interior view': code_of(plancoll.free, a[1:])[0],
             'not from empty': code_of(plancoll.free, np.zeros(4))[0],
             'not an array': code_of(plancoll.free, 'abc')[0]}
    x = np.zeros(comm.size)
    plan = plancoll.plan_alltoall(x, a.ravel()[:comm.size], comm)
    codes['a plan holds it'] = code_of(plancoll.free, a)[0]
    plan.destroy()
    codes['free'] = code_of(plancoll.free, a)[0]
    gone = _lib.shared_free(ptr) == plancoll.ERR_ARGUMENT     # C freed it
    # The heap hands the same address out again: a stale free(a), or a's finalizer, must not free the new block.
    c = plancoll.empty((4, 4), np.float64, comm)
    reused = block_address(c) == ptr
    codes['free again'] = code_of(plancoll.free, a)[0]
    plancoll.free(None)                                       # as C's free(NULL)
    del a
    gc.collect()
    codes['free of the new block'] = code_of(plancoll.free, c)[0]
    b = plancoll.empty(16, np.int32, comm)                    # the heap still works
    b[:] = 7
    a_ = plancoll.ERR_ARGUMENT
    assert codes == {'interior view': a_, 'not from empty': a_, 'not an array': a_, 'a plan holds it': a_,
                     'free': None, 'free again': a_, 'free of the new block': None}, codes
    assert gone
    print(f'address reused: {reused}')
    assert int(b.sum()) == 112


def test_errors_on_every_rank(comm):
    free_shm = 1 << 50                                  # a PiB: more than any /dev/shm (refused before any byte)
    codes = {'too big': code_of(plancoll.empty, free_shm, np.uint8, comm),
             'beyond 2^60': code_of(plancoll.empty, 1 << 61, np.uint8, comm),
             'object dtype': code_of(plancoll.empty, 4, object, comm),
             'negative dimension': code_of(plancoll.empty, (2, -1), np.float64, comm),
             'shape not integers': code_of(plancoll.empty, (2.5,), np.float64, comm),
             'not a communicator': code_of(plancoll.empty, 4, np.float64, 'world'),
             'COMM_NULL': code_of(plancoll.empty, 4, np.float64, MPI.COMM_NULL)}
    # one rank's bad shape fails every rank: that rank with its reason, the others ERR_REMOTE
    one_bad = code_of(plancoll.empty, -3 if comm.rank == 0 else 3, np.float64, comm)
    assert codes['too big'][0] == plancoll.ERR_NOMEM and 'shared memory' in codes['too big'][1], codes['too big']
    names = {k: plancoll.ERROR_NAMES.get(v[0], v[0]) for k, v in codes.items()}
    assert names == {'too big': 'ERR_NOMEM', 'beyond 2^60': 'ERR_OVERFLOW', 'object dtype': 'ERR_DATATYPE',
                     'negative dimension': 'ERR_COUNT', 'shape not integers': 'ERR_COUNT',
                     'not a communicator': 'ERR_COMM', 'COMM_NULL': 'ERR_COMM'}, names
    if comm.size > 1:
        assert one_bad[0] == (plancoll.ERR_COUNT if comm.rank == 0 else plancoll.ERR_REMOTE), one_bad
    else:
        assert one_bad[0] == plancoll.ERR_COUNT
    works = plancoll.empty(8, np.float64, comm)         # the heap and the communicator still work
    works[:] = 1.0
    assert works.sum() == 8.0


def test_on_a_sub_communicator(comm):
    sub = comm.Split(comm.rank % 2, comm.rank)
    try:
        x = plancoll.empty(sub.size * 2, np.int64, sub)
        y = plancoll.empty(sub.size * 2, np.int64, sub)
        x[:] = [sub.rank * 10 + j for j in range(sub.size) for _ in range(2)]
        with plancoll.plan_alltoall(x, y, sub) as plan:
            plan.execute()
        assert np.array_equal(y, [j * 10 + sub.rank for j in range(sub.size) for _ in range(2)])
        plancoll.free(x)
        plancoll.free(y)
    finally:
        sub.Free()
