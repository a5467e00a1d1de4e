"""The DRAM tier from the Python client against a real master and, end to end, a real node process: promote, the
promotion queue, reads served by a node's MEMORY replica, and the pread of the shared file once that node is
killed (kill -9)."""

from __future__ import annotations

import time

import pytest
import torch

import mcctl
from mcctl._proto import master_pb2 as pb

from conftest import Master, Node, ProcessDidNotServe
from sglang_pools import same, token_indices
import test_sglang
import test_vllm

def pattern(seed: int, size: int) -> bytes:
    return torch.randint(0, 256, (size,), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed)).numpy().tobytes()


def delta(before: dict, after: dict, name: str) -> int:
    return after.get(name, 0) - before.get(name, 0)


# ---- without a node ----

def test_a_mapping_without_memory_replicas_is_read_by_pread(client):
    keys = [f"plain/{i}" for i in range(5)]
    values = [pattern(i, 10_000 + i) for i in range(5)]
    assert client.batch_put_from(keys, values) == [0] * 5
    before = client.stats()
    pool = torch.zeros(sum(len(v) for v in values), dtype=torch.uint8)
    starts = [sum(len(v) for v in values[:i]) for i in range(5)]
    assert client.batch_get_into(keys, [pool[s:s + len(v)] for s, v in zip(starts, values)]) == [len(v) for v in values]
    assert client.get(keys[0]) == values[0]
    assert all(bytes(pool[s:s + len(v)].numpy()) == v for s, v in zip(starts, values))
    after = client.stats()
    assert delta(before, after, "reads") == 6
    assert delta(before, after, "memory_reads") == 0 and delta(before, after, "memory_fallbacks") == 0


def test_promote_of_a_missing_key_is_not_found_and_a_committed_key_stays_queued_without_a_node(fresh_master):
    with mcctl.Client(master=fresh_master.address, tenant="hot") as c:
        with pytest.raises(mcctl.ObjectNotFound):
            c.promote("missing")
        with pytest.raises(mcctl.InvalidParams, match="key is empty"):
            c.promote("")
        assert c.promotions().tasks == []
        data = pattern(7, 70_000)
        c.put("warm-me", data)
        task = c.promote("warm-me")
        assert (task.tenant, task.key, task.size, task.holder) == ("hot", "warm-me", 70_000, None)
        assert task.crc32c == c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(
            tenant_id="hot", key="warm-me")).distributed_disk.crc32c
        again = c.promote("warm-me")  # the task already queued, not a second one
        assert (again.key, again.source_file, again.source_offset) == (task.key, task.source_file, task.source_offset)
        listed = c.promotions()
        assert [(t.tenant, t.key, t.holder) for t in listed.tasks] == [("hot", "warm-me", None)]
        assert listed.queued_total == 1 and listed.succeeded_total == 0 and listed.memory_objects == 0
        assert c.get("warm-me") == data  # a queued promotion changes nothing for readers


def test_bad_memory_read_options_are_one_line(master):
    for options, text in (({"read_memory_replicas": "no"}, "read_memory_replicas 'no' must be True or False"),
                          ({"node_timeout": 0}, "node_timeout 0 must be a positive number of seconds")):
        with pytest.raises(mcctl.InvalidParams) as raised:
            mcctl.Client(master=master.address, **options)
        assert text in str(raised.value) and "\n" not in str(raised.value)


# ---- end to end with a node holding a DRAM segment ----

@pytest.fixture
def tier(tmp_path):
    """A master whose nodes stay alive in its registry for a minute after their last ping (so a killed node's MEMORY
    replicas are still handed out while the test reads), and one node with a 64 MiB DRAM segment."""
    master = Master(str(tmp_path / "root"), "--client-ttl", "60s")
    try:
        node = Node(master, "--memory", "64MiB")
    except ProcessDidNotServe as e:
        master.close()
        if "--memory" in e.log and "not built yet" in e.log:
            pytest.skip(f"this build's node has no DRAM segment: {e.log.splitlines()[-1]}")
        raise
    except BaseException:
        master.close()
        raise
    yield master, node
    node.close()
    master.close()


def mappings(c: mcctl.Client, keys):
    return c._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
        keys=keys, tenant_ids=[c.tenant] * len(keys))).results


def promote_and_wait(c: mcctl.Client, keys, node: Node, limit_s: float = 60.0) -> None:
    """Promotes every key and waits until each one's mapping carries a MEMORY replica in ``node``."""
    for key in keys:
        assert c.promote(key).key == key
    deadline = time.monotonic() + limit_s
    while True:
        results = mappings(c, keys)
        if all(r.memory and r.memory[0].memory.client_id == node.client_id for r in results):
            return
        assert time.monotonic() < deadline, f"not promoted within {limit_s} s: {c.promotions()}"
        time.sleep(0.1)


@pytest.mark.timeout(180)
def test_reads_are_served_by_the_nodes_memory_and_by_pread_once_the_node_is_killed(tier):
    master, node = tier
    with mcctl.Client(master=master.address, tenant="t") as c:
        sizes = [1, 4096, 100_000, (3 << 20) + 7]  # the last one spans many chunks of the node's stream
        keys = [f"hot/{i}" for i in range(len(sizes))]
        values = [pattern(40 + i, n) for i, n in enumerate(sizes)]
        assert c.batch_put_from(keys, values) == [0] * len(keys)
        promote_and_wait(c, keys, node)
        replicas = c._read("GetReplicaList", pb.GetReplicaListRequest(tenant_id="t", key=keys[2])).replicas
        assert [r.type for r in replicas][:1] == [pb.MEMORY]
        listed = c.promotions()
        assert listed.succeeded_total == len(keys) and listed.memory_objects == len(keys)

        def read_all():
            pool = torch.full((sum(sizes) + 64,), 0xEE, dtype=torch.uint8)
            starts = [sum(sizes[:i]) + 16 * i for i in range(len(sizes))]
            got = c.batch_get_into(keys, [pool[s:s + n] for s, n in zip(starts, sizes)])
            assert got == sizes
            assert all(bytes(pool[s:s + n].numpy()) == v for s, n, v in zip(starts, sizes, values))
            assert all(bytes(pool[s + n:s + n + 16].numpy()) == b"\xee" * 16 for s, n in zip(starts[:-1], sizes))
            assert c.get(keys[3]) == values[3]

        before = c.stats()
        read_all()
        after = c.stats()
        assert delta(before, after, "memory_reads") == len(keys) + 1, after
        assert delta(before, after, "reads") == 0 and delta(before, after, "memory_fallbacks") == 0, after

        node.kill()
        assert all(r.memory for r in mappings(c, keys)), "the master still hands out the killed node's replicas"
        before = c.stats()
        read_all()
        after = c.stats()
        assert delta(before, after, "memory_reads") == 0, after
        assert delta(before, after, "memory_fallbacks") == len(keys) + 1, after
        assert delta(before, after, "reads") == len(keys) + 1, after
        # The batch's calls to the dead node failed; the get right after it did not call the node again.
        assert delta(before, after, "memory_read_failures") == len(keys), after
        assert delta(before, after, "memory_nodes_passed_over") == 1, after

    with mcctl.Client(master=master.address, tenant="t", read_memory_replicas=False) as files_only:
        assert files_only.get(keys[2]) == values[2]
        assert files_only.stats().get("memory_fallbacks", 0) == 0 and files_only.stats()["reads"] == 1


@pytest.mark.timeout(180)
def test_sglang_prefetch_and_a_vllm_load_read_promoted_objects_from_the_nodes_memory(tier):
    master, node = tier
    with test_sglang.interface() as (_, hicache):
        writer_pool = test_sglang.kv_pool("mha", "page_first", seed=5, pages=24)
        config = test_sglang.storage_config(hicache, master, "t")
        writer = test_sglang.make_store(config, writer_pool)
        keys = [f"hash{i:04d}" for i in range(20)]
        pages = list(range(2, 22))
        assert writer.batch_set_v1(keys, token_indices(pages, 4)) == [True] * 20
        promote_and_wait(writer.client, [writer._key(k) for k in keys], node)

        reader_pool = test_sglang.kv_pool("mha", "page_first", seed=6, pages=24)
        reader = test_sglang.make_store(config, reader_pool)
        targets = list(range(4, 24))
        assert reader.batch_get_v1(keys, token_indices(targets, 4)) == [True] * 20
        for key_index, target in enumerate(targets):
            assert same(reader_pool.page(target), writer_pool.page(pages[key_index]))
        stats = reader.client.stats()
        assert stats["memory_reads"] == 20 and stats.get("reads", 0) == 0, stats
        writer.close()
        reader.close()

    with test_vllm.interface("vllm_cda0f324") as v:
        source, view = test_vllm.primary(11)
        storing = test_vllm.make_tier(v, master, "t", view)
        blocks = test_vllm.keys_of(v, 4)
        storing.submit_store(test_vllm.job(v, 1, blocks, [2, 4, 6, 8], promotion=False))
        assert test_vllm.wait_for(v, storing, [1])[1].success
        promote_and_wait(storing.client, [storing.object_key(b) for b in blocks], node)
        dest, dest_view = test_vllm.primary(12)
        loading = test_vllm.make_tier(v, master, "t", dest_view)
        loading.submit_load(test_vllm.job(v, 2, blocks, [0, 1, 14, 15], promotion=True))
        assert test_vllm.wait_for(v, loading, [2])[2].success
        for src, dst in zip([2, 4, 6, 8], [0, 1, 14, 15]):
            assert torch.equal(dest[dst], source[src])
        stats = loading.client.stats()
        assert stats["memory_reads"] == 4 and stats.get("reads", 0) == 0, stats
        test_vllm.close(storing, loading)
