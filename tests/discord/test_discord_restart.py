"""After a restart: conversations resume (session/load), nothing is answered twice, and what was
written while the relay was down is answered (or, past a handful, said to be missed)."""

from __future__ import annotations

from tests.discord.harness import ALICE, RelayFactory, until


async def test_a_restarted_relay_answers_what_was_missed_in_a_thread_once_in_the_same_session(
        relay: RelayFactory) -> None:
    r = await relay()
    asked = await r.fake.say(r.channel, ALICE, "remember the number 7", mention=True)
    await until(lambda: r.fake.thread_for(asked) is not None and r.bot_texts(asked) and r.idle(), "answered")
    thread = asked  # a thread opened from a message has the message's id
    session = r.store.get_conversation(f"discord:{thread}").session_id
    await r.stop()
    r.fake.add_message(thread, ALICE, "what was the number?")  # written while the relay was down
    r.fake.add_message(r.channel, ALICE, "chatter without a mention")
    await r.start()
    await until(lambda: any("echo: what was the number?" in t for t in r.bot_texts(thread)), "the missed message")
    await r.settled()
    assert "session/load" in r.methods()  # the same conversation, restored
    assert r.store.get_conversation(f"discord:{thread}").session_id == session
    assert r.prompts() == ["remember the number 7", "what was the number?"]
    await r.restart()  # nothing new: nothing is answered again
    await r.fake.say(thread, ALICE, "still there?")
    await until(lambda: any("echo: still there?" in t for t in r.bot_texts(thread)), "a live message")
    await r.settled()
    assert r.prompts() == ["remember the number 7", "what was the number?", "still there?"]
    texts = r.bot_texts(thread)
    assert sum("echo: remember" in t for t in texts) == 1 and sum("echo: what was" in t for t in texts) == 1


async def test_a_mention_written_while_the_relay_was_down_still_opens_its_thread(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(r.channel, ALICE, "an ordinary message: the channel is watched")
    await r.fake.say(dm, ALICE, "sync")
    await until(lambda: r.bot_texts(dm) and r.idle(), "synced")
    await r.stop()
    mention = r.fake.add_message(r.channel, ALICE, f"<@{r.fake.bot['id']}> look at the logs")
    r.fake.channels[r.channel].messages[mention]["mentions"] = [r.fake.bot]
    await r.start()
    await until(lambda: r.fake.thread_for(mention) is not None and r.bot_texts(mention), "answered in a thread")
    assert "echo: look at the logs" in r.bot_texts(mention)[0]


async def test_a_long_backlog_answers_the_latest_and_says_how_many_were_missed(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "hello")
    await until(lambda: r.bot_texts(dm) and r.idle(), "answered")
    await r.stop()
    for i in range(13):  # more than the queue takes (engine.queue_limit, 10)
        r.fake.add_message(dm, ALICE, f"backlog {i}")
    await r.start()
    await until(lambda: r.prompts()[-1:] == ["backlog 12"] and r.idle(), "the latest answered")
    assert r.prompts() == ["hello"] + [f"backlog {i}" for i in range(3, 13)]
    missed = [t for t in r.bot_texts(dm) if "While the bot was offline" in t]
    assert missed == ["While the bot was offline, 13 messages were sent here; only the latest 10 are answered now. "
                      "Send the others again if you still need them."]
    assert not [t for t in r.bot_texts(dm) if t.startswith("Queued")]  # answered in order, no queue notices
    await r.restart()
    await r.settled()
    assert len(r.prompts()) == 11  # the skipped ones are not found again
