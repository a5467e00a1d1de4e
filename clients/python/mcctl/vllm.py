"""mcctl as a secondary tier of vLLM's OffloadingConnector (``vllm/v1/kv_offload/tiering``).

Two shapes of vLLM's tier interface are served, whichever the installed ``vllm/v1/kv_offload/tiering/base.py`` has:

- the one of commit 041410b9: jobs with ``block_ids``, ``lookup -> bool | None``, ``get_finished()``,
  ``get_request_offloading_context`` and ``request_finished``, results ``JobResult(job_id, success)``;
- the current one (commits ebbe4829 and cda0f324): jobs with ``block_ids`` or ``chunk_ids`` (``TransferJob``),
  ``lookup -> LookupResult`` (HIT, MISS, RETRY), ``get_finished_jobs()``, ``on_new_request`` /
  ``on_request_finished``, ``drain_jobs()``, results ``JobResult(job_id, success, successful_keys, ...)``, the
  ``medium`` class attribute and a back-pressure detector given to the constructor.

Every method runs in vLLM's scheduler and returns at once: transfers and existence checks run on this tier's own
threads. A load that fails for some blocks reports the blocks that did load, and the tier answers MISS for the others
until they are stored again, so the scheduler recomputes them instead of loading them over and over. See docs/vllm.md.
"""

from __future__ import annotations

import collections
import dataclasses
import inspect
import logging
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, Iterable, List, Optional, Sequence

from . import errors
from ._unreadable import UnreadableKeys, note_reads, put_all
from .client import Client, RecentLookups
from .kv_events import KvBlocks

logger = logging.getLogger(__name__)

try:  # vLLM's own classes wherever vLLM is installed
    from vllm.v1.kv_offload.tiering.base import JobResult, SecondaryTierManager
except ImportError:  # only what this module needs to load and answer without vLLM
    SecondaryTierManager = object  # type: ignore[misc,assignment]

    @dataclasses.dataclass
    class JobResult:  # type: ignore[no-redef]
        job_id: int
        success: bool
        successful_keys: Optional[List[bytes]] = None

try:  # the current interface's answers and request context
    from vllm.v1.kv_offload.base import LookupResult
except ImportError:
    LookupResult = None  # type: ignore[assignment,misc]
try:
    from vllm.v1.kv_offload.base import Medium
except ImportError:
    Medium = None  # type: ignore[assignment,misc]
try:
    from vllm.v1.kv_offload.base import RequestOffloadingContext
except ImportError:
    RequestOffloadingContext = None  # type: ignore[assignment,misc]
try:
    from vllm.v1.kv_offload.base import get_offload_block_hash
except ImportError:
    get_offload_block_hash = None  # type: ignore[assignment]

# The current interface answers a lookup with LookupResult and reports jobs through get_finished_jobs; the one of
# 041410b9 with True, False or None and get_finished.
CURRENT_INTERFACE = LookupResult is not None and hasattr(SecondaryTierManager, "get_finished_jobs")
HIT, MISS, RETRY = (LookupResult.HIT, LookupResult.MISS, LookupResult.RETRY) if CURRENT_INTERFACE else (True, False, None)
_RESULT_FIELDS = frozenset(f.name for f in dataclasses.fields(JobResult)) if dataclasses.is_dataclass(JobResult) else frozenset()
_BASE_PARAMETERS = frozenset(inspect.signature(SecondaryTierManager.__init__).parameters) \
    if SecondaryTierManager is not object else frozenset()

TIER_TYPE = "mcctl"
LOOKUPS_KEPT = 16  # lookup answers kept for the loads that follow them
VERDICTS_KEPT = 1 << 16  # lookup verdicts kept at most; the oldest are forgotten first
MODULE_PATH = "mcctl.vllm"
CLASS_NAME = "McctlTier"
CONFIG_KEYS = ("master", "tenant", "root", "timeout", "key_prefix", "io_threads", "lookup_ttl", "read_memory_replicas",
               "read_threads", "io", "usrbio_library")


def register() -> None:
    """Registers the tier type ``mcctl`` with vLLM's SecondaryTierFactory (a no-op without vLLM). Versions whose factory
    loads out-of-tree tiers by ``module_path`` need no registration: see docs/vllm.md."""
    try:
        from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
    except ImportError:
        return
    try:
        SecondaryTierFactory.register_tier(TIER_TYPE, MODULE_PATH, CLASS_NAME)
    except ValueError:
        pass  # registered already


def _ids(job: Any) -> List[int]:
    """The job's primary-tier rows: ``chunk_ids`` (TransferJob) or ``block_ids`` (JobMetadata), int64 numpy arrays."""
    ids = getattr(job, "chunk_ids", None)
    if ids is None:
        ids = job.block_ids
    return [int(i) for i in (ids.tolist() if hasattr(ids, "tolist") else ids)]


def block_hash_of(key: Any) -> Optional[bytes]:
    """The engine block hash inside an offload key: vLLM's ``get_offload_block_hash`` where it has one, else the key
    less its last 4 bytes (the KV cache group index vLLM's ``make_offload_key`` appends). None for a key too short to
    hold one: its block is stored without blocks and announced not at all."""
    if get_offload_block_hash is not None:
        return bytes(get_offload_block_hash(key))
    if isinstance(key, (bytes, bytearray)) and len(key) > 4:
        return bytes(key[:-4])
    return None


def key_blocks(keys: Sequence[Any]) -> Optional[List[Optional[KvBlocks]]]:
    """Per key, the block it holds for KV-aware routers, named as vLLM's own OffloadingConnector names the blocks of
    its tiers in KV events: the block hash only (its last 8 bytes as routers read a bytes hash), no parent, no tokens,
    block size 0. Every KV cache group's object of a block names the block's hash, as vLLM's own events do."""
    blocks: List[Optional[KvBlocks]] = []
    for key in keys:
        own = block_hash_of(key)
        blocks.append(None if own is None else KvBlocks(block_hashes=[own]))
    return blocks if any(b is not None for b in blocks) else None


def _result(job_id: int, success: bool, successful_keys: Optional[List[bytes]], seconds: float, size: int) -> Any:
    """A JobResult with what the installed class has room for; ``successful_keys`` only for a load that failed in
    part (None: every key shares the job's fate)."""
    fields: Dict[str, Any] = {"job_id": job_id, "success": success}
    optional = {"successful_keys": successful_keys, "transfer_time": seconds, "transfer_bytes": size}
    fields.update((name, value) for name, value in optional.items() if name in _RESULT_FIELDS)
    return JobResult(**fields)


class McctlTier(SecondaryTierManager):
    """Blocks (chunks) of the CPU primary tier stored as mcctl objects, one object per block.

    Tier config keys: ``master`` (host:port), ``tenant``, ``root``, ``timeout``, ``key_prefix`` (set it per model and
    parallel layout: vLLM's block hashes do not name the model), ``io_threads`` (default 2), ``lookup_ttl`` (seconds a
    lookup verdict is reused, default 2), ``read_memory_replicas`` (default true: read promoted blocks from the nodes'
    DRAM; see mcctl.Client), ``read_threads`` (threads reading one load's blocks side by side; default and meaning as
    mcctl.Client's), ``io`` and ``usrbio_library`` (how block bytes move: POSIX or 3FS's USRBIO; see mcctl.Client).

    Locks: ``_lock`` guards ``_verdicts``, ``_asking``, ``_to_ask``, ``_asker_running``, ``_storing`` and ``_pending``
    (and ``_idle`` waits on it); the unreadable keys' own lock nests inside it, the kept lookups' lock nests in no other;
    ``_finished`` is a deque (appends and pops are atomic). No lock is held during IO or a master call. Lookups are
    answered from verdicts: a key without one is queued, and one pool thread at a time looks every queued key up in one
    call, keeping the mappings for the loads that follow.
    """

    medium = Medium.STORAGE if Medium is not None else None

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str = TIER_TYPE,
                 master: Optional[str] = None, tenant: str = "default", root: Optional[str] = None,
                 timeout: float = 10.0, key_prefix: str = "", io_threads: int = 2, lookup_ttl: float = 2.0,
                 read_memory_replicas: bool = True, read_threads: Optional[int] = None, io: Optional[str] = None,
                 usrbio_library: Optional[str] = None, **rest: Any):
        base = {name: rest.pop(name) for name in ("backpressure", "backpressure_detector") if name in rest}
        if not master:
            raise ValueError("mcctl vLLM tier: tier config has no 'master' (host:port of mcctl's master), e.g. "
                             '{"type":"McctlTier","module_path":"mcctl.vllm","master":"host:50051","key_prefix":"llama-8b-tp1/"}')
        if rest:
            raise ValueError(f"mcctl vLLM tier: unknown tier config keys {sorted(rest)}; allowed are {', '.join(CONFIG_KEYS)}")
        refused = sorted(name for name, value in base.items() if value is not None and name not in _BASE_PARAMETERS)
        if refused:
            raise ValueError(f"mcctl vLLM tier: this vLLM's tier interface takes no {refused[0]!r}; remove it from the tier "
                             f"config or use a vLLM whose tiering/base.py has it")
        if SecondaryTierManager is object:
            self._offloading_spec, self._primary_kv_view, self.tier_type = offloading_spec, primary_kv_view, tier_type
        else:
            super().__init__(offloading_spec, primary_kv_view, tier_type,
                             **{k: v for k, v in base.items() if k in _BASE_PARAMETERS})
        view = primary_kv_view if primary_kv_view.ndim >= 1 else memoryview(primary_kv_view)
        self._block_bytes = view.strides[0]
        self._view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        self._blocks = len(self._view) // self._block_bytes
        self._prefix = key_prefix
        self._lookup_ttl = lookup_ttl
        self.client = Client(master=master, tenant=tenant, timeout=timeout, root=root,
                             read_memory_replicas=read_memory_replicas, read_threads=read_threads, io=io,
                             usrbio_library=usrbio_library)
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix="mcctl-vllm")
        self._lock = threading.Lock()
        self._verdicts: "OrderedDict[bytes, tuple]" = OrderedDict()  # key -> (present, monotonic time answered)
        self._asking: set = set()  # keys queued or being asked about
        self._to_ask: List[bytes] = []  # queued, in lookup order
        self._asker_running = False  # whether a pool thread is draining _to_ask
        self._lookups = RecentLookups(LOOKUPS_KEPT)  # the last lookups' mappings, for the loads that follow
        self._storing: Dict[bytes, int] = {}  # key -> stores in flight
        self._pending: set = set()  # job ids submitted and not yet finished
        self._finished: collections.deque = collections.deque()
        self._idle = threading.Condition(self._lock)
        # Object keys whose load failed although the master held them: MISS until stored again (with overwrite).
        self.unreadable = UnreadableKeys()

    def object_key(self, key: bytes) -> str:
        return self._prefix + (key.hex() if isinstance(key, (bytes, bytearray)) else str(key))

    def _block(self, block_id: int) -> memoryview:
        start = block_id * self._block_bytes
        return self._view[start:start + self._block_bytes]

    def _verdict(self, key: bytes, present: bool, now: float) -> None:
        """Under _lock."""
        self._verdicts[key] = (present, now)
        self._verdicts.move_to_end(key)
        if len(self._verdicts) > VERDICTS_KEPT:
            self._verdicts.popitem(last=False)

    # ---- lookups: answered from verdicts the tier's threads fetch ----

    def lookup(self, key: bytes, req_context: Any = None) -> Any:
        """HIT, MISS, or RETRY (ask again: a store of the key or the master's answer is in flight); True, False and
        None with the interface of 041410b9."""
        now = time.monotonic()
        with self._lock:
            if self._storing.get(key):
                return RETRY
            if self.object_key(key) in self.unreadable:
                return MISS  # its load failed: recomputed and stored again, never loaded again as it is
            verdict = self._verdicts.get(key)
            if verdict is not None and now - verdict[1] <= self._lookup_ttl:
                return HIT if verdict[0] else MISS
            if key in self._asking:
                return RETRY
            self._asking.add(key)
            self._to_ask.append(key)
            start = not self._asker_running
            self._asker_running = True
        if start:
            self._pool.submit(self._ask_waiting)
        return RETRY

    def _ask_waiting(self) -> None:
        """Asks the master about every key lookup() has queued, in one call for all that are waiting: the scheduler
        looks a request's blocks up one after another, and they queue while the call before is out."""
        while True:
            with self._lock:
                keys = self._to_ask
                self._to_ask = []
                if not keys:
                    self._asker_running = False
                    return
            try:
                # Looked up with their mappings, kept for the loads that follow: a load of blocks asked about here
                # reads them without a master call of its own while their read lease lasts.
                mappings = self.client.lookup([self.object_key(k) for k in keys])
                present = mappings.found()
                self._lookups.add(mappings)
            except errors.McctlError:
                present = [False] * len(keys)  # the master is away: misses, asked again after the TTL
            now = time.monotonic()
            with self._lock:
                for key, found in zip(keys, present):
                    self._asking.discard(key)
                    self._verdict(key, found, now)

    # ---- transfers ----

    def _submit(self, job: Any, work, load: bool) -> None:
        keys = list(job.keys)
        blocks = _ids(job)
        if len(keys) != len(blocks):
            raise ValueError(f"mcctl vLLM tier: job {job.job_id} has {len(keys)} keys but {len(blocks)} block ids")
        outside = [b for b in blocks if not 0 <= b < self._blocks]
        if outside:
            raise ValueError(f"mcctl vLLM tier: job {job.job_id} names block {outside[0]}, outside the primary tier's "
                             f"{self._blocks} blocks")
        with self._lock:
            self._pending.add(job.job_id)
        self._pool.submit(self._run, job.job_id, work, load, keys, blocks)

    def _run(self, job_id: int, work, load: bool, keys: List[bytes], blocks: List[int]) -> None:
        started = time.monotonic()
        try:
            loaded = work(keys, blocks)
        except Exception:  # a job that raised has failed; the scheduler learns it from get_finished_jobs
            logger.exception("mcctl vLLM tier: job %s failed", job_id)
            loaded = [False] * len(keys)
        done = [key for key, ok in zip(keys, loaded) if ok]
        success = len(done) == len(keys)
        self._finished.append(_result(job_id, success, done if load and not success else None,
                                      time.monotonic() - started, len(done) * self._block_bytes))
        with self._lock:
            self._pending.discard(job_id)
            self._idle.notify_all()

    def submit_store(self, job_metadata: Any) -> None:
        with self._lock:
            for key in job_metadata.keys:
                self._storing[key] = self._storing.get(key, 0) + 1
        try:
            self._submit(job_metadata, self._store, load=False)
        except BaseException:
            self._stored(list(job_metadata.keys), None)
            raise

    def _stored(self, keys: List[bytes], stored: Optional[List[bool]]) -> None:
        now = time.monotonic()
        with self._lock:
            for i, key in enumerate(keys):
                left = self._storing.get(key, 1) - 1
                if left:
                    self._storing[key] = left
                else:
                    self._storing.pop(key, None)
                if stored is not None:
                    self._verdict(key, stored[i], now)

    def _store(self, keys: List[bytes], blocks: List[int]) -> List[bool]:
        stored: Optional[List[bool]] = None
        try:
            stored = put_all(self.client, [self.object_key(k) for k in keys], [self._block(b) for b in blocks], self.unreadable,
                             key_blocks(keys))
        except errors.McctlError:
            stored = [False] * len(keys)
        finally:
            self._stored(keys, stored)
        return stored

    def submit_load(self, job_metadata: Any) -> None:
        self._submit(job_metadata, self._load, load=True)

    def _load(self, keys: List[bytes], blocks: List[int]) -> List[bool]:
        names = [self.object_key(k) for k in keys]
        try:
            codes = self.client.batch_get_into(names, [self._block(b) for b in blocks], mappings=self._lookups.covering(names))
        except Exception:  # every block failed: never a hit again until stored, like any other failed load
            logger.exception("mcctl vLLM tier: load of %d blocks failed", len(keys))
            codes = [errors.INTERNAL_ERROR] * len(keys)
        loaded = note_reads(names, codes, [self._block_bytes] * len(names), self.unreadable)
        now = time.monotonic()
        with self._lock:
            for key, code in zip(keys, codes):
                if code == errors.OBJECT_NOT_FOUND:
                    self._verdict(key, False, now)  # gone (evicted, removed): a miss the master confirms
        return loaded

    def get_finished_jobs(self) -> Iterable[Any]:
        done = []
        while self._finished:
            done.append(self._finished.popleft())
        return done

    get_finished = get_finished_jobs  # the name of the interface of 041410b9

    def has_pending_work(self) -> bool:
        """Whether jobs or lookups are in flight, or results wait to be collected: vLLM keeps stepping while so."""
        with self._lock:
            return bool(self._pending or self._finished or self._asker_running)

    def drain_jobs(self) -> None:
        """Waits until every submitted job has finished; their results wait for get_finished_jobs."""
        with self._lock:
            while self._pending:
                self._idle.wait()

    def take_events(self) -> Iterable[Any]:
        """None: the master publishes the KV events of what the shared tier holds, evictions included."""
        return ()

    def touch(self, keys: Any, req_context: Any = None) -> None:
        return

    def on_new_request(self, req_context: Any) -> Any:
        return RequestOffloadingContext() if RequestOffloadingContext is not None else None

    get_request_offloading_context = on_new_request  # the name of the interface of 041410b9

    def on_request_finished(self, req_context: Any) -> None:
        return

    request_finished = on_request_finished  # the name of the interface of 041410b9

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()
