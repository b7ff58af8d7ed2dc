"""The files a person shares in a message, downloaded for the agent (``files:read``).

A file shared in Slack is private: its ``url_private_download`` takes the bot token as a bearer
token. The token goes only to Slack's own file host (or to the Web API's host, the fake's in tests),
never to whatever URL an event names. An image up to ``MAX_IMAGE_BYTES`` and any other file up to
``MAX_FILE_BYTES`` are downloaded (the core sends a text file as text, and names the rest as not
sent). What is not downloaded comes without its data, so the turn names it: a file too large, one
whose URL is not Slack's, or one Slack would not hand over. Slack answers a download it refuses
(the ``files:read`` scope missing) with its sign-in page, status 200: HTML where no HTML was
shared is taken as that refusal. In a Slack Connect channel an event names a file by its id alone
(``"file_access": "check_file_info"``): ``files.info`` says the rest.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core.surface_api import MAX_FILE_BYTES, Attachment, download_as

__all__ = ["MAX_IMAGE_BYTES", "SharedFile", "SlackFiles", "shared_files"]

log = logging.getLogger("acp_relay.slack.files")

#: The largest image downloaded for an agent that takes images.
MAX_IMAGE_BYTES = 10 * 1024 * 1024
FILES_HOST = "https://files.slack.com"
_TIMEOUT = aiohttp.ClientTimeout(total=30)


@dataclass(frozen=True, slots=True)
class SharedFile:
    """A file an event says was shared with the message."""

    name: str
    mime: str
    size: int
    url: str
    id: str = ""


def shared_files(event: Mapping[str, Any]) -> tuple[SharedFile, ...]:
    """The files of a ``message`` (``file_share``) or ``app_mention`` event; entries that are not
    file objects are skipped."""
    files = event.get("files")
    if not isinstance(files, list):
        return ()
    return tuple(_shared(item) for item in files if isinstance(item, dict))


def _shared(item: Mapping[str, Any]) -> SharedFile:
    size = item.get("size")
    return SharedFile(name=str(item.get("name") or item.get("title") or item.get("id") or ""),
                      mime=str(item.get("mimetype") or "application/octet-stream"),
                      size=size if isinstance(size, int) and size >= 0 else 0,
                      url=str(item.get("url_private_download") or item.get("url_private") or ""),
                      id=str(item.get("id") or ""))


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class SlackFiles:
    """Downloads shared files with the bot token, through the surface's HTTP session."""

    def __init__(self, client: AsyncWebClient, session: aiohttp.ClientSession, token: str, api_base_url: str) -> None:
        self._client = client
        self._session = session
        self._token = token
        self._origins = {FILES_HOST, _origin(api_base_url)}

    async def fetch(self, files: tuple[SharedFile, ...]) -> tuple[Attachment, ...]:
        """Each file as an attachment, in order (without its data where it was not downloaded)."""
        return tuple(await asyncio.gather(*(self._one(f) for f in files)))

    async def _one(self, shared: SharedFile) -> Attachment:
        if not shared.url and shared.id:  # named by its id alone (Slack Connect)
            shared = await self._info(shared)
        missing = Attachment("file", shared.mime, b"", shared.name)
        if not shared.url or _origin(shared.url) not in self._origins:
            log.warning("a shared file was not downloaded: its URL is not Slack's (%s)", _origin(shared.url) or "none")
            return missing
        kind = download_as(shared.mime, shared.size, image_limit=MAX_IMAGE_BYTES)
        if kind is None:
            return missing
        try:
            data = await self._download(shared, MAX_IMAGE_BYTES if kind == "image" else MAX_FILE_BYTES)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("could not download a shared file: %s", type(exc).__name__)
            return missing
        return missing if data is None else Attachment(kind, shared.mime, data, shared.name)

    async def _info(self, shared: SharedFile) -> SharedFile:
        """``shared`` as ``files.info`` describes it (as it was, without a URL, when Slack would not say)."""
        try:
            response = await self._client.files_info(file=shared.id)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as exc:
            log.warning("files.info could not describe a shared file: %s", type(exc).__name__)
            return shared
        found = response.get("file")
        return _shared(found) if isinstance(found, dict) else shared

    async def _download(self, shared: SharedFile, limit: int) -> bytes | None:
        headers = {"Authorization": f"Bearer {self._token}"}
        async with self._session.get(shared.url, headers=headers, timeout=_TIMEOUT, allow_redirects=False) as response:
            if response.status != 200:
                log.warning("Slack answered %s to the download of a shared file", response.status)
                return None
            if response.content_type == "text/html" and shared.mime != "text/html":
                log.warning("Slack answered a shared file's download with a web page: does the app have the "
                            "files:read scope? (reinstall it from slack-manifest.json)")
                return None
            data = bytearray()
            async for chunk in response.content.iter_chunked(64 * 1024):
                data += chunk
                if len(data) > limit:  # larger than the event said
                    return None
        return bytes(data)
