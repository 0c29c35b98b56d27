"""Page: the causal mask, from bidirectional to decoder attention (lesson exercise 1)."""

import streamlit as st

from explorer.lessons.causal import draw
from explorer.shell import controls
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

draw.intro()

settings = controls.lesson_settings(_("to see the causal mask at work"))
labels, n = settings.labels, settings.n

c1, c2 = st.columns([1, 2])
with c1:
    is_causal = st.toggle(_("Causal mask (decoder)"), True, key="causal_on", bind="query-params",
                          help=_("On: query i sees keys j ≤ i. Off: bidirectional (encoder) attention. "
                                 "Sections 2, 4 and 5 follow this switch; sections 1 and 3 show both modes."))
    controls.check_link("causal_on", is_causal, _("true or false"))
with c2:
    controls.keep_in_range("causal_padding", 0, n)  # a shorter sentence can leave the old value above n
    n_pad = controls.slider(_("Padding: mark the last p tokens as padding"), 0, n, 0, key="causal_padding",
                            expected=_("a whole number from 0 to {n} (the number of tokens)").format(n=n),
                            help=_("A key padding mask blocks these keys for every query (a batch pads short "
                                   "sentences to one length). Combined with the causal mask: causal ∧ padding."))
is_causal, n_pad = bool(is_causal), min(int(n_pad), n)

# The settings caption, parts 1 and 2, and part 3's intro; none of them depends on t.
draw.masks(settings, is_causal, n_pad, controls.color_scale())

# "No peeking" position t (a slider; fixed at 0 for a one-token sentence, which the next section says).
T_KEY = "causal_t"


@controls.fragment  # t changes this part only: rerun it alone, nothing above is resent (issue 20)
def peeking() -> None:
    t = 0
    if n > 1:
        controls.keep_in_range(T_KEY, 0, n - 1)
        t = controls.slider(_("Position t: every token after t is replaced"), 0, n - 1, min(2, n - 1), key=T_KEY,
                            format="%d", expected=_("a whole number from 0 to {hi}").format(hi=n - 1),
                            help=_("Rows 0..t of the output are compared before and after."))
        t = min(int(t), n - 1)
    draw.peeking_and_padding(settings, is_causal, n_pad, t)


@controls.fragment  # the query box changes the last part only
def one_row() -> None:
    q = controls.token_picker(_("Query"), labels, "causal_query")
    draw.row(settings, is_causal, n_pad, q)


peeking()
one_row()
