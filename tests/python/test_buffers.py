"""The dtype -> MPI datatype table and the buffer rules (python/plancoll/_buffers.py): local, no plan made."""
import array

import numpy as np
import pytest
from mpi4py import MPI

import plancoll
from plancoll import _buffers


@pytest.mark.parametrize('dtype,mpi_name', [
    (np.float64, 'DOUBLE'), (np.float32, 'FLOAT'), (np.complex128, 'C_DOUBLE_COMPLEX'),
    (np.complex64, 'C_FLOAT_COMPLEX'), (np.int32, 'INT'), (np.int64, 'LONG'), (np.uint32, 'UNSIGNED'),
    (np.int8, 'SIGNED_CHAR'), (np.uint8, 'UNSIGNED_CHAR'), (np.int16, 'SHORT'), (np.bool_, 'C_BOOL'),
    (np.longdouble, 'LONG_DOUBLE'), (np.longlong, 'LONG_LONG'), (np.ulonglong, 'UNSIGNED_LONG_LONG'),
])
def test_named_dtypes(dtype, mpi_name):
    assert _buffers.mpi_type_name(dtype, 'x') == mpi_name
    assert plancoll.mpi_datatype(dtype) == getattr(MPI, mpi_name)


@pytest.mark.parametrize('char', sorted(_buffers.DTYPE_TO_MPI))
def test_every_mapping_has_the_dtype_size(char):
    # A wrong row (a type of another width) would move the wrong number of bytes: MPI's size must be numpy's.
    datatype = getattr(MPI, _buffers.DTYPE_TO_MPI[char])
    assert datatype.Get_size() == np.dtype(char).itemsize


@pytest.mark.parametrize('dtype', [np.float16, np.dtype('>f8') if np.little_endian else np.dtype('<f8'),
                                   np.dtype([('a', 'i4'), ('b', 'f8')]), np.dtype('O'), np.dtype('U3'),
                                   np.dtype('M8[s]')])
def test_dtypes_without_mpi_type_refused(dtype):
    with pytest.raises(plancoll.Error) as e:
        plancoll.mpi_datatype(dtype)
    assert e.value.code == plancoll.ERR_DATATYPE
    assert str(np.dtype(dtype)) in e.value.detail or np.dtype(dtype).str in e.value.detail


def test_buffer_protocol_objects_are_views():
    a = array.array('d', [1.0, 2.0, 3.0])
    v = _buffers.as_array(a, 'a', writable=True)
    assert v.dtype == np.float64 and v.size == 3
    v[1] = 7.0
    assert a[1] == 7.0                                   # a view, not a copy
    b = bytearray(8)
    vb = _buffers.as_array(b, 'b', writable=True)
    assert vb.dtype == np.uint8 and vb.size == 8
    vb[3] = 5
    assert b[3] == 5
    assert _buffers.address(vb) == _buffers.address(np.frombuffer(b, dtype=np.uint8))


def test_non_contiguous_and_read_only_refused():
    x = np.arange(10.0)
    for obj in (x[::2], memoryview(x)[::2], np.asfortranarray(np.ones((3, 4)))):
        with pytest.raises(_buffers.BufferProblem) as e:
            _buffers.as_array(obj, 'recv', writable=False)
        assert e.value.code_name == 'ERR_ARGUMENT' and 'contiguous' in e.value.detail
    ro = np.arange(4.0)
    ro.flags.writeable = False
    with pytest.raises(_buffers.BufferProblem) as e:
        _buffers.as_array(ro, 'recv', writable=True)
    assert e.value.code_name == 'ERR_ARGUMENT' and 'read-only' in e.value.detail
    with pytest.raises(_buffers.BufferProblem):
        _buffers.as_array(b'abcd', 'recv', writable=True)
    assert _buffers.as_array(ro, 'send', writable=False) is ro          # sending from read-only memory is fine
    assert _buffers.as_array(b'abcd', 'send', writable=False).size == 4
    with pytest.raises(_buffers.BufferProblem) as e:
        _buffers.as_array(3.5, 'send', writable=False)
    assert e.value.code_name == 'ERR_ARGUMENT'


def test_counts():
    assert _buffers.check_counts([1, 2, np.int64(3)], 3, 'c') == [1, 2, 3]
    assert _buffers.check_counts(np.array([4, 5], dtype=np.int32), 2, 'c') == [4, 5]
    for bad, code in (([1, 2], 'ERR_ARGUMENT'), ([1.0, 2, 3], 'ERR_ARGUMENT'), ([True, 1, 1], 'ERR_ARGUMENT'),
                      (None, 'ERR_NULL_BUFFER'), ([2**31, 0, 0], 'ERR_OVERFLOW')):
        with pytest.raises(_buffers.BufferProblem) as e:
            _buffers.check_counts(bad, 3, 'c')
        assert e.value.code_name == code
    _buffers.check_span(np.zeros(6), [2, 0, 4], [0, 100, 2], 'r')          # a zero count may point anywhere
    with pytest.raises(_buffers.BufferProblem):
        _buffers.check_span(np.zeros(6), [2, 1], [0, 6], 'r')
