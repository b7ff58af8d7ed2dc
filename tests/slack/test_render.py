"""The small converters: Markdown -> Slack payload, Slack markup -> what the person typed, keys, errors."""

from __future__ import annotations

import itertools

import pytest
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from core.engine.blocks import ErrorProse, Notices, Text
from core.engine.messages import Button
from core.engine.surface import DeliveryFailed, DeliveryRefused, MarkupRejected, MessageTooLong, RateLimited
from surfaces.slack import wording
from surfaces.slack.errors import delivery_error
from surfaces.slack.inbound import heard, person_text, strip_mention
from surfaces.slack.keys import Thread, parse_key
from surfaces.slack.render import ACTION_PREFIX, SlackFormatter, escape, payload, render


def test_the_markdown_block_carries_the_agents_markdown_as_it_is() -> None:
    text = "**bold** `code` <!channel> <@U123> & done"
    body = payload(text)
    assert body["blocks"] == [{"type": "markdown", "text": text}]
    # The fallback is plain text, escaped so that Slack's own syntax pings nobody.
    assert body["text"] == "bold code &lt;!channel&gt; &lt;@U123&gt; &amp; done"


def test_plain_sends_escaped_text_only_and_buttons_keep_their_tokens() -> None:
    body = payload("2 * 3 = 6_ <b>", (Button("Allow once", "tok-1", "primary"), Button("x" * 90, "tok-2")),
                   plain=True)
    assert body["text"] == "2 * 3 = 6_ &lt;b&gt;"
    [actions] = body["blocks"]
    first, second = actions["elements"]
    assert first == {"type": "button", "action_id": f"{ACTION_PREFIX}0", "value": "tok-1", "style": "primary",
                     "text": {"type": "plain_text", "text": "Allow once"}}
    assert "style" not in second and len(second["text"]["text"]) == 75


def test_the_reset_hint_follows_the_cores_suggestion_and_never_lands_in_agent_text() -> None:
    render_blocks = SlackFormatter().render
    prose = "The conversation no longer fits. Use /compact to shrink it, or start a new conversation."
    assert render_blocks((ErrorProse(prose, reset=True),)).markdown == f"{prose} {wording.RESET_HINT}"
    assert render_blocks((ErrorProse("The agent is still working."),)).markdown == "The agent is still working."
    code = "```\nstart a new conversation.\n```"
    assert render_blocks((Text(code),)).markdown == code
    assert render_blocks((Notices(("Started a new conversation.",)),)).markdown == "Started a new conversation."
    # The agent's own words are never taken for the core's suggestion (a regex on them added the hint).
    said = "You could start a new conversation."
    assert render_blocks((Text(said),)).markdown == said


def test_single_newlines_stay_line_breaks_outside_code() -> None:
    assert render("Agent: fake\nModel: default\n\nNext paragraph") == "Agent: fake  \nModel: default\n\nNext paragraph"
    code = "```py\nx = 1\ny = 2\n```"
    assert render(f"Intro\n{code}\nAfter") == f"Intro  \n{code}\nAfter"


def test_a_growing_text_renders_to_a_growing_text() -> None:
    text = "Agent: fake\nModel: default\n\n```py\nx = 1\ny = 2\n```\nAfter the code\nand more"
    renders = [render(text[:n].rstrip()) for n in range(1, len(text) + 1)]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(renders))


@pytest.mark.parametrize(("growing", "closer", "streamed"), [
    ("plain words", "", "plain words"),
    ("intro\n\n```py\nx = 1\n```", "\n```", "intro\n\n```py\nx = 1"),  # the core closed it: the block goes on
    ("```py\nx = 1\n```\n\nafter", "", "```py\nx = 1\n```\n\nafter"),
    ("```py\nx = 1\n```", "", "```py\nx = 1\n```"),  # the agent closed it itself
])
def test_a_stream_leaves_off_only_the_fence_the_core_closed(growing: str, closer: str, streamed: str) -> None:
    shown = SlackFormatter().render((Text(growing, closer=closer),))
    assert shown.markdown == growing and shown.streamable == streamed


def test_escape_covers_slacks_three_control_characters() -> None:
    assert escape("a < b > c & d") == "a &lt; b &gt; c &amp; d"


@pytest.mark.parametrize(("slack", "typed"), [
    ("5 &lt; 6 &amp;&amp; 7 &gt; 2", "5 < 6 && 7 > 2"),
    ("ask <@U0BOB> in <#C0DEV|dev>", "ask @U0BOB in #dev"),
    ("<!here> look", "@here look"),
    ("see <https://example.com|example.com>", "see https://example.com"),
    ("see <https://example.com/a|the docs>", "see the docs (https://example.com/a)"),
    ("<mailto:a@b.io|a@b.io>", "a@b.io"),
    ("`&lt;tag&gt;`", "`<tag>`"),
])
def test_person_text_undoes_slacks_markup(slack: str, typed: str) -> None:
    assert person_text(slack) == typed


def test_strip_mention_removes_only_the_apps_own_mention() -> None:
    assert strip_mention("<@U0BOT> text hi\nsleep 1", "U0BOT") == "text hi\nsleep 1"
    assert strip_mention("ask <@U0BOT|relay> now, <@U0BOB>", "U0BOT") == "ask now, <@U0BOB>"


def joined(_: Thread) -> bool:
    return True


def test_heard_reads_threads_dms_and_ignores_what_is_not_for_the_app() -> None:
    base = {"user": "U1", "channel": "C1", "ts": "2.0", "text": "<@UB> hi"}
    mention = heard(base, team="T", bot_user_id="UB", joined=joined, mention_event=True)
    assert mention is not None and mention.thread == Thread("T", "C1", "2.0") and mention.text == "hi"
    in_thread = heard({**base, "thread_ts": "1.0"}, team="T", bot_user_id="UB", joined=joined, mention_event=True)
    assert in_thread is not None and in_thread.thread.thread_ts == "1.0"
    # The message event of a mention is left to app_mention; a top-level channel message is not ours.
    assert heard(base, team="T", bot_user_id="UB", joined=joined, mention_event=False) is None
    assert heard({**base, "text": "hi"}, team="T", bot_user_id="UB", joined=joined, mention_event=False) is None
    reply = {**base, "text": "more", "thread_ts": "1.0"}
    assert heard(reply, team="T", bot_user_id="UB", joined=lambda t: False, mention_event=False) is None
    assert heard(reply, team="T", bot_user_id="UB", joined=joined, mention_event=False) is not None
    dm = heard({**base, "channel": "D1", "channel_type": "im", "text": "hello"}, team="T", bot_user_id="UB",
               joined=lambda t: False, mention_event=False)
    assert dm is not None and dm.thread == Thread("T", "D1", "2.0")
    for noise in ({"bot_id": "B1"}, {"subtype": "message_changed"}, {"user": "UB"}, {"user": ""}):
        assert heard({**base, **noise}, team="T", bot_user_id="UB", joined=joined, mention_event=True) is None
    empty = heard({**base, "text": "<@UB>"}, team="T", bot_user_id="UB", joined=joined, mention_event=True)
    assert empty is not None and empty.text == "!help"


def test_keys_round_trip_and_refuse_what_is_not_slacks() -> None:
    thread = Thread("T1", "C1", "1700000000.000100")
    assert thread.key == "slack:T1:C1:1700000000.000100" and parse_key(thread.key) == thread
    for bad in ("telegram:1", "slack:T1:C1", "slack:T1::1.0", "slack:a:b:c:d"):
        with pytest.raises(ValueError):
            parse_key(bad)


def api_error(error: str, status: int = 200, headers: dict[str, str] | None = None) -> SlackApiError:
    response = AsyncSlackResponse(client=AsyncWebClient(), http_verb="POST", api_url="x", req_args={},
                                  data={"ok": False, "error": error}, headers=headers or {}, status_code=status)
    return SlackApiError("failed", response)


@pytest.mark.parametrize(("error", "status", "kind"), [
    ("msg_too_long", 200, MessageTooLong), ("msg_blocks_too_long", 200, MessageTooLong),
    ("invalid_blocks", 200, MarkupRejected), ("not_in_channel", 200, DeliveryRefused),
    ("channel_not_found", 200, DeliveryRefused), ("is_archived", 200, DeliveryRefused),
    ("message_not_in_streaming_state", 200, DeliveryFailed), ("internal_error", 500, DeliveryFailed),
    ("message_not_found", 200, DeliveryFailed),
])
def test_slacks_errors_become_the_cores(error: str, status: int, kind: type) -> None:
    assert type(delivery_error(api_error(error, status))) is kind


def test_a_429_carries_slacks_retry_after() -> None:
    err = delivery_error(api_error("ratelimited", 429, {"Retry-After": "7"}))
    assert isinstance(err, RateLimited) and err.retry_after_s == 7.0
    assert delivery_error(api_error("ratelimited", 429)).retry_after_s == 1.0  # type: ignore[attr-defined]
