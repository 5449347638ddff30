"""pytest under mpiexec: every rank runs every test. A test that fails on one rank fails on every rank (the
verdict is agreed at teardown), so the exit code of each rank, and mpiexec's, says whether any rank failed."""
import pytest
from mpi4py import MPI


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == 'call':
        item.plancoll_failed = report.failed


@pytest.fixture(autouse=True)
def ranks_agree(request):
    yield
    failed_here = getattr(request.node, 'plancoll_failed', True)
    failed_ranks = MPI.COMM_WORLD.allgather(failed_here)
    if any(failed_ranks) and not failed_here:
        pytest.fail(f'failed on rank(s) {[r for r, f in enumerate(failed_ranks) if f]}')


@pytest.fixture
def comm():
    return MPI.COMM_WORLD
