"""Page: generating with a KV cache, token by token, on SmolLM2-135M-Instruct (issue #17).

Every control is in the link (``kv_prompt``, ``kv_sampling``, ``kv_temperature``, ``kv_top_k``, the sidebar's
``seed``, ``kv_steps``, ``kv_layer``, ``kv_head``, ``kv_query`` = the model's number of the query head compared);
the generation is recomputed from the prompt (and cached), deterministic given prompt, sampling settings, seed and
steps, so a shared link reproduces it. An old link's ``kv_seed`` (the page's own seed box, now gone: the sidebar's
seed draws the tokens) is dropped with a warning.
"""

import streamlit as st

from explorer.lessons.kv_cache import draw, model
from explorer.lessons.sinks.model import link as sinks_link
from explorer.shell import controls, i18n, llm
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

STEPS_KEY = "kv_steps"
POSITIONS = model.MAX_PROMPT_TOKENS + model.MAX_STEPS  # the longest sequence the page shows

draw.title()
lm = llm.model_or_explain(_(
    "This lesson generates text one token at a time with the model's real KV cache and shows the cache growing: "
    "the K and V rows each new token appends, its query attending over all of them, the cost with and without "
    "the cache, and sampling (greedy, temperature, top-k, seed)."
))
c = lm.config
draw.intro(c, llm.weight_storage(lm))

# --- 1 · the prompt and the sampling rule -------------------------------------------------------------------
st.header(_("1 · Generate, one token per step"))
p = llm.prompt_input(
    key="kv_prompt", default=model.DEFAULT_PROMPT, label=_("Prompt"), max_tokens=model.MAX_PROMPT_TOKENS,
    height=80,
    help=_("Read by the model's own tokenizer (byte-level BPE). The first {prompt} tokens are used: with up to {steps} "
           "generated tokens that is at most {positions} positions, where every heat map keeps one readable row per "
           "token. Special tokens written out, such as `<|im_start|>` and `<|im_end|>`, become their single token. "
           "Press Ctrl+Enter (⌘+Enter) to apply.").format(prompt=model.MAX_PROMPT_TOKENS, steps=model.MAX_STEPS,
                                                           positions=POSITIONS),
)
ids = p.ids
if p.is_cut:
    st.caption(_("With up to {steps} generated tokens the {prompt} prompt tokens stay within {positions} positions, "
                 "where every heat map keeps readable token labels.").format(
        steps=model.MAX_STEPS, prompt=model.MAX_PROMPT_TOKENS, positions=POSITIONS))

controls.retired_link_key("kv_seed", _("the draws now use the sidebar's shared Seed (now {seed}); set it there.")
                          .format(seed=controls.shared().seed))
c1, c2, c3 = st.columns(3)
with c1:
    method = controls.option_control(  # the link holds the code (greedy, sample) in every language
        "radio", _("Choose the next token by"), {code: _(model.METHOD_LABELS[code]) for code in model.METHODS},
        key="kv_sampling", default=model.DEFAULTS["method"], horizontal=True,
        captions=[_("the most likely token"), _("a random draw")],
        help=_("greedy: always the token with the largest logit. sample: draw from softmax(logits / T), among the "
               "top-k tokens; the sidebar's seed makes the draws repeatable."))
greedy = method != "sample"
with c2:
    # The link holds 2.0 and 0.8 in every language (as links have always spelled it); the slider shows 0,8 in pt/tr.
    temperature = float(controls.option_control(
        "select_slider", _("Temperature T"), {str(t): i18n.number(t, 1) for t in model.TEMPERATURES},
        key="kv_temperature", default=str(model.DEFAULTS["temperature"]),
        help=_("Sampling draws from softmax(logits / T): below 1 sharper (closer to greedy), above 1 flatter.")))
with c3:
    top_k = controls.number_input(_("Top-k (0 = no cut)"), 0, c.vocab_size, model.DEFAULTS["top_k"], key="kv_top_k",
                                  help=_("Draw only among the k most likely tokens; 0 keeps the whole vocabulary "
                                         "({vocab} tokens).").format(vocab=i18n.integer(c.vocab_size)))
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
    steps = controls.slider(_("Generated tokens read back with the cache (steps)"), 0, model.MAX_STEPS,
                            model.DEFAULTS["steps"], key=STEPS_KEY,
                            help=_("0: the prompt has been read (the prefill) and the first token chosen. Each step "
                                   "reads the chosen token through the model with the cache and chooses the next "
                                   "one."))
state = draw.decode_state(lm, ids, sampling, steps)
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

def _one_of(values) -> str:
    """``"0, 1 or 2"``: what a link may give a control with these values (in the run's language)."""
    values = [str(v) for v in values]
    return values[0] if len(values) == 1 else _("{first} or {last}").format(first=", ".join(values[:-1]),
                                                                            last=values[-1])


def _keep_place() -> None:
    """Key/value head changed: compare the query head at the same place in the new group (3 -> 6 for 1 -> 2)."""
    ss, g = st.session_state, c.group_size
    current = ss.get("kv_query")
    if current is not None and "kv_head" in ss:
        ss["kv_query"] = int(ss["kv_head"]) * g + int(current) % g


# --- 2 · the cache of one layer and key/value head -------------------------------------------------------------
st.header(_("2 · The cache of one layer and one key/value head"))
l1, l2, l3 = st.columns([2, 1.5, 1.5])
with l1:
    layer = controls.slider(_("Layer"), 0, c.n_layers - 1, min(model.DEFAULTS["layer"], c.n_layers - 1), key="kv_layer",
                            help=_("Every one of the {n} layers has its own cache.").format(n=c.n_layers))
with l2:
    kv_head = st.radio(_("Key/value head"), list(range(c.n_kv_heads)), key="kv_head", bind="query-params",
                       horizontal=True, on_change=_keep_place,
                       captions=[_("query heads {first}–{last}").format(first=g * c.group_size,
                                                                         last=(g + 1) * c.group_size - 1)
                                 for g in range(c.n_kv_heads)],
                       help=_("Grouped-query attention: {heads} query heads share {kv} key/value heads; query head h "
                              "reads key/value head h // {g}.").format(heads=c.n_heads, kv=c.n_kv_heads,
                                                                       g=c.group_size))
    controls.check_link("kv_head", kv_head, _one_of(range(c.n_kv_heads)))
with l3:
    kv_head = int(kv_head)
    group = [kv_head * c.group_size + j for j in range(c.group_size)]
    head = st.radio(_("Query head compared below"), group, key="kv_query", bind="query-params", horizontal=True,
                    help=_("The query heads that read key/value head {kv}, by the model's own numbers. Switching "
                           "the key/value head keeps the head's place in its group.").format(kv=kv_head))
    controls.check_link("kv_query", head, _("{values} (a query head of key/value head {kv})").format(
        values=_one_of(group), kv=kv_head))
    head = int(head)
draw.cache_view(lm, run, layer, kv_head, head, controls.color_scale())
with st.spinner(_("running the {n}-token sequence through {layers} layers again, without the cache, to compare…")
                .format(n=run.n, layers=c.n_layers)):
    draw.cache_comparison(lm, run, layer, kv_head, head)

# --- 3 · cost ------------------------------------------------------------------------------------------------
st.header(_("3 · What the cache saves, and what it costs"))
draw.cost(c, run.n_prompt, run.n)
st.caption(_("Why most heads look at the first token, and what a smaller cache costs (MQA, a latent cache, a window "
             "with kept first tokens), measured: [Attention sinks, smaller caches]({link}).").format(link=sinks_link()))
