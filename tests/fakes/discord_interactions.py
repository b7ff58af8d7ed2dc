"""The fake Discord's interaction routes: callbacks, the original response, followups and their edits.

A mixin of ``FakeDiscord`` (``discord_api``), kept apart so each module stays one concept: what a
slash command or a button press leads to on the REST side.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from tests.fakes.discord_payloads import (
    EPHEMERAL,
    LOADING,
    Channel,
    Interaction,
    Json,
    error_response,
    json_response,
    too_long,
)

__all__ = ["InteractionRoutes"]


class InteractionRoutes:
    """``/interactions/...`` and ``/webhooks/...`` as Discord answers them."""

    interactions: dict[int, Interaction]
    channels: dict[int, Channel]
    users: dict[int, Json]
    bot: Json

    def _message(self, ch: Channel, author: Json, content: str, **kw: Any) -> Json:
        raise NotImplementedError

    @staticmethod
    def _apply_edit(msg: Json, body: Json) -> None:
        raise NotImplementedError

    def _by_token(self, token: str) -> Interaction | None:
        return next((i for i in self.interactions.values() if i.token == token), None)

    async def _r_callback(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        inter = self.interactions.get(int(parts[1]))
        if inter is None or inter.token != parts[2]:
            return error_response(404, 10062, "Unknown interaction")
        if inter.callback_type is not None:
            return error_response(400, 40060, "Interaction has already been acknowledged.")
        inter.callback_type = kind = int(body["type"])
        data = body.get("data") or {}
        resource: Json = {"type": kind}
        if kind in (4, 5):  # a message (type 5: "is thinking…" until the original is edited)
            flags = int(data.get("flags", 0)) | (LOADING if kind == 5 else 0)
            msg = self._message(self.channels[inter.channel_id], self.bot, data.get("content") or "",
                                components=data.get("components"), flags=flags, webhook=True)
            msg["interaction_metadata"] = {"id": str(inter.id), "type": 2, "user": self.users[inter.user_id]}
            inter.original = msg
            resource["message"] = msg
        return json_response({"interaction": {"id": str(inter.id), "type": 2 if inter.kind == "command" else 3,
                                      "response_message_id": inter.original["id"] if inter.original else None,
                                      "response_message_loading": kind == 5,
                                      "response_message_ephemeral": bool((data.get("flags") or 0) & EPHEMERAL)},
                      "resource": resource})

    async def _r_original(self, request: web.Request, parts: list[str], body: Json) -> web.StreamResponse:
        inter = self._by_token(parts[2])
        if inter is None or inter.original is None:
            return error_response(404, 10008, "Unknown Message")
        if request.method == "DELETE":
            self.channels[inter.channel_id].messages.pop(int(inter.original["id"]), None)
            return web.Response(status=204)
        if request.method == "PATCH":
            if (bad := too_long(body.get("content"))) is not None:
                return bad
            self._apply_edit(inter.original, body)
        return json_response(inter.original)

    async def _r_followup(self, request: web.Request, parts: list[str], body: Json) -> web.Response:
        inter = self._by_token(parts[2])
        if inter is None:
            return error_response(404, 10015, "Unknown Webhook")
        if (bad := too_long(body.get("content"))) is not None:
            return bad
        msg = self._message(self.channels[inter.channel_id], self.bot, body.get("content") or "",
                            components=body.get("components"), flags=int(body.get("flags") or 0), webhook=True)
        inter.followups.append(int(msg["id"]))
        return json_response(msg)

    async def _r_webhook_message(self, request: web.Request, parts: list[str], body: Json) -> web.StreamResponse:
        inter = self._by_token(parts[2])
        mid = int(parts[4]) if parts[4].isdigit() else 0
        if inter is None or mid not in inter.followups:
            return error_response(404, 10008, "Unknown Message")
        msg = self.channels[inter.channel_id].messages.get(mid)
        if msg is None:
            return error_response(404, 10008, "Unknown Message")
        if request.method == "PATCH":
            self._apply_edit(msg, body)
        return json_response(msg)
