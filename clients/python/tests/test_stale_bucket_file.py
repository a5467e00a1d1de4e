"""A bucket file deleted under a live master while a long-lived client holds it open. The client's pwrites into the
deleted file succeed, but no other client can read them: it must never acknowledge such a put. The master stops placing
objects in that bucket once a write there failed, and a restart creates the file again, empty."""

from __future__ import annotations

import os
import time

import pytest

import mcctl
from mcctl import errors
from mcctl._placements import Placements
from mcctl._proto import master_pb2 as pb

from conftest import Master, free_port, io_options

KEYS = 1000


def payload(key: str) -> bytes:
    seed = sum(key.encode()) % 251
    return bytes((seed + i) % 256 for i in range(4096 + len(key)))


def put(client: mcctl.Client, prefix: str):
    keys = [f"{prefix}/{i}" for i in range(KEYS)]
    return keys, client.batch_put_from(keys, [payload(key) for key in keys])


def unread_by_a_fresh_client(master: Master, keys):
    """The keys that a client opening the bucket files afresh cannot read back with their bytes."""
    with mcctl.Client(master=master.address, tenant="t") as fresh:
        return [key for key in keys if fresh.get(key) != payload(key)]


def bucket_state(master: Master, bucket: int) -> int:
    with mcctl.Client(master=master.address, tenant="t") as c:
        return c._read("GetStats", pb.GetStatsRequest()).buckets[bucket].file_state


@pytest.mark.timeout(240)
def test_a_long_lived_client_never_acknowledges_a_put_into_a_deleted_bucket_file(tmp_path, io):
    root = str(tmp_path / "root")
    port = str(free_port())
    # The master checks its files only when a write fails: its periodic check could otherwise find the deleted file
    # before the first put after the delete, and the keys would never be placed there.
    flags = ("--port", port, "--bucket-check-interval", "1h")
    master = Master(root, *flags)
    old = mcctl.Client(master=master.address, tenant="t", timeout=10.0, **io_options(io))
    try:
        keys, codes = put(old, "before")
        assert codes == [0] * KEYS
        os.unlink(os.path.join(root, "bucket_01.data"))

        keys, codes = put(old, "after-delete")
        acknowledged = [key for key, code in zip(keys, codes) if code == 0]
        refused = [code for code in codes if code != 0]
        assert refused, "keys homed in bucket 1 were placed in its deleted file, and none of those is acknowledged"
        assert set(refused) == {errors.WRITE_FAIL}
        assert old.stats()["page_leaks_prevented"] == len(refused)
        assert unread_by_a_fresh_client(master, acknowledged) == []

        # The failed writes made the master look at bucket 1: it places nothing there any more.
        deadline = time.monotonic() + 10
        while bucket_state(master, 1) != pb.BUCKET_FILE_MISSING:
            assert time.monotonic() < deadline, "the master found bucket 1's file missing after the writes there failed"
            time.sleep(0.05)
        keys, codes = put(old, "while-missing")
        assert codes == [0] * KEYS, "keys homed in bucket 1 spill to buckets whose files are there"
        assert unread_by_a_fresh_client(master, keys) == []

        # A restart creates the file again, empty; the old client still holds the deleted one open.
        master.close()
        master = Master(root, *flags)
        assert bucket_state(master, 1) == pb.BUCKET_FILE_HEALTHY
        keys, codes = put(old, "after-restart")
        assert codes == [0] * KEYS
        assert unread_by_a_fresh_client(master, keys) == [], "the puts into bucket 1 went into the file now at its path"
        assert old.stats()["stale_file_rewrites"] > 0
        assert unread_by_a_fresh_client(master, acknowledged) == []
        # The old client reads them too: its fd pool took the new file.
        assert [key for key in keys if old.get(key) != payload(key)] == []
    finally:
        old.close()
        master.close()


@pytest.mark.timeout(120)
def test_a_long_lived_reader_reads_a_bucket_file_replaced_under_it(tmp_path, io):
    root = str(tmp_path / "root")
    master = Master(root, "--bucket-check-interval", "1h")
    reader = mcctl.Client(master=master.address, tenant="t", **io_options(io))
    try:
        keys, codes = put(reader, "before")
        assert codes == [0] * KEYS
        assert unread_by_a_fresh_client(master, keys) == []
        assert [key for key in keys[:50] if reader.get(key) != payload(key)] == []  # the reader holds every bucket file open
        path = os.path.join(root, "bucket_01.data")
        with open(path + ".new", "wb") as copy:
            copy.truncate(os.path.getsize(path))
        os.replace(path + ".new", path)  # another file at the path, empty

        keys = [f"new/{i}" for i in range(200)]
        with mcctl.Client(master=master.address, tenant="t") as writer:
            assert writer.batch_put_from(keys, [payload(key) for key in keys]) == [0] * len(keys)
            found = Placements.of(writer._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
                keys=keys, tenant_ids=["t"] * len(keys), packed=True)), len(keys))
        assert 1 in found.buckets, "some of the keys went into the new file of bucket 1"

        buffers = [bytearray(len(payload(key))) for key in keys]
        assert reader.batch_get_into(keys, buffers) == [len(b) for b in buffers], "read from the file now at the path"
        assert [key for key, b in zip(keys, buffers) if bytes(b) != payload(key)] == []
        assert [key for key in keys if reader.get(key) != payload(key)] == []
    finally:
        reader.close()
        master.close()
