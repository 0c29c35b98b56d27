"""Sections of the page "Generating with a KV cache", and its cached computations.

* :func:`decode_state`: the generation, one :class:`~explorer.lessons.kv_cache.model.DecodeState` per (prompt ids,
  sampling, steps). Its live :class:`attention.llama.KVCache` is not picklable, so it is a
  :func:`explorer.shell.cache.resource` (shared, read-only, never copied) and *incremental*: step ``s`` extends the
  cached step ``s - 1`` by one forward pass of one token, which is what one more click costs.
* :func:`cache_view_data`: what :func:`cache_view` draws for one layer and key/value head, per (run, layer, key/value
  head); its full recomputation is the door's cached forward pass (:func:`explorer.shell.llm.run`, per sequence).

The sections take the model as ``_model`` (not hashed) and the page's :class:`~explorer.lessons.kv_cache.model.Run`
(hashed by its fields) plus the widget values they depend on.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st

from explorer.lessons.kv_cache import charts as kfig
from explorer.lessons.kv_cache import model
from explorer.shell import charts, i18n, llm
from explorer.shell.cache import cached, resource, section
from explorer.shell.i18n import translator
from explorer.shell.tables import numbers
from explorer.shell.textviews import integer_formula, latex_words, md_escape, tokens_count

_, _n = translator(__name__)

DECODE_MAX_ENTRIES = 40
"""States kept: one generation of 32 steps is 33 states sharing one cache buffer (at most 2 x 1.5 MB at 64
tokens, plus the 1.5 MB buffer of the prefill), so 40 entries hold at most a few such chains (~150 MB worst case:
40 distinct prompts each at 64 tokens)."""


decode_state = resource(max_entries=DECODE_MAX_ENTRIES)(model.decode_state)  # expires after cache.TTL_SECONDS
"""The generation, step by step: call it with itself as ``_states`` (:func:`model.decode_state`)."""


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title(_("Generating with a KV cache"))


@section
def intro(config: llm.LlamaConfig, storage: llm.WeightStorage | None, name: str) -> None:
    """The idea, the formula (the model's sizes and parts from its config) and the honest note (how the weights file
    stores them: ``storage``, :func:`explorer.shell.llm.weight_storage`; ``name``: :func:`llm.model_name`)."""
    st.markdown(_(
        "A decoder writes one token at a time: to choose token *t + 1* it runs token *t* through every layer, and in "
        "every layer the new token's **query** attends over the **keys** and **values** of all tokens so far. Those "
        "keys and values never change: under the causal mask, token *j*'s key and value depend only on tokens 0 … *j*. "
        "So a decoder keeps them, the **KV cache**, and each new token computes just its own query, key and value and "
        "appends one row to K and one to V (Pope et al. 2022, *Efficiently Scaling Transformer Inference*). Here it "
        "runs on a real trained model, {model}: {shape} ({sharing})."
    ).format(model=md_escape(name), shape=llm.describe(config), sharing=model.sharing_words(config)))
    st.latex(model.qkv_latex(config))
    st.latex(r"K \leftarrow \begin{bmatrix} K \\ k_t \end{bmatrix},\quad V \leftarrow \begin{bmatrix} V \\ v_t "
             r"\end{bmatrix},\quad o_t = \mathrm{softmax}\!\left(\frac{q_t K^\top}{\sqrt{" + str(config.d_head)
             + r"}}\right) V")
    st.caption(model.intro_caption(config) + " " + _(
        "The **logits** are the model's score for each token of its vocabulary, read from the last position; their "
        "softmax is the next token's probabilities."))
    st.caption(
        _("Computed by this page, not looked up: every token, probability and number below comes from running the "
          "model here, in NumPy float32.") + " " + model.storage_note(storage)
    )


@section
def generation(_model: llm.LlamaModel, run: model.Run) -> None:
    """The text so far, the generated tokens with their probabilities, and why generation stopped (if it did)."""
    state = model.state_of(_model, run, decode_state)
    c = _model.config
    st.caption(_("{prompt} + {steps} generated = {tokens} in the cache").format(
        prompt=_n("{n} prompt token", "{n} prompt tokens", run.n_prompt).format(n=run.n_prompt), steps=run.steps,
        tokens=tokens_count(run.n)) + " · " + run.sampling.describe())
    text = llm.text(_model, state.ids)  # complete characters + the bytes of one not finished yet
    st.code(text.text + model.pending_marker(text.pending), language=None, wrap_lines=True)
    st.caption(_("The prompt and the generated tokens read back so far, as text. The tokens as the model reads "
                 "them (␣ = a space, ↵ = a new line):"))
    st.text(" | ".join(llm.visible_pieces(_model, state.ids)))
    if text.pending:
        st.caption(model.pending_note(text.pending, ended=state.stopped, at_limit=state.steps >= model.MAX_STEPS))

    at_limit = state.steps >= model.MAX_STEPS
    shown = sorted({i for choice in state.choices for i in (choice.token_id, *choice.top_ids)})
    piece = dict(zip(shown, llm.visible_pieces(_model, shown), strict=True))  # one call
    rows = []
    for choice in state.choices:
        alternatives = " · ".join(f"{piece[i]} {model.probability_text(p)}"
                                  for i, p in zip(choice.top_ids, choice.top_probabilities, strict=True))
        row = {_("step"): choice.step, _("position"): choice.position, _("token"): piece[choice.token_id],
               _("probability"): model.probability_text(choice.probability), _("rank"): choice.rank}
        if not run.sampling.is_greedy:
            row[_("chance of being drawn")] = model.probability_text(choice.sampling_probability)
        row[_("the model's top {k} (probability)").format(k=model.TOP_ALTERNATIVES)] = alternatives
        row[_("status")] = model.status_text(choice, choice.step <= state.steps, at_limit)
        rows.append(row)
    st.markdown(_("**The generated tokens.** *probability*: softmax of the logits (temperature 1), the model's own "
                  "belief; *rank*: 1 = the model's most likely token; *chance of being drawn*: its probability after "
                  "temperature and top-k, what the draw used.") if not run.sampling.is_greedy else
                _("**The generated tokens.** *probability*: softmax of the logits (temperature 1), the model's own "
                  "belief; *rank*: 1 = the model's most likely token; greedy always takes rank 1."))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=36 + 35 * len(rows))  # every row
    if state.stopped:
        st.info(_("The model chose {token} (id {id}), the end-of-sequence token: generation stops there. Nothing "
                  "would follow it, so it is not read back and adds no row to the cache.").format(
            token=f"`{piece[c.eos_id]}`", id=c.eos_id), icon="🛑")
    elif at_limit:
        st.info(_("This page stops at {steps} generated tokens (with a prompt of at most {prompt}, at most "
                  "{positions} positions: heat maps keep readable labels).").format(
            steps=model.MAX_STEPS, prompt=model.MAX_PROMPT_TOKENS, positions=model.MAX_PROMPT_TOKENS + model.MAX_STEPS),
            icon="🛑")


cache_view_data = cached(max_entries=32)(model.cache_view_data)  # about 30 kB an entry at 64 tokens
full_pass_data = cached(max_entries=32)(model.full_pass_data)  # about 1 kB an entry


@section
def cache_view(_model: llm.LlamaModel, run: model.Run, layer: int, kv_head: int, head: int,
               color_scale: str = "fixed") -> None:
    """One layer and key/value head: K and V as they grow and the new query's weights, from the cache alone
    (:func:`cache_comparison` follows with the full recomputation).

    ``head`` is the query head compared (the model's own number, one of the key/value head's group).

    Raises:
        ValueError: ``head`` does not read ``kv_head``.
    """
    view = cache_view_data(_model, run, layer, kv_head, decode_state)
    c = _model.config
    heads, labels = list(view.heads), list(view.labels)
    if head not in heads:
        raise ValueError(f"query head {head} does not read key/value head {kv_head} (its heads: {heads})")
    place = heads.index(head)
    n, newest = len(labels), labels[-1]
    K, V = view.keys, view.values  # [n, d_head] each, straight from the cache

    what = _("the prefill's last prompt token") if run.steps == 0 else _("generated token {n}").format(n=run.steps)
    shared = (_("{first} and {last}").format(first=", ".join(map(str, heads[:-1])), last=heads[-1])
              if len(heads) > 1 else str(heads[0]))
    parts = [_("Layer {layer} · key/value head {kv}, shared by query heads {shared}").format(
                 layer=layer, kv=kv_head, shared=shared),
             _n("{n} cached row of d_head = {d}", "{n} cached rows of d_head = {d}", n).format(n=n, d=c.d_head),
             _("the newest row (outlined in red) is position {position}, {what}").format(position=n - 1, what=what)]
    if run.steps:
        parts.append(_n("rows above the dashed line: the prompt ({n} token)",
                        "rows above the dashed line: the prompt ({n} tokens)", run.n_prompt).format(n=run.n_prompt))
    st.caption(" · ".join(parts))
    left, right = st.columns(2)
    with left:
        st.latex(r"K_{\text{cache}} \in \mathbb{R}^{" + f"{n} \\times {c.d_head}" + r"},\quad " + model.key_latex(c))
        title = _("K cache, layer {layer}, kv head {kv}").format(layer=layer, kv=kv_head)
        charts.show_fig(kfig.cache_matrix(K, labels, run.n_prompt, title=title, colorbar_title="k"), key="kv_fig_keys")
    with right:
        st.latex(r"V_{\text{cache}} \in \mathbb{R}^{" + f"{n} \\times {c.d_head}" + r"},\quad " + model.value_latex(c))
        title = _("V cache, layer {layer}, kv head {kv}").format(layer=layer, kv=kv_head)
        charts.show_fig(kfig.cache_matrix(V, labels, run.n_prompt, title=title, colorbar_title="v"),
                        key="kv_fig_values")
    st.caption(model.keys_note(c))
    dims = [str(j) for j in range(c.d_head)]
    numbers({model.keys_label(c): pd.DataFrame(K, index=labels, columns=dims),
             "V": pd.DataFrame(V, index=labels, columns=dims)}, label=_("Numbers: K and V of the cache"))

    st.subheader(model.new_query_title(c, layer, n))
    st.latex(r"w = \mathrm{softmax}\!\left(\frac{q_t\, K_{\text{cache}}^\top}{\sqrt{" + str(c.d_head)
             + r"}}\right) \in \mathbb{R}^{1 "
             r"\times " + str(n) + r"}\quad"
             + latex_words(_("for each of the {n} query heads of the group"), n=r"\ " + str(len(heads)) + r"\ "))
    charts.show_fig(kfig.new_query_weights(view.cached_rows, [str(h) for h in heads], labels, run.n_prompt, place,
                                           title=_n("new query {token} over {n} cached key",
                                                    "new query {token} over {n} cached keys", n).format(
                                               token=newest, n=n),
                                           color_scale=color_scale),
                    key="kv_fig_new_row")
    st.caption(_("One row per query head that reads key/value head {kv}: the {k} heads share K and V but have "
                 "their own queries, so they weigh the same keys differently. Head {head} (outlined) is compared "
                 "below.").format(kv=kv_head, k=len(heads), head=head))
    window = model.window_note(c, layer, n)
    if window:
        st.caption(window)



@section
def cache_comparison(_model: llm.LlamaModel, run: model.Run, layer: int, kv_head: int, head: int) -> None:
    """The newest query's row from the cached step against one full recomputation (``head``: as :func:`cache_view`).
    """
    view = cache_view_data(_model, run, layer, kv_head, decode_state)
    full = full_pass_data(_model, run, layer, kv_head, decode_state)
    c = _model.config
    labels, place = list(view.labels), view.heads.index(head)
    st.subheader(_("Cached step vs full recomputation"))
    cached_row, full_row = view.cached_rows[place], full.full_rows[place]
    diff_head = model.max_difference(cached_row, full_row)
    if run.steps == 0:
        st.info(model.prefill_claim(full.difference_all), icon="👉")
    charts.show_fig(kfig.cached_vs_full(cached_row, full_row, labels,
                                        title=_("query head {head}, layer {layer}: the new row both ways").format(
                                            head=head, layer=layer)),
                    key="kv_fig_compare")
    st.markdown(_("**max |cached − full|** for head {head} of layer {layer}: {head_diff} · over all {layers} × "
                  "{heads} heads: {all_diff}").format(head=head, layer=layer, layers=c.n_layers, heads=c.n_heads,
                                                      head_diff=f"`{model.difference_text(diff_head)}`",
                                                      all_diff=f"`{model.difference_text(full.difference_all)}`"))
    st.markdown(model.difference_note(diff_head, full.difference_all, head, layer, c.n_layers))
    numbers(pd.DataFrame({_("key"): labels, _("cached step"): cached_row.astype(float), _("full recomputation"):
                          full_row.astype(float), _("|difference|"): np.abs(cached_row.astype(float) -
                                                                           full_row.astype(float))}),
            label=_("Numbers: the new row both ways"))


@section
def cost(config: llm.LlamaConfig, n_prompt: int, n: int) -> None:
    """Multiply-adds per new token with and without the cache, and the cache's size, as the sequence grows."""
    c = config
    W = model.macs_per_layer_weights(c)
    ns = np.arange(1, n_prompt + model.MAX_STEPS + 1)
    with_cache = np.array([model.macs_with_cache(c, k) for k in ns])
    without = np.array([model.macs_without_cache(c, k) for k in ns])
    gqa = np.array([model.cache_bytes(c, k) for k in ns])
    mha = np.array([model.cache_bytes(c, k, n_kv_heads=c.n_heads) for k in ns])
    ints = i18n.integer
    st.markdown(_(
        "Counted: the multiply-adds of the matrix products, for the logits of the next token when the sequence "
        "has n tokens.") + " " + model.weights_text(c, ints(W)) + " " + _(
        "One query over n keys costs 2·{heads}·{d_head}·n (q·k, then weights·V); the logits {d_model}·{vocab}. "
        "Without the cache every one of the n tokens goes through every layer again (query i over its i keys); the "
        "logits are needed for the last token only.").format(d_model=c.d_model, heads=c.n_heads, d_head=c.d_head,
                                                             vocab=ints(c.vocab_size)) + " " + _(
        "W_o is the output projection that maps the heads' concatenated outputs back to d_model.") + " "
        + model.mlp_words(c))
    with_, without_ = model.cost_latex(c)
    st.latex(latex_words(_("with the cache: {formula}"), formula=r"\ " + with_))
    st.latex(latex_words(_("without: {formula}"), formula=r"\ " + without_))
    size = (r" = 2 \times n_{\text{layers}} \times n_{\text{kv\_heads}} \times d_{\text{head}} \times n \times 4\ "
            + latex_words(_("bytes")))
    st.latex(latex_words(_("cache size")) + size)
    st.latex(r"= 2 \times " + str(c.n_layers) + r" \times " + str(c.n_kv_heads) + r" \times " + str(c.d_head)
             + r" \times n \times 4 = " + integer_formula(model.cache_bytes(c, 1))
             + r"\ " + latex_words(_("bytes")) + r" \times n")
    st.caption(_("L = {layers} layers, H = {heads} query heads, d_head = {d_head}, d_model = {d_model}, V_vocab = "
                 "{vocab}; float32 = 4 bytes.").format(layers=c.n_layers, heads=c.n_heads, d_head=c.d_head,
                                                        d_model=c.d_model, vocab=ints(c.vocab_size)))
    k = n - 1
    millions = _("multiply-adds (millions)")
    m1, m2, m3, m4 = st.columns(4)
    m1.metric(_("with the cache, this token"), i18n.number(with_cache[k] / 1e6, 1) + " M", help=millions)
    m2.metric(_("without: recompute all {n}").format(n=n), i18n.number(without[k] / 1e6, 1) + " M", help=millions)
    m3.metric(_("the cache saves"), i18n.number(without[k] / with_cache[k], 1) + "×", help=_("without / with"))
    m4.metric(_("cache size now"), i18n.number(gqa[k] / 1e6, 2) + " MB",
              help=_n("{bytes} bytes for {n} token", "{bytes} bytes for {n} tokens", n).format(bytes=ints(gqa[k]), n=n))
    left, right = st.columns(2)
    with left:
        charts.show_fig(kfig.cost_chart(ns, with_cache, without, n, n_prompt,
                                        title=_("multiply-adds for one new token")), key="kv_fig_cost")
    with right:
        charts.show_fig(kfig.cache_size_chart(ns, gqa, mha, n, n_prompt, n_kv_heads=c.n_kv_heads, n_heads=c.n_heads,
                                              title=_("the KV cache's size")), key="kv_fig_cache_size")
    mb = i18n.number
    long = c.context_length
    st.markdown(_(
        "With the cache, a new token costs about the same at every length (the weights dominate: {layers}·W + "
        "logits = {base} M; attention adds {per_token} per cached token); without it the cost grows with n, and the "
        "whole generation with n². What the cache costs is memory: **{per_byte} bytes per token**."
    ).format(layers=c.n_layers, base=mb((c.n_layers * W + c.d_model * c.vocab_size) / 1e6, 1),
             per_token=ints(2 * c.n_layers * c.n_heads * c.d_head), per_byte=ints(model.cache_bytes(c, 1))) + " "
        + model.sharing_claim(c, mb(gqa[k] / 1e6, 2), ints(round(model.cache_bytes(c, long) / 1e6)),
                              mb(mha[k] / 1e6, 2), ints(round(model.cache_bytes(c, long, n_kv_heads=c.n_heads) / 1e6))))
    windowed = model.window_cache_claim(c, ints(round(model.cache_bytes(c, long) / 1e6)),
                                        ints(round(model.window_cache_bytes(c, long) / 1e6)))
    if windowed:
        st.markdown(windowed)
    numbers(pd.DataFrame({_("tokens (n)"): ns, _("multiply-adds with cache"): with_cache,
                          _("multiply-adds without cache"): without, _("without / with"): without / with_cache,
                          _("cache bytes ({n} kv heads)").format(n=c.n_kv_heads): gqa,
                          _("cache bytes ({n} kv heads)").format(n=c.n_heads): mha}),
            label=_("Numbers: cost and cache size"))
