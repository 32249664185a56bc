"""Private directories, atomic durable writes and bounded reads for the cache's own files.

Everything the cache keeps on disk lives in directories only its user can enter (0700) and in
files only its user can read (0600). A file is replaced atomically: written to a temporary name
in the same directory, fsynced, renamed over the target, then the directory is fsynced, so a
crash leaves either the old or the new contents, never a mix.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from nnrt.errors import CacheError

__all__ = ["TEMP_MARK", "AnyPath", "atomic_write", "create_exclusive", "fsync_dir", "private_dir",
           "read_record", "read_small", "remove", "temp_name"]

#: Part of every temporary file name the cache creates (``<final name>.tmp-<pid>-<random>``).
TEMP_MARK = ".tmp-"
_DIR_MODE = 0o700
_FILE_MODE = 0o600
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC

#: A file path as the functions below take it (the cache's hot paths use plain strings).
AnyPath = str | os.PathLike[str]


def private_dir(path: str | os.PathLike[str], what: str, *, create: bool = True) -> Path:
    """``path`` as a directory of this user that nobody else may write; created 0700 if missing.

    Raises CacheError if it is not a directory, belongs to another user, or is writable by the
    group or others (anyone who can write it could swap cache files under us).
    """
    directory = Path(os.fsdecode(path)).expanduser()
    if create:
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir(mode=_DIR_MODE, exist_ok=True)
        except FileExistsError:
            pass  # not a directory: reported below
        except OSError as exc:
            raise CacheError(f"{what} {str(directory)!r}: cannot create it ({exc.strerror})") \
                from None
    try:
        info = directory.lstat()
    except OSError as exc:
        raise CacheError(f"{what} {str(directory)!r}: {exc.strerror}") from None
    if not stat.S_ISDIR(info.st_mode):
        raise CacheError(f"{what} {str(directory)!r} is not a directory")
    if info.st_uid != os.geteuid():
        raise CacheError(f"{what} {str(directory)!r} belongs to user {info.st_uid}, not to "
                         f"this user ({os.geteuid()})")
    if info.st_mode & 0o022:
        raise CacheError(f"{what} {str(directory)!r} is writable by other users (mode "
                         f"{stat.S_IMODE(info.st_mode):o}); use a private directory (0700)")
    return directory


def temp_name(target: AnyPath) -> str:
    """A fresh temporary name next to ``target``."""
    return f"{os.fspath(target)}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(6)}"


def create_exclusive(path: AnyPath) -> int:
    """A new file at ``path`` opened read+write (0600; fails if it exists or is a symlink)."""
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW, _FILE_MODE)


def fsync_dir(directory: AnyPath) -> None:
    """Make renames and removals in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(target: AnyPath, data: bytes) -> None:
    """Replace ``target`` with ``data`` atomically and durably (0600)."""
    temp = temp_name(target)
    fd = create_exclusive(temp)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        remove(temp)
        raise
    os.close(fd)
    try:
        os.replace(temp, target)
    except BaseException:
        remove(temp)
        raise
    fsync_dir(os.path.dirname(os.fspath(target)) or ".")


def read_small(path: AnyPath, limit: int) -> bytes | None:
    """The contents of regular file ``path`` if it has at most ``limit`` bytes, else None.

    None also when it is missing, a symlink or not a regular file: the callers treat all of
    these as "no valid record".
    """
    found = read_record(path, limit)
    return None if found is None else found[0]


def read_record(path: AnyPath, limit: int) -> tuple[bytes, os.stat_result] | None:
    """:func:`read_small`'s contents with the file's status (``fstat`` of the file read).

    None as well when the file grows while it is read: the cache replaces its files by
    renaming, never rewrites them in place, so such a file is not one of its records.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | _NOFOLLOW)  # a FIFO must not block
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        size = info.st_size
        data = os.pread(fd, min(size, limit) + 1, 0)  # one byte more: a file over the limit
    except OSError:
        return None
    finally:
        os.close(fd)
    return (data, info) if len(data) <= min(size, limit) else None


def remove(path: AnyPath) -> bool:
    """Unlink ``path`` if it exists; whether it was removed."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
        return True
    return False
