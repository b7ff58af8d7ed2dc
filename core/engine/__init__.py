"""The conversation engine: one core every surface plugs into."""
