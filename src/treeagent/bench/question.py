"""What a generated question is, and what it may not say: its record (:class:`Question`) and
the leak check of paper C.3 (no schema key path, index, structural path or location)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from treeagent.bench.values import human_field, norm


@dataclass(slots=True)
class Question:
    """A generated question with its reference specification and answer."""

    task: str
    question: str
    spec: dict[str, Any]
    answer: Any
    record_ids: list[str] = field(default_factory=list)  # supporting records
    visible: list[str] = field(default_factory=list)  # descriptions/values quoted in it


_LEAKS = (
    (re.compile(r"\$[.\[]"), "structural path"),
    (re.compile(r"\[\s*\d+\s*\]"), "index"),
    (re.compile(r"(?:^|\s)/[a-z][\w-]*(?:\[\d+\])?(?:/|\b)"), "markup path"),
    (re.compile(r"\b[A-Za-z]\w*\.[A-Za-z_]\w*\b"), "dotted key path"),
    (re.compile(r"\b\w+_\w+\b"), "schema key"),
    (re.compile(r"#\s*\d|\bno\.\s*\d|\b(?:entry|record|element|item|response|document|"
                r"page|unit|node|row|object)\s+\d+", re.I), "index"),
    (re.compile(r"\b(?:index|offset|line number|position|json ?path|xpath|key path|schema)\b",
                re.I), "location word"),
    (re.compile(r"\b(?:first|second|third|fourth|fifth|last|\d+(?:st|nd|rd|th))\b", re.I),
     "ordinal location"),
)


def leaks(question: str, visible: Sequence[str] = (), fields: Sequence[str] = (),
          paths: Sequence[str] = ()) -> list[str]:
    """Why ``question`` reveals schema or location (C.3); ``[]`` when it does not.

    The quoted ``visible`` texts (record descriptions, condition values) and the human
    ``fields`` names are content the question must name: field names must be words
    (:func:`human_field`), and all of them are masked before the template is checked;
    ``paths`` are the records' structural paths, which must not appear at all.
    """
    reasons = [f"structural path {p!r}" for p in paths if len(p) > 2 and p in question]
    reasons += [f"field name {f!r} is a key" for f in fields if not human_field(f)]
    skeleton = question
    for text in sorted({str(v) for v in (*visible, *fields)}, key=len, reverse=True):
        if text:
            skeleton = skeleton.replace(text, " \u2026 ")
    for pattern, reason in _LEAKS:
        if pattern.search(skeleton):
            reasons.append(reason)
    return reasons


def spec_fields(spec: dict[str, Any]) -> list[str]:
    """The field names a specification names."""
    if "fields" in spec:
        return list(spec["fields"])
    if "where" in spec:
        return [spec["where"]["field"]]
    return [spec["field"]] if "field" in spec else []


def names_answer(question: str, answer: Any) -> bool:
    """True when ``question`` states (one of) its own answer value(s) as a word sequence:
    'What is the event type of the earthquake event "M 4.6 - ..."?' -> "earthquake" is
    never asked. Yes/no values and one-character texts ('a') are not checked: they stand
    in any sentence."""
    said = norm(question)
    for value in answer if isinstance(answer, list) else [answer]:
        if value is None or isinstance(value, bool):
            continue
        text = norm(value)
        if len(text) > 1 and re.search(rf"(?<!\w){re.escape(text)}(?!\w)", said):
            return True
    return False

