"""Sections of the page "Why divide by √d_k": the intro, the verdict, parts 1-3, the temperature.

The sections take the page's widget values (``d_k, n_keys, n_samples, seed``, the histogram's ``log_y``, the
``temperature``), keyword-only: Streamlit then hashes them without looking up the parameter names (a few hundredths
of a millisecond each). The Monte Carlo numbers come from :mod:`explorer.lessons.scaling.model` through the caches
below.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons.scaling import charts as F
from explorer.lessons.scaling import model as S
from explorer.shell import charts, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import general, translator
from explorer.shell.tables import numbers
from explorer.shell.textviews import fmt, fmt_formula, number_list

_, _n = translator(__name__)

_setting = cached(max_entries=64)(S.setting)
_curves = cached(max_entries=32)(S.curves)


def curves(n_keys: int, n_samples: int, seed: int) -> A.SaturationStats:
    """:func:`explorer.lessons.scaling.model.curves`, cached; a spinner says what runs when it is not in the cache yet.

    (Streamlit shows no spinner for a cached function called inside another one, as the
    sections are, so the spinner is drawn here; it is transient, never replayed.)
    """
    with st.spinner(_("Measuring the softmax for d_k = 1, 2, 4, …, 1024 …")):
        return _curves(n_keys, n_samples, seed)


@section
def intro() -> None:
    """The page's title, the claim in one paragraph, and the attention formula."""
    st.title(_("Why divide by √d_k"))
    st.markdown(_(
        "A query and a key with unit-variance components give a dot product whose variance **grows with d_k**. "
        "Large scores push the softmax towards one-hot (*saturation*), and a saturated softmax passes almost no "
        "gradient back. Dividing by √d_k brings the variance back to 1. Every number below is measured on random "
        "queries and keys drawn from the seed, none is typed in."
    ))
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}}\right) V")


@section
def summary(*, d_k: int, n_keys: int, n_samples: int, seed: int) -> None:
    """The verdict at ``d_k``, what was measured, and the header and formula of part 1."""
    stats = curves(n_keys, n_samples, seed)
    st.info(_("**Verdict.** {verdict}").format(verdict=S.verdict(stats, d_k).text()), icon="📏")
    n_rows = S.query_rows(n_samples, n_keys)
    st.caption(_("Measured on {rows} random queries per d_k ({matrices} matrices of {n} queries × {n} keys, at least "
                 "the {samples} samples asked for), seed {seed}; components i.i.d. N(0, 1).").format(
        rows=n_rows, matrices=n_rows // n_keys, n=n_keys, samples=n_samples, seed=seed))

    # 1 · Spread of the scores
    st.header(_("1 · The scores spread out as d_k grows"))
    st.latex(r"q\cdot k = \sum_{i=1}^{d_k} q_i k_i,\qquad \operatorname{Var}(q\cdot k) = \sum_{i=1}^{d_k}"
             r"\operatorname{Var}(q_i k_i) = d_k,\qquad "
             r"\operatorname{Var}\!\left(\frac{q\cdot k}{\sqrt{d_k}}\right) = 1")


@section
def measurements(*, d_k: int, n_keys: int, n_samples: int, seed: int, log_y: bool) -> None:
    """Parts 1-3 after the histogram's toggle: the histograms, one query both ways, the curves over d_k."""
    stats = curves(n_keys, n_samples, seed)
    now = _setting(d_k, n_keys, n_samples, seed)
    n_rows = S.query_rows(n_samples, n_keys)
    charts.show_fig(F.score_histograms(now.raw_edges, now.raw_density, now.scaled_edges, now.scaled_density,
                                       d_k=d_k, raw_var=now.raw_var, scaled_var=now.scaled_var, log_y=log_y),
                    key="scale_fig_hist")
    st.caption(_("{scores} scores (all [{n}, {n}] score matrices of d_k = {d_k}), binned into {bins} bars each. "
                 "Measured variance: raw {raw} (theory {d_k}), scaled {scaled} (theory 1). "
                 "Dotted lines: ±one theoretical standard deviation.").format(
        scores=now.n_scores, n=n_keys, d_k=d_k, bins=S.HIST_BINS, raw=fmt(now.raw_var, 2),
        scaled=fmt(now.scaled_var, 3)))

    # 2 · One query, both ways
    st.header(_("2 · One query's softmax, both ways"))
    st.latex(r"w_j = \mathrm{softmax}_j(s) = \frac{e^{s_j}}{\sum_k e^{s_k}},\qquad s_j = q\cdot k_j \ "
             + textviews.latex_words(_("(unscaled)")) + r"\quad" + textviews.latex_words(_("or"))
             + r"\quad s_j = \frac{q\cdot k_j}{\sqrt{d_k}}\ " + textviews.latex_words(_("(scaled)")))
    q_labels = [f"q{i}" for i in range(n_keys)]
    k_labels = [f"k{j}" for j in range(n_keys)]
    b1, b2 = st.columns(2)
    charts.into(b1)(F.query_bars(now.weights_unscaled[0], k_labels, query_label="q0", scaled=False,
                                 title=_("unscaled: softmax(q0·k)")), key="scale_fig_bar_unscaled")
    charts.into(b2)(F.query_bars(now.weights_scaled[0], k_labels, query_label="q0", scaled=True,
                                 title=_("scaled: softmax(q0·k / √{d_k})").format(d_k=d_k)), key="scale_fig_bar_scaled")
    h1, h2 = st.columns(2)
    charts.into(h1)(charts.heatmap(now.weights_unscaled, q_labels, k_labels, title=_("unscaled weights"),
                                    zrange=(0, 1)), key="scale_fig_heat_unscaled")
    charts.into(h2)(charts.heatmap(now.weights_scaled, q_labels, k_labels, title=_("scaled weights"),
                                    zrange=(0, 1)), key="scale_fig_heat_scaled")
    st.caption(_("The first sampled score matrix, shape [n_q, n_k] = [{n}, {n}]; the bars are its first row "
                 "(query q0). Both heat maps use the same colour range [0, 1]; each row sums to 1.").format(n=n_keys))
    numbers(pd.DataFrame({_("key"): k_labels, _("score q0·k"): now.scores[0], _("scaled score"): now.scaled_scores[0],
                          _("weight unscaled"): now.weights_unscaled[0], _("weight scaled"): now.weights_scaled[0]}),
            hide_index=True)

    # 3 · Curves over d_k
    st.header(_("3 · Saturation over every d_k"))
    st.latex(r"J = \frac{\partial w}{\partial s} = \operatorname{diag}(w) - w\,w^\top,\qquad"
             r"\|J\|_F = \sqrt{\textstyle\sum_{i,j} J_{ij}^2}")
    st.latex(textviews.latex_words(_("effective keys")) + r" = e^{H(w)},\qquad H(w) = -\sum_j w_j \log w_j"
             r"\quad (1 = \text{one-hot},\ n = " + textviews.latex_words(_("uniform")) + ")")
    max_weight, effective = _("mean max weight"), _("effective keys exp(H)")
    panels = {
        max_weight: (stats.max_weight_unscaled, stats.max_weight_scaled),
        effective: (stats.effective_keys_unscaled, stats.effective_keys_scaled),
        _("softmax Jacobian ‖J‖_F"): (stats.jacobian_norm_unscaled, stats.jacobian_norm_scaled),
    }
    charts.show_fig(F.saturation_curves(stats.d_k, panels, current_d_k=d_k,
                                        yranges={max_weight: (0, 1.02), effective: (0, n_keys + 0.5)}),
                    key="scale_fig_curves")
    st.caption(_(
        "Means over {rows} query rows per d_k (d_k = 1, 2, 4, …, 1024; dotted line = the current d_k). "
        "‖J‖_F is the size of the gradient the softmax passes back to the scores: one-hot rows give J = 0. "
        "With many keys a nearly uniform row also passes little gradient to each score (every weight ≈ 1/n), so "
        "without scaling ‖J‖ can first rise a little before it falls; with scaling every d_k sits at the same point."
    ).format(rows=n_rows))
    numbers(pd.DataFrame({
        "d_k": stats.d_k, _("score std unscaled"): stats.score_std_unscaled,
        _("score std scaled"): stats.score_std_scaled,
        _("max weight unscaled"): stats.max_weight_unscaled, _("max weight scaled"): stats.max_weight_scaled,
        _("entropy unscaled (nats)"): stats.entropy_unscaled, _("entropy scaled (nats)"): stats.entropy_scaled,
        _("effective keys unscaled"): stats.effective_keys_unscaled,
        _("effective keys scaled"): stats.effective_keys_scaled,
        _("‖J‖_F unscaled"): stats.jacobian_norm_unscaled, _("‖J‖_F scaled"): stats.jacobian_norm_scaled,
    }), hide_index=True)

    # 4 · Temperature
    st.header(_("4 · Temperature on the lesson's softmax example"))
    st.latex(r"w = \mathrm{softmax}(z / T),\qquad z = ["
             + r",\ ".join(fmt_formula(v, 1) for v in S.LESSON_LOGITS) + "]")
    st.latex(r"T \to 0:\ \text{one-hot},\qquad T \to \infty:\ " + textviews.latex_words(_("uniform")) + r",\qquad"
             + textviews.latex_words(_("dividing by {sqrt_d_k} is the temperature {t}"), sqrt_d_k=r"\sqrt{d_k}",
                           t=r"T = \sqrt{d_k}"))


@section
def temperature(*, t: float) -> None:
    """Part 4 at temperature ``t``: the weights, the sweep over every temperature, and a caption."""
    tv = S.temperature_view(t)
    t1, t2 = st.columns(2)
    charts.into(t1)(F.temperature_bars(tv.weights, tv.logits, temperature=tv.temperature), key="scale_fig_temp_bar")
    charts.into(t2)(F.temperature_sweep(tv.temperatures, tv.sweep, tv.logits, current=tv.temperature),
                    key="scale_fig_temp_sweep")
    st.caption(_("Shape [{n}] → [{n}]. At T = 1 this is the lesson's softmax example; at T = {t} the weights are "
                 "[{weights}].").format(n=len(tv.logits), t=general(t, 6), weights=number_list(tv.weights, 3)))
