"""Engine benchmark: the same fixed MemAgent calls on any engine.

``--programs`` MemAgent-shaped programs of ``--steps`` memory calls each (default 64 x 4
= 256 calls), every prompt the packaged ``memagent_memory`` template with a distinct
~``--prompt-tokens`` section of the shipped real sample (JSON, YAML, HTML, JS text) and
the previous reply as memory; ``--new-tokens`` per call, greedy. They run under the
scheduler (``run_programs``: no cache, ``--concurrency`` programs in flight, default
2 x the engine's batch). Printed per run and as the median of ``--runs``: calls/s,
prompt and output tokens/s, mean batch (transformers), and the engine's raw rate in the
same run on the same prompts:

* transformers: plain ``model.generate`` on batches of ``max_batch`` left-padded prompts
  (no scheduler, no engine queue);
* openai / vllm: ``engine.generate`` driven by ``--concurrency`` plain coroutines.

The ratio scheduler / raw is the share of the engine's own rate that the scheduler
delivers (goal on a GPU: >= 0.70).

    # CPU here (small):
    .venv/bin/python benchmarks/engines.py --small
    # a GPU host, transformers on CUDA (docs/pipeline.md, "The paper preset on a GPU host"):
    PYTHONPATH=src python benchmarks/engines.py --device cuda --model PATH/SmolLM2-135M-Instruct.Q4_1.gguf
    # a served model:
    python benchmarks/engines.py --engine openai --model NAME --base-url http://h:8000/v1 \
        --tokenizer LOCAL_FOLDER
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

from treeagent.agents.templates import Prompts
from treeagent.llm import Message, Request, Sampling, make_engine, run_programs

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "src" / "treeagent" / "samples"
PROBLEM = "Which events and records in the document mention a magnitude or a severity?"
NO_MEMORY = "No previous memory"


def sample_text() -> str:
    """The shipped real sample, every text file joined (~280 KB)."""
    files = sorted(p for p in SAMPLES.rglob("*") if p.is_file() and p.suffix in
                   (".json", ".yaml", ".html", ".js", ".mjs"))
    return "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in files)


class Workload:
    """Distinct sections of ~``section_tokens`` tokens, prompts built like MemAgent's."""

    def __init__(self, tokenizer, prompt_tokens: int, new_tokens: int, count: int) -> None:
        self.tok = tokenizer
        self.prompts = Prompts()
        self.new_tokens = new_tokens
        empty = self.render("", NO_MEMORY)
        overhead = len(tokenizer(empty, add_special_tokens=False).input_ids) + 24  # chat
        size = max(16, prompt_tokens - overhead)
        ids = tokenizer(sample_text(), add_special_tokens=False).input_ids
        stride = max(1, (len(ids) - size) // max(1, count))
        self.sections = [tokenizer.decode(ids[(i * stride) % max(1, len(ids) - size):][:size])
                         for i in range(count)]

    def render(self, section: str, memory: str) -> str:
        return self.prompts.render("memagent_memory", question=PROBLEM, memory=memory,
                                   section=section)

    def request(self, section: str, memory: str) -> Request:
        return Request((Message("user", self.render(section, memory)),),
                       Sampling(max_tokens=self.new_tokens))

    def program(self, first: int, steps: int):
        memory = NO_MEMORY
        for t in range(steps):
            reply = yield self.request(self.sections[first + t], memory)
            memory = (reply.text or "").strip() or NO_MEMORY
        return memory


def scheduled(engine, work: Workload, programs: int, steps: int, concurrency: int) -> dict:
    batches = getattr(engine, "batches", 0)
    out = run_programs(((f"p{i}", work.program(i * steps, steps)) for i in range(programs)),
                       engine, concurrency=concurrency, progress=False)
    t = out.totals
    assert t.unavailable == 0, f"{t.unavailable} calls unavailable"
    fig = rates(t.calls, t.input_tokens, t.output_tokens, t.seconds)
    if hasattr(engine, "batches"):
        fig["batch"] = t.calls / max(1, engine.batches - batches)
    return fig


def rates(calls: int, prompt: int, output: int, seconds: float) -> dict:
    return {"calls": calls, "seconds": seconds, "calls/s": calls / seconds,
            "prompt tok/s": prompt / seconds, "output tok/s": output / seconds}


def raw_transformers(engine, work: Workload, total: int) -> dict:
    """Plain batched ``generate`` on the first-step prompts of every section."""
    import torch

    engine._load()
    tok, model = engine._tokenizer, engine._model
    tok.padding_side = "left"
    texts = [engine.render(work.request(s, NO_MEMORY)) for s in work.sections[:total]]
    prompt = output = 0
    started = time.perf_counter()
    for i in range(0, len(texts), engine.max_batch):
        enc = tok(texts[i : i + engine.max_batch], return_tensors="pt", padding=True,
                  add_special_tokens=False).to(engine.device)
        with torch.inference_mode():
            out = model.generate(**enc, max_new_tokens=work.new_tokens, do_sample=False,
                                 temperature=None, top_p=None, top_k=None,
                                 pad_token_id=tok.pad_token_id or tok.eos_token_id)
        new = out[:, enc["input_ids"].shape[1] :]
        prompt += int(enc["attention_mask"].sum())
        output += int((new != tok.pad_token_id).sum()) if tok.pad_token_id is not None \
            else new.numel()
    if engine.device != "cpu":
        torch.cuda.synchronize()
    return rates(len(texts), prompt, output, time.perf_counter() - started)


def raw_http(engine, work: Workload, total: int, concurrency: int) -> dict:
    """``engine.generate`` from ``concurrency`` plain coroutines (no scheduler)."""
    requests = [work.request(s, NO_MEMORY) for s in work.sections[:total]]

    async def go() -> tuple[int, int, float]:
        queue = list(reversed(requests))
        prompt = output = 0

        async def worker() -> None:
            nonlocal prompt, output
            while queue:
                (reply,) = await engine.generate([queue.pop()])
                prompt += reply.input_tokens
                output += reply.output_tokens

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return prompt, output, time.perf_counter() - started

    prompt, output, seconds = asyncio.run(go())
    return rates(len(requests), prompt, output, seconds)


def show(label: str, fig: dict) -> None:
    batch = f", mean batch {fig['batch']:.1f}" if "batch" in fig else ""
    print(f"  {label:<10} {fig['calls']} calls in {fig['seconds']:.2f} s: "
          f"{fig['calls/s']:.2f} calls/s, {fig['prompt tok/s']:.0f} prompt tok/s, "
          f"{fig['output tok/s']:.1f} output tok/s{batch}")


ARCH_FILES = ("config.json", "generation_config.json", "tokenizer.json",
              "tokenizer_config.json", "chat_template.jinja", "special_tokens_map.json")


def export_architecture(spec: str | None, out: Path) -> None:
    """The model's config and tokenizer files, no weights (~3.5 MB for SmolLM2): what
    ``--random-weights`` needs on a machine the weight file cannot be copied to."""
    import shutil

    from treeagent.llm.models import hf_folder

    folder = hf_folder(spec)
    out.mkdir(parents=True, exist_ok=True)
    for name in ARCH_FILES:
        if (folder / name).is_file():
            shutil.copy(folder / name, out / name)
    print(f"wrote {', '.join(sorted(p.name for p in out.iterdir()))} to {out}")


def random_weights(arch: Path, out: Path) -> Path:
    """A folder with the architecture of ``arch`` and random weights (seed 0): the same
    compute per token as the trained model, so the same throughput; its replies are
    noise and run to ``--new-tokens`` (no early end of sequence)."""
    import shutil

    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    if not (out / "model.safetensors").is_file():
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(arch))
        model.save_pretrained(out)
        for name in ARCH_FILES:
            if name != "config.json" and (arch / name).is_file():
                shutil.copy(arch / name, out / name)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", choices=("transformers", "openai", "vllm"),
                   default="transformers")
    p.add_argument("--model", default=None, help="smollm2 (default), a folder, a .gguf "
                   "file, or a served model name")
    p.add_argument("--device", default="auto", help="transformers: auto|cpu|cuda|cuda:N")
    p.add_argument("--dtype", default=None, help="transformers: default bf16 on GPU, fp32 on CPU")
    p.add_argument("--attention", default="auto", help="transformers: auto|sdpa|"
                   "flash_attention_2|eager")
    p.add_argument("--max-batch", type=int, default=None)
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--base-url", nargs="+", dest="base_urls", help="openai: endpoint(s)")
    p.add_argument("--tokenizer", help="openai/vllm: a local model folder or .gguf whose "
                   "tokenizer sizes the prompts (default: --model)")
    p.add_argument("--programs", type=int, default=64)
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--prompt-tokens", type=int, default=3000)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--concurrency", type=int, default=None,
                   help="programs in flight (default: 2 x the engine's batch; 256 over HTTP)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--export-architecture", metavar="DIR", type=Path,
                   help="write the model's config and tokenizer files (no weights) to DIR, "
                   "then exit")
    p.add_argument("--random-weights", metavar="DIR", type=Path,
                   help="transformers: benchmark a model of DIR's architecture (from "
                   "--export-architecture) with random weights, where the weights cannot be "
                   "copied; same compute, replies are noise")
    p.add_argument("--small", action="store_true",
                   help="CPU setting: 8 programs x 2 steps, 512-token prompts, 16 new tokens")
    args = p.parse_args()
    if args.small:
        args.programs, args.steps, args.prompt_tokens, args.new_tokens = 8, 2, 512, 16

    if args.export_architecture:
        export_architecture(args.model, args.export_architecture)
        return
    if args.random_weights:
        import tempfile

        out = Path(tempfile.gettempdir()) / f"treeagent-random-{args.random_weights.name}"
        args.model = str(random_weights(args.random_weights, out))
        print(f"random weights of the architecture in {args.random_weights}: {out}")
    options: dict = {}
    if args.engine == "transformers":
        options = {"device": args.device, "dtype": args.dtype, "attention": args.attention,
                   "max_batch": args.max_batch, "threads": args.threads}
    elif args.base_urls:
        options = {"base_urls": args.base_urls}
    started = time.perf_counter()
    engine = make_engine(args.engine, args.model, **{k: v for k, v in options.items()
                                                     if v is not None})
    total = args.programs * args.steps
    if args.engine == "transformers":
        tokenizer = engine.tokenizer
    else:
        from treeagent.llm.models import load_tokenizer, resolve_model

        tokenizer = load_tokenizer(resolve_model(args.tokenizer or args.model))
    work = Workload(tokenizer, args.prompt_tokens, args.new_tokens, total)
    batch = int(getattr(engine, "max_batch", 1) or 1)
    concurrency = args.concurrency or (2 * batch if batch > 1 else 256)
    asyncio.run(engine.generate([work.request(work.sections[0], NO_MEMORY)]))  # load, warm
    print(f"engine {args.engine} {engine.model} (revision {engine.revision}) ready in "
          f"{time.perf_counter() - started:.1f} s; "
          + (f"device {engine.device}, {engine.dtype}, attention {engine.attention}, "
             if args.engine == "transformers" else "")
          + f"batch {batch}, {concurrency} programs in flight")
    print(f"workload: {args.programs} programs x {args.steps} MemAgent memory calls = {total}"
          f" calls, ~{args.prompt_tokens} prompt tokens, {args.new_tokens} new tokens, greedy")
    runs = []
    for r in range(args.runs):
        print(f"run {r + 1}:")
        sched = scheduled(engine, work, args.programs, args.steps, concurrency)
        show("scheduler", sched)
        if args.engine == "transformers":
            raw = raw_transformers(engine, work, total)
            show("raw", raw)
        else:
            raw = raw_http(engine, work, total, concurrency)
            show("raw", raw)
        runs.append((sched, raw))
    med = {k: statistics.median(s[k] for s, _ in runs)
           for k in ("calls/s", "prompt tok/s", "output tok/s")}
    raw_med = statistics.median(r["calls/s"] for _, r in runs)
    ratio = statistics.median(s["calls/s"] / r["calls/s"] for s, r in runs)
    print(f"median of {args.runs}: scheduler {med['calls/s']:.2f} calls/s, "
          f"{med['prompt tok/s']:.0f} prompt tok/s, {med['output tok/s']:.1f} output tok/s; "
          f"raw {raw_med:.2f} calls/s; scheduler/raw {ratio:.3f}")
    asyncio.run(engine.aclose())


if __name__ == "__main__":
    main()
