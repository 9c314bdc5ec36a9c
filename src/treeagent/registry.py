"""The named things of treeagent, each declared once and collected here.

Six registries: :data:`FORMATS` (input formats), :data:`AGENTS` (memory agents),
:data:`ENGINES` (inference engines), :data:`METHODS` (the four reading modes),
:data:`TASKS` (the eight benchmark tasks) and :data:`SECOND_READERS` (the benchmark
formats' second readers). A thing is one record, declared in the module
that implements it; the record has at least ``name`` and ``title`` (the paper's
spelling, used by reports):

* a format, :class:`treeagent.formats.Format`, in ``treeagent/formats/<name>.py``;
* an agent, :class:`treeagent.agents.common.Agent`, in ``treeagent/agents/<name>.py``;
* an engine, :class:`treeagent.llm.base.EngineSpec`, in ``treeagent/llm/__init__.py``;
* the methods, :class:`Named` records, in ``treeagent/agents/observation.py``;
* the tasks, :class:`treeagent.scoring.Task`, in ``treeagent/scoring.py``.

Config validation, the command line's choices, the reports' titles and row order and the
request limits all read these registries; no other module lists the names.

A registry's names are known without importing the things: the built-ins are declared
below as ``name: "module:attribute"`` (in order: the reports' order), plug-ins by their
entry points ``treeagent.formats``, ``treeagent.agents``, ``treeagent.engines`` and
``treeagent.second_reader`` (a format's benchmark hooks: ``treeagent.bench``), read
once when the registry is first used (an entry point's name is the thing's name, its
value the record). A record is imported when first needed (titles, ``get``), so that
config validation and the command line's choices stay cheap. A plug-in that fails to
load is dropped with a warning. Code may also register a record at run time
(``AGENTS.register(agent)``).

:attr:`Registry.names` and :attr:`Registry.titles` are live views, read when used, e.g.
as ``argparse`` choices (:func:`lazy_choices`) looked at only when a command's help is
shown or its arguments are checked: ``treeagent --help`` reads no registry.
"""

from __future__ import annotations

import importlib
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
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
    ``builtin``, only those of its built-in records. Reading names imports no record."""

    def __init__(self, registry: Registry[Any], builtin: bool = False) -> None:
        self._registry = registry
        self._builtin = builtin

    def _all(self) -> tuple[str, ...]:
        order = self._registry._names()
        if self._builtin:
            return tuple(n for n in self._registry._builtin_names if n in order)
        return tuple(order)

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
        try:
            return self._registry.get(name).title
        except ValueError:
            raise KeyError(name) from None

    def __iter__(self) -> Iterator[str]:
        return iter([r.name for r in self._registry])

    def __len__(self) -> int:
        return len(list(self._registry))

    def __repr__(self) -> str:
        return f"<{self._registry.kind} titles {dict(self)!r}>"


class Registry(Generic[R]):
    """Records of one kind by name: built-ins, then plug-ins and run-time registrations.

    ``builtins`` maps each built-in name to the ``"module:attribute"`` holding its record
    (the record, or a sequence of records that has it), so that the names are known
    without importing anything and a record is imported when first used; a sequence of
    targets instead is imported at once to learn the names (for light modules).
    ``group`` is the entry-point group of plug-ins (None: none): an entry point's name
    is the record's name, its value the record (``"package.module:RECORD"``).
    ``extras`` (name -> ``"module:attribute"``): records treeagent declares beyond the
    paper's, loaded like the built-ins and listed after them, but not ``builtin_names``
    (so in no preset and no benchmark default)."""

    def __init__(self, kind: str, builtins: Mapping[str, str] | Iterable[str],
                 group: str | None = None, extras: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._builtins = dict(builtins) if isinstance(builtins, Mapping) else tuple(builtins)
        self._extras = dict(extras or {})
        self._order: list[str] = []  # every name, in order
        self._targets: dict[str, Any] = {}  # name -> target or entry point, not yet loaded
        self._records: dict[str, R] = {}  # name -> loaded record
        self._builtin_names: tuple[str, ...] = ()
        self._plugins: set[tuple[str, str]] = set()  # entry points seen (name, value)
        self._state = "empty"  # -> "scanning" -> "ready"
        self._lock = threading.RLock()  # threads (Prefect tasks) wait for one scan or load
        self.names: Names = Names(self)
        self.builtin_names: Names = Names(self, builtin=True)
        self.titles: Titles = Titles(self)

    # ------------------------------------------------------------------ reading

    def get(self, name: str) -> R:
        """The record called ``name``; ``ValueError`` naming the choices if none is."""
        record = self._record(name) if name in self._names() else None
        if record is None:
            raise ValueError(f"unknown {self.kind} {name!r} (choose from "
                             f"{', '.join(self._names())})")
        return record

    def __iter__(self) -> Iterator[R]:
        records = [self._record(name) for name in list(self._names())]
        return iter([r for r in records if r is not None])

    def builtin(self) -> list[R]:
        """The records treeagent itself declares (its ``builtins``), in order: the
        paper's formats, agents, methods and tasks (presets list these, not plug-ins)."""
        return [self.get(name) for name in self.builtin_names]

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __repr__(self) -> str:
        return f"<Registry of {self.kind}s>"

    # ------------------------------------------------------------------ writing

    def register(self, record: R) -> R:
        """Add ``record`` (returned, so this also works as ``X = register(X(...))``).
        A name taken by another record is refused with ``ValueError``."""
        if not _is_record(record) or not record.name:
            raise TypeError(f"a {self.kind} record needs a non-empty str name and a str "
                            f"title, got {record!r}")
        name = record.name
        if name in self._names():
            old = self._records.get(name, self._targets.get(name))
            if old is record:
                return record
            raise ValueError(f"{self.kind} {name!r} is already registered ({old!r})")
        self._order.append(name)
        self._records[name] = record
        return record

    def unregister(self, name: str) -> R | None:
        """Remove the name and return its record (None for a plug-in that fails to load)."""
        record = self._record(name) if name in self._names() else None
        if name in self._order:
            self._order.remove(name)
        self._records.pop(name, None)
        self._targets.pop(name, None)
        return record

    def reload_plugins(self) -> None:
        """Read the entry points again (after installing a plug-in in this process)."""
        self._names()
        self._scan_plugins()

    # ------------------------------------------------------------------ loading

    def _names(self) -> list[str]:
        if self._state != "ready":
            with self._lock:  # another thread's scan finishes first; this one's own
                if self._state != "ready":  # read during its scan still raises
                    self._scan()
        return self._order

    def _scan(self) -> None:
        """The names: the built-ins', then the entry points' (no plug-in imported)."""
        if self._state == "scanning":
            raise RuntimeError(f"the {self.kind} registry was read while its built-ins "
                               "were being imported (a read at module level?)")
        self._state = "scanning"
        try:
            if isinstance(self._builtins, dict):
                self._order = list(self._builtins)
                self._targets = dict(self._builtins)
            else:
                for target in self._builtins:
                    for record in _records_of(_resolve(target)):
                        if record.name in self._records:
                            raise ValueError(f"{self.kind} {record.name!r} is declared twice")
                        self._order.append(record.name)
                        self._records[record.name] = record
            self._builtin_names = tuple(self._order)
            for name, target in self._extras.items():
                self._order.append(name)
                self._targets[name] = target
            self._scan_plugins()
        except BaseException:
            self._order, self._targets, self._records = [], {}, {}
            self._state = "empty"
            raise
        self._state = "ready"

    def _scan_plugins(self) -> None:
        if self.group is None:
            return
        from importlib.metadata import entry_points

        for ep in entry_points(group=self.group):
            if (ep.name, ep.value) in self._plugins:
                continue
            self._plugins.add((ep.name, ep.value))
            if ep.name in self._order:
                self._warn(ep, f"the name {ep.name!r} is taken")
                continue
            self._order.append(ep.name)
            self._targets[ep.name] = ep

    def _record(self, name: str) -> R | None:
        """The loaded record of a known name; a plug-in that fails to load is dropped
        with a warning (None), a built-in that fails raises."""
        if name in self._records:
            return self._records[name]
        with self._lock:
            return self._load(name)

    def _load(self, name: str) -> R | None:
        if name in self._records:  # loaded by another thread meanwhile
            return self._records[name]
        target = self._targets[name]
        if isinstance(target, str):
            record = _pick(_resolve(target), name, target)
        else:
            try:
                record = _pick(target.load(), name, target.value)
            except Exception as exc:  # a broken plug-in must not break the rest
                self._warn(target, str(exc))
                self._order.remove(name)
                del self._targets[name]
                return None
        del self._targets[name]
        self._records[name] = record
        return record

    def _warn(self, ep: Any, why: str) -> None:
        warnings.warn(f"treeagent: {self.kind} plug-in {ep.name!r} ({ep.value}) not "
                      f"loaded: {why}", RuntimeWarning, stacklevel=5)


def _pick(value: Any, name: str, origin: str) -> Any:
    """The record called ``name`` in what a target holds (a record or a sequence)."""
    if _is_record(value):
        if value.name != name:
            raise ValueError(f"the entry point is named {name!r} but its record "
                             f"{value.name!r}")
        return value
    if isinstance(value, list | tuple):
        for record in value:
            if _is_record(record) and record.name == name:
                return record
    raise TypeError(f"{origin} holds no record named {name!r}")


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
    """A record or a sequence of records."""
    if _is_record(value):
        return [value]
    if isinstance(value, list | tuple) and all(_is_record(v) for v in value):
        return list(value)
    raise TypeError(f"expected a record (name, title) or a sequence of records, got "
                    f"{value!r}")


FORMATS: Registry[Any] = Registry("format", {
    "json": "treeagent.formats.json_format:FORMAT",
    "html": "treeagent.formats.html:FORMAT",
    "yaml": "treeagent.formats.yaml_format:FORMAT",
    "javascript": "treeagent.formats.javascript:FORMAT",
}, group="treeagent.formats", extras={"markdown": "treeagent.formats.markdown:FORMAT"})
"""Input formats (:class:`treeagent.formats.Format`); the paper's datasets first, then
Markdown (sectioned like the others; no benchmark data, so in no preset)."""

AGENTS: Registry[Any] = Registry("agent", {
    "memagent": "treeagent.agents.memagent:AGENT",
    "infmem": "treeagent.agents.infmem:AGENT",
    "memreread": "treeagent.agents.memreread:AGENT",
    "rememr1": "treeagent.agents.rememr1:AGENT",
}, group="treeagent.agents")
"""Memory agents (:class:`treeagent.agents.common.Agent`), in Table 1's order."""

ENGINES: Registry[Any] = Registry("engine", dict.fromkeys(
    ("transformers", "openai", "vllm"), "treeagent.llm:ENGINE_SPECS"), group="treeagent.engines")
"""Inference engines (:class:`treeagent.llm.base.EngineSpec`)."""

METHODS: Registry[Named] = Registry("method", dict.fromkeys(
    ("flat", "tree", "tree+path", "treeagent"), "treeagent.agents.observation:METHOD_RECORDS"))
"""The reading modes of Table 1's rows (Flat, Tree, Tree+Path, TreeAgent); fixed."""

TASKS: Registry[Any] = Registry("task", ("treeagent.scoring:TASK_RECORDS",))
"""The eight tasks of paper 4.1 (:class:`treeagent.scoring.Task`); fixed. (scoring is a
light module: its records are imported to learn the names.)"""

SECOND_READERS: Registry[Any] = Registry("second reader", dict.fromkeys(
    ("json", "html", "yaml", "javascript"), "treeagent.bench.second_readers:BUILTIN"),
    group="treeagent.second_reader")
"""Each benchmark format's second reader (:class:`treeagent.bench.second_readers.
SecondReader`, paper B.1): the paper's four are read by
:mod:`treeagent.bench.independent` itself; a plug-in format declares its own under the
entry point group ``treeagent.second_reader``, apart from its construction hooks
(``treeagent.bench``)."""


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
