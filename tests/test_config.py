"""config.json loading: strict schema, JSON-path problems, soft failure on unparseable JSON."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from core.config import (
    BUILTIN_AGENT_NAMES,
    AgentConfig,
    ConfigError,
    RelayConfig,
    load_config,
    load_config_strict,
    secret,
)
from core.loading import registered

EXAMPLE = Path(__file__).resolve().parent.parent / "config.example.json"


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "config.json"
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def problems_of(tmp_path: Path, data: Any) -> list[tuple[str, str]]:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, data))
    return info.value.problems


def paths_of(tmp_path: Path, data: Any) -> list[str]:
    return [loc for loc, _ in problems_of(tmp_path, data)]


def test_example_loads_strictly_lists_the_known_agents_and_only_dashboard_enabled() -> None:
    cfg = load_config_strict(EXAMPLE)
    # null: the relay picks the first agent whose command is on PATH, in this order.
    assert cfg.default_agent is None
    assert list(cfg.agents) == ["kiro", "claude", "codex", "demo"]
    demo = cfg.agents["demo"]
    assert (demo.command, demo.args, demo.backend, demo.tool_gate, demo.cwd) == (
        "acp-relay",
        ["demo-agent"],
        "kiro",  # the demo agent speaks Kiro's extension frames to show a structured refusal
        "ask",
        ".",
    )
    enabled = {name for name, s in cfg.surfaces if s.enabled}
    assert enabled == {"dashboard"}
    assert cfg.store.path == "~/.local/state/acp-relay/relay.db"


def _missing_keys(model: type[BaseModel], data: dict[str, Any], prefix: str) -> list[str]:
    missing = []
    for name, field in model.model_fields.items():
        if name not in data:
            missing.append(prefix + name)
            continue
        sub = field.annotation
        if isinstance(sub, type) and issubclass(sub, BaseModel):
            missing += _missing_keys(sub, data[name], f"{prefix}{name}.")
    return missing


def test_example_spells_out_every_key_of_the_schema() -> None:
    data = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    assert _missing_keys(RelayConfig, data, "") == []
    assert _missing_keys(AgentConfig, data["agents"]["demo"], "agents.demo.") == []
    for name, plugin in registered().items():  # each surface's section is its own model
        assert name in data["surfaces"], f"config.example.json has no surfaces.{name}"
        assert _missing_keys(plugin.settings, data["surfaces"][name], f"surfaces.{name}.") == []


def test_example_sets_every_default_except_the_agent() -> None:
    example = load_config_strict(EXAMPLE).effective_dump()
    defaults = RelayConfig().effective_dump()
    for key in ("agents", "default_agent", "projects"):  # examples of maps that are empty by default
        example.pop(key)
        defaults.pop(key)
    assert example == defaults


def test_defaults_match_the_contract() -> None:
    cfg = RelayConfig()
    assert cfg.agents == {} and cfg.default_agent is None
    assert (cfg.timeouts.prompt_s, cfg.timeouts.request_s, cfg.timeouts.approval_s) == (900, 30, 300)
    assert cfg.timeouts.idle_s == 1800
    assert cfg.surfaces.dashboard.enabled and cfg.surfaces.dashboard.port == 8787
    assert cfg.surfaces.dashboard.allowed_user_ids == ["local"]
    assert cfg.surfaces.slack.mode == "socket" and cfg.surfaces.slack.http_port == 3000
    assert cfg.surfaces.telegram.allowed_user_ids == []
    # 3 attempts with waits of ~5 s and ~10 s: "about 15 s in total" (the retry ladder's contract)
    assert (cfg.retry.attempts, cfg.retry.budget_s, cfg.retry.base_delay_s) == (3, 15.0, 5.0)
    assert (cfg.engine.queue_limit, cfg.engine.edit_interval_s) == (10, 1.0)


def test_none_path_gives_defaults() -> None:
    assert load_config(None) == RelayConfig()


def test_agent_defaults_and_cwd_kept_verbatim(tmp_path: Path) -> None:
    cfg = load_config(write(tmp_path, {"agents": {"k": {"command": "kiro-cli", "cwd": "~/projects/$APP"}}}))
    agent = cfg.agents["k"]
    assert agent.cwd == "~/projects/$APP"
    assert (agent.args, agent.env, agent.backend, agent.tool_gate) == ([], {}, None, "ask")


def test_unknown_top_level_key_is_named(tmp_path: Path) -> None:
    assert problems_of(tmp_path, {"agnets": {}}) == [("agnets", "unknown key")]


def test_unknown_nested_surface_key_is_named_by_path(tmp_path: Path) -> None:
    data = {"surfaces": {"telegram": {"enabled": True, "tokenEnv": "X"}}}
    assert paths_of(tmp_path, data) == ["surfaces.telegram.tokenEnv"]


def test_unknown_surface_is_named_with_the_installed_ones(tmp_path: Path) -> None:
    assert problems_of(tmp_path, {"surfaces": {"matrix": {}}}) == [
        ("surfaces.matrix", "no such surface is installed (installed: dashboard, discord, slack, telegram)")]


def test_unknown_agent_key_is_named_under_the_agent(tmp_path: Path) -> None:
    data = {"agents": {"kiro": {"command": "kiro-cli", "tool-gate": "ask"}}}
    assert paths_of(tmp_path, data) == ["agents.kiro.tool-gate"]


def test_agent_name_that_is_not_an_identifier_is_quoted(tmp_path: Path) -> None:
    data = {"agents": {"my agent": {"command": "x", "bogus": 1}}}
    assert paths_of(tmp_path, data) == ['agents["my agent"].bogus']


def test_wrong_type_inside_a_list_names_the_index(tmp_path: Path) -> None:
    data = {"surfaces": {"telegram": {"allowed_user_ids": [123, "456"]}}}
    [(path, msg)] = problems_of(tmp_path, data)
    assert path == "surfaces.telegram.allowed_user_ids[1]"
    assert "integer" in msg


def test_slack_ids_are_strings_not_numbers(tmp_path: Path) -> None:
    data = {"surfaces": {"slack": {"allowed_user_ids": ["U0123ABCD", 42]}}}
    assert paths_of(tmp_path, data) == ["surfaces.slack.allowed_user_ids[1]"]


def test_invalid_tool_gate_names_the_agent_path(tmp_path: Path) -> None:
    data = {"agents": {"kiro": {"command": "kiro-cli", "tool_gate": "maybe"}}}
    [(path, msg)] = problems_of(tmp_path, data)
    assert path == "agents.kiro.tool_gate"
    assert "'ask'" in msg


def test_numbers_in_strings_are_not_coerced(tmp_path: Path) -> None:
    data = {"surfaces": {"dashboard": {"port": "8787", "enabled": "yes"}}}
    assert sorted(paths_of(tmp_path, data)) == ["surfaces.dashboard.enabled", "surfaces.dashboard.port"]


def test_missing_command_is_named(tmp_path: Path) -> None:
    assert problems_of(tmp_path, {"agents": {"a": {"args": []}}}) == [
        ("agents.a.command", "required key is missing")
    ]


def test_every_problem_is_reported_one_per_line(tmp_path: Path) -> None:
    data = {"timeouts": {"prompt_s": -1}, "store": {"path": 3}, "engine": {"queue_limits": 1}}
    path = write(tmp_path, data)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    err = info.value
    assert err.path == path
    assert [loc for loc, _ in err.problems] == ["timeouts.prompt_s", "store.path", "engine.queue_limits"]
    lines = str(err).splitlines()
    assert str(path) in lines[0]
    assert lines[1:] == [f"  {loc}: {msg}" for loc, msg in err.problems]


def test_default_agent_must_name_an_agent(tmp_path: Path) -> None:
    data = {"agents": {"a": {"command": "x"}}, "default_agent": "b"}
    [(path, msg)] = problems_of(tmp_path, data)
    assert path == "default_agent"
    assert "a" in msg


def test_default_agent_without_configured_agents_must_name_a_built_in_one(tmp_path: Path) -> None:
    [(path, msg)] = problems_of(tmp_path, {"default_agent": "nope"})
    assert path == "default_agent"
    assert all(name in msg for name in BUILTIN_AGENT_NAMES)
    for name in BUILTIN_AGENT_NAMES:
        assert load_config(write(tmp_path, {"default_agent": name})).default_agent == name


def test_a_broken_agents_section_is_not_blamed_on_default_agent(tmp_path: Path) -> None:
    assert paths_of(tmp_path, {"agents": {"a": {}}, "default_agent": "a"}) == ["agents.a.command"]


def test_built_in_agent_names_are_the_agents_the_relay_can_fall_back_to() -> None:
    from core.agents import BUILTIN_AGENTS, choose_agent

    assert tuple(BUILTIN_AGENTS) == BUILTIN_AGENT_NAMES
    for name in BUILTIN_AGENT_NAMES:
        assert choose_agent(RelayConfig(default_agent=name)) == (name, BUILTIN_AGENTS[name])


def test_default_agent_null_stays_null_so_the_relay_picks_from_path_at_run(tmp_path: Path) -> None:
    cfg = load_config_strict(write(tmp_path, {"agents": {"z": {"command": "z"}, "a": {"command": "a"}}}))
    assert cfg.default_agent is None
    assert cfg.effective_dump()["default_agent"] is None


def test_top_level_array_is_a_schema_error(tmp_path: Path) -> None:
    assert paths_of(tmp_path, []) == ["<root>"]


def test_unparseable_json_logs_a_warning_and_runs_on_defaults(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = write(tmp_path, '{"agents": {,}')
    with caplog.at_level(logging.WARNING, logger="acp_relay.config"):
        cfg = load_config(path)
    assert cfg == RelayConfig()
    [record] = [r for r in caplog.records if r.name == "acp_relay.config"]
    assert record.levelno == logging.WARNING
    assert str(path) in record.getMessage()


def test_invalid_utf8_counts_as_unparseable(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "config.json"
    path.write_bytes(b'{"store": {"path": "\xff"}}')
    with caplog.at_level(logging.WARNING, logger="acp_relay.config"):
        assert load_config(path) == RelayConfig()
    assert any(r.levelno == logging.WARNING for r in caplog.records)


def test_strict_load_rejects_unparseable_json(tmp_path: Path) -> None:
    path = write(tmp_path, "not json")
    with pytest.raises(ConfigError) as info:
        load_config_strict(path)
    [(loc, msg)] = info.value.problems
    assert loc == "<file>" and "JSON" in msg
    assert str(path) in str(info.value)


def test_json_nested_deeper_than_the_parser_goes_is_unparseable_not_a_crash(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # json.loads raised RecursionError, which reached the CLI's funnel: "something went wrong inside
    # the relay" instead of the config file's problem.
    path = write(tmp_path, "[" * 200_000 + "]" * 200_000)
    with pytest.raises(ConfigError) as info:
        load_config_strict(path)
    assert info.value.problems == [("<file>", "not valid JSON: nested too deeply")]
    with caplog.at_level(logging.WARNING, logger="acp_relay.config"):
        assert load_config(path) == RelayConfig()
    assert "nested too deeply" in caplog.text


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    for loader in (load_config, load_config_strict):
        with pytest.raises(ConfigError) as info:
            loader(path)
        assert str(path) in str(info.value)
        assert info.value.problems == [("<file>", "config file not found")]


def test_effective_dump_masks_secret_looking_env_values(tmp_path: Path) -> None:
    env = {"ANTHROPIC_API_KEY": "sk-1", "GH_TOKEN": "t", "db_password": "p", "MY_SECRET": "s", "LANG": "C"}
    cfg = load_config(write(tmp_path, {"agents": {"a": {"command": "x", "env": env}}}))
    dumped = cfg.effective_dump()
    assert dumped["agents"]["a"]["env"] == {
        "ANTHROPIC_API_KEY": "****",
        "GH_TOKEN": "****",
        "db_password": "****",
        "MY_SECRET": "****",
        "LANG": "C",
    }
    assert "sk-1" not in json.dumps(dumped)
    assert cfg.effective_dump(mask_secrets=False)["agents"]["a"]["env"] == env
    assert cfg.agents["a"].env == env  # masking never touches the live config


def test_effective_dump_redacts_secrets_under_any_key(tmp_path: Path) -> None:
    secrets = ["sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
               "hunter2", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "plain-value-after-a-flag", "eq-flag-value"]
    data = {
        "agents": {"k": {
            "command": "kiro-cli",
            "args": ["acp", "--api-key", secrets[0], "--token", secrets[4], f"--password={secrets[5]}", "--verbose"],
            "env": {"ANTHROPIC_BASE_URL": f"https://user:{secrets[2]}@proxy.example", "GH": secrets[1]},
        }},
        "surfaces": {"telegram": {"api_base_url": f"http://127.0.0.1:8081/bot123456789:{secrets[3]}"}},
    }
    cfg = load_config(write(tmp_path, data))
    dumped = cfg.effective_dump()
    text = json.dumps(dumped)
    for value in secrets:
        assert value not in text
    agent = dumped["agents"]["k"]
    assert agent["args"] == ["acp", "--api-key", "****", "--token", "****", "--password=****", "--verbose"]
    assert agent["env"] == {"ANTHROPIC_BASE_URL": "https://user:[redacted]@proxy.example", "GH": "ghp_[redacted]"}
    assert dumped["surfaces"]["telegram"]["api_base_url"] == "http://127.0.0.1:8081/bot123456789:[redacted]"
    assert cfg.effective_dump(mask_secrets=False)["agents"]["k"]["args"] == data["agents"]["k"]["args"]


def test_effective_dump_is_plain_json_that_loads_back(tmp_path: Path) -> None:
    cfg = load_config_strict(EXAMPLE)
    dumped = cfg.effective_dump()
    contract = {"enabled", "token_env", "allowed_user_ids", "api_base_url"}
    webhook = {"mode", "poll_timeout_s", "webhook_url", "webhook_host", "webhook_port", "webhook_secret_env"}
    assert set(dumped["surfaces"]["telegram"]) == contract | webhook
    assert load_config_strict(write(tmp_path, dumped)) == cfg


def test_secret_reads_the_named_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_RELAY_TEST_TOKEN", "abc")
    monkeypatch.setenv("ACP_RELAY_TEST_EMPTY", "")
    monkeypatch.delenv("ACP_RELAY_TEST_UNSET", raising=False)
    assert secret("ACP_RELAY_TEST_TOKEN") == "abc"
    assert secret("ACP_RELAY_TEST_EMPTY") is None
    assert secret("ACP_RELAY_TEST_UNSET") is None
    assert secret(None) is None


def test_more_credential_spellings_are_masked(tmp_path: Path) -> None:
    data = {"agents": {"a": {"command": "x", "args": ["--auth", "s3cr3t-auth", "--pass=s3cr3t-pass", "--model", "m"],
                             "env": {"MY_PASS": "s3cr3t-env", "GH_AUTH": "s3cr3t-gh", "BYPASS_CACHE": "1"}}}}
    dumped = json.dumps(load_config_strict(write(tmp_path, data)).effective_dump())
    assert "s3cr3t" not in dumped
    assert '"BYPASS_CACHE": "1"' in dumped and '"m"' in dumped  # not everything is a secret


def test_a_project_cannot_be_called_none(tmp_path: Path) -> None:
    # "none" is how the chat leaves a project (/project none, the picker's way back).
    [(path, msg)] = problems_of(tmp_path, {"projects": {"none": "~/src/x", "app": "~/src/app"}})
    assert path == "projects" and "cannot be called 'none'" in msg


def test_the_chosen_spec_is_the_chosen_agent_in_the_folder_asked(tmp_path: Path) -> None:
    """``chosen_spec`` (a new conversation's first turn) is ``choose_agent`` then ``agent_spec``, the
    command looked up on PATH once: by name, by default, the first found on PATH, the first configured."""
    from core.agents import agent_spec, choose_agent, chosen_spec

    on_path = sys.executable  # an absolute path that exists: found
    configs = [
        RelayConfig.model_validate({"agents": {"gone": {"command": str(tmp_path / "none")},
                                               "here": {"command": on_path, "args": ["x"]}}}),
        RelayConfig.model_validate({"agents": {"gone": {"command": str(tmp_path / "none")}}}),
        RelayConfig.model_validate({"agents": {"here": {"command": on_path}}, "default_agent": "here"}),
    ]
    for cfg in configs:
        for name in (None, *cfg.agents):
            for cwd in (None, str(tmp_path)):
                chosen, agent = choose_agent(cfg, name)
                assert chosen_spec(cfg, name, cwd) == (chosen, agent_spec(chosen, agent, cwd))
    assert chosen_spec(configs[0], None)[1].command == on_path and chosen_spec(configs[0])[0] == "here"
    assert chosen_spec(configs[1])[1].command == str(tmp_path / "none"), "missing: spawning it says so"


def test_an_agent_command_is_looked_up_on_path_once_a_round_and_again_in_the_next(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A burst's new conversations resolve their agent's command in one round of the loop: one PATH
    search serves that round; a command installed meanwhile is found in the next round."""
    import asyncio
    import os

    from core.agents import resolve_command

    monkeypatch.setenv("PATH", str(tmp_path))
    command = tmp_path / "late-agent"

    async def rounds() -> tuple[str | None, str | None, str | None]:
        before = resolve_command("late-agent")
        command.write_text("#!/bin/sh\n")
        os.chmod(command, 0o755)
        same_round = resolve_command("late-agent")
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the round that was running when the first lookup came is over
        return before, same_round, resolve_command("late-agent")

    assert asyncio.run(rounds()) == (None, None, str(command))
    assert resolve_command("late-agent") == str(command), "outside a loop: looked up every time"
    command.unlink()
    assert resolve_command("late-agent") is None
