"""The "Numbers" expander every picture has: the exact values behind it, in a table a learner can copy;
:func:`dataframe`, every table of numbers with fixed decimals per column; and the policy for a table too big for
the page (:func:`too_big`): it is offered as a CSV download instead (:func:`csv_download`), built only when
clicked."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pandas as pd
import streamlit as st

from explorer.shell import i18n

_, _n = i18n.translator(__name__)

DECIMALS = 4  # every float column of every table: this many decimals (3.9929, 3.4600, 1.3645 line up)
TABLE_MAX = 20_000  # cells shown as a table; a bigger matrix is offered as a CSV download (built on click)


def too_big(rows: int, cols: int) -> bool:
    """Whether a ``rows`` × ``cols`` table has more than :data:`TABLE_MAX` cells: then a page offers it as a CSV
    download (:func:`csv_download`) instead of drawing it."""
    return rows * cols > TABLE_MAX


def csv_download(name: str, shape: tuple[int, int], data: Callable[[], str], *, key: str) -> None:
    """A table too big for the page (:func:`too_big`): its size and a button downloading ``name.csv``, whose text
    ``data()`` builds only when clicked (no rerun either). A widget: drawn by the page, never inside a section."""
    rows, cols = shape
    st.caption(_("{rows} × {cols} numbers: too many for a table on the page.").format(
        rows=i18n.integer(rows), cols=i18n.integer(cols)))
    st.download_button(_("Download {name} (CSV)").format(name=name), data, f"{name}.csv", "text/csv", key=key,
                       on_click="ignore")  # no rerun: see the walkthrough


def number_columns(frame: pd.DataFrame, digits: int = DECIMALS) -> dict[str, st.column_config.NumberColumn]:
    """``column_config`` giving every float column of ``frame`` the same ``digits`` decimals (``"%.4f"``).

    Integer, text and boolean columns keep Streamlit's own display. A column's values stay full precision in
    the table (sorting, copying the data); only the display is fixed, so a column never mixes ``0.06``
    with ``0.2`` or ``3.9929`` with ``3.46``.
    """
    config = st.column_config.NumberColumn(format=f"%.{digits}f")  # one config shared by every column: 512
    return {str(col): config for col, dtype in frame.dtypes.items() if dtype.kind == "f"}  # columns stay cheap


def dataframe(frame: pd.DataFrame, *, digits: int = DECIMALS, column_config: dict | None = None, **kwargs) -> None:
    """``st.dataframe(frame)`` with fixed decimals per float column (:func:`number_columns`).

    ``column_config`` entries given here win for their column; ``kwargs`` go to ``st.dataframe``
    (``hide_index``, ``width``, ``height``…). Column labels are made strings (Streamlit names a column
    by its label). In Português and Türkçe the float columns are shown as text with the language's decimal comma
    (:func:`explorer.shell.i18n.number`), right-aligned; the downloads keep the numbers.
    """
    if not all(isinstance(c, str) for c in frame.columns):
        frame = frame.rename(columns=str)
    config = number_columns(frame, digits)
    if i18n.current() != i18n.DEFAULT and config:  # a decimal comma: the float columns as the language writes them
        frame = frame.copy()
        for col in config:
            frame[col] = [i18n.number(float(v), digits) for v in frame[col]]
        config = {col: st.column_config.TextColumn(alignment="right") for col in config}
    st.dataframe(frame, column_config={**config, **(column_config or {})}, **kwargs)


def numbers(values: np.ndarray | pd.DataFrame | Mapping[str, pd.DataFrame], rows: Sequence[str] | None = None,
            cols: Sequence[str] | None = None, *, label: str | None = None, hide_index: bool | None = None) -> None:
    """An expander titled ``label`` holding the exact numbers behind a picture, every float column shown with
    :data:`DECIMALS` decimals (:func:`dataframe`; the values underneath keep full precision).

    Args:
        values: a ``[n_rows, n_cols]`` matrix (with ``rows``/``cols`` labels), a ready ``DataFrame``, or
            ``{heading: DataFrame}`` for several tables in one expander (each under its heading, in order).
        rows, cols: row and column labels for a matrix (tokens are shown as typed: table cells are text).
        label: the expander's title (the app's own words, never a visitor's text); default "Numbers".
        hide_index: hide the row labels; default: hidden when they are just 0, 1, 2, … (a ``RangeIndex``),
            shown when they name the rows (tokens, dims).
    """
    if not isinstance(values, Mapping):
        values = {"": values if isinstance(values, pd.DataFrame) else pd.DataFrame(values, index=rows, columns=cols)}
    with st.expander(_("Numbers") if label is None else label):
        for heading, frame in values.items():
            if heading:
                st.markdown(f"**{heading}**")
            hide = isinstance(frame.index, pd.RangeIndex) if hide_index is None else hide_index
            dataframe(frame, width="stretch", hide_index=hide)
