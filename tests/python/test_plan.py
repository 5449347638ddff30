"""The plan object: inspection, the arrays it keeps alive, destruction, `with`, execute's checks of new arrays."""
import gc
import os
import re
import weakref

import numpy as np
import pytest
from mpi4py import MPI

import plancoll


def test_inspection(comm):
    send = np.zeros(comm.size * 4)
    recv = np.zeros(comm.size * 4)
    with plancoll.plan_alltoall(send, recv, comm) as plan:
        algorithm, spec, text, rep = plan.algorithm, plan.spec, str(plan), repr(plan)
    assert re.fullmatch(r'alltoall\.[a-z_]+', algorithm), algorithm
    assert spec.split(':')[0] == algorithm
    assert algorithm in text and len(text.splitlines()) > 2, text
    assert spec in rep


def test_spec_forces_the_same_plan(comm):
    # The spec is PLANCOLL_ALGORITHM syntax: forcing it (here through the environment, as C reads it) rebuilds it.
    x = np.arange(comm.size * 3, dtype=np.int32)
    y = np.zeros_like(x)
    with plancoll.plan_allreduce(x, y, comm=comm) as plan:
        spec = plan.spec
    os.environ['PLANCOLL_ALGORITHM'] = spec
    try:
        with plancoll.plan_allreduce(x, y, comm=comm) as again:
            again.execute()
            spec2 = again.spec
    finally:
        del os.environ['PLANCOLL_ALGORITHM']
    assert spec2 == spec
    assert np.array_equal(y, comm.size * x)


def test_plan_keeps_its_arrays_alive(comm):
    n = comm.size * 2
    send = np.full(n, float(comm.rank))
    recv = np.zeros(n)
    refs = weakref.ref(send), weakref.ref(recv)
    plan = plancoll.plan_alltoall(send, recv, comm)
    del send, recv
    gc.collect()
    alive_while_planned = all(r() is not None for r in refs)
    plan.execute()                                  # writes into the array only the plan still references
    got = plan.recv.copy()
    plan.destroy()
    gc.collect()
    freed_after_destroy = all(r() is None for r in refs)
    assert alive_while_planned and freed_after_destroy
    assert np.array_equal(got, np.repeat(np.arange(comm.size, dtype=float), 2))


def test_destroy_and_with(comm):
    x = np.ones(comm.size)
    y = np.zeros(comm.size)
    with plancoll.plan_alltoall(x, y, comm) as plan:
        assert not plan.destroyed
    destroyed = plan.destroyed
    plan.destroy()                                  # a second destroy does nothing
    codes = []
    for call in (plan.execute, lambda: plan.algorithm, lambda: plan.spec, lambda: str(plan)):
        try:
            call()
            codes.append(None)
        except plancoll.Error as e:
            codes.append(e.code)
    assert destroyed
    assert codes[0] == plancoll.ERR_NULL_PLAN, codes      # C's code for the NULL handle destroy leaves
    assert all(c in (plancoll.ERR_NULL_PLAN, plancoll.ERR_INVALID_PLAN) for c in codes), codes
    assert 'destroyed' in repr(plan)


def test_with_destroys_on_exception(comm):
    x = np.ones(comm.size)
    y = np.zeros(comm.size)
    with pytest.raises(RuntimeError):
        with plancoll.plan_alltoall(x, y, comm) as plan:
            raise RuntimeError('inside')
    assert plan.destroyed


def test_execute_checks_new_arrays(comm):
    n = comm.size * 2
    x = np.zeros(n)
    y = np.zeros(n)
    codes = []
    with plancoll.plan_alltoall(x, y, comm) as plan:
        for send, recv in ((np.zeros(n + comm.size), np.zeros(n + comm.size)),     # other size
                           (np.zeros(n, np.float32), np.zeros(n, np.float32)),      # other dtype
                           (np.zeros((comm.size, 2)), np.zeros((comm.size, 2))),    # other shape
                           (np.zeros(2 * n)[::2], np.zeros(n)),                     # non-contiguous
                           (x, np.zeros(n)),                                        # fine
                           (MPI.IN_PLACE, np.zeros(n)),                             # in place, planned out of place
                           (x, None)):
            try:
                plan.execute(send, recv)
                codes.append(None)
            except plancoll.Error as e:
                codes.append(e.code)
        ro = np.zeros(n)
        ro.flags.writeable = False
        try:
            plan.execute(x, ro)
            codes.append(None)
        except plancoll.Error as e:
            codes.append(e.code)
    b = plancoll.ERR_BUFFER
    assert codes == [b, b, b, b, None, b, b, b], codes


def test_layout_is_the_emulated_one(comm):
    # The run's premise: under PLANCOLL_EMULATE_NODES=K (the emulated-node runs) plancoll sees K nodes, else one.
    k = int(os.environ.get('PLANCOLL_EMULATE_NODES', '1'))
    x = np.zeros(comm.size * 2)
    y = np.zeros_like(x)
    with plancoll.plan_alltoall(x, y, comm) as plan:
        first_line = str(plan).splitlines()[0]
    assert f':nodes={min(k, comm.size)}:' in first_line, first_line
