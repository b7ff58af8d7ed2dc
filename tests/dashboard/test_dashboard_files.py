"""A file the relay posts in a tab (the rest of an answer too long to show): a message with a download
link, served only for that tab and only to whoever may use the dashboard."""

from __future__ import annotations

import re
from pathlib import Path

from surfaces.dashboard.surface import conversation_key
from tests.rendering import md

from .test_server import serve

KEY = conversation_key("tab1")


async def test_the_rest_of_a_long_answer_is_a_download_in_the_tab(tmp_path: Path) -> None:
    served, _ = await serve(tmp_path)
    try:
        surface = served.surface
        mid = await surface.send_file(KEY, "answer-rest.md", "the rest, é\n".encode(),
                                      caption=md(surface, "The rest of the answer (1 KB)."), fallback=md(surface, ""))
        [entry] = served.surface.transcript.entries("tab1")
        assert entry.id == mid and entry.text.startswith("The rest of the answer (1 KB). [answer-rest.md](")
        url = re.search(r"\]\(([^)]+)\)", entry.text).group(1)  # type: ignore[union-attr]
        async with served.client.get(url) as response:
            assert response.status == 200
            assert await response.read() == "the rest, é\n".encode()
            assert response.headers["Content-Disposition"] == 'attachment; filename="answer-rest.md"'
        async with served.client.get(url.replace("/tab1/", "/tab2/")) as response:
            assert response.status == 404, "another tab does not have it"
    finally:
        await served.client.close()


async def test_a_file_needs_the_dashboard_token_like_everything_else(tmp_path: Path) -> None:
    served, _ = await serve(tmp_path, token="s3cret-token", bearer=False)
    try:
        await served.surface.send_file(KEY, "answer-rest.md", b"secret rest", caption=md(served.surface, "The rest."),
                                       fallback=md(served.surface, ""))
        [entry] = served.surface.transcript.entries("tab1")
        url = re.search(r"\]\(([^)]+)\)", entry.text).group(1)  # type: ignore[union-attr]
        async with served.client.get(url) as response:
            assert response.status == 401
        async with served.client.get(url, headers={"Authorization": "Bearer s3cret-token"}) as response:
            assert response.status == 200 and await response.read() == b"secret rest"
    finally:
        await served.client.close()
