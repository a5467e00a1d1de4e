"""mcctl.Client: the master's gRPC contract plus in-place reads and writes of the shared bucket files.

Offload: BatchAllocateDistributedPage -> pwritev of each object at the offset the master gave -> fdatasync of
each file written, the files at once -> NotifyDistributedDiskSuccess with each object's CRC32C; a key whose write fails has its
pages freed at once (BatchFreeDistributedPage). Get: BatchGetDistributedPageMapping (which grants a read
lease) -> preadv into the caller's memory -> CRC32C check (a mismatch is a miss, never data). A key whose mapping
carries MEMORY replicas (a promotion copied it into nodes' DRAM) is read from one of those nodes first (mcctl/_nodes.py)
and by the pread when none serves it.

The reads and writes of bucket files go through POSIX (preadv/pwritev) or, on 3FS, through USRBIO (mcctl/_usrbio.py):
the ``io`` option (or MOONCAKE_DISTRIBUTED_IO), as the Java tier chooses it. The CRC32C, the fence, short reads, the end
of a file and the bucket-file identity checks are the same for both.
"""

from __future__ import annotations

import json
import operator
import os
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Optional, Sequence, Tuple

import grpc

from . import _io, _leader, _nodes, _usrbio, errors
from . import kv_events as _kv_events
from ._placements import DONE, Allocation, Placements, Remembered
from ._proto import master_pb2 as pb
from ._proto import master_pb2_grpc as pb_grpc
from .errors import (InvalidParams, MasterUnavailable, McctlError)

MAX_BATCH = 10_000  # keys per call the master accepts (BatchLimits.MAX_BATCH)
MAX_KEY_BYTES = 4096  # KeyRules.MAX_KEY_BYTES
MAX_TENANT_LENGTH = 64  # KeyRules.MAX_TENANT_LENGTH
MAX_MESSAGE_BYTES = 64 << 20  # the most the master sends or reads in one message
LAYOUT_FILE = "mooncake.layout.json"
_READ_ATTEMPTS = 6  # a read refused for want of a connection is tried again after 0.1, 0.2, 0.4, 0.8 and 1.6 s
# Pauses between sends of a call that never reached the master (a notify while the master restarts): doubled up to the last.
_RESEND_BACKOFF_S = (0.05, 0.1, 0.2, 0.4, 0.8, 1.0)
# While a master is down, gRPC waits longer and longer before it tries to connect again (up to two minutes), and a
# channel that is waiting refuses every call, even once the master is back. After a connection that was up breaks, what
# it waits on is a new resolution of the master's address, spaced by the resolver's own minimum (30 s by default) and
# backoff. Both capped at a second (plus jitter); the two can follow one another, so a read's retries (3.1 s) outlast
# both with room for a slow host. The same for channels to nodes.
_RECONNECT_OPTIONS = [("grpc.max_reconnect_backoff_ms", 1000), ("grpc.dns_min_time_between_resolutions_ms", 1000)]
_LEASE_KEPT_FOR_READ = 0.1  # a read starts only while 90% of its lease is left
REMEMBERED_KEYS = 1 << 14  # placements kept for reads during their lookup (read_during_lookup): about 5 MiB
_READ_DURING_LOOKUP_MIN_S = 0.02  # a remembered placement is read during the lookup only with this much of its window left
_QUEUED_HOLDER = "00000000-0000-0000-0000-000000000000"  # a promotion task's holder while any node may take it


def _io_settings(io: Optional[str], library: Optional[str]) -> Tuple[str, str, str]:
    """The io mode, where it came from, and the USRBIO library: the arguments, else the environment, else the defaults,
    checked as the Java settings are (one line naming the value and what is allowed)."""
    if io is not None:
        value, source = io, "argument io"
    elif os.environ.get(_usrbio.IO_ENV):
        value, source = os.environ[_usrbio.IO_ENV], f"environment {_usrbio.IO_ENV}"
    else:
        value, source = "auto", "default"
    if not isinstance(value, str) or value.lower() not in _usrbio.MODES:
        raise InvalidParams(f"invalid io {value!r} from {source}: allowed is auto, posix or usrbio")
    if library is None:
        library = os.environ.get(_usrbio.LIBRARY_ENV) or _usrbio.DEFAULT_NAME
    if not isinstance(library, str) or not library.strip():
        raise InvalidParams(f"invalid usrbio_library {library!r}: allowed is a library name on the library path "
                            f"(hf3fs_api_shared) or a path to the .so")
    return value.lower(), source, library


def check_master(master: str) -> str:
    if _leader.names_etcd(master):
        _leader.parse(master)
        return master
    host, sep, port = (master or "").rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
        raise InvalidParams(f"invalid master address {master!r}: allowed is host:port, e.g. localhost:50051, "
                            f"or etcd://host:port[,host:port...][/prefix] for the leader of masters started with --ha")
    return master


TOKEN_ENV = "MCCTL_TOKEN"  # the bearer token itself, as the CLI reads it


def _read_pem(path: Optional[str], what: str) -> Optional[bytes]:
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise InvalidParams(f"{what} {path} cannot be read: {e.strerror}") from None


def _channel(master: str, tls_ca: Optional[str], tls_cert: Optional[str], tls_key: Optional[str]) -> grpc.Channel:
    """Plaintext without tls_ca; TLS trusting only tls_ca's CAs with it, presenting tls_cert/tls_key when given."""
    options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
               *_RECONNECT_OPTIONS]
    if (tls_cert is None) != (tls_key is None):
        raise InvalidParams("tls_cert and tls_key go together: give both, or neither")
    if tls_ca is None:
        if tls_cert is not None:
            raise InvalidParams("tls_cert needs tls_ca: the CA that signed the master's certificate")
        return grpc.insecure_channel(master, options=options)
    credentials = grpc.ssl_channel_credentials(root_certificates=_read_pem(tls_ca, "tls_ca"),
                                               private_key=_read_pem(tls_key, "tls_key"),
                                               certificate_chain=_read_pem(tls_cert, "tls_cert"))
    return grpc.secure_channel(master, credentials, options=options)


def _auth_metadata(token: Optional[str]) -> Optional[Tuple[Tuple[str, str], ...]]:
    """The authorization header for every call (sent as metadata, so it works over plaintext on loopback too)."""
    if token is None:
        return None
    token = token.strip()
    if not token or any(c <= " " or c > "~" for c in token):
        raise InvalidParams("token is empty or has spaces or characters outside printable ASCII")
    return (("authorization", "Bearer " + token),)


def check_tenant(tenant: str) -> str:
    if not isinstance(tenant, str) or not tenant:
        raise InvalidParams("tenant id is empty")
    if len(tenant) > MAX_TENANT_LENGTH:
        raise InvalidParams(f"tenant id of {len(tenant)} characters is longer than {MAX_TENANT_LENGTH}")
    for c in tenant:
        if not (c.isascii() and (c.isalnum() or c in "._-")):
            raise InvalidParams(f"tenant id {tenant!r} has character {c!r}; allowed are letters, digits, '.', '_' and '-'")
    return tenant


def check_key(key: Any, index: Optional[int] = None) -> str:
    if type(key) is str and key and (len(key) if key.isascii() else MAX_KEY_BYTES + 1) <= MAX_KEY_BYTES:
        return key  # the common case, decided without encoding the key (str.isascii reads a flag)
    where = "" if index is None else f" (index {index})"
    if not isinstance(key, str):
        raise InvalidParams(f"key{where} is a {type(key).__name__}, not a str")
    if not key:
        raise InvalidParams(f"key{where} is empty")
    size = len(key.encode("utf-8"))
    if size > MAX_KEY_BYTES:
        raise InvalidParams(f"key{where} of {size} bytes is longer than {MAX_KEY_BYTES}")
    return key


def _check_keys(keys: Sequence[str]) -> List[str]:
    if isinstance(keys, (str, bytes)):
        raise InvalidParams("keys must be a list of str, not a single key")
    return [check_key(key, i) for i, key in enumerate(keys)]


@dataclass(frozen=True)
class PromotionTask:
    """A queued or running copy of a DISTRIBUTED_DISK object into a node's DRAM segment."""

    tenant: str
    key: str
    size: int
    source_file: str  # the bucket file the node copies from
    source_offset: int
    crc32c: int
    holder: Optional[str]  # the client id of the node copying it; None while queued for any node
    age_ms: int  # milliseconds since it was queued

    @staticmethod
    def of(task: Any) -> "PromotionTask":
        holder = task.holder_id
        return PromotionTask(tenant=task.tenant_id, key=task.key, size=task.size, source_file=task.source.file_path,
                             source_offset=task.source.offset, crc32c=task.source.crc32c,
                             holder=None if not holder or holder == _QUEUED_HOLDER else holder, age_ms=task.age_ms)


@dataclass(frozen=True)
class Promotions:
    """The master's promotion queue (oldest task first) and its counters since it started."""

    tasks: List[PromotionTask]
    admission_reads: int  # reads within the admission window that queue an object; 0: promotion is off
    queued_total: int
    succeeded_total: int
    failed_total: int
    memory_objects: int  # COMPLETE MEMORY replicas on live nodes
    memory_bytes: int
    memory_evicted_total: int


MAX_READ_THREADS = 64  # as the native batch reader allows
MAX_READ_THREADS_BY_DEFAULT = 4
READ_BYTES_PER_THREAD = 256 << 10  # a thread is started for a batch only when it has this much more to read


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


class Mappings:
    """What ``Client.lookup(keys)`` found: each key's mapping, under a read lease that began when it was asked for.

    Handed to ``batch_get_into(keys, buffers, mappings=...)`` while the lease lasts, it saves that read its own
    master call: an engine looks up its next batch while it reads this one, or checks what is there (``found``)
    and reads it without asking twice. The read then returns what the keys held when they were looked up, as any
    read returns what they held when its own lookup answered: the lease keeps those pages from reuse. Once the
    lease is too short for a read to start, the read looks its keys up again, as a long batch does.
    """

    __slots__ = ("_owner", "keys", "_placements", "_safe_until", "_index")

    def __init__(self, owner: "Client", keys: List[str], placements: Placements, safe_until: float):
        self._owner, self.keys, self._placements, self._safe_until = owner, keys, placements, safe_until
        self._index: Optional[Dict[str, int]] = None

    def __len__(self) -> int:
        return len(self.keys)

    def found(self) -> List[bool]:
        """Per key, whether it had a committed mapping when it was looked up."""
        return [bucket >= 0 for bucket in self._placements.buckets]

    def leading_hits(self) -> int:
        """How many of the keys, from the first on, had a committed mapping: what a prefix cache may read."""
        hits = 0
        for bucket in self._placements.buckets:
            if bucket < 0:
                break
            hits += 1
        return hits

    def seconds_left(self) -> float:
        """How long reads may still start with these mappings; 0 once they would be looked up again."""
        return max(0.0, self._safe_until - time.monotonic())

    def covers(self, keys: Sequence[str]) -> bool:
        """Whether every one of ``keys`` was looked up here and reads may still start with these mappings."""
        return self.seconds_left() > 0 and self._for(list(keys)) is not None

    def _for(self, keys: List[str]) -> Optional[Tuple[Placements, float]]:
        """The placements of ``keys`` (every one of them looked up here; a copy, the read's own) and until when reads
        may start; None when some key was not."""
        n = len(keys)
        if n <= len(self.keys) and self.keys[:n] == keys:
            return self._placements.slice(0, n), self._safe_until
        if self._index is None:
            self._index = {key: i for i, key in enumerate(self.keys)}  # a racing thread builds the same dict
        picked = [self._index.get(key) for key in keys]
        if None in picked:
            return None
        return self._placements.pick(picked), self._safe_until


class RecentLookups:
    """The last ``kept`` Mappings an engine connector looked up, for the reads that follow them on other threads:
    ``covering(keys)`` is the newest one that covers every key while reads may still use it. Thread-safe: its lock
    guards the deque, nests inside no other lock and is held only to append or copy."""

    def __init__(self, kept: int):
        self._kept: Deque[Mappings] = deque(maxlen=kept)
        self._lock = threading.Lock()

    def add(self, mappings: Mappings) -> None:
        with self._lock:
            self._kept.append(mappings)

    def covering(self, keys: Sequence[str]) -> Optional[Mappings]:
        with self._lock:
            kept = list(self._kept)
        for mappings in reversed(kept):
            if mappings.covers(keys):
                return mappings
        return None


class _BufferOf:
    """Names key i's buffer in an error message, formatted only when a message is made: a batch of good buffers
    then costs no string per key."""

    __slots__ = ("_keys", "_index")

    def __init__(self, keys: Sequence[str], index: int):
        self._keys, self._index = keys, index

    def __str__(self) -> str:
        return f"buffer for key {self._keys[self._index]!r} (index {self._index})"


def _chunks(n: int, size: int = MAX_BATCH):
    for start in range(0, n, size):
        yield start, min(n, start + size)


class Client:
    """A client of one master, thread-safe: share one instance between an engine's threads.

    ``root`` is where this node mounts the shared root (default: the master's root_dir, from GetLayout).
    ``write_margin`` is how many seconds before an allocation's deadline this client stops starting writes
    (default: a tenth of the deadline, at least 50 ms and at most 2 s: docs/durability.md's rule, which the Java
    writer follows too), so a slow writer never writes pages the master may reclaim.
    ``tls_ca`` (a PEM file of the CAs to trust) turns TLS on; ``tls_cert`` and ``tls_key`` add this client's
    own certificate for a master that wants one. ``token`` is the bearer token (default: $MCCTL_TOKEN, if set).

    Reads take the best replica they can reach: a key the master has promoted into nodes' DRAM (its mapping
    carries MEMORY replicas) is read through one of those nodes' NodeService, within ``node_timeout`` seconds
    (default 2), checked against its size and CRC32C, and read from the shared file as usual when no node serves
    it; a node that could not be reached is passed over for a few seconds. ``read_memory_replicas=False`` reads
    only the shared files: for a host whose nodes' endpoints are not reachable (a firewall, another network),
    whose shared filesystem is faster to read than the nodes' network, or whose reads must not depend on node
    processes at all. ``stats()`` counts ``memory_reads`` (served by a node) apart from ``reads`` (by pread).

    ``read_threads`` (default: the CPUs this process may run on, at most 4) is how many threads read one batch's
    objects from the shared files side by side, the calling thread among them: on a shared filesystem each read is
    a round trip, and on any filesystem one thread's checksum runs while another waits in preadv. A batch gets one
    thread per 256 KiB of objects at most, so a small batch is read by the calling thread alone. 1 reads every
    batch on the calling thread, as does the reader written in Python (when the native one cannot be built).
    Batches read at the same time from several threads share ``read_threads``: each caller is a reading thread
    already.

    ``io`` (default: MOONCAKE_DISTRIBUTED_IO, else "auto") is how bucket-file bytes move, with the Java tier's values and
    rules: "posix" (preadv and pwritev), "usrbio" (3FS's USRBIO rings, past FUSE: refused here in one line, an
    ``mcctl._usrbio.UsrbioUnavailable``, when the library, a function of it or a 3FS mount under the root is missing, or
    no ring can be made), or "auto" (USRBIO when the master's fs_type is hf3fs, the root is on a 3FS mount and the library
    loads; POSIX otherwise, decided here and never while the client serves). ``usrbio_library`` (default:
    MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY, else "hf3fs_api_shared") names the library on the library path, or is its path.
    ``io_mode`` and ``io_reason`` say which IO is in force and why. With USRBIO a batch's writes are submitted together,
    and a batch's reads are split among the reading threads, each submitting its share on a ring of its own.

    ``read_during_lookup`` (default True, POSIX only): a batch whose keys this client looked up before, while that lookup's
    lease lasts, is read at the placements it answered while the batch's own lookup is in flight, and a read is
    kept only for a key the new answer places on the same pages (see _read_during_lookup for why that is exact).
    Reading a batch again soon, as a cache's hot blocks are, then costs about the longer of the two rather than
    their sum. ``stats()`` counts ``reads_during_lookup`` and ``reads_during_lookup_wasted`` (read, then read again
    from where the new answer placed the key), and ``reader_yields_during_lookup``: how often the reading threads gave
    up the CPU after 256 KiB, so that the lookup's answer is not kept waiting for a core. Not with an etcd://
    master: each call there may go to another leader.
    """

    def __init__(self, master: str = "localhost:50051", tenant: str = "default", timeout: float = 10.0,
                 root: Optional[str] = None, write_margin: Optional[float] = None, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None, token: Optional[str] = None,
                 read_memory_replicas: bool = True, node_timeout: float = 2.0, read_threads: Optional[int] = None,
                 read_during_lookup: bool = True, io: Optional[str] = None, usrbio_library: Optional[str] = None):
        self.master = check_master(master)
        self.tenant = check_tenant(tenant)
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise InvalidParams(f"timeout {timeout!r} must be a positive number of seconds")
        if not isinstance(read_memory_replicas, bool):
            raise InvalidParams(f"read_memory_replicas {read_memory_replicas!r} must be True or False")
        if not isinstance(read_during_lookup, bool):
            raise InvalidParams(f"read_during_lookup {read_during_lookup!r} must be True or False")
        if not isinstance(node_timeout, (int, float)) or isinstance(node_timeout, bool) or node_timeout <= 0:
            raise InvalidParams(f"node_timeout {node_timeout!r} must be a positive number of seconds")
        if write_margin is not None and (not isinstance(write_margin, (int, float)) or write_margin < 0):
            raise InvalidParams(f"write_margin {write_margin!r} must be zero or a positive number of seconds")
        if read_threads is None:
            read_threads = min(MAX_READ_THREADS_BY_DEFAULT, _usable_cpus())
        if not isinstance(read_threads, int) or isinstance(read_threads, bool) or not 1 <= read_threads <= MAX_READ_THREADS:
            raise InvalidParams(f"read_threads {read_threads!r} must be a whole number from 1 to {MAX_READ_THREADS}")
        self.read_threads = read_threads
        self.read_during_lookup = read_during_lookup
        io_mode, io_source, library = _io_settings(io, usrbio_library)
        self._remembered = Remembered(REMEMBERED_KEYS)
        self.timeout = float(timeout)
        self.write_margin = write_margin
        # _stats_lock guards _calls, _counters and _batches_reading; it nests inside no other lock and is held only
        # to count.
        self._stats_lock = threading.Lock()
        self._batches_reading = 0  # batches in the native reader now, which share read_threads
        self._calls: Counter = Counter()
        self._counters: Counter = Counter()
        self._metadata = _auth_metadata(token if token is not None else os.environ.get(TOKEN_ENV) or None)
        # etcd://...: calls go to the leader and follow it (mcctl/_leader.py); host:port: one channel to that master.
        self._follower: Optional[_leader.Follower] = None
        if _leader.names_etcd(self.master):
            _channel("localhost:1", tls_ca, tls_cert, tls_key).close()  # the TLS settings are checked now, not at the first call
            self._follower = _leader.Follower(self.master, self.timeout, lambda address: _channel(address, tls_ca, tls_cert, tls_key),
                                              pb_grpc.MasterServiceStub)
            self._channel = self._follower
        else:
            self._channel = _channel(self.master, tls_ca, tls_cert, tls_key)
        self._stub = pb_grpc.MasterServiceStub(self._channel) if self._follower is None else None
        self._rings: Optional[_usrbio.Rings] = None
        try:
            self.layout = self._read("GetLayout", pb.GetLayoutRequest())
            self.root = os.path.abspath(root if root is not None else self.layout.root_dir)
            self._check_mount()
            choice = _usrbio.choose(io_mode, io_source, self.layout.fs_type, self.root, library)
            if choice.mode == "usrbio":
                # One ring set per reading thread and one for the writer; the first is made now, so a mount that cannot
                # give one fails here.
                self._rings = _usrbio.Rings(choice.library, choice.mount_point, max_rings=read_threads + 1)
        except BaseException:
            self._channel.close()
            raise
        self.io_mode, self.io_reason = choice.mode, choice.reason
        self._files = _io.BucketFiles(self.root, self.layout.root_dir, self.layout.bucket_size, self.layout.bucket_count,
                                      registrar=choice.library if self._rings is not None else None)
        self._pool_lock = threading.Lock()  # guards the creation of _helpers; nests inside no other lock
        self._helpers: Optional[Any] = None  # the USRBIO reader's helper threads, made on first use
        node_options = [("grpc.max_receive_message_length", MAX_MESSAGE_BYTES), *_RECONNECT_OPTIONS]
        self._memory = _nodes.MemoryReader(float(node_timeout), node_options) if read_memory_replicas else None

    # ---- life cycle ----

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection and the bucket files; no call may be running or start after it."""
        with self._pool_lock:
            helpers, self._helpers = self._helpers, None
        if helpers is not None:
            helpers.shutdown(wait=True)
        self._files.close()
        if self._rings is not None:
            self._rings.close()
        if self._memory is not None:
            self._memory.close()
        self._channel.close()

    def _check_mount(self) -> None:
        """Stops a node that mounted nothing, or another cluster's root, before it reads or writes a byte."""
        if not os.path.isdir(self.root):
            raise InvalidParams(f"the root {self.root} is not a directory on this node: mount the shared filesystem "
                                f"there or pass root= where it is mounted")
        path = os.path.join(self.root, LAYOUT_FILE)
        try:
            with open(path, "rb") as f:
                record = json.loads(f.read())
        except FileNotFoundError:
            raise InvalidParams(f"no {LAYOUT_FILE} under {self.root}: the shared filesystem is not mounted there, "
                                f"or another directory is (mcctl mount validate)") from None
        except (OSError, ValueError) as e:
            raise InvalidParams(f"{path} cannot be read as a layout record: {e}") from None
        if record.get("cluster_id") != self.layout.cluster_id:
            raise InvalidParams(f"{path} belongs to cluster {record.get('cluster_id')} but the master serves cluster "
                                f"{self.layout.cluster_id}: this node mounted another cluster's root")
        for field in ("bucket_count", "page_size", "bucket_size"):
            if record.get(field) != getattr(self.layout, field):
                raise InvalidParams(f"{path} has {field} {record.get(field)} but the master has {getattr(self.layout, field)}")

    # ---- master calls ----

    def _call(self, method: str, request: Any, read_only: bool, resend_until: Optional[float] = None) -> Any:
        """The master's answer. A read refused for want of a connection is tried again (_READ_ATTEMPTS). With
        ``resend_until`` (on the monotonic clock), a call that failed UNAVAILABLE is sent again, after _RESEND_BACKOFF_S,
        until then, when that is safe by the rules of a fail-over (mcctl/_leader.py): it certainly never reached the
        master's service (refused while the master recovers its state, or no connection), or sending it twice acts once
        (a notify: the master answers OK to one of the descriptor it already committed). Once an attempt that may have
        reached the master was sent again, a call that ends without an answer raises OutcomeUnknown; so does such a call
        (one given ``resend_until``) whose last attempt went out and got no answer."""
        if self._follower is not None:
            with self._stats_lock:
                self._calls[method] += 1
            try:
                return self._follower.call(method, request, self.timeout, self._metadata)
            except grpc.RpcError as e:
                if resend_until is not None and _leader.got_no_answer(e):
                    raise _leader.unanswered(self.master, e) from None
                raise errors.from_rpc_error(e, self.master, self.timeout) from None
            except ConnectionError as e:
                raise MasterUnavailable(f"cannot reach the leader through {self.master}: {e}") from None
        attempts = _READ_ATTEMPTS if read_only else 1  # a mutation that may have reached the master could act twice
        attempt = 0
        may_have_landed: Optional[grpc.RpcError] = None  # the first attempt resent although it may have reached the master
        while True:
            attempt += 1
            with self._stats_lock:
                self._calls[method] += 1
            try:
                return getattr(self._stub, method)(request, timeout=self.timeout, metadata=self._metadata)
            except grpc.RpcError as e:
                pause = _RESEND_BACKOFF_S[min(attempt, len(_RESEND_BACKOFF_S)) - 1]
                resend = (resend_until is not None and time.monotonic() + pause < resend_until
                          and (_leader.not_sent(e) or _leader.resendable_after_connection_loss(e, method, request)))
                if not resend and (e.code() != grpc.StatusCode.UNAVAILABLE or attempt >= attempts):
                    if may_have_landed is not None and e.code() == grpc.StatusCode.UNAVAILABLE:
                        raise _leader.outcome_unknown(self.master, may_have_landed, e) from None
                    if resend_until is not None and _leader.got_no_answer(e):
                        raise _leader.unanswered(self.master, e) from None
                    raise errors.from_rpc_error(e, self.master, self.timeout) from None
                if resend and may_have_landed is None and not _leader.not_sent(e):
                    may_have_landed = e
                time.sleep(pause if resend else 0.1 * 2 ** (attempt - 1))

    def _read(self, method: str, request: Any) -> Any:
        return self._call(method, request, True)

    def _mutate(self, method: str, request: Any) -> Any:
        return self._call(method, request, False)

    def _count(self, name: str, n: int = 1) -> None:
        if n:
            with self._stats_lock:
                self._counters[name] += n

    def stats(self) -> Dict[str, Any]:
        """Counters since the client started: master calls per RPC, and what reads and writes met."""
        with self._stats_lock:
            return {"calls": dict(self._calls), **dict(self._counters)}

    def open_files(self) -> int:
        return self._files.open_count()

    # ---- offload ----

    def _margin(self, deadline_s: float) -> float:
        if self.write_margin is not None:
            return self.write_margin
        # The one rule every writer of a tier fences itself by, the Java writer's too (docs/durability.md, "The writer
        # fences itself"): room for one pwrite once started, while the master's allocation grace covers a write that
        # runs past the deadline.
        return min(2.0, max(0.05, deadline_s / 10))

    def _write(self, targets: Sequence[Tuple[int, int, str]], views: List[List[memoryview]], offsets: Sequence[int],
               fence: float) -> List[Optional[BaseException]]:
        """Writes object i of each (i, fd, path) of ``targets`` at offsets[i]; per target None when written, else why not
        (WriteFenced or Fenced: the fence passed first; an OSError). POSIX writes them one by one, checking the fence
        before each; USRBIO submits them together, the fence checked before each round."""
        if self._rings is None:
            problems: List[Optional[BaseException]] = []
            for i, fd, _ in targets:
                try:
                    _io.pwrite_all(fd, views[i], offsets[i], fence)
                    problems.append(None)
                except (_io.WriteFenced, OSError) as e:
                    problems.append(e)
            return problems
        if not targets:
            return []
        results = self._rings.execute([("w", fd, offsets[i], views[i], path) for i, fd, path in targets], fence)
        return [result if isinstance(result, OSError) else None for result in results]

    def _put(self, keys: List[str], views: List[List[memoryview]], overwrite: bool,
             kv_blocks: Optional[List[Any]] = None) -> List[Tuple[int, str]]:
        """Offloads one batch of at most MAX_BATCH keys; a (code, message) per key. The allocation is answered packed
        and the notify sends the placements back packed (docs/wire-protocol.md, "Packed offloads")."""
        n = len(keys)
        tenants = [self.tenant] * n
        sizes = [_io.total_size(v) for v in views]
        started = time.monotonic()  # before the request goes out, so the deadline is never overestimated
        try:
            answer = self._mutate("BatchAllocateDistributedPage", pb.BatchAllocateDistributedPageRequest(
                keys=keys, tenant_ids=tenants, sizes=sizes, overwrite=overwrite, packed=True))
            allocation = Allocation(answer, n)
        except McctlError as e:
            return [(e.result, str(e))] * n
        deadline_s = answer.deadline_ms / 1000.0
        fence = started + deadline_s - self._margin(deadline_s)
        self._wait_for_room(allocation, keys, tenants, sizes, overwrite, fence)
        outcomes: List[Optional[Tuple[int, str]]] = [None] * n
        written: List[Tuple[int, int, int]] = []  # (index, fd, crc) of each object written
        failed: List[int] = []  # indices of allocations to free
        paths: Dict[int, str] = {}  # fd -> path of files written
        targets: List[Tuple[int, int, str]] = []  # (index, fd, path) of each object to write
        for i in range(n):
            if not allocation.allocated(i):
                outcomes[i] = allocation.outcome(i)
                continue
            bucket, offset = allocation.buckets[i], allocation.offsets[i]
            path = f"bucket {bucket}"
            try:
                if allocation.sizes[i] != sizes[i]:
                    raise OSError(f"the master allocated {allocation.sizes[i]} bytes for an object of {sizes[i]}")
                path = self._files.bucket_path(bucket)
                self._files.check_range(path, offset, sizes[i])
                targets.append((i, self._files.bucket_fd(bucket), path))
            except OSError as e:
                outcomes[i] = (errors.WRITE_FAIL, f"WRITE_FAIL: write of {path} failed: {e}")
                failed.append(i)
        for (i, fd, path), problem in zip(targets, self._write(targets, views, allocation.offsets, fence)):
            if problem is None:
                paths[fd] = path
                written.append((i, fd, _io.crc32c(views[i])))
            elif isinstance(problem, (_io.WriteFenced, _usrbio.Fenced)):
                self._count("writes_fenced")
                outcomes[i] = (errors.WRITE_FAIL, f"WRITE_FAIL: the allocation's deadline of {answer.deadline_ms} ms "
                               f"was within the write margin before the write could start; not written")
                failed.append(i)
            else:
                outcomes[i] = (errors.WRITE_FAIL, f"WRITE_FAIL: write of {path} failed: {problem}")
                failed.append(i)
        written = self._flush_and_check(written, paths, views, allocation.offsets, fence, outcomes, failed)
        if failed:
            self._free(keys, allocation, failed, outcomes)
        if written:
            try:
                # Sent again while the master restarts (its allocations were logged, so the restarted master commits
                # them), until the allocations' deadline on this client's clock.
                notified = self._call("NotifyDistributedDiskSuccess", pb.NotifyDistributedDiskSuccessRequest(
                    keys=[keys[i] for i, _, _ in written], tenant_ids=[self.tenant] * len(written),
                    placements=allocation.records([(i, crc) for i, _, crc in written]),
                    kv_blocks=[kv_blocks[i] for i, _, _ in written] if kv_blocks else None), False, resend_until=started + deadline_s)
                for (i, _, _), outcome in zip(written, Allocation.notified(notified, len(written))):
                    outcomes[i] = outcome
            except errors.OutcomeUnknown as e:
                for i, _, _ in written:
                    outcomes[i] = (e.result, f"{e} (written; whether it was committed is unknown: check with mcctl stat {keys[i]})")
            except McctlError as e:
                for i, _, _ in written:
                    outcomes[i] = (e.result, f"{e} (written but not committed; the master reclaims the pages at the deadline)")
        return outcomes  # type: ignore[return-value]

    # Times a batch writes its objects in a bucket file again when the file keeps being replaced under it, before it gives up.
    MAX_REWRITES = 2

    def _flush_and_check(self, written: List[Tuple[int, int, int]], paths: Dict[int, str], views: List[List[memoryview]],
                         offsets: Sequence[int], fence: float, outcomes: list, failed: List[int]) -> List[Tuple[int, int, int]]:
        """Makes the batch's writes durable (fdatasync of each file, the files at once), then checks that each fd written
        through is still open on the bucket file at its path (one stat each): bytes written into a file deleted or
        replaced under this client are in no file another node can read, and acknowledging them would lose them. Where
        the path names another file (created again, or restored), the objects written there are written again through it
        and checked again, up to MAX_REWRITES times; where it names none, or the flush failed, they fail (and are added to
        ``failed``, their outcomes set). The objects written, flushed and checked, each with the fd it is in now."""
        by_fd: Dict[int, List[Tuple[int, int, int]]] = {}
        for entry in written:
            by_fd.setdefault(entry[1], []).append(entry)
        checked: List[Tuple[int, int, int]] = []
        for attempt in range(self.MAX_REWRITES + 1):
            if not by_fd:
                break
            try:
                flushed = self._files.flush({fd: paths[fd] for fd in by_fd})
            except OSError as e:  # closed under the call
                flushed = {fd: e for fd in by_fd}
            again: Dict[int, List[Tuple[int, int, int]]] = {}
            for fd, objects in by_fd.items():
                path = paths[fd]
                now = flushed[fd]
                failure = None
                if isinstance(now, OSError):
                    failure = f"WRITE_FAIL: {now}"
                elif now != fd and attempt == self.MAX_REWRITES:
                    failure = (f"WRITE_FAIL: bucket file {path} was replaced under this client {attempt + 1} times in a row "
                               f"while the batch wrote into it; nothing was committed, write it again")
                if failure is not None:
                    for i, _, _ in objects:
                        outcomes[i] = (errors.WRITE_FAIL, failure)
                        failed.append(i)
                    continue
                if now == fd:
                    checked.extend(objects)
                    continue
                paths[now] = path
                targets = [(i, now, path) for i, _, _ in objects]
                for (i, _, crc), problem in zip(objects, self._write(targets, views, offsets, fence)):
                    if isinstance(problem, (_io.WriteFenced, _usrbio.Fenced)):
                        self._count("writes_fenced")
                        outcomes[i] = (errors.WRITE_FAIL, "WRITE_FAIL: the allocation's deadline was within the write margin "
                                                          "before its bucket file, replaced under this client, could be written again")
                        failed.append(i)
                    elif problem is not None:
                        outcomes[i] = (errors.WRITE_FAIL, f"WRITE_FAIL: write of {path} failed: {problem}")
                        failed.append(i)
                    else:
                        self._count("stale_file_rewrites")
                        again.setdefault(now, []).append((i, now, crc))
            by_fd = again
        return checked

    # Longest a batch waits in all for room the master says is due from quarantine (a few read leases).
    MAX_WAIT_FOR_ROOM_S = 15.0

    def _wait_for_room(self, allocation: Allocation, keys: List[str], tenants: List[str], sizes: List[int], overwrite: bool,
                       fence: float) -> None:
        """Keys refused for room the master says is due (NO_AVAILABLE_HANDLE with retry_after_ms: pages waiting in
        quarantine behind read leases) are asked for again once it is, while the batch's first allocations keep
        most of their deadline; the answers replace the refusals."""
        waited = 0.0
        while True:
            retry = allocation.waiting_for_room()
            if not retry:
                return
            after = allocation.retry_after_s(retry)
            if waited + after > self.MAX_WAIT_FOR_ROOM_S or after > (fence - time.monotonic()) / 2:
                return
            time.sleep(after)
            waited += after
            try:
                again = self._mutate("BatchAllocateDistributedPage", pb.BatchAllocateDistributedPageRequest(
                    keys=[keys[i] for i in retry], tenant_ids=[tenants[i] for i in retry],
                    sizes=[sizes[i] for i in retry], overwrite=overwrite, packed=True))
                allocation.replace(retry, Allocation(again, len(retry)))
            except McctlError:
                return  # the first answer's refusals stand

    def _free(self, keys: List[str], allocation: Allocation, failed: List[int], outcomes: list) -> None:
        try:
            freed = self._mutate("BatchFreeDistributedPage", pb.BatchFreeDistributedPageRequest(
                keys=[keys[i] for i in failed], tenant_ids=[self.tenant] * len(failed),
                descriptors=[allocation.descriptor(i) for i in failed]))
            self._count("page_leaks_prevented", sum(1 for s in freed.results if s.error == pb.OK))
        except McctlError as e:
            for i in failed:
                code, message = outcomes[i]
                outcomes[i] = (code, f"{message}; freeing its pages failed too ({e}), the master reclaims them at the deadline")

    def _put_all(self, keys: Sequence[str], buffers: Sequence[Any], overwrite: bool,
                 kv_blocks: Optional[Sequence[Any]] = None) -> List[Tuple[int, str]]:
        keys = _check_keys(keys)
        if len(buffers) != len(keys):
            raise InvalidParams(f"{len(keys)} keys but {len(buffers)} buffers: pass one buffer per key")
        try:
            blocks = _kv_events.to_protos(kv_blocks, len(keys))
        except (TypeError, ValueError) as e:
            raise InvalidParams(str(e)) from None
        views = []
        for i, buffer in enumerate(buffers):
            v = _io.views_of(buffer, _BufferOf(keys, i), writable=False)
            size = _io.total_size(v)
            if size < 1:
                raise InvalidParams(f"buffer for key {keys[i]!r} (index {i}) is empty: an object has at least 1 byte")
            if size > self.layout.bucket_size:
                raise InvalidParams(f"buffer for key {keys[i]!r} (index {i}) of {size} bytes is larger than a bucket "
                                    f"({self.layout.bucket_size} bytes)")
            views.append(v)
        if overwrite:
            self._remembered.forget(keys)  # moved by the overwrite: not worth reading during a lookup
        outcomes: List[Tuple[int, str]] = []
        for start, end in _chunks(len(keys)):
            outcomes.extend(self._put(keys[start:end], views[start:end], overwrite, blocks[start:end] if blocks else None))
        return outcomes

    def batch_put_from(self, keys: Sequence[str], buffers: Sequence[Any], overwrite: bool = False,
                       kv_blocks: Optional[Sequence[Any]] = None) -> List[int]:
        """Writes key i from buffers[i] in place; 0 or a negative code (mcctl.errors) per key.

        A buffer is anything with the buffer protocol (bytes, bytearray, memoryview, numpy array), a CPU
        torch tensor, a (pointer, size) pair, or a list of those written one after another as one object.
        ``kv_blocks``: None, or per key the engine KV blocks the object holds (an mcctl.kv_events.KvBlocks, a dict of
        its fields, or None), kept with the mapping and announced to KV-aware routers (docs/wire-protocol.md, "KV events").
        """
        return [code for code, _ in self._put_all(keys, buffers, overwrite, kv_blocks)]

    def put(self, key: str, data: Any, overwrite: bool = False, kv_blocks: Any = None) -> None:
        """Writes one object; raises the McctlError subclass of what went wrong. ``kv_blocks``: as batch_put_from's, for this key."""
        code, message = self._put_all([check_key(key)], [data], overwrite, None if kv_blocks is None else [kv_blocks])[0]
        if code:
            raise _error_of(code, message)

    # ---- get ----

    def _lookup(self, keys: List[str]) -> Tuple[Placements, float]:
        asked = time.monotonic()  # the master counts the lease from no earlier than this
        answer = self._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
            keys=keys, tenant_ids=[self.tenant] * len(keys), packed=True))
        lease_s = answer.lease_ms / 1000.0
        found, safe_until = Placements.of(answer, len(keys)), asked + lease_s * (1 - _LEASE_KEPT_FOR_READ)
        if self.read_during_lookup:
            self._remembered.remember(keys, found, safe_until, self._memory is not None)
        return found, safe_until

    def _get(self, keys: List[str], destination: Callable[[int, int], Optional[List[Tuple[int, int]]]],
             looked_up: Optional[Tuple[Placements, float]] = None) -> List[Tuple[int, str]]:
        """Reads one batch; ``destination(i, size)`` gives the (address, size) regions to fill, or None when they
        are too small. ``looked_up``: the batch's placements and until when reads may start with them, from an
        earlier lookup; without it the batch is looked up here."""
        n = len(keys)
        outcomes: List[Tuple[int, str]] = [(errors.INTERNAL_ERROR, "INTERNAL_ERROR: not read")] * n
        counts: Counter = Counter()  # counted once per batch: the stats lock is not taken per key
        done: List[int] = []  # keys whose outcome is set: read during the lookup, or by the MEMORY pass
        try:
            if looked_up is not None:
                found, safe_until = looked_up  # the batch's own copy (Mappings hands out copies): marked DONE below
                if time.monotonic() <= safe_until:
                    self._count("lookups_saved")  # else the loop below looks the batch up again at once
            else:
                try:
                    early = None
                    if self.read_during_lookup and _io.native is not None and self._stub is not None and self._rings is None:
                        early = self._read_during_lookup(keys, destination, outcomes, counts)
                    found, safe_until, done = early if early is not None else (*self._lookup(keys), [])
                except McctlError as e:
                    return [(e.result, str(e))] * n
            read_from = self._read_usrbio if self._rings is not None else self._read_native if _io.native is not None else self._read_python
            if self._memory is not None and found.memory:
                done = sorted(done + self._read_memory_replicas(sorted(found.memory), keys, found, destination, outcomes, counts))
            i = 0
            while i < n:
                if time.monotonic() > safe_until:
                    # The lease would run out under the next read: ask again for the rest of the batch.
                    try:
                        fresh, safe_until = self._lookup(keys[i:])
                    except McctlError as e:
                        outcomes[i:] = [(e.result, str(e))] * (n - i)
                        break
                    found = found.then(i, fresh)
                    for j in done:
                        if j >= i:
                            found.buckets[j] = DONE
                    counts["lease_refreshes"] += 1
                i = read_from(i, keys, found, destination, safe_until, outcomes, counts)
        finally:
            for name, count in counts.items():
                self._count(name, count)
        return outcomes

    def _read_during_lookup(self, keys: List[str], destination, outcomes, counts) -> Optional[Tuple[Placements, float, List[int]]]:
        """Reads the keys this client looked up before, while their earlier lookup's lease lasts, at the placements
        that lookup answered, while the batch's own lookup is in flight; then keeps each read whose key the new
        answer places exactly where it was read from (bucket, offset, size and CRC32C), received while the earlier
        lease still held. Such a read is exact, not a guess: the earlier lease kept those pages from reuse for the
        whole read, so they held the object the earlier lookup named, and a key whose answer names the same pages
        before that lease ends still has that object, since the pages could not be given to another commit in
        between. The new answer, its lease and the indices whose outcomes are set (marked DONE in it); None when no
        key of the batch may be read so (the caller then looks up as usual); the lookup's McctlError when it failed."""
        recalled = self._remembered.recall(keys, time.monotonic() + _READ_DURING_LOOKUP_MIN_S)
        if recalled is None:
            return None
        previous, previous_until, attempted = recalled
        n = len(keys)
        early: List[Optional[Tuple[int, str]]] = [None] * n
        early_counts: Counter = Counter()
        plan, planned, planned_bytes = self._plan_native(0, keys, previous, destination, early, early_counts)
        threads = self._start_reading(planned_bytes)
        try:
            # The reader's own threads read while this one waits for the master, in a blocking call without the GIL.
            if not plan.start(previous_until, threads):
                return None
            try:
                found, safe_until = self._lookup(keys)
            except McctlError:
                counts["reads_during_lookup_wasted"] += attempted
                raise
            finally:
                done = plan.wait()  # always: until then the reader's threads write into the caller's buffers
                counts["reader_yields_during_lookup"] += plan.yields
        finally:
            self._stop_reading()
        answered = time.monotonic()
        self._read_outcomes(plan, done, planned, keys, previous, destination, early, early_counts)
        confirmed: List[int] = []
        if answered < previous_until:
            buckets, offsets, sizes, crcs = found.buckets, found.offsets, found.sizes, found.crcs
            if (buckets == previous.buckets and offsets == previous.offsets and sizes == previous.sizes
                    and crcs == previous.crcs and None not in early and all(outcome[0] >= 0 for outcome in early)):
                # Every key read, and placed again where it was read from: the batch's steady state, confirmed at once.
                outcomes[:] = early
                found.buckets = [DONE] * n
                confirmed = list(range(n))
            for i in range(n if not confirmed else 0):
                outcome = early[i]
                if (outcome is not None and outcome[0] >= 0 and buckets[i] == previous.buckets[i] and offsets[i] == previous.offsets[i]
                        and sizes[i] == previous.sizes[i] and crcs[i] == previous.crcs[i]):
                    outcomes[i] = outcome
                    buckets[i] = DONE
                    confirmed.append(i)
        counts["reads"] += len(confirmed)  # early_counts is dropped: a read not kept is read again and counted then
        counts["reads_during_lookup"] += len(confirmed)
        counts["reads_during_lookup_wasted"] += attempted - len(confirmed)
        return found, safe_until, confirmed

    def _read_memory_replicas(self, promoted: List[int], keys, found: Placements, destination, outcomes, counts) -> List[int]:
        """Reads the keys ``promoted`` (their mappings carry MEMORY replicas) from the nodes holding them; marks those
        read, and those whose buffer is too small, DONE in ``found``; the indices marked. The rest are left to the
        pread pass, as are keys the lease refresh looks up again."""
        wanted = []
        done = []
        for i in promoted:
            if found.buckets[i] < 0:
                continue  # the pread pass answers the master's error
            target = self._target(i, keys, found, destination, outcomes)
            if target is None:
                found.buckets[i] = DONE
                done.append(i)
                continue
            size, regions = target
            wanted.append((i, keys[i], found.memory[i], size, found.crcs[i], regions))
        served = self._memory.read_batch(self.tenant, wanted, counts)
        for i in served:
            outcomes[i] = (found.sizes[i], "")
            found.buckets[i] = DONE
        counts["memory_reads"] += len(served)
        counts["memory_fallbacks"] += len(wanted) - len(served)
        return sorted(done + served)

    def _target(self, i: int, keys, found: Placements, destination, outcomes) -> Optional[Tuple[int, List[Tuple[int, int]]]]:
        """(size, the destination cut to the object) of object i; None when its outcome is set already: the master's
        error for the key, BUFFER_OVERFLOW, or the MEMORY pass's read (DONE)."""
        bucket = found.buckets[i]
        if bucket < 0:
            if bucket != DONE:
                outcomes[i] = found.error(i, keys[i], self.tenant)
            return None
        size = found.sizes[i]
        regions = destination(i, size)
        if regions is None:
            outcomes[i] = (errors.BUFFER_OVERFLOW, f"BUFFER_OVERFLOW: object {keys[i]!r} of {size} bytes does not fit its buffer")
            return None
        return size, _io.first_regions(regions, size)

    @staticmethod
    def _read_failed(key: str, path: str, e: BaseException, counts: Counter) -> Tuple[int, str]:
        counts["read_errors"] += 1
        return errors.INVALID_READ, f"INVALID_READ: read of {key!r} from {path} failed: {e}"

    @staticmethod
    def _checksum_failed(key: str, path: str, offset: int, expected: int, actual: int, counts: Counter) -> Tuple[int, str]:
        counts["checksum_failures"] += 1
        return errors.INVALID_READ, (f"INVALID_READ: object {key!r} at {path} offset {offset} has "
                                     f"CRC32C {actual:#010x}, expected {expected:#010x}: a miss")

    def _path_of(self, bucket: int) -> str:
        try:
            return self._files.bucket_path(bucket)
        except OSError:
            return f"bucket {bucket}"

    def _read_python(self, start: int, keys, found: Placements, destination, safe_until: float, outcomes, counts) -> int:
        """Reads objects ``start``... one by one with os.preadv; the index of the first one left for a fresh lease."""
        checked: set = set()  # buckets whose files were checked for a replacement in this call
        for i in range(start, len(keys)):
            if i > start and time.monotonic() > safe_until:
                return i
            target = self._target(i, keys, found, destination, outcomes)
            if target is None:
                continue
            outcomes[i] = self._read_one(i, keys, found, target, counts, checked)
            if outcomes[i][0] >= 0:
                counts["reads"] += 1
        return len(keys)

    def _read_one(self, i: int, keys, found: Placements, target: Tuple[int, List[Tuple[int, int]]], counts, checked: set) -> Tuple[int, str]:
        """Reads object i with os.preadv into ``target`` (its size and regions) and checks it: its outcome. A read that
        fails its checksum or meets the end of the file is tried once more when the bucket file turns out to have been
        replaced under this client's fd (checked once per bucket of ``checked``): the object is in the new file."""
        size, regions = target
        bucket, offset = found.buckets[i], found.offsets[i]
        views = [_io.region_view(address, length) for address, length in regions]
        while True:
            try:
                path = self._files.bucket_path(bucket)
                self._files.check_range(path, offset, size)
                self._read_exactly(self._files.bucket_fd(bucket), views, offset, path)
            except EOFError as e:
                if self._replaced(bucket, checked):
                    continue
                return self._read_failed(keys[i], self._path_of(bucket), e, counts)
            except OSError as e:
                return self._read_failed(keys[i], self._path_of(bucket), e, counts)
            actual = _io.crc32c(views)
            if actual != found.crcs[i]:
                if self._replaced(bucket, checked):
                    continue
                return self._checksum_failed(keys[i], path, offset, found.crcs[i], actual, counts)
            return size, ""

    def _read_exactly(self, fd: int, views: List[memoryview], offset: int, path: str) -> None:
        """Fills ``views`` from ``offset`` of ``fd`` through the client's IO; the end of the file first is an EOFError."""
        if self._rings is None:
            _io.pread_all(fd, views, offset, path)
            return
        result = self._rings.execute([("r", fd, offset, views, path)])[0]
        if isinstance(result, OSError):
            raise result
        if result < _io.total_size(views):
            raise EOFError(f"{path} ends at {os.fstat(fd).st_size} bytes, before the object at offset {offset + result} does")

    # Most bytes of objects one reading thread submits at once on its ring set (its shared memory is 16 MiB).
    USRBIO_GROUP_BYTES = 16 << 20

    def _read_usrbio(self, start: int, keys, found: Placements, destination, safe_until: float, outcomes, counts) -> int:
        """Reads objects ``start``... through USRBIO: cut into groups of consecutive keys, one per reading thread at most
        and none over USRBIO_GROUP_BYTES, each submitted at once on a ring set of its own by the calling thread or one of
        the client's helper threads, then checked against its CRC32C (natively). A group starts only while the lease
        holds (the first always), and groups start in order: the index of the first key left for a fresh lease."""
        planned: List[Tuple[int, int, List[Tuple[int, int]]]] = []
        planned_bytes = 0
        for i in range(start, len(keys)):
            target = self._target(i, keys, found, destination, outcomes)
            if target is not None:
                planned.append((i, *target))
                planned_bytes += target[0]
        if not planned:
            return len(keys)
        threads = self._start_reading(planned_bytes)
        try:
            most = -(-len(planned) // threads)
            groups: List[List[Tuple[int, int, List[Tuple[int, int]]]]] = []
            group_bytes = 0
            for entry in planned:
                if not groups or len(groups[-1]) == most or group_bytes + entry[1] > self.USRBIO_GROUP_BYTES:
                    groups.append([])
                    group_bytes = 0
                groups[-1].append(entry)
                group_bytes += entry[1]
            taken = [0]
            lock = threading.Lock()  # guards taken

            def take() -> Counter:
                mine: Counter = Counter()  # counted apart per thread, added up below
                while True:
                    with lock:
                        g = taken[0]
                        if g == len(groups) or (g > 0 and time.monotonic() > safe_until):
                            return mine
                        taken[0] = g + 1
                    self._read_group(groups[g], keys, found, outcomes, mine)

            helpers = [self._helper_pool().submit(take) for _ in range(min(threads, len(groups)) - 1)]
            mine = take()
            for helper in helpers:
                mine.update(helper.result())
            counts.update(mine)
        finally:
            self._stop_reading()
        return groups[taken[0]][0][0] if taken[0] < len(groups) else len(keys)

    def _helper_pool(self):
        with self._pool_lock:
            if self._helpers is None:
                from concurrent.futures import ThreadPoolExecutor
                self._helpers = ThreadPoolExecutor(MAX_READ_THREADS, thread_name_prefix="mcctl-usrbio-read")
            return self._helpers

    def _read_group(self, group, keys, found: Placements, outcomes, counts: Counter) -> None:
        """Reads one group's objects in one submission and sets their outcomes; an object that failed its checksum or met
        the end of its file is read again when its bucket file was replaced under this client's fd."""
        files = self._files
        # Counted before any fd is taken: a replacement by another thread after this point, while this group reads through
        # an fd it took before, shows as a changed count below (counted after, it would be missed).
        replacements = files.replacements
        ops = []
        meta = []
        for i, size, regions in group:
            bucket, offset = found.buckets[i], found.offsets[i]
            try:
                path = files.bucket_path(bucket)
                files.check_range(path, offset, size)
                fd = files.bucket_fd(bucket)
            except OSError as e:
                outcomes[i] = self._read_failed(keys[i], self._path_of(bucket), e, counts)
                continue
            views = [_io.region_view(address, length) for address, length in regions]
            ops.append(("r", fd, offset, views, path))
            meta.append((i, size, regions, views, path))
        results = self._rings.execute(ops) if ops else []
        checked: set = set()  # buckets whose files were checked for a replacement
        replaced: set = set()  # buckets whose failed objects are read again from the file now at the path
        for (i, size, regions, views, path), result in zip(meta, results):
            bucket, offset = found.buckets[i], found.offsets[i]
            if isinstance(result, OSError):
                outcomes[i] = self._read_failed(keys[i], path, result, counts)
                continue
            failure: Optional[Tuple[int, str]] = None
            if result < size:
                failure = self._read_failed(keys[i], path, EOFError(
                    f"{path} ends at {os.path.getsize(path)} bytes, before the object at offset {offset + result} does"), Counter())
            else:
                actual = _io.crc32c(views)
                if actual != found.crcs[i]:
                    failure = (None, actual)  # a checksum failure, named below unless the file was replaced
            if failure is None:
                outcomes[i] = (size, "")
                counts["reads"] += 1
            elif bucket in replaced or files.replacements != replacements or self._replaced(bucket, checked):
                # Replaced here, or by another thread while this group read through the fd it had taken before.
                replaced.add(bucket)
                outcomes[i] = self._read_one(i, keys, found, (size, regions), counts, checked)
                if outcomes[i][0] >= 0:
                    counts["reads"] += 1
            elif failure[0] is None:
                outcomes[i] = self._checksum_failed(keys[i], path, offset, found.crcs[i], failure[1], counts)
            else:
                counts["read_errors"] += 1
                outcomes[i] = failure

    def _replaced(self, bucket: int, checked: set) -> bool:
        """Whether ``bucket``'s file was replaced under this client's fd, which now is open on the new file: asked once per
        bucket of ``checked`` (a stat of its path), so a file whose objects really fail costs one stat, not one per object."""
        if bucket in checked:
            return False
        checked.add(bucket)
        return self._files.replace_if_stale(bucket)

    def _read_native(self, start: int, keys, found: Placements, destination, safe_until: float, outcomes, counts) -> int:
        """Reads objects ``start``... in one call of the native batch reader (preadv and CRC32C of each, without
        the GIL); the index of the first one left for a fresh lease."""
        plan, planned, planned_bytes = self._plan_native(start, keys, found, destination, outcomes, counts)
        threads = self._start_reading(planned_bytes)
        try:
            done = plan.run(safe_until, threads)
        finally:
            self._stop_reading()
        return self._read_outcomes(plan, done, planned, keys, found, destination, outcomes, counts)

    def _start_reading(self, planned_bytes: int) -> int:
        """Counts a batch in the native reader until _stop_reading; the threads it may read on. Batches read at the
        same moment share the client's read_threads: callers already fill the cores."""
        with self._stats_lock:
            self._batches_reading += 1
            return max(1, min(self.read_threads - self._batches_reading + 1, 1 + planned_bytes // READ_BYTES_PER_THREAD))

    def _stop_reading(self) -> None:
        with self._stats_lock:
            self._batches_reading -= 1

    def _plan_native(self, start: int, keys, found: Placements, destination, outcomes, counts) -> Tuple[_io.ReadPlan, List[int], int]:
        """The plan of objects ``start``... for the native reader, the indices planned, in order, and their bytes;
        the outcomes of keys that cannot be read (the master's error, a buffer too small, a bad range) are set."""
        if start == 0 and getattr(destination, "addresses", None) is not None and keys:
            whole = self._plan_columns(found, destination)
            if whole is not None:
                return whole
        planned: List[int] = []
        planned_bytes = 0
        files = self._files
        bucket_size = files.bucket_size
        bucket_fd = files.bucket_fd
        buckets, offsets, sizes, crcs = found.buckets, found.offsets, found.sizes, found.crcs
        # The plan's records and iovecs laid out flat here (ReadPlan.of), in the one pass over the batch.
        reads: List[int] = []
        iovecs: List[int] = []
        first = 0
        fd_of: Dict[int, int] = {}  # the batch's buckets' fds, asked of the pool once each
        for i in range(start, len(keys)):
            # The common case written out over plain lists: this loop runs for every key of a batch.
            bucket = buckets[i]
            if bucket < 0:
                if bucket != DONE:  # done already: read during the lookup, or by the MEMORY pass
                    self._target(i, keys, found, destination, outcomes)  # the master's error
                continue
            size = sizes[i]
            regions = destination(i, size)
            if regions is None:
                self._target(i, keys, found, destination, outcomes)  # BUFFER_OVERFLOW
                continue
            offset = offsets[i]
            fd = fd_of.get(bucket)
            if fd is None or offset < 0 or size < 0 or offset > bucket_size - size:
                try:
                    fd = fd_of[bucket] = bucket_fd(bucket)
                    files.check_range(files.bucket_path(bucket), offset, size)  # raises for a bad range, with the message
                except OSError as e:
                    outcomes[i] = self._read_failed(keys[i], self._path_of(bucket), e, counts)
                    continue
            if len(regions) == 1 and regions[0][1] == size:
                iovecs.extend(regions[0])
                count = 1
            else:
                cut = _io.first_regions(regions, size)
                for region in cut:
                    iovecs.extend(region)
                count = len(cut)
            reads.extend((fd, offset, size, first, count, crcs[i], 0, 0))
            first += count
            planned.append(i)
            planned_bytes += size
        return _io.ReadPlan.of(reads, iovecs), planned, planned_bytes

    def _plan_columns(self, found: Placements, destination: _io.Destinations) -> Optional[Tuple[_io.ReadPlan, range, int]]:
        """The plan of a whole batch laid out a column at a time, when every key has a placement that fits its bucket
        and its buffer's one region: the batch an engine reads, planned without a Python step per key. None when a key
        needs the key-by-key plan, which sets its outcome (the master's error, DONE, a buffer too small, a bad range,
        an empty object, a bucket file that does not open)."""
        buckets, offsets, sizes = found.buckets, found.offsets, found.sizes
        if (min(buckets) < 0 or min(sizes) <= 0 or min(offsets) < 0
                or max(map(operator.add, offsets, sizes)) > self._files.bucket_size
                or not all(map(operator.le, sizes, destination.capacity))):
            return None
        try:
            fd_of = {bucket: self._files.bucket_fd(bucket) for bucket in set(buckets)}
        except OSError:
            return None
        plan = _io.ReadPlan.of_columns(list(map(fd_of.__getitem__, buckets)), offsets, sizes, found.crcs,
                                       destination.addresses)
        return plan, range(len(buckets)), sum(sizes)

    def _read_outcomes(self, plan: _io.ReadPlan, done: int, planned: List[int], keys, found: Placements, destination, outcomes,
                       counts) -> int:
        """Sets the outcomes of the first ``done`` objects of a plan that was read; the index of the first key left
        unread (for a fresh lease), or len(keys). An object that failed its checksum or met the end of its file is read
        again (_read_one) when its bucket file turns out to have been replaced under this client's fd."""
        files = self._files
        buckets, offsets, crcs = found.buckets, found.offsets, found.crcs
        read, details = plan.outcomes()
        if type(planned) is range and done and min(read[:done]) >= 0:
            outcomes[:done] = [(result, "") for result in read[:done]]  # a whole batch planned from 0 (_plan_columns)
            counts["reads"] += done
            return planned[done] if done < len(planned) else len(keys)
        failed = 0
        checked: set = set()  # buckets whose files were checked for a replacement
        replaced: set = set()  # of those, the ones replaced: each of their failed objects is read again from the new file
        for k in range(done):
            result = read[k]
            if result >= 0:
                outcomes[planned[k]] = (result, "")
                continue
            i, detail = planned[k], details[k]
            if result in (_io.READ_CHECKSUM, _io.READ_END_OF_FILE) and (buckets[i] in replaced or self._replaced(buckets[i], checked)):
                replaced.add(buckets[i])
                target = self._target(i, keys, found, destination, outcomes)
                if target is not None:
                    outcomes[i] = self._read_one(i, keys, found, target, counts, checked)
                    failed += outcomes[i][0] < 0
                continue
            failed += 1
            path = files.bucket_path(buckets[i])
            if result == _io.READ_CHECKSUM:
                outcomes[i] = self._checksum_failed(keys[i], path, offsets[i], crcs[i], detail, counts)
            elif result == _io.READ_END_OF_FILE:
                outcomes[i] = self._read_failed(keys[i], path, EOFError(
                    f"{path} ends at {os.path.getsize(path)} bytes, before the object at offset {detail} does"), counts)
            else:
                outcomes[i] = self._read_failed(keys[i], path, OSError(detail, os.strerror(detail)), counts)
        counts["reads"] += done - failed
        return planned[done] if done < len(planned) else len(keys)

    def _get_all(self, keys: List[str], destination, looked_up: Optional[Tuple[Placements, float]] = None) -> List[Tuple[int, str]]:
        outcomes: List[Tuple[int, str]] = []
        for start, end in _chunks(len(keys)):
            part = None if looked_up is None else (looked_up[0].slice(start, end), looked_up[1])
            if isinstance(destination, _io.Destinations):
                window = destination if end - start == len(keys) else destination.window(start, end)
            else:
                window = lambda i, size, s=start: destination(s + i, size)
            outcomes.extend(self._get(keys[start:end], window, part))
        return outcomes

    def lookup(self, keys: Sequence[str]) -> Mappings:
        """Looks the keys up now, for a ``batch_get_into(keys, buffers, mappings=...)`` to come (see Mappings):
        one master call per 10,000 keys, as a read's own lookup. A key without a committed mapping is a miss
        of that read. Raises the McctlError of the call when the master cannot answer."""
        keys = _check_keys(keys)
        found: Optional[Placements] = None
        safe_until = float("inf")
        for start, end in _chunks(len(keys)):
            part, until = self._lookup(keys[start:end])
            found = part if found is None else found.then(len(found), part)
            safe_until = min(safe_until, until)
        return Mappings(self, keys, found if found is not None else Placements([], [], [], [], {}, {}), safe_until)

    def batch_get_into(self, keys: Sequence[str], buffers: Sequence[Any], mappings: Optional[Mappings] = None) -> List[int]:
        """Reads key i into buffers[i] in place; the bytes read, or a negative code (mcctl.errors), per key.

        A buffer smaller than its object gets BUFFER_OVERFLOW and nothing is written past it (nor into it, unless
        an earlier, smaller object of the key was read into it during the lookup: see read_during_lookup). Buffers
        are as for batch_put_from, but writable; a list of buffers is filled one after another. ``mappings``, from
        ``lookup()`` of these keys (or of more, these among them) by this client, spares the read its lookup call
        while their lease lasts; mappings that do not cover every key are not used.
        """
        keys = _check_keys(keys)
        if len(buffers) != len(keys):
            raise InvalidParams(f"{len(keys)} keys but {len(buffers)} buffers: pass one buffer per key")
        looked_up = None
        if mappings is not None:
            if not isinstance(mappings, Mappings) or mappings._owner is not self:
                raise InvalidParams(f"mappings {type(mappings).__name__} are not from this client's lookup(): pass what "
                                    f"lookup() of this client returned, or None")
            looked_up = mappings._for(keys)
        held: list = []  # holds exported buffers in place until every read is done
        destinations = _io.Destinations.of(buffers, lambda i: _BufferOf(keys, i), held)
        return [code for code, _ in self._get_all(keys, destinations, looked_up)]

    def get(self, key: str) -> Optional[bytes]:
        """The object's bytes, or None when the key is missing or its bytes fail their checksum."""
        key = check_key(key)
        holder: List[bytearray] = []
        held: list = []

        def fresh(_i: int, size: int) -> List[Tuple[int, int]]:
            holder.append(bytearray(size))
            return _io.writable_regions(holder[-1], "buffer", held)

        code, message = self._get_all([key], fresh)[0]
        if code >= 0:
            return bytes(holder[-1])
        if code in (errors.OBJECT_NOT_FOUND, errors.INVALID_READ):
            return None
        raise _error_of(code, message)

    # ---- look-ups and removal ----

    def batch_is_exist(self, keys: Sequence[str]) -> List[bool]:
        keys = _check_keys(keys)
        found: List[bool] = []
        for start, end in _chunks(len(keys)):
            answer = self._read("BatchExistKey", pb.BatchExistKeyRequest(keys=keys[start:end],
                                                                         tenant_ids=[self.tenant] * (end - start)))
            for status in answer.results:
                if status.error != pb.OK:
                    raise errors.error_for(pb.ErrorCode.Name(status.error), status.message)
            found.extend(answer.exists)
        return found

    def is_exist(self, key: str) -> bool:
        return self.batch_is_exist([key])[0]

    def batch_remove(self, keys: Sequence[str]) -> List[int]:
        """Removes each key; 0 or a negative code (OBJECT_NOT_FOUND, ...) per key."""
        keys = _check_keys(keys)
        codes: List[int] = []
        self._remembered.forget(keys)  # a read would find them moved or gone: not worth reading during its lookup
        for start, end in _chunks(len(keys)):
            try:
                answer = self._mutate("BatchRemove", pb.BatchRemoveRequest(keys=keys[start:end],
                                                                           tenant_ids=[self.tenant] * (end - start)))
                codes.extend(errors.RESULT_BY_NAME.get(pb.ErrorCode.Name(s.error), errors.INTERNAL_ERROR) for s in answer.results)
            except McctlError as e:
                codes.extend([e.result] * (end - start))
        return codes

    def remove(self, key: str) -> None:
        """Removes one key; ObjectNotFound when it is not there."""
        self._mutate("Remove", pb.RemoveRequest(tenant_id=self.tenant, key=check_key(key)))

    def get_size(self, key: str) -> int:
        """The object's size in bytes; ObjectNotFound when it is not there."""
        answer = self._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(
            tenant_id=self.tenant, key=check_key(key)))
        return answer.distributed_disk.object_size

    def list_keys(self, prefix: str = "") -> List[str]:
        """The tenant's keys starting with ``prefix``, in key order."""
        if not isinstance(prefix, str):
            raise InvalidParams(f"prefix is a {type(prefix).__name__}, not a str")
        keys: List[str] = []
        token = ""
        while True:
            page = self._read("ListKeys", pb.ListKeysRequest(tenant_id=self.tenant, prefix=prefix, page_size=1000,
                                                             page_token=token))
            keys.extend(info.key for info in page.keys)
            token = page.next_page_token
            if not token:
                return keys


    # ---- the DRAM tier ----

    def promote(self, key: str) -> PromotionTask:
        """Queues the committed object of ``key`` for promotion into a node's DRAM segment now, whatever its reads; the
        task (the one already queued when there is one). ObjectNotFound when the key has no committed object,
        ReplicaIsNotReady while it is being written, NoAvailableHandle when the master's queue is full."""
        answer = self._mutate("Promote", pb.PromoteRequest(tenant_id=self.tenant, key=check_key(key)))
        return PromotionTask.of(answer.task)

    def promotions(self) -> Promotions:
        """The master's promotion tasks, of every tenant the caller may see, and its counters."""
        answer = self._read("ListPromotions", pb.ListPromotionsRequest())
        return Promotions(tasks=[PromotionTask.of(t) for t in answer.tasks], admission_reads=answer.admission_reads,
                          queued_total=answer.queued_total, succeeded_total=answer.succeeded_total,
                          failed_total=answer.failed_total, memory_objects=answer.memory_objects,
                          memory_bytes=answer.memory_bytes, memory_evicted_total=answer.memory_evicted_total)


_ERROR_BY_RESULT = {
    errors.RPC_FAIL: MasterUnavailable,
    errors.INVALID_PARAMS: errors.InvalidParams,
    errors.OBJECT_NOT_FOUND: errors.ObjectNotFound,
    errors.NO_AVAILABLE_HANDLE: errors.NoAvailableHandle,
    errors.REPLICA_IS_NOT_READY: errors.ReplicaIsNotReady,
    errors.OBJECT_ALREADY_EXISTS: errors.ObjectAlreadyExists,
}


def _error_of(code: int, message: str) -> McctlError:
    cls = _ERROR_BY_RESULT.get(code, errors.InternalError)
    name = cls.code + ": "
    return cls(message[len(name):] if message.startswith(name) else message)
