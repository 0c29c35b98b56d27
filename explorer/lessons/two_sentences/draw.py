"""Sections of the two-sentences page: the intro, sentence A, the comparison (part 1) and the order test (part 2).

The layer's settings come as a :class:`~explorer.lessons.two_sentences.model.LayerSettings`, sentences as tuples of
tokens. The page keeps the text box, the shuffle controls and the "last valid sentence B" state.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import attention as A
from explorer.lessons.two_sentences import charts as tfig
from explorer.lessons.two_sentences import model
from explorer.lessons.two_sentences.model import LayerSettings, gap_text
from explorer.shell import charts, i18n, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import translator
from explorer.shell.settings import token_label, token_labels
from explorer.shell.tables import numbers
from explorer.shell.textviews import tokens_count

_, _n = translator(__name__)
_shell = translator("explorer.shell")[0]  # the shell's own words shown here (its colour scales' meanings)

scenario = cached(max_entries=8)(model.two_sentences_scenario)  # up to 6.6 MiB an entry


@section
def intro() -> None:
    """The page's title, what it compares, and the formula with one set of weights."""
    st.title(_("Two sentences, one set of weights"))
    st.markdown(_(
        "Feed two sentences through the **same** self-attention layer (the same `W_q`, `W_k`, `W_v`, drawn from the "
        "sidebar's seed) and compare what each token attends to (lesson exercise 3). Then shuffle the words: "
        "attention on its own does not know the order of the words."
    ))
    st.latex(r"W^{(s)} = \mathrm{softmax}\!\left(\frac{X^{(s)} W_q \,\big(X^{(s)} W_k\big)^\top}{\sqrt{d_k}}\right),"
             r"\qquad s \in \{A, B\},\ \text{one } W_q, W_k, W_v")


@section
def embedding_note() -> None:
    """This page always uses per-token embeddings (shown when the sidebar says otherwise)."""
    st.info(_("This page always uses **per-token** embeddings (the sidebar's *lesson* choice is not used here): "
              "each distinct word has one fixed vector, so a word shared by both sentences has the same vector in "
              "both. With the lesson's random rows, a row depends on its position, not on the word."), icon="ℹ️")


@section
def sentence_a(sentence: str) -> None:
    """Sentence A as typed in the sidebar (beside the box for sentence B)."""
    st.markdown(_("**Sentence A** (the sidebar's sentence)"))
    st.code(sentence, language=None)


@section
def settings_caption(layer: LayerSettings) -> None:
    """One caption: the layer's settings."""
    text = (_("per-token embeddings · d_model = {d_model} · d_k = d_v = {d_k} · seed = {seed} · with positional "
              "encoding (sidebar)") if layer.positional else
            _("per-token embeddings · d_model = {d_model} · d_k = d_v = {d_k} · seed = {seed} · without positional "
              "encoding (sidebar)"))
    st.caption(text.format(d_model=layer.d_model, d_k=layer.d_k, seed=layer.seed))


def comparison(cmp: model.Comparison | None, color_scale: str = "fixed") -> None:
    """Part 1's body: the tokens side by side, both weight maps, their difference and entropies."""
    if cmp is None:
        st.info(_("Type sentence B above to compare the two sentences."))
        return
    m = cmp.m
    if cmp.n_a != cmp.n_b:
        st.info(_("The sentences have different lengths (A: {a}, B: {b}). Comparing the first {m} of each; the rest "
                  "of the longer one is left out.").format(a=tokens_count(cmp.n_a), b=cmp.n_b, m=tokens_count(m)))
    labels_a = tfig.marked_labels(cmp.tokens_a, cmp.shared_a)
    labels_b = tfig.marked_labels(cmp.tokens_b, cmp.shared_b)
    yes, no = _("yes"), _("no")
    # ★ in the word's own cell, not two more columns: the table fits a 390 px phone (issue 47)
    table = pd.DataFrame({
        **{name: [f"{t} {tfig.SHARED_MARK}" if s else t for t, s in zip(tokens, shared, strict=True)]
           for name, tokens, shared in (("A", cmp.tokens_a, cmp.shared_a), ("B", cmp.tokens_b, cmp.shared_b))},
        _("same word here?"): [yes if a == b else no for a, b in zip(cmp.tokens_a, cmp.tokens_b, strict=True)],
    }, index=pd.Index(range(m), name=_("position")))
    shared_cells = pd.DataFrame(False, index=table.index, columns=table.columns)
    shared_cells["A"], shared_cells["B"] = cmp.shared_a, cmp.shared_b
    st.dataframe(table.style.apply(lambda _: shared_cells.map(
        lambda s: "background-color: #fff3cd" if s else ""), axis=None), width="stretch")
    st.caption(_("{mark} = a word both sentences contain: per-token embeddings give it the same vector in both, so "
                 "differences come from its neighbours (and, if on, its position).").format(mark=tfig.SHARED_MARK))
    left, right = st.columns(2)
    for col, name, steps, labels in ((left, "A", cmp.steps_a, labels_a), (right, "B", cmp.steps_b, labels_b)):
        title = _("sentence {name}: attention weights").format(name=name)
        charts.into(col)(charts.heatmap(steps.weights, labels, labels, title=title, color_scale=color_scale),
                         key=f"two_fig_weights_{name.lower()}")
    st.caption(_("shape [{m}, {m}] each · colours: {scale} · row = query, column = key").format(
        m=m, scale=_shell(charts.COLOR_SCALES[color_scale])))
    if cmp.identical:
        st.success(_("Same sentence twice: the difference is exactly {gap} everywhere (same words, same vectors, "
                     "same weights).").format(gap=i18n.number(cmp.gap, 1)), icon="✅")
    pairs = tfig.pair_labels(cmp.tokens_a, cmp.tokens_b)
    d1, d2 = st.columns(2)
    with d1:
        st.latex(r"\Delta = W^{(A)} - W^{(B)}")
        charts.show_fig(charts.heatmap(cmp.diff, pairs, pairs, kind="diverging", title=_("difference A − B"),
                                        colorbar_title=_("Δ weight")), key="two_fig_diff")
        st.caption(_("diverging scale centred on 0 · largest |Δ| = {gap}").format(gap=textviews.fmt(cmp.gap, 4)))
    with d2:
        st.latex(r"H_i = -\sum_j w_{ij} \ln w_{ij}")
        charts.show_fig(tfig.entropy_bars(cmp.entropy_a, cmp.entropy_b, pairs, names=("A", "B"),
                                          title=_("entropy of each query's weights")), key="two_fig_entropy")
        st.caption(_("0 = all weight on one key; log n = spread evenly over all keys."))
    numbers({_("Weights A"): pd.DataFrame(cmp.steps_a.weights, index=labels_a, columns=labels_a),
             _("Weights B"): pd.DataFrame(cmp.steps_b.weights, index=labels_b, columns=labels_b),
             _("Difference A − B"): pd.DataFrame(cmp.diff, index=pairs, columns=pairs),
             _("Entropies"): pd.DataFrame({_("entropy A"): cmp.entropy_a, _("entropy B"): cmp.entropy_b},
                                          index=pairs)})


@section
def compare(tokens_a: tuple[str, ...], tokens_b: tuple[str, ...], layer: LayerSettings,
            color_scale: str = "fixed") -> None:
    """Part 1 (both sentences through one layer; ``tokens_b`` may be empty) and part 2's intro, above its controls."""
    st.header(_("1 · Same weights, two sentences"))
    comparison(scenario(tokens_a, tokens_b, layer).comparison, color_scale)
    st.header(_("2 · Order: attention alone does not know word order"))
    st.markdown(_(
        "Self-attention compares every token with every token; nothing in the formula says *where* a token "
        "stands. Shuffle the words of sentence A (a permutation matrix P) and, without positional encoding, the "
        "attention map is the original with its rows **and** columns shuffled the same way:"
    ))
    st.latex(r"\mathrm{softmax}\!\left(\frac{(PX) W_q\, \big((PX) W_k\big)^\top}{\sqrt{d_k}}\right) "
             r"= P\, \mathrm{softmax}\!\left(\frac{X W_q (X W_k)^\top}{\sqrt{d_k}}\right) P^\top")


def shuffle_test(order: model.OrderCheck, color_scale: str = "fixed") -> None:
    """The shuffled sentence's weight maps, put back and compared with the original."""
    n = len(order.tokens)
    labels = token_labels(order.tokens)
    shuffled_labels = [token_label(t, int(p)) for t, p in zip(order.shuffled_tokens, order.perm, strict=True)]
    st.markdown(_("Shuffled sentence A (in the pictures each token keeps its original position in brackets):"))
    st.text(" ".join(order.shuffled_tokens))
    o1, o2 = st.columns(2)
    charts.into(o1)(charts.heatmap(order.original.weights, labels, labels, title=_("original sentence A"),
                                   color_scale=color_scale), key="two_fig_order_original")
    charts.into(o2)(charts.heatmap(order.shuffled.weights, shuffled_labels, shuffled_labels,
                                    title=_("shuffled sentence (its own order)"), color_scale=color_scale),
                    key="two_fig_order_shuffled")
    o3, o4 = st.columns(2)
    charts.into(o3)(charts.heatmap(order.unpermuted_weights, labels, labels,
                                    title=_("shuffled, rows and columns put back (Pᵀ W P)"), color_scale=color_scale),
                    key="two_fig_order_unpermuted")
    charts.into(o4)(charts.heatmap(order.unpermuted_weights - order.original.weights, labels, labels,
                                    kind="diverging", zrange=(-1.0, 1.0), title=_("put back − original"),
                                    colorbar_title=_("Δ weight")), key="two_fig_order_gap")
    st.caption(_("shape [{n}, {n}] each · top right: rows and columns follow the shuffled order · bottom left: put "
                 "back in the original order, to compare with top left · bottom right: their difference").format(n=n))
    same, text = model.order_claim(order)
    (st.success if same else st.warning)(text, icon="✅" if same else "📍")
    numbers(order.unpermuted_weights - order.original.weights, labels, labels, label=_("Numbers: put back − original"))


@section
def order(tokens_a: tuple[str, ...], layer: LayerSettings, shuffle: bool, shuffle_seed: int,
          color_scale: str = "fixed") -> None:
    """Part 2 below its controls: the shuffle test, two copies of a word and the gaps table (the positional-
    encoding matrix below them is :func:`positional_encoding`: it does not depend on the shuffle)."""
    positional = layer.positional
    sc = scenario(tokens_a, (), layer, shuffle_seed)
    if not shuffle:
        st.info(_("Switch on **Shuffle the words** to run the test on sentence A."))
    elif len(sc.order.tokens) == 1:
        st.info(_("Sentence A has one token: there is nothing to shuffle."))
    else:
        shuffle_test(sc.order, color_scale)

    rep = sc.repeat
    st.subheader(_("Two copies of the same word"))
    rep_labels = token_labels(rep.tokens)
    word = rep.tokens[rep.positions[0]]
    if rep.demo:
        st.markdown(_("Sentence A repeats no word (note that *The* and *the* are different tokens), so this part "
                      "uses a demo sentence:"))
        st.text(" ".join(rep.tokens))
    copies = [rep_labels[i] for i in rep.positions]
    rep_steps = rep.positional if positional else rep.plain
    title = _("copies of one word, with positions") if positional else _("copies of one word, no positions")
    charts.show_fig(charts.heatmap(rep_steps.weights[list(rep.positions)], copies, rep_labels, title=title,
                                   color_scale=color_scale), key="two_fig_repeat_rows")
    st.caption(_("shape [{rows}, {cols}] · one row per copy of the word · same query vector → same row, unless "
                 "position is added").format(rows=len(copies), cols=len(rep.tokens)))
    same, text = model.repeat_claim(rep.row_gap(positional), positional)
    (st.success if same else st.warning)(text, icon="✅" if same else "📍")

    st.subheader(_("By how much positional encoding changes this"))
    st.dataframe(pd.DataFrame({
        _("without positional encoding"): [gap_text(sc.order_plain.weight_gap), gap_text(sc.order_plain.output_gap),
                                           gap_text(rep.row_gap(False))],
        _("with positional encoding"): [gap_text(sc.order_positional.weight_gap),
                                        gap_text(sc.order_positional.output_gap), gap_text(rep.row_gap(True))],
    }, index=[_("shuffled & put back vs original: weights"), _("shuffled & put back vs original: outputs"),
              _("rows of the copies of “{word}”").format(word=word)]).rename_axis(_("largest |difference|")),
        width="stretch")
    st.caption(_("Computed both ways whatever the sidebar says; switch *Add sinusoidal positional encoding* in the "
                 "sidebar to see the pictures change. Without it the first two are float rounding (about {tiny}) or "
                 "0.").format(tiny="1e-16"))


@section
def positional_encoding(n: int, d_model: int) -> None:
    """Part 2's end: the sinusoidal positional-encoding matrix ``[n, d_model]`` of sentence A's length ``n``."""
    pe = A.sinusoidal_positional_encoding(n, d_model)
    st.subheader(_("The positional-encoding matrix"))
    st.latex(r"PE_{p,\,2i} = \sin\!\left(\frac{p}{10000^{2i/d_{\text{model}}}}\right),\qquad "
             r"PE_{p,\,2i+1} = \cos\!\left(\frac{p}{10000^{2i/d_{\text{model}}}}\right)")
    positions = [_("position {p}").format(p=p) for p in range(n)]
    dims = textviews.dim_labels(d_model)
    charts.show_fig(charts.heatmap(pe, positions, dims, kind="diverging", zrange=(-1.0, 1.0), row_name=_("position"),
                                   col_name=_("dim"), title=_("PE (added to X when switched on)")), key="two_fig_pe")
    st.caption(_("shape [n, d_model] = [{n}, {d_model}] · Vaswani et al. (2017), §3.5 · every row is different, so "
                 "the same word at two positions gets two different vectors.").format(n=n, d_model=d_model))
    numbers(pe, positions, dims, label=_("Numbers: PE"))
