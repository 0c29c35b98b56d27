"""What made the model say it: read the stream out layer by layer, split a logit into its parts, knock heads
out, and move activations from one prompt into another.

Every function takes the loaded :class:`~attention.llama.model.LlamaModel` and token ids, and can reuse one
clean run ``run = model.forward(ids, keep_activations=True)`` (the page caches it) instead of running its own.
The names and semantics follow TransformerLens (``ActivationCache.accumulated_resid`` / ``logit_attrs`` /
``decompose_resid``, ``patching.get_act_patch_resid_pre`` / ``get_act_patch_attn_head_out_all_pos``):

* :func:`logit_lens`: the final RMSNorm **recomputed** on each block's input stream, then the unembedding
  (TransformerLens' ``accumulated_resid(apply_ln=True)``, ``recompute_ln``): what the model would predict if it
  stopped there (nostalgebraist 2020, "interpreting GPT: the logit lens").
* :func:`logit_attribution`: direct logit attribution. The stream before the final RMSNorm is a sum of parts
  (the token embedding, every head's ``o_h @ W_o[h]``, every MLP's output). The RMSNorm divides the stream by
  its root mean square ``s = sqrt(mean(x²) + eps)`` (one number per position) and multiplies by the gain ``w``.
  With ``s`` **frozen** at the value it has in this run, the norm is linear, so the logit of token ``t`` is
  exactly ``sum over parts of (part / s) · (w ⊙ E[t])`` (TransformerLens' ``apply_ln_to_stack`` with the
  cached scale). A part's number is what it adds to the logit *through the direct path, with the divisor
  held fixed*: not what removing it would do (removing it changes ``s`` and every later layer; that is a
  knockout). GPT-2's final LayerNorm also subtracts the mean (linear too: the direction is centred) and adds a
  bias; its parts are the same plus one more, ``Attribution.bias`` (every ``W_o`` bias and the norm's bias), and
  its embedding part holds the position embedding. Gemma 3 normalises what each attention layer writes before it
  joins the stream: that layer's divisor is frozen too, so its heads' shares still add up.
* :func:`knock_out` / :func:`knockout_sweep`: heads' outputs (``weights · V`` before ``W_o``, TransformerLens'
  ``hook_z``) set to 0 or to their mean over the positions, recomputing only the blocks from the first changed
  layer on; the sweep knocks out each of the 270 heads alone, the 9 heads of a layer in one stacked pass.
* :func:`patch_residual_sweep` / :func:`patch_head_sweep`: activation patching (Meng et al. 2022, "Locating
  and Editing Factual Associations in GPT"; Heimersheim & Nanda 2024, "How to use and interpret activation
  patching"): one activation of the corrupted run replaced by the clean run's, the metric the logit
  difference ``logit[answer] - logit[foil]`` at the last position.

Costs (``bench/bench_interventions.py``, ``BENCHMARKS.md``): a knockout from the clean run's stream recomputes
the blocks from its first layer on; the sweep at ``n`` tokens does ``sum over layers L of 9 (n_layers - L)``
block-rows of ``n`` tokens, about 140 forward passes' multiply-adds for the blocks alone, stacked 9 at a time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .blocks import row_blocks
from .model import ForwardOutput, LlamaModel

__all__ = [
    "Attribution", "KnockoutSweep", "LensTop", "knock_out", "knockout_layer", "knockout_sweep", "log_softmax",
    "logit_attribution", "logit_difference", "logit_lens", "logit_lens_top", "patch_head_layer", "patch_head_sweep",
    "patch_residual_block", "patch_residual_sweep", "top_k_log_softmax",
]

Progress = Callable[[int, int], None]
"""``progress(done, total)``: called after each stacked pass of a sweep (``done`` of ``total`` passes)."""


# --- checks ------------------------------------------------------------------------------------------------


def _integer(value, name: str, lo: int, hi: int) -> int:
    """``value`` as an int in ``lo .. hi`` (inclusive), else ``ValueError`` naming ``name`` and the range."""
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or not lo <= value <= hi:
        raise ValueError(f"{name} must be an integer in {lo}..{hi}, got {value!r}")
    return int(value)


def _heads(value, name: str, n_layers: int, n_heads: int) -> list[tuple[int, int]]:
    """``value`` as a list of ``(layer, head)`` pairs inside the model, else ``ValueError`` naming ``name``."""
    message = (f"{name} must be a list of (layer, head) pairs with layer in 0..{n_layers - 1} and head in "
               f"0..{n_heads - 1}, got {value!r}")
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        raise ValueError(message) from None
    for p in pairs:
        if len(p) != 2 or any(isinstance(x, bool) or not isinstance(x, int | np.integer) for x in p) \
                or not (0 <= p[0] < n_layers and 0 <= p[1] < n_heads):
            raise ValueError(message)
    return [(int(a), int(b)) for a, b in pairs]


def _plan(model: LlamaModel, n: int, **fields):
    """A run's plan for ``n`` tokens without a cache (``model._plan``'s), with ``fields`` set: a stacked batch, the
    stream to start from, the last position's logits only (what the public ``forward`` does not take)."""
    return dataclasses.replace(model._plan(n, None), **fields)


def _clean_run(model: LlamaModel, ids: np.ndarray, run: ForwardOutput | None) -> ForwardOutput:
    """``run`` checked to be ``model.forward(ids, keep_activations=True)`` (a whole pass), or that run made now."""
    if run is None:  # forward(ids, keep_activations=True) without attention weights, last position's logits only
        plan = model._plan(len(ids), None, keep_activations=True)
        plan.last_logits_only = True
        run = model._run(ids, None, False, plan)
        # The last row's logits as forward() computes them, bit for bit: a product of at least two rows (one row
        # would go to OpenBLAS's matrix-vector kernel, which sums in another order; see weights._rows_product).
        rows = run.residuals[-1, -2:] if len(ids) >= 2 else run.residuals[-1, -1:]
        logits = model._output.logits(model._final_norm(rows))[-1:]
        return dataclasses.replace(run, logits=logits)
    c = model.config
    if not isinstance(run, ForwardOutput) or run.residuals is None or run.first_layer != 0:
        raise ValueError("run must be model.forward(ids, keep_activations=True) (a whole pass with its activations), "
                         f"got {type(run).__name__}" + ("" if not isinstance(run, ForwardOutput) else
                                                        " without residuals or from a start_layer"))
    if run.residuals.shape != (c.n_layers + 1, len(ids), c.d_model):
        raise ValueError(f"run.residuals must have shape [n_layers + 1, n, d_model] = [{c.n_layers + 1}, {len(ids)}, "
                         f"{c.d_model}] for these ids, got {list(run.residuals.shape)}")
    if not np.array_equal(run.residuals[0], model._embed(ids, np.arange(len(ids)))):
        raise ValueError("run was made from other token ids than ids (its first stream is not their embedding)")
    return run


def _token(model: LlamaModel, token_id, name: str = "token_id") -> int:
    return _integer(token_id, name, 0, model.config.vocab_size - 1)


def _progress(progress) -> Progress | None:
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a function progress(done, total) or None, got {type(progress).__name__}")
    return progress


def _stacked(model: LlamaModel, ids: np.ndarray, plan) -> np.ndarray:
    """The last position's logits of every copy of a stacked run: float32 ``[plan.batch, vocab]``."""
    out = model._run(ids, None, False, plan)
    return (out.logits if isinstance(out, ForwardOutput) else out[:, 0]).reshape(plan.batch, -1)


def log_softmax(logits) -> np.ndarray:
    """``log softmax`` over the last axis in float64: ``[..., vocab] -> [..., vocab]`` (natural log, nats)."""
    z = np.asarray(logits, dtype=np.float64)
    top = z.max(axis=-1, keepdims=True)
    return z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))


def logit_difference(logits, answer: int, foil: int) -> float:
    """``logits[..., answer] - logits[..., foil]`` of the last row, as a float (the patching metric)."""
    row = np.asarray(logits)
    row = row.reshape(-1, row.shape[-1])[-1]
    return float(row[answer]) - float(row[foil])


# --- reading the stream out ------------------------------------------------------------------------------


def logit_lens(model: LlamaModel, ids, *, run: ForwardOutput | None = None) -> np.ndarray:
    """The last position's logits read out of every block's input stream: float32 ``[n_layers + 1, vocab]``.

    Row ``l`` is ``rms_norm(residuals[l][-1], output_norm) @ E.T`` (the architecture's final norm recomputed on that
    stream: RMSNorm, or gpt2's LayerNorm with its bias; then the unembedding); row ``n_layers`` is the stream
    after the last block, so it equals ``model.forward(ids).logits[-1]`` (the same operations; bit for bit here).
    Row 0 reads the token embedding itself (gpt2: with its position embedding).

    Args:
        ids: token ids ``[n]``. run: ``model.forward(ids, keep_activations=True)`` to reuse (else one is run).

    Raises:
        ValueError: bad ``ids`` (as :meth:`LlamaModel.forward`), or a ``run`` of other ids.

    Source: nostalgebraist (2020), "interpreting GPT: the logit lens"; TransformerLens
    ``ActivationCache.accumulated_resid(apply_ln=True)``.
    """
    ids = model._check_ids(ids)
    run = _clean_run(model, ids, run)
    streams = run.residuals[:, -1]  # [n_layers + 1, d_model]
    return model._output.logits(model._final_norm(streams))  # [n_layers + 1, vocab]


@dataclass(frozen=True)
class LensTop:
    """The ``k`` most likely tokens read out of every block's input stream at every position.

    Attributes:
        ids: int64 ``[n_layers + 1, n, k]``, most likely first. probabilities: float32 ``[n_layers + 1, n, k]``
            (softmax of that stream's logit-lens logits).
    """

    ids: np.ndarray
    probabilities: np.ndarray


def logit_lens_top(model: LlamaModel, ids, k: int = 1, *, run: ForwardOutput | None = None) -> LensTop:
    """:func:`logit_lens` at every position, keeping only the ``k`` most likely tokens of each (``[L + 1, n, k]``).

    Costs ``(n_layers + 1) * n`` rows of the ``d_model x vocab`` unembedding (done one block at a time: ``n`` rows
    of float32 logits in memory at once), about 31 x the logits of one forward pass.

    Raises:
        ValueError: bad ``ids``, ``k`` outside ``1 .. 20``, or a ``run`` of other ids.
    """
    ids = model._check_ids(ids)
    k = _integer(k, "k", 1, 20)
    run = _clean_run(model, ids, run)
    c = model.config
    n = len(ids)
    top_ids = np.empty((c.n_layers + 1, n, k), np.int64)
    top_p = np.empty((c.n_layers + 1, n, k), np.float32)
    for block in range(c.n_layers + 1):
        logits = model._output.logits(model._final_norm(run.residuals[block]))  # [n, vocab]
        top_ids[block], top_p[block] = top_k_log_softmax(logits, k)
    return LensTop(top_ids, top_p)


def top_k_log_softmax(logits, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most likely tokens of each row of ``logits`` ``[n, vocab]``: ``(ids int64 [n, k], probabilities
    float32 [n, k])``, most likely first (ties: the lower id first), from the float64 :func:`log_softmax`.

    Computed :func:`row_blocks` rows at a time, so no float64 ``[n, vocab]`` is held: the same numbers as on the
    whole array at once (every step works row by row), a few MB instead of about ``5 n vocab 8`` bytes.
    """
    logits = np.asarray(logits)
    n = logits.shape[0]
    top_ids = np.empty((n, k), np.int64)
    top_p = np.empty((n, k), np.float32)
    for rows in row_blocks(n, logits.shape[-1]):
        logp = log_softmax(logits[rows])  # [rows, vocab] float64
        part = np.argpartition(-logp, k - 1, axis=-1)[:, :k]  # [rows, k], unordered
        order = np.argsort(-np.take_along_axis(logp, part, -1), axis=-1, kind="stable")
        top_ids[rows] = np.take_along_axis(part, order, -1)
        top_p[rows] = np.exp(np.take_along_axis(logp, top_ids[rows], -1))
    return top_ids, top_p


# --- direct logit attribution ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribution:
    """The last position's logit for ``token_id`` split into the parts that wrote into the stream.

    ``embedding + heads.sum() + mlps.sum() + bias == logit`` (to float32 rounding of the stream: the parts are exact
    float64 products of the run's own activations, the stream itself was summed in float32).

    Attributes:
        token_id: the token whose logit is split. logit: ``forward(ids).logits[-1, token_id]``.
        embedding: the token embedding's share (``residuals[0]``; gpt2: with its position embedding).
        heads: float64 ``[n_layers, n_heads]``, head ``h`` of layer ``l``: ``(o_h @ W_o[h rows]) / s · u``.
        mlps: float64 ``[n_layers]``, each MLP's output ``/ s · u``.
        scale: ``s = sqrt(mean(x²) + eps)`` of the last position's final stream, held frozen (the final RMSNorm
            divides by it); ``u = output_norm ⊙ E[token_id]`` is the token's direction in the stream. gpt2's
            LayerNorm: ``s = sqrt(var(x) + eps)`` and ``u`` centred (``u - mean(u)``: the norm subtracts the mean).
        bias: the parts no head or MLP owns: every layer's ``b_o / s · u`` plus the final norm's
            ``bias · E[token_id]`` (gpt2); 0.0 for the architectures without biases there.
        attention_scales: gemma3 (norms after the sub-layers): float64 ``[n_layers]``, each layer's post-attention
            RMSNorm divisor ``s_l = sqrt(mean(a_l²) + eps)`` of the last position's attention output ``a_l``, held
            frozen like ``s`` (head ``h``'s share is then ``(o_h @ W_o[h rows]) / s_l ⊙ w_l / s · u``, ``w_l`` the
            norm's gain); ``None`` for the architectures without a norm there.
    """

    token_id: int
    logit: float
    embedding: float
    heads: np.ndarray
    mlps: np.ndarray
    scale: float
    bias: float = 0.0
    attention_scales: np.ndarray | None = None

    @property
    def total(self) -> float:
        """The parts summed (float64): the logit, exactly up to the stream's float32 rounding."""
        return float(self.embedding + self.heads.sum() + self.mlps.sum() + self.bias)


def logit_attribution(model: LlamaModel, ids, token_id: int, *, run: ForwardOutput | None = None) -> Attribution:
    """Direct logit attribution of the last position's logit for ``token_id`` (see :class:`Attribution`).

    The final RMSNorm's divisor ``s`` is frozen at its actual value (the module docstring says what that means):
    then the logit is linear in the stream, and the parts (embedding, each head through its ``d_head`` rows of
    ``W_o``, each MLP) add up to it exactly. With norms after the sub-layers (gemma3), what an attention layer adds is
    ``rms_norm(sum of its heads' o_h @ W_o[h])``: each layer's divisor is frozen too
    (:attr:`Attribution.attention_scales`), so the heads' shares stay linear and still add up (the MLPs' outputs are
    taken after their norm, as they join the stream).

    Raises:
        ValueError: bad ``ids``, ``token_id`` outside ``0 .. vocab_size - 1``, or a ``run`` of other ids.

    Source: Elhage et al. (2021), "A Mathematical Framework for Transformer Circuits" (the residual stream as a
    sum of the components' outputs); TransformerLens ``ActivationCache.logit_attrs`` / ``decompose_resid``.
    """
    c = model.config
    ids = model._check_ids(ids)
    token_id = _token(model, token_id)
    run = _clean_run(model, ids, run)
    final = run.residuals[-1, -1].astype(np.float64)  # [d_model]
    unembed = model._output.lookup(np.array([token_id]))[0].astype(np.float64)  # E[t], [d_model]
    direction = model._output_norm.astype(np.float64) * unembed  # [d_model]
    bias = 0.0
    if c.norm == "layer":  # (x - mean x) . v = x . (v - mean v): the centring moves onto the direction
        final = final - final.mean()
        direction = direction - direction.mean()
        bias = float(model._output_norm_bias.astype(np.float64) @ unembed)
    scale = float(np.sqrt(np.mean(final ** 2) + c.rms_eps))
    direction /= scale  # [d_model]
    heads = np.empty((c.n_layers, c.n_heads))
    attention_scales = np.empty(c.n_layers) if c.post_norms else None
    for layer in range(c.n_layers):
        block = model._layers[layer]
        W_o = block.o.widen().astype(np.float64)  # [n_heads d_head, d_model]
        o = run.head_outputs[layer, :, -1].astype(np.float64)  # [n_heads, d_head]
        toward = direction
        if block.post_attn_norm is not None:  # gemma3: the layer's output is divided by its own frozen RMS
            a = o.reshape(-1) @ W_o  # [d_model], what the heads wrote together before the norm
            attention_scales[layer] = np.sqrt(np.mean(a ** 2) + c.rms_eps)
            toward = block.post_attn_norm.astype(np.float64) * direction / attention_scales[layer]
        per_head = (W_o @ toward).reshape(c.n_heads, c.d_head)  # [n_heads, d_head]
        heads[layer] = (o * per_head).sum(-1)
    mlps = run.mlp_outputs[:, -1].astype(np.float64) @ direction  # [n_layers]
    embedding = float(run.residuals[0, -1].astype(np.float64) @ direction)
    bias += sum(float(layer.o_bias.astype(np.float64) @ direction) for layer in model._layers
                if layer.o_bias is not None)
    return Attribution(token_id, float(run.logits[-1, token_id]), embedding, heads, mlps, scale, bias,
                       attention_scales)


# --- knockouts --------------------------------------------------------------------------------------------


def knock_out(model: LlamaModel, ids, heads, *, ablation: str = "zero", run: ForwardOutput | None = None
              ) -> np.ndarray:
    """The last position's logits with the query heads ``heads`` knocked out: float32 ``[vocab]``.

    The same numbers as ``model.forward(ids, ablate=heads, ablation=ablation).logits[-1]``, computed from the
    clean run's stream entering the first knocked-out layer (the blocks before it are unchanged), without
    attention weights and with the logits of the last position only.

    Args:
        heads: ``[(layer, head), ...]`` (empty: the clean logits). ablation: ``"zero"`` or ``"mean"`` (each
            head's output replaced by its mean over this prompt's positions).
        run: ``model.forward(ids, keep_activations=True)`` to start from (else one is run).

    Raises:
        ValueError: bad ``ids``, a layer or head out of range, an unknown ablation, a ``run`` of other ids.
    """
    ids = model._check_ids(ids)
    c = model.config
    heads = _heads(heads, "heads", c.n_layers, c.n_heads)
    model._plan(len(ids), None, ablate=heads, ablation=ablation)  # the same checks as forward()
    run = _clean_run(model, ids, run)
    if not heads:
        return run.logits[-1]
    first = min(layer for layer, _ in heads)
    mask = np.zeros((1, c.n_layers, c.n_heads), bool)
    for layer, head in heads:
        mask[0, layer, head] = True
    plan = _plan(model, len(ids), ablate=mask, ablation=ablation, start_layer=first,
                 residual=run.residuals[first][None], last_logits_only=True)
    return _stacked(model, ids, plan)[0]


@dataclass(frozen=True)
class KnockoutSweep:
    """Every head knocked out alone: the last position's log-probability of ``token_id`` after each knockout.

    Attributes:
        token_id: the token followed (usually the clean prediction). ablation: ``"zero"`` or ``"mean"``.
        clean_log_prob: its log-probability (nats) without any knockout.
        log_probs: float64 ``[n_layers, n_heads]``, with head ``(l, h)`` alone knocked out.
        top_ids: int64 ``[n_layers, n_heads]``, the most likely token after each knockout.
    """

    token_id: int
    ablation: str
    clean_log_prob: float
    log_probs: np.ndarray
    top_ids: np.ndarray

    @property
    def effect(self) -> np.ndarray:
        """``log_probs - clean_log_prob`` ``[n_layers, n_heads]``: negative = the head helped this token."""
        return self.log_probs - self.clean_log_prob


def knockout_layer(model: LlamaModel, ids, token_id: int, layer: int, *, ablation: str = "zero",
                   run: ForwardOutput | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each head of one ``layer`` knocked out alone, in one stacked pass: ``(log_probs [n_heads], top_ids [n_heads])``.

    The ``n_heads`` copies of the clean stream entering ``layer``, copy ``b`` with head ``b`` knocked out, run
    through blocks ``layer .. n_layers - 1`` together, the logits of the last position only; ``log_probs[b]`` is
    ``token_id``'s log-probability (nats) and ``top_ids[b]`` the most likely token after knocking out head ``b``.
    Each equals ``knock_out(model, ids, [(layer, b)])`` to float32 rounding. (One row of :func:`knockout_sweep`,
    for a caller that caches or reports layer by layer.)

    Raises:
        ValueError: bad ``ids``, ``token_id`` or ``layer`` out of range, an unknown ablation, a ``run`` of other ids.
    """
    ids = model._check_ids(ids)
    token_id = _token(model, token_id)
    c = model.config
    layer = _integer(layer, "layer", 0, c.n_layers - 1)
    model._plan(len(ids), None, ablation=ablation)
    run = _clean_run(model, ids, run)
    rows = np.arange(c.n_heads)
    mask = np.zeros((c.n_heads, c.n_layers, c.n_heads), bool)
    mask[rows, layer, rows] = True  # copy b knocks out head b of this layer
    plan = _plan(model, len(ids), batch=c.n_heads, ablate=mask, ablation=ablation, start_layer=layer,
                 residual=run.residuals[layer][None], last_logits_only=True)
    logits = _stacked(model, ids, plan)  # [n_heads, vocab]
    return log_softmax(logits)[:, token_id], logits.argmax(-1)


def knockout_sweep(model: LlamaModel, ids, token_id: int, *, ablation: str = "zero", run: ForwardOutput | None = None,
                   progress: Progress | None = None) -> KnockoutSweep:
    """Knock out each of the ``n_layers x n_heads`` query heads alone and read ``token_id``'s log-probability.

    One stacked pass per layer (:func:`knockout_layer`): the ``n_heads`` copies of the clean stream entering
    layer ``L``, copy ``b`` with head ``b`` of layer ``L`` knocked out, run through blocks ``L .. n_layers - 1``
    together, the logits of the last position only. Each row equals ``knock_out(model, ids, [(L, b)])`` (to
    float32 rounding).

    Args:
        token_id: the token to follow. ablation: ``"zero"`` or ``"mean"``.
        run: the clean ``model.forward(ids, keep_activations=True)`` (else one is run).
        progress: ``progress(layers done, n_layers)``, called after each layer's pass (for a progress bar).

    Raises:
        ValueError: bad ``ids``, ``token_id`` out of range, an unknown ablation, a ``run`` of other ids, a
            ``progress`` that is not callable.
    """
    ids = model._check_ids(ids)
    token_id = _token(model, token_id)
    c = model.config
    model._plan(len(ids), None, ablation=ablation)
    progress = _progress(progress)
    run = _clean_run(model, ids, run)
    clean = log_softmax(knock_out(model, ids, [], run=run))[token_id]
    log_probs = np.empty((c.n_layers, c.n_heads))
    top_ids = np.empty((c.n_layers, c.n_heads), np.int64)
    for layer in range(c.n_layers):
        log_probs[layer], top_ids[layer] = knockout_layer(model, ids, token_id, layer, ablation=ablation, run=run)
        if progress is not None:
            progress(layer + 1, c.n_layers)
    return KnockoutSweep(token_id, ablation, float(clean), log_probs, top_ids)


# --- activation patching ------------------------------------------------------------------------------------


def _patch_pair(model: LlamaModel, clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run):
    clean_ids, corrupted_ids = model._check_ids(clean_ids), model._check_ids(corrupted_ids)
    if len(clean_ids) != len(corrupted_ids):
        raise ValueError(f"clean_ids and corrupted_ids must have the same length (a position of one is copied into "
                         f"the same position of the other), got {len(clean_ids)} and {len(corrupted_ids)} tokens")
    answer, foil = _token(model, answer, "answer"), _token(model, foil, "foil")
    return (clean_ids, corrupted_ids, answer, foil, _clean_run(model, clean_ids, clean_run),
            _clean_run(model, corrupted_ids, corrupted_run))


def patch_residual_block(model: LlamaModel, clean_ids, corrupted_ids, answer: int, foil: int, block: int, *,
                         clean_run: ForwardOutput | None = None, corrupted_run: ForwardOutput | None = None
                         ) -> np.ndarray:
    """One row of :func:`patch_residual_sweep`: float64 ``[n]``, every position of ``block`` patched in turn.

    The positions where the clean and corrupted streams entering ``block`` already differ are patched together in
    one stacked pass from ``block`` on; the others (equal streams: nothing to copy) get the corrupted run's own
    logit difference.

    Raises:
        ValueError: as :func:`patch_residual_sweep`, or ``block`` outside ``0 .. n_layers``.
    """
    clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run = _patch_pair(
        model, clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run)
    block = _integer(block, "block", 0, model.config.n_layers)
    n = len(clean_ids)
    out = np.full(n, logit_difference(corrupted_run.logits, answer, foil))
    clean_x, corrupted_x = clean_run.residuals[block], corrupted_run.residuals[block]  # [n, d_model]
    positions = [p for p in range(n) if not np.array_equal(clean_x[p], corrupted_x[p])]
    if positions:
        x = np.repeat(corrupted_x[None], len(positions), axis=0)  # [P, n, d_model]
        x[np.arange(len(positions)), positions] = clean_x[positions]  # copy b: position positions[b] patched
        plan = _plan(model, n, batch=len(positions), start_layer=block, residual=x, last_logits_only=True)
        logits = _stacked(model, corrupted_ids, plan)  # [P, vocab]
        out[positions] = logits[:, answer].astype(np.float64) - logits[:, foil]
    return out


def patch_residual_sweep(model: LlamaModel, clean_ids, corrupted_ids, answer: int, foil: int, *,
                         clean_run: ForwardOutput | None = None, corrupted_run: ForwardOutput | None = None,
                         progress: Progress | None = None) -> np.ndarray:
    """Activation patching of the residual stream: float64 ``[n_layers + 1, n]``.

    Cell ``[l, p]`` is the logit difference ``logit[answer] - logit[foil]`` at the last position of the
    corrupted run when the stream entering block ``l`` at position ``p`` is replaced by the clean run's
    (``l = n_layers``: the stream after the last block). A cell where both streams are already equal (the
    prompts' common beginning, by causality) is the corrupted run's own difference, not recomputed. One stacked
    pass per block (:func:`patch_residual_block`): every position's patch of that block together, from that
    block on.

    Args:
        clean_ids, corrupted_ids: two prompts of the same length ``n``.
        answer, foil: the token ids compared (typically the clean and the corrupted prediction).
        clean_run, corrupted_run: their ``model.forward(ids, keep_activations=True)`` (else run here).
        progress: ``progress(blocks done, n_layers + 1)``.

    Raises:
        ValueError: bad ids, different lengths, ``answer``/``foil`` out of range, a run of other ids.

    Source: TransformerLens ``patching.get_act_patch_resid_pre`` (``[n_layers, pos]``; here one row more).
    """
    clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run = _patch_pair(
        model, clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run)
    progress = _progress(progress)
    c = model.config
    out = np.empty((c.n_layers + 1, len(clean_ids)))
    for block in range(c.n_layers + 1):
        out[block] = patch_residual_block(model, clean_ids, corrupted_ids, answer, foil, block, clean_run=clean_run,
                                          corrupted_run=corrupted_run)
        if progress is not None:
            progress(block + 1, c.n_layers + 1)
    return out


def patch_head_layer(model: LlamaModel, clean_ids, corrupted_ids, answer: int, foil: int, layer: int, *,
                     clean_run: ForwardOutput | None = None, corrupted_run: ForwardOutput | None = None
                     ) -> np.ndarray:
    """One row of :func:`patch_head_sweep`: float64 ``[n_heads]``, each head of ``layer`` patched alone.

    One stacked pass from ``layer`` on: copy ``b`` of the corrupted stream entering ``layer`` has head ``b``'s
    output replaced by the clean run's; every other head of the layer is given the corrupted run's own output
    (the copies start from the same stream, so that is what they compute).

    Raises:
        ValueError: as :func:`patch_residual_sweep`, or ``layer`` out of range.
    """
    clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run = _patch_pair(
        model, clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run)
    c = model.config
    layer = _integer(layer, "layer", 0, c.n_layers - 1)
    clean_o, corrupted_o = clean_run.head_outputs[layer], corrupted_run.head_outputs[layer]  # [H, n, d_head]
    patch = {}
    for head in range(c.n_heads):
        value = np.repeat(corrupted_o[head][None], c.n_heads, axis=0)  # [H copies, n, d_head]
        value[head] = clean_o[head]
        patch[(layer, head)] = value
    plan = _plan(model, len(corrupted_ids), batch=c.n_heads, head_patch=patch, start_layer=layer,
                 residual=corrupted_run.residuals[layer][None], last_logits_only=True)
    logits = _stacked(model, corrupted_ids, plan)  # [H, vocab]
    return logits[:, answer].astype(np.float64) - logits[:, foil]


def patch_head_sweep(model: LlamaModel, clean_ids, corrupted_ids, answer: int, foil: int,
                     layers: Sequence[int] | None = None, *, clean_run: ForwardOutput | None = None,
                     corrupted_run: ForwardOutput | None = None, progress: Progress | None = None) -> np.ndarray:
    """Activation patching of each head's output at every position: float64 ``[len(layers), n_heads]``.

    Cell ``[i, h]`` is the logit difference ``logit[answer] - logit[foil]`` at the last position of the
    corrupted run when head ``h`` of layer ``layers[i]`` outputs the clean run's ``weights · V`` (all positions;
    TransformerLens' ``hook_z``) and everything else runs on. One stacked pass per layer
    (:func:`patch_head_layer`).

    Args:
        layers: which layers (default all, in order). The rest as :func:`patch_residual_sweep`.

    Raises:
        ValueError: as :func:`patch_residual_sweep`, or a layer out of range.

    Source: TransformerLens ``patching.get_act_patch_attn_head_out_all_pos``.
    """
    clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run = _patch_pair(
        model, clean_ids, corrupted_ids, answer, foil, clean_run, corrupted_run)
    progress = _progress(progress)
    c = model.config
    if layers is None:
        layers = range(c.n_layers)
    try:
        layers = [_integer(layer, "layers", 0, c.n_layers - 1) for layer in layers]
    except TypeError:
        raise ValueError(f"layers must be a list of layers in 0..{c.n_layers - 1}, got {layers!r}") from None
    out = np.empty((len(layers), c.n_heads))
    for i, layer in enumerate(layers):
        out[i] = patch_head_layer(model, clean_ids, corrupted_ids, answer, foil, layer, clean_run=clean_run,
                                  corrupted_run=corrupted_run)
        if progress is not None:
            progress(i + 1, len(layers))
    return out
