"""The surface API: everything a surface may use of the core, in one module.

A surface (``surfaces/<name>/`` or a package of its own) imports from here and from nothing else of
``core`` (a boundary test checks, type-only imports included). ``docs/writing-a-surface.md`` walks
through it. What is here:

- the plugin: ``SurfacePlugin``, ``SurfaceSettings`` (the config model's base), ``Problems``;
- the host ``launch`` receives: ``Host``, ``SurfaceState``, ``Controls``, ``ControlFailed``, and what a
  running surface is to the relay, ``Launched``;
- the seam the core calls: ``Surface``, ``SurfaceDefaults`` (the fallbacks), ``Capabilities``,
  ``RateLimit``, ``LengthUnit``, ``measure``;
- what crosses it: ``InboundMessage``, ``Attachment`` (a file other than an image is downloaded up to
  ``MAX_FILE_BYTES`` when ``may_be_text``, as ``download_as`` says; one larger, or never text, is passed
  without its data, and the turn names it as not sent),
  ``Button``, ``ButtonPress``, ``PressResult``,
  ``ConversationStatus``, ``ChoiceList`` (what a panel's picker offers); the reply as typed blocks
  (``Block`` and its kinds: ``Text``, ``Tools``, ``Plan``, ``Notices``, ``ErrorProse``, ``RefusalCard``,
  ``PartialNote``, ``StopMark``, ``Footer``, ``Choices``, a picker whose options come as buttons,
  ``FormCard``: the agent asks the person),
  the ``Formatter`` a surface renders them with into its own ``Rendered`` (``rendered_as`` narrows it
  back, ``markdown_of`` is a block's plain Markdown, ``code_lines`` tells code from prose);
- the errors a surface raises: ``StartupError``, the delivery errors (``DeliveryError`` and its kinds),
  ``StoreError`` (``Host.submit`` could not journal: ``HeldMessages`` tells the person once and offers
  the message to the store again until it takes it, every ``HELD_RETRY_S``; ``held_prose`` is what it
  says), ``ReconnectLater``;
- helpers: ``Receiver``, ``TaskSet``, ``Listener``, ``RefusalLog``, ``secret``, ``redact``,
  ``LISTEN_BACKLOG`` (an HTTP server's accept queue), ``register_secrets``, ``private_file``,
  ``WalCheckpointer`` (a SQLite file's checkpoints off the event loop) and its ``WriterLock``,
  ``route`` (is a text one of the surface's commands),
  ``command_word`` (an agent command's name as every platform spells it),
  ``plain_text``, ``close_open_fence``, ``error_prose``, ``image_kind`` (what image bytes are),
  ``monospace_tables`` (a table as an aligned code block, for a platform that draws none),
  ``table_pieces`` and ``MarkdownTable`` (tables parsed, for a platform that draws its own), and the
  one sentence for the relay's own failure (``INTERNAL_FAILURE``): a surface styles the reply by its
  blocks' kinds, never by the core's words.
"""

from __future__ import annotations

from core.config import secret
from core.describing import Described, describe
from core.engine.attached import MAX_FILE_BYTES, download_as, may_be_text
from core.engine.blocks import (
    Block,
    Choices,
    ErrorProse,
    Footer,
    Formatter,
    FormCard,
    Notices,
    Part,
    PartialNote,
    Plan,
    PlanStep,
    RefusalCard,
    Rendered,
    StopMark,
    Text,
    ToolLine,
    Tools,
    markdown_of,
    rendered_as,
)
from core.engine.held import HeldMessages
from core.engine.listening import Listener
from core.engine.messages import (
    Attachment,
    Button,
    ButtonPress,
    ChoiceList,
    ConversationStatus,
    InboundMessage,
    PressResult,
)
from core.engine.receiving import Receiver, ReconnectLater
from core.engine.router import command_word, route
from core.engine.shared_files import image_kind
from core.engine.splitter import close_open_fence, code_lines, plain_text
from core.engine.surface import (
    AnswerUnreadable,
    Capabilities,
    DeliveryError,
    DeliveryFailed,
    DeliveryRefused,
    Launched,
    LengthUnit,
    MarkupRejected,
    MessageTooLong,
    NotModified,
    RateLimit,
    RateLimited,
    StartupError,
    Surface,
    SurfaceDefaults,
    measure,
)
from core.engine.tables import MarkdownTable, monospace_tables, table_pieces
from core.engine.tasks import TaskSet
from core.engine.wording import forwarded_text
from core.failures import INTERNAL_FAILURE
from core.plugin import (
    LISTEN_BACKLOG,
    ControlFailed,
    Controls,
    Host,
    Problems,
    SurfacePlugin,
    SurfaceSettings,
    SurfaceState,
)
from core.private_files import SQLITE_COMPANIONS, private_file
from core.redact import SecretRegistration, redact, register_secrets
from core.refusal_log import RefusalLog
from core.rounds import Round
from core.store import HELD_RETRY_S, StoreError, disk_full, held_prose
from core.wal_checkpoints import WalCheckpointer, WriterLock

__all__ = [
    "HELD_RETRY_S",
    "INTERNAL_FAILURE",
    "LISTEN_BACKLOG",
    "MAX_FILE_BYTES",
    "SQLITE_COMPANIONS",
    "AnswerUnreadable",
    "Attachment",
    "Block",
    "Button",
    "ButtonPress",
    "Capabilities",
    "ChoiceList",
    "Choices",
    "ControlFailed",
    "Controls",
    "ConversationStatus",
    "DeliveryError",
    "DeliveryFailed",
    "DeliveryRefused",
    "Described",
    "ErrorProse",
    "Footer",
    "FormCard",
    "Formatter",
    "HeldMessages",
    "Host",
    "InboundMessage",
    "Launched",
    "LengthUnit",
    "Listener",
    "MarkdownTable",
    "MarkupRejected",
    "MessageTooLong",
    "NotModified",
    "Notices",
    "Part",
    "PartialNote",
    "Plan",
    "PlanStep",
    "PressResult",
    "Problems",
    "RateLimit",
    "RateLimited",
    "Receiver",
    "ReconnectLater",
    "RefusalCard",
    "RefusalLog",
    "Rendered",
    "Round",
    "SecretRegistration",
    "StartupError",
    "StopMark",
    "StoreError",
    "Surface",
    "SurfaceDefaults",
    "SurfacePlugin",
    "SurfaceSettings",
    "SurfaceState",
    "TaskSet",
    "Text",
    "ToolLine",
    "Tools",
    "WalCheckpointer",
    "WriterLock",
    "close_open_fence",
    "code_lines",
    "command_word",
    "describe",
    "disk_full",
    "download_as",
    "error_prose",
    "forwarded_text",
    "held_prose",
    "image_kind",
    "markdown_of",
    "may_be_text",
    "measure",
    "monospace_tables",
    "plain_text",
    "private_file",
    "redact",
    "register_secrets",
    "rendered_as",
    "route",
    "secret",
    "table_pieces",
]


def error_prose(exc: BaseException) -> str:
    """The plain sentence a person is shown for ``exc``: the agent's failure as a turn says it, the one
    fixed sentence for anything the relay did not expect. Never a traceback, always redacted."""
    return describe(exc).prose
