"""Platform adapters. Each one only translates between its platform and the core; none imports another."""

from __future__ import annotations

__all__: list[str] = []
