"""Inference engines behind one async protocol, the call cache/journal and the scheduler.

    from treeagent.llm import make_engine, run_programs, CallCache
    engine = make_engine("transformers")            # SmolLM2-135M-Instruct by default
    outcomes = run_programs(programs, engine, cache=".cache/calls.sqlite")

Engines are imported lazily: ``import treeagent.llm`` pulls in neither torch nor httpx.
"""

from __future__ import annotations

from typing import Any

from treeagent.llm.base import Engine, Message, Request, Response, Sampling
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

ENGINES = ("transformers", "openai", "vllm")

__all__ = [
    "ENGINES", "CallCache", "CallTrace", "Engine", "Message", "ModelSource", "Outcome",
    "Outcomes", "Program", "Request", "Response", "Sampling", "Totals", "arun_programs",
    "call_key", "engine_key", "make_engine", "model_revision", "prompt_hash",
    "resolve_model", "run_programs", "tokenizer_dir",
]  # fmt: skip


def make_engine(name: str, model: str | None = None, **options: Any) -> Engine:
    """An engine by name: ``transformers`` (local weights; default SmolLM2), ``openai``
    (any OpenAI-compatible server; ``base_urls=[...]``, ``api_key_env=...``) or ``vllm``
    (starts ``vllm serve`` from its own venv). ``options`` go to the engine's constructor."""
    if name == "transformers":
        from treeagent.llm.transformers_engine import TransformersEngine

        return TransformersEngine(model, **options)
    if name == "openai":
        from treeagent.llm.openai_engine import OpenAIEngine

        if model is None:
            raise ValueError("the openai engine needs model=<served model name>")
        return OpenAIEngine(model, **options)
    if name == "vllm":
        from treeagent.llm.vllm_engine import VLLMEngine

        return VLLMEngine(model, **options)
    raise ValueError(f"unknown engine {name!r}: use one of {', '.join(ENGINES)}")
