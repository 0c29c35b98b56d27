"""Inside one transformer block: the numbers of one forward pass and the claims the page makes (no Streamlit).

Every family the core reads is pre-norm: block ``l`` reads the residual stream ``x_l`` through a norm (RMSNorm, or
GPT-2's LayerNorm with a bias), attention writes ``a_l = concat_h(o_h) W_o`` (``+ b_o``: GPT-2) into it, then the MLP
reads the sum through a second norm, ``u = norm(x_l + a_l)``, and writes ``m_l`` (SwiGLU ``(silu(u W_gate) ⊙ u W_up)
W_down``, Gemma's GEGLU with GELU in place of SiLU, or GPT-2's ``gelu(u W_up + b_up) W_down + b_down``); Gemma 3 also
normalises both writes before they join the stream. ``x_{l+1} = x_l + a_l + m_l`` with ``a_l``, ``m_l`` what joins.
Everything comes from the core's one forward pass (:func:`explorer.shell.llm.forward` with its activations); one
block's inside (the norm's divisor, each head's share of ``a_l``, the MLP's gate and up) is recomputed here from that
block's weights (:meth:`attention.llama.LlamaModel.block_weights`) and the core's norms and activations
(``tests/lessons/block/test_model.py`` checks it reproduces the core's numbers on every family).

Sources: RMSNorm, Zhang & Sennrich (2019); LayerNorm, Ba, Kiros & Hinton (2016); SwiGLU, Shazeer (2020); GELU,
Hendrycks & Gimpel (2016); pre-norm residual blocks, Xiong et al. (2020); perplexity as exp of the mean cross-entropy,
Jurafsky & Martin, "Speech and Language Processing", 3rd ed., 3.2.1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from explorer.shell import i18n, llm
from explorer.shell.i18n import N_, translator

_, _n = translator(__name__)

DEFAULT_PROMPT = "The capital of France is Paris, and the capital of Germany is"
PARTS = {"attention": N_("attention"), "mlp": N_("MLP")}


@dataclass(frozen=True)
class Measured:
    """One forward pass of ``ids``, the last token's stream block by block (float32 unless said).

    Attributes:
        ids: the token ids. eps: the RMSNorms' ε.
        embedding_norms: float64 ``[n]``, ``‖E[t]‖`` of each token (the stream entering block 0).
        streams: ``[n_layers + 1, d_model]`` the last token's stream entering each block (the last: before the
            final norm). attn_writes, mlp_writes: ``[n_layers, d_model]`` what each block's attention and MLP added
            to it (attention's: the stream after the block minus the stream before minus the MLP's write).
        heads: ``[n_layers, n_heads, d_head]`` each head's ``weights · V`` at the last token (the input to W_o).
        losses: float64 ``[n - 1]``, ``-ln p(ids[t+1])`` at position ``t`` (nats). predicted: ``[n - 1]`` the most
            likely token at each position. top_ids, top_probabilities: the next token's top 5 after the prompt.
    """

    ids: tuple[int, ...]
    eps: float
    embedding_norms: np.ndarray
    streams: np.ndarray
    attn_writes: np.ndarray
    mlp_writes: np.ndarray
    heads: np.ndarray
    losses: np.ndarray
    predicted: tuple[int, ...]
    top_ids: tuple[int, ...]
    top_probabilities: tuple[float, ...]

    @property
    def stream_norms(self) -> np.ndarray:
        """float64 ``[n_layers + 1]``, ``‖x_l‖`` of the last token."""
        return np.linalg.norm(self.streams.astype(np.float64), axis=1)

    @property
    def write_norms(self) -> dict[str, np.ndarray]:
        """float64 ``[n_layers]`` per part (:data:`PARTS`), the norm of each block's write."""
        return {"attention": np.linalg.norm(self.attn_writes.astype(np.float64), axis=1),
                "mlp": np.linalg.norm(self.mlp_writes.astype(np.float64), axis=1)}

    @property
    def actual_probabilities(self) -> np.ndarray:
        """float64 ``[n - 1]``, ``p(ids[t+1])`` at each position: ``exp(-loss)``."""
        return np.exp(-self.losses)

    @property
    def mean_loss(self) -> float:
        """The mean of :attr:`losses` (nats); NaN for a one-token prompt."""
        return float(self.losses.mean()) if len(self.losses) else float("nan")

    @property
    def perplexity(self) -> float:
        """``exp(mean loss)``: as unsure as a uniform choice among this many tokens."""
        return float(np.exp(self.mean_loss))


def measure(_model: llm.LlamaModel, ids: tuple[int, ...]) -> Measured:
    """:class:`Measured` for ``ids`` from one forward pass with its activations (every position's logits kept).

    Raises:
        ValueError: as :func:`explorer.shell.llm.forward` (no ids, an id out of range, too many tokens).
    """
    r = llm.forward(_model, ids, activations=True, weights=False)
    streams = r.residuals[:, -1]  # [L + 1, d]
    mlp = r.mlp_outputs[:, -1]  # [L, d]
    losses = llm.next_token_losses(r.logits, ids) if len(ids) > 1 else np.zeros(0)
    return Measured(
        ids=tuple(ids), eps=float(_model.config.rms_eps),
        embedding_norms=np.linalg.norm(r.residuals[0].astype(np.float64), axis=1),
        streams=streams, attn_writes=streams[1:] - streams[:-1] - mlp, mlp_writes=mlp, heads=r.head_outputs[:, :, -1],
        losses=losses, predicted=tuple(int(i) for i in r.logits[:-1].argmax(axis=1)), top_ids=r.top_ids,
        top_probabilities=r.top_probabilities)


@dataclass(frozen=True)
class Inside:
    """One block's inside at the last token (float64 ``[d]`` vectors; norms are Euclidean, RMS = norm / √d), whatever
    the family's block (:class:`attention.llama.BlockWeights`).

    Attributes:
        layer: the block. config: the model's (its norm, MLP and post-norms decide what the fields hold).
        x: the stream entering it. mean: LayerNorm's ``mean(x)`` (0.0 for RMSNorm, which subtracts nothing).
        divisor: ``√(mean(x²) + ε)`` (RMSNorm) or ``√(var(x) + ε)`` (LayerNorm). gain: ``g₁``; bias: ``b₁``
        (LayerNorm) or ``None``. normed: the norm's output, what every head reads.
        head_writes: ``[n_heads, d]`` each head's ``o_h W_o[h]`` (no bias). attn_raw: ``concat(o) W_o`` (``+ b_o``).
        attn: ``a_l``, what joins the stream: ``attn_raw``, or its RMSNorm (post-norms: gemma3).
        mid: ``x + attn``. gate: ``u W_gate`` ``[d_ff]`` (``None`` for an ungated GELU MLP); up: ``u W_up``
        (``+ b_up``); hidden: ``act(gate) ⊙ up`` or ``gelu(up)``; mlp_raw: ``hidden W_down`` (``+ b_down``).
        mlp: ``m_l``, what joins the stream: ``mlp_raw``, or its RMSNorm (post-norms).
    """

    layer: int
    config: llm.LlamaConfig
    x: np.ndarray
    mean: float
    divisor: float
    gain: np.ndarray
    bias: np.ndarray | None
    normed: np.ndarray
    head_writes: np.ndarray
    attn_raw: np.ndarray
    attn: np.ndarray
    mid: np.ndarray
    gate: np.ndarray | None
    up: np.ndarray
    hidden: np.ndarray
    mlp_raw: np.ndarray
    mlp: np.ndarray

    @property
    def head_norms(self) -> np.ndarray:
        """``[n_heads]``, ``‖o_h W_o[h]‖`` of each head's part."""
        return np.linalg.norm(self.head_writes, axis=1)

    @property
    def attn_norm(self) -> float:
        """``‖concat(o) W_o‖`` (``+ b_o``), the norm of the attention's output (before a post-norm)."""
        return float(np.linalg.norm(self.attn_raw))

    @property
    def heads_sum_norm(self) -> float:
        """``‖Σ_h o_h W_o[h]‖``, the norm of the heads' parts added up (no bias: at most the parts' norms summed)."""
        return float(np.linalg.norm(self.head_writes.sum(0)))


def norm_text(v: float) -> str:
    """A stream's norm as every sentence of the page writes it (4 significant digits: one precision per quantity)."""
    return i18n.significant(float(v), 4)


def rms(v) -> float:
    """The root mean square of a vector, in float64."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.sqrt(np.mean(v * v)))


def _norm(config: llm.LlamaConfig, x, gain, bias):
    """The model's norm (:attr:`LlamaConfig.norm`): RMSNorm, or LayerNorm with its bias."""
    if config.norm == "layer":
        return llm.layer_norm(x, gain, bias, config.rms_eps)
    return llm.rms_norm(x, gain, config.rms_eps)


def inside(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, _measure) -> Inside:
    """Block ``layer`` recomputed from its weights (:meth:`LlamaModel.block_weights`) on the last token's stream
    (``_measure``: :func:`measure` or its cached binding, not hashed), in the family's own parts: RMSNorm or LayerNorm
    (with its bias), W_o's bias, the norms after attention and the MLP (gemma3), a SwiGLU, GEGLU or GELU MLP.

    Raises:
        ValueError: ``layer`` out of range; bad ``ids`` (as :func:`measure`).
    """
    c = _model.config
    w, m = _model.block_weights(layer), _measure(_model, ids)
    x, dh = m.streams[layer], c.d_head
    normed = _norm(c, x, w.attn_norm, w.attn_norm_bias)
    head_writes = np.stack([m.heads[layer, h] @ w.W_o[h * dh:(h + 1) * dh] for h in range(len(m.heads[layer]))])
    attn_raw = m.heads[layer].reshape(-1) @ w.W_o  # the concatenation times W_o, as the core multiplies
    if w.o_bias is not None:
        attn_raw = attn_raw + w.o_bias
    attn = attn_raw if w.post_attn_norm is None else llm.rms_norm(attn_raw, w.post_attn_norm, c.rms_eps)
    mid = x + attn
    u = _norm(c, mid, w.ffn_norm, w.ffn_norm_bias)
    if c.mlp == "gelu":
        gate, up = None, u @ w.W_up + w.up_bias
        hidden = llm.gelu_tanh(up)
    else:
        gate, up = u @ w.W_gate, u @ w.W_up
        hidden = (llm.gelu_tanh if c.mlp == "geglu" else llm.silu)(gate) * up
    mlp_raw = hidden @ w.W_down
    if w.down_bias is not None:
        mlp_raw = mlp_raw + w.down_bias
    mlp = mlp_raw if w.post_ffn_norm is None else llm.rms_norm(mlp_raw, w.post_ffn_norm, c.rms_eps)

    def f64(a):
        return None if a is None else np.asarray(a, dtype=np.float64)

    x64 = f64(x)
    mean = float(x64.mean()) if c.norm == "layer" else 0.0
    spread = np.mean((x64 - mean) ** 2)  # LayerNorm: the variance; RMSNorm: mean(x²) (mean is 0.0)
    return Inside(layer, c, x64, mean, float(np.sqrt(spread + m.eps)), f64(w.attn_norm), f64(w.attn_norm_bias),
                  f64(normed), f64(head_writes), f64(attn_raw), f64(attn), f64(mid), f64(gate), f64(up), f64(hidden),
                  f64(mlp_raw), f64(mlp))


def mlp_formula(config: llm.LlamaConfig) -> str:
    """The hidden units' formula as the table writes it (symbols: the same in every language)."""
    return {"swiglu": "silu(gate) ⊙ up", "geglu": "gelu(gate) ⊙ up", "gelu": "gelu(up)"}[config.mlp]


def inside_rows(b: Inside, eps: float) -> list[tuple[str, str, float]]:
    """The block's numbers as ``(step, quantity, value)`` rows, in the run's language (a small table), with the
    family's own parts (:class:`Inside`)."""
    c = b.config
    d_ff, name = len(b.up), llm.norm_name(c)
    norm = _("{norm} before attention").format(norm=name)
    att, mlp = _("attention"), _("MLP ({kind})").format(kind=llm.mlp_name(c))
    layer_norm = c.norm == "layer"
    rows = [(norm, _("RMS of the stream x"), rms(b.x))]
    if layer_norm:
        rows += [(norm, _("mean μ of x (subtracted)"), b.mean), (norm, "ε", eps),
                 (norm, _("divides by √(var(x) + ε)"), b.divisor),
                 (norm, _("RMS of (x − μ) / √(…)"), rms((b.x - b.mean) / b.divisor))]
    else:
        rows += [(norm, "ε", eps), (norm, _("divides by √(mean(x²) + ε)"), b.divisor),
                 (norm, _("RMS of x / √(…)"), rms(b.x / b.divisor))]
    rows.append((norm, _("RMS of the learned scale g"), rms(b.gain)))
    if b.bias is not None:
        rows.append((norm, _("RMS of the learned shift b"), rms(b.bias)))
    rows.append((norm, _("RMS after: x / √(…) ⊙ g") if not layer_norm else _("RMS after: (x − μ) / √(…) ⊙ g + b"),
                 rms(b.normed)))
    rows += [(att, _("heads (each its own rows of W_o)"), float(len(b.head_writes))),
             (att, _("‖write‖ = ‖concat(o) W_o + b_o‖") if c.linear_bias else _("‖write‖ = ‖concat(o) W_o‖"),
              b.attn_norm)]
    rows += [(att, _("‖head {h}'s part‖").format(h=h), float(v)) for h, v in enumerate(b.head_norms)]
    if c.post_norms:
        rows.append((att, _("‖RMSNorm(write)‖: what joins the stream"), float(np.linalg.norm(b.attn))))
    rows.append((mlp, _("d_ff (width of gate and up)") if b.gate is not None else _("d_ff (width of up)"),
                 float(d_ff)))
    if b.gate is not None:
        rows.append((mlp, _("‖gate‖"), float(np.linalg.norm(b.gate))))
    rows += [(mlp, _("‖up + b_up‖") if c.mlp == "gelu" else _("‖up‖"), float(np.linalg.norm(b.up))),
             (mlp, f"‖hidden‖ = ‖{mlp_formula(c)}‖", float(np.linalg.norm(b.hidden))),  # symbols: every language
             (mlp, _("share of units with gate > 0") if b.gate is not None else _("share of units with up > 0"),
              float(np.mean((b.gate if b.gate is not None else b.up) > 0))),
             (mlp, _("‖write‖ = ‖hidden W_down + b_down‖") if c.linear_bias else _("‖write‖ = ‖hidden W_down‖"),
              float(np.linalg.norm(b.mlp_raw)))]
    if c.post_norms:
        rows.append((mlp, _("‖RMSNorm(write)‖: what joins the stream"), float(np.linalg.norm(b.mlp))))
    return rows


# --- the claims ------------------------------------------------------------------------------------------------


def biggest_head(b: Inside) -> tuple[int, float]:
    """The head whose part of the attention write is longest, and that part's share of the sum of the parts' norms."""
    norms = b.head_norms
    h = int(norms.argmax())
    return h, float(norms[h] / norms.sum()) if norms.sum() > 0 else 0.0


def stream_claim(m: Measured) -> str:
    """Whether the last token's stream grows over the blocks, by how much, and where it grows and shrinks most."""
    s = m.stream_norms
    steps = np.diff(s)
    up, down = int(steps.argmax()), int(steps.argmin())
    facts = dict(first=norm_text(s[0]), last=norm_text(s[-1]),
                 ratio=i18n.significant(s[-1] / s[0], 3),
                 grows=int((steps > 0).sum()), blocks=len(steps), up=up, up_by=i18n.significant(steps[up], 3),
                 down=down, down_by=i18n.significant(-steps[down], 3))
    text = (_("The stream grows: ‖x‖ goes from {first} (the embedding) to {last} before the final norm, {ratio} times "
              "as long.") if s[-1] > s[0] else
            _("The stream does not grow overall: ‖x‖ goes from {first} (the embedding) to {last} before the final "
              "norm ({ratio} times).")).format(**facts)
    if steps[up] > 0:
        text += " " + _("It gets longer in {grows} of the {blocks} blocks; block {up} adds the most "
                        "(+{up_by}).").format(**facts)
    else:
        text += " " + _("No block makes it longer.")
    if steps[down] < 0:
        text += " " + _("Block {down} shortens it most (−{down_by}): a write can cancel part of the stream.").format(
            **facts)
    return text


def largest_write(m: Measured) -> tuple[str, int, float]:
    """The part (:data:`PARTS` key) and block of the longest single write into the last token's stream, and its norm."""
    norms = m.write_norms
    part = max(norms, key=lambda k: norms[k].max())
    return part, int(norms[part].argmax()), float(norms[part].max())


def writes_claim(m: Measured) -> str:
    """Which part writes most into the last token's stream: in total over the blocks, in how many blocks, and the
    single longest write."""
    norms = m.write_norms
    part, block, value = largest_write(m)
    total = {k: float(v.sum()) for k, v in norms.items()}
    more = "mlp" if total["mlp"] > total["attention"] else "attention"
    other = "attention" if more == "mlp" else "mlp"
    wins = int((norms[more] > norms[other]).sum())
    return _("Summed over the {blocks} blocks, the {more} writes more ({a} against {b} for the {other}); it writes "
             "more in {wins} of the {blocks} blocks. The longest single write is block {block}'s {part} "
             "(‖·‖ = {value}).").format(
        blocks=len(norms[more]), more=_(PARTS[more]), other=_(PARTS[other]), a=i18n.significant(total[more], 4),
        b=i18n.significant(total[other], 4), wins=wins, block=block, part=_(PARTS[part]),
        value=i18n.significant(value, 4))


def hits(m: Measured) -> int:
    """Positions whose most likely next token is the prompt's actual next token."""
    return int(sum(p == t for p, t in zip(m.predicted, m.ids[1:], strict=True)))


def loss_claim(m: Measured) -> str:
    """The mean loss, the perplexity in words and how often the top token was the actual next one (two sentences,
    each with the plural of its own number)."""
    n, right = len(m.losses), hits(m)
    mean = _n("Over {n} prediction: mean loss {loss} nats, perplexity e^{loss} = {ppl}: on average the model is as "
              "unsure as if it chose uniformly among about {choices} tokens.",
              "Over {n} predictions: mean loss {loss} nats, perplexity e^{loss} = {ppl}: on average the model is as "
              "unsure as if it chose uniformly among about {choices} tokens.", n).format(
        n=n, loss=i18n.number(m.mean_loss, 3), ppl=i18n.significant(m.perplexity, 4),
        choices=i18n.integer(max(1, round(m.perplexity))))
    top = _n("Its most likely token was the actual next one at {hits} position out of {n}.",
             "Its most likely token was the actual next one at {hits} positions out of {n}.", right).format(
        hits=right, n=n)
    return mean + " " + top


def tied_claim(tied: bool | None, vocab: int, d_model: int, norm: str = "RMSNorm") -> str:
    """Whether the unembedding is the embedding matrix (measured from the file: it has no ``output.weight``)."""
    if tied is None:
        return _("The weights file could not be read again, so this page does not say whether the output matrix "
                 "is E itself.")
    if tied:
        return _("The file has no separate output matrix: the same E [{vocab} × {d}] that turned tokens into vectors "
                 "turns the last vector into {vocab} logits (tied embeddings).").format(vocab=i18n.integer(vocab),
                                                                                         d=d_model)
    return _("The file has its own output matrix W_U [{vocab} × {d}] (the embeddings are not tied): logits = "
             "{norm}(x) W_Uᵀ.").format(vocab=i18n.integer(vocab), d=d_model, norm=norm)


def unembedding_symbol(tied: bool | None) -> str:
    """The logits formula's output matrix, following :func:`tied_claim`: ``E^\\top`` when the file ties it to the
    embedding, ``W_U^\\top`` when it has its own (or when the file could not be read: the general name)."""
    return r"E^\top" if tied else r"W_U^\top"


def embedding_claim(m: Measured, d_model: int) -> str:
    """The embedding's size and what the blocks do to it, in the same branch as :func:`stream_claim`."""
    s = m.stream_norms
    head = _("‖v‖ = √(v₁² + … + v_d²), the vector's length; RMS = ‖v‖ / √{d}.").format(d=d_model)
    if s[-1] > s[0]:
        return head + " " + _("The last token's embedding has ‖x₀‖ = {first}; the blocks will make its stream "
                              "{ratio} times as long (step 2).").format(first=norm_text(s[0]),
                                                                        ratio=i18n.significant(s[-1] / s[0], 3))
    return head + " " + _("The last token's embedding has ‖x₀‖ = {first}; the blocks will not make its stream longer "
                          "overall (step 2).").format(first=norm_text(s[0]))


def pre_norm_claim(model_name: str, config: llm.LlamaConfig) -> str:
    """How the blocks of a pre-norm model add to the stream, and what they add (with norms after attention and the
    MLP, gemma3: their normalised outputs); ``model_name`` is shown as given (escape it for Markdown)."""
    facts = dict(model=model_name, layers=config.n_layers)
    if config.post_norms:
        return _("{model} is **pre-norm** and also normalises what each part writes: each part reads a normalised "
                 "copy of the stream, its output goes through one more RMSNorm, and that is *added* to the stream, "
                 "never replaces it. So a_l and m_l below are the normalised outputs, RMSNorm(attention) and "
                 "RMSNorm(MLP), and after {layers} blocks x_{layers} = x₀ + Σ (a_l + m_l): the embedding plus "
                 "everything every block wrote. The chart follows the last token (the one whose next token is "
                 "predicted).").format(**facts)
    return _("{model} is **pre-norm**: each part reads a normalised copy of the stream, and its output is *added* "
             "to the stream, never replaces it. After {layers} blocks, x_{layers} = x₀ + Σ (a_l + m_l): the embedding "
             "plus everything every block wrote. The chart follows the last token (the one whose next token is "
             "predicted).").format(**facts)


def stream_latex(config: llm.LlamaConfig) -> list[str]:
    """Step 2's formulas: the running sum and what each block's two parts read and write, with the model's norm
    (and, for gemma3, the norms after attention and the MLP)."""
    n = r"\mathrm{" + llm.norm_name(config) + "}"
    if config.post_norms:
        return [r"x_{l+1} = x_l + a_l + m_l", r"a_l = \mathrm{RMSNorm}(\mathrm{attn}_l(" + n + r"(x_l)))",
                r"u = " + n + r"(x_l + a_l), \qquad m_l = \mathrm{RMSNorm}(\mathrm{mlp}_l(u))"]
    return [r"x_{l+1} = x_l + a_l + m_l", r"a_l = \mathrm{attn}_l(" + n + r"(x_l))",
            r"u = " + n + r"(x_l + a_l), \qquad m_l = \mathrm{mlp}_l(u)"]


def embedding_latex(config: llm.LlamaConfig) -> str:
    """Step 1's formula: ``x_0 = E[t]``, scaled by √d_model (gemma3) or plus the position's vector (gpt2)."""
    d = str(config.d_model)
    if config.positions == "learned":
        return r"x_0 = E[t] + P[p] \in \mathbb{R}^{" + d + "}"
    if config.embed_scale != 1.0:
        return r"x_0 = \sqrt{" + d + r"}\; E[t] \in \mathbb{R}^{" + d + "}"
    return r"x_0 = E[t] \in \mathbb{R}^{" + d + "}"


def embedding_symbol(config: llm.LlamaConfig) -> str:
    """The embedding table's norm column: ``‖E[t]‖``, or ``‖x₀‖`` when the stream starts as more than the row of E
    (scaled: gemma3; plus the position's vector: gpt2)."""
    return "‖E[t]‖" if config.positions == "rope" and config.embed_scale == 1.0 else "‖x₀‖"


def embedding_text(config: llm.LlamaConfig) -> str:
    """Step 1's sentence: where a token's stream starts, in the family's own way."""
    facts = dict(vocab=i18n.integer(config.vocab_size), d=config.d_model, scale=i18n.general(config.embed_scale, 4),
                 context=i18n.integer(config.context_length))
    if config.positions == "learned":
        return _("Each token id t picks its row of the embedding matrix E [{vocab} × {d}], and its position p picks "
                 "its row of the learned position matrix P [{context} × {d}]: their sum, d_model = {d} numbers, is "
                 "where the token's residual stream starts.").format(**facts)
    if config.embed_scale != 1.0:
        return _("Each token id t picks its row of the embedding matrix E [{vocab} × {d}], multiplied by √d_model = "
                 "{scale}: a vector of d_model = {d} numbers. That vector is where the token's residual stream "
                 "starts.").format(**facts)
    return _("Each token id t picks its row of the embedding matrix E [{vocab} × {d}]: a vector of d_model = {d} "
             "numbers. That vector is where the token's residual stream starts.").format(**facts)


def norm_markdown(config: llm.LlamaConfig) -> str:
    """Step 3's sentence on the norm before each part (RMSNorm or LayerNorm), in the run's language."""
    if config.norm == "layer":
        return _("**LayerNorm** subtracts the stream's mean μ, divides by its standard deviation, then scales each "
                 "coordinate by a learned gain g and shifts it by a learned bias b:")
    return _("**RMSNorm** divides the stream by its root mean square, then scales each coordinate by a learned gain g:")


def norm_latex(config: llm.LlamaConfig) -> str:
    """Step 3's norm formula (RMSNorm or LayerNorm)."""
    if config.norm == "layer":
        return (r"\mathrm{LayerNorm}(x) = \frac{x - \mu}{\sqrt{\tfrac{1}{d}\sum_i (x_i - \mu)^2 + \varepsilon}} "
                r"\odot g + b")
    return r"\mathrm{RMSNorm}(x) = \frac{x}{\sqrt{\tfrac{1}{d}\sum_i x_i^2 + \varepsilon}} \odot g"


def attention_latex(config: llm.LlamaConfig) -> list[str]:
    """Step 3's attention write: the heads through W_o (+ b_o: gpt2), then RMSNorm (gemma3)."""
    last = str(config.n_heads - 1)
    bias = r" + b_o" if config.linear_bias else ""
    lines = [r"[o_0, \dots, o_{" + last + r"}]\, W_o" + bias + r" = \sum_h o_h\, W_o^{(h)}" + bias]
    if config.post_norms:
        lines.append(r"a_l = \mathrm{RMSNorm}\big([o_0, \dots, o_{" + last + r"}]\, W_o\big)")
    return lines


def attention_markdown(config: llm.LlamaConfig) -> str:
    """Step 3's sentence on the attention's write, in the run's language."""
    c = config
    facts = dict(heads=c.n_heads, dh=c.d_head, rows=c.n_heads * c.d_head, d=c.d_model)
    text = _("**Attention** concatenates its {heads} heads' outputs o_h (each {dh} numbers) and multiplies by W_o "
             "[{rows} × {d}]: head h writes through its own {dh} rows of W_o.").format(**facts)
    if c.linear_bias:
        text += " " + _("A learned bias b_o is added once to the sum, so it belongs to no head.")
    if c.post_norms:
        text += " " + _("Before the result joins the stream, one more RMSNorm with its own gain normalises it: a_l is "
                        "that normalised write.")
    return text


def mlp_markdown(config: llm.LlamaConfig) -> str:
    """Step 3's sentence on the MLP (SwiGLU, GEGLU or gpt2's GELU), in the run's language."""
    c = config
    facts = dict(d_ff=c.d_ff, d=c.d_model, norm=llm.norm_name(c))
    if c.mlp == "gelu":
        text = _("The **MLP** (GELU) reads u = {norm}(x_l + a_l), the stream after attention normalised again. It "
                 "widens u to d_ff = {d_ff} numbers (up = u W_up + b_up), lets gelu open or close each unit, giving "
                 "hidden = gelu(up), and projects hidden back to {d} numbers with W_down (+ b_down):").format(**facts)
    else:
        act = "silu" if c.mlp == "swiglu" else "gelu"
        text = _("The **MLP** ({kind}) reads u = {norm}(x_l + a_l), the stream after attention normalised again. It "
                 "widens u to d_ff = {d_ff} numbers twice (gate = u W_gate and up = u W_up), lets {act}(gate) open or "
                 "close each unit, giving hidden = {act}(u W_gate) ⊙ u W_up, and projects hidden back to {d} numbers "
                 "with W_down:").format(kind=llm.mlp_name(c), act=act, **facts)
    if c.post_norms:
        text += " " + _("then one more RMSNorm normalises that write: m_l is the normalised write.")
    return text


def mlp_latex(config: llm.LlamaConfig) -> list[str]:
    """Step 3's MLP formulas: the hidden units, the write (with its bias or post-norm), the activation."""
    c = config
    if c.mlp == "gelu":
        lines = [r"\mathrm{hidden} = \mathrm{gelu}(u W_{up} + b_{up})", r"m_l = \mathrm{hidden}\; W_{down} + b_{down}"]
    else:
        act = r"\mathrm{silu}" if c.mlp == "swiglu" else r"\mathrm{gelu}"
        lines = [r"\mathrm{hidden} = " + act + r"(u W_{gate}) \odot u W_{up}",
                 r"m_l = \mathrm{RMSNorm}(\mathrm{hidden}\; W_{down})" if c.post_norms else
                 r"m_l = \mathrm{hidden}\; W_{down}"]
    if c.mlp == "swiglu":
        lines.append(r"\mathrm{silu}(z) = \frac{z}{1 + e^{-z}}")
    else:  # GPT-2's and Gemma's GELU, the tanh approximation the core computes
        lines.append(r"\mathrm{gelu}(z) = \tfrac{z}{2}\Big(1 + \tanh\big(\sqrt{2/\pi}\,(z + 0.044715\, z^3)\big)"
                     r"\Big)")
    return lines


def rms_claim(b: Inside) -> str:
    """What RMS ``x / √(mean(x²) + ε)`` has (LayerNorm: ``(x − μ) / √(var(x) + ε)``), measured: just under 1 (ε is
    inside the root), and whether the difference shows at 4 significant digits."""
    if b.config.norm == "layer":
        centered = b.x - b.mean
        r = rms(centered / b.divisor)
        facts = dict(rms=i18n.significant(r, 4), var=i18n.significant(float(np.mean(centered ** 2)), 4))
        text = (_("(x − μ) / √(…) has RMS just under 1, because ε is added inside the root: here {rms} (var(x) = "
                  "{var}).") if i18n.significant(r, 4) != i18n.significant(1.0, 4) else
                _("(x − μ) / √(…) has RMS just under 1 (ε is added inside the root), here {rms} to four digits: "
                  "var(x) = {var} is large beside ε.")).format(**facts)
        return text + " " + _("The gain g and the bias b then set the scale and the offset each coordinate is read at.")
    r = rms(b.x / b.divisor)
    facts = dict(rms=i18n.significant(r, 4), ms=i18n.significant(float(np.mean(b.x ** 2)), 4))
    if i18n.significant(r, 4) != i18n.significant(1.0, 4):
        text = _("x / √(…) has RMS just under 1, because ε is added inside the root: here {rms} "
                 "(mean(x²) = {ms}).").format(**facts)
    else:
        text = _("x / √(…) has RMS just under 1 (ε is added inside the root), here {rms} to four digits: mean(x²) = "
                 "{ms} is large beside ε.").format(**facts)
    return text + " " + _("The gain g then sets the scale each coordinate is read at.")


def first_position_claim(m: Measured) -> str | None:
    """For a one-token prompt (the followed token is position 0): the first position is special, with its stream's
    norm measured here (the embedding's and the largest over the blocks, and their ratio); else ``None``."""
    if len(m.ids) > 1:
        return None
    s = m.stream_norms
    return _("The token followed here is at position 0, which is special: it can attend only to itself, and here its "
             "stream's ‖x‖ goes from {first} (the embedding) to as much as {peak}, {ratio} times as long (the first "
             "position is where attention sinks form). Type a longer prompt to follow an ordinary token.").format(
        first=norm_text(s[0]), peak=norm_text(s.max()), ratio=i18n.significant(s.max() / s[0], 3))


# --- check yourself ---------------------------------------------------------------------------------------------

CANCEL = {"less": N_("less"), "more": N_("more")}


def quiz_part(m: Measured) -> str:
    """The part (:data:`PARTS` key) the first question asks about: the one whose biggest write :func:`writes_claim`
    does not name (its sentence names the block of the longest single write)."""
    return "attention" if largest_write(m)[0] == "mlp" else "mlp"


def block_question(m: Measured) -> str:
    """The first question, on the part :func:`quiz_part` chooses, in the run's language."""
    return _("Which block's {part} write into the last token's stream is the longest?").format(
        part=_(PARTS[quiz_part(m)]))


def writes_total(m: Measured) -> float:
    """The norms of all the writes added up, ``Σ_l ‖a_l‖ + ‖m_l‖``."""
    return float(sum(v.sum() for v in m.write_norms.values()))


def answers(m: Measured) -> dict[str, object]:
    """The right answers: ``"part_block"``, the block whose :func:`quiz_part` writes most into the last token's
    stream; ``"cancel"``, whether ``‖x_L‖`` is ``"less"`` or ``"more"`` than :func:`writes_total`."""
    return {"part_block": int(m.write_norms[quiz_part(m)].argmax()),
            "cancel": "less" if m.stream_norms[-1] < writes_total(m) else "more"}


def grade(m: Measured, guesses: dict[str, object]) -> list[tuple[str, str | None, bool]]:
    """Each question: ``(answer shown, the learner's guess shown or None, right?)``, in the run's language."""
    rows = []
    for key, value in answers(m).items():
        guess = guesses.get(key)
        shown = (lambda v: _("block {b}").format(b=v)) if key == "part_block" else (lambda v: _(CANCEL[v]))
        rows.append((shown(value), None if guess is None else shown(guess), guess == value))
    return rows


def grade_claim(rows: list[tuple[str, str | None, bool]]) -> tuple[str, str]:
    """The grade of :func:`grade`'s rows: the callout kind and the sentence, in the run's language:
    ``"warning"`` with no guess at all, ``"success"`` when all are right, else ``"info"``."""
    if all(g is None for _a, g, _ok in rows):
        return "warning", _("Choose an answer first.")
    right = sum(ok for *_, ok in rows)
    return ("success" if right == len(rows) else "info"), _("**{right} of {total} right.**").format(
        right=right, total=len(rows))


def cancel_claim(m: Measured) -> str:
    """Why ``‖x_L‖`` is less (or more) than the writes' norms added up, with the numbers."""
    facts = dict(layers=len(m.streams) - 1, x=norm_text(m.stream_norms[-1]), total=norm_text(writes_total(m)),
                 first=norm_text(m.stream_norms[0]))
    if m.stream_norms[-1] < writes_total(m):
        return _("‖x_{layers}‖ = {x} is less than the writes' norms added up ({total}): the writes point in "
                 "different directions and partly cancel (‖a + b‖ ≤ ‖a‖ + ‖b‖).").format(**facts)
    return _("‖x_{layers}‖ = {x} is more than the writes' norms added up ({total}): the embedding (‖x₀‖ = {first}) "
             "adds its own length, and the writes cancel little.").format(**facts)
