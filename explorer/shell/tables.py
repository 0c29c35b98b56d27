"""The "Numbers" expander every picture has: the exact values behind it, in a table a learner can copy."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import streamlit as st


def numbers(values: np.ndarray | pd.DataFrame | Mapping[str, pd.DataFrame], rows: Sequence[str] | None = None,
            cols: Sequence[str] | None = None, *, label: str = "Numbers", hide_index: bool | None = None) -> None:
    """An expander titled ``label`` holding the exact numbers behind a picture (full precision; copy them
    with the table's menu).

    Args:
        values: a ``[n_rows, n_cols]`` matrix (with ``rows``/``cols`` labels), a ready ``DataFrame``, or
            ``{heading: DataFrame}`` for several tables in one expander (each under its heading, in order).
        rows, cols: row and column labels for a matrix (tokens are shown as typed: table cells are text).
        label: the expander's title (the app's own words, never a visitor's text).
        hide_index: hide the row labels; default: hidden when they are just 0, 1, 2, … (a ``RangeIndex``),
            shown when they name the rows (tokens, dims).
    """
    if isinstance(values, Mapping):
        tables = dict(values)
    else:
        frame = values if isinstance(values, pd.DataFrame) else pd.DataFrame(values, index=rows, columns=cols)
        tables = {"": frame}
    with st.expander(label):
        for heading, frame in tables.items():
            if heading:
                st.markdown(f"**{heading}**")
            hide = isinstance(frame.index, pd.RangeIndex) if hide_index is None else hide_index
            st.dataframe(frame, width="stretch", hide_index=hide)
