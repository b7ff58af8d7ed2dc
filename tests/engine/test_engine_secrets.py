"""Secrets the config names never reach a chat or a log line, whatever the agent does with them.

The scripted agent is told the values (a real agent reads them from ``/proc/<relay pid>/environ``:
``tests/dashboard/test_secrets_end_to_end.py`` does that) and echoes them whole, split across
streamed chunks, in a tool title, in its error, in its last stderr line and in a frame the relay logs.
Every text the surface is sent or edited to is watched: not even the start of a secret may show.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from core.redact import REDACTED
from tests.waiting import until

from .conftest import Relay, RelayFactory, make_surface

WEBHOOK = "wHk_9fQ2-xLr7TzP4mVb8NcY3sKd"  # TELEGRAM_WEBHOOK_SECRET
SIGNING = "8f742231b10e4e2c9a0d5be6c71f03aa"  # SLACK_SIGNING_SECRET
API_KEY = "Kq7-wE9rT2yU4iO6pAxZ3"  # the agent's own FAKE_API_KEY (agents.fake.env)
SECRETS = (WEBHOOK, SIGNING, API_KEY)


@pytest.fixture(autouse=True)
def _relay_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", WEBHOOK)
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING)


def shown_starts(texts: list[str]) -> list[tuple[str, str]]:
    """(secret, text) for every text that shows a secret's first five characters."""
    return [(s, t) for t in texts for s in SECRETS if s[:5] in t]


async def watched(relay: RelayFactory) -> tuple[Relay, list[str]]:
    surface = make_surface()
    seen: list[str] = []
    surface.observers.append(lambda _method, _key, text: seen.append(text))
    r = await relay(surface=surface, agent_env={"FAKE_API_KEY": API_KEY})
    return r, seen


async def test_a_secret_streamed_whole_and_split_across_chunks_never_shows(relay: RelayFactory) -> None:
    r, seen = await watched(relay)
    pieces = [f" {SIGNING[:1]}", SIGNING[1:6], SIGNING[6:20], SIGNING[20:]]  # " ": a step's line is stripped
    script = "\n".join([f"text The webhook secret is {WEBHOOK}, the signing secret is",
                        *(f"sleep 0.08\ntext {piece}" for piece in pieces),
                        f"sleep 0.08\ntext . Your key: {API_KEY[:9]}", f"sleep 0.08\ntext {API_KEY[9:]} (done)"])
    msg = await r.send(script)
    await r.idle()
    answer = r.answer(msg)
    assert f"The webhook secret is {REDACTED}, the signing secret is {REDACTED}. Your key: {REDACTED} (done)" in answer
    assert len(seen) >= 4, "the answer streamed in several edits"  # so the chunks were shown one by one
    assert shown_starts(seen) == []


async def test_a_secret_cut_off_by_a_stop_shows_no_more_than_it_must(relay: RelayFactory) -> None:
    r, seen = await watched(relay)
    msg = await r.send(f"text The key is {SIGNING[:20]}\nhang")
    await until(lambda: any("The key is" in text for text in seen), "the start of the answer")
    await r.send("/stop")
    await r.idle()
    assert f"The key is {REDACTED}" in r.answer(msg)
    assert shown_starts(seen) == []


async def test_tool_titles_error_prose_and_the_last_stderr_line_are_redacted(relay: RelayFactory) -> None:
    r, seen = await watched(relay)
    tool = await r.send(f"tool t1 execute curl -H 'X-Slack-Signature: {SIGNING}' https://example.org\n"
                        "tool_update t1 completed\ntext ran it")
    await r.idle()
    assert f"X-Slack-Signature: {REDACTED}" in r.answer(tool)
    error = await r.send(f"error -32603 upstream refused the key {API_KEY}")
    await r.idle()
    assert f"upstream refused the key {REDACTED}" in r.answer(error)
    died = await r.send(f"die 3 fatal: webhook secret {WEBHOOK} rejected")
    await r.idle()
    assert f'Its last output was: "fatal: webhook secret {REDACTED} rejected"' in r.answer(died)
    assert shown_starts(seen) == []


async def test_an_approval_prompt_shows_no_secret(relay: RelayFactory) -> None:
    r, seen = await watched(relay)
    await r.send(f"tool p1 execute deploy --token {WEBHOOK}\npermission p1")
    await until(lambda: any(m.buttons for m in r.messages()), "the approval prompt")
    [prompt] = [m for m in r.messages() if m.buttons]
    assert f"deploy --token {REDACTED}" in prompt.text
    await r.send("/stop")
    await r.idle()
    assert shown_starts(seen) == []


async def test_a_log_line_that_carries_agent_text_is_redacted(relay: RelayFactory, relay_log: Path) -> None:
    r, _seen = await watched(relay)
    kind = f"leak-{SIGNING}"
    await r.ask(f'update {{"sessionUpdate": "{kind}"}}\ntext ok')
    logged = relay_log.read_text(encoding="utf-8")
    assert f"does not know: leak-{REDACTED}" in logged  # the relay logged the agent's words...
    assert SIGNING[:5] not in logged  # ...without the secret
