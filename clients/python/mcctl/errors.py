"""mcctl's errors: one exception class per Mooncake ErrorCode, and the negative codes batch calls return.

Every failed master call carries a gRPC status, the ErrorCode name in the ``mooncake-error-code`` trailer and
a description ``NAME: message``; :func:`from_rpc_error` turns that into the matching exception.
"""

from __future__ import annotations

import grpc

# Negative per-key results of the batch calls, with Mooncake's values so code written for
# MooncakeDistributedStore reads them the same way.
BUFFER_OVERFLOW = -10  # the destination buffer is smaller than the object, or a source smaller than declared
NO_AVAILABLE_HANDLE = -200  # no bucket has a run of free pages that fits the object
WRITE_FAIL = -500  # pwrite or fdatasync failed, or the allocation's deadline was too close to write safely
INVALID_PARAMS = -600  # bad key, tenant or size
INVALID_READ = -701  # the bytes read fail their CRC32C, or the read itself failed: a miss, never data
REPLICA_IS_NOT_READY = -703  # the key is being written by someone else
OBJECT_NOT_FOUND = -704  # no such key in the tenant
OBJECT_ALREADY_EXISTS = -705  # put without overwrite of a committed key
RPC_FAIL = -900  # the master could not be reached or did not answer in time
INTERNAL_ERROR = -1

CODE_NAMES = {
    BUFFER_OVERFLOW: "BUFFER_OVERFLOW",
    NO_AVAILABLE_HANDLE: "NO_AVAILABLE_HANDLE",
    WRITE_FAIL: "WRITE_FAIL",
    INVALID_PARAMS: "INVALID_PARAMS",
    INVALID_READ: "INVALID_READ",
    REPLICA_IS_NOT_READY: "REPLICA_IS_NOT_READY",
    OBJECT_NOT_FOUND: "OBJECT_NOT_FOUND",
    OBJECT_ALREADY_EXISTS: "OBJECT_ALREADY_EXISTS",
    RPC_FAIL: "RPC_FAIL",
    INTERNAL_ERROR: "INTERNAL_ERROR",
}


class McctlError(Exception):
    """A failed mcctl call. ``code`` is the Mooncake ErrorCode name, ``result`` the negative batch code."""

    code = "INTERNAL_ERROR"
    result = INTERNAL_ERROR

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class InternalError(McctlError):
    code = "INTERNAL_ERROR"
    result = INTERNAL_ERROR


class MasterUnavailable(InternalError):
    """The master could not be reached, or did not answer within the client's timeout."""

    result = RPC_FAIL


class OutcomeUnknown(MasterUnavailable):
    """A call that may have acted although no answer says so: a notify that went out and got no answer (its deadline
    passed, or its connection was lost after the request was sent), or a call sent more than once whose earlier attempt
    may have reached the master and whose later attempts got no answer (refused, not sent, or lost too), whatever they
    met. A write that ends so may be committed: check with ``mcctl stat KEY``."""


class ChangesRefused(MasterUnavailable):
    """The master answered but takes no changes (its write-ahead log failed, say): lookups still work there, and the
    message says why. Nothing was changed."""


class AccessDenied(InternalError):
    """The master refused the call: no or an unknown token (UNAUTHENTICATED), or a tenant or role the token
    or certificate does not allow (PERMISSION_DENIED). Nothing was changed."""


class InvalidParams(McctlError, ValueError):
    code = "INVALID_PARAMS"
    result = INVALID_PARAMS


class ObjectNotFound(McctlError, KeyError):
    code = "OBJECT_NOT_FOUND"
    result = OBJECT_NOT_FOUND

    def __str__(self) -> str:  # KeyError would quote the message
        return f"{self.code}: {self.message}"


class NoAvailableHandle(McctlError):
    code = "NO_AVAILABLE_HANDLE"
    result = NO_AVAILABLE_HANDLE


class ReplicaIsNotReady(McctlError):
    code = "REPLICA_IS_NOT_READY"
    result = REPLICA_IS_NOT_READY


class ObjectAlreadyExists(McctlError):
    code = "OBJECT_ALREADY_EXISTS"
    result = OBJECT_ALREADY_EXISTS


BY_NAME = {cls.code: cls for cls in (InternalError, InvalidParams, ObjectNotFound, NoAvailableHandle,
                                     ReplicaIsNotReady, ObjectAlreadyExists)}
RESULT_BY_NAME = {name: cls.result for name, cls in BY_NAME.items()}
RESULT_BY_NAME["OK"] = 0

_BY_STATUS = {
    grpc.StatusCode.INVALID_ARGUMENT: InvalidParams,
    grpc.StatusCode.NOT_FOUND: ObjectNotFound,
    grpc.StatusCode.RESOURCE_EXHAUSTED: NoAvailableHandle,
    grpc.StatusCode.FAILED_PRECONDITION: ReplicaIsNotReady,
    grpc.StatusCode.ALREADY_EXISTS: ObjectAlreadyExists,
}


def quoted(value: str) -> str:
    """A caller's value quoted for a message as the master quotes it: whole when short, else its first 64 characters,
    an ellipsis and its length in UTF-8 bytes (a key may be 4,096 bytes; a message is read by people)."""
    if len(value) <= 80:
        return f"'{value}'"
    return f"'{value[:64]}…' ({len(value.encode('utf-8', 'surrogatepass'))} bytes)"


# Trailers of a master's own refusals (WireErrors on the master): it answered, it did not fail to be reached.
CHANGES_REFUSED_TRAILER = "mcctl-changes-refused"
NOT_SERVED_TRAILER = "mcctl-not-served"


def error_for(name: str, message: str) -> McctlError:
    """The exception for ErrorCode ``name`` (a newer master's unknown code is an InternalError)."""
    return BY_NAME.get(name, InternalError)(message)


def from_rpc_error(error: grpc.RpcError, target: str, timeout: float) -> McctlError:
    """The McctlError a failed gRPC call stands for."""
    status = error.code()
    details = error.details() or status.name
    if status == grpc.StatusCode.UNAVAILABLE:
        # The trailers tell a master that answered (and said why) from one that could not be reached.
        trailers = dict(error.trailing_metadata() or ())
        if CHANGES_REFUSED_TRAILER in trailers:
            return ChangesRefused(f"the master at {target} refuses changes: {details}")
        if NOT_SERVED_TRAILER in trailers:
            return MasterUnavailable(f"the master at {target} did not serve the call: {details}")
        return MasterUnavailable(f"cannot reach the master at {target}: {details} "
                                 f"(is 'mcctl master start' running there? pass master='host:port')")
    if status in (grpc.StatusCode.UNAUTHENTICATED, grpc.StatusCode.PERMISSION_DENIED):
        return AccessDenied(f"the master at {target} refused the call ({status.name}): {details}")
    if status == grpc.StatusCode.UNIMPLEMENTED:
        return InternalError(f"the master at {target} does not serve this call ({details}): it is older than this client")
    if status == grpc.StatusCode.DEADLINE_EXCEEDED:
        return MasterUnavailable(f"the master at {target} did not answer within {timeout:g} s")
    name = None
    for key, value in error.trailing_metadata() or ():
        if key == "mooncake-error-code":
            name = value
    prefix, sep, rest = details.partition(": ")
    if sep and prefix and all(c == "_" or c.isupper() for c in prefix):
        details = rest
    if name is not None:
        return error_for(name, details)
    return _BY_STATUS.get(status, InternalError)(details)
