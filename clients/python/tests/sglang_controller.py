"""SGLang's HiCache storage threads as its cache controllers run them at 001067ff (managers/cache_controller.py and
mem_cache/hybrid_cache/hybrid_cache_controller.py), for one TP rank: a prefetch thread that asks the backend what it
holds and reads it in storage batches of 128 pages, and a backup thread that writes in batches of 128, both calling one
backend at once. Written for these tests from SGLang's controllers; no collectives (one rank, or ranks driven one by
one), no device side."""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

import torch

STORAGE_BATCH_SIZE = 128


@dataclass
class Operation:
    hashes: List[str]
    host_indices: torch.Tensor  # KV host indices: page_size slots per page
    pool_transfers: Optional[List[Any]] = None
    done: threading.Event = field(default_factory=threading.Event)
    pages: int = 0  # pages read (prefetch: the leading run) or written (backup)
    pool_hits: Dict[str, int] = field(default_factory=dict)
    error: Optional[BaseException] = None

    def wait(self, limit_s: float = 60.0) -> "Operation":
        assert self.done.wait(limit_s), "the operation never finished"
        if self.error is not None:
            raise self.error
        return self


class CacheController:
    """The storage side of a HiCache controller of one rank. ``backup_skip``: an MLA model's rank other than TP 0,
    which writes no KV page and, of the side pools, only Mamba states."""

    def __init__(self, hicache: Any, backend: Any, page_size: int, backup_skip: bool = False):
        self.hicache, self.backend, self.page_size, self.backup_skip = hicache, backend, page_size, backup_skip
        self._prefetches: "queue.Queue[Optional[Operation]]" = queue.Queue()
        self._backups: "queue.Queue[Optional[Operation]]" = queue.Queue()
        self._threads = [threading.Thread(target=self._serve, args=(self._prefetches, self._prefetch), name="prefetch"),
                         threading.Thread(target=self._serve, args=(self._backups, self._backup), name="backup")]
        for t in self._threads:
            t.start()

    def prefetch(self, op: Operation) -> Operation:
        self._prefetches.put(op)
        return op

    def backup(self, op: Operation) -> Operation:
        self._backups.put(op)
        return op

    def close(self) -> None:
        self._prefetches.put(None)
        self._backups.put(None)
        for t in self._threads:
            t.join(30)

    @staticmethod
    def _serve(work: "queue.Queue[Optional[Operation]]", run) -> None:
        while True:
            op = work.get()
            if op is None:
                return
            try:
                run(op)
            except BaseException as e:  # a backend that raises kills SGLang's thread: reported to the test instead
                op.error = e
            op.done.set()

    # ---- the prefetch thread ----

    def _prefetch(self, op: Operation) -> None:
        extra = self.hicache.HiCacheStorageExtraInfo()
        if op.pool_transfers:
            hit = self.backend.batch_exists_v2(op.hashes, op.pool_transfers, extra)
            assert isinstance(hit, self.hicache.PoolTransferResult), f"batch_exists_v2 answered {hit!r}"
            hit_pages = hit.kv_hit_pages
        else:
            hit_pages = 0
            for start in range(0, len(op.hashes), STORAGE_BATCH_SIZE):
                batch = op.hashes[start:start + STORAGE_BATCH_SIZE]
                found = self.backend.batch_exists(batch, extra)
                assert isinstance(found, int), f"batch_exists answered {found!r}"
                hit_pages += found
                if found < len(batch):
                    break
        hashes = op.hashes[:hit_pages]
        kv_derived = [t for t in op.pool_transfers or [] if t.indices_from_pool == self.hicache.PoolName.KV]
        completed = 0
        for start in range(0, len(hashes), STORAGE_BATCH_SIZE):
            batch = hashes[start:start + STORAGE_BATCH_SIZE]
            indices = op.host_indices[start * self.page_size:(start + len(batch)) * self.page_size]
            results = self.backend.batch_get_v1(batch, indices, extra)
            assert isinstance(results, list) and len(results) == len(batch), f"batch_get_v1 answered {results!r}"
            hits = [results.index(False) if False in results else len(results)]
            if kv_derived:
                side = self.backend.batch_get_v2([self.hicache.PoolTransfer(name=t.name, host_indices=indices, keys=batch)
                                                  for t in kv_derived])
                hits += list(self.hicache.count_pool_hits(side).values())
            completed += min(hits)
            if min(hits) < len(batch):
                break
        op.pages = completed
        others = [t for t in op.pool_transfers or [] if t.indices_from_pool != self.hicache.PoolName.KV]
        if others and completed == len(hashes):
            synced = [self._sync_trailing_keys(t, hashes) for t in others]
            results = self.backend.batch_get_v2(synced)
            assert isinstance(results, dict), f"batch_get_v2 answered {results!r}"
            op.pool_hits = {str(k): v for k, v in self.hicache.count_pool_hits(results).items()}

    def _sync_trailing_keys(self, transfer: Any, hashes: List[str]) -> Any:
        """A trailing-pages pool reads the last pages of what storage holds, not of what was asked for."""
        if transfer.hit_policy != self.hicache.PoolHitPolicy.TRAILING_PAGES:
            return transfer
        window = len(transfer.keys) if transfer.keys else 1
        keys = hashes[max(0, len(hashes) - window):]
        slots = len(transfer.host_indices) // window
        return replace(transfer, keys=keys, host_indices=transfer.host_indices[:len(keys) * slots])

    # ---- the backup thread ----

    def _backup(self, op: Operation) -> None:
        transfers = [t for t in op.pool_transfers or []
                     if not self.backup_skip or t.name == self.hicache.PoolName.MAMBA]
        if transfers:
            for t in transfers:
                if t.indices_from_pool == self.hicache.PoolName.KV:
                    t.host_indices, t.keys = op.host_indices, t.keys or op.hashes
            results = self.backend.batch_set_v2(transfers)
            assert isinstance(results, dict), f"batch_set_v2 answered {results!r}"
            op.pool_hits = {str(k): v for k, v in self.hicache.count_pool_hits(results).items()}
        if self.backup_skip:
            return
        for start in range(0, len(op.hashes), STORAGE_BATCH_SIZE):
            batch = op.hashes[start:start + STORAGE_BATCH_SIZE]
            indices = op.host_indices[start * self.page_size:(start + len(batch)) * self.page_size]
            results = self.backend.batch_set_v1(batch, indices, self.hicache.HiCacheStorageExtraInfo())
            assert isinstance(results, list) and len(results) == len(batch), f"batch_set_v1 answered {results!r}"
            if not all(results):
                break
            op.pages += len(batch)
