"""No chart's text overlaps other text or is cut off, on a phone (390×844) and a desktop (1440×900).

For every lesson at its defaults, and for the crowded settings a learner reaches (8 and 32 heads,
34 and 64 tokens), every Plotly chart on the page is checked in the browser, from the bounding
boxes of the text Plotly drew inside the chart's SVG: tick labels, annotations, heat-map and bar
cell text, the chart's title and its axis titles, colour-bar ticks and legend entries. Two such
boxes that overlap (by more than :data:`SLACK_PX` in both directions) fail the test, as does a text
box that reaches outside the chart (a cut title, a note clipped at the edge). Two heat-map or
bar numbers must also keep a gap of :data:`SLACK_PX` (numbers that touch read as one number). No text of the page
or its sidebar is cut short with "…" (:data:`ELLIPSIS_JS`). A page's screenshot
at each width goes to ``.screenshots/layout-<width>-<page>.png``.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import record_timing

pytestmark = pytest.mark.e2e

PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1440, "height": 900}
SLACK_PX = 2.0  # boxes that touch (a text box's line-height padding, a glyph's side bearing) do not overlap

LONG_34 = " ".join(f"w{i}" for i in range(34))  # 34 tokens: the causal padding maps' key labels
LONG_64 = " ".join(f"w{i}" for i in range(64))  # 64 tokens, the most the app uses
CROWDED = [  # (page path, link parameters): the crowded cases issue 18 reported
    ("multihead", {"n_heads": 8}),
    ("causal", {"sentence": LONG_34}),
    ("multihead", {"sentence": LONG_64, "d_model": 64, "n_heads": 32}),
]

# Every text box of every Plotly chart on the page, and the pairs that overlap or leave the chart. A box is the
# text's own rectangle (getBBox) carried to the screen by its transform (getScreenCTM), so a rotated tick label is
# a rotated rectangle; two boxes overlap when they overlap on every separating axis (SAT) by more than `slack`.
OVERLAPS_JS = """
(slack) => {
  const kinds = [
    ['tick', 'g.xtick > text, g.ytick > text, g[class*="xtick"] > text, g[class*="ytick"] > text'],
    ['annotation', 'g.annotation text'],
    ['cell', 'g.heatmap-label text, g.textpoint text, text.bartext'],
    ['title', 'text.gtitle, text[class*="xtitle"], text[class*="ytitle"]'],
    ['colorbar', 'g.colorbar text'],
    ['legend', 'g.legend text'],
  ];
  const visible = (e) => {
    if (!e.textContent.trim()) return false;
    for (let n = e; n && n.tagName !== 'svg'; n = n.parentNode) {
      const cs = getComputedStyle(n);
      if (cs.display === 'none' || cs.visibility === 'hidden' || parseFloat(cs.opacity) === 0) return false;
    }
    const r = e.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  };
  const corners = (e) => {
    const b = e.getBBox(), m = e.getScreenCTM();
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height], [b.x, b.y + b.height]]
      .map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
  };
  const axes = (q) => [0, 1].map((i) => {
    const dx = q[i + 1][0] - q[i][0], dy = q[i + 1][1] - q[i][1], n = Math.hypot(dx, dy) || 1;
    return [dx / n, dy / n];
  });
  const depth = (p, q) => {  // the smallest overlap of the two quads' projections over the four axes
    let d = Infinity;
    for (const [ax, ay] of [...axes(p), ...axes(q)]) {
      const pp = p.map(([x, y]) => x * ax + y * ay), qq = q.map(([x, y]) => x * ax + y * ay);
      d = Math.min(d, Math.min(Math.max(...pp), Math.max(...qq)) - Math.max(Math.min(...pp), Math.min(...qq)));
    }
    return d;
  };
  const out = [];
  document.querySelectorAll('[data-testid="stPlotlyChart"]').forEach((c, i) => {
    const host = c.closest('[class*="st-key-"]');
    const m = host ? host.className.match(/st-key-(\\S+)/) : null;
    const key = m ? m[1] : 'chart-' + i;
    const g = c.querySelector('.js-plotly-plot');
    if (!g) return;
    const frame = g.querySelector('svg.main-svg').getBoundingClientRect();
    const seen = new Set();
    const boxes = [];
    for (const [kind, sel] of kinds) {
      for (const e of g.querySelectorAll(sel)) {
        if (seen.has(e) || !visible(e)) continue;
        seen.add(e);
        boxes.push({kind, text: e.textContent.trim().slice(0, 40), q: corners(e)});
      }
    }
    const problems = [];
    for (const a of boxes) {
      const xs = a.q.map((p) => p[0]), ys = a.q.map((p) => p[1]);
      if (Math.min(...xs) < frame.left - slack || Math.max(...xs) > frame.right + slack
          || Math.min(...ys) < frame.top - slack || Math.max(...ys) > frame.bottom + slack)
        problems.push(`${a.kind} '${a.text}' is cut off (outside the chart)`);
    }
    for (let x = 0; x < boxes.length; x++) {
      for (let y = x + 1; y < boxes.length; y++) {
        // Two cells' numbers must keep a gap (numbers that touch read as one); other text may touch.
        const both = boxes[x].kind === 'cell' && boxes[y].kind === 'cell';
        const d = depth(boxes[x].q, boxes[y].q);
        if (d > (both ? -slack : slack))
          problems.push(`${boxes[x].kind} '${boxes[x].text}' overlaps ${boxes[y].kind} '${boxes[y].text}' `
                        + `(by ${d.toFixed(1)} px)`);
      }
    }
    out.push({key, n_boxes: boxes.length, problems});
  });
  return out;
}
"""

# Text the page lays out wider than its column (a long word that cannot wrap): the main block's elements whose right
# edge passes the main block's (a display formula scrolls inside its own box, which is checked, not its content).
WIDER_JS = """() => {
  const main = document.querySelector('[data-testid="stMainBlockContainer"]').getBoundingClientRect();
  return [...document.querySelectorAll('[data-testid="stMainBlockContainer"] :is(p, li, h1, h2, h3, label, button)')]
    .filter((e) => !e.closest('.katex-display, [data-testid="stDataFrame"], .js-plotly-plot, details:not([open])'))
    .filter((e) => { const r = e.getBoundingClientRect(); return r.width > 0 && r.right > main.right + 1; })
    .map((e) => e.innerText.slice(0, 60));
}"""

# Text cut short with "…" (a CSS ellipsis): a lesson's name in the sidebar, a control's label; and Streamlit's
# English "(required)" tag beside a choice box's label (app.css hides it).
ELLIPSIS_JS = """() => [...document.querySelectorAll('[data-testid="stSidebar"] *, [data-testid="stMain"] *')]
  .filter((e) => e.clientWidth > 0 && e.scrollWidth > e.clientWidth + 1
                 && getComputedStyle(e).textOverflow === 'ellipsis' && e.textContent.trim())
  .map((e) => 'cut with …: ' + e.textContent.trim().slice(0, 60))
  .concat([...document.querySelectorAll('[data-testid="stWidgetLabelRequired"]')]
    .filter((e) => e.getBoundingClientRect().width > 0).map((e) => 'shown: ' + e.textContent))"""


def _check_pages(st_app, viewport: dict, pages: list[tuple[str, dict]]) -> list[str]:
    st_app.page.set_viewport_size(viewport)
    problems, checked = [], 0
    for path, params in pages:
        name = path or "walkthrough"
        st_app.open(path, params)
        st_app.page.wait_for_timeout(300)  # Plotly relayouts once after the container's width settles
        suffix = f"-{params['lang']}" if list(params) == ["lang"] else ("-crowded" if params else "")
        st_app.screenshot(f"layout-{viewport['width']}-{name}{suffix}")
        if st_app.exceptions():
            problems.append(f"{name}: exception shown: {st_app.exceptions()[0][:200]!r}")
            continue
        wider = st_app.page.evaluate(WIDER_JS)
        if wider:
            problems.append(f"{viewport['width']}px {name} {params}: wider than the screen: {wider[:3]}")
        cut = st_app.page.evaluate(ELLIPSIS_JS)
        if cut:
            problems.append(f"{viewport['width']}px {name} {params}: {cut[:3]}")
        charts = st_app.page.evaluate(OVERLAPS_JS, SLACK_PX)
        if not charts:
            problems.append(f"{name}: no chart drawn")
        for chart in charts:
            checked += chart["n_boxes"]
            where = f"{viewport['width']}px {name}{' ' + str(params)[:60] if params else ''}, chart {chart['key']}"
            problems += [f"{where}: {p}" for p in chart["problems"][:5]]
            if len(chart["problems"]) > 5:
                problems.append(f"{where}: … and {len(chart['problems']) - 5} more")
    record_timing(f"layout_text_boxes_{viewport['width']}", checked)
    return problems


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390x844", "desktop-1440x900"])
def test_no_chart_text_overlaps_or_is_cut_on_any_lesson(st_app, nav_pages, viewport):
    pages = [(entry["path"], {}) for entry in nav_pages]
    problems = _check_pages(st_app, viewport, pages)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390x844", "desktop-1440x900"])
def test_no_chart_text_overlaps_at_crowded_settings(st_app, viewport):
    problems = _check_pages(st_app, viewport, CROWDED)
    assert not problems, "\n".join(problems)


VISIBLE_CELL_TEXT_JS = """() => [...document.querySelectorAll('.js-plotly-plot')].map((g) => {
  const wide = [...g.querySelectorAll('text')].filter((e) => (e.getAttribute('style') || '').includes('cells-min-'));
  return {width: g.getBoundingClientRect().width, wide: wide.length,
          shown: wide.filter((e) => getComputedStyle(e).display !== 'none').length};
})"""


def test_cell_numbers_too_wide_for_a_phone_show_on_a_desktop_only(st_app):
    """The walkthrough's 6×6 maps: their numbers fit a desktop's full-width map, not a phone's (app.css)."""
    st_app.page.set_viewport_size(DESKTOP)
    st_app.open("")
    desktop = [c for c in st_app.page.evaluate(VISIBLE_CELL_TEXT_JS) if c["wide"]]
    assert desktop and all(c["shown"] == c["wide"] for c in desktop if c["width"] >= 480), desktop
    assert any(c["width"] >= 480 for c in desktop), desktop
    st_app.page.set_viewport_size(PHONE)
    st_app.page.wait_for_timeout(500)
    phone = [c for c in st_app.page.evaluate(VISIBLE_CELL_TEXT_JS) if c["wide"]]
    assert phone and all(c["width"] < 480 and c["shown"] == 0 for c in phone), phone


LANG_PAGES = ["", "multihead", "training"]  # the walkthrough, the widest grids, the longest labels and buttons


@pytest.mark.parametrize("lang", ["pt", "tr"])
@pytest.mark.parametrize("viewport", [PHONE, DESKTOP], ids=["phone-390x844", "desktop-1440x900"])
def test_longer_words_of_portuguese_and_turkish_neither_overlap_nor_cut(st_app, viewport, lang):
    """Issue 31: three pages in each language, at both widths: the same chart checks as above, and no text wider
    than the page's column."""
    problems = _check_pages(st_app, viewport, [(path, {"lang": lang}) for path in LANG_PAGES])
    assert not problems, "\n".join(problems)


REAL_MODEL_PAGES = ["real-model", "kv-cache", "causes", "attention-sinks"]  # the longest chart titles of all


@pytest.mark.parametrize("lang", ["pt", "tr"])
def test_the_real_model_pages_titles_fit_a_phone_in_portuguese_and_turkish(st_app, lang):
    """A phone only (the narrowest chart): their chart titles ran up to 84 px past the right edge in pt and tr
    before :func:`explorer.shell.charts.chart_title` broke them into lines."""
    problems = _check_pages(st_app, PHONE, [(path, {"lang": lang}) for path in REAL_MODEL_PAGES])
    assert not problems, "\n".join(problems)
