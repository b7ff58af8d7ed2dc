"""The naive Telegram bot: python-telegram-bot as its documentation shows it, one call per agent chunk.

An ``Application`` polling ``getUpdates`` (``concurrent_updates``, so one slow answer does not hold the
others), a text handler that prompts the agent and sends the first chunk with ``sendMessage`` and
every later one with ``editMessageText`` (the text so far). No pacing, no journal, no drafts.

    python -m bench.burst.naive_telegram --cwd DIR --api URL   (TELEGRAM_BOT_TOKEN in the environment)
"""

from __future__ import annotations

import asyncio
import os
import signal

from telegram import Update
from telegram.ext import Application, ContextTypes, MessageHandler, filters

from bench.burst.naive_agent import Agent, agent, arguments


def build(token: str, api: str, link: Agent) -> Application:  # type: ignore[type-arg]
    async def on_text(update: Update, context: ContextTypes.DEFAULT_TYPE) -> None:
        message = update.effective_message
        assert message is not None and message.text is not None
        shown, sent = "", None

        async def send(chunk: str) -> None:
            nonlocal shown, sent
            shown += chunk
            if sent is None:
                sent = await message.reply_text(shown, do_quote=False)
            else:
                await sent.edit_text(shown)

        await link.answer(str(message.chat_id), message.text, send)

    app = (Application.builder().token(token).base_url(f"{api}/bot").base_file_url(f"{api}/file/bot")
           .concurrent_updates(True).build())
    app.add_handler(MessageHandler(filters.TEXT, on_text))
    return app


async def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--api", required=True)
    args = parser.parse_args()
    async with agent(args.cwd) as link:
        app = build(os.environ["TELEGRAM_BOT_TOKEN"], args.api, link)
        async with app:
            await app.start()
            assert app.updater is not None
            await app.updater.start_polling(timeout=1, poll_interval=0)
            stop = asyncio.Event()
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
            await stop.wait()
            await app.updater.stop()
            await app.stop()


if __name__ == "__main__":
    asyncio.run(main())
