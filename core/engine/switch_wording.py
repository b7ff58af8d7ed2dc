"""The sentences of the conversation controls: projects, agents, sessions, modes, cost and the agent's
notices. Like all core prose they name no surface command (a reset is "start a new conversation")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "BUSY_SWITCH",
    "MORE_LABEL",
    "NO_LIST",
    "NO_MODES",
    "NO_PROJECT",
    "NO_PROJECTS",
    "NO_PROJECT_IN_USE",
    "NUMBERED_HINT",
    "PICK_EXPIRED",
    "age_text",
    "agent_notice_line",
    "agent_switched_text",
    "agents_text",
    "already_text",
    "attached_text",
    "cost_text",
    "mode_not_kept_text",
    "mode_refused_text",
    "mode_switched_text",
    "modes_text",
    "no_sessions_text",
    "project_folder_missing_text",
    "project_left_text",
    "project_switched_text",
    "projects_text",
    "sessions_text",
    "unknown_name_text",
    "unknown_session_text",
]

BUSY_SWITCH = ("An answer is running, so nothing was switched. Choose again once it is done, "
               "or stop it first.")
NO_PROJECTS = "No projects are configured, so this conversation works in its agent's folder."
#: The project picker's way back to the agent's own folder (chosen as ``/project none`` too).
NO_PROJECT = "None: the agent's own folder"
NO_PROJECT_IN_USE = "This conversation uses no project, so nothing was changed."
NO_LIST = "This agent cannot list its sessions, so there are none to choose from here."
NO_MODES = "This agent offers no modes to choose from."
NUMBERED_HINT = "Reply with a number to choose."
MORE_LABEL = "More…"
#: A numbered reply or a button of a list that is no longer open.
PICK_EXPIRED = "That list is no longer open, so nothing was changed."
_NEXT = "A new session starts with your next message; the previous one is kept and can be continued later."


def projects_text(current: str, folder: str) -> str:
    """Above the project buttons."""
    return f"Project: {current or 'none'} (`{folder}`). Choose a project:"


def project_switched_text(name: str, folder: str) -> str:
    """A project was chosen."""
    return f"Switched to the project {name} (`{folder}`). {_NEXT}"


def project_left_text(name: str, folder: str) -> str:
    """The conversation left its project for the agent's own folder."""
    return f"Left the project {name}: the agent works in its own folder (`{folder}`). {_NEXT}"


def project_folder_missing_text(name: str, folder: str) -> str:
    """The configured folder is gone."""
    return f"The folder of the project {name} (`{folder}`) does not exist, so nothing was changed."


def agents_text(current: str) -> str:
    """Above the agent buttons."""
    return f"Agent: {current}. Choose an agent:"


def agent_switched_text(name: str) -> str:
    """An agent was chosen."""
    return f"Switched to the agent {name}. {_NEXT}"


def already_text(what: str, name: str) -> str:
    """The choice is the one in use."""
    return f"This conversation already uses the {what} {name}, so nothing was changed."


def unknown_name_text(what: str, name: str, known: Sequence[str]) -> str:
    """A name that is not configured (or offered)."""
    listed = ", ".join(known) if known else "none"
    return f"There is no {what} called {name!r}, so nothing was changed. Known: {listed}."


def age_text(seconds: float | None) -> str:
    """How long ago a session was last used, in words ("" when unknown)."""
    if seconds is None:
        return ""
    seconds = max(0.0, seconds)
    for size, unit in ((86400, "day"), (3600, "hour"), (60, "minute")):
        if seconds >= size:
            n = int(seconds // size)
            return f"{n} {unit}{'s' if n != 1 else ''} ago"
    return "just now"


def sessions_text(folder: str) -> str:
    """Above the session buttons."""
    return f"The agent's sessions in `{folder}`, newest first. Choose one to continue it here:"


def no_sessions_text(folder: str) -> str:
    """The agent lists none for this folder."""
    return f"The agent has no sessions in `{folder}` yet."


def attached_text(title: str, age: str, replayed: bool) -> str:
    """A session from the list now answers this conversation."""
    what = f"the session \u201c{title}\u201d" if title else "that session"
    when = f" (last used {age})" if age else ""
    skipped = " Its earlier messages are not shown again here." if replayed else ""
    return f"Continuing {what}{when}: the agent remembers it.{skipped}"


def unknown_session_text(session_id: str) -> str:
    """The agent does not know the session."""
    return f"The agent does not know the session {session_id}, so nothing was changed."


def modes_text(current: str) -> str:
    """Above the mode buttons."""
    return f"Mode: {current or 'default'}. Choose a mode:"


def mode_switched_text(label: str) -> str:
    """A mode or option was chosen."""
    return f"Switched to {label}."


def mode_refused_text(label: str, gate: str) -> str:
    """The tool gate forbids a mode in which the agent runs tools without asking."""
    return (f"{label} lets the agent run tools without asking, and this relay is set to {gate} before each "
            "tool runs, so the mode was not changed.")


def mode_not_kept_text(mode: str) -> str:
    """The mode chosen earlier could not be set on a new session."""
    return f"The mode chosen earlier ({mode}) could not be set again, so the agent runs in its own default mode."


def cost_text(costs: Mapping[str, float]) -> str:
    """``0.42 USD`` (several currencies joined with "+"); "" when nothing was reported."""
    return " + ".join(f"{_amount(amount)} {currency}" for currency, amount in costs.items())


def _amount(amount: float) -> str:
    return f"{amount:.4f}" if 0 < amount < 0.01 else f"{amount:.2f}"


_SEVERITY = {"info": "\u2139\ufe0f", "warning": "\u26a0\ufe0f", "error": "\u2757"}


def agent_notice_line(severity: str, title: str, description: str) -> str:
    """A notice from the agent as one line: its severity's mark, its title, then what it says."""
    mark = _SEVERITY.get(severity.lower(), _SEVERITY["info"])
    body = f"{title}: {description}" if title and description else title or description
    return f"{mark} {body}"
