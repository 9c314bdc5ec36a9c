"""The named things of treeagent, each declared once and collected here (issue 19).

Five registries: :data:`FORMATS` (input formats), :data:`AGENTS` (memory agents),
:data:`ENGINES` (inference engines), :data:`METHODS` (the four reading modes) and
:data:`TASKS` (the eight benchmark tasks). A thing is one record, declared in the module
that implements it; the record has at least ``name`` and ``title`` (the paper's
spelling, used by reports):

* a format, :class:`treeagent.formats.Format`, in ``treeagent/formats/<name>.py``;
* an agent, :class:`treeagent.agents.common.Agent`, in ``treeagent/agents/<name>.py``;
* an engine, :class:`treeagent.llm.base.EngineSpec`, in ``treeagent/llm/__init__.py``;
* the methods, :class:`Named` records, in ``treeagent/agents/observation.py``;
* the tasks, :class:`treeagent.scoring.Task`, in ``treeagent/scoring.py``.

Config validation, the command line's choices, the reports' titles and row order and the
request limits all read these registries; nothing else lists the names.

A registry is filled when it is first read: the built-in records (``module:attribute``
targets, below) in their listed order, which is the reports' order, then the records of
installed plug-ins, read once through the Python entry points ``treeagent.formats``,
``treeagent.agents`` and ``treeagent.engines``. An entry point names a record (its name
must be the record's) or a sequence of records, or a module that calls
:meth:`Registry.register` when imported. A plug-in that fails to load is skipped with a
warning. Code may also register a record at run time (``AGENTS.register(agent)``).

Reading is lazy so that ``import treeagent.registry`` stays cheap (the command line
builds its parser on every call): :attr:`Registry.names` and :attr:`Registry.titles`
are live views that read the registry only when used, e.g. as ``argparse`` choices
(:func:`lazy_choices`) that are looked at only when a command's help is shown or its
arguments are checked.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Generic, Protocol, TypeVar


class Record(Protocol):
    """What every registered record has."""

    name: str
    title: str


R = TypeVar("R", bound=Record)


@dataclass(frozen=True)
class Named:
    """A record that is only a name and its title (the reading modes)."""

    name: str
    title: str


class Names(Sequence[str]):
    """The names of a registry, in order, read afresh on every use (a live view); with
    ``builtin``, only those of its built-in records."""

    def __init__(self, registry: Registry[Any], builtin: bool = False) -> None:
        self._registry = registry
        self._builtin = builtin

    def _all(self) -> tuple[str, ...]:
        if self._builtin:
            return tuple(r.name for r in self._registry.builtin())
        return tuple(self._registry._all())

    def __getitem__(self, index: Any) -> Any:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __str__(self) -> str:
        return ", ".join(self._all())

    def __repr__(self) -> str:
        return f"<{self._registry.kind} names {self._all()!r}>"


class Titles(Mapping[str, str]):
    """Name -> title of a registry's records, read afresh on every use (a live view)."""

    def __init__(self, registry: Registry[Any]) -> None:
        self._registry = registry

    def __getitem__(self, name: str) -> str:
        return self._registry._all()[name].title

    def __iter__(self) -> Iterator[str]:
        return iter(self._registry._all())

    def __len__(self) -> int:
        return len(self._registry._all())

    def __repr__(self) -> str:
        return f"<{self._registry.kind} titles {dict(self)!r}>"


class Registry(Generic[R]):
    """Records of one kind by name: built-ins, then plug-ins and run-time registrations.

    ``builtins`` are ``"module:attribute"`` targets, each a record or a sequence of
    records, imported when the registry is first read; ``group`` is the entry-point
    group plug-ins use (None: no plug-ins)."""

    def __init__(self, kind: str, builtins: Iterable[str], group: str | None = None) -> None:
        self.kind = kind
        self.group = group
        self._builtins = tuple(builtins)
        self._records: dict[str, R] = {}
        self._builtin: tuple[str, ...] = ()
        self._state = "empty"  # -> "loading" -> "loaded"
        self.names: Names = Names(self)
        self.builtin_names: Names = Names(self, builtin=True)
        self.titles: Titles = Titles(self)

    # ------------------------------------------------------------------ reading

    def _all(self) -> dict[str, R]:
        if self._state != "loaded":
            self._load()
        return self._records

    def get(self, name: str) -> R:
        """The record called ``name``; ``ValueError`` naming the choices if none is."""
        records = self._all()
        if name not in records:
            raise ValueError(f"unknown {self.kind} {name!r} (choose from "
                             f"{', '.join(records)})")
        return records[name]

    def __iter__(self) -> Iterator[R]:
        return iter(tuple(self._all().values()))

    def builtin(self) -> list[R]:
        """The records treeagent itself declares (its ``builtins``), in order: the
        paper's formats, agents, methods and tasks (presets list these, not plug-ins)."""
        records = self._all()
        return [records[name] for name in self._builtin if name in records]

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, name: object) -> bool:
        return name in self._all()

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}s>"

    # ------------------------------------------------------------------ writing

    def register(self, record: R) -> R:
        """Add ``record`` (returned, so this also works as ``X = register(X(...))``).
        A name taken by another record is refused with ``ValueError``."""
        name = getattr(record, "name", None)
        if not isinstance(name, str) or not name or not isinstance(
                getattr(record, "title", None), str):
            raise TypeError(f"a {self.kind} record needs a non-empty str name and a str "
                            f"title, got {record!r}")
        if self._state == "empty":
            self._load()
        old = self._records.get(name)
        if old is not None and old is not record:
            raise ValueError(f"{self.kind} {name!r} is already registered ({old!r})")
        self._records[name] = record
        return record

    def unregister(self, name: str) -> R:
        """Remove and return the record called ``name`` (tests; replacing a built-in)."""
        self._all()
        return self._records.pop(name)

    def reload_plugins(self) -> None:
        """Read the entry points again (after installing a plug-in in this process)."""
        self._all()
        self._load_plugins()

    # ------------------------------------------------------------------ loading

    def _load(self) -> None:
        if self._state == "loading":
            raise RuntimeError(f"the {self.kind} registry was read while its built-ins "
                               "were being imported (a read at module level?)")
        self._state = "loading"
        try:
            for target in self._builtins:
                for record in _records_of(_resolve(target)):
                    self._add(record, target)
            self._builtin = tuple(self._records)
            self._load_plugins()
        except BaseException:
            self._records, self._state = {}, "empty"
            raise
        self._state = "loaded"

    def _add(self, record: R, origin: str) -> None:
        old = self._records.get(record.name)
        if old is not None and old is not record:
            raise ValueError(f"{self.kind} {record.name!r} ({origin}) is already "
                             f"registered ({old!r})")
        self._records[record.name] = record

    def _load_plugins(self) -> None:
        if self.group is None:
            return
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            try:
                loaded = ep.load()
                records = _records_of(loaded)
                if _is_record(loaded) and loaded.name != ep.name:
                    raise ValueError(f"the entry point is named {ep.name!r} but its "
                                     f"record {loaded.name!r}")
                for record in records:
                    self._add(record, f"entry point {ep.value}")
            except Exception as exc:  # a broken plug-in must not break the rest
                warnings.warn(f"treeagent: {self.kind} plug-in {ep.name!r} ({ep.value}) "
                              f"not loaded: {exc}", RuntimeWarning, stacklevel=4)


def _resolve(target: str) -> Any:
    module, _, attribute = target.partition(":")
    value: Any = importlib.import_module(module)
    for part in filter(None, attribute.split(".")):
        value = getattr(value, part)
    return value


def _is_record(value: Any) -> bool:
    return isinstance(getattr(value, "name", None), str) and isinstance(
        getattr(value, "title", None), str)


def _records_of(value: Any) -> list[Any]:
    """A record, a sequence of records, or a module (which registered its own)."""
    if _is_record(value):
        return [value]
    if isinstance(value, list | tuple) and all(_is_record(v) for v in value):
        return list(value)
    if isinstance(value, ModuleType):
        return []
    raise TypeError(f"expected a record (name, title), a sequence of records or a "
                    f"module, got {value!r}")


FORMATS: Registry[Any] = Registry("format", (
    "treeagent.formats.json_format:FORMAT",
    "treeagent.formats.html:FORMAT",
    "treeagent.formats.yaml_format:FORMAT",
    "treeagent.formats.javascript:FORMAT",
), group="treeagent.formats")
"""Input formats (:class:`treeagent.formats.Format`); the paper's datasets first."""

AGENTS: Registry[Any] = Registry("agent", (
    "treeagent.agents.memagent:AGENT",
    "treeagent.agents.infmem:AGENT",
    "treeagent.agents.memreread:AGENT",
    "treeagent.agents.rememr1:AGENT",
), group="treeagent.agents")
"""Memory agents (:class:`treeagent.agents.common.Agent`), in Table 1's order."""

ENGINES: Registry[Any] = Registry("engine", ("treeagent.llm:ENGINE_SPECS",),
                                  group="treeagent.engines")
"""Inference engines (:class:`treeagent.llm.base.EngineSpec`)."""

METHODS: Registry[Named] = Registry("method", ("treeagent.agents.observation:METHOD_RECORDS",))
"""The reading modes of Table 1's rows (Flat, Tree, Tree+Path, TreeAgent); fixed."""

TASKS: Registry[Any] = Registry("task", ("treeagent.scoring:TASK_RECORDS",))
"""The eight tasks of paper 4.1 (:class:`treeagent.scoring.Task`); fixed."""


def register_format(record: R) -> R:
    return FORMATS.register(record)


def register_agent(record: R) -> R:
    return AGENTS.register(record)


def register_engine(record: R) -> R:
    return ENGINES.register(record)


class LazyText:
    """Text computed when first shown (argparse help naming a registry's things)."""

    def __init__(self, make: Callable[[], str]) -> None:
        self._make = make

    def __str__(self) -> str:
        return self._make()


def lazy_choices(action: Any, names: Names) -> Any:
    """Give an argparse option ``names`` as its choices without reading the registry
    now: ``add_argument(choices=...)`` would iterate them at once, i.e. on every
    command line call, even ``treeagent --help``."""
    action.choices = names
    return action


def or_list(words: Iterable[str]) -> str:
    """``a, b, c or d``."""
    words = list(words)
    return ", ".join(words[:-1]) + " or " + words[-1] if len(words) > 1 else "".join(words)
