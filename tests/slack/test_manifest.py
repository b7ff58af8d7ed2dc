"""slack-manifest.json creates an app that can do everything the surface asks of Slack, in one paste."""

from __future__ import annotations

import json
from pathlib import Path

from surfaces.slack.surface import COMMANDS

MANIFEST = json.loads((Path(__file__).resolve().parents[2] / "slack-manifest.json").read_text())


def test_the_manifest_subscribes_to_every_event_the_listeners_read() -> None:
    events = set(MANIFEST["settings"]["event_subscriptions"]["bot_events"])
    assert events == {"app_mention", "message.channels", "message.groups", "message.im", "message.mpim"}


def test_the_manifest_grants_the_scopes_of_every_method_the_surface_calls() -> None:
    scopes = set(MANIFEST["oauth_config"]["scopes"]["bot"])
    # chat.postMessage/update/delete/postEphemeral/startStream: chat:write; reactions.add/remove;
    # assistant.threads.setStatus; /compact; reading mentions, channel, group, DM and group-DM messages;
    # files.getUploadURLExternal/completeUploadExternal (an answer's file): files:write; downloading a
    # file a person shared, and files.info: files:read.
    assert scopes >= {"chat:write", "reactions:write", "assistant:write", "commands", "app_mentions:read",
                      "channels:history", "groups:history", "im:history", "mpim:history", "files:read",
                      "files:write"}


def test_socket_mode_interactivity_and_the_compact_command_are_on() -> None:
    settings = MANIFEST["settings"]
    assert settings["socket_mode_enabled"] is True and settings["interactivity"]["is_enabled"] is True
    [command] = MANIFEST["features"]["slash_commands"]
    assert command["command"] == "/compact" and COMMANDS["/compact"] == "compact"
    assert MANIFEST["features"]["app_home"]["messages_tab_enabled"] is True  # people can DM the app
