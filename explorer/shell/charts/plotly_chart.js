// Attention Explorer: one Plotly chart that stays on the page between runs (explorer/shell/charts/door.py).
//
// Streamlit calls this module's default function when the chart first mounts and again whenever its data (the
// figure) or the app's theme changes, with the same parentElement: the chart's <div> is kept and a changed figure
// is applied with Plotly.react (one draw; layout.uirevision keeps a learner's zoom). Plotly itself is the installed
// plotly package's bundle, served by Streamlit and loaded once per page. The figure is themed here as st.plotly_chart
// themes it (Streamlit's frontend, PlotlyChart/CustomTheme.tsx of 1.67): the template's placeholder colours become
// the theme's chart colours, and fonts, text and grid colours follow the theme, light or dark.

const SELECTION_EMPTY = {points: [], point_indices: [], box: [], lasso: []};
const DESELECT_ECHO_MS = 800;

// Streamlit serves component files with "Cache-Control: public" and no validator, which a browser does not reuse:
// every page load would download the 4.8 MB bundle again. The URL names the plotly version (?v=…), so a copy in the
// HTTP cache, however old, is the right one: fetched with cache "force-cache", then run as a script.
function loadPlotly(url) {
  if (window.Plotly) return Promise.resolve(window.Plotly);
  if (!window.attentionExplorerPlotly) {
    window.attentionExplorerPlotly = fetch(url, {cache: "force-cache"})
      .then((response) => {
        if (!response.ok) throw new Error("Plotly did not load: " + url + " (" + response.status + ")");
        return response.text();
      })
      .then((code) => {
        const script = document.createElement("script");
        script.textContent = code + "\n//# sourceURL=" + url;
        document.head.appendChild(script);
        return window.Plotly;
      })
      .catch((error) => { window.attentionExplorerPlotly = null; throw error; });
  }
  return window.attentionExplorerPlotly;
}

// The Streamlit theme, read from the CSS variables Streamlit sets on every component (--st-*).
function themeOf(el) {
  const css = getComputedStyle(el);
  const v = (name, fallback) => (css.getPropertyValue(name) || "").trim() || fallback;
  const list = (name) => v(name, "").split(",").map((s) => s.trim()).filter(Boolean);
  const bg = v("--st-background-color", "#ffffff");
  const light = luminance(bg) > 0.5;
  return {
    light, bg,
    text: v("--st-text-color", light ? "#31333F" : "#fafafa"),
    heading: v("--st-heading-color", v("--st-text-color", light ? "#31333F" : "#fafafa")),
    font: v("--st-font", "sans-serif"),
    headingFont: v("--st-heading-font", v("--st-font", "sans-serif")),
    border: v("--st-border-color", "rgba(49, 51, 63, 0.2)"),
    categorical: list("--st-chart-categorical-colors"),
    sequential: list("--st-chart-sequential-colors"),
    diverging: list("--st-chart-diverging-colors"),
    // Streamlit's getGray70 / getGray30 / getGray90 (theme/utils.ts): its gray palette, by the background's lightness
    gray70: light ? "#808495" : "#e6eaf1",
    gray30: light ? "#e6eaf1" : "#31333F",
    gray90: light ? "#262730" : "#fafafa",
  };
}

function luminance(color) {
  const probe = document.createElement("canvas").getContext("2d");
  probe.fillStyle = "#000";
  probe.fillStyle = color;
  const hex = probe.fillStyle;  // "#rrggbb" or "rgba(r, g, b, a)"
  let rgb;
  if (hex.startsWith("#")) rgb = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16));
  else rgb = hex.replace(/[^\d,.]/g, "").split(",").slice(0, 3).map(Number);
  const [r, g, b] = rgb.map((c) => { c /= 255; return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4; });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

// Streamlit's template placeholders (streamlit/elements/lib/streamlit_plotly_theme.py) -> the theme's colours.
function replacePlaceholders(json, t) {
  const swap = (first, colors) => {
    colors.forEach((c, i) => { json = json.replaceAll("#0000" + String(first + i).padStart(2, "0"), c); });
  };
  swap(1, t.categorical);
  swap(11, t.sequential);
  swap(21, t.diverging);
  json = json.replaceAll("#000036", t.gray70).replaceAll("#000037", t.gray90).replaceAll("#000038", t.bg)
    .replaceAll("#000035", t.gray30);
  return json;
}

function merge(target, source) {  // lodash's merge, for plain JSON: source's leaves win
  for (const [k, v] of Object.entries(source)) {
    if (v && typeof v === "object" && !Array.isArray(v)) {
      if (!target[k] || typeof target[k] !== "object" || Array.isArray(target[k])) target[k] = {};
      merge(target[k], v);
    } else target[k] = v;
  }
  return target;
}

// The layout defaults st.plotly_chart's "streamlit" theme puts in the figure's template (CustomTheme.tsx).
function themedFigure(spec, t) {
  const fig = JSON.parse(spec);
  const layout = fig.layout = fig.layout || {};
  // The placeholders are the template's (the app's figures give their traces their own colours): only the template's
  // few kB are rewritten, not the whole figure (a 64 x 64 map's spec is ~100 times longer).
  const template = layout.template = JSON.parse(replacePlaceholders(JSON.stringify(layout.template || {}), t));
  const tl = template.layout = template.layout || {};
  const axisTitle = {font: {color: t.gray70, size: 14}};
  merge(tl, {
    font: {color: t.gray70, family: t.font, size: 12, weight: 400},
    title: {color: t.heading, subtitleColor: t.text, font: {family: t.headingFont, size: 16, color: t.heading},
            pad: {l: 4}, xanchor: "left", x: 0},
    legend: {title: {font: {size: 12, color: t.gray70}, side: "top"}, valign: "top", bordercolor: "transparent",
             borderwidth: 0, font: {size: 12, color: t.gray90}},
    paper_bgcolor: t.bg, plot_bgcolor: t.bg,
    yaxis: {ticklabelposition: "outside", zerolinecolor: t.gray30, title: {...axisTitle, standoff: 24},
            tickcolor: t.gray30, tickfont: {color: t.gray70, size: 12}, gridcolor: t.gray30,
            minor: {gridcolor: t.gray30}, automargin: true},
    xaxis: {zerolinecolor: t.gray30, gridcolor: t.gray30, showgrid: false, tickfont: {color: t.gray70, size: 12},
            tickcolor: t.gray30, title: {...axisTitle, standoff: 20}, minor: {gridcolor: t.gray30}, zeroline: false,
            automargin: true},
    margin: {pad: 8, r: 0, l: 0},
    hoverlabel: {bgcolor: t.bg, bordercolor: t.border, font: {color: t.gray70, family: t.font, size: 12}},
    coloraxis: {colorbar: {thickness: 16, xpad: 24, ticklabelposition: "outside", outlinecolor: "transparent",
                           outlinewidth: 8, len: 0.75, y: 0.5745, title: {font: {color: t.gray70, size: 14}},
                           tickfont: {color: t.gray70, size: 12}}},
  });
  if (layout.title !== undefined && layout.title !== null) {  // Streamlit draws a chart's title in bold
    const title = typeof layout.title === "string" ? {text: layout.title} : layout.title;
    if (typeof title.text === "string" && title.text && !title.text.startsWith("<b>")) {
      layout.title = {...title, text: "<b>" + title.text + "</b>"};
    }
  }
  return fig;
}

// Key labels for the width the chart is drawn at (issue 47): an axis of positions 0 … n - 1 named in
// layout.meta.fit_ticks (geometry.fit_ticks) gets every label while they fit, upright when the widest fits its cell,
// else on end, and when they do not fit every k-th label from the first (evenly: the same step throughout), k the
// smallest step at which labels on end do not touch. Zoomed in, the visible positions are labelled the same way.
const ON_END_PX = 18;  // labels on end (12 px font) this far apart never touch
const UPRIGHT_GAP_PX = 6;  // between two upright labels
function labelWidth(text, theme) {
  const ctx = (labelWidth.canvas = labelWidth.canvas || document.createElement("canvas")).getContext("2d");
  ctx.font = "12px " + theme.font;
  const plain = String(text).replace(/<[^>]*>/g, "").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&");
  return ctx.measureText(plain).width;
}

function fittedTicks(labels, lengthPx, range, theme) {
  const n = labels.length;
  const lo = Math.max(0, Math.ceil(Math.min(range[0], range[1]))), hi = Math.min(n - 1, Math.floor(Math.max(...range)));
  const cell = lengthPx / Math.max(Math.abs(range[1] - range[0]), 1e-9);
  const positions = [];
  for (let i = lo; i <= hi; i++) positions.push(i);
  const widest = Math.max(0, ...positions.map((i) => labelWidth(labels[i], theme)));
  let step = 1, angle = 0;
  if (widest + UPRIGHT_GAP_PX > cell) {
    angle = -90;
    step = Math.max(1, Math.ceil(ON_END_PX / cell));
  }
  const first = Math.ceil(lo / step) * step;  // on the grid 0, k, 2k …: zooming keeps the same labels in place
  const vals = [];
  for (let i = first; i <= hi; i += step) vals.push(i);
  return {tickmode: "array", tickvals: vals, ticktext: vals.map((i) => labels[i]), tickangle: angle};
}

function fitLayout(layout, fullLayout, widthPx, theme) {  // the axis updates of every fitted axis
  const fit = layout.meta && layout.meta.fit_ticks;
  if (!fit) return {};
  const margin = layout.margin || {};
  const out = {};
  for (const [name, labels] of Object.entries(fit)) {
    const axis = (fullLayout && fullLayout[name]) || layout[name] || {};
    const domain = axis.domain || [0, 1];
    const length = fullLayout && fullLayout[name] && fullLayout[name]._length
      ? fullLayout[name]._length
      : (widthPx - (margin.l ?? 80) - (margin.r ?? 80)) * (domain[1] - domain[0]);
    const range = (fullLayout && fullLayout[name] && fullLayout[name].range) || (layout[name] || {}).range
      || [-0.5, labels.length - 0.5];
    out[name] = fittedTicks(labels, length, range, theme);
  }
  return out;
}

function relayoutTicks(out) {  // fitLayout's updates as Plotly.relayout's "axis.key" pairs
  const flat = {};
  for (const [name, ticks] of Object.entries(out)) {
    for (const [k, v] of Object.entries(ticks)) flat[name + "." + k] = v;
  }
  return flat;
}

function selectionOf(event) {
  const points = (event && event.points) || [];
  const out = {points: [], point_indices: [], box: [], lasso: []};
  for (const p of points) {
    const point = {curve_number: p.curveNumber, point_number: p.pointNumber, point_index: p.pointIndex,
                   x: p.x, y: p.y};
    if (p.z !== undefined) point.z = p.z;
    if (p.customdata !== undefined) point.customdata = p.customdata;
    if (p.data && p.data.legendgroup) point.legendgroup = p.data.legendgroup;
    out.points.push(point);
    if (p.pointIndex !== undefined && !out.point_indices.includes(p.pointIndex)) out.point_indices.push(p.pointIndex);
  }
  return out;
}

// The toolbar's export for slides and papers: SVG and PNG at a print size, the chart's title in the image.
const EXPORT_WIDTH = 1600;
function exportButton(format, Plotly, state) {
  const label = format.toUpperCase();
  return {
    name: "download-" + format,
    title: "Download as " + label + " (" + EXPORT_WIDTH + " px wide, for slides)",
    icon: Plotly.Icons.camera,
    click: (gd) => {
      const name = (state.filename || "chart").replace(/[^\w.-]+/g, "_");
      const height = Math.round(EXPORT_WIDTH * gd._fullLayout.height / gd._fullLayout.width);
      Plotly.downloadImage(gd, {format, width: EXPORT_WIDTH, height, scale: format === "png" ? 2 : 1, filename: name});
    },
  };
}

export default function (component) {
  const {data, parentElement, setStateValue} = component;
  if (!data || !data.spec) return undefined;
  // The same DOM as st.plotly_chart's (a [data-testid="stPlotlyChart"] holding the .js-plotly-plot), so what reads
  // charts in the page (bench/browser.py, tests/e2e, touch_tap.js) reads them either way.
  let box = parentElement.querySelector(":scope > [data-testid='stPlotlyChart'] > .ae-chart");
  if (!box) {
    const outer = document.createElement("div");
    outer.setAttribute("data-testid", "stPlotlyChart");
    box = document.createElement("div");
    box.className = "ae-chart";
    outer.appendChild(box);
    parentElement.appendChild(outer);
  }
  const state = box.attentionExplorer = box.attentionExplorer || {};
  state.filename = data.filename;
  let cancelled = false;
  loadPlotly(data.plotly).then((Plotly) => {
    if (cancelled) return;
    const theme = themeOf(parentElement);
    const fig = themedFigure(data.spec, theme);
    const layout = fig.layout;
    layout.uirevision = layout.uirevision === undefined ? "keep" : layout.uirevision;
    // A click's selection lasts until the next figure (as st.plotly_chart's, whose new figure is a new chart): a
    // later click on the same cell selects it again instead of deselecting it.
    state.revision = (state.revision || 0) + 1;
    layout.selectionrevision = state.revision;
    layout.height = layout.height >= 10 ? layout.height : 450;
    const width = () => Math.max(box.clientWidth || parentElement.clientWidth || 0, 150);
    if (data.width === "stretch" || layout.width === undefined) layout.width = width();
    for (const [name, ticks] of Object.entries(fitLayout(layout, null, layout.width, theme))) {
      layout[name] = Object.assign(layout[name] || {}, ticks, {labelalias: undefined, nticks: undefined});
    }
    if (data.select) {
      layout.clickmode = layout.clickmode || "event+select";
      layout.hovermode = layout.hovermode === undefined ? "closest" : layout.hovermode;
    }
    // One config object per chart, kept: Plotly.react compares the config too, and a new one (new button callbacks)
    // would make it plot the chart anew (Plotly.newPlot), dropping the learner's zoom.
    state.config = state.config || {
      displaylogo: false, showSendToCloud: false, responsive: false,
      modeBarButtonsToRemove: ["lasso2d", "select2d", "sendChartToCloud", "toImage"],
      modeBarButtonsToAdd: [exportButton("svg", Plotly, state), exportButton("png", Plotly, state)],
    };
    const drawn = Plotly.react(box, fig.data || [], layout, state.config);
    if (!state.wired) {
      state.wired = true;
      box.on("plotly_selected", (event) => {
        if (state.select && event) {
          state.selectedAt = performance.now();
          state.send({selection: selectionOf(event)});
        }
      });
      // A tap on a touch screen is also a click of its own a moment later (the browser's emulated mouse events),
      // which deselects the point just selected (seen in Chromium at 390 px, touch: selected, click, deselect):
      // a deselect that soon after a selection is that echo, not the learner's.
      box.on("plotly_deselect", () => {
        if (state.select && performance.now() - (state.selectedAt || 0) > DESELECT_ECHO_MS) {
          state.send({selection: SELECTION_EMPTY});
        }
      });
      state.resize = new ResizeObserver(() => {
        if (state.stretch && box._fullLayout && Math.abs(box._fullLayout.width - width()) > 1) {
          const w = width(), L = box._fullLayout;
          // the new plot lengths: the old ones scaled by the new width's share (the margins stay)
          const scaled = {};
          for (const name of Object.keys(state.fit || {})) {
            const ax = L[name];
            if (ax) scaled[name] = {_length: ax._length + (w - L.width) * (ax.domain[1] - ax.domain[0]), domain: ax.domain,
                                    range: ax.range};
          }
          Plotly.relayout(box, {width: w, ...relayoutTicks(fitLayout(box.layout, scaled, w, themeOf(parentElement)))});
        }
      });
      // Zoomed (or zoomed back out): the visible keys labelled for the width again (not the zoom's own relayout)
      box.on("plotly_relayout", (event) => {
        if (!state.fit || !event || !Object.keys(event).some((k) => /^xaxis\d*\.(range|autorange)/.test(k))) return;
        Plotly.relayout(box, relayoutTicks(fitLayout(box.layout, box._fullLayout, box._fullLayout.width,
                                                     themeOf(parentElement))));
      });
      state.resize.observe(parentElement);
    }
    state.fit = layout.meta && layout.meta.fit_ticks;
    state.select = !!data.select;
    state.stretch = data.width === "stretch";
    state.send = (value) => setStateValue("selection", value.selection);
    return drawn;
  });
  return () => {
    cancelled = true;
    // Called before every new call too (a changed figure or theme): the chart stays; gone from the page, freed.
    setTimeout(() => {
      if (!box.isConnected && window.Plotly) {
        if (state.resize) state.resize.disconnect();
        window.Plotly.purge(box);
      }
    }, 0);
  };
}
