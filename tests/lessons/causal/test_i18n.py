"""The causal-mask page in Português and Türkçe (issue 31): nothing of the English page left in any state, the same
numbers with the language's decimal comma, the link keeps ``lang``, the charts' words keep their letters."""

from __future__ import annotations

import re

import numpy as np
import pytest

import attention as A
from explorer.lessons.causal import charts as F
from explorer.shell import i18n
from tests.apptest_utils import app_at, assert_clean, english_left, figures

PAGE = "causal"
LANGS = ("pt", "tr")
OWN_FIGURES = ("causal_fig_bool", "causal_fig_additive", "causal_fig_mask_causal", "causal_fig_mask_pad",
               "causal_fig_mask_combined")  # built by this lesson (heat maps and bars: the shell's)
# The sidebar's default sentence and its token labels (visitor text, never translated), and the citation of the
# paper: authors' names and the Latin "et al." that Portuguese writes too (Turkish writes "vd.").
SENTENCE = "The cat sat on the mat"
ALLOWED = (SENTENCE, *(f"{t} ({i})" for i, t in enumerate(SENTENCE.split(" "))), "Vaswani et al.")


def texts(at) -> str:
    return " ".join(str(e.value) for kind in ("success", "warning", "info", "markdown", "error", "caption", "text")
                    for e in getattr(at, kind))


# Every state with its own text (the English words that prove the branch was reached): the default (the mask
# tested, bidirectional leaks), the mask off, padding of one, some and every token, t at either end, one token, an
# empty sentence, a link the page cannot use.
STATES = [
    pytest.param({}, None, "Nothing leaks from the future", id="default"),
    pytest.param({"causal_on": "false", "causal_padding": "3"}, None, "in the bidirectional weights", id="off-padded"),
    pytest.param({"causal_padding": "1", "causal_t": "0"}, None, "last 1 token is padding", id="pad-1-t-0"),
    pytest.param({"causal_padding": "2"}, None, "Padded key columns", id="pad-2"),
    pytest.param({"causal_padding": "6"}, None, "every row is fully masked", id="pad-all"),
    pytest.param({"causal_t": "5"}, None, "Move t to the left", id="t-last"),
    pytest.param({"causal_t": "0", "causal_padding": "5"}, None, "Reduce the padding", id="t-0-pad-5"),
    pytest.param({}, {"sentence": "a"}, "two or more tokens", id="one-token"),
    pytest.param({}, {"sentence": " "}, "Type a sentence", id="empty"),
    pytest.param({"causal_t": "99", "causal_padding": "x", "causal_on": "maybe"}, None, "`causal_t=99`",
                 id="bad-link"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("query", "session", "english"), STATES)
def test_no_english_sentence_is_left_in_portuguese_or_turkish(query, session, english):
    en = app_at(PAGE, query=query, session=session)
    assert not en.exception
    assert english in texts(en) + " ".join(w.value for w in en.warning)
    for lang in LANGS:
        other = app_at(PAGE, query={**query, "lang": lang}, session=session)
        assert_clean(other)
        assert english_left(en, other, allowed=ALLOWED) == [], lang


@pytest.mark.slow
def test_every_language_shows_the_same_numbers_with_its_decimal_mark():
    en = app_at(PAGE, query={"causal_padding": "1"})
    figs_en = figures(en)
    for lang in LANGS:
        at = app_at(PAGE, query={"causal_padding": "1", "lang": lang})
        assert_clean(at)
        figs = figures(at)
        assert set(figs) == set(figs_en)
        for key, fig_en in figs_en.items():
            for trace_en, trace in zip(fig_en["data"], figs[key]["data"], strict=True):
                for axis in ("y", "z"):
                    if isinstance(trace_en.get(axis), list):  # masked cells: None, on both
                        np.testing.assert_array_equal(np.array(trace_en[axis], dtype=float),
                                                      np.array(trace[axis], dtype=float), err_msg=f"{key} {axis}")
        for key in OWN_FIGURES:
            assert figs[key]["layout"]["separators"] == ",.", key
        # "0 (exact)" and the bidirectional changes as bar text, with the decimal comma
        bars_en, bars = figs_en["causal_fig_peek_bars"]["data"], figs["causal_fig_peek_bars"]["data"]
        assert bars[1]["text"][0] == ("0 (exato)" if lang == "pt" else "0 (tam)")
        assert bars[0]["text"] == [t.replace(".", ",") for t in bars_en[0]["text"]]
        # the sentences: the success names the exact 0.0, the warning the largest change
        success, warning = at.success[0].value, at.warning[0].value
        assert "0,0" in success and "0.0" not in success
        change_en = re.search(r"up to (\d\.\d+)", en.warning[0].value).group(1)
        assert change_en.replace(".", ",") in warning
        # numbers inside code spans (the checks) keep the machine-readable point
        checks = next(m.value for m in at.markdown if "`[1.0, " in m.value)
        assert "`0.0`" in checks


@pytest.mark.slow
def test_the_link_keeps_the_language_and_the_page_s_values_open_in_it():
    at = app_at(PAGE, query={"lang": "tr", "causal_query": "on (3)", "causal_on": "false", "causal_t": "4"})
    assert_clean(at)
    assert not at.session_state["_link_warnings"] and not [w for w in at.warning if "link" in w.value.lower()]
    assert at.selectbox(key="causal_query").value == "on (3)" and at.toggle(key="causal_on").value is False
    assert figures(at)["causal_fig_weights"]["layout"]["title"]["text"] == "çift yönlü dikkat ağırlıkları"
    at.slider(key="causal_padding").set_value(2).run()
    assert_clean(at)
    assert at.query_params["lang"] == "tr" and at.query_params["causal_query"] == "on (3)"


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
    assert F.exact_change_text(1e-17) == "1e-17" and F.exact(0.0) == "0.0"  # English outside a run
