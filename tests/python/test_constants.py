"""The package's flags and error codes are the C header's and the loaded library's."""
import os
import re

import plancoll
from plancoll import _config, _lib

HEADER = os.path.join(os.environ.get('PLANCOLL_SOURCE_ROOT', os.path.join(os.path.dirname(__file__), '..', '..')),
                      'include', 'plancoll_codes.h')


def test_flags_are_the_headers():
    text = open(HEADER).read()
    for name in ('ESTIMATE', 'MEASURE', 'PATIENT', 'EXHAUSTIVE', 'WISDOM_ONLY', 'NONBLOCKING', 'OVERLAP'):
        expr = re.search(r'#define PLANCOLL_' + name + r'\s+([^/\n]+)', text).group(1)
        assert getattr(plancoll, name) == eval(re.sub(r'(\d+)u', r'\1', expr)), name


def test_error_codes_are_the_librarys():
    # Each code's C message, in the order of the header's enum (its comments are the messages' subjects).
    count = _config.ERROR_CODES['ERR_COUNT_OF_CODES']
    messages = [_lib.strerror(c).decode() for c in range(count + 1)]
    assert len(set(messages[:count])) == count               # every code has its own message
    unknown = messages[count]                                 # the first value past the enum is unknown to C
    assert unknown not in messages[:count]
    assert 'unknown' in unknown.lower() or str(count) in unknown
    assert plancoll.SUCCESS == 0 and plancoll.ERR_THREAD_LEVEL == count - 1
    assert 'in_place' in messages[plancoll.ERR_IN_PLACE].lower().replace(' ', '_').replace('-', '_') or \
        'place' in messages[plancoll.ERR_IN_PLACE].lower()
    assert 'wisdom' in messages[plancoll.ERR_NO_WISDOM].lower()


def test_loaded_library():
    assert plancoll.__version__ == _lib.version(None, None, None).decode()
    assert os.path.exists(_lib.library_path)


def test_max_pieces_is_the_headers():
    text = open(os.path.join(os.path.dirname(HEADER), 'plancoll.h')).read()
    assert plancoll.MAX_PIECES == int(re.search(r'#define PLANCOLL_MAX_PIECES\s+(\d+)', text).group(1))
