"""JavaScript repositories at pinned commits (B.1): read with git, never executed.

``live`` clones (blobs over 1 MB filtered out) and reads the pinned commit; ``mirror``
reads a local clone (bare or not) at the pinned commit, or a plain folder as is.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

SUFFIXES = (".js", ".mjs", ".cjs")
EXCLUDED_DIRS = frozenset({"node_modules", "vendor", "vendors", "third_party", "third-party",
                           "bower_components", "dist", ".git"})
MAX_BYTES = 512 * 1024


class GitError(RuntimeError):
    pass


def _git(repo: Path | None, *args: str, input: bytes | None = None) -> bytes:
    cmd = ["git", *(["-C", str(repo)] if repo else []), *args]
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0"}
    proc = subprocess.run(cmd, input=input, capture_output=True, env=env, check=False)
    if proc.returncode:
        raise GitError(proc.stderr.decode(errors="replace").strip() or f"git {args[0]} failed")
    return proc.stdout


def wanted(path: str, size: int | None = None) -> bool:
    """A JS source file worth scanning: JS suffix, not minified, not vendored/bundled."""
    p = PurePosixPath(path)
    if p.suffix not in SUFFIXES or p.name.endswith((".min.js", ".bundle.js")):
        return False
    if EXCLUDED_DIRS & set(p.parts[:-1]):
        return False
    return size is None or size <= MAX_BYTES


def is_git(path: Path) -> bool:
    try:
        return _git(path, "rev-parse", "--git-dir").strip() != b""
    except GitError:
        return False


def resolve(repo: Path, commit: str) -> str | None:
    """Full id of ``commit`` (a prefix) in ``repo``, or None when it is absent."""
    try:
        return _git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}").decode().strip()
    except GitError:
        return None


def clone(url: str, dest: Path) -> Path:
    """``git clone --bare`` without blobs over 1 MB (live mode)."""
    if not dest.exists():
        dest.parent.mkdir(parents=True, exist_ok=True)
        _git(None, "clone", "--quiet", "--bare", "--filter=blob:limit=1m", url, str(dest))
    return dest


def files_at(repo: Path, sha: str, absent: list[str] | None = None
             ) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of every wanted JS file in the tree of ``sha``, in path order; paths
    whose blobs the (partial) clone lacks are appended to ``absent``."""
    listing = _git(repo, "ls-tree", "-r", "-z", "--long", sha).split(b"\0")
    entries: list[tuple[str, str]] = []
    for row in listing:
        if not row:
            continue
        meta, _, path = row.decode("utf-8", "surrogateescape").partition("\t")
        mode, kind, blob, size = meta.split()
        if kind != "blob" or mode == "120000" or not wanted(path):
            continue
        if not size.isdigit():  # listed in the tree, blob not in this snapshot
            if absent is not None:
                absent.append(path)
        elif wanted(path, int(size)):
            entries.append((path, blob))
    entries.sort()
    if not entries:
        return
    out = _git(repo, "cat-file", "--batch", input="".join(f"{b}\n" for _, b in entries).encode())
    pos = 0
    for path, _ in entries:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if header[-1] == b"missing":
            pos = nl + 1
            if absent is not None:
                absent.append(path)
            continue
        size = int(header[2])
        yield path, out[nl + 1:nl + 1 + size]
        pos = nl + 1 + size + 1


def files_in(folder: Path) -> Iterator[tuple[str, bytes]]:
    """(path, bytes) of wanted JS files under a plain folder, in path order."""
    found = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in EXCLUDED_DIRS)
        for n in names:
            p = Path(root) / n
            rel = p.relative_to(folder).as_posix()
            if not p.is_symlink() and wanted(rel, p.stat().st_size):
                found.append(rel)
    for rel in sorted(found):
        yield rel, (folder / rel).read_bytes()


def license_at(repo: Path, sha: str) -> str:
    """The SPDX-like name of the repository's LICENSE at ``sha`` (MIT expected, B.1)."""
    for name in ("LICENSE", "LICENSE.md", "LICENSE.txt", "license"):
        try:
            text = _git(repo, "show", f"{sha}:{name}").decode(errors="replace")
        except GitError:
            continue
        return "MIT" if "MIT License" in text or "Permission is hereby granted, free of charge" \
            in text else text.strip().splitlines()[0][:80]
    return "unknown (no LICENSE file)"
