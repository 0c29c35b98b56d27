"""Figure builders of the KV-cache page: orientation, the newest row marked, escaping, the current length marked."""

import json

import numpy as np
import pytest

from explorer.lessons.kv_cache import charts as F
from explorer.lessons.kv_cache import model as M
from explorer.shell import i18n

LABELS = ["The (0)", "␣cat (1)", "<b>x</b> (2)", "␣sat (3)"]


def shapes(fig):
    return [s.to_plotly_json() for s in fig.layout.shapes]


def test_cache_matrix_rows_are_tokens_top_to_bottom_newest_outlined_prompt_line():
    K = np.arange(4 * 64, dtype=np.float32).reshape(4, 64) - 100
    fig = F.cache_matrix(K, LABELS, 2, title="K cache", colorbar_title="k")
    hm = fig.data[0]
    np.testing.assert_array_equal(np.asarray(hm.z, dtype=float), K)  # row 0 = token 0, not transposed
    assert fig.layout.yaxis.autorange == "reversed"
    assert list(fig.layout.yaxis.ticktext)[2] == "&lt;b&gt;x&lt;/b&gt; (2)"
    assert hm.zmid == 0  # diverging, centred on 0
    assert hm.texttemplate is None  # 64 columns: no cell text
    box, line = shapes(fig)
    assert (box["type"], box["y0"], box["y1"], box["x0"], box["x1"]) == ("rect", 2.5, 3.5, -0.5, 63.5)
    assert (line["type"], line["y0"], line["y1"]) == ("line", 1.5, 1.5)
    assert "token ␣cat (1) · dim" in hm.hovertemplate.replace("%{customdata[0]}", "␣cat (1)")
    assert "<b>" not in json.dumps(np.asarray(hm.customdata).tolist())
    only_prompt = F.cache_matrix(K, LABELS, 4, title="K", colorbar_title="k")
    assert [s["type"] for s in shapes(only_prompt)] == ["rect"]  # no generated rows: no prompt line


def test_new_query_weights_one_row_per_query_head_chosen_row_outlined():
    w = np.array([[0.1, 0.2, 0.3, 0.4], [1.0, 0, 0, 0], [0.25] * 4])
    fig = F.new_query_weights(w, ["3", "4", "5"], LABELS, 3, 1, title="new query <i>x</i>")
    np.testing.assert_allclose(np.asarray(fig.data[0].z, dtype=float), w)
    assert list(fig.layout.yaxis.ticktext) == ["3", "4", "5"]
    box, line = shapes(fig)
    assert (box["y0"], box["y1"]) == (0.5, 1.5)
    assert (line["x0"], line["x1"]) == (2.5, 2.5)
    assert fig.layout.title.text == "new query &lt;i&gt;x&lt;/i&gt;"


def test_cached_vs_full_bars_by_key_position():
    a = np.array([0.5, 0.25, 0.125, 0.125], np.float32)
    b = a + np.array([1e-7, -1e-7, 0, 0])
    fig = F.cached_vs_full(a, b, LABELS, title="t")
    assert [t.name for t in fig.data] == ["cached step", "full recomputation"]
    np.testing.assert_array_equal(fig.data[0].y, a.astype(float))
    np.testing.assert_array_equal(fig.data[1].y, b)
    assert list(fig.data[0].x) == [0, 1, 2, 3] and fig.layout.xaxis.ticktext[2] == "&lt;b&gt;x&lt;/b&gt; (2)"
    assert np.asarray(fig.data[0].customdata)[0, 1] == "0.5000000"
    with pytest.raises(ValueError, match=r"\[n\] = \[4\]"):
        F.cached_vs_full(a[:3], b, LABELS, title="t")


def test_cost_and_size_charts_mark_the_current_length():
    ns = np.arange(1, 11)
    fig = F.cost_chart(ns, ns * 2e6, ns * ns * 1e6, 6, 4, title="cost")
    lines = [t for t in fig.data if t.mode == "lines"]
    markers = [t for t in fig.data if t.mode == "markers" and t.showlegend is False]  # the "now" points
    assert [t.name for t in lines] == ["with the KV cache", "without: recompute all n"]
    np.testing.assert_allclose(lines[1].y, (ns * ns).astype(float))  # millions
    assert [(m.x[0], m.y[0]) for m in markers] == [(6, 12.0), (6, 36.0)]
    now = shapes(fig)[0]
    assert (now["x0"], now["x1"]) == (6, 6)
    assert any(a.text == "now: 6 tokens" for a in fig.layout.annotations)
    size = F.cache_size_chart(ns, ns * 46_080, ns * 138_240, 10, 4, n_kv_heads=3, n_heads=9)
    assert [t.name for t in size.data if t.mode == "lines"] == ["3 key/value heads (this model, GQA)",
                                                                 "9 key/value heads (no grouping)"]
    now = [t.y[0] for t in size.data if t.mode == "markers" and t.showlegend is False]
    assert now == [pytest.approx(0.4608), pytest.approx(1.3824)]


def test_the_prompt_band_is_named_in_the_legend_never_on_the_plot():
    """Issue 30: a label at a 5-token band's foot sat on the y axis's "0"; issue 47: at its top, on a phone, it ran
    into the "now" line and label (Turkish "istem" in a 30 px band). The band is named in the legend."""
    ns = np.arange(1, 8193, 64)
    fig = F.cost_chart(ns, ns * 2e6, ns * ns * 1e6, 257, 5, title="cost")
    assert [a.text for a in fig.layout.annotations] == ["now: 257 tokens"]
    (entry,) = [t for t in fig.data if t.name == "prompt"]
    assert entry.marker.color == F.PROMPT_BAND and entry.showlegend is not False and entry.hoverinfo == "skip"
    band = [s for s in shapes(fig) if s["type"] == "rect"]
    assert [(s["x0"], s["x1"], s["fillcolor"]) for s in band] == [(ns[0], 5, F.PROMPT_BAND)]
    whole = F.cost_chart(ns, ns * 2e6, ns * ns * 1e6, 257, 1, title="cost")  # no band: no entry
    assert not [t for t in whole.data if t.name == "prompt"]


# --- the charts' and the claims' words in each language (moved from test_i18n.py) ---------------------------------


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    ns = np.arange(1, 9)
    with i18n.using("tr"):
        cost = F.cost_chart(ns, ns * 1e6, ns**2 * 1e6, 5, 3, title="İlk ışık: ığdır")
        size = F.cache_size_chart(ns, ns * 1e3, ns * 3e3, 5, 3, n_kv_heads=3, n_heads=9)
        bars = F.cached_vs_full([0.25, 0.75], [0.25, 0.75], ["İ", "ı"], title="sorgu kafası İ")
        sampled = M.Sampling("sample", 0.8, 40, 0).describe()
    assert cost.layout.title.text == "İlk ışık: ığdır" and cost.layout.separators == ",."
    assert [t.name for t in cost.data if t.showlegend is not False] == [
        "KV önbelleğiyle", "önbelleksiz: n tokenin hepsini yeniden hesapla", "istem"]
    assert cost.layout.xaxis.title.text == "dizideki token sayısı (n)"
    assert [a.text for a in cost.layout.annotations] == ["şimdi: 5 token"]
    assert size.data[0].name == "3 anahtar/değer kafası (bu model, GQA)" and size.layout.separators == ",."
    assert bars.data[0].text == ("0,250", "0,750") and bars.layout.title.text == "sorgu kafası İ"
    assert bars.data[0].hovertemplate.startswith("önbellekli adım: anahtar %{customdata[0]}")
    assert sampled == "örneklendi: sıcaklık 0,8, top-k 40, tohum 0"
    with i18n.using("pt"):
        assert M.Sampling().describe() == "guloso (greedy: o token mais provável)"
        assert M.pending_marker("ç".encode()[:1]) == "⟨+1 byte pendente⟩"
        assert "1 dos seus 2 bytes UTF-8" in M.pending_note("ç".encode()[:1])
        assert M.difference_text(1.5e-6) == "1,5e-06" and M.difference_text(0.0) == "0 (bit a bit)"
        assert M.probability_text(0.1234) == "0,123" and M.probability_text(0.00012) == "1,20e-04"
    # outside a run: English, the point
    assert M.Sampling("sample", 0.8, 40, 0).describe() == "sampled: temperature 0.8, top-k 40, seed 0"
    assert M.difference_text(1.5e-6) == "1.5e-06" and F.cost_chart(ns, ns, ns, 5, 3).layout.separators == ".,"
