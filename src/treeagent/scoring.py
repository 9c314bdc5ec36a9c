"""Answer extraction and matching (paper Section 4.2 "Metrics" and Appendix C.4).

Extraction is kept separate from matching, as in lm-evaluation-harness:

* :func:`extract_answer` turns a raw model response into the final answer text;
* :func:`split_values` turns an answer into its values;
* :func:`match_value` decides whether one predicted value matches one reference value;
* :func:`score` applies the task's rule and returns a score in [0, 1].

Extraction (first rule that applies, after removing ``<think>...</think>`` reasoning):

1. the last ``\\boxed{...}`` (nested braces balanced; ``\\text{..}`` unwrapped). If the
   last ``\\boxed{`` is never closed the answer is malformed and extracts to ``""``;
2. the text after the last "the answer is" / "final answer:" / "answer:" (rest of that
   line, or the block of lines after it when the line ends there);
3. the final non-empty line (a trailing fenced block or a multi-line ``[...]`` list is
   taken whole).

Splitting (only the first kind of separator present is used, so values keep inner commas
when a stronger separator is present):

1. a JSON-ish list (``["a", "b"]``, ``['a', 'b']``, ``(1, 2)``) or a JSON object (its
   values in order); an unparseable ``[...]`` is unwrapped and split by the rules below;
2. newlines (leading bullets ``-``, ``*``, ``1.``, ``1)`` removed);
3. semicolons;
4. commas and the word "and" (``a, b and c``, ``a, b, and c``). A comma between a digit and
   exactly three digits is a thousands separator (``1,234`` is one number); write
   ``1, 234`` for two. Because place names and the like contain commas, :func:`score`
   re-joins adjacent comma/"and" pieces when the joined text matches a reference value
   (``Anza, CA`` against the reference ``"Anza, CA"``).

Matching: text compares after Unicode NFKC, case folding, whitespace collapsing and
removal of surrounding quotes, backticks, parentheses, markdown emphasis and trailing
punctuation; a space between a number and a unit mark (``77.6 "``, ``45 %``, ``12 °``)
is not a difference.
When the reference is a number (or a string that is a plain number) values also match
numerically within max(0.01, 0.1% of |reference|); ``1,234.5``, ``4.5e3`` and ``-3``
parse, and a percentage ``12.5%`` matches either 12.5 or 0.125.

Accepted forms: where a careful reader could state a reference value in two forms
(e.g. "June 1, 1980 (aged 28)" or "June 1, 1980"), the example lists the further forms
per value and a prediction matching any of them scores as the reference value does.

Scoring: single-value tasks (one field, conditional count, numeric extremum) score 1 or
0; a single-number answer may be a sentence with exactly one number in it ("12 records").
Multi-value tasks score matched / max(len(pred), len(ref)); ordered tasks compare value
i with reference i, ``most_frequent`` uses a maximum one-to-one matching. Empty,
malformed or unavailable (``None``) responses score 0.
"""

from __future__ import annotations

import ast
import json
import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Task:
    """One benchmark task (paper 4.1): its id, its title in Table 4, how its answer is
    matched (``"value"``: one value, ``"number"``: one number, ``"ordered"`` or
    ``"unordered"``: several values) and its family (``"lookup"`` or ``"aggregation"``)."""

    name: str
    title: str
    match: str
    family: str


TASK_RECORDS: tuple[Task, ...] = (
    Task("one_field", "1 Field", "value", "lookup"),
    Task("two_fields", "2 Fields", "ordered", "lookup"),
    Task("four_fields", "4 Fields", "ordered", "lookup"),
    Task("two_records", "2 Records", "ordered", "lookup"),
    Task("four_records", "4 Records", "ordered", "lookup"),
    Task("conditional_count", "Conditional Count", "number", "aggregation"),
    Task("most_frequent", "Frequent Values", "unordered", "aggregation"),
    Task("numeric_extremum", "Numeric Extremum", "number", "aggregation"),
)
"""The eight tasks, in the paper's order (collected in :data:`treeagent.registry.TASKS`)."""

TASKS: tuple[str, ...] = tuple(t.name for t in TASK_RECORDS)
"""The eight task ids (paper Section 4.1), in the paper's order."""

SINGLE_VALUE_TASKS = frozenset(t.name for t in TASK_RECORDS if t.match in ("value", "number"))
NUMERIC_TASKS = frozenset(t.name for t in TASK_RECORDS if t.match == "number")
UNORDERED_TASKS = frozenset(t.name for t in TASK_RECORDS if t.match == "unordered")

ABS_TOLERANCE = 0.01
REL_TOLERANCE = 0.001

# ---------------------------------------------------------------------------- extraction

_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.S | re.I)
_THINK_OPEN = re.compile(r"<(?:think|thinking|reasoning)>", re.I)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.I)
_BOXED = re.compile(r"\\(?:boxed|fbox)\s*\{")
_ANSWER_IS = re.compile(
    r"\b(?:final\s+)?answer\b[ \t]*(?:\*\*|__)?[ \t]*(?:is\b|:)[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*",
    re.I,
)
_LATEX_WRAP = re.compile(
    r"\\(?:text|textbf|textit|texttt|textrm|mathrm|mathbf|mathit|operatorname)\s*\{([^{}]*)\}"
)


def strip_reasoning(text: str) -> str:
    """Remove ``<think>...</think>`` blocks; an unclosed one runs to the end."""
    text = _THINK.sub("", text)
    parts = _THINK_CLOSE.split(text)
    text = parts[-1]  # a stray closing tag: everything before it was reasoning
    return _THINK_OPEN.split(text, maxsplit=1)[0]


def _last_boxed(text: str) -> str | None:
    """Content of the last ``\\boxed{...}``; ``""`` if it is unclosed; None if absent."""
    starts = list(_BOXED.finditer(text))
    if not starts:
        return None
    i, depth = starts[-1].end(), 1
    begin = i
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
            if depth == 0:
                return text[begin:i]
        i += 1
    return ""


def _clean_latex(text: str) -> str:
    prev = None
    while prev != text:
        prev, text = text, _LATEX_WRAP.sub(r"\1", text)
    text = text.replace("{,}", ",")
    text = re.sub(r"(?<=\d)\\,(?=\d)", "", text)
    text = re.sub(r"\\([%$&_#])", r"\1", text)
    text = text.replace("\\{", "").replace("\\}", "")
    text = re.sub(r"\\[,;:! ]|~", " ", text)
    return text.strip()


def _after_answer_is(text: str) -> str | None:
    matches = list(_ANSWER_IS.finditer(text))
    if not matches:
        return None
    rest = text[matches[-1].end():]
    first, _, tail = rest.partition("\n")
    if first.strip():
        return first.strip()
    block: list[str] = []
    for line in tail.splitlines():
        if line.strip():
            block.append(line)
        elif block:
            break
    return "\n".join(block).strip()


def _final_line(text: str) -> str:
    text = text.strip()
    if text.endswith("```") and text.count("```") >= 2:
        body = text[: -3]
        opener = body.rfind("```")
        return body[opener + 3:].partition("\n")[2].strip()
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return ""
    last = lines[-1].strip()
    closer = {"]": "[", "}": "{"}.get(last[-1:])
    if closer is not None and closer not in last:
        depth = 0
        for i in range(len(text) - 1, -1, -1):
            if text[i] == last[-1]:
                depth += 1
            elif text[i] == closer:
                depth -= 1
                if depth == 0:
                    return text[i:].strip()
    return last


def extract_answer(text: str | None) -> str:
    """The final answer of a raw response (C.4); ``""`` when unavailable or malformed."""
    if not text:
        return ""
    text = strip_reasoning(text)
    boxed = _last_boxed(text)
    if boxed is not None:
        return _clean_latex(boxed)
    after = _after_answer_is(text)
    if after is not None:
        return after
    return _final_line(text)


# ---------------------------------------------------------------------------- splitting

_BULLET = re.compile(r"^\s*(?:[-*•+]|\d+[.)])\s+")
_COMMA_AND = re.compile(
    r"(\s*(?:(?<!\d),|,(?!\d{3}(?!\d)))\s*(?:and\s+)?|\s+and\s+)", re.I
)
_WRAPPERS = (("**", "**"), ("__", "__"), ("`", "`"), ('"', '"'), ("'", "'"), ("“", "”"),
             ("‘", "’"), ("«", "»"), ("*", "*"), ("_", "_"), ("$", "$"), ("(", ")"))
_UNIT_GAP = re.compile(r"(?<=\d)\s+(?=[\"'%°″′])")


def _value_text(value: Any) -> str:
    """A JSON value as the text a model would write for it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, int | float):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)


def _as_container(text: str) -> list[Any] | None:
    """Parse a JSON-ish list / tuple / object; None if ``text`` is not one."""
    if not text or (text[0], text[-1]) not in {("[", "]"), ("(", ")"), ("{", "}")}:
        return None
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(text)
        except (ValueError, SyntaxError, TypeError, RecursionError, MemoryError):
            continue
        if isinstance(value, dict):
            return list(value.values())
        if isinstance(value, list | tuple | set):
            return list(value)
    return None


def _strip_outer(text: str) -> str:
    """Remove whole-answer wrappers (bold, quotes around the entire list, code ticks)."""
    prev = None
    text = text.strip()
    while prev != text:
        prev = text
        for left, right in _WRAPPERS[:3]:
            if len(text) > len(left) + len(right) and text.startswith(left) \
                    and text.endswith(right):
                text = text[len(left):-len(right)].strip()
        text = text.rstrip(".").strip()
    return text


def _pieces(answer: str) -> tuple[list[str], list[str] | None]:
    """Split ``answer`` into pieces; the separators are returned when re-joining is allowed."""
    text = _strip_outer(answer)
    if not text:
        return [], None
    items = _as_container(text)
    if items is not None:
        return [_value_text(v) for v in items], None
    if text[0] == "[" and text[-1] == "]":
        text = text[1:-1].strip()
    lines = [_BULLET.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line]
    if len(lines) > 1:
        return lines, None
    text = lines[0] if lines else ""
    if ";" in text:
        return [p.strip() for p in text.split(";") if p.strip()], None
    parts = _COMMA_AND.split(text)
    pieces, seps = parts[0::2], parts[1::2]
    if len(pieces) > 1 and not pieces[0].strip():  # leading separator
        pieces, seps = pieces[1:], seps[1:]
    if len(pieces) > 1 and not pieces[-1].strip():  # trailing separator
        pieces, seps = pieces[:-1], seps[:-1]
    return pieces, seps


def split_values(answer: str) -> list[str]:
    """Split an extracted answer into its values (rules in the module docstring)."""
    pieces, _ = _pieces(answer)
    return [p.strip() for p in pieces if normalize_text(p)]


# ---------------------------------------------------------------------------- matching

_NUMBER = re.compile(
    r"[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?%?"
)
_NUMBER_IN_TEXT = re.compile(
    r"(?<![\w.])[+-]?(?:(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?:[eE][+-]?\d+)?%?(?![\w])"
)


def normalize_text(value: str) -> str:
    """Case-folded text without surrounding quotes, emphasis or trailing punctuation."""
    text = unicodedata.normalize("NFKC", value).replace("\u2212", "-")
    text = text.replace("**", "").replace("__", "")
    prev = None
    while prev != text:
        prev = text
        text = text.strip().rstrip(".,;:!?").strip()
        for left, right in _WRAPPERS:
            if len(text) >= len(left) + len(right) and text.startswith(left) \
                    and text.endswith(right):
                text = text[len(left):len(text) - len(right)]
    return _UNIT_GAP.sub("", " ".join(text.casefold().split()))


def parse_number(text: str) -> list[float]:
    """Numeric readings of a normalized value: ``[]``, ``[x]``, or ``[p, p/100]`` for p%."""
    text = text.replace(" ", "")
    if not _NUMBER.fullmatch(text) or not any(c.isdigit() for c in text):
        return []
    percent = text.endswith("%")
    try:
        x = float(text.rstrip("%").replace(",", ""))
    except ValueError:
        return []
    if not math.isfinite(x):
        return []
    return [x, x / 100.0] if percent else [x]


def _ref_numbers(ref: Any) -> list[float]:
    if isinstance(ref, bool) or ref is None:
        return []
    if isinstance(ref, int | float):
        return [float(ref)] if math.isfinite(ref) else []
    if isinstance(ref, str):
        return parse_number(normalize_text(ref))
    return []


def within_tolerance(pred: float, ref: float) -> bool:
    """|pred - ref| <= max(0.01, 0.1% of |ref|) (C.4), with a float round-off allowance."""
    tol = max(ABS_TOLERANCE, REL_TOLERANCE * abs(ref))
    return abs(pred - ref) <= tol * (1 + 1e-9)


def match_value(pred: str, ref: Any) -> bool:
    """Does one predicted value match one reference value (a JSON scalar)?"""
    p = normalize_text(pred)
    if not p:
        return False
    if p == normalize_text(_value_text(ref)):
        return True
    refs = _ref_numbers(ref)
    if not refs:
        return False
    return any(within_tolerance(x, r) for x in parse_number(p) for r in refs)


# ---------------------------------------------------------------------------- scoring


def _span(pieces: list[str], seps: list[str], i: int, j: int) -> str:
    out = [pieces[i]]
    for k in range(i, j - 1):
        out += [seps[k], pieces[k + 1]]
    return "".join(out)


Forms = Sequence[Any]
"""One reference value and the further forms accepted for it (first: the reference)."""


def _match_forms(pred: str, forms: Forms) -> bool:
    return any(match_value(pred, f) for f in forms)


def _width(forms: Forms) -> int:
    """How many comma/"and" pieces a reference value (its widest form) splits into."""
    widths = [1]
    for ref in forms:
        pieces, seps = _pieces(_value_text(ref))
        widths.append(len(pieces) if seps is not None else 1)
    return max(widths)


def _groups(pieces: list[str], seps: list[str] | None, refs: Sequence[Forms],
            ordered: bool) -> tuple[list[str], list[bool | None]]:
    """Predicted values; adjacent pieces are joined when the join matches a reference.

    Returns the values and, for ordered tasks, whether value i matched reference i
    (None: left to the unordered matching).
    """
    values: list[str] = []
    hits: list[bool | None] = []
    used: set[int] = set()
    i = 0
    while i < len(pieces):
        step, hit = 1, None
        if seps is not None:
            targets = [len(values)] if ordered else [k for k in range(len(refs)) if k not in used]
            for k in targets:
                if k >= len(refs):
                    continue
                for w in sorted({_width([f]) for f in refs[k]} - {1}, reverse=True):
                    if i + w <= len(pieces) \
                            and _match_forms(_span(pieces, seps, i, i + w), refs[k]):
                        step, hit = w, True
                        used.add(k)
                        break
                if hit:
                    break
        text = _span(pieces, seps, i, i + step) if seps is not None else pieces[i]
        i += step
        if not normalize_text(text):
            continue
        if ordered and hit is None:
            k = len(values)
            hit = k < len(refs) and _match_forms(text, refs[k])
        values.append(text)
        hits.append(hit)
    return values, hits


def _max_matching(values: list[str], refs: Sequence[Forms]) -> int:
    """Size of a maximum one-to-one matching between values and references."""
    adj = [[k for k, r in enumerate(refs) if _match_forms(v, r)] for v in values]
    owner: dict[int, int] = {}

    def augment(i: int, seen: set[int]) -> bool:
        for k in adj[i]:
            if k in seen:
                continue
            seen.add(k)
            if k not in owner or augment(owner[k], seen):
                owner[k] = i
                return True
        return False

    return sum(augment(i, set()) for i in range(len(values)))


def _single_number(answer: str) -> str | None:
    found = _NUMBER_IN_TEXT.findall(unicodedata.normalize("NFKC", answer).replace("**", ""))
    return found[0] if len(found) == 1 else None


def _with_accepted(refs: list[Any], accepted: Sequence[Sequence[Any]] | None) -> list[list[Any]]:
    """Each reference value with the further forms accepted for it (``accepted[i]``:
    the forms a careful reader may state instead of value i; empty or absent: none)."""
    if not accepted:
        return [[r] for r in refs]
    if len(accepted) != len(refs) or not all(isinstance(a, list | tuple) for a in accepted):
        raise ValueError(f"accepted forms {accepted!r} do not give one list per reference "
                         f"value ({len(refs)})")
    return [[r, *a] for r, a in zip(refs, accepted)]


def score(task: str, reference: Any, prediction: str | None,
          accepted: Sequence[Sequence[Any]] | None = None) -> float:
    """Score one raw response against a JSON reference (scalar or list) for ``task``.

    ``accepted`` holds, for each reference value in order, the further forms a careful
    reader may state for it (an example's ``accepted`` column, docs/fidelity.md "HTML
    values"); a prediction matching any of them scores as the reference value does.
    """
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    refs = list(reference) if isinstance(reference, list | tuple) else [reference]
    forms = _with_accepted(refs, accepted)
    answer = extract_answer(prediction)
    if not normalize_text(answer):
        return 0.0
    if task in SINGLE_VALUE_TASKS:
        if len(refs) != 1:
            raise ValueError(f"task {task!r} needs a single reference value, got {reference!r}")
        ref = forms[0]
        if _match_forms(answer, ref):
            return 1.0
        values = split_values(answer)
        if len(values) == 1 and _match_forms(values[0], ref):
            return 1.0
        if task in NUMERIC_TASKS:
            number = _single_number(answer)
            return float(number is not None and _match_forms(number, ref))
        return 0.0
    if not refs:
        return 0.0
    pieces, seps = _pieces(answer)
    ordered = task not in UNORDERED_TASKS
    values, hits = _groups(pieces, seps, forms, ordered)
    if not values:
        return 0.0
    matched = sum(bool(h) for h in hits) if ordered else _max_matching(values, forms)
    return matched / max(len(values), len(refs))


def score_json(task: str, reference_json: str, prediction: str | None,
               accepted_json: str | None = None) -> float:
    """:func:`score` with the reference (and the accepted forms) given as JSON text (the
    scored-row format)."""
    accepted = json.loads(accepted_json) if accepted_json else None
    return score(task, json.loads(reference_json), prediction, accepted)
