"""Page: the causal mask, from bidirectional to decoder attention (lesson exercise 1)."""

import streamlit as st

from explorer.lessons.causal import CONTROLS, draw
from explorer.shell import controls
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

draw.intro()

settings = controls.lesson_settings(_("to see the causal mask at work"))
labels, n = settings.labels, settings.n

c1, c2 = st.columns([1, 2])
with c1:
    is_causal = controls.draw(CONTROLS["causal"])
with c2:
    n_pad = min(controls.draw(CONTROLS["padding"], {"n": n}), n)

# The settings caption, parts 1 and 2, and part 3's intro; none of them depends on t.
draw.masks(settings, is_causal, n_pad, controls.color_scale())


@controls.fragment  # t changes this part only: rerun it alone, nothing above is resent (issue 20)
def peeking() -> None:
    t = 0 if n == 1 else min(controls.draw(CONTROLS["t"], {"n": n}), n - 1)  # one token: t = 0, the section says so
    draw.peeking_and_padding(settings, is_causal, n_pad, t)


@controls.fragment  # the query box changes the last part only
def one_row() -> None:
    draw.row(settings, is_causal, n_pad, controls.draw(CONTROLS["query"], {"labels": labels}))


peeking()
one_row()
