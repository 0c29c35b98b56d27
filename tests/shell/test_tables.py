"""Issue 18, item 11: every table shows each float column with one fixed number of decimals."""

import numpy as np
import pandas as pd

from explorer.shell.tables import DECIMALS, number_columns


def test_every_float_column_gets_fixed_decimals_and_other_columns_keep_theirs():
    frame = pd.DataFrame({"key": ["France", "Spain", "Italy"], "q · k": [3.9929, 3.46, 1.3645],
                          "weight": [0.06, 0.2, 0.74], "rank": [1, 2, 3], "masked": [True, False, True]})
    config = number_columns(frame)
    assert set(config) == {"q · k", "weight"}
    for col in config.values():
        assert col["type_config"]["type"] == "number" and col["type_config"]["format"] == f"%.{DECIMALS}f"
    assert number_columns(frame, 3)["weight"]["type_config"]["format"] == "%.3f"


def test_matrix_columns_are_named_as_streamlit_names_them():
    frame = pd.DataFrame(np.eye(2) / 3, index=["a (0)", "b (1)"], columns=[0, 1])
    assert set(number_columns(frame)) == {"0", "1"}


def test_a_table_is_too_big_past_table_max_cells():
    from explorer.shell import tables

    assert not tables.too_big(100, tables.TABLE_MAX // 100) and tables.too_big(100, tables.TABLE_MAX // 100 + 1)
    assert tables.too_big(512, 64) and not tables.too_big(64, 64)  # multihead's W_q at d_model 512 / at 64
