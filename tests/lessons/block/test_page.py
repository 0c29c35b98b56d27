"""AppTest of the transformer-block page on the door's model (tiny SmolLM2): the page draws the numbers of
``model.measure``, the block slider and "Next block" change the block's numbers, an empty prompt keeps the last
result, the check-yourself questions are graded from the live numbers."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.block import model as M
from explorer.shell import i18n, llm
from tests.apptest_utils import app_at, assert_clean, figure_array, figures

PAGE = "block"


def table(at, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def block_values(at) -> list[str]:
    """The block's numbers, table after table (one small table per step)."""
    return [v for d in at.dataframe if "quantity" in d.value.columns for v in d.value["value"]]


def expected_values(lm, ids, layer, m) -> list[str]:
    return [i18n.significant(v, 4) for *_, v in M.inside_rows(M.inside(lm, ids, layer, M.measure), m.eps)]


@pytest.mark.slow
def test_page_block_slider_bad_prompt_and_quiz(door_model):
    lm = door_model
    at = app_at(PAGE, timeout=120)
    assert_clean(at)
    ids = tuple(lm.encode(M.DEFAULT_PROMPT, truncate=True)[: llm.PROMPT_MAX_TOKENS])
    m = M.measure(lm, ids)
    # the stream chart: the norms entering each block and each block's two writes
    fig = figures(at)["blk_fig_stream"]
    np.testing.assert_allclose(figure_array(fig["data"][2]["y"]), m.stream_norms, rtol=1e-6)
    np.testing.assert_allclose(figure_array(fig["data"][1]["y"]), m.write_norms["mlp"], rtol=1e-6)
    assert M.stream_claim(m) in [i.value for i in at.info]
    assert M.writes_claim(m) in [i.value for i in at.info]
    assert M.loss_claim(m) in [s.value for s in at.success]
    np.testing.assert_allclose(figure_array(figures(at)["blk_fig_loss"]["data"][0]["y"]), m.losses, rtol=1e-6)
    assert list(table(at, "next token")["id"]) == list(m.top_ids)
    # block 0, then "Next block" opens block 1 with other numbers (recomputed here from the core)
    at0 = block_values(at)
    assert at0 == expected_values(lm, ids, 0, m)
    at.button(key="blk_next").click().run()
    assert at.slider(key="blk_block").value == 1
    assert block_values(at) == expected_values(lm, ids, 1, m) != at0
    at.slider(key="blk_block").set_value(lm.config.n_layers - 1).run()
    at.button(key="blk_next").click().run()
    assert at.slider(key="blk_block").value == 0  # after the last block, back to the first
    # the quiz: "Check" with no guess asks for one; the right block and the right side; a changed guess hides the grade
    at.button(key="blk_check").click().run()
    assert "Choose an answer first." in [w.value for w in at.warning] and not graded(at)
    right = M.answers(m)
    guess(at, "blk_guess_block").set_value(right["part_block"])
    guess(at, "blk_guess_cancel").set_value(right["cancel"])
    at.button(key="blk_check").click().run()
    assert_clean(at)
    assert "**2 of 2 right.**" in [s.value for s in at.success] and M.cancel_claim(m) in [x.value for x in at.markdown]
    guess(at, "blk_guess_block").set_value((right["part_block"] + 1) % lm.config.n_layers).run()
    assert not graded(at)  # not re-graded silently
    assert any("changed an answer" in c.value for c in at.caption)
    # an empty prompt: a warning, and the page keeps reading the last prompt
    at.text_area(key="blk_prompt").input("").run()
    assert_clean(at)
    assert any("empty" in w.value for w in at.warning)
    assert M.stream_claim(m) in [i.value for i in at.info]
    # a one-token prompt: no loss to score, the first position called special; a new prompt clears the guesses
    at.text_area(key="blk_prompt").input("Hello").run()
    assert_clean(at)
    assert any("one-token prompt" in i.value for i in at.info)
    assert any("position 0" in w.value for w in at.warning)
    assert guess(at, "blk_guess_block").value is None and guess(at, "blk_guess_cancel").value is None
    assert not graded(at) and not any("changed an answer" in c.value for c in at.caption)


def graded(at) -> bool:
    """Whether a grade ("… of … right.") is on the page."""
    return any(" right.**" in e.value for e in list(at.success) + list(at.info))


def guess(at, prefix: str):
    """The check-yourself widget whose key starts with ``prefix`` (its key carries the guesses' edition)."""
    (widget,) = [w for w in list(at.selectbox) + list(at.radio) if (w.key or "").startswith(prefix)]
    return widget
