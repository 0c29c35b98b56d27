"""The shared widgets of explorer.shell.controls, driven through a lesson page (AppTest)."""

from __future__ import annotations

import pytest

from explorer.shell import controls, textviews
from tests.apptest_utils import app_at, assert_clean


@pytest.mark.slow
def test_token_picker_follows_a_new_sentence():
    """The picker's options are the current sentence's labels: after a new sentence it shows (and the link holds)
    one of them, keeping the position where it exists, else the last token; never a stale label."""
    at = app_at("walkthrough")
    at.selectbox(key="walk_query").select_index(2).run()
    assert at.selectbox(key="walk_query").value == "sat (2)"
    at.session_state["sentence"] = "one two three four"
    at.run()
    assert_clean(at)
    assert at.selectbox(key="walk_query").value == "three (2)"
    assert at.selectbox(key="walk_query").options == ["one (0)", "two (1)", "three (2)", "four (3)"]
    at.session_state["sentence"] = "a b"
    at.run()
    assert at.selectbox(key="walk_query").value == "b (1)"  # position 2 is gone: the last token
    assert not at.warning, [w.value for w in at.warning]


@pytest.mark.slow
def test_token_picker_warns_about_a_label_the_sentence_does_not_have():
    at = app_at("walkthrough", query={"walk_query": "dog (9)"})
    assert_clean(at)
    assert any("walk_query=dog (9)" in w.value for w in at.warning)
    assert at.selectbox(key="walk_query").value == "The (0)"


# --- link values: numbers as the app writes them, values shown as text ---------------------------------------------

@pytest.mark.parametrize("raw", ["nan", "inf", "-inf", "1e309", "9e18", "-0", "1e2", "0x10", " 5 ", "", "5.0", "\u0663",
                                 "1_000", "+5", "007", "513", "0", "Infinity"])
def test_link_number_takes_only_numbers_as_the_app_writes_them(raw):
    assert controls.link_number(raw, 1, 512, integer=True) is None


def test_link_number_takes_valid_numbers_exactly():
    assert controls.link_number("512", 1, 512, integer=True) == 512
    assert controls.link_number("-3", -5, 5, integer=True) == -3
    assert controls.link_number("1.73", -5.0, 5.0, integer=False, step=0.01) == 1.73
    assert controls.link_number("-5", -5.0, 5.0, integer=False, step=0.01) == -5.0
    for raw in ("1.735", "1.70", "5.0", "-0", "1e0", "5.01"):  # off the grid, not as written, out of range
        assert controls.link_number(raw, -5.0, 5.0, integer=False, step=0.01) is None, raw


@pytest.mark.parametrize("text", ["`[x](https://example.invalid)`", "``", "a ``` b", "`", " `x` ", "plain"])
def test_a_code_span_holds_any_text(text):
    """The fence is longer than any backtick run inside, so nothing in the text ends the span early."""
    span = textviews.code_span(text)
    fence = span[: len(span) - len(span.lstrip("`"))]
    inner = span[len(fence): len(span) - len(fence)]
    assert fence not in inner and inner.strip(" ") == text.strip(" ") and span.endswith(fence)


def test_link_values_are_shown_so_the_odd_ones_are_visible():
    assert controls._shown("abc") == "abc"
    assert controls._shown("") == "''" and controls._shown(" 5 ") == "' 5 '"
    assert controls._shown("`\n# HACKED\n`") == repr("`\n# HACKED\n`")  # no newline reaches the Markdown
    assert controls._shown("a\u202eb") == repr("a\u202eb")  # a bidi override would reorder the warning
    assert controls._shown("x" * 50) == "x" * controls.SHOWN_CHARS + "…"


@pytest.fixture
def session_state_warnings(monkeypatch):
    """What Streamlit logs as "created with a default value but also had its value set via the Session State API"
    (logged once per process, so the once-flag is reset here)."""
    from streamlit.elements.lib import policies

    logged: list[str] = []
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **kw: logged.append(msg % args))
    return logged


@pytest.mark.slow
def test_link_corrections_presets_and_clamps_set_values_without_the_session_state_warning(session_state_warnings):
    """Issue #19 item 5: a link value the page corrects (n_heads), a preset, a clamp after a shorter sentence and a
    head count moved after a new d_model reach their widgets without Streamlit's Session State warning."""
    at = app_at("multihead", query={"n_heads": "3"})
    assert_clean(at)
    assert at.selectbox(key="n_heads").value == 2
    # Widgets seeded from the link before the page corrects or removes a value (the run starts again).
    at = app_at("multihead", query={"sentence": "a b c", "embedding": "per-token", "d_model": "12", "n_heads": "5",
                                    "seed": "inf", "mh_causal": "true"})
    assert_clean(at)
    assert (at.text_input(key="sentence").value, at.selectbox(key="n_heads").value) == ("a b c", 4)
    assert (at.number_input(key="seed").value, at.toggle(key="mh_causal").value) == (42, True)
    at = app_at("multihead", session={"d_model": 12})
    at.selectbox(key="n_heads").set_value(6).run()
    at.session_state["d_model"] = 8
    at.run()
    assert at.selectbox(key="n_heads").value == 4
    at = app_at("causal")
    at.slider(key="causal_padding").set_value(5).run()
    at.slider(key="causal_t").set_value(5).run()
    at.session_state["sentence"] = "a b c"
    at.run()
    assert_clean(at)
    assert (at.slider(key="causal_padding").value, at.slider(key="causal_t").value) == (3, 2)  # clamped
    at = app_at("lookup")
    preset = at.selectbox(key="lookup_preset")
    preset.set_value(preset.options[1]).run()
    assert_clean(at)
    assert (at.slider(key="lookup_qx").value, at.slider(key="lookup_qy").value) != (1.73, 1.0)
    at.run()  # the run after: the sliders have their defaults again, the values stay
    assert at.slider(key="lookup_qx").value != 1.73
    assert not session_state_warnings, session_state_warnings


@pytest.mark.slow
def test_a_run_that_starts_again_keeps_the_sidebars_values_on_screen():
    """A link value refused further down the page starts the run again after the sidebar was drawn. The browser draws
    a widget it has no state for from the message's default: the sentence box came back empty (while the server kept
    the sentence) until the text boxes and switches were given their default on every run, as the numbers are."""
    at = app_at("scaling", query={"scale_seed": "abc", "scale_hist_log": "maybe"})
    assert_clean(at)
    assert any("scale_seed=abc" in w.value for w in at.warning) and any("scale_hist_log=maybe" in w.value
                                                                           for w in at.warning)
    sentence = at.text_input(key="sentence")
    assert sentence.value == sentence.proto.default == controls.DEFAULTS["sentence"]
    assert at.number_input(key="seed").proto.default == controls.DEFAULTS["seed"]
