"""The ``raw/`` folder: payloads as acquired, under
``raw/<format>/<source>/...``, plus ``raw/manifest.json`` listing every file with its
source, provenance, sha256 and mode. A malformed payload goes to
``raw/quarantine/<format>/<source>/...`` and into the manifest's ``quarantine`` list
with its reason (line:col or path); nothing is dropped silently."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
from pathlib import Path
from typing import Any

from treeagent.pipeline.artifacts import ArtifactError  # noqa: F401 (raised here and re-exported)

MANIFEST = "manifest.json"
QUARANTINE = "quarantine"
_MANIFEST_LOCK = threading.Lock()  # the acquire flow merges formats from threads
_CHARSET = re.compile(rb"""charset\s*=\s*["']?([A-Za-z0-9_.:-]+)""", re.I)


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def decode(fmt: str, data: bytes) -> str:
    """Payload text: UTF-8 (BOM dropped); HTML pages fall back to their declared charset,
    then Latin-1 (SWDE pages keep their original encodings)."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        if fmt != "html":
            raise ValueError(f"not UTF-8 (byte {exc.start})") from None
    m = _CHARSET.search(data[:4096])
    if m:
        try:
            return data.decode(m.group(1).decode("ascii"))
        except (LookupError, UnicodeDecodeError):
            pass
    return data.decode("latin-1")


def check(fmt: str, data: bytes) -> str | None:
    """Why a payload is malformed (quarantine reason), or None when it is usable: not
    decodable, else the format's ``check_raw`` hook (:class:`treeagent.bench.model.BenchFormat`)."""
    from treeagent.bench.sources.registry import BENCH

    try:
        text = decode(fmt, data)
    except ValueError as exc:
        return str(exc)
    return BENCH.get(fmt).check_raw(text)


class RawWriter:
    """Writes payloads of some (format, source) pairs and merges them into the manifest."""

    def __init__(self, raw_dir: str | Path, mode: str) -> None:
        self.root = Path(raw_dir)
        self.mode = mode
        self.files: list[dict[str, Any]] = []
        self.quarantine: list[dict[str, Any]] = []
        self.missing: list[dict[str, Any]] = []
        self.replaced: set[tuple[str, str]] = set()

    def start(self, fmt: str, source: str) -> None:
        """Forget earlier payloads of this source (a re-acquire replaces them)."""
        self.replaced.add((fmt, source))
        for base in (self.root / fmt / source, self.root / QUARANTINE / fmt / source):
            if base.exists():
                shutil.rmtree(base)

    def add(self, fmt: str, source: str, rel: str, data: bytes,
            provenance: dict[str, Any]) -> str | None:
        """Store one payload; returns the quarantine reason, or None when accepted."""
        rel = rel.replace("\\", "/").lstrip("/")
        if ".." in rel.split("/"):
            raise ValueError(f"unsafe payload name {rel!r}")
        reason = check(fmt, data)
        sub = Path(QUARANTINE) / fmt / source / rel if reason else Path(fmt) / source / rel
        dest = self.root / sub
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        entry = {"file": sub.as_posix(), "format": fmt, "source": source,
                 "sha256": sha256(data), "bytes": len(data), "mode": self.mode,
                 "provenance": provenance}
        if reason:
            entry["reason"] = reason
            self.quarantine.append(entry)
        else:
            self.files.append(entry)
        return reason

    def miss(self, fmt: str, source: str, reason: str) -> None:
        self.missing.append({"format": fmt, "source": source, "mode": self.mode,
                             "reason": reason})

    def write(self) -> dict[str, Any]:
        """Merge into ``raw/manifest.json`` (entries of other sources are kept). Writers
        in threads of one process (the acquire flow's tasks) merge one at a time, and the
        file is replaced whole, so a reader never sees half of it."""
        with _MANIFEST_LOCK:
            return self._merge()

    def _merge(self) -> dict[str, Any]:
        old = read_manifest(self.root, required=False, verify=False)
        keep = lambda e: (e["format"], e["source"]) not in self.replaced  # noqa: E731
        manifest = {
            "version": 1,
            "files": sorted([e for e in old["files"] if keep(e)] + self.files,
                            key=lambda e: e["file"]),
            "quarantine": sorted([e for e in old["quarantine"] if keep(e)] + self.quarantine,
                                 key=lambda e: e["file"]),
            "missing": sorted([e for e in old["missing"] if keep(e)] + self.missing,
                              key=lambda e: (e["format"], e["source"], e["reason"])),
        }
        self.root.mkdir(parents=True, exist_ok=True)
        part = self.root / f".{MANIFEST}.{os.getpid()}.part"
        part.write_text(json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False)
                        + "\n", encoding="utf-8")
        os.replace(part, self.root / MANIFEST)
        return manifest


def read_manifest(raw_dir: str | Path, required: bool = True,
                  verify: bool = True) -> dict[str, Any]:
    """``raw/manifest.json``; with ``verify``, every listed payload is checked against
    the disk (:func:`payload_problem`) and one that fails moves to ``quarantine`` with
    its reason, so no reader uses it (the raw gate re-checks every payload itself and
    fails naming it). A manifest that is not valid JSON or not shaped as one raises
    :class:`ArtifactError` naming it."""
    path = Path(raw_dir) / MANIFEST
    if not path.exists():
        if required:
            raise FileNotFoundError(f"{path}: no manifest; run acquire first")
        return {"version": 1, "files": [], "quarantine": [], "missing": []}
    manifest = _load_manifest(path)
    if verify:
        kept, held = [], list(manifest.get("quarantine", []))
        for entry in manifest.get("files", []):
            reason = payload_problem(raw_dir, entry)
            (kept if reason is None else held).append(
                entry if reason is None else {**entry, "reason": reason})
        manifest["files"], manifest["quarantine"] = kept, held
    return manifest


def _load_manifest(path: Path) -> dict[str, Any]:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise ArtifactError(path, f"not valid UTF-8 (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise ArtifactError(path, f"{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}"
                            ) from None
    except OSError as exc:
        raise ArtifactError(path, exc.strerror or str(exc)) from None
    if not isinstance(manifest, dict):
        raise ArtifactError(path, f"not a manifest: a JSON {type(manifest).__name__}, "
                                  "not an object")
    for key in ("files", "quarantine", "missing"):
        entries = manifest.setdefault(key, [])
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise ArtifactError(path, f"not a manifest: {key!r} is not a list of objects")
    return manifest


_SHA_CACHE: dict[tuple[str, int, int], str] = {}


def payload_path(raw_dir: str | Path, file: Any) -> Path:
    """The manifest entry's file under ``raw_dir``; ``ValueError`` when the name is not
    a relative path that stays inside it (``..``, absolute, a link out of it)."""
    if not isinstance(file, str) or not file or "\\" in file or "\0" in file:
        raise ValueError(f"unsafe file name {file!r}")
    rel = Path(file)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"file name outside the raw folder: {file!r}")
    root = Path(raw_dir).resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise ValueError(f"file name leads outside the raw folder: {file!r}")
    return path


def payload_problem(raw_dir: str | Path, entry: dict[str, Any]) -> str | None:
    """Why a listed payload cannot be trusted (a name outside the raw folder, a missing
    or non-regular file, a size or sha256 other than the manifest's), or None."""
    try:
        path = payload_path(raw_dir, entry.get("file"))
        st = path.stat()
    except ValueError as exc:
        return str(exc)
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"
    if not path.is_file():
        return "not a regular file"
    if isinstance(entry.get("bytes"), int) and entry["bytes"] != st.st_size:
        return f"size {st.st_size} differs from the manifest's {entry['bytes']}"
    key = (str(path), st.st_size, st.st_mtime_ns)
    digest = _SHA_CACHE.get(key)
    if digest is None:
        h = hashlib.sha256()
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = _SHA_CACHE[key] = h.hexdigest()
    if digest != entry.get("sha256"):
        return f"sha256 {digest[:12]}... differs from the manifest's {str(entry.get('sha256'))[:12]}..."
    return None


_RENAME = {"license": "document_license", "license_url": "document_license_url"}
_ROW = re.compile(r"^\| `([^`]+)` \| ([^|]+?) \| `([0-9a-f]+)` \| `([^`]+)` \| (.+?) \| (\d+) \| (\d+) \|$")


def mirror_provenance(mirror: Path, fmt: str, folder: str) -> dict[str, dict[str, Any]]:
    """Per-file provenance recorded in the mirror (JSON: PROVENANCE.md table rows;
    HTML/YAML: ``<folder>.manifest.json``), keyed by the path inside the folder."""
    out: dict[str, dict[str, Any]] = {}
    man = mirror / fmt / f"{folder}.manifest.json"
    if man.exists():
        data = json.loads(man.read_text(encoding="utf-8"))
        for f in data.get("files", []):
            info = {_RENAME.get(k, k): v for k, v in f.items() if k != "path" and v is not None}
            out[f["path"]] = {"repo": data.get("repo"), "commit": data.get("commit"), **info}
    prov = mirror / fmt / "PROVENANCE.md"
    if fmt == "json" and prov.exists():
        for line in prov.read_text(encoding="utf-8").splitlines():
            m = _ROW.match(line.strip())
            if m and m.group(1).startswith(folder + "/"):
                request = re.sub(r"<br>", " ", m.group(5)).replace("`", "").strip()
                out[m.group(1)[len(folder) + 1:]] = {
                    "repo": m.group(2).strip(), "commit": m.group(3),
                    "source_path": m.group(4), "request": request,
                    "records": int(m.group(6))}
    return out
