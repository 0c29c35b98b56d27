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
    return list(table(at, "quantity")["value"])


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
    # the quiz: the right block and the right side of the mark
    right = M.answers(m)
    at.selectbox(key="blk_guess_mlp").set_value(right["mlp_block"])
    at.radio(key="blk_guess_ppl").set_value(right["perplexity"])
    at.button(key="blk_check").click().run()
    assert_clean(at)
    assert "**2 of 2 right.**" in [s.value for s in at.success]
    # an empty prompt: a warning, and the page keeps reading the last prompt
    at.text_area(key="blk_prompt").input("").run()
    assert_clean(at)
    assert any("empty" in w.value for w in at.warning)
    assert M.stream_claim(m) in [i.value for i in at.info]
    # a one-token prompt: no loss to score, one question left
    at.text_area(key="blk_prompt").input("Hello").run()
    assert_clean(at)
    assert any("one-token prompt" in i.value for i in at.info)
    assert "blk_guess_ppl" not in [r.key for r in at.radio]
