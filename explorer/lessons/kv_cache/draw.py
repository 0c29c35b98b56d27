"""Sections of the page "Generating with a KV cache", and its two cached computations.

* :func:`decode_state` — the generation itself, one :class:`~explorer.lessons.kv_cache.model.DecodeState` per
  (prompt ids, sampling, steps). It holds the model's live :class:`attention.llama.KVCache`, which is not
  picklable, so it is an ``st.cache_resource`` (shared, never copied; the cache is read-only and safe to share
  between sessions) and *incremental*: the state of step ``s`` extends the cached state of step ``s - 1`` by one
  forward pass of one token (``forward([token], cache=…)``), which is what one more click costs.
* :func:`cache_view_data` — everything :func:`cache_view` draws for one layer and key/value head (the labels, K
  and V from the cache, the new query rows both ways, the largest difference), ``st.cache_data`` per (run, layer,
  key/value head). Its full recomputation is the door's cached forward pass
  (:func:`explorer.shell.real_model.forward`, per sequence): a layer or head change runs the model again never.

The sections take the model as ``_model`` (not hashed) and the page's :class:`~explorer.lessons.kv_cache.model.Run`
(hashed by its fields) plus the widget values they depend on.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import streamlit as st

from attention import llama
from explorer.lessons.kv_cache import charts as kfig
from explorer.lessons.kv_cache import model
from explorer.shell import real_model as rm
from explorer.shell.cache import cached, key_hash_funcs, section
from explorer.shell.tables import numbers
from explorer.shell.textviews import count

DECODE_MAX_ENTRIES = 40
"""States kept: one generation of 32 steps is 33 states sharing one cache buffer (at most 2 x 1.5 MB at 64
tokens, plus the 1.5 MB buffer of the prefill), so 40 entries hold at most a few such chains (~150 MB worst case:
40 distinct prompts each at 64 tokens)."""
DECODE_TTL_S = 1800


def _decode_state(_model: llama.LlamaModel, ids: tuple[int, ...], sampling: model.Sampling,
                  steps: int) -> model.DecodeState:
    """:func:`model.run`, incrementally: the state of ``steps`` is the cached state of ``steps - 1`` plus one decode
    step (or that state itself once it has stopped at the end-of-sequence token)."""
    if steps <= 0:
        return model.prefill(_model, ids, sampling)
    previous = decode_state(_model, ids, sampling, steps - 1)
    if previous.stopped or previous.steps >= model.MAX_STEPS:
        return previous
    return model.decode_step(_model, previous)


decode_state = st.cache_resource(max_entries=DECODE_MAX_ENTRIES, ttl=DECODE_TTL_S, show_spinner=False,
                                 hash_funcs=key_hash_funcs(_decode_state))(_decode_state)


def state_of(_model: llama.LlamaModel, run: model.Run) -> model.DecodeState:
    return decode_state(_model, run.prompt_ids, run.sampling, run.steps)


def _probability(p: float) -> str:
    """A probability a learner can read: 3 decimals, or 3 significant digits below 0.001."""
    return f"{p:.3f}" if p >= 0.001 or p == 0 else f"{p:.2e}"


@section
def title() -> None:
    """The page's title (shown also when the weights are missing)."""
    st.title("Generating with a KV cache")


@section
def intro(config: llama.LlamaConfig, storage: rm.WeightStorage | None) -> None:
    """The idea, the formula (the model's sizes from its config) and the honest note (how the weights file
    stores them: ``storage``, :func:`explorer.shell.real_model.weight_storage`)."""
    st.markdown(
        "A decoder writes one token at a time: to choose token *t + 1* it runs token *t* through every layer, and "
        "in every layer the new token's **query** attends over the **keys** and **values** of all tokens so far. "
        "Those keys and values never change: under the causal mask, token *j*'s key and value depend only on "
        "tokens 0 … *j*. So a decoder keeps them, the **KV cache**, and each new token computes just its own "
        "query, key and value and appends one row to K and one to V (Pope et al. 2022, *Efficiently Scaling "
        f"Transformer Inference*). Here it runs on a real trained model, {rm.MODEL_NAME}: {rm.describe(config)} "
        "(grouped-query attention, Ainslie et al. 2023)."
    )
    st.latex(r"q_t = \mathrm{RoPE}(x_t W_q,\ t),\quad k_t = \mathrm{RoPE}(x_t W_k,\ t),\quad v_t = x_t W_v")
    st.latex(r"K \leftarrow \begin{bmatrix} K \\ k_t \end{bmatrix},\quad V \leftarrow \begin{bmatrix} V \\ v_t "
             r"\end{bmatrix},\quad o_t = \mathrm{softmax}\!\left(\frac{q_t K^\top}{\sqrt{" + str(config.d_head)
             + r"}}\right) V")
    st.caption(
        "Computed by this page, not looked up: every token, probability and number below comes from running the "
        "model here, in NumPy float32. " + storage_note(storage)
    )


TYPE_WORDS = {"Q4_0": "4-bit codes", "Q4_1": "4-bit codes", "Q5_0": "5-bit codes", "Q5_1": "5-bit codes",
              "Q8_0": "8-bit codes", "F16": "float16", "BF16": "bfloat16", "F32": "float32"}
"""How a GGUF tensor type is said in words (a type not listed is said by its name)."""


def _percent(share: float) -> str:
    """``21%``; below 1%: ``0.03%`` (never "0%" for a part that is there)."""
    pct = 100 * share
    return f"{pct:.0f}%" if pct >= 1 else f"{pct:.2f}%"


def _stored(ggml_type: str) -> str:
    words = TYPE_WORDS.get(ggml_type)
    return f"{words} ({ggml_type}" if words else ggml_type + " ("


def storage_note(storage: rm.WeightStorage | None) -> str:
    """How the weights file stores the parameters, from its tensor table (``None``: the file could not be read):

    ``"The weights file stores the token embedding (21% of the parameters; tied: it is also the output matrix
    behind every logit) as 8-bit codes (Q8_0), and the other parameters as 4-bit codes (Q4_1, 79%) and float32
    (F32, 0.03%). …"``
    """
    widened = ("Every weight is widened to float32 when it is used, so the numbers are close to, not identical "
               "with, the full-precision model's.")
    if storage is None:
        return "The weights are read from a quantized file. " + widened
    emb = storage.embedding_type
    emb_share = storage.embedding_params / storage.total
    tied = ("; tied: it is also the output matrix behind every logit" if storage.tied else "")
    rest = dict(storage.params)
    rest[emb] -= storage.embedding_params
    others = [f"{_stored(t)}, {_percent(n / storage.total)})" for t, n in rest.items() if n > 0]
    other_text = (", and the other parameters as " + (", ".join(others[:-1]) + " and " + others[-1]
                                                      if len(others) > 1 else others[0]) if others else "")
    return (f"The weights file stores the token embedding ({_percent(emb_share)} of the parameters{tied}) as "
            f"{_stored(emb)}){other_text}. " + widened)


def _status(choice: model.Choice, read: bool, at_limit: bool) -> str:
    if read:
        return "read back: K, V rows cached"
    if choice.is_eos:
        return "end of sequence: stop (not read back)"
    if at_limit:
        return f"next (not read: the page stops at {model.MAX_STEPS} steps)"
    return "next (read on the next step)"


def pending_marker(pending: bytes) -> str:
    """What the text shows where a character is not finished yet: ``⟨+2 bytes pending⟩`` (``""`` for none)."""
    if not pending:
        return ""
    return f"⟨+{count(len(pending), 'byte')} pending⟩"


def utf8_length(lead: int) -> int:
    """Bytes of the UTF-8 character that begins with the byte ``lead`` (2 for ``0xC2…0xDF``, 3, 4; else 1)."""
    return 4 if lead >= 0xF0 else 3 if lead >= 0xE0 else 2 if lead >= 0xC0 else 1


def pending_note(pending: bytes, *, ended: bool = False, at_limit: bool = False) -> str:
    """Why the text ends in :func:`pending_marker`: the bytes so far of a character, and when it will show."""
    hex_bytes = " ".join(f"{b:02x}" for b in pending)
    total = utf8_length(pending[0])
    first = (f"{pending_marker(pending)}: the tokens read so far end inside a character, with {len(pending)} of its "
             f"{total} UTF-8 bytes (`{hex_bytes}`); ")
    if ended:
        return first + ("the model ended the text here (end of sequence), so that character is never finished. "
                        "The page shows no character the model did not write.")
    if at_limit:
        return first + (f"the page stops at {model.MAX_STEPS} generated tokens, before it is finished. The page "
                        "shows no character the model did not write.")
    return first + ("it shows once the tokens with its other bytes are generated, never as a replacement "
                    "character the model did not write.")


@section
def generation(_model: llama.LlamaModel, run: model.Run) -> None:
    """The text so far, the generated tokens with their probabilities, and why generation stopped (if it did)."""
    state = state_of(_model, run)
    pieces = _model.token_strings(list(state.ids))
    c = _model.config
    st.caption(f"{count(run.n_prompt, 'prompt token')} + {run.steps} generated = {count(run.n, 'token')} in the "
               f"cache · {run.sampling.describe()}")
    text = _model.decode_partial(list(state.ids))  # complete characters + the bytes of one not finished yet
    st.code(text.text + pending_marker(text.pending), language=None, wrap_lines=True)
    st.caption("The prompt and the generated tokens read back so far, as text. The tokens as the model reads "
               "them (␣ = a space, ↵ = a new line):")
    st.text(" | ".join(rm.visible_piece(p) for p in pieces))
    if text.pending:
        st.caption(pending_note(text.pending, ended=state.stopped, at_limit=state.steps >= model.MAX_STEPS))

    at_limit = state.steps >= model.MAX_STEPS
    shown = sorted({i for choice in state.choices for i in (choice.token_id, *choice.top_ids)})
    piece = dict(zip(shown, (rm.visible_piece(p) for p in _model.token_strings(shown)), strict=True))  # one call
    rows = []
    for choice in state.choices:
        alternatives = " · ".join(f"{piece[i]} {_probability(p)}"
                                  for i, p in zip(choice.top_ids, choice.top_probabilities, strict=True))
        row = {"step": choice.step, "position": choice.position, "token": piece[choice.token_id],
               "probability": _probability(choice.probability), "rank": choice.rank}
        if not run.sampling.is_greedy:
            row["chance of being drawn"] = _probability(choice.sampling_probability)
        row["the model's top 5 (probability)"] = alternatives
        row["status"] = _status(choice, choice.step <= state.steps, at_limit)
        rows.append(row)
    st.markdown("**The generated tokens.** *probability*: softmax of the logits (temperature 1), the model's own "
                "belief; *rank*: 1 = the model's most likely token"
                + ("; *chance of being drawn*: its probability after temperature and top-k, what the draw used."
                   if not run.sampling.is_greedy else "; greedy always takes rank 1."))
    st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", height=36 + 35 * len(rows))  # every row
    if state.stopped:
        st.info(f"The model chose `{piece[c.eos_id]}` (id {c.eos_id}), the end-of-sequence token: generation stops "
                "there. "
                "Nothing would follow it, so it is not read back and adds no row to the cache.", icon="🛑")
    elif at_limit:
        st.info(f"This page stops at {model.MAX_STEPS} generated tokens (with a prompt of at most "
                f"{model.MAX_PROMPT_TOKENS}, at most {model.MAX_PROMPT_TOKENS + model.MAX_STEPS} positions: heat maps "
                "keep readable labels).", icon="🛑")


@dataclass(frozen=True)
class CacheView:
    """What :func:`cache_view` draws for one layer and key/value head (:func:`cache_view_data`).

    Attributes:
        labels: one readable label per cached token (``rm.labels``), ``n`` of them.
        keys, values: float32 ``[n, d_head]``: the cache's K (after RoPE) and V of the layer and key/value head.
        heads: the query heads that read this key/value head (the model's own head numbers).
        cached_rows, full_rows: float32 ``[len(heads), n]``: the newest query's attention weights, from the cached
            step and from one full forward pass over the whole sequence (the door's cached one).
        difference_all: ``max |cached - full|`` over every layer and head.
    """

    labels: tuple[str, ...]
    keys: np.ndarray
    values: np.ndarray
    heads: tuple[int, ...]
    cached_rows: np.ndarray
    full_rows: np.ndarray
    difference_all: float


@cached(max_entries=32)
def cache_view_data(_model: llama.LlamaModel, run: model.Run, layer: int, kv_head: int) -> CacheView:
    """Everything :func:`cache_view` draws, in one cached call per (run, layer, key/value head) (about 40 kB at 64
    tokens): the cache itself from :func:`decode_state`, the full recomputation from
    :func:`explorer.shell.real_model.forward` (cached per sequence, so another layer or head runs nothing)."""
    state = state_of(_model, run)
    g = _model.config.group_size
    heads = tuple(range(kv_head * g, (kv_head + 1) * g))
    full = rm.forward(_model, state.ids).attentions[:, :, -1, :]  # [n_layers, n_heads, n]: the full pass's last row
    return CacheView(
        labels=tuple(rm.labels(_model, state.ids)), keys=state.keys(layer, kv_head),
        values=state.values(layer, kv_head), heads=heads,
        cached_rows=np.array(state.new_rows[layer, list(heads)]), full_rows=np.array(full[layer, list(heads)]),
        difference_all=model.max_difference(state.new_rows, full),
    )


def difference_note(diff_head: float, diff_all: float, head: int, layer: int, n_layers: int) -> str:
    """Why the cached step and the full pass agree, and why they differ (only when they do), for the live numbers."""
    exact = ("The cache is an **exact shortcut, not an approximation**: no token's key or value depends on a later "
             "token (causal mask), so the cached keys and values are what a full pass computes again, and the new "
             "row is the same row.")
    if diff_all == 0.0:
        return exact + " Here the two rows agree bit for bit, in every head of every layer."
    rounding = ("float32 additions are rounded and a one-row product (the cached step) sums in another order than "
                "a many-row product (the full pass): rounding of about 1e-7 per operation (float32 keeps 24 bits), "
                f"through {n_layers} layers, ends at the {_difference(diff_all)} measured here")
    if diff_head == 0.0:
        return exact + (f" Head {head} of layer {layer} agrees bit for bit; over all heads the difference is not "
                        f"exactly 0 only because {rounding}.")
    return exact + f" The difference is not exactly 0 only because {rounding}."


@section
def cache_view(_model: llama.LlamaModel, run: model.Run, layer: int, kv_head: int, head: int,
               color_scale: str = "fixed") -> None:
    """One layer and key/value head: K and V as they grow, the new query's weights, cached step vs full recompute.

    ``head`` is the query head compared (the model's own number, one of the key/value head's group).
    """
    view = cache_view_data(_model, run, layer, kv_head)
    c = _model.config
    heads, labels = list(view.heads), list(view.labels)
    if head not in heads:
        raise ValueError(f"query head {head} does not read key/value head {kv_head} (its heads: {heads})")
    place = heads.index(head)
    n, newest = len(labels), labels[-1]
    K, V = view.keys, view.values  # [n, d_head] each, straight from the cache

    what = "the prefill's last prompt token" if run.steps == 0 else f"generated token {run.steps}"
    shared = ", ".join(map(str, heads[:-1])) + f" and {heads[-1]}" if len(heads) > 1 else str(heads[0])
    st.caption(f"Layer {layer} · key/value head {kv_head}, shared by query heads {shared} · "
               f"{count(n, 'cached row')} of d_head = {c.d_head} · the newest row (outlined in red) is "
               f"position {n - 1}, {what}"
               + (f" · rows above the dashed line: the prompt ({count(run.n_prompt, 'token')})" if run.steps else ""))
    left, right = st.columns(2)
    with left:
        st.latex(r"K_{\text{cache}} \in \mathbb{R}^{" + f"{n} \\times {c.d_head}" + r"},\quad "
                 r"k_j = \mathrm{RoPE}(x_j W_k,\ j)")
        st.plotly_chart(kfig.cache_matrix(K, labels, run.n_prompt, title=f"K cache, layer {layer}, kv head {kv_head}",
                                          colorbar_title="k"), key="kv_fig_keys")
    with right:
        st.latex(r"V_{\text{cache}} \in \mathbb{R}^{" + f"{n} \\times {c.d_head}" + r"},\quad v_j = x_j W_v")
        st.plotly_chart(kfig.cache_matrix(V, labels, run.n_prompt, title=f"V cache, layer {layer}, kv head {kv_head}",
                                          colorbar_title="v"), key="kv_fig_values")
    st.caption("Keys are stored after RoPE, already rotated for their own position, so a later token never changes "
               "them: the relative position comes out of q · k. Coordinates in the file's RoPE layout (pairs "
               "(2i, 2i+1) rotate together).")
    dims = [str(j) for j in range(c.d_head)]
    numbers({"K (after RoPE)": pd.DataFrame(K, index=labels, columns=dims),
             "V": pd.DataFrame(V, index=labels, columns=dims)}, label="Numbers: K and V of the cache")

    st.subheader("The new query attends over every cached key")
    st.latex(r"w = \mathrm{softmax}\!\left(\frac{q_t\, K_{\text{cache}}^\top}{\sqrt{" + str(c.d_head)
             + r"}}\right) \in \mathbb{R}^{1 "
             r"\times " + str(n) + r"}\quad\text{for each of the " + str(len(heads)) + r" query heads of the group}")
    st.plotly_chart(kfig.new_query_weights(view.cached_rows, [str(h) for h in heads], labels, run.n_prompt, place,
                                           title=f"new query {newest} over {count(n, 'cached key')}",
                                           color_scale=color_scale),
                    key="kv_fig_new_row")
    st.caption(f"One row per query head that reads key/value head {kv_head}: the {len(heads)} heads share K and V but "
               f"have their own queries, so they weigh the same keys differently. Head {head} (outlined) is compared "
               "below.")

    st.subheader("Cached step vs full recomputation")
    cached_row, full_row = view.cached_rows[place], view.full_rows[place]
    diff_head = model.max_difference(cached_row, full_row)
    if run.steps == 0:
        st.info("Step 0 is the prefill: the prompt went through the model in one pass, exactly as a full "
                "recomputation does, so there is no cached step to compare yet"
                + (" (the difference is exactly 0)" if view.difference_all == 0.0 else "") + ". Generate a token.",
                icon="👉")
    st.plotly_chart(kfig.cached_vs_full(cached_row, full_row, labels,
                                        title=f"query head {head}, layer {layer}: the new row both ways"),
                    key="kv_fig_compare")
    st.markdown(
        f"**max |cached − full|** for head {head} of layer {layer}: `{_difference(diff_head)}` · over all "
        f"{c.n_layers} × {c.n_heads} heads: `{_difference(view.difference_all)}`"
    )
    st.markdown(difference_note(diff_head, view.difference_all, head, layer, c.n_layers))
    numbers(pd.DataFrame({"key": labels, "cached step": cached_row.astype(float), "full recomputation":
                          full_row.astype(float), "|difference|": np.abs(cached_row.astype(float) -
                                                                        full_row.astype(float))}),
            label="Numbers: the new row both ways")


def _difference(x: float) -> str:
    return "0 (bit for bit)" if x == 0.0 else f"{x:.1e}"


@section
def cost(config: llama.LlamaConfig, n_prompt: int, n: int) -> None:
    """Multiply-adds per new token with and without the cache, and the cache's size, as the sequence grows."""
    c = config
    W = model.macs_per_layer_weights(c)
    ns = np.arange(1, n_prompt + model.MAX_STEPS + 1)
    with_cache = np.array([model.macs_with_cache(c, k) for k in ns])
    without = np.array([model.macs_without_cache(c, k) for k in ns])
    gqa = np.array([model.cache_bytes(c, k) for k in ns])
    mha = np.array([model.cache_bytes(c, k, n_kv_heads=c.n_heads) for k in ns])
    st.markdown(
        "Counted: the multiply-adds of the matrix products, for the logits of the next token when the sequence "
        f"has n tokens. One token through one layer's weight matrices costs W = {c.d_model}·({c.n_heads} + 2·"
        f"{c.n_kv_heads})·{c.d_head} (W_q, W_k, W_v) + {c.n_heads * c.d_head}·{c.d_model} (W_o) + 3·{c.d_model}·"
        f"{c.d_ff} (SwiGLU) = {W:,}; one query over n keys costs 2·{c.n_heads}·{c.d_head}·n (q·k, then weights·V); "
        f"the logits {c.d_model}·{c.vocab_size:,}. Without the cache every one of the n tokens goes through every "
        "layer again (query i over its i keys); the logits are needed for the last token only. RMSNorm, RoPE, "
        "softmax and SiLU (a few operations per number) are left out."
    )
    st.latex(r"\text{with the cache: } L\,(W + 2 H d_{\text{head}}\, n) + d_{\text{model}}\, V_{\text{vocab}}")
    st.latex(r"\text{without: } L\,\Big(n W + 2 H d_{\text{head}} \tfrac{n(n+1)}{2}\Big) + d_{\text{model}}\, "
             r"V_{\text{vocab}}")
    st.latex(r"\text{cache size} = 2 \times n_{\text{layers}} \times n_{\text{kv\_heads}} \times d_{\text{head}} "
             r"\times n \times 4\ \text{bytes}")
    st.latex(r"= 2 \times " + str(c.n_layers) + r" \times " + str(c.n_kv_heads) + r" \times " + str(c.d_head)
             + r" \times n \times 4 = " + f"{model.cache_bytes(c, 1):,}".replace(",", "{,}")
             + r"\ \text{bytes} \times n")
    st.caption(f"L = {c.n_layers} layers, H = {c.n_heads} query heads, d_head = {c.d_head}, d_model = {c.d_model}, "
               f"V_vocab = {c.vocab_size:,}; float32 = 4 bytes.")
    k = n - 1
    m1, m2, m3, m4 = st.columns(4)
    m1.metric("with the cache, this token", f"{with_cache[k] / 1e6:,.1f} M", help="multiply-adds (millions)")
    m2.metric(f"without: recompute all {n}", f"{without[k] / 1e6:,.1f} M", help="multiply-adds (millions)")
    m3.metric("the cache saves", f"{without[k] / with_cache[k]:.1f}×", help="without / with")
    m4.metric("cache size now", f"{gqa[k] / 1e6:.2f} MB", help=f"{gqa[k]:,} bytes for {count(n, 'token')}")
    left, right = st.columns(2)
    with left:
        st.plotly_chart(kfig.cost_chart(ns, with_cache, without, n, n_prompt,
                                        title="multiply-adds for one new token"), key="kv_fig_cost")
    with right:
        st.plotly_chart(kfig.cache_size_chart(ns, gqa, mha, n, n_prompt, n_kv_heads=c.n_kv_heads, n_heads=c.n_heads,
                                              title="the KV cache's size"), key="kv_fig_cache_size")
    long = c.context_length
    st.markdown(
        f"With the cache, a new token costs about the same at every length (the weights dominate: "
        f"{c.n_layers}·W + logits = {(c.n_layers * W + c.d_model * c.vocab_size) / 1e6:,.1f} M; attention adds "
        f"{2 * c.n_layers * c.n_heads * c.d_head:,} per cached token); without it the cost grows with n, and the "
        f"whole generation with n². What the cache costs is memory: **{model.cache_bytes(c, 1):,} bytes per token**. "
        f"Grouped-query attention keeps {c.n_kv_heads} key/value heads instead of {c.n_heads}, a "
        f"**{c.n_heads // c.n_kv_heads}× smaller cache**: {gqa[k] / 1e6:.2f} MB instead of {mha[k] / 1e6:.2f} MB now, "
        f"{model.cache_bytes(c, long) / 1e6:,.0f} MB instead of "
        f"{model.cache_bytes(c, long, n_kv_heads=c.n_heads) / 1e6:,.0f} MB at the model's full context of "
        f"{long:,} tokens."
    )
    numbers(pd.DataFrame({"tokens (n)": ns, "multiply-adds with cache": with_cache,
                          "multiply-adds without cache": without, "without / with": without / with_cache,
                          f"cache bytes ({c.n_kv_heads} kv heads)": gqa,
                          f"cache bytes ({c.n_heads} kv heads)": mha}),
            label="Numbers: cost and cache size")
