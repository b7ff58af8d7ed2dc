"""What a Slack message means for the relay: which thread (conversation) it belongs to, and its text.

Slack sends a message's text in its own markup: ``&amp;``/``&lt;``/``&gt;`` escapes, ``<@U123>``
mentions, ``<#C1|general>`` channels, ``<https://x|label>`` links. The agent gets what the person
typed (``person_text``), with the app's own mention removed.

Which messages are the relay's (``heard``):

* a mention of the app in a channel starts a thread under that message, or continues the thread it
  was written in (``app_mention``);
* in a thread the app is part of, every reply continues it, without a mention;
* in a direct message with the app every message is for it: a message starts a thread under it,
  replies in that thread continue it;
* nothing from a bot (the app itself included), and no deletions or joins;
* a person's edit of a message (``message_changed`` with its edit time) as its new words
  (``edited``); one without an edit time is Slack adding a link's preview; a message deleted
  (``message_deleted``) as that (``deleted``).

The files shared with a message come along (``Heard.files``), to download before it is handed over;
the words of a message it forwards, or links to, come after its own, each said to be one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from core.surface_api import forwarded_text
from surfaces.slack import wording
from surfaces.slack.files import SharedFile, shared_files
from surfaces.slack.keys import Thread

__all__ = ["EMPTY_MENTION", "Edited", "Heard", "Unreadable", "deleted", "edited", "heard", "message_id",
           "person_text", "strip_mention"]

#: What a mention with nothing after it means: the command list.
EMPTY_MENTION = "!help"
#: Message subtypes that are a person writing (a reply also sent to the channel, a file with a comment).
_PERSON_SUBTYPES = frozenset({"", "thread_broadcast", "file_share"})
_ANGLE = re.compile(r"<([^<>]*)>")


class Unreadable(ValueError):
    """An event whose fields are not what Slack documents (its message says which, never its text)."""


def _field(event: Mapping[str, Any], name: str) -> str:
    value = event.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise Unreadable(f"its {name} is a {type(value).__name__}, not a string")
    return value


@dataclass(frozen=True, slots=True)
class Heard:
    """One message the relay answers: its thread, who wrote it, what they typed, and its ts."""

    thread: Thread
    user: str
    text: str
    ts: str
    files: tuple[SharedFile, ...] = ()  # shared with it, still to download


def message_id(team: str, channel: str, ts: str) -> str:
    """A message's id, unique in the Slack surface (a mention arrives twice: as ``app_mention``
    and as ``message``; both carry the same id, so it is answered once)."""
    return f"{team}:{channel}:{ts}"


def strip_mention(text: str, bot_user_id: str) -> str:
    """``text`` without the app's own mentions (``<@UBOT>``, ``<@UBOT|name>``)."""
    if not bot_user_id:
        return text.strip()
    return re.sub(rf"[ \t]*<@{re.escape(bot_user_id)}(?:\|[^>]*)?>[ \t]*", " ", text).strip()


def _link(inner: str) -> str:
    target, _, label = inner.partition("|")
    if target.startswith("@"):
        return f"@{label or target[1:]}"
    if target.startswith("#"):
        return f"#{label or target[1:]}"
    if target.startswith("!"):
        word = target[1:].split("^", 1)[0]
        return label or f"@{word}"
    if target.startswith("mailto:"):
        return label or target.removeprefix("mailto:")
    if not label or label == target or target.split("://", 1)[-1] == label:
        return target
    return f"{label} ({target})"


def person_text(text: str) -> str:
    """Slack's markup -> what the person typed: links, mentions and channels as words, escapes undone."""
    text = _ANGLE.sub(lambda m: _link(m.group(1)), text)
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _mentions(text: str, bot_user_id: str) -> bool:
    return bool(bot_user_id) and re.search(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", text) is not None


def heard(event: Mapping[str, Any], *, team: str, bot_user_id: str, joined: Callable[[Thread], bool],
          mention_event: bool) -> Heard | None:
    """The relay's reading of one ``message`` or ``app_mention`` event; None: not for the relay.

    ``Unreadable`` for an event whose fields are not the strings Slack documents."""
    if event.get("bot_id") or event.get("bot_profile") or event.get("subtype") not in (None, *_PERSON_SUBTYPES):
        return None  # a bot's message, an edit, a deletion, a join: never the relay's, whatever their fields
    user, channel, ts = _field(event, "user"), _field(event, "channel"), _field(event, "ts")
    if not user or not channel or not ts or user == bot_user_id:
        return None
    raw = _field(event, "text")
    thread_ts = _field(event, "thread_ts")
    thread = Thread(team, channel, thread_ts or ts)
    if mention_event:
        pass  # a mention starts a thread, or joins the one it was written in
    elif event.get("channel_type") == "im" or channel.startswith("D"):
        pass  # everything in a DM with the app is for it
    elif _mentions(raw, bot_user_id) or not thread_ts or not joined(thread):
        return None  # a mention arrives as app_mention as well; other channel messages are not ours
    files = shared_files(event)
    text = "\n\n".join(filter(None, (person_text(strip_mention(raw, bot_user_id)).strip(), *_shared(event))))
    return Heard(thread, user, text or ("" if files else EMPTY_MENTION), ts, files)


@dataclass(frozen=True, slots=True)
class Edited:
    """A person's edit: the message as it reads now (``heard.ts`` is the message's own), and the edit's ts."""

    heard: Heard
    edit_ts: str


def edited(event: Mapping[str, Any], *, team: str, bot_user_id: str, joined: Callable[[Thread], bool]) -> Edited | None:
    """A ``message_changed`` event as a person's edit of a message that is the relay's as it reads now (a DM,
    a reply in a thread the app is part of, a mention: one edited in too); None: not the relay's, a bot's
    message changed, or Slack added a link's preview (no edit time)."""
    inner = event.get("message")
    if not isinstance(inner, dict) or not isinstance(inner.get("edited"), dict):
        return None
    edit_ts = _field(inner["edited"], "ts")
    now = {**inner, "channel": _field(event, "channel"), "channel_type": event.get("channel_type"), "subtype": None}
    got = heard(now, team=team, bot_user_id=bot_user_id, joined=joined,
                mention_event=_mentions(_field(inner, "text"), bot_user_id))
    if got is None or not edit_ts or got.text == EMPTY_MENTION:
        return None
    return Edited(got, edit_ts)


def deleted(event: Mapping[str, Any], *, team: str) -> Heard | None:
    """A ``message_deleted`` event as the message a person deleted (its thread, who wrote it, its ts, no
    words); None for a bot's message."""
    before = event.get("previous_message")
    if not isinstance(before, dict) or before.get("bot_id") or before.get("bot_profile"):
        return None
    channel, ts = _field(event, "channel"), _field(event, "deleted_ts") or _field(before, "ts")
    if not channel or not ts:
        return None
    return Heard(Thread(team, channel, _field(before, "thread_ts") or ts), _field(before, "user"), "", ts)


def _shared(event: Mapping[str, Any]) -> list[str]:
    """The words of the messages ``event`` forwards (``is_share``) or links to (``is_msg_unfurl``: a message's
    link, which Slack shows whole), each said to be one; a link's preview of a web page is not one."""
    attachments = event.get("attachments")
    out = []
    for shared in attachments if isinstance(attachments, list) else ():
        if not isinstance(shared, dict) or not (shared.get("is_share") or shared.get("is_msg_unfurl")):
            continue
        words = next((v for v in (shared.get("text"), shared.get("fallback")) if isinstance(v, str) and v.strip()), "")
        if words:
            words = person_text(words).strip()
            out.append(forwarded_text(words) if shared.get("is_share") else wording.linked_text(words))
    return out
