"""What an agent offers a session, as its answers and updates report it: models (with the names the
agent gives them), modes, config options and the ``_meta`` a later ``session/load`` needs back; and
what it says of the session between turns too: its commands, its title, its cost so far."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import Any

from core.acp._dispatch import dicts
from core.acp.gate_modes import select_values
from core.acp.types import AcpEvent, AvailableCommands, CompactionStatus, Cost, SessionInfo, UsageUpdate

#: The longest compaction summary kept (it is shown on request, by the status command).
SUMMARY_MAX = 2000

__all__ = ["SessionOffers"]

#: ``_meta`` keys of a session/new answer that a later session/load needs back.
_LOAD_META_KEYS = frozenset({"_kiro.dev/session_file"})
#: The mode tables kept to share (an agent offers one set of modes, a few agents a few): past this
#: many, the table starts again (a session keeps the table it has).
_SHARED_MAX = 64
_shared_modes: dict[tuple[tuple[str, str], ...], tuple[tuple[str, ...], Mapping[str, str]]] = {}


def _modes_of(entries: list[dict[str, Any]]) -> tuple[tuple[str, ...], Mapping[str, str]]:
    """The mode ids and id -> name, one table for every session whose agent offers the same modes: a
    relay holds a session per conversation for ``idle_s``, and every session of an agent says the same."""
    pairs = tuple((sys.intern(str(m.get("id"))), sys.intern(str(m.get("name") or m.get("id")))) for m in entries)
    found = _shared_modes.get(pairs)
    if found is None:
        if len(_shared_modes) >= _SHARED_MAX:
            _shared_modes.clear()
        found = _shared_modes[pairs] = (tuple(mid for mid, _ in pairs), dict(pairs))
    return found


def _interned(value: Any) -> str | None:
    """A non-empty string, one object however many sessions name it (a mode or model id)."""
    return sys.intern(value) if isinstance(value, str) and value else None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _names(entries: list[dict[str, Any]], id_key: str) -> dict[str, str]:
    """Model id -> the readable name the agent gives it (qwen: "$runtime|openai|x(openai)" is "x")."""
    out = {}
    for entry in entries:
        name = entry.get("name")
        if isinstance(name, str) and name.strip() and name.strip() != str(entry.get(id_key)):
            out[str(entry.get(id_key))] = " ".join(name.split())
    return out


class SessionOffers:
    """The models, modes and config options of one session, kept current from the agent's frames."""

    def __init__(self) -> None:
        self.models: tuple[str, ...] = ()
        self.current_model: str | None = None
        self.model_names: dict[str, str] = {}  # the name the agent gives a model id, where it gives one
        self.model_config_id: str | None = None
        self.modes: tuple[str, ...] = ()
        self.current_mode: str | None = None
        self.config_options: dict[str, dict[str, Any]] = {}  # by id, as the agent last reported them
        self.meta: dict[str, Any] = {}
        #: Mode id -> the name the agent gives it (shared between sessions: never written to).
        self.mode_names: Mapping[str, str] = {}
        #: The agent's own slash commands (name, description), as it last listed them.
        self.commands: tuple[tuple[str, str], ...] = ()
        #: Called each time the agent lists them (also between turns: a session opened ahead hears them
        #: after its answer), so a command menu can follow without waiting for a turn to end.
        self.on_commands: Callable[[], None] | None = None
        self.title = ""
        #: The session's cumulative cost as the agent last reported it (None: it never did).
        self.cost: Cost | None = None
        #: What the agent said its last compaction kept (``compaction_summary_chunk``), "" if nothing.
        self.compaction_summary = ""

    def note(self, event: AcpEvent) -> None:
        """Keep what an update says of the session (also between turns, and while it is replayed)."""
        if isinstance(event, AvailableCommands):
            self.commands = event.described()
            if self.on_commands is not None:
                self.on_commands()
        elif isinstance(event, SessionInfo) and event.title:
            self.title = event.title
        elif isinstance(event, UsageUpdate) and event.cost is not None:
            self.cost = event.cost
        elif isinstance(event, CompactionStatus) and event.status == "summary":
            self.compaction_summary = (self.compaction_summary + event.text)[:SUMMARY_MAX]
        elif isinstance(event, CompactionStatus) and event.status == "in_progress":
            self.compaction_summary = ""  # a new compaction: its summary follows

    def _read_result(self, result: dict[str, Any]) -> None:
        """Read a ``session/new`` or ``session/load`` answer."""
        if isinstance(result.get("_meta"), dict):
            self.meta = dict(result["_meta"])
        models = result.get("models")
        if isinstance(models, dict):
            self.models = tuple(str(m.get("modelId")) for m in dicts(models.get("availableModels")))
            self.model_names = _names(dicts(models.get("availableModels")), "modelId")
            self.current_model = _interned(models.get("currentModelId")) or self.current_model
        self._read_config_options(result.get("configOptions"))
        modes = result.get("modes")
        if isinstance(modes, dict):
            self.modes, self.mode_names = _modes_of(dicts(modes.get("availableModes")))
            self.current_mode = _interned(modes.get("currentModeId")) or self.current_mode

    def _read_config_options(self, options: Any) -> None:
        for opt in dicts(list(options) if isinstance(options, tuple) else options):
            self.config_options[str(opt.get("id"))] = opt
            if opt.get("category") == "model":
                self.model_config_id = str(opt.get("id"))
                values = select_values(opt.get("options"))
                self.models = tuple(str(o.get("value")) for o in values)
                self.model_names = _names(values, "value")
                self.current_model = _str(opt.get("currentValue")) or self.current_model

    def options_changed(self, result: object) -> None:
        """Read the ``configOptions`` a ``session/set_config_option`` answer carries."""
        if isinstance(result, dict):
            self._read_config_options(result.get("configOptions"))

    def load_meta(self) -> dict[str, Any]:
        """What ``session/load`` must carry to find this session again (Kiro's session file)."""
        return {k: v for k, v in self.meta.items() if k in _LOAD_META_KEYS}

    def model_label(self, model_id: str | None) -> str | None:
        """What a person reads for a model: the name the agent gives it, else its id."""
        return self.model_names.get(model_id, model_id) if model_id is not None else None

    def model_id(self, chosen: str) -> str:
        """The id of the model a person named, by id or by the name the agent gives it."""
        if chosen in self.models:
            return chosen
        named = [mid for mid, name in self.model_names.items() if name.casefold() == chosen.strip().casefold()]
        return named[0] if len(named) == 1 else chosen
