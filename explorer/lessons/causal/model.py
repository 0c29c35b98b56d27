"""Arrays for the causal-mask page: bidirectional vs causal attention, padding, "no peeking" (no Streamlit, no Plotly).

Source: lesson exercise 1 (a mask that sets chosen positions to −∞ before the softmax); Vaswani et al. (2017)
section 3.2.3 (masking in the decoder).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.shell import i18n, textviews
from explorer.shell.i18n import translator
from explorer.shell.settings import Settings

_, _n = translator(__name__)


LARGE_NEGATIVE = -1e9  # the "large negative constant" some code adds instead of −∞


@dataclass(frozen=True)
class MaskingRules:
    """What three ways of masking give for one query row (the "why −∞" panel); every field is ``[n_k]``.

    Attributes:
        scores: the row's scaled scores before any mask. allowed: bool, ``True`` = may attend.
        neg_inf: weights with ``−∞`` added to blocked scores and the zero rule for an all-blocked row (the core's).
        large_negative: weights with ``LARGE_NEGATIVE`` added instead.
        all_blocked_large_negative: weights if *every* key of this row were blocked with ``LARGE_NEGATIVE``: the
            softmax of the unmasked scores, i.e. the row attends to keys it must not see.
        all_blocked_rule: the same all-blocked row under the zero rule (zeros).
    """

    scores: np.ndarray
    allowed: np.ndarray
    neg_inf: np.ndarray
    large_negative: np.ndarray
    all_blocked_large_negative: np.ndarray
    all_blocked_rule: np.ndarray


@dataclass(frozen=True)
class CausalScenario:
    """Everything the causal page draws, for one sentence (``n`` tokens) and one setting of the controls. Masks are
    boolean, ``True`` = may attend.

    Attributes:
        tokens: ``(n,)``. n_pad: trailing padding tokens (``0..n``). t: the "no peeking" position (``0..n-1``).
        key_valid: bool ``[n]``, ``False`` for padded keys (the key padding mask's row).
        causal_mask: bool ``[n, n]``, lower triangular (the causal mask alone, without padding).
        bidirectional_steps, causal_steps: :class:`attention.AttentionSteps` with the key padding mask only, and
            with causal ∧ key padding.
        bidirectional_perturbed_steps, causal_perturbed_steps: the same two runs on the embeddings with every row
            after ``t`` replaced (:func:`perturb_after`).
    """

    tokens: tuple[str, ...]
    n_pad: int
    t: int
    key_valid: np.ndarray
    causal_mask: np.ndarray
    bidirectional_steps: A.AttentionSteps
    causal_steps: A.AttentionSteps
    bidirectional_perturbed_steps: A.AttentionSteps
    causal_perturbed_steps: A.AttentionSteps

    @property
    def n(self) -> int:
        return len(self.tokens)

    def steps(self, is_causal: bool) -> A.AttentionSteps:
        """The causal or the bidirectional run."""
        return self.causal_steps if is_causal else self.bidirectional_steps

    def perturbed(self, is_causal: bool) -> A.AttentionSteps:
        """The run on the perturbed embeddings, causal or bidirectional."""
        return self.causal_perturbed_steps if is_causal else self.bidirectional_perturbed_steps

    def mask(self, is_causal: bool) -> np.ndarray:
        """The combined boolean mask ``[n, n]`` of a mode (``True`` = may attend)."""
        return self.steps(is_causal).mask

    def additive(self, is_causal: bool) -> np.ndarray:
        """The additive mask ``[n, n]``: 0 where allowed, ``-inf`` where blocked."""
        return A.additive_mask(self.mask(is_causal))

    def fully_masked(self, is_causal: bool) -> np.ndarray:
        """bool ``[n]``: query rows with no key left to attend to."""
        return ~self.mask(is_causal).any(axis=-1)

    def output_diff(self, is_causal: bool) -> np.ndarray:
        """``output(perturbed) - output(original)`` ``[n, d_v]``."""
        return self.perturbed(is_causal).output - self.steps(is_causal).output

    def row_change(self, is_causal: bool) -> np.ndarray:
        """Largest absolute change of each output row ``[n]`` (exactly 0.0 when bit-for-bit equal)."""
        return np.abs(self.output_diff(is_causal)).max(axis=-1)

    def unchanged_through_t(self, is_causal: bool) -> bool:
        """Are output rows ``0..t`` bit-for-bit equal before and after the perturbation?"""
        t = self.t
        return bool(np.array_equal(self.perturbed(is_causal).output[: t + 1], self.steps(is_causal).output[: t + 1]))

    def max_above_diagonal(self, is_causal: bool) -> float:
        """Largest weight above the diagonal (exactly 0.0 for the causal mask)."""
        return float(self.steps(is_causal).weights[np.triu_indices(self.n, 1)].max(initial=0.0))

    def max_row_sum_error(self, is_causal: bool) -> float:
        """Largest ``|Σ_j w_ij - 1|`` over the rows that have a key to attend to (0.0 if none)."""
        sums = self.steps(is_causal).weights.sum(axis=-1)[~self.fully_masked(is_causal)]
        return float(np.abs(sums - 1.0).max(initial=0.0))


def perturb_after(X: np.ndarray, t: int, seed: int) -> np.ndarray:
    """Replace every row of ``X [n, d_model]`` after position ``t`` by a fresh standard-normal row, as if other words
    stood there (for both embeddings: a ``"lesson"`` row depends on its position, not on the word). Rows ``0..t``
    stay bit-for-bit; drawn from ``np.random.default_rng([seed, t, 7])``, so a link reproduces it.

    Raises:
        ValueError: ``t`` is outside ``0..n-1``.
    """
    X = np.asarray(X, dtype=np.float64)
    n = X.shape[-2]
    if not 0 <= t < n:
        raise ValueError(f"t must lie in 0..{n - 1}, got {t}")
    out = X.copy()
    out[t + 1:] = np.random.default_rng([seed, t, 7]).normal(0.0, 1.0, out[t + 1:].shape)
    return out


def causal_scenario(settings: Settings, n_pad: int = 0, t: int = 0) -> CausalScenario:
    """Bidirectional and causal self-attention on a sentence, with a key padding mask and a perturbation: a
    :class:`CausalScenario` (float64).

    Args:
        settings: the shared settings (at least one token): :meth:`Settings.layer` on :attr:`Settings.X`.
        n_pad: the last ``n_pad`` tokens are padding (their keys are blocked), ``0..n``.
        t: the "no peeking" position (``0..n-1``): rows of ``X`` after it are replaced (:func:`perturb_after`).

    Raises:
        ValueError: no tokens, ``n_pad`` outside ``0..n`` or ``t`` outside ``0..n-1``.
    """
    n = settings.n
    if n < 1:
        raise ValueError("tokens must hold at least one token")
    if not 0 <= n_pad <= n:
        raise ValueError(f"n_pad must lie in 0..{n}, got {n_pad}")
    key_valid = np.arange(n) < n - n_pad  # [n]
    padding = A.padding_mask(key_valid)  # [1, n]
    causal_mask = A.causal_mask(n)  # [n, n]
    bidirectional_mask = np.broadcast_to(padding, (n, n)).copy()  # [n, n] key padding only
    combined_mask = causal_mask & padding  # [n, n] causal ∧ key padding
    layer = settings.layer()
    X = settings.X  # [n, d_model]
    X_perturbed = perturb_after(X, t, settings.seed)  # [n, d_model]
    return CausalScenario(
        tokens=tuple(settings.tokens), n_pad=int(n_pad), t=int(t), key_valid=key_valid, causal_mask=causal_mask,
        bidirectional_steps=layer.steps(X, bidirectional_mask), causal_steps=layer.steps(X, combined_mask),
        bidirectional_perturbed_steps=layer.steps(X_perturbed, bidirectional_mask),
        causal_perturbed_steps=layer.steps(X_perturbed, combined_mask),
    )


def masking_rules(scores, allowed) -> MaskingRules:
    """Compare ``−∞``, a large negative constant, and the zero rule on one query row: ``scores [n_k]`` (finite,
    scaled) under ``allowed`` (bool ``[n_k]``, ``True`` = may attend). In the :class:`MaskingRules` returned,
    ``neg_inf`` and ``large_negative`` agree whenever a key is allowed (``exp(-1e9)`` underflows to exactly 0 in
    float64); they part ways on an all-blocked row.

    Raises:
        ValueError: shapes differ or ``allowed`` is not boolean.
    """
    s = np.asarray(scores, dtype=np.float64)
    allowed = np.asarray(allowed)
    if allowed.dtype != np.bool_ or allowed.shape != s.shape or s.ndim != 1:
        raise ValueError(f"scores and allowed must be [n_k] float and bool, got {s.shape} and "
                         f"{allowed.dtype} {allowed.shape}")
    return MaskingRules(
        scores=s, allowed=allowed,
        neg_inf=A.softmax(s + A.additive_mask(allowed)),
        large_negative=A.softmax(s + np.where(allowed, 0.0, LARGE_NEGATIVE)),
        all_blocked_large_negative=A.softmax(s + LARGE_NEGATIVE),
        all_blocked_rule=A.softmax(s, mask=np.zeros_like(allowed)),
    )


def mode_name(is_causal: bool) -> str:
    """``"causal"`` or ``"bidirectional"`` (a code: chart keys; sentences have a message for each mode)."""
    return "causal" if is_causal else "bidirectional"


# --- the claims ------------------------------------------------------------------------------------------


def exact(value: float) -> str:
    """``value`` written out exactly (``repr``: ``0.0``, ``1e-17``) with the run's decimal mark (``0,0`` in pt, tr)."""
    return repr(float(value)).replace(".", i18n.plotly_separators()[0])


def causal_checks(above: float, row0: np.ndarray, fully: np.ndarray, error: float) -> str:
    """The causal checks: the largest weight ``above`` the diagonal, ``row0`` ``[n]`` (8 shown), and ``error`` (max
    |row sum − 1| over the rows with a key; ``fully``: bool ``[n]``), or every row summing to 0 when all are masked."""
    shown = ", ".join(textviews.fmt_formula(v, 1) for v in row0[:8])  # code spans: `.`
    facts = dict(above=f"`{above!r}`", row0=f"`[{shown}{', …' if len(row0) > 8 else ''}]`", error=f"`{error:.1e}`")
    if fully.all():
        return _("**Checks (causal):** largest weight above the diagonal = {above} · row 0 = {row0} · every row is "
                 "fully masked, so every row sums to 0").format(**facts)
    return (_("**Checks (causal):** largest weight above the diagonal = {above} · row 0 = {row0} · "
              "largest |row sum − 1| = {error} (over the rows that have a key)") if fully.any() else
            _("**Checks (causal):** largest weight above the diagonal = {above} · row 0 = {row0} · "
              "largest |row sum − 1| = {error}")).format(**facts)


def padded_columns(weights: np.ndarray, key_valid: np.ndarray, is_causal: bool) -> str:
    """The padding sentence from the largest of ``weights [n, n]`` in the padded key columns (``key_valid``: bool
    ``[n]``, ``False`` = padding): "exactly 0" only if it is 0.0, else the weight measured."""
    largest = float(weights[:, ~key_valid].max(initial=0.0))
    return (_("Padded key columns do not get weight exactly 0 here: largest weight in a padded column = {largest}.")
            if largest != 0.0 else _("Padded key columns get weight exactly 0 in the causal weights: largest weight "
                                     "in a padded column = {largest}.") if is_causal else
            _("Padded key columns get weight exactly 0 in the bidirectional weights: largest weight in a padded "
              "column = {largest}.")).format(largest=f"`{largest!r}`")


@dataclass(frozen=True)
class Claim:
    """A statement the page shows, in the run's language: ``kind`` is the Streamlit callout (``"success"``,
    ``"info"``, ``"warning"``, ``"error"``), ``icon`` its icon or ``None``."""

    kind: str
    text: str
    icon: str | None = None


def padded_tokens(n: int, n_pad: int, t: int) -> str:
    """The clause naming which of ``n`` tokens are padding (the last ``n_pad``, at least all after ``t``), true for
    every such ``n_pad``: those after t, those from an earlier position on (t included), or every token."""
    first = n - n_pad  # the first padded position
    if first == 0:
        return _("every token is padding")
    if first <= t:
        return _("every token from position {first} on is padding, t = {t} included").format(first=first, t=t)
    return _("every token after t = {t} is padding").format(t=t)


def no_peeking_claims(sc: CausalScenario) -> tuple[Claim, Claim]:
    """What part 3 ("no peeking") can say about replacing every token after ``sc.t`` (with ``sc.n_pad`` padding
    tokens): first the causal side (rows 0..t unchanged; or a test that shows
    nothing, every replaced key being padding or nothing replaced; or a leak), then the bidirectional side (how far
    rows 0..t moved, or why they could not), each with this run's numbers."""
    # Every replaced token (after t) is padding, which no query sees, or nothing was replaced: the experiment
    # cannot show a leak, so an unchanged causal output proves nothing about the causal mask.
    n, t = len(sc.key_valid), sc.t
    change_b, change_c = sc.row_change(False), sc.row_change(True)
    if sc.unchanged_through_t(True) and sc.n_pad >= n - 1 - t:
        if n == 1:
            note = _("Causal: output row 0 is unchanged, but that shows nothing here: nothing after t was replaced (t "
                     "is the last position). Type a sentence of two or more tokens to put the causal mask to the test.")
        elif t == n - 1:
            note = _("Causal: output rows 0..{t} are unchanged, but that shows nothing here: nothing after t was "
                     "replaced (t is the last position). Move t to the left to put the causal mask to the test.")
        elif t == 0:
            note = _("Causal: output row 0 is unchanged, but that shows nothing here: {padded}, which no query can "
                     "see. Reduce the padding to put the causal mask to the test.")
        else:
            note = _("Causal: output rows 0..{t} are unchanged, but that shows nothing here: {padded}, which no query "
                     "can see. Reduce the padding to put the causal mask to the test.")
        causal = Claim("info", note.format(t=t, padded=padded_tokens(n, sc.n_pad, t)), "ℹ️")
    elif sc.unchanged_through_t(True):
        largest = exact(float(change_c[: t + 1].max()))  # 0.0: written out exactly (repr)
        causal = Claim("success", (
            _("Causal: output row 0 is bit-for-bit unchanged (largest difference {largest}). Nothing leaks "
              "from the future.") if t == 0 else
            _("Causal: output rows 0..{t} are bit-for-bit unchanged (largest difference {largest}). Nothing "
              "leaks from the future.")).format(t=t, largest=largest), "✅")
    else:  # cannot happen with a correct mask; shown rather than hidden
        causal = Claim("error", (_("Causal: row 0 changed by up to {change}: the mask leaks.") if t == 0 else
                                 _("Causal: rows 0..{t} changed by up to {change}: the mask leaks.")).format(
            t=t, change=i18n.general(float(change_c[: t + 1].max()))))
    moved = float(change_b[: t + 1].max())
    if moved > 0:
        bidirectional = Claim("warning", (
            _("Bidirectional: row 0 changes by up to {change}: every token reads the future.") if t == 0 else
            _("Bidirectional: rows 0..{t} change by up to {change}: every token reads the future.")).format(
            t=t, change=i18n.general(moved)), "👀")
    elif t == n - 1:
        bidirectional = Claim("info", _(
            "Bidirectional: nothing was replaced (t is the last position), so nothing changes. Type a sentence "
            "of two or more tokens: with one token there is no future to replace.") if n == 1 else _(
            "Bidirectional: nothing was replaced (t is the last position), so nothing changes. Move t to the left."))
    else:
        bidirectional = Claim("info", (
            _("Bidirectional: row 0 did not change here because {padded} (blocked for every query). Reduce the "
              "padding to see the leak.") if t == 0 else
            _("Bidirectional: rows 0..{t} did not change here because {padded} (blocked for every query). Reduce "
              "the padding to see the leak.")).format(t=t, padded=padded_tokens(n, sc.n_pad, t)))
    return causal, bidirectional
