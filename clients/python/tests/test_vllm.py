"""The vLLM secondary tier driven as vLLM's tiering manager drives it: a real CPU torch tensor as the primary
tier, non-blocking submits, completion polled through get_finished."""

from __future__ import annotations

import time

import pytest
import torch

from mcctl import vllm as tier_module

BLOCKS, BLOCK_BYTES = 16, 32 * 1024


def primary(seed: int):
    """The primary tier's CPU KV cache as vLLM hands it to a tier: a memoryview with one row per block."""
    tensor = torch.randint(0, 256, (BLOCKS, BLOCK_BYTES), dtype=torch.uint8, generator=torch.Generator().manual_seed(seed))
    return tensor, memoryview(tensor.numpy())


def wait_for(tier, job_ids, limit_s=30.0):
    """Polls get_finished as the scheduler does each step, until these jobs are reported."""
    results, deadline = {}, time.monotonic() + limit_s
    while set(job_ids) - set(results):
        assert time.monotonic() < deadline, f"jobs {set(job_ids) - set(results)} never finished"
        results.update((r.job_id, r.success) for r in tier.get_finished())
        time.sleep(0.01)
    return results


def lookup(tier, key, limit_s=30.0):
    """Asks until the tier answers (None means: in flight, ask again)."""
    deadline = time.monotonic() + limit_s
    while True:
        answer = tier.lookup(key, None)
        if answer is not None:
            return answer
        assert time.monotonic() < deadline, "lookup never answered"
        time.sleep(0.01)


def make_tier(master, tenant, view, **config):
    return tier_module.McctlTier(None, view, "mcctl", master=master.address, tenant=tenant, key_prefix="model-a/", **config)


def test_store_then_load_into_other_blocks_byte_exact(master, tenant):
    source, view = primary(1)
    tier = make_tier(master, tenant, view)
    keys = [bytes([i]) * 32 + (0).to_bytes(4, "big") for i in range(4)]
    assert lookup(tier, keys[0]) is False
    tier.submit_store(tier_module.JobMetadata(job_id=1, keys=keys, block_ids=[3, 5, 7, 9], is_promotion=False, req_context=None))
    assert wait_for(tier, [1]) == {1: True}
    assert all(lookup(tier, k) is True for k in keys)

    dest, dest_view = primary(2)
    reader = make_tier(master, tenant, dest_view)
    assert lookup(reader, keys[2]) is True
    reader.submit_load(tier_module.JobMetadata(job_id=7, keys=keys, block_ids=[0, 1, 2, 15], is_promotion=True, req_context=None))
    assert wait_for(reader, [7]) == {7: True}
    for src, dst in zip([3, 5, 7, 9], [0, 1, 2, 15]):
        assert torch.equal(dest[dst], source[src])
    untouched = primary(2)[0]
    for block in range(3, 15):
        assert torch.equal(dest[block], untouched[block])

    missing = b"\xff" * 36
    reader.submit_load(tier_module.JobMetadata(job_id=8, keys=[keys[0], missing], block_ids=[4, 5], is_promotion=True, req_context=None))
    assert wait_for(reader, [8]) == {8: False}
    assert lookup(reader, missing) is False
    tier.submit_store(tier_module.JobMetadata(job_id=2, keys=keys[:1], block_ids=[3], is_promotion=False, req_context=None))
    assert wait_for(tier, [2]) == {2: True}  # stored already: same content under the same key
    for t in (tier, reader):
        t.drain_jobs()
        t.shutdown()


def test_lookups_of_many_blocks_are_asked_in_few_master_calls(master, tenant):
    writer_blocks, view = primary(3)
    tier = make_tier(master, tenant, view)
    keys = [i.to_bytes(4, "big") * 9 for i in range(60)]
    stored = keys[:30]
    tier.submit_store(tier_module.JobMetadata(job_id=1, keys=stored[:BLOCKS], block_ids=list(range(BLOCKS)), is_promotion=False, req_context=None))
    tier.submit_store(tier_module.JobMetadata(job_id=2, keys=stored[BLOCKS:], block_ids=list(range(30 - BLOCKS)), is_promotion=False,
                                              req_context=None))
    assert wait_for(tier, [1, 2]) == {1: True, 2: True}
    reader_blocks, other_view = primary(4)
    reader = make_tier(master, tenant, other_view)  # no verdicts yet: every lookup is asked of the master
    # The scheduler asks about a request's blocks one after another; the answers come from the tier's threads.
    assert all(reader.lookup(k, None) is None for k in keys)
    assert [lookup(reader, k) for k in keys] == [True] * 30 + [False] * 30
    asked = reader.client.stats()["calls"].get("BatchGetDistributedPageMapping", 0)
    assert 1 <= asked <= 30, f"{asked} master calls for 60 lookups asked in a row: they are not batched"
    # A load of blocks the tier looked up reads them with those mappings: no master call of its own.
    reader.submit_load(tier_module.JobMetadata(job_id=5, keys=keys[7:8], block_ids=[2], is_promotion=True, req_context=None))
    assert wait_for(reader, [5]) == {5: True}
    assert torch.equal(reader_blocks[2], writer_blocks[7])
    assert reader.client.stats()["calls"].get("BatchGetDistributedPageMapping", 0) == asked
    assert reader.client.stats()["lookups_saved"] == 1
    for t in (tier, reader):
        t.drain_jobs()
        t.shutdown()


def test_submits_return_while_the_master_is_stopped(fresh_master, tenant):
    _, view = primary(3)
    tier = make_tier(fresh_master, tenant, view, timeout=2.0)
    fresh_master.process.send_signal(19)  # SIGSTOP: the master takes the calls and answers none
    try:
        tier.submit_store(tier_module.JobMetadata(job_id=1, keys=[b"k" * 36], block_ids=[0], is_promotion=False, req_context=None))
        assert tier.lookup(b"k" * 36, None) is None  # a store in flight: ask again
        assert tier.get_finished() == []
        assert wait_for(tier, [1]) == {1: False}  # the call timed out on the tier's thread
    finally:
        fresh_master.process.send_signal(18)  # SIGCONT
    tier.shutdown()


def test_bad_tier_config_is_one_line(master):
    _, view = primary(4)
    with pytest.raises(ValueError, match="tier config has no 'master'"):
        tier_module.McctlTier(None, view, "mcctl")
    with pytest.raises(ValueError, match=r"unknown tier config keys \['root_dir'\]"):
        tier_module.McctlTier(None, view, "mcctl", master=master.address, root_dir="/x")
