"""Page: inside a real model — SmolLM2-135M's prediction, every head at a glance, one head up close, guess a head."""

import streamlit as st

from attention.heads import top_heads
from explorer.lessons.real_model import CONTROLS, compare, draw, model, sizes
from explorer.shell import charts, controls, i18n, llm
from explorer.shell.i18n import translator

_, _n = translator(__file__)

PROMPT, SEED, STAT, LAYER, HEAD = (CONTROLS[name].key for name in ("prompt", "seed", "stat", "layer", "head"))
APPENDED = CONTROLS["then"].key
GRID = "rm_grid"
REVEALED = "_rm_revealed"
ss = st.session_state

draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "Here you would type a prompt and watch the model predict the next token, see every one of its attention heads "
    "at a glance (which look at the first token, the previous token, themselves, or copy an earlier pattern), "
    "follow one head's real numbers step by step, and guess what a few heads do before the numbers are revealed."
))
config = lm.config
controls.not_used(llm.not_used(config, seed=_(
    "the model's weights are trained, not drawn; the page's own seed picks the random words.")))
storage = llm.weight_storage(lm)
draw.intro(config, model.precision(lm), llm.model_name(lm), storage is None or storage.quantized)
SIZES = sizes(config)  # the layer and head sliders' context


def set_prompt(text: str, stat: str | None = None) -> None:
    """Button callback: a new prompt (and a statistic to show), set before the widgets are drawn; the ids
    appended to the last prompt go."""
    controls.set_value(PROMPT, text)
    controls.set_value(APPENDED, "")
    if stat is not None:
        controls.set_value(STAT, stat)


def append_id(token_id: int, appended: tuple[int, ...]) -> None:
    """Button callback: greedy decoding by hand, by id: the top token's id goes after the ids already appended
    (never its text tokenized again, which can merge tokens or hold half a character)."""
    controls.set_value(APPENDED, model.write_ids((*appended, token_id)))


def make_repeated_prompt() -> None:
    """Button callback: random word tokens written twice (seeded, built from ids: an exact repeat), the induction
    score to look at, and the head with the largest induction score opened."""
    text, ids = draw.repeated_prompt(lm, int(ss.get(SEED) or 0))
    set_prompt(text, "induction")
    induction = draw.statistics(lm, ids).get("induction")
    if induction is not None:
        layer, head = top_heads(induction)[0]
        controls.set_value(LAYER, layer)
        controls.set_value(HEAD, head)


def open_clicked_head() -> None:
    """Grid callback: the clicked cell's layer and head go to the sliders before they are drawn."""
    chosen = charts.clicked_head(ss.get(GRID), config.n_layers, config.n_heads)
    if chosen is not None:
        controls.set_value(LAYER, chosen[0])
        controls.set_value(HEAD, chosen[1])


# --- the prompt ----------------------------------------------------------------------------------
st.header(_("Your prompt"))
st.caption(_("This lesson reads its own prompt: the sidebar's controls (sentence, embeddings, seed, d_model, d_k) "
             "drive the lessons on random weights and do not apply here."))
# a new text starts without the ids appended to the last one
typed = llm.prompt_input(CONTROLS["prompt"], model=lm, on_change=controls.set_value, args=(APPENDED, ""))
vocab = config.vocab_size
raw_appended = controls.draw(CONTROLS["then"], {"vocab": vocab})
appended = model.parse_ids(raw_appended, vocab)
if appended is None:
    st.warning(_("“Token ids appended” must be whole numbers from 0 to {last} separated by single spaces; the page "
                 "reads the prompt without them.").format(last=vocab - 1), icon="🔢")
    appended = ()
p = typed.extend(lm, appended)
c1, c2, c3 = st.columns([1, 2, 1], vertical_alignment="bottom")
REPEATABLE = model.can_repeat(lm)  # a vocabulary with too few whole-word tokens cannot make the repeated prompt
NO_REPEAT = model.no_repeat_reason(lm)
with c1:
    seed = controls.draw(CONTROLS["seed"])
with c2:
    st.button(_("🔁 Make a repeated random prompt"), key="rm_repeat", on_click=make_repeated_prompt,
              disabled=not REPEATABLE, help=NO_REPEAT or _(
                  "{n} random word tokens from the model's vocabulary, written twice (the same ids again: an exact "
                  "repeat): the second copy shows which heads are induction heads (the map switches to the "
                  "induction score and the top induction head opens).").format(n=model.REPEAT_WORDS))
with c3:
    st.button(_("↺ Default prompt"), key="rm_default", on_click=set_prompt, args=(model.DEFAULT_PROMPT,))

ids = p.ids
draw.tokens(p, config.vocab_size, llm.is_sentencepiece(lm), lm.tokenizer.bos_id is not None)
if p.n > typed.n:
    draw.appended_tokens(lm, ids, typed.n)

# --- the prediction ------------------------------------------------------------------------------
st.header(_("What the model predicts next"))
with st.spinner(_("running the {n} tokens through {layers} layers, every attention weight kept…").format(
        n=len(ids), layers=config.n_layers)):
    draw.prediction(lm, ids, None if storage is None else storage.tied)
if p.is_cut:
    st.caption(_("This is the token after the {n}th, where the prompt was cut.").format(n=llm.PROMPT_MAX_TOKENS))
full = p.is_cut or p.n >= llm.PROMPT_MAX_TOKENS
st.button(_("➕ Append the top token and run again"), key="rm_append", on_click=append_id,
          args=(llm.run(lm, ids).top_ids[0], appended[: p.n - typed.n]), disabled=full,
          help=_("Greedy decoding by hand: the most likely token's id is appended to the prompt's tokens, and the "
                 "whole page runs again on the longer sequence."))
if full:
    st.caption(_("The prompt is at this lesson's {n}-token limit: nothing more can be appended.").format(
        n=llm.PROMPT_MAX_TOKENS))

# --- every head at a glance ----------------------------------------------------------------------
st.header(_("Every head at a glance"))
st.markdown(_("One cell per head: {layers} layers (top to bottom) × {heads} query heads, coloured by the statistic "
              "you choose, computed from the attention weights of your prompt. **Click a cell** (or set the sliders) "
              "to open that head below.").format(layers=config.n_layers, heads=config.n_heads))
for note in (model.groups_caption(config), model.local_layers_text(config)):
    if note:
        st.caption(note)
stats = draw.statistics(lm, ids)


@controls.fragment  # the statistic, a click on the grid and the layer and head sliders change this part only: it reruns
def heads_part() -> None:  # alone (the prompt, the prediction and the quiz are not resent; issue 30)
    stat = controls.draw(CONTROLS["stat"])
    grid_col, side = st.columns([3, 2])
    with side:
        layer = controls.draw(CONTROLS["layer"], SIZES)
        head = controls.draw(CONTROLS["head"], SIZES)
        layer, head = int(layer), int(head)
        if stats.defined and stats.get(stat) is not None:
            draw.statistic_definition(stat, stats.n, stats.induction_rows)
    with grid_col:
        if not stats.defined:
            st.info(_("The head statistics need at least {need} tokens (they average over the query rows from row "
                      "{first} on); this prompt has {n}. Type a longer prompt.").format(
                need=model.FIRST_ROW + 1, first=model.FIRST_ROW, n=stats.n), icon="📏")
        elif stats.get(stat) is None:
            draw.induction_undefined(ids)
            if st.button(_("🔁 Make a repeated random prompt"), key="rm_repeat_here", on_click=make_repeated_prompt,
                         disabled=not REPEATABLE, help=NO_REPEAT):
                st.rerun()  # a new prompt: the whole page runs again (this part alone would keep the old one)
        else:
            charts.show_fig(draw.grid_figure(stats.get(stat), stats.n, stat, layer, head, config.group_size), key=GRID,
                            on_select=open_clicked_head, selection_mode="points")
            draw.grid_numbers(lm, ids, stat)

    # --- one head up close -------------------------------------------------------------------------
    st.header(_("One head up close: layer {layer}, head {head}").format(layer=layer, head=head))
    left, right = st.columns(2)
    with left:
        draw.head_map(lm, ids, layer, head, controls.color_scale())
    with right:
        draw.layer_mean_map(lm, ids, layer, controls.color_scale())
    draw.head_group(lm, ids, layer, head, controls.color_scale())
    st.subheader(_("The six steps of head {head}, on its real numbers").format(head=head))
    st.markdown(model.steps_overview(config))
    # Drawn only while open (its 11 charts are most of what a head change would send; issue 30), and in the link.
    steps = controls.draw(CONTROLS["steps"], {"n": model.step_charts(config)})
    if steps.open:
        with steps:
            draw.rmsnorm_step(lm, ids, layer, head)
            draw.head_steps(lm, ids, layer, head, controls.color_scale())


heads_part()
compare.section(lm, ids)  # "Compare with another model" (compare.py)

# --- guess, then reveal --------------------------------------------------------------------------
st.header(_("Guess, then reveal"))
heads = model.quiz_heads(stats)
if not stats.defined:
    st.info(_("The exercise needs the head statistics, so a prompt of at least {need} tokens.").format(
        need=model.FIRST_ROW + 1), icon="📏")
elif not heads:
    st.info(_("No head clearly does one thing on this prompt (none has a largest score that beats its runner-up by "
              "{margin}), so there is nothing to guess: type a longer prompt.").format(
        margin=i18n.general(model.MIN_MARGIN)), icon="🤷")
else:
    draw.quiz_intro(stats.graded_rows, bool(stats.induction_rows), model.repeats_too_close(ids), stats.n)
    guesses = []
    per_row = 2 if len(heads) == 4 else 3  # a map per column stays readable at 1400 px; on a phone they stack
    for start in range(0, len(heads), per_row):
        for col, q in zip(st.columns(per_row), heads[start:start + per_row], strict=False):
            with col:
                draw.quiz_map(lm, ids, q.layer, q.head, controls.color_scale())
                guess = st.selectbox(_("Layer {layer}, head {head} is…").format(layer=q.layer, head=q.head),
                                     list(model.LABELS), format_func=model.label, index=None,
                                     placeholder=_("your guess"), key=f"rm_guess_{q.layer}_{q.head}")
                guesses.append(guess if guess in model.LABELS else None)
    signature = (ids, tuple((q.layer, q.head) for q in heads))
    st.button(_("Check my answers"), key="rm_check", on_click=ss.__setitem__, args=(REVEALED, signature),
              type="primary")  # the answers for this prompt and these heads (a new prompt hides them again)
    if ss.get(REVEALED) == signature:
        draw.reveal(lm, ids, tuple(guesses))
