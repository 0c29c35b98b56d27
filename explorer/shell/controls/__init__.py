"""Controls: the shared sidebar (:mod:`.sidebar`), the lessons' declared controls (:mod:`.declare`), the link values
they read (:mod:`.link_values`) and a page's own state between runs (:mod:`.state`). Pages import the package
(``from explorer.shell import controls``) and use the names below."""

from explorer.shell.controls.declare import (  # noqa: F401 (re-exported)
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
from explorer.shell.controls.link_values import (  # noqa: F401 (re-exported)
    SHOWN_CHARS,
    _shown,
    check_link,
    link_number,
    link_value,
    retired_link_key,
    set_value,
    show_link_warnings,
)
from explorer.shell.controls.sidebar import (  # noqa: F401 (re-exported)
    DEFAULTS,
    MODEL_KEY,
    MODEL_REVERT,
    MODEL_WIDGET,
    SEED_MAX,
    SENTENCE_MAX_CHARS,
    SENTENCE_TWINS,
    SHARED,
    color_scale,
    fragment,
    language_control,
    lesson_settings,
    model_control,
    model_ids,
    not_used,
    sentence_steps,
    shared,
    sidebar_controls,
    you_need,
)
from explorer.shell.controls.state import edition, last_valid, next_edition, reset  # noqa: F401 (re-exported)
