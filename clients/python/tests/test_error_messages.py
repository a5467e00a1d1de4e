"""What a failed call says, against a real master: the error of its code for the longest keys allowed, and a master
that answers but refuses changes told apart from one that cannot be reached, with its reason."""

from __future__ import annotations

import os

import pytest

import mcctl
from mcctl import errors

from conftest import Master

LONGEST_KEYS = ["é" * 2048, "k" * 4096]  # 4,096 UTF-8 bytes each, the most a key may have


@pytest.mark.parametrize("key", LONGEST_KEYS, ids=["accented", "ascii"])
def test_the_longest_keys_that_do_not_exist_are_object_not_found_naming_the_key_by_its_start_and_length(client, key):
    assert len(key.encode("utf-8")) == 4096
    with pytest.raises(mcctl.ObjectNotFound) as size:
        client.get_size(key)
    with pytest.raises(mcctl.ObjectNotFound) as removed:
        client.remove(key)
    for raised in (size, removed):
        message = str(raised.value)
        assert key[:16] in message and "(4096 bytes)" in message, message
        assert len(message) < 400, message


def test_the_message_of_a_key_rebuilt_on_this_side_is_shortened_as_the_masters(client):
    key = LONGEST_KEYS[0]
    assert client.batch_get_into([key], [bytearray(1)]) == [errors.OBJECT_NOT_FOUND]
    assert errors.quoted(key) == f"'{key[:64]}…' (4096 bytes)"
    assert errors.quoted("short") == "'short'"


@pytest.mark.timeout(120)
def test_a_master_that_refuses_changes_says_so_and_why(tmp_path):
    state = tmp_path / "state"
    master = Master(str(tmp_path / "root"), "--state-dir", str(state), "--wal-segment-size", "1MiB")
    try:
        with mcctl.Client(master=master.address, tenant="t", timeout=10.0) as client:
            client.put("before", b"x")
            # The state directory goes away under the master, a regular file in its place: the log writes on in its
            # open segment, and the next segment cannot be created (ENOTDIR, which fails for root too).
            os.rename(state, tmp_path / "state-moved")
            state.write_bytes(b"not a directory")
            refused = None
            for i in range(1000):
                try:
                    client.put(f"{i:04d}-" + "k" * 4000, b"x")  # about 8 KiB of log records each
                except mcctl.McctlError as e:
                    refused = e
                    break
            assert refused is not None, "the log never had to start a segment in the missing directory"
            message = str(refused)
            assert isinstance(refused, mcctl.MasterUnavailable), message
            assert "refuses changes" in message and "cannot reach" not in message, message
            assert "create log segment " + str(state) in message and "Not a directory" in message, message
            with pytest.raises(mcctl.ChangesRefused) as removed:  # a single change raises the refusal as it came
                client.remove("before")
            assert "refuses changes" in str(removed.value) and "Not a directory" in str(removed.value), str(removed.value)
            assert client.get_size("before") == 1, "lookups still work"
    finally:
        master.close()
