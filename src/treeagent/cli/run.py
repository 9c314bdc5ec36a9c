"""``treeagent run FILE --question Q``: answer one question with a memory agent.

Prints the final answer (extracted as the scorer does, C.4) and one cost line: model
calls (requests sent, retries, cache hits), input tokens, output tokens, seconds. A
file that cannot be read or parsed, or an option out of range, gives one line
``error: FILE:LINE:COL: message`` and exit status 2 (as ``treeagent sections``); an
unavailable model response gives an empty answer, a message on stderr and exit status
1. ``--trace`` is written as the run goes (a killed run keeps its calls) and completed
at the end; if it cannot be written the answer is still printed, then the write
failure, with exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from treeagent.registry import AGENTS, ENGINES, FORMATS, METHODS, LazyText, lazy_choices, or_list


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="answer a question about a file with a memory agent")
    # choices and the formats' titles are read from the registries only when shown/checked
    p.add_argument("file", help="the input document (%(formats)s), or - for standard "
                   "input").formats = LazyText(
        lambda: or_list(FORMATS.titles.values()))
    p.add_argument("--question", "-q", required=True, help="the question to answer")
    lazy_choices(p.add_argument("--agent", default="memagent",
                                help="memory agent whose workflow reads the file (C.2)"),
                 AGENTS.names)
    lazy_choices(p.add_argument("--method", default="treeagent", help="reading mode: Flat "
                                "chunks, Tree sections, + path, + residual links (3)"),
                 METHODS.names)
    lazy_choices(p.add_argument("--engine", default="transformers",
                                help="model engine: local transformers, a vLLM server, or an "
                                     "OpenAI-compatible URL"), ENGINES.names)
    p.add_argument("--model", help="model spec: smollm2 (default), a folder, a .gguf file, "
                   "or a served model name (openai)")
    p.add_argument("--base-url", action="extend", nargs="+", dest="base_urls", metavar="URL",
                   help="OpenAI-compatible endpoint(s); several are load-balanced")
    p.add_argument("--budget", type=int, default=5000, help="base budget C (tokens)")
    lazy_choices(p.add_argument("--format", help="input format (default: detected)"),
                 FORMATS.names)
    p.add_argument("--task", help="benchmark task id, for its answer instruction (C.3)")
    p.add_argument("--tokenizer", help="tokenizer name or folder (default: the model's)")
    p.add_argument("--context-window", type=int, help="model context length in tokens "
                   "(default: from the model; clamps the request limit)")
    p.add_argument("--max-new-tokens", type=int,
                   help="cap every call's new tokens (quick runs; default: Table 2)")
    p.add_argument("--prompts", metavar="DIR", help="folder of prompt templates to use "
                   "instead of the packaged ones (same file names)")
    p.add_argument("--cache", metavar="PATH", help="call cache/journal (SQLite) to reuse")
    p.add_argument("--revision", help="the model's revision: a hub commit to load, or the "
                   "served model's (openai; without one its calls bypass the cache)")
    p.add_argument("--trace", metavar="OUT.jsonl", help="write every call to this file")
    p.add_argument("--json", action="store_true", help="print one JSON object (answer, "
                   "prediction, calls, tokens, seconds) instead of the two lines")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="openai/vllm: seconds "
                   "one attempt may take, first byte to last (default 600); one call, "
                   "retries included, gets twice that")
    p.add_argument("--retries", type=int, metavar="N", help="openai/vllm: retries after a "
                   "failed attempt (default 6)")
    p.set_defaults(func=run)


def _fail(message: str, status: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def _read(file: str) -> str | int:
    """The file's text (standard input for ``-``), or an exit status after printing the
    error (as ``sections``)."""
    from treeagent import formats
    from treeagent.cli.sections import read_input

    try:
        return read_input(file)
    except formats.ReadError as exc:
        return _fail(str(exc))


def _name(file: str) -> str:
    return "<stdin>" if file == "-" else file


def run(args: argparse.Namespace) -> int:
    from treeagent import formats
    from treeagent.algorithm.tree import ParseError

    text = _read(args.file)
    if isinstance(text, int):
        return text
    if args.budget < 1:
        return _fail("--budget: must be a positive number of tokens")
    try:
        fmt = args.format or formats.detect(Path(args.file), text)
    except ValueError as exc:
        return _fail(str(exc))
    try:
        tree = formats.parse(text, fmt)
    except ParseError as exc:
        return _fail(f"{_name(args.file)}:{exc.line}:{exc.col}: {exc.message}")

    from treeagent.agents.templates import Prompts, TemplateError

    try:
        prompts = Prompts(args.prompts)
    except (TemplateError, OSError, UnicodeDecodeError) as exc:
        return _fail(f"--prompts: {exc}")
    bad = _check_ranges(args)
    if bad is not None:
        return bad
    options = _engine_options(args)
    if isinstance(options, int):
        return options
    outputs = _open_outputs(args)  # every path checked before the first call
    if isinstance(outputs, int):
        return outputs
    cache, trace = outputs
    try:
        return _answer(args, tree, fmt, prompts, options, cache, trace)
    finally:
        if cache is not None:
            cache.close()
        if trace is not None:
            try:
                trace.close()
            except OSError:  # a failed write: said after the answer
                pass


def _check_ranges(args: argparse.Namespace) -> int | None:
    """Exit status after the error when ``--max-new-tokens`` is not positive or
    ``--context-window`` leaves no room for a prompt beside the agent's largest reply
    (Table 2's limits, capped by ``--max-new-tokens``); None when both are usable."""
    from treeagent.agents.runner import capped

    if args.max_new_tokens is not None and args.max_new_tokens < 1:
        return _fail("--max-new-tokens: must be a positive number of tokens")
    if args.context_window is None:
        return None
    limits = capped(AGENTS.get(args.agent).limits, args.max_new_tokens)
    reply = max(limits.memory, limits.answer, limits.controller or 0)
    if args.context_window <= reply:
        return _fail(f"--context-window: {args.context_window} tokens cannot hold a prompt "
                     f"and a reply of up to {reply} new tokens ({args.agent}); give more "
                     f"than {reply}")
    return None


def _engine_options(args: argparse.Namespace) -> dict | int:
    """Engine keyword arguments from the flags, or an exit status after the error."""
    from treeagent.llm.openai_engine import check_base_url

    remote = args.engine in ("openai", "vllm")
    options: dict = {}
    for flag, value, key, low in (("--timeout", args.timeout, "timeout", 0),
                                  ("--retries", args.retries, "max_retries", -1)):
        if value is None:
            continue
        if not remote:
            return _fail(f"{flag}: applies to --engine openai or vllm")
        if not low < value < float("inf"):  # NaN too
            return _fail(f"{flag}: must be {'positive' if low == 0 else '>= 0'}")
        options[key] = value
    if args.revision:
        options["revision"] = args.revision
    if args.base_urls and args.engine == "openai":
        try:
            options["base_urls"] = [check_base_url(u) for u in args.base_urls]
        except ValueError as exc:
            return _fail(f"--base-url: {exc}")
    return options


def _open_outputs(args: argparse.Namespace):
    """(call cache or None, open trace file or None), or an exit status after the error."""
    from treeagent.llm.cache import CacheError, CallCache

    cache = trace = None
    if args.cache:
        try:
            cache = CallCache(args.cache)
        except CacheError as exc:
            return _fail(f"--cache: {exc}")
    if args.trace:
        try:
            if Path(args.trace).is_dir():
                raise IsADirectoryError(21, "is a folder")
            trace = open(args.trace, "w", encoding="utf-8")  # noqa: SIM115 (closed by run)
        except OSError as exc:
            if cache is not None:
                cache.close()
            return _fail(f"--trace: {args.trace}: {exc.strerror or exc}")
    return cache, trace


class _TraceFile:
    """``--trace`` written as the run goes: one line per call, flushed (a killed run
    keeps what it did), then rewritten whole at the end with each call's reading step
    and cuts. A write that fails is remembered (``failure``) and ends the writing; the
    run goes on."""

    def __init__(self, out, agent: str, method: str) -> None:
        self.out, self.failure = out, None
        self.head = {"agent": agent, "method": method}

    def _guard(self, write) -> None:
        if self.failure is not None:
            return
        try:
            write()
            self.out.flush()
        except OSError as exc:
            self.failure = exc.strerror or str(exc)

    def call(self, example_id: str, index: int, call) -> None:
        line = {"example_id": example_id, **self.head, **call.entry(index)}
        self._guard(lambda: self.out.write(json.dumps(line, ensure_ascii=False) + "\n"))

    def complete(self, example_id: str, result) -> None:
        """The whole trace, with steps and cuts, in place of the lines written so far
        (a pipe or device that cannot seek keeps those lines)."""
        from treeagent.agents.evaluate import write_trace

        def rewrite() -> None:
            if self.out.seekable():
                self.out.seek(0)
                self.out.truncate()
                write_trace(self.out, example_id, result)

        self._guard(rewrite)


def _run_with_progress(run_programs, programs, engine, cache, on_call=None):
    """Run the program with its progress on stderr (:mod:`treeagent.pipeline.progress`: a bar on a
    terminal, else a line at an interval and a final line with the total and the elapsed
    time). Returns the program's outcome and the run's totals."""
    from pathlib import PurePath

    from treeagent.llm.scheduler import Meter

    name, _ = programs[0]
    outcomes = run_programs(programs, engine, cache=cache, concurrency=1,
                            progress=Meter(f"run {PurePath(name).name or name}",
                                           total=len(programs)),
                            keep_requests=True, on_call=on_call)
    return outcomes[name], outcomes.totals


def _note_capped(stats: dict | None) -> None:
    """One stderr line when the engine capped replies (openai/vllm ``engine.stats``)."""
    if stats and any(stats.get(k) for k in ("capped_bytes", "capped_tokens",
                                            "deadline_exceeded")):
        print(f"note: replies refused over max_reply_bytes {stats['capped_bytes']}, cut to "
              f"max_tokens {stats['capped_tokens']}, calls past their deadline "
              f"{stats['deadline_exceeded']}", file=sys.stderr)


def _answer(args: argparse.Namespace, tree, fmt: str, prompts, options: dict, cache,
            trace) -> int:
    import asyncio

    from treeagent.agents.evaluate import model_context_window, resolve_tokenizer
    from treeagent.agents.runner import Result, program, with_calls
    from treeagent.llm import make_engine, run_programs
    from treeagent.llm.scheduler import engine_stats
    from treeagent.scoring import extract_answer
    from treeagent.tokenizers.tokens import TokenizerError

    try:
        engine = make_engine(args.engine, args.model, **options)
    except (ValueError, OSError) as exc:
        return _fail(f"--model: {exc}")
    try:
        try:
            tokenizer = resolve_tokenizer(engine, args.tokenizer, agent=args.agent)
        except (ValueError, TokenizerError) as exc:
            return _fail(f"--tokenizer: {exc}")
        window = args.context_window or model_context_window(engine)
        try:
            gen = program(args.agent, args.method, tree, fmt, args.question, tokenizer,
                          base_budget=args.budget, task=args.task, prompts=prompts,
                          context_window=window,
                          options={"max_new_tokens": args.max_new_tokens})
        except ValueError as exc:
            return _fail(str(exc))
        writer = None if trace is None else _TraceFile(trace, args.agent, args.method)
        outcome, totals = _run_with_progress(run_programs, [(_name(args.file), gen)], engine,
                                             cache, None if writer is None else writer.call)
    finally:
        asyncio.run(engine.aclose())
    if not isinstance(outcome.result, Result):
        return _fail(f"{_name(args.file)}: {outcome.error}", 1)
    result = with_calls(outcome.result, outcome.trace)
    if writer is not None:
        writer.complete(_name(args.file), result)
    if args.json:
        print(json.dumps({
            "file": _name(args.file), "question": args.question, "agent": args.agent,
            "method": args.method, "answer": extract_answer(result.prediction),
            "prediction": result.prediction, "calls": result.calls,
            "requests": totals.requests, "retries": totals.retries,
            "cache_hits": result.cached_calls,
            "input_tokens": result.input_tokens, "output_tokens": result.output_tokens,
            "seconds": round(result.seconds, 3), "error": result.error,
        }, ensure_ascii=False))
    else:
        print(extract_answer(result.prediction))
        print(f"calls {result.calls} (requests {totals.requests}, retries {totals.retries}, "
              f"cache hits {result.cached_calls}), input tokens {result.input_tokens}, "
              f"output tokens {result.output_tokens}, seconds {result.seconds:.1f}")
    _note_capped(engine_stats(engine))
    if result.prediction is None:
        return _fail(f"no answer: {result.error}", 1)
    if writer is not None and writer.failure is not None:
        return _fail(f"--trace: {args.trace}: {writer.failure} (the answer above is "
                     "complete; the trace is not)", 1)
    return 0
