"""The SGLang HiCache backend driven as SGLang drives it: loaded by the dynamic backend's call shape against SGLang's
interface at 001067ff (tests/standins), over host pools laid out as SGLang's MHA, MLA and Mamba pools are (CPU torch
tensors), with a prefetch thread and a backup thread calling it at once in batches of 128 pages, against a real
master."""

from __future__ import annotations

import contextlib
import importlib
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from mcctl._proto import master_pb2 as pb

from conftest import HERE, io_options
from engines import engine
from sglang_controller import CacheController, Operation
from sglang_pools import LogicalAnchorPool, MambaPoolHost, MHATokenToKVPoolHost, MLATokenToKVPoolHost, same, token_indices

MODEL = "org/model-7b"


@contextlib.contextmanager
def interface():
    """The backend module loaded over SGLang's interface, and that interface (hicache_storage)."""
    with engine("sglang_001067ff", "sglang") as (backend, _):
        yield backend, importlib.import_module("sglang.srt.mem_cache.hicache_storage")


@pytest.fixture(scope="module")
def sg():
    with interface() as loaded:
        yield loaded


def storage_config(hicache, master, tenant, tp_rank=0, tp_size=1, mla=False, layout="page_first", tp_lcm_size=None, **extra):
    """The storage config SGLang's controller builds for a rank: tp_lcm_size comes out of the extra config, and heads
    are split when the layout is page_head, the model is not MLA and tp_lcm_size exceeds the TP size."""
    settings = {"backend_name": "mcctl", "module_path": "mcctl.sglang", "class_name": "McctlStore", "interface_v1": 1,
                "master": master.address, "tenant": tenant, **extra}
    split = bool(tp_lcm_size) and not mla and layout == "page_head" and tp_lcm_size > tp_size
    return hicache.HiCacheStorageConfig(tp_rank=tp_rank, tp_size=tp_size, pp_rank=0, pp_size=1, attn_cp_rank=0,
                                        attn_cp_size=1, is_mla_model=mla, enable_storage_metrics=False,
                                        is_page_first_layout=layout == "page_first", model_name=MODEL,
                                        tp_lcm_size=tp_lcm_size, should_split_heads=split, extra_config=settings)


def make_store(config, kv_pool, pools=None):
    """What SGLang does with a dynamic backend: import module_path, build class_name(storage_config, kwargs), register
    the KV host pool, and (hybrid models) every pool by name."""
    extra = config.extra_config
    store = getattr(importlib.import_module(extra["module_path"]), extra["class_name"])(config, {})
    store.register_mem_pool_host(kv_pool)
    if pools:
        for name, pool in {"kv": kv_pool, **pools}.items():
            store.register_mem_host_pool_v2(pool, name)
    return store


def hashes(prefix: str, n: int):
    return [f"{prefix}{i:05d}" for i in range(n)]


def descriptor_of(store, key: str):
    c = store.client
    return c._read("GetDistributedPageMapping", pb.GetDistributedPageMappingRequest(tenant_id=c.tenant, key=key)).distributed_disk


def flip_a_byte(store, key: str, at: int) -> None:
    """Corrupts the committed object of ``key`` in its bucket file."""
    place = descriptor_of(store, key)
    with open(place.file_path, "r+b") as f:
        f.seek(place.offset + at)
        byte = f.read(1)
        f.seek(place.offset + at)
        f.write(bytes([byte[0] ^ 0x5A]))


KV_POOLS = [("mha", layout) for layout in MHATokenToKVPoolHost.LAYOUTS] + [("mla", layout) for layout in MLATokenToKVPoolHost.LAYOUTS]


def kv_pool(kind: str, layout: str, seed: int, pages: int = 400):
    if kind == "mha":
        return MHATokenToKVPoolHost(layout, page_num=pages, page_size=4, layer_num=2, head_num=2, head_dim=16, seed=seed)
    return MLATokenToKVPoolHost(layout, page_num=pages, page_size=4, layer_num=3, kv_cache_dim=24, seed=seed)


@pytest.mark.parametrize("kind,layout", KV_POOLS)
def test_prefetch_and_backup_threads_move_every_byte(sg, master, tenant, kind, layout, io):
    backend, hicache = sg
    pool = kv_pool(kind, layout, seed=1)
    config = storage_config(hicache, master, tenant, mla=kind == "mla", layout=layout, **io_options(io))
    store = make_store(config, pool)
    assert store.client.io_mode == io, store.client.io_reason
    controller = CacheController(hicache, store, page_size=4)
    keys = hashes("h", 260)
    # Pages 0-129 first; then pages 130-259 are backed up while the prefetch thread reads 0-129 into pages 260-389.
    assert controller.backup(Operation(keys[:130], token_indices(range(130), 4))).wait().pages == 130
    backup = controller.backup(Operation(keys[130:], token_indices(range(130, 260), 4)))
    prefetch = controller.prefetch(Operation(keys[:130] + ["absent"], token_indices(range(260, 391), 4)))
    assert prefetch.wait().pages == 130 and backup.wait().pages == 130
    for i in range(130):
        assert same(pool.page(260 + i), pool.page(i)), i
    controller.close()

    # Another instance of the same model reads every page into its own pool, in storage batches of 128.
    other = kv_pool(kind, layout, seed=2)
    reader = make_store(config, other)
    controller = CacheController(hicache, reader, page_size=4)
    targets = list(range(399, 139, -1))
    assert controller.prefetch(Operation(keys, token_indices(targets, 4))).wait().pages == 260
    for i, target in enumerate(targets):
        assert same(other.page(target), pool.page(i)), i
    controller.close()
    store.close()
    reader.close()


def test_a_prefetch_reads_what_batch_exists_looked_up_without_asking_again(sg, master, tenant):
    backend, hicache = sg
    writer_pool = kv_pool("mha", "page_first", seed=3, pages=200)
    config = storage_config(hicache, master, tenant)
    store = make_store(config, writer_pool)
    keys = hashes("chain", 150)
    assert store.batch_set_v1(keys, token_indices(range(150), 4)) == [True] * 150
    reader_pool = kv_pool("mha", "page_first", seed=4, pages=200)
    reader = make_store(config, reader_pool)
    before = reader.client.stats()["calls"]
    assert reader.batch_exists(keys + ["beyond"]) == 150  # two calls: 128 pages, then 23
    targets = list(range(20, 170))
    assert reader.batch_get_v1(keys[:128], token_indices(targets[:128], 4)) == [True] * 128
    assert reader.batch_get_v1(keys[128:], token_indices(targets[128:], 4)) == [True] * 22
    calls = reader.client.stats()["calls"]
    assert calls.get("BatchGetDistributedPageMapping", 0) - before.get("BatchGetDistributedPageMapping", 0) == 2
    assert reader.client.stats()["lookups_saved"] == 2
    for i, target in enumerate(targets):
        assert same(reader_pool.page(target), writer_pool.page(i)), i
    store.close()
    reader.close()


def mamba_pool(seed: int, size: int = 64):
    return MambaPoolHost(size=size, layer_num=3, temporal_shape=(4, 8), conv_shapes=[(2, 8), (5,)], seed=seed)


def hybrid(sg, master, tenant, kv, pools):
    """A hybrid model's backend over ``kv`` and ``pools``, with its controller's threads."""
    hicache = sg[1]
    config = storage_config(hicache, master, tenant)
    store = make_store(config, kv, pools)
    return config, store, CacheController(hicache, store, page_size=4)


def test_a_hybrid_models_kv_and_mamba_states_round_trip_through_v1_and_v2(sg, master, tenant):
    hicache = sg[1]
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    kv, mamba = kv_pool("mha", "page_first", seed=5), mamba_pool(6)
    config, store, controller = hybrid(sg, master, tenant, kv, {"mamba": mamba})

    def request(name: str, pages: int, first_page: int, slot: int):
        """A request's pages and the Mamba state after its last page, as the hybrid controller backs them up."""
        keys = hashes(name, pages)
        return Operation(keys, token_indices(range(first_page, first_page + pages), 4),
                         [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([slot]), keys=keys[-1:],
                                       hit_policy=PoolHitPolicy.TRAILING_PAGES)])

    a, b = request("a", 150, 0, slot=3), request("b", 40, 150, slot=9)
    assert controller.backup(a).wait().pages == 150 and a.pool_hits == {"mamba": 1}
    # b is backed up while a is prefetched into other pages and another Mamba slot.
    fetch = Operation(a.hashes, token_indices(range(200, 350), 4),
                      [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([20]), keys=["target-last"],
                                    hit_policy=PoolHitPolicy.TRAILING_PAGES)])
    controller.backup(b)
    controller.prefetch(fetch)
    assert fetch.wait().pages == 150 and fetch.pool_hits == {"mamba": 1}
    assert b.wait().pages == 40 and b.pool_hits == {"mamba": 1}
    for i in range(150):
        assert same(kv.page(200 + i), kv.page(i)), i
    assert all(same(x, y) for x, y in zip(mamba.page(20), mamba.page(3)))

    # A state stored for a longer prefix restores nothing for a shorter one: the hit ends where a state is.
    prefix = Operation(b.hashes[:30], token_indices(range(360, 390), 4),
                       [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([21]), keys=["t"],
                                     hit_policy=PoolHitPolicy.TRAILING_PAGES)])
    assert controller.prefetch(prefix).wait().pages == 0
    assert store.batch_exists_v2(b.hashes + ["c"], prefix.pool_transfers).kv_hit_pages == 40

    # Another instance reads b, states included.
    kv2, mamba2 = kv_pool("mha", "page_first", seed=7), mamba_pool(8)
    reader = make_store(config, kv2, {"mamba": mamba2})
    reading = CacheController(hicache, reader, page_size=4)
    got = reading.prefetch(Operation(b.hashes, token_indices(range(40), 4),
                                     [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([0]), keys=["x"],
                                                   hit_policy=PoolHitPolicy.TRAILING_PAGES)])).wait()
    assert got.pages == 40 and got.pool_hits == {"mamba": 1}
    for i in range(40):
        assert same(kv2.page(i), kv.page(150 + i)), i
    assert all(same(x, y) for x, y in zip(mamba2.page(0), mamba.page(9)))
    for c in (controller, reading):
        c.close()
    store.close()
    reader.close()


def swa_pool(seed: int):
    """A sliding-window KV pool: an MHA pool of its own, with its own indices, holding the last pages of a prefix."""
    return MHATokenToKVPoolHost("page_first", page_num=64, page_size=4, layer_num=2, head_num=2, head_dim=16, seed=seed)


def test_a_hybrid_models_kv_and_sliding_window_pages_round_trip_through_v1_and_v2(sg, master, tenant):
    hicache = sg[1]
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    kv, swa = kv_pool("mha", "page_first", seed=9), swa_pool(10)
    _, store, controller = hybrid(sg, master, tenant, kv, {"swa": swa})
    keys = hashes("s", 200)
    window = 3
    # Two prefixes of one chain backed up: 140 pages with the window of pages 137-139, then 200 with 197-199.
    for pages, swa_pages in ((140, [5, 6, 7]), (200, [10, 11, 12])):
        op = Operation(keys[:pages], token_indices(range(pages), 4),
                       [PoolTransfer(name=PoolName.SWA, host_indices=token_indices(swa_pages, 4), keys=keys[pages - window:pages],
                                     hit_policy=PoolHitPolicy.TRAILING_PAGES)])
        assert controller.backup(op).wait().pages == pages and op.pool_hits == {"swa": window}

    def fetch(pages: int, first_swa: int) -> Operation:
        return controller.prefetch(Operation(keys[:pages], token_indices(range(200, 200 + pages), 4),
                                             [PoolTransfer(name=PoolName.SWA, keys=["?"] * window,
                                                           host_indices=token_indices(range(first_swa, first_swa + window), 4),
                                                           hit_policy=PoolHitPolicy.TRAILING_PAGES)]))

    # Asked for 170 pages: the KV has them all, but a window is only stored ending at 140.
    got = fetch(170, 20).wait()
    assert got.pages == 140 and got.pool_hits == {"swa": window}
    for i in range(140):
        assert same(kv.page(200 + i), kv.page(i)), i
    for j in range(window):
        assert same(swa.page(20 + j), swa.page(5 + j)), j
    got = fetch(200, 30).wait()
    assert got.pages == 200 and got.pool_hits == {"swa": window}
    for j in range(window):
        assert same(swa.page(30 + j), swa.page(10 + j)), j
    controller.close()
    store.close()


def test_batch_exists_v2_ends_the_prefix_where_every_pool_can_be_restored(sg, master, tenant):
    backend, hicache = sg
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    kv = kv_pool("mla", "page_first", seed=11, pages=16)
    indexer = MLATokenToKVPoolHost("page_first", page_num=16, page_size=4, layer_num=1, kv_cache_dim=8, seed=12)
    swa = swa_pool(13)
    store = make_store(storage_config(hicache, master, tenant, mla=True), kv, {"indexer": indexer, "swa": swa})
    keys = hashes("p", 12)
    assert store.batch_set_v1(keys[:10], token_indices(range(10), 4)) == [True] * 10
    # The DSA indexer (every page of the prefix) for pages 0-6; the sliding window (last 2 pages) for 3-4 and 8-9.
    sets = store.batch_set_v2([PoolTransfer(name=PoolName.INDEXER, host_indices=token_indices(range(7), 4), keys=keys[:7],
                                            indices_from_pool=PoolName.KV),
                               PoolTransfer(name=PoolName.SWA, host_indices=token_indices([3, 4, 8, 9], 4),
                                            keys=[keys[3], keys[4], keys[8], keys[9]], hit_policy=PoolHitPolicy.TRAILING_PAGES)])
    assert sets == {PoolName.INDEXER: [True] * 7, PoolName.SWA: [True] * 4}
    all_pages = PoolTransfer(name=PoolName.INDEXER, indices_from_pool=PoolName.KV)
    trailing = PoolTransfer(name=PoolName.SWA, keys=["?", "?"], hit_policy=PoolHitPolicy.TRAILING_PAGES)
    hit = store.batch_exists_v2(keys, [all_pages, trailing])
    # KV ends anywhere up to 10, the indexer up to 7, the window only at 5 or 10: the prefix ends at 5.
    assert (hit.kv_hit_pages, hit.extra_pool_hit_pages) == (5, {"kv": 10, "indexer": 7, "swa": 10})
    assert store.batch_exists_v2(keys, [trailing]).kv_hit_pages == 10
    assert store.batch_exists_v2(keys, [all_pages]).kv_hit_pages == 7
    assert store.batch_exists_v2(keys[:4], [trailing]).kv_hit_pages == 0
    assert store.batch_exists_v2(["nothing"], [all_pages]) == hicache.PoolTransferResult(0, {})

    # DeepSeek-V4: a KV anchor without bytes of its own; its side pools decide.
    anchor = LogicalAnchorPool(page_size=4)
    c4 = MLATokenToKVPoolHost("page_first", page_num=16, page_size=4, layer_num=2, kv_cache_dim=8, seed=14)
    v4 = make_store(storage_config(hicache, master, tenant, mla=True), anchor, {"deepseek_v4_c4": c4})
    v4_keys = hashes("v4-", 6)
    assert v4.batch_set_v1(v4_keys, token_indices(range(6), 4)) == [True] * 6  # nothing to write
    c4_pages = PoolTransfer(name=PoolName.DEEPSEEK_V4_C4, host_indices=token_indices(range(4), 4), keys=v4_keys[:4],
                            indices_from_pool=PoolName.KV)
    assert v4.batch_set_v2([c4_pages]) == {PoolName.DEEPSEEK_V4_C4: [True] * 4}
    assert v4.batch_exists_v2(v4_keys, [PoolTransfer(name=PoolName.DEEPSEEK_V4_C4)]).kv_hit_pages == 4
    for s in (store, v4):
        s.close()


def test_mla_kv_pages_are_written_by_tp_rank_0_and_mamba_states_by_every_rank(sg, master, tenant):
    backend, hicache = sg
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    keys = hashes("m", 20)
    ranks = []
    for rank in range(2):
        kv, mamba = kv_pool("mla", "page_first", seed=20 + rank, pages=64), mamba_pool(30 + rank)
        store = make_store(storage_config(hicache, master, tenant, tp_rank=rank, tp_size=2, mla=True), kv, {"mamba": mamba})
        ranks.append((store, kv, mamba, CacheController(hicache, store, page_size=4, backup_skip=rank != 0)))
    # Rank 1 backs up first: its Mamba state only (an MLA rank other than 0 writes no KV page).
    for store, kv, mamba, controller in reversed(ranks):
        op = controller.backup(Operation(keys, token_indices(range(20), 4),
                                         [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([2]), keys=keys[-1:],
                                                       hit_policy=PoolHitPolicy.TRAILING_PAGES)])).wait()
        assert op.pool_hits == {"mamba": 1}
        if store is ranks[1][0]:
            assert store.batch_exists(keys) == 0
    suffix = "_org-model-7b"
    # One KV object for both ranks, a Mamba object per rank: no two pools or ranks share a key.
    assert sorted(ranks[0][0].client.list_keys(keys[-1])) == sorted([f"{keys[-1]}{suffix}", f"{keys[-1]}.mamba{suffix}_0_2",
                                                                     f"{keys[-1]}.mamba{suffix}_1_2"])
    # Every rank reads the one KV copy and its own Mamba state.
    for rank, (store, kv, mamba, controller) in enumerate(ranks):
        got = controller.prefetch(Operation(keys, token_indices(range(30, 50), 4),
                                            [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([7]), keys=["?"],
                                                          hit_policy=PoolHitPolicy.TRAILING_PAGES)])).wait()
        assert got.pages == 20 and got.pool_hits == {"mamba": 1}, rank
        for i in range(20):
            assert same(kv.page(30 + i), ranks[0][1].page(i)), (rank, i)
        assert all(same(x, y) for x, y in zip(mamba.page(7), mamba.page(2))), rank
        controller.close()
        store.close()


def test_mha_tp_ranks_never_read_each_others_pages(sg, master, tenant):
    backend, hicache = sg
    keys = hashes("r", 3)
    ranks = []
    for rank in range(2):
        pool = kv_pool("mha", "page_first", seed=90 + rank, pages=8)
        store = make_store(storage_config(hicache, master, tenant, tp_rank=rank, tp_size=2), pool)
        assert store.batch_set_v1(keys, token_indices(range(3), 4)) == [True] * 3
        ranks.append((store, pool))
    for store, pool in ranks:
        assert store.batch_get_v1(keys, token_indices(range(4, 7), 4)) == [True] * 3
        assert all(same(pool.page(4 + i), pool.page(i)) for i in range(3))
        store.close()


def test_pages_written_by_a_tp2_instance_are_read_by_a_tp4_instance_byte_exact_per_head(sg, master, tenant):
    backend, hicache = sg
    heads, keys = 8, hashes("tp", 40)  # 8 KV heads: 4 a rank at TP 2, 2 a rank at TP 4
    writers = []
    for rank in range(2):
        pool = MHATokenToKVPoolHost("page_head", page_num=48, page_size=4, layer_num=3, head_num=heads // 2, head_dim=8, seed=40 + rank)
        config = storage_config(hicache, master, tenant, tp_rank=rank, tp_size=2, layout="page_head", tp_lcm_size=4)
        assert config.should_split_heads
        store = make_store(config, pool)
        assert store.batch_set_v1(keys, token_indices(range(40), 4)) == [True] * 40
        writers.append((store, pool))
    for rank in range(4):
        pool = MHATokenToKVPoolHost("page_head", page_num=48, page_size=4, layer_num=3, head_num=heads // 4, head_dim=8, seed=50 + rank)
        config = storage_config(hicache, master, tenant, tp_rank=rank, tp_size=4, layout="page_head", tp_lcm_size=4)
        assert not config.should_split_heads  # TP 4 is the LCM: its pages are the virtual ranks' pages
        store = make_store(config, pool)
        controller = CacheController(hicache, store, page_size=4)
        assert controller.prefetch(Operation(keys + ["later"], token_indices(range(8, 48), 4))).wait().pages == 40
        source, source_pool = writers[rank // 2]
        for page in range(40):
            for head in range(heads // 4):
                assert same(pool.head(8 + page, head), source_pool.head(page, (rank % 2) * heads // 4 + head)), (rank, page, head)
        controller.close()
        store.close()
    # A TP 2 rank reads them back too, and a TP 2 instance that does not share (no tp_lcm_size) does not see them.
    pool = MHATokenToKVPoolHost("page_head", page_num=48, page_size=4, layer_num=3, head_num=heads // 2, head_dim=8, seed=60)
    again = make_store(storage_config(hicache, master, tenant, tp_rank=1, tp_size=2, layout="page_head", tp_lcm_size=4), pool)
    assert again.batch_get_v1(keys[:5], token_indices(range(5), 4)) == [True] * 5
    assert all(same(pool.page(p), writers[1][1].page(p)) for p in range(5))
    alone = make_store(storage_config(hicache, master, tenant, tp_rank=1, tp_size=2, layout="page_head"), pool)
    assert alone.batch_exists(keys) == 0
    for store in [again, alone] + [s for s, _ in writers]:
        store.close()


def test_a_page_failing_its_crc32c_is_false_counted_and_not_loaded_nor_any_page_after_it(sg, master, tenant, io):
    backend, hicache = sg
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    kv, mamba = kv_pool("mha", "page_first", seed=70, pages=32), mamba_pool(71, size=8)
    config = storage_config(hicache, master, tenant, **io_options(io))
    writer = make_store(config, kv, {"mamba": mamba})
    assert writer.client.io_mode == io, writer.client.io_reason
    keys = hashes("crc", 8)
    assert writer.batch_set_v1(keys, token_indices(range(8), 4)) == [True] * 8
    assert writer.batch_set_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([0, 1]), keys=keys[6:8])]) \
        == {PoolName.MAMBA: [True, True]}
    flip_a_byte(writer, keys[3] + backend.key_suffix(config), 700)
    flip_a_byte(writer, writer.pool_key("mamba", keys[6]), 40)

    kv2, mamba2 = kv_pool("mha", "page_first", seed=72, pages=32), mamba_pool(73, size=8)
    reader = make_store(config, kv2, {"mamba": mamba2})
    assert reader.batch_exists(keys) == 8  # the master holds every page
    assert reader.batch_get_v1(keys, token_indices(range(10, 18), 4)) == [True] * 3 + [False] * 5
    assert all(same(kv2.page(10 + i), kv.page(i)) for i in range(3))
    assert reader.client.stats()["checksum_failures"] == 1
    assert reader.batch_exists(keys) == 3  # the page that failed is a miss from now on
    states = reader.batch_get_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([4, 5]), keys=keys[6:8])])
    assert states == {PoolName.MAMBA: [False, False]}  # the second read well, but follows one that did not
    assert reader.client.stats()["checksum_failures"] == 2
    assert all(same(x, y) for x, y in zip(mamba2.page(5), mamba.page(1)))
    window = PoolTransfer(name=PoolName.MAMBA, keys=["?"], hit_policy=PoolHitPolicy.TRAILING_PAGES)
    assert reader.batch_exists_v2(keys[:7], [window]).kv_hit_pages == 0

    # The pages are recomputed (the same bytes) and backed up again: written over the copies that failed, and
    # readable everywhere.
    for i in range(8):
        kv2.page(i).copy_(kv.page(i))
    for x, y in zip(mamba2.page(2), mamba.page(0)):
        x.copy_(y)
    assert reader.batch_set_v1(keys, token_indices(range(8), 4)) == [True] * 8
    assert reader.batch_set_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([2]), keys=keys[6:7])]) \
        == {PoolName.MAMBA: [True]}
    assert reader.batch_exists(keys) == 8 and reader.batch_exists_v2(keys[:7], [window]).kv_hit_pages == 7
    fresh_kv, fresh_mamba = kv_pool("mha", "page_first", seed=74, pages=32), mamba_pool(75, size=8)
    fresh = make_store(config, fresh_kv, {"mamba": fresh_mamba})
    assert fresh.batch_get_v1(keys, token_indices(range(8), 4)) == [True] * 8
    assert all(same(fresh_kv.page(i), kv.page(i)) for i in range(8))
    assert fresh.batch_get_v2([PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([3]), keys=keys[6:7])]) \
        == {PoolName.MAMBA: [True]}
    assert all(same(x, y) for x, y in zip(fresh_mamba.page(3), mamba.page(0)))
    for s in (writer, reader, fresh):
        s.close()


def test_every_call_answers_while_the_master_is_gone(sg, fresh_master, tenant):
    backend, hicache = sg
    PoolName, PoolHitPolicy, PoolTransfer = hicache.PoolName, hicache.PoolHitPolicy, hicache.PoolTransfer
    kv, mamba = kv_pool("mha", "page_first", seed=80, pages=8), mamba_pool(81, size=4)
    store = make_store(storage_config(hicache, fresh_master, tenant, timeout=2.0), kv, {"mamba": mamba})
    keys = hashes("gone", 4)
    assert store.batch_set_v1(keys, token_indices(range(4), 4)) == [True] * 4
    fresh_master.kill()
    state = [PoolTransfer(name=PoolName.MAMBA, host_indices=torch.tensor([1]), keys=keys[-1:], hit_policy=PoolHitPolicy.TRAILING_PAGES)]
    calls = {  # side by side, as SGLang's threads call: each waits out the client's retries
        "batch_exists": (lambda: store.batch_exists(keys), 0),
        "batch_exists_v2": (lambda: store.batch_exists_v2(keys, state), hicache.PoolTransferResult(0, {})),
        "batch_get_v1": (lambda: store.batch_get_v1(keys, token_indices(range(4, 8), 4)), [False] * 4),
        "batch_set_v1": (lambda: store.batch_set_v1(["other"], token_indices([0], 4)), [False]),
        "batch_get_v2": (lambda: store.batch_get_v2(state), {PoolName.MAMBA: [False]}),
        "batch_set_v2": (lambda: store.batch_set_v2(state), {PoolName.MAMBA: [False]}),
    }
    with ThreadPoolExecutor(len(calls)) as pool:
        answers = {name: pool.submit(call) for name, (call, _) in calls.items()}
        assert {name: f.result() for name, f in answers.items()} == {name: want for name, (_, want) in calls.items()}
    store.close()


def test_older_interface(sg, master, tenant):
    backend, hicache = sg
    store = make_store(storage_config(hicache, master, tenant), kv_pool("mha", "page_first", seed=3, pages=4))
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
    store.clear()
    assert store.batch_exists(["old", "o1"]) == 0
    store.close()


def test_bad_configs_are_one_line(sg, master):
    backend, hicache = sg
    config = storage_config(hicache, master, "x")
    del config.extra_config["master"]
    with pytest.raises(ValueError, match="extra config has no 'master'"):
        backend.McctlStore(config, {})
    config = storage_config(hicache, master, "x", tp_size=4, layout="page_head", tp_lcm_size=6)
    with pytest.raises(ValueError, match=r"^mcctl HiCache backend: tp_lcm_size 6 is not a multiple of tp_size 4; "):
        backend.McctlStore(config, {})


def test_the_connectors_load_and_run_without_their_engines(master, tenant):
    """Neither SGLang nor vLLM installed (nor torch): both modules import, and the backend moves pages."""
    script = f"""
import ctypes, sys, types
sys.path.insert(0, {os.path.dirname(HERE)!r})
import mcctl.sglang as backend, mcctl.vllm as tier
assert not {{"sglang", "vllm", "torch"}} & set(sys.modules)
assert tier.McctlTier.__bases__ == (object,) and tier.MISS is False
memory = bytearray(1024)
base = ctypes.addressof((ctypes.c_char * len(memory)).from_buffer(memory))
memory[:256], memory[512:768] = bytes(range(256)), bytes(range(255, -1, -1))

class Pool:  # 2 tokens of 64 bytes a page: K of token t at 64 t, its V 512 bytes further
    page_size, kv_buffer = 2, memory
    def get_page_buffer_meta(self, indices):
        return [base + t * 64 + kv for t in indices[::2] for kv in (0, 512)], 128

config = types.SimpleNamespace(tp_rank=0, tp_size=1, pp_rank=0, pp_size=1, attn_cp_rank=0, attn_cp_size=1,
    is_mla_model=False, model_name="m", extra_config={{"master": "{master.address}", "tenant": "{tenant}"}})
store = backend.McctlStore(config, {{}})
store.register_mem_pool_host(Pool())
assert store.batch_set_v1(["a", "b"], [0, 1, 2, 3]) == [True, True]
assert store.batch_get_v1(["a", "b"], [4, 5, 6, 7]) == [True, True]
assert memory[256:512] == memory[:256] and memory[768:1024] == memory[512:768]
assert store.batch_exists_v2(["a", "b", "c"]).kv_hit_pages == 2
store.close()
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": ""})
    assert run.returncode == 0, run.stderr


def test_a_transfer_the_client_refuses_answers_false_and_raises_nothing(sg, master, tenant):
    backend, hicache = sg

    class EmptyPages:  # a pool whose pages have no bytes: the client refuses to write or read such objects
        page_size, kv_buffer = 1, bytearray(1)

        def get_page_buffer_meta(self, indices):
            return [id(self)] * len(indices), [0] * len(indices)

    store = make_store(storage_config(hicache, master, tenant), EmptyPages())
    assert store.batch_set_v1(["e0", "e1"], torch.tensor([0, 1])) == [False, False]
    assert store.batch_get_v1(["e0", "e1"], torch.tensor([0, 1])) == [False, False]
    store.close()
