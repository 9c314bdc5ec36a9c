"""``acquire``: one switch over live APIs / git, a local mirror, or the shipped sample."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from importlib import resources
from itertools import islice
from pathlib import Path
from typing import Any

from treeagent.bench.sources import jsrepo
from treeagent.bench.sources.raw import RawWriter, mirror_provenance
from treeagent.bench.sources.registry import MODES, Source, sources_of
from treeagent.paths import MIRROR_ENV, mirror_from_env


def sample_root() -> Path:
    """Folder of the samples shipped in the package (``samples/bench``)."""
    return Path(str(resources.files("treeagent"))) / "samples" / "bench"


@contextmanager
def _progress(enabled: bool) -> Iterator[Any]:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[note]}"), transient=False) as bar:
        yield bar


def _walk(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    """Payload files under ``folder``: links (to files or folders) are never followed,
    and a file that resolves outside ``folder`` is skipped."""
    top = folder.resolve()
    return sorted(p for p in folder.rglob("*")
                  if p.is_file() and p.suffix.lower() in suffixes and not p.is_symlink()
                  and p.resolve().is_relative_to(top))


def _inside(root: Path, folder: Path) -> Path:
    """``folder`` when it resolves inside ``root``; ``ValueError`` for a source folder
    that is (or passes through) a link out of the mirror."""
    where = folder.resolve()
    if not where.is_relative_to(root.resolve()):
        raise ValueError(f"{folder}: a link out of the mirror (to {where}): refused")
    return folder


def acquire(mode: str, *, formats: Iterable[str], sources: Iterable[str] | None = None,
            raw_dir: str | Path = "raw", mirror_dir: str | Path | None = None,
            js_repos: dict[str, str | Path] | None = None, limit: int | None = None,
            queries: dict[str, dict[str, Any]] | None = None, client: Any = None,
            cache_dir: str | Path | None = None, progress: bool = True) -> dict[str, Any]:
    """Acquire payloads into ``raw/<format>/<source>/...`` and return the manifest.

    ``mode``: ``live`` (public APIs with paging, rate limits and retries; git at the
    pinned commit for JS), ``mirror`` (a local folder laid out ``<format>/<source>/...``, by default
    ``$TREEAGENT_MIRROR``; for JS
    the local clones named in ``js_repos``) or ``sample`` (the package's samples).
    ``limit`` caps the payloads per source (live: pages). ``queries`` overrides live
    request parameters per source; ``client`` is an ``httpx.Client`` (tests pass one on a
    mock transport). Malformed payloads are quarantined with their reason; sources that
    yield nothing are listed under ``missing``. API keys (env vars) never reach ``raw/``.
    """
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r} (choose from {', '.join(MODES)})")
    fmts = list(formats)
    for f in fmts:
        sources_of(f)  # ValueError for an unknown format
    names = list(sources) if sources is not None else None
    chosen = [s for f in fmts for s in sources_of(f, names)
              if mode == "sample" or not s.extra.get("sample_only")]
    if names is not None:
        unknown = set(names) - {s.name for f in fmts for s in sources_of(f)}
        if unknown:
            raise ValueError(f"unknown sources for {fmts}: {', '.join(sorted(unknown))}")
    mirror_dir = mirror_dir or mirror_from_env()
    if mode == "mirror" and mirror_dir is None and any(s.format != "javascript" for s in chosen):
        raise ValueError("mirror mode needs a mirror folder laid out <format>/<source>/...: "
                         f"set acquire.mirror_dir (--mirror) or ${MIRROR_ENV}")
    writer = RawWriter(raw_dir, mode)
    cache = Path(cache_dir) if cache_dir else Path(raw_dir).resolve().parent / ".cache" / "git"
    with _progress(progress) as bar:
        for src in chosen:
            writer.start(src.format, src.name)
            task = bar.add_task(f"{src.format}/{src.name}", total=None, note="") if bar else None
            n = 0
            for rel, data, prov in _payloads(mode, src, mirror_dir, js_repos, limit, queries,
                                             client, cache, writer):
                reason = writer.add(src.format, src.name, rel, data, prov)
                n += 1
                if bar is not None:
                    bar.update(task, advance=1, note="quarantined: " + rel if reason else "")
            if n == 0 and not any(m["source"] == src.name for m in writer.missing):
                writer.miss(src.format, src.name, "no payloads found")
            if bar is not None:
                bar.update(task, total=n, completed=n)
    return writer.write()


Payload = tuple[str, bytes, dict[str, Any]]


def _payloads(mode: str, src: Source, mirror_dir: Any, js_repos: Any, limit: int | None,
              queries: Any, client: Any, cache: Path, writer: RawWriter) -> Iterator[Payload]:
    it: Iterator[Payload]
    if src.format == "javascript" and mode != "sample" and not src.extra.get("sample_only"):
        it = _js(mode, src, js_repos, cache, writer)
    elif mode == "mirror":
        it = _folder(Path(mirror_dir), src, writer, "mirror")
    elif mode == "sample":
        it = _folder(sample_root(), src, writer, "sample")
    else:
        from treeagent.bench.sources import live

        it = live.payloads(src, client=client, query=(queries or {}).get(src.name),
                           limit=limit, writer=writer)
    yield from (it if limit is None else islice(it, limit))


def _folder(root: Path, src: Source, writer: RawWriter, origin: str) -> Iterator[Payload]:
    folder = root / src.format / (src.folder if origin == "mirror" else src.name)
    if not folder.is_dir():
        writer.miss(src.format, src.name, f"no {origin} folder {src.format}/{folder.name}")
        return
    _inside(root, folder)
    if origin == "sample":
        index = json.loads((root / "provenance.json").read_text(encoding="utf-8"))
        known = {k.split("/", 2)[2]: v for k, v in index.items()
                 if k.startswith(f"{src.format}/{src.name}/")}
    else:
        known = mirror_provenance(root, src.format, folder.name)
    for path in _walk(folder, src.suffixes):
        rel = path.relative_to(folder).as_posix()
        prov = {"origin": origin, "license": src.license, **known.get(rel, {})}
        if src.format == "javascript":
            prov.setdefault("path", rel)
        yield rel, path.read_bytes(), prov


def _js(mode: str, src: Source, js_repos: Any, cache: Path, writer: RawWriter
        ) -> Iterator[Payload]:
    """JS files of one repository at its pinned commit. ``js_repos[name]`` is a local
    clone or plain folder (mirror), a clone URL (live), or a dict with ``path``/``url``
    and an overriding ``commit``."""
    url, commit = src.extra["url"], src.extra["commit"]
    given = (js_repos or {}).get(src.name)
    path = None
    if isinstance(given, dict):
        url, commit = given.get("url", url), given.get("commit", commit)
        path = given.get("path")
    elif given is not None:
        path = given
    if mode == "live":
        try:
            repo = jsrepo.clone(str(path or url), cache / f"{src.name}.git")
        except jsrepo.GitError as exc:
            writer.miss(src.format, src.name, f"git clone failed: {exc}")
            return
    else:
        if path is None:
            writer.miss(src.format, src.name, "no local clone given (js_repos)")
            return
        repo = Path(path)
        if not repo.exists():
            writer.miss(src.format, src.name, f"local clone {repo} does not exist")
            return
        if not jsrepo.is_git(repo):
            base = {"origin": "mirror", "repo": url, "commit": "unverified (plain folder)",
                    "license": src.license}
            for rel, data in jsrepo.files_in(repo):
                yield rel, data, {**base, "path": rel}
            return
    sha = jsrepo.resolve(repo, commit)
    if sha is None:
        writer.miss(src.format, src.name, f"pinned commit {commit} absent from {repo}")
        return
    lic = jsrepo.license_at(repo, sha)
    base = {"origin": mode, "repo": url, "commit": sha, "license": lic}
    absent: list[str] = []
    for rel, data in jsrepo.files_at(repo, sha, absent):
        yield rel, data, {**base, "path": rel}
    if absent:
        writer.miss(src.format, src.name, f"{len(absent)} JS files at {sha[:12]} absent from "
                    f"the clone (e.g. {absent[0]})")
