"""mcctl.Client against a real master over a real temp root: every byte checked."""

from __future__ import annotations

import ctypes
import os
import threading
import time

import numpy as np
import pytest
import torch

import mcctl
from mcctl import errors
from mcctl._placements import Placements
from mcctl._proto import master_pb2 as pb

from conftest import Master, free_port, io_options


def pattern(seed: int, size: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def test_put_get_round_trip_and_lookups(io_client):
    data = pattern(1, 200_000)
    io_client.put("a/1", data)
    io_client.put("a/2", b"x")
    io_client.put("b/1", pattern(2, 65536))
    assert io_client.get("a/1") == data
    assert io_client.get("a/2") == b"x"
    assert io_client.get("missing") is None
    assert io_client.is_exist("a/1") and not io_client.is_exist("missing")
    assert io_client.batch_is_exist(["a/2", "missing", "b/1"]) == [True, False, True]
    assert io_client.get_size("a/1") == 200_000
    assert io_client.list_keys("a/") == ["a/1", "a/2"]
    assert io_client.list_keys() == ["a/1", "a/2", "b/1"]
    io_client.remove("a/2")
    assert io_client.get("a/2") is None
    with pytest.raises(mcctl.ObjectNotFound):
        io_client.remove("a/2")
    with pytest.raises(mcctl.ObjectNotFound):
        io_client.get_size("a/2")
    assert io_client.batch_remove(["a/1", "nope"]) == [0, errors.OBJECT_NOT_FOUND]


def test_put_of_committed_key_needs_overwrite(io_client):
    io_client.put("k", b"first")
    with pytest.raises(mcctl.ObjectAlreadyExists) as raised:
        io_client.put("k", b"second")
    assert raised.value.code == "OBJECT_ALREADY_EXISTS"
    assert io_client.batch_put_from(["k"], [b"second"]) == [errors.OBJECT_ALREADY_EXISTS]
    assert io_client.get("k") == b"first"
    io_client.put("k", b"second!", overwrite=True)
    assert io_client.get("k") == b"second!"


def test_a_batch_with_refused_keys_among_new_ones_commits_each_new_key_with_its_own_bytes(io_client):
    """The allocation answers and the notify's placements are packed records in the keys' order, the refused keys
    left out of the notify: each committed key must hold its own bytes, not its neighbour's."""
    io_client.put("taken-1", b"already here 1")
    io_client.put("taken-3", b"already here 3")
    keys = ["new-0", "taken-1", "new-2", "taken-3", "new-4"]
    data = [pattern(40 + i, 1000 + 4096 * i) for i in range(len(keys))]
    assert io_client.batch_put_from(keys, data) == [0, errors.OBJECT_ALREADY_EXISTS, 0, errors.OBJECT_ALREADY_EXISTS, 0]
    assert [io_client.get(k) for k in keys] == [data[0], b"already here 1", data[2], b"already here 3", data[4]]
    assert io_client.batch_put_from(["new-0", "new-5"], [b"x", b"fifth"]) == [errors.OBJECT_ALREADY_EXISTS, 0]
    assert io_client.get("new-5") == b"fifth"


def test_batch_from_and_into_every_kind_of_buffer(io_client):
    n = 6
    sources = [pattern(10 + i, 4096 * (i + 1) + i) for i in range(n)]
    tensor_src = torch.frombuffer(bytearray(sources[3]), dtype=torch.uint8)
    ptr_src = ctypes.create_string_buffer(sources[4], len(sources[4]))
    tail_src = ctypes.create_string_buffer(sources[5][100:], len(sources[5]) - 100)  # held: a pointer pair holds no reference
    buffers = [
        sources[0],                                            # bytes
        bytearray(sources[1]),                                 # bytearray
        np.frombuffer(sources[2], dtype=np.uint8),             # numpy
        tensor_src,                                            # CPU torch tensor
        (ctypes.addressof(ptr_src), len(sources[4])),          # (pointer, size)
        [memoryview(sources[5])[:100], (ctypes.addressof(tail_src), len(sources[5]) - 100)],  # gather of two regions
    ]
    keys = [f"kind/{i}" for i in range(n)]
    assert io_client.batch_put_from(keys, buffers) == [0] * n

    pool = torch.zeros(sum(len(s) for s in sources) + 16, dtype=torch.uint8)
    offsets = np.cumsum([0] + [len(s) for s in sources])
    dest_np = np.zeros(len(sources[2]), dtype=np.uint8)
    dest_ptr = ctypes.create_string_buffer(len(sources[4]))
    split = 1000
    dest_a, dest_b = bytearray(split), np.zeros(len(sources[5]) - split, dtype=np.uint8)
    targets = [
        bytearray(len(sources[0]) + 50),                       # larger than the object: fine
        pool[offsets[1]:offsets[2]],                           # a slice of one tensor
        dest_np,
        memoryview(bytearray(len(sources[3]))),
        (ctypes.addressof(dest_ptr), len(sources[4])),
        [dest_a, dest_b],                                      # scatter into two regions
    ]
    sizes = io_client.batch_get_into(keys, targets)
    assert sizes == [len(s) for s in sources]
    assert bytes(targets[0][:len(sources[0])]) == sources[0] and bytes(targets[0][len(sources[0]):]) == bytes(50)
    assert bytes(pool[offsets[1]:offsets[2]].numpy()) == sources[1]
    assert bytes(pool[offsets[2]:].numpy()) == bytes(len(pool) - offsets[2])  # nothing beyond the slice
    assert dest_np.tobytes() == sources[2]
    assert bytes(targets[3]) == sources[3]
    assert dest_ptr.raw == sources[4]
    assert bytes(dest_a) + dest_b.tobytes() == sources[5]


def test_buffer_smaller_than_object_gets_overflow_and_nothing_written(io_client):
    io_client.put("big", pattern(3, 10_000))
    backing = bytearray(b"\xee" * 20_000)
    small = memoryview(backing)[:9_999]
    assert io_client.batch_get_into(["big", "missing"], [small, bytearray(10)]) == [errors.BUFFER_OVERFLOW, errors.OBJECT_NOT_FOUND]
    assert backing == bytearray(b"\xee" * 20_000)


def test_bad_input_gets_one_line_errors_and_changes_nothing(client):
    cases = [
        (lambda: client.put("", b"x"), "key is empty"),
        (lambda: client.put("k" * 4097, b"x"), "key of 4097 bytes is longer than 4096"),
        (lambda: client.put("k", b""), "is empty: an object has at least 1 byte"),
        (lambda: client.batch_put_from(["a", "b"], [b"x"]), "2 keys but 1 buffers"),
        (lambda: client.batch_put_from(["a", ""], [b"x", b"y"]), "key (index 1) is empty"),
        (lambda: client.batch_put_from(["a"], [12345]), "int is not a buffer"),
        (lambda: client.batch_get_into(["a"], [b"read-only"]), "is read-only"),
        (lambda: client.batch_put_from(["a"], [(0, 10)]), "is not a valid address"),
        (lambda: client.batch_get_into(["a"], [torch.zeros(4, 4)[:, 1]]), "not contiguous"),
        (lambda: client.get(42), "key is a int, not a str"),
    ]
    for call, text in cases:
        with pytest.raises(mcctl.InvalidParams) as raised:
            call()
        message = str(raised.value)
        assert text in message and "\n" not in message and message.startswith("INVALID_PARAMS: ")
    assert client.list_keys() == []
    for bad in ("", "a b", "x" * 65):
        with pytest.raises(mcctl.InvalidParams):
            mcctl.Client(master=client.master, tenant=bad)
    with pytest.raises(mcctl.InvalidParams, match="invalid master address 'nowhere'"):
        mcctl.Client(master="nowhere")
    for bad in (0, 65, "2", True, 2.0):
        with pytest.raises(mcctl.InvalidParams) as raised:
            mcctl.Client(master=client.master, tenant=client.tenant, read_threads=bad)
        assert f"read_threads {bad!r} must be a whole number from 1 to 64" in str(raised.value)


def test_tensors_are_checked_one_by_one_once_tensors_have_been_read_into(client):
    # The first batch into tensors makes their type known, which later batches take without duck-typing: the
    # checks of each tensor must still hold for every one of them, and for keys of non-ASCII characters.
    pool = torch.zeros(3 * 64, dtype=torch.uint8)
    keys = ["t0", "t1", "t2"]
    assert client.batch_put_from(keys, [pattern(i, 64) for i in range(3)]) == [0, 0, 0]
    assert client.batch_get_into(keys, [pool[i * 64:(i + 1) * 64] for i in range(3)]) == [64, 64, 64]
    assert bytes(pool.numpy()) == b"".join(pattern(i, 64) for i in range(3))
    cases = [
        ([pool[:64], torch.zeros(8, 16, dtype=torch.uint8)[:, 1], pool[128:]], "buffer for key 't1' (index 1)",
         "not contiguous"),
        ([pool[:64], pool[64:128], torch.zeros(64, dtype=torch.uint8, device="meta")], "(index 2)", "tensor is on meta"),
    ]
    for buffers, where, text in cases:
        with pytest.raises(mcctl.InvalidParams) as raised:
            client.batch_get_into(keys, buffers)
        message = str(raised.value)
        assert where in message and text in message and "\n" not in message
    with pytest.raises(mcctl.InvalidParams, match=r"key \(index 1\) of 4098 bytes is longer than 4096"):
        client.batch_get_into(["t0", "\u00e9" * 2049], [pool[:64], pool[64:128]])  # 2,049 characters, 4,098 bytes
    assert client.batch_get_into(["k" * 4096, "\u00e9" * 2048], [pool[:64], pool[64:128]]) == [errors.OBJECT_NOT_FOUND] * 2


@pytest.mark.parametrize("during", [True, False], ids=["read_during_lookup", "read_after_lookup"])
def test_a_batch_of_tensors_is_planned_whole_and_a_key_that_does_not_fit_gets_its_own_outcome(master, tenant, during):
    # A batch whose every buffer is one region is planned a column at a time; a key that plan cannot take (missing,
    # larger than its buffer, an empty buffer) sends the batch key by key. Each key's bytes and outcome must hold
    # either way, and nothing may land past an object or in a buffer it does not fit.
    sizes = [5000, 7000, 3000, 6000]
    keys = [f"columns/{i}" for i in range(4)]
    data = [pattern(40 + i, size) for i, size in enumerate(sizes)]
    room = 8000
    with mcctl.Client(master=master.address, tenant=tenant, read_during_lookup=during) as c:
        assert c.batch_put_from(keys, data) == [0] * 4
        for round_ in range(3):  # rounds after the first are read during their lookup, when that is on
            early = c.stats().get("reads_during_lookup", 0)
            pool = torch.full((4 * room,), 0xEE, dtype=torch.uint8)
            assert c.batch_get_into(keys, [pool[i * room:(i + 1) * room] for i in range(4)]) == sizes
            for i, size in enumerate(sizes):
                assert bytes(pool[i * room:i * room + size].numpy()) == data[i]
                assert bytes(pool[i * room + size:(i + 1) * room].numpy()) == b"\xee" * (room - size)
            assert c.stats().get("reads_during_lookup", 0) - early == (4 if during and round_ else 0)
        for asked, expected in [(keys, [5000, errors.BUFFER_OVERFLOW, 3000, errors.BUFFER_OVERFLOW]),
                                (keys[:2] + ["columns/missing"] + keys[3:], [5000, errors.BUFFER_OVERFLOW, errors.OBJECT_NOT_FOUND, errors.BUFFER_OVERFLOW])]:
            pool = torch.full((3 * room,), 0xEE, dtype=torch.uint8)
            buffers = [pool[:room], pool[room:room + 6999], pool[2 * room:], torch.zeros(0, dtype=torch.uint8)]
            assert c.batch_get_into(asked, buffers) == expected
            assert bytes(pool[:5000].numpy()) == data[0]
            assert bytes(pool[5000:2 * room].numpy()) == b"\xee" * (2 * room - 5000)  # nothing in the slice too small
            rest = 3000 if expected[2] == 3000 else 0
            assert bytes(pool[2 * room:2 * room + rest].numpy()) == data[2][:rest]
            assert bytes(pool[2 * room + rest:].numpy()) == b"\xee" * (room - rest)


def test_master_that_is_down_is_one_line(tmp_path):
    with pytest.raises(mcctl.MasterUnavailable) as raised:
        mcctl.Client(master=f"127.0.0.1:{free_port()}", timeout=2.0)
    message = str(raised.value)
    assert "cannot reach the master at 127.0.0.1:" in message and "\n" not in message


def test_master_stopped_under_a_client_gives_rpc_fail(fresh_master):
    c = mcctl.Client(master=fresh_master.address, timeout=3.0)
    c.put("k", b"v")
    fresh_master.close()
    assert c.batch_put_from(["a"], [b"x"]) == [errors.RPC_FAIL]
    assert c.batch_get_into(["k"], [bytearray(1)]) == [errors.RPC_FAIL]
    with pytest.raises(mcctl.MasterUnavailable):
        c.get("k")
    c.close()


@pytest.mark.timeout(120)
def test_a_master_killed_and_started_again_is_read_from_at_once(tmp_path):
    root = str(tmp_path / "root")
    port = str(free_port())
    first = Master(root, "--port", port)
    c = mcctl.Client(master=first.address, timeout=3.0)
    try:
        c.put("k", b"kept")
        first.kill()
        first.close()
        # Reads while it is down fail; the channel's reconnect backoff grows meanwhile (1 s, then 1.6 s, ... uncapped).
        down_until = time.monotonic() + 1.5
        while time.monotonic() < down_until:
            with pytest.raises(mcctl.MasterUnavailable):
                c.get("k")
        second = Master(root, "--port", port)  # the same state, after a JVM start of a second or more
        try:
            assert c.get("k") == b"kept", "the first read after the restart reaches the master"
        finally:
            second.close()
    finally:
        c.close()


@pytest.mark.timeout(120)
def test_a_notify_sent_while_the_master_restarts_is_sent_again_and_commits(tmp_path, monkeypatch):
    """The master is killed (kill -9) after the object is written and synced, before the notify goes out, and started
    again on the same port and state: the notify, refused while no master listens and while the new one recovers, is
    sent again until the new master commits it (the allocation was logged before it was answered)."""
    root = str(tmp_path / "root")
    port = str(free_port())
    masters = [Master(root, "--port", port)]
    restarted = threading.Event()
    problems = []
    real_fdatasync = os.fdatasync

    def restart_master() -> None:
        try:
            masters.append(Master(root, "--port", port))
        except Exception as e:  # the test fails below on it
            problems.append(e)
        restarted.set()

    killing = threading.Lock()

    def fdatasync_then_kill_the_master(fd: int) -> None:
        real_fdatasync(fd)
        with killing:  # a batch's files are synced on several threads
            if masters[0].process.poll() is None:
                masters[0].kill()
                threading.Thread(target=restart_master, daemon=True).start()

    c = mcctl.Client(master=masters[0].address, timeout=10.0)
    try:
        monkeypatch.setattr(os, "fdatasync", fdatasync_then_kill_the_master)
        c.put("written-before-the-kill", b"kept across the restart")
        monkeypatch.setattr(os, "fdatasync", real_fdatasync)
        assert restarted.wait(60) and not problems, problems
        assert c.stats()["calls"]["NotifyDistributedDiskSuccess"] > 1, "the first notify found no master and was sent again"
        assert c.get("written-before-the-kill") == b"kept across the restart"
    finally:
        c.close()
        restarted.wait(60)
        for m in masters:
            m.close()


def test_a_file_whose_flush_fails_fails_its_keys_alone_and_frees_their_pages(master, tenant, monkeypatch, io):
    """A batch's files are flushed at once; the one whose fdatasync fails (made to fail here for one bucket file) fails
    the keys written to it, whose pages are freed, and the keys in every other file commit."""
    with mcctl.Client(master=master.address, tenant=tenant, **io_options(io)) as c:
        keys = [f"flush/{i}" for i in range(40)]
        data = [pattern(60 + i, 3000 + i) for i in range(len(keys))]
        failing_fd = c._files.bucket_fd(0)
        real_fdatasync = os.fdatasync

        def fdatasync_failing_for_bucket_0(fd: int) -> None:
            if fd == failing_fd:
                raise OSError(5, "Input/output error (made to fail)")
            real_fdatasync(fd)

        monkeypatch.setattr(os, "fdatasync", fdatasync_failing_for_bucket_0)
        codes = c.batch_put_from(keys, data)
        monkeypatch.setattr(os, "fdatasync", real_fdatasync)
        found = c._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
            keys=keys, tenant_ids=[tenant] * len(keys), packed=True))
        placements = Placements.of(found, len(keys))
        in_bucket_0 = [i for i, code in enumerate(codes) if code != 0]
        assert 0 < len(in_bucket_0) < len(keys), "some keys of the batch have bucket 0 as their home (4 buckets, 40 keys), not all"
        assert all(codes[i] == errors.WRITE_FAIL for i in in_bucket_0)
        assert all(not placements.found(i) for i in in_bucket_0), "a key whose file was not flushed is not committed"
        assert c.stats()["page_leaks_prevented"] == len(in_bucket_0)
        for i, code in enumerate(codes):
            if code == 0:
                assert placements.buckets[i] != 0 and c.get(keys[i]) == data[i]


def test_tenants_are_walls(master, tenant):
    with mcctl.Client(master=master.address, tenant=tenant + "-a") as a, \
            mcctl.Client(master=master.address, tenant=tenant + "-b") as b:
        a.put("shared-name", b"from a")
        assert b.get("shared-name") is None
        assert not b.is_exist("shared-name")
        assert b.list_keys() == []
        assert b.batch_remove(["shared-name"]) == [errors.OBJECT_NOT_FOUND]
        b.put("shared-name", b"from b")
        assert a.get("shared-name") == b"from a"
        assert b.get("shared-name") == b"from b"


def descriptor_of(c: mcctl.Client, key: str):
    return c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(tenant_id=c.tenant, key=key)).distributed_disk


def test_checksum_mismatch_is_a_miss_and_a_counter(io_client):
    data = pattern(4, 70_000)
    io_client.put("victim", data)
    place = descriptor_of(io_client, "victim")
    with open(place.file_path, "r+b") as f:
        f.seek(place.offset + 12345)
        f.write(bytes([data[12345] ^ 0xFF]))
    assert io_client.get("victim") is None
    dest = bytearray(70_000)
    assert io_client.batch_get_into(["victim"], [dest]) == [errors.INVALID_READ]
    assert io_client.stats()["checksum_failures"] == 2


def test_write_that_would_pass_the_fence_is_never_written_and_is_freed(tmp_path, io):
    m = Master(str(tmp_path / "root"), "--bucket-size", "1MiB", "--allocation-deadline", "60s")
    try:
        # A margin as long as the deadline: the fence has passed before any write could start.
        with mcctl.Client(master=m.address, write_margin=60.0, **io_options(io)) as fenced:
            assert fenced.batch_put_from(["f1", "f2"], [b"\x01" * 5000, b"\x02" * 70_000]) == [errors.WRITE_FAIL] * 2
            assert fenced.stats()["writes_fenced"] == 2
            assert fenced.stats()["page_leaks_prevented"] == 2
            stats = fenced._read("GetStats", pb.GetStatsRequest())
            assert stats.in_flight_allocations == 0 and stats.mappings == 0
            assert not fenced.is_exist("f1")
        buckets = [os.path.join(m.root, name) for name in os.listdir(m.root) if name.startswith("bucket")]
        assert buckets
        for path in buckets:
            with open(path, "rb") as f:
                assert f.read().count(0) == os.path.getsize(path)
        with mcctl.Client(master=m.address, write_margin=1.0, **io_options(io)) as writer:
            assert writer.batch_put_from(["f1"], [b"\x01" * 5000]) == [0]
            assert writer.get("f1") == b"\x01" * 5000
    finally:
        m.close()


def test_the_default_write_margin_is_the_documented_rule(client):
    # docs/durability.md, "The writer fences itself": a tenth of the deadline, at least 50 ms and at most 2 s
    assert client.write_margin is None
    assert client._margin(0.1) == 0.05
    assert client._margin(10.0) == 1.0
    assert client._margin(60.0) == 2.0


def test_batches_over_the_master_limit_are_split(client):
    n = 10_001 + 5
    keys = [f"many/{i:05d}" for i in range(n)]
    values = [i.to_bytes(4, "little") for i in range(n)]
    before = client.stats()["calls"]
    assert client.batch_put_from(keys, values) == [0] * n
    calls = client.stats()["calls"]
    assert calls["BatchAllocateDistributedPage"] - before.get("BatchAllocateDistributedPage", 0) == 2
    assert calls["NotifyDistributedDiskSuccess"] - before.get("NotifyDistributedDiskSuccess", 0) == 2
    dest = np.zeros((n, 4), dtype=np.uint8)
    assert client.batch_get_into(keys, list(dest)) == [4] * n
    assert client.stats()["calls"]["BatchGetDistributedPageMapping"] == 2
    assert [int.from_bytes(row.tobytes(), "little") for row in dest] == list(range(n))
    assert client.batch_is_exist(keys) == [True] * n
    assert len(client.list_keys("many/")) == n


def test_one_client_shared_by_threads(io_client):
    import threading
    failures = []

    def work(t: int):
        try:
            for round_ in range(5):
                keys = [f"thr/{t}/{round_}/{i}" for i in range(32)]
                values = [pattern(t * 1000 + round_ * 100 + i, 3000 + i) for i in range(32)]
                assert io_client.batch_put_from(keys, values) == [0] * 32
                dest = [bytearray(4000) for _ in range(32)]
                assert io_client.batch_get_into(keys, dest) == [3000 + i for i in range(32)]
                assert all(bytes(d[:3000 + i]) == values[i] for i, d in enumerate(dest))
        except BaseException as e:  # reported on the main thread
            failures.append(e)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    assert io_client.open_files() <= io_client.layout.bucket_count


def test_short_read_lease_reads_right_bytes(tmp_path):
    m = Master(str(tmp_path / "root"), "--read-lease", "1ms")
    try:
        with mcctl.Client(master=m.address) as c:
            keys = [f"lease/{i}" for i in range(50)]
            values = [pattern(100 + i, 20_000) for i in range(50)]
            assert c.batch_put_from(keys, values) == [0] * 50
            dest = [bytearray(20_000) for _ in keys]
            assert c.batch_get_into(keys, dest) == [20_000] * 50
            assert [bytes(d) for d in dest] == values
    finally:
        m.close()


def test_root_that_is_not_the_masters_is_refused(master, tmp_path):
    with pytest.raises(mcctl.InvalidParams, match="no mooncake.layout.json under"):
        mcctl.Client(master=master.address, root=str(tmp_path))


@pytest.mark.timeout(120)
def test_a_full_tier_read_in_a_loop_gives_up_only_the_room_a_put_needs_and_the_put_waits_for_it(tmp_path):
    # One bucket of 64 objects of four pages, no background eviction (high watermark = the whole tier), leases of 2 s:
    # once every object is read, the only room a put can find is a leased object's pages, released at its lease's end.
    m = Master(str(tmp_path / "root"), "--bucket-count", "1", "--bucket-size", "1MiB", "--page-size", "4KiB",
               "--read-lease", "2s", "--eviction-high-watermark", "1", "--eviction-low-watermark", "1")
    try:
        with mcctl.Client(master=m.address, tenant="t") as c:
            size = 3 * 4096 + 100
            keys = [f"resident-{i}" for i in range(64)]
            for k in keys:
                c.put(k, k.encode() * (size // len(k)) + b"." * (size % len(k)))
            assert all(c.batch_is_exist(keys))
            for k in keys:
                assert c.get(k) is not None  # every resident object is now under a read lease
            newcomer = b"n" * size
            c.put("newcomer", newcomer)
            assert c.get("newcomer") == newcomer
            stats = c._read("GetStats", pb.GetStatsRequest())
            assert stats.evicted_keys == 1, "one leased object makes room for one object of its size; the rest stays"
            assert stats.mappings == 64
    finally:
        m.close()


@pytest.mark.timeout(120)
def test_a_put_no_eviction_can_make_room_for_is_refused_without_evicting_anything(tmp_path):
    # 4 buckets of 64 MiB in 4 KiB pages: tenant A's 2,000 objects of 20 KB fill 15% of the tier; tenant B then holds a
    # page in flight in every bucket, after A's objects, so that no bucket can hold a run of 60 MiB whatever is evicted.
    m = Master(str(tmp_path / "root"), "--bucket-count", "4", "--bucket-size", "64MiB", "--page-size", "4KiB")
    try:
        with mcctl.Client(master=m.address, tenant="tenant-a") as a, mcctl.Client(master=m.address, tenant="tenant-b") as b:
            keys = [f"a-{i}" for i in range(2000)]
            assert a.batch_put_from(keys, [k.encode().ljust(20_000, b".") for k in keys]) == [0] * len(keys)
            held = set()
            for i in range(200):
                answer = b._mutate("BatchAllocateDistributedPage", pb.BatchAllocateDistributedPageRequest(
                    keys=[f"writing-{i}"], tenant_ids=["tenant-b"], sizes=[4096]))
                assert answer.results[0].status.error == pb.OK, answer
                held.add(answer.results[0].distributed_disk.bucket)
                if len(held) == 4:
                    break
            assert held == {0, 1, 2, 3}
            for i in range(4):
                with pytest.raises(mcctl.NoAvailableHandle):
                    b.put(f"large-{i}", bytes(60 << 20))
            stats = b._read("GetStats", pb.GetStatsRequest())
            assert stats.evicted_keys == 0, "tenant A's objects were evicted for puts that could not succeed"
            assert stats.mappings == 2000
    finally:
        m.close()


def test_a_read_with_mappings_looked_up_before_makes_no_call_of_its_own(client, tenant, master):
    keys = [f"ahead/{i}" for i in range(6)]
    values = [os.urandom(10_000 + i) for i in range(6)]
    assert client.batch_put_from(keys, values) == [0] * 6
    mappings = client.lookup(keys + ["ahead/missing"])
    assert mappings.found() == [True] * 6 + [False] and mappings.leading_hits() == 6 and len(mappings) == 7
    assert mappings.covers(keys[2:4]) and not mappings.covers(["ahead/other"]) and mappings.seconds_left() > 0
    before = client.stats()["calls"].get("BatchGetDistributedPageMapping", 0)
    buffers = [bytearray(len(v)) for v in values] + [bytearray(10)]
    assert client.batch_get_into(keys + ["ahead/missing"], buffers, mappings=mappings) == \
        [len(v) for v in values] + [mcctl.errors.OBJECT_NOT_FOUND]
    assert [bytes(b) for b in buffers[:6]] == values
    # A part of them, in another order: still no call.
    again = [bytearray(len(values[i])) for i in (4, 1)]
    assert client.batch_get_into([keys[4], keys[1]], again, mappings=mappings) == [len(values[4]), len(values[1])]
    assert [bytes(b) for b in again] == [values[4], values[1]]
    assert client.stats()["calls"].get("BatchGetDistributedPageMapping", 0) == before
    # The read returns what the keys held when looked up: the lease keeps a removed key's pages from reuse.
    assert client.batch_remove(keys[:1]) == [0]
    old = bytearray(len(values[0]))
    assert client.batch_get_into(keys[:1], [old], mappings=mappings) == [len(values[0])] and bytes(old) == values[0]
    assert client.batch_get_into(keys[:1], [old]) == [mcctl.errors.OBJECT_NOT_FOUND]
    # Keys the mappings do not cover are looked up as usual.
    assert client.batch_get_into([keys[2], "ahead/other"], [bytearray(20_000), bytearray(1)], mappings=mappings) == \
        [len(values[2]), mcctl.errors.OBJECT_NOT_FOUND]
    assert client.stats()["calls"].get("BatchGetDistributedPageMapping", 0) == before + 2
    with mcctl.Client(master=master.address, tenant=tenant) as other:
        with pytest.raises(mcctl.InvalidParams, match="mappings Mappings are not from this client's lookup"):
            other.batch_get_into(keys[1:2], [bytearray(20_000)], mappings=mappings)
        with pytest.raises(mcctl.InvalidParams, match="mappings dict are not from this client's lookup"):
            other.batch_get_into(keys[1:2], [bytearray(20_000)], mappings={})


def test_mappings_whose_lease_ran_out_are_looked_up_again(tmp_path):
    m = Master(str(tmp_path / "root"), "--read-lease", "200ms")
    try:
        with mcctl.Client(master=m.address) as c:
            assert c.batch_put_from(["late/0", "late/1"], [b"a" * 5000, b"b" * 6000]) == [0, 0]
            mappings = c.lookup(["late/0", "late/1"])
            deadline = time.monotonic() + 10
            while mappings.seconds_left() > 0 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert mappings.seconds_left() == 0 and not mappings.covers(["late/0"])
            before = c.stats()["calls"]["BatchGetDistributedPageMapping"]
            buffers = [bytearray(5000), bytearray(6000)]
            assert c.batch_get_into(["late/0", "late/1"], buffers, mappings=mappings) == [5000, 6000]
            assert bytes(buffers[0]) == b"a" * 5000 and bytes(buffers[1]) == b"b" * 6000
            assert c.stats()["calls"]["BatchGetDistributedPageMapping"] == before + 1
            assert c.stats().get("lookups_saved", 0) == 0
    finally:
        m.close()
