"""The DVC remote that shares a run's outputs across hosts (docs/pipeline.md, "Many GPUs
and hosts"): which one is configured, and whether a run pushes to it.

A run pushes at its end when asked (``--push``), when it is scheduled (flows/schedule.py),
or when it spans hosts (``runner.address`` names a Dask scheduler); with no default
remote it says so and pushes nothing (the outputs stay in this host's DVC cache).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

ADD_ONE = "dvc remote add -d --local <name> <url>"


def dvc_command() -> str:
    """The ``dvc`` beside this interpreter, else the one on ``PATH``."""
    local = Path(sys.executable).parent / "dvc"
    return str(local) if local.exists() else "dvc"


def default_remote(project: str | Path) -> tuple[str, str] | None:
    """(name, url) of ``project``'s default DVC remote (``.dvc/config`` or its
    ``config.local``), or None when none is set."""

    def dvc(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([dvc_command(), *args], cwd=project, text=True,
                              capture_output=True, check=False)

    named = dvc("remote", "default")
    name = named.stdout.strip()
    if named.returncode or not name:
        return None
    url = dvc("config", f"remote.{name}.url")  # the local config wins, as DVC reads it
    if url.returncode == 0 and url.stdout.strip():
        return name, url.stdout.strip()
    for line in dvc("remote", "list").stdout.splitlines():
        parts = line.split()
        if parts and parts[0] == name:
            return name, (parts[1] if len(parts) > 1 else "")
    return name, ""


def none_configured(action: str) -> str:
    """The line a run prints when it would ``action`` (pull or push) with no remote."""
    where = ("nothing pulled: every stage's outputs come from this host" if action == "pull"
             else "nothing pushed: the outputs stay in this host's DVC cache")
    return f"no DVC remote configured ({where}); add one with `{ADD_ONE}`"


def push_wanted(push: bool | None, params: Any) -> bool:
    """``push`` when given; otherwise (None) push a run that spans hosts: ``runner.name``
    dask with a scheduler ``runner.address``."""
    if push is not None:
        return push
    return params["runner.name"] == "dask" and bool(params["runner.address"])
