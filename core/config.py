"""Load and validate ``config.json`` once, at startup.

The schema mirrors the config contract in ``docs/architecture.md`` key for key; every model forbids
unknown keys. Two keys go beyond that contract and are documented here:

- ``retry``: the transient-error ladder (``attempts``, total ``budget_s``, ``base_delay_s``).
- ``engine``: ``queue_limit`` (messages queued per conversation behind a running turn) and
  ``edit_interval_s`` (minimum seconds between coalesced edits of one streamed message).

``timeouts.idle_s`` (reap an agent process, and let go of a session, idle this long) also extends the contract.

Loading is strict about types (``"8787"`` is not a port). Unparseable JSON is the one soft failure
(spec, "Config load"): a warning is logged and the relay runs on defaults; valid JSON with wrong
keys or types raises :class:`ConfigError` naming each problem by its JSON path. Secrets never live
in the file: the file names environment variables and :func:`secret` reads them.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError

from core.errors import RelayError
from core.loading import registered
from core.plugin import SurfaceSettings
from core.redact import MASK, mask_args, redact

__all__ = [
    "BUILTIN_AGENT_NAMES",
    "AgentConfig",
    "ConfigError",
    "EngineConfig",
    "ProjectConfig",
    "RelayConfig",
    "RetryConfig",
    "StoreConfig",
    "SurfacesConfig",
    "TimeoutsConfig",
    "load_config",
    "load_config_strict",
    "secret",
    "secret_values",
]

_log = logging.getLogger("acp_relay.config")

# Agent env keys that look like credentials; their values are masked in effective_dump().
_RE_SECRET_KEY = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH|(?:^|_)PASS(?:_|$)", re.IGNORECASE)

#: The agents used when the config defines none, in the order they are looked for on PATH.
#: ``core.agents.BUILTIN_AGENTS`` is built from these names, so the two cannot drift apart.
BUILTIN_AGENT_NAMES: tuple[str, ...] = ("kiro", "claude", "codex", "demo")
_RE_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")


class _Model(BaseModel):
    """Base of every config model: unknown keys are errors, NaN and infinity are not numbers."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class AgentConfig(_Model):
    """One ACP agent: how to spawn it and how its tool calls are gated."""

    command: str
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] = Field(default_factory=dict)
    # Kept verbatim: "~" and variables are expanded at spawn time, not at load time.
    cwd: str = "."
    # None means: detect from the command name and the agent's agentInfo.name, else "generic".
    backend: Literal["kiro", "claude", "codex", "copilot", "gemini", "opencode", "qwen", "generic"] | None = None
    tool_gate: Literal["ask", "allow", "deny"] = "ask"


class ProjectConfig(_Model):
    """A folder a conversation may switch to (``projects.<name>``), optionally with the agent to run
    there; written as the folder alone (``"app": "~/src/app"``) or as ``{"folder", "agent"}``."""

    folder: str = Field(min_length=1)
    agent: str | None = None


class TimeoutsConfig(_Model):
    """Budgets in seconds: a prompt turn, one JSON-RPC request, an approval, and idle reaping."""

    prompt_s: float = Field(default=900.0, gt=0)
    request_s: float = Field(default=30.0, gt=0)
    approval_s: float = Field(default=300.0, gt=0)
    idle_s: float = Field(default=1800.0, gt=0)


class StoreConfig(_Model):
    """Where the relay's state lives: the SQLite file ``path`` (``~`` is expanded when the store opens
    it), or, when ``url_env`` names an environment variable, the PostgreSQL database whose URL it
    holds (the URL never goes in the file). ``path`` still places the surfaces' own local files."""

    path: str = "~/.local/state/acp-relay/relay.db"
    url_env: str | None = Field(default=None, min_length=1)
    #: Relays sharing a PostgreSQL store: how long a conversation's owner keeps it without renewing
    #: (a dead relay's conversations move to the others after this long).
    lease_s: float = Field(default=15.0, ge=1.0, le=600.0)
    #: This relay's name in the leases and in ``status`` (default: the host name and the process id).
    relay_name: str | None = Field(default=None, min_length=1, max_length=100)


class SurfacesConfig(_Model):
    """Every installed surface's section (``surfaces.<name>``), each with its defaults; only the
    dashboard is enabled by default. The sections' models are the surfaces' own (``SurfacePlugin.settings``,
    found by ``core.loading``): an unknown name is an error that lists the installed surfaces.
    ``config.surfaces.telegram`` is that surface's settings; ``get(name)`` the same by name."""

    def get(self, name: str) -> SurfaceSettings:
        """The settings of the surface ``name``."""
        value = getattr(self, name)
        assert isinstance(value, SurfaceSettings)
        return value

    def enabled(self) -> list[str]:
        """The enabled surfaces, in the order they start."""
        return [name for name, value in self if isinstance(value, SurfaceSettings) and value.enabled]


@functools.cache
def _surfaces_model() -> type[SurfacesConfig]:
    """The sections of the installed surfaces as one model (built once, when first needed: the
    registry loads the surfaces' plugin modules, which import the core)."""
    fields: dict[str, Any] = {name: (plugin.settings, Field(default_factory=plugin.settings))
                              for name, plugin in registered().items()}
    return create_model("InstalledSurfacesConfig", __base__=SurfacesConfig, **fields)


def _default_surfaces() -> SurfacesConfig:
    return _surfaces_model()()


class RetryConfig(_Model):
    """Retry ladder for transient errors: at most ``attempts`` tries within ``budget_s`` seconds."""

    attempts: int = Field(default=3, ge=1)
    budget_s: float = Field(default=15.0, ge=0)
    base_delay_s: float = Field(default=5.0, ge=0)


class EngineConfig(_Model):
    """Per-conversation queue bound, the streamer's minimum interval between edits, and the size past
    which an answer is cut (the rest is offered as a file where the platform takes files)."""

    queue_limit: int = Field(default=10, ge=1)
    edit_interval_s: float = Field(default=1.0, ge=0)
    max_answer_bytes: int = Field(default=2 * 1024 * 1024, ge=1024)


class RelayConfig(_Model):
    """The whole configuration; ``RelayConfig()`` is the built-in default."""

    agents: dict[str, AgentConfig] = Field(default_factory=dict)
    default_agent: str | None = None
    #: Folders a conversation may switch to by name (never a free path from the chat).
    projects: dict[str, ProjectConfig] = Field(default_factory=dict)
    timeouts: TimeoutsConfig = Field(default_factory=TimeoutsConfig)
    store: StoreConfig = Field(default_factory=StoreConfig)
    surfaces: SerializeAsAny[SurfacesConfig] = Field(default_factory=_default_surfaces)
    retry: RetryConfig = Field(default_factory=RetryConfig)
    engine: EngineConfig = Field(default_factory=EngineConfig)

    @field_validator("surfaces", mode="before")
    @classmethod
    def _installed_surfaces(cls, value: Any) -> Any:
        """Each section through its surface's own model (strictly, as the file is); a name no installed
        surface has is refused with the list of those that are."""
        if isinstance(value, SurfacesConfig) or not isinstance(value, dict):
            return value
        known = registered()
        unknown = [InitErrorDetails(type=PydanticCustomError("unknown_surface", "no such surface is installed "
                                                             "(installed: {installed})",
                                                             {"installed": ", ".join(known)}),
                                    loc=(name,), input=section)
                   for name, section in value.items() if name not in known]
        if unknown:
            raise ValidationError.from_exception_data("SurfacesConfig", unknown)
        return _surfaces_model().model_validate(value, strict=True)

    @field_validator("default_agent")
    @classmethod
    def _default_agent_is_known(cls, value: str | None, info: ValidationInfo) -> str | None:
        # "agents" is declared first, so it is in info.data unless it failed on its own.
        if value is None or "agents" not in info.data:
            return value
        agents = info.data["agents"]
        if agents and value not in agents:
            raise ValueError(f"names no configured agent (known: {', '.join(sorted(agents))})")
        if not agents and value not in BUILTIN_AGENT_NAMES:
            known = ", ".join(BUILTIN_AGENT_NAMES)
            raise ValueError(f"names no built-in agent, and no agents are configured (built-in: {known})")
        return value

    @field_validator("projects", mode="before")
    @classmethod
    def _folder_alone(cls, value: Any) -> Any:
        """``"app": "~/src/app"`` is ``"app": {"folder": "~/src/app"}``."""
        if isinstance(value, dict):
            return {name: {"folder": v} if isinstance(v, str) else v for name, v in value.items()}
        return value

    @field_validator("projects")
    @classmethod
    def _none_is_reserved(cls, value: dict[str, ProjectConfig]) -> dict[str, ProjectConfig]:
        if "none" in value:
            raise ValueError("a project cannot be called 'none': choosing 'none' leaves a project for the "
                             "agent's own folder")
        return value

    @field_validator("projects")
    @classmethod
    def _project_agents_are_known(cls, value: dict[str, ProjectConfig],
                                  info: ValidationInfo) -> dict[str, ProjectConfig]:
        agents = info.data.get("agents")
        if agents is None:
            return value
        known = agents or dict.fromkeys(BUILTIN_AGENT_NAMES)
        for name, project in value.items():
            if project.agent is not None and project.agent not in known:
                raise ValueError(f"project {name!r} names no configured agent {project.agent!r} "
                                 f"(known: {', '.join(sorted(known))})")
        return value

    def effective_dump(self, mask_secrets: bool = True) -> dict[str, Any]:
        """The effective config as plain JSON data (``default_agent`` null: chosen from PATH at run).

        With ``mask_secrets``, agent ``env`` values whose key looks like a credential
        (KEY, TOKEN, SECRET, PASSWORD) and agent arguments after a credential flag (``--api-key X``,
        ``--token=X``) are replaced by ``"****"``, and every other string goes through
        :func:`core.redact.redact` (tokens under innocuous names, URL passwords, bot tokens in URLs).
        """
        data = self.model_dump(mode="json")
        if mask_secrets:
            for agent in data["agents"].values():
                agent["env"] = {
                    key: MASK if _RE_SECRET_KEY.search(key) else value for key, value in agent["env"].items()
                }
                agent["args"] = mask_args(agent["args"])
            data = _redacted(data)
        return data


def _redacted(value: Any) -> Any:
    """Every string in the dump through redact(): a secret can hide under any key."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item) for item in value]
    if isinstance(value, dict):
        return {key: _redacted(item) for key, item in value.items()}
    return value


class ConfigError(RelayError):
    """The config file is missing, unreadable, or its JSON does not match the schema.

    ``problems`` holds ``(json_path, message)`` pairs, e.g.
    ``("surfaces.telegram.allowed_user_ids[0]", "Input should be a valid integer")``;
    ``str()`` is a header naming the file followed by one problem per line.
    """

    code = "config"
    worded = True

    def __init__(self, path: Path | None, problems: list[tuple[str, str]]) -> None:
        self.path = path
        self.problems = problems
        where = str(path) if path is not None else "config"
        lines = [f"invalid config {where}:"] + [f"  {loc}: {msg}" for loc, msg in problems]
        super().__init__("\n".join(lines))


def secret(env_name: str | None) -> str | None:
    """Read a secret from the environment variable the config names; unset or empty gives None."""
    if not env_name:
        return None
    return os.environ.get(env_name) or None


def secret_values(config: RelayConfig) -> list[str]:
    """Every secret value the config names, for redaction by value (``core.redact.register_secrets``).

    The value of each surface's ``*_env`` variable (enabled or not: the relay's environment holds it,
    and an agent can read that), the database URL ``store.url_env`` names and its password, each agent
    ``env`` value whose key names a credential or whose value has a token's shape, and each agent
    argument after a credential flag (``--api-key X``).
    """
    values: list[str] = []
    for _, surface in config.surfaces:
        values += [value for field in type(surface).model_fields if field.endswith("_env")
                   if (value := secret(getattr(surface, field))) is not None]
    if (url := secret(config.store.url_env)) is not None:
        values += [url, *_url_password(url)]
    for agent in config.agents.values():
        values += [value for key, value in agent.env.items() if _RE_SECRET_KEY.search(key) or redact(value) != value]
        for arg, masked in zip(agent.args, mask_args(agent.args), strict=True):
            if arg != masked:
                values.append(arg.partition("=")[2] if masked.endswith(f"={MASK}") else arg)
    return values


def _url_password(url: str) -> list[str]:
    """The password in a ``scheme://user:password@host`` URL, if it has one there."""
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [unquote(password)] if password else []


def load_config(path: str | Path | None) -> RelayConfig:
    """Load ``path``; ``None`` gives the defaults.

    Unparseable JSON logs a warning and returns the defaults (spec, "Config load"). A missing or
    unreadable file, or valid JSON that breaks the schema, raises :class:`ConfigError`.
    """
    return _load(path, strict=False)


def load_config_strict(path: str | Path | None) -> RelayConfig:
    """Like :func:`load_config`, but unparseable JSON raises :class:`ConfigError` (check-config)."""
    return _load(path, strict=True)


def _load(path: str | Path | None, *, strict: bool) -> RelayConfig:
    if path is None:
        return RelayConfig()
    file = Path(path).expanduser()
    try:
        text = file.read_bytes().decode("utf-8")
        data = json.loads(text)
    except FileNotFoundError as exc:
        raise ConfigError(file, [("<file>", "config file not found")]) from exc
    except OSError as exc:
        raise ConfigError(file, [("<file>", f"cannot read config file: {exc.strerror or exc}")]) from exc
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        # json.JSONDecodeError is a ValueError; UnicodeDecodeError too, listed for the reader.
        # RecursionError: arrays or objects nested deeper than the parser goes.
        if isinstance(exc, RecursionError):
            exc = ValueError("nested too deeply")
        if strict:
            raise ConfigError(file, [("<file>", f"not valid JSON: {exc}")]) from exc
        _log.warning("config %s is not valid JSON (%s); running on defaults", file, exc)
        return RelayConfig()
    try:
        return RelayConfig.model_validate(data, strict=True)
    except ValidationError as exc:
        raise ConfigError(file, _problems(exc)) from exc


def _problems(exc: ValidationError) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        if kind == "extra_forbidden":
            msg = "unknown key"
        elif kind == "missing":
            msg = "required key is missing"
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
        problems.append((_json_path(err["loc"]), msg))
    return problems


def _json_path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as a JSON path: ``agents.kiro.args[0]``, ``agents["a b"].cwd``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _RE_IDENTIFIER.fullmatch(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "<root>"
