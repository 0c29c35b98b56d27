"""Watch attention learn: the arrays of the lesson (pure NumPy on top of :mod:`attention.training`; no Streamlit).

A run is named by its :class:`RunSpec` (every setting the page's link holds): the same spec gives the same
run, bit for bit (:func:`train_run`). :class:`RunResult` keeps what the page draws: the per-step measurements,
the probe sequence's attention at the snapshot steps, the trained weights and the mechanism check. The
sentences of the page are computed from a result by the small functions below (:func:`jump`,
:func:`compare_scaling`, :func:`context_growth` …), so each one can be checked against the numbers.

Sources: Elhage et al. (2021), "A Mathematical Framework for Transformer Circuits" (attention-only models,
K-composition of a previous-token head and an induction head); Olsson et al. (2022), "In-context Learning and
Induction Heads" (prefix matching, the phase change, ablations); Musat et al. (2025), "On the Emergence of
Induction Heads for In-Context Learning" (arXiv 2511.01033: the time to emergence grows quadratically with the
context length in their minimal model).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from attention import heads, training
from explorer.shell import i18n, llm
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import number_list

_, _n = translator(__name__)

STEPS_RANGE = (100, 2000)
STEPS_STEP = 100
SNAPSHOTS = 20
"""Snapshot intervals per run: the probe's attention is kept every ``steps / 20`` steps (21 snapshots)."""
CONTEXT_CHOICES = (16, 24, 32, 48)
"""The context lengths of the context-length experiment (measured here with the defaults, seeds 0-2: about 160,
185, 215 and 350 steps; at n = 64 two seeds of three did not form within 3000 steps, so 64 is left to section 1)."""
CONTEXT_STEPS_RANGE = (400, 1200)  # four runs of 1200 steps: about 8 default runs (MAX_COST)

DEFAULTS = dict(seed=0, n_layers=2, n_heads=2, d_model=32, d_head=16, n_ctx=32, vocab=64, steps=600, batch=32,
                lr=0.01, task="repeat", scale=True, init="lesson", positions="learned",
                scale_d_head=64, scale_init="lesson", context_steps=1000)
TASK_LABELS = {"repeat": N_("random period"), "repeat_fixed": N_("fixed period")}  # shown translated: _(…)
INIT_LABELS = {"lesson": N_("lesson"), "unit-variance": N_("unit-variance")}  # the page's options
INIT_PHRASES = {"lesson": N_("lesson init"), "unit-variance": N_("unit-variance init")}  # in a sentence
POSITION_LABELS = {"learned": N_("learned"), "sinusoidal": N_("sinusoidal")}  # the page's options
POSITION_PHRASES = {"learned": N_("learned positions"), "sinusoidal": N_("sinusoidal positions"),
                    "none": N_("no positions")}  # in a sentence
PLATEAU_PM = 0.2
"""Prefix-match at or below this is "on the plateau" (a jump starts at the last such step)."""
FORMED_PM = 0.8
"""Prefix-match at or above this is "formed" (a jump ends at the first such step)."""
SMOOTH = 9
"""The curves' values in the page's sentences are running means over this many steps (one batch is noisy)."""
STOP_AFTER = 50
"""A run with ``stop_after_emergence`` trains this many steps past the emergence, then stops."""
REAL_MODEL_TOP = 3
"""How many of the real model's heads the bridge names per score."""


# --- a run ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RunSpec:
    """Every setting of one training run (the page's controls); equal specs give equal runs.

    Attributes: the model's sizes (:class:`attention.training.Config`), ``steps``, ``batch``, ``lr`` (Adam),
    ``task`` (one of :data:`attention.training.TASKS`) and the ``seed`` that draws both the initial weights
    and the training batches. ``stop_after_emergence``: end the run :data:`STOP_AFTER` steps after the best
    prefix-match first passes 0.4 (the context-length experiment needs only that step).
    """

    seed: int = DEFAULTS["seed"]
    n_layers: int = DEFAULTS["n_layers"]
    n_heads: int = DEFAULTS["n_heads"]
    d_model: int = DEFAULTS["d_model"]
    d_head: int = DEFAULTS["d_head"]
    n_ctx: int = DEFAULTS["n_ctx"]
    vocab: int = DEFAULTS["vocab"]
    steps: int = DEFAULTS["steps"]
    batch: int = DEFAULTS["batch"]
    lr: float = DEFAULTS["lr"]
    task: str = DEFAULTS["task"]
    scale: bool = DEFAULTS["scale"]
    init: str = DEFAULTS["init"]
    positions: str = DEFAULTS["positions"]
    stop_after_emergence: bool = False

    def config(self) -> training.Config:
        """The model's :class:`attention.training.Config` (float32)."""
        return training.Config(n_layers=self.n_layers, n_heads=self.n_heads, d_model=self.d_model,
                               d_head=self.d_head, vocab=self.vocab, n_ctx=self.n_ctx, scale=self.scale,
                               seed=self.seed, positions=self.positions, init=self.init)

    @property
    def snapshot_every(self) -> int:
        """Steps between two snapshots of the probe's attention (``steps / SNAPSHOTS``, at least 1)."""
        return max(1, self.steps // SNAPSHOTS)

    @property
    def snapshot_steps(self) -> tuple[int, ...]:
        """``0, every, 2·every, …, steps``."""
        return tuple(range(0, self.steps + 1, self.snapshot_every)) + (
            () if self.steps % self.snapshot_every == 0 else (self.steps,))

    def describe(self) -> str:
        """One line naming the run's settings (plain text, in the run's language)."""
        return _("{layers} × {heads}, d_model {d_model}, d_head {d_head}, vocab {vocab}, n {n}, {task}, {scaling}, "
                 "{init}, {positions}, batch {batch}, Adam lr {lr}, {steps} steps, seed {seed}").format(
            layers=layers_count(self.n_layers), heads=_n("{n} head", "{n} heads", self.n_heads).format(n=self.n_heads),
            d_model=self.d_model, d_head=self.d_head, vocab=self.vocab, n=self.n_ctx, task=_(TASK_LABELS[self.task]),
            scaling="÷√d_head" if self.scale else _("no scaling"), init=_(INIT_PHRASES[self.init]),
            positions=_(POSITION_PHRASES[self.positions]), batch=self.batch, lr=i18n.general(self.lr), steps=self.steps,
            seed=self.seed)


@dataclass(frozen=True)
class Progress:
    """What a run has measured so far (for the live view): per step ``[S]`` the loss, the accuracy and the best
    prefix-match among the heads of layers >= 1 (layer 0's for one layer)."""

    step: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray
    prefix_match: np.ndarray

    @property
    def done_steps(self) -> int:
        return int(self.step[-1]) if self.step.size else 0


@dataclass(frozen=True)
class RunResult:
    """A finished run.

    Attributes:
        spec: its settings.
        step: ``[S]`` the steps measured, ``0 .. steps`` (``S = steps + 1``).
        loss, accuracy: ``[S]``; prefix_match, previous_token: ``[S, n_layers, n_heads]``;
        score_grad, score_std, saturated: ``[S, n_layers]`` (see :class:`attention.training.Record`).
        snapshot_steps: ``[K]``; snapshots: ``[K, n_layers, n_heads, n, n]`` float32, the probe's attention weights.
        probe: ``[n]`` the probe sequence's token ids; probe_period: its run length.
        params: the trained weights; mechanism: :func:`attention.training.mechanism` of the trained model.
        seconds: how long the training took on this server (wall time).
    """

    spec: RunSpec
    step: np.ndarray
    loss: np.ndarray
    accuracy: np.ndarray
    prefix_match: np.ndarray
    previous_token: np.ndarray
    score_grad: np.ndarray
    score_std: np.ndarray
    saturated: np.ndarray
    snapshot_steps: np.ndarray
    snapshots: np.ndarray
    probe: np.ndarray
    probe_period: int
    params: dict = field(repr=False)
    mechanism: training.Mechanism = field(repr=False)
    seconds: float = 0.0

    @property
    def nbytes(self) -> int:
        """The bytes its arrays hold (what a cached result costs)."""
        arrays = [v for v in vars(self).values() if isinstance(v, np.ndarray)] + list(self.params.values())
        return int(sum(a.nbytes for a in arrays))


COST_OVERHEAD, COST_PER_FLOP = 0.23, 0.77
"""A training step costs about ``COST_OVERHEAD + COST_PER_FLOP * r`` steps at the defaults, ``r`` its work
(:func:`step_flops`) relative to the defaults' (least squares over ``bench/bench_training.py``'s quiet run, load
average 1.2: per step 1.28 forward+backward passes at the defaults, 0.77 with one layer, 0.55 at n 16, 4.10 at
n 64, 3.97 at d_head 64, 31.2 at 3 layers x 4 heads, d_model 64, d_head 64, n 64; the estimate is within
0.6-1.4x of each)."""
SCORE_WORK = 128
"""Work per score entry in :func:`step_flops` (the softmax, its backward, the masks: elementwise NumPy passes)."""
MAX_COST = 8.0
"""The most one button may ask of the server's training worker, in default runs (600 steps at the defaults, about
3.2 s on this machine when it is quiet): runs beyond it are refused with a note, so one learner cannot hold the
worker (and every other learner's runs) for minutes."""


def step_flops(spec: RunSpec) -> float:
    """The work of one training step, up to a constant factor: the matrix products (projections, scores, weighted
    values, unembedding; forward and backward alike) and :data:`SCORE_WORK` per score entry."""
    per_layer = spec.n_heads * spec.n_ctx * (4 * spec.d_model * spec.d_head + 2 * spec.n_ctx * spec.d_head
                                             + SCORE_WORK * spec.n_ctx)
    return spec.batch * (spec.n_layers * per_layer + spec.n_ctx * spec.d_model * spec.vocab)


def run_cost(spec: RunSpec) -> float:
    """What training ``spec`` costs, in default runs (see :data:`COST_OVERHEAD`); 1.0 for the defaults."""
    default = RunSpec()
    return spec.steps / default.steps * (COST_OVERHEAD + COST_PER_FLOP * step_flops(spec) / step_flops(default))


def is_default_run(spec: RunSpec) -> bool:
    """Whether ``spec`` is the run at the page's defaults (the one a class opening the lesson trains and shares): the
    training worker keeps it past the ttl of the other finished runs (:class:`explorer.shell.jobs.Jobs`'s ``pin``)."""
    return spec == RunSpec()


def best_prefix_match(prefix_match: np.ndarray) -> np.ndarray:
    """``[S]``: per step the largest prefix-match among the heads of layers >= 1 (of layer 0 with one layer)."""
    pm = prefix_match[:, 1:] if prefix_match.shape[1] > 1 else prefix_match
    return pm.reshape(pm.shape[0], -1).max(axis=1)


def train_run(spec: RunSpec, on_progress: Callable[[Progress], None] | None = None,
              every: int = 10) -> RunResult:
    """Train the run ``spec`` names and return its :class:`RunResult`.

    ``on_progress`` (if given) is called with the measurements so far every ``every`` steps and at the end.

    Raises:
        ValueError: a setting :mod:`attention.training` refuses (a vocabulary too small for the run, …).
    """
    cfg = spec.config()
    t0 = time.perf_counter()
    trained = training.AttentionOnly(cfg)
    records: list[training.Record] = []
    emerged = None
    for rec in training.train(cfg, steps=spec.steps, batch=spec.batch, lr=spec.lr, task=spec.task, seed=spec.seed,
                              snapshot_steps=spec.snapshot_steps, model=trained):
        records.append(rec)
        if on_progress is not None and (len(records) % every == 0):
            on_progress(progress_of(records))
        if emerged is None and float(best_prefix_match(rec.prefix_match[None])[0]) > training.EMERGENCE_THRESHOLD:
            emerged = rec.step
        if spec.stop_after_emergence and emerged is not None and rec.step >= emerged + STOP_AFTER:
            break
    if on_progress is not None:
        on_progress(progress_of(records))
    seconds = time.perf_counter() - t0
    probe = training.probe_batch(cfg, spec.task, spec.seed)
    snaps = [r for r in records if r.attention is not None]
    return RunResult(
        spec, *stack(records, ("step", "loss", "accuracy", "prefix_match", "previous_token", "score_grad",
                               "score_std", "saturated")),
        *stack(snaps, ("step", "attention")), probe=probe.tokens[0], probe_period=int(probe.period[0]),
        params={k: v.copy() for k, v in trained.params.items()},
        mechanism=training.mechanism(trained, spec.task, spec.seed), seconds=seconds)


def progress_of(records: Sequence[training.Record]) -> Progress:
    """The :class:`Progress` of ``records`` (a run's first steps)."""
    step, loss, accuracy, pm = stack(records, ("step", "loss", "accuracy", "prefix_match"))
    return Progress(step, loss, accuracy, best_prefix_match(pm))


def stack(records: Sequence[training.Record], names: Sequence[str]) -> list[np.ndarray]:
    """The records' fields ``names``, each stacked over the steps (``[S, …]``)."""
    return [np.array([getattr(r, name) for r in records]) for name in names]


def untrained_attention(spec: RunSpec) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Before training: ``(probe tokens [n], attention [n_layers, n_heads, n, n], period, prefix-match
    [n_layers, n_heads], previous-token [n_layers, n_heads])`` of the freshly initialised model, the scores
    measured on the first training batch (what step 0 of the run measures)."""
    cfg = spec.config()
    model = training.AttentionOnly(cfg)
    probe = training.probe_batch(cfg, spec.task, spec.seed)
    first = training.make_batch(spec.task, spec.batch, cfg.n_ctx, cfg.vocab, np.random.default_rng(spec.seed))
    with training.loop.one_blas_thread():
        fw = model.forward(first.tokens)
        attention = model.attention(probe.tokens[0])
    return (probe.tokens[0], attention.astype(np.float32), int(probe.period[0]),
            training.prefix_match(fw.weights, first), training.previous_token(fw.weights))


def probe_roles(n: int, period: int) -> np.ndarray:
    """``[n]`` 0 = filler, 1 = the first copy of the run, 2 = the second copy."""
    pos = np.arange(n)
    return np.where(pos >= n - period, 2, np.where(pos >= n - 2 * period, 1, 0))


# --- the numbers behind the sentences -----------------------------------------------------------------------
def smooth(y: np.ndarray, window: int = SMOOTH) -> np.ndarray:
    """Running mean over ``window`` steps (centred; shorter at the ends), same length as ``y``."""
    y = np.asarray(y, dtype=float)
    if y.size == 0:
        return y
    kernel = np.ones(min(window, y.size))
    return np.convolve(y, kernel, mode="same") / np.convolve(np.ones_like(y), kernel, mode="same")


@dataclass(frozen=True)
class Jump:
    """Where an induction head formed in a run, from its smoothed curves (:data:`SMOOTH`).

    Attributes:
        emerged: the first step whose best prefix-match (layers >= 1) exceeds
            :data:`attention.training.EMERGENCE_THRESHOLD` (raw, per batch), or ``None``.
        start, end: the last step at or before ``emerged`` with smoothed prefix-match <= :data:`PLATEAU_PM`, and
            the first step after it with smoothed prefix-match >= :data:`FORMED_PM` (``None``: never that high).
        head: the head of layers >= 1 with the largest prefix-match at the end (``(0, h)`` with one layer);
            previous_head: layer 0's head with the largest previous-token score at the end.
        pm, prev, acc: smoothed ``(at start, at end or the last step)`` of that head's prefix-match, that
            head's previous-token score and the accuracy.
        plateau_loss: ``(lowest, highest)`` smoothed loss from step 10 to ``start`` (``None`` when that span is
            empty).
    """

    emerged: int | None
    start: int | None
    end: int | None
    head: tuple[int, int]
    previous_head: tuple[int, int]
    pm: tuple[float, float]
    prev: tuple[float, float]
    acc: tuple[float, float]
    plateau_loss: tuple[float, float] | None


def final_heads(result: RunResult) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(induction head, previous-token head)`` of the run at its last step (see :class:`Jump`)."""
    pm, prev = result.prefix_match[-1], result.previous_token[-1]
    lo = 1 if pm.shape[0] > 1 else 0
    layer, head = heads.top_heads(pm[lo:])[0]
    return (lo + layer, head), heads.top_heads(prev[:1])[0]


def jump(result: RunResult) -> Jump:
    """The :class:`Jump` of ``result``."""
    best = best_prefix_match(result.prefix_match)
    emerged = next((int(s) for s, v in zip(result.step, best, strict=True) if v > training.EMERGENCE_THRESHOLD), None)
    head, prev_head = final_heads(result)
    pm_curve = smooth(result.prefix_match[:, head[0], head[1]])
    prev_curve = smooth(result.previous_token[:, prev_head[0], prev_head[1]])
    acc_curve = smooth(result.accuracy)
    sm_best = smooth(best)
    start = end = None
    if emerged is not None:
        before = np.flatnonzero((sm_best <= PLATEAU_PM) & (result.step <= emerged))
        start = int(result.step[before[-1]]) if before.size else 0
        after = np.flatnonzero((sm_best >= FORMED_PM) & (result.step >= start))
        end = int(result.step[after[0]]) if after.size else None
    a = 0 if start is None else start
    b = len(result.step) - 1 if end is None else end
    span = smooth(result.loss)[10:a]
    return Jump(emerged, start, end, head, prev_head, (float(pm_curve[a]), float(pm_curve[b])),
                (float(prev_curve[a]), float(prev_curve[b])), (float(acc_curve[a]), float(acc_curve[b])),
                (float(span.min()), float(span.max())) if span.size else None)


def final_accuracy(result: RunResult) -> float:
    """The accuracy at the end of the run, smoothed over the last :data:`SMOOTH` steps."""
    return float(result.accuracy[-SMOOTH:].mean())


@dataclass(frozen=True)
class ScalingComparison:
    """The ÷√d_k experiment's numbers: one run with the division and one without, otherwise equal.

    Every pair is ``(scaled, unscaled)``. Every curve is ``[2, S]``, in one layer: ``layer``, the induction head's
    (the best prefix-matching head's at the scaled run's end, :func:`final_heads`; layer 0 with one layer), where
    the copying happens; as a running mean over :data:`SMOOTH` steps (one batch is noisy), so the charts, the table
    and the sentences quote the same number.

    Attributes:
        step: ``[S]``; d_head: the heads' width (the division is ÷√d_head); layer: the layer the curves read.
        emerged: the steps the best prefix-match passed 0.4 (:func:`jump`; ``None``: not within the run).
        best: ``(step, accuracy)`` of each run's best accuracy.
        collapsed: the first step after its best at which a run that reached
            :data:`attention.training.LEARNED_ACCURACY` fell below half of its best (``None``: it did not).
        accuracy: on the predictable positions. spread: the scores' spread (the softmax's input,
            :attr:`attention.training.Record.score_std`: q·k for the unscaled run, q·k/√d_head for the other).
        saturated: the share of rows whose top weight exceeds :data:`attention.training.SATURATED_WEIGHT`.
        grad: ``‖∂L/∂s‖``, the gradient that reaches the scores through the softmax.
    """

    step: np.ndarray
    d_head: int
    layer: int
    emerged: tuple[int | None, int | None]
    best: tuple[tuple[int, float], tuple[int, float]]
    collapsed: tuple[int | None, int | None]
    accuracy: np.ndarray
    spread: np.ndarray
    saturated: np.ndarray
    grad: np.ndarray

    @property
    def moment(self) -> int:
        """The step the two runs are compared at: the first collapse (the moment the division matters), else the
        last step."""
        falls = [s for s in self.collapsed if s is not None]
        return min(falls) if falls else int(self.step[-1])

    def raw_spread(self, run: int, i: int) -> float:
        """The spread of q·k itself at index ``i``: the scaled run's ``spread`` times √d_head."""
        return float(self.spread[run, i] * (math.sqrt(self.d_head) if run == 0 else 1.0))


def compare_scaling(scaled: RunResult, unscaled: RunResult) -> ScalingComparison:
    """The :class:`ScalingComparison` of two runs that differ in ``scale`` only.

    Raises:
        ValueError: the runs differ in another setting, or ``scaled`` is not the scaled one.
    """
    if replace(scaled.spec, scale=False) != unscaled.spec or not scaled.spec.scale:
        raise ValueError(f"scaled and unscaled must differ in scale only: {scaled.spec} vs {unscaled.spec}")
    runs = (scaled, unscaled)
    acc = np.stack([smooth(r.accuracy) for r in runs])  # [2, S]
    peak = acc.argmax(axis=1)
    collapsed = []
    for a, p in zip(acc, peak, strict=True):
        below = np.flatnonzero(a[p:] < 0.5 * a[p])
        collapsed.append(int(scaled.step[p + below[0]]) if a[p] >= training.LEARNED_ACCURACY and below.size else None)
    layer = final_heads(scaled)[0][0]
    return ScalingComparison(
        scaled.step, scaled.spec.d_head, layer, tuple(jump(r).emerged for r in runs),
        tuple((int(scaled.step[p]), float(a[p])) for a, p in zip(acc, peak, strict=True)), tuple(collapsed), acc,
        *(np.stack([smooth(getattr(r, name)[:, layer]) for r in runs]) for name in ("score_std", "saturated",
                                                                                   "score_grad")))


def spread_text(x: float) -> str:
    """A spread or a gradient as the page writes it: two significant digits and the run's decimal mark (``0.041``,
    ``3.4``, ``68``, ``1.5e‑05``: an exponent's hyphen is U+2011, so a phone never breaks the number there)."""
    return i18n.general(x, 2).replace("-", "\u2011")


def scaling_rows(c: ScalingComparison) -> list[dict]:
    """The table beside the formula: both runs at step 0, when the first of them learned and at :attr:`moment`
    (columns named in the run's language; the numbers are the curves' of :class:`ScalingComparison`)."""
    moments = [(0, _("start"))]
    learned = [e for e in c.emerged if e is not None]
    if learned and 0 < min(learned) < c.moment:
        moments.append((min(learned), _("first prefix-match > {threshold}").format(threshold=threshold())))
    moments.append((c.moment, _("fell apart") if c.moment in c.collapsed else _("last step")))
    rows = []
    for step, name in moments:
        i = int(np.searchsorted(c.step, step))
        for run, label in enumerate(("÷√d_head", _("no scaling"))):
            rows.append({_("step"): step, _("moment"): name, _("run"): label, _("accuracy"): c.accuracy[run, i],
                         _("spread of q·k"): c.raw_spread(run, i), _("spread the softmax gets"): c.spread[run, i],
                         _("saturated rows"): c.saturated[run, i], "‖∂L/∂s‖": c.grad[run, i]})
    return rows


def scaling_sentences(c: ScalingComparison) -> list[str]:
    """What THIS pair of runs shows, decided from its numbers: which learned faster, whether and when one fell apart,
    and how spread, saturated and starved of gradient each run's softmax was at :attr:`ScalingComparison.moment`."""
    (e_s, e_u), steps = c.emerged, int(c.step[-1])
    words = dict(scaled=e_s, unscaled=e_u, steps=steps, threshold=threshold())
    if e_s is not None and e_u is not None:
        out = [{-1: _("**With ÷√d_head this run learned faster**: prefix-match passed {threshold} at step {scaled}, "
                      "against {unscaled} without it."),
                0: _("Both runs learned at the same step: prefix-match passed {threshold} at step {scaled}."),
                1: _("**Without ÷√d_head this run learned faster**: prefix-match passed {threshold} at step "
                     "{unscaled}, against {scaled} with it.")}[int(np.sign(e_s - e_u))].format(**words)]
        fast, slow = (0, 1) if e_s < e_u else (1, 0)
        i = int(np.searchsorted(c.step, c.emerged[fast]))
        if e_s != e_u and c.spread[fast, i] > c.spread[slow, i]:
            out.append(_("At that step its scores were spread wider than the other run's (std {fast} against {slow}): "
                         "its attention sharpened sooner.").format(fast=spread_text(c.spread[fast, i]),
                                                                   slow=spread_text(c.spread[slow, i])))
    elif e_s is not None:
        out = [_("**Only the run with ÷√d_head learned**: prefix-match passed {threshold} at step {scaled}; without "
                 "it, not within {steps} steps.").format(**words)]
    elif e_u is not None:
        out = [_("**Only the run without ÷√d_head learned**: prefix-match passed {threshold} at step {unscaled}; "
                 "with it, not within {steps} steps.").format(**words)]
    else:
        out = [_("Neither run learned within {steps} steps (prefix-match never passed {threshold}): train longer to "
                 "compare them.").format(**words)]
    for run, fell in enumerate(c.collapsed):
        if fell is not None:
            text = (_("**Then the run with ÷√d_head fell apart**: its accuracy went from {best} (step {best_step}) to "
                      "below half of that by step {step}; {final} at the end.") if run == 0 else
                    _("**Then the run without ÷√d_head fell apart**: its accuracy went from {best} (step {best_step}) "
                      "to below half of that by step {step}; {final} at the end."))
            out.append(text.format(best=num(c.best[run][1]), best_step=c.best[run][0], step=fell,
                                   final=num(c.accuracy[run, -1])))
    if c.collapsed == (None, None):
        out.append(_("Neither run fell apart within {steps} steps: accuracy at the end {scaled} with ÷√d_head, "
                     "{unscaled} without.").format(steps=steps, scaled=num(c.accuracy[0, -1]),
                                                   unscaled=num(c.accuracy[1, -1])))
    i = int(np.searchsorted(c.step, c.moment))
    when = {c.collapsed[0]: _("when the run with ÷√d_head fell apart"),
            c.collapsed[1]: _("when the run without ÷√d_head fell apart")}.get(c.moment, _("the last step"))
    out.append(_("At step {step} ({when}), in layer {layer} (the induction head's), the scores the softmax got were "
                 "spread (std) {unscaled} without the division against {scaled} with it ({raw} before ÷√{d_head}); "
                 "{sat_unscaled} of the rows without it were saturated (top weight > {top}) against {sat_scaled}, and "
                 "the gradient reaching the scores was {grad_unscaled} against {grad_scaled}.").format(
        step=c.moment, when=when, layer=c.layer, unscaled=spread_text(c.spread[1, i]),
        scaled=spread_text(c.spread[0, i]), raw=spread_text(c.raw_spread(0, i)), d_head=c.d_head,
        sat_unscaled=i18n.percent(c.saturated[1, i], 0),
        sat_scaled=i18n.percent(c.saturated[0, i], 0), top=i18n.general(training.SATURATED_WEIGHT),
        grad_unscaled=spread_text(c.grad[1, i]), grad_scaled=spread_text(c.grad[0, i])))
    if c.saturated[1, i] <= c.saturated[0, i]:
        out.append(_("Here the run without the division was not the more saturated one at that step: at these "
                     "settings its scores did not outgrow the other run's."))
    elif c.grad[1, i] < 0.5 * c.grad[0, i]:
        out.append(_("That is what ÷√d_head is for: q·k grows with d_head and with training, the division keeps the "
                     "spread the softmax gets small, and a softmax that is not saturated still passes gradient back "
                     "to the scores."))
    else:
        out.append(_("Its softmax was the more saturated one, yet its scores still got more than half as much "
                     "gradient: the rows that were not saturated still passed it back."))
    return out


@dataclass(frozen=True)
class ContextGrowth:
    """The context-length experiment: steps to emergence per context length, and how fast they grow.

    Attributes:
        n: the context lengths, ascending; emerged: the steps (``None``: not within ``steps``).
        exponent: ``k`` of the least-squares fit ``steps ∝ n^k`` over the lengths that formed (``None`` with fewer
            than two); ``k = 1`` is linear growth, ``k = 2`` quadratic.
        pairs: for each two neighbouring lengths that both formed, ``(n_small, n_large, steps ratio, local k)``.
        verdict: :func:`growth_word` of ``exponent`` (``None`` without one).
    """

    n: tuple[int, ...]
    emerged: tuple[int | None, ...]
    steps: int
    exponent: float | None
    pairs: tuple[tuple[int, int, float, float], ...]
    verdict: str | None


def growth_word(k: float) -> str:
    """What an exponent ``k`` of ``steps ∝ n^k`` says (English; shown translated: ``_(growth_word(k))``)."""
    words = ((2.25, N_("faster than quadratic")), (1.75, N_("about quadratic")),
             (1.25, N_("between linear and quadratic")), (0.75, N_("about linear")))
    return next((word for lowest, word in words if k >= lowest), N_("slower than linear"))


def context_growth(results: Sequence[RunResult]) -> ContextGrowth:
    """The :class:`ContextGrowth` of runs that differ in ``n_ctx`` only (any order).

    Raises:
        ValueError: the runs differ in another setting.
    """
    runs = sorted(results, key=lambda r: r.spec.n_ctx)
    base = replace(runs[0].spec, n_ctx=0)
    if any(replace(r.spec, n_ctx=0) != base for r in runs):
        raise ValueError("the runs must differ in n_ctx only")
    n = tuple(r.spec.n_ctx for r in runs)
    emerged = tuple(jump(r).emerged for r in runs)
    pairs = tuple((n1, n2, e2 / e1, float(np.log(e2 / e1) / np.log(n2 / n1)))
                  for (n1, e1), (n2, e2) in itertools.pairwise(zip(n, emerged, strict=True)) if e1 and e2)
    formed = np.log([(a, e) for a, e in zip(n, emerged, strict=True) if e]).reshape(-1, 2)  # rows (ln n, ln steps)
    k = float(np.polyfit(formed[:, 0], formed[:, 1], 1)[0]) if len(formed) >= 2 else None
    return ContextGrowth(n, emerged, runs[0].spec.steps, k, pairs, None if k is None else growth_word(k))


def snapshot_step(step, spec: RunSpec) -> int | None:
    """The snapshot step of the run ``spec`` nearest ``step`` (a whole number; ``None`` for anything else)."""
    if isinstance(step, bool) or not isinstance(step, int | np.integer):
        return None
    every = spec.snapshot_every
    return int(min(max(round(int(step) / every) * every, 0), spec.steps))


def key_steps(result: RunResult) -> dict[str, int]:
    """Snapshot steps worth a look: ``{"before": …, "during": …, "after": …}`` the jump (:func:`jump`): the last
    snapshot at or before its start, the one nearest the emergence, the first at or after its end; a step that
    repeats the previous one is left out. Empty when no induction head formed."""
    j = jump(result)
    if j.emerged is None:
        return {}
    snaps = result.snapshot_steps
    before = int(snaps[snaps <= (j.start or 0)].max())
    during = int(snaps[int(np.argmin(np.abs(snaps - j.emerged)))])
    after = int(snaps[snaps >= (np.inf if j.end is None else j.end)].min(initial=snaps[-1]))  # else the last one
    out: dict[str, int] = {}
    for name, step in (("before", before), ("during", during), ("after", after)):
        if step not in out.values():
            out[name] = step
    return out


# --- the bridge to the real model ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RealHeads:
    """The same two scores measured on the real model (SmolLM2-135M) reading a repeated random token run.

    Attributes:
        prefix_match, previous_token: ``[n_layers, n_heads]``.
        top_induction, top_previous: the :data:`REAL_MODEL_TOP` heads with the largest scores, ``(layer, head,
            score)``, largest first.
        n_tokens: the prompt's length; period: the run's length.
    """

    prefix_match: np.ndarray
    previous_token: np.ndarray
    top_induction: tuple[tuple[int, int, float], ...]
    top_previous: tuple[tuple[int, int, float], ...]
    n_tokens: int
    period: int


REAL_PROMPT = ("The old lighthouse keeper painted seven blue boats before the storm reached the quiet harbour. "
               "The old lighthouse keeper painted seven blue boats before the storm reached the quiet harbour.")
"""A sentence written twice, for the link to "Inside a real model" (its induction score needs a repeat)."""


def real_heads(attentions: np.ndarray, ids, top: int = REAL_MODEL_TOP) -> RealHeads:
    """:class:`RealHeads` from the real model's attention ``[n_layers, n_heads, 2p, 2p]`` on a run of ``p`` tokens
    written twice (``ids``, :func:`attention.heads.repeated_random_ids`): the same two scores as the training
    batches, :mod:`attention.heads`' induction score (here the second copy's queries ``p .. 2p-1``, key
    ``i - p + 1``) and previous-token score (queries ``2 .. 2p-1``).

    Raises:
        ValueError: ``attentions`` is not ``[L, H, n, n]`` for the ``n`` ids, or no query has an induction target.
    """
    w = np.asarray(attentions, dtype=np.float64)
    if w.ndim != 4:
        raise ValueError(f"attentions must be [n_layers, n_heads, n, n], got shape {w.shape}")
    L, H, n, _ = w.shape
    pm, prev = heads.induction(w, ids), heads.score("previous", w)  # [L, H] each
    return RealHeads(pm, prev, *(tuple((layer, head, float(s[layer, head])) for layer, head in heads.top_heads(s, top))
                                 for s in (pm, prev)), n, n // 2)


def uniform_scores(spec: RunSpec) -> tuple[float, float]:
    """``(prefix-match, previous-token)`` of uniform causal attention (:func:`attention.heads.uniform`) on the run's
    first training batch: what the two scores read for a head that has learned nothing (the same definitions and
    the same batch as step 0)."""
    cfg = spec.config()
    first = training.make_batch(spec.task, spec.batch, cfg.n_ctx, cfg.vocab, np.random.default_rng(spec.seed))
    u = np.broadcast_to(heads.uniform(cfg.n_ctx), (spec.batch, 1, cfg.n_ctx, cfg.n_ctx))
    return float(training.prefix_match([u], first)[0, 0]), float(training.previous_token([u])[0, 0])


# --- the page's sentences: which statement is true for a run, with its numbers (checked in tests/lessons/training) ---
VERDICTS = {"induction": N_("induction"), "shortcut": N_("shortcut"), "not learned": N_("not learned"),
            "other": N_("other")}
"""The mechanism check's verdicts (:attr:`attention.training.Mechanism.label`), shown translated: :func:`verdict`."""


def threshold() -> str:
    """The emergence threshold (0.4) as the run's language writes it (``0,4``)."""
    return i18n.general(training.EMERGENCE_THRESHOLD)


def num(x: float, digits: int = 2) -> str:
    """``x`` with ``digits`` decimals and the run's decimal mark (:func:`explorer.shell.i18n.number`)."""
    return i18n.number(x, digits)


def head_name(head: tuple[int, int]) -> str:
    """``"layer 1 head 0"`` (in the run's language)."""
    return _("layer {layer} head {head}").format(layer=head[0], head=head[1])


def head_title(layer: int, head: int, pm: np.ndarray, prev: np.ndarray) -> str:
    """An attention map's title: the head and its prefix-match (layers >= 1, or the only layer) or previous-token
    score (layer 0), from ``pm``, ``prev`` ``[n_layers, n_heads]``."""
    words = dict(layer=layer, head=head)
    if layer >= 1 or pm.shape[0] == 1:
        return _("layer {layer} head {head} · prefix {score}").format(score=num(pm[layer, head]), **words)
    return _("layer {layer} head {head} · previous {score}").format(score=num(prev[layer, head]), **words)


def snapshot_caption(result: RunResult, step: int) -> str:
    """The maps' caption at snapshot ``step``: its accuracy and loss, named as on that step's training batch."""
    return _("Step {step}, on that step's training batch: accuracy {accuracy}, loss {loss}. The probe sequence (period "
             "{p}; its second copy starts at position {start}). An induction head's map shows a stripe one step right "
             "of the diagonal p = {p} back; a previous-token head's, the diagonal just below the main.").format(
        step=step, accuracy=num(result.accuracy[step]), loss=num(result.loss[step]), p=result.probe_period,
        start=result.spec.n_ctx - result.probe_period)


def verdict(label: str) -> str:
    """The mechanism check's verdict in the run's language (:data:`VERDICTS`)."""
    return _(VERDICTS[label]) if label in VERDICTS else label


def emerged_text(step: int | None, steps: int) -> str:
    """``"at step 218"`` or ``"not within 600 steps"``."""
    return (_("at step {step}").format(step=step) if step is not None else
            _("not within {steps} steps").format(steps=steps))


def steps_count(n: int) -> str:
    """``"1 step"``, ``"120 steps"``."""
    return _n("{n} step", "{n} steps", n).format(n=n)


def layers_count(n: int) -> str:
    """``"1 layer"``, ``"2 layers"``."""
    return _n("{n} layer", "{n} layers", n).format(n=n)


def jump_sentences(result: RunResult, j: Jump) -> list[str]:
    """What the run's curves show, in sentences computed from them (Markdown of the app's own words)."""
    spec = result.spec
    ln_v = math.log(spec.vocab)
    best = best_prefix_match(result.prefix_match)
    out = []
    if j.emerged is None:
        top = int(np.argmax(best))
        out.append(_("**No induction head formed within {steps} steps**: no head's prefix-match passed {threshold} "
                     "(the best was {best}, at step {step}); accuracy at the end {accuracy}.").format(
            steps=spec.steps, threshold=threshold(), best=num(best[top]), step=int(result.step[top]),
            accuracy=num(final_accuracy(result))))
        if spec.n_layers == 1:
            out.append(_("With one layer this is expected: a head can only compare the current token with each key's "
                         "own token and position, so it can find the earlier copy of the current token but not the "
                         "token after it (section 3)."))
        else:
            out.append(_("Try more steps, another seed, or the defaults (2 layers, 2 heads, learning rate {lr}).")
                       .format(lr=i18n.general(DEFAULTS["lr"])))
        return out
    plateau = (_("Until step {start} the loss stayed between {lo} and {hi} nats (running means; a uniform guess "
                 "scores ln {vocab} = {ln_v}).").format(start=j.start, lo=num(j.plateau_loss[0]),
                                                         hi=num(j.plateau_loss[1]), vocab=spec.vocab, ln_v=num(ln_v))
               + " " if j.plateau_loss is not None else "")
    if result.mechanism.label == "induction":
        formed = _("**An induction head formed**: the best prefix-match passed {threshold} at step {step}, and the "
                   "knockouts below confirm the mechanism.").format(threshold=threshold(), step=j.emerged)
    else:
        formed = _("**A head that looks like an induction head formed**: the best prefix-match passed {threshold} at "
                   "step {step}; but the check below says *{verdict}*, so it is not an induction head.").format(
            threshold=threshold(), step=j.emerged, verdict=verdict(result.mechanism.label))
    out.append(plateau + formed)
    rose = dict(head=head_name(j.head), pm0=num(j.pm[0]), pm1=num(j.pm[1]), acc0=num(j.acc[0]), acc1=num(j.acc[1]),
                prev_head=head_name(j.previous_head), prev0=num(j.prev[0]), prev1=num(j.prev[1]), smooth=SMOOTH,
                start=j.start, end=j.end if j.end is not None else int(result.step[-1]), formed=i18n.general(FORMED_PM))
    text = {  # (a previous-token layer to name, the rise ended)
        (True, True): _("Between steps {start} and {end}, the prefix-match of {head} rose from {pm0} to {pm1}, the "
                        "previous-token score of {prev_head} from {prev0} to {prev1}, and the accuracy from {acc0} "
                        "to {acc1} (running means over {smooth} steps)."),
        (True, False): _("From step {start} to the last step (it never reached {formed}), the prefix-match of {head} "
                         "rose from {pm0} to {pm1}, the previous-token score of {prev_head} from {prev0} to {prev1}, "
                         "and the accuracy from {acc0} to {acc1} (running means over {smooth} steps)."),
        (False, True): _("Between steps {start} and {end}, the prefix-match of {head} rose from {pm0} to {pm1}, and "
                         "the accuracy from {acc0} to {acc1} (running means over {smooth} steps)."),
        (False, False): _("From step {start} to the last step (it never reached {formed}), the prefix-match of {head} "
                          "rose from {pm0} to {pm1}, and the accuracy from {acc0} to {acc1} (running means over "
                          "{smooth} steps)."),
    }[spec.n_layers > 1, j.end is not None]
    out.append(text.format(**rose))
    if j.end is not None and j.start is not None:
        rise = j.end - j.start
        if j.start > 0 and rise < j.start / 2:
            shape = _("The rise took {rise} after a plateau of {plateau}: a sudden jump after a long plateau.")
        else:
            shape = _("The rise took {rise} after a plateau of {plateau}: a gradual rise rather than a sudden jump.")
        out.append(shape.format(rise=steps_count(rise), plateau=steps_count(j.start)))
    return out


def mechanism_sentences(result: RunResult) -> list[str]:
    """What the knockouts show, computed from them; each head's scores are the last step's, the numbers its map is
    titled with (:func:`head_title`), and its induction head the one :func:`jump` follows (:func:`final_heads`)."""
    spec, mech = result.spec, result.mechanism
    pm, prev = result.prefix_match[-1], result.previous_token[-1]  # [L, H] each
    acc = mech.accuracy
    out = []
    if mech.label == "not learned":
        return [_("Accuracy on fresh sequences: {accuracy}, below {learned}: the model has not learned the task, so "
                  "there is no mechanism to check yet.").format(accuracy=num(acc),
                                                                learned=i18n.general(training.LEARNED_ACCURACY))]
    if mech.label == "shortcut":
        out.append(_("**This is the shortcut**: on fresh sequences, accuracy {accuracy} on its own task but {random} "
                     "with a random period. The model attends to a position (the fixed offset p − 1 back), not to the "
                     "token after the earlier occurrence; see section 4.").format(
            accuracy=num(acc), random=num(mech.random_period_accuracy)))
    if spec.n_layers > 1:
        head = final_heads(result)[0]
        k0, ki = mech.layer_knockout_accuracy[[0, li := head[0]]]
        out.append(_("Knocking out all of layer 0 takes the accuracy on fresh sequences from {accuracy} to {k0}; all "
                     "of layer {layer} (where the best prefix-matching head is), to {ki}.").format(
            accuracy=num(acc), k0=num(k0), layer=li, ki=num(ki)))
        if mech.label == "induction":
            out.append(_("So layer {layer}'s heads (prefix-match {pms} at step {step}) work only with what layer 0's "
                         "heads (previous-token {prev}) wrote into the residual stream: the two layers **compose**, "
                         "the circuit of Elhage et al. (2021) and Olsson et al. (2022). That is the mechanism, checked "
                         "by knocking it out, not just a pattern that looks like it.").format(
                layer=li, pms=number_list(pm[li], 2), prev=number_list(prev[0], 2), step=int(result.step[-1])))
        alone = mech.knockout_accuracy[head]
        others = [h for h in range(spec.n_heads) if h != head[1] and pm[head[0], h] > 0.4]
        words = dict(head=head_name(head), pm=num(pm[head]), alone=num(alone))
        if alone < 0.5 * acc:
            out.append(_("Knocking out {head} alone (prefix-match {pm}) takes it to {alone}: this head does the "
                         "copying.").format(**words))
        elif others:
            out.append(_n("Knocking out {head} alone (prefix-match {pm}) leaves {alone}: {names} also prefix-matches "
                          "({scores}) and can do the same job. Heads can share one job (redundancy); knock out the "
                          "whole layer to see that it is needed.",
                          "Knocking out {head} alone (prefix-match {pm}) leaves {alone}: {names} also prefix-match "
                          "({scores}) and can do the same job. Heads can share one job (redundancy); knock out the "
                          "whole layer to see that it is needed.", len(others)).format(
                names=", ".join(head_name((head[0], h)) for h in others),
                scores=number_list((pm[head[0], h] for h in others), 2), **words))
        else:
            out.append(_("Knocking out {head} alone (prefix-match {pm}) leaves {alone}: the other heads make up for "
                         "it. Heads can share one job (redundancy); knock out the whole layer to see that it is "
                         "needed.").format(**words))
    if mech.label == "other":
        out.append(_("Accuracy {accuracy} on any period, and knocking out layer 0 leaves {k0}: the model solves the "
                     "task without the two-layer circuit these checks look for.").format(
            accuracy=num(acc), k0=num(mech.layer_knockout_accuracy[0])))
    return out


def real_model_heads(seed: int, period: int = 20) -> RealHeads | None:
    """The two scores on SmolLM2-135M reading a random run of ``period`` tokens written twice (the door's cached
    :func:`explorer.shell.llm.run`); ``None`` without the model's weights."""
    lm = llm.available_model()
    if lm is None:
        return None
    ids = heads.repeated_random_ids(llm.word_ids(lm), period, seed)  # the one rule, the door's whole words
    return real_heads(llm.run(lm, ids).attentions, ids)


WORKER = "training"
"""The name of this process's shared training worker (:func:`explorer.shell.jobs.shared`)."""


def follow_report(specs: Sequence[RunSpec], names: Sequence[str], states, *, ahead: Callable[[RunSpec], int],
                  live: Callable[[RunSpec, Progress, str], object]) -> tuple[float, str, tuple | None]:
    """What :func:`explorer.shell.jobs.follow` shows while the runs of ``specs`` (named ``names`` in the run's
    language) wait or train, from their ``states`` (:meth:`explorer.shell.jobs.Jobs.snapshot`): the fraction of
    steps done, the bar's text, and the live view of the run training now (``(version, figure builder)``: ``live``
    builds it) or ``None``. ``ahead(spec)``: the jobs queued or running before ``spec``."""
    total = sum(s.steps for s in specs)
    done = sum(spec.steps if state in ("done", "failed") else (p.done_steps if p is not None else 0)
               for spec, (state, p, _r, _e) in zip(specs, states, strict=True))
    current = next(((name, spec, p) for name, spec, (state, p, _r, _e) in zip(names, specs, states, strict=True)
                    if state == "training"), None)
    if current is None:
        queued = max(ahead(s) for s in specs)
        return done / max(total, 1), (_n("Queued behind {n} run of other learners on this server…",
                                         "Queued behind {n} runs of other learners on this server…", queued)
                                      .format(n=queued) if queued else _("Starting…")), None
    name, spec, p = current
    text = _("Training {name}: step {step} of {steps}").format(
        name=name, step=p.done_steps if p is not None else 0, steps=spec.steps)
    return done / max(total, 1), text, None if p is None else ((spec, p.done_steps), lambda: live(spec, p, name))
