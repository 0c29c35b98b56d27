"""The parts of a decoder block around the attention: RMSNorm, RoPE, SwiGLU (Llama-style); LayerNorm and GELU
(GPT-2).

Small pure functions with shape contracts, used by :mod:`attention.llama` (SmolLM2-135M) and
testable on their own. Row-vector convention as in the rest of the package: ``y = x @ W`` with
``W`` of shape ``[d_in, d_out]``. Every function keeps the float dtype it is given (float32 in,
float32 out), so a float32 model stays float32 end to end, as PyTorch's does.

RoPE pair layout (the one thing that bites): a rotary embedding turns pairs of coordinates of
each query/key head by a position-dependent angle. *Which* coordinates form a pair is a
convention of the weights:

* **adjacent pairs** ``(x[2i], x[2i+1])``: the original paper's layout, llama.cpp's and the GGUF
  file's (its converter permutes the rows of ``W_q``/``W_k`` within each head to get it);
* **split halves** ``(x[i], x[i + d/2])``: Hugging Face ``transformers``' ``rotate_half`` layout.

Both give the same attention scores as long as they match the weights: the coordinates differ
only by the permutation :func:`rope_gguf_to_hf` (``x_hf = x_gguf[..., rope_gguf_to_hf(d)]``) and a
dot product does not care about the order of its terms.

Sources:
    * RMSNorm: Zhang & Sennrich (2019), "Root Mean Square Layer Normalization", eq. (4).
    * RoPE: Su et al. (2021), "RoFormer: Enhanced Transformer with Rotary Position Embedding",
      section 3.2 (eq. 13-15: theta_i = base^(-2(i-1)/d), pairs ``(x_{2i-1}, x_{2i})``).
    * LayerNorm (GPT-2): Ba, Kiros & Hinton (2016), "Layer Normalization", eq. (3-4); GELU: Hendrycks &
      Gimpel (2016), "Gaussian Error Linear Units", section 2 (the tanh approximation GPT-2 uses).
    * SwiGLU: Shazeer (2020), "GLU Variants Improve Transformer", eq. (5) (``FFN_SwiGLU``);
      SiLU: Elfwing et al. (2018), Hendrycks & Gimpel (2016).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "rms_norm",
    "layer_norm",
    "rope_frequencies",
    "rope_angles",
    "apply_rope",
    "apply_rope_half",
    "rope_gguf_to_hf",
    "rope_hf_to_gguf",
    "silu",
    "gelu_tanh",
    "swiglu",
    "row_blocks",
]


def _float(x, name: str) -> np.ndarray:
    x = np.asarray(x)
    if not np.issubdtype(x.dtype, np.floating):
        x = x.astype(np.float64)
    if x.ndim == 0:
        raise ValueError(f"{name} must have at least one axis, got a scalar")
    return x


def rms_norm(x, weight, eps: float) -> np.ndarray:
    """RMSNorm: ``x / sqrt(mean(x**2) + eps) * weight`` over the last axis.

    No mean subtraction and no bias (unlike LayerNorm); ``weight`` is the learned gain.

    Args:
        x: activations ``[..., d]`` (float32 stays float32).
        weight: gain ``[d]``.
        eps: added to the mean square before the square root (SmolLM2: 1e-5), > 0.

    Returns:
        ``[..., d]`` in the dtype of ``x``.

    Raises:
        ValueError: ``weight`` is not ``[d]`` or ``eps`` is not positive.

    Source: Zhang & Sennrich (2019), eq. (4); as ``LlamaRMSNorm`` in transformers.
    """
    x = _float(x, "x")
    weight = np.asarray(weight, dtype=x.dtype)
    if weight.shape != x.shape[-1:]:
        raise ValueError(f"weight must have shape [{x.shape[-1]}] (the last axis of x), got {list(weight.shape)}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    mean_square = np.mean(np.square(x), axis=-1, keepdims=True)  # [..., 1]
    return x * (1 / np.sqrt(mean_square + x.dtype.type(eps))) * weight  # [..., d]


def layer_norm(x, weight, bias, eps: float) -> np.ndarray:
    """LayerNorm: ``(x - mean(x)) / sqrt(var(x) + eps) * weight + bias`` over the last axis.

    Args:
        x: activations ``[..., d]`` (float32 stays float32).
        weight, bias: gain and shift ``[d]``.
        eps: added to the variance (the biased one, ``mean((x - mean)**2)``) before the square root (GPT-2:
            1e-5), > 0.

    Returns:
        ``[..., d]`` in the dtype of ``x``.

    Raises:
        ValueError: ``weight`` or ``bias`` is not ``[d]``, or ``eps`` is not positive.

    Source: Ba, Kiros & Hinton (2016), eq. (3-4); ``torch.nn.LayerNorm`` (GPT-2's ``ln_1``, ``ln_2``, ``ln_f``).
    """
    x = _float(x, "x")
    weight, bias = np.asarray(weight, dtype=x.dtype), np.asarray(bias, dtype=x.dtype)
    if weight.shape != x.shape[-1:] or bias.shape != x.shape[-1:]:
        raise ValueError(f"weight and bias must have shape [{x.shape[-1]}] (the last axis of x), got "
                         f"{list(weight.shape)} and {list(bias.shape)}")
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    centered = x - np.mean(x, axis=-1, keepdims=True)  # [..., d]
    variance = np.mean(np.square(centered), axis=-1, keepdims=True)  # [..., 1]
    return centered * (1 / np.sqrt(variance + x.dtype.type(eps))) * weight + bias  # [..., d]


def rope_frequencies(d_head: int, base: float, divisors=None) -> np.ndarray:
    """The rotation speeds ``theta_i = base ** (-2 i / d_head)``, ``i = 0 .. d_head/2 - 1`` (float64), each divided
    by ``divisors[i]`` when given (scaled RoPE).

    Pair 0 turns by 1 radian per position, the last pair about ``1/base`` radian: early pairs
    encode fine position, late pairs coarse position.

    Args:
        d_head: the head width (a positive even integer).
        base: the RoPE base (> 1).
        divisors: ``None``, or ``[d_head/2]`` finite numbers > 0: pair ``i`` turns ``divisors[i]`` times more slowly
            (Llama 3's per-pair factors, the file's ``rope_freqs``, times a linear scaling factor:
            :attr:`attention.llama.config.LlamaConfig.rope_divisors`).

    Raises:
        ValueError: ``d_head`` is not a positive even integer, ``base`` is not > 1, or ``divisors`` is not
            ``[d_head/2]`` finite numbers > 0.

    Source: Su et al. (2021), section 3.2.2 (base 10000 there; SmolLM2 uses 100000); the divisors as llama.cpp's
    ``ggml_rope_ext`` applies its ``freq_factors`` (``ggml/src/ggml-cpu/ops.cpp``, ``rope_yarn(theta / ff, ...)``).
    """
    if isinstance(d_head, bool) or not isinstance(d_head, int | np.integer) or d_head <= 0 or d_head % 2:
        raise ValueError(f"d_head must be a positive even integer, got {d_head!r}")
    if not base > 1:
        raise ValueError(f"base must be > 1, got {base}")
    theta = float(base) ** (-np.arange(0, d_head, 2, dtype=np.float64) / d_head)  # [d_head/2]
    if divisors is None:
        return theta
    divisors = np.asarray(divisors, dtype=np.float64)
    if divisors.shape != theta.shape or not (np.isfinite(divisors).all() and (divisors > 0).all()):
        raise ValueError(f"divisors must be [d_head/2] = [{d_head // 2}] finite numbers > 0, got shape "
                         f"{list(divisors.shape)}")
    return theta / divisors


def rope_angles(positions, d_head: int, base: float, divisors=None) -> np.ndarray:
    """Rotation angles ``position * theta_i`` in radians: ``[n] -> [n, d_head/2]`` (float64), with the speeds of
    :func:`rope_frequencies` (``divisors``: scaled RoPE, see there).

    Computed in float64 (exact to ~1e-16 relative); the caller rounds ``cos``/``sin`` to its
    dtype. (transformers computes the product in float32, which differs by ~1e-7 relative.)

    Raises:
        ValueError: ``positions`` is not a 1-D array of integers >= 0, or what :func:`rope_frequencies` raises.
    """
    positions = np.asarray(positions)
    if positions.ndim != 1 or not np.issubdtype(positions.dtype, np.integer) or (positions < 0).any():
        raise ValueError(f"positions must be a 1-D array of integers >= 0, got {positions!r}")
    return positions.astype(np.float64)[:, None] * rope_frequencies(d_head, base, divisors)[None, :]  # [n, d_head/2]


def _cos_sin(x: np.ndarray, angles) -> tuple[np.ndarray, np.ndarray]:
    angles = np.asarray(angles)
    if x.shape[-1] % 2 or angles.shape[-1] != x.shape[-1] // 2 or angles.ndim < 2 or angles.shape[-2] != x.shape[-2]:
        raise ValueError(
            f"angles must have shape [n, d/2] = [{x.shape[-2] if x.ndim > 1 else '?'}, {x.shape[-1] // 2}] "
            f"for x of shape {list(x.shape)} (d even), got {list(angles.shape)}"
        )
    return np.cos(angles).astype(x.dtype), np.sin(angles).astype(x.dtype)


def apply_rope(x, angles) -> np.ndarray:
    """Rotate adjacent pairs ``(x[2i], x[2i+1])`` by ``angles[:, i]`` (the GGUF / llama.cpp layout).

    ``x'[2i] = x[2i] cos - x[2i+1] sin``, ``x'[2i+1] = x[2i] sin + x[2i+1] cos``.

    Args:
        x: queries or keys ``[..., n, d_head]`` (d_head even).
        angles: ``[n, d_head/2]`` radians (:func:`rope_angles`), broadcast over leading axes.

    Returns:
        ``[..., n, d_head]`` in the dtype of ``x`` (``cos``/``sin`` rounded to it first).

    Raises:
        ValueError: shapes do not match.

    Source: Su et al. (2021), eq. (34) (the efficient form of the rotation matrix).
    """
    x = _float(x, "x")
    cos, sin = _cos_sin(x, angles)  # [n, d/2] each
    even, odd = x[..., 0::2], x[..., 1::2]  # [..., n, d/2] each
    out = np.empty_like(x)
    out[..., 0::2] = even * cos - odd * sin
    out[..., 1::2] = even * sin + odd * cos
    return out


def apply_rope_half(x, angles) -> np.ndarray:
    """Rotate split-half pairs ``(x[i], x[i + d/2])`` by ``angles[:, i]`` (transformers' ``rotate_half``).

    ``x' = x * cat(cos, cos) + rotate_half(x) * cat(sin, sin)`` with
    ``rotate_half(x) = cat(-x[d/2:], x[:d/2])``. Equals
    ``apply_rope(x[..., rope_hf_to_gguf(d)], angles)[..., rope_gguf_to_hf(d)]``.

    Args / Returns / Raises: as :func:`apply_rope`.

    Source: ``apply_rotary_pos_emb`` in transformers' ``modeling_llama.py``.
    """
    x = _float(x, "x")
    cos, sin = _cos_sin(x, angles)
    half = x.shape[-1] // 2
    first, second = x[..., :half], x[..., half:]
    return np.concatenate([first * cos - second * sin, second * cos + first * sin], axis=-1)


def rope_gguf_to_hf(d_head: int) -> np.ndarray:
    """Index array ``p`` with ``x_hf = x_gguf[..., p]``: ``[0, 2, 4, ..., d-2, 1, 3, ..., d-1]``.

    GGUF coordinate ``2i`` (first of pair i) is HF coordinate ``i``; GGUF ``2i+1`` is HF ``i + d/2``.
    Applied to the rows of one head of ``W_q``/``W_k`` (``[d_head, d_model]`` in the file) it
    undoes the permutation llama.cpp's converter made (transformers does the same on loading).

    Raises:
        ValueError: ``d_head`` is not a positive even integer.
    """
    rope_frequencies(d_head, 2.0)  # validates d_head
    return np.concatenate([np.arange(0, d_head, 2), np.arange(1, d_head, 2)])


def rope_hf_to_gguf(d_head: int) -> np.ndarray:
    """The inverse of :func:`rope_gguf_to_hf`: ``x_gguf = x_hf[..., p]`` (interleaves the halves)."""
    return np.argsort(rope_gguf_to_hf(d_head))


def silu(x) -> np.ndarray:
    """SiLU (swish): ``x * sigmoid(x)``, with ``sigmoid(x) = (1 + tanh(x / 2)) / 2``.

    The tanh form never overflows (``1 / (1 + exp(-x))`` does for ``x < -88`` in float32) and
    agrees with it to about one float32 rounding. Any shape; keeps the float dtype.

    Source: Elfwing et al. (2018), eq. (1); Hendrycks & Gimpel (2016).
    """
    x = _float(x, "x")
    half = x.dtype.type(0.5)
    return x * (half + half * np.tanh(half * x))


def gelu_tanh(x) -> np.ndarray:
    """GELU, tanh approximation: ``0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x**3)))``. Any shape; keeps the
    float dtype.

    Source: Hendrycks & Gimpel (2016), section 2; GPT-2's ``gelu_new`` (transformers' ``NewGELUActivation``).
    """
    x = _float(x, "x")
    t = x.dtype.type
    return t(0.5) * x * (t(1) + np.tanh(t(np.sqrt(2 / np.pi)) * (x + t(0.044715) * x * x * x)))


def swiglu(x, W_gate, W_up, W_down) -> np.ndarray:
    """The SwiGLU feed-forward block: ``(silu(x @ W_gate) * (x @ W_up)) @ W_down``.

    Args:
        x: ``[..., d_model]``.
        W_gate, W_up: ``[d_model, d_ff]`` (row-vector convention: the transposes of PyTorch's
            ``gate_proj.weight`` / ``up_proj.weight`` and of the GGUF ``ffn_gate`` / ``ffn_up``).
        W_down: ``[d_ff, d_model]``.

    Returns:
        ``[..., d_model]`` in the dtype of ``x``. No biases (as in Llama).

    Raises:
        ValueError: the weight shapes do not chain.

    Source: Shazeer (2020), eq. (5) with Swish_1 = SiLU; ``LlamaMLP`` in transformers.
    """
    x = _float(x, "x")
    d_model = x.shape[-1]
    W_gate, W_up, W_down = (np.asarray(w) for w in (W_gate, W_up, W_down))
    if W_gate.ndim != 2 or W_gate.shape[0] != d_model or W_up.shape != W_gate.shape \
            or W_down.shape != (W_gate.shape[1], d_model):
        raise ValueError(
            f"expected W_gate and W_up [d_model, d_ff] and W_down [d_ff, d_model] with d_model = {d_model}, "
            f"got {list(W_gate.shape)}, {list(W_up.shape)}, {list(W_down.shape)}"
        )
    hidden = silu(x @ W_gate) * (x @ W_up)  # [..., d_ff]
    return hidden @ W_down  # [..., d_ff] x [d_ff, d_model] -> [..., d_model]


ROW_BLOCK_BYTES = 4 * 2**20
"""The float64 bytes a block of :func:`row_blocks` holds per temporary: 4 MiB (10 rows of a 49152-token vocabulary)."""


def row_blocks(n: int, width: int, max_bytes: int | None = None) -> list[slice]:
    """Slices ``0 .. n`` into consecutive blocks of rows whose float64 ``[rows, width]`` fits in ``max_bytes``
    (None: :data:`ROW_BLOCK_BYTES`; at least one row a block). A row-wise computation over the vocabulary
    (log-softmax, KL, top tokens) done block by block gives the same numbers as on the whole array and holds a
    few MB instead of ``n x width`` floats."""
    step = max(1, int(ROW_BLOCK_BYTES if max_bytes is None else max_bytes) // (8 * max(1, int(width))))
    return [slice(start, min(start + step, n)) for start in range(0, n, step)]
