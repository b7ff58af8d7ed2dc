"""A bad update or an odd server never stops the Telegram surface (the real PTB against the fake Bot API).

* An update PTB cannot parse is tried on a few polls, then skipped: logged once without its text,
  stored as rejected, confirmed; the messages behind it are answered.
* A server that answers ``getUpdates`` at once (it ignores ``timeout``) is not polled in a busy loop.
"""

from __future__ import annotations

import logging

import pytest

from surfaces.telegram.polling import IDLE_PAUSE_S, PARSE_TRIES
from tests.fakes.telegram_api import Call, FakeBotApi
from tests.telegram.conftest import USER, TgFactory
from tests.waiting import until

SECRET_TEXT = "the launch code is 0000"


async def test_an_update_ptb_cannot_parse_is_skipped_once_stored_as_rejected_and_the_next_is_answered(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    api.private(USER)
    r = await tg()
    poison = api.unreadable(USER, SECRET_TEXT)
    api.say(USER, "text after the bad one")
    await until(lambda: any("after the bad one" in t for t in r.texts(USER)), "the next message is answered")
    await r.settled()
    assert r.prompts() == ["text after the bad one"]
    assert not api.pending_updates, "the bad update was confirmed too"
    offered = [c for c in api.calls("getUpdates") if any(u["update_id"] == poison["update_id"] for u in c.result or [])]
    assert len(offered) == PARSE_TRIES, "tried on a few polls, then skipped"
    rejected = [r for r in caplog.records if r.levelno >= logging.WARNING and "could not be read" in r.getMessage()]
    assert len(rejected) == 1 and str(poison["update_id"]) in rejected[0].getMessage()
    loud = [r for r in caplog.records if r.levelno > logging.DEBUG and SECRET_TEXT in r.getMessage()]
    assert loud == [], "no message text is logged above debug"
    assert not r.store.record_inbound("telegram", f"update:{poison['update_id']}", "", {}), "stored as rejected"
    assert [u.message_id for u in r.store.unfinished_inbound()] == [], "and never replayed"


async def test_a_server_that_answers_getupdates_at_once_is_polled_with_a_pause_between_empty_polls(
        tg: TgFactory, api: FakeBotApi) -> None:
    api.private(USER)
    api.answers_at_once = True
    seen: list[tuple[str, float]] = []  # ("poll", updates returned) and ("pause", seconds), in order

    def polled(call: Call) -> None:
        if call.method == "getUpdates":
            seen.append(("poll", len(call.result or [])))

    async def pause(seconds: float) -> None:
        seen.append(("pause", seconds))

    api.on_call.append(polled)
    r = await tg(poll_sleep=pause)
    await until(lambda: sum(kind == "poll" for kind, _ in seen) >= 6, "a few polls")
    api.say(USER, "text still heard")
    await until(lambda: any("still heard" in t for t in r.texts(USER)), "a message is still answered")
    empty_then_next = [seen[i + 1:] for i, (kind, n) in enumerate(seen) if kind == "poll" and n == 0]
    for after in empty_then_next[:-1]:
        until_next_poll = after[:next(i for i, (kind, _) in enumerate(after) if kind == "poll")]
        assert ("pause", IDLE_PAUSE_S) in until_next_poll, seen


async def test_a_chat_held_for_a_rate_limit_is_one_info_line_with_the_chat_and_how_long(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg()
    api.fail_next("sendMessage", 429, "Too Many Requests: retry after 7", retry_after=7)
    api.say(USER, "text the answer")
    await until(lambda: any("⏱" in t for t in r.texts(USER)), "the answer arrives after the hold")
    held = [rec for rec in caplog.records if rec.name == "acp_relay.engine.pacing"]
    assert [(rec.levelno, rec.getMessage()) for rec in held] == [
        (logging.INFO, "rate limited: nothing goes to telegram:4242 for 7 s")]


async def test_a_strangers_photo_is_never_fetched(tg: TgFactory, api: FakeBotApi) -> None:
    r = await tg()
    stranger = api.private(999)
    api.photo(stranger, b"\xff\xd8" + b"\0" * 4096, caption="look")
    api.photo(stranger, b"\xff\xd8" + b"\0" * 4096)
    await until(lambda: api.bot_messages(stranger), "the stranger is refused")
    await r.settled()
    (refusal,) = api.bot_messages(stranger)
    assert "999" in refusal["text"]
    assert api.calls("getFile") == [], "nothing of a stranger's is downloaded"
    api.private(USER)
    api.photo(USER, b"\xff\xd8" + b"\0" * 64, caption="text mine")
    await until(lambda: api.bot_messages(USER), "the allowed person's photo is answered")
    assert len(api.calls("getFile")) == 1
