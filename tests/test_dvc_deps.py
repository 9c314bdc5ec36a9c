"""dvc.yaml deps follow the code: every module a stage's flow can import is a dep of
that stage, so a change to it makes the stage stale, and no other module is, so a change
elsewhere does not (a prompt edit reruns no acquisition; a module only the report's flow
imports, report/render.py, makes only the report stale).

The imports are read statically (ast): module-level and function-level ``import``s,
relative imports, parent packages (they run on import) and lazy ``"treeagent.x:attr"``
targets. Two kinds of import happen on first use and count only where that use is: a
package ``__init__``'s ``__getattr__`` (for a module that uses a name the package does
not bind) and a registry's built-in records (for a module that reads records, not only
names, of that registry). This over-approximates what a run executes, which is the safe
side for a dep list: at worst a stage reruns when it need not.
"""

from __future__ import annotations

import ast
import functools
import itertools
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
TARGET = re.compile(r"^(treeagent(?:\.\w+)*)(?::[\w.]+)?$")


def module_file(name: str) -> Path | None:
    """The source of a treeagent module: its ``.py``, or the ``.pyx`` of a compiled one."""
    p = SRC.joinpath(*name.split("."))
    if (p / "__init__.py").is_file():
        return p / "__init__.py"
    for source in (p.with_suffix(".py"), p.with_suffix(".pyx")):
        if source.is_file():
            return source
    return None


REGISTRY = SRC / "treeagent" / "registry.py"
NAMES_ONLY = {"names", "builtin_names", "kind", "group", "register"}
"""Registry attributes that read names only: a lazy registry imports no record for them."""
NO_STAGE_CALLS = {SRC / "treeagent" / "pipeline" / "config.py": {"_demo", "_paper"}}
"""Functions no stage calls, whose registry reads therefore load no record in a stage:
the presets (``python -m treeagent.pipeline.config write``) read the agents' paper checkpoints; a
stage loads params.yaml, whose validation reads names only
(test_loading_params_imports_no_agent checks it)."""


@functools.cache
def registries() -> dict[str, tuple[set[str], bool]]:
    """Each registry of treeagent.registry: its built-in targets (``module[:attr]``
    strings) and whether they are imported to learn the names (a sequence of targets,
    not a name -> target mapping)."""
    found: dict[str, tuple[set[str], bool]] = {}
    for node in ast.parse(REGISTRY.read_text(encoding="utf-8")).body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) else None)
        call = node.value if isinstance(node, ast.AnnAssign | ast.Assign) else None
        if (isinstance(target, ast.Name) and isinstance(call, ast.Call)
                and isinstance(call.func, ast.Name) and call.func.id == "Registry"):
            names = {m.group(1) for c in ast.walk(call) if isinstance(c, ast.Constant)
                     and isinstance(c.value, str) and (m := TARGET.match(c.value))
                     and "." in m.group(1)}
            eager = len(call.args) > 1 and isinstance(call.args[1], ast.Tuple | ast.List)
            found[target.id] = (names, eager)
    return found


def _lazy_getattr(tree: ast.Module) -> ast.FunctionDef | None:
    """A package's module-level ``__getattr__`` (attributes imported on first use)."""
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef)
                 and n.name == "__getattr__"), None)


def _bound(tree: ast.Module) -> set[str]:
    """The names a module binds when it runs (its own, not the lazy ones)."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
    return names


def _dotted(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _expand(dotted: str | None, aliases: dict[str, str]) -> str | None:
    """``alias.rest`` with the alias replaced by the module it names (None: no alias)."""
    if not dotted:
        return None
    head, _, rest = dotted.partition(".")
    return (aliases[head] + (f".{rest}" if rest else "")) if head in aliases else None


def _files_of(names: set[str]) -> set[Path]:
    """Files of the treeagent modules ``names`` (a module with its parent packages)."""
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


def _module_names(tree: ast.AST, package: list[str], skip: ast.AST | None = None,
                  strings: bool = True) -> tuple[set[str], dict[str, str]]:
    """Modules named by ``tree``'s imports (and lazy ``"treeagent.x:attr"`` strings),
    and the local names bound to modules (``alias -> module``); ``skip``'s body not."""
    names: set[str] = set()
    aliases: dict[str, str] = {}
    skipped = set(map(id, ast.walk(skip))) if skip is not None else set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            for a in node.names:
                names.add(a.name)
                if a.asname:
                    aliases[a.asname] = a.name
                else:
                    aliases[a.name.split(".")[0]] = a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            names.add(module)
            for a in node.names:
                names.add(f"{module}.{a.name}")
                aliases[a.asname or a.name] = f"{module}.{a.name}"
        elif strings and isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = TARGET.match(node.value)
            if m and "." in m.group(1):
                names.add(m.group(1))
    return names, aliases


@functools.cache
def lazy_attributes(package: str) -> tuple[set[str], set[str]] | None:
    """For a package whose ``__init__`` has a ``__getattr__``: the names it binds itself
    and the modules its ``__getattr__`` imports (for an importer of any other name)."""
    init = module_file(package)
    if init is None or init.name != "__init__.py":
        return None
    tree = ast.parse(init.read_text(encoding="utf-8"))
    lazy = _lazy_getattr(tree)
    if lazy is None:
        return None
    return _bound(tree), _module_names(lazy, package.split("."))[0]


@functools.cache
def imported_files(path: Path) -> frozenset[Path]:
    """Files of the treeagent modules ``path`` imports (with their parent packages).

    A package ``__init__``'s ``__getattr__`` imports on first use: its imports count for
    the modules that use a name the package does not bind. A registry of
    treeagent.registry imports its built-ins' modules when its records are read: they
    count for the modules that use the registry otherwise than for its names."""
    if path.suffix == ".pyx":  # the compiled parts import no treeagent module
        return frozenset()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package: list[str] = []
    if path.is_relative_to(SRC):
        package = list(path.relative_to(SRC).with_suffix("").parts[:-1])
    lazy = _lazy_getattr(tree) if path.name == "__init__.py" else None
    names, aliases = _module_names(tree, package, skip=lazy, strings=path != REGISTRY)
    # lazy package attributes: `from pkg import name` / `pkg.name` for an unbound name
    used = set(aliases.values()) | {
        full for n in ast.walk(tree) if isinstance(n, ast.Attribute)
        and (full := _expand(_dotted(n), aliases))}
    for full in used:
        pkg, _, attr = full.rpartition(".")
        info = lazy_attributes(pkg) if pkg.startswith("treeagent") else None
        if info and attr not in info[0] and module_file(full) is None:
            names |= info[1]
    # registry records: a use of REGISTRY.X beyond its names
    regs = registries()
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    uncalled = {id(n) for f in tree.body if isinstance(f, ast.FunctionDef)
                and f.name in NO_STAGE_CALLS.get(path, ()) for n in ast.walk(f)}
    for node in ast.walk(tree):
        if id(node) in uncalled:
            continue
        ref = None
        if isinstance(node, ast.Attribute) and node.attr in regs:
            if _expand(_dotted(node.value), aliases) == "treeagent.registry":
                ref = node.attr
        elif isinstance(node, ast.Name) and aliases.get(node.id, "").startswith(
                "treeagent.registry."):
            ref = aliases[node.id].rpartition(".")[2]
        if ref not in regs:
            continue
        targets, eager = regs[ref]
        up = parents.get(id(node))
        if eager or not (isinstance(up, ast.Attribute) and up.attr in NAMES_ONLY):
            names |= targets
    return frozenset(_files_of(names))


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


DATA = {"src/treeagent/prompts": "src/treeagent/agents/templates.py",
        "src/treeagent/samples/bench": "src/treeagent/bench/sources/acquiring.py"}
"""Package data a stage reads, and the module that reads it."""


def surplus(stage: dict) -> list[str]:
    """The code deps of ``stage`` its flow does not import: a module file outside the
    closure, a folder with a module outside it, package data whose reader is outside."""
    reach = {p.relative_to(ROOT).as_posix() for p in closure(flow_of(stage))}
    extra = []
    for dep in stage["deps"]:
        path = ROOT / dep
        if not dep.startswith(("src/", "flows/")):
            continue  # data the stage reads
        if dep in DATA:
            ok = DATA[dep] in reach
        elif path.is_dir():
            ok = all(f.relative_to(ROOT).as_posix() in reach for f in path.rglob("*.py"))
        else:
            ok = dep in reach
        if not ok:
            extra.append(dep)
    return extra


def test_no_stage_lists_a_module_its_flow_does_not_import():
    extra = {name: lost for name, stage in stages().items() if (lost := surplus(stage))}
    assert not extra, f"dvc.yaml deps list modules their flow does not import: {extra}"


def test_surplus_sees_an_unimported_module_folder_and_data():
    stage = {"cmd": "python flows/acquire.py",
             "deps": ["raw", "flows/acquire.py", "src/treeagent/formats",
                      "src/treeagent/bench/sources/common.py", "src/treeagent/agents",
                      "src/treeagent/pipeline/plan.py", "src/treeagent/prompts",
                      "src/treeagent/samples/bench"]}
    assert surplus(stage) == ["src/treeagent/agents", "src/treeagent/pipeline/plan.py",
                              "src/treeagent/prompts"]


def test_stages_reading_package_data_depend_on_it():
    for name, stage in stages().items():
        reach = {p.relative_to(ROOT).as_posix() for p in closure(flow_of(stage))}
        for data, reader in DATA.items():
            if reader in reach:
                assert data in stage["deps"], (name, data)
    assert "src/treeagent/samples/bench" in stages()["acquire"]["deps"]  # sample mode


def test_acquire_depends_on_sources_and_formats_not_on_agents_or_prompts():
    reach = {p.relative_to(ROOT).as_posix().removeprefix("src/")
             for p in closure(flow_of(stages()["acquire"]))}
    assert "treeagent/bench/sources/acquiring.py" in reach
    assert "treeagent/formats/javascript.py" in reach
    assert not {r for r in reach if r.startswith(("treeagent/agents/", "treeagent/prompts/",
                                                  "treeagent/llm/"))}
    assert not stale_after_touching("src/treeagent/agents/memagent.py") & {"acquire"}
    assert not stale_after_touching("src/treeagent/prompts/memagent_memory.txt") & {"acquire"}


def _modules_after(code: str, cwd: Path) -> list[str]:
    """The treeagent modules a Python process has imported after running ``code``."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", code + "\nimport sys\n"
         "print(*sorted(m for m in sys.modules if m.startswith('treeagent')))"],
        cwd=cwd, env={**__import__("os").environ, "PYTHONPATH": str(ROOT / "flows")},
        capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_acquiring_the_sample_imports_no_agent_prompt_or_engine(tmp_path):
    """What the acquire flow runs (params, then every format's sample into raw/) loads
    the sources and the formats, and no agent, prompt template or engine."""
    (tmp_path / "params.yaml").write_bytes((ROOT / "params.yaml").read_bytes())
    loaded = _modules_after(
        "import _common\n"
        "kw = _common.load_params('params.yaml').acquire_kwargs()\n"
        "kw['mode'] = 'sample'\n"
        "from treeagent.bench.sources import acquire\n"
        "acquire(**kw, raw_dir='raw', progress=False)", tmp_path)
    assert "treeagent.bench.sources.acquiring" in loaded
    assert "treeagent.formats.javascript" in loaded  # the JavaScript sources are parsed
    assert any((tmp_path / "raw").rglob("*")), "nothing acquired"
    assert not [m for m in loaded if m.startswith(("treeagent.agents", "treeagent.llm",
                                                   "treeagent.prompts"))], loaded
    deps = stages()["acquire"]["deps"]  # the static reading covers what ran
    assert all(covered(module_file(m), deps) for m in loaded), loaded


def test_loading_params_imports_no_agent(tmp_path):
    """A stage's params (either preset's) are validated by the registries' names: no
    agent record is imported (what NO_STAGE_CALLS assumes of the presets)."""
    from treeagent.pipeline import config

    (tmp_path / "paper.yaml").write_text(config.dump(config.preset("paper")), encoding="utf-8")
    (tmp_path / "demo.yaml").write_text(config.dump(config.preset("demo")), encoding="utf-8")
    loaded = _modules_after("from treeagent.pipeline import config\n"
                            "config.load('paper.yaml'); config.load('demo.yaml')", tmp_path)
    assert "treeagent.pipeline.config" in loaded
    assert not [m for m in loaded if m.startswith("treeagent.agents")], loaded


def stale_after_touching(rel: str) -> set[str]:
    path = ROOT / rel
    return {name for name, stage in stages().items()
            if covered(path, [d for d in stage["deps"] if "${" not in d])}


def test_touching_sectioning_makes_every_evaluate_stale():
    assert {"evaluate", "evidence", "plan"} <= stale_after_touching("src/treeagent/algorithm/sectioning.py")


def test_touching_the_report_renderer_makes_only_the_report_stale():
    assert stale_after_touching("src/treeagent/report/render.py") == {"report"}
    assert stale_after_touching("src/treeagent/report/figures.py") == {"report"}
    assert "evaluate" not in stale_after_touching("src/treeagent/report/tables.py")


def test_the_closure_sees_function_level_and_registry_imports(tmp_path):
    flow = tmp_path / "flow.py"
    flow.write_text("def f():\n    from treeagent.report import render\n"
                    "TARGET = 'treeagent.algorithm.sectioning:section'\n", encoding="utf-8")
    files = {p.relative_to(SRC).as_posix() for p in imported_files(flow)}
    assert {"treeagent/report/render.py", "treeagent/report/__init__.py",
            "treeagent/algorithm/sectioning.py", "treeagent/__init__.py"} <= files


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


def test_registry_records_and_lazy_package_names_count_where_used(tmp_path):
    def files(code: str) -> set[str]:
        flow = tmp_path / f"flow{len(list(tmp_path.iterdir()))}.py"
        flow.write_text(code, encoding="utf-8")
        return {p.relative_to(SRC).as_posix() for p in imported_files(flow)}

    names_only = files("from treeagent import registry\n"
                       "OK = 'memagent' in registry.AGENTS.names\n")
    assert "treeagent/registry.py" in names_only
    assert not {f for f in names_only if f.startswith("treeagent/agents/")}
    assert "treeagent/agents/memagent.py" in files(
        "from treeagent import registry\nA = registry.AGENTS.get('memagent')\n")
    assert "treeagent/agents/memagent.py" in files(
        "from treeagent.registry import AGENTS\nT = dict(AGENTS.titles)\n")
    assert "treeagent/scoring.py" in files(  # its names are learnt by importing it
        "from treeagent import registry\nN = registry.TASKS.names\n")
    assert "treeagent/chunking.py" not in files("import treeagent\nV = treeagent.__version__\n")
    assert "treeagent/chunking.py" in files("from treeagent import chunk\n")
    assert "treeagent/chunking.py" in files("import treeagent\nC = treeagent.TreeChunker\n")


def minimal_code_deps(stage: dict) -> list[str]:
    """The code and package-data deps ``stage`` needs, no more: its flow's closure, a
    folder named where every module under it is in it (``python tests/test_dvc_deps.py``
    prints them per stage)."""
    reach = {p.relative_to(ROOT).as_posix() for p in closure(flow_of(stage))}
    whole = set()
    for folder in {str(Path(r).parent) for r in reach if r.startswith("src/treeagent/")}:
        while folder != "src/treeagent":
            if all(f.relative_to(ROOT).as_posix() in reach
                   for f in (ROOT / folder).rglob("*.py")):
                whole.add(folder)
            folder = str(Path(folder).parent)
    tops = {f for f in whole if not any(f.startswith(w + "/") for w in whole)}
    deps = {r for r in reach if not any(r.startswith(t + "/") for t in tops)} | tops
    deps |= {data for data, reader in DATA.items() if reader in reach}
    flows = sorted(d for d in deps if d.startswith("flows/"))
    return flows + sorted(d for d in deps if not d.startswith("flows/"))


if __name__ == "__main__":
    for _name, _stage in stages().items():
        print(f"{_name}:", *minimal_code_deps(_stage), sep="\n  - ")
