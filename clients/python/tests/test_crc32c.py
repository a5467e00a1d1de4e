"""The native CRC32C against the crc32c package and known vectors, and the fallback when it cannot run."""

from __future__ import annotations

import ctypes
import os
import platform
import random
import shutil
import stat
import subprocess
import sys
import textwrap

import crc32c as package
import numpy as np
import pytest
import torch

from mcctl import _crc32c, _io

from conftest import HERE

PACKAGE_DIR = os.path.dirname(HERE)
KNOWN = [(b"", 0), (b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43)]
NATIVE_EXPECTED = platform.machine().lower() in ("x86_64", "amd64") and shutil.which("cc") is not None and \
    "sse4_2" in open("/proc/cpuinfo").read()


def native_or_skip() -> _crc32c.Native:
    if not NATIVE_EXPECTED:
        pytest.skip("no x86-64 CPU with SSE4.2 and a C compiler here")
    assert _crc32c.native is not None, f"the native CRC32C should run here: {_crc32c.fallback_reason}"
    return _crc32c.native


def lengths():
    """Every length up to two AVX-512 blocks and a bit (each path's edges), then random ones up to 3 MiB."""
    rng = random.Random(7)
    return list(range(0, 600)) + [rng.randrange(600, 3 << 20) for _ in range(60)] + [8192 * 3, 8192 * 3 + 1, 768, 769]


def test_known_vectors_every_implementation():
    native = native_or_skip()
    for data, expected in KNOWN:
        assert package.crc32c(data) == expected
        assert native.function(0, data, len(data)) == expected
        assert native.sse42(0, data, len(data)) == expected
        assert _crc32c.crc32c([memoryview(data)]) == expected
    # Continuing a CRC over a split buffer is the CRC of the whole.
    assert _crc32c.crc32c([memoryview(b"1234"), memoryview(bytearray(b"56789"))]) == 0xE3069283


def test_random_lengths_and_alignments_match_the_package():
    native = native_or_skip()
    data = np.random.default_rng(3).integers(0, 256, (3 << 20) + 64, dtype=np.uint8)
    memory = memoryview(data)
    raw = data.tobytes()
    rng = random.Random(11)
    for length in lengths():
        start = rng.randrange(0, 64)  # every alignment of the first byte
        seed = rng.getrandbits(32)
        expected = package.crc32c(raw[start:start + length], seed)
        address = data.ctypes.data + start
        assert native.function(seed, address, length) == expected, (length, start)
        assert native.sse42(seed, address, length) == expected, (length, start)
        assert _crc32c.crc32c([memory[start:start + length]]) == package.crc32c(raw[start:start + length]), (length, start)


def test_every_kind_of_buffer_the_client_takes():
    native_or_skip()
    rng = np.random.default_rng(5)
    source = rng.integers(0, 256, 1 << 20, dtype=np.uint8)
    raw = source.tobytes()
    tensor = torch.from_numpy(source.copy())
    pinned = ctypes.create_string_buffer(raw, len(raw))
    for start, length in [(0, len(raw)), (1, 65536), (4093, 300_001), (17, 255), (99, 1)]:
        expected = package.crc32c(raw[start:start + length])
        buffers = {
            "bytes": raw[start:start + length],
            "bytearray": bytearray(raw[start:start + length]),
            "memoryview of bytes": memoryview(raw)[start:start + length],
            "numpy slice": source[start:start + length],
            "numpy uint32 view": np.frombuffer(raw[start:start + length - length % 4], dtype=np.uint32),
            "torch slice": tensor[start:start + length],
            "pointer pair": (ctypes.addressof(pinned) + start, length),
            "gather list": [tensor[start:start + length // 3], memoryview(raw)[start + length // 3:start + length]],
        }
        for kind, buffer in buffers.items():
            want = package.crc32c(raw[start:start + length - length % 4]) if kind == "numpy uint32 view" else expected
            views = _io.views_of(buffer, kind, writable=False)
            assert _io.crc32c(views) == want, (kind, start, length)
            # the first bytes of the regions, as reads cut their destination to the object
            if not any(view.readonly for view in views):
                cut = _io.first_regions(_io.writable_regions(buffer, kind, []), length // 2)
                assert _io.crc32c([_io.region_view(a, n) for a, n in cut]) == package.crc32c(raw[start:start + length // 2]), \
                    (kind, start, length)


def run_python(code: str, env: dict, cwd: str) -> subprocess.CompletedProcess:
    full = dict(env, PYTHONPATH=PACKAGE_DIR)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                          env=full, cwd=cwd)


ROUND_TRIP = """
    import logging
    logging.basicConfig(level=logging.DEBUG, format="%(name)s %(levelname)s %(message)s")
    import mcctl
    from mcctl import _crc32c, errors
    from mcctl._proto import master_pb2 as pb
    print("backend:", _crc32c.backend)
    with mcctl.Client(master="{master}", tenant="{tenant}") as c:
        data = bytes(range(256)) * 4000 + b"tail"
        c.put("crc/one", data)
        assert c.get("crc/one") == data
        place = c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(tenant_id=c.tenant, key="crc/one")).distributed_disk
        with open(place.file_path, "r+b") as f:
            f.seek(place.offset + 70001)
            f.write(bytes([data[70001] ^ 1]))
        dest = bytearray(len(data))
        assert c.batch_get_into(["crc/one"], [dest]) == [errors.INVALID_READ]
        print("round trip and miss: ok")
"""


def test_fallback_without_a_compiler_checks_reads_with_the_package(master, tenant, tmp_path):
    empty_bin = tmp_path / "bin"
    empty_bin.mkdir()
    env = dict(os.environ, PATH=str(empty_bin), XDG_CACHE_HOME=str(tmp_path / "cache"), MCCTL_CRC32C="auto")
    done = run_python(ROUND_TRIP.format(master=master.address, tenant=tenant), env, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "backend: crc32c package" in done.stdout
    assert "round trip and miss: ok" in done.stdout
    fallback_lines = [line for line in done.stderr.splitlines() if line.startswith("mcctl.crc32c")]
    assert fallback_lines == ["mcctl.crc32c DEBUG mcctl: CRC32C from the crc32c package: no C compiler (cc, gcc or clang) on PATH"]
    assert not os.path.exists(tmp_path / "cache" / "mcctl") or not os.listdir(tmp_path / "cache" / "mcctl")


def test_forced_python_runs_no_compiler_and_native_reads_agree(master, tenant, tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), MCCTL_CRC32C="python")
    done = run_python(ROUND_TRIP.format(master=master.address, tenant=tenant + "-py"), env, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "backend: crc32c package" in done.stdout and "round trip and miss: ok" in done.stdout
    assert not os.path.exists(tmp_path / "cache" / "mcctl")
    if NATIVE_EXPECTED:
        env["MCCTL_CRC32C"] = "native"
        done = run_python(ROUND_TRIP.format(master=master.address, tenant=tenant + "-native"), env, str(tmp_path))
        assert done.returncode == 0, done.stderr
        assert "backend: native" in done.stdout and "round trip and miss: ok" in done.stdout


def test_library_compiled_once_into_a_private_cache(tmp_path):
    native_or_skip()
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), MCCTL_CRC32C="auto")
    show = "from mcctl import _crc32c; print(_crc32c.backend); print(_crc32c.native.library._name)"
    first = run_python(show, env, str(tmp_path))
    assert first.returncode == 0, first.stderr
    backend, path = first.stdout.split("\n")[:2]
    assert backend.startswith("native")
    assert os.path.dirname(path) == str(tmp_path / "cache" / "mcctl")
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    built = os.stat(path).st_mtime_ns
    second = run_python(show, env, str(tmp_path))
    assert second.stdout.split("\n")[1] == path and os.stat(path).st_mtime_ns == built  # loaded, not compiled again
    assert [name for name in os.listdir(os.path.dirname(path)) if "partial" in name] == []


def test_cache_others_can_write_is_refused(tmp_path):
    native_or_skip()
    shared = tmp_path / "cache" / "mcctl"
    shared.mkdir(parents=True)
    os.chmod(shared, 0o777)
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), MCCTL_CRC32C="auto")
    done = run_python("from mcctl import _crc32c; print(_crc32c.native.library._name)", env, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert not done.stdout.startswith(str(shared)) and os.listdir(shared) == []


def test_unknown_choice_is_one_warning_and_auto(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), MCCTL_CRC32C="fastest")
    done = run_python("import mcctl._crc32c as c; print(c.backend)", env, str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == "MCCTL_CRC32C='fastest' is not one of auto, native, python; using auto"
    assert done.stdout.startswith("native" if NATIVE_EXPECTED else "crc32c package")
