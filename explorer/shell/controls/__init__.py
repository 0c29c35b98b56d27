"""Controls: the shared sidebar, the lessons' declared controls, and the link values they read.

Four modules, one idea each:

- :mod:`~explorer.shell.controls.link_values`: reading, checking, correcting and warning about a link's values
  (:func:`link_number`, :func:`refuse_unusable`, :func:`correct_link`, :func:`check_link`,
  :func:`show_link_warnings`, :func:`set_value`, :func:`keep_in_range`).
- :mod:`~explorer.shell.controls.declare`: controls declared as data in each lesson's package
  (:class:`Slider`, :class:`NumberInput`, :class:`Toggle`, :class:`Expander`, :class:`Options`, :class:`Choice`,
  :class:`Text`, :class:`Heads`, :class:`TokenPicker`; :func:`declare`), drawn with :func:`draw`, links built
  with :func:`link`; and the one binder per widget they draw with.
- :mod:`~explorer.shell.controls.state`: a page's own state between runs (:func:`last_valid`, :func:`edition`,
  :func:`next_edition`, :func:`reset`), so that no page writes ``st.session_state`` itself.
- :mod:`~explorer.shell.controls.sidebar`: the shared controls (:data:`SHARED`), the language, the "not used
  here" notes (:func:`not_used`), :func:`fragment`, and the shared settings pages read.

Pages import the package (``from explorer.shell import controls``) and use the names below.
"""

from explorer.shell.controls.declare import (
    Choice,
    Control,
    Ctx,
    Expander,
    Heads,
    Number,
    NumberInput,
    Options,
    Outcome,
    Slider,
    Text,
    Toggle,
    TokenPicker,
    declare,
    draw,
    link,
    value,
)
from explorer.shell.controls.link_values import (
    REPEATABLE,
    SHOWN_CHARS,
    _code,
    _shown,
    check_link,
    correct_link,
    keep_in_range,
    link_number,
    link_value,
    one_of,
    refuse_unusable,
    retired_link_key,
    set_value,
    show_link_warnings,
)
from explorer.shell.controls.sidebar import (
    COLOR_SCALE_DEFAULT,
    COLOR_SCALE_NAMES,
    D_K_RANGE,
    D_MODEL_RANGE,
    DEFAULTS,
    EMBEDDING_LABELS,
    EMBEDDING_NAMES,
    NUMBER_RANGES,
    SEED_MAX,
    SENTENCE_MAX_CHARS,
    SENTENCE_TWINS,
    SHARED,
    Shared,
    color_scale,
    fragment,
    language_control,
    lesson_settings,
    not_used,
    sentence_input,
    sentence_steps,
    shared,
    sidebar_controls,
)
from explorer.shell.controls.state import edition, last_valid, next_edition, reset

__all__ = [
    "COLOR_SCALE_DEFAULT", "COLOR_SCALE_NAMES", "D_K_RANGE", "D_MODEL_RANGE", "DEFAULTS", "EMBEDDING_LABELS",
    "EMBEDDING_NAMES", "NUMBER_RANGES", "REPEATABLE", "SEED_MAX", "SENTENCE_MAX_CHARS", "SENTENCE_TWINS", "SHARED",
    "SHOWN_CHARS", "Choice", "Control", "Ctx", "Expander", "Heads", "Number", "NumberInput", "Options", "Outcome",
    "Shared", "Slider", "Text", "Toggle", "TokenPicker", "_code", "_shown", "check_link", "color_scale",
    "correct_link", "declare", "draw", "edition", "fragment", "keep_in_range", "language_control", "last_valid",
    "lesson_settings", "link", "link_number", "link_value", "next_edition", "not_used", "one_of", "refuse_unusable",
    "reset", "retired_link_key", "sentence_input", "sentence_steps", "set_value", "shared", "show_link_warnings",
    "sidebar_controls", "value",
]
