"""How the model's matrices are held in memory: dense float32, or the file's 4-/8-bit block codes.

* ``"float32"``: every matrix de-quantized once at load, pre-transposed to ``[d_in, d_out]`` and
  contiguous (:class:`_Dense`).
* ``"compact"``: the file's 4-bit Q4_1 codes (two per byte) and 8-bit Q8_0 codes kept with their
  per-block scales (:class:`_BlockCodes`), widened to float32 (ggml's exact formulas) while a layer
  computes.

The token embedding (:class:`_Embedding`, also the tied output matrix) is Q8_0 in the SmolLM2
file, every other matrix Q4_1, the norms float32. Format source: ggml's ``block_q4_1`` /
``block_q8_0`` (``ggml-common.h``) and ``gguf-py``'s ``quants.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import gguf
import numpy as np

from . import gguf_file

WEIGHT_MODES = ("float32", "compact")
"""How :func:`attention.llama.load` holds the weights (see the module docstring)."""

_Q4_1 = gguf.GGMLQuantizationType.Q4_1
_Q8_0 = gguf.GGMLQuantizationType.Q8_0


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


def _q8_0_widen(codes: np.ndarray, d: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """Q8_0 rows as float32: codes ``int8 [r, n]`` times their block's scale ``d [r, n/32]`` (ggml's ``q * d``),
    written into ``out`` (float32 ``[r, n]``, C-contiguous, reused by the caller) when given, else a new array."""
    if out is None:
        out = codes.astype(np.float32)
    else:
        np.copyto(out, codes)  # int8 -> float32, exact
    out.reshape(len(out), d.shape[1], 32)[...] *= d[:, :, None]  # q * d per block of 32
    return out


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
        for info, (_, d, m) in zip(infos, parts, strict=True):
            gguf_file.check_finite(info.name, d, m)  # d, m finite <=> every d * q + m finite
        codes = np.concatenate([p[0].T for p in parts], axis=1)  # [in, out_total] uint8, 0..15
        half = codes.shape[0] // 2
        linear = _BlockCodes(np.ascontiguousarray(codes[:half] | (codes[half:] << np.uint8(4))),  # 2 codes a byte
                             np.ascontiguousarray(np.concatenate([p[1].T for p in parts], axis=1)),
                             np.ascontiguousarray(np.concatenate([p[2].T for p in parts], axis=1)))
    elif kinds == {_Q8_0}:
        parts = [_q8_0_codes(file.raw(info.name), info.shape) for info in infos]
        for info, (_, d) in zip(infos, parts, strict=True):
            gguf_file.check_finite(info.name, d)  # d finite <=> every q * d finite
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
    LOGITS_ROWS = 512
    """Compact mode: vocabulary rows widened at a time for :meth:`logits`, into one float32 buffer reused chunk after
    chunk (512 x d_model: 1.3 MB for Gemma 3 270M, small enough to stay in the core's cache while the product reads
    it; 4,096 rows in fresh arrays each took about 1.3x as long: ``BENCHMARKS.md``, "Models of real size")."""

    def __init__(self, file: gguf_file.GGUFFile, name: str, compact: bool):
        info = file.tensor(name)
        self.shape = info.shape  # [vocab, d_model]
        self.codes = self.d = self.ET = None
        if info.ggml_type == _Q8_0 and compact:
            self.codes, self.d = _q8_0_codes(file.raw(name), info.shape)
            gguf_file.check_finite(name, self.d)
        elif info.ggml_type == _Q8_0:  # ggml's q * d, :attr:`CHUNK` rows at a time (no full-size temporaries)
            raw, (n_vocab, d_model) = file.raw(name), info.shape
            self.ET = np.empty((d_model, n_vocab), dtype=np.float32)
            for start in range(0, n_vocab, self.CHUNK):
                rows = slice(start, min(start + self.CHUNK, n_vocab))
                codes, d = _q8_0_codes(raw[rows], (rows.stop - start, d_model))
                gguf_file.check_finite(name, d)
                self.ET[:, rows] = _q8_0_widen(codes, d).T
                gguf_file.release_pages(file.data)  # the chunk's file pages
        else:  # any other type (F16, BF16, F32, Q4_K...), :attr:`CHUNK` rows at a time as well: de-quantizing the
            # whole table at once held two or three full-size float32 copies while loading (Qwen2.5-0.5B's F16
            # file: 0.8 GB above the model, BENCHMARKS.md "Models of real size")
            n_vocab, d_model = info.shape
            self.ET = np.empty((d_model, n_vocab), dtype=np.float32)
            for start in range(0, n_vocab, self.CHUNK):
                rows = slice(start, min(start + self.CHUNK, n_vocab))
                self.ET[:, rows] = gguf_file.dequantize(file, name, rows).T
                gguf_file.release_pages(file.data)

    @property
    def nbytes(self) -> int:
        return self.ET.nbytes if self.ET is not None else self.codes.nbytes + self.d.nbytes

    def _widen_rows(self, rows) -> np.ndarray:
        return _q8_0_widen(self.codes[rows], self.d[rows])

    def lookup(self, ids: np.ndarray) -> np.ndarray:
        """``E[ids]``: ``[n] -> [n, d_model]`` float32 (a copy)."""
        if self.ET is not None:
            return np.ascontiguousarray(self.ET[:, ids].T)
        return self._widen_rows(ids)

    def logits(self, h: np.ndarray) -> np.ndarray:
        """``h @ E.T``: ``[n, d_model] -> [n, vocab]`` float32."""
        if self.ET is not None:
            return h @ self.ET  # [n, d_model] x [d_model, vocab]
        n_vocab, d_model = self.shape
        out = np.empty((h.shape[0], n_vocab), dtype=np.float32)
        buffer = np.empty((min(self.LOGITS_ROWS, n_vocab), d_model), dtype=np.float32)
        for start in range(0, n_vocab, self.LOGITS_ROWS):
            stop = min(start + self.LOGITS_ROWS, n_vocab)
            W = _q8_0_widen(self.codes[start:stop], self.d[start:stop], buffer[:stop - start])  # [rows, d_model]
            np.matmul(h, W.T, out=out[:, start:stop])  # the same product as before, written in place
        return out


@dataclass
class _Layer:
    attn_norm: np.ndarray  # [d_model]
    qkv: object  # W_q | W_k | W_v fused: [d_model, (n_heads + 2 n_kv_heads) d_head]
    o: object  # W_o [n_heads d_head, d_model]
    ffn_norm: np.ndarray  # [d_model]
    gate_up: object  # W_gate | W_up fused: [d_model, 2 d_ff]; gpt2 (config.mlp "gelu"): W_up alone [d_model, d_ff]
    down: object  # W_down [d_ff, d_model]
    qkv_bias: np.ndarray | None = None  # qwen2, gpt2: b_q | b_k | b_v, float32 [(n_heads + 2 n_kv_heads) d_head]
    q_norm: np.ndarray | None = None  # qwen3: RMSNorm gain of each head's q, float32 [d_head]
    k_norm: np.ndarray | None = None  # qwen3: RMSNorm gain of each head's k, float32 [d_head]
    attn_norm_bias: np.ndarray | None = None  # gpt2: LayerNorm biases, float32 [d_model]
    ffn_norm_bias: np.ndarray | None = None
    o_bias: np.ndarray | None = None  # gpt2: b_o [d_model]
    up_bias: np.ndarray | None = None  # gpt2: b_up [d_ff]
    down_bias: np.ndarray | None = None  # gpt2: b_down [d_model]
    post_attn_norm: np.ndarray | None = None  # gemma3: RMSNorm gain on the attention's output [d_model]
    post_ffn_norm: np.ndarray | None = None  # gemma3: RMSNorm gain on the MLP's output [d_model]

    @property
    def nbytes(self) -> int:
        extra = sum(v.nbytes for v in (self.qkv_bias, self.q_norm, self.k_norm, self.attn_norm_bias,
                                       self.ffn_norm_bias, self.o_bias, self.up_bias, self.down_bias,
                                       self.post_attn_norm, self.post_ffn_norm) if v is not None)
        return (self.attn_norm.nbytes + self.ffn_norm.nbytes + extra
                + sum(w.nbytes for w in (self.qkv, self.o, self.gate_up, self.down)))
