"""Issue 18, item 11: every table of every lesson shows each float column with one fixed number of decimals.

AppTests of the whole app at the defaults (the quiz answered, so its reveals are drawn): every
``st.dataframe`` whose column holds floats gives that column a number format (``"%.4f"``…), so no
column mixes ``0.06`` with ``0.2`` or ``3.9929`` with ``3.46``.
"""

from __future__ import annotations

import importlib
import json
import re

import pandas as pd
import pytest

from explorer.lessons import LESSONS
from explorer.shell import controls
from tests.apptest_utils import app_at, assert_clean
from tests.lessons.test_links import reveal_everything

pytestmark = pytest.mark.slow  # whole-app runs


def unformatted_float_columns(el) -> list[str]:
    frame = el.value
    config = json.loads(el.proto.columns or "{}")
    out = []
    for col, dtype in frame.dtypes.items():
        if pd.api.types.is_float_dtype(dtype):
            fmt = config.get(str(col), {}).get("type_config", {}).get("format")
            if not fmt:
                out.append(str(col))
    return out


ON_DEMAND = ("causes", "sinks", "kv_cache")  # lessons whose costly sections wait for a switch (issue 47, item 2)


def every_section_on(page: str) -> dict[str, str]:
    """The link values that switch on every section of ``page`` that computes on demand (every toggle of those
    lessons is such a switch), so that their tables are drawn too."""
    if page not in ON_DEMAND:
        return {}
    package = importlib.import_module(f"explorer.lessons.{page}")
    return {c.key: "true" for c in package.CONTROLS.values() if isinstance(c, controls.Toggle)}


def test_the_on_demand_lessons_have_switches():
    assert all(every_section_on(page) for page in ON_DEMAND)


@pytest.mark.parametrize("page", [entry.name for entry in LESSONS])
def test_every_float_column_of_every_table_has_fixed_decimals(page):
    at = app_at(page, query=every_section_on(page))
    assert_clean(at)
    if page == "quiz":
        reveal_everything(at)
    problems = {}
    for i, el in enumerate(at.main.dataframe):
        bad = unformatted_float_columns(el)
        if bad:
            problems[f"table {i} {list(el.value.columns)[:4]}"] = bad
    assert not problems, f"{page}: float columns without fixed decimals: {problems}"


PART_2 = {"real_model", "causes", "kv_cache", "sinks", "training"}  # issue 48 part 2 translates these lessons again
DECIMAL_POINT = re.compile(r"^[−-]?\d+\.\d+$")


@pytest.mark.parametrize("page", [entry.name for entry in LESSONS if entry.name not in PART_2])
def test_no_table_writes_a_decimal_point_in_portuguese(page):
    """Streamlit writes a float column's numbers with a point whatever the page's language (its ``"%.4f"`` format,
    its ``"localized"`` format follows the browser, not the app): a table in Portuguese holds them as text written
    with a decimal comma (``explorer.shell.tables.dataframe``)."""
    at = app_at(page, query={"lang": "pt"})
    assert_clean(at)
    if page == "quiz":
        reveal_everything(at)
    problems = {}
    for i, el in enumerate(at.main.dataframe):
        frame = el.value
        bad = [str(c) for c, dtype in frame.dtypes.items() if pd.api.types.is_float_dtype(dtype)]
        bad += [str(c) for c in frame.columns if frame[c].map(lambda v: bool(DECIMAL_POINT.match(str(v)))).any()]
        if bad:
            problems[f"table {i} {list(frame.columns)[:4]}"] = bad
    assert not problems, f"{page}: columns written with a decimal point in Portuguese: {problems}"
