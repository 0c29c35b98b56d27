"""Page: check yourself — the lessons' questions, graded and explained with the numbers the app computes.

Every answer is stored as a code (an option's key, a step's code, a number, a key position) with what its reveal
needs; the feedback is graded again from them each time it is shown, so it is in the run's language, and changing
the language keeps every answer and its grade (issue 31).
"""

from collections.abc import Callable

import pandas as pd
import streamlit as st

from explorer.lessons.quiz import CONTROLS
from explorer.lessons.quiz import draw as sections
from explorer.lessons.quiz import model as quiz
from explorer.shell import controls
from explorer.shell.i18n import N_, translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

ss = st.session_state
RESULTS = "quiz_results"  # {question id: answered correctly}
QUESTIONS = {
    "order": N_("The order of the operations"),
    "scale": N_("Why divide by √d_k"),
    "qk": N_("Which vectors make the scores"),
    "head": N_("The width of one head"),
    "causal": N_("The causal mask"),
    "cost": N_("Cost and sequence length"),
    "topkey": N_("Predict: the key a query attends to most"),
    "growth": N_("Predict: the top weight when d_k grows"),
}
GRADERS = {  # question id -> its grade from the stored answer, in the run's language
    "order": lambda done: quiz.grade_order(done["picked"]),
    **{qid: (lambda done, q=q: quiz.grade_choice(q, done["picked"])) for qid, q in quiz.CHOICES.items()},
    "head": lambda done: quiz.grade_head_width(done["picked"]),
    "topkey": lambda done: quiz.grade_top_key(done["reveal"], done["picked"]),
    "growth": lambda done: quiz.grade_growth(done["reveal"], done["picked"]),
}
RIGHT_ICON, WRONG_ICON = ":material/check_circle:", ":material/cancel:"  # material icons: no emoji font needed
ss.setdefault(RESULTS, {})


def fb_key(qid: str) -> str:
    return f"quiz_{qid}_feedback"


def check(qid: str, picked, reveal: Callable[[], dict] = dict) -> None:
    """Grade and store the answer ``picked`` (its code) with what its reveal needs, ``reveal()``, computed only now,
    after the learner committed; ``None`` (nothing chosen yet) asks for an answer instead."""
    if picked is None:
        ss[f"quiz_{qid}_empty"] = True
        return
    answer = {"picked": picked, **reveal()}
    ss[RESULTS][qid] = GRADERS[qid](answer).correct
    ss[fb_key(qid)] = answer


def retry(qid: str) -> None:
    """Forget the answer to one question (its form, drawn again, starts empty)."""
    for key in (fb_key(qid), f"quiz_{qid}_empty"):
        ss.pop(key, None)
    ss[RESULTS].pop(qid, None)


def reset_all() -> None:
    for qid in QUESTIONS:
        retry(qid)


def picked_code(key: str, codes) -> object | None:
    """The answer widget ``key``'s value if it is one of ``codes``, else ``None`` (nothing chosen yet).

    A choice widget sends back the *label* it shows; a label the run's options no longer have (one shown in the
    language before a switch) comes back as that text, which is not an answer: the learner picks again.
    """
    value = ss.get(key)
    return value if value in codes else None


def check_order() -> None:
    picked = [picked_code(f"quiz_order_{p}", quiz.STEPS) for p in range(1, len(quiz.STEPS) + 1)]
    check("order", None if None in picked else picked)


def answered(qid: str) -> dict | None:
    return ss.get(fb_key(qid))


def show_feedback(qid: str, empty_hint: str) -> dict | None:
    """The feedback box of a question (graded from its stored answer, in the run's language); returns the stored
    answer or ``None``."""
    if ss.pop(f"quiz_{qid}_empty", False):
        st.warning(empty_hint, icon="👆")
    done = answered(qid)
    if done is None:
        return None
    fb = GRADERS[qid](done)
    (st.success if fb.correct else st.error)(fb.message, icon=RIGHT_ICON if fb.correct else WRONG_ICON)
    return done


def try_again(qid: str) -> None:
    st.button(_("↺ Try again"), key=f"quiz_{qid}_retry", on_click=retry, args=(qid,))


def option_line(label: str, right: bool, picked: bool) -> str:
    """One option of an answered question as a Markdown list item (our own text, never a user's)."""
    mark = (f":green[{RIGHT_ICON}]" if right else f":red[{WRONG_ICON}]" if picked
            else ":gray[:material/radio_button_unchecked:]")
    return f"- {mark} " + (_("**{option}** ← your answer").format(option=label) if picked else label)


def choice_question(q: quiz.Choice, number: int) -> dict | None:
    """A multiple-choice question in a form; after "Check", the options with the right one marked."""
    st.subheader(f"{number} · {_(QUESTIONS[q.qid])}")
    st.markdown(_(q.prompt))
    done = answered(q.qid)
    if done is None:
        with st.form(f"quiz_form_{q.qid}", border=False):
            st.radio(_("Your answer"), list(q.options), index=None, format_func=q.label, key=f"quiz_{q.qid}_answer",
                     label_visibility="collapsed")
            st.form_submit_button(_("Check"), key=f"quiz_{q.qid}_check", on_click=lambda: check(
                q.qid, picked_code(f"quiz_{q.qid}_answer", q.options)))
    else:
        st.markdown("\n".join(option_line(q.label(o), o == q.answer, o == done["picked"]) for o in q.options))
    return show_feedback(q.qid, _("Pick an answer first."))


# ---------------------------------------------------------------------------------------------

st.title(_("Check yourself"))
st.markdown(_(
    "The lessons' questions, answered here and graded with the numbers the app computes for **your** "
    "settings (the sidebar's sentence, seed, d_model and d_k). Nothing is shown before you press **Check**; "
    "every question can be tried again."
))

settings = controls.lesson_settings(_("to get feedback from its numbers"))
labels, n = settings.labels, settings.n
st.caption(settings.caption())

results = ss[RESULTS]
with st.container(border=True, key="quiz_scorebox"):
    c1, c2 = st.columns([3, 1], vertical_alignment="center")
    c1.markdown(_("### Score: {right} / {answered}").format(right=sum(results.values()), answered=len(results)))
    c1.caption(_("{answered} of {total} questions answered · kept for this session · a retried question counts once, "
                 "with its latest answer").format(answered=len(results), total=len(QUESTIONS)))
    c2.button(_("Start over"), key="quiz_reset", on_click=reset_all, disabled=not results)

# 1 · order -----------------------------------------------------------------------------------
st.subheader(f"1 · {_(QUESTIONS['order'])}")
st.markdown(_("In what order are the operations applied to **one input word**? Choose a step for each position."))
done = answered("order")
if done is None:
    with st.form("quiz_form_order", border=False):
        cols = st.columns(len(quiz.STEPS))
        for p, col in enumerate(cols, start=1):
            col.selectbox(_("Step {position}").format(position=p), quiz.STEPS_SHOWN, index=None,
                          format_func=quiz.step_label, key=f"quiz_order_{p}", placeholder=_("choose…"))
        st.form_submit_button(_("Check"), key="quiz_order_check", on_click=check_order)
else:
    marks = ["✓" if a == b else "✗" for a, b in zip(done["picked"], quiz.STEPS, strict=True)]
    st.dataframe(pd.DataFrame({_("step"): range(1, len(quiz.STEPS) + 1),
                               _("your order"): [quiz.step_label(c) for c in done["picked"]],
                               _("right order"): [quiz.step_label(c) for c in quiz.STEPS], "": marks}),
                 hide_index=True, width="stretch")
if show_feedback("order", _("Choose a step for every position first.")):
    st.markdown(_("**The five steps on your sentence, for one word:**"))
    word = controls.draw(CONTROLS["order_word"], {"labels": labels})
    sections.order_reveal(settings, word)
    try_again("order")

# 2 · scale -----------------------------------------------------------------------------------
if choice_question(quiz.SCALE, 2):
    sections.scale_reveal(settings)
    try_again("scale")

# 3 · queries and keys ------------------------------------------------------------------------
if choice_question(quiz.QK, 3):
    sections.qk_reveal(settings)
    try_again("qk")

# 4 · head width ------------------------------------------------------------------------------
st.subheader(f"4 · {_(QUESTIONS['head'])}")
st.markdown(_n("A model has d_model = {d_model} and {n_heads} attention head. How wide is one head (d_head)?",
               "A model has d_model = {d_model} and {n_heads} attention heads. How wide is one head (d_head)?",
               quiz.HEAD_N_HEADS).format(d_model=quiz.HEAD_D_MODEL, n_heads=quiz.HEAD_N_HEADS))
done = answered("head")
if done is None:
    with st.form("quiz_form_head", border=False):
        # Negative and zero answers are accepted, then explained (a min_value of 1 made the box refuse them silently).
        st.number_input("d_head", min_value=-1_000_000, max_value=1_000_000, value=None, step=1,
                        key="quiz_head_answer",
                        placeholder=_("a whole number"))
        st.form_submit_button(_("Check"), key="quiz_head_check",
                              on_click=lambda: check("head", ss.get("quiz_head_answer")))
else:
    st.markdown(_("Your answer: **{answer}**").format(answer=int(done["picked"])))
if show_feedback("head", _("Type a number first.")):
    sections.head_reveal(settings.d_model)
    try_again("head")

# 5 · causal mask -----------------------------------------------------------------------------
if choice_question(quiz.CAUSAL, 5):
    sections.causal_reveal(settings, controls.color_scale())
    try_again("causal")

# 6 · cost ------------------------------------------------------------------------------------
if choice_question(quiz.COST, 6):
    sections.cost_reveal(n, settings.d_k)
    try_again("cost")

# 7 · predict: top key ------------------------------------------------------------------------
st.subheader(f"7 · {_(QUESTIONS['topkey'])}")
st.markdown(_("Pick a query word, look at its query vector and the keys, then predict: **which key will it attend "
              "to most?** (The score of a key is the dot product q · k; the softmax keeps the scores' order.)"))
done = answered("topkey")
query = controls.draw(CONTROLS["topkey_query"], {"labels": labels}, disabled=done is not None,
                      help=_("Press “Try again” to ask about another word.") if done else None)
sections.topkey_clue(settings, query)
if done is None:
    with st.form("quiz_form_topkey", border=False):
        st.selectbox(_("Your prediction: the key it attends to most"), range(n), index=None,
                     format_func=lambda k: labels[k], key="quiz_topkey_answer", placeholder=_("choose a key…"))
        st.form_submit_button(_("Check"), key="quiz_topkey_check", on_click=lambda: check(
            "topkey", picked_code("quiz_topkey_answer", range(n)),
            lambda: {"reveal": quiz.reveal_top_key(controls.sentence_steps(settings), query), "settings": settings}))
if done := show_feedback("topkey", _("Choose a key first.")):
    if done["settings"] != settings:
        st.info(_("The sidebar changed since you answered; this reveal is for the settings you answered with. "
                  "Press “Try again” to answer for the current ones."))
    sections.topkey_reveal(done["settings"], done["reveal"].query, done["picked"])
    try_again("topkey")

# 8 · predict: d_k growth ---------------------------------------------------------------------
st.subheader(f"8 · {_(QUESTIONS['growth'])}")
big = settings.d_k * quiz.GROWTH_FACTOR
st.markdown(_n(
    "Your settings: d_k = {d_k}, and your sentence gives each query {n} key. Suppose d_k grows to **{big}** and the "
    "scores are **not** divided by √d_k. What happens to the largest attention weight of a query (on average, for "
    "queries and keys with unit-variance components)?",
    "Your settings: d_k = {d_k}, and your sentence gives each query {n} keys. Suppose d_k grows to **{big}** and the "
    "scores are **not** divided by √d_k. What happens to the largest attention weight of a query (on average, for "
    "queries and keys with unit-variance components)?", n).format(d_k=settings.d_k, n=n, big=big))
done = answered("growth")
if done is None:
    with st.form("quiz_form_growth", border=False):
        st.radio(_("Your prediction"), quiz.GROWTH_OPTIONS, index=None, format_func=quiz.growth_label,
                 key="quiz_growth_answer", label_visibility="collapsed")
        st.form_submit_button(_("Check"), key="quiz_growth_check", on_click=lambda: check(
            "growth", picked_code("quiz_growth_answer", quiz.GROWTH_OPTIONS),
            lambda: {"reveal": sections.growth(settings.d_k, n, settings.seed), "settings": settings}))
else:
    st.markdown(_("Your prediction: **{prediction}**").format(prediction=quiz.growth_label(done["picked"])))
if done := show_feedback("growth", _("Pick a prediction first.")):
    rv = done["reveal"]
    if done["settings"] != settings:
        st.info(_("The sidebar changed since you answered; this reveal is for the settings you answered with."))
    sections.growth_reveal(rv.d_k[0], rv.n_keys, rv.seed)
    try_again("growth")
