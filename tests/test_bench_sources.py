"""Source adapters (B.1): sample and mirror modes, quarantine, units that re-parse on
their own, records recovered from unit text alone, stable ids, JS at pinned commits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from treeagent.algorithm.tree import ParseError
from treeagent.bench import sources as S
from treeagent.bench.sources.acquiring import sample_root
from treeagent.bench.sources.common import get_path, path_steps
from treeagent.formats import parse

ALL = list(S.FORMATS)


def _check_units(units, fmt, whole_documents_checked=False):
    """Each unit re-parses on its own, its records come back from its text alone, and
    descriptions are unique within it. ``whole_documents_checked``: JSON/YAML units are
    whole payloads that acquire already parsed with ``treeagent.formats.parse``."""
    n = 0
    for u in units:
        n += 1
        if not (whole_documents_checked and fmt in ("json", "yaml")):
            parse(u.text, fmt)
        again = S.records_from_text(fmt, u.source, u.text, unit_id=u.id)
        assert again == u.records, u.id
        descs = [r.description for r in u.records if r.description]
        assert len(descs) == len(set(descs)), u.id
        for r in u.records:
            assert r.id.startswith(u.id + "#") and r.unit_id == u.id
            assert all(isinstance(v, str | int | float | bool) for v in r.fields.values())
            assert r.fields or not r.description  # an undescribed entity may state nothing
    return n


@pytest.fixture(scope="module")
def sample_raw(tmp_path_factory):
    raw = tmp_path_factory.mktemp("sample") / "raw"
    manifest = S.acquire("sample", formats=ALL, raw_dir=raw, progress=False)
    return raw, manifest


def test_sample_mode_needs_no_mirror_and_no_network(sample_raw):
    raw, manifest = sample_raw
    assert manifest["quarantine"] == []
    assert {e["format"] for e in manifest["files"]} == set(ALL)
    for e in manifest["files"]:
        data = (raw / e["file"]).read_bytes()
        assert e["mode"] == "sample" and e["provenance"]["license"]
        assert (sample_root() / e["file"]).read_bytes() == data  # as shipped, unmodified
    missing = {(m["format"], m["source"]) for m in manifest["missing"]}
    assert ("json", "contracts_finder") in missing and ("json", "gbif") in missing
    for fmt in ALL:
        assert _check_units(S.units(fmt, raw_dir=raw), fmt) > 0


def test_sample_is_small_and_has_a_notice():
    files = [p for p in sample_root().rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 2_000_000
    notice = (sample_root() / "NOTICE.md").read_text()
    prov = json.loads((sample_root() / "provenance.json").read_text())
    for p in files:
        rel = p.relative_to(sample_root()).as_posix()
        if rel not in ("NOTICE.md", "provenance.json"):
            assert rel in prov and prov[rel]["license"], rel
            assert rel.split("/")[1] in notice


def test_ids_and_manifest_are_stable_across_runs(sample_raw, tmp_path):
    raw, _ = sample_raw
    S.acquire("sample", formats=ALL, raw_dir=tmp_path / "raw", progress=False)
    assert (raw / "manifest.json").read_bytes() == (tmp_path / "raw" / "manifest.json").read_bytes()
    for fmt in ALL:
        a = [(u.id, [r.id for r in u.records]) for u in S.units(fmt, raw_dir=raw)]
        b = [(u.id, [r.id for r in u.records]) for u in S.units(fmt, raw_dir=tmp_path / "raw")]
        assert a == b and len({i for i, _ in a}) == len(a)


def test_js_sample_rejections_are_reported_with_reasons(sample_raw):
    raw, _ = sample_raw
    rejections: list[dict] = []
    units = list(S.units("javascript", raw_dir=raw, rejections=rejections))
    reasons = {r["unit"].split("#")[1]: r["reason"] for r in rejections}
    assert "call expression" in reasons["startedAt@L36"]
    assert reasons["serviceAccount@L10"].startswith("sensitive string at $.password")
    u = next(u for u in units if u.provenance["binding"] == "rivers")
    assert u.provenance["line"] == 5 and u.provenance["license"].startswith("MIT")
    assert u.text.startswith("const rivers = [")
    assert [r.kind for r in u.records] == ["river entry"] * 5 + ["object"] * 5


def test_reacquire_replaces_one_source_and_keeps_the_others(sample_raw, tmp_path):
    raw = tmp_path / "raw"
    S.acquire("sample", formats=["json", "yaml"], raw_dir=raw, progress=False)
    m = S.acquire("sample", formats=["json"], sources=["usgs"], raw_dir=raw, limit=1,
                  progress=False)
    assert [e["file"] for e in m["files"] if e["source"] == "usgs"] == \
        ["json/usgs/libcomcat__dataframes_association__2.json"]
    assert len(list((raw / "json" / "usgs").iterdir())) == 1
    assert any(e["format"] == "yaml" for e in m["files"])
    with pytest.raises(ValueError):
        S.acquire("sample", formats=["json"], sources=["nope"], raw_dir=raw, progress=False)
    with pytest.raises(ValueError):
        S.acquire("offline", formats=["json"], raw_dir=raw, progress=False)


# ------------------------------------------------------------------ quarantine


def test_malformed_payloads_are_quarantined_with_reasons(tmp_path):
    mirror = tmp_path / "mirror"
    good = (sample_root() / "json/usgs/libcomcat__dataframes_association__2.json").read_bytes()
    files = {
        "json/usgs/good.json": good,
        "json/usgs/bad.json": b'{"type": "FeatureCollection",\n  "features": [1,,2]}',
        "json/usgs/latin1.json": '{"place": "Bogot\xe1"}'.encode("latin-1"),
        "yaml/apis-guru-openapi-directory/dup/openapi.yaml":
            b"openapi: 3.0.0\npaths: {}\npaths: {}\n",
        "yaml/apis-guru-openapi-directory/notapi/openapi.yaml": b"just: a mapping\n",
        "html/websrc-v1.0-sample/a/empty.html": b"  \n",
    }
    for rel, data in files.items():
        (mirror / rel).parent.mkdir(parents=True, exist_ok=True)
        (mirror / rel).write_bytes(data)
    js = tmp_path / "eslint"
    (js / "lib").mkdir(parents=True)
    (js / "lib" / "broken.js").write_text("const a = [1, 2;\nconst b = {x: 1};\n")
    (js / "lib" / "ok.js").write_text("const b = [{id: 'one1'}, {id: 'two2'}];\n")
    raw = tmp_path / "raw"
    m = S.acquire("mirror", formats=ALL, sources=["usgs", "apis-guru", "websrc", "eslint"],
                  raw_dir=raw, mirror_dir=mirror, js_repos={"eslint": js}, progress=False)
    q = {e["file"]: e["reason"] for e in m["quarantine"]}
    assert q["quarantine/json/usgs/bad.json"].startswith("2:18: ")
    assert q["quarantine/json/usgs/latin1.json"].startswith("not UTF-8")
    assert q["quarantine/yaml/apis-guru/dup/openapi.yaml"].startswith("3:1: ")
    assert "not an OpenAPI" in q["quarantine/yaml/apis-guru/notapi/openapi.yaml"]
    assert "empty HTML" in q["quarantine/html/websrc/a/empty.html"]
    assert q["quarantine/javascript/eslint/lib/broken.js"].startswith("1:")
    for f in q:
        assert (raw / f).exists()  # kept for inspection, never silently dropped
    assert [e["file"] for e in m["files"]] == ["javascript/eslint/lib/ok.js",
                                                "json/usgs/good.json"]
    assert [u.id for u in S.units("javascript", raw_dir=raw)] == \
        ["javascript/eslint/lib/ok.js#b@L1"]
    assert len(list(S.units("json", raw_dir=raw))) == 1


# ------------------------------------------------------------------ mirror ($TREEAGENT_MIRROR)


@pytest.fixture(scope="module")
def mirror_raw(sources, tmp_path_factory):
    if sources is None:
        pytest.skip("no mirror of the real sources (set $TREEAGENT_MIRROR)")
    raw = tmp_path_factory.mktemp("mirror") / "raw"
    return raw, S.acquire("mirror", formats=["json", "yaml", "html"], raw_dir=raw,
                          mirror_dir=sources, progress=False)


@pytest.mark.parametrize("fmt", ["json", "yaml", "html"])
def test_every_mirror_file_yields_units_that_reparse_and_give_their_records(mirror_raw, fmt):
    raw, manifest = mirror_raw
    assert manifest["quarantine"] == []
    files = {e["file"] for e in manifest["files"] if e["format"] == fmt}
    rejections: list[dict] = []
    units = list(S.units(fmt, raw_dir=raw, rejections=rejections))
    assert _check_units(units, fmt, whole_documents_checked=True) == len(units)
    covered = {u.provenance["file"] for u in units} | {r["file"] for r in rejections}
    assert covered == files  # every file gave units or a stated reason
    if fmt != "html":  # one unit per document, the payload itself (parsed at acquire),
        dups = {r["file"] for r in rejections if r["reason"].startswith("duplicate of")}
        assert {u.provenance["file"] for u in units} | dups == files  # or a long JSON list's
        assert all(u.text.encode() == (raw / u.provenance["file"]).read_bytes()  # records
                   for u in units if "record_path" not in u.provenance)
        for u in (u for u in units if "record_path" in u.provenance):
            whole = json.loads((raw / u.provenance["file"]).read_bytes())
            steps = path_steps(u.provenance["record_path"])
            assert json.loads(u.text) == get_path(whole, ".".join(map(str, steps)))
    assert all(u.flags == ("substitute",) for u in units if u.source in ("swde", "readability", "wikitables"))


def test_mirror_provenance_is_recorded(mirror_raw):
    _, manifest = mirror_raw
    by = {e["file"]: e["provenance"] for e in manifest["files"]}
    p = by["json/usgs/libcomcat__dataframes_association__5.json"]
    assert p["repo"] == "usgs/libcomcat" and p["commit"].startswith("8d941dec29f0")
    assert "starttime=1727-11-10" in p["request"]
    p = by["yaml/apis-guru/color.pizza/1.0.0/openapi.yaml"]
    assert p["document_license"] == "MIT" and p["license"].startswith("CC0")


# ------------------------------------------------------------------ JS from git


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def js_repo(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "config", "user.email", "t@example.org")
    _git(repo, "config", "user.name", "t")
    (repo / "LICENSE").write_text("MIT License\n\nPermission is hereby granted, free of charge")
    src = sample_root() / "javascript/treeagent/catalog.js"
    (repo / "lib").mkdir()
    (repo / "lib/catalog.js").write_bytes(src.read_bytes())
    (repo / "node_modules").mkdir()
    (repo / "node_modules/dep.js").write_text("const x = [{a: 1}];\n")
    (repo / "lib/app.min.js").write_text("var a=[{b:1}];\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "lib/catalog.js").write_text("const changed = [{id: 'later'}, {id: 'after'}];\n")
    _git(repo, "commit", "-q", "-am", "two")
    return repo, first


@pytest.mark.parametrize("mode", ["mirror", "live"])
def test_js_is_read_at_the_pinned_commit(js_repo, tmp_path, mode):
    repo, first = js_repo
    spec = {"commit": first[:12], **({"path": repo} if mode == "mirror" else {"url": str(repo)})}
    raw = tmp_path / "raw"
    m = S.acquire(mode, formats=["javascript"], sources=["webpack"], raw_dir=raw,
                  js_repos={"webpack": spec}, cache_dir=tmp_path / "cache", progress=False)
    (entry,) = m["files"]  # vendored and minified files are skipped
    assert entry["file"] == "javascript/webpack/lib/catalog.js"
    assert entry["provenance"]["commit"] == first and entry["provenance"]["license"] == "MIT"
    units = list(S.units("javascript", raw_dir=raw))
    assert [u.provenance["binding"] for u in units] == ["rivers", "keyboardShortcuts",
                                                        "renderDefaults", "siUnits"]
    assert all(u.provenance["commit"] == first for u in units)
    _check_units(units, "javascript")


def test_js_absent_commit_is_reported_missing(js_repo, tmp_path):
    repo, _ = js_repo
    m = S.acquire("mirror", formats=["javascript"], sources=["lodash"], raw_dir=tmp_path / "raw",
                  js_repos={"lodash": repo}, progress=False)
    (miss,) = m["missing"]
    assert m["files"] == [] and "a666ba591064 absent" in miss["reason"]


def test_js_unit_texts_parse_alone_even_with_several_declarators():
    text = "const a = [{id: 'one'}, {id: 'two'}], b = {k: {v: 1}, l: {v: 2}};\n"
    from treeagent.bench.sources.js_records import file_candidates

    cands = list(file_candidates(text, lambda *a: None))
    assert [c.text for c in cands] == ["const a = [{id: 'one'}, {id: 'two'}]",
                                       "{k: {v: 1}, l: {v: 2}}"]
    from treeagent.formats import javascript

    for c in cands:  # each unit is a static initializer on its own
        javascript.parse(c.text)
    with pytest.raises(ParseError):  # a bare assignment is none (whole files still section)
        javascript.parse("b = {k: 1};")
