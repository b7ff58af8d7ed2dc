"""What one answered message costs the store: each statement on the way is there once.

A burst of conversations is CPU-bound in the relay (issue 24), and every surface pays the core's
store work per conversation. These count the statements SQLite runs (its connection's own trace
hook) while a new conversation's message is journaled, answered and completed, so a redundant
read or a write made twice shows up as a failing count, not as a slower benchmark.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from core.store import Store
from tests.engine.conftest import Relay, RelayFactory, make_surface


def statement_kind(statement: str) -> str:
    """``"UPDATE inbound"``, ``"SELECT conversations"``, ``"BEGIN"``...: what a traced statement does to which table."""
    head = statement.lstrip().upper()
    for word in ("BEGIN", "COMMIT", "ROLLBACK"):
        if head.startswith(word):
            return word
    verb = head.split()[0]
    if verb == "SELECT":
        table = re.search(r"\bFROM\s+(\w+)", head)
        return f"SELECT {table[1].lower() if table else '?'}"
    table = re.search(r"^(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(\w+)", head)
    return f"{verb} {table[1].lower() if table else '?'}"


@contextmanager
def traced(store: Store) -> Iterator[list[str]]:
    """The statements the store's SQLite connection runs inside the block, as SQLite runs them."""
    statements: list[str] = []
    conn = store.backend._conn  # type: ignore[attr-defined]  # the only way to watch what it runs
    conn.set_trace_callback(statements.append)
    try:
        yield statements
    finally:
        conn.set_trace_callback(None)


async def _answered(r: Relay, text: str, key: str) -> Counter[str]:
    with traced(r.store) as statements:
        await r.ask(text, key=key)
    return Counter(statement_kind(s) for s in statements)


async def test_a_new_conversations_answer_reads_its_record_once_and_completes_its_message_once(
        relay: RelayFactory) -> None:
    r = await relay()
    counts = await _answered(r, "hello", "memory:fresh")
    assert counts["INSERT inbound"] == 1  # journaled
    assert counts["SELECT conversations"] == 1  # the binding's look at what is stored, before the session
    assert counts["INSERT conversations"] == 1  # the new session, kept for a restart
    # completed once (the reply that was shown completes it; the conversation does not again)
    assert sum(n for kind, n in counts.items() if kind == "UPDATE inbound") == 2  # reply started, completed


async def test_an_answer_marks_its_reply_started_once_whatever_messages_it_takes(relay: RelayFactory) -> None:
    r = await relay(surface=make_surface(max_message_length=60))
    counts = await _answered(r, "text " + "word " * 40, "memory:fresh")  # 200 characters: several messages
    assert counts["INSERT reply_messages"] >= 3
    # the first message's record marks the reply started, in one transaction with it; the rest are one
    # statement each
    assert (counts["BEGIN"], counts["COMMIT"]) == (1, 1)
    assert sum(n for kind, n in counts.items() if kind == "UPDATE inbound") == 2  # reply started, completed
