"""Arrays for the multi-head page (pure NumPy, no Streamlit): the split, every head, the checks.

Lesson exercise 2: split Q, K, V into ``n_heads`` heads of width ``d_head = d_model / n_heads``, attend in each head,
concatenate, project with ``W_o`` (Vaswani et al. 2017, section 3.2.2). The page's settings are one :class:`MultiHead`.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

import attention as A
from explorer.shell import i18n
from explorer.shell.settings import Settings
from explorer.shell.textviews import dim_labels, fmt, head_labels

_, _n = i18n.translator(__name__)

GRID_MAX = 16  # heads drawn at once in the per-head grids (more: a window of them, chosen on the page)

OVERLAP_MAX_HEADS = 64  # above this many heads the head-to-head matrix is not computed (cost ~ n_heads² n²)
DEFAULT_SEED = 42  # the sidebar's default seed: the page seeds the weights with the sidebar's seed


# --- choosing a head count ------------------------------------------------------------


def default_head_count(d_model: int) -> int:
    """The page's default ``n_heads``: 2 when it divides ``d_model`` (``d_head = 4`` at the lesson's 8), else 1."""
    return 2 if d_model % 2 == 0 else 1


# --- the split, on readable numbers ---------------------------------------------------


@dataclass(frozen=True)
class SplitExample:
    """A tiny ``split_heads`` example on numbers that say where they came from.

    Attributes:
        x: ``[n, d_model]`` with ``x[i, j] = 100 * i + j`` (hundreds = token, rest = column).
        heads: ``split_heads(x, n_heads)``, ``[n_heads, n, d_head]``.
        wrong: ``x.reshape(n_heads, n, d_head)`` (the reshape without the transpose): mixes tokens inside a head.
        stand_in: ``True`` when ``d_model``/``n_heads`` are a smaller stand-in for the page's sizes.
    """

    x: np.ndarray
    heads: np.ndarray
    wrong: np.ndarray
    n_heads: int
    d_head: int
    stand_in: bool

    @property
    def d_model(self) -> int:
        return self.x.shape[1]

    @property
    def owner(self) -> np.ndarray:
        """``[n, d_model]``: the head that owns each column of ``x`` (``column // d_head``)."""
        return np.broadcast_to(np.arange(self.d_model) // self.d_head, self.x.shape)

    @property
    def heads_owner(self) -> np.ndarray:
        """``[n_heads, n, d_head]``: which head's columns each cell of ``heads`` came from."""
        return A.split_heads(self.owner, self.n_heads)

    @property
    def wrong_owner(self) -> np.ndarray:
        """``[n_heads, n, d_head]``: which head's columns each cell of ``wrong`` came from."""
        return self.owner.reshape(self.wrong.shape)


def split_example(d_model: int, n_heads: int, n: int = 3, max_width: int = 16) -> SplitExample:
    """``split_heads`` on a ``[n, d_model]`` matrix of readable numbers: the page's ``d_model`` and ``n_heads`` while
    ``d_model <= max_width``, else a readable stand-in with ``min(n_heads, 4)`` heads of width 2 or more.

    Raises:
        ValueError: ``d_model % n_heads != 0``.
    """
    if d_model % n_heads:
        raise ValueError(f"d_model={d_model} is not divisible by n_heads={n_heads}; "
                         f"valid n_heads for d_model={d_model}: {A.valid_head_counts(d_model)}")
    stand_in = d_model > max_width
    if stand_in:
        n_heads = min(n_heads, 4)
        d_model = n_heads * max(2, 8 // n_heads)
    x = 100.0 * np.arange(n)[:, None] + np.arange(d_model)[None, :]  # [n, d_model]
    d_head = d_model // n_heads
    return SplitExample(
        x=x, heads=A.split_heads(x, n_heads), wrong=x.reshape(n_heads, n, d_head),
        n_heads=n_heads, d_head=d_head, stand_in=stand_in,
    )


# --- the check and the diagnostics ----------------------------------------------------


def per_head_loop(X, W_q, W_k, W_v, W_o, n_heads: int, is_causal: bool = False):
    """Multi-head attention as a plain loop over heads (lesson exercise 2, by hand): no ``split_heads``, no batched
    matmul; per head, its columns of Q, K, V and ``softmax(q kᵀ / sqrt(d_head)) v`` with an explicit max-subtracted
    softmax; then the heads concatenated and projected with ``W_o``.

    ``X [n, d_model]``; ``W_q, W_k, W_v, W_o [d_model, d_model]``; ``n_heads`` divides ``d_model``; ``is_causal``
    blocks key j > query i in every head. Returns ``(output [n, d_model], weights [n_heads, n, n], concat [n,
    d_model])``, float64.
    """
    n, d_model = X.shape
    d_head = d_model // n_heads
    Q, K, V = X @ W_q, X @ W_k, X @ W_v  # [n, d_model] each
    head_outputs, head_weights = [], []
    for h in range(n_heads):
        cols = slice(h * d_head, (h + 1) * d_head)  # head h owns these columns
        q, k, v = Q[:, cols], K[:, cols], V[:, cols]  # [n, d_head]
        s = q @ k.T / math.sqrt(d_head)  # [n, n]
        if is_causal:
            s = np.where(np.tri(n, dtype=bool), s, -np.inf)  # key j > query i: -inf
        e = np.exp(s - s.max(axis=1, keepdims=True))
        w = e / e.sum(axis=1, keepdims=True)  # [n, n], rows sum to 1
        head_outputs.append(w @ v)  # [n, d_head]
        head_weights.append(w)
    concat = np.concatenate(head_outputs, axis=1)  # [n, d_model]
    return concat @ W_o, np.stack(head_weights), concat


def uniform_entropy(n_keys: int, *, is_causal: bool = False) -> float:
    """The mean row entropy (nats) of attention spread evenly over the allowed keys: ``log(n_keys)`` without a
    mask; with the causal mask query ``i`` has ``i + 1`` keys, so the mean of ``log(i + 1)``. 0 for one key."""
    return float(np.mean(np.log(np.arange(1, n_keys + 1)))) if is_causal else float(np.log(n_keys))


def head_overlap(weights) -> np.ndarray:
    """How alike two heads' attention patterns are: ``[n_heads, n_heads]`` in ``[0, 1]`` from ``weights [n_heads, n_q,
    n_k]`` (non-negative; ``ValueError`` if not 3-D).

    ``overlap[a, b] = mean_i Σ_j min(w_a[i, j], w_b[i, j])``: the attention mass two heads put on the same keys,
    averaged over queries (``1 - total variation distance``). 1 = identical patterns, 0 = no key in common.
    """
    w = np.asarray(weights, dtype=float)
    if w.ndim != 3:
        raise ValueError(f"weights must have shape [n_heads, n_q, n_k], got {w.shape}")
    out = np.empty((w.shape[0], w.shape[0]))
    for a in range(w.shape[0]):  # one head against all: [h, n_q, n_k] at a time, not [h, h, n_q, n_k]
        out[a] = np.minimum(w[a], w).sum(axis=-1).mean(axis=-1)
    return out


@dataclass(frozen=True)
class MultiHead:
    """The multi-head page's settings (frozen and hashable: Streamlit's caches key on it): the sidebar's ``settings``
    (``d_k`` unused: every head is ``d_model / n_heads`` wide), ``n_heads`` (a divisor of ``d_model``), the ``seed`` of
    ``MultiHeadAttention(d_model, n_heads, seed)``'s ``W_q, W_k, W_v, W_o``, and ``is_causal`` (every head)."""

    settings: Settings
    n_heads: int
    seed: int = DEFAULT_SEED
    is_causal: bool = False

    @property
    def d_model(self) -> int:
        return self.settings.d_model

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads


@dataclass(frozen=True)
class HeadSteps:
    """The intermediates of :meth:`attention.MultiHeadAttention.steps` that the page draws (float64): ``weights
    [n_heads, n, n]``, ``head_outputs [n_heads, n, d_head]``, ``concat [n, d_model]``, ``output = concat @ W_o``.

    The scaled scores are left out: never drawn, and at 512 heads and 64 tokens they are 16 MiB of every cached
    scenario (BENCHMARKS.md, "Memory soak").
    """

    weights: np.ndarray
    head_outputs: np.ndarray
    concat: np.ndarray
    output: np.ndarray

    @property
    def mean_weights(self) -> np.ndarray:
        """Weights averaged over heads ``[n, n]`` (``nn.MultiheadAttention``'s default return)."""
        return self.weights.mean(axis=-3)


@dataclass(frozen=True)
class MultiHeadScenario:
    """Everything the multi-head page draws, for one setting of its controls.

    Attributes:
        X: embeddings ``[n, d_model]`` (the sidebar's).
        W_q, W_k, W_v, W_o: ``[d_model, d_model]`` from ``MultiHeadAttention(d_model, n_heads, seed)``.
        result: :class:`HeadSteps`, the vectorised layer's intermediates the page draws.
        mask: the causal mask ``[n, n]`` (``True`` = may attend) or ``None``.
        row_entropy: ``[n_heads, n]`` entropy (nats) of each head's weight rows.
        head_entropy: ``[n_heads]`` mean of ``row_entropy`` over queries.
        overlap: ``[n_heads, n_heads]`` :func:`head_overlap`, or ``None`` above ``OVERLAP_MAX_HEADS`` heads.
        max_diff_output, max_diff_weights: max ``|vectorised - loop|`` of the output and the per-head weights
            (:func:`per_head_loop` on the same inputs).
    """

    X: np.ndarray
    W_q: np.ndarray
    W_k: np.ndarray
    W_v: np.ndarray
    W_o: np.ndarray
    n_heads: int
    seed: int
    is_causal: bool
    result: HeadSteps
    mask: np.ndarray | None
    row_entropy: np.ndarray
    head_entropy: np.ndarray
    overlap: np.ndarray | None
    max_diff_output: float
    max_diff_weights: float

    def top_keys(self, query: int) -> tuple[np.ndarray, np.ndarray]:
        """For query ``query``: the key each head attends to most ``[n_heads]`` (int) and that weight ``[n_heads]``.

        Ties go to the first key (``argmax``).
        """
        w = self.result.weights[:, query, :]  # [n_heads, n_k]
        top = w.argmax(axis=-1)
        return top, w[np.arange(self.n_heads), top]


def multihead_scenario(settings: Settings, n_heads: int, seed: int = DEFAULT_SEED,
                       is_causal: bool = False) -> MultiHeadScenario:
    """The sidebar's sentence (``settings.X``; ``d_k`` unused) through ``MultiHeadAttention(d_model, n_heads, seed)``
    (``seed`` draws ``W_q, W_k, W_v, W_o`` in that order; ``is_causal``: the causal mask in every head), and checks.

    Raises:
        ValueError: ``d_model % n_heads != 0`` (the message lists the valid counts), empty tokens.
    """
    X = settings.X  # [n, d_model]
    layer = A.MultiHeadAttention(settings.d_model, n_heads, seed=seed)
    steps = layer.steps(X, is_causal=is_causal)
    r = HeadSteps(weights=steps.weights, head_outputs=steps.head_outputs, concat=steps.concat, output=steps.output)
    del steps  # its scaled scores and projections (16 MiB at 512 heads x 64 tokens) go before the loop runs
    loop_out, loop_w, _ = per_head_loop(X, layer.W_q, layer.W_k, layer.W_v, layer.W_o, n_heads, is_causal)
    max_diff_weights = float(np.abs(r.weights - loop_w).max())
    del loop_w
    row_h = A.entropy(r.weights)  # [n_heads, n]
    return MultiHeadScenario(
        X=X, W_q=layer.W_q, W_k=layer.W_k, W_v=layer.W_v, W_o=layer.W_o,
        n_heads=int(n_heads), seed=int(seed), is_causal=bool(is_causal), result=r,
        mask=np.tri(settings.n, dtype=bool) if is_causal else None,
        row_entropy=row_h, head_entropy=row_h.mean(axis=-1),
        overlap=head_overlap(r.weights) if n_heads <= OVERLAP_MAX_HEADS else None,
        max_diff_output=float(np.abs(r.output - loop_out).max()),
        max_diff_weights=max_diff_weights,
    )


LOOP_SOURCE = inspect.getsource(per_head_loop)  # shown on the page; read once, at import (~1 ms a call)


# --- the scenario as the page shows it ---------------------------------------------------------------------

Window = tuple[int, int]  # heads first … last + 1 shown in the grids
TABLES = ("head_weights", "mean_weights", "concat", "output")  # the "Numbers" of parts 2-3, in page order


@dataclass(frozen=True)
class View:
    """One scenario as the sections draw it: the page's settings ``mh``, their scenario ``sc``, and the heads
    ``window = (first, last + 1)`` shown in the grids (every head by default)."""

    mh: MultiHead
    sc: MultiHeadScenario
    window: Window | None = None

    @property
    def heads(self) -> Window:
        return self.window or (0, self.mh.n_heads)

    @property
    def shown(self) -> list[int]:
        return list(range(*self.heads))

    @property
    def grid_cols(self) -> int:
        return {1: 1, 2: 2, 3: 3, 4: 2}.get(len(self.shown), 3)  # at most 3: a phone's panels hold "head 15"


def numbers_title(name: str, n_heads: int) -> str:
    """The title of the expander holding table ``name`` (see :func:`table_size`)."""
    if name == "head_weights":
        return _("Numbers of every head's weights (the heads shown)") if n_heads > GRID_MAX else \
            _("Numbers of every head's weights")
    return _("Numbers of the mean over heads") if name == "mean_weights" else _("Numbers")


def table_size(mh: MultiHead, name: str, window: Window | None = None) -> tuple[int, int]:
    """``(rows, columns)`` of table ``name`` (``W_q``, ``W_k``, ``W_v``, ``W_o``, ``head_weights``, ``mean_weights``,
    ``concat``, ``output``) on the page's settings ``mh``, without computing it (``window``: every head by default)."""
    n, (a, b) = mh.settings.n, window or (0, mh.n_heads)
    if name in ("head_weights", "mean_weights"):
        return (b - a if name == "head_weights" else 1) * n, n
    return (mh.d_model if name.startswith("W_") else n), mh.d_model


def frame(v: View, name: str) -> pd.DataFrame:
    """Table ``name`` (see :func:`table_size`) with labelled rows and columns."""
    sc, r, labels, mh = v.sc, v.sc.result, v.mh.settings.labels, v.mh
    if name.startswith("W_"):
        return pd.DataFrame(getattr(sc, name), index=dim_labels(mh.d_model),
                            columns=[_("col {j} (head {h})").format(j=j, h=j // mh.d_head) for j in range(mh.d_model)])
    if name == "head_weights":
        a, b = v.heads
        return pd.DataFrame(r.weights[a:b].reshape(-1, mh.settings.n),
                            index=pd.MultiIndex.from_product([head_labels(v.shown), labels],
                                                             names=[_("head"), _("query")]), columns=labels)
    if name == "mean_weights":
        return pd.DataFrame(r.mean_weights, index=labels, columns=labels)
    return pd.DataFrame(getattr(r, name), index=labels, columns=dim_labels(mh.d_model))  # concat, output


# --- the claims ------------------------------------------------------------------------------------------


def random_weights_note(head_entropy: np.ndarray, overlap: np.ndarray | None, n: int, *, is_causal: bool,
                        link: str) -> str:
    """What part 4 shows is random weights, with this run's numbers: the heads' mean entropy as a share of the
    uniform level (the dashed line of the entropy chart) and the mean overlap of two different heads; and where
    trained heads are (``link``: the real model's lesson)."""
    ceiling = uniform_entropy(n, is_causal=is_causal)
    parts = []
    if ceiling > 0:
        parts.append(_("their entropy averages {share} of the uniform level").format(
            share=i18n.percent(float(np.mean(head_entropy)) / ceiling, 0)))
    if overlap is not None and overlap.shape[0] > 1:
        off = overlap[~np.eye(overlap.shape[0], dtype=bool)]
        parts.append(_("two different heads overlap {overlap} on average").format(overlap=fmt(float(off.mean()), 2)))
    if len(parts) == 2:
        measured = _("here {first} and {second}").format(first=parts[0], second=parts[1])
    else:
        measured = _("here {first}").format(first=parts[0]) if parts else ""
    start = (_("These heads run on **random weights** (W_q, W_k, W_v drawn from the sidebar's seed), not learned "
               "ones: {measured}.").format(measured=measured) if measured else
             _("These heads run on **random weights** (W_q, W_k, W_v drawn from the sidebar's seed), not learned "
               "ones."))
    return start + " " + _("Nothing taught them a job. To see heads that learned one (a previous-token head, an "
                           "induction head, a sink), open [A real model's heads]({link}), every head of a trained "
                           "model on your own prompt.").format(link=link)


def diff_text(x: float) -> str:
    """A difference for the check: ``"0 (same bits)"`` or ``"1.2e-16"`` (``1,2e-16`` in pt and tr)."""
    return _("0 (same bits)") if x == 0 else i18n.scientific(x, 1)


def loop_check(max_diff_output: float, max_diff_weights: float) -> tuple[str, str, str, str]:
    """The check of the vectorised layer against the loop from their largest differences (output, per-head weights):
    ``(verdict, callout kind, sentence, icon)``, they agree when both are at most 1e-12 (float64)."""
    worst = max(max_diff_output, max_diff_weights)
    if worst <= 1e-12:
        return _("agree"), "success", _("Vectorised and loop results agree: largest difference {diff} (float64, "
                                        "tolerance 1e-12).").format(diff=diff_text(worst)), "✅"
    return _("DIFFER"), "error", _("Vectorised and loop results differ by {diff} (tolerance 1e-12).").format(
        diff=diff_text(worst)), "❌"
