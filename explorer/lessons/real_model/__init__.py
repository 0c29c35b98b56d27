"""Inside a real model: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests visit."""

from explorer.lessons.real_model import model
from explorer.shell import controls, llm
from explorer.shell.controls import Expander, NumberInput, Options, Slider, Text
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

STATISTIC_SHORT = {"sink": N_("sink"), "previous": N_("previous"), "self": N_("self"), "entropy": N_("entropy"),
                   "distance": N_("distance"), "induction": N_("induction")}
"""What the statistic control shows for each link value (:data:`model.STATISTICS` keys; messages)."""
APPENDED_MAX_CHARS = 6 * llm.PROMPT_MAX_TOKENS  # ids of up to 5 digits and a space each
SIZES = {"n_layers": 30, "n_heads": 9, "g": 3}  # SmolLM2-135M's: the layer and head sliders' example context
NO_SECOND = "none"  # the compare control's code for "no second model" (no catalogue id is a bare word: name-hash)


def sizes(config: llm.LlamaConfig) -> dict[str, int]:
    """The layer and head sliders' context for a model: its layers, query heads and query heads per key/value head
    (what a link to a head of this lesson is built with: ``controls.link(real_model, sizes(config), layer=…)``)."""
    return {"n_layers": config.n_layers, "n_heads": config.n_heads, "g": config.group_size}


CONTROLS = controls.declare(
    __name__,
    prompt=llm.prompt_box("rm_prompt", N_("Prompt"), model.DEFAULT_PROMPT, help=lambda ctx: _(
        "Any text. The model reads its first {n} tokens (a limit of these lessons, so every map keeps one readable row "
        "per token). Press Ctrl+Enter to run.").format(n=llm.PROMPT_MAX_TOKENS)),
    then=Text(  # the token ids appended by greedy decoding, after the prompt's own ("30 198 198")
        key="rm_then", label=N_("Token ids appended after the prompt"), max_chars=APPENDED_MAX_CHARS,
        valid=lambda raw, ctx: model.parse_ids(raw, ctx["vocab"]) is not None,
        expected=lambda ctx: _("token ids from 0 to {last} separated by spaces").format(last=ctx["vocab"] - 1),
        placeholder=N_("none yet: “➕ Append the top token” (below) adds them"), example={"vocab": 49152},
        help=N_("Greedy decoding by hand appends each next token here as its id, so the model reads exactly the "
                "tokens it chose. Appending the token's text and tokenizing again could read other tokens (two “↵” "
                "tokens can become one “↵↵”) or half a character. Ids separated by spaces; a new prompt clears them.")),
    seed=NumberInput(key="rm_seed", label=N_("Seed"), lo=0, hi=controls.SEED_MAX, default=0,
                     help=N_("Seeds the repeated random prompt (the same seed gives the same words).")),
    stat=Options(  # the link holds the code (?rm_stat=entropy) in every language
        key="rm_stat", label=N_("Colour every head by"), options=STATISTIC_SHORT, default="sink",
        widget="segmented_control",
        help=lambda ctx: _("{sink}: weight on the first token · {previous}: on the token before · {self}: on itself · "
                           "{entropy}: how spread out (bits) · {distance}: how far back (tokens) · {induction}: on the "
                           "token that followed an earlier occurrence of this token.").format(
            **{k: _(v) for k, v in STATISTIC_SHORT.items()})),
    layer=Slider(key="rm_layer", label=N_("Layer"), lo=0, hi=lambda ctx: ctx["n_layers"] - 1,
                 default=lambda ctx: min(model.DEFAULT_LAYER, ctx["n_layers"] - 1), example=SIZES),
    head=Slider(key="rm_head", label=N_("Query head"), lo=0, hi=lambda ctx: ctx["n_heads"] - 1,
                default=lambda ctx: min(model.DEFAULT_HEAD, ctx["n_heads"] - 1), example=SIZES,
                help=N_("Query head h reads key/value head h // {g} (grouped-query attention).")),
    compare=Options(  # "Compare with another model" (compare.py): the link holds the second model's id
        key="rm_compare", label=N_("Second model"), widget="selectbox", default=NO_SECOND,
        options=lambda ctx: {NO_SECOND: _("none: choose a model to compare")} | dict(ctx["others"]),
        expected=lambda ctx: _("none, or the id of another model this server lists ({ids})").format(
            ids=controls.model_ids(ctx["readable"])),
        example={"others": {"tiny-qwen2-0123abcd": "tiny-qwen2 · qwen2 · 0.3 MB"},
                 "readable": ("tiny-qwen2-0123abcd",)},
        help=N_("Loads a second model beside this page's: both stay in memory while you compare.")),
    steps=Expander(  # drawn only while open (its 11 charts are most of what a head change would send; issue 30)
        key="rm_steps", label=N_("Show the six steps, with their {n} charts"), example={"n": 11}),
)
STATES = ()
TEXT_STATES = {
    "repeated": ({"rm_steps": "true"}, ("rm_repeat", "rm_check")),
    "appended": ({"rm_then": "30 198", "rm_steps": "true", "rm_stat": "entropy"}, ("rm_append",)),
}
"""States whose text no other state shows: the link, then the buttons pressed in order (the repeated random prompt
with the exercise checked unanswered; ids appended by greedy decoding, every head coloured by its entropy), the six
steps' expander open.
``tests/lessons/test_languages.py`` checks each in every language."""
