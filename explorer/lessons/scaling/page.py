"""Page: why attention divides the scores by √d_k (dot products grow, the softmax saturates).

The page has its own controls (its own ``d_k``, keys per query, seed, samples, temperature), all in its
link; other pages build a link to it with :func:`explorer.lessons.scaling.model.link`, from the same ranges.
"""

import streamlit as st

from explorer.lessons.scaling import draw
from explorer.lessons.scaling import model as S
from explorer.shell import controls
from explorer.shell.i18n import translator

_, _n = translator(__file__)  # a page runs as __main__: its file names its lesson's domain

D = S.DEFAULTS

draw.intro()

c1, c2, c3, c4 = st.columns(4)
with c1:
    d_k = st.select_slider(_("d_k (this page's key width)"), S.D_K_CHOICES, D["d_k"], key="scale_d_k",
                           bind="query-params",
                           help=_("Powers of two from 1 to 1024 (log scale). Independent of the sidebar's d_k."))
    controls.check_link("scale_d_k", d_k, _("a power of two from {lo} to {hi}").format(lo=S.D_K_CHOICES[0],
                                                                                         hi=S.D_K_CHOICES[-1]))
with c2:
    n_keys = controls.slider(_("Keys per query"), *S.N_KEYS_RANGE, D["n_keys"], key="scale_n_keys",
                             expected=_("a whole number from {lo} to {hi}").format(lo=S.N_KEYS_RANGE[0],
                                                                                    hi=S.N_KEYS_RANGE[1]),
                             help=_("Row length of each score matrix (6 = the lesson's sentence)."))
with c3:
    seed = controls.number_input(_("Seed (Monte Carlo)"), 0, S.SEED_MAX, D["seed"], key="scale_seed",
                                 expected=_("a whole number from {lo} to {hi}").format(lo=0, hi=S.SEED_MAX),
                                 help=_("Seeds the random queries and keys of this page."))
with c4:
    n_samples = st.select_slider(_("Samples (query rows per d_k)"), S.SAMPLE_CHOICES, D["n_samples"],
                                 key="scale_samples", bind="query-params",
                                 help=_("How many queries are drawn for each d_k; more = smoother numbers."))
    controls.check_link("scale_samples", n_samples,
                        _("one of {values}").format(values=", ".join(map(str, S.SAMPLE_CHOICES))))

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

log_y = st.toggle(_("Logarithmic density axis"), False, key="scale_hist_log", bind="query-params",
                  help=_("Keeps both bells visible when d_k is large (the raw one gets very flat)."))
controls.check_link("scale_hist_log", log_y, _("true or false"))
draw.measurements(**sampling, log_y=bool(log_y))  # parts 1-3, part 4's formulas



@controls.fragment  # the temperature changes this part only: rerun it alone, nothing above is resent (issue 20)
def temperature_part() -> None:
    # The options are shown as the link writes them (``0.5``: a bound select slider's link value is its label).
    temperature = st.select_slider(_("Temperature T"), S.TEMPERATURE_CHOICES, D["temperature"],
                                   key="scale_temperature", bind="query-params", format_func=lambda t: f"{t:g}",
                                   help=_("Divides the logits before the softmax; log scale from 0.01 to 100."))
    controls.check_link("scale_temperature", f"{temperature:g}",
                        _("one of {values}").format(values=", ".join(f"{t:g}" for t in S.TEMPERATURE_CHOICES)))
    draw.temperature(t=float(temperature))


temperature_part()
