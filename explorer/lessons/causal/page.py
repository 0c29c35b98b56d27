"""Page: the causal mask, from bidirectional to decoder attention (lesson exercise 1)."""

import streamlit as st

from explorer.lessons.causal import draw as sections
from explorer.shell import controls

sections.intro()

sh = controls.shared()
inp = controls.sentence_input("to see the causal mask at work")
labels, n = inp.labels, len(inp.tokens)
inputs = (inp.tokens, sh.d_model, sh.d_k, sh.seed, sh.embedding, sh.positional)


def keep_in_range(key: str, hi: int) -> None:
    """A shorter sentence can leave a slider's old value above its new maximum: clamp it first."""
    value = st.session_state.get(key)
    if isinstance(value, int) and value > hi:
        st.session_state[key] = hi


c1, c2 = st.columns([1, 2])
with c1:
    is_causal = st.toggle("Causal mask (decoder)", True, key="causal_on", bind="query-params",
                          help="On: query i sees keys j ≤ i. Off: bidirectional (encoder) attention. "
                               "Sections 2, 4 and 5 follow this switch; sections 1 and 3 show both modes.")
    controls.check_link("causal_on", is_causal, "true or false")
with c2:
    keep_in_range("causal_padding", n)
    n_pad = st.slider("Padding: mark the last p tokens as padding", 0, n, 0, key="causal_padding",
                      bind="query-params",
                      help="A key padding mask blocks these keys for every query (a batch pads short sentences "
                           "to one length). Combined with the causal mask: causal ∧ padding.")
    controls.check_link("causal_padding", n_pad, f"a whole number from 0 to {n} (the number of tokens)")
is_causal, n_pad = bool(is_causal), min(int(n_pad), n)

# The settings caption, parts 1 and 2, and part 3's intro; none of them depends on t.
sections.masks(inputs, is_causal, n_pad)

# "No peeking" position t (a slider; fixed at 0 for a one-token sentence, which the next section says).
T_KEY = "causal_t"
t = 0
if n > 1:
    keep_in_range(T_KEY, n - 1)
    t = st.slider("Position t: every token after t is replaced", 0, n - 1, min(2, n - 1), key=T_KEY,
                  bind="query-params", format="%d", help="Rows 0..t of the output are compared before and after.")
    controls.check_link(T_KEY, t, f"a whole number from 0 to {n - 1}")
    t = min(int(t), n - 1)

sections.peeking_and_padding(inputs, is_causal, n_pad, t)

keep_in_range("causal_query", n - 1)
q = st.selectbox("Query", range(n), format_func=lambda k: labels[k], key="causal_query", bind="query-params")
q = 0 if q is None else min(int(q), n - 1)
controls.check_link("causal_query", labels[q], "one of the sentence's tokens, as 'token (position)'")  # link = label
sections.row(inputs, is_causal, n_pad, q)
