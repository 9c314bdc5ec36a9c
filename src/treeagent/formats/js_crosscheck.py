"""The json5 cross-check of :mod:`treeagent.formats.javascript` (B.1).

Every literal the builder (:mod:`treeagent.formats.js_values`) reads is read again by
json5 (strict-JSON subtrees by the C ``json`` decoder in ``crosscheck="mixed"``), and the
two readings must agree; see the module docstring of :mod:`treeagent.formats.javascript`.
:class:`_CrossCheck` holds the builder's cross-check methods.

``crosscheck="twin"``: a literal written only in the JSON5 that JavaScript sources use
(ASCII identifier keys, single- or double-quoted strings with JSON escapes, ``//`` and
``/* */`` comments, trailing commas, JSON numbers, ``NaN``/``Infinity``, JSON whitespace)
has a JSON *twin*, the same text with keys quoted, quotes swapped, comments and trailing
commas dropped, whose C ``json`` reading is json5's reading (surrogate pairs joined, as
the comparison joins them). Any other text, or a twin json rejects, goes the ``mixed``
way, so rejections and their messages are those of ``mixed``. tests/test_js_twin.py
checks the equivalence against json5 on generated near-JSON5 texts.
"""

from __future__ import annotations

import functools
import json
import math
import re
import sys
import threading
from collections.abc import Callable
from typing import Any

import json5

from treeagent.algorithm.tree import Node
from treeagent.formats.js_literal import _Literal
from treeagent.formats.js_syntax import _Reject

_SURROGATE = re.compile(r"[\ud800-\udfff]")
_JSON5_ERROR = re.compile(r"<string>:(\d+) (.*) at column (\d+)")
_FRAMES_PER_LEVEL = 32  # json5 recurses ~17 (arrays) to ~23 (objects) Python frames a level


def _join_surrogates(s: str) -> str:
    """Join UTF-16 surrogate pairs into one code point; lone surrogates stay."""
    if _SURROGATE.search(s) is None:
        return s
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _same(mine: object, ref: object) -> bool:
    """Scalar agreement of our reading and json5's (see the module docstring)."""
    if isinstance(mine, str):
        return isinstance(ref, str) and _join_surrogates(ref) == mine
    if mine is None or isinstance(mine, bool):
        return ref is mine
    if isinstance(mine, int):
        return type(ref) is int and ref == mine
    if isinstance(mine, float):
        if mine != mine:
            return isinstance(ref, float) and ref != ref
        if mine == 0 and math.copysign(1.0, mine) < 0 and type(ref) is int and ref == 0:
            return True  # integer literal -0: json5 gives int 0
        return (type(ref) is float and ref == mine
                and math.copysign(1.0, ref) == math.copysign(1.0, mine))
    return False


@functools.lru_cache(maxsize=512)
def _json5_cached(source: str) -> object:
    return json5.loads(source)


def _json5_loads(source: str) -> object:
    """json5.loads, memoized for literals up to 64 KB (benchmark contexts repeat their
    units); the result is only compared, never handed out, so sharing it is safe."""
    return _json5_cached(source) if len(source) <= 65536 else json5.loads(source)


def _run_deep(fn: Callable[[], Any], depth: int) -> Any:
    """Run ``fn`` with room for ``depth`` nesting levels of recursive decoders.

    json5 recurses ~23 frames an object level (the C json decoder counts against the same
    limit): for deep inputs run it in a thread with a large stack and a raised limit.
    """
    need = depth * _FRAMES_PER_LEVEL + 300
    if need < sys.getrecursionlimit():
        return fn()
    box: dict[str, Any] = {}

    def target() -> None:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(max(old, need + 1000))
        try:
            box["value"] = fn()
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc
        finally:
            sys.setrecursionlimit(old)

    old_size = threading.stack_size()
    threading.stack_size(min(max(64 << 20, depth << 14), 1 << 30))
    try:
        worker = threading.Thread(target=target, name="treeagent-json5-check")
        worker.start()
    finally:
        threading.stack_size(old_size)
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class _CrossCheck:
    """The cross-check half of the literal builder: compares a built literal with
    json5's (and json's) reading of its source text."""

    text: str
    crosscheck: str

    def check(self, lit: _Literal) -> None:
        """Compare our reading of ``lit`` with json5's (and json's) reading (B.1)."""
        try:
            _run_deep(lambda: self._check(lit), lit.depth)
        except RecursionError:
            raise _Reject(lit.vstart[0], "nesting too deep for the json5 cross-check") from None

    def _check(self, lit: _Literal) -> None:
        nodes, text = lit.nodes, self.text
        root = nodes[0]
        ref = self._twin_reading(lit) if self.crosscheck == "twin" else _NO_TWIN
        refs = self._json_refs(lit) if ref is _NO_TWIN and self.crosscheck != "json5" else {}
        if ref is _NO_TWIN and 0 not in refs:
            splices = sorted(lit.splices + [(lit.vstart[i], nodes[i].end, "0") for i in refs])
            r_start, r_end = lit.vstart[0], root.end
            pieces: list[str] = []
            pos = r_start
            for s, e, rep in splices:
                if s < pos:
                    continue  # inside an earlier splice (e.g. an atomic object)
                pieces.append(text[pos:s])
                pieces.append(rep)
                pos = e
            pieces.append(text[pos:r_end])
            source = "".join(pieces)
            try:
                ref = _json5_loads(source)
            except RecursionError:
                raise
            except Exception as exc:  # json5 raises ValueError with "<string>:L ... column C"
                off = self._json5_offset(str(exc), source, splices, r_start, r_end)
                node = self._deepest(lit, off)
                raise _Reject(off, f"tree-sitter and json5 disagree at {_path(lit, node)}: "
                                   f"json5 cannot read it ({exc})") from None
        stack: list[tuple[Node, object]] = [(root, ref)]
        while stack:
            node, ref = stack.pop()
            i = node.id
            if i in refs:
                ref = refs[i]
            kind = node.kind
            if kind == "expression":
                continue
            mine = lit.values[i]
            if kind == "object":
                if not isinstance(ref, dict) or len(ref) != len(node.children):
                    self._disagree(lit, node, mine, ref)
                for child, key in zip(node.children, ref):  # type: ignore[call-overload]
                    if not isinstance(key, str) or _join_surrogates(key) != child.label:
                        self._disagree(lit, child, child.label, key, "key")
                    stack.append((child, ref[key]))  # type: ignore[index]
            elif kind == "array":
                if not isinstance(ref, list) or len(ref) != len(node.children):
                    self._disagree(lit, node, mine, ref)
                stack.extend(zip(node.children, ref))  # type: ignore[arg-type]
            elif not _same(mine, ref):
                self._disagree(lit, node, mine, ref)

    def _twin_reading(self, lit: _Literal) -> object:
        """json5's reading of the whole literal (its splices applied) through its JSON
        twin and the C decoder, or ``_NO_TWIN`` (then the subtree readings below)."""
        text, pos = self.text, lit.vstart[0]
        pieces: list[str] = []
        for s, e, rep in sorted(lit.splices):
            if s < pos:
                continue  # inside an earlier splice
            pieces.append(text[pos:s])
            pieces.append(rep)
            pos = e
        pieces.append(text[pos : lit.nodes[0].end])
        twin = _json_twin("".join(pieces))
        if twin is None:
            return _NO_TWIN
        try:
            return json.loads(twin)
        except RecursionError:
            raise
        except ValueError:
            return _NO_TWIN

    def _json_refs(self, lit: _Literal) -> dict[int, object]:
        """Mixed mode: read every maximal strict-JSON subtree (and JSON-convertible string)
        with the C ``json`` decoder, in one batch; json5 then reads the rest."""
        nodes, plain, converted, text = lit.nodes, lit.plain, lit.converted, self.text
        ids: list[int] = []
        sources: list[str] = []
        stack = [nodes[0]]
        while stack:
            node = stack.pop()
            i = node.id
            kind = node.kind
            if plain[i] and (kind != "number" or node.end - lit.vstart[i] > 2) \
                    and kind != "literal":
                ids.append(i)
                sources.append(text[lit.vstart[i] : node.end])
            elif i in converted:
                ids.append(i)
                sources.append(converted[i])
            elif kind == "object" or kind == "array":
                stack.extend(node.children)
        if not ids:
            return {}
        try:
            values = json.loads("[" + ",".join(sources) + "]")
        except RecursionError:
            raise
        except ValueError:  # e.g. JS-only whitespace inside: read one by one, json5 last
            values = [self._json_one(lit, i, src) for i, src in zip(ids, sources)]
        return dict(zip(ids, values))

    def _json_one(self, lit: _Literal, i: int, src: str) -> object:
        try:
            return json.loads(src)
        except RecursionError:
            raise
        except ValueError:
            try:
                return _json5_loads(self.text[lit.vstart[i] : lit.nodes[i].end])
            except RecursionError:
                raise
            except Exception as exc:
                raise _Reject(lit.vstart[i],
                              f"tree-sitter and json5 disagree at {_path(lit, lit.nodes[i])}: "
                              f"json5 cannot read it ({exc})") from None

    def _json5_offset(self, message: str, source: str, splices: list[tuple[int, int, str]],
                      r_start: int, r_end: int) -> int:
        m = _JSON5_ERROR.search(message)
        if m is None:
            return r_start
        line, col = int(m.group(1)), int(m.group(3))
        lines = source.split("\n")
        o = sum(len(x) + 1 for x in lines[: line - 1]) + col - 1  # offset in `source`
        pos, out = r_start, 0  # walk the splices to map `o` back into the text
        for s, e, rep in splices:
            if s < pos:
                continue
            if o < out + (s - pos):
                return min(pos + (o - out), r_end)
            out += s - pos
            if o < out + len(rep):
                return s
            out += len(rep)
            pos = e
        return min(pos + (o - out), r_end)

    @staticmethod
    def _deepest(lit: _Literal, off: int) -> Node:
        best = lit.nodes[0]
        for node in lit.nodes:
            if node.start <= off < node.end:
                best = node
        return best

    def _disagree(self, lit: _Literal, node: Node, mine: object, ref: object,
                  what: str = "value") -> None:
        raise _Reject(lit.vstart[node.id],
                      f"tree-sitter and json5 disagree at {_path(lit, node)}: {what} "
                      f"{_short(mine)} vs json5 {_short(ref)}")


def _path(lit: _Literal, node: Node) -> str:
    """pi(node) (A.3) while the tree is still being built."""
    steps: list[str] = []
    cur: Node | None = node
    while cur is not None and cur.id != 0:
        steps.append(cur.step)
        cur = cur.parent
    return lit.base + "".join(reversed(steps))


def _short(v: object) -> str:
    r = repr(v)
    return r if len(r) <= 60 else r[:57] + "..."


# ---------------------------------------------------------------- JSON5 via the C decoder

# A JSON5 text made only of these tokens has a JSON twin with the same value: identifier
# keys quoted, single-quoted strings requoted, comments and trailing commas dropped.
# Anything else (other whitespace or escapes, hex/+/.5 numbers, line continuations,
# non-ASCII identifiers) is left to json5 itself.
_WS = r"[ \t\n\r]"
_DQ = r'"(?:[^"\\\x00-\x1f\u2028\u2029]++|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+"'
_SQ = r"'(?:[^'\\\x00-\x1f\u2028\u2029]++|\\[\"\\/bfnrt']|\\u[0-9a-fA-F]{4})*+'"
_COMMENT = r"//[^\n\r\u2028\u2029]*+|/\*(?:[^*]++|\*(?!/))*+\*/"
_IDENT = r"[A-Za-z_$][A-Za-z0-9_$]*+"
_NUMBER = r"-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][+-]?[0-9]++)?"
_TWIN_TOKENS = re.compile(
    rf"(?:{_WS}++|{_COMMENT}|{_DQ}|{_SQ}|{_IDENT}|{_NUMBER}|[{{}}\[\]:,-])*+")
_TWIN_EDITS = re.compile(
    rf"({_DQ})|({_SQ})|({_COMMENT})|({_IDENT})(?={_WS}*+:)|,(?={_WS}*+[}}\]])")
_SQ_INNER = re.compile(r'\\[\s\S]|"')
_NO_TWIN = object()


def _requote(m: re.Match[str]) -> str:
    """One piece of a single-quoted string's body as a double-quoted one's."""
    q = m.group()
    return '\\"' if q == '"' else "'" if q == "\\'" else q


def _json_twin(source: str) -> str | None:
    """The JSON text with the same value as the JSON5 text ``source``, or None where
    ``source`` uses syntax outside the token set above (then only json5 reads it)."""
    if _TWIN_TOKENS.fullmatch(source) is None:
        return None
    bad = False
    comment_end = -1  # end of the last comment scanned

    def edit(m: re.Match[str]) -> str:
        nonlocal bad, comment_end
        g = m.lastindex
        if g == 1:
            return m.group()
        if g == 2:
            inner = m.group()[1:-1]
            if "\"" in inner or "\\'" in inner:
                inner = _SQ_INNER.sub(_requote, inner)
            return f'"{inner}"'
        if g == 3:
            comment_end = m.end()
            return " "
        if g == 4:
            return f'"{m.group()}"'
        j = m.start() - 1  # a trailing comma: only right after a value (`[,]` is no JSON5)
        while j >= 0 and source[j] in " \t\n\r":
            j -= 1
        if j < 0 or j == comment_end - 1 or source[j] in "[{,:":
            bad = True
        return ""

    twin = _TWIN_EDITS.sub(edit, source)
    return None if bad else twin

