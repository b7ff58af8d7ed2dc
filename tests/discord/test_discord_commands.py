"""Slash commands and their ! aliases, answered through their interactions; none left "thinking"."""

from __future__ import annotations

from tests.discord.harness import ALICE, MALLORY, Relay, RelayFactory, until
from tests.fakes.discord_api import EPHEMERAL


async def thread_of(r: Relay, prompt: str) -> int:
    """Open a conversation thread with a mention; returns the thread id once it was answered."""
    asked = await r.fake.say(r.channel, ALICE, prompt, mention=True)
    await until(lambda: r.fake.thread_for(asked) is not None, "a thread")
    thread = r.fake.thread_for(asked)
    assert thread is not None
    await until(lambda: r.bot_texts(thread.id) and r.idle(), "the first answer")
    return thread.id


def original(r: Relay, interaction_id: int) -> dict:
    inter = r.fake.interactions[interaction_id]
    assert inter.original is not None, "the interaction was never answered"
    return inter.original


async def answered(r: Relay, interaction_id: int) -> dict:
    await until(lambda: r.fake.interactions[interaction_id].original is not None
                and not r.fake.thinking(), "the interaction answered")
    return original(r, interaction_id)


async def test_slash_new_and_bang_new_start_a_new_session(relay: RelayFactory) -> None:
    r = await relay()
    thread = await thread_of(r, "first")
    session = r.store.get_conversation(f"discord:{thread}").session_id
    inter = await r.fake.slash(thread, ALICE, "new")
    shown = await answered(r, inter)
    assert shown["content"].startswith("Started a new conversation")
    assert not shown["flags"] & EPHEMERAL  # the thread sees the reset
    await r.fake.say(thread, ALICE, "second")
    await until(lambda: any("echo: second" in t for t in r.bot_texts(thread)), "answered after /new")
    after_slash = r.store.get_conversation(f"discord:{thread}").session_id
    assert after_slash not in (None, session)
    await r.fake.say(thread, ALICE, "!new")
    await until(lambda: r.bot_texts(thread).count(shown["content"]) == 2, "!new answered in the thread")
    await r.fake.say(thread, ALICE, "third")
    await until(lambda: any("echo: third" in t for t in r.bot_texts(thread)), "answered after !new")
    assert r.store.get_conversation(f"discord:{thread}").session_id not in (None, session, after_slash)
    assert r.methods().count("session/new") == 3


async def test_every_compact_spelling_reaches_the_agent_as_slash_compact(relay: RelayFactory) -> None:
    r = await relay()
    thread = await thread_of(r, "hello")
    inter = await r.fake.slash(thread, ALICE, "compact")
    shown = await answered(r, inter)
    assert "Sent `/compact` to the agent" in shown["content"]
    await until(lambda: any("echo: /compact" in t for t in r.bot_texts(thread)), "the agent's answer")
    await r.fake.say(thread, ALICE, "!compact")
    await until(lambda: r.prompts().count("/compact") == 2 and r.idle(), "the alias too")
    assert r.prompts() == ["hello", "/compact", "/compact"]
    assert sum("The conversation was compacted." in t for t in r.bot_texts(thread)) == 2


async def test_slash_stop_ends_the_running_turn(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    await r.fake.say(dm, ALICE, "text working on it\nhang")
    await until(lambda: any("working on it" in t for t in r.bot_texts(dm)), "the turn runs")
    inter = await r.fake.slash(dm, ALICE, "stop")
    shown = await answered(r, inter)
    assert shown["content"] == "Stopped."
    await r.settled()
    assert any("Stopped." in t and "working on it" in t for t in r.bot_texts(dm))
    assert "session/cancel" in r.methods()
    idle = await r.fake.slash(dm, ALICE, "stop")
    assert (await answered(r, idle))["content"] == "Nothing is running, so there is nothing to stop."
    await r.fake.say(dm, ALICE, "!stop")
    await until(lambda: "Nothing is running, so there is nothing to stop." in r.bot_texts(dm), "!stop answered")


async def test_status_and_help_are_ephemeral_and_spelled_for_discord(relay: RelayFactory) -> None:
    r = await relay()
    dm = r.fake.dm(ALICE)
    status = await answered(r, await r.fake.slash(dm, ALICE, "status"))
    assert status["flags"] & EPHEMERAL and "Agent: fake" in status["content"]
    helped = await answered(r, await r.fake.slash(dm, ALICE, "help"))
    assert helped["flags"] & EPHEMERAL
    assert "`/new` or `!new`: start a new conversation" in helped["content"]
    assert "`/compact` or `!compact`" in helped["content"]
    assert r.prompts() == []  # commands never reach the agent


async def test_model_lists_models_as_buttons_and_a_press_switches(relay: RelayFactory) -> None:
    r = await relay("--models", "alpha,beta")
    dm = r.fake.dm(ALICE)
    shown = await answered(r, await r.fake.slash(dm, ALICE, "model"))
    assert "Current model: alpha" in shown["content"]
    buttons = dict(r.fake.buttons(shown))
    assert set(buttons) == {"alpha", "beta"}
    press = await r.fake.press(dm, ALICE, int(shown["id"]), buttons["beta"])
    said = await answered(r, press)
    assert said["content"] == "Model switched to beta." and said["flags"] & EPHEMERAL
    listed = r.fake.channels[dm].messages[int(shown["id"])]
    await until(lambda: listed["content"] == "Model switched to beta.", "the list edited")
    assert r.fake.buttons(listed) == []
    assert r.store.get_conversation(f"discord:{dm}").model == "beta"
    again = await answered(r, await r.fake.press(dm, ALICE, int(shown["id"]), buttons["alpha"]))
    assert again["content"] == "This button has expired, so the tap changed nothing."
    assert r.store.get_conversation(f"discord:{dm}").model == "beta"
    named = await answered(r, await r.fake.slash(dm, ALICE, "model", name="alpha"))
    assert named["content"] == "Model switched to alpha."


async def test_commands_in_a_channel_not_allowed_and_from_strangers_answer_only_the_asker(
        relay: RelayFactory) -> None:
    r = await relay()
    elsewhere = await answered(r, await r.fake.slash(r.other_channel, ALICE, "status"))
    assert elsewhere["content"] == "This bot does not answer in this channel." and elsewhere["flags"] & EPHEMERAL
    stranger = await answered(r, await r.fake.slash(r.channel, MALLORY, "new"))
    assert stranger["flags"] & EPHEMERAL and f"Your user id is {MALLORY}" in stranger["content"]
    again = await r.fake.slash(r.channel, MALLORY, "new")  # refused once: this one just closes
    await until(lambda: r.fake.interactions[again].callback_type is not None and not r.fake.thinking(),
                "closed without a word")
    assert r.fake.interactions[again].original is not None
    assert int(r.fake.interactions[again].original["id"]) not in r.fake.channels[r.channel].messages
    assert r.bot_texts(r.channel) == [] or all(m["flags"] & EPHEMERAL for m in r.fake.bot_messages(r.channel))
