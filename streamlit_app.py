"""Attention Explorer: see and play with self-attention.

Run with ``streamlit run streamlit_app.py``. The shared controls live here, in
the sidebar, so they keep their values on every page and in the page's link.
"""

import time

import streamlit as st

from app import state

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")

# The page files live in app_pages/, not pages/: with a pages/ folder beside the entrypoint,
# Streamlit serves a deep link on a fresh server as a stand-alone page (old multipage mode),
# without this entrypoint's sidebar and navigation.
# (file in app_pages/, title, icon, url path); the first is the default page.
PAGES = {
    "Learn": [
        ("walkthrough.py", "Step-by-step walkthrough", "🧮", "walkthrough"),
        ("lookup.py", "Attention as a soft lookup", "🗂️", "lookup"),
        ("scaling.py", "Why divide by √d_k", "📏", "scaling"),
        ("multihead.py", "Multi-head attention", "🧩", "multihead"),
        ("causal.py", "The causal mask", "⏳", "causal"),
        ("two_sentences.py", "Two sentences, one set of weights", "🔀", "two-sentences"),
    ],
    "Practice": [
        ("quiz.py", "Check yourself", "✅", "quiz"),
    ],
}

nav = {
    section: [
        st.Page(f"app_pages/{file}", title=title, icon=icon, url_path=url, default=(file == "walkthrough.py"))
        for file, title, icon, url in entries
    ]
    for section, entries in PAGES.items()
}
page = st.navigation(nav)
started = time.perf_counter()
state.sidebar_controls()
link_warnings = st.container()  # on top of the page: the link's bad values from earlier runs
page.run()
with link_warnings:
    state.show_link_warnings()
st.session_state["_run_seconds"] = time.perf_counter() - started  # read by bench/bench_pages.py
