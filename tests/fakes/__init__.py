"""Test doubles: a scripted fake ACP agent (acp_agent.py) and the ACP schema oracle (acp_schema.py)."""
