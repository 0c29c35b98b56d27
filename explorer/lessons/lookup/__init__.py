"""Attention as a soft lookup: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests
visit. (The table is a data editor, not in the link; "Jump to a query" moves the two query sliders.)"""

from explorer.lessons.lookup import model
from explorer.shell import controls
from explorer.shell.controls import Choice, Slider
from explorer.shell.i18n import N_

_QUERY = {"lo": -model.QUERY_LIMIT, "hi": model.QUERY_LIMIT, "step": model.QUERY_STEP, "format": "%.2f",
          # what a link value must be: link values are written with a point in every language
          "expected": N_("a number from {low} to {high} in steps of {step}")}

CONTROLS = controls.declare(
    __name__,
    qx=Slider(key="lookup_qx", label=N_("query q, dimension 1"), default=model.DEFAULT_QUERY[0], **_QUERY),
    qy=Slider(key="lookup_qy", label=N_("query q, dimension 2"), default=model.DEFAULT_QUERY[1], **_QUERY),
    sharpness=Choice(
        key="lookup_sharpness", label=N_("Sharpness s (inverse temperature: multiplies every score q · k)"),
        options=model.SHARPNESS_OPTIONS, default=model.LESSON_SHARPNESS, widget="select_slider",
        shown_as=lambda s, ctx: model.sharpness_label(s),
        help=N_("0: every value gets the same weight (the mean). Large: the blend becomes the database's answer.")),
)
STATES = ()  # every control is drawn at the defaults
