"""The compilation cache: integrity store, TOCTOU-safe save/load, cache directory.

See ``docs/cache.md``.

Driver side (a library for driver and plugin authors): :class:`IntegrityStore` keeps token ->
SHA-256 per driver version; :func:`save_cache` / :func:`load_cache` move blobs through the
:class:`CacheFiles` fds, hashing internal buffers, never the files. Runtime side:
:class:`CacheDirectory` finds or creates an entry's files by token and commits them atomically.
Only re-exports; see docs/cache.md.
"""

from nnrt.cache.codec import DEFAULT_MAX_BYTES as DEFAULT_MAX_BYTES
from nnrt.cache.codec import cache_digest as cache_digest
from nnrt.cache.codec import load_cache as load_cache
from nnrt.cache.codec import save_cache as save_cache
from nnrt.cache.directory import CacheDirectory as CacheDirectory
from nnrt.cache.directory import EntryInfo as EntryInfo
from nnrt.cache.directory import default_cache_dir as default_cache_dir
from nnrt.cache.entry import CacheEntry as CacheEntry
from nnrt.cache.files import MAX_FILES as MAX_FILES
from nnrt.cache.files import TOKEN_BYTES as TOKEN_BYTES
from nnrt.cache.files import CacheFiles as CacheFiles
from nnrt.cache.locking import DEFAULT_LOCK_TIMEOUT as DEFAULT_LOCK_TIMEOUT
from nnrt.cache.meta import EntryMeta as EntryMeta
from nnrt.cache.store import IntegrityStore as IntegrityStore
from nnrt.cache.store import StoreInfo as StoreInfo
from nnrt.cache.store import default_store_root as default_store_root
from nnrt.cache.store import list_stores as list_stores
from nnrt.cache.store import remove_store as remove_store

__all__ = [
    "DEFAULT_LOCK_TIMEOUT",
    "DEFAULT_MAX_BYTES",
    "MAX_FILES",
    "TOKEN_BYTES",
    "CacheDirectory",
    "CacheEntry",
    "CacheFiles",
    "EntryInfo",
    "EntryMeta",
    "IntegrityStore",
    "StoreInfo",
    "cache_digest",
    "default_cache_dir",
    "default_store_root",
    "list_stores",
    "load_cache",
    "remove_store",
    "save_cache",
]
