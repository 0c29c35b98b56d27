"""Links and a visitor's text in a real browser: what only the DOM and the address bar show.

- (The link round trip, controls set by hand to the address bar and back in a new tab, is in ``test_persistence.py``,
  where the same controls also travel to other pages.)
- A link no control can use (numbers that are not finite, a parameter given twice) warns, opens at the defaults and
  leaves the address without the bad values; a link to a lesson stays on that lesson.
- One round of markup payloads (issue #19): Markdown links and images, headings, HTML tags, LaTeX commands, backticks,
  colour directives, emoji shortcodes, in link values and typed into the sentence box: no link, image, heading,
  emphasis or script comes from them, the browser requests no payload's address, and a warning that quotes one quotes
  it character for character.
- Markup, repeated words, emoji and another script typed as the sentence are drawn literally: tick labels, hover,
  table, choice box, text views.

Which value each parser takes, for every control of every lesson, and that each lesson shows a visitor's text as text
are AppTests and unit tests (``tests/shell/test_declare.py``, ``tests/lessons/test_contract.py``,
``tests/shell/test_controls.py``, ``tests/shell/charts/test_heatmaps.py::test_labels_are_escaped_everywhere`` and each
lesson's own ``test_page.py``);
these tests show that the page the browser builds from them is what those tests read.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

import attention as A
from explorer.lessons import LESSONS
from tests.e2e.conftest import DEFAULTS, WALK_WEIGHTS, App, chart_numbers, numbers_equal

pytestmark = pytest.mark.e2e

def _link_params(url: str) -> dict[str, list[str]]:
    return parse_qs(urlparse(url).query, keep_blank_values=True)


def _alerts(app: App) -> list[str]:
    return app.page.locator('[data-testid="stAlert"]').all_inner_texts()


def test_a_link_no_control_can_use_warns_opens_at_the_defaults_and_leaves_the_address(st_app, ready):
    """Issue #19's numbers (not finite, too large) and a parameter given twice, in one link."""
    st_app.page.goto(f"{st_app.base}/?seed=1&seed=2&embedding=per-token&embedding=lesson&d_model=1e309&d_k=nan",
                     wait_until="domcontentloaded")
    st_app.settle(before=0)
    assert not st_app.exceptions(), st_app.exceptions()
    alerts = " ".join(_alerts(st_app))
    assert "seed 2 times" in alerts and "embedding 2 times" in alerts, alerts
    assert "d_model=1e309" in alerts and "d_k=nan" in alerts and "not valid" in alerts, alerts
    assert {k: st_app.widget_value(k) for k in DEFAULTS} == ready["default_values"]
    shown = _link_params(st_app.page.url)
    assert shown.get("d_model") != ["1e309"] and shown.get("d_k") != ["nan"], \
        f"the address bar keeps the bad value: {st_app.page.url}"
    differ = [k for k, v in chart_numbers(ready["default_charts"]).items()
              if not numbers_equal(v, chart_numbers(st_app.charts()).get(k))]
    assert not differ, f"a link no control can use does not show the defaults' numbers: {differ}"


def test_a_link_to_a_lesson_with_a_parameter_given_twice_stays_on_the_lesson(st_app):
    """A repeated parameter is removed from the link and the run starts again: before the fix that rerun came before
    ``st.navigation`` and opened the default page (``/causal?...`` landed on ``/``, no warning). The lesson's own
    control given twice opens at its default with the warning; the other parameters stay; a repeated key no control
    reads just leaves."""
    st_app.page.goto(f"{st_app.base}/causal?causal_on=false&causal_on=true&seed=7&foo=1&foo=2",
                     wait_until="domcontentloaded")
    st_app.settle(before=0)
    assert not st_app.exceptions(), st_app.exceptions()
    assert urlparse(st_app.page.url).path == "/causal", f"the link's lesson was left: {st_app.page.url}"
    alerts = " ".join(_alerts(st_app))
    assert "causal_on 2 times" in alerts, alerts
    assert st_app.widget_value("causal_on") is True and str(st_app.widget_value("seed")) == "7"
    shown = _link_params(st_app.page.url)
    assert shown.get("seed") == ["7"] and "causal_on" not in shown and "foo" not in shown, st_app.page.url


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


def _watch_requests(app: App) -> list[str]:
    """Record (and block) every request to a payload's address."""
    asked: list[str] = []

    def block(route):
        asked.append(route.request.url)
        route.abort()

    def payload_address(url: str) -> bool:  # the host, not the query (the app's own links carry the payloads)
        parts = urlparse(url)
        return parts.hostname == "example.invalid" or parts.netloc == "127.0.0.1:9" or parts.scheme == "javascript"

    app.page.route(payload_address, block)
    return asked


def _markup_made(app: App, where: str) -> list[str]:
    problems = [f"{where}: {found}" for found in app.page.evaluate(FOUND_JS, {"markers": list(PAYLOADS)})]
    if app.exceptions():
        problems.append(f"{where}: exception {app.exceptions()[0][:200]!r}")
    return problems


def test_markup_in_link_values_and_typed_text_stays_text(st_app, ready):
    """One round: a payload in every link value of the default lesson (sidebar and page), then all of them typed into
    the sentence box. The default lesson's keys are those :func:`ready` read on its first load of the page."""
    asked = _watch_requests(st_app)
    keys = [k for k in ready["default_keys"] if not k.startswith("link_warnings")]
    assert len(keys) >= len(PAYLOADS) and {"seed", "sentence"} <= set(keys), keys
    payloads = list(PAYLOADS.values())
    params = {k: payloads[i % len(payloads)] for i, k in enumerate(keys)}  # every payload goes to some control
    st_app.open(LESSONS[0].url_path, params)
    alerts = _alerts(st_app)
    problems = _markup_made(st_app, "link values")
    quoted = 0
    for marker, payload in PAYLOADS.items():
        for alert in (a for a in alerts if marker in a):
            quoted += 1
            if _shown(payload) not in alert:
                problems.append(f"a warning quotes {marker} but not literally ({_shown(payload)!r}): {alert[:300]!r}")
    assert quoted >= 3, f"the payloads were not quoted in the link warnings: the test saw nothing ({alerts})"
    st_app.open()
    st_app.set_widget("sentence", " ".join(payloads).replace("\n", " "))  # a one-line box drops newlines
    problems += _markup_made(st_app, "typed into the sentence")
    st_app.screenshot("hostile-walkthrough")
    problems += [f"the browser requested a payload's address: {url}" for url in asked]
    assert not problems, "\n".join(problems)


MARKUP = '<b>bold</b> <img src=x onerror=alert(1)> "quotes" & ampersands'
MIXED = "the cat saw the 🐱 猫 and the dog"
SENTENCE = MARKUP + " " + MIXED
ENTITY = re.compile(r"&(?:quot|amp|lt|gt|apos|#\d+|#x[0-9a-f]+);", re.IGNORECASE)

INJECTED_JS = """
() => {
  const out = [];
  if (document.querySelector('img[src="x"]')) out.push('an <img src=x> element');
  for (const e of document.querySelectorAll('b, strong'))
    if (e.textContent.trim() === 'bold') out.push('a <' + e.tagName.toLowerCase() + '> element around "bold"');
  for (const e of document.querySelectorAll('.js-plotly-plot tspan'))
    if (e.textContent.includes('bold') && /font-weight:\\s*bold/.test(e.getAttribute('style') || ''))
      out.push('a bold tspan in a chart: ' + e.textContent);
  for (const e of document.querySelectorAll('[onerror]')) out.push('an element with onerror: ' + e.tagName);
  return out;
}
"""

# Drawn tick labels (what the learner reads), per chart and axis.
TICKS_JS = """
() => Object.fromEntries([...document.querySelectorAll('[data-testid="stPlotlyChart"]')].map((c, i) => {
  const box = c.closest('[class*="st-key-"]');
  const m = box ? box.className.match(/st-key-(\\S+)/) : null;
  const g = c.querySelector('.js-plotly-plot');
  const read = (sel) => g ? [...g.querySelectorAll(sel)].map((t) => t.textContent) : [];
  return [m ? m[1] : 'chart-' + i,
          {y: read('.yaxislayer-above .ytick text'), x: read('.xaxislayer-above .xtick text')}];
}))
"""


def test_markup_repeated_words_emoji_and_other_scripts_are_drawn_literally(st_app):
    """The sentence typed into the sidebar, as a learner does: 34 tokens, more than a map labels (issue 18: thinned so
    that none touch), so the labels drawn are some of the tokens' labels, in order, each exactly as typed."""
    labels = [f"{t} ({i})" for i, t in enumerate(A.tokenize(SENTENCE))]
    tokens = A.tokenize(SENTENCE)
    st_app.open()
    st_app.set_widget("sentence", SENTENCE)
    assert st_app.widget_value("sentence") == SENTENCE
    problems = []
    ticks = st_app.page.evaluate(TICKS_JS)
    for axis in ("y", "x"):
        drawn = ticks[WALK_WEIGHTS][axis]
        positions = [labels.index(t) if t in labels else -1 for t in drawn]
        if not drawn or drawn[0] != labels[0] or -1 in positions or positions != sorted(set(positions)):
            problems.append(f"weights {axis} labels drawn as {drawn}, expected some of {labels} in order")
    for key, chart in ticks.items():  # every token map's labels: distinct and in order
        for axis, drawn in chart.items():
            shown = [t for t in drawn if t in labels]
            if [labels.index(t) for t in shown] != sorted({labels.index(t) for t in shown}):
                problems.append(f"{key} {axis} axis: token rows not distinct or not in order: {shown}")
    quote, amp = tokens.index('"'), tokens.index("&")
    for row, col in ((quote, amp), (0, 1)):
        hover = st_app.hover(WALK_WEIGHTS, row, col)
        if not hover.startswith(f"query {labels[row]} → key {labels[col]}: "):
            problems.append(f"hover over weights ({row}, {col}) reads {hover!r}")
    shown = st_app.table_column(1)
    if not shown or shown != labels[:len(shown)]:
        problems.append(f"the query table's key column reads {shown[:8]}, expected {labels[:8]}")
    options = st_app.open_selectbox("walk_query")  # each token once, in order
    st_app.page.keyboard.press("Escape")
    if options[:len(labels)] != labels[:len(options)] or len(set(options)) != len(options):
        problems.append(f"the query selectbox offers {options[:12]}, expected {labels[:12]}")
    code = "\n".join(st_app.page.locator('[data-testid="stCode"] code').all_text_contents())
    problems += [f"the ASCII heat map does not show {tok!r}" for tok in ("onerror", "<", "&", '"') if tok not in code]
    problems += [f"injected {what}" for what in st_app.page.evaluate(INJECTED_JS)]
    screen = st_app.page.locator('[data-testid="stMain"]').inner_text() + " ".join(
        " ".join(c["svgText"]) for c in st_app.charts())
    if entities := ENTITY.findall(screen):
        problems.append(f"escaped entities shown as text {sorted(set(entities))} ({len(entities)} times)")
    problems += [f"JavaScript error on the page: {e}" for e in st_app.page_errors]
    assert not st_app.exceptions(), st_app.exceptions()
    assert not problems, "\n".join(problems)
