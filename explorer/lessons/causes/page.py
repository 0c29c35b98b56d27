"""Page: what made it say that? Read out, attribute, knock out and patch the loaded model's heads (issue 27; any
family the core reads, SmolLM2-135M by default: issue 50).

Every control is in the link: ``ca_prompt``, ``ca_answer`` (which of the top 5 to follow), ``ca_heads`` (the
knocked-out heads, ``L18H6,L17H4``), ``ca_ablation``, ``ca_seed`` (the random control), ``ca_by`` / ``ca_k`` (the
top-k picker), ``ca_induct`` / ``ca_rseed`` / ``ca_ind_k`` (the repeated random prompt, switched on), ``ca_guess``,
``ca_stat``, ``ca_patch`` / ``ca_clean`` / ``ca_corrupt`` (the patching switched on, the patch pair) and ``ca_layer``
(the layer whose heads are patched). The induction experiment and the patching cost several forward passes each:
they run when switched on (issue 47), and a shared link switches them on as it does every control. The sweep is
revealed by a button, out of the link (a link must not show the answer before the guess); its result is kept for
the class and said to be gone when the server dropped it.
"""

import functools

import streamlit as st

from attention.heads import top_heads
from explorer.lessons.causes import CONTROLS, draw, model
from explorer.shell import charts, controls, i18n, jobs, llm, textviews
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

HEADS = CONTROLS["heads"].key  # the multiselect of the knocked-out heads (the link holds them as L18H6,L17H4)
GRID, SWEEP_GRID, SCATTER, HEAD_BARS = "ca_grid", "ca_sweep_grid", "ca_scatter", "ca_head_bars"
REVEALED, SELECTION = "_ca_revealed", "_ca_selection"  # the sweep's signature; the knockout's model.Selection
SWEEPS = "causes-sweeps"  # the process's kept sweeps (jobs.shared): the page runs them, the class shares them
ss = st.session_state


draw.title()
controls.you_need(__file__)  # the earlier lessons this one builds on, as links
lm = llm.model_or_explain(_(
    "Here you would read the model's stream out after every layer, split its answer's logit into the parts that "
    "wrote it, knock heads out (beside random heads as a control), sweep all 270 heads, and copy activations from "
    "one prompt into another to find where a fact travels."
))
config = lm.config
storage = llm.weight_storage(lm)  # the file's tensor table: its weights' precision, whether its output is tied
draw.intro(llm.model_name(lm))
controls.not_used(llm.not_used(config, seed=_(
    "the model's weights are trained, not drawn; the page's own seeds pick the random heads and tokens.")))
L, H = config.n_layers, config.n_heads
SIZES = {"n_layers": L, "n_heads": H}  # the context of the controls that name heads
st.caption(f"{llm.model_name(lm)}: {llm.describe(config)}.")

# --- the prompt ---------------------------------------------------------------------------------------------
st.header(_("Your prompt"))
p = llm.prompt_input(CONTROLS["prompt"], model=lm, max_tokens=model.PROMPT_MAX_TOKENS)
ids = p.ids
with st.spinner(_("running {n} layers…").format(n=L)):
    clean = llm.run(lm, ids, activations=True)  # the door's cached run: every section below starts from it
draw.tokens(tuple(p.labels), ids, lm.tokenizer.bos_id is not None)
top_ids, top_p = clean.top_ids, clean.top_probabilities
answer_code = controls.draw(CONTROLS["answer"], {"answers": {
    str(i): f"{model.plain(lm, t)}  (p = {i18n.number(q, 3)})" for i, (t, q) in enumerate(zip(top_ids, top_p,
                                                                                              strict=True))}})
answer = top_ids[int(answer_code)]
with st.expander(_("The model's top 5 next tokens"), expanded=False):
    draw.prediction(lm, ids)

# --- 1 · logit lens -------------------------------------------------------------------------------------------
st.header(_("1 · Read out every layer (logit lens)"))
tied = None if storage is None else storage.tied  # the output matrix is the token embedding (None: cannot say)
st.markdown(model.lens_intro(config))
st.caption(model.stream_caption(config, tied))
with st.spinner(_n("reading out {streams} streams at {n} position…", "reading out {streams} streams at {n} "
                   "positions…", len(ids)).format(streams=L + 1, n=len(ids))):
    draw.lens(lm, ids, answer)

# --- 2 · direct logit attribution -----------------------------------------------------------------------------
st.header(_("2 · Who pushed the answer (direct logit attribution)"))
for formula in model.attribution_formulas(config, tied):
    st.latex(formula)
st.caption(_("x_emb: {start}; o_ℓ,h W_O^(ℓ,h): head h's output (its weights · V) through its rows of layer ℓ's output "
             "projection W_O, which is how a head writes into the stream; m_ℓ: what layer ℓ's MLP ({mlp}, a small "
             "network applied to each position alone) writes.").format(
    start=model.embedding_words(config), mlp=llm.mlp_name(config)) + " " + model.attribution_caption(
    config, tied) + " " + _("Click a head in the grid to add it to the knockout below."))
if (note := model.attribution_note(config)) is not None:
    st.info(note, icon="🧮")
att = draw.attribution(lm, ids, answer)
# The knockout's selection: from the link on the session's first draw, else the 3 heads that push the answer most
# directly, chosen again for a new prompt or answer unless the learner picked them (read here, before the grid
# outlines it; the multiselect is drawn in section 3).
HEADS_CTX = {**SIZES, "top": [model.head_code(*h) for h in top_heads(att.heads, 3)]}
made_for = (ids, answer)
selection = controls.last_valid(SELECTION, model.knockout_selection(
    controls.last_valid(SELECTION, None), controls.value(CONTROLS["heads"], HEADS_CTX), made_for, p.kept_text,
    model.piece(lm, answer), HEADS_CTX["top"]))
if list(selection.heads) != controls.value(CONTROLS["heads"], HEADS_CTX):
    controls.set_value(HEADS, list(selection.heads))


def add_clicked_head() -> None:
    """Grid callback: the clicked head joins the knockout selection (before the multiselect is drawn)."""
    chosen = charts.clicked_head(ss.get(GRID), L, H)
    if chosen is not None:
        code = model.head_code(*chosen)
        picks = list(controls.value(CONTROLS["heads"], HEADS_CTX))
        if code not in picks and len(picks) < model.MAX_HEADS:
            controls.set_value(HEADS, picks + [code])


grid_col, parts_col = st.columns([2, 3])
with grid_col:
    picked = [model.head_of(code) for code in controls.value(CONTROLS["heads"], HEADS_CTX)]
    charts.show_fig(draw.attribution_grid(att.heads, model.plain(lm, answer), tuple(picked)), key=GRID,
                    on_select=add_clicked_head, selection_mode="points")
    clicked = charts.clicked_head(ss.get(GRID), L, H)
    if clicked:
        draw.open_head(lm, p.kept_text, clicked)
with parts_col:
    draw.attribution_parts(lm, ids, answer, p.kept_text)

# --- 3 · knock heads out --------------------------------------------------------------------------------------
st.header(_("3 · Knock heads out"))
st.markdown(_("Remove heads' outputs and run the model again from the first changed layer: the new top 5 and the "
              "change in your answer's probability, beside the same number of random heads as a control.") + " " + _(
    "**Zero ablation** replaces a head's output by zeros; **mean ablation** by its average over the prompt's "
    "positions, so only what varies from token to token is removed."))
by_values = {"attribution": att.heads} | draw.statistics(lm, ids)


c1, c2 = st.columns([3, 2])
with c1:
    heads = tuple(map(model.head_of, controls.draw(CONTROLS["heads"], HEADS_CTX)))
    ablation = controls.draw(CONTROLS["ablation"])
with c2:
    by = controls.draw(CONTROLS["by"])
    k = controls.draw(CONTROLS["k"])
    st.button(_("Pick the top {k}").format(k=k), key="ca_pick", on_click=controls.set_value,  # the new selection
              args=(HEADS, [model.head_code(*h) for h in top_heads(by_values[by], k)]))
    seed = controls.draw(CONTROLS["seed"])
if not heads:
    st.info(_("Pick heads to knock out (the box above, a click on the grid, or “Pick the top k”)."), icon="👆")
else:
    random = tuple(model.random_heads(seed, model.control_count(len(heads), L, H), L, H, heads))
    with st.spinner(_("knocking out {chosen} + {random} heads…").format(chosen=len(heads), random=len(random))):
        draw.knockout_result(lm, ids, heads, random, ablation, answer, seed, model.carried_note(selection, made_for))

st.subheader(_("Induction heads on a repeated random prompt"))
n_words = llm.repeat_words(lm, model.REPEAT_TOKENS)  # fewer than 20 only in a small vocabulary
st.markdown(_("{n} random word tokens written twice: a model that copies (“last time this token came, what "
              "followed?”) predicts the second copy well. Induction heads do that copying (Olsson et al. 2022). "
              "Knock out the heads with the highest induction score, and the same number of random "
              "heads:").format(n=n_words))
if (short := model.repeat_note(n_words)) is not None:
    st.warning(short, icon="📖")
st.caption(_("The **loss** of one prediction is −ln p(the actual next token), in nats: 0 when the model gives that "
             "token probability 1, larger the less it expected it."))
if n_words >= 2:
    n_repeat = 2 * n_words
    induct_time = textviews.passes_time(model.INDUCTION_PASSES, llm.pass_seconds(clean.seconds, len(ids), n_repeat))
    if jobs.on_demand(CONTROLS["induct"], {"passes": model.INDUCTION_PASSES, "n": n_repeat, "time": induct_time},
                      (CONTROLS["rseed"], CONTROLS["ind_k"])):
        c1, c2 = st.columns(2)
        with c1:
            rseed = controls.draw(CONTROLS["rseed"])
        with c2:
            n_ind = controls.draw(CONTROLS["ind_k"], {"n_heads": H})
        with st.spinner(_("running the {n}-token prompt with and without {heads} heads…").format(
                n=n_repeat, heads=n_ind + model.RANDOM_DRAWS * n_ind)):
            draw.induction_result(lm, rseed, n_ind, ablation)

# --- 4 · the effect of every head -----------------------------------------------------------------------------
st.header(_("4 · The effect of every head"))
st.markdown(_("Knock out each of the {n} heads alone and measure the change in log p({answer}). The {h} heads of a "
              "layer run together in one stacked pass from that layer on. **Guess first:** which head matters most "
              "for this answer?").format(n=L * H, answer=model.piece(lm, answer), h=H))
guess_code = controls.draw(CONTROLS["guess"], SIZES)
guess = None if guess_code == "none" else model.head_of(guess_code)
signature = (ids, answer, ablation)
# The sweep's result is kept for the class (jobs.Jobs.keep): every session asking for it gets it, it lives while pages
# show it (each rerun that shows it uses it), and the default prompt's stays pinned; a page that showed it and finds
# it dropped says so and offers to run it again, never runs minutes of passes unasked.
sweeps = jobs.shared(SWEEPS, None, _pin=model.is_default_sweep)
sweep_key = model.sweep_key(llm.model_key(lm), signature, ids == llm.prompt(lm, model.DEFAULT_PROMPT,
                                                                               model.PROMPT_MAX_TOKENS).ids)
st.button(_("Run the sweep and check") if guess else _("Run the sweep (no guess)"), key="ca_reveal", type="primary",
          on_click=lambda: ss.__setitem__(REVEALED, signature))
kept = sweeps.get(sweep_key)
run_it = ss.get(REVEALED) == signature
if run_it and kept is None and jobs.expired(sweeps, sweep_key):
    last = draw.last_pass_seconds(lm, ids, answer, ablation)
    sweep_time = textviews.duration(model.sweep_seconds(config, len(ids), last))
    jobs.expired_notice(sweeps, sweep_key, _("the sweep of every head"),
                        _("Run the sweep again: {time} on this server").format(time=sweep_time), "ca_resweep")
    run_it = False
if run_it:
    if kept is not None:
        sweep = kept.result
    else:
        sweep = jobs.in_steps(functools.partial(llm.knockout_sweep, lm, ids, answer, ablation=ablation),
                              *model.sweep_progress(config), first=1)
        sweeps.keep(sweep_key, sweep)
    jobs.shown(sweeps, sweep_key)
    draw.sweep_reveal(lm, sweep, guess, p.kept_text)
    left, right = st.columns(2)
    with left:
        event = charts.show_fig(draw.sweep_grid(sweep.effect, model.plain(lm, answer), guess), key=SWEEP_GRID,
                                on_select="rerun", selection_mode="points")
    with right:
        stat = controls.draw(CONTROLS["stat"])
        event2 = charts.show_fig(draw.scatter_figure(draw.statistics(lm, ids)[stat], sweep.effect, stat,
                                                    model.plain(lm, answer)), key=SCATTER,
                                 on_select="rerun", selection_mode="points")
    draw.scatter_text(lm, ids, sweep, stat)
    opened = charts.clicked_head(event2, L, H) or charts.clicked_head(event, L, H)
    if opened:
        draw.open_head(lm, p.kept_text, opened)
elif ss.get(REVEALED) != signature:
    st.caption(model.sweep_estimate(config, len(ids), draw.last_pass_seconds(lm, ids, answer, ablation)))

# --- 5 · activation patching ----------------------------------------------------------------------------------
st.header(_("5 · Move a fact (activation patching)"))
st.markdown(_("Two prompts that differ in one fact. Run the corrupted one, but copy one stream (one block, one "
              "position) from the clean run: where does the copy bring the clean answer back? The measure is the "
              "logit difference between the clean and the corrupted answers at the last position."))
def patching() -> None:
    """Section 5's two prompts, their residual patching map and one layer's heads (drawn when switched on)."""
    c1, c2 = st.columns(2)
    with c1:
        clean_p = llm.prompt_input(CONTROLS["clean"], model=lm, max_tokens=model.PATCH_MAX_TOKENS)
    with c2:
        corrupt_p = llm.prompt_input(CONTROLS["corrupt"], model=lm, max_tokens=model.PATCH_MAX_TOKENS)
    if clean_p.n != corrupt_p.n:
        st.warning(_("The two prompts must have the same number of tokens (a stream at one position is copied into the "
                     "same position of the other): the clean one has {clean}, the corrupted one {corrupted}. Their "
                     "tokens:").format(clean=clean_p.n, corrupted=corrupt_p.n), icon="📏")
        names = _("clean:"), _("corrupted:")
        for name, labels in zip(names, (clean_p.labels, corrupt_p.labels), strict=True):  # the lists: one column
            st.text(name.ljust(max(map(len, names))) + " " + " │ ".join(labels))
    else:
        with st.spinner(_("running both prompts through {n} layers…").format(n=L)):
            a_clean = llm.run(lm, clean_p.ids, activations=True).top_ids[0]
            a_corrupt = llm.run(lm, corrupt_p.ids, activations=True).top_ids[0]
        st.markdown(_("Clean → {clean}, corrupted → {corrupted}.").format(clean=model.piece(lm, a_clean),
                                                                         corrupted=model.piece(lm, a_corrupt)))
        if a_clean == a_corrupt:
            st.info(_("Both prompts make the model predict {answer}, so there is no difference to move. Change one "
                      "fact so the two answers differ.").format(answer=model.piece(lm, a_clean)), icon="🔁")
        else:
            grid = jobs.in_steps(functools.partial(llm.patch_residual_sweep, lm, clean_p.ids, corrupt_p.ids, a_clean,
                                                   a_corrupt), *model.patch_progress(config, clean_p.n))
            draw.patch_result(lm, clean_p.ids, corrupt_p.ids, a_clean, a_corrupt, grid)
            move = model.fact_move(model.recovered(grid, *model.logit_differences(lm, clean_p.ids, corrupt_p.ids,
                                                                                 a_clean, a_corrupt)))
            default_layer = move.other_until if move.moves else L - 1
            st.subheader(_("Per head: which head carries it?"))
            layer = controls.draw(CONTROLS["layer"], {"n_layers": L, "default": default_layer})
            with st.spinner(_("patching the {h} heads of layer {layer}…").format(h=H, layer=layer)):
                draw.head_patch_result(lm, clean_p.ids, corrupt_p.ids, a_clean, a_corrupt, layer, clean_p.kept_text)


n_pair = llm.prompt(lm, controls.value(CONTROLS["clean"]), model.PATCH_MAX_TOKENS).n  # before the box is drawn
patch_passes = model.patch_passes(config, n_pair)
if jobs.on_demand(CONTROLS["patch"], {
        "passes": i18n.integer(round(patch_passes)), "n": n_pair,
        "time": textviews.passes_time(patch_passes, llm.pass_seconds(clean.seconds, len(ids), n_pair))},
        (CONTROLS["clean"], CONTROLS["corrupt"], CONTROLS["layer"])):
    patching()

# --- notes ----------------------------------------------------------------------------------------------------
draw.notes(None if storage is None else llm.precision_note(storage),
           storage is None or not llm.widened_exactly(storage))
