"""Reads of MEMORY replicas: an object a promotion copied into a node's DRAM segment, read through that node's
NodeService (ReadLocalObject with replica_type MEMORY) straight into the caller's memory.

A read is taken only when every check passes: the replica's descriptor names the size and CRC32C of the
object the master's DISTRIBUTED_DISK descriptor names, the node's first chunk says that size, the chunks fill
exactly that many bytes, and their CRC32C is the descriptor's. Anything else (the node is gone or slow, it no
longer holds the object, a mismatch) is a failed attempt and the caller reads the shared file instead.

A node whose call failed for want of the node (unreachable, past the deadline) is passed over for
``PASS_OVER_S`` seconds, so a dead node costs one failed call, not a timeout per key.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any, Dict, List, Optional, Sequence, Tuple

import grpc

from . import _io
from ._proto import master_pb2 as pb
from ._proto import master_pb2_grpc as pb_grpc

PASS_OVER_S = 5.0  # how long a node that failed for want of the node is not asked
MAX_IN_FLIGHT = 32  # node reads a batch has started and not yet consumed
MAX_IN_FLIGHT_BYTES = 64 << 20  # and their bytes (one larger object still goes alone), so buffered streams stay bounded

# Failures that say nothing about the node being reachable: it answered, it just does not hold these bytes.
_NODE_ANSWERED = frozenset({grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.FAILED_PRECONDITION})


class ReadRefused(Exception):
    """A node's answer that is not the object the descriptor names."""


def usable(replica: Any, size: int, crc: int) -> bool:
    """A COMPLETE MEMORY replica of the object of ``size`` bytes and CRC32C ``crc`` (the DISTRIBUTED_DISK one)."""
    if replica.type != pb.MEMORY or replica.status != pb.COMPLETE or not replica.HasField("memory"):
        return False
    memory = replica.memory
    return memory.size == size and memory.crc32c == crc and bool(memory.transport_endpoint)


class MemoryReader:
    """Channels to the nodes holding MEMORY replicas, one per endpoint, opened on first use and kept.

    ``_lock`` guards ``_stubs``, ``_channels``, ``_passed_over_until`` and ``_closed``; it nests inside no other
    lock and is held only to look up or record, never across a call.
    """

    def __init__(self, deadline_s: float, channel_options: List[Tuple[str, int]]):
        """``channel_options``: gRPC options of every channel to a node (the client's message limit and reconnection
        waits)."""
        self.deadline_s = deadline_s
        self._options = channel_options
        self._lock = threading.Lock()
        self._channels: Dict[str, grpc.Channel] = {}
        self._stubs: Dict[str, Any] = {}
        self._passed_over_until: Dict[str, float] = {}
        self._closed = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            channels, self._channels, self._stubs = list(self._channels.values()), {}, {}
        for channel in channels:
            channel.close()

    def _stub(self, endpoint: str) -> Optional[Any]:
        """The endpoint's stub, or None while it is passed over."""
        with self._lock:
            until = self._passed_over_until.get(endpoint)
            if until is not None:
                if time.monotonic() < until:
                    return None
                del self._passed_over_until[endpoint]
            stub = self._stubs.get(endpoint)
            if stub is None:
                if self._closed:
                    raise ReadRefused("the client is closed")
                channel = self._channels[endpoint] = grpc.insecure_channel(endpoint, options=self._options)
                stub = self._stubs[endpoint] = pb_grpc.NodeServiceStub(channel)
            return stub

    def _pass_over(self, endpoint: str) -> None:
        with self._lock:
            self._passed_over_until[endpoint] = time.monotonic() + PASS_OVER_S

    def read_batch(self, tenant: str, wanted: Sequence[Tuple[int, str, Sequence[Any], int, int, List[Tuple[int, int]]]],
                   counts: Counter) -> List[int]:
        """Reads each (index, key, replicas, size, crc, regions) from the first of its replicas that serves it, into
        ``regions`` (exactly ``size`` bytes, held in place by the caller); the indices served.

        Up to MAX_IN_FLIGHT first attempts (of at most MAX_IN_FLIGHT_BYTES together) are started before the first is
        consumed, so the round trips of a batch overlap; a key whose first replica fails tries its next ones one after
        another.
        """
        served: List[int] = []
        started: List[Tuple[int, Any]] = []  # (position in wanted, the call of its first usable replica, or None)
        tried: List[int] = []  # per position: how many of its replicas have been looked at
        position = 0
        in_flight_bytes = 0
        while position < len(wanted) or started:
            while position < len(wanted) and len(started) < MAX_IN_FLIGHT and (
                    not started or in_flight_bytes + wanted[position][3] <= MAX_IN_FLIGHT_BYTES):
                tried.append(0)
                started.append((position, self._start(tenant, wanted[position], tried, position, counts)))
                in_flight_bytes += wanted[position][3]
                position += 1
            at, call = started.pop(0)
            index, key, replicas, size, crc, regions = wanted[at]
            in_flight_bytes -= size
            while call is not None:
                endpoint, stream = call
                if self._consume(endpoint, stream, size, crc, regions, counts):
                    served.append(index)
                    break
                call = self._start(tenant, wanted[at], tried, at, counts)
        return served

    def _start(self, tenant: str, item, tried: List[int], at: int, counts: Counter) -> Optional[Tuple[str, Any]]:
        """Starts the read of the next usable replica of ``item`` not yet tried: (endpoint, stream), or None when none is left."""
        _, key, replicas, size, crc, _ = item
        while tried[at] < len(replicas):
            replica = replicas[tried[at]]
            tried[at] += 1
            if not usable(replica, size, crc):
                counts["memory_replicas_unusable"] += 1
                continue
            endpoint = replica.memory.transport_endpoint
            try:
                stub = self._stub(endpoint)
            except ReadRefused:
                return None
            if stub is None:
                counts["memory_nodes_passed_over"] += 1
                continue
            request = pb.ReadLocalObjectRequest(tenant_id=tenant, key=key, replica_type=pb.MEMORY)
            return endpoint, stub.ReadLocalObject(request, timeout=self.deadline_s)
        return None

    def _consume(self, endpoint: str, stream: Any, size: int, crc: int, regions: List[Tuple[int, int]], counts: Counter) -> bool:
        """Fills ``regions`` from the stream and checks what landed there; whether it is the object."""
        try:
            views = [_io.region_view(address, length) for address, length in regions]
            filled = _fill(stream, views, size)
            if filled != size:
                raise ReadRefused(f"the node sent {filled} bytes of an object of {size}")
            actual = _io.crc32c(views)
            if actual != crc:
                counts["memory_checksum_failures"] += 1
                raise ReadRefused(f"CRC32C {actual:#010x}, expected {crc:#010x}")
            return True
        except grpc.RpcError as e:
            if e.code() not in _NODE_ANSWERED:
                self._pass_over(endpoint)
            counts["memory_read_failures"] += 1
            return False
        except ReadRefused:
            stream.cancel()
            counts["memory_read_failures"] += 1
            return False


def _fill(stream: Any, views: List[memoryview], size: int) -> int:
    """Copies the chunks' bytes into ``views`` one after another; the bytes the stream held (more than ``size``
    is refused before anything past the views is touched)."""
    filled = 0
    view, at = 0, 0
    first = True
    for chunk in stream:
        if first:
            first = False
            if chunk.object_size != size:
                raise ReadRefused(f"the node holds {chunk.object_size} bytes, the descriptor says {size}")
        data = memoryview(chunk.data)
        if filled + data.nbytes > size:
            raise ReadRefused(f"the node sent more than the object's {size} bytes")
        filled += data.nbytes
        while data.nbytes:
            room = views[view].nbytes - at
            n = min(room, data.nbytes)
            views[view][at:at + n] = data[:n]
            data = data[n:]
            at += n
            if at == views[view].nbytes:
                view, at = view + 1, 0
    return filled
