"""The naive dashboard: an aiohttp server with the relay dashboard's routes, one event per agent chunk.

``POST /api/conversations/<tab>/messages`` prompts the agent (answered 202 at once);
``GET .../events`` is the tab's server-sent event stream: a snapshot first, then a ``message`` event
with the text so far for every chunk. The access token is checked, nothing is kept (no transcript,
no journal), nothing is paced. It listens with the relay's backlog (``LISTEN_BACKLOG``): with
aiohttp's default of 128 a burst of 1,000 tabs loses the handshakes past it for a second, the
yardstick as much as the relay.

    python -m bench.burst.naive_dashboard --cwd DIR --port N   (ACP_RELAY_DASHBOARD_TOKEN set)
"""

from __future__ import annotations

import asyncio
import hmac
import json
import os
import signal
from typing import Any

from aiohttp import web

from bench.burst.naive_agent import Agent, agent, arguments
from core.surface_api import LISTEN_BACKLOG

Event = dict[str, Any]


def build(link: Agent, token: str) -> web.Application:
    tabs: dict[str, set[asyncio.Queue[Event]]] = {}
    tasks: set[asyncio.Task[None]] = set()

    def publish(tab: str, event: Event) -> None:
        for queue in tabs.get(tab, ()):
            queue.put_nowait(event)

    @web.middleware
    async def authorised(request: web.Request, handler: Any) -> web.StreamResponse:
        given = request.headers.get("Authorization", "").removeprefix("Bearer ")
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.json_response({"error": "wrong token"}, status=401)
        return await handler(request)

    async def events(request: web.Request) -> web.StreamResponse:
        tab = request.match_info["tab"]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        queue: asyncio.Queue[Event] = asyncio.Queue()
        tabs.setdefault(tab, set()).add(queue)
        try:
            await response.write(b'data: {"type": "snapshot", "messages": []}\n\n')
            while True:
                await response.write(f"data: {json.dumps(await queue.get())}\n\n".encode())
        finally:
            tabs[tab].discard(queue)
        return response

    async def message(request: web.Request) -> web.StreamResponse:
        tab, body = request.match_info["tab"], await request.json()
        shown, mid = "", f"a-{body.get('id')}"

        async def send(chunk: str) -> None:
            nonlocal shown
            shown += chunk
            publish(tab, {"type": "message", "id": mid, "role": "agent", "text": shown})

        task = asyncio.create_task(link.answer(tab, str(body["text"]), send))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return web.json_response({"id": body.get("id")}, status=202)

    app = web.Application(middlewares=[authorised])
    app.router.add_get("/api/conversations/{tab}/events", events)
    app.router.add_post("/api/conversations/{tab}/messages", message)
    return app


async def main() -> None:
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    async with agent(args.cwd) as link:
        runner = web.AppRunner(build(link, os.environ["ACP_RELAY_DASHBOARD_TOKEN"]), access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", args.port, backlog=LISTEN_BACKLOG).start()
        stop = asyncio.Event()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
        await stop.wait()
        await runner.cleanup()


if __name__ == "__main__":
    asyncio.run(main())
