"""The agent's own commands as each platform can spell them, and typed back to the agent's names."""

from __future__ import annotations

import pytest

from core.engine.router import agent_command, command_word
from core.engine.switches import with_choice

COMMANDS = (("create-plan", "Make a plan"), ("Review", ""), ("compact", "Shrink"), ("ümlaut!", "odd"), ("日本", ""))


@pytest.mark.parametrize(("name", "word"), [
    ("create-plan", "create_plan"), ("Review", "review"), ("a.b c", "a_b_c"), ("--x--", "x"),
    ("ümlaut!", "mlaut"), ("日本", ""),
    ("x" * 40, "x" * 32),
])
def test_a_command_word_is_what_telegram_takes(name: str, word: str) -> None:
    assert command_word(name) == word


@pytest.mark.parametrize(("typed", "sent"), [
    ("/create_plan tidy up", "/create-plan tidy up"), ("!create-plan", "/create-plan"), ("/REVIEW", "/Review"),
    ("!review@relay_bot now", "/Review now"), ("/unknown x", None), ("review", None), ("!", None),
    ("/mlaut", "/ümlaut!"),
])
def test_typed_commands_reach_the_agent_by_its_own_name(typed: str, sent: str | None) -> None:
    assert agent_command(typed, COMMANDS) == sent


def test_no_commands_means_nothing_is_rewritten() -> None:
    assert agent_command("/create_plan", ()) is None


def test_one_stored_choice_per_mode_or_option() -> None:
    assert with_choice(None, "plan") == "plan"
    assert with_choice("plan", "effort=high") == "plan\neffort=high"
    assert with_choice("plan\neffort=high", "default") == "effort=high\ndefault"
    assert with_choice("plan\neffort=high", "effort=low") == "plan\neffort=low"
