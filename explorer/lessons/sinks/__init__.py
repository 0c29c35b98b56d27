"""Attention sinks, smaller caches: the lesson's manifest, its controls (drawn by ``page.py``) and the states its
tests visit."""

from explorer.lessons.sinks import model
from explorer.shell import controls, i18n, llm
from explorer.shell.controls import Options, Slider, Toggle
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

CONTROLS = controls.declare(
    __name__,
    prompt=llm.prompt_box("sk_prompt", N_("Text"), model.DEFAULT_PROMPT, help=lambda ctx: _(
        "Any text; a paragraph works best (the window needs positions after it to score). The model reads its first "
        "{n} tokens. Press Ctrl+Enter to run.").format(n=llm.PROMPT_MAX_TOKENS)),
    swap=Toggle(  # section 2: one forward pass, run when switched on (issue 47); in the link, so a shared link shows it
        key="sk_swap", label=lambda ctx: _("Read your text with another token first: 1 forward pass, {time} on this "
                                           "server").format(**ctx),
        example={"time": "under a second"}),
    first=Options(  # the token put first
        key="sk_first", label=N_("Put first"), default="newline", horizontal=True,
        options={"newline": N_("↵ a new line"), "the": "␣the", "stop": N_(". a full stop"),
                 "im_start": "<|im_start|>", "drop": N_("drop your first token")},
        help=N_("A new line, a common word, punctuation or the chat's special token before your text; or your text "
                "without its first token, so that its second token comes first.")),
    shifted=Toggle(  # section 3: two forward passes, run when switched on (issue 47), in the link
        key="sk_shifted", label=lambda ctx: _("Run your text from position 0 and shifted: 2 forward passes, {time} on "
                                              "this server").format(**ctx),
        example={"time": "under a second"}),
    offset=Slider(  # every RoPE position shifted by k
        key="sk_offset", label=N_("Shift every position by k"), lo=0, hi=lambda ctx: ctx["context"] - ctx["n"],
        default=lambda ctx: min(model.DEFAULT_OFFSET, ctx["context"] - ctx["n"]), example={"n": 45, "context": 8192},
        help=lambda ctx: _("RoPE positions k … k + {last}; the model was trained on {context} positions.").format(
            last=ctx["n"] - 1, context=i18n.integer(ctx["context"]))),
    streams=Toggle(  # section 4: four windowed runs and their continuations, run when switched on (issue 47), linked
        key="sk_streams", label=lambda ctx: _("Run the four caches and their continuations: {passes} forward passes, "
                                              "{time} on this server").format(**ctx),
        example={"passes": 38, "time": "about 5 s"}),
    window=Slider(  # the sliding window: at most model.window_max(n) on a text of n tokens
        key="sk_window", label=N_("Window w (tokens each query sees, itself included)"), lo=1,
        hi=lambda ctx: ctx["top"], default=lambda ctx: min(model.DEFAULT_WINDOW, ctx["top"]), example={"top": 29},
        help=lambda ctx: _("At most {top} on your text, so that at least {scored} positions come after the window "
                           "(they are the ones scored).").format(top=ctx["top"], scored=model.MIN_SCORED)),
    new=Slider(key="sk_new", label=N_("Generated tokens"), lo=1, hi=model.MAX_NEW_TOKENS,
               default=model.DEFAULT_NEW_TOKENS,
               help=N_("Each continuation is greedy, read with the same window and kept tokens.")),
    measure=Toggle(  # the sweep over every cache variant: about 20 runs of the model, so it runs when asked
        key="sk_measure", label=lambda ctx: _("Measure every variant on your text: {variants} runs of the model, "
                                              "{time} on this server").format(**ctx),
        default=False, example={"variants": 20, "time": "about 5 s"},
        help=lambda ctx: _("Runs the model once per variant on your text ({n} runs: each variant converted, or "
                           "windowed), compares every next-token distribution with the model's, and keeps the results "
                           "for this text.").format(n=ctx["variants"])),
)
STATES = ()
TEXT_STATES = {"measured": ({"sk_measure": "true", "sk_first": "drop", "sk_offset": "0", "sk_streams": "true"},
                             ())}
"""States whose text no other state shows: the link, then the buttons pressed in order (every cache variant
measured, the first token dropped, no shift, the four caches run: every section switched on).
``tests/lessons/test_languages.py`` checks each in every language."""
