"""Batch reads, with the native batch reader and again with the Python reader (MCCTL_CRC32C=python, in a child
process): a corrupt object is a counted miss, a short bucket file is a read error, a small buffer is refused
with nothing written past it, and a lease that runs out mid-batch is renewed before the next read; on one
thread and on several (read_threads), whose reads are always the first so many objects of a batch."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest
import torch

import mcctl
from mcctl import _io, errors
from mcctl._proto import master_pb2 as pb

from conftest import HERE, JAR, Master, io_options

PACKAGE_DIR = os.path.dirname(HERE)
CHILD = "MCCTL_TEST_READ_BATCH_CHILD"  # set in the child that runs this file with the Python reader


def pattern(seed: int, size: int) -> bytes:
    return bytes((seed * 131 + i * 7) & 0xFF for i in range(256)) * (size // 256) + bytes(size % 256)


def place_of(c: mcctl.Client, key: str):
    return c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(tenant_id=c.tenant, key=key)).distributed_disk


def plan_into(places, fds, pool, size: int, stride: int) -> _io.ReadPlan:
    """A plan reading each of ``places`` (descriptors of objects of ``size`` bytes) into ``pool`` every ``stride`` bytes."""
    plan = _io.ReadPlan()
    for i, p in enumerate(places):
        plan.add(fds[p.file_path], p.offset, size, [(pool[i * stride:].data_ptr(), size)], p.crc32c)
    return plan


def test_the_reader_in_use_is_the_one_asked_for():
    if os.environ.get(CHILD):
        assert _io.native is None, "MCCTL_CRC32C=python must read with the Python reader"
    elif _io.native is None:
        pytest.skip("the native library cannot be built here; the Python reader is covered by the other tests")


@pytest.mark.parametrize("read_threads", [1, 4])
def test_corrupt_object_in_a_batch_is_a_counted_miss_and_the_rest_read(io_client, read_threads):
    io_client.read_threads = read_threads
    sizes = [65536, 65536 + 7, 1, 300_001, 65536, 4096]
    keys = [f"batch/{read_threads}/{i}" for i in range(len(sizes))]
    values = [pattern(i, size) for i, size in enumerate(sizes)]
    assert io_client.batch_put_from(keys, values) == [0] * len(keys)
    victim = place_of(io_client, keys[3])
    with open(victim.file_path, "r+b") as f:
        f.seek(victim.offset + 200_000)
        byte = f.read(1)
        f.seek(victim.offset + 200_000)
        f.write(bytes([byte[0] ^ 0x10]))
    pool = torch.zeros(sum(sizes), dtype=torch.uint8)
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    slices = [pool[s:s + n] for s, n in zip(starts, sizes)]
    before = io_client.stats()
    got = io_client.batch_get_into(keys, slices)
    assert got == [n if i != 3 else errors.INVALID_READ for i, n in enumerate(sizes)]
    for i, (s, n) in enumerate(zip(starts, sizes)):
        if i != 3:
            assert bytes(pool[s:s + n].numpy()) == values[i], i
    after = io_client.stats()
    assert after["checksum_failures"] - before.get("checksum_failures", 0) == 1
    assert after["reads"] - before.get("reads", 0) == len(keys) - 1
    assert after["calls"]["BatchGetDistributedPageMapping"] - before["calls"].get("BatchGetDistributedPageMapping", 0) == 1


def test_buffers_smaller_than_their_object_are_refused_and_nothing_is_written_past_them(client):
    values = [pattern(20, 50_000), pattern(21, 50_000), pattern(22, 50_000)]
    keys = ["small/0", "small/1", "small/2"]
    assert client.batch_put_from(keys, values) == [0, 0, 0]
    guard = b"\xee" * 100_000
    backing = bytearray(guard)
    scatter_a, scatter_b = bytearray(guard[:20_000]), bytearray(guard[:29_999])  # one byte short in all
    ok = bytearray(50_000)
    got = client.batch_get_into(keys, [memoryview(backing)[:49_999], [scatter_a, scatter_b], ok])
    assert got == [errors.BUFFER_OVERFLOW, errors.BUFFER_OVERFLOW, 50_000]
    assert backing == bytearray(guard) and scatter_a == bytearray(guard[:20_000]) and scatter_b == bytearray(guard[:29_999])
    assert bytes(ok) == values[2]
    # One more byte is enough, and a larger buffer gets the object's bytes and nothing after them.
    got = client.batch_get_into(keys[:1], [memoryview(backing)[:60_000]])
    assert got == [50_000] and bytes(backing[:50_000]) == values[0] and backing[50_000:] == bytearray(guard[50_000:])


def test_short_bucket_file_is_a_read_error_and_nothing_is_written_past_the_buffer(fresh_master, io):
    with mcctl.Client(master=fresh_master.address, **io_options(io)) as c:
        values = [pattern(30, 200_000), pattern(31, 200_000)]
        assert c.batch_put_from(["short/0", "short/1"], values) == [0, 0]
        cut = place_of(c, "short/1")
        kept = place_of(c, "short/0")
        if kept.file_path == cut.file_path and kept.offset > cut.offset:
            kept, cut = cut, kept  # cut the file inside the later of the two when they share one
        os.truncate(cut.file_path, cut.offset + 1000)  # a damaged file: bucket files never shrink otherwise
        pool = torch.full((600_000,), 0xEE, dtype=torch.uint8)
        slices = [pool[:200_000], pool[300_000:500_000]]
        before = c.stats()
        got = c.batch_get_into(["short/0", "short/1"], slices)
        short_index = 0 if cut == place_of(c, "short/0") else 1
        assert got[short_index] == errors.INVALID_READ
        assert got[1 - short_index] == 200_000 and bytes(slices[1 - short_index].numpy()) == values[1 - short_index]
        assert c.stats()["read_errors"] - before.get("read_errors", 0) == 1
        assert bytes(pool[200_000:300_000].numpy()) == b"\xee" * 100_000 and bytes(pool[500_000:].numpy()) == b"\xee" * 100_000
        assert c.get(["short/0", "short/1"][short_index]) is None


def test_a_lease_that_runs_out_mid_batch_is_renewed_before_the_next_read(tmp_path):
    m = Master(str(tmp_path / "root"), "--read-lease", "1ms")
    try:
        with mcctl.Client(master=m.address) as c:
            n, size = 32, 4 << 20
            keys = [f"lease/{i}" for i in range(n)]
            values = [os.urandom(size) for _ in range(n)]
            assert c.batch_put_from(keys, values) == [0] * n
            c.read_threads = 4
            pool = torch.zeros(n * size, dtype=torch.uint8)
            assert c.batch_get_into(keys, [pool[i * size:(i + 1) * size] for i in range(n)]) == [size] * n
            assert all(bytes(pool[i * size:(i + 1) * size].numpy()) == values[i] for i in range(n))
            # 128 MiB cannot be read and checked within two 0.9 ms lease windows (that would take over 70 GB/s), so
            # the reader must have stopped for fresh mappings at least twice.
            stats = c.stats()
            assert stats["lease_refreshes"] >= 2
            assert stats["calls"]["BatchGetDistributedPageMapping"] == 1 + stats["lease_refreshes"]
    finally:
        m.close()


@pytest.mark.skipif(_io.native is None, reason="the native batch reader is not built here")
@pytest.mark.parametrize("threads", [2, 4, 64])
def test_a_batch_read_on_several_threads_reads_every_object_into_its_place(client, threads):
    n, size = 96, 65536 + 100  # objects of two pages, not page-aligned in the pool
    keys = [f"threads/{threads}/{i}" for i in range(n)]
    values = [pattern(i, size) for i in range(n)]
    assert client.batch_put_from(keys, values) == [0] * n
    places = [place_of(client, k) for k in keys]
    pool = torch.full((n * (size + 8),), 0xEE, dtype=torch.uint8)
    fds = {p.file_path: os.open(p.file_path, os.O_RDONLY) for p in places}
    try:
        plan = plan_into(places, fds, pool, size, size + 8)
        assert plan.run(0, threads) == n
        assert list(plan.outcomes()[0]) == [size] * n
        for i in range(n):
            start = i * (size + 8)
            assert bytes(pool[start:start + size].numpy()) == values[i], i
            assert bytes(pool[start + size:start + size + 8].numpy()) == b"\xee" * 8, i  # nothing past the object
        # A lease already run out: the first object is read (the caller just asked), the others are left for a fresh
        # lookup, however many threads there are.
        late = plan_into(places, fds, pool, size, size + 8)
        assert late.run(1e-9, threads) == 1
        assert list(late.outcomes()[0])[:2] == [size, 0]
    finally:
        for fd in fds.values():
            os.close(fd)


@pytest.mark.skipif(_io.native is None, reason="the native batch reader is not built here")
@pytest.mark.parametrize("threads", [1, 3])
def test_a_batch_started_on_threads_of_its_own_reads_as_run_does_once_waited_for(client, threads):
    n, size = 40, 20_000
    keys = [f"started/{threads}/{i}" for i in range(n)]
    values = [pattern(50 + i, size) for i in range(n)]
    assert client.batch_put_from(keys, values) == [0] * n
    places = [place_of(client, k) for k in keys]
    pool = torch.full((n * (size + 8),), 0xEE, dtype=torch.uint8)
    fds = {p.file_path: os.open(p.file_path, os.O_RDONLY) for p in places}

    def plan_of():
        return plan_into(places, fds, pool, size, size + 8)

    try:
        plan = plan_of()
        assert plan.start(time.monotonic() + 60, threads)
        with pytest.raises(RuntimeError, match="this plan is being read"):
            plan.add(0, 0, 1, [(pool.data_ptr(), 1)], 0)
        with pytest.raises(RuntimeError, match="this plan is being read already"):
            plan.start(time.monotonic() + 60, threads)
        assert plan.wait() == n and plan.wait() == 0
        assert list(plan.outcomes()[0]) == [size] * n
        for i in range(n):
            start = i * (size + 8)
            assert bytes(pool[start:start + size].numpy()) == values[i], i
            assert bytes(pool[start + size:start + size + 8].numpy()) == b"\xee" * 8, i
        # Unlike run(), a started batch reads not even its first object once the time is up.
        late = plan_of()
        assert late.start(1e-9, threads) and late.wait() == 0
        assert list(late.outcomes()[0])[:1] == [0]
        assert not _io.ReadPlan().start(time.monotonic() + 60, threads)  # nothing to read: nothing started
    finally:
        for fd in fds.values():
            os.close(fd)


def _started_batch_is_read_before_wait(plan, n: int, size: int) -> bool:
    """Whether the helpers read every object of a started plan while nobody waits for it (within 30 s)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if list(plan.outcomes()[0]) == [size] * n:
            return True
        time.sleep(0.005)
    return False


@pytest.mark.skipif(_io.native is None, reason="the native batch reader is not built here")
def test_a_started_batch_is_read_by_helpers_before_it_is_waited_for_in_a_forked_child_too(client):
    n, size = 24, 30_000
    keys = [f"helpers/{i}" for i in range(n)]
    values = [pattern(80 + i, size) for i in range(n)]
    assert client.batch_put_from(keys, values) == [0] * n
    places = [place_of(client, k) for k in keys]
    fds = {p.file_path: os.open(p.file_path, os.O_RDONLY) for p in places}
    try:
        def read_started(pool) -> bool:
            plan = plan_into(places, fds, pool, size, size)
            assert plan.start(time.monotonic() + 60, 2)
            try:
                return _started_batch_is_read_before_wait(plan, n, size)
            finally:
                assert plan.wait() == n

        pool = torch.zeros(n * size, dtype=torch.uint8)
        assert read_started(pool), "the helper threads did not read a started batch"
        assert all(bytes(pool[i * size:(i + 1) * size].numpy()) == values[i] for i in range(n))
        # The pool now has helpers; a forked child has none of them and must start its own.
        child = os.fork()
        if child == 0:
            try:
                fresh = torch.zeros(n * size, dtype=torch.uint8)
                ok = read_started(fresh) and all(bytes(fresh[i * size:(i + 1) * size].numpy()) == values[i] for i in range(n))
            except BaseException:
                ok = False
            os._exit(0 if ok else 1)
        deadline = time.monotonic() + 60
        while (ended := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        if ended[0] == 0:
            os.kill(child, 9)
            os.waitpid(child, 0)
            pytest.fail("a forked child did not finish reading a started batch within 60 s")
        assert os.waitstatus_to_exitcode(ended[1]) == 0, "a forked child could not read a started batch on helpers"
    finally:
        for fd in fds.values():
            os.close(fd)


@pytest.mark.skipif(_io.native is None, reason="the native batch reader is not built here")
def test_batches_read_from_many_threads_at_once_each_read_every_object(client):
    n, size, callers, rounds = 16, 12_000, 12, 8
    keys = [f"shared/{i}" for i in range(n)]
    values = [pattern(90 + i, size) for i in range(n)]
    assert client.batch_put_from(keys, values) == [0] * n
    places = [place_of(client, k) for k in keys]
    fds = {p.file_path: os.open(p.file_path, os.O_RDONLY) for p in places}
    failures = []

    def caller(c: int) -> None:
        pool = torch.zeros(n * size, dtype=torch.uint8)
        for r in range(rounds):
            pool.fill_(0xEE)
            plan = plan_into(places, fds, pool, size, size)
            if r % 2:
                read = plan.run(0, 8)
            else:
                read = plan.wait() if plan.start(time.monotonic() + 60, 8) else -1
            if read != n or list(plan.outcomes()[0]) != [size] * n:
                failures.append((c, r, read, list(plan.outcomes()[0])))
            elif any(bytes(pool[i * size:(i + 1) * size].numpy()) != values[i] for i in range(n)):
                failures.append((c, r, "bytes"))

    try:
        workers = [threading.Thread(target=caller, args=(c,)) for c in range(callers)]
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=60)
        assert not any(w.is_alive() for w in workers), "a batch never finished"
        assert failures == []
    finally:
        for fd in fds.values():
            os.close(fd)


@pytest.mark.skipif(_io.native is None, reason="the native batch reader is not built here")
def test_busy_batches_never_have_more_than_64_helper_threads_in_all():
    # Sixteen started batches asking for 8 helpers each, every one still reading when the next starts (4 MiB objects
    # from /dev/zero, all into one buffer): 128 threads if nothing bounded them; the pool keeps at most 64.
    jobs, objects, size = 16, 1024, 4 << 20
    zeros = torch.zeros(size, dtype=torch.uint8)
    crc = _io.crc32c([memoryview(zeros.numpy())])
    fd = os.open("/dev/zero", os.O_RDONLY)
    threads_before = len(os.listdir("/proc/self/task"))
    plans, most = [], 0
    try:
        for _ in range(jobs):
            plan = _io.ReadPlan()
            for _ in range(objects):
                plan.add(fd, 0, size, [(zeros.data_ptr(), size)], crc)
            assert plan.start(time.monotonic() + 60, 8)
            plans.append(plan)
            time.sleep(0.01)  # the helpers of the batches before take their objects
            most = max(most, len(os.listdir("/proc/self/task")) - threads_before)
    finally:
        for plan in plans:
            assert plan.wait() == objects
            assert list(plan.outcomes()[0]) == [size] * objects
        os.close(fd)
    assert most <= 64, f"{most} threads beside the test's own"


@pytest.mark.skipif(bool(os.environ.get(CHILD)), reason="runs in the parent only")
def test_the_same_tests_pass_with_the_python_reader(tmp_path):
    env = dict(os.environ, MCCTL_CRC32C="python", PYTHONPATH=PACKAGE_DIR, XDG_CACHE_HOME=str(tmp_path / "cache"))
    env[CHILD], env["MCCTL_JAR"] = "1", JAR
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", os.path.abspath(__file__)],
                          capture_output=True, text=True, timeout=110, env=env, cwd=HERE)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "9 passed, 9 skipped" in done.stdout, done.stdout[-2000:]
