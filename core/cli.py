"""The ``acp-relay`` command: run, ask, check-config, doctor, demo-agent.

This is the boundary where failures become exit codes; library code never calls ``sys.exit``.
Unexpected exceptions are logged once, with their traceback, to the log file, and the person sees
one sentence.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from core.agents import agent_spec, choose_agent, gate_problems, resolve_command
from core.collector import tune_collector
from core.config import ConfigError, RelayConfig, load_config, load_config_strict, secret_values
from core.engine.surface import StartupError
from core.loading import registered, require_sdk
from core.logs import log_path, setup_logging
from core.redact import register_secrets
from core.retry import RetryPolicy
from core.store.doctor import check_store
from core.store.opening import store_problems

__all__ = ["main"]

log = logging.getLogger("acp_relay.cli")

EXIT_CONFIG = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acp-relay", description="Chat with coding agents from anywhere.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log more (to stderr)")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run every enabled surface until SIGINT/SIGTERM")
    run.add_argument("--config")
    ask = sub.add_parser("ask", help="send one prompt and stream the answer to stdout")
    ask.add_argument("--config")
    ask.add_argument("--agent")
    ask.add_argument("--cwd")
    ask.add_argument("--timeout", type=float)
    ask.add_argument("prompt")
    check = sub.add_parser("check-config", help="validate the config strictly and print it (secrets masked)")
    check.add_argument("--config")
    doctor = sub.add_parser("doctor", help="check agent binaries, tokens and the store")
    doctor.add_argument("--config")
    sub.add_parser("demo-agent", help="run the bundled demo ACP agent on stdio")
    return parser


def _config_path(given: str | None) -> Path | None:
    if given:
        return Path(given).expanduser()
    default = Path.home() / ".config" / "acp-relay" / "config.json"
    return default if default.exists() else None


def _print_config_error(exc: ConfigError) -> None:
    print(str(exc), file=sys.stderr)


def _ask(args: argparse.Namespace, config: RelayConfig) -> int:
    from core.ask import run_ask

    name, agent = choose_agent(config, args.agent)
    spec = agent_spec(name, agent, args.cwd)
    policy = RetryPolicy(config.retry.attempts, config.retry.budget_s, config.retry.base_delay_s)
    with register_secrets(secret_values(config)):  # what `run` registers with its engine
        return asyncio.run(run_ask(
            spec, args.prompt, timeout_s=args.timeout or config.timeouts.prompt_s,
            request_timeout_s=config.timeouts.request_s, approval_s=config.timeouts.approval_s, policy=policy))


def _surface_problems(config: RelayConfig) -> list[tuple[str, str]]:
    """What would make ``run`` refuse to start an enabled surface: its SDK missing (the same sentence
    ``run`` says), or the surface's own ``check``, as ``(json path, problem)``."""
    problems: list[tuple[str, str]] = []
    for name in config.surfaces.enabled():
        plugin = registered()[name]
        try:
            require_sdk(plugin)
        except StartupError as exc:
            problems.append((f"surfaces.{name}.enabled", str(exc)))
            continue
        problems += [(f"surfaces.{name}.{path}", problem) for path, problem in plugin.check(config.surfaces.get(name))]
    return problems


def _check_config(args: argparse.Namespace) -> int:
    path = _config_path(args.config)
    try:
        config = load_config_strict(path)
        if problems := gate_problems(config) + store_problems(config.store) + _surface_problems(config):
            raise ConfigError(path, problems)
    except ConfigError as exc:
        _print_config_error(exc)
        return EXIT_CONFIG
    print(json.dumps(config.effective_dump(mask_secrets=True), indent=2))
    return 0


def _surface_doctor(name: str, config: RelayConfig) -> list[tuple[bool, str]]:
    """The surface's own doctor lines (its credentials checked with the platform), if it has a doctor."""
    plugin = registered()[name]
    try:
        require_sdk(plugin)
    except StartupError as exc:
        return [(False, str(exc))]
    if plugin.doctor is None:
        return []
    lines: list[tuple[bool, str]] = asyncio.run(plugin.doctor(config.surfaces.get(name)))
    return lines


def _doctor(config: RelayConfig) -> int:
    problems = 0
    chosen, _ = choose_agent(config)
    for name, agent in (config.agents or {chosen: choose_agent(config)[1]}).items():
        found = resolve_command(agent.command)
        used = " (used by default)" if name == chosen else ""
        print(f"agent {name}: {agent.command} -> {found or 'NOT FOUND on PATH'}{used}")
        problems += found is None and name == chosen
    for surface in config.surfaces.enabled():
        for ok, line in _surface_doctor(surface, config):
            problems += not ok
            print(f"surface {surface}: {line}")
    for ok, line in check_store(config.store):
        problems += not ok
        print(f"store: {line}")
    return 1 if problems else 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "demo-agent":
        from core.demo_agent import main as demo_main

        return demo_main()
    if args.command == "check-config":
        return _check_config(args)
    try:
        config = load_config(_config_path(args.config))
    except ConfigError as exc:
        _print_config_error(exc)
        return EXIT_CONFIG
    if args.command == "ask":
        return _ask(args, config)
    if args.command == "doctor":
        return _doctor(config)
    from core.app import run_relay

    tune_collector()  # a long-running relay: collect less often (core/collector.py says why)
    return asyncio.run(run_relay(config))


def main(argv: Sequence[str] | None = None) -> int:
    """The ``acp-relay`` console script: returns the exit code (the one place that decides them)."""
    args = _parser().parse_args(argv)
    if args.command != "demo-agent":
        setup_logging(logging.INFO if args.verbose else logging.WARNING)
    try:
        return _dispatch(args)
    except ConfigError as exc:
        _print_config_error(exc)
        return EXIT_CONFIG
    except KeyboardInterrupt:
        return 130
    except Exception:
        log.error("unexpected failure", exc_info=True)  # the traceback goes to the log file only
        print(f"acp-relay: something went wrong inside the relay; details are in {log_path()}",
              file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
