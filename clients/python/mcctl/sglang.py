"""mcctl as a storage backend of SGLang HiCache (``--hicache-storage-backend dynamic``).

Pages move straight between SGLang's host memory pools and the bucket files: a page is one object whose regions
are the ones its pool's ``get_page_buffer_meta`` gives (one per page for MLA, K then V for MHA, K and V per layer for
``layer_first``, a temporal and N conv states for Mamba), written with one gather write and read back with one
scatter read. The KV pool moves through the zero-copy v1 calls; every other pool of a hybrid model (Mamba, SWA, the
DSA indexer, DeepSeek-V4's compressed pools, draft KV) through the v2 calls. With the ``page_head`` layout and
``tp_lcm_size`` set, KV pages are stored per virtual rank so that instances of different TP sizes share them.

Follows sgl-project/sglang: ``python/sglang/srt/mem_cache/hicache_storage.py`` at commit 001067ff (HiCacheStorage,
PoolTransfer, PoolTransferResult, STORAGE_BATCH_SIZE = 128), the hybrid controller
``python/sglang/srt/mem_cache/hybrid_cache/hybrid_cache_controller.py`` at 00343773 and the host pools of
``python/sglang/srt/mem_cache/pool_host/``; docs/sglang.md lists every file and commit read.
"""

from __future__ import annotations

import logging
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import errors
from ._unreadable import UnreadableKeys, note_reads, put_all
from .client import Client, RecentLookups
from .kv_events import KvBlocks

logger = logging.getLogger(__name__)

try:  # SGLang's own classes wherever SGLang is installed
    from sglang.srt.mem_cache.hicache_storage import HiCacheStorage, PoolTransferResult
except ImportError:  # only what this module needs to load and answer without SGLang
    from typing import NamedTuple

    HiCacheStorage = object  # type: ignore[misc,assignment]

    class PoolTransferResult(NamedTuple):  # type: ignore[no-redef]
        kv_hit_pages: int
        extra_pool_hit_pages: dict

STORAGE_BATCH_SIZE = 128  # SGLang's most pages per storage call
LOOKUPS_KEPT = 16  # lookups kept for the prefetches that follow them

KV = "kv"
MAMBA = "mamba"
ALL_PAGES = "all_pages"
TRAILING_PAGES = "trailing_pages"


def pool_name(name: Any) -> str:
    """SGLang's PoolName and PoolHitPolicy are str enums; their value, or the string given."""
    return str(getattr(name, "value", name))


def key_suffix(config: Any, tp_rank: Optional[int] = None, tp_size: Optional[int] = None, per_rank: bool = False) -> str:
    """What makes a page key this rank's: model, TP rank and size (not for MLA, whose ranks hold the same bytes,
    unless ``per_rank``), PP and attention-CP position, so two ranks' pages never share a key. ``tp_rank`` and
    ``tp_size`` replace the config's (a virtual rank of a split page)."""
    model = "-".join((config.model_name or "").split("/"))
    suffix = f"_{model}"
    if per_rank or not config.is_mla_model:
        rank = config.tp_rank if tp_rank is None else tp_rank
        size = config.tp_size if tp_size is None else tp_size
        suffix += f"_{rank}_{size}"
    if getattr(config, "pp_size", 1) > 1:
        suffix += f"_pp{config.pp_rank}_{config.pp_size}"
    if getattr(config, "attn_cp_size", 1) > 1:
        suffix += f"_cp{config.attn_cp_rank}_{config.attn_cp_size}"
    return suffix


def page_block_hash(key: Any) -> Optional[int]:
    """The block hash SGLang's own KV events give the page whose HiCache key is ``key`` (the page's SHA-256 in hex):
    its first 16 hex digits as a 64-bit number (SGLang's ``hash_str_to_int64``, read unsigned). None for a key that is
    not such a hash: its page is stored without blocks and announced not at all."""
    if not isinstance(key, str) or len(key) < 16:
        return None
    try:
        return int(key[:16], 16)
    except ValueError:
        return None


def page_blocks(keys: Sequence[str], extra_info: Any, page_size: int) -> Optional[List[Optional[KvBlocks]]]:
    """Per page, the KV block it holds for KV-aware routers: its hash, the hash of the page before it as parent (the
    previous key of the call, or for the first the last of ``extra_info.prefix_keys`` when SGLang passes them), and the
    page size in tokens. HiCache passes no token ids to a backend, so none are given. None when no key is a hash."""
    prefix = getattr(extra_info, "prefix_keys", None) or []
    parent = page_block_hash(prefix[-1]) if prefix else None
    blocks: List[Optional[KvBlocks]] = []
    for key in keys:
        own = page_block_hash(key)
        blocks.append(None if own is None else KvBlocks(block_hashes=[own], parent_block_hash=parent,
                                                        block_size=max(0, int(page_size or 0))))
        parent = own
    return blocks if any(b is not None for b in blocks) else None


def _head_sharded(host_pool: Any) -> bool:
    """Whether a pool holds this TP rank's share of the heads (SGLang's MHA host pools), so its pages differ per rank
    even in an MLA model."""
    return any("MHA" in cls.__name__ for cls in type(host_pool).__mro__)


class _Pages:
    """One call's pages as objects: ``names[j]`` is object j's key, ``regions[j]`` its (pointer, size) regions in the
    host pool, and page p is the objects ``per_page * p`` up to ``per_page * (p + 1)``."""

    __slots__ = ("names", "regions", "per_page")

    def __init__(self, names: List[str], regions: List[List[Tuple[int, int]]], per_page: int):
        self.names, self.regions, self.per_page = names, regions, per_page

    def part(self, first: int, last: int) -> "_Pages":
        """Pages [first, last)."""
        a, b = first * self.per_page, last * self.per_page
        return _Pages(self.names[a:b], self.regions[a:b], self.per_page)

    def per_object(self, per_page: Optional[Sequence[Any]]) -> Optional[List[Any]]:
        """A value per page spread to each of the page's objects (None stays None)."""
        if per_page is None:
            return None
        return [per_page[j // self.per_page] for j in range(len(self.names))]

    def by_page(self, per_object: Sequence[bool]) -> List[bool]:
        return [all(per_object[p * self.per_page:(p + 1) * self.per_page]) for p in range(len(per_object) // self.per_page)]


def _regions(meta: Tuple[Any, Any], pages: int, what: str) -> List[List[Tuple[int, int]]]:
    """A pool's (pointers, sizes) as each page's regions, in the order they form the page."""
    pointers, sizes = meta
    pointers = [int(p) for p in pointers]
    sizes = [int(s) for s in sizes] if isinstance(sizes, (list, tuple)) else [int(sizes)] * len(pointers)
    if not pages or len(pointers) % pages or len(sizes) != len(pointers):
        raise ValueError(f"mcctl HiCache backend: {what} gave {len(pointers)} buffer regions and {len(sizes)} sizes "
                         f"for {pages} pages; expected the same whole number of regions per page")
    per_page = len(pointers) // pages
    return [list(zip(pointers[p * per_page:(p + 1) * per_page], sizes[p * per_page:(p + 1) * per_page]))
            for p in range(pages)]


def _leading(loaded: List[bool]) -> List[bool]:
    """Pages after the first one that failed are not reported as loaded: SGLang uses the leading run only."""
    for i, ok in enumerate(loaded):
        if not ok:
            return loaded[:i] + [False] * (len(loaded) - i)
    return loaded


class McctlStore(HiCacheStorage):
    """HiCache's L3 on mcctl. Extra config keys: ``master`` (host:port), ``tenant``, ``root``, ``timeout``,
    ``read_memory_replicas`` (default true: read promoted pages from the nodes' DRAM; see mcctl.Client),
    ``read_threads`` (threads reading one batch's pages side by side; default and meaning as mcctl.Client's).
    SGLang's own ``tp_lcm_size`` arrives in the storage config, not here.

    Thread-safe: SGLang's prefetch and backup threads call it at once. It holds no lock of its own; the lookups kept
    for prefetches and the unreadable keys each have one (innermost, held only to add or copy).
    """

    def __init__(self, storage_config: Any, kwargs: Optional[dict] = None):
        extra = dict(getattr(storage_config, "extra_config", None) or {})
        if "master" not in extra:
            raise ValueError("mcctl HiCache backend: extra config has no 'master' (host:port of mcctl's master), e.g. "
                             '{"backend_name":"mcctl","module_path":"mcctl.sglang","class_name":"McctlStore",'
                             '"interface_v1":1,"master":"host:50051"}')
        self.config = storage_config
        self.suffix = key_suffix(storage_config)
        self.rank_suffix = key_suffix(storage_config, per_rank=True)
        # With MLA every TP rank holds the same KV page: rank 0 writes it, every rank reads it.
        self.writes = not storage_config.is_mla_model or storage_config.tp_rank == 0
        self.split = 1
        if getattr(storage_config, "should_split_heads", False):
            lcm = getattr(storage_config, "tp_lcm_size", None)
            if not lcm or lcm % storage_config.tp_size:
                raise ValueError(f"mcctl HiCache backend: tp_lcm_size {lcm!r} is not a multiple of tp_size "
                                 f"{storage_config.tp_size}; set tp_lcm_size to the LCM of every TP size that shares pages")
            self.split = lcm // storage_config.tp_size
        # A split page is stored as one object per virtual rank: as the pages of an instance whose TP size is tp_lcm_size.
        self.virtual_suffixes = [self.suffix] if self.split == 1 else [
            key_suffix(storage_config, tp_rank=storage_config.tp_rank * self.split + i, tp_size=storage_config.tp_lcm_size)
            for i in range(self.split)]
        self.client = Client(master=extra["master"], tenant=extra.get("tenant", "default"),
                             timeout=float(extra.get("timeout", 10.0)), root=extra.get("root"),
                             read_memory_replicas=extra.get("read_memory_replicas", True),
                             read_threads=extra.get("read_threads"), io=extra.get("io"),
                             usrbio_library=extra.get("usrbio_library"))
        self.mem_pool_host = None
        self.registered_pools: Dict[str, Any] = {}
        # What the existence checks looked up, for the reads of the prefetch that follows (on another thread).
        self._lookups = RecentLookups(LOOKUPS_KEPT)
        self.unreadable = UnreadableKeys()

    def register_mem_pool_host(self, mem_pool_host: Any) -> None:
        self.mem_pool_host = mem_pool_host

    def register_mem_host_pool_v2(self, host_pool: Any, host_pool_name: Any) -> None:
        self.registered_pools[pool_name(host_pool_name)] = host_pool

    # ---- keys and objects ----

    def _key(self, key: str) -> str:
        """The object key of a KV page (unsplit)."""
        return key + self.suffix

    def _per_rank(self, name: str, host_pool: Any) -> bool:
        """Whether a pool's pages are this TP rank's own: every pool but MLA's replicated ones. Mamba states are
        sharded by TP rank even in an MLA model, and so are MHA pools (a draft model's, say)."""
        return not self.config.is_mla_model or name == MAMBA or _head_sharded(host_pool)

    def pool_key(self, name: str, key: str) -> str:
        """The object key of page ``key`` of the registered pool ``name``: the page key, the pool's name, and the rank
        suffix, as SGLang's other backends name a pool's pages."""
        if name == KV:
            return self._key(key)
        host_pool = self.registered_pools.get(name)
        return f"{key}.{name}{self.rank_suffix if self._per_rank(name, host_pool) else self.suffix}"

    def _kv_pool(self) -> Any:
        if self.mem_pool_host is None:
            raise RuntimeError("mcctl HiCache backend: register_mem_pool_host was not called before a transfer")
        return self.mem_pool_host

    @staticmethod
    def _logical(host_pool: Any) -> bool:
        """A KV anchor that only allocates indices (DeepSeek-V4's): the side pools carry every byte."""
        return hasattr(host_pool, "kv_buffer") and host_pool.kv_buffer is None

    def _kv_pages(self, keys: List[str], host_indices: Any) -> _Pages:
        host = self._kv_pool()
        if self.split == 1:
            regions = _regions(host.get_page_buffer_meta(host_indices), len(keys), "the KV pool")
            return _Pages([self._key(k) for k in keys], regions, 1)
        # K and V of each head group, head group after head group: one object (K, V) per virtual rank.
        split = _regions(host.get_split_heads_page_buffer_meta(host_indices, self.split), len(keys), "the KV pool")
        names, regions = [], []
        for key, page in zip(keys, split):
            if len(page) != 2 * self.split:
                raise ValueError(f"mcctl HiCache backend: the KV pool split a page into {len(page)} regions, expected "
                                 f"K and V for each of {self.split} head groups")
            for i, suffix in enumerate(self.virtual_suffixes):
                names.append(key + suffix)
                regions.append(page[2 * i:2 * i + 2])
        return _Pages(names, regions, self.split)

    def _kv_names(self, key: str) -> List[str]:
        return [key + suffix for suffix in self.virtual_suffixes]

    # ---- moving pages ----

    def _read(self, pages: _Pages) -> List[bool]:
        loaded: List[bool] = []
        step = STORAGE_BATCH_SIZE * pages.per_page
        for start in range(0, len(pages.names), step):
            names, regions = pages.names[start:start + step], pages.regions[start:start + step]
            wanted = [sum(size for _, size in r) for r in regions]
            try:
                codes = self.client.batch_get_into(names, regions, mappings=self._lookups.covering(names))
            except errors.McctlError as e:  # refused before any read (a region the client cannot use): not loaded
                logger.error("mcctl HiCache backend: read of %d objects refused: %s", len(names), e)
                loaded.extend([False] * len(names))
                continue
            loaded.extend(note_reads(names, codes, wanted, self.unreadable))
        return _leading(pages.by_page(loaded))

    def _write(self, pages: _Pages, blocks: Optional[List[Optional[KvBlocks]]] = None) -> List[bool]:
        """Writes the pages; ``blocks``: per page, the KV block every one of its objects announces (a page stored as
        several objects, one per TP or virtual rank, names its block with each: a router applying the events in order
        sees the block gone as soon as one part of it is)."""
        stored: List[bool] = []
        step = STORAGE_BATCH_SIZE * pages.per_page
        per_object = pages.per_object(blocks)
        for start in range(0, len(pages.names), step):
            names = pages.names[start:start + step]
            try:
                stored.extend(put_all(self.client, names, pages.regions[start:start + step], self.unreadable,
                                      None if per_object is None else per_object[start:start + step]))
            except errors.McctlError as e:  # refused before any write (an object larger than a bucket): not stored
                logger.error("mcctl HiCache backend: write of %d objects refused: %s", len(names), e)
                stored.extend([False] * len(names))
        return pages.by_page(stored)

    def _present(self, names: List[str]) -> List[bool]:
        """Per object, whether it is there and readable; the answer is kept for the reads that follow."""
        mappings = self.client.lookup(names)
        self._lookups.add(mappings)
        unreadable = self.unreadable.which(names)
        return [found and not bad for found, bad in zip(mappings.found(), unreadable)]

    # ---- zero-copy (interface_v1): the KV pool ----

    def batch_get_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        if self._logical(self._kv_pool()):
            return [True] * len(keys)
        return self._read(self._kv_pages(keys, host_indices))

    def batch_set_v1(self, keys: List[str], host_indices: Any, extra_info: Any = None) -> List[bool]:
        if not keys:
            return []
        host = self._kv_pool()
        if not self.writes or self._logical(host):
            return [True] * len(keys)
        return self._write(self._kv_pages(keys, host_indices), page_blocks(keys, extra_info, getattr(host, "page_size", 0)))

    def batch_exists(self, keys: List[str], extra_info: Any = None) -> int:
        """The number of leading pages present. Looked up with their mappings (one master call per 128 pages), kept
        for the batch_get_v1 of the prefetch that follows, which then reads them without a call of its own while
        their read lease lasts. A page whose read failed counts as missing until it is written again."""
        hits = 0
        for start in range(0, len(keys), STORAGE_BATCH_SIZE):
            part = keys[start:start + STORAGE_BATCH_SIZE]
            try:
                present = self._present([name for key in part for name in self._kv_names(key)])
            except errors.McctlError as e:
                logger.warning("mcctl HiCache backend: existence check of %d pages failed, counted as misses: %s", len(part), e)
                return hits
            for p in range(len(part)):
                if not all(present[p * self.split:(p + 1) * self.split]):
                    return hits + p
            hits += len(part)
        return hits

    # ---- the v2 calls: every pool of a hybrid model ----

    def batch_exists_v2(self, keys: List[str], pool_transfers: Optional[List[Any]] = None,
                        extra_info: Any = None) -> Any:
        """The usable KV prefix: the longest one whose every pool can be restored. An ALL_PAGES pool needs every page
        of the prefix; a TRAILING_PAGES pool only the last ``len(transfer.keys)`` pages before where the prefix ends,
        so each pool allows a set of end points, and the prefix ends at the last one every pool allows."""
        kv_pages = len(keys) if self._logical(self._kv_pool()) else self.batch_exists(keys, extra_info)
        hits: Dict[Any, int] = {KV: kv_pages} if kv_pages else {}
        ends = set(range(1, kv_pages + 1))
        transfers = [t for t in pool_transfers or [] if pool_name(t.name) != KV]
        if transfers and kv_pages:
            names = [self.pool_key(pool_name(t.name), key) for t in transfers for key in keys[:kv_pages]]
            try:
                present = self._present(names)
            except errors.McctlError as e:
                logger.warning("mcctl HiCache backend: existence check of %d pool pages failed, counted as misses: %s",
                               len(names), e)
                present = [False] * len(names)
            for n, transfer in enumerate(transfers):
                there = present[n * kv_pages:(n + 1) * kv_pages]
                if pool_name(transfer.hit_policy) == TRAILING_PAGES:
                    window = max(1, len(transfer.keys or ()))
                    allowed = {end for end in range(1, kv_pages + 1) if all(there[max(0, end - window):end])}
                else:
                    first_missing = there.index(False) if False in there else kv_pages
                    allowed = set(range(1, first_missing + 1))
                if allowed:
                    hits[transfer.name] = max(allowed)
                ends &= allowed
        return PoolTransferResult(max(ends, default=0), hits)

    def batch_get_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        return {t.name: self._transfer(t, write=False, extra_info=extra_info) for t in transfers}

    def batch_set_v2(self, transfers: List[Any], extra_info: Any = None) -> Dict[Any, List[bool]]:
        return {t.name: self._transfer(t, write=True, extra_info=extra_info) for t in transfers}

    def _transfer(self, transfer: Any, write: bool, extra_info: Any = None) -> List[bool]:
        name = pool_name(transfer.name)
        keys = list(transfer.keys or [])
        if not keys:
            return []
        if name == KV:
            return (self.batch_set_v1 if write else self.batch_get_v1)(keys, transfer.host_indices, extra_info)
        host_pool = self.registered_pools.get(name)
        if host_pool is None:
            logger.error("mcctl HiCache backend: pool %r was never registered (register_mem_host_pool_v2); its %d pages "
                         "are not moved", name, len(keys))
            return [False] * len(keys)
        page_size = getattr(host_pool, "page_size", 1) or 1
        indices = transfer.host_indices
        count = 0 if indices is None else int(indices.numel() if hasattr(indices, "numel") else len(indices))
        if count != len(keys) * page_size:
            logger.error("mcctl HiCache backend: pool %r got %d host indices for %d pages of %d slots; its pages are not "
                         "moved", name, count, len(keys), page_size)
            return [False] * len(keys)
        if write and not self._per_rank(name, host_pool) and not self.writes:
            return [True] * len(keys)  # a replicated page: TP rank 0 writes it
        regions = _regions(host_pool.get_page_buffer_meta(indices), len(keys), f"pool {name!r}")
        pages = _Pages([self.pool_key(name, key) for key in keys], regions, 1)
        return self._write(pages) if write else self._read(pages)

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
        return all(put_all(self.client, [self._key(k) for k in keys], sources, self.unreadable))

    def exists(self, key: str) -> bool:
        return self.client.is_exist(self._key(key))

    def clear(self) -> None:
        """Removes this rank's pages from the tenant: its own, and with MLA on TP rank 0 the replicated ones."""
        suffixes = tuple({self.rank_suffix} | (set(self.virtual_suffixes) if self.writes else set()))
        mine = [k for k in self.client.list_keys() if k.endswith(suffixes)]
        if mine:
            self.client.batch_remove(mine)
            self.unreadable.discard(mine)

    def get_stats(self):
        return None

    def close(self) -> None:
        self.client.close()
