"""The Python USRBIO binding against the stand-in library that the storage module's build compiles (it is not 3FS:
it runs IOs on ordinary files and keeps the library's rules). MCCTL_USRBIO_STANDIN names it; by default it is
storage/target/native/libhf3fs_api_shared.so of this checkout."""

from __future__ import annotations

import ctypes
import errno
import os
import random
import threading

import pytest

from mcctl._usrbio import Cqe, Ior, Iov, Library, UsrbioIo, UsrbioUnavailable

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
NATIVE = os.path.join(REPO, "storage", "target", "native")
STANDIN = os.environ.get("MCCTL_USRBIO_STANDIN", os.path.join(NATIVE, "libhf3fs_api_shared.so"))
WITHOUT_WAIT = os.path.join(os.path.dirname(STANDIN), "libhf3fs_without_wait.so")

FILE_SIZE = 1 << 20
SMALL = dict(iov_bytes=64 << 10, block_bytes=16 << 10, entries=4, max_rings=2, timeout=20.0)


@pytest.fixture(scope="module")
def library() -> Library:
    if not os.path.isfile(STANDIN):
        pytest.fail(f"the USRBIO stand-in {STANDIN} is missing: build it with 'mvn -pl storage generate-test-resources' "
                    "(mvn verify builds it too) or set MCCTL_USRBIO_STANDIN")
    return Library(STANDIN)


@pytest.fixture
def mount(tmp_path) -> str:
    root = tmp_path / "mnt"
    (root / "3fs-virt").mkdir(parents=True)
    for name in ("bucket-0", "bucket-1"):
        (root / name).write_bytes(bytes(FILE_SIZE))
    return os.path.realpath(str(root))


def test_the_structs_have_the_headers_layout():
    assert (ctypes.sizeof(Iov), ctypes.sizeof(Ior), ctypes.sizeof(Cqe)) == (312, 600, 24)
    assert (Iov.mount_point.offset, Iov.size.offset, Iov.block_size.offset, Iov.numa.offset) == (32, 288, 296, 304)
    assert (Ior.iorh.offset, Ior.mount_point.offset, Ior.for_read.offset, Ior.flags.offset) == (312, 320, 576, 592)
    assert (Cqe.result.offset, Cqe.userdata.offset) == (8, 16)


def test_the_library_tells_a_3fs_path_from_another(library, mount, tmp_path):
    os.makedirs(os.path.join(mount, "kv", "deeper"))
    assert library.mount_point_of(os.path.join(mount, "kv", "deeper")) == mount
    plain = tmp_path / "plain"
    plain.mkdir()
    assert library.mount_point_of(str(plain)) is None
    fd = os.open(os.path.join(mount, "bucket-0"), os.O_RDONLY)
    try:
        assert library.is_hf3fs(fd)
    finally:
        os.close(fd)


def test_a_missing_library_or_function_is_one_line_naming_it(tmp_path):
    absent = str(tmp_path / "libhf3fs_api_shared.so")
    with pytest.raises(UsrbioUnavailable) as missing:
        Library(absent)
    assert missing.value.missing == "library"
    assert str(missing.value) == f"USRBIO library {absent} cannot be loaded: no such file"
    with pytest.raises(UsrbioUnavailable) as by_name:
        Library("hf3fs_api_shared_absent")
    assert "libhf3fs_api_shared_absent.so is not on the library path" in str(by_name.value)
    with pytest.raises(UsrbioUnavailable) as lacking:
        Library(WITHOUT_WAIT)
    assert lacking.value.missing == "symbol"
    assert str(lacking.value) == (f"USRBIO library {WITHOUT_WAIT} lacks the function hf3fs_wait_for_ios: it is not 3FS's "
                                  "libhf3fs_api_shared.so or is too old")


def test_rings_are_refused_off_a_3fs_mount(library, tmp_path):
    with pytest.raises(UsrbioUnavailable) as refused:
        UsrbioIo(library, str(tmp_path), True, **SMALL)
    assert refused.value.missing == "ring"
    assert "No such file or directory (errno 2)" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_a_gather_write_and_a_scatter_read_cross_blocks_and_rounds(library, mount):
    data = random.Random(1).randbytes(200_000)
    path = os.path.join(mount, "bucket-0")
    with UsrbioIo(library, mount, True, **SMALL) as io:
        io.write(path, 12_345, data[:7], memoryview(data)[7:150_007], bytearray(data[150_007:]))
        with open(path, "rb") as f:
            on_disk = f.read()
        assert on_disk[12_345:12_345 + len(data)] == data
        assert on_disk[12_344] == 0 and on_disk[12_345 + len(data)] == 0
        first, second = bytearray(70_001), bytearray(len(data) - 70_001)
        assert io.read(path, 12_345, first, memoryview(second)) == len(data)
        assert bytes(first + second) == data


def test_a_read_at_the_end_returns_what_is_before_it(library, mount):
    path = os.path.join(mount, "bucket-1")
    with UsrbioIo(library, mount, True, **SMALL) as io:
        io.write(path, FILE_SIZE - 40_000, b"\x07" * 40_000)
        dst = bytearray(100_000)
        assert io.read(path, FILE_SIZE - 40_000, dst) == 40_000
        assert dst[:40_000] == b"\x07" * 40_000 and dst[40_000:] == bytes(60_000)
        assert io.read(path, FILE_SIZE + 5000, bytearray(10)) == 0


def test_a_batch_runs_every_operation_and_keeps_each_failure_with_its_operation(library, mount):
    rng = random.Random(2)
    objects = [rng.randbytes(5_000 + 3_000 * i) for i in range(12)]
    paths = [os.path.join(mount, f"bucket-{i % 2}") for i in range(12)]
    with UsrbioIo(library, mount, True, **SMALL) as io:
        ops = [("w", paths[i], 80_000 * i + 17, [objects[i]]) for i in range(12)]
        ops.append(("w", os.path.join(mount, "bucket-9"), 0, [b"x"]))
        results = io.execute(ops)
        assert results[:12] == [len(o) for o in objects]
        assert isinstance(results[12], FileNotFoundError)
        assert not os.path.exists(os.path.join(mount, "bucket-9"))
        dsts = [bytearray(len(o)) for o in objects]
        results = io.execute([("r", paths[i], 80_000 * i + 17, [dsts[i]]) for i in range(12)])
        assert results == [len(o) for o in objects]
        assert [bytes(d) for d in dsts] == objects
    os.mkdir(os.path.join(mount, "a-directory"))
    with UsrbioIo(library, mount, False, **SMALL) as reader:  # read-only: the directory opens, its read fails in the library
        failed = reader.execute([("r", os.path.join(mount, "a-directory"), 0, [bytearray(4)])])[0]
        assert isinstance(failed, OSError) and failed.errno == errno.EISDIR
        assert str(failed).endswith(f"read of 4 bytes at offset 0 of {mount}/a-directory: Is a directory (errno 21)")


def test_threads_share_the_ring_sets_and_each_gets_its_own_bytes(library, mount):
    path = os.path.join(mount, "bucket-0")
    errors = []
    with UsrbioIo(library, mount, True, **SMALL) as io:
        def work(thread: int) -> None:
            try:
                rng = random.Random(thread)
                for _ in range(20):
                    data = rng.randbytes(30_000)
                    io.write(path, 250_000 * thread, data)
                    back = bytearray(len(data))
                    assert io.read(path, 250_000 * thread, back) == len(data)
                    assert back == data
            except BaseException as e:  # reported below, on the test's thread
                errors.append(e)

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert not errors, errors
        assert io.ring_count() <= SMALL["max_rings"]
        io.sync(path)


def test_close_deregisters_so_the_same_fd_numbers_register_again(library, mount):
    path = os.path.join(mount, "bucket-0")
    io = UsrbioIo(library, mount, True, **SMALL)
    io.write(path, 0, b"\x01")
    io.read(os.path.join(mount, "bucket-1"), 0, bytearray(1))
    assert io.open_file_count() == 2
    io.close()
    with UsrbioIo(library, mount, True, **SMALL) as again:
        again.write(path, 0, b"\x02")
    with open(path, "rb") as f:
        assert f.read(1) == b"\x02"


def test_the_stand_in_refuses_an_io_on_an_unregistered_fd(library, mount):
    iov, ior = Iov(), Ior()
    lib = library.lib
    assert lib.hf3fs_iovcreate(ctypes.byref(iov), mount.encode(), 4096, 0, -1) == 0
    assert lib.hf3fs_iorcreate4(ctypes.byref(ior), mount.encode(), 2, True, 0, 0, -1, 0) == 0
    fd = os.open(os.path.join(mount, "bucket-0"), os.O_RDONLY)
    try:
        assert lib.hf3fs_prep_io(ctypes.byref(ior), ctypes.byref(iov), True, iov.base, fd, 0, 512, None) == -errno.EBADF
    finally:
        os.close(fd)
        lib.hf3fs_iordestroy(ctypes.byref(ior))
        lib.hf3fs_iovdestroy(ctypes.byref(iov))

