"""Chaos runs of the whole relay process against each platform's fake (``make chaos``)."""
