"""Figure builders of the causal page: orientation, legends, −∞ as text, badges, escaping."""

import json

import numpy as np
import pytest

import attention as A
from explorer.lessons.causal import charts as F
from explorer.lessons.causal.model import exact
from explorer.shell import i18n

LABELS = ["The (0)", "cat (1)", "<b>x</b> (2)"]


def test_boolean_mask_orientation_text_and_legend():
    fig = F.boolean_mask_figure(A.causal_mask(3), LABELS, title="m")
    hm = fig.data[0]
    assert np.asarray(hm.z).tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]  # row 0 = query 0, top
    assert fig.layout.yaxis.autorange == "reversed"
    # Issue 18, item 13: the words while they fit a phone's cells, else their first letters.
    assert np.asarray(hm.text)[0].tolist() == ["T", "F", "F"]  # long labels and the legend leave ~28 px a cell
    words = F.boolean_mask_figure(A.causal_mask(3), ["a", "b", "c"])
    assert np.asarray(words.data[0].text)[0].tolist() == ["True", "False", "False"]
    assert F.boolean_mask_figure(A.causal_mask(24), [f"w{i}" for i in range(24)]).data[0].text is None
    assert "True: may attend" in hm.colorbar.ticktext and "False: blocked" in hm.colorbar.ticktext
    assert np.asarray(hm.customdata)[0, 1, 2] == "False (blocked)"
    short = F.boolean_mask_figure(A.causal_mask(3), LABELS, short=True, show_legend=False)
    assert np.asarray(short.data[0].text)[1].tolist() == ["T", "T", "F"] and short.data[0].showscale is False


def test_labels_are_escaped():
    fig = F.boolean_mask_figure(A.causal_mask(3), LABELS)
    assert fig.layout.yaxis.ticktext[2] == "&lt;b&gt;x&lt;/b&gt; (2)"
    assert "<b>" not in json.dumps(np.asarray(fig.data[0].customdata).tolist())


def test_additive_mask_prints_minus_infinity_as_text_and_never_a_raw_float():
    add = A.additive_mask(A.causal_mask(3))
    fig = F.additive_mask_figure(add, LABELS)
    text = np.asarray(fig.data[0].text)
    assert text[0].tolist() == ["0", "−∞", "−∞"] and text[2].tolist() == ["0", "0", "0"]
    dumped = fig.to_json()
    for bad in ("-inf", "Infinity", "NaN", "nan"):
        assert bad not in dumped
    with pytest.raises(ValueError, match="only 0"):
        F.additive_mask_figure(np.ones((3, 3)), LABELS)


def test_mask_builders_reject_bad_input():
    with pytest.raises(ValueError, match="boolean"):
        F.boolean_mask_figure(np.ones((3, 3)), LABELS)
    with pytest.raises(ValueError, match="one label per token"):
        F.boolean_mask_figure(A.causal_mask(2), LABELS)


def test_row_badges_sit_on_the_fully_masked_rows():
    fig = F.boolean_mask_figure(A.causal_mask(3), LABELS)
    F.add_row_badges(fig, [0, 2], 3)
    assert [a.y for a in fig.layout.annotations] == [0, 2]
    assert all(F.FULLY_MASKED_BADGE in a.text for a in fig.layout.annotations)


def test_exact_change_text_says_zero_only_for_exact_zero():
    assert F.exact_change_text(0.0) == "0 (exact)"
    assert F.exact_change_text(1e-17) == "1e-17"
    assert F.exact_change_text(0.1234) == "0.123"


def test_row_change_bars_and_separator():
    fig = F.row_change_bars([0.1, 0.2, 0.3], [0.0, 0.0, 0.4], LABELS, 1)
    assert [tr.name for tr in fig.data] == ["bidirectional", "causal"]
    assert list(fig.data[1].text) == ["0 (exact)", "0 (exact)", "0.4"]
    assert fig.layout.shapes[0].x0 == 1.5
    with pytest.raises(ValueError):
        F.row_change_bars([0.1], [0.0, 0.0, 0.4], LABELS, 1)
    fig = F.add_row_separator(F.boolean_mask_figure(A.causal_mask(3), LABELS), 0, 3)
    assert fig.layout.shapes[0].y0 == 0.5


@pytest.mark.parametrize("n", [6, 34])
def test_mask_maps_label_the_last_key(n):
    """Issue 18, item 8: every label, or a thinning that keeps the first and the last (as the shell's heat map)."""
    labels = [f"w ({i})" for i in range(n)]
    fig = F.boolean_mask_figure(np.tri(n, dtype=bool), labels, short=True, show_legend=False)
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        assert axis.ticktext[0] == labels[0] and axis.ticktext[-1] == labels[-1]
        assert axis.tickvals[-1] == n - 1
    # Rotated labels hang to the left of their tick, so the last one stays inside the figure (Plotly hides
    # a tick label that runs past the figure's right edge).
    assert all(a <= 0 for a in fig.layout.xaxis.autotickangles)


def test_the_page_maps_come_complete_with_their_badges_and_separator():
    """The weights, output and "after − before" maps are built whole here (the sections draw them as they are)."""
    mask = A.causal_mask(3) & np.array([True, True, False])  # key 2 padding: row 0..1 keep a key
    fully = np.array([False, False, False])
    allowed = F.weights_map(np.eye(3), LABELS, np.ones((3, 3), bool), fully, title="w")
    assert not allowed.layout.annotations and len(allowed.data) == 1  # nothing masked: no trace of × marks
    assert len(F.weights_map(np.eye(3), LABELS, mask, fully, title="w").data) == 2  # the × marks
    fully[1] = True
    badged = F.weights_map(np.eye(3), LABELS, mask, fully, title="w")
    assert [a.y for a in badged.layout.annotations] == [1]
    out = F.output_map(np.zeros((3, 2)), LABELS, ["dim 0", "dim 1"], fully)
    assert [(a.y, a.x) for a in out.layout.annotations] == [(1, 0.5)]  # across the 2 output columns
    assert F.change_map(np.zeros((3, 2)), LABELS, ["a", "b"], 0, (-1, 1)).layout.shapes[0].y0 == 0.5
    assert not F.change_map(np.zeros((3, 2)), LABELS, ["a", "b"], 2, (-1, 1)).layout.shapes  # nothing after t
    combined = F.boolean_mask_figure(mask, LABELS, short=True, badges=[1], badge_text="fully masked")
    assert [a.text for a in combined.layout.annotations] == ["⛔ fully masked"]


def test_the_charts_words_keep_their_letters():
    labels = ["İzmir (0)", "ılık (1)", "gün (2)"]  # Turkish dotted capital and dotless small i in token labels
    with i18n.using("tr"):
        fig = F.boolean_mask_figure(A.causal_mask(3), labels)
        bars = F.row_change_bars([0.125, 0.25, 0.5], [0.0, 0.0, 0.5], labels, 1)
    assert list(fig.layout.yaxis.ticktext) == labels and fig.layout.xaxis.title.text == "anahtar"
    assert list(fig.data[0].colorbar.ticktext) == ["False: engellenmiş", "True: izinli"]
    assert fig.data[0].hovertemplate.startswith("sorgu %{customdata[0]} → anahtar %{customdata[1]}")
    assert np.asarray(fig.data[0].customdata)[0, 1, 2] == "False (engellenmiş)"
    assert [t.name for t in bars.data] == ["çift yönlü", "nedensel"]
    assert list(bars.data[0].text) == ["0,125", "0,25", "0,5"] and list(bars.data[1].text)[:2] == ["0 (tam)"] * 2
    assert bars.layout.annotations[0].text == "t = 1 sonrası değişti"
    with i18n.using("pt"):
        add = F.additive_mask_figure(A.additive_mask(A.causal_mask(3)), labels)
        badge = F.add_row_badges(F.boolean_mask_figure(A.causal_mask(3), labels), [0], 3)
    assert list(add.data[0].colorbar.ticktext) == ["−∞: bloqueado", "0: permitido"]
    assert badge.layout.annotations[0].text == "⛔ totalmente mascarada: sem chaves"
    assert F.exact_change_text(1e-17) == "1e-17" and exact(0.0) == "0.0"  # English outside a run
