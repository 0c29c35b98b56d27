"""Sections of the page "Attention sinks and smaller KV caches", and the cached computations behind them.

Every computation keys on the prompt's token ids (a tuple of ints) and the page's choices; the loaded model is
passed as ``_model`` (not hashed: one per process, :mod:`explorer.shell.real_model`). Entry sizes, measured at the
64-token prompt limit: :func:`summary` 20 kB (270 masses, one head's 64 x 64 map), :func:`first_token`,
:func:`shift` and :func:`stream` under 2 kB, :func:`measured` 0.3 kB each; :func:`reference` (the model's own
logits, ``[64, 49152]`` float32 = 12.6 MB, held once in memory by ``st.cache_resource``, never copied) keeps the 2
most recent prompts. So the lesson's caches stay under about 30 MB besides the model; a variant model (49-119 MB of
its own, :mod:`attention.llama.variants`) lives only while one row of the sweep is measured.

The sweep over every cache variant (:func:`sweep`) is one cached measurement per variant, run in a loop under a
progress bar: a prompt already measured costs nothing, a new one about 10-15 forward passes (``BENCHMARKS.md``).
"""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd
import streamlit as st

from attention import llama
from explorer.lessons.sinks import charts as sfig
from explorer.lessons.sinks import model
from explorer.shell import charts
from explorer.shell import real_model as rm
from explorer.shell.cache import TTL_SECONDS, cached, key_hash_funcs, section
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import count, fmt

NOT_USED = {  # the sidebar's controls this lesson has no use for, and why (explorer.shell.controls.not_used)
    "sentence": "the model reads the prompt typed on this page.",
    "embedding": "the model's own trained token embeddings.",
    "positional": "the model's own positions (RoPE rotates its queries and keys).",
    "seed": "the model's weights are trained, not drawn, and every continuation here is greedy.",
    "d_model": f"the model's own width ({rm.MODEL_NAME}).",
    "d_k": f"the model's own heads ({rm.MODEL_NAME}).",
}
REFERENCE_MAX_ENTRIES = 2
_ONE_VARIANT = threading.Lock()
"""Held while a row of the sweep is measured: at most one converted model (up to 119 MB) alive in the process,
however many sessions measure at once (the others wait for it)."""


# --- cached computations -------------------------------------------------------------------------------------


@cached(max_entries=16)
def summary(_model: llama.LlamaModel, ids: tuple[int, ...]) -> model.SinkSummary:
    """:func:`model.sink_summary`: one forward pass with weights."""
    return model.sink_summary(_model, ids)


@cached(max_entries=16)
def first_token(_model: llama.LlamaModel, ids: tuple[int, ...], choice: str) -> model.FirstToken:
    """:func:`model.first_token_experiment`: one forward pass of the changed text."""
    return model.first_token_experiment(_model, ids, summary(_model, ids), choice)


@cached(max_entries=16)
def shift(_model: llama.LlamaModel, ids: tuple[int, ...], offset: int) -> model.Shift:
    """:func:`model.shift_experiment`: two forward passes."""
    return model.shift_experiment(_model, ids, offset)


@cached(max_entries=32)
def stream(_model: llama.LlamaModel, ids: tuple[int, ...], window: int, sinks: int | None,
           n_new: int) -> model.Streamed:
    """:func:`model.streamed`: a windowed pass, StreamingLLM's numbering, a greedy continuation."""
    return model.streamed(_model, ids, window, sinks, n_new)


def _reference(_model: llama.LlamaModel, ids: tuple[int, ...]) -> np.ndarray:
    logits = model.reference_logits(_model, ids)
    logits.flags.writeable = False  # shared by every session: read-only
    return logits


reference = st.cache_resource(max_entries=REFERENCE_MAX_ENTRIES, ttl=TTL_SECONDS, show_spinner=False)(_reference)


def _measured(_model: llama.LlamaModel, ids: tuple[int, ...], variant: model.CacheVariant,
              score_from: int) -> model.Measured:
    """:func:`model.measure` against the model's own logits (:func:`reference`), one variant at a time in the
    process (:data:`_ONE_VARIANT`)."""
    logits = reference(_model, ids)
    with _ONE_VARIANT:
        return model.measure(_model, ids, variant, logits, score_from)


measured = st.cache_data(max_entries=96, ttl=TTL_SECONDS, show_spinner=False,
                         hash_funcs=key_hash_funcs(_measured))(_measured)


def sweep(_model: llama.LlamaModel, ids: tuple[int, ...]) -> tuple[model.Measured, ...]:
    """Every :func:`model.cache_variants` row measured, one cached measurement at a time under a progress bar that
    names the step (gone when done; instant for a prompt already measured)."""
    todo = model.cache_variants(_model.config, len(ids))
    score_from = model.sweep_score_from(todo)
    bar = st.progress(0.0, text="Measuring the smaller caches…")
    out = []
    for i, variant in enumerate(todo):
        step = ("converting [W_k | W_v] of every layer to a latent cache (the factorisation runs once per server)"
                if variant.family == "latent" else "converting the key/value heads" if variant.kind
                else "running the sliding window" if variant.window else "running the model as trained")
        bar.progress(i / len(todo), text=f"Measuring {i + 1} of {len(todo)}: {variant.label}: {step}…")
        out.append(measured(_model, ids, variant, score_from))
    bar.empty()
    return tuple(out)


def streaming_runs(_model: llama.LlamaModel, ids: tuple[int, ...], window: int, n_new: int) -> None:
    """Compute (and cache) the four streaming runs, each under a spinner naming it."""
    for sinks in (*model.SINK_COUNTS, None):
        what = "full attention" if sinks is None else f"a window of {window} with {count(sinks, 'kept first token')}"
        with st.spinner(f"Reading your text with {what}, then generating {count(n_new, 'token')}…"):
            stream(_model, ids, window, sinks, n_new)


# --- sections -------------------------------------------------------------------------------------------------


@section
def intro() -> None:
    """Title, the two questions, the honest note."""
    st.title("Attention sinks and smaller KV caches")
    st.markdown(
        "Open any attention map of a trained model and most heads look at the **first token**, whatever it is. "
        f"This page measures why, on {rm.MODEL_NAME}'s own weights and your text, and then uses it: a cache "
        "that keeps only the last few tokens needs those first ones. Then it measures the other ways modern "
        "models shrink the KV cache (fewer key/value heads, a latent cache, a window), each as bytes per token "
        "against perplexity."
    )
    st.caption(
        "Computed by this page, not looked up: every number and every sentence that states one comes from running "
        "the model here, in NumPy float32, on the text below. The model's weights are stored 4-bit quantized "
        "(Q4_1) and widened to float32, so the numbers are close to, not identical with, the full-precision model's."
    )


@section
def the_sink(_model: llama.LlamaModel, ids: tuple[int, ...], color_scale: str = "fixed") -> None:
    """Sink mass per layer and per head, the strongest sink head's map, the explanation with its measured facts."""
    c = _model.config
    s = summary(_model, ids)
    n_heads = c.n_layers * c.n_heads
    per_layer = s.per_layer
    mean = float(s.mass.mean())
    st.markdown(
        "Each row of an attention map is a softmax: the weights of one query over the keys it may see are positive "
        "and **sum to 1**. A head that has nothing to fetch for some query cannot give zero to every key; the "
        "weight has to go somewhere. A trained model learns a place for it: the first token, which every later "
        "query can see (the causal mask lets each token see the first), and whose value it keeps small, so weight "
        "parked there changes the output little: a **no-op key**. Xiao et al. (2023) named it the *attention sink*; "
        "Gu et al. (2024) trace it to the softmax's sum to one (without the normalisation it does not form) and "
        "find the sink's values small."
    )
    st.latex(r"w_{ij} = \frac{e^{s_{ij}}}{\sum_{k \le i} e^{s_{ik}}}")
    st.latex(r"\sum_{j \le i} w_{ij} = 1")
    st.latex(r"\text{sink mass} = \frac{1}{n-2}\sum_{i=2}^{n-1} w_{i0}")
    st.caption(f"Sink mass: a head's weight on the first token, averaged over the queries 2 … {s.n - 1} (query 0 sees "
               "only itself; for query 1 the first token is also the previous one). A head spreading every row "
               f"evenly would give {fmt(s.uniform, 3)}.")
    first_big = next((layer for layer, v in enumerate(per_layer) if v > model.HALF), None)
    st.markdown(
        f"**On your text** ({count(s.n, 'token')}), the first token takes **{mean:.0%}** of the attention on "
        f"average over all {n_heads} heads, against {s.uniform:.0%} for heads that spread evenly; "
        f"**{s.n_over_half} of {n_heads} heads** put more than half of their weight on it. Layers 0 and 1 put "
        f"{fmt(per_layer[0], 2)} and {fmt(per_layer[1], 2)} on it (mean of their heads)"
        + (f"; the first layer whose heads average more than half is layer {first_big}." if first_big is not None
           else "; no layer's heads average more than half on your text.")
    )
    heavy = per_layer > model.HALF
    ratio = float(s.value_ratio[heavy].mean() if heavy.any() else s.value_ratio.mean())
    where = "the layers where it takes more than half of the weight" if heavy.any() else "all layers"
    if ratio < 1:
        st.markdown(f"**Its values are small**: in {where}, the first token's value vectors are {ratio:.2f}× the "
                    "median length of the other tokens' (mean over the key/value heads). Weight on it adds little "
                    "to a query's output: it is the no-op.")
    else:
        st.markdown(f"**On your text its values are not smaller than the others'**: in {where} the first token's "
                    f"value vectors are {ratio:.2f}× the median length of the other tokens'. Here the sink is not a "
                    "no-op by the size of its values.")
    left, right = st.columns([3, 2])
    with left:
        st.plotly_chart(sfig.sink_layers(per_layer, s.mass.max(axis=1), s.uniform, title="weight on the first token, "
                                         "per layer"), key="sk_fig_layers")
    with right:
        st.plotly_chart(sfig.sink_grid(s.mass, title="every head's sink mass"), key="sk_fig_grid")
    labels = rm.labels(_model, list(ids))
    st.plotly_chart(charts.heatmap(s.top_map, labels, labels,
                                   title=f"strongest sink: layer {s.top_layer}, head {s.top_head}",
                                   mask=np.tri(s.n, dtype=bool), color_scale=color_scale),
                    key="sk_fig_top_head")
    st.caption(f"The strongest sink head of your text: layer {s.top_layer}, head {s.top_head}, sink mass "
               f"{fmt(float(s.mass[s.top_layer, s.top_head]), 3)}. Rows are queries, columns keys: the first column "
               "is the first token.")
    numbers({"Sink mass of every head": pd.DataFrame(s.mass, index=[f"layer {i}" for i in range(c.n_layers)],
                                                    columns=[f"head {h}" for h in range(c.n_heads)]),
             "Per layer": pd.DataFrame({"layer": range(c.n_layers), "mean sink mass": per_layer,
                                        "strongest head": s.mass.max(axis=1),
                                        "first token's value length / median": s.value_ratio})},
            label="Numbers: the sink")


@section
def first_token_section(_model: llama.LlamaModel, ids: tuple[int, ...], choice: str) -> None:
    """Another token first: where the weight on the first position goes."""
    f = first_token(_model, ids, choice)
    old_piece, new_piece = (rm.visible_piece(piece) for piece in _model.token_strings([ids[0], f.ids[0]]))
    old, new = model.md_code(old_piece), model.md_code(new_piece)  # in sentences: shown literally
    a, b, moved = float(f.original.mean()), float(f.changed.mean()), float(f.followed.mean())
    dropped = model.FIRST_CHOICES[choice] is None
    if dropped:
        st.markdown(f"Without your first token {old}, {new} comes first. On your text, position 0 took {a:.0%} of "
                    f"the attention with {old} there; it takes **{b:.0%}** with {new} there. The same {new} got "
                    f"**{moved:.0%}** at position 1 in your text.")
        series = [(f"your text: position 0 ({old_piece})", f.original, sfig.SINK_COLORS[None]),
                  (f"without it: position 0 ({new_piece})", f.changed, sfig.SINK_COLORS[4]),
                  (f"{new_piece} at position 1 in your text", f.followed, sfig.SINK_COLORS[0])]
    else:
        st.markdown(f"With {new} put before your text, position 0 takes **{b:.0%}** of the attention (it took "
                    f"{a:.0%} with your first token {old} there), and {old}, now at position 1, gets **{moved:.0%}**.")
        series = [(f"your text: position 0 ({old_piece})", f.original, sfig.SINK_COLORS[None]),
                  (f"{new_piece} put first: position 0", f.changed, sfig.SINK_COLORS[4]),
                  (f"{old_piece}, now at position 1", f.followed, sfig.SINK_COLORS[0])]
    if f.follows_position:
        st.success("Measured on your text: the sink follows the first position, not the word. Whatever token comes "
                   "first takes the weight; the token that was there loses it when it moves.", icon="📍")
    else:
        st.warning("On your text the sink does not simply follow the first position: position 0 keeps less than half "
                   "of its weight with another token there, or the token that moved keeps half of it or more.",
                   icon="🔎")
    st.plotly_chart(sfig.first_token_layers(series, title="mean weight per layer"), key="sk_fig_first")
    st.caption(f"Means over every layer's {_model.config.n_heads} heads and the queries from 2 on. A head spreading "
               f"evenly would give {fmt(f.uniform_changed, 3)} to a position of the changed text.")
    numbers(pd.DataFrame({"layer": range(len(f.original)), **{name: values for name, values, _ in series}}),
            label="Numbers: where the weight goes")


@section
def shift_section(_model: llama.LlamaModel, ids: tuple[int, ...], offset: int) -> None:
    """Every position shifted by ``offset``: the logits and the sink do not move."""
    sh = shift(_model, ids, offset)
    st.latex(r"\langle R_{i+k}\, q,\ R_{j+k}\, k \rangle = \langle q,\ R_{j-i}\, k \rangle")
    m1, m2, m3 = st.columns(3)
    m1.metric("max |Δ logit|", f"{sh.max_logit_diff:.1e}", help=f"over every position and token; the logits reach "
              f"{sh.largest_logit:.1f} in absolute value")
    m2.metric("max |Δ attention weight|", f"{sh.max_weight_diff:.1e}", help="over every layer, head, query and key")
    m3.metric("max |Δ sink mass| of a layer", f"{float(np.abs(sh.mass_shifted - sh.mass_original).max()):.1e}")
    rounding = sh.max_logit_diff <= 1e-4 * max(sh.largest_logit, 1.0)
    if offset == 0:
        st.info("A shift of 0 is the usual pass: move the slider to shift every position.", icon="👉")
    elif rounding:
        st.markdown(f"Measured: shifting every position by {offset:,} changes no logit by more than "
                    f"**{sh.max_logit_diff:.1e}** (the logits reach {sh.largest_logit:.1f}) and no attention weight "
                    f"by more than {sh.max_weight_diff:.1e}: float32 rounding, nothing else. RoPE turns each query and "
                    "key by an angle proportional to its position, and a dot product of two turned vectors depends "
                    "only on the difference of the angles (Su et al. 2021). So the first token is not special for "
                    f"being at RoPE position 0: at position {offset:,} it is the same sink.")
    else:
        st.markdown(f"Measured: shifting every position by {offset:,} changes the logits by up to "
                    f"**{sh.max_logit_diff:.1e}** (they reach {sh.largest_logit:.1f}): more than float32 rounding at "
                    "this shift, from the rounding of large rotation angles.")
    if not sh.same_next:
        st.caption("The most likely next token changes with the shift: two candidates are within rounding.")


@section
def streaming(_model: llama.LlamaModel, ids: tuple[int, ...], window: int, n_new: int) -> None:
    """The window with 0, 1 and 4 kept first tokens and full attention: perplexity, losses, generated text."""
    runs = {sinks: stream(_model, ids, window, sinks, n_new) for sinks in (*model.SINK_COUNTS, None)}
    n = len(ids)
    labels = rm.labels(_model, list(ids))
    full, none, four = runs[None], runs[0], runs[model.SINK_COUNTS[-1]]
    scored = n - 1 - window
    st.latex(r"\text{query } i \text{ sees key } j \iff j \le i \ \text{ and}")
    st.latex(r"i - j < w \ \text{ or } \ j < k")
    st.plotly_chart(sfig.window_mask(model.allowed_keys(n, window, model.SINK_COUNTS[-1]), labels,
                                     title="which keys each query sees"), key="sk_fig_mask")
    st.caption(f"A window of {window} with {count(model.SINK_COUNTS[-1], 'kept first token')}. Blue: the window "
               "(the query and the ones just before it). Orange: the kept first tokens. Grey: keys the window dropped "
               "(a cache that keeps only the window and the first tokens has forgotten them). Blank: the future.")
    k = model.SINK_COUNTS[-1]
    if four.perplexity < none.perplexity:
        st.markdown(f"**Measured on your text**: with a window of {window}, keeping the first {k} tokens brings the "
                    f"perplexity from **{none.perplexity:,.1f}** (no kept token) to **{four.perplexity:,.1f}**; full "
                    f"attention: {full.perplexity:,.1f}. Keeping just one: {runs[1].perplexity:,.1f}. All on the same "
                    f"{count(scored, 'position')} ({window} … {n - 2}), the ones after the window.")
    else:
        st.markdown(f"**Measured on your text**: with a window of {window}, keeping the first {k} tokens does not help "
                    f"here: perplexity {four.perplexity:,.1f} against {none.perplexity:,.1f} without them (full "
                    f"attention: {full.perplexity:,.1f}; one kept token: {runs[1].perplexity:,.1f}), on the "
                    f"{count(scored, 'position')} after the window.")
    st.caption("Perplexity = exp(mean next-token loss in nats) over the positions after the window; 1 would mean "
               "every next token predicted with certainty.")
    columns = st.columns(4)
    for col, sinks in zip(columns, (*model.SINK_COUNTS, None), strict=True):
        r = runs[sinks]
        title = "full attention" if sinks is None else f"window {window}, {count(sinks, 'kept first token')}"
        with col:
            st.metric(title, f"{r.perplexity:,.1f}", help="perplexity over the positions after the window")
            st.caption(f"continues your text with {count(len(r.generated), 'token')} (greedy):")
            part = _model.decode_partial(list(r.generated))  # an unfinished character stays pending, never �
            st.code(part.text, language=None, wrap_lines=True)
            if part.pending:
                st.caption(f"… and the first bytes of a character not finished yet: "
                           f"{model.md_code(part.pending_escaped)}")
    series = [(("full attention" if s is None else f"{count(s, 'kept first token')}"), runs[s].losses,
               sfig.SINK_COLORS[s]) for s in (*model.SINK_COUNTS, None)]
    st.plotly_chart(sfig.losses_along(series, window, labels, title="next-token loss along your text"),
                    key="sk_fig_losses")
    st.caption(f"Before position {window} (dotted line) the window hides nothing: every line is the same there.")
    st.markdown(
        "**Which positions?** This page keeps every token's own position: the query at position *i* and a kept first "
        "token at position *j* are *i − j* apart, as in the full model (`forward(ids, window=w, sinks=k)`; the "
        "continuations above are generated that way, from the model's cache). StreamingLLM (Xiao et al. 2023, §3.2) "
        "numbers positions *inside its cache* instead: the kept tokens 0 … k−1, then the window, so the query sits "
        "at k + w − 1 and the kept tokens look close. A window key is equally far in both; only the kept tokens' "
        "scores differ. Both perplexities, measured:"
    )
    rows = [{"kept first tokens": sinks, "positions kept (this page)": runs[sinks].perplexity,
             "StreamingLLM's numbering": runs[sinks].renumbered}
            for sinks in model.SINK_COUNTS if sinks]
    dataframe(pd.DataFrame(rows), digits=2, hide_index=True, width="stretch")
    if four.renumbered is not None:
        change = four.renumbered / four.perplexity - 1
        both = max(four.renumbered, four.perplexity) < none.perplexity
        st.markdown(f"With {count(k, 'kept first token')}, StreamingLLM's numbering gives perplexity "
                    f"{four.renumbered:,.1f} against {four.perplexity:,.1f} with the positions kept ({change:+.0%}) "
                    + (f"on your text: both are below the {none.perplexity:,.1f} of the window without them, so the "
                       "kept tokens work as the sink either way. This page shows the positions kept." if both else
                       "on your text, and one of them is not better than the window without kept tokens. This page "
                       "shows the positions kept."))
    numbers(pd.DataFrame({"query position": range(n - 1), "token": labels[:-1], "next token": labels[1:],
                          **{name: losses for name, losses, _ in series}}),
            label="Numbers: the loss at every position (nats)")


@section
def cache_formulas(config: llama.LlamaConfig, n: int) -> None:
    """What each conversion does (formulas), and that none is fine-tuned."""
    c = config
    st.markdown(
        "**Conversions before any fine-tuning.** Each row below changes the trained weights (or the mask) and runs "
        "them as they are. The papers that propose these conversions train afterwards: grouped-query attention's "
        "mean pooling is followed by *uptraining* on 5 % of the pre-training compute (Ainslie et al. 2023); the "
        "published conversions to a latent cache (MHA2MLA, Ji et al. 2025; TransMLA, Meng et al. 2025) fine-tune "
        "after their factorisation. Here you see what the first step alone costs."
    )
    width = 2 * c.n_kv_heads * c.d_head
    st.markdown(f"**MQA** keeps one key/value head, the mean of the {c.n_kv_heads} (per layer, for keys and values):")
    st.latex(r"W_k' = \tfrac{1}{" + str(c.n_kv_heads) + r"}\textstyle\sum_g W_k^{(g)},\quad W_v' = \tfrac{1}{"
             + str(c.n_kv_heads) + r"}\sum_g W_v^{(g)}")
    st.markdown("**Latent** keeps r numbers per token and layer, the best rank-r factorisation of keys and values "
                "together (V_r: the top r right singular vectors of [W_k | W_v]):")
    st.latex(r"[K \,|\, V] = X\,[W_k \,|\, W_v] \approx (X A)\, B")
    st.latex(r"A = [W_k \,|\, W_v]\, V_r \in \mathbb{R}^{" + str(c.d_model) + r" \times r}")
    st.latex(r"B = V_r^\top \in \mathbb{R}^{r \times " + str(width) + "}")
    st.markdown("**Bytes per token** (float32), keys and values, or the latent:")
    st.latex(r"4 \cdot n_{\text{layers}} \cdot 2\, n_{\text{kv}}\, d_{\text{head}}\quad \text{or}\quad "
             r"4 \cdot n_{\text{layers}} \cdot r")
    st.latex(r"4 \cdot " + str(c.n_layers) + r" \cdot 2 \cdot " + str(c.n_kv_heads) + r" \cdot " + str(c.d_head)
             + " = " + f"{c.kv_bytes_per_token:,}".replace(",", "{,}") + r"\ \text{(the model)}")
    st.caption(f"The latent cache keeps c = x A ({c.d_model} → r floats per layer) and rebuilds every key and value "
               "from it, then rotates the keys by their positions (RoPE is applied after the rebuild, unlike "
               "MHA2MLA, which keeps a few rotary dimensions outside the latent, and DeepSeek-V2, which adds a "
               "separate rotary key). A window keeps every float of a token for at most w + 4 tokens: its bytes per "
               f"token are those of the cache at your text's last token divided by its {n} tokens.")


@section
def cache_bytes(config: llama.LlamaConfig, n: int) -> None:
    """Every variant's bytes per token of a text of ``n`` tokens, from the formulas alone (no model runs here)."""
    c = config
    rows = []
    for v in model.cache_variants(c, n):
        floats, per_token = model.variant_bytes(c, v, n)
        rows.append({"variant": v.label, "floats per token per layer": floats,
                     "KV cache bytes per token": round(per_token)})
    dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=36 + 35 * len(rows))


@section
def smaller_caches(_model: llama.LlamaModel, ids: tuple[int, ...], rows: tuple[model.Measured, ...]) -> None:
    """The measured table and the chart of every cache variant, and what they say."""
    c = _model.config
    n = len(ids)
    by_key = {r.variant.key: r for r in rows}
    gqa = by_key["gqa"]
    score_from = model.sweep_score_from(tuple(r.variant for r in rows))
    table = pd.DataFrame([{
        "variant": r.variant.label,
        "floats per token per layer": r.floats_per_layer,
        "KV cache bytes per token": round(r.bytes_per_token),
        "perplexity": r.perplexity,
        "KL to the model (nats)": r.kl,
        "top-1 agreement": r.top1,
    } for r in rows])
    dataframe(table, digits=3, hide_index=True, width="stretch", height=36 + 35 * len(rows))
    st.caption(f"Every row scored on the same {count(n - 1 - score_from, 'position')} ({score_from} … {n - 2}"
               + (", after the largest window" if score_from else "") + "). KL: how far each next-token distribution "
               "is from the model's, mean over those positions; top-1 agreement: how often both put the same token "
               "first.")
    st.plotly_chart(sfig.cache_tradeoff([(r.variant.label, r.variant.family, r.bytes_per_token, r.perplexity)
                                         for r in rows], reference=gqa.perplexity,
                                        title="what a smaller cache costs, on your text"), key="sk_fig_tradeoff")
    sentences = []
    mha = by_key.get("mha")
    if mha is not None:
        same = mha.max_logit_diff == 0.0
        sentences.append(
            f"MHA gives each of the {c.n_heads} query heads its own copy of the key/value head it shared: "
            + ("**the same numbers** (max |Δ logit| = 0, bit for bit)" if same else
               f"the same numbers up to rounding (max |Δ logit| = {mha.max_logit_diff:.1e})")
            + f", and {mha.bytes_per_token / gqa.bytes_per_token:.0f}× the cache: the model's grouped-query "
              f"attention was trained with {c.n_kv_heads} key/value heads, so sharing them costs it nothing.")
    mqa = by_key.get("mqa")
    twin = next((r for r in rows if r.variant.family == "latent" and mqa is not None
                 and r.floats_per_layer == mqa.floats_per_layer), None)
    if mqa is not None and twin is not None:
        if twin.perplexity < mqa.perplexity:
            sentences.append(
                f"At the same {twin.floats_per_layer} floats per token per layer, MQA (one key and one value head) "
                f"reaches perplexity **{mqa.perplexity:,.0f}** and the latent cache of rank {twin.floats_per_layer} "
                f"**{twin.perplexity:,.0f}** ({mqa.perplexity / twin.perplexity:.1f}× lower; the model: "
                f"{gqa.perplexity:,.1f}): the best rank-{twin.floats_per_layer} summary of all three heads keeps more "
                "than their average.")
        else:
            sentences.append(
                f"At the same {twin.floats_per_layer} floats per token per layer, on your text MQA reaches perplexity "
                f"{mqa.perplexity:,.0f} and the latent cache {twin.perplexity:,.0f}: the latent cache is not better "
                "here.")
    full = next((r for r in rows if r.variant.kind == ("latent", 2 * c.n_kv_heads * c.d_head)), None)
    if full is not None:
        sentences.append(
            f"At rank {full.floats_per_layer} the latent cache has the model's own size and is the model again: max "
            f"|Δ logit| {full.max_logit_diff:.1e}, perplexity {full.perplexity:,.2f}.")
    windows = [r for r in rows if r.variant.family == "window"]
    if windows:
        best = min(windows, key=lambda r: r.perplexity)
        sentences.append(
            f"A window stops the cache growing: {best.variant.label} costs {round(best.bytes_per_token):,} bytes per "
            f"token of your text (and less on a longer one) at perplexity {best.perplexity:,.1f}.")
    for sentence in sentences:
        st.markdown(f"- {sentence}")
    numbers(table.assign(**{"cache bytes at the last token": [r.cache_bytes for r in rows],
                            "max |Δ logit|": [r.max_logit_diff for r in rows]}),
            label="Numbers: every variant")
