"""A batch lookup's answer as the master packs it (BatchGetDistributedPageMappingRequest.packed): per key a bucket,
a CRC32C, an offset and a size, here as four lists, so a read plans a batch from plain lists instead of one message
and one descriptor per key. The layout is the wire protocol's (docs/wire-protocol.md): 24 bytes a key,
little-endian int32 bucket, uint32 crc32c, int64 offset, int64 object_size; a key without a readable mapping has
bucket -(its ErrorCode)."""

from __future__ import annotations

import itertools
import struct
import sys
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _io, errors
from ._proto import master_pb2 as pb

RECORD_BYTES = 24
_RECORD = struct.Struct("<iIqq")

# The bucket of a key whose outcome a read has set already (served from a node's DRAM, or its buffer too small):
# below every -(ErrorCode).
DONE = -(1 << 31)

_KNOWN_CODES = frozenset(pb.ErrorCode.values())


class Placements:
    """One batch's placements, in the keys' order. ``buckets[i]`` is the bucket of key i, or -(its ErrorCode), or
    DONE; ``messages`` holds the master's message for errors other than OBJECT_NOT_FOUND, ``memory`` the MEMORY
    replicas of promoted keys, both by index. Not shared between threads: a read marks keys DONE in its own copy."""

    __slots__ = ("buckets", "crcs", "offsets", "sizes", "messages", "memory")

    def __init__(self, buckets: List[int], crcs: List[int], offsets: List[int], sizes: List[int],
                 messages: Dict[int, str], memory: Dict[int, Sequence[Any]]):
        self.buckets, self.crcs, self.offsets, self.sizes = buckets, crcs, offsets, sizes
        self.messages, self.memory = messages, memory

    @staticmethod
    def of(answer: Any, count: int) -> "Placements":
        """The placements of a lookup of ``count`` keys: from the packed fields, or from one MappingResult per key
        when the master answered so (one that does not know the packed flag)."""
        raw = answer.placements
        if not raw and len(answer.results) == count and count:
            return Placements._of_results(answer.results)
        if len(raw) != count * RECORD_BYTES:
            raise errors.InternalError(f"the master answered {len(raw)} bytes of placements for {count} "
                                       f"keys, not {RECORD_BYTES} a key")
        buckets, crcs, offsets, sizes = columns(raw, sys.byteorder == "little")
        messages = {int(i): e.message for i, e in answer.errors.items()}
        memory = {int(i): list(m.replicas) for i, m in answer.memory.items()}
        return Placements(buckets, crcs, offsets, sizes, messages, memory)

    @staticmethod
    def _of_results(results: Sequence[Any]) -> "Placements":
        buckets, crcs, offsets, sizes = [], [], [], []
        messages: Dict[int, str] = {}
        memory: Dict[int, Sequence[Any]] = {}
        for i, result in enumerate(results):
            place = result.distributed_disk
            if result.status.error != pb.OK:
                buckets.append(-result.status.error)
                messages[i] = result.status.message
                crcs.append(0), offsets.append(0), sizes.append(0)
                continue
            bucket = place.bucket if place.HasField("bucket") else _io.bucket_of_file_name(place.file_path)
            buckets.append(bucket if bucket is not None else -pb.INTERNAL_ERROR)
            crcs.append(place.crc32c), offsets.append(place.offset), sizes.append(place.object_size)
            if result.memory:
                memory[i] = list(result.memory)
        return Placements(buckets, crcs, offsets, sizes, messages, memory)

    def __len__(self) -> int:
        return len(self.buckets)

    def copy(self) -> "Placements":
        return self.slice(0, len(self.buckets))

    def slice(self, start: int, end: int) -> "Placements":
        return Placements(self.buckets[start:end], self.crcs[start:end], self.offsets[start:end], self.sizes[start:end],
                          {i - start: m for i, m in self.messages.items() if start <= i < end},
                          {i - start: r for i, r in self.memory.items() if start <= i < end})

    def pick(self, indices: Sequence[int]) -> "Placements":
        """Keys ``indices``, in that order."""
        at = {i: k for k, i in enumerate(indices)} if self.messages or self.memory else {}
        return Placements([self.buckets[i] for i in indices], [self.crcs[i] for i in indices],
                          [self.offsets[i] for i in indices], [self.sizes[i] for i in indices],
                          {at[i]: m for i, m in self.messages.items() if i in at},
                          {at[i]: r for i, r in self.memory.items() if i in at})

    def then(self, start: int, fresh: "Placements") -> "Placements":
        """The first ``start`` keys of these, then ``fresh`` (the rest, looked up again)."""
        head = self.slice(0, start)
        head.buckets += fresh.buckets
        head.crcs += fresh.crcs
        head.offsets += fresh.offsets
        head.sizes += fresh.sizes
        head.messages.update({start + i: m for i, m in fresh.messages.items()})
        head.memory.update({start + i: r for i, r in fresh.memory.items()})
        return head

    def found(self, i: int) -> bool:
        return self.buckets[i] >= 0

    def error(self, i: int, key: str, tenant: str) -> Tuple[int, str]:
        """(negative result code, "NAME: message") of key i, which has no placement."""
        code = -self.buckets[i]
        message = self.messages.get(i)
        if message is None:
            message = (f"key {errors.quoted(key)} not found in tenant {errors.quoted(tenant)}" if code == pb.OBJECT_NOT_FOUND
                       else f"the master answered error code {code}")
        return _outcome(code, message)


def columns(raw: bytes, native_order: bool) -> Tuple[List[int], List[int], List[int], List[int]]:
    """The records' buckets, CRC32Cs, offsets and sizes. ``native_order``: this machine is little-endian, so the
    bytes are cast in place rather than unpacked record by record."""
    if native_order:
        view = memoryview(raw)
        longs = view.cast("q")
        return view.cast("i")[0::6].tolist(), view.cast("I")[1::6].tolist(), longs[1::3].tolist(), longs[2::3].tolist()
    if not raw:
        return [], [], [], []
    buckets, crcs, offsets, sizes = zip(*_RECORD.iter_unpack(raw))
    return list(buckets), list(crcs), list(offsets), list(sizes)


def _outcome(code: int, message: str) -> Tuple[int, str]:
    """(negative result code, "NAME: message") of ErrorCode ``code`` (a code this client does not know is an
    INTERNAL_ERROR); (0, "") for OK."""
    name = pb.ErrorCode.Name(code) if code in _KNOWN_CODES else "INTERNAL_ERROR"
    if name == "OK":
        return 0, ""
    return errors.RESULT_BY_NAME.get(name, errors.INTERNAL_ERROR), f"{name}: {message}"


class Allocation:
    """A batch allocation answered packed (BatchAllocateDistributedPageRequest.packed): per key a bucket (or -(its
    ErrorCode)), an offset and a size, and the KeyError of each key not allocated, by index. The notify of what was
    written sends the same records back, each with its CRC32C, and is answered packed too."""

    __slots__ = ("buckets", "offsets", "sizes", "errors")

    def __init__(self, answer: Any, count: int):
        raw = answer.placements
        if len(raw) != count * RECORD_BYTES:
            raise errors.InternalError(
                f"the master answered {len(raw)} bytes of packed allocations for {count} keys, not {RECORD_BYTES} a key"
                + (": it is older than this client (no packed allocations)" if not raw and answer.results else ""))
        self.buckets, _, self.offsets, self.sizes = columns(raw, sys.byteorder == "little")
        self.errors: Dict[int, Any] = {int(i): e for i, e in answer.errors.items()}

    def allocated(self, i: int) -> bool:
        return self.buckets[i] >= 0

    def outcome(self, i: int) -> Tuple[int, str]:
        """(negative result code, "NAME: message") of key i, which was not allocated."""
        status = self.errors.get(i)
        if status is None:
            return _outcome(-self.buckets[i], f"the master answered error code {-self.buckets[i]}")
        return _outcome(status.error, status.message)

    def waiting_for_room(self) -> List[int]:
        """The keys refused for room the master says is due (NO_AVAILABLE_HANDLE with retry_after_ms)."""
        return [i for i, e in self.errors.items() if e.error == pb.NO_AVAILABLE_HANDLE and e.retry_after_ms > 0]

    def retry_after_s(self, indices: Sequence[int]) -> float:
        return min(self.errors[i].retry_after_ms for i in indices) / 1000.0

    def replace(self, indices: Sequence[int], again: "Allocation") -> None:
        """The answer of keys ``indices`` allocated again (``again`` holds them in that order) in place of the first."""
        for k, i in enumerate(indices):
            self.buckets[i], self.offsets[i], self.sizes[i] = again.buckets[k], again.offsets[k], again.sizes[k]
            if k in again.errors:
                self.errors[i] = again.errors[k]
            else:
                self.errors.pop(i, None)

    def descriptor(self, i: int) -> Any:
        """Key i's allocation as a descriptor (for a free), naming its bucket by index."""
        return pb.DistributedDiskDescriptor(bucket=self.buckets[i], offset=self.offsets[i], object_size=self.sizes[i])

    def records(self, written: Sequence[Tuple[int, int]]) -> bytes:
        """The packed placements of keys ``written``, (index, CRC32C of what was written) each, in that order."""
        out = bytearray(RECORD_BYTES * len(written))
        for k, (i, crc) in enumerate(written):
            _RECORD.pack_into(out, k * RECORD_BYTES, self.buckets[i], crc, self.offsets[i], self.sizes[i])
        return bytes(out)

    @staticmethod
    def notified(answer: Any, count: int) -> List[Tuple[int, str]]:
        """(code, message) of each of the ``count`` keys of a packed notify: OK but for the keys its errors name."""
        outcomes = [(0, "")] * count
        for i, status in answer.errors.items():
            if 0 <= i < count:
                outcomes[i] = _outcome(status.error, status.message)
        return outcomes


class Remembered:
    """Per key, the placement this client's last lookup of it answered and until when a read may start under that
    lookup's lease: what a later read of the key may read while its own lookup is in flight (Client's
    ``read_during_lookup``). At most ``kept`` keys; the ones remembered first go first.

    Thread-safe: ``_lock`` guards ``_by_key``; it nests inside no other lock and is held only to copy or update."""

    def __init__(self, kept: int):
        self._kept = kept
        self._by_key: Dict[str, Tuple[int, int, int, int, float]] = {}  # key -> (bucket, offset, size, crc, safe_until)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._by_key)

    def remember(self, keys: Sequence[str], found: "Placements", safe_until: float, memory_read: bool) -> None:
        """The answer of a lookup of ``keys``: found keys are remembered, the others forgotten, as are keys with a
        MEMORY replica when ``memory_read`` (the client reads those from a node's DRAM, which is why they were
        promoted)."""
        buckets, offsets, sizes, crcs = found.buckets, found.offsets, found.sizes, found.crcs
        memory = found.memory if memory_read else {}
        with self._lock:
            by_key = self._by_key
            for i, key in enumerate(keys):
                by_key.pop(key, None)  # re-inserted last, so the keys read most recently are kept longest
                bucket = buckets[i]
                if bucket >= 0 and i not in memory:
                    by_key[key] = (bucket, offsets[i], sizes[i], crcs[i], safe_until)
            excess = len(by_key) - self._kept
            if excess > 0:
                for key in list(itertools.islice(by_key, excess + self._kept // 4)):
                    del by_key[key]

    def forget(self, keys: Sequence[str]) -> None:
        with self._lock:
            for key in keys:
                self._by_key.pop(key, None)

    def recall(self, keys: Sequence[str], not_before: float) -> Optional[Tuple["Placements", float, int]]:
        """The remembered placements of ``keys`` whose reads may still start at ``not_before`` (the others DONE: not
        to be read), the earliest time until which all of them may, and how many there are; None when none may."""
        with self._lock:
            remembered = [self._by_key.get(key) for key in keys]
        n = len(keys)
        if n and None not in remembered:
            buckets, offsets, sizes, crcs, untils = (list(column) for column in zip(*remembered))
            until = min(untils)
            if until >= not_before:  # the whole batch remembered and readable: a column at a time
                return Placements(buckets, crcs, offsets, sizes, {}, {}), until, n
        buckets, offsets, sizes, crcs = [DONE] * n, [0] * n, [0] * n, [0] * n
        until = float("inf")
        count = 0
        for i, r in enumerate(remembered):
            if r is None or r[4] < not_before:
                continue
            buckets[i], offsets[i], sizes[i], crcs[i] = r[0], r[1], r[2], r[3]
            until = min(until, r[4])
            count += 1
        if not count:
            return None
        return Placements(buckets, crcs, offsets, sizes, {}, {}), until, count
