"""Every sentence the Discord surface itself shows (the core's own prose is in ``core.engine.wording``).

These may name Discord's own spellings (``/new``), because only Discord shows them.
"""

from __future__ import annotations

__all__ = [
    "BAD_TOKEN",
    "CHANNEL_NOT_ALLOWED",
    "COMPACT_SENT",
    "NO_THREAD",
    "REFUSAL_HINT",
    "RESTARTING",
    "STOP_DONE",
    "THREAD_FALLBACK_NAME",
    "close_code_text",
    "missed_text",
    "no_token_text",
    "unreadable_answer",
]

#: A slash command in a channel the relay does not serve (an ephemeral answer; the channel sees nothing).
CHANNEL_NOT_ALLOWED = "This bot does not answer in this channel."
#: A slash /compact that went to the agent: its answer streams into the conversation.
COMPACT_SENT = "Sent `/compact` to the agent; its answer follows in this conversation."
#: A slash /stop whose turn ended (its own reply says "Stopped." too).
STOP_DONE = "Stopped."
#: An interaction that arrived while the relay was shutting down.
RESTARTING = "The bot is restarting; please try again in a moment."
#: A mention whose thread could not be opened (Discord refused: permissions).
NO_THREAD = ("I could not open a thread for this message: the bot needs the Create Public Threads and "
             "Send Messages in Threads permissions in this channel.")
#: Added to the refusal card: the same prompt is declined again, so a fresh start is the way on.
REFUSAL_HINT = "Use `/new` to start a new conversation if this one keeps being declined."
#: The name of a thread opened by a mention with no words.
THREAD_FALLBACK_NAME = "Conversation"

BAD_TOKEN = ("Discord refused the bot token in ${env} (surfaces.discord.token_env); copy a fresh token from the "
             "Developer Portal (your application → Bot → Reset Token)")

_CLOSE_CODES = {
    4004: BAD_TOKEN,
    4013: "Discord refused the gateway intents the relay asked for (close code 4013); this version of "
          "acp-relay needs updating",
    4014: "Discord refused the Message Content intent: enable it in the Developer Portal (your application → "
          "Bot → Privileged Gateway Intents → Message Content Intent), then start the relay again",
}


def no_token_text(env: str) -> str:
    """The token variable the config names is not set."""
    return f"${env} is not set (surfaces.discord.token_env names it); put the bot token from the Developer Portal there"


def close_code_text(code: int, env: str) -> str:
    """One sentence for a gateway close code that no reconnect can fix."""
    text = _CLOSE_CODES.get(code, f"Discord closed the gateway connection for good (close code {code}); "
                                  "check the bot's settings in the Developer Portal")
    return text.replace("${env}", f"${env}")


def missed_text(missed: int, answered: int) -> str:
    """Messages were sent here while the relay was offline, more than it answers afterwards."""
    return (f"While the bot was offline, {missed} messages were sent here; only the latest {answered} "
            "are answered now. Send the others again if you still need them.")


def unreadable_answer(server: str, path: str, what: str) -> str:
    """At start: the server answered the login with something discord.py cannot read."""
    return (f"the server at {server} answered {path or 'the login'} with something discord.py cannot read ({what}); "
            "check surfaces.discord.api_base_url")
