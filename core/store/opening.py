"""Open the store the config names: SQLite at ``store.path``, or PostgreSQL when ``store.url_env``
names the environment variable holding its URL (never written in the file).

psycopg is an optional extra (``acp-relay[postgres]``): it is imported only when the config asks for
PostgreSQL, and its absence is one sentence naming the extra.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Protocol

from core.store.backend import Backend
from core.store.records import StoreError
from core.store.store import Store

__all__ = ["EXTRA", "StoreSettings", "database_url", "open_store", "store_problems"]

#: The extra that installs psycopg.
EXTRA = "postgres"


class StoreSettings(Protocol):
    """The config's ``store`` section (``core.config.StoreConfig``)."""

    path: str
    url_env: str | None


def database_url(settings: StoreSettings, environ: Mapping[str, str] | None = None) -> str | None:
    """The PostgreSQL URL from the variable ``url_env`` names; None for a SQLite store. ``StoreError``
    (not transient) when the variable is unset or empty."""
    if settings.url_env is None:
        return None
    value = (os.environ if environ is None else environ).get(settings.url_env, "")
    if not value.strip():
        raise StoreError(f"${settings.url_env}", f"store.url_env names {settings.url_env}, which is not set; put the "
                         "PostgreSQL URL there (postgresql://user:password@host:port/database), or remove "
                         "store.url_env to use SQLite")
    return value


def open_store(settings: StoreSettings, environ: Mapping[str, str] | None = None) -> Store:
    """Open and migrate the configured store; ``StoreError`` (``transient`` for a network fault) if not."""
    url = database_url(settings, environ)
    if url is None:
        return Store.open(settings.path)
    return Store.on(_connect(url, settings.url_env or ""))


def store_problems(settings: StoreSettings, environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """What would keep the configured store from opening, found without connecting (``check-config``):
    the variable unset, psycopg missing, a URL libpq cannot read; as ``(json path, problem)``."""
    try:
        url = database_url(settings, environ)
        if url is not None:
            _parse(url, settings.url_env or "")
    except StoreError as exc:
        return [("store.url_env", exc.detail)]
    return []


def _psycopg_missing(source: str, exc: ImportError) -> StoreError:
    return StoreError(f"${source}", f"a PostgreSQL store needs psycopg, which is not installed ({exc.name}): pip "
                      f"install 'acp-relay[{EXTRA}]'")


def _connect(url: str, source: str) -> Backend:
    try:
        from core.store.postgres import PostgresBackend
    except ImportError as exc:  # psycopg is an optional extra
        raise _psycopg_missing(source, exc) from exc
    return PostgresBackend.connect(url, source=source)


def _parse(url: str, source: str) -> None:
    try:
        from core.store.postgres import parse_url
    except ImportError as exc:
        raise _psycopg_missing(source, exc) from exc
    parse_url(url, source)
