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
import threading

import numpy as np
from mpi4py import MPI

from . import _config
from . import _lib
from ._buffers import BufferProblem, DTYPE_TO_MPI, address, as_array, check_counts, check_span, mpi_type_name

__version__ = _config.VERSION
__all__ = ['Error', 'Plan', 'plan_alltoall', 'plan_alltoallv', 'plan_allreduce', 'plan_transpose',
           'local_size_transposed', 'export_wisdom', 'import_wisdom', 'forget_wisdom', 'mpi_datatype',
           'IN_PLACE', 'ESTIMATE', 'MEASURE', 'PATIENT', 'EXHAUSTIVE', 'WISDOM_ONLY']

# Planner flags and error codes, with the C header's values (generated from it at build time).
ESTIMATE = _config.FLAGS['ESTIMATE']
MEASURE = _config.FLAGS['MEASURE']
PATIENT = _config.FLAGS['PATIENT']
EXHAUSTIVE = _config.FLAGS['EXHAUSTIVE']
WISDOM_ONLY = _config.FLAGS['WISDOM_ONLY']
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
    """A plan made by plan_alltoall, plan_alltoallv, plan_allreduce or plan_transpose. It holds references to the
    arrays it was planned with (C keeps their addresses), until destroy()."""

    def __init__(self, kind, handle, send, recv, in_place, comm):
        self._handle = handle
        self.kind = kind
        self._send = send          # None when in place
        self._recv = recv
        self.in_place = in_place
        self.comm = comm
        self._number = next(_plan_numbers)
        with _live_lock:
            _live_plans[self._number] = self

    # -- execution --
    def execute(self, send=None, recv=None):
        """Runs the plan (collective). With no arguments on the planned arrays; with (send, recv) on other arrays
        of the same dtype, shape and size (an in-place plan takes IN_PLACE as send; a transpose (in, out), in place
        when they are the same array). Arrays that do not match are plancoll.Error ERR_BUFFER on this rank, as C's
        plancoll_execute_buffers checks only locally: every rank must pass matching arrays."""
        if send is None and recv is None:
            _check(_lib.execute(self._handle))
            return
        if recv is None:
            raise Error(_config.ERROR_CODES['ERR_BUFFER'], 'execute(send, recv): recv is missing')
        try:
            rarr = as_array(recv, 'recv', writable=True)
            self._match(rarr, self._recv, 'recv')
            if self.kind == 'transpose':
                sarr = rarr if send is recv else as_array(send, 'in', writable=False)
                self._match(sarr, self._send if self._send is not None else self._recv, 'in')
                saddr = address(sarr)
            elif _is_in_place(send):
                if not self.in_place:
                    raise BufferProblem('ERR_BUFFER', 'execute: IN_PLACE for a plan made out of place')
                saddr = _lib.IN_PLACE_ADDRESS
            else:
                if self.in_place:
                    raise BufferProblem('ERR_BUFFER', 'execute: a send array for a plan made in place (pass IN_PLACE)')
                sarr = as_array(send, 'send', writable=False)
                self._match(sarr, self._send, 'send')
                saddr = address(sarr)
        except BufferProblem as problem:
            if problem.code_name == 'ERR_ARGUMENT':
                problem.code_name = 'ERR_BUFFER'
            raise _local_error(problem) from None
        _check(_lib.execute_buffers(self._handle, saddr, address(rarr)))

    @property
    def send(self):
        """The send array the plan was made with (the transpose's input), None when in place or destroyed."""
        return self._send

    @property
    def recv(self):
        """The receive array the plan was made with (the transpose's output), None once destroyed."""
        return self._recv

    @staticmethod
    def _match(arr, planned, what):
        if arr.dtype != planned.dtype or arr.shape != planned.shape:
            raise BufferProblem('ERR_BUFFER', f'execute: {what} is {arr.dtype}{list(arr.shape)}, the plan was made '
                                              f'with {planned.dtype}{list(planned.shape)}')

    # -- destruction --
    def destroy(self):
        """Frees the plan (collective, as plancoll_destroy_plan) and drops its arrays. A second call does nothing."""
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
    with _live_lock:
        plans = [_live_plans[k] for k in sorted(_live_plans)]
    for plan in plans:
        try:
            plan.destroy()
        except Error:
            pass


def _make(kind, create, poison, send, recv, in_place, comm):
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
    return Plan(kind, handle, send, recv, in_place, comm)


def plan_alltoall(send, recv, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans MPI_Alltoall(send, n, T, recv, n, T, comm) with n = len // size of the communicator (len: the number
    of elements; send and recv must hold a multiple of size elements, and the same number) and T the MPI datatype
    of the dtype. send may be IN_PLACE (recv holds the data to send). Collective."""
    comm_h = _comm_handle(comm)
    nprocs = _comm_size(comm)
    sarr = rarr = None
    in_place = _is_in_place(send)
    try:
        fl = _flags_value(flags)
        rarr = as_array(recv, 'recv', writable=True)
        if not in_place:
            sarr = as_array(send, 'send', writable=False)
        if nprocs > 0:
            if rarr.size % nprocs:
                raise BufferProblem('ERR_COUNT', f'recv holds {rarr.size} elements, not a multiple of the '
                                                 f'{nprocs} ranks')
            if sarr is not None and sarr.size != rarr.size:
                raise BufferProblem('ERR_COUNT', f'send holds {sarr.size} elements, recv {rarr.size}')
        poison = None
    except BufferProblem as problem:
        poison = (problem, lambda out: _lib.plan_alltoall(None, -1, _lib.handle(MPI.BYTE, _lib.Datatype), None, -1,
                                                          _lib.handle(MPI.BYTE, _lib.Datatype), comm_h, 0, out))
    if poison is None:
        count = rarr.size // nprocs if nprocs > 0 else 0
        rtype = _dtype_handle(rarr.dtype)
        if in_place:
            saddr, scount, stype = _lib.IN_PLACE_ADDRESS, 0, rtype
        else:
            saddr, scount, stype = address(sarr), sarr.size // nprocs if nprocs > 0 else 0, _dtype_handle(sarr.dtype)
        create = lambda out: _lib.plan_alltoall(saddr, scount, stype, address(rarr), count, rtype, comm_h, fl, out)
    else:
        create = None
    return _make('alltoall', create, poison, sarr, rarr, in_place, comm)


def _int_array(values):
    return (ctypes.c_int * max(1, len(values)))(*values)


def plan_alltoallv(send, sendcounts, sdispls, recv, recvcounts, rdispls, comm=MPI.COMM_WORLD, flags=ESTIMATE):
    """Plans MPI_Alltoallv with counts and displacements in elements of the arrays' dtypes (sequences of size
    ints; copied by C). send may be IN_PLACE (then sendcounts and sdispls are ignored). Every block must lie
    inside its array (checked here: C cannot see a Python buffer's length). Collective."""
    comm_h = _comm_handle(comm)
    nprocs = _comm_size(comm)
    sarr = rarr = None
    in_place = _is_in_place(send)
    try:
        fl = _flags_value(flags)
        rarr = as_array(recv, 'recv', writable=True)
        rc_ = check_counts(recvcounts, nprocs, 'recvcounts')
        rd_ = check_counts(rdispls, nprocs, 'rdispls')
        check_span(rarr, rc_, rd_, 'recv')
        if not in_place:
            sarr = as_array(send, 'send', writable=False)
            sc_ = check_counts(sendcounts, nprocs, 'sendcounts')
            sd_ = check_counts(sdispls, nprocs, 'sdispls')
            check_span(sarr, sc_, sd_, 'send')
        poison = None
    except BufferProblem as problem:
        bad = _int_array([-1] * max(nprocs, 1))
        byte = _lib.handle(MPI.BYTE, _lib.Datatype)
        poison = (problem, lambda out: _lib.plan_alltoallv(None, bad, bad, byte, None, bad, bad, byte, comm_h, 0, out))
    if poison is None:
        rtype = _dtype_handle(rarr.dtype)
        rcounts, rdisps = _int_array(rc_), _int_array(rd_)
        if in_place:
            saddr, scounts, sdisps, stype = _lib.IN_PLACE_ADDRESS, None, None, rtype
        else:
            saddr, scounts, sdisps, stype = address(sarr), _int_array(sc_), _int_array(sd_), _dtype_handle(sarr.dtype)
        create = lambda out: _lib.plan_alltoallv(saddr, scounts, sdisps, stype, address(rarr), rcounts, rdisps,
                                                 rtype, comm_h, fl, out)
    else:
        create = None
    return _make('alltoallv', create, poison, sarr, rarr, in_place, comm)


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
    comm_h = _comm_handle(comm)
    iarr = oarr = None
    try:
        fl = _flags_value(flags)
        for name, v in (('n0', n0), ('n1', n1)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise BufferProblem('ERR_ARGUMENT', f'{name}: {v!r} is not an integer')
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
        poison = (problem, lambda out: _lib.plan_transpose(-1, -1, _lib.handle(MPI.BYTE, _lib.Datatype), None, None,
                                                           comm_h, 0, out))
    if poison is None:
        elem = _dtype_handle(oarr.dtype)
        create = lambda out: _lib.plan_transpose(int(n0), int(n1), elem, address(iarr), address(oarr), comm_h, fl,
                                                 out)
        send = None if iarr is oarr else iarr
    else:
        create, send = None, None
    return _make('transpose', create, poison, send, oarr, iarr is oarr, comm)


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
