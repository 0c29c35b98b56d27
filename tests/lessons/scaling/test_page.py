"""AppTest of the page "Why divide by √d_k" (explorer/lessons/scaling/page.py) at defaults, links and extremes."""

import base64
import json
import re
from urllib.parse import parse_qsl, urlsplit

import numpy as np
import pytest

from explorer.lessons import scaling
from explorer.lessons.scaling import model as S
from explorer.shell import controls, i18n
from explorer.shell.textviews import fmt
from tests.apptest_utils import app_at, assert_clean, figures
from tests.lessons.test_languages import check_every_language

CHARTS = {"scale_fig_hist", "scale_fig_bar_unscaled", "scale_fig_bar_scaled", "scale_fig_heat_unscaled",
          "scale_fig_heat_scaled", "scale_fig_curves", "scale_fig_temp_bar", "scale_fig_temp_sweep"}
MAX_SEED = 2**31 - 1


def arr(values) -> np.ndarray:
    """A figure's data array: a plain (nested) list or Plotly's typed array ``{"dtype", "bdata", "shape"}``."""
    if isinstance(values, dict):
        a = np.frombuffer(base64.b64decode(values["bdata"]), dtype=values["dtype"])
        return a.reshape([int(n) for n in str(values["shape"]).split(",")]) if "shape" in values else a
    return np.array(values, dtype=float)


def verdict(at) -> str:
    """The verdict box (its icon names it in every language)."""
    return next(i.value for i in at.info if i.icon == "📏")


def assert_finite_page(at) -> dict[str, dict]:
    """Clean page, every chart present, no NaN/inf in any chart's data."""
    assert_clean(at)
    figs = figures(at)
    assert set(figs) == CHARTS
    for key, fig in figs.items():
        text = json.dumps(fig)
        assert "NaN" not in text and "Infinity" not in text, key
        for trace in fig["data"]:
            for axis in ("x", "y", "z"):
                if axis in trace and trace[axis] is not None:
                    values = arr(trace[axis]).astype(float)
                    assert np.all(np.isfinite(values[~np.isnan(values)])), (key, axis)
    return figs


def curve_point(fig, panel: int, series: str, d_k: int) -> float:
    traces = [t for t in fig["data"] if t["name"] == series]
    return float(arr(traces[panel]["y"])[list(arr(traces[panel]["x"])).index(d_k)])


@pytest.mark.slow
def test_defaults(golden):
    at = app_at("scaling")
    figs = assert_finite_page(at)
    assert at.select_slider(key="scale_d_k").value == 64 and at.slider(key="scale_n_keys").value == 6
    assert len(json.dumps(figs)) <= 150_000  # histograms are binned, not raw samples
    # the verdict is the curves' numbers at the current d_k
    curves = figs["scale_fig_curves"]
    text = verdict(at)
    assert "d_k = 64" in text
    assert f"{100 * curve_point(curves, 0, 'unscaled', 64):.0f}%" in text
    assert f"{100 * curve_point(curves, 0, 'scaled', 64):.0f}%" in text
    ratio = curve_point(curves, 2, "scaled", 64) / curve_point(curves, 2, "unscaled", 64)
    assert f"{ratio:.1f}× smaller" in text
    assert all(s["x0"] == 64 for s in curves["layout"]["shapes"])
    # histogram: measured variances next to the theory
    names = [t["name"] for t in figs["scale_fig_hist"]["data"]]
    assert "theory d_k = 64" in names[0] and "theory 1" in names[1]
    # both heat maps on the same colour range, rows sum to 1
    for key in ("scale_fig_heat_unscaled", "scale_fig_heat_scaled"):
        hm = figs[key]["data"][0]
        assert (hm["zmin"], hm["zmax"]) == (0, 1)
        np.testing.assert_allclose(arr(hm["z"]).sum(axis=1), 1.0)
    expected = next(e["softmax"] for e in golden["softmax_examples"] if e["logits"] == [2.0, 1.0, 0.1])
    np.testing.assert_allclose(arr(figs["scale_fig_temp_bar"]["data"][0]["y"]), expected, atol=1e-12)
    assert any(r"\operatorname{diag}(w) - w\,w^\top" in x.value for x in at.latex)
    assert any(r"\operatorname{Var}(q\cdot k)" in x.value and "= d_k" in x.value for x in at.latex)


@pytest.mark.slow
def test_moving_d_k_moves_the_marker_and_keeps_the_curves():
    at = app_at("scaling")
    before = figures(at)["scale_fig_curves"]
    at.select_slider(key="scale_d_k").set_value(1024).run()
    after = figures(at)["scale_fig_curves"]
    for b, a in zip(before["data"], after["data"], strict=True):
        np.testing.assert_array_equal(arr(b["y"]), arr(a["y"]))
    assert all(s["x0"] == 1024 for s in after["layout"]["shapes"])
    assert "d_k = 1024" in verdict(at)


@pytest.mark.slow
def test_a_link_presets_the_page():
    at = app_at("scaling", query={"scale_d_k": "256", "scale_n_keys": "9", "scale_seed": "3",
                                     "scale_samples": "4096", "scale_temperature": "0.5"})
    figs = assert_finite_page(at)
    assert not at.session_state["_link_warnings"]
    assert at.select_slider(key="scale_d_k").value == 256
    assert at.slider(key="scale_n_keys").value == 9 and at.number_input(key="scale_seed").value == 3
    assert at.select_slider(key="scale_samples").value == 4096
    assert at.select_slider(key="scale_temperature").value == 0.5
    assert "d_k = 256" in verdict(at)
    assert arr(figs["scale_fig_heat_scaled"]["data"][0]["z"]).shape == (9, 9)
    now = S.setting(256, 9, 4096, 3)
    assert f"{now.raw_var:.3f}" in figs["scale_fig_hist"]["data"][0]["name"]


@pytest.mark.slow
def test_the_lessons_own_link_opens_without_a_warning():
    """A link from the declared controls (what the quiz builds) holds values the page accepts, even from
    out-of-range input."""
    query = dict(parse_qsl(urlsplit(controls.link(scaling, d_k=100, n_keys=40, seed=3)).query))
    assert query == {"scale_d_k": "128", "scale_n_keys": "32", "scale_seed": "3"}
    at = app_at("scaling", query=query)
    assert_finite_page(at)
    assert not at.session_state["_link_warnings"]
    assert not [w.value for w in at.warning]
    assert at.select_slider(key="scale_d_k").value == 128
    assert at.slider(key="scale_n_keys").value == 32 and at.number_input(key="scale_seed").value == 3
    assert "d_k = 128" in verdict(at)


@pytest.mark.slow
def test_bad_link_values_warn_and_fall_back_to_defaults():
    at = app_at("scaling", query={"scale_d_k": "100", "scale_n_keys": "999", "scale_samples": "7",
                                     "scale_temperature": "abc", "scale_seed": "-1"})
    assert_finite_page(at)
    text = " ".join(w.value for w in at.warning)  # state.check_link shows each next to its control
    for key in ("scale_d_k", "scale_n_keys", "scale_samples", "scale_temperature", "scale_seed"):
        assert f"`{key}=" in text, key
    assert at.select_slider(key="scale_d_k").value == 64 and at.select_slider(key="scale_temperature").value == 1.0


def test_smallest_settings_through_the_widgets():
    at = app_at("scaling")
    at.select_slider(key="scale_d_k").set_value(1)
    at.slider(key="scale_n_keys").set_value(S.N_KEYS_RANGE[0])
    at.number_input(key="scale_seed").set_value(0)
    at.select_slider(key="scale_samples").set_value(S.SAMPLE_CHOICES[0])
    at.select_slider(key="scale_temperature").set_value(S.TEMPERATURE_CHOICES[0])
    at.toggle(key="scale_hist_log").set_value(True)
    at.run()
    figs = assert_finite_page(at)
    assert figs["scale_fig_hist"]["layout"]["yaxis"]["type"] == "log"
    assert "changes nothing" in verdict(at)
    np.testing.assert_allclose(arr(figs["scale_fig_temp_bar"]["data"][0]["y"]), [1, 0, 0], atol=1e-40)
    un = arr(figs["scale_fig_heat_unscaled"]["data"][0]["z"])
    np.testing.assert_allclose(un, arr(figs["scale_fig_heat_scaled"]["data"][0]["z"]))


@pytest.mark.slow
def test_largest_settings_through_a_link():
    at = app_at("scaling", query={"scale_d_k": str(S.D_K_CHOICES[-1]), "scale_n_keys": str(S.N_KEYS_RANGE[1]),
                                     "scale_seed": str(MAX_SEED), "scale_samples": str(S.SAMPLE_CHOICES[-1]),
                                     "scale_temperature": "100"})
    figs = assert_finite_page(at)
    assert not at.session_state["_link_warnings"]
    assert "smaller than with scaling" in verdict(at)
    np.testing.assert_allclose(arr(figs["scale_fig_temp_bar"]["data"][0]["y"]), 1 / 3, atol=0.01)
    assert len(json.dumps(figs["scale_fig_hist"])) < 20_000
    z = arr(figs["scale_fig_heat_unscaled"]["data"][0]["z"])
    assert z.shape == (32, 32) and z.max() > 0.99  # saturated: one key takes (nearly) everything


def test_the_sidebar_says_this_page_keeps_its_own_colour_range():
    at = app_at("scaling", query={"color_scale": "row"})
    assert_clean(at)
    assert "color_scale" in at.session_state["_not_used"]


# --- in every language: the branches no manifest state reaches (tests/lessons/test_languages.py checks the rest) ---

LANGUAGE_STATES = {  # the verdict's branches (the English words that prove it was reached), the log axis, extremes
    "d_k-1-smallest-log": ({"scale_d_k": "1", "scale_n_keys": "2", "scale_samples": "256", "scale_temperature": "0.01",
                            "scale_hist_log": "true"}, "changes nothing"),
    "about-the-same": ({"scale_d_k": "2", "scale_samples": "256"}, "about the same"),
    "still-larger": ({"scale_d_k": "4", "scale_n_keys": "32", "scale_samples": "256", "scale_temperature": "100"},
                     "still"),
}
LANGS = ("pt", "tr")
PAGE = "scaling"
OWN_FIGURES = ("scale_fig_hist", "scale_fig_curves", "scale_fig_bar_unscaled", "scale_fig_bar_scaled",
               "scale_fig_temp_bar", "scale_fig_temp_sweep")


@pytest.mark.slow
@pytest.mark.parametrize("state", list(LANGUAGE_STATES))
def test_every_verdict_is_written_in_every_language(state):
    query, english_verdict = LANGUAGE_STATES[state]
    runs = check_every_language("scaling", query)
    assert english_verdict in verdict(runs["en"])
    assert not [lang for lang in LANGS if english_verdict in verdict(runs[lang])]


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
