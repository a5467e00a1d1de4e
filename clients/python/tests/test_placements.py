"""Packed lookups: the placements the master packs into one array say, key for key, what the answer with one
message per key says; the client reads both forms the same way, and in either byte order."""

from __future__ import annotations

import struct

import mcctl
from mcctl import _placements, errors
from mcctl._placements import Placements
from mcctl._proto import master_pb2 as pb


def lookup(client: mcctl.Client, keys, packed: bool):
    return client._read("BatchGetDistributedPageMapping", pb.BatchGetDistributedPageMappingRequest(
        keys=keys, tenant_ids=[client.tenant] * len(keys), packed=packed))


def test_packed_placements_say_what_the_unpacked_answer_says(client):
    keys = [f"packed/{i}" for i in range(30)]
    assert client.batch_put_from(keys, [bytes([i]) * (1000 + 977 * i) for i in range(len(keys))]) == [0] * len(keys)
    client._mutate("BatchAllocateDistributedPage", pb.BatchAllocateDistributedPageRequest(
        keys=["packed/in-flight"], tenant_ids=[client.tenant], sizes=[10]))
    asked = keys[::-2] + ["packed/missing", "packed/in-flight", "", "packed/3"]
    packed = lookup(client, asked, packed=True)
    plain = lookup(client, asked, packed=False)
    assert len(packed.results) == 0 and len(packed.placements) == 24 * len(asked)
    from_packed = Placements.of(packed, len(asked))
    from_plain = Placements.of(plain, len(asked))  # the form a master without packed lookups answers
    assert from_packed.buckets == from_plain.buckets
    assert from_packed.crcs == from_plain.crcs and from_packed.offsets == from_plain.offsets
    assert from_packed.sizes == from_plain.sizes
    for i, result in enumerate(plain.results):
        if result.status.error == pb.OK:
            assert from_packed.found(i)
            assert result.distributed_disk.bucket == from_packed.buckets[i]
            continue
        name = pb.ErrorCode.Name(result.status.error)
        assert from_packed.error(i, asked[i], client.tenant) == (errors.RESULT_BY_NAME[name], f"{name}: {result.status.message}")
    assert set(from_packed.messages) == {asked.index("packed/in-flight"), asked.index("")}, "misses carry no message"
    assert from_packed.buckets[asked.index("packed/missing")] == -pb.OBJECT_NOT_FOUND


def test_the_records_read_the_same_in_either_byte_order():
    records = [(0, 0xFFFFFFFF, 1 << 40, 65536), (-3, 0, 0, 0), (255, 0x80000000, (1 << 62) + 7, 1)]
    raw = b"".join(struct.pack("<iIqq", *r) for r in records)
    expected = tuple(list(column) for column in zip(*records))
    assert _placements.columns(raw, True) == expected
    assert _placements.columns(raw, False) == expected
    assert _placements.columns(b"", False) == ([], [], [], [])


def test_an_answer_without_a_record_per_key_is_an_error_not_a_guess():
    answer = pb.BatchGetDistributedPageMappingResponse(placements=bytes(24 * 2))
    try:
        Placements.of(answer, 3)
    except errors.InternalError as e:
        assert "48 bytes of placements for 3 keys" in str(e)
    else:
        raise AssertionError("a short answer was taken")


def test_a_batch_read_picks_the_placements_of_the_keys_it_reads(client):
    keys = [f"picked/{i}" for i in range(6)]
    data = [bytes([65 + i]) * (100 + i) for i in range(len(keys))]
    assert client.batch_put_from(keys, data) == [0] * len(keys)
    mappings = client.lookup(keys + ["picked/missing"])
    order = [keys[4], "picked/missing", keys[1], keys[5]]
    buffers = [bytearray(200) for _ in order]
    assert client.batch_get_into(order, buffers, mappings=mappings) == [104, errors.OBJECT_NOT_FOUND, 101, 105]
    assert bytes(buffers[0][:104]) == data[4] and bytes(buffers[2][:101]) == data[1] and bytes(buffers[3][:105]) == data[5]
    assert mappings.found() == [True] * 6 + [False] and mappings.leading_hits() == 6


def test_a_packed_allocation_says_what_the_unpacked_one_says_and_its_records_go_back_as_they_came(client):
    client.put("alloc/taken", b"here")
    keys = ["alloc/0", "alloc/taken", "alloc/2", ""]
    sizes = [100, 10, 70000, 10]
    answer = client._mutate("BatchAllocateDistributedPage", pb.BatchAllocateDistributedPageRequest(
        keys=keys, tenant_ids=[client.tenant] * len(keys), sizes=sizes, packed=True))
    assert len(answer.results) == 0
    allocation = _placements.Allocation(answer, len(keys))
    assert [allocation.allocated(i) for i in range(len(keys))] == [True, False, True, False]
    assert allocation.outcome(1)[0] == errors.OBJECT_ALREADY_EXISTS and "alloc/taken" in allocation.outcome(1)[1]
    assert allocation.outcome(3)[0] == errors.INVALID_PARAMS
    assert [allocation.sizes[i] for i in (0, 2)] == [100, 70000]
    records = allocation.records([(2, 0x12345678), (0, 7)])
    assert _placements.columns(records, False) == (
        [allocation.buckets[2], allocation.buckets[0]], [0x12345678, 7],
        [allocation.offsets[2], allocation.offsets[0]], [70000, 100])
    freed = client._mutate("BatchFreeDistributedPage", pb.BatchFreeDistributedPageRequest(
        keys=["alloc/0", "alloc/2"], tenant_ids=[client.tenant] * 2, descriptors=[allocation.descriptor(0), allocation.descriptor(2)]))
    assert [s.error for s in freed.results] == [pb.OK, pb.OK], "a descriptor naming the bucket by index is the allocation"


def test_an_allocation_answered_unpacked_is_refused_in_one_line():
    answer = pb.BatchAllocateDistributedPageResponse(results=[pb.AllocationResult()])
    try:
        _placements.Allocation(answer, 1)
    except errors.InternalError as e:
        assert "older than this client" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("an unpacked answer was taken for a packed one")
