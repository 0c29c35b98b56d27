"""Issue 18, item 6: every sentence with a count reads right at 1 and at n ("1 head", never "1 heads").

Each lesson runs with one token, d_model = 1 (so one head) and d_k = 1, and every text on the page
(Markdown, captions, notes, badges, figure titles and annotations) is searched for a 1 followed by a
plural; the multi-head lesson's mean map is checked for what it says at 1 head and at 2.
"""

from __future__ import annotations

import re

import pytest

from explorer.lessons import LESSONS
from tests.apptest_utils import app_at, assert_clean, figures

PLURAL_AFTER_ONE = re.compile(
    r"(?<![\d.,])\b1 (?:\w+ )?(heads|tokens|keys|queries|rows|columns|values|dimensions|words|positions|samples|"
    r"matrices|panels|terms|layers|steps|entries|maps|numbers|scores|sentences|pairs|bars)\b")


def _texts(at) -> list[str]:
    out = []
    for kind in ("markdown", "caption", "text", "info", "warning", "error", "success", "latex"):
        out += [str(el.value) for el in getattr(at, kind)]
    for fig in figures(at).values():
        layout = fig.get("layout", {})
        out.append(str((layout.get("title") or {}).get("text", "")))
        out += [str(a.get("text", "")) for a in layout.get("annotations", [])]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("lesson", [lesson.name for lesson in LESSONS])
def test_no_page_says_1_with_a_plural(lesson):
    at = app_at(lesson, session={"sentence": "Hello", "d_model": 1, "d_k": 1})
    assert_clean(at)
    found = [m.group(0) + " … in: " + t[:120] for t in _texts(at) for m in PLURAL_AFTER_ONE.finditer(t)]
    assert not found, found


@pytest.mark.slow
def test_multihead_at_one_head_says_the_mean_is_that_head():
    """/multihead?d_model=7&n_heads=2 falls back to 1 head: "the mean of the 1 heads' weights … not a head"."""
    one = app_at("multihead", query={"d_model": "7", "n_heads": "2"})
    assert_clean(one)
    assert one.selectbox(key="n_heads").value == 1
    infos = " ".join(i.value for i in one.info)
    assert "With one head, the map titled MEAN is that head" in infos and "1 heads" not in infos
    assert "average, not a head" not in infos
    assert figures(one)["mh_fig_mean"]["layout"]["title"]["text"] == "MEAN = head 0"
    two = app_at("multihead")
    infos = " ".join(i.value for i in two.info)
    assert "mean of the 2 heads' weights" in infos and "average, not a head" in infos
    assert figures(two)["mh_fig_mean"]["layout"]["title"]["text"] == "MEAN of 2 heads"
