"""What the engine connectors share about pages whose read failed.

A page the master holds but that cannot be read back whole (its CRC32C fails, the read errs, the object has another
size) would be found again by every lookup and fail again on every load: an engine that trusts the lookup loads it
over and over (a scheduler livelocks on it), and a write of the same page never repairs it, since a committed key
counts as stored. So a connector answers such a page as missing until it is written again, and writes it with
overwrite, replacing the committed copy that failed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Iterable, List, Optional, Sequence

from . import errors

UNREADABLE_KEPT = 1 << 16  # keys remembered at most; the oldest are forgotten first


class UnreadableKeys:
    """Object keys whose last read failed although the master held them. Thread-safe: ``_lock`` guards ``_keys``; it
    is held only to change or test the set and is the innermost lock (a connector may hold its own lock around a call)."""

    def __init__(self, kept: int = UNREADABLE_KEPT):
        self._kept = kept
        self._keys: "OrderedDict[str, None]" = OrderedDict()
        self._lock = threading.Lock()

    def add(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._keys[key] = None
                self._keys.move_to_end(key)
            while len(self._keys) > self._kept:
                self._keys.popitem(last=False)

    def discard(self, keys: Iterable[str]) -> None:
        with self._lock:
            for key in keys:
                self._keys.pop(key, None)

    def __contains__(self, key: str) -> bool:
        with self._lock:
            return key in self._keys

    def which(self, keys: Sequence[str]) -> List[bool]:
        """Per key, whether it is unreadable."""
        with self._lock:
            return [key in self._keys for key in keys]

    def __len__(self) -> int:
        with self._lock:
            return len(self._keys)


def read_failed(code: int, wanted: int) -> bool:
    """Whether a read's outcome (``code``: bytes read or a negative code) failed on an object the master held: anything
    but the whole object, except OBJECT_NOT_FOUND (nothing there to repair)."""
    return code != wanted and code != errors.OBJECT_NOT_FOUND


def note_reads(keys: Sequence[str], codes: Sequence[int], wanted: Sequence[int], unreadable: UnreadableKeys) -> List[bool]:
    """Per key, whether its read returned the whole object; records the keys whose read failed in ``unreadable``."""
    loaded = [code == size for code, size in zip(codes, wanted)]
    failed = [key for key, code, size in zip(keys, codes, wanted) if read_failed(code, size)]
    if failed:
        unreadable.add(failed)
    return loaded


def put_all(client: Any, keys: Sequence[str], buffers: Sequence[Any], unreadable: UnreadableKeys,
            kv_blocks: Optional[Sequence[Any]] = None) -> List[bool]:
    """Writes key i from buffers[i]; per key, whether it is stored. A key already committed counts as stored (keys name
    their content), except an unreadable one: it is written with overwrite, and readable again once that succeeds.
    ``kv_blocks``: None, or per key the engine blocks it holds (mcctl.kv_events.KvBlocks or None), for KV-aware
    routers."""
    again = unreadable.which(keys)
    stored = [False] * len(keys)
    for overwrite in (False, True):
        picked = [i for i, flag in enumerate(again) if flag == overwrite]
        if not picked:
            continue
        codes = client.batch_put_from([keys[i] for i in picked], [buffers[i] for i in picked], overwrite=overwrite,
                                      kv_blocks=None if kv_blocks is None else [kv_blocks[i] for i in picked])
        for i, code in zip(picked, codes):
            stored[i] = code == 0 or (code == errors.OBJECT_ALREADY_EXISTS and not overwrite)
    if any(again):
        unreadable.discard(key for key, flag, ok in zip(keys, again, stored) if flag and ok)
    return stored
