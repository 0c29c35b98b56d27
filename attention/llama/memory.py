"""Will the model fit? The memory a file needs in a weights mode, what this machine has free, and the refusal.

:func:`attention.llama.load` calls :func:`check_fits` before it reads a tensor: a file too big for the memory left
is refused with the estimate ("needs about 4.1 GB, 2.0 GB free") instead of failing half-way (or being killed by the
kernel) with the app's model gone.

* :func:`estimate_bytes`: the weights as :mod:`attention.llama.weights` holds them, plus a working set;
* :func:`available_bytes`: ``MemAvailable`` of ``/proc/meminfo``, or less when a cgroup limit leaves less
  (a container: its limit minus what the cgroup already uses);
* :func:`memory_limit_bytes`: the cgroup limit alone (or the machine's RAM), what the app's choice of weights mode
  reads.

Measured on SmolLM2-135M (Q4_1 file, 2 cores, contended): float32 holds 538 MB of weights and peaks 182 MB above them
in a 256-token forward pass with its attention maps; compact holds 112 MB and peaks 204 MB above. Measured at real
size (``bench/bench_sizes.py``, BENCHMARKS.md "Models of real size", 2026-12-07): the peak of a load and a 256-token
pass with weights, above the process's RSS after its imports, was 2,204 / 929 MiB (float32 / compact) for a
Qwen2.5-0.5B Q8_0 file and 1,399 / 697 MiB for Gemma 3 270M's; the old working set (two copies of the logits, a
fixed 32 MB for the tokenizer) overestimated them by 7-28 %, the one below by 2-9 % (it errs on the high side).
"""

from __future__ import annotations

import os
from pathlib import Path

import gguf

from .config import LlamaConfig

__all__ = ["CGROUP_LIMIT_FILES", "CGROUP_USAGE_FILES", "MEMINFO", "TOKENIZER_BYTES_PER_TOKEN", "available_bytes",
           "check_fits", "estimate_bytes", "gb", "memory_limit_bytes", "working_set_bytes"]

CGROUP_LIMIT_FILES: tuple[Path, ...] = (
    Path("/sys/fs/cgroup/memory.max"),  # cgroup v2: bytes, or "max"
    Path("/sys/fs/cgroup/memory/memory.limit_in_bytes"),  # cgroup v1: bytes (about 2**63 when unlimited)
)
"""Where :func:`memory_limit_bytes` reads the container's memory limit, first match wins."""
CGROUP_USAGE_FILES: tuple[Path, ...] = (
    Path("/sys/fs/cgroup/memory.current"),  # cgroup v2
    Path("/sys/fs/cgroup/memory/memory.usage_in_bytes"),  # cgroup v1
)
"""What the cgroup already uses, in bytes (the same order as :data:`CGROUP_LIMIT_FILES`)."""
MEMINFO = Path("/proc/meminfo")
"""The kernel's memory report: ``MemAvailable`` (kB) is what can be allocated without swapping."""

FIXED_BYTES = 32 * 10**6
"""The working set's fixed part: the code, buffers (32 MB)."""
TOKENIZER_BYTES_PER_TOKEN = 512
"""The tokenizer's memory per vocabulary token: its ``tokenizers`` object and the vocabulary's lists (measured 0.4-0.55
kB a token for vocabularies of 151,936 and 262,144 tokens without merges, BENCHMARKS.md "Models of real size"; a real
vocabulary's merges add to it, and SmolLM2's 49,152 tokens and 48,900 merges fit in it)."""

_Q4_1, _Q8_0 = gguf.GGMLQuantizationType.Q4_1, gguf.GGMLQuantizationType.Q8_0
_COMPACT_BYTES_PER_32 = {_Q4_1: 24, _Q8_0: 36}
"""Bytes per 32 weights in compact mode (:class:`attention.llama.weights._BlockCodes`): Q4_1 keeps two 4-bit codes
a byte and its ``d`` and ``m`` widened to float32 (16 + 4 + 4); Q8_0 its int8 codes and a float32 ``d`` (32 + 4)."""


def _read_number(paths) -> int | None:
    """The first of ``paths`` holding a plain number below 2**60 (``max`` and cgroup v1's 2**63 mean none)."""
    for path in paths:
        try:
            text = Path(path).read_text().strip()
        except (OSError, UnicodeDecodeError):
            continue
        if text.isascii() and text.isdigit() and int(text) < 2**60:
            return int(text)
    return None


def memory_limit_bytes() -> int | None:
    """The memory this process may use, in bytes: the first cgroup limit of :data:`CGROUP_LIMIT_FILES` that is a
    number (containers, Community Cloud; ``max`` and cgroup v1's 2**63 mean none), or the machine's RAM when that is
    smaller or no file holds one; ``None`` when nothing can be read."""
    limit = _read_number(CGROUP_LIMIT_FILES)
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        ram = 0
    return min((x for x in (limit, ram if ram > 0 else None) if x is not None), default=None)


def available_bytes() -> int | None:
    """Bytes this process can still allocate: ``MemAvailable`` of :data:`MEMINFO`, or the cgroup's limit minus its
    usage (:data:`CGROUP_LIMIT_FILES`, :data:`CGROUP_USAGE_FILES`) when that is smaller; ``None`` when neither can
    be read (then :func:`check_fits` does not refuse)."""
    free = None
    try:
        for line in MEMINFO.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                free = int(line.split()[1]) * 1024  # kB
                break
    except (OSError, UnicodeDecodeError, ValueError, IndexError):
        free = None
    limit, used = _read_number(CGROUP_LIMIT_FILES), _read_number(CGROUP_USAGE_FILES)
    if limit is not None:
        left = max(0, limit - (used or 0))
        free = left if free is None else min(free, left)
    return free


def working_set_bytes(config: LlamaConfig, largest_layer_elements: int, mode: str) -> int:
    """The memory a forward pass of ``config.max_tokens`` tokens needs besides the weights: its attention maps
    (``n_layers n_heads T**2`` float32), the logits (``T vocab`` float32: computed in place, measured one copy), the
    tokenizer (:data:`TOKENIZER_BYTES_PER_TOKEN` per vocabulary token), one layer's matrices widened to float32 (twice
    in compact mode: the scratch and a transient) and :data:`FIXED_BYTES`."""
    c, T = config, config.max_tokens
    widened = 4 * largest_layer_elements * (2 if mode == "compact" else 1)
    return (4 * c.n_layers * c.n_heads * T * T + 4 * T * c.vocab_size + TOKENIZER_BYTES_PER_TOKEN * c.vocab_size
            + widened + FIXED_BYTES)


def estimate_bytes(tensors: dict, config: LlamaConfig, mode: str) -> int:
    """Bytes a load in weights ``mode`` needs: the weights as held plus :func:`working_set_bytes`.

    Args:
        tensors: the file's tensor infos (``GGUFFile.tensors``: ``name -> info`` with ``shape`` and ``ggml_type``).
        config: the file's architecture. mode: ``"float32"`` (every tensor widened: 4 bytes a weight) or
            ``"compact"`` (:data:`_COMPACT_BYTES_PER_32` for what :mod:`attention.llama.weights` keeps as block
            codes: a block's fused matrices (Q, K, V; gate and up) whose parts are all Q4_1 or all Q8_0, and a Q8_0
            token embedding or output matrix; everything else widened to float32, as it loads). The working set
            widens per layer as compact mode does only when a block's matrix is kept as codes (an F16 file's compact
            load holds float32 matrices, as float32 mode does).
    """
    def elements(info) -> int:
        count = 1
        for size in info.shape:
            count *= int(size)
        return count

    groups: dict[str, list] = {}  # what weights._read_linear fuses: one type for all parts, or widened
    for name, info in tensors.items():
        part = name.split(".")
        if name.startswith("blk.") and len(info.shape) == 2:
            fused = {"attn_q": "qkv", "attn_k": "qkv", "attn_v": "qkv", "ffn_gate": "gate_up", "ffn_up": "gate_up"}
            groups.setdefault(f"blk.{part[1]}.{fused.get(part[2], part[2])}", []).append(info)
        elif name in ("token_embd.weight", "output.weight") and info.ggml_type == _Q8_0:
            groups[name] = [info]  # weights._Embedding keeps only Q8_0 codes
        else:
            groups[name] = [info, None]  # never compact (norms, biases, position table, other embeddings)
    total, layer, codes_kept = 0, {}, False
    for key, infos in groups.items():
        kinds = {info.ggml_type for info in infos if info is not None}
        per_32 = (_COMPACT_BYTES_PER_32.get(kinds.pop()) if mode == "compact" and len(kinds) == 1
                  and None not in infos else None)
        codes_kept |= per_32 is not None and key.startswith("blk.")
        for info in filter(None, infos):
            total += elements(info) * 4 if per_32 is None else elements(info) * per_32 // 32
            if key.startswith("blk.") and len(info.shape) == 2:  # one layer's matrices: what compact widens
                block = key.split(".")[1]
                layer[block] = layer.get(block, 0) + elements(info)
    widening = "compact" if codes_kept else "float32"  # compact mode widens per layer only what it keeps as codes
    return total + working_set_bytes(config, max(layer.values(), default=0), widening)


def gb(n: int) -> str:
    """``n`` bytes as plain decimal gigabytes with one decimal: ``"4.1 GB"``."""
    return f"{n / 1e9:.1f} GB"


def check_fits(needed: int, free: int | None, what: str, compact_needed: int | None = None) -> None:
    """Refuse a load that needs more than what is free.

    Args:
        needed: :func:`estimate_bytes`. free: :func:`available_bytes` (``None``: unknown, nothing is refused).
        what: the file and mode, for the message. compact_needed: what compact weights would need (a float32 load):
            named in the message only when it is smaller and fits the memory free (else it would not help).

    Raises:
        ValueError: ``needed > free``: "<what> is too big for this server's memory: needs about 4.1 GB, 2.0 GB
            free" (with " (compact weights would need about 1.2 GB)" when that fits).
    """
    if free is not None and needed > free:
        hint = ""
        if compact_needed is not None and compact_needed < needed and compact_needed <= free:
            hint = f" (compact weights would need about {gb(compact_needed)})"
        raise ValueError(f"{what} is too big for this server's memory: needs about {gb(needed)}, {gb(free)} "
                         f"free{hint}")
