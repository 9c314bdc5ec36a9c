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


def parse(text: str, fmt: str) -> Tree:
    """Parse ``text`` as ``fmt``; raises ``treeagent.tree.ParseError`` on bad input."""
    return _module(fmt).parse(text)


def safe_cut(fmt: str) -> Callable[[str, int], bool]:
    return _module(fmt).safe_cut
