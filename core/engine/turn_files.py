"""What a turn's reply sends besides its words: the files the agent shared (in its messages and its
tool calls) and the turn's whole diff, after the answer; the ones that may not be sent are said in
the answer, one sentence each (``core.engine.shared_files`` decides)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from core.acp.exchange import FileDiff, SharedFile
from core.acp.types import AcpEvent, FileShared, ToolCall
from core.engine import twoway_wording as say
from core.engine.shared_files import Outgoing, Refused, check, diff_counts, turn_diff
from core.engine.streamer import Streamer
from core.engine.surface import DeliveryError
from core.redact import redact

__all__ = ["INLINE_DIFF_CHARS", "TurnFiles"]

log = logging.getLogger("acp_relay.engine.turn_files")

#: A turn's diff up to this long is shown in the answer; a longer one is sent as ``changes.diff``.
INLINE_DIFF_CHARS = 1500


@dataclass(slots=True)
class TurnFiles:
    """The files and edits of one turn, in the order the agent reported them."""

    files: dict[tuple[str, str], SharedFile] = field(default_factory=dict)  # (path or name, name) -> file
    edits: dict[str, FileDiff] = field(default_factory=dict)  # path -> the file's first old, last new text

    def take(self, event: AcpEvent) -> None:
        """Note what ``event`` shares or edits (the same file reported twice is sent once)."""
        shared: tuple[SharedFile, ...] = ()
        if isinstance(event, FileShared):
            shared = (event.file,)
        elif isinstance(event, ToolCall):
            shared = event.files
            for d in event.diffs:
                first = self.edits.get(d.path)
                self.edits[d.path] = FileDiff(d.path, first.old if first is not None else d.old, d.new)
        for f in shared:
            self.files.setdefault((f.path or f.name, f.name), f)

    def checked(self, folder: str, limit: int | None) -> tuple[list[Outgoing], list[Refused]]:
        """The files that may be sent, and the ones that may not (with why)."""
        sent: list[Outgoing] = []
        refused: list[Refused] = []
        for f in self.files.values():
            result = check(f, folder, limit)
            if isinstance(result, Outgoing):
                sent.append(result)
            else:
                refused.append(result)
        return sent, refused

    def diff(self, folder: str) -> str:
        """The turn's whole diff ("" when nothing was edited)."""
        return turn_diff(list(self.edits.values()), folder)

    def totals(self) -> tuple[int, int]:
        """Lines added and removed in the turn."""
        counts = [diff_counts(d) for d in self.edits.values()]
        return sum(a for a, _ in counts), sum(r for _, r in counts)

    async def send(self, streamer: Streamer, sent: list[Outgoing], diff: str) -> None:
        """Post the files below the answer (a platform failure is logged; the answer stands), and the
        diff as ``changes.diff`` when it was too long for the answer."""
        for out in sent:
            try:
                await streamer.send_file(out.name, out.data, caption=say.file_caption(out.name, len(out.data)),
                                         fallback=say.file_not_sent(out.name, "no_files"))
            except DeliveryError as exc:
                log.warning("could not send a file the agent shared in %s: %s", streamer.conversation_key, exc)
        if diff and len(diff) > INLINE_DIFF_CHARS:
            added, removed = self.totals()
            data = redact(diff).encode()
            try:
                await streamer.send_file("changes.diff", data, caption=say.diff_caption(len(self.edits), added,
                                                                                        removed),
                                         fallback=say.file_not_sent("changes.diff", "no_files"))
            except DeliveryError as exc:
                log.warning("could not send the turn's diff in %s: %s", streamer.conversation_key, exc)
