"""Pickles that only their writer's key opens: how the workers of one build share work
through a folder (prepared units, the second reader's readings) without a file someone
else put there ever being unpickled (pickle runs code while it loads).

The build's driver makes a random key (:func:`new_key`) and hands it to its workers with
their task (never through the folder); each file is the HMAC-SHA256 of the pickle under
that key, then the pickle. :func:`load` checks the HMAC before anything is unpickled and
gives None for a file that is missing, cut short or signed with another key.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import secrets
import uuid
from pathlib import Path
from typing import Any

_DIGEST = hashlib.sha256().digest_size


def new_key() -> str:
    """A fresh random key (hex), one per build."""
    return secrets.token_hex(32)


def dump(value: Any, path: str | os.PathLike[str], key: str) -> bool:
    """Write ``value`` to ``path`` signed with ``key``, whole or not at all (a temporary
    file, then renamed); False when it cannot be written."""
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    sig = hmac.new(bytes.fromhex(key), data, hashlib.sha256).digest()
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}")
    try:
        with open(tmp, "wb") as f:
            f.write(sig)
            f.write(data)
        os.replace(tmp, path)
        return True
    except OSError:
        tmp.unlink(missing_ok=True)
        return False


def load(path: str | os.PathLike[str], key: str) -> Any | None:
    """The value :func:`dump` wrote at ``path`` with ``key``; None when there is no such
    file or its signature does not match (nothing of it is unpickled then)."""
    try:
        blob = Path(path).read_bytes()
    except OSError:
        return None
    sig, data = blob[:_DIGEST], blob[_DIGEST:]
    want = hmac.new(bytes.fromhex(key), data, hashlib.sha256).digest()
    if len(sig) != _DIGEST or not hmac.compare_digest(sig, want):
        return None
    return pickle.loads(data)  # noqa: S301 - signed by this build's own key
