"""The report's provenance block: what was run, on what, from which code and parameters.

Model ids and revisions come from the scored rows (what the engines reported), the
tokenizers from the evidence rows (what sectioning counted with), parameters from
``params.yaml`` (a hash of the validated parameters and every key that differs from the
preset named in them), the code from git (commit, and whether the tree had changes).

The commit is the tree's state when the run started: ``flows/benchmark.py`` reads it
before ``dvc repro`` and hands it to the stages in ``$TREEAGENT_SOURCE_STATE`` (outside
every DVC hash). A report stage run without it reads git itself, leaving out the files
the pipeline writes (``dvc.lock`` and the stages' tracked outputs): DVC rewrites them
during the run, so they say nothing about the code the run started from.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

#: the tree's state at the start of a run, ``<commit>`` or ``<commit> + changes``
STATE_ENV = "TREEAGENT_SOURCE_STATE"
_STATE = re.compile(r"^[0-9a-f]{40}( \+ changes)?$")


def flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}`` (lists and scalars are leaves)."""
    if isinstance(data, dict) and data:
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): data}


def params_diff(data: dict[str, Any], preset: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(key, value, preset value) for every leaf that differs from the preset."""
    a, b = flatten(data), flatten(preset)
    missing = object()
    return [(k, a.get(k), b.get(k)) for k in sorted(set(a) | set(b))
            if a.get(k, missing) != b.get(k, missing)]


def params_hash(data: dict[str, Any]) -> str:
    """sha256 (first 16 hex digits) of the parameters as canonical JSON."""
    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _git(root: str | Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                          timeout=10, check=True).stdout


def pipeline_written(root: str | Path = ".") -> list[re.Pattern[str]]:
    """Patterns of the tracked files a pipeline run writes: ``dvc.lock`` and every out,
    metric and plot of ``dvc.yaml`` (``${...}`` matches one path segment)."""
    import yaml

    paths = ["dvc.lock"]
    try:
        stages = yaml.safe_load(Path(root, "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    except (OSError, yaml.YAMLError, KeyError, TypeError):
        stages = {}
    for stage in stages.values():
        for key in ("outs", "metrics", "plots"):
            for entry in stage.get(key) or []:
                paths += [entry] if isinstance(entry, str) else list(entry)
    return [re.compile("".join(r"[^/]+" if part.startswith("${") else re.escape(part)
                               for part in re.split(r"(\$\{[^}]*\})", path.rstrip("/")))
                       + r"(/.*)?") for path in paths]


def tree_state(root: str | Path = ".", ignore: list[re.Pattern[str]] | None = None) -> str:
    """``HEAD``'s commit, with ``+ changes`` when a tracked file differs from it (files
    matching ``ignore`` aside); ``unknown`` outside a git checkout."""
    try:
        head = _git(root, "rev-parse", "HEAD").strip()
        changed = _git(root, "diff", "HEAD", "--name-only", "-z").split("\0")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    changed = [f for f in changed if f and not any(p.fullmatch(f) for p in ignore or [])]
    return head + (" + changes" if changed else "")


def source_state(root: str | Path = ".") -> str:
    """The code and parameters' state: ``HEAD`` and whether a tracked file other than
    the ones the pipeline writes differs from it (what ``flows/benchmark.py`` records at
    the start of a run)."""
    return tree_state(root, pipeline_written(root))


def git_commit(root: str | Path = ".") -> str:
    """The state the run started from (``$TREEAGENT_SOURCE_STATE``, set by
    ``flows/benchmark.py``), else :func:`source_state` now; ``unknown`` outside a git
    checkout."""
    recorded = os.environ.get(STATE_ENV, "")
    return recorded if _STATE.match(recorded) else source_state(root)


def models(scores: Any) -> list[tuple[str, str, str]]:
    """(agent, model id, revision) as the scored rows record them."""
    cols = [c for c in ("agent", "model", "model_revision") if c in scores.columns]
    if len(cols) < 3:
        return []
    rows = scores[cols].drop_duplicates().sort_values(cols)
    return [(str(a), str(m), str(r)) for a, m, r in rows.itertuples(index=False)]


def collect(params: Any, scores: Any, evidence: Any = None, root: str | Path = ".",
            now: dt.datetime | None = None) -> dict[str, Any]:
    """The provenance of a report (``params``: a :class:`treeagent.pipeline.config.Params`)."""
    from treeagent import __version__
    from treeagent.pipeline import config

    data = params.data
    name = data.get("preset", "demo")
    try:
        preset = config.preset(name)
    except (KeyError, ValueError):
        preset = {}
    tokenizers: dict[str, str] = {}
    if evidence is not None and len(evidence):
        for agent, tok in evidence[["agent", "tokenizer"]].drop_duplicates().itertuples(
                index=False):
            tokenizers[str(agent)] = str(tok)
    engine = data.get("engine", {})
    return {
        "models": models(scores),
        "tokenizers": tokenizers,
        "engine": f"{engine.get('name')} {json.dumps(engine.get('options', {}), sort_keys=True)}",
        "preset": name,
        "params_hash": params_hash(data),
        "params_diff": params_diff(data, preset),
        "commit": git_commit(root),
        "date": (now or dt.datetime.now(dt.UTC)).strftime("%Y-%m-%d %H:%M UTC"),
        "treeagent": __version__,
    }
