"""One run's outputs (agents/evaluate.write_run, what the evaluate flow writes):
timing.json keeps the wall-clock seconds, predictions.parquet drops them, summary.json
totals the rows."""

from __future__ import annotations

import json

import pyarrow.parquet as pq

from treeagent.agents.evaluate import write_run


def _row(example_id, prediction, calls, tokens_in, tokens_out, seconds, error=None, clipped=0):
    return {"example_id": example_id, "prediction": prediction, "calls": calls,
            "input_tokens": tokens_in, "output_tokens": tokens_out, "seconds": seconds,
            "error": error, "clipped": clipped}


def test_write_run_outputs_and_summary(tmp_path):
    rows = [_row("a", '["x"]', 3, 100, 7, 1.25, clipped=2),
            _row("b", None, 0, 0, 0, 0.5, error="ValueError: bad"),
            _row("c", '["y"]', 2, 40, 5, 0.0004, clipped=None)]
    summary = write_run(rows, tmp_path, agent="memagent", method="flat", model="m",
                        model_revision="r1", pinned_revision="auto")
    expected = ('{\n  "agent": "memagent",\n  "method": "flat",\n  "model": "m",\n'
                '  "model_revision": "r1",\n  "pinned_revision": "auto",\n  "examples": 3,\n'
                '  "unavailable": 1,\n  "errors": 1,\n  "calls": 5,\n  "input_tokens": 140,\n'
                '  "output_tokens": 12,\n  "clipped": 2,\n  "clipped_examples": 1\n}\n')
    assert (tmp_path / "summary.json").read_text(encoding="utf-8") == expected
    assert summary == json.loads(expected)
    assert list(summary) == list(json.loads(expected))
    assert (tmp_path / "timing.json").read_text(encoding="utf-8") == (
        '{\n "seconds": 1.75,\n "examples": {\n  "a": 1.25,\n  "b": 0.5,\n  "c": 0.0004\n }\n}\n')
    table = pq.read_table(tmp_path / "predictions.parquet").to_pylist()
    assert [r["example_id"] for r in table] == ["a", "b", "c"]
    assert [r["seconds"] for r in table] == [None, None, None]
    assert [r["clipped"] for r in table] == [2, 0, None]
    assert rows[0]["seconds"] == 1.25  # the caller's rows are left as they were
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "predictions.parquet", "summary.json", "timing.json"]
