"""Buffers and datatypes: which MPI datatype a NumPy dtype is, and whether an object can be handed to C.

MPI-free (only NumPy): the MPI datatype is named here ("DOUBLE") and looked up in mpi4py by the caller, so this
module's rules can be tested without MPI.
"""
import numpy as np

# dtype.char -> the name of the MPI datatype in mpi4py (MPI.<name>). The C types by their C names, so the MPI type is
# the one of the same C type whatever its width on this platform (numpy's int64 is 'l' on LP64 Linux: MPI_LONG).
# float16 and the datetime, object, string and structured dtypes have no predefined MPI datatype: refused.
DTYPE_TO_MPI = {
    '?': 'C_BOOL',
    'b': 'SIGNED_CHAR',
    'B': 'UNSIGNED_CHAR',
    'h': 'SHORT',
    'H': 'UNSIGNED_SHORT',
    'i': 'INT',
    'I': 'UNSIGNED',
    'l': 'LONG',
    'L': 'UNSIGNED_LONG',
    'q': 'LONG_LONG',
    'Q': 'UNSIGNED_LONG_LONG',
    'f': 'FLOAT',
    'd': 'DOUBLE',
    'g': 'LONG_DOUBLE',
    'F': 'C_FLOAT_COMPLEX',
    'D': 'C_DOUBLE_COMPLEX',
    'G': 'C_LONG_DOUBLE_COMPLEX',
}


class BufferProblem(Exception):
    """A local reason to refuse a buffer: the error code's name (a key of ERROR_CODES) and the detail."""

    def __init__(self, code_name, detail):
        super().__init__(detail)
        self.code_name = code_name
        self.detail = detail


def mpi_type_name(dtype, what):
    """The mpi4py name of the MPI datatype of a NumPy dtype, or BufferProblem('ERR_DATATYPE')."""
    dtype = np.dtype(dtype)
    if dtype.fields is not None or dtype.subdtype is not None:
        raise BufferProblem('ERR_DATATYPE', f'{what}: structured dtype {dtype} has no predefined MPI datatype')
    if not dtype.isnative:
        raise BufferProblem('ERR_DATATYPE', f'{what}: dtype {dtype.str} is not in native byte order')
    name = DTYPE_TO_MPI.get(dtype.char)
    if name is None:
        raise BufferProblem('ERR_DATATYPE', f'{what}: dtype {dtype} has no predefined MPI datatype')
    return name


def as_array(obj, what, writable):
    """A NumPy view (never a copy) of a buffer-protocol object, checked to be C-contiguous and, when plancoll
    writes into it, writable. BufferProblem('ERR_ARGUMENT') otherwise: a copy would leave the caller's object
    unchanged by the collective, and a strided or read-only buffer cannot be handed to C as a pointer."""
    if obj is None:
        raise BufferProblem('ERR_NULL_BUFFER', f'{what} is None')
    if isinstance(obj, np.ndarray):
        arr = obj
    else:
        try:
            view = memoryview(obj)
        except TypeError:
            raise BufferProblem('ERR_ARGUMENT',
                                f'{what}: {type(obj).__name__} does not support the buffer protocol') from None
        if not view.c_contiguous:
            raise BufferProblem('ERR_ARGUMENT', f'{what} is not C-contiguous')
        try:
            arr = np.asarray(view)
        except (ValueError, TypeError) as exc:
            raise BufferProblem('ERR_DATATYPE', f'{what}: format {view.format!r}: {exc}') from None
    if not arr.flags.c_contiguous:
        raise BufferProblem('ERR_ARGUMENT', f'{what} is not C-contiguous (pass numpy.ascontiguousarray of it, '
                                            'and copy the result back if it is a receive buffer)')
    if writable and not arr.flags.writeable:
        raise BufferProblem('ERR_ARGUMENT', f'{what} is read-only, and plancoll writes into it')
    mpi_type_name(arr.dtype, what)
    return arr


def address(arr):
    """The address of an array's first element (an int; NumPy allocates at least one byte for empty arrays)."""
    return arr.__array_interface__['data'][0]


def check_counts(values, nprocs, what):
    """A sequence of nprocs Python ints (counts or displacements) as a list; BufferProblem('ERR_ARGUMENT') if it
    has another length or holds non-integers. Signs are C's to check (PLANCOLL_ERR_COUNT, _DISPL)."""
    if values is None:
        raise BufferProblem('ERR_NULL_BUFFER', f'{what} is None')
    try:
        seq = values.reshape(-1).tolist() if isinstance(values, np.ndarray) else list(values)
    except TypeError:
        raise BufferProblem('ERR_ARGUMENT', f'{what} must be a sequence of integers') from None
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in seq):
        raise BufferProblem('ERR_ARGUMENT', f'{what} must hold integers')
    out = [int(v) for v in seq]
    if len(out) != nprocs:
        raise BufferProblem('ERR_ARGUMENT', f'{what} has {len(out)} entries, the communicator {nprocs} ranks')
    for v in out:
        if not -2**31 <= v < 2**31:
            raise BufferProblem('ERR_OVERFLOW', f'{what}: {v} does not fit an MPI int')
    return out


def check_span(arr, counts, displs, what):
    """Every block [displ, displ + count) with count > 0 and displ >= 0 lies inside arr (in elements): C cannot
    know the length of a Python buffer, so this is the check that keeps the collective inside it."""
    for i, (c, d) in enumerate(zip(counts, displs)):
        if c > 0 and d >= 0 and d + c > arr.size:
            raise BufferProblem('ERR_ARGUMENT', f'{what}: block {i} (displacement {d}, count {c}) ends past the '
                                                f'buffer of {arr.size} elements')
