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
The file (``SmolLM2-135M-Instruct.Q4_1.gguf``) stores the 210 matrices of the blocks in 4 bits (Q4_1, 79 % of
the parameters), the token embedding, which is also the output matrix behind every logit, in 8 bits (Q8_0,
21 %), and the 61 norm vectors in float32.

The same decoder reads five families (:data:`ARCHITECTURES`, the file's ``general.architecture``): ``llama``
(the block above), ``qwen2`` (Qwen2.5: biases on Q, K and V, added before RoPE), ``qwen3`` (Qwen3: an RMSNorm on
each head's q and k before RoPE, the head width from ``attention.key_length``), ``gpt2`` (GPT-2: learned absolute
positions, LayerNorm, fused QKV and biases everywhere, a GELU MLP; no RoPE) and ``gemma3`` (Gemma 3: the embedding
scaled by sqrt(d_model), norms before and after attention and MLP, q/k norms, a GELU gated MLP, sliding-window local
layers with their own RoPE base between global ones); the qwen and gemma3 files rotate split halves
(``config.rope_layout``). A llama file may scale its RoPE speeds as Llama 3.x's do (the ``rope_freqs`` tensor: one
factor per pair; ``config.rope_scaling``), any RoPE file but gemma3's linearly (``rope.scaling.type = "linear"``).
Each is checked against transformers on a tiny random file (``tests/core/test_qwen_tiny.py``,
``test_gpt2_tiny.py``, ``test_gemma3_tiny.py``, the last with a Gemma-style SentencePiece vocabulary; Gemma's files are
read as ``transformers``' GGUF loader reads them: :class:`~attention.llama.tokenizer.SentencePieceBPE`;
``test_llama3_tiny.py``, Llama 3.2's scaling and its ``llama-bpe`` tokenizer).

The package, one idea per module:

* :mod:`~attention.llama.config`: :class:`LlamaConfig` (the architecture, read from the file) and :data:`MAX_TOKENS`;
* :mod:`~attention.llama.gguf_file`: finding, verifying and reading the GGUF weights file;
* :mod:`~attention.llama.weights`: how the matrices are held (dense float32, or the file's 4-/8-bit codes);
* :mod:`~attention.llama.tokenizer`: the byte-level and SentencePiece-style BPE (text <-> ids, token bytes, text
  with pending bytes);
* :mod:`~attention.llama.blocks`: RMSNorm, RoPE and SwiGLU (and GPT-2's LayerNorm and GELU), small pure functions;
* :mod:`~attention.llama.kv_cache`: :class:`KVCache`;
* :mod:`~attention.llama.sampling`: the one rule for choosing the next token;
* :mod:`~attention.llama.model`: :class:`LlamaModel` (forward pass with its interventions, one head's steps,
  generation);
* :mod:`~attention.llama.interventions`: the analyses on a model and its runs (logit lens, logit attribution,
  knockouts, activation patching): functions taking the model (``interventions.logit_lens(model, ids)``);
* :mod:`~attention.llama.variants`: perplexity, the KV-cache conversions (``variants.kv_variant(model, "mha" |
  "mqa" | ("latent", r))``), StreamingLLM's numbering inside the cache, greedy generation with a window;
* :mod:`~attention.llama.memory`: what a file needs in a weights mode, what the machine has free (``MemAvailable``,
  a cgroup's room), the refusal before loading;
* :mod:`~attention.llama.load`: :func:`load`.

The attention is this package's :func:`attention.core.scaled_dot_product_attention`. Everything runs in float32,
as transformers does on the CPU, and matches it (``tests/core/test_llama_*.py``: attention weights within 1e-4,
logits within 1e-3 relative, the same greedy tokens).

Q and K coordinates follow the GGUF file's RoPE layout (adjacent pairs ``(2i, 2i+1)``);
transformers' coordinates are the same numbers in another order
(:func:`attention.llama.blocks.rope_gguf_to_hf`). Scores, weights and outputs do not depend on it.

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

from . import blocks, gguf_file, memory, variants
from .config import ARCHITECTURES, MAX_TOKENS, LlamaConfig
from .kv_cache import KVCache
from .load import WEIGHTS_ENV, load
from .model import ABLATIONS, BlockWeights, ForwardOutput, HeadSteps, LlamaModel
from .sampling import sample_next, sampling_distribution
from .tokenizer import PartialText, bytes_to_unicode
from .weights import WEIGHT_MODES

__all__ = [
    "ABLATIONS", "ARCHITECTURES", "MAX_TOKENS", "WEIGHTS_ENV", "WEIGHT_MODES", "BlockWeights", "ForwardOutput",
    "HeadSteps", "KVCache", "LlamaConfig", "LlamaModel", "PartialText", "blocks", "bytes_to_unicode", "gguf_file",
    "load", "memory", "sample_next", "sampling_distribution", "variants",
]
