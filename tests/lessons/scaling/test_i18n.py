"""The page "Why divide by √d_k" in Português and Türkçe (issue 31): nothing of the English page left, the same
numbers with the language's decimal comma, the link keeps ``lang``, and the charts' words keep their letters."""

from __future__ import annotations

import math
import re
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from explorer.lessons import scaling
from explorer.lessons.scaling import charts as F
from explorer.lessons.scaling import model as S
from explorer.shell import controls, i18n
from explorer.shell.textviews import fmt
from tests.apptest_utils import app_at, assert_clean, english_left, figures
from tests.lessons.scaling.test_page import arr

PAGE = "scaling"
LANGS = ("pt", "tr")
OWN_FIGURES = ("scale_fig_hist", "scale_fig_curves", "scale_fig_bar_unscaled", "scale_fig_bar_scaled",
               "scale_fig_temp_bar", "scale_fig_temp_sweep")  # built by this lesson (the heat maps are the shell's)
# Every state a learner reaches with its own text: the verdict's branches (the English words that prove the
# branch was reached), the log axis, the extremes of every control, a link the page cannot use.
STATES = [
    pytest.param({}, "smaller than with scaling", id="default"),
    pytest.param({"scale_d_k": "1", "scale_n_keys": "2", "scale_samples": "256", "scale_temperature": "0.01",
                  "scale_hist_log": "true"}, "changes nothing", id="d_k-1-smallest-log"),
    pytest.param({"scale_d_k": "2", "scale_samples": "256"}, "about the same", id="about-the-same"),
    pytest.param({"scale_d_k": "4", "scale_n_keys": "32", "scale_samples": "256", "scale_temperature": "100"},
                 "still", id="still-larger"),
    pytest.param({"scale_d_k": "100", "scale_n_keys": "999", "scale_samples": "7", "scale_temperature": "abc",
                  "scale_seed": "-1"}, "smaller than with scaling", id="bad-link"),
]


def verdict(at) -> str:
    """The verdict box (its icon names it in every language)."""
    return next(i.value for i in at.info if i.icon == "📏")


@pytest.mark.slow
@pytest.mark.parametrize(("query", "english_verdict"), STATES)
def test_no_english_sentence_is_left_in_portuguese_or_turkish(query, english_verdict):
    en = app_at(PAGE, query=query)
    assert_clean(en)
    assert english_verdict in verdict(en)
    for lang in LANGS:
        other = app_at(PAGE, query={**query, "lang": lang})
        assert_clean(other)
        assert english_left(en, other) == [], lang
        assert english_verdict not in verdict(other)


@pytest.mark.slow
def test_every_language_shows_the_same_numbers_with_its_decimal_mark():
    en = app_at(PAGE)
    figs_en = figures(en)
    now = S.setting(64, 6, 2048, 0)
    stats = S.curves(6, 2048, 0)
    for lang in LANGS:
        at = app_at(PAGE, query={"lang": lang})
        assert_clean(at)
        figs = figures(at)
        assert set(figs) == set(figs_en)
        for key, fig_en in figs_en.items():
            for trace_en, trace in zip(fig_en["data"], figs[key]["data"], strict=True):
                for axis in ("y", "z"):
                    if trace_en.get(axis) is not None:
                        np.testing.assert_array_equal(arr(trace_en[axis]), arr(trace[axis]), err_msg=f"{key} {axis}")
        for key in OWN_FIGURES:
            assert figs[key]["layout"]["separators"] == ",.", key
        with i18n.using(lang):
            raw_var, expected_verdict = fmt(now.raw_var, 2), S.verdict(stats, 64).text()
        assert re.fullmatch(r"\d+,\d\d", raw_var)
        assert any(raw_var in c.value for c in at.caption)  # "… raw 63,xx (theory 64) …" in the histogram's caption
        assert expected_verdict in verdict(at) and re.search(r"\d,\d×", verdict(at))
        weights = [c.value for c in at.caption if "[" in c.value and "; " in c.value]  # "[0,659; 0,242; 0,099]"
        assert weights and re.search(r"\[\d,\d{3}; \d,\d{3}; \d,\d{3}\]", weights[-1])


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_lessons_own_links_open_in_it():
    link = controls.link(scaling, d_k=256, n_keys=9)
    at = app_at(PAGE, query={"lang": "tr", **dict(parse_qsl(urlsplit(link).query))})
    assert_clean(at)
    assert not at.session_state["_link_warnings"] and not at.warning
    assert at.select_slider(key="scale_d_k").value == 256 and at.slider(key="scale_n_keys").value == 9
    assert "d_k = 256" in verdict(at) and "ölçeklenmemiş" in verdict(at)
    at.select_slider(key="scale_temperature").set_value(0.5).run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.query_params["scale_d_k"] == "256"  # numbers, in every language
    assert any("T = 0,5" in c.value for c in at.caption)


@pytest.mark.parametrize("lang", LANGS)
def test_the_verdict_has_a_sentence_for_every_branch_in_each_language(lang):
    branches = [S.Verdict(1, 0.5, 0.5, 0.1, 0.1), S.Verdict(1024, 1.0, 0.4, 0.0, 0.3),
                S.Verdict(64, 0.97, 0.45, 0.05, 0.25), S.Verdict(16, 0.57, 0.10, 0.29, 0.18),
                S.Verdict(2, 0.5, 0.45, 0.2, 0.2)]
    english = [v.text() for v in branches]
    with i18n.using(lang):
        texts = [v.text() for v in branches]
    assert len(set(texts)) == len(texts) and not set(texts) & set(english)
    percent = "%97" if lang == "tr" else "97%"  # Turkish writes the sign first
    assert percent in texts[2] and "5,0×" in texts[2] and "1,6×" in texts[3] and "nan" not in " ".join(texts)


def test_the_charts_words_keep_their_letters_and_numbers_take_the_decimal_comma():
    edges = np.linspace(-3, 3, 7)
    density = np.full(6, 1 / 6)
    with i18n.using("tr"):
        sweep = F.temperature_sweep([0.5, 1, 2], np.full((3, 3), 1 / 3), [2.0, 1.0, 0.1], current=1.0)
        hist = F.score_histograms(edges, density, edges / 2, density, d_k=4, raw_var=4.125, scaled_var=1.03125)
        curves = F.saturation_curves([1, 2], {"a": ([1, 2], [1, 1])}, current_d_k=2)
    assert sweep.layout.xaxis.title.text == "sıcaklık T" and sweep.layout.yaxis.title.text == "ağırlık"  # ı, ğ
    assert [t.name for t in sweep.data] == ["logit 2,0 (0)", "logit 1,0 (1)", "logit 0,1 (2)"]
    assert "ağırlık %{y:.4f}" in sweep.data[0].hovertemplate and sweep.layout.separators == ",."
    assert hist.data[1].name == "ölçeklenmiş q·k/√d_k: Var = 1,031 (teori 1)"
    assert hist.layout.yaxis.title.text == "yoğunluk (alan 1)" and hist.layout.separators == ",."
    assert [t.name for t in curves.data] == ["ölçeksiz", "ölçekli"]
    assert {t.legendgroup for t in curves.data} == {"unscaled", "scaled"}  # the groups are codes
    with i18n.using("pt"):
        hist = F.score_histograms(edges, density, edges / 2, density, d_k=4, raw_var=4.125, scaled_var=1.0)
    assert hist.layout.xaxis.title.text == "pontuação" and "densidade" in hist.data[0].hovertemplate  # ç, ã
    assert hist.data[0].name == "q·k bruto: Var = 4,125 (teoria d_k = 4)"
    assert math.isclose(float(hist.data[0].x[0]), -2.5)  # the data stay numbers: Plotly writes their commas
