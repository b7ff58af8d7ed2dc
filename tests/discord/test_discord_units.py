"""The Discord surface's small pure parts: check, render, thread names, known channels, error mapping."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import discord
import pytest

from core.config import RelayConfig
from core.engine.blocks import Footer, RefusalCard, Text
from core.engine.host import StoreState
from core.engine.surface import DeliveryFailed, DeliveryRefused, MessageTooLong, RateLimited
from core.store import Store
from surfaces.discord.channels import KnownChannels, snowflake_time
from surfaces.discord.errors import delivery_error
from surfaces.discord.inbound import thread_name
from surfaces.discord.render import DiscordFormatter, to_discord
from surfaces.discord.settings import DiscordConfig, check


def config(**discord_keys: Any) -> RelayConfig:
    return RelayConfig.model_validate({"surfaces": {"discord": {"enabled": True, **discord_keys}}})


def settings(**discord_keys: Any) -> DiscordConfig:
    found = config(**discord_keys).surfaces.discord
    assert isinstance(found, DiscordConfig)
    return found


def test_check_names_the_token_variable_and_malformed_endpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DISCORD_BOT_TOKEN", raising=False)
    problems = dict(check(settings(api_base_url="discord.com/api/v10", gateway_url="https://gateway.discord.gg")))
    assert set(problems) == {"token_env", "api_base_url", "gateway_url"}  # paths inside surfaces.discord
    assert "$DISCORD_BOT_TOKEN is not set" in problems["token_env"]
    monkeypatch.setenv("DISCORD_BOT_TOKEN", "x")
    assert check(settings(api_base_url="https://discord.com/api/v10", gateway_url="wss://gateway.discord.gg")) == []


def test_guild_ids_are_integers_like_every_discord_id() -> None:
    assert config(guild_ids=[1, 2]).surfaces.discord.guild_ids == [1, 2]
    with pytest.raises(ValueError):
        RelayConfig.model_validate({"surfaces": {"discord": {"guild_ids": ["1"]}}}, strict=True)


def test_render_keeps_discord_markdown_and_boldens_deep_headings_outside_code() -> None:
    md = "# Title\n#### Detail\n**bold** `code`\n```md\n#### not a heading\n```"
    assert to_discord(md) == "# Title\n**Detail**\n**bold** `code`\n```md\n#### not a heading\n```"
    assert to_discord("plain words") == "plain words"


def test_the_footer_becomes_discord_subtext_and_nothing_else_does() -> None:
    render = DiscordFormatter().render
    assert render((Text("the answer"), Footer(1.2, 4.0))).content == "the answer\n\n-# ⏱ 1.2s · context 4%"
    for agent_text in ("the answer\n\n⏱ 1.2s · context 4%", "⏱ alone, not a footer block", "text\n⏱ glued to the text"):
        assert render((Text(agent_text),)).content == agent_text  # the same words from the agent stay as they are


def test_a_refusal_card_gains_the_new_hint_and_agent_text_that_looks_like_one_does_not() -> None:
    render = DiscordFormatter().render
    card = "The model declined to answer this request.\nCategory: cyber"
    assert render((Text("partial"), RefusalCard(category="cyber"), Footer(2.0))).content == (
        f"partial\n\n{card}\nUse `/new` to start a new conversation if this one keeps being declined.\n\n-# ⏱ 2.0s")
    quoted = f"{card}\n\nmy own words after it\n\n⏱ 2.0s"  # agent text that looks like a card
    assert "/new" not in render((Text(quoted),)).content
    # Right before the core's own footer, the agent's look-alike is still only text (sniffing its words added the hint).
    assert render((Text(card), Footer(2.0))).content == f"{card}\n\n-# ⏱ 2.0s"


def test_plain_text_is_escaped_so_discord_shows_it_as_it_is() -> None:
    shown = DiscordFormatter().render((Text("2 * 3 = 6_ and *not bold*"),), plain=True)
    assert shown.content == discord.utils.escape_markdown("2 * 3 = 6_ and *not bold*")
    assert shown.length == len(shown.content), "measured as it is sent"


def test_thread_names_come_from_the_prompt() -> None:
    assert thread_name("fix   the <@123> build\nnow") == "fix the build"
    assert thread_name("<@5>\n\n  second line\nthird") == "second line"
    assert thread_name("") == "Conversation"
    long = thread_name("word " * 50)
    assert len(long) == 100 and long.endswith("…")


def test_known_channels_survive_a_restart_and_only_move_forward(tmp_path: Path) -> None:
    first = 1_300_000_000_000_000_000
    with Store.open(tmp_path / "relay.db") as store:
        known = KnownChannels(StoreState(store, "discord"))
        known.note(10, first, "thread", 5)
        known.note(10, first - 1, "thread", 5)  # an older message does not move it back
        known.note(11, first + 1, "dm")
        store.set_offset("discord", "channel:12", "not json")
    with Store.open(tmp_path / "relay.db") as store:
        again = KnownChannels(StoreState(store, "discord"))
        assert again.get(10) is not None and again.get(10).last == first and again.get(10).parent == 5
        assert again.get(12) is None
        now = snowflake_time(first + 1)
        assert [cid for cid, _ in again.recent(60, 10, now=now)] == [11, 10]
        assert again.recent(60, 10, now=now + 3600) == []


class _Response(SimpleNamespace):
    pass


def http_error(status: int, code: int = 0, message: str = "x", headers: dict[str, str] | None = None,
               errors: dict[str, Any] | None = None) -> discord.HTTPException:
    response = _Response(status=status, reason="R", headers=headers or {})
    body: dict[str, Any] = {"code": code, "message": message}
    if errors:
        body["errors"] = errors
    return discord.HTTPException(response, body)  # type: ignore[arg-type]


def test_discord_errors_become_the_core_delivery_errors() -> None:
    limited = delivery_error(http_error(429, headers={"Retry-After": "2.5"}))
    assert isinstance(limited, RateLimited) and limited.retry_after_s == 2.5
    assert isinstance(delivery_error(discord.RateLimited(40.0)), RateLimited)
    assert isinstance(delivery_error(http_error(404, 10003, "Unknown Channel")), DeliveryRefused)
    assert isinstance(delivery_error(http_error(403, 50013, "Missing Permissions")), DeliveryRefused)
    too_long = http_error(400, 50035, "Invalid Form Body", errors={"content": {"_errors": [
        {"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}})
    assert isinstance(delivery_error(too_long), MessageTooLong)
    assert isinstance(delivery_error(http_error(404, 10008, "Unknown Message")), DeliveryFailed)
    assert isinstance(delivery_error(http_error(500)), DeliveryFailed)
    assert isinstance(delivery_error(OSError("reset")), DeliveryFailed)
