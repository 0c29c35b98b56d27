"""Issue 18, item 4: the sidebar's colour scale (``?color_scale=fixed|map|row``) reaches every attention-weight map.

AppTests of the whole app: a link value sets the scale; every lesson's maps of attention weights
follow it (colour bar, outline of each row's largest weight), and their hover keeps the true weights.
Figure-level rules are tested in ``tests/shell/test_color_scale.py``.
"""

from __future__ import annotations

import pytest

from explorer.shell.settings import Settings
from tests.apptest_utils import app_at, assert_clean, figures

pytestmark = pytest.mark.slow  # whole-app runs, a few seconds each

OUTLINE = "largest weight of the row"
# The maps of attention weights each lesson draws at its defaults (figure keys).
WEIGHT_MAPS = {
    "walkthrough": ["walk_fig_weights"],
    "lookup": ["lookup_fig_matrix", "lookup_fig_hard_matrix"],
    "multihead": ["mh_fig_heads", "mh_fig_mean", "mh_fig_query_heads"],
    "causal": ["causal_fig_side_bidirectional", "causal_fig_side_causal", "causal_fig_weights"],
    "two_sentences": ["two_fig_weights_a", "two_fig_weights_b", "two_fig_repeat_rows"],
    "real_model": ["rm_fig_head", "rm_fig_layer_mean", "rm_fig_group_0", "rm_fig_group_1", "rm_fig_group_2",
                   "rm_fig_weights"],
    "kv_cache": ["kv_fig_new_row"],
    "training": ["tr_fig_untrained_0_0", "tr_fig_untrained_1_1"],
}
OPEN_WITH = {"real_model": {"rm_steps": "true"}}  # its six steps (rm_fig_weights) are drawn while their expander's open


def colorbar(fig: dict) -> dict:
    """The colour bar of a figure: its heat map's, or the shared colour axis' (a grid of heads)."""
    axis = fig["layout"].get("coloraxis")
    return axis["colorbar"] if axis else fig["data"][0]["colorbar"]


def scale_of(fig: dict) -> str:
    """Which colour scale a weight map is drawn on, read from the figure alone."""
    bar = colorbar(fig)
    if bar["title"]["text"] == "÷ row max":
        return "row"
    assert any(str(t).startswith("uniform 1/") for t in bar["ticktext"]), bar  # the uniform level is marked
    heat = fig["data"][0]
    top = fig["layout"]["coloraxis"]["cmax"] if "coloraxis" in fig["layout"] else heat["zmax"]
    return "fixed" if top == 1.0 else "map"


@pytest.mark.parametrize("page", list(WEIGHT_MAPS))
@pytest.mark.parametrize("scale", ["map", "row"])
def test_the_link_value_colours_every_weight_map_of_the_lesson(page, scale):
    at = app_at(page, query={"color_scale": scale, "sentence": "the dog saw the cat near the dog",
                             **OPEN_WITH.get(page, {})})
    assert_clean(at)
    assert not at.warning or all("color_scale" not in w.value for w in at.warning)
    assert at.sidebar.radio(key="color_scale").value == scale
    figs = figures(at)
    for key in WEIGHT_MAPS[page]:
        fig = figs[key]
        names = [tr.get("name") for tr in fig["data"]]
        assert OUTLINE in names, f"{page}: {key} has no outline of the rows' largest weights"
        got = scale_of(fig)
        # On the map scale a map whose largest weight is exactly 1 (a one-hot row) looks as on [0, 1].
        assert got == scale or (scale, got) == ("map", "fixed"), f"{page}: {key} is on {got}, not {scale}"


def test_the_default_is_fixed_and_a_bad_link_value_warns():
    at = app_at("causal", query={"color_scale": "log"})
    assert any("color_scale=log" in w.value and "fixed, map, row" in w.value for w in at.warning)
    fig = figures(at)["causal_fig_weights"]
    assert scale_of(fig) == "fixed" and fig["data"][0]["zmax"] == 1.0


def test_row_scale_hover_and_cell_text_show_the_true_weights():
    at = app_at("causal", query={"color_scale": "row"})
    heat = figures(at)["causal_fig_side_bidirectional"]["data"][0]
    z = heat["z"]
    assert max(float(v) for v in z[0] if v is not None) == 1.0  # colours: row 0 relative to its largest weight
    weights = Settings(("The", "cat", "sat", "on", "the", "mat"), 8, 4, 42, "lesson", False).steps().weights
    shown = [[cell[2] for cell in row] for row in heat["customdata"]]  # the hover's value of every cell
    assert shown == [[f"{w:.3f}" for w in row] for row in weights]
    assert heat["text"] == shown  # and the cells' text


def test_the_quiz_reveal_follows_the_scale():
    at = app_at("quiz", query={"color_scale": "row"})
    radio = at.radio(key="quiz_causal_answer")
    radio.set_value(radio.options[0])
    at.button(key="quiz_causal_check").click().run()
    assert_clean(at)
    fig = figures(at)["quiz_fig_causal"]
    assert scale_of(fig) == "row" and OUTLINE in [tr.get("name") for tr in fig["data"]]
