"""Every sentence the Telegram surface says itself, in Telegram's own spelling (``/new``).

The core's prose names no surface command; these may, because they are only ever shown on Telegram.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "COMMANDS",
    "COMMAND_MENU",
    "FILE_NOT_FETCHED",
    "IMAGE_NOT_FETCHED",
    "PRESS_ANSWER_LIMIT",
    "invalid_secret",
    "missing_secret",
    "missing_token",
    "missing_webhook_url",
    "press_answer",
    "token_refused",
    "unreachable",
    "unreadable_answer",
    "webhook_bind_failed",
]

#: spelling -> core action. ``/start`` is what Telegram sends when someone first opens the bot:
#: it shows the commands (as in the architecture's table), so a first tap never resets anything.
COMMANDS: Mapping[str, str] = MappingProxyType({
    "/new": "reset", "/compact": "compact", "/stop": "stop", "/status": "status", "/model": "model",
    "/help": "help", "/start": "help", "/sessions": "sessions", "/project": "project", "/agent": "agent",
    "/mode": "mode", "/steer": "steer",
})

#: The command menu registered with ``setMyCommands`` (command, description), in menu order.
COMMAND_MENU: tuple[tuple[str, str], ...] = (
    ("new", "Start a new conversation"),
    ("compact", "Shrink the conversation to fit the context"),
    ("stop", "Stop the answer that is running"),
    ("steer", "Add words to the answer that is running"),
    ("status", "Agent, model, folder, session and queue"),
    ("model", "List the models, or /model <name> to switch"),
    ("sessions", "The agent's sessions here: continue one"),
    ("project", "List the projects, or /project <name> to switch"),
    ("agent", "List the agents, or /agent <name> to switch"),
    ("mode", "List the agent's modes, or /mode <name> to switch"),
    ("help", "Show the commands"),
)

IMAGE_NOT_FETCHED = ("Telegram did not let me fetch the image you sent, so only your text went to the agent. "
                     "Please send the image again.")
FILE_NOT_FETCHED = ("Telegram did not let me fetch the file you sent, so only your text went to the agent. "
                    "Please send the file again.")

#: ``answerCallbackQuery`` shows at most this many characters.
PRESS_ANSWER_LIMIT = 200


def press_answer(text: str) -> str:
    """The core's answer to a button press, cut to what Telegram shows in its toast."""
    text = " ".join(text.split())
    return text if len(text) <= PRESS_ANSWER_LIMIT else text[:PRESS_ANSWER_LIMIT - 1] + "…"


def missing_token(env: str) -> str:
    """Start-up refusal: the token's environment variable is empty."""
    return f"the bot token is missing: set the environment variable {env} (surfaces.telegram.token_env)"


def token_refused(env: str) -> str:
    """Start-up refusal: Telegram said the token is not a bot's."""
    return (f"Telegram refused the bot token in {env}; copy it again from @BotFather "
            "(surfaces.telegram.token_env)")


def missing_webhook_url() -> str:
    """Start-up refusal: webhook mode without the address Telegram should post to."""
    return "webhook mode needs the public HTTPS address Telegram posts to in surfaces.telegram.webhook_url"


def missing_secret(env: str) -> str:
    """Start-up refusal: webhook mode without a secret, so anyone could post updates."""
    return (f"webhook mode needs a secret in the environment variable {env} "
            "(surfaces.telegram.webhook_secret_env): 1-256 letters, digits, _ or -")


def invalid_secret(env: str) -> str:
    """Start-up refusal: the secret has characters Telegram does not allow in it."""
    return (f"the webhook secret in {env} may only hold 1-256 letters, digits, _ or - "
            "(surfaces.telegram.webhook_secret_env)")


def webhook_bind_failed(where: str, reason: str) -> str:
    """Start-up refusal: the webhook's address cannot be served."""
    return (f"cannot serve the Telegram webhook on {where} ({reason}); change surfaces.telegram.webhook_host "
            "or surfaces.telegram.webhook_port")


def unreadable_answer(server: str, method: str, what: str) -> str:
    """At start: the server answered with something python-telegram-bot cannot read."""
    return (f"the Bot API server at {server} answered {method} with something python-telegram-bot cannot read "
            f"({what}); check surfaces.telegram.api_base_url")


def unreachable(server: str, why: str) -> str:
    """The server did not answer (it is retried)."""
    return f"the Bot API server at {server} could not be reached ({why})"
