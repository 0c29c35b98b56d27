"""Training: Adam, the per-step measurements, the ``train`` generator and the mechanism check.

Scores measured on every step's batch (the forward pass that also gives the gradient):

* **accuracy**: the share of predictable positions (:mod:`.tasks`) whose largest logit is the right token;
* **prefix-match** of a head: the induction score of :mod:`attention.heads` (Olsson et al. 2022, "prefix
  matching"): a query's weight on the positions right after the earlier occurrences of its token, except the
  positions ``i`` and ``i - 1``, averaged over every (sequence, query) pair of the batch that has such a target.
  On the task that is the second copy's queries with their key ``i - p + 1`` (runs of ``p >= 3``; a run of 2 puts
  that key on the previous token, so it counts for no head), plus any filler token that repeats; an induction
  head scores near 1, uniform attention about ``1 / i``;
* **previous-token** score of a head: its mean weight on the key ``i - 1`` over the queries ``i = 2 .. n-1``
  (:mod:`attention.heads`: on row 1 the previous token is the first; the layer-0 head an induction head
  composes with: Elhage et al. 2021, "K-composition").

Both scores are computed for every head; the lesson reads prefix-match in layers >= 1 and the
previous-token score in layer 0, where the two-layer circuit puts them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np

from .. import heads
from ..blocked import _one_blas_thread as one_blas_thread
from .model import AttentionOnly, Config, Forward
from .tasks import TASKS, Batch, check_task, make_batch

EMERGENCE_THRESHOLD = 0.4
"""Prefix-match above this counts as an induction head having formed (the issue's and the tests' line)."""
LEARNED_ACCURACY = 0.5
"""Accuracy on the predictable positions from which the task counts as solved (the mechanism check)."""
LOSS_ON = ("predictable", "all")
COLLAPSE_FRACTION = 0.5
"""A knockout that leaves less than this share of the accuracy means the model relies on that head."""


class Adam:
    """Adam (Kingma & Ba 2015, Algorithm 1), updating a dict of arrays in place.

    Args:
        params: the arrays to update (``AttentionOnly.params``).
        lr: the step size (> 0). betas: the moment decay rates in ``[0, 1)``. eps: the denominator's guard (> 0).

    Raises:
        ValueError: ``lr``, ``betas`` or ``eps`` out of range.
    """

    def __init__(self, params: dict[str, np.ndarray], lr: float = 1e-2, betas: tuple[float, float] = (0.9, 0.999),
                 eps: float = 1e-8):
        if not (isinstance(lr, int | float) and math.isfinite(lr) and lr > 0):
            raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
        if len(betas) != 2 or not all(0 <= b < 1 for b in betas):
            raise ValueError(f"betas must be two numbers in [0, 1), got {betas!r}")
        if not (math.isfinite(eps) and eps > 0):
            raise ValueError(f"eps must be a finite number > 0, got {eps!r}")
        self.params, self.lr, self.betas, self.eps = params, float(lr), betas, float(eps)
        self.m = {k: np.zeros_like(v) for k, v in params.items()}
        self.v = {k: np.zeros_like(v) for k, v in params.items()}
        self.t = 0

    def step(self, grads: dict[str, np.ndarray]) -> None:
        """One update ``θ ← θ − lr · m̂ / (√v̂ + eps)`` of every parameter with its gradient in ``grads``."""
        self.t += 1
        b1, b2 = self.betas
        c1, c2 = 1 - b1 ** self.t, 1 - b2 ** self.t
        for name, p in self.params.items():
            g = grads[name]
            m, v = self.m[name], self.v[name]
            m *= b1
            m += (1 - b1) * g
            v *= b2
            v += (1 - b2) * (g * g)
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + self.eps)


# --- measurements ---------------------------------------------------------------------------------------------
def accuracy(logits: np.ndarray, batch: Batch) -> float:
    """Share of ``batch``'s predictable positions where ``logits [B, n, vocab]`` put the right next token first."""
    right = logits[:, :-1].argmax(axis=-1) == batch.tokens[:, 1:]  # [B, n-1]
    return float(right[batch.predictable].mean())


def prefix_match(weights: Sequence[np.ndarray], batch: Batch) -> np.ndarray:
    """``[n_layers, n_heads]`` float64: each head's induction score on the batch (:func:`attention.heads.induction`,
    pooled over every sequence and query with a target; 0 when none has one).

    Args:
        weights: per layer ``[B, n_heads, n, n]`` attention weights (``Forward.weights``).
        batch: the batch they were computed on (its ``tokens`` give the targets).
    """
    return np.stack([heads.induction(w, batch.tokens, batch=True) for w in weights])  # [L, H]


def previous_token(weights: Sequence[np.ndarray]) -> np.ndarray:
    """``[n_layers, n_heads]`` float64: each head's previous-token score (:func:`attention.heads.score`, queries
    ``2 .. n-1``, pooled over the batch)."""
    return np.stack([heads.score("previous", w, batch=True) for w in weights])  # [L, H]


@dataclass(frozen=True)
class Record:
    """What one training step measured, on its batch, before its update (so ``step`` updates had been made).

    Attributes:
        step: updates made before this measurement (``0`` = the initial weights).
        loss: the training loss (nats): the mean next-token cross-entropy over the predictable positions
            (``loss_on="predictable"``) or over every position (``"all"``); ``ln vocab`` is a uniform guess's.
        accuracy: on the predictable positions.
        prefix_match, previous_token: ``[n_layers, n_heads]`` (see the module docstring).
        score_grad: ``[n_layers]`` the norm ``‖∂loss/∂s‖`` of the gradient reaching each layer's scores ``s``
            (the softmax's input; over the batch, every head and every allowed query-key pair).
        max_weight: ``[n_layers]`` the mean over heads and queries ``i >= 1`` of the largest attention weight
            (1 = a one-hot, saturated softmax).
        score_std: ``[n_layers]`` the spread of the scores ``s`` (the softmax's input, after any ÷√d_head): the
            standard deviation of a query's scores over the keys it may see (``j <= i``), averaged over heads
            and queries ``i >= 1``. Only differences within a row reach the weights, so this is what saturates.
        saturated: ``[n_layers]`` the share of those (head, query) rows whose largest weight exceeds
            :data:`SATURATED_WEIGHT`: rows where the softmax is nearly one-hot.
        attention: ``[n_layers, n_heads, n, n]`` float32, the probe sequence's attention weights, on the
            snapshot steps only (else ``None``).
    """

    step: int
    loss: float
    accuracy: float
    prefix_match: np.ndarray
    previous_token: np.ndarray
    score_grad: np.ndarray
    max_weight: np.ndarray
    score_std: np.ndarray
    saturated: np.ndarray
    attention: np.ndarray | None = None


SATURATED_WEIGHT = 0.99
"""A row of attention weights whose largest weight exceeds this counts as saturated (:attr:`Record.saturated`)."""


def row_score_std(scores: np.ndarray) -> float:
    """The mean over heads and queries ``i >= 1`` of the standard deviation of a query's scores over the keys
    ``j <= i`` (causal): the scores' spread within a row, the part the softmax turns into unequal weights.

    Args:
        scores: ``[B, n_heads, n, n]`` one layer's softmax input (``Forward.scores``), ``n >= 2``.
    """
    n = scores.shape[-1]
    causal = np.tri(n, dtype=bool)[1:]  # [n-1, n]: rows i >= 1, keys j <= i
    count = causal.sum(axis=-1)  # [n-1]: i + 1 keys
    s = scores[..., 1:, :] * causal  # [B, H, n-1, n]
    dev = (s - (s.sum(axis=-1) / count)[..., None]) * causal  # each score minus its row's mean, 0 off the mask
    return float(np.sqrt(np.einsum("...j,...j->...", dev, dev) / count).mean())


def _max_weight(weights: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``(mean top weight [L], share of saturated rows [L])`` over heads and queries ``i >= 1``."""
    top = [w[:, :, 1:].max(axis=-1) for w in weights]  # per layer [B, H, n-1]
    return np.array([float(t.mean()) for t in top]), np.array([float((t > SATURATED_WEIGHT).mean()) for t in top])


def check_train_args(cfg: Config, steps: int, batch: int, lr: float, task: str, seed: int,
                     snapshot_steps: Iterable[int]) -> tuple[int, ...]:
    """Raise ``ValueError`` naming the first bad argument of :func:`train`; returns the sorted snapshot steps."""
    if not isinstance(cfg, Config):
        raise ValueError(f"cfg must be a training.Config, got {type(cfg).__name__}")
    for name, value, lo in (("steps", steps, 0), ("batch", batch, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < lo:
            raise ValueError(f"{name} must be a whole number >= {lo}, got {value!r}")
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    check_task(task, cfg.vocab, cfg.n_ctx)
    snaps = []
    for s in snapshot_steps:
        if isinstance(s, bool) or not isinstance(s, int | np.integer) or not 0 <= s <= steps:
            raise ValueError(f"snapshot_steps must hold whole numbers from 0 to steps = {steps}, got {s!r}")
        snaps.append(int(s))
    return tuple(sorted(set(snaps)))


def probe_batch(cfg: Config, task: str, seed: int) -> Batch:
    """The one sequence whose attention the snapshots show: drawn from ``default_rng([seed, 1])``, a stream of its
    own (the training batches come from ``default_rng(seed)``), so it is the same at every step."""
    return make_batch(task, 1, cfg.n_ctx, cfg.vocab, np.random.default_rng([seed, 1]))


def measure(fw: Forward, score_grads: Sequence[np.ndarray], batch: Batch, step: int,
            loss: float) -> Record:
    """The :class:`Record` of one step from its forward pass, its score gradients and its batch."""
    top, saturated = _max_weight(fw.weights)
    return Record(step=step, loss=loss, accuracy=accuracy(fw.logits, batch),
                  prefix_match=prefix_match(fw.weights, batch), previous_token=previous_token(fw.weights),
                  score_grad=np.array([float(np.sqrt(np.sum(np.square(ds, dtype=np.float64)))) for ds in score_grads]),
                  max_weight=top, score_std=np.array([row_score_std(s) for s in fw.scores]),
                  saturated=saturated)


def train(cfg: Config, steps: int = 600, batch: int = 32, lr: float = 1e-2, task: str = "repeat", seed: int = 0,
          snapshot_steps: Iterable[int] = (), model: AttentionOnly | None = None,
          loss_on: str = "predictable") -> Iterator[Record]:
    """Train an :class:`AttentionOnly` model on ``task`` with Adam, yielding a :class:`Record` per step.

    Yields ``steps + 1`` records: record ``k`` is measured on batch ``k`` after ``k`` updates (the
    last one, ``k = steps``, is not followed by an update). A caller can draw while it trains; the
    same arguments give the same records, bit for bit.

    Args:
        cfg: the model's sizes (its ``seed`` draws the initial weights).
        steps: updates (>= 0). batch: sequences per step (>= 1). lr: Adam's step size (> 0).
        task: one of :data:`~attention.training.tasks.TASKS`; sequences are ``cfg.n_ctx`` long.
        seed: draws the training batches (``default_rng(seed)``) and the probe sequence (:func:`probe_batch`).
        snapshot_steps: the steps whose record carries the probe's attention weights.
        model: train this model in place (its ``cfg`` must be ``cfg``); by default a new one. The generator's
            return value (``StopIteration.value``) is the trained model.
        loss_on: ``"predictable"`` (the default): the loss counts the positions whose next token the earlier
            copy gives (the rest are random: no model can predict them, and their gradient is noise that
            lengthens the plateau several times over, measured); ``"all"``: every position.

    Raises:
        ValueError: a bad argument (:func:`check_train_args`), on the first ``next``.

    Source: the issue "Watch attention learn" (#28); Olsson et al. (2022), Elhage et al. (2021).
    """
    snaps = set(check_train_args(cfg, steps, batch, lr, task, seed, snapshot_steps))
    if loss_on not in LOSS_ON:
        raise ValueError(f"loss_on must be one of {LOSS_ON}, got {loss_on!r}")
    if model is None:
        model = AttentionOnly(cfg)
    elif model.cfg != cfg:
        raise ValueError(f"model was built for {model.cfg}, not for cfg = {cfg}")
    rng = np.random.default_rng(seed)
    probe = probe_batch(cfg, task, seed)
    adam = Adam(model.params, lr)
    for step in range(steps + 1):
        with one_blas_thread():  # small matrices: a multi-threaded BLAS only waits for its threads (BENCHMARKS.md)
            b = make_batch(task, batch, cfg.n_ctx, cfg.vocab, rng)
            out = model.backward(b.tokens, loss_mask=b.predictable if loss_on == "predictable" else None)
            rec = measure(out.forward, out.score_grads, b, step, out.loss)
            if step in snaps:
                rec = replace(rec, attention=model.attention(probe.tokens[0]).astype(np.float32))
        yield rec
        if step < steps:
            adam.step(out.grads)
    return model


def emergence_step(records: Sequence[Record], threshold: float = EMERGENCE_THRESHOLD, *,
                   min_layer: int = 1) -> int | None:
    """The first step whose best prefix-match among the heads of layers ``>= min_layer`` exceeds ``threshold``,
    or ``None`` if none does (a one-layer model has no layer 1: pass ``min_layer=0`` to read its heads)."""
    for rec in records:
        pm = rec.prefix_match[min_layer:]
        if pm.size and float(pm.max()) > threshold:
            return rec.step
    return None


# --- the mechanism check --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Mechanism:
    """What a trained model does, measured on a fresh batch, and what knocking out heads does to it.

    Attributes:
        task: the batch's task.
        accuracy: on its predictable positions, with every head.
        prefix_match, previous_token: ``[n_layers, n_heads]`` on that batch.
        knockout_accuracy: ``[n_layers, n_heads]``, the accuracy with that one head's output set to zero.
        layer_knockout_accuracy: ``[n_layers]``, the accuracy with every head of that layer set to zero.
        induction_head: the head of layers >= 1 with the largest prefix-match (``None`` with one layer).
        previous_head: the head of layer 0 with the largest previous-token score.
        random_period_accuracy: the accuracy on a batch of the random-period task (``"repeat"``; for a model
            trained on it, its own batch): a rule that reads positions instead of tokens fails there.
        random_period_prefix_match: ``[n_layers, n_heads]`` on that batch.
        label: ``"not learned"`` (accuracy below :data:`LEARNED_ACCURACY`); ``"shortcut"`` (learned, but on
            random periods the accuracy falls below :data:`COLLAPSE_FRACTION` of it: the model attends to a
            position, not to a token); ``"induction"`` (learned, works for any period, and knocking out layer 0,
            where the previous-token heads are, takes the accuracy below that fraction: two layers composed);
            ``"other"`` (learned and works for any period, but not through layer 0: never seen here).
    """

    task: str
    accuracy: float
    prefix_match: np.ndarray
    previous_token: np.ndarray
    knockout_accuracy: np.ndarray
    layer_knockout_accuracy: np.ndarray
    induction_head: tuple[int, int] | None
    previous_head: tuple[int, int]
    random_period_accuracy: float
    random_period_prefix_match: np.ndarray
    label: str


def knockout_accuracy(model: AttentionOnly, batch: Batch, heads: Iterable[tuple[int, int]]) -> float:
    """The accuracy on ``batch`` with the output of every head in ``heads`` (``(layer, head)`` pairs) set to zero
    (:data:`MEASURE_CHUNK` sequences per forward pass)."""
    return _measure(model, batch, list(heads), weights=False)[0]


MEASURE_CHUNK = 32
"""Sequences per forward pass in :func:`mechanism` and :func:`knockout_accuracy`. A forward pass keeps every
intermediate for the backward pass: over the whole 256-sequence batch at n = 64 with 3 layers of 4 heads of 64 that
is about 500 MB, over 32 sequences about 60 MB. Every sequence is computed on its own either way, so the numbers
are the same."""


def _measure(model: AttentionOnly, batch: Batch, knockout: list[tuple[int, int]] = (), *,
             weights: bool = True) -> tuple[float, np.ndarray | None, np.ndarray | None]:
    """``(accuracy, prefix_match [L, H], previous_token [L, H])`` of ``model`` on ``batch`` (the last two ``None``
    without ``weights``), :data:`MEASURE_CHUNK` sequences per forward pass; each equals :func:`accuracy`,
    :func:`prefix_match`, :func:`previous_token` of one pass over the whole batch (the same values, averaged in
    the same order)."""
    right, matched, previous = [], [], []
    for start in range(0, len(batch.tokens), MEASURE_CHUNK):
        part = Batch(*(a[start:start + MEASURE_CHUNK] for a in (batch.tokens, batch.period, batch.predictable,
                                                                batch.source)))
        with one_blas_thread():
            fw = model.forward(part.tokens, knockout=list(knockout))
        right.append((fw.logits[:, :-1].argmax(axis=-1) == part.tokens[:, 1:])[part.predictable])  # as accuracy
        if weights:  # each layer's per-row values and where they are defined, pooled below as heads.score pools
            matched.append([heads.per_row("induction", w, part.tokens) for w in fw.weights])
            previous.append([heads.per_row("previous", w) for w in fw.weights])
        del fw
    acc = float(np.concatenate(right).mean())
    if not weights:
        return acc, None, None

    def pooled(parts: list, layer: int) -> np.ndarray:  # [H]: the mean over defined (sequence, row), as heads.score
        first = heads.FIRST_ROW
        values = np.concatenate([p[layer][0][..., first:] for p in parts])  # [B, H, n - 2]
        defined = np.concatenate([np.broadcast_to(p[layer][1], p[layer][0].shape)[..., first:] for p in parts])
        count = defined.sum(axis=(0, -1))
        total = np.where(defined, values, 0.0).sum(axis=(0, -1))
        return np.divide(total, count, out=np.zeros_like(total), where=count > 0)

    layers = range(model.cfg.n_layers)
    pm = np.stack([pooled(matched, layer) for layer in layers])  # [L, H]
    prev = np.stack([pooled(previous, layer) for layer in layers])  # [L, H]
    return acc, pm, prev


def mechanism_batch(cfg: Config, task: str, seed: int, batch: int = 256) -> Batch:
    """The fresh batch :func:`mechanism` measures on: ``default_rng([seed, 2])`` (``[seed, 3]`` for the
    random-period batch of a model trained on another task), streams the training never draws from."""
    return make_batch(task, batch, cfg.n_ctx, cfg.vocab, np.random.default_rng([seed, 2 if task == "repeat" else 3]))


def mechanism(model: AttentionOnly, task: str, seed: int = 0, batch: int = 256) -> Mechanism:
    """Measure a trained ``model`` on a fresh batch of ``task`` (:func:`mechanism_batch`) and knock out each head
    and each layer (zero-ablation: Olsson et al. 2022, section "Ablations").

    Raises:
        ValueError: an unknown task or one that does not fit the model (:func:`~attention.training.tasks.check_task`).
    """
    cfg = model.cfg
    check_task(task, cfg.vocab, cfg.n_ctx)
    L, H = cfg.n_layers, cfg.n_heads
    b = mechanism_batch(cfg, task, seed, batch)
    acc, pm, prev = _measure(model, b)
    knock = np.array([[knockout_accuracy(model, b, [(layer, head)]) for head in range(H)] for layer in range(L)])
    layer_knock = np.array([knockout_accuracy(model, b, [(layer, head) for head in range(H)]) for layer in range(L)])
    induction = None
    if L > 1:
        flat = int(np.argmax(pm[1:]))
        induction = (1 + flat // H, flat % H)
    previous = (0, int(np.argmax(prev[0])))
    if task == "repeat":
        rp_acc, rp_pm = acc, pm
    else:
        rp_acc, rp_pm, _ = _measure(model, mechanism_batch(cfg, "repeat", seed, batch))
    if acc < LEARNED_ACCURACY:
        label = "not learned"
    elif rp_acc < COLLAPSE_FRACTION * acc:
        label = "shortcut"
    elif L > 1 and layer_knock[0] < COLLAPSE_FRACTION * acc:
        label = "induction"
    else:
        label = "other"
    return Mechanism(task, acc, pm, prev, knock, layer_knock, induction, previous, rp_acc, rp_pm, label)
