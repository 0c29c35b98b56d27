"""AppTest of "What made it say that?": the defaults and every sentence's numbers against the interventions run here,
a knockout that changes the top 5, the sweep and its graded guess, the patch map (and prompts of different lengths),
a shared link that reproduces the page, and bad links that warn."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from attention.heads import top_heads
from attention.llama import interventions as iv
from explorer.lessons import real_model as rm_lesson
from explorer.lessons.causes import model as M
from explorer.shell import controls, llm
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow
PAGE = "causes"


@pytest.fixture
def lm(door_model):
    """The model the page runs on (the door's: tiny SmolLM2 unless marked smollm2)."""
    return door_model


def z(at, key) -> np.ndarray:
    data = figures(at)[key]["data"][0]["z"]
    return np.array([[np.nan if v is None else v for v in row] for row in data], dtype=float)


def array(data) -> np.ndarray:
    """A Plotly data array as NumPy: a plain list, or Plotly's typed-array form ``{"dtype", "bdata"}``."""
    if isinstance(data, dict):
        return np.frombuffer(base64.b64decode(data["bdata"]), dtype=data["dtype"]).astype(float)
    return np.asarray(data, dtype=float)


def texts(at, kinds=("success", "warning", "info", "markdown", "error", "caption", "text")) -> str:
    return " ".join(str(e.value) for kind in kinds for e in getattr(at, kind))


def table(at, column: str, nth: int = 0):
    return [d.value for d in at.dataframe if column in d.value.columns][nth]


def predicted(lm, ids) -> tuple[int, str]:
    """The model's top next token after ``ids`` (the page's default answer) and its piece as the page writes it."""
    answer = int(lm.forward(ids).logits[-1].argmax())
    return answer, llm.visible_piece(llm.pieces(lm, [answer])[0])


def default_heads(lm, prompt: str = M.DEFAULT_PROMPT) -> list[str]:
    """The knockout's default: the 3 heads that push the prompt's answer most directly."""
    ids = lm.encode(prompt)
    att = iv.logit_attribution(lm, ids, predicted(lm, ids)[0])
    return [M.head_code(*h) for h in top_heads(att.heads, 3)]


@pytest.mark.smollm2  # the lesson's one page run on the real file: every sentence states SmolLM2's numbers
def test_defaults_state_what_the_numbers_say(lm):
    at = app_at(PAGE, query={"ca_induct": "true", "ca_patch": "true"}, timeout=600)  # both opened: they run on demand
    assert_clean(at)
    ids = lm.encode(M.DEFAULT_PROMPT)
    paris, rome = lm.encode(" Paris")[0], lm.encode(" Rome")[0]
    run = lm.forward(ids, keep_activations=True)
    assert int(run.logits[-1].argmax()) == paris
    said = texts(at)
    # the logit lens: the map's colours are the top token's probability at every block and position
    top = iv.logit_lens_top(lm, ids, 1)
    np.testing.assert_allclose(z(at, "ca_fig_lens"), top.probabilities[..., 0], rtol=1e-6)
    lens = iv.logit_lens(lm, ids)
    a = M.answer_by_layer(lens, paris)
    assert M.lens_claim(a, "`␣Paris`") in said and "becomes the most likely token only after the last block" in said
    np.testing.assert_allclose(array(figures(at)["ca_fig_answer_curve"]["data"][0]["y"]), a.probability, rtol=1e-9)
    # the attribution: the grid, the parts summed beside the logit, the head named
    att = iv.logit_attribution(lm, ids, paris)
    np.testing.assert_allclose(z(at, "ca_grid"), att.heads, rtol=1e-9)
    parts = table(at, "share of the logit")
    np.testing.assert_allclose(parts["share of the logit"][:5], [att.embedding, att.heads.sum(), att.mlps.sum(),
                                                                 att.total, att.logit], rtol=1e-9)
    assert f"The parts add up to **{att.total:.6f}**, the real logit is **{att.logit:.6f}**" in said
    assert "pushes `␣Paris` most directly is **L23H4**" in said
    # the knockout: by default the 3 heads that push the answer most directly, and a seeded random control
    assert at.multiselect(key="ca_heads").value == ["L23H4", "L29H1", "L29H2"]
    knocked = iv.knock_out(lm, ids, [(23, 4), (29, 1), (29, 2)])
    p_knocked = float(llm.probabilities(knocked)[paris])
    assert f"to **{p_knocked:.4f}**" in said and "The same number of random heads" in said
    # the repeated random prompt: the induction heads named, the loss risen
    assert "(L18H6, L17H4, L17H3)" in said and "Here the induction heads matter" in said
    # the sweep waits for the guess
    assert "ca_sweep_grid" not in figures(at)
    # patching: the map, the layers the fact moves between, and the head that carries it
    clean, corrupted = lm.encode(M.DEFAULT_CLEAN), lm.encode(M.DEFAULT_CORRUPTED)
    grid = iv.patch_residual_sweep(lm, clean, corrupted, paris, rome)
    np.testing.assert_allclose(z(at, "ca_fig_patch"), grid, rtol=1e-6, atol=1e-6)
    assert "**The fact moves between layers 23 and 24.**" in said
    assert at.slider(key="ca_layer").value == 23
    assert "Copying **L23H4**'s output alone" in said and "to **6.44**" in said
    links = table(at, "open in Inside a real model", -1)["open in Inside a real model"]
    assert list(links)[4] == controls.link(rm_lesson, rm_lesson.SIZES, prompt=M.DEFAULT_CLEAN, layer=23, head=4)
    assert "Honest notes" in said and "every other matrix is 4-bit (Q4_1, 79%)" in said


def test_a_knockout_changes_the_top_5(lm):
    at = app_at(PAGE, timeout=600)
    ids = lm.encode(M.DEFAULT_PROMPT)
    clean_top = list(table(at, "next token", 1)["next token"])
    at.multiselect(key="ca_heads").set_value(["L23H4", "L0H4", "L11H7"]).run()
    assert_clean(at)
    assert at.query_params["ca_heads"] == "L23H4,L0H4,L11H7"
    knocked = table(at, "next token", 2)
    logits = iv.knock_out(lm, ids, [(23, 4), (0, 4), (11, 7)])
    top, p = llm.top_tokens(logits)
    np.testing.assert_allclose(knocked["probability"], p, rtol=1e-6)
    assert list(knocked["next token"]) != clean_top
    at.radio(key="ca_ablation").set_value("mean").run()
    assert_clean(at)
    mean = iv.knock_out(lm, ids, [(23, 4), (0, 4), (11, 7)], ablation="mean")
    np.testing.assert_allclose(table(at, "next token", 2)["probability"], llm.top_tokens(mean)[1], rtol=1e-6)
    assert at.query_params["ca_ablation"] == "mean"
    # the top-k picker
    at.selectbox(key="ca_by").set_value("sink").run()
    at.button(key="ca_pick").click().run()
    stats = M.last_row_statistics(lm.forward(ids).attentions)
    picked = [M.head_code(*h) for h in top_heads(stats["sink"], 3)]
    assert at.multiselect(key="ca_heads").value == picked and "Carried over" not in texts(at)
    # a new prompt keeps the heads the learner picked, marked as picked for the old prompt (issue 49)
    at.text_area(key="ca_prompt").input("The capital of Italy is").run()
    assert_clean(at)
    assert at.multiselect(key="ca_heads").value == picked
    assert [w.value for w in at.warning] == [
        f"**Carried over:** these heads were picked for the prompt `{M.DEFAULT_PROMPT}` and the answer "
        f"`{predicted(lm, ids)[1]}`, not for this one. The numbers here are measured on this prompt; to knock out "
        "heads chosen for it, press “Pick the top k” or pick them again."]
    at.multiselect(key="ca_heads").set_value([]).run()
    assert_clean(at)
    assert "Pick heads to knock out" in texts(at) and "ca_heads" not in at.query_params


def test_the_sweep_grades_the_guess(lm):
    """The sweep and the grade recomputed from the core on the page's model (SmolLM2's own ranks, L0H4 2nd and L23H4
    first: test_model.py's test_the_sweep_ranks_smollm2s_heads)."""
    ids = lm.encode(M.DEFAULT_PROMPT)
    answer, label = predicted(lm, ids)
    sweep = iv.knockout_sweep(lm, ids, answer)
    guess = (0, 4) if M.grade_guess(sweep.effect, (0, 4)).rank > 1 else (1, 0)  # a wrong guess on this model
    g = M.grade_guess(sweep.effect, guess)
    assert g.rank > 1
    at = app_at(PAGE, timeout=600)
    at.selectbox(key="ca_guess").set_value(M.head_code(*guess)).run()
    at.button(key="ca_reveal").click().run()
    assert_clean(at)
    np.testing.assert_allclose(z(at, "ca_sweep_grid"), sweep.effect, rtol=1e-5, atol=1e-5)
    n = lm.config.n_layers * lm.config.n_heads
    said = texts(at)
    assert f"**{M.head_code(*guess)} ranks {g.rank} of {n}**: its knockout changes log p(`{label}`) by " \
           f"{g.effect:.3f}" in said
    best = M.head_code(*g.best)
    assert f"The head that matters most is **{best}**" in said
    assert "Rank correlation between the two over all heads" in said and "Jain & Wallace (2019)" in said
    at.selectbox(key="ca_guess").set_value(best).run()
    at.button(key="ca_reveal").click().run()
    assert f"**Right: {best} matters most.**" in [s.value for s in at.success][0]


def test_a_patch_map_needs_prompts_of_one_length(lm):
    at = app_at(PAGE, query={"ca_patch": "true"}, timeout=600)
    assert "ca_fig_patch" in figures(at)
    at.text_area(key="ca_corrupt").input("The capital of the United Kingdom is").run()
    assert_clean(at)
    assert "ca_fig_patch" not in figures(at)
    warned = [w.value for w in at.warning if "same number of tokens" in w.value]
    assert warned and "the clean one has 5, the corrupted one 7" in warned[0]
    shown = [t.value for t in at.text]
    assert "clean:     The (0) │ ␣capital (1) │ ␣of (2) │ ␣France (3) │ ␣is (4)" in shown
    assert any(t.startswith("corrupted: The (0) │ ␣capital (1) │ ␣of (2) │ ␣the (3) │ ␣United (4)") for t in shown)
    at.text_area(key="ca_corrupt").input("The capital of France is").run()
    assert f"Both prompts make the model predict `{predicted(lm, lm.encode(M.DEFAULT_CLEAN))[1]}`" in texts(at)


def test_a_shared_link_reproduces_the_page(lm):
    link = {"ca_prompt": "The capital of Germany is", "ca_heads": "L23H4,L29H1", "ca_ablation": "mean",
            "ca_seed": "7", "ca_clean": "The capital of Spain is", "ca_corrupt": "The capital of Japan is",
            "ca_layer": "22"}
    shared = app_at(PAGE, query=link, timeout=600)
    assert_clean(shared)
    assert not [w.value for w in shared.warning if "link" in w.value]
    by_hand = app_at(PAGE, timeout=600)
    by_hand.text_area(key="ca_prompt").input(link["ca_prompt"]).run()
    # the default heads are chosen again for the new prompt (issue 49: they stayed the previous prompt's)
    assert by_hand.multiselect(key="ca_heads").value == default_heads(lm, link["ca_prompt"])
    assert "Carried over" not in texts(by_hand)
    by_hand.multiselect(key="ca_heads").set_value(["L23H4", "L29H1"]).run()
    by_hand.radio(key="ca_ablation").set_value("mean").run()
    by_hand.number_input(key="ca_seed").set_value(7).run()
    by_hand.session_state["ca_patch"] = True  # the learner opens the patching (the link's prompts open it)
    by_hand.run()
    by_hand.text_area(key="ca_clean").input(link["ca_clean"]).run()
    by_hand.text_area(key="ca_corrupt").input(link["ca_corrupt"]).run()
    by_hand.slider(key="ca_layer").set_value(22).run()
    assert_clean(by_hand)
    for key in ("ca_heads", "ca_ablation"):  # synced by the page (the bound widgets' keys: the e2e test reads the URL)
        assert by_hand.query_params[key] == link[key], key
    assert figures(shared) == figures(by_hand)
    assert texts(shared) == texts(by_hand)
    assert "L23H4, L29H1 (mean ablation)" in texts(shared)


def test_bad_links_warn_and_open_at_the_defaults(lm):
    at = app_at(PAGE, query={"ca_heads": "L99H1,<b>x</b>", "ca_ablation": "half", "ca_answer": "7",
                             "ca_guess": "L1H99", "ca_k": "1e2", "ca_by": "[x](y)"}, timeout=600)
    assert_clean(at)
    warned = " ".join(w.value for w in at.warning)
    for key in ("ca_heads", "ca_ablation", "ca_answer", "ca_guess", "ca_k", "ca_by"):
        assert f"`{key}=" in warned or f"`{key}`" in warned, (key, warned)
    assert "`ca_heads=L99H1,<b>x</b>`" in warned  # shown as code, not markup
    assert at.multiselect(key="ca_heads").value == default_heads(lm)
    assert at.radio(key="ca_ablation").value == "zero" and at.number_input(key="ca_k").value == 3
    assert at.selectbox(key="ca_guess").value == "none" and at.selectbox(key="ca_answer").value == "0"


def test_the_other_grade_of_the_sweep_is_shown_in_every_language(lm):
    """The manifest's ``TEXT_STATES["sweep"]`` grades a fixed guess (L0H4) in every language: one of the two grades
    on the served model. Here the other one (the best head if L0H4 is not, else another head) is checked in every
    language the same way, so both "Right: … matters most" and "… ranks k of n" are read in pt and tr."""
    from explorer.lessons import causes
    from tests.lessons.test_languages import check_every_language

    fixed = causes.TEXT_STATES["sweep"][0]["ca_guess"]
    ids = lm.encode(M.DEFAULT_PROMPT)
    best = M.head_code(*M.grade_guess(iv.knockout_sweep(lm, ids, predicted(lm, ids)[0]).effect, (0, 0)).best)
    other = best if fixed != best else next(M.head_code(0, h) for h in range(lm.config.n_heads)
                                            if M.head_code(0, h) != best)

    def reveal(at, lang):
        at.button(key="ca_reveal").click().run()
        return at

    runs = check_every_language(PAGE, {"ca_guess": other}, act=reveal)
    said = texts(runs["en"])
    assert (f"**Right: {best} matters most.**" in said) == (other == best)
    assert (f"**{other} ranks " in said) == (other != best)
