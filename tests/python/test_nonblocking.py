"""Nonblocking plans (start, test, wait, waitall) and transposes in pieces through the Python package: results
checked exactly against NumPy, the arrays a started plan holds, and the refusals C makes (ERR_ACTIVE) or the
package makes (ERR_BUFFER, ERR_ARGUMENT) on every rank."""
import gc
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import plancoll


def code_of(fn, *args):
    """The code of the plancoll.Error fn raises, None if it returns."""
    try:
        fn(*args)
    except plancoll.Error as e:
        assert e.detail, e
        return e.code
    return None


def alltoall_input(comm, n, step):
    """Rank r's send array: block j (n elements, to rank j) holds values naming (step, r, j, position)."""
    r = comm.rank
    return np.array([step * 1000000 + r * 10000 + j * 100 + k for j in range(comm.size) for k in range(n)],
                    dtype=np.int64)


def alltoall_expected(comm, n, step):
    """Block j of rank r's receive array is block r of rank j's send array."""
    r = comm.rank
    return np.array([step * 1000000 + j * 10000 + r * 100 + k for j in range(comm.size) for k in range(n)],
                    dtype=np.int64)


def allreduce_input(rank, n, step):
    return (np.arange(n, dtype=np.int64) * (rank + 1) + step * 7 + rank * rank) % 1009


def allreduce_expected(nprocs, n, step):
    return sum(allreduce_input(q, n, step) for q in range(nprocs))


@pytest.mark.parametrize('flags', [plancoll.NONBLOCKING, plancoll.OVERLAP, plancoll.ESTIMATE])
def test_start_compute_test_wait(comm, flags):
    n = 5
    x = np.zeros(n * 3, dtype=np.int64)
    y = np.full_like(x, -1)
    results = []
    with plancoll.plan_allreduce(x, y, MPI.SUM, comm, flags) as plan:
        for step in range(4):                          # several executions in a row
            x[:] = allreduce_input(comm.rank, x.size, step)
            plan.start()
            assert plan.active
            acc = 0.0
            done = False
            for i in range(20):                        # the caller's computation, testing now and then
                acc += float(np.sum(np.sqrt(np.arange(2000.0) + i)))
                done = plan.test()
                if done:
                    break
            if not done:
                plan.wait()
            assert not plan.active
            results.append(y.copy())
            assert acc > 0
    for step, got in enumerate(results):
        assert np.array_equal(got, allreduce_expected(comm.size, x.size, step)), (step, got)


def test_start_on_other_arrays_holds_them(comm):
    n = 3
    x = np.zeros(comm.size * n, dtype=np.int64)
    y = np.zeros_like(x)
    with plancoll.plan_alltoall(x, y, comm, plancoll.NONBLOCKING) as plan:
        for step in range(3):
            send = alltoall_input(comm, n, step)
            recv = np.full_like(send, -1)
            keep = recv                                  # the test's own reference, to read the result
            refs = weakref.ref(send), weakref.ref(recv)
            plan.start(send, recv)
            del send, recv
            gc.collect()
            held_while_active = all(r() is not None for r in refs)
            plan.wait()
            gc.collect()
            send_dropped = refs[0]() is None            # the plan let go once complete
            assert held_while_active and send_dropped
            assert np.array_equal(keep, alltoall_expected(comm, n, step))
        assert np.array_equal(y, np.zeros_like(y))      # the planned arrays were not touched


def test_waitall_of_several_plans(comm):
    P, n = comm.size, 4
    a_send, a_recv = alltoall_input(comm, n, 0), np.full(P * n, -1, dtype=np.int64)
    r_send, r_recv = allreduce_input(comm.rank, 6, 1), np.full(6, -1, dtype=np.int64)
    # alltoallv: rank r sends j + 1 elements to rank j, valued 100 r + j
    v_send = np.concatenate([np.full(j + 1, 100 * comm.rank + j, dtype=np.int32) for j in range(P)])
    scounts = [j + 1 for j in range(P)]
    sdispls = list(np.cumsum([0] + scounts[:-1]))
    rcounts = [comm.rank + 1] * P
    rdispls = [j * (comm.rank + 1) for j in range(P)]
    v_recv = np.full(P * (comm.rank + 1), -1, dtype=np.int32)
    plans = [plancoll.plan_alltoall(a_send, a_recv, comm, plancoll.NONBLOCKING),
             plancoll.plan_allreduce(r_send, r_recv, MPI.SUM, comm, plancoll.NONBLOCKING),
             plancoll.plan_alltoallv(v_send, scounts, sdispls, v_recv, rcounts, rdispls, comm, plancoll.NONBLOCKING)]
    try:
        for step in range(2):
            for p in plans:
                p.start()
            assert 0 <= plancoll.progress() <= len(plans)             # advances, completes nothing
            assert all(p.active for p in plans)
            plancoll.waitall([plans[2], None, plans[0], plans[1]])   # any order, None skipped
            assert not any(p.active for p in plans)
            assert plancoll.progress() == 0                            # nothing left pending
            assert np.array_equal(a_recv, alltoall_expected(comm, n, 0))
            assert np.array_equal(r_recv, allreduce_expected(P, 6, 1))
            assert np.array_equal(v_recv, np.concatenate([np.full(comm.rank + 1, 100 * j + comm.rank, dtype=np.int32)
                                                          for j in range(P)]))
            a_recv[:] = r_recv[:] = v_recv[:] = -1
        plancoll.waitall([])                                           # nothing to wait for
    finally:
        for p in plans:
            p.destroy()


def test_refusals(comm):
    n = 2
    x = alltoall_input(comm, n, 5)
    y = np.full_like(x, -1)
    plan = plancoll.plan_alltoall(x, y, comm, plancoll.NONBLOCKING)
    codes = {}
    codes['wait, not started'] = code_of(plan.wait)             # C: an inactive plan completes at once
    done_when_inactive = plan.test()                             # C: True at once on an inactive plan
    codes['start, wrong shape'] = code_of(plan.start, x[:-1].copy(), y[:-1].copy())
    codes['start, wrong dtype'] = code_of(plan.start, x.astype(np.int32), y.astype(np.int32))
    codes['start, IN_PLACE on a plan out of place'] = code_of(plan.start, MPI.IN_PLACE, y)
    inactive_after_refusals = not plan.active
    plan.start()
    codes['start twice'] = code_of(plan.start)
    codes['start twice, other arrays'] = code_of(plan.start, x.copy(), np.zeros_like(y))
    codes['execute while active'] = code_of(plan.execute)
    codes['destroy while active'] = code_of(plan.destroy)
    still_active = plan.active and not plan.destroyed
    plan.wait()                                                  # the first start's execution, intact
    result = y.copy()
    plan.destroy()
    codes['wait, destroyed'] = code_of(plan.wait)
    codes['waitall, destroyed'] = code_of(plancoll.waitall, [plan])
    codes['waitall, not a plan'] = code_of(plancoll.waitall, [None, 'plan'])
    expected = {'wait, not started': None,
                'start, wrong shape': plancoll.ERR_BUFFER, 'start, wrong dtype': plancoll.ERR_BUFFER,
                'start, IN_PLACE on a plan out of place': plancoll.ERR_BUFFER,
                'start twice': plancoll.ERR_ACTIVE, 'start twice, other arrays': plancoll.ERR_ACTIVE,
                'execute while active': plancoll.ERR_ACTIVE, 'destroy while active': plancoll.ERR_ACTIVE,
                'wait, destroyed': plancoll.ERR_NULL_PLAN, 'waitall, destroyed': plancoll.ERR_NULL_PLAN,
                'waitall, not a plan': plancoll.ERR_ARGUMENT}
    wrong = {k: (plancoll.ERROR_NAMES.get(v, v), plancoll.ERROR_NAMES.get(expected[k], expected[k]))
             for k, v in codes.items() if v != expected[k]}
    assert not wrong, wrong
    assert done_when_inactive is True and inactive_after_refusals and still_active
    assert np.array_equal(result, alltoall_expected(comm, n, 5))


def fftw_rows(n, rank, nprocs):
    block = -(-n // nprocs) if n else 0
    count = max(0, min(block, n - rank * block)) if block else 0
    return count, (rank * block if count else 0)


@pytest.mark.parametrize('n0,n1,pieces', [(7, 5, 3), (12, 9, 4), (3, 8, 5)])
def test_transpose_in_pieces(comm, n0, n1, pieces):
    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    whole = (np.arange(n0)[:, None] * 1000 + np.arange(n1)[None, :]).astype(np.complex128) * (1 + 0.5j)
    inarr = np.zeros(alloc, dtype=np.complex128)
    outarr = np.full(alloc, -1, dtype=np.complex128)
    rows = inarr[:ln0 * n1].reshape(ln0, n1)
    with plancoll.plan_transpose_pieces(n0, n1, inarr, outarr, pieces, comm) as plan:
        assert plan.pieces == pieces
        for step in range(2):
            got_rows = []
            for k in range(pieces):
                lo, count = plan.piece_rows(k)
                got_rows.append((lo, count))
                rows[lo:lo + count] = whole[s0 + lo:s0 + lo + count] * (step + 1)   # "compute" piece k's rows
                plan.start_piece(k)
                assert plan.active
                plan.test()                                # moves what was started; cannot be complete before k = K-1
            plan.wait()
            assert not plan.active
            assert got_rows == [(k * ln0 // pieces, (k + 1) * ln0 // pieces - k * ln0 // pieces)
                                for k in range(pieces)]
            assert np.array_equal(outarr[:ln1 * n0].reshape(ln1, n0), whole.T[s1:s1 + ln1] * (step + 1))
        # the whole transpose by start() (every piece at once)
        rows[:] = whole[s0:s0 + ln0]
        plan.start()
        plan.wait()
        assert np.array_equal(outarr[:ln1 * n0].reshape(ln1, n0), whole.T[s1:s1 + ln1])


def test_transpose_pieces_refusals(comm):
    n0, n1, pieces = 6, 4, 3
    alloc, ln0, s0, ln1, s1 = plancoll.local_size_transposed(n0, n1, comm)
    whole = np.arange(n0 * n1, dtype=np.float64).reshape(n0, n1)
    inarr = np.zeros(alloc)
    outarr = np.zeros(alloc)
    inarr[:ln0 * n1] = whole[s0:s0 + ln0].ravel()
    codes = {'in place': code_of(plancoll.plan_transpose_pieces, n0, n1, inarr, inarr, pieces, comm),
             'no pieces': code_of(plancoll.plan_transpose_pieces, n0, n1, inarr, outarr, 0, comm),
             'pieces not an int': code_of(plancoll.plan_transpose_pieces, n0, n1, inarr, outarr, 2.0, comm)}
    with plancoll.plan_transpose_pieces(n0, n1, inarr, outarr, pieces, comm) as plan:
        codes['piece 1 first'] = code_of(plan.start_piece, 1)
        codes['piece k out of range'] = code_of(plan.piece_rows, pieces)
        plan.start_piece(0)
        codes['piece 0 again'] = code_of(plan.start_piece, 0)
        codes['piece 2 before 1'] = code_of(plan.start_piece, 2)
        codes['wait, pieces missing'] = code_of(plan.wait)
        codes['destroy, pieces missing'] = code_of(plan.destroy)
        active_with_pieces_missing = plan.active
        plan.start_piece(1)
        plan.start_piece(2)
        plan.wait()
        assert active_with_pieces_missing and not plan.active
        assert np.array_equal(outarr[:ln1 * n0].reshape(ln1, n0), whole.T[s1:s1 + ln1])
    with plancoll.plan_transpose(n0, n1, inarr, outarr, comm) as whole_plan:
        codes['start_piece on a whole transpose'] = code_of(whole_plan.start_piece, 0)
    a, e = plancoll.ERR_ARGUMENT, {'in place': plancoll.ERR_IN_PLACE, 'no pieces': plancoll.ERR_COUNT,
                                   'piece 0 again': plancoll.ERR_ACTIVE, 'destroy, pieces missing': plancoll.ERR_ACTIVE}
    wrong = {k: (plancoll.ERROR_NAMES.get(v, v), plancoll.ERROR_NAMES[e.get(k, a)])
             for k, v in codes.items() if v != e.get(k, a)}
    assert not wrong, wrong
