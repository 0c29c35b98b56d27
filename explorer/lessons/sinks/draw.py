"""Sections of the page "Attention sinks and smaller KV caches", and the cached computations behind them.

Every computation keys on the prompt's token ids and the page's choices; the model is passed as ``_model`` (not
hashed: one per process, :mod:`explorer.shell.llm`). Entry sizes at the 64-token limit: :func:`summary` 20 kB (270
masses, one head's 64 x 64 map), :func:`first_token`, :func:`shift` and :func:`stream` under 2 kB, :func:`measured`
0.3 kB each; :func:`reference` (the model's own logits, ``[64, 49152]`` float32 = 12.6 MB, ``st.cache_resource``:
never copied) keeps the 2 latest prompts. So the lesson's caches stay under about 30 MB besides the model; a variant
model (one layer's converted matrix, up to 4 MB, while a pass runs) lives only while one row of the sweep is measured.

The sweep over every cache variant (the page's :func:`explorer.shell.jobs.each` over :func:`measured`) is one cached
measurement per variant, one at a time in the process: a prompt already measured costs nothing, a new one about 10-15
forward passes (``BENCHMARKS.md``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons.sinks import charts as sfig
from explorer.lessons.sinks import model
from explorer.shell import charts, i18n, llm
from explorer.shell.cache import cached, resource, section
from explorer.shell.i18n import translator
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import fmt, head_labels, integer_formula, latex_words, layer_labels, md_code

_, _n = translator(__name__)


# --- cached computations -------------------------------------------------------------------------------------


summary = cached(max_entries=16)(model.sink_summary)  # one forward pass with weights
first_token = cached(max_entries=16)(model.first_token_experiment)  # first_token(m, ids, summary(m, ids), choice)
shift = cached(max_entries=16)(model.shift_experiment)  # two forward passes
stream = cached(max_entries=32)(model.streamed)  # a windowed pass, StreamingLLM's numbering, a greedy continuation
reference = resource(max_entries=2)(model.reference_logits)  # 12.6 MB an entry at 64 tokens: the 2 latest prompts
measured = cached(max_entries=96, serial=True)(model.measured)  # one variant at a time in the process: the
# converted model's pass (its logits and one layer's converted matrix) alive once, however many sessions measure


# --- sections -------------------------------------------------------------------------------------------------


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title(_("Attention sinks and smaller KV caches"))


@section
def intro(name: str, weights: str | None, quantized: bool = True) -> None:
    """The two questions, the terms they use, the honest note (``name``: the model's,
    :func:`explorer.shell.llm.model_name`; ``weights``: how its file stores them in words,
    :func:`explorer.shell.llm.precision_note`, ``None`` when its table cannot be read; ``quantized``: some are
    quantised, :func:`explorer.shell.llm.widened_exactly`)."""
    st.markdown(_(
        "Open any attention map of a trained model and most heads look at the **first token**, whatever it is. "
        "This page measures why, on {model}'s own weights and your text, and then uses it: a cache that keeps only "
        "the last few tokens needs those first ones. Then it measures the other ways modern models shrink the KV "
        "cache (fewer key/value heads, a latent cache, a window), each as bytes per token against perplexity."
    ).format(model=name))
    st.caption(_(
        "**Perplexity** = exp(mean next-token loss), the loss of one prediction being −ln p(the actual next token) "
        "in nats: 1 means every next token predicted with certainty, and lower is better. A **latent cache** keeps a "
        "few numbers per token from which the keys and values are rebuilt (section 5)."))
    st.caption(_(
        "Computed by this page, not looked up: every number and every sentence that states one comes from running "
        "the model here, in NumPy float32, on the text below.") + (" " + (_(
        "How the file stores the weights: {weights}; they are widened to float32, so the numbers are close to, not "
        "identical with, the full-precision model's.") if quantized else _(
        "How the file stores the weights: {weights}; float32 holds them exactly, so the numbers are the file's own "
        "model's.")).format(weights=weights) if weights else ""))


@section
def the_sink(_model: llm.LlamaModel, ids: tuple[int, ...], color_scale: str = "fixed") -> None:
    """Sink mass per layer and per head, the strongest sink head's map, the explanation with its measured facts."""
    c = _model.config
    s = summary(_model, ids)
    st.markdown(_(
        "Each row of an attention map is a softmax: the weights of one query over the keys it may see are positive and "
        "**sum to 1**. A head that has nothing to fetch for some query cannot give zero to every key; the weight has "
        "to go somewhere. A trained model learns a place for it: the first token, which every later query can see (the "
        "causal mask lets each token see the first), and whose value it keeps small, so weight parked there changes "
        "the output little: a **no-op key**. Xiao et al. (2023) named it the *attention sink*; Gu et al. (2024) trace "
        "it to the softmax's sum to one (without the normalisation it does not form) and find the sink's values small."
    ))
    st.latex(r"w_{ij} = \frac{e^{s_{ij}}}{\sum_{k \le i} e^{s_{ik}}}")
    st.latex(r"\sum_{j \le i} w_{ij} = 1")
    st.latex(latex_words(_("sink mass")) + r" = \frac{1}{n-2}\sum_{i=2}^{n-1} w_{i0}")
    st.caption(_("Sink mass: a head's weight on the first token, averaged over the queries 2 … {last} (query 0 sees "
                 "only itself; for query 1 the first token is also the previous one). A head spreading every row "
                 "evenly would give {uniform}.").format(last=s.n - 1, uniform=fmt(s.uniform, 3)))
    for claim in model.sink_claims(s):
        st.markdown(claim)
    left, right = st.columns([3, 2])
    with left:
        charts.show_fig(sfig.sink_layers(s.per_layer, s.mass.max(axis=1), s.uniform,
                                         title=_("weight on the first token, per layer")), key="sk_fig_layers")
    with right:
        charts.show_fig(charts.head_grid(s.mass, title=_("every head's sink mass"), colorbar_title=_("weight"),
                                         zrange=(0.0, 1.0), height=620), key="sk_fig_grid")
    labels = llm.labels(_model, ids)
    charts.show_fig(charts.heatmap(s.top_map, labels, labels,
                                   title=_("strongest sink: layer {layer}, head {head}").format(layer=s.top_layer,
                                                                                               head=s.top_head),
                                   mask=np.tri(s.n, dtype=bool), color_scale=color_scale, colorbar_at="below"),
                    key="sk_fig_top_head")
    st.caption(_("The strongest sink head of your text: layer {layer}, head {head}, sink mass {mass}. Rows are "
                 "queries, columns keys: the first column is the first token.").format(
        layer=s.top_layer, head=s.top_head, mass=fmt(float(s.mass[s.top_layer, s.top_head]), 3)))
    numbers({_("Sink mass of every head"): pd.DataFrame(s.mass, index=layer_labels(c.n_layers),
                                                        columns=head_labels(c.n_heads)),
             _("Per layer"): pd.DataFrame({_("layer"): range(c.n_layers), _("mean sink mass"): s.per_layer,
                                           _("strongest head"): s.mass.max(axis=1),
                                           _("first token's value length / median"): s.value_ratio})},
            label=_("Numbers: the sink"))


@section
def first_token_section(_model: llm.LlamaModel, ids: tuple[int, ...], choice: str) -> None:
    """Another token first: where the weight on the first position goes."""
    f = first_token(_model, ids, summary(_model, ids), choice)
    old_piece, new_piece = llm.visible_pieces(_model, [ids[0], f.ids[0]])
    old, new = md_code(old_piece, 24), md_code(new_piece, 24)  # in sentences: shown literally
    a, b, moved = float(f.original.mean()), float(f.changed.mean()), float(f.followed.mean())
    pct = dict(a=i18n.percent(a, 0), b=i18n.percent(b, 0), moved=i18n.percent(moved, 0), old=old, new=new)
    if model.FIRST_CHOICES[choice] is None:  # the first token dropped
        st.markdown(_("Without your first token {old}, {new} comes first. On your text, position 0 took {a} of the "
                      "attention with {old} there; it takes **{b}** with {new} there. The same {new} got **{moved}** "
                      "at position 1 in your text.").format(**pct))
        names = (_("without it: position 0 ({token})").format(token=new_piece),
                 _("{token} at position 1 in your text").format(token=new_piece))
    else:
        st.markdown(_("With {new} put before your text, position 0 takes **{b}** of the attention (it took {a} with "
                      "your first token {old} there), and {old}, now at position 1, gets **{moved}**.").format(**pct))
        names = (_("{token} put first: position 0").format(token=new_piece),
                 _("{token}, now at position 1").format(token=old_piece))
    series = [(_("your text: position 0 ({token})").format(token=old_piece), f.original, sfig.SINK_COLORS[None]),
              (names[0], f.changed, sfig.SINK_COLORS[4]), (names[1], f.followed, sfig.SINK_COLORS[0])]
    if f.follows_position:
        st.success(_("Measured on your text: the sink follows the first position, not the word. Whatever token comes "
                     "first takes the weight; the token that was there loses it when it moves."), icon="📍")
    else:
        st.warning(_("On your text the sink does not simply follow the first position: position 0 keeps less than "
                     "half of its weight with another token there, or the token that moved keeps half of it or more."),
                   icon="🔎")
    charts.show_fig(sfig.first_token_layers(series, title=_("mean weight per layer")), key="sk_fig_first")
    st.caption(_("Means over every layer's {heads} heads and the queries from 2 on. A head spreading evenly would give "
                 "{uniform} to a position of the changed text.").format(heads=_model.config.n_heads,
                                                                        uniform=fmt(f.uniform_changed, 3)))
    numbers(pd.DataFrame({_("layer"): range(len(f.original)), **{name: values for name, values, _c in series}}),
            label=_("Numbers: where the weight goes"))


@section
def shift_section(_model: llm.LlamaModel, ids: tuple[int, ...], offset: int) -> None:
    """Every position shifted by ``offset``: the logits and the sink do not move."""
    sh = shift(_model, ids, offset)
    st.latex(r"\langle R_{i+k}\, q,\ R_{j+k}\, k \rangle = \langle q,\ R_{j-i}\, k \rangle")
    m1, m2, m3 = st.columns(3)
    m1.metric(_("max |Δ logit|"), i18n.scientific(sh.max_logit_diff),
              help=_("over every position and token; the logits reach {largest} in absolute value").format(
                  largest=fmt(sh.largest_logit, 1)))
    m2.metric(_("max |Δ attention weight|"), i18n.scientific(sh.max_weight_diff),
              help=_("over every layer, head, query and key"))
    m3.metric(_("max |Δ sink mass| of a layer"),
              i18n.scientific(float(np.abs(sh.mass_shifted - sh.mass_original).max())))
    if offset == 0:
        st.info(_("A shift of 0 is the usual pass: move the slider to shift every position."), icon="👉")
    else:
        st.markdown(model.shift_claim(sh))
    if not sh.same_next:
        st.caption(_("The most likely next token changes with the shift: two candidates are within rounding."))


@section
def streaming(_model: llm.LlamaModel, ids: tuple[int, ...], window: int, n_new: int) -> None:
    """The window with 0, 1 and 4 kept first tokens and full attention: perplexity, losses, generated text."""
    runs = {sinks: stream(_model, ids, window, sinks, n_new) for sinks in (*model.SINK_COUNTS, None)}
    n = len(ids)
    labels = llm.labels(_model, ids)
    st.latex(latex_words(_("query {i} sees key {j}"), i=r"\ i\ ", j=r"\ j") + r" \iff j \le i \ "
             + latex_words(_("and")))
    st.latex(latex_words(_("{a} or {b}"), a=r"i - j < w \ ", b=r"\ j < k"))
    k = model.SINK_COUNTS[-1]
    charts.show_fig(sfig.window_mask(model.allowed_keys(n, window, k), labels,
                                     title=_("which keys each query sees")), key="sk_fig_mask")
    st.caption(_("A window of {w} with {kept}. Blue: the window (the query and the ones just before it). Orange: the "
                 "kept first tokens. Grey: keys the window dropped (a cache that keeps only the window and the first "
                 "tokens has forgotten them). Blank: the future.").format(w=window, kept=model.kept(k)))
    perplexity_claim, numbering_claim = model.streaming_claims(runs, n)
    st.markdown(perplexity_claim)
    st.caption(_("Perplexity = exp(mean next-token loss in nats) over the positions after the window; 1 would mean "
                 "every next token predicted with certainty."))
    for col, sinks in zip(st.columns(4), (*model.SINK_COUNTS, None), strict=True):
        r = runs[sinks]
        title = (_("full attention") if sinks is None
                 else _("window {w}, {kept}").format(w=window, kept=model.kept(sinks)))
        with col:
            st.metric(title, fmt(r.perplexity, 1), help=_("perplexity over the positions after the window"))
            st.caption(_n("continues your text with {n} token (greedy):",
                          "continues your text with {n} tokens (greedy):", len(r.generated)).format(n=len(r.generated)))
            part = llm.text(_model, r.generated)  # an unfinished character stays pending, never �
            st.code(llm.visible_piece(part.text), language=None, wrap_lines=True)  # ↵ and ␣ as in the token strips
            if part.pending:
                st.caption(_("… and the first bytes of a character not finished yet: {bytes}").format(
                    bytes=md_code(part.pending_escaped, 24)))
    series = [((_("full attention") if s is None else model.kept(s)), runs[s].losses, sfig.SINK_COLORS[s])
              for s in (*model.SINK_COUNTS, None)]
    charts.show_fig(sfig.losses_along(series, window, labels, title=_("next-token loss along your text")),
                    key="sk_fig_losses")
    st.caption(_("Before position {w} (dotted line) the window hides nothing: every line is the same there.").format(
        w=window))
    if _model.config.positions != "rope":  # gpt2: learned positions, nothing in the cache to renumber
        st.info(_("**Which positions?** StreamingLLM (Xiao et al. 2023, §3.2) numbers the positions *inside its "
                  "cache* (the kept tokens 0 … k−1, then the window) and lets RoPE turn each key by that number. This "
                  "model has no RoPE: its positions are learned vectors added to each token's embedding before the "
                  "first layer, so a cached key carries its position in every number it holds and there is no "
                  "position inside the cache to renumber. StreamingLLM's numbering does not apply to it; the "
                  "perplexities above keep every token's own position."), icon="📍")
        numbers(pd.DataFrame({_("query position"): range(n - 1), _("token"): labels[:-1], _("next token"): labels[1:],
                              **{name: losses for name, losses, _c in series}}),
                label=_("Numbers: the loss at every position (nats)"))
        return
    st.markdown(_(
        "**Which positions?** This page keeps every token's own position: the query at position *i* and a kept first "
        "token at position *j* are *i − j* apart, as in the full model (`forward(ids, window=w, sinks=k)`; the "
        "continuations above are generated that way, from the model's cache). StreamingLLM (Xiao et al. 2023, §3.2) "
        "numbers positions *inside its cache* instead: the kept tokens 0 … k−1, then the window, so the query sits "
        "at k + w − 1 and the kept tokens look close. A window key is equally far in both; only the kept tokens' "
        "scores differ. Both perplexities, measured:"
    ))
    # A column per k, the two numberings as rows: three columns fit a 390 px phone (issue 47: StreamingLLM's was cut)
    numbering = pd.DataFrame({f"k = {sinks}": [runs[sinks].perplexity, runs[sinks].renumbered]
                              for sinks in model.SINK_COUNTS if sinks},
                             index=[_("positions kept (this page)"), _("StreamingLLM's numbering")])
    dataframe(numbering, digits=2, width="stretch")
    if numbering_claim:
        st.markdown(numbering_claim)
    numbers(pd.DataFrame({_("query position"): range(n - 1), _("token"): labels[:-1], _("next token"): labels[1:],
                          **{name: losses for name, losses, _c in series}}),
            label=_("Numbers: the loss at every position (nats)"))


@section
def cache_formulas(config: llm.LlamaConfig, n: int) -> None:
    """What each conversion does (formulas), and that none is fine-tuned."""
    c = config
    st.markdown(_(
        "**Conversions before any fine-tuning.** Each row below changes the trained weights (or the mask) and runs "
        "them as they are. The papers that propose these conversions train afterwards: grouped-query attention's "
        "mean pooling is followed by *uptraining* on 5 % of the pre-training compute (Ainslie et al. 2023); the "
        "published conversions to a latent cache (MHA2MLA, Ji et al. 2025; TransMLA, Meng et al. 2025) fine-tune "
        "after their factorisation. Here you see what the first step alone costs."
    ))
    st.markdown(_("**MQA** keeps one key/value head, the mean of the {n} (per layer, for keys and values):").format(
        n=c.n_kv_heads))
    st.latex(r"W_k' = \tfrac{1}{" + str(c.n_kv_heads) + r"}\textstyle\sum_g W_k^{(g)},\quad W_v' = \tfrac{1}{"
             + str(c.n_kv_heads) + r"}\sum_g W_v^{(g)}")
    st.markdown(_("**Latent** keeps r numbers per token and layer, the best rank-r factorisation of keys and values "
                  "together (V_r: the top r right singular vectors of [W_k | W_v]):"))
    st.latex(r"[K \,|\, V] = X\,[W_k \,|\, W_v] \approx (X A)\, B")
    st.latex(r"A = [W_k \,|\, W_v]\, V_r \in \mathbb{R}^{" + str(c.d_model) + r" \times r}")
    st.latex(r"B = V_r^\top \in \mathbb{R}^{r \times " + str(2 * c.n_kv_heads * c.d_head) + "}")
    if llm.latent_full_rank(c) < 2 * c.n_kv_heads * c.d_head:
        st.caption(_("Here [W_k | W_v] is wider ({width}) than d_model ({d_model}): its rank is at most {d_model}, so "
                     "a latent cache of rank {d_model} is already the model's own keys and values.").format(
            width=2 * c.n_kv_heads * c.d_head, d_model=c.d_model))
    st.markdown(_("**Bytes per token** (float32), keys and values, or the latent:"))
    st.latex(r"4 \cdot n_{\text{layers}} \cdot 2\, n_{\text{kv}}\, d_{\text{head}}\quad "
             + latex_words(_("or")) + r"\quad 4 \cdot n_{\text{layers}} \cdot r")
    st.latex(r"4 \cdot " + str(c.n_layers) + r" \cdot 2 \cdot " + str(c.n_kv_heads) + r" \cdot " + str(c.d_head)
             + " = " + integer_formula(c.kv_bytes_per_token) + r"\ " + latex_words(_("(the model)")))
    st.caption(model.latent_note(c) + " " + _(
        "A window keeps every float of a token for at most w + 4 tokens: its bytes per token are those of the cache "
        "at your text's last token divided by its {n} tokens.").format(n=n))


@section
def cache_bytes(config: llm.LlamaConfig, n: int) -> None:
    """Every variant's bytes per token of a text of ``n`` tokens, from the formulas alone (no model runs here)."""
    c = config
    rows = []
    for v in model.cache_variants(c, n):
        floats, per_token = model.variant_bytes(c, v, n)
        rows.append({_("variant"): model.variant_label(c, v), _("floats per token per layer"): floats,
                     _("KV cache bytes per token"): round(per_token)})
    dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=36 + 35 * len(rows))


@section
def smaller_caches(_model: llm.LlamaModel, ids: tuple[int, ...], rows: tuple[model.Measured, ...]) -> None:
    """The measured table and the chart of every cache variant, and what they say."""
    c = _model.config
    n = len(ids)
    gqa = next(r for r in rows if r.variant.key == "gqa")
    score_from = model.sweep_score_from(tuple(r.variant for r in rows))
    names = [model.variant_label(c, r.variant) for r in rows]
    table = pd.DataFrame([{
        _("variant"): name,
        _("floats per token per layer"): r.floats_per_layer,
        _("KV cache bytes per token"): round(r.bytes_per_token),
        _("perplexity"): r.perplexity,
        _("KL to the model (nats)"): r.kl,
        _("top-1 agreement"): r.top1,
    } for name, r in zip(names, rows, strict=True)])
    dataframe(table, digits=3, hide_index=True, width="stretch", height=36 + 35 * len(rows))
    scored = dict(positions=model.positions(n - 1 - score_from), first=score_from, last=n - 2)
    st.caption((_("Every row scored on the same {positions} ({first} … {last}, after the largest window). KL: how far "
                  "each next-token distribution is from the model's, mean over those positions; top-1 agreement: how "
                  "often both put the same token first.") if score_from else
                _("Every row scored on the same {positions} ({first} … {last}). KL: how far each next-token "
                  "distribution is from the model's, mean over those positions; top-1 agreement: how often both put "
                  "the same token first.")).format(**scored))
    charts.show_fig(sfig.cache_tradeoff([(name, r.variant.family, r.bytes_per_token, r.perplexity)
                                         for name, r in zip(names, rows, strict=True)], reference=gqa.perplexity,
                                        title=_("what a smaller cache costs, on your text")), key="sk_fig_tradeoff")
    for sentence in model.variant_claims(c, rows):
        st.markdown(f"- {sentence}")
    numbers(table.assign(**{_("cache bytes at the last token"): [r.cache_bytes for r in rows],
                            _("max |Δ logit|"): [r.max_logit_diff for r in rows]}),
            label=_("Numbers: every variant"))
