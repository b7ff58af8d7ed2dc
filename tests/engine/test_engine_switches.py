"""Driving the agent from the chat: projects, agents, the session list, modes, cost, the agent's own
commands and notices, through a real engine and the scripted agent (a real subprocess)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from core.engine.blocks import Choices, Footer
from tests.conftest import FAKE_AGENT_PATH

from .conftest import KEY, Relay, RelayFactory, make_surface, until


def _projects(tmp: Path, **extra: Any) -> dict[str, Any]:
    app, web = tmp / "app", tmp / "web"
    app.mkdir(exist_ok=True)
    web.mkdir(exist_ok=True)
    return {"app": {"folder": str(app)}, "web": {"folder": str(web)}, **extra}


async def _command(r: Relay, text: str) -> str:
    """Send a command and return the text of its reply (commands are answered before send returns)."""
    msg = await r.send(text)
    return r.reply_to(msg).text


def _choices(r: Relay, text: str) -> tuple[Choices, tuple[str, ...]]:
    """The picker a command answered with, and its buttons' labels."""
    shown = next(m for m in reversed(r.messages()) if m.blocks and isinstance(m.blocks[0], Choices))
    block = shown.blocks[0]
    assert isinstance(block, Choices)
    return block, tuple(b.label for b in shown.buttons)


def _token(r: Relay, label: str) -> str:
    for m in reversed(r.messages()):
        for b in m.buttons:
            if b.label == label:
                return b.token
    raise AssertionError(f"no button {label!r}")


async def _opened_ahead(r: Relay) -> str:
    """The session opened after the last ``/new`` while the person writes (the agent lists it too)."""
    await until(lambda: r.session_id() is not None, what="the next session opened ahead")
    opened = r.session_id()
    assert opened is not None
    return opened


def _new_cwds(r: Relay) -> list[str]:
    return [f["params"]["cwd"] for f in r.frames() if f.get("method") == "session/new"]


# -- projects -------------------------------------------------------------------------------


async def test_project_buttons_switch_the_folder_and_survive_a_restart(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(projects=_projects(tmp_path))
    await r.ask("text hello")
    first_session = r.session_id()
    assert _new_cwds(r) == [str(r.workdir)]

    await r.send("/project")
    block, labels = _choices(r, "Project")
    assert labels == ("app", "web")
    assert block.prompt.startswith("Project: none") and not block.numbered

    result = await r.press(_token(r, "web"))
    assert result.outcome == "resolved" and "web" in result.text
    reply = await r.ask("text in web")
    assert "in web" in reply.text
    assert _new_cwds(r)[-1] == str(tmp_path / "web")
    assert r.session_id() != first_session
    stored = r.store.get_conversation(KEY)
    assert stored is not None and stored.project == "web"

    await r.restart()
    status = await _command(r, "/status")
    assert "Project: web" in status and f"Folder: {tmp_path / 'web'}" in status
    await r.ask("text after restart")
    assert _new_cwds(r)[-1] == str(tmp_path / "web")  # (the same agent process kept it too: by name)


async def test_project_by_name_and_the_bad_names(relay: RelayFactory, tmp_path: Path) -> None:
    projects = _projects(tmp_path, gone={"folder": str(tmp_path / "not-there")})
    r = await relay(projects=projects)
    await r.ask("text hello")
    before = r.store.get_conversation(KEY)

    text = await _command(r, "/project nowhere")
    assert "no project called 'nowhere'" in text and "app, web, gone" in text
    text = await _command(r, "/project gone")
    assert "does not exist" in text and "nothing was changed" in text
    assert r.store.get_conversation(KEY) == before  # nothing changed, not even the time stamp

    text = await _command(r, "/project app")
    assert "Switched to the project app" in text
    assert "already uses the project app" in await _command(r, "/project app")


async def test_leaving_a_project_goes_back_to_the_agents_own_folder(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(projects=_projects(tmp_path))
    assert await _command(r, "/project none") == "This conversation uses no project, so nothing was changed."
    await _command(r, "/project web")
    await r.ask("text in web")
    await r.send("/project")
    block, labels = _choices(r, "Project")
    assert labels == ("app", "web", "None: the agent's own folder") and block.current == 1
    result = await r.press(_token(r, "None: the agent's own folder"))
    assert result.text.startswith(f"Left the project web: the agent works in its own folder (`{r.workdir}`)")
    await r.ask("text home again")
    assert _new_cwds(r)[-1] == str(r.workdir)
    stored = r.store.get_conversation(KEY)
    assert stored is not None and stored.project == ""
    await r.send("/project")
    assert _choices(r, "Project")[1] == ("app", "web"), "no way back is offered where there is nowhere to go"


async def test_no_projects_configured_is_one_sentence(relay: RelayFactory) -> None:
    r = await relay()
    assert await _command(r, "/project") == ("No projects are configured, so this conversation works in its "
                                             "agent's folder.")


async def test_a_stale_project_button_changes_nothing(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(projects=_projects(tmp_path))
    await r.send("/project")
    stale = _token(r, "app")
    await r.send("/project")  # a newer list expires the older one
    result = await r.press(stale)
    assert result.outcome == "expired"
    rec = r.store.get_conversation(KEY)
    assert rec is None or rec.project == ""


async def test_switching_while_an_answer_runs_is_refused(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(projects=_projects(tmp_path))
    await r.send("hang")
    await until(lambda: "session/prompt" in r.methods(), what="the turn runs")
    text = await _command(r, "/project web")
    assert text.startswith("An answer is running, so nothing was switched.")
    await r.send("/project")  # the list is shown; a press while the answer runs changes nothing
    pressed = await r.press(_token(r, "web"))
    assert pressed.text.startswith("An answer is running, so nothing was switched.")
    await r.send("/stop")
    await r.idle()
    rec = r.store.get_conversation(KEY)
    assert rec is not None and rec.project == ""
    assert (await r.press(_token(r, "web"))).text.startswith("Switched to the project web")  # still open


# -- agents ---------------------------------------------------------------------------------


def other_agent(tmp: Path) -> dict[str, Any]:
    record = tmp / "other-record.jsonl"
    return {"other": {"command": sys.executable, "cwd": str(tmp),
                      "args": [str(FAKE_AGENT_PATH), "--agent-name", "other-agent", "--record", str(record)]}}


async def test_agent_switch_starts_that_agent_and_is_kept(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(agents=other_agent(tmp_path))
    await r.ask("text hello")
    await r.send("/agent")
    block, labels = _choices(r, "Agent")
    assert labels == ("fake", "other") and block.current == 0

    assert "Switched to the agent other" in (await r.press(_token(r, "other"))).text
    await r.ask("text on the other one")
    assert (tmp_path / "other-record.jsonl").read_text().count("session/prompt") == 1
    await r.restart()
    assert "Agent: other" in await _command(r, "/status")
    assert "no agent called 'nobody'" in await _command(r, "/agent nobody")
    assert "Agent: other" in await _command(r, "/status")


# -- reset closes, cost ---------------------------------------------------------------------


async def test_new_closes_the_old_session_where_the_agent_offers_it(relay: RelayFactory) -> None:
    r = await relay("--sessions")
    await r.ask("text hello")
    old = r.session_id()
    await r.send("/new")
    closes = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/close"]
    assert closes == [old]


async def test_new_does_not_close_where_the_agent_has_no_close(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hello")
    await r.send("/new")
    assert "session/close" not in r.methods()


async def test_cost_is_in_the_footer_and_summed_in_status(relay: RelayFactory) -> None:
    r = await relay()
    first = await r.ask("usage 10 100 0.25 USD\ntext one")
    footer = first.blocks[-1]
    assert isinstance(footer, Footer) and footer.cost == "0.25 USD"
    second = await r.ask("usage 20 100 0.75 USD\ntext two")  # cumulative: this turn cost 0.50
    assert second.blocks[-1] == Footer(second.blocks[-1].elapsed_s, 20.0, "0.50 USD")
    assert "Cost so far: 0.75 USD" in await _command(r, "/status")

    await r.send("/new")  # a new session: its cost adds to the conversation's
    await r.ask("usage 5 100 0.10 USD\ntext three")
    assert "Cost so far: 0.85 USD" in await _command(r, "/status")
    await r.restart()
    assert "Cost so far: 0.85 USD" in await _command(r, "/status")


async def test_no_cost_reported_means_no_cost_shown(relay: RelayFactory) -> None:
    r = await relay()
    reply = await r.ask("usage 10 100\ntext one")
    assert reply.blocks[-1] == Footer(reply.blocks[-1].elapsed_s, 10.0, "")
    assert "Cost" not in await _command(r, "/status")


# -- sessions -------------------------------------------------------------------------------


async def test_sessions_lists_newest_first_and_attaches_with_resume(relay: RelayFactory) -> None:
    r = await relay("--sessions")
    await r.ask("title First task\ntext one")
    first = r.session_id()
    await r.send("/new")
    await r.ask("title Second task\ntext two")

    await r.send("/sessions")
    block, labels = _choices(r, "sessions")
    assert [label.split(" · ")[0] for label in labels] == ["Second task", "First task"]
    assert block.current == 0
    listed = [f["params"] for f in r.frames() if f.get("method") == "session/list"]
    assert listed == [{"cwd": str(r.workdir)}]

    result = await r.press(next(b.token for m in r.messages() for b in m.buttons if b.label.startswith("First")))
    assert "Continuing the session \u201cFirst task\u201d" in result.text
    assert r.session_id() == first
    assert "session/load" not in r.methods()
    reply = await r.ask("text back in the first")
    assert "back in the first" in reply.text
    prompts = [f["params"]["sessionId"] for f in r.frames() if f.get("method") == "session/prompt"]
    assert prompts[-1] == first


async def test_sessions_page_at_a_time(relay: RelayFactory) -> None:
    r = await relay("--sessions", "--list-page", "3")
    for i in range(4):
        await r.ask(f"title Task {i}\ntext {i}")
        await r.send("/new")
    await _opened_ahead(r)  # listed by the agent (first), not by the relay: nothing in it to continue
    await r.send("/sessions")
    block, labels = _choices(r, "sessions")
    assert [label.split(" · ")[0] for label in labels] == ["Task 3", "Task 2", "More…"]
    assert block.current == -1
    more = await r.press(_token(r, "More…"))
    assert more.outcome == "resolved"
    _, labels = _choices(r, "sessions")
    assert [label.split(" · ")[0] for label in labels] == ["Task 1", "Task 0"]
    cursors = [f["params"].get("cursor") for f in r.frames() if f.get("method") == "session/list"]
    assert cursors == [None, "3"]


async def test_attach_falls_back_to_load_without_posting_the_history(relay: RelayFactory) -> None:
    """An agent that lists but cannot resume (modelled by the id given by hand to a loading agent)."""
    r = await relay()
    await r.ask("text remember me")
    old = r.session_id()
    await r.send("/new")
    await r.ask("text another")
    shown = len(r.messages())
    text = await _command(r, f"/sessions {old}")
    assert text.startswith("Continuing") and "not shown again" in text
    assert "session/load" in r.methods()
    assert len(r.messages()) == shown + 1  # the one-line summary, no replayed history
    assert r.session_id() == old


async def test_unknown_session_and_no_list(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hello")
    before = r.session_id()
    text = await _command(r, "/sessions no-such-session")
    assert text == "The agent does not know the session no-such-session, so nothing was changed."
    assert r.session_id() == before
    assert await _command(r, "/sessions") == ("This agent cannot list its sessions, so there are none to choose "
                                              "from here.")


async def test_a_restart_reattaches_with_resume(relay: RelayFactory) -> None:
    r = await relay("--sessions")
    await r.ask("text hello")
    sid = r.session_id()
    await r.restart()
    reply = await r.ask("text again")
    assert "again" in reply.text
    assert r.session_id() == sid
    assert "session/resume" in r.methods() and "session/load" not in r.methods()


async def test_a_session_the_agent_forgot_gets_a_new_one_and_a_sentence(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay("--sessions")
    await r.ask("text hello")
    sid = r.session_id()
    await r.restart(state_dir=tmp_path / "empty-agent-state")  # the agent lost its sessions
    reply = await r.ask("text again")
    assert reply.text.startswith("The agent lost the previous session, so a new conversation was started.")
    assert "again" in reply.text
    assert r.session_id() != sid


# -- modes ----------------------------------------------------------------------------------


async def test_mode_buttons_switch_and_a_new_session_keeps_the_choice(relay: RelayFactory) -> None:
    r = await relay("--effort")
    await r.send("/mode")
    block, labels = _choices(r, "Mode")
    assert labels == ("Default", "Plan", "Auto", "Effort: Low", "Effort: Medium", "Effort: High")
    assert block.prompt == "Mode: Default. Choose a mode:"

    assert (await r.press(_token(r, "Plan"))).text == "Switched to Plan."
    assert await _command(r, "/mode Effort: High") == "Switched to Effort: High."
    options = [f["params"] for f in r.frames() if f.get("method") == "session/set_config_option"]
    assert options[-1]["configId"] == "effort" and options[-1]["value"] == "high"

    stored = r.store.get_conversation(KEY)
    assert stored is not None and stored.mode == "plan\neffort=high"  # one choice per mode or option

    await r.send("/new")
    await r.ask("text hello")
    new = r.session_id()
    modes = [f["params"] for f in r.frames() if f.get("method") == "session/set_mode"]
    options = [f["params"] for f in r.frames() if f.get("method") == "session/set_config_option"]
    assert modes[-1] == {"sessionId": new, "modeId": "plan"}
    assert options[-1] == {"sessionId": new, "configId": "effort", "value": "high"}
    assert "Mode: Plan" in await _command(r, "/status")


async def test_a_mode_that_stops_the_agent_asking_is_refused_under_ask(relay: RelayFactory) -> None:
    r = await relay()
    await r.ask("text hello")
    text = await _command(r, "/mode auto")
    assert text.startswith("Auto lets the agent run tools without asking")
    assert "session/set_mode" not in r.methods()
    assert "no mode called 'warp'" in await _command(r, "/mode warp")


async def test_numbered_replies_choose_where_there_are_no_buttons(relay: RelayFactory, tmp_path: Path) -> None:
    r = await relay(projects=_projects(tmp_path), surface=make_surface(can_buttons=False))
    text = await _command(r, "/project")
    assert text.splitlines()[1:] == ["1. app", "2. web", "Reply with a number to choose."]
    assert "Switched to the project web" in await _command(r, "2")
    stored = r.store.get_conversation(KEY)
    assert stored is not None and stored.project == "web"
    reply = await r.ask("2")  # the list is closed: a number is a prompt again
    assert "echo: 2" in reply.text


# -- the agent's own commands, notices, compaction -----------------------------------------


async def test_agent_commands_are_listed_in_help_and_typed_ones_reach_the_agent(relay: RelayFactory) -> None:
    r = await relay("--commands", "create-plan:Make a plan,review:Review the diff")
    await r.ask("text hello")
    help_text = await _command(r, "/help")
    assert "The agent's own commands:" in help_text
    assert "`/create_plan`: Make a plan" in help_text and "`/review`: Review the diff" in help_text
    await r.ask("/create_plan now")
    await r.ask("!review")
    assert r.prompts()[-2:] == ["/create-plan now", "/review"]
    await r.ask("/unknown thing")
    assert r.prompts()[-1] == "/unknown thing"


async def test_notices_and_compaction_are_shown(relay: RelayFactory) -> None:
    r = await relay()
    msg = await r.send("notice warning Rate limited | retrying in 5s\ncompaction c1 in_progress\n"
                       "compaction c1 completed the summary\ntext done")
    await r.idle()
    answer = r.answer(msg)
    assert "\u26a0\ufe0f Rate limited: retrying in 5s" in answer
    assert "The conversation was compacted." in answer
    assert "the summary" not in answer  # shown on request: in the status
    assert "Last compaction kept: the summary" in await _command(r, "/status")


async def test_numbered_pages_of_sessions(relay: RelayFactory) -> None:
    r = await relay("--sessions", "--list-page", "2", surface=make_surface(can_buttons=False))
    for i in range(3):
        await r.ask(f"title Task {i}\ntext {i}")
        await r.send("/new")
    await _opened_ahead(r)  # listed by the agent (first), not by the relay: nothing in it to continue
    listing = (await _command(r, "/sessions")).splitlines()
    assert [line.split(" · ")[0] for line in listing[1:]] == ["1. Task 2", "2. More…",
                                                              "Reply with a number to choose."]
    shown = len(r.messages())
    await r.send("2")
    page = r.messages()[-1].text.splitlines()
    assert len(r.messages()) == shown + 1  # the next page, and nothing else
    assert [line.split(" · ")[0] for line in page[1:]] == ["1. Task 1", "2. Task 0", "Reply with a number to choose."]
    assert (await _command(r, "2")).startswith("Continuing the session \u201cTask 0\u201d")


async def test_a_long_title_is_cut_on_its_button_and_the_age_kept(relay: RelayFactory) -> None:
    r = await relay("--sessions")
    await r.ask("title " + "a very long session title " * 5 + "\ntext one")
    await r.send("/sessions")
    _, labels = _choices(r, "sessions")
    name, age = labels[0].split(" · ")
    assert len(name) == 48 and name.endswith("…") and age == "just now"
    assert len(labels[0]) <= 75  # Slack's limit for a button
