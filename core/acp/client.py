"""The AcpError family: protocol and prompt-level failures, where the spec documents it (acp/client.py).

The classes are defined in the leaf module ``core.errors`` under the relay's one error root, so that
``core.failures`` can word them without importing the ``core.acp`` package; this module is their
import path. The wording a person sees is produced in one place, ``core.describing.describe``.
"""

from __future__ import annotations

from core.errors import (
    AcpAuthRequired,
    AcpError,
    AcpModelUnavailable,
    AcpPermissionNeeded,
    AcpProcessDied,
    AcpPromptBusy,
    AcpTimeoutError,
    AcpToolGateUnroutable,
)

__all__ = [
    "AcpAuthRequired",
    "AcpError",
    "AcpModelUnavailable",
    "AcpPermissionNeeded",
    "AcpProcessDied",
    "AcpPromptBusy",
    "AcpTimeoutError",
    "AcpToolGateUnroutable",
]
