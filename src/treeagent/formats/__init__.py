"""Format parsers: ``parse(text) -> Tree`` and ``safe_cut(text, pos) -> bool`` each.

``safe_cut`` says whether SplitText may cut a divisible leaf at character ``pos``
(never inside an escape, a surrogate pair or a character reference; A.1).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path

from treeagent.tree import Tree

FORMATS = ("json", "html", "yaml", "javascript")
_EXTENSIONS = {
    ".json": "json", ".geojson": "json", ".jsonl": "json",
    ".html": "html", ".htm": "html", ".xhtml": "html",
    ".yaml": "yaml", ".yml": "yaml",
    ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript", ".json5": "javascript",
}
_MODULES = {"json": "json_format", "html": "html", "yaml": "yaml_format", "javascript": "javascript"}


def _module(fmt: str):
    if fmt not in _MODULES:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return importlib.import_module(f"treeagent.formats.{_MODULES[fmt]}")


def detect(path: str | Path, text: str) -> str:
    """Format from the file extension, else from the content."""
    ext = Path(path).suffix.lower()
    if ext in _EXTENSIONS:
        return _EXTENSIONS[ext]
    head = text.lstrip("\ufeff \t\r\n")[:512].lower()
    if head.startswith(("{", "[")):
        return "json"
    if head.startswith(("<!doctype", "<html", "<")):
        return "html"
    if head.startswith(("const ", "let ", "var ", "export ", "module.exports")):
        return "javascript"
    return "yaml"


class ReadError(Exception):
    """A document that cannot be read; the message names the file (and line:col)."""


def read_document(path: str | Path) -> str:
    """The UTF-8 text of ``path``; a byte-order mark becomes a space so that character
    offsets stay those of the file. Raises ``ReadError('FILE[:LINE:COL]: why')``."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ReadError(f"{path}: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        head = raw[: exc.start]
        line = head.count(b"\n") + 1
        col = exc.start - (head.rfind(b"\n") + 1) + 1
        raise ReadError(f"{path}:{line}:{col}: not valid UTF-8") from None
    return " " + text[1:] if text.startswith("\ufeff") else text


def parse(text: str, fmt: str) -> Tree:
    """Parse ``text`` as ``fmt``; raises ``treeagent.tree.ParseError`` on bad input."""
    return _module(fmt).parse(text)


def safe_cut(fmt: str) -> Callable[[str, int], bool]:
    return _module(fmt).safe_cut
