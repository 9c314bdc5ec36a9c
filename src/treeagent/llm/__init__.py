"""Inference engines behind one async protocol, the call cache/journal and the scheduler.

    from treeagent.llm import make_engine, run_programs, CallCache
    engine = make_engine("transformers")            # SmolLM2-135M-Instruct by default
    outcomes = run_programs(programs, engine, cache=".cache/calls.sqlite")

Engines are imported lazily: ``import treeagent.llm`` pulls in neither torch nor httpx.
"""

from __future__ import annotations

from typing import Any

from treeagent import registry
from treeagent.llm.base import Engine, EngineSpec, Message, Request, Response, Sampling
from treeagent.llm.cache import CallCache, call_key, engine_key, prompt_hash
from treeagent.llm.models import ModelSource, model_revision, resolve_model, tokenizer_dir
from treeagent.llm.scheduler import (
    CallTrace,
    Outcome,
    Outcomes,
    Program,
    Totals,
    arun_programs,
    run_programs,
)

ENGINES = registry.ENGINES.names
"""Names of the registered engines (a live view of :data:`treeagent.registry.ENGINES`)."""

__all__ = [
    "ENGINES", "ENGINE_SPECS", "CallCache", "CallTrace", "Engine", "EngineSpec", "Message",
    "ModelSource", "Outcome", "Outcomes", "Program", "Request", "Response", "Sampling",
    "Totals", "arun_programs", "call_key", "engine_key", "make_engine", "model_revision",
    "prompt_hash", "resolve_model", "run_programs", "tokenizer_dir",
]  # fmt: skip


def _transformers(model: str | None, **options: Any) -> Engine:
    from treeagent.llm.transformers_engine import TransformersEngine

    return TransformersEngine(model, **options)


def _openai(model: str | None, **options: Any) -> Engine:
    from treeagent.llm.openai_engine import OpenAIEngine

    if model is None:
        raise ValueError("the openai engine needs model=<served model name>")
    return OpenAIEngine(model, **options)


def _vllm(model: str | None, **options: Any) -> Engine:
    from treeagent.llm.vllm_engine import VLLMEngine

    return VLLMEngine(model, **options)


ENGINE_SPECS = (
    EngineSpec("transformers", "Transformers", _transformers),  # local weights
    EngineSpec("openai", "OpenAI-compatible", _openai),  # any OpenAI-compatible server
    EngineSpec("vllm", "vLLM", _vllm),  # starts `vllm serve` from its own venv
)
"""The built-in engines (collected in :data:`treeagent.registry.ENGINES`)."""


def make_engine(name: str, model: str | None = None, **options: Any) -> Engine:
    """An engine by name: ``transformers`` (local weights; default SmolLM2), ``openai``
    (any OpenAI-compatible server; ``base_urls=[...]``, ``api_key_env=...``) or ``vllm``
    (starts ``vllm serve`` from its own venv), or a registered plug-in's.
    ``options`` go to the engine's constructor."""
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")
    return registry.ENGINES.get(name).factory(model, **options)
