"""Sections of "What made it say that?", and the cached computations behind them.

Every computation keys on the prompt's token ids (a tuple of ints) and the page's choices; the loaded model is
passed as ``_model`` (not hashed: one per process, :mod:`explorer.shell.real_model`). One clean run per prompt
(:func:`clean_run`, ``forward(ids, keep_activations=True)``) feeds everything else: the logit lens, the
attribution, every knockout (each recomputes only the blocks from its first layer on) and the patching maps.
The 270-head sweep and the patching map are cached one stacked pass at a time (:func:`sweep_layer`,
:func:`patch_block`), so the page can show a progress bar while they run and a second visit replays them.

Cache sizes (measured with pickle): a clean run of 32 tokens holds its stream, head outputs, MLP outputs and
attention weights, about 7.6 MB (2.2 MB at 5 tokens); the logit-lens top tokens 8 kB; a sweep layer or patch
block under 1 kB. With the entry limits below, at most about 60 MB of computations besides the model, every
entry gone :data:`TTL` after it was stored.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from attention import llama
from attention.llama import interventions as iv
from explorer.lessons.causes import charts as cfig
from explorer.lessons.causes import model
from explorer.shell import real_model as rm
from explorer.shell.cache import cached, section
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import count, fmt

TTL = "30m"
NOT_USED = {  # the sidebar's controls this lesson has no use for, and why (explorer.shell.controls.not_used)
    "sentence": "the model reads the prompts typed on this page.",
    "embedding": "the model's own trained token embeddings.",
    "positional": "the model's own positions (RoPE rotates its queries and keys).",
    "seed": "the model's weights are trained, not drawn; the page's own seeds pick the random heads and tokens.",
    "d_model": "the model's own width (SmolLM2-135M).",
    "d_k": "the model's own heads (SmolLM2-135M).",
}


# --- cached computations -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """What the lesson keeps of ``forward(ids, keep_activations=True)`` (float32): ``logits [1, vocab]`` (the last
    position's), ``attentions [L, H, n, n]``, ``residuals [L + 1, n, d_model]``, ``head_outputs [L, H, n, d_head]``,
    ``mlp_outputs [L, n, d_model]``."""

    logits: np.ndarray
    attentions: np.ndarray
    residuals: np.ndarray
    head_outputs: np.ndarray
    mlp_outputs: np.ndarray

    def output(self) -> llama.ForwardOutput:
        """As the :class:`~attention.llama.ForwardOutput` the interventions take (no cache)."""
        n = self.residuals.shape[1]
        return llama.ForwardOutput(self.logits, self.attentions, None, np.arange(n), self.residuals,
                                   self.head_outputs, self.mlp_outputs, 0)

    @property
    def last_logits(self) -> np.ndarray:
        return self.logits[-1]


@cached(max_entries=6)
def clean_run(_model: llama.LlamaModel, ids: tuple[int, ...]) -> Run:
    """The prompt's clean run with its activations (7.6 MB at 32 tokens)."""
    out = _model.forward(list(ids), keep_activations=True)
    return Run(out.logits[-1:].copy(), out.attentions, out.residuals, out.head_outputs, out.mlp_outputs)


@cached(max_entries=8)
def lens_top(_model: llama.LlamaModel, ids: tuple[int, ...]) -> tuple[tuple[tuple[str, ...], ...], np.ndarray]:
    """The logit lens' top token at every block and position: ``(pieces [L + 1][n], probabilities [L + 1, n])``."""
    top = iv.logit_lens_top(_model, list(ids), 1, run=clean_run(_model, ids).output())
    pieces = tuple(tuple(rm.visible_piece(s) for s in _model.token_strings(row.tolist())) for row in top.ids[..., 0])
    return pieces, top.probabilities[..., 0]


@cached(max_entries=16)
def answer_by_layer(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int) -> model.AnswerByLayer:
    """The answer's probability and rank read out of every block's stream at the last position."""
    return model.answer_by_layer(_model.logit_lens(list(ids), run=clean_run(_model, ids).output()), answer)


@cached(max_entries=16)
def attribution(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int) -> iv.Attribution:
    """Direct logit attribution of the answer's logit."""
    return _model.logit_attribution(list(ids), answer, run=clean_run(_model, ids).output())


@cached(max_entries=32)
def knockout(_model: llama.LlamaModel, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...], ablation: str,
             answer: int) -> model.Knockout:
    """The prediction with ``heads`` knocked out (recomputed from the first knocked-out layer on)."""
    logits = iv.knock_out(_model, list(ids), list(heads), ablation=ablation, run=clean_run(_model, ids).output())
    return model.knockout_result(logits, heads, answer)


@cached(max_entries=4 * 30)
def sweep_layer(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str,
                layer: int) -> tuple[np.ndarray, np.ndarray]:
    """One stacked pass of the sweep: the 9 heads of ``layer`` knocked out one at a time."""
    return iv.knockout_layer(_model, list(ids), answer, layer, ablation=ablation, run=clean_run(_model, ids).output())


def sweep(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str) -> iv.KnockoutSweep:
    """The 270-head sweep, layer by layer through :func:`sweep_layer`, with a progress bar naming the layer."""
    c = _model.config
    bar = st.progress(0.0, text=f"knocking out {c.n_layers * c.n_heads} heads: layer 1 of {c.n_layers}")
    rows = []
    for layer in range(c.n_layers):
        bar.progress(layer / c.n_layers, text=f"knocking out {c.n_layers * c.n_heads} heads: layer {layer + 1} of "
                                              f"{c.n_layers}")
        rows.append(sweep_layer(_model, ids, answer, ablation, layer))
    bar.progress(1.0, text=f"knocked out {c.n_layers * c.n_heads} heads, one at a time, in {c.n_layers} stacked passes")
    clean = float(iv.log_softmax(clean_run(_model, ids).last_logits)[answer])
    return iv.KnockoutSweep(answer, ablation, clean, np.stack([r[0] for r in rows]), np.stack([r[1] for r in rows]))


@cached(max_entries=8)
def statistics(_model: llama.LlamaModel, ids: tuple[int, ...]) -> dict[str, np.ndarray]:
    """The attention statistics of the last query row of every head (:func:`model.last_row_statistics`)."""
    return model.last_row_statistics(clean_run(_model, ids).attentions)


@st.cache_resource(max_entries=1, show_spinner=False)
def word_ids(_model: llama.LlamaModel) -> tuple[int, ...]:
    """The whole-word tokens of the vocabulary (:func:`model.word_token_ids`), once per process."""
    return model.word_token_ids(_model.token_strings(range(_model.config.vocab_size)))


@dataclass(frozen=True)
class Induction:
    """The repeated random prompt with and without its induction heads.

    Attributes:
        ids: the ``2k`` token ids. scores: the induction score of every head ``[L, H]``.
        heads: the top induction heads knocked out. random: the random control's heads per draw.
        clean, knocked: ``(loss, accuracy)`` on the second copy; random_runs: one per random draw.
    """

    ids: tuple[int, ...]
    scores: np.ndarray
    heads: tuple[tuple[int, int], ...]
    random: tuple[tuple[tuple[int, int], ...], ...]
    clean: tuple[float, float]
    knocked: tuple[float, float]
    random_runs: tuple[tuple[float, float], ...]


RANDOM_DRAWS = 5


@cached(max_entries=8)
def induction(_model: llama.LlamaModel, seed: int, n_knock: int, ablation: str) -> Induction:
    """The repeated random prompt of ``seed``: the second-copy loss with no knockout, with its ``n_knock`` top
    induction heads knocked out, and with ``n_knock`` random heads (:data:`RANDOM_DRAWS` draws seeded from ``seed``)."""
    c, k = _model.config, model.REPEAT_TOKENS
    ids = model.repeated_random_ids(word_ids(_model), seed, k)
    out = _model.forward(list(ids))
    scores = model.induction_scores(out.attentions, k)
    heads = tuple(model.top_heads(scores, n_knock))

    def metrics(knocked) -> tuple[float, float]:
        logits = _model.forward(list(ids), ablate=list(knocked), ablation=ablation, need_weights=False).logits
        return model.second_copy_metrics(logits, ids, k)

    random = tuple(tuple(model.random_heads(seed * 1000 + d, n_knock, c.n_layers, c.n_heads, heads))
                   for d in range(RANDOM_DRAWS))
    return Induction(ids, scores, heads, random, model.second_copy_metrics(out.logits, ids, k), metrics(heads),
                     tuple(metrics(r) for r in random))


@cached(max_entries=4 * 31)
def patch_block(_model: llama.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int, foil: int,
                block: int) -> np.ndarray:
    """One stacked pass of the residual patching map: every position of ``block`` patched in turn ``[n]``."""
    return iv.patch_residual_block(_model, list(clean), list(corrupted), answer, foil, block,
                                   clean_run=clean_run(_model, clean).output(),
                                   corrupted_run=clean_run(_model, corrupted).output())


def patch_map(_model: llama.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
              foil: int) -> np.ndarray:
    """The residual patching map ``[n_layers + 1, n]``, block by block through :func:`patch_block`, with a
    progress bar naming the block."""
    blocks = _model.config.n_layers + 1
    bar = st.progress(0.0, text=f"patching {blocks} streams × {len(clean)} positions: block 0 of {blocks - 1}")
    rows = []
    for block in range(blocks):
        bar.progress(block / blocks, text=f"patching {blocks} streams × {len(clean)} positions: block {block} of "
                                          f"{blocks - 1}")
        rows.append(patch_block(_model, clean, corrupted, answer, foil, block))
    bar.progress(1.0, text=f"patched {blocks} streams × {len(clean)} positions, one stacked pass per block")
    return np.stack(rows)


@cached(max_entries=32)
def patch_heads(_model: llama.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int, foil: int,
                layer: int) -> np.ndarray:
    """Each head of ``layer`` patched alone from the clean run ``[n_heads]``."""
    return iv.patch_head_layer(_model, list(clean), list(corrupted), answer, foil, layer,
                               clean_run=clean_run(_model, clean).output(),
                               corrupted_run=clean_run(_model, corrupted).output())


def plain(_model: llama.LlamaModel, token: int) -> str:
    """A token as charts and tables show it (text, escaped by the chart): its readable piece in quotes, ``“␣Paris”``."""
    return f"“{rm.visible_piece(_model.token_strings([token])[0])}”"


def piece(_model: llama.LlamaModel, token: int) -> str:
    """A token as a sentence shows it: its readable piece as a Markdown code span (a visitor's token is text)."""
    return model.md_code(rm.visible_piece(_model.token_strings([token])[0]))


def head_links(prompt: str, heads) -> pd.DataFrame:
    """A table of heads with a link to each one's six steps in "Inside a real model"."""
    return pd.DataFrame({"head": [model.head_code(*h) for h in heads],
                         "open in Inside a real model": [model.head_link(prompt, *h) for h in heads]})


def every_head_links(prompt: str, name: str, values: np.ndarray, label: str) -> None:
    """An expander with one row per head: its value and the link to its six steps (sortable by the value)."""
    heads = [(layer, head) for layer in range(values.shape[0]) for head in range(values.shape[1])]
    with st.expander(label):
        dataframe(head_links(prompt, heads).assign(**{name: values.ravel()}), hide_index=True, width="stretch",
                  column_config=LINK_COLUMN)


LINK_COLUMN = {"open in Inside a real model": st.column_config.LinkColumn(display_text="six steps →")}


# --- sections -------------------------------------------------------------------------------------------------


@section
def intro() -> None:
    """Title, what the page does."""
    st.title("What made it say that?")
    st.markdown(
        f"“Inside a real model” shows what {rm.MODEL_NAME}'s heads *look at*. This page asks what they **cause**. "
        "The model runs here in NumPy with interventions: read its stream out after every layer, "
        "split the answer's logit into the parts that wrote it, knock heads out and watch the prediction change, "
        "and copy one activation from one prompt into another to find where a fact travels. Every number is "
        "computed from your prompt on this page.")


@section
def tokens(labels: tuple[str, ...], ids: tuple[int, ...]) -> None:
    """The prompt's tokens as readable pieces with their ids."""
    st.caption(f"{count(len(ids), 'token')} (␣ = a space, ↵ = a new line); no BOS token is added, as the model "
               "file says.")
    st.text(" │ ".join(labels))


@section
def prediction(_model: llama.LlamaModel, ids: tuple[int, ...]) -> None:
    """The clean prediction: the top 5 with their probabilities."""
    top, p = model.top_tokens(clean_run(_model, ids).last_logits)
    dataframe(pd.DataFrame({"rank": range(1, len(top) + 1), "next token": [plain(_model, t) for t in top],
                            "id": top, "probability": p}), hide_index=True, width="stretch")


@section
def lens(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int) -> None:
    """The logit lens: the top token at every block and position, and the answer's probability block by block."""
    pieces, probs = lens_top(_model, ids)
    a = answer_by_layer(_model, ids, answer)
    labels = rm.labels(_model, ids)
    name = piece(_model, answer)
    st.latex(r"\text{lens}_\ell = \mathrm{RMSNorm}\big(x^{(\ell)}_{n-1}\big)\,E^\top")
    st.latex(r"p_\ell = \mathrm{softmax}(\text{lens}_\ell)")
    st.caption("x^(ℓ): the stream entering block ℓ (ℓ = 0 is the token embedding, the last row the stream after the "
               "last block); the final RMSNorm is recomputed on each stream, then the tied unembedding E. The last "
               "row is exactly the model's own logits.")
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(cfig.lens_map(pieces, probs, labels, title="top token read out of every stream"),
                        key="ca_fig_lens")
    with right:
        st.plotly_chart(cfig.answer_curve(a.probability, a.rank, plain(_model, answer),
                                          title=f"p({plain(_model, answer)}) at the last position"),
                        key="ca_fig_answer_curve")
        n_blocks = len(a.probability) - 1
        if a.first_top is None:
            st.markdown(f"{name} is not the model's most likely token at the end (it ranks {int(a.rank[-1])}); it "
                        f"reaches probability {fmt(float(a.probability.max()), 3)} at most, at block "
                        f"{int(np.argmax(a.probability))}.")
        elif a.first_top == n_blocks:
            st.markdown(f"**{name} becomes the most likely token only after the last block** (probability "
                        f"{fmt(float(a.probability[-1]), 3)}): read out of the stream entering block {n_blocks - 1}, "
                        f"it ranks {int(a.rank[-2])}. The last layer puts it on top.")
        else:
            st.markdown(f"**{name} is the most likely readout from block {a.first_top} on** (probability "
                        f"{fmt(float(a.probability[a.first_top]), 3)} there, {fmt(float(a.probability[-1]), 3)} at "
                        f"the end); before block {a.first_top} it ranks {int(a.rank[a.first_top - 1])}.")
        below = np.nonzero(a.probability < 0.01)[0]
        if len(below):
            st.caption(f"Its probability stays under 1% up to block {int(below[-1])} of the readout.")
    numbers({"the answer by block": pd.DataFrame({"block": range(len(a.probability)), "probability": a.probability,
                                                  "rank": a.rank}),
             "top token by block and position": pd.DataFrame(list(pieces), columns=labels)},
            label="Numbers: the logit lens")


@section
def attribution_parts(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, prompt: str) -> None:
    """The MLP and embedding bars, the parts summed beside the real logit, and what the frozen scale means."""
    a = attribution(_model, ids, answer)
    name = piece(_model, answer)
    st.plotly_chart(cfig.component_bars(a.embedding, a.mlps, title="embedding and MLPs"), key="ca_fig_parts")
    heads_total, mlps_total = float(a.heads.sum()), float(a.mlps.sum())
    dataframe(pd.DataFrame({
        "part": ["embedding", f"{a.heads.size} heads", f"{len(a.mlps)} MLPs", "sum of the parts", "the real logit",
                 "difference"],
        "share of the logit": [a.embedding, heads_total, mlps_total, a.total, a.logit, a.total - a.logit]}),
        digits=6, hide_index=True, width="stretch")
    best = model.top_heads(a.heads, 1)[0]
    worst = model.top_heads(a.heads, 1, largest=False)[0]
    st.markdown(
        f"The parts add up to **{fmt(a.total, 6)}**, the real logit is **{fmt(a.logit, 6)}** (difference "
        f"{a.total - a.logit:.1e}: float32 rounding of the stream). The head that pushes {name} most directly is "
        f"**{model.head_code(*best)}** ({fmt(float(a.heads[best]), 3)}); the one that pushes against it most is "
        f"{model.head_code(*worst)} ({fmt(float(a.heads[worst]), 3)}). The MLPs together give "
        f"{fmt(mlps_total, 3)}, the heads {fmt(heads_total, 3)}.")
    st.caption(f"What the frozen scale means: the final RMSNorm divides the stream by its size, s = "
               f"{fmt(a.scale, 3)} here, which depends on every part at once. Holding s at that value makes the "
               "readout linear, so each part gets an exact share. A share is what the part writes straight into the "
               "answer's logit with s held fixed: not what removing it would do (that would change s and every "
               "later layer's input; the knockouts below measure that).")
    dataframe(head_links(prompt, model.top_heads(a.heads, 5)).assign(
        **{"share": [float(a.heads[h]) for h in model.top_heads(a.heads, 5)]}), hide_index=True, width="stretch",
        column_config=LINK_COLUMN)
    numbers({"every head (layer × head)": pd.DataFrame(a.heads, index=[f"layer {i}" for i in range(a.heads.shape[0])],
                                                         columns=[f"head {h}" for h in range(a.heads.shape[1])]),
             "every MLP": pd.DataFrame({"layer": range(len(a.mlps)), "share": a.mlps})},
            label="Numbers: every part's share")
    every_head_links(prompt, "share", a.heads, "Every head, with its link")


@section
def knockout_result(_model: llama.LlamaModel, ids: tuple[int, ...], heads: tuple[tuple[int, int], ...],
                    random: tuple[tuple[int, int], ...], ablation: str, answer: int, seed: int) -> None:
    """The new top 5 with the heads knocked out, beside the clean prediction and the random control."""
    name = piece(_model, answer)
    clean = model.knockout_result(clean_run(_model, ids).last_logits, (), answer)
    chosen = knockout(_model, ids, heads, ablation, answer)
    control = knockout(_model, ids, random, ablation, answer)
    cols = st.columns(3)
    for col, title, r in zip(cols, ("clean", f"{count(len(heads), 'head')} knocked out",
                                    f"{count(len(random), 'random head')} (seed {seed})"), (clean, chosen, control),
                             strict=True):
        with col:
            st.markdown(f"**{title}**")
            dataframe(pd.DataFrame({"next token": [plain(_model, t) for t in r.top_ids],
                                    "probability": r.top_probabilities}), hide_index=True, width="stretch")
            st.caption(f"p({name}) = {fmt(r.answer_probability, 4)}")
    d_chosen = chosen.answer_probability - clean.answer_probability
    d_random = control.answer_probability - clean.answer_probability
    new_top = chosen.top_ids[0]
    top_sentence = (f"the top token stays {name}" if new_top == answer else
                    f"the top token becomes {piece(_model, new_top)}")
    st.markdown(
        f"Knocking out {', '.join(model.head_code(*h) for h in heads)} ({ablation} ablation) changes p({name}) from "
        f"{fmt(clean.answer_probability, 4)} to **{fmt(chosen.answer_probability, 4)}** ({d_chosen:+.4f}); "
        f"{top_sentence}. The same number of random heads ({', '.join(model.head_code(*h) for h in random)}) "
        f"change it by {d_random:+.4f}.")
    if d_random == 0 and d_chosen != 0:
        st.caption("Here the chosen heads move the answer and the random ones do not (one random draw: change the "
                   "seed for another).")
    elif abs(d_chosen) > abs(d_random):
        st.caption(f"Here the chosen heads move the answer {abs(d_chosen) / abs(d_random):.1f} times as much as the "
                   "random ones (one random draw: change the seed for another).")
    else:
        st.caption("Here the random heads move the answer at least as much as the chosen ones (one random draw: change "
                   "the seed for another).")


@section
def induction_result(_model: llama.LlamaModel, seed: int, n_knock: int, ablation: str) -> None:
    """The repeated random prompt's second-copy loss and accuracy, with and without its induction heads."""
    r = induction(_model, seed, n_knock, ablation)
    k = len(r.ids) // 2
    st.text(" ".join(rm.visible_piece(s) for s in _model.token_strings(list(r.ids[:k]))) + "  ×2")
    st.caption(f"{count(k, 'random word token')} (seed {seed}), written twice: {len(r.ids)} tokens. The loss is the "
               f"mean next-token loss over the {k - 1} predictions of the second copy that an earlier occurrence "
               "can answer (its 2nd to last token).")
    random_loss = np.array([x[0] for x in r.random_runs])
    random_acc = np.array([x[1] for x in r.random_runs])
    names = ["no knockout", f"top {n_knock} induction heads"] + [f"random {d + 1}" for d in range(len(r.random))]
    losses = [r.clean[0], r.knocked[0], *random_loss]
    accs = [r.clean[1], r.knocked[1], *random_acc]
    st.plotly_chart(cfig.loss_bars(names, losses, accs, title="second-copy loss"), key="ca_fig_induction")
    rise, rise_random = r.knocked[0] - r.clean[0], float(random_loss.mean()) - r.clean[0]
    st.markdown(
        f"The top {count(n_knock, 'induction head')} by induction score "
        f"({', '.join(model.head_code(*h) for h in r.heads)}): "
        f"knocking them out ({ablation}) takes the second-copy loss from {fmt(r.clean[0], 2)} to "
        f"**{fmt(r.knocked[0], 2)} nats** (top-1 accuracy {r.clean[1]:.0%} → {r.knocked[1]:.0%}); "
        f"{count(n_knock, 'random head')}, over {len(r.random)} draws: {fmt(float(random_loss.mean()), 2)} nats on "
        f"average ({fmt(float(random_loss.min()), 2)} to {fmt(float(random_loss.max()), 2)}).")
    if rise > max(rise_random, 0) and rise > 0:
        st.caption(f"Here the induction heads matter: their knockout adds {fmt(rise, 2)} nats, the random heads' "
                   f"{fmt(rise_random, 2)} on average.")
    else:
        st.caption(f"Here the induction heads' knockout adds {fmt(rise, 2)} nats and the random heads' "
                   f"{fmt(rise_random, 2)} on average: on this draw they do not stand out.")
    numbers({"runs": pd.DataFrame({"run": names, "heads": ["—", model.heads_text(r.heads)]
                                   + [model.heads_text(h) for h in r.random], "loss (nats)": losses,
                                   "top-1 accuracy": accs}),
             "induction score of every head": pd.DataFrame(r.scores, index=[f"layer {i}" for i in
                                                                            range(r.scores.shape[0])],
                                                           columns=[f"head {h}" for h in range(r.scores.shape[1])])},
            label="Numbers: the repeated prompt")


@section
def sweep_reveal(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str,
                 guess: tuple[int, int] | None, prompt: str) -> None:
    """The grade of the guess and the top heads of the sweep, with links (after :func:`sweep` ran)."""
    log_probs = _sweep_log_probs(_model, ids, answer, ablation)
    effect = log_probs - float(iv.log_softmax(clean_run(_model, ids).last_logits)[answer])
    name = piece(_model, answer)
    best = model.top_heads(effect, 1, largest=False)[0]
    if guess is not None:
        g = model.grade_guess(effect, guess)
        text = (f"**Right: {model.head_code(*guess)} matters most.** Its knockout changes log p({name}) by "
                f"{fmt(g.effect, 3)}." if g.right else
                f"**{model.head_code(*guess)} ranks {g.rank} of {effect.size}**: its knockout changes log p({name}) "
                f"by {fmt(g.effect, 3)}. The head that matters most is **{model.head_code(*g.best)}** "
                f"({fmt(g.best_effect, 3)}).")
        (st.success if g.right else st.info)(text)
    else:
        st.info(f"The head that matters most is **{model.head_code(*best)}**: its knockout changes log p({name}) by "
                f"{fmt(float(effect[best]), 3)}.")
    top = model.top_heads(effect, 8, largest=False)
    dataframe(head_links(prompt, top).assign(**{
        "change of log p": [float(effect[h]) for h in top],
        "p after": [float(np.exp(log_probs[h])) for h in top]}), hide_index=True, width="stretch",
        column_config=LINK_COLUMN)
    every_head_links(prompt, "change of log p", effect, "Every head's effect, with its link")
    st.caption("“Matters most” = its knockout lowers the answer's log-probability the most (a head whose knockout "
               "raises it is working against the answer: positive cells).")


@section
def scatter_text(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str, stat: str) -> None:
    """What the scatter of the attention statistic against the effect says for this prompt."""
    log_probs = _sweep_log_probs(_model, ids, answer, ablation)
    effect = log_probs - float(iv.log_softmax(clean_run(_model, ids).last_logits)[answer])
    values = statistics(_model, ids)[stat]
    s = model.STATISTICS[stat]
    name = piece(_model, answer)
    r = model.attention_vs_effect(values, effect)
    st.latex(s.formula)
    same = r.busiest == r.strongest
    if same:
        st.markdown(f"Here the head with the highest {s.short} ({model.head_code(*r.busiest)}, "
                    f"{fmt(r.busiest_value, 3)}) is also the head that matters most ({fmt(r.busiest_effect, 3)}): on "
                    "this prompt and statistic, attention and effect agree. Try another statistic or prompt.")
    else:
        st.markdown(
            f"The head with the highest {s.short}, **{model.head_code(*r.busiest)}** ({fmt(r.busiest_value, 3)}), "
            f"changes log p({name}) by {fmt(r.busiest_effect, 3)} when knocked out (rank {r.busiest_rank} of "
            f"{r.n_heads}). The head that matters most, **{model.head_code(*r.strongest)}** "
            f"({fmt(r.strongest_effect, 3)}), has {s.short} {fmt(r.strongest_value, 3)} (rank "
            f"{r.strongest_stat_rank} of {r.n_heads}). Rank correlation between the two over all heads: "
            f"ρ = {fmt(r.rho, 2)}.")
    st.caption("How much a head attends is not how much it matters: Jain & Wallace (2019), “Attention is not "
               "Explanation”. The numbers above are yours, for this prompt; the red points are the two heads named.")


@section
def patch_result(_model: llama.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
                 foil: int, grid: np.ndarray) -> None:
    """The residual patching map and where the fact moves."""
    labels = model.pair_labels(*([rm.visible_piece(x) for x in _model.token_strings(list(t))]
                                 for t in (clean, corrupted)))
    runs = clean_run(_model, clean), clean_run(_model, corrupted)
    c_diff, x_diff = (iv.logit_difference(r.logits, answer, foil) for r in runs)
    a, f = plain(_model, answer), plain(_model, foil)
    st.latex(rf"\text{{logit diff}} = \text{{logit}}_{{{_latex_safe(a)}}} - \text{{logit}}_{{{_latex_safe(f)}}}")
    st.plotly_chart(cfig.patch_map(grid, labels, clean=c_diff, corrupted=x_diff,
                                   title="copy one clean stream into the corrupted run"), key="ca_fig_patch")
    st.caption(f"Clean run: {fmt(c_diff, 2)}; corrupted run: {fmt(x_diff, 2)}. Each cell: the corrupted prompt run "
               "again with the stream entering that block at that position replaced by the clean run's. Columns "
               "before the first differing token are the corrupted run itself (the two streams are equal there).")
    move = model.fact_move(model.recovered(grid, c_diff, x_diff))
    where = model.md_code(labels[move.other_position]) if move.other_position is not None else ""
    if move.moves:
        st.markdown(f"**The fact moves between layers {move.other_until} and {move.last_from}.** Up to block "
                    f"{move.other_until}, copying the stream at position {where} carries the answer; from block "
                    f"{move.last_from} on, only the last position does. So a layer around {move.other_until} moves "
                    "the information to the last position: its heads are below.")
    elif move.last_from is not None and move.other_until is not None:
        st.markdown(f"From block {move.last_from} on, copying the last position carries the answer; up to block "
                    f"{move.other_until}, copying position {where} does. The two ranges do not meet: no single layer "
                    "moves it.")
    elif move.last_from is not None:
        st.markdown(f"From block {move.last_from} on, copying the last position carries the answer; no other "
                    "position carries at least half of it at any block.")
    else:
        st.markdown("No single stream copied from the clean run carries at least half of the difference here.")
    numbers(pd.DataFrame(grid, index=[f"block {b}" for b in range(grid.shape[0])], columns=labels),
            label="Numbers: the patching map")


def _latex_safe(text: str) -> str:
    """A token for ``\\text{}`` in a formula: letters, digits and spaces kept, anything else a placeholder."""
    kept = "".join(ch if ch.isalnum() or ch == " " else "·" for ch in text.strip("“”").replace("␣", " "))
    return kept.strip() or "·"


@section
def head_patch_result(_model: llama.LlamaModel, clean: tuple[int, ...], corrupted: tuple[int, ...], answer: int,
                      foil: int, layer: int, clean_prompt: str) -> None:
    """Each head of one layer patched alone, with links."""
    values = patch_heads(_model, clean, corrupted, answer, foil, layer)
    runs = clean_run(_model, clean), clean_run(_model, corrupted)
    c_diff, x_diff = (iv.logit_difference(r.logits, answer, foil) for r in runs)
    a, f = piece(_model, answer), piece(_model, foil)
    st.plotly_chart(cfig.head_bars(values, clean=c_diff, corrupted=x_diff, y_title="logit diff",
                                   title=f"layer {layer}: each head patched alone"),
                    key="ca_fig_head_patch")
    best = int(np.argmax(values))
    share = (values[best] - x_diff) / (c_diff - x_diff)
    st.markdown(f"Copying **{model.head_code(layer, best)}**'s output alone takes {a} − {f} from {fmt(x_diff, 2)} to "
                f"**{fmt(float(values[best]), 2)}** ({share:.0%} of the way to the clean {fmt(c_diff, 2)}).")
    dataframe(head_links(clean_prompt, [(layer, h) for h in range(len(values))]).assign(
        **{"logit diff": values}), hide_index=True, width="stretch", column_config=LINK_COLUMN)


@section
def notes() -> None:
    """The honest notes."""
    st.info(
        "**Honest notes.** *Zero vs mean ablation answer different questions:* zero asks what the model does without "
        "the head's output at all (a value the head never produces), mean keeps its average over this prompt and "
        "removes only what varies from token to token. *Effects are for this prompt:* a head that matters here may "
        "not matter on another sentence, and a knockout's effect is not the sum of the single knockouts. *The "
        "weights:* the model file stores the blocks' matrices in 4 bits (Q4_1) and the embedding, also the output "
        "matrix behind every logit, in 8 bits (Q8_0); they are widened to float32 here, so the numbers are close "
        "to, not identical with, the full-precision model's. *The logit lens* reads early streams with the final "
        "norm and unembedding, which the model was trained to use only at the end: an early readout is a probe, "
        "not what the model “thinks”.", icon="🔎")


def _sweep_log_probs(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str) -> np.ndarray:
    """The sweep's log-probabilities ``[L, H]`` from the cached layers (after :func:`sweep` ran them)."""
    return np.stack([sweep_layer(_model, ids, answer, ablation, layer)[0] for layer in range(_model.config.n_layers)])


@st.cache_resource(max_entries=32, ttl=TTL, show_spinner=False)
def attribution_grid(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int,
                     picked: tuple[tuple[int, int], ...]) -> go.Figure:
    """The clickable grid of every head's share of the answer's logit, the knockout's heads outlined (the same
    object on every rerun: the page draws it as a widget, so it cannot be a replayed section)."""
    a = attribution(_model, ids, answer)
    return cfig.head_grid(a.heads, title=f"every head's share of {plain(_model, answer)}'s logit",
                          colorbar_title="share", picked=picked)


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner=False)
def sweep_grid(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str,
               guess: tuple[int, int] | None) -> go.Figure:
    """The clickable grid of the sweep's effects, the guess outlined."""
    effect = _sweep_log_probs(_model, ids, answer, ablation) - float(
        iv.log_softmax(clean_run(_model, ids).last_logits)[answer])
    return cfig.head_grid(effect, title=f"change of log p({plain(_model, answer)}) per head", colorbar_title="Δ log p",
                          picked=(guess,) if guess else ())


@st.cache_resource(max_entries=16, ttl=TTL, show_spinner=False)
def scatter_figure(_model: llama.LlamaModel, ids: tuple[int, ...], answer: int, ablation: str, stat: str) -> go.Figure:
    """The scatter of the attention statistic against the effect (a widget: clicks select a head)."""
    effect = _sweep_log_probs(_model, ids, answer, ablation) - float(
        iv.log_softmax(clean_run(_model, ids).last_logits)[answer])
    values = statistics(_model, ids)[stat]
    s = model.STATISTICS[stat]
    r = model.attention_vs_effect(values, effect)
    return cfig.scatter_effect(values, effect, x_title=f"{s.name} ({s.unit})",
                               y_title=f"change of log p({plain(_model, answer)})",
                               highlight=[r.busiest, r.strongest], title="every head: attention vs effect")


def selected_head(event, n_layers: int, n_heads: int) -> tuple[int, int] | None:
    """The ``(layer, head)`` of the last clicked point of a head grid (``x`` = head, ``y`` = layer) or scatter
    (``customdata[3:5]``), or ``None``."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    for point in reversed(list(points)):
        custom = point.get("customdata") if isinstance(point, dict) else None
        try:
            if isinstance(custom, list | tuple) and len(custom) >= 5:  # the scatter's [code, x, y, layer, head]
                layer, head = int(custom[3]), int(custom[4])
            else:
                layer, head = int(round(float(point["y"]))), int(round(float(point["x"])))
        except (KeyError, TypeError, ValueError):
            continue
        if 0 <= layer < n_layers and 0 <= head < n_heads:
            return layer, head
    return None
