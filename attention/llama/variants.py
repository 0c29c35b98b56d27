"""Cheaper attention on a loaded model, measured: perplexity, key/value conversions, StreamingLLM's numbering.

What a smaller KV cache costs is measured here on the model's own weights, **before any fine-tuning** (the papers
below all train after converting; these are the conversions' first step alone):

* :func:`perplexity`: ``exp`` of the mean next-token loss over named positions, with
  any of :meth:`LlamaModel.forward`'s options (a sliding ``window`` with ``sinks``, a ``position_offset``, ...);
  :func:`compare` adds the KL divergence to the original next-token distributions and the top-1 agreement.
* :func:`kv_variant`: a model whose key/value projections are converted:

  - ``"mha"``: every query head gets its own key/value head, a copy of the one it shared (the 3 heads repeated for
    9). The same numbers, 3x the cache.
  - ``"mqa"``: the key/value heads mean-pooled into one (Ainslie et al. 2023, "GQA: Training Generalized
    Multi-Query Transformer Models from Multi-Head Checkpoints", section 2.1 and figure 1: mean pooling converts
    the checkpoint, then 5 % of the pre-training compute "uptrains" it; here: no uptraining).
  - ``("latent", r)``: per layer, the best rank-``r`` approximation of ``[W_k | W_v]`` (``[d_model, 2 n_kv_heads
    d_head]``, the joint SVD: Eckart-Young), so that a token's keys and values of a layer are ``c @ B`` with
    ``c = x @ A`` of ``r`` floats: the cache holds ``c`` (the low-rank step of the published MHA -> latent
    conversions: Ji et al. 2025, "Towards Economical Inference: Enabling DeepSeek's Multi-Head Latent Attention in
    Any Transformer-based LLMs" (MHA2MLA), section 3.3, SVD_joint; Meng et al. 2025, "TransMLA"). Unlike them,
    the whole of ``W_k`` is factorised, RoPE included: the keys are rebuilt from ``c`` and then rotated at their
    positions (MHA2MLA keeps a few rotary dimensions outside the latent; DeepSeek-V2's MLA adds a separate
    rotary key so it can skip the rebuild). Rank :func:`latent_full_rank` (``min(d_model, 2 n_kv_heads d_head)``,
    384 for SmolLM2) reproduces the original.

  Every family the core reads: a model's Q/K/V biases (qwen2, gpt2) are converted with their matrices (repeated or
  averaged; a latent cache adds them after the rebuild), its per-head q/k norms (qwen3, gemma3) act on the converted
  keys as on the original ones (one gain for every head), and gpt2, already MHA, converts to MQA and latent caches.

* :func:`renumbered_logits`: the sliding window with sinks as StreamingLLM runs it, positions numbered *inside the
  cache* (Xiao et al. 2023, "Efficient Streaming Language Models with Attention Sinks", section 3.2, and its
  code: ``streaming_llm/pos_shift/modify_llama.py`` caches keys before RoPE and rotates them at their index in the
  ``StartRecentKVCache``, the query at the cache's length). ``forward(window=w, sinks=k)`` keeps every token's
  original position instead. The two differ only in the scores of the kept first tokens: a window key is as far
  from the query in both numberings; a sink is ``p - s`` positions away in ours, ``k + w - 1 - s`` in theirs. It
  runs the model's own block (biases, norms, RoPE layout, gemma3's local layers with their own window and base);
  gpt2's learned positions are added to the embedding, so its cache holds no position to renumber: ``ValueError``.
* :func:`generate`: greedy continuation with those options (a windowed cache continues with its window);
  :func:`continue_greedy` continues a pass already made (the prompt is not run twice).

Memory: a variant shares every array of the model; each layer's converted ``W_q | W_k | W_v`` is computed from the
model's own when a pass reaches that layer (the same numbers each time) and dropped after it, so a variant holds
no weights of its own and a pass one layer's converted matrix at a time (float32 ``d_model * (n_heads + 2 kv) *
d_head * 4`` bytes: for SmolLM2-135M 4.0 MB for ``"mha"``, 1.6 MB for ``"mqa"``, 2.2 MB for ``("latent", r)``; a
whole converted set would be 119, 49 and 66 MB). :func:`latent_basis` keeps the right singular vectors of the last
two models asked (float32 ``[n_layers, 384, 384]``, 17.7 MB for SmolLM2).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass

import numpy as np

from ..core import scaled_dot_product_attention
from .blocks import rms_norm, row_blocks
from .sampling import sample_next

__all__ = ["KV_VARIANTS", "Agreement", "compare", "continue_greedy", "converted_config", "generate", "kl_divergence",
           "kv_variant", "latent_basis", "latent_full_rank", "next_token_losses", "perplexity", "renumbered_logits",
           "score_start", "singular_values"]

KV_VARIANTS = ("mha", "mqa", "latent")
"""The conversions :func:`kv_variant` knows: ``"mha"``, ``"mqa"`` and ``("latent", rank)``."""


def _integer(value, name: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


# --- measuring ---------------------------------------------------------------------------------------


def score_start(n: int, score_from: int | None = None, window: int | None = None) -> int:
    """The first query position whose next-token loss :func:`perplexity` counts, for ``n`` tokens.

    ``score_from`` when given (0 .. ``n - 2``); else ``window`` when a window is given (query ``window`` is the first
    one the window hides a key from: it sees keys ``1 .. window``, not key 0), else 0. Positions ``start .. n - 2``
    are scored: they predict tokens ``start + 1 .. n - 1``.

    Raises:
        ValueError: fewer than 2 tokens; ``score_from`` out of ``0 .. n - 2``; a window that leaves no position
            after it (``window > n - 2``: the text needs at least ``window + 2`` tokens).
    """
    if n < 2:
        raise ValueError(f"a perplexity needs at least 2 tokens (one prediction to score), got {n}")
    if score_from is not None:
        return _integer(score_from, "score_from", 0, n - 2)
    if window is None:
        return 0
    if isinstance(window, int | np.integer) and not isinstance(window, bool) and window > n - 2:
        raise ValueError(f"window = {window} leaves no position after it in {n} tokens: score positions "
                         f"window .. n - 2 need at least window + 2 = {window + 2} tokens (or pass score_from)")
    return _integer(window, "window", 1, n - 2)


def next_token_losses(logits, ids) -> np.ndarray:
    """``-log p(ids[t + 1] | ids[:t + 1])`` for ``t = 0 .. n - 2``: float64 ``[n - 1]``, nats.

    Args:
        logits: ``[n, vocab]`` (row ``t`` scores the token after position ``t``). ids: the ``n`` token ids.

    Raises:
        ValueError: shapes that do not match, or non-finite logits.
    """
    logits = np.asarray(logits)
    ids = np.asarray(ids)
    if logits.ndim != 2 or ids.ndim != 1 or logits.shape[0] != ids.shape[0] or ids.shape[0] < 2:
        raise ValueError(f"logits must be [n, vocab] for n >= 2 ids [n], got {list(logits.shape)} and "
                         f"{list(ids.shape)}")
    if not np.isfinite(logits).all():
        raise ValueError("logits have NaN or infinite values")
    m = logits.shape[0] - 1
    log_norm = np.empty(m)  # logsumexp per row, float64 [n - 1], a few rows at a time (no float64 [n - 1, vocab])
    for rows in row_blocks(m, logits.shape[1]):
        z = logits[rows].astype(np.float64)  # [rows, vocab]
        top = z.max(axis=1)
        log_norm[rows] = top + np.log(np.exp(z - top[:, None]).sum(axis=1))
    return log_norm - logits[np.arange(m), ids[1:]].astype(np.float64)


def _log_softmax(z: np.ndarray) -> np.ndarray:
    z = z.astype(np.float64)
    z = z - z.max(axis=-1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


def kl_divergence(reference_logits, logits) -> np.ndarray:
    """``KL(softmax(reference) || softmax(logits))`` per row: float64 ``[m]``, nats (0 = the same distribution).

    Raises:
        ValueError: the two are not finite arrays of the same shape ``[m, vocab]``.
    """
    p_log, q_log = np.asarray(reference_logits), np.asarray(logits)
    if p_log.shape != q_log.shape or p_log.ndim != 2 or not (np.isfinite(p_log).all() and np.isfinite(q_log).all()):
        raise ValueError(f"reference_logits and logits must be finite [m, vocab] of one shape, got "
                         f"{list(p_log.shape)} and {list(q_log.shape)}")
    out = np.empty(p_log.shape[0])
    for rows in row_blocks(p_log.shape[0], p_log.shape[1]):  # a few rows at a time: no float64 [m, vocab] held
        p_rows, q_rows = _log_softmax(p_log[rows]), _log_softmax(q_log[rows])
        out[rows] = (np.exp(p_rows) * (p_rows - q_rows)).sum(axis=-1)
    return np.maximum(out, 0.0)  # rounding can dip below 0


@dataclass(frozen=True)
class Agreement:
    """How a changed model's next-token predictions compare with the original's on the same scored positions.

    Attributes:
        perplexity: ``exp(mean loss)`` of the changed model over positions ``score_from .. n - 2``.
        kl: mean ``KL(original || changed)`` of the next-token distributions there, nats.
        top1: the fraction of those positions where both put the same token first (0..1).
        score_from: the first scored position. n_scored: how many positions (``n - 1 - score_from``).
    """

    perplexity: float
    kl: float
    top1: float
    score_from: int
    n_scored: int


def compare(reference_logits, logits, ids, score_from: int = 0) -> Agreement:
    """:class:`Agreement` of ``logits`` (a changed model) with ``reference_logits`` (the original), both
    ``[n, vocab]`` for the same ``ids``, over query positions ``score_from .. n - 2``.

    Raises:
        ValueError: shapes that differ or do not match ``ids``; ``score_from`` out of ``0 .. n - 2``.
    """
    reference_logits, logits = np.asarray(reference_logits), np.asarray(logits)
    if reference_logits.shape != logits.shape:
        raise ValueError(f"reference_logits and logits must have one shape, got {list(reference_logits.shape)} and "
                         f"{list(logits.shape)}")
    losses = next_token_losses(logits, ids)
    start = score_start(len(losses) + 1, score_from)
    rows = slice(start, len(losses))
    kl = kl_divergence(reference_logits[rows], logits[rows])
    top1 = np.argmax(reference_logits[rows], axis=-1) == np.argmax(logits[rows], axis=-1)
    return Agreement(float(np.exp(losses[rows].mean())), float(kl.mean()), float(top1.mean()), start,
                     len(losses) - start)


def perplexity(model, ids, *, score_from: int | None = None, **forward_options) -> float:
    """``exp`` of the mean next-token loss of ``model.forward(ids, **forward_options)`` over query positions
    ``start .. n - 2`` (predicting tokens ``start + 1 .. n - 1``), with ``start`` = :func:`score_start`:
    ``score_from`` if given, else the ``window`` if given (the positions after the window), else 0.

    To compare variants on the same tokens, give them the same ``score_from`` (e.g. the largest window compared).
    Natural log, float64 softmax; a model that predicted every token with certainty would score 1.

    Raises:
        ValueError: as :meth:`LlamaModel.forward`, and as :func:`score_start` (a text too short for its window).
    """
    ids = model._check_ids(ids)
    if "need_weights" in forward_options or "cache" in forward_options:
        raise ValueError("perplexity runs the whole text itself: pass neither need_weights nor cache")
    start = score_start(len(ids), score_from, forward_options.get("window"))
    logits = model.forward(ids, need_weights=False, **forward_options).logits
    return float(np.exp(next_token_losses(logits, ids)[start:].mean()))


# --- key/value conversions -------------------------------------------------------------------------------------


def _rope_positions(config, what: str) -> None:
    """``ValueError`` unless ``config``'s positions are RoPE's: StreamingLLM's numbering turns a cached key by its
    index in the cache, which needs a position applied to the key itself. gpt2's learned positions are added to the
    token embedding before block 0: every key carries its position in the stream it was computed from, so the cache
    has no position to renumber."""
    if config.positions != "rope":
        raise ValueError(f"{what} renumbers the RoPE positions of the cached keys; this model is "
                         f"{config.architecture!r}, whose positions are learned vectors added to the token embedding "
                         "(no RoPE): a key carries its position in the stream it was computed from, so there is no "
                         "position in the cache to renumber")


def latent_full_rank(config) -> int:
    """The largest rank of a latent cache: ``min(d_model, 2 n_kv_heads d_head)``, the rank ``[W_k | W_v]``
    ``[d_model, 2 n_kv_heads d_head]`` can have; at it the latent cache is the model again (SmolLM2-135M: 384)."""
    return min(config.d_model, 2 * config.n_kv_heads * config.d_head)


def _check_kind(config, kind) -> tuple[str, int | None]:
    c = config
    full = latent_full_rank(c)
    if isinstance(kind, str) and kind in ("mha", "mqa"):
        return kind, None
    if isinstance(kind, tuple | list) and len(kind) == 2 and isinstance(kind[0], str) and kind[0] == "latent":
        rank = kind[1]
        if isinstance(rank, bool) or not isinstance(rank, int | np.integer) or not 1 <= rank <= full:
            raise ValueError(f"kind ('latent', rank) needs a rank in 1..{full} (2 n_kv_heads d_head, the width of "
                             f"[W_k | W_v]), got {rank!r}")
        return "latent", int(rank)
    raise ValueError(f"kind must be 'mha', 'mqa' or ('latent', rank) with rank in 1..{full}, got {kind!r:.80}")


@functools.lru_cache(maxsize=2)
def latent_basis(model) -> np.ndarray:
    """Per layer, the right singular vectors of ``[W_k | W_v]`` by decreasing singular value: float32
    ``[n_layers, 2 kv d_head, r_max]`` (columns; ``r_max`` = :func:`latent_full_rank`, the most ``[W_k | W_v]`` can
    have). From the eigenvectors of the float64 Gram matrix ``[W_k | W_v]^T [W_k | W_v]`` (the same vectors as the
    SVD's, faster) when ``2 kv d_head <= d_model``; else from the thin SVD of ``[W_k | W_v]`` itself (Qwen3's and
    Gemma 3's wide heads: the Gram matrix would be ``2 kv d_head`` square for at most ``d_model`` vectors). Kept for
    the last 2 models asked (17.7 MB each for SmolLM2-135M).

    Raises:
        ValueError: the model is already a latent variant (factorise the original).
    """
    c = model.config
    if c.kv_latent_rank is not None:
        raise ValueError("this model is already a latent variant: convert the original model")
    H, dh = c.n_heads, c.d_head
    width, full = 2 * c.n_kv_heads * dh, latent_full_rank(c)
    out = np.empty((c.n_layers, width, full), np.float32)  # filled a layer at a time (no float64 stack of all)
    for index, layer in enumerate(model._layers):
        W_kv = layer.qkv.widen()[:, H * dh:].astype(np.float64)  # [d_model, 2 kv dh]
        if width <= c.d_model:
            eigenvalues, vectors = np.linalg.eigh(W_kv.T @ W_kv)  # ascending
            out[index] = vectors[:, ::-1]  # [2 kv dh, 2 kv dh], by decreasing singular value
        else:
            out[index] = np.linalg.svd(W_kv, full_matrices=False)[2].T  # [2 kv dh, d_model], decreasing
    return out


def singular_values(model) -> np.ndarray:
    """Per layer, the singular values of ``[W_k | W_v]``, decreasing: float64 ``[n_layers, 2 kv d_head]``."""
    c = model.config
    out = [np.linalg.svd(layer.qkv.widen()[:, c.n_heads * c.d_head:].astype(np.float64), compute_uv=False)
           for layer in model._layers]
    return np.stack(out)


def _converted_qkv(model, W: np.ndarray, kind: str, rank: int | None, basis: np.ndarray | None) -> np.ndarray:
    """One layer's fused ``W [d_model, (H + 2 kv) dh]`` -> the variant's (float32, contiguous)."""
    c = model.config
    H, KV, dh, d = c.n_heads, c.n_kv_heads, c.d_head, c.d_model
    W_q, W_k, W_v = W[:, :H * dh], W[:, H * dh:(H + KV) * dh], W[:, (H + KV) * dh:]
    if kind == "mha":  # head h reads the copy of key/value head h // group_size
        W_k, W_v = (np.repeat(w.reshape(d, KV, dh), c.group_size, axis=1).reshape(d, H * dh) for w in (W_k, W_v))
    elif kind == "mqa":  # mean of the key/value heads: [d, dh] each
        W_k, W_v = (w.reshape(d, KV, dh).astype(np.float64).mean(axis=1) for w in (W_k, W_v))
    else:
        V_r = basis[:, :rank].astype(np.float64)  # [2 kv dh, r]
        W_kv = np.concatenate([W_k, W_v], axis=1).astype(np.float64)  # [d, 2 kv dh]
        W_kv = (W_kv @ V_r) @ V_r.T  # A = W_kv V_r: [d, r] (the latent's projection); B = V_r^T: [r, 2 kv dh]
        W_k, W_v = W_kv[:, :KV * dh], W_kv[:, KV * dh:]
    return np.ascontiguousarray(np.concatenate([W_q, W_k, W_v], axis=1), dtype=np.float32)


def _converted_bias(config, bias: np.ndarray | None, kind: str) -> np.ndarray | None:
    """One layer's ``b_q | b_k | b_v`` (qwen2, gpt2) -> the variant's: the key/value biases repeated per query head
    (mha) or their mean (mqa), as their matrices; a latent cache keeps them (the keys and values are rebuilt from the
    latent, then the biases added: ``k = (x A) B_k + b_k``). ``None`` stays ``None``."""
    if bias is None or kind == "latent":
        return bias
    H, KV, dh = config.n_heads, config.n_kv_heads, config.d_head
    b_q, b_k, b_v = bias[:H * dh], bias[H * dh:(H + KV) * dh], bias[(H + KV) * dh:]
    if kind == "mha":
        b_k, b_v = (np.repeat(b.reshape(KV, dh), config.group_size, axis=0).reshape(-1) for b in (b_k, b_v))
    else:
        b_k, b_v = (b.reshape(KV, dh).astype(np.float64).mean(axis=0) for b in (b_k, b_v))
    return np.concatenate([b_q, b_k, b_v]).astype(np.float32)


class _ConvertedQKV:
    """One layer's converted ``W_q | W_k | W_v``, computed from the model's own when a pass asks for it
    (:func:`_converted_qkv` on ``source.widen()``, the same numbers every time) and not kept: the variant holds no
    weights of its own, a pass holds one layer's converted matrix at a time (4 MB for SmolLM2's MHA)."""

    def __init__(self, model, source, kind: str, rank: int | None, basis: np.ndarray | None):
        self._model, self._source, self._kind, self._rank, self._basis = model, source, kind, rank, basis
        c = converted_config(model.config, kind if kind != "latent" else (kind, rank))
        self.shape = (source.shape[0], (c.n_heads + 2 * c.n_kv_heads) * c.d_head)

    def widen(self, scratch: dict | None = None) -> np.ndarray:
        """The converted float32 ``[d_model, (H + 2 kv') dh]``, C-contiguous (a new array each call)."""
        return _converted_qkv(self._model, self._source.widen(), self._kind, self._rank, self._basis)

    @property
    def nbytes(self) -> int:
        return 0  # nothing of its own: the source is the model's, the basis is latent_basis's (shared)


def converted_config(config, kind):
    """The :class:`~attention.llama.LlamaConfig` of ``kind``'s variant (what :func:`kv_variant` gives it, without
    converting any weight): ``n_kv_heads`` ``n_heads`` for ``"mha"``, 1 for ``"mqa"``; ``kv_latent_rank`` for
    ``("latent", r)``. ``kind=None`` is the model itself.

    Raises:
        ValueError: as :func:`kv_variant`.
    """
    if kind is None:
        return config
    kind, rank = _check_kind(config, kind)
    if config.kv_latent_rank is not None:
        raise ValueError("this model is already a latent variant: convert the original model")
    n_kv = {"mha": config.n_heads, "mqa": 1}.get(kind, config.n_kv_heads)
    return dataclasses.replace(config, n_kv_heads=n_kv, kv_latent_rank=rank)


def kv_variant(model, kind):
    """A model whose key/value projections are converted (see the module docstring): ``"mha"``, ``"mqa"`` or
    ``("latent", rank)``. Everything else is the model's own (shared, not copied).

    Returns:
        a :class:`~attention.llama.LlamaModel`: ``config.n_kv_heads`` ``n_heads`` (mha) or 1 (mqa);
        ``config.kv_latent_rank = rank`` (latent, ``n_kv_heads`` unchanged: the keys and values are rebuilt from the
        latent); ``config.kv_bytes_per_token`` by the formula. Works from either weights mode.

    Raises:
        ValueError: an unknown ``kind``, a rank outside ``1 .. 2 n_kv_heads d_head``, a latent model converted
            again.
    """
    config = converted_config(model.config, kind)
    kind, rank = _check_kind(model.config, kind)
    basis = latent_basis(model) if kind == "latent" else None
    layers = []
    for index, layer in enumerate(model._layers):
        qkv = _ConvertedQKV(model, layer.qkv, kind, rank, None if basis is None else basis[index])
        layers.append(dataclasses.replace(layer, qkv=qkv, qkv_bias=_converted_bias(model.config, layer.qkv_bias,
                                                                                     kind)))
    return type(model)(config, layers, model._embedding, model._output, model._output_norm, model.tokenizer,
                       model.weights_mode, model.path, model.chat_template,
                       position_embedding=model._position_embedding, output_norm_bias=model._output_norm_bias)


# --- StreamingLLM's numbering -------------------------------------------------------------------------------


def _window_pass(model, ids: np.ndarray, window: int, sinks: int, renumber: bool) -> np.ndarray:
    """Logits ``[n, vocab]`` of a sliding-window pass; ``renumber``: the sinks' scores at cache positions.

    The model's own block (its norms, biases, per-head q/k norms, RoPE layout, MLP, norms after the sub-layers) and
    masks: a local layer (gemma3) keeps only its own sliding window, with its own RoPE base (no sinks there, as in
    :meth:`LlamaModel.forward`)."""
    c = model.config
    _rope_positions(c, "renumbered_logits")
    n, H, KV, G, dh = len(ids), c.n_heads, c.n_kv_heads, c.group_size, c.d_head
    positions = np.arange(n)
    plan = model._plan(n, None, window=window, sinks=sinks)
    full = sinks + window - 1  # StreamingLLM's query position once the cache is full (k sinks + w - 1 recent)
    rows = np.flatnonzero(positions > full) if renumber and sinks else np.array([], int)  # queries that move
    scale = np.float32(1.0 / math.sqrt(dh))
    scratch: dict = {}
    x = model._embed(ids, positions)  # [n, d_model]
    for index, layer in enumerate(model._layers):
        local = index in c.local_layers
        allowed = model._mask(n, 0, plan, c.sliding_window if local else None)  # [n, n] (n > 1: never None)
        bias = np.where(allowed, np.float32(0), np.float32(-np.inf))  # [n, n], added to the scaled scores
        angles = model._angles(positions, local)  # [n, dh/2]
        h = model._norm(x, layer.attn_norm, layer.attn_norm_bias)
        qkv = h @ layer.qkv.widen(scratch)  # [n, (H + 2 KV) dh]
        if layer.qkv_bias is not None:
            qkv = qkv + layer.qkv_bias
        q = qkv[:, :H * dh].reshape(n, H, dh).transpose(1, 0, 2)  # [H, n, dh]
        k = qkv[:, H * dh:(H + KV) * dh].reshape(n, KV, dh).transpose(1, 0, 2)  # [KV, n, dh]
        v = qkv[:, (H + KV) * dh:].reshape(n, KV, dh).transpose(1, 0, 2)  # [KV, n, dh]
        if layer.q_norm is not None:
            q, k = rms_norm(q, layer.q_norm, c.rms_eps), rms_norm(k, layer.k_norm, c.rms_eps)
        q_rot, k_rot = model._rope(q, angles), model._rope(k, angles)
        mask = np.broadcast_to(bias, (KV, G, n, n)).copy()  # [KV, G, n, n]
        if len(rows):
            # the query at cache position `full` against sink s at position s: the score the renumbered cache gives
            cache_angles = model._angles(np.full(len(rows), full), local)  # [m, dh/2]
            q_cache = model._rope(q[:, rows], cache_angles).reshape(KV, G, len(rows), dh)  # [KV, G, m, dh]
            q_orig = q_rot[:, rows].reshape(KV, G, len(rows), dh)
            sink_keys = k_rot[:, None, :sinks]  # [KV, 1, sinks, dh]
            mask[:, :, rows, :sinks] += (q_cache - q_orig) @ sink_keys.swapaxes(-1, -2) * scale  # [KV, G, m, sinks]
        out, _ = scaled_dot_product_attention(q_rot.reshape(KV, G * n, dh), k_rot, v, mask.reshape(KV, G * n, n),
                                              scale=float(scale), need_weights=False)  # [KV, G n, dh]
        merged = out.reshape(H, n, dh).transpose(1, 0, 2).reshape(n, H * dh)  # [n, H dh], head-major
        a = merged @ layer.o.widen(scratch)
        if layer.o_bias is not None:
            a = a + layer.o_bias
        x, _m = model._add_parts(layer, x, a, scratch)
    return model._output.logits(model._final_norm(x))  # [n, vocab]


def renumbered_logits(model, ids, *, window: int, sinks: int) -> np.ndarray:
    """Logits ``[n, vocab]`` float32 of a sliding window of ``window`` positions with ``sinks`` kept first tokens,
    positions numbered inside the cache as StreamingLLM does (see the module docstring).

    Token ``t`` sees the same keys as ``forward(ids, window=window, sinks=sinks)`` and every token is computed once
    from what it saw (as streaming decoding does, one token at a time); only the first ``sinks`` keys' scores
    differ, for queries ``t > sinks + window - 1``: their query sits at cache position ``sinks + window - 1``.
    With ``sinks = 0`` it equals the usual windowed pass (a window key is as far away in both numberings).

    Raises:
        ValueError: bad ``ids``; ``window`` < 1; ``sinks`` < 0; a model without RoPE (gpt2: learned positions, added
            to the embedding, leave no position in the cache to renumber; the message says so).
    """
    _rope_positions(model.config, "renumbered_logits")
    ids = model._check_ids(ids)
    window = _integer(window, "window", 1, 2**31 - 1)
    sinks = _integer(sinks, "sinks", 0, 2**31 - 1)
    return _window_pass(model, ids, window, sinks, renumber=True)


# --- generating ------------------------------------------------------------------------------------------------


def generate(model, ids, max_new_tokens: int = 8, *, stop_at_eos: bool = True, **forward_options) -> list[int]:
    """Greedy continuation of ``ids`` with :meth:`LlamaModel.forward`'s options (``window``, ``sinks``,
    ``position_offset``, a zero ``ablate``): the prompt in one pass, then one token at a time from the cache, which
    continues with the options that made it. Returns only the new ids (``len <= max_new_tokens``).

    Raises:
        ValueError: as :meth:`LlamaModel.generate` and :meth:`LlamaModel.forward`.
    """
    ids = model._check_ids(ids)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int | np.integer) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if len(ids) + max_new_tokens > model.config.max_tokens:
        raise ValueError(f"{len(ids)} prompt tokens + {max_new_tokens} new = {len(ids) + max_new_tokens}, "
                         f"more than the {model.config.max_tokens} this model accepts (MAX_TOKENS)")
    return continue_greedy(model, model.forward(ids, need_weights=False, **forward_options), max_new_tokens,
                           stop_at_eos=stop_at_eos, **forward_options)


def continue_greedy(model, out, max_new_tokens: int, *, stop_at_eos: bool = True, **forward_options) -> list[int]:
    """:func:`generate` from a pass already made: ``out`` is the :class:`~attention.llama.ForwardOutput` of the
    prompt run with ``forward_options`` (its last logits choose the first new token, its cache continues), so a
    caller that needed the prompt's logits anyway does not run the prompt twice.

    Raises:
        ValueError: ``max_new_tokens`` < 1, or more tokens than ``config.max_tokens`` in all; as
            :meth:`LlamaModel.forward` (options other than the cache's).
    """
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int | np.integer) or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    have = 0 if out.cache is None else out.cache.length
    if out.cache is None or have + max_new_tokens > model.config.max_tokens:
        raise ValueError(f"out must be a forward pass with its cache, and its {have} tokens + {max_new_tokens} new "
                         f"ones must fit in {model.config.max_tokens} (MAX_TOKENS)")
    new: list[int] = []
    while True:
        token = sample_next(out.logits[-1], temperature=0.0)
        new.append(token)
        if len(new) == max_new_tokens or (stop_at_eos and token == model.config.eos_id):
            return new
        out = model.forward([token], out.cache, need_weights=False, **forward_options)
