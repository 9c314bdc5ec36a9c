"""The engine protocol every inference backend implements.

An engine turns chat requests into replies. Workflows never call an engine directly:
they yield :class:`Request` objects to the scheduler, which consults the call cache,
batches every ready request across examples and hands the misses to the engine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Sampling:
    """Decoding parameters (paper C.3: greedy, temperature 0, top_p 1.0, seed 42)."""

    max_tokens: int
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int | None = 42
    stop: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Message:
    role: str  # "system" | "user" | "assistant"
    content: str


@dataclass(frozen=True, slots=True)
class Request:
    """One chat call. ``kind`` is the call's role in its workflow (Table 2 columns):
    "memory", "answer" or "controller"; it is recorded in traces, not sent.

    ``template_kwargs`` go to the model's chat template (e.g. ``enable_thinking`` for
    Qwen3): ``chat_template_kwargs`` in an OpenAI-compatible request body, keyword
    arguments of ``apply_chat_template`` locally. A last message with role
    "assistant" is a reply to continue: the template renders the messages before it
    with the generation prompt and the engine appends its content verbatim (raw
    completion of a prefix, as InfMem's two-stage thinking does)."""

    messages: tuple[Message, ...]
    sampling: Sampling
    kind: str = "memory"
    tools: tuple[dict, ...] = ()  # OpenAI tool schemas, when a workflow uses them
    template_kwargs: Mapping[str, Any] = field(default_factory=dict)

    @property
    def continues(self) -> bool:
        """Is the last message an assistant prefix to continue?"""
        return bool(self.messages) and self.messages[-1].role == "assistant"


@dataclass(slots=True)
class Response:
    """An engine's reply. ``text is None`` means the response is unavailable (retries
    exhausted): the workflow goes on and its answer is empty (scores 0, C.4)."""

    text: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    latency: float = 0.0
    error: str | None = None
    cached: bool = False
    tool_calls: list[dict] = field(default_factory=list)

    @property
    def available(self) -> bool:
        return self.text is not None


class Engine(Protocol):
    """An inference backend. ``model`` and ``revision`` identify the weights: they are
    part of every cache key, so a new revision reruns exactly that model's calls."""

    name: str  # "transformers" | "openai" | "vllm" | a test double's name
    model: str
    revision: str

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        """Replies for ``requests``, in order. Never raises for a single failed call:
        that call's Response has ``text=None`` and ``error`` set."""
        ...

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under the model's own tokenizer (request limits)."""
        ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class EngineSpec:
    """One inference engine, registered in :data:`treeagent.registry.ENGINES` (the
    built-ins in :mod:`treeagent.llm`; a plug-in: entry point ``treeagent.engines``).
    ``factory(model, **options)`` returns an :class:`Engine` (``model``: the model spec
    or served name, None for the engine's default)."""

    name: str
    title: str
    factory: Callable[..., Engine]
