"""Sections of "What made it say that?", and the cached computations behind them.

Every computation keys on the prompt's token ids (a tuple of ints) and the page's choices; the loaded model is
passed as ``_model`` (not hashed: one per process, :mod:`explorer.shell.llm`, the lessons' one door to the
model). One clean run per prompt (the door's cached ``llm.run(model, ids, activations=True)``) feeds everything
else, through the door: the logit lens, the attribution, every knockout (each recomputes only the blocks from its
first layer on) and the patching maps. The door caches the 270-head sweep and the patching map one stacked pass at
a time, so the page shows a progress bar while they run and a second visit replays them.

Cache sizes (measured with pickle): a clean run of 32 tokens holds its stream, head outputs, MLP outputs and
attention weights, about 7.6 MB (2.2 MB at 5 tokens; the door's); the logit-lens top tokens 8 kB; a sweep layer or
patch block under 1 kB. With the entry limits below, at most about 60 MB of computations besides the model, every
entry gone :data:`explorer.shell.cache.TTL_SECONDS` after it was stored.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from attention import heads
from explorer.lessons import real_model
from explorer.lessons.causes import charts as cfig
from explorer.lessons.causes import model
from explorer.shell import charts, controls, i18n, llm
from explorer.shell.cache import cached, figure, section
from explorer.shell.i18n import N_, translator
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import fmt, head_labels, latex_words, layer_labels

_, _n = translator(__name__)


# --- cached computations -------------------------------------------------------------------------------------
lens_top = cached(max_entries=8)(model.lens_top)
answer_by_layer = cached(max_entries=16)(model.answer_readout)
knockout = cached(max_entries=32)(model.knockout)
statistics = cached(max_entries=8)(model.statistics)
induction = cached(max_entries=8)(model.induction_experiment)  # a few kB an entry; 12 forward passes
attribution_grid = figure(max_entries=32)(cfig.attribution_grid)  # the widget grids: one figure per argument set
sweep_grid = figure(max_entries=16)(cfig.sweep_grid)
scatter_figure = figure(max_entries=16)(cfig.scatter_figure)


last_pass_seconds = cached(max_entries=16)(model.last_pass_seconds)  # a timing, kept with its prompt


@cached(max_entries=16)
def attribution(_model: llm.LlamaModel, ids: tuple[int, ...], answer: int) -> llm.Attribution:
    """Direct logit attribution of the answer's logit."""
    return llm.from_prompt(llm.interventions.logit_attribution, _model, ids, answer)


LINK_HEADER = N_("open in Inside a real model")


def head_table(config: llm.LlamaConfig, prompt: str, heads, columns: dict) -> None:
    """A table of ``heads`` with ``columns`` (header -> one value per head) and a link to each head's six steps in
    "Inside a real model" on ``prompt`` (built from that lesson's declarations, :func:`controls.link`: the link keeps
    the run's language), headers in the run's language."""
    links = [controls.link(real_model, real_model.sizes(config), prompt=prompt, layer=h[0], head=h[1]) for h in heads]
    dataframe(pd.DataFrame({_("head"): [model.head_code(*h) for h in heads], _(LINK_HEADER): links}).assign(**columns),
              hide_index=True, width="stretch",
              column_config={_(LINK_HEADER): st.column_config.LinkColumn(display_text=_("six steps →"))})


@section
def open_head(_model: llm.LlamaModel, prompt: str, head: tuple[int, int]) -> None:
    """A Markdown link to ``head``'s six steps in "Inside a real model" on ``prompt`` (a head clicked on a grid)."""
    st.markdown(_("[Open {head}'s six steps in “Inside a real model” →]({link})").format(head=model.head_code(*head),
                link=controls.link(real_model, real_model.sizes(_model.config), prompt=prompt, layer=head[0],
                                   head=head[1])))


def every_head_links(config: llm.LlamaConfig, prompt: str, name: str, values: np.ndarray, label: str) -> None:
    """An expander with one row per head: its value and the link to its six steps (sortable by the value)."""
    heads = [(layer, head) for layer in range(values.shape[0]) for head in range(values.shape[1])]
    with st.expander(label):
        head_table(config, prompt, heads, {name: values.ravel()})


# --- sections -------------------------------------------------------------------------------------------------


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title(_("What made it say that?"))


@section
def intro(name: str) -> None:
    """What the page does (``name``: the loaded model's, :func:`explorer.shell.llm.model_name`)."""
    st.markdown(_(
        "“Inside a real model” shows what {model}'s heads *look at*. This page asks what they **cause**. "
        "The model runs here in NumPy with interventions: read its stream out after every layer, "
        "split the answer's logit into the parts that wrote it, knock heads out and watch the prediction change, "
        "and copy one activation from one prompt into another to find where a fact travels. Every number is "
        "computed from your prompt on this page.").format(model=name))


@section
def tokens(labels: tuple[str, ...], ids: tuple[int, ...], bos: bool = False) -> None:
    """The prompt's tokens as readable pieces with their ids (``bos``: the file adds a BOS token first)."""
    st.caption(_n("{n} token (␣ = a space, ↵ = a new line); the BOS token first, as the model file says.",
                  "{n} tokens (␣ = a space, ↵ = a new line); the BOS token first, as the model file says.",
                  len(ids)).format(n=len(ids)) if bos else
               _n("{n} token (␣ = a space, ↵ = a new line); no BOS token is added, as the model file says.",
                  "{n} tokens (␣ = a space, ↵ = a new line); no BOS token is added, as the model file says.",
                  len(ids)).format(n=len(ids)))
    st.text(" │ ".join(labels))


@section
def prediction(_model: llm.LlamaModel, ids: tuple[int, ...]) -> None:
    """The clean prediction: the top 5 with their probabilities."""
    r = llm.run(_model, ids, activations=True)
    top, p = r.top_ids, r.top_probabilities
    dataframe(pd.DataFrame({_("rank"): range(1, len(top) + 1), _("next token"): [model.plain(_model, t) for t in top],
                            "id": top, _("probability"): p}), hide_index=True, width="stretch")


@section
def lens(_model: llm.LlamaModel, ids: tuple[int, ...], answer: int) -> None:
    """The logit lens: the top token at every block and position, and the answer's probability block by block."""
    pieces, probs = lens_top(_model, ids)
    a = answer_by_layer(_model, ids, answer)
    labels, plain = llm.labels(_model, ids), model.plain(_model, answer)
    tied = None if (storage := llm.weight_storage(_model)) is None else storage.tied
    st.latex(model.lens_formula(_model.config, tied))
    st.latex(r"p_\ell = \mathrm{softmax}(\text{lens}_\ell)")
    st.caption(model.lens_caption(_model.config, tied))
    left, right = st.columns([3, 2])
    with left:
        charts.show_fig(cfig.lens_map(pieces, probs, labels, title=_("top token read out of every stream")),
                        key="ca_fig_lens")
    with right:
        charts.show_fig(cfig.answer_curve(a.probability, a.rank, plain,
                                          title=_("p({answer}) at the last position").format(answer=plain)),
                        key="ca_fig_answer_curve")
        st.markdown(model.lens_claim(a, model.piece(_model, answer)))
        if (unlikely := model.unlikely_claim(a)) is not None:
            st.caption(unlikely)
    numbers({_("the answer by block"): pd.DataFrame({_("block"): range(len(a.probability)),
                                                      _("probability"): a.probability, _("rank"): a.rank}),
             _("top token by block and position"): pd.DataFrame(list(pieces), columns=labels)},
            label=_("Numbers: the logit lens"))


@section
def attribution_parts(_model: llm.LlamaModel, ids: tuple[int, ...], answer: int, prompt: str) -> None:
    """The MLP and embedding bars, the parts summed beside the real logit, and what the frozen scale means."""
    a = attribution(_model, ids, answer)
    name = model.piece(_model, answer)
    charts.show_fig(cfig.component_bars(a.embedding, a.mlps, title=_("embedding and MLPs")), key="ca_fig_parts")
    heads_total, mlps_total = float(a.heads.sum()), float(a.mlps.sum())
    biases = ([_("biases (attention outputs, final norm)")], [a.bias]) if a.bias else ([], [])
    dataframe(pd.DataFrame({
        _("part"): [_("embedding"), _("{n} heads").format(n=a.heads.size), _("{n} MLPs").format(n=len(a.mlps)),
                    *biases[0], _("sum of the parts"), _("the real logit"), _("difference")],
        _("share of the logit"): [a.embedding, heads_total, mlps_total, *biases[1], a.total, a.logit,
                                  a.total - a.logit]}),
        digits=6, hide_index=True, width="stretch")
    best = heads.top_heads(a.heads, 1)[0]
    worst = heads.top_heads(a.heads, 1, largest=False)[0]
    st.markdown(_(
        "The parts add up to **{total}**, the real logit is **{logit}** (difference {difference}: float32 rounding of "
        "the stream). The head that pushes {answer} most directly is **{best}** ({best_share}); the one that pushes "
        "against it most is {worst} ({worst_share}). The MLPs together give {mlps}, the heads {heads}.").format(
        total=fmt(a.total, 6), logit=fmt(a.logit, 6), difference=i18n.scientific(a.total - a.logit), answer=name,
        best=model.head_code(*best), best_share=fmt(float(a.heads[best]), 3), worst=model.head_code(*worst),
        worst_share=fmt(float(a.heads[worst]), 3), mlps=fmt(mlps_total, 3), heads=fmt(heads_total, 3)))
    st.caption(model.frozen_scale_caption(_model.config, fmt(a.scale, 3)))
    top = heads.top_heads(a.heads, 5)
    head_table(_model.config, prompt, top, {_("share"): [float(a.heads[h]) for h in top]})
    numbers({_("every head (layer × head)"): pd.DataFrame(a.heads, index=layer_labels(a.heads.shape[0]),
                                                            columns=head_labels(a.heads.shape[1])),
             _("every MLP"): pd.DataFrame({_("layer"): range(len(a.mlps)), _("share"): a.mlps})},
            label=_("Numbers: every part's share"))
    every_head_links(_model.config, prompt, _("share"), a.heads, _("Every head, with its link"))


@section
def knockout_result(_model: llm.LlamaModel, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...],
                    random: tuple[tuple[int, int], ...], ablation: str, answer: int, seed: int,
                    carried: str | None) -> None:
    """The new top 5 with the heads knocked out, beside the clean prediction and the random control (``carried``:
    the note when the heads were picked for another prompt, :func:`model.carried_note`)."""
    name = model.piece(_model, answer)
    clean = model.knockout_result(llm.run(_model, ids, activations=True).last_logits, (), answer)
    chosen = knockout(_model, ids, heads, ablation, answer)
    control = knockout(_model, ids, random, ablation, answer)
    titles = (_("clean"), _n("{n} head knocked out", "{n} heads knocked out", len(heads)).format(n=len(heads)),
              _n("{n} random head (seed {seed})", "{n} random heads (seed {seed})", len(random)).format(
                  n=len(random), seed=seed))
    for col, title, r in zip(st.columns(3), titles, (clean, chosen, control), strict=True):
        with col:
            st.markdown(f"**{title}**")
            dataframe(pd.DataFrame({_("next token"): [model.plain(_model, t) for t in r.top_ids],
                                    _("probability"): r.top_probabilities}), hide_index=True, width="stretch")
            st.caption(f"p({name}) = {fmt(r.answer_probability, 4)}")
    sentence, comparison = model.knockout_sentences(clean, chosen, control, heads, random, ablation, answer, name,
                                                    model.piece(_model, chosen.top_ids[0]))
    if carried:
        st.warning(carried, icon="↩️")
    st.markdown(sentence)
    st.caption(comparison)


@section
def induction_result(_model: llm.LlamaModel, seed: int, n_knock: int, ablation: str) -> None:
    """The repeated random prompt's second-copy loss and accuracy, with and without its induction heads."""
    r = induction(_model, seed, n_knock, ablation)
    k = len(r.ids) // 2
    st.text(" ".join(llm.visible_pieces(_model, r.ids[:k])) + "  ×2")
    st.caption(_n("{k} random word token (seed {seed}), written twice: {n} tokens.",
                  "{k} random word tokens (seed {seed}), written twice: {n} tokens.", k).format(
        k=k, seed=seed, n=len(r.ids)) + " " + _n(
        "The loss is the mean next-token loss over the {n} prediction of the second copy that an earlier "
        "occurrence can answer (its 2nd to last token).",
        "The loss is the mean next-token loss over the {n} predictions of the second copy that an earlier "
        "occurrence can answer (its 2nd to last token).", k - 1).format(n=k - 1))
    names = [_("no knockout"), _n("top {n} induction head", "top {n} induction heads", n_knock).format(n=n_knock)] + [
        _("random {d}").format(d=d + 1) for d in range(len(r.random))]
    losses, accs = (list(x) for x in zip(r.clean, r.knocked, *r.random_runs, strict=True))
    charts.show_fig(cfig.loss_bars(names, losses, accs, title=_("second-copy loss")), key="ca_fig_induction")
    sentence, comparison = model.induction_sentences(r, ablation)
    st.markdown(sentence)
    st.caption(comparison)
    numbers({_("runs"): pd.DataFrame({_("run"): names, _("heads"): ["—", model.heads_list(r.heads)]
                                      + [model.heads_list(h) for h in r.random], _("loss (nats)"): losses,
                                      _("top-1 accuracy"): accs}),
             _("induction score of every head"): pd.DataFrame(r.scores, index=layer_labels(r.scores.shape[0]),
                                                              columns=head_labels(r.scores.shape[1]))},
            label=_("Numbers: the repeated prompt"))


@section
def sweep_reveal(_model: llm.LlamaModel, sweep: llm.KnockoutSweep, guess: tuple[int, int] | None,
                 prompt: str) -> None:
    """The grade of the guess and the top heads of the ``sweep``, with links (the page ran the sweep under its
    progress bar, ``jobs.in_steps`` over ``llm.knockout_sweep``, or keeps it for the class: it is never run here)."""
    log_probs, effect = sweep.log_probs, sweep.effect
    callout, text = model.sweep_claim(effect, guess, model.piece(_model, sweep.token_id))
    getattr(st, callout)(text)
    top = heads.top_heads(effect, 8, largest=False)
    head_table(_model.config, prompt, top, {_("change of log p"): [float(effect[h]) for h in top],
                                            _("p after"): [float(np.exp(log_probs[h])) for h in top]})
    every_head_links(_model.config, prompt, _("change of log p"), effect, _("Every head's effect, with its link"))
    st.caption(_("“Matters most” = its knockout lowers the answer's log-probability the most (a head whose knockout "
                 "raises it is working against the answer: positive cells)."))


@section
def scatter_text(_model: llm.LlamaModel, ids: tuple[int, ...], sweep: llm.KnockoutSweep, stat: str) -> None:
    """What the scatter of the attention statistic against the ``sweep``'s effect says for this prompt."""
    effect = sweep.effect
    values = statistics(_model, ids)[stat]
    st.latex(model.STATISTICS[stat].last_formula)  # every lesson's row formula (attention.heads.formula), last row
    st.markdown(model.scatter_claim(model.attention_vs_effect(values, effect), stat,
                                    model.piece(_model, sweep.token_id)))
    st.caption(_("How much a head attends is not how much it matters: Jain & Wallace (2019), “Attention is not "
                 "Explanation”. The numbers above are yours, for this prompt; the red points are the two heads named."))


@section
def patch_result(_model: llm.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
                 foil: int, grid: np.ndarray) -> None:
    """The residual patching map and where the fact moves."""
    labels = model.pair_labels(*(llm.visible_pieces(_model, t) for t in (clean, corrupted)))
    c_diff, x_diff = model.logit_differences(_model, clean, corrupted, answer, foil)
    a, f = model.plain(_model, answer), model.plain(_model, foil)
    st.latex(latex_words(_("logit diff"))
             + rf" = \text{{logit}}_{{{model.latex_safe(a)}}} - \text{{logit}}_{{{model.latex_safe(f)}}}")
    charts.show_fig(cfig.patch_map(grid, labels, clean=c_diff, corrupted=x_diff,
                                   title=_("copy one clean stream into the corrupted run")), key="ca_fig_patch")
    st.caption(_("Clean run: {clean}; corrupted run: {corrupted}. Each cell: the corrupted prompt run again with the "
                 "stream entering that block at that position replaced by the clean run's. Columns before the first "
                 "differing token are the corrupted run itself (the two streams are equal there).").format(
        clean=fmt(c_diff, 2), corrupted=fmt(x_diff, 2)))
    st.markdown(model.fact_move_claim(model.fact_move(model.recovered(grid, c_diff, x_diff)), labels))
    numbers(pd.DataFrame(grid, index=cfig.block_labels(grid.shape[0]), columns=labels),
            label=_("Numbers: the patching map"))


@section
def head_patch_result(_model: llm.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
                      foil: int, layer: int, clean_prompt: str) -> None:
    """Each head of one layer patched alone, with links."""
    values = llm.patch_head_layer(_model, clean, corrupted, answer, foil, layer)
    c_diff, x_diff = model.logit_differences(_model, clean, corrupted, answer, foil)
    charts.show_fig(cfig.head_bars(values, clean=c_diff, corrupted=x_diff, y_title=_("logit diff"),
                                   title=_("layer {layer}: each head patched alone").format(layer=layer)),
                    key="ca_fig_head_patch")
    st.markdown(model.head_patch_claim(values, layer, c_diff, x_diff, model.piece(_model, answer),
                                       model.piece(_model, foil)))
    head_table(_model.config, clean_prompt, [(layer, h) for h in range(len(values))], {_("logit diff"): values})


@section
def notes(weights: str | None, quantized: bool = True) -> None:
    """The honest notes (``weights``: how the model file stores its weights in words,
    :func:`explorer.shell.llm.precision_note`, ``None`` when its table cannot be read; ``quantized``: some are
    quantised, so float32 widens an approximation, :func:`explorer.shell.llm.widened_exactly`)."""
    st.info(_(
        "**Honest notes.** *Zero vs mean ablation answer different questions:* zero asks what the model does without "
        "the head's output at all (a value the head never produces), mean keeps its average over this prompt and "
        "removes only what varies from token to token. *Effects are for this prompt:* a head that matters here may "
        "not matter on another sentence, and a knockout's effect is not the sum of the single knockouts. *The "
        "logit lens* reads early streams with the final norm and unembedding, which the model was trained to use "
        "only at the end: an early readout is a probe, "
        "not what the model “thinks”.") + (" " + (_(
        "*The weights:* {weights}; they are widened to float32 here, so the numbers are close to, not identical "
        "with, the full-precision model's.") if quantized else _(
        "*The weights:* {weights}; float32 holds them exactly, so the numbers are the file's own model's.")).format(
        weights=weights) if weights else ""), icon="🔎")
