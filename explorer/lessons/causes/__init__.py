"""What made it say that? The lesson's manifest, its controls (drawn by ``page.py``) and the states its tests visit."""

from explorer.lessons.causes import model
from explorer.shell import controls, head_statistics, llm
from explorer.shell.controls import Heads, NumberInput, Options, Slider, Toggle
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

SIZES = {"n_layers": 30, "n_heads": 9}  # SmolLM2-135M's (the example context of the controls that name heads)


def head_codes(ctx) -> list[str]:
    """Every head of the model in ``ctx`` (``n_layers``, ``n_heads``) as the page names it, ``["L0H0", …]``."""
    return [model.head_code(layer, head) for layer in range(ctx["n_layers"]) for head in range(ctx["n_heads"])]


CONTROLS = controls.declare(
    __name__,
    prompt=llm.prompt_box("ca_prompt", N_("Prompt"), model.DEFAULT_PROMPT, help=lambda ctx: _(
        "Any text; the page reads its first {n} tokens (the sweep over every head grows with the length). Press "
        "Ctrl+Enter to run.").format(n=model.PROMPT_MAX_TOKENS)),
    answer=Options(  # which of the top 5 to follow: its rank in the link; the token and its probability on screen
        key="ca_answer", label=N_("The answer to explain"), options=lambda ctx: ctx["answers"], default="0",
        widget="selectbox", example={"answers": {str(i): f"token {i}  (p = 0.1)" for i in range(llm.TOP_K)}},
        help=N_("Every section below explains this token's logit or probability at the last position: the model's "
                "most likely next token by default, or another of its top 5.")),
    heads=Heads(  # the knocked-out heads: the 3 that push the answer most directly, at first
        key="ca_heads", label=N_("Heads to knock out"), options=head_codes, default=lambda ctx: list(ctx["top"]),
        max_selections=model.MAX_HEADS, example={**SIZES, "top": ["L23H4", "L29H1", "L29H2"]},
        help=lambda ctx: _("Layer x, head y as LxHy (up to {n}). Click a head in the grid above to add it.").format(
            n=model.max_heads(ctx["n_layers"], ctx["n_heads"])),
        expected=lambda ctx: _("heads written as {example} (layer 0..{last_layer}, head 0..{last_head}), at most "
                               "{n}").format(example=model.example_heads(ctx["n_layers"], ctx["n_heads"]),
                                             last_layer=ctx["n_layers"] - 1, last_head=ctx["n_heads"] - 1,
                                             n=model.max_heads(ctx["n_layers"], ctx["n_heads"]))),
    ablation=Options(key="ca_ablation", label=N_("Ablation"), options=model.ABLATIONS, default="zero",
                     horizontal=True,
                     help=N_("zero: the heads' outputs set to 0. mean: each set to its average over this prompt's "
                             "positions.")),
    by=Options(  # the top-k picker's statistic
        key="ca_by", label=N_("Pick the top k heads by"), default="attribution", widget="selectbox",
        options=lambda ctx: {"attribution": _("direct logit attribution to the answer")} | {
            k: _("{statistic} (last token's row)").format(statistic=head_statistics.name(k))
            for k in model.STATISTICS}),
    k=NumberInput(key="ca_k", label="k", lo=1, hi=model.MAX_HEADS, default=3),
    seed=NumberInput(key="ca_seed", label=N_("Seed of the random heads"), lo=0, hi=controls.SEED_MAX, default=0,
                     help=N_("The control knocks out as many random heads (none of yours), drawn with "
                             "np.random.default_rng(seed).")),
    induct=Toggle(  # the repeated random prompt's 7 forward passes: run when switched on (issue 47); in the
        # link, so a shared link shows the experiment it names (a toggle: its label's estimate may change)
        key="ca_induct", label=lambda ctx: _("Run the repeated prompt: {passes} forward passes of {n} tokens, {time} "
                                             "on this server").format(**ctx),
        example={"passes": 7, "n": 40, "time": "about 1 s"}),
    rseed=NumberInput(key="ca_rseed", label=N_("Seed of the random tokens"), lo=0, hi=controls.SEED_MAX, default=0),
    ind_k=NumberInput(key="ca_ind_k", label=N_("Induction heads to knock out"), lo=1, hi=lambda ctx: ctx["n_heads"],
                      default=lambda ctx: min(3, ctx["n_heads"]), example={"n_heads": SIZES["n_heads"]}),
    guess=Options(key="ca_guess", label=N_("Your guess: the head whose knockout lowers the answer most"),
                  options=lambda ctx: {"none": _("no guess")} | {c: c for c in head_codes(ctx)}, default="none",
                  widget="selectbox", example=SIZES),
    stat=Options(key="ca_stat", label=N_("Attention statistic (x axis)"), default="self", widget="selectbox",
                 options=lambda ctx: {k: head_statistics.name(k) for k in model.STATISTICS}),
    patch=Toggle(  # the patching maps, about n (L + 1) / 2 forward passes: run when switched on (issue 47); in
        # the link, so a shared link shows the pair it names
        key="ca_patch", label=lambda ctx: _("Run the patching: about {passes} forward passes of {n} tokens, {time} on "
                                            "this server").format(**ctx),
        example={"passes": 19, "n": 8, "time": "about 5 s"}),
    clean=llm.prompt_box("ca_clean", N_("Clean prompt"), model.DEFAULT_CLEAN),
    corrupt=llm.prompt_box("ca_corrupt", N_("Corrupted prompt"), model.DEFAULT_CORRUPTED),
    layer=Slider(  # the layer whose heads are patched: at first the layer the fact moves through
        key="ca_layer", label=N_("Layer whose heads are patched"), lo=0, hi=lambda ctx: ctx["n_layers"] - 1,
        default=lambda ctx: min(ctx["default"], ctx["n_layers"] - 1), example={"n_layers": 30, "default": 23},
        help=N_("Each head's output (weights · V at every position) copied from the clean run alone. The default is "
                "the layer the fact moves through (computed above).")),
)
STATES = (  # the patch pair as the page opens (the other runs give it odd texts), opened: the layer's slider is drawn
    {"ca_clean": model.DEFAULT_CLEAN, "ca_corrupt": model.DEFAULT_CORRUPTED, "ca_patch": "true"},
)
AFTER_A_CLICK = ("stat",)
"""Controls drawn only after a button (the sweep's statistic, under the sweep's result): no link state reaches them,
so ``tests/lessons/test_contract.py`` does not require them drawn; ``tests/lessons/causes/test_page.py`` clicks."""
TEXT_STATES = {
    "one-head-mean": ({"ca_heads": "L23H4", "ca_k": "1", "ca_ind_k": "1", "ca_ablation": "mean"}, ()),
    "sweep": ({"ca_guess": "L0H4", "ca_stat": "entropy"}, ("ca_reveal",)),
    "no-heads-unequal": ({"ca_heads": "", "ca_corrupt": "The capital of the United Kingdom is"}, ()),
    "same-answer": ({"ca_corrupt": model.DEFAULT_CLEAN}, ()),
    "patched": ({"ca_patch": "true"}, ()),
    "markup-link": ({"ca_heads": "L99H1,<b>x</b>", "ca_ablation": "half"}, ()),
}
"""States whose text no other state shows: the link, then the buttons pressed in order (one head knocked out by its
mean, the induction experiment opened by its link value; the 270-head sweep with a guess graded, its scatter by
entropy; no heads and a corrupted prompt of another length; a corrupted prompt with the clean answer; the default
pair patched; a link whose heads hold markup, quoted in its warning). ``tests/lessons/test_languages.py`` checks each
in every language."""
