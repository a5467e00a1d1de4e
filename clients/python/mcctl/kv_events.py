"""KV events: what the engine connectors attach to an offload so that KV-aware routers see the shared tier, and a
decoder of what the master publishes (docs/wire-protocol.md, "KV events").

A connector passes, per object, the engine KV blocks the object holds::

    client.batch_put_from(keys, buffers, kv_blocks=[KvBlocks(block_hashes=[h1, h2], parent_block_hash=h0,
                                                             block_size=16, token_ids=tokens), None, ...])

Block hashes are the engine's: an int (taken as an unsigned 64-bit number, a negative Python int as its two's
complement) or bytes (their last 8 bytes, big-endian: the rule vLLM and llm-d reduce a bytes hash by).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Union

from ._proto import master_pb2 as pb

Hash = Union[int, bytes, bytearray]
MAX_BLOCKS = 1024  # most blocks one object may name


def block_hash(value: Hash) -> int:
    """An engine block hash as the unsigned 64-bit number the master keeps and publishes."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        raw = bytes(value)
        if not raw:
            raise ValueError("a block hash of no bytes: give the engine's hash (an int, or its bytes)")
        return int.from_bytes(raw[-8:].rjust(8, b"\0"), "big")
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"a block hash must be an int or bytes, not {type(value).__name__}")
    if value < -(1 << 63) or value >= (1 << 64):
        raise ValueError(f"block hash {value} does not fit in 64 bits: give the engine's 64-bit hash (or its bytes)")
    return value & 0xFFFFFFFFFFFFFFFF


@dataclass
class KvBlocks:
    """The engine KV blocks one object holds, in chain order: their hashes, the hash of the block before the first
    (None when the first starts the prefix), tokens per block, the tokens of all the blocks (empty, or block_size per
    block), and the LoRA adapter's name."""

    block_hashes: Sequence[Hash]
    parent_block_hash: Optional[Hash] = None
    block_size: int = 0
    token_ids: Sequence[int] = field(default_factory=list)
    lora_name: Optional[str] = None

    def to_proto(self) -> "pb.KvBlocks":
        hashes = [block_hash(h) for h in self.block_hashes]
        if not hashes:
            raise ValueError("KvBlocks has no block_hashes: give at least one, or None for an object without blocks")
        message = pb.KvBlocks(block_hashes=hashes, block_size=int(self.block_size), token_ids=[int(t) for t in self.token_ids],
                              lora_name=self.lora_name or "")
        if self.parent_block_hash is not None:
            message.parent_block_hash = block_hash(self.parent_block_hash)
        return message


def to_protos(kv_blocks: Optional[Sequence[Optional[Union[KvBlocks, Dict[str, Any]]]]], count: int) -> Optional[List["pb.KvBlocks"]]:
    """The notify's kv_blocks for ``count`` keys: None when no key has any, else one message per key (empty for None)."""
    if kv_blocks is None:
        return None
    if len(kv_blocks) != count:
        raise ValueError(f"{count} keys but {len(kv_blocks)} kv_blocks entries: pass one per key (None for a key without)")
    messages = []
    for blocks in kv_blocks:
        if blocks is None:
            messages.append(pb.KvBlocks())
        else:
            messages.append((blocks if isinstance(blocks, KvBlocks) else KvBlocks(**blocks)).to_proto())
    return messages if any(m.block_hashes for m in messages) else None


# ---- reading what the master publishes ----

END_SEQUENCE = -1


def decode_batch(payload: bytes) -> Dict[str, Any]:
    """One published payload as vLLM's KVEventBatch reads: ``{"ts": float, "events": [dict, ...]}``, each event a map
    tagged by ``type`` (BlockStored, BlockRemoved, AllBlocksCleared); also decodes the positional events older vLLM
    versions sent. Needs msgpack."""
    import msgpack

    batch = msgpack.unpackb(payload, raw=False, strict_map_key=False)
    if isinstance(batch, dict):  # a map-encoded batch
        ts, events = batch.get("ts"), batch.get("events", [])
    else:
        ts, events = batch[0], batch[1]
    out = []
    for event in events:
        if isinstance(event, dict):
            out.append(event)
        else:  # positional: [tag, fields...]
            names = {"BlockStored": ["block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"],
                     "BlockRemoved": ["block_hashes", "medium"]}.get(event[0], [])
            out.append({"type": event[0], **dict(zip(names, event[1:]))})
    return {"ts": ts, "events": out}
