"""Format parsers: ``parse(text) -> Tree`` and ``safe_cut(text, pos) -> bool`` each.

``safe_cut`` says whether SplitText may cut a divisible leaf at character ``pos``
(never inside an escape, a surrogate pair or a character reference; A.1).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from treeagent import registry
from treeagent.algorithm.tree import Tree

FORMATS = registry.FORMATS.names
"""Names of the registered formats (a live view of :data:`treeagent.registry.FORMATS`)."""


@dataclass(frozen=True)
class Format:
    """One input format, declared in its module (``FORMAT = Format(...)``) and registered
    in :data:`treeagent.registry.FORMATS` (a plug-in: entry point ``treeagent.formats``).

    ``parse(text) -> Tree`` raises :class:`treeagent.algorithm.tree.ParseError` on bad input;
    ``safe_cut(text, pos)`` says whether SplitText may cut a divisible leaf at ``pos``;
    ``extensions`` (lower case, with the dot) select it in :func:`detect`, else
    ``starts``: lower-case beginnings of the content (after a BOM and blank space; the
    longest that matches wins), else ``sniff(text) -> bool``, a content test
    (:mod:`treeagent.formats.sniff`; the first format in registry order that claims the
    text wins). A text no format claims is refused, never guessed."""

    name: str
    title: str
    extensions: tuple[str, ...]
    parse: Callable[[str], Tree]
    safe_cut: Callable[[str, int], bool]
    starts: tuple[str, ...] = ()
    sniff: Callable[[str], bool] | None = None


def _module(fmt: str) -> Format:
    return registry.FORMATS.get(fmt)


def detect(path: str | Path, text: str) -> str:
    """Format from the file extension, else from the content (:class:`Format`); raises
    ``ValueError("cannot tell the format of FILE; pass --format")`` when nothing claims
    it (plain text is no format: it is refused, not read as YAML)."""
    ext = Path(path).suffix.lower()
    for record in registry.FORMATS:
        if ext in record.extensions:
            return record.name
    head = text.lstrip("\ufeff \t\r\n")[:512].lower()
    best: tuple[int, str] | None = None
    for record in registry.FORMATS:
        for start in record.starts:
            if head.startswith(start) and (best is None or len(start) > best[0]):
                best = (len(start), record.name)
    if best is not None:
        return best[1]
    for record in registry.FORMATS:
        if record.sniff is not None and record.sniff(text):
            return record.name
    raise ValueError(f"cannot tell the format of {str(path) or 'the text'}; pass --format")


#: Default cap on an input document's size (``sections --max-input-mb``).
MAX_INPUT_BYTES = 256 * 2**20


class ReadError(Exception):
    """A document that cannot be read; the message names the file (and line:col)."""


def read_bytes(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``; a FIFO, device or folder is
    refused without reading (it may never end: ``/dev/zero``, a pipe with no writer)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO opens without a writer
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > max_bytes:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ReadError(f"{path}: not a regular file (a folder, pipe or device)")
        raise ReadError(f"{path}: {info.st_size} bytes, over the input cap of "
                        f"{max_bytes} bytes")
    with os.fdopen(fd, "rb") as f:
        try:
            raw = f.read(max_bytes + 1)
        except OSError as exc:
            raise ReadError(f"{path}: {exc.strerror or exc}") from None
    if len(raw) > max_bytes:  # grew while being read
        raise ReadError(f"{path}: over the input cap of {max_bytes} bytes")
    return raw


def read_document(path: str | Path, max_bytes: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of ``path`` (:func:`read_bytes`); a byte-order mark stays U+FEFF
    (every format's parser skips it as the encoding's mark, and character offsets stay
    those of the file). Raises
    ``ReadError('FILE[:LINE:COL]: why')``."""
    raw = read_bytes(path, max_bytes)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[: exc.start]
        line = head.count(b"\n") + 1
        col = exc.start - (head.rfind(b"\n") + 1) + 1
        raise ReadError(f"{path}:{line}:{col}: not valid UTF-8") from None
    return text


def parse(text: str, fmt: str) -> Tree:
    """Parse ``text`` as ``fmt``; raises ``treeagent.algorithm.tree.ParseError`` on bad input."""
    return _module(fmt).parse(text)


def safe_cut(fmt: str) -> Callable[[str, int], bool]:
    return _module(fmt).safe_cut
