"""Without the ``local`` extra (torch, transformers) the local engine and the model
tokenizers fail with one line naming the extra (``treeagent run``/``plan``: exit 2), and a
derived model folder whose writing fails leaves no half-written folder behind."""

from __future__ import annotations

import importlib.util

import pytest

from treeagent.cli.main import main
from treeagent.llm import models

REAL_FIND_SPEC = importlib.util.find_spec


@pytest.fixture
def no_torch(monkeypatch):
    """torch looks uninstalled to ``importlib.util.find_spec`` (what the check reads)."""
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else REAL_FIND_SPEC(name, *a))


def test_the_transformers_engine_names_the_extra(no_torch):
    from treeagent.llm.transformers_engine import TransformersEngine

    with pytest.raises(models.ModelError, match=r"torch not installed.*treeagent\[local\]"):
        TransformersEngine()


def test_run_without_the_extra_is_one_line_and_exit_2(no_torch, tmp_path, capsys):
    doc = tmp_path / "d.json"
    doc.write_text('{"a": 1}', encoding="utf-8")
    status = main(["run", str(doc), "-q", "What is a?", "--tokenizer", "qwen3"])
    out, err = capsys.readouterr()
    assert status == 2
    assert err.count("\n") == 1 and err.startswith("error: ") and "'local' extra" in err
    assert "Traceback" not in err and out == ""


def test_a_failed_derived_folder_leaves_nothing_behind(tmp_path):
    target = tmp_path / "models" / "m"

    def write(tmp):
        (tmp / "part").write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        models._materialize(target, write)
    assert not target.exists() and list((tmp_path / "models").iterdir()) == []
