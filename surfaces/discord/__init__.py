"""The Discord surface (discord.py): not built yet; it comes next, on the same seam as the dashboard.

It has no ``launch``, so enabling ``surfaces.discord`` makes ``acp-relay run`` refuse to start with a
clear message instead of running without it.
"""
