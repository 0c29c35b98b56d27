"""Page: inside a real model — SmolLM2-135M's prediction, every head at a glance, one head up close, guess a head."""

import streamlit as st

from explorer.lessons.real_model import draw, model
from explorer.shell import controls
from explorer.shell import real_model as rm

PROMPT, SEED, STAT, LAYER, HEAD, GRID = "rm_prompt", "rm_seed", "rm_stat", "rm_layer", "rm_head", "rm_grid"
REVEALED = "_rm_revealed"
DEFAULT_STAT = "sink"
STATS = list(model.STATISTICS)
ANSWER_OF = {label: key for key, label in model.LABELS.items()}  # what a guess box shows -> the answer key
ss = st.session_state

draw.title()
llm = rm.model_or_explain(
    "Here you would type a prompt and watch the model predict the next token, see every one of its attention heads "
    "at a glance (which look at the first token, the previous token, themselves, or copy an earlier pattern), "
    "follow one head's real numbers step by step, and guess what a few heads do before the numbers are revealed."
)
config = llm.config
controls.not_used(draw.not_used(config))
draw.intro(config)
DEFAULT_LAYER = min(model.DEFAULT_LAYER, config.n_layers - 1)  # layer 16, head 0 of SmolLM2: a previous-token head
DEFAULT_HEAD = min(model.DEFAULT_HEAD, config.n_heads - 1)


def default(key: str, name: str, value) -> dict:
    """``{name: value}`` for the prompt box's and the statistic's first run only: once the key holds a value (the
    widget's, or one a button set), passing a default as well makes Streamlit warn. (The sliders and the seed go
    through :func:`explorer.shell.controls.slider` / ``number_input`` and ``controls.set_value`` instead.)"""
    return {} if key in ss else {name: value}


def set_prompt(text: str, stat: str | None = None) -> None:
    """Button callback: a new prompt (and a statistic to show), set before the widgets are drawn."""
    ss[PROMPT] = text
    if stat is not None:
        ss[STAT] = stat


def make_repeated_prompt() -> None:
    """Button callback: a random word sequence written twice (seeded), and the induction score to look at."""
    set_prompt(model.repeated_prompt(draw.words(llm), int(ss.get(SEED) or 0)), "induction")


def reveal_answers(signature: tuple) -> None:
    """Button callback: show the answers for this prompt and these heads (a new prompt hides them again)."""
    ss[REVEALED] = signature


def open_clicked_head() -> None:
    """Grid callback: the clicked cell's layer and head go to the sliders before they are drawn."""
    state = ss.get(GRID)
    points = state["selection"]["points"] if state else []
    chosen = model.selected_head(points, config.n_layers, config.n_heads)
    if chosen is not None:
        controls.set_value(LAYER, chosen[0])
        controls.set_value(HEAD, chosen[1])


# --- the prompt ----------------------------------------------------------------------------------
st.header("Your prompt")
st.caption("This lesson reads its own prompt: the sidebar's controls (sentence, embeddings, seed, d_model, d_k) "
           "drive the lessons on random weights and do not apply here.")
p = rm.prompt_input(
    key=PROMPT, default=model.DEFAULT_PROMPT, label="Prompt",
    help=f"Any text. The model reads its first {rm.PROMPT_MAX_TOKENS} tokens (a limit of these lessons, so every "
         "map keeps one readable row per token). Press Ctrl+Enter to run.")
text = p.kept_text  # the text read (the last prompt when the box is empty)
c1, c2, c3 = st.columns([1, 2, 1], vertical_alignment="bottom")
with c1:
    seed = controls.number_input("Seed", 0, controls.SEED_MAX, 0, key=SEED,
                                 help="Seeds the repeated random prompt (the same seed gives the same words).")
with c2:
    st.button("🔁 Make a repeated random prompt", key="rm_repeat", on_click=make_repeated_prompt,
              help=f"{model.REPEAT_WORDS} random words from the model's vocabulary, written twice: the second copy "
                   "shows which heads are induction heads (and switches the map to the induction score).")
with c3:
    st.button("↺ Default prompt", key="rm_default", on_click=set_prompt, args=(model.DEFAULT_PROMPT,))

ids = p.ids
draw.tokens(p, config.vocab_size)

# --- the prediction ------------------------------------------------------------------------------
st.header("What the model predicts next")
draw.prediction(llm, ids)
if p.is_cut:
    st.caption(f"This is the token after the {rm.PROMPT_MAX_TOKENS}th, where the prompt was cut.")
top_text = draw.top_text(llm, ids)
full = p.is_cut or p.n >= rm.PROMPT_MAX_TOKENS or len(text) + len(top_text) > rm.PROMPT_MAX_CHARS
st.button("➕ Append the top token and run again", key="rm_append", on_click=set_prompt, args=(text + top_text,),
          disabled=full, help="Greedy decoding by hand: the most likely token is added to the prompt, and the "
                              "whole page runs again on the longer prompt.")
if full:
    st.caption(f"The prompt is at this lesson's {rm.PROMPT_MAX_TOKENS}-token limit: nothing more can be appended.")

# --- every head at a glance ----------------------------------------------------------------------
st.header("Every head at a glance")
st.markdown(f"One cell per head: {config.n_layers} layers (top to bottom) × {config.n_heads} query heads, coloured by "
            "the statistic you choose, computed from the attention weights of your prompt. **Click a cell** (or set "
            "the sliders) to open that head below.")
stats = draw.statistics(llm, ids)
controls.refuse_unusable(STAT, lambda raw: raw in model.STATISTICS)  # "" would select nothing
stat = st.segmented_control("Colour every head by", STATS, key=STAT, bind="query-params", required=True,
                            help="sink: weight on the first token · previous: on the token before · self: on "
                                 "itself · entropy: how spread out (bits) · distance: how far back (tokens) · "
                                 "induction: on the token that followed an earlier occurrence of this token.",
                            **default(STAT, "default", DEFAULT_STAT))
stat = stat if stat in model.STATISTICS else DEFAULT_STAT
controls.check_link(STAT, stat, "one of " + ", ".join(STATS))
grid_col, side = st.columns([3, 2])
with side:
    layer = controls.slider("Layer", 0, config.n_layers - 1, DEFAULT_LAYER, key=LAYER)
    head = controls.slider("Query head", 0, config.n_heads - 1, DEFAULT_HEAD, key=HEAD,
                           help=f"Query head h reads key/value head h // {config.group_size} (grouped-query "
                                "attention).")
    layer, head = int(layer), int(head)
    if stats.defined and stats.get(stat) is not None:
        draw.statistic_definition(stat, stats.n, stats.induction_rows)
with grid_col:
    if not stats.defined:
        st.info(f"The head statistics need at least {model.FIRST_ROW + 1} tokens (they average over the query rows "
                f"from row {model.FIRST_ROW} on); this prompt has {stats.n}. Type a longer prompt.", icon="📏")
    elif stats.get(stat) is None:
        st.info("**The induction score is undefined for this prompt: no token in it occurs twice** (a token "
                "repeated right away, as in “the the”, does not count: the token after its earlier occurrence is "
                "itself). The score measures how much a repeated token attends to the token that followed its "
                "earlier occurrence, so it needs a repeat. Make a prompt that repeats a random word sequence:",
                icon="🔁")
        st.button("🔁 Make a repeated random prompt", key="rm_repeat_here", on_click=make_repeated_prompt)
    else:
        st.plotly_chart(draw.grid_figure(llm, ids, stat, layer, head), key=GRID, on_select=open_clicked_head,
                        selection_mode="points")
        draw.grid_numbers(llm, ids, stat)

# --- one head up close -------------------------------------------------------------------------
st.header(f"One head up close: layer {layer}, head {head}")
left, right = st.columns(2)
with left:
    draw.head_map(llm, ids, layer, head, controls.color_scale())
with right:
    draw.layer_mean_map(llm, ids, layer, controls.color_scale())
draw.head_group(llm, ids, layer, head, controls.color_scale())
st.subheader(f"The six steps of head {head}, on its real numbers")
st.markdown("The same steps as the walkthrough, now with the model's trained weights: normalise, project to "
            "Q, K, V, rotate Q and K by position (RoPE, new here), score, scale and mask, softmax, blend the values.")
draw.rmsnorm_step(llm, ids, layer, head)
draw.head_steps(llm, ids, layer, head, controls.color_scale())

# --- guess, then reveal --------------------------------------------------------------------------
st.header("Guess, then reveal")
heads = model.quiz_heads(stats)
if not heads:
    st.info(f"The exercise needs the head statistics, so a prompt of at least {model.FIRST_ROW + 1} tokens.",
            icon="📏")
else:
    st.markdown(
        "Below are a few heads of the model on your prompt, picked because each one clearly does one thing. "
        "Label each from its map, then check. **How grading decides:** each head gets a score on [0, 1] per label — "
        "*first-token sink* (its weight on token 0), *previous token*, *self*, *induction* (the induction score) "
        "and *broad* (its entropy divided by the largest possible, 1 = uniform) — and its answer is the largest. "
        f"Only heads whose largest score beats the runner-up by at least {model.MIN_MARGIN} are asked.")
    if stats.get("induction") is None:
        st.caption("No induction head is asked: your prompt repeats no token. Make a repeated random prompt (above) "
                   "to add one.")
    guesses = []
    per_row = 2 if len(heads) == 4 else 3  # a map per column stays readable at 1400 px; on a phone they stack
    for start in range(0, len(heads), per_row):
        for col, q in zip(st.columns(per_row), heads[start:start + per_row], strict=False):
            with col:
                draw.quiz_map(llm, ids, q.layer, q.head, controls.color_scale())
                guess = st.selectbox(f"Layer {q.layer}, head {q.head} is…", list(model.LABELS.values()), index=None,
                                     placeholder="your guess", key=f"rm_guess_{q.layer}_{q.head}")
                guesses.append(ANSWER_OF.get(guess))
    signature = (ids, tuple((q.layer, q.head) for q in heads))
    st.button("Check my answers", key="rm_check", on_click=reveal_answers, args=(signature,), type="primary")
    if ss.get(REVEALED) == signature:
        draw.reveal(llm, ids, tuple(guesses))
