"""Page: why every head looks at the first token, and what a smaller KV cache costs (issue 29), on the loaded model
(SmolLM2-135M by default; any family the core reads: issue 50).

Every control is in the link: ``sk_prompt`` (the text), ``sk_swap`` / ``sk_first`` (another token first, switched
on; the token), ``sk_shifted`` / ``sk_offset`` (the shift, switched on; the position shift), ``sk_streams`` /
``sk_window`` / ``sk_new`` (the four caches, switched on; the sliding window and the generated tokens), ``sk_measure``
(the sweep over every cache variant: about 20 runs of the model). Only the sink (one forward pass) runs on a first
visit; every other section runs when switched on (issue 47), then is cached per text.
"""

import functools

import streamlit as st

from explorer.lessons import kv_cache
from explorer.lessons.sinks import CONTROLS, draw, model
from explorer.shell import controls, i18n, jobs, llm, textviews
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain


def another_first() -> None:
    """Section 2's choice and what it does (drawn when switched on)."""
    choice = controls.draw(CONTROLS["first"])
    if model.FIRST_CHOICES[choice] is None and p.n <= model.FIRST_QUERY + 1:
        st.info(_("Without its first token your text is too short to measure: type a longer text."), icon="📏")
    elif (several := model.first_token_note(lm, choice)) is not None:
        st.info(several, icon="🧩")
    else:
        with st.spinner(_("Reading the changed text: one more forward pass…")):
            draw.first_token(lm, ids, draw.summary(lm, ids), choice)
        draw.first_token_section(lm, ids, choice)


def streaming(top_window: int) -> None:
    """Section 4's window and steps, the four runs (each computed, and cached, under a spinner) and their comparison
    (drawn when switched on)."""
    left, right = st.columns(2)
    with left:
        window = controls.draw(CONTROLS["window"], {"top": top_window})
    with right:
        n_new = controls.draw(CONTROLS["new"])
    for sinks in (*model.SINK_COUNTS, None):
        with st.spinner(_("Reading your text with full attention, then generating {new}…").format(
                new=textviews.tokens_count(n_new)) if sinks is None else
                _("Reading your text with a window of {w} with {kept}, then generating {new}…").format(
                    w=window, kept=model.kept(sinks), new=textviews.tokens_count(n_new))):
            draw.stream(lm, ids, window, sinks, n_new)
    draw.streaming(lm, ids, window, n_new)


draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "Here you would see how much of every head's attention goes to the first token of your text and why, that the "
    "weight follows whatever token comes first, that shifting every position changes nothing, how a sliding window "
    "does with 0, 1 or 4 kept first tokens, and what MHA, MQA, a latent cache and windows cost in perplexity per "
    "byte of KV cache."
))
c = lm.config
storage = llm.weight_storage(lm)
draw.intro(llm.model_name(lm), None if storage is None else llm.precision_note(storage),
           storage is None or not llm.widened_exactly(storage))
controls.not_used(llm.not_used(c, seed=_(
    "the model's weights are trained, not drawn, and every continuation here is greedy.")))

st.header(_("Your text"))
p = llm.prompt_input(CONTROLS["prompt"], model=lm, max_tokens=model.prompt_limit(c))
ids = p.ids
if (limit := model.limit_note(c)) is not None:
    st.caption(limit)
st.caption(llm.describe(c) + " · " + _n("your text: {n} token", "your text: {n} tokens", p.n).format(n=p.n))
with st.expander(_("The tokens the model reads")):
    st.text(" | ".join(p.labels))

# --- 1 · the sink ---------------------------------------------------------------------------------------------
st.header(_("1 · Why everything looks at the first token"))
if p.n <= model.FIRST_QUERY:
    st.info(_("The sink mass averages the queries from {first} on: it needs at least {need} tokens, your text has "
              "{n}. Type a longer text.").format(first=model.FIRST_QUERY, need=model.FIRST_QUERY + 1, n=p.n),
            icon="📏")
    st.stop()
with st.spinner(_("Reading your text: one forward pass with every attention weight…")):
    pass_s = draw.summary(lm, ids).seconds  # that pass, timed on this server: the unit of the estimates below
draw.the_sink(lm, ids, controls.color_scale())

# --- 2 · another token first ------------------------------------------------------------------------------------
st.header(_("2 · Put another token first"))
st.markdown(_("If the first token were a sink because of *what* it is, another token in its place would not be one. "
              "Put a different token before your text (or drop your first token) and see where the weight goes."))

if jobs.on_demand(CONTROLS["swap"], {"time": textviews.passes_time(1, pass_s)}, (CONTROLS["first"],)):
    another_first()

# --- 3 · every position shifted ---------------------------------------------------------------------------------
st.header(_("3 · Shift every position"))
st.markdown(_("Is the first token special because RoPE gives it position 0? Start the positions at *k* instead: "
              "every query and key is turned by a different angle, the first token is at position *k*.")
            if c.positions == "rope" else
            _("Is the first token special because it is at position 0? Start the positions at *k* instead. This "
              "model has no RoPE: it adds a learned position vector to each token's embedding, so here the shift "
              "changes what every token reads in."))
if jobs.on_demand(CONTROLS["shifted"], {"time": textviews.passes_time(2, pass_s)}, (CONTROLS["offset"],)):
    offset = controls.draw(CONTROLS["offset"], {"n": p.n, "context": c.context_length})
    with st.spinner(_("Running your text twice: from position 0 and from position {k}…").format(
            k=i18n.integer(offset))):
        draw.shift(lm, ids, offset)
    draw.shift_section(lm, ids, offset)

# --- 4 · streaming ----------------------------------------------------------------------------------------------
st.header(_("4 · Streaming: a window and a few first tokens"))
st.markdown(_("A model that reads an endless stream cannot keep every key and value: a **sliding window** keeps the "
              "last *w* tokens. But then the first token leaves the cache, and with it the sink. StreamingLLM (Xiao "
              "et al. 2023) keeps the first few tokens as well. Compare on your text, side by side:"))
top_window = model.window_max(p.n)
if top_window < 1:
    st.info(_("A window needs positions after it to score: at least {need} tokens; your text has {n}. Type a longer "
              "text.").format(need=model.MIN_SCORED + 2, n=p.n), icon="📏")
else:
    n_new = controls.value(CONTROLS["new"])  # the estimate counts its steps (the slider is drawn below the switch)
    passes = model.stream_passes(c, n_new)
    if jobs.on_demand(CONTROLS["streams"], {"passes": passes, "time": textviews.passes_time(passes, pass_s)},
                      (CONTROLS["window"], CONTROLS["new"])):
        streaming(top_window)
    st.caption(_("The KV cache itself, one token at a time: [Generating with a KV cache]({link}).").format(
        link=controls.link(kv_cache)))

# --- 5 · smaller caches -----------------------------------------------------------------------------------------
st.header(_("5 · Smaller caches: what each one costs"))
st.markdown(_("The model keeps {bytes} bytes of keys and values per token. Every way to keep fewer is measured here "
              "on your text: bytes per token against perplexity, how far the next-token distributions move (KL) and "
              "how often the top token stays the same.").format(bytes=i18n.integer(c.kv_bytes_per_token)))
st.caption((_("**MHA** (multi-head attention) gives each query head its own key/value head, **GQA** (grouped-query, "
              "this model) lets a group of query heads share one, **MQA** (multi-query) keeps one for all.")
             if c.n_kv_heads < c.n_heads else
             _("**MHA** (multi-head attention, this model) gives each query head its own key/value head, **GQA** "
               "(grouped-query) lets a group of query heads share one, **MQA** (multi-query) keeps one for all."))
           + " " + _("**KL** divergence, Σₜ p(t) ln(p(t) / q(t)) in nats, measures how far a variant's next-token "
                     "distribution q moves from the model's p: 0 when they are the same."))
draw.cache_formulas(c, p.n)
variants = model.cache_variants(c, p.n)
measure = controls.draw(CONTROLS["measure"], {"variants": len(variants),
                                              "time": textviews.passes_time(len(variants), pass_s)})
if measure:  # each variant measured once (cached), one at a time under a progress bar
    rows = jobs.each(functools.partial(draw.measured, lm, ids, score_from=model.sweep_score_from(variants),
                                       _reference=draw.reference), variants,
                     functools.partial(model.sweep_step, c, len(variants)), _("Measuring the smaller caches…"))
    draw.smaller_caches(lm, ids, rows)
else:
    draw.cache_bytes(c, p.n)
    st.info(_("These bytes come from the formulas. Turn on *Measure* to see what each variant costs on your text: "
              "perplexity, KL to the model's next-token distributions and top-1 agreement ({n} runs of the model, "
              "shown with a progress bar).").format(n=len(variants)), icon="📐")
