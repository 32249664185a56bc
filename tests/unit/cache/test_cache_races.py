"""Concurrency: a thread tampering with the files mid-save/load, and processes sharing an entry."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import cache_racer
import pytest
from cache_helpers import TOKEN_A, data_blobs, model_blobs, opened

from nnrt.cache import CacheDirectory, IntegrityStore, load_cache, save_cache
from nnrt.errors import CacheError

ROUNDS = 100
SIZES = (64 * 1024, 512)


class Tamperer(threading.Thread):
    """Keeps overwriting a model-cache file with other contents through its own fd, unlocked."""

    def __init__(self, path: Path, contents: list[bytes]) -> None:
        super().__init__()
        self._path, self._contents, self.stop, self.writes = path, contents, threading.Event(), 0

    def run(self) -> None:
        fd = os.open(self._path, os.O_WRONLY)
        try:
            while not self.stop.is_set():
                blob = self._contents[self.writes % len(self._contents)]
                os.ftruncate(fd, 0)
                os.pwrite(fd, blob, 0)
                self.writes += 1
        finally:
            os.close(fd)


@pytest.fixture
def store(tmp_path: Path) -> IntegrityStore:
    return IntegrityStore.for_driver("com.example.test", "1.0", tmp_path / "integrity")


@pytest.mark.parametrize("during", ["load", "save"])
def test_a_tampering_thread_never_yields_a_mix(tmp_path: Path, store: IntegrityStore,
                                               during: str) -> None:
    valid = {seed: (model_blobs(seed, SIZES), data_blobs(seed)) for seed in ("A", "C")}
    other_model = model_blobs("B", SIZES)[0]  # another model's model cache
    outcomes = {"A": 0, "C": 0, "rejected": 0}
    with opened(tmp_path, "a", TOKEN_A) as files:
        save_cache(files, *valid["A"], store)
        tamperer = Tamperer(tmp_path / "a.model.0", [other_model, valid["A"][0][0],
                                                     valid["C"][0][0]])
        tamperer.start()
        try:
            for round_ in range(ROUNDS):
                if during == "save":
                    save_cache(files, *valid["AC"[round_ % 2]], store)
                try:
                    got = load_cache(files, store)
                except CacheError as exc:
                    assert "do not match" in str(exc) or "while it was read" in str(exc), exc
                    outcomes["rejected"] += 1
                    continue
                matches = [seed for seed, blobs in valid.items() if got == blobs]
                assert len(matches) == 1, "a load returned blobs of no valid save"
                outcomes[matches[0]] += 1
        finally:
            tamperer.stop.set()
            tamperer.join()
        assert tamperer.writes > 0
        save_cache(files, *valid["C"], store)
        assert load_cache(files, store) == valid["C"]
    assert sum(outcomes.values()) == ROUNDS


def test_four_processes_share_one_entry(tmp_path: Path) -> None:
    racer = Path(__file__).with_name("cache_racer.py")
    cache_dir, store_root = tmp_path / "cache", tmp_path / "integrity"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    procs = [subprocess.Popen([sys.executable, str(racer), str(cache_dir), str(store_root), "8"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(4)]
    results = []
    try:
        for proc in procs:
            out, err = proc.communicate(timeout=60)
            results.append((proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    for code, out, err in results:
        assert code == 0 and out.startswith("ok "), out + err
    assert sum(int(out.split()[2]) for _, out, _ in results) >= 1  # somebody compiled

    directory = CacheDirectory(cache_dir)
    store = IntegrityStore.for_driver("racer", "1", store_root)
    with directory.open(cache_racer.TOKEN, (2, 1), cache_racer.META) as entry:
        if not entry.hit:  # the last round may have discarded it: compile once more
            save_cache(entry.files, *cache_racer.blobs(), store)
            entry.commit()
    with directory.open(cache_racer.TOKEN, (2, 1), cache_racer.META) as entry:
        assert entry.hit
        assert load_cache(entry.files, store) == cache_racer.blobs()
    assert not [p for p in cache_dir.iterdir() if ".tmp-" in p.name]
