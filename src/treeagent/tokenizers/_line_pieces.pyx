# cython: language_level=3, boundscheck=False, wraparound=False
"""``pieces.PieceSlots`` with its loop compiled: the line pieces of
``pieces._iter_line_pieces`` cut and given their slots in compiled code.

The same cuts as the pure-Python generator, piece for piece: a line break followed by
``[ \\t]*`` and an ASCII character in ``[!-.0-~]`` cuts after the break and, where the
indentation is two characters or more, before its last character. Each piece gets the
slot of the first equal piece, and a batch of new pieces goes to ``flush`` once it
holds ``limit`` characters, exactly as in ``pieces.PieceSlots``. Only the loop is
compiled: slicing, hashing and the dict are CPython's.
"""

from cpython cimport array
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem
from cpython.object cimport PyObject


cdef extern from "Python.h":
    Py_ssize_t PyUnicode_FindChar(object text, Py_UCS4 ch, Py_ssize_t start,
                                  Py_ssize_t end, int direction) except -2
    Py_UCS4 PyUnicode_READ_CHAR(object text, Py_ssize_t index)


cdef inline bint _starts_line(Py_UCS4 ch) noexcept:
    return (0x21 <= ch <= 0x2E) or (0x30 <= ch <= 0x7E)


cdef inline int _append(array.array values, long long value) except -1:
    array.resize_smart(values, len(values) + 1)
    values.data.as_longlongs[len(values) - 1] = value
    return 0


cdef class LineSlots:
    """Slots of pieces in text order (``pieces.PieceSlots``, compiled)."""

    cdef dict slot
    cdef array.array order
    cdef array.array lengths
    cdef list batch
    cdef Py_ssize_t size
    cdef Py_ssize_t limit
    cdef object flush

    def __init__(self, dict slot, array.array order, array.array lengths,
                 Py_ssize_t limit, flush):
        self.slot = slot
        self.order = order
        self.lengths = lengths
        self.batch = []
        self.size = 0
        self.limit = limit
        self.flush = flush

    cpdef add(self, str piece):
        """Slot ``piece``: its slot to ``order``; a new piece to ``lengths`` and the batch,
        which goes to ``flush`` once it holds ``limit`` characters."""
        cdef PyObject *found = PyDict_GetItem(self.slot, piece)
        cdef long long k
        if found is not NULL:
            _append(self.order, <long long>(<object>found))
            return
        k = len(self.slot)
        PyDict_SetItem(self.slot, piece, k)
        _append(self.lengths, len(piece))
        _append(self.order, k)
        self.batch.append(piece)
        self.size += len(piece)
        if self.size >= self.limit:
            self.flush(self.batch)
            self.batch = []
            self.size = 0

    def extend(self, pieces):
        for piece in pieces:
            self.add(piece)

    cdef int _cut(self, str text, Py_ssize_t a, Py_ssize_t b, Py_ssize_t cap,
                  object split) except -1:
        if b - a <= cap:
            self.add(text[a:b])
        else:
            for part in split(text[a:b]):
                self.add(part)
        return 0

    def lines(self, str text, Py_ssize_t start, Py_ssize_t end, Py_ssize_t cap, split):
        """Slot the line pieces of ``text[start:end]`` (a text of its own: no cut looks
        past ``end``); a piece longer than ``cap`` is cut by ``split`` first."""
        cdef Py_ssize_t a = start, scan = start, i, j, b, c
        while True:
            i = PyUnicode_FindChar(text, 10, scan, end, 1)
            if i < 0:
                break
            j = i + 1
            while j < end and (PyUnicode_READ_CHAR(text, j) == 32
                               or PyUnicode_READ_CHAR(text, j) == 9):
                j += 1
            scan = j
            if j >= end or not _starts_line(PyUnicode_READ_CHAR(text, j)):
                continue
            b = i + 1
            c = j - 1
            if b > a:
                self._cut(text, a, b, cap, split)
            if c > b:
                self._cut(text, b, c, cap, split)
                a = c
            else:
                a = b
        if a < end:
            self._cut(text, a, end, cap, split)

    def close(self):
        """The last batch to ``flush``."""
        if self.batch:
            self.flush(self.batch)
            self.batch = []
            self.size = 0
