"""mcctl's Python client: the page-mode distributed disk tier of an LLM KV cache.

    with mcctl.Client(master="host:port", tenant="default") as client:
        client.put("key", b"bytes")
        data = client.get("key")

Names follow Mooncake's MooncakeDistributedStore where they fit; see docs/python.md.
"""

from .client import Client, Mappings, PromotionTask, Promotions
from .errors import (AccessDenied, ChangesRefused, InternalError, InvalidParams, MasterUnavailable, McctlError, NoAvailableHandle,
                     ObjectAlreadyExists, ObjectNotFound, OutcomeUnknown, ReplicaIsNotReady)

__all__ = ["Client", "Mappings", "PromotionTask", "Promotions", "McctlError", "AccessDenied", "InternalError", "MasterUnavailable", "OutcomeUnknown", "ChangesRefused",
           "InvalidParams", "ObjectNotFound", "NoAvailableHandle", "ReplicaIsNotReady", "ObjectAlreadyExists"]
__version__ = "0.1.0"
