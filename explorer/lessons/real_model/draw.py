"""Sections of the real-model lesson, and the cached computations behind them.

Every computation keys on the prompt's token ids and the page's choices; the model is passed as ``_model`` (not
hashed: one per process, :mod:`explorer.shell.llm`). The statistics, the grid, the maps and the prediction all read
the door's one cached forward pass (:func:`explorer.shell.llm.run`), so another statistic runs no model, and another
head runs only the layers below it (:func:`explorer.shell.llm.head_steps`).

Cache sizes (SmolLM2-135M at the 64-token limit): a forward pass 4.6 MB and a head's steps about 0.9 MB (the
door's), the head statistics 7 x 30 x 9 float64 (15 kB, 16 entries here); the sections' recorded elements are
bounded by :func:`explorer.shell.cache.section` (a 64-token ``head_steps`` entry is about 3 MB). Everything
expires :data:`explorer.shell.cache.TTL_SECONDS` after it was stored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons.real_model import charts as rfig
from explorer.lessons.real_model import model
from explorer.shell import charts, head_statistics, i18n, llm, tables
from explorer.shell.cache import cached, figure, section
from explorer.shell.i18n import translator
from explorer.shell.tables import numbers
from explorer.shell.textviews import (
    dim_labels,
    fmt,
    head_labels,
    latex_words,
    layer_labels,
    md_escape,
    tokens_count,
)

_, _n = translator(__name__)

HALF_TEXT_MAX = 7  # numbers in the cells of a half-width map up to this many tokens (wider cells than that: none)
LIGHT_DIMS_ABOVE = 32
"""Above this many tokens the six ``[n, 64]`` maps of a head (Q, K, V, Q and K after RoPE, output) use the shell's
light hover (``token 3 · dim 5: 0.1234``, positions instead of labels; the axes still name the tokens): it keeps a
64-token page near 3 MB of chart data instead of 4."""


# --- cached computations -------------------------------------------------------------------------


statistics = cached(max_entries=16)(model.statistics)
repeated_prompt = cached(max_entries=8)(model.repeated_prompt)  # two short texts an entry
grid_figure = figure(max_entries=32)(rfig.grid_figure)


# --- sections -------------------------------------------------------------------------------------


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title(_("Inside a real model"))


@section
def intro(config: llm.LlamaConfig, stored: str, name: str, quantized: bool = True) -> None:
    """What the page does, the model's shape and parts (from its config), and the honest note (``stored``: how the
    file stores the weights, :func:`model.precision`; ``name``: :func:`explorer.shell.llm.model_name`; ``quantized``:
    :attr:`explorer.shell.llm.WeightStorage.quantized`)."""
    st.markdown(_(
        "Everything so far ran on random weights. Here the same attention runs inside **{model}**, a trained "
        "decoder: {shape}; {parts}. Type a prompt: the model reads its tokens, predicts the next one, and every one "
        "of its {heads} heads shows you what it attends to."
    ).format(model=md_escape(name), shape=llm.describe(config), parts=model.parts_text(config),
             heads=config.n_layers * config.n_heads))
    st.caption(_(
        "New here: a **decoder** predicts each token from the ones before it (the causal mask). Each token's "
        "**residual stream** is its running vector of {d_model} numbers: it starts as the token's embedding, and each "
        "of the {layers} blocks adds to it what its attention writes (the heads' outputs through the output "
        "projection W_o) and what its **MLP** writes ({mlp}, a small network applied to each token alone)."
    ).format(d_model=config.d_model, layers=config.n_layers, mlp=llm.mlp_name(config)) + " "
        + model.norm_sentence(config) + " " + model.position_sentence(config))
    local = model.local_layers_text(config)
    if local:
        st.caption(local)
    st.info(model.honest_note(stored, quantized), icon="🔎")


@section
def tokens(p: llm.Prompt, vocab_size: int, sentencepiece: bool = False, bos: bool = False) -> None:
    """The prompt's BPE tokens as readable pieces (a leading space as ␣), with their ids; ``sentencepiece``, ``bos``:
    the tokenizer's kind and whether it puts a BOS token first (:func:`model.tokens_caption`)."""
    st.caption(model.tokens_caption(tokens_count(p.n), i18n.integer(vocab_size), sentencepiece, bos))
    st.text(" │ ".join(llm.visible_piece(s) for s in p.pieces))
    with st.expander(_("Numbers: token ids")):
        st.dataframe(pd.DataFrame({_("position"): range(p.n), _("piece"): [llm.visible_piece(s) for s in p.pieces],
                                   "id": p.ids}), hide_index=True, width="stretch")


@section
def appended_tokens(_model: llm.LlamaModel, ids: tuple[int, ...], n_typed: int) -> None:
    """The tokens appended by greedy decoding (by id) and the text the model now reads, pending bytes as pending."""
    extra = ids[n_typed:]
    shown = llm.text(_model, ids)
    st.caption(_n("The last {n} token (id {ids}) was appended by greedy decoding, as an id: the model reads exactly "
                  "the token it chose, not the text tokenized again. The text so far:",
                  "The last {n} tokens (ids {ids}) were appended by greedy decoding, as ids: the model reads exactly "
                  "the tokens it chose, not the text tokenized again. The text so far:", len(extra)).format(
        n=len(extra), ids=", ".join(map(str, extra))))
    st.text(shown.text)
    if shown.pending:
        st.caption(_n("Pending: {n} byte ({bytes}) that begins a character the next tokens may finish; it is shown "
                      "once its last byte arrives, never as a replacement character.",
                      "Pending: {n} bytes ({bytes}) that begin a character the next tokens may finish; it is shown "
                      "once its last byte arrives, never as a replacement character.", len(shown.pending)).format(
            n=len(shown.pending), bytes=shown.pending_escaped))


@section
def prediction(_model: llm.LlamaModel, ids: tuple[int, ...], tied: bool | None = True) -> None:
    """The next-token prediction: the top tokens with their probabilities, as a table and as bars (``tied``: the
    file's output matrix is the embedding, :attr:`explorer.shell.llm.WeightStorage.tied`; ``None``: not read)."""
    f, c = llm.run(_model, ids), _model.config
    shown = [llm.visible_piece(s) for s in f.top_pieces]
    left, right = st.columns([2, 3])
    with left:
        tables.dataframe(pd.DataFrame({_("rank"): range(1, len(shown) + 1), _("next token"): shown, "id": f.top_ids,
                                       _("probability"): np.asarray(f.top_probabilities, dtype=float)}),
                         digits=4, hide_index=True, width="stretch")
    with right:
        charts.show_fig(rfig.prediction_bars(shown, f.top_probabilities,
                                             title=_("next token: top {k}").format(k=len(shown))),
                        key="rm_fig_prediction")
    st.latex("p(" + latex_words(_("next")) + r" = t \mid " + latex_words(_("prompt"))  # the formula's words translate
             + r") = \mathrm{softmax}(\text{logits}_{n-1})_t")
    st.latex(model.logits_latex(c, tied))
    st.caption(model.logits_caption(i18n.integer(c.vocab_size), tied, len(shown),
                                    i18n.percent(sum(f.top_probabilities), 1))
               + " " + _("x^({layers})ₙ₋₁: the residual stream at the last position after all {layers} blocks; the "
                         "**logits**: one score per token of the vocabulary, which the softmax turns into the "
                         "probabilities.").format(layers=c.n_layers))


@section
def statistic_definition(stat: str, n: int, induction_rows: tuple[int, ...]) -> None:
    """The chosen statistic's formula, what it measures, and which query rows it averages over."""
    name = head_statistics.name(stat)
    st.markdown(f"**{i18n.capitalize(name)}**")  # Turkish: "İndüksiyon", not str.upper's "Indüksiyon"
    st.latex(model.STATISTICS[stat].formula)
    st.markdown(head_statistics.meaning(stat))
    if stat == "induction":
        rows = ", ".join(map(str, induction_rows[:12])) + (", …" if len(induction_rows) > 12 else "")
        st.caption(_n("Averaged over the {n} query row R whose token occurred earlier, at least three positions back: "
                      "{rows}. w = one head's attention weights, t_j = token j's id.",
                      "Averaged over the {n} query rows R whose token occurred earlier, at least three positions "
                      "back: {rows}. w = one head's attention weights, t_j = token j's id.",
                      len(induction_rows)).format(n=len(induction_rows), rows=rows))
    else:
        first = model.FIRST_ROW
        st.caption(_("Averaged over the query rows i = {first} … {last} ({rows}): row 0 has one key (its weight 1 is "
                     "on the first token and on itself at once) and row 1's previous token is the first token, so "
                     "both would blur sink, previous and self. w = one head's attention weights.").format(
            first=first, last=n - 1, rows=model.rows_count(n - first)))
    lo, hi = model.color_range(stat, n)
    top = {"entropy": _("log₂ n is a uniform row over all n tokens."),
           "distance": _("the top is every query on the first token.")}.get(stat)
    top = top or _("a weight (or a sum of weights).")
    st.caption(_("Colour range [{lo}, {hi}] {unit}: {top}").format(
        lo=fmt(lo, 2), hi=fmt(hi, 2), unit=head_statistics.unit(stat), top=top))


@section
def grid_numbers(_model: llm.LlamaModel, ids: tuple[int, ...], stat: str) -> None:
    """The grid's numbers, a layer per row, a head per column."""
    values, c = statistics(_model, ids).get(stat), _model.config
    numbers(values, layer_labels(c.n_layers), head_labels(c.n_heads),
            label=_("Numbers: {statistic} of every head").format(statistic=head_statistics.name(stat)))


@section
def head_map(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, head: int,
             color_scale: str = "fixed") -> None:
    """One head's attention map (rows = queries, causal; colours on ``color_scale``,
    :data:`explorer.shell.charts.COLOR_SCALES`) with its checks and numbers."""
    weights, c = llm.run(_model, ids).attentions[layer, head], _model.config
    labels, n = llm.labels(_model, ids), len(ids)
    st.latex(r"w_{ij} = \mathrm{softmax}_j\!\left(\frac{q_i \cdot k_j}{\sqrt{" + str(c.d_head)
             + r"}} + M_{ij}\right)")
    charts.show_fig(charts.heatmap(weights, labels, labels, mask=model.attention_mask(c, layer, n),
                                   show_text=n <= HALF_TEXT_MAX, title=model.head_title(layer, head),
                                   color_scale=color_scale, colorbar_at="below"),
                    key="rm_fig_head")
    st.caption(_("shape [n_q, n_k] = [{n}, {n}] · rows = queries (top to bottom), columns = keys · {masked} · "
                 "{check}").format(n=n, masked=model.masked_caption(c, layer, n), check=model.causal_check(weights)))
    kind = model.layer_kind(c, layer)
    if kind:
        st.caption(kind)
    numbers(weights, labels, labels, label=_("Numbers: attention weights"))


@section
def layer_mean_map(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, color_scale: str = "fixed") -> None:
    """The mean of the heads' maps of one layer, labelled as a mean."""
    labels, n, h = llm.labels(_model, ids), len(ids), _model.config.n_heads
    st.latex(r"\bar w_{ij} = \frac{1}{" + str(h) + r"}\sum_{h=0}^{" + str(h - 1) + r"} w^{(h)}_{ij}")
    mean = model.layer_mean(llm.run(_model, ids).attentions, layer)  # a mean, not a head
    charts.show_fig(charts.heatmap(mean, labels, labels, mask=model.attention_mask(_model.config, layer, n),
                                   show_text=n <= HALF_TEXT_MAX,
                                   title=_("MEAN over the {h} heads of layer {layer} (not a head)").format(
                                       h=h, layer=layer),
                                   color_scale=color_scale, colorbar_at="below"),
                    key="rm_fig_layer_mean")
    st.caption(_("The average of the layer's {h} maps: a summary no single head computes. Heads that do different "
                 "things blur together here, which is why the page looks at heads one by one.").format(h=h))


@section
def head_group(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, head: int,
               color_scale: str = "fixed") -> None:
    """The head's six statistics, and the query heads that share its key/value head, side by side."""
    f, stats, c = llm.run(_model, ids), statistics(_model, ids), _model.config
    labels, n = llm.labels(_model, ids), len(ids)
    g = c.group_size
    kv = head // g
    if stats.defined:
        undefined = (_("undefined (repeats too close)") if model.repeats_too_close(ids)
                     else _("undefined (no repeated token)"))
        rows = [{_("statistic"): head_statistics.name(k), _("value"): fmt(float(stats.get(k)[layer, head]), 4)
                 if stats.get(k) is not None else undefined, _("unit"): head_statistics.unit(k)}
                for k in model.STATISTICS]
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")

    st.subheader(model.gqa_title(c))
    st.markdown(model.gqa_text(c, head, md_escape(llm.model_name(_model))))
    if g == 1:  # the head's own map is above: no other head reads its keys and values
        return
    group = range(kv * g, kv * g + g)
    mask = model.attention_mask(c, layer, n)
    for col, h in zip(st.columns(g), group, strict=True):
        title = (_("head {h} (kv {kv}) ◀ chosen") if h == head else _("head {h} (kv {kv})")).format(h=h, kv=kv)
        charts.into(col)(charts.heatmap(f.attentions[layer, h], labels, labels, mask=mask, title=title,
                                        show_text=False, max_xticks=12, height=320, color_scale=color_scale,
                                        colorbar_at="below"),
                         key=f"rm_fig_group_{h - kv * g}")
    st.caption(_("Layer {layer}, query heads {heads}: each row still sums to 1; the keys and values they weigh are "
                 "identical, only the queries differ.").format(layer=layer, heads=", ".join(map(str, group))))


@section
def rmsnorm_step(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, _head: int) -> None:
    """Step 1: the residual stream entering ``layer``, after RMSNorm (the same for every head of the layer).

    ``_head`` (not part of the cache key: the picture does not depend on it) only names the head whose cached
    steps (:func:`explorer.shell.llm.head_steps`) hold ``x_normed``, so a new layer runs its blocks once, not once
    per section.
    """
    s, c = llm.head_steps(_model, ids, layer, _head), _model.config
    labels, n = llm.labels(_model, ids), len(ids)
    st.subheader(_("1 · x after {norm}").format(norm=llm.norm_name(c)))
    st.latex(model.norm_latex(c))
    st.caption(model.norm_caption(c, layer, n))
    charts.show_fig(charts.heatmap(s.x_normed, labels, dim_labels(c.d_model), kind="diverging", row_name=_("token"),
                                   col_name=_("dim"), title=_("x̂ entering layer {layer}").format(layer=layer),
                                   max_xticks=12),
                    key="rm_fig_x")
    numbers(s.x_normed, labels, dim_labels(c.d_model), label=_("Numbers: x after {norm}").format(
        norm=llm.norm_name(c)))


@section
def head_steps(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, head: int,
               color_scale: str = "fixed") -> None:
    """Steps 2-6 of one head on its real numbers: Q/K/V, RoPE, scores, ÷√d_head and mask, softmax, weights · V."""
    s, c = llm.head_steps(_model, ids, layer, head), _model.config
    labels, n = llm.labels(_model, ids), len(ids)
    dh, root = c.d_head, float(np.sqrt(c.d_head))
    d = dim_labels(dh)
    light = n > LIGHT_DIMS_ABOVE

    st.subheader(_("2 · Queries, keys and values"))
    for line in model.qkv_latex(c, head, s.kv_head):
        st.latex(line)
    st.caption(_("W_q: query head {head}'s {dh} columns of the layer's [{d_model}, {q_width}] matrix; W_k, W_v: "
                 "key/value head {kv}'s {dh} columns of [{d_model}, {kv_width}] · Q, K, V: [{n}, {dh}] (d_head = "
                 "{dh}).").format(head=head, dh=dh, d_model=c.d_model, q_width=c.n_heads * dh, kv=s.kv_head,
                                  kv_width=c.n_kv_heads * dh, n=n) + " " + model.qkv_caption(c))
    for col, name, M, role in zip(st.columns(3), "QKV", (s.q_before_rope, s.k_before_rope, s.v),
                                  (_("what am I looking for?"), _("what do I contain?"), _("what do I hand over?")),
                                  strict=True):
        with col:
            charts.show_fig(charts.heatmap(M, labels, d, kind="diverging", row_name=_("token"), col_name=_("dim"),
                                           title=f"{name}: {role}", max_xticks=8, light=light),
                            key=f"rm_fig_{name}")
            numbers(M, labels, d, label=_("Numbers: {matrix}").format(matrix=name))

    if s.angles is None:
        position_step(_model, s, labels, layer)
    else:
        rope_step(c, s, labels, layer, light)

    st.subheader(_("4 · Scores"))
    st.latex(r"S = Q K^\top,\qquad S_{ij} = q_i \cdot k_j")
    st.caption(_("shape [{n}, {n}] · every cell, the future too (the mask comes next)").format(n=n))
    charts.show_fig(charts.heatmap(s.scores, labels, labels, kind="diverging", title=_("scores QKᵀ"),
                                   colorbar_title=_("score"), colorbar_at="below"), key="rm_fig_scores")
    numbers(s.scores, labels, labels, label=_("Numbers: scores"))

    st.subheader(model.mask_title(c, layer))
    kind = model.layer_kind(c, layer)
    if kind:
        st.caption(kind)
    seen = model.keys_seen(c, layer)
    c1, c2 = st.columns(2)
    with c1:
        st.latex(rf"\frac{{S}}{{\sqrt{{{dh}}}}} + M,\qquad \sqrt{{{dh}}} = {root:g}")
        st.latex(model.mask_latex(c, layer))
        charts.show_fig(charts.heatmap(s.scaled_scores, labels, labels, kind="diverging", mask=s.mask,
                                       show_text=n <= HALF_TEXT_MAX,
                                       title=_("scaled, masked scores"), colorbar_title=_("score"),
                                       colorbar_at="below"),
                        key="rm_fig_scaled")
        st.caption(_("shape [{n}, {n}] · {masked}").format(n=n, masked=model.masked_caption(c, layer, n)))
        numbers(pd.DataFrame(np.where(s.mask, np.vectorize(fmt, otypes=[object])(s.scaled_scores), _("−∞ (masked)")),
                             index=labels, columns=labels), label=_("Numbers: scaled, masked scores"))
    with c2:
        st.latex(rf"w_{{ij}} = \frac{{e^{{s_{{ij}}/{root:g}}}}}{{\sum_{{{model.keys_seen(c, layer, 'k')}}} "
                 rf"e^{{s_{{ik}}/{root:g}}}}},\qquad e^{{-\infty}} = 0")
        charts.show_fig(charts.heatmap(s.weights, labels, labels, mask=s.mask, title=_("attention weights"),
                                       show_text=n <= HALF_TEXT_MAX, color_scale=color_scale, colorbar_at="below"),
                        key="rm_fig_weights")
        st.caption(_("each row sums to 1 · {check}").format(check=model.causal_check(s.weights)))
        numbers(s.weights, labels, labels, label=_("Numbers: weights"))

    st.subheader(_("6 · Weights · V"))
    st.latex(r"\text{out} = W V,\qquad \text{out}_i = \sum_{" + seen + r"} w_{ij}\, v_j")
    st.caption(_("shape [n, d_head] = [{n}, {dh}] · this head's slice of the input to W_o, which mixes the {heads} "
                 "heads' outputs back to {d_model} dims").format(n=n, dh=dh, heads=c.n_heads, d_model=c.d_model))
    charts.show_fig(charts.heatmap(s.output, labels, d, kind="diverging", row_name=_("token"), col_name=_("dim"),
                                   title=_("output of head {head}").format(head=head), max_xticks=16, light=light),
                    key="rm_fig_output")
    numbers(s.output, labels, d, label=_("Numbers: output"))


def rope_step(c: llm.LlamaConfig, s: llm.HeadSteps, labels: list[str], layer: int, light: bool) -> None:
    """Step 3 with RoPE (inside :func:`head_steps`): the formula in the file's pair layout with the layer's base, the
    angles, Q and K after the rotation."""
    dh, n = c.d_head, len(labels)
    d = dim_labels(dh)
    st.subheader(_("3 · RoPE: rotate Q and K by position"))
    for line in model.rope_latex(c, s.rope_base):
        st.latex(line)
    st.markdown(model.rope_text(c, layer))
    a_col, q_col, k_col = st.columns(3)
    with a_col:
        angles = np.asarray(s.angles, dtype=np.float64)  # [n, d_head / 2] radians
        charts.show_fig(rfig.angle_map(angles, labels, title=_("rotation angle p·θᵢ, mod 360°")), key="rm_fig_angles")
        slowest = f"{float(np.degrees(angles[1, -1])) if n > 1 else 0.0:.1e}"
        fastest = float(angles[1, 0]) if n > 1 else 1.0  # pair 0's turn per position: 1 radian unless scaled
        st.caption(_("shape [n, {half}] · pair 0 turns {fastest} rad ({degrees}°) per position, pair {last} about "
                     "{slowest}° (slow pairs carry position over long ranges) · colours wrap around like a clock face; "
                     "Numbers: the angles in radians").format(
            half=dh // 2, last=dh // 2 - 1, fastest=i18n.general(fastest, 3), degrees=f"{np.degrees(fastest):.0f}",
            slowest=slowest.replace(".", i18n.plotly_separators()[0])))
        numbers(angles, labels, [_("pair") + f" {j}" for j in range(angles.shape[1])],
                label=_("Numbers: angles (radians)"))
    for col, name, M in ((q_col, "Q", s.q), (k_col, "K", s.k)):
        with col:
            charts.show_fig(charts.heatmap(M, labels, d, kind="diverging", row_name=_("token"), col_name=_("dim"),
                                           title=_("{matrix} after RoPE").format(matrix=name), max_xticks=8,
                                           light=light),
                            key=f"rm_fig_{name}_rope")
            numbers(M, labels, d, label=_("Numbers: {matrix} after RoPE").format(matrix=name))
    st.caption(_("Row 0 (position 0) does not move: every angle is 0 there."))


def position_step(_model: llm.LlamaModel, s: llm.HeadSteps, labels: list[str], layer: int) -> None:
    """Step 3 with learned positions (gpt2; inside :func:`head_steps`): why nothing rotates, and the position vectors
    added to the embeddings before block 0."""
    c = _model.config
    st.subheader(_("3 · Positions: learned vectors, no rotation"))
    st.latex(r"x_0[p] = E[t_p] + P[p],\qquad P \in \mathbb{R}^{" + str(c.context_length) + r" \times "
             + str(c.d_model) + "}")
    st.markdown(model.learned_positions_text(c, md_escape(llm.model_name(_model))))
    P = s.position_embedding  # [n, d_model]
    charts.show_fig(charts.heatmap(P, labels, dim_labels(c.d_model), kind="diverging", row_name=_("token"),
                                   col_name=_("dim"), title=_("P[p]: the position vectors added before block 0"),
                                   max_xticks=12, light=len(labels) > LIGHT_DIMS_ABOVE),
                    key="rm_fig_positions")
    st.caption(_("shape [n, d_model] = [{n}, {d_model}] · row p is P[p], the same for every prompt: it depends on the "
                 "position only, not on the token there.").format(n=len(labels), d_model=c.d_model))
    numbers(P, labels, dim_labels(c.d_model), label=_("Numbers: the position vectors P[p]"))


@section
def quiz_intro(graded_rows: tuple[int, ...], has_induction: bool, too_close: bool, n: int) -> None:
    """How the exercise picks and grades its heads, on which rows (the same rows for every score)."""
    st.markdown(_(
        "Below are a few heads of the model on your prompt, picked because each one clearly does one thing on the "
        "rows graded: its largest score beats the runner-up by at least {margin}. Label each from its map, then "
        "check. **How grading decides:** each head gets a score on [0, 1] per label — *{sink}* (its weight on token "
        "0), *{previous}*, *{self}*, *{induction}* (its weight on the tokens that followed earlier occurrences of "
        "the query's token) and *{broad}* (its entropy divided by the largest possible, 1 = uniform) — and its "
        "answer is the largest.").format(margin=fmt(model.MIN_MARGIN, 2),
                                         **{key: model.label(key) for key in model.LABELS}))
    if has_induction:
        st.caption(_n("Every score is averaged over the same query rows, the {n} row R whose token occurred earlier "
                      "({rows}): only there can an induction head show what it does. Where it has nothing to copy "
                      "(the first copy of a repeat) it often rests on the first token, so the map's other rows are "
                      "not graded.",
                      "Every score is averaged over the same query rows, the {n} rows R whose token occurred earlier "
                      "({rows}): only there can an induction head show what it does. Where it has nothing to copy "
                      "(the first copy of a repeat) it often rests on the first token, so the map's other rows are "
                      "not graded.", len(graded_rows)).format(n=len(graded_rows), rows=model.row_list(graded_rows)))
    else:
        st.caption(_n("Every score is averaged over the same query rows, {rows} ({n} row of {total}).",
                      "Every score is averaged over the same query rows, {rows} ({n} rows of {total}).",
                      len(graded_rows)).format(rows=model.row_list(graded_rows), n=len(graded_rows), total=n))
        reason = (_("its tokens repeat only right away or one apart, which cannot tell induction from previous-token "
                    "attention") if too_close else _("your prompt repeats no token"))
        st.caption(_("No induction head is asked: {reason}. Make a repeated random prompt (above) to add one.").format(
            reason=reason))


@section
def quiz_map(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, head: int,
             color_scale: str = "fixed") -> None:
    """A small attention map of one head of the exercise (no statistic shown)."""
    labels, n = llm.labels(_model, ids), len(ids)
    fig = charts.heatmap(llm.run(_model, ids).attentions[layer, head], labels, labels,
                         mask=model.attention_mask(_model.config, layer, n),
                         title=model.head_title(layer, head), show_text=False, max_xticks=8, height=340,
                         color_scale=color_scale, colorbar_at="none")  # the sidebar's colour scale, as above
    charts.show_fig(fig, key=f"rm_fig_quiz_{layer}_{head}")


@section
def reveal(_model: llm.LlamaModel, ids: tuple[int, ...], guesses: tuple[str | None, ...]) -> None:
    """The answers, every score of each head, and the learner's grade."""
    heads = model.quiz_heads(statistics(_model, ids))
    right = model.grade(heads, guesses)
    score_names = [k for k, _ in heads[0].scores]
    rows = []
    for q, g, ok in zip(heads, guesses, right, strict=True):
        row = {_("head"): model.head_title(q.layer, q.head),
               _("your guess"): model.label(g) if g in model.LABELS else _("(none)"),
               _("answer"): model.label(q.answer), _("right?"): "✓" if ok else "✗"}
        row.update({_("{label} score").format(label=model.label(k)): fmt(v, 3) for k, v in q.scores})
        row[_("margin")] = fmt(q.margin, 3)
        rows.append(row)
    kind, claim = model.grade_claim(right)
    getattr(st, kind)(claim)
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
    st.caption(_("Scores on [0, 1]: {labels}, each averaged over the same query rows ({rows}). The answer is the "
                 "largest; the margin is how far it beats the runner-up. Click a head in the grid above (or set the "
                 "sliders) to see it up close.").format(labels=", ".join(model.label(k) for k in score_names),
                                                         rows=model.row_list(statistics(_model, ids).graded_rows)))


@section
def induction_undefined(ids: tuple[int, ...]) -> None:
    """Why the induction score is undefined for this prompt: no repeated token, or repeats too close to tell
    induction from previous-token attention (:func:`model.repeats_too_close`)."""
    if model.repeats_too_close(ids):
        st.info(_("**The induction score is undefined for this prompt: its tokens repeat, but only right away or "
                  "one token apart** (as in “the the” or “one two one”). For such a repeat the token that followed "
                  "the earlier occurrence is the query itself or the token just before it, so attention there cannot "
                  "be told from a self or previous-token head: this prompt has no row that separates induction from "
                  "previous-token attention. A repeat needs at least two other tokens in between "
                  "(“a b c a” makes row 3 count). Make a prompt that repeats a random word sequence:"), icon="🔁")
    else:
        st.info(_("**The induction score is undefined for this prompt: no token in it occurs twice.** The score "
                  "measures how much a repeated token attends to the token that followed its earlier occurrence, so "
                  "it needs a repeat. Make a prompt that repeats a random word sequence:"), icon="🔁")
