"""The sentences of a conversation both ways: the agent's forms, steering a running turn, and the files
the agent shares. Like ``core.engine.wording``, they name no surface's command."""

from __future__ import annotations

__all__ = [
    "ADD_TO_TURN_LABEL",
    "CANCEL_LABEL",
    "DECLINE_LABEL",
    "DONE_LABEL",
    "FORM_ANSWER_BY_REPLY",
    "FORM_EXPIRED",
    "FORM_NOT_ASKED",
    "NO_LABEL",
    "REMOVE_LABEL",
    "SEND_NOW_LABEL",
    "SKIP_LABEL",
    "STEER_EMPTY",
    "STEER_FAILED",
    "STEER_UNSUPPORTED",
    "URL_HINT",
    "URL_NUMBERED_HINT",
    "YES_LABEL",
    "diff_caption",
    "file_caption",
    "file_not_sent",
    "form_numbered_hint",
    "form_outcome",
    "form_press_text",
    "queue_dropped_text",
    "receipt_outcome",
    "steered_text",
    "too_big",
]

DECLINE_LABEL = "Decline"
CANCEL_LABEL = "Cancel"
SKIP_LABEL = "Skip"
DONE_LABEL = "Done"
YES_LABEL = "Yes"
NO_LABEL = "No"

FORM_ANSWER_BY_REPLY = "Answer by replying with your words."
FORM_EXPIRED = "This question has expired; your answer was not applied."
FORM_NOT_ASKED = "The agent sent a form that cannot be shown here, so it was declined: {why}"
URL_NUMBERED_HINT = "Reply `done` once you have, or `decline` or `cancel`."
URL_HINT = "The relay does not open links: open it yourself if you trust it, then press Done."

ADD_TO_TURN_LABEL = "Add to the running turn"
SEND_NOW_LABEL = "Send now"
REMOVE_LABEL = "Cancel"
STEER_UNSUPPORTED = ("This agent cannot take a message in the middle of a turn, so it waits in line "
                     "and will be answered when the current one is done.")
STEER_EMPTY = "Write the words to add to the running turn after the command."
STEER_FAILED = "The agent did not take the message into its running turn, so it waits in line."


def form_numbered_hint(kind: str, count: int, optional: bool) -> str:
    """How to answer without buttons: the number of a choice (several, for a multiple choice), yes or
    no, or words; and the keywords that decline, cancel or skip."""
    how = {"choice": f"Reply with the number of your choice (1 to {count})",
           "multi": "Reply with the numbers of your choices, separated by commas",
           "boolean": "Reply yes or no"}.get(kind, "Reply with your answer")
    words = "`decline` or `cancel`" + (", or `skip` to leave it empty" if optional else "")
    return f"{how}; or reply {words}."


def form_outcome(outcome: str) -> str:
    """The last line of a settled form (or link) card."""
    return {
        "accept": "✅ Answered.",
        "completed": "✅ Done: the agent says the link was followed through.",
        "decline": "🚫 Declined.",
        "cancel": "✖️ Cancelled.",
        "timed_out": "⌛ No answer in time, so the agent was told no.",
        "stopped": "✖️ Cancelled: the turn was stopped.",
    }.get(outcome, "✖️ Cancelled.")


def form_press_text(outcome: str) -> str:
    """What a press that ended a form says to the person who pressed."""
    return {"accept": "Sent to the agent.", "decline": "Declined.", "cancel": "Cancelled."}.get(outcome, "Noted.")


def queue_dropped_text(count: int) -> str:
    """A stop also emptied the queue."""
    return f"Also dropped {count} queued message{'s' if count != 1 else ''}."


def receipt_outcome(outcome: str) -> str:
    """A queued message's receipt once the person chose what to do with it."""
    return {"steered": "↪️ Added to the running turn.",
            "removed": "🗑 Removed from the queue: it will not be answered.",
            "send_now": "⏭ Sent next: the running turn was stopped.",
            "answering": "▶️ Answering it now.",
            "dropped": "🗑 Dropped: the turn was stopped, so it will not be answered.",
            "deleted": "🗑 Deleted before it was answered: the agent never got it."}.get(outcome, "")


def steered_text(words: str) -> str:
    """What the transcript shows for a message added to the running turn."""
    short = " ".join(words.split())
    return f"↪️ Added to the running turn: {short[:200]}{'…' if len(short) > 200 else ''}"


def file_caption(name: str, size: int) -> str:
    """Under a file the agent shared."""
    return f"📎 {name} ({_size(size)})"


def diff_caption(files: int, added: int, removed: int) -> str:
    """Under the turn's whole diff."""
    return f"📝 The changes of this turn: {files} file{'s' if files != 1 else ''}, +{added} -{removed}"


def file_not_sent(name: str, why: str) -> str:
    """A file the agent shared that was not sent, and why (``outside``, ``missing``, ``too_big``...)."""
    reasons = {
        "outside": "it is outside the conversation's project folder",
        "missing": "it does not exist",
        "not_file": "it is not a file",
        "unreadable": "it could not be read",
        "no_files": "files cannot be sent here",
    }
    return f"{name} was not sent: {reasons.get(why, why)}."


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def too_big(size: int, limit: int) -> str:
    """The reason for a file over the platform's limit."""
    return f"it is {_size(size)}, over the {_size(limit)} this platform takes"
