"""Inside one transformer block: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests
visit."""

from explorer.lessons.block import model
from explorer.shell import controls, llm
from explorer.shell.controls import Slider
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

SIZES = {"n_layers": 30}  # SmolLM2-135M's: the block slider's example context

CONTROLS = controls.declare(
    __name__,
    prompt=llm.prompt_box("blk_prompt", N_("Prompt"), model.DEFAULT_PROMPT, help=lambda ctx: _(
        "Any text. The model reads its first {n} tokens. Press Ctrl+Enter to run.").format(n=llm.PROMPT_MAX_TOKENS)),
    block=Slider(key="blk_block", label=N_("Block"), lo=0, hi=lambda ctx: ctx["n_layers"] - 1, default=0,
                 example=SIZES, help=N_("Which of the model's blocks to open (0 reads the token embedding).")),
)
STATES = ()
TEXT_STATES = {"checked": ({"blk_block": "3"}, ("blk_check",))}
""""Check" pressed with no guess made (the page asks for one), with block 3 open; ``tests/lessons/test_languages.py``
checks it in every language."""
