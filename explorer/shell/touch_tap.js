// Attention Explorer: a tap on a chart opens what was tapped (streamlit_app.py loads this once per page).
// Plotly builds a click's points from the last hover, and a finger gives no hover before it taps: on a touch screen
// the first tap on "Every head at a glance" opened nothing and every later tap opened the cell tapped before it
// (plotly.js: src/components/fx/click.js reads gd._hoverdata). So a touch that starts on a chart's drag layer first
// hovers there, at the finger's point, with the mouse move Plotly itself listens to; the tap then finds that cell.
if (!window.attentionExplorerTapHover) {
  window.attentionExplorerTapHover = true;
  document.addEventListener("touchstart", (event) => {
    const target = event.target;
    if (event.touches.length !== 1 || !target.closest || !target.closest(".js-plotly-plot .nsewdrag")) return;
    const touch = event.touches[0];
    target.dispatchEvent(new MouseEvent("mousemove", {clientX: touch.clientX, clientY: touch.clientY, bubbles: true}));
  }, {capture: true, passive: true});
}
