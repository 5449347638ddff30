"""Wisdom through the Python package: export, forget, WISDOM_ONLY, import, and the refusals of bad files."""
import os
import tempfile

import numpy as np
from mpi4py import MPI

import plancoll


def shared_dir(comm):
    path = tempfile.mkdtemp(prefix='plancoll-py-') if comm.rank == 0 else None
    return comm.bcast(path, root=0)


def test_wisdom_round_trip(comm):
    d = shared_dir(comm)
    path = os.path.join(d, 'w.txt')
    n = 37 * comm.size + 3                              # a problem no other test plans
    x = np.arange(n, dtype=np.float64)
    y = np.zeros(n)
    results = {}
    plancoll.forget_wisdom()
    try:
        plancoll.plan_allreduce(x, y, comm=comm, flags=plancoll.WISDOM_ONLY)
        results['before'] = None
    except plancoll.Error as e:
        results['before'] = e.code
    with plancoll.plan_allreduce(x, y, comm=comm, flags=plancoll.MEASURE) as p:
        measured = p.spec
    plancoll.export_wisdom(path, comm)
    exported = comm.bcast(os.path.exists(path) and os.path.getsize(path) > 0 if comm.rank == 0 else None)
    plancoll.forget_wisdom()
    try:
        plancoll.plan_allreduce(x, y, comm=comm, flags=plancoll.WISDOM_ONLY)
        results['forgotten'] = None
    except plancoll.Error as e:
        results['forgotten'] = e.code
    plancoll.import_wisdom(path, comm)
    with plancoll.plan_allreduce(x, y, comm=comm, flags=plancoll.WISDOM_ONLY) as p:
        p.execute()
        from_wisdom = p.spec
    # Bad files: malformed text, and a file that does not exist.
    bad = os.path.join(d, 'bad.txt')
    if comm.rank == 0:
        with open(bad, 'w') as f:
            f.write('this is not wisdom\n')
    comm.Barrier()
    for key, p in (('malformed', bad), ('missing', os.path.join(d, 'none.txt'))):
        try:
            plancoll.import_wisdom(p, comm)
            results[key] = None
        except plancoll.Error as e:
            results[key] = e.code
    comm.Barrier()
    if comm.rank == 0:
        for f in os.listdir(d):
            os.unlink(os.path.join(d, f))
        os.rmdir(d)
    assert results == {'before': plancoll.ERR_NO_WISDOM, 'forgotten': plancoll.ERR_NO_WISDOM,
                       'malformed': plancoll.ERR_WISDOM_FORMAT, 'missing': plancoll.ERR_IO}, results
    assert exported
    assert from_wisdom == measured
    assert np.array_equal(y, comm.size * x)
