"""Arrays for the page "Why divide by √d_k" (scaling vs saturation). Pure NumPy, no Streamlit.

Every number is a Monte Carlo measurement from :func:`attention.sample_scores` (i.i.d. ``N(0, 1)`` components,
``default_rng([seed, d_k])``): the page, the curves and the tests see the same samples for a seed. Source: lesson,
"why scale by sqrt(d_k)"; Vaswani et al. (2017) §3.2.1, footnote 4.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.shell import i18n
from explorer.shell.i18n import translator
from explorer.shell.textviews import fmt

_, _n = translator(__name__)

D_K_CHOICES = tuple(2**i for i in range(11))  # 1, 2, 4, ..., 1024: the page's d_k and the curves' x axis
N_KEYS_RANGE = (2, 32)
SAMPLE_CHOICES = (256, 512, 1024, 2048, 4096, 8192)
TEMPERATURE_CHOICES = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 5.0, 7.0, 10.0, 20.0, 50.0, 100.0)
DEFAULTS = {"d_k": 64, "n_keys": 6, "n_samples": 2048, "seed": 0, "temperature": 1.0}
HIST_BINS = 60


LESSON_LOGITS = tuple(float(z) for z in A.SOFTMAX_EXAMPLE_LOGITS)  # [2.0, 1.0, 0.1]


@dataclass(frozen=True)
class ScalingSetting:
    """What the page shows for one ``(d_k, n_keys, n_samples, seed)``.

    ``raw_*`` describe the scores ``q·k``, ``scaled_*`` the scores ``q·k / sqrt(d_k)``.
    Histograms are densities (area 1) on each one's own bins: ``*_edges [HIST_BINS + 1]``,
    ``*_density [HIST_BINS]``. ``scores [n_keys, n_keys]`` is the first sampled score
    matrix (row = query, column = key), ``weights_unscaled`` / ``weights_scaled`` its softmax
    both ways (rows sum to 1). ``n_scores``: how many scores the histograms count.
    """

    n_scores: int
    raw_var: float
    scaled_var: float
    raw_edges: np.ndarray
    raw_density: np.ndarray
    scaled_edges: np.ndarray
    scaled_density: np.ndarray
    scores: np.ndarray
    scaled_scores: np.ndarray
    weights_unscaled: np.ndarray
    weights_scaled: np.ndarray


def _readonly(*arrays: np.ndarray) -> None:
    for a in arrays:
        a.flags.writeable = False


def curves(n_keys: int, n_samples: int, seed: int) -> A.SaturationStats:
    """:func:`attention.saturation_sweep` over ``D_K_CHOICES`` (1 … 1024): the curves over d_k, each ``[11]``
    float64. ``ValueError`` for a non-positive size (from the core)."""
    return A.saturation_sweep(D_K_CHOICES, n_keys=n_keys, n_samples=n_samples, seed=seed)


def setting(d_k: int, n_keys: int, n_samples: int, seed: int, bins: int = HIST_BINS) -> ScalingSetting:
    """Histograms, variances and one sampled weight matrix for the current ``d_k``, from the same samples as
    :func:`curves` (same seed), binned here so the page ships ``bins`` bars per histogram, not every score.

    Raises:
        ValueError: a non-positive ``d_k``, ``n_keys``, ``n_samples`` or ``bins``.
    """
    raw = A.sample_scores(d_k, n_keys, n_samples, seed)  # [m, n_keys, n_keys]
    scaled = raw / math.sqrt(d_k)
    if bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins}")

    def hist(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        top = float(np.abs(x).max()) or 1.0
        density, edges = np.histogram(x, bins=bins, range=(-top, top), density=True)
        return edges, density

    raw_edges, raw_density = hist(raw)
    scaled_edges, scaled_density = hist(scaled)
    scores, scaled_scores = raw[0], scaled[0]
    w_u, w_s = A.softmax(scores), A.softmax(scaled_scores)
    _readonly(raw_edges, raw_density, scaled_edges, scaled_density, scores, scaled_scores, w_u, w_s)
    return ScalingSetting(
        n_scores=int(raw.size), raw_var=float(raw.var()), scaled_var=float(scaled.var()),
        raw_edges=raw_edges, raw_density=raw_density, scaled_edges=scaled_edges, scaled_density=scaled_density,
        scores=scores, scaled_scores=scaled_scores, weights_unscaled=w_u, weights_scaled=w_s,
    )


@dataclass(frozen=True)
class Verdict:
    """The headline numbers at one ``d_k`` (means over all sampled query rows)."""

    d_k: int
    max_weight_unscaled: float
    max_weight_scaled: float
    jacobian_unscaled: float
    jacobian_scaled: float

    @property
    def gradient_ratio(self) -> float:
        """``‖J‖`` scaled / unscaled: how many times smaller the unscaled softmax gradient is (>1 = smaller)."""
        return self.jacobian_scaled / self.jacobian_unscaled if self.jacobian_unscaled > 0 else math.inf

    def text(self) -> str:
        """One sentence in the run's language, e.g. ``d_k = 64, unscaled: on average 97% of a query's weight lands
        on its top key (scaled: 45%); the softmax gradient ‖J‖ is 5.3× smaller than with scaling.``"""
        values = dict(d_k=self.d_k, unscaled=i18n.percent(self.max_weight_unscaled, 0),
                      scaled=i18n.percent(self.max_weight_scaled, 0))
        if self.d_k == 1:
            return _("d_k = {d_k}, unscaled: on average {unscaled} of a query's weight lands on its top key "
                     "(scaled: {scaled}); at d_k = 1, √d_k = 1 and scaling changes nothing.").format(**values)
        r = self.gradient_ratio
        if not math.isfinite(r):
            return _("d_k = {d_k}, unscaled: on average {unscaled} of a query's weight lands on its top key "
                     "(scaled: {scaled}); the unscaled softmax passes no gradient at all (‖J‖ = 0).").format(**values)
        if r >= 1.05:
            return _("d_k = {d_k}, unscaled: on average {unscaled} of a query's weight lands on its top key "
                     "(scaled: {scaled}); the softmax gradient ‖J‖ is {ratio}× smaller than with scaling."
                     ).format(ratio=fmt(r, 1 if r < 100 else 0), **values)
        if r <= 1 / 1.05:
            return _("d_k = {d_k}, unscaled: on average {unscaled} of a query's weight lands on its top key "
                     "(scaled: {scaled}); the softmax gradient ‖J‖ is still {ratio}× larger than with scaling "
                     "(the softmax is sharper but not yet saturated).").format(ratio=fmt(1 / r, 1), **values)
        return _("d_k = {d_k}, unscaled: on average {unscaled} of a query's weight lands on its top key "
                 "(scaled: {scaled}); the softmax gradient ‖J‖ is about the same as with scaling.").format(**values)


def verdict(stats: A.SaturationStats, d_k: int) -> Verdict:
    """The headline numbers of ``stats`` at ``d_k`` (must be one of ``stats.d_k``; ``ValueError`` otherwise)."""
    hits = np.flatnonzero(stats.d_k == d_k)
    if not hits.size:
        raise ValueError(f"d_k={d_k} is not on the curve; choose one of {stats.d_k.tolist()}")
    i = int(hits[0])
    return Verdict(int(d_k), float(stats.max_weight_unscaled[i]), float(stats.max_weight_scaled[i]),
                   float(stats.jacobian_norm_unscaled[i]), float(stats.jacobian_norm_scaled[i]))


@dataclass(frozen=True)
class TemperatureView:
    """``softmax(logits / T)`` at the chosen ``T`` and over all ``TEMPERATURE_CHOICES``.

    ``weights [n]``; ``sweep [len(temperatures), n]`` (each row sums to 1).
    """

    logits: np.ndarray
    temperature: float
    weights: np.ndarray
    temperatures: np.ndarray
    sweep: np.ndarray


def temperature_view(temperature: float, logits=A.SOFTMAX_EXAMPLE_LOGITS) -> TemperatureView:
    """The lesson's softmax example ``[2.0, 1.0, 0.1]`` divided by a temperature ``T > 0`` (``T → 0``: one-hot on the
    largest logit, ``T → ∞``: uniform; the core's stable softmax keeps every ``T`` of ``TEMPERATURE_CHOICES`` finite).

    Raises:
        ValueError: ``temperature`` not finite and positive.
    """
    if not (isinstance(temperature, (int, float)) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature!r}")
    z = np.asarray(logits, dtype=np.float64)  # [n]
    temps = np.asarray(TEMPERATURE_CHOICES, dtype=np.float64)  # [t]
    sweep = A.softmax(z[None, :] / temps[:, None])  # [t, n]
    out = TemperatureView(z, float(temperature), A.softmax(z / temperature), temps, sweep)
    _readonly(out.logits, out.weights, out.temperatures, out.sweep)
    return out


def query_rows(n_samples: int, n_keys: int) -> int:
    """Query rows actually drawn by ``attention.sample_scores``: whole ``n_keys x n_keys`` matrices, ≥ ``n_samples``."""
    return math.ceil(n_samples / n_keys) * n_keys
