"""Discord's payloads as the fake sends them, and how a person reads a message.

Shared by the fake Discord (``discord_api``) and the tests that read back what it shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from aiohttp import web

__all__ = [
    "APP_ID",
    "BOT_ID",
    "DISCORD_EPOCH_MS",
    "EPHEMERAL",
    "LOADING",
    "MAX_CONTENT",
    "MESSAGE_CONTENT_INTENT",
    "Channel",
    "Failure",
    "Interaction",
    "Json",
    "buttons",
    "error_response",
    "failure_response",
    "guild_payload",
    "interaction_payload",
    "json_response",
    "message_payload",
    "now",
    "oddly",
    "shown_text",
    "too_long",
    "transcript",
    "user",
]

DISCORD_EPOCH_MS = 1_420_070_400_000
BOT_ID = 900_000_000_000_000_001
APP_ID = 900_000_000_000_000_002
MESSAGE_CONTENT_INTENT = 1 << 15
EPHEMERAL, LOADING = 64, 128
MAX_CONTENT = 2000
Json = dict[str, Any]


def user(uid: int, name: str, *, bot: bool = False) -> Json:
    """A user payload as Discord sends it."""
    return {"id": str(uid), "username": name, "global_name": name, "discriminator": "0", "avatar": None,
            "bot": bot, "public_flags": 0, "flags": 0}


_CODE = re.compile(r"(?ms)^```[^\n`]*\n(.*?)^```[ \t]*$\n?|(`+)(.+?)\2")
_ESCAPED = re.compile(r"\\([!-/:-@\[-`{-~])")
_EMPHASIS = re.compile(r"(?<![\w\\])(\*\*\*|\*\*|\*|__|_|~~|\|\|)(?=\S)(.+?)(?<=\S)\1(?!\w)")
_HEADING = re.compile(r"(?m)^(?:#{1,3}|-#) ")


def shown_text(content: str) -> str:
    """What a person reads in a message: Discord's Markdown rendered (code kept as it is, emphasis,
    headings and backslash escapes gone)."""
    out: list[str] = []
    pos = 0
    for m in _CODE.finditer(content):
        out.append(_shown_prose(content[pos:m.start()]))
        out.append(m.group(1) if m.group(1) is not None else m.group(3))
        pos = m.end()
    out.append(_shown_prose(content[pos:]))
    return "".join(out)


def _shown_prose(text: str) -> str:
    kept: list[str] = []

    def hold(m: re.Match[str]) -> str:
        kept.append(m.group(1))
        return f"\0{len(kept) - 1}\0"

    text = _ESCAPED.sub(hold, text)  # an escaped character is never markup
    for _ in range(3):
        text = _EMPHASIS.sub(lambda m: m.group(2), text)
    text = _HEADING.sub("", text)
    return re.sub(r"\0(\d+)\0", lambda m: kept[int(m.group(1))], text)


def now() -> str:
    """An ISO timestamp, as Discord writes them."""
    return datetime.now(UTC).isoformat()


def json_response(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    """JSON with ``Content-Type: application/json`` exactly (discord.py compares it for equality)."""
    return web.Response(status=status, body=json.dumps(data).encode(),
                        headers={"Content-Type": "application/json", **(headers or {})})


def error_response(status: int, code: int, message: str, **extra: Any) -> web.Response:
    """A Discord error body: its JSON code and message."""
    return json_response({"code": code, "message": message, **extra}, status)


@dataclass
class Failure:
    """A one-shot error for a route: 429 (with or without the ``Via`` header), 400, 403, 404, 500."""

    status: int
    code: int = 0
    message: str = "injected"
    retry_after: float = 0.05
    via: bool = False


@dataclass
class Channel:
    """A channel as the fake keeps it: kind 0 text, 1 DM, 11 public thread."""

    id: int
    type: int
    guild_id: int | None = None
    parent_id: int | None = None
    name: str = ""
    owner_id: int | None = None
    messages: dict[int, Json] = field(default_factory=dict)  # id -> payload, in posting order

    def payload(self) -> Json:
        data: Json = {"id": str(self.id), "type": self.type, "name": self.name}
        if self.guild_id is not None:
            data.update(guild_id=str(self.guild_id), position=0, permission_overwrites=[], nsfw=False,
                        rate_limit_per_user=0)
        if self.type == 11:
            data.update(parent_id=str(self.parent_id), owner_id=str(self.owner_id), message_count=0,
                        member_count=1, thread_metadata={"archived": False, "auto_archive_duration": 10080,
                                                         "archive_timestamp": now(), "locked": False},
                        flags=0)
        return data


@dataclass
class Interaction:
    """An interaction the fake sent: its callback, original response and followups."""

    id: int
    token: str
    channel_id: int
    user_id: int
    kind: str  # "command" or "press"
    name: str
    callback_type: int | None = None
    original: Json | None = None
    followups: list[int] = field(default_factory=list)


def guild_payload(guild_id: int, bot: Json, channels: Iterable[Channel]) -> Json:
    """GUILD_CREATE for the fake's one server: its text channels and threads, the bot its member."""
    channels = list(channels)
    gid = str(guild_id)
    role = {"id": gid, "name": "@everyone", "permissions": str((1 << 50) - 1), "position": 0, "color": 0,
            "hoist": False, "managed": False, "mentionable": False, "flags": 0}
    member = {"user": bot, "roles": [], "joined_at": now(), "deaf": False, "mute": False, "flags": 0}
    guild_channels = [c.payload() for c in channels if c.guild_id and c.type == 0]
    threads = [c.payload() for c in channels if c.type == 11]
    return {"id": gid, "name": "fake guild", "icon": None, "owner_id": "1", "roles": [role], "emojis": [],
            "stickers": [], "features": [], "channels": guild_channels, "threads": threads,
            "members": [member], "member_count": 1, "unavailable": False, "large": False,
            "joined_at": now(), "voice_states": [], "presences": [], "stage_instances": [],
            "guild_scheduled_events": [], "premium_tier": 0, "mfa_level": 0, "verification_level": 0,
            "explicit_content_filter": 0, "default_message_notifications": 0, "afk_timeout": 300,
            "system_channel_flags": 0, "nsfw_level": 0, "preferred_locale": "en-US",
            "premium_progress_bar_enabled": False}


def message_payload(mid: int, ch: Channel, author: Json, content: str, *, attachments: list[Json] | None = None,
                    mentions: list[Json] | None = None, components: list[Json] | None = None,
                    reference: Json | None = None, flags: int = 0, webhook: bool = False) -> Json:
    """A message as MESSAGE_CREATE and the REST API carry it (type 19 when it replies)."""
    msg: Json = {"id": str(mid), "channel_id": str(ch.id), "author": author, "content": content,
                 "timestamp": now(), "edited_timestamp": None, "tts": False, "mention_everyone": False,
                 "mentions": mentions or [], "mention_roles": [], "attachments": attachments or [],
                 "embeds": [], "pinned": False, "type": 19 if reference else 0, "flags": flags,
                 "components": components or []}
    if reference:
        msg["message_reference"] = reference
    if webhook:
        msg["webhook_id"] = str(APP_ID)
    if ch.guild_id is not None:
        msg["guild_id"] = str(ch.guild_id)
        msg["member"] = {"roles": [], "joined_at": now(), "deaf": False, "mute": False, "flags": 0}
    return msg


def interaction_payload(iid: int, token: str, type_: int, ch: Channel, who: Json, data: Json,
                        message: Json | None) -> Json:
    """INTERACTION_CREATE: an application command (type 2) or a button press (type 3, with its message)."""
    payload: Json = {"id": str(iid), "application_id": str(APP_ID), "type": type_, "token": token,
                     "version": 1, "channel_id": str(ch.id), "channel": ch.payload(), "data": data,
                     "locale": "en-US", "entitlements": [], "attachment_size_limit": 8_388_608,
                     "app_permissions": str((1 << 50) - 1)}
    if ch.guild_id is not None:
        payload.update(guild_id=str(ch.guild_id), guild_locale="en-US", context=0,
                       member={"user": who, "roles": [], "joined_at": now(), "deaf": False, "mute": False,
                               "flags": 0, "permissions": str((1 << 50) - 1)})
    else:
        payload.update(user=who, context=1)
    if message is not None:
        payload["message"] = message
    return payload


def buttons(message: Json) -> list[tuple[str, str]]:
    """The (label, custom id) of each button under a message."""
    return [(b["label"], b["custom_id"]) for row in message.get("components", []) for b in row["components"]]


def transcript(channels: Iterable[Channel]) -> str:
    """Every channel as a person reads it: who wrote what, edits, buttons, who alone sees it."""
    lines: list[str] = []
    for ch in channels:
        if not ch.messages:
            continue
        where = {0: f"#{ch.name}", 1: "DM", 11: f"thread '{ch.name}'"}[ch.type]
        lines.append(f"== {where} ({ch.id})")
        for m in ch.messages.values():
            tags = []
            if m.get("_edits"):
                tags.append(f"edited {m['_edits']}x")
            if m["flags"] & EPHEMERAL:
                tags.append("only the asker sees this")
            if m["flags"] & LOADING:
                tags.append("STILL THINKING")
            if m.get("message_reference"):
                tags.append(f"reply to {m['message_reference']['message_id']}")
            labels = " ".join(f"[{label}]" for label, _ in buttons(m))
            who = m["author"]["username"] if isinstance(m["author"], dict) else f"{m['author']} (unreadable)"
            head = who + (f" ({', '.join(tags)})" if tags else "")
            lines.append(f"-- {head}: {m['content']}" + (f"\n   {labels}" if labels else ""))
    return "\n".join(lines)


def failure_response(f: Failure) -> web.Response:
    """The response an injected failure gets (a 429 as Discord or Cloudflare sends it)."""
    if f.status == 429:
        headers = {"Retry-After": str(f.retry_after), "X-RateLimit-Scope": "user"}
        if f.via:
            headers["Via"] = "1.1 google"
        return json_response({"message": "You are being rate limited.", "retry_after": f.retry_after, "global": False},
                     429, headers)
    return error_response(f.status, f.code, f.message)


def too_long(content: str | None) -> web.Response | None:
    """Discord's 400 for content over 2,000 characters, or None."""
    if content is not None and len(content) > MAX_CONTENT:
        return error_response(400, 50035, "Invalid Form Body", errors={"content": {"_errors": [
            {"code": "BASE_TYPE_MAX_LENGTH", "message": f"Must be {MAX_CONTENT} or fewer in length."}]}})
    return None


def oddly(how: str, response: web.Response) -> web.Response:
    """A 200 answer made into one discord.py cannot read (the call itself was carried out)."""
    if how == "not json":
        return web.Response(text="<html>ok</html>", content_type="text/html")
    data = json.loads(response.body)  # type: ignore[arg-type]
    if how == "no id":
        data.pop("id", None)
    else:  # "author is a name"
        data["author"] = data.get("author", {}).get("username", "someone")
    return json_response(data)
