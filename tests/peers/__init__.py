"""Peer tier: the real npm agents (claude-agent-acp, codex-acp) against the loopback model API."""
