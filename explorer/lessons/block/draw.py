"""Sections of the transformer-block lesson, and the cached computations behind them.

Every section keys on the prompt's token ids (and the block); the model is passed as ``_model`` (one per process,
:mod:`explorer.shell.llm`). One forward pass per prompt (:func:`model.measure`: the last token's stream, the writes
and the losses, about 0.3 MB at 64 tokens on SmolLM2-135M), one block's inside per block (about 40 kB).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons import causes, kv_cache, real_model, sinks
from explorer.lessons.block import charts as bfig
from explorer.lessons.block import model
from explorer.shell import charts, controls, i18n, llm, tables
from explorer.shell.cache import cached, section
from explorer.shell.i18n import translator
from explorer.shell.textviews import md_escape

_, _n = translator(__name__)

measure = cached(max_entries=8)(model.measure)
inside = cached(max_entries=16)(model.inside)


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title(_("Inside one transformer block"))


@section
def intro(config: llm.LlamaConfig, name: str) -> None:
    """What the page does and the model's shape (``name``: :func:`explorer.shell.llm.model_name`)."""
    st.markdown(_(
        "The toy lessons built one attention layer. A real model stacks **blocks** (its layers): each reads a running "
        "vector per token, the **residual stream**, and adds two things to it, what its attention writes and what its "
        "**MLP** writes. Here you follow your prompt through {model} ({shape}), number by number: from the token's "
        "embedding, through one block up close, to the next-token probabilities and the **loss**."
    ).format(model=md_escape(name), shape=llm.describe(config)))


@section
def embedding(_model: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """Step 1: each token's row of E, its size and its norm."""
    m, d = measure(_model, ids), _model.config.d_model
    st.header(_("1. The token embedding"))
    st.latex(model.embedding_latex(_model.config))
    st.markdown(model.embedding_text(_model.config))
    tables.dataframe(pd.DataFrame({_("token"): llm.visible_pieces(_model, ids), "id": ids,
                                   model.embedding_symbol(_model.config): m.embedding_norms}),
                     digits=3, hide_index=True, width="stretch")
    st.caption(model.embedding_claim(m, d))


@section
def stream(_model: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """Step 2: the residual stream as a running sum, its norm block by block and each block's two writes."""
    m, c = measure(_model, ids), _model.config
    st.header(_("2. The residual stream: a running sum"))
    for line in model.stream_latex(c):
        st.latex(line)
    st.markdown(model.pre_norm_claim(md_escape(llm.model_name(_model)), c))
    norms = m.write_norms
    charts.show_fig(bfig.stream_figure(m.stream_norms, norms["attention"], norms["mlp"]), key="blk_fig_stream")
    st.info(model.stream_claim(m), icon="📈")
    first = model.first_position_claim(m)
    if first:
        st.warning(first + " " + _("[Attention sinks, smaller caches]({link}) shows why.").format(
            link=controls.link(sinks)), icon="📍")


@section
def block_inside(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int) -> None:
    """Step 3: one block measured at the last token: its norm, attention's W_o write per head, its MLP."""
    m, c = measure(_model, ids), _model.config
    b = inside(_model, ids, layer, measure)
    left, right = st.columns([5, 6])
    with left:
        st.markdown(model.norm_markdown(c))
        st.latex(model.norm_latex(c))
        st.markdown(model.attention_markdown(c))
        for line in model.attention_latex(c):
            st.latex(line)
        st.markdown(model.mlp_markdown(c))
        for line in model.mlp_latex(c):
            st.latex(line)
    with right:  # one small table per step, its name as the caption: both columns stay in view on a phone
        rows = model.inside_rows(b, m.eps)
        for step in dict.fromkeys(step for step, *_ in rows):
            part = [(what, i18n.significant(v, 4)) for s, what, v in rows if s == step]  # 1536, 1e-05
            st.caption(f"**{step}**")
            st.dataframe(pd.DataFrame(part, columns=(_("quantity"), _("value"))), hide_index=True, width="stretch",
                         height=35 * (len(part) + 1) + 3,
                         column_config={_("value"): st.column_config.TextColumn(width="small")})
    head, share = model.biggest_head(b)
    charts.show_fig(bfig.heads_figure(b.head_norms, b.heads_sum_norm, layer), key="blk_fig_heads")
    st.caption(_("Head {head} writes the longest part ({share} of the parts' summed norms). The parts point in "
                 "different directions, so the sum is shorter than the parts added up.").format(
        head=head, share=i18n.percent(share, 0)) + " " + model.rms_claim(b))


@section
def thirty(_model: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """Step 4: every block's writes, the claim about which part writes most, the numbers."""
    m, c = measure(_model, ids), _model.config
    st.header(_("4. {layers} blocks of the same").format(layers=c.n_layers))
    st.markdown(_("Every block has the same shape with its own weights. Which part writes most into the last token's "
                  "stream, measured on your prompt:"))
    st.info(model.writes_claim(m), icon="🧮")
    norms = m.write_norms
    with st.expander(_("Numbers: the stream and the writes, block by block")):
        tables.dataframe(pd.DataFrame({_("block"): range(c.n_layers), _("‖x‖ entering"): m.stream_norms[:-1],
                                       _("‖attention write‖"): norms["attention"], _("‖MLP write‖"): norms["mlp"]}),
                         digits=2, hide_index=True, width="stretch")


@section
def output(_model: llm.LlamaModel, ids: tuple[int, ...], tied: bool | None) -> None:
    """Step 5: the final norm, the unembedding to logits, softmax, the top tokens."""
    m, c = measure(_model, ids), _model.config
    st.header(_("5. The final norm, the logits and the probabilities"))
    st.latex(r"\text{logits} = \mathrm{" + llm.norm_name(c) + r"}(x_{" + str(c.n_layers) + r"})\, "
             + model.unembedding_symbol(tied)
             + r" \in \mathbb{R}^{"
             + str(c.vocab_size) + "}")
    st.latex(r"p = \mathrm{softmax}(\text{logits})")
    st.markdown(_("After the last block the stream (‖x‖ = {norm}, RMS {rms}) goes through one more {kind}, then a "
                  "dot product with every token's row: one score, a **logit**, per token of the vocabulary. The "
                  "softmax turns the logits into probabilities that sum to 1.").format(
        norm=model.norm_text(m.stream_norms[-1]), rms=i18n.significant(model.rms(m.streams[-1]), 4),
        kind=llm.norm_name(c)))
    st.caption(model.tied_claim(tied, c.vocab_size, c.d_model, llm.norm_name(c)))
    tables.dataframe(pd.DataFrame({_("rank"): range(1, len(m.top_ids) + 1),
                                   _("next token"): llm.visible_pieces(_model, m.top_ids), "id": m.top_ids,
                                   _("probability"): np.asarray(m.top_probabilities)}),
                     digits=4, hide_index=True, width="stretch")


@section
def losses(_model: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """Step 6: the loss on each actual next token, the mean, the perplexity."""
    m = measure(_model, ids)
    st.header(_("6. The loss and the perplexity"))
    st.latex(r"\ell_i = -\ln p(t_{i+1} \mid t_0 \dots t_i)")
    st.latex(r"\bar\ell = \frac{1}{n-1}\sum_i \ell_i, \qquad \mathrm{PPL} = e^{\bar\ell}")
    if not len(m.losses):
        st.info(_("A one-token prompt has no next token inside it to score: type a longer prompt."), icon="📏")
        return
    st.markdown(_("At every position the model also predicted the next token, and the prompt says which one came. "
                  "The **loss** is −ln of the probability it gave that actual token: 0 when it was sure and right, "
                  "large when it was surprised. Training lowers the mean loss."))
    pieces = llm.visible_pieces(_model, ids)
    charts.show_fig(bfig.loss_figure(m.losses, pieces[1:]), key="blk_fig_loss")
    st.success(model.loss_claim(m), icon="🎯")
    with st.expander(_("Numbers: the loss at each position")):
        tables.dataframe(pd.DataFrame({_("after"): pieces[:-1], _("actual next"): pieces[1:],
                                       _("top guess"): llm.visible_pieces(_model, m.predicted),
                                       _("loss (nats)"): m.losses, "p": m.actual_probabilities}),
                         digits=4, hide_index=True, width="stretch")


@section
def reveal(_model: llm.LlamaModel, ids: tuple[int, ...], guesses: tuple[tuple[str, object], ...]) -> None:
    """The answers to the check-yourself questions, graded from the live numbers (``guesses``: those checked)."""
    m = measure(_model, ids)
    rows = model.grade(m, dict(guesses))
    kind, text = model.grade_claim(rows)
    getattr(st, kind)(text)
    if kind == "warning":  # nothing chosen: no answers shown yet
        return
    st.dataframe(pd.DataFrame([(a, _("(none)") if g is None else g, "✓" if ok else "✗") for a, g, ok in rows],
                              columns=[_("answer"), _("your guess"), _("right?")]), hide_index=True, width="stretch")
    st.markdown(model.cancel_claim(m))


@section
def links() -> None:
    """Step 8: where each idea is used next (each lesson opens on its own prompt: a visitor's text in a link target
    would be read as Markdown by the prose around it)."""
    st.header(_("Where these ideas are used"))
    st.markdown("\n".join(f"- {line}" for line in (
        _("[Inside a real model]({link}): every head of every block, and one head's six steps.").format(
            link=controls.link(real_model)),
        _("[What made it say that?]({link}): the logit lens reads the residual stream after each block through "
          "the final norm; attribution splits a logit into each head's W_o write; knockout removes a head's "
          "write.").format(link=controls.link(causes)),
        _("[Generating with a KV cache]({link}): each block keeps its keys and values so a new token runs the "
          "blocks once.").format(link=controls.link(kv_cache)),
        _("[Attention sinks, smaller caches]({link}): heads that park their weight on the first token, and the "
          "loss and perplexity when the cache keeps fewer tokens.").format(link=controls.link(sinks)))))
