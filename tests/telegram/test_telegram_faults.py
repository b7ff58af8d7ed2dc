"""A bad update or an odd server never stops the Telegram surface (the real PTB against the fake Bot API).

* An update PTB cannot parse is tried on a few polls, then skipped: logged once without its text,
  stored as rejected, confirmed; the messages behind it are answered.
* The same update posted to the webhook is stored as rejected at once and answered 200: Telegram
  sends nothing else to a webhook until a post is answered 2xx, and would post it for ever.
* A server that answers ``getUpdates`` at once (it ignores ``timeout``) is not polled in a busy loop.
"""

from __future__ import annotations

import logging
import socket

import aiohttp
import pytest

from core.engine.wording import UNADDRESSABLE_NOTE
from surfaces.telegram.polling import IDLE_PAUSE_S, PARSE_TRIES
from tests.fakes.telegram_api import Call, FakeBotApi
from tests.telegram.conftest import GROUP, USER, TgFactory
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
    assert f"update:{poison['update_id']}" not in [u.message_id for u in r.store.unfinished_inbound()], \
        "and never replayed"


async def test_a_webhook_update_ptb_cannot_parse_is_stored_as_rejected_and_answered_200(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    url = f"http://127.0.0.1:{port}/telegram/hook"
    r = await tg(telegram={"mode": "webhook", "webhook_url": url, "webhook_port": port})
    await until(lambda: api.webhook, "setWebhook was called")
    api.private(USER)
    poison = api.unreadable(USER, SECRET_TEXT)
    api.say(USER, "text after the bad one")
    assert await api.deliver() == [200, 200], "the bad update is taken too, so Telegram goes on"
    await until(lambda: any("after the bad one" in t for t in r.texts(USER)), "the next message is answered")
    await r.settled()
    assert r.prompts() == ["text after the bad one"]
    rejected = [r for r in caplog.records if r.levelno >= logging.WARNING and "could not be read" in r.getMessage()]
    assert len(rejected) == 1 and str(poison["update_id"]) in rejected[0].getMessage()
    assert [r for r in caplog.records if r.levelno > logging.DEBUG and SECRET_TEXT in r.getMessage()] == []
    assert not r.store.record_inbound("telegram", f"update:{poison['update_id']}", "", {}), "stored as rejected"


async def test_a_webhook_stop_of_a_draft_ends_the_turn_and_one_it_cannot_read_is_rejected(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch) -> None:
    """Webhook mode asks for ``stopped_message_generation`` too (``setWebhook``'s ``allowed_updates``): a
    Stop pressed on the draft ends the turn; one with no draft id is stored as rejected and answered 200."""
    monkeypatch.setenv("TELEGRAM_WEBHOOK_SECRET", "s3cret-value_1")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    r = await tg(telegram={"mode": "webhook", "webhook_url": f"http://127.0.0.1:{port}/telegram/hook",
                           "webhook_port": port})
    await until(lambda: api.webhook, "setWebhook was called")
    assert "stopped_message_generation" in (api.allowed_updates or [])
    api.private(USER)
    api.say(USER, "text working on it\nhang")
    assert await api.deliver() == [200]
    await until(lambda: USER in api.drafts, "the draft")
    bad = api.push({"stopped_message_generation": {"chat": {"id": USER, "type": "private"}}})
    api.stop_draft(USER)
    assert await api.deliver() == [200, 200]
    await until(lambda: any("Stopped." in t for t in r.texts(USER)), "the answer says it stopped")
    await r.settled()
    assert r.methods().count("session/cancel") == 1
    assert api.transcript(USER)[-1].startswith("bot: working on it")
    rejected = [r for r in caplog.records if r.levelno >= logging.WARNING and "could not be read" in r.getMessage()]
    assert len(rejected) == 1 and "stopped_message_generation" in rejected[0].getMessage()
    assert not r.store.record_inbound("telegram", f"update:{bad['update_id']}", "", {}), "stored as rejected"


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


@pytest.mark.parametrize("how", ["date in ms", "not json", "no result"])
async def test_an_answer_ptb_cannot_read_is_never_a_failure_notice_nor_a_second_copy(
        tg: TgFactory, api: FakeBotApi, how: str) -> None:
    api.private(USER)
    r = await tg()
    api.answer_oddly("sendMessage", how, times=5)
    api.say(USER, "text the answer\nsleep 0.2\ntext  is complete")
    await until(lambda: any("⏱" in t for t in r.texts(USER)), "the answer")
    await r.settled()
    await r.restart()  # a kept ("undelivered") answer would be sent again now
    await r.settled()
    assert r.texts(USER) == [t for t in r.texts(USER) if "would not accept" not in t], "no failure notice"
    assert len(r.texts(USER)) == 1 and r.texts(USER)[0].startswith("the answer is complete"), api.transcript(USER)
    assert r.store.pending_outbound() == []


async def test_an_answer_without_its_message_id_is_marked_before_the_reply_goes_on_below(
        tg: TgFactory, api: FakeBotApi) -> None:
    api.group(GROUP)
    r = await tg()
    api.answer_oddly("sendMessage", "no message_id")  # the first piece is shown, but it cannot be edited
    api.say(GROUP, "@relay_bot text the beginning\nsleep 0.5\ntext  and the rest", user=USER)
    await until(lambda: any("⏱" in t for t in r.texts(GROUP)), "the answer")
    await r.settled()
    texts = r.texts(GROUP)
    assert "would not accept" not in "".join(texts) and r.store.pending_outbound() == []
    assert texts[0].startswith("the beginning") and "⏱" not in texts[0], api.transcript(GROUP)
    assert texts[1] == UNADDRESSABLE_NOTE, "the cut-off copy is marked"
    assert texts[2].startswith("the beginning and the rest") and len(texts) == 3


@pytest.mark.parametrize("says", ["telegram", "emulator"])
async def test_methods_the_server_does_not_have_are_asked_once_and_the_replies_still_arrive(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture, says: str) -> None:
    caplog.set_level(logging.INFO)
    lacking = ("setMyCommands", "sendMessageDraft", "sendChatAction")
    api.unsupported = dict.fromkeys(lacking, says)
    api.private(USER)
    r = await tg()
    for n in range(3):
        api.say(USER, f"text answer {n}\nsleep 0.3\ntext  done")
        await until(lambda n=n: any(f"answer {n} done" in t for t in r.texts(USER)), f"answer {n}")
        await r.settled()
    assert [m["text"].split("\n\n")[0] for m in api.bot_messages(USER)] == [f"answer {n} done" for n in range(3)]
    assert {m: len(api.calls(m)) for m in lacking} == dict.fromkeys(lacking, 1), "each asked once, then remembered"
    said = [rec.getMessage() for rec in caplog.records if rec.levelno >= logging.WARNING]
    assert sorted(line for line in said if "does not support" in line) == [
        "the Bot API server does not support sendChatAction; no typing indicator is shown",
        "the Bot API server does not support sendMessageDraft; replies are sent and edited instead of streamed "
        "as drafts",
        "the Bot API server does not support setMyCommands; the chat shows no command menu"]
    assert len(said) == 3, said


async def test_a_second_poller_on_the_same_token_is_named_and_the_relay_goes_on(
        tg: TgFactory, api: FakeBotApi, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    api.private(USER)
    r = await tg()
    await until(lambda: api.calls("getUpdates"), "the relay polls")
    url = f"{api.url}/bot{api.token}/getUpdates"
    async with aiohttp.ClientSession() as session, session.post(url, data={"timeout": "0"}) as answer:
        assert answer.status == 200  # another program polled with the same token
    await until(lambda: any(c.status == 409 for c in api.calls("getUpdates")), "the relay's poll was ended")
    api.say(USER, "text still here")
    await until(lambda: any("still here" in t for t in r.texts(USER)), "the relay polls again and answers")
    said = [rec.getMessage() for rec in caplog.records
            if rec.name.startswith("acp_relay") and "409" in rec.getMessage()]
    assert said and all("another program is polling this bot" in line for line in said), said
