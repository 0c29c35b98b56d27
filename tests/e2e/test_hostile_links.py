"""Hostile links and text (issue #19), in a real browser: a visitor's text is text, odd numbers never crash a page.

- Markup payloads (Markdown links and images, headings, HTML tags, LaTeX commands, backticks, colour directives,
  emoji shortcodes) go into every control of every lesson through the link, and are typed into every text box of
  every lesson (the sidebar's sentence, sentence B, the real-model lessons' prompts: whatever text boxes
  ``explorer.lessons.LESSONS`` draws). No link, image, heading, emphasis or script may come from them, the browser
  must not request a payload's address, and where a warning quotes a payload it quotes it character for character.
- ``/?seed=inf`` and the other numbers issue #19 named open with a warning and the default, and the address bar
  drops the value; a repeated parameter warns and uses the default.
"""

from __future__ import annotations

from urllib.parse import parse_qs, urlparse

import pytest

from explorer.lessons import LESSONS
from tests.e2e.conftest import DEFAULTS

pytestmark = pytest.mark.e2e

# marker -> payload; each at most 40 characters (a warning quotes a link value up to 40 characters whole).
PAYLOADS = {
    "xq1": "`[xq1](https://example.invalid/xq1)`",
    "xq2": "`![xq2](http://127.0.0.1:9/xq2.png)`",
    "xq3": "`\n# xq3 heading\n`",
    "xq4": "<a href=//example.invalid/xq4>xq4</a>",
    "xq5": "<img src=http://127.0.0.1:9/xq5.png>",
    "xq6": "$\\href{//example.invalid/xq6}{xq6}$",
    "xq7": ":red[xq7] :smile: **xq7b** _xq7c_",
    "xq8": "<h1>xq8</h1><script>xq8()</script>",
    "xq9": "[xq9](javascript:alert(9)) ~~xq9s~~",
    "xqa": "``` `` <b>xqa</b> $$\\textbf{xqa}$$",
}
# The three links of the issue, verbatim.
ISSUE_LINKS = [("multihead", "n_heads=%60[fix](https://example.invalid)%60"),
               ("", "d_k=%60![i](http://127.0.0.1:9/t.png)%60"),
               ("", "embedding=%60%0A%23%20HACKED%0A%60")]
# The issue's "[fix](…)" link is caught by its address (example.invalid); "fix" itself is no marker, since a page's
# own bold words contain it (the training lesson's "**fixed**").
MARKERS = [*PAYLOADS, "HACKED"]

# Elements (or attributes) that markup from a payload would create. Inputs hold the payload as typed: skipped.
FOUND_JS = """
({markers}) => {
  const out = [];
  const hasMarker = (s) => markers.some((m) => (s || '').includes(m));
  const skip = (e) => e.closest('input, textarea');
  for (const e of document.querySelectorAll('*')) {
    if (skip(e)) continue;
    for (const a of e.attributes) {
      const name = a.name.toLowerCase();
      const v = a.value || '';
      if (['href', 'xlink:href', 'src', 'srcset', 'action', 'formaction', 'poster'].includes(name)
          && (/example\\.invalid|127\\.0\\.0\\.1:9|^\\s*javascript:/i.test(v)))
        out.push(`<${e.tagName.toLowerCase()} ${name}="${v}">`);
    }
    const tag = e.tagName.toLowerCase();
    if (/^(h[1-6]|a|img|strong|b|em|i|del|s|script|mark|u)$/.test(tag) && hasMarker(e.textContent))
      out.push(`<${tag}> around ${JSON.stringify(e.textContent.slice(0, 80))}`);
    if (e.matches('[style*="color"]') && e.closest('[data-testid="stMarkdownContainer"]') && hasMarker(e.textContent)
        && !e.closest('code'))
      out.push(`coloured text ${JSON.stringify(e.textContent.slice(0, 80))}`);
  }
  return out;
}
"""


def _shown(value: str) -> str:
    """How a warning must quote a link value: as is, or as Python writes it when it is empty, padded or holds
    characters that do not print (the newline of xq3)."""
    return value if value and value == value.strip() and value.isprintable() else repr(value)


def _alerts(st_app) -> list[str]:
    return st_app.page.locator('[data-testid="stAlert"]').all_inner_texts()


def _watch_requests(st_app) -> list[str]:
    """Record (and block) every request to a payload's address."""
    asked: list[str] = []

    def block(route):
        asked.append(route.request.url)
        route.abort()

    def payload_address(url: str) -> bool:  # the host, not the query (the app's own links carry the payloads)
        parts = urlparse(url)
        return parts.hostname == "example.invalid" or parts.netloc == "127.0.0.1:9" or parts.scheme == "javascript"

    st_app.page.route(payload_address, block)
    return asked


def _problems(st_app, where: str) -> list[str]:
    problems = [f"{where}: {found}" for found in st_app.page.evaluate(FOUND_JS, {"markers": MARKERS})]
    if st_app.exceptions():
        problems.append(f"{where}: exception {st_app.exceptions()[0][:200]!r}")
    return problems


def _quoted_literally(alerts: list[str], where: str) -> list[str]:
    """Every warning that names a payload's marker quotes that payload character for character."""
    problems = []
    for marker, payload in PAYLOADS.items():
        for alert in alerts:
            if marker in alert and _shown(payload) not in alert:
                problems.append(f"{where}: a warning quotes {marker} but not literally ({_shown(payload)!r}): "
                                f"{alert[:300]!r}")
    return problems


def _keys_on_page(st_app) -> list[str]:
    """Every widget key drawn (its ``st-key-…`` class), sidebar and page: the link values to try."""
    return st_app.page.evaluate("""() => [...new Set([...document.querySelectorAll('[class*="st-key-"]')]
        .map((e) => (e.className.match(/st-key-(\\S+)/) || [])[1]).filter(Boolean))]""")


@pytest.mark.timeout(1800)  # 29 page loads, the real-model lessons among them
def test_markup_in_every_link_value_stays_text(st_app):
    asked = _watch_requests(st_app)
    problems, quoted = [], 0
    payloads = list(PAYLOADS.values())
    sent: set[str] = set()
    for n, entry in enumerate(LESSONS):
        st_app.open(entry.url_path)
        keys = [k for k in _keys_on_page(st_app) if not k.startswith("link_warnings")]
        assert "seed" in keys and "sentence" in keys, (entry.name, keys)
        # Every key gets a payload, shifted by 3 more on each lesson: the shared sidebar's keys (the sentence among
        # them) get other payloads on other lessons, and the lessons together send each payload to many controls.
        params = {k: payloads[(i + 3 * n) % len(payloads)] for i, k in enumerate(keys)}
        sent |= set(params.values())
        st_app.open(entry.url_path, params)
        alerts = _alerts(st_app)
        quoted += sum(any(m in a for m in PAYLOADS) for a in alerts)
        problems += _problems(st_app, f"/{entry.url_path} (link values)")
        problems += _quoted_literally(alerts, f"/{entry.url_path}")
    assert sent == set(payloads), "a payload went to no control"
    for path, query in ISSUE_LINKS:
        st_app.page.goto(f"{st_app.base}/{path}?{query}", wait_until="domcontentloaded")
        st_app.settle(before=0)
        problems += _problems(st_app, f"/{path}?{query}")
        if not any("not valid" in a for a in _alerts(st_app)):
            problems.append(f"/{path}?{query}: no warning")
    assert quoted >= len(LESSONS), "the payloads were not quoted in the link warnings: the test saw nothing"
    problems += [f"the browser requested a payload's address: {url}" for url in asked]
    assert not problems, "\n".join(problems)


@pytest.mark.timeout(1800)
def test_markup_typed_into_every_text_box_stays_text(st_app):
    """All payloads at once, typed into the sidebar's sentence, then into every text box each lesson draws."""
    asked = _watch_requests(st_app)
    text = " ".join(PAYLOADS.values()).replace("\n", " ")  # a one-line box drops newlines as it is typed
    st_app.open(LESSONS[0].url_path)
    st_app.set_widget("sentence", text)
    problems, boxes = [], []
    for entry in LESSONS:
        st_app.go_to_page("" if entry == LESSONS[0] else entry.url_path)  # the navigation links the first one at /
        problems += _problems(st_app, f"/{entry.url_path} (sentence)")
        own = st_app.page.evaluate("""() => [...document.querySelectorAll('[data-testid="stMain"] [class*="st-key-"]')]
            .filter((b) => b.querySelector('[data-testid="stTextInput"], [data-testid="stTextArea"]'))
            .map((b) => b.className.match(/st-key-(\\S+)/)[1])""")
        for key in own:
            boxes.append(key)
            st_app.set_widget(key, text)
            problems += _problems(st_app, f"/{entry.url_path} ({key})")
        st_app.screenshot(f"hostile-{entry.url_path}")
    assert "two_sentence" in boxes, f"the text boxes found: {boxes}"
    problems += [f"the browser requested a payload's address: {url}" for url in asked]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("path", "params", "defaults"), [
    ("", {"seed": "inf"}, {"seed": "42"}),
    ("", {"seed": "-inf", "d_model": "1e309", "d_k": "nan"}, {"seed": "42", "d_model": "8", "d_k": "4"}),
    ("multihead", {"d_model": "inf", "n_heads": "inf"}, {"d_model": "8", "n_heads": "2"}),
    ("scaling", {"scale_seed": "inf", "scale_n_keys": "1e2"}, {"scale_seed": "0", "scale_n_keys": "6"}),
    ("two-sentences", {"two_shuffle_seed": "-inf"}, {"two_shuffle_seed": "0"}),
], ids=["seed", "shared", "multihead", "scaling", "two-sentences"])
def test_a_number_no_control_can_hold_warns_and_opens_at_the_default(st_app, path, params, defaults):
    st_app.open(path, params)
    assert not st_app.exceptions(), st_app.exceptions()
    alerts = " ".join(_alerts(st_app))
    for key, raw in params.items():
        assert f"{key}={raw}" in alerts and "not valid" in alerts, (key, alerts)
        assert st_app.widget_value(key) == defaults[key], (key, st_app.widget_value(key))
    shown = parse_qs(urlparse(st_app.page.url).query, keep_blank_values=True)
    assert not [k for k in params if params[k] in shown.get(k, [])], f"the address bar keeps the bad value: {shown}"
    assert st_app.charts(), "the page did not draw"


def test_a_repeated_parameter_warns_and_opens_at_the_default(st_app, ready):
    st_app.page.goto(f"{st_app.base}/?seed=1&seed=2&embedding=per-token&embedding=lesson",
                     wait_until="domcontentloaded")
    st_app.settle(before=0)
    assert not st_app.exceptions()
    alerts = " ".join(_alerts(st_app))
    assert "seed 2 times" in alerts and "embedding 2 times" in alerts, alerts
    assert st_app.widget_value("seed") == str(DEFAULTS["seed"])
    assert st_app.widget_value("embedding") == ready["default_values"]["embedding"]
