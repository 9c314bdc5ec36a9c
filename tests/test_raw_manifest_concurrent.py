"""raw/manifest.json under concurrent writers: the acquire flow runs one task per format
in threads, and each merges its sources into the one manifest."""

from __future__ import annotations

import json
import threading

from treeagent.bench.sources.raw import MANIFEST, RawWriter


def test_writers_of_different_sources_at_once_lose_no_entry_and_leave_valid_json(tmp_path):
    n, rounds = 8, 5
    for r in range(rounds):
        gate = threading.Barrier(n)

        def one(k: int, r: int = r, gate: threading.Barrier = gate) -> None:
            w = RawWriter(tmp_path, "sample")
            w.start("json", f"s{k}")
            for i in range(40 * (k + 1)):  # writers of different sizes
                w.add("json", f"s{k}", f"f{i}.json", b'{"a": %d}' % i, {"round": r})
            gate.wait()
            w.write()

        threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        manifest = json.loads((tmp_path / MANIFEST).read_text(encoding="utf-8"))
        by_source = {}
        for e in manifest["files"]:
            by_source[e["source"]] = by_source.get(e["source"], 0) + 1
        assert by_source == {f"s{k}": 40 * (k + 1) for k in range(n)}
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
