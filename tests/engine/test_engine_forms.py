"""Issue 22, the agent asks (ACP elicitation) through the engine: the scripted agent, a real process,
sends ``elicitation/create``; the memory surface shows the card; buttons and replies answer it."""

from __future__ import annotations

import json
from typing import Any

from core.engine import twoway_wording as tw
from tests.engine.conftest import Relay, RelayFactory, make_surface, until
from tests.fakes.memory_surface import StoredMessage

EVERY_KIND = {
    "message": "How should I refactor?",
    "schema": {
        "type": "object",
        "properties": {
            "strategy": {"type": "string", "title": "Strategy",
                         "oneOf": [{"const": "safe", "title": "Conservative"}, {"const": "bold", "title": "Bold"}]},
            "tests": {"type": "boolean", "title": "Run the tests"},
            "areas": {"type": "array", "title": "Areas",
                      "items": {"type": "string", "enum": ["core", "ui", "docs"]}},
            "name": {"type": "string", "title": "Branch name", "minLength": 2},
            "budget": {"type": "number", "title": "Budget", "minimum": 0},
            "retries": {"type": "integer", "title": "Retries"},
        },
        "required": ["strategy", "tests", "areas", "name", "budget"],
    },
}


def elicit_script(spec: dict[str, Any]) -> str:
    return f"text before\nelicit {json.dumps(spec)}\ntext after"


def cards(r: Relay) -> list[StoredMessage]:
    return [m for m in r.messages() if m.text.startswith("❓")]


async def card(r: Relay, fragment: str = "") -> StoredMessage:
    await until(lambda: any(fragment in m.text for m in cards(r)), what=f"a form card showing {fragment!r}")
    return cards(r)[-1]


def button(message: StoredMessage, label: str) -> str:
    [found] = [b.token for b in message.buttons if b.label == label]
    return found


def answer_of(r: Relay, msg: Any) -> dict[str, Any]:
    text = r.answer(msg)
    assert text.count("elicit:") == 1, text
    result: dict[str, Any] = json.JSONDecoder().raw_decode(text[text.index("elicit:") + len("elicit:"):])[0]
    return result


async def test_initialize_advertises_forms_and_links(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("hello")
    [init] = [f for f in r.frames() if f.get("method") == "initialize"]
    assert init["params"]["clientCapabilities"]["elicitation"] == {"form": {}, "url": {}}


async def test_every_field_kind_is_asked_in_order_and_answered_with_typed_values(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(elicit_script(EVERY_KIND))
    first = await card(r, "Strategy")
    assert "How should I refactor?" in first.text
    assert [b.label for b in first.buttons] == ["Conservative", "Bold", "Decline", "Cancel"]
    stale = button(first, "Conservative")  # the stored message changes as the card is edited
    assert (await r.press(button(first, "Bold"))).outcome == "resolved"
    second = await card(r, "Run the tests")
    assert "• Strategy: Bold" in second.text
    assert [b.label for b in second.buttons] == ["Yes", "No", "Decline", "Cancel"]
    await r.press(button(second, "No"))
    third = await card(r, "Areas")
    assert [b.label for b in third.buttons] == ["☐ core", "☐ ui", "☐ docs", "Done", "Decline", "Cancel"]
    await r.press(button(third, "☐ core"))
    await until(lambda: "☑ core" in [b.label for b in cards(r)[-1].buttons], what="the toggle shown")
    await r.press(button(third, "☐ docs"))  # the token of a toggle stays while its label changes
    await until(lambda: "☑ docs" in [b.label for b in cards(r)[-1].buttons], what="the second toggle")
    await r.press(button(third, "Done"))
    fourth = await card(r, "Branch name")
    assert tw.FORM_ANSWER_BY_REPLY in fourth.text
    assert [b.label for b in fourth.buttons] == ["Decline", "Cancel"]
    short = await r.send("x")
    assert "at least 2 characters" in r.reply_to(short).text, "asked again, with what fits"
    await r.send("feature/two-way")
    await card(r, "Budget")
    wrong = await r.send("lots")
    assert "'lots' is not a number" in r.reply_to(wrong).text
    await r.send("12.5")
    optional = await card(r, "Retries")
    assert [b.label for b in optional.buttons] == ["Skip", "Decline", "Cancel"]
    await r.press(button(optional, "Skip"))
    await r.idle()
    assert answer_of(r, msg) == {"action": "accept", "content": {
        "strategy": "bold", "tests": False, "areas": ["core", "docs"], "name": "feature/two-way", "budget": 12.5}}
    assert "after" in r.answer(msg)
    await until(lambda: "Answered" in cards(r)[-1].text, what="the card settled")
    settled = cards(r)[-1]
    assert not settled.buttons
    for line in ("• Strategy: Bold", "• Run the tests: No", "• Areas: core, docs", "• Budget: 12.5"):
        assert line in settled.text
    late = await r.press(stale)
    assert late.outcome == "expired"
    assert len(r.prompts()) == 1, "no answer became a prompt"


async def test_decline_and_cancel_are_always_offered_and_reach_the_agent(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(elicit_script(EVERY_KIND))
    await r.press(button(await card(r, "Strategy"), "Decline"))
    await r.idle()
    assert answer_of(r, msg) == {"action": "decline"}
    await until(lambda: "Declined" in cards(r)[-1].text, what="the card says declined")
    again = await r.send(elicit_script(EVERY_KIND))
    await until(lambda: len(cards(r)) == 2, what="the second card")
    await r.press(button(cards(r)[-1], "Cancel"))
    await r.idle()
    assert answer_of(r, again) == {"action": "cancel"}


async def test_a_form_left_unanswered_is_declined_and_the_card_says_so(relay: RelayFactory) -> None:
    r = await relay(timeouts={"prompt_s": 60, "request_s": 10, "approval_s": 0.5})
    msg = await r.send(elicit_script(EVERY_KIND))
    stale = button(await card(r, "Strategy"), "Bold")
    await r.idle()
    assert answer_of(r, msg) == {"action": "decline"}
    await until(lambda: "No answer in time" in cards(r)[-1].text, what="the card says it timed out")
    assert not cards(r)[-1].buttons
    late = await r.press(stale)
    assert late.outcome == "expired"


async def test_strangers_cannot_answer_by_button_or_reply(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(elicit_script({"message": "Name?", "schema": {
        "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}}))
    first = await card(r, "name")
    refused = await r.press(button(first, "Decline"), user="stranger")
    assert refused.outcome == "refused"
    await r.send("mallory", user="stranger")
    await r.send("alice")
    await r.idle()
    assert answer_of(r, msg) == {"action": "accept", "content": {"name": "alice"}}


async def test_a_nested_object_is_declined_with_a_reason_for_the_agent_and_a_notice(relay: RelayFactory) -> None:
    r = await relay()
    nested = {"address": {"type": "object", "properties": {"street": {"type": "string"}}}}
    msg = await r.send(elicit_script({"message": "Address?", "schema": {"type": "object", "properties": nested}}))
    await r.idle()
    result = answer_of(r, msg)
    assert result["action"] == "decline"
    assert "nested object (address)" in result["_meta"]["acp-relay"]["reason"]
    assert "cannot be shown here, so it was declined" in r.answer(msg), r.answer(msg)
    assert not cards(r)


async def test_without_buttons_the_choices_are_numbered_replies(tmp_path: Any, relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(can_buttons=False))
    msg = await r.send(elicit_script(EVERY_KIND))
    first = await card(r, "Strategy")
    assert "1. Conservative" in first.text and "2. Bold" in first.text and "`decline`" in first.text
    assert not first.buttons
    wrong = await r.send("7")
    assert "one of the numbers 1 to 2" in r.reply_to(wrong).text
    await r.send("1")
    await card(r, "Run the tests")
    await r.send("yes")
    await card(r, "Areas")
    await r.send("2, 3")
    await card(r, "Branch name")
    await r.send("main")
    await card(r, "Budget")
    await r.send("3")
    await card(r, "Retries")
    await r.send("skip")
    await r.idle()
    assert answer_of(r, msg)["content"] == {"strategy": "safe", "tests": True, "areas": ["ui", "docs"],
                                            "name": "main", "budget": 3.0}


async def test_a_link_to_open_is_shown_never_opened_and_done_accepts(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("text before\nelicit_url https://example.com/sign-in?x=1 Sign in to the MCP server\ntext after")
    shown = await card(r, "example.com")
    assert "Sign in to the MCP server" in shown.text and "`https://example.com/sign-in?x=1`" in shown.text
    assert tw.URL_HINT in shown.text
    assert [b.label for b in shown.buttons] == ["Done", "Decline", "Cancel"]
    await r.press(button(shown, "Done"))
    await r.idle()
    assert answer_of(r, msg) == {"action": "accept"}


async def test_a_link_the_agent_says_was_followed_through_settles_without_done(relay: RelayFactory) -> None:
    # elicitation/complete: the person signed in elsewhere; the card must not wait for a Done press.
    r = await relay()
    msg = await r.send("text before\nelicit_url_completes https://example.com/sign-in Sign in\ntext after")
    shown = await card(r, "example.com")
    stale = button(shown, "Done")
    await r.idle()
    assert answer_of(r, msg) == {"action": "accept"}
    assert "after" in r.answer(msg)
    await until(lambda: "followed through" in cards(r)[-1].text, what="the card says the link was followed")
    assert not cards(r)[-1].buttons
    assert (await r.press(stale)).outcome == "expired"


async def test_a_stop_while_a_form_waits_cancels_it(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(elicit_script(EVERY_KIND))
    stale = button(await card(r, "Strategy"), "Bold")
    await r.send("/stop")
    await r.idle()
    assert "Stopped." in r.answer(msg)
    await until(lambda: "turn was stopped" in cards(r)[-1].text, what="the card says it was stopped")
    assert (await r.press(stale)).outcome == "expired"



ASK = {"message": "Which?", "toolCallId": "q1", "schema": {
    "type": "object", "properties": {"pick": {"type": "string", "enum": ["a", "b"]}}, "required": ["pick"]}}


async def test_a_call_whose_question_the_form_is_counts_as_asked(relay: RelayFactory) -> None:
    # claude-agent-acp 0.101's AskUserQuestion: the call runs, its question is the form, no permission request
    r = await relay()
    msg = await r.send(f"tool q1 other Ask the person\ntool_update q1 in_progress\nelicit {json.dumps(ASK)}\n"
                       "tool_update q1 completed\ntext after")
    await r.press(button(await card(r, "pick"), "a"))
    await r.idle()
    assert "without asking" not in r.answer(msg) and "after" in r.answer(msg)


async def test_a_form_tied_to_a_command_does_not_let_it_run_unasked(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send(f"tool q1 execute rm -rf build\nelicit {json.dumps(ASK)}\ntool_update q1 completed\n"
                       "text after")
    await r.press(button(await card(r, "pick"), "a"))
    await r.idle()
    assert "ran a tool without asking first (rm -rf build, execute)" in r.answer(msg)
