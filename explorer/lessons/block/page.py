"""Page: inside one transformer block — SmolLM2-135M's residual stream from the embedding to the loss, one block up
close, check yourself."""

import streamlit as st

from explorer.lessons.block import CONTROLS, draw, model
from explorer.shell import controls, llm
from explorer.shell.i18n import translator

_, _n = translator(__file__)

BLOCK = CONTROLS["block"].key
REVEALED = "_blk_revealed"
ss = st.session_state

draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "Here you would follow a prompt through a trained model's blocks: the token embedding, the residual stream, "
    "RMSNorm, attention's output projection, the MLP, the logits, the loss and the perplexity, all measured."))
config = lm.config
controls.not_used(llm.not_used(config, seed=_("the model's weights are trained, not drawn.")))
draw.intro(config)
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
q1, q2 = st.columns(2)
with q1:
    guess_block = st.selectbox(_("Which block's MLP writes the most into the last token's stream?"),
                               list(range(config.n_layers)), index=None, placeholder=_("your guess: a block number"),
                               key="blk_guess_mlp")
guess_ppl = None
if p.n > 1:
    with q2:
        guess_ppl = st.radio(_("Is this prompt's perplexity above or below {mark}?").format(mark=model.PERPLEXITY_MARK),
                             ("above", "below"), index=None, key="blk_guess_ppl", horizontal=True,
                             format_func=lambda v: (_("above {mark}") if v == "above" else _("below {mark}")).format(
                                 mark=model.PERPLEXITY_MARK))
st.button(_("Check my answers"), key="blk_check", on_click=ss.__setitem__, args=(REVEALED, ids), type="primary")
if ss.get(REVEALED) == ids:  # the answers for this prompt (a new prompt hides them again)
    draw.reveal(lm, ids, (("mlp_block", guess_block), ("perplexity", guess_ppl)))

draw.links()
