"""Issue 18's captures through a real Engine on a memory surface (as a chat shows them): Copilot's
failed turns are prose, never its "Error:" text or its provider's URL; the relay sends one prompt
(the agents retried by themselves); Copilot's retrying is said while it lasts; a denied tool call is
said; Qwen Code's silent 429 loop ends in a sentence naming the rate limit."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from core.config import RelayConfig
from core.engine import wording
from tests.acp.test_replay import CAPTURES, REPLAY_AGENT
from tests.engine.conftest import Relay, make_surface
from tests.fakes.acp_schema import validate_record_file

#: Provider words that must never reach a chat.
RAW = ("Error:", "Info:", "127.0.0.1", "<port>", "Retrying...", "Last error", "invalid_request_error")


class ReplayRelay(Relay):
    """``tests.engine``'s Relay whose agent replays a capture."""

    capture: str = ""
    tool_gate: str = "ask"
    prompt_s: float = 60.0

    def config(self) -> RelayConfig:
        args = [str(REPLAY_AGENT), str(CAPTURES / self.capture), "--record", str(self.record)]
        data: dict[str, Any] = {
            "agents": {"replayed": {"command": sys.executable, "args": args, "cwd": str(self.workdir),
                                    "tool_gate": self.tool_gate}},
            "store": {"path": str(self.db)},
            "retry": {"attempts": 3, "budget_s": 10, "base_delay_s": 0.05},
            "timeouts": {"prompt_s": self.prompt_s, "request_s": 10},
            "engine": {"edit_interval_s": 0.02},
        }
        return RelayConfig.model_validate(data)

    def prompts(self) -> list[str]:  # type: ignore[override]
        return [f for f in validate_record_file(self.record) if f.get("method") == "session/prompt"]


async def _relay(tmp_path: Path, capture: str, **kw: Any) -> tuple[ReplayRelay, list[str]]:
    r = ReplayRelay(tmp_path, make_surface())
    r.capture = capture
    for key, value in kw.items():
        setattr(r, key, value)
    shown: list[str] = []
    r.surface.observers.append(lambda method, key, text: shown.append(text))
    await r.start()
    return r, shown


def _raw(shown: list[str]) -> list[str]:
    return [f"{word!r} in {text!r}" for text in shown for word in RAW if word in text]


async def test_copilot_400_is_the_malformed_prose_and_no_raw_text_ever_shows(tmp_path: Path) -> None:
    r, shown = await _relay(tmp_path, "copilot-mock-400.jsonl")
    try:
        reply = await r.ask("say hi")
        assert "malformed" in reply.text and "/compact" in reply.text
        assert len(r.prompts()) == 1
        assert not _raw(shown), _raw(shown)
    finally:
        await r.close()


async def test_copilot_429_after_its_own_five_retries_is_not_retried_again(tmp_path: Path) -> None:
    r, shown = await _relay(tmp_path, "copilot-mock-429.jsonl")
    try:
        reply = await r.ask("say hi")
        assert "rate-limiting" in reply.text
        assert len(r.prompts()) == 1, "Copilot retried five times itself: the relay does not multiply that"
        assert wording.retrying(2, 3) not in reply.text
        assert not _raw(shown), _raw(shown)
    finally:
        await r.close()


async def test_copilot_retrying_is_said_while_it_lasts_then_the_failure(tmp_path: Path) -> None:
    r, shown = await _relay(tmp_path, "copilot-mock-529.jsonl")
    try:
        reply = await r.ask("say hi")
        # The "retrying" line (shown while the agent retried: how long it stays on screen depends on
        # the edit pace) is corrected in place; it is there to be corrected only if it was set.
        assert wording.AGENT_RETRY_GAVE_UP in reply.text and "overloaded" in reply.text
        assert reply.text.count(wording.AGENT_RETRY_GAVE_UP) == 1
        assert not _raw(shown), _raw(shown)
    finally:
        await r.close()


async def test_copilot_401_names_no_provider_url(tmp_path: Path) -> None:
    r, shown = await _relay(tmp_path, "copilot-mock-401.jsonl")
    try:
        reply = await r.ask("say hi")
        assert "not signed in" in reply.text and "COPILOT_PROVIDER_API_KEY" in reply.text
        assert not _raw(shown), _raw(shown)
    finally:
        await r.close()


async def test_a_denied_tool_call_reads_denied_and_says_nothing_was_answered(tmp_path: Path) -> None:
    r, _shown = await _relay(tmp_path, "qwen-mock-tool-deny.jsonl", tool_gate="deny")
    try:
        reply = await r.ask("write the marker file")
        assert ": denied" in reply.text and ": failed" not in reply.text
        assert wording.TOOL_DENIED in reply.text
        assert wording.EMPTY_ANSWER not in reply.text
    finally:
        await r.close()


async def test_qwen_silent_429_loop_ends_in_a_sentence_naming_the_rate_limit(tmp_path: Path) -> None:
    r, _shown = await _relay(tmp_path, "qwen-mock-429-cut.jsonl", prompt_s=0.5)
    try:
        reply = await r.ask("say hi")
        assert "rate-limiting" in reply.text and "retries" in reply.text
        assert len(r.prompts()) == 1, "a timeout is not retried"
    finally:
        await r.close()
