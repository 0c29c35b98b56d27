"""Why divide by √d_k: the lesson's manifest, its own controls (drawn by ``page.py``; independent of the sidebar's)
and the states its tests visit. Other lessons link here with ``controls.link(scaling, d_k=…, n_keys=…)``."""

from explorer.lessons.scaling import model
from explorer.shell import controls
from explorer.shell.controls import Choice, NumberInput, Slider, Toggle
from explorer.shell.i18n import N_

D = model.DEFAULTS

CONTROLS = controls.declare(
    __name__,
    d_k=Choice(key="scale_d_k", label=N_("d_k (this page's key width)"), options=model.D_K_CHOICES, default=D["d_k"],
               widget="select_slider", log=True, expected=N_("a power of two from {lo} to {hi}"),
               help=N_("Powers of two from 1 to 1024 (log scale). Independent of the sidebar's d_k.")),
    n_keys=Slider(key="scale_n_keys", label=N_("Keys per query"), lo=model.N_KEYS_RANGE[0], hi=model.N_KEYS_RANGE[1],
                  default=D["n_keys"], help=N_("Row length of each score matrix (6 = the lesson's sentence).")),
    seed=NumberInput(key="scale_seed", label=N_("Seed (Monte Carlo)"), lo=0, hi=controls.SEED_MAX, default=D["seed"],
                     help=N_("Seeds the random queries and keys of this page.")),
    n_samples=Choice(key="scale_samples", label=N_("Samples (query rows per d_k)"), options=model.SAMPLE_CHOICES,
                     default=D["n_samples"], widget="select_slider",
                     help=N_("How many queries are drawn for each d_k; more = smoother numbers.")),
    hist_log=Toggle(key="scale_hist_log", label=N_("Logarithmic density axis"), default=False,
                    help=N_("Keeps both bells visible when d_k is large (the raw one gets very flat).")),
    # The options are shown as the link writes them (``0.5``: a bound select slider's link value is its label).
    temperature=Choice(key="scale_temperature", label=N_("Temperature T"), options=model.TEMPERATURE_CHOICES,
                       default=D["temperature"], widget="select_slider", shown_as=lambda t, ctx: f"{t:g}",
                       help=N_("Divides the logits before the softmax; log scale from 0.01 to 100.")),
)
STATES = ()  # every control is drawn at the defaults
