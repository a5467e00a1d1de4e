"""KV events from a real master process, read by a real ZeroMQ subscriber (Debian's python3-zmq, python3-msgpack) that
decodes with the rules of llm-d's indexer (the batch a positional [ts, events, dp_rank?], each event a map tagged by
``type``, hashes as unsigned 64-bit numbers or the last 8 bytes of bytes) and of vLLM's KVEventBatch."""

from __future__ import annotations

import os
import signal
import time

import msgpack
import pytest
import zmq

import mcctl
from mcctl.kv_events import KvBlocks

from conftest import Master, free_port, run_cli
from test_ha import LEADER, Etcd, await_role


def llm_d_hash(value) -> int:
    """llm-d's reading of a hash: an integer as uint64, bytes by their last 8 bytes big-endian."""
    if isinstance(value, (bytes, bytearray)):
        return int.from_bytes(bytes(value)[-8:].rjust(8, b"\0"), "big")
    assert isinstance(value, int) and 0 <= value < 1 << 64, value
    return value


def decode(payload: bytes):
    """The events of one batch, as (type, hashes, reason, event) tuples; fails on anything llm-d or vLLM would refuse."""
    batch = msgpack.unpackb(payload, raw=False)
    assert isinstance(batch, list) and len(batch) >= 2, f"llm-d reads the batch as an array of at least 2 fields: {batch!r}"
    ts, events = batch[0], batch[1]
    assert isinstance(ts, float), "vLLM's ts is a float"
    out = []
    for event in events:
        assert isinstance(event, dict) and isinstance(event.get("type"), str), f"a map tagged by type: {event!r}"
        kind = event["type"]
        assert kind in ("BlockStored", "BlockRemoved", "AllBlocksCleared"), kind
        if kind == "BlockStored":
            for required in ("block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name"):
                assert required in event, f"vLLM's BlockStored has {required} (no default): {event!r}"
            assert len(event["token_ids"]) in (0, event["block_size"] * len(event["block_hashes"]))
        if kind != "AllBlocksCleared":
            assert event["medium"] == "STORAGE" and event["locality"] == "REMOTE" and event["ownership"].startswith("mcctl:")
        out.append((kind, [llm_d_hash(h) for h in event.get("block_hashes", [])], event.get("reason"), event))
    return out


class Subscriber:
    """A SUB socket on the master's endpoint and a DEALER for its replay endpoint, as llm-d's subscriber uses them."""

    def __init__(self, endpoint: str, replay: str, topic: str = ""):
        self.context = zmq.Context()
        self.sub = self.context.socket(zmq.SUB)
        self.sub.setsockopt(zmq.LINGER, 0)
        self.sub.connect(endpoint)
        self.sub.setsockopt(zmq.SUBSCRIBE, topic.encode())
        self.replay_endpoint = replay
        self.batches = {}  # sequence -> (topic, events), live and replayed
        self.duplicates = 0

    def _take(self, topic: bytes, seq: bytes, payload: bytes) -> None:
        number = int.from_bytes(seq, "big")
        events = decode(payload)
        if number in self.batches:
            assert self.batches[number] == (topic.decode(), events), f"batch {number} came again with other content"
            self.duplicates += 1  # recognised by its sequence
        self.batches[number] = (topic.decode(), events)

    def receive(self, timeout_ms: int = 200) -> bool:
        if not self.sub.poll(timeout_ms):
            return False
        topic, seq, payload = self.sub.recv_multipart()
        self._take(topic, seq, payload)
        return True

    def replay(self, start: int = 0) -> list:
        dealer = self.context.socket(zmq.DEALER)
        dealer.setsockopt(zmq.LINGER, 0)
        dealer.connect(self.replay_endpoint)
        dealer.send_multipart([b"", start.to_bytes(8, "big")])
        got = []
        try:
            while True:
                assert dealer.poll(10_000), "the replay endpoint answered within 10 s"
                frames = dealer.recv_multipart()
                if frames and not frames[0]:
                    frames = frames[1:]
                assert len(frames) == 3, frames
                topic, seq, payload = frames
                if int.from_bytes(seq, "big", signed=True) == -1:
                    assert payload == b""
                    return got
                self._take(topic, seq, payload)
                got.append(int.from_bytes(seq, "big"))
        finally:
            dealer.close()

    def events(self):
        """Every event seen, in sequence order, with no gap in the numbers."""
        numbers = sorted(self.batches)
        assert numbers == list(range(numbers[0], numbers[0] + len(numbers))) if numbers else True, f"a gap: {numbers}"
        return [event for n in numbers for event in self.batches[n][1]]

    def close(self) -> None:
        self.sub.close()
        self.context.term()


def blocks(i: int) -> KvBlocks:
    # Hashes above 2^63 and as bytes too: the master keeps and sends the unsigned 64-bit value.
    first = (1 << 63) + i if i % 2 else i.to_bytes(32, "big")
    return KvBlocks(block_hashes=[first, 1_000_000 + i], parent_block_hash=None if i == 0 else 999, block_size=2,
                    token_ids=[i, i, i, i])


def hashes_of(i: int):
    return [(1 << 63) + i if i % 2 else i, 1_000_000 + i]


def events_flags(pub: int, replay: int, *more: str):
    return ("--kv-events-endpoint", f"tcp://127.0.0.1:{pub}", "--kv-events-replay-endpoint", f"tcp://127.0.0.1:{replay}", *more)


def await_events(subscriber: Subscriber, count: int, limit: float = 30) -> list:
    """Every event, once ``count`` have come or ``limit`` seconds have passed. Whatever the live socket missed (it joined
    late, reconnected to a new leader, or the publisher was busy) comes from the replay endpoint, which a subscriber
    asks once the live stream has been quiet for a second, and at the end."""
    deadline = time.monotonic() + limit
    quiet_since = time.monotonic()

    def seen() -> int:
        return sum(len(events) for _, events in subscriber.batches.values())

    while seen() < count and time.monotonic() < deadline:
        if subscriber.receive():
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= 1:
            subscriber.replay(0)
            quiet_since = time.monotonic()
    subscriber.replay(0)
    return subscriber.events()


@pytest.mark.timeout(180)
def test_stored_removed_and_evicted_objects_each_appear_once_in_order_with_the_engine_hashes(tmp_path):
    pub, replay = free_port(), free_port()
    # 1 bucket of 1 MiB in 4 KiB pages, objects of 64 KiB: the sixteenth offload makes the tier evict.
    master = Master(str(tmp_path / "root"), "--bucket-count", "1", "--bucket-size", "1MiB", "--page-size", "4KiB",
                    "--eviction-high-watermark", "0.5", "--eviction-low-watermark", "0.25", *events_flags(pub, replay))
    subscriber = Subscriber(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
    try:
        with mcctl.Client(master=master.address, tenant="default") as client:
            n = 40
            for i in range(n):
                assert client.batch_put_from([f"k{i}"], [bytes([i]) * 65536], kv_blocks=[blocks(i)]) == [0]
                subscriber.receive(10)
            client.put("plain", b"x" * 100)  # no blocks: announced not at all
            # The newest two: the evictor takes the least recently used first, and the oldest may be gone by the remove.
            listed = sorted((k for k in client.list_keys() if k != "plain"), key=lambda k: int(k[1:]), reverse=True)[:2]
            # The evictor runs meanwhile: a key it took first is not found by the remove, and counts as evicted.
            removed = [k for k, code in zip(listed, client.batch_remove(listed)) if code == 0]
            assert removed, "a remove went through"
            present = set(client.list_keys())
            events = await_events(subscriber, n + (n - len(present) + 1))
            # The evictor may run again after a listing, and its events follow the change: listen until the events
            # account for what the tier holds now, or the deadline passes and the assertions below say what differs.
            deadline = time.monotonic() + 30
            while True:
                present = set(client.list_keys())
                stored_now = {tuple(h) for kind, h, _, _ in events if kind == "BlockStored"}
                gone_now = {tuple(h) for kind, h, _, _ in events if kind == "BlockRemoved"}
                if stored_now - gone_now == {tuple(hashes_of(int(k[1:]))) for k in present if k != "plain"} \
                        or time.monotonic() > deadline:
                    break
                events = await_events(subscriber, len(events) + 1, limit=1)
        stored = [tuple(h) for kind, h, _, _ in events if kind == "BlockStored"]
        assert sorted(stored) == sorted(tuple(hashes_of(i)) for i in range(n)), "every object with blocks stored once"
        gone = {tuple(h): reason for kind, h, reason, _ in events if kind == "BlockRemoved"}
        assert len(gone) == len([e for e in events if e[0] == "BlockRemoved"]), "each removal once"
        assert {tuple(hashes_of(int(k[1:]))) for k in removed} <= set(gone), "the removed ones"
        assert all(gone[tuple(hashes_of(int(k[1:])))] == "removed" for k in removed)
        evicted = {h for h, reason in gone.items() if reason.startswith("evicted")}
        assert evicted, "the tier evicted, and said so"
        still = {tuple(hashes_of(int(k[1:]))) for k in present if k != "plain"}
        assert set(stored) - set(gone) == still, "what the events leave is exactly what the tier holds"
        for h in gone:
            assert events.index(next(e for e in events if e[0] == "BlockStored" and tuple(e[1]) == h)) < \
                events.index(next(e for e in events if e[0] == "BlockRemoved" and tuple(e[1]) == h)), "stored before removed"
        first = next(e[3] for e in events if e[0] == "BlockStored" and e[1] == hashes_of(1))
        assert first["parent_block_hash"] == 999 and first["block_size"] == 2 and first["token_ids"] == [1, 1, 1, 1]
    finally:
        subscriber.close()
        master.close()


@pytest.mark.timeout(120)
def test_a_subscriber_that_joins_late_gets_the_missed_batches_from_replay(tmp_path):
    pub, replay = free_port(), free_port()
    master = Master(str(tmp_path / "root"), *events_flags(pub, replay))
    try:
        with mcctl.Client(master=master.address, tenant="default") as client:
            for i in range(5):
                assert client.batch_put_from([f"k{i}"], [b"v" * 10], kv_blocks=[blocks(i)]) == [0]
        late = Subscriber(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
        try:
            numbers = late.replay(0)
            assert numbers[0] == 0 and numbers == list(range(len(numbers)))
            assert [h for _, h, _, _ in late.events()] == [hashes_of(i) for i in range(5)]
            assert late.replay(numbers[-1]) == [numbers[-1]], "a replay from a sequence starts there"
        finally:
            late.close()
    finally:
        master.close()


@pytest.mark.timeout(180)
def test_kill_9_and_restart_miss_no_acknowledged_object_and_repeat_none_unrecognised(tmp_path):
    pub, replay = free_port(), free_port()
    root = str(tmp_path / "root")
    master = Master(root, *events_flags(pub, replay))
    subscriber = Subscriber(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
    acknowledged = []
    try:
        with mcctl.Client(master=master.address, tenant="default") as client:
            for i in range(30):
                assert client.batch_put_from([f"k{i}"], [b"v" * 10], kv_blocks=[blocks(i)]) == [0]
                acknowledged.append(i)
                subscriber.receive(5)
        master.kill()  # kill -9: batches the log holds may not have been sent
        master = Master(root, *events_flags(pub, replay))
        with mcctl.Client(master=master.address, tenant="default") as client:
            client.remove("k0")
        events = await_events(subscriber, len(acknowledged) + 1)
        stored = [h for kind, h, _, _ in events if kind == "BlockStored"]
        assert stored == [hashes_of(i) for i in acknowledged], "every acknowledged object once, in order, across the kill"
        assert events[-1][:3] == ("BlockRemoved", hashes_of(0), "removed")
    finally:
        subscriber.close()
        master.close()


@pytest.mark.timeout(240)
def test_a_fail_over_continues_the_sequence_from_the_log(tmp_path):
    etcd = Etcd(str(tmp_path))
    pub, replay = free_port(), free_port()
    root = str(tmp_path / "root")
    flags = ("--ha", etcd.url + "/test", "--ha-lease-ttl", "2s", "--bucket-count", "4", "--bucket-size", "4MiB", "--page-size", "4KiB",
             *events_flags(pub, replay))
    masters = []
    subscriber = Subscriber(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
    try:
        masters.append(Master(root, *flags))
        await_role(masters[0], lambda r: r == LEADER)
        masters.append(Master(root, *flags))
        with mcctl.Client(master=f"{etcd.url}/test", tenant="default") as client:
            for i in range(10):
                assert client.batch_put_from([f"k{i}"], [b"v" * 10], kv_blocks=[blocks(i)]) == [0]
            masters[0].kill()  # kill -9 of the leader: the standby takes over and binds the same endpoints
            await_role(masters[1], lambda r: r == LEADER)
            for i in range(10, 15):
                assert client.batch_put_from([f"k{i}"], [b"v" * 10], kv_blocks=[blocks(i)]) == [0]
        events = await_events(subscriber, 15)
        assert [h for kind, h, _, _ in events if kind == "BlockStored"] == [hashes_of(i) for i in range(15)], \
            "nothing acknowledged missing, nothing twice under another number"
    finally:
        subscriber.close()
        for m in masters:
            if m.process.poll() is None:
                os.kill(m.process.pid, signal.SIGCONT)
            m.close()
        etcd.close()


@pytest.mark.timeout(120)
@pytest.mark.parametrize("flags, says", [
    (("--kv-events-topic", "kv@{model}"), "kv_events_topic"),
    (("--kv-events-endpoint", "udp://x:1"), "kv_events_endpoint"),
    (("--kv-events-tenants", "a,a"), "kv_events_tenants"),
])
def test_a_bad_setting_is_one_line_at_start(tmp_path, flags, says):
    done = run_cli("master", "start", "--root", str(tmp_path / "root"), "--port", "0", "--metrics-port", "0", *flags, timeout=60)
    assert done.returncode == 2, done
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines


@pytest.mark.timeout(120)
def test_an_endpoint_that_cannot_bind_is_one_line_at_start(tmp_path):
    import socket
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = run_cli("master", "start", "--root", str(tmp_path / "root"), "--port", "0", "--metrics-port", "0",
                       "--kv-events-endpoint", f"tcp://127.0.0.1:{port}", timeout=60)
    assert done.returncode != 0
    errors = [line for line in done.stderr.decode().splitlines() if "ERROR" in line or "kv_events" in line]
    assert any(f"kv_events_endpoint: cannot bind tcp://127.0.0.1:{port}" in line for line in errors), done.stderr.decode()


@pytest.mark.timeout(120)
def test_events_tail_prints_one_line_per_event(tmp_path):
    pub, replay = free_port(), free_port()
    master = Master(str(tmp_path / "root"), *events_flags(pub, replay))
    try:
        with mcctl.Client(master=master.address, tenant="default") as client:
            client.put("a", b"v", kv_blocks=blocks(2))
            client.remove("a")
        deadline = time.monotonic() + 30
        while True:
            done = run_cli("events", "tail", "--endpoint", f"tcp://127.0.0.1:{pub}", "--replay-endpoint", f"tcp://127.0.0.1:{replay}",
                           "--from", "0", "--count", "2", "--idle-timeout", "2", "-o", "json")
            lines = done.stdout.decode().splitlines()
            if len(lines) == 2 or time.monotonic() > deadline:
                break
        assert done.returncode == 0, done
        import json
        first, second = (json.loads(line) for line in lines)
        assert first["type"] == "BlockStored" and first["block_hashes"] == hashes_of(2) and first["seq"] == 0
        assert second["type"] == "BlockRemoved" and second["reason"] == "removed"
    finally:
        master.close()


def test_block_hashes_are_reduced_as_vllm_and_llm_d_reduce_them():
    from mcctl.kv_events import block_hash
    assert block_hash(bytes(range(32))) == int.from_bytes(bytes(range(24, 32)), "big"), "the last 8 bytes, big-endian"
    assert block_hash(b"\x01\x02") == 0x0102
    assert block_hash(-1) == (1 << 64) - 1, "a negative int as its two's complement"
    assert block_hash((1 << 64) - 1) == (1 << 64) - 1
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        block_hash(1 << 64)
    with pytest.raises(TypeError):
        block_hash("abc")


@pytest.mark.timeout(60)
def test_kv_blocks_that_do_not_match_the_keys_are_refused_in_one_line_and_change_nothing(client):
    with pytest.raises(mcctl.InvalidParams, match="2 keys but 1 kv_blocks entries"):
        client.batch_put_from(["a", "b"], [b"1", b"2"], kv_blocks=[blocks(1)])
    with pytest.raises(mcctl.InvalidParams, match="no block_hashes"):
        client.put("a", b"1", kv_blocks=KvBlocks(block_hashes=[]))
    codes = client.batch_put_from(["c"], [b"1"], kv_blocks=[KvBlocks(block_hashes=[1], block_size=4, token_ids=[1, 2])])
    assert codes == [mcctl.errors.INVALID_PARAMS], "token ids that are neither none nor block_size per block: that key refused"
    assert set(client.list_keys()) == set(), "nothing was written"


def sglang_page_hashes(n: int, tokens_per_page: int):
    """A chain of page hashes as SGLang's HiCache names pages: each page's SHA-256 over the hash before it and its
    tokens (4 bytes each, little-endian), in hex."""
    import hashlib
    out, prior = [], b""
    for page in range(n):
        digest = hashlib.sha256(prior + b"".join((page * tokens_per_page + t).to_bytes(4, "little") for t in range(tokens_per_page)))
        out.append(digest.hexdigest())
        prior = digest.digest()
    return out


@pytest.mark.timeout(300)
def test_pages_offloaded_through_the_sglang_and_vllm_connectors_are_announced_with_the_engines_block_hashes(tmp_path):
    import hashlib

    import numpy as np
    import torch
    from sglang_pools import MHATokenToKVPoolHost, same, token_indices
    from test_sglang import interface as sglang_interface, make_store, storage_config
    from test_vllm import interface as vllm_interface, job, make_tier, primary, wait_for

    pub, replay = free_port(), free_port()
    # 1 bucket of 1 MiB in 4 KiB pages; every object is 32 KiB (8 pages): the 17th makes the tier evict.
    master = Master(str(tmp_path / "root"), "--bucket-count", "1", "--bucket-size", "1MiB", "--page-size", "4KiB",
                    "--eviction-high-watermark", "0.5", "--eviction-low-watermark", "0.25", *events_flags(pub, replay))
    subscriber = Subscriber(f"tcp://127.0.0.1:{pub}", f"tcp://127.0.0.1:{replay}")
    expected = {}  # object key -> the block hash a router must see for it
    sglang_order, parents = [], {}
    try:
        with sglang_interface() as (_, hicache), vllm_interface("vllm_cda0f324") as v:
            # SGLang: an MHA host pool of 16-token pages (K and V: 32 KiB a page), pages written by batch_set_v1.
            pool = MHATokenToKVPoolHost("page_first", page_num=64, page_size=16, layer_num=4, head_num=4, head_dim=32, seed=7)
            store = make_store(storage_config(hicache, master, "default"), pool)
            pages = sglang_page_hashes(30, 16)
            for i, key in enumerate(pages):
                expected[store.pool_key("kv", key)] = int(key[:16], 16)  # what SGLang's own events say for the page
                parents[int(key[:16], 16)] = int(pages[i - 1][:16], 16) if i else None
            # vLLM: a primary tier of 16 blocks of 32 KiB, keys of 32-byte block hashes and KV cache group 0.
            source, view = primary(5)
            tier = make_tier(v, master, "default", view)
            block_hashes = [hashlib.sha256(b"block %d" % i).digest() for i in range(16)]
            keys = [v.kv.make_offload_key(h, 0) for h in block_hashes]
            for key, h in zip(keys, block_hashes):
                expected[tier.object_key(key)] = int.from_bytes(h[-8:], "big")  # how llm-d reads a bytes hash

            # Offload and read back: 6 SGLang pages, 6 vLLM blocks, well under the watermark.
            assert store.batch_set_v1(pages[:6], token_indices(range(6), 16), hicache.HiCacheStorageExtraInfo()) == [True] * 6
            sglang_order += pages[:6]
            assert store.batch_get_v1(pages[:6], token_indices(range(32, 38), 16)) == [True] * 6
            assert all(same(pool.page(32 + i), pool.page(i)) for i in range(6))
            tier.submit_store(job(v, 1, keys[:6], range(6), promotion=False))
            assert wait_for(v, tier, [1])[1].success
            dest, dest_view = primary(6)
            reader = make_tier(v, master, "default", dest_view)
            reader.submit_load(job(v, 2, keys[:6], range(10, 16), promotion=True))
            assert wait_for(v, reader, [2])[2].success
            assert all(torch.equal(dest[10 + i], source[i]) for i in range(6))
            # Remove two pages; then fill the tier until it evicts (the prefix keys continue the chain).
            removed = [store.pool_key("kv", k) for k in pages[1:3]]
            assert store.client.batch_remove(removed) == [0, 0]
            more = hicache.HiCacheStorageExtraInfo(prefix_keys=pages[:6])
            assert store.batch_set_v1(pages[6:30], token_indices(range(6, 30), 16), more) == [True] * 24
            sglang_order += pages[6:30]
            tier.submit_store(job(v, 3, keys[6:], np.arange(6, 16), promotion=False))
            assert wait_for(v, tier, [3])[3].success
            present = set(store.client.list_keys())
            # Each object stored once, and each one the tier no longer holds (the two removed, the evicted) removed once.
            events = await_events(subscriber, len(expected) + (len(expected) - len(present)))
            # The evictor may run again after a listing, and its events follow the change: listen until the events
            # account for what the tier holds now, or the deadline passes and the assertions below say what differs.
            deadline = time.monotonic() + 30
            while True:
                present = set(store.client.list_keys())
                stored_now = {hs[0] for kind, hs, _, _ in events if kind == "BlockStored"}
                gone_now = {hs[0] for kind, hs, _, _ in events if kind == "BlockRemoved"}
                if stored_now - gone_now == {expected.get(k) for k in present} or time.monotonic() > deadline:
                    break
                events = await_events(subscriber, len(events) + 1, limit=1)
            tier.drain_jobs()
            for t in (tier, reader):
                t.shutdown()
            store.close()

        stored = [e for e in events if e[0] == "BlockStored"]
        assert sorted(h for _, hs, _, _ in stored for h in hs) == sorted(expected.values()), \
            "every object offloaded through a connector stored once, with the engine's block hash"
        assert all(len(hs) == 1 for _, hs, _, _ in stored)
        sglang_hashes = {int(k[:16], 16) for k in pages}
        assert [hs[0] for _, hs, _, _ in stored if hs[0] in sglang_hashes] == [int(k[:16], 16) for k in sglang_order], \
            "in the order SGLang wrote them"
        for _, hs, _, event in stored:
            if hs[0] in sglang_hashes:
                assert event["parent_block_hash"] == parents[hs[0]] and event["block_size"] == 16 and event["token_ids"] == []
            else:
                assert event["parent_block_hash"] is None and event["block_size"] == 0
        gone = [(hs[0], reason) for kind, hs, reason, _ in events if kind == "BlockRemoved"]
        assert len(gone) == len(dict(gone)), "each removal once"
        gone = dict(gone)
        assert all(gone[expected[k]] == "removed" for k in removed)
        assert any(reason.startswith("evicted") for reason in gone.values()), "the tier evicted, and said so"
        for h in gone:
            assert next(i for i, e in enumerate(events) if e[0] == "BlockStored" and e[1] == [h]) < \
                next(i for i, e in enumerate(events) if e[0] == "BlockRemoved" and e[1] == [h]), "stored before removed"
        assert set(expected.values()) - set(gone) == {expected[k] for k in present}, \
            "what the events leave is exactly what the tier holds"
    finally:
        subscriber.close()
        master.close()
