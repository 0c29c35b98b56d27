"""Sections of the page "Watch attention learn": each a cached section (:func:`explorer.shell.cache.section`) that
draws from its arguments alone, the finished :class:`~explorer.lessons.training.model.RunResult` among them, so a
rerun replays it. The runs train on the shell's shared job worker (:mod:`explorer.shell.jobs`, asked by the page);
every sentence that states a result is computed from the run's numbers (:mod:`explorer.lessons.training.model`)
and says so when the result does not hold for the learner's settings.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import streamlit as st

from attention import heads, training
from explorer.lessons.training import charts as tfig
from explorer.lessons.training import model
from explorer.lessons.training.model import (
    RunResult,
    RunSpec,
    emerged_text,
    head_name,
    jump_sentences,
    layers_count,
    mechanism_sentences,
    num,
    scaling_sentences,
    threshold,
    verdict,
)
from explorer.shell import charts, head_statistics, i18n, textviews
from explorer.shell.cache import cached, section
from explorer.shell.i18n import N_, translator
from explorer.shell.settings import token_labels
from explorer.shell.tables import dataframe, numbers
from explorer.shell.textviews import tokens_count

_, _n = translator(__name__)

MAPS_PER_ROW = 2  # attention maps side by side (4 in a row left each map a sliver at 64 tokens)
MAP_HEIGHT = 420  # px: an attention map of up to 64 tokens, a label on every other row
NOT_USED = {  # shown translated: _(NOT_USED[key])
    "sentence": N_("this lesson trains a model on sequences of random token ids (a random run written twice)."),
    "embedding": N_("the model learns its own token embedding, starting from the initialisation chosen here."),
    "positional": N_("the model has its own positions (learned or sinusoidal, chosen on this page)."),
    "seed": N_("this page has its own seed (it draws the initial weights and every training batch)."),
    "d_model": N_("this page has its own d_model for the model it trains."),
    "d_k": N_("this page's heads have their own width d_head (d_k = d_v = d_head)."),
}


# --- sections ---------------------------------------------------------------------------------------------------
@section
def intro() -> None:
    """The title, what the page does, the model's formulas and the two scores."""
    st.title(_("Watch attention learn"))
    st.markdown(_(
        "Every other lesson shows attention *after* it was learned. Here a tiny transformer is trained in front of "
        "you, in this app's own NumPy (a hand-written backward pass, checked against finite differences and "
        "PyTorch), on a task only a two-layer circuit can solve: each sequence ends with a random run of tokens "
        "**written twice**. Once the model has seen the first copy, every next token of the second copy can be "
        "predicted: *find where the current token occurred before, and copy the token that followed it*. That rule "
        "is an **induction head** (Olsson et al. 2022). Watch the loss, the heads' scores and their attention maps "
        "while it forms, then check what each head really does by knocking it out."
    ))
    st.latex(r"x_0 = W_E[t] + P")
    st.latex(r"s^h = \frac{(x_l W_q^h)(x_l W_k^h)^\top}{\sqrt{d_{head}}}")
    st.latex(r"x_{l+1} = x_l + \sum_h \mathrm{softmax}(s^h + M)\, x_l W_v^h W_o^h")
    st.latex(r"\text{logits} = x_L W_U")
    st.caption(_("An attention-only transformer (no MLP, no layer norm; Elhage et al. 2021): token embedding W_E, "
                 "positions P, a residual stream, per-head W_q, W_k, W_v and W_o, the causal mask M, the unembedding "
                 "W_U. Trained with Adam on the next-token cross-entropy of the positions the first copy makes "
                 "predictable (the rest of each sequence is random: no model can predict it)."))
    st.latex(textviews.latex_words(_("prefix-match")) + " = " + heads.formula("induction"))
    st.caption(head_statistics.meaning("induction"))
    st.latex(textviews.latex_words(_("previous-token")) + " = " + heads.formula("previous"))
    st.caption(head_statistics.meaning("previous") + " " + _(
        "Both are averaged over every sequence of the step's batch; on this task R is the second copy of each run "
        "of at least 3 tokens (the target i − p + 1; a run of 2 puts it on the previous token) and any filler "
        "token that repeats."))


@section
def untrained(spec: RunSpec, color_scale: str) -> None:
    """Before training: the probe sequence, the untrained model's attention maps and its scores at step 0."""
    tokens, attention, period, pm, prev = model.untrained_attention(spec)
    uniform_pm, uniform_prev = model.uniform_scores(spec)
    n = spec.n_ctx
    roles = model.probe_roles(n, period)
    charts.show_fig(tfig.probe_strip(tokens, roles, title=_("one sequence: n = {n}, p = {p}").format(n=n, p=period)),
                    key="tr_fig_probe")
    if spec.task == "repeat":
        task_text = _("Filler ({filler}) then a run of {run} written twice. The period p is drawn for every sequence, "
                      "from {lo} to {hi}, so the second copy starts somewhere else each time: no position can solve "
                      "it.").format(filler=tokens_count(n - 2 * period), run=tokens_count(period),
                                    lo=min(training.P_MIN, n // 2), hi=n // 2)
    else:
        task_text = _("The fixed-period task: a run of {run} written twice, in every sequence (p = n / 2 = {p}, no "
                      "filler). The answer for position i is always at position i − p + 1: a position, not a token, "
                      "can solve it (the shortcut, section 4).").format(run=tokens_count(period), p=period)
    st.caption(task_text + " " + _("Hover a cell for its token id and role."))
    labels = token_labels(map(str, tokens))  # "17 (0)": the token id and its position
    st.subheader(_("The untrained model's attention"))
    best_pm = float(pm[min(1, pm.shape[0] - 1):].max())
    st.markdown(_(
        "Freshly initialised ({init}, seed {seed}), each head spreads its attention over the keys it may see. "
        "Measured on the first training batch: best prefix-match {pm}, best previous-token score {prev}; uniform "
        "attention would give {uniform_pm} and {uniform_prev}.").format(
        init=_(model.INIT_PHRASES[spec.init]), seed=spec.seed, pm=num(best_pm, 3), prev=num(float(prev[0].max()), 3),
        uniform_pm=num(uniform_pm, 3), uniform_prev=num(uniform_prev, 3)))
    head_maps(attention, labels, color_scale, pm, prev, key="tr_fig_untrained")


def head_maps(attention: np.ndarray, labels: list[str], color_scale: str, pm: np.ndarray, prev: np.ndarray, *,
              key: str) -> None:
    """Every head's attention map, :data:`MAPS_PER_ROW` to a row, layer by layer, titled with its prefix-match ``pm``
    or previous-token score ``prev`` (``[n_layers, n_heads]`` each) (a section helper: call it inside a section)."""
    L, H = attention.shape[:2]
    heads = [(layer, head) for layer in range(L) for head in range(H)]
    per_row = min(H, MAPS_PER_ROW)
    for start in range(0, len(heads), per_row):
        for col, (layer, head) in zip(st.columns(per_row), heads[start:start + per_row], strict=False):
            fig = charts.heatmap(attention[layer, head], labels, labels, title=model.head_title(layer, head, pm, prev),
                                 color_scale=color_scale, mask=np.tri(len(labels), dtype=bool), max_xticks=24,
                                 show_text=False, height=MAP_HEIGHT)
            charts.into(col)(fig, key=f"{key}_{layer}_{head}")


@section
def curves(result: RunResult) -> None:
    """The run's curves (loss against ln vocab, accuracy, prefix-match and previous-token per head) and the
    sentences computed from them."""
    spec = result.spec
    j = model.jump(result)
    ln_v = math.log(spec.vocab)
    st.caption(_("Trained on this server in {seconds} s ({rate} steps per second): {settings}.").format(
        seconds=num(result.seconds, 1), rate=num(spec.steps / max(result.seconds, 1e-9), 0),
        settings=spec.describe()))
    for text in jump_sentences(result, j):
        st.markdown(text)
    vl = ([(j.emerged, _("prefix-match > {threshold} at step {step}").format(threshold=threshold(), step=j.emerged))]
          if j.emerged is not None else [])
    left, right = st.columns(2)
    charts.into(left)(tfig.curves(result.step, [tfig.Series(_("loss"), result.loss, tfig.UNSCALED_COLOR)],
                                  title=_("training loss (nats)"), y_title=_("cross-entropy"),
                                  hlines=[(ln_v, _("ln {vocab} = {value}: a uniform guess").format(
                                      vocab=spec.vocab, value=num(ln_v)))], vlines=vl,
                                  y_range=(0, max(float(result.loss.max()), ln_v) * 1.08)), key="tr_fig_loss")
    charts.into(right)(tfig.curves(result.step, [tfig.Series(_("accuracy"), result.accuracy, tfig.HEAD_COLORS[2])],
                                   title=_("accuracy on the predictable positions"), y_title=_("accuracy"),
                                   vlines=vl, y_range=(0, 1.05)), key="tr_fig_accuracy")
    layers = list(range(1, spec.n_layers)) or [0]
    series = tfig.head_series(result.prefix_match, layers, _("prefix-match")) + tfig.head_series(
        result.previous_token, [0], _("previous-token"))
    charts.show_fig(tfig.curves(result.step, series, title=_("the heads' scores over training"), y_title=_("score"),
                                hlines=[(training.EMERGENCE_THRESHOLD, threshold())], vlines=vl, y_range=(0, 1.05),
                                height=360), key="tr_fig_scores")
    st.caption(_n("Solid lines: prefix-match of each head of layers ≥ 1 (layer 0's with one layer); dotted: the "
                  "previous-token score of each head of layer 0. Each point is measured on that step's batch of "
                  "{n} sequence.",
                  "Solid lines: prefix-match of each head of layers ≥ 1 (layer 0's with one layer); dotted: the "
                  "previous-token score of each head of layer 0. Each point is measured on that step's batch of "
                  "{n} sequences.", spec.batch).format(n=spec.batch))
    numbers(pd.DataFrame({_("step"): result.step, _("loss"): result.loss, _("accuracy"): result.accuracy,
                          **{s.name: s.y for s in series}}), label=_("Numbers: every step"))


@section
def snapshot(result: RunResult, step: int, color_scale: str) -> None:
    """Every head's attention on the probe sequence at the snapshot ``step``, with that step's scores."""
    k = int(np.argmin(np.abs(result.snapshot_steps - step)))
    at = int(result.snapshot_steps[k])
    labels = token_labels(map(str, result.probe))
    pm, prev = result.prefix_match[at], result.previous_token[at]
    st.caption(model.snapshot_caption(result, at))
    head_maps(result.snapshots[k], labels, color_scale, pm, prev, key="tr_fig_step")
    numbers({head_name((layer, head)): pd.DataFrame(result.snapshots[k][layer, head], index=labels, columns=labels)
             for layer in range(result.spec.n_layers) for head in range(result.spec.n_heads)},
            label=_("Numbers: attention weights at step {step}").format(step=at))


@section
def mechanism_check(result: RunResult) -> None:
    """The knockout check: the accuracy with each head and each layer knocked out, and what it shows."""
    spec, mech = result.spec, result.mechanism
    labels = ([head_name((l_, h)) for l_ in range(spec.n_layers) for h in range(spec.n_heads)]
              + [_("all of layer {layer}").format(layer=l_) for l_ in range(spec.n_layers)])
    acc = np.concatenate([mech.knockout_accuracy.reshape(-1), mech.layer_knockout_accuracy])
    charts.show_fig(tfig.knockout_bars(labels, acc, mech.accuracy, title=_("accuracy with a head knocked out")),
                    key="tr_fig_knockout")
    st.caption(_("Measured on 256 fresh sequences of the task (a knocked-out head's output is set to zero). "
                 "Red: below half the accuracy with every head."))
    for text in mechanism_sentences(result):
        st.markdown(text)


@section
def layers_comparison(main: RunResult, other: RunResult) -> None:
    """One layer against two (or more): accuracy and the best prefix-match over the same steps."""
    one, many = sorted((main, other), key=lambda r: r.spec.n_layers)
    series = []
    for r, color in ((many, tfig.HEAD_COLORS[0]), (one, tfig.UNSCALED_COLOR)):
        name = layers_count(r.spec.n_layers)
        series += [tfig.Series(_("{depth}: accuracy").format(depth=name), r.accuracy, color),
                   tfig.Series(_("{depth}: best prefix-match").format(depth=name),
                               model.best_prefix_match(r.prefix_match), color, "dot")]
    charts.show_fig(tfig.curves(main.step, series, title=_("the same budget, two depths"), y_title="",
                                y_range=(0, 1.05), hlines=[(0.3, i18n.general(0.3))]), key="tr_fig_layers")
    a_many, a_one = model.final_accuracy(many), model.final_accuracy(one)
    st.markdown(_("**{depth}**: accuracy {accuracy} at step {steps}; prefix-match passed {threshold} {emerged} "
                  "(verdict of the check: {verdict}). **One layer**: accuracy {one_accuracy} at step {one_steps} (its "
                  "best, smoothed: {one_best}; verdict: {one_verdict}).").format(
        depth=layers_count(many.spec.n_layers), accuracy=num(a_many), steps=many.spec.steps, threshold=threshold(),
        emerged=emerged_text(model.jump(many).emerged, many.spec.steps), verdict=verdict(many.mechanism.label),
        one_accuracy=num(a_one), one_steps=one.spec.steps, one_best=num(float(model.smooth(one.accuracy).max())),
        one_verdict=verdict(one.mechanism.label)))
    if one.spec.n_layers == 1 and a_one <= 0.3 and a_many > 0.5:
        st.markdown(_("**One layer never gets there.** Its heads see, at each key, only that key's own token and "
                      "position: they can find where the current token occurred before, but not which token came "
                      "after it. That needs a first layer that writes each token's predecessor into its position (a "
                      "previous-token head) and a second that matches on it: two layers composing (Elhage et al. "
                      "2021; Olsson et al. 2022)."))
    elif a_one > 0.5:
        st.markdown(_("Here one layer reached {accuracy}: with a {task} it can solve the task by position alone (the "
                      "shortcut of section 4), which needs no composition.").format(
            accuracy=num(a_one), task=_(model.TASK_LABELS[one.spec.task])))
    else:
        st.markdown(_("Here neither depth solved the task within {steps} steps: the comparison says nothing yet. Try "
                      "more steps.").format(steps=main.spec.steps))


@section
def shortcut(random_run: RunResult, fixed_run: RunResult, color_scale: str) -> None:
    """The shortcut trap: a fixed period is solved by position; the mechanism check tells it apart."""
    rm, fm = runs = random_run.mechanism, fixed_run.mechanism
    best = [(float(model.best_prefix_match(r.prefix_match)[-1]), float(r.previous_token[-1, 0].max()))  # the maps'
            for r in (random_run, fixed_run)]
    dataframe(pd.DataFrame([{_("task"): _(model.TASK_LABELS[m.task]), _("accuracy (own task)"): m.accuracy,
                             _("best prefix-match"): pm, _("best previous-token (layer 0)"): prev,
                             _("accuracy on random periods"): m.random_period_accuracy, _("verdict"): verdict(m.label)}
                            for m, (pm, prev) in zip(runs, best, strict=True)]), digits=3, hide_index=True,
              width="stretch")
    pm_fixed, prev_fixed = best[1]
    if fm.label == "shortcut":
        st.markdown(_("**The fixed-period model took the shortcut.** Its best prefix-match is {pm}, yet its best "
                      "previous-token score is only {prev}, and on sequences with a random period its accuracy falls "
                      "from {accuracy} to {random}. With p = n / 2 in every sequence, the answer for position i is "
                      "always at position i − {offset}: a head can look there by position alone. It *looks* like an "
                      "induction head (its prefix-match is high) without being one.").format(
            pm=num(pm_fixed), prev=num(prev_fixed), accuracy=num(fm.accuracy), random=num(fm.random_period_accuracy),
            offset=fixed_run.spec.n_ctx // 2 - 1))
    else:
        st.markdown(_("Here the fixed-period model did **not** take the shortcut (verdict: {verdict}; accuracy "
                      "{accuracy}, on random periods {random}).").format(
            verdict=verdict(fm.label), accuracy=num(fm.accuracy), random=num(fm.random_period_accuracy)))
    if rm.label == "induction":
        st.markdown(_("The random-period model passes the check: accuracy {accuracy} on any period, and knocking out "
                      "layer 0 (its previous-token heads) takes it to {k0}.").format(
            accuracy=num(rm.accuracy), k0=num(rm.layer_knockout_accuracy[0])))
    else:
        st.markdown(_("The random-period model's verdict here is *{verdict}* (accuracy {accuracy}): train it longer to "
                      "compare a real induction head with the shortcut.").format(
            verdict=verdict(rm.label), accuracy=num(rm.accuracy)))
    head = fm.induction_head or heads.top_heads(fm.prefix_match[:1])[0]
    labels = token_labels(map(str, fixed_run.probe))
    charts.into(st.columns(2)[0])(  # half the width, as one of the page's head maps
        charts.heatmap(fixed_run.snapshots[-1][head], labels, labels, color_scale=color_scale,
                       mask=np.tri(len(labels), dtype=bool), show_text=False, max_xticks=24, height=MAP_HEIGHT,
                       title=_("fixed period: {head} at the end").format(head=head_name(head))),
        key="tr_fig_shortcut_map")
    st.caption(_("The fixed-period model's top prefix-matching head on its probe sequence: a diagonal at a fixed "
                 "offset, the same for every sequence."))


@section
def scaling(scaled: RunResult, unscaled: RunResult) -> None:
    """The ÷√d_k experiment: the same wide-head model with and without the division, what it changes, measured."""
    c = model.compare_scaling(scaled, unscaled)
    runs = (("÷√d_head", tfig.SCALED_COLOR, "solid"), (_("no scaling"), tfig.UNSCALED_COLOR, "dash"))

    def pair(ys: np.ndarray, name: str = "{run}") -> list[tfig.Series]:
        """Both runs' curves ``ys [2, S]``, each named ``name`` with its run."""
        return [tfig.Series(name.format(run=run), y, color, dash) for (run, color, dash), y in zip(runs, ys,
                                                                                                  strict=True)]

    fell = [(s, _("fell apart")) for s in c.collapsed if s is not None]
    charts.show_fig(tfig.curves(c.step, pair(c.accuracy), title=_("accuracy"), y_title=_("accuracy"), vlines=fell,
                                y_range=(0, 1.05)), key="tr_fig_scale_accuracy")
    where, top = _("layer {layer}").format(layer=c.layer), i18n.general(training.SATURATED_WEIGHT)
    for col, (key, ys, title, axis, log) in zip(st.columns(3), (
            ("spread", c.spread, _("{layer}: spread of the scores the softmax gets"), _("std (log scale)"), True),
            ("saturated", c.saturated, _("{layer}: saturated rows (top weight > {top})"), _("share of rows"), False),
            ("grad", c.grad, _("{layer}: gradient reaching the scores ‖∂L/∂s‖"), _("norm (log scale)"), True)),
            strict=True):
        charts.into(col)(tfig.curves(c.step, pair(ys), title=title.format(layer=where, top=top), y_title=axis,
                                     log_y=log, vlines=fell, y_range=None if log else (0, 1.05)),
                         key=f"tr_fig_scale_{key}")
    for text in scaling_sentences(c):
        st.markdown(text)
    dataframe(pd.DataFrame(model.scaling_rows(c)), digits=3, hide_index=True, width="stretch",  # the moment in full
              column_config={_("moment"): st.column_config.TextColumn(width=260)})
    left, right = st.columns(2)
    left.latex(r"\operatorname{std}(q\cdot k) \approx \sqrt{d_{head}}\,\sigma_q\sigma_k")
    right.latex(r"\frac{\partial L}{\partial s_{ij}} = w_{ij}\Big(\frac{\partial L}{\partial w_{ij}} - "
                r"\sum_k w_{ik}\frac{\partial L}{\partial w_{ik}}\Big)")
    st.caption(_("A dot product adds up d_head terms, so its spread grows like √d_head: ÷√d_head brings it back. "
                 "The softmax's backward pass: when a row of weights is one-hot (saturated), every term is 0 (w = "
                 "0) or cancels (w = 1), so no gradient reaches that row's scores.") + " " + _(
        "Running means over {smooth} steps of each step's batch, in layer {layer} (the induction head's)."
    ).format(smooth=model.SMOOTH, layer=c.layer))
    numbers(pd.DataFrame({_("step"): c.step, **{s.name: s.y for s in pair(c.accuracy, _("{run}: accuracy"))
                                                + pair(c.spread, _("{run}: spread")) + pair(c.saturated,
                                                _("{run}: saturated rows")) + pair(c.grad, "{run}: ‖∂L/∂s‖")}}),
            label=_("Numbers: both runs, every step"))


@section
def context(results: tuple[RunResult, ...]) -> None:
    """The context-length experiment: steps until prefix-match passes 0.4, per n."""
    g = model.context_growth(results)
    series = [tfig.Series(f"n = {r.spec.n_ctx}", model.best_prefix_match(r.prefix_match),
                          tfig.HEAD_COLORS[i % len(tfig.HEAD_COLORS)], x=r.step) for i, r in enumerate(results)]
    longest = max(results, key=lambda r: len(r.step))
    charts.show_fig(tfig.curves(longest.step, series, title=_("best prefix-match, per context length"),
                                y_title=_("score"), hlines=[(training.EMERGENCE_THRESHOLD, threshold())],
                                y_range=(0, 1.05)),
                    key="tr_fig_context")
    st.caption(_("Each run stops 50 steps after its prefix-match passes {threshold} (or at the step budget).")
               .format(threshold=threshold()))
    dataframe(pd.DataFrame({_("n (context length)"): list(g.n),
                            _("steps to prefix-match > {threshold}").format(threshold=threshold()):
                                [str(e) if e is not None else f"> {g.steps}" for e in g.emerged]}),
              hide_index=True, width="stretch")
    found = i18n.list_separator().join(f"n = {n}: {emerged_text(e, g.steps)}"
                                       for n, e in zip(g.n, g.emerged, strict=True))
    st.markdown(_("Measured here: {found}.").format(found=found))
    if g.exponent is not None:
        local = "; ".join(f"n = {a} → {b}: ×{num(r)} (k = {num(k)})" for a, b, r, k in g.pairs)
        st.markdown(_("Fitting steps ∝ n^k to the lengths that formed gives **k = {k}: {verdict}** (k = 1 is linear, "
                      "k = 2 quadratic). Step by step: {local}.").format(k=num(g.exponent), verdict=_(g.verdict),
                                                                         local=local))
    st.latex(r"\text{steps}(n) \propto n^{k},\qquad k = \frac{\Delta \ln \text{steps}}{\Delta \ln n}"
             .replace(r"\text{steps}", textviews.latex_words(_("steps"))))
    missing = [(n, e) for n, e in zip(g.n, g.emerged, strict=True) if e is None]
    if missing:
        st.markdown(_n("{lengths} did not get there within {steps} steps: raise the step budget to measure it.",
                       "{lengths} did not get there within {steps} steps: raise the step budget to measure them.",
                       len(missing)).format(lengths=", ".join(f"n = {n}" for n, _e in missing), steps=g.steps))
    st.markdown(_("Published claims to compare with: Musat et al. (2025, arXiv 2511.01033) prove, for a minimal "
                  "model of this task, that the time until an induction head emerges grows **quadratically** with "
                  "the context length; Aoyama et al. (2025, arXiv 2511.16893) predict the formation point from the "
                  "batch size and the context size together. This page's model is not theirs (Adam, learned "
                  "positions, the loss on the second copy only), so the numbers above are what this setup does, "
                  "measured, to set against those claims."))


real_model_heads = cached(max_entries=2)(model.real_model_heads)


@section
def bridge(rh: model.RealHeads, link: str) -> None:
    """The real model's own induction and previous-token heads, measured with this page's two scores."""
    sep = i18n.list_separator()
    ind, prev = (sep.join(f"{head_name(h[:2])} ({num(h[2])})" for h in top) for top in (rh.top_induction,
                                                                                          rh.top_previous))
    layers = sorted({h[0] for h in rh.top_induction})
    st.markdown(_n("Measured now on SmolLM2-135M reading a random run of {period} token ids written twice ({n} "
                   "tokens): its top prefix-matching heads are {induction}, in layer {layers} of {n_layers}; its top "
                   "previous-token heads are {previous}. The same two scores as above, on a model trained on real "
                   "text.",
                   "Measured now on SmolLM2-135M reading a random run of {period} token ids written twice ({n} "
                   "tokens): its top prefix-matching heads are {induction}, in layers {layers} of {n_layers}; its top "
                   "previous-token heads are {previous}. The same two scores as above, on a model trained on real "
                   "text.", len(layers)).format(period=rh.period, n=rh.n_tokens, induction=ind,
                                                 layers=", ".join(map(str, layers)), previous=prev,
                                                 n_layers=rh.prefix_match.shape[0]))
    if all(p[0] < min(layers) for p in rh.top_previous):
        st.markdown(_("Every one of those previous-token heads sits in an earlier layer than every induction head: "
                      "the order the two-layer circuit needs."))
    else:
        st.markdown(_("Not every previous-token head sits before the induction heads here: a big model has many "
                      "ways to bring the previous token forward."))
    left, right = st.columns(2)
    charts.into(left)(tfig.head_scores_grid(rh.prefix_match, title=_("SmolLM2: prefix-match per head")),
                      key="tr_fig_real_prefix")
    charts.into(right)(tfig.head_scores_grid(rh.previous_token, title=_("SmolLM2: previous-token per head")),
                       key="tr_fig_real_previous")
    st.markdown(_("[Open these heads in “Inside a real model”]({link}) to see their maps on a repeated prompt.")
                .format(link=link))


