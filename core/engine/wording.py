"""Every sentence the engine shows a person, in one place (error prose lives in ``core.failures``).

Rule from the spec: prose names no surface-specific command. It may name ``/compact`` because
every surface understands it; a reset is described in words ("start a new conversation"). The
help text is the exception: it is built from the surface's own spelling map.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from core.acp.types import RefusalInfo
from core.engine.messages import ConversationStatus
from core.engine.router import command_word
from core.failures import person_text

__all__ = [
    "AGENT_RETRY_GAVE_UP",
    "ALLOW_ONCE_LABEL",
    "APPROVAL_EXPIRED",
    "CHOOSE_BY_NUMBER",
    "COMPACTED",
    "DENY_LABEL",
    "EMPTY_ANSWER",
    "FOOTER_GLYPH",
    "INTERRUPTED_RESUMING",
    "LEAVE_LABEL",
    "LEFT_AS_IT_IS",
    "MERGED_ABOVE",
    "NEW_CONVERSATION",
    "NOTHING_TO_SEND",
    "NOTHING_TO_STOP",
    "OWNER_FAILED",
    "OWNER_SILENT",
    "PARTIAL_NOTE",
    "PRESS_EXPIRED",
    "REFUSAL_LEAD",
    "RESEND_LABEL",
    "RESEND_NUMBERED_HINT",
    "RESENT",
    "RETRY_SUCCEEDED",
    "SESSION_LOST",
    "SESSION_NOT_RESUMABLE",
    "STOPPED",
    "STOPPING",
    "STOP_LABEL",
    "TOOL_DENIED",
    "TOOL_GLYPHS",
    "UNADDRESSABLE_NOTE",
    "agent_retrying",
    "agent_silent",
    "allow_session_label",
    "answer_cut_text",
    "answer_rest_caption",
    "answer_rest_dropped_text",
    "approval_numbered_hint",
    "approval_outcome_text",
    "approval_prompt_text",
    "compaction_status_text",
    "delivery_failure_text",
    "footer_text",
    "forwarded_text",
    "help_text",
    "model_switched_text",
    "models_text",
    "plan_line",
    "plan_words",
    "queue_full_text",
    "queued_text",
    "rate_limit_text",
    "refusal_card_lines",
    "refusal_card_text",
    "refusal_fields",
    "resend_question_text",
    "retry_gave_up",
    "retrying",
    "status_text",
    "tool_status_line",
    "unauthorised_text",
]

REFUSAL_LEAD = "The model declined to answer this request."
STOPPED = "Stopped."
#: A Stop press answered while the agent has not ended the turn yet (the answer says "Stopped." once it has).
STOPPING = "Stopping…"
#: The button under an answer while it is written (``Capabilities.stop_button``).
STOP_LABEL = "Stop"
NOTHING_TO_STOP = "Nothing is running, so there is nothing to stop."
RETRY_SUCCEEDED = "Retried successfully."
SESSION_LOST = (
    "The agent lost the previous session, so a new conversation was started. "
    "It does not remember the earlier messages."
)
SESSION_NOT_RESUMABLE = (
    "This agent cannot resume a session after a restart, so a new conversation was started. "
    "It does not remember the earlier messages."
)
NEW_CONVERSATION = "Started a new conversation. The agent will not remember the earlier messages."
COMPACTED = "The conversation was compacted."
#: Under a numbered list of choices on a surface without buttons.
CHOOSE_BY_NUMBER = "Reply with a number to choose."
PARTIAL_NOTE = "This answer is incomplete: the turn ended before the agent finished."
EMPTY_ANSWER = "The agent finished without writing a reply."
#: A message with no words and nothing attached: the agent is not asked.
NOTHING_TO_SEND = "That message had nothing in it the agent could read, so it was not sent."
#: Left in a message that an answer no longer needs (the surface cannot delete it).
MERGED_ABOVE = "(continued in the message above)"
#: Posted below a message the platform showed without telling us its id (its answer could not be
#: read): it cannot be updated, so the reply goes on in full below this line, never unmarked.
UNADDRESSABLE_NOTE = ("(The chat platform's answer to the message above could not be read, so it cannot be "
                      "updated: the reply continues in full below.)")

ALLOW_ONCE_LABEL = "Allow once"
DENY_LABEL = "Deny"
#: Longest "allow for this session" label: inside every platform's button (Slack 75, Discord 80
#: characters) and short enough to read on a phone.
LABEL_MAX = 64
APPROVAL_EXPIRED = "This approval request has expired; the tap was not applied."
#: Answers a press on a button that no longer does anything (used, replaced, or from before a restart).
PRESS_EXPIRED = "This button has expired, so the tap changed nothing."
#: Relays sharing a store: the relay running the conversation did not take a control, or failed in it.
OWNER_SILENT = "The relay running this conversation did not answer in time; try again in a moment."
OWNER_FAILED = "The relay running this conversation could not do that; try again in a moment."


def allow_session_label(scope: str) -> str:
    """The "allow for this session" button, saying before the click what it covers: ``scope`` is the
    command (or the path, URL or title) the choice will allow again, cut to fit a button."""
    room = LABEL_MAX - len("Allow `` for this session")
    shown = scope if len(scope) <= room else scope[:room - 1] + "…"
    return f"Allow `{shown}` for this session"


def approval_numbered_hint(scope: str) -> str:
    """For surfaces without buttons; the words are parsed by ``router.parse_approval_reply``."""
    if not scope:
        return "Reply `approve 1` to allow once, or `deny`."
    return (f"Reply `approve 1` to allow once, `approve 2` to allow `{scope}` for the rest of this session, "
            "or `deny`.")

#: Keys are the permission option kinds (allow_once, allow_always, reject_once, reject_always)
#: plus what can happen without a decision.
_OUTCOMES: dict[str, str] = {
    "allow_once": "Allowed once",
    "allow_always": "Allowed for this session",
    "reject_once": "Denied",
    "reject_always": "Denied",
    "expired": "Expired",
    "timed_out": "No answer in time, so it was denied",
    "cancelled": "Cancelled because the answer was stopped",
}


_TOOL_GLYPHS: dict[str, tuple[str, str]] = {
    "pending": ("⏳", "pending"),
    "in_progress": ("🔄", "running"),
    "completed": ("✅", "done"),
    "failed": ("❌", "failed"),
    "denied": ("🚫", "denied"),
    "cancelled": ("⏹", "cancelled"),
}
#: The glyph opening a tool line, by status: a surface whose readers may lack an emoji font (the
#: dashboard) recognises the line by it and draws its own icon instead.
TOOL_GLYPHS: Mapping[str, str] = MappingProxyType({status: glyph for status, (glyph, _) in _TOOL_GLYPHS.items()})
#: The glyph opening the footer (``footer_text``), for the same reason.
FOOTER_GLYPH = "⏱"

_ACTIONS: tuple[tuple[str, str], ...] = (
    ("reset", "start a new conversation (the agent forgets this one)"),
    ("compact", "shrink the conversation so it fits the model's context"),
    ("stop", "stop the answer that is running (and drop the messages waiting in line)"),
    ("steer", "add words to the answer that is running (where the agent can take them)"),
    ("status", "show agent, project, model, folder, session, context, cost and queue"),
    ("model", "list the models, or switch to one"),
    ("sessions", "list the agent's sessions in this folder, and continue one here"),
    ("project", "list the projects, or switch to one (a new session in its folder)"),
    ("agent", "list the agents, or switch to one (a new session)"),
    ("mode", "list the agent's modes and options, or switch to one"),
    ("help", "show this list"),
)


def refusal_fields(info: RefusalInfo, streamed: str = "") -> tuple[str, str, str]:
    """What the refusal card shows of ``info``: (category, why, suggested model), "" where not said.

    The provider's words pass the same filter as all prose (no command but ``/compact``, no
    secret), whoever built ``info``; the suggested model is a bare model id and shown as it is.
    Kiro streams its explanation as ordinary text too: when ``streamed`` (the turn's text) already
    says it, the Why is left out, so the same sentence is never shown twice.
    """
    why = person_text(info.explanation)
    said = _squash(why)
    if said and (said in _squash(streamed) or said in _squash(person_text(streamed))):
        why = ""
    return person_text(info.category).strip(), why.strip(), info.recommended_model.strip()


def refusal_card_lines(category: str, why: str, model: str) -> list[str]:
    """The refusal card's lines: the lead line, then one line per non-empty field (nothing is guessed)."""
    lines = [REFUSAL_LEAD]
    for label, value in (("Category", category), ("Why", why), ("Suggested model", model)):
        if value:
            lines.append(f"{label}: {value}")
    return lines


def refusal_card_text(info: RefusalInfo, streamed: str = "") -> str:
    """The refusal card as text (``refusal_fields``, ``refusal_card_lines``)."""
    return "\n".join(refusal_card_lines(*refusal_fields(info, streamed)))


def queued_text(position: int) -> str:
    """A message arrived while a turn runs; it waits in line at ``position`` (1 = next)."""
    return f"Queued (position {position}): this message will be answered when the current one is done."


def queue_full_text(bound: int) -> str:
    """The conversation's queue already holds ``bound`` messages."""
    return (f"The queue is full ({bound} messages are waiting), so this message was not queued. "
            "Please send it again once the current answer is done.")


def retrying(attempt: int, total: int) -> str:
    """A transient failure is being retried."""
    return f"Retrying (attempt {attempt} of {total})…"


def retry_gave_up(attempts: int) -> str:
    """The retry ladder is exhausted."""
    return f"Gave up after {attempts} attempts."


def _so_far(elapsed_s: float) -> str:
    minutes = int(elapsed_s // 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''} so far" if minutes else f"{int(elapsed_s)} seconds so far"


def agent_retrying(elapsed_s: float) -> str:
    """The agent said its model call failed and it is retrying it itself; corrected in place."""
    lead = "The model provider is failing requests (rate limit or overload); the agent is retrying"
    return f"{lead} (still retrying, {_so_far(elapsed_s)})…" if elapsed_s >= 60 else f"{lead}…"


def agent_silent(elapsed_s: float) -> str:
    """An agent known to retry failed model calls in silence has said nothing for a while."""
    return ("No answer from the model provider yet; the agent may be retrying a rate-limited or overloaded "
            f"request ({_so_far(elapsed_s)})…")


#: The agent retried by itself and the turn failed all the same (the prose below says why).
AGENT_RETRY_GAVE_UP = "The agent retried the request by itself, without success."
#: A tool call was denied and the agent wrote nothing after it.
TOOL_DENIED = "The tool call was denied, so the agent stopped without answering."


def unauthorised_text(user_id: str) -> str:
    """The person is not on this surface's allow-list; tell them the id an operator needs."""
    return (f"You are not allowed to use this bot. Your user id is {user_id}; "
            "an operator can add it to the allow-list.")


def approval_prompt_text(title: str, kind: str = "", details: str = "") -> str:
    """Ask the person whether the agent may run a tool."""
    what = " ".join(title.split()) or "a tool"
    head = f"The agent wants to run: {what}" + (f" ({kind})" if kind else "")
    parts = [head]
    if details.strip():
        parts.append(details.strip())
    parts.append("Allow it?")
    return "\n".join(parts)


def approval_outcome_text(outcome: str, title: str = "", kind: str = "", scope: str = "") -> str:
    """The line added to the approval prompt once it is decided, expired, timed out or cancelled.

    ``outcome`` is the chosen option kind (``allow_once``, ``allow_always``, ``reject_once``...)
    or ``expired`` / ``timed_out`` / ``cancelled``. "Allow for this session" covers the same ``scope``
    only (the same command; for other kinds the same path or target), as its button said.
    """
    text = _OUTCOMES.get(outcome, outcome.replace("_", " ").capitalize() or "Closed")
    what = " ".join(title.split())
    line = f"{text}: {what}" if what else f"{text}."
    if outcome == "allow_always" and scope:
        # ACP's catch-all kind "other" names no kind a person would recognise.
        same = ("the same command" if kind == "execute" else "the same call" if kind in ("", "other")
                else f"the same {kind} of `{scope}`")
        line += f" ({same} runs again without asking; anything else is asked first)"
    return line


def status_text(status: ConversationStatus) -> str:
    """The answer to the status command."""
    lines = [f"Agent: {status.agent or 'none'}"]
    if status.project:
        lines.append(f"Project: {status.project}")
    lines += [f"Model: {status.model_name or status.model or 'default'}", f"Folder: {status.cwd or 'default'}",
              f"Session: {status.session_id or 'none yet'}"]
    if status.title:
        lines.append(f"Title: {status.title}")
    if status.mode:
        lines.append(f"Mode: {status.mode}")
    if status.context_pct is not None:
        lines.append(f"Context used: {round(status.context_pct)}%")
    if status.cost:
        lines.append(f"Cost so far: {status.cost}")
    if status.compaction_summary:
        lines.append(f"Last compaction kept: {' '.join(status.compaction_summary.split())}")
    state = "answering" if status.busy else "idle"
    lines.append(f"State: {state}, {status.queue_length} queued")
    if status.relay is not None:
        lines.append(f"Relay: {status.relay}")
    return "\n".join(lines)


def model_switched_text(name: str) -> str:
    """The model command switched the model."""
    return f"Model switched to {name}."


def models_text(current: str | None, models: tuple[str, ...]) -> str:
    """The model command without a name: the current model and what can be chosen."""
    lines = [f"Current model: {current or 'default'}"]
    if models:
        lines.append("Available: " + ", ".join(models))
    else:
        lines.append("This agent does not offer a choice of model.")
    return "\n".join(lines)


def compaction_status_text(status: str) -> str:
    """One status line for a compaction update (started, completed, failed, or anything else)."""
    s = status.strip().lower()
    if s in ("started", "start", "in_progress", "running", "compacting"):
        return "Compacting the conversation…"
    if s in ("completed", "complete", "done", "success", "succeeded", "finished"):
        return COMPACTED
    if s in ("failed", "error", "failure"):
        return "Compacting the conversation failed."
    return f"Compaction: {status.strip()}"


def rate_limit_text(message: str) -> str:
    """The agent reported that its provider is rate limiting."""
    message = message.strip()
    return message or "The model provider is rate limiting; the agent is waiting before it continues."


def delivery_failure_text() -> str:
    """The agent answered but the chat platform would not take the reply (not a model failure)."""
    return ("The agent answered, but this chat would not accept the reply, so it could not be shown. "
            "The answer was kept and will be sent again as soon as this chat accepts it.")


def delivery_lost_text() -> str:
    """The chat would not take the reply, and the relay's store could not keep it for later either."""
    return ("The agent answered, but this chat would not accept the reply, and the relay could not keep it "
            "to send later (its store could not be written), so this answer is lost. Send your message "
            "again later.")


def tool_status_line(title: str, kind: str, status: str) -> str:
    """One line per tool call: glyph, title, kind and status, e.g. ``✅ Read a.py (read): done``."""
    glyph, word = _TOOL_GLYPHS.get(status, ("•", status or "pending"))
    name = " ".join(title.split())[:200] or kind or "tool call"
    suffix = f" ({kind})" if kind and name != kind else ""
    return f"{glyph} {name}{suffix}: {word}"


def plan_words(content: str, status: str) -> str:
    """The words of one plan entry; the entry being worked on is marked."""
    text = " ".join(content.split())
    return f"{text} (in progress)" if status == "in_progress" else text


def plan_line(content: str, status: str) -> str:
    """One checklist line of the agent's plan (``plan_words`` in a Markdown task list)."""
    return f"- [{'x' if status == 'completed' else ' '}] {plan_words(content, status)}"


def footer_text(elapsed_s: float, context_pct: float | None, cost: str = "") -> str:
    """``⏱ 12.3s · context 45% · 0.03 USD``; the context and cost parts only when the agent reported them."""
    if elapsed_s < 60:
        took = f"{elapsed_s:.1f}s"
    else:
        minutes, seconds = divmod(round(elapsed_s), 60)
        took = f"{minutes}m {seconds:02d}s"
    parts = [f"{FOOTER_GLYPH} {took}"]
    if context_pct is not None:
        parts.append(f"context {round(context_pct)}%")
    if cost:
        parts.append(cost)
    return " · ".join(parts)


def help_text(commands: Mapping[str, str], agent_commands: Sequence[tuple[str, str]] = ()) -> str:
    """The command list in this surface's own spelling (``commands`` maps spelling -> action), then the
    agent's own commands (name, description), typed with the prefix of this surface's help command."""
    spellings: dict[str, list[str]] = {}
    for spelling, action in commands.items():
        spellings.setdefault(action, []).append(spelling)
    known = dict(_ACTIONS)
    order = [a for a, _ in _ACTIONS if a in spellings] + sorted(a for a in spellings if a not in known)
    lines = ["Commands:"]
    for action in order:
        names = " or ".join(f"`{s}`" for s in spellings[action])
        lines.append(f"{names}: {known.get(action, action)}")
    if agent_commands:
        helps = {s[:1] for s, a in commands.items() if a == "help"}
        prefix = "!" if "!" in helps else "/"  # the typed alias where there is one (a slash is the platform's)
        lines.append("The agent's own commands:")
        lines += [f"`{prefix}{command_word(name)}`" + (f": {' '.join(desc.split())}" if desc.strip() else "")
                  for name, desc in agent_commands]
    lines.append("Anything else you write goes to the agent.")
    return "\n".join(lines)

STOP_UNCONFIRMED = (
    "The agent did not confirm the stop in time, so that session was set aside: your next message starts "
    "a new conversation, and the agent will not remember the earlier messages."
)
INTERRUPTED_BY_RESTART = "The relay restarted before this answer was finished."
#: Ends a reply (a native stream) the relay could not continue in place after a restart.
INTERRUPTED_RESUMING = "Interrupted by a restart; the full answer follows."
RESEND_LABEL = "Send it again"


def _size(n: int) -> str:
    return f"{n / 1024 / 1024:.1f} MB" if n >= 1024 * 1024 else f"{max(1, round(n / 1024))} KB"


def answer_cut_text(max_bytes: int) -> str:
    """Ends an answer longer than ``engine.max_answer_bytes``."""
    return f"The answer is longer than {_size(max_bytes)}, so it is cut here."


def answer_rest_caption(size: int) -> str:
    """Goes with the file holding the rest of a cut answer."""
    return f"The rest of the answer ({_size(size)})."


def answer_rest_dropped_text(size: int) -> str:
    """Said where the rest of a cut answer cannot be posted as a file."""
    return f"The rest of the answer ({_size(size)}) was left out: files cannot be posted here."
LEAVE_LABEL = "Leave it"
#: For surfaces without buttons; the words are parsed by ``resend.parse_resend_reply``.
RESEND_NUMBERED_HINT = "Reply `1` to send it again, or `2` to leave it."
RESENT = "Sent again."
LEFT_AS_IT_IS = "Left as it is: it was not sent again."


def resend_question_text(tools: Sequence[tuple[str, str]]) -> str:
    """After a restart: a message's turn had run tools that may have changed something; send it again?"""
    if not tools:
        ran = "after a tool had already run"
        again = "That tool could run a second time."
    else:
        lines = "\n".join(f"- {' '.join(title.split()) or 'a tool'}" + (f" ({kind})" if kind else "")
                          for title, kind in tools)
        ran = f"after {'this tool' if len(tools) == 1 else 'these tools'} had already run:\n{lines}\n"
        again = f"{'It' if len(tools) == 1 else 'They'} could run a second time."
    return (f"The relay restarted while your message was being answered, {ran}\n"
            f"Send your message to the agent again? {again}")
APPROVAL_NOT_SHOWN = "The approval request could not be shown here, so that tool call was cancelled."
SESSION_SET_ASIDE = (
    "The agent never finished the previous turn, so a new conversation was started. "
    "It does not remember the earlier messages."
)
IMAGES_NOT_SUPPORTED = "This agent does not accept images, so only the text of your message was sent."


def attached_file_text(name: str) -> str:
    """The line above a file's content in the prompt (the agent reads it)."""
    return f"Attached file: {name}"


def files_not_sent_text(names: list[str], max_kb: int) -> str:
    """Files that came with the message but were not sent to the agent (not text, or too large)."""
    listed = ", ".join(f"\"{name}\"" for name in names)
    return (f"Not sent to the agent: {listed}. It gets text files of up to {max_kb} KB, and images; "
            "paste what it should read from the others.")


def agent_gone_text(old: str, new: str) -> str:
    """The conversation's agent was removed from the config; it continues on another one."""
    return (f"The agent this conversation used ({old}) is no longer configured, so it continues with {new} "
            "in a new conversation; it does not remember the earlier messages.")


def _squash(text: str) -> str:
    return " ".join(text.split())


def forwarded_text(words: str) -> str:
    """A message a person forwarded (someone else's words), as the agent reads it."""
    return f"Forwarded message:\n{words}"
