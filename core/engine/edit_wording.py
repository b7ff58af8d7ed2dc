"""What the relay says when a person edits or deletes a message of theirs (``core.engine.edits``)."""

from __future__ import annotations

__all__ = ["COMMAND_EDITED", "DELETED_AFTER_READ", "edit_not_sent_text"]

#: A person edited a command (the relay's to run, never the agent's to read).
COMMAND_EDITED = "An edit to a command changes nothing, so this one was not applied. Send the command again to run it."
#: A person deleted a message the agent had already read (it stays in the agent's session).
DELETED_AFTER_READ = ("The agent had already read the message you deleted, so it is still part of this "
                      "conversation. Start a new conversation to leave it behind.")


def edit_not_sent_text(words: str) -> str:
    """A person edited a message the agent had already read (an agent reads a message once): said with the
    edited words' start, since a thread without quoted replies (Slack) shows it far below the message."""
    short = " ".join(words.split())
    return (f'The agent had already read the message you edited to "{short[:60]}{"…" if len(short) > 60 else ""}", '
            "so the edit was not sent to it. Send what changed as a new message.")
