"""The vLLM secondary tier driven as vLLM's tiering manager drives it, against both shapes of vLLM's tier interface
(tests/standins: tiering/base.py at 041410b9 and at cda0f324): built by the factory's own call shape, the scheduler's
calls on the test's thread and the transfers on the tier's own, a real CPU torch tensor as the primary tier, block ids
as int64 numpy arrays and keys as bytes (block hash and group index), against a real master."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
import time
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mcctl._proto import master_pb2 as pb

from conftest import io_options
from engines import engine

BLOCKS, BLOCK_BYTES = 16, 32 * 1024
SHAPES = ["vllm_041410b9", "vllm_cda0f324"]


@contextlib.contextmanager
def interface(shape: str):
    """The tier module loaded over one shape of vLLM's interface, with that shape's classes."""
    with engine(shape, "vllm") as (module, _):
        base = importlib.import_module("vllm.v1.kv_offload.tiering.base")
        yield SimpleNamespace(shape=shape, tier=module, base=base,
                              factory=importlib.import_module("vllm.v1.kv_offload.tiering.factory").SecondaryTierFactory,
                              kv=importlib.import_module("vllm.v1.kv_offload.base"), current=hasattr(base, "TransferJob"))


@pytest.fixture(scope="module", params=SHAPES)
def vllm(request):
    with interface(request.param) as v:
        yield v


def hit(v):
    return v.kv.LookupResult.HIT if v.current else True


def miss(v):
    return v.kv.LookupResult.MISS if v.current else False


def retry(v):
    return v.kv.LookupResult.RETRY if v.current else None


def job(v, job_id: int, keys, ids, promotion: bool):
    """A job as the tiering manager submits it: TransferJob with chunk_ids, or JobMetadata with block_ids (int64)."""
    rows = np.array(ids, dtype=np.int64)
    context = v.kv.ReqContext(req_id=f"req-{job_id}")
    if v.current:
        return v.base.TransferJob(job_id=job_id, keys=list(keys), chunk_ids=rows, is_promotion=promotion, req_context=context)
    return v.base.JobMetadata(job_id=job_id, keys=list(keys), block_ids=rows, is_promotion=promotion, req_context=context)


def primary(seed: int):
    """The primary tier's CPU KV cache as vLLM hands it to a tier: a memoryview with one row per block."""
    tensor = torch.randint(0, 256, (BLOCKS, BLOCK_BYTES), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
    return tensor, memoryview(tensor.numpy())


def make_tier(v, master, tenant, view, **config):
    """Built as the factory builds a tier from its config: by module_path (current shape) or by the registered type."""
    settings = {"master": master.address, "tenant": tenant, "key_prefix": "model-a/", **config}
    if v.current:
        settings.update(type="McctlTier", module_path="mcctl.vllm")
    else:
        v.tier.register()
        settings.update(type="mcctl")
    return v.factory.create_secondary_tier(settings, view, offloading_spec=None)


def keys_of(v, n: int, group: int = 0, salt: int = 0):
    return [v.kv.make_offload_key(bytes([(i + salt) % 256]) * 32, group) for i in range(n)]


def finished(v, tier):
    """The scheduler's poll: get_finished_jobs, or get_finished in the interface of 041410b9."""
    return tier.get_finished_jobs() if v.current else tier.get_finished()


def wait_for(v, tier, job_ids, limit_s=30.0):
    """Polls the finished jobs each scheduler step until these jobs are reported; their results by id."""
    results, deadline = {}, time.monotonic() + limit_s
    while set(job_ids) - set(results):
        assert time.monotonic() < deadline, f"jobs {set(job_ids) - set(results)} never finished"
        results.update((r.job_id, r) for r in finished(v, tier))
        time.sleep(0.01)
    return results


def lookup(v, tier, key, limit_s=30.0):
    """Asks each scheduler step until the tier answers (RETRY, or None: ask again)."""
    deadline = time.monotonic() + limit_s
    while True:
        answer = tier.lookup(key, v.kv.ReqContext(req_id="lookup"))
        if answer != retry(v):
            return answer
        assert time.monotonic() < deadline, "lookup never answered"
        time.sleep(0.01)


def close(*tiers):
    for t in tiers:
        t.drain_jobs()
        t.shutdown()


def test_store_then_load_into_other_blocks_byte_exact(vllm, master, tenant, io):
    v = vllm
    source, view = primary(1)
    tier = make_tier(v, master, tenant, view, **io_options(io))
    assert isinstance(tier, v.base.SecondaryTierManager)
    assert tier.client.io_mode == io, tier.client.io_reason
    keys = keys_of(v, 4)
    assert lookup(v, tier, keys[0]) == miss(v)
    tier.submit_store(job(v, 1, keys, [3, 5, 7, 9], promotion=False))
    assert tier.lookup(keys[1], None) == retry(v)  # its store is in flight
    assert {i: r.success for i, r in wait_for(v, tier, [1]).items()} == {1: True}
    assert all(lookup(v, tier, k) == hit(v) for k in keys)

    dest, dest_view = primary(2)
    reader = make_tier(v, master, tenant, dest_view, **io_options(io))
    assert lookup(v, reader, keys[2]) == hit(v)
    reader.submit_load(job(v, 7, keys, [0, 1, 2, 15], promotion=True))
    assert reader.has_pending_work()
    reader.drain_jobs()
    assert reader.has_pending_work()  # its result waits to be collected
    assert {i: r.success for i, r in wait_for(v, reader, [7]).items()} == {7: True}
    assert not reader.has_pending_work()
    for src, dst in zip([3, 5, 7, 9], [0, 1, 2, 15]):
        assert torch.equal(dest[dst], source[src])
    untouched = primary(2)[0]
    for block in range(3, 15):
        assert torch.equal(dest[block], untouched[block])
    # The same block hash in another KV cache group is another block.
    assert lookup(v, reader, v.kv.make_offload_key(bytes([0]) * 32, 1)) == miss(v)
    tier.submit_store(job(v, 2, keys[:1], [3], promotion=False))
    assert {i: r.success for i, r in wait_for(v, tier, [2]).items()} == {2: True}  # stored already: same content, same key
    if v.current:
        assert tier.medium == v.kv.Medium.STORAGE
        assert tier.on_new_request(v.kv.ReqContext(req_id="r")) == v.kv.RequestOffloadingContext()
        assert list(tier.take_events()) == []  # the master publishes the shared tier's events
    else:
        assert tier.get_request_offloading_context(v.kv.ReqContext(req_id="r")) == v.kv.RequestOffloadingContext()
    close(tier, reader)


def flip_a_byte(tier, key: bytes, at: int) -> None:
    """Corrupts the committed object of ``key`` in its bucket file."""
    c = tier.client
    place = c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(tenant_id=c.tenant,
                                                                                     key=tier.object_key(key))).distributed_disk
    with open(place.file_path, "r+b") as f:
        f.seek(place.offset + at)
        byte = f.read(1)
        f.seek(place.offset + at)
        f.write(bytes([byte[0] ^ 0x5A]))


def test_a_failed_load_reports_what_loaded_and_is_never_a_hit_again_until_stored(vllm, master, tenant):
    v = vllm
    source, view = primary(3)
    storing = make_tier(v, master, tenant, view)
    keys = keys_of(v, 4, salt=40)
    storing.submit_store(job(v, 1, keys, [0, 1, 2, 3], promotion=False))
    assert wait_for(v, storing, [1])[1].success
    flip_a_byte(storing, keys[2], 1000)

    dest, dest_view = primary(4)
    tier = make_tier(v, master, tenant, dest_view, lookup_ttl=0.02)
    # The scheduler: every block of the request is a hit, so it promotes them.
    assert [lookup(v, tier, k) for k in keys] == [hit(v)] * 4
    tier.submit_load(job(v, 2, keys, [8, 9, 10, 11], promotion=True))
    result = wait_for(v, tier, [2])[2]
    assert not result.success
    if v.current:
        assert list(result.successful_keys) == [keys[0], keys[1], keys[3]]
    for src, dst in ((0, 8), (1, 9), (3, 11)):
        assert torch.equal(dest[dst], source[src])
    assert tier.client.stats()["checksum_failures"] == 1
    # Steps later, well past the lookup TTL, the block that failed is a miss (recompute it), never a hit to load again;
    # the others stay hits, and the master still holds every block.
    loads = 1
    for step in range(30):
        answers = [lookup(v, tier, k) for k in keys]
        assert answers == [hit(v), hit(v), miss(v), hit(v)], (step, answers)
        if answers[2] == hit(v):
            loads += 1
        time.sleep(0.01)
    assert loads == 1
    assert tier.client.batch_is_exist([tier.object_key(k) for k in keys]) == [True] * 4

    # Recomputed (the same bytes) and stored again: written over the copy that failed, a hit, and it loads.
    dest[5].copy_(source[2])
    tier.submit_store(job(v, 3, keys[2:3], [5], promotion=False))
    assert wait_for(v, tier, [3])[3].success
    assert lookup(v, tier, keys[2]) == hit(v)
    tier.submit_load(job(v, 4, keys[2:3], [12], promotion=True))
    assert wait_for(v, tier, [4])[4].success
    assert torch.equal(dest[12], source[2])
    assert tier.client.stats()["checksum_failures"] == 1
    close(storing, tier)


def test_lookups_of_many_blocks_are_asked_in_few_master_calls(vllm, master, tenant):
    v = vllm
    writer_blocks, view = primary(5)
    tier = make_tier(v, master, tenant, view)
    keys = keys_of(v, 60, salt=100)
    tier.submit_store(job(v, 1, keys[:BLOCKS], range(BLOCKS), promotion=False))
    tier.submit_store(job(v, 2, keys[BLOCKS:30], range(30 - BLOCKS), promotion=False))
    assert all(r.success for r in wait_for(v, tier, [1, 2]).values())
    reader_blocks, other_view = primary(6)
    reader = make_tier(v, master, tenant, other_view)  # no verdicts yet: every lookup is asked of the master
    assert all(reader.lookup(k, None) == retry(v) for k in keys)
    assert [lookup(v, reader, k) for k in keys] == [hit(v)] * 30 + [miss(v)] * 30
    asked = reader.client.stats()["calls"].get("BatchGetDistributedPageMapping", 0)
    assert 1 <= asked <= 30, f"{asked} master calls for 60 lookups asked in a row: they are not batched"
    # A load of blocks the tier looked up reads them with those mappings: no master call of its own.
    reader.submit_load(job(v, 5, keys[7:8], [2], promotion=True))
    assert wait_for(v, reader, [5])[5].success
    assert torch.equal(reader_blocks[2], writer_blocks[7])
    assert reader.client.stats()["calls"].get("BatchGetDistributedPageMapping", 0) == asked
    assert reader.client.stats()["lookups_saved"] == 1
    close(tier, reader)


def test_an_out_of_tree_tier_is_built_by_the_factory_with_its_settings(vllm, master, tenant):
    v = vllm
    _, view = primary(7)
    if v.current:
        tier = v.factory.create_secondary_tier({"type": "McctlTier", "module_path": "mcctl.vllm", "master": master.address,
                                                "tenant": tenant, "io_threads": 3, "backpressure": {"high_water_s": 5.0}},
                                               view, offloading_spec="spec")
        assert tier.tier_type == "McctlTier" and tier.bp_detector.high_water_s == 5.0 and tier.block_size_bytes == BLOCK_BYTES
    else:
        v.tier.register()
        v.tier.register()  # twice is harmless
        tier = v.factory.create_secondary_tier({"type": "mcctl", "master": master.address, "tenant": tenant, "io_threads": 3},
                                               view, offloading_spec="spec")
        assert tier.tier_type == "mcctl"
        with pytest.raises(ValueError, match=r"^mcctl vLLM tier: this vLLM's tier interface takes no 'backpressure'; "):
            v.tier.McctlTier("spec", view, "mcctl", master=master.address, backpressure={"high_water_s": 5.0})
    assert isinstance(tier, v.base.SecondaryTierManager) and tier._offloading_spec == "spec"
    close(tier)


def test_submits_return_while_the_master_is_stopped(vllm, request, tenant):
    v = vllm
    if not v.current:
        pytest.skip("the tier's threads are the same under both interfaces: one master of its own is enough")
    fresh_master = request.getfixturevalue("fresh_master")
    _, view = primary(8)
    tier = make_tier(v, fresh_master, tenant, view, timeout=2.0)
    key = keys_of(v, 1, salt=200)[0]
    fresh_master.process.send_signal(19)  # SIGSTOP: the master takes the calls and answers none
    try:
        tier.submit_store(job(v, 1, [key], [0], promotion=False))
        assert tier.lookup(key, None) == retry(v)  # a store in flight: ask again
        assert list(finished(v, tier)) == []
        assert not wait_for(v, tier, [1])[1].success  # the call timed out on the tier's thread
    finally:
        fresh_master.process.send_signal(18)  # SIGCONT
    tier.shutdown()


def test_bad_tier_config_is_one_line(vllm, master):
    v = vllm
    _, view = primary(9)
    with pytest.raises(ValueError, match="tier config has no 'master'"):
        v.tier.McctlTier(None, view, "mcctl")
    with pytest.raises(ValueError, match=r"unknown tier config keys \['root_dir'\]"):
        v.tier.McctlTier(None, view, "mcctl", master=master.address, root_dir="/x")
    tier = v.tier.McctlTier(None, view, "mcctl", master=master.address)
    with pytest.raises(ValueError, match=r"^mcctl vLLM tier: job 3 names block 16, outside the primary tier's 16 blocks$"):
        tier.submit_store(job(v, 3, keys_of(v, 1), [16], promotion=False))
    assert tier.lookup(keys_of(v, 1)[0], None) == retry(v)  # asked of the master, no store left in flight
    assert not tier._storing
    close(tier)
