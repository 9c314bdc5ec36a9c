"""``treeagent bench export`` (JSONL, Hugging Face datasets + card) and the empty-cell
check of ``bench build``/``export``, on a build of the shipped real sample."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from treeagent.bench import shortfall
from treeagent.cli.main import main

BUILD = ["bench", "build", "--preset", "demo", "--lengths", "demo-4K",
         "--tasks", "numeric_extremum"]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """JSON fills its cell from the sample; the sample's HTML (three WebSRC pages and one
    Wikipedia table, none with a numeric column) holds no records a numeric extremum can
    ask about, so that format stays empty."""
    root = tmp_path_factory.mktemp("bench")
    argv = BUILD + ["--formats", "json", "html", "--raw", str(root / "raw"),
                    "--out", str(root / "validated")]
    err = io.StringIO()  # capsys is function-scoped
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        status = main(argv)
    return root, status, err.getvalue()


def parquet_rows(root: Path, fmt: str) -> dict[str, dict]:
    return {r["id"]: r for r in pq.read_table(root / "validated" / "examples"
                                               / f"{fmt}.parquet").to_pylist()}


def test_build_with_an_empty_format_says_why_and_fails(built):
    root, status, err = built
    assert status == 1
    assert "error: html: 0 examples (all 1 requested cells empty)" in err
    assert "the sources hold no records these tasks can ask about" in err and "--allow-empty" in err
    assert len(parquet_rows(root, "json")) == 1


def test_build_allow_empty_exits_zero(built, capsys):
    root, _, _ = built
    status = main(BUILD + ["--formats", "html", "--raw", str(root / "raw"),
                           "--no-acquire", "--out", str(root / "js-only"), "--allow-empty"])
    err = capsys.readouterr().err
    assert status == 0 and "warning: html: 0 examples" in err


def check_against_parquet(rows: list[dict], stored: dict[str, dict], reference_is_json: bool):
    assert sorted(r["id"] for r in rows) == sorted(stored)
    for r in rows:
        s = stored[r["id"]]
        assert (r["question"], r["task"], r["length"], r["format"], r["bucket"]) == (
            s["question"], s["task"], s["length"], s["format"], s["bucket"])
        ref = json.loads(r["reference"]) if reference_is_json else r["reference"]
        assert ref == json.loads(s["answer"])
        assert hashlib.sha256(r["context"].encode()).hexdigest() == s["context_hash"]
        assert r["tokens_qwen3"] == s["tokens_qwen3"]
        files = {p["file"] for p in r["provenance"]}
        # source ids are unit ids (a file, or a file#record path where a long list
        # response was cut into records): each is one of the context's units, and the
        # file holding it is credited
        assert set(s["source_ids"]) <= set(s["unit_ids"])
        assert {u.split("#", 1)[0] for u in s["source_ids"]} <= files
        assert all(p["license"] and p["source"] for p in r["provenance"])


def test_jsonl_export_matches_the_parquet_rows(built, tmp_path, capsys):
    root, _, _ = built
    out = tmp_path / "bench.jsonl"
    status = main(["bench", "export", str(out), "--validated", str(root / "validated"),
                   "--formats", "json"])
    assert status == 0, capsys.readouterr().err
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    check_against_parquet(rows, parquet_rows(root, "json"), reference_is_json=False)


def test_export_of_an_empty_format_fails_unless_allowed(built, tmp_path, capsys):
    root, _, _ = built
    argv = ["bench", "export", str(tmp_path / "x.jsonl"), "--validated",
            str(root / "validated"), "--formats", "json", "html"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "html: 0 examples" in err and "the sources hold no records these tasks can ask about" in err
    assert not (tmp_path / "x.jsonl").exists()
    assert main(argv + ["--allow-empty"]) == 0
    lines = (tmp_path / "x.jsonl").read_text(encoding="utf-8").splitlines()
    assert {json.loads(line)["format"] for line in lines} == {"json"}


def test_datasets_export_loads_back_and_carries_a_card(built, tmp_path, capsys):
    from datasets import load_from_disk

    root, _, _ = built
    dest = tmp_path / "hf"
    status = main(["bench", "export", str(dest), "--to", "datasets", "--validated",
                   str(root / "validated"), "--formats", "json", "html",
                   "--allow-empty"])
    assert status == 0, capsys.readouterr().err
    ds = {f: load_from_disk(str(dest / f)) for f in ("json", "html")}  # one config each
    assert set(ds["json"]) == {"test"} and len(ds["html"]["test"]) == 0
    rows = list(ds["json"]["test"])
    check_against_parquet(rows, parquet_rows(root, "json"), reference_is_json=True)
    card = (dest / "README.md").read_text(encoding="utf-8")
    assert card.startswith("---\nlicense: other\n")
    assert "| `json` | `test` | 1 |" in card
    for r in rows:
        for p in r["provenance"]:
            assert f"`{p['file']}` | {p['license']} |" in card
            assert f"{p['repo']}@{p['commit'][:12]}" in card


def test_report_names_every_empty_cell_with_its_reason():
    inventory = {
        "counts": {"yaml": {"one_field": {"8K": 0, "16K": 0}},
                   "html": {"one_field": {"8K": 3, "16K": 0},
                            "two_fields": {"8K": 1, "16K": 1}}},
        "formats": {"yaml": {"notes": {"no anchor units fit the smallest bucket": 1}}},
    }
    rejections = [{"format": "html", "task": "one_field", "length": 16384,
                   "reason": "answer", "detail": "two records match"},
                  {"format": "html", "task": "one_field", "length": 8192,
                   "reason": "length", "detail": "kept cell: not counted"}]
    lines = shortfall.report(inventory, rejections)
    assert lines == [
        "yaml: 0 examples (all 2 requested cells empty): "
        "no anchor units fit the smallest bucket (1x)",
        "html: 1 of 4 requested cells empty (one_field@16K): 1 candidate(s) rejected "
        "for answer (e.g. two records match)",
    ]
    assert shortfall.report({"counts": {"json": {"one_field": {"8K": 1}}}}, []) == []


def test_jsonl_to_a_closed_pipe_ends_quietly(built):
    root, _, _ = built
    proc = subprocess.Popen([sys.executable, "-m", "treeagent.cli.main", "bench", "export", "-",
                             "--validated", str(root / "validated"), "--formats", "json"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "error" not in err
