"""Keeping a session asking before tools run: a mode, or an option, the agent is in (or switched itself
into) that would let tools run without a permission request is switched back, or refused with the
reason (issue 17: Copilot's ``/allow-all on``, its autopilot mode, the known auto modes)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from core.acp.client import AcpError, AcpToolGateUnroutable
from core.acp.gate_modes import asking_mode, asking_value, mode_bypasses, option_bypasses
from core.acp.offers import SessionOffers
from core.acp.session_runtime import SessionRuntime

__all__ = ["GateKeeping"]

log = logging.getLogger("acp_relay.acp.session")


class GateKeeping(SessionOffers):
    """What a session offers, kept where the tool gate sees every tool call."""

    def __init__(self, runtime: SessionRuntime, session_id: str) -> None:
        self.runtime = runtime
        self.session_id = session_id
        super().__init__()
        self.loading = False
        #: Switching back to asking after the agent switched between turns (Copilot's ``/allow-all on``
        #: reports the option after its turn ended); the next turn waits for it.
        self._restoring: asyncio.Task[None] | None = None
        #: One switch back at a time: a restore between turns and the next turn's own must not both send.
        self._switching = asyncio.Lock()

    async def prepare(self, *, reason: str = "stuck") -> None:
        """Leave a mode, and turn off an option, that would let tools run without asking, when the gate
        must see them; AcpToolGateUnroutable when the agent offers no way back (or refuses it).

        ``reason`` says how the agent got there, for the sentence: "switched" (by itself, mid-turn).
        """
        if self.runtime.spec.tool_gate == "allow":
            return
        if not self._switching.locked() and not self._bypassed():
            return  # nothing to switch back, and no switch under way to wait for (every turn's start)
        async with self._switching:  # the other switch may have done it already: each check reads anew
            await self._switch_back(reason)

    async def _switch_back(self, reason: str) -> None:
        backend = self.runtime.backend
        if mode_bypasses(self.current_mode, backend):
            target = asking_mode(self.modes, backend)
            await self._restore("session/set_mode", {"modeId": target}, target, reason, mode=self.current_mode)
            self.current_mode = target
        for option in list(self.config_options.values()):
            if self.modes and option.get("category") == "mode":
                continue  # the mode itself, switched above: one switch back, not two
            if option_bypasses(option, backend):
                value = asking_value(option, backend)
                params = {"configId": option.get("id"), "value": value}
                result = await self._restore("session/set_config_option", params, value, reason,
                                             option=str(option.get("id")))
                self.config_options[str(option.get("id"))] = {**option, "currentValue": value}
                self._read_config_options(result.get("configOptions") if isinstance(result, dict) else None)

    async def _restore(self, method: str, params: dict[str, Any], target: Any, reason: str, **what: Any) -> Any:
        """One request back to asking; the turn's refusal when there is no such value or the agent says no."""
        data = {"agent": self.runtime.spec.name, "tool_gate": self.runtime.spec.tool_gate, "reason": reason, **what}
        if target is None:
            raise AcpToolGateUnroutable(f"no way back to asking from {what}", data=data)
        try:
            return await self.runtime.request(method, {"sessionId": self.session_id, **params})
        except AcpError as exc:
            raise AcpToolGateUnroutable(f"the agent refused {method} back to asking: {exc.message}",
                                        data=data) from exc

    def _bypassed(self) -> bool:
        backend = self.runtime.backend
        return mode_bypasses(self.current_mode, backend) or any(
            option_bypasses(o, backend) for o in self.config_options.values())

    def _watch_between(self) -> None:
        """The agent switched to not asking with no turn in flight: switch back now, not at the next turn."""
        if (self.runtime.spec.tool_gate == "allow" or self.loading or self._restoring is not None
                or not self._bypassed()):  # a loading session's replay is switched back once it is loaded
            return

        async def restore() -> None:
            try:
                await self.prepare(reason="switched")
            except AcpError as exc:  # the next turn's prepare() refuses it with the sentence
                log.warning("agent %s switched to not asking and did not switch back: %s",
                            self.runtime.spec.name, exc.message)
            finally:
                self._restoring = None

        self._restoring = asyncio.create_task(restore(), name="acp-gate-restore-between")
