"""Stand-in for vLLM's vllm/v1/kv_offload/base.py as tiering/base.py of commit 041410b9 imports it: keys, the
per-request context and the offloading preference (written for these tests, not vLLM's code)."""

from dataclasses import dataclass
from typing import Any, NewType, Optional

OffloadKey = NewType("OffloadKey", bytes)


def make_offload_key(block_hash: bytes, group_idx: int) -> OffloadKey:
    """A block hash and its KV cache group index, as raw bytes: the group as 4 big-endian bytes after the hash."""
    return OffloadKey(block_hash + group_idx.to_bytes(4, "big", signed=False))


@dataclass
class ReqContext:
    req_id: str
    kv_transfer_params: Optional[dict] = None


@dataclass
class RequestOffloadingContext:
    policy: Any = "chunk_level"
