// Attention Explorer: on a phone-wide screen, choosing a lesson closes the sidebar (streamlit_app.py loads this once
// per page). Streamlit 1.67 does so itself only when the browser's user agent names a phone (SidebarNav's link click
// collapses the sidebar when the user agent's device type is "mobile"), so a phone-wide window whose browser says
// "desktop" (a tablet's or a phone's "desktop site", a narrowed window) kept it open over 300 of 390 px, and since
// Streamlit remembers the sidebar's last state per app (localStorage "stSidebarCollapsed-…"), every reload opened it
// again. Here, a lesson chosen below Streamlit's own phone width (its "md" breakpoint, 768 px, under which it starts
// the sidebar closed) presses Streamlit's own collapse button when the sidebar is still open after the click: the
// same collapse Streamlit makes on a phone, remembered the same way, so reloads start closed too.
if (!window.attentionExplorerPhoneSidebar) {
  window.attentionExplorerPhoneSidebar = true;
  const PHONE = window.matchMedia("(max-width: 767.98px)");  // Streamlit's breakpoints.md less 0.02 (its nx())
  document.addEventListener("click", (event) => {
    if (!PHONE.matches || !event.target.closest || !event.target.closest('[data-testid="stSidebarNav"] a')) return;
    setTimeout(() => {  // after Streamlit's own handler: on a phone's user agent it has closed the sidebar already
      const sidebar = document.querySelector('[data-testid="stSidebar"]');
      const button = document.querySelector('[data-testid="stSidebarCollapseButton"] button');
      if (sidebar && sidebar.getAttribute("data-collapsed") === "false" && button) button.click();
    }, 0);
  });
}
