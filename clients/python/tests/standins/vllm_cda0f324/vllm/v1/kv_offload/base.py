"""Stand-in for what vLLM's vllm/v1/kv_offload/base.py gives tiering/base.py at commit cda0f324: keys, the lookup
answers, the medium and locality of a tier, the per-request context (written for these tests, not vLLM's code)."""

from dataclasses import dataclass
from enum import Enum, auto
from typing import Any, Collection, List, NamedTuple, NewType, Optional

OffloadKey = NewType("OffloadKey", bytes)


def make_offload_key(block_hash: bytes, group_idx: int) -> OffloadKey:
    """A block hash and its KV cache group index, as raw bytes: the group as 4 big-endian bytes after the hash."""
    return OffloadKey(block_hash + group_idx.to_bytes(4, "big", signed=False))


class Medium(Enum):
    CPU = "CPU"
    STORAGE = "STORAGE"


class Locality(Enum):
    LOCAL = "LOCAL"
    REMOTE = "REMOTE"


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: Optional[dict] = None


class LookupResult(Enum):
    MISS = auto()
    HIT = auto()
    HIT_PENDING = auto()
    RETRY = auto()


@dataclass
class RequestOffloadingContext:
    policy: Any = "chunk_level"


class ScheduleEndContext(NamedTuple):
    new_req_ids: Collection[str]
    preempted_req_ids: Collection[str]


@dataclass
class OffloadingEvent:
    keys: List[OffloadKey]
    medium: Medium
    removed: bool
    locality: Optional[Locality] = None
