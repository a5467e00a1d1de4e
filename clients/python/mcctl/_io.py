"""Bucket-file IO: buffers as byte views, the fd pool, gather writes and scatter reads in place, CRC32C.

No byte passes through a Python ``bytes`` object here: writes hand the caller's memory to ``os.pwritev``,
reads fill it with ``os.preadv``, and the CRC32C runs over the same memory.
"""

from __future__ import annotations

import array
import ctypes
import errno
import operator
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from . import _crc32c
from .errors import InvalidParams

# Most buffers one pwritev/preadv call takes; the rest go in the next call.
IOV_MAX = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else 1024


class WriteFenced(Exception):
    """The allocation's deadline (less the client's margin) passed before a write could start."""


def _checked_pair(address: Any, size: Any, what: str) -> None:
    if not isinstance(address, int) or not isinstance(size, int) or isinstance(address, bool):
        raise InvalidParams(f"{what}: a (pointer, size) pair must hold two integers, got ({address!r}, {size!r})")
    if size < 0:
        raise InvalidParams(f"{what}: size {size} is negative")
    if size and address <= 0:
        raise InvalidParams(f"{what}: pointer {address:#x} is not a valid address")


def _pointer_view(address: int, size: int, what: str) -> memoryview:
    _checked_pair(address, size, what)
    if size == 0:
        return memoryview(bytearray(0))
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


def _tensor_region(tensor: Any, what: str) -> Tuple[int, int]:
    if getattr(tensor, "is_cpu", None) is not True:  # torch's is_cpu is a tenth of the cost of device.type
        device = getattr(tensor, "device", None)
        if device is not None and getattr(device, "type", "cpu") != "cpu":
            raise InvalidParams(f"{what}: tensor is on {device}; only CPU memory can be read or written in place")
    if not tensor.is_contiguous():
        raise InvalidParams(f"{what}: tensor is not contiguous; pass tensor.contiguous() or a contiguous slice")
    size = tensor.numel() * tensor.element_size()
    return (tensor.data_ptr(), size) if size else (0, 0)


def _tensor_view(tensor: Any, what: str) -> memoryview:
    address, size = _tensor_region(tensor, what)
    return _pointer_view(address, size, what) if size else memoryview(bytearray(0))


def _one_view(buffer: Any, what: str) -> memoryview:
    if _is_pair(buffer):
        return _pointer_view(buffer[0], buffer[1], what)
    if hasattr(buffer, "data_ptr") and hasattr(buffer, "element_size"):
        return _tensor_view(buffer, what)
    view = _memory_view(buffer, what)
    return view.cast("B") if view.format != "B" or view.ndim != 1 else view


def _is_pair(buffer: Any) -> bool:
    return isinstance(buffer, tuple) and len(buffer) == 2 and all(isinstance(x, int) for x in buffer)


def _memory_view(buffer: Any, what: str) -> memoryview:
    try:
        view = memoryview(buffer)
    except TypeError:
        raise InvalidParams(f"{what}: {type(buffer).__name__} is not a buffer: pass bytes, bytearray, memoryview, "
                            f"a numpy array, a CPU torch tensor or a (pointer, size) pair") from None
    if not view.contiguous:
        raise InvalidParams(f"{what}: buffer is not contiguous")
    return view


def _read_only(what: str) -> InvalidParams:
    return InvalidParams(f"{what}: buffer is read-only; reads need writable memory (bytearray, a numpy array, ...)")


def writable_regions(buffer: Any, what: Any, keep: list) -> List[Tuple[int, int]]:
    """The (address, size) regions of one object's destination, filled one after another: one buffer, a
    (pointer, size) pair, or a list of them. ``keep`` receives what holds the memory in place (an exported
    buffer cannot be resized or freed); it must outlive the read. ``what`` names the buffer in an error."""
    regions = []
    for part in buffer if isinstance(buffer, list) else [buffer]:
        if _is_pair(part):
            _checked_pair(part[0], part[1], what)
            regions.append(part)
        elif hasattr(part, "data_ptr") and hasattr(part, "element_size"):
            regions.append(_tensor_region(part, what))
        else:
            view = _memory_view(part, what)
            if view.readonly:
                raise _read_only(what)
            if view.nbytes:
                holder = (ctypes.c_char * view.nbytes).from_buffer(view)
                keep.append(holder)
                regions.append((ctypes.addressof(holder), view.nbytes))
    return regions


class Destinations:
    """Where each object of a batch read goes: the (address, size) regions of buffer i, filled one after another, and
    how many bytes they hold; an object larger than that gets no regions (BUFFER_OVERFLOW). ``addresses`` holds each
    buffer's one address when every buffer of the batch is a single region (a tensor, a bytearray, a (pointer, size)
    pair: what engines pass), else None; the read's plan is then laid out a column at a time instead of key by key,
    and the regions are made only for a key that asks (``regions`` is None until then)."""

    __slots__ = ("regions", "capacity", "addresses")

    def __init__(self, regions: Optional[List[List[Tuple[int, int]]]], capacity: List[int], addresses: Optional[List[int]]):
        self.regions, self.capacity, self.addresses = regions, capacity, addresses

    def __call__(self, i: int, size: int) -> Optional[List[Tuple[int, int]]]:
        if size > self.capacity[i]:
            return None
        if self.regions is None:
            return [(self.addresses[i], self.capacity[i])]
        return self.regions[i]

    def window(self, start: int, end: int) -> "Destinations":
        """The destinations of buffers start..end, numbered from 0."""
        regions = None if self.regions is None else self.regions[start:end]
        addresses = None if self.addresses is None else self.addresses[start:end]
        return Destinations(regions, self.capacity[start:end], addresses)

    @staticmethod
    def of(buffers: Sequence[Any], name_of: Callable[[int], Any], keep: list) -> "Destinations":
        """writable_regions of each of ``buffers``; ``name_of(i)`` names buffer i in an error, made only then. This
        runs for every key of a batch, on the caller's thread, holding the GIL; a batch of contiguous CPU tensors, what
        an engine passes most, is taken a column at a time."""
        torch = sys.modules.get("torch")  # a caller with tensors has imported it; mcctl does not need it
        tensor = torch.Tensor if torch is not None else None
        if tensor is not None and buffers and set(map(type, buffers)) == {tensor}:
            if all(map(_IS_CPU, buffers)) and all(map(tensor.is_contiguous, buffers)):
                capacity = list(map(operator.mul, map(tensor.numel, buffers), map(tensor.element_size, buffers)))
                addresses = list(map(tensor.data_ptr, buffers))
                if 0 in capacity:  # an empty tensor's region is (0, 0), as writable_regions gives it
                    addresses = [address if size else 0 for address, size in zip(addresses, capacity)]
                return Destinations(None, capacity, addresses)
        regions: List[List[Tuple[int, int]]] = []
        capacity = []
        addresses: Optional[List[int]] = []
        for i, buffer in enumerate(buffers):
            if type(buffer) is tensor and buffer.is_cpu and buffer.is_contiguous():
                size = buffer.numel() * buffer.element_size()
                parts = [(buffer.data_ptr(), size) if size else (0, 0)]
            else:
                parts = writable_regions(buffer, name_of(i), keep)
            regions.append(parts)
            capacity.append(sum(length for _, length in parts))
            if addresses is not None:
                if len(parts) == 1:
                    addresses.append(parts[0][0])
                else:
                    addresses = None  # a gather list, or an empty buffer: the plan goes key by key
        return Destinations(regions, capacity, addresses)


_IS_CPU = operator.attrgetter("is_cpu")


def first_regions(regions: Sequence[Tuple[int, int]], size: int) -> List[Tuple[int, int]]:
    """The regions cut to their first ``size`` bytes in total, without empty ones."""
    cut = []
    for address, length in regions:
        if size <= 0:
            break
        if length:
            cut.append((address, min(length, size)))
            size -= cut[-1][1]
    return cut


def views_of(buffer: Any, what: str, writable: bool) -> List[memoryview]:
    """The byte views of one object's memory: one buffer, a (pointer, size) pair, or a list of them (gather)."""
    parts = buffer if isinstance(buffer, list) else [buffer]
    views = [_one_view(part, what) for part in parts]
    if writable:
        for view in views:
            if view.readonly:
                raise _read_only(what)
    return views


def total_size(views: Sequence[memoryview]) -> int:
    return sum(view.nbytes for view in views)


crc32c = _crc32c.crc32c  # native when it can run here, else the crc32c package (mcctl._crc32c)
native = _crc32c.native  # the native library with the batch reader, or None: reads go one by one in Python


def region_view(address: int, size: int) -> memoryview:
    """A byte view of memory the caller holds in place (``writable_regions``)."""
    return memoryview((ctypes.c_char * size).from_address(address)).cast("B")


# What the native batch reader answers for an object that was not read and checked (_read_batch.c).
READ_FAILED = -1  # detail: errno
READ_END_OF_FILE = -2  # detail: the offset at which the file ended
READ_CHECKSUM = -3  # detail: the CRC32C of the bytes read
_FIELDS = 8  # int64 fields of one mcctl_read record
_RESULT, _DETAIL = 6, 7


class ReadPlan:
    """The objects of one batch for the native reader: where each is in which file, where its bytes go, and
    the CRC32C they must have. Built as flat int64 arrays, so a batch costs one call into C."""

    __slots__ = ("_reads", "_iovecs", "_records", "_handle", "yields")

    def __init__(self):
        self._handle = None  # a read started by start() until wait()
        self.yields = 0  # how often the helpers of start() gave way, once wait() returned
        self._reads = array.array("q")
        self._iovecs = array.array("q")  # (address, length) pairs: struct iovec on 64-bit Linux
        self._records = 0

    @staticmethod
    def of(reads: List[int], iovecs: List[int]) -> "ReadPlan":
        """A plan of objects already laid out flat: per object the eight fields of its record (fd, offset, size,
        its first iovec, its iovec count, crc, 0, 0), and the (address, length) pairs of the iovecs they count."""
        plan = ReadPlan()
        plan._reads.extend(reads)
        plan._iovecs.extend(iovecs)
        plan._records = len(reads) // _FIELDS
        return plan

    @staticmethod
    def of_columns(fds: Sequence[int], offsets: Sequence[int], sizes: Sequence[int], crcs: Sequence[int],
                   addresses: Sequence[int]) -> "ReadPlan":
        """A plan of one iovec per object, laid out a column at a time: object i is sizes[i] bytes of fds[i] from
        offsets[i], read into addresses[i] (which must hold them until run() returns) and checked against crcs[i]."""
        n = len(fds)
        plan = ReadPlan()
        reads, iovecs = plan._reads, plan._iovecs
        reads.frombytes(bytes(8 * _FIELDS * n))  # result and detail start at 0, as add() writes them
        reads[0::_FIELDS] = array.array("q", fds)
        reads[1::_FIELDS] = array.array("q", offsets)
        reads[2::_FIELDS] = array.array("q", sizes)
        reads[3::_FIELDS] = array.array("q", range(n))  # object i's one iovec is iovec i
        reads[4::_FIELDS] = array.array("q", (1,)) * n
        reads[5::_FIELDS] = array.array("q", crcs)
        iovecs.frombytes(bytes(16 * n))
        iovecs[0::2] = array.array("q", addresses)
        iovecs[1::2] = array.array("q", sizes)
        plan._records = n
        return plan

    def add(self, fd: int, offset: int, size: int, regions: Sequence[Tuple[int, int]], crc: int) -> None:
        """``regions`` hold exactly ``size`` bytes (first_regions) and stay in place until run() returns."""
        if self._handle is not None:
            raise RuntimeError("this plan is being read: its arrays must stay in place")
        first = len(self._iovecs) // 2
        for region in regions:
            self._iovecs.extend(region)
        self._reads.extend((fd, offset, size, first, len(regions), crc, 0, 0))
        self._records += 1

    def run(self, safe_until: float, threads: int = 1) -> int:
        """Reads and checks the objects, without the GIL, on up to ``threads`` threads; stops before an object
        (never the first) once time.monotonic() has passed ``safe_until``. How many it read: always the first so
        many of the plan."""
        if not self._records:
            return 0
        reads, _ = self._reads.buffer_info()
        iovecs, _ = self._iovecs.buffer_info()
        return native.read_batch_threads(reads, self._records, iovecs, int(safe_until * 1e9), threads)

    def start(self, safe_until: float, threads: int) -> bool:
        """As run(), on up to ``threads`` of the reader's helper threads (the first object too only before
        ``safe_until``), returning at once; wait() must follow, and until it returns the plan's memory must stay in
        place. False when no helper thread could be started (nothing is read; wait() answers 0)."""
        if self._handle is not None:
            raise RuntimeError("this plan is being read already")
        if not self._records:
            return False
        reads, _ = self._reads.buffer_info()
        iovecs, _ = self._iovecs.buffer_info()
        self._handle = native.read_batch_start(reads, self._records, iovecs, int(safe_until * 1e9), threads)
        return self._handle is not None

    def wait(self) -> int:
        """How many objects the reading started by start() read (the first so many of the plan), once it is done;
        what the helpers have not taken yet is read on the calling thread, within the same time limit. Until this is
        called the helpers give up the CPU after every 256 KiB they read, so that the thread that started them, waiting
        on something else (the batch's lookup), is not kept waiting for a core; ``yields`` says how often they did."""
        handle, self._handle = self._handle, None
        if handle is None:
            return 0
        yields = ctypes.c_int64(0)
        read = native.read_batch_wait(handle, ctypes.byref(yields))
        self.yields = yields.value
        return read

    def outcomes(self) -> Tuple[Sequence[int], Sequence[int]]:
        """Per object, in the order added: bytes read and checked, or READ_*; and the detail of a READ_*."""
        return self._reads[_RESULT::_FIELDS], self._reads[_DETAIL::_FIELDS]


def _advance(views: List[memoryview], done: int) -> List[memoryview]:
    """The views left after ``done`` bytes of them were transferred."""
    while views and done >= views[0].nbytes:
        done -= views[0].nbytes
        views = views[1:]
    if views and done:
        views = [views[0][done:]] + views[1:]
    return views


def pwrite_all(fd: int, views: Sequence[memoryview], offset: int, fence: Optional[float]) -> None:
    """Writes every view, in order, from ``offset``; short writes are continued (EINTR is retried by Python).

    ``fence``: a time.monotonic() value after which no write may start (the allocation may be reclaimed).
    """
    left = [view for view in views if view.nbytes]
    while left:
        if fence is not None and time.monotonic() >= fence:
            raise WriteFenced()
        written = os.pwritev(fd, left[:IOV_MAX], offset)
        offset += written
        left = _advance(left, written)


def pread_all(fd: int, views: Sequence[memoryview], offset: int, path: str) -> None:
    """Fills every view from ``offset``; short reads are continued, the end of the file first is an error."""
    left = [view for view in views if view.nbytes]
    while left:
        n = os.preadv(fd, left[:IOV_MAX], offset)
        if n == 0:
            raise EOFError(f"{path} ends at {os.fstat(fd).st_size} bytes, before the object at offset {offset} does")
        offset += n
        left = _advance(left, n)


BUCKET_FILE_NAME = "bucket_%02x.data"  # the layout's name of bucket file i (BucketLayout.bucketFileName)


def bucket_of_file_name(path: str) -> Optional[int]:
    """The index of the bucket file a path names, or None when its name is not a bucket file's."""
    name = os.path.basename(path)
    prefix, suffix = BUCKET_FILE_NAME.split("%02x")
    if not (name.startswith(prefix) and name.endswith(suffix)):
        return None
    try:
        return int(name[len(prefix):len(name) - len(suffix)], 16)
    except ValueError:
        return None


class BucketFileGone(OSError):
    """A bucket file this client had open is gone from its path: deleted under the tier."""

    def __init__(self, path: str):
        super().__init__(f"bucket file {path} was deleted while this client had it open: what was written into it cannot be "
                         f"read by any node (restore the file or restart the master, which creates it empty; see mcctl stats)")
        self.errno = errno.ENOENT


class BucketFiles:
    """The fd pool: at most one open fd per bucket file, shared by every thread (positional IO needs no
    shared position). Files are never created or truncated here; a missing one is FileNotFoundError.

    Paths in descriptors are the master's; ``root`` is where this node mounts that root, so a path is
    rebased from ``master_root`` onto ``root``.

    Each fd is remembered with the file it is open on (device and inode, from fstat). A bucket file deleted or replaced
    under an open fd leaves the fd on a file no other node can open: ``check`` tells a writer so before it notifies, and
    ``replace_if_stale`` lets a reader whose read failed take the file now at the path. A replaced fd is kept open, not
    closed, until the client closes: another thread may be reading or writing through it, and a closed fd's number could
    be handed to another file under that thread. Replacements are rare (an operator's act), so few are ever kept.

    With ``registrar`` (USRBIO's library), each fd is registered for USRBIO's IOs as it is opened and deregistered before
    it is closed; the identity rules are the same for both IOs.

    ``_lock`` guards ``_fds``, ``_identity``, ``_retired``, ``_closed`` and the creation of ``_sync_pool``; it is held
    only to look up, open or replace an fd, never for IO.
    """

    # Files a batch's flushes run on at once: a batch's keys land in many bucket files (each key's home bucket),
    # and each fdatasync waits on the device (on a shared filesystem, on its storage service), so the waits overlap
    # instead of adding up.
    SYNC_THREADS = 16

    def __init__(self, root: str, master_root: str, bucket_size: int, bucket_count: int, registrar: Any = None):
        self.root = os.path.abspath(root)
        self._registrar = registrar
        self.master_root = os.path.normpath(master_root)
        self.bucket_size = bucket_size
        self.bucket_count = bucket_count
        self._lock = threading.Lock()
        self._fds: dict = {}
        self._identity: Dict[int, Tuple[int, int]] = {}  # fd -> (st_dev, st_ino) of the file it is open on
        self._retired: List[int] = []  # fds replaced by the file now at their path, closed with the client
        self._local: dict = {}  # master path -> local path; written without the lock, every writer stores the same value
        # Bucket index -> fd, in front of _fds for reads that name buckets by index: written under the lock once the
        # fd is in _fds, read without it (a list item is read whole).
        self._by_bucket: List[Optional[int]] = [None] * bucket_count
        self._closed = False
        self._sync_pool: Optional[ThreadPoolExecutor] = None
        # fds replaced so far: a read that failed through an fd taken before a replacement reads again (written under the
        # lock, read without it)
        self.replacements = 0

    def bucket_path(self, bucket: int) -> str:
        """The local path of bucket file ``bucket`` (the layout names them <root>/bucket_%02x.data)."""
        if not 0 <= bucket < self.bucket_count:
            raise OSError(f"bucket {bucket} is not one of the layout's {self.bucket_count} (0 to {self.bucket_count - 1})")
        return os.path.join(self.root, BUCKET_FILE_NAME % bucket)

    def bucket_fd(self, bucket: int) -> int:
        """The fd of bucket file ``bucket``: a list look-up once it is open."""
        fd = self._by_bucket[bucket] if 0 <= bucket < self.bucket_count else None
        if fd is not None and not self._closed:
            return fd
        path = self.bucket_path(bucket)
        fd = self.fd(path)
        with self._lock:
            if not self._closed:
                self._by_bucket[bucket] = fd
        return fd

    def local_path(self, master_path: str) -> str:
        path = self._local.get(master_path)
        if path is None:
            path = self._local[master_path] = self._rebase(master_path)  # a racing thread stores the same value
        return path

    def _rebase(self, master_path: str) -> str:
        relative = os.path.relpath(os.path.normpath(master_path), self.master_root)
        if relative.startswith(os.pardir) or os.path.isabs(relative):
            raise OSError(f"bucket file {master_path} is outside the master's root {self.master_root}")
        return os.path.join(self.root, relative)

    def check_range(self, path: str, offset: int, size: int) -> None:
        if offset < 0 or size < 0 or offset > self.bucket_size - size:
            raise OSError(f"object at {path} offset {offset} size {size} does not fit in a bucket of {self.bucket_size} bytes")

    def fd(self, path: str) -> int:
        with self._lock:
            if self._closed:
                raise OSError("the client is closed")
            fd = self._fds.get(path)
            if fd is None:
                fd = self._open(path)
                self._fds[path] = fd
            return fd

    def _open(self, path: str) -> int:
        """Opens ``path`` and remembers the file it opened. Caller holds the lock."""
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except OSError as e:
            if e.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)  # a read-only mount still serves reads
        if self._registrar is not None:
            try:
                self._registrar.register(fd, path)
            except OSError:
                os.close(fd)
                raise
        opened = os.fstat(fd)
        self._identity[fd] = (opened.st_dev, opened.st_ino)
        return fd

    def check(self, path: str, fd: int) -> int:
        """Whether the bytes written through ``fd`` are in the bucket file at ``path``, for every node to read: one stat
        of the path. ``fd`` when they are (the path names the file ``fd`` is open on); otherwise the fd of the file now at
        the path (opened here if needed), through which they must be written again. Raises BucketFileGone when no file
        is at the path any more."""
        try:
            now = os.stat(path)
        except FileNotFoundError:
            raise BucketFileGone(path) from None
        if self._identity.get(fd) == (now.st_dev, now.st_ino):
            return fd
        return self._replace(path, (now.st_dev, now.st_ino))

    def replace_if_stale(self, bucket: int) -> bool:
        """After a read of ``bucket`` that failed its checksum or met the end of the file: when the path now names another
        file than the open fd's (the file was replaced under it), takes the new file in its place. Whether it did, and
        the read is worth trying again."""
        fd = self._by_bucket[bucket] if 0 <= bucket < self.bucket_count else None
        if fd is None:
            return False
        try:
            now = os.stat(self.bucket_path(bucket))
        except OSError:
            return False  # nothing to read instead: the read's own failure stands
        if self._identity.get(fd) == (now.st_dev, now.st_ino):
            return False
        return self._replace(self.bucket_path(bucket), (now.st_dev, now.st_ino)) != fd

    def _replace(self, path: str, at_path: Tuple[int, int]) -> int:
        """The fd for ``path`` open on the file ``at_path`` names: the pool's own when it is (another thread replaced it
        already), else a new one, the old kept in _retired."""
        with self._lock:
            if self._closed:
                raise OSError("the client is closed")
            old = self._fds.get(path)
            if old is not None and self._identity.get(old) == at_path:
                return old
            fd = self._open(path)
            self._fds[path] = fd
            if old is not None:
                self._retired.append(old)
                self.replacements += 1
            bucket = bucket_of_file_name(path)
            if bucket is not None and 0 <= bucket < self.bucket_count and self._by_bucket[bucket] is not None \
                    and os.path.dirname(path) == self.root:
                self._by_bucket[bucket] = fd
            return fd

    def flush(self, files: Dict[int, str]) -> Dict[int, Any]:
        """fdatasync of every fd of ``files`` (fd -> path), then ``check`` of it against its path, on up to SYNC_THREADS
        threads at once. Per fd: the fd its bytes are in for every node to read (itself), another fd to write them again
        through (the file was replaced), or the OSError of the flush or the check (BucketFileGone: deleted)."""
        results: Dict[int, Any] = {}

        def one(fd: int) -> None:
            try:
                os.fdatasync(fd)
            except OSError as e:
                results[fd] = OSError(f"fdatasync of {files[fd]} failed: {e}")
                return
            try:
                results[fd] = self.check(files[fd], fd)
            except OSError as e:
                results[fd] = e

        if len(files) <= 1:
            for fd in files:
                one(fd)
            return results
        with self._lock:
            if self._closed:
                raise OSError("the client is closed")
            if self._sync_pool is None:
                self._sync_pool = ThreadPoolExecutor(self.SYNC_THREADS, thread_name_prefix="mcctl-sync")
            pool = self._sync_pool
        for _ in pool.map(one, files):
            pass
        return results

    def open_count(self) -> int:
        with self._lock:
            return len(self._fds)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fds, self._fds = list(self._fds.values()) + self._retired, {}
            self._retired = []
            self._by_bucket = [None] * self.bucket_count
            pool, self._sync_pool = self._sync_pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        for fd in fds:
            if self._registrar is not None:
                self._registrar.deregister(fd)  # before the close: a number closed while registered never registers again
            os.close(fd)
