"""Watch attention learn: the lesson's manifest, its controls (drawn by ``page.py``) and the states its tests visit.

The same link names the same runs: every setting of a run is a control here.
"""

from attention import training
from explorer.lessons.training import model as M
from explorer.shell import controls, i18n
from explorer.shell.controls import Choice, NumberInput, Options, Slider, Toggle
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

D = M.DEFAULTS


def sizes(key: str, label: str, options, default, help: str) -> Choice:
    """A select slider of whole numbers (a warning lists them for a link value that is none of them)."""
    return Choice(key=key, label=label, options=options, default=default, widget="select_slider", help=help)


def init(key: str, label: str, default: str, help: str) -> Options:
    """The initialisation's radio (its code in the link)."""
    return Options(key=key, label=label, options={code: M.INIT_LABELS[code] for code in training.INITS},
                   default=default, horizontal=True, help=help)


CONTROLS = controls.declare(
    __name__,
    seed=NumberInput(key="tr_seed", label=N_("Seed"), lo=0, hi=controls.SEED_MAX, default=D["seed"],
                     help=N_("Draws the initial weights and every training batch: the same seed, the same run.")),
    task=Options(key="tr_task", label=N_("Task"), options={task: task for task in training.TASKS},  # its own name
                 default=D["task"], horizontal=True, captions=[M.TASK_LABELS[t] for t in training.TASKS],
                 help=N_("repeat: the run's length (its period) is drawn for every sequence. repeat_fixed: always "
                         "n / 2.")),
    n_layers=sizes("tr_layers", N_("Layers"), (1, 2, 3), D["n_layers"],
                   N_("Attention layers (an induction head needs two).")),
    n_heads=sizes("tr_heads", N_("Heads per layer"), (1, 2, 3, 4), D["n_heads"], N_("Attention heads in every layer.")),
    d_model=sizes("tr_d_model", "d_model", (16, 32, 64), D["d_model"], N_("Width of the residual stream.")),
    d_head=sizes("tr_d_head", "d_head (= d_k = d_v)", (8, 16, 32, 64), D["d_head"],
                 N_("Width of each head's queries, keys and values.")),
    n_ctx=sizes("tr_n_ctx", N_("Sequence length n"), (16, 24, 32, 48, 64), D["n_ctx"],
                N_("Tokens per training sequence (the context).")),
    steps=Slider(key="tr_steps", label=N_("Training steps"), lo=M.STEPS_RANGE[0], hi=M.STEPS_RANGE[1],
                 default=D["steps"], step=M.STEPS_STEP, help=N_("Adam updates, one batch each.")),
    vocab=sizes("tr_vocab", N_("Vocabulary"), (64, 128), D["vocab"], N_("Token ids 0 … vocab − 1.")),
    batch=sizes("tr_batch", N_("Batch"), (8, 16, 32, 64), D["batch"], N_("Sequences per training step.")),
    lr=Options(  # the link holds 0.01 in every language, the slider shows 0,01
        key="tr_lr", label=N_("Adam learning rate"), widget="select_slider", default=f"{D['lr']:g}",
        options=lambda ctx: {f"{v:g}": i18n.general(v) for v in (0.001, 0.003, 0.01, 0.03)},
        help=lambda ctx: _("Adam's step size (β = {b1}, {b2}).").format(b1=i18n.general(0.9),
                                                                         b2=i18n.general(0.999))),
    scale=Toggle(key="tr_scale", label=N_("Divide the scores by √d_head"), default=D["scale"],
                 help=N_("Off: the softmax gets q·k itself (section 5 trains both).")),
    init=init("tr_init", N_("Initialisation"), D["init"],
              N_("lesson: matrices N(0, 2/(fan_in + fan_out)) as the lesson's SelfAttention, embeddings N(0, "
                 "1/d_model). unit-variance: matrices N(0, 1/fan_in), embeddings N(0, 1).")),
    positions=Options(key="tr_positions", label=N_("Positions"), default=D["positions"], horizontal=True,
                      options={code: M.POSITION_LABELS[code] for code in ("learned", "sinusoidal")},
                      help=N_("learned: a trained table W_pos. sinusoidal: the fixed sines and cosines of Vaswani et "
                              "al.")),
    step=Slider(  # the snapshot shown: drawn once the run is trained
        key="tr_step", label=N_("Training step shown"), lo=0, hi=lambda ctx: ctx["steps"],
        default=lambda ctx: ctx["steps"], step=lambda ctx: ctx["every"],
        example={"steps": D["steps"], "every": M.RunSpec().snapshot_every},
        expected=N_("a multiple of {every} from 0 to {steps}"),
        help=lambda ctx: _n("A snapshot of the probe's attention is kept every {n} step.",
                            "A snapshot of the probe's attention is kept every {n} steps.", ctx["every"]).format(
            n=ctx["every"])),
    sc_d_head=sizes("tr_sc_d_head", N_("d_head of this experiment"), (32, 64, 128), D["scale_d_head"],
                    N_("Wide heads: the unscaled q·k grows with d_head.")),
    sc_init=init("tr_sc_init", N_("Initialisation of this experiment"), D["scale_init"],
                 N_("lesson: the lesson's Xavier-like scale. unit-variance: queries and keys with unit-variance "
                    "components, the lessons' assumption.")),
    ctx_steps=Slider(key="tr_ctx_steps", label=N_("Step budget per run"), lo=M.CONTEXT_STEPS_RANGE[0],
                     hi=M.CONTEXT_STEPS_RANGE[1], default=D["context_steps"], step=M.STEPS_STEP,
                     help=N_("Each run stops 50 steps after it forms, or at this budget.")),
)
MORE = ("vocab", "batch", "lr", "scale", "init", "positions")
"""The settings in the "More settings" expander (it opens when the link gives one of them)."""
STATES = ()
AFTER_A_CLICK = ("step",)
"""Controls drawn only after a button (the snapshot slider, once the run is trained): no link state reaches them,
so ``tests/lessons/test_contract.py`` does not require them drawn; ``tests/lessons/training/test_page.py`` trains."""
TEXT_STATES = {  # a run of 300 steps: an induction head forms at about step 220 on the default model
    "trained": ({"tr_steps": "300"}, ("tr_train", "tr_show_before", "tr_run_layers", "tr_run_shortcut", "tr_real")),
    "scaling": ({"tr_steps": "300", "tr_sc_d_head": "32"}, ("tr_train", "tr_run_scaling")),
    "context": ({"tr_ctx_steps": "400"}, ("tr_run_context",)),
    "fixed-task": ({"tr_steps": "300", "tr_task": "repeat_fixed"}, ("tr_train",)),
    "too-big": ({"tr_layers": "3", "tr_heads": "4", "tr_d_model": "64", "tr_d_head": "64", "tr_n_ctx": "64",
                 "tr_steps": "2000"}, ()),
}
"""States whose text no other state shows: the link, then the buttons pressed in order (a run, its snapshot before
the induction head, the experiments, SmolLM2's heads; a run too big for the server). ``tests/lessons/test_languages.py``
checks each in every language; the runs are shared by every session of the process (``model.WORKER``), so the
other languages draw the English page's finished runs."""
