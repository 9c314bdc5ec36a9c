"""YAML records (B.1 "YAML dataset"): a unit is one OpenAPI/Swagger document; its
records are the paths, operations, parameters and responses it declares. A parameter or
response is described as a reader names it: 'query parameter "limit" of the operation
"listPets"', '404 response of the operation "GET /pets"' (an operation without an id is
named by its method and path), 'path parameter "id" of the path "/pets/{id}"' for one a
path item shares with its operations."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from treeagent.algorithm.tree import key_step
from treeagent.bench.model import BenchFormat, Frame, Record, Scalar
from treeagent.bench.sources.common import flatten, parsed_or_reason, scalar, visible
from treeagent.formats import parse as parse_format

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_TS = "tag:yaml.org,2002:timestamp"
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[valid-type,misc]
    """Safe loader that keeps timestamps as the strings written in the document.

    A scalar's tag depends on its text and on whether it was plain or quoted alone (no
    path resolvers are registered), so each distinct short scalar is resolved once: the
    C parser calls ``resolve`` in Python for every scalar of every document."""

    def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
        if kind is not yaml.ScalarNode or len(value) > 64:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = _RESOLVED.get(key)
        if tag is None:
            if len(_RESOLVED) >= 1 << 16:
                _RESOLVED.clear()
            tag = _RESOLVED[key] = super().resolve(kind, value, implicit)
        return tag


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != _TS]
    for ch, rs in _BASE.yaml_implicit_resolvers.items()
}
assert not _Loader.yaml_path_resolvers  # resolve's memo keys on the scalar alone
_RESOLVED: dict[tuple[str, tuple[bool, bool]], str] = {}


#: Nodes a document may expand to, aliases counted at every use (at least twice its
#: own node count, so a document without aliases is never refused).
NODE_BUDGET = 1_000_000


class AliasBudgetError(ValueError):
    """A document whose aliases expand past the node budget, or refer to themselves."""


def _expanded_size(root: yaml.Node, budget: int) -> int:
    """Nodes of ``root`` with every alias counted where it is used, computed on the
    composed graph (an alias is the same node object: nothing is expanded). Raises
    :class:`AliasBudgetError` at the first node over ``budget`` or on a cycle."""
    size: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        kids = ([c for pair in node.value for c in pair] if isinstance(node, yaml.MappingNode)
                else node.value if isinstance(node, yaml.SequenceNode) else ())
        if done:
            open_.discard(key)
            total = 1 + sum(size[id(c)] for c in kids)
            if total > budget:
                m = node.start_mark
                raise AliasBudgetError(
                    f"{m.line + 1}:{m.column + 1}: aliases expand this node past "
                    f"{budget} nodes (alias bomb?)")
            size[key] = total
            continue
        if key in size:
            continue
        if key in open_:
            m = node.start_mark
            raise AliasBudgetError(f"{m.line + 1}:{m.column + 1}: recursive alias")
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in kids if id(c) not in size)
    return size[id(root)]


def load(text: str, node_budget: int = NODE_BUDGET) -> Any:
    """The document, aliases kept as references to one object (never copied); refused
    with :class:`AliasBudgetError` when, counted at every use, it exceeds
    ``max(node_budget, 2 * its own node count)`` nodes: every later walk is bounded."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if "*" in text:  # no alias without '*': the expansion is the document itself
            own = len(_distinct(node))
            _expanded_size(node, max(node_budget, 2 * own))
        return loader.construct_document(node)
    finally:
        loader.dispose()


def _distinct(root: yaml.Node) -> set[int]:
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            stack.extend(c for pair in node.value for c in pair)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
    return seen


def _rec(unit_id: str, local: str, kind: str, desc: str, fields: dict[str, Scalar],
         path: str, select: tuple[Any, ...] = (), keys: dict[str, tuple[Any, ...]] | None = None,
         opaque: bool = False, anchor: tuple[Any, ...] = ()) -> Record:
    return Record(id=f"{unit_id}#{local}", unit_id=unit_id, kind=kind, description=desc,
                  fields=fields, path=path, select=select, keys=keys or {},
                  defaults=DEFAULTS.get(kind, {}), opaque=opaque, anchor=anchor)


def _up(anchor: tuple[Any, ...], levels: int) -> tuple[Any, ...]:
    """An operation's anchor as seen from a record ``levels`` containers below it."""
    out = []
    for path, value in anchor:
        if str(path[0]).startswith("@key:"):
            out.append(((f"@key:{int(path[0][5:]) - levels}",), value))
        else:
            out.append((("@up",) * levels + tuple(path), value))
    return tuple(out)


DEFAULTS: dict[str, dict[str, Scalar]] = {
    "parameter": {"required": False, "deprecated": False},
    "operation": {"deprecated": False},
}
"""Values OpenAPI (2.0 and 3.x) documents for absent fields (field name -> key): a reader
counts a parameter without ``required`` as not required."""
_ANY_METHOD = ("@any", *METHODS)
SELECT = {
    "API path": ("paths", "~"),
    "operation": ("paths", "~", _ANY_METHOD),
    "response": ("paths", "~", _ANY_METHOD, "responses", "~"),
    "parameter": ("paths", "~", _ANY_METHOD, "parameters", "*"),
    "shared parameter": ("paths", "~", "parameters", "*"),
}
"""Where a reader finds each record kind in an OpenAPI document (from its root)."""


def _param_fields(p: dict, keys: dict[str, tuple[Any, ...]]) -> dict[str, Scalar]:
    return flatten(p, skip=frozenset({"examples", "content", "example"}), keys_out=keys)


def records(text: str, unit_id: str = "",
            on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of one OpenAPI document (raises ``yaml.YAMLError`` on malformed YAML).

    An operation's parameters are its own; the parameters a path item shares with its
    operations are records of their own, counted once where they are written; a
    ``$ref`` response or parameter is a record whose other fields are unknown."""
    doc = load(text)
    if not isinstance(doc, dict) or not isinstance(doc.get("paths"), dict):
        return []
    out: list[Record] = []
    paths: dict = doc["paths"]
    op_ids = [op.get("operationId") for item in paths.values() if isinstance(item, dict)
              for m, op in item.items() if m in METHODS and isinstance(op, dict)]
    for raw_path, item in paths.items():
        p = str(raw_path)
        ppath = "$.paths" + key_step(p)
        if not isinstance(item, dict):
            continue
        keys: dict[str, tuple[Any, ...]] = {"path": ("@key:-1",)}
        fields: dict[str, Scalar] = {"path": p}
        fields.update(flatten({k: v for k, v in item.items()
                               if k not in METHODS and k != "parameters"}, keys_out=keys))
        if not (p and p in text) and on_drop:
            on_drop(ppath, "path key not visible verbatim")
        out.append(_rec(unit_id, p, "API path", p if p and p in text else "", fields, ppath,
                        SELECT["API path"], keys))
        _params(out, unit_id, text, f"path {p}", f'the path "{p}"', ppath, item,
                "shared parameter", on_drop, ((("@key:-3",), p),))
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            opid = op.get("operationId")
            label = f"{method.upper()} {p}"
            desc = (opid if isinstance(opid, str) and op_ids.count(opid) == 1
                    and visible(text, opid) else label)
            opath = ppath + "." + method
            keys = {"method": ("@key:-1",), "path": ("@key:-2",)}
            fields = {"method": method.upper(), "path": p}
            fields.update(flatten({k: v for k, v in op.items()
                                   if k not in ("parameters", "responses", "requestBody")},
                                  keys_out=keys))
            anchor: tuple[Any, ...] = (((("operationId",), opid),) if desc == opid else
                                       ((("@key:-2",), p), (("@key:-1",), method)))
            out.append(_rec(unit_id, label, "operation", desc, fields, opath,
                            SELECT["operation"], keys, anchor=anchor))
            said = f'the operation "{desc}"'
            _params(out, unit_id, text, label, said, opath, op, "parameter", on_drop,
                    _up(anchor, 2))
            responses = op.get("responses")
            if isinstance(responses, dict):
                for code, resp in responses.items():
                    c = str(code)
                    rpath = opath + ".responses" + key_step(c)
                    if not isinstance(resp, dict):
                        continue
                    f: dict[str, Scalar] = {"status code": int(c) if c.isdigit() else c}
                    k: dict[str, tuple[Any, ...]] = {"status code": ("@key:-1",)}
                    d = scalar(resp.get("description"))
                    if d is not None and "$ref" not in resp:
                        f["description"] = d
                        k["description"] = ("description",)
                    out.append(_rec(unit_id, f"{label} response {c}", "response",
                                    f"{c} response of {said}", f, rpath, SELECT["response"],
                                    k, opaque="$ref" in resp,
                                    anchor=((("@key:-1",), c), *_up(anchor, 2))))
    return out


_LOCATION = {"formData": "form", "body": "body"}
"""How a parameter's location reads before "parameter" ("the query parameter ...")."""


def _params(out: list[Record], unit_id: str, text: str, label: str, desc: str, opath: str,
            owner: dict, kind: str, on_drop: Callable[[str, str], None] | None,
            above: tuple[Any, ...] = ()) -> None:
    plist = [x for x in owner.get("parameters") or [] if isinstance(x, dict)]
    for i, prm in enumerate(plist):
        name, loc = prm.get("name"), prm.get("in")
        ppath = f"{opath}.parameters[{i}]"
        if "$ref" in prm:  # counted by a reader, fields unknown without resolving
            out.append(_rec(unit_id, f"{label} parameter {i}", "parameter", "", {}, ppath,
                            SELECT[kind], opaque=True))
            continue
        keys: dict[str, tuple[Any, ...]] = {}
        fields = _param_fields(prm, keys)
        named = isinstance(name, str) and isinstance(loc, str) and bool(name) and name in text
        if not named and on_drop:
            on_drop(ppath, "parameter name not visible verbatim")
        out.append(_rec(unit_id, f"{label} parameter {loc}:{name}#{i}", "parameter",
                        f'{_LOCATION.get(loc, loc)} parameter "{name}" of {desc}'
                        if named else "", fields, ppath,
                        SELECT[kind], keys,
                        anchor=((("name",), name), (("in",), loc), *above) if named else ()))


# ------------------------------------------------------------------ bench hooks (4.1, B.1)


def piece(text: str) -> str:
    """An OpenAPI document as a composed context holds it: its body without directives,
    leading comments, its own ``---`` and trailing ``...``, ending in a newline."""
    lines = text.splitlines(keepends=True)
    while lines and (lines[0].startswith(("%", "#")) or not lines[0].strip()):
        lines.pop(0)
    if lines and lines[0].rstrip() == "---":
        lines.pop(0)
    elif lines and lines[0].startswith("--- "):
        lines[0] = lines[0][4:]
    while lines and lines[-1].strip() in ("", "..."):
        lines.pop()
    body = "".join(lines)
    return body if body.endswith("\n") else body + "\n"


def unit_pieces(context: str) -> list[str]:
    """The documents of a composed context (a YAML stream, each after ``---``)."""
    root = parse_format(context, "yaml").root
    docs = root.children if root.kind == "stream" else [root]
    starts = [d.start for d in docs] + [len(context)]
    out = []
    for a, b in zip(starts, starts[1:]):
        if not context.startswith("---\n", a):
            raise ValueError("a YAML document does not start with ---")
        out.append(context[a + 4:b])
    return out


def check_raw(text: str) -> str | None:
    """Why a YAML payload is unusable (NUL bytes, syntax, alias bombs, not an OpenAPI or
    Swagger document, no ``paths`` mapping), or None."""
    tree, why = parsed_or_reason("yaml", text)
    if why:
        return why
    if any(n.kind == "alias" for n in tree.nodes):
        try:
            load(text)  # alias bombs and recursive aliases
        except AliasBudgetError as exc:
            return str(exc)
    top = {c.label: c.kind for c in tree.root.children} if tree.root.kind == "mapping" else {}
    if not ({"openapi", "swagger"} & set(top)):
        return "$: not an OpenAPI/Swagger document (no 'openapi' or 'swagger' key)"
    if top.get("paths") != "mapping":
        return "$.paths: missing or not a mapping"
    return None


BENCH = BenchFormat("yaml", lambda source, text, unit_id="", on_drop=None:
                    records(text, unit_id, on_drop),
                    piece, Frame("", "", "", "---\n"), "x: 1\n", unit_pieces, check_raw,
                    build_cost=4.5)
