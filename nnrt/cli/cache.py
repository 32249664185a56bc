"""``nnrt cache ls|verify|clear``: inspect, check and empty a compilation cache directory."""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = ["add_cache_parser", "cache_main", "installed_versions"]

_HEX_PREFIX = re.compile(r"[0-9a-f]{1,64}")


def add_cache_parser(commands: Any) -> None:
    """Register ``cache`` and its sub-commands on ``commands`` (an argparse sub-parsers object)."""
    cache = commands.add_parser("cache", help="inspect, verify or clear the compilation cache")
    actions = cache.add_subparsers(dest="cache_command", required=True)
    listing = actions.add_parser("ls", help="one line per entry: token, driver, version, files, "
                                 "bytes, last use")
    verify = actions.add_parser("verify", help="check every entry against its driver's "
                                "integrity store (exit 1 if any is corrupt)")
    clear = actions.add_parser("clear", help="remove entries (all, or --token PREFIX)")
    clear.add_argument("--token", default=None, metavar="PREFIX",
                       help="only entries whose token (hex) starts with PREFIX")
    clear.add_argument("--stores", action="store_true", help="also remove the integrity "
                       "stores of driver versions that are not installed")
    for parser in (listing, verify, clear):
        parser.add_argument("--dir", default=None, help="the cache directory (default: "
                            "$NNRT_CACHE_DIR, else ~/.cache/nnrt/compiled)")
    for parser in (verify, clear):
        parser.add_argument("--integrity-dir", default=None, help="root of the integrity "
                            "stores (default: $NNRT_INTEGRITY_DIR, else "
                            "~/.cache/nnrt/integrity)")
    cache.set_defaults(func=lambda args: run_cache(args, sys.stdout, sys.stderr))


def cache_main(argv: Sequence[str], out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    """Run ``nnrt cache <argv>`` and return the exit code (for tests and embedding)."""
    parser = argparse.ArgumentParser(prog="nnrt")
    add_cache_parser(parser.add_subparsers(dest="command", required=True))
    return run_cache(parser.parse_args(["cache", *argv]), out, err)


def run_cache(args: argparse.Namespace, out: TextIO, err: TextIO,
              versions: Callable[[], dict[str, str | None]] | None = None) -> int:
    """Run a parsed ``nnrt cache`` command: 0 done, 1 corrupt entries or an error."""
    from nnrt.cache import CacheDirectory, default_cache_dir  # noqa: PLC0415
    from nnrt.errors import NnrtError  # noqa: PLC0415

    path = args.dir if args.dir is not None else default_cache_dir()
    try:
        try:
            directory = CacheDirectory(path, create=False)
        except NnrtError:
            if args.cache_command == "clear" and args.stores:
                return _clear_stores(args, out, versions or installed_versions)
            if not os.path.lexists(path):  # nothing was ever cached there: not an error
                print(f"{path}: no cache yet (nothing has been cached there)", file=out)
                return 0
            raise
        if args.cache_command == "ls":
            return _ls(directory, out)
        if args.cache_command == "verify":
            return _verify(directory, args.integrity_dir, out)
        code = _clear(directory, args.token, out)
        if code == 0 and args.stores:
            code = _clear_stores(args, out, versions or installed_versions)
        return code
    except NnrtError as exc:
        print(f"nnrt cache {args.cache_command}: {exc}", file=err)
        return 1


def _ls(directory: Any, out: TextIO) -> int:
    entries = directory.entries()
    print(f"{'token':<16}  {'driver':<20} {'version':<10} {'files':>5} {'bytes':>12}  last used",
          file=out)
    for entry in entries:
        meta = entry.meta
        if meta is None:
            print(f"{entry.token_hex[:16]}  {'-':<20} {'-':<10} {entry.files:>5} "
                  f"{entry.bytes:>12}  - ({entry.problem})", file=out)
            continue
        used = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta.last_used))
        print(f"{entry.token_hex[:16]}  {meta.driver:<20.20} {meta.version:<10.10} "
              f"{sum(meta.counts):>5} {entry.bytes:>12}  {used}", file=out)
    print(f"{len(entries)} entries, {sum(e.bytes for e in entries)} bytes in "
          f"{directory.path}", file=out)
    return 0


def _verify(directory: Any, store_root: str | None, out: TextIO) -> int:
    from nnrt.cache.verify import verify_entry  # noqa: PLC0415
    from nnrt.cli.progress import Progress  # noqa: PLC0415

    counts: dict[str, int] = {}
    entries = directory.entries()
    progress = Progress(len(entries), "verifying")
    for done, entry in enumerate(entries, 1):
        verdict = verify_entry(directory, entry, store_root)
        progress.update(done)
        counts[verdict.status] = counts.get(verdict.status, 0) + 1
        detail = f": {verdict.detail}" if verdict.detail else ""
        print(f"{entry.token_hex[:16]}  {verdict.status}{detail}", file=out)
    progress.close()
    summary = ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no entries"
    print(summary, file=out)
    return 1 if counts.get("corrupt") else 0


def _clear(directory: Any, prefix: str | None, out: TextIO) -> int:
    from nnrt.errors import BadData  # noqa: PLC0415

    if prefix is not None:
        prefix = prefix.lower()
        if not _HEX_PREFIX.fullmatch(prefix):
            raise BadData(f"--token: expected a hex prefix of 1 to 64 digits, got {prefix!r:.80}")
    removed = 0
    for entry in directory.entries():
        if prefix is None or entry.token_hex.startswith(prefix):
            directory.remove(entry.token_hex, lock_file=True)
            removed += 1
    print(f"removed {removed} entries from {directory.path}", file=out)
    return 0


def _clear_stores(args: argparse.Namespace, out: TextIO,
                  versions: Callable[[], dict[str, str | None]]) -> int:
    from nnrt.cache import list_stores, remove_store  # noqa: PLC0415

    current = versions()
    removed = []
    for store in list_stores(args.integrity_dir):
        installed = current.get(store.name, "")
        if installed is None:
            continue  # installed but it did not load: keep its stores
        if installed != store.version:
            remove_store(args.integrity_dir, store.name, store.version)
            removed.append(f"{store.name} {store.version}")
    print(f"removed {len(removed)} stale integrity stores" + (": " + ", ".join(removed)
                                                                if removed else ""), file=out)
    return 0


def installed_versions() -> dict[str, str | None]:
    """Installed driver (its own name) -> version; None for a driver that fails to load."""
    from nnrt.errors import NnrtError  # noqa: PLC0415
    from nnrt.hal.discovery import available_drivers, load_driver  # noqa: PLC0415

    found: dict[str, str | None] = {}
    for name in available_drivers():
        try:
            info = load_driver(name).info()
        except (NnrtError, ImportError, OSError):
            found[name] = None
            continue
        found[info.name] = info.version
    return found
