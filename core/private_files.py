"""Files that keep prompts and answers (the store, the dashboard's transcript, the log) are their
owner's alone: created 0600, in folders the relay creates 0700, whatever the umask.

A file an older version left readable by others is tightened when it is opened. A folder that
already exists is left as it is: it may be ``/tmp`` or a project folder, not the relay's to change.
SQLite creates its ``-wal`` and ``-shm`` files with the database file's permissions, so a private
database file keeps them private too; ones that already exist are tightened with it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path

__all__ = ["FILE_MODE", "FOLDER_MODE", "SQLITE_COMPANIONS", "private_file", "private_folder"]

FILE_MODE = 0o600
FOLDER_MODE = 0o700
#: The files SQLite keeps beside a database.
SQLITE_COMPANIONS = ("-wal", "-shm", "-journal")


def private_folder(path: Path) -> None:
    """Create ``path`` and its missing parents as 0700 (existing folders are left alone)."""
    missing: list[Path] = []
    while not path.exists():
        missing.append(path)
        if path.parent == path:
            break
        path = path.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=FOLDER_MODE)
        except FileExistsError:
            continue  # made meanwhile by someone else: theirs
        os.chmod(folder, FOLDER_MODE)  # mkdir's mode passes through the umask


def private_file(path: Path, companions: Iterable[str] = ()) -> None:
    """Create ``path`` (empty) as 0600 if it is missing, else tighten it to 0600; and each existing
    ``path`` + suffix in ``companions``. Its folder is created as :func:`private_folder` does."""
    private_folder(path.parent)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        _tighten(fd)
    finally:
        os.close(fd)
    for suffix in companions:
        try:
            fd = os.open(f"{path}{suffix}", os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
        try:
            _tighten(fd)
        finally:
            os.close(fd)


def _tighten(fd: int) -> None:
    if stat.S_IMODE(os.fstat(fd).st_mode) & ~FILE_MODE:
        os.fchmod(fd, FILE_MODE)
