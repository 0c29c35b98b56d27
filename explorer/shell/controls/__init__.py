"""Controls: the shared sidebar (:mod:`.sidebar`), the lessons' declared controls (:mod:`.declare`), the link values
they read (:mod:`.link_values`) and a page's own state between runs (:mod:`.state`). Pages import the package
(``from explorer.shell import controls``) and use the names below."""

from explorer.shell.controls.declare import (
    Choice,
    Control,
    Ctx,
    Expander,
    Heads,
    Number,
    NumberInput,
    Options,
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
    SHOWN_CHARS,
    _shown,
    check_link,
    link_number,
    link_value,
    retired_link_key,
    set_value,
    show_link_warnings,
)
from explorer.shell.controls.sidebar import (
    DEFAULTS,
    SEED_MAX,
    SENTENCE_MAX_CHARS,
    SENTENCE_TWINS,
    SHARED,
    color_scale,
    fragment,
    language_control,
    lesson_settings,
    not_used,
    sentence_steps,
    shared,
    sidebar_controls,
)
from explorer.shell.controls.state import edition, last_valid, next_edition, reset

__all__ = [
    "DEFAULTS", "SEED_MAX", "SENTENCE_MAX_CHARS", "SENTENCE_TWINS", "SHARED", "SHOWN_CHARS", "Choice", "Control", "Ctx",
    "Expander", "Heads", "Number", "NumberInput", "Options", "Slider", "Text", "Toggle", "TokenPicker",
    "_shown", "check_link", "color_scale", "declare", "draw", "edition", "fragment", "language_control", "last_valid",
    "lesson_settings", "link", "link_number", "link_value", "next_edition", "not_used", "reset", "retired_link_key",
    "sentence_steps", "set_value", "shared", "show_link_warnings", "sidebar_controls", "value",
]
