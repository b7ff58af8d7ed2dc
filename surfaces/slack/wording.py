"""Every sentence the Slack surface shows a person itself, in Slack's own spelling.

The core's prose (``core.engine.wording``) names no Slack command; the hints here do, because they
are Slack's: ``!new`` in a thread, or a new thread, starts a conversation afresh.
"""

from __future__ import annotations

__all__ = [
    "COMPACT_NO_THREAD",
    "COMPACT_SENT",
    "RESET_HINT",
    "WORKING_REACTION",
    "WORKING_STATUS",
    "linked_text",
]

#: Appended where the core's prose suggests starting a new conversation.
RESET_HINT = "(Here: write `!new` in this thread, or start a new thread.)"
#: ``assistant.threads.setStatus`` while a turn runs ("<app> is working…").
WORKING_STATUS = "is working…"
#: The reaction on the person's message while a turn runs, where the assistant status is not available.
WORKING_REACTION = "hourglass_flowing_sand"
#: ``/compact`` where the person has no conversation with the agent in this channel yet.
COMPACT_NO_THREAD = (
    "There is no conversation with the agent in this channel for you yet. Mention the app to start one "
    "(it answers in a thread); to compact it later, write `!compact` in that thread, or use `/compact` here."
)
#: ``/compact`` acknowledged: the compaction's answer appears in the thread it applies to.
COMPACT_SENT = "Sent `/compact` to your latest conversation in this channel; the answer appears in its thread."


def linked_text(words: str) -> str:
    """A message a person linked to (Slack shows its words), as the agent reads it."""
    return f"Linked message:\n{words}"
