"""An agent's form (``elicitation/create`` in form mode) as fields a chat can ask one at a time.

ACP restricts a form to a flat object whose properties are strings (free text, or one choice of an
``enum`` / ``oneOf``), numbers, integers, booleans, or arrays of choices (several of a list). Anything
else (a nested object, an array of free values) cannot be asked in a chat: ``form_fields`` raises
``Unrenderable`` with the sentence the agent and the person are given. Answers typed in a chat are
read here (``read_answer``) into the value the schema asks for, or refused with a sentence.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "FieldKind",
    "FormField",
    "Invalid",
    "Option",
    "Unrenderable",
    "Value",
    "check_items",
    "form_fields",
    "read_answer",
    "shown",
]

FieldKind = Literal["choice", "boolean", "multi", "text", "number", "integer"]
#: A typed answer, as ACP's ``ElicitationContentValue`` allows.
Value = str | int | float | bool | list[str]

#: A chat shows at most this many choices (Telegram and Slack cap a message's buttons).
MAX_OPTIONS = 20


class Unrenderable(ValueError):
    """The form cannot be asked in a chat; ``str(exc)`` says why, in one sentence."""


class Invalid(ValueError):
    """An answer that does not fit its field; ``str(exc)`` says what would, in one sentence."""


@dataclass(frozen=True, slots=True)
class Option:
    """One choice: the value the agent gets and the words the person reads."""

    value: str
    label: str


@dataclass(frozen=True, slots=True)
class FormField:
    """One property of the form, as the person is asked it."""

    name: str
    title: str
    kind: FieldKind
    required: bool
    description: str = ""
    options: tuple[Option, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    max_length: int | None = None
    pattern: str = ""
    min_items: int | None = None
    max_items: int | None = None


def _options(raw: Any, *, enum: Any = None) -> tuple[Option, ...]:
    if isinstance(raw, list):
        found = tuple(Option(str(o["const"]), str(o.get("title") or o["const"]))
                      for o in raw if isinstance(o, dict) and isinstance(o.get("const"), str))
        if found:
            return found
    if isinstance(enum, list):
        return tuple(Option(v, v) for v in enum if isinstance(v, str))
    return ()


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _field(name: str, prop: dict[str, Any], required: bool) -> FormField:
    kind, title, about = prop.get("type"), str(prop.get("title") or name), str(prop.get("description") or "")

    def make(kind: FieldKind, **extra: Any) -> FormField:
        return FormField(name, title, kind, required, about, **extra)

    if kind == "string":
        options = _options(prop.get("oneOf") or prop.get("anyOf"), enum=prop.get("enum"))
        if options:
            return make("choice", options=options)
        return make("text", min_length=_int(prop.get("minLength")), max_length=_int(prop.get("maxLength")),
                    pattern=str(prop.get("pattern") or ""))
    if kind == "number" or kind == "integer":
        return make(kind, minimum=_num(prop.get("minimum")), maximum=_num(prop.get("maximum")))
    if kind == "boolean":
        return make("boolean")
    items = prop.get("items")
    if kind == "array" and isinstance(items, dict):
        options = _options(items.get("anyOf") or items.get("oneOf"), enum=items.get("enum"))
        if options:
            return make("multi", options=options, min_items=_int(prop.get("minItems")),
                        max_items=_int(prop.get("maxItems")))
    what = "a nested object" if kind == "object" else f"a field of type {kind!r}" if kind else "a field with no type"
    raise Unrenderable(f"The form asks for {what} ({name}), which a chat cannot show; "
                       "ask with a flat form of text, numbers, yes/no and choices instead.")


def form_fields(schema: dict[str, Any]) -> list[FormField]:
    """The fields of ``requestedSchema`` in the order the agent gave them; ``Unrenderable`` when one
    cannot be asked in a chat (or there are too many choices to show)."""
    props = schema.get("properties")
    if schema.get("type", "object") != "object" or not isinstance(props, dict):
        raise Unrenderable("The form is not a flat list of fields, which a chat cannot show.")
    required = {r for r in schema.get("required") or () if isinstance(r, str)}
    fields = [_field(str(name), prop if isinstance(prop, dict) else {}, name in required)
              for name, prop in props.items()]
    for f in fields:
        if len(f.options) > MAX_OPTIONS:
            raise Unrenderable(f"The form offers {len(f.options)} choices for {f.name}; a chat shows at most "
                               f"{MAX_OPTIONS}.")
    return fields


_YES = frozenset({"yes", "y", "true", "1", "on", "ok"})
_NO = frozenset({"no", "n", "false", "2", "off"})


def _numbers(text: str) -> list[int]:
    return [int(n) for n in re.split(r"[\s,;]+", text.strip()) if n]


def _choice(f: FormField, text: str) -> str:
    words = text.strip()
    for i, option in enumerate(f.options, 1):
        if words in (str(i), option.value) or words.lower() == option.label.lower():
            return option.value
    raise Invalid(f"Please answer with one of the numbers 1 to {len(f.options)}.")


def _multi(f: FormField, text: str) -> list[str]:
    try:
        picked = _numbers(text)
    except ValueError:
        raise Invalid("Please answer with the numbers of your choices, separated by commas.") from None
    if any(not 1 <= n <= len(f.options) for n in picked):
        raise Invalid(f"Please answer with numbers from 1 to {len(f.options)}, separated by commas.")
    values = list(dict.fromkeys(f.options[n - 1].value for n in picked))
    check_items(f, values)
    return values


def check_items(f: FormField, values: list[str]) -> None:
    """``Invalid`` when ``values`` chooses fewer or more than the field allows."""
    if f.min_items is not None and len(values) < f.min_items:
        raise Invalid(f"Please choose at least {f.min_items}.")
    if f.max_items is not None and len(values) > f.max_items:
        raise Invalid(f"Please choose at most {f.max_items}.")


def _number(f: FormField, text: str) -> int | float:
    words = text.strip().replace(",", ".") if f.kind == "number" else text.strip()
    try:
        value: int | float = int(words) if f.kind == "integer" else float(words)
    except ValueError:
        noun = "a whole number" if f.kind == "integer" else "a number"
        raise Invalid(f"{words[:40]!r} is not {noun}; please answer with {noun}.") from None
    if not math.isfinite(value):
        raise Invalid("Please answer with a finite number.")
    if f.minimum is not None and value < f.minimum:
        raise Invalid(f"Please answer with a number of at least {f.minimum:g}.")
    if f.maximum is not None and value > f.maximum:
        raise Invalid(f"Please answer with a number of at most {f.maximum:g}.")
    return value


def _text(f: FormField, text: str) -> str:
    if f.min_length is not None and len(text) < f.min_length:
        raise Invalid(f"Please answer with at least {f.min_length} characters.")
    if f.max_length is not None and len(text) > f.max_length:
        raise Invalid(f"Please answer with at most {f.max_length} characters.")
    if f.pattern:
        try:
            fits = re.fullmatch(f.pattern, text) is not None
        except re.error:
            fits = True  # a pattern Python cannot read is the agent's to check
        if not fits:
            raise Invalid(f"That does not have the form the agent asked for ({f.pattern}).")
    return text


def read_answer(f: FormField, text: str) -> Value:
    """The typed value a written answer gives ``f`` (a number for a choice), or ``Invalid``."""
    if f.kind == "choice":
        return _choice(f, text)
    if f.kind == "boolean":
        word = text.strip().lower()
        if word in _YES or word in _NO:
            return word in _YES
        raise Invalid("Please answer yes or no.")
    if f.kind == "multi":
        return _multi(f, text)
    if f.kind in ("number", "integer"):
        return _number(f, text)
    return _text(f, text.strip())


def shown(f: FormField, value: Value) -> str:
    """An answer in the words the person chose it by."""
    labels = {o.value: o.label for o in f.options}
    if isinstance(value, bool):
        return "Yes" if value else "No"
    if isinstance(value, list):
        return ", ".join(labels.get(v, v) for v in value) or "none"
    if isinstance(value, str):
        return labels.get(value, value)
    return f"{value:g}" if isinstance(value, float) else str(value)
