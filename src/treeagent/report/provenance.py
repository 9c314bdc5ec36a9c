"""The report's provenance block: what was run, on what, from which code and parameters.

Model ids and revisions come from the scored rows (what the engines reported), the
tokenizers from the evidence rows (what sectioning counted with), parameters from
``params.yaml`` (a hash of the validated parameters and every key that differs from the
preset named in them), the code from git (commit, and whether the tree had changes).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any


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


def git_commit(root: str | Path = ".") -> str:
    """``HEAD``'s commit, with ``+ changes`` when tracked files differ; ``unknown``
    outside a git checkout."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return head + (" + changes" if dirty.strip() else "")


def models(scores: Any) -> list[tuple[str, str, str]]:
    """(agent, model id, revision) as the scored rows record them."""
    cols = [c for c in ("agent", "model", "model_revision") if c in scores.columns]
    if len(cols) < 3:
        return []
    rows = scores[cols].drop_duplicates().sort_values(cols)
    return [(str(a), str(m), str(r)) for a, m, r in rows.itertuples(index=False)]


def collect(params: Any, scores: Any, evidence: Any = None, root: str | Path = ".",
            now: dt.datetime | None = None) -> dict[str, Any]:
    """The provenance of a report (``params``: a :class:`treeagent.config.Params`)."""
    from treeagent import __version__, config

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
