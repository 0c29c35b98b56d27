"""Arrays for the walkthrough: the weight initialisation, the √d_k switch, and what they do to the scores.

Pure NumPy on top of :mod:`attention` (no Streamlit). The sentence's weights can be drawn at another scale and the
division by √d_k switched off; every sentence the page writes about the scores' variance and the softmax's saturation
is measured from the arrays it shows (issue #18, item 1). Source: lesson steps 2-5; Vaswani et al. (2017) §3.2.1 and
footnote 4.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

import attention as A
from explorer.shell import i18n
from explorer.shell.i18n import N_, translator
from explorer.shell.settings import Settings, token_labels
from explorer.shell.textviews import fmt, md_code

_, _n = translator(__name__)

INITS = {  # value (also the link's) -> how the page describes it (a message: shown with _(INITS[init]))
    "lesson": N_("N(0, 2/(d_model + d_k)), as in the lesson"),
    "unit-variance": N_("N(0, 1/d_model): query and key components as spread as X's entries (≈ 1 when theirs is)"),
}
INIT_NAMES = {  # value -> the option's name on the page (a message: shown with _(INIT_NAMES[init]))
    "lesson": N_("lesson"),
    "unit-variance": N_("unit-variance"),
}
DEFAULT_INIT = "lesson"
NEAR_ONE = (0.5, 2.0)  # a measured variance in this range is "near 1"
SATURATED = 0.8  # a mean top weight at or above this: the softmax is close to one-hot (saturated)

# The Turkish lesson's softmax illustration (issue #18, item 2): its logits and the row it prints.
PRINTED_LOGITS = (2.1, 0.3, 0.1, 0.8, 0.2)
PRINTED_ROW = (0.52, 0.09, 0.07, 0.14, 0.08)


def init_std(init: str, d_model: int, d_out: int) -> float:
    """Standard deviation of each weight under ``init`` for a ``[d_model, d_out]`` projection: ``"lesson"``:
    ``sqrt(2 / (d_model + d_out))`` (:class:`attention.SelfAttention`'s Xavier-like scale); ``"unit-variance"``:
    ``sqrt(1 / d_model)`` (a unit-variance input row gives unit-variance components). ``ValueError`` for another."""
    if init == "lesson":
        return math.sqrt(2.0 / (d_model + d_out))
    if init == "unit-variance":
        return math.sqrt(1.0 / d_model)
    raise ValueError(f"init must be one of {tuple(INITS)}, got {init!r}")


def weight_matrices(d_model: int, d_k: int, d_v: int, seed: int, init: str) -> dict[str, np.ndarray]:
    """``{"W_q", "W_k", "W_v"}``: ``[d_model, d_k]``, ``[d_model, d_k]``, ``[d_model, d_v]`` float64: the draws of
    ``SelfAttention(d_model, d_k, d_v, seed)`` (one ``default_rng(seed)``, in the order ``W_q, W_k, W_v``) scaled to
    :func:`init_std` (``"lesson"``: exactly that layer's weights; ``"unit-variance"``: the same pattern, rescaled)."""
    layer = A.SelfAttention(d_model, d_k, d_v, seed=seed)
    W = {"W_q": layer.W_q, "W_k": layer.W_k, "W_v": layer.W_v}
    if init == "lesson":
        return W
    widths = {"W_q": d_k, "W_k": d_k, "W_v": d_v}
    return {name: M * (init_std(init, d_model, widths[name]) / init_std("lesson", d_model, widths[name]))
            for name, M in W.items()}


def steps(X: np.ndarray, W_q: np.ndarray, W_k: np.ndarray, W_v: np.ndarray, scaled: bool = True) -> A.AttentionSteps:
    """Lesson steps 1-6 on ``X [n, d_model]`` (:func:`attention.attention_steps`, whose ``ValueError`` it raises);
    ``scaled=False`` skips step 4: ``scaled_scores`` holds the raw scores and ``weights = softmax(Q Kᵀ)``."""
    s = A.attention_steps(X, W_q, W_k, W_v)
    if scaled:
        return s
    output, weights = A.scaled_dot_product_attention(s.Q, s.K, s.V, scale=1.0)  # softmax(Q Kᵀ) V: [n, d_v], [n, n]
    return A.AttentionSteps(X=s.X, Q=s.Q, K=s.K, V=s.V, scores=s.scores, scaled_scores=s.scores,
                            mask=None, weights=weights, output=output)


def mean_top_weight(scores: np.ndarray) -> float:
    """The mean over rows of the largest softmax weight of ``scores [n, n]`` (1/n: uniform, 1: one-hot)."""
    return float(A.softmax(scores).max(axis=-1).mean())


@dataclass(frozen=True)
class ScaleStory:
    """What dividing by √d_k does to this run's scores, measured (lesson step 4).

    Attributes:
        n, d_k: tokens and key width. scaled: whether the page divides by √d_k.
        var_q, var_k: variance of the query and key components (``Q [n, d_k]``, ``K [n, d_k]``, all entries).
        raw_var, scaled_var: variance of the ``n²`` scores ``Q Kᵀ`` and of ``Q Kᵀ / √d_k``.
        top_raw, top_scaled: :func:`mean_top_weight` of the raw and of the scaled scores.
        row_sum_error: the largest ``|Σ_j w_ij − 1|`` of the page's weights (its caption states it).
    """

    n: int
    d_k: int
    scaled: bool
    var_q: float
    var_k: float
    raw_var: float
    scaled_var: float
    top_raw: float
    top_scaled: float
    row_sum_error: float

    @property
    def top(self) -> float:
        """The mean top weight of the scores the softmax gets on this page."""
        return self.top_scaled if self.scaled else self.top_raw

    def variance_line(self) -> str:
        """One sentence with the measured variances (``n > 1``) or why there is none (one token)."""
        if self.n == 1:
            return _("One token: one score, so there is no spread to measure, and its weight is 1 whatever the scale.")
        return _("Measured on these {n_scores} scores: variance of QKᵀ = {raw_var}, of QKᵀ/√d_k = {scaled_var} "
                 "(dividing by √{d_k} divides the variance by {d_k}). The query and key components have variance "
                 "{var_q} and {var_k} here.").format(
            n_scores=self.n * self.n, raw_var=fmt(self.raw_var, 3), scaled_var=fmt(self.scaled_var, 3), d_k=self.d_k,
            var_q=fmt(self.var_q, 3), var_k=fmt(self.var_k, 3))

    def claim_line(self) -> str:
        """What the "variance near 1" argument says, and whether it holds for this run (measured)."""
        if self.n == 1:
            return ""
        lo, hi = NEAR_ONE
        v = self.scaled_var if self.scaled else self.raw_var
        where = _("near 1") if lo <= v <= hi else (_("well below 1") if v < lo else _("well above 1"))
        text = _("The lesson's argument: with unit-variance query and key components, q·k has variance ≈ d_k = "
                 "{d_k}, and dividing by √d_k brings it back to ≈ 1.").format(d_k=self.d_k)
        text += " " + (_("Here the scaled scores' variance is {variance}: {where}.") if self.scaled else
                       _("Here the division is switched off, so the softmax gets QKᵀ itself, variance {variance}: "
                         "{where}.")).format(variance=fmt(v, 3), where=where)
        if v < lo:
            text += " " + _("The softmax gets smaller scores than the argument assumes, so its weights are flatter.")
        elif v > hi:
            text += " " + _("The softmax gets larger scores than the argument assumes, so its weights are sharper.")
        return text

    def softmax_line(self) -> str:
        """The measured mean top weight with and without the division, against uniform (1/n) and one-hot (1)."""
        if self.n == 1:
            return ""
        other_top = self.top_raw if self.scaled else self.top_scaled
        values = dict(top=fmt(self.top, 3), n=self.n, uniform=fmt(1 / self.n, 3), other=fmt(other_top, 3))
        if self.top >= SATURATED:
            line = (_("Mean top weight per row with ÷√d_k: {top} — close to one-hot: the softmax is saturated and its "
                      "gradients nearly vanish (uniform would be 1/{n} = {uniform}, one-hot 1); without it: {other}.")
                    if self.scaled else
                    _("Mean top weight per row without ÷√d_k: {top} — close to one-hot: the softmax is saturated and "
                      "its gradients nearly vanish (uniform would be 1/{n} = {uniform}, one-hot 1); with it: {other}."))
        else:
            line = (_("Mean top weight per row with ÷√d_k: {top} (uniform would be 1/{n} = {uniform}, one-hot 1); "
                      "without it: {other}.") if self.scaled else
                    _("Mean top weight per row without ÷√d_k: {top} (uniform would be 1/{n} = {uniform}, one-hot "
                      "1); with it: {other}."))
        return line.format(**values)


def scale_story(s: A.AttentionSteps, scaled: bool) -> ScaleStory:
    """Measure :class:`ScaleStory` from ``s`` (its ``Q``, ``K``, ``scores``, ``weights``; ``scaled``: as the page)."""
    n, d_k = s.Q.shape
    raw, sc = s.scores, s.scores / math.sqrt(d_k)
    return ScaleStory(n=n, d_k=d_k, scaled=scaled, var_q=float(s.Q.var()), var_k=float(s.K.var()),
                      raw_var=float(raw.var()), scaled_var=float(sc.var()),
                      top_raw=mean_top_weight(raw), top_scaled=mean_top_weight(sc),
                      row_sum_error=float(np.abs(s.weights.sum(axis=-1) - 1).max()))


@dataclass(frozen=True)
class SoftmaxCheck:
    """The lesson's printed softmax row against the true softmax of its logits (issue #18, item 2)."""

    logits: tuple[float, ...]
    printed: tuple[float, ...]
    true: tuple[float, ...]


def softmax_check(logits=PRINTED_LOGITS, printed=PRINTED_ROW) -> SoftmaxCheck:
    """:class:`SoftmaxCheck` with the true row computed by :func:`attention.softmax`."""
    true = A.softmax(np.asarray(logits, dtype=float))
    return SoftmaxCheck(tuple(map(float, logits)), tuple(map(float, printed)), tuple(map(float, true)))


def repeated_word_rows(tokens: tuple[str, ...], X: np.ndarray) -> list[tuple[str, int, int, float]]:
    """For each word that occurs more than once: ``(word, first, other, max |X[first] - X[other]|)`` per copy."""
    first: dict[str, int] = {}
    out = []
    for i, t in enumerate(tokens):
        if t in first:
            out.append((t, first[t], i, float(np.abs(X[first[t]] - X[i]).max())))
        else:
            first[t] = i
    return out


NUMBER_LIMIT = 1e6  # an edited cell beyond this would only overflow the softmax


def cell_text(x: float) -> str:
    """How an editable cell shows the number ``x``: shortest exact decimal (``1``, ``0.1``, ``-2.5``), with the run's
    decimal mark (``0,1`` in pt and tr; :func:`parse_cell` reads both)."""
    text = np.format_float_positional(float(x), trim="-")
    return text if i18n.current() == i18n.DEFAULT else text.replace(".", fmt(0.5, 1)[1])


def parse_cell(cell, limit: float = NUMBER_LIMIT) -> tuple[float | None, str | None]:
    """``(value, None)`` or ``(None, what is wrong)`` for one cell of an editable matrix or table (issue #18, item 12).

    A cell holds the learner's text. Blank (or missing) -> ``"is blank"``; text that is not a
    number -> ``"holds `abc`, which is not a number"`` (the text shown literally); ``nan``/``inf``
    -> not finite; beyond ±``limit`` -> out of range. A decimal comma (``0,5``) is read as a point.
    """
    if cell is None or (isinstance(cell, float) and math.isnan(cell)) or (isinstance(cell, str) and not cell.strip()):
        return None, _("is blank")
    if isinstance(cell, bool):
        return None, _("holds {text}, which is not a number").format(text=md_code(cell))
    text = str(cell).strip()
    try:
        x = float(text.replace(",", ".") if text.count(",") == 1 and "." not in text else text)
    except ValueError:
        return None, _("holds {text}, which is not a number").format(text=md_code(text))
    if not math.isfinite(x):
        return None, _("holds {text}, which is not a finite number").format(text=md_code(text))
    if abs(x) > limit:
        return None, _("holds {text}, beyond ±{limit}").format(text=md_code(text), limit=f"{limit:g}")
    return x, None


def cells_in_language(cells: list[list]) -> list[list]:
    """The editable cells ``[rows][columns]`` written again in the run's language: a number typed or shown in another
    one (``0.1`` on an English page) becomes :func:`cell_text` of its value (``0,1`` in pt and tr); a cell that is not
    a number (``abc``, blank) keeps what the learner typed."""
    return [[cell_text(x) if (x := parse_cell(c)[0]) is not None else c for c in row] for row in cells]


def parse_matrix(cells, rows, cols, name: str) -> tuple[np.ndarray, list[str]]:
    """``(values [r, c] float64, problems)`` for a grid of cell texts; a bad cell is NaN in ``values``.

    Each problem names the matrix, the cell's row and column labels, and what is wrong (:func:`parse_cell`).
    """
    cells = np.asarray(cells, dtype=object)
    values = np.full(cells.shape, np.nan)
    problems = []
    for (r, c), cell in np.ndenumerate(cells):
        x, err = parse_cell(cell)
        if err is None:
            values[r, c] = x
        else:
            problems.append(_("{matrix}: the cell in row {row}, column {column} {problem}").format(
                matrix=name, row=rows[r], column=cols[c], problem=err))
    return values, problems


# --- the page's two sources, computed ------------------------------------------------------------------------


@dataclass(frozen=True)
class LessonExample:
    """The lesson's pipeline example (worked example 1) as the learner edited it: ``X [3, 4]``, ``W_* [4, 4]``."""

    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray

    @property
    def tokens(self) -> tuple[str, ...]:
        return tuple(A.PIPELINE_EXAMPLE.tokens)

    def weight_matrices(self) -> dict[str, np.ndarray]:
        return {"W_q": self.W_q, "W_k": self.W_k, "W_v": self.W_v}


Source = Settings | LessonExample


def computed(source: Source, init: str = DEFAULT_INIT, scaled: bool = True
             ) -> tuple[A.AttentionSteps, dict[str, np.ndarray], list[str], tuple[str, ...]]:
    """``(steps, {"W_q", "W_k", "W_v"}, labels, tokens)`` for ``source`` (lesson worked examples 1 and 2): ``init``
    draws the sentence's weights (:func:`weight_matrices`; the lesson example keeps its own), ``scaled=False`` leaves
    out the division by √d_k (:func:`steps`); at the defaults, :meth:`explorer.shell.settings.Settings.steps`.
    """
    labels, tokens = token_labels(source.tokens), tuple(source.tokens)
    if isinstance(source, Settings) and init == DEFAULT_INIT and scaled:
        return source.steps(), source.weight_matrices(), labels, tokens
    W = source.weight_matrices() if isinstance(source, LessonExample) else weight_matrices(
        source.d_model, source.d_k, source.d_v, source.seed, init)
    return steps(source.X, **W, scaled=scaled), W, labels, tokens


def csv(source: Source, init: str, scaled: bool, name: str) -> str:
    """The attention ``"weights"`` ``[n, n]`` or the ``"output"`` ``[n, d_v]`` as CSV with labelled rows (a download:
    built when it is clicked)."""
    result, _W, labels, _tokens = computed(source, init, scaled)
    matrix = getattr(result, name)
    cols = labels if name == "weights" else [f"dim {j}" for j in range(matrix.shape[1])]  # a CSV stays in English
    return pd.DataFrame(matrix, index=labels, columns=cols).to_csv()


def scenario_json(source: Source, init: str, scaled: bool, params: dict) -> str:
    """The whole scenario (parameters, inputs X and W, every intermediate) as JSON (a download)."""
    result, W, _labels, _tokens = computed(source, init, scaled)
    scenario = {
        "parameters": params,
        "inputs": {"X": result.X.tolist(), **{k: np.asarray(v).tolist() for k, v in W.items()}},
        "results": {"Q": result.Q.tolist(), "K": result.K.tolist(), "V": result.V.tolist(),
                    "scores": result.scores.tolist(), "scaled_scores": result.scaled_scores.tolist(),
                    "attention_weights": result.weights.tolist(), "output": result.output.tolist()},
    }
    return json.dumps(scenario, indent=1, ensure_ascii=False)


def embedding_claim(source: Settings, choice: str) -> str:
    """Which embeddings the sentence uses, checked on its repeated words (item 3): ``choice`` is the sidebar's value
    (``"auto"``, ``"lesson"``, ``"per-token"``), ``source.embedding`` what it resolved to for this sentence."""
    if choice != "auto":
        why = _("chosen in the sidebar")
    elif source.embedding == "lesson":
        why = _("auto: this is the lesson's sentence")
    else:
        why = _("auto: a sentence of your own")
    if source.embedding == "per-token":
        text = _("Embeddings: per-token ({why}): each distinct word has its own vector, so copies of a word "
                 "get identical rows of X, Q, K and V.").format(why=why)
    else:
        text = _("Embeddings: the lesson's random rows ({why}): row i is the i-th random draw, so a row belongs "
                 "to its position, not to its word (copies of a word get different rows).").format(why=why)
    repeats = repeated_word_rows(source.tokens, source.X)
    if repeats:
        shown = repeats[:3]
        pairs = ", ".join(_("{word} ({i}) and ({j})").format(word=md_code(word), i=i, j=j) for word, i, j, _d in shown)
        rest = len(repeats) - len(shown)
        if rest:
            pairs += " " + _n("(and {n} more copy)", "(and {n} more copies)", rest).format(n=rest)
        diff = max(d for *_r, d in shown)
        if diff == 0:
            text += " " + _("Here {pairs}: identical rows.").format(pairs=pairs)
        elif source.embedding == "per-token" and source.positional:
            text += " " + _("With positional encoding added, copies differ by their positions' encodings: {pairs} "
                            "differ by up to {diff} per entry of X, so their rows of Q, K and V differ too.").format(
                pairs=pairs, diff=fmt(diff, 3))
        else:
            text += " " + _("Here {pairs} differ by up to {diff} per entry of X.").format(
                pairs=pairs, diff=fmt(diff, 3))
    return text
