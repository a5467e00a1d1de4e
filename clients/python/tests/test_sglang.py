"""The SGLang HiCache backend driven as SGLang's cache controller drives it, over real CPU torch host pools."""

from __future__ import annotations

import json

import pytest
import torch

from mcctl import sglang as backend


class PageFirstHostPool:
    """A host KV pool laid out page first, as SGLang's MHA and MLA host pools are: its get_page_buffer_meta
    gives a K and a V region per page (MHA) or one region per page (MLA), pointers into one CPU tensor."""

    def __init__(self, pages: int, page_size: int, layers: int, heads: int, dim: int, mla: bool, seed: int):
        self.page_size, self.mla = page_size, mla
        self.size = pages * page_size
        shape = (self.size, layers, 1, dim) if mla else (2, self.size, layers, heads, dim)
        generator = torch.Generator().manual_seed(seed)
        self.kv_buffer = torch.randn(shape, generator=generator, dtype=torch.float32).to(torch.bfloat16)
        self.per_token = layers * (1 if mla else heads) * dim * self.kv_buffer.element_size()

    def get_page_buffer_meta(self, indices):
        base = self.kv_buffer.data_ptr()
        v_offset = self.size * self.per_token
        pointers = []
        for first in indices.tolist()[::self.page_size]:
            k = base + first * self.per_token
            pointers.extend([k] if self.mla else [k, k + v_offset])
        return pointers, [self.page_size * self.per_token] * len(pointers)

    def page(self, index: int) -> bytes:
        tokens = slice(index * self.page_size, (index + 1) * self.page_size)
        raw = self.kv_buffer.view(torch.int16)
        parts = [raw[tokens]] if self.mla else [raw[0, tokens], raw[1, tokens]]
        return b"".join(p.contiguous().numpy().tobytes() for p in parts)

    def token_indices(self, pages) -> torch.Tensor:
        return torch.cat([torch.arange(p * self.page_size, (p + 1) * self.page_size) for p in pages]).to(torch.int64)


def config(master, tenant, tp_rank=0, tp_size=1, mla=False):
    extra = json.loads('{"backend_name":"mcctl","module_path":"mcctl.sglang","class_name":"McctlStore","interface_v1":1}')
    extra.update(master=master.address, tenant=tenant)
    return backend.HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
                                        attn_cp_size=1, is_mla_model=mla, enable_storage_metrics=False,
                                        is_page_first_layout=True, model_name="org/model-7b", extra_config=extra)


def make_store(cfg, pool):
    store = backend.McctlStore(cfg, {})  # what SGLang's factory does for a dynamic backend
    store.register_mem_pool_host(pool)
    return store


def test_backup_then_prefetch_moves_every_byte_mha(master, tenant):
    writer_pool = PageFirstHostPool(pages=160, page_size=4, layers=3, heads=2, dim=16, mla=False, seed=1)
    store = make_store(config(master, tenant), writer_pool)
    keys = [f"hash{i:04d}" for i in range(130)]
    pages = list(range(5, 135))
    # A backup larger than one storage batch: split into calls of at most 128 pages.
    assert store.batch_set_v1(keys, writer_pool.token_indices(pages)) == [True] * 130
    assert store.batch_set_v1(keys[:3], writer_pool.token_indices(pages[:3])) == [True] * 3  # already there

    reader_pool = PageFirstHostPool(pages=160, page_size=4, layers=3, heads=2, dim=16, mla=False, seed=2)
    reader = make_store(config(master, tenant), reader_pool)
    query = keys[:100] + ["not-stored"] + keys[100:]
    hits = reader.batch_exists(query)
    assert hits == 100
    targets = list(range(40, 140))
    assert reader.batch_get_v1(query[:hits], reader_pool.token_indices(targets)) == [True] * hits
    for key_index, target in enumerate(targets):
        assert reader_pool.page(target) == writer_pool.page(pages[key_index])
    assert reader.batch_get_v1(["not-stored"], reader_pool.token_indices([0])) == [False]
    store.close()
    reader.close()


def test_a_prefetch_reads_what_batch_exists_looked_up_without_asking_again(master, tenant):
    writer_pool = PageFirstHostPool(pages=200, page_size=2, layers=2, heads=2, dim=8, mla=False, seed=3)
    store = make_store(config(master, tenant), writer_pool)
    keys = [f"chain{i:04d}" for i in range(150)]
    assert store.batch_set_v1(keys, writer_pool.token_indices(range(150))) == [True] * 150
    reader_pool = PageFirstHostPool(pages=200, page_size=2, layers=2, heads=2, dim=8, mla=False, seed=4)
    reader = make_store(config(master, tenant), reader_pool)
    before = reader.client.stats()["calls"]
    assert reader.batch_exists(keys + ["beyond"]) == 150  # two calls: 128 pages, then 23
    # SGLang's prefetch thread reads the hits in storage batches of at most 128 pages, as it found them.
    targets = list(range(20, 170))
    assert reader.batch_get_v1(keys[:128], reader_pool.token_indices(targets[:128])) == [True] * 128
    assert reader.batch_get_v1(keys[128:], reader_pool.token_indices(targets[128:])) == [True] * 22
    calls = reader.client.stats()["calls"]
    assert calls.get("BatchGetDistributedPageMapping", 0) - before.get("BatchGetDistributedPageMapping", 0) == 2
    assert calls.get("BatchExistKey", 0) == before.get("BatchExistKey", 0)
    assert reader.client.stats()["lookups_saved"] == 2
    for i, target in enumerate(targets):
        assert reader_pool.page(target) == writer_pool.page(i), i
    # Pages never looked up are looked up by the read itself.
    assert reader.batch_get_v1(keys[5:7] + ["beyond"], reader_pool.token_indices([0, 1, 2])) == [True, True, False]
    store.close()
    reader.close()


def test_tp_ranks_never_collide_and_mla_writes_from_rank_0_only(master, tenant):
    pools = [PageFirstHostPool(pages=8, page_size=2, layers=2, heads=2, dim=8, mla=False, seed=10 + r) for r in range(2)]
    ranks = [make_store(config(master, tenant, tp_rank=r, tp_size=2), pools[r]) for r in range(2)]
    for store, pool in zip(ranks, pools):
        assert store.batch_set_v1(["p0", "p1"], pool.token_indices([0, 1])) == [True, True]
    for r, (store, pool) in enumerate(zip(ranks, pools)):
        fresh = PageFirstHostPool(pages=8, page_size=2, layers=2, heads=2, dim=8, mla=False, seed=99)
        store.register_mem_pool_host(fresh)
        assert store.batch_get_v1(["p0", "p1"], fresh.token_indices([3, 4])) == [True, True]
        assert fresh.page(3) == pool.page(0) and fresh.page(4) == pool.page(1)

    mla_pools = [PageFirstHostPool(pages=8, page_size=2, layers=2, heads=1, dim=8, mla=True, seed=20 + r) for r in range(2)]
    mla = [make_store(config(master, tenant, tp_rank=r, tp_size=2, mla=True), mla_pools[r]) for r in range(2)]
    assert mla[1].batch_set_v1(["m0"], mla_pools[1].token_indices([0])) == [True]
    assert mla[1].batch_exists(["m0"]) == 0  # rank 1 wrote nothing
    assert mla[0].batch_set_v1(["m0"], mla_pools[0].token_indices([0])) == [True]
    assert mla[1].batch_exists(["m0"]) == 1
    assert mla[1].batch_get_v1(["m0"], mla_pools[1].token_indices([5])) == [True]
    assert mla_pools[1].page(5) == mla_pools[0].page(0)
    for store in ranks + mla:
        store.close()


def test_older_interface_and_unsupported_v2_raises(master, tenant):
    pool = PageFirstHostPool(pages=4, page_size=2, layers=1, heads=1, dim=8, mla=False, seed=3)
    store = make_store(config(master, tenant), pool)
    value = torch.arange(64, dtype=torch.int32)
    assert store.set("old", value)
    assert store.exists("old") and not store.exists("nope")
    got = store.get("old")
    assert bytes(got.numpy()) == value.numpy().tobytes()
    target = torch.zeros(64, dtype=torch.int32)
    assert store.batch_get(["old", "nope"], [target, torch.zeros(64, dtype=torch.int32)])[1] is None
    assert torch.equal(target, value)
    assert store.batch_set(["o1", "o2"], [value[:8], value[8:24]])
    assert store.batch_exists(["o1", "o2", "o3"]) == 2
    with pytest.raises(NotImplementedError):
        store.batch_get_v2([])
    store.clear()
    assert store.batch_exists(["old", "o1"]) == 0
    store.close()


def test_missing_master_in_extra_config_is_one_line(master):
    cfg = config(master, "x")
    del cfg.extra_config["master"]
    with pytest.raises(ValueError, match="extra config has no 'master'"):
        backend.McctlStore(cfg, {})
