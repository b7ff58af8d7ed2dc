"""Redaction by value: every secret the config names is replaced wherever text carries it, whole or
cut off, and a streamed answer never shows the start of one while the rest may still be arriving."""

from __future__ import annotations

import logging

import pytest

from core.config import RelayConfig, secret_values
from core.logs import RedactingFilter
from core.redact import (
    MIN_SECRET_LENGTH,
    REDACTED,
    clear_secrets,
    redact,
    register_secrets,
    registered_secrets,
    unfinished_secret_at,
)

# Shapes no format rule knows: a webhook secret, a signing secret, a generated dashboard token.
WEBHOOK = "wHk_9fQ2-xLr7TzP4mVb8NcY3sKd"
SIGNING = "8f742231b10e4e2c9a0d5be6c71f03aa"
DASHBOARD = "Zq8vR3kP9wLx2mN7bT4yH6jF1cD5gS0a"


def test_a_registered_value_is_replaced_wherever_it_stands() -> None:
    text = f"the webhook secret is {WEBHOOK}, the signing secret {SIGNING}.\n{DASHBOARD}"
    assert redact(text) == text  # no format rule knows these shapes: the hole
    with register_secrets([WEBHOOK, SIGNING, DASHBOARD]):
        assert redact(text) == f"the webhook secret is {REDACTED}, the signing secret {REDACTED}.\n{REDACTED}"
        assert redact(f"x{WEBHOOK}y") == f"x{REDACTED}y"  # inside a longer word too
    assert redact(text) == text  # the scope ended


def test_values_shorter_than_the_minimum_are_not_registered() -> None:
    with register_secrets(["hunter2", "1", "", "  pass  ", "x" * (MIN_SECRET_LENGTH - 1)]):
        assert registered_secrets() == frozenset()
        assert redact("hunter2 and a pass to 1 place, xxxxxxx") == "hunter2 and a pass to 1 place, xxxxxxx"


def test_trivial_values_are_not_registered() -> None:
    with register_secrets(["100000000", "xxxxxxxxxxxx", "abababababab", "abcabcabcabc"]):
        assert registered_secrets() == frozenset()
        assert redact("max_tokens 100000000, xxxxxxxxxxxx") == "max_tokens 100000000, xxxxxxxxxxxx"


def test_a_value_of_a_known_token_shape_keeps_its_hint() -> None:
    telegram, slack = "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0", "xoxb-123456789012-1234567890123-AbCdEfGh"
    with register_secrets([telegram, slack]):
        assert redact(f"bot{telegram}/getMe {slack}") == f"bot123456789:{REDACTED}/getMe xoxb-{REDACTED}"
        assert redact(f"bot {telegram[:30]}") == f"bot {REDACTED}"  # cut off: no hint to give


def test_a_value_is_registered_stripped_of_surrounding_whitespace() -> None:
    with register_secrets([f"  {SIGNING}\n"]):
        assert registered_secrets() == frozenset({SIGNING})
        assert redact(f"[{SIGNING}]") == f"[{REDACTED}]"


def test_a_cut_off_start_of_a_secret_is_replaced_once_it_is_half_of_it() -> None:
    half = (len(DASHBOARD) + 1) // 2
    with register_secrets([DASHBOARD]):
        assert redact(f"token: {DASHBOARD[:half]}\n\nStopped.") == f"token: {REDACTED}\n\nStopped."
        assert redact(f"token: {DASHBOARD[:-1]}") == f"token: {REDACTED}"
        # Less than half is left: a secret's public head (a bot id) must not turn into a marker.
        assert redact(f"token: {DASHBOARD[:half - 1]}") == f"token: {DASHBOARD[:half - 1]}"


def test_a_secret_that_continues_past_its_value_keeps_the_rest() -> None:
    with register_secrets([SIGNING]):
        assert redact(f"{SIGNING}{SIGNING}") == f"{REDACTED}{REDACTED}"
        assert redact(f"{SIGNING}-tail") == f"{REDACTED}-tail"


def test_the_longer_of_two_overlapping_secrets_wins() -> None:
    inner = SIGNING[4:20]
    with register_secrets([inner, SIGNING]):
        assert redact(f"a {SIGNING} b {inner} c") == f"a {REDACTED} b {REDACTED} c"


def test_redaction_by_value_is_idempotent_and_keeps_the_format_hints() -> None:
    text = f"xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp and {WEBHOOK[:20]} and {WEBHOOK}"
    with register_secrets([WEBHOOK]):
        once = redact(text)
        assert redact(once) == once
        assert once == f"xoxb-{REDACTED} and {REDACTED} and {REDACTED}"


def test_a_streamed_answer_holds_back_any_start_of_a_secret() -> None:
    with register_secrets([DASHBOARD]):
        for cut in range(1, len(DASHBOARD)):
            text = f"here it comes: {DASHBOARD[:cut]}"
            assert unfinished_secret_at(text) == len("here it comes: "), cut
        assert unfinished_secret_at("here it comes: " + DASHBOARD) is None  # whole: redact() replaces it
        assert unfinished_secret_at("nothing of it here.") is None
    assert unfinished_secret_at(f"here it comes: {DASHBOARD[:10]}") is None  # not registered


def test_the_hold_back_takes_the_earliest_start_of_several_secrets() -> None:
    with register_secrets([SIGNING, DASHBOARD]):
        text = f"a {DASHBOARD[:3]}{SIGNING[:2]}"
        assert DASHBOARD[:3] + SIGNING[:2] != DASHBOARD[:5]
        assert unfinished_secret_at(text) == text.index(SIGNING[:2])
        assert unfinished_secret_at(f"a {SIGNING[:9]}") == 2


def test_registrations_are_counted_and_clear_forgets_them() -> None:
    first = register_secrets([SIGNING])
    with register_secrets([SIGNING, WEBHOOK]):
        assert registered_secrets() == frozenset({SIGNING, WEBHOOK})
    assert registered_secrets() == frozenset({SIGNING})  # the first registration still holds it
    first.release()
    first.release()  # releasing twice changes nothing
    assert registered_secrets() == frozenset()
    register_secrets([DASHBOARD])
    clear_secrets()
    assert registered_secrets() == frozenset()


def test_the_logging_filter_redacts_registered_values_in_message_and_arguments() -> None:
    record = logging.LogRecord("acp_relay.test", logging.WARNING, __file__, 1,
                               "the agent said %s (%r)", (f"key={SIGNING}", {"t": DASHBOARD}), None)
    with register_secrets([SIGNING, DASHBOARD]):
        RedactingFilter().filter(record)
    assert SIGNING not in record.getMessage() and DASHBOARD not in record.getMessage()
    assert record.getMessage().count(REDACTED) == 2


def _config(agent: dict[str, object], **surfaces: dict[str, object]) -> RelayConfig:
    return RelayConfig.model_validate({"agents": {"a": {"command": "agent", **agent}}, "surfaces": surfaces})


def test_the_config_names_every_surface_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    values = {"TELEGRAM_BOT_TOKEN": "123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
              "TELEGRAM_WEBHOOK_SECRET": WEBHOOK, "DISCORD_BOT_TOKEN": "discord-token-value-0123456789",
              "SLACK_BOT_TOKEN": "xoxb-1-2-abcdefghij", "SLACK_APP_TOKEN": "xapp-1-2-3-abcdefghij",
              "SLACK_SIGNING_SECRET": SIGNING, "MY_DASHBOARD_TOKEN": DASHBOARD}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    config = _config({}, dashboard={"access_token_env": "MY_DASHBOARD_TOKEN"})
    assert set(secret_values(config)) == set(values.values())  # enabled or not: the relay holds them all


def test_agent_env_values_count_by_their_name_or_their_shape_and_flags_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TELEGRAM_BOT_TOKEN", "TELEGRAM_WEBHOOK_SECRET", "DISCORD_BOT_TOKEN", "SLACK_BOT_TOKEN",
                 "SLACK_APP_TOKEN", "SLACK_SIGNING_SECRET", "ACP_RELAY_DASHBOARD_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    env = {"ANTHROPIC_API_KEY": "plain-looking-value-1", "DB_PASSWORD": "correct horse battery",
           "INNOCENT": "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "MODEL": "claude-sonnet-4-5-20250929",
           "BASE_URL": "http://127.0.0.1:9999/v1", "DEBUG": "1", "SHORT_TOKEN": "abc"}
    config = _config({"env": env, "args": ["--api-key", "flag-secret-value-9", "--token=another-flag-value",
                                           "--model", "gpt-6"]})
    assert sorted(secret_values(config)) == sorted([
        "plain-looking-value-1", "correct horse battery", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
        "flag-secret-value-9", "another-flag-value", "abc"])  # "abc" is dropped when it is registered
