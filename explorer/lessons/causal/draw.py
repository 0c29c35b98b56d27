"""Sections of the causal-mask page: the intro, the masks (parts 1-2), "no peeking" and padding (3-4), one row (5).

Every function but :func:`intro` takes the page's shared :class:`~explorer.shell.settings.Settings` (a frozen
dataclass: it keys the caches) and the page's widget values: ``is_causal``, ``n_pad`` (padding), ``t`` (the "no
peeking" position), ``q`` (the query). Parts 1, 2, 4 and 5 do not depend on ``t``: they read the scenario at ``t = 0``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons.causal import charts as cfig
from explorer.lessons.causal import model
from explorer.shell import charts, tables, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import translator
from explorer.shell.settings import Settings
from explorer.shell.tables import numbers

_, _n = translator(__name__)
_shell = translator("explorer.shell")[0]  # the shell's own words shown here (its colour scales' meanings)

scenario = cached(max_entries=8)(model.causal_scenario)  # (settings, n_pad, t = 0); up to 3.8 MiB an entry


@section
def intro() -> None:
    """The page's title, what the causal mask does, and its formula."""
    st.title(_("The causal mask: from bidirectional to decoder attention"))
    st.markdown(_(
        "In an **encoder** every token attends to every token (bidirectional). A **decoder** writes text left to "
        "right, so token *i* must not see tokens after it. The fix is one line: before the softmax, add a mask "
        "that sets the scores of the future (key *j* > query *i*) to **−∞**; their weights become exactly 0 "
        "(lesson exercise 1; Vaswani et al. 2017, §3.2.3)."
    ))
    st.latex(r"\mathrm{Attention}(Q, K, V) = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt{d_k}} + M\right) V,"
             r"\qquad M_{ij} = \begin{cases} 0 & j \le i \ " + textviews.latex_words(_("(may attend)"))
             + r" \\ -\infty & j > i \ " + textviews.latex_words(_("(the future)")) + r"\end{cases}")


@section
def masks(settings: Settings, is_causal: bool, n_pad: int, color_scale: str = "fixed") -> None:
    """The settings caption, part 1 (both modes side by side), part 2 (the mask three ways), part 3's intro.

    The weight maps are coloured on ``color_scale`` (:data:`explorer.shell.charts.COLOR_SCALES`)."""
    sc = scenario(settings, n_pad)
    labels, n, d_v = settings.labels, settings.n, settings.d_v
    dims = textviews.dim_labels(d_v)
    steps, mask, fully = sc.steps(is_causal), sc.mask(is_causal), sc.fully_masked(is_causal)

    pad = (" · " + _n("the last {n} token is padding", "the last {n} tokens are padding", n_pad).format(n=n_pad)
           if n_pad else "")
    st.caption(settings.caption() + pad)

    st.header(_("1 · Bidirectional vs causal, side by side"))
    st.markdown(_("The same sentence, the same weights W_q, W_k, W_v; only the mask differs. Masked cells are blank "
                  "with a ×, hover says *masked*; their weight is exactly 0."))
    left, right = st.columns(2)
    for col, side_is_causal, title in ((left, False, _("bidirectional: all keys")),  # short: a phone's width
                                       (right, True, _("causal: keys j ≤ i"))):
        with col:
            s = sc.steps(side_is_causal)
            charts.show_fig(cfig.weights_map(s.weights, labels, s.mask, sc.fully_masked(side_is_causal), title=title,
                                             color_scale=color_scale),
                            key=f"causal_fig_side_{model.mode_name(side_is_causal)}")
    st.caption(_("shape [n_q, n_k] = [{n}, {n}] · row = query, column = key · colours: {scale}").format(
        n=n, scale=_shell(charts.COLOR_SCALES[color_scale])))
    st.markdown(model.causal_checks(sc.max_above_diagonal(True), sc.causal_steps.weights[0], sc.fully_masked(True),
                                    sc.max_row_sum_error(True)))

    st.header(_("2 · The mask, three ways"))
    if is_causal:
        showing = (_("Showing the **causal** mask combined with the key padding mask (switch at the top). Three "
                     "equivalent ways to write it, then what it does to the scores.") if n_pad else
                   _("Showing the **causal** mask (switch at the top). Three equivalent ways to write it, then what "
                     "it does to the scores."))
    else:
        showing = (_("Showing the **bidirectional** mask combined with the key padding mask (switch at the top). "
                     "Three equivalent ways to write it, then what it does to the scores.") if n_pad else
                   _("Showing the **bidirectional** mask (switch at the top). Three equivalent ways to write it, then "
                     "what it does to the scores."))
    st.markdown(showing)
    a, b = st.columns(2)
    with a:
        st.latex(r"\text{mask}_{ij} = \text{True} \iff "
                 + textviews.latex_words(_("query {i} may attend to key {j}"), i="i", j="j"))
        charts.show_fig(cfig.boolean_mask_figure(mask, labels, title=_("boolean mask (True = may attend)")),
                        key="causal_fig_bool")
        st.caption(_("shape [{n}, {n}] · bool · True = may attend (PyTorch's SDPA convention)").format(n=n))
    with b:
        st.latex(r"M_{ij} = \begin{cases} 0 & \text{mask}_{ij} = \text{True} \\ -\infty & \text{mask}_{ij} = "
                 r"\text{False} \end{cases}")
        charts.show_fig(cfig.additive_mask_figure(sc.additive(is_causal), labels,
                                                  title=_("additive mask (0 / −∞)")), key="causal_fig_additive")
        st.caption(_("shape [{n}, {n}] · float · added to the scaled scores").format(n=n))
    numbers({_("Boolean mask"): pd.DataFrame(mask, index=labels, columns=labels),
             _("Additive mask"): pd.DataFrame(np.where(mask, "0", cfig.NEG_INF), index=labels, columns=labels)},
            label=_("Numbers: both masks"))
    s_col, w_col = st.columns(2)
    with s_col:
        st.latex(r"\frac{Q K^\top}{\sqrt{d_k}} + M")
        charts.show_fig(charts.heatmap(steps.scaled_scores, labels, labels, kind="diverging", mask=mask,
                                        title=_("masked scaled scores"), colorbar_title=_("score")),
                        key="causal_fig_scores")
        st.caption(_("shape [{n}, {n}] · masked cells (−∞) are blank with a ×, hover says masked").format(n=n))
        numbers(pd.DataFrame(np.where(mask, np.vectorize(textviews.fmt, otypes=[object])(steps.scaled_scores),
                                      _("{neg_inf} (masked)").format(neg_inf=cfig.NEG_INF)),
                             index=labels, columns=labels),
                label=_("Numbers: masked scaled scores"))
    with w_col:
        st.latex(r"w_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i \cdot k_j}{\sqrt{d_k}} + M_{ij}\right),"
                 r"\quad e^{-\infty} = 0")
        charts.show_fig(cfig.weights_map(steps.weights, labels, mask, fully, color_scale=color_scale,
                                         title=_("causal attention weights") if is_causal else
                                         _("bidirectional attention weights")), key="causal_fig_weights")
        if is_causal:
            shape = (_("shape [{n}, {n}] · each row sums to 1 (lower-triangular) · a fully masked row is all zeros")
                     if fully.any() else _("shape [{n}, {n}] · each row sums to 1 (lower-triangular)"))
        else:
            shape = (_("shape [{n}, {n}] · each row sums to 1 · a fully masked row is all zeros") if fully.any()
                     else _("shape [{n}, {n}] · each row sums to 1"))
        st.caption(shape.format(n=n))
        numbers(steps.weights, labels, labels, label=_("Numbers: weights"))
    o_col, _empty = st.columns(2)
    with o_col:
        st.latex(r"\text{out}_i = \sum_j w_{ij}\, v_j")
        charts.show_fig(cfig.output_map(steps.output, labels, dims, fully,
                                        title=_("causal output") if is_causal else _("bidirectional output")),
                        key="causal_fig_output")
        st.caption((_("shape [n, d_v] = [{n}, {d_v}] · a fully masked row outputs zeros") if fully.any()
                    else _("shape [n, d_v] = [{n}, {d_v}]")).format(n=n, d_v=d_v))
        numbers(steps.output, labels, dims, label=_("Numbers: output"))
    if fully.any():
        st.badge(_n("fully masked: no key to attend to ({k} of {n} query)",
                    "fully masked: no key to attend to ({k} of {n} queries)", n).format(k=int(fully.sum()), n=n),
                 icon="⛔", color="orange")

    st.header(_("3 · No peeking: the future cannot leak"))
    st.markdown(_("Pick a position **t**. Every token after t is replaced by a different one (its embedding row "
                  "becomes a fresh random vector, as if other words stood there), and both modes run again on the "
                  "new sentence. If the mask works, the causal output rows 0..t do not move at all."))


def no_peeking(settings: Settings, n_pad: int, t: int) -> None:
    """Part 3 below the slider: how much each output row moves when every token after ``t`` is replaced."""
    labels, n, d_v = settings.labels, settings.n, settings.d_v
    dims = textviews.dim_labels(d_v)
    sc = scenario(settings, n_pad, t)
    change_b, change_c = sc.row_change(False), sc.row_change(True)
    charts.show_fig(cfig.row_change_bars(change_b, change_c, labels, t, title=_("|Δ output| per row")),
                    key="causal_fig_peek_bars")  # a short title: the legend shares its line
    st.caption(_("Each bar: max over the d_v columns of |output after − output before| for that query. "
                 "“0 (exact)” means bit-for-bit equal, not rounded."))
    st.latex(r"\Delta_i = \max_d \left|\text{out}'_{i,d} - \text{out}_{i,d}\right|")
    for claim in model.no_peeking_claims(sc):  # the causal side, then the bidirectional one
        getattr(st, claim.kind)(claim.text, icon=claim.icon)
    d = max(float(np.abs(sc.output_diff(False)).max()), float(np.abs(sc.output_diff(True)).max())) or 1.0
    left, right = st.columns(2)
    for col, side_is_causal in ((left, False), (right, True)):
        title = _("causal: output after − before") if side_is_causal else _("bidirectional: output after − before")
        charts.into(col)(cfig.change_map(sc.output_diff(side_is_causal), labels, dims, t, (-d, d), title=title),
                         key=f"causal_fig_peek_{model.mode_name(side_is_causal)}")
    query = _("query")
    numbers(pd.DataFrame({query: labels, _("replaced?"): [_("yes") if i > t else _("no") for i in range(n)],
                          _("bidirectional: largest |Δ|"): [cfig.exact_change_text(v) for v in change_b],
                          _("causal: largest |Δ|"): [cfig.exact_change_text(v) for v in change_c]}).set_index(query),
            label=_("Numbers: change per row"))


def padding(settings: Settings, is_causal: bool, n_pad: int) -> None:
    """Part 4: the key padding mask, its combination with the causal mask, and why −∞ needs a rule."""
    labels, n = settings.labels, settings.n
    sc = scenario(settings, n_pad)
    fully = sc.fully_masked(is_causal)
    st.header(_("4 · Padding: the key padding mask"))
    st.markdown(_(
        "Sentences in a batch have different lengths, so the short ones are padded. A **key padding mask** blocks "
        "the padding keys for every query. It combines with the causal mask by logical AND: a query may attend to a "
        "key only if both allow it."
    ))
    key_padding = textviews.latex_words(_("key padding"))
    st.latex(r"\text{mask} = " + textviews.latex_words(_("causal")) + r" \wedge " + key_padding + r",\qquad "
             + key_padding + r"_{ij} = \text{True} \iff j < n - p")
    if n_pad == 0:
        st.caption(_("Padding is 0 (the slider at the top): every key is real."))
    pad_full = np.broadcast_to(sc.key_valid, (n, n))
    pad_title = _n("key padding mask (last {n} is padding)", "key padding mask (last {n} are padding)", n_pad)
    cols = st.columns(3)
    for col, m, title, key in ((cols[0], sc.causal_mask, _("causal mask"), "causal_fig_mask_causal"),
                               (cols[1], pad_full, pad_title.format(n=n_pad), "causal_fig_mask_pad"),
                               (cols[2], sc.mask(True), _("combined: causal ∧ padding"), "causal_fig_mask_combined")):
        badged = key == "causal_fig_mask_combined"
        charts.into(col)(cfig.boolean_mask_figure(np.ascontiguousarray(m), labels, title=title, short=True,
                                                  show_legend=False,
                                                  badges=np.flatnonzero(sc.fully_masked(True)) if badged else (),
                                                  badge_text=_("fully masked")), key=key)
    st.caption(_("Blue T = True (may attend), grey F = False (blocked). Every query row of the key padding mask is the "
                 "same: it is one row [n_k] broadcast over the queries. Padded *queries* still get an output (from the "
                 "real keys); a model ignores those rows later."))
    if n_pad:
        st.markdown(model.padded_columns(sc.steps(is_causal).weights, sc.key_valid, is_causal))
    if fully.any():
        st.badge(_n("fully masked: no key to attend to: {k} of {n} query",
                    "fully masked: no key to attend to: {k} of {n} queries", n).format(k=int(fully.sum()), n=n),
                 icon="⛔", color="orange")
        st.markdown(_("These queries have **no key left**: their weights and output are all zeros (a rule, see "
                      "below), never NaN."))

    with st.container(border=True):
        st.subheader(_("Why −∞, and why fully masked rows need a rule"))
        rules = model.masking_rules(sc.causal_steps.scaled_scores[0], sc.causal_mask[0])
        st.markdown(_(
            "- **−∞** makes the weight exactly 0: $e^{-\\infty} = 0$, whatever the other scores are.\n"
            "- A **large negative constant** such as −1e9 works too while a row keeps at least one key: "
            "$e^{-10^9}$ underflows to exactly 0 in float64. It must fit the dtype, though: float16 stops at ±65504, "
            "so there −1e9 overflows to −∞; libraries use the dtype's most negative finite number instead.\n"
            "- A row with **every** key blocked breaks both. With −∞ the softmax computes 0 / 0 (undefined). With "
            "−1e9 every score drops by the same amount, the softmax does not change, and the row attends to keys it "
            "must not see. So a rule is needed: this app (like PyTorch ≥ 2.5's SDPA) gives such a row zero weights "
            "and a zero output."
        ))
        first = _("query 0 ({token})").format(token=labels[0])
        table = pd.DataFrame(
            [[_("allowed (causal row 0)")] + [_("yes") if a else _("no") for a in rules.allowed],
             [_("scaled score")] + [textviews.fmt(v) for v in rules.scores],
             [_("row 0 with −∞")] + [textviews.fmt(v) for v in rules.neg_inf],
             [_("row 0 with −1e9")] + [textviews.fmt(v) for v in rules.large_negative],
             [_("all keys blocked, −∞, no rule")] + [_("undefined (0 / 0)")] * n,
             [_("all keys blocked, −1e9")] + [textviews.fmt(v) for v in rules.all_blocked_large_negative],
             [_("all keys blocked, zero rule (this app)")] + [textviews.fmt(v) for v in rules.all_blocked_rule]],
            columns=[first] + labels,
        ).set_index(first)
        st.dataframe(table, width="stretch")
        st.caption(_("With −1e9 and every key blocked, the weights are the softmax of the unmasked scores: the mask "
                     "has silently disappeared."))

    st.header(_("5 · Row by row"))
    st.markdown(_("Pick a query to see which keys the **causal** mask lets it see (hovering a heat map cell tells the "
                  "same: blocked cells say *masked*).") if is_causal else
                _("Pick a query to see which keys the **bidirectional** mask lets it see (hovering a heat map cell "
                  "tells the same: blocked cells say *masked*)."))


@section
def peeking_and_padding(settings: Settings, is_causal: bool, n_pad: int, t: int) -> None:
    """Everything between the "no peeking" slider and the query box: the rest of part 3, part 4, part 5's intro (for
    a one-token sentence, with no slider, first that ``t`` is fixed at 0)."""
    if settings.n == 1:
        st.caption(_("One token: t = 0 (there is no later token to replace)."))
    no_peeking(settings, n_pad, t)
    padding(settings, is_causal, n_pad)


@section
def row(settings: Settings, is_causal: bool, n_pad: int, q: int) -> None:
    """Part 5: which keys query ``q`` may see, its masked scores and weights, and its weighted sum."""
    labels, n = settings.labels, settings.n
    sc = scenario(settings, n_pad)
    steps, allowed, fully = sc.steps(is_causal), sc.mask(is_causal)[q], sc.fully_masked(is_causal)
    r1, r2 = st.columns([2, 3])
    with r1:
        tables.dataframe(pd.DataFrame({  # the weights with 4 decimals, a decimal comma in pt and tr
            _("key"): labels,
            _("may attend?"): [_("✓ yes") if a else _("✗ no") for a in allowed],
            _("masked scaled score"): [textviews.fmt(s) if a else cfig.NEG_INF
                                       for s, a in zip(steps.scaled_scores[q], allowed, strict=True)],
            _("weight"): steps.weights[q],
        }), hide_index=True, width="stretch")
        if fully[q]:
            st.badge(_(cfig.FULLY_MASKED_BADGE), icon="⛔", color="orange")
        else:
            sees = _n("{token} sees {k} of {n} key:", "{token} sees {k} of {n} keys:", n)
            st.text(sees.format(token=labels[q], k=int(allowed.sum()), n=n) + "\n" + "  ".join(
                lab for lab, a in zip(labels, allowed, strict=True) if a))
    with r2:
        title = (_("causal weights of query {query}") if is_causal else
                 _("bidirectional weights of query {query}")).format(query=labels[q])
        charts.show_fig(charts.weights_bar(steps.weights[q], labels, query_label=labels[q], title=title),
                        key="causal_fig_row_bar")
    if not fully[q]:
        st.latex(textviews.weighted_sum_latex(labels[q], steps.weights[q], steps.V, steps.output[q]))
