"""Figures of "What made it say that?": clickable grids, escaped tokens, hover labels that name the cell."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.lessons.causes import charts as C
from explorer.lessons.causes import model as M
from explorer.shell import i18n


def test_lens_map_prints_the_top_token_escaped_and_hovers_it():
    pieces = [["<b>", "␣cat"], ["x", "[a](b)"], ["y", "z"]]
    fig = C.lens_map(pieces, np.array([[0.5, 0.25], [1.0, 0.0], [0.1, 0.2]]), ["The (0)", "␣cat (1)"], title="lens")
    heat = fig.data[0]
    assert heat.text[0][0] == "&lt;b&gt;" and heat.text[1][1] == "[a](b)"
    assert heat.customdata[0][0][2] == "&lt;b&gt; 0.500" and heat.customdata[2][1][0] == "block 2"
    assert (heat.zmin, heat.zmax) == (0, 1)
    many = C.lens_map([["a"] * 12] * 2, np.zeros((2, 12)), [f"t ({i})" for i in range(12)])
    assert many.data[0].text is None  # too many positions for text: hover only
    with pytest.raises(ValueError):
        C.lens_map([["a"]], np.zeros((1, 2)), ["a (0)", "b (1)"])


def test_answer_curve_and_component_bars():
    fig = C.answer_curve(np.array([0.0, 0.1, 0.9]), np.array([9, 3, 1]), "“<b>”", title="p")
    (line,) = fig.data
    assert list(line.x) == [0, 1, 2] and "&lt;b&gt;" in line.hovertemplate and line.customdata[1][1] == "3"
    bars = C.component_bars(-0.5, np.arange(30.0))
    assert len(bars.data[0].y) == 31 and bars.data[0].customdata[0][0] == "emb"
    assert bars.data[0].customdata[30][0] == "MLP 29"


def test_scatter_names_every_head_and_marks_the_highlighted():
    s, e = np.arange(6.0).reshape(2, 3), -np.arange(6.0).reshape(2, 3)
    fig = C.scatter_effect(s, e, x_title="x <i>", y_title="y", highlight=[(1, 2)])
    (dots,) = fig.data
    assert dots.customdata[5][0] == "L1H2" and list(dots.customdata[5][3:]) == [1, 2]
    assert dots.marker.color[5] == C.PICK_COLOR and dots.marker.color[0] == C.BLUE
    assert fig.layout.xaxis.title.text == "x &lt;i&gt;"
    with pytest.raises(ValueError):
        C.scatter_effect(s, e[:1], x_title="", y_title="")


def test_patch_map_and_head_bars():
    grid = np.array([[-6.0, 7.0], [-6.0, -5.0]])
    fig = C.patch_map(grid, ["a (0)", "b (1)"], clean=7.3, corrupted=-6.0)
    heat = fig.data[0]
    assert heat.zmid == 0 and heat.zmax == pytest.approx(7.3) and heat.zmin == pytest.approx(-7.3)
    bars = C.head_bars(np.array([-5.0, 6.4, -9.1]), clean=7.3, corrupted=-6.0, y_title="logit diff")
    assert list(bars.data[0].marker.color) == [C.BLUE, C.PICK_COLOR, C.BLUE]
    assert [a.text for a in bars.layout.annotations] == ["clean", "corrupted"]
    assert [s.y0 for s in bars.layout.shapes] == [7.3, -6.0]


def test_loss_bars():
    fig = C.loss_bars(["none", "induction", "random <1>"], [3.2, 6.5, 3.4], [0.5, 0.1, 0.45])
    (bar,) = fig.data
    assert list(bar.text) == ["3.20 nats", "6.50 nats", "3.40 nats"] and bar.customdata[1][2] == "10%"
    assert list(fig.layout.xaxis.ticktext)[2] == "random &lt;1&gt;"


def test_lens_map_prints_every_top_token_at_a_size_a_phone_fits_cut_when_long():
    """Issue 47: SmolLM2's lens on "The capital of France is" (31 streams, 5 positions, "<filename>" the longest top
    token) printed no token at 580 px nor on a phone (text drawn only from 640 px). Now every cell prints its token
    at any width, cut with "…" to what a phone's cell holds; the hover keeps it whole; 11 positions: hover only."""
    from explorer.shell.charts import cell_text_size

    top = [["<filename>", "␣capital", "␣of", "␣France", "␣is"]] * 31
    fig = C.lens_map(top, np.full((31, 5), 0.5), [f"t ({i})" for i in range(5)])
    heat = fig.data[0]
    assert heat.textfont.family is None and heat.textfont.size in (10, 12)  # no width hides it (app.css)
    shown = [t.replace("&lt;", "<").replace("&gt;", ">") for t in heat.text[0]]
    assert shown[2] == "␣of" and shown[4] == "␣is" and shown[0].endswith("…")  # short ones whole, long ones cut
    assert all(s == whole or (whole.startswith(s[:-1]) and len(s) >= C.LENS_CELL_CHARS_MIN)
               for s, whole in zip(shown, top[0], strict=True))
    assert cell_text_size(shown, 5, C.block_labels(31), colorbar_chars=0) is not None  # fits 390 px
    assert heat.customdata[0][0][2] == "&lt;filename&gt; 0.500"  # whole in the hover
    assert heat.colorbar.orientation == "h"  # below: the cells get the side bar's width
    eleven = C.lens_map([["a"] * 11] * 3, np.full((3, 11), 0.5), [f"t ({i})" for i in range(11)])
    assert eleven.data[0].text is None


def test_the_charts_words_keep_their_letters():
    labels = ["İzmir (0)", "ılık (1)"]  # Turkish dotted capital and dotless small i in token labels
    with i18n.using("tr"):
        lens = C.lens_map([["İ", "ı"], ["ş", "ğ"]], np.array([[0.5, 0.25], [1.0, 0.125]]), labels,
                          title="son konumda p(“İstanbul”)")
        bars = C.loss_bars(["devre dışı bırakma yok", "ılık"], [3.2, 6.5], [0.9, 0.1])
        curve = C.answer_curve(np.array([0.0, 0.5]), np.array([3, 1]), "“İ”")
    assert list(lens.layout.xaxis.ticktext) == labels and list(lens.data[0].text[0]) == ["İ", "ı"]
    assert lens.layout.title.text == "son konumda p(“İstanbul”)" and lens.layout.yaxis.title.text == "bloğa giren akış"
    assert list(lens.layout.yaxis.ticktext)[:2] == ["blok 0", "blok 1"]
    assert list(bars.data[0].text) == ["3,20 nat", "6,50 nat"] and bars.data[0].customdata[0][2] == "%90"
    assert list(bars.layout.xaxis.ticktext) == ["devre dışı bırakma yok", "ılık"]
    assert curve.layout.separators == ",." and "(1 = son bloktan sonra)" in curve.layout.xaxis.title.text
    with i18n.using("pt"):
        parts = C.component_bars(0.5, [0.25, 1.5])
        head_bars = C.head_bars(np.array([1.0, 2.5]), clean=3.0, corrupted=-1.0, y_title="dif. de logit")
        formula = M.STATISTICS["sink"].last_formula
    assert parts.layout.yaxis.title.text == "parcela do logit" and parts.layout.xaxis.title.text == "parte"
    assert [a.text for a in head_bars.layout.annotations] == ["limpo", "corrompido"]
    assert head_bars.data[0].customdata == ("1,00", "2,50")
    # one row formula in every language and lesson (attention.heads), on the last row
    assert formula == M.STATISTICS["sink"].last_formula == r"w_{i,0}\quad (i = n-1)"
