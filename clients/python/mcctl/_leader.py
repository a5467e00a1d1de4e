"""Following the leader of masters started with ``--ha etcd://...`` (docs/ha.md, "Client discovery").

The leader holds the etcd key ``<prefix>/mcctl/<cluster id>/leader`` whose value is its ``host:port``; it is read
through etcd's JSON gateway (``POST /v3/kv/range``, keys in base64), so no etcd library is needed. A call goes to
the leader as last known; a failure that says the leader may have moved sends it on, with the Java client's rules:

* sent again, whatever the call, when it was certainly not acted on: a master that does not lead refused it (the
  ``mcctl-leader`` trailer, whose value names the leader or is empty), a master refused it before any method ran (the
  ``mcctl-not-served`` trailer: still recovering its state), or no connection could be made;
* sent again after an unknown outcome (the connection closed under it, or the leader could not make its answer
  durable) only when that is safe: lookups, notify (the master answers OK to a notify of the descriptor it already
  committed), free with a descriptor for every key, renew; never allocate, remove, or a free without descriptors.

Once an attempt's outcome was unknown, a call that ends without an answer raises OutcomeUnknown, however the later
attempts failed: a standby's refusal or a refused connection says nothing of the attempt that may have landed.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, List, Optional, Tuple

import grpc

from .errors import CHANGES_REFUSED_TRAILER, NOT_SERVED_TRAILER, InvalidParams, OutcomeUnknown

SCHEME = "etcd://"
LEADER_TRAILER = "mcctl-leader"
_FIRST_BACKOFF = 0.02
_MAX_BACKOFF = 0.2

_ALWAYS_RESENDABLE = frozenset({
    "GetDistributedPageMapping", "BatchGetDistributedPageMapping", "ExistKey", "BatchExistKey", "GetReplicaList", "ListKeys",
    "GetLayout", "GetStats", "GetBucketBitmap", "GetMasterStatus", "NotifyDistributedDiskSuccess", "RenewDistributedPageAllocation",
    "ListPromotions", "Promote",  # Promote answers the task already queued for the object
})


def names_etcd(master: str) -> bool:
    return isinstance(master, str) and master.startswith(SCHEME)


def parse(text: str) -> Tuple[List[str], str]:
    """``etcd://h1:2379,h2:2379[/prefix]`` (``;`` between endpoints too) -> (endpoints, prefix without a trailing '/')."""
    allowed = "allowed is etcd://host:port[,host:port...][/prefix], e.g. etcd://10.0.0.1:2379,10.0.0.2:2379/mooncake"
    if not names_etcd(text):
        raise InvalidParams(f"invalid etcd address {text!r}: {allowed}")
    rest = text[len(SCHEME):]
    hosts, slash, prefix = rest.partition("/")
    prefix = ("/" + prefix if slash else "").rstrip("/")
    endpoints = []
    for endpoint in hosts.replace(";", ",").split(","):
        endpoint = endpoint.strip()
        host, sep, port = endpoint.rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) <= 65535:
            raise InvalidParams(f"invalid etcd endpoint {endpoint!r} in {text!r}: {allowed}")
        endpoints.append(endpoint)
    return endpoints, prefix


def resendable_with_unknown_outcome(method: str, request: Any) -> bool:
    if method in _ALWAYS_RESENDABLE:
        return True
    if method == "FreeDistributedPage":
        return request.HasField("distributed_disk")
    if method == "BatchFreeDistributedPage":
        return len(request.descriptors) == len(request.keys)
    if method == "CheckPages":
        return not request.repair
    return False


def not_sent(error: grpc.RpcError) -> bool:
    """Whether a failed call certainly never reached a master's service, so that any call, a mutation included, may be
    sent again: refused before any method ran (``mcctl-not-served``: a master recovering its state, or a standby), or
    UNAVAILABLE because no connection could be made. A connection that closed under the call is not one of these:
    the master may have acted."""
    if error.code() != grpc.StatusCode.UNAVAILABLE:
        return False
    trailers = dict(error.trailing_metadata() or ())
    if NOT_SERVED_TRAILER in trailers:
        return True
    if CHANGES_REFUSED_TRAILER in trailers:
        return False  # that master answered: it takes no changes
    details = (error.details() or "").lower()
    return "failed to connect" in details or "connection refused" in details


def resendable_after_connection_loss(error: grpc.RpcError, method: str, request: Any) -> bool:
    """Whether a call that failed with its connection (UNAVAILABLE, a master that answered excepted) may be sent again
    although the master may have acted on it: sending it twice acts once."""
    if error.code() != grpc.StatusCode.UNAVAILABLE or CHANGES_REFUSED_TRAILER in dict(error.trailing_metadata() or ()):
        return False
    return resendable_with_unknown_outcome(method, request)


def _describe(error: BaseException) -> str:
    if isinstance(error, grpc.RpcError):
        return f"{error.code().name}: {error.details()}"
    return str(error)


def got_no_answer(error: grpc.RpcError) -> bool:
    """Whether a failed call went out and got no answer, so that the master may have acted on it: its deadline passed,
    or its connection was lost after the request was sent (not a connection never made, nor a master that answered)."""
    if error.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return True
    return (error.code() == grpc.StatusCode.UNAVAILABLE and not not_sent(error)
            and CHANGES_REFUSED_TRAILER not in dict(error.trailing_metadata() or ()))


def unanswered(target: str, error: grpc.RpcError) -> OutcomeUnknown:
    """The failure of a call to ``target`` that went out and got no answer (``error``): its outcome is unknown."""
    return OutcomeUnknown(f"the outcome of the call to the master at {target} is unknown: it got no answer after it was sent "
                          f"({_describe(error)}), so the master may have acted on it")


def outcome_unknown(target: str, earlier: grpc.RpcError, last: BaseException) -> OutcomeUnknown:
    """The failure of a call to ``target`` whose ``earlier`` attempt may have reached a master and was sent again, and
    whose last attempt got no answer either (``last``): its outcome is unknown, and the message names both."""
    return OutcomeUnknown(f"the outcome of the call to the master at {target} is unknown: an earlier attempt may have reached "
                          f"the master before its connection was lost ({_describe(earlier)}), so the call may have acted; "
                          f"the last attempt: {_describe(last)}")


class LeaderLookup:
    """Reads the leader key from etcd's JSON gateway, trying each endpoint in turn; keeps the cluster's key once found."""

    def __init__(self, target: str, timeout: float):
        self.target = target
        self.endpoints, self.prefix = parse(target)
        self.timeout = timeout
        self._key: Optional[str] = None
        self._current = 0

    def _range(self, key: str, range_end: Optional[str]) -> List[dict]:
        body = {"key": base64.b64encode(key.encode()).decode()}
        if range_end is not None:
            body["range_end"] = base64.b64encode(range_end.encode()).decode()
        problem = "no endpoint"
        for tried in range(len(self.endpoints)):
            index = (self._current + tried) % len(self.endpoints)
            request = urllib.request.Request(f"http://{self.endpoints[index]}/v3/kv/range", data=json.dumps(body).encode(),
                                             headers={"Content-Type": "application/json"}, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as answer:
                    kvs = json.loads(answer.read()).get("kvs", [])
                self._current = index
                return [{"key": base64.b64decode(kv["key"]).decode(), "value": base64.b64decode(kv.get("value", "")).decode()} for kv in kvs]
            except (OSError, ValueError) as e:  # refused, timed out, or not etcd's gateway
                problem = f"{self.endpoints[index]}: {e}"
        raise ConnectionError(f"etcd at {self.target} did not answer a read of the leader key: {problem}")

    def leader(self) -> Optional[str]:
        """The leader's host:port, or None while no master holds the key; ConnectionError when etcd does not answer."""
        if self._key is not None:
            found = self._range(self._key, None)
            return found[0]["value"] or None if found else None
        clusters = self.prefix + "/mcctl/"
        end = clusters[:-1] + chr(ord(clusters[-1]) + 1)
        leaders = [kv for kv in self._range(clusters, end)
                   if kv["key"].endswith("/leader") and "/" not in kv["key"][len(clusters):-len("/leader")]
                   and kv["key"][len(clusters):-len("/leader")]]
        if len(leaders) > 1:
            ids = ", ".join(kv["key"][len(clusters):-len("/leader")] for kv in leaders)
            raise InvalidParams(f"etcd at {self.target} holds the leaders of {len(leaders)} mcctl clusters ({ids}): give each root "
                                f"its own prefix (master start --ha etcd://.../PREFIX) and name it in the client's etcd address")
        if not leaders:
            return None
        self._key = leaders[0]["key"]
        return leaders[0]["value"] or None


class Follower:
    """Calls on the leader's stub, following it; thread-safe.

    ``_lock`` guards the leader's address, its channel and stub; it is held to read or swap them and for one etcd
    lookup at a time (calls failing together during a fail-over share one lookup), never across a master call.
    """

    def __init__(self, target: str, timeout: float, connect: Callable[[str], grpc.Channel], stub: Callable[[grpc.Channel], Any]):
        self._lookup = LeaderLookup(target, max(0.2, min(2.0, timeout / 2)))
        self._connect = connect
        self._make_stub = stub
        self._lock = threading.Lock()
        self._leader: Optional[str] = None
        self._channel: Optional[grpc.Channel] = None
        self._stub: Any = None
        self.last_problem = "no lookup yet"

    @property
    def leader(self) -> Optional[str]:
        return self._leader

    def _relocate(self, failed: Any, hint: Optional[str]) -> None:
        """Moves to ``hint`` or to what etcd names, unless another call has already moved on from ``failed``."""
        with self._lock:
            if self._stub is not None and self._stub is not failed:
                return
            target = hint
            if not target:
                try:
                    target = self._lookup.leader()
                except ConnectionError as e:
                    self.last_problem = str(e)
                    return
                if target is None:
                    self.last_problem = f"no master holds the leader key under {self._lookup.target} (an election is under way)"
                    return
            if target == self._leader and self._stub is not None:
                return  # etcd still names it (a killed leader's key outlives it by up to the lease TTL): try it again
            old = self._channel
            self._channel = self._connect(target)
            self._stub = self._make_stub(self._channel)
            self._leader = target
        if old is not None:
            old.close()

    def call(self, method: str, request: Any, timeout: float, metadata: Any) -> Any:
        """The answer of the leader, or the last grpc.RpcError (or ConnectionError with no leader found) once nothing safe is
        left; OutcomeUnknown instead when an earlier attempt may have reached a master and the last got no answer."""
        earlier: List[grpc.RpcError] = []  # the first attempt that may have reached a master and was sent again
        try:
            return self._call(method, request, timeout, metadata, earlier)
        except (grpc.RpcError, ConnectionError) as e:
            unanswered = isinstance(e, ConnectionError) or e.code() == grpc.StatusCode.UNAVAILABLE
            if not earlier or not unanswered:
                raise
            raise outcome_unknown(self._lookup.target, earlier[0], e) from None

    def _call(self, method: str, request: Any, timeout: float, metadata: Any, earlier: List[grpc.RpcError]) -> Any:
        deadline = time.monotonic() + timeout
        attempt = 0
        while True:
            attempt += 1
            stub = self._stub
            if stub is None:
                self._relocate(None, None)
                stub = self._stub
                if stub is None:
                    if time.monotonic() + _MAX_BACKOFF >= deadline:
                        raise ConnectionError(f"no leader found: {self.last_problem}")
                    time.sleep(_MAX_BACKOFF)
                    continue
            left = deadline - time.monotonic()
            if left <= 0:
                raise ConnectionError(f"no leader answered within {timeout} s: {self.last_problem}")
            try:
                return getattr(stub, method)(request, timeout=left, metadata=metadata)
            except grpc.RpcError as e:
                trailers = dict(e.trailing_metadata() or ())
                code = e.code()
                if LEADER_TRAILER in trailers:
                    acted_on: Optional[bool] = False
                elif code == grpc.StatusCode.UNAVAILABLE:
                    acted_on = False if not_sent(e) else None
                elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
                    self._relocate(stub, None)
                    raise
                else:
                    raise
                hint = trailers.get(LEADER_TRAILER) or None
                if acted_on is None and not resendable_with_unknown_outcome(method, request):
                    self._relocate(stub, hint)
                    raise
                pause = 0 if hint else min(_MAX_BACKOFF, _FIRST_BACKOFF * (2 ** min(attempt - 1, 8)))
                if time.monotonic() + pause >= deadline:
                    raise
                if acted_on is None and not earlier:
                    earlier.append(e)
                time.sleep(pause)
                self._relocate(stub, hint)

    def close(self) -> None:
        with self._lock:
            channel, self._channel, self._stub = self._channel, None, None
        if channel is not None:
            channel.close()
