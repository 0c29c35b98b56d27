"""Inside a real model: the arrays of the lesson (pure NumPy on the door, :mod:`explorer.shell.llm`; no Streamlit).

Six statistics of every attention head of SmolLM2-135M-Instruct (``[n_layers, n_heads]`` each), the repeated random
prompt that reveals induction heads, the "guess, then reveal" exercise graded from the live numbers, and the causal
map's check. Every statistic is :mod:`attention.heads`' (their one home, with the repeated-random-prompt rule; their
words: :mod:`explorer.shell.head_statistics`), averaged over the query rows ``i = 2 .. n-1`` (:data:`FIRST_ROW`; the
induction score over the rows with a target). This module adds the breadth, the exercise's labels and grades.

Sources:
    * Attention sinks: Xiao et al. (2023), "Efficient Streaming Language Models with Attention Sinks", section 3.1.
    * Induction heads and the repeated-random-tokens score: Olsson et al. (2022), "In-context Learning and Induction
      Heads", section "Definitions" (prefix matching: a token attends to the token that followed an earlier
      occurrence of itself).
    * Grouped-query attention (9 query heads read 3 key/value heads): Ainslie et al. (2023). RoPE: Su et al. (2021),
      section 3.2.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from attention import heads
from explorer.shell import head_statistics as head_statistics_words
from explorer.shell import i18n, llm
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import latex_words

_, _n = translator(__name__)

DEFAULT_PROMPT = "The cat sat on the mat because it was tired"
DEFAULT_LAYER, DEFAULT_HEAD = 16, 0
"""The head the page opens: SmolLM2's layer 16, head 0, a previous-token head (tested on the default prompt)."""
FIRST_ROW = heads.FIRST_ROW
"""Statistics average over the query rows ``FIRST_ROW .. n-1`` (see the module docstring)."""
STATISTICS = head_statistics_words.STATISTICS
"""The statistics in words, :data:`explorer.shell.head_statistics.STATISTICS` (one table for every lesson)."""
repeats_too_close = heads.repeats_too_close
REPEAT_WORDS = 16
"""Words (one token each) in each copy of the repeated random prompt: 32 tokens in all."""
MIN_MARGIN = 0.25
"""A head is a clear example of its label when its largest score beats its second largest by at least this."""


# --- token ids appended by greedy decoding ------------------------------------------------------------

IDS_TEXT = re.compile(r"[0-9]+(?: [0-9]+)*")
"""How the appended ids are written (in the box and the link): whole numbers separated by one space, ``30 198 198``."""


def parse_ids(text: str, vocab_size: int) -> tuple[int, ...] | None:
    """The token ids written in ``text`` (``"30 198 198"``; ``""`` -> ``()``), or ``None`` if it is not that.

    Valid: ASCII digits without leading zeros, separated by single spaces, each id below ``vocab_size``
    (what :func:`write_ids` writes; spaces around the whole are ignored).
    """
    text = text.strip()
    if not text:
        return ()
    if not IDS_TEXT.fullmatch(text):
        return None
    parts = text.split(" ")
    if any(len(part) > 1 and part.startswith("0") for part in parts):
        return None
    ids = tuple(int(part) for part in parts)
    return ids if all(i < vocab_size for i in ids) else None


def write_ids(ids: Sequence[int]) -> str:
    """``(30, 198, 198)`` -> ``"30 198 198"`` (read back by :func:`parse_ids`)."""
    return " ".join(str(int(i)) for i in ids)


# --- head statistics (attention.heads; their words: explorer.shell.head_statistics) --------------------------


@dataclass(frozen=True)
class HeadStatistics:
    """The six statistics of every head for one prompt (:mod:`attention.heads`): float64 ``[n_layers, n_heads]`` each.

    Attributes:
        n: the prompt's tokens. values: ``{statistic key: [n_layers, n_heads]}``; ``induction`` is
            missing when no row has an induction target (:func:`attention.heads.induction_targets`: the score is
            undefined), and everything is missing when ``n < FIRST_ROW + 1`` (no row to average over).
        induction_rows: the query rows ``R`` of the induction score (empty when undefined).
        graded_rows: the query rows the exercise grades on: ``R`` when the induction score is defined, else
            ``FIRST_ROW .. n-1`` (an induction head often rests on the first token where it has nothing to copy,
            the first copy of a repeat: a sink score from those rows would not compare with an induction score
            from ``R``).
        graded: ``{label: [n_layers, n_heads]}``, every label's score on ``[0, 1]`` (:data:`LABELS`,
            :func:`graded_scores`) averaged over the same ``graded_rows``, so the scores compare.
    """

    n: int
    values: Mapping[str, np.ndarray]
    induction_rows: tuple[int, ...]
    graded_rows: tuple[int, ...] = ()
    graded: Mapping[str, np.ndarray] = field(default_factory=dict)

    @property
    def defined(self) -> bool:
        """Whether the prompt has rows to average over (at least ``FIRST_ROW + 1`` tokens)."""
        return bool(self.values)

    def get(self, key: str) -> np.ndarray | None:
        """``[n_layers, n_heads]`` of statistic ``key``, or ``None`` when it is undefined for this prompt."""
        return self.values.get(key)


def head_statistics(attentions: np.ndarray, ids: Sequence[int]) -> HeadStatistics:
    """The six statistics of every head (:func:`attention.heads.statistics`), from one forward pass's weights.

    Args:
        attentions: ``[n_layers, n_heads, n, n]`` causal attention weights (``Run.attentions``).
        ids: the ``n`` token ids (for the induction score).

    Returns:
        :class:`HeadStatistics` (float64).

    Raises:
        ValueError: ``attentions`` is not ``[..., n, n]`` for the ``n`` ids.
    """
    A = np.asarray(attentions, dtype=np.float64)
    n = A.shape[-1]
    if A.ndim < 2 or A.shape[-2] != n or len(ids) != n:
        raise ValueError(f"attentions must be [..., n, n] for the n = {len(ids)} ids, got {A.shape}")
    if n <= FIRST_ROW:
        return HeadStatistics(n, {}, ())
    targets = heads.induction_rows(ids)
    graded_rows = targets or tuple(int(i) for i in heads.rows(n))
    return HeadStatistics(n, heads.statistics(A, ids), targets, graded_rows, graded_scores(A, graded_rows, ids))


def graded_scores(A: np.ndarray, rows: Sequence[int], ids: Sequence[int]) -> dict[str, np.ndarray]:
    """Every label's score on the same query ``rows``: ``{label: [n_layers, n_heads]}`` (float64, on [0, 1]).

    sink, previous, self and induction as :func:`attention.heads.score` on those rows (induction only when
    every row has a target), broad ``H_i / log2(i + 1)``; each averaged over ``rows``. On rows with targets
    the four weights fall on different keys (a target is never 0, ``i - 1`` or ``i``), so two of them cannot
    both exceed 1/2.

    Args:
        A: ``[n_layers, n_heads, n, n]`` attention weights. rows: query rows ``>= FIRST_ROW``. ids: the tokens.
    """
    r = np.asarray(rows, dtype=int)
    scores = {key: heads.score(key, A, rows=r) for key in ("previous", "sink", "self")}
    if r.size and set(int(i) for i in r) <= set(heads.induction_rows(ids)):
        scores["induction"] = heads.induction(A, ids, rows=r)
    entropy, _defined = heads.per_row("entropy", A)
    scores["broad"] = (entropy[..., r] / np.log2(r + 1)).mean(-1)  # over its largest possible value, log2(i + 1)
    return scores


def color_range(key: str, n: int) -> tuple[float, float]:
    """The grid's colour range for statistic ``key`` on ``n`` tokens: its possible values.

    Weights: ``[0, 1]``. Entropy: ``[0, log2 n]`` (a uniform row over all ``n`` keys). Distance:
    ``[0, mean of i over the rows]`` (every query on the first token).
    """
    if key == "entropy":
        return 0.0, float(np.log2(max(n, 2)))
    if key == "distance":
        return 0.0, float(np.mean(np.arange(FIRST_ROW, max(n, FIRST_ROW + 1))))
    return 0.0, 1.0


# --- guess, then reveal -------------------------------------------------------------------------

LABELS: dict[str, str] = {  # answer key -> what the learner reads (messages: shown with ``_(LABELS[key])``)
    "previous": N_("previous token"),
    "sink": N_("first-token sink"),
    "self": N_("self"),
    "induction": N_("induction"),
    "broad": N_("broad (spread out)"),
}


@dataclass(frozen=True)
class QuizHead:
    """One head of the exercise: where it is, its ``answer`` (a :data:`LABELS` key), every score, its margin."""

    layer: int
    head: int
    answer: str
    scores: tuple[tuple[str, float], ...]
    margin: float


def quiz_heads(stats: HeadStatistics, min_margin: float = MIN_MARGIN) -> tuple[QuizHead, ...]:
    """One clear example per label: the head whose answer is that label with the largest margin.

    A head's answer is the label with the largest score (``stats.graded``); its margin is that score minus the
    second largest. A label with no head whose margin reaches ``min_margin`` is left out (and induction whenever
    the prompt repeats no token). Ordered by layer, then head. Empty when the statistics are undefined.
    """
    if not stats.defined:
        return ()
    scores = stats.graded
    labels = list(scores)
    stack = np.stack([scores[k] for k in labels])  # [n_labels, L, H]
    order = np.sort(stack, axis=0)
    answer, margin = stack.argmax(axis=0), order[-1] - order[-2]
    picked = []
    for index, label in enumerate(labels):
        candidates = np.where(answer == index, margin, -np.inf)
        best = np.unravel_index(int(np.argmax(candidates)), candidates.shape)
        if candidates[best] >= min_margin:
            layer, head = int(best[0]), int(best[1])
            picked.append(QuizHead(layer, head, label, tuple((k, float(scores[k][layer, head])) for k in labels),
                                   float(margin[layer, head])))
    return tuple(sorted(picked, key=lambda q: (q.layer, q.head)))


def grade(heads: Sequence[QuizHead], guesses: Sequence[str | None]) -> tuple[bool, ...]:
    """Each guess right or not (a missing guess, ``None``, is wrong)."""
    if len(heads) != len(guesses):
        raise ValueError(f"{len(guesses)} guesses for {len(heads)} heads")
    return tuple(g == q.answer for q, g in zip(heads, guesses, strict=True))


def grade_claim(right: Sequence[bool]) -> tuple[str, str]:
    """The grade of the answers ``right`` (:func:`grade`): the callout kind (``"success"`` when all are right, else
    ``"info"``) and the sentence, in the run's language."""
    facts = dict(right=sum(right), total=len(right))
    if all(right):
        return "success", _("**{right} of {total} right.** Every head read correctly.").format(**facts)
    return "info", _("**{right} of {total} right.**").format(**facts)


# --- the repeated prompt from the door, and the causal map's check ------------------------------------------


def repeated_prompt(_model: llm.LlamaModel, seed: int) -> tuple[str, tuple[int, ...]]:
    """The repeated random prompt of ``seed``: its text and its ids (:func:`attention.heads.repeated_random_ids`,
    :data:`REPEAT_WORDS` of the door's :func:`explorer.shell.llm.word_ids`).

    The text is the ids decoded (it starts with a space: every word keeps its own); it tokenizes back to
    exactly these ids, so the prompt box can hold it and the second copy stays an exact repeat.
    """
    ids = heads.repeated_random_ids(llm.word_ids(_model), REPEAT_WORDS, seed)
    text = llm.text(_model, ids).text
    if tuple(llm.token_ids(_model, text)) != ids:  # cannot happen for word_ids; never show a repeat that is not one
        raise ValueError(f"the repeated prompt of seed {seed} does not tokenize back to its ids")
    return text, ids


def can_repeat(_model: llm.LlamaModel) -> bool:
    """Whether the model's vocabulary has the :data:`REPEAT_WORDS` distinct whole-word tokens
    (:func:`explorer.shell.llm.word_ids`) the repeated random prompt draws (every real model does; a tiny test
    vocabulary may not)."""
    return len(set(llm.word_ids(_model))) >= REPEAT_WORDS


def no_repeat_reason(_model: llm.LlamaModel) -> str | None:
    """Why the repeated random prompt cannot be made for this model, in the run's language; ``None`` when it can."""
    if can_repeat(_model):
        return None
    return _n("This model's vocabulary has {k} whole-word token (a space and 4 to 9 lowercase letters); the repeated "
              "random prompt needs {n}.",
              "This model's vocabulary has {k} whole-word tokens (a space and 4 to 9 lowercase letters); the repeated "
              "random prompt needs {n}.", len(set(llm.word_ids(_model)))).format(
        k=len(set(llm.word_ids(_model))), n=REPEAT_WORDS)


def layer_mean(attentions: np.ndarray, layer: int) -> np.ndarray:
    """The mean of one layer's head maps: float64 ``[n, n]`` from ``attentions`` ``[n_layers, n_heads, n, n]``."""
    return attentions[layer].astype(np.float64).mean(axis=0)


def causal_check(weights: np.ndarray) -> str:
    """``largest weight above the diagonal = 0.0 · largest |row sum − 1| = 6.0e-08`` (what the map shows; the decimal
    mark of the run's language)."""
    w = np.asarray(weights, dtype=np.float64)
    mark = "," if i18n.plotly_separators()[0] == "," else "."
    return _("largest weight above the diagonal = {above} (exactly 0: the causal mask) · largest |row sum − 1| = "
             "{sum_error}").format(above=repr(float(np.triu(w, 1).max(initial=0.0))).replace(".", mark),
                                   sum_error=f"{float(np.abs(w.sum(-1) - 1).max()):.1e}".replace(".", mark))


def rows_count(n: int) -> str:
    """``1 row`` / ``30 rows`` in the run's language."""
    return _n("{n} row", "{n} rows", n).format(n=n)


def label(answer: str) -> str:
    """An exercise label (:data:`LABELS`) in the run's language."""
    return _(LABELS[answer])


def statistics(_model: llm.LlamaModel, ids: tuple[int, ...]) -> HeadStatistics:
    """:func:`head_statistics` of the prompt's forward pass."""
    return head_statistics(llm.run(_model, ids).attentions, ids)


def precision(_model: llm.LlamaModel) -> str:
    """How the loaded model's file stores its weights, in the run's language (:func:`explorer.shell.llm.precision_note`
    of the door's :func:`explorer.shell.llm.weight_storage`; the file's name when it cannot be read again)."""
    storage = llm.weight_storage(_model)
    return llm.MODEL_FILENAME if storage is None else llm.precision_note(storage)


def honest_note(stored: str, quantized: bool) -> str:
    """The intro's note on the weights (``stored``: :func:`precision`): a quantized file's numbers are close to, not
    identical with, the full-precision model's; a float file's are its own, widened exactly."""
    if quantized:
        text = _("**An honest note.** The weights are the model's quantized release (GGUF): {stored}. They are widened "
                 "to float32 here, so the numbers are close to, not identical with, the full-precision model's.")
    else:
        text = _("**An honest note.** The weights are read from the model's GGUF file: {stored}. They are widened to "
                 "float32 here exactly as stored (no quantization).")
    return text.format(stored=stored) + " " + _(
        "Every number on this page, the prediction included, is computed by this page from your prompt (NumPy, "
        "`attention.llama`); nothing is looked up.")


def head_title(layer: int, head: int) -> str:
    """``layer 16, head 0`` in the run's language (a map's title)."""
    return _("layer {layer}, head {head}").format(layer=layer, head=head)


def power_of_ten(x: float) -> str:
    """LaTeX for ``x``: ``10^{-5}`` when it is a power of ten, else ``x`` as ``%g``."""
    e = np.log10(x) if x > 0 else np.nan
    return f"10^{{{int(round(e))}}}" if np.isfinite(e) and abs(e - round(e)) < 1e-9 else f"{x:g}"


def row_list(rows: tuple[int, ...], shown: int = 12) -> str:
    """``"16, 17, 18, …"``: the first ``shown`` rows, and ``…`` when there are more; ``"16 … 31"`` for a run."""
    if len(rows) > 2 and list(rows) == list(range(rows[0], rows[-1] + 1)):
        return f"{rows[0]} … {rows[-1]}"
    return ", ".join(map(str, rows[:shown])) + (", …" if len(rows) > shown else "")


# --- this architecture's steps (every sentence decided from the loaded model's config) ---------------------------


def layer_ranges(layers: Sequence[int]) -> str:
    """``(0, 1, 2, 3, 4, 6, 7)`` -> ``"0–4 and 6–7"``; ``(5, 11)`` -> ``"5 and 11"`` (runs of consecutive layers, in the
    run's language)."""
    runs: list[list[int]] = []
    for layer in sorted(int(i) for i in layers):
        if runs and layer == runs[-1][-1] + 1:
            runs[-1].append(layer)
        else:
            runs.append([layer])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]}–{r[-1]}" for r in runs]
    if len(parts) <= 1:
        return "".join(parts)
    return _("{first} and {last}").format(first=", ".join(parts[:-1]), last=parts[-1])


def is_local(config: llm.LlamaConfig, layer: int) -> bool:
    """Whether ``layer`` is a sliding-window (local) layer (gemma3): each query sees only its last
    ``config.sliding_window`` keys."""
    return layer in config.local_layers


def attention_mask(config: llm.LlamaConfig, layer: int, n: int) -> np.ndarray:
    """Which keys each query of ``layer`` may attend to, bool ``[n, n]``: causal, and on a local layer only the last
    ``config.sliding_window`` keys (``i - j < W``), as :meth:`attention.llama.LlamaModel.head_steps`' ``mask``."""
    mask = np.tri(n, dtype=bool)
    if is_local(config, layer):
        mask &= ~np.tri(n, k=-config.sliding_window, dtype=bool)
    return mask


def base_text(base: float) -> str:
    """A RoPE base as the page writes it: a whole number in full (``1,000,000``, ``10,000`` in the run's language),
    else ``%g``."""
    return i18n.integer(int(base)) if float(base).is_integer() else i18n.general(base, 6)


def local_layers_text(config: llm.LlamaConfig) -> str | None:
    """Which layers are local (sliding window) and which global, in the run's language; ``None`` for a model without
    local layers."""
    if not config.local_layers:
        return None
    glob = [i for i in range(config.n_layers) if i not in config.local_layers]
    local = _n("Layer {layers} is local: each query sees only the keys in a window of size {w} that ends at itself "
               "(RoPE base {base}).",
               "Layers {layers} are local: each query sees only the keys in a window of size {w} that ends at itself "
               "(RoPE base {base}).", len(config.local_layers)).format(
        layers=layer_ranges(config.local_layers), w=config.sliding_window, base=base_text(config.rope_theta_local))
    if not glob:
        return local
    return local + " " + _n("Layer {layers} is global: each query sees every earlier key (RoPE base {base}).",
                            "Layers {layers} are global: each query sees every earlier key (RoPE base {base}).",
                            len(glob)).format(layers=layer_ranges(glob), base=base_text(config.rope_theta))


def parts_text(config: llm.LlamaConfig) -> str:
    """The parts of this architecture's blocks, in words (the intro's list after the shape), in the run's language:
    ``"RoPE positions, RMSNorm, SwiGLU MLP"`` for SmolLM2."""
    c = config
    parts = [_("RoPE positions") if c.positions == "rope" else _("learned absolute positions instead of RoPE")]
    parts.append(_("RMSNorm before and after attention and the MLP") if c.post_norms else llm.norm_name(c))
    if c.linear_bias:
        parts.append(_("biases on every projection"))
    elif c.qkv_bias:
        parts.append(_("biases on Q, K and V"))
    if c.qk_norm:
        parts.append(_("an RMSNorm on each head's query and key"))
    parts.append(_("{mlp} MLP").format(mlp=llm.mlp_name(c)))
    if c.embed_scale != 1.0:
        parts.append(_("the token embedding scaled by √d_model = {scale}").format(scale=i18n.general(c.embed_scale, 4)))
    if c.local_layers:
        parts.append(_n("{k} of its {n} layers local (sliding window of {w} key)",
                        "{k} of its {n} layers local (sliding window of {w} keys)", c.sliding_window).format(
            k=len(c.local_layers), n=c.n_layers, w=c.sliding_window))
    return ", ".join(parts)


def norm_sentence(config: llm.LlamaConfig) -> str:
    """What the model's norm does, for the intro's glossary, in the run's language."""
    if config.norm == "layer":
        return _("**LayerNorm** subtracts the mean of a token's vector and divides by its standard deviation, "
                 "√(var(x) + ε), then applies a learned gain and bias, before each attention and MLP and once at the "
                 "end.")
    if config.post_norms:
        return _("**RMSNorm** divides a token's vector by its root mean square, √(mean(x²) + ε), times a learned "
                 "gain, before each attention and MLP, and again on what each of them writes before it joins the "
                 "stream.")
    return _("**RMSNorm** divides a token's vector by its root mean square, √(mean(x²) + ε), times a learned gain, "
             "before each attention and MLP.")


def position_sentence(config: llm.LlamaConfig) -> str:
    """How the model knows where a token stands, for the intro's glossary, in the run's language."""
    if config.positions == "learned":
        return _("**Learned positions**: the model adds a trained vector per position to each token's embedding "
                 "before block 0 (step 3 below); it has no RoPE.")
    return _("**RoPE** turns each query and key by an angle proportional to its position (step 3 below).")


def steps_overview(config: llm.LlamaConfig) -> str:
    """The six steps in one sentence, this architecture's own, in the run's language."""
    c = config
    project = _("project to Q, K, V and add their biases") if c.qkv_bias else _("project to Q, K, V")
    steps = [_("normalise ({norm})").format(norm=llm.norm_name(c)), project]
    if c.qk_norm:
        steps.append(_("normalise each head's Q and K (RMSNorm)"))
    steps.append(_("rotate Q and K by position (RoPE, new here)") if c.positions == "rope" else
                 _("no rotation (the positions were added to the embeddings: step 3 says how)"))
    steps += [_("score"), _("scale and mask"), _("softmax"), _("blend the values")]
    return _("The same steps as the walkthrough, now with the model's trained weights: {steps}.").format(
        steps=", ".join(steps))


def step_charts(config: llm.LlamaConfig) -> int:
    """The charts the six steps draw: 11 with RoPE (step 3: the angles, Q and K after RoPE), 9 with learned positions
    (step 3: the position vectors)."""
    return 11 if config.positions == "rope" else 9


def norm_latex(config: llm.LlamaConfig) -> str:
    """Step 1's formula: RMSNorm (``x / √(mean x² + ε) ⊙ g``) or LayerNorm (``(x − μ) / √(σ² + ε) ⊙ g + b``)."""
    eps = power_of_ten(config.rms_eps)
    if config.norm == "layer":
        return (r"\hat x_i = \frac{x_i - \mu_i}{\sqrt{\sigma_i^2 + \varepsilon}} \odot g + b,\qquad \mu_i = \frac{1}{"
                + str(config.d_model) + r"}\sum_k x_{ik},\quad \sigma_i^2 = \frac{1}{" + str(config.d_model)
                + r"}\sum_k (x_{ik} - \mu_i)^2,\quad \varepsilon = " + eps)
    return (r"\hat x_i = \frac{x_i}{\sqrt{\frac{1}{" + str(config.d_model) + r"}\sum_k x_{ik}^2 + \varepsilon}} "
            r"\odot g,\qquad \varepsilon = " + eps)


def norm_caption(config: llm.LlamaConfig, layer: int, n: int) -> str:
    """Step 1's caption: what ``x`` is entering ``layer`` (block 0: the embeddings, scaled or with the positions added
    as this model does), its shape, and the norm's learned parts, in the run's language."""
    c = config
    facts = dict(layer=layer, n=n, d_model=c.d_model, scale=i18n.general(c.embed_scale, 4))
    if layer > 0:
        entering = _n("x: the residual stream entering layer {layer} (the token embeddings after {layer} block), "
                      "shape [n, d_model] = [{n}, {d_model}].",
                      "x: the residual stream entering layer {layer} (the token embeddings after {layer} blocks), "
                      "shape [n, d_model] = [{n}, {d_model}].", layer).format(**facts)
    elif c.positions == "learned":
        entering = _("x: the residual stream entering layer 0, each token's embedding plus its position's learned "
                     "vector (step 3), shape [n, d_model] = [{n}, {d_model}].").format(**facts)
    elif c.embed_scale != 1.0:
        entering = _("x: the residual stream entering layer 0, the token embeddings times √d_model = {scale}, shape "
                     "[n, d_model] = [{n}, {d_model}].").format(**facts)
    else:
        entering = _("x: the residual stream entering layer 0, the token embeddings, shape [n, d_model] = "
                     "[{n}, {d_model}].").format(**facts)
    learned = (_("μ, σ²: the mean and variance of each token's {d_model} numbers; g, b: the layer's learned gain and "
                 "bias.").format(**facts) if c.norm == "layer" else
               _("g: the layer's learned gain. No mean subtraction, no bias."))
    return entering + " " + learned + " " + _("Every head of the layer starts from this x̂.")


def qkv_latex(config: llm.LlamaConfig, head: int, kv_head: int) -> list[str]:
    """Step 2's formulas: the projections (with the biases the model has), then the per-head norm of q and k (qwen3,
    gemma3)."""
    b = config.qkv_bias

    def proj(matrix: str, name: str, h: int) -> str:  # Q = x̂ W_q^(h) (+ b_q^(h))
        return rf"{matrix} = \hat x\, W_{name}^{{({h})}}" + (rf" + b_{name}^{{({h})}}" if b else "")

    lines = [r",\quad ".join((proj("Q", "q", head), proj("K", "k", kv_head), proj("V", "v", kv_head)))]
    if config.qk_norm:
        lines.append(r"q_i \leftarrow \mathrm{RMSNorm}(q_i) \odot g_q,\quad k_i \leftarrow \mathrm{RMSNorm}(k_i) "
                     r"\odot g_k")
    return lines


def qkv_caption(config: llm.LlamaConfig) -> str:
    """Step 2's sentences after the shapes: the biases, the per-head norm, and whether RoPE follows, in the run's
    language."""
    c = config
    rope = c.positions == "rope"
    out = []
    if c.qkv_bias:
        out.append(_("b_q, b_k, b_v: the heads' learned biases, added before RoPE.") if rope else
                   _("b_q, b_k, b_v: the heads' learned biases."))
    if c.qk_norm:
        out.append(_("Then each head's q and k rows are RMS-normalised over their {dh} numbers, with learned gains "
                     "g_q and g_k (before RoPE): the charts show them after it.").format(dh=c.d_head))
    out.append(_("Q and K before RoPE.") if rope else
               _("No rotation follows: these Q and K are the ones the scores use."))
    return " ".join(out)


def rope_latex(config: llm.LlamaConfig, base: float) -> list[str]:
    """Step 3's formulas for RoPE in the file's layout (``config.rope_layout``): pair ``(2i, 2i+1)`` or
    ``(i, i + d/2)``, and the speeds ``θ_i = base^(−2i/d_head)`` with the layer's own ``base``, divided by what the file
    scales them by (``config.rope_scaling``: Llama 3's per-pair ``f_i``, a linear factor, or both)."""
    dh = config.d_head
    a, b = ("2i", "2i+1") if config.rope_layout == "adjacent" else ("i", f"i+{dh // 2}")
    pair = (r"\begin{pmatrix} q'_{" + a + r"} \\ q'_{" + b + r"} \end{pmatrix} = "
            r"\begin{pmatrix} \cos p\theta_i & -\sin p\theta_i \\ \sin p\theta_i & \cos p\theta_i \end{pmatrix}"
            r"\begin{pmatrix} q_{" + a + r"} \\ q_{" + b + r"} \end{pmatrix}")
    b = f"{int(base)}" if float(base).is_integer() else f"{base:g}"
    factor = f"{config.rope_scaling_factor:g}"
    divide = {None: "", "llama3": " / f_i", "linear": f" / {factor}",
              "llama3+linear": rf" / ({factor}\, f_i)"}[config.rope_scaling]
    return [pair, rf"\theta_i = {b}^{{-2i/{dh}}}{divide},\quad i = 0 \dots {dh // 2 - 1}"]


def rope_text(config: llm.LlamaConfig, layer: int) -> str:
    """Step 3's explanation: what RoPE does, which coordinates this model's file pairs, whether the file scales the
    speeds (``config.rope_scaling``: Llama 3's per-pair factors, their smallest and largest, or a linear factor) and
    (gemma3) the layer's own base, in the run's language."""
    c, half = config, config.d_head // 2
    text = _("Each pair of coordinates of a query or key at position *p* turns by the angle *p*·θᵢ (Su et al. 2021), "
             "so the score of query *i* and key *j* depends on their distance *i − j*, not on where they stand.")
    if c.rope_layout == "adjacent":
        text += " " + _("**Coordinate layout:** Q and K are shown as the model file stores them (GGUF): a pair is two "
                        "*adjacent* coordinates (2i, 2i+1). Hugging Face `transformers` orders the same numbers "
                        "differently (it pairs i with i + {half}, “rotate_half”); the scores and weights are "
                        "identical.").format(half=half)
    else:
        text += " " + _("**Coordinate layout:** this model's file pairs coordinate i with i + {half} (*split halves*, "
                        "as Hugging Face `transformers`' “rotate_half”), not two adjacent coordinates (2i, 2i+1) as "
                        "llama files do; the scores and weights do not depend on the layout.").format(half=half)
    if c.rope_freq_factors is not None:
        text += " " + _("**Scaled speeds:** this file divides each pair's θᵢ by its own factor, between {smallest} and "
                        "{largest} (Llama 3's RoPE scaling), so those pairs turn more slowly.").format(
            smallest=i18n.general(min(c.rope_freq_factors), 3), largest=i18n.general(max(c.rope_freq_factors), 3))
    if c.rope_scaling_factor != 1.0:
        text += " " + _("**Scaled speeds:** this file divides every θᵢ by {factor} (linear RoPE scaling), as if the "
                        "positions were {factor} times closer.").format(factor=i18n.general(c.rope_scaling_factor, 3))
    if c.local_layers:
        local = is_local(c, layer)
        text += " " + (_("Layer {layer} is a local layer: its RoPE base is {base} (the global layers use {other}).")
                       if local else
                       _("Layer {layer} is a global layer: its RoPE base is {base} (the local layers use "
                         "{other}).")).format(
            layer=layer, base=base_text(c.rope_theta_local if local else c.rope_theta),
            other=base_text(c.rope_theta if local else c.rope_theta_local))
    return text


def learned_positions_text(config: llm.LlamaConfig, model_name: str) -> str:
    """Step 3 for a model with learned positions (gpt2): why nothing rotates, and where the position enters, in the
    run's language (``model_name``: :func:`explorer.shell.llm.model_name`, shown as text)."""
    return _("{model} has no RoPE: Q and K are not rotated. Its positions are learned: a trained vector P[p] per "
             "position p (a row of the file's position_embd, [{context}, {d_model}]) is added to each token's "
             "embedding before block 0, x₀ = E[t] + P[p]. Every block reads the position from the stream, so Q and "
             "K already carry it from step 2 on, and a score may depend on where the two tokens stand, not only on "
             "their distance.").format(model=model_name, context=i18n.integer(config.context_length),
                                       d_model=config.d_model)


def mask_title(config: llm.LlamaConfig, layer: int) -> str:
    """Step 5's title: ``5 · ÷ √64, causal mask, softmax`` (a local layer's mask is also a window)."""
    if is_local(config, layer):
        return _("5 · ÷ √{dh}, causal and sliding-window mask, softmax").format(dh=config.d_head)
    return _("5 · ÷ √{dh}, causal mask, softmax").format(dh=config.d_head)


def mask_latex(config: llm.LlamaConfig, layer: int) -> str:
    """Step 5's mask ``M_ij`` in LaTeX, its words in the run's language: ``−∞`` for the future (and, on a local layer,
    for keys ``W`` or more positions back), else 0."""
    if is_local(config, layer):
        return r"M_{ij} = " + latex_words(
            _("{minus_infinity} for {condition} (the future) or {far} (outside the window), else {zero}"),
            minus_infinity=r"-\infty ", condition=" j > i ", far=rf" i - j \ge {config.sliding_window} ", zero=" 0")
    return r"M_{ij} = " + latex_words(_("{minus_infinity} for {condition} (the future), else {zero}"),
                                      minus_infinity=r"-\infty ", condition=" j > i ", zero=" 0")


def keys_seen(config: llm.LlamaConfig, layer: int, key: str = "j") -> str:
    """The keys query ``i`` of ``layer`` sums over, in LaTeX, with ``key`` as the key's index: ``j \\le i``, or
    ``i - W < j \\le i`` on a local layer."""
    if is_local(config, layer):
        return rf"i - {config.sliding_window} < {key} \le i"
    return rf"{key} \le i"


def masked_caption(config: llm.LlamaConfig, layer: int, n: int) -> str:
    """What the grey cells of a map of ``layer`` are, in the run's language."""
    if is_local(config, layer):
        return _n("masked cells (the future, and keys {w} or more positions back: layer {layer} is local, a window "
                  "of {w} key) are grey: −∞ before the softmax",
                  "masked cells (the future, and keys {w} or more positions back: layer {layer} is local, a window "
                  "of {w} keys) are grey: −∞ before the softmax", config.sliding_window).format(
            w=config.sliding_window, layer=layer)
    return _("masked cells (the future) are grey: −∞ before the softmax")


def layer_kind(config: llm.LlamaConfig, layer: int) -> str | None:
    """One sentence on whether ``layer`` is local or global (a model with local layers), else ``None``."""
    if not config.local_layers:
        return None
    if is_local(config, layer):
        return _n("Layer {layer} is local: each query sees only its last {w} key (itself included), so the map is "
                  "a band along the diagonal once the prompt is longer than that.",
                  "Layer {layer} is local: each query sees only its last {w} keys (itself included), so the map is "
                  "a band along the diagonal once the prompt is longer than that.", config.sliding_window).format(
            layer=layer, w=config.sliding_window)
    return _("Layer {layer} is global: each query sees every earlier key.").format(layer=layer)


def gqa_title(config: llm.LlamaConfig) -> str:
    """The key/value section's title: grouped-query, multi-query or plain multi-head attention."""
    if config.group_size == 1:
        return _("Multi-head attention: each query head has its own key/value head")
    return _("Grouped-query attention: {g} query heads, one key/value head").format(g=config.group_size)


def gqa_text(config: llm.LlamaConfig, head: int, model_name: str) -> str:
    """How the query heads of the model share key/value heads, with ``head``'s group named, in the run's language
    (``model_name``: :func:`explorer.shell.llm.model_name`)."""
    c, g = config, config.group_size
    kv = head // g
    cache = _("(The KV cache: the keys and values of the tokens so far, which a decoder keeps while it generates "
              "instead of computing them again; “Generating with a KV cache” builds it.)")
    if g == 1:
        return _("{model} gives each of its {heads} query heads its own key and value projections (multi-head "
                 "attention, no grouping): head {head} reads key/value head {head} alone, and the KV cache holds "
                 "{heads} heads' keys and values per layer.").format(model=model_name, heads=c.n_heads,
                                                                     head=head) + " " + cache
    others = [str(h) for h in range(kv * g, kv * g + g) if h != head]
    if len(others) > 1:
        sharing = _("Head {head} shares **key/value head {kv}** with heads {others} and {last}").format(
            head=head, kv=kv, others=", ".join(others[:-1]), last=others[-1])
    else:
        sharing = _("Head {head} shares **key/value head {kv}** with head {other}").format(
            head=head, kv=kv, other="".join(others))
    if c.n_kv_heads == 1:
        return _("{model} has {heads} query heads but a single key/value head (multi-query attention): every query "
                 "head reads it. {sharing}: the same K and V rows, its own queries, so its own map. The KV cache "
                 "holds one head's keys and values per layer instead of {heads} (1/{g} of the memory).").format(
            model=model_name, heads=c.n_heads, g=g, sharing=sharing) + " " + cache
    return _("{model} has {heads} query heads but only {kv_heads} key/value heads (Ainslie et al. 2023): query head "
             "*h* reads key/value head *h* // {g}. {sharing}: the same K and V rows, its own queries, so its own map. "
             "The KV cache holds {kv_heads} heads' keys and values per layer instead of {heads} (1/{g} of the "
             "memory).").format(model=model_name, heads=c.n_heads, kv_heads=c.n_kv_heads, g=g,
                                sharing=sharing) + " " + cache


def groups_caption(config: llm.LlamaConfig) -> str | None:
    """The grid's note on its key/value groups (``None`` when every query head has its own)."""
    g = config.group_size
    if g == 1:
        return None
    return _("The thin dark lines part the columns into the {kv} key/value groups: heads 0 … {last} read key/value "
             "head 0, and so on ({g} query heads per key/value head).").format(kv=config.n_kv_heads, last=g - 1, g=g)


def tokens_caption(n_tokens: str, vocab: str, sentencepiece: bool, bos: bool) -> str:
    """The prompt's tokens caption: the tokenizer's kind and whether a BOS token comes first, as the model file says
    (``n_tokens``, ``vocab``: already written out), in the run's language."""
    kind = (_("SentencePiece-style BPE with byte fallback, {vocab} pieces") if sentencepiece else
            _("byte-level BPE, {vocab} pieces")).format(vocab=vocab)
    first = (_("A BOS token is put first, as the model file says.") if bos else
             _("No BOS token is added, as the model file says."))
    return _("{tokens} ({kind}; ␣ = a space, ↵ = a new line, \\xNN = one byte of a character split over two or more "
             "tokens: UTF-8 writes a character in 1 to 4 bytes, 👍 in 4, and BPE may cut between any two).").format(
        tokens=n_tokens, kind=kind) + " " + first + " " + _(
        "(BOS: a “beginning of sequence” token some models put before every text.)")


def logits_latex(config: llm.LlamaConfig, tied: bool | None) -> str:
    """The prediction's logits formula: the final norm (the model's) and the output matrix (``E`` when the file ties
    it to the embedding, else ``W_U``)."""
    return (r"\text{logits}_{n-1} = \mathrm{" + llm.norm_name(config) + r"}(x^{(" + str(config.n_layers)
            + r")}_{n-1})\, " + (r"E^\top" if tied else r"W_U^\top"))


def logits_caption(vocab: str, tied: bool | None, k: int, share: str) -> str:
    """The prediction's caption: the output matrix (tied or not, as the file says; ``None``: not read), softmax."""
    matrix = {True: _("the output projection is the embedding matrix E, tied"),
              False: _("the output projection W_U is the file's own matrix, not tied to E"),
              None: _("the output projection W_U")}[tied]
    return _("The last position's logits over all {vocab} tokens ({matrix}), softmax in float64. The top {k} hold "
             "{share} of the probability.").format(vocab=vocab, matrix=matrix, k=k, share=share)
