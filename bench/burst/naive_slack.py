"""The naive Slack bot: slack-bolt as its documentation shows it, one call per agent chunk.

An ``AsyncApp`` on Socket Mode (``AsyncSocketModeHandler``); on ``app_mention`` it prompts the agent,
posts the first chunk in the thread under the mention (``chat.postMessage``) and updates that
message with the text so far for every later chunk (``chat.update``). No pacing, no journal, no
status indicator, no native stream.

    python -m bench.burst.naive_slack --cwd DIR --api URL   (SLACK_BOT_TOKEN and SLACK_APP_TOKEN set)
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from typing import Any

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from bench.burst.naive_agent import agent, arguments


async def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--api", required=True)
    args = parser.parse_args()
    client = AsyncWebClient(token=os.environ["SLACK_BOT_TOKEN"], base_url=args.api)
    app = AsyncApp(client=client)
    async with agent(args.cwd) as link:

        @app.event("app_mention")
        async def on_mention(event: dict[str, Any], client: AsyncWebClient) -> None:
            channel, thread = event["channel"], event.get("thread_ts") or event["ts"]
            shown, sent = "", None

            async def send(chunk: str) -> None:
                nonlocal shown, sent
                shown += chunk
                if sent is None:
                    sent = (await client.chat_postMessage(channel=channel, thread_ts=thread, text=shown))["ts"]
                else:
                    await client.chat_update(channel=channel, ts=sent, text=shown)

            text = re.sub(r"^<@\w+>\s*", "", str(event.get("text") or ""))  # the mention itself is no prompt
            await link.answer(f"{channel}:{thread}", text, send)

        @app.event("message")
        async def on_message() -> None:
            pass  # the mention's twin event: answered once, above

        handler = AsyncSocketModeHandler(app, os.environ["SLACK_APP_TOKEN"])
        await handler.connect_async()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await handler.close_async()


if __name__ == "__main__":
    asyncio.run(main())
