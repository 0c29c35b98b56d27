"""The two_sentences lesson's charts, in every language."""

from __future__ import annotations

from explorer.lessons.two_sentences import charts as tfig
from explorer.lessons.two_sentences import model as draw
from explorer.shell import i18n
from explorer.shell.textviews import tokens_count


def test_the_charts_words_keep_their_letters_and_their_decimal_mark():
    with i18n.using("tr"):
        bars = tfig.entropy_bars([0.5, 0.25, 1.0], [0.125, 1.5, 0.0], ["İ (0)", "ılık (1)", "ş / ğ (2)"],
                                 title="İki cümle, ılık")
        gap, exact, count = draw.gap_text(1.234e-16), draw.gap_text(0.0), tokens_count(2)
    assert bars.layout.separators == ",." and bars.layout.title.text == "İki cümle, ılık"
    assert list(bars.data[0].text) == ["0,500", "0,250", "1,000"]
    assert bars.layout.annotations[0].text == "düzgün: log 3 = 1,10"
    assert bars.layout.yaxis.title.text == "entropi (nat)" and bars.layout.xaxis.title.text == "sorgu (konum)"
    assert (gap, exact, count) == ("1,23e-16", "0 (tam)", "2 token")
    with i18n.using("pt"):
        bars = tfig.entropy_bars([0.5, 0.25], [0.125, 1.5], ["ação (0)", "é / ç (1)"], title="entropia: atenção")
        assert draw.gap_text(2.5e-3) == "2,50e-03" and tokens_count(1) == "1 token"
    assert bars.layout.annotations[0].text == "uniforme: log 2 = 0,69" and bars.layout.title.text == "entropia: atenção"
    assert bars.layout.xaxis.title.text == "consulta (posição)"
    # outside a run: English, the point
    assert draw.gap_text(1.234e-16) == "1.23e-16" and draw.gap_text(0.0) == "0 (exact)"
    assert tfig.entropy_bars([0.5, 0.25], [0.1, 0.2], ["a", "b"]).layout.annotations[0].text == "uniform: log 2 = 0.69"
