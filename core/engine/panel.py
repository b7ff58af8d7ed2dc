"""The controls of a panel (the dashboard's Stop button and side panel: ``core.plugin.Controls``),
carried out by the relay that owns the conversation.

A relay alone carries out every control itself. Relays sharing a store: a control runs where the
conversation's turn, queue and agent session are, so that a tab served by any relay stops the owner's
turn and shows and changes the owner's session, and no second agent process is ever started for the
conversation. A control that may start the agent (the models, the pickers) takes a conversation that
nobody owns, as its next message would; status never does: it shows the owner's live view, else the
stored one. A control whose owner does not answer fails with a sentence saying so (status falls back
to the stored view, which names the owner).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable
from typing import Any

from core.acp.client import AcpError
from core.acp.session_handle import AcpRuntimeError
from core.engine import wording
from core.engine.engine import Engine
from core.engine.messages import ChoiceList, ConversationStatus
from core.engine.owner_calls import CallFailed, OwnerCalls, OwnerSilent
from core.failures import classify
from core.plugin import ControlFailed
from core.store import StoreError

__all__ = ["STATUS_WAIT_S", "PanelControls"]

log = logging.getLogger("acp_relay.engine.panel")

#: The panel asks for the status every second while an answer runs: the stored view after this long.
STATUS_WAIT_S = 1.0


class PanelControls:
    """``core.plugin.Controls`` on the engine; a failure becomes ``ControlFailed`` with the core's sentence."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        #: How long a control may take on the owner: its agent may have to start (spawn, initialize, a
        #: session), a stop waits for the turn to end.
        self._wait_s = 3 * engine.config.timeouts.request_s
        if engine.calls is not None:
            engine.calls.handlers.update({"stop": self._stop_called, "status": self._status_called,
                                          "models": self._models_called, "set_model": self._set_model_called,
                                          "choices": self._choices_called, "choose": self._choose_called})

    def _owner_elsewhere(self, key: str, *, take: bool) -> OwnerCalls | None:
        """The calls to send ``key``'s controls through when another relay owns it; None: carried out here.

        With ``take``, a conversation nobody owns becomes this relay's (the control may start its agent)."""
        ownership, calls = self._engine.ownership, self._engine.calls
        if ownership is None or calls is None or ownership.lease(key) is not None:
            return None
        try:
            if take:
                return None if ownership.take(key) else calls
            return calls if ownership.holder(key) is not None else None
        except StoreError as exc:
            raise ControlFailed(wording.OWNER_SILENT) from exc

    async def _remote(self, calls: OwnerCalls, kind: str, key: str, args: dict[str, Any],
                      wait_s: float | None = None) -> dict[str, Any]:
        try:
            return await calls.call(kind, key, args, wait_s=self._wait_s if wait_s is None else wait_s)
        except OwnerSilent as exc:
            raise ControlFailed(wording.OWNER_SILENT) from exc
        except CallFailed as exc:
            raise ControlFailed(str(exc)) from exc

    # -- the controls (``core.plugin.Controls``) -------------------------------------------

    async def stop(self, conversation_key: str) -> None:
        """End the running turn; returns once it has ended."""
        calls = self._owner_elsewhere(conversation_key, take=False)
        if calls is not None:
            await self._remote(calls, "stop", conversation_key, {})
        else:
            await self._engine.stop(conversation_key)

    async def status(self, conversation_key: str) -> ConversationStatus:
        """Where the conversation stands: the owner's live view, else the stored one (never starts an agent)."""
        calls = self._owner_elsewhere(conversation_key, take=False)
        if calls is not None:
            try:
                found = await self._remote(calls, "status", conversation_key, {}, STATUS_WAIT_S)
                return dataclasses.replace(ConversationStatus(**found), models=tuple(found["models"]))
            except ControlFailed:
                pass  # the stored view names the owner
        return self._engine.status(conversation_key)

    async def models(self, conversation_key: str) -> tuple[str | None, tuple[str, ...]]:
        """The current model and the agent's models (the agent starts if it had not)."""
        calls = self._owner_elsewhere(conversation_key, take=True)
        found = await (self._remote(calls, "models", conversation_key, {}) if calls is not None
                       else self._models_here(conversation_key))
        return found["model"], tuple(found["models"])

    async def set_model(self, conversation_key: str, model: str) -> None:
        """Switch the model."""
        calls = self._owner_elsewhere(conversation_key, take=True)
        if calls is not None:
            await self._remote(calls, "set_model", conversation_key, {"model": model})
        else:
            await self._set_model_here(conversation_key, model)

    async def choices(self, conversation_key: str, kind: str, page: str = "") -> ChoiceList:
        """What the project, agent, sessions or mode control offers."""
        calls = self._owner_elsewhere(conversation_key, take=True)
        args = {"kind": kind, "page": page}
        found = await (self._remote(calls, "choices", conversation_key, args) if calls is not None
                       else self._choices_here(conversation_key, kind, page))
        return ChoiceList(found["prompt"], tuple((label, value) for label, value in found["options"]),
                          found["current"], found["more"])

    async def choose(self, conversation_key: str, kind: str, value: str) -> str:
        """Switch the project, agent, session or mode."""
        calls = self._owner_elsewhere(conversation_key, take=True)
        args = {"kind": kind, "value": value}
        found = await (self._remote(calls, "choose", conversation_key, args) if calls is not None
                       else self._choose_here(conversation_key, kind, value))
        return str(found["text"])

    # -- carried out here (also when another relay sent them) ------------------------------

    async def _models_here(self, key: str) -> dict[str, Any]:
        try:
            model, models = await self._engine.models(key)
        except Exception as exc:
            raise _failed("listing the models", key, exc) from exc
        return {"model": model, "models": list(models)}

    async def _set_model_here(self, key: str, model: str) -> dict[str, Any]:
        try:
            await self._engine.set_model(key, model)
        except Exception as exc:
            raise _failed("switching the model", key, exc) from exc
        return {}

    async def _choices_here(self, key: str, kind: str, page: str) -> dict[str, Any]:
        try:
            found = await self._engine.choice_list(key, kind, page)
        except Exception as exc:
            raise _failed(f"listing the {kind} choices", key, exc) from exc
        return {"prompt": found.prompt, "options": [list(o) for o in found.options], "current": found.current,
                "more": found.more}

    async def _choose_here(self, key: str, kind: str, value: str) -> dict[str, Any]:
        try:
            return {"text": await self._engine.choose(key, kind, value)}
        except Exception as exc:
            raise _failed(f"choosing a {kind}", key, exc) from exc

    # -- the owner's side: what another relay sends ----------------------------------------

    async def _stop_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        await self._engine.stop(key)
        return {}

    async def _status_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        return dataclasses.asdict(self._engine.status(key))

    async def _models_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        return await _answer(self._models_here(key))

    async def _set_model_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        return await _answer(self._set_model_here(key, str(args["model"])))

    async def _choices_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        return await _answer(self._choices_here(key, str(args["kind"]), str(args["page"])))

    async def _choose_called(self, key: str, args: dict[str, Any]) -> dict[str, Any]:
        return await _answer(self._choose_here(key, str(args["kind"]), str(args["value"])))


async def _answer(work: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """What a control sent by another relay answers: its result, or the sentence it failed with."""
    try:
        return await work
    except ControlFailed as exc:
        return {"error": str(exc)}


def _failed(doing: str, key: str, exc: Exception) -> ControlFailed:
    """The agent's failure in the sentence a turn would use; anything else is logged (once, here)."""
    if not isinstance(exc, AcpError | AcpRuntimeError):
        log.warning("%s of %s failed", doing, key, exc_info=True)
    return ControlFailed(classify(exc).prose)
