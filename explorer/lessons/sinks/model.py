"""Arrays for the page "Attention sinks and smaller KV caches" (pure NumPy on the door to the model,
:mod:`explorer.shell.llm`).

Four measurements on the learner's text, all on the loaded model's own weights (SmolLM2-135M by default; any
family the core reads: learned positions (gpt2) have nothing for StreamingLLM to renumber, :func:`streamed`):

* **the sink** (:func:`sink_summary`): how much weight each head puts on the first token, averaged over the query
  rows :data:`FIRST_QUERY` .. n - 1 (row 0 sees only itself; row 1's previous token *is* the first token, so a
  previous-token head would look like a sink there: the same rows as "Inside a real model"), against what a uniform
  head would put there, and how small the first token's values are (a key every query can find, whose value adds
  little: a no-op);
* **the sink follows the position** (:func:`first_token_experiment`): another token put first (or the first one
  dropped), and where the weight goes; **RoPE is not the reason** (:func:`shift_experiment`): every position
  shifted by ``k``;
* **streaming** (:func:`streamed`): a sliding window with 0, 1 or 4 kept first tokens, perplexity over the positions
  after the window and a greedy continuation, with StreamingLLM's numbering inside the cache beside ours;
* **smaller caches** (:func:`cache_variants`, :func:`measure`): MHA, the model's GQA, MQA, a latent cache at several
  ranks and windows, bytes per token against perplexity, KL to the model's next-token distributions and top-1
  agreement, on the same scored positions (after the largest window compared). Conversions before any fine-tuning.

Sources: Xiao et al. (2023), "Efficient Streaming Language Models with Attention Sinks", sections 3.1-3.2; Gu et al.
(2024), "When Attention Sink Emerges in Language Models: An Empirical View", sections 3-4 and 7 (the sink token's
small value norms; softmax's sum to one as the cause); Ainslie et al. (2023), GQA; Ji et al. (2025), MHA2MLA;
:mod:`attention.llama.variants` for the conversions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from attention import heads
from explorer.shell import i18n, llm
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt, tokens_count

_, _n = translator(__name__)

DEFAULT_PROMPT = (
    "The old lighthouse keeper climbed the spiral stairs every evening at dusk. He lit the great lamp, wound the "
    "clockwork that turned the lens, and wrote the weather in his logbook. Ships passing in the night never saw him, "
    "but they trusted his light to guide them safely past the rocks."
)
FIRST_QUERY = heads.FIRST_ROW
"""Sink masses average over the query rows ``FIRST_QUERY .. n - 1`` (:data:`attention.heads.FIRST_ROW`)."""
HALF = 0.5
"""A head "puts most of its weight on the first token" above this mean weight."""
SINK_COUNTS = (0, 1, 4)
"""Kept first tokens the streaming section compares side by side (StreamingLLM keeps 4)."""
DEFAULT_WINDOW = 16
MIN_SCORED = 4
"""A window leaves at least this many scored positions after it (the window slider's top is ``n - 1 - MIN_SCORED``)."""
DEFAULT_NEW_TOKENS, MAX_NEW_TOKENS = 8, 32
DEFAULT_OFFSET = 1000
SWEEP_WINDOWS = (8, 16, 32)
SWEEP_SINKS = 4
LATENT_RANKS = (32, 64, 128, 192, 256, 320, 384)
FIRST_CHOICES = {  # the option's code (the link's value) -> the text of the token put first (None: drop the first)
    "newline": "\n",
    "the": " the",
    "stop": ".",
    "im_start": "<|im_start|>",
    "drop": None,
}


# --- the sink ------------------------------------------------------------------------------------


def sink_mass(attentions, key: int = 0) -> np.ndarray:
    """The mean weight every head puts on position ``key``, over the query rows ``FIRST_QUERY .. n - 1``
    (:func:`attention.heads.key_weight`: on ``key = 0`` the sink statistic every lesson shows).

    Args:
        attentions: ``[n_layers, n_heads, n, n]`` causal attention weights (rows sum to 1).
        key: the key position (0 = the first token; 1 for a token moved there).

    Returns:
        float64 ``[n_layers, n_heads]`` in ``[0, 1]``.

    Raises:
        ValueError: not ``[L, H, n, n]``, or ``n <= max(FIRST_QUERY, key)`` (no query row to average).
    """
    a = np.asarray(attentions)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must be [n_layers, n_heads, n, n], got {list(a.shape)}")
    return heads.key_weight(a, key)


def uniform_mass(n: int, key: int = 0) -> float:
    """What :func:`sink_mass` would be for a head spreading every row evenly (:func:`attention.heads.uniform`):
    the mean of ``1 / (q + 1)``."""
    return float(heads.key_weight(heads.uniform(n), key))


@dataclass(frozen=True)
class SinkSummary:
    """The sink on one text.

    Attributes:
        n: tokens. mass: float64 ``[n_layers, n_heads]``, :func:`sink_mass` on the first token.
        uniform: :func:`uniform_mass` (the same average for a head that spreads evenly).
        value_ratio: float64 ``[n_layers]``: the first token's value norm over the median of the other tokens'
            (mean over the key/value heads): below 1, its value adds little to a query's output.
        top_layer, top_head: the head with the largest mass; top_map: its weights ``[n, n]`` float32.
        second: float64 ``[n_layers]``, the weight on position 1 per layer (mean over heads; same query rows).
        seconds: how long the pass took on this server (:attr:`explorer.shell.llm.Run.seconds`): the unit of the
            page's estimates of its other sections.
    """

    n: int
    mass: np.ndarray
    uniform: float
    value_ratio: np.ndarray
    top_layer: int
    top_head: int
    top_map: np.ndarray
    second: np.ndarray
    seconds: float = 0.0

    @property
    def per_layer(self) -> np.ndarray:
        """Mean over the heads of each layer ``[n_layers]``."""
        return self.mass.mean(axis=1)

    @property
    def n_over_half(self) -> int:
        """Heads whose mean weight on the first token is above :data:`HALF`."""
        return int((self.mass > HALF).sum())


def sink_summary(_model: llm.LlamaModel, ids: tuple[int, ...]) -> SinkSummary:
    """One forward pass over ``ids`` (at least ``FIRST_QUERY + 1`` tokens) and its :class:`SinkSummary`."""
    out = llm.forward(_model, ids)
    mass = sink_mass(out.attentions)
    norms = np.linalg.norm(out.cache.values.astype(np.float64), axis=-1)  # [L, KV, n]
    ratio = (norms[:, :, 0] / np.median(norms[:, :, 1:], axis=-1)).mean(axis=1)  # [L]
    layer, head = heads.top_heads(mass)[0]
    return SinkSummary(len(ids), mass, uniform_mass(len(ids)), ratio, int(layer), int(head),
                       out.attentions[layer, head].copy(), sink_mass(out.attentions, 1).mean(axis=1), out.seconds)


def sink_claims(s: SinkSummary) -> tuple[str, str]:
    """``s``'s sink in two sentences: the first token's weight (and the first layer above :data:`HALF` on it, or none),
    and whether its values are small (the mean value ratio of those layers, or of all when none is, below 1)."""
    per_layer = s.per_layer
    first_big = next((layer for layer, v in enumerate(per_layer) if v > HALF), None)
    facts = dict(tokens=tokens_count(s.n), mean=i18n.percent(float(s.mass.mean()), 0), heads=s.mass.size,
                 uniform=i18n.percent(s.uniform, 0), over=s.n_over_half, l0=fmt(per_layer[0], 2),
                 l1=fmt(per_layer[1], 2), first=first_big)
    weight = (_("**On your text** ({tokens}), the first token takes **{mean}** of the attention on average over "
                "all {heads} heads, against {uniform} for heads that spread evenly; **{over} of {heads} heads** "
                "put more than half of their weight on it. Layers 0 and 1 put {l0} and {l1} on it (mean of "
                "their heads); the first layer whose heads average more than half is layer {first}.")
              if first_big is not None else
              _("**On your text** ({tokens}), the first token takes **{mean}** of the attention on average over "
                "all {heads} heads, against {uniform} for heads that spread evenly; **{over} of {heads} heads** "
                "put more than half of their weight on it. Layers 0 and 1 put {l0} and {l1} on it (mean of "
                "their heads); no layer's heads average more than half on your text.")).format(**facts)
    heavy = per_layer > HALF
    ratio = float(s.value_ratio[heavy].mean() if heavy.any() else s.value_ratio.mean())
    if ratio < 1:
        values = (_("**Its values are small**: in the layers where it takes more than half of the weight, the first "
                    "token's value vectors are {ratio}× the median length of the other tokens' (mean over the "
                    "key/value heads). Weight on it adds little to a query's output: it is the no-op.") if heavy.any()
                  else _("**Its values are small**: in all layers, the first token's value vectors are {ratio}× the "
                         "median length of the other tokens' (mean over the key/value heads). Weight on it adds "
                         "little to a query's output: it is the no-op."))
    else:
        values = (_("**On your text its values are not smaller than the others'**: in the layers where it takes more "
                    "than half of the weight the first token's value vectors are {ratio}× the median length of the "
                    "other tokens'. Here the sink is not a no-op by the size of its values.") if heavy.any()
                  else _("**On your text its values are not smaller than the others'**: in all layers the first "
                         "token's value vectors are {ratio}× the median length of the other tokens'. Here the sink "
                         "is not a no-op by the size of its values."))
    return weight, values.format(ratio=fmt(ratio, 2))


# --- another token first; every position shifted --------------------------------------------------------------


def first_token_ids(model: llm.LlamaModel, choice: str) -> list[int]:
    """The tokens of ``FIRST_CHOICES[choice]``'s text for ``model``'s tokenizer, without the BOS token a file adds
    to every text (Gemma's): one id when the vocabulary has it whole (Gemma's new line is its byte token
    ``<0x0A>``), several when it spells it in pieces (a vocabulary without ``<|im_start|>``).

    Raises:
        ValueError: an unknown ``choice``, or the option whose text is ``None`` (dropping the first token).
    """
    if choice not in FIRST_CHOICES or FIRST_CHOICES[choice] is None:
        raise ValueError(f"choice must be one of {', '.join(k for k, v in FIRST_CHOICES.items() if v)}, got "
                         f"{choice!r}")
    ids = llm.token_ids(model, FIRST_CHOICES[choice])
    bos = model.tokenizer.bos_id
    return ids[1:] if bos is not None and ids[:1] == [bos] else ids


def changed_ids(model: llm.LlamaModel, ids, choice: str) -> tuple[int, ...]:
    """``ids`` with the token of ``FIRST_CHOICES[choice]`` put first (:func:`first_token_ids`), or without its first
    token (the option whose text is ``None``).

    Raises:
        ValueError: an unknown ``choice``, or a choice whose text is not exactly one token for this tokenizer.
    """
    if choice not in FIRST_CHOICES:
        raise ValueError(f"choice must be one of {', '.join(FIRST_CHOICES)}, got {choice!r}")
    if FIRST_CHOICES[choice] is None:
        return tuple(ids[1:])
    token = first_token_ids(model, choice)
    if len(token) != 1:
        raise ValueError(f"{FIRST_CHOICES[choice]!r} is {len(token)} tokens for this tokenizer, not one")
    return (token[0], *ids)


@dataclass(frozen=True)
class FirstToken:
    """Where the first-token weight goes when another token comes first (per layer: mean over the heads).

    Attributes:
        choice: the :data:`FIRST_CHOICES` key. ids: the changed text's ids.
        original: ``[n_layers]``, the weight on position 0 of the learner's text (its first token there).
        changed: ``[n_layers]``, the weight on position 0 of the changed text (the new first token).
        followed: ``[n_layers]``, the weight on the token that changed place: with a token put first, the learner's
            first token at position 1 now; with the first token dropped, the new first token at its old position 1.
        uniform_changed: :func:`uniform_mass` of the changed text.
    """

    choice: str
    ids: tuple[int, ...]
    original: np.ndarray
    changed: np.ndarray
    followed: np.ndarray
    uniform_changed: float

    @property
    def follows_position(self) -> bool:
        """The measured fact the page states: position 0 keeps at least half of its weight with another token
        there, and the token that moved gets less than half of what position 0 gets."""
        a, b, c = self.original.mean(), self.changed.mean(), self.followed.mean()
        return bool(b >= 0.5 * a and c < 0.5 * b)


def first_token_experiment(_model: llm.LlamaModel, ids: tuple[int, ...], _original: SinkSummary,
                           choice: str) -> FirstToken:
    """Run the changed text (:func:`changed_ids`) and measure where the weight on the first position goes, against
    ``_original``, the text's own :func:`sink_summary` (fixed by the model and ``ids``: not part of a cache key).

    Raises:
        ValueError: as :func:`changed_ids`; a text too short for :func:`sink_mass`.
    """
    new = changed_ids(_model, ids, choice)
    a = llm.forward(_model, new).attentions
    # dropped: the new first token was at position 1 of the learner's text; put first: the learner's first token is
    # at position 1 now
    followed = _original.second if FIRST_CHOICES[choice] is None else sink_mass(a, 1).mean(axis=1)
    return FirstToken(choice, new, _original.per_layer, sink_mass(a, 0).mean(axis=1), followed, uniform_mass(len(new)))


@dataclass(frozen=True)
class Shift:
    """Every RoPE position shifted by ``offset`` (positions ``offset .. offset + n - 1``), against 0.

    Attributes:
        offset: the shift. max_logit_diff: ``max |Δ logits|`` over every position and token. largest_logit:
        ``max |logits|`` (for scale). max_weight_diff: ``max |Δ attention weight|`` over every layer, head and cell.
        mass_original, mass_shifted: ``[n_layers]`` sink mass per layer (mean over heads), unshifted and shifted.
        same_next: the greedy next token is the same.
    """

    offset: int
    max_logit_diff: float
    largest_logit: float
    max_weight_diff: float
    mass_original: np.ndarray
    mass_shifted: np.ndarray
    same_next: bool
    learned: bool = False


def shift_experiment(_model: llm.LlamaModel, ids: tuple[int, ...], offset: int) -> Shift:
    """Two forward passes: positions from 0 and from ``offset``.

    Raises:
        ValueError: ``offset`` outside ``0 .. context_length - n`` (from :meth:`LlamaModel.forward`).
    """
    plain = llm.forward(_model, ids)
    shifted = llm.forward(_model, ids, position_offset=offset)
    return Shift(int(offset), float(np.abs(shifted.logits - plain.logits).max()),
                 float(np.abs(plain.logits).max()), float(np.abs(shifted.attentions - plain.attentions).max()),
                 sink_mass(plain.attentions).mean(axis=1), sink_mass(shifted.attentions).mean(axis=1),
                 int(plain.logits[-1].argmax()) == int(shifted.logits[-1].argmax()),
                 _model.config.positions != "rope")


# --- streaming --------------------------------------------------------------------------------------------------


def shift_claim(sh: Shift) -> str:
    """What shifting every position by ``sh.offset`` (> 0) did: float32 rounding and nothing else (no logit moved by
    more than 1e-4 of the largest, at least 1), or more than rounding; in the run's language."""
    facts = dict(k=i18n.integer(sh.offset), logit=i18n.scientific(sh.max_logit_diff),
                 largest=fmt(sh.largest_logit, 1), weight=i18n.scientific(sh.max_weight_diff),
                 mass=fmt(float(sh.mass_original.mean()), 2), shifted=fmt(float(sh.mass_shifted.mean()), 2))
    if sh.learned:
        return _("Measured: shifting every position by {k} changes the logits by up to **{logit}** (they reach "
                 "{largest}) and attention weights by up to {weight}. This model has no RoPE: its positions are "
                 "learned vectors added to each token's embedding, so a shift gives every token another input vector, "
                 "not a turn that cancels in the dot product. The mean weight on the first token goes from {mass} to "
                 "{shifted}.").format(**facts)
    if sh.max_logit_diff <= 1e-4 * max(sh.largest_logit, 1.0):
        return _("Measured: shifting every position by {k} changes no logit by more than **{logit}** (the logits reach "
                 "{largest}) and no attention weight by more than {weight}: float32 rounding, nothing else. RoPE turns "
                 "each query and key by an angle proportional to its position, and a dot product of two turned vectors "
                 "depends only on the difference of the angles (Su et al. 2021). So the first token is not special for "
                 "being at RoPE position 0: at position {k} it is the same sink.").format(**facts)
    return _("Measured: shifting every position by {k} changes the logits by up to **{logit}** (they reach {largest}): "
             "more than float32 rounding at this shift, from the rounding of large rotation angles.").format(**facts)


def window_max(n: int) -> int:
    """The largest window that leaves :data:`MIN_SCORED` scored positions in ``n`` tokens (0: the text is too short)."""
    return max(n - 1 - MIN_SCORED, 0)


def allowed_keys(n: int, window: int | None, sinks: int) -> np.ndarray:
    """Which keys each query sees, as int8 ``[n, n]``: 2 = in the window, 1 = a kept first token outside it, 0 = dropped
    by the window, -1 = the future (the causal mask). ``window=None``: full attention (every past key is 2)."""
    p, j = np.arange(n)[:, None], np.arange(n)[None, :]
    out = np.full((n, n), -1, np.int8)
    past = j <= p
    out[past] = 0
    out[past & (j < sinks)] = 1
    out[past if window is None else past & (j > p - window)] = 2
    return out


@dataclass(frozen=True)
class Streamed:
    """A sliding window with ``sinks`` kept first tokens (``sinks=None``: full attention) on the learner's text.

    Attributes:
        window, sinks: the options. score_from: the first scored query position (= ``window``).
        perplexity: over query positions ``score_from .. n - 2`` (tokens ``score_from + 1 .. n - 1``).
        losses: float64 ``[n - 1]``, every position's next-token loss (nats; the scored ones from ``score_from``).
        renumbered: the perplexity with StreamingLLM's numbering inside the cache
            (:func:`explorer.shell.llm.renumbered_logits`;
            ``None`` for full attention and for 0 sinks, where the two numberings are the same).
        generated: the greedy continuation's ids (:func:`explorer.shell.llm.continue_greedy` with the same window and
            sinks).
    """

    window: int
    sinks: int | None
    score_from: int
    perplexity: float
    losses: np.ndarray
    renumbered: float | None
    generated: tuple[int, ...]


def streamed(_model: llm.LlamaModel, ids: tuple[int, ...], window: int, sinks: int | None, n_new: int) -> Streamed:
    """Perplexity, per-position losses and a greedy continuation of ``n_new`` tokens with a window of ``window``
    positions and ``sinks`` kept first tokens (``None``: full attention, scored on the same positions).

    Raises:
        ValueError: a window that leaves no scored position; as :meth:`LlamaModel.forward`.
    """
    ids = list(ids)
    start = llm.score_start(len(ids), None, window)
    options = {} if sinks is None else {"window": window, "sinks": sinks}
    out = llm.forward(_model, ids, weights=False, **options)  # scored, then continued (one prompt pass)
    losses = llm.next_token_losses(out.logits, ids)
    renumbered = None
    if sinks and _model.config.positions == "rope":  # learned positions (gpt2): nothing in the cache to renumber
        shifted = llm.renumbered_logits(_model, ids, window=window, sinks=sinks)
        renumbered = float(np.exp(llm.next_token_losses(shifted, ids)[start:].mean()))
    generated = tuple(llm.continue_greedy(_model, out, n_new, **options))
    return Streamed(window, sinks, start, float(np.exp(losses[start:].mean())), losses, renumbered, generated)


def stream_passes(config: llm.LlamaConfig, n_new: int) -> int:
    """The forward passes of section 4 (:func:`streamed` for each of :data:`SINK_COUNTS` and full attention): one
    pass of the text each, StreamingLLM's renumbered pass for each run with kept tokens (RoPE models), and ``n_new``
    one-token steps each."""
    runs = len(SINK_COUNTS) + 1
    renumbered = sum(1 for k in SINK_COUNTS if k) if config.positions == "rope" else 0
    return runs * (1 + n_new) + renumbered


# --- smaller caches ---------------------------------------------------------------------------------------------


def streaming_claims(runs: dict[int | None, Streamed], n: int) -> tuple[str, str | None]:
    """Whether keeping the first tokens lowers the window's perplexity (``runs`` by kept tokens, ``None``: full
    attention; ``n`` tokens), and whether both numberings beat none (``None`` without StreamingLLM's numbering)."""
    k = SINK_COUNTS[-1]
    none, four, window = runs[0], runs[k], runs[0].window
    ppl = {key: fmt(r.perplexity, 1) for key, r in runs.items()}
    facts = dict(w=window, k=k, none=ppl[0], four=ppl[k], full=ppl[None], one=ppl[1],
                 positions=positions(n - 1 - window), first=window, last=n - 2)
    perplexity = (_("**Measured on your text**: with a window of {w}, keeping the first {k} tokens brings the "
                    "perplexity from **{none}** (no kept token) to **{four}**; full attention: {full}. Keeping just "
                    "one: {one}. All on the same {positions} ({first} … {last}), the ones after the window.")
                  if four.perplexity < none.perplexity else
                  _("**Measured on your text**: with a window of {w}, keeping the first {k} tokens does not help "
                    "here: perplexity {four} against {none} without them (full attention: {full}; one kept token: "
                    "{one}), on the {positions} after the window.")).format(**facts)
    if four.renumbered is None:
        return perplexity, None
    change = four.renumbered / four.perplexity - 1
    facts = dict(kept=kept(k), renumbered=fmt(four.renumbered, 1), none=ppl[0],
                 kept_positions=fmt(four.perplexity, 1),
                 change=("+" if change >= 0 else "-") + i18n.percent(abs(change), 0))
    return perplexity, (_("With {kept}, StreamingLLM's numbering gives perplexity {renumbered} against "
                          "{kept_positions} with the positions kept ({change}) on your text: both are below the "
                          "{none} of the window without them, so the kept tokens work as the sink either way. This "
                          "page shows the positions kept.") if max(four.renumbered, four.perplexity) < none.perplexity
                        else _("With {kept}, StreamingLLM's numbering gives perplexity {renumbered} against "
                               "{kept_positions} with the positions kept ({change}) on your text, and one of them is "
                               "not better than the window without kept tokens. This page shows the positions "
                               "kept.")).format(**facts)


@dataclass(frozen=True)
class CacheVariant:
    """One way to shrink (or widen) the KV cache, measured by :func:`measure`.

    Attributes:
        key: a short unique name (``"mqa"``, ``"latent-128"``, ``"window-16"``); the table names it with
            :func:`variant_label`.
        family: ``"heads"`` (MHA, GQA, MQA), ``"latent"`` or ``"window"``.
        kind: :func:`explorer.shell.llm.kv_variant`'s argument, or ``None`` for the model's own projections.
        window, sinks: a sliding window (``None``: every token kept).
    """

    key: str
    family: str
    kind: object = None
    window: int | None = None
    sinks: int = 0


def cache_variants(config: llm.LlamaConfig, n: int) -> tuple[CacheVariant, ...]:
    """The variants the page compares for a text of ``n`` tokens: MHA, the model (GQA), MQA, a latent cache at
    :data:`LATENT_RANKS`, and the :data:`SWEEP_WINDOWS` (with :data:`SWEEP_SINKS` kept first tokens) that leave
    :data:`MIN_SCORED` scored positions."""
    c = config
    out = [CacheVariant("mha", "heads", "mha")] if c.n_kv_heads < c.n_heads else []  # a model with MHA is its own
    out += [CacheVariant("gqa", "heads"), CacheVariant("mqa", "heads", "mqa")]
    out += [CacheVariant(f"latent-{r}", "latent", ("latent", r)) for r in LATENT_RANKS
            if r <= llm.latent_full_rank(c)]
    out += [CacheVariant(f"window-{w}", "window", None, w, SWEEP_SINKS) for w in SWEEP_WINDOWS if w <= window_max(n)]
    return tuple(out)


def variant_bytes(config: llm.LlamaConfig, variant: CacheVariant, n: int) -> tuple[int, float]:
    """``(floats per token per layer, KV-cache bytes per token of a text of n tokens)`` by the formulas
    (:func:`attention.llama.variants.converted_config`; a window keeps at most ``window + sinks`` tokens)."""
    converted = llm.converted_config(config, variant.kind)
    kept = n if variant.window is None else min(n, variant.window + variant.sinks)
    return converted.kv_floats_per_token_per_layer, kept * converted.kv_bytes_per_token / n


def sweep_score_from(variants_: tuple[CacheVariant, ...]) -> int:
    """The first scored query position of the sweep: after its largest window (0 without windows)."""
    return max((v.window for v in variants_ if v.window is not None), default=0)


def reference_logits(_model: llm.LlamaModel, ids: tuple[int, ...]) -> np.ndarray:
    """The model's own logits ``[n, vocab]`` float32, read-only (shared by every session): what every variant is
    compared with."""
    logits = llm.forward(_model, ids, weights=False).logits
    logits.flags.writeable = False
    return logits


@dataclass(frozen=True)
class Measured:
    """One variant on the learner's text, on the sweep's scored positions.

    Attributes:
        variant: the :class:`CacheVariant`.
        floats_per_layer: what the cache keeps per token per layer (floats; a window keeps 384 for at most
            ``window + sinks`` tokens).
        cache_bytes: the cache at the text's last token (float32). bytes_per_token: ``cache_bytes / n``.
        perplexity, kl, top1: :class:`attention.llama.variants.Agreement` against the model.
        max_logit_diff: ``max |Δ logits|`` over the scored positions (0 for MHA: the same numbers).
    """

    variant: CacheVariant
    floats_per_layer: int
    cache_bytes: int
    bytes_per_token: float
    perplexity: float
    kl: float
    top1: float
    max_logit_diff: float


def measure(model: llm.LlamaModel, ids, variant: CacheVariant, reference: np.ndarray, score_from: int) -> Measured:
    """Convert (or window) the model as ``variant`` says, run ``ids`` once and compare with ``reference``
    (:func:`reference_logits`) over query positions ``score_from .. n - 2``. The converted model is dropped on return
    (it holds no weights of its own, a pass one layer's converted matrix: :mod:`attention.llama.variants`)."""
    ids = list(ids)
    n, c = len(ids), model.config
    options = {} if variant.window is None else {"window": variant.window, "sinks": variant.sinks}
    logits = llm.forward(model, ids, weights=False, variant=variant.kind, **options).logits  # a variant dropped after
    floats, per_token = variant_bytes(c, variant, n)  # = the converted model's own config.kv_bytes_per_token
    agreement = llm.compare(reference, logits, ids, score_from)
    return Measured(variant, floats, round(per_token * n), per_token, agreement.perplexity, agreement.kl,
                    agreement.top1, float(np.abs(logits[score_from:-1] - reference[score_from:-1]).max()))


def kept(k: int) -> str:
    """``"1 kept first token"``, ``"4 kept first tokens"`` in the run's language."""
    return _n("{k} kept first token", "{k} kept first tokens", k).format(k=k)


def positions(n: int) -> str:
    """``"1 position"``, ``"44 positions"`` in the run's language."""
    return _n("{n} position", "{n} positions", n).format(n=n)


def variant_label(config: llm.LlamaConfig, variant: CacheVariant) -> str:
    """A cache variant's name in the run's language (the caches key on the variant, not its name: a measurement is
    shared by every language)."""
    c = config
    if variant.key == "mha":
        return _("MHA: {n} key/value heads").format(n=c.n_heads)
    if variant.key == "gqa":
        return (_("GQA: {n} key/value heads (the model)") if c.n_kv_heads < c.n_heads else
                _("MHA: {n} key/value heads (the model)")).format(n=c.n_kv_heads)
    if variant.key == "mqa":
        return _("MQA: 1 key/value head (mean of {n})").format(n=c.n_kv_heads)
    if variant.family == "latent":
        rank = variant.kind[1]
        return (_("latent, rank {r} (full rank)") if rank == llm.latent_full_rank(c)
                else _("latent, rank {r}")).format(r=rank)
    return _n("window {w} + {k} first token", "window {w} + {k} first tokens", variant.sinks).format(
        w=variant.window, k=variant.sinks)


def variant_claims(config: llm.LlamaConfig, rows: tuple[Measured, ...]) -> list[str]:
    """What the measured variants ``rows`` (the model's own among them) state: MHA the same numbers (bit for bit or
    up to rounding), MQA against the latent cache of its size, the full-rank latent cache, the best window."""
    c = config
    by_key = {r.variant.key: r for r in rows}
    gqa = by_key["gqa"]
    sentences = []
    mha = by_key.get("mha")
    if mha is not None:
        facts = dict(heads=c.n_heads, diff=i18n.scientific(mha.max_logit_diff), kv=c.n_kv_heads,
                     times=i18n.number(mha.bytes_per_token / gqa.bytes_per_token, 0))
        sentences.append((
            _("MHA gives each of the {heads} query heads its own copy of the key/value head it shared: **the same "
              "numbers** (max |Δ logit| = 0, bit for bit), and {times}× the cache: the model's grouped-query attention "
              "was trained with {kv} key/value heads, so sharing them costs it nothing.")
            if mha.max_logit_diff == 0.0 else
            _("MHA gives each of the {heads} query heads its own copy of the key/value head it shared: the same "
              "numbers up to rounding (max |Δ logit| = {diff}), and {times}× the cache: the model's grouped-query "
              "attention was trained with {kv} key/value heads, so sharing them costs it nothing.")).format(**facts))
    mqa = by_key.get("mqa")
    twin = next((r for r in rows if r.variant.family == "latent" and mqa is not None
                 and r.floats_per_layer == mqa.floats_per_layer), None)
    if mqa is not None and twin is not None:
        facts = dict(floats=twin.floats_per_layer, kv=c.n_kv_heads, mqa=fmt(mqa.perplexity, 0),
                     latent=fmt(twin.perplexity, 0),
                     times=fmt(mqa.perplexity / twin.perplexity, 1), model=fmt(gqa.perplexity, 1))
        if twin.perplexity < mqa.perplexity:
            sentences.append(_(
                "At the same {floats} floats per token per layer, MQA (one key and one value head) reaches perplexity "
                "**{mqa}** and the latent cache of rank {floats} **{latent}** ({times}× lower; the model: {model}): "
                "the best rank-{floats} summary of all {kv} heads keeps more than their average.").format(**facts))
        else:
            sentences.append(_(
                "At the same {floats} floats per token per layer, on your text MQA reaches perplexity {mqa} and the "
                "latent cache {latent}: the latent cache is not better here.").format(**facts))
    full = next((r for r in rows if r.variant.kind == ("latent", llm.latent_full_rank(c))), None)
    if full is not None:
        sentences.append(_(
            "At rank {rank} the latent cache has the model's own size and is the model again: max |Δ logit| {diff}, "
            "perplexity {ppl}.").format(rank=full.floats_per_layer, diff=i18n.scientific(full.max_logit_diff),
                                        ppl=fmt(full.perplexity, 2)))
    windows = [r for r in rows if r.variant.family == "window"]
    if windows:
        best = min(windows, key=lambda r: r.perplexity)
        sentences.append(_(
            "A window stops the cache growing: {variant} costs {bytes} bytes per token of your text (and less on a "
            "longer one) at perplexity {ppl}.").format(variant=variant_label(c, best.variant),
                                                        bytes=i18n.integer(round(best.bytes_per_token)),
                                                        ppl=fmt(best.perplexity, 1)))
    return sentences


def measured(_model: llm.LlamaModel, ids: tuple[int, ...], variant: CacheVariant, score_from: int,
             _reference: Callable[[llm.LlamaModel, tuple[int, ...]], np.ndarray]) -> Measured:
    """:func:`measure` against the model's own logits, read from ``_reference`` (the cached
    :func:`reference_logits`) when a measurement is made."""
    return measure(_model, ids, variant, _reference(_model, ids), score_from)


def sweep_step(config: llm.LlamaConfig, total: int, i: int, variant: CacheVariant) -> str:
    """The progress bar's text before ``variant``, row ``i`` (from 0) of ``total``, is measured."""
    what = (_("converting [W_k | W_v] of every layer to a latent cache (the factorisation runs once per "
              "server)") if variant.family == "latent" else _("converting the key/value heads") if variant.kind
            else _("running the sliding window") if variant.window else _("running the model as trained"))
    return _("Measuring {i} of {n}: {variant}: {step}…").format(
        i=i + 1, n=total, variant=variant_label(config, variant), step=what)


def prompt_limit(config: llm.LlamaConfig) -> int:
    """Tokens of the learner's text the page reads: :data:`explorer.shell.llm.PROMPT_MAX_TOKENS`, or fewer on a model
    that accepts fewer in all (``config.max_tokens``), leaving room for one token put first (section 2) and
    :data:`MAX_NEW_TOKENS` generated ones (section 4)."""
    return max(1, min(llm.PROMPT_MAX_TOKENS, config.max_tokens - 1 - MAX_NEW_TOKENS))


def limit_note(config: llm.LlamaConfig) -> str | None:
    """Why the page reads fewer than :data:`explorer.shell.llm.PROMPT_MAX_TOKENS` tokens on this model (``None`` when
    it does not): the model accepts ``config.max_tokens`` in all."""
    limit = prompt_limit(config)
    if limit >= llm.PROMPT_MAX_TOKENS:
        return None
    return _("This model accepts {max} tokens in all, so the page reads at most {limit} of your text: room for one "
             "token put first (section 2) and up to {new} generated ones (section 4).").format(
        max=config.max_tokens, limit=limit, new=MAX_NEW_TOKENS)


def first_token_note(model: llm.LlamaModel, choice: str) -> str | None:
    """What the page says when ``choice``'s text is not one token for this tokenizer (``None`` when it is, or for the
    option that drops the first token): the experiment puts exactly one token first."""
    if FIRST_CHOICES.get(choice) is None:
        return None
    n = len(first_token_ids(model, choice))
    if n == 1:
        return None
    return _n("This model's tokenizer has no single token for this choice (it writes it as {n} token), so it cannot "
              "be put first alone: pick another.",
              "This model's tokenizer has no single token for this choice (it writes it as {n} tokens), so it "
              "cannot be put first alone: pick another.", n).format(n=n)


def latent_note(config: llm.LlamaConfig) -> str:
    """How the latent cache rebuilds this model's keys, in the run's language: then its per-head norms (qwen3,
    gemma3), biases (qwen2, gpt2) and RoPE (none for gpt2), as its attention does."""
    steps = ([_("adds the key and value biases")] if config.qkv_bias else []) + (
        [_("normalises each head's key (its per-head RMSNorm)")] if config.qk_norm else []) + (
        [_("rotates the keys by their positions (RoPE is applied after the rebuild, unlike MHA2MLA, which keeps a few "
           "rotary dimensions outside the latent, and DeepSeek-V2, which adds a separate rotary key)")]
        if config.positions == "rope" else [])
    done = i18n.list_separator().join(steps)
    return (_("The latent cache keeps c = x A ({d_model} → r floats per layer) and rebuilds every key and value from "
              "it, then {steps}.") if steps else
            _("The latent cache keeps c = x A ({d_model} → r floats per layer) and rebuilds every key and value from "
              "it (this model has no RoPE: nothing to rotate).")).format(d_model=config.d_model, steps=done)
