"""An attention-only transformer with a hand-written backward pass (pure NumPy).

The model (Elhage et al. 2021, "A Mathematical Framework for Transformer Circuits", section
"Attention-only transformers"): token embedding, optional positions, ``n_layers`` layers of
``n_heads`` attention heads added to a residual stream, and an unembedding; no MLP, no layer
norm, no biases. Row-vector convention (``q = x @ W_q``), as the rest of :mod:`attention`.

For a batch of token ids ``t [B, n]``::

    x_0 = W_E[t] + P[:n]                                        # [B, n, d_model]  P: learned, sinusoidal or 0
    q = x_l W_q^h,  k = x_l W_k^h,  v = x_l W_v^h                # [B, n_heads, n, d_head]
    s = q kᵀ · c,   c = 1/√d_head if scale else 1               # [B, n_heads, n, n]  the scores
    a = softmax(s + M)   (M = 0 / −∞: the causal mask)          # [B, n_heads, n, n]  the attention weights
    x_{l+1} = x_l + Σ_h (a v) W_o^h                             # [B, n, d_model]     the residual add
    logits = x_L W_U                                            # [B, n, vocab]
    loss = mean_{b, i < n-1} −log softmax(logits[b, i])[t[b, i+1]]   (next-token cross-entropy)

The backward pass is written out step by step in :meth:`AttentionOnly.loss_and_grads` (the
softmax's backward is ``ds = a ⊙ (da − Σ_j da ⊙ a)``); ``tests/core/test_training_grads.py``
checks every parameter against finite differences in float64 and against ``torch.autograd``.
Softmax is :func:`attention.core.softmax`; sinusoidal positions are
:func:`attention.embeddings.sinusoidal_positional_encoding`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core import softmax
from ..embeddings import sinusoidal_positional_encoding

POSITIONS = ("learned", "sinusoidal", "none")
INITS = ("lesson", "unit-variance")
"""How the weights start (see :class:`Config`)."""
"""How positions enter the residual stream: a learned table ``W_pos``, the fixed sinusoids, or nothing."""
DTYPES = ("float32", "float64")


def _check_int(value, name: str, lo: int, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        bounds = f">= {lo}" if hi is None else f"from {lo} to {hi}"
        raise ValueError(f"{name} must be {bounds}, got {value}")
    return int(value)


@dataclass(frozen=True)
class Config:
    """The sizes of an :class:`AttentionOnly` model.

    Attributes:
        n_layers: attention layers (>= 1).
        n_heads: heads per layer (>= 1).
        d_model: width of the residual stream (>= 1).
        d_head: width of each head's queries, keys and values (>= 1; ``d_k = d_v = d_head``).
        vocab: token ids ``0 .. vocab-1`` (>= 2).
        n_ctx: the longest sequence the model reads (>= 2).
        scale: divide the scores by ``√d_head`` (Vaswani et al. 2017, section 3.2.1); ``False`` leaves them raw.
        seed: seeds the initial weights (``np.random.default_rng(seed)``, >= 0).
        positions: one of :data:`POSITIONS`.
        dtype: ``"float32"`` (fast, what training uses) or ``"float64"`` (the gradient checks).
        init: one of :data:`INITS`, how the weights start (drawn from ``default_rng(seed)``):

            * ``"lesson"``: every matrix ``[fan_in, fan_out]`` from ``N(0, 2 / (fan_in + fan_out))``, the
              Xavier-like scale of the lesson's ``SelfAttention`` (``shared/docs/lesson.md``, worked example 2);
              the token embedding and the learned positions from ``N(0, 1 / d_model)`` (rows about unit length).
            * ``"unit-variance"``: every matrix from ``N(0, 1 / fan_in)`` and the embedding and positions from
              ``N(0, 1)``, so queries and keys start with components of variance about ``2`` (unit-variance
              rows of tokens and of positions, added): the assumption of the lesson's ÷√d_k argument, where
              ``q · k`` grows with ``d_head`` (the walkthrough's "unit-variance" initialisation).

    Raises:
        ValueError: a size is not a whole number in range, ``positions`` or ``dtype`` is unknown,
            ``scale`` is not a bool.
    """

    n_layers: int = 2
    n_heads: int = 2
    d_model: int = 32
    d_head: int = 16
    vocab: int = 64
    n_ctx: int = 32
    scale: bool = True
    seed: int = 0
    positions: str = "learned"
    dtype: str = "float32"
    init: str = "lesson"

    def __post_init__(self):
        for name, lo in (("n_layers", 1), ("n_heads", 1), ("d_model", 1), ("d_head", 1), ("vocab", 2),
                         ("n_ctx", 2), ("seed", 0)):
            _check_int(getattr(self, name), name, lo)
        if not isinstance(self.scale, bool | np.bool_):
            raise ValueError(f"scale must be True or False, got {self.scale!r}")
        if self.positions not in POSITIONS:
            raise ValueError(f"positions must be one of {POSITIONS}, got {self.positions!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS}, got {self.init!r}")

    @property
    def score_scale(self) -> float:
        """``c``: the factor the scores are multiplied by (``1/√d_head``, or 1 without scaling)."""
        return 1.0 / math.sqrt(self.d_head) if self.scale else 1.0


def param_shapes(cfg: Config) -> dict[str, tuple[int, ...]]:
    """The name and shape of every parameter, in the order they are drawn.

    ``W_E [vocab, d_model]``, ``W_pos [n_ctx, d_model]`` (learned positions only), per layer ``l``:
    ``layers.l.W_q``, ``.W_k``, ``.W_v`` ``[n_heads, d_model, d_head]``, ``layers.l.W_o [n_heads, d_head,
    d_model]``; ``W_U [d_model, vocab]``.
    """
    shapes: dict[str, tuple[int, ...]] = {"W_E": (cfg.vocab, cfg.d_model)}
    if cfg.positions == "learned":
        shapes["W_pos"] = (cfg.n_ctx, cfg.d_model)
    for layer in range(cfg.n_layers):
        for name in ("W_q", "W_k", "W_v"):
            shapes[f"layers.{layer}.{name}"] = (cfg.n_heads, cfg.d_model, cfg.d_head)
        shapes[f"layers.{layer}.W_o"] = (cfg.n_heads, cfg.d_head, cfg.d_model)
    shapes["W_U"] = (cfg.d_model, cfg.vocab)
    return shapes


def init_params(cfg: Config) -> dict[str, np.ndarray]:
    """The initial weights (see :class:`Config`), drawn in :func:`param_shapes`' order from ``default_rng(seed)``."""
    rng = np.random.default_rng(cfg.seed)
    params = {}
    lesson = cfg.init == "lesson"
    for name, shape in param_shapes(cfg).items():
        fan_in, fan_out = shape[-2], shape[-1]
        if name in ("W_E", "W_pos"):
            std = math.sqrt(1.0 / cfg.d_model) if lesson else 1.0
        else:
            std = math.sqrt(2.0 / (fan_in + fan_out)) if lesson else math.sqrt(1.0 / fan_in)
        params[name] = rng.normal(0.0, std, shape).astype(cfg.dtype)
    return params


@dataclass
class Forward:
    """What one forward pass keeps for the backward pass and for the pictures.

    Attributes:
        tokens: ``[B, n]`` int64, the ids read.
        x: the residual stream before each layer and after the last, ``n_layers + 1`` arrays ``[B, n, d_model]``.
        q, k, v: per layer ``[B, n_heads, n, d_head]``.
        scores: per layer ``[B, n_heads, n, n]``, the softmax's input ``s = q kᵀ · c`` before the causal mask.
        weights: per layer ``[B, n_heads, n, n]``, the attention weights (0 above the diagonal).
        z: per layer ``[B, n_heads, n, d_head]``, each head's ``a v`` (zeros for a knocked-out head).
        logits: ``[B, n, vocab]``.
        keep: per layer ``[n_heads]`` 1.0, or 0.0 for a knocked-out head.
    """

    tokens: np.ndarray
    x: list[np.ndarray] = field(default_factory=list)
    q: list[np.ndarray] = field(default_factory=list)
    k: list[np.ndarray] = field(default_factory=list)
    v: list[np.ndarray] = field(default_factory=list)
    scores: list[np.ndarray] = field(default_factory=list)
    weights: list[np.ndarray] = field(default_factory=list)
    z: list[np.ndarray] = field(default_factory=list)
    keep: list[np.ndarray] = field(default_factory=list)
    logits: np.ndarray | None = None

    @property
    def attention(self) -> np.ndarray:
        """``[B, n_layers, n_heads, n, n]``: every head's attention weights."""
        return np.stack(self.weights, axis=1)


@dataclass
class Backward:
    """One forward and backward pass.

    Attributes:
        loss: the mean cross-entropy (nats, float).
        grads: ``d loss / d param`` for every name of ``params``, same shapes and dtype.
        score_grads: per layer ``[B, n_heads, n, n]``, ``d loss / d s``: the gradient that reaches the scores
            ``s`` (the softmax's input, after the scaling). Where the softmax saturates it vanishes.
        forward: the :class:`Forward` pass it differentiated.
    """

    loss: float
    grads: dict[str, np.ndarray]
    score_grads: list[np.ndarray]
    forward: Forward


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """``log softmax`` along the last axis, by the log-sum-exp with the row maximum subtracted (finite logits)."""
    z = logits - logits.max(axis=-1, keepdims=True)  # [..., vocab]
    return z - np.log(np.exp(z).sum(axis=-1, keepdims=True))


class AttentionOnly:
    """The attention-only transformer of this module's docstring, with its own backward pass.

    ``AttentionOnly(cfg)`` draws the initial weights (:func:`init_params`); ``params`` is the dict of
    named arrays (:func:`param_shapes`), which an optimizer updates in place.

    Every method that reads tokens takes ``[n]`` or ``[B, n]`` integer ids with ``2 <= n <= n_ctx``
    (one sequence or a batch) and raises ``ValueError`` (naming ``tokens``) for a wrong shape or dtype,
    a sequence longer than ``n_ctx`` or an id outside ``0 .. vocab-1``.

    ``knockout``: heads whose output is set to zero (zero-ablation), as ``(layer, head)`` pairs.
    """

    def __init__(self, cfg: Config, params: dict[str, np.ndarray] | None = None):
        if not isinstance(cfg, Config):
            raise ValueError(f"cfg must be a training.Config, got {type(cfg).__name__}")
        self.cfg = cfg
        if params is None:
            self.params = init_params(cfg)
        else:
            self.params = {}
            for name, shape in param_shapes(cfg).items():
                if name not in params:
                    raise ValueError(f"params is missing {name!r} (shape {list(shape)})")
                arr = np.asarray(params[name])
                if arr.shape != shape:
                    raise ValueError(f"params[{name!r}] must have shape {list(shape)}, got {list(arr.shape)}")
                self.params[name] = arr.astype(cfg.dtype)
        self._positions = (sinusoidal_positional_encoding(cfg.n_ctx, cfg.d_model).astype(cfg.dtype)
                           if cfg.positions == "sinusoidal" else None)  # [n_ctx, d_model], fixed

    # --- input checks -------------------------------------------------------------------------
    def check_tokens(self, tokens, *, min_len: int = 1) -> np.ndarray:
        """``tokens`` as an int64 array ``[B, n]`` (a single sequence ``[n]`` becomes ``[1, n]``).

        Raises:
            ValueError: not whole numbers, not 1-D or 2-D, an empty axis, ``n < min_len``, ``n > n_ctx``,
                or an id outside ``0 .. vocab-1``.
        """
        arr = np.asarray(tokens)
        if arr.dtype == np.bool_ or not (np.issubdtype(arr.dtype, np.integer) or arr.size == 0):
            raise ValueError(f"tokens must be integer ids, got dtype {arr.dtype}")
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or 0 in arr.shape:
            raise ValueError(f"tokens must have shape [n] or [batch, n] with no empty axis, got {list(arr.shape)}")
        n = arr.shape[1]
        if n < min_len:
            raise ValueError(f"tokens must hold at least {min_len} positions per sequence, got {n}")
        if n > self.cfg.n_ctx:
            raise ValueError(f"tokens has {n} positions, more than n_ctx = {self.cfg.n_ctx}")
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= self.cfg.vocab:
            bad = lo if lo < 0 else hi
            raise ValueError(f"tokens must be ids from 0 to vocab - 1 = {self.cfg.vocab - 1}, got {bad}")
        return arr.astype(np.int64, copy=False)

    def _keep(self, knockout) -> list[np.ndarray]:
        keep = [np.ones(self.cfg.n_heads, dtype=self.cfg.dtype) for _ in range(self.cfg.n_layers)]
        for item in knockout or ():
            try:
                layer, head = (int(i) for i in item)
            except (TypeError, ValueError):
                raise ValueError(f"knockout must hold (layer, head) pairs, got {item!r}") from None
            if not (0 <= layer < self.cfg.n_layers and 0 <= head < self.cfg.n_heads):
                raise ValueError(f"knockout head ({layer}, {head}) is outside layers 0..{self.cfg.n_layers - 1}, "
                                 f"heads 0..{self.cfg.n_heads - 1}")
            keep[layer][head] = 0.0
        return keep

    def _qkv_matrix(self, layer: int) -> np.ndarray:
        """``[d_model, 3 n_heads d_head]``: layer ``layer``'s ``W_q``, ``W_k``, ``W_v`` side by side (head by head)."""
        p = self.params
        stacked = np.stack([p[f"layers.{layer}.{name}"] for name in ("W_q", "W_k", "W_v")])  # [3, H, d_model, d_head]
        return stacked.transpose(2, 0, 1, 3).reshape(self.cfg.d_model, -1)

    # --- forward ------------------------------------------------------------------------------
    def forward(self, tokens, knockout=()) -> Forward:
        """The forward pass on ``tokens`` (``[n]`` or ``[B, n]``), keeping every intermediate (:class:`Forward`)."""
        t = self.check_tokens(tokens)
        p, cfg = self.params, self.cfg
        B, n = t.shape
        c = cfg.score_scale
        causal = np.tri(n, dtype=bool)  # [n, n] True = may attend
        fw = Forward(tokens=t, keep=self._keep(knockout))
        x = p["W_E"][t]  # [B, n, d_model]
        if cfg.positions == "learned":
            x = x + p["W_pos"][:n]  # [B, n, d_model]
        elif cfg.positions == "sinusoidal":
            x = x + self._positions[:n]
        fw.x.append(x)
        H, d, e = cfg.n_heads, cfg.d_model, cfg.d_head
        for layer in range(cfg.n_layers):
            # 1) project: one matrix product for every head's queries, keys and values
            W_qkv = self._qkv_matrix(layer)  # [d_model, 3 H d_head]
            qkv = (x.reshape(B * n, d) @ W_qkv).reshape(B, n, 3, H, e)  # [B, n, 3, H, d_head]
            q, k, v = np.ascontiguousarray(qkv.transpose(2, 0, 3, 1, 4))  # each [B, H, n, d_head]
            # 2) scores, causal mask, softmax
            s = (q @ k.swapaxes(-1, -2)) * c  # [B, H, n, n] scores
            a = softmax(s, mask=causal)  # [B, H, n, n] attention weights
            # 3) weighted values (knocked-out heads zeroed), 4) merge the heads through W_o, 5) residual add
            z = (a @ v) * fw.keep[layer][:, None, None]  # [B, H, n, d_head]
            merged = z.transpose(0, 2, 1, 3).reshape(B * n, H * e)  # [B n, H d_head]
            x = x + (merged @ p[f"layers.{layer}.W_o"].reshape(H * e, d)).reshape(B, n, d)  # [B, n, d_model]
            fw.q.append(q)
            fw.k.append(k)
            fw.v.append(v)
            fw.scores.append(s)
            fw.weights.append(a)
            fw.z.append(z)
            fw.x.append(x)
        fw.logits = x @ p["W_U"]  # [B, n, vocab]
        return fw

    def logits(self, tokens, knockout=()) -> np.ndarray:
        """``[B, n, vocab]`` (or ``[n, vocab]`` for one sequence ``[n]``): the next-token logits."""
        out = self.forward(tokens, knockout).logits
        return out[0] if np.ndim(tokens) == 1 else out

    def attention(self, tokens, knockout=()) -> np.ndarray:
        """Every head's attention weights: ``[n_layers, n_heads, n, n]`` for ``[n]`` tokens, with a batch axis
        first (``[B, n_layers, n_heads, n, n]``) for ``[B, n]``. Row = query, column = key; 0 above the diagonal."""
        out = self.forward(tokens, knockout).attention
        return out[0] if np.ndim(tokens) == 1 else out

    def check_loss_mask(self, loss_mask, t: np.ndarray) -> np.ndarray | None:
        """``loss_mask`` as a bool array ``[B, n-1]`` for tokens ``t [B, n]`` (``None`` stays ``None``).

        Raises:
            ValueError: not boolean, not of shape ``[B, n-1]`` (``[n-1]`` for one sequence), or all False.
        """
        if loss_mask is None:
            return None
        mask = np.asarray(loss_mask)
        if mask.dtype != np.bool_:
            raise ValueError(f"loss_mask must be boolean (True = counted in the loss), got dtype {mask.dtype}")
        if mask.ndim == 1:
            mask = mask[None, :]
        if mask.shape != (t.shape[0], t.shape[1] - 1):
            raise ValueError(f"loss_mask must have shape [batch, n-1] = {[t.shape[0], t.shape[1] - 1]} "
                             f"(one flag per predicted position), got {list(np.shape(loss_mask))}")
        if not mask.any():
            raise ValueError("loss_mask must keep at least one position")
        return mask

    def loss(self, tokens, knockout=(), loss_mask=None) -> float:
        """The mean next-token cross-entropy (nats) over every position but the last (``n >= 2``), or over the
        positions ``loss_mask [B, n-1]`` keeps (position ``i`` predicts token ``i + 1``)."""
        t = self.check_tokens(tokens, min_len=2)
        mask = self.check_loss_mask(loss_mask, t)
        return float(_cross_entropy(self.forward(t, knockout).logits, t, mask)[0])

    def loss_and_grads(self, tokens, knockout=(), loss_mask=None) -> tuple[float, dict[str, np.ndarray]]:
        """The loss (:meth:`loss`) and its gradient with respect to every parameter (:meth:`backward`).

        Returns:
            ``(loss, grads)``: ``grads`` has the keys, shapes and dtype of :attr:`params`.
        """
        out = self.backward(tokens, knockout, loss_mask)
        return out.loss, out.grads

    def backward(self, tokens, knockout=(), loss_mask=None) -> Backward:
        """The forward and the backward pass (:class:`Backward`: the loss, the gradients, the gradient reaching
        each layer's scores, and the forward pass's intermediates). Arguments as :meth:`loss`."""
        t = self.check_tokens(tokens, min_len=2)
        mask = self.check_loss_mask(loss_mask, t)
        fw = self.forward(t, knockout)
        p, cfg = self.params, self.cfg
        t = fw.tokens
        B, n = t.shape
        c = cfg.score_scale
        g: dict[str, np.ndarray] = {}
        # 1) cross-entropy: d loss / d logits = (softmax(logits) - onehot(target)) / (positions counted)
        loss, dlogits = _cross_entropy(fw.logits, t, mask, with_grad=True)  # [B, n, vocab]
        # 2) unembedding: logits = x_L W_U
        x_last = fw.x[-1]
        g["W_U"] = x_last.reshape(-1, cfg.d_model).T @ dlogits.reshape(-1, cfg.vocab)  # [d_model, vocab]
        dx = dlogits @ p["W_U"].T  # [B, n, d_model]
        score_grads = [None] * cfg.n_layers
        H, d, e = cfg.n_heads, cfg.d_model, cfg.d_head
        for layer in reversed(range(cfg.n_layers)):
            x_in, q, k, v, a, z = fw.x[layer], fw.q[layer], fw.k[layer], fw.v[layer], fw.weights[layer], fw.z[layer]
            # 3) residual add x_out = x_in + merged W_o: dx reaches x_in unchanged, and W_o and the heads get
            dx2 = dx.reshape(B * n, d)  # [B n, d_model]
            merged = z.transpose(0, 2, 1, 3).reshape(B * n, H * e)  # [B n, H d_head]
            g[f"layers.{layer}.W_o"] = (merged.T @ dx2).reshape(H, e, d)  # [H, d_head, d_model]
            dmerged = dx2 @ p[f"layers.{layer}.W_o"].reshape(H * e, d).T  # [B n, H d_head]
            dz = dmerged.reshape(B, n, H, e).transpose(0, 2, 1, 3) * fw.keep[layer][:, None, None]  # [B, H, n, d_head]
            # 4) z = a v
            da = dz @ v.swapaxes(-1, -2)  # [B, H, n, n]
            dv = a.swapaxes(-1, -2) @ dz  # [B, H, n, d_head]
            # 5) softmax (masked entries have a = 0, so they get no gradient): ds = a ⊙ (da − Σ_j a ⊙ da)
            ds = a * (da - (a * da).sum(axis=-1, keepdims=True))  # [B, H, n, n]
            score_grads[layer] = ds
            # 6) s = q kᵀ c
            dq = (ds @ k) * c  # [B, H, n, d_head]
            dk = (ds.swapaxes(-1, -2) @ q) * c  # [B, H, n, d_head]
            # 7) [q, k, v] = x_in W_qkv
            dqkv = np.stack([dq, dk, dv]).transpose(1, 3, 0, 2, 4).reshape(B * n, 3 * H * e)  # [B n, 3 H d_head]
            g_qkv = (x_in.reshape(B * n, d).T @ dqkv).reshape(d, 3, H, e)  # [d_model, 3, H, d_head]
            for i, name in enumerate(("W_q", "W_k", "W_v")):
                g[f"layers.{layer}.{name}"] = g_qkv[:, i].transpose(1, 0, 2)  # [H, d_model, d_head]
            dx = dx + (dqkv @ self._qkv_matrix(layer).T).reshape(B, n, d)  # [B, n, d_model]
        # 8) embedding and positions: x_0 = W_E[t] + W_pos[:n]
        onehot = np.zeros((B * n, cfg.vocab), dtype=dx.dtype)  # [B n, vocab]
        onehot[np.arange(B * n), t.reshape(-1)] = 1.0
        g["W_E"] = onehot.T @ dx.reshape(-1, cfg.d_model)  # [vocab, d_model] (rows of repeated ids add up)
        if cfg.positions == "learned":
            d_pos = np.zeros_like(p["W_pos"])  # [n_ctx, d_model]
            d_pos[:n] = dx.sum(axis=0)
            g["W_pos"] = d_pos
        grads = {name: np.ascontiguousarray(g[name], dtype=cfg.dtype) for name in p}
        return Backward(loss, grads, score_grads, fw)


def _cross_entropy(logits: np.ndarray, tokens: np.ndarray, loss_mask: np.ndarray | None = None, *,
                   with_grad: bool = False):
    """Mean next-token cross-entropy of ``logits [B, n, vocab]`` against ``tokens[:, 1:]`` over the positions
    ``loss_mask [B, n-1]`` keeps (all by default), and optionally its gradient with respect to the logits
    (``[B, n, vocab]``, zero at the last position and where the mask is False)."""
    B, n, vocab = logits.shape
    logp = log_softmax(logits[:, :-1])  # [B, n-1, vocab]
    target = tokens[:, 1:]  # [B, n-1]
    picked = np.take_along_axis(logp, target[..., None], axis=-1)[..., 0]  # [B, n-1]
    # each counted position's share of the mean: [B, n-1]
    weight = np.full((B, n - 1), 1.0 / (B * (n - 1))) if loss_mask is None else loss_mask / int(loss_mask.sum())
    loss = -float(np.sum(picked * weight, dtype=np.float64))
    if not with_grad:
        return loss, None
    d = np.zeros_like(logits)  # [B, n, vocab]
    probs = np.exp(logp)  # [B, n-1, vocab]
    np.put_along_axis(probs, target[..., None], np.take_along_axis(probs, target[..., None], axis=-1) - 1.0, -1)
    d[:, :-1] = probs * weight[..., None].astype(logits.dtype)
    return loss, d
