"""Great Expectations suites run over pandas DataFrames: the machinery every gate shares.

:func:`check` runs a gate's :class:`Suite` list in a fresh ephemeral GX context
(:func:`gx_context`, the one way a context is made), writes the gate's results to
``reports/validation/<gate>.json`` (pass or fail; run-dependent ids and times removed
so reruns write identical bytes) and raises :class:`GateError` naming each failed
expectation. Great Expectations is imported lazily (2-4 s). The gates' suites are
defined with what they check: :mod:`treeagent.pipeline.gates` (raw, evidence, scores) and
:mod:`treeagent.bench.examples_gate` (examples).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FunctionType
from typing import Any

VALIDATION_DIR = Path("reports") / "validation"


class GateError(RuntimeError):
    """A gate failed. ``failures`` holds one line per failed expectation."""

    def __init__(self, gate: str, failures: list[str], path: Path) -> None:
        self.gate, self.failures, self.path = gate, failures, path
        lines = "\n  ".join(failures)
        super().__init__(f"gate {gate!r} failed ({len(failures)} expectation(s)); results in "
                         f"{path}:\n  {lines}")


@dataclass
class Suite:
    """One GX suite over one DataFrame: ``expectations`` are GX expectation objects, or
    functions ``gx.expectations -> expectation | list`` called once a GX context exists
    (so the caller need not import GX)."""

    name: str
    frame: Any  # pandas.DataFrame
    expectations: list[Any] = field(default_factory=list)
    labels: str | None = None  # column whose values name unexpected rows in messages


# --------------------------------------------------------------------------- running

def gx_context() -> Any:
    """A fresh ephemeral GX context, progress bars off: the one way every gate and the
    build's examples suite get one."""
    import great_expectations as gx

    ctx = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        ctx.variables.progress_bars = ProgressBarsConfig(globally=False)
    except Exception:  # noqa: BLE001 - cosmetic only
        pass
    return ctx


def _clean(value: Any) -> Any:
    """JSON-safe copy: NaN -> None, run ids/times dropped, tuples -> lists."""
    volatile = {"run_id", "validation_time", "run_time", "batch_id", "active_batch_definition",
                "checkpoint_id", "validation_id", "id", "batch_spec", "batch_markers"}
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if k not in volatile}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        try:
            return _clean(value.item())
        except (TypeError, ValueError):
            return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _short(values: Any, limit: int = 5) -> Any:
    values = list(values)
    return values if len(values) <= limit else f"<{len(values)} values>"


def _result_json(result: Any) -> dict[str, Any]:
    doc = _clean(result.to_json_dict())
    kwargs = doc.get("expectation_config", {}).get("kwargs", {})
    if "value_set" in kwargs:
        kwargs["value_set"] = _short(kwargs["value_set"], 20)
    return doc


def _describe(suite: Suite, result: Any) -> str:
    cfg = result.expectation_config
    kwargs = {k: v for k, v in cfg.kwargs.items() if k not in ("batch_id", "value_set")}
    if "value_set" in cfg.kwargs:
        kwargs["value_set"] = _short(cfg.kwargs["value_set"])
    args = ", ".join(f"{k}={v}" for k, v in kwargs.items())
    res = result.result or {}
    detail = ""
    if res.get("unexpected_count") is not None:
        sample = res.get("partial_unexpected_list") or []
        index = res.get("partial_unexpected_index_list") or []
        if suite.labels and index and suite.labels in suite.frame.columns:
            sample = [suite.frame[suite.labels].iloc[i] for i in index if i < len(suite.frame)]
        sample = [_clean(v) for v in sample[:5]]
        detail = f": {res['unexpected_count']} unexpected, e.g. {sample}"
    elif "observed_value" in res:
        detail = f": observed {_clean(res['observed_value'])}"
    exc = (result.exception_info or {}).get("exception_message")
    if exc:
        detail += f" (error: {exc})"
    return f"{suite.name}: {cfg.type}({args}){detail}"


def check(gate: str, suites: Sequence[Suite], out_dir: str | os.PathLike[str] = VALIDATION_DIR
          ) -> dict[str, Any]:
    """Run ``suites``, write ``<out_dir>/<gate>.json`` and return its content; raise
    :class:`GateError` if any expectation failed."""
    import great_expectations as gx

    ctx = gx_context()
    source = ctx.data_sources.add_pandas(f"gate_{gate}")
    doc: dict[str, Any] = {"gate": gate, "success": True, "suites": []}
    failures: list[str] = []
    for suite in suites:
        batch = (source.add_dataframe_asset(suite.name)
                 .add_batch_definition_whole_dataframe("all")
                 .get_batch(batch_parameters={"dataframe": suite.frame}))
        gx_suite = gx.ExpectationSuite(name=f"{gate}.{suite.name}")
        for item in suite.expectations:
            made = item(gx.expectations) if isinstance(item, FunctionType) else item
            for e in made if isinstance(made, list) else [made]:
                if getattr(e, "id", None):  # bound to another suite: add a fresh copy
                    e = e.copy(update={"id": None})
                gx_suite.add_expectation(e)
        result = batch.validate(gx_suite, result_format="SUMMARY")
        failed = [_describe(suite, r) for r in result.results if not r.success]
        failures += failed
        doc["suites"].append({
            "name": gx_suite.name, "rows": int(len(suite.frame)),
            "success": bool(result.success), "failed": failed,
            "statistics": _clean(result.statistics),
            "results": [_result_json(r) for r in result.results],
        })
    doc["success"] = not failures
    doc["failed"] = failures
    out = Path(out_dir) / f"{gate}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, out)
    if failures:
        raise GateError(gate, failures, out)
    return doc
