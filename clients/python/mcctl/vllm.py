"""mcctl as a secondary tier of vLLM's OffloadingConnector (``vllm/v1/kv_offload/tiering``).

Follows ``vllm/v1/kv_offload/tiering/base.py`` of vllm-project/vllm at commit 041410b9 (constructor
``(offloading_spec, primary_kv_view, tier_type, **tier_config)``, ``lookup -> bool | None``,
``get_finished``); the later names ``get_finished_jobs`` and ``drain_jobs`` are answered
too. Every method runs in vLLM's scheduler and returns at once: transfers and existence checks run on this
tier's own threads. See docs/vllm.md.
"""

from __future__ import annotations

import collections
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Collection, Dict, Iterable, List, Optional

from . import errors
from .client import Client, RecentLookups

try:  # pragma: no cover - only where vLLM is installed
    from vllm.v1.kv_offload.tiering.base import JobMetadata, JobResult, SecondaryTierManager
except ImportError:
    from abc import ABC, abstractmethod

    @dataclass
    class JobMetadata:
        job_id: int
        keys: Collection[bytes]
        block_ids: Any
        is_promotion: bool = False
        req_context: Any = None

    @dataclass
    class JobResult:
        job_id: int
        success: bool

    class SecondaryTierManager(ABC):
        """Stand-in with the methods of vLLM's base class, for machines without vLLM."""

        def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str) -> None:
            self._offloading_spec = offloading_spec
            self._primary_kv_view = primary_kv_view
            self.tier_type = tier_type

        @abstractmethod
        def lookup(self, key, req_context):
            pass

        @abstractmethod
        def submit_store(self, job_metadata):
            pass

        @abstractmethod
        def submit_load(self, job_metadata):
            pass

        @abstractmethod
        def get_finished(self):
            pass

        def touch(self, keys, req_context):
            return

        def request_finished(self, req_context):
            return

        def shutdown(self):
            return


TIER_TYPE = "mcctl"
LOOKUPS_KEPT = 16  # lookup answers kept for the loads that follow them
MODULE_PATH = "mcctl.vllm"
CLASS_NAME = "McctlTier"


def register() -> None:
    """Registers the tier type ``mcctl`` with vLLM's SecondaryTierFactory (a no-op without vLLM)."""
    try:
        from vllm.v1.kv_offload.tiering.factory import SecondaryTierFactory
    except ImportError:
        return
    try:
        SecondaryTierFactory.register_tier(TIER_TYPE, MODULE_PATH, CLASS_NAME)
    except ValueError:
        pass  # registered already


class McctlTier(SecondaryTierManager):
    """Blocks of the CPU primary tier stored as mcctl objects, one object per block.

    Tier config keys: ``master`` (host:port), ``tenant``, ``root``, ``timeout``, ``key_prefix`` (set it per
    model and parallel layout: vLLM's block hashes do not name the model), ``io_threads`` (default 2),
    ``lookup_ttl`` (seconds a lookup verdict is reused, default 2), ``read_memory_replicas`` (default true: read
    promoted blocks from the nodes' DRAM; see mcctl.Client), ``read_threads`` (threads reading one load's blocks
    side by side; default and meaning as mcctl.Client's).

    Locks: ``_lock`` guards ``_verdicts``, ``_asking``, ``_to_ask``, ``_asker_running``, ``_storing`` and
    ``_pending`` (``_lookups`` has a lock of its own); ``_finished`` is a deque (appends and pops are atomic). No
    lock is held during IO or a master call. Lookups are answered from verdicts: a key without one is queued, and one pool thread at a time looks every
    queued key up in one call, keeping the mappings for the loads that follow.
    """

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str = TIER_TYPE,
                 master: Optional[str] = None, tenant: str = "default", root: Optional[str] = None,
                 timeout: float = 10.0, key_prefix: str = "", io_threads: int = 2, lookup_ttl: float = 2.0,
                 read_memory_replicas: bool = True, read_threads: Optional[int] = None, **unused):
        super().__init__(offloading_spec, primary_kv_view, tier_type)
        if not master:
            raise ValueError("mcctl vLLM tier: tier config has no 'master' (host:port of mcctl's master), e.g. "
                             '{"type":"mcctl","master":"host:50051","key_prefix":"llama-8b-tp1/"}')
        if unused:
            raise ValueError(f"mcctl vLLM tier: unknown tier config keys {sorted(unused)}; allowed are master, tenant, "
                             f"root, timeout, key_prefix, io_threads, lookup_ttl, read_memory_replicas, read_threads")
        view = primary_kv_view if primary_kv_view.ndim >= 1 else memoryview(primary_kv_view)
        self._block_bytes = view.strides[0]
        self._view = view.cast("B") if view.format != "B" or view.ndim != 1 else view
        self._prefix = key_prefix
        self._lookup_ttl = lookup_ttl
        self.client = Client(master=master, tenant=tenant, timeout=timeout, root=root, read_memory_replicas=read_memory_replicas,
                             read_threads=read_threads)
        self._pool = ThreadPoolExecutor(max_workers=io_threads, thread_name_prefix="mcctl-vllm")
        self._lock = threading.Lock()
        self._verdicts: Dict[bytes, tuple] = {}  # key -> (present, monotonic time answered)
        self._asking: set = set()  # keys queued or being asked about
        self._to_ask: List[bytes] = []  # queued, in lookup order
        self._asker_running = False  # whether a pool thread is draining _to_ask
        self._lookups = RecentLookups(LOOKUPS_KEPT)  # the last lookups' mappings, for the loads that follow
        self._storing: Dict[bytes, int] = {}  # key -> stores in flight
        self._pending: set = set()  # job ids submitted and not yet finished
        self._finished: collections.deque = collections.deque()
        self._idle = threading.Condition(self._lock)

    def object_key(self, key: bytes) -> str:
        return self._prefix + (key.hex() if isinstance(key, (bytes, bytearray)) else str(key))

    def _block(self, block_id: int) -> memoryview:
        start = int(block_id) * self._block_bytes
        return self._view[start:start + self._block_bytes]

    # ---- lookups: answered from verdicts the tier's threads fetch ----

    def lookup(self, key: bytes, req_context: Any = None) -> Optional[bool]:
        now = time.monotonic()
        with self._lock:
            if self._storing.get(key):
                return None
            verdict = self._verdicts.get(key)
            if verdict is not None and now - verdict[1] <= self._lookup_ttl:
                return verdict[0]
            if key in self._asking:
                return None
            self._asking.add(key)
            self._to_ask.append(key)
            start = not self._asker_running
            self._asker_running = True
        if start:
            self._pool.submit(self._ask_waiting)
        return None

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
                    self._verdicts[key] = (found, now)

    # ---- transfers ----

    def _submit(self, job: JobMetadata, work) -> None:
        keys = list(job.keys)
        blocks = [int(b) for b in job.block_ids]
        if len(keys) != len(blocks):
            raise ValueError(f"mcctl vLLM tier: job {job.job_id} has {len(keys)} keys but {len(blocks)} block ids")
        with self._lock:
            self._pending.add(job.job_id)
        self._pool.submit(self._run, job.job_id, work, keys, blocks)

    def _run(self, job_id: int, work, keys: List[bytes], blocks: List[int]) -> None:
        try:
            success = work(keys, blocks)
        except Exception:  # a job that raised has failed; the scheduler learns it from get_finished
            success = False
        self._finished.append(JobResult(job_id=job_id, success=success))
        with self._lock:
            self._pending.discard(job_id)
            self._idle.notify_all()

    def submit_store(self, job_metadata: JobMetadata) -> None:
        with self._lock:
            for key in job_metadata.keys:
                self._storing[key] = self._storing.get(key, 0) + 1
        self._submit(job_metadata, self._store)

    def _store(self, keys: List[bytes], blocks: List[int]) -> bool:
        try:
            codes = self.client.batch_put_from([self.object_key(k) for k in keys], [self._block(b) for b in blocks])
        except errors.McctlError:
            codes = [errors.INTERNAL_ERROR] * len(keys)
        now = time.monotonic()
        with self._lock:
            for key, code in zip(keys, codes):
                left = self._storing.get(key, 1) - 1
                if left:
                    self._storing[key] = left
                else:
                    self._storing.pop(key, None)
                stored = code in (0, errors.OBJECT_ALREADY_EXISTS)  # a block key names its content
                self._verdicts[key] = (stored, now)
        return all(code in (0, errors.OBJECT_ALREADY_EXISTS) for code in codes)

    def submit_load(self, job_metadata: JobMetadata) -> None:
        self._submit(job_metadata, self._load)

    def _load(self, keys: List[bytes], blocks: List[int]) -> bool:
        names = [self.object_key(k) for k in keys]
        got = self.client.batch_get_into(names, [self._block(b) for b in blocks], mappings=self._lookups.covering(names))
        now = time.monotonic()
        with self._lock:
            for key, size in zip(keys, got):
                if size < 0:
                    self._verdicts[key] = (False, now)
        return all(size == self._block_bytes for size in got)

    def get_finished(self) -> Iterable[JobResult]:
        done = []
        while self._finished:
            done.append(self._finished.popleft())
        return done

    get_finished_jobs = get_finished  # the name in later vLLM versions

    def drain_jobs(self) -> None:
        """Waits until every submitted job has finished (vLLM calls it at shutdown or in tests)."""
        with self._lock:
            while self._pending:
                self._idle.wait()

    def request_finished(self, req_context: Any) -> None:
        return

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        self.client.close()
