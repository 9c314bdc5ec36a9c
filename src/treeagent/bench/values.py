"""Value semantics of the benchmark's questions (paper Section 4.1, B.1): the text a value
is compared by, numbers, which values and field names a question may use."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Sequence

from treeagent.bench.model import Scalar

MAX_VALUE_CHARS = 100
_HUMAN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9 '()/-]*\Z")
CAMEL = re.compile(r"[a-z][A-Z]")
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?\Z")


def norm(value: Scalar) -> str:
    """The text a value is compared by: case-folded, whitespace collapsed."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return " ".join(str(value).split()).casefold()


def number(value: Scalar) -> float | None:
    """A value as a finite number (ints, floats, plain numeric strings); else None."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        x = float(value)
    elif isinstance(value, str) and _NUMBER.match(value.strip()):
        x = float(value.strip())
    else:
        return None
    return x if math.isfinite(x) else None


@functools.lru_cache(maxsize=1 << 16)
def human_field(name: str) -> bool:
    """A field name fit for a question: words, not a key (no ``_ . [ $``, no camelCase).
    Memoized: a long context asks it of the same few thousand names for every record."""
    return bool(_HUMAN_NAME.match(name)) and not CAMEL.search(name) and len(name) <= 60


def answerable(value: Scalar) -> bool:
    """A value a model can be asked to write back (non-empty, one line, short)."""
    if value is None:
        return False
    if isinstance(value, str):
        s = value.strip()
        return bool(s) and "\n" not in s and len(s) <= MAX_VALUE_CHARS
    return not (isinstance(value, float) and not math.isfinite(value))


def present(value: Scalar) -> bool:
    """A value counted by aggregations: not null, not an empty string."""
    return value is not None and (not isinstance(value, str) or bool(value.strip()))


_WORD_JOINS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|_+")


def given_away(value: Scalar, description: str) -> bool:
    """True when ``value`` stands as a word sequence in ``description`` (the question
    would give the answer away: the path of API path "/pets", magnitude of "M 4.6 - ...",
    the HTTP method DELETE of the operation "deleteBatch"), camelCase and snake_case
    words read apart."""
    text = norm(value)
    if not text:
        return False
    pattern = re.compile(rf"(?<!\w){re.escape(text)}(?!\w)")
    return any(pattern.search(norm(d)) is not None
               for d in (description, _WORD_JOINS.sub(" ", description)))


_ID_LIKE = re.compile(r"\b(?:id|ids|identifier|code|codes|zip|postcode|phone|key|doi|issn|"
                      r"isbn)\b|\b(?:number|no)\Z", re.I)


def id_like(name: str) -> bool:
    """A field of identifiers, codes or versions (never an extremum)."""
    return bool(_ID_LIKE.search(name))


def native_numbers(values: Sequence[Scalar]) -> list[float] | None:
    """Numbers stored as numbers (never numeric strings: codes, years as text)."""
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return None
    return [float(v) for v in values]
