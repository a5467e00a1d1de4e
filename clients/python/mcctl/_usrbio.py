"""Bucket-file IO through 3FS's USRBIO (``libhf3fs_api_shared.so``), by ctypes: the Python side of the Java
``UsrbioBucketIo``, with the same structs, rules and shape, and of ``BucketIoSelector`` (``choose``).

How an operation runs: its bytes are copied between the caller's buffers and a bounce region of an iov (shared
memory the 3FS FUSE process maps), cut where an iov block ends (no IO may cross a block) and where the iov or a ring
is full; every piece of a batch is prepped on the read or the write ring, both rings are submitted together and
waited for once, then the next round if the batch did not fit. A piece's negative result is that operation's
``OSError`` with the errno's text; a read piece short of its length is the end of the file.

A ring has one prepping and one waiting thread, so each ring set (one iov, a read ring, a write ring) is used by one
thread at a time: taken from a pool for the length of a call and given back, at most ``max_rings`` of them.

Durability: a write is done when its completion reports every byte (3FS has committed it on every storage target of
its chain); ``sync`` fsyncs the fd, which settles the file's length in 3FS's metadata.
"""

from __future__ import annotations

import ctypes
import errno
import os
import queue
import threading
import time
from typing import Callable, List, Optional, Sequence, Tuple, Union

DEFAULT_NAME = "hf3fs_api_shared"

REQUIRED_FUNCTIONS = ("hf3fs_iovcreate", "hf3fs_iovdestroy", "hf3fs_iorcreate4", "hf3fs_iordestroy", "hf3fs_reg_fd",
                      "hf3fs_dereg_fd", "hf3fs_prep_io", "hf3fs_submit_ios", "hf3fs_wait_for_ios", "hf3fs_is_hf3fs",
                      "hf3fs_extract_mount_point")


class Iov(ctypes.Structure):
    """``struct hf3fs_iov``: 312 bytes on 64-bit Linux."""
    _fields_ = [("base", ctypes.c_void_p), ("iovh", ctypes.c_void_p), ("id", ctypes.c_uint8 * 16),
                ("mount_point", ctypes.c_char * 256), ("size", ctypes.c_size_t), ("block_size", ctypes.c_size_t),
                ("numa", ctypes.c_int)]


class Ior(ctypes.Structure):
    """``struct hf3fs_ior``: 600 bytes on 64-bit Linux."""
    _fields_ = [("iov", Iov), ("iorh", ctypes.c_void_p), ("mount_point", ctypes.c_char * 256), ("for_read", ctypes.c_bool),
                ("io_depth", ctypes.c_int), ("priority", ctypes.c_int), ("timeout", ctypes.c_int), ("flags", ctypes.c_uint64)]


class Cqe(ctypes.Structure):
    """``struct hf3fs_cqe``: the result is the bytes done or -errno; userdata is what the IO was prepped with."""
    _fields_ = [("index", ctypes.c_int32), ("reserved", ctypes.c_int32), ("result", ctypes.c_int64),
                ("userdata", ctypes.c_void_p)]


class Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class UsrbioUnavailable(OSError):
    """USRBIO cannot be used; ``missing`` is "library", "symbol", "mount" or "ring", the message one line."""

    def __init__(self, missing: str, message: str):
        super().__init__(message)
        self.missing = missing

    def __str__(self) -> str:
        return self.args[0]


def _describe(code: int) -> str:
    return f"{os.strerror(code)} (errno {code})"


class Library:
    """The USRBIO library, by name on the library path (``hf3fs_api_shared``) or by a path to the ``.so``."""

    def __init__(self, name_or_path: str = DEFAULT_NAME):
        file = name_or_path if "/" in name_or_path else f"lib{name_or_path}.so"
        try:
            lib = ctypes.CDLL(file, use_errno=True)
        except OSError as e:
            if "/" in name_or_path:
                reason = "no such file" if not os.path.exists(name_or_path) else str(e).splitlines()[0]
                raise UsrbioUnavailable("library", f"USRBIO library {name_or_path} cannot be loaded: {reason}") from None
            raise UsrbioUnavailable("library", f"USRBIO library {file} is not on the library path (LD_LIBRARY_PATH or the "
                                               "system's): install the 3FS client library or pass its path") from None
        for function in REQUIRED_FUNCTIONS:
            if not hasattr(lib, function):
                raise UsrbioUnavailable("symbol", f"USRBIO library {name_or_path} lacks the function {function}: it is not "
                                                  "3FS's libhf3fs_api_shared.so or is too old")
        self.location = name_or_path
        c = ctypes
        lib.hf3fs_iovcreate.argtypes = [c.POINTER(Iov), c.c_char_p, c.c_size_t, c.c_size_t, c.c_int]
        lib.hf3fs_iovcreate.restype = c.c_int
        lib.hf3fs_iovdestroy.argtypes = [c.POINTER(Iov)]
        lib.hf3fs_iovdestroy.restype = None
        lib.hf3fs_iorcreate4.argtypes = [c.POINTER(Ior), c.c_char_p, c.c_int, c.c_bool, c.c_int, c.c_int, c.c_int, c.c_uint64]
        lib.hf3fs_iorcreate4.restype = c.c_int
        lib.hf3fs_iordestroy.argtypes = [c.POINTER(Ior)]
        lib.hf3fs_iordestroy.restype = None
        lib.hf3fs_reg_fd.argtypes = [c.c_int, c.c_uint64]
        lib.hf3fs_reg_fd.restype = c.c_int
        lib.hf3fs_dereg_fd.argtypes = [c.c_int]
        lib.hf3fs_dereg_fd.restype = None
        lib.hf3fs_prep_io.argtypes = [c.POINTER(Ior), c.POINTER(Iov), c.c_bool, c.c_void_p, c.c_int, c.c_size_t, c.c_uint64,
                                      c.c_void_p]
        lib.hf3fs_prep_io.restype = c.c_int
        lib.hf3fs_submit_ios.argtypes = [c.POINTER(Ior)]
        lib.hf3fs_submit_ios.restype = c.c_int
        lib.hf3fs_wait_for_ios.argtypes = [c.POINTER(Ior), c.POINTER(Cqe), c.c_int, c.c_int, c.POINTER(Timespec)]
        lib.hf3fs_wait_for_ios.restype = c.c_int
        lib.hf3fs_is_hf3fs.argtypes = [c.c_int]
        lib.hf3fs_is_hf3fs.restype = c.c_bool
        lib.hf3fs_extract_mount_point.argtypes = [c.c_char_p, c.c_int, c.c_char_p]
        lib.hf3fs_extract_mount_point.restype = c.c_int
        self.lib = lib

    def mount_point_of(self, path: str) -> Optional[str]:
        """The 3FS mount that holds ``path`` (which must exist), or None off 3FS."""
        out = ctypes.create_string_buffer(256)
        length = self.lib.hf3fs_extract_mount_point(out, len(out), os.fsencode(path))
        if length <= 1 or length > len(out):
            return None
        return os.fsdecode(out.value)

    def is_hf3fs(self, fd: int) -> bool:
        return bool(self.lib.hf3fs_is_hf3fs(fd))

    def register(self, fd: int, path: str) -> None:
        """Registers an open fd for IOs (``hf3fs_reg_fd``); an OSError naming ``path`` when the library refuses it."""
        registered = self.lib.hf3fs_reg_fd(fd, 0)
        if registered > 0:
            hint = " (the file is not on 3FS)" if registered == errno.EBADF else ""
            raise OSError(registered, f"USRBIO cannot register {path}: {_describe(registered)}{hint}")

    def deregister(self, fd: int) -> None:
        """Before the fd is closed: a number closed while registered could never be registered again."""
        self.lib.hf3fs_dereg_fd(fd)


_LOADED: dict = {}  # name or path -> Library: ctypes loads a library once per process anyway
_LOADED_LOCK = threading.Lock()


def load(name_or_path: str) -> Library:
    """The library ``name_or_path`` names, loaded and checked once per process."""
    with _LOADED_LOCK:
        library = _LOADED.get(name_or_path)
        if library is None:
            library = _LOADED[name_or_path] = Library(name_or_path)
        return library


MODES = ("auto", "posix", "usrbio")
IO_ENV = "MOONCAKE_DISTRIBUTED_IO"
LIBRARY_ENV = "MOONCAKE_DISTRIBUTED_USRBIO_LIBRARY"


class Choice:
    """The IO chosen and why: ``mode`` "posix" or "usrbio", ``reason`` one line; for USRBIO its library and mount."""

    __slots__ = ("mode", "reason", "library", "mount_point")

    def __init__(self, mode: str, reason: str, library: Optional[Library] = None, mount_point: Optional[str] = None):
        self.mode, self.reason, self.library, self.mount_point = mode, reason, library, mount_point


def _nearest_existing(path: str) -> str:
    at = os.path.abspath(path)
    while not os.path.isdir(at) and os.path.dirname(at) != at:
        at = os.path.dirname(at)
    return at


def choose(mode: str, source: str, fs_type: str, root: str, library: str) -> Choice:
    """The IO for ``mode`` (auto, posix or usrbio, from ``source``), as the Java ``BucketIoSelector`` chooses it: auto takes
    USRBIO when fs_type is hf3fs, the root is on a 3FS mount and the library loads, else POSIX; usrbio that cannot be
    used raises UsrbioUnavailable in one line naming what is missing (the library, a function of it, or the mount)."""
    if mode == "posix":
        return Choice("posix", f"posix: io is posix ({source})")

    def mount_of(loaded: Library) -> Optional[str]:
        return loaded.mount_point_of(_nearest_existing(root))

    def not_on_mount(loaded: Library) -> str:
        if os.path.exists(root):
            return f" (per {loaded.location}: no 3FS mount with a 3fs-virt directory holds it)"
        return f" (it does not exist yet, and per {loaded.location} no 3FS mount holds {_nearest_existing(root)})"

    if mode == "usrbio":
        try:
            loaded = load(library)
        except UsrbioUnavailable as e:
            raise UsrbioUnavailable(e.missing, f"io is usrbio ({source}) but {e}") from None
        mount = mount_of(loaded)
        if mount is None:
            raise UsrbioUnavailable("mount", f"io is usrbio ({source}) but root {root} is not on a 3FS mount{not_on_mount(loaded)}")
        return Choice("usrbio", f"usrbio: root {root} is on 3FS mount {mount}, library {loaded.location}", loaded, mount)
    if fs_type != "hf3fs":
        return Choice("posix", f"posix: io is auto and fs_type is {fs_type}; USRBIO is tried only with fs_type hf3fs")
    try:
        loaded = load(library)
    except UsrbioUnavailable as e:
        return Choice("posix", f"posix: io is auto but {e}")
    mount = mount_of(loaded)
    if mount is None:
        return Choice("posix", f"posix: io is auto but root {root} is not on a 3FS mount{not_on_mount(loaded)}")
    return Choice("usrbio", f"usrbio: root {root} is on 3FS mount {mount}, library {loaded.location}", loaded, mount)


class _RingSet:
    """One iov, a read ring and a write ring on it. One thread at a time (the pool hands it out)."""

    def __init__(self, library: Library, mount: bytes, iov_bytes: int, block_bytes: int, entries: int):
        lib = library.lib
        self.lib = lib
        self.iov = Iov()
        self.reads = Ior()
        self.writes = Ior()
        shown = os.fsdecode(mount)
        created = lib.hf3fs_iovcreate(ctypes.byref(self.iov), mount, iov_bytes, block_bytes, -1)
        if created < 0:
            raise UsrbioUnavailable("ring", f"USRBIO cannot create {iov_bytes} bytes of shared memory (iov) on 3FS mount "
                                            f"{shown}: {_describe(-created)}")
        for ring, for_read in ((self.reads, True), (self.writes, False)):
            created = lib.hf3fs_iorcreate4(ctypes.byref(ring), mount, entries, for_read, 0, 0, -1, 0)
            if created < 0:
                if not for_read:
                    lib.hf3fs_iordestroy(ctypes.byref(self.reads))
                lib.hf3fs_iovdestroy(ctypes.byref(self.iov))
                kind = "read" if for_read else "write"
                raise UsrbioUnavailable("ring", f"USRBIO cannot create a {kind} ring of {entries} entries on 3FS mount "
                                                f"{shown}: {_describe(-created)}")
        self.cqes = (Cqe * entries)()
        self.timespec = Timespec()
        self.base = self.iov.base
        self.size = iov_bytes
        self.block = block_bytes
        self.view = memoryview((ctypes.c_char * iov_bytes).from_address(self.base)).cast("B")
        self.destroyed = False

    def destroy(self) -> None:
        if not self.destroyed:
            self.destroyed = True
            self.view.release()
            self.lib.hf3fs_iordestroy(ctypes.byref(self.reads))
            self.lib.hf3fs_iordestroy(ctypes.byref(self.writes))
            self.lib.hf3fs_iovdestroy(ctypes.byref(self.iov))


Buffer = Union[bytes, bytearray, memoryview]
# An operation of UsrbioIo: ("r" or "w", path, offset, buffers).
Op = Tuple[str, str, int, Sequence[Buffer]]
# An operation of Rings: ("r" or "w", registered fd, offset, buffers, what it is for a message, e.g. the path).
FdOp = Tuple[str, int, int, Sequence[Buffer], str]


class Fenced(OSError):
    """A write not submitted: the writer's fence (its allocation's deadline, less its margin) had passed."""

    def __init__(self):
        super().__init__(errno.ETIMEDOUT, "the allocation's deadline was within the write margin before the write could be submitted")


class Rings:
    """USRBIO ring sets for operations on registered fds: each call borrows one ring set (one iov, a read ring and a
    write ring), so every thread reading or writing at the same time has its own, at most ``max_rings`` of them.
    Thread-safe; close it once no thread is in a call.

    ``_lock`` guards the list of ring sets and ``_closed``; it is taken alone, never around IO or a wait. Idle ring
    sets pass between threads through a queue, bounded by a semaphore.
    """

    def __init__(self, library: Library, mount_point: str, iov_bytes: int = 16 << 20, block_bytes: int = 1 << 20,
                 entries: int = 256, max_rings: int = 4, timeout: float = 60.0):
        if iov_bytes <= 0 or block_bytes <= 0 or block_bytes > iov_bytes or entries <= 0 or max_rings <= 0 or timeout <= 0:
            raise ValueError(f"USRBIO sizes: iov {iov_bytes} bytes, block {block_bytes}, entries {entries}, rings {max_rings}, "
                             f"timeout {timeout}: all must be positive and the block at most the iov")
        self._library = library
        self._mount = os.fsencode(mount_point)
        self._sizes = (iov_bytes, block_bytes, entries)
        self._timeout = timeout
        self._lock = threading.Lock()  # guards _all and _closed
        self._closed = False
        self._permits = threading.BoundedSemaphore(max_rings)
        self._idle: "queue.SimpleQueue[_RingSet]" = queue.SimpleQueue()
        self._all: List[_RingSet] = []
        self.rounds = 0  # rounds submitted, for a check that a batch goes as one (a lost count under a race only undercounts)
        first = _RingSet(library, self._mount, *self._sizes)  # a mount that cannot give a ring fails here
        self._all.append(first)
        self._idle.put(first)

    def ring_count(self) -> int:
        return len(self._all)

    def execute(self, ops: Sequence[FdOp], fence: Optional[float] = None) -> List[Union[int, OSError]]:
        """Runs every operation, submitted together and waited for once per round; returns each one's bytes done (for a
        read, fewer than asked only where the file ends) or its own ``OSError``. With ``fence`` (a time.monotonic()
        value), no round is submitted once it has passed: the operations not done are ``Fenced``. Raises only when the
        batch as a whole could not run."""
        rings = self._borrow()
        healthy = False
        try:
            results, healthy = self._run(rings, ops, fence)
            return results
        finally:
            self._give_back(rings, healthy)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            all_rings, self._all = self._all, []
        for rings in all_rings:
            rings.destroy()

    def _borrow(self) -> _RingSet:
        if self._closed:
            raise ValueError("USRBIO IO is closed")
        self._permits.acquire()
        try:
            return self._idle.get_nowait()
        except queue.Empty:
            pass
        try:
            rings = _RingSet(self._library, self._mount, *self._sizes)
        except BaseException:
            self._permits.release()
            raise
        with self._lock:
            self._all.append(rings)
        return rings

    def _give_back(self, rings: _RingSet, healthy: bool) -> None:
        if healthy and not self._closed:
            self._idle.put(rings)
        else:  # a ring whose round failed may still have IOs in flight: destroyed, never reused
            with self._lock:
                if rings in self._all:
                    self._all.remove(rings)
            rings.destroy()
        self._permits.release()

    def _run(self, rings: _RingSet, ops: Sequence[FdOp], fence: Optional[float]) -> Tuple[List[Union[int, OSError]], bool]:
        """Each operation's outcome, and whether the ring set may be used again (not when a round was prepped but not
        submitted: its IOs are still in the rings)."""
        count = len(ops)
        done = [0] * count
        failures: List[Optional[OSError]] = [None] * count
        at_end = [False] * count
        views: List[List[memoryview]] = []
        lengths = []
        for i, (kind, fd, offset, buffers, what) in enumerate(ops):
            if kind not in ("r", "w"):
                raise ValueError(f"operation {i}: kind {kind!r} is not 'r' or 'w'")
            if offset < 0:
                raise ValueError(f"operation {i}: negative offset {offset} in {what}")
            parts = [b if type(b) is memoryview and b.format == "B" and b.ndim == 1 else memoryview(b).cast("B") for b in buffers]
            if kind == "r" and any(p.readonly for p in parts):
                raise ValueError(f"operation {i}: a read into a read-only buffer: {what} offset {offset}")
            views.append(parts)
            lengths.append(sum(p.nbytes for p in parts))
            if fd < 0:
                failures[i] = OSError(errno.EBADF, f"{_op_text(ops[i], lengths[i])}: no open file")
        entries = self._sizes[2]
        pieces: List[Tuple[int, int, int, int, bool]] = []  # (op, op position, length, iov position, read)
        counts = {True: 0, False: 0}
        used = 0
        lib = self._library.lib

        def finish_round() -> None:
            nonlocal used
            if not pieces:
                return
            if fence is not None and time.monotonic() >= fence:
                raise _Unsubmitted()  # nothing of this round is submitted: its prepped IOs die with the ring set
            self.rounds += 1
            results = self._submit_and_wait(rings, counts)
            for p, (op, position, length, iov_position, read) in enumerate(pieces):
                if failures[op] is not None or at_end[op]:
                    continue
                result = results[p]
                if result < 0:
                    failures[op] = OSError(-result, f"{_op_text(ops[op], lengths[op])}: {_describe(-result)}")
                elif read:
                    if result:
                        _scatter(rings.view, iov_position, views[op], position, result)
                    done[op] += result
                    at_end[op] = result < length
                elif result != length:
                    failures[op] = OSError(errno.EIO, f"{_op_text(ops[op], lengths[op])}: USRBIO wrote {result} of {length} bytes")
                else:
                    done[op] += result
            pieces.clear()
            counts[True] = counts[False] = 0
            used = 0

        reusable = True
        try:
            for op, (kind, fd, offset, _, _) in enumerate(ops):
                read = kind == "r"
                position = 0
                while position < lengths[op] and failures[op] is None and not at_end[op]:
                    if used == rings.size or counts[read] == entries:
                        finish_round()
                        if failures[op] is not None or at_end[op]:
                            break
                    piece = min(lengths[op] - position, rings.size - used, rings.block - used % rings.block)
                    if not read:
                        _gather(views[op], position, rings.view, used, piece)
                    ring = rings.reads if read else rings.writes
                    prepped = lib.hf3fs_prep_io(ctypes.byref(ring), ctypes.byref(rings.iov), read, rings.base + used, fd,
                                                offset + position, piece, len(pieces))
                    if prepped < 0:
                        failures[op] = OSError(-prepped, f"{_op_text(ops[op], lengths[op])}: USRBIO refused the IO: {_describe(-prepped)}")
                        break
                    pieces.append((op, position, piece, used, read))
                    counts[read] += 1
                    used += piece
                    position += piece
            finish_round()
        except _Unsubmitted:
            reusable = False
            for op in range(count):
                if failures[op] is None and not at_end[op] and done[op] < lengths[op]:
                    failures[op] = Fenced()
        return [failures[i] if failures[i] is not None else done[i] for i in range(count)], reusable

    def _submit_and_wait(self, rings: _RingSet, counts: dict) -> List[int]:
        lib = self._library.lib
        total = counts[True] + counts[False]
        results = [0] * total
        for read, ring in ((True, rings.reads), (False, rings.writes)):
            if counts[read]:
                submitted = lib.hf3fs_submit_ios(ctypes.byref(ring))
                if submitted < 0:
                    raise OSError(-submitted, f"USRBIO submit on {os.fsdecode(self._mount)}: {_describe(-submitted)}")
        deadline = time.time() + self._timeout
        rings.timespec.tv_sec = int(deadline)
        rings.timespec.tv_nsec = int((deadline - int(deadline)) * 1e9)
        entries = self._sizes[2]
        for read, ring in ((True, rings.reads), (False, rings.writes)):
            expected, got = counts[read], 0
            while got < expected:
                reaped = lib.hf3fs_wait_for_ios(ctypes.byref(ring), rings.cqes, entries, expected - got, ctypes.byref(rings.timespec))
                if reaped < 0:
                    raise OSError(-reaped, f"USRBIO wait on {os.fsdecode(self._mount)}: {_describe(-reaped)}")
                for i in range(reaped):
                    cqe = rings.cqes[i]
                    results[cqe.userdata or 0] = cqe.result
                got += reaped
                if got < expected and time.time() >= deadline:
                    raise TimeoutError(f"USRBIO on {os.fsdecode(self._mount)}: {expected - got} of {expected} IOs did not "
                                       f"complete within {self._timeout:g} s")
        return results


class _Unsubmitted(Exception):
    """Inside Rings._run: the fence passed before a round was submitted."""


class UsrbioIo:
    """Reads and writes of bucket files by path through USRBIO rings, with a registered fd per file. Thread-safe; close it
    once no thread is in a call.

    ``_lock`` guards the fd pool and ``_closed``; it is taken alone, never around IO or a wait.
    """

    def __init__(self, library: Library, mount_point: str, writable: bool, iov_bytes: int = 16 << 20,
                 block_bytes: int = 1 << 20, entries: int = 256, max_rings: int = 4, timeout: float = 60.0):
        self._library = library
        self._writable = writable
        self._rings = Rings(library, mount_point, iov_bytes, block_bytes, entries, max_rings, timeout)
        self._lock = threading.Lock()  # guards _fds and _closed
        self._fds = {}
        self._closed = False

    def _fd(self, path: str) -> int:
        fd = self._fds.get(path)
        if fd is not None:
            return fd
        with self._lock:
            if self._closed:
                raise ValueError("USRBIO IO is closed")
            fd = self._fds.get(path)
            if fd is not None:
                return fd
            fd = os.open(path, (os.O_RDWR if self._writable else os.O_RDONLY) | os.O_CLOEXEC)
            try:
                self._library.register(fd, path)
            except OSError:
                os.close(fd)
                raise
            self._fds[path] = fd
            return fd

    def open_file_count(self) -> int:
        return len(self._fds)

    def ring_count(self) -> int:
        return self._rings.ring_count()

    def write(self, path: str, offset: int, *srcs: Buffer) -> None:
        """Writes the bytes of ``srcs``, one after another, at ``offset``."""
        result = self.execute([("w", path, offset, srcs)])[0]
        if isinstance(result, BaseException):
            raise result

    def read(self, path: str, offset: int, *dsts: Buffer) -> int:
        """Fills ``dsts``, one after another, from ``offset``; returns the bytes read (fewer only where the file ends)."""
        result = self.execute([("r", path, offset, dsts)])[0]
        if isinstance(result, BaseException):
            raise result
        return result

    def execute(self, ops: Sequence[Op]) -> List[Union[int, OSError]]:
        """Runs every operation (Rings.execute); a file that does not open is that operation's OSError."""
        fd_ops: List[FdOp] = []
        failed: dict = {}
        for i, (kind, path, offset, buffers) in enumerate(ops):
            try:
                fd = self._fd(path)
            except OSError as e:
                failed[i] = e
                fd = -1
            fd_ops.append((kind, fd, offset, buffers, path))
        results = self._rings.execute(fd_ops)
        return [failed.get(i, result) for i, result in enumerate(results)]

    def sync(self, path: str) -> None:
        """fsync: settles the file's length in 3FS's metadata (writes are durable once complete)."""
        os.fsync(self._fd(path))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            fds, self._fds = list(self._fds.values()), {}
        self._rings.close()
        for fd in fds:
            self._library.deregister(fd)  # before the close: a number closed while registered never registers again
            os.close(fd)

    def __enter__(self) -> "UsrbioIo":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _op_text(op, length: int) -> str:
    kind, where, offset = op[0], op[-1] if len(op) == 5 else op[1], op[2]
    return f"{'read' if kind == 'r' else 'write'} of {length} bytes at offset {offset} of {where}"


def _spans(views: List[memoryview], start: int, length: int):
    """(view, offset, count) pieces covering ``length`` bytes from byte ``start`` of ``views`` laid end to end."""
    for view in views:
        if start >= view.nbytes:
            start -= view.nbytes
            continue
        step = min(view.nbytes - start, length)
        yield view, start, step
        length -= step
        start = 0
        if not length:
            return


def _gather(srcs: List[memoryview], start: int, iov: memoryview, at: int, length: int) -> None:
    for src, offset, step in _spans(srcs, start, length):
        iov[at:at + step] = src[offset:offset + step]
        at += step


def _scatter(iov: memoryview, at: int, dsts: List[memoryview], start: int, length: int) -> None:
    for dst, offset, step in _spans(dsts, start, length):
        dst[offset:offset + step] = iov[at:at + step]
        at += step
