"""CRC-32C of buffers in place: the native code of _crc32c_hw.c when this machine can build and run it, else
the crc32c package. The same library carries the batch reader of _read_batch.c (mcctl._io.ReadPlan), which
checks what it reads with this CRC32C; without the library the client reads in Python.

The native code (the crc32 instruction of SSE4.2, and VPCLMULQDQ folding on CPUs with AVX-512) is compiled
on first use with the system C compiler into a per-user cache directory, keyed by the source's hash and the
interpreter, and called through ctypes, which releases the GIL for the call: threads verify in parallel,
and no byte is copied (the C code reads the buffer's own memory).

``MCCTL_CRC32C``: ``auto`` (default: native when it works, else the package), ``native`` (the same, but a
failure is logged as a warning), ``python`` (the package, no compiler is run). Nothing here fails an import
as long as one of the two works.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import platform
import shutil
import stat
import subprocess
import sys
import tempfile
from typing import Optional, Sequence

log = logging.getLogger("mcctl.crc32c")

_HERE = os.path.dirname(os.path.abspath(__file__))
# One library from both: the CRC32C, and the batch reader that checks what it reads with it.
SOURCES = (os.path.join(_HERE, "_crc32c_hw.c"), os.path.join(_HERE, "_read_batch.c"))
CHOICES = ("auto", "native", "python")
_FLAGS = ["-O2", "-fPIC", "-shared", "-pthread"]  # each function names its own target (sse4.2, avx512...): loads on any x86-64
_COMPILE_TIMEOUT_S = 120
_FEATURE_SSE42 = 1
_FEATURE_AVX512_VPCLMUL = 2
_CHECK_VECTORS = ((b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA))


class NativeUnavailable(Exception):
    """Why the native CRC32C cannot be used on this machine (one line)."""


def cache_dir() -> str:
    """A directory of this user's own for the compiled library: $XDG_CACHE_HOME/mcctl, ~/.cache/mcctl, or
    a temp directory; one that others could write to is refused (a library loaded from it runs as us)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    candidates = [os.path.join(base, "mcctl"), os.path.join(tempfile.gettempdir(), f"mcctl-{os.getuid()}")]
    reasons = []
    for directory in candidates:
        try:
            os.makedirs(directory, mode=0o700, exist_ok=True)
            info = os.stat(directory)
            if info.st_uid != os.getuid() or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                reasons.append(f"{directory} is not this user's alone")
                continue
            if os.access(directory, os.W_OK | os.X_OK):
                return directory
            reasons.append(f"{directory} is not writable")
        except OSError as e:
            reasons.append(f"{directory}: {e.strerror or e}")
    raise NativeUnavailable("no cache directory for the compiled CRC32C: " + "; ".join(reasons))


def _compiler() -> str:
    for name in ("cc", "gcc", "clang"):
        path = shutil.which(name)
        if path:
            return path
    raise NativeUnavailable("no C compiler (cc, gcc or clang) on PATH")


def library_path(directory: Optional[str] = None) -> str:
    """The compiled library, compiling it first when this source, compiler and interpreter have none yet."""
    if platform.machine().lower() not in ("x86_64", "amd64"):
        raise NativeUnavailable(f"the native CRC32C is for x86-64; this machine is {platform.machine()}")
    sources = []
    for name in SOURCES:
        with open(name, "rb") as f:
            sources.append(f.read())
    compiler = _compiler()
    key = hashlib.sha256(b"\0".join([*sources, compiler.encode(), " ".join(_FLAGS).encode(),
                                     sys.implementation.cache_tag.encode(), platform.machine().encode()])).hexdigest()[:16]
    directory = directory or cache_dir()
    path = os.path.join(directory, f"crc32c_hw-{key}.so")
    if os.path.isfile(path):
        return path
    fd, partial = tempfile.mkstemp(prefix="crc32c_hw-", suffix=".so.partial", dir=directory)
    os.close(fd)
    try:
        try:
            done = subprocess.run([compiler, *_FLAGS, "-o", partial, *SOURCES], capture_output=True, text=True,
                                  timeout=_COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise NativeUnavailable(f"{compiler} could not compile {' and '.join(SOURCES)}: {e}") from None
        if done.returncode != 0:
            first = next((line for line in done.stderr.splitlines() if "error" in line), done.stderr.strip()[:200])
            raise NativeUnavailable(f"{compiler} could not compile {' and '.join(SOURCES)} (exit {done.returncode}): {first}")
        os.replace(partial, path)  # atomic: a process compiling at the same time loads either file, both whole
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return path


class Native:
    """The loaded library. ``function(crc, address, size)`` continues ``crc`` over ``size`` bytes at ``address``."""

    def __init__(self, path: str):
        try:
            self.library = ctypes.CDLL(path)
        except OSError as e:
            raise NativeUnavailable(f"{path} cannot be loaded: {e}") from None
        self.features = int(self.library.mcctl_crc32c_features())
        if not self.features & _FEATURE_SSE42:
            raise NativeUnavailable("this CPU has no SSE4.2 crc32 and pclmulqdq instructions")
        self.function = self._bind("mcctl_crc32c")
        self.sse42 = self._bind("mcctl_crc32c_sse42")  # the path CPUs without AVX-512 take, for tests
        # (plan of mcctl_read records, how many, iovec array, stop-after ns) -> how many were read
        self.read_batch = self.library.mcctl_read_batch
        self.read_batch.restype = ctypes.c_int64
        self.read_batch.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64]
        # the same on up to so many threads (the last argument)
        self.read_batch_threads = self.library.mcctl_read_batch_threads
        self.read_batch_threads.restype = ctypes.c_int64
        self.read_batch_threads.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        # the same on helper threads only, returning at once with a handle (NULL: nothing started), the helpers giving
        # way now and then until the wait for it, which reads what they have not taken yet and says how often they did
        self.read_batch_start = self.library.mcctl_read_batch_start
        self.read_batch_start.restype = ctypes.c_void_p
        self.read_batch_start.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        self.read_batch_wait = self.library.mcctl_read_batch_wait
        self.read_batch_wait.restype = ctypes.c_int64
        self.read_batch_wait.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_int64)]
        for data, expected in _CHECK_VECTORS:
            for function in (self.function, self.sse42):
                got = function(0, data, len(data))
                if got != expected:
                    raise NativeUnavailable(f"{path} computes CRC-32C {got:#010x} of {data[:9]!r}..., not {expected:#010x}")
        self.name = "native, " + ("AVX-512 VPCLMULQDQ" if self.features & _FEATURE_AVX512_VPCLMUL else "SSE4.2")

    def _bind(self, name: str):
        function = getattr(self.library, name)
        function.restype = ctypes.c_uint32
        function.argtypes = [ctypes.c_uint32, ctypes.c_void_p, ctypes.c_size_t]
        return function


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer, to read a buffer's address without copying it (ctypes' from_buffer refuses
    read-only memory such as bytes)."""
    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int]
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None
_PyBUF_SIMPLE = 0


def _native_crc(function, views: Sequence[memoryview]) -> int:
    """The views' memory stays where it is during each call: every view holds its exporter's buffer."""
    value = 0
    for view in views:
        size = view.nbytes
        if not size:
            continue
        if not view.readonly:  # reads always land here: the cheaper of the two ways to an address
            value = function(value, ctypes.addressof(ctypes.c_char.from_buffer(view)), size)
            continue
        held = _PyBuffer()
        _get_buffer(view, ctypes.byref(held), _PyBUF_SIMPLE)  # raises on a non-contiguous view
        try:
            value = function(value, held.buf, held.len)
        finally:
            _release_buffer(ctypes.byref(held))
    return value


def _package_crc(views: Sequence[memoryview]) -> int:
    value = 0
    for view in views:
        value = _package.crc32c(view, value)
    return value


def _choose():
    choice = os.environ.get("MCCTL_CRC32C", "auto").strip().lower() or "auto"
    if choice not in CHOICES:
        log.warning("MCCTL_CRC32C=%r is not one of %s; using auto", choice, ", ".join(CHOICES))
        choice = "auto"
    reason = "MCCTL_CRC32C=python"
    if choice != "python":
        try:
            return Native(library_path()), ""
        except NativeUnavailable as e:
            reason = str(e)
        except Exception as e:  # never let the accelerator break the client: anything else is a fallback too
            reason = f"{type(e).__name__}: {e}"
        (log.warning if choice == "native" else log.debug)("mcctl: CRC32C from the crc32c package: %s", reason)
    return None, reason


try:
    import crc32c as _package
except ImportError:  # only the native code can check reads then
    _package = None

native, fallback_reason = _choose()
if native is None and _package is None:
    raise ImportError(f"mcctl needs the crc32c package where its native CRC32C cannot run ({fallback_reason})")

backend = native.name if native is not None else (
    f"crc32c package {getattr(_package, '__version__', '')}".rstrip() +
    (", hardware" if getattr(_package, "hardware_based", False) else ", software"))


def crc32c(views: Sequence[memoryview]) -> int:
    """The CRC-32C of the views' bytes one after another."""
    if native is not None:
        return _native_crc(native.function, views)
    return _package_crc(views)
