"""A process that saves or loads one shared entry through CacheDirectory (run by the race tests).

Usage: python cache_racer.py CACHE_DIR STORE_ROOT ROUNDS; prints "ok <hits> <misses>".
"""

from __future__ import annotations

import hashlib
import sys

from nnrt.cache import CacheDirectory, IntegrityStore, load_cache, save_cache

TOKEN = hashlib.sha256(b"shared entry").digest()
META = {"driver": "racer", "version": "1"}


def blobs() -> tuple[list[bytes], list[bytes]]:
    """The compiled model every racer produces (deterministic, as a real compile is)."""
    model = [hashlib.sha256(b"m%d" % i).digest() * 2048 for i in range(2)]
    return model, [hashlib.sha256(b"d").digest() * 4096]


def main(cache_dir: str, store_root: str, rounds: int) -> int:
    model, data = blobs()
    directory = CacheDirectory(cache_dir, lock_timeout=30)
    store = IntegrityStore.for_driver("racer", "1", store_root)
    hits = misses = 0
    for round_ in range(rounds):
        with directory.open(TOKEN, (2, 1), META) as entry:
            if entry.hit:
                if load_cache(entry.files, store, lock_timeout=30) != (model, data):
                    print("wrong blobs")
                    return 1
                entry.touch()
                hits += 1
            else:
                save_cache(entry.files, model, data, store, lock_timeout=30)
                entry.commit()
                misses += 1
        if round_ % 3 == 2:  # sometimes start over, as after a rejected hit
            with directory.open(TOKEN, (2, 1), META) as entry:
                if entry.hit:
                    entry.discard()
    print(f"ok {hits} {misses}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
