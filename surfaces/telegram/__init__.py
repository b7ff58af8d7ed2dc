"""The Telegram surface (python-telegram-bot): not built yet; it comes next, on the same seam as the dashboard.

It has no ``launch``, so enabling ``surfaces.telegram`` makes ``acp-relay run`` refuse to start with a
clear message instead of running without it.
"""
