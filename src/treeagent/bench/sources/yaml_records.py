"""YAML records (B.1 "YAML dataset"): a unit is one OpenAPI/Swagger document; its
records are the paths, operations, parameters and responses it declares."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import yaml

from treeagent.bench.model import Record, Scalar
from treeagent.bench.sources.common import flatten, scalar, visible
from treeagent.tree import key_step

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_TS = "tag:yaml.org,2002:timestamp"
_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_BASE):  # type: ignore[valid-type,misc]
    """Safe loader that keeps timestamps as the strings written in the document."""


_Loader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in rs if tag != _TS]
    for ch, rs in _BASE.yaml_implicit_resolvers.items()
}


def load(text: str) -> Any:
    return yaml.load(text, Loader=_Loader)  # noqa: S506 (a safe loader)


def _rec(unit_id: str, local: str, kind: str, desc: str, fields: dict[str, Scalar],
         path: str) -> Record:
    return Record(id=f"{unit_id}#{local}", unit_id=unit_id, kind=kind, description=desc,
                  fields=fields, path=path)


def _param_fields(p: dict) -> dict[str, Scalar]:
    fields = flatten(p, skip=frozenset({"examples", "content", "example"}))
    return fields


def records(text: str, unit_id: str = "",
            on_drop: Callable[[str, str], None] | None = None) -> list[Record]:
    """Records of one OpenAPI document (raises ``yaml.YAMLError`` on malformed YAML)."""
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
        if p and p in text:
            fields: dict[str, Scalar] = {"path": p}
            fields.update(flatten({k: v for k, v in item.items()
                                   if k not in METHODS and k != "parameters"}))
            out.append(_rec(unit_id, p, "API path", p, fields, ppath))
        elif on_drop:
            on_drop(ppath, "path key not visible verbatim")
        shared = [x for x in item.get("parameters") or [] if isinstance(x, dict)]
        for method in METHODS:
            op = item.get(method)
            if not isinstance(op, dict):
                continue
            opid = op.get("operationId")
            label = f"{method.upper()} {p}"
            desc = (opid if isinstance(opid, str) and op_ids.count(opid) == 1
                    and visible(text, opid) else label)
            opath = ppath + "." + method
            fields = {"method": method.upper(), "path": p}
            fields.update(flatten({k: v for k, v in op.items()
                                   if k not in ("parameters", "responses", "requestBody")}))
            out.append(_rec(unit_id, label, "operation", desc, fields, opath))
            _params(out, unit_id, text, label, desc, opath, shared, op, on_drop)
            responses = op.get("responses")
            if isinstance(responses, dict):
                for code, resp in responses.items():
                    c = str(code)
                    rpath = opath + ".responses" + key_step(c)
                    if not isinstance(resp, dict) or "$ref" in resp:
                        continue
                    f: dict[str, Scalar] = {"status code": int(c) if c.isdigit() else c}
                    d = scalar(resp.get("description"))
                    if d is not None:
                        f["description"] = d
                    out.append(_rec(unit_id, f"{label} response {c}", "response",
                                    f"{c} response of {desc}", f, rpath))
    return out


def _params(out: list[Record], unit_id: str, text: str, label: str, desc: str, opath: str,
            shared: list[dict], op: dict, on_drop: Callable[[str, str], None] | None) -> None:
    own = [x for x in op.get("parameters") or [] if isinstance(x, dict)]
    seen: set[tuple[str, str]] = set()
    for where, plist in (("parameters", own), ("shared", shared)):
        for i, prm in enumerate(plist):
            name, loc = prm.get("name"), prm.get("in")
            ppath = f"{opath}.parameters[{i}]" if where == "parameters" else \
                f"{opath.rsplit('.', 1)[0]}.parameters[{i}]"
            if "$ref" in prm or not isinstance(name, str) or not isinstance(loc, str):
                continue
            if (name, loc) in seen:  # an operation's own parameter overrides a shared one
                continue
            seen.add((name, loc))
            if not name or name not in text:
                if on_drop:
                    on_drop(ppath, "parameter name not visible verbatim")
                continue
            out.append(_rec(unit_id, f"{label} parameter {loc}:{name}", "parameter",
                            f"{name} ({loc}) of {desc}", _param_fields(prm), ppath))
