"""Maintenance scripts of the repository (run as ``python tools/<name>.py``; tests import them as ``tools.<name>``)."""
