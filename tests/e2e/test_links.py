"""Shared links: a link reproduces what setting the controls by hand shows; a bad link warns and uses defaults."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import DEFAULTS, chart_numbers, numbers_equal

pytestmark = pytest.mark.e2e

# A bad link value is named in a warning as `key=value` ("The link's `seed=abc` is not valid ...").
BAD_LINK = re.compile(r"not valid|cannot use|had values", re.IGNORECASE)

# Not the defaults in every field, so a control the link fails to set shows up as a difference.
SHARED = {"sentence": "the dog chased the cat", "embedding": "per-token", "positional": True, "seed": 7,
          "d_model": 12, "d_k": 6}
HAND_ORDER = ("sentence", "embedding", "positional", "seed", "d_model", "d_k")


def _diff(a: dict, b: dict) -> list[str]:
    keys = sorted(set(a) | set(b))
    return [k for k in keys if k not in a or k not in b or not numbers_equal(a[k], b[k])]


def _link_params(url: str) -> dict[str, str]:
    return {k: v[-1] for k, v in parse_qs(urlparse(url).query, keep_blank_values=True).items()}


def _as_param(v) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


def _alerts(st_app) -> list[str]:
    return st_app.page.locator('[data-testid="stAlert"]').all_inner_texts()


def _value_problems(st_app, expected: dict, where: str) -> list[str]:
    out = []
    for key, want in expected.items():
        got = st_app.widget_value(key)
        ok = (got is want) if isinstance(want, bool) else (got is not None and str(want) in str(got))
        if not ok:
            out.append(f"{where}: control {key} shows {got!r}, expected {want!r}")
    return out


def _link_then_by_hand(st_app, path: str, params: dict, order: tuple[str, ...]) -> None:
    """Open the link, then set the same values by hand in a new session: same numbers, same address bar."""
    where = path or "walkthrough"
    problems = []
    st_app.open(path, params)
    assert not st_app.exceptions(), st_app.exceptions()
    bad = [a for a in _alerts(st_app) if BAD_LINK.search(a)]
    if bad:
        problems.append(f"{where}: a valid link was reported as invalid: {bad}")
    problems += _value_problems(st_app, params, f"{where} opened from the link")
    from_link = chart_numbers(st_app.charts())
    assert from_link

    st_app.open(path)  # a new session at defaults, then the learner sets every value
    for key in order:
        st_app.set_widget(key, params[key])
    assert not st_app.exceptions(), st_app.exceptions()
    by_hand = chart_numbers(st_app.charts())
    differ = _diff(from_link, by_hand)
    if differ:
        problems.append(f"{where}: the link and the same values set by hand show different numbers in {differ}")
    # The address bar after setting by hand carries every value as the link spells it (what a learner copies).
    shown = _link_params(st_app.page.url)
    for key, value in params.items():
        if shown.get(key) != _as_param(value):
            problems.append(f"{where}: after setting by hand the address bar has {key}={shown.get(key)!r}, "
                            f"expected {key}={_as_param(value)!r}")
    assert not problems, "\n".join(problems)


def test_link_shows_the_same_numbers_as_setting_by_hand(st_app):
    _link_then_by_hand(st_app, "", SHARED, HAND_ORDER)


def test_link_with_heads_on_multihead_page(st_app, nav_pages):
    assert "multihead" in [p["path"] for p in nav_pages], f"the multi-head page is not in the navigation: {nav_pages}"
    # The shared controls' link is covered on the walkthrough; here the page's own controls and d_model,
    # which decides the valid head counts (12: 1, 2, 3, 4, 6, 12).
    params = {"d_model": 12, "n_heads": 3, "mh_causal": True}
    _link_then_by_hand(st_app, "multihead", params, ("d_model", "n_heads", "mh_causal"))


def test_link_with_garbage_values_warns_and_uses_defaults(st_app, ready):
    garbage = {"seed": "abc", "d_k": "999", "d_model": "-3", "embedding": "nope", "positional": "maybe"}
    st_app.open("", garbage)
    assert not st_app.exceptions()
    alerts = _alerts(st_app)
    for key, raw in garbage.items():
        assert any(f"{key}={raw}" in a for a in alerts), f"no warning names {key}={raw}; alerts: {alerts}"
    assert {k: st_app.widget_value(k) for k in DEFAULTS} == ready["default_values"]
    differ = _diff(chart_numbers(ready["default_charts"]), chart_numbers(st_app.charts()))
    assert not differ, f"a garbage link does not show the defaults' numbers: {differ}"


def test_link_with_garbage_heads_warns_and_uses_defaults(st_app, nav_pages):
    assert "multihead" in [p["path"] for p in nav_pages], f"the multi-head page is not in the navigation: {nav_pages}"
    st_app.open("multihead")
    defaults = chart_numbers(st_app.charts())
    default_heads = st_app.widget_value("n_heads")
    st_app.open("multihead", {"n_heads": "abc"})
    assert not st_app.exceptions()
    alerts = _alerts(st_app)
    assert any("n_heads=abc" in a for a in alerts), f"no warning about n_heads=abc; alerts: {alerts}"
    assert st_app.widget_value("n_heads") == default_heads
    differ = _diff(defaults, chart_numbers(st_app.charts()))
    assert not differ, f"a garbage n_heads link does not show the defaults' numbers: {differ}"
