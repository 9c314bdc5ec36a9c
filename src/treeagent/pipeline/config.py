"""Pipeline parameters: ``params.yaml`` loading, validation and the ``demo``/``paper`` presets.

``params.yaml`` always holds the complete, literal parameter set (every knob, no
indirection), so DVC sees exactly the values a stage reads and ``dvc exp run -S
key=value`` works on any key. A preset is a full parameter set; ``params.yaml`` ships as
the ``demo`` preset (the embedded default) and switches with::

    python -m treeagent.pipeline.config write --preset paper -o params.yaml   # then: dvc repro
    python -m treeagent.pipeline.config write --preset demo -S build.per_cell=2 -o params.yaml
    python -m treeagent.pipeline.config check [params.yaml]                    # validate, exit 2 on error
    python -m treeagent.pipeline.config set agents.memagent.revision=abc123    # keeps comments

Validation (:func:`validate`) rejects unknown keys, wrong types and impossible values
with one message per problem naming the dotted key, e.g.
``params.yaml: build.lengths[0]: 1000 is not a valid length bucket (2048, 4096, ...)``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treeagent import registry

MODES = ("live", "mirror", "sample")
"""Where acquisition reads (``acquire.mode``): live APIs behind the network switch, a
local mirror, or the samples shipped in the package (:mod:`treeagent.bench.sources`)."""
PAPER_LENGTHS = tuple(8192 << i for i in range(8))  # 8K .. 1M (paper 4.1)
DEMO_LENGTHS = (2048, 4096)  # CPU demo buckets, not part of the paper's grid
LENGTHS = (*DEMO_LENGTHS, *PAPER_LENGTHS)
"""Every length bucket in tokens, declared once (named by :mod:`treeagent.bench.contexts`)."""
PAPER_SPLITS = {"json": {"dev": 3200, "train": 13200}}
"""The paper preset's train and dev examples per format (B.2: the JSON dataset's 19,600
examples include its training and development splits; with 3,200 test examples, dev as
large as test and train the rest). Formats not named are test only."""
TOKENIZERS = ("qwen3", "qwen2.5", "cl100k_base", "o200k_base")
RUNNERS = ("thread", "dask")
"""Prefect task runners that shard the build and the evaluation (``runner.name``):
threads in the stage's process, or Dask (a LocalCluster of worker processes, or the
scheduler at ``runner.address``). The runner never changes an output, so it is not a
DVC parameter of any stage."""
DEFAULT_PATH = Path("params.yaml")
SEARCH_RULE = "[C, 2C-1]"
"""The budget search range of A.2 / C.2, fixed by the paper (``treeagent.algorithm.budget``)."""
RETRIEVAL = {"k": 4, "span_tokens": 96}
"""Span retrieval limits of C.2, fixed by the paper (``treeagent.algorithm.retrieval``)."""


def _builtin(kind: registry.Registry[Any]) -> list[str]:
    """The names of a registry's built-in records (the paper's; presets list no plug-in)."""
    return list(kind.builtin_names)


class ParamsError(ValueError):
    """Invalid parameters; ``problems`` lists one message per offending key."""

    def __init__(self, problems: list[str], source: str = "params") -> None:
        self.problems = problems
        self.source = source
        super().__init__(f"{source}: " + f"\n{source}: ".join(problems))


# --------------------------------------------------------------------------- presets

def _demo() -> dict[str, Any]:
    """The embedded default: shipped sample, small grid, SmolLM2 on CPU, MemAgent in all
    four modes, small budgets and generation limits (whole DAG < 15 min on 2 cores).

    Chosen so that Flat and the structural modes section differently (params.yaml says
    why): C = 768 on 4K contexts cuts each context into ~5-6 sections, and Flat's fixed
    cuts fall inside an evidence record in most examples (none for TreeAgent at B*)."""
    formats = ["json", "yaml", "html", "javascript"]
    return {
        "preset": "demo",
        "seed": 42,
        "pythonhashseed": 0,
        "acquire": {
            "mode": "sample",
            "formats": list(formats),
            "sources": None,
            "mirror_dir": None,
            "js_repos": {},
            "limit": None,
            "concurrency": 4,
        },
        "build": {
            "formats": list(formats),
            # one small bucket, a lookup and an aggregation per format: the shipped
            # sample's units (~1.5-2.5K tokens) fill 4K within 25% (7 examples; HTML's
            # three WebSRC pages hold table rows, asked by lookups only)
            "lengths": [4096],
            "tasks": ["one_field", "conditional_count"],
            "per_cell": 1,
            "questions_per_context": 1,
            "tokenizers": ["qwen3"],
            "tolerance": 0.25,
            "allow_reuse": True,
        },
        "sectioning": {"base_budget": 768, "search": SEARCH_RULE},
        "retrieval": dict(RETRIEVAL),
        "engine": {
            "name": "transformers",
            # auto: bf16 where the CPU has AMX or avx512_bf16, else fp32 (docs/performance.md)
            "options": {"dtype": "auto", "max_batch": 8},
        },
        "runner": {"name": "thread", "address": None, "workers": 1},
        "serve": {"enabled": False, "gpus": [], "replicas": 1, "tensor_parallel": 1,
                  "host": "127.0.0.1", "port": 18100},
        "evaluate": {
            "agents": ["memagent"],
            "methods": _builtin(registry.METHODS),  # Flat, Tree, Tree+Path, TreeAgent (Table 1)
            "concurrency": 8,
            "shards": 1,
            "cache": ".cache/calls.sqlite",
        },
        "agents": {name: {"model": "smollm2", "revision": "auto", "max_new_tokens": 64,
                          "options": {}, "engine_options": {}}
                   for name in _builtin(registry.AGENTS)},
        "report": {"dataset": "json"},
    }


def _paper() -> dict[str, Any]:
    """Full scale (paper 4.1-4.2, C.1-C.4): mirror, 4 formats x 8 tasks x 8 lengths x 50,
    four agents x Flat/Tree/Tree+Path/TreeAgent (Table 1), C = 5000 searched in [C, 2C-1],
    vLLM, Table 2 limits."""
    p = _demo()
    p.update({
        "preset": "paper",
        "acquire": {
            "mode": "mirror", "formats": _builtin(registry.FORMATS), "sources": None,
            "mirror_dir": None,  # null: $TREEAGENT_MIRROR
            "js_repos": {name: f"../js-repos/{name}" for name in
                         ("eslint", "webpack", "threejs", "plotly", "babel", "lodash")},
            "limit": None, "concurrency": 8,
        },
        "build": {"formats": _builtin(registry.FORMATS), "lengths": list(PAPER_LENGTHS),
                  "tasks": _builtin(registry.TASKS), "per_cell": 50, "questions_per_context": 5,
                  "tokenizers": ["qwen3", "qwen2.5"], "tolerance": 0.05,
                  "allow_reuse": False,
                  "splits": {f: dict(n) for f, n in PAPER_SPLITS.items()}},
        "sectioning": {"base_budget": 5000, "search": SEARCH_RULE},
        "engine": {"name": "vllm",
                   "options": {"device": "auto", "concurrency": 256,
                               "extra_args": ["--tensor-parallel-size", "1",
                                              "--gpu-memory-utilization", "0.9"]}},
        # one Dask worker per GPU host (docs/pipeline.md "Many GPUs and hosts"); 8 GPUs:
        # 4 agents x 2 replicas of tensor-parallel size 1
        "runner": {"name": "dask", "address": None, "workers": 8},
        "serve": {"enabled": True, "gpus": list(range(8)), "replicas": 2,
                  "tensor_parallel": 1, "host": "127.0.0.1", "port": 18100},
        "evaluate": {"agents": _builtin(registry.AGENTS),  # Table 1's rows
                     "methods": _builtin(registry.METHODS),
                     "concurrency": 256, "shards": 16, "cache": ".cache/calls.sqlite"},
        # the public checkpoints (C.1) by hub name, each counted with the tokenizer it
        # ships; servers hold each agent's Table 2 request limit. `main` is resolved to
        # its commit by the models stage (models.lock); pin a commit here to fix it
        "agents": {a.name: {"model": a.paper_model, "revision": "main",
                            "max_new_tokens": None, "options": {},
                            "engine_options": {"max_model_len": a.limits.request,
                                               "tokenizer": a.paper_tokenizer}}
                   for a in registry.AGENTS.builtin()},
    })
    return p


PRESETS = {"demo": _demo, "paper": _paper}


def preset(name: str) -> dict[str, Any]:
    """A fresh copy of a preset's complete parameter set."""
    if name not in PRESETS:
        raise ParamsError([f"preset: {name!r} is not one of {', '.join(PRESETS)}"])
    return PRESETS[name]()


# --------------------------------------------------------------------------- validation

@dataclass(frozen=True)
class Params:
    """Validated parameters (the raw mapping is ``data``) with accessors for each stage."""

    data: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return get(self.data, key)

    @property
    def agents(self) -> list[str]:
        return list(self.data["evaluate"]["agents"])

    @property
    def methods(self) -> list[str]:
        return list(self.data["evaluate"]["methods"])

    def acquire_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``treeagent.bench.sources.acquire``."""
        a = self.data["acquire"]
        return {"mode": a["mode"], "formats": list(a["formats"]), "sources": a["sources"],
                "mirror_dir": a["mirror_dir"], "js_repos": dict(a["js_repos"]) or None,
                "limit": a["limit"]}

    def build_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of ``treeagent.bench.build.BuildParams``."""
        b = self.data["build"]
        return {"formats": tuple(b["formats"]), "lengths": tuple(b["lengths"]),
                "tasks": tuple(b["tasks"]), "per_cell": b["per_cell"],
                "questions_per_context": b["questions_per_context"],
                "tokenizers": tuple(b["tokenizers"]), "tolerance": b["tolerance"],
                "seed": self.data["seed"], "allow_reuse": b["allow_reuse"],
                "second_reader": b.get("second_reader", True),
                "splits": {f: dict(n) for f, n in (b.get("splits") or {}).items()}}

    def engine_spec(self, agent: str) -> tuple[str, dict[str, Any]]:
        """(engine name, ``make_engine`` keyword arguments incl. ``model``) for ``agent``.

        ``revision`` is the pin DVC tracks. The ``openai`` engine cannot see the served
        weights, so a pinned revision is passed to it (it enters every cache key); the
        ``transformers`` and ``vllm`` engines hash the weights they load themselves."""
        a = self.data["agents"][agent]
        name = self.data["engine"]["name"]
        options = {**self.data["engine"]["options"], **a["engine_options"], "model": a["model"]}
        if name == "openai" and str(a["revision"]) != "auto":
            options["revision"] = str(a["revision"])
        if a.get("tokenizer") and name in ("openai", "vllm"):  # the client counts with it
            options.setdefault("tokenizer", a["tokenizer"])
        return name, options

    def evaluate_kwargs(self, agent: str) -> dict[str, Any]:
        """Keyword arguments of ``treeagent.agents.evaluate.evaluate`` besides examples,
        agent, method, engine and the output paths."""
        a = self.data["agents"][agent]
        options = dict(a["options"])
        if a["max_new_tokens"] is not None:
            options["max_new_tokens"] = a["max_new_tokens"]
        tokenizer = {"tokenizer": a["tokenizer"]} if a.get("tokenizer") else {}
        return {"base_budget": self.data["sectioning"]["base_budget"],
                "concurrency": self.data["evaluate"]["concurrency"],
                "cache": self.data["evaluate"]["cache"], "options": options, **tokenizer}


def get(data: Mapping[str, Any], key: str) -> Any:
    """The value at a dotted key (``agents.memagent.revision``); KeyError names the key."""
    node: Any = data
    for part in key.split("."):
        if not isinstance(node, Mapping) or part not in node:
            raise KeyError(key)
        node = node[part]
    return node


class _Check:
    def __init__(self) -> None:
        self.problems: list[str] = []

    def fail(self, key: str, message: str) -> None:
        self.problems.append(f"{key}: {message}")

    def keys(self, key: str, value: Any, required: Iterable[str],
             optional: Iterable[str] = ()) -> bool:
        if not isinstance(value, Mapping):
            self.fail(key, f"expected a mapping, got {_kind(value)}")
            return False
        required = list(required)
        allowed = set(required) | set(optional)
        for k in value:
            if k not in allowed:
                self.fail(_join(key, k), f"unknown key (allowed: {', '.join(sorted(allowed))})")
        for k in required:
            if k not in value:
                self.fail(_join(key, k), "missing")
        return True

    def integer(self, key: str, value: Any, lo: int | None = None,
                hi: int | None = None) -> bool:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(key, f"expected an integer, got {_kind(value)}")
            return False
        if lo is not None and value < lo:
            self.fail(key, f"{value} is below the minimum {lo}")
            return False
        if hi is not None and value > hi:
            self.fail(key, f"{value} is above the maximum {hi}")
            return False
        return True

    def choice(self, key: str, value: Any, allowed: Iterable[Any], what: str = "") -> bool:
        allowed = tuple(allowed)
        if value not in allowed:
            label = f" {what}" if what else ""
            self.fail(key, f"{value!r} is not a valid{label} ({', '.join(map(str, allowed))})")
            return False
        return True

    def choices(self, key: str, value: Any, allowed: Iterable[Any], what: str = "",
                nonempty: bool = True) -> bool:
        if not isinstance(value, list):
            self.fail(key, f"expected a list, got {_kind(value)}")
            return False
        if nonempty and not value:
            self.fail(key, "must not be empty")
            return False
        ok = all([self.choice(f"{key}[{i}]", v, allowed, what) for i, v in enumerate(value)])
        dup = sorted({str(v) for v in value if value.count(v) > 1})
        if dup:
            self.fail(key, f"duplicate value(s): {', '.join(dup)}")
            ok = False
        return ok

    def text(self, key: str, value: Any, optional: bool = False) -> bool:
        if value is None and optional:
            return True
        if not isinstance(value, str) or not value.strip():
            self.fail(key, f"expected a non-empty string, got {_kind(value)}")
            return False
        return True


def _kind(value: Any) -> str:
    return "null" if value is None else f"{type(value).__name__} {value!r}"


def _join(key: str, part: Any) -> str:
    return f"{key}.{part}" if key else str(part)


def _check_splits(c: _Check, b: Mapping[str, Any]) -> None:
    """``build.splits``: null or ``{format: {dev: n, train: n}}`` over built formats."""
    splits = b.get("splits")
    if splits is None:
        return
    if not isinstance(splits, Mapping):
        c.fail("build.splits", f"expected a mapping format -> {{dev: n, train: n}}, "
                               f"got {_kind(splits)}")
        return
    built = b.get("formats") if isinstance(b.get("formats"), list) else []
    for fmt, sizes in splits.items():
        key = f"build.splits.{fmt}"
        if fmt not in built:
            c.fail(key, f"{fmt!r} is not built (build.formats)")
        if c.keys(key, sizes, (), ("dev", "train")):
            for name, n in sizes.items():
                if name in ("dev", "train"):
                    c.integer(f"{key}.{name}", n, 0)


def validate(data: Any, source: str = "params") -> Params:
    """Check a complete parameter mapping; raise :class:`ParamsError` listing every problem."""
    c = _Check()
    top = ("preset", "seed", "pythonhashseed", "acquire", "build", "sectioning", "retrieval",
           "engine", "runner", "serve", "evaluate", "agents", "report")
    if not c.keys("", data, top):
        raise ParamsError(c.problems, source)
    if "preset" in data:
        c.text("preset", data["preset"])
    if "seed" in data:
        c.integer("seed", data["seed"], 0)
    if "pythonhashseed" in data:
        c.integer("pythonhashseed", data["pythonhashseed"], 0, 4294967295)

    a = data.get("acquire")
    if a is not None and c.keys("acquire", a, ("mode", "formats", "sources", "mirror_dir",
                                              "js_repos", "limit", "concurrency")):
        c.choice("acquire.mode", a.get("mode"), MODES, "source mode")
        c.choices("acquire.formats", a.get("formats"), registry.FORMATS.names, "format")
        if a.get("sources") is not None and not (
                isinstance(a["sources"], list) and all(isinstance(s, str) for s in a["sources"])):
            c.fail("acquire.sources", "expected null (all sources) or a list of source names")
        c.text("acquire.mirror_dir", a.get("mirror_dir"), optional=True)
        repos = a.get("js_repos")
        if not isinstance(repos, Mapping):
            c.fail("acquire.js_repos", f"expected a mapping name -> path, got {_kind(repos)}")
        else:
            for k, v in repos.items():
                c.text(f"acquire.js_repos.{k}", v)
        if a.get("limit") is not None:
            c.integer("acquire.limit", a["limit"], 1)
        if "concurrency" in a:
            c.integer("acquire.concurrency", a["concurrency"], 1)

    b = data.get("build")
    if b is not None and c.keys("build", b, ("formats", "lengths", "tasks", "per_cell",
                                            "questions_per_context", "tokenizers",
                                            "tolerance", "allow_reuse"),
                                 ("second_reader", "splits")):
        c.choices("build.formats", b.get("formats"), registry.FORMATS.names, "format")
        if a is not None and isinstance(a, Mapping) and isinstance(b.get("formats"), list) \
                and isinstance(a.get("formats"), list):
            extra = [f for f in b["formats"] if f not in a["formats"]]
            if extra:
                c.fail("build.formats", f"{', '.join(extra)} not acquired "
                                        "(add to acquire.formats)")
        c.choices("build.lengths", b.get("lengths"), LENGTHS, "length bucket")
        c.choices("build.tasks", b.get("tasks"), registry.TASKS.names, "task")
        c.integer("build.per_cell", b.get("per_cell"), 1)
        c.integer("build.questions_per_context", b.get("questions_per_context"), 1)
        c.choices("build.tokenizers", b.get("tokenizers"), TOKENIZERS, "construction tokenizer")
        tol = b.get("tolerance")
        if isinstance(tol, bool) or not isinstance(tol, int | float) or not 0 < tol < 1:
            c.fail("build.tolerance", f"expected a fraction in (0, 1), got {_kind(tol)}")
        if not isinstance(b.get("allow_reuse"), bool):
            c.fail("build.allow_reuse", f"expected true/false, got "
                                        f"{_kind(b.get('allow_reuse'))}")
        if not isinstance(b.get("second_reader", True), bool):
            c.fail("build.second_reader", f"expected true/false, got "
                                          f"{_kind(b.get('second_reader'))}")
        _check_splits(c, b)

    s = data.get("sectioning")
    if s is not None and c.keys("sectioning", s, ("base_budget", "search")):
        c.integer("sectioning.base_budget", s.get("base_budget"), 1)
        if s.get("search") != SEARCH_RULE:
            c.fail("sectioning.search", f"{s.get('search')!r}: the budget search (A.2) covers "
                                        f"{SEARCH_RULE!r} of the base budget; it is not a knob")

    r = data.get("retrieval")
    if r is not None and c.keys("retrieval", r, tuple(RETRIEVAL)):
        for k, v in RETRIEVAL.items():
            if r.get(k) != v:
                c.fail(f"retrieval.{k}", f"{r.get(k)!r}: span retrieval (C.2) is fixed at "
                                         f"k=4 spans of <= 96 tokens (treeagent.algorithm.retrieval)")

    e = data.get("engine")
    if e is not None and c.keys("engine", e, ("name", "options")):
        c.choice("engine.name", e.get("name"), registry.ENGINES.names, "engine")
        if not isinstance(e.get("options"), Mapping):
            c.fail("engine.options", f"expected a mapping, got {_kind(e.get('options'))}")

    ru = data.get("runner")
    if ru is not None and c.keys("runner", ru, ("name", "address", "workers")):
        c.choice("runner.name", ru.get("name"), RUNNERS, "task runner")
        c.text("runner.address", ru.get("address"), optional=True)
        if ru.get("address") is not None and ru.get("name") != "dask":
            c.fail("runner.address", "a scheduler address needs runner.name: dask")
        c.integer("runner.workers", ru.get("workers"), 1)

    sv = data.get("serve")
    if sv is not None and c.keys("serve", sv, ("enabled", "gpus", "replicas",
                                              "tensor_parallel", "host", "port")):
        if not isinstance(sv.get("enabled"), bool):
            c.fail("serve.enabled", f"expected true/false, got {_kind(sv.get('enabled'))}")
        gpus = sv.get("gpus")
        if not isinstance(gpus, list) or not all(
                isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in gpus):
            c.fail("serve.gpus", f"expected a list of GPU ids (integers >= 0), got {_kind(gpus)}")
        elif len(set(gpus)) != len(gpus):
            c.fail("serve.gpus", "lists a GPU twice")
        c.integer("serve.replicas", sv.get("replicas"), 1)
        c.integer("serve.tensor_parallel", sv.get("tensor_parallel"), 1)
        c.text("serve.host", sv.get("host"))
        c.integer("serve.port", sv.get("port"), 1, 65535)

    ev = data.get("evaluate")
    agents = data.get("agents")
    agent_names = tuple(registry.AGENTS.names)
    if ev is not None and c.keys("evaluate", ev, ("agents", "methods", "concurrency", "shards",
                                                  "cache")):
        c.choices("evaluate.agents", ev.get("agents"), registry.AGENTS.names,
                  "memory agent")
        c.choices("evaluate.methods", ev.get("methods"), registry.METHODS.names, "method")
        c.integer("evaluate.concurrency", ev.get("concurrency"), 1)
        c.integer("evaluate.shards", ev.get("shards"), 1)
        if (isinstance(e, Mapping) and e.get("name") == "vllm" and isinstance(sv, Mapping)
                and sv.get("enabled") is False and isinstance(ev.get("shards"), int)
                and ev["shards"] > 1):
            c.fail("evaluate.shards", "the vllm engine starts one server per shard: set "
                                      "serve.enabled (the pipeline starts the replicas and "
                                      "the shards share them) or evaluate.shards: 1")
        c.text("evaluate.cache", ev.get("cache"), optional=True)
        if isinstance(ev.get("agents"), list) and isinstance(agents, Mapping):
            for name in ev["agents"]:
                if name in agent_names and name not in agents:
                    c.fail(f"agents.{name}", "missing (listed in evaluate.agents)")

    if agents is not None and c.keys("agents", agents, (), agent_names):
        for name, spec in agents.items():
            key = f"agents.{name}"
            if name not in agent_names or not c.keys(key, spec, ("model", "revision", "max_new_tokens",
                                                            "options", "engine_options"),
                                                     ("tokenizer",)):
                continue
            c.text(f"{key}.model", spec.get("model"))
            c.text(f"{key}.tokenizer", spec.get("tokenizer"), optional=True)
            rev = spec.get("revision")
            if isinstance(rev, bool) or not isinstance(rev, str | int) or rev == "":
                c.fail(f"{key}.revision", f"expected a commit/hash/label or 'auto', got "
                                          f"{_kind(rev)}")
            if spec.get("max_new_tokens") is not None:
                c.integer(f"{key}.max_new_tokens", spec["max_new_tokens"], 1)
            for sub in ("options", "engine_options"):
                if not isinstance(spec.get(sub), Mapping):
                    c.fail(f"{key}.{sub}", f"expected a mapping, got {_kind(spec.get(sub))}")

    rep = data.get("report")
    if rep is not None and c.keys("report", rep, ("dataset",)):
        if c.choice("report.dataset", rep.get("dataset"), registry.FORMATS.names, "dataset") and \
                isinstance(b, Mapping) and isinstance(b.get("formats"), list) and \
                rep["dataset"] not in b["formats"]:
            c.fail("report.dataset", f"{rep['dataset']!r} is not built (build.formats)")

    if c.problems:
        raise ParamsError(c.problems, source)
    return Params(dict(data))


def _load_unique(text: str) -> Any:
    """``yaml.safe_load`` that refuses a key written twice in one mapping (YAML's last
    one would win silently), naming the key and its line."""
    import yaml

    class Loader(yaml.SafeLoader):
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue  # "<<": merged keys may be overridden
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, Hashable) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep)

    return yaml.load(text, Loader=Loader)  # noqa: S506 (a safe loader)


def load(path: str | os.PathLike[str] = DEFAULT_PATH) -> Params:
    """Read and validate a params file; :class:`ParamsError` names the file and keys."""
    import yaml

    p = Path(path)
    try:
        data = _load_unique(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ParamsError(["no such file (create it: python -m treeagent.pipeline.config write "
                           "--preset demo -o params.yaml)"], str(p)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{mark.line + 1}:{mark.column + 1}: " if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).replace("\n", " ")
        raise ParamsError([f"{where}not valid YAML: {what}"], str(p)) from None
    return validate(data, str(p))


# --------------------------------------------------------------------------- editing

def parse_assignment(text: str) -> tuple[str, Any]:
    """``key=value`` with a YAML value (as ``dvc exp run -S``): ``a.b=[1, 2]``."""
    import yaml

    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ParamsError([f"{text!r}: expected key=value"], "-S")
    return key.strip(), yaml.safe_load(raw) if raw.strip() else None


def assign(data: dict[str, Any], key: str, value: Any) -> None:
    """Set a dotted key in a nested mapping; the parents must exist."""
    parts = key.split(".")
    node: Any = data
    for i, part in enumerate(parts[:-1]):
        if not isinstance(node, dict) or part not in node:
            raise ParamsError([f"{'.'.join(parts[:i + 1])}: no such key"], "-S")
        node = node[part]
    if not isinstance(node, dict):
        raise ParamsError([f"{'.'.join(parts[:-1])}: not a mapping"], "-S")
    node[parts[-1]] = value


def dump(data: Mapping[str, Any]) -> str:
    """Params as YAML text with a header saying how the file was made."""
    import yaml

    header = (f"# treeagent pipeline parameters (preset: {data.get('preset')}); every key is "
              "described in docs/pipeline.md.\n# Regenerate: python -m treeagent.pipeline.config write "
              f"--preset {data.get('preset')} -o params.yaml\n")
    return header + yaml.safe_dump(dict(data), sort_keys=False, default_flow_style=None,
                                   width=100)


def set_values(path: str | os.PathLike[str], assignments: Mapping[str, Any]) -> Params:
    """Change keys of a params file in place (comments and order kept); returns the
    validated result. Nothing is written if the result is invalid."""
    from ruamel.yaml import YAML

    p = Path(path)
    y = YAML()
    y.preserve_quotes = True
    doc = y.load(p.read_text(encoding="utf-8"))
    for key, value in assignments.items():
        assign(doc, key, value)
    plain = json.loads(json.dumps(doc))
    params = validate(plain, str(p))
    tmp = p.with_name(f".{p.name}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        y.dump(doc, fh)
    os.replace(tmp, p)
    return params


# --------------------------------------------------------------------------- CLI

def main(argv: list[str] | None = None, prog: str = "python -m treeagent.pipeline.config") -> int:
    """``treeagent config check|show|write|set`` (also ``python -m treeagent.pipeline.config``)."""
    ap = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n")[0].replace("``", ""))
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("check", help="validate a params file")
    p.add_argument("path", nargs="?", default=str(DEFAULT_PATH))
    p = sub.add_parser("show", help="print a params file or preset as JSON")
    p.add_argument("path", nargs="?", default=str(DEFAULT_PATH))
    p.add_argument("--preset", choices=sorted(PRESETS))
    p = sub.add_parser("write", help="write a preset (with overrides) as a params file")
    p.add_argument("--preset", choices=sorted(PRESETS), default="demo")
    p.add_argument("-S", "--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("-o", "--out", help="output file (default: stdout)")
    p = sub.add_parser("set", help="change keys of a params file in place")
    p.add_argument("assignments", nargs="+", metavar="KEY=VALUE")
    p.add_argument("--path", default=str(DEFAULT_PATH))
    args = ap.parse_args(argv)
    try:
        if args.cmd == "check":
            params = load(args.path)
            print(f"{args.path}: ok (preset {params.data.get('preset')}, "
                  f"{len(params.agents)} agent(s) x {len(params.methods)} method(s))")
        elif args.cmd == "show":
            data = preset(args.preset) if args.preset else load(args.path).data
            print(json.dumps(data, indent=2))
        elif args.cmd == "write":
            data = preset(args.preset)
            for text in args.set:
                assign(data, *parse_assignment(text))
            validate(data, f"preset {args.preset}")
            if args.out:
                Path(args.out).write_text(dump(data), encoding="utf-8")
            else:
                sys.stdout.write(dump(data))
        else:
            set_values(args.path, dict(parse_assignment(t) for t in args.assignments))
    except ParamsError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
