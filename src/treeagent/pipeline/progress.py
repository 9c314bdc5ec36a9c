"""Progress of a long step (acquire, build, evaluate, score, report, ``treeagent run``):
done/total, rate and ETA for one or more counters.

On a terminal a rich bar (one row per counter) on stderr; otherwise one log line every
``TREEAGENT_PROGRESS_INTERVAL`` seconds (default 30; also while nothing finishes) and one
at the end, through :mod:`logging`: Prefect's run logger inside a flow or task run (so
the lines reach Prefect's logs, also from a Dask worker), else the ``treeagent.pipeline.progress``
logger, which prints to stderr.

    with Progress("evaluate memagent/flat", {"examples": 40, "calls": 480}) as bar:
        bar.update(examples=3, calls=41, info="12 cached")
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

INTERVAL_ENV = "TREEAGENT_PROGRESS_INTERVAL"
DEFAULT_INTERVAL = 30.0
BAR_REFRESH = 0.1
"""Seconds between updates of a terminal bar (rich redraws it on its own clock)."""
MIN_BEAT = 0.05
"""Shortest wait of the thread that logs a line when no update comes for an interval."""

log = logging.getLogger(__name__)


def interval_from_env() -> float:
    """Seconds between log lines: ``TREEAGENT_PROGRESS_INTERVAL`` if it is a positive
    number, else 30."""
    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return DEFAULT_INTERVAL
    return value if value > 0 else DEFAULT_INTERVAL


def on_terminal() -> bool:
    """Whether stderr is a terminal (a rich bar) rather than a pipe, file or log."""
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class _Stderr(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a line is emitted."""

    @property  # type: ignore[override]
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def run_logger() -> logging.Logger | logging.LoggerAdapter:
    """Prefect's run logger inside a flow or task run, else this module's logger, which
    writes to stderr (progress is for the person watching the run)."""
    if "prefect" in sys.modules:
        try:
            from prefect.logging import get_run_logger

            return get_run_logger()
        except Exception:  # noqa: BLE001 - no run context: fall back to plain logging
            pass
    if not any(isinstance(h, _Stderr) for h in log.handlers):
        handler = _Stderr()
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.propagate = False
    if log.level == logging.NOTSET:
        log.setLevel(logging.INFO)
    return log


def rate_text(rate: float) -> str:
    """``2.50/s``, or ``3.00/min`` under 0.1 per second."""
    return f"{rate:.2f}/s" if rate >= 0.1 else f"{rate * 60:.2f}/min"


def duration_text(seconds: float) -> str:
    """``h:mm:ss`` (``m:ss`` under an hour)."""
    s = int(round(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def eta_text(done: int, total: int | None, rate: float) -> str:
    """Time left at ``rate``: ``0:40``; ``?`` before the first unit or without a total."""
    if total is None:
        return "?"
    if done >= total:
        return "0:00"
    return duration_text((total - done) / rate) if rate > 0 else "?"


def counter_text(name: str, done: int, total: int | None, elapsed: float) -> str:
    """``calls 40/120 (2.00/s, ETA 0:40)``; without a total ``calls 40 (2.00/s)``."""
    rate = done / elapsed if elapsed > 0 else 0.0
    if total is None:
        return f"{name} {done} ({rate_text(rate)})"
    return f"{name} {done}/{total} ({rate_text(rate)}, ETA {eta_text(done, total, rate)})"


_CONSOLE: Any = None


def _stderr_console() -> Any:
    """One rich console on stderr for every bar (stdout is the command's output); bars
    live at once (steps in threads) share it."""
    global _CONSOLE
    if _CONSOLE is None:
        from rich.console import Console

        _CONSOLE = Console(stderr=True)
    return _CONSOLE


class Progress:
    """Counters with totals; see the module docstring. ``enabled=False`` shows nothing;
    ``terminal`` (default: stderr is a terminal) picks the bar over log lines; ``clock``
    and ``logger`` are for tests."""

    def __init__(self, label: str, totals: Mapping[str, int | None], *,
                 enabled: bool = True, terminal: bool | None = None,
                 interval: float | None = None, clock: Callable[[], float] = time.monotonic,
                 logger: logging.Logger | logging.LoggerAdapter | None = None) -> None:
        self.label = label
        self.totals: dict[str, int | None] = dict(totals)
        self.done = dict.fromkeys(self.totals, 0)
        self.info = ""
        self.enabled = enabled
        self._clock = clock
        self._start = self._last = clock()
        self._interval = interval if interval is not None else interval_from_env()
        self._closed = False
        self._said: tuple[Any, ...] = ()  # the counters of the last line logged
        self._bar: Any = None
        self._logger = logger
        self._lock = threading.Lock()
        self._stop = threading.Event()
        if enabled and (on_terminal() if terminal is None else terminal):
            self._start_bar()
        if enabled and self._bar is None and clock is time.monotonic:
            self._logger = logger or run_logger()  # the caller's (run) logger, for the beat
            threading.Thread(target=self._beat, name="treeagent-progress",
                             daemon=True).start()

    def _start_bar(self) -> None:
        from rich.errors import LiveError
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
        )
        from rich.progress import Progress as Bar

        bar = Bar(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[rate]}"), TimeElapsedColumn(),
                  TextColumn("ETA {task.fields[eta]}"), TextColumn("{task.fields[info]}"),
                  transient=False,
                  console=_stderr_console())
        try:
            bar.start()
        except LiveError:  # a rich that refuses a second live display: log lines instead
            return
        self._bar = bar
        self._tasks = {name: self._bar.add_task(f"{self.label} {name}", total=total,
                                                rate="", eta="?", info="")
                       for name, total in self.totals.items()}

    def elapsed(self) -> float:
        return self._clock() - self._start

    def line(self) -> str:
        """The log line: every counter's done/total, rate and ETA, elapsed, info."""
        el = self.elapsed()
        parts = [counter_text(n, self.done[n], self.totals[n], el) for n in self.totals]
        tail = f"; {self.info}" if self.info else ""
        return f"{self.label}: {''.join(p + '; ' for p in parts)}elapsed {duration_text(el)}{tail}"

    def update(self, *, info: str | None = None, totals: Mapping[str, int | None] = (),
               **done: int) -> None:
        """Set counters to ``done`` values (and ``totals`` where they became known)."""
        if not self.enabled or self._closed:
            return
        with self._lock:
            for name, total in dict(totals).items():
                self.totals[name] = total
                self.done.setdefault(name, 0)
            self.done.update(done)
            if info is not None:
                self.info = info
            if self._bar is not None:
                if self._clock() - self._last >= BAR_REFRESH:
                    self._last = self._clock()
                    self._show_bar()
            elif self._clock() - self._last >= self._interval:
                self._emit()

    def _beat(self) -> None:
        """A line every interval also while nothing finishes (a long batch of calls)."""
        while not self._stop.wait(max(MIN_BEAT, self._interval - (self._clock() - self._last))):
            with self._lock:
                if not self._closed and self._clock() - self._last >= self._interval:
                    self._emit()

    def advance(self, name: str, by: int = 1, info: str | None = None) -> None:
        self.update(info=info, **{name: self.done.get(name, 0) + by})

    def count(self, name: str, done: int, total: int | None) -> None:
        """Counter ``name`` at ``done`` of ``total``: the build's ``progress(fmt, done,
        total)`` callback."""
        self.update(totals={name: total}, **{name: done})

    def _show_bar(self) -> None:
        el = self.elapsed()
        for name, total in self.totals.items():
            if name not in self._tasks:
                self._tasks[name] = self._bar.add_task(f"{self.label} {name}", total=total,
                                                       rate="", eta="?", info="")
            rate = self.done[name] / el if el > 0 else 0.0
            self._bar.update(self._tasks[name], completed=self.done[name], total=total,
                             rate=rate_text(rate), eta=eta_text(self.done[name], total, rate),
                             info=self.info if name == next(iter(self.totals)) else "")

    def _emit(self) -> None:
        self._last = self._clock()
        self._said = (dict(self.done), dict(self.totals), self.info)
        (self._logger or run_logger()).info("%s", self.line())

    def close(self) -> None:
        """The final line (log; unless the last line said the same counts) or the bar's
        last frame (terminal); idempotent."""
        if not self.enabled or self._closed:
            return
        self._stop.set()
        with self._lock:
            self._closed = True
            if self._bar is not None:
                try:
                    self._show_bar()
                finally:
                    self._bar.stop()
            elif self._said != (self.done, self.totals, self.info):  # not said just now
                self._emit()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def planned_calls(agent: str, method: str, examples: int,
                  plan: str | Path = "reports/plan.json") -> int | None:
    """Expected calls for ``examples`` examples of ``agent``/``method``: the plan stage's
    upper bound per example (``calls_max`` over ``examples`` of its rows) times
    ``examples``; None without a readable plan or rows for the pair."""
    try:
        rows = json.loads(Path(plan).read_text(encoding="utf-8"))["rows"]
        mine = [r for r in rows if r["agent"] == agent and r["method"] == method]
        calls = sum(int(r["calls_max"]) for r in mine)
        count = sum(int(r["examples"]) for r in mine)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return round(calls / count * examples) if count else None


def silence_third_party_bars() -> None:
    """Turn off Hugging Face (hub downloads, transformers) tqdm bars when stderr is not a
    terminal: in a pipe or log file they are noise."""
    if on_terminal():
        return
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:
        pass
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:
        pass
