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

sampling = {}  # d_k, n_keys, seed, n_samples: the Monte Carlo's settings, side by side
for col, name in zip(st.columns(4), ("d_k", "n_keys", "seed", "n_samples"), strict=True):
    with col:
        sampling[name] = int(controls.draw(CONTROLS[name]))

drawn = _("queries and keys are drawn directly, components i.i.d. N(0, 1).")
controls.not_used({
    "sentence": _("this lesson measures random queries and keys, not a sentence."),
    "embedding": drawn,
    "positional": drawn,
    "seed": _("this page has its own Monte Carlo seed (now {seed}).").format(seed=sampling["seed"]),
    "d_model": _("queries and keys are drawn directly at width d_k."),
    "d_k": _("this page has its own d_k (now {d_k}; powers of two up to {hi}).").format(d_k=sampling["d_k"],
                                                                                     hi=S.D_K_CHOICES[-1]),
    "color_scale": _("this page's weight maps keep the fixed [0, 1] range: how close a row comes to 1 (saturation) "
                     "is the lesson."),
})
draw.summary(**sampling)  # the verdict, what was measured, part 1's formula

draw.measurements(**sampling, log_y=controls.draw(CONTROLS["hist_log"]))  # parts 1-3, part 4's formulas


@controls.fragment  # the temperature changes this part only: rerun it alone, nothing above is resent (issue 20)
def temperature_part() -> None:
    draw.temperature(t=float(controls.draw(CONTROLS["temperature"])))


temperature_part()
