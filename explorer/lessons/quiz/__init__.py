"""Check yourself: the lesson's manifest. Its answers are form widgets, not in the link; its two token pickers are
declared here, out of the link (a question's word, chosen after answering)."""

from explorer.shell import controls
from explorer.shell.controls import TokenPicker
from explorer.shell.i18n import N_

CONTROLS = controls.declare(
    __name__,
    order_word=TokenPicker(key="quiz_order_word", label=N_("Word"), default=1, link=False),
    topkey_query=TokenPicker(key="quiz_topkey_query", label=N_("Query word"), default=1, link=False),
)
STATES = ()
