"""``nnrt cache ls|verify|clear`` on a real cache directory and real integrity stores."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cache_helpers import data_blobs, flip_bit, model_blobs

from nnrt.cache import CacheDirectory, IntegrityStore, list_stores, save_cache
from nnrt.cli.cache import cache_main, run_cache

TOKENS = [hashlib.sha256(f"cli {i}".encode()).digest() for i in range(4)]


def _entry(directory: CacheDirectory, store: IntegrityStore, token: bytes, seed: str) -> None:
    name, version = store.driver
    with directory.open(token, (2, 1), {"driver": name, "version": version}) as entry:
        save_cache(entry.files, model_blobs(seed), data_blobs(seed), store)
        entry.commit()


@pytest.fixture
def populated(tmp_path: Path) -> tuple[Path, Path]:
    """Four entries: two ok, one with a flipped bit, one its store forgot; plus stores."""
    cache_dir, root = tmp_path / "cache", tmp_path / "integrity"
    directory = CacheDirectory(cache_dir)
    acme = IntegrityStore.for_driver("com.example.acme", "2.0", root)
    other = IntegrityStore.for_driver("com.example.other", "1", root)
    for i, store in enumerate((acme, other, acme, acme)):
        _entry(directory, store, TOKENS[i], f"m{i}")
    flip_bit(cache_dir / f"{TOKENS[2].hex()}.model.1", 7)
    acme.forget(TOKENS[3])
    IntegrityStore.for_driver("com.example.acme", "1.0", root).record(TOKENS[0], bytes(32))
    return cache_dir, root


def _run(*argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = cache_main(list(argv), out, err)
    return code, out.getvalue() + err.getvalue()


def test_ls_lists_every_entry(populated: tuple[Path, Path]) -> None:
    cache_dir, _ = populated
    code, text = _run("ls", "--dir", str(cache_dir))
    assert code == 0, text
    lines = text.splitlines()
    assert lines[0].split()[:4] == ["token", "driver", "version", "files"]
    rows = {line.split()[0]: line.split() for line in lines[1:-1]}
    assert set(rows) == {t.hex()[:16] for t in TOKENS}
    on_disk = sum(p.stat().st_size for p in cache_dir.glob(f"{TOKENS[1].hex()}.*"))
    assert on_disk > 7196  # three files of 4096 + 100 + 3000 bytes and the meta record
    assert rows[TOKENS[1].hex()[:16]][1:5] == ["com.example.other", "1", "3", str(on_disk)]
    total = sum(p.stat().st_size for p in cache_dir.iterdir())
    assert lines[-1].startswith(f"4 entries, {total} bytes")


def test_verify_reports_ok_corrupt_unknown(populated: tuple[Path, Path]) -> None:
    cache_dir, root = populated
    code, text = _run("verify", "--dir", str(cache_dir), "--integrity-dir", str(root))
    assert code == 1, text
    status = {line.split()[0]: line.split()[1].rstrip(":") for line in text.splitlines()[:-1]}
    assert status == {TOKENS[0].hex()[:16]: "ok", TOKENS[1].hex()[:16]: "ok",
                      TOKENS[2].hex()[:16]: "corrupt", TOKENS[3].hex()[:16]: "unknown"}
    assert text.splitlines()[-1] == "1 corrupt, 2 ok, 1 unknown"


def test_verify_does_not_hang_on_a_fifo_in_place_of_a_file(populated: tuple[Path, Path]) -> None:
    cache_dir, root = populated
    for name in (f"{TOKENS[0].hex()}.model.0", f"{TOKENS[1].hex()}.meta"):
        (cache_dir / name).unlink()
        os.mkfifo(cache_dir / name)  # opening it for reading would wait for a writer
    code, text = _run("verify", "--dir", str(cache_dir), "--integrity-dir", str(root))
    status = {line.split()[0]: line.split()[1].rstrip(":") for line in text.splitlines()[:-1]}
    assert status[TOKENS[0].hex()[:16]] == "corrupt" and "not a regular file" in text
    assert status[TOKENS[1].hex()[:16]] == "incomplete"
    assert code == 1


def test_clear_by_prefix_then_all(populated: tuple[Path, Path]) -> None:
    cache_dir, root = populated
    code, text = _run("clear", "--dir", str(cache_dir), "--token", TOKENS[2].hex()[:12].upper())
    assert (code, text.strip()) == (0, f"removed 1 entries from {cache_dir}")
    code, text = _run("verify", "--dir", str(cache_dir), "--integrity-dir", str(root))
    assert code == 0, text
    assert _run("clear", "--dir", str(cache_dir), "--token", "xyz")[0] == 1
    assert _run("clear", "--dir", str(cache_dir))[0] == 0
    assert list(cache_dir.iterdir()) == []
    assert len(list_stores(root)) == 3  # stores are only cleared with --stores


def test_clear_stores_keeps_installed_versions(populated: tuple[Path, Path]) -> None:
    cache_dir, root = populated
    parser_args = ["clear", "--dir", str(cache_dir), "--stores", "--integrity-dir", str(root)]
    import argparse

    from nnrt.cli.cache import add_cache_parser

    parser = argparse.ArgumentParser()
    add_cache_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["cache", *parser_args])
    out = io.StringIO()
    installed = {"com.example.acme": "2.0", "com.example.other": None}  # other fails to load
    assert run_cache(args, out, out, versions=lambda: installed) == 0, out.getvalue()
    assert [(s.name, s.version) for s in list_stores(root)] == [("com.example.acme", "2.0"),
                                                                ("com.example.other", "1")]
    assert "removed 1 stale integrity stores: com.example.acme 1.0" in out.getvalue()


def test_the_command_in_a_real_process(populated: tuple[Path, Path]) -> None:
    cache_dir, root = populated
    code = ("import sys; from nnrt.cli.cache import cache_main; "
            "sys.exit(cache_main(sys.argv[1:]))")
    env = {**os.environ, "NNRT_CACHE_DIR": str(cache_dir), "NNRT_INTEGRITY_DIR": str(root)}
    result = subprocess.run([sys.executable, "-c", code, "verify"], capture_output=True,
                            text=True, timeout=60, check=False, env=env)
    assert result.returncode == 1 and "1 corrupt" in result.stdout, result.stderr
    missing = subprocess.run([sys.executable, "-c", code, "ls", "--dir",
                              str(cache_dir / "nope")], capture_output=True, text=True,
                             timeout=60, check=False)
    # a directory nothing was ever cached in is not an error (a fresh machine)
    assert missing.returncode == 0 and "no cache yet" in missing.stdout, missing.stderr
