"""Figure builders of the multi-head page: orientation, head blocks, shared ranges, escaping, payload."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.lessons.multihead import charts as M
from explorer.lessons.multihead import charts as mhfig
from explorer.lessons.multihead import model as draw
from explorer.shell import i18n
from explorer.shell.charts import heatmap

LABELS = ["The (0)", "cat (1)", "sat (2)", "on (3)", "the (4)", "mat (5)"]


def heatmaps(fig: go.Figure) -> list:
    return [t for t in fig.data if isinstance(t, go.Heatmap)]


def weights(h: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.ones(n), size=(h, n))  # [h, n, n], rows sum to 1


# --- sampling ------------------------------------------------------------------------------


def test_sample_indices():
    np.testing.assert_array_equal(M.sample_indices(8), np.arange(8))
    np.testing.assert_array_equal(M.sample_indices(64), np.arange(64))
    idx = M.sample_indices(512)
    assert len(idx) == 64 and idx[0] == 0 and (np.diff(idx) == 8).all()
    assert len(M.sample_indices(100)) <= 64 and M.sample_indices(100)[-1] < 100


# --- W_q with head blocks --------------------------------------------------------------------


def test_blocked_heatmap_small_is_exact_and_oriented():
    W = np.arange(64, dtype=float).reshape(8, 8)
    fig = M.blocked_heatmap(W, 2, title="W_q")
    (hm,) = heatmaps(fig)
    np.testing.assert_array_equal(np.array(hm.z, dtype=float), W)  # z[0][0] is row 0, column 0
    assert list(hm.x) == list(range(8)) and fig.layout.yaxis.autorange == "reversed"
    assert hm.customdata is not None and "head 1" in hm.customdata[0][5][1]  # column 5 belongs to head 1
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(b.x0, b.x1) for b in bands] == [(-0.5, 3.5), (3.5, 7.5)]
    assert bands[0].fillcolor != bands[1].fillcolor
    lines = [s for s in fig.layout.shapes if s.type == "line"]
    assert [ln.x0 for ln in lines] == [3.5]  # one boundary between two heads
    assert [a.text for a in fig.layout.annotations] == ["head 0", "head 1"]


def test_blocked_heatmap_narrow_heads_get_short_labels():
    fig = M.blocked_heatmap(np.ones((8, 8)), 8)
    assert [a.text for a in fig.layout.annotations] == [f"h{h}" for h in range(8)]
    assert len([s for s in fig.layout.shapes if s.type == "rect"]) == 8


def test_blocked_heatmap_rows_for_w_o():
    W = np.random.default_rng(1).normal(size=(8, 8))
    fig = M.blocked_heatmap(W, 4, block_axis="rows")
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert [(b.y0, b.y1) for b in bands] == [(-0.5, 1.5), (1.5, 3.5), (3.5, 5.5), (5.5, 7.5)]
    assert all(b.xref == "paper" and b.x0 > 1 for b in bands)


@pytest.mark.parametrize("block_axis", ["columns", "rows"])
def test_blocked_heatmap_bands_are_wide_enough_for_their_labels_at_any_size(block_axis):
    """Issue 47 (390 px): a band 6 % of the plot (13 px on a phone) held a 10 px label that spilled onto the cells.
    Bands are BAND_PX pixels beside the plot at every size; each label sits in its band (anchored at the plot's
    edge, shifted as far as the band's inner gap), and the W_o colour bar starts past the band."""
    fig = M.blocked_heatmap(np.ones((8, 8)), 2, block_axis=block_axis, title="W")
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    side = "y" if block_axis == "columns" else "x"
    for b in bands:
        assert b[f"{side}sizemode"] == "pixel" and b[f"{side}anchor"] == 1
        assert b[f"{side}1"] - b[f"{side}0"] == M.BAND_PX >= 10 + 2 * 2  # a 10 px label and its padding
    for note in fig.layout.annotations:
        assert note[side] == 1 and note.font.size == 10
        assert (note.yanchor, note.yshift) == ("bottom", 2) if side == "y" else (note.xanchor, note.xshift) == (
            "left", 2)
    if block_axis == "rows":
        assert heatmaps(fig)[0].colorbar.xpad >= M.BAND_PX + 2


def test_blocked_heatmap_token_rows_keep_labels():
    z = np.random.default_rng(2).normal(size=(3, 8))
    fig = M.blocked_heatmap(z, 2, row_labels=["<b>x</b> (0)", "a (1)", "a (2)"], row_name="token", col_name="dim")
    assert fig.layout.yaxis.ticktext == ("&lt;b&gt;x&lt;/b&gt; (0)", "a (1)", "a (2)")


def test_blocked_heatmap_large_is_sampled_at_true_indices_and_light():
    W = np.random.default_rng(3).normal(size=(512, 512))
    fig = M.blocked_heatmap(W, 16)
    (hm,) = heatmaps(fig)
    idx = np.arange(0, 512, 8)
    assert list(hm.x) == idx.tolist() and list(hm.y) == idx.tolist()
    np.testing.assert_allclose(np.array(hm.z, dtype=float), np.round(W[np.ix_(idx, idx)], 4))
    assert hm.customdata is None and "%{x}" in hm.hovertemplate  # indices, no per-cell labels
    bands = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(bands) == 16 and bands[1].x0 == 28 and bands[1].x1 == 60  # head 1 = columns 32..63
    assert len(json.dumps(fig.to_plotly_json(), default=str)) < 80_000


def test_blocked_heatmap_bad_input():
    with pytest.raises(ValueError, match="multiple of n_heads=3"):
        M.blocked_heatmap(np.ones((8, 8)), 3)
    with pytest.raises(ValueError, match="block_axis"):
        M.blocked_heatmap(np.ones((8, 8)), 2, block_axis="diag")
    with pytest.raises(ValueError, match="2-D"):
        M.blocked_heatmap(np.ones(8), 2)


# --- the split example ---------------------------------------------------------------------


def test_split_panels_text_and_colour_by_owner():
    x = 100.0 * np.arange(3)[:, None] + np.arange(8)[None, :]
    owner = np.broadcast_to(np.arange(8) // 4, x.shape)
    heads = x.reshape(3, 2, 4).swapaxes(0, 1)
    heads_owner = owner.reshape(3, 2, 4).swapaxes(0, 1)
    fig = M.split_panels(heads, heads_owner, tokens=heads // 100, titles=["head 0", "head 1"])
    h0, h1 = heatmaps(fig)
    assert list(h0.text[1]) == ["100", "101", "102", "103"] and list(h1.text[2]) == ["204", "205", "206", "207"]
    assert np.unique(np.array(h0.z)).tolist() == [0.5] and np.unique(np.array(h1.z)).tolist() == [1.5]
    assert fig.layout.yaxis.autorange == "reversed"
    with pytest.raises(ValueError, match="share one"):
        M.split_panels(heads, heads_owner[:, :2], tokens=heads // 100, titles=["a", "b"])
    with pytest.raises(ValueError, match="titles"):
        M.split_panels(heads, heads_owner, tokens=heads // 100, titles=["a"])


# --- every head's weights --------------------------------------------------------------------


def test_head_grid_one_shared_range_titles_and_orientation():
    w = weights(4, 6)
    fig = M.head_weights_grid(w, LABELS, [0, 1, 2, 3], entropy=[1.0, 1.5, 0.25, 1.789], n_cols=1)
    hms = heatmaps(fig)
    assert len(hms) == 4
    assert {t.coloraxis for t in hms} == {"coloraxis"}
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax) == (0.0, 1.0)
    for h, t in enumerate(hms):
        np.testing.assert_allclose(np.array(t.z, dtype=float), w[h])
        assert t.hovertemplate.startswith(f"head {h} · query ")
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["head 0 · H 1.00", "head 1 · H 1.50", "head 2 · H 0.25", "head 3 · H 1.79"]  # short: phones
    two = M.head_weights_grid(w, LABELS, [0, 1, 2, 3], entropy=[1.0, 1.5, 0.25, 1.789], n_cols=2)
    assert [a.text for a in two.layout.annotations] == ["head 0", "head 1", "head 2", "head 3"]  # narrow panels
    for ax in ("yaxis", "yaxis2", "yaxis3", "yaxis4"):
        assert fig.layout[ax].autorange == "reversed"
    assert fig.layout.yaxis.ticktext == tuple(LABELS) and two.layout.yaxis2.showticklabels is False


def test_head_grid_masks_escapes_and_text():
    labels = ["<b>a</b> (0)", "b (1)", "c (2)"]
    w = np.tril(weights(2, 3))
    w /= w.sum(-1, keepdims=True)
    fig = M.head_weights_grid(w, labels, [0, 1], mask=np.tri(3, dtype=bool))
    hms = heatmaps(fig)
    assert hms[0].z[0][1] is None and hms[0].z[2][1] is not None  # key after the query: masked gap
    crosses = [t for t in fig.data if isinstance(t, go.Scatter) and t.mode == "text"]  # not the row-max outlines
    assert len(crosses) == 2 and all(list(t.text) == ["×"] * 3 for t in crosses)
    assert "<b>" not in json.dumps(fig.layout.xaxis.ticktext) and "&lt;b&gt;" in fig.layout.xaxis.ticktext[0]
    assert hms[0].texttemplate is None  # two panels side by side: a phone's cells are too narrow for "0.000"
    one = M.head_weights_grid(w, labels, [0, 1], mask=np.tri(3, dtype=bool), n_cols=1)
    assert heatmaps(one)[0].texttemplate == "%{text}"  # small, one panel a row: cell values printed
    assert heatmaps(M.head_weights_grid(weights(2, 12), [str(i) for i in range(12)], [0, 1]))[0].texttemplate is None


@pytest.mark.slow
def test_head_grid_large_is_light():
    n, h = 64, 16
    fig = M.head_weights_grid(weights(h, n), [f"w{i} ({i})" for i in range(n)], list(range(h)))
    hms = heatmaps(fig)
    assert len(hms) == 16 and all(t.customdata is None and t.texttemplate is None for t in hms)
    assert hms[3].hovertemplate.startswith("head 3 · query %{y}")
    assert len(json.dumps(fig.to_plotly_json(), default=str)) < 700_000
    masked = M.head_weights_grid(weights(2, 20), [str(i) for i in range(20)], [0, 1], mask=np.tri(20, dtype=bool))
    assert not [t for t in masked.data if isinstance(t, go.Scatter) and t.mode == "text"]  # no × clutter on big
    # maps: grey gaps only
    assert masked.layout.plot_bgcolor is not None and heatmaps(masked)[0].xgap == 0


def test_head_grid_bad_shape():
    with pytest.raises(ValueError, match="len\\(heads\\)=3"):
        M.head_weights_grid(weights(2, 4), ["a", "b", "c", "d"], [0, 1, 2])


def test_head_grid_shares_the_largest_weight_of_every_head_on_the_map_scale():
    """Issue 18, item 4: one colour range for every head, the uniform level marked, every head's row maxima."""
    w = np.random.default_rng(1).dirichlet(np.ones(3), size=(2, 3))  # [heads, n, n]
    fig = M.head_weights_grid(w, LABELS[:3], [0, 1], color_scale="map")
    assert fig.layout.coloraxis.cmax == pytest.approx(float(w.max()))
    assert "uniform 1/3" in fig.layout.coloraxis.colorbar.ticktext
    lines = [t for t in fig.data if t.type == "scatter" and t.mode == "lines"]
    assert len(lines) == 2  # every head's row maxima outlined


@pytest.mark.slow  # three 38 x 38 panels: about half a second
def test_head_grid_light_row_scale_hovers_true_weights():
    w = np.random.default_rng(2).dirichlet(np.ones(38), size=(3, 38))  # 4332 cells: a light grid
    labels = [f"t ({i})" for i in range(38)]
    fig = M.head_weights_grid(w, labels, [0, 1, 2], color_scale="row")
    hm = fig.data[0]
    assert fig.layout.coloraxis.cmax == 1.0 and fig.layout.coloraxis.colorbar.title.text == "÷ row max"
    assert "%{customdata:.3f}" in hm.hovertemplate and "%{z" not in hm.hovertemplate
    np.testing.assert_allclose(np.array(hm.customdata, dtype=float), np.round(w[0], 3))


def test_head_output_panels_share_a_symmetric_range():
    o = np.random.default_rng(4).normal(size=(2, 6, 4))
    o[1, 2, 3] = -5.0
    fig = M.head_output_panels(o, LABELS, [0, 1], d_head=4)
    assert (fig.layout.coloraxis.cmin, fig.layout.coloraxis.cmax, fig.layout.coloraxis.cmid) == (-5.0, 5.0, 0.0)
    np.testing.assert_allclose(np.array(heatmaps(fig)[1].z, dtype=float), o[1])
    wide = M.head_output_panels(np.ones((1, 3, 64)), LABELS[:3], [5], d_head=64)
    assert list(heatmaps(wide)[0].x) == list(range(0, 64, 4))  # sampled, true column indices
    with pytest.raises(ValueError, match=r"d_head=3\], got \(2, 6, 4\)"):
        M.head_output_panels(o, LABELS, [0, 1], d_head=3)


def test_entropy_bars_uniform_line():
    fig = M.entropy_bars(np.array([1.2, 0.4]), 6)
    (bar,) = fig.data
    assert list(bar.y) == [1.2, 0.4] and bar.marker.color[0] != bar.marker.color[1]
    (line,) = [s for s in fig.layout.shapes]
    assert line.y0 == pytest.approx(math.log(6))
    causal = M.entropy_bars(np.array([0.5]), 6, is_causal=True)
    assert causal.layout.shapes[0].y0 == pytest.approx(np.mean(np.log(np.arange(1, 7))))


def test_token_maps_light_above_threshold():
    """The page's token maps (the mean over heads, one query in every head) use the shell's heat map."""
    small = heatmap(weights(1, 6)[0], LABELS, LABELS)
    assert heatmaps(small)[0].customdata is not None
    z = weights(1, 64)[0]
    labels = [f"t{i} ({i})" for i in range(64)]
    assert heatmaps(heatmap(z, labels, labels))[0].customdata is not None  # 64 tokens: still token labels
    big = heatmap(z, labels, labels, mask=np.tri(64, dtype=bool), light=True)  # e.g. a grid of several maps
    (hm,) = heatmaps(big)
    assert hm.customdata is None and hm.hovertemplate.startswith("query %{y} → key %{x}")
    assert hm.z[0][5] is None and hm.z[5][0] == round(z[5, 0], 3)


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = mhfig.entropy_bars(np.array([1.25, 0.5]), 6)
        grid = mhfig.head_weights_grid(np.full((2, 3, 3), 1 / 3), ["İki (0)", "ılık (1)", "şu (2)"], [0, 1])
        blocked = mhfig.blocked_heatmap(np.eye(4), 2)
        label = draw.diff_text(1.5e-16)
    assert bars.layout.separators == ",." and grid.layout.separators == ",." and blocked.layout.separators == ",."
    assert list(bars.data[0].text) == ["1,25", "0,50"]
    assert bars.layout.annotations[0].text == "izin verilen anahtarlarda düzgün: 1,79"
    assert bars.layout.yaxis.title.text == "ortalama entropi (nat)" and bars.layout.xaxis.title.text == "kafa"
    assert [a.text for a in grid.layout.annotations][:2] == ["kafa 0", "kafa 1"]
    assert list(grid.layout.yaxis.ticktext or grid.layout.yaxis.labelalias.values())[0] == "İki (0)"
    assert blocked.data[0].colorbar.title.text == "değer" and blocked.layout.yaxis.title.text == "girdi boyutu"
    assert label == "1,5e-16"
    with i18n.using("pt"):
        panels = mhfig.head_output_panels(np.ones((1, 2, 2)), ["ação (0)", "pé (1)"], [3], d_head=2)
        split = mhfig.split_panels(np.zeros((1, 1, 2)), np.zeros((1, 1, 2), int), tokens=np.zeros((1, 1, 2), int),
                                   titles=["cabeça 0"])
    assert panels.layout.xaxis.title.text == "coluna da cabeça" and panels.layout.annotations[0].text == "cabeça 3"
    assert panels.layout.separators == ",." and split.layout.separators == ",."
    assert split.data[0].hovertemplate.startswith("%{customdata[0]}: token %{customdata[1]}, uma coluna da cabeça")
    # outside a run: English, the point
    assert mhfig.entropy_bars(np.array([1.25]), 6).layout.annotations[0].text == "uniform over the allowed keys: 1.79"
    assert mhfig.head_labels([0]) == ["head 0"] and draw.diff_text(0.0) == "0 (same bits)"
    for lang, same in (("pt", "0 (mesmos bits)"), ("tr", "0 (aynı bitler)")):  # the check's metric, in words
        with i18n.using(lang):
            assert draw.diff_text(0.0) == same


def test_a_head_grid_asks_the_browser_to_label_the_keys_of_its_labelled_panels_for_their_width():
    labels = [f"t{i}" for i in range(21)]
    w = np.full((8, 21, 21), 1 / 21)
    fig = mhfig.head_weights_grid(w, labels, list(range(8)), n_cols=3)
    # the bottom panel of each column shows the keys (heads 5, 6, 7): every label, for the browser to fit
    assert fig.layout.meta == {"fit_ticks": {f"xaxis{i}": labels for i in (6, 7, 8)}}
    small = mhfig.head_weights_grid(w[:, :6, :6], labels[:6], list(range(8)), n_cols=3)
    assert small.layout.meta == {"fit_ticks": {f"xaxis{i}": labels[:6] for i in (6, 7, 8)}}
