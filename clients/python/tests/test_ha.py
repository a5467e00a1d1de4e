"""mcctl.Client(master="etcd://...") against a real etcd (/usr/bin/etcd) and real ``master start --ha`` processes."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import grpc
import numpy as np
import pytest

import mcctl
from mcctl._proto import master_pb2 as pb
from mcctl._proto import master_pb2_grpc as pb_grpc

from conftest import Master, free_port

ETCD = "/usr/bin/etcd"


class Etcd:
    """One etcd member on free loopback ports over a temp data directory, as the Java tests' EtcdCluster starts it."""

    def __init__(self, directory: str):
        if not os.access(ETCD, os.X_OK):
            raise RuntimeError(f"etcd is not installed at {ETCD}: install Debian's package etcd-server")
        client, peer = free_port(), free_port()
        self.url = f"etcd://127.0.0.1:{client}"
        self.log = open(os.path.join(directory, "etcd.log"), "wb")
        self.process = subprocess.Popen(
            [ETCD, "--name", "m0", "--data-dir", os.path.join(directory, "data"),
             "--listen-client-urls", f"http://127.0.0.1:{client}", "--advertise-client-urls", f"http://127.0.0.1:{client}",
             "--listen-peer-urls", f"http://127.0.0.1:{peer}", "--initial-advertise-peer-urls", f"http://127.0.0.1:{peer}",
             "--initial-cluster", f"m0=http://127.0.0.1:{peer}", "--heartbeat-interval", "100", "--election-timeout", "1000"],
            stdout=self.log, stderr=subprocess.STDOUT)
        from mcctl._leader import LeaderLookup
        lookup = LeaderLookup(self.url, 1.0)
        deadline = time.monotonic() + 30
        while True:
            try:
                lookup.leader()
                return
            except ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.close()
                    raise RuntimeError("etcd did not answer within 30 s")
                time.sleep(0.1)

    def close(self) -> None:
        self.process.kill()
        self.process.wait(10)
        self.log.close()


def role(master: Master) -> int:
    """The master's own role, asked directly (answered in every role); -1 when it does not answer."""
    channel = grpc.insecure_channel(master.address)
    try:
        return pb_grpc.MasterServiceStub(channel).GetMasterStatus(pb.GetMasterStatusRequest(), timeout=2).role
    except grpc.RpcError:
        return -1
    finally:
        channel.close()


def await_role(master: Master, wanted, limit: float = 60) -> None:
    deadline = time.monotonic() + limit
    while not wanted(role(master)):
        assert time.monotonic() < deadline, f"{master.address} did not reach the role in {limit} s"
        time.sleep(0.05)


LEADER = pb.GetMasterStatusResponse.Role.Value("LEADER")


@pytest.fixture
def ha(tmp_path):
    etcd = Etcd(str(tmp_path))
    url = etcd.url + "/test"
    root = str(tmp_path / "root")
    flags = ("--ha", url, "--ha-lease-ttl", "2s", "--bucket-count", "4", "--bucket-size", "4MiB", "--page-size", "4KiB",
             "--allocation-deadline", "2s", "--allocation-grace", "1s", "--eviction", "false")
    masters = []
    try:
        masters.append(Master(root, *flags))
        await_role(masters[0], lambda r: r == LEADER)
        masters.append(Master(root, *flags))
        yield url, masters
    finally:
        for m in masters:
            if m.process.poll() is None:
                os.kill(m.process.pid, signal.SIGCONT)
            m.close()
        etcd.close()


@pytest.mark.timeout(180)
def test_an_etcd_client_is_sent_on_by_a_deposed_leader_and_follows_a_kill_9_without_losing_a_key(ha):
    url, (first, second) = ha
    data = {f"k{i}": np.random.default_rng(i).integers(0, 256, 5000 + i * 3000, dtype=np.uint8).tobytes() for i in range(3)}
    with mcctl.Client(master=url, tenant="t", timeout=15) as client:
        client.put("k0", data["k0"])
        assert client._follower.leader == first.address

        # Stopped past its lease, the first leader is replaced; woken, it refuses as a non-leader and the client,
        # still pointed at it, is sent on to the second.
        os.kill(first.process.pid, signal.SIGSTOP)
        try:
            await_role(second, lambda r: r == LEADER)
        finally:
            os.kill(first.process.pid, signal.SIGCONT)
        await_role(first, lambda r: r not in (LEADER, -1))
        assert client._follower.leader == first.address
        client.put("k1", data["k1"])
        assert client._follower.leader == second.address

        # kill -9 of the leader: a lookup (safe to send again, whatever happened to the first attempt) waits out the
        # election and moves the client to the first master; the next put lands there. (A put whose allocation was
        # on the dead connection is not sent again: its outcome is unknown.)
        second.process.kill()
        second.process.wait(10)
        assert client.get("k0") == data["k0"]
        assert client._follower.leader == first.address
        client.put("k2", data["k2"])
        assert client._follower.leader == first.address
        for key, value in data.items():
            assert client.get(key) == value, key


def test_an_etcd_address_that_is_not_one_is_refused_in_one_line():
    with pytest.raises(mcctl.InvalidParams, match="invalid etcd endpoint 'nohost'"):
        mcctl.Client(master="etcd://nohost/x")
