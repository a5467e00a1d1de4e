"""Stand-in for vLLM's vllm/v1/kv_offload/tiering/base.py at commit cda0f324: the secondary tier interface a tier
implements, with its signatures (written for these tests, not vLLM's code)."""

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Collection, Iterable, Optional

from vllm.v1.kv_offload.base import (Locality, LookupResult, Medium, OffloadingEvent, OffloadKey, ReqContext,
                                     RequestOffloadingContext, ScheduleEndContext)
from vllm.v1.kv_offload.tiering.backpressure import BackpressureDetector

JobId = int


@dataclass
class TransferJob:
    job_id: JobId
    keys: Collection[OffloadKey]
    chunk_ids: Any  # an int64 numpy array of primary-tier rows
    is_promotion: bool
    req_context: ReqContext
    submit_time: float = field(default_factory=time.monotonic)


@dataclass
class JobResult:
    job_id: JobId
    success: bool  # every key succeeded
    successful_keys: Optional[Collection[OffloadKey]] = None  # of a promotion that failed in part; None: all share success
    transfer_time: Optional[float] = None
    transfer_bytes: Optional[int] = None


class SecondaryTierManager(ABC):
    medium: ClassVar[Optional[Medium]] = None

    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str,
                 backpressure_detector: Optional[BackpressureDetector] = None) -> None:
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        assert primary_kv_view.strides is not None
        self._block_size_bytes = primary_kv_view.strides[0]
        self.tier_type = tier_type
        self.locality: Optional[Locality] = None
        self._bp_detector = backpressure_detector

    @property
    def block_size_bytes(self) -> int:
        return self._block_size_bytes

    @property
    def bp_detector(self) -> Optional[BackpressureDetector]:
        return self._bp_detector

    @abstractmethod
    def lookup(self, key: OffloadKey, req_context: ReqContext) -> LookupResult:
        """HIT: present and ready; MISS: not there; RETRY: in transfer, ask again."""

    @abstractmethod
    def submit_store(self, job_metadata: TransferJob) -> None:
        pass

    @abstractmethod
    def submit_load(self, job_metadata: TransferJob) -> None:
        pass

    @abstractmethod
    def get_finished_jobs(self) -> Iterable[JobResult]:
        pass

    def has_pending_work(self) -> bool:
        return False

    def take_events(self) -> Iterable[OffloadingEvent]:
        return ()

    def touch(self, keys: Collection[OffloadKey], req_context: ReqContext):
        return

    @abstractmethod
    def on_new_request(self, req_context: ReqContext) -> RequestOffloadingContext:
        pass

    def on_request_finished(self, req_context: ReqContext) -> None:
        return

    def on_schedule_end(self, context: ScheduleEndContext) -> None:
        return

    @abstractmethod
    def drain_jobs(self) -> None:
        """Blocks until every submitted job has completed or failed."""

    def shutdown(self) -> None:
        return

    def get_stats(self) -> Any:
        return None
