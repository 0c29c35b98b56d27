"""Page: why attention divides the scores by √d_k (dot products grow, the softmax saturates).

The page has its own controls (its own ``d_k``, keys per query, seed, samples, temperature; declared in
:mod:`explorer.lessons.scaling`), all in its link.
"""

import streamlit as st

from explorer.lessons.scaling import CONTROLS, draw
from explorer.lessons.scaling import model as S
from explorer.shell import controls
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

draw.intro()

c1, c2, c3, c4 = st.columns(4)
with c1:
    d_k = controls.draw(CONTROLS["d_k"])
with c2:
    n_keys = controls.draw(CONTROLS["n_keys"])
with c3:
    seed = controls.draw(CONTROLS["seed"])
with c4:
    n_samples = controls.draw(CONTROLS["n_samples"])

drawn = _("queries and keys are drawn directly, components i.i.d. N(0, 1).")
controls.not_used({
    "sentence": _("this lesson measures random queries and keys, not a sentence."),
    "embedding": drawn,
    "positional": drawn,
    "seed": _("this page has its own Monte Carlo seed (now {seed}).").format(seed=int(seed)),
    "d_model": _("queries and keys are drawn directly at width d_k."),
    "d_k": _("this page has its own d_k (now {d_k}; powers of two up to {hi}).").format(d_k=int(d_k),
                                                                                     hi=S.D_K_CHOICES[-1]),
    "color_scale": _("this page's weight maps keep the fixed [0, 1] range: how close a row comes to 1 (saturation) "
                     "is the lesson."),
})
sampling = {"d_k": int(d_k), "n_keys": int(n_keys), "n_samples": int(n_samples), "seed": int(seed)}
draw.summary(**sampling)  # the verdict, what was measured, part 1's formula

draw.measurements(**sampling, log_y=controls.draw(CONTROLS["hist_log"]))  # parts 1-3, part 4's formulas


@controls.fragment  # the temperature changes this part only: rerun it alone, nothing above is resent (issue 20)
def temperature_part() -> None:
    draw.temperature(t=float(controls.draw(CONTROLS["temperature"])))


temperature_part()
