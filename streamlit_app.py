"""Attention Explorer: see and play with self-attention.

Run with ``streamlit run streamlit_app.py``. The shared controls live here, in the sidebar, so
they keep their values on every page and in the page's link; each lesson is a package in
``explorer/lessons/`` (not ``pages/``: see :mod:`explorer.lessons`).
"""

import time
from pathlib import Path

import streamlit as st

from explorer.lessons import LESSONS
from explorer.shell import blas, controls, i18n, llm

blas.apply_once()  # one BLAS thread per run unless the operator says otherwise (explorer/shell/blas.py)
_, _n = i18n.translator(__file__)

st.set_page_config(page_title="Attention Explorer", page_icon="🔍", layout="wide")
st.html(Path(__file__).parent / "explorer" / "shell" / "app.css")  # style only: hides cell text too wide for its chart

controls.language_control()  # first: the page titles below are in the run's language
nav: dict[str, list] = {}
pages = []  # in LESSONS' order: the "Next lesson" link below
for i, lesson in enumerate(LESSONS):
    pages.append(st.Page(lesson.page, title=_(lesson.title), icon=lesson.icon, default=(i == 0),
                         url_path=lesson.url_path if i else f"{lesson.url_path}-home"))
    nav.setdefault(_(lesson.group), []).append(pages[-1])
# The default lesson is served at "/"; its own path ("/walkthrough", as README lists it) would otherwise open
# Streamlit's "Page not found" dialog, so a hidden page serves the same lesson there. (Streamlit reserves the
# default page's url_path although it never serves it: hence "-home" above, a path nobody links to.)
first = LESSONS[0]
hidden_first = st.Page(first.page, title=_(first.title), icon=first.icon, url_path=first.url_path, visibility="hidden")
nav[_(first.group)].append(hidden_first)
page = st.navigation(nav)
started = time.perf_counter()
controls.sidebar_controls(page.url_path)
llm.model_picker()  # the model the real-model lessons run (drawn when the server lists more than one)
with st.sidebar:  # last in the sidebar (it takes no room there): the page's <html lang> (a one-line assignment, also on
    # a rerun), a tap on a chart opens the cell tapped, choosing a lesson on a phone closes the sidebar (see the files)
    shell = Path(__file__).parent / "explorer" / "shell"
    st.html("<script>" + i18n.document_language_js() + "\n" + (shell / "touch_tap.js").read_text() + "\n"
            + (shell / "phone_sidebar.js").read_text() + "</script>", unsafe_allow_javascript=True)
link_warnings = st.container()  # on top of the page: the link's bad values from earlier runs
page.run()
here = 0 if page is hidden_first else next((i for i, p in enumerate(pages) if p is page), None)
if here is not None and here + 1 < len(pages):  # the end of every lesson but the last: the way on
    st.divider()
    st.page_link(pages[here + 1], label=_("Next lesson: {title}").format(title=_(LESSONS[here + 1].title)),
                 icon=LESSONS[here + 1].icon)
with link_warnings:
    controls.show_link_warnings()
st.session_state["_run_seconds"] = time.perf_counter() - started  # read by bench/bench_pages.py
