"""Second readers of the benchmark's formats (paper B.1 "independent validation").

Every example is confirmed by a reader that shares no code with its construction
(:mod:`treeagent.bench.independent`). That module reads the paper's four formats itself;
a plug-in format brings its own second reader as a :class:`SecondReader` record,
declared apart from its construction hooks (:class:`treeagent.bench.model.BenchFormat`)
under the entry-point group ``treeagent.second_reader`` and collected in
:data:`treeagent.registry.SECOND_READERS`.

A format without a second reader is built only when asked (``treeagent bench build
--no-second-reader``, ``build.second_reader: false``); each of its examples then carries
the flag :data:`UNCONFIRMED` and skips the second reader's check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

UNCONFIRMED = "unconfirmed: second reader absent"
"""The flag of every example of a format built without a second reader."""


@dataclass(frozen=True)
class SecondReader:
    """A format's second reader: ``read(context)`` parses a composed context with a
    parser of its own and returns one plain value per unit, in document order (mappings,
    lists and scalars, as ``json.loads`` gives them), which the reference
    specification's scopes select from (``select`` key steps, ``keys`` paths).
    It raises any exception for a context it cannot read (the example is then not
    confirmed, with the exception as the reason)."""

    name: str
    read: Callable[[str], list[Any]]

    @property
    def title(self) -> str:
        from treeagent import registry

        return registry.FORMATS.get(self.name).title


BUILTIN = tuple(SecondReader(name, lambda text: []) for name in (
    "json", "html", "yaml", "javascript"))
"""The formats :mod:`treeagent.bench.independent` reads itself (its records are markers:
their ``read`` is never called)."""


def available(fmt: str) -> bool:
    """Whether ``fmt`` has a second reader (built in or declared by a plug-in)."""
    from treeagent.registry import SECOND_READERS

    return fmt in SECOND_READERS and _record(fmt) is not None


def plugin_units(fmt: str, text: str) -> list[Any] | None:
    """The units of ``text`` as the plug-in second reader of ``fmt`` reads them; None
    when ``fmt`` has none (the caller says so)."""
    record = _record(fmt)
    if record is None or record.name in {b.name for b in BUILTIN}:
        return None
    units = record.read(text)
    if not isinstance(units, list):
        raise TypeError(f"the second reader of {fmt!r} returned {type(units).__name__}, "
                        "not a list of units")
    return units


def _record(fmt: str) -> SecondReader | None:
    from treeagent.registry import SECOND_READERS

    try:
        return SECOND_READERS.get(fmt)
    except ValueError:
        return None


def missing(formats: tuple[str, ...] | list[str]) -> list[str]:
    """The formats of ``formats`` that have no second reader."""
    return [f for f in formats if not available(f)]
