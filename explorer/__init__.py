"""The Streamlit app's shared pieces: controls and link state, scenarios, figures, text views.

``figures``, ``scenarios`` and ``textviews`` are pure (no Streamlit import) and unit-tested;
``state`` holds the Streamlit widgets shared by every page.
"""
