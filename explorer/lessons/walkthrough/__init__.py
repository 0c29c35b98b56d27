"""Self-attention step by step: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests
visit."""

from explorer.lessons.walkthrough import model
from explorer.shell import controls
from explorer.shell.controls import Options, Toggle, TokenPicker
from explorer.shell.i18n import N_

LESSON, SENTENCE = "lesson", "sentence"  # the input's codes (?walk_input=lesson)

CONTROLS = controls.declare(
    __name__,
    input=Options(
        key="walk_input", label=N_("Input"), options={SENTENCE: N_("Your sentence"), LESSON: N_("Lesson example")},
        default=SENTENCE, widget="segmented_control",
        aliases={"Lesson example": LESSON, "Your sentence": SENTENCE},  # links written before issue 31: the labels
        help=N_("Your sentence: the sidebar's sentence through SelfAttention(d_model, d_k, d_v, seed). "
                "Lesson example: the lesson's 3-word example with hand-written matrices you can edit.")),
    init=Options(
        key="walk_init", label=N_("Weight initialisation (your sentence)"),
        options={code: model.INIT_NAMES[code] for code in model.INITS}, default=model.DEFAULT_INIT,
        captions=list(model.INITS.values()), horizontal=True,
        help=N_("How W_q, W_k, W_v are drawn for your sentence (the same random draws, at another scale). lesson: "
                "std √(2/(d_model + d_k)), the lesson's SelfAttention. unit-variance: std √(1/d_model), so a query "
                "or key component is as spread as the entries of X: variance ≈ 1 when theirs is, as the √d_k "
                "argument assumes (the measured values are shown at steps 2 and 4). The lesson example has "
                "hand-written weights and does not use this.")),
    scale=Toggle(key="walk_scale", label=N_("Divide the scores by √d_k"), default=True,
                 help=N_("Off: the softmax gets QKᵀ itself. Try it with a large d_k and the unit-variance "
                         "initialisation: the weights saturate (nearly one-hot).")),
    query=TokenPicker(key="walk_query", label=N_("Query token")),
)
STATES = (
    {"walk_input": LESSON},  # the lesson's example: its editable matrices
)
