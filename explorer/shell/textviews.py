"""Text views of attention: the lesson's ASCII heat map, weighted sums, number formatting.

Pure functions (no Streamlit); the output is plain text or LaTeX, safe to copy. Numbers in sentences follow the
run's language (:mod:`explorer.shell.i18n`); numbers in formulas do not.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

from explorer.shell import i18n

_, _n = i18n.translator(__name__)

ASCII_LEVELS = " ░▒▓█"


def fmt(x: float, digits: int = 4) -> str:
    """A number as a learner should read it in a sentence: fixed decimals and the run's decimal mark
    (``0.1235``, ``0,1235`` in pt and tr: :func:`explorer.shell.i18n.number`), ``-0`` shown as ``0``, never
    ``nan``. Inside a formula or code use :func:`fmt_formula` (always ``.``)."""
    return i18n.number(x, digits)


def fmt_formula(x: float, digits: int = 4) -> str:
    """:func:`fmt` for LaTeX and code: fixed decimals with ``.`` in every language (``-0`` as ``0``, ``—`` for NaN)."""
    return i18n.number(x, digits, lang=i18n.DEFAULT)


def integer_formula(n: int) -> str:
    r"""A whole number for LaTeX, grouped by thin spaces in every language (``46\,080``, SI/ISO 80000-1 style):
    a comma would read as a decimal mark in pt and tr, a dot as one in en."""
    return f"{int(n):,}".replace(",", r"\,")


def number_list(values, digits: int = 4) -> str:
    """Numbers listed in a sentence, in the run's language: ``2.1, 0.3`` / ``2,1; 0,3`` (:func:`fmt` each,
    :func:`explorer.shell.i18n.list_separator` between them)."""
    return i18n.list_separator().join(fmt(float(x), digits) for x in values)


def latex_words(message: str, **math: str) -> str:
    r"""A message (already in the run's language) as LaTeX: its words in ``	ext{…}`` (escaped), each
    ``{placeholder}`` replaced by the LaTeX given for it, so a formula translates only its words:
    ``latex_words(_("query {i} may attend to key {j}"), i="i", j="j")``."""
    parts = re.split(r"\{(\w+)\}", message)
    return "".join(math[p] if i % 2 else (rf"\text{{{latex_text(p)}}}" if p else "") for i, p in enumerate(parts))


def code_span(text: str) -> str:
    """``text`` as one Markdown code span, shown literally (no emphasis, link, image, heading, HTML, LaTeX or emoji can
    come from a visitor's text): the fence is one backtick longer than the longest run of backticks inside
    (``code_span("a`b") == "``a`b``"``); a space pads an empty text and one that starts or ends with a backtick or a
    space."""
    fence = "`" * (max((len(run) for run in re.findall(r"`+", text)), default=0) + 1)
    pad = " " if not text or text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


MARKDOWN_SPECIALS = re.compile(r"([\\`*_\[\]<>$~|])")


def md_escape(text: str) -> str:
    """``text`` (a model's name from its file, say) inside a sentence, with the characters that start Markdown
    emphasis, code, links, HTML, LaTeX or tables backslash-escaped, so the prose around it shows it as plain text:
    ``md_escape("a*b_$c") == "a\\*b\\_\\$c"``."""
    return MARKDOWN_SPECIALS.sub(r"\\\1", text)


def md_code(text: str, limit: int | None = 30) -> str:
    """:func:`code_span` of ``text`` with runs of white space made one space and shortened to ``limit`` characters
    (``…`` added; ``None``: never)."""
    s = " ".join(str(text).split())
    return code_span(s if limit is None or len(s) <= limit else s[:limit] + "…")


def _indices(n_or_indices) -> Iterable[int]:
    return range(n_or_indices) if isinstance(n_or_indices, int | np.integer) else n_or_indices


def dim_labels(columns) -> list[str]:
    """``["dim 0", "dim 1", …]`` in the run's language (``boyut 0`` in tr): the labels of a vector's components, for
    ``columns`` components or the given component indices (``dim_labels([0, 8, 16])`` for a sampled axis)."""
    return [_("dim {j}").format(j=int(j)) for j in _indices(columns)]


def layer_labels(layers) -> list[str]:
    """``["layer 0", "layer 1", …]`` in the run's language (``camada 0``, ``katman 0``): a layer × head table's row
    labels, for ``layers`` layers or the given layer indices."""
    return [_("layer {i}").format(i=int(i)) for i in _indices(layers)]


def head_labels(heads) -> list[str]:
    """``["head 0", "head 1", …]`` in the run's language (``cabeça 0``, ``kafa 0``): a layer × head table's column
    labels, or a grid's panel titles, for ``heads`` heads or the given head indices."""
    return [_("head {h}").format(h=int(h)) for h in _indices(heads)]


def tokens_count(n: int) -> str:
    """``"1 token"``, ``"12 tokens"`` in the run's language: the one plural of "token" every lesson's sentences use."""
    return _n("{n} token", "{n} tokens", n).format(n=n)


def duration(seconds: float) -> str:
    """A duration in words for an estimate, in the run's language: ``"under a second"``, ``"about 12 s"``,
    ``"about 3 min"`` (whole minutes from 90 s on)."""
    if seconds < 1:
        return _("under a second")
    if seconds < 90:
        return _("about {n} s").format(n=i18n.integer(round(seconds)))
    return _("about {n} min").format(n=i18n.integer(round(seconds / 60)))


def passes_time(passes: float, seconds: float) -> str:
    """What ``passes`` forward passes of the model take here, in words (:func:`duration`): ``seconds`` is one pass
    of the same tokens timed on this server (:attr:`explorer.shell.llm.Run.seconds`)."""
    return duration(passes * seconds)


def ascii_heatmap(weights: np.ndarray, tokens) -> str:
    """The lesson's ASCII heat map: one character per weight, level = ``weight * 4 / max weight``.

    Rows are queries, columns keys, in token order; characters `` ░▒▓█``.
    """
    w = np.asarray(weights, dtype=float)
    top = w.max() if w.size and w.max() > 0 else 1.0
    width = max((len(t) for t in tokens), default=1)
    lines = [" " * (width + 1) + " ".join(t[:1] for t in tokens)]
    for tok, row in zip(tokens, w, strict=True):
        cells = " ".join(ASCII_LEVELS[min(4, int(v * 4 / top))] for v in row)
        lines.append(f"{tok:>{width}} {cells}")
    return "\n".join(lines)


_LATEX_ESCAPES = {"\\": r"\textbackslash{}", "^": r"\^{}", "~": r"\~{}", **{ch: "\\" + ch for ch in "{}$&#%_"}}


def latex_text(s: str) -> str:
    r"""``s`` as a LaTeX ``\text{}`` body, with every special character escaped; a character KaTeX's fonts lack (an
    emoji) or one that does not print becomes ``?``, so the formula still renders."""
    return "".join(_LATEX_ESCAPES.get(ch) or ("?" if ord(ch) > 0xFFFF or not ch.isprintable() else ch) for ch in s)


def weighted_sum_latex(query_label: str, weights: np.ndarray, values: np.ndarray, output: np.ndarray,
                       digits: int = 3, max_terms: int = 8) -> str:
    r"""``out_i = Σ_j w_ij v_j`` written out with the actual numbers (LaTeX, one term per line).

    Args:
        query_label: the query's label (escaped here).
        weights: ``[n_k]`` the query's attention weights.
        values: ``[n_k, d_v]`` the value vectors.
        output: ``[d_v]`` the query's output row.

    Shows at most ``max_terms`` terms (the largest weights, in key order), at most six
    components per vector, and says how much is left out.
    """
    w = np.asarray(weights, dtype=float)
    values = np.asarray(values, dtype=float)
    keep = sorted(np.argsort(-w, kind="stable")[:max_terms])

    def vec(x) -> str:
        body = r",\ ".join(fmt_formula(v, digits) for v in x[:6])
        more = r",\ \dots" if len(x) > 6 else ""
        return rf"\left[{body}{more}\right]"

    lines = [rf"\text{{out}}_{{\text{{{latex_text(query_label)}}}}} &= \sum_j w_{{ij}}\, v_j \\"]
    for n, j in enumerate(keep):
        op = "=" if n == 0 else "+"
        lines.append(rf"&{op}\ {fmt_formula(w[j], digits)} \cdot {vec(values[j])}_{{v_{{{j}}}}} \\")
    rest = len(w) - len(keep)
    if rest:
        left_out = latex_text(_n("{n} smaller term", "{n} smaller terms", rest).format(n=rest))
        lines.append(rf"&+\ \dots\ (\text{{{left_out}}}) \\")
    lines.append(rf"&= {vec(np.asarray(output, dtype=float))}")
    return "\\begin{aligned}" + "\n".join(lines) + "\\end{aligned}"
