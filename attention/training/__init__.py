"""Train a tiny attention-only transformer in NumPy and watch an induction head form (issue #28).

``model``: :class:`Config`, :class:`AttentionOnly` (forward pass and hand-written backward pass);
``tasks``: the repeated-random-run tasks; ``loop``: Adam, the per-step measurements, :func:`train`
(a generator of :class:`Record`) and the mechanism check (:func:`mechanism`, head knockout).

    cfg = training.Config(n_layers=2, n_heads=2, d_model=32, d_head=16, vocab=64, n_ctx=32, scale=True, seed=0)
    m = training.AttentionOnly(cfg)
    loss, grads = m.loss_and_grads(tokens)           # grads: the keys and shapes of m.params
    for rec in training.train(cfg, steps=600, batch=32, lr=1e-2, task="repeat", seed=0, model=m):
        ...                                          # rec.loss, rec.accuracy, rec.prefix_match [L, H], ...
    training.mechanism(m, "repeat").label            # "induction", "shortcut" or "not learned"
"""

from .loop import (
    COLLAPSE_FRACTION,
    EMERGENCE_THRESHOLD,
    LEARNED_ACCURACY,
    LOSS_ON,
    SATURATED_WEIGHT,
    Adam,
    Mechanism,
    Record,
    accuracy,
    emergence_step,
    knockout_accuracy,
    mechanism,
    mechanism_batch,
    prefix_match,
    previous_token,
    probe_batch,
    train,
)
from .model import DTYPES, INITS, POSITIONS, AttentionOnly, Config, Forward, init_params, param_shapes
from .tasks import P_MIN, TASKS, Batch, make_batch

__all__ = [
    "Config", "AttentionOnly", "Forward", "init_params", "param_shapes", "POSITIONS", "DTYPES", "INITS",
    "TASKS", "P_MIN", "Batch", "make_batch",
    "Adam", "Record", "Mechanism", "train", "mechanism", "emergence_step", "accuracy",
    "prefix_match", "previous_token", "probe_batch", "knockout_accuracy", "mechanism_batch",
    "EMERGENCE_THRESHOLD", "LEARNED_ACCURACY", "LOSS_ON", "COLLAPSE_FRACTION", "SATURATED_WEIGHT",
]
