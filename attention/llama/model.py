"""The decoder itself: :class:`LlamaModel` (forward pass, interventions, one head step by step, generation).

One block, for ``x [n, d_model]`` (row vectors, as in the rest of the package)::

    h = rms_norm(x, attn_norm)                               # [n, 576]
    q, k, v = h @ W_q, h @ W_k, h @ W_v                      # [n, 576], [n, 192], [n, 192]
    q, k = rope(q), rope(k)                                  # per head of 64, by position
    o = sdpa(q, k, v, causal, scale = 1/8)                   # [9, n, 64]: head h uses k/v head h // 3
    x = x + concat_h(o_h) @ W_o                              # [n, 576]
    x = x + swiglu(rms_norm(x, ffn_norm), W_gate, W_up, W_down)
    logits = rms_norm(x, output_norm) @ E.T                  # after the 30 blocks: [n, 49152]

The attention is :func:`attention.core.scaled_dot_product_attention`; RMSNorm, RoPE and SiLU are
:mod:`attention.llama.blocks`. Everything runs in float32, as transformers does on the CPU.

The same forward pass runs every family of :data:`attention.llama.config.ARCHITECTURES`, its parts chosen by the
config: qwen2's biases on Q, K, V, qwen3's RMSNorm on each head's q and k, and gpt2's block::

    x = E[ids] + P[positions]                                # learned absolute positions, no RoPE
    h = layer_norm(x, attn_norm, attn_norm_bias)
    q, k, v = h @ W_qkv + b_qkv                              # fused, with a bias
    x = x + concat_h(sdpa(q, k, v)) @ W_o + b_o
    x = x + gelu_tanh(layer_norm(x, ffn_norm, ...) @ W_up + b_up) @ W_down + b_down
    logits = layer_norm(x, output_norm, output_norm_bias) @ E.T

and gemma3's: ``x = E[ids] * sqrt(d_model)``; ``x = x + rms_norm(attention(rms_norm(x, attn_norm)),
post_attention_norm)``; ``x = x + rms_norm(down(gelu_tanh(gate h) * up h), post_ffw_norm)`` with ``h =
rms_norm(x, ffn_norm)``; q and k RMSNorm-ed per head; its local layers (``config.local_layers``) see only their last
``config.sliding_window`` keys and turn by their own RoPE base (``config.rope_theta_local``).

:meth:`LlamaModel.forward` also runs the model *changed* (for the lessons on causes, sinks and caches):

* ``ablate`` / ``ablation``: named query heads' outputs (``o_h`` above, their ``weights · V`` before
  ``W_o``) set to 0 or to their mean over the positions (TransformerLens' ``hook_z``);
* ``patch``: the stream entering a block at one position, or a head's ``o_h``, replaced by given
  values (activation patching: Meng et al. 2022, "Locating and Editing Factual Associations in GPT";
  Heimersheim & Nanda 2024, "How to use and interpret activation patching");
* ``keep_activations``: every block's input stream, every head's ``o_h`` and every MLP's output;
* ``start_layer`` / ``residual``: run from a stream given at some block (recompute only the blocks after
  an intervention);
* ``window`` / ``sinks``: each query sees only its last ``window`` keys and the first ``sinks`` ones
  (sliding-window attention with attention sinks: Xiao et al. 2023, "Efficient Streaming Language Models
  with Attention Sinks", section 3.2);
* ``position_offset``: RoPE positions start there instead of 0 (RoPE scores depend only on relative
  positions: Su et al. 2021, section 3.4.2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..core import scaled_dot_product_attention
from .blocks import apply_rope, apply_rope_half, gelu_tanh, layer_norm, rms_norm, rope_angles, rope_gguf_to_hf, silu
from .config import LlamaConfig
from .kv_cache import KVCache, _KVStore
from .sampling import check_sampling, sample_next
from .tokenizer import ByteLevelBPE, PartialText, SentencePieceBPE
from .weights import _Embedding, _Layer, _rows_product

__all__ = ["ABLATIONS", "ForwardOutput", "HeadSteps", "LlamaModel"]

ABLATIONS = ("zero", "mean")
"""What :meth:`LlamaModel.forward` puts in an ablated head's output: 0, or its mean over the positions."""


# --- outputs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ForwardOutput:
    """What :meth:`LlamaModel.forward` returns for ``n`` new tokens after ``n_past`` cached ones.

    Attributes:
        logits: float32 ``[n, vocab_size]``; row ``i`` scores the token after new token ``i``.
        attentions: float32 ``[n_layers, n_heads, n, n_past + n]`` (rows sum to 1, zero above the
            causal diagonal and outside the window), or ``None`` with ``need_weights=False``.
        cache: :class:`KVCache` of all ``n_past + n`` tokens (``None`` when the run started at a given
            ``residual``: blocks before ``start_layer`` did not run, so there are no keys for them).
        positions: int ``[n]``, the new tokens' RoPE positions ``offset + n_past .. offset + n_past + n - 1``.
        residuals: with ``keep_activations``: float32 ``[n_layers + 1, n, d_model]``; ``residuals[l]`` is the
            stream entering block ``l`` (after any patch there), ``residuals[n_layers]`` the stream before the
            final RMSNorm. Else ``None``.
        head_outputs: with ``keep_activations``: float32 ``[n_layers, n_heads, n, d_head]``, each head's
            ``weights · V`` before ``W_o`` (after any ablation or patch: what the block used).
        mlp_outputs: with ``keep_activations``: float32 ``[n_layers, n, d_model]``, what each block's MLP
            added to the stream.
        first_layer: the first block that ran (``start_layer``; 0 for a whole pass). When it is ``s > 0``,
            ``attentions``, ``head_outputs`` and ``mlp_outputs`` hold blocks ``s .. n_layers - 1`` only and
            ``residuals`` the streams ``s .. n_layers``.
    """

    logits: np.ndarray
    attentions: np.ndarray | None
    cache: KVCache | None
    positions: np.ndarray
    residuals: np.ndarray | None = None
    head_outputs: np.ndarray | None = None
    mlp_outputs: np.ndarray | None = None
    first_layer: int = 0


@dataclass(frozen=True)
class HeadSteps:
    """One attention head of one layer, every intermediate, for ``n`` tokens (the same numbers as
    :meth:`LlamaModel.forward`, position 0 first).

    Attributes:
        layer, head: which head; kv_head: the key/value head it shares (``head // group_size``).
        tokens: the ids. positions: int ``[n]``.
        x: float32 ``[n, d_model]``, the residual stream entering the layer.
        x_normed: ``rms_norm(x, attn_norm)`` ``[n, d_model]`` (gpt2: ``layer_norm(x, attn_norm, attn_norm_bias)``).
        W_q / W_k / W_v: float32 ``[d_model, d_head]``, this head's columns (W_k, W_v: the kv head's).
        q_before_rope, k_before_rope: the query / key entering RoPE, ``[n, d_head]``: ``x_normed @ W_q`` (llama),
            ``+ b_q`` (qwen2, gpt2), then ``rms_norm(·, q_norm)`` (qwen3); the same for k.
        angles: RoPE angles ``[n, d_head/2]`` radians (float64), pair ``i`` of position ``p`` turns by ``angles[p, i]``;
            ``None`` without RoPE (gpt2: its positions are in ``x``, and ``q``, ``k`` are ``q_before_rope``,
            ``k_before_rope``).
        q, k: after RoPE ``[n, d_head]`` (the file's layout, ``config.rope_layout``: llama's pair ``i`` is
            coordinates ``(2i, 2i+1)``, qwen's ``(i, i + d_head/2)``; ``q[:, hf_order]`` is transformers' layout).
            v: ``x_normed @ W_v`` (``+ b_v``) ``[n, d_head]``.
        scores: ``q @ k.T`` ``[n, n]`` (all cells, the masked ones too). scale: ``1/sqrt(d_head)``.
        scaled_scores: ``scores * scale`` ``[n, n]``. mask: bool ``[n, n]``, True = may attend (causal; a gemma3
            local layer's also only the last ``config.sliding_window`` keys).
        weights: softmax of the allowed scaled scores ``[n, n]``; exactly 0 where ``mask`` is False.
        output: ``weights @ v`` ``[n, d_head]`` (this head's slice of the input to ``W_o``).
        hf_order: int ``[d_head]``, :func:`attention.llama.blocks.rope_gguf_to_hf` for llama's layout, the
            identity for qwen's (already transformers').
        b_q / b_k / b_v: float32 ``[d_head]``, this head's biases (qwen2, gpt2), else ``None``.
        q_norm / k_norm: float32 ``[d_head]``, the gains of the per-head RMSNorm (qwen3, gemma3), else ``None``.
        rope_base: the RoPE base the angles use (``config.rope_theta``, or ``config.rope_theta_local`` on a gemma3
            local layer), ``None`` without RoPE (gpt2).
        position_embedding: float32 ``[n, d_model]``, the learned position vectors ``P[0 .. n-1]`` added to the
            token embeddings before block 0 (gpt2), else ``None``.
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
    angles: np.ndarray | None
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
    b_q: np.ndarray | None = None
    b_k: np.ndarray | None = None
    b_v: np.ndarray | None = None
    q_norm: np.ndarray | None = None
    k_norm: np.ndarray | None = None
    rope_base: float | None = None
    position_embedding: np.ndarray | None = None


@dataclass(frozen=True)
class BlockWeights:
    """One decoder block's weights around its attention scores, float32, row-vector convention (``y = x @ W``): what
    :meth:`LlamaModel.forward` multiplies by (the same arrays, widened; read-only views in float32 mode).

    The block, for the stream ``x [d_model]`` (``norm`` is :attr:`LlamaConfig.norm`'s: RMSNorm with the gain, or
    LayerNorm with the gain and the bias)::

        a = concat_h(o_h) @ W_o (+ o_bias)                 # o_h: head h's weights · V, from norm(x, attn_norm)
        a = rms_norm(a, post_attn_norm)                    # gemma3 only
        u = norm(x + a, ffn_norm, ffn_norm_bias)
        m = mlp(u) = (act(u @ W_gate) * (u @ W_up)) @ W_down                    # swiglu (SiLU), geglu (GELU tanh)
          or         gelu_tanh(u @ W_up + up_bias) @ W_down + down_bias         # gelu (gpt2): no gate
        m = rms_norm(m, post_ffn_norm)                     # gemma3 only
        x_next = x + a + m

    Attributes:
        layer: which block.
        attn_norm: ``[d_model]`` the gain of the norm before attention; attn_norm_bias: its bias (LayerNorm: gpt2),
            else ``None``.
        W_o: ``[n_heads d_head, d_model]`` the output projection (rows head-major: head ``h`` owns rows
            ``h d_head .. (h + 1) d_head - 1``); o_bias: ``[d_model]`` (gpt2), else ``None``.
        ffn_norm: ``[d_model]`` the gain of the norm before the MLP; ffn_norm_bias: its bias (gpt2), else ``None``.
        W_gate: ``[d_model, d_ff]`` (swiglu, geglu), ``None`` for gpt2's ungated MLP. W_up: ``[d_model, d_ff]``;
            W_down: ``[d_ff, d_model]``. up_bias ``[d_ff]`` / down_bias ``[d_model]``: gpt2's, else ``None``.
        post_attn_norm / post_ffn_norm: ``[d_model]`` the gains of the RMSNorms on the attention's and the MLP's
            outputs before they join the stream (gemma3), else ``None``.
    """

    layer: int
    attn_norm: np.ndarray
    W_o: np.ndarray
    ffn_norm: np.ndarray
    W_gate: np.ndarray | None
    W_up: np.ndarray
    W_down: np.ndarray
    attn_norm_bias: np.ndarray | None = None
    o_bias: np.ndarray | None = None
    ffn_norm_bias: np.ndarray | None = None
    up_bias: np.ndarray | None = None
    down_bias: np.ndarray | None = None
    post_attn_norm: np.ndarray | None = None
    post_ffn_norm: np.ndarray | None = None


# --- what a run changes ------------------------------------------------------------------------------


@dataclass
class _Plan:
    """A run's interventions and options, checked (built by :meth:`LlamaModel._plan`; internal).

    ``batch`` runs ``B`` copies of the same tokens at once, each with its own row of ``ablate``
    (``bool [B, n_layers, n_heads]``): how a sweep knocks out the 9 heads of a layer in one stacked pass.
    ``resid_patch``: block -> ``[(row of the new tokens, vector [d_model])]``; ``head_patch``:
    ``(layer, head) -> [n, d_head]``; ``residual``: ``[B, n, d_model]`` entering ``start_layer``.
    """

    batch: int = 1
    ablate: np.ndarray | None = None
    ablation: str = "zero"
    head_patch: dict | None = None
    resid_patch: dict | None = None
    keep_activations: bool = False
    window: int | None = None
    sinks: int = 0
    position_offset: int = 0
    start_layer: int = 0
    residual: np.ndarray | None = None
    stop_at_layer: int | None = None
    last_logits_only: bool = False

    @property
    def cache_options(self) -> tuple:
        """What the cached keys and values depend on besides the tokens (a cache continues only with the same)."""
        heads = () if self.ablate is None else tuple(map(tuple, np.argwhere(self.ablate[0]).tolist()))
        return (("window", self.window), ("sinks", self.sinks if self.window is not None else 0),
                ("ablate", heads), ("ablation", self.ablation if heads else None))


def _integer(value, name: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo .. hi`` (inclusive), else ``ValueError`` naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


def _pairs(value, name: str, n_layers: int, n_heads: int, what: str) -> list[tuple[int, int]]:
    """``value`` as a list of ``(layer, head)`` pairs (``what`` names the second: head or position)."""
    message = (f"{name} must be a list of (layer, {what}) pairs with layer in 0..{n_layers - 1} and {what} in "
               f"0..{n_heads - 1}, got {value!r}")
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        raise ValueError(message) from None
    for p in pairs:
        if len(p) != 2 or any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in p) \
                or not (0 <= p[0] < n_layers and 0 <= p[1] < n_heads):
            raise ValueError(message)
    return [(int(a), int(b)) for a, b in pairs]


def _finite(array, name: str, shape: tuple[int, ...], described: str) -> np.ndarray:
    """``array`` as float32 of exactly ``shape`` with finite values, else ``ValueError``."""
    try:
        out = np.asarray(array, dtype=np.float32)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a float array {described} = {list(shape)}, got {type(array).__name__}") \
            from None
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {described} = {list(shape)}, got {list(out.shape)}")
    if not np.isfinite(out).all():
        raise ValueError(f"{name} has NaN or infinite values")
    return out


# --- the model -------------------------------------------------------------------------------------


class LlamaModel:
    """A loaded decoder (SmolLM2-135M-Instruct by default; any of :data:`~attention.llama.config.ARCHITECTURES`);
    build it with :func:`attention.llama.load`.

    Attributes:
        config: :class:`LlamaConfig`. weights_mode: ``"float32"`` or ``"compact"``.
        tokenizer: :class:`~attention.llama.tokenizer.ByteLevelBPE`, or
            :class:`~attention.llama.tokenizer.SentencePieceBPE` for a SentencePiece-style vocabulary (Gemma's)
            (``encode``/``decode`` are also methods here).
        path: the file it was read from. nbytes: bytes of weights held.
        chat_template: the file's Jinja chat template (ChatML: ``<|im_start|>role\\n...<|im_end|>``).

    Thread-safe: a forward pass keeps its state in local arrays (one loaded model can serve
    every Streamlit session).
    """

    def __init__(self, config: LlamaConfig, layers: list[_Layer], embedding: _Embedding, output: _Embedding,
                 output_norm: np.ndarray, tokenizer: ByteLevelBPE | SentencePieceBPE, weights_mode: str,
                 path: Path, chat_template: str | None, *, position_embedding: np.ndarray | None = None,
                 output_norm_bias: np.ndarray | None = None):
        self.config, self._layers, self._embedding, self._output = config, layers, embedding, output
        self._output_norm, self.tokenizer = output_norm, tokenizer
        self.weights_mode, self.path, self.chat_template = weights_mode, path, chat_template
        self._position_embedding = position_embedding  # gpt2: float32 [context_length, d_model], else None
        self._output_norm_bias = output_norm_bias  # gpt2: the final LayerNorm's bias [d_model], else None

    def __repr__(self) -> str:
        c = self.config
        return (f"LlamaModel({c.name!r}, {c.n_layers} layers, d_model={c.d_model}, heads={c.n_heads}/{c.n_kv_heads}, "
                f"weights={self.weights_mode}, {self.nbytes / 2**20:.0f} MiB)")

    @property
    def nbytes(self) -> int:
        """Bytes of the weights held (both embeddings counted once when tied)."""
        out = 0 if self._output is self._embedding else self._output.nbytes
        out += sum(v.nbytes for v in (self._position_embedding, self._output_norm_bias) if v is not None)
        return sum(layer.nbytes for layer in self._layers) + self._embedding.nbytes + self._output_norm.nbytes + out

    # -- text <-> ids (the tokenizer's) --

    def encode(self, text: str, *, truncate: bool = False) -> list[int]:
        """:meth:`ByteLevelBPE.encode <attention.llama.tokenizer.ByteLevelBPE.encode>`: token ids
        (BOS first only when the file says so; SmolLM2's does not)."""
        return self.tokenizer.encode(text, truncate=truncate)

    def decode(self, ids, *, skip_special_tokens: bool = False) -> str:
        """:meth:`ByteLevelBPE.decode <attention.llama.tokenizer.ByteLevelBPE.decode>` (transformers' decoding)."""
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special_tokens)

    def decode_partial(self, ids) -> PartialText:
        """:meth:`ByteLevelBPE.decode_partial <attention.llama.tokenizer.ByteLevelBPE.decode_partial>`: the text
        of the complete characters and the pending bytes of an unfinished one."""
        return self.tokenizer.decode_partial(ids)

    def token_bytes(self, ids) -> list[bytes]:
        """Each token's exact bytes (:meth:`attention.llama.tokenizer.ByteLevelBPE.token_bytes`)."""
        return self.tokenizer.token_bytes(ids)

    def token_strings(self, ids) -> list[str]:
        """A readable piece per token (:meth:`attention.llama.tokenizer.ByteLevelBPE.token_strings`)."""
        return self.tokenizer.token_strings(ids)

    def _check_ids(self, ids, *, allow_empty: bool = False) -> np.ndarray:
        return self.tokenizer.check_ids(ids, allow_empty=allow_empty)

    # -- the forward pass --

    def _writable_cache(self, cache: KVCache | None, n_new: int, plan: _Plan) -> tuple[_KVStore, int]:
        """A store to write ``n_new`` positions after ``cache`` into, and the start position."""
        c = self.config
        if cache is None:
            store = _KVStore(c, min(c.max_tokens, max(n_new, 32)))
            start = 0
        else:
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

    @staticmethod
    def _mask(n: int, start: int, plan: _Plan, sliding: int | None = None) -> np.ndarray | None:
        """Which keys each new query sees: bool ``[n, start + n]`` (True = may attend), or ``None`` for one
        query with nothing masked.

        Causal, aligned bottom-right (new queries come after the cached keys: query ``i`` sees keys
        ``0 .. start + i``); with a ``window`` shorter than the sequence, query ``p`` sees only keys
        ``p - window < j <= p`` and the first ``sinks`` keys; a local layer's ``sliding`` window (gemma3) keeps, of
        those, only ``p - sliding < j`` (no sinks).
        """
        end = start + n
        p, j = np.arange(start, end)[:, None], np.arange(end)[None, :]
        allowed = j <= p  # [n, end]
        narrowed = False
        if plan.window is not None and plan.window < end:
            allowed, narrowed = allowed & ((j > p - plan.window) | (j < plan.sinks)), True
        if sliding is not None and sliding < end:
            allowed, narrowed = allowed & (j > p - sliding), True
        return None if n == 1 and not narrowed else allowed

    def _rope(self, x: np.ndarray, angles) -> np.ndarray:
        """RoPE on ``x [..., n, d_head]`` in the file's layout (``config.rope_layout``): adjacent pairs
        (:func:`~attention.llama.blocks.apply_rope`) or split halves
        (:func:`~attention.llama.blocks.apply_rope_half`); ``x`` itself without RoPE (gpt2, ``angles`` None)."""
        layout = self.config.rope_layout
        if layout is None:
            return x
        return apply_rope(x, angles) if layout == "adjacent" else apply_rope_half(x, angles)

    def _angles(self, positions: np.ndarray, local: bool = False):
        """RoPE angles ``[n, d_head/2]`` for ``positions [n]`` (a local layer's with ``config.rope_theta_local``),
        each pair's speed divided by ``config.rope_divisors`` when the file scales them (Llama 3's ``rope_freqs``,
        linear scaling), or ``None`` without RoPE (gpt2). Every path that turns q or k gets its angles here: the
        forward pass, the KV-cache decode, :meth:`head_steps` and the variants' recomputations."""
        c = self.config
        if c.positions != "rope":
            return None
        return rope_angles(positions, c.d_head, c.rope_theta_local if local else c.rope_theta, c.rope_divisors)

    def _embed(self, ids: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The stream entering block 0, float32 ``[n, d_model]``: ``E[ids]`` (times ``config.embed_scale``: gemma3),
        plus ``P[positions]`` with learned positions (gpt2)."""
        x = self._embedding.lookup(ids)
        if self.config.embed_scale != 1.0:  # gemma3: sqrt(d_model), in float32 as transformers
            x *= np.float32(self.config.embed_scale)
        if self._position_embedding is not None:
            x += self._position_embedding[positions]
        return x

    def _norm(self, x: np.ndarray, weight: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        """The architecture's norm over the last axis of ``x [..., d_model]``: RMSNorm (``config.norm == "rms"``)
        or LayerNorm with ``bias`` (``"layer"``: gpt2); eps ``config.rms_eps``."""
        c = self.config
        return rms_norm(x, weight, c.rms_eps) if c.norm == "rms" else layer_norm(x, weight, bias, c.rms_eps)

    def _final_norm(self, x: np.ndarray) -> np.ndarray:
        """The final norm (``output_norm``) on ``x [..., d_model]``, what the unembedding reads (the logit lens
        uses it on every block's stream)."""
        return self._norm(x, self._output_norm, self._output_norm_bias)

    def _attention(self, layer: _Layer, h: np.ndarray, angles, mask, store, l_index, start, need_weights, plan,
                   scratch):
        """One attention sub-layer on normalised ``h [B, n, d_model]`` -> ``([B, n, d_model], weights, o)``.

        ``weights``: ``[B, n_heads, n, n_k]`` or None; ``o``: every head's ``weights · V``, ``[B, n_heads, n,
        d_head]``, after this layer's ablations and patches (what ``W_o`` gets).
        """
        c = self.config
        B, n = h.shape[:2]
        H, KV, G, dh = c.n_heads, c.n_kv_heads, c.group_size, c.d_head
        qkv = _rows_product(h.reshape(B * n, -1), layer.qkv.widen(scratch)).reshape(B, n, -1)  # [B, n, (H+2KV) dh]
        if layer.qkv_bias is not None:  # qwen2, gpt2: b_q | b_k | b_v, before RoPE
            qkv = qkv + layer.qkv_bias
        q = qkv[..., :H * dh].reshape(B, n, H, dh).transpose(0, 2, 1, 3)  # [B, H, n, dh]
        k = qkv[..., H * dh:(H + KV) * dh].reshape(B, n, KV, dh).transpose(0, 2, 1, 3)  # [B, KV, n, dh]
        v = qkv[..., (H + KV) * dh:].reshape(B, n, KV, dh).transpose(0, 2, 1, 3)  # [B, KV, n, dh]
        if layer.q_norm is not None:  # qwen3: RMSNorm over each head's d_head coordinates, before RoPE
            q, k = rms_norm(q, layer.q_norm, c.rms_eps), rms_norm(k, layer.k_norm, c.rms_eps)
        q, k = self._rope(q, angles), self._rope(k, angles)  # by each token's RoPE position
        end = start + n
        if store is not None:  # B == 1
            store.k[l_index, :, start:end], store.v[l_index, :, start:end] = k[0], v[0]
        # GQA: the G query heads that share a key/value head are stacked as rows, [KV, G n, dh] against
        # [KV, n_k, dh]; row g n + i is query head kv G + g at new position i.
        stacked_mask = None if mask is None else np.tile(mask, (G, 1))  # [G n, n_k]
        o = np.empty((B, H, n, dh), np.float32)
        weights = np.empty((B, H, n, end), np.float32) if need_weights else None
        for b in range(B):
            keys, values = ((store.k[l_index, :, :end], store.v[l_index, :, :end]) if store is not None
                            else (k[b], v[b]))  # [KV, n_k, dh]
            out, w = scaled_dot_product_attention(  # [KV, G n, dh], [KV, G n, n_k]
                q[b].reshape(KV, G * n, dh), keys, values, stacked_mask, scale=1.0 / math.sqrt(dh),
                need_weights=need_weights)
            o[b] = out.reshape(H, n, dh)
            if need_weights:
                weights[b] = w.reshape(H, n, end)
        if plan.ablate is not None:
            for b, h_ in np.argwhere(plan.ablate[:, l_index]):  # knocked-out heads of this layer, per batch row
                o[b, h_] = 0.0 if plan.ablation == "zero" else o[b, h_].mean(axis=0, keepdims=True)
        for (l_patch, h_), value in (plan.head_patch or {}).items():
            if l_patch == l_index:
                o[:, h_] = value  # [n, dh] for every batch row
        merged = o.transpose(0, 2, 1, 3).reshape(B * n, H * dh)  # [B n, H dh], head-major
        out = merged @ layer.o.widen(scratch)  # [B n, d_model]
        if layer.o_bias is not None:  # gpt2
            out += layer.o_bias
        return out.reshape(B, n, -1), weights, o

    def _mlp(self, layer: _Layer, h: np.ndarray, scratch) -> np.ndarray:
        """The MLP on normalised ``h [..., n, d_model]`` -> the same shape: SwiGLU (= ``blocks.swiglu``, fused
        weights; gemma3: GELU-tanh in place of SiLU), or gpt2's ``gelu_tanh(h @ W_up + b_up) @ W_down + b_down``
        (``config.mlp == "gelu"``)."""
        gate_up = h.reshape(-1, h.shape[-1]) @ layer.gate_up.widen(scratch)  # [B n, 2 d_ff] (gelu: [B n, d_ff])
        if self.config.mlp == "gelu":
            out = gelu_tanh(gate_up + layer.up_bias) @ layer.down.widen(scratch)  # [B n, d_ff] x [d_ff, d_model]
            out += layer.down_bias
            return out.reshape(h.shape)
        d_ff = self.config.d_ff
        act = gelu_tanh if self.config.mlp == "geglu" else silu  # gemma3's gate: GELU (tanh)
        out = (act(gate_up[:, :d_ff]) * gate_up[:, d_ff:]) @ layer.down.widen(scratch)  # [B n, d_ff] x [d_ff, d]
        return out.reshape(h.shape)

    @staticmethod
    def _patch_stream(x: np.ndarray, block: int, plan: _Plan) -> np.ndarray:
        """``x [B, n, d_model]`` with the residual patches entering ``block`` applied (a copy when there are any)."""
        rows = (plan.resid_patch or {}).get(block)
        if not rows:
            return x
        x = x.copy()
        for row, vector in rows:
            x[:, row] = vector
        return x

    def _run(self, ids: np.ndarray, cache: KVCache | None, need_weights: bool, plan: _Plan | None = None):
        c = self.config
        plan = plan or _Plan()
        n, B, first = len(ids), plan.batch, plan.start_layer
        if plan.residual is not None or B > 1:
            store, start = None, 0
        else:
            store, start = self._writable_cache(cache, n, plan)
        positions = plan.position_offset + np.arange(start, start + n)
        angles = self._angles(positions)  # [n, dh/2], None without RoPE
        mask = self._mask(n, start, plan)
        if c.local_layers:  # gemma3's sliding-window layers: their own window and RoPE base
            local_angles, local_mask = self._angles(positions, local=True), self._mask(n, start, plan, c.sliding_window)
        n_run = c.n_layers - first
        keep = plan.keep_activations
        attentions = np.empty((n_run, c.n_heads, n, start + n), np.float32) if need_weights else None
        residuals = np.empty((n_run + 1, n, c.d_model), np.float32) if keep else None
        head_outputs = np.empty((n_run, c.n_heads, n, c.d_head), np.float32) if keep else None
        mlp_outputs = np.empty((n_run, n, c.d_model), np.float32) if keep else None
        scratch: dict = {}  # compact mode: one float32 buffer per matrix shape, reused layer after layer
        x = self._embed(ids, positions)[None] if plan.residual is None else plan.residual  # [1 or B, n, d_model]
        if x.shape[0] != B:
            x = np.repeat(x, B, axis=0)  # [B, n, d_model]
        for index in range(first, c.n_layers):
            if index == plan.stop_at_layer:
                return x[0], store, start
            x = self._patch_stream(x, index, plan)
            if keep:
                residuals[index - first] = x[0]
            layer = self._layers[index]
            local = index in c.local_layers
            a, weights, o = self._attention(layer, self._norm(x, layer.attn_norm, layer.attn_norm_bias),
                                            local_angles if local else angles, local_mask if local else mask,
                                            store, index, start, need_weights, plan, scratch)
            x, m = self._add_parts(layer, x, a, scratch)
            if need_weights:
                attentions[index - first] = weights[0]
            if keep:
                head_outputs[index - first], mlp_outputs[index - first] = o[0], m[0]
        x = self._patch_stream(x, c.n_layers, plan)
        if keep:
            residuals[n_run] = x[0]
        rows = x[:, -1:] if plan.last_logits_only else x  # [B, n or 1, d_model]
        logits = self._output.logits(self._final_norm(rows).reshape(-1, c.d_model))
        logits = logits.reshape(B, rows.shape[1], -1)  # [B, n or 1, vocab]
        cache_out = None if store is None else KVCache(store, start + n, plan.position_offset, plan.cache_options)
        if B > 1:
            return logits
        return ForwardOutput(logits[0], attentions, cache_out, positions, residuals, head_outputs, mlp_outputs, first)

    def _add_parts(self, layer, x: np.ndarray, a: np.ndarray, scratch) -> tuple[np.ndarray, np.ndarray]:
        """The rest of a block once its attention wrote ``a`` (``[..., n, d_model]`` float32, like the stream ``x``):
        ``x + a``, then the MLP on the normed new stream and ``+ m``; gemma3's norms on what each part adds
        (``post_attention_norm``, ``post_ffw_norm``) applied first. Returns ``(stream leaving the block, m)``: the
        one home of the block's residual sums (:meth:`forward` and :func:`attention.llama.variants.renumbered_logits`).
        """
        eps = self.config.rms_eps
        if layer.post_attn_norm is not None:  # gemma3: a norm on what the attention adds
            a = rms_norm(a, layer.post_attn_norm, eps)
        x = x + a
        m = self._mlp(layer, self._norm(x, layer.ffn_norm, layer.ffn_norm_bias), scratch)
        if layer.post_ffn_norm is not None:
            m = rms_norm(m, layer.post_ffn_norm, eps)
        return x + m, m

    def _plan(self, n: int, cache: KVCache | None, *, ablate=None, ablation: str = "zero", patch=None,
              keep_activations: bool = False, window: int | None = None, sinks: int = 0,
              position_offset: int | None = None, start_layer: int = 0, residual=None) -> _Plan:
        """Check :meth:`forward`'s options for ``n`` new tokens (after ``cache``) and build the run's plan."""
        c = self.config
        L, H = c.n_layers, c.n_heads
        if cache is not None and not isinstance(cache, KVCache):
            raise ValueError(f"cache must be a KVCache from forward(), got {type(cache).__name__}")
        start = 0 if cache is None else cache.length
        if start + n > c.max_tokens:
            raise ValueError(f"{start} cached + {n} new tokens = {start + n}, more than the "
                             f"{c.max_tokens} this model accepts (MAX_TOKENS)")
        if ablation not in ABLATIONS:
            raise ValueError(f"ablation must be one of {ABLATIONS}, got {ablation!r}")
        if not isinstance(keep_activations, bool):
            raise ValueError(f"keep_activations must be True or False, got {keep_activations!r}")
        start_layer = _integer(start_layer, "start_layer", 0, L)
        if window is not None:
            window = _integer(window, "window", 1, 2**31 - 1)
        sinks = _integer(sinks, "sinks", 0, 2**31 - 1)
        if position_offset is None:
            position_offset = 0 if cache is None else cache.position_offset
        position_offset = _integer(position_offset, "position_offset", 0, c.context_length - start - n)
        if residual is not None:
            if cache is not None:
                raise ValueError("residual and cache cannot be combined: a run from a given stream keeps no cache "
                                 "(the blocks before start_layer do not run)")
            residual = _finite(residual, "residual", (n, c.d_model), "[n, d_model]")[None]
        elif start_layer > 0:
            raise ValueError(f"start_layer = {start_layer} needs residual, the stream entering that block, "
                             f"shape [n, d_model] = [{n}, {c.d_model}]")
        ablate_mask = None
        if ablate is not None:
            heads = _pairs(ablate, "ablate", L, H, "head")
            if heads:
                if cache is not None and ablation == "mean":
                    raise ValueError("ablation='mean' averages a head's output over the prompt's positions, which a "
                                     "cached run does not have: run the whole sequence without a cache")
                if any(layer < start_layer for layer, _ in heads):
                    raise ValueError(f"ablate names a layer before start_layer = {start_layer} (those blocks do "
                                     "not run)")
                ablate_mask = np.zeros((1, L, H), bool)
                for layer, head in heads:
                    ablate_mask[0, layer, head] = True
        head_patch, resid_patch = {}, {}
        if patch is not None:
            if not isinstance(patch, dict) or not set(patch) <= {"resid", "head"}:
                raise ValueError(f"patch must be a dict with the keys 'resid' and/or 'head', got {patch!r:.80}")
            resid = patch.get("resid") or {}
            heads_p = patch.get("head") or {}
            if not isinstance(resid, dict) or not isinstance(heads_p, dict):
                raise ValueError("patch['resid'] and patch['head'] must be dicts: {(layer, position): vector} "
                                 "and {(layer, head): array [n, d_head]}")
            for key, vector in resid.items():
                (layer, pos), = _pairs([key], "patch['resid'] keys", L + 1, c.max_tokens, "position")
                if layer < start_layer:
                    raise ValueError(f"patch['resid'] names block {layer}, before start_layer = {start_layer}")
                if not start <= pos < start + n:
                    where = (f"the cached positions 0..{start - 1} cannot change (their keys and values are "
                             "computed)" if pos < start else "past the prompt")
                    raise ValueError(f"patch['resid'] position {pos} must be one of the new tokens' positions "
                                     f"{start}..{start + n - 1}: {where}")
                resid_patch.setdefault(layer, []).append(
                    (pos - start, _finite(vector, f"patch['resid'][{layer}, {pos}]", (c.d_model,), "[d_model]")))
            for key, value in heads_p.items():
                (layer, head), = _pairs([key], "patch['head'] keys", L, H, "head")
                if layer < start_layer:
                    raise ValueError(f"patch['head'] names layer {layer}, before start_layer = {start_layer}")
                if ablate_mask is not None and ablate_mask[0, layer, head]:
                    raise ValueError(f"head ({layer}, {head}) is both ablated and patched: choose one")
                head_patch[(layer, head)] = _finite(value, f"patch['head'][{layer}, {head}]", (n, c.d_head),
                                                    "[n, d_head]")
        plan = _Plan(ablate=ablate_mask, ablation=ablation, head_patch=head_patch, resid_patch=resid_patch,
                     keep_activations=keep_activations, window=window, sinks=sinks, position_offset=position_offset,
                     start_layer=start_layer, residual=residual)
        if cache is not None and (cache.position_offset != position_offset or cache.options != plan.cache_options):
            made = dict(cache.options) | {"position_offset": cache.position_offset}
            asked = dict(plan.cache_options) | {"position_offset": position_offset}
            diff = ", ".join(f"{k}={made[k]!r} (asked {asked[k]!r})" for k in made if made[k] != asked[k])
            raise ValueError(f"the cache was computed with other options: {diff}. Continue a cache with the options "
                             "that made it, or run the whole sequence without a cache")
        return plan

    def forward(self, ids, cache: KVCache | None = None, *, need_weights: bool = True, ablate=None,
                ablation: str = "zero", patch: dict | None = None, keep_activations: bool = False,
                window: int | None = None, sinks: int = 0, position_offset: int | None = None, start_layer: int = 0,
                residual=None) -> ForwardOutput:
        """Run the decoder on token ``ids`` (after the ``cache``'s tokens, if given), as trained or changed.

        Args:
            ids: 1-D token ids ``[n]`` (list or integer array), ``n >= 1``.
            cache: a :class:`KVCache` from a previous call: ``ids`` continue that sequence (with the window,
                sinks, position offset and zero ablation that made it).
            need_weights: ``False`` skips gathering ``attentions`` (faster generation).
            ablate: query heads ``[(layer, head), ...]`` whose output (``weights · V``, before ``W_o``) is
                replaced; everything else runs as usual.
            ablation: ``"zero"`` (the output set to 0; works with a cache) or ``"mean"`` (set to its mean over
                this run's positions; no cache).
            patch: ``{"resid": {(block, position): vector [d_model]}, "head": {(layer, head): [n, d_head]}}``:
                the stream entering ``block`` (0 .. n_layers; ``n_layers`` = before the final RMSNorm) at an
                absolute ``position`` of the new tokens, or a head's output at every new position, replaced by
                the given values (typically another prompt's ``keep_activations`` run), then the run goes on.
            keep_activations: fill ``residuals``, ``head_outputs`` and ``mlp_outputs`` (:class:`ForwardOutput`).
            window: each query attends to its last ``window`` positions (itself included) and the first
                ``sinks``; ``None`` is full causal attention (exactly the usual pass).
            sinks: kept first positions with a ``window`` (StreamingLLM's attention sinks).
            position_offset: RoPE positions start here (default 0, or the cache's); the token positions
                ``offset .. offset + n_past + n - 1`` must stay inside ``config.context_length``.
            start_layer, residual: start at block ``start_layer`` with ``residual [n, d_model]``, the stream
                entering it (e.g. ``keep_activations``' ``residuals[start_layer]``): the blocks before it do not
                run, and the output has no cache (see ``ForwardOutput.first_layer``).

        Returns:
            :class:`ForwardOutput`: ``logits [n, vocab]`` float32, ``attentions
            [n_layers, n_heads, n, n_past + n]`` float32, the extended cache, the activations if asked.

        Raises:
            ValueError: empty ``ids``, an id out of range, a non-integer id, more than ``config.max_tokens``
                tokens in all; a layer, head or position out of range, a patch of the wrong shape or with
                NaN, an unknown ablation, a window < 1, sinks < 0, an offset past the context, a cache made
                with other options, mean ablation or a residual with a cache (each message names the
                argument and the expected shape or range).
        """
        ids = self._check_ids(ids)
        plan = self._plan(len(ids), cache, ablate=ablate, ablation=ablation, patch=patch,
                          keep_activations=keep_activations, window=window, sinks=sinks,
                          position_offset=position_offset, start_layer=start_layer, residual=residual)
        return self._run(ids, cache, need_weights, plan)

    def block_weights(self, layer: int) -> BlockWeights:
        """The weights of block ``layer`` as :class:`BlockWeights`, whatever the family's block (widened once: about
        10 MB of float32 for SmolLM2-135M's block in compact mode, views in float32 mode).

        Raises:
            ValueError: ``layer`` is not an integer in ``0 .. n_layers - 1``.
        """
        c = self.config
        if isinstance(layer, bool) or not isinstance(layer, int | np.integer) or not 0 <= layer < c.n_layers:
            raise ValueError(f"layer must be an integer in 0..{c.n_layers - 1}, got {layer!r}")
        lay = self._layers[layer]
        gate_up = lay.gate_up.widen()  # [d_model, 2 d_ff]: gate | up, as in _mlp (gelu: up alone, [d_model, d_ff])
        gate, up = (None, gate_up) if c.mlp == "gelu" else (gate_up[:, :c.d_ff], gate_up[:, c.d_ff:])
        return BlockWeights(int(layer), lay.attn_norm, lay.o.widen(), lay.ffn_norm, gate, up, lay.down.widen(),
                            attn_norm_bias=lay.attn_norm_bias, o_bias=lay.o_bias, ffn_norm_bias=lay.ffn_norm_bias,
                            up_bias=lay.up_bias, down_bias=lay.down_bias, post_attn_norm=lay.post_attn_norm,
                            post_ffn_norm=lay.post_ffn_norm)

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
        x, _, _ = self._run(ids, None, False, _Plan(stop_at_layer=layer))
        n, H, KV, dh, kv_head = len(ids), c.n_heads, c.n_kv_heads, c.d_head, head // c.group_size
        lay = self._layers[layer]
        x_normed = self._norm(x, lay.attn_norm, lay.attn_norm_bias)  # [n, d_model]
        W = lay.qkv.widen()  # [d_model, (H + 2 KV) dh]
        cols = {"q": slice(head * dh, (head + 1) * dh), "k": slice((H + kv_head) * dh, (H + kv_head + 1) * dh),
                "v": slice((H + KV + kv_head) * dh, (H + KV + kv_head + 1) * dh)}
        qkv = _rows_product(x_normed, W)  # the same product as forward(), then this head's columns
        bias = {key: None if lay.qkv_bias is None else lay.qkv_bias[cols[key]].copy() for key in cols}
        if lay.qkv_bias is not None:  # qwen2, gpt2
            qkv = qkv + lay.qkv_bias
        q_raw, k_raw, v = (np.ascontiguousarray(qkv[:, cols[key]]) for key in ("q", "k", "v"))  # [n, dh] each
        if lay.q_norm is not None:  # qwen3
            q_raw, k_raw = rms_norm(q_raw, lay.q_norm, c.rms_eps), rms_norm(k_raw, lay.k_norm, c.rms_eps)
        positions = np.arange(n)
        local = layer in c.local_layers  # gemma3: a sliding-window layer, its own RoPE base
        angles = self._angles(positions, local)  # [n, dh/2], None without RoPE (gpt2)
        mask, narrowed = np.tri(n, dtype=bool), local and c.sliding_window < n
        if narrowed:
            mask &= ~np.tri(n, k=-c.sliding_window, dtype=bool)  # key j seen from p only if p - j < sliding_window
        q, k = self._rope(q_raw, angles), self._rope(k_raw, angles)
        scale = 1.0 / math.sqrt(dh)
        output, weights = scaled_dot_product_attention(q, k, v, mask if narrowed else None,
                                                       is_causal=n > 1 and not narrowed, scale=scale)
        scores = q @ k.T  # [n, dh] x [dh, n] -> [n, n]
        return HeadSteps(
            layer=layer, head=head, kv_head=kv_head, tokens=tuple(ids.tolist()), positions=positions, x=x,
            x_normed=x_normed, W_q=W[:, cols["q"]].copy(), W_k=W[:, cols["k"]].copy(), W_v=W[:, cols["v"]].copy(),
            q_before_rope=q_raw, k_before_rope=k_raw, angles=angles, q=q, k=k, v=v, scores=scores, scale=scale,
            scaled_scores=scores * np.float32(scale), mask=mask, weights=weights, output=output,
            hf_order=rope_gguf_to_hf(dh) if c.rope_layout == "adjacent" else np.arange(dh), b_q=bias["q"],
            b_k=bias["k"], b_v=bias["v"], q_norm=None if lay.q_norm is None else lay.q_norm.copy(),
            k_norm=None if lay.k_norm is None else lay.k_norm.copy(),
            rope_base=None if angles is None else float(c.rope_theta_local if local else c.rope_theta),
            position_embedding=(None if self._position_embedding is None
                                else self._position_embedding[positions].copy()),
        )

    def generate(self, ids, max_new_tokens: int = 8, *, temperature: float = 0.0, top_k: int | None = None,
                 seed: int | None = None, stop_at_eos: bool = True) -> list[int]:
        """Continue ``ids``: greedy by default; returns only the new ids (``len <= max_new_tokens``).

        Args:
            ids: the prompt's token ids.
            max_new_tokens: how many tokens to add (>= 1); ``len(ids) + max_new_tokens`` must
                fit in ``config.max_tokens``.
            temperature, top_k: 0 (default) is greedy; otherwise see
                :func:`attention.llama.sampling.sampling_distribution` (the one rule for choosing a token).
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
        check_sampling(temperature, top_k)
        rng = np.random.default_rng(seed) if temperature > 0 else None
        out = self._run(ids, None, need_weights=False)
        new: list[int] = []
        while True:
            token = sample_next(out.logits[-1], temperature=temperature, top_k=top_k, rng=rng)
            new.append(token)
            if len(new) == max_new_tokens or (stop_at_eos and token == self.config.eos_id):
                return new
            out = self._run(np.array([token]), out.cache, need_weights=False)
