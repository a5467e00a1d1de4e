"""Reads during the lookup (Client(read_during_lookup=True), the default): a batch whose keys this client looked up
before, while that lease lasts, is read at the placements then answered while its own lookup is in flight, and a
read is kept only where the new answer places the key on the same pages and arrived before the earlier lease ran
out. Against a real master: every byte checked, every counter."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import mcctl
from mcctl import _io, errors

from conftest import Master

pytestmark = pytest.mark.skipif(_io.native is None, reason="reads during the lookup need the native batch reader")


def values(seed: int, count: int, size: int):
    return [bytes([(seed + i) & 0xFF]) * size for i in range(count)]


def counter(c: mcctl.Client, name: str) -> int:
    return c.stats().get(name, 0)


def test_a_batch_read_again_is_read_during_its_lookup_with_one_call(client):
    keys = [f"again/{i}" for i in range(6)]
    data = values(1, 6, 70_000)
    assert client.batch_put_from(keys, data) == [0] * 6
    buffers = [bytearray(70_000) for _ in keys]
    assert client.batch_get_into(keys, buffers) == [70_000] * 6  # looked up first: nothing remembered yet
    assert counter(client, "reads_during_lookup") == 0
    calls = client.stats()["calls"]["BatchGetDistributedPageMapping"]
    for round_ in range(3):
        buffers = [bytearray(70_000) for _ in keys]
        assert client.batch_get_into(keys, buffers) == [70_000] * 6
        assert [bytes(b) for b in buffers] == data
    assert counter(client, "reads_during_lookup") == 18 and counter(client, "reads_during_lookup_wasted") == 0
    assert client.stats()["calls"]["BatchGetDistributedPageMapping"] == calls + 3  # still one lookup per batch
    assert counter(client, "reads") == 24
    # A batch with keys never looked up among them: those are read after the answer, as usual.
    assert client.batch_put_from(["again/new"], [b"n" * 500]) == [0]
    got = [bytearray(70_000) for _ in range(7)]
    assert client.batch_get_into(keys + ["again/new"], got) == [70_000] * 6 + [500]
    assert [bytes(b) for b in got[:6]] == data and bytes(got[6][:500]) == b"n" * 500
    assert counter(client, "reads_during_lookup") == 24


def test_a_key_moved_or_removed_by_another_client_is_answered_as_the_new_lookup_says(master, tenant):
    keys = [f"moved/{i}" for i in range(5)]
    old = values(10, 5, 40_000)
    with mcctl.Client(master=master.address, tenant=tenant) as reader, mcctl.Client(master=master.address, tenant=tenant) as writer:
        assert writer.batch_put_from(keys, old) == [0] * 5
        assert reader.batch_get_into(keys, [bytearray(40_000) for _ in keys]) == [40_000] * 5  # remembers where they are
        new = b"\xee" * 40_000
        assert writer.batch_put_from(keys[:1], [new], overwrite=True) == [0]  # same size, other pages
        assert writer.batch_remove(keys[1:2]) == [0]
        assert writer.batch_put_from(keys[2:3], [b"\xdd" * 50_000], overwrite=True) == [0]  # larger than its buffer now
        assert writer.batch_put_from(keys[3:4], [old[3]], overwrite=True) == [0]  # the same bytes on other pages
        buffers = [bytearray(40_000) for _ in keys]
        got = reader.batch_get_into(keys, buffers)
        assert got == [40_000, errors.OBJECT_NOT_FOUND, errors.BUFFER_OVERFLOW, 40_000, 40_000]
        assert bytes(buffers[0]) == new  # the old bytes, read during the lookup from where it was, were not kept
        assert [bytes(b) for b in buffers[3:]] == old[3:]
        # Only the untouched key's read is kept: the one rewritten with the same bytes is read again from its new pages.
        assert counter(reader, "reads_during_lookup") == 1 and counter(reader, "reads_during_lookup_wasted") == 4
        assert reader.get(keys[1]) is None and reader.get(keys[0]) == new


def test_a_lease_run_out_is_not_read_during_the_lookup(tmp_path):
    m = Master(str(tmp_path / "root"), "--read-lease", "300ms")
    try:
        with mcctl.Client(master=m.address) as c:
            keys = ["late/0", "late/1"]
            assert c.batch_put_from(keys, [b"a" * 5000, b"b" * 6000]) == [0, 0]
            assert c.batch_get_into(keys, [bytearray(5000), bytearray(6000)]) == [5000, 6000]
            time.sleep(0.5)  # past the lease: the pages may have been reused since, so they are not read before the answer
            buffers = [bytearray(5000), bytearray(6000)]
            assert c.batch_get_into(keys, buffers) == [5000, 6000]
            assert bytes(buffers[0]) == b"a" * 5000 and bytes(buffers[1]) == b"b" * 6000
            assert counter(c, "reads_during_lookup") == 0 and counter(c, "reads_during_lookup_wasted") == 0
    finally:
        m.close()


def test_an_answer_that_comes_after_the_earlier_lease_keeps_no_read_made_before_it(tmp_path):
    m = Master(str(tmp_path / "root"), "--read-lease", "1s")
    try:
        with mcctl.Client(master=m.address) as c:
            keys = [f"stopped/{i}" for i in range(4)]
            data = values(20, 4, 30_000)
            assert c.batch_put_from(keys, data) == [0] * 4
            assert c.batch_get_into(keys, [bytearray(30_000) for _ in keys]) == [30_000] * 4
            # The master is stopped (SIGSTOP) as the next batch starts: the reads under the earlier lease are done long
            # before the answer, which comes after that lease has run out, so none of them is kept.
            os.kill(m.process.pid, signal.SIGSTOP)
            resume = threading.Timer(2.0, os.kill, (m.process.pid, signal.SIGCONT))
            resume.start()
            try:
                buffers = [bytearray(30_000) for _ in keys]
                assert c.batch_get_into(keys, buffers) == [30_000] * 4
            finally:
                resume.join()
                os.kill(m.process.pid, signal.SIGCONT)
            assert [bytes(b) for b in buffers] == data
            assert counter(c, "reads_during_lookup") == 0 and counter(c, "reads_during_lookup_wasted") == 4
            assert c.batch_get_into(keys, buffers) == [30_000] * 4 and counter(c, "reads_during_lookup") == 4
    finally:
        m.close()


def test_the_reading_threads_give_way_while_the_lookup_is_waited_for(tmp_path):
    # While the calling thread waits for the batch's lookup, the reader's helpers give up the CPU after every 256 KiB
    # they read, so that the threads answering the lookup (the master's, on this host, then the caller's) find a core.
    # The master is stopped (SIGSTOP) as the batch starts: its helpers read all of it long before the answer, giving
    # way as they go, and every read is kept once the answer comes.
    m = Master(str(tmp_path / "root"), "--read-lease", "60s")
    try:
        with mcctl.Client(master=m.address, read_threads=2) as c:
            size, count = 65536, 64  # 4 MiB: sixteen times 256 KiB
            keys = [f"giving-way/{i}" for i in range(count)]
            data = [bytes([1 + i % 250]) * size for i in range(count)]
            assert c.batch_put_from(keys, data) == [0] * count
            pool = bytearray(size * count)
            views = [memoryview(pool)[i * size:(i + 1) * size] for i in range(count)]
            assert c.batch_get_into(keys, views) == [size] * count
            assert counter(c, "reader_yields_during_lookup") == 0  # read after its lookup: no thread waits meanwhile
            pool[:] = bytes(size * count)
            whole = b"".join(data)
            answered = []
            os.kill(m.process.pid, signal.SIGSTOP)
            try:
                reading = threading.Thread(target=lambda: answered.append(c.batch_get_into(keys, views)))
                reading.start()
                deadline = time.monotonic() + 30
                while pool != whole and time.monotonic() < deadline:
                    time.sleep(0.01)
                assert pool == whole  # read while the lookup waits for the stopped master
            finally:
                os.kill(m.process.pid, signal.SIGCONT)
            reading.join(30)
            assert answered == [[size] * count] and pool == whole
            assert counter(c, "reads_during_lookup") == count
            # Each helper gives way after each 256 KiB it read: 16 in all, less one when the two split the batch with
            # 128 KiB over, and less each helper's last yield if the answer came between its last read and that yield.
            assert 16 - 1 - 2 <= counter(c, "reader_yields_during_lookup") <= 16
    finally:
        m.close()


def test_read_during_lookup_can_be_turned_off_and_is_checked(master, tenant):
    with pytest.raises(mcctl.InvalidParams, match="read_during_lookup 1 must be True or False"):
        mcctl.Client(master=master.address, tenant=tenant, read_during_lookup=1)
    with mcctl.Client(master=master.address, tenant=tenant, read_during_lookup=False) as c:
        assert c.batch_put_from(["off/0"], [b"x" * 1000]) == [0]
        for _ in range(3):
            buffer = bytearray(1000)
            assert c.batch_get_into(["off/0"], [buffer]) == [1000] and bytes(buffer) == b"x" * 1000
        assert counter(c, "reads_during_lookup") == 0 and len(c._remembered) == 0


def test_a_client_remembers_a_bounded_number_of_keys(client, monkeypatch):
    remembered = mcctl.client.Remembered(100)
    monkeypatch.setattr(client, "_remembered", remembered)
    keys = [f"bounded/{i}" for i in range(300)]
    assert client.batch_put_from(keys, [b"k"] * 300) == [0] * 300
    assert client.batch_get_into(keys, [bytearray(1) for _ in keys]) == [1] * 300
    assert len(remembered) <= 100
    # The newest are kept: the last keys are read during the lookup, the first are not.
    assert client.batch_get_into(keys[-10:], [bytearray(1) for _ in range(10)]) == [1] * 10
    assert counter(client, "reads_during_lookup") == 10
    assert client.batch_get_into(keys[:10], [bytearray(1) for _ in range(10)]) == [1] * 10
    assert counter(client, "reads_during_lookup") == 10
