"""Multi-head attention: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests visit."""

import attention as A
from explorer.lessons.multihead import model
from explorer.shell import controls
from explorer.shell.controls import Choice, Toggle, TokenPicker
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

MATRICES = ("W_q", "W_k", "W_v", "W_o")


def window_label(first: int, ctx) -> str:
    """The grids' window from head ``first`` (``ctx["n_heads"]`` heads in all), in the run's language."""
    return _("heads {first}-{last}").format(first=first, last=min(first + model.GRID_MAX, ctx["n_heads"]) - 1)


CONTROLS = controls.declare(
    __name__,
    n_heads=Choice(  # only divisors of d_model; a bad link value or a changed d_model -> the nearest that divides
        key="n_heads", label=N_("Number of heads n_heads (divisors of d_model = {d_model})"),
        options=lambda ctx: A.valid_head_counts(ctx["d_model"]),
        default=lambda ctx: model.default_head_count(ctx["d_model"]), bad="nearest",
        expected=N_("a divisor of d_model = {d_model}, one of {valid}; the nearest valid count is shown"),
        notice=N_("n_heads = {current} does not divide the new d_model = {d_model} (every head needs the same whole "
                  "width d_model / n_heads). The valid counts are {valid}; showing the nearest, n_heads = {nearest}."),
        notice_icon="🧩", example={"d_model": 8},
        help=N_("Each head gets d_head = d_model / n_heads columns of Q, K and V, so n_heads must divide d_model. "
                "Change d_model in the sidebar for other choices.")),
    causal=Toggle(key="mh_causal", label=N_("Causal mask (every head)"), default=False,
                  help=N_("Query i may only look at keys j ≤ i, in every head.")),
    matrix=Choice(key="mh_numbers_matrix", label=N_("Matrix"), options=MATRICES, default=MATRICES[0], widget="radio",
                  horizontal=True),
    head_window=Choice(  # drawn beyond GRID_MAX heads: a window of GRID_MAX heads, by its first head
        key="mh_head_window", label=N_("Heads shown in the grids"),
        options=lambda ctx: list(range(0, ctx["n_heads"], model.GRID_MAX)), default=0,
        shown_as=window_label, translated=True, example={"n_heads": 64}),
    query=TokenPicker(key="mh_query", label=N_("Query token")),
)
STATES = (
    {"d_model": "64", "n_heads": "64"},  # more heads than one grid shows: the head window
)
