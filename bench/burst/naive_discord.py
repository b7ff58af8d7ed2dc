"""The naive Discord bot: discord.py as its documentation shows it, one call per agent chunk.

A ``discord.Client`` with the message-content intent; ``on_message`` prompts the agent and sends the
first chunk as a message, then edits it with the text so far for every later chunk. discord.py's own
rate-limit handling stays (it is the library's), nothing else paces.

    python -m bench.burst.naive_discord --cwd DIR --api URL --gateway URL   (DISCORD_BOT_TOKEN set)
"""

from __future__ import annotations

import asyncio
import os
import signal

import discord
import yarl
from discord.gateway import DiscordWebSocket
from discord.http import Route

from bench.burst.naive_agent import agent, arguments


async def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--api", required=True)
    parser.add_argument("--gateway", required=True)
    args = parser.parse_args()
    Route.BASE = args.api  # the fake's REST and gateway, as the relay points discord.py at them
    DiscordWebSocket.DEFAULT_GATEWAY = yarl.URL(args.gateway)
    intents = discord.Intents.default()
    intents.message_content = True
    client = discord.Client(intents=intents)
    async with agent(args.cwd) as link:

        @client.event
        async def on_message(message: discord.Message) -> None:
            if message.author == client.user:
                return
            shown, sent = "", None

            async def send(chunk: str) -> None:
                nonlocal shown, sent
                shown += chunk
                if sent is None:
                    sent = await message.channel.send(shown)
                else:
                    await sent.edit(content=shown)

            await link.answer(str(message.channel.id), message.content, send)

        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, lambda: asyncio.ensure_future(client.close()))
        async with client:
            await client.start(os.environ["DISCORD_BOT_TOKEN"])


if __name__ == "__main__":
    asyncio.run(main())
