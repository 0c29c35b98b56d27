"""The reference page of the browser benchmarks (issue 20): one slider, one Plotly heat map.

``streamlit run bench/trivial_app.py``; ``bench/browser.py`` measures it beside the app, in the same run.
The heat map is 6 x 6 (the app's default sentence has 6 tokens) and changes with the slider. It is drawn through the
app's chart door (``charts.show_fig``), so ``ATTENTION_CHART_DOOR=plotly_chart`` makes it ``st.plotly_chart``'s.
"""

import sys
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import streamlit as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from explorer.shell.charts.door import show_fig  # noqa: E402

st.title("Trivial page")
k = st.slider("k", 0, 1000, 0, key="trivial_k")
z = np.random.default_rng(k).random((6, 6))
show_fig(go.Figure(go.Heatmap(z=z)), key="trivial_fig")
