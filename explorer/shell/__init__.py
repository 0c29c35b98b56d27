"""What every lesson shares: the sidebar, the lessons' declared controls and the link checks (``controls``), the shared
settings and the sentence (``settings``), the heat-map and bar builders (``charts``), text views
(``textviews``) and the section cache (``cache``).

``settings``, ``charts`` and ``textviews`` are pure (no Streamlit) and unit-tested; ``controls``
and ``cache`` use Streamlit.
"""
