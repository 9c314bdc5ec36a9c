"""dvc.yaml deps follow the code (issue 19): every module a stage's flow can import is a
dep of that stage, so a change to it makes the stage stale, and a module no flow but the
report's imports (report/render.py) makes only the report stale.

The imports are read statically (ast): module-level and function-level ``import``s,
relative imports, parent packages (they run on import), and the registries' lazy
``"treeagent.x:attr"`` targets. This over-approximates what a run executes, which is the
safe side for a dep list: at worst a stage reruns when it need not.
"""

from __future__ import annotations

import ast
import itertools
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TARGET = re.compile(r"^(treeagent(?:\.\w+)*)(?::[\w.]+)?$")


def module_file(name: str) -> Path | None:
    p = SRC.joinpath(*name.split("."))
    if (p / "__init__.py").is_file():
        return p / "__init__.py"
    return p.with_suffix(".py") if p.with_suffix(".py").is_file() else None


def imported_files(path: Path) -> set[Path]:
    """Files of the treeagent modules ``path`` imports (with their parent packages)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package: list[str] = []
    if path.is_relative_to(SRC):
        package = list(path.relative_to(SRC).with_suffix("").parts[:-1])
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            names.update(f"{module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = TARGET.match(node.value)
            if m and "." in m.group(1):
                names.add(m.group(1))
    files: set[Path] = set()
    for name in names:
        parts = name.split(".")
        if parts[0] != "treeagent":
            continue
        for i in range(1, len(parts) + 1):
            found = module_file(".".join(parts[:i]))
            if found:
                files.add(found)
    return files


def closure(flow: Path) -> set[Path]:
    seen: set[Path] = set()
    todo = [flow, ROOT / "flows" / "_common.py"]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo += imported_files(f) - seen
    return seen


def stages() -> dict[str, dict]:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]


def flow_of(stage: dict) -> Path:
    m = re.search(r"python (flows/\w+\.py)", stage["cmd"])
    assert m, stage["cmd"]
    return ROOT / m.group(1)


def covered(path: Path, deps: list[str]) -> bool:
    rel = path.relative_to(ROOT).as_posix()
    return any(rel == d or rel.startswith(d.rstrip("/") + "/") for d in deps)


def test_every_module_a_stage_can_import_is_one_of_its_deps():
    missing = {}
    for name, stage in stages().items():
        deps = [d for d in stage["deps"] if "${" not in d]
        lost = sorted(p.relative_to(ROOT).as_posix() for p in closure(flow_of(stage))
                      if not covered(p, deps))
        if lost:
            missing[name] = lost
    assert not missing, f"dvc.yaml deps miss modules their flow imports: {missing}"


def test_stages_running_agents_or_reading_the_sample_depend_on_that_data():
    for name, stage in stages().items():
        deps = stage["deps"]
        if "src/treeagent/agents" in deps:  # templates are package data the agents read
            assert "src/treeagent/prompts" in deps, name
    assert "src/treeagent/samples/bench" in stages()["acquire"]["deps"]  # sample mode


def stale_after_touching(rel: str) -> set[str]:
    path = ROOT / rel
    return {name for name, stage in stages().items()
            if covered(path, [d for d in stage["deps"] if "${" not in d])}


def test_touching_sectioning_makes_every_evaluate_stale():
    assert {"evaluate", "evidence", "plan"} <= stale_after_touching("src/treeagent/sectioning.py")


def test_touching_the_report_renderer_makes_only_the_report_stale():
    assert stale_after_touching("src/treeagent/report/render.py") == {"report"}
    assert stale_after_touching("src/treeagent/report/figures.py") == {"report"}
    assert "evaluate" not in stale_after_touching("src/treeagent/report/tables.py")


def test_the_closure_sees_function_level_and_registry_imports(tmp_path):
    flow = tmp_path / "flow.py"
    flow.write_text("def f():\n    from treeagent.report import render\n"
                    "TARGET = 'treeagent.sectioning:section'\n", encoding="utf-8")
    files = {p.relative_to(SRC).as_posix() for p in imported_files(flow)}
    assert {"treeagent/report/render.py", "treeagent/report/__init__.py",
            "treeagent/sectioning.py", "treeagent/__init__.py"} <= files


def _paths(stage: dict, keys: tuple[str, ...], params: dict) -> list[str]:
    """A stage's paths under ``keys``, a matrix stage's for every item of ``params``."""
    raw = [e if isinstance(e, str) else next(iter(e))
           for k in keys for e in stage.get(k) or []]
    axes = {k: (_param(params, v[2:-1]) if isinstance(v, str) else v)
            for k, v in (stage.get("matrix") or {}).items()}
    items = [dict(zip(axes, vs)) for vs in itertools.product(*axes.values())]
    return sorted({re.sub(r"\$\{item\.(\w+)\}", lambda m, i=i: str(i[m.group(1)]), p)
                   for p in raw for i in items})


def _param(params: dict, key: str):
    for part in key.split("."):
        params = params[part]
    return params


def test_dvc_sees_no_run_varying_file_and_every_output():
    """A stage depending on the ``runs`` folder hashes what DVC sees in it: the traces
    and timings written beside the evaluate stages' outputs (call latencies, cache hits,
    seconds) are hidden by .dvcignore, or dvc.lock changes in every run; no output or
    dependency is hidden (DVC would refuse the stage)."""
    import pytest

    repo = pytest.importorskip("dvc.repo").Repo(str(ROOT))
    params = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))

    def hidden(rel: str) -> bool:
        return repo.dvcignore.is_ignored_file(str(ROOT / rel))

    runs = [f"runs/{a}/{m}" for a in params["evaluate"]["agents"]
            for m in params["evaluate"]["methods"]]
    assert runs and "runs" in stages()["report"]["deps"]
    assert all(hidden(f"{r}/{name}") for r in runs
               for name in ("trace.jsonl", "timing.json", "shard-0/trace.jsonl"))
    seen = [p for s in stages().values()
            for p in _paths(s, ("deps", "outs", "metrics", "plots"), params)
            if hidden(p)]
    assert not seen, f"hidden from DVC by .dvcignore: {seen}"
