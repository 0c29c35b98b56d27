"""Page: generating with a KV cache, token by token, on SmolLM2-135M-Instruct (issue #17).

Every control is in the link (``kv_prompt``, ``kv_sampling``, ``kv_temperature``, ``kv_top_k``, the sidebar's
``seed``, ``kv_steps``, ``kv_layer``, ``kv_head``, ``kv_query`` = the model's number of the query head compared,
``kv_compare`` = the full recomputation switched on: one more forward pass, run when asked);
the generation is recomputed from the prompt (and cached), deterministic given prompt, sampling settings, seed and
steps, so a shared link reproduces it. An old link's ``kv_seed`` (the page's own seed box, now gone: the sidebar's
seed draws the tokens) is dropped with a warning.
"""

import streamlit as st

from explorer.lessons import sinks
from explorer.lessons.kv_cache import CONTROLS, POSITIONS, draw, model
from explorer.shell import controls, llm, textviews
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

STEPS_KEY = CONTROLS["steps"].key

draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "This lesson generates text one token at a time with the model's real KV cache and shows the cache growing: "
    "the K and V rows each new token appends, its query attending over all of them, the cost with and without "
    "the cache, and sampling (greedy, temperature, top-k, seed)."
))
c = lm.config
draw.intro(c, llm.weight_storage(lm), llm.model_name(lm))

# --- 1 · the prompt and the sampling rule -------------------------------------------------------------------
st.header(_("1 · Generate, one token per step"))
p = llm.prompt_input(CONTROLS["prompt"], model=lm, max_tokens=model.MAX_PROMPT_TOKENS)
ids = p.ids
if p.is_cut:
    st.caption(_("With up to {steps} generated tokens the {prompt} prompt tokens stay within {positions} positions, "
                 "where every heat map keeps readable token labels.").format(
        steps=model.MAX_STEPS, prompt=model.MAX_PROMPT_TOKENS, positions=POSITIONS))

controls.retired_link_key("kv_seed", _("the draws now use the sidebar's shared Seed (now {seed}); set it there.")
                          .format(seed=controls.shared().seed))
c1, c2, c3 = st.columns(3)
with c1:
    method = controls.draw(CONTROLS["sampling"])
greedy = method != "sample"
with c2:
    temperature = float(controls.draw(CONTROLS["temperature"]))
with c3:
    top_k = controls.draw(CONTROLS["top_k"], {"vocab": c.vocab_size})
seed = controls.shared().seed  # the sidebar's Seed: the page has no seed box of its own
controls.not_used(llm.not_used(c, seed=_(
    "the model's weights are trained, not drawn, and greedy decoding draws nothing; choose *sample* on the page and "
    "this seed draws the tokens.") if greedy else None))
if greedy:
    st.caption(_("Greedy decoding ignores temperature, top-k and the sidebar's seed: they take effect when you choose "
                 "*sample*."))
else:
    st.caption(_("The draws are seeded by the sidebar's **Seed**, now {seed}: one {code} per generation, so the same "
                 "seed draws the same tokens. (Here it seeds the draws only: the model's weights are trained, not "
                 "drawn.)").format(seed=seed, code=f"`np.random.default_rng({seed})`"))
sampling = model.Sampling("greedy" if greedy else "sample", float(temperature), int(top_k), int(seed)).canonical()


# --- the steps: a slider (in the link) and buttons that move it one token ------------------------------------
def _move_steps(delta: int | None) -> None:
    """Button callback: one more step (``delta`` 1) or back to the prompt (``None``); the slider and link follow."""
    current = st.session_state.get(STEPS_KEY, model.DEFAULTS["steps"])
    controls.set_value(STEPS_KEY, 0 if delta is None else min(max(int(current) + delta, 0), model.MAX_STEPS))


s1, s2, s3 = st.columns([3, 1.3, 1])
with s1:
    steps = controls.draw(CONTROLS["steps"])
state = draw.decode_state(lm, ids, sampling, steps, draw.decode_state)
with s2:
    st.button(_("▶ Generate the next token"), key="kv_next", on_click=_move_steps, args=(1,), type="primary",
              disabled=state.stopped or steps >= model.MAX_STEPS, width="stretch",
              help=_("Reads the chosen token through the model with the cache (one more K and V row per "
                     "layer) and chooses the next one."))
with s3:
    st.button(_("↺ Back to the prompt"), key="kv_reset", on_click=_move_steps, args=(None,), disabled=steps == 0,
              width="stretch")
if state.steps < steps:
    st.info(_n("Steps is set to {steps}, but generation stopped at the end-of-sequence token after {done} step: the "
               "page shows step {done}.",
               "Steps is set to {steps}, but generation stopped at the end-of-sequence token after {done} steps: the "
               "page shows step {done}.", state.steps).format(steps=steps, done=state.steps), icon="🛑")
run = model.Run(ids, sampling, state.steps)
draw.generation(lm, run)

def _keep_place() -> None:
    """Key/value head changed: compare the query head at the same place in the new group (3 -> 6 for 1 -> 2)."""
    ss, g = st.session_state, c.group_size
    current = ss.get("kv_query")
    if current is not None and "kv_head" in ss:
        controls.set_value("kv_query", int(ss["kv_head"]) * g + int(current) % g)


# --- 2 · the cache of one layer and key/value head -------------------------------------------------------------
st.header(_("2 · The cache of one layer and one key/value head"))
l1, l2, l3 = st.columns([2, 1.5, 1.5])
with l1:
    layer = controls.draw(CONTROLS["layer"], {"n_layers": c.n_layers})
with l2:
    kv_head = int(controls.draw(CONTROLS["kv_head"], {"n_kv_heads": c.n_kv_heads, "group_size": c.group_size,
                                                      "n_heads": c.n_heads}, on_change=_keep_place))
with l3:
    head = int(controls.draw(CONTROLS["query"], {"kv_head": kv_head, "group_size": c.group_size}))
draw.cache_view(lm, run, layer, kv_head, head, controls.color_scale())
recompute = textviews.passes_time(1, llm.pass_seconds(state.seconds, run.n_prompt, run.n))  # the prefill's pass
if controls.draw(CONTROLS["compare"], {"n": run.n, "time": recompute}):
    with st.spinner(_("running the {n}-token sequence through {layers} layers again, without the cache, to compare…")
                    .format(n=run.n, layers=c.n_layers)):
        draw.cache_comparison(lm, run, layer, kv_head, head)

# --- 3 · cost ------------------------------------------------------------------------------------------------
st.header(_("3 · What the cache saves, and what it costs"))
draw.cost(c, run.n_prompt, run.n)
st.caption(_("Why most heads look at the first token, and what a smaller cache costs (MQA, a latent cache, a window "
             "with kept first tokens), measured: [Attention sinks, smaller caches]({link}).").format(
                 link=controls.link(sinks)))
