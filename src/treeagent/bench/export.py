"""Export the validated benchmark (paper 4.1, B.1) to JSONL and to a Hugging Face
``datasets`` DatasetDict with a dataset card.

Each exported example carries its context text (materialized from the stored recipe
and checked against ``context_hash``), question, reference and accepted forms, task,
length, format and provenance: one entry per source file its context draws on (source
group, file, license, repository and commit where known). Rows are read a few at a time, so a
format's 1M-token contexts are never all in memory; the ``datasets`` export writes
through Arrow on disk (``Dataset.from_generator``).

Every split the build wrote is exported (:mod:`treeagent.bench.splits`), under Hugging
Face's names: ``train``, ``validation`` (the paper's development split) and ``test``;
each JSONL row says its ``split``, and the ``datasets`` export is one configuration per
format (``DEST/<format>``, a DatasetDict of its splits).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from treeagent.bench import splits as S
from treeagent.formats import FORMATS
from treeagent.registry import lazy_choices

PROVENANCE_KEYS = ("source", "file", "license", "repo", "commit")
"""Fields of each provenance entry (empty string where a source does not say)."""
_COLUMNS = ("id", "split", "format", "task", "length", "bucket", "question", "reference", "accepted",
            "spec", "context", "source_ids", "provenance", "flags", "context_hash", "content_hash")


def examples_path(validated: str | Path, fmt: str) -> Path:
    return Path(validated) / "examples" / f"{fmt}.parquet"


def stored_formats(validated: str | Path) -> list[str]:
    """Formats with an example table under ``validated/``, in registry order."""
    return [f for f in FORMATS if examples_path(validated, f).is_file()]


def token_columns(validated: str | Path, fmt: str, split: str = S.TEST) -> list[str]:
    """The per-tokenizer count columns (``tokens_qwen3``, ...) of a format's table."""
    import pyarrow.parquet as pq

    names = pq.read_schema(examples_path(S.split_dir(validated, split), fmt)).names
    return [n for n in names if n.startswith("tokens_")]


def _unit_provenance(validated: Path, fmt: str) -> dict[str, dict[str, str]]:
    """unit id -> its provenance entry (one per source file), from the unit table."""
    import pyarrow.parquet as pq

    path = Path(validated) / "units" / f"{fmt}.parquet"
    t = pq.read_table(path, columns=["unit_id", "source", "provenance"]).to_pydict()
    out = {}
    for uid, source, prov in zip(t["unit_id"], t["source"], t["provenance"]):
        p = json.loads(prov) if prov else {}
        entry = {"source": source, "file": p.get("file") or uid.split("#")[0],
                 "license": p.get("license") or "", "repo": p.get("repo") or "",
                 "commit": p.get("commit") or ""}
        out[uid] = {k: str(v) for k, v in entry.items()}
    return out


def _count_rows(validated: str | Path, fmt: str, split: str = S.TEST) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(examples_path(S.split_dir(validated, split), fmt)).metadata.num_rows


def count_examples(validated: str | Path, formats: Sequence[str]) -> dict[str, int]:
    """Stored examples per format (0 where a format has no table)."""
    return {f: _count_rows(validated, f) if examples_path(validated, f).is_file() else 0
            for f in formats}


def iter_examples(validated: str | Path, fmt: str, split: str = S.TEST
                  ) -> Iterator[dict[str, Any]]:
    """The export rows of one format's ``split``, in table order (raises ``ValueError``
    when a materialized context does not match its stored hash)."""
    from treeagent.bench import io
    from treeagent.bench.validate import sha256

    validated = S.split_dir(validated, split)
    path = examples_path(validated, fmt)
    units = io.load_units(io.units_path(path, fmt))
    provenance = _unit_provenance(validated, fmt)
    counts = token_columns(validated, fmt)
    for batch in io.example_batches(path, batch_size=16):
        for row in batch.to_pylist():
            context = io.materialize(fmt, row["unit_ids"], units)
            if sha256(context) != row["context_hash"]:
                raise ValueError(f"{path}: {row['id']}: materialized context does not "
                                 "match its stored hash")
            files: dict[str, dict[str, str]] = {}
            for uid in row["unit_ids"]:
                entry = provenance[uid]
                files.setdefault(entry["file"], entry)
            out = {k: row[k] for k in ("id", "format", "task", "bucket", "question", "spec",
                                       "source_ids", "context_hash", "content_hash")}
            out.update(split=S.HF_SPLIT[split], length=int(row["length"]),
                       reference=row["answer"],
                       accepted=row.get("accepted") or "[]", context=context,
                       provenance=list(files.values()), flags=list(row["flags"] or []))
            out.update({c: row[c] for c in counts})
            yield out


def write_jsonl(validated: str | Path, formats: Sequence[str], out: TextIO) -> dict[str, int]:
    """One JSON object per line, every split of each format (test first); ``reference``
    and ``spec`` as JSON values. Returns the number of examples written per format."""
    written = {}
    for fmt in formats:
        n = 0
        rows = (row for split in S.stored(validated, fmt)
                for row in iter_examples(validated, fmt, split))
        for row in rows:
            row = {**row, "reference": json.loads(row["reference"]),
                   "accepted": json.loads(row["accepted"]), "spec": json.loads(row["spec"])}
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
        written[fmt] = n
    return written


def _features(token_cols: Sequence[str]) -> Any:
    from datasets import Features, List, Value

    string = Value("string")
    spec: dict[str, Any] = {c: string for c in _COLUMNS}
    spec.update(length=Value("int64"), source_ids=List(string), flags=List(string),
                provenance=List({k: string for k in PROVENANCE_KEYS}))
    spec.update({c: Value("int64") for c in token_cols})
    return Features(spec)


def _rows(validated: str, fmt: str, split: str) -> Iterator[dict[str, Any]]:
    yield from iter_examples(validated, fmt, split)


def write_datasets(validated: str | Path, formats: Sequence[str],
                   dest: str | Path) -> dict[str, dict[str, int]]:
    """One configuration per format: a DatasetDict of its splits (``train``,
    ``validation``: the paper's development split, ``test``) saved with ``save_to_disk``
    under ``dest/<format>``, and a dataset card ``dest/README.md``. Returns examples per
    format and split. ``reference`` and ``spec`` are JSON text (their shapes differ
    across tasks)."""
    import datasets
    from datasets import Dataset, DatasetDict

    dest = Path(dest)
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    counts: dict[str, dict[str, int]] = {}
    try:
        with tempfile.TemporaryDirectory(prefix="treeagent-export-") as cache:
            for fmt in formats:
                features = _features(token_columns(validated, fmt))
                parts = {}
                for split in sorted(S.stored(validated, fmt), key=list(S.HF_SPLIT).index):
                    name = S.HF_SPLIT[split]
                    if _count_rows(validated, fmt, split) == 0:  # from_generator: no rows
                        parts[name] = Dataset.from_dict({k: [] for k in features},
                                                        features=features)
                        continue
                    parts[name] = Dataset.from_generator(
                        _rows, features=features,
                        gen_kwargs={"validated": str(validated), "fmt": fmt, "split": split},
                        cache_dir=cache, keep_in_memory=False)
                DatasetDict(parts).save_to_disk(  # one shard even for an empty split
                    str(dest / fmt), num_shards=dict.fromkeys(parts, 1))
                counts[fmt] = {name: len(ds) for name, ds in parts.items()}
    finally:
        if bars:
            datasets.enable_progress_bars()
    (dest / "README.md").write_text(dataset_card(validated, formats, counts), encoding="utf-8")
    return counts


def _sources_used(validated: Path, formats: Sequence[str]
                  ) -> tuple[list[tuple[str, str, str, int]], list[dict[str, str]]]:
    """(format, source group, license, examples drawing on it) for every source group
    in the exported contexts (answers and distractors), and every source file with its
    provenance."""
    import pyarrow.parquet as pq

    from treeagent.bench.sources.registry import SOURCES

    groups, files = [], {}
    for fmt in formats:
        used: Counter[str] = Counter()
        for split, path in S.stored(validated, fmt).items():
            provenance = _unit_provenance(S.split_dir(validated, split), fmt)
            for batch in pq.ParquetFile(path).iter_batches(columns=["unit_ids"]):
                for ids in batch.column("unit_ids").to_pylist():
                    entries = [provenance[u] for u in ids]
                    used.update({e["source"] for e in entries})
                    for e in entries:
                        files.setdefault(e["file"], e)
        for name, n in sorted(used.items()):
            spec = SOURCES.get((fmt, name))
            groups.append((fmt, name, spec.license if spec else "see the files below", n))
    return groups, [files[k] for k in sorted(files)]


def dataset_card(validated: str | Path, formats: Sequence[str],
                 counts: dict[str, dict[str, int]]) -> str:
    """The dataset card: splits, columns, build parameters, and the license and
    provenance of each source group and source file."""
    validated = Path(validated)
    inventory_path = validated / "inventory.json"
    params = {}
    if inventory_path.is_file():
        params = json.loads(inventory_path.read_text(encoding="utf-8")).get("params", {})
    split_rows = "\n".join(f"| `{f}` | `{s}` | {n} |" for f in formats
                           for s, n in counts.get(f, {}).items())
    groups, files = _sources_used(validated, formats)
    source_rows = "\n".join(f"| {f} | {name} | {lic} | {n} |" for f, name, lic, n in groups)
    file_rows = "\n".join(
        f"| `{e['file']}` | {e['license'] or '—'} | "
        f"{(e['repo'] + '@' + e['commit'][:12]) if e['repo'] else '—'} |"
        for e in files)
    return f"""---
license: other
license_name: per-source
pretty_name: TreeAgent long hierarchical data benchmark
task_categories:
- question-answering
language:
- en
tags:
- long-context
- structured-data
---

# TreeAgent benchmark

Question answering over long hierarchical documents (JSON, HTML, YAML, static
JavaScript initializers), built and independently validated by `treeagent bench build`
(paper Section 4.1, Appendix B.1) and exported by `treeagent bench export`. Each
context is one valid document of its format, filled to a length bucket with real
distractor units.

## Configurations and splits

One configuration per format (`datasets.load_from_disk(PATH/<format>)`), each with the
splits it was built with: `test` (the held-out examples the paper's main text evaluates),
and where the build has them `train` and `validation` (the paper's development split),
built by the same code from disjoint source documents (paper Appendix B.2).

| configuration | split | examples |
|---|---|---:|
{split_rows}

## Columns

`id`, `split`, `format`, `task`, `length` (bucket in construction tokens), `bucket`, `question`,
`reference` (the reference answer, JSON text), `accepted` (JSON text: for each reference
value in order, the further forms a careful reader may state and the scorer accepts;
`[]`: none), `spec` (the executable reference
specification, JSON text), `context` (the document text), `source_ids` (the context's
units that hold the answer's evidence: a source file, or `file#path` for one record of a
file cut into records; `provenance` credits each file), `provenance`
(per source file: source, file, license, repo, commit), `flags`, `context_hash` (sha256
of `context`), `content_hash`, and `tokens_<tokenizer>` (the context's token count under
each construction tokenizer).

Build parameters: `{json.dumps(params, sort_keys=True)}`

## Licenses and provenance

The contexts are unmodified real documents; each source keeps its own license:

| format | source | license | examples using it |
|---|---|---|---|
{source_rows}

Source files:

| file | license | repository@commit |
|---|---|---|
{file_rows}
"""


# ------------------------------------------------------------------ command line


def register(bsub: argparse._SubParsersAction) -> None:
    """Add ``treeagent bench export``."""
    e = bsub.add_parser("export", help="export validated examples to JSONL or a Hugging "
                        "Face datasets folder (with a dataset card)")
    e.add_argument("dest", help="output: a .jsonl file, '-' (JSONL on stdout) or a folder "
                   "for datasets.load_from_disk")
    e.add_argument("--to", choices=["jsonl", "datasets"],
                   help="output kind (default: jsonl for '-' or *.jsonl, else datasets)")
    e.add_argument("--validated", default="validated", metavar="DIR",
                   help="the build's output folder (default: validated)")
    lazy_choices(e.add_argument("--formats", nargs="+", metavar="FORMAT",
                                help="formats to export (default: every format built)"),
                 FORMATS)
    e.add_argument("--allow-empty", action="store_true",
                   help="export even when a requested format has no examples")
    e.set_defaults(func=run)


def _fail(message: str, status: int = 2) -> int:
    print(f"error: {message}", file=sys.stderr)
    return status


def run(args: argparse.Namespace) -> int:
    from treeagent.bench import shortfall

    validated = Path(args.validated)
    if not (validated / "examples").is_dir():
        return _fail(f"{validated}/examples: not found (run `treeagent bench build` first)")
    formats = list(args.formats or stored_formats(validated))
    if not formats:
        return _fail(f"{validated}/examples: no example tables")
    empty = [f for f, n in count_examples(validated, formats).items() if n == 0]
    if empty:
        for line in shortfall.report_stored(validated, empty):
            print(f"{'warning' if args.allow_empty else 'error'}: {line}", file=sys.stderr)
        if not args.allow_empty:
            print("error: nothing exported; pass --allow-empty to export empty formats",
                  file=sys.stderr)
            return 1
    kind = args.to or ("jsonl" if args.dest == "-" or args.dest.endswith(".jsonl")
                       else "datasets")
    formats = [f for f in formats if examples_path(validated, f).is_file()]
    try:
        if kind == "datasets":
            counts = write_datasets(validated, formats, args.dest)
        elif args.dest == "-":
            counts = write_jsonl(validated, formats, sys.stdout)
        else:
            Path(args.dest).parent.mkdir(parents=True, exist_ok=True)
            with open(args.dest, "w", encoding="utf-8") as out:
                counts = write_jsonl(validated, formats, out)
    except BrokenPipeError:
        raise  # the reader of stdout is gone: treeagent.cli.main ends quietly
    except (ValueError, OSError) as exc:
        return _fail(str(exc))
    per_format = {f: sum(n.values()) if isinstance(n, dict) else n for f, n in counts.items()}
    summary = ", ".join(f"{f} {n}" for f, n in per_format.items())
    print(f"exported {sum(per_format.values())} examples ({summary}) -> {args.dest}",
          file=sys.stderr)
    return 0
