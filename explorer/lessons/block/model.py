"""Inside one transformer block: the numbers of one forward pass and the claims the page makes (no Streamlit).

SmolLM2 is pre-norm: block ``l`` reads the residual stream ``x_l`` through an RMSNorm, attention writes
``a_l = concat_h(o_h) W_o`` into it, then the MLP reads the sum through a second RMSNorm,
``u = RMSNorm(x_l + a_l)``, and writes ``m_l = (silu(u W_gate) ⊙ u W_up) W_down``: ``x_{l+1} = x_l + a_l + m_l``.
Everything comes from the core's one forward pass (:func:`explorer.shell.llm.forward` with its activations); one block's
inside (the RMSNorm's divisor, each head's share of ``a_l``, the MLP's gate and up) is recomputed here from that block's
weights and the core's ``rms_norm`` and ``silu`` (``tests/lessons/block/test_model.py`` checks it reproduces the core's
numbers).

Sources: RMSNorm, Zhang & Sennrich (2019); SwiGLU, Shazeer (2020); pre-norm residual blocks, Xiong et al. (2020);
perplexity as exp of the mean cross-entropy, Jurafsky & Martin, "Speech and Language Processing", 3rd ed., 3.2.1.
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
    """One block's inside at the last token (float64 ``[d]`` vectors; norms are Euclidean, RMS = norm / √d).

    Attributes:
        layer: the block. x: the stream entering it. divisor: ``√(mean(x²) + ε)``. normed: ``rms_norm(x, g₁)``.
        gain: ``g₁``. head_writes: ``[n_heads, d]`` each head's ``o_h W_o[h]``; attn: their sum.
        mid: ``x + attn``. gate, up: ``rms_norm(mid, g₂) W_gate``, ``… W_up`` ``[d_ff]``; hidden:
        ``silu(gate) ⊙ up``; mlp: ``hidden W_down``.
    """

    layer: int
    x: np.ndarray
    divisor: float
    gain: np.ndarray
    normed: np.ndarray
    head_writes: np.ndarray
    attn: np.ndarray
    mid: np.ndarray
    gate: np.ndarray
    up: np.ndarray
    hidden: np.ndarray
    mlp: np.ndarray

    @property
    def head_norms(self) -> np.ndarray:
        """``[n_heads]``, ``‖o_h W_o[h]‖`` of each head's part."""
        return np.linalg.norm(self.head_writes, axis=1)

    @property
    def attn_norm(self) -> float:
        """``‖a_l‖``, the norm of the attention write."""
        return float(np.linalg.norm(self.attn))


def norm_text(v: float) -> str:
    """A stream's norm as every sentence of the page writes it (4 significant digits: one precision per quantity)."""
    return i18n.significant(float(v), 4)


def rms(v) -> float:
    """The root mean square of a vector, in float64."""
    v = np.asarray(v, dtype=np.float64)
    return float(np.sqrt(np.mean(v * v)))


def inside(_model: llm.LlamaModel, ids: tuple[int, ...], layer: int, _measure) -> Inside:
    """Block ``layer`` recomputed from its weights (:meth:`LlamaModel.block_weights`) on the last token's stream
    (``_measure``: :func:`measure` or its cached binding, not hashed).

    Raises:
        ValueError: ``layer`` out of range; bad ``ids`` (as :func:`measure`).
    """
    w, m = _model.block_weights(layer), _measure(_model, ids)
    x, dh = m.streams[layer], _model.config.d_head
    normed = llm.rms_norm(x, w.attn_norm, m.eps)
    head_writes = np.stack([m.heads[layer, h] @ w.W_o[h * dh:(h + 1) * dh] for h in range(len(m.heads[layer]))])
    attn = m.heads[layer].reshape(-1) @ w.W_o  # the concatenation times W_o, as the core multiplies
    mid = x + attn
    g = llm.rms_norm(mid, w.ffn_norm, m.eps)
    gate, up = g @ w.W_gate, g @ w.W_up
    hidden = llm.silu(gate) * up
    x64, *rest = (np.asarray(a, dtype=np.float64) for a in (x, w.attn_norm, normed, head_writes, attn, mid, gate, up,
                                                             hidden, hidden @ w.W_down))
    return Inside(layer, x64, float(np.sqrt(np.mean(x64 ** 2) + m.eps)), *rest)


def inside_rows(b: Inside, eps: float) -> list[tuple[str, str, float]]:
    """The block's numbers as ``(step, quantity, value)`` rows, in the run's language (a small table)."""
    d_ff = len(b.gate)
    norm, att, mlp = _("RMSNorm before attention"), _("attention"), _("MLP (SwiGLU)")
    return [(norm, _("RMS of the stream x"), rms(b.x)), (norm, "ε", eps),
            (norm, _("divides by √(mean(x²) + ε)"), b.divisor), (norm, _("RMS of x / √(…)"), rms(b.x / b.divisor)),
            (norm, _("RMS of the learned scale g"), rms(b.gain)),
            (norm, _("RMS after: x / √(…) ⊙ g"), rms(b.normed)),
            (att, _("heads (each its own rows of W_o)"), float(len(b.head_writes))),
            (att, _("‖write‖ = ‖concat(o) W_o‖"), b.attn_norm)] + [
        (att, _("‖head {h}'s part‖").format(h=h), float(v)) for h, v in enumerate(b.head_norms)] + [
            (mlp, _("d_ff (width of gate and up)"), float(d_ff)), (mlp, _("‖gate‖"), float(np.linalg.norm(b.gate))),
            (mlp, _("‖up‖"), float(np.linalg.norm(b.up))),
            (mlp, "‖hidden‖ = ‖silu(gate) ⊙ up‖", float(np.linalg.norm(b.hidden))),  # symbols: every language
            (mlp, _("share of units with gate > 0"), float(np.mean(b.gate > 0))),
            (mlp, _("‖write‖ = ‖hidden W_down‖"), float(np.linalg.norm(b.mlp)))]


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


def tied_claim(tied: bool | None, vocab: int, d_model: int) -> str:
    """Whether the unembedding is the embedding matrix (measured from the file: it has no ``output.weight``)."""
    if tied is None:
        return _("The weights file could not be read again, so this page does not say whether the output matrix "
                 "is E itself.")
    if tied:
        return _("The file has no separate output matrix: the same E [{vocab} × {d}] that turned tokens into vectors "
                 "turns the last vector into {vocab} logits (tied embeddings).").format(vocab=i18n.integer(vocab),
                                                                                         d=d_model)
    return _("The file has its own output matrix W_U [{vocab} × {d}] (the embeddings are not tied): logits = "
             "RMSNorm(x) W_Uᵀ.").format(vocab=i18n.integer(vocab), d=d_model)


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


def pre_norm_claim(model_name: str, n_layers: int) -> str:
    """How the blocks of a pre-norm model (the Llama family the core runs) add to the stream."""
    return _("{model} is **pre-norm**: each part reads a normalised copy of the stream, and its output is *added* "
             "to the stream, never replaces it. After {layers} blocks, x_{layers} = x₀ + Σ (a_l + m_l): the embedding "
             "plus everything every block wrote. The chart follows the last token (the one whose next token is "
             "predicted).").format(model=model_name, layers=n_layers)


def rms_claim(b: Inside) -> str:
    """What RMS ``x / √(mean(x²) + ε)`` has, measured: just under 1 (ε is inside the root), and whether the
    difference shows at 4 significant digits."""
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
