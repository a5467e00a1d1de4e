"""A notify that reached a real master, which committed it, and whose answer never came (lost with its connection, its
later attempts refused until the deadline; or held past the client's timeout): the client must say that the outcome is
unknown, never that the notify was not sent or that the object was not committed. The master sits behind a relay that
holds the notify's answer, then closes every connection and stops listening."""

from __future__ import annotations

import base64
import contextlib
import json
import socket
import threading
import time
import urllib.request

import pytest

import mcctl
from mcctl import errors

from conftest import Master
from test_ha import Etcd

PREFACE_BYTES = 24  # "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
HEADERS_FRAME = 0x1


class AnswerCuttingRelay:
    """A TCP relay on loopback to ``upstream`` that counts the calls (HTTP/2 streams) its clients open: from the one
    ``hold_from`` names, nothing the master sends reaches them; ``cut`` closes every connection and the listening
    socket, so that the next connection is refused."""

    def __init__(self, upstream: str):
        host, _, port = upstream.rpartition(":")
        self.upstream = (host, int(port))
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.address = f"127.0.0.1:{self.listener.getsockname()[1]}"
        self.streams_opened = 0
        self.hold_from = 1 << 62
        self.holding = False
        self._lock = threading.Lock()  # guards streams_opened, holding and _sockets
        self._sockets = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            try:
                master = socket.create_connection(self.upstream)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, master]
            threading.Thread(target=self._pump, args=(client, master, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(master, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        state = {"preface": PREFACE_BYTES, "header": b"", "payload": 0, "last_stream": 0}
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if from_client:
                    self._scan(state, data)  # before the bytes go on: a hold is in place before the master has the call
                elif self.holding:
                    continue
                sink.sendall(data)
        except OSError:
            pass
        finally:
            source.close()
            sink.close()

    def _scan(self, state: dict, data: bytes) -> None:
        i = 0
        while i < len(data):
            if state["preface"]:
                skip = min(state["preface"], len(data) - i)
                state["preface"] -= skip
                i += skip
            elif state["payload"]:
                skip = min(state["payload"], len(data) - i)
                state["payload"] -= skip
                i += skip
            else:
                take = 9 - len(state["header"])
                state["header"] += data[i:i + take]
                i += take
                if len(state["header"]) == 9:
                    header, state["header"] = state["header"], b""
                    state["payload"] = int.from_bytes(header[0:3], "big")
                    stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
                    if header[3] == HEADERS_FRAME and stream > state["last_stream"]:
                        state["last_stream"] = stream
                        with self._lock:
                            self.streams_opened += 1
                            if self.streams_opened >= self.hold_from:
                                self.holding = True

    def cut(self) -> None:
        # shutdown, not only close: a socket another thread is blocked on stays open until that thread lets go of it.
        for s in [self.listener] + self._take_sockets():
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def _take_sockets(self) -> list:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        return sockets


def _put_losing_the_notify_answer(relay: AnswerCuttingRelay, client: mcctl.Client, master: Master, key: str, data: bytes):
    """Puts ``key`` through ``client`` (whose master is behind ``relay``), the notify's answer held and then cut once the
    master has committed the key; the put's exception, or None."""
    relay.hold_from = relay.streams_opened + 2  # the allocation, then the notify
    failure = []

    def put() -> None:
        try:
            client.put(key, data, overwrite=True)
            failure.append(None)
        except mcctl.McctlError as e:
            failure.append(e)

    writer = threading.Thread(target=put, daemon=True)
    writer.start()
    with mcctl.Client(master=master.address, timeout=5.0) as direct:
        deadline = time.monotonic() + 20
        while not (relay.holding and direct.is_exist(key)):
            assert time.monotonic() < deadline, f"the notify did not commit {key} on the master (relay holding: {relay.holding})"
            time.sleep(0.02)
        relay.cut()
        writer.join(60)
        assert not writer.is_alive(), "the put did not end"
        assert direct.get(key) == data, "the master committed the key"
    return failure[0]


@contextlib.contextmanager
def _master_behind_relay(tmp_path, allocation_deadline: str):
    """A master and an AnswerCuttingRelay in front of it; the relay cut and the master stopped on the way out."""
    m = Master(str(tmp_path / "root"), "--bucket-size", "4MiB", "--allocation-deadline", allocation_deadline)
    relay = AnswerCuttingRelay(m.address)
    try:
        yield m, relay
    finally:
        relay.cut()
        m.close()


def _assert_outcome_unknown(failure: Exception, key: str) -> None:
    """RPC_FAIL (the caller cannot tell whether it failed), with a message that says so and names the check to make."""
    assert isinstance(failure, errors.MasterUnavailable), failure
    assert "is unknown" in str(failure) and f"check with mcctl stat {key}" in str(failure), str(failure)


@pytest.mark.timeout(120)
def test_a_resent_notify_whose_first_attempt_landed_ends_outcome_unknown_though_every_later_attempt_was_refused(tmp_path):
    with _master_behind_relay(tmp_path, "3s") as (m, relay):
        with mcctl.Client(master=relay.address, timeout=10.0) as client:
            failure = _put_losing_the_notify_answer(relay, client, m, "lost-answer", b"\x07" * 5000)
        _assert_outcome_unknown(failure, "lost-answer")
        assert "not committed" not in str(failure) and "did not serve" not in str(failure), str(failure)


@pytest.mark.timeout(180)
def test_a_call_the_leader_follower_resent_after_a_lost_answer_raises_outcome_unknown(tmp_path):
    etcd = Etcd(str(tmp_path))
    try:
        with _master_behind_relay(tmp_path, "4s") as (m, relay):
            # etcd names the relay as the leader of the masters under /lost.
            body = {"key": base64.b64encode(b"/lost/mcctl/relayed/leader").decode(), "value": base64.b64encode(relay.address.encode()).decode()}
            gateway = etcd.url.replace("etcd://", "http://")
            urllib.request.urlopen(urllib.request.Request(f"{gateway}/v3/kv/put", data=json.dumps(body).encode(),
                                                          headers={"Content-Type": "application/json"}, method="POST"), timeout=5).read()
            with mcctl.Client(master=etcd.url + "/lost", timeout=1.5) as client:
                failure = _put_losing_the_notify_answer(relay, client, m, "lost-answer", b"\x09" * 5000)
            _assert_outcome_unknown(failure, "lost-answer")
    finally:
        etcd.close()


@pytest.mark.timeout(120)
def test_a_notify_that_got_no_answer_before_the_clients_timeout_ends_outcome_unknown(tmp_path):
    # The relay holds the notify's answer and keeps the connection: the call's deadline passes with the key committed.
    with _master_behind_relay(tmp_path, "30s") as (m, relay):
        with mcctl.Client(master=relay.address, timeout=2.0) as client:
            relay.hold_from = relay.streams_opened + 2  # the allocation, then the notify
            with pytest.raises(mcctl.McctlError) as failure:
                client.put("unanswered", b"\x05" * 5000, overwrite=True)
        _assert_outcome_unknown(failure.value, "unanswered")
        assert "not committed" not in str(failure.value), str(failure.value)
        with mcctl.Client(master=m.address, timeout=5.0) as direct:
            assert direct.get("unanswered") == b"\x05" * 5000, "the master committed the key"
