"""A person edits a message of theirs (a typo fixed, a file name corrected), through the engine (memory
surface, the scripted agent as a real process). The agent reads a message once: an edit of one still
waiting its turn replaces its words, an edit of one it has read is answered with a sentence saying the
edit was not sent, and an edit with no new words, one of a message the relay never took in, and one
delivered twice change nothing. An edit of a message the relay never took in is that message, late: a
surface hands over only edits of messages for the bot as they read now (a mention added after sending)."""

from __future__ import annotations

import dataclasses

from core.engine import edit_wording, wording
from core.engine.messages import InboundMessage
from tests.engine.conftest import Relay, RelayFactory, until

NOT_SENT = "The agent had already read the message you edited to"


async def edit(r: Relay, original: InboundMessage, text: str, *, edit_id: str = "") -> InboundMessage:
    """The surface's edit of ``original``: new words, under an id of the edit's own."""
    edited = dataclasses.replace(original, text=text, message_id=f"{original.message_id}:edit:{edit_id or text}",
                                 edits=original.message_id)
    await r.engine.handle_message(edited)
    return edited


async def running(r: Relay, script: str) -> InboundMessage:
    msg = await r.send(script)
    await until(lambda: any("working" in t for t in r.texts()), what="the turn runs at the agent")
    return msg


async def test_an_edit_of_a_message_waiting_its_turn_replaces_its_words(relay: RelayFactory) -> None:
    r = await relay()
    await running(r, "text working\nsleep 0.5\ntext done")
    waiting = await r.send("text fix foo.py")
    await edit(r, waiting, "text fix bar.py")
    await r.idle()
    assert r.prompts()[1:] == ["text fix bar.py"], "the agent reads the edited words, once"
    assert "fix bar.py" in r.answer(waiting)
    assert not r.with_text(NOT_SENT), "nothing to tell: the agent got the edit"


async def test_an_edit_of_a_message_the_agent_has_read_is_answered_that_it_was_not_sent(relay: RelayFactory) -> None:
    r = await relay()
    answered = await r.send("text fix foo.py")
    await r.idle()
    await edit(r, answered, "text fix bar.py")
    await r.idle()
    assert r.prompts() == ["text fix foo.py"], "an agent reads a message once"
    [notice] = r.with_text(NOT_SENT)
    assert notice.text == edit_wording.edit_not_sent_text("text fix bar.py")
    assert notice.reply_to == answered.message_id, "said under the message that was edited"

    running_now = await running(r, "text working\nsleep 0.3\ntext done")
    await edit(r, running_now, "text working harder")
    await r.idle()
    assert len(r.with_text(NOT_SENT)) == 2, "an edit while its turn runs is not sent either"
    assert r.prompts()[-1] == "text working\nsleep 0.3\ntext done"


async def test_an_edit_with_no_new_words_or_a_repeat_changes_nothing(relay: RelayFactory) -> None:
    r = await relay()
    answered = await r.send("text hello")
    await r.idle()
    shown = r.texts()
    await edit(r, answered, "text hello", edit_id="preview")  # a link preview added: the same words
    await r.idle()
    assert r.texts() == shown

    await edit(r, answered, "text hello again", edit_id="1")
    await edit(r, answered, "text hello again", edit_id="1")  # the platform delivers the same edit again
    await r.idle()
    assert len(r.with_text(NOT_SENT)) == 1, "one edit, one notice"
    assert r.prompts() == ["text hello"]


async def test_an_edit_into_a_command_leaves_the_waiting_message_as_it_was(relay: RelayFactory) -> None:
    r = await relay()
    await running(r, "text working\nsleep 0.5\ntext done")
    waiting = await r.send("text second")
    await edit(r, waiting, "/new")
    await r.idle()
    assert r.prompts()[1:] == ["text second"], "an edit never runs a command"
    assert r.reply_to(waiting).text != wording.NEW_CONVERSATION
    assert r.with_text(NOT_SENT)


async def test_an_edit_before_the_restart_answers_a_waiting_message_sends_its_new_words(relay: RelayFactory) -> None:
    """A message left unanswered by a stopped relay, edited while it was down (the platform delivers the
    edit as the relay starts): the start answers it with the new words, from the journal."""
    r = await relay()
    await running(r, "text working\nsleep 1\ntext done")
    waiting = await r.send("text fix foo.py")
    await r.close()
    await r.build()  # not started yet: the edit arrives before the start looks at the journal
    assert r.engine.accept(dataclasses.replace(waiting, text="text fix bar.py", message_id="e1",
                                               edits=waiting.message_id)) is None
    [left] = [u for u in r.store.unfinished_inbound() if u.message_id == waiting.message_id]
    assert left.payload["text"] == "text fix bar.py"
    await r.lifecycle.start()
    await until(lambda: "fix bar.py" in "\n".join(r.texts()), what="the edited words answered")
    assert "text fix foo.py" not in r.prompts()[1:]


def test_the_notice_names_the_edited_words_on_one_line_and_cut_short() -> None:
    said = edit_wording.edit_not_sent_text("fix\n  the   build " + "x" * 80)
    assert '"fix the build ' + "x" * 46 + '…", so the edit was not sent' in said


def deletion(original: InboundMessage) -> InboundMessage:
    """A surface's report that ``original`` was deleted (who deleted it unknown, as on Discord)."""
    return dataclasses.replace(original, text="", user_id="", message_id=f"{original.message_id}:deleted",
                               edits=original.message_id, deleted=True)


async def test_a_message_deleted_while_it_waits_is_never_answered_and_its_words_are_not_kept(
        relay: RelayFactory) -> None:
    r = await relay()
    await running(r, "text working\nsleep 0.5\ntext done")
    waiting = await r.send("text my password is hunter2")
    await until(lambda: r.conv().queue, what="the second waits its turn")
    await r.engine.handle_message(deletion(waiting))
    await r.engine.handle_message(deletion(waiting))  # the platform delivers it again
    await r.idle()
    assert len(r.prompts()) == 1, "the deleted message never reaches the agent"
    [receipt] = [m for m in r.messages() if m.text.startswith("🗑")]
    assert receipt.text == "🗑 Deleted before it was answered: the agent never got it."
    taken = r.store.taken_inbound(r.surface.name, waiting.message_id)
    assert taken is not None and "hunter2" not in str(taken.payload) and r.store.unfinished_inbound() == []
    assert edit_wording.DELETED_AFTER_READ not in r.texts()


async def test_a_message_deleted_after_the_agent_read_it_is_said_to_stay_in_the_conversation(
        relay: RelayFactory) -> None:
    r = await relay()
    answered = await r.send("text my password is hunter2")
    await r.idle()
    stranger = dataclasses.replace(deletion(r.message("never taken in", message_id="other")))
    await r.engine.handle_message(stranger)
    await r.engine.handle_message(deletion(answered))
    await r.idle()
    assert r.texts().count(edit_wording.DELETED_AFTER_READ) == 1, "said once, for the message taken in alone"
    taken = r.store.taken_inbound(r.surface.name, answered.message_id)
    assert taken is not None and "hunter2" not in str(taken.payload)


async def test_a_message_deleted_while_the_relay_was_down_is_not_answered_by_the_start(relay: RelayFactory) -> None:
    r = await relay()
    await running(r, "text working\nsleep 1\ntext done")
    waiting = await r.send("text never this")
    await r.close()
    await r.build()
    assert r.engine.accept(deletion(waiting)) is None
    await r.lifecycle.start()
    await until(lambda: len(r.prompts()) == 2, what="the interrupted turn answered again")
    await r.idle()
    assert "text never this" not in r.prompts()


async def test_an_edit_of_a_command_says_it_changes_nothing(relay: RelayFactory) -> None:
    r = await relay()
    status = await r.send("/status")
    await r.idle()
    await edit(r, status, "/new")
    await r.idle()
    assert r.texts()[-1] == edit_wording.COMMAND_EDITED, "not 'the agent had already read it': it never did"
    assert not r.with_text(NOT_SENT) and wording.NEW_CONVERSATION not in r.texts()


async def test_an_edit_of_a_message_never_taken_in_is_that_message_late(relay: RelayFactory) -> None:
    """A person forgot to mention the bot and edits the mention in: the surface hands the edit over (it is
    for the bot as it reads now), and the message is answered as it reads, once."""
    r = await relay()
    forgot = r.message("text what failed in the build?", message_id="forgot")  # never journaled
    late = await edit(r, forgot, "text what failed in the build today?")
    await edit(r, forgot, "text what failed in the build today?", edit_id="again")  # delivered again
    await r.idle()
    assert r.prompts() == ["text what failed in the build today?"]
    assert "what failed in the build today?" in r.answer(dataclasses.replace(late, message_id="forgot"))
    assert not r.with_text(NOT_SENT)
    await edit(r, forgot, "text what failed in yesterday's build?", edit_id="later")  # now it was read
    await r.idle()
    assert len(r.with_text(NOT_SENT)) == 1 and len(r.prompts()) == 1
