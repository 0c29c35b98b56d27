"""The architecture of a decoder, read from the GGUF metadata (:class:`LlamaConfig`).

Five families share this decoder (:data:`ARCHITECTURES`, the file's ``general.architecture``):

* ``llama`` (SmolLM2, Llama, TinyLlama, Mistral): the block as in ``model.py``; the file's W_q/W_k rows are
  permuted for RoPE on adjacent pairs;
* ``qwen2`` (Qwen2.5): the same block with biases on Q, K and V (added before RoPE); RoPE on split halves;
* ``qwen3`` (Qwen3): no biases, an RMSNorm on each head's q and k before RoPE (``attn_q_norm`` / ``attn_k_norm``,
  ``[d_head]``), the head width from ``attention.key_length`` (``n_heads * d_head`` may differ from ``d_model``);
  RoPE on split halves;
* ``gpt2`` (GPT-2): learned absolute positions (``position_embd``, ``[context_length, d_model]``) added to the
  token embedding instead of RoPE, LayerNorm (weight and bias) before attention, before the MLP and at the end,
  fused ``attn_qkv`` with a bias, biases on ``W_o`` and on the GELU (tanh) MLP ``ffn_up`` / ``ffn_down`` (no gate);
* ``gemma3`` (Gemma 3): the embedding scaled by ``sqrt(d_model)``, RMSNorms before AND after attention and the MLP
  (``post_attention_norm``, ``post_ffw_norm``; the file stores each gain as transformers' ``1 + w``: llama.cpp's
  converter adds the 1), an RMSNorm on each head's q and k, a GELU (tanh) gated MLP, RoPE on split halves, and
  sliding-window layers (``attention.sliding_window`` keys, their own RoPE base ``rope.freq_base_swa``, default
  10,000) between global ones (every ``attention.sliding_window_pattern``-th layer, default 6, is global).

The block's parts are chosen by the config (:attr:`LlamaConfig.norm`, :attr:`~LlamaConfig.positions`,
:attr:`~LlamaConfig.mlp`, :attr:`~LlamaConfig.linear_bias`), not by a second copy of the forward pass.

RoPE scaling (:data:`ROPE_SCALINGS`): a llama file may carry ``rope_freqs.weight`` (``[d_head/2]``, F32), one factor
per pair by which llama.cpp divides that pair's speed ``theta_i`` (``ggml_rope_ext``'s ``freq_factors``): what
llama.cpp's converter writes for Llama 3.1/3.2/3.3 (their ``rope_scaling`` ``"llama3"``: 1 for the fast pairs, the
``factor`` (32 for Llama 3.2) for the slow ones, a smooth step between), with no ``rope.scaling.*`` key; and any RoPE
family may say ``rope.scaling.type = "linear"`` with ``rope.scaling.factor`` (every speed divided by it: positions
``p / factor``). Other scaling types (``yarn``, ``longrope``) are refused by name.

Source: the ``<arch>.*`` keys of the GGUF format (ggml ``docs/gguf.md``, "LLaMA"; llama.cpp's
``gguf-py/gguf/constants.py`` for the tensors of ``QWEN2`` / ``QWEN3`` and ``llama_model_rope_type``:
``LLAMA_ROPE_TYPE_NORM`` for llama, ``NEOX`` for qwen2/qwen3/gemma3, ``NONE`` for gpt2; ``MODEL_TENSORS[GPT2]``,
``MODEL_TENSORS[GEMMA3]``; llama.cpp's ``LLM_ARCH_GEMMA3`` hparams: ``set_swa_pattern(6)``, SWA base 10,000);
SmolLM2-135M's values are listed in ``shared/docs/real_model.md``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ARCHITECTURES", "MAX_TOKENS", "ROPE_FREQS_ARCHITECTURES", "ROPE_LAYOUTS", "ROPE_SCALINGS", "LlamaConfig",
           "check_architecture", "check_rope_scaling"]

ARCHITECTURES = ("llama", "qwen2", "qwen3", "gpt2", "gemma3")
"""The ``general.architecture`` values this package reads (see the module docstring)."""

ROPE_LAYOUTS = ("adjacent", "halves")
"""Which coordinates RoPE turns together: ``(2i, 2i+1)`` (llama.cpp's ``NORM``, the llama files' layout) or
``(i, i + d_head/2)`` (``NEOX``, transformers' ``rotate_half``: the qwen2/qwen3 files' layout)."""

_ROPE_LAYOUT = {"llama": "adjacent", "qwen2": "halves", "qwen3": "halves", "gpt2": None, "gemma3": "halves"}
GEMMA3_SLIDING_WINDOW_PATTERN = 6
"""Gemma 3's default: layers ``i`` with ``(i + 1) % 6 != 0`` are sliding-window (local) layers (llama.cpp's and
transformers' ``Gemma3TextConfig`` default)."""


ROPE_SCALINGS = ("none", "linear")
"""The ``<arch>.rope.scaling.type`` values this package reads (absent is ``"none"``); Llama 3's scaling has no key
(its factors are the ``rope_freqs`` tensor: :data:`ROPE_FREQS_ARCHITECTURES`)."""

ROPE_FREQS_ARCHITECTURES = ("llama",)
"""The architectures whose files may carry ``rope_freqs.weight``: llama.cpp's llama graph passes it to
``ggml_rope_ext`` (``src/models/llama.cpp``: ``model.get_rope_factors``); its qwen2 and qwen3 graphs pass none."""


def check_architecture(metadata: dict) -> str:
    """The file's ``general.architecture`` if this package reads it.

    Raises:
        ValueError: missing, or not one of :data:`ARCHITECTURES` (the message names it and the supported ones).
    """
    arch = metadata.get("general.architecture")
    if arch not in ARCHITECTURES:
        raise ValueError(f"unsupported model architecture: general.architecture is {arch!r}; supported: "
                         + ", ".join(repr(a) for a in ARCHITECTURES))
    return arch


def check_rope_scaling(metadata: dict) -> float:
    """The linear RoPE scaling factor the file's ``<arch>.rope.scaling.*`` keys give: 1.0 without scaling (no
    ``rope.scaling.type``, ``"none"``), ``rope.scaling.factor`` for ``"linear"``.

    Raises:
        ValueError: another scaling type (``yarn``, ``longrope``...; the message names it and :data:`ROPE_SCALINGS`),
            linear scaling on an architecture without RoPE or on gemma3, or a factor that is missing, not finite or
            not > 0.

    Source: gguf-py's ``Keys.Rope.SCALING_TYPE`` / ``SCALING_FACTOR`` and ``RopeScalingType``; llama.cpp's
    ``LLAMA_ROPE_SCALING_TYPE_LINEAR`` (``freq_scale = 1 / factor``: every angle times it); transformers'
    ``_compute_linear_scaling_rope_parameters`` (``inv_freq / factor``).
    """
    arch = check_architecture(metadata)
    scaling = metadata.get(f"{arch}.rope.scaling.type", "none")
    if scaling not in ROPE_SCALINGS:
        raise ValueError(f"{arch}.rope.scaling.type is {scaling!r}; supported: " + ", ".join(map(repr, ROPE_SCALINGS))
                         + " (and Llama 3's per-pair factors, the rope_freqs tensor)")
    if scaling == "none":
        return 1.0
    if _ROPE_LAYOUT[arch] is None or arch == "gemma3":
        raise ValueError(f"{arch}.rope.scaling.type is 'linear'; linear RoPE scaling is supported on "
                         + ", ".join(repr(a) for a in ARCHITECTURES if _ROPE_LAYOUT[a] and a != "gemma3") + " files")
    factor = metadata.get(f"{arch}.rope.scaling.factor")
    try:
        factor = float(factor)
    except (TypeError, ValueError):
        factor = math.nan
    if not (math.isfinite(factor) and factor > 0):
        raise ValueError(f"{arch}.rope.scaling.factor must be a finite number > 0 with linear scaling, got "
                         f"{metadata.get(f'{arch}.rope.scaling.factor')!r}")
    return factor


MAX_TOKENS = 256
"""Longest sequence (prompt + generated tokens) :class:`~attention.llama.LlamaModel` accepts: ``out.attentions``
holds ``30 * 9 * n * n`` float32 = 1.08 kB * n**2 (71 MB at 256 tokens, 283 MB at 512), on a host that may have
0.7 GB in all, and a heat map is unreadable long before that."""


@dataclass(frozen=True)
class LlamaConfig:
    """The architecture, read from the GGUF metadata (``<arch>.*`` keys; SmolLM2-135M's values in brackets).

    Attributes:
        n_layers: decoder blocks [30]. n_heads: query heads [9]. n_kv_heads: key/value heads [3].
        d_model: residual width [576]. d_head: per head [64] (``attention.key_length`` when the file has it, else
            ``d_model / n_heads``). d_ff: SwiGLU hidden width [1536].
        vocab_size: [49152]. rope_theta: RoPE base [100000.0] (unused without RoPE). rms_eps: the norms' eps
        [1e-5, stored as float32 9.9999997e-06]: RMSNorm's (``attention.layer_norm_rms_epsilon``), or LayerNorm's
        for gpt2 (``attention.layer_norm_epsilon``). context_length: the model's trained context [8192].
        max_tokens: what this library accepts, ``min(MAX_TOKENS, context_length)`` [256].
        bos_id / eos_id: [1 ``<|im_start|>`` / 2 ``<|im_end|>``]; no BOS is added when encoding.
        name: ``general.name``.
        kv_latent_rank: ``None`` for the file's model; ``r`` (1 .. ``2 n_kv_heads d_head``) for a latent-cache
            variant (:meth:`LlamaModel.kv_variant` ``("latent", r)``), whose cache holds ``r`` floats per token
            per layer instead of the keys and values.
        architecture: ``general.architecture``, one of :data:`ARCHITECTURES` ['llama'].
        qkv_bias: Q, K and V have biases (qwen2, gpt2) [False]. qk_norm: an RMSNorm on each head's q and k before RoPE
            (qwen3, gemma3) [False]. rope_layout: one of :data:`ROPE_LAYOUTS` ['adjacent'], ``None`` without RoPE
            (gpt2).
        norm: ``"rms"`` (RMSNorm, a gain) or ``"layer"`` (LayerNorm, a gain and a bias: gpt2) ['rms'].
        positions: ``"rope"`` or ``"learned"`` (absolute position embeddings added to the token's: gpt2) ['rope'].
        mlp: ``"swiglu"`` (``down(silu(gate x) * up x)``), ``"gelu"`` (``down(gelu_tanh(up x))``: gpt2) or
            ``"geglu"`` (``down(gelu_tanh(gate x) * up x)``: gemma3) ['swiglu'].
        linear_bias: ``W_o``, ``ffn_up`` and ``ffn_down`` have biases (gpt2) [False].
        embed_scale: the token embedding is multiplied by it (gemma3: ``sqrt(d_model)``) [1.0].
        post_norms: an RMSNorm on the attention's and the MLP's outputs before they join the stream (gemma3) [False].
        sliding_window: the local layers' window (each query sees its last ``sliding_window`` keys), or ``None``
            [None]. local_layers: the layers that use it (gemma3) [()]. rope_theta_local: their RoPE base [None].
        rope_scaling_factor: linear RoPE scaling, every pair's speed divided by it (``rope.scaling.factor`` with
            ``rope.scaling.type = "linear"``), 1.0 without [1.0].
        rope_freq_factors: ``d_head/2`` floats, pair ``i``'s speed divided by ``rope_freq_factors[i]`` (the file's
            ``rope_freqs.weight``: Llama 3.1+'s scaling), or ``None`` [None]. Set by the loader
            (:func:`attention.llama.load`), which reads and checks the tensor.
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
    kv_latent_rank: int | None = None
    architecture: str = "llama"
    qkv_bias: bool = False
    qk_norm: bool = False
    rope_layout: str | None = "adjacent"
    norm: str = "rms"
    positions: str = "rope"
    mlp: str = "swiglu"
    linear_bias: bool = False
    embed_scale: float = 1.0
    post_norms: bool = False
    sliding_window: int | None = None
    local_layers: tuple[int, ...] = ()
    rope_theta_local: float | None = None
    rope_scaling_factor: float = 1.0
    rope_freq_factors: tuple[float, ...] | None = None

    @property
    def rope_scaling(self) -> str | None:
        """How the RoPE speeds are scaled: ``"llama3"`` (per-pair factors, :attr:`rope_freq_factors`), ``"linear"``
        (:attr:`rope_scaling_factor`), ``"llama3+linear"`` (both), ``None`` (plain RoPE, or no RoPE)."""
        kinds = [name for name, on in (("llama3", self.rope_freq_factors is not None),
                                       ("linear", self.rope_scaling_factor != 1.0)) if on]
        return "+".join(kinds) or None

    @property
    def rope_divisors(self) -> np.ndarray | None:
        """What each pair's speed ``theta_i`` is divided by: float64 ``[d_head/2]``, ``rope_freq_factors *
        rope_scaling_factor``, or ``None`` without scaling (llama.cpp: ``theta_i / freq_factors[i] * freq_scale``)."""
        if self.rope_scaling is None:
            return None
        factors = np.ones(self.d_head // 2) if self.rope_freq_factors is None else np.array(self.rope_freq_factors)
        return factors.astype(np.float64) * self.rope_scaling_factor

    @property
    def group_size(self) -> int:
        """Query heads per key/value head [3]: query head ``h`` uses key/value head ``h // group_size``."""
        return self.n_heads // self.n_kv_heads

    @property
    def kv_floats_per_token_per_layer(self) -> int:
        """What one layer caches per token: ``2 * n_kv_heads * d_head`` floats (a key and a value per key/value
        head) [384], or ``kv_latent_rank`` for a latent cache."""
        if self.kv_latent_rank is not None:
            return self.kv_latent_rank
        return 2 * self.n_kv_heads * self.d_head

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes the KV cache holds per token, float32: ``2 * n_layers * n_kv_heads * d_head * 4`` [46,080]; for a
        latent cache ``n_layers * kv_latent_rank * 4`` (Pope et al. 2022, section 2; DeepSeek-AI 2024, "DeepSeek-V2",
        section 2.1: MLA caches the latent vector)."""
        return self.n_layers * self.kv_floats_per_token_per_layer * 4

    @classmethod
    def from_metadata(cls, metadata: dict, n_tokens: int) -> LlamaConfig:
        """Read and check the ``<arch>.*`` keys (``arch`` = ``general.architecture``, one of :data:`ARCHITECTURES`).

        Raises:
            ValueError: an unsupported architecture (:func:`check_architecture`), an unsupported RoPE scaling
                (:func:`check_rope_scaling`), a missing key or an inconsistency (each message names the key).
        """
        arch = check_architecture(metadata)

        def key(name, kind=int):
            full = f"{arch}.{name}"
            if full not in metadata:
                raise ValueError(f"GGUF metadata has no {full!r}")
            return kind(metadata[full])

        n_heads, d_model = key("attention.head_count"), key("embedding_length")
        n_kv_heads = int(metadata.get(f"{arch}.attention.head_count_kv", n_heads))
        if n_heads <= 0:
            raise ValueError(f"{arch}.attention.head_count must be positive, got {n_heads}")
        if n_kv_heads <= 0 or n_heads % n_kv_heads:
            raise ValueError(f"head_count {n_heads} is not a multiple of head_count_kv {n_kv_heads}")
        if f"{arch}.attention.key_length" in metadata:
            d_head = key("attention.key_length")
            d_value = int(metadata.get(f"{arch}.attention.value_length", d_head))
            if d_value != d_head:
                raise ValueError(f"{arch}.attention.value_length {d_value} differs from key_length {d_head} "
                                 "(keys and values of different widths are not supported)")
        elif d_model % n_heads:
            raise ValueError(f"embedding_length {d_model} is not divisible by head_count {n_heads}")
        else:
            d_head = d_model // n_heads
        rope_dims = int(metadata.get(f"{arch}.rope.dimension_count", d_head))
        if _ROPE_LAYOUT[arch] is not None and (rope_dims != d_head or d_head <= 0 or d_head % 2):
            raise ValueError(f"rope.dimension_count {rope_dims} must equal an even d_head {d_head} "
                             "(partial rotary embeddings are not supported)")
        rope_scaling_factor = check_rope_scaling(metadata)
        vocab_size = int(metadata.get(f"{arch}.vocab_size", n_tokens))
        if vocab_size != n_tokens:
            raise ValueError(f"{arch}.vocab_size {vocab_size} differs from the {n_tokens} tokens in the vocabulary")
        context_length = key("context_length")
        gpt2, gemma3 = arch == "gpt2", arch == "gemma3"
        n_layers = key("block_count")
        sliding_window, local_layers, rope_theta_local = None, (), None
        if gemma3:
            sliding_window = key("attention.sliding_window")
            if sliding_window <= 0:
                raise ValueError(f"{arch}.attention.sliding_window must be positive, got {sliding_window}")
            pattern = metadata.get(f"{arch}.attention.sliding_window_pattern", GEMMA3_SLIDING_WINDOW_PATTERN)
            if isinstance(pattern, list | tuple):  # one flag per layer (llama.cpp's swa_layers)
                if len(pattern) != n_layers:
                    raise ValueError(f"{arch}.attention.sliding_window_pattern has {len(pattern)} flags for "
                                     f"{n_layers} layers")
                local_layers = tuple(i for i, flag in enumerate(pattern) if flag)
            elif int(pattern) > 0:
                local_layers = tuple(i for i in range(n_layers) if (i + 1) % int(pattern))
            else:
                raise ValueError(f"{arch}.attention.sliding_window_pattern must be positive, got {pattern!r}")
            rope_theta_local = float(metadata.get(f"{arch}.rope.freq_base_swa", 10000.0))
        bos, eos = metadata.get("tokenizer.ggml.bos_token_id"), metadata.get("tokenizer.ggml.eos_token_id")
        return cls(
            n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv_heads, d_model=d_model, d_head=d_head,
            d_ff=key("feed_forward_length"), vocab_size=vocab_size,
            rope_theta=float(metadata.get(f"{arch}.rope.freq_base", 10000.0)),
            rms_eps=key("attention.layer_norm_epsilon" if gpt2 else "attention.layer_norm_rms_epsilon", float),
            context_length=context_length, max_tokens=min(MAX_TOKENS, context_length),
            bos_id=None if bos is None else int(bos), eos_id=None if eos is None else int(eos),
            name=str(metadata.get("general.name", "")), architecture=arch, qkv_bias=arch in ("qwen2", "gpt2"),
            qk_norm=arch in ("qwen3", "gemma3"), rope_layout=_ROPE_LAYOUT[arch], norm="layer" if gpt2 else "rms",
            positions="learned" if gpt2 else "rope", mlp="gelu" if gpt2 else "geglu" if gemma3 else "swiglu",
            linear_bias=gpt2, embed_scale=math.sqrt(d_model) if gemma3 else 1.0, post_norms=gemma3,
            sliding_window=sliding_window, local_layers=local_layers, rope_theta_local=rope_theta_local,
            rope_scaling_factor=rope_scaling_factor,
        )
