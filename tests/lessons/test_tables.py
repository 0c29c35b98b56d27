"""Issue 18, item 11: every table of every lesson shows each float column with one fixed number of decimals.

AppTests of the whole app at the defaults (the quiz answered, so its reveals are drawn): every
``st.dataframe`` whose column holds floats gives that column a number format (``"%.4f"``…), so no
column mixes ``0.06`` with ``0.2`` or ``3.9929`` with ``3.46``.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest

from explorer.lessons import LESSONS
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


@pytest.mark.parametrize("page", [entry.name for entry in LESSONS])
def test_every_float_column_of_every_table_has_fixed_decimals(page):
    at = app_at(page)
    assert_clean(at)
    if page == "quiz":
        reveal_everything(at)
    problems = {}
    for i, el in enumerate(at.main.dataframe):
        bad = unformatted_float_columns(el)
        if bad:
            problems[f"table {i} {list(el.value.columns)[:4]}"] = bad
    assert not problems, f"{page}: float columns without fixed decimals: {problems}"
