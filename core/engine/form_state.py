"""One open form (or link to open) and the registry of open ones, by button token and by conversation.

A form is asked one field at a time, in the agent's order: a choice or yes/no as buttons, a multiple
choice as toggles with Done, words and numbers by replying; Decline and Cancel always. Its buttons'
tokens are minted per field (a toggle keeps its token while the label changes); once the form moves
on, or ends, they expire. Where the surface has no buttons the same choices are numbered and the
person replies with the number (``decline``, ``cancel``, ``skip`` and ``done`` as words).
"""

from __future__ import annotations

import asyncio
import secrets
from typing import Any, Literal

from core.acp.exchange import ElicitationRequest
from core.engine import twoway_wording as say
from core.engine.blocks import FormCard
from core.engine.forms import FormField, Invalid, Value, check_items, read_answer, shown
from core.engine.messages import Button

__all__ = ["Forms", "OpenForm"]

Action = Literal["pick", "toggle", "done", "skip", "decline", "cancel"]
_WORDS: dict[str, Action] = {"decline": "decline", "cancel": "cancel", "skip": "skip", "done": "done"}


class OpenForm:
    """The state of one question to the person; ``result`` receives the ACP answer."""

    def __init__(self, key: str, request: ElicitationRequest, fields: list[FormField], *, can_buttons: bool) -> None:
        self.key = key
        self.request = request
        self.fields = fields
        self.can_buttons = can_buttons
        self.index = 0
        self.answers: dict[str, Value] = {}
        self.selected: list[str] = []  # the toggles of a multiple choice, in the order of its options
        self.tokens: dict[str, tuple[Action, str]] = {}
        self.result: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.changed = asyncio.Event()
        self.message_id = ""
        self._mint()

    @property
    def current(self) -> FormField | None:
        """The field asked now (None: a link to open, or every field is answered)."""
        return self.fields[self.index] if self.index < len(self.fields) else None

    def _mint(self) -> None:
        self.tokens = {}
        f = self.current
        for option in f.options if f is not None and f.kind in ("choice", "multi") else ():
            self.tokens[secrets.token_urlsafe(12)] = ("toggle" if f is not None and f.kind == "multi" else "pick",
                                                      option.value)
        if f is not None and f.kind == "boolean":
            self.tokens[secrets.token_urlsafe(12)] = ("pick", "yes")
            self.tokens[secrets.token_urlsafe(12)] = ("pick", "no")
        if f is None or f.kind == "multi":
            self.tokens[secrets.token_urlsafe(12)] = ("done", "")
        if f is not None and not f.required:
            self.tokens[secrets.token_urlsafe(12)] = ("skip", "")
        self.tokens[secrets.token_urlsafe(12)] = ("decline", "")
        self.tokens[secrets.token_urlsafe(12)] = ("cancel", "")

    def buttons(self) -> tuple[Button, ...]:
        """The current field's buttons (none where the surface has none, or once settled)."""
        if not self.can_buttons or self.result.done():
            return ()
        f = self.current
        labels = {o.value: o.label for o in f.options} if f is not None else {}
        out: list[Button] = []
        for token, (action, value) in self.tokens.items():
            if action == "pick":
                label = labels.get(value) or (say.YES_LABEL if value == "yes" else say.NO_LABEL)
                out.append(Button(label, token, "primary"))
            elif action == "toggle":
                out.append(Button(("☑ " if value in self.selected else "☐ ") + labels.get(value, value), token))
            else:
                label = {"done": say.DONE_LABEL, "skip": say.SKIP_LABEL, "decline": say.DECLINE_LABEL,
                         "cancel": say.CANCEL_LABEL}[action]
                out.append(Button(label, token, "danger" if action == "decline" else
                                  "primary" if action == "done" else "default"))
        return tuple(out)

    def card(self, outcome: str = "") -> FormCard:
        """The card as it stands (``outcome``: the line of a settled card)."""
        by_name = {f.name: f for f in self.fields}
        answers = tuple((by_name[n].title, shown(by_name[n], v)) for n, v in self.answers.items())
        message, url = self.request.message, self.request.url
        if outcome:
            return FormCard(message, answers, url=url, outcome=say.form_outcome(outcome), settled=outcome)
        f = self.current
        if f is None:  # a link to open
            hint = say.URL_HINT if self.can_buttons else f"{say.URL_HINT} {say.URL_NUMBERED_HINT}"
            return FormCard(message, answers, url=url, hint=hint)
        question = f.title + (f" ({f.description})" if f.description and f.description != f.title else "")
        if f.kind == "multi" and self.selected:
            question += " · " + shown(f, self.selected)
        buttoned = f.kind in ("choice", "multi", "boolean")
        choices: tuple[str, ...] = ()
        if not self.can_buttons and buttoned:
            choices = (say.YES_LABEL, say.NO_LABEL) if f.kind == "boolean" else tuple(o.label for o in f.options)
        if not self.can_buttons:
            hint = say.form_numbered_hint(f.kind, len(choices), not f.required)
        else:
            hint = "" if buttoned else say.FORM_ANSWER_BY_REPLY
        return FormCard(message, answers, question, choices, hint, reply_wanted=not buttoned)

    # -- the person's answers ------------------------------------------------------------------

    def press(self, token: str) -> str | None:
        """A button press; the sentence to answer it with, or None for a token this form does not know."""
        if token not in self.tokens or self.result.done():
            return None
        action, value = self.tokens[token]
        return self._act(action, value)

    def reply(self, text: str) -> str | None:
        """A written answer; None when it was taken, else the sentence asking again."""
        words = text.strip()
        action = _WORDS.get(words.lower())
        f = self.current
        try:
            if action is not None and (action != "skip" or (f is not None and not f.required)):
                self._act(action, "")
                return None
            if f is None:
                return say.URL_NUMBERED_HINT
            value = read_answer(f, words)
        except Invalid as exc:
            return str(exc)
        if not words and f.required:
            return "Please answer; this question cannot be left empty."
        self._take(value)
        return None

    def _act(self, action: Action, value: str) -> str:
        f = self.current
        if action in ("decline", "cancel"):
            self._finish({"action": action})
            return say.form_press_text(action)
        if action == "skip" and f is not None:
            self._advance()
            return say.SKIP_LABEL + "."
        if action == "toggle":
            self.selected = [o.value for o in f.options if (o.value == value) != (o.value in self.selected)] \
                if f is not None else []
            self.changed.set()
            return shown(f, self.selected) if f is not None else ""
        if action == "done" and f is not None:
            check_items(f, self.selected)
            self._take(list(self.selected))
            return say.form_press_text("accept") if self.result.done() else "Noted."
        if action == "done":
            self._finish({"action": "accept"})
            return say.form_press_text("accept")
        if f is not None:
            self._take(value == "yes" if f.kind == "boolean" else value)
        return say.form_press_text("accept") if self.result.done() else "Noted."

    def _take(self, value: Value) -> None:
        f = self.current
        if f is not None:
            self.answers[f.name] = value
        self._advance()

    def _advance(self) -> None:
        self.index += 1
        self.selected = []
        if self.current is None:
            self._finish({"action": "accept", "content": dict(self.answers)})
            return
        self._mint()
        self.changed.set()

    def finish(self, answer: dict[str, Any]) -> None:
        """Settle the form with ``answer`` from outside a press (the agent said it is done)."""
        self._finish(answer)

    def _finish(self, answer: dict[str, Any]) -> None:
        if not self.result.done():
            self.result.set_result(answer)
        self.changed.set()


class Forms:
    """The open forms: at most one per conversation (the agent waits on it), found by token too."""

    def __init__(self) -> None:
        self._by_key: dict[str, OpenForm] = {}

    def open(self, form: OpenForm) -> None:
        """``form`` is asked now in its conversation."""
        self._by_key[form.key] = form

    def close(self, form: OpenForm) -> None:
        """Its buttons and replies no longer answer it."""
        if self._by_key.get(form.key) is form:
            del self._by_key[form.key]

    def open_in(self, key: str) -> OpenForm | None:
        """The form waiting in ``key`` (a message there answers it)."""
        form = self._by_key.get(key)
        return form if form is not None and not form.result.done() else None

    def press(self, key: str, token: str) -> str | None:
        """A press on a form's button in ``key``; None when no open form there knows the token."""
        form = self.open_in(key)
        if form is None:
            return None
        try:
            return form.press(token)
        except Invalid as exc:  # Done with fewer or more choices than the field allows
            return str(exc)
