"""A scripted engine test double for the agent tests (and tests of the double itself).

``ScriptedEngine`` follows the :class:`treeagent.llm.base.Engine` protocol; its replies
come from a script: a list of texts consumed in call order (``None`` = an unavailable
response) or a function of the request. Every request is recorded in ``requests``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

import pytest

from treeagent.llm.base import Message, Request, Response, Sampling

TINY_JSON = '{"a":{"x":"alpha","y":"beta"},"b":[10,20,30],"c":"gamma"}'
"""A known small tree: at C = 14 with one token per character (``CharTokenizer``) its
structural sections are $.a.x, $.a.y, $.b, $.c with L_1 = [0], L_3 = [1, 2]."""

Script = Sequence[str | None] | Callable[[Request], str | None]


class ScriptedEngine:
    """Engine test double: replies from a script, token counts from word counts."""

    name = "scripted"
    model = "scripted-double"
    revision = "r0"

    def __init__(self, script: Script, context_window: int | None = None) -> None:
        self._script = script if callable(script) else list(script)
        self._next = 0
        self.requests: list[Request] = []
        if context_window is not None:
            self.context_window = context_window

    def prompt(self, i: int) -> str:
        """The user message of request ``i`` (after a system message, if any)."""
        return next(m.content for m in self.requests[i].messages if m.role == "user")

    def kinds(self) -> list[str]:
        return [r.kind for r in self.requests]

    def respond(self, request: Request) -> Response:
        self.requests.append(request)
        if callable(self._script):
            text = self._script(request)
        else:
            if self._next >= len(self._script):
                raise AssertionError(f"script exhausted at call {self._next} ({request.kind})")
            text = self._script[self._next]
            self._next += 1
        if text is None:
            return Response(None, error="scripted: unavailable")
        words = sum(len(m.content.split()) for m in request.messages)
        return Response(text, input_tokens=words, output_tokens=len(text.split()), latency=0.0)

    async def generate(self, requests: Sequence[Request]) -> list[Response]:
        return [self.respond(r) for r in requests]

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    async def aclose(self) -> None:
        return None


def _request(text: str) -> Request:
    return Request((Message("user", text),), Sampling(max_tokens=8))


def test_double_replies_in_order_and_marks_unavailable():
    engine = ScriptedEngine(["one two", None])
    got = asyncio.run(engine.generate([_request("a b c"), _request("d")]))
    assert [r.text for r in got] == ["one two", None]
    assert (got[0].input_tokens, got[0].output_tokens) == (3, 2)
    assert got[1].error and not got[1].available
    with pytest.raises(AssertionError, match="exhausted"):
        engine.respond(_request("e"))


def test_double_function_script_sees_the_request():
    engine = ScriptedEngine(lambda r: r.messages[0].content.upper())
    assert engine.respond(_request("hi")).text == "HI"
    assert engine.kinds() == ["memory"] and engine.prompt(0) == "hi"
