"""Library-user conventions of the command line: caches in the user's cache directory
(``TREEAGENT_CACHE_DIR`` overrides), never the working directory; ``python -m
treeagent``; ``treeagent run -`` reads standard input; ``treeagent run --json``."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

from test_cli_run import DOC, Q, double  # noqa: F401 (fixture)
from treeagent import paths
from treeagent.cli.main import main
from treeagent.llm import models
from treeagent.tokenizers import tokens

ROOT = Path(__file__).parents[1]


def test_cache_dir_is_the_users_not_the_working_directory(tmp_path, monkeypatch):
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv("TREEAGENT_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "treeagent"
    assert models.cache_root() == tmp_path / "xdg" / "treeagent"
    assert work not in models.cache_root().parents
    monkeypatch.setenv("TREEAGENT_CACHE_DIR", "elsewhere")
    assert models.cache_root() == work / "elsewhere"  # as given (absolute)
    assert paths.cache_dir("tiktoken") == work / "elsewhere" / "tiktoken"


def test_tiktoken_files_go_to_the_cache_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TREEAGENT_CACHE_DIR", str(tmp_path / "cache"))
    folder = tokens._tiktoken_cache("cl100k_base")
    assert folder == tmp_path / "cache" / "tiktoken"
    assert len(list(folder.iterdir())) == 1
    assert not (tmp_path / ".cache").exists()


def test_python_dash_m_treeagent_runs_the_command(tmp_path):
    doc = tmp_path / "doc.json"
    doc.write_text(DOC, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "treeagent", "sections", "-", "--budget", "16",
                           "--tokenizer", "cl100k_base", "--json"], input=DOC, text=True,
                          capture_output=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["file"] == "<stdin>" and out["format"] == "json" and len(out["sections"]) > 1
    bad = subprocess.run([sys.executable, "-m", "treeagent", "sections", str(tmp_path / "no")],
                         text=True, capture_output=True, cwd=tmp_path, timeout=120)
    assert bad.returncode == 2 and bad.stderr.startswith("error: ")


def _stdin(monkeypatch, text: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode("utf-8"))))


def test_run_reads_standard_input(monkeypatch, capsys, double):  # noqa: F811
    _stdin(monkeypatch, DOC)
    status = main(["run", "-", "-q", Q, "--tokenizer", "qwen3", "--budget", "24"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.splitlines()[0] == "19"


def test_run_names_standard_input_in_errors(monkeypatch, capsys, double):  # noqa: F811
    _stdin(monkeypatch, '{"a": [1, 2,, 3]}')
    status = main(["run", "-", "-q", Q, "--tokenizer", "qwen3", "--format", "json"])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("error: <stdin>:1:") and len(err.splitlines()) == 1


def test_run_json_prints_one_object(tmp_path, capsys, double):  # noqa: F811
    doc = tmp_path / "stations.json"
    doc.write_text(DOC, encoding="utf-8")
    status = main(["run", str(doc), "-q", Q, "--tokenizer", "qwen3", "--budget", "24",
                   "--agent", "rememr1", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert len(out.splitlines()) == 1
    row = json.loads(out)
    assert row["answer"] == "19" and row["file"] == str(doc) and row["agent"] == "rememr1"
    assert row["calls"] == len(double[0].requests) == 3
    assert row["input_tokens"] > 0 and row["output_tokens"] > 0 and row["error"] is None
    assert "\\boxed{19}" in row["prediction"]
