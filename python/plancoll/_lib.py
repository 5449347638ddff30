"""Loading libplancoll with ctypes, and the C prototypes.

The library is the one recorded in _config.py at build time (the installed libplancoll of this build, or the build
tree's for the tests), unless PLANCOLL_LIBRARY names another. It must be built on the MPI mpi4py runs on: both
libraries in one process would be two MPIs. MPI handles are passed by value, and their C type differs between
MPIs (Open MPI: pointers; MPICH: ints), so the ctypes type of each handle kind is chosen from mpi4py's size of it.
"""
import ctypes
import ctypes.util
import os

from mpi4py import MPI

from . import _config


def _mpi_flavour_of_mpi4py():
    text = MPI.Get_library_version()
    if 'Open MPI' in text:
        return 'openmpi'
    if 'MPICH' in text:
        return 'mpich'
    return 'unknown'


def _handle_ctype(cls):
    size = MPI._sizeof(cls)
    if size == ctypes.sizeof(ctypes.c_void_p):
        return ctypes.c_void_p
    if size == ctypes.sizeof(ctypes.c_int):
        return ctypes.c_int
    raise ImportError(f'plancoll: MPI handles of {size} bytes ({cls.__name__}) are neither pointers nor ints')


def _load():
    running = _mpi_flavour_of_mpi4py()
    if running != _config.MPI_FLAVOUR:
        raise ImportError(f'plancoll: this plancoll was built with {_config.MPI_FLAVOUR}, but mpi4py runs on '
                          f'{running} ({MPI.Get_library_version().strip().splitlines()[0]}): build plancoll with '
                          f'-Dmpi={running if running != "unknown" else "..."} for this mpi4py')
    path = os.environ.get('PLANCOLL_LIBRARY') or _config.LIBRARY
    try:
        lib = ctypes.CDLL(path)
    except OSError as exc:
        raise ImportError(f'plancoll: cannot load {path}: {exc}') from None
    return lib, path


lib, library_path = _load()

Comm = _handle_ctype(MPI.Comm)
Datatype = _handle_ctype(MPI.Datatype)
Op = _handle_ctype(MPI.Op)

c_int, c_uint, c_char_p, c_void_p, c_size_t = ctypes.c_int, ctypes.c_uint, ctypes.c_char_p, ctypes.c_void_p, ctypes.c_size_t
ptrdiff_t = ctypes.c_ssize_t
Plan = ctypes.c_void_p
IntArray = ctypes.POINTER(ctypes.c_int)


def _proto(name, restype, *argtypes):
    fn = getattr(lib, name)
    fn.restype = restype
    fn.argtypes = list(argtypes)
    return fn


version = _proto('plancoll_version', c_char_p, ctypes.POINTER(c_int), ctypes.POINTER(c_int), ctypes.POINTER(c_int))
strerror = _proto('plancoll_strerror', c_char_p, c_int)
error_detail = _proto('plancoll_error_detail', c_char_p)
plan_alltoall = _proto('plancoll_plan_alltoall', c_int, c_void_p, c_int, Datatype, c_void_p, c_int, Datatype, Comm,
                       c_uint, ctypes.POINTER(Plan))
plan_alltoallv = _proto('plancoll_plan_alltoallv', c_int, c_void_p, IntArray, IntArray, Datatype, c_void_p, IntArray,
                        IntArray, Datatype, Comm, c_uint, ctypes.POINTER(Plan))
plan_allreduce = _proto('plancoll_plan_allreduce', c_int, c_void_p, c_void_p, c_int, Datatype, Op, Comm, c_uint,
                        ctypes.POINTER(Plan))
local_size_transposed = _proto('plancoll_local_size_transposed', ptrdiff_t, ptrdiff_t, ptrdiff_t, Comm,
                               ctypes.POINTER(ptrdiff_t), ctypes.POINTER(ptrdiff_t), ctypes.POINTER(ptrdiff_t),
                               ctypes.POINTER(ptrdiff_t))
plan_transpose = _proto('plancoll_plan_transpose', c_int, ptrdiff_t, ptrdiff_t, Datatype, c_void_p, c_void_p, Comm,
                        c_uint, ctypes.POINTER(Plan))
plan_transpose_pieces = _proto('plancoll_plan_transpose_pieces', c_int, ptrdiff_t, ptrdiff_t, Datatype, c_void_p,
                               c_void_p, Comm, c_uint, c_int, ctypes.POINTER(Plan))
transpose_piece_rows = _proto('plancoll_transpose_piece_rows', c_int, Plan, c_int, ctypes.POINTER(ptrdiff_t),
                              ctypes.POINTER(ptrdiff_t))
start_piece = _proto('plancoll_start_piece', c_int, Plan, c_int)
start = _proto('plancoll_start', c_int, Plan)
start_buffers = _proto('plancoll_start_buffers', c_int, Plan, c_void_p, c_void_p)
test = _proto('plancoll_test', c_int, Plan, ctypes.POINTER(c_int))
wait = _proto('plancoll_wait', c_int, Plan)
progress = _proto('plancoll_progress', c_int, ctypes.POINTER(c_int))
waitall = _proto('plancoll_waitall', c_int, c_int, ctypes.POINTER(Plan))
shared_malloc = _proto('plancoll_malloc', c_int, c_size_t, Comm, ctypes.POINTER(c_void_p))
shared_free = _proto('plancoll_free', c_int, c_void_p)
execute = _proto('plancoll_execute', c_int, Plan)
execute_buffers = _proto('plancoll_execute_buffers', c_int, Plan, c_void_p, c_void_p)
destroy_plan = _proto('plancoll_destroy_plan', c_int, ctypes.POINTER(Plan))
fprint_plan = _proto('plancoll_fprint_plan', c_int, Plan, c_void_p)
plan_algorithm = _proto('plancoll_plan_algorithm', c_char_p, Plan)
plan_spec = _proto('plancoll_plan_spec', c_int, Plan, c_char_p, c_size_t)
export_wisdom_to_filename = _proto('plancoll_export_wisdom_to_filename', c_int, c_char_p, Comm)
import_wisdom_from_filename = _proto('plancoll_import_wisdom_from_filename', c_int, c_char_p, Comm)
forget_wisdom = _proto('plancoll_forget_wisdom', c_int)

# The C library's FILE streams, for plancoll_fprint_plan into memory (open_memstream is POSIX 2008).
libc = ctypes.CDLL(ctypes.util.find_library('c'))
open_memstream = libc.open_memstream
open_memstream.restype = c_void_p
open_memstream.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(c_size_t)]
fclose = libc.fclose
fclose.restype = c_int
fclose.argtypes = [c_void_p]
free = libc.free
free.restype = None
free.argtypes = [c_void_p]


def handle(obj, ctype):
    """An mpi4py object's C handle as the ctypes value of its kind."""
    return ctype(MPI._handleof(obj))


# MPI_IN_PLACE's address in this MPI (Open MPI: (void *)1, MPICH: (void *)-1), from mpi4py.
IN_PLACE_ADDRESS = int(MPI.IN_PLACE)

_vmaj, _vmin, _vpat = c_int(), c_int(), c_int()
_loaded_version = version(ctypes.byref(_vmaj), ctypes.byref(_vmin), ctypes.byref(_vpat)).decode()
if _loaded_version != _config.VERSION:
    raise ImportError(f'plancoll: {library_path} is plancoll {_loaded_version}, this package was generated for '
                      f'{_config.VERSION}: its flags and error codes may not match')
