"""Result versions: each recorded rerun kept as one commit of the git branch ``results``.

A version holds what a later run needs to compare with it, as files at the top of its
commit's tree:

* ``models.lock``: each agent's model at its resolved revision (:mod:`treeagent.llm.lock`);
* ``dvc.lock``: the pipeline state (the hashes of every output, so ``dvc pull`` brings
  the version's files back from the DVC remote);
* ``metrics.json``: ``reports/metrics.json`` of the run;
* ``scores.csv``: the per-example scores of every agent x method of the grid
  (:data:`COLUMNS`), so that a later version is compared on the same examples (paired).

Recording writes git objects and moves ``refs/heads/results`` only (``hash-object``,
``mktree``, ``commit-tree``, ``update-ref``): the user's checkout, index and ``HEAD`` are
never touched, and no second working tree is checked out. A run whose files are
identical to the latest version's records nothing. The branch travels with ``git push
origin results`` / ``git fetch origin results``; a clone that has only the
remote-tracking branch reads it too (docs/pipeline.md, "Rerun when a model changes").
"""

from __future__ import annotations

import io
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BRANCH = "results"
COLUMNS: tuple[str, ...] = ("dataset", "example_id", "task", "length", "agent", "method",
                            "model", "model_revision", "score")
FILES = {"models.lock": "models.lock", "dvc.lock": "dvc.lock",
         "metrics.json": "reports/metrics.json"}
"""Name in a version's tree -> path in the project."""
SCORES_FILE = "scores.csv"
_NO_COMMIT = "0" * 40


class VersionError(RuntimeError):
    """A version that cannot be recorded or read (one line naming the cause)."""


class NotARepository(VersionError):
    """The project is not a git working tree: there is nowhere to keep versions."""


@dataclass(frozen=True)
class Version:
    """One recorded rerun: its position on the branch (1 = oldest), commit and time."""

    number: int
    commit: str
    recorded: str  # committer date, ISO 8601

    @property
    def short(self) -> str:
        return self.commit[:10]


@dataclass(frozen=True)
class Recorded:
    """The outcome of :func:`record`: the version and whether a new commit was made."""

    version: Version
    created: bool


def _git(repo: str | Path, *args: str, data: bytes | None = None,
         env: dict[str, str] | None = None) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True,
                          check=False, env=env)
    if done.returncode:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise VersionError(f"git {args[0]}: {why[-1] if why else f'exit {done.returncode}'}")
    return done.stdout.decode()


def toplevel(project: str | Path) -> Path:
    """The git working tree holding ``project``; :class:`NotARepository` when none."""
    if not Path(project).is_dir():
        raise NotARepository(f"{project}: no such directory")
    try:
        return Path(_git(project, "rev-parse", "--show-toplevel").strip())
    except VersionError:
        raise NotARepository(f"{project}: not a git repository (result versions are kept "
                             f"on its git branch {BRANCH!r})") from None


def branch_ref(repo: str | Path, branch: str = BRANCH) -> str | None:
    """The ref holding the versions: the local branch, else a remote-tracking one
    (``origin/results`` in a fresh clone); None when there is none yet."""
    refs = _git(repo, "for-each-ref", "--format=%(refname)", f"refs/heads/{branch}",
                f"refs/remotes/*/{branch}").split()
    local = f"refs/heads/{branch}"
    return local if local in refs else (refs[0] if refs else None)


def list_versions(project: str | Path, branch: str = BRANCH) -> list[Version]:
    """Every recorded version, oldest first (empty when the branch does not exist)."""
    repo = toplevel(project)
    ref = branch_ref(repo, branch)
    if ref is None:
        return []
    lines = _git(repo, "log", "--first-parent", "--reverse", "--format=%H %cI", ref)
    return [Version(i, *line.split(" ", 1))
            for i, line in enumerate(lines.splitlines(), start=1)]


def read_file(project: str | Path, version: Version, name: str) -> bytes:
    """A file of a version's tree (``scores.csv``, ``models.lock``, ...)."""
    done = subprocess.run(["git", "-C", str(project), "cat-file", "blob",
                           f"{version.commit}:{name}"], capture_output=True, check=False)
    if done.returncode:
        raise VersionError(f"version {version.number} ({version.short}): no {name}")
    return done.stdout


def parse_scores(data: bytes) -> Any:
    """A version's ``scores.csv`` as a DataFrame with :data:`COLUMNS`."""
    import pandas as pd

    text = {c: str for c in COLUMNS if c not in ("length", "score")}
    frame = pd.read_csv(io.BytesIO(data), dtype={**text, "length": "int64",
                                                 "score": "float64"},
                        keep_default_na=False, na_values={"model": [""],
                                                          "model_revision": [""]})
    return frame[list(COLUMNS)]


def read_scores(project: str | Path, version: Version) -> Any:
    return parse_scores(read_file(project, version, SCORES_FILE))


def scores_csv(scores: Any) -> bytes:
    """Per-example scores as a version stores them: :data:`COLUMNS`, rows sorted, so
    the same scores always give the same bytes (and an unchanged run no new version)."""
    frame = scores[list(COLUMNS)].sort_values(
        ["agent", "method", "dataset", "example_id"], kind="stable")
    return frame.to_csv(index=False, lineterminator="\n").encode()


def grid_score_files(project: Path, params: Any) -> list[Path]:
    """The scored files of the params' grid (agents x methods), as the report reads them."""
    return [project / "runs" / a / m / "scores.parquet"
            for a in params.agents for m in params.methods]


def _identity_env(repo: Path) -> dict[str, str]:
    """This process's environment, with a committer identity where git has none."""
    env = dict(os.environ)
    has = subprocess.run(["git", "-C", str(repo), "var", "GIT_COMMITTER_IDENT"],
                         capture_output=True, check=False).returncode == 0
    if not has:
        for role in ("AUTHOR", "COMMITTER"):
            env.setdefault(f"GIT_{role}_NAME", "treeagent")
            env.setdefault(f"GIT_{role}_EMAIL", "treeagent@localhost")
    return env


def _message(number: int, lock: bytes, source: str) -> str:
    import yaml

    entries = yaml.safe_load(lock) or {}
    lines = [f"{agent}  {e.get('model')}  {e.get('revision')}"
             for agent, e in entries.items() if isinstance(e, dict)]
    return f"results: version {number}\n\n" + "\n".join(lines) + f"\n\nsource: {source}\n"


def record(project: str | Path = ".", params_path: str = "params.yaml",
           branch: str = BRANCH) -> Recorded:
    """Record the project's current run as a new version on ``branch`` (see the module
    docstring); an identical run records nothing and returns the latest version."""
    from treeagent.pipeline import config
    from treeagent.report.db import load_scores

    repo = toplevel(project)
    root = Path(project).resolve()
    try:
        params = config.load(root / params_path)
    except config.ParamsError as exc:
        raise VersionError(str(exc)) from None
    blobs: dict[str, bytes] = {}
    for name, rel in FILES.items():
        path = root / rel
        if not path.is_file():
            raise VersionError(f"{path}: missing; record a run after `dvc repro` has "
                               "written it")
        blobs[name] = path.read_bytes()
    files = grid_score_files(root, params)
    absent = [str(f) for f in files if not f.is_file()]
    if absent:
        raise VersionError(f"{absent[0]}: missing ({len(absent)} of {len(files)} scored "
                           "files of the grid); record a run after `dvc repro`")
    blobs[SCORES_FILE] = scores_csv(load_scores([str(f) for f in files]))
    entries = []
    for name, data in sorted(blobs.items()):
        sha = _git(repo, "hash-object", "-w", "--stdin", data=data).strip()
        entries.append(f"100644 blob {sha}\t{name}\n")
    tree = _git(repo, "mktree", data="".join(entries).encode()).strip()
    ref = branch_ref(repo, branch)
    versions = list_versions(repo, branch)
    if versions and _git(repo, "rev-parse", f"{versions[-1].commit}^{{tree}}").strip() == tree:
        return Recorded(versions[-1], created=False)
    try:
        head = _git(repo, "rev-parse", "HEAD").strip()
        dirty = bool(_git(repo, "status", "--porcelain", "--untracked-files=no").strip())
        source = f"{head}{' (modified)' if dirty else ''}"
    except VersionError:
        source = "no commit"
    message = _message(len(versions) + 1, blobs["models.lock"], source)
    parent = ["-p", versions[-1].commit] if versions else []
    commit = _git(repo, "commit-tree", tree, *parent, "-F", "-", data=message.encode(),
                  env=_identity_env(repo)).strip()
    local = f"refs/heads/{branch}"
    old = versions[-1].commit if versions and ref == local else _NO_COMMIT
    _git(repo, "update-ref", "-m", "treeagent history record", local, commit, old)
    recorded = _git(repo, "log", "-1", "--format=%cI", commit).strip()
    return Recorded(Version(len(versions) + 1, commit, recorded), created=True)
