"""Files the workers of a build share open only with the build's key: a file written with
another key, altered, cut short or planted is never unpickled."""

from __future__ import annotations

import pickle

from treeagent import signed_pickle


class _Boom:
    """Unpickling it would run code (sets a flag)."""

    ran = False

    def __reduce__(self):
        return (setattr, (_Boom, "ran", True))


def test_round_trip_with_the_key(tmp_path):
    key = signed_pickle.new_key()
    value = {"units": [1, 2.5, "x", None, (3, 4)], "bytes": b"\x00\xff"}
    assert signed_pickle.dump(value, tmp_path / "v.pickle", key)
    assert signed_pickle.load(tmp_path / "v.pickle", key) == value
    assert not list(tmp_path.glob(".*"))  # no temporary file left


def test_another_key_an_altered_or_cut_file_gives_none(tmp_path):
    key, other = signed_pickle.new_key(), signed_pickle.new_key()
    path = tmp_path / "v.pickle"
    signed_pickle.dump([1, 2, 3], path, key)
    assert signed_pickle.load(path, other) is None
    blob = bytearray(path.read_bytes())
    blob[-2] ^= 1
    path.write_bytes(bytes(blob))
    assert signed_pickle.load(path, key) is None
    path.write_bytes(bytes(blob[:10]))
    assert signed_pickle.load(path, key) is None
    assert signed_pickle.load(tmp_path / "missing.pickle", key) is None


def test_a_planted_pickle_is_never_unpickled(tmp_path):
    key = signed_pickle.new_key()
    path = tmp_path / "v.pickle"
    path.write_bytes(b"\0" * 32 + pickle.dumps(_Boom()))  # a guessed signature
    assert signed_pickle.load(path, key) is None
    assert _Boom.ran is False
    path.write_bytes(pickle.dumps(_Boom()))  # no signature at all
    assert signed_pickle.load(path, key) is None
    assert _Boom.ran is False
