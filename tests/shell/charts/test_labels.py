"""A figure's title (:func:`explorer.shell.charts.chart_title`): escaped, and in lines a phone can show."""

from __future__ import annotations

from explorer.shell.charts import chart_title, heatmap, title_top
from explorer.shell.charts.geometry import theme_text_px
from explorer.shell.charts.labels import TITLE_LINE_PX, TITLE_PX, TITLE_WIDTH_PX


def test_a_short_title_is_one_escaped_line():
    assert chart_title("weights") == {"text": "weights"}
    assert chart_title("<b>x</b> & y") == {"text": "&lt;b&gt;x&lt;/b&gt; &amp; y"}


def test_a_long_title_breaks_at_spaces_into_lines_a_phone_shows_and_pushes_the_margin():
    # measured in Chromium at 390 px before the fix: 84 px past the chart's right edge
    title = "todas as cabeças: atenção ao primeiro token (sumidouro, sink)"
    t = chart_title(title)
    lines = t["text"].split("<br>")
    assert len(lines) == 2 and " ".join(lines) == title
    assert all(theme_text_px(line, TITLE_PX) <= TITLE_WIDTH_PX for line in lines)
    # Raised by the lines below the first (Plotly hangs them below it), in the margin title_top sends: never on the plot
    assert (t["yref"], t["y"], t["yanchor"]) == ("paper", 1, "bottom") and "automargin" not in t
    assert t["pad"]["b"] >= 20.8 * t["text"].count("<br>")


def test_a_visitors_text_in_a_title_stays_text_when_broken():
    t = chart_title("nova consulta <script>alert(1)</script> sobre 5 chaves no cache de cada camada do modelo")
    assert "<script>" not in t["text"] and "&lt;script&gt;" in t["text"]
    assert t["text"].count("<br>") >= 1


def test_one_word_wider_than_the_chart_stays_whole_and_spaces_survive():
    word = "x" * 80
    assert chart_title(word) == {"text": word}
    assert chart_title(f"a  {word}")["text"].replace("<br>", " ") == f"a  {word}"


def test_the_shells_builders_use_it():
    title = "MÉDIA das 9 cabeças da camada 16 (não é uma cabeça)"
    fig = heatmap([[0.5, 0.5]], ["a"], ["a", "b"], title=title)
    assert fig.layout.title.text == chart_title(title)["text"] and "<br>" in fig.layout.title.text


def test_broken_lines_are_balanced_not_a_widow():
    assert chart_title("query head 0, layer 11: the new row both ways")["text"] == (
        "query head 0, layer 11:<br>the new row both ways")


def test_the_top_margin_holds_every_line_of_the_title():
    """A margin too small for a wrapped title is grown by Plotly's automargin, a second layout (the Portuguese causal
    padding map: sent 40, drawn 54)."""
    long = "MÉDIA das 9 cabeças da camada 16 (não é uma cabeça)"
    assert title_top("") == 10 and title_top("short") == 40
    lines = chart_title(long)["text"].count("<br>") + 1
    assert lines >= 2 and title_top(long) == 40 + TITLE_LINE_PX * (lines - 1)
    assert heatmap([[0.5, 0.5]], ["a"], ["a", "b"], title=long).layout.margin.t == title_top(long)
    assert heatmap([[0.5, 0.5]], ["a"], ["a", "b"], title="short").layout.margin.t == 40
