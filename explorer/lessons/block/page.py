"""Page: inside one transformer block — SmolLM2-135M's residual stream from the embedding to the loss, one block up
close, check yourself."""

import streamlit as st

from explorer.lessons.block import CONTROLS, draw, model
from explorer.shell import controls, llm
from explorer.shell.i18n import translator

_, _n = translator(__file__)

BLOCK = CONTROLS["block"].key
REVEALED = "_blk_revealed"
GUESSED_FOR, EDITION = "_blk_guessed_for", "_blk_guess_edition"
ss = st.session_state

draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "Here you would follow a prompt through a trained model's blocks: the token embedding, the residual stream, "
    "RMSNorm, attention's output projection, the MLP, the logits, the loss and the perplexity, all measured."))
config = lm.config
controls.not_used(llm.not_used(config, seed=_("the model's weights are trained, not drawn.")))
draw.intro(config, llm.model_name(lm))
SIZES = {"n_layers": config.n_layers}

# --- the prompt ----------------------------------------------------------------------------------
st.header(_("Your prompt"))
p = llm.prompt_input(CONTROLS["prompt"], model=lm)
ids = p.ids
st.text(" │ ".join(llm.visible_piece(s) for s in p.pieces))
st.caption(_n("{n} token (␣ = a space, ↵ = a new line). The charts follow the last one, “{last}”: the position "
              "whose next token the model predicts.",
              "{n} tokens (␣ = a space, ↵ = a new line). The charts follow the last one, “{last}”: the position "
              "whose next token the model predicts.", p.n).format(n=p.n, last=llm.visible_piece(p.pieces[-1])))

with st.spinner(_("running the prompt through {layers} blocks…").format(layers=config.n_layers)):
    draw.embedding(lm, ids)
draw.stream(lm, ids)

# --- one block up close ----------------------------------------------------------------------------
st.header(_("3. One block up close"))
c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
with c1:
    block = int(controls.draw(CONTROLS["block"], SIZES))
with c2:
    st.button(_("Next block ▶"), key="blk_next", on_click=controls.set_value,
              args=(BLOCK, (block + 1) % config.n_layers), width="stretch")
draw.block_inside(lm, ids, block)
draw.thirty(lm, ids)
storage = llm.weight_storage(lm)
draw.output(lm, ids, None if storage is None else storage.tied)
draw.losses(lm, ids)

# --- check yourself --------------------------------------------------------------------------------
st.header(_("7. Check yourself"))
checked = ss.get(REVEALED)  # (ids, guesses) when "Check" was pressed
if ss.get(GUESSED_FOR, ids) != ids:  # a new prompt: its questions start with no guesses and no grade
    controls.next_edition(EDITION, GUESSED_FOR, REVEALED)
controls.last_valid(GUESSED_FOR, ids)
edition = controls.edition(EDITION)  # new widgets (no guess) for each prompt
keys = {"part_block": f"blk_guess_block_{edition}", "cancel": f"blk_guess_cancel_{edition}"}
q1, q2 = st.columns(2)
with q1:
    guess_block = st.selectbox(
        model.block_question(draw.measure(lm, ids)), list(range(config.n_layers)), index=None,
        placeholder=_("your guess: a block number"),
        key=keys["part_block"])
with q2:
    guess_cancel = st.radio(
        _("Is ‖x_{layers}‖ (the stream before the final norm) less or more than the norms of all {n} writes added "
          "up?").format(layers=config.n_layers, n=2 * config.n_layers),
        tuple(model.CANCEL), index=None, key=keys["cancel"], horizontal=True,
        format_func=lambda v: _(model.CANCEL[v]))
guesses = (("part_block", guess_block), ("cancel", guess_cancel))
st.button(_("Check my answers"), key="blk_check", type="primary",  # the guesses as they are at the click
          on_click=lambda: controls.reset(REVEALED, (ids, tuple((name, ss.get(key)) for name, key in keys.items()))))
if checked is not None and checked[0] == ids:  # graded: the guesses as they were when "Check" was pressed
    if checked[1] == guesses:
        draw.reveal(lm, ids, guesses)
    else:
        st.caption(_("You changed an answer: press “Check my answers” again."))

draw.links()
