"""Bad input raises plancoll.Error with the right code, on every rank when any rank's arguments are bad, writes
nothing, and leaves the communicator usable."""
import numpy as np
import pytest
from mpi4py import MPI

import plancoll


def raises(fn, *args, **kw):
    """The code of the plancoll.Error fn raises (and checks the exception's fields); None if it returned."""
    try:
        result = fn(*args, **kw)
    except plancoll.Error as e:
        assert e.message and e.detail, (e.message, e.detail)
        assert e.name == plancoll.ERROR_NAMES[e.code]
        return e.code
    if isinstance(result, plancoll.Plan):
        result.destroy()
    return None


def works_after(comm):
    """The communicator still runs a plan after a failure."""
    x = np.arange(comm.size * 2.0)
    y = np.zeros_like(x)
    with plancoll.plan_alltoall(x, y, comm) as p:
        p.execute()
    # every rank sends the same array: block r of it, [2r, 2r + 1], comes from each rank
    return bool(np.array_equal(y, np.array([2.0 * comm.rank + k for j in range(comm.size) for k in range(2)])))


def test_error_fields():
    e = plancoll.Error(plancoll.ERR_COUNT, 'a detail')
    assert e.code == plancoll.ERR_COUNT and e.name == 'ERR_COUNT' and e.detail == 'a detail'
    assert 'count' in e.message.lower()
    assert isinstance(e, Exception)


def test_local_refusals_every_rank(comm):
    n = comm.size * 2
    good = np.zeros(n)
    ro = np.zeros(n)
    ro.flags.writeable = False
    recv = np.full(n, 5.0)
    codes = {
        'non-contiguous recv': raises(plancoll.plan_alltoall, good, np.zeros(2 * n)[::2], comm),
        'read-only recv': raises(plancoll.plan_alltoall, good, ro, comm),
        'float16': raises(plancoll.plan_alltoall, good.astype(np.float16), recv.astype(np.float16), comm),
        'flags not an int': raises(plancoll.plan_alltoall, good, recv, comm, 'MEASURE'),
        'two rigor levels (C)': raises(plancoll.plan_alltoall, good, recv, comm, plancoll.MEASURE | plancoll.PATIENT),
        'unknown flag bit (C)': raises(plancoll.plan_alltoall, good, recv, comm, 1 << 20),
        'send and recv sizes': raises(plancoll.plan_alltoall, np.zeros(2 * n), recv, comm),
        'BAND on doubles (C)': raises(plancoll.plan_allreduce, good, recv, MPI.BAND, comm),
        'op not an Op': raises(plancoll.plan_allreduce, good, recv, 'sum', comm),
        'allreduce dtypes': raises(plancoll.plan_allreduce, good.astype(np.float32), recv, MPI.SUM, comm),
        'allreduce sizes': raises(plancoll.plan_allreduce, good[:-1], recv, MPI.SUM, comm),
        'COMM_NULL (C)': raises(plancoll.plan_allreduce, good, recv, MPI.SUM, MPI.COMM_NULL),
        'not a communicator': raises(plancoll.plan_allreduce, good, recv, MPI.SUM, 42),
        'counts length': raises(plancoll.plan_alltoallv, good, [1] * (comm.size + 1), [0] * comm.size, recv,
                                [1] * comm.size, [0] * comm.size, comm),
        'negative count (C)': raises(plancoll.plan_alltoallv, good, [-1] * comm.size, [0] * comm.size, recv,
                                     [1] * comm.size, [0] * comm.size, comm),
        'negative displacement (C)': raises(plancoll.plan_alltoallv, good, [1] * comm.size, [-2] * comm.size,
                                            recv, [1] * comm.size, [0] * comm.size, comm),
        'block past the end': raises(plancoll.plan_alltoallv, good, [1] * comm.size, [n - 1] * comm.size, recv,
                                     [1] * comm.size, [n] * comm.size, comm),
        'transpose negative n0 (C)': raises(plancoll.plan_transpose, -1, 3, good, recv, comm),
        'transpose too small': raises(plancoll.plan_transpose, 40, 40, good, recv, comm),
        'transpose IN_PLACE': raises(plancoll.plan_transpose, 2, 2, MPI.IN_PLACE, recv, comm),
        'local_size negative (C)': raises(plancoll.local_size_transposed, 3, -4, comm),
        'local_size COMM_NULL (C)': raises(plancoll.local_size_transposed, 3, 4, MPI.COMM_NULL),
    }
    if comm.size > 1:
        codes['count not a multiple of P'] = raises(plancoll.plan_alltoall, np.zeros(n + 1), np.zeros(n + 1), comm)
    expected = {
        'non-contiguous recv': plancoll.ERR_ARGUMENT, 'read-only recv': plancoll.ERR_ARGUMENT,
        'float16': plancoll.ERR_DATATYPE, 'flags not an int': plancoll.ERR_FLAGS,
        'two rigor levels (C)': plancoll.ERR_FLAGS, 'unknown flag bit (C)': plancoll.ERR_FLAGS,
        'send and recv sizes': plancoll.ERR_COUNT, 'BAND on doubles (C)': plancoll.ERR_OP,
        'op not an Op': plancoll.ERR_OP, 'allreduce dtypes': plancoll.ERR_DATATYPE,
        'allreduce sizes': plancoll.ERR_COUNT, 'COMM_NULL (C)': plancoll.ERR_COMM,
        'not a communicator': plancoll.ERR_COMM, 'counts length': plancoll.ERR_ARGUMENT,
        'negative count (C)': plancoll.ERR_COUNT, 'negative displacement (C)': plancoll.ERR_DISPL,
        'block past the end': plancoll.ERR_ARGUMENT, 'transpose negative n0 (C)': plancoll.ERR_COUNT,
        'transpose too small': plancoll.ERR_ARGUMENT, 'transpose IN_PLACE': plancoll.ERR_IN_PLACE,
        'local_size negative (C)': plancoll.ERR_COUNT, 'local_size COMM_NULL (C)': plancoll.ERR_COMM,
        'count not a multiple of P': plancoll.ERR_COUNT,
    }
    wrong = {k: (plancoll.ERROR_NAMES.get(v, v), plancoll.ERROR_NAMES[expected[k]])
             for k, v in codes.items() if v != expected[k]}
    assert not wrong, wrong
    assert np.array_equal(recv, np.full(n, 5.0))            # nothing written by any refused call
    assert works_after(comm)


def test_one_rank_bad_fails_every_rank(comm):
    """Only rank 0's arguments are bad (a Python-side refusal, then a C-side one): every rank raises, rank 0 with the
    reason, the others with ERR_REMOTE, and nothing hangs."""
    n = comm.size * 2
    send = np.arange(n, dtype=np.float64)
    recv = np.full(n, 9.0)
    bad_recv = np.zeros(2 * n)[::2] if comm.rank == 0 else recv
    python_side = raises(plancoll.plan_alltoall, send, bad_recv, comm)
    flags = plancoll.MEASURE | plancoll.EXHAUSTIVE if comm.rank == 0 else plancoll.ESTIMATE
    c_side = raises(plancoll.plan_allreduce, send, recv, MPI.SUM, comm, flags)
    if comm.rank == 0:
        assert python_side == plancoll.ERR_ARGUMENT and c_side == plancoll.ERR_FLAGS
    else:
        assert python_side == plancoll.ERR_REMOTE and c_side == plancoll.ERR_REMOTE
    assert np.array_equal(recv, np.full(n, 9.0))
    assert works_after(comm)


def test_ranks_disagreeing_on_block_size(comm):
    if comm.size == 1:
        pytest.skip('needs two ranks to disagree')
    n = 2 if comm.rank == 0 else 3
    code = raises(plancoll.plan_alltoall, np.zeros(comm.size * n), np.zeros(comm.size * n), comm)
    assert code in (plancoll.ERR_MISMATCH, plancoll.ERR_REMOTE)
    assert comm.allreduce(int(code == plancoll.ERR_MISMATCH)) >= 1     # some rank names the mismatch
