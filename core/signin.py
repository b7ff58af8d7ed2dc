"""How a person signs an agent in: the login command per backend, and the sentence saying so.

Read by ``core.failures`` (the auth row's prose) and by the runtime (the command named when an agent
exits before answering because it is not logged in). A backend is read from the agent's command
when the caller does not know it yet.
"""

from __future__ import annotations

import os

__all__ = ["auth_prose", "login_command"]

_LOGIN_COMMAND = {"kiro": "kiro-cli login", "codex": "codex login"}
_BACKENDS = ("kiro", "claude", "codex")
_LOGIN_HOW = {
    "claude": "Set ANTHROPIC_API_KEY for the agent, or run claude on the machine where the relay runs "
    "and log in there.",
    "codex": "Set OPENAI_API_KEY for the agent, or run codex login on the machine where the relay runs.",
}


def _program(command: str) -> str:
    """The program's name: never a resolved path (it means nothing on another machine)."""
    return os.path.basename(command.strip()) if os.sep in command else (command.split() or [""])[0]


def _login_backend(backend: str, command: str) -> str:
    if backend in _BACKENDS:
        return backend
    name = _program(command).lower()
    return next((b for b in _BACKENDS if b in name), backend)


def login_command(backend: str, command: str = "") -> str:
    """What a person runs to sign the agent in (``kiro-cli login``), or "" when there is no such command.

    ``command`` is the agent's command (a resolved path is fine) or a login command already; the backend
    is read from it when ``backend`` is generic, because a caller may not know the backend yet.
    """
    return _LOGIN_COMMAND.get(_login_backend(backend, command), "")


def auth_prose(backend: str, line: str, command: str) -> str:
    """The sentence for an agent that is not signed in: what it said (``line``) and how to sign it in."""
    line = line.strip().rstrip(".")
    said = "" if not line or line.casefold() == "authentication required" else f'; it said: "{line}"'
    run = login_command(backend, command)
    how = f"Run {run} on the machine where the relay runs." if run else ""
    default = "Log the agent in on the machine where the relay runs."
    how = how or _LOGIN_HOW.get(_login_backend(backend, command), default)
    return f"The agent is not signed in{said}. {'' if run and run in line else how}".strip()
