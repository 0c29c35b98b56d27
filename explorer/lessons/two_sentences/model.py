"""Arrays for the two-sentences page: one SelfAttention, two sentences, and the word-order test (no Streamlit, no
Plotly). Embeddings are always per-token here, so a word shared by both sentences has the same vector in both.

Source: lesson exercise 3 (feed two sentences of the same length through the same SelfAttention and compare);
Vaswani et al. (2017) section 3.5 (positional encoding: attention alone is permutation-equivariant).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.shell import i18n, settings
from explorer.shell.i18n import translator

_, _n = translator(__name__)

EMBEDDING = "per-token"
REPEAT_DEMO = ("the", "dog", "saw", "the", "cat")  # used when the sentence repeats no word
ROUNDING = 1e-12  # a gap at most this times the largest |value| compared is float rounding (weights: at most 1)


@dataclass(frozen=True)
class LayerSettings:
    """The sidebar's settings this page uses: ``SelfAttention(d_model, d_k, d_k, seed)`` (``seed`` also draws the
    embeddings), with or without the sinusoidal positional encoding (``positional``). Frozen: it keys the caches.

    The sidebar's embedding choice is left out on purpose: this page always uses per-token embeddings
    (:data:`EMBEDDING`), so a change of that choice does not redraw it. The sentences travel on their own.
    """

    d_model: int
    d_k: int
    seed: int
    positional: bool

    @classmethod
    def of(cls, sidebar: settings.Settings) -> LayerSettings:
        """The fields of the sidebar's :class:`~explorer.shell.settings.Settings` this page uses."""
        return cls(sidebar.d_model, sidebar.d_k, sidebar.seed, sidebar.positional)


def _run(tokens: tuple[str, ...], layer: A.SelfAttention, seed: int, positional: bool) -> A.AttentionSteps:
    return layer.steps(settings.embeddings(tokens, layer.d_model, seed, EMBEDDING, positional))  # X: [n, d_model]


@dataclass(frozen=True)
class Comparison:
    """Two sentences through one layer, compared over their common length ``m``.

    Attributes:
        tokens_a, tokens_b: the first ``m`` tokens of each sentence.
        n_a, n_b: the full lengths (before cutting to ``m``).
        steps_a, steps_b: :class:`attention.AttentionSteps` of each (``weights [m, m]``).
        shared_a, shared_b: bool ``[m]``, the token also occurs in the other sentence.
        entropy_a, entropy_b: row entropies ``[m]`` in nats.
    """

    tokens_a: tuple[str, ...]
    tokens_b: tuple[str, ...]
    n_a: int
    n_b: int
    steps_a: A.AttentionSteps
    steps_b: A.AttentionSteps
    shared_a: np.ndarray
    shared_b: np.ndarray
    entropy_a: np.ndarray
    entropy_b: np.ndarray

    @property
    def m(self) -> int:
        return len(self.tokens_a)

    @property
    def diff(self) -> np.ndarray:
        """``weights_a - weights_b`` ``[m, m]`` (exactly 0 for the same sentence twice)."""
        return self.steps_a.weights - self.steps_b.weights

    @property
    def gap(self) -> float:
        """Largest ``|Δ|`` of :attr:`diff` (0.0 for the same sentence twice)."""
        return float(np.abs(self.diff).max())

    @property
    def identical(self) -> bool:
        return self.tokens_a == self.tokens_b


@dataclass(frozen=True)
class OrderCheck:
    """A sentence and a shuffled copy through the same layer (``tokens``, ``shuffled_tokens``: ``(n,)``;
    ``original``, ``shuffled``: :class:`attention.AttentionSteps`; ``positional``: the encoding was added).

    ``perm`` (int ``[n]``): ``perm[i]`` is the original position of the token at shuffled position ``i``
    (``shuffled = tokens[perm]``); ``inverse`` undoes it. If attention ignores order,
    ``shuffled.weights[inverse][:, inverse] == original.weights``.
    """

    tokens: tuple[str, ...]
    shuffled_tokens: tuple[str, ...]
    perm: np.ndarray
    inverse: np.ndarray
    original: A.AttentionSteps
    shuffled: A.AttentionSteps
    positional: bool

    @property
    def unpermuted_weights(self) -> np.ndarray:
        """The shuffled sentence's weights with rows and columns put back in the original order ``[n, n]``."""
        return self.shuffled.weights[np.ix_(self.inverse, self.inverse)]

    @property
    def unpermuted_output(self) -> np.ndarray:
        """The shuffled sentence's output rows put back in the original order ``[n, d_v]``."""
        return self.shuffled.output[self.inverse]

    @property
    def weight_gap(self) -> float:
        """``max |unpermuted - original|`` over the weights (float rounding without positional encoding)."""
        return float(np.abs(self.unpermuted_weights - self.original.weights).max())

    @property
    def output_gap(self) -> float:
        """``max |unpermuted - original|`` over the outputs."""
        return float(np.abs(self.unpermuted_output - self.original.output).max())


@dataclass(frozen=True)
class RepeatCheck:
    """A sentence with a repeated word (``tokens``: the user's, or ``REPEAT_DEMO`` when it repeats none, then
    ``demo``), the ``positions`` of its first repeated word (two or more), and the :class:`attention.AttentionSteps`
    without (``plain``) and with (``positional``) the encoding."""

    tokens: tuple[str, ...]
    demo: bool
    positions: tuple[int, ...]
    plain: A.AttentionSteps
    positional: A.AttentionSteps

    def row_gap(self, positional: bool) -> float:
        """Largest difference between the weight rows of the repeated word's copies (0.0 without encoding)."""
        w = (self.positional if positional else self.plain).weights[list(self.positions)]
        return float(np.abs(w - w[0]).max())


@dataclass(frozen=True)
class TwoSentencesScenario:
    """Everything the two-sentences page draws: the :class:`Comparison` of the two sentences (``None`` if the second
    is empty), the first one's :class:`OrderCheck` at the page's setting (``order``) and without and with the encoding
    (``order_plain``, ``order_positional``), and its :class:`RepeatCheck`."""

    comparison: Comparison | None
    order: OrderCheck
    order_plain: OrderCheck
    order_positional: OrderCheck
    repeat: RepeatCheck


def shuffle_permutation(n: int, seed: int) -> np.ndarray:
    """A seeded permutation of ``range(n)`` that moves at least one token when ``n > 1``.

    ``np.random.default_rng(seed).permutation(n)``; if that is the identity, it is
    rolled by one position instead (so "shuffle" always shuffles).
    """
    perm = np.random.default_rng(seed).permutation(n)
    if n > 1 and np.array_equal(perm, np.arange(n)):
        perm = np.roll(perm, 1)
    return perm


def compare(tokens_a, tokens_b, layer: A.SelfAttention, seed: int, positional: bool) -> Comparison:
    """Run both sentences, cut to their common length, through ``layer``.

    Raises:
        ValueError: a sentence is empty.
    """
    tokens_a, tokens_b = tuple(tokens_a), tuple(tokens_b)
    if not tokens_a or not tokens_b:
        raise ValueError("both sentences need at least one token")
    m = min(len(tokens_a), len(tokens_b))
    a, b = tokens_a[:m], tokens_b[:m]
    steps_a, steps_b = _run(a, layer, seed, positional), _run(b, layer, seed, positional)
    return Comparison(
        tokens_a=a, tokens_b=b, n_a=len(tokens_a), n_b=len(tokens_b), steps_a=steps_a, steps_b=steps_b,
        shared_a=np.array([t in set(b) for t in a]), shared_b=np.array([t in set(a) for t in b]),
        entropy_a=A.entropy(steps_a.weights), entropy_b=A.entropy(steps_b.weights),
    )


def order_check(tokens, layer: A.SelfAttention, seed: int, positional: bool, shuffle_seed: int) -> OrderCheck:
    """Run ``tokens`` and a shuffled copy (:func:`shuffle_permutation`) through ``layer``."""
    tokens = tuple(tokens)
    perm = shuffle_permutation(len(tokens), shuffle_seed)
    shuffled = tuple(tokens[i] for i in perm)
    return OrderCheck(
        tokens=tokens, shuffled_tokens=shuffled, perm=perm, inverse=np.argsort(perm),
        original=_run(tokens, layer, seed, positional), shuffled=_run(shuffled, layer, seed, positional),
        positional=positional,
    )


def repeat_check(tokens, layer: A.SelfAttention, seed: int) -> RepeatCheck:
    """The first word that ``tokens`` repeats (or ``REPEAT_DEMO``'s "the"), with and without encoding."""
    tokens = tuple(tokens)
    demo = len(set(tokens)) == len(tokens)
    if demo:
        tokens = REPEAT_DEMO
    word = next(t for t in tokens if tokens.count(t) > 1)
    return RepeatCheck(tokens=tokens, demo=demo, positions=tuple(i for i, t in enumerate(tokens) if t == word),
                       plain=_run(tokens, layer, seed, False), positional=_run(tokens, layer, seed, True))


def two_sentences_scenario(tokens_a: tuple[str, ...], tokens_b: tuple[str, ...], settings: LayerSettings,
                           shuffle_seed: int = 0) -> TwoSentencesScenario:
    """Both sentences through ``SelfAttention(d_model, d_k, d_k, seed)`` of ``settings``, per-token embeddings: a
    :class:`TwoSentencesScenario` (float64). ``tokens_b`` may be empty (then no comparison); ``shuffle_seed`` seeds the
    shuffle of ``tokens_a``. ``ValueError``: ``tokens_a`` is empty or a size is not a positive integer."""
    if not tokens_a:
        raise ValueError("the first sentence needs at least one token")
    seed, positional = settings.seed, settings.positional
    layer = A.SelfAttention(settings.d_model, settings.d_k, settings.d_k, seed=seed)
    plain = order_check(tokens_a, layer, seed, False, shuffle_seed)
    with_pe = order_check(tokens_a, layer, seed, True, shuffle_seed)
    return TwoSentencesScenario(
        comparison=compare(tokens_a, tokens_b, layer, seed, positional) if tokens_b else None,
        order=with_pe if positional else plain, order_plain=plain, order_positional=with_pe,
        repeat=repeat_check(tokens_a, layer, seed),
    )


def gap_text(value: float) -> str:
    """A largest difference as text: ``"0 (exact)"`` when bit-for-bit equal, else ``1.23e-16`` (``1,23e-16`` in pt
    and tr), in the run's language."""
    return _("0 (exact)") if value == 0.0 else i18n.scientific(value, 2)


def order_claim(order: OrderCheck) -> tuple[bool, str]:
    """Part 2's shuffle sentence from ``order``'s gaps: ``(True, text)`` when both are float rounding (at most
    :data:`ROUNDING` times 1, the weights' bound, and the outputs' largest |value|), else ``(False, text)``."""
    same = order.weight_gap <= ROUNDING and order.output_gap <= ROUNDING * np.abs(order.original.output).max()
    text = {(False, True): _("Without positional encoding the un-shuffled map equals the original to float rounding "
                             "(largest |difference| {weights} in the weights, {outputs} in the outputs)."),
            (True, True): _("Even with positional encoding the un-shuffled map equals the original to float rounding "
                            "here (largest |difference| {weights} in the weights, {outputs} in the outputs)."),
            (False, False): _("Without positional encoding the un-shuffled map should equal the original, but the "
                              "weights differ by up to {weights}, the outputs by up to {outputs}."),
            (True, False): _("With positional encoding the un-shuffled map is **not** the original: the weights differ "
                             "by up to {weights}, the outputs by up to {outputs}. Each word now carries its position.")}
    show = gap_text if same else (lambda v: i18n.general(v, 3))
    return same, text[order.positional, same].format(weights=show(order.weight_gap), outputs=show(order.output_gap))


def repeat_claim(gap: float, positional: bool) -> tuple[bool, str]:
    """The copies' sentence from ``gap`` (their weight rows'): ``(True, text)`` if ``gap <= ROUNDING``, else False."""
    same = gap <= ROUNDING
    text = {(False, True): _("Without positional encoding the copies' rows are identical (largest difference {gap})."),
            (True, True): _("Even with positional encoding the copies' rows are identical here (largest difference "
                            "{gap})."),
            (False, False): _("Without positional encoding the copies' rows should be identical, but they differ by "
                              "up to {gap}."),
            (True, False): _("With positional encoding the copies' rows differ by up to {gap}.")}[positional, same]
    return same, text.format(gap=gap_text(gap) if same else i18n.general(gap, 3))
