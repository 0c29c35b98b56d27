"""Two sentences, one set of weights: the lesson's manifest, its controls (drawn by ``page.py``) and the states its
tests visit."""

from explorer.shell import controls
from explorer.shell.controls import NumberInput, Text, Toggle
from explorer.shell.i18n import N_

DEFAULT_B = "The dog sat on the rug"

CONTROLS = controls.declare(
    __name__,
    sentence_b=Text(key="two_sentence", label=N_("Sentence B"), default=DEFAULT_B,
                    max_chars=controls.SENTENCE_MAX_CHARS,
                    help=N_("Same length as A compares position by position; otherwise the common length is "
                            "compared.")),
    shuffle=Toggle(key="two_shuffle", label=N_("Shuffle the words of sentence A"), default=False),
    shuffle_seed=NumberInput(key="two_shuffle_seed", label=N_("Shuffle seed"), lo=0, hi=controls.SEED_MAX, default=0,
                             help=N_("Seeds the permutation, so a link reproduces it.")),
)
STATES = ()  # every control is drawn at the defaults
