"""Hostile source data: alias bombs are refused in bounded time
and memory with a reason, and ``raw/manifest.json`` is verified against the disk."""

from __future__ import annotations

import json
import resource
import time

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from treeagent.bench import sources as S
from treeagent.bench.sources import raw as R
from treeagent.bench.sources import yaml_records as Y
from treeagent.bench.sources.acquiring import sample_root

OPENAPI = "openapi: 3.0.0\ninfo: {title: t, version: '1'}\n"


def _laughs(levels: int, fan: int = 9) -> str:
    """Billion laughs: each anchor is a list of ``fan`` aliases of the one before."""
    lines = [OPENAPI.rstrip("\n"), "x0: &a0 [" + ", ".join(["lol"] * fan) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fan) + "]")
    lines += ["paths:", "  /pets:", "    get:", f"      summary: *a{levels - 1}",
              "      operationId: listPets"]
    return "\n".join(lines) + "\n"


def _merge_bomb(levels: int) -> str:
    """Merge keys doubling a mapping's pairs at every level (PyYAML merges copy pairs)."""
    lines = [OPENAPI.rstrip("\n"), "m0: &m0 {k: 1, j: 2}"]
    for i in range(1, levels):
        lines.append(f"m{i}: &m{i} {{<<: [*m{i - 1}, *m{i - 1}], n{i}: {i}}}")
    lines += ["paths:", "  /pets:", "    get:", f"      x-extra: *m{levels - 1}"]
    return "\n".join(lines) + "\n"


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@pytest.mark.parametrize("text", [_laughs(20), _merge_bomb(40)], ids=["laughs", "merges"])
def test_alias_bombs_are_refused_in_bounded_time_and_memory(text):
    assert len(text) < 2500
    before, t0 = _peak_mb(), time.perf_counter()
    with pytest.raises(Y.AliasBudgetError, match=r"^\d+:\d+: aliases expand"):
        Y.records(text, "u")
    assert time.perf_counter() - t0 < 5
    assert _peak_mb() - before < 200


def test_recursive_alias_is_refused():
    with pytest.raises(Y.AliasBudgetError, match="^3:4: recursive alias"):
        Y.load(OPENAPI + "x: &a [*a]\npaths: {}\n")


def test_aliases_under_the_budget_load_as_references():
    text = OPENAPI + "s: &s {type: string}\na: *s\nb: *s\nc: {<<: *s, format: uuid}\n"
    doc = Y.load(text)
    assert doc["a"] is doc["b"] is doc["s"]  # one object, never copied
    assert doc["c"] == {"type": "string", "format": "uuid"}
    with pytest.raises(Y.AliasBudgetError):  # the same document at a tiny budget
        Y.load(OPENAPI + "s: &s [1, 2, 3]\n" + "".join(f"a{i}: *s\n" for i in range(30)),
               node_budget=10)


_scalars = st.one_of(st.integers(-10**6, 10**6), st.booleans(), st.none(),
                     st.text("abcxyz -:", max_size=8))
_docs = st.recursive(_scalars, lambda kids: st.one_of(
    st.lists(kids, max_size=4), st.dictionaries(st.text("abcdef", min_size=1, max_size=4),
                                                kids, max_size=4)), max_leaves=25)


@settings(max_examples=60, deadline=None)
@given(_docs)
def test_loader_agrees_with_safe_load_on_alias_free_documents(doc):
    text = yaml.safe_dump({"doc": doc})
    assert Y.load(text) == yaml.safe_load(text)


def test_alias_bomb_payload_is_quarantined_at_acquire_and_skipped_by_units(tmp_path):
    mirror = tmp_path / "mirror"
    bomb = mirror / "yaml/apis-guru-openapi-directory/bomb/openapi.yaml"
    bomb.parent.mkdir(parents=True)
    bomb.write_text(_laughs(20))
    raw = tmp_path / "raw"
    m = S.acquire("mirror", formats=["yaml"], sources=["apis-guru"], raw_dir=raw,
                  mirror_dir=mirror, progress=False)
    (entry,) = m["quarantine"]
    assert "aliases expand" in entry["reason"] and (raw / entry["file"]).exists()
    assert list(S.units("yaml", raw_dir=raw)) == []


# ------------------------------------------------------------------ manifest (item 8)


@pytest.fixture()
def sample_json_raw(tmp_path):
    raw = tmp_path / "raw"
    m = S.acquire("sample", formats=["json"], sources=["usgs"], raw_dir=raw, progress=False)
    assert m["files"]
    return raw


def _edit_manifest(raw, change):
    path = raw / R.MANIFEST
    m = json.loads(path.read_text())
    change(m["files"][0])
    path.write_text(json.dumps(m))
    return m["files"][0]["file"]


def test_sha256_mismatch_is_quarantined_with_its_reason(sample_json_raw):
    raw = sample_json_raw
    first = json.loads((raw / R.MANIFEST).read_text())["files"][0]["file"]
    data = (raw / first).read_bytes()
    (raw / first).write_bytes(data.replace(b"1", b"2", 1))  # same size, other bytes
    m = S.manifest(raw)
    held = {e["file"]: e["reason"] for e in m["quarantine"]}
    assert "sha256" in held[first] and first not in {e["file"] for e in m["files"]}
    rejected: list[dict] = []
    assert all(u.provenance["file"] != first
               for u in S.units("json", raw_dir=raw, rejections=rejected))


@pytest.mark.parametrize("name", ["../outside.json", "/etc/hostname", "json/../../outside.json",
                                  "json\\..\\x.json", 7])
def test_paths_outside_the_raw_folder_are_never_read(sample_json_raw, name):
    raw = sample_json_raw
    outside = raw.parent / "outside.json"
    outside.write_text('{"secret": 1}')
    _edit_manifest(raw, lambda e: e.update(file=name))
    m = S.manifest(raw)
    held = [e for e in m["quarantine"] if e["file"] == name]
    assert held and ("outside" in held[0]["reason"] or "unsafe" in held[0]["reason"])
    assert all(e["file"] != name for e in m["files"])


def test_a_link_out_of_the_raw_folder_is_refused(sample_json_raw):
    raw = sample_json_raw
    outside = raw.parent / "outside.json"
    outside.write_text('{"secret": 1}')
    (raw / "json/usgs/link.json").symlink_to(outside)
    _edit_manifest(raw, lambda e: e.update(file="json/usgs/link.json",
                                            sha256=R.sha256(outside.read_bytes())))
    held = {e["file"]: e["reason"] for e in S.manifest(raw)["quarantine"]}
    assert "outside the raw folder" in held["json/usgs/link.json"]


def test_intact_sample_passes_verification(sample_json_raw):
    m = S.manifest(sample_json_raw)
    assert m["quarantine"] == [] and m["files"]
    assert all((sample_root() / e["file"]).exists() for e in m["files"])
