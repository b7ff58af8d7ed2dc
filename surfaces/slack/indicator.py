"""The "agent is working" indicator: Slack's assistant status, else a reaction, else nothing.

``assistant.threads.setStatus`` shows "<app> is working…" under the thread (Slack clears it when
the app replies, or after two minutes, so the core refreshes it). Where Slack does not allow it
(an app without the assistant feature, a channel type it does not support), an hourglass reaction on
the person's message says the same; where reactions fail too, nothing is shown. A channel's
fallback is remembered, and a failure here never costs a turn (the core only logs it).
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import DeliveryFailed
from surfaces.slack import wording
from surfaces.slack.errors import SDK_FAILURES, delivery_error, error_code
from surfaces.slack.keys import Thread

__all__ = ["WorkingIndicator"]

log = logging.getLogger("acp_relay.slack.indicator")

_HARMLESS = frozenset({"already_reacted", "no_reaction", "message_not_found"})


def _unsupported(exc: SlackApiError) -> bool:
    """Slack said no for good (not a 429, not its own outage)."""
    return type(delivery_error(exc)) is DeliveryFailed and bool(error_code(exc)) and exc.response.status_code < 500


class WorkingIndicator:
    """Shows and clears the working indicator of each conversation."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        self._mode: dict[str, str] = {}  # channel -> "reaction" | "none" (absent: the assistant status)
        self._reacted: dict[str, tuple[str, str]] = {}  # conversation key -> (channel, ts) with our reaction

    async def show(self, thread: Thread, active: bool, message_ts: str | None) -> None:
        """Show (``active``) or clear the indicator; ``message_ts`` is the message it answers."""
        mode = self._mode.get(thread.channel, "status")
        if mode == "status":
            try:
                await self._client.assistant_threads_setStatus(
                    channel_id=thread.channel, thread_ts=thread.thread_ts,
                    status=wording.WORKING_STATUS if active else "")
                return
            except SlackApiError as exc:
                if not _unsupported(exc):
                    raise delivery_error(exc) from exc
                log.info("no assistant status in %s (%s); a reaction shows the work instead", thread.channel,
                         error_code(exc))
                mode = self._mode[thread.channel] = "reaction"
            except SDK_FAILURES as exc:
                raise delivery_error(exc) from exc
        if mode == "reaction":
            await self._react(thread, active, message_ts or thread.thread_ts)

    async def _react(self, thread: Thread, active: bool, message_ts: str) -> None:
        channel, ts = self._reacted.pop(thread.key, (thread.channel, message_ts))
        try:
            if active:
                self._reacted[thread.key] = (channel, ts)
                await self._client.reactions_add(channel=channel, timestamp=ts, name=wording.WORKING_REACTION)
            else:
                await self._client.reactions_remove(channel=channel, timestamp=ts, name=wording.WORKING_REACTION)
        except SlackApiError as exc:
            if error_code(exc) in _HARMLESS:
                return
            if _unsupported(exc):
                log.info("no reactions in %s either (%s); nothing shows the work there", channel, error_code(exc))
                self._mode[thread.channel] = "none"
            raise delivery_error(exc) from exc
        except SDK_FAILURES as exc:
            raise delivery_error(exc) from exc
