"""Stand-in for vLLM's vllm/v1/kv_offload/tiering/base.py at commit 041410b9: the secondary tier interface a tier
implements, with its signatures (written for these tests, not vLLM's code)."""

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Collection, Iterable, Optional

from vllm.v1.kv_offload.base import OffloadKey, ReqContext, RequestOffloadingContext

JobId = int


@dataclass
class JobMetadata:
    job_id: JobId
    keys: Collection[OffloadKey]
    block_ids: Any  # an int64 numpy array of primary-tier rows
    is_promotion: bool
    req_context: ReqContext


@dataclass
class JobResult:
    job_id: JobId
    success: bool


class SecondaryTierManager(ABC):
    def __init__(self, offloading_spec: Any, primary_kv_view: memoryview, tier_type: str) -> None:
        self._offloading_spec = offloading_spec
        self._primary_kv_view = primary_kv_view
        self.tier_type = tier_type

    @abstractmethod
    def lookup(self, key: OffloadKey, req_context: ReqContext) -> Optional[bool]:
        """True: present and ready; False: not there; None: in transfer, ask again."""

    @abstractmethod
    def submit_store(self, job_metadata: JobMetadata) -> None:
        pass

    @abstractmethod
    def submit_load(self, job_metadata: JobMetadata) -> None:
        pass

    @abstractmethod
    def get_finished(self) -> Iterable[JobResult]:
        pass

    def touch(self, keys: Collection[OffloadKey], req_context: ReqContext):
        return

    def get_request_offloading_context(self, req_context: ReqContext) -> RequestOffloadingContext:
        return RequestOffloadingContext()

    def request_finished(self, req_context: ReqContext) -> None:
        return

    def shutdown(self) -> None:
        return
