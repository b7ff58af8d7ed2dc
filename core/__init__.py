"""acp-relay core: surface-agnostic. Imports no platform SDK (checked by tests/test_boundaries.py)."""
