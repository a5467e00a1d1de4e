"""mcctl as a storage backend of SGLang HiCache (``--hicache-storage-backend dynamic``).

Pages move straight between SGLang's host memory pool and the bucket files: ``batch_set_v1`` writes each
page's regions (one for MLA, K then V otherwise) with one gather write, ``batch_get_v1`` reads them back
with one scatter read. Follows ``python/sglang/srt/mem_cache/hicache_storage.py`` of sgl-project/sglang
at commit 001067ff (HiCacheStorage, HiCacheStorageConfig, STORAGE_BATCH_SIZE = 128); see docs/sglang.md.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, List, Optional

from . import errors
from .client import Client, RecentLookups

logger = logging.getLogger(__name__)

STORAGE_BATCH_SIZE = 128  # SGLang's most pages per storage call
LOOKUPS_KEPT = 16  # batch_exists answers kept for the prefetches that follow them

try:  # pragma: no cover - only where SGLang is installed
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, HiCacheStorageConfig
except ImportError:
    from abc import ABC, abstractmethod

    @dataclass
    class HiCacheStorageConfig:  # the fields of SGLang's config this backend reads
        tp_rank: int = 0
        tp_size: int = 1
        pp_rank: int = 0
        pp_size: int = 1
        attn_cp_rank: int = 0
        attn_cp_size: int = 1
        is_mla_model: bool = False
        enable_storage_metrics: bool = False
        is_page_first_layout: bool = True
        model_name: Optional[str] = None
        dp_rank: int = 0
        dp_size: int = 1
        extra_config: Optional[dict] = None

    class HiCacheStorage(ABC):
        """Stand-in with the methods of SGLang's base class, for machines without SGLang."""

        def register_mem_pool_host(self, mem_pool_host):
            self.mem_pool_host = mem_pool_host

        def batch_get_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        def batch_set_v1(self, keys, host_indices, extra_info=None):
            raise NotImplementedError()

        def batch_exists_v2(self, keys, pool_transfers=None, extra_info=None):
            raise NotImplementedError()

        def batch_get_v2(self, transfers, extra_info=None):
            raise NotImplementedError()

        def batch_set_v2(self, transfers, extra_info=None):
            raise NotImplementedError()

        @abstractmethod
        def get(self, key, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_get(self, keys, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def set(self, key, value=None, target_location=None, target_sizes=None):
            pass

        @abstractmethod
        def batch_set(self, keys, values=None, target_locations=None, target_sizes=None):
            pass

        @abstractmethod
        def exists(self, key):
            pass

        def batch_exists(self, keys, extra_info=None):
            for i, key in enumerate(keys):
                if not self.exists(key):
                    return i
            return len(keys)

        def clear(self):
            pass

        def get_stats(self):
            return None


def key_suffix(config: Any) -> str:
    """What makes a page key this rank's: model, TP rank and size (not for MLA, whose ranks hold the
    same bytes), PP and attention-CP position, so two ranks' pages never share a key."""
    model = "-".join((config.model_name or "").split("/"))
    suffix = f"_{model}"
    if not config.is_mla_model:
        suffix += f"_{config.tp_rank}_{config.tp_size}"
    if getattr(config, "pp_size", 1) > 1:
        suffix += f"_pp{config.pp_rank}_{config.pp_size}"
    if getattr(config, "attn_cp_size", 1) > 1:
        suffix += f"_cp{config.attn_cp_rank}_{config.attn_cp_size}"
    return suffix


class McctlStore(HiCacheStorage):
    """HiCache's L3 on mcctl. Extra config keys: ``master`` (host:port), ``tenant``, ``root``, ``timeout``,
    ``read_memory_replicas`` (default true: read promoted pages from the nodes' DRAM; see mcctl.Client),
    ``read_threads`` (threads reading one batch's pages side by side; default and meaning as mcctl.Client's)."""

    def __init__(self, storage_config: Any, kwargs: Optional[dict] = None):
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        if "master" not in extra:
            raise ValueError("mcctl HiCache backend: extra config has no 'master' (host:port of mcctl's master), e.g. "
                             '{"backend_name":"mcctl","module_path":"mcctl.sglang","class_name":"McctlStore",'
                             '"interface_v1":1,"master":"host:50051"}')
        self.config = storage_config
        self.suffix = key_suffix(storage_config)
        # With MLA every TP rank holds the same page: rank 0 writes it, every rank reads it.
        self.writes = not storage_config.is_mla_model or storage_config.tp_rank == 0
        self.client = Client(master=extra["master"], tenant=extra.get("tenant", "default"),
                             timeout=float(extra.get("timeout", 10.0)), root=extra.get("root"),
                             read_memory_replicas=extra.get("read_memory_replicas", True),
                             read_threads=extra.get("read_threads"))
        self.mem_pool_host = None
        # What batch_exists looked up, for the batch_get_v1 calls of the prefetch that follows (from another thread).
        self._lookups = RecentLookups(LOOKUPS_KEPT)

    def _key(self, key: str) -> str:
        return key + self.suffix

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.mem_pool_host = mem_pool_host

    # ---- zero-copy (interface_v1) ----

    def _page_regions(self, keys: List[str], host_indices: Any) -> List[List[tuple]]:
        """Each page's (pointer, size) regions in the host pool, in the order they form the object."""
        if self.mem_pool_host is None:
            raise RuntimeError("mcctl HiCache backend: register_mem_pool_host was not called before a v1 transfer")
        pointers, sizes = self.mem_pool_host.get_page_buffer_meta(host_indices)
        pointers = list(pointers)
        sizes = list(sizes) if isinstance(sizes, (list, tuple)) else [int(sizes)] * len(pointers)
        if not keys or len(pointers) % len(keys) or len(sizes) != len(pointers):
            raise ValueError(f"mcctl HiCache backend: {len(pointers)} buffer regions and {len(sizes)} sizes "
                             f"for {len(keys)} pages; expected the same whole number of regions per page")
        per_page = len(pointers) // len(keys)
        return [[(int(pointers[p * per_page + r]), int(sizes[p * per_page + r])) for r in range(per_page)]
                for p in range(len(keys))]

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        regions = self._page_regions(keys, host_indices)
        done: List[bool] = []
        for start in range(0, len(keys), STORAGE_BATCH_SIZE):
            part = slice(start, start + STORAGE_BATCH_SIZE)
            wanted = [sum(size for _, size in r) for r in regions[part]]
            names = [self._key(k) for k in keys[part]]
            got = self.client.batch_get_into(names, regions[part], mappings=self._lookups.covering(names))
            done.extend(g == w for g, w in zip(got, wanted))
        return done

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        if not self.writes:
            return [True] * len(keys)
        regions = self._page_regions(keys, host_indices)
        done: List[bool] = []
        for start in range(0, len(keys), STORAGE_BATCH_SIZE):
            part = slice(start, start + STORAGE_BATCH_SIZE)
            codes = self.client.batch_put_from([self._key(k) for k in keys[part]], regions[part])
            # A page key names its content (chained hashes), so a committed one already holds these bytes.
            done.extend(code in (0, errors.OBJECT_ALREADY_EXISTS) for code in codes)
        return done

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """The number of leading pages present. The pages are looked up with their mappings (one call per 128),
        kept for the batch_get_v1 of the prefetch that follows, which then reads them without a call of its own
        while their read lease lasts."""
        hits = 0
        for start in range(0, len(keys), STORAGE_BATCH_SIZE):
            mappings = self.client.lookup([self._key(k) for k in keys[start:start + STORAGE_BATCH_SIZE]])
            self._lookups.add(mappings)
            leading = mappings.leading_hits()
            hits += leading
            if leading < len(mappings):
                return hits
        return hits

    # ---- the older per-tensor interface ----

    @staticmethod
    def _target(location: Any, size: Any) -> Any:
        if isinstance(location, int):
            if size is None:
                raise ValueError("mcctl HiCache backend: a pointer target needs its size")
            return (location, int(size))
        return location

    def get(self, key: str, target_location: Any = None, target_sizes: Any = None) -> Any:
        if target_location is not None:
            got = self.client.batch_get_into([self._key(key)], [self._target(target_location, target_sizes)])[0]
            return target_location if got >= 0 else None
        data = self.client.get(self._key(key))
        if data is None:
            return None
        import torch
        return torch.frombuffer(bytearray(data), dtype=torch.uint8)

    def batch_get(self, keys: List[str], target_locations: Any = None, target_sizes: Any = None) -> List[Any]:
        if target_locations is None:
            return [self.get(key) for key in keys]
        sizes = target_sizes if target_sizes is not None else [None] * len(keys)
        got = self.client.batch_get_into([self._key(k) for k in keys],
                                         [self._target(t, s) for t, s in zip(target_locations, sizes)])
        return [t if g >= 0 else None for t, g in zip(target_locations, got)]

    def set(self, key: str, value: Any = None, target_location: Any = None, target_sizes: Any = None) -> bool:
        return self.batch_set([key], None if value is None else [value],
                              None if target_location is None else [target_location],
                              None if target_sizes is None else [target_sizes])

    def batch_set(self, keys: List[str], values: Any = None, target_locations: Any = None, target_sizes: Any = None) -> bool:
        if not self.writes:
            return True
        if values is not None:
            sources = [v.contiguous() if hasattr(v, "contiguous") else v for v in values]
        elif target_locations is not None:
            sizes = target_sizes if target_sizes is not None else [None] * len(keys)
            sources = [self._target(t, s) for t, s in zip(target_locations, sizes)]
        else:
            raise ValueError("mcctl HiCache backend: batch_set needs values or target_locations")
        codes = self.client.batch_put_from([self._key(k) for k in keys], sources)
        return all(code in (0, errors.OBJECT_ALREADY_EXISTS) for code in codes)

    def exists(self, key: str) -> bool:
        return self.client.is_exist(self._key(key))

    def clear(self) -> None:
        """Removes this rank's pages (keys with this rank's suffix) from the tenant."""
        mine = [k for k in self.client.list_keys() if k.endswith(self.suffix)]
        if mine:
            self.client.batch_remove(mine)

    def get_stats(self):
        return None

    def close(self) -> None:
        self.client.close()
