"""plancoll: planned MPI collectives (alltoall, alltoallv, allreduce, the FFTW-style transpose) from Python.

    from mpi4py import MPI
    import numpy as np, plancoll

    send = np.arange(8.0); recv = np.empty(8)
    with plancoll.plan_alltoall(send, recv, MPI.COMM_WORLD, plancoll.MEASURE) as p:
        for step in range(1000):
            send[:] = ...
            p.execute()          # recv holds the exchanged blocks
        print(p)                 # the plan: algorithm, how it was chosen, times

A thin layer over libplancoll (ctypes): every call has the C library's semantics (include/plancoll.h), collective
over the communicator as there. Arrays are any C-contiguous buffer-protocol objects (NumPy arrays above all); the MPI
datatype follows the dtype (float64 -> MPI_DOUBLE, complex128 -> MPI_C_DOUBLE_COMPLEX, int32 -> MPI_INT, ...).
Errors raise plancoll.Error with the C code (.code) and plancoll_error_detail (.detail). docs/python.md.
"""
import atexit
import os
import ctypes
import itertools
import operator
import threading
import weakref

import numpy as np
from mpi4py import MPI

from . import _config
from . import _lib
from ._buffers import BufferProblem, DTYPE_TO_MPI, address, as_array, check_counts, check_span, mpi_type_name

__version__ = _config.VERSION
__all__ = ['Error', 'Plan', 'plan_alltoall', 'plan_alltoallv', 'plan_allreduce', 'plan_transpose',
           'local_size_transposed', 'export_wisdom', 'import_wisdom', 'forget_wisdom', 'mpi_datatype',
           'IN_PLACE', 'ESTIMATE', 'MEASURE', 'PATIENT', 'EXHAUSTIVE', 'WISDOM_ONLY', 'NONBLOCKING', 'OVERLAP',
           'MAX_PIECES', 'waitall', 'progress', 'plan_transpose_pieces', 'empty', 'free']

# Planner flags and error codes, with the C header's values (generated from it at build time).
ESTIMATE = _config.FLAGS['ESTIMATE']
MEASURE = _config.FLAGS['MEASURE']
PATIENT = _config.FLAGS['PATIENT']
EXHAUSTIVE = _config.FLAGS['EXHAUSTIVE']
WISDOM_ONLY = _config.FLAGS['WISDOM_ONLY']
NONBLOCKING = _config.FLAGS['NONBLOCKING']
OVERLAP = _config.FLAGS['OVERLAP']
MAX_PIECES = _config.MAX_PIECES
for _name, _value in _config.ERROR_CODES.items():
    if _name != 'ERR_COUNT_OF_CODES':
        globals()[_name] = _value          # plancoll.SUCCESS, plancoll.ERR_COUNT, ...
        __all__.append(_name)
ERROR_NAMES = {v: k for k, v in _config.ERROR_CODES.items() if k != 'ERR_COUNT_OF_CODES'}

# MPI_IN_PLACE: mpi4py's, under plancoll's name too.
IN_PLACE = MPI.IN_PLACE


class Error(Exception):
    """A plancoll failure: .code is the PLANCOLL_ERR_* value (plancoll.ERR_COUNT, ...), .name its name, .message
    plancoll_strerror(code), .detail plancoll_error_detail() (which argument, which rank)."""

    def __init__(self, code, detail=None):
        self.code = int(code)
        self.name = ERROR_NAMES.get(self.code, f'code {self.code}')
        self.message = _lib.strerror(self.code).decode(errors='replace')
        if detail is None:
            detail = _lib.error_detail().decode(errors='replace')
        self.detail = detail
        super().__init__(f'{self.name}: {self.message}: {self.detail}' if self.detail else
                         f'{self.name}: {self.message}')


def _check(rc):
    if rc != 0:
        raise Error(rc)


def _local_error(problem):
    return Error(_config.ERROR_CODES[problem.code_name], problem.detail)


def mpi_datatype(dtype):
    """The mpi4py Datatype of a NumPy dtype (the one plancoll passes to C); plancoll.Error (ERR_DATATYPE) for a dtype
    without a predefined MPI datatype."""
    try:
        return getattr(MPI, mpi_type_name(dtype, 'dtype'))
    except BufferProblem as problem:
        raise _local_error(problem) from None


def _comm_handle(comm):
    # Not a communicator: refused on this rank alone, as C refuses an invalid handle (the other ranks wait for this
    # one in the plan's first collective: erroneous, as in MPI).
    if not isinstance(comm, MPI.Comm):
        raise Error(_config.ERROR_CODES['ERR_COMM'], f'comm: {type(comm).__name__} is not an mpi4py communicator')
    return _lib.handle(comm, _lib.Comm)


def _comm_size(comm):
    if comm == MPI.COMM_NULL:
        return 0
    return comm.Get_size()


def _flags_value(flags):
    if isinstance(flags, bool) or not isinstance(flags, (int, np.integer)) or not 0 <= int(flags) < 2**32:
        raise BufferProblem('ERR_FLAGS', f'flags: {flags!r} is not an unsigned int of planner flags')
    return int(flags)


def _dtype_handle(dtype):
    return _lib.handle(getattr(MPI, DTYPE_TO_MPI[np.dtype(dtype).char]), _lib.Datatype)


def _is_in_place(obj):
    return obj is MPI.IN_PLACE or obj is IN_PLACE


# ---- plans ---------------------------------------------------------------------------------------------------

_live_plans = {}                 # creation number -> Plan, for destruction at exit (before mpi4py's MPI_Finalize)
_plan_numbers = itertools.count()
_live_lock = threading.Lock()


class Plan:
    """A plan made by plan_alltoall, plan_alltoallv, plan_allreduce, plan_transpose or plan_transpose_pieces. It
    holds references to the arrays it was planned with (C keeps their addresses), until destroy(), and, while it is
    started (active), to the arrays it was started on, until a test() or wait() completes the execution."""

    def __init__(self, kind, handle, send, recv, in_place, comm, pieces=None):
        self._handle = handle
        self.kind = kind
        self._send = send          # None when in place
        self._recv = recv
        self.in_place = in_place
        self.comm = comm
        self.pieces = pieces       # a transpose in pieces: the number of pieces; else None
        self._running = None       # while active: the (send, recv) arrays the execution runs on
        self._next_piece = 0       # a plan in pieces: the piece plancoll_start_piece takes next in this execution
        self._number = next(_plan_numbers)
        with _live_lock:
            _live_plans[self._number] = self

    # -- execution --
    def execute(self, send=None, recv=None):
        """Runs the plan (collective). With no arguments on the planned arrays; with (send, recv) on other arrays
        of the same dtype, shape and size (an in-place plan takes IN_PLACE as send; a transpose (in, out), in place
        when they are the same array). Arrays that do not match are plancoll.Error ERR_BUFFER on this rank, as C's
        plancoll_execute_buffers checks only locally: every rank must pass matching arrays. An active plan is
        ERR_ACTIVE (C's refusal)."""
        if send is None and recv is None:
            _check(_lib.execute(self._handle))
            return
        saddr, raddr, _ = self._new_buffers(send, recv, 'execute')
        _check(_lib.execute_buffers(self._handle, saddr, raddr))

    def _new_buffers(self, send, recv, call):
        """The addresses (send, recv) for plancoll_execute_buffers / _start_buffers, and the arrays behind them,
        checked to be like the planned ones; plancoll.Error ERR_BUFFER (local) when they are not."""
        if recv is None:
            raise Error(_config.ERROR_CODES['ERR_BUFFER'], f'{call}(send, recv): recv is missing')
        try:
            rarr = as_array(recv, 'recv', writable=True)
            self._match(rarr, self._recv, 'recv', call)
            if self.kind in ('transpose', 'transpose_pieces'):
                sarr = rarr if send is recv else as_array(send, 'in', writable=False)
                self._match(sarr, self._send if self._send is not None else self._recv, 'in', call)
                saddr = address(sarr)
            elif _is_in_place(send):
                if not self.in_place:
                    raise BufferProblem('ERR_BUFFER', f'{call}: IN_PLACE for a plan made out of place')
                sarr, saddr = None, _lib.IN_PLACE_ADDRESS
            else:
                if self.in_place:
                    raise BufferProblem('ERR_BUFFER', f'{call}: a send array for a plan made in place (pass IN_PLACE)')
                sarr = as_array(send, 'send', writable=False)
                self._match(sarr, self._send, 'send', call)
                saddr = address(sarr)
        except BufferProblem as problem:
            if problem.code_name == 'ERR_ARGUMENT':
                problem.code_name = 'ERR_BUFFER'
            raise _local_error(problem) from None
        return saddr, address(rarr), (sarr, rarr)

    # -- nonblocking execution (MPI's persistent requests: include/plancoll.h, "Nonblocking plans") --
    def start(self, send=None, recv=None):
        """Starts the plan (plancoll_start; with (send, recv), plancoll_start_buffers on other arrays, checked as
        execute's): local, returns at once; the plan is active until test() returns True or wait() returns. Until
        then the arrays must not be touched, and the plan holds references to them. Every rank starts its plans on a
        communicator in the same order. A plan in pieces starts every piece. Starting an active plan is ERR_ACTIVE
        (the plan stays active)."""
        if send is None and recv is None:
            _check(_lib.start(self._handle))
            running = (self._send, self._recv)
        else:
            saddr, raddr, running = self._new_buffers(send, recv, 'start')
            _check(_lib.start_buffers(self._handle, saddr, raddr))
        self._running = running
        self._next_piece = self.pieces or 0

    def test(self):
        """Advances the active plans of the process and returns True when this plan's execution is complete (the
        plan is then inactive; a failed execution raises its plancoll.Error), else False (plancoll_test). Never
        blocks. An inactive plan gives True at once."""
        done = ctypes.c_int(0)
        rc = _lib.test(self._handle, ctypes.byref(done))
        if done.value:
            self._completed()
        _check(rc)
        return bool(done.value)

    def wait(self):
        """Waits until the execution is complete, advancing every active plan meanwhile (plancoll_wait); a failed
        execution raises its plancoll.Error. An inactive plan returns at once. A plan in pieces with pieces not yet
        started is ERR_ARGUMENT and stays active."""
        rc = _lib.wait(self._handle)
        self._completed()
        _check(rc)

    def _completed(self):
        # After a test, wait or waitall: the execution is complete, and the arrays can go, unless it is one in
        # pieces that cannot be complete (pieces not started: C's wait refuses it and the execution goes on).
        if self.pieces is not None and self._running is not None and self._next_piece < self.pieces:
            return
        self._running = None

    @property
    def active(self):
        """Whether the plan is started and not yet completed by test(), wait() or waitall() (as Python saw it)."""
        return self._running is not None

    # -- a transpose in pieces --
    def piece_rows(self, k):
        """(lo, count): this rank's input rows of piece k, lo a local row index (plancoll_transpose_piece_rows).
        Local. ERR_ARGUMENT for a plan not in pieces or k outside 0 .. pieces - 1."""
        lo, count = _lib.ptrdiff_t(), _lib.ptrdiff_t()
        _check(_lib.transpose_piece_rows(self._handle, _c_int_arg(k, 'k'), ctypes.byref(lo), ctypes.byref(count)))
        return int(lo.value), int(count.value)

    def start_piece(self, k):
        """Starts piece k (plancoll_start_piece): its input rows are final, and it travels while the caller
        computes the next. Pieces are started in order 0, 1, ..; piece 0 begins an execution (the plan is active,
        holding its arrays); once all are started, test() and wait() complete it. Local. Refusals (out of order,
        not a plan in pieces: ERR_ARGUMENT; piece 0 during an execution: ERR_ACTIVE) change nothing."""
        _check(_lib.start_piece(self._handle, _c_int_arg(k, 'k')))
        if k == 0:
            self._running = (self._send, self._recv)
        self._next_piece = int(k) + 1

    @property
    def send(self):
        """The send array the plan was made with (the transpose's input), None when in place or destroyed."""
        return self._send

    @property
    def recv(self):
        """The receive array the plan was made with (the transpose's output), None once destroyed."""
        return self._recv

    @staticmethod
    def _match(arr, planned, what, call):
        if arr.dtype != planned.dtype or arr.shape != planned.shape:
            raise BufferProblem('ERR_BUFFER', f'{call}: {what} is {arr.dtype}{list(arr.shape)}, the plan was made '
                                              f'with {planned.dtype}{list(planned.shape)}')

    # -- destruction --
    def destroy(self):
        """Frees the plan (collective, as plancoll_destroy_plan) and drops its arrays. A second call does nothing. An
        active plan is ERR_ACTIVE, as in C: nothing is freed (wait for it first)."""
        if self._handle.value is None:
            return
        _check(_lib.destroy_plan(ctypes.byref(self._handle)))
        self._send = self._recv = None
        with _live_lock:
            _live_plans.pop(self._number, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
        return False

    @property
    def destroyed(self):
        return self._handle.value is None

    # -- inspection --
    @property
    def algorithm(self):
        """The algorithm's name ("alltoall.pairwise"; a transpose "transpose(<inner>)")."""
        name = _lib.plan_algorithm(self._handle)
        if name is None:
            raise Error(_config.ERROR_CODES['ERR_INVALID_PLAN'], 'the plan has been destroyed')
        return name.decode()

    @property
    def spec(self):
        """The algorithm and all its parameters in PLANCOLL_ALGORITHM syntax (plancoll_plan_spec)."""
        size = 256
        while True:
            buf = ctypes.create_string_buffer(size)
            rc = _lib.plan_spec(self._handle, buf, size)
            if rc == _config.ERROR_CODES['ERR_OVERFLOW'] and size < 1 << 20:
                size *= 4
                continue
            _check(rc)
            return buf.value.decode()

    def __str__(self):
        """plancoll_fprint_plan's text (through an open_memstream stream)."""
        ptr, size = ctypes.c_void_p(), ctypes.c_size_t()
        stream = _lib.open_memstream(ctypes.byref(ptr), ctypes.byref(size))
        if not stream:
            raise Error(_config.ERROR_CODES['ERR_NOMEM'], 'open_memstream failed')
        rc = _lib.fprint_plan(self._handle, stream)
        _lib.fclose(stream)              # sets ptr and size
        try:
            text = ctypes.string_at(ptr, size.value).decode(errors='replace') if ptr.value else ''
        finally:
            _lib.free(ptr)
        _check(rc)
        return text

    def __repr__(self):
        if self.destroyed:
            return f'<plancoll.Plan {self.kind}, destroyed>'
        return f'<plancoll.Plan {self.kind} {self.spec}>'


@atexit.register
def _destroy_live_plans():
    # Plans must be destroyed before MPI_Finalize, which mpi4py calls after Python's atexit functions. Every rank
    # destroys its remaining plans in creation order, the order they were made in collectively.
    if not MPI.Is_initialized() or MPI.Is_finalized():
        return
    # Plans still active are completed first (C refuses to destroy an active plan).
    with _live_lock:
        plans = [_live_plans[k] for k in sorted(_live_plans)]
    for plan in plans:
        try:
            if plan.active:
                plan.wait()
        except Error:
            pass
        try:
            plan.destroy()
        except Error:
            pass


def waitall(plans):
    """Waits for every plan of the sequence plans (None entries are skipped, as MPI_REQUEST_NULL), advancing every
    active plan meanwhile (plancoll_waitall). Every entry is checked before any wait: one that is not a Plan is
    ERR_ARGUMENT, a destroyed plan ERR_NULL_PLAN. Then each is completed, and the first failed execution raises its
    plancoll.Error once all are complete."""
    plans = list(plans)
    for i, plan in enumerate(plans):
        if plan is None:
            continue
        if not isinstance(plan, Plan):
            raise Error(_config.ERROR_CODES['ERR_ARGUMENT'], f'waitall: plans[{i}] is a {type(plan).__name__}, '
                                                             'not a plancoll.Plan')
        if plan.destroyed:
            raise Error(_config.ERROR_CODES['ERR_NULL_PLAN'], f'waitall: plans[{i}] has been destroyed')
    handles = (_lib.Plan * max(1, len(plans)))(*[None if p is None else p._handle.value for p in plans])
    rc = _lib.waitall(len(plans), handles)
    for plan in plans:
        if plan is not None:
            plan._completed()
    _check(rc)


def progress():
    """Advances every active plan of the process once and returns how many are not done yet (plancoll_progress):
    never blocks, completes nothing (test or wait still does). For a thread of the program's own that keeps started
    plans moving while the main thread is blocked in another MPI call (MPI must then run at MPI_THREAD_MULTIPLE)."""
    pending = ctypes.c_int(0)
    _check(_lib.progress(ctypes.byref(pending)))
    return pending.value


def _c_int_arg(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise Error(_config.ERROR_CODES['ERR_ARGUMENT'], f'{what}: {value!r} is not an integer')
    if not -2**31 <= int(value) < 2**31:
        raise Error(_config.ERROR_CODES['ERR_ARGUMENT'], f'{what}: {value} does not fit a C int')
    return int(value)


def _make(kind, create, poison, send, recv, in_place, comm, pieces=None):
    """Runs the C plan call create(out_handle) and wraps the plan. poison is None when this rank's Python-side
    checks passed, else the BufferProblem: then C is called through the `poison` call, arguments C refuses, so that
    every rank fails together (the others with ERR_REMOTE), as C's own validation would make them, and this rank
    raises the Python-side problem."""
    handle = _lib.Plan()
    if isinstance(poison, tuple):
        problem, failing_call = poison
        failing_call(ctypes.byref(handle))
        if handle.value is not None:       # cannot happen: C refused the arguments; never leak a plan if it did
            _lib.destroy_plan(ctypes.byref(handle))
        raise _local_error(problem)
    _check(create(ctypes.byref(handle)))
    return Plan(kind, handle, send, recv, in_place, comm, pieces)


def _plan_exchange(kind, send, recv, comm, flags, validate, refuse, create):
    """The preamble plan_alltoall and plan_alltoallv share, then the plan. Checks flags and the receive array, then
    calls validate(send, recv_array, nprocs, in_place), which checks the rest (the send array through _send_array, at
    the point of its own checks where it wants that done) and returns (send_array, args), raising BufferProblem on
    bad input. On success the plan is create(comm_h, flags_value, send_array, recv_array, nprocs, args, out); on a
    BufferProblem, refuse(comm_h, nprocs, out) is the C call with arguments C refuses (see _make)."""
    comm_h = _comm_handle(comm)
    nprocs = _comm_size(comm)
    sarr = rarr = None
    in_place = _is_in_place(send)
    try:
        fl = _flags_value(flags)
        rarr = as_array(recv, 'recv', writable=True)
        sarr, args = validate(send, rarr, nprocs, in_place)
        poison = None
    except BufferProblem as problem:
        poison = (problem, lambda out: refuse(comm_h, nprocs, out))
    if poison is None:
        create_call = lambda out: create(comm_h, fl, sarr, rarr, nprocs, args, out)
    else:
        create_call = None
    return _make(kind, create_call, poison, sarr, rarr, in_place, comm)


def _send_array(send, in_place):
    return None if in_place else as_array(send, 'send', writable=False)


def plan_alltoall(send, recv, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans MPI_Alltoall(send, n, T, recv, n, T, comm) with n = len // size of the communicator (len: the number
    of elements; send and recv must hold a multiple of size elements, and the same number) and T the MPI datatype
    of the dtype. send may be IN_PLACE (recv holds the data to send). Collective."""
    def validate(send, rarr, nprocs, in_place):
        sarr = _send_array(send, in_place)
        if nprocs > 0:
            if rarr.size % nprocs:
                raise BufferProblem('ERR_COUNT', f'recv holds {rarr.size} elements, not a multiple of the '
                                                 f'{nprocs} ranks')
            if sarr is not None and sarr.size != rarr.size:
                raise BufferProblem('ERR_COUNT', f'send holds {sarr.size} elements, recv {rarr.size}')
        return sarr, None

    def refuse(comm_h, nprocs, out):
        byte = _lib.handle(MPI.BYTE, _lib.Datatype)
        return _lib.plan_alltoall(None, -1, byte, None, -1, byte, comm_h, 0, out)

    def create(comm_h, fl, sarr, rarr, nprocs, args, out):
        count = rarr.size // nprocs if nprocs > 0 else 0
        rtype = _dtype_handle(rarr.dtype)
        if sarr is None:
            saddr, scount, stype = _lib.IN_PLACE_ADDRESS, 0, rtype
        else:
            saddr, scount, stype = address(sarr), sarr.size // nprocs if nprocs > 0 else 0, _dtype_handle(sarr.dtype)
        return _lib.plan_alltoall(saddr, scount, stype, address(rarr), count, rtype, comm_h, fl, out)

    return _plan_exchange('alltoall', send, recv, comm, flags, validate, refuse, create)


def _int_array(values):
    return (ctypes.c_int * max(1, len(values)))(*values)


def plan_alltoallv(send, sendcounts, sdispls, recv, recvcounts, rdispls, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans MPI_Alltoallv with counts and displacements in elements of the arrays' dtypes (sequences of size
    ints; copied by C). send may be IN_PLACE (then sendcounts and sdispls are ignored). Every block must lie
    inside its array (checked here: C cannot see a Python buffer's length). Collective."""
    def validate(send, rarr, nprocs, in_place):
        rc_ = check_counts(recvcounts, nprocs, 'recvcounts')
        rd_ = check_counts(rdispls, nprocs, 'rdispls')
        check_span(rarr, rc_, rd_, 'recv')
        sarr = _send_array(send, in_place)
        sc_ = sd_ = None
        if sarr is not None:
            sc_ = check_counts(sendcounts, nprocs, 'sendcounts')
            sd_ = check_counts(sdispls, nprocs, 'sdispls')
            check_span(sarr, sc_, sd_, 'send')
        return sarr, (sc_, sd_, rc_, rd_)

    def refuse(comm_h, nprocs, out):
        bad = _int_array([-1] * max(nprocs, 1))
        byte = _lib.handle(MPI.BYTE, _lib.Datatype)
        return _lib.plan_alltoallv(None, bad, bad, byte, None, bad, bad, byte, comm_h, 0, out)

    def create(comm_h, fl, sarr, rarr, nprocs, args, out):
        sc_, sd_, rc_, rd_ = args
        rtype = _dtype_handle(rarr.dtype)
        rcounts, rdisps = _int_array(rc_), _int_array(rd_)
        if sarr is None:
            saddr, scounts, sdisps, stype = _lib.IN_PLACE_ADDRESS, None, None, rtype
        else:
            saddr, scounts, sdisps, stype = address(sarr), _int_array(sc_), _int_array(sd_), _dtype_handle(sarr.dtype)
        return _lib.plan_alltoallv(saddr, scounts, sdisps, stype, address(rarr), rcounts, rdisps, rtype, comm_h, fl,
                                   out)

    return _plan_exchange('alltoallv', send, recv, comm, flags, validate, refuse, create)


def plan_allreduce(send, recv, op=MPI.SUM, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans MPI_Allreduce(send, recv, n, T, op, comm), n the number of elements of recv (send must hold as
    many, of the same dtype), T the MPI datatype of the dtype, op an mpi4py Op (predefined or MPI.Op.Create'd).
    send may be IN_PLACE. Every rank gets bit-identical results. Collective."""
    comm_h = _comm_handle(comm)
    sarr = rarr = None
    in_place = _is_in_place(send)
    try:
        fl = _flags_value(flags)
        if not isinstance(op, MPI.Op):
            raise BufferProblem('ERR_OP', f'op: {type(op).__name__} is not an mpi4py Op')
        rarr = as_array(recv, 'recv', writable=True)
        if not in_place:
            sarr = as_array(send, 'send', writable=False)
            if sarr.dtype != rarr.dtype:
                raise BufferProblem('ERR_DATATYPE', f'send is {sarr.dtype}, recv {rarr.dtype}')
            if sarr.size != rarr.size:
                raise BufferProblem('ERR_COUNT', f'send holds {sarr.size} elements, recv {rarr.size}')
        if rarr.size >= 2**31:
            raise BufferProblem('ERR_OVERFLOW', f'recv holds {rarr.size} elements, more than an MPI int counts')
        poison = None
    except BufferProblem as problem:
        poison = (problem, lambda out: _lib.plan_allreduce(None, None, -1, _lib.handle(MPI.BYTE, _lib.Datatype),
                                                           _lib.handle(MPI.SUM, _lib.Op), comm_h, 0, out))
    if poison is None:
        dtype_h = _dtype_handle(rarr.dtype)
        op_h = _lib.handle(op, _lib.Op)
        saddr = _lib.IN_PLACE_ADDRESS if in_place else address(sarr)
        create = lambda out: _lib.plan_allreduce(saddr, address(rarr), rarr.size, dtype_h, op_h, comm_h, fl, out)
    else:
        create = None
    return _make('allreduce', create, poison, sarr, rarr, in_place, comm)


def local_size_transposed(n0, n1, comm=MPI.COMM_WORLD):
    """This rank's share of an n0 x n1 transpose over comm (FFTW's block distribution): (alloc, local_n0,
    local_0_start, local_n1, local_1_start), alloc the number of elements the in and out arrays must hold. Local."""
    comm_h = _comm_handle(comm)
    vals = [ctypes.c_ssize_t() for _ in range(4)]
    alloc = _lib.local_size_transposed(n0, n1, comm_h, *(ctypes.byref(v) for v in vals))
    if alloc < 0:
        raise Error(-alloc)
    return (int(alloc),) + tuple(int(v.value) for v in vals)


def plan_transpose(n0, n1, inarr, outarr, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans the transpose of the n0 x n1 matrix distributed by rows in inarr (local_n0 rows of n1 elements) into
    outarr (local_n1 rows of n0), both holding at least local_size_transposed's alloc elements of one dtype (the
    element type). inarr is outarr: in place. Collective."""
    return _plan_transpose(n0, n1, inarr, outarr, comm, flags, None)


def plan_transpose_pieces(n0, n1, inarr, outarr, pieces, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans plan_transpose's transpose (same arrays and rules) to run in `pieces` pieces of input rows
    (plancoll_plan_transpose_pieces): plan.piece_rows(k) gives piece k's rows, plan.start_piece(k) sends them
    while the caller computes the next, plan.wait() completes the transpose. inarr and outarr must be distinct
    (ERR_IN_PLACE); pieces 1 .. MAX_PIECES, the same on every rank. Collective."""
    return _plan_transpose(n0, n1, inarr, outarr, comm, flags, pieces)


def _plan_transpose(n0, n1, inarr, outarr, comm, flags, pieces):
    comm_h = _comm_handle(comm)
    iarr = oarr = None
    try:
        fl = _flags_value(flags)
        for name, v in (('n0', n0), ('n1', n1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise BufferProblem('ERR_ARGUMENT', f'{name}: {v!r} is not an integer')
        if pieces is not None:
            if isinstance(pieces, bool) or not isinstance(pieces, (int, np.integer)):
                raise BufferProblem('ERR_ARGUMENT', f'pieces: {pieces!r} is not an integer')
            if not -2**31 <= int(pieces) < 2**31:
                raise BufferProblem('ERR_COUNT', f'pieces: {pieces} is outside 1 .. {MAX_PIECES}')
        if _is_in_place(inarr) or _is_in_place(outarr):
            raise BufferProblem('ERR_IN_PLACE', 'IN_PLACE given to a transpose: pass the same array as in and out')
        oarr = as_array(outarr, 'out', writable=True)
        iarr = oarr if inarr is outarr else as_array(inarr, 'in', writable=False)
        if iarr.dtype != oarr.dtype:
            raise BufferProblem('ERR_DATATYPE', f'in is {iarr.dtype}, out {oarr.dtype}')
        try:
            alloc = local_size_transposed(n0, n1, comm)[0]
        except Error:
            alloc = None   # sizes or comm C refuses: its plan call fails on every rank before touching memory
        if alloc is not None:
            for name, arr in (('in', iarr), ('out', oarr)):
                if arr.size < alloc:
                    raise BufferProblem('ERR_ARGUMENT', f'{name} holds {arr.size} elements, this rank\'s share '
                                                        f'needs {alloc} (local_size_transposed)')
        poison = None
    except BufferProblem as problem:
        byte = _lib.handle(MPI.BYTE, _lib.Datatype)
        if pieces is None:
            poison = (problem, lambda out: _lib.plan_transpose(-1, -1, byte, None, None, comm_h, 0, out))
        else:
            poison = (problem, lambda out: _lib.plan_transpose_pieces(-1, -1, byte, None, None, comm_h, 0, 1, out))
    if poison is None:
        elem = _dtype_handle(oarr.dtype)
        if pieces is None:
            create = lambda out: _lib.plan_transpose(int(n0), int(n1), elem, address(iarr), address(oarr), comm_h,
                                                     fl, out)
        else:
            create = lambda out: _lib.plan_transpose_pieces(int(n0), int(n1), elem, address(iarr), address(oarr),
                                                            comm_h, fl, int(pieces), out)
        send = None if iarr is oarr else iarr
    else:
        create, send = None, None
    if pieces is None:
        return _make('transpose', create, poison, send, oarr, iarr is oarr, comm)
    return _make('transpose_pieces', create, poison, send, oarr, iarr is oarr, comm, int(pieces))


# ---- node-shared memory ------------------------------------------------------------------------------------

class _SharedBlock:
    """One block of plancoll_malloc, as the base object of the NumPy arrays over it (NumPy keeps it alive through
    every view). Its weakref finalizer gives the block back (plancoll_free) once no array references it; free()
    does it at once."""

    def __init__(self, ptr, shape, dtype, comm):
        self.address = ptr             # None for a request of 0 bytes (C's NULL: nothing to give back)
        self.comm = comm
        self.freed = False
        if ptr is None:
            self._storage = np.empty(1, np.uint8)      # a valid address for NumPy's array of no elements
            data = address(self._storage)
            self.finalizer = None
        else:
            data = ptr
            self.finalizer = weakref.finalize(self, _release_block, ptr)
        self.__array_interface__ = {'shape': shape, 'typestr': dtype.str, 'descr': dtype.descr,
                                    'data': (data, False), 'version': 3}


def _release_block(ptr):
    # Unreferenced (or at interpreter exit, before mpi4py's MPI_Finalize): local, so garbage collection may run it
    # at any time on any rank. After MPI_Finalize, or once the block's communicator is freed, the heap is gone
    # with its memory, and C refuses the pointer (ERR_ARGUMENT): nothing to give back then.
    if MPI.Is_finalized():
        return
    _lib.shared_free(ptr)


def _shared_block_of(arr):
    base = arr
    while base is not None and not isinstance(base, _SharedBlock):
        base = getattr(base, 'base', None)
    return base


def empty(shape, dtype=float, comm=MPI.COMM_WORLD):
    """A NumPy array of the given shape and dtype, not initialised, in node-shared memory from plancoll_malloc on
    comm: plans on comm whose send or receive arrays come from here run single-copy on a node (peers read and write
    them directly). Collective over comm (every rank calls it, in the same order as its other collectives on comm;
    shapes may differ between ranks). The memory belongs to comm: it must not be used once comm is freed (a heap on
    COMM_WORLD lasts until MPI_Finalize). It goes back (plancoll_free, local) when no array references it any more,
    or at free(arr). Errors on every rank when any rank's are bad (the others ERR_REMOTE): a bad shape ERR_COUNT, a
    dtype of Python objects ERR_DATATYPE, not a communicator ERR_COMM (this rank alone, as C), more than the node's
    /dev/shm holds ERR_NOMEM (the size in the detail), more than 2^60 bytes ERR_OVERFLOW."""
    comm_h = _comm_handle(comm)
    try:
        try:
            dt = np.dtype(dtype)
        except TypeError as exc:
            raise BufferProblem('ERR_DATATYPE', f'dtype: {exc}') from None
        if dt.hasobject:
            raise BufferProblem('ERR_DATATYPE', f'dtype {dt} holds Python objects: not in shared memory')
        try:
            shape = tuple(int(operator.index(d)) for d in shape) if np.iterable(shape) else (int(operator.index(shape)),)
        except TypeError:
            raise BufferProblem('ERR_COUNT', f'shape: {shape!r} is not a tuple of integers') from None
        if any(d < 0 for d in shape):
            raise BufferProblem('ERR_COUNT', f'shape: {shape} has a negative dimension')
        nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
        if nbytes >= 2**64:
            raise BufferProblem('ERR_OVERFLOW', f'{nbytes} bytes is more than a size_t holds')
    except BufferProblem as problem:
        # The C call with an argument it refuses (no pointer to receive the block), so that every rank fails.
        _lib.shared_malloc(0, comm_h, None)
        raise _local_error(problem) from None
    ptr = ctypes.c_void_p()
    _check(_lib.shared_malloc(nbytes, comm_h, ctypes.byref(ptr)))
    return np.asarray(_SharedBlock(ptr.value, shape, dt, comm))


def free(arr):
    """Gives the node-shared memory under arr (an array from plancoll.empty) back now, instead of when the last
    reference to it goes (plancoll_free). Local: ranks free independently. arr and every view of it must not be
    used afterwards (the memory is gone, as after C's free). Refused (ERR_ARGUMENT, nothing freed): a block freed
    already, a live plan holding an array on the block (destroy it first), and what C refuses: an array that does
    not start at the block (a view inside it), memory not from plancoll.empty. None does nothing."""
    if arr is None:
        return
    block = _shared_block_of(arr)
    if block is None:
        try:
            addr = address(as_array(arr, 'arr', writable=False))
        except BufferProblem as problem:
            raise _local_error(problem) from None
        _check(_lib.shared_free(addr))       # C's refusal and its detail: not a block of plancoll_malloc
        return                               # (unreachable: C never takes memory it did not give)
    if block.address is None:            # 0 bytes: C's plancoll_free(NULL), a no-op
        return
    if block.freed:
        raise Error(_config.ERROR_CODES['ERR_ARGUMENT'], f'free: the block at {block.address:#x} was freed already')
    addr = address(arr)
    if addr != block.address:
        _check(_lib.shared_free(addr))       # an interior pointer: C's refusal
    with _live_lock:
        plans = list(_live_plans.values())
    for plan in plans:
        held = [a for a in (plan._send, plan._recv) + (plan._running or ()) if isinstance(a, np.ndarray)]
        if any(_shared_block_of(a) is block for a in held):
            raise Error(_config.ERROR_CODES['ERR_ARGUMENT'], f'free: {plan!r} holds an array on this block '
                                                             '(destroy the plan first)')
    _check(_lib.shared_free(block.address))
    block.freed = True
    block.finalizer.detach()


# ---- wisdom ----------------------------------------------------------------------------------------------------

def _path_bytes(path):
    return None if path is None else os.fsencode(path)


def export_wisdom(path, comm=MPI.COMM_WORLD):
    """Writes the merged wisdom of comm's ranks to path (used on rank 0), atomically. Collective."""
    _check(_lib.export_wisdom_to_filename(_path_bytes(path), _comm_handle(comm)))


def import_wisdom(path, comm=MPI.COMM_WORLD):
    """Imports the wisdom file path (read on rank 0) on every rank of comm. Collective."""
    _check(_lib.import_wisdom_from_filename(_path_bytes(path), _comm_handle(comm)))


def forget_wisdom():
    """Forgets what MEASURE and above learned in this process (local)."""
    _check(_lib.forget_wisdom())
