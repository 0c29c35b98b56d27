"""The "Numbers" expander every picture has: the exact values behind it, in a table a learner can copy."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import streamlit as st


def numbers(values: np.ndarray | pd.DataFrame, rows: Sequence[str] | None = None, cols: Sequence[str] | None = None,
            *, label: str = "Numbers", hide_index: bool = False) -> None:
    """An expander titled ``label`` holding ``values`` as a table (full precision; copy with the table's menu).

    Args:
        values: a ``[n_rows, n_cols]`` matrix (with ``rows``/``cols`` labels) or a ready ``DataFrame``.
        rows, cols: row and column labels for a matrix (tokens are shown as typed: table cells are text).
        label: the expander's title (the app's own words, never a visitor's text).
        hide_index: hide the row labels (for frames that carry them as a column).
    """
    frame = values if isinstance(values, pd.DataFrame) else pd.DataFrame(values, index=rows, columns=cols)
    with st.expander(label):
        st.dataframe(frame, width="stretch", hide_index=hide_index)
