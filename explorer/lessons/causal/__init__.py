"""The causal mask: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests visit."""

from explorer.shell import controls
from explorer.shell.controls import Slider, Toggle, TokenPicker
from explorer.shell.i18n import N_

CONTROLS = controls.declare(
    __name__,
    causal=Toggle(key="causal_on", label=N_("Causal mask (decoder)"), default=True,
                  help=N_("On: query i sees keys j ≤ i. Off: bidirectional (encoder) attention. "
                          "Sections 2, 4 and 5 follow this switch; sections 1 and 3 show both modes.")),
    padding=Slider(key="causal_padding", label=N_("Padding: mark the last p tokens as padding"), lo=0,
                   hi=lambda ctx: ctx["n"], default=0, example={"n": 6},
                   expected=N_("a whole number from 0 to {n} (the number of tokens)"),
                   help=N_("A key padding mask blocks these keys for every query (a batch pads short sentences to "
                           "one length). Combined with the causal mask: causal ∧ padding.")),
    t=Slider(key="causal_t", label=N_("Position t: every token after t is replaced"), lo=0,
             hi=lambda ctx: ctx["n"] - 1, default=lambda ctx: min(2, ctx["n"] - 1), format="%d", example={"n": 6},
             expected=N_("a whole number from 0 to {hi}"),
             help=N_("Rows 0..t of the output are compared before and after.")),  # drawn from 2 tokens on
    query=TokenPicker(key="causal_query", label=N_("Query")),
)
STATES = (
    {"sentence": "alone"},  # one token: no position t to choose (the section says so)
)
