"""Rendering Markdown the way the core would before it calls a surface (tests that post by hand)."""

from __future__ import annotations

from core.engine.blocks import Block, Text
from core.engine.surface import Rendered, Surface

__all__ = ["blocks", "md"]


def md(surface: Surface, markdown: str, *, plain: bool = False) -> Rendered:
    """``markdown`` as one ``Text`` block, rendered by ``surface``'s formatter."""
    return surface.formatter.render((Text(markdown),), plain=plain)


def blocks(surface: Surface, *shown: Block) -> Rendered:
    """``shown`` rendered by ``surface``'s formatter."""
    return surface.formatter.render(shown)
