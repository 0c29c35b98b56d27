"""Arrays for the "attention as a soft lookup" page (pure: no Streamlit, no Plotly): the page edits a small key ->
value table (key name, 2-D key vector, value name, 2-D value vector), validates it with :func:`parse_table`, and
draws what :func:`lookup_scenario` computes from it with ``attention.lookup``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

import attention as A
from explorer.lessons.walkthrough.model import parse_cell
from explorer.shell import i18n
from explorer.shell.i18n import N_, translator
from explorer.shell.textviews import md_code

_, _n = translator(__name__)

# Column ids of the editable table (what st.data_editor and its edit state use).
KEY, K1, K2, VALUE, V1, V2 = "key", "k1", "k2", "value", "v1", "v2"
COLUMNS = (KEY, K1, K2, VALUE, V1, V2)
KEY_COLS, VALUE_COLS = (K1, K2), (V1, V2)
NUMBER_COLUMNS = (*KEY_COLS, *VALUE_COLS)
COLUMN_LABELS = {KEY: N_("key"), K1: "k1", K2: "k2", VALUE: N_("value"), V1: "v1", V2: "v2"}
"""Column id -> its header on the page (the words are messages: shown with ``_(COLUMN_LABELS[c])``)."""
NUMBER_LIMIT = 1000.0  # |every number| <= this, so q · k * sharpness stays far from overflow
MAX_ROWS = 12
QUERY_LIMIT = 5.0  # the query sliders run from -QUERY_LIMIT to +QUERY_LIMIT
QUERY_STEP = 0.01

# The default table: countries (keys, 2-D vectors of length ~2 at different angles, so
# each key matches itself best) and their capitals (values: longitude, latitude in degrees, so the
# value plane reads like a map: east to the right, north up). The names are messages: in Portuguese and Turkish
# the page starts from the same rows with the names in that language (default_rows; the numbers are the same).
DEFAULT_ROWS: tuple[dict, ...] = (
    {KEY: N_("France"), K1: 1.73, K2: 1.0, VALUE: N_("Paris"), V1: 2.4, V2: 48.9},
    {KEY: N_("Germany"), K1: 1.0, K2: 1.73, VALUE: N_("Berlin"), V1: 13.4, V2: 52.5},
    {KEY: N_("Spain"), K1: 2.0, K2: 0.0, VALUE: N_("Madrid"), V1: -3.7, V2: 40.4},
    {KEY: N_("Italy"), K1: -0.35, K2: 1.97, VALUE: N_("Rome"), V1: 12.5, V2: 41.9},
    {KEY: N_("Japan"), K1: -1.88, K2: -0.68, VALUE: N_("Tokyo"), V1: 139.7, V2: 35.7},
    {KEY: N_("Brazil"), K1: 0.35, K2: -1.97, VALUE: N_("Brasília"), V1: -47.9, V2: -15.8},
)
DEFAULT_PRESETS = {  # a default row's key (English) -> the name of its own query (a message)
    "France": N_("capital of France"), "Germany": N_("capital of Germany"), "Spain": N_("capital of Spain"),
    "Italy": N_("capital of Italy"), "Japan": N_("capital of Japan"), "Brazil": N_("capital of Brazil"),
}
DEFAULT_QUERY = (1.73, 1.0)  # "capital of France": France's key

D_K = len(KEY_COLS)
LESSON_SHARPNESS = 1 / math.sqrt(D_K)  # the transformer's 1/sqrt(d_k) for 2-D keys
SHARPNESS_OPTIONS: tuple[float, ...] = (
    0.0, 0.001, 0.01, 0.1, 0.3, LESSON_SHARPNESS, 1.0, 2.0, 3.0, 5.0, 10.0, 30.0, 100.0,
    1e3, 1e4, 1e5, 1e6,
)
SWEEP = np.concatenate([[0.0], np.logspace(-3, 6, 181)])  # sharpness values of the sweep picture


def sharpness_label(s: float) -> str:
    """How a sharpness option is written (on the slider and in the link): ``0``, ``0.3``, ``1e+06``."""
    if s == LESSON_SHARPNESS:
        return "0.707 = 1/√d_k"
    if s == 0:
        return "0"
    return f"{s:g}"


def sharpness_latex(s: float) -> str:
    """A sharpness for ``st.latex``: ``0.707`` or ``10^{6}`` (never ``1e+06``)."""
    label = sharpness_label(s).split()[0]
    if "e" in label:
        mantissa, exponent = label.split("e")
        power = rf"10^{{{int(exponent)}}}"
        return power if float(mantissa) == 1 else rf"{mantissa} \times {power}"
    return label


@dataclass(frozen=True)
class LookupTable:
    """A validated table: ``m`` rows, key vectors ``[m, 2]``, value vectors ``[m, 2]`` (tuples, hashable)."""

    key_labels: tuple[str, ...]
    keys: tuple[tuple[float, ...], ...]
    value_labels: tuple[str, ...]
    values: tuple[tuple[float, ...], ...]

    @property
    def m(self) -> int:
        return len(self.keys)

    @property
    def row_labels(self) -> list[str]:
        """``"France → Paris"`` per row (key, then the value it hands over)."""
        return [f"{k} → {v}" for k, v in zip(self.key_labels, self.value_labels, strict=True)]


def _table_of(rows: Sequence[Mapping]) -> LookupTable:
    return LookupTable(tuple(r[KEY] for r in rows), tuple((r[K1], r[K2]) for r in rows),
                       tuple(r[VALUE] for r in rows), tuple((r[V1], r[V2]) for r in rows))


DEFAULT_TABLE = _table_of(DEFAULT_ROWS)
"""The default table with its English names (the numbers of every language's default table)."""


def default_rows() -> tuple[dict, ...]:
    """:data:`DEFAULT_ROWS` with the key and value names in the run's language (the same numbers)."""
    return tuple({**r, KEY: _(r[KEY]), VALUE: _(r[VALUE])} for r in DEFAULT_ROWS)


def default_table() -> LookupTable:
    """:data:`DEFAULT_TABLE` with the names in the run's language (:func:`default_rows`)."""
    return _table_of(default_rows())


@dataclass(frozen=True)
class TableCheck:
    """Result of :func:`parse_table`: a table (``None`` when something is wrong) and the problems."""

    table: LookupTable | None
    problems: tuple[str, ...]
    n_empty_rows: int = 0


def _blank(cell) -> bool:
    if cell is None:
        return True
    if isinstance(cell, str):
        return not cell.strip()
    return isinstance(cell, float | np.floating) and math.isnan(cell)


def parse_table(rows: Sequence[Mapping]) -> TableCheck:
    """Validate the edited table (one mapping per row, columns ``key, k1, k2, value, v1, v2``): a
    :class:`TableCheck` with the table, or ``None`` and one message per problem (empty table, too many rows, a blank
    or bad number cell (:func:`~explorer.lessons.walkthrough.model.parse_cell`), duplicate key vectors or names),
    each naming the row (0-based, as every position in the app) and the column. Rows whose every cell is blank (a
    row just added) are skipped and counted.
    """
    problems: list[str] = []
    good: list[dict] = []  # the rows without a problem: their names, their numbers and their row number
    n_empty = 0
    for r, row in enumerate(rows):
        cells = {c: row.get(c) for c in COLUMNS}
        if all(_blank(v) for v in cells.values()):
            n_empty += 1
            continue
        row_problems = []
        for col, message in ((KEY, _("row {row}, column {column} is blank: every row needs a key name")),
                             (VALUE, _("row {row}, column {column} is blank: every row needs a value name"))):
            if _blank(cells[col]):
                row_problems.append(message.format(row=r, column=md_code(_(COLUMN_LABELS[col]))))
        nums = {}
        for cols, blank in ((KEY_COLS, _("row {row}, column {column} is blank — every key needs {n} numbers "
                                         "({columns})")),
                            (VALUE_COLS, _("row {row}, column {column} is blank — every value needs {n} numbers "
                                           "({columns})"))):
            for col in cols:
                x, err = (None, None) if _blank(cells[col]) else parse_cell(cells[col], NUMBER_LIMIT)
                if x is not None:
                    nums[col] = x
                    continue
                cell = dict(row=r, column=md_code(col))
                row_problems.append(blank.format(**cell, n=len(cols), columns=", ".join(cols)) if err is None else
                                    _("row {row}, column {column} {problem}").format(**cell, problem=err))
        problems += row_problems
        if not row_problems:
            good.append({KEY: str(cells[KEY]).strip(), VALUE: str(cells[VALUE]).strip(), **nums, "row": r})
    n_rows = len(rows) - n_empty
    if n_rows == 0:
        problems.append(_("The table is empty: add at least one row (a key name, k1, k2, a value name, v1, v2)."))
    elif n_rows > MAX_ROWS:
        problems.append(_("The table has {n} rows; use at most {max} so the pictures stay readable.").format(
            n=n_rows, max=MAX_ROWS))
    first_key: dict[tuple[float, ...], int] = {}
    first_name: dict[str, int] = {}
    sep = i18n.list_separator()  # between two numbers that may hold a decimal comma
    for g in good:
        r, key = g["row"], tuple(g[c] for c in KEY_COLS)
        if (first := first_key.setdefault(key, r)) != r:
            problems.append(_("rows {first} and {other} have the same key vector ({vector}): a lookup table needs "
                              "distinct keys").format(first=first, other=r,
                                                      vector=sep.join(i18n.general(x, 6) for x in key)))
        if (first := first_name.setdefault(g[KEY], r)) != r:
            problems.append(_("rows {first} and {other} have the same key name {name}: give every key its own "
                              "name").format(first=first, other=r, name=md_code(g[KEY])))
    return TableCheck(None, tuple(problems), n_empty) if problems else TableCheck(_table_of(good), (), n_empty)


def _on_grid(x: float) -> float:
    """A coordinate as the query sliders can hold it: clipped to ±QUERY_LIMIT, on the 0.01 grid."""
    return round(min(QUERY_LIMIT, max(-QUERY_LIMIT, x)), 2) + 0.0  # + 0.0: no -0.0


def presets(table: LookupTable) -> dict[str, tuple[float, float]]:
    """Named queries for the table: ``{name: (x, y)}``.

    One per row (the row's own key: "capital of France" for the default rows,
    "look up <key>" otherwise), "halfway between" the first two keys (a tie
    when their keys are equally long, as France and Germany are), and the zero
    query (every key scores 0: uniform weights at any sharpness). The names are
    in the run's language (a default row: with its names in that language).
    """
    default_names = {(_(r[KEY]), _(r[VALUE])): _(DEFAULT_PRESETS[r[KEY]]) for r in DEFAULT_ROWS}
    out: dict[str, tuple[float, float]] = {}
    for label, value, key in zip(table.key_labels, table.value_labels, table.keys, strict=True):
        name = default_names.get((label, value)) or _("look up {key}").format(key=label)
        out.setdefault(name, (_on_grid(key[0]), _on_grid(key[1])))
    if table.m >= 2:
        (a, b), (la, lb) = table.keys[:2], table.key_labels[:2]
        mid = ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)
        out.setdefault(_("halfway between {a} and {b}").format(a=la, b=lb), (_on_grid(mid[0]), _on_grid(mid[1])))
    out.setdefault(_("the zero query (0, 0)"), (0.0, 0.0))
    return out


@dataclass(frozen=True)
class LookupScenario:
    """Everything the page draws for one table, query and sharpness (float64).

    Attributes:
        query: ``[2]``. keys, values: ``[m, 2]``. scores: ``q · k_j`` ``[m]``; scaled: ``sharpness * scores``.
        weights, blend: the soft lookup ``[m]``, ``[2]``. hard: the database lookup (:class:`attention.HardLookup`).
        nearest: row of the value nearest to the blend. gap: Euclidean distance from the blend to the database's value.
        exact: row whose key equals the query exactly (the database's "exact match"), else ``None``.
        batch_labels: ``["your query", "capital of France", ...]`` ``[n_q]``; batch_queries: ``[n_q, 2]`` (your
            query, then every row's key); batch_weights, batch_hard: the attention matrix and the database's one-hot
            matrix ``[n_q, m]``; batch_blends: ``[n_q, 2]``.
        sweep: sharpness grid ``[s]``; sweep_weights ``[s, m]``; sweep_gap ``[s]``: the blend's distance to hard.value.
    """

    query: np.ndarray
    keys: np.ndarray
    values: np.ndarray
    sharpness: float
    scores: np.ndarray
    scaled: np.ndarray
    weights: np.ndarray
    blend: np.ndarray
    hard: A.HardLookup
    nearest: int
    gap: float
    exact: int | None
    batch_labels: tuple[str, ...]
    batch_queries: np.ndarray
    batch_weights: np.ndarray
    batch_blends: np.ndarray
    batch_hard: np.ndarray
    sweep: np.ndarray
    sweep_weights: np.ndarray
    sweep_gap: np.ndarray


def lookup_scenario(table: LookupTable, query: tuple[float, float], sharpness: float) -> LookupScenario:
    """Run both lookups of ``query`` on ``table`` at ``sharpness`` (plus the batch and the sweep).

    Raises:
        ValueError: from ``attention.lookup`` (cannot happen for a table from :func:`parse_table`).
    """
    q = np.asarray(query, dtype=np.float64)  # [2]
    K = np.asarray(table.keys, dtype=np.float64)  # [m, 2]
    V = np.asarray(table.values, dtype=np.float64)  # [m, 2]
    scores = A.similarities(q, K)  # [m]
    soft = A.soft_lookup(q, K, V, sharpness)
    hard = A.hard_lookup(q, K, V)
    batch_labels = (_("your query"), *list(presets(table))[: table.m])
    Qb = np.vstack([q[None, :], K])  # [1 + m, 2]: your query, then each row's own key
    bw, bo = A.soft_lookup_batch(Qb, K, V, sharpness)  # [1 + m, m], [1 + m, 2]
    hw, _hard_out = A.hard_lookup_batch(Qb, K, V)  # [1 + m, m]
    sw, sb = A.sharpness_sweep(q, K, V, SWEEP)  # [s, m], [s, 2]
    return LookupScenario(
        query=q, keys=K, values=V, sharpness=float(sharpness), scores=scores, scaled=scores * sharpness,
        weights=soft.weights, blend=soft.blend, hard=hard, nearest=A.nearest_value(soft.blend, V),
        gap=float(np.linalg.norm(soft.blend - hard.value)),
        exact=next((j for j in range(table.m) if np.array_equal(K[j], q)), None),
        batch_labels=batch_labels, batch_queries=Qb, batch_weights=bw, batch_blends=bo, batch_hard=hw,
        sweep=SWEEP, sweep_weights=sw, sweep_gap=np.linalg.norm(sb - hard.value[None, :], axis=-1),
    )


def blend_claim(weights: np.ndarray, m: int) -> str:
    """What the soft lookup's ``weights`` (``[m]``, summing to 1) make of the answer: a blend of all ``m`` values, or
    (the best key above 0.999) the database's answer, in the run's language."""
    top = float(np.max(weights))
    return (_("Every key gets a share; the answer is a blend of all {m} values.").format(m=m) if top < 0.999 else
            _("At this sharpness the best key takes {percent} of the weight: the blend has become the "
              "database's answer.").format(percent=i18n.percent(top, 2)))


def table_rows(lang: str) -> list[dict[str, str]]:
    """The table editor's default rows in ``lang``: the names in that language and every number as text, as
    written in it (``1,73`` in pt and tr; :func:`parse_table` reads both).

    The number columns are text columns holding the numbers as written: a number column would turn text typed into
    it into a blank cell, and the learner would be told "blank" instead of "not a number" (issue 18, item 12);
    :func:`parse_table` reads and checks every cell.
    """
    with i18n.using(lang):
        return [{c: i18n.general(v, 6) if c in NUMBER_COLUMNS else v for c, v in row.items()} for row in default_rows()]


def column_texts(lang: str) -> dict[str, tuple[str, str]]:
    """Each column's header and help text in ``lang`` (the table editor's column settings), by column id."""
    with i18n.using(lang):
        limit = i18n.general(NUMBER_LIMIT, 6)
        helps = {
            KEY: _("The key's name: what the database matches."),
            K1: _("Key vector, first number (a number from −{limit} to {limit}).").format(limit=limit),
            K2: _("Key vector, second number (a number from −{limit} to {limit}).").format(limit=limit),
            VALUE: _("The value's name: what is handed over."),
            V1: _("Value vector, first number (default: longitude; a number from −{limit} to {limit}).").format(
                limit=limit),
            V2: _("Value vector, second number (default: latitude; a number from −{limit} to {limit}).").format(
                limit=limit),
        }
        return {c: (_(COLUMN_LABELS[c]), helps[c]) for c in COLUMNS}
