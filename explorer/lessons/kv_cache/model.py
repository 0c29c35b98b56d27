"""Arrays for the page "Generating with a KV cache". Pure NumPy on the door to the model (:mod:`explorer.shell.llm`).

Generation, one token at a time, through the model's real KV cache (``llm.forward(model, ids, cache=…)``):

* **prefill** (:func:`prefill`): the prompt's ``P`` tokens in one forward pass; the cache then holds their keys
  (after RoPE) and values, ``[n_layers, n_kv_heads, P, d_head]`` each, and the last logits choose generated token 1;
* **decode step** ``s`` (:func:`decode_step`): only generated token ``s`` goes through the model, with the cache:
  each layer appends its key and value rows (``P + s`` rows now) and lets the one new query attend over all of
  them; the logits choose token ``s + 1``.

This is :meth:`attention.llama.LlamaModel.generate` step by step, keeping what the page shows: the new query row's
attention weights of every head, the cache, each choice's probability and rank. The choice is
:func:`attention.llama.sample_next` with ``generate``'s random stream (one ``np.random.default_rng(seed)``, its state
carried from step to step), so ``run(model, ids, sampling, s)`` chooses the tokens ``model.generate(ids, s + 1, …)``
returns. The cache is an exact shortcut: under the causal mask, token ``j``'s key and value depend only on tokens
``0 … j`` (only float32 rounding differs from a full pass; :func:`max_difference`).

Source: KV cache as in Pope et al. (2022), "Efficiently Scaling Transformer Inference", §2-3; grouped-query attention
(several query heads share one key/value head): Ainslie et al. (2023); RoPE: Su et al. (2021). Cost counts:
:func:`macs_with_cache`, :func:`macs_without_cache`, :func:`cache_bytes`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from explorer.shell import i18n, llm
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

DEFAULT_PROMPT = "The capital of France is"
MAX_PROMPT_TOKENS = 32
"""Prompt tokens the page reads (its ``max_tokens`` for :func:`explorer.shell.llm.prompt_input`, below the
lessons' 64): with :data:`MAX_STEPS` generated tokens at most 64 positions, the app's limit for a heat map whose rows
keep readable token labels (the K and V maps are then at most 64 x 64 cells)."""
MAX_STEPS = 32
"""Generated tokens read back through the cache, at most (one forward pass of one token each)."""
METHODS = ("greedy", "sample")
METHOD_LABELS = {"greedy": N_("greedy"), "sample": N_("sample")}
"""How the page names each method (translated where shown: ``_(METHOD_LABELS[m])``); the link holds the code."""
TEMPERATURES = (0.1, 0.2, 0.3, 0.5, 0.7, 0.8, 1.0, 1.2, 1.5, 2.0)
TOP_ALTERNATIVES = 5
DEFAULTS = {"steps": 0, "method": "greedy", "temperature": 0.8, "top_k": 40, "layer": 11, "kv_head": 0}
"""The page's controls at first (the sampling seed is the sidebar's shared seed; the query head compared is the
first of the key/value head's group)."""


# --- sampling ------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sampling:
    """How the next token is chosen from the logits (the page's sampling controls).

    Attributes:
        method: ``"greedy"`` (the largest logit) or ``"sample"`` (draw from the softmax).
        temperature: divides the logits before the softmax when sampling (> 0).
        top_k: sample only among the ``top_k`` largest logits; 0 = the whole vocabulary.
        seed: seeds ``np.random.default_rng`` once per generation (the same seed, the same tokens).
    """

    method: str = "greedy"
    temperature: float = 0.8
    top_k: int = 40
    seed: int = 0

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")
        if self.method == "sample" and not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 when sampling, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be >= 0 (0 = the whole vocabulary), got {self.top_k}")

    @property
    def is_greedy(self) -> bool:
        return self.method == "greedy"

    def canonical(self) -> Sampling:
        """Greedy ignores temperature, top-k and seed: one value for all of them (one cache entry)."""
        return Sampling("greedy", 0.0, 0, 0) if self.is_greedy else self

    def options(self) -> dict:
        """Keyword arguments of :func:`attention.llama.sample_next` / ``generate``: temperature and top_k."""
        if self.is_greedy:
            return {"temperature": 0.0, "top_k": None}
        return {"temperature": float(self.temperature), "top_k": int(self.top_k) or None}

    def describe(self) -> str:
        """``greedy`` or ``sampled: temperature 0.8, top-k 40, seed 0``, in the run's language (decimal comma in
        pt and tr: :func:`explorer.shell.i18n.general`)."""
        if self.is_greedy:
            return _("greedy (the most likely token)")
        k = _("top-k {k}").format(k=self.top_k) if self.top_k else _("whole vocabulary")
        return _("sampled: temperature {t}, {k}, seed {seed}").format(t=i18n.general(self.temperature), k=k,
                                                                     seed=self.seed)


@dataclass(frozen=True)
class Choice:
    """One chosen token and how likely it was.

    Attributes:
        step: 1 for the first generated token. position: its position in the sequence (``P + step - 1``).
        token_id: the chosen id. is_eos: it is the end-of-sequence token (``<|im_end|>``): generation stops.
        probability: ``softmax(logits)[token_id]``, the model's own probability (temperature 1), float64.
        rank: 1 + how many tokens had a larger logit (1 = the model's first choice).
        sampling_probability: its probability under the sampling rule (after temperature and top-k; 1.0
            for greedy): the chance it had of being drawn.
        top_ids, top_probabilities: the model's :data:`TOP_ALTERNATIVES` most likely tokens and their
            probabilities (temperature 1), most likely first.
    """

    step: int
    position: int
    token_id: int
    is_eos: bool
    probability: float
    rank: int
    sampling_probability: float
    top_ids: tuple[int, ...]
    top_probabilities: tuple[float, ...]


def sampling_distribution(logits: np.ndarray, sampling: Sampling) -> np.ndarray:
    """What the next token is drawn from, float64 ``[vocab]``: :func:`attention.llama.sampling_distribution`, the
    rule :func:`attention.llama.sample_next` draws from (greedy: 1 on the argmax)."""
    return llm.sampling_distribution(logits, **sampling.options())


def choose(logits: np.ndarray, sampling: Sampling, rng: np.random.Generator | None, *, step: int, position: int,
           eos_id: int | None) -> Choice:
    """Choose the next token from one row of logits ``[vocab]`` with :func:`attention.llama.sample_next`.

    Args:
        logits: float32 ``[vocab]``, the last row of a forward pass.
        sampling: the rule; ``rng`` is required when sampling (it advances by one draw).
        step, position: recorded in the :class:`Choice`.
        eos_id: the model's end-of-sequence id.
    """
    token = llm.sample_next(logits, rng=rng, **sampling.options())
    top_ids, top_probabilities = llm.top_tokens(logits, TOP_ALTERNATIVES)
    return Choice(
        step=step, position=position, token_id=token, is_eos=eos_id is not None and token == eos_id,
        probability=float(llm.probabilities(logits)[token]), rank=1 + int(np.count_nonzero(logits > logits[token])),
        sampling_probability=float(sampling_distribution(logits, sampling)[token]),
        top_ids=top_ids, top_probabilities=top_probabilities,
    )


# --- generation with the KV cache ------------------------------------------------------------------------


@dataclass(frozen=True)
class DecodeState:
    """The prompt and ``steps`` generated tokens, read through the model with the KV cache.

    Attributes:
        ids: the tokens read so far, prompt first: ``P + steps`` ids.
        n_prompt: ``P``. steps: generated tokens read back through the cache (0 = just the prefill).
        sampling: the rule the choices followed (:meth:`Sampling.canonical`).
        cache: the model's :class:`attention.llama.KVCache` after the last forward pass: ``keys`` /
            ``values`` ``[n_layers, n_kv_heads, P + steps, d_head]`` float32 (keys after RoPE).
        new_rows: float32 ``[n_layers, n_heads, P + steps]``: the attention weights of the last token read,
            over every cached key, from that forward pass (step 0: the prefill's last row).
        choices: generated tokens ``1 … steps + 1``: the first ``steps`` were read back; the last is the
            model's choice for the next token (read by the next step, unless it is the end of sequence).
        rng_state: the sampling generator's state after the last choice (``None`` for greedy).
        seconds: how long the prefill's pass of the ``P`` prompt tokens took on this server
            (:attr:`explorer.shell.llm.Run.seconds`): the unit of the page's estimate of the full recomputation.
    """

    ids: tuple[int, ...]
    n_prompt: int
    steps: int
    sampling: Sampling
    cache: llm.KVCache
    new_rows: np.ndarray
    choices: tuple[Choice, ...]
    rng_state: dict | None
    seconds: float = 0.0

    @property
    def n(self) -> int:
        """Tokens in the cache."""
        return len(self.ids)

    @property
    def next_choice(self) -> Choice:
        return self.choices[-1]

    @property
    def stopped(self) -> bool:
        """The model chose the end-of-sequence token: there is no next step."""
        return self.next_choice.is_eos


@dataclass(frozen=True)
class Run:
    """What the page generated: the key of its cached sections (hashed by its fields).

    Attributes:
        prompt_ids: the prompt's token ids (at most :data:`MAX_PROMPT_TOKENS`).
        sampling: the rule (:meth:`Sampling.canonical`).
        steps: generated tokens read back through the cache (after any stop at the end-of-sequence token).
    """

    prompt_ids: tuple[int, ...]
    sampling: Sampling
    steps: int

    @property
    def n_prompt(self) -> int:
        return len(self.prompt_ids)

    @property
    def n(self) -> int:
        """Tokens in the cache: prompt + steps."""
        return len(self.prompt_ids) + self.steps


def _rng(sampling: Sampling, state: dict | None) -> np.random.Generator | None:
    if sampling.is_greedy:
        return None
    rng = np.random.default_rng(sampling.seed)  # as model.generate(): one generator per generation
    if state is not None:
        rng.bit_generator.state = state
    return rng


def _read_only(array: np.ndarray) -> np.ndarray:
    """A contiguous copy nobody can change (a state is shared by every session that reaches it)."""
    out = np.array(array, order="C", copy=True)
    out.flags.writeable = False
    return out


def prefill(model: llm.LlamaModel, ids, sampling: Sampling) -> DecodeState:
    """Read the prompt ``ids`` in one forward pass (no cache yet) and choose generated token 1.

    Raises:
        ValueError: empty ``ids`` or more than :data:`MAX_PROMPT_TOKENS` of them, bad ids (as ``forward``).
    """
    ids = tuple(int(i) for i in ids)
    if not 1 <= len(ids) <= MAX_PROMPT_TOKENS:
        raise ValueError(f"the prompt must have 1 to {MAX_PROMPT_TOKENS} tokens, got {len(ids)}")
    sampling = sampling.canonical()
    rng = _rng(sampling, None)
    out = llm.forward(model, ids)  # logits [P, vocab], attentions [L, H, P, P], cache of P tokens
    first = choose(out.logits[-1], sampling, rng, step=1, position=len(ids), eos_id=model.config.eos_id)
    return DecodeState(ids, len(ids), 0, sampling, out.cache, _read_only(out.attentions[:, :, -1, :]),
                       (first,), None if rng is None else rng.bit_generator.state, out.seconds)


def decode_step(model: llm.LlamaModel, state: DecodeState) -> DecodeState:
    """Read the pending token with the KV cache (one position through every layer) and choose the next one.

    Raises:
        ValueError: ``state`` ended at the end-of-sequence token, or already holds :data:`MAX_STEPS` steps.
    """
    if state.stopped:
        raise ValueError("generation stopped at the end-of-sequence token: there is no next step")
    if state.steps >= MAX_STEPS:
        raise ValueError(f"at most {MAX_STEPS} generated tokens are read back")
    token = state.next_choice.token_id
    rng = _rng(state.sampling, state.rng_state)
    out = llm.forward(model, [token], cache=state.cache)  # logits [1, vocab], attentions [L, H, 1, n + 1]
    ids = state.ids + (token,)
    nxt = choose(out.logits[-1], state.sampling, rng, step=state.steps + 2, position=len(ids),
                 eos_id=model.config.eos_id)
    return DecodeState(ids, state.n_prompt, state.steps + 1, state.sampling, out.cache,
                       _read_only(out.attentions[:, :, 0, :]), state.choices + (nxt,),
                       None if rng is None else rng.bit_generator.state, state.seconds)


def run(model: llm.LlamaModel, ids, sampling: Sampling, steps: int) -> DecodeState:
    """:func:`prefill`, then up to ``steps`` :func:`decode_step` (fewer when the end-of-sequence token comes)."""
    state = prefill(model, ids, sampling)
    while state.steps < min(steps, MAX_STEPS) and not state.stopped:
        state = decode_step(model, state)
    return state


def max_difference(cached: np.ndarray, full: np.ndarray) -> float:
    """``max |cached - full|`` (float), e.g. a cached step's new row against the full recomputation's last row."""
    cached, full = np.asarray(cached, dtype=np.float64), np.asarray(full, dtype=np.float64)
    if cached.shape != full.shape:
        raise ValueError(f"shapes differ: {cached.shape} and {full.shape}")
    return float(np.abs(cached - full).max(initial=0.0))


# --- cost ----------------------------------------------------------------------------------------------


def mlp_matrices(config: llm.LlamaConfig) -> int:
    """The MLP's weight matrices: 3 for a gated MLP (SwiGLU, GEGLU: gate, up, down), 2 for GPT-2's GELU (up, down)."""
    return 2 if config.mlp == "gelu" else 3


def macs_per_layer_weights(config: llm.LlamaConfig) -> int:
    """Multiply-adds of one layer's weight matrices for one token: ``d_model (n_heads + 2 n_kv_heads) d_head``
    (W_q, W_k, W_v) ``+ n_heads d_head d_model`` (W_o) ``+ m d_model d_ff`` (the MLP's ``m`` matrices,
    :func:`mlp_matrices`: 3 for SwiGLU and GEGLU, 2 for GPT-2's GELU). Biases and norms are left out.

    SmolLM2-135M: 552,960 + 331,776 + 2,654,208 = 3,538,944.
    """
    c = config
    return (c.d_model * (c.n_heads + 2 * c.n_kv_heads) * c.d_head + c.n_heads * c.d_head * c.d_model
            + mlp_matrices(c) * c.d_model * c.d_ff)


def keys_read(config: llm.LlamaConfig, layer: int, n: int) -> int:
    """Keys the query at sequence length ``n`` reads in ``layer``: ``n``, or on a local layer (gemma3) only its last
    ``min(n, sliding_window)``."""
    return min(int(n), config.sliding_window) if layer in config.local_layers else int(n)


def macs_attention(config: llm.LlamaConfig, n_keys: int) -> int:
    """Multiply-adds of one query attending over ``n_keys`` keys in one layer, all heads:
    ``2 n_heads d_head n_keys`` (``q · k_j`` for every key, then ``Σ_j w_j v_j``)."""
    return 2 * config.n_heads * config.d_head * int(n_keys)


def macs_with_cache(config: llm.LlamaConfig, n: int) -> int:
    """Multiply-adds to get the next token's logits when the sequence has ``n`` tokens and the first ``n - 1``
    are cached: the new token alone through every layer, its query over the keys the layer reads
    (:func:`keys_read`: ``n``, or a local layer's window), then the logits.

    ``Σ_l (W + 2 n_heads d_head n_l) + d_model vocab`` with ``W`` = :func:`macs_per_layer_weights` and ``n_l`` =
    :func:`keys_read` (``n_layers (W + 2 n_heads d_head n) + d_model vocab`` without local layers). Element-wise work
    (norms, RoPE, softmax, the activation: a few per number) is left out.
    """
    c = config
    weights = macs_per_layer_weights(c)
    return sum(weights + macs_attention(c, keys_read(c, layer, n)) for layer in range(c.n_layers)) \
        + c.d_model * c.vocab_size


def macs_without_cache(config: llm.LlamaConfig, n: int) -> int:
    """The same logits without a cache: all ``n`` tokens again through every layer (every projection and MLP,
    and query ``i`` over the keys it reads: ``i``, or a local layer's window), the logits for the last token only.

    ``n_layers (n W + 2 n_heads d_head n (n + 1) / 2) + d_model vocab`` without local layers.
    """
    c = config
    n = int(n)
    reads = {layer: sum(keys_read(c, layer, i) for i in range(1, n + 1)) for layer in range(c.n_layers)}
    return sum(n * macs_per_layer_weights(c) + c.n_heads * c.d_head * 2 * reads[layer] for layer in range(c.n_layers)) \
        + c.d_model * c.vocab_size


def cache_bytes(config: llm.LlamaConfig, n: int, n_kv_heads: int | None = None, bytes_per_number: int = 4) -> int:
    """Size of the KV cache for ``n`` tokens as the model's cache holds it, every token in every layer:
    ``2 n_layers n_kv_heads d_head n bytes`` (K and V; float32: 4 bytes).

    ``n_kv_heads`` defaults to the model's (SmolLM2-135M: 3); pass ``config.n_heads`` (9) for what multi-head
    attention without grouping would keep. SmolLM2-135M: 46,080 bytes per token (138,240 with 9 key/value heads).
    """
    kv = config.n_kv_heads if n_kv_heads is None else n_kv_heads
    return 2 * config.n_layers * kv * config.d_head * int(n) * bytes_per_number


def window_cache_bytes(config: llm.LlamaConfig, n: int, bytes_per_number: int = 4) -> int:
    """What a cache would need for ``n`` tokens if each local layer (gemma3) kept only the last ``sliding_window``
    tokens it can still read: ``2 n_kv_heads d_head (n_global n + n_local min(n, W)) bytes``; :func:`cache_bytes`
    for a model without local layers."""
    c = config
    rows = sum(keys_read(c, layer, n) for layer in range(c.n_layers))
    return 2 * c.n_kv_heads * c.d_head * rows * bytes_per_number


# --- this architecture's words (decided from the config) ---------------------------------------------------------


def qkv_latex(config: llm.LlamaConfig) -> str:
    """The intro's projections of token ``t``: RoPE by position (with qwen2's biases, qwen3's and gemma3's per-head
    RMSNorm), or GPT-2's plain projections with biases (its positions are in ``x_t``)."""
    c = config

    def proj(name: str) -> str:
        out = rf"x_t W_{name}" + (rf" + b_{name}" if c.qkv_bias else "")
        return out

    if c.positions != "rope":
        return rf"q_t = {proj('q')},\quad k_t = {proj('k')},\quad v_t = {proj('v')}"

    def rotated(name: str) -> str:
        inner = rf"\mathrm{{RMSNorm}}({proj(name)})" if c.qk_norm else proj(name)
        return rf"\mathrm{{RoPE}}({inner},\ t)"

    return rf"q_t = {rotated('q')},\quad k_t = {rotated('k')},\quad v_t = {proj('v')}"


def key_latex(config: llm.LlamaConfig) -> str:
    """The K cache's row ``j`` as the model computes it (the cache view's formula)."""
    c = config
    inner = r"x_j W_k" + (r" + b_k" if c.qkv_bias else "")
    if c.positions != "rope":
        return r"k_j = " + inner
    if c.qk_norm:
        inner = rf"\mathrm{{RMSNorm}}({inner})"
    return rf"k_j = \mathrm{{RoPE}}({inner},\ j)"


def value_latex(config: llm.LlamaConfig) -> str:
    """The V cache's row ``j``."""
    return r"v_j = x_j W_v" + (r" + b_v" if config.qkv_bias else "")


def intro_caption(config: llm.LlamaConfig) -> str:
    """What ``x_t`` is and how the position enters, in the run's language."""
    c = config
    if c.positions != "rope":
        return _("x_t: token t's residual stream entering the layer (its running vector, after {norm}). This model "
                 "has no RoPE: position t's learned vector was added to the token's embedding before block 0, so the "
                 "position is already in x_t (“Inside a real model”, step 3).").format(norm=llm.norm_name(c))
    return _("x_t: token t's residual stream entering the layer (its running vector, after {norm}); RoPE turns q and "
             "k by an angle proportional to the position t (“Inside a real model”, step 3).").format(
        norm=llm.norm_name(c))


def sharing_words(config: llm.LlamaConfig) -> str:
    """How the query heads share key/value heads, in a few words (the intro's parenthesis)."""
    c = config
    if c.group_size == 1:
        return _("multi-head attention: each query head has its own key/value head")
    if c.n_kv_heads == 1:
        return _("multi-query attention: every query head reads one key/value head")
    return _("grouped-query attention, Ainslie et al. 2023")


def keys_note(config: llm.LlamaConfig) -> str:
    """Why a cached key never changes, and the coordinate layout the K map shows, in the run's language."""
    c = config
    if c.positions != "rope":
        return _("Keys are stored as computed: this model has no RoPE (its positions were added to the embeddings "
                 "before block 0), and a key depends only on its own token and the tokens before it, so a later token "
                 "never changes it.")
    pairs = "(2i, 2i+1)" if c.rope_layout == "adjacent" else f"(i, i + {c.d_head // 2})"
    return _("Keys are stored after RoPE, already rotated for their own position, so a later token never changes "
             "them: the relative position comes out of q · k. Coordinates in the file's RoPE layout (pairs {pairs} "
             "rotate together).").format(pairs=pairs)


def keys_label(config: llm.LlamaConfig) -> str:
    """The K numbers' name: ``K (after RoPE)`` or ``K`` (no RoPE)."""
    return _("K (after RoPE)") if config.positions == "rope" else "K"


def window_note(config: llm.LlamaConfig, layer: int, n: int) -> str | None:
    """On a local layer (gemma3), what the new query reads of the cache and what the cache still holds; else
    ``None``."""
    c = config
    if layer not in c.local_layers:
        return None
    if n <= c.sliding_window:
        return _("Layer {layer} is local: a query reads only its last {w} keys. The sequence has {n}, so the new "
                 "query still reads every cached key.").format(layer=layer, w=c.sliding_window, n=n)
    return _("Layer {layer} is local: the new query reads only its last {w} keys (weight 0 on the {old} older ones). "
             "This page's cache, the model's, still holds all {n} rows in every layer: those {old} rows of this "
             "layer will never be read again.").format(layer=layer, w=c.sliding_window, n=n, old=n - c.sliding_window)


def new_query_title(config: llm.LlamaConfig, layer: int, n: int) -> str:
    """The new query's section title: it attends over every cached key, or (a local layer, a sequence longer than its
    window) only over the cached keys in its window."""
    if layer in config.local_layers and n > config.sliding_window:
        return _("The new query attends over the cached keys in its window")
    return _("The new query attends over every cached key")


def weights_text(config: llm.LlamaConfig, W: str) -> str:
    """The cost paragraph's breakdown of one layer's weights ``W`` (already written out) and what is left out, in
    the run's language."""
    c = config
    facts = dict(d_model=c.d_model, heads=c.n_heads, kv=c.n_kv_heads, d_head=c.d_head, hd=c.n_heads * c.d_head,
                 d_ff=c.d_ff, W=W, m=mlp_matrices(c), mlp=llm.mlp_name(c), norm=llm.norm_name(c))
    text = _("One token through one layer's weight matrices costs W = {d_model}·({heads} + 2·{kv})·{d_head} (W_q, W_k, "
             "W_v) + {hd}·{d_model} (W_o) + {m}·{d_model}·{d_ff} ({mlp}) = {W}.").format(**facts)
    if c.positions == "rope":
        text += " " + _("{norm}, RoPE, softmax and the MLP's activation (a few operations per number) are left "
                        "out.").format(**facts)
    else:
        text += " " + _("{norm}, the biases, softmax and the MLP's activation (a few operations per number) are left "
                        "out.").format(**facts)
    if c.local_layers:
        text += " " + _n("On the {k} local layers a query reads at most its last {w} key, so their attention costs "
                         "at most that many keys (n_l = min(n, {w})).",
                         "On the {k} local layers a query reads at most its last {w} keys, so their attention costs "
                         "at most that many keys (n_l = min(n, {w})).", c.sliding_window).format(
            k=len(c.local_layers), w=c.sliding_window)
    return text


def mlp_words(config: llm.LlamaConfig) -> str:
    """What the model's MLP computes, in one sentence (the cost paragraph's gloss)."""
    if config.mlp == "gelu":
        return _("GELU is the block's MLP, down(gelu(x W_up + b_up)) + b_down, applied to each token alone.")
    if config.mlp == "geglu":
        return _("GEGLU is the block's MLP, down(GELU(x W_gate) ⊙ x W_up), applied to each token alone.")
    return _("SwiGLU is the block's MLP, down(SiLU(x W_gate) ⊙ x W_up) with SiLU(z) = z·σ(z), applied to each token "
             "alone.")


def cost_latex(config: llm.LlamaConfig) -> tuple[str, str]:
    """The multiply-add formulas with and without the cache (``n_l``: the keys a layer reads, on local layers)."""
    if config.local_layers:
        return (r"\sum_l (W + 2 H d_{\text{head}}\, n_l) + d_{\text{model}}\, V_{\text{vocab}}",
                r"\sum_l \Big(n W + 2 H d_{\text{head}} \sum_{i=1}^{n} \min(i, " + str(config.sliding_window)
                + r")_l\Big) + d_{\text{model}}\, V_{\text{vocab}}")
    return (r"L\,(W + 2 H d_{\text{head}}\, n) + d_{\text{model}}\, V_{\text{vocab}}",
            r"L\,\Big(n W + 2 H d_{\text{head}} \tfrac{n(n+1)}{2}\Big) + d_{\text{model}}\, V_{\text{vocab}}")


def sharing_claim(config: llm.LlamaConfig, now: str, long: str, mha_now: str, mha_long: str) -> str:
    """What the key/value sharing saves (sizes in MB already written out: now and at the full context, with the
    model's heads and with a key/value head per query head), in the run's language."""
    c = config
    facts = dict(kv=c.n_kv_heads, heads=c.n_heads, ratio=c.group_size, gqa_now=now, mha_now=mha_now, gqa_long=long,
                 mha_long=mha_long, long=i18n.integer(c.context_length))
    if c.group_size == 1:
        return _("Every one of the {heads} query heads has its own key/value head (multi-head attention, no "
                 "grouping), so the cache holds {heads} heads' keys and values per layer: {gqa_now} MB now, "
                 "{gqa_long} MB at the model's full context of {long} tokens.").format(**facts)
    if c.n_kv_heads == 1:
        return _("Multi-query attention keeps one key/value head instead of {heads}, a **{ratio}× smaller cache**: "
                 "{gqa_now} MB instead of {mha_now} MB now, {gqa_long} MB instead of {mha_long} MB at the model's "
                 "full context of {long} tokens.").format(**facts)
    return _("Grouped-query attention keeps {kv} key/value heads instead of {heads}, a **{ratio}× smaller cache**: "
             "{gqa_now} MB instead of {mha_now} MB now, {gqa_long} MB instead of {mha_long} MB at the model's full "
             "context of {long} tokens.").format(**facts)


def window_cache_claim(config: llm.LlamaConfig, full: str, windowed: str) -> str | None:
    """For a model with local layers: what this page's cache holds and what a cache that dropped what the local
    layers can no longer read would need at the full context (MB, written out); else ``None``."""
    c = config
    if not c.local_layers:
        return None
    return _n("This page's cache, the model's, keeps every token in every layer. The {k} local layers read only "
              "their last {w} key, so a cache could keep just that many rows there: at the full context it would "
              "need {windowed} MB instead of {full} MB.",
              "This page's cache, the model's, keeps every token in every layer. The {k} local layers read only "
              "their last {w} keys, so a cache could keep just that many rows there: at the full context it would "
              "need {windowed} MB instead of {full} MB.", c.sliding_window).format(
        k=len(c.local_layers), w=c.sliding_window, windowed=windowed, full=full)


# --- the page's words for the live numbers, and what the cache views hold ---------------------------------------


def probability_text(p: float) -> str:
    """A probability a learner can read: 3 decimals, or 3 significant digits below 0.001."""
    return i18n.number(p, 3) if p >= 0.001 or p == 0 else i18n.scientific(p, 2)


def storage_note(storage: llm.WeightStorage | None) -> str:
    """How the weights file stores the parameters (:func:`explorer.shell.llm.precision_note` of its tensor table;
    ``None``: the file could not be read) and that every weight is widened to float32 (close to the full-precision
    model's for a quantized file, exactly as stored for a float one), in the run's language:

    ``"In the weights file, the token embedding (also the tied output matrix behind every logit) is 8-bit (Q8_0, 21%
    of the parameters); every other matrix is 4-bit (Q4_1, 79%); the norms are float32 (F32, 0.03%). …"``
    """
    widened = _("Every weight is widened to float32 when it is used, so the numbers are close to, not identical "
                "with, the full-precision model's.")
    if storage is None:
        return _("The weights are read from a quantized file.") + " " + widened
    if not storage.quantized:
        widened = _("Every weight is widened to float32 when it is used, exactly as stored (no quantization).")
    return _("In the weights file, {stored}.").format(stored=llm.precision_note(storage)) + " " + widened


def status_text(choice: Choice, read: bool, at_limit: bool) -> str:
    if read:
        return _("read back: K, V rows cached")
    if choice.is_eos:
        return _("end of sequence: stop (not read back)")
    if at_limit:
        return _("next (not read: the page stops at {n} steps)").format(n=MAX_STEPS)
    return _("next (read on the next step)")


def pending_marker(pending: bytes) -> str:
    """What the text shows where a character is not finished yet: ``⟨+2 bytes pending⟩`` (``""`` for none)."""
    if not pending:
        return ""
    return _n("⟨+{n} byte pending⟩", "⟨+{n} bytes pending⟩", len(pending)).format(n=len(pending))


def utf8_length(lead: int) -> int:
    """Bytes of the UTF-8 character that begins with the byte ``lead`` (2 for ``0xC2…0xDF``, 3, 4; else 1)."""
    return 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2 if lead >= 0xC0 else 1


def pending_note(pending: bytes, *, ended: bool = False, at_limit: bool = False) -> str:
    """Why the text ends in :func:`pending_marker`: the bytes so far of a character, and when it will show."""
    first = _("{marker}: the tokens read so far end inside a character, with {k} of its {total} UTF-8 bytes "
              "({hex});").format(marker=pending_marker(pending), k=len(pending), total=utf8_length(pending[0]),
                                 hex="`" + " ".join(f"{b:02x}" for b in pending) + "`") + " "
    if ended:
        return first + _("the model ended the text here (end of sequence), so that character is never finished. "
                         "The page shows no character the model did not write.")
    if at_limit:
        return first + _("the page stops at {n} generated tokens, before it is finished. The page shows no "
                         "character the model did not write.").format(n=MAX_STEPS)
    return first + _("it shows once the tokens with its other bytes are generated, never as a replacement "
                     "character the model did not write.")


def difference_note(diff_head: float, diff_all: float, head: int, layer: int, n_layers: int) -> str:
    """Why the cached step and the full pass agree, and why they differ (only when they do), for the live numbers."""
    exact = _("The cache is an **exact shortcut, not an approximation**: no token's key or value depends on a later "
              "token (causal mask), so the cached keys and values are what a full pass computes again, and the new "
              "row is the same row.")
    if diff_all == 0.0:
        return exact + " " + _("Here the two rows agree bit for bit, in every head of every layer.")
    rounding = dict(layers=n_layers, measured=difference_text(diff_all))
    if diff_head == 0.0:
        return exact + " " + _(
            "Head {head} of layer {layer} agrees bit for bit; over all heads the difference is not exactly 0 only "
            "because float32 additions are rounded and a one-row product (the cached step) sums in another order "
            "than a many-row product (the full pass): rounding of about 1e-7 per operation (float32 keeps 24 bits), "
            "through {layers} layers, ends at the {measured} measured here.").format(head=head, layer=layer,
                                                                                      **rounding)
    return exact + " " + _(
        "The difference is not exactly 0 only because float32 additions are rounded and a one-row product (the "
        "cached step) sums in another order than a many-row product (the full pass): rounding of about 1e-7 per "
        "operation (float32 keeps 24 bits), through {layers} layers, ends at the {measured} measured here."
    ).format(**rounding)


def difference_text(x: float) -> str:
    """``0 (bit for bit)`` or ``1.5e-06``, in the run's language (``1,5e-06``)."""
    return _("0 (bit for bit)") if x == 0.0 else i18n.scientific(x, 1)


def prefill_claim(difference_all: float) -> str:
    """Step 0's note, in the run's language: the prefill is a full pass, so there is nothing cached to compare
    (and it says the difference is exactly 0 only when ``difference_all``, over every head, is)."""
    return (_("Step 0 is the prefill: the prompt went through the model in one pass, exactly as a full "
              "recomputation does, so there is no cached step to compare yet (the difference is exactly 0). "
              "Generate a token.") if difference_all == 0.0 else
            _("Step 0 is the prefill: the prompt went through the model in one pass, exactly as a full "
              "recomputation does, so there is no cached step to compare yet. Generate a token."))


@dataclass(frozen=True)
class CacheView:
    """What the page's cache view draws for one layer and key/value head (:func:`cache_view`): the cache alone.

    Attributes:
        labels: one readable label per cached token (``llm.labels``), ``n`` of them.
        keys, values: float32 ``[n, d_head]``: the cache's K (after RoPE) and V of the layer and key/value head.
        heads: the query heads that read this key/value head (the model's own head numbers).
        cached_rows: float32 ``[len(heads), n]``: the newest query's attention weights from the cached step.
    """

    labels: tuple[str, ...]
    keys: np.ndarray
    values: np.ndarray
    heads: tuple[int, ...]
    cached_rows: np.ndarray


@dataclass(frozen=True)
class FullPass:
    """What the page's comparison adds to the cache view (:func:`full_pass`): the full recomputation.

    Attributes:
        full_rows: float32 ``[len(heads), n]``: the newest query's attention weights from one full forward pass
            over the whole sequence (the door's cached one), for the heads of :attr:`CacheView.heads`.
        difference_all: ``max |cached - full|`` over every layer and head.
    """

    full_rows: np.ndarray
    difference_all: float


def decode_state(_model: llm.LlamaModel, ids: tuple[int, ...], sampling: Sampling, steps: int,
                 _states: Callable[..., DecodeState]) -> DecodeState:
    """:func:`run`, incrementally: the state of ``steps`` is the state of ``steps - 1`` plus one decode step (or that
    state itself once it has stopped at the end-of-sequence token). ``_states`` is this function cached (``draw.py``'s
    :func:`explorer.shell.cache.resource` binding, called with itself): the state of ``steps - 1`` is read from it, so
    one more click costs one forward pass of one token."""
    if steps <= 0:
        return prefill(_model, ids, sampling)
    previous = _states(_model, ids, sampling, steps - 1, _states)
    if previous.stopped or previous.steps >= MAX_STEPS:
        return previous
    return decode_step(_model, previous)


def state_of(_model: llm.LlamaModel, run: Run, _states: Callable[..., DecodeState]) -> DecodeState:
    """The state of ``run`` read from ``_states`` (the cached :func:`decode_state`)."""
    return _states(_model, run.prompt_ids, run.sampling, run.steps, _states)


def cache_view_data(_model: llm.LlamaModel, run: Run, layer: int, kv_head: int,
                    _states: Callable[..., DecodeState]) -> CacheView:
    """Everything the cache view draws for one layer and key/value head, from the cached :func:`decode_state` alone
    (``_states``): one more generated token costs one decode step before these charts are drawn, not a full pass."""
    state, g = state_of(_model, run, _states), _model.config.group_size
    heads = tuple(range(kv_head * g, (kv_head + 1) * g))
    return CacheView(labels=tuple(llm.labels(_model, state.ids)), keys=np.array(state.cache.keys[layer, kv_head]),
                     values=np.array(state.cache.values[layer, kv_head]), heads=heads,
                     cached_rows=np.array(state.new_rows[layer, list(heads)]))


def full_pass_data(_model: llm.LlamaModel, run: Run, layer: int, kv_head: int,
                   _states: Callable[..., DecodeState]) -> FullPass:
    """The full recomputation the comparison draws, per (run, layer, key/value head): from the door's
    :func:`explorer.shell.llm.run` (cached per sequence, so another layer or head runs nothing)."""
    state, g = state_of(_model, run, _states), _model.config.group_size
    full = llm.run(_model, state.ids).attentions[:, :, -1, :]  # [n_layers, n_heads, n]: the full pass's last row
    return FullPass(full_rows=np.array(full[layer, kv_head * g:(kv_head + 1) * g]),
                    difference_all=max_difference(state.new_rows, full))
