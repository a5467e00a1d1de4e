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
