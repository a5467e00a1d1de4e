"""Stand-in for vLLM's vllm/v1/kv_offload/tiering/factory.py of the same time as tiering/base.py at 041410b9: tiers
registered by type and built with the factory's call shape (written for these tests, not vLLM's code)."""

import importlib
from typing import Any, Callable, Dict

from vllm.v1.kv_offload.tiering.base import SecondaryTierManager


class SecondaryTierFactory:
    _registry: Dict[str, Callable[[], type]] = {}

    @classmethod
    def register_tier(cls, tier_type: str, module_path: str, class_name: str) -> None:
        if tier_type in cls._registry:
            raise ValueError(f"Tier '{tier_type}' is already registered.")
        cls._registry[tier_type] = lambda: getattr(importlib.import_module(module_path), class_name)

    @classmethod
    def create_secondary_tier(cls, tier_config: dict, primary_kv_view: memoryview, offloading_spec: Any) -> SecondaryTierManager:
        config = dict(tier_config)
        tier_type = config.pop("type", None)
        if tier_type not in cls._registry:
            raise ValueError(f"Unknown secondary tier type: {tier_type!r}")
        tier_cls = cls._registry[tier_type]()
        return tier_cls(offloading_spec=offloading_spec, primary_kv_view=primary_kv_view, tier_type=tier_type, **config)
